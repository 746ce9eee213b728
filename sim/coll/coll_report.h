/* coll_report.h - what `npusim coll` prints of a run: each size's time,
 * algorithm bandwidth and bus bandwidth as a table, JSON or CSV, with the
 * largest size's links if measured; or the tables nccl-tests and hccl_test
 * print, in their printf formats (tests/data/formats/README.md), so the
 * scripts that parse them read npusim's. No running here (coll_run.h). */
#ifndef NPUSIM_COLL_REPORT_H
#define NPUSIM_COLL_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "coll_matrix.h"
#include "coll_run.h"
#include "linkstats.h"
#include "out_format.h"

/* Whose table the output imitates (COLL_STYLE_NONE: npusim's own). */
typedef enum { COLL_STYLE_NONE, COLL_STYLE_NCCL_TESTS, COLL_STYLE_HCCL_TEST } coll_style_t;

/* How to print. */
typedef struct {
  out_format_t format;
  coll_style_t style;    /* other than NONE only with FORMAT_TABLE and no links */
  const char *system;    /* the system's name */
  const char *chip;      /* its chip's name */
  const char *fidelity;  /* "flow", "analytic" */
  bool links;            /* the run measured the links */
  linkstats_view_t view; /* the links a table shows (JSON shows all) */
} coll_report_opts_t;

/* Prints r, the run of m, to out. */
void coll_report(FILE *out, const coll_report_opts_t *opts, const coll_matrix_t *m,
                 const coll_result_t *r);

#endif
