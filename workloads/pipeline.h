/* pipeline.h - the order in which one pipeline stage runs its forward and
 * backward passes, as Megatron schedules them: 1F1B (a warm-up of forwards,
 * then one forward and one backward in turn, then the cool-down backwards) and
 * its interleaved form, where each stage holds several model chunks (virtual
 * stages) and micro-batches go round the chunks in groups of pp.
 *
 * Only the order: what a pass does and how stages exchange activations is the
 * generator's (train_gen.c). Not modelled: zero-bubble or DualPipe schedules,
 * GPipe (all forwards, then all backwards). */
#ifndef NPUSIM_PIPELINE_H
#define NPUSIM_PIPELINE_H

#include <stdbool.h>

typedef struct {
  int stage;          /* this stage, 0 .. stages - 1 */
  int stages;         /* pipeline parallel size (pp) */
  int chunks;         /* model chunks per stage (vpp); 1 without interleaving */
  long microbatches;  /* per pipeline per step */
} pipeline_t;

typedef struct {
  bool backward;
  long microbatch;
  int chunk;
} pipeline_step_t;

/* Passes the stage runs in a step: a forward and a backward of every
 * (micro-batch, chunk). */
long pipeline_steps(const pipeline_t *p);

/* Forward passes before the stage's first backward (the warm-up); the stage
 * holds at most this many plus one micro-batch chunks' activations. */
long pipeline_warmup(const pipeline_t *p);

/* The k-th pass the stage runs, 0 <= k < pipeline_steps(p). */
pipeline_step_t pipeline_step(const pipeline_t *p, long k);

#endif
