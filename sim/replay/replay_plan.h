/* replay_plan.h - what a replay will run, decided before anything runs: the
 * first stage of the replay (plan -> engine -> summary, replay.h).
 *
 * The plan holds every cost an engine needs and every choice made about the
 * run: each shaped op's chip-model time (with interference), each collective
 * as a group runs it (its plan, analytic time and cost mode), which ops
 * another stream watches, which op records each event, which send meets which
 * recv (trace_pairing_t), which ranks are simulated, and whether the replay
 * needs the simulator. It knows nothing of SimGrid; the engines read it and
 * never change it (replay.c adds the durations contention gives, comm_s,
 * before the engine that reports runs). */
#ifndef NPUSIM_REPLAY_PLAN_H
#define NPUSIM_REPLAY_PLAN_H

#include <stdbool.h>

#include "coll.h"
#include "replay.h"
#include "npu_err.h"

/* How a collective's time is found. */
typedef enum {
  INST_ANALYTIC, /* its alpha-beta time: analytic fidelity, or flow where its links
                  * carry nothing else (replay_scope.c) */
  INST_FLOW,     /* its transfers as SimGrid flows, sharing the links */
} inst_mode_t;

/* How a replay finds its times (replay_engine.h). */
typedef struct replay_fidelity replay_fidelity_t;

/* One collective as a group runs it: one per distinct communicator group,
 * kind, size, root and forced algorithm, shared by every issue of it. */
typedef struct {
  int comm, group, kind, root;
  double bytes;
  const char *algo;
  coll_plan_t plan;
  double analytic_s;
  inst_mode_t mode;
  bool collapsed;     /* INST_FLOW alone on its links: each phase's rounds run as one
                       * (coll_flow_collapse) */
  unsigned members;   /* simulated members */
} inst_t;

/* A step boundary (TRACE_OP_BARRIER) of one communicator group: its simulated
 * members meet there, and leave at the last one's arrival. */
typedef struct {
  int comm, group;
  unsigned members; /* simulated members */
} barrier_t;

typedef struct {
  const system_cfg_t *sys;
  const trace_t *trace;
  const topo_t *topo;
  const replay_fidelity_t *fidelity; /* chosen by replay_run */
  progress_t *progress; /* the run's, for the engines (NULL: none) */
  bool *simulated;      /* per rank: runs its own streams (else a representative does) */
  bool reduced;         /* flow: the scope left ranks out */
  double **compute_s;   /* per program, per op: chip-model cost (shaped ops) */
  char **watched;       /* per program, per op: an op on another stream depends on it */
  int **record_of;      /* per program, per event: the op recording it (one, checked) */
  trace_pairing_t pairing; /* which send meets which recv */
  int **sends;          /* per program: the indices of its SEND ops, nsends[program] */
  int *nsends;
  inst_t *insts;
  int ninsts, cap_insts;
  int *slots;           /* hash table of insts indices (-1 empty), size nslots */
  size_t nslots;
  int **inst_of;        /* per simulated rank, per op: its collective (COLL ops) */
  barrier_t *barriers;  /* per (comm, group) that BARRIER ops name */
  int nbarriers;
  int *barrier_base;    /* per communicator: the barrier of its group 0 (group g: + g), or -1 */
  bool all_standins;    /* replay_opts_t's: every stand-in job contends */
  bool sweep;           /* the fidelity sweeps and no memory ops: replay_sweep.c, no
                         * simulator */
  double *speed;        /* per rank: its speed factor (variation.h); NULL: all at 1, no jitter */
  int *chip_of;         /* per rank: its server's chip index (config_server_chip_index);
                         * NULL: every rank on the default chip */
  double ***chip_compute_s; /* per chip index, compute_s on that chip (NULL where no rank
                             * has it); [0] is compute_s. NULL without chip_of */
  int nchips;           /* entries of chip_compute_s */
  double **comm_s;      /* analytic, per simulated rank, per op: a communication op's
                         * duration with contention (replay_contend.c writes it between
                         * runs); NULL: each alone */
} replay_plan_t;

/* Builds the plan of a trace on a system (topo built for the trace) in a
 * fidelity. Returns 0, or -1 with "FILE: rank R op ID: ..." in err (the plan
 * is freed). */
int replay_plan_build(replay_plan_t *pl, const system_cfg_t *sys, const trace_t *trace,
                      const topo_t *topo, const replay_fidelity_t *fidelity, const char *name,
                      const replay_opts_t *opts, npu_err_t *err);

