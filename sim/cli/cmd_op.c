/* cmd_op.c - `npusim op`: one op's time on the chip model, the pipe that bounds
 * it and, with --explain, how it was tiled; --sweep prints an efficiency curve. */
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "op_cost.h"
#include "power.h"

static int parse_shape(const char *text, op_desc_t *op, npu_err_t *err) {
  npu_err_t why = {""};
  if (op_shape_parse(text, ',', op, &why))
    return npu_err_set(err, "--%s", why.msg); /* "shape: ..." came from --shape */
  return 0;
}

static int parse_op(const cli_opts_t *opts, op_desc_t *op, npu_err_t *err) {
  memset(op, 0, sizeof *op);
  if (!opts->op)
    return npu_err_set(err, "npusim op: expected --op OP, found none");
  if (op_kind_parse(opts->op, &op->kind)) {
    char list[256] = "";
    for (int i = 0; i < OP_KIND_COUNT; i++)
      snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
               op_kind_names[i]);
    return npu_err_set(err, "--op: expected one of %s, found \"%.40s\"", list, opts->op);
  }
  op->dtype = CHIP_DTYPE_BF16;
  if (opts->dtype && chip_dtype_parse(opts->dtype, &op->dtype))
    return npu_err_set(err, "--dtype: expected one of fp16, bf16, fp32, int8, fp8, found \"%.20s\"",
                       opts->dtype);
  op->out_dtype = op_default_out_dtype(op->kind, op->dtype);
  op->causal = opts->causal;
  op->trans_a = opts->trans_a;
  op->trans_b = opts->trans_b;
  if (opts->kernels && op_form_parse(opts->kernels, &op->form))
    return npu_err_set(err, "--kernels: expected fused or unfused, found \"%.20s\"", opts->kernels);
  if (!opts->shape && !opts->sweep)
    return npu_err_set(err, "npusim op: expected --shape DIMS, found none");
  return opts->shape ? parse_shape(opts->shape, op, err) : 0;
}

/* Fraction of the relevant peak: cube FLOP/s for cube ops, HBM bandwidth otherwise. */
static double peak_fraction(const chip_cfg_t *chip, const op_desc_t *op, const op_result_t *r) {
  if (op_on_cube(op->kind))
    return r->flops / r->time_s / chip_cube_peak_flops(chip, op->dtype);
  return r->hbm_bytes / r->time_s / chip->hbm.bw_bytes_per_s;
}

static void shape_text(const op_desc_t *op, char *buf, size_t len) {
  int n = op_on_cube(op->kind) ? 5 : 2, first = 0;
  buf[0] = '\0';
  for (int i = first; i < n; i++)
    if (op->dims[i] > 0 || i < 3)
      snprintf(buf + strlen(buf), len - strlen(buf), "%s%lld", strlen(buf) ? "," : "",
               (long long)op->dims[i]);
}

static void print_header(FILE *out, out_format_t fmt) {
  if (fmt == FORMAT_TABLE)
    fprintf(out, "# %-14s %-22s %5s %12s %14s %9s %9s %8s  %-7s %-12s %7s %6s %5s\n", "op",
            "shape", "dtype", "time_us", "cycles", "tflops", "hbm_GBps", "of_peak", "bound",
            "tile", "tiles", "waves", "cores");
  else if (fmt == FORMAT_CSV)
    fprintf(out, "op,shape,dtype,time_s,cycles,tflops,hbm_GBps,peak_fraction,bound,tile,tiles,"
                 "waves,cores\n");
}

