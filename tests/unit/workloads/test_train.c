/* test_train.c - the training generator: every parallel plan yields programs
 * the trace checker accepts, shared per pipeline stage; FLOPs and memory follow
 * the published formulas. The step-time laws need a replay each, and SimGrid
 * runs one simulation per process: they are in train_e2e.sh. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline.h"
#include "replay.h"
#include "suites.h"
#include "test_util.h"
#include "train_gen.h"
#include "transformer.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* A small dense model: 8 layers, 8 heads (4 key/value), 1024 tokens. */
static const char *const small_model =
    "\"model\": {\"name\": \"tiny\", \"layers\": 8, \"hidden\": 1024, \"heads\": 8, "
    "\"kv_heads\": 4, \"ffn_hidden\": 2816, \"vocab\": 32000, \"seq_len\": 1024, "
    "\"activation\": \"swiglu\", \"norm\": \"rmsnorm\"}";

static const char *const small_moe =
    "\"model\": {\"name\": \"tiny-moe\", \"layers\": 4, \"hidden\": 1024, \"heads\": 8, "
    "\"ffn_hidden\": 2816, \"vocab\": 32000, \"seq_len\": 1024, \"activation\": \"swiglu\", "
    "\"moe\": {\"experts\": 8, \"top_k\": 2, \"expert_ffn_hidden\": 1408, "
    "\"shared_experts\": 1}}";

/* small_moe shaped as DeepSeek-V3 is: latent attention (low-rank queries, a
 * key/value latent), a dense first layer, a multi-token-prediction module. */
static const char *const small_mla =
    "\"model\": {\"name\": \"tiny-mla\", \"layers\": 4, \"hidden\": 1024, \"heads\": 8, "
    "\"ffn_hidden\": 2816, \"vocab\": 32000, \"seq_len\": 1024, \"activation\": \"swiglu\", "
    "\"norm\": \"rmsnorm\", \"moe\": {\"experts\": 8, \"top_k\": 2, \"expert_ffn_hidden\": 1408, "
    "\"shared_experts\": 1, \"dense_layers\": 1}, \"mla\": {\"q_lora_rank\": 384, "
    "\"kv_lora_rank\": 128, \"qk_nope_head_dim\": 64, \"qk_rope_head_dim\": 32, "
    "\"v_head_dim\": 64}, \"mtp_layers\": 1}";

static workload_cfg_t load_workload(const char *model, const char *parallel,
                                    const char *training) {
  char text[2048];
  snprintf(text, sizeof text, "{%s, \"parallel\": {%s}, \"training\": {%s}}", model, parallel,
           training);
  workload_cfg_t w;
  const char *err = load_text(CONFIG_WORKLOAD, WORKLOADS_DIR, text, NULL, &w);
  CU_ASSERT_STRING_EQUAL(err, "");
  if (*err)
    fprintf(stderr, "\n  %s\n", err);
  return w;
}

static workload_cfg_t shipped_workload(const char *name, const char *const *sets) {
  char text[256];
  snprintf(text, sizeof text, "{\"extends\": \"%s\"}", name);
  workload_cfg_t w;
  CU_ASSERT_STRING_EQUAL(load_text(CONFIG_WORKLOAD, WORKLOADS_DIR, text, sets, &w), "");
  return w;
}

/* Generates the programs of one step; returns how many there are. */
static int generate(const workload_cfg_t *w, train_info_t *info) {
  trace_t t;
  npu_err_t err = {""};
  CU_ASSERT_FATAL(train_generate(w, &replay_vocab, 8, &t, info, &err) == 0);
  int programs = t.nprograms;
  trace_free(&t);
  return programs;
}

/* Generates, then round-trips through the trace file format, whose reader
 * checks matching sends, collective sizes, dependencies and cycles. Returns the
 * number of programs. */
static int generate_and_check(const workload_cfg_t *w, train_info_t *info) {
  trace_t t, back;
  npu_err_t err = {""};
  CU_ASSERT_FATAL(train_generate(w, &replay_vocab, 8, &t, info, &err) == 0);
  int programs = t.nprograms;
  const char *dir = make_temp_dir();
  char path[256];
  snprintf(path, sizeof path, "%s/step.json.gz", dir);
  CU_ASSERT(trace_write(&t, &replay_vocab, path, &err) == 0);
  if (trace_read(path, &replay_vocab, &back, &err) == 0)
    trace_free(&back);
  CU_ASSERT_STRING_EQUAL(err.msg, "");
  if (*err.msg)
    fprintf(stderr, "\n  %s\n", err.msg);
  remove_temp_dir(dir);
  trace_free(&t);
  return programs;
}

static void generate_trace(const workload_cfg_t *w, trace_t *t) {
  train_info_t info;
  npu_err_t err = {""};
  CU_ASSERT_FATAL(train_generate(w, &replay_vocab, 8, t, &info, &err) == 0);
  train_info_free(&info);
}

static void test_every_plan_checks(void) {
  static const struct {
    const char *parallel, *training;
    bool moe;
  } plans[] = {
      {"\"dp\": 8", "\"micro_batch\": 1, \"global_batch\": 16", false},
      {"\"tp\": 4, \"dp\": 2, \"zero\": 1", "\"micro_batch\": 2, \"global_batch\": 8", false},
      {"\"tp\": 4, \"sequence_parallel\": true, \"pp\": 2, \"recompute\": \"selective\"",
       "\"micro_batch\": 1, \"global_batch\": 8, \"flash_attention\": false", false},
      {"\"pp\": 4, \"vpp\": 2, \"dp\": 2, \"recompute\": \"full\"",
       "\"micro_batch\": 1, \"global_batch\": 16", false},
      {"\"pp\": 2, \"cp\": 2, \"tp\": 2, \"zero\": 3", "\"micro_batch\": 1, \"global_batch\": 4",
       false},
      {"\"tp\": 2, \"pp\": 2, \"dp\": 4, \"ep\": 4", "\"micro_batch\": 1, \"global_batch\": 8",
       true},
      {"\"dp\": 4, \"pp\": 2, \"zero\": 2, \"zero_shard_size\": 2",
       "\"micro_batch\": 1, \"global_batch\": 8", false},
      {"\"pp\": 3, \"first_stage_layers\": 2, \"last_stage_layers\": 2, \"dp\": 2",
       "\"micro_batch\": 1, \"global_batch\": 8", false},
      {"\"pp\": 3, \"stage_layers\": [1, 4, 3], \"dp\": 2",
       "\"micro_batch\": 1, \"global_batch\": 8", false},
      {"\"pp\": 2, \"stage_layers\": [1, 3], \"ep\": 2, \"dp\": 2",
       "\"micro_batch\": 1, \"global_batch\": 8", true},
      {"\"dp\": 4, \"ep\": 4", "\"micro_batch\": 1, \"global_batch\": 16, "
       "\"overlap_moe_a2a\": true", true},
      {"\"tp\": 2, \"pp\": 2, \"vpp\": 2, \"dp\": 4, \"ep\": 4",
       "\"micro_batch\": 1, \"global_batch\": 16, \"overlap_moe_a2a\": true", true},
      {"\"tp\": 2, \"sequence_parallel\": true, \"pp\": 2, \"vpp\": 2, \"dp\": 2, "
       "\"zero\": 2, \"pp_schedule\": \"dualpipev\"",
       "\"micro_batch\": 1, \"global_batch\": 8", false},
      {"\"pp\": 4, \"vpp\": 2, \"pp_schedule\": \"dualpipev\", \"recompute\": \"full\"",
       "\"micro_batch\": 1, \"global_batch\": 9", false},
      {"\"tp\": 2, \"pp\": 2, \"vpp\": 2, \"dp\": 4, \"ep\": 4, \"pp_schedule\": \"dualpipev\"",
       "\"micro_batch\": 1, \"global_batch\": 16, \"overlap_moe_a2a\": true", true},
      {"\"tp\": 2, \"pp\": 2, \"dp\": 2, \"order\": \"tp-pp-dp-cp\"",
       "\"micro_batch\": 1, \"global_batch\": 4, \"overlap_grad_reduce\": false", false},
  };
  size_t nplans = sizeof plans / sizeof plans[0];
  for (size_t i = 0; i < 2 * nplans; i++) { /* then every MoE plan with latent attention */
    if (i >= nplans && !plans[i - nplans].moe)
      continue;
    size_t k = i % nplans;
    workload_cfg_t w = load_workload(i >= nplans ? small_mla : plans[k].moe ? small_moe : small_model,
                                     plans[k].parallel, plans[k].training);
    train_info_t info;
    int programs = generate_and_check(&w, &info);
    /* one shared program per (pipeline stage, context position) */
    CU_ASSERT(programs == w.parallel.pp * w.parallel.cp);
    CU_ASSERT(info.world == (long)w.parallel.dp * w.parallel.tp * w.parallel.pp * w.parallel.cp);
    CU_ASSERT(info.microbatches == w.training.global_batch / (w.training.micro_batch * w.parallel.dp));
    train_info_free(&info);
  }
}

/* A list per virtual stage with interleaving (pp 2 x vpp 2, 8 layers): an
 * even one gives the even split's step exactly (the same trace: timings,
 * memory, FLOPs); an uneven one puts each chunk's layers where the list says
 * (stage 0's chunks 1 and 3 layers: its weights those of 4 layers, as the even
 * split's; stage 1's 3 and 1). */
