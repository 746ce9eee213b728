/* replay_fidelity.c - the fidelities of a replay as one table (replay_engine.h):
 * which engine runs a plan, how the plan, the SimGrid actors and the summary
 * find times. Each row is chosen once per run by replay_fidelity_choose; no
 * other part of the replay asks which fidelity it is in. Not here: the
 * engines themselves (replay_sweep.c, replay_actors.c). */
#include <stdlib.h>

#include "replay_contend.h"
#include "replay_summary.h"

/* Analytic, each transfer alone: the sweep, or the actors where memory ops
 * (or a test) need the simulator. */
static int run_analytic(replay_plan_t *pl, replay_record_t *rec, const char *name, npu_err_t *err) {
  if (!pl->sweep)
    return replay_actors_run(pl, rec, name, err);
  replay_sweep_run(pl, rec);
  return 0;
}

/* Analytic with contention: the sweep with concurrent transfers sharing links
 * finds every transfer's duration (replay_contend.h) and the plan keeps them,
 * so the actors, where the plan needs them, print the same times. Times do not
 * depend on memory ops, so the sweep serves even a plan the actors will run;
 * where the sweep is the engine, its record is the run's. */
static int run_contended(replay_plan_t *pl, replay_record_t *rec, const char *name, npu_err_t *err) {
  const trace_t *t = pl->trace;
  double **dur = calloc((size_t)t->ranks + 1, sizeof *dur);
  for (int r = 0; r < t->ranks; r++)
    if (pl->simulated[r])
      dur[r] = calloc((size_t)t->programs[t->program_of[r]].nops + 1, sizeof **dur);
  replay_contend_t *c = replay_contend_new(pl);
  replay_sweep_contended(pl, rec, c, dur); /* reads alone times: comm_s is still NULL */
  replay_contend_free(c);
  pl->comm_s = dur; /* freed with the plan */
  int rc = replay_check_finished(pl, rec, name, err);
  if (rc == 0 && !pl->sweep) { /* memory ops: the actors run with the durations found */
    replay_record_free(rec, t);
    replay_record_init(rec, pl);
    rc = replay_actors_run(pl, rec, name, err);
  }
  return rc;
}

/* Flow: the actors, transfers as SimGrid flows. */
static int run_flow(replay_plan_t *pl, replay_record_t *rec, const char *name, npu_err_t *err) {
  return replay_actors_run(pl, rec, name, err);
}

const replay_fidelity_t replay_analytic = {
    .name = "analytic",
    .symmetric = true,
    .mode = INST_ANALYTIC,
    .sweeps = true,
    .plan_finish = replay_plan_link_groups,
    .run = run_analytic,
    .actors = &replay_actors_analytic,
    .links = replay_links_planned,
};

const replay_fidelity_t replay_analytic_contended = {
    .name = "analytic with contention",
    .symmetric = true,
    .mode = INST_ANALYTIC,
    .sweeps = true,
    .plan_finish = replay_plan_link_groups,
    .run = run_contended,
    .actors = &replay_actors_analytic,
    .links = replay_links_planned,
};

const replay_fidelity_t replay_flow = {
    .name = "flow",
    .scoped = true,
    .mode = INST_FLOW,
    .plan_finish = replay_plan_check_flows,
    .run = run_flow,
    .actors = &replay_actors_flow,
    .links = replay_links_logged,
};

const replay_fidelity_t *replay_fidelity_choose(const replay_opts_t *opts, const topo_t *topo) {
  if (opts->flow)
    return &replay_flow;
  return opts->contention || topo->nchanges ? &replay_analytic_contended : &replay_analytic;
}
