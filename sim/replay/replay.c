/* replay.c - a replay run in order: plan, engine, summary (replay.h). */
#include "replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay_summary.h"

replay_opts_t replay_opts(bool flow, bool representatives, const replay_switches_t *sw) {
  replay_switches_t none = {0};
  if (!sw)
    sw = &none;
  return (replay_opts_t){.flow = flow,
                         .representatives = representatives,
                         .contention = !sw->no_contention,
                         .collapse_rounds = !sw->no_collapse,
                         .force_actors = sw->force_actors,
                         .all_ranks = sw->all_ranks,
                         .all_standins = sw->all_standins};
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
  /* the one place the fidelity is chosen: every stage below calls through it */
  const replay_fidelity_t *fidelity = replay_fidelity_choose(opts, &out->topo);
  replay_plan_t plan;
  int rc =
      replay_plan_build(&plan, sys, trace, &out->topo, fidelity, trace_name, opts, err);
  if (rc) {
    replay_result_free(out, trace);
    return rc;
  }
  out->representatives =
      (opts->representatives && fidelity->symmetric && !plan.speed) || plan.reduced;
  replay_record_t rec;
  replay_record_init(&rec, &plan);
  rc = fidelity->run(&plan, &rec, trace_name, err);
  if (rc == 0)
    rc = replay_check_finished(&plan, &rec, trace_name, err);
  if (rc == 0) {
    replay_summarise(&plan, &rec, out);
    out->closed_collectives = rec.closed;
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