static void test_virtual_stage_list_holds_its_layers(void) {
  const char *training = "\"global_batch\": 8";
  workload_cfg_t even = load_workload(small_model, "\"pp\": 2, \"vpp\": 2", training);
  workload_cfg_t listed =
      load_workload(small_model, "\"pp\": 2, \"vpp\": 2, \"stage_layers\": [2, 2, 2, 2]", training);
  workload_cfg_t uneven =
      load_workload(small_model, "\"pp\": 2, \"vpp\": 2, \"stage_layers\": [1, 3, 3, 1]", training);
  int first, counts[2][2] = {{1, 3}, {3, 1}}, firsts[2][2] = {{0, 4}, {1, 7}};
  for (int st = 0; st < 2; st++)
    for (int c = 0; c < 2; c++) {
      CU_ASSERT_EQUAL(workload_chunk_layers(&uneven, st, c, &first), counts[st][c]);
      CU_ASSERT_EQUAL(first, firsts[st][c]);
    }
  trace_t a, b;
  generate_trace(&even, &a);
  generate_trace(&listed, &b);
  CU_ASSERT_EQUAL(a.programs[0].nops, b.programs[0].nops);
  CU_ASSERT_EQUAL(a.programs[1].nops, b.programs[1].nops);
  trace_free(&a);
  trace_free(&b);
  train_info_t ia, ib, ic;
  generate_and_check(&even, &ia);
  generate_and_check(&listed, &ib);
  generate_and_check(&uneven, &ic);
  for (int st = 0; st < 2; st++) {
    CU_ASSERT_EQUAL(ia.memory[st].weights, ib.memory[st].weights);
    CU_ASSERT_EQUAL(ia.memory[st].activations, ib.memory[st].activations);
  }
  CU_ASSERT_DOUBLE_EQUAL(ic.memory[0].weights, ia.memory[0].weights, 1e-3);
  /* the fullest chunk (3 layers where the even split has 2) sets the activations */
  CU_ASSERT_DOUBLE_EQUAL(ic.memory[0].activations, ia.memory[0].activations * 3 / 2,
                         ia.memory[0].activations * 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(ic.model_flops, ia.model_flops, ia.model_flops * 1e-12);
  train_info_free(&ia);
  train_info_free(&ib);
  train_info_free(&ic);
}

/* Multi-head latent attention in training, term by term on a dense model
 * (tp 2, sequence parallel, one sample): the model FLOPs per token are the
 * projections' (q_a, q_b, kv_a, kv_b, o), the MLP's and the attention core's
 * over query/key width nope + rope and value width v, three times, and the
 * LM head's; a layer keeps 8h + 4 (q_lora + kv_lora) on the sequence and
 * queries, keys, values and the output projection's input per head. */
static void test_latent_attention_in_training(void) {
  workload_cfg_t w =
      load_workload(small_mla, "\"tp\": 2, \"sequence_parallel\": true", "\"global_batch\": 1");
  w.model.has_moe = false;
  w.model.mtp_layers = 0;
  train_info_t info;
  generate_and_check(&w, &info);
  double h = 1024, f = 2816, s = 1024, H = 8, V = 32000, layers = 4;
  double qr = 384, kvr = 128, nope = 64, rope = 32, v = 64, qk = nope + rope;
  double proj = h * qr + qr * H * qk + h * (kvr + rope) + kvr * H * (nope + v) + H * v * h;
  double layer = 2 * proj + 2 * 3 * h * f + 2 * s * H * (qk + v);
  double want = s * (3 * layers * layer + 6 * h * V);
  CU_ASSERT_DOUBLE_EQUAL(info.model_flops, want, want * 1e-12);
  double seq = 8 * h + 4 * (qr + kvr), split = 2 * H * qk + 2 * H * (qk + v) + 2 * H * v + 6 * f;
  double act = s * (seq + split) / 2 * layers;
  CU_ASSERT_DOUBLE_EQUAL(info.memory[0].activations, act, act * 1e-12);
  train_info_free(&info);
}

/* Multi-token prediction: the last stage alone holds the module (its layer,
 * MoE as the last layer is, its projection and two norms: weights 2 bytes
 * each), and the step's FLOPs grow by its layer, projection and LM head. */
static void test_multi_token_prediction_on_the_last_stage(void) {
  workload_cfg_t with = load_workload(small_mla, "\"pp\": 2, \"dp\": 2, \"ep\": 2",
                                      "\"global_batch\": 4");
  workload_cfg_t without = with;
  without.model.mtp_layers = 0;
  train_info_t a, b;
  generate_and_check(&with, &a);
  generate_and_check(&without, &b);
  xf_split_t split = {1, 2, 2};
  double h = 1024, V = 32000, s = 1024;
  xf_params_t p = xf_layer_params(&with.model, &split, true);
  double module = xf_params_total(&p) + 2 * h * h + 2 * h;
  CU_ASSERT_DOUBLE_EQUAL(a.memory[0].weights, b.memory[0].weights, 0);
  CU_ASSERT_DOUBLE_EQUAL(a.memory[1].weights - b.memory[1].weights, 2 * module, 1e-6);
  double layer = 3 * (xf_layer_matmul_flops(&with.model, true) + xf_attention_flops(&with.model, s));
  double more = a.tokens * (layer + 12 * h * h + 6 * h * V);
  CU_ASSERT_DOUBLE_EQUAL(a.model_flops - b.model_flops, more, more * 1e-9);
  train_info_free(&a);
  train_info_free(&b);
}

/* Fused attention ops of program 0 by window: none, `narrow`, any other. */
static void count_windows(const workload_cfg_t *w, int64_t narrow, int counts[3]) {
  trace_t t;
  generate_trace(w, &t);
  counts[0] = counts[1] = counts[2] = 0;
  for (int i = 0; i < t.programs[0].nops; i++) {
    const trace_op_t *op = &t.programs[0].ops[i];
    if (op->type == TRACE_OP_SHAPED && op->causal)
      counts[op->window == 0 ? 0 : op->window == narrow ? 1 : 2]++;
  }
  trace_free(&t);
}

/* Sliding-window attention in Gemma 2's pattern (every second layer attends
 * to the whole sequence): half the fused attention ops carry the window, the
 * others none; the step's model FLOPs lose exactly the keys past the window in
 * the windowed layers (forward and backward: 3 x 2 heads (qk + v) per key and
 * token); a window as wide as the sequence costs what no window does. */
static void test_sliding_window_attention(void) {
  workload_cfg_t full = load_workload(small_model, "\"tp\": 2", "\"global_batch\": 2");
  workload_cfg_t win = full, wide = full;
  win.model.sliding_window_tokens = 256;
  win.model.full_attention_every = 2;
  wide.model.sliding_window_tokens = 1024;
  train_info_t a, b, c;
  generate_and_check(&full, &a);
  generate_and_check(&win, &b);
  generate(&wide, &c);
  double heads = 8, d = 128, windowed_layers = 4;
  double lost = b.tokens * windowed_layers * 3 * 2 * heads * 2 * d * (1024 - 256);
  CU_ASSERT_DOUBLE_EQUAL(a.model_flops - b.model_flops, lost, lost * 1e-9);
  CU_ASSERT_EQUAL(c.model_flops, a.model_flops);
  int n[3];
  count_windows(&win, 256, n);
  CU_ASSERT(n[1] >= 2 * 4);
  CU_ASSERT_EQUAL(n[0], n[1]);
  CU_ASSERT_EQUAL(n[2], 0);
  count_windows(&full, 256, n);
  CU_ASSERT_EQUAL(n[1] + n[2], 0);
  train_info_free(&a);
  train_info_free(&b);
  train_info_free(&c);
}

/* Ops of program 0 of one kind: attention forwards (causal), or EP
 * all-to-alls and the bytes they carry. */
static void count_ops(const workload_cfg_t *w, int *attn_fwd, int *a2a, double *a2a_bytes) {
  trace_t t;
  generate_trace(w, &t);
  *attn_fwd = *a2a = 0;
  *a2a_bytes = 0;
  for (int i = 0; i < t.programs[0].nops; i++) {
    const trace_op_t *op = &t.programs[0].ops[i];
    op_desc_t d;
    if (op->type == TRACE_OP_SHAPED) {
      replay_op_desc(op, &d);
      *attn_fwd += d.kind == OP_ATTN_FWD;
    } else if (op->type == TRACE_OP_COLL && strcmp(replay_vocab.colls[op->kind], "alltoall") == 0) {
      (*a2a)++;
      *a2a_bytes += op->bytes;
    }
  }
  trace_free(&t);
}

/* LongCat-Flash's layers. Zero-computation experts as many as the routed
 * ones take half of each token's 2 picks: the routed experts' FLOPs halve
 * (the model FLOPs lose one expert pass per token and MoE layer), and their
 * picks cross their own dispatch and combine, as many bytes as the routed
 * picks' (EP 2: all-to-alls twice as many, the same bytes in all). A shortcut
 * MoE layer holds two attention blocks and a dense MLP after each: its
 * parameters and FLOPs gain one attention block and two dense MLPs, and the
 * step runs twice the attention forwards. */
static void test_longcat_layers(void) {
  workload_cfg_t base = load_workload(small_moe, "\"ep\": 2, \"dp\": 2", "\"global_batch\": 2");
  workload_cfg_t zero = base, shortcut = base;
  zero.model.moe.zero_experts = 8;
  shortcut.model.moe.shortcut = true;
  train_info_t a, b, c;
  generate_and_check(&base, &a);
  generate_and_check(&zero, &b);
  generate_and_check(&shortcut, &c);
  double h = 1024, fe = 1408, f = 2816, layers = 4, tokens = a.tokens;
  double expert_pass = 3 * 2 * 3 * h * fe; /* forward and backward, gated */
  CU_ASSERT_DOUBLE_EQUAL(a.model_flops - b.model_flops, tokens * layers * expert_pass,
                         a.model_flops * 1e-12);
  int attn[3], a2a[3];
  double bytes[3];
  count_ops(&base, &attn[0], &a2a[0], &bytes[0]);
  count_ops(&zero, &attn[1], &a2a[1], &bytes[1]);
  count_ops(&shortcut, &attn[2], &a2a[2], &bytes[2]);
  CU_ASSERT(a2a[0] > 0);
  CU_ASSERT_EQUAL(a2a[1], 2 * a2a[0]);
  CU_ASSERT_DOUBLE_EQUAL(bytes[1], bytes[0], bytes[0] * 1e-12);
  CU_ASSERT_EQUAL(attn[2], 2 * attn[0]);
  xf_split_t whole = XF_WHOLE;
  xf_params_t pb = xf_layer_params(&base.model, &whole, true);
  xf_params_t ps = xf_layer_params(&shortcut.model, &whole, true);
  xf_params_t pd = xf_layer_params(&base.model, &whole, false);
  CU_ASSERT_DOUBLE_EQUAL(xf_params_total(&ps) - xf_params_total(&pb),
                         pd.attention + pd.norms + 2 * 3 * h * f, 1e-6);
  double more = 3 * (xf_layer_matmul_flops(&base.model, false) + 2 * 3 * h * f +
                     xf_attention_flops(&base.model, 1024));
  CU_ASSERT_DOUBLE_EQUAL(c.model_flops - a.model_flops, tokens * layers * more,
                         c.model_flops * 1e-12);
  train_info_free(&a);
  train_info_free(&b);
  train_info_free(&c);
}

/* GeGLU: the same weights as SwiGLU (a gated MLP), its own kernel in every
 * place SwiGLU's runs. */
static void test_geglu_is_a_gated_mlp(void) {
  workload_cfg_t sw = load_workload(small_model, "\"pp\": 2", "\"global_batch\": 4");
  workload_cfg_t ge = sw;
  ge.model.activation = ACTIVATION_GEGLU;
  train_info_t a, b;
  generate(&sw, &a);
  generate(&ge, &b);
  CU_ASSERT_DOUBLE_EQUAL(a.model_flops, b.model_flops, 0);
  CU_ASSERT_DOUBLE_EQUAL(a.memory[0].weights, b.memory[0].weights, 0);
  train_info_free(&a);
  train_info_free(&b);
  int counts[2][OP_KIND_COUNT];
  const workload_cfg_t *ws[2] = {&sw, &ge};
  for (int k = 0; k < 2; k++) {
    trace_t t;
    npu_err_t err = {""};
    train_info_t info;
    CU_ASSERT_FATAL(train_generate(ws[k], &replay_vocab, 8, &t, &info, &err) == 0);
    memset(counts[k], 0, sizeof counts[k]);
    for (int p = 0; p < t.nprograms; p++)
      for (int i = 0; i < t.programs[p].nops; i++) {
        const trace_op_t *op = &t.programs[p].ops[i];
        if (op->type != TRACE_OP_SHAPED)
          continue;
        op_desc_t d;
        replay_op_desc(op, &d);
        counts[k][d.kind]++;
      }
    trace_free(&t);
    train_info_free(&info);
  }
  CU_ASSERT(counts[0][OP_SWIGLU] >= 2 * 8);
  CU_ASSERT_EQUAL(counts[1][OP_GEGLU], counts[0][OP_SWIGLU]);
  CU_ASSERT_EQUAL(counts[1][OP_SWIGLU], 0);
  CU_ASSERT_EQUAL(counts[0][OP_GEGLU], 0);
}

static void test_model_flops_follow_the_published_formula(void) {
  const char *const full[] = {"parallel.recompute=full", "parallel.sequence_parallel=false",
                              NULL};
  workload_cfg_t w = shipped_workload("gpt-22b.json", NULL);
  workload_cfg_t wf = shipped_workload("gpt-22b.json", full);
  double B = 4, s = 2048, l = 48, h = 6144, V = 51200;
  double model = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  double hw_full = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  train_info_t info, info_full;
  generate(&w, &info);
  generate(&wf, &info_full);
  CU_ASSERT_DOUBLE_EQUAL(info.model_flops, model, model * 0.01);
  CU_ASSERT_DOUBLE_EQUAL(info_full.hw_flops, hw_full, hw_full * 0.01);
  CU_ASSERT(info.hw_flops > info.model_flops && info.hw_flops < info_full.hw_flops);
  train_info_free(&info);
  train_info_free(&info_full);
}

/* Activation memory of the first pipeline stage against the paper's Fig. 1
 * (Korthikanti et al. 2022; the numbers are in tests/data/validation/
 * korthikanti2022_a100.csv): GiB with sequence parallelism and selective
 * recompute, and with neither. */
static void test_activation_memory_matches_korthikanti(void) {
  static const struct {
    const char *workload;
    double selective_sp_GiB, none_GiB;
  } rows[] = {{"gpt-22b.json", 9.5625, 59.25}, {"gpt-175b.json", 12.3515625, 66.84375}};
  const char *const none[] = {"parallel.recompute=none", "parallel.sequence_parallel=false",
                              NULL};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    workload_cfg_t sel = shipped_workload(rows[i].workload, NULL);
    workload_cfg_t plain = shipped_workload(rows[i].workload, none);
    train_info_t a, b;
    generate(&sel, &a);
    generate(&plain, &b);
    double got_sel = a.memory[0].activations / GIB, got_none = b.memory[0].activations / GIB;
    CU_ASSERT_DOUBLE_EQUAL(got_sel, rows[i].selective_sp_GiB, rows[i].selective_sp_GiB * 0.02);
    CU_ASSERT_DOUBLE_EQUAL(got_none, rows[i].none_GiB, rows[i].none_GiB * 0.02);
    if (fabs(got_sel / rows[i].selective_sp_GiB - 1) > 0.02 ||
        fabs(got_none / rows[i].none_GiB - 1) > 0.02)
      fprintf(stderr, "\n  %s: %.3f / %.3f GiB, paper %.3f / %.3f\n", rows[i].workload, got_sel,
              got_none, rows[i].selective_sp_GiB, rows[i].none_GiB);
    train_info_free(&a);
    train_info_free(&b);
  }
}

