/* coll_cfg.h - what a system says about its collectives: the library whose
 * rules "auto" follows, the algorithm forced at each level, the protocols, the
 * software costs; and the capability table of the algorithms.
 *
 * The capability table (coll_cfg.c) is the one statement of what each
 * algorithm is: its name, the levels a config may force it at, the building
 * blocks (coll_prim_t) its emitter in coll_algos.c builds, whether it needs a
 * switch that reduces in the network, and whether it only fits one kind of job.
 * The config rules (config_rules.c), the planner's explanation of a forced
 * choice that cannot run (coll_plan.c), --algo parsing and the help text all
 * read it. Adding an algorithm is an enum value, a row of the table and its
 * emitter.
 *
 * Not modelled here: how an algorithm moves data (coll_algos.c), how the
 * library chooses one (coll_select.c), what it costs (coll_analytic.c,
 * coll_flow.c). */
#ifndef NPUSIM_COLL_CFG_H
#define NPUSIM_COLL_CFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "cluster.h"
#include "npu_err.h"

typedef enum { COLL_LIB_HCCL, COLL_LIB_NCCL, COLL_LIB_COUNT } coll_library_t;

extern const char *const coll_library_names[COLL_LIB_COUNT];

/* How the analytic fidelity paces a collective that shares links: each
 * phase ends for every rank with its slowest transfer, or each rank walks its
 * phases on its own (replay_contend.c, "rank-paced collectives"); auto: rank
 * where ECMP hashes flows over several spines or cores (topo_ecmp_hashed),
 * where collisions slow some transfers and not others, else phase. */
typedef enum {
  COLL_PROGRESS_AUTO,
  COLL_PROGRESS_PHASE,
  COLL_PROGRESS_RANK,
  COLL_PROGRESS_COUNT
} coll_progress_t;

extern const char *const coll_progress_names[COLL_PROGRESS_COUNT];

struct topo;

/* Whether the analytic fidelity runs collectives rank-paced on topo: rank,
 * or auto where ECMP hashes flows there. */
bool coll_rank_paced(coll_progress_t progress, const struct topo *topo);

/* The algorithms, in the order of the capability table. */
typedef enum {
  COLL_ALGO_AUTO,      /* the library's choice (coll_select.c) */
  COLL_ALGO_MESH,
  COLL_ALGO_RING,
  COLL_ALGO_HD,        /* recursive halving-doubling */
  COLL_ALGO_NHR,
  COLL_ALGO_NB,        /* nonuniform Bruck */
  COLL_ALGO_PAIRWISE,
  COLL_ALGO_TREE,      /* double binary tree */
  COLL_ALGO_PIPELINE,
  COLL_ALGO_NVLS,      /* in-switch reduction */
  COLL_ALGO_ONESHOT,   /* serving engines' one-shot: every rank reads every peer's buffer */
  COLL_ALGO_TWOSHOT,   /* serving engines' two-shot: P2P reduce-scatter, then all-gather */
  COLL_ALGO_COUNT
} coll_algo_t;

#define COLL_LEVELS 3 /* 0: inside a server, 1: between servers, 2: between supernodes */

/* The building blocks hierarchical collectives are made of. n is the per-rank
 * buffer: RS reduces n and leaves n/g on each member; AG gathers n/g from each
 * member into n; AR reduces n everywhere; BCAST sends n from the root; REDUCE
 * reduces n onto the root; A2A sends n/g to every member (or a matrix). */
typedef enum { PRIM_RS, PRIM_AG, PRIM_AR, PRIM_BCAST, PRIM_REDUCE, PRIM_A2A } coll_prim_t;
#define PRIM_COUNT (PRIM_A2A + 1)

/* One row of the capability table. */
typedef struct {
  const char *name;     /* in configs, --algo, traces and reports */
  const char *what;     /* what it does, a verb phrase ("halves and doubles ...") */
  unsigned levels;      /* bit l set: a config may force it at level l; --algo and
                           traces may force it wherever its emitter builds the
                           block the level needs (mesh between servers), but a
                           row with only_for holds there too */
  unsigned prims;       /* bit p set: it builds coll_prim_t p */
  bool all_pairs;       /* every rank sends to every other at once: needs a scale-up
                           that links every pair of NPUs (full_mesh, switch) */
  bool in_switch;       /* needs a switch that reduces (in_switch_reduction) */
  bool composed;        /* built by the planner's composition, not by coll_algo_emit */
  const char *only_for; /* the one kind of job it fits ("an allreduce inside one
                           server"), or NULL: any job whose blocks it builds */
} coll_algo_caps_t;

/* The row of algo (0 <= algo < COLL_ALGO_COUNT). */
const coll_algo_caps_t *coll_algo_caps(coll_algo_t algo);

/* The name of algorithm i, for the config schema's choices. */
const char *coll_algo_name(int i);

