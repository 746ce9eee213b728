/* test_op.c - the chip model: published matmul throughput, and the laws every
 * prediction must obey (roofline floor, more cores never slower, small and
 * skinny shapes lose efficiency, streaming vector ops run at HBM speed, the
 * unfused form of a vector op is the kernels eager code runs), fused
 * attention's laws (causal, backward, heads, waves, its kernels), memoisation,
 * and bad shapes refused. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_cost.h"
#include "power.h"
#include "suites.h"
#include "test_util.h"

static op_result_t cost(const chip_cfg_t *chip, op_kind_t kind, chip_dtype_t dt, int64_t d0,
                        int64_t d1, int64_t d2, int64_t d3) {
  op_desc_t op = {.kind = kind, .dtype = dt, .out_dtype = dt, .dims = {d0, d1, d2, d3, 0}};
  npu_err_t err = {""};
  CU_ASSERT_EQUAL(op_check(chip, &op, &err), 0);
  op_result_t r;
  op_model(chip, &op, &r);
  return r;
}

static op_result_t cost_form(const chip_cfg_t *chip, op_kind_t kind, op_form_t form,
                             int64_t rows, int64_t cols) {
  op_desc_t op = {.kind = kind, .dtype = CHIP_DTYPE_BF16, .dims = {rows, cols}, .form = form};
  op.out_dtype = op_default_out_dtype(kind, op.dtype);
  npu_err_t err = {""};
  CU_ASSERT_EQUAL(op_check(chip, &op, &err), 0);
  op_result_t r;
  op_model(chip, &op, &r);
  return r;
}

/* tests/data/validation/gemm_peak.csv: chip, dtype, m, n, k (empty: 8192^3), tflops,
 * peak, source. Held within 5%, except a source's best of a size search (stas00's
 * maximum achievable matmul): the top of a distribution over shapes, which the
 * cubes now calibrated on ordinary kernel shapes (H100 on ops_h100_calib.csv,
 * whose card reaches about 690 TFLOP/s on large GEMMs where that search reached
 * 794.5; A100 on ops_a100.csv) do not reach at 8192^3; those rows are reported and
 * held within 15%. */
static void test_large_matmuls_match_published_throughput(void) {
  static const struct {
    const char *csv_chip, *system;
  } map[] = {{"a100-sxm4-80gb", "a100-dgx.json"}, {"h100-sxm", "h100-dgx.json"},
             {"ascend-910b", "ascend-910b.json"}};
  FILE *f = fopen(NPUSIM_SOURCE_DIR "/tests/data/validation/gemm_peak.csv", "r");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  char line[512];
  int rows = 0;
  printf("\n  %-16s %-5s %-17s %9s %9s %7s\n", "chip", "dtype", "shape", "measured", "model",
         "error");
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#' || strncmp(line, "chip,", 5) == 0)
      continue;
    char chip[64] = "", dt[16] = "", m[16] = "", n[16] = "", k[16] = "";
    double meas = 0;
    char *fields[6] = {chip, dt, m, n, k, NULL}, *p = line;
    for (int i = 0; i < 5; i++) {
      size_t len = strcspn(p, ",");
      snprintf(fields[i], i == 0 ? 64 : 16, "%.*s", (int)len, p);
      p += len + (p[len] == ',');
    }
    char *rest = NULL;
    meas = strtod(p, &rest);
    bool best_of_search = strstr(rest, "best of size search") != NULL;
    const char *system = NULL;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
      if (strcmp(chip, map[i].csv_chip) == 0)
        system = map[i].system;
    CU_ASSERT_PTR_NOT_NULL_FATAL(system);
    system_cfg_t s = load_system(system, NULL);
    chip_dtype_t dtype;
    CU_ASSERT_EQUAL_FATAL(chip_dtype_parse(dt, &dtype), 0);
    int64_t size = m[0] ? atoll(m) : 8192;
    op_result_t r = cost(&s.chip, OP_MATMUL, dtype, size, n[0] ? atoll(n) : size,
                         k[0] ? atoll(k) : size, 0);
    double err = (r.tflops - meas) / meas;
    printf("  %-16s %-5s %5lld^3          %9.1f %9.1f %+6.1f%%\n", chip, dt, (long long)size, meas,
           r.tflops, 100 * err);
    CU_ASSERT(fabs(err) <= (best_of_search ? 0.15 : 0.05));
    rows++;
  }
  fclose(f);
  CU_ASSERT(rows >= 5);
}

