/* jobs_merge.h - several jobs' rank programs as one trace on the whole cluster.
 *
 * Each job is a trace in its own rank numbering, a map from its ranks to the
 * cluster's NPUs (jobs_place.h) and a number of steps. The merged trace has a
 * rank per NPU of the cluster: a job's communicators and programs are renamed
 * onto its NPUs, its program repeated once per step (each step's ops after the
 * previous step's on the same stream, events renamed per step so a wait meets
 * its own step's record), and NPUs no job holds run an empty program. Point-to-
 * point peers given as offsets stay offsets where the map keeps them so;
 * where it does not (a spread or listed placement), the program's ranks are
 * split by the offsets their peers land at. The replay then runs all jobs at
 * once on the one fabric, their transfers sharing links as any others do.
 *
 * Nothing here knows about the system or SimGrid. */
#ifndef NPUSIM_JOBS_MERGE_H
#define NPUSIM_JOBS_MERGE_H

#include "trace.h"

typedef struct {
  const trace_t *trace; /* the job in its own ranks */
  const int *npu_of;    /* per job rank: its NPU */
  int steps;            /* times its program runs, >= 1 */
} jobs_part_t;

/* What each program of the merged trace is. */
typedef struct {
  int job;      /* index into the parts, -1 for the idle NPUs' program */
  int step_ops; /* ops of one step */
} jobs_program_t;

typedef struct {
  trace_t trace;
  jobs_program_t *programs; /* per program of trace */
} jobs_merged_t;

/* Merges the parts onto a cluster of `npus` NPUs (the maps disjoint, within
 * it). Returns 0, or -1 with a one-line reason in err (out of memory). */
int jobs_merge(const jobs_part_t *parts, int nparts, int npus, jobs_merged_t *out, char *err,
               size_t err_len);

void jobs_merged_free(jobs_merged_t *m);

#endif
