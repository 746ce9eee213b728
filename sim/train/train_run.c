/* train_run.c - a training step generated, replayed and summed up: the
 * breakdown of a rank's step by part, MFU, the memory verdict, the energy. */
#include "train_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intervals.h"
#include "progress.h"
#include "time_limit.h"

/* The breakdown's extra category: time a rank waits at a collective for a
 * slower peer (start to ready of a TP, DP, EP or CP collective), claimed after
 * every part; a wait for a pipeline neighbour stays in the bubble. */
#define PART_WAIT TRAIN_PART_COUNT
#define NCATEGORIES (TRAIN_PART_COUNT + 1)

/* Each instant of the step goes to one category, so the parts add up to the
 * step: compute first, then the communication kinds in this order (what the
 * compute stream most likely waits on first), then waiting for stragglers;
 * idle time is the bubble. */
static const int claim_order[NCATEGORIES] = {
    TRAIN_PART_COMPUTE, TRAIN_PART_OPTIMIZER, TRAIN_PART_TP, TRAIN_PART_CP,
    TRAIN_PART_EP,      TRAIN_PART_PP,        TRAIN_PART_DP, PART_WAIT};

typedef struct {
  double out[NCATEGORIES], busy;
} claim_t;

/* A stretch of the timeline goes to the first open category in claim order. */
static void claim_stretch(void *ctx, double dt, const int *open, double rate) {
  (void)rate;
  claim_t *cl = ctx;
  int c = 0;
  while (c < NCATEGORIES && !open[claim_order[c]])
    c++;
  if (c < NCATEGORIES) {
    cl->out[claim_order[c]] += dt;
    cl->busy += dt;
  }
}

static bool waits_for_peers(train_part_t part) {
  return part == TRAIN_PART_TP || part == TRAIN_PART_DP || part == TRAIN_PART_EP ||
         part == TRAIN_PART_CP;
}

/* Sweeps a rank's timeline: compute and optimizer time as they run, each kind
 * of communication where no compute hides it, the waits at collectives for
 * slower peers, and the idle rest (the bubble). Returns 0, or -1 on out of
 * memory. */
static int breakdown(const train_result_t *r, int rank, train_breakdown_t *b) {
  const trace_t *t = &r->trace;
  int pi = t->program_of[rank];
  const trace_program_t *p = &t->programs[pi];
  const train_part_t *parts = r->info.programs[pi].parts;
  interval_edge_t *e = malloc(((size_t)p->nops * 4 + 1) * sizeof *e);
  if (!e)
    return -1;
  int n = 0, open[NCATEGORIES];
  for (int i = 0; i < p->nops; i++) {
    train_part_t part = parts[i];
    const replay_span_t *sp = &r->replay.spans[replay_stand_in(&r->replay, t, rank)][i];
    /* communication counts from when its peers were there: waiting for a
     * pipeline neighbour is bubble, not communication */
    bool compute = part == TRAIN_PART_COMPUTE || part == TRAIN_PART_OPTIMIZER;
    double start = compute ? sp->start_s : sp->ready_s;
    if (part != TRAIN_PART_NONE && sp->end_s > start)
      intervals_add(e, &n, start, sp->end_s, (int)part, 0);
    if (waits_for_peers(part) && sp->ready_s > sp->start_s)
      intervals_add(e, &n, sp->start_s, sp->ready_s, PART_WAIT, 0);
  }
  claim_t cl = {{0}, 0};
  intervals_sweep(e, n, NCATEGORIES, open, claim_stretch, &cl);
  memcpy(b->part_s, cl.out, sizeof b->part_s);
  b->straggler_wait_s = cl.out[PART_WAIT];
  b->bubble_s = r->replay.step_time_s - cl.busy;
  free(e);
  return 0;
}

/* The first rank of pipeline stage s at context-parallel position 0, as the
 * generator says which program is which. */
static int stage_rank(const train_result_t *r, int s) {
  for (int pi = 0; pi < r->info.nprograms; pi++)
    if (r->info.programs[pi].stage == s && r->info.programs[pi].cp_pos == 0)
      return r->trace.programs[pi].ranks[0];
  return 0; /* not reached: the generator makes a program per stage and position */
}

/* Rank 0's breakdown and each pipeline stage's (its first rank's). */
static int breakdowns(train_result_t *r) {
  int stages = r->info.stages;
  r->stage_rank = malloc((size_t)stages * sizeof *r->stage_rank);
  r->stage = malloc((size_t)stages * sizeof *r->stage);
  if (!r->stage_rank || !r->stage || breakdown(r, 0, &r->rank0))
    return -1;
  for (int s = 0; s < stages; s++) {
    r->stage_rank[s] = stage_rank(r, s);
    if (breakdown(r, r->stage_rank[s], &r->stage[s]))
      return -1;
  }
  return 0;
}

/* Peak FLOP/s per NPU the MFU divides by: the chip's, or with node types the
 * mean over the job's ranks of their chips' peaks. */
