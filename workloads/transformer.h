/* transformer.h - one description of a decoder-only transformer, shared by
 * training (train_gen.c) and serving (sim/serve/serve_cost.c): its parameters,
 * the weights one rank holds under a TP / PP / EP split, the matmuls of a
 * layer with their FLOPs per token, and the activation bytes a layer keeps for
 * its backward.
 *
 * The shape is model_cfg_t (workload.h), as the `model` section of a training
 * or a serving workload gives it. What is modelled: a layer is a norm,
 * attention (grouped-query, or DeepSeek's multi-head latent attention with its
 * low-rank query and key/value projections), a norm, and an MLP (GeLU, or a
 * gated SwiGLU or GeGLU with three matrices) or a MoE block (router, routed
 * experts, shared experts every token passes); the first moe.dense_layers
 * layers of a MoE model keep a dense MLP of ffn_hidden. Around the layers: the
 * embedding, the LM head (one matrix when tied) and a learned position table
 * where the model has one. Multi-token prediction (model.mtp_layers, DeepSeek-V3)
 * adds modules after the last layer, each a norm of the hidden state and of the
 * next token's embedding, a projection of the two (2 hidden -> hidden), one
 * layer of the model's last kind and the shared LM head; a model's total
 * (xf_model_params: DeepSeek-V3's 671B) leaves them out, as its report does.
 *
 * LongCat-Flash's MoE layers (model.moe.shortcut) hold two attention blocks
 * and two dense MLPs beside their MoE block; zero-computation experts
 * (model.moe.zero_experts) take a share of each token's picks and cost
 * nothing but their all-to-alls.
 *
 * Sliding-window attention (model.sliding_window_tokens) narrows what a query
 * of the windowed layers sees; the weights are unchanged.
 *
 * Not modelled: biases, the final norm's scale in per-rank weights (a model's
 * total counts it), vision or other encoders, expert load imbalance (FLOPs take
 * routing as even), attention FLOPs below the matmuls (softmax, masks).
 * Nothing here knows about the chip, the trace or SimGrid. */
#ifndef NPUSIM_TRANSFORMER_H
#define NPUSIM_TRANSFORMER_H

#include <stdbool.h>

#include "workload.h"

/* How one copy of the model's weights is split over ranks. Attention heads,
 * a dense MLP, the shared experts and the vocabulary are split over tp ranks
 * (key/value heads: a rank keeps whole ones, so ceil(kv_heads / tp));
 * MLA's down-projections (q_a, kv_a) are kept whole on every rank. The routed
 * experts of a layer are spread over ep ranks, ceil(experts / ep) each, and
 * each expert's width over expert_ranks / ep ranks: expert_ranks is ep x tp in
 * training (Megatron splits an expert over the TP group) and the tp x dp ranks
 * of a serving instance. */
typedef struct {
  int tp;
  int ep;
  int expert_ranks;
} xf_split_t;

/* No split: the whole model. */
#define XF_WHOLE ((xf_split_t){1, 1, 1})

/* One layer's parameters on one rank, elements, by block. */
typedef struct {
  double attention; /* q, k, v and output projections (MLA: q_a, q_b, kv_a, kv_b, o) */
  double mlp;       /* the dense MLP, or a MoE layer's shared experts */
  double router;    /* MoE: the gate, hidden x experts, on every rank */
  double experts;   /* MoE: the routed experts this rank holds */
  double norms;     /* the two norms' scales (MLA adds its latent norms) */
} xf_params_t;

/* The matmuls of one layer on one rank, in the order a forward runs them. */
typedef enum {
  XF_MM_QKV,       /* fused query, key and value projection */
  XF_MM_Q,         /* MLA without query compression: hidden -> heads x qk */
  XF_MM_Q_A,       /* MLA: hidden -> q_lora_rank */
  XF_MM_Q_B,       /* MLA: q_lora_rank -> heads x qk */
  XF_MM_KV_A,      /* MLA: hidden -> kv_lora_rank + rope (the cached latent) */
  XF_MM_K_B,       /* MLA, absorbed: per head, the latent against the no-rope key */
  XF_MM_V_B,       /* MLA, absorbed: per head, the latent to the value */
  XF_MM_O,         /* output projection */
  XF_MM_UP,        /* dense MLP or shared experts: up (and gate) */
  XF_MM_DOWN,      /* dense MLP or shared experts: down */
  XF_MM_ROUTER,    /* MoE gate */
  XF_MM_EXPERT_UP, /* routed experts: up (and gate), one matrix per local expert */
  XF_MM_EXPERT_DOWN,
  XF_MM_COUNT
} xf_mm_t;

/* A matmul of one layer on one rank: n outputs from k inputs, `batch`
 * matrices of that shape (heads of an absorbed MLA projection, local experts),
 * `per_token` of which one token passes through (the heads: all of them; the
 * experts: top_k share of them). */
typedef struct {
  xf_mm_t kind;
  double n, k;
  double batch;
  double per_token;
} xf_matmul_t;

#define XF_MAX_MATMULS 12

/* Bytes per token one layer keeps for its backward in 16-bit training: the
 * part inside the tensor-parallel region (to divide by tp) and the part on the
 * full sequence (divided only with sequence parallelism). */
typedef struct {
  double tp_split, sequence;
} xf_act_bytes_t;

/* Whether layer `layer` (0-based, of the whole model) has a MoE block. */
bool xf_layer_is_moe(const model_cfg_t *m, int layer);

