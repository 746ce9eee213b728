/* cmd_serve.c - `npusim serve`: the workload's serving section becomes pools
 * of instances placed on the system (prefill, or co-located, first; then
 * decode), each pool with its cost model (sim/serve/serve_cost.c); the
 * requests (a trace or the generator) run through them (serve_sim.c) and the
 * report, time series and Chrome trace come from serve_report.c. This file
 * loads, checks and wires. */
#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "progress.h"
#include "serve_report.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

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
static void requests_where(const cli_opts_t *opts, const workload_cfg_t *wl, char *out,
                           size_t len) {
  if (wl->serving.trace_path[0])
    trace_path(opts->workload_path, wl->serving.trace_path, out, len);
  else
    snprintf(out, len, "%s", opts->workload_path);
}

static int load_requests(const cli_opts_t *opts, const workload_cfg_t *wl, serve_requests_t *r,
                         npu_err_t *err) {
  const serving_cfg_t *s = &wl->serving;
  char path[2 * SERVE_PATH_MAX];
  if (s->trace_path[0]) {
    if (trace_path(opts->workload_path, s->trace_path, path, sizeof path))
      return npu_err_set(err,
                         "%s: serving.requests.trace: expected a path of at most %zu bytes "
                         "from the workload's folder, found a longer one",
                         opts->workload_path, sizeof path - 1);
    if (serve_requests_read(path, r, err))
      return -1;
  } else {
    snprintf(path, sizeof path, "%s", opts->workload_path);
    if (s->prompt.max + s->output.max > wl->model.seq_len)
      return npu_err_set(err,
                         "%s: serving.requests.prompt.max: expected prompt.max + "
                         "output.max at most the context, model.seq_len = %d, found %d + %d",
                         opts->workload_path, wl->model.seq_len, s->prompt.max, s->output.max);
    npu_err_t why = {""};
    if (serve_requests_generate(s, r, &why))
      return npu_err_set(err, "%s: %s", opts->workload_path, why.msg);
  }
  if (serve_requests_check_context(r, path, wl->model.seq_len, err)) {
    serve_requests_free(r);
    return -1;
  }
  return 0;
}

typedef struct {
  serve_sim_pool_t pools[2];
  int npools;
  op_cache_t *ops;
  topo_t topo;
  bool has_topo;
} deployment_t;

static void deployment_free(deployment_t *d) {
  for (int k = 0; k < d->npools; k++)
    serve_cost_free(d->pools[k].cost);
  op_cache_free(d->ops);
  if (d->has_topo)
    topo_free(&d->topo);
}

/* Places the pools on the system and builds their cost models. */
static int deploy(const cli_opts_t *opts, const cli_configs_t *cfg, deployment_t *d,
                  npu_err_t *err) {
  const serving_cfg_t *s = &cfg->wl.serving;
  const system_cfg_t *sys = &cfg->sys;
  memset(d, 0, sizeof *d);
  d->npools = serve_sim_pools(s, d->pools);
  long npus = serve_total_npus(s);
  npu_err_t why = {""};
  int rc = npus > 1000000 ? -1
                          : topo_build(&sys->node, &sys->cluster, sys->chip.dies_per_package,
                                       (int)npus, 0, &d->topo, &why);
  if (rc == TOPO_BAD_FAULT)
    return npu_err_set(err, "%s: %s", opts->system_path, why.msg);
  if (rc)
    return npu_err_set(err, "%s: serving: expected a deployment that fits %s, found %ld NPUs (%s)",
                       opts->workload_path, opts->system_path, npus,
                       npus > 1000000 ? "over a million" : why.msg);
  d->has_topo = true;
  for (int i = 0; i < sys->cluster.faults.n; i++) /* serve prices an iteration, not a clock */
    if (sys->cluster.faults.v[i].at_s > 0)
      return npu_err_set(err, "%s: cluster.faults.links: expected faults from the start in npusim "
                         "serve (no @T), found %s:%g@%g", opts->system_path,
                         sys->cluster.faults.v[i].link, sys->cluster.faults.v[i].factor,
                         sys->cluster.faults.v[i].at_s);
  if (!(d->ops = op_cache_new(&sys->chip)))
    return npu_err_set(err, "npusim serve: out of memory");
  for (int k = 0; k < d->npools; k++) {
    serve_sim_pool_t *p = &d->pools[k];
    p->cost = serve_cost_new(sys, &cfg->wl, opts->workload_path, serve_pool_paths[p->kind], p->plan,
                             &d->topo, p->first_rank, d->ops, err);
    if (!p->cost)
      return -1;
  }
  return 0;
}

/* The longest request must fit one attention group's KV cache, and without
 * chunked prefill its prompt must fit one iteration. */
static int check_fits(const cli_opts_t *opts, const serving_cfg_t *s, const deployment_t *d,
                      const serve_requests_t *r, npu_err_t *err) {
  long longest = 0, prompt = 0;
  for (long i = 0; i < r->n; i++) {
    long t = (long)r->v[i].prompt_tokens + r->v[i].output_tokens;
    longest = t > longest ? t : longest;
    prompt = r->v[i].prompt_tokens > prompt ? r->v[i].prompt_tokens : prompt;
  }
  if (!s->chunked_prefill && prompt > s->max_batched_tokens)
    return npu_err_set(err,
                       "%s: serving.scheduler.max_batched_tokens: expected at least the "
                       "longest prompt (%ld tokens) when chunked_prefill is false, found %d",
                       opts->workload_path, prompt, s->max_batched_tokens);
  for (int k = 0; k < d->npools; k++) {
    const serve_memory_t *m = serve_cost_memory(d->pools[k].cost);
    long tokens = d->pools[k].kind == SERVE_POOL_PREFILL ? prompt : longest;
    long need = (tokens + s->block_tokens - 1) / s->block_tokens;
    if (need > m->kv_blocks)
      return npu_err_set(err,
                         "%s: %s: expected the KV cache of the longest request (%ld tokens, "
                         "%.3f GiB per NPU) to fit an attention group's KV capacity (%.3f GiB "
                         "per NPU), found %.3f GiB over",
                         opts->workload_path, serve_pool_paths[d->pools[k].kind], tokens,
                         (double)need * s->block_tokens * m->kv_per_token / GIB,
                         (double)m->kv_blocks * s->block_tokens * m->kv_per_token / GIB,
                         (double)(need - m->kv_blocks) * s->block_tokens * m->kv_per_token / GIB);
  }
  return 0;
}

