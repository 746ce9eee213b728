/* replay_contend_share.c - the link directions shared among the jobs in
 * flight: each job's rate, a fraction of its speed alone, max-min fair by
 * progressive filling (see replay_contend.h); the loads kept per direction
 * between shares, so that a share that finds no direction full costs only the
 * directions that may be. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "npu_int.h"
#include "replay_contend_state.h"

/* ---- a job's parts ---- */

/* Part `part` of a shape: its alone length and the link loads, if any. */
double contend_part_len(const shape_t *sh, long part, const coll_phase_cost_t **link) {
  *link = NULL;
  if (part == 0)
    return sh->overhead_s;
  long q = part - 1, ph = (q / 2) % sh->nphases;
  const coll_phase_cost_t *c = &sh->phases[ph];
  if (q % 2 == 0)
    return c->fixed_s;
  if (c->nloads > 0 && c->link_s > 0)
    *link = c;
  return c->link_s;
}

/* The link loads of a job's current part, or NULL. */
const coll_phase_cost_t *contend_job_link(job_t *j) {
  const coll_phase_cost_t *link;
  contend_part_len(job_shape(j), j->part, &link);
  return link;
}

/* ---- which link directions could be full, kept between shares ----
 * Most shares find no link direction full: every rate is 1. Finding that
 * anew each time costs every load of every active job (a data-parallel ring
 * over a thousand servers loads thousands of directions) at every event;
 * instead each job's loads are registered per direction when its link part
 * changes, each direction keeps their sum, and the directions whose sum may
 * reach their capacity are listed. Only those are checked as share() would
 * check them (its sum, in its order); only when one is full does share()
 * run its progressive filling. The answers are share()'s, bit for bit. */

/* Relative margin within which a direction may be full: far above the
 * error of the extended-precision sum against share()'s double sum over
 * thousands of loads, and above share()'s own margin for a full direction
 * (1e-9 of the level), so that a direction outside it is never full in
 * share()'s filling and its jobs keep a rate of 1 (see share()). */
#define RISK_MARGIN 1e-6

/* Whether slot s may be full at rates of 1, or at a level near 1; those that
 * may are checked in share()'s order. One load decides exactly (share() adds
 * it to 0): a link carrying one transfer at its full rate (a NIC) is not
 * listed, though share()'s margin could fill it at a level within 1e-9 of 1,
 * where open_jobs() leaves its job at 1 (the rate differs by 1e-9 at most). */
static bool slot_risky(const replay_contend_t *c, int s) {
  const slot_loads_t *sl = &c->loads[s];
  if (sl->n == 0 || sl->demand <= 0)
    return false;
  if (sl->n == 1)
    return (c->cap[s] - 0.0) / sl->e[0].rate_Bps < 1;
  return (long double)c->cap[s] / sl->demand < 1 + RISK_MARGIN;
}

void contend_update_risk(replay_contend_t *c, int s) {
  slot_loads_t *sl = &c->loads[s];
  sl->level_known = false;
  bool risky = slot_risky(c, s);
  if (risky && sl->risky_at < 0) {
    sl->risky_at = c->nrisky;
    c->risky[c->nrisky++] = s;
  } else if (!risky && sl->risky_at >= 0) {
    int last = c->risky[--c->nrisky];
    c->risky[sl->risky_at] = last;
    c->loads[last].risky_at = sl->risky_at;
    sl->risky_at = -1;
  }
}

static void register_loads(replay_contend_t *c, int id, const coll_phase_cost_t *link) {
  size_t n = (size_t)link->nloads + 1;
  c->reg_slots[id] = realloc(c->reg_slots[id], n * sizeof(int));
  c->reg_pos[id] = realloc(c->reg_pos[id], n * sizeof(int));
  c->reg_rate[id] = realloc(c->reg_rate[id], n * sizeof(double));
  for (int l = 0; l < link->nloads; l++) {
    int s = link->slots[l];
    slot_loads_t *sl = &c->loads[s];
    if (sl->n == sl->cap) {
      sl->cap = sl->cap ? 2 * sl->cap : 4;
      sl->e = realloc(sl->e, (size_t)sl->cap * sizeof *sl->e);
    }
    double rate = link->bytes[l] / link->link_s;
    sl->e[sl->n] = (load_entry_t){id, l, c->seq[id], rate};
    c->reg_slots[id][l] = s;
    c->reg_rate[id][l] = rate;
    c->reg_pos[id][l] = sl->n++;
    sl->demand += rate;
    contend_update_risk(c, s);
  }
  c->nreg[id] = link->nloads;
  c->reg_link[id] = link;
}

