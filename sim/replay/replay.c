/* replay.c - a replay run in order: plan, engine, summary (replay.h). */
#include "replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay_contend.h"
#include "replay_summary.h"

/* Whether the environment sets name to value. */
static bool env_is(const char *name, const char *value) {
  const char *v = getenv(name);
  return v && strcmp(v, value) == 0;
}

replay_opts_t replay_opts(bool flow, bool representatives) {
  return (replay_opts_t){.flow = flow,
                         .representatives = representatives,
                         .contention = !env_is("NPUSIM_ANALYTIC_CONTENTION", "0"),
                         .collapse_rounds = !env_is("NPUSIM_FLOW_COLLAPSE", "0"),
                         .force_actors = env_is("NPUSIM_REPLAY_ACTORS", "1"),
                         .all_ranks = env_is("NPUSIM_FLOW_ALL_RANKS", "1")};
}

void replay_record_init(replay_record_t *rec, const replay_plan_t *pl) {
  const trace_t *t = pl->trace;
  memset(rec, 0, sizeof *rec);
  rec->spans = calloc((size_t)t->ranks, sizeof *rec->spans);
  rec->finished = calloc((size_t)t->ranks, sizeof *rec->finished);
  rec->peak_memory_bytes = calloc((size_t)t->ranks, sizeof *rec->peak_memory_bytes);
  rec->progress = pl->progress;
  if (rec->progress) /* a second engine's pass counts again */
    rec->progress->done = rec->progress->total = 0;
  for (int r = 0; r < t->ranks; r++) {
    if (!pl->simulated[r])
      continue;
    int nops = t->programs[t->program_of[r]].nops;
    if (rec->progress)
      rec->progress->total += nops;
    rec->spans[r] = calloc((size_t)nops + 1, sizeof **rec->spans);
    rec->finished[r] = calloc((size_t)nops + 1, 1);
  }
}

void replay_record_free(replay_record_t *rec, const trace_t *trace) {
  for (int r = 0; r < trace->ranks; r++) {
    if (rec->spans)
      free(rec->spans[r]);
    if (rec->finished)
      free(rec->finished[r]);
  }
  free(rec->spans);
  free(rec->finished);
  free(rec->peak_memory_bytes);
  free(rec->log.v);
  memset(rec, 0, sizeof *rec);
}

/* Analytic: the sweep with concurrent transfers sharing links finds every
 * transfer's duration (replay_contend.h) and the plan keeps them, so the
 * actors, where the plan needs them, print the same times. Times do not depend
 * on memory ops, so the sweep serves even a plan the actors will run; where the
 * sweep is the engine, its record is the run's. */
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

int replay_run(const system_cfg_t *sys, const trace_t *trace, const char *trace_name,
               const replay_opts_t *opts, replay_result_t *out, npu_err_t *err) {
  memset(out, 0, sizeof *out);
  out->ranks = trace->ranks;
  npu_err_t why; /* the model names its field (ranks_per_node: ...), we the file */
  int topo_rc = topo_build(&sys->node, &sys->cluster, sys->chip.dies_per_package, trace->ranks,
                           trace->ranks_per_node, &out->topo, &why);
  if (topo_rc) {
    bool system_key = topo_rc == TOPO_BAD_FAULT && opts->system_file;
    return npu_err_set(err, "%s: %s", system_key ? opts->system_file : trace_name, why.msg), -1;
  }
  replay_plan_t plan;
  int rc = replay_plan_build(&plan, sys, trace, &out->topo, trace_name, opts, err);
  if (rc) {
    replay_result_free(out, trace);
    return rc;
  }
  out->representatives = (opts->representatives && !opts->flow && !plan.speed) || plan.reduced;
  replay_record_t rec;
  replay_record_init(&rec, &plan);
  /* timed faults: only the links shared in time see them (replay_contend.h) */
  if (!opts->flow && (opts->contention || out->topo.nchanges))
    rc = run_contended(&plan, &rec, trace_name, err);
  else if (plan.sweep)
    replay_sweep_run(&plan, &rec);
  else
    rc = replay_actors_run(&plan, &rec, trace_name, err);
  if (rc == 0)
    rc = replay_check_finished(&plan, &rec, trace_name, err);
  if (rc == 0) {
    replay_summarise(&plan, &rec, out);
    out->spans = rec.spans; /* the record's spans become the result's */
    rec.spans = NULL;
  }
  replay_record_free(&rec, trace);
  replay_plan_free(&plan);
  if (rc)
    replay_result_free(out, trace);
  return rc;
}

int replay_stand_in(const replay_result_t *r, const trace_t *trace, int rank) {
  return r->representatives ? trace->programs[trace->program_of[rank]].ranks[0] : rank;
}

void replay_result_free(replay_result_t *r, const trace_t *trace) {
  for (int i = 0; r->spans && i < trace->ranks; i++)
    free(r->spans[i]);
  free(r->spans);
  free(r->per_rank);
  free(r->per_comm);
  linkstats_free(&r->links);
  topo_free(&r->topo);
  memset(r, 0, sizeof *r);
}
