/* config_rules.c - values that are each in range but contradict each other:
 * a full mesh whose link count does not match its peers, TP that does not
 * divide the heads, a job larger than the cluster.
 *
 * Each rule names the key the user should change and the keys it was checked
 * against, in the usual one-line form "FILE: path: expected ..., found ...". */
#include <stdarg.h>
#include <stdio.h>

#include "config_doc.h"

/* Formats "FILE: path: expected <fmt...>" where fmt supplies the expected and
 * found clauses. FILE is the file that set path (or the top file). */
static int fail(const config_doc_t *doc, const char *path, npu_err_t *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(const config_doc_t *doc, const char *path, npu_err_t *err, const char *fmt, ...) {
  char what[NPU_ERR_MAX / 2];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return npu_err_set(err, "%s: %s: expected %s", cfg_doc_blame(doc, path), path, what);
}

/* ---- system ---- */

static int check_links(const config_doc_t *doc, const node_cfg_t *node, npu_err_t *err) {
  const scale_up_cfg_t *up = &node->scale_up;
  int peers = 0;
  const char *kind = topology_scale_up_names[up->kind];
  switch (up->kind) {
  case SCALE_UP_FULL_MESH:
    peers = node->npus - 1;
    break;
  case SCALE_UP_TWO_GROUP_MESH:
    if (node->npus % 2)
      return fail(doc, "node.npus", err, "an even number for a two_group_mesh, found %d",
                  node->npus);
    peers = node->npus / 2 - 1;
    break;
  case SCALE_UP_RING:
    if (node->npus > 2 && up->links_per_npu % 2)
      return fail(doc, "node.scale_up.links_per_npu", err,
                  "an even number for a ring (links to both neighbours), found %d",
                  up->links_per_npu);
    break;
  default:
    break;
  }
  if (peers > 0 && up->links_per_npu % peers)
    return fail(doc, "node.scale_up.links_per_npu", err,
                "a multiple of the %d peers each NPU has in a %s of %d NPUs, found %d", peers,
                kind, node->npus, up->links_per_npu);
  if (up->in_switch_reduction && up->kind != SCALE_UP_SWITCH)
    return fail(doc, "node.scale_up.in_switch_reduction", err,
                "false for a %s (only a switch can reduce in the network), found true", kind);
  return 0;
}

static int check_dies(const config_doc_t *doc, const system_cfg_t *s, npu_err_t *err) {
  int dies = s->chip.dies_per_package;
  if (dies > 1 && !s->node.has_die_link)
    return fail(doc, "node.die_link", err,
                "a section (chip.dies_per_package = %d needs a die-to-die link), found none",
                dies);
  if (s->node.npus % dies)
    return fail(doc, "node.npus", err,
                "a multiple of chip.dies_per_package = %d (whole packages), found %d", dies,
                s->node.npus);
  return 0;
}

/* One fractal of each operand must fit the buffer that holds it. */
static int check_fractal_fits(const config_doc_t *doc, const chip_cube_cfg_t *cube,
                              npu_err_t *err) {
  const int *mkn = cube->fractal_mkn;
  const struct {
    const char *buffer;
    uint64_t have, need;
    int rows, cols, elem_bytes;
  } ops[] = {
      {"chip.cube.l0a_KiB", cube->l0a_bytes, (uint64_t)mkn[0] * mkn[1] * 2, mkn[0], mkn[1], 2},
      {"chip.cube.l0b_KiB", cube->l0b_bytes, (uint64_t)mkn[1] * mkn[2] * 2, mkn[1], mkn[2], 2},
      {"chip.cube.l0c_KiB", cube->l0c_bytes, (uint64_t)mkn[0] * mkn[2] * 4, mkn[0], mkn[2], 4},
  };
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (ops[i].need > ops[i].have)
      return fail(doc, "chip.cube.fractal_mkn", err,
                  "a fractal that fits %s = %llu B, found a %dx%d tile of %d-byte elements "
                  "(%llu B)", ops[i].buffer, (unsigned long long)ops[i].have, ops[i].rows,
                  ops[i].cols, ops[i].elem_bytes, (unsigned long long)ops[i].need);
  return 0;
}

static int check_fabric(const config_doc_t *doc, const system_cfg_t *s, npu_err_t *err) {
  const scale_out_cfg_t *out = &s->cluster.scale_out;
  if (out->kind == SCALE_OUT_SPINE_LEAF && out->npus_per_leaf % s->node.npus)
    return fail(doc, "cluster.scale_out.npus_per_leaf", err,
                "a multiple of node.npus = %d (whole servers under a leaf), found %d",
                s->node.npus, out->npus_per_leaf);
  int pod_unit = out->kind == SCALE_OUT_RAIL_OPTIMIZED ? out->npus_per_leaf * s->node.npus
                                                      : out->npus_per_leaf;
  if (out->npus_per_pod % pod_unit)
    return fail(doc, "cluster.scale_out.npus_per_pod", err,
                "a multiple of %d (whole %s in a pod), found %d", pod_unit,
                out->kind == SCALE_OUT_RAIL_OPTIMIZED ? "rail groups of leaves" : "leaves",
                out->npus_per_pod);
  if (!out->npus_per_pod && (out->pod_oversubscription > 1 || out->cores > 1)) {
    bool cores = out->cores > 1;
    return fail(doc, cores ? "cluster.scale_out.cores" : "cluster.scale_out.pod_oversubscription",
                err, "1 without pods (cluster.scale_out.npus_per_pod 0: no core tier), found %g",
                cores ? (double)out->cores : out->pod_oversubscription);
  }
  if (out->nics_per_npu % out->planes)
    return fail(doc, "cluster.scale_out.planes", err,
                "a divisor of cluster.scale_out.nics_per_npu = %d (each plane takes as many "
                "NIC ports of every NPU), found %d", out->nics_per_npu, out->planes);
  if (s->cluster.has_supernode && s->cluster.supernode.npus % s->node.npus)
    return fail(doc, "cluster.supernode.npus", err,
                "a multiple of node.npus = %d (whole servers in a supernode), found %d",
                s->node.npus, s->cluster.supernode.npus);
  return 0;
}

/* Forced algorithms must fit the level and the scale-up they are forced on (the
 * capability table's rule, coll_cfg.c). */
static int check_algorithms(const config_doc_t *doc, const system_cfg_t *s, npu_err_t *err) {
  static const char *const paths[COLL_LEVELS] = {"collectives.level0_algorithm",
                                                 "collectives.level1_algorithm",
                                                 "collectives.level2_algorithm"};
  const scale_up_cfg_t *up = &s->node.scale_up;
  char why[NPU_ERR_MAX / 2];
  for (int level = 0; level < COLL_LEVELS; level++)
    if (coll_algo_check_forced(s->coll.algo[level], level, up->kind, up->in_switch_reduction, why,
                               sizeof why))
      return fail(doc, paths[level], err, "%s", why);
  return 0;
}

/* A board's power limit above what the die draws with no op's units busy
 * (idle, and active whenever an op runs): a lower limit leaves no clock to
 * throttle to, and every op would pass it. */
static int check_power(const config_doc_t *doc, const chip_power_cfg_t *p, npu_err_t *err) {
  if (p->max_W > 0 && p->max_W <= p->idle_W + p->active_W)
    return fail(doc, "chip.power.max_W", err,
                "0 or more than chip.power.idle_W + active_W = %g W (the least a running die "
                "draws), found %g",
                p->idle_W + p->active_W, p->max_W);
  return 0;
}

static int check_system(const config_doc_t *doc, const system_cfg_t *s, npu_err_t *err) {
  if (check_dies(doc, s, err) || check_links(doc, &s->node, err) ||
      check_fractal_fits(doc, &s->chip.cube, err) || check_fabric(doc, s, err) ||
      check_algorithms(doc, s, err) || check_power(doc, &s->chip.power, err))
    return -1;
  return 0;
}

/* ---- workload ---- */

static int check_model(const config_doc_t *doc, const model_cfg_t *m, npu_err_t *err) {
  if (m->head_dim == 0 && m->hidden % m->heads)
    return fail(doc, "model.hidden", err, "a multiple of model.heads = %d, found %d", m->heads,
                m->hidden);
  if (m->head_dim > 0 && m->has_mla)
    return fail(doc, "model.head_dim", err,
                "0 with model.mla (its head widths are model.mla's qk_nope_head_dim, "
                "qk_rope_head_dim and v_head_dim), found %d",
                m->head_dim);
  if (m->heads % m->kv_heads)
    return fail(doc, "model.kv_heads", err, "a divisor of model.heads = %d, found %d", m->heads,
                m->kv_heads);
  if (m->has_moe && (m->moe.groups ? m->moe.experts % m->moe.groups : m->moe.top_groups))
    return fail(doc, "model.moe.groups", err, "a divisor of model.moe.experts = %d (with "
                "top_groups, groups > 0), found %d", m->moe.experts, m->moe.groups);
  if (m->has_moe && (m->moe.top_groups > m->moe.groups || (m->moe.groups && !m->moe.top_groups)))
    return fail(doc, "model.moe.top_groups", err, "1 to model.moe.groups = %d, found %d",
                m->moe.groups, m->moe.top_groups);
  if (m->has_moe && m->moe.top_k > m->moe.experts)
    return fail(doc, "model.moe.top_k", err, "at most model.moe.experts = %d, found %d",
                m->moe.experts, m->moe.top_k);
  if (m->has_moe && m->moe.zero_experts && m->moe.groups)
    return fail(doc, "model.moe.zero_experts", err, "0 with model.moe.groups (group-limited "
                "routing over zero-computation experts is not modelled), found %d",
                m->moe.zero_experts);
  if (m->full_attention_every && !m->sliding_window_tokens)
    return fail(doc, "model.full_attention_every", err,
                "0 without model.sliding_window_tokens (no layer has a window), found %d",
                m->full_attention_every);
  return 0;
}

/* A list of layers per stage: one entry per stage (per virtual stage with
 * interleaving, chunk-major: Megatron-Core's pipeline layouts), all the
 * model's layers, no other way of setting them beside it. */
static int check_stage_list(const config_doc_t *doc, const workload_cfg_t *w, npu_err_t *err) {
  const parallel_cfg_t *p = &w->parallel;
  const char *key = "parallel.stage_layers";
  if (p->first_stage_layers > 0 || p->last_stage_layers > 0)
    return fail(doc, key, err,
                "it alone (not beside parallel.first_stage_layers or last_stage_layers), found "
                "first %d, last %d as well",
                p->first_stage_layers, p->last_stage_layers);
  if (p->stage_count != p->pp * p->vpp)
    return fail(doc, key, err,
                "one entry per pipeline stage and virtual stage (pp x vpp = %d, chunk-major), "
                "found %d",
                p->pp * p->vpp, p->stage_count);
  long sum = 0;
  for (int s = 0; s < p->stage_count; s++)
    sum += p->stage_layers[s];
  if (sum != w->model.layers)
    return fail(doc, key, err, "entries that sum to model.layers = %d, found %ld", w->model.layers,
                sum);
  for (int s = 0; s < p->pp; s++)
    if (workload_stage_layers(w, s) == 0)
      return fail(doc, key, err, "at least one layer on every pipeline stage, found none on "
                  "stage %d", s);
  return 0;
}

/* Every pipeline stage holds a whole number of layers per virtual stage. */
static int check_stage_layers(const config_doc_t *doc, const workload_cfg_t *w, npu_err_t *err) {
  const model_cfg_t *m = &w->model;
  const parallel_cfg_t *p = &w->parallel;
  int first = p->first_stage_layers, last = p->last_stage_layers;
  if (p->stage_count > 0)
    return check_stage_list(doc, w, err);
  if (first == 0 && last == 0) {
    if (m->layers % (p->pp * p->vpp))
      return fail(doc, p->vpp > 1 ? "parallel.vpp" : "parallel.pp", err,
                  "pp x vpp to divide model.layers = %d, found pp = %d, vpp = %d", m->layers,
                  p->pp, p->vpp);
    return 0;
  }
  const char *key = first > 0 ? "parallel.first_stage_layers" : "parallel.last_stage_layers";
  if (p->pp == 1)
    return fail(doc, key, err, "0 when parallel.pp = 1, found %d", first > 0 ? first : last);
  int middle = p->pp - (first > 0) - (last > 0), rest = m->layers - first - last;
  if (rest < 0 || (middle == 0 && rest != 0) || (middle > 0 && (rest == 0 || rest % middle)))
    return fail(doc, key, err,
                "first and last stage layers that leave model.layers = %d shared evenly by the "
                "%d other stages (at least one each), found first %d, last %d", m->layers,
                middle, first, last);
  for (int s = 0; s < p->pp; s++)
    if (workload_stage_layers(w, s) % p->vpp)
      return fail(doc, key, err,
                  "every stage's layers a multiple of parallel.vpp = %d, found stage %d with %d",
                  p->vpp, s, workload_stage_layers(w, s));
  return 0;
}

/* DualPipeV's V: two chunks on each of at least two stages, placed by the
 * schedule (per-stage counts would name one chunk's end of the V). */
static int check_dualpipev(const config_doc_t *doc, const parallel_cfg_t *p, npu_err_t *err) {
  if (p->pp_schedule != PP_SCHEDULE_DUALPIPEV)
    return 0;
  if (p->pp < 2)
    return fail(doc, "parallel.pp", err, "at least 2 with pp_schedule dualpipev, found %d", p->pp);
  if (p->vpp != 2)
    return fail(doc, "parallel.vpp", err,
                "2 with pp_schedule dualpipev (its V holds two model chunks per stage), found %d",
                p->vpp);
  if (p->first_stage_layers > 0 || p->last_stage_layers > 0)
    return fail(doc, p->first_stage_layers > 0 ? "parallel.first_stage_layers"
                                               : "parallel.last_stage_layers",
                err, "0 with pp_schedule dualpipev (stage 0 holds both ends of its V; "
                "parallel.stage_layers lists each virtual stage), found %d",
                p->first_stage_layers > 0 ? p->first_stage_layers : p->last_stage_layers);
  return 0;
}

static int check_parallel(const config_doc_t *doc, const workload_cfg_t *w, npu_err_t *err) {
  const model_cfg_t *m = &w->model;
  const parallel_cfg_t *p = &w->parallel;
  if (m->heads % p->tp || m->kv_heads % p->tp)
    return fail(doc, "parallel.tp", err,
                "a divisor of model.heads = %d and model.kv_heads = %d, found %d", m->heads,
                m->kv_heads, p->tp);
  if (p->sequence_parallel && p->tp == 1)
    return fail(doc, "parallel.sequence_parallel", err,
                "false when parallel.tp = 1 (nothing to split the sequence over), found true");
  if (p->vpp > 1 && p->pp == 1)
    return fail(doc, "parallel.vpp", err, "1 when parallel.pp = 1, found %d", p->vpp);
  if (check_dualpipev(doc, p, err))
    return -1;
  if (check_stage_layers(doc, w, err))
    return -1;
  if (p->cp > 1 && m->seq_len % (2 * p->cp))
    return fail(doc, "parallel.cp", err,
                "2 x cp to divide model.seq_len = %d (load-balanced ring attention), found "
                "cp = %d", m->seq_len, p->cp);
  if (p->cp_algo == CP_HYBRID &&
      (p->cp_ulysses < 2 || p->cp_ulysses >= p->cp || p->cp % p->cp_ulysses))
    return fail(doc, "parallel.cp_ulysses", err,
                "a divisor of parallel.cp = %d between 2 and cp / 2 with cp_algo hybrid, found %d",
                p->cp, p->cp_ulysses);
  if (p->cp_algo != CP_HYBRID && p->cp_ulysses)
    return fail(doc, "parallel.cp_ulysses", err, "0 unless parallel.cp_algo is hybrid, found %d",
                p->cp_ulysses);
  int u = workload_cp_ulysses(p), kv = (m->has_mla ? m->heads : m->kv_heads) / p->tp;
  if ((m->heads / p->tp) % u || (kv % u && u % kv))
    return fail(doc, "parallel.cp_algo", err,
                "heads per TP rank (%d) divisible by the Ulysses degree %d and key/value heads "
                "per TP rank (%d) a multiple or a divisor of it (then repeated up to it), found %s",
                m->heads / p->tp, u, kv, workload_cp_algo_names[p->cp_algo]);
  if (p->cp > 1 && m->sliding_window_tokens && p->cp_algo != CP_ULYSSES)
    return fail(doc, "parallel.cp_algo", err,
                "ulysses with model.sliding_window_tokens and cp > 1 (a ring or gathered "
                "key/value blocks under a sliding window are not modelled), found %s",
                workload_cp_algo_names[p->cp_algo]);
  if (p->cp > 1 && !w->training.flash_attention)
    return fail(doc, "training.flash_attention", err,
                "true when parallel.cp > 1 (ring attention is a fused kernel), found false");
  if (p->zero_shard_size > 0 && (p->zero == 0 || (p->dp * p->cp) % p->zero_shard_size))
    return fail(doc, "parallel.zero_shard_size", err,
                "0, or with parallel.zero >= 1 a divisor of dp x cp = %d, found %d (zero %d)",
                p->dp * p->cp, p->zero_shard_size, p->zero);
  if (w->training.overlap_param_gather && p->zero != 1 && p->zero != 2)
    return fail(doc, "training.overlap_param_gather", err,
                "false unless parallel.zero is 1 or 2 (a gather after the optimizer to "
                "overlap), found true with zero %d", p->zero);
  const moe_routing_t *route = &w->training.moe_route;
  if (route->kind != MOE_ROUTE_UNIFORM && !m->has_moe)
    return fail(doc, "training.moe.routing", err, "uniform for a dense model (no experts), found %s",
                moe_routing_names[route->kind]);
  if (route->kind == MOE_ROUTE_MEASURED && route->load.n != m->moe.experts)
    return fail(doc, "training.moe.expert_load", err,
                "a load for each of the %d routed experts (model.moe.experts) with "
                "training.moe.routing measured, found %d",
                m->moe.experts, route->load.n);
  if (w->training.overlap_moe_a2a && !m->has_moe)
    return fail(doc, "training.overlap_moe_a2a", err,
                "false for a dense model (no all-to-all to overlap), found true");
  if (w->training.overlap_moe_a2a && p->pp > 1 && p->vpp == 1)
    return fail(doc, "training.overlap_moe_a2a", err,
                "parallel.vpp > 1 with pp = %d (merged passes of one model chunk would wait for "
                "the next stage's gradient of the same step, halving the pipeline's rate; "
                "Megatron-Core's merged 1F1B runs on the interleaved schedule), found vpp 1",
                p->pp);
  if (p->ep > 1 && !m->has_moe)
    return fail(doc, "parallel.ep", err, "1 for a dense model (no model.moe), found %d", p->ep);
  if (m->has_moe && m->moe.experts % p->ep)
    return fail(doc, "parallel.ep", err, "a divisor of model.moe.experts = %d, found %d",
                m->moe.experts, p->ep);
  if (p->etp == p->tp && (p->dp * p->cp) % p->ep)
    return fail(doc, "parallel.ep", err, "a divisor of dp x cp = %d (EP is carved out of "
                "them; parallel.etp other than tp folds it over tp x cp x dp), found %d",
                p->dp * p->cp, p->ep);
  if (p->etp != p->tp && (p->tp * p->cp * p->dp) % (p->ep * p->etp))
    return fail(doc, p->etp > 1 ? "parallel.etp" : "parallel.ep", err,
                "ep x etp (%d x %d) dividing tp x cp x dp = %d (the "
                "expert grid ETP x EP x EDP folded over them), found %d", p->ep, p->etp,
                p->tp * p->cp * p->dp, p->ep * p->etp);
  if (p->etp != p->tp && m->has_moe && m->moe.expert_ffn_hidden % p->etp)
    return fail(doc, "parallel.etp", err, "a divisor of model.moe.expert_ffn_hidden = %d (each "
                "expert's width is split over it), found %d", m->moe.expert_ffn_hidden, p->etp);
  if (p->etp != p->tp && p->tp > 1 && !p->sequence_parallel)
    return fail(doc, "parallel.sequence_parallel", err,
                "true with parallel.etp other than tp = %d (each rank routes its own sequence "
                "shard; Megatron requires it with MoE and TP), found false", p->tp);
  return 0;
}

static int check_batch(const config_doc_t *doc, const workload_cfg_t *w, npu_err_t *err) {
  long per_step = (long)w->training.micro_batch * w->parallel.dp;
  if (w->training.global_batch % per_step)
    return fail(doc, "training.global_batch", err,
                "a multiple of micro_batch x dp = %ld, found %d", per_step,
                w->training.global_batch);
  return 0;
}

/* One serving pool's split against the model. */
static int check_pool(const config_doc_t *doc, const char *path, const model_cfg_t *m,
                      const serve_pool_t *p, npu_err_t *err) {
  char key[64];
  snprintf(key, sizeof key, "%s.tp", path);
  if (m->heads % p->tp)
    return fail(doc, key, err, "a divisor of model.heads = %d, found %d", m->heads, p->tp);
  snprintf(key, sizeof key, "%s.pp", path);
  if (p->pp > m->layers)
    return fail(doc, key, err, "at most model.layers = %d, found %d", m->layers, p->pp);
  snprintf(key, sizeof key, "%s.ep", path);
  if (p->ep > 1 && !m->has_moe)
    return fail(doc, key, err, "1 for a dense model (no model.moe), found %d", p->ep);
  if ((p->tp * p->dp) % p->ep)
    return fail(doc, key, err, "a divisor of tp x dp = %d (the experts of a stage spread over "
                "its ranks), found %d", p->tp * p->dp, p->ep);
  return 0;
}

static int check_lengths(const config_doc_t *doc, const char *path, const serve_len_cfg_t *l,
                         npu_err_t *err) {
  char key[64];
  snprintf(key, sizeof key, "%s.max", path);
  if (l->max < l->mean || l->min > l->mean)
    return fail(doc, key, err, "min <= mean <= max, found min %d, mean %d, max %d", l->min,
                l->mean, l->max);
  return 0;
}

static int check_serving(const config_doc_t *doc, const workload_cfg_t *w, npu_err_t *err) {
  const serving_cfg_t *s = &w->serving;
  if (w->model.has_moe && (w->model.moe.zero_experts || w->model.moe.shortcut))
    return fail(doc, w->model.moe.shortcut ? "model.moe.shortcut" : "model.moe.zero_experts", err,
                "%s in a serving workload (LongCat-Flash's layers are modelled in training "
                "only), found %s", w->model.moe.shortcut ? "false" : "0",
                w->model.moe.shortcut ? "true" : "a count");
  if (s->has_prefill != s->disaggregated)
    return fail(doc, s->has_prefill ? "serving.decode" : "serving.prefill", err,
                "both serving.prefill and serving.decode (disaggregated) or neither, found only "
                "%s", s->has_prefill ? "prefill" : "decode");
  if (s->disaggregated ? check_pool(doc, "serving.prefill", &w->model, &s->prefill, err) ||
                             check_pool(doc, "serving.decode", &w->model, &s->decode, err)
                       : check_pool(doc, "serving.parallel", &w->model, &s->colocated, err))
    return -1;
  if (check_lengths(doc, "serving.requests.prompt", &s->prompt, err) ||
      check_lengths(doc, "serving.requests.output", &s->output, err))
    return -1;
  if (s->max_batched_tokens < s->max_num_seqs && !s->chunked_prefill)
    return fail(doc, "serving.scheduler.max_batched_tokens", err,
                "at least max_num_seqs = %d (a decode iteration's tokens), found %d",
                s->max_num_seqs, s->max_batched_tokens);
  return 0;
}

static int check_workload(const config_doc_t *doc, const workload_cfg_t *w, npu_err_t *err) {
  if (!w->has_training && !w->has_serving)
    return fail(doc, "training", err, "a training or a serving section, found neither");
  if (check_model(doc, &w->model, err))
    return -1;
  if (w->has_training && (check_parallel(doc, w, err) || check_batch(doc, w, err)))
    return -1;
  if (w->has_serving && check_serving(doc, w, err))
    return -1;
  return 0;
}

int cfg_rules_check(const config_doc_t *doc, const void *cfg, npu_err_t *err) {
  return doc->kind == CONFIG_SYSTEM ? check_system(doc, cfg, err) : check_workload(doc, cfg, err);
}

/* ---- system and workload together ---- */

static const chip_dtype_t precision_dtype[PRECISION_COUNT] = {CHIP_DTYPE_BF16, CHIP_DTYPE_FP16,
                                                              CHIP_DTYPE_FP8};

/* The training precision on every chip the job's servers carry: its ranks
 * fill servers 0, 1, ... in order (train places rank r on server r /
 * node.npus), so with node types only those servers' chips are checked - a
 * default chip that no server of the job carries need not compute it. The
 * message names the file of the chip that lacks it and, with node types, the
 * job's first rank on that chip. */
static int check_precision(const config_doc_t *sys_doc, const system_cfg_t *sys,
                           const config_doc_t *wl_doc, const workload_cfg_t *wl, long world,
                           npu_err_t *err) {
  chip_dtype_t dt = precision_dtype[wl->training.precision];
  const char *dtype = chip_dtype_name(dt),
             *found = workload_precision_names[wl->training.precision];
  const node_types_t *nt = &sys->cluster.node_types;
  if (nt->n == 0) {
    if (sys->chip.cube.macs_per_cycle[dt] <= 0)
      return fail(wl_doc, "training.precision", err,
                  "a precision the chip computes (chip.cube.%s_macs_per_cycle = 0 in %s), "
                  "found \"%s\"",
                  dtype, sys_doc->file, found);
    return 0;
  }
  int per_node = sys->node.npus;
  long servers = (world + per_node - 1) / per_node;
  for (long server = 0; server < servers; server++) {
    int k = config_server_chip_index(sys, (int)server);
    if (config_chip_at(sys, k)->cube.macs_per_cycle[dt] > 0)
      continue;
    long rank = server * per_node;
    if (k == 0)
      return fail(wl_doc, "training.precision", err,
                  "a precision every chip of the job computes (rank %ld, server %ld: "
                  "chip.cube.%s_macs_per_cycle = 0 in %s, its default chip), found \"%s\"",
                  rank, server, dtype, sys_doc->file, found);
    return fail(wl_doc, "training.precision", err,
                "a precision every chip of the job computes (rank %ld, server %ld: "
                "chip.cube.%s_macs_per_cycle = 0 in %s, cluster.node_types of %s), found "
                "\"%s\"",
                rank, server, dtype, nt->v[k - 1].system, sys_doc->file, found);
  }
  return 0;
}

int config_check_job(const config_doc_t *sys_doc, const system_cfg_t *sys,
                     const config_doc_t *wl_doc, const workload_cfg_t *wl, bool from_server0,
                     npu_err_t *err) {
  if (!wl->has_training)
    return 0; /* serving: npusim serve places its pools itself */
  long world = workload_world_size(wl);
  int per_node = sys->node.npus;
  if (world > per_node && world % per_node)
    return fail(wl_doc, "parallel", err,
                "dp x tp x pp x cp <= node.npus = %d (in %s) or a multiple of it (whole "
                "servers), found %ld",
                per_node, sys_doc->file, world);
  long nodes = sys->cluster.nodes;
  if (nodes > 0 && world > nodes * per_node)
    return fail(wl_doc, "parallel", err,
                "dp x tp x pp x cp <= the %ld NPUs of cluster.nodes = %ld (in %s), found %ld",
                nodes * per_node, nodes, sys_doc->file, world);
  if (!from_server0 && sys->cluster.node_types.n > 0)
    return 0; /* which chips the job runs on is known once it is placed */
  return check_precision(sys_doc, sys, wl_doc, wl, world, err);
}
