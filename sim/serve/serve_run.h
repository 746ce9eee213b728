/* serve_run.h - a serving run: the requests (a trace or the generator) are
 * read, the deployment placed and checked (serve_deploy.h), the requests run
 * through it (serve_sim.h) and the run summed up (serve_report.h's summary):
 * what `npusim serve` reports.
 *
 * Nothing here knows the command line or prints: the command fills
 * serve_opts_t, serve_report.h prints the result and writes its time series
 * and Chrome trace. */
#ifndef NPUSIM_SERVE_RUN_H
#define NPUSIM_SERVE_RUN_H

#include <stdbool.h>

#include "serve_deploy.h"
#include "serve_report.h"
#include "npu_err.h"

typedef struct {
  const system_cfg_t *sys;   /* resolved, the job checked against it */
  const workload_cfg_t *wl;  /* resolved; serve_run refuses one without serving */
  const char *system_path;   /* names the system in messages */
  const char *workload_path; /* names the workload in messages; a relative
                                request trace is read from its folder */
  serve_slo_t slo;           /* goodput counts the requests within both limits */
  bool log_iterations;       /* keep the iteration log (time series, Chrome trace) */
  bool progress;             /* progress on stderr even when it is not a terminal */
} serve_opts_t;

typedef struct {
  serve_requests_t reqs;
  serve_deployment_t dep;
  serve_sim_result_t sim;
  serve_summary_t sum;
} serve_result_t;

/* Runs the requests through the deployment and sums the run up. Returns 0,
 * -1 with the reason in err (bad input, or out of memory), or
 * SERVE_SIM_INTERNAL with the reason in err (requests left unfinished: a bug,
 * not the input). Free r with serve_result_free either way. */
int serve_run(const serve_opts_t *o, serve_result_t *r, npu_err_t *err);

/* What the report shows besides the summary, for serve_report and the files;
 * it points into o and r. */
serve_report_ctx_t serve_run_ctx(const serve_opts_t *o, const serve_result_t *r);

void serve_result_free(serve_result_t *r);

#endif
