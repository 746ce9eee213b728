/* transformer.c - one description of a transformer's parameters, matmuls,
 * FLOPs and activations; see transformer.h.
 *
 * Per-rank counts are built from whole numbers and divided last, so that a
 * count comes out the same whichever split formula a caller used before. */
#include "transformer.h"

#include <math.h>

bool xf_layer_is_moe(const model_cfg_t *m, int layer) {
  return m->has_moe && layer >= m->moe.dense_layers;
}

double xf_routed_k(const model_cfg_t *m) {
  const moe_cfg_t *x = &m->moe;
  if (x->zero_experts == 0)
    return x->top_k;
  return (double)x->top_k * x->experts / (x->experts + x->zero_experts);
}

int xf_attention_blocks(const model_cfg_t *m, bool moe) {
  return moe && m->has_moe && m->moe.shortcut ? 2 : 1;
}

bool xf_layer_windowed(const model_cfg_t *m, int layer) {
  int n = (layer < m->layers ? layer : m->layers - 1) + 1; /* 1-based */
  int every = m->full_attention_every;
  return m->sliding_window_tokens > 0 && (every == 0 || n % every != 0);
}

double xf_layer_context(const model_cfg_t *m, int layer, double seq) {
  return xf_layer_windowed(m, layer) ? fmin(seq, m->sliding_window_tokens) : seq;
}

int xf_heads(const model_cfg_t *m, int tp) {
  return m->heads / tp;
}

int xf_kv_heads(const model_cfg_t *m, int tp) {
  return (m->kv_heads + tp - 1) / tp;
}

int xf_head_dim(const model_cfg_t *m) {
  return m->head_dim > 0 ? m->head_dim : m->hidden / m->heads;
}

bool xf_gated(const model_cfg_t *m) {
  return m->activation == ACTIVATION_SWIGLU || m->activation == ACTIVATION_GEGLU;
}

double xf_mlp_mats(const model_cfg_t *m) {
  return xf_gated(m) ? 3 : 2;
}

/* Query/key width of one MLA head: its no-rope and rotary parts. */
static double mla_qk(const mla_cfg_t *a) {
  return (double)a->qk_nope_head_dim + a->qk_rope_head_dim;
}

static double attention_params(const model_cfg_t *m, int tp) {
  double h = m->hidden, hl = xf_heads(m, tp);
  if (!m->has_mla) {
    double d = xf_head_dim(m);
    return h * (hl + 2.0 * xf_kv_heads(m, tp)) * d + hl * d * h;
  }
  const mla_cfg_t *a = &m->mla;
  double q =
      a->q_lora_rank ? h * a->q_lora_rank + a->q_lora_rank * hl * mla_qk(a) : h * hl * mla_qk(a);
  return q + h * (a->kv_lora_rank + a->qk_rope_head_dim) +
         a->kv_lora_rank * hl * (a->qk_nope_head_dim + a->v_head_dim) + hl * a->v_head_dim * h;
}

/* Routed experts on one rank: ceil(experts / ep) of them, each expert's
 * width over expert_ranks / ep ranks. */
static double routed_params(const model_cfg_t *m, const xf_split_t *s) {
  const moe_cfg_t *x = &m->moe;
  double local = ceil((double)x->experts / s->ep);
  return local * xf_mlp_mats(m) * m->hidden * x->expert_ffn_hidden * s->ep / s->expert_ranks;
}

xf_attention_widths_t xf_attention_widths(const model_cfg_t *m) {
  if (m->has_mla)
    return (xf_attention_widths_t){mla_qk(&m->mla), m->mla.v_head_dim, m->heads};
  double d = xf_head_dim(m);
  return (xf_attention_widths_t){d, d, m->kv_heads};
}

double xf_mtp_extra_params(const model_cfg_t *m, int tp) {
  double h = m->hidden;
  return 2 * h * h / tp + 2 * h;
}

bool xf_mtp_is_moe(const model_cfg_t *m) {
  return xf_layer_is_moe(m, m->layers);
}

xf_params_t xf_layer_params(const model_cfg_t *m, const xf_split_t *s, bool moe) {
  double h = m->hidden, mats = xf_mlp_mats(m);
  xf_params_t p = {0};
  p.attention = attention_params(m, s->tp);
  p.norms = 2 * h;
  if (m->has_mla)
    p.norms += m->mla.kv_lora_rank + m->mla.q_lora_rank;
  if (!moe) {
    p.mlp = mats * h * m->ffn_hidden / s->tp;
    return p;
  }
  const moe_cfg_t *x = &m->moe;
  p.experts = routed_params(m, s);
  p.router = h * x->experts;
  p.mlp = x->shared_experts * mats * h * x->expert_ffn_hidden / s->tp;
  if (x->shortcut) { /* a second attention block; a dense MLP after each */
    p.attention *= 2;
    p.norms *= 2;
    p.mlp += 2 * mats * h * m->ffn_hidden / s->tp;
  }
  return p;
}

