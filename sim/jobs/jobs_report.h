/* jobs_report.h - what `npusim cluster` prints of its runs: each job's
 * placement, steps, step time alone and together, slowdown and memory per NPU,
 * and the links the jobs share with their utilisation together, as a table,
 * JSON or CSV. No loading or running here (jobs_load.h, jobs_run.h). */
#ifndef NPUSIM_JOBS_REPORT_H
#define NPUSIM_JOBS_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "jobs_load.h"
#include "jobs_run.h"
#include "out_format.h"

/* How to print. */
typedef struct {
  out_format_t format;
  const char *system;   /* the system's name */
  const char *fidelity; /* "flow", "analytic" */
  bool flow;            /* the flow fidelity: links have a peak utilisation */
  int npus;             /* the cluster's */
  int steps;            /* the longest job's (--steps) */
} jobs_report_opts_t;

/* Prints the jobs and r, their runs, to out. */
void jobs_report(FILE *out, const jobs_report_opts_t *opts, const jobs_job_t *jobs, int njobs,
                 const jobs_result_t *r);

#endif
