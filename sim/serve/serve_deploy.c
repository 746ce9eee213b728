/* serve_deploy.c - a serving deployment placed and checked; see serve_deploy.h. */
#include "serve_deploy.h"

#include <stdlib.h>
#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

/* The node_type key of each pool kind, for messages. */
static const char *const serve_node_type_paths[SERVE_POOL_DECODE + 1] = {
    "serving.node_type", "serving.prefill.node_type", "serving.decode.node_type"};

int serve_deploy_check_config(const system_cfg_t *sys, const workload_cfg_t *wl,
                              const char *system_path, const char *workload_path, npu_err_t *err) {
  if (!wl->has_serving)
    return npu_err_set(err,
                       "%s: serving: expected a serving section (a training workload runs with "
                       "npusim train)",
                       workload_path);
  serve_sim_pool_t pools[2];
  int n = serve_sim_pools(&wl->serving, pools);
  for (int k = 0; k < n && sys->cluster.node_types.n == 0; k++)
    if (pools[k].plan->node_type[0])
      return npu_err_set(err,
                         "%s: %s: expected \"\" on a system without cluster.node_types (%s: "
                         "every server carries \"%s\"), found \"%s\"",
                         workload_path, serve_node_type_paths[pools[k].kind], system_path,
                         sys->chip.name, pools[k].plan->node_type);
  return 0;
}

void serve_deploy_free(serve_deployment_t *d) {
  for (int k = 0; k < d->npools; k++) {
    serve_cost_free(d->pools[k].cost);
    if (d->pool_ops[k] != d->ops && (k == 0 || d->pool_ops[k] != d->pool_ops[0]))
      op_cache_free(d->pool_ops[k]);
    free(d->pool_sys[k]);
  }
  op_cache_free(d->ops);
  if (d->has_topo)
    topo_free(&d->topo);
}

/* ---- pools on node types (cluster.node_types) ---- */

/* The chip of server. */
static const chip_cfg_t *server_chip(const system_cfg_t *sys, int server) {
  return config_chip_at(sys, config_server_chip_index(sys, server));
}

/* Servers the search for a node type's ranks looks at: cluster.nodes, or
 * beyond the last range as many servers of the default chip as the
 * deployment could need. */
static int servers_bound(const system_cfg_t *sys, long npus) {
  if (sys->cluster.nodes > 0)
    return sys->cluster.nodes;
  int last = 0;
  for (int i = 0; i < sys->cluster.node_types.n; i++)
    last = sys->cluster.node_types.v[i].last > last ? sys->cluster.node_types.v[i].last : last;
  return last + 2 + (int)(npus / sys->node.npus);
}

/* "\"a\", \"b\"": the chips of the system's servers, each once. */
static void node_type_list(const system_cfg_t *sys, char *out, size_t len) {
  size_t used = 0;
  out[0] = 0;
  for (int k = 0; k <= sys->cluster.node_types.n; k++) {
    const char *name = config_chip_at(sys, k)->name;
    bool seen = false;
    for (int j = 0; j < k; j++)
      seen |= strcmp(config_chip_at(sys, j)->name, name) == 0;
    int n = seen ? 0 : snprintf(out + used, len - used, "%s\"%s\"", used ? ", " : "", name);
    used += n > 0 && (size_t)n < len - used ? (size_t)n : 0;
  }
}

/* Places pool k on the first consecutive ranks of servers carrying its node
 * type's chip (chip.name; "" the default chip's) that no earlier pool holds:
 * pools on one node type follow each other as they do without node types.
 * Copies the system with that chip as the default for the pool's cost model. */
static int place_pool(const system_cfg_t *sys, const char *system_path, const char *workload_path,
                      serve_deployment_t *d, int k, long npus, npu_err_t *err) {
  serve_sim_pool_t *p = &d->pools[k];
  const char *want = p->plan->node_type[0] ? p->plan->node_type : sys->chip.name;
  long n = serve_pool_npus(p->plan) * p->plan->instances, per = sys->node.npus;
  int bound = servers_bound(sys, npus);
  bool known = false;
  for (int j = 0; j <= sys->cluster.node_types.n; j++)
    known |= strcmp(config_chip_at(sys, j)->name, want) == 0;
  if (!known) {
    char list[1024];
    node_type_list(sys, list, sizeof list);
    return npu_err_set(err, "%s: %s: expected a chip of the servers of %s, one of %s, found \"%s\"",
                       workload_path, serve_node_type_paths[p->kind], system_path, list, want);
  }
  long used_from = k ? d->pools[0].first_rank : 0, used_to = k ? d->placed_end[0] : 0;
  /* the first run of n free consecutive ranks on the chip (best: the longest seen) */
  long first = -1, run = 0, best = 0;
  for (long r = 0; r < (long)bound * per && run < n; r++) {
    if (strcmp(server_chip(sys, (int)(r / per))->name, want) != 0 ||
        (r >= used_from && r < used_to)) {
      first = -1, run = 0;
      continue;
    }
    first = first < 0 ? r : first;
    best = ++run > best ? run : best;
  }
  if (run < n)
    return npu_err_set(err,
                       "%s: %s: expected its %ld NPUs (%d instances of %ld) on consecutive "
                       "servers of node type \"%s\" in %s, found at most %ld free there",
                       workload_path, serve_pool_paths[p->kind], n, p->plan->instances,
                       serve_pool_npus(p->plan), want, system_path, best);
  p->first_rank = (int)first;
  d->placed_end[k] = first + n;
  if (!(d->pool_sys[k] = malloc(sizeof *d->pool_sys[k])))
    return npu_err_set(err, "npusim serve: out of memory");
  *d->pool_sys[k] = *sys;
  d->pool_sys[k]->chip = *server_chip(sys, (int)(first / per));
  p->chip = d->pool_sys[k]->chip.name;
  return 0;
}

