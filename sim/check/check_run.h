/* check_run.h - runs the rows of an expectations file (check.h) as npusim
 * processes, several at a time, and judges each from its JSON output.
 *
 * Each row is its own process (the npusim binary given, with the row's args,
 * --format json and --time-limit): one row's crash, hang or huge output cannot
 * take the others with it, and rows run in parallel (jobs at a time). Results
 * are in the file's order whatever order they finish in. Progress on stderr
 * (sim/base/progress.h); the children's stderr is kept, its last line is a
 * failed row's reason. */
#ifndef NPUSIM_CHECK_RUN_H
#define NPUSIM_CHECK_RUN_H

#include "check.h"

typedef struct {
  const char *exe;       /* the npusim binary to run */
  int jobs;              /* rows at once, >= 1 */
  double time_limit_s;   /* each row's --time-limit; 0: none */
  bool progress;         /* --progress: shown even off a terminal */
} check_run_opts_t;

/* Runs every row; results[i] is row i's. Returns 0 (the rows' verdicts say
 * how they went), or -1 with the reason when a process could not be started. */
int check_run(const check_set_t *set, const check_run_opts_t *o, check_result_t *results,
              npu_err_t *err);

#endif
