/* serve_cost.c - the cost of one serving iteration and the memory of an
 * instance; see serve_cost.h. */
#include "serve_cost.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll_engine.h"
#include "power.h"
#include "moe_routing.h"
#include "transformer.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define ATTN_STEP_TOKENS 16 /* attention shapes are costed in steps of this many tokens */
/* Activation workspace per batched token, in hidden-size elements of 2 bytes,
 * besides the MLP's own: the residual, the normed input, the attention output
 * and the projection's output live at once [A: vLLM's profiling run measures it].
 * The attention output is heads x head_dim wide: one of these is that width. */
#define ACT_HIDDEN_PER_TOKEN 4.0

const char *const serve_part_names[SERVE_PART_COUNT] = {"attention", "matmul", "communication",
                                                        "other"};

/* ---- a memo: 64-bit keys to costs, open addressing ---- */

typedef struct {
  uint64_t key; /* stored + 1, so 0 marks a free slot */
  serve_parts_t parts;
} memo_slot_t;

typedef struct {
  memo_slot_t *slots;
  size_t cap, count;
} memo_t;

static uint64_t mix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  return k;
}

static memo_slot_t *memo_find(memo_t *m, uint64_t key) {
  size_t i = (size_t)mix(key) & (m->cap - 1);
  while (m->slots[i].key && m->slots[i].key != key + 1)
    i = (i + 1) & (m->cap - 1);
  return &m->slots[i];
}

/* The cost under key, or NULL. The memo only saves work: out of memory, it
 * stops growing and costs are computed again. */
static const serve_parts_t *memo_get(memo_t *m, uint64_t key) {
  if (!m->slots)
    return NULL;
  memo_slot_t *s = memo_find(m, key);
  return s->key ? &s->parts : NULL;
}

static void memo_put(memo_t *m, uint64_t key, const serve_parts_t *p) {
  if ((m->count + 1) * 2 > m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 256;
    memo_t bigger = {calloc(cap, sizeof *m->slots), cap, m->count};
    if (!bigger.slots)
      return;
    for (size_t i = 0; i < m->cap; i++)
      if (m->slots[i].key)
        *memo_find(&bigger, m->slots[i].key - 1) = m->slots[i];
    free(m->slots);
    *m = bigger;
  }
  memo_slot_t *s = memo_find(m, key);
  if (!s->key)
    m->count++;
  s->key = key + 1;
  s->parts = *p;
}

/* ---- the instance ---- */

struct serve_cost {
  const system_cfg_t *sys;
  const model_cfg_t *m;
  const serving_cfg_t *s;
  serve_pool_t pool;
  const topo_t *topo;
  int first;
  op_cache_t *ops;
  chip_dtype_t wdt, adt, kvdt;
  xf_split_t split; /* the weights over the instance: experts over its tp x dp ranks */
  int heads_l, kvh_l, head_dim;
  int *tp_members, *ep_members;
  int *rail_members, *server_members; /* the EP group's servers (same local rank), the first */
  int nservers, per_server;
  int *stage_layers, *stage_dense; /* per stage: layers, of which dense-MLP layers */
  int *stage_dense_win, *stage_moe_win; /* of those, with a sliding window (dense, MoE) */
  bool has_kind[2];                 /* some layer attends whole [0], some windowed [1] */
  serve_memory_t mem;
  double moe_skew; /* the busiest EP rank's tokens over its even share (1: uniform routing) */
  memo_t group, moe, attn, ends;
  double acc_J, acc_link_J;   /* energy of the ops and collectives costed since cleared */
  serve_group_batch_t *draft; /* speculative decoding: the groups' one-token decode batches */
  double *draft_stage_s;      /* and their stages' times */
};

static chip_dtype_t serve_chip_dtype(serve_dtype_t d) {
  static const chip_dtype_t map[SERVE_DTYPE_COUNT] = {CHIP_DTYPE_BF16, CHIP_DTYPE_FP16,
                                                      CHIP_DTYPE_FP8, CHIP_DTYPE_INT8};
  return map[d];
}

/* An op's time; its dynamic energy (one NPU) goes to c->acc_J. */
/* An op's device time: a serving step does not wait for the host kernel by
 * kernel (CUDA graphs, an engine's own launch path); the host's time per
 * iteration is serving.scheduler.iteration_overhead_us. */
static double op_s(serve_cost_t *c, op_desc_t op) {
  op.out_dtype = op_default_out_dtype(op.kind, op.dtype);
  const op_result_t *r = op_cost(c->ops, &op);
  c->acc_J += power_op_dynamic_J(&c->sys->chip, r);
  return r->device_s;
}

/* Energy of a schedule's bytes on the links they cross. */
static double sched_J(const topo_t *topo, const coll_sched_t *sched) {
  double J = 0;
  for (int ph = 0; ph < sched->nphases; ph++) {
    const coll_phase_t *p = &sched->phases[ph];
    for (int x = 0; x < p->nxfers; x++) {
      topo_hop_t hops[TOPO_MAX_HOPS];
      int n = topo_route(topo, p->xfers[x].src, p->xfers[x].dst, hops);
      for (int h = 0; h < n; h++)
        J += p->xfers[x].bytes * p->rounds * topo->links[hops[h].link].cfg.energy_J_per_byte;
    }
  }
  return J * sched->loops * sched->wire_factor / coll_sched_held(sched);
}

