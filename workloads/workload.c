/* workload.c - names and derived quantities of a training job; see workload.h. */
#include "workload.h"

#include <stdlib.h>
#include <math.h>
#include <string.h>

const char *const workload_activation_names[ACTIVATION_COUNT] = {"gelu", "swiglu", "geglu"};
const char *const workload_norm_names[NORM_COUNT] = {"layernorm", "rmsnorm"};
const char *const workload_pp_schedule_names[PP_SCHEDULE_COUNT] = {"1f1b", "dualpipev"};
const char *const workload_cp_algo_names[CP_ALGO_COUNT] = {"ring", "ulysses", "allgather",
                                                           "hybrid"};
const char *const workload_position_names[POSITION_COUNT] = {"rope", "learned"};
const char *const workload_recompute_names[RECOMPUTE_COUNT] = {"none", "selective", "full"};
const char *const workload_precision_names[PRECISION_COUNT] = {"bf16", "fp16", "fp8"};
const char *const workload_optimizer_names[OPTIMIZER_COUNT] = {"adam"};
const char *const workload_kernels_names[KERNELS_COUNT] = {"fused", "unfused"};
const char *const workload_par_dim_names[PAR_DIM_COUNT] = {"tp", "cp", "dp", "pp"};
const char *const serve_preempt_names[SERVE_PREEMPT_COUNT] = {"recompute", "swap"};
const char *const serve_dtype_names[SERVE_DTYPE_COUNT] = {"bf16", "fp16", "fp8", "int8"};
const char *const serve_len_dist_names[SERVE_LEN_COUNT] = {"fixed", "uniform", "lognormal"};
const char *const serve_dispatch_names[SERVE_DISPATCH_COUNT] = {"direct", "server_dedup"};
const char *const serve_allreduce_names[SERVE_AR_COUNT] = {"collective", "engine"};

const char *const serve_spec_names[SERVE_SPEC_COUNT] = {"mtp", "draft"};

int serve_spec_verify_tokens(const serving_cfg_t *s) {
  return s->spec.on ? s->spec.draft_tokens + 1 : 1;
}

long serve_prefix_blocks(const serving_cfg_t *s) {
  if (!s->prefix.on || s->prefix.hit_rate <= 0)
    return 0;
  return s->prefix.shared_prefix_tokens / s->block_tokens;
}

double serve_spec_tokens_per_step(const serving_cfg_t *s) {
  if (!s->spec.on)
    return 1;
  double a = s->spec.acceptance_rate;
  int k = s->spec.draft_tokens;
  if (a >= 1)
    return k + 1;
  return (1 - pow(a, k + 1)) / (1 - a);
}

int serve_dtype_bytes(serve_dtype_t d) { return d == SERVE_DTYPE_FP8 || d == SERVE_DTYPE_INT8 ? 1 : 2; }

long serve_pool_npus(const serve_pool_t *p) { return (long)p->tp * p->pp * p->dp; }

long serve_total_npus(const serving_cfg_t *s) {
  if (!s->disaggregated)
    return serve_pool_npus(&s->colocated) * s->colocated.instances;
  return serve_pool_npus(&s->prefill) * s->prefill.instances +
         serve_pool_npus(&s->decode) * s->decode.instances;
}

long workload_world_size(const workload_cfg_t *w) {
  const parallel_cfg_t *p = &w->parallel;
  return (long)p->dp * p->tp * p->pp * p->cp;
}

long workload_grad_accum_steps(const workload_cfg_t *w) {
  long per_step = (long)w->training.micro_batch * w->parallel.dp;
  return per_step > 0 ? w->training.global_batch / per_step : 0;
}

/* Whether parallel.stage_layers lists every virtual stage. */
static bool per_virtual_stage(const parallel_cfg_t *p) {
  return p->vpp > 1 && p->stage_count == p->pp * p->vpp;
}

int workload_stage_layers(const workload_cfg_t *w, int stage) {
  const parallel_cfg_t *p = &w->parallel;
  int first = p->first_stage_layers, last = p->last_stage_layers;
  if (per_virtual_stage(p)) {
    int sum = 0;
    for (int c = 0; c < p->vpp; c++)
      sum += p->stage_layers[workload_virtual_stage(p, stage, c)];
    return sum;
  }
  if (p->stage_count > 0)
    return p->stage_layers[stage];
  if (p->pp == 1)
    return w->model.layers;
  if (stage == 0 && first > 0)
    return first;
  if (stage == p->pp - 1 && last > 0)
    return last;
  int middle = p->pp - (first > 0) - (last > 0);
  return middle > 0 ? (w->model.layers - first - last) / middle : 0;
}

double workload_grad_bytes(const workload_cfg_t *w) {
  return w->training.grad_reduce_in_fp32 ? 4.0 : 2.0;
}

int workload_parse_order(const char *text, par_dim_t order[PAR_DIM_COUNT]) {
  bool seen[PAR_DIM_COUNT] = {false};
  const char *p = text;
  for (int slot = 0; slot < PAR_DIM_COUNT; slot++) {
    int found = -1;
    for (int d = 0; d < PAR_DIM_COUNT; d++) {
      size_t n = strlen(workload_par_dim_names[d]);
      if (strncmp(p, workload_par_dim_names[d], n) == 0) {
        found = d;
        p += n;
        break;
      }
    }
    if (found < 0 || seen[found])
      return -1;
    seen[found] = true;
    order[slot] = (par_dim_t)found;
    if (slot + 1 < PAR_DIM_COUNT && *p++ != '-')
      return -1;
  }
  return *p == '\0' ? 0 : -1;
}

int workload_cp_ulysses(const parallel_cfg_t *p) {
  return p->cp_algo == CP_ULYSSES ? p->cp : p->cp_algo == CP_HYBRID ? p->cp_ulysses : 1;
}

int workload_virtual_stage(const parallel_cfg_t *p, int stage, int chunk) {
  if (p->pp_schedule == PP_SCHEDULE_DUALPIPEV)
    return chunk == 0 ? stage : 2 * p->pp - 1 - stage;
  return chunk * p->pp + stage;
}

int workload_head_stage(const parallel_cfg_t *p) {
  return p->pp_schedule == PP_SCHEDULE_DUALPIPEV ? 0 : p->pp - 1;
}

int workload_chunk_layers(const workload_cfg_t *w, int stage, int chunk, int *first) {
  const parallel_cfg_t *p = &w->parallel;
  int v = workload_virtual_stage(p, stage, chunk);
  *first = 0;
  if (per_virtual_stage(p)) {
    for (int u = 0; u < v; u++)
      *first += p->stage_layers[u];
    return p->stage_layers[v];
  }
  int per = workload_stage_layers(w, stage) / p->vpp;
  if (p->vpp > 1) { /* an even split: every virtual stage holds per layers */
    *first = v * per;
    return per;
  }
  for (int s = 0; s < stage; s++)
    *first += workload_stage_layers(w, s);
  return per;
}
