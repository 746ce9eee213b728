/* cmd_calibrate.c - `npusim calibrate`: fits chip parameters to measured kernels
 * and writes a config that extends the system with the fitted values. The
 * product lives in sim/calibrate/: calibrate_run.c reads the measurements and
 * fits, calibrate_report.c prints the errors and parameters before and after,
 * calibrate_write.c writes the fitted config (--output). With --fit-rows all
 * every row is fitted and none held out: tests/validation/validate_ops.py
 * cross-validates that way, holding rows out by leaving them out of the file.
 * This file checks the options, loads the configs and wires them into the
 * product's. */
#include <string.h>

#include "calibrate_report.h"
#include "calibrate_run.h"
#include "calibrate_write.h"
#include "commands.h"

/* Fits, prints the report and writes the fitted config if asked. */
static int run_and_report(const cli_opts_t *opts, const cal_opts_t *co, FILE *out, npu_err_t *err) {
  cal_result_t res;
  int rc = cal_run(co, &res, err);
  if (rc == 0) {
    cal_report(out, opts->format, co, &res);
    if (opts->output_path)
      rc = cal_write_config(opts->output_path, opts->system_path, co, &res, err);
  }
  cal_result_free(&res);
  return rc == CAL_CANNOT_WRITE ? CMD_CANNOT_WRITE : rc;
}

int cmd_calibrate(const cli_opts_t *opts, FILE *out, npu_err_t *err) {
  if (!opts->measurements)
    return npu_err_set(err, "npusim calibrate: expected --measurements FILE.csv, found none");
  const char *rows = opts->fit_rows ? opts->fit_rows : "half";
  if (strcmp(rows, "half") != 0 && strcmp(rows, "all") != 0)
    return npu_err_set(err, "--fit-rows: expected half or all, found \"%.80s\"", rows);
  cli_configs_t cfg;
  if (cli_load_configs(opts, &cfg, err))
    return -1;
  cal_opts_t co = {.sys = &cfg.sys,
                   .sys_doc = cfg.sys_doc,
                   .measurements = opts->measurements,
                   .fit = opts->fit,
                   .fit_all_rows = strcmp(rows, "all") == 0};
  int rc = run_and_report(opts, &co, out, err);
  cli_free_configs(&cfg);
  return rc;
}

const cli_option_t cmd_calibrate_options[] = {
    CLI_GROUP(cli_options_system),
    CLI_GROUP(cli_options_set),
    CLI_GROUP(cli_options_format),
    CLI_GROUP(cli_options_output),
    CLI_STRING("measurements", "FILE", measurements, "measured kernel times (CSV)"),
    CLI_STRING("fit", "KEY,...", fit, "the keys to fit (default: the chip's [A] keys; none)"),
    CLI_STRING("fit-rows", "half|all", fit_rows,
               "fit the even rows of each class (half, default) or\n"
               "every row"),
    CLI_END};
