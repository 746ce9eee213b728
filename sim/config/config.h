/* config.h - strict JSON configs: system (chip, node, cluster, collectives) and
 * workload (model, parallel plan, training), read with cJSON into plain structs.
 *
 * A config document is loaded from a file, with "extends" chains merged (keys of
 * the including file win), then --set overrides are applied, then every key is
 * checked against the schema table (sim/config/config_schema.c): unknown keys, types,
 * ranges, required keys; defaults are filled in; then cross-key rules
 * (sim/config/config_rules.c) catch values that contradict each other. Every failure is
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

#include "npu_err.h"
#include "system.h"
#include "workload.h"

typedef enum { CONFIG_SYSTEM, CONFIG_WORKLOAD, CONFIG_KIND_COUNT } config_kind_t;

/* A loaded, possibly resolved, config document. Opaque. */
typedef struct config_doc config_doc_t;

/* Reads path (and the files it extends). Returns NULL and fills err on a missing
 * file, bad JSON (with line:column), a bad or cyclic "extends". The path "-" is
 * standard input (jsonfile.h), named "-" in messages; the relative paths it
 * names (extends, node types, a request trace) are from the working directory. */
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
 * must exist on the chips). Call after both resolved. from_server0: the job's
 * ranks fill servers 0, 1, ... (npusim train), so with cluster.node_types the
 * precision is checked on the chips of those servers only; false (a job placed
 * elsewhere: npusim cluster): with node types it is left to the replay, which
 * checks each op on its rank's chip. */
int config_check_job(const config_doc_t *sys_doc, const system_cfg_t *sys,
                     const config_doc_t *wl_doc, const workload_cfg_t *wl, bool from_server0,
                     npu_err_t *err);

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

/* 0 when the canonical JSON loads back to the same structs from any
 * directory; else -1 with the one-line reason in err (a cluster.node_types
 * file whose absolute path the key cannot hold). Check before printing it. */
int config_doc_json_loadable(const config_doc_t *doc, npu_err_t *err);

/* Prints a resolved document as rows: key, value, unit, where it came from
 * (file, default or --set) and its source note. csv selects CSV over a table. */
void config_doc_print_rows(const config_doc_t *doc, FILE *out, bool csv);

/* Writes the reference of every key of both schemas (type, unit, default,
 * range, meaning) as Markdown (docs/config.md) or as a JSON array. */
void config_schema_print_markdown(FILE *out);
void config_schema_print_json(FILE *out);

#endif