double xf_params_total(const xf_params_t *p) {
  return p->attention + (p->experts + p->router + p->mlp) + p->norms;
}

double xf_vocab_params(const model_cfg_t *m, int tp) {
  return (double)m->hidden * m->vocab / tp;
}

double xf_stage_params(const model_cfg_t *m, const xf_split_t *s, int dense, int moe,
                       bool first_stage, bool last_stage, bool norms) {
  double total = 0;
  for (int kind = 0; kind < 2; kind++) {
    int n = kind ? moe : dense;
    if (n == 0)
      continue;
    xf_params_t p = xf_layer_params(m, s, kind);
    if (!norms)
      p.norms = 0;
    total += n * xf_params_total(&p);
  }
  /* one matrix when the tied embedding and LM head are on one stage */
  int vocab_mats = first_stage + (last_stage && !(first_stage && m->tied_embeddings));
  total += xf_vocab_params(m, s->tp) * vocab_mats;
  if (first_stage && m->position == POSITION_LEARNED) /* not split over TP in Megatron */
    total += (double)m->seq_len * m->hidden;
  return total;
}

int xf_moe_layers(const model_cfg_t *m) {
  int dense = m->has_moe ? m->moe.dense_layers : m->layers;
  return m->layers > dense ? m->layers - dense : 0;
}

double xf_model_params(const model_cfg_t *m) {
  int moe = xf_moe_layers(m);
  return xf_stage_params(m, &XF_WHOLE, m->layers - moe, moe, true, true, true) + m->hidden;
}

double xf_active_params(const model_cfg_t *m) {
  double total = xf_model_params(m) - xf_vocab_params(m, 1) * !m->tied_embeddings;
  if (!m->has_moe)
    return total;
  xf_params_t p = xf_layer_params(m, &XF_WHOLE, true);
  double idle = p.experts * (m->moe.experts - xf_routed_k(m)) / m->moe.experts;
  return total - xf_moe_layers(m) * idle;
}

/* ---- matmuls ---- */

static int push(xf_matmul_t *out, int n, xf_mm_t kind, double cols, double k, double batch,
                double per_token) {
  out[n] = (xf_matmul_t){kind, cols, k, batch, per_token};
  return n + 1;
}

static int attention_matmuls(const model_cfg_t *m, int tp, xf_matmul_t *out) {
  double h = m->hidden, hl = xf_heads(m, tp);
  int n = 0;
  if (!m->has_mla) {
    double d = xf_head_dim(m);
    n = push(out, n, XF_MM_QKV, (hl + 2.0 * xf_kv_heads(m, tp)) * d, h, 1, 1);
    return push(out, n, XF_MM_O, h, hl * d, 1, 1);
  }
  const mla_cfg_t *a = &m->mla;
  if (a->q_lora_rank) {
    n = push(out, n, XF_MM_Q_A, a->q_lora_rank, h, 1, 1);
    n = push(out, n, XF_MM_Q_B, hl * mla_qk(a), a->q_lora_rank, 1, 1);
  } else {
    n = push(out, n, XF_MM_Q, hl * mla_qk(a), h, 1, 1);
  }
  n = push(out, n, XF_MM_KV_A, (double)a->kv_lora_rank + a->qk_rope_head_dim, h, 1, 1);
  /* the key and value up-projections absorbed per head: the same FLOPs per
   * token as kv_b (latent -> heads x (nope + v)) */
  n = push(out, n, XF_MM_K_B, a->kv_lora_rank, a->qk_nope_head_dim, hl, hl);
  n = push(out, n, XF_MM_V_B, a->v_head_dim, a->kv_lora_rank, hl, hl);
  return push(out, n, XF_MM_O, h, hl * a->v_head_dim, 1, 1);
}

/* Up (with the gate) and down projections of an MLP `width` columns wide on
 * this rank, none when it has no column there. */
static int mlp_matmuls(const model_cfg_t *m, double width, xf_mm_t up, double batch,
                       double per_token, xf_matmul_t *out, int n) {
  if (width < 1)
    return n;
  double gated = xf_gated(m) ? 2 : 1;
  n = push(out, n, up, gated * width, m->hidden, batch, per_token);
  return push(out, n, (xf_mm_t)(up + 1), m->hidden, width, batch, per_token);
}

