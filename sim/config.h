/* config.h - strict JSON configs: system (chip, node, cluster, collectives) and
 * workload (model, parallel plan, training), read with cJSON into plain structs.
 *
 * A config document is loaded from a file, with "extends" chains merged (keys of
 * the including file win), then --set overrides are applied, then every key is
 * checked against the schema table (sim/config_schema.c): unknown keys, types,
 * ranges, required keys; defaults are filled in; then cross-key rules
 * (sim/config_rules.c) catch values that contradict each other. Every failure is
 * one line "FILE: json.path: expected ..., found ...". The resolved document can
 * be printed back as canonical JSON that loads to the same structs.
 *
 * Struct fields are in base units (bytes, bytes/s, seconds, hertz); the JSON
 * keys carry the architect's units (GBps, us, GHz, KiB) and are converted once,
 * here. */
#ifndef NPUSIM_CONFIG_H
#define NPUSIM_CONFIG_H

#include <stdbool.h>
#include <stdio.h>

#include "chip.h"
#include "npu_err.h"
#include "topology.h"
#include "workload.h"

/* How collectives are chosen and what they cost beyond the links. The
 * collectives engine reads it; it lives here until that engine exists. */
typedef enum { COLL_LIB_HCCL, COLL_LIB_NCCL, COLL_LIB_COUNT } coll_library_t;

typedef enum {
  COLL_ALGO_AUTO,
  COLL_ALGO_MESH,
  COLL_ALGO_RING,
  COLL_ALGO_HD,        /* recursive halving-doubling */
  COLL_ALGO_NHR,
  COLL_ALGO_NB,        /* nonuniform Bruck */
  COLL_ALGO_PAIRWISE,
  COLL_ALGO_TREE,      /* double binary tree */
  COLL_ALGO_PIPELINE,
  COLL_ALGO_NVLS,      /* in-switch reduction */
  COLL_ALGO_COUNT
} coll_algo_t;

#define COLL_LEVELS 3 /* 0: inside a server, 1: between servers, 2: between supernodes */

/* NCCL's protocols: each moves data with its own fixed latency and wire
 * efficiency (LL carries a flag with every 8 data bytes, LL128 one per 128);
 * the library picks the fastest per size. HCCL systems configure none. */
typedef enum { COLL_PROTO_LL, COLL_PROTO_LL128, COLL_PROTO_SIMPLE, COLL_PROTO_COUNT } coll_proto_id_t;

typedef struct {
  bool present;                   /* configured for this system */
  double step_latency_s;          /* added to every round (step) of an algorithm */
  double wire_efficiency;         /* data bytes / bytes on the wire, (0, 1] */
} coll_proto_t;

extern const char *const config_coll_proto_names[COLL_PROTO_COUNT];

typedef struct {
  coll_library_t library;         /* whose selection rules "auto" follows */
  coll_algo_t algo[COLL_LEVELS];  /* forced algorithm per level, or auto */
  double buffer_bytes;            /* staging buffer; larger messages loop over it */
  double step_latency_s;          /* software cost added to every algorithm step */
  double op_overhead_s;           /* fixed cost of launching one collective */
  double reduce_bw_bytes_per_s;   /* local reduction throughput; 0 = inline, free */
  double compute_slowdown;        /* a compute op beside a transfer ("overlaps") takes this
                                     fraction of the shorter of the two longer */
  coll_proto_t proto[COLL_PROTO_COUNT];
} coll_cfg_t;

extern const char *const config_coll_library_names[COLL_LIB_COUNT];
extern const char *const config_coll_algo_names[COLL_ALGO_COUNT];

/* A whole system: one node type and the fabric that joins nodes. */
typedef struct {
  char name[CHIP_NAME_MAX];
  chip_cfg_t chip;
  node_cfg_t node;
  cluster_cfg_t cluster;
  coll_cfg_t coll;
} system_cfg_t;

typedef enum { CONFIG_SYSTEM, CONFIG_WORKLOAD, CONFIG_KIND_COUNT } config_kind_t;

/* A loaded, possibly resolved, config document. Opaque. */
typedef struct config_doc config_doc_t;

/* Reads path (and the files it extends). Returns NULL and fills err on a missing
 * file, bad JSON (with line:column), a bad or cyclic "extends". */
config_doc_t *config_doc_load(config_kind_t kind, const char *path, npu_err_t *err);

/* Parses text as if read from a file named name, whose "extends" resolve
 * relative to base_dir. For tests and fuzzing. */
config_doc_t *config_doc_parse(config_kind_t kind, const char *name, const char *base_dir,
                               const char *text, size_t len, npu_err_t *err);

void config_doc_free(config_doc_t *doc);

/* Which kind of config a dotted path belongs to, from its first segment;
 * -1 (with a did-you-mean in err) if neither schema knows it. */
int config_kind_of_path(const char *path, npu_err_t *err);

/* Applies one override "dotted.path=value", typed by the schema. An unknown
 * path or a value of the wrong type fails. */
int config_doc_set(config_doc_t *doc, const char *assignment, npu_err_t *err);

/* Checks every key, fills defaults and converts into out (a system_cfg_t or a
 * workload_cfg_t matching the doc's kind). Then applies the rules that need
 * only this document. */
int config_doc_resolve(config_doc_t *doc, void *out, npu_err_t *err);

/* Rules that need both documents (the job must fit the system, the precision
 * must exist on the chip). Call after both resolved. */
int config_check_job(const config_doc_t *sys_doc, const system_cfg_t *sys,
                     const config_doc_t *wl_doc, const workload_cfg_t *wl, npu_err_t *err);

/* A number key of a resolved system config (a CFG_NUM: a double field), read and
 * written in the JSON's units (GBps, us) by its dotted path, so a calibration can
 * vary keys without reloading the document. get also gives the key's range
 * [lo, hi] (lo itself excluded when *lo_excl); set refuses a value outside it.
 * Both fail (one line in err) on a path that is not such a key. */
int config_system_number(const system_cfg_t *sys, const char *path, double *value, double *lo,
                         double *hi, bool *lo_excl, npu_err_t *err);
int config_system_set_number(system_cfg_t *sys, const char *path, double value, npu_err_t *err);

/* The "_source" note the document gives the key at path, or NULL. */
const char *config_doc_source_note(const config_doc_t *doc, const char *path);

/* The dotted paths of every number key (see config_system_number) of the
 * system schema under prefix ("chip."), in schema order: out[i] point into the
 * schema; returns the count (at most max). */
int config_system_number_paths(const char *prefix, const char **out, int max);

/* Prints a resolved document as canonical JSON (schema order, defaults filled,
 * no "extends", no "_source" notes) as an object nested depth levels deep
 * (0 for a document of its own); no trailing newline. */
void config_doc_print_json(const config_doc_t *doc, FILE *out, int depth);

/* The canonical JSON as a string the caller frees (to compare or hash configs). */
char *config_doc_json_string(const config_doc_t *doc);

/* Prints a resolved document as rows: key, value, unit, where it came from
 * (file, default or --set) and its source note. csv selects CSV over a table. */
void config_doc_print_rows(const config_doc_t *doc, FILE *out, bool csv);

/* Writes the reference of every key of both schemas (type, unit, default,
 * range, meaning) as Markdown (docs/config.md) or as a JSON array. */
void config_schema_print_markdown(FILE *out);
void config_schema_print_json(FILE *out);

#endif
