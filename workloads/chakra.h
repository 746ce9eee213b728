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
 * Fields follow proto3's rules: a field at its default is absent from the
 * wire and reads as that default (Chakra's encoder leaves rank 0's node 0
 * without an id); fields of other numbers or later versions are skipped;
 * repeated ids are read packed or one per field.
 *
 * Reading (chakra_read.c) maps each rank's nodes to one program of npusim's
 * trace model and runs every check of a trace on it (dependencies, cycles,
 * send/recv pairing, groups), each failure one line naming the .et file, the
 * node (id and name) and its field. Nodes may come in any order: each rank
 * runs them in file order wherever their dependencies (by id) allow:
 *   COMP_NODE       compute with its recorded duration_micros, or costed as a
 *                   roofline on the chip from num_ops and tensor_size
 *                   (chakra_compute_t); on stream "compute"
 *   COMM_COLL_NODE  comm_type and comm_size on the communicator of its
 *                   process group (pg_name, from a comm-group JSON as
 *                   ASTRA-sim takes it: {"pg": [ranks]}), else on all ranks;
 *                   on stream "comm". comm_size is bytes as npusim coll
 *                   counts them (the per-rank buffer of an all-reduce, all
 *                   ranks' data of a reduce-scatter or all-to-all, as
 *                   ASTRA-sim 2.x's collective algorithms take them), but an
 *                   ALL_GATHER's is read and written by chakra_allgather_t:
 *                   by default each rank's input, as ASTRA-sim takes it
 *   COMM_SEND_NODE, COMM_RECV_NODE  comm_src / comm_dst, comm_tag, comm_size;
 *                   on streams "send" and "recv"
 *   data_deps and ctrl_deps  both become dependencies
 *   METADATA_NODE   nothing to run (a zero-time delay on stream
 *                   "chakra_metadata", so what depends on it waits for its
 *                   dependencies)
 *   is_cpu_op true  a host-side node of those four types runs as ASTRA-sim
 *                   2.x runs it: no device work and no communication, its
 *                   duration_micros (never a roofline) on stream
 *                   "chakra_host", one host node at a time
 * Other node types (remote memory, storage, checkpoints) and GATHER, SCATTER,
 * BARRIER are refused in one line naming the file and node, or with skip set
 * kept as zero-time delays on stream "chakra_skipped" and counted. npusim's own attributes (written
 * by chakra_write, ignored by other tools) make its export round-trip exactly:
 * npusim_nominal_duration_s (double: the op at the chip model's speed, which
 * the replaying system's chip.variation then slows as train's did; other
 * tools read duration_micros, the op as it ran in train, stragglers
 * included), npusim_stream, npusim_kind, npusim_algo; npusim_group names a
 * collective's process group as npusim does (COMM.GROUP, "tp.0"), where
 * pg_name gives ASTRA-sim a number.
 *
 * Bounds, each refused in one line before what it costs is allocated: the
 * rank files together at most TRACE_MAX_BYTES (inflated), CHAKRA_MAX_NODES
 * nodes and CHAKRA_MAX_DEPS dependencies; at most CHAKRA_MAX_RANKS rank
 * files; a comm-group JSON of at most CHAKRA_GROUPS_MAX_BYTES; fields as
 * the trace model bounds them (comm_size 1 to 1e15 bytes, durations up to
 * 1e12 us, node ids below 2^31).
 *
 * A file is told an ET by its structure (length-delimited messages of
 * protobuf fields), not by GlobalMetadata's version, which Chakra's PyTorch
 * converter leaves out.
 *
 * Not modelled: tensor inputs/outputs (IOInfo), start_time_micros, attribute
 * lists. */
#ifndef NPUSIM_CHAKRA_H
#define NPUSIM_CHAKRA_H

#include <stdbool.h>
#include <stddef.h>

#include "trace.h"
#include "npu_err.h"

#define CHAKRA_MAX_RANKS (1 << 22)
#define CHAKRA_MAX_NODES (1L << 22) /* about what 256 MiB of ETs holds */
#define CHAKRA_MAX_DEPS (1L << 24)
#define CHAKRA_GROUPS_MAX_BYTES (16UL << 20) /* a comm-group JSON */

