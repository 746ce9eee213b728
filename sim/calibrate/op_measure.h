/* op_measure.h - kernel measurements as npusim reads them: one op (kind, shape,
 * dtype, layout) and the device time of one call, per row of a CSV table that
 * scripts/measure/measure_ops.py writes (format: tests/data/validation/README.md).
 *
 * Rows are grouped into classes (matmul, attention, vector) and each class is
 * split in two halves in file order: even rows are the fit half, odd rows the
 * held-out half that a calibration never sees. `npusim calibrate` and
 * tests/validation/validate_ops.py use the same rule. meas_fit_all_rows makes every row
 * a fit row instead (`calibrate --fit-rows all`): for a table whose rows were
 * held out by someone else, e.g. the training folds of a cross-validation. */
#ifndef NPUSIM_OP_MEASURE_H
#define NPUSIM_OP_MEASURE_H

#include <stdbool.h>
#include <stddef.h>

#include "npu_err.h"
#include "op.h"

typedef enum { MEAS_MATMUL, MEAS_ATTENTION, MEAS_VECTOR, MEAS_CLASS_COUNT } meas_class_t;

extern const char *const meas_class_names[MEAS_CLASS_COUNT];

#define MEAS_MAX_OPS 4 /* ops timed together in one row ("attention_fwd+attention_bwd") */

typedef struct {
  op_desc_t ops[MEAS_MAX_OPS]; /* the ops timed together: same shape and dtype */
  int nops;
  double time_s;     /* measured device time of one call (of all nops ops) */
  int line;          /* line in the file, for messages */
  meas_class_t cls;
  bool held_out;     /* odd row of its class: never used to fit */
} meas_row_t;

typedef struct {
  meas_row_t *rows;
  size_t n;
  char device[128];  /* the "# device:" header line, or "" */
} meas_table_t;

/* The most rows a table may hold (a bound on memory, far above any suite). */
#define MEAS_MAX_ROWS 100000

/* The longest time_us a row may give: an hour. One kernel call never takes
 * that long; such a number is a wrong unit or a corrupt row, and one of them
 * would drag every fitted key to its bound (calibrate also refuses a row over
 * CAL_MAX_MODEL_RATIO away from the model). */
#define MEAS_MAX_TIME_US 3.6e9

/* Reads a measurement CSV: '#' lines are comments ("# device: NAME" names the
 * device), the first other line is the header; columns op, shape, dtype and
 * time_us are required, out_dtype, causal and layout optional, others ignored.
 * An op may be several joined by '+' (timed together, e.g. a forward and its
 * backward); their times add up.
 * Returns 0, or -1 with "FILE:LINE: column: expected ..., found ..." in err. */
int meas_read(const char *path, meas_table_t *t, npu_err_t *err);

void meas_free(meas_table_t *t);

/* Makes every row of t a fit row (none held out). */
void meas_fit_all_rows(meas_table_t *t);

/* The class of an op kind. */
meas_class_t meas_class_of(op_kind_t kind);

#endif
