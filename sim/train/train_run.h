/* train_run.h - a training step, run: a transformer and its parallel plan
 * become rank programs (workloads/train_gen.c), the programs are replayed on
 * the system (replay/), and the step time becomes the figures `npusim train`
 * reports: throughput, MFU, where rank 0's and each pipeline stage's time went,
 * the memory a stage needs against the HBM that holds it, the energy.
 *
 * What each op and program is for comes from the generator (train_program_t).
 * Nothing here knows the command line or prints: the command fills
 * train_opts_t, train_report.h prints the result and writes its files. */
#ifndef NPUSIM_TRAIN_RUN_H
#define NPUSIM_TRAIN_RUN_H

#include <stdbool.h>
#include <stddef.h>

#include "system.h"
#include "workload.h"
#include "replay.h"
#include "replay_energy.h"
#include "train_gen.h"
#include "npu_err.h"

typedef struct {
  const system_cfg_t *sys;   /* resolved, the job checked against it */
  const workload_cfg_t *wl;  /* resolved, with a training section */
  const char *workload_path; /* names the workload in messages and the replay's */
  const char *system_path;   /* names the system in the replay's messages */
  bool flow;                 /* flow fidelity (SimGrid), else analytic */
  bool progress;             /* replay progress on stderr even when it is not a terminal */
  replay_switches_t switches; /* tests: the replay's switches (replay.h); zero: none */
} train_opts_t;

/* Where one rank's step went, seconds; the parts add up to the step. */
typedef struct {
  double part_s[TRAIN_PART_COUNT]; /* each part where no part claimed before it runs */
  double straggler_wait_s;         /* at a TP, DP, EP or CP collective, for a slower peer */
  double bubble_s;                 /* idle: the pipeline bubble, pipeline waits included */
} train_breakdown_t;

typedef struct {
  trace_t trace;          /* the step's rank programs (train_prepare) */
  train_info_t info;      /* what they are for; memory per stage */
  replay_result_t replay; /* the replay (train_run) */
  bool replayed;
  /* the figures (train_run) */
  double step_time_s, tokens_per_s, tokens_per_s_per_npu;
  double model_tflops_per_npu, hw_tflops_per_npu; /* without and with recompute */
  double mfu;                                     /* against the job's mean peak FLOP/s */
  train_breakdown_t rank0;
  int *stage_rank;          /* per pipeline stage: its first rank at CP position 0 */
  train_breakdown_t *stage; /* per pipeline stage: that rank's breakdown */
  /* The memory verdict: the fullest stage against the chip's HBM or, with
   * node types, the stage with the least room left on a chip that runs it. */
  bool per_chip;       /* node types: the tightest stage on its own chip */
  train_memory_t peak; /* per NPU, bytes */
  double capacity_bytes;
  bool fits;              /* peak.total <= capacity_bytes */
  replay_energy_t energy; /* per step */
  double avg_power_W_per_npu, tokens_per_J;
} train_result_t;

/* The step's rank programs, before the run (so the caller can check options
 * that depend on the job's ranks): refuses what the generator cannot build
 * ("WORKLOAD: KEY: expected ..., found ..."), then generates. Returns 0, or -1
 * with the reason in err (nothing to free). */
int train_prepare(const train_opts_t *o, train_result_t *r, npu_err_t *err);

/* Replays the prepared programs and works out the figures; the run's deadline
 * (time_limit.h) ends once the replay is done. Returns 0, or -1 with the
 * reason in err. Free r with train_result_free either way. */
int train_run(const train_opts_t *o, train_result_t *r, npu_err_t *err);

void train_result_free(train_result_t *r);

#endif