static void test_no_op_beats_the_roofline(void) {
  const char *systems[] = {"ascend-910b.json", "a100-dgx.json", "h100-dgx.json",
                           "ascend-910a.json"};
  static const int64_t shapes[][4] = {{8192, 8192, 8192, 0}, {16, 8192, 8192, 0},
                                      {4096, 128, 4096, 8}, {100, 3000, 77, 0},
                                      {65536, 16384, 1024, 0}};
  for (size_t si = 0; si < sizeof systems / sizeof systems[0]; si++) {
    system_cfg_t s = load_system(systems[si], NULL);
    chip_dtype_t dt = s.chip.cube.macs_per_cycle[CHIP_DTYPE_BF16] > 0 ? CHIP_DTYPE_BF16
                                                                       : CHIP_DTYPE_FP16;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
      op_result_t r = cost(&s.chip, OP_MATMUL, dt, shapes[i][0], shapes[i][1], shapes[i][2],
                           shapes[i][3]);
      double floor_s = fmax(r.flops / chip_cube_peak_flops(&s.chip, dt),
                            r.hbm_bytes / chip_hbm_effective_bw(&s.chip));
      CU_ASSERT(r.time_s >= floor_s);
    }
    for (op_kind_t k = OP_ADD; k <= OP_REDUCE_SUM; k++) { /* the vector ops */
      op_result_t r = cost(&s.chip, k, CHIP_DTYPE_FP16, 4096, 8192, 0, 0);
      CU_ASSERT(r.time_s >= r.hbm_bytes / chip_hbm_effective_bw(&s.chip));
      for (op_form_t f = 0; f < OP_FORM_COUNT; f++) /* and in both forms, small and large */
        for (int64_t rows = 64; rows <= 16384; rows *= 16) {
          r = cost_form(&s.chip, k, f, rows, 12288);
          CU_ASSERT(r.time_s >= r.hbm_bytes / chip_hbm_effective_bw(&s.chip));
          CU_ASSERT(isfinite(r.time_s) && r.time_s > 0);
        }
    }
    op_result_t a = cost(&s.chip, OP_ATTN_FWD, dt, 2, 16, 2048, 128);
    CU_ASSERT(a.time_s >= a.flops / chip_cube_peak_flops(&s.chip, dt));
  }
}

/* The power model (hw_models/power.h) against each chip's power limit. Chips
 * that throttle (h100-dgx: chip.power.clock_GHz set): the dense 8192^3 GEMM at
 * chip.freq_GHz, where the model gives its measured TFLOP/s, sits at max_W
 * (within 1%) without throttling, and no op of a spread of shapes (matmul,
 * fused attention, decode attention, vector ops) draws more than max_W at the
 * chip's clock or the sustained one. Chips that do not: at the sustained clock
 * no matmul, decode attention or vector op passes max_W and the GEMM draws at
 * least 80% of it; fused attention's power is printed (cube and vector busy
 * together pass the limit, which these chips do not throttle to). */
static void check_ops_within_limit(const char *system, const chip_cfg_t *chip, bool strict) {
  chip_dtype_t dt = CHIP_DTYPE_BF16;
  double max_W = chip->power.max_W * 1.0001;
  static const int64_t mm[][4] = {{16, 8192, 8192, 1}, {4096, 4096, 4096, 1},
                                  {1024, 28672, 8192, 1}, {128, 128, 128, 64},
                                  {16384, 16384, 16384, 1}};
  for (size_t i = 0; i < sizeof mm / sizeof mm[0]; i++) {
    op_result_t r = cost(chip, OP_MATMUL, dt, mm[i][0], mm[i][1], mm[i][2], mm[i][3]);
    if (power_op_W(chip, &r) > max_W)
      printf("\n  %s: matmul %lld,%lld,%lld,%lld draws %.0f W (cube %.2f, %.0f GB/s)", system,
             (long long)mm[i][0], (long long)mm[i][1], (long long)mm[i][2], (long long)mm[i][3],
             power_op_W(chip, &r), r.util[PIPE_CUBE], r.hbm_GBps);
    CU_ASSERT(power_op_W(chip, &r) <= max_W);
    CU_ASSERT(power_op_W(chip, &r) >= chip->power.idle_W);
  }
  op_kind_t attn[] = {OP_ATTN_FWD, OP_ATTN_BWD};
  for (size_t i = 0; i < 2; i++) {
    op_result_t r = cost(chip, attn[i], dt, 4, 32, 4096, 128);
    printf(" | %s %.0f W at %.2f GHz", op_kind_names[attn[i]], power_op_W(chip, &r),
           r.clock_hz / 1e9);
    if (strict)
      CU_ASSERT(power_op_W(chip, &r) <= max_W);
  }
  op_result_t dec = cost(chip, OP_ATTN_DECODE, dt, 64, 32, 4096, 128);
  CU_ASSERT(power_op_W(chip, &dec) <= max_W);
  for (op_kind_t k = OP_ADD; k <= OP_REDUCE_SUM; k++) {
    op_result_t r = cost(chip, k, dt, 8192, 8192, 0, 0);
    CU_ASSERT(power_op_W(chip, &r) <= max_W);
  }
}

static void test_no_op_draws_more_than_the_power_limit(void) {
  const char *systems[] = {"ascend-910b.json", "a100-dgx.json", "h100-dgx.json",
                           "ascend-910c-cm384.json"};
  int throttling = 0;
  for (size_t s = 0; s < sizeof systems / sizeof systems[0]; s++) {
    system_cfg_t sys = load_system(systems[s], NULL);
    chip_cfg_t sustained = sys.chip;
    sustained.freq_hz *= sustained.sustained_clock;
    CU_ASSERT_FATAL(power_modelled(&sys.chip) && sys.chip.power.max_W > 0);
    bool throttles = power_throttles(&sys.chip);
    throttling += throttles;
    const chip_cfg_t *at = throttles ? &sys.chip : &sustained;
    op_result_t gemm = cost(at, OP_MATMUL, CHIP_DTYPE_BF16, 8192, 8192, 8192, 1);
    double w = power_op_W(at, &gemm);
    printf("\n  %-24s 8192^3 GEMM %5.1f W of max_W %4.0f at %.2f GHz", systems[s], w,
           sys.chip.power.max_W, gemm.clock_hz / 1e9);
    CU_ASSERT(w <= sys.chip.power.max_W * 1.0001);
    if (throttles) {
      CU_ASSERT(w >= 0.99 * sys.chip.power.max_W);
      CU_ASSERT_DOUBLE_EQUAL(gemm.clock_hz, sys.chip.freq_hz, 1e-9 * sys.chip.freq_hz);
      check_ops_within_limit(systems[s], &sys.chip, true);
      check_ops_within_limit(systems[s], &sustained, true);
    } else {
      CU_ASSERT(w >= 0.8 * sys.chip.power.max_W);
      check_ops_within_limit(systems[s], &sustained, false);
    }
  }
  CU_ASSERT(throttling >= 1); /* the law above is exercised on a throttling chip */
}

