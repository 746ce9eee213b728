/* test_transformer.c - the shared transformer description (workloads/transformer.h):
 * parameter counts of published models, weights per rank under a split, and
 * FLOPs per token against the parameters they multiply. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "suites.h"
#include "transformer.h"

/* A dense decoder: SwiGLU, RMSNorm, rotary, untied (the Llama family). */
static model_cfg_t llama(int layers, int hidden, int heads, int kv_heads, int ffn, int vocab) {
  model_cfg_t m;
  memset(&m, 0, sizeof m);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.ffn_hidden = ffn;
  m.vocab = vocab;
  m.seq_len = 4096;
  m.activation = ACTIVATION_SWIGLU;
  m.norm = NORM_RMSNORM;
  m.position = POSITION_ROPE;
  return m;
}

static model_cfg_t gpt3_175b(void) {
  model_cfg_t m = llama(96, 12288, 96, 96, 4 * 12288, 50257);
  m.seq_len = 2048;
  m.activation = ACTIVATION_GELU;
  m.norm = NORM_LAYERNORM;
  m.position = POSITION_LEARNED;
  m.tied_embeddings = true;
  return m;
}

/* DeepSeek-V3's latent attention (LongCat-Flash's is the same). */
static mla_cfg_t deepseek_mla(void) {
  return (mla_cfg_t){.q_lora_rank = 1536,
                     .kv_lora_rank = 512,
                     .qk_nope_head_dim = 128,
                     .qk_rope_head_dim = 64,
                     .v_head_dim = 128};
}

/* DeepSeek-V3 as configs/workloads/serve-deepseek-v3-pd.json gives it. */
static model_cfg_t deepseek_v3(void) {
  model_cfg_t m = llama(61, 7168, 128, 128, 18432, 129280);
  m.has_moe = true;
  m.moe = (moe_cfg_t){.experts = 256,
                      .top_k = 8,
                      .expert_ffn_hidden = 2048,
                      .capacity_factor = 1,
                      .shared_experts = 1,
                      .dense_layers = 3,
                      .groups = 8,
                      .top_groups = 4};
  m.has_mla = true;
  m.mla = deepseek_mla();
  return m;
}

/* LongCat-Flash as MindSpeed-LLM's pretrain_longcat_flash_560b script gives
 * it: 28 shortcut MoE layers of MLA, 512 experts of 2048 and 256
 * zero-computation experts, top 12; 131,072 tokens, untied. */
static model_cfg_t longcat_flash(void) {
  model_cfg_t m = llama(28, 6144, 64, 64, 12288, 131072);
  m.has_moe = true;
  m.moe = (moe_cfg_t){.experts = 512,
                      .top_k = 12,
                      .expert_ffn_hidden = 2048,
                      .capacity_factor = 1,
                      .zero_experts = 256,
                      .shortcut = true};
  m.has_mla = true;
  m.mla = deepseek_mla();
  return m;
}

static void assert_within(double got, double want, double rel) {
  CU_ASSERT(fabs(got - want) <= rel * want);
  if (fabs(got - want) > rel * want)
    fprintf(stderr, "\n  got %.6g, expected %.6g within %.0f%%\n", got, want, rel * 100);
}

static void test_published_parameter_counts(void) {
  model_cfg_t l2 = llama(32, 4096, 32, 32, 11008, 32000);
  model_cfg_t l3 = llama(32, 4096, 32, 8, 14336, 128256);
  model_cfg_t g3 = gpt3_175b(), ds = deepseek_v3();
  assert_within(xf_model_params(&l2), 6.74e9, 0.01);
  assert_within(xf_model_params(&l3), 8.03e9, 0.01);
  assert_within(xf_model_params(&g3), 175e9, 0.01);
  assert_within(xf_model_params(&ds), 671e9, 0.01);
  /* the report's "37B activated" is given to the whole billion, so it stands for
   * [36.5B, 37.5B): the bound is that precision (0.5 / 37 = 1.35%), not a
   * model error; the main model counts 36.6B */
  assert_within(xf_active_params(&ds), 37e9, 0.5 / 37);
  /* LongCat-Flash's technical report (arXiv 2509.01322): 560B in all, about 27B
   * activated on average (18.6B to 31.3B as the zero experts take more or
   * fewer picks); the average is the zero experts' share in proportion, 8 of
   * 12 picks routed */
  model_cfg_t lc = longcat_flash();
  assert_within(xf_model_params(&lc), 560e9, 0.01);
  assert_within(xf_active_params(&lc), 27e9, 0.5 / 27);
  /* exactly, as Meta's checkpoint counts: 32 x 202,383,360 + 2 x 131,072,000 + 4096 */
  CU_ASSERT_EQUAL(xf_model_params(&l2), 6738415616.0);
}

static void test_layer_kinds(void) {
  model_cfg_t ds = deepseek_v3(), l2 = llama(32, 4096, 32, 32, 11008, 32000);
  CU_ASSERT_FALSE(xf_layer_is_moe(&ds, 2));
  CU_ASSERT_TRUE(xf_layer_is_moe(&ds, 3));
  CU_ASSERT_FALSE(xf_layer_is_moe(&l2, 10));
  CU_ASSERT_EQUAL(xf_moe_layers(&ds), 58);
  CU_ASSERT_EQUAL(xf_moe_layers(&l2), 0);
}

