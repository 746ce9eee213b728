/* coll_fit_report.h - what `npusim calibrate --collectives` prints: each
 * level's parameters before and after, each log's sizes with the measured
 * time, the prediction before and after and their errors (fitted or held
 * out), and the geometric-mean |error| of the fitted and held-out sizes; as a
 * table, JSON or CSV. */
#ifndef NPUSIM_COLL_FIT_REPORT_H
#define NPUSIM_COLL_FIT_REPORT_H

#include <stdio.h>

#include "coll_fit.h"
#include "out_format.h"

void coll_fit_report(FILE *out, out_format_t fmt, const coll_fit_opts_t *o,
                     const coll_fit_result_t *r);

#endif