static int write_files(const cli_opts_t *opts, const serve_report_ctx_t *ctx,
                       const serve_sim_result_t *res, npu_err_t *err) {
  if (opts->timeseries &&
      serve_write_timeseries(opts->timeseries, ctx, res, err))
    return CMD_CANNOT_WRITE;
  if (opts->chrome_trace &&
      serve_write_chrome(opts->chrome_trace, ctx, res, err))
    return CMD_CANNOT_WRITE;
  return 0;
}

int cmd_serve(const cli_opts_t *opts, FILE *out, npu_err_t *err) {
  if (!opts->workload_path)
    return npu_err_set(err, "npusim serve: expected --workload FILE, found none");
  if (opts->trace_ranks)
    return npu_err_set(err,
                       "npusim serve: --trace-ranks: expected no such option (a serving "
                       "timeline shows instances), found %s",
                       opts->trace_ranks);
  serve_slo_t slo = {0, 0};
  if (opts->slo && serve_slo_parse(opts->slo, &slo, err))
    return -1;
  cli_configs_t cfg;
  if (cli_load_configs(opts, &cfg, err))
    return -1;
  if (!cfg.wl.has_serving || cfg.sys.cluster.node_types.n > 0) {
    if (!cfg.wl.has_serving)
      npu_err_set(err,
                  "%s: serving: expected a serving section (a training workload runs with "
                  "npusim train)",
                  opts->workload_path);
    else /* every instance is costed on one chip (serve_cost.c) */
      npu_err_set(err, "%s: cluster.node_types: expected \"\" with npusim serve (serving "
                  "costs every instance on the default chip), found servers %d-%d on \"%.200s\"",
                  opts->system_path, cfg.sys.cluster.node_types.v[0].first,
                  cfg.sys.cluster.node_types.v[0].last, cfg.sys.cluster.node_types.v[0].system);
    cli_free_configs(&cfg);
    return -1;
  }
  serve_requests_t reqs = {0};
  deployment_t dep;
  int rc = load_requests(opts, &cfg.wl, &reqs, err);
  if (rc == 0)
    rc = deploy(opts, &cfg, &dep, err);
  else
    memset(&dep, 0, sizeof dep);
  if (rc == 0)
    rc = check_fits(opts, &cfg.wl.serving, &dep, &reqs, err);
  if (rc == 0) {
    progress_t progress;
    progress_start(&progress, opts->progress, "npusim serve", "requests", reqs.n);
    char where[2 * SERVE_PATH_MAX];
    requests_where(opts, &cfg.wl, where, sizeof where);
    serve_sim_opts_t sopts = {opts->timeseries || opts->chrome_trace, &progress, where, 0};
    serve_sim_result_t res;
    rc = serve_sim_run(&cfg.wl.serving, dep.pools, dep.npools, &dep.topo, &reqs, &sopts, &res,
                       err);
    if (rc == SERVE_SIM_INTERNAL) /* a bug, not the input: exit 1 as other internal errors */
      rc = CMD_CANNOT_WRITE;
    progress_end(&progress);
    if (rc == 0) {
      serve_report_ctx_t ctx = {cfg.sys.name, cfg.wl.model.name,          dep.pools, dep.npools,
                                &slo,         cfg.wl.serving.block_tokens};
      serve_summary_t sum;
      long instances = 0;
      for (int k = 0; k < dep.npools; k++)
        instances += dep.pools[k].plan->instances;
      double switch_W =
          (double)topo_switch_ports(&dep.topo) * cfg.sys.cluster.scale_out.switch_port_W;
      if (serve_summarise(&res, serve_total_npus(&cfg.wl.serving), instances, &slo, &cfg.sys.chip,
                          switch_W, &sum))
        rc = npu_err_set(err, "npusim serve: out of memory");
      else if ((rc = write_files(opts, &ctx, &res, err)) == 0)
        serve_report(out, opts->format, &ctx, &res, &sum);
      serve_sim_result_free(&res);
    }
  }
  deployment_free(&dep);
  serve_requests_free(&reqs);
  cli_free_configs(&cfg);
  return rc;
}

const cli_option_t cmd_serve_options[] = {
    CLI_GROUP(cli_options_system),
    CLI_GROUP(cli_options_workload),
    CLI_GROUP(cli_options_set),
    CLI_GROUP(cli_options_format),
    CLI_GROUP(cli_options_output),
    CLI_GROUP(cli_options_timeline),
    CLI_GROUP(cli_options_progress),
    CLI_STRING("slo", "ttft_ms=T,tpot_ms=P", slo,
               "goodput counts the requests within both (either may\n"
               "be left out)"),
    CLI_STRING("timeseries", "FILE", timeseries,
               "also write a CSV row per iteration: batch, tokens, KV\n"
               "blocks in use, queue (npusim-plot serve draws it)"),
    CLI_END};