void contend_unregister_loads(replay_contend_t *c, int id) {
  for (int k = 0; k < c->nreg[id]; k++) {
    int s = c->reg_slots[id][k], at = c->reg_pos[id][k];
    slot_loads_t *sl = &c->loads[s];
    double rate = sl->e[at].rate_Bps;
    sl->e[at] = sl->e[--sl->n];
    if (at < sl->n) /* the last load moved into its place */
      c->reg_pos[sl->e[at].job][sl->e[at].load] = at;
    sl->demand = sl->n > 0 ? sl->demand - rate : 0;
    contend_update_risk(c, s);
  }
  c->nreg[id] = 0;
  c->reg_link[id] = NULL;
}

static int cmp_order(const void *a, const void *b) {
  const load_entry_t *x = a, *y = b;
  if (x->seq != y->seq)
    return x->seq < y->seq ? -1 : 1;
  return (x->load > y->load) - (x->load < y->load);
}

/* share()'s first level on slot s, as it computes it: the loads summed in
 * the active list's order, each job's in its own order. */
static double first_level(replay_contend_t *c, int s) {
  slot_loads_t *sl = &c->loads[s];
  if (sl->level_known)
    return sl->level;
  if (sl->n > c->norder) {
    c->norder = 2 * sl->n;
    c->order = realloc(c->order, (size_t)c->norder * sizeof *c->order);
  }
  memcpy(c->order, sl->e, (size_t)sl->n * sizeof *sl->e);
  qsort(c->order, (size_t)sl->n, sizeof *c->order, cmp_order);
  double demand = 0;
  for (int e = 0; e < sl->n; e++)
    demand += c->order[e].rate_Bps;
  sl->level = demand > 0 ? (c->cap[s] - 0.0) / demand : INFINITY;
  sl->level_known = true;
  return sl->level;
}

/* Whether link part `link` loads the link directions job id has registered,
 * in the same order, at the same rates, bit for bit: a halving-doubling
 * all-reduce's phases between servers halve both their bytes and their time,
 * so a job going from one to the next changes nothing registered (its loads
 * keep their places, as their indices are the same). Compared in sequence
 * with the job's own copy, it saves thousands of scattered updates per phase
 * at scale. */
static bool same_loads(const replay_contend_t *c, int id, const coll_phase_cost_t *link) {
  if (c->nreg[id] != link->nloads ||
      memcmp(c->reg_slots[id], link->slots, (size_t)link->nloads * sizeof *link->slots))
    return false;
  for (int l = 0; l < link->nloads; l++)
    if (c->reg_rate[id][l] != link->bytes[l] / link->link_s)
      return false;
  return true;
}

/* Whether no link direction is full at rates of 1, with every active job's
 * current link part registered. A job between link parts keeps its last
 * part's loads: more load can only make a direction seem full, never hide
 * one (every sum only grows, in either precision), and then share() finds the
 * rates from the jobs' current parts; a collective's next loop, the same
 * part again, then costs nothing. */
static bool no_link_full(replay_contend_t *c) {
  for (int a = 0; a < c->nactive; a++) {
    int id = c->active[a];
    const coll_phase_cost_t *link = contend_job_link(&c->jobs[id]);
    if (!link || link == c->reg_link[id])
      continue;
    if (same_loads(c, id, link)) { /* the registry holds these already */
      c->reg_link[id] = link;
      continue;
    }
    contend_unregister_loads(c, id);
    register_loads(c, id, link);
  }
  for (int k = 0; k < c->nrisky; k++)
    if (first_level(c, c->risky[k]) < 1)
      return false;
  return true;
}

/* ---- progressive filling, level by level ----
 * Each level is found by a scan of every direction and job (fill_scan): few
 * levels, the usual case, cost least so. Past FILL_SCAN_LEVELS, the levels
 * come from a heap of the directions' levels (what is left of each over its
 * open demand, fill_levels): under ECMP collisions there are as many levels as
 * colliding spines, and rank-paced collectives put thousands of transfers in
 * flight. The heap's arithmetic is the scan's, in its order (a direction's
 * level computed from the same sums, the jobs frozen at a level in the open
 * list's order), so the rates are the same, bit for bit. */

#define FILL_SCAN_LEVELS 4

static bool fill_less(const fill_entry_t *a, const fill_entry_t *b) {
  return a->level != b->level ? a->level < b->level : a->q < b->q;
}

static void fill_push(replay_contend_t *c, double level, int q) {
  if (c->nfill == c->capfill) {
    c->capfill = c->capfill ? 2 * c->capfill : 256;
    c->fill = realloc(c->fill, (size_t)c->capfill * sizeof *c->fill);
  }
  int i = c->nfill++;
  c->fill[i] = (fill_entry_t){level, q};
  while (i > 0 && fill_less(&c->fill[i], &c->fill[(i - 1) / 2])) {
    fill_entry_t t = c->fill[(i - 1) / 2];
    c->fill[(i - 1) / 2] = c->fill[i];
    c->fill[i] = t;
    i = (i - 1) / 2;
  }
}

