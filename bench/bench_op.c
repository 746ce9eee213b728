/* bench_op.c - how long the chip model takes to cost one op (cache miss) and to
 * answer a repeated one (cache hit). Prints a table; it is a benchmark, not a
 * test: issue #4's target is <= 50 us per miss for the largest transformer ops.
 * Usage: bench_op [SYSTEM.json]  (default configs/systems/ascend-910b.json) */
#include <stdio.h>
#include <time.h>

#include "config.h"
#include "op_cost.h"

#define REPEAT 200

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "configs/systems/ascend-910b.json";
  npu_err_t err;
  system_cfg_t sys;
  config_doc_t *doc = config_doc_load(CONFIG_SYSTEM, path, &err);
  if (!doc || config_doc_resolve(doc, &sys, &err)) {
    fprintf(stderr, "%s\n", err.msg);
    config_doc_free(doc);
    return 2;
  }
  static const struct {
    const char *what;
    op_kind_t kind;
    int64_t dims[5];
  } cases[] = {
      {"GPT-3 175B QKV, 16K tokens", OP_MATMUL, {16384, 36864, 12288, 0, 0}},
      {"GPT-3 175B MLP up, 16K tokens", OP_MATMUL, {16384, 49152, 12288, 0, 0}},
      {"LLaMA 70B LM head, 32K tokens", OP_MATMUL, {32768, 128256, 8192, 0, 0}},
      {"batched 32 x 4096^2 x 128", OP_MATMUL, {4096, 4096, 128, 32, 0}},
      {"attention fwd 8 x 64 x 32K x 128", OP_ATTN_FWD, {8, 64, 32768, 128, 8}},
      {"attention bwd 8 x 64 x 32K x 128", OP_ATTN_BWD, {8, 64, 32768, 128, 8}},
      {"layernorm 32K x 12288", OP_LAYERNORM, {32768, 12288, 0, 0, 0}},
      {"adam 1e9 parameters", OP_ADAM, {1, 1000000000, 0, 0, 0}},
  };
  printf("op cost on %s (%s), %d repetitions each\n", sys.chip.name, path, REPEAT);
  printf("%-36s %12s %12s\n", "op", "miss_us", "hit_us");
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    op_desc_t op = {.kind = cases[i].kind, .dtype = CHIP_DTYPE_BF16, .out_dtype = CHIP_DTYPE_BF16};
    for (int d = 0; d < 5; d++)
      op.dims[d] = cases[i].dims[d];
    op_cache_t *cache = op_cache_new(&sys.chip);
    double sink = 0, t0 = now_s();
    for (int r = 0; r < REPEAT; r++) { /* distinct shapes: every call a miss */
      op_desc_t o = op;
      o.dims[op.kind == OP_MATMUL ? 0 : 1] += r;
      sink += op_cost(cache, &o)->time_s;
    }
    double miss = (now_s() - t0) / REPEAT;
    t0 = now_s();
    for (int r = 0; r < REPEAT; r++)
      sink += op_cost(cache, &op)->time_s;
    double hit = (now_s() - t0) / REPEAT;
    printf("%-36s %12.2f %12.3f%s\n", cases[i].what, miss * 1e6, hit * 1e6,
           sink > 0 ? "" : " (no result)");
    op_cache_free(cache);
  }
  config_doc_free(doc);
  return 0;
}