/* A matmul on the weights: M tokens, N outputs, K inputs, batch of them. */
static double mm(serve_cost_t *c, double M, double N, double K, double batch) {
  if (M < 1 || N < 1 || K < 1)
    return 0;
  return op_s(c, (op_desc_t){.kind = OP_MATMUL,
                             .dtype = c->wdt,
                             .dims = {(int64_t)M, (int64_t)N, (int64_t)K, (int64_t)batch}});
}

/* The MLP's activation kernel: GeLU, or its gated form (SwiGLU, GeGLU). */
static op_kind_t activation_op(const model_cfg_t *m) {
  return m->activation == ACTIVATION_SWIGLU ? OP_SWIGLU
         : m->activation == ACTIVATION_GEGLU ? OP_GEGLU
                                             : OP_GELU;
}

static double vec_form(serve_cost_t *c, op_kind_t kind, op_form_t form, double rows,
                       double cols) {
  if (rows < 1 || cols < 1)
    return 0;
  return op_s(c, (op_desc_t){.kind = kind,
                             .dtype = c->adt,
                             .form = form,
                             .dims = {(int64_t)rows, (int64_t)cols}});
}

static double vec(serve_cost_t *c, op_kind_t kind, double rows, double cols) {
  return vec_form(c, kind, OP_FORM_FUSED, rows, cols);
}

/* The MLP's activation over rows x cols, in the engine's kernels (gelu has one
 * form: unfused is the same kernel). */
static double activation_s(serve_cost_t *c, double rows, double cols) {
  op_form_t form =
      c->s->swiglu_kernels == KERNELS_UNFUSED ? OP_FORM_UNFUSED : OP_FORM_FUSED;
  return vec_form(c, activation_op(c->m), form, rows, cols);
}

/* A collective over members (analytic: alone on its links), as cfg runs it. */
static double coll_cfg_s(serve_cost_t *c, const coll_cfg_t *cfg, coll_op_t op, const int *members,
                         int g, double bytes) {
  if (g < 2 || bytes <= 0)
    return 0;
  coll_req_t req = {.op = op, .bytes = bytes};
  coll_plan_t plan;
  npu_err_t err; /* never read: auto selection always plans a group */
  if (coll_plan_group(c->topo, cfg, members, g, &req, &plan, &err))
    return 0; /* not reached: auto selection always plans a group */
  double t = coll_analytic_time(c->topo, cfg, &plan.sched, NULL);
  c->acc_link_J += sched_J(c->topo, &plan.sched);
  /* NCCL/HCCL run a collective as kernels on the cores: they are occupied
   * (power.h's active_W) while it runs, serial with the ops here */
  c->acc_J += c->sys->chip.power.active_W * t *
               power_unit_scale(&c->sys->chip, c->sys->chip.freq_hz); /* as replay_energy.c */
  coll_plan_free(&plan);
  return t;
}

/* A collective over members as the system's library runs it. */
static double coll_s(serve_cost_t *c, coll_op_t op, const int *members, int g, double bytes) {
  return coll_cfg_s(c, &c->sys->coll, op, members, g, bytes);
}

/* A tensor-parallel all-reduce of bytes per rank: with serving.allreduce
 * engine, on the engine's own one-shot or two-shot kernel where it has one
 * (coll_select_engine_allreduce), else as the library runs it. */
static double tp_allreduce_s(serve_cost_t *c, double bytes) {
  coll_algo_t algo = COLL_ALGO_AUTO;
  if (c->s->allreduce == SERVE_AR_ENGINE)
    algo = coll_select_engine_allreduce(c->topo, &c->sys->coll, c->tp_members, c->pool.tp, bytes);
  if (algo == COLL_ALGO_AUTO)
    return coll_s(c, COLL_ALLREDUCE, c->tp_members, c->pool.tp, bytes);
  coll_cfg_t cfg = c->sys->coll;
  cfg.algo[0] = algo;
  return coll_cfg_s(c, &cfg, COLL_ALLREDUCE, c->tp_members, c->pool.tp, bytes);
}

/* ---- the parts of a layer ---- */

static void add_parts(serve_parts_t *to, const serve_parts_t *p, double times) {
  for (int k = 0; k < SERVE_PART_COUNT; k++)
    to->s[k] += p->s[k] * times;
  to->J += p->J * times;
}

/* Runs a cost function with the energy accumulators cleared: the energy it
 * spends goes to p->J, ops on one NPU counted npus times (links once). */
#define WITH_ENERGY(c, p, npus, call)                                                              \
  do {                                                                                             \
    (c)->acc_J = (c)->acc_link_J = 0;                                                              \
    call;                                                                                          \
    (p)->J = (c)->acc_J * (npus) + (c)->acc_link_J;                                                \
  } while (0)

/* Time of a layer's matmuls of the given blocks (transformer.h) for T tokens,
 * summed in their order. */
static double matmuls_s(serve_cost_t *c, double T, bool moe, int blocks) {
  xf_matmul_t mms[XF_MAX_MATMULS];
  int n = xf_layer_matmuls(c->m, &c->split, moe, blocks, mms);
  double t = 0;
  for (int i = 0; i < n; i++)
    t += mm(c, T, mms[i].n, mms[i].k, mms[i].batch);
  return t;
}

/* One group's attention block and MLP (or, in a MoE layer, the router and the
 * shared experts) for T tokens, without the attention kernel. */