/* Megatron's decoder_first/last_pipeline_num_layers: the end stages hold the
 * layers asked for, the middle ones share the rest; each stage's weights and
 * activations follow its own layers. */
static void test_uneven_stages_hold_their_layers(void) {
  workload_cfg_t even = load_workload(small_model, "\"pp\": 4", "\"global_batch\": 8");
  workload_cfg_t uneven = load_workload(
      small_model, "\"pp\": 4, \"first_stage_layers\": 1, \"last_stage_layers\": 1",
      "\"global_batch\": 8");
  CU_ASSERT_EQUAL(workload_stage_layers(&uneven, 0), 1);
  CU_ASSERT_EQUAL(workload_stage_layers(&uneven, 1), 3);
  CU_ASSERT_EQUAL(workload_stage_layers(&uneven, 2), 3);
  CU_ASSERT_EQUAL(workload_stage_layers(&uneven, 3), 1);
  CU_ASSERT_EQUAL(workload_stage_layers(&even, 1), 2);
  train_info_t a, b;
  generate_and_check(&even, &a);
  generate_and_check(&uneven, &b);
  /* stage 1: 3 layers instead of 2, with the same micro-batches in flight */
  CU_ASSERT_DOUBLE_EQUAL(b.memory[1].activations, a.memory[1].activations * 1.5,
                         a.memory[1].activations * 1e-9);
  CU_ASSERT(b.memory[1].weights > a.memory[1].weights);
  CU_ASSERT(b.memory[0].activations < a.memory[0].activations);
  CU_ASSERT_DOUBLE_EQUAL(b.model_flops, a.model_flops, a.model_flops * 1e-12);
  train_info_free(&a);
  train_info_free(&b);
}

/* parallel.stage_layers (MindSpeed's --num-layer-list): the stages hold the
 * layers listed; the list that matches first/last_stage_layers makes the same
 * step, byte for byte in what the generator reports. */
static void test_stage_list_holds_its_layers(void) {
  const char *training = "\"global_batch\": 8";
  workload_cfg_t ends = load_workload(
      small_model, "\"pp\": 4, \"first_stage_layers\": 1, \"last_stage_layers\": 1", training);
  workload_cfg_t same =
      load_workload(small_model, "\"pp\": 4, \"stage_layers\": [1, 3, 3, 1]", training);
  workload_cfg_t list =
      load_workload(small_model, "\"pp\": 4, \"stage_layers\": [2, 1, 4, 1]", training);
  int want[] = {2, 1, 4, 1};
  for (int s = 0; s < 4; s++)
    CU_ASSERT_EQUAL(workload_stage_layers(&list, s), want[s]);
  train_info_t a, b, c;
  generate_and_check(&ends, &a);
  generate_and_check(&same, &b);
  generate_and_check(&list, &c);
  for (int s = 0; s < 4; s++) {
    CU_ASSERT_EQUAL(b.memory[s].activations, a.memory[s].activations);
    CU_ASSERT_EQUAL(b.memory[s].weights, a.memory[s].weights);
  }
  CU_ASSERT_EQUAL(b.hw_flops, a.hw_flops);
  /* stage 2: 4 layers where ends has 3, the same micro-batches in flight */
  CU_ASSERT_DOUBLE_EQUAL(c.memory[2].activations, a.memory[2].activations * 4 / 3,
                         a.memory[2].activations * 1e-9);
  CU_ASSERT(c.memory[1].weights < a.memory[1].weights);
  CU_ASSERT_DOUBLE_EQUAL(c.model_flops, a.model_flops, a.model_flops * 1e-12);
  train_info_free(&a);
  train_info_free(&b);
  train_info_free(&c);
}

/* model.head_dim apart from hidden / heads (256 for 8 heads of hidden 1024):
 * the model FLOPs grow by the wider projections and attention core, per token
 * 3 x layers x (2 x 24 h d' + 4 s heads d') for d' the added width, and the
 * activations by the wider queries, keys, values and projection input. */
static void test_head_dim_in_training(void) {
  workload_cfg_t w =
      load_workload(small_model, "\"tp\": 2, \"sequence_parallel\": true", "\"global_batch\": 1");
  workload_cfg_t wide = w;
  wide.model.head_dim = 256;
  train_info_t a, b;
  generate(&w, &a);
  generate(&wide, &b);
  double h = 1024, f = 2816, tokens = 1024, s = 1024, layers = 8, dd = 256 - 128;
  /* attention weights h x (8 + 2 x 4 + 8) heads x d: 24 h d */
  double more = tokens * 3 * layers * (2 * 24 * h * dd + 4 * s * 8 * dd);
  CU_ASSERT_DOUBLE_EQUAL(b.model_flops - a.model_flops, more, more * 1e-9);
  double q = 8 * 256; /* queries 2q, keys and values 2q x 4/8 each, projection input 2q */
  double want = tokens * (8 * h + 2 * q + 2 * q + 2 * q + 6 * f) / 2 * layers;
  CU_ASSERT_DOUBLE_EQUAL(b.memory[0].activations, want, want * 1e-12);
  train_info_free(&a);
  train_info_free(&b);
}

/* Activations of a LLaMA layer term by term (SwiGLU, 4 of 8 key/value
 * heads, no dropout, fused attention, sequence parallel over tp 2):
 * sequence part 8h, tensor part 2h + 4h/2 + 2h + 6f, per token. */
static void test_activation_memory_counts_what_the_layer_keeps(void) {
  workload_cfg_t w = load_workload(small_model, "\"tp\": 2, \"sequence_parallel\": true",
                                   "\"global_batch\": 1");
  train_info_t info;
  generate(&w, &info);
  double h = 1024, f = 2816, tokens = 1024;
  double want = tokens * (8 * h + 2 * h + 2 * h + 2 * h + 6 * f) / 2 * 8; /* 8 layers */
  CU_ASSERT_DOUBLE_EQUAL(info.memory[0].activations, want, want * 1e-12);
  train_info_free(&info);
}

/* grad_reduce_in_fp32: 4 bytes per parameter of gradient buffers, else 2. */
static void test_gradient_precision_sizes_buffers(void) {
  workload_cfg_t fp32 = load_workload(small_model, "\"dp\": 2", "\"global_batch\": 2");
  workload_cfg_t bf16 = load_workload(small_model, "\"dp\": 2",
                                      "\"global_batch\": 2, \"grad_reduce_in_fp32\": false");
  train_info_t a, b;
  generate(&fp32, &a);
  generate(&bf16, &b);
  CU_ASSERT_DOUBLE_EQUAL(b.memory[0].gradients, a.memory[0].gradients / 2,
                         a.memory[0].gradients * 1e-12);
  CU_ASSERT_DOUBLE_EQUAL(a.memory[0].gradients, a.memory[0].weights * 2,
                         a.memory[0].weights * 1e-12);
  train_info_free(&a);
  train_info_free(&b);
}

static void test_zero_shards_optimizer_states(void) {
  workload_cfg_t z0 = load_workload(small_model, "\"dp\": 8, \"zero\": 0",
                                    "\"micro_batch\": 1, \"global_batch\": 8");
  workload_cfg_t z1 = load_workload(small_model, "\"dp\": 8, \"zero\": 1",
                                    "\"micro_batch\": 1, \"global_batch\": 8");
  workload_cfg_t z3 = load_workload(small_model, "\"dp\": 8, \"zero\": 3",
                                    "\"micro_batch\": 1, \"global_batch\": 8");
  train_info_t a, b, c;
  generate(&z0, &a);
  generate(&z1, &b);
  generate(&z3, &c);
  CU_ASSERT_DOUBLE_EQUAL(b.memory[0].optimizer, a.memory[0].optimizer / 8,
                         a.memory[0].optimizer * 1e-6);
  CU_ASSERT(c.memory[0].weights < b.memory[0].weights);
  CU_ASSERT(c.memory[0].total < b.memory[0].total && b.memory[0].total < a.memory[0].total);
  train_info_free(&a);
  train_info_free(&b);
  train_info_free(&c);
}

