/* replay_internal.h - what the replay engine's parts share: the state of one
 * replay (costs, collective plans, per-rank progress and spans). replay.c sets
 * it up and runs the stream actors on SimGrid; replay_sweep.c computes the same
 * times without the simulator when the analytic costs allow it. */
#ifndef NPUSIM_REPLAY_INTERNAL_H
#define NPUSIM_REPLAY_INTERNAL_H

#include <simgrid/barrier.h>
#include <simgrid/cond.h>
#include <simgrid/mutex.h>

#include "coll_engine.h"
#include "replay.h"

/* One collective as a group runs it: plan, analytic cost, flow schedule. */
typedef struct {
  int comm, group, kind, root;
  double bytes;
  const char *algo;
  coll_plan_t plan;
  double analytic_s;
  coll_flow_sched_t *flow;
  sg_bar_t barrier;   /* analytic: the members meet here */
  unsigned members;   /* simulated members */
  double latest_s;    /* analytic actors: the latest arrival at the current use */
  unsigned read;      /* members that have read it */
  bool exclusive;     /* flow: its links carry nothing else, so it runs at analytic_s */
} inst_t;

typedef struct {
  sg_mutex_t mutex;
  sg_cond_t *conds;   /* per stream: signalled when the op it waits for completes */
  int *waiting_for;   /* per stream: that op, or -1 */
  int nstreams;
  char *done;         /* per op of its program: OP_* (actors) or SWEEP_* (sweep) */
  int waiters;        /* actors blocked in wait_done */
  double memory, peak_memory;
  double *buffer_bytes; /* per buffer of its program */
} rank_state_t;

typedef struct {
  const system_cfg_t *sys;
  const trace_t *trace;
  const topo_t *topo;
  bool flow;
  bool *simulated;      /* per rank: runs its own actors (else a representative does) */
  double **compute_s;   /* per program, per op: chip-model cost (shaped ops) */
  char **watched;       /* per program, per op: an op on another stream depends on it */
  int **record_of;      /* per program, per event: the op recording it (one, checked) */
  trace_pairing_t pairing; /* which send meets which recv (the trace model's rule) */
  bool sweep;           /* replay_sweep instead of the actors: no simulator at all */
  inst_t *insts;
  int ninsts, cap_insts;
  int *slots;           /* hash table of insts indices (-1 empty), size nslots */
  size_t nslots;
  int **inst_of;        /* per rank, per op: its collective (COLL ops) */
  rank_state_t *rs;
  replay_span_t **spans;
  coll_flow_log_t log;  /* flow: every transfer, for the link figures */
} rp_t;

/* Compute and delay: ops whose time is known before the replay. */
static inline bool replay_timed_only(int type) {
  return type == TRACE_OP_SHAPED || type == TRACE_OP_COMPUTE || type == TRACE_OP_DELAY;
}

/* Seconds a timed-only op takes (interference of an "overlaps" included). */
static inline double replay_timed_s(const rp_t *rp, int pi, int i) {
  const trace_op_t *op = &rp->trace->programs[pi].ops[i];
  return op->type == TRACE_OP_SHAPED ? rp->compute_s[pi][i] : op->duration_us * 1e-6;
}

/* Analytic send/recv: path latency plus the bytes over the slowest link. */
double replay_p2p_analytic_s(const topo_t *topo, int src, int dst, double bytes);

/* The collective a group runs for op, planned on first use: its index in
 * rp->insts, or -1 with a reason in err. */
int replay_inst_for(rp_t *rp, int comm, int group, const trace_op_t *op, const char *name,
                    int rank, char *err, size_t len);

/* Flow with representatives (replay_scope.c): marks the collectives whose links
 * carry nothing else (exclusive) and narrows rp->simulated to the ranks whose
 * traffic meets; *reduced tells whether ranks were left out. Returns 0, or -1
 * with a reason in err. */
int replay_scope_flow(rp_t *rp, const char *name, bool *reduced, char *err, size_t len);

/* rank_state_t.done: the actors mark ops done, or planned (ending at their
 * span's end_s, in the future); the sweep marks arrivals and ends. */
enum { OP_PENDING, OP_DONE, OP_PLANNED };
enum { SWEEP_ARRIVED = 1, SWEEP_FINISHED = 2 };

/* Runs the replay without SimGrid (analytic, no memory ops): fills the spans
 * the actors would; ops that can never run are left unfinished (replay.c
 * reports them). */
void replay_sweep(rp_t *rp);

#endif