/* Throttling (op_cost.c, power.h) with known answers on h100-dgx: an op over
 * a lowered max_W runs at the clock where it draws max_W exactly; a compute-
 * bound GEMM's time stretches by the clock ratio (its launch overhead does
 * not), an HBM-bound copy's time does not move; a lower limit never gives a
 * higher clock; max_W = 0 or clock_GHz = 0 turns throttling off; unit power
 * follows (f / clock_GHz)^k. */
static void test_ops_throttle_at_the_power_limit(void) {
  system_cfg_t sys = load_system("h100-dgx.json", NULL);
  chip_cfg_t chip = sys.chip;
  double f0 = chip.freq_hz;
  CU_ASSERT_FATAL(power_throttles(&chip));
  CU_ASSERT_DOUBLE_EQUAL(power_unit_scale(&chip, 0.5 * chip.power.clock_hz),
                         pow(0.5, chip.power.clock_exponent), 1e-12);
  chip_cfg_t off = chip;
  off.power.max_W = 0;
  op_result_t free_gemm = cost(&off, OP_MATMUL, CHIP_DTYPE_BF16, 8192, 8192, 8192, 1);
  CU_ASSERT_EQUAL(free_gemm.clock_hz, f0);
  double prev_clock = f0;
  for (double limit = 650; limit >= 350; limit -= 100) {
    chip.power.max_W = limit;
    op_result_t g = cost(&chip, OP_MATMUL, CHIP_DTYPE_BF16, 8192, 8192, 8192, 1);
    CU_ASSERT(g.clock_hz < prev_clock);
    CU_ASSERT_DOUBLE_EQUAL(power_op_W(&chip, &g), limit, 1e-3 * limit);
    double overhead_s = chip.cube.op_overhead_s;
    CU_ASSERT_DOUBLE_EQUAL((g.time_s - overhead_s) / (free_gemm.time_s - overhead_s),
                           f0 / g.clock_hz, 1e-3 * f0 / g.clock_hz);
    prev_clock = g.clock_hz;
  }
  /* gelu is bound by HBM with its vector cores a third busy: holding it 10 W
   * lower lowers its clock (to about 0.78 of it), not its time */
  chip = sys.chip;
  op_result_t gelu = cost(&chip, OP_GELU, CHIP_DTYPE_BF16, 8192, 8192, 0, 0);
  CU_ASSERT_EQUAL(gelu.clock_hz, f0);
  CU_ASSERT_EQUAL(gelu.bound, PIPE_HBM);
  CU_ASSERT(gelu.util[PIPE_VECTOR] > 0.2);
  chip.power.max_W = power_op_W(&chip, &gelu) - 10;
  op_result_t held = cost(&chip, OP_GELU, CHIP_DTYPE_BF16, 8192, 8192, 0, 0);
  CU_ASSERT(held.clock_hz < 0.9 * f0 && held.clock_hz > 0.5 * f0);
  CU_ASSERT_DOUBLE_EQUAL(held.time_s, gelu.time_s, 1e-6 * gelu.time_s);
  CU_ASSERT_DOUBLE_EQUAL(power_op_W(&chip, &held), chip.power.max_W, 1e-3 * chip.power.max_W);
  /* no clock stated: unit power does not follow the clock, nothing throttles */
  chip = sys.chip;
  chip.power.clock_hz = 0;
  chip.power.max_W = 350;
  CU_ASSERT_FALSE(power_throttles(&chip));
  op_result_t g = cost(&chip, OP_MATMUL, CHIP_DTYPE_BF16, 8192, 8192, 8192, 1);
  CU_ASSERT_EQUAL(g.clock_hz, f0);
  CU_ASSERT(power_op_W(&chip, &g) > 350);
}

static void test_more_cores_are_never_slower(void) {
  system_cfg_t s = load_system("ascend-910b.json", NULL);
  static const int64_t shapes[][3] = {{8192, 8192, 8192}, {1000, 3000, 4096}, {16, 512, 8192},
                                      {4096, 11008, 4096}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    double prev = INFINITY, prev_vec = INFINITY;
    for (int cores = 1; cores <= 32; cores++) {
      s.chip.cube.cores = cores;
      s.chip.vector.cores = 2 * cores;
      op_result_t r = cost(&s.chip, OP_MATMUL, CHIP_DTYPE_BF16, shapes[i][0], shapes[i][1],
                           shapes[i][2], 0);
      CU_ASSERT(r.time_s <= prev * (1 + 1e-12));
      if (r.time_s > prev * (1 + 1e-12))
        fprintf(stderr, "\n  %lldx%lldx%lld: %d cores %.3f us > %.3f us with fewer\n",
                (long long)shapes[i][0], (long long)shapes[i][1], (long long)shapes[i][2], cores,
                r.time_s * 1e6, prev * 1e6);
      prev = r.time_s;
      op_result_t v = cost(&s.chip, OP_LAYERNORM, CHIP_DTYPE_BF16, shapes[i][0], shapes[i][1], 0, 0);
      CU_ASSERT(v.time_s <= prev_vec * (1 + 1e-12));
      prev_vec = v.time_s;
    }
  }
}