static void group_layer(serve_cost_t *c, double T, bool moe, serve_parts_t *p) {
  const model_cfg_t *m = c->m;
  double h = m->hidden, hl = c->heads_l, e = chip_dtype_bytes(c->adt);
  p->s[SERVE_PART_OTHER] += 2 * vec(c, OP_RMSNORM, T, h);
  p->s[SERVE_PART_MATMUL] += matmuls_s(c, T, moe, XF_BLOCK_ATTENTION);
  if (m->has_mla) {
    const mla_cfg_t *a = &m->mla;
    p->s[SERVE_PART_OTHER] += vec(c, OP_RMSNORM, T, a->kv_lora_rank) +
                              (a->q_lora_rank ? vec(c, OP_RMSNORM, T, a->q_lora_rank) : 0) +
                              vec(c, OP_ROPE, T, (hl + 1) * a->qk_rope_head_dim);
  } else {
    p->s[SERVE_PART_OTHER] += vec(c, OP_ROPE, T, (hl + c->kvh_l) * c->head_dim);
  }
  double ar = tp_allreduce_s(c, T * h * e);
  p->s[SERVE_PART_COMM] += ar;
  /* the dense MLP, or the shared experts (when there are) and the router */
  xf_matmul_t mms[XF_MAX_MATMULS];
  int n = xf_layer_matmuls(m, &c->split, moe, XF_BLOCK_MLP, mms);
  if (n >= 2 && mms[0].kind == XF_MM_UP) {
    p->s[SERVE_PART_MATMUL] += mm(c, T, mms[0].n, mms[0].k, 1) + mm(c, T, mms[1].n, mms[1].k, 1);
    p->s[SERVE_PART_OTHER] += activation_s(c, T, mms[1].k);
  }
  if (moe)
    p->s[SERVE_PART_MATMUL] += mm(c, T, mms[n - 1].n, mms[n - 1].k, 1); /* router */
  else
    p->s[SERVE_PART_COMM] += ar;
}

static serve_parts_t group_layer_memo(serve_cost_t *c, int T, bool moe) {
  uint64_t key = (uint64_t)T * 2 + moe;
  const serve_parts_t *p = memo_get(&c->group, key);
  if (p)
    return *p;
  serve_parts_t v = {{0}, 0};
  WITH_ENERGY(c, &v, c->pool.tp, group_layer(c, T, moe, &v)); /* a group: tp NPUs */
  memo_put(&c->group, key, &v);
  return v;
}

/* The experts of a MoE layer for the instance's T tokens (of every group), one batch. */
static void moe_layer(serve_cost_t *c, double T, serve_parts_t *p);

/* The experts of a MoE layer for T tokens; with two-batch overlap as two
 * micro-batches of half the tokens each (the experts' weights read twice). */
static void moe_layer_batches(serve_cost_t *c, double T, serve_parts_t *p) {
  if (!c->s->two_batch_overlap) {
    moe_layer(c, T, p);
    return;
  }
  serve_parts_t half = {{0}, 0};
  double j0 = c->acc_J, l0 = c->acc_link_J;
  moe_layer(c, ceil(T / 2), &half);
  add_parts(p, &half, 2);
  c->acc_J += c->acc_J - j0; /* the second micro-batch spends as much */
  c->acc_link_J += c->acc_link_J - l0;
}

/* Expected distinct holders among n equal holders of `items` things when k
 * distinct things are picked at random: n (1 - C(items - items/n, k) / C(items, k)). */
static double distinct_holders(double n, double items, double k) {
  if (n <= 1)
    return 1;
  double per = items / n, miss = 1;
  for (int i = 0; i < (int)k && miss > 0; i++)
    miss *= fmax(items - per - i, 0) / (items - i);
  return n * (1 - miss);
}

/* ---- the dispatch kernels' rate (the routing's skew: moe_routing.c) ---- */

/* An all-to-all of bytes per rank (nccl-tests' size: all its slices) over
 * members, no faster than the dispatch kernels' measured rate when one is set
 * (serving.moe.dispatch_*_GBps: DeepEP's bottleneck bandwidth counts the same
 * bytes, its own server's share included). */
static double a2a_at_rate_s(serve_cost_t *c, const int *members, int g, double bytes,
                            double rate_Bps) {
  double t = coll_s(c, COLL_ALLTOALL, members, g, bytes);
  return rate_Bps > 0 && g > 1 ? fmax(t, bytes / rate_Bps) : t;
}

/* The dispatch (in dtype bytes e_in) and combine (e_out) all-to-alls of a MoE
 * layer for per_rank tokens on each rank. */
