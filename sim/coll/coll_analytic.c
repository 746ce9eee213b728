/* coll_analytic.c - alpha-beta-gamma cost of a schedule on the links it
 * crosses; see coll_engine.h. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll_engine.h"
#include "npu_int.h"

/* Bytes per key (a link direction, an endpoint) in one round, in a table
 * that grows with the keys a round touches, not with the topology or the
 * bound on a round's hops: a collective of a few ranks on a 100k-NPU cluster
 * would otherwise clear an array of every link (or of 16 hops per transfer)
 * each time it is costed. */
typedef struct {
  int *keys;        /* per bucket: key + 1; 0 empty */
  double *vals;
  int *used, nused; /* buckets in use, to clear */
  unsigned mask, shift; /* buckets - 1; 32 - log2(buckets) */
} tally_t;

static void tally_alloc(tally_t *t, size_t cap) {
  t->keys = calloc(cap, sizeof *t->keys);
  t->vals = malloc(cap * sizeof *t->vals);
  t->used = malloc(cap * sizeof *t->used);
  t->nused = 0;
  t->mask = (unsigned)cap - 1;
  t->shift = 32;
  for (size_t c = cap; c > 1; c /= 2)
    t->shift--;
}

static void tally_init(tally_t *t) { tally_alloc(t, 64); }

static void tally_free(tally_t *t) {
  free(t->keys);
  free(t->vals);
  free(t->used);
}

static unsigned tally_bucket(const tally_t *t, int key) {
  /* Knuth's multiplicative hash: the product's high bits, which every bit of
   * the key reaches (its low bits see only the key's low bits) */
  unsigned b = ((uint32_t)key * 2654435761u) >> t->shift;
  while (t->keys[b] != 0 && t->keys[b] != key + 1)
    b = (b + 1) & t->mask;
  return b;
}

/* Doubles the table (kept at most half full), every key and value moved. */
static void tally_grow(tally_t *t) {
  tally_t old = *t;
  tally_alloc(t, 2 * ((size_t)old.mask + 1));
  for (int k = 0; k < old.nused; k++) {
    unsigned from = (unsigned)old.used[k], b = tally_bucket(t, old.keys[from] - 1);
    t->keys[b] = old.keys[from];
    t->vals[b] = old.vals[from];
    t->used[t->nused++] = (int)b;
  }
  tally_free(&old);
}

/* The value of key, added as 0 if absent. */
static double *tally_at(tally_t *t, int key) {
  unsigned b = tally_bucket(t, key);
  if (t->keys[b] == 0) {
    if (2 * ((size_t)t->nused + 1) > (size_t)t->mask + 1) {
      tally_grow(t);
      b = tally_bucket(t, key);
    }
    t->keys[b] = key + 1;
    t->vals[b] = 0;
    t->used[t->nused++] = (int)b;
  }
  return &t->vals[b];
}

static double tally_get(const tally_t *t, int key) {
  unsigned b = tally_bucket(t, key);
  return t->keys[b] ? t->vals[b] : 0;
}

static void tally_clear(tally_t *t) {
  for (int k = 0; k < t->nused; k++)
    t->keys[t->used[k]] = 0;
  t->nused = 0;
}

typedef struct {
  tally_t load;     /* bytes per link slot (2 per link) in the current round */
  tally_t recv;     /* bytes received per endpoint in the current round */
  double held;      /* the schedule's hold_factor: link figures count load / held bytes */
  int *touched;     /* slots as first loaded, in order */
  int ntouched;
  topo_hop_t *hops; /* route of each transfer of the phase */
  int *nhops;
} scratch_t;

/* Cost of one round of a phase; records link figures when stats is set, and
 * the phase's link loads (all its rounds) when cost is. */
