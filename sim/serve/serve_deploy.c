/* serve_deploy.c - a serving deployment placed and checked; see serve_deploy.h. */
#include "serve_deploy.h"

#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

int serve_deploy_check_config(const system_cfg_t *sys, const workload_cfg_t *wl,
                              const char *system_path, const char *workload_path, npu_err_t *err) {
  if (!wl->has_serving)
    return npu_err_set(err,
                       "%s: serving: expected a serving section (a training workload runs with "
                       "npusim train)",
                       workload_path);
  if (sys->cluster.node_types.n > 0) /* every instance is costed on one chip (serve_cost.c) */
    return npu_err_set(err,
                       "%s: cluster.node_types: expected \"\" with npusim serve (serving "
                       "costs every instance on the default chip), found servers %d-%d on "
                       "\"%.200s\"",
                       system_path, sys->cluster.node_types.v[0].first,
                       sys->cluster.node_types.v[0].last, sys->cluster.node_types.v[0].system);
  return 0;
}

void serve_deploy_free(serve_deployment_t *d) {
  for (int k = 0; k < d->npools; k++)
    serve_cost_free(d->pools[k].cost);
  op_cache_free(d->ops);
  if (d->has_topo)
    topo_free(&d->topo);
}

int serve_deploy(const system_cfg_t *sys, const workload_cfg_t *wl, const char *system_path,
                 const char *workload_path, serve_deployment_t *d, npu_err_t *err) {
  const serving_cfg_t *s = &wl->serving;
  memset(d, 0, sizeof *d);
  d->npools = serve_sim_pools(s, d->pools);
  long npus = serve_total_npus(s);
  npu_err_t why = {""};
  int rc = npus > 1000000 ? -1
                          : topo_build(&sys->node, &sys->cluster, sys->chip.dies_per_package,
                                       (int)npus, 0, &d->topo, &why);
  if (rc == TOPO_BAD_FAULT)
    return npu_err_set(err, "%s: %s", system_path, why.msg);
  if (rc)
    return npu_err_set(err, "%s: serving: expected a deployment that fits %s, found %ld NPUs (%s)",
                       workload_path, system_path, npus, npus > 1000000 ? "over a million" : why.msg);
  d->has_topo = true;
  for (int i = 0; i < sys->cluster.faults.n; i++) /* serve prices an iteration, not a clock */
    if (sys->cluster.faults.v[i].at_s > 0)
      return npu_err_set(err,
                         "%s: cluster.faults.links: expected faults from the start in npusim "
                         "serve (no @T), found %s:%g@%g",
                         system_path, sys->cluster.faults.v[i].link,
                         sys->cluster.faults.v[i].factor, sys->cluster.faults.v[i].at_s);
  if (!(d->ops = op_cache_new(&sys->chip)))
    return npu_err_set(err, "npusim serve: out of memory");
  for (int k = 0; k < d->npools; k++) {
    serve_sim_pool_t *p = &d->pools[k];
    p->cost = serve_cost_new(sys, wl, workload_path, serve_pool_paths[p->kind], p->plan, &d->topo,
                             p->first_rank, d->ops, err);
    if (!p->cost)
      return -1;
  }
  return 0;
}

int serve_deploy_check_fits(const char *workload_path, const serving_cfg_t *s,
                            const serve_deployment_t *d, const serve_requests_t *r,
                            npu_err_t *err) {
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
                       workload_path, prompt, s->max_batched_tokens);
  for (int k = 0; k < d->npools; k++) {
    const serve_memory_t *m = serve_cost_memory(d->pools[k].cost);
    long tokens = d->pools[k].kind == SERVE_POOL_PREFILL ? prompt : longest;
    /* a decode step writes up to k + 1 tokens (speculative decoding), and the
     * shared prefix's blocks are held beside (prefix caching) */
    if (d->pools[k].kind != SERVE_POOL_PREFILL)
      tokens += serve_spec_verify_tokens(s) - 1;
    tokens += serve_prefix_blocks(s) * s->block_tokens;
    long need = (tokens + s->block_tokens - 1) / s->block_tokens;
    if (need > m->kv_blocks)
      return npu_err_set(err,
                         "%s: %s: expected the KV cache of the longest request (%ld tokens, "
                         "%.3f GiB per NPU) to fit an attention group's KV capacity (%.3f GiB "
                         "per NPU), found %.3f GiB over",
                         workload_path, serve_pool_paths[d->pools[k].kind], tokens,
                         (double)need * s->block_tokens * m->kv_per_token / GIB,
                         (double)m->kv_blocks * s->block_tokens * m->kv_per_token / GIB,
                         (double)(need - m->kv_blocks) * s->block_tokens * m->kv_per_token / GIB);
  }
  return 0;
}
