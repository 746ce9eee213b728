/* pipeline.c - Megatron's pipeline order; see pipeline.h. */
#include "pipeline.h"

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
