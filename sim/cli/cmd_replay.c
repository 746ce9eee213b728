/* cmd_replay.c - `npusim replay`: a trace of rank programs replayed on a system. */
#include <stdlib.h>
#include <string.h>

#include "chakra.h"
#include "cli_env.h"
#include "commands.h"
#include "jsonfile.h"
#include "replay.h"

/* The trace --trace names: npusim's JSON, or a Chakra ET set (told by the
 * content; prefix gets its PREFIX, else ""), converted with the --chakra-*
 * options; the system gives the roofline's peaks. */
static int read_trace(const cli_opts_t *opts, const system_cfg_t *sys, trace_t *trace, char *prefix,
                      size_t prefix_len, npu_err_t *err) {
  prefix[0] = '\0';
  /* "-": standard input holds one file, so an npusim trace (trace_read
   * refuses an ET there in a line of its own) */
  bool piped = strcmp(opts->trace, JSONFILE_STDIN) == 0;
  int chakra = piped ? 0 : chakra_detect(opts->trace, prefix, prefix_len, err);
  if (chakra < 0)
    return -1;
  if (!chakra) {
    prefix[0] = '\0';
    if (opts->chakra_compute || opts->comm_group || opts->chakra_skip)
      return npu_err_set(err, "--chakra-compute, --comm-group, --chakra-skip: expected a Chakra "
                         "trace with them, found the npusim trace %s", opts->trace);
    if (opts->chakra_allgather)
      return npu_err_set(err,
                         "--chakra-allgather: expected a Chakra trace with it, found the "
                         "npusim trace %s",
                         opts->trace);
    trace_vocab_t vocab = replay_vocab_on(sys);
    return trace_read(opts->trace, &vocab, trace, err);
  }
  chakra_opts_t co = {.comm_groups = opts->comm_group, .skip = opts->chakra_skip};
  if (opts->chakra_compute) {
    int m = 0;
    while (m < CHAKRA_COMPUTE_COUNT && strcmp(opts->chakra_compute, chakra_compute_names[m]))
      m++;
    if (m == CHAKRA_COMPUTE_COUNT)
      return npu_err_set(err, "--chakra-compute: expected auto, duration or roofline, found "
                         "\"%.40s\"", opts->chakra_compute);
    co.compute = (chakra_compute_t)m;
  }
  if (opts->chakra_allgather) {
    int k = chakra_allgather_parse(opts->chakra_allgather);
    if (k < 0)
      return npu_err_set(err, "--chakra-allgather: expected input or total, found \"%.40s\"",
                         opts->chakra_allgather);
    co.allgather = (chakra_allgather_t)k;
  }
  /* the roofline at the clock a step holds, the HBM at its efficiency (bf16 cube) */
  co.flops_per_s = chip_cube_peak_flops(&sys->chip, CHIP_DTYPE_BF16) * sys->chip.sustained_clock;
  co.mem_bytes_per_s = chip_hbm_effective_bw(&sys->chip);
  long skipped = 0;
  trace_vocab_t vocab = replay_vocab_on(sys);
  if (chakra_read(prefix, &co, &vocab, trace, &skipped, err))
    return -1;
  if (skipped)
    fprintf(stderr, "npusim replay: --chakra-skip: %ld Chakra nodes npusim does not model kept "
            "as zero-time delays (stream chakra_skipped)\n", skipped);
  return 0;
}

int cmd_replay(const cli_opts_t *opts, FILE *out, npu_err_t *err) {
  if (!opts->trace)
    return npu_err_set(err, "npusim replay: expected --trace FILE, found none");
  cli_configs_t cfg;
  if (cli_load_configs(opts, &cfg, err))
    return -1;
  trace_t trace;
  char prefix[4096]; /* a Chakra ET set's, named in the replay's errors */
  if (read_trace(opts, &cfg.sys, &trace, prefix, sizeof prefix, err)) {
    cli_free_configs(&cfg);
    return -1;
  }
  int first, last, rc = cli_trace_ranks(opts, trace.ranks, &first, &last, err);
  linkstats_view_t links;
  if (rc == 0)
    rc = linkstats_parse_view(opts->links_rows, opts->links_kind, &links, err);
  replay_result_t res;
  bool ran = false;
  if (rc == 0) {
    replay_opts_t ropts = replay_opts(opts->fidelity == FIDELITY_FLOW, false, &opts->env->replay);
    ropts.system_file = opts->system_path;
    progress_t progress;
    progress_start(&progress, opts->progress, "npusim replay", "ops", 0);
    ropts.progress = &progress;
    rc = replay_run(&cfg.sys, &trace, prefix[0] ? prefix : opts->trace, &ropts, &res, err);
    progress_end(&progress);
    ran = rc == 0;
    if (ran && opts->env->replay.tell_collapse)
      fprintf(stderr, "npusim replay: flow: collectives timed in closed form: %d\n",
              res.closed_collectives);
    if (rc && prefix[0]) /* by .et file, node and field */
      chakra_explain(prefix, &trace, err->msg, err);
  }
  replay_chrome_opts_t copts = {.first_rank = first, .last_rank = last, .sys = &cfg.sys,
                                .progress = opts->progress};
  if (rc == 0 && opts->chrome_trace &&
      replay_write_chrome(opts->chrome_trace, &trace, &res, &copts, err))
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

const cli_option_t cmd_replay_options[] = {
    CLI_GROUP(cli_options_system),
    CLI_GROUP(cli_options_set),
    CLI_GROUP(cli_options_format),
    CLI_GROUP(cli_options_fidelity),
    CLI_GROUP(cli_options_output),
    CLI_STRING("trace", "FILE", trace, "the trace to replay (.json or .json.gz; - reads stdin)"),
    CLI_GROUP(cli_options_timeline),
    CLI_GROUP(cli_options_links),
    CLI_GROUP(cli_options_progress),
    CLI_STRING("chakra-compute", "M", chakra_compute,
               "Chakra COMP_NODEs: auto (a roofline on the chip where\n"
               "num_ops is given, else duration_micros), duration,\n"
               "roofline"),
    CLI_STRING("comm-group", "FILE", comm_group, "Chakra process groups, {\"pg_name\": [ranks]}"),
    CLI_FLAG("chakra-skip", chakra_skip,
             "keep Chakra nodes npusim does not model as zero-time\n"
             "delays (counted in the report) instead of refusing"),
    CLI_GROUP(cli_options_chakra_allgather),
    CLI_END};
