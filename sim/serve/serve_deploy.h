/* serve_deploy.h - a serving deployment placed on a system and checked: the
 * workload's serving section becomes pools of instances on the system's NPUs
 * (prefill, or co-located, first; then decode), each pool with its cost model
 * (serve_cost.h), and the requests are checked to fit them.
 *
 * What serve refuses that other commands take is refused here too: a system
 * with node types (every instance is costed on the default chip) and link
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
  op_cache_t *ops; /* the op costs the pools share */
  topo_t topo;     /* the links of every instance */
  bool has_topo;
} serve_deployment_t;

/* The configs serve can run: a workload with a serving section, a system
 * without node types. Returns 0, or -1 with "PATH: KEY: expected ..." in err. */
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

void serve_deploy_free(serve_deployment_t *d);

#endif
