/* cmd_serve.c - `npusim serve`: requests through serving instances placed on
 * the system. The product lives in sim/serve/: serve_run.c reads the requests
 * and runs them through the deployment that serve_deploy.c places and checks
 * (pools of instances, each with its cost model, serve_cost.c; the event loop,
 * serve_sim.c), serve_report.c prints the report and writes the time series
 * and Chrome trace. This file checks the options, loads the configs and wires
 * the options into the product's. */
#include "commands.h"
#include "serve_report.h"
#include "serve_run.h"

static int write_files(const cli_opts_t *opts, const serve_report_ctx_t *ctx,
                       const serve_sim_result_t *res, npu_err_t *err) {
  if (opts->timeseries &&
      serve_write_timeseries(opts->timeseries, ctx, res, err))
    return CMD_CANNOT_WRITE;
  if (opts->requests_out && serve_write_requests(opts->requests_out, ctx, res, err))
    return CMD_CANNOT_WRITE;
  if (opts->chrome_trace &&
      serve_write_chrome(opts->chrome_trace, ctx, res, err))
    return CMD_CANNOT_WRITE;
  return 0;
}

/* Runs the requests, writes the files asked for and prints the report. */
static int run_and_report(const cli_opts_t *opts, const serve_opts_t *so, FILE *out,
                          npu_err_t *err) {
  serve_result_t res;
  int rc = serve_run(so, &res, err);
  if (rc == SERVE_SIM_INTERNAL) /* a bug, not the input: exit 1 as other internal errors */
    rc = CMD_CANNOT_WRITE;
  if (rc == 0) {
    serve_report_ctx_t ctx = serve_run_ctx(so, &res);
    if ((rc = write_files(opts, &ctx, &res.sim, err)) == 0)
      serve_report(out, opts->format, &ctx, &res.sim, &res.sum);
  }
  serve_result_free(&res);
  return rc;
}

int cmd_serve(const cli_opts_t *opts, FILE *out, npu_err_t *err) {
  if (!opts->workload_path)
    return npu_err_set(err, "npusim serve: expected --workload FILE, found none");
  if (opts->trace_ranks)
    return npu_err_set(err,
                       "npusim serve: --trace-ranks: expected no such option (a serving "
                       "timeline shows instances), found %s",
                       opts->trace_ranks);
  serve_opts_t so = {.system_path = opts->system_path,
                     .workload_path = opts->workload_path,
                     .log_iterations = opts->timeseries || opts->chrome_trace,
                     .progress = opts->progress};
  if (opts->slo && serve_slo_parse(opts->slo, &so.slo, err))
    return -1;
  cli_configs_t cfg;
  if (cli_load_configs(opts, &cfg, err))
    return -1;
  so.sys = &cfg.sys;
  so.wl = &cfg.wl;
  int rc = run_and_report(opts, &so, out, err);
  cli_free_configs(&cfg);
  return rc;
}

const cli_option_t cmd_serve_options[] = {
    CLI_GROUP(cli_options_system),
    CLI_GROUP(cli_options_workload),
    CLI_GROUP(cli_options_set),
    CLI_GROUP(cli_options_format),
    CLI_GROUP(cli_options_output),
    CLI_GROUP(cli_options_timeline),
    CLI_GROUP(cli_options_progress),
    CLI_STRING("slo", "ttft_ms=T,tpot_ms=P", slo,
               "goodput counts the requests within both (either may\n"
               "be left out)"),
    CLI_STRING("timeseries", "FILE", timeseries,
               "also write a CSV row per iteration: batch, tokens, KV\n"
               "blocks in use, queue (npusim-plot serve draws it)"),
    CLI_STRING("requests-out", "FILE", requests_out,
               "also write a CSV row per request: instance, queueing\n"
               "delay, TTFT, TPOT, end to end, preemptions, the SLO\n"
               "limits it missed (npusim-plot serve draws their CDFs)"),
    CLI_END};
