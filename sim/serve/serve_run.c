/* serve_run.c - a serving run; see serve_run.h. */
#include "serve_run.h"

#include <libgen.h>
#include <stdlib.h>
#include <string.h>

/* The trace path: relative paths are from the workload file's folder. -1 if
 * it does not fit out (cut short, it could name another file). */
static int trace_path(const char *wl_path, const char *trace, char *out, size_t len) {
  if (trace[0] == '/')
    return snprintf(out, len, "%s", trace) < (int)len ? 0 : -1;
  char *copy = strdup(wl_path);
  int n = copy ? snprintf(out, len, "%s/%s", dirname(copy), trace) : -1;
  free(copy);
  return n >= 0 && n < (int)len ? 0 : -1;
}

/* Where the requests come from, for messages: the trace, or the workload. */
static void requests_where(const serve_opts_t *o, char *out, size_t len) {
  if (o->wl->serving.trace_path[0])
    trace_path(o->workload_path, o->wl->serving.trace_path, out, len);
  else
    snprintf(out, len, "%s", o->workload_path);
}

static int load_requests(const serve_opts_t *o, serve_requests_t *r, npu_err_t *err) {
  const workload_cfg_t *wl = o->wl;
  const serving_cfg_t *s = &wl->serving;
  char path[2 * SERVE_PATH_MAX];
  if (s->trace_path[0]) {
    if (trace_path(o->workload_path, s->trace_path, path, sizeof path))
      return npu_err_set(err,
                         "%s: serving.requests.trace: expected a path of at most %zu bytes "
                         "from the workload's folder, found a longer one",
                         o->workload_path, sizeof path - 1);
    if (serve_requests_read(path, r, err))
      return -1;
  } else {
    snprintf(path, sizeof path, "%s", o->workload_path);
    if (s->prompt.max + s->output.max > wl->model.seq_len)
      return npu_err_set(err,
                         "%s: serving.requests.prompt.max: expected prompt.max + "
                         "output.max at most the context, model.seq_len = %d, found %d + %d",
                         o->workload_path, wl->model.seq_len, s->prompt.max, s->output.max);
    npu_err_t why = {""};
    if (serve_requests_generate(s, r, &why))
      return npu_err_set(err, "%s: %s", o->workload_path, why.msg);
  }
  if (serve_requests_check_context(r, path, wl->model.seq_len, err)) {
    serve_requests_free(r);
    return -1;
  }
  return 0;
}

/* The requests through the deployment, then the summary. */
static int simulate(const serve_opts_t *o, serve_result_t *r, npu_err_t *err) {
  progress_t progress;
  progress_start(&progress, o->progress, "npusim serve", "requests", r->reqs.n);
  char where[2 * SERVE_PATH_MAX];
  requests_where(o, where, sizeof where);
  serve_sim_opts_t sopts = {o->log_iterations, &progress, where, 0};
  int rc = serve_sim_run(&o->wl->serving, r->dep.pools, r->dep.npools, &r->dep.topo, &r->reqs,
                         &sopts, &r->sim, err);
  progress_end(&progress);
  if (rc)
    return rc == SERVE_SIM_INTERNAL ? SERVE_SIM_INTERNAL : -1;
  long instances = 0;
  for (int k = 0; k < r->dep.npools; k++)
    instances += r->dep.pools[k].plan->instances;
  double switch_W =
      (double)serve_deploy_switch_ports(o->sys, &r->dep) * o->sys->cluster.scale_out.switch_port_W;
  chip_cfg_t mixed; /* pools on chips of different idle power */
  const chip_cfg_t *chip = serve_deploy_power_chip(o->sys, &r->dep, &mixed);
  if (serve_summarise(&r->sim, serve_total_npus(&o->wl->serving), instances, &o->slo, chip,
                      switch_W, &r->sum))
    return npu_err_set(err, "npusim serve: out of memory");
  return 0;
}

int serve_run(const serve_opts_t *o, serve_result_t *r, npu_err_t *err) {
  memset(r, 0, sizeof *r);
  if (serve_deploy_check_config(o->sys, o->wl, o->system_path, o->workload_path, err))
    return -1;
  if (load_requests(o, &r->reqs, err))
    return -1;
  if (serve_deploy(o->sys, o->wl, o->system_path, o->workload_path, &r->dep, err))
    return -1;
  if (serve_deploy_check_fits(o->workload_path, &o->wl->serving, &r->dep, &r->reqs, err))
    return -1;
  return simulate(o, r, err);
}

serve_report_ctx_t serve_run_ctx(const serve_opts_t *o, const serve_result_t *r) {
  return (serve_report_ctx_t){o->sys->name,  o->wl->model.name, r->dep.pools,
                              r->dep.npools, &o->slo,           o->wl->serving.block_tokens};
}

void serve_result_free(serve_result_t *r) {
  serve_sim_result_free(&r->sim);
  serve_deploy_free(&r->dep);
  serve_requests_free(&r->reqs);
}
