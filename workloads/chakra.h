/* chakra.h - Chakra execution traces (MLCommons; ASTRA-sim's workload format)
 * in and out of npusim's rank programs.
 *
 * A Chakra trace is one file per rank, PREFIX.<rank>.et (gzip allowed: the
 * content says), each a length-delimited GlobalMetadata message followed by
 * length-delimited Node messages (protobuf; field numbers are those of
 * Chakra's published et_def.proto, listed where they are read). The reader
 * decodes the wire format itself (varints and lengths, every read bounded;
 * fuzzed by tests/fuzz/fuzz_chakra.c): the subset it needs is a few dozen
 * lines, smaller than protobuf-c's generated code, with no build step or
 * dependency (docs/design.md).
 *
 * Reading maps each rank's nodes to one program of an npusim trace and hands
 * the result to the trace reader, so every check of a trace (dependencies,
 * cycles, send/recv pairing, groups) holds for Chakra too:
 *   COMP_NODE       compute with its recorded duration_micros, or costed as a
 *                   roofline on the chip from num_ops and tensor_size
 *                   (chakra_compute_t); on stream "compute"
 *   COMM_COLL_NODE  comm_type and comm_size (bytes as npusim coll counts them)
 *                   on the communicator of its process group (pg_name, from a
 *                   comm-group JSON as ASTRA-sim takes it: {"pg": [ranks]}),
 *                   else on all ranks; on stream "comm"
 *   COMM_SEND_NODE, COMM_RECV_NODE  comm_src / comm_dst, comm_tag, comm_size;
 *                   on streams "send" and "recv"
 *   data_deps and ctrl_deps  both become dependencies
 *   METADATA_NODE   ignored
 * Other node types (remote memory, storage, checkpoints) and GATHER, SCATTER,
 * BARRIER are refused in one line naming the file and node, or with skip set
 * kept as zero-time delays and counted. npusim's own attributes (written by
 * chakra_write, ignored by other tools) make its export round-trip exactly:
 * npusim_duration_s (double), npusim_stream, npusim_kind, npusim_algo.
 *
 * Not modelled: tensor inputs/outputs (IOInfo), start_time_micros, is_cpu_op
 * (CPU ops are compute like any other), attribute lists. */
#ifndef NPUSIM_CHAKRA_H
#define NPUSIM_CHAKRA_H

#include <stdbool.h>
#include <stddef.h>

#include "trace.h"

typedef enum {
  CHAKRA_COMPUTE_AUTO,     /* roofline where num_ops is given, else the recorded duration */
  CHAKRA_COMPUTE_DURATION, /* always duration_micros */
  CHAKRA_COMPUTE_ROOFLINE, /* always the roofline; a node without num_ops is an error */
  CHAKRA_COMPUTE_COUNT
} chakra_compute_t;

extern const char *const chakra_compute_names[CHAKRA_COMPUTE_COUNT];

typedef struct {
  chakra_compute_t compute;
  double flops_per_s;        /* roofline: the chip's compute peak */
  double mem_bytes_per_s;    /* roofline: its memory bandwidth */
  const char *comm_groups;   /* comm-group JSON, or NULL */
  bool skip;                 /* keep unmodelled nodes as zero-time delays */
} chakra_opts_t;

/* Whether path names a Chakra trace, by content: a file that is not JSON but
 * opens with a length-delimited GlobalMetadata (gzip or not), named
 * PREFIX.<rank>.et[.gz]; or a PREFIX whose PREFIX.0.et[.gz] exists. Fills
 * prefix. Returns 1 (Chakra), 0 (not: read it as an npusim trace), or -1 with
 * err set (a Chakra file whose name does not give its prefix). */
int chakra_detect(const char *path, char *prefix, size_t len, char *err, size_t err_len);

/* Reads PREFIX.0.et ... (all consecutive ranks found) into out. skipped gets
 * the count of nodes kept as delays (skip). Returns 0, or -1 with one line
 * ("FILE: node ID: expected ..., found ...") in err. */
int chakra_read(const char *prefix, const chakra_opts_t *o, const trace_vocab_t *vocab,
                trace_t *out, long *skipped, char *err, size_t err_len);

/* How long op i of rank r ran (seconds), for the export. */
typedef double (*chakra_duration_fn)(const void *ctx, int rank, int op);

/* Writes one Chakra ET per rank (PREFIX.<rank>.et) and PREFIX.comm_groups.json
 * (the process groups the nodes' pg_name names), each whole or not at all: compute, delays and events as COMP_NODE with their durations,
 * collectives, sends and receives as COMM_* nodes, a stream's order and
 * events as ctrl_deps, dependencies as data_deps. Memory ops become
 * zero-time compute (their footprint is not in the format). */
int chakra_write(const char *prefix, const trace_t *t, const trace_vocab_t *vocab,
                 chakra_duration_fn duration, const void *ctx, char *err, size_t err_len);

#endif
