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

void intervals_sort(interval_edge_t *e, int n) {
  int i = 1;
  while (i < n && by_time(&e[i - 1], &e[i]) <= 0) /* edges often come in order */
    i++;
  if (i < n)
    qsort(e, (size_t)n, sizeof *e, by_time);
}

void intervals_walk(interval_walk_t *w, const interval_edge_t *e, int n, int *open,
                    interval_stretch_fn fn, void *ctx) {
  for (int i = 0; i < n; i++, w->edges++) {
    if (w->edges > 0)
      fn(ctx, e[i].t - w->last_t, open, w->rate);
    open[e[i].cls] += e[i].delta;
    w->rate += e[i].rate;
    w->last_t = e[i].t;
  }
}

void intervals_sweep(interval_edge_t *e, int n, int nclasses, int *open, interval_stretch_fn fn,
                     void *ctx) {
  intervals_sort(e, n);
  memset(open, 0, (size_t)nclasses * sizeof *open);
  interval_walk_t w = {0, 0, 0};
  intervals_walk(&w, e, n, open, fn, ctx);
}