/* Generates the programs of one step into t (the caller frees them). */
/* The index of the communicator with that name; the test stops without one. */
static int comm_named(const trace_t *t, const char *name) {
  int found = -1;
  for (int c = 0; c < t->ncomms; c++)
    found = strcmp(t->comms[c].name, name) == 0 ? c : found;
  CU_ASSERT_FATAL(found >= 0);
  return found;
}

/* Collectives of one kind on one stream in rank 0's program. */
static int count_colls(const workload_cfg_t *w, const char *kind, const char *stream) {
  trace_t t;
  train_info_t info;
  npu_err_t err = {""};
  CU_ASSERT_FATAL(train_generate(w, &replay_vocab, 8, &t, &info, &err) == 0);
  const trace_program_t *p = &t.programs[t.program_of[0]];
  int n = 0;
  for (int i = 0; i < p->nops; i++)
    n += p->ops[i].type == TRACE_OP_COLL && strcmp(replay_vocab.colls[p->ops[i].kind], kind) == 0 &&
         strcmp(p->streams[p->ops[i].stream], stream) == 0;
  trace_free(&t);
  train_info_free(&info);
  return n;
}

/* The all-to-alls of rank 0's program: how many, and the bytes of the first. */
static int alltoalls(const trace_t *t, double *bytes) {
  const trace_program_t *p = &t->programs[t->program_of[0]];
  int n = 0;
  for (int i = 0; i < p->nops; i++)
    if (p->ops[i].type == TRACE_OP_COLL &&
        strcmp(replay_vocab.colls[p->ops[i].kind], "alltoall") == 0 && n++ == 0)
      *bytes = p->ops[i].bytes;
  return n;
}

/* MoE parallel folding (parallel.etp 1): on tp 2 x dp 4, EP 8 spans both TP
 * ranks of every DP replica, each rank dispatching its own sequence shard
 * (half the tokens, so half the bytes of EP 4 with experts split over TP),
 * one whole expert per rank (the weights of two half experts: equal), and
 * no expert replicas to reduce over. */
static void test_experts_folded_over_tensor_parallel_ranks(void) {
  const char *plan = "\"tp\": 2, \"sequence_parallel\": true, \"dp\": 4, \"ep\": 4";
  workload_cfg_t split = load_workload(small_moe, plan, "\"global_batch\": 4");
  workload_cfg_t folded = split;
  folded.parallel.ep = 8;
  folded.parallel.etp = 1;
  trace_t a, b;
  generate_trace(&split, &a);
  generate_trace(&folded, &b);
  const trace_comm_t *ep = &b.comms[comm_named(&b, "ep")];
  CU_ASSERT_EQUAL(ep->sizes[ep->group_of[0]], 8);
  for (int m = 0; m < 8; m++) /* tp 2 x dp 4: ranks 0-7 of the first stage */
    CU_ASSERT_EQUAL(ep->groups[ep->group_of[0]][m], m);
  const trace_comm_t *edp = &b.comms[comm_named(&b, "edp")];
  CU_ASSERT_EQUAL(edp->sizes[edp->group_of[0]], 1);
  double bytes_split = 0, bytes_folded = 0;
  int n_split = alltoalls(&a, &bytes_split), n_folded = alltoalls(&b, &bytes_folded);
  CU_ASSERT_EQUAL(n_split, n_folded);
  CU_ASSERT_DOUBLE_EQUAL(bytes_split, 1024 * 2 * 1024 * 2.0, 0);
  CU_ASSERT_DOUBLE_EQUAL(bytes_folded, bytes_split / 2, 0);
  trace_free(&a);
  trace_free(&b);
  train_info_t ia, ib;
  generate(&split, &ia);
  generate(&folded, &ib);
  CU_ASSERT_DOUBLE_EQUAL(ia.memory[0].weights, ib.memory[0].weights, 1e-6);
  train_info_free(&ia);
  train_info_free(&ib);
}

/* Expert tensor parallelism apart from TP (parallel.etp 2 on tp 4 x dp 2, ep
 * 4): Megatron-Core's expert grid ETP x EP x EDP over the stage's 8 ranks, ETP
 * innermost: ETP {0, 1}, EP {0, 2, 4, 6}, no expert replicas. The dispatch
 * carries the rank's own sequence shard (a quarter under tp 4, half the bytes
 * of tp 2 x dp 4 with etp 1 and EP 8); the ETP group
 * gathers what it brings (twice the bytes: the group's total) before the
 * experts and reduce-scatters it after, once per MoE layer in each pass; the
 * experts are split over ep x etp = 8 ranks as under tp 2 with etp = tp, the
 * dense weights over 4 instead of 2. */
static void test_expert_tensor_parallel_group_of_its_own(void) {
  const char *plan = "\"tp\": 2, \"sequence_parallel\": true, \"dp\": 4, \"ep\": 4";
  workload_cfg_t split = load_workload(small_moe, plan, "\"global_batch\": 4");
  workload_cfg_t whole = split, etp2 = split;
  whole.parallel.ep = 8;
  whole.parallel.etp = 1;
  etp2.parallel.tp = 4; /* etp 2 under tp 4 x dp 2: the folded grid */
  etp2.parallel.dp = 2;
  etp2.parallel.etp = 2;
  etp2.training.global_batch = 2; /* one micro-batch per replica, as the others */
  trace_t a, c;
  generate_trace(&whole, &a);
  generate_trace(&etp2, &c);
  const trace_comm_t *etp = &c.comms[comm_named(&c, "etp")];
  const trace_comm_t *ep = &c.comms[comm_named(&c, "ep")];
  const trace_comm_t *edp = &c.comms[comm_named(&c, "edp")];
  CU_ASSERT_EQUAL(etp->sizes[etp->group_of[0]], 2);
  CU_ASSERT_EQUAL(ep->sizes[ep->group_of[0]], 4);
  CU_ASSERT_EQUAL(edp->sizes[edp->group_of[0]], 1);
  for (int m = 0; m < 2; m++)
    CU_ASSERT_EQUAL(etp->groups[etp->group_of[0]][m], m);
  for (int m = 0; m < 4; m++)
    CU_ASSERT_EQUAL(ep->groups[ep->group_of[0]][m], 2 * m);
  double a2a_whole = 0, a2a_etp = 0, gather = 0, scatter = 0;
  int n_whole = alltoalls(&a, &a2a_whole), n_etp = alltoalls(&c, &a2a_etp);
  CU_ASSERT_EQUAL(n_whole, n_etp);
  /* tp 4: each rank routes a quarter of the tokens, half of tp 2's */
  CU_ASSERT_DOUBLE_EQUAL(a2a_etp, a2a_whole / 2, 0);
  int gathers = 0, scatters = 0;
  const trace_program_t *p = &c.programs[c.program_of[0]];
  int cetp = comm_named(&c, "etp");
  for (int i = 0; i < p->nops; i++) {
    const trace_op_t *op = &p->ops[i];
    if (op->type != TRACE_OP_COLL || op->comm != cetp)
      continue;
    bool g = strcmp(replay_vocab.colls[op->kind], "allgather") == 0;
    gathers += g, scatters += !g;
    *(g ? &gather : &scatter) = op->bytes;
  }
  CU_ASSERT_EQUAL(gathers, n_etp / 2); /* one per dispatch: 2 per MoE layer and pass */
  CU_ASSERT_EQUAL(scatters, gathers);
  CU_ASSERT_DOUBLE_EQUAL(gather, 2 * a2a_etp, 0);
  CU_ASSERT_DOUBLE_EQUAL(scatter, gather, 0);
  trace_free(&a);
  trace_free(&c);
  train_info_t ia, ic;
  generate(&split, &ia);
  generate(&etp2, &ic);
  /* experts over ep x etp = 8 either way; the dense part over tp 2 and tp 4 */
  CU_ASSERT(ic.memory[0].weights < ia.memory[0].weights);
  train_info_free(&ia);
  train_info_free(&ic);
}

/* Expert load imbalance in training: measured loads 4,4,1,...,1 over 8
 * experts on EP 4 put 8 of 14 on the first rank, whose even share is 2 of 8:
 * every rank's dispatch carries 16/7 of the even bytes, and its experts as
 * many rows; uniform routing changes nothing. */
static void test_expert_imbalance_in_training(void) {
  const char *plan = "\"tp\": 2, \"dp\": 4, \"ep\": 4";
  workload_cfg_t even = load_workload(small_moe, plan, "\"global_batch\": 4");
  workload_cfg_t skewed = load_workload(small_moe, plan,
                                        "\"global_batch\": 4, \"moe\": {\"routing\": \"measured\", "
                                        "\"expert_load\": \"4,4,1,1,1,1,1,1\"}");
  trace_t a, b;
  generate_trace(&even, &a);
  generate_trace(&skewed, &b);
  double bytes_even = 0, bytes_skewed = 0;
  CU_ASSERT_EQUAL(alltoalls(&a, &bytes_even), alltoalls(&b, &bytes_skewed));
  CU_ASSERT_DOUBLE_EQUAL(bytes_skewed, 4194304 * 16.0 / 7.0, 1); /* whole bytes */
  trace_free(&a);
  trace_free(&b);
  train_info_t ia, ib;
  generate(&even, &ia);
  generate(&skewed, &ib);
  CU_ASSERT_DOUBLE_EQUAL(ia.model_flops, ib.model_flops, 0); /* the model's FLOPs: even */
  train_info_free(&ia);
  train_info_free(&ib);
}

/* The ops of one kind (compute or collective name) in rank 0's program, and
 * the bytes of the first collective of that kind. */
static int ops_of(const trace_t *t, const char *kind, double *bytes) {
  const trace_program_t *p = &t->programs[t->program_of[0]];
  int n = 0;
  for (int i = 0; i < p->nops; i++) {
    const trace_op_t *op = &p->ops[i];
    const char *name = op->type == TRACE_OP_COLL     ? replay_vocab.colls[op->kind]
                       : op->type == TRACE_OP_SHAPED ? replay_vocab.compute[op->kind]
                       : op->type == TRACE_OP_SEND   ? "send"
                                                     : "";
    if (strcmp(name, kind) == 0 && n++ == 0 && bytes)
      *bytes = op->bytes;
  }
  return n;
}