/* Each pool's system (its chip) and op costs: the system itself without node
 * types; with them, the pools placed on their chips' servers. Sets the ranks
 * the topology needs. */
static int place_pools(const system_cfg_t *sys, const char *system_path, const char *workload_path,
                       serve_deployment_t *d, long npus, long *ranks, npu_err_t *err) {
  *ranks = npus;
  if (sys->cluster.node_types.n == 0) {
    for (int k = 0; k < d->npools; k++)
      d->pool_ops[k] = d->ops;
    return 0;
  }
  *ranks = 0;
  for (int k = 0; k < d->npools; k++) {
    if (place_pool(sys, system_path, workload_path, d, k, npus, err))
      return -1;
    *ranks = d->placed_end[k] > *ranks ? d->placed_end[k] : *ranks;
    if (*ranks > sys->node.npus) /* whole servers up to the last one used */
      *ranks = (*ranks + sys->node.npus - 1) / sys->node.npus * sys->node.npus;
    bool same = k > 0 && strcmp(d->pools[k].chip, d->pools[0].chip) == 0;
    if (!(d->pool_ops[k] = same ? d->pool_ops[0] : op_cache_new(&d->pool_sys[k]->chip)))
      return npu_err_set(err, "npusim serve: out of memory");
  }
  return 0;
}

int serve_deploy(const system_cfg_t *sys, const workload_cfg_t *wl, const char *system_path,
                 const char *workload_path, serve_deployment_t *d, npu_err_t *err) {
  const serving_cfg_t *s = &wl->serving;
  memset(d, 0, sizeof *d);
  d->npools = serve_sim_pools(s, d->pools);
  long npus = serve_total_npus(s), ranks = npus;
  if (!(d->ops = op_cache_new(&sys->chip)))
    return npu_err_set(err, "npusim serve: out of memory");
  if (npus <= 1000000 && place_pools(sys, system_path, workload_path, d, npus, &ranks, err))
    return -1;
  npu_err_t why = {""};
  int rc = ranks > 1000000 ? -1
                           : topo_build(&sys->node, &sys->cluster, sys->chip.dies_per_package,
                                        (int)ranks, 0, &d->topo, &why);
  if (rc == TOPO_BAD_FAULT)
    return npu_err_set(err, "%s: %s", system_path, why.msg);
  if (rc)
    return npu_err_set(err, "%s: serving: expected a deployment that fits %s, found %ld NPUs (%s)",
                       workload_path, system_path, ranks,
                       ranks > 1000000 ? "over a million" : why.msg);
  d->has_topo = true;
  for (int i = 0; i < sys->cluster.faults.n; i++) /* serve prices an iteration, not a clock */
    if (sys->cluster.faults.v[i].at_s > 0)
      return npu_err_set(err,
                         "%s: cluster.faults.links: expected faults from the start in npusim "
                         "serve (no @T), found %s:%g@%g",
                         system_path, sys->cluster.faults.v[i].link,
                         sys->cluster.faults.v[i].factor, sys->cluster.faults.v[i].at_s);
  for (int k = 0; k < d->npools; k++) {
    serve_sim_pool_t *p = &d->pools[k];
    p->cost = serve_cost_new(d->pool_sys[k] ? d->pool_sys[k] : sys, wl, workload_path,
                             serve_pool_paths[p->kind], p->plan, &d->topo, p->first_rank,
                             d->pool_ops[k], err);
    if (!p->cost)
      return -1;
  }
  return 0;
}

long serve_deploy_switch_ports(const system_cfg_t *sys, const serve_deployment_t *d) {
  long ports = topo_switch_ports(&d->topo);
  if (!d->pool_sys[0] || ports == 0)
    return ports;
  long per = sys->node.npus, used = 0, last = -1; /* servers the pools hold, in rank order */
  for (int k = 0; k < d->npools; k++)
    for (long srv = d->pools[k].first_rank / per; srv <= (d->placed_end[k] - 1) / per; srv++)
      if (srv != last &&
          (k == 0 || srv < d->pools[0].first_rank / per || srv > (d->placed_end[0] - 1) / per))
        used++, last = srv;
  if (used < 2)
    return 0;
  return ports - (d->topo.nodes - used) * per * sys->cluster.scale_out.nics_per_npu;
}

const chip_cfg_t *serve_deploy_power_chip(const system_cfg_t *sys, const serve_deployment_t *d,
                                          chip_cfg_t *scratch) {
  if (!d->pool_sys[0])
    return &sys->chip;
  double W = 0, npus = 0;
  bool same = true;
  for (int k = 0; k < d->npools; k++) {
    double n = (double)serve_pool_npus(d->pools[k].plan) * d->pools[k].plan->instances;
    W += d->pool_sys[k]->chip.power.idle_W * n;
    npus += n;
    same &= d->pool_sys[k]->chip.power.idle_W == d->pool_sys[0]->chip.power.idle_W;
  }
  if (same) /* the chip's own figure: mixed pools of one idle power add no rounding */
    return &d->pool_sys[0]->chip;
  *scratch = d->pool_sys[0]->chip;
  scratch->power.idle_W = W / npus;
  return scratch;
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
