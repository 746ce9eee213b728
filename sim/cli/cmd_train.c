/* cmd_train.c - `npusim train`: a training step of a workload on a system. The
 * product lives in sim/train/: train_run.c generates the rank programs,
 * replays them and works out the figures, train_report.c prints them and
 * writes the files asked for (--list-ops, --emit-trace, --emit-chakra,
 * --chrome-trace). This file loads the configs, checks the options that
 * depend on the job and wires the options into the product's. */
#include "cli_env.h"
#include "commands.h"
#include "train_report.h"
#include "train_run.h"

/* The options the job's rank count bounds, and the links view: 0, or -1 with
 * the line in err. */
static int check_views(const cli_opts_t *opts, int ranks, train_files_t *files,
                       linkstats_view_t *links, npu_err_t *err) {
  if (cli_trace_ranks(opts, ranks, &files->first_rank, &files->last_rank, err))
    return -1;
  if (opts->links_kind && !opts->links)
    return npu_err_set(err, "--links-kind: expected --links with it, found none");
  if (opts->chakra_allgather && !opts->emit_chakra)
    return npu_err_set(err, "--chakra-allgather: expected --emit-chakra with it, found none");
  if (opts->chakra_allgather) {
    int k = chakra_allgather_parse(opts->chakra_allgather);
    if (k < 0)
      return npu_err_set(err, "--chakra-allgather: expected input or total, found \"%.40s\"",
                         opts->chakra_allgather);
    files->chakra_allgather = (chakra_allgather_t)k;
  }
  return linkstats_parse_view(opts->links_rows, opts->links_kind, links, err);
}

/* Runs the prepared step, writes its files and prints the report. */
static int run_and_report(const cli_opts_t *opts, const train_opts_t *to, train_result_t *res,
                          const train_files_t *files, const linkstats_view_t *links, FILE *out,
                          npu_err_t *err) {
  if (train_run(to, res, err))
    return -1;
  if (train_write_files(files, to, res, err))
    return CMD_CANNOT_WRITE;
  train_report_opts_t ro = {cli_fidelity_names[opts->fidelity], opts->links ? links : NULL};
  train_report(out, opts->format, to, &ro, res);
  return 0;
}

int cmd_train(const cli_opts_t *opts, FILE *out, npu_err_t *err) {
  if (!opts->workload_path)
    return npu_err_set(err, "npusim train: expected --workload FILE, found none");
  cli_configs_t cfg;
  if (cli_load_configs(opts, &cfg, err))
    return -1;
  train_opts_t to = {.sys = &cfg.sys,
                     .wl = &cfg.wl,
                     .workload_path = opts->workload_path,
                     .system_path = opts->system_path,
                     .flow = opts->fidelity == FIDELITY_FLOW,
                     .progress = opts->progress,
                     .switches = opts->env->replay};
  train_result_t res;
  if (train_prepare(&to, &res, err)) {
    cli_free_configs(&cfg);
    return -1;
  }
  train_files_t files = {.list_ops = opts->list_ops,
                         .emit_trace = opts->emit_trace,
                         .emit_chakra = opts->emit_chakra,
                         .chrome_trace = opts->chrome_trace,
                         .progress = opts->progress};
  linkstats_view_t links;
  int rc = check_views(opts, res.trace.ranks, &files, &links, err);
  if (rc == 0)
    rc = run_and_report(opts, &to, &res, &files, &links, out, err);
  train_result_free(&res);
  cli_free_configs(&cfg);
  return rc;
}

const cli_option_t cmd_train_options[] = {
    CLI_GROUP(cli_options_system),
    CLI_GROUP(cli_options_workload),
    CLI_GROUP(cli_options_set),
    CLI_GROUP(cli_options_format),
    CLI_GROUP(cli_options_fidelity),
    CLI_GROUP(cli_options_output),
    CLI_GROUP(cli_options_timeline),
    CLI_GROUP(cli_options_links),
    CLI_GROUP(cli_options_progress),
    CLI_STRING("emit-chakra", "PREFIX", emit_chakra,
               "also write the step as Chakra ETs, PREFIX.<rank>.et,\n"
               "and PREFIX.comm_groups.json (ASTRA-sim's inputs)"),
    CLI_GROUP(cli_options_chakra_allgather),
    CLI_STRING("list-ops", "FILE.csv", list_ops,
               "also write the distinct compute ops of the step, in\n"
               "scripts/measure_ops.py's --ops format"),
    CLI_STRING("emit-trace", "FILE", emit_trace,
               "also write the step's rank programs as a trace\n"
               "(.json or .json.gz) that replay --trace runs"),
    CLI_END};