/* Context parallelism's algorithms on cp 2 (4 with hybrid), 8 layers, one
 * micro-batch: ring attention attends cp blocks per layer and pass, passing
 * cp - 1 blocks; Ulysses one block of all the sequence with two all-to-alls
 * per pass (queries, keys and values of this rank's 512 tokens in: 8 heads +
 * 2 x 4 key/value heads of 128; the output back); allgather gathers all 1024
 * tokens' keys and values once per pass and reduce-scatters their gradients
 * in the backward; hybrid (Ulysses 2 in a cp of 4) both, its ring of 2;
 * Ulysses over 8 repeats the 4 key/value heads to 8. */
static void test_context_parallel_algorithms(void) {
  static const struct {
    const char *plan;
    int attention, sends, alltoalls, gathers, scatters;
    int kv_sent; /* key/value heads in Ulysses' all-to-all */
  } rows[] = {
      {"\"cp\": 2", 2 * 8 * 2, 1 * 8 * 2, 0, 0, 0, 0},
      {"\"cp\": 2, \"cp_algo\": \"ulysses\"", 1 * 8 * 2, 0, 2 * 8 * 2, 0, 0, 4},
      {"\"cp\": 2, \"cp_algo\": \"allgather\"", 2 * 8 * 2, 0, 0, 8 * 2, 8, 0},
      {"\"cp\": 4, \"cp_algo\": \"hybrid\", \"cp_ulysses\": 2", 2 * 8 * 2, 1 * 8 * 2,
       2 * 8 * 2, 0, 0, 4},
      /* 4 key/value heads repeated up to the Ulysses degree 8 */
      {"\"cp\": 8, \"cp_algo\": \"ulysses\"", 1 * 8 * 2, 0, 2 * 8 * 2, 0, 0, 8},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    workload_cfg_t w = load_workload(small_model, rows[i].plan,
                                     "\"global_batch\": 1, \"flash_attention\": true");
    trace_t t;
    generate_trace(&w, &t);
    double a2a = 0, gather = 0;
    CU_ASSERT_EQUAL(ops_of(&t, "attention_fwd", NULL) + ops_of(&t, "attention_bwd", NULL),
                    rows[i].attention);
    CU_ASSERT_EQUAL(ops_of(&t, "send", NULL), rows[i].sends);
    CU_ASSERT_EQUAL(ops_of(&t, "alltoall", &a2a), rows[i].alltoalls);
    CU_ASSERT_EQUAL(ops_of(&t, "allgather", &gather), rows[i].gathers);
    CU_ASSERT_EQUAL(ops_of(&t, "reducescatter", NULL), rows[i].scatters);
    if (rows[i].alltoalls)
      CU_ASSERT_DOUBLE_EQUAL(a2a, 1024.0 / w.parallel.cp * (8 + 2 * rows[i].kv_sent) * 128 * 2,
                             0);
    if (rows[i].gathers)
      CU_ASSERT_DOUBLE_EQUAL(gather, 1024.0 * 4 * 2 * 128 * 2, 0);
    trace_free(&t);
    train_info_t info;
    CU_ASSERT_EQUAL(generate_and_check(&w, &info), w.parallel.cp);
    train_info_free(&info);
  }
}

/* TP communication fused with its matmuls on tp 4 with sequence parallelism
 * (one layer's forward): the gather before the QKV matmul becomes 4 gathers
 * of a quarter, the matmul 4 of a quarter of the rows, each but the last
 * beside the next gather; the output projection's 4 row chunks each followed
 * by a reduce-scatter of a quarter, each but the first beside the previous
 * one's; the step's FLOPs stay. */
static void test_tp_comm_fused_with_matmuls(void) {
  workload_cfg_t plain = load_workload(small_model, "\"tp\": 4, \"sequence_parallel\": true",
                                       "\"global_batch\": 1");
  workload_cfg_t fused = plain;
  fused.training.overlap_tp_comm = true;
  trace_t a, b;
  generate_trace(&plain, &a);
  generate_trace(&fused, &b);
  const trace_program_t *p = &b.programs[0];
  int i = 0; /* the first layer's gathers: after the embedding's reduce-scatter and the norm */
  while (i < p->nops && !(p->ops[i].type == TRACE_OP_COLL &&
                          strcmp(replay_vocab.colls[p->ops[i].kind], "allgather") == 0))
    i++;
  CU_ASSERT_FATAL(i + 8 <= p->nops);
  for (int c = 0; c < 4; c++) {
    CU_ASSERT_DOUBLE_EQUAL(p->ops[i + c].bytes, 1024 * 1024 * 2 / 4.0, 0);
    const trace_op_t *m = &p->ops[i + 4 + c];
    CU_ASSERT_EQUAL(m->dims[0], 1024 / 4);
    CU_ASSERT_EQUAL(m->deps[0], i + c);
    CU_ASSERT_EQUAL(m->overlapping, c < 3);
    if (c < 3)
      CU_ASSERT_EQUAL(m->overlaps, i + c + 1);
  }
  /* the forward's two reductions per layer, 8 layers, each in 4 */
  CU_ASSERT_EQUAL(ops_of(&b, "reducescatter", NULL), ops_of(&a, "reducescatter", NULL) + 3 * 2 * 8);
  trace_free(&a);
  trace_free(&b);
  train_info_t ia, ib;
  generate(&plain, &ia);
  generate(&fused, &ib);
  CU_ASSERT_DOUBLE_EQUAL(ia.model_flops, ib.model_flops, 0);
  train_info_free(&ia);
  train_info_free(&ib);
}

/* ZeRO-1 reduces the accumulated gradients once; ZeRO-2 and 3 keep only their
 * shard, so each micro-batch's gradients are reduced; ZeRO-3 gathers every
 * layer's parameters before its forward and its backward instead of all of
 * them after the step. 8 layers, one stage, 4 micro-batches. */
static void test_zero_stages_communicate_as_they_shard(void) {
  const char *tr = "\"micro_batch\": 1, \"global_batch\": 8, \"overlap_grad_reduce\": false";
  workload_cfg_t z1 = load_workload(small_model, "\"dp\": 2, \"zero\": 1", tr);
  workload_cfg_t z2 = load_workload(small_model, "\"dp\": 2, \"zero\": 2", tr);
  workload_cfg_t z3 = load_workload(small_model, "\"dp\": 2, \"zero\": 3", tr);
  CU_ASSERT_EQUAL(count_colls(&z1, "reducescatter", "dp"), 1);
  CU_ASSERT_EQUAL(count_colls(&z2, "reducescatter", "dp"), 4);
  CU_ASSERT_EQUAL(count_colls(&z3, "reducescatter", "dp"), 4);
  CU_ASSERT_EQUAL(count_colls(&z1, "allgather", "dp"), 1);
  CU_ASSERT_EQUAL(count_colls(&z2, "allgather", "dp"), 1);
  CU_ASSERT_EQUAL(count_colls(&z3, "allgather", "dp"), 0);
  CU_ASSERT_EQUAL(count_colls(&z1, "allgather", "zero"), 0);
  CU_ASSERT_EQUAL(count_colls(&z3, "allgather", "zero"), 2 * 8 * 4);
}

/* Hybrid sharding (HSDP): ZeRO states sharded over groups of 2 of the 8
 * replicas; each gradient bucket is reduce-scattered in its group, then its
 * shard all-reduced across the 4 groups. */
static void test_hybrid_sharding_shards_in_groups(void) {
  const char *tr = "\"micro_batch\": 1, \"global_batch\": 8, \"overlap_grad_reduce\": false";
  workload_cfg_t full = load_workload(small_model, "\"dp\": 8, \"zero\": 1", tr);
  workload_cfg_t hybrid =
      load_workload(small_model, "\"dp\": 8, \"zero\": 1, \"zero_shard_size\": 2", tr);
  CU_ASSERT_EQUAL(count_colls(&full, "reducescatter", "dp"), 1);
  CU_ASSERT_EQUAL(count_colls(&full, "allreduce", "dp"), 0);
  CU_ASSERT_EQUAL(count_colls(&hybrid, "reducescatter", "dp"), 1);
  CU_ASSERT_EQUAL(count_colls(&hybrid, "allreduce", "dp"), 1);
  train_info_t a, b;
  trace_t t;
  npu_err_t err = {""};
  generate(&full, &a);
  CU_ASSERT_FATAL(train_generate(&hybrid, &replay_vocab, 8, &t, &b, &err) == 0);
  CU_ASSERT_DOUBLE_EQUAL(b.memory[0].optimizer, a.memory[0].optimizer * 4,
                         a.memory[0].optimizer * 1e-9);
  /* the shard group is 2 consecutive replicas, the replicas 4 strided ones */
  for (int c = 0; c < t.ncomms; c++) {
    const trace_comm_t *cm = &t.comms[c];
    if (strcmp(cm->name, "dp") == 0)
      CU_ASSERT(cm->sizes[0] == 2 && cm->groups[0][1] == 1);
    if (strcmp(cm->name, "dp_replicas") == 0)
      CU_ASSERT(cm->sizes[0] == 4 && cm->groups[0][1] == 2);
  }
  trace_free(&t);
  train_info_free(&a);
  train_info_free(&b);
}

/* overlap_param_gather: one gather per model chunk opens the step on the DP
 * stream, each chunk's first forward waits for its own, and none closes it. */
static void test_param_gather_beside_the_forward(void) {
  workload_cfg_t w = load_workload(small_model, "\"dp\": 2, \"pp\": 2, \"vpp\": 2, \"zero\": 1",
                                   "\"global_batch\": 8, \"overlap_param_gather\": true");
  CU_ASSERT_EQUAL(count_colls(&w, "allgather", "dp"), 2);
  trace_t t;
  train_info_t info;
  npu_err_t err = {""};
  CU_ASSERT_FATAL(train_generate(&w, &replay_vocab, 8, &t, &info, &err) == 0);
  const trace_program_t *p = &t.programs[t.program_of[0]];
  int first_gather = -1, first_compute = -1, last_gather = -1, last_optimizer = -1;
  for (int i = 0; i < p->nops; i++) {
    const trace_op_t *op = &p->ops[i];
    bool gather = op->type == TRACE_OP_COLL && strcmp(replay_vocab.colls[op->kind], "allgather") == 0 &&
                  strcmp(p->streams[op->stream], "dp") == 0;
    if (gather && first_gather < 0)
      first_gather = i;
    if (gather)
      last_gather = i;
    if (info.programs[t.program_of[0]].parts[i] == TRAIN_PART_COMPUTE && first_compute < 0)
      first_compute = i;
    if (info.programs[t.program_of[0]].parts[i] == TRAIN_PART_OPTIMIZER)
      last_optimizer = i;
  }
  CU_ASSERT(first_gather >= 0 && first_gather < first_compute);
  CU_ASSERT(last_gather < last_optimizer);
  /* exactly one compute-stream op per chunk waits for a gather: nothing at the
   * step's start holds the compute stream until every chunk's gather ends (a
   * join of a dense model's absent expert gather once did) */
  int waiting = 0, second_wait = -1;
  for (int i = 0; i < p->nops; i++) {
    const trace_op_t *op = &p->ops[i];
    if (strcmp(p->streams[op->stream], "compute") != 0)
      continue;
    for (int d = 0; d < op->ndeps; d++) {
      const trace_op_t *dep = &p->ops[op->deps[d]];
      bool on_gather = dep->type == TRACE_OP_COLL &&
                       strcmp(replay_vocab.colls[dep->kind], "allgather") == 0 &&
                       strcmp(p->streams[dep->stream], "dp") == 0;
      waiting += on_gather;
      if (on_gather && waiting == 2)
        second_wait = i;
    }
  }
  CU_ASSERT_EQUAL(waiting, 2);
  CU_ASSERT(second_wait > first_compute); /* the second chunk's, after the first's compute */
  trace_free(&t);
  train_info_free(&info);
  workload_cfg_t off = load_workload(small_model, "\"dp\": 2, \"pp\": 2, \"vpp\": 2, \"zero\": 1",
                                     "\"global_batch\": 8");
  CU_ASSERT_EQUAL(count_colls(&off, "allgather", "dp"), 1);
}