static double moe_a2a_s(serve_cost_t *c, double per_rank, double e_in, double e_out) {
  const moe_cfg_t *x = &c->m->moe;
  double h = c->m->hidden, ep = c->pool.ep;
  /* a token goes once to each rank holding one of its experts */
  double ranks = distinct_holders(ep, x->experts, x->top_k);
  const serving_cfg_t *s = c->s;
  if (c->pool.ep_dispatch != SERVE_DISPATCH_SERVER_DEDUP || c->nservers < 2) {
    double rate = c->nservers > 1 ? s->moe_dispatch_rdma_Bps : s->moe_dispatch_nvlink_Bps;
    return a2a_at_rate_s(c, c->ep_members, (int)ep, per_rank * ranks * h * e_in, rate) +
           a2a_at_rate_s(c, c->ep_members, (int)ep, per_rank * ranks * h * e_out, rate);
  }
  /* DeepEP's normal kernels: once per destination server over the rail, then on to
   * the ranks inside the server; group-limited routing caps the servers reached */
  double servers = x->groups ? distinct_holders(c->nservers, x->groups, x->top_groups)
                             : distinct_holders(c->nservers, x->experts, x->top_k);
  double t = 0;
  for (int pass = 0; pass < 2; pass++) {
    double e = pass ? e_out : e_in;
    t += a2a_at_rate_s(c, c->rail_members, c->nservers, per_rank * servers * h * e,
                       s->moe_dispatch_rdma_Bps) +
         a2a_at_rate_s(c, c->server_members, c->per_server, per_rank * ranks * h * e,
                       s->moe_dispatch_nvlink_Bps);
  }
  return t;
}

/* tokens scaled to the busiest EP rank's share (unchanged under uniform routing) */
static double skewed(const serve_cost_t *c, double tokens) {
  return c->moe_skew > 1 ? tokens * c->moe_skew : tokens;
}

static void moe_layer(serve_cost_t *c, double T, serve_parts_t *p) {
  const model_cfg_t *m = c->m;
  const moe_cfg_t *x = &m->moe;
  double h = m->hidden, e = chip_dtype_bytes(c->adt), ep = c->pool.ep;
  double ranks = (double)c->pool.tp * c->pool.dp;
  double per_rank = ceil(T / ranks); /* each rank dispatches its share of the tokens */
  if (ep > 1) /* dispatched in the weights' type when they are 8-bit (W8A8), combined in bf16;
               * a skewed routing sends the busiest rank's share to every rank */
    p->s[SERVE_PART_COMM] +=
        moe_a2a_s(c, skewed(c, per_rank), fmin(chip_dtype_bytes(c->wdt), e), e);
  else if (c->pool.tp > 1)
    p->s[SERVE_PART_COMM] += tp_allreduce_s(c, ceil(T / c->pool.dp) * h * e);
  /* the experts on the fullest rank, their width shared when replicated */
  xf_matmul_t mms[XF_MAX_MATMULS];
  xf_layer_matmuls(m, &c->split, true, XF_BLOCK_EXPERTS, mms);
  double local = mms[0].batch, width = mms[1].k;
  /* tokens per expert: even routing, or the busiest rank's */
  double rows = ceil(skewed(c, T * x->top_k) / x->experts);
  p->s[SERVE_PART_MATMUL] +=
      mm(c, rows, mms[0].n, mms[0].k, local) + mm(c, rows, mms[1].n, width, local);
  p->s[SERVE_PART_OTHER] += activation_s(c, rows * local, width);
}

static serve_parts_t moe_memo(serve_cost_t *c, long T) {
  const serve_parts_t *p = memo_get(&c->moe, (uint64_t)T);
  if (p)
    return *p;
  serve_parts_t v = {{0}, 0};
  WITH_ENERGY(c, &v, c->pool.tp * c->pool.dp, moe_layer_batches(c, (double)T, &v));
  memo_put(&c->moe, (uint64_t)T, &v);
  return v;
}

static int64_t steps_up(double tokens) {
  return (int64_t)(ceil(tokens / ATTN_STEP_TOKENS) * ATTN_STEP_TOKENS);
}

/* Causal fused attention of seq tokens after `past` cached ones, one layer; each
 * query sees the `window` keys before it (0: all). */
static double prefill_attn_s(serve_cost_t *c, int64_t seq, int64_t past, int64_t window) {
  if (seq <= 0)
    return 0;
  const model_cfg_t *m = c->m;
  int64_t d = m->has_mla ? m->mla.qk_nope_head_dim + m->mla.qk_rope_head_dim : c->head_dim;
  int64_t kv = m->has_mla ? c->heads_l : c->kvh_l;
  return op_s(c, (op_desc_t){.kind = OP_ATTN_FWD,
                             .dtype = c->adt,
                             .causal = true,
                             .window = window,
                             .past = past,
                             .dims = {1, c->heads_l, seq, d, kv}});
}

/* A chunk of tokens after past ones (earlier chunks, a cached prefix): its rows
 * against all the keys, as one kernel of few, long units (attention.c). */
static double chunk_attn_s(serve_cost_t *c, int chunk, int past, int64_t window) {
  int64_t n = steps_up(chunk), o = past > 0 ? steps_up(past) : 0;
  uint64_t key = (uint64_t)(window > 0) << 62 | (uint64_t)n << 32 | (uint64_t)o;
  const serve_parts_t *p = memo_get(&c->attn, key << 1 | 1);
  if (p) {
    c->acc_J += p->J;
    return p->s[SERVE_PART_ATTENTION];
  }
  double j0 = c->acc_J, t = prefill_attn_s(c, n, o, window);
  serve_parts_t v = {{[SERVE_PART_ATTENTION] = t}, c->acc_J - j0};
  memo_put(&c->attn, key << 1 | 1, &v);
  return t;
}

/* Decode attention of n sequences of mean context ctx, one layer, each with q
 * query tokens (speculative decoding verifies k + 1): the kernels fold the
 * queries into the heads over one read of the cache (FlashMLA, FlashInfer),
 * so it is costed as q times the heads. */