/* Split over tp (and experts over ep), a stage's ranks hold the whole layer:
 * what is split sums back, what is kept whole (norms, router, MLA's
 * down-projections) counts once per rank. */
static void test_split_sums_back(void) {
  model_cfg_t l3 = llama(32, 4096, 32, 8, 14336, 128256);
  xf_split_t tp8 = {8, 1, 8};
  xf_params_t whole = xf_layer_params(&l3, &XF_WHOLE, false);
  xf_params_t rank = xf_layer_params(&l3, &tp8, false);
  CU_ASSERT_EQUAL(rank.attention * 8, whole.attention);
  CU_ASSERT_EQUAL(rank.mlp * 8, whole.mlp);
  CU_ASSERT_EQUAL(rank.norms, whole.norms);
  /* 16 ranks of tp: a rank keeps a whole key/value head of the 8 */
  xf_split_t tp16 = {16, 1, 16};
  CU_ASSERT_EQUAL(xf_kv_heads(&l3, 16), 1);
  CU_ASSERT_EQUAL(xf_layer_params(&l3, &tp16, false).attention,
                  4096.0 * (2 + 2 * 1) * 128 + 2 * 128 * 4096.0);
  model_cfg_t ds = deepseek_v3();
  /* training: EP 32 over tp 2 (expert width split over tp); serving: 64 ranks, EP 32 */
  xf_split_t train = {2, 32, 64}, serve = {1, 32, 64};
  xf_params_t all = xf_layer_params(&ds, &XF_WHOLE, true);
  CU_ASSERT_EQUAL(xf_layer_params(&ds, &train, true).experts * 64, all.experts);
  CU_ASSERT_EQUAL(xf_layer_params(&ds, &serve, true).experts * 64, all.experts);
  CU_ASSERT_EQUAL(xf_layer_params(&ds, &train, true).router, all.router);
  /* EP over more ranks than experts: one whole expert per rank */
  xf_split_t wide = {1, 320, 320};
  CU_ASSERT_EQUAL(xf_layer_params(&ds, &wide, true).experts, 3.0 * 7168 * 2048);
}

/* A stage's weights: the layers plus the embedding first, the LM head last,
 * one matrix when tied on one stage, the learned position table first. */
static void test_stage_params(void) {
  model_cfg_t g3 = gpt3_175b(), l2 = llama(32, 4096, 32, 32, 11008, 32000);
  xf_params_t layer = xf_layer_params(&l2, &XF_WHOLE, false);
  double lp = xf_params_total(&layer), vocab = xf_vocab_params(&l2, 1);
  CU_ASSERT_EQUAL(xf_stage_params(&l2, &XF_WHOLE, 16, 0, true, false, true), 16 * lp + vocab);
  CU_ASSERT_EQUAL(xf_stage_params(&l2, &XF_WHOLE, 16, 0, false, true, true), 16 * lp + vocab);
  CU_ASSERT_EQUAL(xf_stage_params(&l2, &XF_WHOLE, 32, 0, true, true, true), 32 * lp + 2 * vocab);
  CU_ASSERT_EQUAL(xf_stage_params(&l2, &XF_WHOLE, 32, 0, true, true, false),
                  32 * (lp - layer.norms) + 2 * vocab);
  xf_params_t g3_layer = xf_layer_params(&g3, &XF_WHOLE, false);
  double g3_layers = 96 * xf_params_total(&g3_layer);
  CU_ASSERT_EQUAL(xf_stage_params(&g3, &XF_WHOLE, 96, 0, true, true, true),
                  g3_layers + xf_vocab_params(&g3, 1) + 2048.0 * 12288);
}

/* Forward matmul FLOPs per token are twice the parameters a token multiplies
 * (MLA's absorbed projections included), and the attention core 4 s h. */
static void test_flops_per_token(void) {
  model_cfg_t l3 = llama(32, 4096, 32, 8, 14336, 128256), ds = deepseek_v3();
  xf_params_t p = xf_layer_params(&l3, &XF_WHOLE, false);
  CU_ASSERT_EQUAL(xf_layer_matmul_flops(&l3, false), 2 * (p.attention + p.mlp));
  xf_params_t d = xf_layer_params(&ds, &XF_WHOLE, true);
  double active = d.attention + d.mlp + d.router + d.experts * 8 / 256;
  CU_ASSERT_EQUAL(xf_layer_matmul_flops(&ds, true), 2 * active);
  CU_ASSERT_EQUAL(xf_attention_flops(&l3, 4096), 4.0 * 4096 * 4096);
  xf_matmul_t mm[XF_MAX_MATMULS];
  int n = xf_layer_matmuls(&ds, &XF_WHOLE, true, XF_BLOCK_ATTENTION, mm);
  CU_ASSERT_EQUAL(n, 6); /* q_a, q_b, kv_a, k_b, v_b, o */
  CU_ASSERT_EQUAL(mm[3].kind, XF_MM_K_B);
  CU_ASSERT_EQUAL(mm[3].batch, 128);
  n = xf_layer_matmuls(&ds, &(xf_split_t){1, 32, 32}, true, XF_BLOCK_EXPERTS, mm);
  CU_ASSERT_EQUAL(n, 2);
  CU_ASSERT_EQUAL(mm[0].batch, 8); /* 256 experts over 32 ranks */
  CU_ASSERT_EQUAL(mm[0].n, 2 * 2048);
}