/* Routed experts are replicated over dp x cp / ep ranks only, so ZeRO shards
 * their optimizer states over that many; dense parameters over dp x cp. */
static void test_zero_shards_experts_over_expert_data_parallel(void) {
  workload_cfg_t w = load_workload(small_moe, "\"dp\": 4, \"ep\": 4, \"zero\": 1",
                                   "\"micro_batch\": 1, \"global_batch\": 4");
  train_info_t info;
  generate(&w, &info);
  double params = info.memory[0].weights / 2; /* ZeRO-1 keeps whole weights */
  double experts = 4 * (8.0 / 4) * 3 * 1024 * 1408; /* layers x local experts x 3 mats */
  double want = 12 * ((params - experts) / 4 + experts / 1);
  CU_ASSERT_DOUBLE_EQUAL(info.memory[0].optimizer, want, want * 1e-9);
  train_info_free(&info);
}

/* Megatron's tensor-parallel backward with sequence parallelism: each layer
 * gathers the gradient entering its two parallel regions (the mirror of the
 * forward's reduce-scatters), gathers the two column-parallel inputs again for
 * the weight gradients, and reduce-scatters the two input gradients - and each
 * weight gradient waits for its gather but no matmul waits for a
 * reduce-scatter: the weight gradient overlaps it. Counted on an 8-layer
 * model, one stage, one micro-batch. */
static void test_column_parallel_backward_overlaps_its_communication(void) {
  workload_cfg_t w = load_workload(small_model, "\"tp\": 2, \"sequence_parallel\": true",
                                   "\"micro_batch\": 1, \"global_batch\": 1");
  trace_t t;
  train_info_t info;
  npu_err_t err = {""};
  CU_ASSERT_FATAL(train_generate(&w, &replay_vocab, 8, &t, &info, &err) == 0);
  const trace_program_t *p = &t.programs[0];
  int layers = 8, gathers = 0, scatters = 0, wgrad_after_gather = 0, wgrad_after_scatter = 0;
  for (int i = 0; i < p->nops; i++) {
    const trace_op_t *op = &p->ops[i];
    if (op->type == TRACE_OP_COLL) {
      const char *kind = replay_vocab.colls[op->kind];
      gathers += strcmp(kind, "allgather") == 0;
      scatters += strcmp(kind, "reducescatter") == 0;
    }
    if (op->type != TRACE_OP_SHAPED || strcmp(replay_vocab.compute[op->kind], "matmul") != 0 ||
        op->ndeps != 1 || p->ops[op->deps[0]].type != TRACE_OP_COLL)
      continue;
    const char *kind = replay_vocab.colls[p->ops[op->deps[0]].kind];
    wgrad_after_gather += strcmp(kind, "allgather") == 0;
    wgrad_after_scatter += strcmp(kind, "reducescatter") == 0;
  }
  /* forward: 2 gathers and 2 scatters a layer, the embedding's scatter, the
   * LM head's gather; backward: 4 gathers and 2 scatters a layer, the LM
   * head's gather and scatter, the embedding's gather */
  CU_ASSERT_EQUAL(gathers, 6 * layers + 3);
  CU_ASSERT_EQUAL(scatters, 4 * layers + 2);
  CU_ASSERT_EQUAL(wgrad_after_scatter, 0);
  /* matmuls right after a gather: forward QKV, MLP up (2 a layer) and LM head;
   * backward MLP down and output projection after the mirrored gathers (2 a
   * layer); and the weight gradients of QKV, MLP up (2 a layer) and LM head */
  CU_ASSERT_EQUAL(wgrad_after_gather, 6 * layers + 2);
  trace_free(&t);
  train_info_free(&info);
}

/* Routed experts' gradients are reduced over the ranks holding the same
 * experts (one position of each expert-parallel group), the rest over all
 * data-parallel replicas. dp 4, ep 2: EP groups {0,1}, {2,3}; experts' {0,2}. */
static void test_expert_gradients_reduce_over_their_replicas(void) {
  workload_cfg_t w = load_workload(small_moe, "\"dp\": 4, \"ep\": 2",
                                   "\"micro_batch\": 1, \"global_batch\": 4, "
                                   "\"overlap_grad_reduce\": false");
  trace_t t;
  generate_trace(&w, &t);
  int edp = comm_named(&t, "edp");
  const trace_comm_t *cm = &t.comms[edp];
  const int *g0 = cm->groups[cm->group_of[0]];
  CU_ASSERT(cm->sizes[cm->group_of[0]] == 2 && g0[0] == 0 && g0[1] == 2);
  const trace_program_t *p = &t.programs[0];
  double expert_bytes = 4 * (8.0 / 2) * 3 * 1024 * 1408 * 4; /* layers x local x mats x fp32 */
  int reductions = 0;
  for (int i = 0; i < p->nops; i++)
    if (p->ops[i].type == TRACE_OP_COLL && p->ops[i].comm == edp) {
      reductions++;
      CU_ASSERT_DOUBLE_EQUAL(p->ops[i].bytes, expert_bytes, 1);
    }
  CU_ASSERT_EQUAL(reductions, 1);
  trace_free(&t);
}

/* Rotary embedding runs in every layer (forward and backward); a learned
 * position table is one add at the embedding and parameters of stage 0. */
static void test_position_embeddings(void) {
  const char *learned =
      "\"model\": {\"name\": \"gpt\", \"layers\": 8, \"hidden\": 1024, \"heads\": 8, "
      "\"ffn_hidden\": 4096, \"vocab\": 32000, \"seq_len\": 1024, "
      "\"position_embedding\": \"learned\"}";
  const char *tr = "\"micro_batch\": 1, \"global_batch\": 1";
  workload_cfg_t rope = load_workload(small_model, "\"dp\": 1", tr);
  workload_cfg_t table = load_workload(learned, "\"dp\": 1", tr);
  int counts[2];
  train_info_t info[2];
  const workload_cfg_t *ws[2] = {&rope, &table};
  for (int k = 0; k < 2; k++) {
    trace_t t;
    npu_err_t err = {""};
    CU_ASSERT_FATAL(train_generate(ws[k], &replay_vocab, 8, &t, &info[k], &err) == 0);
    counts[k] = 0;
    for (int i = 0; i < t.programs[0].nops; i++) {
      const trace_op_t *op = &t.programs[0].ops[i];
      counts[k] += op->type == TRACE_OP_SHAPED &&
                   strcmp(replay_vocab.compute[op->kind], "rope") == 0;
    }
    trace_free(&t);
  }
  CU_ASSERT_EQUAL(counts[0], 2 * 8);
  CU_ASSERT_EQUAL(counts[1], 0);
  /* same layers but GELU (2 matrices of 4096) instead of SwiGLU: compare the table alone */
  double layer = 1024.0 * (8 + 2 * 8) * 128 + 8 * 128 * 1024.0 + 2 * 1024.0 * 4096 + 2 * 1024;
  double want = (8 * layer + 2 * 1024.0 * 32000 + 1024.0 * 1024) * 2;
  CU_ASSERT_DOUBLE_EQUAL(info[1].memory[0].weights, want, want * 1e-12);
  train_info_free(&info[0]);
  train_info_free(&info[1]);
}

/* Tied embeddings on two stages: the first and the last stage sum the
 * embedding gradient over a group of the two before the step. */
static void test_tied_embeddings_reduce_between_the_end_stages(void) {
  const char *tr = "\"micro_batch\": 1, \"global_batch\": 2";
  workload_cfg_t tied = load_workload(small_model, "\"pp\": 4", tr);
  tied.model.tied_embeddings = true;
  trace_t t;
  generate_trace(&tied, &t);
  int embd = comm_named(&t, "embd");
  const trace_comm_t *cm = &t.comms[embd];
  CU_ASSERT(cm->sizes[cm->group_of[0]] == 2 && cm->groups[cm->group_of[0]][1] == 3);
  CU_ASSERT_EQUAL(cm->group_of[1], -1);
  for (int pi = 0; pi < t.nprograms; pi++) {
    const trace_program_t *p = &t.programs[pi];
    int n = 0;
    for (int i = 0; i < p->nops; i++)
      if (p->ops[i].type == TRACE_OP_COLL && p->ops[i].comm == embd) {
        n++;
        CU_ASSERT_DOUBLE_EQUAL(p->ops[i].bytes, 1024.0 * 32000 * 4, 1);
      }
    int stage = p->ranks[0]; /* pp only: rank = stage */
    CU_ASSERT_EQUAL(n, stage == 0 || stage == 3 ? 1 : 0);
  }
  trace_free(&t);
}

/* Megatron's pipeline order: every (micro-batch, chunk) runs forward once and
 * backward once, its forward first; the warm-up is forwards only; no more than
 * warm-up + 1 forwards wait for their backward (what memory is sized for); the
 * last stage of plain 1F1B alternates from the start. */
static void test_pipeline_order_keeps_its_laws(void) {
  static const int plans[][3] = {{4, 1, 8}, {4, 2, 8}, {2, 3, 4}, {8, 1, 3}, {4, 4, 12}};
  for (size_t k = 0; k < sizeof plans / sizeof plans[0]; k++) {
    for (int stage = 0; stage < plans[k][0]; stage++) {
      pipeline_t p = {stage, plans[k][0], plans[k][1], plans[k][2]};
      long n = pipeline_steps(&p), cells = p.microbatches * p.chunks, open = 0, most = 0;
      CU_ASSERT_EQUAL(n, 2 * cells);
      char *fwd = calloc((size_t)cells, 1), *bwd = calloc((size_t)cells, 1);
      for (long i = 0; i < n; i++) {
        pipeline_step_t st = pipeline_step(&p, i);
        long cell = st.microbatch * p.chunks + st.chunk;
        CU_ASSERT_FATAL(st.microbatch >= 0 && st.microbatch < p.microbatches && st.chunk >= 0 &&
                        st.chunk < p.chunks);
        if (i < pipeline_warmup(&p))
          CU_ASSERT(!st.backward);
        if (st.backward) {
          CU_ASSERT(fwd[cell] && !bwd[cell]);
          bwd[cell] = 1;
          open--;
        } else {
          CU_ASSERT(!fwd[cell]);
          fwd[cell] = 1;
          open++;
        }
        most = open > most ? open : most;
      }
      CU_ASSERT(memchr(fwd, 0, (size_t)cells) == NULL && memchr(bwd, 0, (size_t)cells) == NULL);
      CU_ASSERT(most <= pipeline_warmup(&p) + 1);
      if (p.chunks == 1 && stage == p.stages - 1)
        CU_ASSERT(pipeline_step(&p, 1).backward);
      free(fwd);
      free(bwd);
    }
  }
}