static double decode_attn_s(serve_cost_t *c, int n, double ctx, int q, int64_t window) {
  if (n <= 0)
    return 0;
  /* a windowed layer reads at most the window: the mean context capped at it
   * (a bound above the mean of the capped contexts) */
  double per_seq = ctx / n;
  int64_t mean = steps_up(window > 0 && per_seq > window ? (double)window : per_seq);
  uint64_t key = (uint64_t)(q > 1 ? q - 1 : 0) << 56 | (uint64_t)n << 32 | (uint64_t)mean;
  const serve_parts_t *p = memo_get(&c->attn, key << 1);
  if (p) {
    c->acc_J += p->J;
    return p->s[SERVE_PART_ATTENTION];
  }
  const model_cfg_t *m = c->m;
  op_desc_t op = {.kind = OP_ATTN_DECODE,
                  .dtype = c->kvdt == CHIP_DTYPE_FP16 ? CHIP_DTYPE_FP16 : CHIP_DTYPE_BF16,
                  .dims = {n, (int64_t)c->heads_l * (q > 1 ? q : 1), mean, c->head_dim, c->kvh_l}};
  if (m->has_mla) {
    op.dims[3] = m->mla.kv_lora_rank + m->mla.qk_rope_head_dim;
    op.dims[4] = 1;
    op.latent_kv = true;
  }
  /* an 8-bit cache streams half the bytes: cost it as bf16 over half the context */
  if (chip_dtype_bytes(c->kvdt) == 1)
    op.dims[2] = steps_up((double)mean / 2);
  double j0 = c->acc_J;
  serve_parts_t v = {{[SERVE_PART_ATTENTION] = op_s(c, op)}, 0};
  v.J = c->acc_J - j0;
  memo_put(&c->attn, key << 1, &v);
  return v.s[SERVE_PART_ATTENTION];
}

/* One group's attention kernels for its batch, one layer (windowed: a layer
 * of model.sliding_window_tokens). */
static double group_attn_s(serve_cost_t *c, const serve_group_batch_t *g, bool windowed) {
  int64_t window = windowed ? c->m->sliding_window_tokens : 0;
  double t = decode_attn_s(c, g->decodes, g->decode_ctx, g->verify, window);
  /* the prefills of a batch run as one variable-length kernel: one launch */
  for (int i = 0; i < g->prefills; i++)
    t += chunk_attn_s(c, g->chunk[i], g->past[i], window) -
         (i ? c->sys->chip.cube.op_overhead_s : 0);
  return t;
}

/* The embedding (first stage) for T tokens, or the LM head and sampling (last
 * stage) for S sequences. */
static serve_parts_t ends_memo(serve_cost_t *c, bool head, int n) {
  uint64_t key = (uint64_t)n * 2 + head;
  const serve_parts_t *p = memo_get(&c->ends, key);
  if (p)
    return *p;
  serve_parts_t v = {{0}, 0};
  c->acc_J = c->acc_link_J = 0;
  double h = c->m->hidden, vocab_l = ceil((double)c->m->vocab / c->pool.tp);
  double e = chip_dtype_bytes(c->adt);
  if (head) {
    v.s[SERVE_PART_MATMUL] = mm(c, n, vocab_l, h, 1);
    v.s[SERVE_PART_COMM] =
        coll_s(c, COLL_ALLGATHER, c->tp_members, c->pool.tp, (double)n * c->m->vocab * e);
    v.s[SERVE_PART_OTHER] = vec(c, OP_SOFTMAX, n, c->m->vocab) + vec(c, OP_RMSNORM, n, h);
  } else {
    v.s[SERVE_PART_OTHER] = vec(c, OP_COPY, n, h);
    v.s[SERVE_PART_COMM] = tp_allreduce_s(c, n * h * e);
  }
  /* every group does it (at the largest group's size: an upper bound) */
  v.J = (c->acc_J * c->pool.tp + c->acc_link_J) * c->pool.dp;
  memo_put(&c->ends, key, &v);
  return v;
}

static double parts_sum(const serve_parts_t *p) {
  double t = 0;
  for (int k = 0; k < SERVE_PART_COUNT; k++)
    t += p->s[k];
  return t;
}

static int group_tokens(const serve_group_batch_t *g) {
  int t = g->decodes * (g->verify > 1 ? g->verify : 1);
  for (int i = 0; i < g->prefills; i++)
    t += g->chunk[i];
  return t;
}

/* CUDA-graph padding: a decode-only batch of T tokens runs the graph captured
 * for the next size of vLLM's list 1, 2, 4, 8, 16, 24, ... (multiples of 8)
 * when T is at most cuda_graph_max_batch; otherwise (and with prefills) it
 * runs eagerly at T. */
static int graph_tokens(const serve_cost_t *c, const serve_group_batch_t *g) {
  int T = group_tokens(g), most = c->s->cuda_graph_max_batch;
  if (most <= 0 || g->prefills > 0 || T == 0 || T > most)
    return T;
  int size = T <= 2 ? T : T <= 4 ? 4 : (T + 7) / 8 * 8;
  return size < most ? size : most;
}

