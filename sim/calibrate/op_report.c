/* op_report.c - what `npusim op` says; see op_report.h. */
#include "op_report.h"

#include <string.h>

#include "power.h"

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
    fprintf(out, "# %-14s %-22s %5s %12s %14s %9s %9s %8s  %-7s %-12s %7s %6s %5s\n", "op", "shape",
            "dtype", "time_us", "cycles", "tflops", "hbm_GBps", "of_peak", "bound", "tile", "tiles",
            "waves", "cores");
  else if (fmt == FORMAT_CSV)
    fprintf(out, "op,shape,dtype,time_s,cycles,tflops,hbm_GBps,peak_fraction,bound,tile,tiles,"
                 "waves,cores\n");
}

static void print_row(FILE *out, out_format_t fmt, const op_desc_t *op, const op_result_t *r,
                      double frac, bool first) {
  char shape[96], tile[48];
  shape_text(op, shape, sizeof shape);
  snprintf(tile, sizeof tile, op_on_cube(op->kind) ? "%dx%dx%d" : "%d", r->tile[0], r->tile[1],
           r->tile[2]);
  const char *name = op_kind_names[op->kind], *dt = chip_dtype_name(op->dtype);
  if (fmt == FORMAT_TABLE) {
    fprintf(out,
            "  %-14s %-22s %5s %12.3f %14.0f %9.2f %9.1f %7.1f%%  %-7s %-12s %7lld %6lld %5d\n",
            name, shape, dt, r->time_s * 1e6, r->cycles, r->tflops, r->hbm_GBps, 100 * frac,
            pipe_names[r->bound], tile, (long long)r->tiles, (long long)r->waves, r->cores);
  } else if (fmt == FORMAT_CSV) {
    fprintf(out, "%s,\"%s\",%s,%.9g,%.0f,%.4f,%.3f,%.4f,%s,%s,%lld,%lld,%d\n", name, shape, dt,
            r->time_s, r->cycles, r->tflops, r->hbm_GBps, frac, pipe_names[r->bound], tile,
            (long long)r->tiles, (long long)r->waves, r->cores);
  } else {
    fprintf(out,
            "%s{\"op\": \"%s\", \"shape\": [%s], \"dtype\": \"%s\", \"time_s\": %.9g, "
            "\"cycles\": %.0f, \"tflops\": %.4f, \"hbm_GBps\": %.3f, \"peak_fraction\": %.4f, "
            "\"bound\": \"%s\", \"tile\": [%d, %d, %d], \"tiles\": %lld, \"waves\": %lld, "
            "\"cores\": %d, \"util\": {",
            first ? "" : ",\n ", name, shape, dt, r->time_s, r->cycles, r->tflops, r->hbm_GBps,
            frac, pipe_names[r->bound], r->tile[0], r->tile[1], r->tile[2], (long long)r->tiles,
            (long long)r->waves, r->cores);
    for (int p = 0; p < PIPE_COUNT; p++)
      fprintf(out, "%s\"%s\": %.4f", p ? ", " : "", pipe_names[p], r->util[p]);
    fputs("}}", out);
  }
}

static void explain_tiling(FILE *out, const chip_cfg_t *chip, const op_desc_t *op,
                           const op_result_t *r) {
  if (op->kind == OP_MATMUL)
    fprintf(out,
            "tiling: each cube core computes %d x %d output tiles, K in steps of %d;\n"
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
    fprintf(out,
            "tiling: %d elements per UB tile; %lld tiles over %d of %d vector cores in %lld "
            "waves\n",
            r->tile[0], (long long)r->tiles, r->cores, chip->vector.cores, (long long)r->waves);
  if (!op_on_cube(op->kind))
    fprintf(out, "kernels: %d, %s form (docs/chip-model.md, \"Vector ops\")%s", r->kernels,
            op_form_names[op->form], r->host_s > 0 ? "" : "\n");
  if (!op_on_cube(op->kind) && r->host_s > 0)
    fprintf(out, "; the host issues them in %.1f us\n", r->host_s * 1e6);
}

static void explain(FILE *out, const chip_cfg_t *chip, const op_run_result_t *res) {
  const op_desc_t *op = &res->ops[0];
  const op_result_t *r = &res->cost[0];
  fprintf(out, "\n");
  explain_tiling(out, chip, op, r);
  fprintf(out, "pipes (busy share of the op's %.0f cycles at %.2f GHz):\n", r->cycles,
          r->clock_hz / 1e9);
  if (r->clock_hz < chip->freq_hz) /* power.h: the op would pass the board's limit */
    fprintf(out,
            "throttled: %.1f W at %.3f GHz would pass chip.power.max_W = %.0f W; runs at "
            "%.3f GHz, drawing %.1f W\n",
            res->free_running_W, chip->freq_hz / 1e9, chip->power.max_W, r->clock_hz / 1e9,
            power_op_W(chip, r));
  for (int p = 0; p < PIPE_COUNT; p++)
    if (r->util[p] > 0)
      fprintf(out, "  %-8s %6.1f%%  %14.0f cycles%s\n", pipe_names[p], 100 * r->util[p],
              r->util[p] * r->cycles, p == (int)r->bound ? "  <- bound" : "");
  double peak = op_on_cube(op->kind) ? chip_cube_peak_flops(chip, op->dtype)
                                     : chip_vector_peak_flops(chip, CHIP_DTYPE_FP32);
  fprintf(out,
          "work: %.4g FLOP (%.1f%% of the %.1f TFLOP/s %s peak), %.4g bytes to/from HBM "
          "(%.1f%% of %.0f GB/s)\n",
          r->flops, 100 * r->flops / r->time_s / peak, peak / 1e12,
          op_on_cube(op->kind) ? "cube" : "vector", r->hbm_bytes,
          100 * r->hbm_bytes / r->time_s / chip->hbm.bw_bytes_per_s,
          chip->hbm.bw_bytes_per_s / 1e9);
}

void op_report(FILE *out, out_format_t fmt, const op_run_opts_t *o, const op_run_result_t *r,
               bool explain_op) {
  const chip_cfg_t *chip = &o->sys->chip;
  if (fmt == FORMAT_TABLE)
    fprintf(out, "# npusim op on %s (%s): %d cube cores, %d vector cores at %.2f GHz\n", chip->name,
            o->sys->name, chip->cube.cores, chip->vector.cores, chip->freq_hz / 1e9);
  print_header(out, fmt);
  if (fmt == FORMAT_JSON)
    fputs(r->n > 1 ? "[" : "", out);
  for (int i = 0; i < r->n; i++)
    print_row(out, fmt, &r->ops[i], &r->cost[i], r->peak_fraction[i], i == 0);
  if (fmt == FORMAT_JSON)
    fputs(r->n > 1 ? "]\n" : "\n", out);
  if (explain_op && !o->sweep && fmt == FORMAT_TABLE)
    explain(out, chip, r);
}