static void test_small_and_skinny_shapes_lose_efficiency(void) {
  system_cfg_t s = load_system("ascend-910b.json", NULL);
  double big = cost(&s.chip, OP_MATMUL, CHIP_DTYPE_BF16, 8192, 8192, 8192, 0).tflops;
  double skinny = cost(&s.chip, OP_MATMUL, CHIP_DTYPE_BF16, 16, 8192, 8192, 0).tflops;
  double small = cost(&s.chip, OP_MATMUL, CHIP_DTYPE_BF16, 512, 512, 512, 0).tflops;
  CU_ASSERT(skinny < 0.5 * big);
  CU_ASSERT(small < 0.5 * big);
  /* waves: 24 tiles of 256x128 fill 24 cores; 25 need a second, nearly empty, wave */
  op_result_t full = cost(&s.chip, OP_MATMUL, CHIP_DTYPE_BF16, 256 * 4, 128 * 6, 8192, 0);
  op_result_t over = cost(&s.chip, OP_MATMUL, CHIP_DTYPE_BF16, 256 * 4 + 16, 128 * 6, 8192, 0);
  CU_ASSERT(over.tflops < full.tflops);
  CU_ASSERT(over.waves > full.waves || over.tiles > full.tiles);
}

/* Stream-K (chip.cube.stream_k, h100-dgx) deals a matmul's k-steps out over the
 * cores: it is never slower than whole tiles in waves, where one tile more than
 * the cores costs a second full wave; dealt out, that tile costs about its
 * share. No matmul beats the cube's peak at the clock it ran at. */
static void test_stream_k_removes_the_partial_wave(void) {
  system_cfg_t s = load_system("h100-dgx.json", NULL);
  CU_ASSERT_FATAL(s.chip.cube.stream_k);
  chip_cfg_t dp = s.chip;
  dp.cube.stream_k = false;
  static const int64_t shapes[][4] = {
      {6144, 768, 16384, 0}, {2048, 6400, 12288, 0}, {8192, 8192, 8192, 0}, {256, 8192, 8192, 0},
      {16, 8192, 8192, 0},   {1024, 1024, 1024, 0},  {100, 3000, 77, 0},    {4096, 128, 4096, 8}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    op_result_t sk = cost(&s.chip, OP_MATMUL, CHIP_DTYPE_BF16, shapes[i][0], shapes[i][1],
                          shapes[i][2], shapes[i][3]);
    op_result_t w = cost(&dp, OP_MATMUL, CHIP_DTYPE_BF16, shapes[i][0], shapes[i][1], shapes[i][2],
                         shapes[i][3]);
    CU_ASSERT(sk.time_s <= w.time_s * (1 + 1e-12));
    double peak = chip_cube_peak_flops(&s.chip, CHIP_DTYPE_BF16) * sk.clock_hz / s.chip.freq_hz;
    CU_ASSERT(sk.flops / sk.time_s <= peak);
  }
  /* 132 tiles of 128x256 fill the 132 SMs; 133 need a second wave in waves */
  int64_t k = 16384;
  op_result_t full = cost(&dp, OP_MATMUL, CHIP_DTYPE_BF16, 128 * 12, 256 * 11, k, 0);
  op_result_t over = cost(&dp, OP_MATMUL, CHIP_DTYPE_BF16, 128 * 12 + 64, 256 * 11, k, 0);
  CU_ASSERT_EQUAL(full.waves, 1);
  CU_ASSERT(over.waves >= 2);
  CU_ASSERT(over.time_s > 1.8 * full.time_s);
  op_result_t full_sk = cost(&s.chip, OP_MATMUL, CHIP_DTYPE_BF16, 128 * 12, 256 * 11, k, 0);
  op_result_t over_sk = cost(&s.chip, OP_MATMUL, CHIP_DTYPE_BF16, 128 * 12 + 64, 256 * 11, k, 0);
  CU_ASSERT_DOUBLE_EQUAL(full_sk.time_s, full.time_s, 1e-9 * full.time_s);
  CU_ASSERT(over_sk.time_s < 1.15 * full_sk.time_s);
  CU_ASSERT(over_sk.time_s > full_sk.time_s);
}

static void test_streaming_vector_ops_run_at_hbm_speed(void) {
  const char *systems[] = {"ascend-910b.json", "a100-dgx.json", "h100-dgx.json"};
  for (size_t si = 0; si < 3; si++) {
    system_cfg_t s = load_system(systems[si], NULL);
    double hbm = chip_hbm_effective_bw(&s.chip);
    op_kind_t kinds[] = {OP_ADD, OP_COPY, OP_CAST, OP_RMSNORM, OP_ADAM};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
      op_result_t r = cost(&s.chip, kinds[i], CHIP_DTYPE_BF16, 16384, 16384, 0, 0);
      double rate = r.hbm_bytes / r.time_s;
      CU_ASSERT(rate <= hbm * (1 + 1e-9) && rate >= 0.97 * hbm);
      if (rate < 0.97 * hbm)
        fprintf(stderr, "\n  %s %s: %.0f GB/s of %.0f\n", systems[si], op_kind_names[kinds[i]],
                rate / 1e9, hbm / 1e9);
    }
  }
}

/* The unfused form is the kernels eager PyTorch runs (hw_models/vector.c): more
 * kernels and bytes than the fused kernel, never faster; a cast moves 2 bytes
 * in and 4 out; an op that leaves cores idle is no faster per byte; the host
 * floors a short op; and Little's law binds a cast's element-wide loads. */
