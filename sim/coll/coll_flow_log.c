/* coll_flow_log.c - the flow engine's transfers into link figures as they
 * end; see coll_engine.h (coll_flow_log_t). */
#include <stdlib.h>

#include "coll_engine.h"
#include "simgrid_dl.h"

/* A sweep of the link figures every this many intervals added: their edges
 * held at once stay near 2 x 24 bytes times it, plus what is in flight and
 * what starts after SimGrid's clock (a collective timed in closed form logs
 * every round of it at once). */
#define LOG_SWEEP_EVERY (1L << 18)

static void times_push(coll_flow_times_t *h, double t) {
  if (h->n == h->cap) {
    h->cap = h->cap ? 2 * h->cap : 64;
    h->v = realloc(h->v, h->cap * sizeof *h->v);
  }
  size_t i = h->n++;
  for (; i > 0 && h->v[(i - 1) / 2] > t; i = (i - 1) / 2)
    h->v[i] = h->v[(i - 1) / 2];
  h->v[i] = t;
}

static void times_pop(coll_flow_times_t *h) {
  double t = h->v[--h->n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->n)
      break;
    if (c + 1 < h->n && h->v[c + 1] < h->v[c])
      c++;
    if (h->v[c] >= t)
      break;
    h->v[i] = h->v[c];
    i = c;
  }
  if (h->n > 0)
    h->v[i] = t;
}

void coll_flow_log_init(coll_flow_log_t *log, const topo_t *topo, linkstats_t *stats) {
  *log = (coll_flow_log_t){.topo = topo, .stats = stats};
}

void coll_flow_log_hold(coll_flow_log_t *log, double start_s) {
  if (log && log->stats)
    times_push(&log->held, start_s);
}

void coll_flow_log_release(coll_flow_log_t *log, double start_s) {
  if (!log || !log->stats)
    return;
  times_push(&log->gone, start_s);
  while (log->gone.n > 0 && log->held.v[0] == log->gone.v[0]) {
    times_pop(&log->held);
    times_pop(&log->gone);
  }
}

/* Counts n intervals kept to sweep; every LOG_SWEEP_EVERY of them, sweeps
 * the link figures up to the earliest time held, or SimGrid's clock. */
static void kept(coll_flow_log_t *log, int n) {
  log->since_sweep += n;
  if (log->since_sweep < LOG_SWEEP_EVERY)
    return;
  double t = simgrid_get_clock();
  if (log->held.n > 0 && log->held.v[0] < t)
    t = log->held.v[0];
  if (t > log->swept_before_s) { /* else a sweep would walk nothing new */
    linkstats_sweep_before(log->stats, t);
    log->since_sweep = 0;
    log->swept_before_s = t;
  }
}

void coll_flow_log_add(coll_flow_log_t *log, int src, int dst, double bytes, double start_s,
                       double end_s) {
  if (!log || !log->stats)
    return;
  topo_hop_t hops[TOPO_MAX_HOPS];
  int nh = topo_route(topo_at(log->topo, start_s), src, dst, hops);
  for (int h = 0; h < nh; h++)
    linkstats_add_interval(log->stats, hops[h].link, hops[h].dir, start_s, end_s, bytes);
  kept(log, nh);
}

void coll_flow_log_add_routed(coll_flow_log_t *log, const int *route, int n, double bytes,
                              double start_s, double end_s) {
  if (!log || !log->stats)
    return;
  int nkept = 0;
  for (int h = 0; h < n; h++) {
    int slot = route[h] / 2;
    if (route[h] % 2) {
      linkstats_add_in_order(log->stats, slot, start_s, end_s, bytes);
    } else {
      linkstats_add_interval(log->stats, slot / 2, slot % 2, start_s, end_s, bytes);
      nkept++;
    }
  }
  kept(log, nkept);
}

void coll_flow_log_sweep_slots(coll_flow_log_t *log, const int *slots, int n, double t) {
  if (log->stats)
    linkstats_sweep_slots_before(log->stats, slots, n, t);
}

void coll_flow_log_close(coll_flow_log_t *log) {
  if (log->stats)
    linkstats_close(log->stats);
  free(log->held.v);
  free(log->gone.v);
  log->held = log->gone = (coll_flow_times_t){0};
}
