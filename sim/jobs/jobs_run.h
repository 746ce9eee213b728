/* jobs_run.h - jobs run on the cluster alone and together, and what each run
 * tells: when each job finished each step, and the bytes on each link.
 *
 * A run merges the jobs it is given (jobs_merge.h) and replays the merged
 * trace on the system, every rank simulated (so link figures cover all
 * traffic). SimGrid runs once per process, so a run whose figures are all the
 * caller needs (each job alone) runs in a child process and sends them back
 * through a pipe; the together run, whose whole result the report reads, runs
 * here. Nothing here prints. */
#ifndef NPUSIM_JOBS_RUN_H
#define NPUSIM_JOBS_RUN_H

#include "jobs_merge.h"
#include "replay.h"

typedef struct {
  double *step_end_s; /* per step of each part, concatenated: when its last rank finished it */
  int total_steps;
  double *slot_bytes; /* per link direction (link x 2 + dir): bytes carried */
  int nslots;
} jobs_figs_t;

/* Runs the parts (alone: one part) in a child process. Returns 0, or -1 with
 * the run's one-line reason in err. */
int jobs_run_apart(const system_cfg_t *sys, const jobs_part_t *parts, int nparts, int npus,
                   const replay_opts_t *ropts, jobs_figs_t *out, char *err, size_t err_len);

/* Runs the parts together here: the merged trace in m, the replay in res (free
 * both), the figures in out. Returns 0, or -1 with the reason in err. */
int jobs_run_here(const system_cfg_t *sys, const jobs_part_t *parts, int nparts, int npus,
                  const replay_opts_t *ropts, jobs_merged_t *m, replay_result_t *res,
                  jobs_figs_t *out, char *err, size_t err_len);

void jobs_figs_free(jobs_figs_t *f);

#endif
