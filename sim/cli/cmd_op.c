/* cmd_op.c - `npusim op`: one op's time on the chip model, the pipe that bounds
 * it and, with --explain, how it was tiled; --sweep prints an efficiency curve.
 * The product lives in sim/calibrate/: op_run.c costs the op (or the sweep's
 * sizes), op_report.c prints them. This file parses --op, --shape, --dtype
 * and the op's flags, loads the configs and wires them into the product's. */
#include <limits.h>
#include <string.h>

#include "commands.h"
#include "op_report.h"
#include "op_run.h"

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
  if (opts->window) {
    int keys;
    if (!opts->causal)
      return npu_err_set(err, "--window: expected --causal too (a window of the keys before each "
                         "query), found --window alone");
    if (cli_parse_int("window", opts->window, 1, INT_MAX, &keys, err))
      return -1;
    op->window = keys;
  }
  if (opts->past) {
    int keys;
    if (op->kind != OP_ATTN_FWD)
      return npu_err_set(err, "--past: expected --op attention_fwd (cached keys before its "
                         "queries), found --op %s", op_kind_names[op->kind]);
    if (cli_parse_int("past", opts->past, 0, INT_MAX, &keys, err))
      return -1;
    op->past = keys;
  }
  op->trans_a = opts->trans_a;
  op->trans_b = opts->trans_b;
  if (opts->kernels && op_form_parse(opts->kernels, &op->form))
    return npu_err_set(err, "--kernels: expected fused or unfused, found \"%.20s\"", opts->kernels);
  if (!opts->shape && !opts->sweep)
    return npu_err_set(err, "npusim op: expected --shape DIMS, found none");
  return opts->shape ? parse_shape(opts->shape, op, err) : 0;
}

int cmd_op(const cli_opts_t *opts, FILE *out, npu_err_t *err) {
  op_run_opts_t oo = {.sweep = opts->sweep};
  if (parse_op(opts, &oo.op, err))
    return -1;
  cli_configs_t cfg;
  if (cli_load_configs(opts, &cfg, err))
    return -1;
  oo.sys = &cfg.sys;
  op_run_result_t res;
  int rc = op_run(&oo, &res, err);
  if (rc == 0)
    op_report(out, opts->format, &oo, &res, opts->explain);
  cli_free_configs(&cfg);
  return rc;
}

const cli_option_t cmd_op_options[] = {
    CLI_GROUP(cli_options_system),
    CLI_GROUP(cli_options_set),
    CLI_GROUP(cli_options_format),
    CLI_GROUP(cli_options_output),
    CLI_GROUP(cli_options_op),
    CLI_GROUP(cli_options_dtype),
    CLI_STRING("shape", "DIMS", shape, "the op's sizes, comma-separated (see above)"),
    CLI_FLAG("explain", explain, "tiling, per-pipe time and bound"),
    CLI_FLAG("sweep", sweep, "efficiency curve over sizes"),
    CLI_FLAG("causal", causal, "causal mask (attention)"),
    CLI_STRING("window", "N", window,
               "with --causal: each query sees the N keys ending at its own\n"
               "(sliding-window attention, as Mistral, Gemma 2/3 and gpt-oss)"),
    CLI_STRING("past", "N", past,
               "attention_fwd: N keys cached before the queries (a prefill\n"
               "chunk after earlier ones, a prefix-cache hit)"),
    CLI_FLAG("trans-a", trans_a, NULL), /* on --trans-b's line */
    CLI_FLAG("trans-b", trans_b, "transposed matmul operands"),
    CLI_STRING("kernels", "K", kernels,
               "vector ops: fused (one kernel, the default) or unfused\n"
               "(the kernels eager PyTorch runs; docs/chip-model.md)"),
    CLI_END};
