/* serve_deploy.h - a serving deployment placed on a system and checked: the
 * workload's serving section becomes pools of instances on the system's NPUs
 * (prefill, or co-located, first; then decode), each pool with its cost model
 * (serve_cost.h), and the requests are checked to fit them.
 *
 * On a system with cluster.node_types each pool runs on the servers of the
 * chip its node_type names (chip.name; "" the default chip): on the first
 * consecutive free ranks of that chip's servers, its cost model on that chip
 * (compute, HBM and so KV blocks, power), the KV caches between pools over
 * the cluster's links between those ranks. Without node types the pools lie on
 * consecutive ranks from 0, on the one chip.
 *
 * What serve refuses that other commands take is refused here too: link
 * faults that start later (serve prices an iteration, not a clock). Messages
 * name the system and workload by the paths given. */
#ifndef NPUSIM_SERVE_DEPLOY_H
#define NPUSIM_SERVE_DEPLOY_H

#include <stdbool.h>

#include "serve_sim.h"
#include "system.h"
#include "workload.h"
#include "npu_err.h"

typedef struct {
  serve_sim_pool_t pools[2]; /* with their cost models */
  int npools;
  op_cache_t *ops; /* the op costs of the default chip */
  /* with node types: each pool's system (its chip as the default), its op
   * costs (pools on one chip share them) and the rank after its last */
  system_cfg_t *pool_sys[2];
  op_cache_t *pool_ops[2];
  long placed_end[2];
  topo_t topo;     /* the links of every instance */
  bool has_topo;
} serve_deployment_t;

/* The configs serve can run: a workload with a serving section, whose pools
 * name node types only on a system that has them. Returns 0, or -1 with
 * "PATH: KEY: expected ..." in err. */
int serve_deploy_check_config(const system_cfg_t *sys, const workload_cfg_t *wl,
                              const char *system_path, const char *workload_path, npu_err_t *err);

/* Places the pools on the system and builds their cost models. Returns 0, or
 * -1 with the reason in err; free d with serve_deploy_free either way. */
int serve_deploy(const system_cfg_t *sys, const workload_cfg_t *wl, const char *system_path,
                 const char *workload_path, serve_deployment_t *d, npu_err_t *err);

/* The longest request must fit one attention group's KV cache, and without
 * chunked prefill its prompt must fit one iteration. Returns 0, or -1 with
 * the reason in err. */
int serve_deploy_check_fits(const char *workload_path, const serving_cfg_t *s,
                            const serve_deployment_t *d, const serve_requests_t *r, npu_err_t *err);

/* Scale-out switch ports the deployment holds (topo_switch_ports): with node
 * types only the NICs of the servers the pools use, not of those between. */
long serve_deploy_switch_ports(const system_cfg_t *sys, const serve_deployment_t *d);

/* The chip whose power model the run's idle energy takes: the pools' one
 * chip, or with node types of different idle power, a copy (in scratch) of
 * the first pool's chip whose idle_W is the mean over the deployment's NPUs. */
const chip_cfg_t *serve_deploy_power_chip(const system_cfg_t *sys, const serve_deployment_t *d,
                                          chip_cfg_t *scratch);

void serve_deploy_free(serve_deployment_t *d);

#endif
