/* cmd_cluster.c - `npusim cluster`: several jobs on one fabric. Each job (a
 * training workload or a trace) is loaded and placed on the cluster's NPUs
 * (sim/jobs/jobs_load.h), run alone and then with the others
 * (sim/jobs/jobs_run.h); the report (sim/jobs/jobs_report.h) gives each job's
 * step time alone and together, its slowdown, and the links the jobs share
 * with their utilisation. Here: the options parsed, the system loaded, the
 * timeline written. */
#include <stdlib.h>

#include "cli_env.h"
#include "commands.h"
#include "jobs_load.h"
#include "jobs_report.h"
#include "jobs_run.h"
#include "time_limit.h"

static int parse_steps(const cli_opts_t *opts, int *steps, npu_err_t *err) {
  *steps = JOBS_DEFAULT_STEPS;
  if (!opts->steps)
    return 0;
  char *end;
  long v = strtol(opts->steps, &end, 10);
  if (end == opts->steps || *end || v < 1 || v > JOBS_MAX_STEPS)
    return npu_err_set(err, "--steps: expected a whole number in [1, %d], found \"%.40s\"",
                       JOBS_MAX_STEPS, opts->steps);
  *steps = (int)v;
  return 0;
}

/* --timeline: the run together, the NPUs --trace-ranks keeps. */
static int write_timeline(const cli_opts_t *opts, const system_cfg_t *sys, int npus,
                          jobs_result_t *r, npu_err_t *err) {
  int first = 0, last = npus - 1;
  if (cli_trace_ranks(opts, npus, &first, &last, err))
    return -1;
  replay_chrome_opts_t copts = {
      .first_rank = first, .last_rank = last, .sys = sys, .progress = opts->progress};
  if (replay_write_chrome(opts->chrome_trace, &r->m.trace, &r->res, &copts, err))
    return CMD_CANNOT_WRITE;
  return 0;
}

int cmd_cluster(const cli_opts_t *opts, FILE *out, npu_err_t *err) {
  if (opts->njobs < 1)
    return npu_err_set(err, "npusim cluster: expected --job FILE[@PLACEMENT], found none");
  int steps;
  if (parse_steps(opts, &steps, err))
    return -1;
  cli_configs_t cfg;
  if (cli_load_configs(opts, &cfg, err))
    return -1;
  int njobs = opts->njobs, npus = 0, rc = 0;
  jobs_job_t *jobs = calloc((size_t)njobs, sizeof *jobs);
  jobs_result_t r = {.alone = calloc((size_t)njobs, sizeof *r.alone)};
  if (!jobs || !r.alone) {
    free(jobs);
    free(r.alone);
    cli_free_configs(&cfg);
    return npu_err_set(err, "npusim cluster: out of memory for %d jobs", njobs);
  }
  jobs_load_opts_t load = {&cfg.sys, cfg.sys_doc, opts->system_path};
  rc = jobs_load(&load, opts->jobs, njobs, jobs, &npus, err);
  jobs_run_opts_t run = {.sys = &cfg.sys,
                         .system_path = opts->system_path,
                         .flow = opts->fidelity == FIDELITY_FLOW,
                         .progress = opts->progress,
                         .switches = opts->env->replay,
                         .npus = npus,
                         .steps = steps};
  if (rc == 0)
    rc = jobs_run_cluster(&run, jobs, njobs, &r, err);
  if (r.ran)
    time_limit_off();
  if (rc == 0 && opts->chrome_trace)
    rc = write_timeline(opts, &cfg.sys, npus, &r, err);
  jobs_report_opts_t report = {.format = opts->format,
                               .system = cfg.sys.name,
                               .fidelity = cli_fidelity_names[opts->fidelity],
                               .flow = run.flow,
                               .npus = npus,
                               .steps = steps};
  if (rc == 0)
    jobs_report(out, &report, jobs, njobs, &r);
  jobs_result_free(&r, njobs);
  free(r.alone);
  jobs_free(jobs, njobs);
  free(jobs);
  cli_free_configs(&cfg);
  return rc;
}

const cli_option_t cmd_cluster_options[] = {
    CLI_GROUP(cli_options_system),
    CLI_GROUP(cli_options_set),
    CLI_GROUP(cli_options_format),
    CLI_GROUP(cli_options_fidelity),
    CLI_GROUP(cli_options_output),
    CLI_GROUP(cli_options_timeline),
    CLI_GROUP(cli_options_progress),
    CLI_LIST("job", "FILE[@P]", jobs, njobs, CLI_MAX_JOBS, "jobs",
             "a job: a workload or trace, placed by P: packed, spread\n"
             "or an NPU list such as 0-15,32-47 (repeatable)"),
    CLI_STRING("steps", "N", steps, "steps the longest job runs (default 3)"),
    CLI_END};
