/* replay_engine.h - the replay's second stage: an engine runs a plan
 * (replay_plan.h) and leaves a record of when each op ran, which the summary
 * (replay_summary.h) reads.
 *
 * Two engines fill the same record:
 *   replay_sweep.c   analytic costs without the simulator: each stream moves
 *                    as far as its dependencies and meetings allow;
 *   replay_actors.c  one SimGrid actor per stream (flow fidelity, memory ops,
 *                    or when asked): the only part of the replay on SimGrid.
 * With analytic costs both compute the same times with the same arithmetic,
 * so they print the same bytes (scripts/fuzz_traces.py checks). */
#ifndef NPUSIM_REPLAY_ENGINE_H
#define NPUSIM_REPLAY_ENGINE_H

#include "coll_engine.h"
#include "replay_plan.h"

typedef struct {
  replay_span_t **spans;    /* per simulated rank, per op of its program */
  char **finished;          /* per simulated rank, per op: 1 once it has its end */
  double *peak_memory_bytes; /* per rank: the high-water mark of its buffers */
  coll_flow_log_t log;      /* flow: every transfer, for the link figures */
  progress_t *progress;     /* ops done (NULL: none) */
} replay_record_t;

void replay_record_init(replay_record_t *rec, const replay_plan_t *pl);
void replay_record_free(replay_record_t *rec, const trace_t *trace);

/* Runs the plan without SimGrid (pl->sweep); ops that can never run are left
 * unfinished. */
void replay_sweep_run(const replay_plan_t *pl, replay_record_t *rec);

/* The same with concurrent transfers sharing links (replay_contend.h; fluid
 * NULL: each alone). Any plan's times: memory ops take no time. Each
 * transfer's duration goes to duration_s (per simulated rank, per op; may be
 * NULL). */
typedef struct replay_contend replay_contend_t;
void replay_sweep_contended(const replay_plan_t *pl, replay_record_t *rec,
                            replay_contend_t *fluid, double **duration_s);

/* Runs the plan on SimGrid, one actor per stream of each simulated rank.
 * Returns 0, or -1 with a one-line reason in err (the simulator could not
 * start; more streams than it holds). */
int replay_actors_run(const replay_plan_t *pl, replay_record_t *rec, const char *name, npu_err_t *err);

#endif