static void test_unfused_vector_ops_are_the_kernels_eager_runs(void) {
  system_cfg_t s = load_system("h100-dgx.json", NULL);
  const chip_cfg_t *c = &s.chip;
  op_result_t fused = cost_form(c, OP_SWIGLU, OP_FORM_FUSED, 4096, 14336);
  op_result_t unfused = cost_form(c, OP_SWIGLU, OP_FORM_UNFUSED, 4096, 14336);
  CU_ASSERT_EQUAL(unfused.kernels, 2);
  CU_ASSERT(unfused.time_s > 1.3 * fused.time_s); /* measured on H100: 1.6-1.7x (Liger vs eager) */
  /* fused: a, b in, out; unfused: a in, silu out; silu, b in, out */
  CU_ASSERT_DOUBLE_EQUAL(unfused.hbm_bytes / fused.hbm_bytes, 5.0 / 3.0, 1e-9);
  CU_ASSERT_EQUAL(cost_form(c, OP_CROSS_ENTROPY, OP_FORM_UNFUSED, 4096, 4000).kernels, 2);
  /* GeGLU: SwiGLU's bytes, in both forms; gelu's tanh costs more instructions, so
   * never faster; unfused, gelu on the strided half then the mul */
  op_result_t ge = cost_form(c, OP_GEGLU, OP_FORM_FUSED, 4096, 14336);
  op_result_t ge_unfused = cost_form(c, OP_GEGLU, OP_FORM_UNFUSED, 4096, 14336);
  CU_ASSERT_DOUBLE_EQUAL(ge.hbm_bytes, fused.hbm_bytes, 1e-6);
  CU_ASSERT_DOUBLE_EQUAL(ge_unfused.hbm_bytes, unfused.hbm_bytes, 1e-6);
  CU_ASSERT_EQUAL(ge_unfused.kernels, 2);
  CU_ASSERT(ge.time_s >= fused.time_s && ge_unfused.time_s >= ge.time_s);
  for (op_kind_t k = OP_ADD; k < OP_KIND_COUNT; k++)
    if (k != OP_ATTN_DECODE)
      CU_ASSERT(cost_form(c, k, OP_FORM_UNFUSED, 8192, 8192).time_s >=
                cost_form(c, k, OP_FORM_FUSED, 8192, 8192).time_s * (1 - 1e-12));
  for (op_form_t f = 0; f < OP_FORM_COUNT; f++) {
    op_result_t cast = cost_form(c, OP_CAST, f, 4096, 8192);
    CU_ASSERT_DOUBLE_EQUAL(cast.hbm_bytes, 6.0 * 4096 * 8192, 1e-6);
  }

  chip_cfg_t device = *c; /* the device alone: no host to wait for */
  device.vector.host_issue_s = device.vector.host_wrapper_s = 0;
  for (op_form_t f = 0; f < OP_FORM_COUNT; f++) {
    op_kind_t kinds[] = {OP_RMSNORM, OP_LAYERNORM, OP_SOFTMAX, OP_ADD};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
      op_result_t few = cost_form(&device, kinds[i], f, 64, 8192); /* 64 rows, 132 cores */
      op_result_t full = cost_form(&device, kinds[i], f, 8192, 8192);
      CU_ASSERT(few.time_s / few.hbm_bytes >= full.time_s / full.hbm_bytes);
    }
  }
  op_result_t tiny = cost_form(c, OP_RMSNORM, OP_FORM_UNFUSED, 16, 1024);
  CU_ASSERT_DOUBLE_EQUAL(tiny.time_s, c->vector.host_issue_s + c->vector.host_wrapper_s, 1e-12);
  CU_ASSERT_EQUAL(tiny.bound, PIPE_LAUNCH);
  CU_ASSERT(cost_form(&device, OP_RMSNORM, OP_FORM_UNFUSED, 16, 1024).time_s < tiny.time_s);

  /* Little's law: twice the latency, half the rate where the loads in flight bind */
  chip_cfg_t slow = device;
  slow.vector.load_latency_s *= 2;
  op_result_t cast = cost_form(&device, OP_CAST, OP_FORM_UNFUSED, 16384, 16384);
  op_result_t cast_slow = cost_form(&slow, OP_CAST, OP_FORM_UNFUSED, 16384, 16384);
  CU_ASSERT(cast_slow.time_s > 1.6 * cast.time_s);
  chip_cfg_t off = device;
  off.vector.bytes_in_flight = 0; /* not modelled: the HBM rate */
  CU_ASSERT(cost_form(&off, OP_CAST, OP_FORM_UNFUSED, 16384, 16384).time_s < 0.8 * cast.time_s);
}