/* ---- DualPipeV ---- */

/* Replays DualPipeV's order on every stage with fixed times per pass (a
 * forward f, a whole backward b of which w is the weight gradients, a paired
 * forward and backward f + b) and free messages: the step's makespan. A pass
 * starts when its stage is free and its input is ready: chunk 0's forward
 * from the stage before, chunk 1's from the stage after (at the last stage,
 * from its own chunk 0), the backwards the other way, chunk 1's starting from
 * the loss on stage 0. */
typedef struct {
  double *end; /* [stage][forward/backward][chunk][micro-batch]: when it ended; < 0: not yet */
  int n;
  long m;
} dpv_ends_t;

static double *dpv_end(dpv_ends_t *e, int stage, int bwd, int chunk, long mb) {
  return &e->end[(((long)stage * 2 + bwd) * 2 + chunk) * e->m + mb];
}

/* When the input of a pass is ready (< 0: not yet); 0 for the embedding. */
static double dpv_input(dpv_ends_t *e, int r, int bwd, int c, long mb) {
  if (!bwd) {
    if (c == 0)
      return r == 0 ? 0 : *dpv_end(e, r - 1, 0, 0, mb);
    return r == e->n - 1 ? *dpv_end(e, r, 0, 0, mb) : *dpv_end(e, r + 1, 0, 1, mb);
  }
  if (c == 1)
    return r == 0 ? *dpv_end(e, r, 0, 1, mb) : *dpv_end(e, r - 1, 1, 1, mb);
  return r == e->n - 1 ? *dpv_end(e, r, 1, 1, mb) : *dpv_end(e, r + 1, 1, 0, mb);
}

static double dpv_makespan(int n, long m, double f, double b, double w) {
  dpv_ends_t e = {malloc((size_t)n * 4 * m * sizeof(double)), n, m};
  for (long i = 0; i < (long)n * 4 * m; i++)
    e.end[i] = -1;
  pipe_op_t **ops = malloc((size_t)n * sizeof *ops);
  long *count = calloc((size_t)n, sizeof *count), *next = calloc((size_t)n, sizeof *next);
  double *free_at = calloc((size_t)n, sizeof *free_at), makespan = 0;
  for (int r = 0; r < n; r++) {
    pipeline_t p = {r, n, 2, m};
    count[r] = pipeline_dualpipev(&p, NULL);
    ops[r] = malloc((size_t)count[r] * sizeof **ops);
    pipeline_dualpipev(&p, ops[r]);
  }
  for (bool moved = true; moved;) {
    moved = false;
    for (int r = 0; r < n; r++)
      for (; next[r] < count[r]; next[r]++) {
        pipe_op_t o = ops[r][next[r]];
        double start = free_at[r], in;
        if (o.kind == PIPE_WEIGHTS) {
          free_at[r] += w;
          continue;
        }
        bool fwd = o.kind != PIPE_BACKWARD, bwd = o.kind != PIPE_FORWARD;
        int bc = o.kind == PIPE_BACKWARD ? o.chunk : o.bwd_chunk;
        long bm = o.kind == PIPE_BACKWARD ? o.microbatch : o.bwd_microbatch;
        if (fwd && (in = dpv_input(&e, r, 0, o.chunk, o.microbatch)) < 0)
          break;
        start = fwd ? fmax(start, in) : start;
        if (bwd && (in = dpv_input(&e, r, 1, bc, bm)) < 0)
          break;
        start = bwd ? fmax(start, in) : start;
        free_at[r] = start + (fwd ? f : 0) + (bwd ? b - (o.defer_weights ? w : 0) : 0);
        if (fwd)
          *dpv_end(&e, r, 0, o.chunk, o.microbatch) = free_at[r];
        if (bwd)
          *dpv_end(&e, r, 1, bc, bm) = free_at[r];
        moved = true;
      }
  }
  for (int r = 0; r < n; r++) {
    CU_ASSERT_EQUAL(next[r], count[r]); /* no stage waits forever */
    makespan = fmax(makespan, free_at[r]);
    free(ops[r]);
  }
  free(ops);
  free(count);
  free(next);
  free(free_at);
  free(e.end);
  return makespan;
}

/* DualPipeV's order on every stage: each (chunk, micro-batch) runs forward
 * once and backward once, its forward first; every deferred backward's
 * weights are popped once, after it; 2 pp + 1 chunk activations at most (the
 * published PP + 1 of 2 pp virtual stages); and with F = W, B = 2W or F = 2,
 * B = 3, W = 1 and free messages the bubble is the published (PP/2 - 1)(F&B +
 * B - 3W), PP = 2 pp stages, F&B = F + B without overlap (deepseek-ai/DualPipe
 * README): a third to a half of 1F1B's (pp - 1)(2F + 2B) on the same stages here. */
static void test_dualpipev_order_keeps_its_laws(void) {
  static const int plans[][2] = {{2, 4}, {3, 6}, {4, 8}, {4, 11}, {8, 16}, {8, 21}};
  for (size_t k = 0; k < sizeof plans / sizeof plans[0]; k++) {
    int n = plans[k][0];
    long m = plans[k][1];
    for (int stage = 0; stage < n; stage++) {
      pipeline_t p = {stage, n, 2, m};
      CU_ASSERT_EQUAL(pipeline_dualpipev_min_microbatches(&p), 2 * n);
      long count = pipeline_dualpipev(&p, NULL), queued = 0, popped = 0;
      CU_ASSERT(count <= 6 * m);
      pipe_op_t *ops = malloc((size_t)count * sizeof *ops);
      CU_ASSERT_EQUAL(pipeline_dualpipev(&p, ops), count);
      char *fwd = calloc((size_t)(2 * m), 1), *bwd = calloc((size_t)(2 * m), 1);
      for (long i = 0; i < count; i++) {
        pipe_op_t o = ops[i];
        if (o.kind == PIPE_WEIGHTS) {
          CU_ASSERT(popped < queued);
          popped++;
          continue;
        }
        if (o.kind != PIPE_BACKWARD) {
          CU_ASSERT_FATAL(o.microbatch >= 0 && o.microbatch < m && o.chunk >= 0 && o.chunk < 2);
          CU_ASSERT(!fwd[o.chunk * m + o.microbatch]);
          fwd[o.chunk * m + o.microbatch] = 1;
        }
        if (o.kind != PIPE_FORWARD) {
          int c = o.kind == PIPE_BACKWARD ? o.chunk : o.bwd_chunk;
          long mb = o.kind == PIPE_BACKWARD ? o.microbatch : o.bwd_microbatch;
          CU_ASSERT_FATAL(mb >= 0 && mb < m && c >= 0 && c < 2);
          CU_ASSERT(fwd[c * m + mb] && !bwd[c * m + mb]);
          bwd[c * m + mb] = 1;
          queued += o.defer_weights;
        }
      }
      CU_ASSERT_EQUAL(popped, queued);
      CU_ASSERT(memchr(fwd, 0, (size_t)(2 * m)) == NULL && memchr(bwd, 0, (size_t)(2 * m)) == NULL);
      CU_ASSERT_EQUAL(pipeline_dualpipev_in_flight(&p), 2 * n + 1);
      free(fwd);
      free(bwd);
      free(ops);
    }
    static const double times[][3] = {{1, 2, 1}, {2, 3, 1}};
    for (int t = 0; t < 2; t++) {
      double f = times[t][0], b = times[t][1], w = times[t][2];
      double bubble = dpv_makespan(n, m, f, b, w) - 2 * m * (f + b);
      CU_ASSERT_DOUBLE_EQUAL(bubble, (n - 1) * ((f + b) + b - 3 * w), 1e-9);
      CU_ASSERT(bubble <= 0.5 * (n - 1) * (2 * f + 2 * b) + 1e-9);
    }
  }
}

/* The V on the generator: the LM head, loss and MTP module on stage 0 with the
 * embedding (their weights and logits there, no tied-embedding reduction
 * between stages), each stage holding virtual stages s and 2 pp - 1 - s, and
 * the same matmuls as the interleaved schedule's, the deferred weight
 * gradients included. */
static void test_dualpipev_on_the_generator(void) {
  workload_cfg_t v = load_workload(small_mla, "\"pp\": 2, \"vpp\": 2, \"dp\": 2, \"ep\": 2, "
                                   "\"pp_schedule\": \"dualpipev\"",
                                   "\"global_batch\": 8");
  workload_cfg_t inter = v;
  inter.parallel.pp_schedule = PP_SCHEDULE_1F1B;
  int first;
  CU_ASSERT_EQUAL(workload_chunk_layers(&v, 0, 1, &first), 1);
  CU_ASSERT_EQUAL(first, 3); /* virtual stage 3 */
  CU_ASSERT_EQUAL(workload_chunk_layers(&v, 1, 1, &first), 1);
  CU_ASSERT_EQUAL(first, 2);
  CU_ASSERT_EQUAL(workload_head_stage(&v.parallel), 0);
  train_info_t a, b;
  generate_and_check(&v, &a);
  generate_and_check(&inter, &b);
  CU_ASSERT(a.memory[0].temporary > 0 && a.memory[1].temporary == 0); /* the logits */
  CU_ASSERT(a.memory[0].weights > b.memory[0].weights);
  CU_ASSERT_DOUBLE_EQUAL(a.memory[0].weights + a.memory[1].weights,
                         b.memory[0].weights + b.memory[1].weights, 1e-6 * b.memory[0].weights);
  CU_ASSERT_DOUBLE_EQUAL(a.model_flops, b.model_flops, 0);
  trace_t ta, tb;
  generate_trace(&v, &ta);
  generate_trace(&inter, &tb);
  double flops[2] = {0, 0};
  const trace_t *ts[2] = {&ta, &tb};
  for (int k = 0; k < 2; k++)
    for (int pi = 0; pi < ts[k]->nprograms; pi++)
      for (int i = 0; i < ts[k]->programs[pi].nops; i++) {
        const trace_op_t *op = &ts[k]->programs[pi].ops[i];
        if (op->type == TRACE_OP_SHAPED && strcmp(replay_vocab.compute[op->kind], "matmul") == 0)
          flops[k] += (double)op->dims[0] * op->dims[1] * op->dims[2] *
                      (op->dims[3] > 0 ? op->dims[3] : 1);
      }
  CU_ASSERT(flops[0] > 0);
  CU_ASSERT_DOUBLE_EQUAL(flops[0], flops[1], 1e-9 * flops[1]);
  CU_ASSERT_EQUAL(ta.comms[comm_named(&ta, "embd")].sizes[0], 1); /* both ends on stage 0 */
  trace_free(&ta);
  trace_free(&tb);
  train_info_free(&a);
  train_info_free(&b);
}