static void print_row(FILE *out, out_format_t fmt, const chip_cfg_t *chip, const op_desc_t *op,
                      const op_result_t *r, bool first) {
  char shape[96], tile[48];
  shape_text(op, shape, sizeof shape);
  snprintf(tile, sizeof tile, op_on_cube(op->kind) ? "%dx%dx%d" : "%d", r->tile[0], r->tile[1],
           r->tile[2]);
  const char *name = op_kind_names[op->kind], *dt = chip_dtype_name(op->dtype);
  double frac = peak_fraction(chip, op, r);
  if (fmt == FORMAT_TABLE) {
    fprintf(out, "  %-14s %-22s %5s %12.3f %14.0f %9.2f %9.1f %7.1f%%  %-7s %-12s %7lld %6lld %5d\n",
            name, shape, dt, r->time_s * 1e6, r->cycles, r->tflops, r->hbm_GBps, 100 * frac,
            pipe_names[r->bound], tile, (long long)r->tiles, (long long)r->waves, r->cores);
  } else if (fmt == FORMAT_CSV) {
    fprintf(out, "%s,\"%s\",%s,%.9g,%.0f,%.4f,%.3f,%.4f,%s,%s,%lld,%lld,%d\n", name, shape, dt,
            r->time_s, r->cycles, r->tflops, r->hbm_GBps, frac, pipe_names[r->bound], tile,
            (long long)r->tiles, (long long)r->waves, r->cores);
  } else {
    fprintf(out, "%s{\"op\": \"%s\", \"shape\": [%s], \"dtype\": \"%s\", \"time_s\": %.9g, "
            "\"cycles\": %.0f, \"tflops\": %.4f, \"hbm_GBps\": %.3f, \"peak_fraction\": %.4f, "
            "\"bound\": \"%s\", \"tile\": [%d, %d, %d], \"tiles\": %lld, \"waves\": %lld, "
            "\"cores\": %d, \"util\": {", first ? "" : ",\n ", name, shape, dt, r->time_s,
            r->cycles, r->tflops, r->hbm_GBps, frac, pipe_names[r->bound], r->tile[0], r->tile[1],
            r->tile[2], (long long)r->tiles, (long long)r->waves, r->cores);
    for (int p = 0; p < PIPE_COUNT; p++)
      fprintf(out, "%s\"%s\": %.4f", p ? ", " : "", pipe_names[p], r->util[p]);
    fputs("}}", out);
  }
}

/* The power the op would draw at the chip's clock, were it not throttled. */
static double throttle_W(const chip_cfg_t *chip, const op_desc_t *op) {
  chip_cfg_t free_running = *chip;
  free_running.power.max_W = 0;
  op_result_t r;
  op_model(&free_running, op, &r);
  return power_op_W(&free_running, &r);
}

static void explain(FILE *out, const chip_cfg_t *chip, const op_desc_t *op, const op_result_t *r) {
  fprintf(out, "\n");
  if (op->kind == OP_MATMUL)
    fprintf(out, "tiling: each cube core computes %d x %d output tiles, K in steps of %d;\n"
            "        %lld tiles over %d of %d cores in %lld waves (a partial last wave counts)\n",
            r->tile[0], r->tile[1], r->tile[2], (long long)r->tiles, r->cores, chip->cube.cores,
            (long long)r->waves);
  else if (op_on_cube(op->kind))
    fprintf(out,
            "tiling: %d query rows x %d key rows per block (head dim %d); %lld %s blocks "
            "over %d cube cores in %lld waves\n",
            r->tile[0], r->tile[1], r->tile[2], (long long)r->tiles,
            op->kind == OP_ATTN_BWD ? "key" : "query", r->cores, (long long)r->waves);
  else
    fprintf(out, "tiling: %d elements per UB tile; %lld tiles over %d of %d vector cores in %lld "
            "waves\n", r->tile[0], (long long)r->tiles, r->cores, chip->vector.cores,
            (long long)r->waves);
  if (!op_on_cube(op->kind))
    fprintf(out, "kernels: %d, %s form (docs/chip-model.md, \"Vector ops\")%s", r->kernels,
            op_form_names[op->form], r->host_s > 0 ? "" : "\n");
  if (!op_on_cube(op->kind) && r->host_s > 0)
    fprintf(out, "; the host issues them in %.1f us\n", r->host_s * 1e6);
  fprintf(out, "pipes (busy share of the op's %.0f cycles at %.2f GHz):\n", r->cycles,
          r->clock_hz / 1e9);
  if (r->clock_hz < chip->freq_hz) /* power.h: the op would pass the board's limit */
    fprintf(out, "throttled: %.1f W at %.3f GHz would pass chip.power.max_W = %.0f W; runs at "
            "%.3f GHz, drawing %.1f W\n", throttle_W(chip, op), chip->freq_hz / 1e9,
            chip->power.max_W, r->clock_hz / 1e9, power_op_W(chip, r));
  for (int p = 0; p < PIPE_COUNT; p++)
    if (r->util[p] > 0)
      fprintf(out, "  %-8s %6.1f%%  %14.0f cycles%s\n", pipe_names[p], 100 * r->util[p],
              r->util[p] * r->cycles, p == (int)r->bound ? "  <- bound" : "");
  double peak = op_on_cube(op->kind) ? chip_cube_peak_flops(chip, op->dtype)
                                  : chip_vector_peak_flops(chip, CHIP_DTYPE_FP32);
  fprintf(out, "work: %.4g FLOP (%.1f%% of the %.1f TFLOP/s %s peak), %.4g bytes to/from HBM "
          "(%.1f%% of %.0f GB/s)\n", r->flops, 100 * r->flops / r->time_s / peak, peak / 1e12,
          op_on_cube(op->kind) ? "cube" : "vector", r->hbm_bytes,
          100 * r->hbm_bytes / r->time_s / chip->hbm.bw_bytes_per_s,
          chip->hbm.bw_bytes_per_s / 1e9);
}

