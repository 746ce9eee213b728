/* commands.h - the subcommands npusim runs. Each writes its result to out and
 * returns 0, or returns -1 with the one-line reason in err (bad input: exit
 * status 2), or CMD_CANNOT_WRITE with the reason in err when a file it writes
 * itself (--chrome-trace, --list-ops, calibrate's --output) could not be
 * written (exit status 1). */
#ifndef NPUSIM_COMMANDS_H
#define NPUSIM_COMMANDS_H

#include <stdio.h>

#include "cli.h"
#include "npu_err.h"

#define CMD_CANNOT_WRITE (-2)

/* The options each command takes, in the order of its --help (cli.h's option
 * tables); each is declared beside the command that reads them. */
extern const cli_option_t cmd_coll_options[], cmd_op_options[], cmd_replay_options[],
    cmd_train_options[], cmd_serve_options[], cmd_cluster_options[], cmd_calibrate_options[],
    cmd_validate_options[], cmd_schema_options[], cmd_check_options[], cmd_diff_options[];

/* npusim validate: the resolved system (and workload) config. */
int cmd_validate(const cli_opts_t *opts, FILE *out, npu_err_t *err);

/* npusim coll: a collective's time, algbw and busbw over a sweep of sizes. */
int cmd_coll(const cli_opts_t *opts, FILE *out, npu_err_t *err);

/* npusim op: one op's cost on the chip model (or a sweep of sizes). */
int cmd_op(const cli_opts_t *opts, FILE *out, npu_err_t *err);

/* npusim replay: a trace of rank programs on the simulated cluster. */
int cmd_replay(const cli_opts_t *opts, FILE *out, npu_err_t *err);

/* npusim train: a training step of a workload on a system. */
int cmd_train(const cli_opts_t *opts, FILE *out, npu_err_t *err);

/* npusim serve: requests through serving instances: latency, throughput, goodput. */
int cmd_serve(const cli_opts_t *opts, FILE *out, npu_err_t *err);

/* npusim cluster: several jobs on one fabric, alone and together. */
int cmd_cluster(const cli_opts_t *opts, FILE *out, npu_err_t *err);

/* npusim calibrate: chip parameters fitted to measured kernels. Writes the
 * fitted config to opts->output_path itself; out gets the report. */
int cmd_calibrate(const cli_opts_t *opts, FILE *out, npu_err_t *err);

/* npusim check: the rows of an expectations file run and judged; exit status
 * 1 (CMD_NOT_ALL_PASSED) when one is out of tolerance or did not run. */
#define CMD_NOT_ALL_PASSED (-3)
int cmd_check(const cli_opts_t *opts, FILE *out, npu_err_t *err);

/* npusim diff: the figures that moved between two JSON outputs; exit status
 * 1 (CMD_NOT_ALL_PASSED) when one did. */
int cmd_diff(const cli_opts_t *opts, FILE *out, npu_err_t *err);

/* npusim schema: the reference of every config key. */
int cmd_schema(const cli_opts_t *opts, FILE *out, npu_err_t *err);

#endif
