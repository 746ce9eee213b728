/* intervals.c - see intervals.h. */
#include "intervals.h"

#include <stdlib.h>
#include <string.h>

void intervals_add(interval_edge_t *e, int *n, double start_s, double end_s, int cls,
                   double rate) {
  e[(*n)++] = (interval_edge_t){start_s, cls, 1, rate};
  e[(*n)++] = (interval_edge_t){end_s, cls, -1, -rate};
}

static int by_time(const void *a, const void *b) {
  const interval_edge_t *x = a, *y = b;
  if (x->t != y->t)
    return x->t < y->t ? -1 : 1;
  if (x->delta != y->delta)
    return x->delta - y->delta; /* ends before starts at a tie */
  return x->rate < y->rate ? -1 : x->rate > y->rate;
}

void intervals_sweep(interval_edge_t *e, int n, int nclasses, int *open, interval_stretch_fn fn,
                     void *ctx) {
  qsort(e, (size_t)n, sizeof *e, by_time);
  memset(open, 0, (size_t)nclasses * sizeof *open);
  double rate = 0;
  for (int i = 0; i < n; i++) {
    if (i > 0)
      fn(ctx, e[i].t - e[i - 1].t, open, rate);
    open[e[i].cls] += e[i].delta;
    rate += e[i].rate;
  }
}