/* Sizes of a sweep: square matmuls, longer sequences, longer rows. */
static int sweep_ops(const op_desc_t *base, op_desc_t *ops, int max) {
  int n = 0;
  for (int64_t s = op_on_cube(base->kind) ? 128 : 1024; n < max; s *= op_on_cube(base->kind) ? 2 : 4) {
    op_desc_t o = *base;
    if (base->kind == OP_MATMUL) {
      if (s > 16384)
        break;
      o.dims[0] = o.dims[1] = o.dims[2] = s;
    } else if (op_on_cube(base->kind)) {
      if (s > 32768)
        break;
      for (int i = 0; i < 4; i++)
        if (o.dims[i] <= 0)
          o.dims[i] = i == 3 ? 128 : 1;
      o.dims[2] = s;
    } else {
      if (s > (1 << 26))
        break;
      if (o.dims[0] <= 0)
        o.dims[0] = 1;
      o.dims[1] = s;
    }
    ops[n++] = o;
  }
  return n;
}

int cmd_op(const cli_opts_t *opts, FILE *out, npu_err_t *err) {
  op_desc_t op;
  if (parse_op(opts, &op, err))
    return -1;
  cli_configs_t cfg;
  if (cli_load_configs(opts, &cfg, err))
    return -1;
  const chip_cfg_t *chip = &cfg.sys.chip;
  op_desc_t ops[32];
  npu_err_t why = {""};
  int n = opts->sweep ? sweep_ops(&op, ops, 32) : 1;
  if (!opts->sweep)
    ops[0] = op;
  for (int i = 0; i < n; i++)
    if (op_check(chip, &ops[i], &why)) {
      npu_err_set(err, "--%s", why.msg); /* the field came from --shape or --dtype */
      cli_free_configs(&cfg);
      return -1;
    }
  op_cache_t *cache = op_cache_new(chip);
  if (opts->format == FORMAT_TABLE)
    fprintf(out, "# npusim op on %s (%s): %d cube cores, %d vector cores at %.2f GHz\n",
            chip->name, cfg.sys.name, chip->cube.cores, chip->vector.cores, chip->freq_hz / 1e9);
  print_header(out, opts->format);
  if (opts->format == FORMAT_JSON)
    fputs(n > 1 ? "[" : "", out);
  for (int i = 0; i < n; i++)
    print_row(out, opts->format, chip, &ops[i], op_cost(cache, &ops[i]), i == 0);
  if (opts->format == FORMAT_JSON)
    fputs(n > 1 ? "]\n" : "\n", out);
  if (opts->explain && !opts->sweep && opts->format == FORMAT_TABLE)
    explain(out, chip, &ops[0], op_cost(cache, &ops[0]));
  op_cache_free(cache);
  cli_free_configs(&cfg);
  return 0;
}

const cli_option_t cmd_op_options[] = {
    CLI_GROUP(cli_options_system),
    CLI_GROUP(cli_options_set),
    CLI_GROUP(cli_options_format),
    CLI_GROUP(cli_options_output),
    CLI_GROUP(cli_options_kind),
    CLI_STRING("shape", "DIMS", shape, "the op's sizes, comma-separated (see above)"),
    CLI_FLAG("explain", explain, "tiling, per-pipe time and bound"),
    CLI_FLAG("sweep", sweep, "efficiency curve over sizes"),
    CLI_FLAG("causal", causal, "causal mask (attention)"),
    CLI_FLAG("trans-a", trans_a, NULL), /* on --trans-b's line */
    CLI_FLAG("trans-b", trans_b, "transposed matmul operands"),
    CLI_STRING("kernels", "K", kernels,
               "vector ops: fused (one kernel, the default) or unfused\n"
               "(the kernels eager PyTorch runs; docs/chip-model.md)"),
    CLI_END};