/* The generator says what each op is for and which program is which stage
 * (train_program_t), typed: checked here against what the trace spells, once,
 * so that no report has to read it back from names. A plan with every part:
 * tp 2, cp 2, pp 2, ep 2 over dp 2, with the optimizer. */
static void test_parts_and_stages_are_typed(void) {
  workload_cfg_t w = load_workload(small_moe, "\"tp\": 2, \"cp\": 2, \"pp\": 2, \"dp\": 2, "
                                   "\"ep\": 2", "\"micro_batch\": 1, \"global_batch\": 4");
  trace_t t;
  train_info_t info;
  npu_err_t err = {""};
  CU_ASSERT_FATAL(train_generate(&w, &replay_vocab, 8, &t, &info, &err) == 0);
  CU_ASSERT_FATAL(info.nprograms == t.nprograms);
  int seen[TRAIN_PART_COUNT + 1] = {0};
  for (int pi = 0; pi < t.nprograms; pi++) {
    const trace_program_t *p = &t.programs[pi];
    const train_program_t *gp = &info.programs[pi];
    /* Megatron's order tp, cp, dp, pp: rank = tp + 2 (cp + 2 (dp + 2 pp)) */
    for (int i = 0; i < p->nranks; i++) {
      CU_ASSERT_EQUAL(p->ranks[i] / 8, gp->stage);
      CU_ASSERT_EQUAL(p->ranks[i] / 2 % 2, gp->cp_pos);
    }
    for (int i = 0; i < p->nops; i++) {
      const trace_op_t *op = &p->ops[i];
      train_part_t want = TRAIN_PART_NONE;
      if (op->type == TRACE_OP_SHAPED)
        want = strcmp(p->streams[op->stream], "optimizer") == 0 ? TRAIN_PART_OPTIMIZER
                                                               : TRAIN_PART_COMPUTE;
      else if (op->type == TRACE_OP_COLL)
        want = strcmp(t.comms[op->comm].name, "tp") == 0   ? TRAIN_PART_TP
               : strcmp(t.comms[op->comm].name, "ep") == 0 ? TRAIN_PART_EP
                                                           : TRAIN_PART_DP;
      else if (op->type == TRACE_OP_SEND || op->type == TRACE_OP_RECV)
        want = strcmp(trace_tag(p, op), "cp") == 0 ? TRAIN_PART_CP : TRAIN_PART_PP;
      CU_ASSERT_EQUAL(gp->parts[i], want);
      seen[gp->parts[i]]++;
    }
  }
  for (int k = 0; k <= TRAIN_PART_COUNT; k++)
    CU_ASSERT(seen[k] > 0);
  trace_free(&t);
  train_info_free(&info);
}

/* names without drop, into out (room for n); returns how many are left. */
static int names_without(const char *const *names, int n, const char *drop, const char **out) {
  int kept = 0;
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], drop) != 0)
      out[kept++] = names[i];
  return kept;
}

/* Every op kind the generator emits is resolved once against the caller's
 * vocabulary: one it lacks is an internal error naming it, never kind -1. */
static void test_a_kind_missing_from_the_vocabulary_is_an_error(void) {
  workload_cfg_t w = load_workload(small_model, "\"dp\": 2",
                                   "\"micro_batch\": 1, \"global_batch\": 2");
  const trace_vocab_t *rv = &replay_vocab;
  const char **compute = malloc((size_t)rv->ncompute * sizeof *compute);
  const char **colls = malloc((size_t)rv->ncolls * sizeof *colls);
  const char **dtypes = malloc((size_t)rv->ndtypes * sizeof *dtypes);
  trace_vocab_t no_adam = *rv, no_allreduce = *rv, no_fp32 = *rv;
  no_adam.ncompute = names_without(rv->compute, rv->ncompute, "adam", compute);
  no_adam.compute = compute;
  no_allreduce.ncolls = names_without(rv->colls, rv->ncolls, "allreduce", colls);
  no_allreduce.colls = colls;
  no_fp32.ndtypes = names_without(rv->dtypes, rv->ndtypes, "fp32", dtypes);
  no_fp32.dtypes = dtypes;
  const struct {
    const trace_vocab_t *vocab;
    const char *lacks;
  } cases[] = {{&no_adam, "\"adam\""}, {&no_allreduce, "\"allreduce\""}, {&no_fp32, "\"fp32\""}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    trace_t t;
    train_info_t info;
    npu_err_t err = {""};
    CU_ASSERT(train_generate(&w, cases[k].vocab, 8, &t, &info, &err) == -1);
    CU_ASSERT(strncmp(err.msg, "internal error: ", 16) == 0 && strstr(err.msg, cases[k].lacks) != NULL);
    trace_free(&t);
    train_info_free(&info);
  }
  free(compute);
  free(colls);
  free(dtypes);
}

/* Counts the unfused ops of a step's programs by kind, after a round trip
 * through the trace format; each maps to an unfused op descriptor. */
static void count_unfused(const workload_cfg_t *w, int counts[OP_KIND_COUNT]) {
  trace_t t, back;
  npu_err_t err = {""};
  train_info_t info;
  CU_ASSERT_FATAL(train_generate(w, &replay_vocab, 8, &t, &info, &err) == 0);
  const char *dir = make_temp_dir();
  char path[256];
  snprintf(path, sizeof path, "%s/step.json", dir);
  CU_ASSERT_FATAL(trace_write(&t, &replay_vocab, path, &err) == 0);
  CU_ASSERT_FATAL(trace_read(path, &replay_vocab, &back, &err) == 0);
  memset(counts, 0, OP_KIND_COUNT * sizeof *counts);
  for (int p = 0; p < back.nprograms; p++)
    for (int i = 0; i < back.programs[p].nops; i++) {
      const trace_op_t *op = &back.programs[p].ops[i];
      if (op->type != TRACE_OP_SHAPED)
        continue;
      op_desc_t d;
      replay_op_desc(op, &d);
      CU_ASSERT_EQUAL(op->unfused, d.form == OP_FORM_UNFUSED);
      CU_ASSERT_EQUAL(op->unfused, t.programs[p].ops[i].unfused);
      counts[d.kind] += op->unfused;
    }
  trace_free(&back);
  trace_free(&t);
  train_info_free(&info);
  remove_temp_dir(dir);
}

/* training.kernels picks fused or unfused swiglu and cross-entropy; the choice
 * travels typed through the trace to the op descriptor. */
static void test_the_kernels_a_workload_names_reach_the_ops(void) {
  int fused[OP_KIND_COUNT], unfused[OP_KIND_COUNT];
  workload_cfg_t f = load_workload(small_model, "\"pp\": 2", "\"global_batch\": 4");
  workload_cfg_t u = load_workload(small_model, "\"pp\": 2",
                                   "\"global_batch\": 4, \"kernels\": {\"swiglu\": "
                                   "\"unfused\", \"cross_entropy\": \"unfused\"}");
  count_unfused(&f, fused);
  count_unfused(&u, unfused);
  for (int k = 0; k < OP_KIND_COUNT; k++)
    CU_ASSERT_EQUAL(fused[k], 0);
  CU_ASSERT(unfused[OP_SWIGLU] >= 2 * 8); /* forward and backward of every layer */
  CU_ASSERT_EQUAL(unfused[OP_CROSS_ENTROPY], 4); /* one per micro-batch, on the last stage */
  CU_ASSERT_EQUAL(unfused[OP_MUL], unfused[OP_CROSS_ENTROPY]); /* its backward */
}

CU_TestInfo train_tests[] = {
    {"every parallel plan checks", test_every_plan_checks},
    {"pipeline order keeps its laws", test_pipeline_order_keeps_its_laws},
    {"model FLOPs follow the published formula", test_model_flops_follow_the_published_formula},
    {"activation memory matches Korthikanti", test_activation_memory_matches_korthikanti},
    {"uneven stages hold their layers", test_uneven_stages_hold_their_layers},
    {"a per-stage layer list holds its layers", test_stage_list_holds_its_layers},
    {"a per-virtual-stage layer list holds its layers", test_virtual_stage_list_holds_its_layers},
    {"model.head_dim widens FLOPs and activations", test_head_dim_in_training},
    {"latent attention in training", test_latent_attention_in_training},
    {"multi-token prediction on the last stage", test_multi_token_prediction_on_the_last_stage},
    {"GeGLU is a gated MLP", test_geglu_is_a_gated_mlp},
    {"sliding-window attention", test_sliding_window_attention},
    {"LongCat-Flash: zero experts and shortcut MoE layers", test_longcat_layers},
    {"experts folded over tensor-parallel ranks", test_experts_folded_over_tensor_parallel_ranks},
    {"expert tensor parallel group of its own", test_expert_tensor_parallel_group_of_its_own},
    {"context-parallel algorithms", test_context_parallel_algorithms},
    {"expert imbalance in training", test_expert_imbalance_in_training},
    {"TP communication fused with its matmuls", test_tp_comm_fused_with_matmuls},
    {"activation memory counts what the layer keeps",
     test_activation_memory_counts_what_the_layer_keeps},
    {"gradient precision sizes buffers", test_gradient_precision_sizes_buffers},
    {"ZeRO shards optimizer states", test_zero_shards_optimizer_states},
    {"ZeRO stages communicate as they shard", test_zero_stages_communicate_as_they_shard},
    {"param gather beside the forward", test_param_gather_beside_the_forward},
    {"hybrid sharding shards in groups", test_hybrid_sharding_shards_in_groups},
    {"position embeddings", test_position_embeddings},
    {"tied embeddings reduce between the end stages",
     test_tied_embeddings_reduce_between_the_end_stages},
    {"expert gradients reduce over their replicas",
     test_expert_gradients_reduce_over_their_replicas},
    {"ZeRO shards experts over expert data parallelism",
     test_zero_shards_experts_over_expert_data_parallel},
    {"column-parallel backward overlaps its communication",
     test_column_parallel_backward_overlaps_its_communication},
    {"parts and stages are typed", test_parts_and_stages_are_typed},
    {"DualPipeV's order keeps its laws", test_dualpipev_order_keeps_its_laws},
    {"DualPipeV on the generator", test_dualpipev_on_the_generator},
    {"a kind missing from the vocabulary is an error",
     test_a_kind_missing_from_the_vocabulary_is_an_error},
    {"the kernels a workload names reach the ops", test_the_kernels_a_workload_names_reach_the_ops},
    CU_TEST_INFO_NULL,
};
