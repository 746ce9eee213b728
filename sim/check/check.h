/* check.h - `npusim check`: a team's own regression test of its performance
 * model. An expectations file lists figures npusim should predict, each with
 * the command that predicts it, the measured (or agreed) value and a
 * tolerance; check runs every command (check_run.h), reads the figure from its
 * JSON output (figures.h) and says which rows are within tolerance.
 *
 * The file (docs/check.md):
 *   {"expectations": [
 *     {"name": "allreduce 1 GiB on 8 A100", "args": ["coll", "--system",
 *      "configs/systems/a100-dgx.json", "--op", "allreduce", "--ranks", "8",
 *      "--sizes", "1G:1G"], "figure": "rows[0].busbw_GBps", "expected": 230,
 *      "tolerance_pct": 10, "source": "nccl-tests, ..."}, ...]}
 * args is an npusim command line without "npusim" and without --format (check
 * asks for JSON); relative paths in it are from the directory check runs in.
 * A row passes when |predicted - expected| <= tolerance_pct % of |expected|
 * (or <= tolerance_abs, where given). A row whose command fails, or whose
 * output lacks the figure, fails with the reason; none is skipped. */
#ifndef NPUSIM_CHECK_H
#define NPUSIM_CHECK_H

#include <stdbool.h>

#include "npu_err.h"

#define CHECK_MAX_ROWS 100000
#define CHECK_MAX_ARGS 256

typedef struct {
  char *name;
  char **args;   /* the command's arguments, NULL-terminated */
  int nargs;
  char *figure;  /* a path into its JSON output (figures.h) */
  double expected;
  double tolerance_pct;
  double tolerance_abs;
  char *source;  /* where the expected value comes from; may be "" */
} check_row_t;

typedef struct {
  check_row_t *rows;
  int nrows;
} check_set_t;

/* Reads an expectations file; -1 with one line naming the file, the row
 * (expectations[3].tolerance_pct) and what was expected on bad input. */
int check_load(const char *path, check_set_t *set, npu_err_t *err);
void check_set_free(check_set_t *set);

typedef enum { CHECK_PASS, CHECK_FAIL, CHECK_ERROR, CHECK_VERDICT_COUNT } check_verdict_t;
extern const char *const check_verdict_names[CHECK_VERDICT_COUNT];

/* One row's outcome: its prediction and error, or why there is none. */
typedef struct {
  check_verdict_t verdict;
  double predicted;
  double error_pct;  /* (predicted - expected) / |expected|, in %; 0 when expected is 0 */
  double wall_s;     /* the command's wall time */
  char why[300];     /* CHECK_ERROR: the command's error line, or the figure's absence */
} check_result_t;

/* The verdict of a prediction against its row. */
void check_judge(const check_row_t *row, double predicted, check_result_t *r);

#endif