static void test_identical_ops_are_costed_once(void) {
  system_cfg_t s = load_system("ascend-910b.json", NULL);
  op_cache_t *c = op_cache_new(&s.chip);
  op_desc_t a = {.kind = OP_MATMUL, .dtype = CHIP_DTYPE_BF16, .out_dtype = CHIP_DTYPE_BF16,
                 .dims = {4096, 4096, 4096}};
  op_desc_t b = a;
  b.dims[2] = 1024;
  const op_result_t *r1 = op_cost(c, &a), *r2 = op_cost(c, &b), *r3 = op_cost(c, &a);
  CU_ASSERT_PTR_EQUAL(r1, r3);
  CU_ASSERT(r1->time_s > r2->time_s);
  CU_ASSERT_EQUAL(op_cache_misses(c), 2);
  CU_ASSERT_EQUAL(op_cache_hits(c), 1);
  double t1 = r1->time_s;
  for (int i = 1; i <= 1000; i++) { /* growth keeps earlier answers where they were */
    b.dims[0] = i;
    op_cost(c, &b);
  }
  CU_ASSERT_PTR_EQUAL(op_cost(c, &a), r1);
  CU_ASSERT_DOUBLE_EQUAL(r1->time_s, t1, 0);
  CU_ASSERT_EQUAL(op_cache_misses(c), 1002);
  op_desc_t v = {.kind = OP_SWIGLU, .dtype = CHIP_DTYPE_BF16, .out_dtype = CHIP_DTYPE_BF16,
                 .dims = {4096, 4096}};
  op_desc_t u = v;
  u.form = OP_FORM_UNFUSED; /* another op: the form is part of the key */
  CU_ASSERT(op_cost(c, &v) != op_cost(c, &u));
  CU_ASSERT_EQUAL(op_cache_misses(c), 1004);
  op_cache_free(c);
}

static void test_bad_shapes_and_types_are_refused(void) {
  system_cfg_t s = load_system("ascend-910b.json", NULL);
  npu_err_t err = {""};
  op_desc_t op = {.kind = OP_MATMUL, .dtype = CHIP_DTYPE_BF16, .dims = {0, 8, 8}};
  CU_ASSERT_EQUAL(op_check(&s.chip, &op, &err), -1);
  CU_ASSERT_STRING_EQUAL(err.msg, "shape: expected M,N,K[,batch] with every size >= 1 for matmul, "
                              "found 0 at position 1");
  op.dims[0] = 1LL << 40;
  op.dims[1] = 1LL << 30;
  CU_ASSERT_EQUAL(op_check(&s.chip, &op, &err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "fit in 64 bits"));
  op = (op_desc_t){.kind = OP_MATMUL, .dtype = CHIP_DTYPE_FP8, .dims = {8, 8, 8}};
  CU_ASSERT_EQUAL(op_check(&s.chip, &op, &err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "chip.cube.fp8_macs_per_cycle = 0"));
  op = (op_desc_t){.kind = OP_ATTN_FWD, .dtype = CHIP_DTYPE_BF16, .dims = {1, 32, 128, 128, 5}};
  CU_ASSERT_EQUAL(op_check(&s.chip, &op, &err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "kv_heads dividing heads"));
  op = (op_desc_t){.kind = OP_SOFTMAX, .dtype = CHIP_DTYPE_BF16, .dims = {4, -2}};
  CU_ASSERT_EQUAL(op_check(&s.chip, &op, &err), -1);
}

/* An attention op of shape batch, heads, seq, head_dim (kv_heads 0: as heads). */
static double attn_us(const chip_cfg_t *chip, op_kind_t kind, bool causal, int64_t batch,
                      int64_t heads, int64_t seq, int64_t dim, int64_t kv_heads) {
  op_desc_t op = {.kind = kind,
                  .dtype = CHIP_DTYPE_BF16,
                  .out_dtype = CHIP_DTYPE_BF16,
                  .causal = causal,
                  .dims = {batch, heads, seq, dim, kv_heads}};
  npu_err_t err = {""};
  CU_ASSERT_EQUAL(op_check(chip, &op, &err), 0);
  op_result_t r;
  op_model(chip, &op, &r);
  CU_ASSERT(isfinite(r.time_s) && r.time_s > 0);
  return r.time_s * 1e6;
}

/* Fused attention (hw_models/attention.c) on each system: a causal mask skips
 * about half the blocks, so at long sequences it is cheaper, but never below
 * half (the diagonal blocks run whole); the backward does 2.5x the forward's
 * matmuls and never costs less; more heads are never faster; grouped-query
 * attention never makes the forward slower. */
static void test_attention_obeys_its_laws(void) {
  const char *systems[] = {"ascend-910b.json", "a100-dgx.json", "h100-dgx.json"};
  for (size_t i = 0; i < sizeof systems / sizeof systems[0]; i++) {
    system_cfg_t s = load_system(systems[i], NULL);
    const chip_cfg_t *c = &s.chip;
    for (int k = 0; k < 2; k++) {
      op_kind_t kind = k ? OP_ATTN_BWD : OP_ATTN_FWD;
      double full = attn_us(c, kind, false, 2, 16, 8192, 128, 0);
      double causal = attn_us(c, kind, true, 2, 16, 8192, 128, 0);
      CU_ASSERT(causal < 0.75 * full);
      CU_ASSERT(causal > 0.5 * full);
      double prev = 0;
      for (int64_t heads = 1; heads <= 48; heads++) {
        double t = attn_us(c, kind, true, 1, heads, 2048, 128, 0);
        CU_ASSERT(t >= prev * (1 - 1e-12));
        prev = t;
      }
    }
    for (int causal = 0; causal < 2; causal++) {
      int64_t shapes[][4] = {{1, 12, 2048, 128}, {8, 32, 4096, 64}, {1, 8, 32768, 256}};
      for (size_t j = 0; j < sizeof shapes / sizeof shapes[0]; j++) {
        int64_t *d = shapes[j];
        double fwd = attn_us(c, OP_ATTN_FWD, causal, d[0], d[1], d[2], d[3], 0);
        CU_ASSERT(attn_us(c, OP_ATTN_BWD, causal, d[0], d[1], d[2], d[3], 0) > 1.5 * fwd);
        CU_ASSERT(attn_us(c, OP_ATTN_FWD, causal, d[0], d[1], d[2], d[3], d[1] / 4) <=
                  fwd * (1 + 1e-12));
      }
    }
  }
}