static double job_peak_flops(const system_cfg_t *sys, const topo_t *topo, chip_dtype_t dt) {
  if (sys->cluster.node_types.n == 0)
    return chip_cube_peak_flops(&sys->chip, dt);
  double sum = 0;
  for (int rank = 0; rank < topo->ranks; rank++)
    sum += chip_cube_peak_flops(
        config_chip_at(sys, config_server_chip_index(sys, topo_server_of(topo, rank))), dt);
  return sum / topo->ranks;
}

static chip_dtype_t training_dtype(const workload_cfg_t *w) {
  return w->training.precision == PRECISION_FP16  ? CHIP_DTYPE_FP16
         : w->training.precision == PRECISION_FP8 ? CHIP_DTYPE_FP8
                                                  : CHIP_DTYPE_BF16;
}

/* Throughput and MFU from the step time. */
static void throughput(const train_opts_t *o, train_result_t *r) {
  double step = r->replay.step_time_s, npus = (double)r->info.world;
  r->step_time_s = step;
  r->tokens_per_s = r->info.tokens / step;
  r->tokens_per_s_per_npu = r->tokens_per_s / npus;
  r->model_tflops_per_npu = r->info.model_flops / step / npus / 1e12;
  r->hw_tflops_per_npu = r->info.hw_flops / step / npus / 1e12;
  r->mfu = r->model_tflops_per_npu * 1e12 /
           job_peak_flops(o->sys, &r->replay.topo, training_dtype(o->wl));
}

/* With node types: each stage's memory against the HBM of each chip that runs
 * it; the stage and capacity with the least room left (the fullest stage on
 * its own chip when one fits nowhere else). */
static void tightest_stage(const system_cfg_t *sys, const train_result_t *r, train_memory_t *peak,
                           double *cap) {
  const trace_t *t = &r->trace;
  bool first = true;
  for (int pi = 0; pi < t->nprograms; pi++) {
    const train_memory_t *m = &r->info.memory[r->info.programs[pi].stage];
    for (int k = 0; k < t->programs[pi].nranks; k++) {
      int server = topo_server_of(&r->replay.topo, t->programs[pi].ranks[k]);
      double c =
          (double)config_chip_at(sys, config_server_chip_index(sys, server))->hbm.capacity_bytes;
      if (first || c - m->total < *cap - peak->total) {
        *peak = *m;
        *cap = c;
        first = false;
      }
    }
  }
}

/* The memory verdict: the fullest stage against the chip's HBM, or with node
 * types the tightest stage on its own chip. */
static void memory_verdict(const system_cfg_t *sys, train_result_t *r) {
  r->peak = r->info.memory[0];
  for (int s = 1; s < r->info.stages; s++)
    if (r->info.memory[s].total > r->peak.total)
      r->peak = r->info.memory[s];
  r->capacity_bytes = (double)sys->chip.hbm.capacity_bytes;
  r->per_chip = sys->cluster.node_types.n > 0;
  if (r->per_chip)
    tightest_stage(sys, r, &r->peak, &r->capacity_bytes);
  r->fits = r->peak.total <= r->capacity_bytes;
}

static void energy(const system_cfg_t *sys, train_result_t *r) {
  replay_energy(sys, &r->trace, &r->replay, &r->energy);
  r->avg_power_W_per_npu = r->energy.total_J / r->step_time_s / (double)r->info.world;
  r->tokens_per_J = r->energy.total_J > 0 ? r->info.tokens / r->energy.total_J : 0;
}

int train_prepare(const train_opts_t *o, train_result_t *r, npu_err_t *err) {
  memset(r, 0, sizeof *r);
  const char *refused = train_refusal(o->wl);
  if (refused) {
    npu_err_set(err, "%s: %s", o->workload_path, refused);
    return -1;
  }
  return train_generate(o->wl, &replay_vocab, o->sys->node.npus, &r->trace, &r->info, err);
}

int train_run(const train_opts_t *o, train_result_t *r, npu_err_t *err) {
  replay_opts_t ropts = replay_opts(o->flow, true, &o->switches);
  ropts.system_file = o->system_path;
  progress_t progress;
  progress_start(&progress, o->progress, "npusim train", "ops", 0);
  ropts.progress = &progress;
  int rc = replay_run(o->sys, &r->trace, o->workload_path, &ropts, &r->replay, err);
  progress_end(&progress);
  if (rc)
    return -1;
  r->replayed = true;
  time_limit_off(); /* the files are written whole once the run is done: the deadline ends here */
  if (breakdowns(r)) {
    npu_err_set(err, "npusim train: out of memory summing up the step of %d ranks",
             r->trace.ranks);
    return -1;
  }
  throughput(o, r);
  memory_verdict(o->sys, r);
  energy(o->sys, r);
  return 0;
}

void train_result_free(train_result_t *r) {
  if (r->replayed)
    replay_result_free(&r->replay, &r->trace);
  free(r->stage_rank);
  free(r->stage);
  trace_free(&r->trace);
  train_info_free(&r->info);
  memset(r, 0, sizeof *r);
}