static double round_time(const topo_t *t, const coll_cfg_t *cfg, const coll_phase_t *ph,
                         double wire, double step_s, scratch_t *sc, linkstats_t *stats,
                         double repeat, coll_phase_cost_t *cost) {
  sc->ntouched = 0;
  for (int i = 0; i < ph->nxfers; i++) {
    const coll_xfer_t *x = &ph->xfers[i];
    topo_hop_t *h = &sc->hops[(size_t)i * TOPO_MAX_HOPS];
    sc->nhops[i] = topo_route(t, x->src, x->dst, h);
    for (int j = 0; j < sc->nhops[i]; j++) {
      int slot = 2 * h[j].link + h[j].dir;
      double *load = tally_at(&sc->load, slot);
      if (*load == 0)
        sc->touched[sc->ntouched++] = slot;
      *load += x->bytes * wire;
    }
    *tally_at(&sc->recv, x->dst) += x->bytes;
  }
  double slowest = 0, most_received = 0, longest_link = 0;
  for (int i = 0; i < ph->nxfers; i++) {
    const topo_hop_t *h = &sc->hops[(size_t)i * TOPO_MAX_HOPS];
    double busiest = 0;
    for (int j = 0; j < sc->nhops[i]; j++) {
      double s = tally_get(&sc->load, 2 * h[j].link + h[j].dir) / topo_link_bw(t, h[j].link);
      if (s > busiest)
        busiest = s;
    }
    double time = topo_path_alpha_s(t, h, sc->nhops[i]) + busiest;
    if (time > slowest)
      slowest = time;
    longest_link = busiest > longest_link ? busiest : longest_link;
    double received = tally_get(&sc->recv, ph->xfers[i].dst);
    if (received > most_received)
      most_received = received;
  }
  double total = slowest + cfg->step_latency_s + step_s + coll_phase_pipeline_s(ph, longest_link);
  total += coll_phase_local_s(cfg, ph, most_received);
  if (cost) {
    double busiest = 0;
    cost->slots = malloc(((size_t)sc->ntouched + 1) * sizeof *cost->slots);
    cost->bytes = malloc(((size_t)sc->ntouched + 1) * sizeof *cost->bytes);
    qsort(sc->touched, (size_t)sc->ntouched, sizeof *sc->touched, npu_cmp_int);
    int n = 0;
    for (int k = 0; k < sc->ntouched; k++) {
      int slot = sc->touched[k];
      if (n > 0 && cost->slots[n - 1] == slot)
        continue; /* listed twice: first loaded with 0 bytes */
      double load = tally_get(&sc->load, slot), busy = load / topo_link_bw(t, slot / 2);
      busiest = busy > busiest ? busy : busiest;
      cost->slots[n] = slot;
      cost->bytes[n++] = load * ph->rounds;
    }
    cost->nloads = n;
    cost->link_s = busiest * ph->rounds;
    cost->fixed_s = (total - busiest) * ph->rounds;
  }
  for (int k = 0; k < sc->ntouched && stats; k++) {
    int slot = sc->touched[k];
    double *load = tally_at(&sc->load, slot), busy = *load / topo_link_bw(t, slot / 2);
    linkstats_add(stats, slot / 2, slot % 2, *load * repeat / sc->held, busy * repeat,
                  total > 0 ? busy / total : 0);
    *load = 0; /* a slot listed twice (first loaded with 0 bytes) records its load once */
  }
  tally_clear(&sc->load);
  tally_clear(&sc->recv);
  return total;
}

/* Scratch for a schedule's rounds on the topology: loads per link direction,
 * bytes received per endpoint, the routes of a phase's transfers. */
static scratch_t scratch_new(const coll_sched_t *sched) {
  int maxx = 0;
  for (int p = 0; p < sched->nphases; p++)
    if (sched->phases[p].nxfers > maxx)
      maxx = sched->phases[p].nxfers;
  scratch_t sc = {.held = coll_sched_held(sched)};
  size_t loads = ((size_t)maxx + 1) * TOPO_MAX_HOPS;
  tally_init(&sc.load);
  tally_init(&sc.recv);
  sc.touched = malloc(loads * sizeof *sc.touched);
  sc.hops = malloc(((size_t)maxx + 1) * TOPO_MAX_HOPS * sizeof *sc.hops);
  sc.nhops = malloc(((size_t)maxx + 1) * sizeof *sc.nhops);
  return sc;
}