/* The slowest group's layer (attention kernel included), into p. */
static void slowest_group(serve_cost_t *c, const serve_group_batch_t *groups, bool moe,
                          bool windowed, serve_parts_t *p) {
  double worst = -1, energy = 0;
  for (int g = 0; g < c->pool.dp; g++) {
    int T = graph_tokens(c, &groups[g]);
    if (T == 0 && worst >= 0)
      continue;
    serve_parts_t v = {{0}, 0};
    if (moe && c->s->two_batch_overlap) { /* two micro-batches: the weights read twice */
      serve_parts_t half = group_layer_memo(c, (T + 1) / 2, moe);
      add_parts(&v, &half, 2);
    } else {
      v = group_layer_memo(c, T, moe);
    }
    c->acc_J = 0;
    v.s[SERVE_PART_ATTENTION] += group_attn_s(c, &groups[g], windowed);
    v.J += c->acc_J * c->pool.tp;
    energy += v.J;
    if (parts_sum(&v) > worst) {
      worst = parts_sum(&v);
      *p = v;
    }
  }
  p->J = energy; /* every group's work, the slowest's time */
}

/* An iteration of the target model, without the drafting of speculative decoding. */
static void iteration_target(serve_cost_t *c, const serve_group_batch_t *groups, double *stage_s,
                             serve_parts_t *parts) {
  memset(parts, 0, sizeof *parts);
  long total = 0;
  int most = 0, samples = 0;
  for (int g = 0; g < c->pool.dp; g++) {
    int T = graph_tokens(c, &groups[g]);
    total += T;
    most = T > most ? T : most;
    /* a verifying decode samples from each of its k + 1 positions */
    int rows =
        groups[g].samples + groups[g].decodes * (groups[g].verify > 1 ? groups[g].verify - 1 : 0);
    samples = rows > samples ? rows : samples;
  }
  /* each kind of layer the model has: dense or MoE, whole attention or windowed */
  serve_parts_t dense[2] = {{{0}, 0}, {{0}, 0}}, moe[2] = {{{0}, 0}, {{0}, 0}};
  for (int w = 0; w < 2; w++) {
    if (!c->has_kind[w])
      continue;
    slowest_group(c, groups, false, w, &dense[w]);
    if (!c->m->has_moe)
      continue;
    slowest_group(c, groups, true, w, &moe[w]);
    serve_parts_t experts = moe_memo(c, total);
    add_parts(&moe[w], &experts, 1);
    if (c->s->two_batch_overlap) {
      /* one micro-batch's communication runs under the other's compute: the layer
       * takes the longer of the two, the rest of the communication is exposed */
      double comm = moe[w].s[SERVE_PART_COMM], compute = parts_sum(&moe[w]) - comm;
      moe[w].s[SERVE_PART_COMM] = fmax(comm - compute, 0);
    }
  }
  double e = chip_dtype_bytes(c->adt);
  for (int s = 0; s < c->pool.pp; s++) {
    serve_parts_t st = {{0}, 0};
    int nmoe = c->m->has_moe ? c->stage_layers[s] - c->stage_dense[s] : 0;
    int dwin = c->stage_dense_win[s], mwin = c->stage_moe_win[s];
    add_parts(&st, &dense[0], c->stage_layers[s] - nmoe - dwin);
    if (dwin)
      add_parts(&st, &dense[1], dwin);
    if (nmoe - mwin)
      add_parts(&st, &moe[0], nmoe - mwin);
    if (mwin)
      add_parts(&st, &moe[1], mwin);
    if (s == 0) {
      serve_parts_t embed = ends_memo(c, false, most);
      add_parts(&st, &embed, 1);
      st.s[SERVE_PART_OTHER] += c->s->iteration_overhead_s;
    }
    if (s == c->pool.pp - 1 && samples > 0) {
      serve_parts_t head = ends_memo(c, true, samples);
      add_parts(&st, &head, 1);
    }
    if (s < c->pool.pp - 1) {
      int stage = c->pool.tp * c->pool.dp;
      st.s[SERVE_PART_COMM] += topo_path_time_s(
          c->topo, c->first + s * stage, c->first + (s + 1) * stage, most * c->m->hidden * e);
    }
    stage_s[s] = parts_sum(&st);
    add_parts(parts, &st, 1);
  }
}

/* The groups' decodes as one-token decodes (what drafting runs), into c->draft;
 * false when there are none. */
static bool draft_batches(serve_cost_t *c, const serve_group_batch_t *groups) {
  int any = 0, q = serve_spec_verify_tokens(c->s);
  for (int g = 0; g < c->pool.dp; g++) {
    const serve_group_batch_t *b = &groups[g];
    /* each draft step sees the context before the tokens being verified, plus one */
    c->draft[g] = (serve_group_batch_t){.decodes = b->decodes,
                                        .decode_ctx = b->decode_ctx - (double)b->decodes * (q - 1),
                                        .samples = b->decodes,
                                        .verify = 1};
    any += b->decodes;
  }
  return any > 0;
}

/* One MTP module for the groups' one-token decodes (c->draft): a transformer
 * layer as the model's last (MoE when the model has experts), its projection of
 * the hidden state and the next token's embedding (2h -> h), the shared LM head. */
static void mtp_step(serve_cost_t *c, serve_parts_t *p) {
  bool moe = c->m->has_moe;
  long total = 0;
  int most = 0;
  for (int g = 0; g < c->pool.dp; g++) {
    total += c->draft[g].decodes;
    most = c->draft[g].decodes > most ? c->draft[g].decodes : most;
  }
  slowest_group(c, c->draft, moe, xf_layer_windowed(c->m, c->m->layers - 1), p);
  if (moe) {
    serve_parts_t experts = moe_memo(c, total);
    add_parts(p, &experts, 1);
  }
  double h = c->m->hidden;
  c->acc_J = 0;
  p->s[SERVE_PART_MATMUL] += mm(c, most, h, 2 * h, 1);
  p->J += c->acc_J * c->pool.tp * c->pool.dp;
  serve_parts_t head = ends_memo(c, true, most);
  add_parts(p, &head, 1);
}

