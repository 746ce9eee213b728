/* calibrate.h - fitting chip parameters to measured kernels.
 *
 * The error of a prediction is log(predicted / measured); a set of rows is
 * summed up by its geometric-mean |error|, exp(mean |log ratio|) - 1, which
 * treats 10% too fast and 10% too slow alike. The fit minimises the mean over
 * op classes of the mean squared log error of the fit half of the rows (so a
 * class with many rows does not drown the others), one parameter at a time: a
 * geometric scan of its range around the current value, then a golden-section
 * refinement, in a few rounds. It is deterministic and needs no derivatives
 * (the chip model has max() and tile choices in it). The held-out half is only
 * ever evaluated. */
#ifndef NPUSIM_CALIBRATE_H
#define NPUSIM_CALIBRATE_H

#include "config.h"
#include "op_measure.h"
#include "npu_err.h"

typedef struct {
  const char *path;  /* system config key, e.g. "chip.vector.op_overhead_us" */
  double before;     /* value in the JSON's units before the fit */
  double after;      /* fitted value */
} cal_param_t;

/* Geometric-mean |error| and row count per class, for the fit half [0] and the
 * held-out half [1]; classes without rows have n = 0. */
typedef struct {
  double geomean[MEAS_CLASS_COUNT][2];
  int n[MEAS_CLASS_COUNT][2];
} cal_errors_t;

/* log(predicted / measured) of one row on chip (at chip->freq_hz). */
double cal_log_error(const chip_cfg_t *chip, const meas_row_t *row);

/* The most a measured time may differ from the model before the fit, either
 * way: a row 10^6 times off is not this op's kernel time (wrong units, shape
 * or op), and no fit within 16x per key can explain it. */
#define CAL_MAX_MODEL_RATIO 1e6

/* The fit-half rows that weigh most in the objective on chip: up to max rows
 * (indices into t->rows, largest first) in top, each one's share of the
 * objective in share (the objective is a mean over classes of class means of
 * squared log errors, so a share is a row's term over the whole). Returns the
 * number written. */
int cal_dominant_rows(const chip_cfg_t *chip, const meas_table_t *t, int max, size_t *top,
                      double *share);

/* Errors of every row of t on chip, summed up per class and half. */
void cal_errors(const chip_cfg_t *chip, const meas_table_t *t, cal_errors_t *out);

/* Whether changing the key moves any fit-half prediction (keys that do not are
 * not worth fitting). */
bool cal_key_matters(const system_cfg_t *sys, const meas_table_t *t, const char *path);

/* Fits the n parameters (each .path and .before set, and sys holding the
 * before values) to the fit half of t; writes the fitted values into sys and
 * each .after. Returns 0, or -1 with a reason in err. */
int cal_fit(system_cfg_t *sys, const meas_table_t *t, cal_param_t *params, int n, npu_err_t *err);

#endif
