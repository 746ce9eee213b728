/* diff.h - `npusim diff A.json B.json`: the figures of two JSON outputs of
 * npusim (one command before and after an upgrade or a config change) that
 * moved, by how much, largest first: numbers whose relative change passes the
 * threshold, texts that differ, and figures only one output has. Paths are
 * figures.h's. */
#ifndef NPUSIM_DIFF_H
#define NPUSIM_DIFF_H

#include <stdio.h>

#include "npu_err.h"
#include "out_format.h"

typedef enum { DIFF_MOVED, DIFF_TEXT, DIFF_ONLY_A, DIFF_ONLY_B } diff_kind_t;

typedef struct {
  diff_kind_t kind;
  char *path;
  double a, b;          /* numbers (DIFF_MOVED; the one side of DIFF_ONLY_*) */
  char *text_a, *text_b; /* texts; NULL for a number */
  double change_pct;    /* DIFF_MOVED: (b - a) / |a|, in %; 0 when a is 0 */
} diff_row_t;

typedef struct {
  diff_row_t *rows;
  int nrows;
  long figures;         /* figures compared (in either output) */
} diff_t;

/* Compares two JSON files; -1 with the reason (a file unreadable or not
 * JSON). threshold_pct: a number that changed by no more is left out. */
int diff_files(const char *path_a, const char *path_b, double threshold_pct, diff_t *d,
               npu_err_t *err);
void diff_free(diff_t *d);

void diff_report(FILE *out, out_format_t fmt, const char *path_a, const char *path_b,
                 double threshold_pct, const diff_t *d);

#endif
