/* pipeline.h - the order in which one pipeline stage runs its forward and
 * backward passes, as Megatron schedules them: 1F1B (a warm-up of forwards,
 * then one forward and one backward in turn, then the cool-down backwards) and
 * its interleaved form, where each stage holds several model chunks (virtual
 * stages) and micro-batches go round the chunks in groups of pp.
 *
 * Also DualPipeV (DeepSeek's "cut-in-half" DualPipe, deepseek-ai/DualPipe
 * dualpipev.py, commit 3da1bbe): each stage holds two chunks placed in a V
 * (stage s runs virtual stages s and 2 pp - 1 - s, so the loss is on stage 0),
 * forwards and backwards of the two chunks paired so they can overlap, and the
 * weight gradients of some backwards deferred to fill the bubbles (zero
 * bubble).
 *
 * Only the order: what a pass does and how stages exchange activations is the
 * generator's (train_gen.c). Not modelled: the original bidirectional DualPipe
 * (two copies of the weights), other zero-bubble schedules, GPipe (all
 * forwards, then all backwards). */
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

/* ---- DualPipeV ---- */

typedef enum {
  PIPE_FORWARD,          /* a forward of (chunk, microbatch) */
  PIPE_BACKWARD,         /* a backward of (chunk, microbatch) */
  PIPE_WEIGHTS,          /* the weight gradients of the oldest deferred backward */
  PIPE_FORWARD_BACKWARD, /* a forward and a backward of another micro-batch, paired */
} pipe_kind_t;

typedef struct {
  pipe_kind_t kind;
  int chunk;            /* forward's, or backward's */
  long microbatch;
  int bwd_chunk;        /* PIPE_FORWARD_BACKWARD: the backward's */
  long bwd_microbatch;
  bool defer_weights;   /* PIPE_BACKWARD: its weight gradients wait for a PIPE_WEIGHTS */
} pipe_op_t;

/* Micro-batches per pipeline DualPipeV needs: at least 2 x stages. */
long pipeline_dualpipev_min_microbatches(const pipeline_t *p);

/* The stage's DualPipeV order (p->chunks is 2), as dualpipev.py's step()
 * runs it; writes the ops to out (NULL: counts only) and returns how many. At
 * most 6 x microbatches. */
long pipeline_dualpipev(const pipeline_t *p, pipe_op_t *out);

/* The most chunk activations the stage holds at once in that order: a
 * forward's from its start until its backward ends (the deferred weight
 * gradients' inputs not counted), a paired forward and backward both. */
long pipeline_dualpipev_in_flight(const pipeline_t *p);

#endif