/* The fidelities' last plan steps (replay_fidelity_t.plan_finish). Analytic:
 * plans the collectives of groups no simulated rank leads, for the link
 * figures. Flow: refuses collectives that would post too many transfers. */
int replay_plan_link_groups(replay_plan_t *pl, const char *name, npu_err_t *err);
int replay_plan_check_flows(replay_plan_t *pl, const char *name, npu_err_t *err);

void replay_plan_free(replay_plan_t *pl);

/* The collective a group runs for op, planned on first use: its index in
 * pl->insts, or -1 with a reason in err. Only while the plan is built. */
int replay_inst_for(replay_plan_t *pl, int comm, int group, const trace_op_t *op,
                    const char *name, int rank, npu_err_t *err);

/* The planned collective of (comm, group, op's signature): its index, or -1. */
int replay_inst_find(const replay_plan_t *pl, int comm, int group, const trace_op_t *op);

/* The barrier BARRIER op `op` of rank meets at (an index into pl->barriers). */
static inline int replay_barrier_of(const replay_plan_t *pl, int rank, const trace_op_t *op) {
  return pl->barrier_base[op->comm] + trace_group_of(&pl->trace->comms[op->comm], rank);
}

/* Compute and delay: ops whose time is known before the replay. */
static inline bool replay_timed_only(int type) {
  return type == TRACE_OP_SHAPED || type == TRACE_OP_COMPUTE || type == TRACE_OP_DELAY;
}

/* Seconds a timed-only op of rank takes (interference of an "overlaps"
 * included); shaped ops cost what the rank's chip says; compute ops run at
 * the rank's speed, with its jitter. */
static inline double replay_timed_s(const replay_plan_t *pl, int rank, int pi, int i) {
  const trace_op_t *op = &pl->trace->programs[pi].ops[i];
  double *const *costs = pl->chip_of ? pl->chip_compute_s[pl->chip_of[rank]] : pl->compute_s;
  double s = op->type == TRACE_OP_SHAPED ? costs[pi][i] : op->duration_us * 1e-6;
  if (!pl->speed || op->type == TRACE_OP_DELAY)
    return s;
  return s / pl->speed[rank] * variation_jitter(&pl->sys->variation, rank, i);
}

/* Analytic seconds collective op i of simulated rank r takes. */
static inline double replay_coll_s(const replay_plan_t *pl, int r, int i) {
  return pl->comm_s ? pl->comm_s[r][i] : pl->insts[pl->inst_of[r][i]].analytic_s;
}

/* Analytic seconds send/recv op i of simulated rank r takes, src to dst
 * (alone: the path time, topo_path_time_s). */
static inline double replay_p2p_s(const replay_plan_t *pl, int r, int i, int src, int dst,
                                  double bytes) {
  return pl->comm_s ? pl->comm_s[r][i] : topo_path_time_s(pl->topo, src, dst, bytes);
}

/* Whether a send of bytes is eager: it ends once its data is in the receiver's
 * buffer, without waiting for the recv, which ends when both it and the data
 * are there (collectives.p2p_eager_max_MiB; the trace's cycle check follows
 * the same rule, trace_vocab_t). Else rendezvous: both start when both are
 * there. */
static inline bool replay_p2p_eager(const replay_plan_t *pl, double bytes) {
  return bytes <= pl->sys->coll.eager_max_bytes;
}

/* Whether a flow replay runs the collective as transfers. */
static inline bool replay_inst_flows(const inst_t *x) {
  return x->members > 0 && x->mode == INST_FLOW;
}

/* One actor per stream of each simulated rank. */
long replay_plan_streams(const replay_plan_t *pl);

/* Flow with representatives (replay_scope.c): which collectives run at their
 * analytic time and which ranks must be simulated. */
typedef struct {
  bool *analytic;       /* per inst: its links carry nothing else */
  bool *simulated;      /* per rank; NULL: every rank */
} replay_scope_t;

/* Per collective: its links carry nothing but its own collectives, issued from
 * one stream (so one at a time); every group's collectives must be planned.
 * None with timed faults (topo_change_t): then a collective's time depends on
 * when it runs, which its time alone does not say. */
bool *replay_exclusive_insts(const replay_plan_t *pl);

/* Plans every group's collectives in pl, then chooses; 0, or -1 with err. */
int replay_scope_choose(replay_plan_t *pl, const char *name, replay_scope_t *out, npu_err_t *err);

#endif
