/* pipeline.c - Megatron's pipeline order; see pipeline.h. */
#include "pipeline.h"

#include <stdlib.h>

long pipeline_steps(const pipeline_t *p) {
  return 2 * p->microbatches * p->chunks;
}

long pipeline_warmup(const pipeline_t *p) {
  long total = p->microbatches * p->chunks;
  long warmup = p->chunks > 1
                    ? (long)(p->stages - p->stage - 1) * 2 + (long)(p->chunks - 1) * p->stages
                    : p->stages - p->stage - 1;
  return warmup < total ? warmup : total;
}

/* The (micro-batch, chunk) of the n-th forward or backward: micro-batches go
 * round the chunks in groups of `stages`; backwards visit the chunks in
 * reverse. */
static pipeline_step_t virtual_step(const pipeline_t *p, long n, bool backward) {
  long group = n / ((long)p->stages * p->chunks), in_group = n % p->stages;
  int c = (int)((n / p->stages) % p->chunks);
  return (pipeline_step_t){backward, group * p->stages + in_group,
                           backward ? p->chunks - 1 - c : c};
}

pipeline_step_t pipeline_step(const pipeline_t *p, long k) {
  long total = p->microbatches * p->chunks, warmup = pipeline_warmup(p);
  if (k < warmup)
    return virtual_step(p, k, false);
  long j = k - warmup, steady = total - warmup; /* 1F1B pairs, then the cool-down */
  if (j < 2 * steady)
    return j % 2 == 0 ? virtual_step(p, warmup + j / 2, false) : virtual_step(p, j / 2, true);
  return virtual_step(p, steady + (j - 2 * steady), true);
}

/* ---- DualPipeV ---- */

long pipeline_dualpipev_min_microbatches(const pipeline_t *p) {
  return 2L * p->stages;
}

/* The order being written: the next micro-batch of each chunk's forward and
 * backward. */
typedef struct {
  pipe_op_t *out;
  long n;
  long fwd[2], bwd[2];
} dpv_t;

static void put(dpv_t *d, pipe_op_t op) {
  if (d->out)
    d->out[d->n] = op;
  d->n++;
}

static void fwd(dpv_t *d, int c) {
  put(d, (pipe_op_t){PIPE_FORWARD, c, d->fwd[c]++, 0, 0, false});
}

static void bwd(dpv_t *d, int c, bool defer) {
  put(d, (pipe_op_t){PIPE_BACKWARD, c, d->bwd[c]++, 0, 0, defer});
}

static void weights(dpv_t *d) {
  put(d, (pipe_op_t){PIPE_WEIGHTS, 0, 0, 0, 0, false});
}

static void fwd_bwd(dpv_t *d, int cf, int cb) {
  put(d, (pipe_op_t){PIPE_FORWARD_BACKWARD, cf, d->fwd[cf]++, cb, d->bwd[cb]++, false});
}

/* dualpipev.py's eight steps; r is the stage, n the stages, m the
 * micro-batches. Chunk 0 runs down the stages, chunk 1 back up. */
long pipeline_dualpipev(const pipeline_t *p, pipe_op_t *out) {
  dpv_t d = {out, 0, {0, 0}, {0, 0}};
  long r = p->stage, n = p->stages, m = p->microbatches;
  for (long i = 0; i < 2 * (n - r - 1); i++) /* 1: forwards of chunk 0 */
    fwd(&d, 0);
  for (long i = 0; i < r + 1; i++) { /* 2: both chunks' forwards */
    fwd(&d, 0);
    fwd(&d, 1);
  }
  for (long i = 0; i < n - r - 1; i++) { /* 3: zero bubble: B, W, F of chunk 1 */
    bwd(&d, 1, true);
    weights(&d);
    fwd(&d, 1);
  }
  for (long i = 0; i < m - 2 * n + r + 1; i++) { /* 4: the steady state, paired */
    if (i == 0 && r == n - 1) { /* the turn of the V: not paired, to shorten the bubble */
      fwd(&d, 0);
      bwd(&d, 1, false);
    } else {
      fwd_bwd(&d, 0, 1);
    }
    fwd_bwd(&d, 1, 0);
  }
  for (long i = 0; i < n - r - 1; i++) { /* 5: chunk 1's forwards end */
    bwd(&d, 1, false);
    fwd_bwd(&d, 1, 0);
  }
  bool defer = false; /* 6: the backwards drain, the second half deferring weights */
  for (long i = 0; i < r + 1; i++) {
    if (i == (r + 1) / 2 && r % 2 == 1)
      defer = true;
    bwd(&d, 1, defer);
    if (i == (r + 1) / 2 && r % 2 == 0)
      defer = true;
    bwd(&d, 0, defer);
  }
  for (long i = 0; i < n - r - 1; i++) { /* 7: weights, then chunk 0's backwards */
    weights(&d);
    bwd(&d, 0, true);
  }
  for (long i = 0; i < r + 1; i++) /* 8: the deferred weights left */
    weights(&d);
  return d.n;
}

long pipeline_dualpipev_in_flight(const pipeline_t *p) {
  long n = pipeline_dualpipev(p, NULL), held = 0, most = 0;
  pipe_op_t *ops = malloc((size_t)n * sizeof *ops);
  pipeline_dualpipev(p, ops);
  for (long i = 0; i < n; i++) {
    held += ops[i].kind == PIPE_FORWARD || ops[i].kind == PIPE_FORWARD_BACKWARD;
    most = held > most ? held : most;
    held -= ops[i].kind == PIPE_BACKWARD || ops[i].kind == PIPE_FORWARD_BACKWARD;
  }
  free(ops);
  return most;
}
