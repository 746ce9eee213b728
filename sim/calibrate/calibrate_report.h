/* calibrate_report.h - what a calibration says: the geometric-mean error per
 * op class before and after the fit, on the fit half and on the held-out half
 * (op_measure.h), each parameter's value before and after, and the fit rows
 * that weigh most in the fitted objective; as a table, JSON or CSV.
 *
 * Everything printed is read from cal_result_t and the fitted chip: nothing
 * here fits. */
#ifndef NPUSIM_CALIBRATE_REPORT_H
#define NPUSIM_CALIBRATE_REPORT_H

#include <stdio.h>

#include "calibrate_run.h"
#include "out_format.h"

/* o->sys holds the fitted values (cal_run). */
void cal_report(FILE *out, out_format_t format, const cal_opts_t *o, const cal_result_t *r);

#endif