int xf_layer_matmuls(const model_cfg_t *m, const xf_split_t *s, bool moe, int blocks,
                     xf_matmul_t *out) {
  int n = 0;
  if (blocks & XF_BLOCK_ATTENTION)
    n = attention_matmuls(m, s->tp, out);
  const moe_cfg_t *x = &m->moe;
  if ((blocks & XF_BLOCK_MLP) && !moe)
    n = mlp_matmuls(m, (double)m->ffn_hidden / s->tp, XF_MM_UP, 1, 1, out, n);
  if ((blocks & XF_BLOCK_MLP) && moe) {
    n = mlp_matmuls(m, (double)x->shared_experts * x->expert_ffn_hidden / s->tp, XF_MM_UP, 1, 1,
                    out, n);
    n = push(out, n, XF_MM_ROUTER, x->experts, m->hidden, 1, 1);
  }
  if ((blocks & XF_BLOCK_EXPERTS) && moe) {
    double local = ceil((double)x->experts / s->ep);
    double width = ceil((double)x->expert_ffn_hidden * s->ep / s->expert_ranks);
    n = mlp_matmuls(m, width, XF_MM_EXPERT_UP, local, local * xf_routed_k(m) / x->experts, out, n);
  }
  return n;
}

double xf_matmul_flops(const xf_matmul_t *mm) {
  return 2 * mm->n * mm->k * mm->per_token;
}

static double matmul_flops(const model_cfg_t *m, bool moe, int blocks) {
  xf_matmul_t mms[XF_MAX_MATMULS];
  int n = xf_layer_matmuls(m, &XF_WHOLE, moe, blocks, mms);
  double flops = 0;
  for (int i = 0; i < n; i++)
    flops += xf_matmul_flops(&mms[i]);
  return flops;
}

double xf_layer_matmul_flops(const model_cfg_t *m, bool moe) {
  double flops = matmul_flops(m, moe, XF_BLOCK_ATTENTION | XF_BLOCK_MLP | XF_BLOCK_EXPERTS);
  if (xf_attention_blocks(m, moe) == 2) /* a second attention block; a dense MLP after each */
    flops += matmul_flops(m, false, XF_BLOCK_ATTENTION | XF_BLOCK_MLP) +
             matmul_flops(m, false, XF_BLOCK_MLP);
  return flops;
}

double xf_attention_flops(const model_cfg_t *m, double ctx) {
  /* scores (q . k) and the weighted values, 2 FLOPs per multiply-add */
  xf_attention_widths_t w = xf_attention_widths(m);
  return 2.0 * ctx * m->heads * (w.qk + w.v);
}

/* ---- activations ---- */

xf_act_bytes_t xf_layer_activation_bytes(const model_cfg_t *m, bool moe, bool scores_kept,
                                         double seq) {
  /* per head widths of queries and keys (qk) and values (v), the key/value heads */
  xf_attention_widths_t w = xf_attention_widths(m);
  double h = m->hidden, heads = m->heads;
  double f = moe ? (xf_routed_k(m) + m->moe.shared_experts) * m->moe.expert_ffn_hidden
                 : m->ffn_hidden;
  bool dropout = m->dropout > 0;
  xf_act_bytes_t a;
  /* the norms' inputs (2 x 2h), the QKV and first MLP linear's inputs (2h
   * each), the two dropout masks (1 byte per element each) */
  a.sequence = 4 * h + 2 * h + 2 * h + (dropout ? 2 * h : 0);
  /* MLA: its latents' norm inputs and the up projections' inputs (2 bytes each
   * of q_lora_rank and kv_lora_rank); counted with the sequence part [A]: the
   * down projections run on every rank of the tensor-parallel group */
  if (m->has_mla)
    a.sequence += 4.0 * (m->mla.q_lora_rank + m->mla.kv_lora_rank);
  /* queries and keys 2 qk each per head (keys per key/value head), values 2 v
   * per key/value head, the output projection's input 2 v per head; the MLP's
   * activation inputs and outputs (GeLU: 4f, gated: its two inputs and its
   * output, 6f) */
  a.tp_split = 2 * heads * w.qk + 2 * (double)w.kv_heads * (w.qk + w.v) + 2 * heads * w.v +
               (xf_gated(m) ? 6 : 4) * f;
  /* the attention scores unless fused or recomputed: softmax output (2 bytes
   * per score), with dropout also its mask and output (5 in all) */
  if (scores_kept)
    a.tp_split += (dropout ? 5.0 : 2.0) * m->heads * seq;
  if (xf_attention_blocks(m, moe) == 2) { /* a second attention block; a dense MLP after each */
    xf_act_bytes_t d = xf_layer_activation_bytes(m, false, scores_kept, seq);
    a.sequence += d.sequence;
    a.tp_split += d.tp_split + (xf_gated(m) ? 6 : 4) * m->ffn_hidden;
  }
  return a;
}
