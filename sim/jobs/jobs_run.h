/* jobs_run.h - jobs run on the cluster alone and together, and what each run
 * tells: when each job finished each step, and the bytes on each link.
 *
 * A run merges the jobs it is given (jobs_merge.h) and replays the merged
 * trace on the system, every rank simulated (so link figures cover all
 * traffic). SimGrid runs once per process, so a run whose figures are all the
 * caller needs (each job alone) runs in a child process and sends them back
 * through a pipe; the together run, whose whole result the report reads, runs
 * here. Nothing here prints.
 *
 * jobs_run_cluster runs loaded jobs (jobs_load.h) as npusim cluster compares
 * them: the jobs repeat their steps until the longest has run `steps`; a
 * job's step times compare the steps it finished before the first job ran out
 * of steps, alone and together, so neither side counts steps that ran with
 * the others gone. */
#ifndef NPUSIM_JOBS_RUN_H
#define NPUSIM_JOBS_RUN_H

#include "jobs_load.h"
#include "jobs_merge.h"
#include "linkstats.h"
#include "replay.h"
#include "npu_err.h"

typedef struct {
  double *step_end_s; /* per step of each part, concatenated: when its last rank finished it */
  int total_steps;
  double *slot_bytes; /* per link direction (link x 2 + dir): bytes carried */
  int nslots;
} jobs_figs_t;

/* Runs the parts (alone: one part) in a child process. Returns 0, or -1 with
 * the run's one-line reason in err. */
int jobs_run_apart(const system_cfg_t *sys, const jobs_part_t *parts, int nparts, int npus,
                   const replay_opts_t *ropts, jobs_figs_t *out, npu_err_t *err);

/* Runs the parts together here: the merged trace in m, the replay in res (free
 * both), the figures in out. Returns 0, or -1 with the reason in err. */
int jobs_run_here(const system_cfg_t *sys, const jobs_part_t *parts, int nparts, int npus,
                  const replay_opts_t *ropts, jobs_merged_t *m, replay_result_t *res,
                  jobs_figs_t *out, npu_err_t *err);

void jobs_figs_free(jobs_figs_t *f);

#define JOBS_DEFAULT_STEPS 3
#define JOBS_MAX_STEPS 1000 /* per job: a job far shorter than another repeats this often */

/* How to run the jobs together. */
typedef struct {
  const system_cfg_t *sys;
  const char *system_path; /* named in errors about system keys */
  bool flow;               /* fidelity: flow, else analytic */
  bool progress;           /* --progress: forced on stderr */
  replay_switches_t switches; /* tests: the replay's switches (replay.h); zero: none */
  int npus;                /* the cluster's (jobs_load) */
  int steps;               /* the longest job's, in [1, JOBS_MAX_STEPS] */
} jobs_run_opts_t;

/* A link direction that two or more jobs cross when each runs alone. */
typedef struct {
  int slot;      /* link x 2 + dir */
  unsigned jobs; /* bit per job that crosses it alone (first 32 jobs) */
  int njobs;
  link_stat_t stat; /* together */
} jobs_shared_link_t;

/* What the runs tell, beside each job's figures (in its jobs_job_t). */
typedef struct {
  jobs_figs_t *alone;         /* per job: its run alone */
  bool ran;                   /* the run together ran: m and res hold it */
  jobs_merged_t m;            /* the jobs merged (its trace is the timeline's) */
  replay_result_t res;        /* the run together */
  jobs_shared_link_t *shared; /* most utilised first */
  int nshared;
} jobs_result_t;

/* Sizes, runs each job alone and all together, and fills each job's steps
 * and comparison and r (zeroed by the caller, r->alone per job). Returns 0,
 * or -1 with the one-line error in err; free r with jobs_result_free either
 * way. */
int jobs_run_cluster(const jobs_run_opts_t *opts, jobs_job_t *jobs, int njobs, jobs_result_t *r,
                     npu_err_t *err);

void jobs_result_free(jobs_result_t *r, int njobs);

#endif