static void scratch_free(scratch_t *sc) {
  tally_free(&sc->load);
  tally_free(&sc->recv);
  free(sc->touched);
  free(sc->hops);
  free(sc->nhops);
}

/* Costs the schedule; per-phase costs go to costs (may be NULL, else one per
 * phase, zeroed, a phase without transfers left empty). */
static double analytic(const topo_t *topo, const coll_cfg_t *cfg, const coll_sched_t *sched,
                       linkstats_t *stats, double times, coll_phase_cost_t *costs) {
  scratch_t sc = scratch_new(sched);
  int loops = sched->loops > 0 ? sched->loops : 1;
  double per_loop = 0, wire = sched->wire_factor >= 1 ? sched->wire_factor : 1;
  for (int p = 0; p < sched->nphases; p++) {
    const coll_phase_t *ph = &sched->phases[p];
    if (ph->nxfers == 0)
      continue;
    double repeat = (double)ph->rounds * loops * times;
    per_loop += ph->rounds * round_time(topo, cfg, ph, wire, sched->step_s, &sc, stats, repeat,
                                        costs ? &costs[p] : NULL);
  }
  scratch_free(&sc);
  return coll_sched_launch_s(cfg, sched) + loops * per_loop;
}

double coll_analytic_time(const topo_t *topo, const coll_cfg_t *cfg, const coll_sched_t *sched,
                          linkstats_t *stats) {
  return analytic(topo, cfg, sched, stats, 1, NULL);
}

/* ---- timed faults: the rounds one by one on the clock ---- */

/* The end of one round of a phase that starts at start_s, the phase's link
 * loads in sc->load: each transfer waits its own path latency and the step
 * latency (as analytic() charges it), then each link direction drains its
 * load at its bandwidth of the moment (topo_link_drain_end_s); the round ends
 * with its slowest transfer, then the reduction. */
static double timed_round_end(const topo_t *t, const coll_cfg_t *cfg, const coll_phase_t *ph,
                              double step_s, const scratch_t *sc, double start_s) {
  double last = start_s, most_received = 0, longest_link = 0;
  for (int i = 0; i < ph->nxfers; i++) {
    const topo_hop_t *h = &sc->hops[(size_t)i * TOPO_MAX_HOPS];
    double from = start_s + topo_path_alpha_s(t, h, sc->nhops[i]) + cfg->step_latency_s + step_s;
    double end = from;
    for (int j = 0; j < sc->nhops[i]; j++) {
      double e = topo_link_drain_end_s(t, h[j].link, tally_get(&sc->load, 2 * h[j].link + h[j].dir),
                                       from);
      end = e > end ? e : end;
    }
    last = end > last ? end : last;
    longest_link = end - from > longest_link ? end - from : longest_link;
    double r = tally_get(&sc->recv, ph->xfers[i].dst);
    most_received = r > most_received ? r : most_received;
  }
  last += coll_phase_pipeline_s(ph, longest_link);
  last += coll_phase_local_s(cfg, ph, most_received);
  return last;
}

/* Loads one round of the phase on topology t (routes, link loads, bytes
 * received) into sc. */
static void load_round(const topo_t *t, const coll_phase_t *ph, double wire, scratch_t *sc) {
  for (int i = 0; i < ph->nxfers; i++) {
    const coll_xfer_t *x = &ph->xfers[i];
    topo_hop_t *h = &sc->hops[(size_t)i * TOPO_MAX_HOPS];
    sc->nhops[i] = topo_route(t, x->src, x->dst, h);
    for (int j = 0; j < sc->nhops[i]; j++)
      *tally_at(&sc->load, 2 * h[j].link + h[j].dir) += x->bytes * wire;
    *tally_at(&sc->recv, x->dst) += x->bytes;
  }
}

