/* op_report.h - what `npusim op` says: per op its time, cycles, achieved
 * TFLOP/s and HBM bandwidth, share of the peak, bounding pipe and tiling, as
 * a table, JSON or CSV; and, asked to explain one op (table only), how it was
 * tiled, each pipe's busy share, the throttle and the work against the peaks.
 *
 * Everything printed is read from op_run_result_t and the chip. */
#ifndef NPUSIM_OP_REPORT_H
#define NPUSIM_OP_REPORT_H

#include <stdio.h>

#include "op_run.h"
#include "out_format.h"

/* explain: the explanation after a table of one op (ignored with a sweep or
 * another format). */
void op_report(FILE *out, out_format_t format, const op_run_opts_t *o, const op_run_result_t *r,
               bool explain);

#endif
