/* jobs_load.h - the jobs of `npusim cluster` loaded and checked before any
 * run: each --job's file read as an npusim trace (its "format" says so) or a
 * workload config (its programs generated as npusim train does), placed on the
 * cluster's NPUs (jobs_place.h), each job's memory per NPU against the least
 * HBM among its NPUs' chips, and the runs' size against jobs_merge.h's bounds.
 *
 * The memory verdict differs from npusim train's on purpose: a workload's
 * peak is its fullest pipeline stage (a trace's, the replay's high-water mark
 * over its ranks, filled after the run together) against the least HBM among
 * all its NPUs, where train with node types weighs each stage against the chip
 * that runs it; a job here may straddle server types, and one figure per job
 * is what the report shows.
 *
 * Nothing here parses the command line, runs or prints (jobs_run.h,
 * jobs_report.h). */
#ifndef NPUSIM_JOBS_LOAD_H
#define NPUSIM_JOBS_LOAD_H

#include <stdbool.h>

#include "config.h"
#include "jobs_merge.h"
#include "jobs_place.h"
#include "npu_err.h"
#include "trace.h"

/* One job: what was loaded, where it sits, and (once run) its figures. */
typedef struct {
  jobs_spec_t spec;
  char name[128]; /* the model's or the trace's */
  bool is_trace;
  trace_t trace;
  int *npu_of;
  char *npu_text; /* npu_of as ranges, whole: "0-15,32-47" */
  int steps;
  double alone_step_s;        /* one step, alone */
  int compared;               /* steps compared alone and together */
  double alone_s, together_s; /* mean step over the compared steps */
  double peak_bytes;          /* memory per NPU: the fullest pipeline stage (a workload, as npusim
                               * train counts it) or the replay's high-water mark (a trace) */
  double capacity_bytes;      /* the least HBM among the chips of its NPUs */
} jobs_job_t;

/* What loading needs: the system (its document checks a workload against it)
 * and its file, named by a topology error. */
typedef struct {
  const system_cfg_t *sys;
  const config_doc_t *sys_doc;
  const char *system_path;
} jobs_load_opts_t;

/* Parses each of the njobs "FILE[@PLACEMENT]" in args into jobs[] (zeroed by
 * the caller), loads and places them; *npus: the cluster's NPUs. Returns 0,
 * or -1 with the one-line error in err (free jobs with jobs_free either way). */
int jobs_load(const jobs_load_opts_t *opts, const char *const *args, int njobs, jobs_job_t *jobs,
              int *npus, npu_err_t *err);

/* The runs' size before any runs (jobs_merge.h's bounds): each job alone with
 * its steps (steps_each > 0: that many each), then all of them together.
 * Returns 0, or -1 with the one-line error in err. */
int jobs_check_size(const jobs_job_t *jobs, int njobs, int steps_each, npu_err_t *err);

/* Whether the job's memory per NPU fits the least HBM among its NPUs. */
bool jobs_fits(const jobs_job_t *job);

/* The job as jobs_merge.h and jobs_run.h take it, with `steps` steps. */
jobs_part_t jobs_part_of(const jobs_job_t *job, int steps);

void jobs_free(jobs_job_t *jobs, int njobs);

#endif