/* Korthikanti et al. 2022: a GPT layer with dropout keeps 34 h + 5 a s bytes
 * per token (scores kept), 34 h with them fused. */
static void test_activation_bytes(void) {
  model_cfg_t g3 = gpt3_175b();
  g3.dropout = 0.1;
  xf_act_bytes_t a = xf_layer_activation_bytes(&g3, false, true, 2048);
  CU_ASSERT_EQUAL(a.sequence + a.tp_split, 34.0 * 12288 + 5.0 * 96 * 2048);
  a = xf_layer_activation_bytes(&g3, false, false, 2048);
  CU_ASSERT_EQUAL(a.sequence + a.tp_split, 34.0 * 12288);
}

/* model.head_dim apart from hidden / heads (Qwen3-32B: hidden 5120, 64 heads
 * of 128, 8 key/value heads): the query and output projections are heads x
 * head_dim wide, the key and value ones kv_heads x head_dim, and the attention
 * core, rope and activations follow; head_dim equal to hidden / heads changes
 * nothing. */
static void test_head_dim(void) {
  model_cfg_t q = llama(64, 5120, 64, 8, 25600, 151936);
  q.head_dim = 128;
  double h = 5120, qw = 64 * 128, kvw = 8 * 128;
  CU_ASSERT_EQUAL(xf_head_dim(&q), 128);
  xf_params_t p = xf_layer_params(&q, &XF_WHOLE, false);
  CU_ASSERT_EQUAL(p.attention, h * (qw + 2 * kvw) + qw * h);
  /* Qwen3's checkpoint counts 32,762,123,264: these plus its q/k norms (64 x 256) */
  CU_ASSERT_EQUAL(xf_model_params(&q),
                  64 * (p.attention + 3 * h * 25600 + 2 * h) + 2 * h * 151936 + h);
  CU_ASSERT_EQUAL(xf_model_params(&q) + 64 * 256.0, 32762123264.0);
  xf_matmul_t mm[XF_MAX_MATMULS];
  int n = xf_layer_matmuls(&q, &(xf_split_t){8, 1, 8}, false, XF_BLOCK_ATTENTION, mm);
  CU_ASSERT_EQUAL(n, 2);
  CU_ASSERT_EQUAL(mm[0].n, (qw + 2 * kvw) / 8); /* QKV on one of 8 ranks */
  CU_ASSERT_EQUAL(mm[0].k, h);
  CU_ASSERT_EQUAL(mm[1].n, h); /* O: heads x head_dim back to hidden */
  CU_ASSERT_EQUAL(mm[1].k, qw / 8);
  CU_ASSERT_EQUAL(xf_layer_matmul_flops(&q, false), 2 * (p.attention + p.mlp));
  CU_ASSERT_EQUAL(xf_attention_flops(&q, 4096), 4.0 * 4096 * 64 * 128);
  xf_act_bytes_t a = xf_layer_activation_bytes(&q, false, false, 4096);
  CU_ASSERT_EQUAL(a.tp_split, 2 * qw + 4 * kvw + 2 * qw + 6 * 25600.0);
  CU_ASSERT_EQUAL(a.sequence, 8 * h);
  /* the same width as hidden / heads: the same numbers as without head_dim */
  model_cfg_t l3 = llama(32, 4096, 32, 8, 14336, 128256), l3d = l3;
  l3d.head_dim = 128;
  CU_ASSERT_EQUAL(xf_model_params(&l3d), xf_model_params(&l3));
  CU_ASSERT_EQUAL(xf_layer_matmul_flops(&l3d, false), xf_layer_matmul_flops(&l3, false));
  CU_ASSERT_EQUAL(xf_attention_flops(&l3d, 4096), xf_attention_flops(&l3, 4096));
  CU_ASSERT_EQUAL(xf_layer_activation_bytes(&l3d, false, true, 4096).tp_split,
                  xf_layer_activation_bytes(&l3, false, true, 4096).tp_split);
}

CU_TestInfo transformer_tests[] = {
    {"parameters of Llama-2-7B, Llama-3-8B, GPT-3 175B, DeepSeek-V3 within 1%",
     test_published_parameter_counts},
    {"dense and MoE layers", test_layer_kinds},
    {"weights split over tp and ep sum back", test_split_sums_back},
    {"a stage's weights: layers, embedding, LM head, position table", test_stage_params},
    {"FLOPs per token: twice the parameters a token multiplies", test_flops_per_token},
    {"activation bytes: Korthikanti's 34 h + 5 a s", test_activation_bytes},
    {"head_dim apart from hidden / heads: projections, FLOPs, activations", test_head_dim},
    CU_TEST_INFO_NULL,
};