/* Speculative decoding's drafting, k steps one after another on the last
 * stage, before the target verifies: MTP modules, or a draft model costed as a
 * share of the target's one-token decode iteration. */
static void spec_draft(serve_cost_t *c, const serve_group_batch_t *groups, double *stage_s,
                       serve_parts_t *parts) {
  if (!c->s->spec.on || !draft_batches(c, groups))
    return;
  serve_parts_t step = {{0}, 0};
  double share = 1;
  if (c->s->spec.method == SERVE_SPEC_MTP) {
    mtp_step(c, &step);
  } else {
    iteration_target(c, c->draft, c->draft_stage_s, &step);
    share = c->s->spec.draft_cost_share;
  }
  double k = c->s->spec.draft_tokens * share;
  stage_s[c->pool.pp - 1] += parts_sum(&step) * k;
  add_parts(parts, &step, k);
}

void serve_cost_iteration(serve_cost_t *c, const serve_group_batch_t *groups, double *stage_s,
                          serve_parts_t *parts) {
  iteration_target(c, groups, stage_s, parts);
  spec_draft(c, groups, stage_s, parts);
}

/* ---- memory ---- */

static int fill_memory(serve_cost_t *c, const char *wl_path, const char *pool_path,
                       npu_err_t *err) {
  const model_cfg_t *m = c->m;
  const serving_cfg_t *s = c->s;
  double we = chip_dtype_bytes(c->wdt), kve = chip_dtype_bytes(c->kvdt);
  double most = 0;
  int layers = 0;
  for (int st = 0; st < c->pool.pp; st++) {
    int nmoe = m->has_moe ? c->stage_layers[st] - c->stage_dense[st] : 0;
    /* the norms' scales are left out: a few kilobytes */
    double w = xf_stage_params(m, &c->split, c->stage_layers[st] - nmoe, nmoe, st == 0,
                               st == c->pool.pp - 1, false);
    most = fmax(most, w);
    layers = c->stage_layers[st] > layers ? c->stage_layers[st] : layers;
  }
  serve_memory_t *mem = &c->mem;
  mem->weights = most * we;
  double mlp =
      (m->has_moe ? fmax(m->ffn_hidden, m->moe.expert_ffn_hidden) : m->ffn_hidden) / c->pool.tp;
  double attn_out = (double)m->heads * c->head_dim; /* hidden unless head_dim sets it */
  mem->activations =
      s->max_batched_tokens * ((ACT_HIDDEN_PER_TOKEN - 1) * m->hidden + attn_out + 3 * mlp) * 2 +
      (double)s->max_num_seqs * m->vocab / c->pool.tp * 4;
  mem->usable = (double)c->sys->chip.hbm.capacity_bytes * s->memory_utilization;
  mem->kv_per_token = m->has_mla
                          ? layers * (double)(m->mla.kv_lora_rank + m->mla.qk_rope_head_dim) * kve
                          : 2.0 * layers * c->kvh_l * c->head_dim * kve;
  mem->kv_capacity = s->kv_capacity_bytes > 0 ? s->kv_capacity_bytes
                                              : mem->usable - mem->weights - mem->activations;
  if (mem->kv_capacity <= 0 || mem->weights + mem->activations > mem->usable)
    return npu_err_set(err,
                       "%s: %s: expected the weights (%.2f GiB per NPU) and activations "
                       "(%.2f GiB) to fit chip.hbm x serving.kv_cache.memory_utilization (%.2f "
                       "GiB) with room for a KV cache, found %.2f GiB over",
                       wl_path, pool_path, mem->weights / GIB, mem->activations / GIB,
                       mem->usable / GIB, (mem->weights + mem->activations - mem->usable) / GIB);
  mem->kv_blocks = (long)floor(mem->kv_capacity / mem->kv_per_token / s->block_tokens);
  return 0;
}

/* ---- building ---- */

