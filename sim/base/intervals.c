/* intervals.c - see intervals.h. */
#include "intervals.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void intervals_add(interval_edge_t *e, int *n, double start_s, double end_s, int cls,
                   double rate) {
  e[(*n)++] = (interval_edge_t){start_s, cls, 1, rate};
  e[(*n)++] = (interval_edge_t){end_s, cls, -1, -rate};
}

/* Sorting. The edges of a rank or a link come as a few chains, each in time
 * order, interleaved: a rank's compute ops one after another, each kind of
 * its communication one after another, a link's transfers. Patience sorting
 * deals the edges in their order onto the fewest such chains (piles): each onto
 * the leftmost pile whose last edge is not after it. The piles' last edges
 * then decrease from left to right, so a binary search finds it. A heap merges
 * the piles, equal edges by where they were: a stable sort in n log(piles)
 * steps, where qsort took n log n calls through a pointer (the sort was a third
 * of a 70B model's analytic run). */
static bool edge_before(const interval_edge_t *x, const interval_edge_t *y) {
  if (x->t != y->t)
    return x->t < y->t;
  if (x->delta != y->delta)
    return x->delta < y->delta; /* ends before starts at a tie */
  return x->rate < y->rate;
}

static int by_time(const void *a, const void *b) {
  return edge_before(a, b) ? -1 : edge_before(b, a);
}

/* e[i] goes before e[j]: by time, then by place (stable) */
static bool index_before(const interval_edge_t *e, int i, int j) {
  return edge_before(&e[i], &e[j]) || (!edge_before(&e[j], &e[i]) && i < j);
}

/* Restores the heap of piles (by their first edge not yet taken) below at. */
static void sift_down(int *heap, int n, int at, const int *first, const interval_edge_t *e) {
  for (;;) {
    int c = 2 * at + 1;
    if (c >= n)
      return;
    if (c + 1 < n && index_before(e, first[heap[c + 1]], first[heap[c]]))
      c++;
    if (!index_before(e, first[heap[c]], first[heap[at]]))
      return;
    int swap = heap[c];
    heap[c] = heap[at];
    heap[at] = swap;
    at = c;
  }
}

/* Deals e onto piles: first[p] is pile p's first edge, next[i] the edge after
 * e[i] on its pile (-1: none); returns the number of piles. */
static int deal(const interval_edge_t *e, int n, int *first, int *next, int *last) {
  int piles = 0;
  for (int k = 0; k < n; k++) {
    int lo = 0, hi = piles; /* the leftmost pile whose last edge is not after e[k] */
    while (lo < hi) {
      int mid = lo + (hi - lo) / 2;
      if (edge_before(&e[k], &e[last[mid]]))
        lo = mid + 1;
      else
        hi = mid;
    }
    next[k] = -1;
    if (lo == piles)
      first[piles++] = k;
    else
      next[last[lo]] = k;
    last[lo] = k;
  }
  return piles;
}

void intervals_sort(interval_edge_t *e, int n) {
  int i = 1;
  while (i < n && !edge_before(&e[i], &e[i - 1])) /* edges often come in order */
    i++;
  if (i >= n)
    return;
  int *first = malloc((size_t)n * sizeof *first), *next = malloc((size_t)n * sizeof *next);
  int *heap = malloc((size_t)n * sizeof *heap); /* each pile's last edge, then the heap */
  interval_edge_t *out = malloc((size_t)n * sizeof *out);
  if (first && next && heap && out) {
    int piles = deal(e, n, first, next, heap);
    for (int p = 0; p < piles; p++)
      heap[p] = p;
    for (int p = piles / 2 - 1; p >= 0; p--)
      sift_down(heap, piles, p, first, e);
    for (int k = 0; k < n; k++) {
      int p = heap[0];
      out[k] = e[first[p]];
      first[p] = next[first[p]];
      if (first[p] < 0)
        heap[0] = heap[--piles];
      sift_down(heap, piles, 0, first, e);
    }
    memcpy(e, out, (size_t)n * sizeof *e);
  } else { /* qsort's merge sort needs as much room: it may do without */
    qsort(e, (size_t)n, sizeof *e, by_time);
  }
  free(first);
  free(next);
  free(heap);
  free(out);
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