static void fill_down(replay_contend_t *c, int i) {
  for (;;) {
    int l = 2 * i + 1, r = l + 1, m = i;
    if (l < c->nfill && fill_less(&c->fill[l], &c->fill[m]))
      m = l;
    if (r < c->nfill && fill_less(&c->fill[r], &c->fill[m]))
      m = r;
    if (m == i)
      return;
    fill_entry_t t = c->fill[m];
    c->fill[m] = c->fill[i];
    c->fill[i] = t;
    i = m;
  }
}

static void fill_pop(replay_contend_t *c) {
  c->fill[0] = c->fill[--c->nfill];
  fill_down(c, 0);
}

/* A direction's level, as the scan computes it; whether it has one (open
 * users with demand). */
static bool slot_level(const replay_contend_t *c, int s, double *level) {
  if (c->users[s] <= 0 || c->demand[s] <= 0)
    return false;
  *level = (c->cap[s] - c->used[s]) / c->demand[s];
  return true;
}

/* The top entry that is a direction's current level (stale ones dropped). */
static bool fill_top(replay_contend_t *c, fill_entry_t *top) {
  while (c->nfill > 0) {
    *top = c->fill[0];
    double now;
    if (slot_level(c, c->touched[top->q], &now) && now == top->level)
      return true;
    fill_pop(c);
  }
  return false;
}

/* A job frozen at `level`: its rate, and its loads taken off the directions
 * as used at that rate; with changed, each direction it touched listed once
 * (c->full marks it listed). */
static void freeze(replay_contend_t *c, job_t *j, const coll_phase_cost_t *link, double level,
                   int *changed, int *nchanged) {
  j->rate = level;
  j->slowed = true;
  for (int l = 0; l < link->nloads; l++) {
    int s = link->slots[l];
    double d = link->bytes[l] / link->link_s;
    c->used[s] += level * d;
    c->demand[s] = --c->users[s] > 0 ? c->demand[s] - d : 0;
    if (changed && !c->full[s]) {
      c->full[s] = 1;
      changed[(*nchanged)++] = s;
    }
  }
}

/* The levels of share() from `level` on, by the heap: the open jobs
 * (c->open, nopen) and the directions they load (c->touched, ntouched, with
 * users, demand and used as the levels so far left them). */
static void fill_levels(replay_contend_t *c, int nopen, int ntouched, double level) {
  /* per direction, its open jobs (indices into open), in the open list's order */
  for (int q = 0; q < ntouched; q++) {
    c->fill_at[c->touched[q]] = q;
    c->fill_off[q + 1] = c->users[c->touched[q]];
  }
  c->fill_off[0] = 0;
  for (int q = 0; q < ntouched; q++)
    c->fill_off[q + 1] += c->fill_off[q];
  size_t nloads = (size_t)c->fill_off[ntouched];
  if (nloads > c->capfill_jobs) {
    c->capfill_jobs = 2 * nloads;
    c->fill_jobs = realloc(c->fill_jobs, c->capfill_jobs * sizeof *c->fill_jobs);
  }
  for (int q = 0; q < ntouched; q++)
    c->fill_fill[q] = 0;
  for (int o = 0; o < nopen; o++) {
    const coll_phase_cost_t *link = c->open_link[o];
    c->fill_frozen[o] = 0;
    for (int l = 0; l < link->nloads; l++) {
      int q = c->fill_at[link->slots[l]];
      c->fill_jobs[c->fill_off[q] + c->fill_fill[q]++] = o;
    }
  }
  if (ntouched > c->capfill) {
    c->capfill = 2 * ntouched;
    c->fill = realloc(c->fill, (size_t)c->capfill * sizeof *c->fill);
  }
  c->nfill = 0;
  for (int q = 0; q < ntouched; q++) {
    double l;
    if (slot_level(c, c->touched[q], &l))
      c->fill[c->nfill++] = (fill_entry_t){l, q};
  }
  for (int i = c->nfill / 2 - 1; i >= 0; i--) /* heapify */
    fill_down(c, i);
  int left = nopen;
  fill_entry_t top;
  while (left > 0 && fill_top(c, &top) && top.level < 1) {
    level = top.level > level ? top.level : level;
    /* the full directions: every one within the level's margin */
    int nfz = 0;
    while (fill_top(c, &top) && top.level <= level * (1 + 1e-9)) {
      fill_pop(c);
      for (int k = c->fill_off[top.q]; k < c->fill_off[top.q + 1]; k++) {
        int o = c->fill_jobs[k];
        if (!c->fill_frozen[o]) {
          c->fill_frozen[o] = 1;
          c->fill_list[nfz++] = o;
        }
      }
    }
    if (nfz == 0) /* nothing froze: no link is full any more */
      break;
    qsort(c->fill_list, (size_t)nfz, sizeof *c->fill_list, npu_cmp_int);
    int nchanged = 0;
    for (int f = 0; f < nfz; f++) {
      int o = c->fill_list[f];
      freeze(c, &c->jobs[c->open[o]], c->open_link[o], level, c->fill_changed, &nchanged);
    }
    left -= nfz;
    for (int k = 0; k < nchanged; k++) {
      int s = c->fill_changed[k];
      double l;
      c->full[s] = 0;
      if (slot_level(c, s, &l))
        fill_push(c, l, c->fill_at[s]);
    }
  }
}