/* One attention op's result with a sliding window of `window` keys. */
static op_result_t windowed(const chip_cfg_t *chip, op_kind_t kind, int64_t seq, int64_t window) {
  op_desc_t op = {.kind = kind, .dtype = CHIP_DTYPE_BF16, .out_dtype = CHIP_DTYPE_BF16,
                  .causal = true, .window = window, .dims = {1, 16, seq, 128, 0}};
  op_result_t r;
  op_model(chip, &op, &r);
  return r;
}

/* Sliding-window attention: a window covering the sequence is the causal op
 * exactly; the useful FLOPs are the causal square's half less the triangle of
 * pairs beyond the window; a narrower window is never slower, and at 1024 of
 * 16384 keys the kernel costs about its blocks: more than the pairs' share
 * (the diagonal and window-edge blocks run whole), well under a fifth of the
 * causal op. */
static void test_attention_sliding_window(void) {
  const char *systems[] = {"ascend-910b.json", "h100-dgx.json"};
  for (size_t i = 0; i < sizeof systems / sizeof systems[0]; i++) {
    system_cfg_t s = load_system(systems[i], NULL);
    for (int k = 0; k < 2; k++) {
      op_kind_t kind = k ? OP_ATTN_BWD : OP_ATTN_FWD;
      const double seq = 16384, per_pair = 2.0 * (k ? 5 : 2) * 16 * 128;
      op_result_t causal = windowed(&s.chip, kind, 16384, 0);
      CU_ASSERT_EQUAL(windowed(&s.chip, kind, 16384, 16384).time_s, causal.time_s);
      CU_ASSERT_EQUAL(windowed(&s.chip, kind, 16384, 40000).time_s, causal.time_s);
      double prev = causal.time_s;
      for (int64_t w = 8192; w >= 256; w /= 2) {
        op_result_t r = windowed(&s.chip, kind, 16384, w);
        double beyond = seq - (double)w;
        CU_ASSERT_DOUBLE_EQUAL(r.flops, per_pair * (seq * seq - beyond * beyond) / 2,
                               1e-9 * r.flops);
        CU_ASSERT(r.time_s <= prev);
        prev = r.time_s;
      }
      op_result_t narrow = windowed(&s.chip, kind, 16384, 1024);
      double share = (seq * seq - (seq - 1024) * (seq - 1024)) / (seq * seq);
      CU_ASSERT(narrow.time_s > 0.9 * share * causal.time_s);
      CU_ASSERT(narrow.time_s < 0.2 * causal.time_s);
    }
  }
}

/* A forward of n queries after `past` cached keys. */
static op_result_t after_past(const chip_cfg_t *chip, int64_t n, int64_t past, bool causal,
                              int64_t window) {
  op_desc_t op = {.kind = OP_ATTN_FWD, .dtype = CHIP_DTYPE_BF16, .out_dtype = CHIP_DTYPE_BF16,
                  .causal = causal, .window = window, .past = past, .dims = {1, 32, n, 128, 8}};
  op_result_t r;
  op_model(chip, &op, &r);
  return r;
}

/* Queries after cached keys (a prefill chunk, a prefix-cache hit): past 0 is
 * the plain op; the useful FLOPs are each query's past keys plus the causal
 * square's half (less what a window cuts); a chunk after a long past costs
 * more than after a short one; without a mask every query sees every key. */
static void test_attention_after_cached_keys(void) {
  const char *systems[] = {"ascend-910b.json", "h200-dgx.json"};
  for (size_t i = 0; i < sizeof systems / sizeof systems[0]; i++) {
    system_cfg_t s = load_system(systems[i], NULL);
    const chip_cfg_t *c = &s.chip;
    const double per_pair = 2.0 * 2 * 32 * 128, n = 512, past = 8192;
    op_desc_t plain = {.kind = OP_ATTN_FWD, .dtype = CHIP_DTYPE_BF16,
                       .out_dtype = CHIP_DTYPE_BF16, .causal = true, .dims = {1, 32, 512, 128, 8}};
    op_result_t r0;
    op_model(c, &plain, &r0);
    CU_ASSERT_EQUAL(after_past(c, 512, 0, true, 0).time_s, r0.time_s);
    op_result_t hit = after_past(c, 512, 8192, true, 0);
    CU_ASSERT_DOUBLE_EQUAL(hit.flops, per_pair * (n * past + n * n / 2), 1e-9 * hit.flops);
    CU_ASSERT(hit.time_s > after_past(c, 512, 2048, true, 0).time_s);
    op_result_t open = after_past(c, 512, 8192, false, 0);
    CU_ASSERT_DOUBLE_EQUAL(open.flops, per_pair * n * (past + n), 1e-9 * open.flops);
    /* a window of 4096 keys: each query sees 4096 of them */
    op_result_t w = after_past(c, 512, 8192, true, 4096);
    CU_ASSERT_DOUBLE_EQUAL(w.flops, per_pair * n * 4096, 1e-9 * w.flops);
    CU_ASSERT(w.time_s < hit.time_s);
  }
}

/* Units run in waves over the cores: on the H100 (132 SMs, 128-row query
 * blocks), 33 heads of 8 blocks fill two waves exactly, one head more needs a
 * third that costs as much as a full one, and 49 heads fit in those three. */