typedef enum {
  CHAKRA_COMPUTE_AUTO,     /* roofline where num_ops is given, else the recorded duration */
  CHAKRA_COMPUTE_DURATION, /* always duration_micros */
  CHAKRA_COMPUTE_ROOFLINE, /* always the roofline; a node without num_ops is an error */
  CHAKRA_COMPUTE_COUNT
} chakra_compute_t;

extern const char *const chakra_compute_names[CHAKRA_COMPUTE_COUNT];

/* What an ALL_GATHER node's comm_size counts. ASTRA-sim 2.x gathers
 * comm_size from every rank (its Ring and HalvingDoubling set an all-gather's
 * final size to comm_size x ranks), so a writer for it gives each rank's
 * input; npusim coll and nccl-tests count all ranks' data (the gathered
 * output). Other collectives agree between the two. */
typedef enum {
  CHAKRA_ALLGATHER_INPUT, /* each rank's input (ASTRA-sim's; the default) */
  CHAKRA_ALLGATHER_TOTAL, /* all ranks' data, as npusim coll counts it */
  CHAKRA_ALLGATHER_COUNT
} chakra_allgather_t;

extern const char *const chakra_allgather_names[CHAKRA_ALLGATHER_COUNT];

/* The convention named (input, total); -1 for another name. */
int chakra_allgather_parse(const char *name);

typedef struct {
  chakra_compute_t compute;
  double flops_per_s;        /* roofline: the chip's compute peak */
  double mem_bytes_per_s;    /* roofline: its memory bandwidth */
  const char *comm_groups;   /* comm-group JSON, or NULL */
  bool skip;                 /* keep unmodelled nodes as zero-time delays */
  chakra_allgather_t allgather; /* what an ALL_GATHER's comm_size counts */
} chakra_opts_t;

/* Whether path names a Chakra trace, by content: a file that is not JSON but
 * opens with a length-delimited GlobalMetadata (gzip or not), named
 * PREFIX.<rank>.et[.gz]; or a PREFIX whose PREFIX.0.et[.gz] exists. Fills
 * prefix. Returns 1 (Chakra), 0 (not: read it as an npusim trace), or -1 with
 * err set (a Chakra file whose name does not give its prefix). */
int chakra_detect(const char *path, char *prefix, size_t len, npu_err_t *err);

/* Reads PREFIX.0.et ... (all consecutive ranks found) into out. skipped gets
 * the count of nodes kept as delays (skip). Returns 0, or -1 with one line
 * ("FILE: node ID "NAME": FIELD: expected ..., found ...") in err. */
int chakra_read(const char *prefix, const chakra_opts_t *o, const trace_vocab_t *vocab,
                trace_t *out, long *skipped, npu_err_t *err);

/* Tells an error about a trace chakra_read made ("PREFIX: rank R op ID: FIELD:
 * ...", as the trace checks and the replay word them) in the ET's terms: the
 * rank's file, the node's id and name, the node's field ("PREFIX.R.et: node
 * ID "NAME": comm_size: ..."). Other messages are copied as they are; msg
 * may be err. */
void chakra_explain(const char *prefix, const trace_t *t, const char *msg, npu_err_t *err);

/* How long op i of rank r ran (seconds), and how long it takes at the chip
 * model's speed (before chip.variation), for the export. */
typedef void (*chakra_duration_fn)(const void *ctx, int rank, int op, double *ran_s,
                                   double *nominal_s);

/* Writes one Chakra ET per rank (PREFIX.<rank>.et) and PREFIX.comm_groups.json
 * (the process groups the nodes' pg_name names, by number from 1 as ASTRA-sim
 * reads them), as one set that lands whole or not at all (outfile.h's
 * staging): compute, delays and events as COMP_NODE with their durations,
 * collectives, sends and receives as COMM_* nodes, a stream's order and events
 * as ctrl_deps, dependencies as data_deps. Memory ops become zero-time compute
 * (their footprint is not in the format). An all-gather's comm_size counts
 * what allgather says (INPUT: its bytes over its group's size, rounded to
 * whole bytes). A trace holding a step barrier (trace_has_barrier) is
 * refused. */
int chakra_write(const char *prefix, const trace_t *t, const trace_vocab_t *vocab,
                 chakra_allgather_t allgather, chakra_duration_fn duration, const void *ctx,
                 npu_err_t *err);

#endif