static void clear_round(scratch_t *sc) {
  tally_clear(&sc->load);
  tally_clear(&sc->recv);
}

/* The end of a round that starts before the links' death and would end after
 * it (loads of the round on t in sc, as load_round left them). A transfer
 * starting at or after T takes t->after's route; one on a dying link and
 * not through by T is resent whole on its after route from T. From T, each
 * link direction drains what the transfers that go on left on it at T (its
 * load less what it carried since the earliest start on it, less the resent
 * transfers' share of that) with the after routes' loads; the round ends with
 * its slowest transfer, then the reduction. */
static double death_round_end(const topo_t *t, const coll_cfg_t *cfg, const coll_phase_t *ph,
                              double wire, double step_s, const scratch_t *sc, double start_s) {
  const topo_t *after = t->after;
  double T = t->death_s;
  int n = ph->nxfers;
  size_t nslots = (size_t)2 * t->nlinks + 1;
  double *from = malloc(((size_t)n + 1) * sizeof *from);
  double *end = malloc(((size_t)n + 1) * sizeof *end);
  char *late = calloc((size_t)n + 1, 1); /* 1: starts at or after T; 2: resent at T */
  double *pre = calloc(nslots, sizeof *pre), *first = malloc(nslots * sizeof *first);
  double *resent = calloc(nslots, sizeof *resent), *post = calloc(nslots, sizeof *post);
  topo_hop_t *ah = malloc(((size_t)n + 1) * TOPO_MAX_HOPS * sizeof *ah);
  int *anh = malloc(((size_t)n + 1) * sizeof *anh);
  for (size_t k = 0; k < nslots; k++)
    first[k] = T;
  for (int i = 0; i < n; i++) { /* before T: the round's loads on t's routes */
    const coll_xfer_t *x = &ph->xfers[i];
    const topo_hop_t *h = &sc->hops[(size_t)i * TOPO_MAX_HOPS];
    from[i] = start_s + topo_path_alpha_s(t, h, sc->nhops[i]) + cfg->step_latency_s + step_s;
    late[i] = from[i] >= T;
    anh[i] = topo_route(after, x->src, x->dst, &ah[(size_t)i * TOPO_MAX_HOPS]);
    for (int j = 0; !late[i] && j < sc->nhops[i]; j++) {
      int slot = 2 * h[j].link + h[j].dir;
      pre[slot] += x->bytes * wire;
      first[slot] = from[i] < first[slot] ? from[i] : first[slot];
    }
  }
  for (int i = 0; i < n; i++) { /* the ends alone on t; the transfers resent at T */
    const topo_hop_t *h = &sc->hops[(size_t)i * TOPO_MAX_HOPS];
    end[i] = from[i];
    for (int j = 0; !late[i] && j < sc->nhops[i]; j++) {
      double e = topo_link_drain_end_s(t, h[j].link, pre[2 * h[j].link + h[j].dir], from[i]);
      end[i] = e > end[i] ? e : end[i];
    }
    if (!late[i] && end[i] > T && topo_path_dies(t, h, sc->nhops[i])) {
      late[i] = 2;
      for (int j = 0; j < sc->nhops[i]; j++)
        resent[2 * h[j].link + h[j].dir] += ph->xfers[i].bytes * wire;
    }
  }
  for (size_t k = 0; k < nslots; k++) /* what goes on on each direction from T */
    if (pre[k] > 0) {
      double left = pre[k] - topo_link_bytes_between(t, (int)k / 2, first[k], T);
      post[k] = left > 0 ? left * (1 - resent[k] / pre[k]) : 0;
    }
  for (int i = 0; i < n; i++)
    for (int j = 0; late[i] && j < anh[i]; j++) {
      const topo_hop_t *h = &ah[(size_t)i * TOPO_MAX_HOPS + j];
      post[2 * h->link + h->dir] += ph->xfers[i].bytes * wire;
    }
  double last = start_s, most_received = 0, longest_link = 0;
  for (int i = 0; i < n; i++) {
    const topo_hop_t *h = late[i] ? &ah[(size_t)i * TOPO_MAX_HOPS]
                                  : &sc->hops[(size_t)i * TOPO_MAX_HOPS];
    int nh = late[i] ? anh[i] : sc->nhops[i];
    double e = late[i] ? from[i] : end[i], go = late[i] == 2 ? T : from[i];
    for (int j = 0; j < nh && (late[i] || end[i] > T); j++) {
      double left = post[2 * h[j].link + h[j].dir];
      double d = left > 0 ? topo_link_drain_end_s(after, h[j].link, left, go > T ? go : T) : go;
      e = d > e ? d : e;
    }
    last = e > last ? e : last;
    longest_link = e - from[i] > longest_link ? e - from[i] : longest_link;
    double r = tally_get(&sc->recv, ph->xfers[i].dst);
    most_received = r > most_received ? r : most_received;
  }
  last += coll_phase_pipeline_s(ph, longest_link);
  last += coll_phase_local_s(cfg, ph, most_received);
  free(from);
  free(end);
  free(late);
  free(pre);
  free(first);
  free(resent);
  free(post);
  free(ah);
  free(anh);
  return last;
}

