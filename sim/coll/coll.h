/* coll.h - collective operations as schedules of point-to-point transfers.
 *
 * An algorithm (ring, mesh, halving-doubling, NHR, Bruck, pairwise, double
 * binary tree, pipeline, in-switch reduction) becomes a schedule: a list of
 * phases, each a set of concurrent transfers repeated some number of rounds,
 * the rounds of a phase and the phases one after another. Receiving ranks of a
 * reducing phase reduce what they received (the gamma term). Hierarchical
 * compositions run one algorithm per level (server, supernode or cluster,
 * between supernodes) the way HCCL does: reduce-scatter down the levels,
 * all-reduce at the top, all-gather back up.
 *
 * The same schedule is costed by two engines: coll_analytic.c (alpha-beta on
 * the links each transfer crosses, no contention between collectives) and
 * coll_flow.c (every transfer a SimGrid communication, contention emerges).
 * Scheduling knows nothing of SimGrid. */
#ifndef NPUSIM_COLL_H
#define NPUSIM_COLL_H

#include <stdbool.h>

#include "coll_cfg.h"
#include "topo.h"
#include "npu_err.h"

typedef enum {
  COLL_ALLREDUCE,
  COLL_ALLGATHER,
  COLL_REDUCESCATTER,
  COLL_BROADCAST,
  COLL_REDUCE,
  COLL_ALLTOALL,
  COLL_ALLTOALLV,
  COLL_SENDRECV,
  COLL_OP_COUNT
} coll_op_t;

extern const char *const coll_op_names[COLL_OP_COUNT];

/* What to run. bytes follows nccl-tests: the per-rank buffer for allreduce,
 * broadcast, reduce and sendrecv; the total (all ranks' slices) for allgather,
 * reducescatter and alltoall. */
typedef struct {
  coll_op_t op;
  double bytes;
  int root;              /* broadcast, reduce */
  const double *matrix;  /* alltoallv: ranks x ranks bytes, row = sender */
} coll_req_t;

typedef struct {
  int src, dst;          /* ranks; ids >= ranks are in-network switches (NVLS) */
  double bytes;
} coll_xfer_t;

typedef struct {
  int level;             /* hierarchy level of the phase (0 server, 1, 2) */
  int rounds;            /* the transfers run this many times, one round after another */
  bool reduces;          /* receivers reduce what they receive */
  int chunk_steps;       /* >0: each round's data moves as this many pipelined chunk
                            steps of two stages (NVLS), each paying chunk_step_s */
  double chunk_step_s;
  int nxfers, cap;
  coll_xfer_t *xfers;
} coll_phase_t;

typedef struct {
  int nphases, cap;
  coll_phase_t *phases;
  int loops;             /* the phases run this many times (staging-buffer loops) */
  int endpoints;         /* ranks plus in-network switch endpoints used */
  double wire_factor;    /* bytes on the wire per data byte (protocol), >= 1, times
                            hold_factor */
  double hold_factor;    /* the part of wire_factor that is time, not bytes: a kernel
                            whose loads reach less than the links' rate holds them
                            longer (coll_select.c); link figures and energy count
                            wire_factor / hold_factor bytes; 0 or 1: none */
  double step_s;         /* protocol latency added to every round */
  bool own_launch;       /* launch_s replaces the config's op_overhead_s (a serving
                            engine's own kernel, not the library's) */
  double launch_s;
  coll_nvls_t nvls;      /* NVLS's chunk pipeline, from the config (absent: not modelled) */
} coll_sched_t;

/* The schedule's hold_factor, 1 where it has none. */
static inline double coll_sched_held(const coll_sched_t *s) {
  return s->hold_factor > 1 ? s->hold_factor : 1;
}

/* The fixed cost of launching the schedule: its own, else the library's. */
static inline double coll_sched_launch_s(const coll_cfg_t *cfg, const coll_sched_t *s) {
  return s->own_launch ? s->launch_s : cfg->op_overhead_s;
}

/* The algorithms chosen for a request and its schedule. */
typedef struct {
  coll_algo_t algo[COLL_LEVELS]; /* per level; COLL_ALGO_AUTO where a level is unused */
  int proto;                     /* coll_proto_id_t chosen, or -1 (none configured) */
  char name[64];                 /* "mesh+pipeline", "ring/ll128", ... as reported */
  coll_sched_t sched;
} coll_plan_t;

/* coll_plan's return when the forced algorithms (cfg->algo) cannot run together:
 * err then says "algo: expected ...", and the caller says where they came from. */
#define COLL_PLAN_FORCED_MISFIT (-2)

/* Chooses algorithms (forced ones from cfg->algo, else the library's rules,
 * coll_select.c) and builds the schedule; where protocols are configured, the one the analytic
 * model finds fastest for this size. Returns 0, or -1 with "expected ..., found ..." in err
 * when a forced algorithm cannot run this op on this topology (COLL_PLAN_FORCED_MISFIT when
 * no single level is to blame). */
int coll_plan(const topo_t *topo, const coll_cfg_t *cfg, const coll_req_t *req,
              coll_plan_t *plan, npu_err_t *err);

/* The same for a communicator: the g ranks of members, in algorithm order (a
 * regular group lists its servers one after another, the same number of ranks
 * from each; any other group is planned as if each rank had its own server).
 * The schedule names real ranks. The alltoallv matrix is g x g. */
int coll_plan_group(const topo_t *topo, const coll_cfg_t *cfg, const int *members, int g,
                    const coll_req_t *req, coll_plan_t *plan, npu_err_t *err);

void coll_plan_free(coll_plan_t *plan);

/* The all-reduce a serving engine runs on its own kernels for bytes per rank
 * over the g ranks of members (vLLM's custom all-reduce, coll_select.c):
 * COLL_ALGO_ONESHOT or COLL_ALGO_TWOSHOT, or COLL_ALGO_AUTO where the engine
 * leaves it to the library (not NCCL, not one server whose scale-up links every
 * pair, a size or group the kernels do not take). */
coll_algo_t coll_select_engine_allreduce(const topo_t *topo, const coll_cfg_t *cfg,
                                         const int *members, int g, double bytes);

/* Bytes every rank must move for the op with the best algorithm: nccl-tests'
 * bus bandwidth factor (2(p-1)/p for allreduce, (p-1)/p for allgather,
 * reducescatter and alltoall, 1 otherwise). */
double coll_busbw_factor(coll_op_t op, int ranks);

/* Total bytes a schedule moves (all transfers, rounds and loops). */
double coll_sched_bytes(const coll_sched_t *s);

/* What a round of ph takes beyond link_s, the time its data spends on the
 * links, when its data moves in chunk steps: the pipeline's fill (one step's
 * share of link_s) and every step's synchronisation; 0 when not chunked. */
double coll_phase_pipeline_s(const coll_phase_t *ph, double link_s);

/* What a receiver of a round of ph does on its own once the round's received
 * bytes have arrived: reduce them (collectives.reduce_bandwidth_GBps, where
 * ph reduces); 0 where it reduces inline. */
double coll_phase_local_s(const coll_cfg_t *cfg, const coll_phase_t *ph, double received);

/* ---- building schedules (coll_sched.c), used by the algorithms ---- */

/* Returns phase number index, creating empty phases up to it. */
coll_phase_t *coll_sched_phase(coll_sched_t *s, int index, int level, int rounds, bool reduces);
void coll_phase_add(coll_phase_t *ph, int src, int dst, double bytes);
void coll_sched_free(coll_sched_t *s);

#endif
