/* intervals.h - the one sweep over intervals on a time line: the replay's
 * per-rank breakdown, the training step's categories and the link figures all
 * sort the starts and ends of what ran and walk them in time order.
 *
 * Each interval has a class (what it is: compute, a kind of communication, a
 * transfer) and a rate (bytes per second on a link, or 0). The walk hands the
 * caller each stretch between two consecutive edges with how many intervals of
 * each class were open during it and their summed rate; what a stretch counts
 * as is the caller's rule. */
#ifndef NPUSIM_INTERVALS_H
#define NPUSIM_INTERVALS_H

typedef struct {
  double t;       /* when */
  int cls;        /* the interval's class, 0 .. nclasses - 1 */
  int delta;      /* +1 at its start, -1 at its end */
  double rate;    /* at its start the interval's rate, at its end minus it */
} interval_edge_t;

/* Appends the two edges of [start_s, end_s) of class cls at e + *n. */
void intervals_add(interval_edge_t *e, int *n, double start_s, double end_s, int cls,
                   double rate);

/* Called for each stretch [t0, t0 + dt) before an edge: open[c] intervals of
 * class c and the summed rate of all open intervals. */
typedef void (*interval_stretch_fn)(void *ctx, double dt, const int *open, double rate);

/* Sorts the n edges by time (ends before starts at a tie, then by rate) and
 * walks them, calling fn for the stretch before each edge after the first.
 * open has room for nclasses counts. */
void intervals_sweep(interval_edge_t *e, int n, int nclasses, int *open, interval_stretch_fn fn,
                     void *ctx);

/* The same sweep taken in batches, for edges that come as a run goes on:
 * where it is (open counts are the caller's) after the edges walked so far. */
typedef struct {
  double rate;   /* summed rate of the open intervals */
  double last_t; /* the last edge's time */
  int edges;     /* edges walked */
} interval_walk_t;

/* Sorts edges as intervals_sweep does; stable: equal edges keep their order. */
void intervals_sort(interval_edge_t *e, int n);

/* Walks n sorted edges on from w, every one later than those walked before
 * (or tied with them in intervals_sort's order): the same calls of fn as one
 * sweep over all of them. */
void intervals_walk(interval_walk_t *w, const interval_edge_t *e, int n, int *open,
                    interval_stretch_fn fn, void *ctx);

#endif