/* Walks the schedule from start_s, round by round; returns its end. A round
 * starting at or after the links' death runs on the topology after it. */
static double timed(const topo_t *topo, const coll_cfg_t *cfg, const coll_sched_t *sched,
                    double start_s) {
  scratch_t sc = scratch_new(sched);
  int loops = sched->loops > 0 ? sched->loops : 1;
  double wire = sched->wire_factor >= 1 ? sched->wire_factor : 1;
  double now = start_s + coll_sched_launch_s(cfg, sched);
  for (int loop = 0; loop < loops; loop++)
    for (int p = 0; p < sched->nphases; p++) {
      const coll_phase_t *ph = &sched->phases[p];
      const topo_t *on = topo_at(topo, now); /* every round alike on one topology */
      load_round(on, ph, wire, &sc);
      for (int r = 0; r < ph->rounds && ph->nxfers > 0; r++) {
        if (topo_at(topo, now) != on) { /* the links died: the next rounds go round them */
          clear_round(&sc);
          load_round(on = topo_at(topo, now), ph, wire, &sc);
        }
        double end = timed_round_end(on, cfg, ph, sched->step_s, &sc, now);
        if (on == topo && topo->after && end > topo->death_s)
          end = death_round_end(topo, cfg, ph, wire, sched->step_s, &sc, now);
        now = end;
      }
      clear_round(&sc);
    }
  scratch_free(&sc);
  return now;
}

/* Whether a timed fault of a link the schedule crosses (a death too) falls in
 * (from_s, to_s]: routes that cross no dying link are the same after it. */
static bool crossed_change_within(const topo_t *topo, const coll_sched_t *sched, double from_s,
                                  double to_s) {
  if (!topo_changes_within(topo, from_s, to_s))
    return false;
  char *crossed = calloc((size_t)topo->nlinks + 1, 1);
  topo_hop_t hops[TOPO_MAX_HOPS];
  for (int p = 0; p < sched->nphases; p++)
    for (int i = 0; i < sched->phases[p].nxfers; i++) {
      const coll_xfer_t *x = &sched->phases[p].xfers[i];
      int nh = topo_route(topo, x->src, x->dst, hops);
      for (int h = 0; h < nh; h++)
        crossed[hops[h].link] = 1;
    }
  bool hit = false;
  for (int l = 0; l < topo->nlinks && !hit; l++)
    hit = crossed[l] && topo_link_dies(topo, l) && topo->death_s > from_s && topo->death_s <= to_s;
  for (int c = 0; c < topo->nchanges && !hit; c++)
    hit = crossed[topo->changes[c].link] && topo->changes[c].at_s > from_s &&
          topo->changes[c].at_s <= to_s;
  free(crossed);
  return hit;
}

