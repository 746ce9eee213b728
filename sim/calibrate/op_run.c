/* op_run.c - one op costed on the chip model, or a sweep; see op_run.h. */
#include "op_run.h"

#include <string.h>

#include "power.h"

/* Sizes of a sweep: square matmuls, longer sequences, longer rows. */
static int sweep_ops(const op_desc_t *base, op_desc_t *ops, int max) {
  int n = 0;
  for (int64_t s = op_on_cube(base->kind) ? 128 : 1024; n < max;
       s *= op_on_cube(base->kind) ? 2 : 4) {
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

/* Fraction of the relevant peak: cube FLOP/s for cube ops, HBM bandwidth otherwise. */
static double peak_fraction(const chip_cfg_t *chip, const op_desc_t *op, const op_result_t *r) {
  if (op_on_cube(op->kind))
    return r->flops / r->time_s / chip_cube_peak_flops(chip, op->dtype);
  return r->hbm_bytes / r->time_s / chip->hbm.bw_bytes_per_s;
}

/* The power the op would draw at the chip's clock, were it not throttled. */
static double throttle_W(const chip_cfg_t *chip, const op_desc_t *op) {
  chip_cfg_t free_running = *chip;
  free_running.power.max_W = 0;
  op_result_t r;
  op_model(&free_running, op, &r);
  return power_op_W(&free_running, &r);
}

int op_run(const op_run_opts_t *o, op_run_result_t *r, npu_err_t *err) {
  const chip_cfg_t *chip = &o->sys->chip;
  memset(r, 0, sizeof *r);
  r->n = o->sweep ? sweep_ops(&o->op, r->ops, OP_RUN_MAX_OPS) : 1;
  if (!o->sweep)
    r->ops[0] = o->op;
  npu_err_t why = {""};
  for (int i = 0; i < r->n; i++)
    if (op_check(chip, &r->ops[i], &why))
      return npu_err_set(err, "--%s", why.msg); /* the field came from --shape or --dtype */
  op_cache_t *cache = op_cache_new(chip);
  if (!cache)
    return npu_err_set(err, "npusim op: out of memory");
  for (int i = 0; i < r->n; i++) {
    r->cost[i] = *op_cost(cache, &r->ops[i]);
    r->peak_fraction[i] = peak_fraction(chip, &r->ops[i], &r->cost[i]);
  }
  op_cache_free(cache);
  if (r->cost[0].clock_hz < chip->freq_hz) /* power.h: the op would pass the board's limit */
    r->free_running_W = throttle_W(chip, &r->ops[0]);
  return 0;
}
