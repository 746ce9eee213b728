/* cmd_coll.c - `npusim coll`: a collective's time, algorithm bandwidth and bus
 * bandwidth over a sweep of sizes, reported the way nccl-tests and hccl_test
 * users read them, in either fidelity. Parses the options into the matrix to
 * run (coll_matrix.h), runs it (coll_run.h) and prints it (coll_report.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli_env.h"
#include "coll_matrix.h"
#include "coll_report.h"
#include "coll_run.h"
#include "commands.h"
#include "replay_contend.h"

/* What the options ask for: what to run, and how to print it (its style and
 * links view; the rest is filled once the system is loaded). */
typedef struct {
  coll_matrix_t m;
  coll_report_opts_t report;
} coll_args_t;

/* --style S: which table, and only where it can be printed (one line naming
 * the option otherwise). */
static int parse_style(const cli_opts_t *opts, coll_args_t *a, npu_err_t *err) {
  if (!opts->style)
    return 0;
  if (strcmp(opts->style, "nccl-tests") == 0)
    a->report.style = COLL_STYLE_NCCL_TESTS;
  else if (strcmp(opts->style, "hccl-test") == 0)
    a->report.style = COLL_STYLE_HCCL_TEST;
  else
    return npu_err_set(err, "--style: expected nccl-tests or hccl-test, found \"%.40s\"",
                       opts->style);
  if (opts->format != FORMAT_TABLE)
    return npu_err_set(err, "--style %s: expected --format table (the style is the table's "
                       "layout), found --format %s", opts->style, cli_format_names[opts->format]);
  if (opts->links)
    return npu_err_set(
        err, "--style %s: expected no --links (%s prints no link table), found --links",
        opts->style, a->report.style == COLL_STYLE_NCCL_TESTS ? "nccl-tests" : "hccl_test");
  return 0;
}

static int parse_args(const cli_opts_t *opts, coll_args_t *a, npu_err_t *err) {
  memset(a, 0, sizeof *a);
  a->m.dtype = CHIP_DTYPE_FP32;
  a->m.factor = 2;
  if (opts->links_kind && !opts->links)
    return npu_err_set(err, "--links-kind: expected --links with it, found none");
  if (parse_style(opts, a, err) || linkstats_parse_view(opts->links_rows, opts->links_kind,
                                                        &a->report.view, err))
    return -1;
  if (!opts->op)
    return npu_err_set(err, "npusim coll: expected --op OP, found none");
  if (cli_parse_coll_op(opts->op, &a->m.op, err))
    return -1;
  if (!opts->ranks)
    return npu_err_set(err, "npusim coll: expected --ranks N, found none");
  if (cli_parse_int("ranks", opts->ranks, 1, 1 << 20, &a->m.ranks, err))
    return -1;
  if (opts->ranks_per_node &&
      cli_parse_int("ranks-per-node", opts->ranks_per_node, 1, 1 << 20, &a->m.ranks_per_node, err))
    return -1;
  if (opts->root && cli_parse_int("root", opts->root, 0, a->m.ranks - 1, &a->m.root, err))
    return -1;
  if (opts->dtype && chip_dtype_parse(opts->dtype, &a->m.dtype))
    return npu_err_set(err, "--dtype: expected one of fp16, bf16, fp32, int8, fp8, found \"%.20s\"",
                       opts->dtype);
  if (a->m.op == COLL_ALLTOALLV) {
    if (!opts->matrix)
      return npu_err_set(err, "npusim coll: expected --matrix FILE for alltoallv, found none");
    return coll_matrix_read_alltoallv(&a->m, opts->matrix, err);
  }
  if (coll_matrix_sizes(&a->m, opts->sizes ? opts->sizes : "1K:1G:4", err))
    return -1;
  return a->report.style == COLL_STYLE_NCCL_TESTS ? coll_matrix_nccl_sizes(&a->m, err) : 0;
}

int cmd_coll(const cli_opts_t *opts, FILE *out, npu_err_t *err) {
  coll_args_t args;
  cli_configs_t cfg;
  if (parse_args(opts, &args, err) || cli_load_configs(opts, &cfg, err)) {
    free(args.m.alltoallv);
    return -1;
  }
  const system_cfg_t *sys = &cfg.sys;
  coll_run_opts_t run = {.node = &sys->node,
                         .cluster = &sys->cluster,
                         .dies_per_package = sys->chip.dies_per_package,
                         .coll = sys->coll,
                         .system_path = opts->system_path,
                         .algo = opts->algo,
                         .analytic = opts->fidelity == FIDELITY_ANALYTIC,
                         .links = opts->links,
                         .plain_rounds = opts->env->replay.no_collapse,
                         .time_rank_paced = replay_contend_scheds};
  coll_result_t result;
  int rc = coll_run(&run, &args.m, &result, err);
  if (rc == 0 && !run.analytic && opts->env->replay.tell_collapse)
    fprintf(stderr, "npusim coll: flow: sizes timed in closed form: %d\n", result.closed);
  if (rc == 0) {
    coll_report_opts_t *report = &args.report;
    report->format = opts->format;
    report->system = sys->name;
    report->chip = sys->chip.name;
    report->fidelity = cli_fidelity_names[opts->fidelity];
    report->links = run.links;
    coll_report(out, report, &args.m, &result);
    coll_result_free(&result);
  }
  cli_free_configs(&cfg);
  free(args.m.alltoallv);
  return rc;
}

const cli_option_t cmd_coll_options[] = {
    CLI_GROUP(cli_options_system),
    CLI_GROUP(cli_options_set),
    CLI_GROUP(cli_options_format),
    CLI_GROUP(cli_options_fidelity),
    CLI_GROUP(cli_options_output),
    CLI_GROUP(cli_options_op),
    CLI_GROUP(cli_options_dtype),
    CLI_GROUP(cli_options_ranks),
    CLI_STRING("sizes", "MIN:MAX[:F]", sizes,
               "sizes from MIN to MAX, times F each (default 1K:1G:4)"),
    CLI_GROUP(cli_options_algo),
    CLI_STRING("root", "R", root, "root rank of broadcast and reduce (default 0)"),
    CLI_STRING("matrix", "FILE", matrix, "alltoallv bytes, a JSON array of arrays"),
    CLI_STRING("style", "S", style, "print the table of nccl-tests or hccl-test (see above)"),
    CLI_GROUP(cli_options_links),
    CLI_END};