double coll_analytic_time_from(const topo_t *topo, const coll_cfg_t *cfg,
                               const coll_sched_t *sched, double start_s) {
  double alone = analytic(topo, cfg, sched, NULL, 1, NULL);
  /* faults only slow links: with none on its links before the schedule would
   * end alone, none changes it */
  if (!crossed_change_within(topo, sched, 0, start_s + alone))
    return alone;
  return timed(topo, cfg, sched, start_s) - start_s;
}

void coll_analytic_death_rest(const topo_t *topo, const coll_sched_t *sched, int p,
                              double done_frac, coll_phase_cost_t *out) {
  const topo_t *after = topo->after;
  const coll_phase_t *ph = &sched->phases[p];
  double wire = sched->wire_factor >= 1 ? sched->wire_factor : 1;
  double done = done_frac * ph->rounds; /* rounds through, and the one in flight's part */
  int through = (int)done < ph->rounds ? (int)done : ph->rounds - 1;
  double f = done - through;
  size_t nslots = (size_t)2 * topo->nlinks + 1;
  double *cur = calloc(nslots, sizeof *cur), *next = calloc(nslots, sizeof *next);
  topo_hop_t h[TOPO_MAX_HOPS], ah[TOPO_MAX_HOPS];
  for (int i = 0; i < ph->nxfers; i++) {
    const coll_xfer_t *x = &ph->xfers[i];
    double bytes = x->bytes * wire;
    int nh = topo_route(topo, x->src, x->dst, h), anh = topo_route(after, x->src, x->dst, ah);
    bool resent = topo_path_dies(topo, h, nh);
    for (int j = 0; j < anh; j++) {
      next[2 * ah[j].link + ah[j].dir] += bytes;
      if (resent) /* caught on a dying link: whole, round it */
        cur[2 * ah[j].link + ah[j].dir] += bytes;
    }
    for (int j = 0; !resent && j < nh; j++) /* the rest of its bytes, on its own route */
      cur[2 * h[j].link + h[j].dir] += (1 - f) * bytes;
  }
  int left = ph->rounds - through - 1; /* rounds after the one in flight */
  double busy_cur = 0, busy_next = 0;
  out->slots = malloc(nslots * sizeof *out->slots);
  out->bytes = malloc(nslots * sizeof *out->bytes);
  out->nloads = 0;
  for (size_t k = 0; k + 1 < nslots; k++) {
    if (cur[k] == 0 && next[k] == 0)
      continue;
    double bw = topo_link_bw(after, (int)k / 2);
    busy_cur = cur[k] / bw > busy_cur ? cur[k] / bw : busy_cur;
    busy_next = next[k] / bw > busy_next ? next[k] / bw : busy_next;
    out->slots[out->nloads] = (int)k;
    out->bytes[out->nloads++] = cur[k] + left * next[k];
  }
  out->fixed_s = 0;
  out->link_s = busy_cur + left * busy_next;
  free(cur);
  free(next);
}

void coll_analytic_record(const topo_t *topo, const coll_cfg_t *cfg, const coll_sched_t *sched,
                          linkstats_t *stats, double times) {
  analytic(topo, cfg, sched, stats, times, NULL);
}

coll_phase_cost_t *coll_analytic_phases(const topo_t *topo, const coll_cfg_t *cfg,
                                        const coll_sched_t *sched) {
  coll_phase_cost_t *costs = calloc((size_t)sched->nphases + 1, sizeof *costs);
  analytic(topo, cfg, sched, NULL, 1, costs);
  return costs;
}

void coll_phase_costs_free(coll_phase_cost_t *costs, int n) {
  for (int p = 0; costs && p < n; p++) {
    free(costs[p].slots);
    free(costs[p].bytes);
  }
  free(costs);
}
