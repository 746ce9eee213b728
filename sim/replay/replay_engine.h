/* replay_engine.h - the replay's second stage: an engine runs a plan
 * (replay_plan.h) and leaves a record of when each op ran, which the summary
 * (replay_summary.h) reads.
 *
 * Two engines fill the same record:
 *   replay_sweep.c   analytic costs without the simulator: each stream moves
 *                    as far as its dependencies and meetings allow;
 *   replay_actors.c  one SimGrid actor per stream (flow fidelity, memory ops,
 *                    or when asked): the only part of the replay on SimGrid.
 * With analytic costs both compute the same times with the same arithmetic,
 * so they print the same bytes (tests/fuzz/fuzz_traces.py checks).
 *
 * A fidelity (replay_fidelity_t, replay_fidelity.c) says which engine runs and
 * how the plan, the actors and the summary find times; replay_run chooses it
 * once, as SimGrid chooses a model from its registry, and the stages call
 * through it instead of testing flags. */
#ifndef NPUSIM_REPLAY_ENGINE_H
#define NPUSIM_REPLAY_ENGINE_H

#include "coll_engine.h"
#include "replay_plan.h"
#include "npu_err.h"

typedef struct {
  replay_span_t **spans;    /* per simulated rank, per op of its program */
  char **finished;          /* per simulated rank, per op: 1 once it has its end */
  double *peak_memory_bytes; /* per rank: the high-water mark of its buffers */
  linkstats_t links;        /* flow: the transfers' link figures */
  coll_flow_log_t log;      /* flow: the transfers as they end, into links */
  int closed;               /* flow: collectives timed in closed form */
  progress_t *progress;     /* ops done (NULL: none) */
} replay_record_t;

void replay_record_init(replay_record_t *rec, const replay_plan_t *pl);
void replay_record_free(replay_record_t *rec, const trace_t *trace);

/* Runs the plan without SimGrid (pl->sweep); ops that can never run are left
 * unfinished. */
void replay_sweep_run(const replay_plan_t *pl, replay_record_t *rec);

/* The same with concurrent transfers sharing links (replay_contend.h; fluid
 * NULL: each alone). Any plan's times: memory ops take no time. Each
 * transfer's duration goes to duration_s (per simulated rank, per op; may be
 * NULL). */
typedef struct replay_contend replay_contend_t;
void replay_sweep_contended(const replay_plan_t *pl, replay_record_t *rec,
                            replay_contend_t *fluid, double **duration_s);

/* How the SimGrid actors find times in a fidelity (replay_actors.c). */
typedef struct replay_actor_rules replay_actor_rules_t;
extern const replay_actor_rules_t replay_actors_analytic, replay_actors_flow;

/* A fidelity: one row of the table. */
struct replay_fidelity {
  const char *name;
  /* plan (replay_plan.c) */
  bool symmetric;   /* with representatives, one rank runs for its program */
  bool scoped;      /* with representatives, replay_scope.c picks the ranks that run
                     * and the collectives alone on their links */
  inst_mode_t mode; /* each collective's, unless the scope found it alone */
  bool sweeps;      /* analytic costs: replay_sweep.c runs a plan without memory ops */
  /* the plan's last step, once costs and interference are known; 0, or -1 with err */
  int (*plan_finish)(replay_plan_t *pl, const char *name, npu_err_t *err);
  /* engine: runs the plan into rec (pl gains the durations the analytic
   * sweep with contention finds); 0, or -1 with err */
  int (*run)(replay_plan_t *pl, replay_record_t *rec, const char *name, npu_err_t *err);
  const replay_actor_rules_t *actors; /* where the SimGrid actors run it */
  /* summary: the link figures of the run */
  void (*links)(const replay_plan_t *pl, const replay_record_t *rec, linkstats_t *links);
};

/* The table: analytic, each transfer alone (NPUSIM_ANALYTIC_CONTENTION=0);
 * analytic, concurrent transfers sharing links (replay_contend.h); flow. */
extern const replay_fidelity_t replay_analytic, replay_analytic_contended, replay_flow;

/* The fidelity of a run: what opts ask on topo (timed faults: only the links
 * shared in time see them, so analytic contends). */
const replay_fidelity_t *replay_fidelity_choose(const replay_opts_t *opts, const topo_t *topo);

/* Runs the plan on SimGrid, one actor per stream of each simulated rank.
 * Returns 0, or -1 with a one-line reason in err (the simulator could not
 * start; more streams than it holds). */
int replay_actors_run(const replay_plan_t *pl, replay_record_t *rec, const char *name, npu_err_t *err);

#endif
