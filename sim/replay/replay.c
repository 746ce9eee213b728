/* replay.c - a replay run in order: plan, engine, summary (replay.h). */
#include "replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay_contend.h"
#include "replay_summary.h"

/* Passes of the analytic sweep while contention moves durations, and the
 * relative change of a duration below which they have settled. */
#define CONTEND_MAX_PASSES 8
#define CONTEND_SETTLED 1e-9

static bool env_on(const char *name) {
  const char *v = getenv(name);
  return v && strcmp(v, "1") == 0;
}

static bool env_off(const char *name) {
  const char *v = getenv(name);
  return v && strcmp(v, "0") == 0;
}

replay_opts_t replay_opts(bool flow, bool representatives) {
  return (replay_opts_t){.flow = flow,
                         .representatives = representatives,
                         .contention = !env_off("NPUSIM_ANALYTIC_CONTENTION"),
                         .force_actors = env_on("NPUSIM_REPLAY_ACTORS"),
                         .all_ranks = env_on("NPUSIM_FLOW_ALL_RANKS")};
}

void replay_record_init(replay_record_t *rec, const replay_plan_t *pl) {
  const trace_t *t = pl->trace;
  memset(rec, 0, sizeof *rec);
  rec->spans = calloc((size_t)t->ranks, sizeof *rec->spans);
  rec->finished = calloc((size_t)t->ranks, sizeof *rec->finished);
  rec->peak_memory_bytes = calloc((size_t)t->ranks, sizeof *rec->peak_memory_bytes);
  for (int r = 0; r < t->ranks; r++) {
    if (!pl->simulated[r])
      continue;
    int nops = t->programs[t->program_of[r]].nops;
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

/* Analytic: sweeps the plan, lets concurrent transfers share the links
 * (replay_contend.h) and sweeps again with the durations found, until they
 * settle; the plan keeps the last ones for the final run. Times do not depend
 * on memory ops, so the sweep serves even a plan the actors will run. */
static int settle_contention(replay_plan_t *pl, const char *name, replay_result_t *out,
                             char *err, size_t len) {
  replay_contend_t *c = replay_contend_new(pl);
  double change = 1;
  int pass = 0, rc = 0;
  while (rc == 0 && pass < CONTEND_MAX_PASSES && change > CONTEND_SETTLED) {
    replay_record_t rec;
    replay_record_init(&rec, pl);
    replay_sweep_run(pl, &rec);
    rc = replay_check_finished(pl, &rec, name, err, len);
    if (rc == 0)
      change = replay_contend_update(c, pl, &rec);
    replay_record_free(&rec, pl->trace);
    pass++;
  }
  replay_contend_free(c);
  out->contention_passes = pass;
  if (rc == 0 && change > CONTEND_SETTLED)
    snprintf(out->note, sizeof out->note,
             "%s: analytic contention still moved a transfer's time by %.2g%% after %d passes; "
             "the last pass's times are used", name, 100 * change, pass);
  return rc;
}

int replay_run(const system_cfg_t *sys, const trace_t *trace, const char *trace_name,
               const replay_opts_t *opts, replay_result_t *out, char *err, size_t err_len) {
  memset(out, 0, sizeof *out);
  out->ranks = trace->ranks;
  char why[512]; /* the model names its field (ranks_per_node: ...), we the file */
  if (topo_build(&sys->node, &sys->cluster, sys->chip.dies_per_package, trace->ranks,
                 trace->ranks_per_node, &out->topo, why, sizeof why))
    return snprintf(err, err_len, "%s: %s", trace_name, why), -1;
  replay_plan_t plan;
  int rc = replay_plan_build(&plan, sys, trace, &out->topo, trace_name, opts, err, err_len);
  if (rc) {
    replay_result_free(out, trace);
    return rc;
  }
  out->representatives = (opts->representatives && !opts->flow) || plan.reduced;
  if (!opts->flow && opts->contention)
    rc = settle_contention(&plan, trace_name, out, err, err_len);
  replay_record_t rec;
  replay_record_init(&rec, &plan);
  if (rc)
    ;
  else if (plan.sweep)
    replay_sweep_run(&plan, &rec);
  else
    rc = replay_actors_run(&plan, &rec, trace_name, err, err_len);
  if (rc == 0)
    rc = replay_check_finished(&plan, &rec, trace_name, err, err_len);
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