static void test_attention_pays_a_partial_wave_in_full(void) {
  system_cfg_t s = load_system("h100-dgx.json", NULL);
  double two = attn_us(&s.chip, OP_ATTN_FWD, false, 1, 33, 1024, 128, 0);
  double three = attn_us(&s.chip, OP_ATTN_FWD, false, 1, 34, 1024, 128, 0);
  double full = attn_us(&s.chip, OP_ATTN_FWD, false, 1, 49, 1024, 128, 0);
  CU_ASSERT(three > 1.35 * two);
  CU_ASSERT(full < 1.05 * three);
}

/* The backward is several kernels, each paying the host gap when run alone:
 * preprocess, main, dQ conversion, and with GQA the sum of dK and dV. Head
 * dims run padded to the kernels' granule. Decode does not use chip.attention.
 * Past the exactly scheduled units, causal work grows with the heads. */
static void test_attention_kernels_and_padding(void) {
  system_cfg_t s = load_system("h100-dgx.json", NULL);
  chip_cfg_t c = s.chip;
  c.attention.bwd_kernel_gap_s = 0;
  double mha = attn_us(&c, OP_ATTN_BWD, true, 1, 16, 4096, 128, 0);
  double gqa = attn_us(&c, OP_ATTN_BWD, true, 1, 16, 4096, 128, 4);
  c.attention.bwd_kernel_gap_s = 100e-6;
  CU_ASSERT_DOUBLE_EQUAL(attn_us(&c, OP_ATTN_BWD, true, 1, 16, 4096, 128, 0) - mha, 300, 1e-6);
  CU_ASSERT_DOUBLE_EQUAL(attn_us(&c, OP_ATTN_BWD, true, 1, 16, 4096, 128, 4) - gqa, 400, 1e-6);
  double fwd = attn_us(&c, OP_ATTN_FWD, true, 1, 16, 4096, 128, 0);
  CU_ASSERT_DOUBLE_EQUAL(attn_us(&c, OP_ATTN_FWD, true, 1, 16, 4096, 128, 0), fwd, 0);
  c.attention.head_dim_granule = 64;
  double d96 = attn_us(&c, OP_ATTN_FWD, false, 8, 16, 4096, 96, 0);
  CU_ASSERT(d96 > 0.95 * attn_us(&c, OP_ATTN_FWD, false, 8, 16, 4096, 128, 0));
  c.attention.head_dim_granule = 32;
  CU_ASSERT(attn_us(&c, OP_ATTN_FWD, false, 8, 16, 4096, 96, 0) < 0.9 * d96);
  double dec = attn_us(&c, OP_ATTN_DECODE, false, 32, 32, 4096, 128, 8);
  c.attention.fwd_block_q = 64;
  c.attention.fwd_block_kv = 32;
  CU_ASSERT_DOUBLE_EQUAL(attn_us(&c, OP_ATTN_DECODE, false, 32, 32, 4096, 128, 8), dec, 0);
  /* head_dim 256: the 128 x 128 tile with its double-buffered K and V passes the
   * H100's 228 KiB of shared memory; the key rows halve (FA3: 128 x 80, 64 x 64) */
  op_result_t t256 = cost(&s.chip, OP_ATTN_FWD, CHIP_DTYPE_BF16, 2, 16, 4096, 256);
  CU_ASSERT(t256.tile[0] == 128 && t256.tile[1] == 64);
  t256 = cost(&s.chip, OP_ATTN_BWD, CHIP_DTYPE_BF16, 2, 16, 4096, 256);
  CU_ASSERT(t256.tile[0] == 64 && t256.tile[1] == 64);
  CU_ASSERT(cost(&s.chip, OP_ATTN_BWD, CHIP_DTYPE_BF16, 2, 16, 4096, 128).tile[1] == 128);
  double h32 = attn_us(&s.chip, OP_ATTN_FWD, true, 1, 32, 131072, 128, 8);
  double h64 = attn_us(&s.chip, OP_ATTN_FWD, true, 1, 64, 131072, 128, 8);
  CU_ASSERT(h64 > 1.9 * h32 && h64 < 2.1 * h32);
}

CU_TestInfo op_tests[] = {
    {"large matmuls match published throughput", test_large_matmuls_match_published_throughput},
    {"no op beats the roofline", test_no_op_beats_the_roofline},
    {"more cores are never slower", test_more_cores_are_never_slower},
    {"no op draws more than the power limit", test_no_op_draws_more_than_the_power_limit},
    {"ops throttle at the power limit", test_ops_throttle_at_the_power_limit},
    {"small and skinny shapes lose efficiency", test_small_and_skinny_shapes_lose_efficiency},
    {"stream-K removes the partial wave", test_stream_k_removes_the_partial_wave},
    {"streaming vector ops run at HBM speed", test_streaming_vector_ops_run_at_hbm_speed},
    {"unfused vector ops are the kernels eager runs",
     test_unfused_vector_ops_are_the_kernels_eager_runs},
    {"identical ops are costed once", test_identical_ops_are_costed_once},
    {"bad shapes and types are refused", test_bad_shapes_and_types_are_refused},
    {"attention obeys its laws", test_attention_obeys_its_laws},
    {"attention with a sliding window", test_attention_sliding_window},
    {"attention after cached keys", test_attention_after_cached_keys},
    {"attention pays a partial wave in full", test_attention_pays_a_partial_wave_in_full},
    {"attention kernels and padding", test_attention_kernels_and_padding},
    CU_TEST_INFO_NULL,
};