serve_cost_t *serve_cost_new(const system_cfg_t *sys, const workload_cfg_t *wl, const char *wl_path,
                             const char *pool_path, const serve_pool_t *pool, const topo_t *topo,
                             int first_rank, op_cache_t *ops, npu_err_t *err) {
  serve_cost_t *c = calloc(1, sizeof *c);
  int pp = pool->pp, ranks = pool->tp * pool->dp;
  if (c) {
    c->tp_members = calloc((size_t)ranks, sizeof(int));
    c->ep_members = calloc((size_t)ranks, sizeof(int));
    c->stage_layers = calloc((size_t)pp, sizeof(int));
    c->stage_dense = calloc((size_t)pp, sizeof(int));
    c->stage_dense_win = calloc((size_t)pp, sizeof(int));
    c->stage_moe_win = calloc((size_t)pp, sizeof(int));
  }
  if (!c || !c->tp_members || !c->ep_members || !c->stage_layers || !c->stage_dense ||
      !c->stage_dense_win || !c->stage_moe_win) {
    serve_cost_free(c);
    npu_err_set(err, "%s: out of memory for the serving model", wl_path);
    return NULL;
  }
  const model_cfg_t *m = &wl->model;
  c->sys = sys;
  c->m = m;
  c->s = &wl->serving;
  c->pool = *pool;
  c->topo = topo;
  c->first = first_rank;
  c->ops = ops;
  c->wdt = serve_chip_dtype(wl->serving.weight_dtype);
  c->adt = CHIP_DTYPE_BF16;
  c->kvdt = serve_chip_dtype(wl->serving.kv_dtype);
  c->split = (xf_split_t){pool->tp, pool->ep, ranks};
  c->heads_l = xf_heads(m, pool->tp);
  c->kvh_l = xf_kv_heads(m, pool->tp);
  c->head_dim = xf_head_dim(m);
  for (int i = 0; i < ranks; i++)
    c->tp_members[i] = c->ep_members[i] = first_rank + i;
  /* the EP group by server: the first rank's peers on the other servers (its rail),
   * and the ranks of the first server */
  c->per_server = pool->ep < topo->ranks_per_node ? pool->ep : topo->ranks_per_node;
  c->nservers = (pool->ep + c->per_server - 1) / c->per_server;
  c->rail_members = calloc((size_t)c->nservers, sizeof(int));
  c->server_members = calloc((size_t)c->per_server, sizeof(int));
  if (!c->rail_members || !c->server_members) {
    serve_cost_free(c);
    npu_err_set(err, "%s: out of memory for the serving model", wl_path);
    return NULL;
  }
  for (int i = 0; i < c->nservers; i++)
    c->rail_members[i] = first_rank + i * c->per_server;
  for (int i = 0; i < c->per_server; i++)
    c->server_members[i] = first_rank + i;
  for (int s = 0, start = 0; s < pp; s++) {
    c->stage_layers[s] = m->layers / pp + (s < m->layers % pp);
    int dense = m->moe.dense_layers - start;
    c->stage_dense[s] = dense < 0 ? 0 : dense > c->stage_layers[s] ? c->stage_layers[s] : dense;
    for (int l = start; l < start + c->stage_layers[s]; l++) {
      bool windowed = xf_layer_windowed(m, l);
      c->has_kind[windowed] = true;
      if (windowed)
        (l - start < c->stage_dense[s] || !m->has_moe ? c->stage_dense_win : c->stage_moe_win)[s]++;
    }
    start += c->stage_layers[s];
  }
  if (sys->chip.cube.macs_per_cycle[c->wdt] <= 0) {
    npu_err_set(err,
                "%s: serving.weight_dtype: expected a type the cube of %s computes, found "
                "%s",
                wl_path, sys->chip.name, serve_dtype_names[wl->serving.weight_dtype]);
    serve_cost_free(c);
    return NULL;
  }
  if (m->has_moe && wl->serving.moe_route.kind == MOE_ROUTE_MEASURED &&
      wl->serving.moe_route.load.n != m->moe.experts) {
    npu_err_set(err,
                "%s: serving.moe.expert_load: expected a load for each of the %d routed "
                "experts (model.moe.experts) with serving.moe.routing measured, found %d",
                wl_path, m->moe.experts, wl->serving.moe_route.load.n);
    serve_cost_free(c);
    return NULL;
  }
  c->moe_skew = m->has_moe ? moe_routing_skew(&wl->serving.moe_route, (uint64_t)wl->serving.seed,
                                               m->moe.experts, m->moe.top_k, pool->ep)
                            : 1;
  if (fill_memory(c, wl_path, pool_path, err)) {
    serve_cost_free(c);
    return NULL;
  }
  if (wl->serving.spec.on) {
    c->draft = calloc((size_t)pool->dp, sizeof *c->draft);
    c->draft_stage_s = calloc((size_t)pp, sizeof *c->draft_stage_s);
    if (!c->draft || !c->draft_stage_s) {
      serve_cost_free(c);
      npu_err_set(err, "%s: out of memory for the serving model", wl_path);
      return NULL;
    }
  }
  return c;
}

void serve_cost_free(serve_cost_t *c) {
  if (!c)
    return;
  free(c->tp_members);
  free(c->ep_members);
  free(c->rail_members);
  free(c->server_members);
  free(c->stage_layers);
  free(c->stage_dense);
  free(c->stage_dense_win);
  free(c->stage_moe_win);
  free(c->group.slots);
  free(c->moe.slots);
  free(c->attn.slots);
  free(c->ends.slots);
  free(c->draft);
  free(c->draft_stage_s);
  free(c);
}

const serve_memory_t *serve_cost_memory(const serve_cost_t *c) {
  return &c->mem;
}

double serve_cost_moe_skew(const serve_cost_t *c) {
  return c->moe_skew;
}

double serve_cost_kv_transfer_s(const serve_cost_t *src, const topo_t *topo, int src_first,
                                int dst_first, int dst_npus, double tokens) {
  double bytes = tokens * src->mem.kv_per_token, worst = 0;
  int stage = src->pool.tp * src->pool.dp;
  /* each stage's first group: its tp NPUs hold the request's cache */
  for (int s = 0; s < src->pool.pp; s++)
    for (int i = 0; i < src->pool.tp; i++) {
      int a = src_first + s * stage + i;
      worst = fmax(worst, topo_path_time_s(topo, a, dst_first + (a - src_first) % dst_npus, bytes));
    }
  return worst;
}