/* Whether layer `layer` (0-based; past the last: the multi-token-prediction
 * modules', of the last layer's kind) attends through a sliding window, and
 * the keys one of its queries sees at most in a sequence of seq tokens. */
bool xf_layer_windowed(const model_cfg_t *m, int layer);
double xf_layer_context(const model_cfg_t *m, int layer, double seq);

/* Routed experts one token reaches on average: top_k, less the share of its
 * picks that go to zero-computation experts (model.moe.zero_experts, picked
 * in proportion to their number [A]). */
double xf_routed_k(const model_cfg_t *m);

/* Attention blocks (each with its dense MLP after it where the layer is a
 * shortcut MoE layer) of a layer: 2 in LongCat-Flash's MoE layers, else 1. */
int xf_attention_blocks(const model_cfg_t *m, bool moe);

/* The model's MoE layers (the others keep a dense MLP). */
int xf_moe_layers(const model_cfg_t *m);

/* Attention heads, key/value heads and head width (model.head_dim where set,
 * else hidden / heads) on one rank of tp. */
int xf_heads(const model_cfg_t *m, int tp);
int xf_kv_heads(const model_cfg_t *m, int tp);
int xf_head_dim(const model_cfg_t *m);

/* Whether the MLP is gated (SwiGLU, GeGLU: gate and up, then down). */
bool xf_gated(const model_cfg_t *m);

/* Matrices of the MLP: 3 gated, 2 otherwise. */
double xf_mlp_mats(const model_cfg_t *m);

/* Per-head widths of the attention core as training runs it: queries and keys
 * `qk` wide, values `v` wide, over `kv_heads` key/value heads of the model.
 * MLA is not absorbed in training (Megatron-Core rebuilds every head's key
 * and value from the latent): qk_nope + qk_rope and v_head_dim, a key/value
 * head per query head; otherwise the head width for both. */
typedef struct {
  double qk, v;
  int kv_heads;
} xf_attention_widths_t;
xf_attention_widths_t xf_attention_widths(const model_cfg_t *m);

/* One layer's parameters on one rank of the split, and their sum. */
xf_params_t xf_layer_params(const model_cfg_t *m, const xf_split_t *s, bool moe);
double xf_params_total(const xf_params_t *p);

/* The embedding or the LM head on one rank of tp. */
double xf_vocab_params(const model_cfg_t *m, int tp);

/* One multi-token-prediction module's parameters on one rank of the split
 * beside its layer's: the projection (2 hidden -> hidden, split over tp [A]:
 * Megatron-Core's eh_proj is column-parallel) and the two norms' scales. */
double xf_mtp_extra_params(const model_cfg_t *m, int tp);

/* Whether the multi-token-prediction modules' layer has a MoE block (it does
 * where the model's last layer does: DeepSeek-V3's MTP layer is a MoE layer). */
bool xf_mtp_is_moe(const model_cfg_t *m);

/* Parameters a pipeline stage's rank holds: `dense` dense-MLP and `moe` MoE
 * layers (with their norms when `norms`: serving's weights leave the scales
 * out), the embedding (and the learned position table, not split) on the first
 * stage, the LM head on the last unless it is the embedding (tied, on one
 * stage). */
double xf_stage_params(const model_cfg_t *m, const xf_split_t *s, int dense, int moe,
                       bool first_stage, bool last_stage, bool norms);

/* The whole model's parameters (final norm included), and those one token's
 * forward multiplies by: the routed experts it reaches (top_k) in place of all,
 * the embedding table (a lookup) left out. */
double xf_model_params(const model_cfg_t *m);
double xf_active_params(const model_cfg_t *m);

/* Blocks of a layer whose matmuls xf_layer_matmuls lists (or them together). */
enum {
  XF_BLOCK_ATTENTION = 1, /* the projections */
  XF_BLOCK_MLP = 2,       /* the dense MLP, or a MoE layer's shared experts and router */
  XF_BLOCK_EXPERTS = 4    /* a MoE layer's routed experts */
};

/* The matmuls of the given blocks of one layer on one rank of the split, in
 * the order above (shared experts before the router), into out (at most
 * XF_MAX_MATMULS); returns their number. Widths per rank are rounded up to
 * whole columns where they split unevenly (an expert's width); a block with no
 * columns on the rank (no shared experts) lists nothing. */
int xf_layer_matmuls(const model_cfg_t *m, const xf_split_t *s, bool moe, int blocks,
                     xf_matmul_t *out);

/* Forward FLOPs per token of a matmul: 2 n k per matrix the token passes. */
double xf_matmul_flops(const xf_matmul_t *mm);

/* Forward FLOPs per token of one whole layer's matmuls (unsplit), and of its
 * attention core at a context of ctx tokens (scores and values, causal
 * masking not subtracted). */
double xf_layer_matmul_flops(const model_cfg_t *m, bool moe);
double xf_attention_flops(const model_cfg_t *m, double ctx);

/* Activation bytes per token of one layer (Korthikanti et al. 2022, Table 2,
 * term by term): with dropout when model.dropout > 0, the attention scores
 * kept unless scores_kept is false (fused or recomputed), at seq tokens per
 * attention. */
xf_act_bytes_t xf_layer_activation_bytes(const model_cfg_t *m, bool moe, bool scores_kept,
                                         double seq);

#endif
