/* coll_run.c - the sizes of a coll_matrix_t planned and timed on the
 * topology built for its ranks: analytic sizes one after another on the
 * clock (faults that come later meet the later sizes), flow sizes in one
 * SimGrid run. */
#include "coll_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_engine.h"

/* topo_build names the parameter at fault ("ranks_per_node: expected ..."); here
 * each came from the flag of that name: "--ranks-per-node: expected ...", or
 * from the system config ("S.json: cluster.faults.links: ..."). */
static int topo_flag_error(int rc, const char *why, const char *system, npu_err_t *err) {
  char flag[32];
  size_t n = strcspn(why, ":");
  if (rc == TOPO_BAD_FAULT)
    return npu_err_set(err, "%s: %s", system, why);
  if (n >= sizeof flag || !why[n])
    return npu_err_set(err, "%s", why);
  for (size_t i = 0; i < n; i++)
    flag[i] = why[i] == '_' ? '-' : why[i];
  flag[n] = '\0';
  return npu_err_set(err, "--%s%s", flag, why + n);
}

/* Times every size analytically, one after another; rank-paced where
 * coll_rank_paced says so and the caller gave the timer. */
static void run_analytic(const coll_run_opts_t *opts, const coll_cfg_t *cfg,
                         const coll_plan_t *plans, coll_result_t *r) {
  const topo_t *topo = &r->topo;
  int last = r->nrows - 1;
  double clock_s = 0; /* sizes run one after another, as in the flow fidelity */
  if (opts->time_rank_paced && coll_rank_paced(cfg->analytic_progress, topo)) {
    const coll_sched_t **scheds = malloc(((size_t)r->nrows + 1) * sizeof *scheds);
    double *times = malloc(((size_t)r->nrows + 1) * sizeof *times);
    for (int i = 0; i < r->nrows; i++)
      scheds[i] = &plans[i].sched;
    opts->time_rank_paced(topo, cfg, scheds, r->nrows, times);
    for (int i = 0; i < r->nrows; i++) {
      r->rows[i].time_s = times[i];
      clock_s += i < last ? times[i] : 0;
    }
    free(scheds);
    free(times);
    if (opts->links) /* the largest size's links, as its phases load them */
      coll_analytic_time(topo_at(topo, clock_s), cfg, &plans[last].sched, &r->stats);
    return;
  }
  for (int i = 0; i < r->nrows; i++) {
    /* the links it crosses: round the links dead by its start */
    r->rows[i].time_s = coll_analytic_time(topo_at(topo, clock_s), cfg, &plans[i].sched,
                                           (opts->links && i == last) ? &r->stats : NULL);
    if (topo->nchanges || topo->after) /* timed faults: when it runs matters */
      r->rows[i].time_s = coll_analytic_time_from(topo, cfg, &plans[i].sched, clock_s);
    clock_s += r->rows[i].time_s;
  }
}

/* Times every size in one flow run. */
static int run_flow(const coll_run_opts_t *opts, const coll_cfg_t *cfg, const coll_plan_t *plans,
                    coll_result_t *r, npu_err_t *err) {
  npu_err_t why = {""};
  int n = r->nrows;
  const coll_sched_t **scheds = malloc((size_t)n * sizeof *scheds);
  double *times = malloc((size_t)n * sizeof *times);
  for (int i = 0; i < n; i++)
    scheds[i] = &plans[i].sched;
  int rc = coll_flow_run(&r->topo, cfg, scheds, n, !opts->plain_rounds, times, opts->links ? n - 1 : -1, &r->stats, &why);
  if (rc == COLL_FLOW_TOO_LARGE) /* "flow: ..." is the --fidelity this command was given */
    rc = npu_err_set(err, "--fidelity %s; use --fidelity analytic", why.msg);
  else if (rc < 0)
    rc = npu_err_set(err, "%s", why.msg);
  else { /* how many sizes took the closed form */
    r->closed = rc;
    rc = 0;
  }
  for (int i = 0; rc == 0 && i < n; i++)
    r->rows[i].time_s = times[i];
  free(scheds);
  free(times);
  return rc;
}

int coll_run(const coll_run_opts_t *opts, const coll_matrix_t *m, coll_result_t *r,
             npu_err_t *err) {
  memset(r, 0, sizeof *r);
  npu_err_t why = {""};
  int topo_rc = topo_build(opts->node, opts->cluster, opts->dies_per_package, m->ranks,
                           m->ranks_per_node, &r->topo, &why);
  if (topo_rc)
    return topo_flag_error(topo_rc, why.msg, opts->system_path, err);
  coll_cfg_t cfg = opts->coll;
  if (opts->algo &&
      coll_apply_algo(opts->algo, topo_levels_used(&r->topo) > 1, &cfg, &why)) {
    topo_free(&r->topo);
    return npu_err_set(err, "--%s", why.msg); /* "algo: ..." came from --algo */
  }
  r->nrows = m->nsizes;
  coll_plan_t *plans = calloc((size_t)m->nsizes, sizeof *plans);
  r->rows = calloc((size_t)m->nsizes, sizeof *r->rows);
  int rc = 0, planned = 0;
  for (; planned < m->nsizes && rc == 0; planned++) {
    coll_req_t req = {m->op, m->sizes[planned], m->root, m->alltoallv};
    rc = coll_plan(&r->topo, &cfg, &req, &plans[planned], &why);
    if (rc) /* the planner names the field it was given; the forced ones came from --algo */
      rc = npu_err_set(err, "%s%s", rc == COLL_PLAN_FORCED_MISFIT && opts->algo ? "--" : "", why.msg);
    r->rows[planned].bytes = m->sizes[planned];
    snprintf(r->rows[planned].algo, sizeof r->rows[planned].algo, "%s", plans[planned].name);
  }
  linkstats_init(&r->stats, &r->topo);
  if (rc == 0 && opts->analytic)
    run_analytic(opts, &cfg, plans, r);
  else if (rc == 0)
    rc = run_flow(opts, &cfg, plans, r, err);
  for (int i = 0; i < planned; i++)
    coll_plan_free(&plans[i]);
  free(plans);
  if (rc)
    coll_result_free(r);
  return rc;
}

void coll_result_free(coll_result_t *r) {
  linkstats_free(&r->stats);
  free(r->rows);
  topo_free(&r->topo);
  memset(r, 0, sizeof *r);
}