/* The algorithm called name, or -1. */
int coll_algo_parse(const char *name);

/* Whether algo builds prim (the table's prims). */
bool coll_algo_builds(coll_algo_t algo, coll_prim_t prim);

/* NCCL's protocols: each moves data with its own fixed latency and wire
 * efficiency (LL carries a flag with every 8 data bytes, LL128 one per 128);
 * the library picks the fastest per size. HCCL systems configure none. */
typedef enum { COLL_PROTO_LL, COLL_PROTO_LL128, COLL_PROTO_SIMPLE, COLL_PROTO_COUNT } coll_proto_id_t;

typedef struct {
  bool present;                   /* configured for this system */
  double step_latency_s;          /* added to every round (step) of an algorithm */
  double wire_efficiency;         /* data bytes / bytes on the wire, (0, 1] */
} coll_proto_t;

extern const char *const coll_proto_names[COLL_PROTO_COUNT];

/* NCCL's NVLS all-reduce as a chunk pipeline (NVIDIA/nccl src/enqueue.cc,
 * calcCollChunking; src/transport/nvls.cc): `channels` thread blocks, each
 * serving every head (rank), move the buffer chunk by chunk; one chunk step
 * of one channel and head loads a chunk reduced by the switch, then stores it
 * multicast. Each step pays chunk_step_s of synchronisation (Simple's fences
 * and flags) beyond its data, and the two stages fill and drain once. NCCL
 * shrinks the chunk for smaller buffers, so mid sizes pay more steps per
 * byte. NVLS runs Simple only (src/graph/tuning.cc); latency_s replaces the
 * protocol's per-step latency for its one round. */
typedef struct {
  bool present;                   /* configured; absent: NVLS is one round at link rate */
  int channels;                   /* thread blocks NVLS runs on */
  double chunk_bytes;             /* largest chunk of one step (NCCL_NVLS_CHUNKSIZE) */
  double chunk_step_s;            /* synchronisation per chunk step */
  double latency_s;               /* fixed cost of the round, for the protocol's step latency */
} coll_nvls_t;

/* The chunk NCCL's NVLS uses for a buffer of n bytes over lanes = channels x
 * heads concurrent steps: the configured chunk, halved to 64K, 32K and 16K
 * below 64, 8 and 2 full rows of lanes (calcCollChunking). */
double coll_nvls_chunk_bytes(const coll_nvls_t *nv, double n, int heads);

/* How collectives are chosen and what they cost beyond the links. */
typedef struct {
  coll_library_t library;         /* whose selection rules "auto" follows */
  coll_algo_t algo[COLL_LEVELS];  /* forced algorithm per level, or auto */
  double buffer_bytes;            /* staging buffer; larger messages loop over it */
  double step_latency_s;          /* software cost added to every algorithm step */
  double op_overhead_s;           /* fixed cost of launching one collective */
  double reduce_bw_bytes_per_s;   /* local reduction throughput; 0 = inline, free */
  coll_progress_t analytic_progress; /* how analytic contention paces collectives */
  double compute_slowdown;        /* a compute op beside a transfer ("overlaps") takes this
                                     fraction of the shorter of the two longer */
  double eager_max_bytes;         /* a send of at most this many bytes completes without
                                     waiting for its recv (eager); larger ones, and all
                                     with 0, wait for it (rendezvous) */
  double p2p_launch_s;            /* launch of a serving engine's own all-reduce kernel
                                     (oneshot, twoshot), in place of op_overhead_s; 0:
                                     op_overhead_s */
  double p2p_sync_s;              /* its flag barrier among the ranks, once per stage */
  double p2p_read_bytes_per_s;    /* the rate its loads from the peers' buffers reach, per
                                     rank, all peers together; 0: the links' rate
                                     (coll_select.c) */
  coll_proto_t proto[COLL_PROTO_COUNT];
  coll_nvls_t nvls;
} coll_cfg_t;

/* The config rule: whether algo may be forced at level on servers whose scale-up
 * is kind (reduces: a switch with in_switch_reduction). Returns 0, or -1 with
 * "... , found ..." (what is expected, without the word "expected") in why. */
int coll_algo_check_forced(coll_algo_t algo, int level, scale_up_kind_t kind, bool reduces,
                           char *why, size_t why_len);

/* Forces algorithms from text: "A" sets the level between servers when
 * multi_level (else level 0); "A0,A1[,A2]" sets one per level. Returns 0, or
 * -1 with "algo: expected ..., found ..." in err (cfg untouched); the caller
 * says where the text came from ("--algo", a trace op). */
int coll_apply_algo(const char *text, bool multi_level, coll_cfg_t *cfg, npu_err_t *err);

/* Prints the capability table as help text: each algorithm, where it runs and
 * what it builds. */
void coll_algo_print_help(FILE *f);

#endif
