/* calibrate_run.h - a calibration, run: the measured kernels are read and
 * checked against the chip model, the parameters chosen, and the fit
 * (calibrate.h) moves them; the result holds the errors before and after and
 * each parameter's value before and after, for calibrate_report.h.
 *
 * The parameters are the chip's number keys whose source note is an assumption
 * ("[A]"), or the keys named in cal_opts_t.fit; keys that move no prediction of
 * the measured ops are left alone. Nothing here knows the command line or
 * prints: the command fills cal_opts_t. */
#ifndef NPUSIM_CALIBRATE_RUN_H
#define NPUSIM_CALIBRATE_RUN_H

#include <stdbool.h>

#include "calibrate.h"
#include "npu_err.h"

#define CAL_MAX_PARAMS 64

typedef struct {
  system_cfg_t *sys;           /* resolved; the fit writes the fitted values into it */
  const config_doc_t *sys_doc; /* its document: the keys' source notes */
  const char *measurements;    /* the measured kernels (CSV, op_measure.h) */
  const char *fit;             /* "KEY,KEY,...", "none", or NULL: the chip's [A] keys */
  bool fit_all_rows;           /* fit every row, none held out (else the even rows) */
} cal_opts_t;

typedef struct {
  meas_table_t table;                 /* the measured kernels */
  cal_param_t params[CAL_MAX_PARAMS]; /* the fitted keys, in schema or --fit order */
  int nparams;
  cal_errors_t before, after; /* per class and half, before and after the fit */
} cal_result_t;

/* Reads the measurements, checks every row against the chip model, chooses
 * the parameters and fits them. Returns 0, or -1 with "FILE:LINE: ..." or
 * "--fit: expected ..., found ..." in err. Free r with cal_result_free either
 * way. */
int cal_run(const cal_opts_t *o, cal_result_t *r, npu_err_t *err);

void cal_result_free(cal_result_t *r);

#endif