/* Up to `levels` levels of share() by the scan, from *level on; false when
 * open jobs are left for more (*nopen of them, first in c->open). */
static bool fill_scan(replay_contend_t *c, int *nopen, int ntouched, double *level, int levels) {
  bool done = *nopen == 0;
  for (int k = 0; k < levels && !done; k++) {
    double next = 1;
    for (int q = 0; q < ntouched; q++) {
      double l;
      if (slot_level(c, c->touched[q], &l))
        next = l < next ? l : next;
    }
    if (next >= 1) {
      done = true;
      break;
    }
    *level = next > *level ? next : *level;
    for (int q = 0; q < ntouched; q++) { /* every direction's, each level */
      int s = c->touched[q];
      double l;
      c->full[s] = slot_level(c, s, &l) && l <= *level * (1 + 1e-9);
    }
    int kept = 0;
    for (int o = 0; o < *nopen; o++) {
      const coll_phase_cost_t *link = c->open_link[o];
      bool full = false;
      for (int l = 0; l < link->nloads && !full; l++)
        full = c->full[link->slots[l]];
      if (!full) {
        c->open_link[kept] = link;
        c->open[kept++] = c->open[o];
        continue;
      }
      freeze(c, &c->jobs[c->open[o]], link, *level, NULL, NULL);
    }
    done = kept == *nopen || kept == 0; /* nothing froze (no link is full any more), or all */
    *nopen = kept;
  }
  for (int q = 0; q < ntouched; q++) /* fill_levels() marks changes in it */
    c->full[c->touched[q]] = 0;
  return done;
}

/* Max-min fair rates (fractions of alone speed, at most 1) of the active jobs
 * in a link part: every rate rises together until a link direction is full;
 * the jobs crossing it keep that rate, the others rise on. */
/* The jobs in a link part that load a direction that may be full (the risky
 * list, registered as no_link_full() left it), in the active list's order:
 * only they can be slowed. A direction outside the list has room for every
 * load on it at rate 1 with RISK_MARGIN to spare, and keeps it as jobs freeze
 * below 1, so it never fills. */
static int open_jobs(replay_contend_t *c) {
  long entries = 0;
  for (int k = 0; k < c->nrisky; k++)
    entries += c->loads[c->risky[k]].n;
  /* a collective's job loads hundreds of directions: marking its loads on the
   * risky ones can cost more than taking every job, which is as right */
  bool all = entries > c->nactive;
  for (int k = 0; k < c->nrisky && !all; k++) {
    const slot_loads_t *sl = &c->loads[c->risky[k]];
    for (int e = 0; e < sl->n; e++)
      c->in_open[sl->e[e].job] = 1;
  }
  int n = 0;
  for (int a = 0; a < c->nactive; a++) {
    int id = c->active[a];
    const coll_phase_cost_t *link = all || c->in_open[id] ? contend_job_link(&c->jobs[id]) : NULL;
    if (link) { /* not between link parts */
      c->open_link[n] = link;
      c->open[n++] = id;
    }
    c->in_open[id] = 0;
  }
  return n;
}

void contend_share(replay_contend_t *c) {
  bool none_full = no_link_full(c);
  for (int a = 0; a < c->nactive; a++)
    c->jobs[c->active[a]].rate = 1;
  if (none_full)
    return;
  int nopen = open_jobs(c), ntouched = 0;
  for (int o = 0; o < nopen; o++) {
    const coll_phase_cost_t *link = c->open_link[o];
    for (int l = 0; l < link->nloads; l++) {
      int s = link->slots[l];
      if (c->users[s]++ == 0)
        c->touched[ntouched++] = s;
      c->demand[s] += link->bytes[l] / link->link_s;
    }
  }
  /* the scan first, unless the last share needed the heap: the events of one
   * run mostly need as many levels as the one before (both give the same
   * rates, bit for bit) */
  double level = 0;
  bool done = fill_scan(c, &nopen, ntouched, &level, c->fill_by_heap ? 0 : FILL_SCAN_LEVELS);
  c->fill_by_heap = !done;
  if (!done)
    fill_levels(c, nopen, ntouched, level);
  for (int q = 0; q < ntouched; q++) {
    int s = c->touched[q];
    c->demand[s] = c->used[s] = 0;
    c->full[s] = 0;
    c->users[s] = 0;
  }
}
