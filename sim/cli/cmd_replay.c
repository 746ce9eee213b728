/* cmd_replay.c - `npusim replay`: a trace of rank programs replayed on a system. */
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "replay.h"

/* "0-7" or "3": the ranks a Chrome trace keeps. */
static int parse_range(const char *text, int ranks, int *first, int *last, npu_err_t *err) {
  char *end;
  long a = strtol(text, &end, 10), b = a;
  if (end != text && *end == '-')
    b = strtol(end + 1, &end, 10);
  if (end == text || *end || a < 0 || b < a)
    return npu_err_set(err, "--trace-ranks: expected FIRST-LAST (e.g. 0-7), found \"%.40s\"", text);
  *first = (int)a;
  *last = (int)(b < ranks - 1 ? b : ranks - 1);
  return 0;
}

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
  int first = 0, last = trace.ranks - 1, rc = 0;
  if (opts->trace_ranks)
    rc = parse_range(opts->trace_ranks, trace.ranks, &first, &last, err);
  replay_result_t res;
  bool ran = false;
  if (rc == 0) {
    replay_opts_t ropts = replay_opts(opts->fidelity == FIDELITY_FLOW, false);
    rc = replay_run(&cfg.sys, &trace, opts->trace, &ropts, &res, err->msg, sizeof err->msg);
    ran = rc == 0;
  }
  if (rc == 0 && opts->chrome_trace &&
      replay_write_chrome(opts->chrome_trace, &trace, &res, first, last, err->msg,
                          sizeof err->msg))
    rc = CMD_CANNOT_WRITE;
  if (rc == 0)
    replay_print(out, opts->format, &trace, &cfg.sys, &res, cli_fidelity_names[opts->fidelity]);
  if (ran)
    replay_result_free(&res, &trace);
  trace_free(&trace);
  cli_free_configs(&cfg);
  return rc;
}
