/* jobs_merge.h - several jobs' rank programs as one trace on the whole cluster.
 *
 * Each job is a trace in its own rank numbering, a map from its ranks to the
 * cluster's NPUs (jobs_place.h) and a number of steps. The merged trace has a
 * rank per NPU of the cluster: a job's communicators and programs are renamed
 * onto its NPUs, its program repeated once per step, and NPUs no job holds run
 * an empty program. Steps follow one another as a training loop's iterations
 * do: a step ends when every rank of the job has ended it, and none starts the
 * next before (a TRACE_OP_BARRIER between steps, on the job's "jobN.steps"
 * communicator of its NPUs that run ops; it takes no time), so one step of a
 * job alone lasts what npusim replay says of its trace. Within a program, step
 * s's ops sit at s x (step_ops + 1), each step but the last followed by its
 * barrier; each step's ops wait on their own step's ops and events (events
 * renamed "name#s"); ops keep their trace's ids (so errors and timelines name
 * them as the file does: each step repeats them), barriers have id -1. Point-
 * to-point peers given as offsets stay offsets where the map keeps them so;
 * where it does not (a spread or listed placement), the program's ranks are
 * split by the offsets their peers land at. The replay then runs all jobs at
 * once on the one fabric, their transfers sharing links as any others do.
 *
 * Size: the cluster replays every rank, so its memory follows the ops all
 * NPUs run over all steps; a merge past the bounds below is refused in one
 * line before anything is built (README, "Reliability"), and a failed
 * allocation is one line too, never a crash.
 *
 * Nothing here knows about the system or SimGrid. */
#ifndef NPUSIM_JOBS_MERGE_H
#define NPUSIM_JOBS_MERGE_H

#include <stdint.h>

#include "trace.h"
#include "npu_err.h"

typedef struct {
  const trace_t *trace; /* the job in its own ranks */
  const int *npu_of;    /* per job rank: its NPU */
  int steps;            /* times its program runs, >= 1 */
} jobs_part_t;

/* The most ops all NPUs run over all steps (each job's programs x their ranks
 * x (its steps' ops and barriers), summed; 160 Mi): the replay keeps some 40
 * bytes of record per op of each rank. GPT-3 175B on 1024 NPUs beside a
 * 32-NPU job over 3 steps, 147 Mi, peaked at 5.7 GiB. */
#define JOBS_MAX_RANK_OPS (160LL << 20)
/* The most ops the merged programs hold (each job's programs x the groups its
 * placement splits their ranks into x (steps' ops and barriers); 8 Mi): some
 * 200 bytes each. Both together: at most about 8 GiB. */
#define JOBS_MAX_MERGED_OPS (1LL << 23)

/* What each program of the merged trace is. */
typedef struct {
  int job;      /* index into the parts, -1 for the idle NPUs' program */
  int step_ops; /* ops of one step (without its barrier) */
} jobs_program_t;

typedef struct {
  trace_t trace;
  jobs_program_t *programs; /* per program of trace */
} jobs_merged_t;

typedef struct {
  int64_t rank_ops;   /* ops all NPUs run over all steps */
  int64_t merged_ops; /* ops the merged programs hold */
} jobs_size_t;

/* The merge's size, before anything is built. Returns 0, or -1 with a one-line
 * reason in err (out of memory). */
int jobs_merge_size(const jobs_part_t *parts, int nparts, jobs_size_t *out, npu_err_t *err);

/* Merges the parts onto a cluster of `npus` NPUs (the maps disjoint, within
 * it). Returns 0, or -1 with a one-line reason in err (past a size bound, out
 * of memory). */
int jobs_merge(const jobs_part_t *parts, int nparts, int npus, jobs_merged_t *out, npu_err_t *err);

void jobs_merged_free(jobs_merged_t *m);

#endif
