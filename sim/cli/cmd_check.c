/* cmd_check.c - `npusim check` and `npusim diff`: a team's regression test of
 * its performance model, and what moved between two runs. The product lives
 * in sim/check/ (check.c reads the expectations, check_run.c runs them,
 * check_report.c prints them, diff.c compares two outputs); this file parses
 * -j, --junit and --threshold and finds the npusim binary to run. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_report.h"
#include "check_run.h"
#include "commands.h"
#include "diff.h"
#include "jsonfile.h"
#include "outfile.h"

#define CHECK_MAX_PARALLEL 64

static int parse_parallel(const char *text, int *jobs, npu_err_t *err) {
  *jobs = 1;
  if (!text)
    return 0;
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (end == text || *end || errno || v < 1 || v > CHECK_MAX_PARALLEL)
    return npu_err_set(err, "-j: expected a whole number of rows at once in [1, %d], found "
                       "\"%.40s\"", CHECK_MAX_PARALLEL, text);
  *jobs = (int)v;
  return 0;
}

int cmd_check(const cli_opts_t *opts, FILE *out, npu_err_t *err) {
  check_run_opts_t ro = {.time_limit_s = opts->time_limit_s, .progress = opts->progress};
  if (parse_parallel(opts->parallel, &ro.jobs, err))
    return -1;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0)
    return npu_err_set(err, "npusim check: cannot find its own binary (/proc/self/exe): %s",
                       strerror(errno));
  exe[n] = '\0';
  ro.exe = exe;
  check_set_t set;
  if (check_load(opts->args[0], &set, err))
    return -1;
  check_result_t *results = calloc((size_t)set.nrows, sizeof *results);
  int rc = check_run(&set, &ro, results, err);
  if (rc == 0) {
    check_report(out, opts->format, opts->args[0], &set, results);
    if (opts->junit) {
      size_t len = 0;
      char *xml = check_junit(opts->args[0], &set, results, &len);
      if (!xml || outfile_write_all(opts->junit, xml, len, false, err))
        rc = xml ? CMD_CANNOT_WRITE : npu_err_set(err, "npusim check: out of memory");
      free(xml);
    }
    if (rc == 0 && check_failures(&set, results))
      rc = CMD_NOT_ALL_PASSED;
  }
  free(results);
  check_set_free(&set);
  return rc;
}

int cmd_diff(const cli_opts_t *opts, FILE *out, npu_err_t *err) {
  double threshold = 0;
  if (opts->threshold && (!jsonfile_decimal(opts->threshold, &threshold) || threshold < 0 ||
                          threshold > 1e9))
    return npu_err_set(err, "--threshold: expected a percentage >= 0 (a change at most this is "
                       "left out), found \"%.40s\"", opts->threshold);
  diff_t d;
  if (diff_files(opts->args[0], opts->args[1], threshold, &d, err))
    return -1;
  diff_report(out, opts->format, opts->args[0], opts->args[1], threshold, &d);
  int rc = d.nrows ? CMD_NOT_ALL_PASSED : 0;
  diff_free(&d);
  return rc;
}

const cli_option_t cmd_check_options[] = {
    {.kind = CLI_OPT_STRING,
     .name = "parallel",
     .letter = 'j',
     .value = "N",
     .help = "run N rows at once (default 1)",
     .field = offsetof(cli_opts_t, parallel)},
    CLI_STRING("junit", "FILE", junit, "write the results as JUnit XML too"),
    CLI_GROUP(cli_options_format),
    CLI_GROUP(cli_options_output),
    CLI_GROUP(cli_options_progress),
    CLI_END};

const cli_option_t cmd_diff_options[] = {
    CLI_STRING("threshold", "PCT", threshold,
               "leave out numbers that changed by at most PCT percent"),
    CLI_GROUP(cli_options_format),
    CLI_GROUP(cli_options_output),
    CLI_END};
