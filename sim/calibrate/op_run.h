/* op_run.h - one op costed on the chip model, or a sweep of its sizes: what
 * `npusim op` reports (op_report.h). The chip side of a kernel, beside the
 * measured kernels (op_measure.h) and the fit (calibrate.h) that tune it.
 *
 * Nothing here knows the command line or prints: the command parses the op
 * into op_run_opts_t. */
#ifndef NPUSIM_OP_RUN_H
#define NPUSIM_OP_RUN_H

#include <stdbool.h>

#include "npu_err.h"
#include "op_cost.h"
#include "system.h"

#define OP_RUN_MAX_OPS 32 /* the most sizes a sweep costs */

typedef struct {
  const system_cfg_t *sys; /* resolved; its chip costs the op */
  op_desc_t op;            /* the op; with sweep, the sizes that are not swept (0: a default) */
  bool sweep;              /* an efficiency curve: square matmuls, longer sequences, longer rows */
} op_run_opts_t;

typedef struct {
  int n; /* ops costed: 1, or the sweep's sizes */
  op_desc_t ops[OP_RUN_MAX_OPS];
  op_result_t cost[OP_RUN_MAX_OPS];
  double peak_fraction[OP_RUN_MAX_OPS]; /* of the cube FLOP/s (cube ops), else of HBM bandwidth */
  double free_running_W; /* ops[0]'s power at the chip's clock were it not throttled; 0 when
                            it did not throttle */
} op_run_result_t;

/* Checks every op against the chip and costs it. Returns 0, or -1 with
 * "--FIELD: expected ..., found ..." in err (the field came from --shape or
 * --dtype). */
int op_run(const op_run_opts_t *o, op_run_result_t *r, npu_err_t *err);

#endif
