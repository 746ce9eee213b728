/* cmd_replay.c - `npusim replay`: a trace of rank programs replayed on a system. */
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "replay.h"

int cmd_replay(const cli_opts_t *opts, FILE *out, npu_err_t *err) {
  if (!opts->trace)
    return npu_err_set(err, "npusim replay: expected --trace FILE, found none");
  cli_configs_t cfg;
  if (cli_load_configs(opts, &cfg, err))
    return -1;
  trace_t trace;
  if (trace_read(opts->trace, &replay_vocab, &trace, err->msg, sizeof err->msg)) {
    cli_free_configs(&cfg);
    return -1;
  }
  int first, last, rc = cli_trace_ranks(opts, trace.ranks, &first, &last, err);
  linkstats_view_t links;
  if (rc == 0)
    rc = linkstats_parse_view(opts->links_rows, opts->links_kind, &links, err->msg,
                              sizeof err->msg);
  replay_result_t res;
  bool ran = false;
  if (rc == 0) {
    replay_opts_t ropts = replay_opts(opts->fidelity == FIDELITY_FLOW, false);
    progress_t progress;
    progress_start(&progress, opts->progress, "npusim replay", "ops", 0);
    ropts.progress = &progress;
    rc = replay_run(&cfg.sys, &trace, opts->trace, &ropts, &res, err->msg, sizeof err->msg);
    progress_end(&progress);
    ran = rc == 0;
  }
  replay_chrome_opts_t copts = {.first_rank = first, .last_rank = last, .sys = &cfg.sys,
                                .progress = opts->progress};
  if (rc == 0 && opts->chrome_trace &&
      replay_write_chrome(opts->chrome_trace, &trace, &res, &copts, err->msg, sizeof err->msg))
    rc = CMD_CANNOT_WRITE;
  if (rc == 0)
    replay_print(out, opts->format, &trace, &cfg.sys, &res, cli_fidelity_names[opts->fidelity],
                 &links);
  if (ran)
    replay_result_free(&res, &trace);
  trace_free(&trace);
  cli_free_configs(&cfg);
  return rc;
}
