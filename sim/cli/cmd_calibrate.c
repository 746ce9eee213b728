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
#include "coll_fit.h"
#include "coll_fit_report.h"
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

/* The config of a collectives fit: each fitted level's keys. */
static int write_coll_fit(const char *path, const char *system_path, const coll_fit_result_t *r,
                          npu_err_t *err) {
  cal_value_t values[FIT_PARAMS];
  int n = 0;
  for (int p = 0; p < FIT_PARAMS; p++)
    if (r->fitted[p])
      values[n++] = (cal_value_t){coll_fit_keys[p], r->after[p]};
  char note[512];
  snprintf(note, sizeof note, "[cal] fitted to %d collective log%s (%s%s): geomean |error| %.1f%% "
           "fitted, %.1f%% held out", r->nlogs, r->nlogs > 1 ? "s" : "", r->logs[0].path,
           r->nlogs > 1 ? ", ..." : "", 100 * r->geomean[0][1], 100 * r->geomean[1][1]);
  return cal_write_values(path, system_path, values, n, note, err);
}

/* --collectives: link efficiencies and latencies from nccl-tests / hccl_test logs. */
static int calibrate_collectives(const cli_opts_t *opts, FILE *out, npu_err_t *err) {
  coll_fit_opts_t fo = {.logs = opts->coll_logs, .nlogs = opts->ncoll_logs, .op = -1,
                        .algo = opts->algo,
                        .fit_all_rows = opts->fit_rows && strcmp(opts->fit_rows, "all") == 0};
  coll_op_t op;
  if (opts->op) {
    if (cli_parse_coll_op(opts->op, &op, err))
      return -1;
    fo.op = (int)op;
  }
  if ((opts->ranks && cli_parse_int("ranks", opts->ranks, 2, 1 << 20, &fo.ranks, err)) ||
      (opts->ranks_per_node &&
       cli_parse_int("ranks-per-node", opts->ranks_per_node, 1, 1 << 20, &fo.ranks_per_node, err)))
    return -1;
  cli_configs_t cfg;
  if (cli_load_configs(opts, &cfg, err))
    return -1;
  fo.sys = &cfg.sys;
  coll_fit_result_t r;
  int rc = coll_fit_run(&fo, &r, err);
  if (rc == 0) {
    coll_fit_report(out, opts->format, &fo, &r);
    if (opts->output_path)
      rc = write_coll_fit(opts->output_path, opts->system_path, &r, err);
  }
  coll_fit_free(&r);
  cli_free_configs(&cfg);
  return rc == CAL_CANNOT_WRITE ? CMD_CANNOT_WRITE : rc;
}

int cmd_calibrate(const cli_opts_t *opts, FILE *out, npu_err_t *err) {
  const char *rows_given = opts->fit_rows ? opts->fit_rows : "half";
  if (strcmp(rows_given, "half") != 0 && strcmp(rows_given, "all") != 0)
    return npu_err_set(err, "--fit-rows: expected half or all, found \"%.80s\"", rows_given);
  if (opts->ncoll_logs > 0 && opts->measurements)
    return npu_err_set(err, "npusim calibrate: expected --measurements or --collectives, found "
                       "both (one fit at a time)");
  if (opts->ncoll_logs > 0)
    return calibrate_collectives(opts, out, err);
  if (!opts->measurements)
    return npu_err_set(err, "npusim calibrate: expected --measurements FILE.csv or --collectives "
                       "LOG, found neither");
  const char *rows = rows_given;
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
    CLI_LIST("collectives", "LOG", coll_logs, ncoll_logs, CLI_MAX_LOGS, "collective logs",
             "fit the links to an nccl-tests or hccl_test log (repeat\n"
             "for more); not with --measurements"),
    CLI_GROUP(cli_options_op),
    CLI_GROUP(cli_options_ranks),
    CLI_GROUP(cli_options_algo),
    CLI_END};
