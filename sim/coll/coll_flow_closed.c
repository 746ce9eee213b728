/* coll_flow_closed.c - a flow schedule timed in closed form; see
 * coll_flow_close in coll_engine.h.
 *
 * Where no two transfers compete for a link, SimGrid's answer for each is the
 * later of its two ends' posts plus its bytes at its path's slowest link, so
 * the rounds of every member are a max-plus recurrence over the arrivals. It
 * is computed here operation for operation as coll_flow.c's run_round does in
 * SimGrid (the same sums in the same order), so the ends are the same
 * doubles, but where several transfers share a link below its bandwidth:
 * SimGrid re-derives their remaining bytes as others start and end there,
 * which can move an end by a unit in the last place, and this does not
 * replay those updates (docs/replay.md says how often it shows;
 * scripts/bench/closed_form_diff.py measures it). Refused, as not what this
 * computes: transfers sharing a link beyond its bandwidth, timed faults,
 * dying links, in-network switches. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll_flow_sched.h"

/* A schedule timed in closed form (coll_flow_close): its members meet, and
 * the first to leave computes every member's rounds. */
struct coll_flow_closed {
  sg_bar_t barrier;
  int members;
  int *member;      /* the endpoints taking part */
  double *arrive_s; /* per endpoint: when it came to this use */
  double *end_s;    /* per endpoint: when its part of this use ends */
  double *post_s;   /* per endpoint: when it posted the round being timed */
  double *wait_s;   /* per endpoint: its wait before posting a round of the phase
                     * being timed (the same every round) */
  double *xend_s;   /* per transfer of the phase being timed: when it ends */
  int *slots, nslots; /* the link directions its transfers take */
  int **route_off, **route; /* per phase: job_routes' */
  bool timed;       /* end_s holds this use's ends */
  int read;         /* members that took their end of this use */
};
typedef struct coll_flow_closed fclosed_t;

/* Whether the transfers of the schedules, all at once, load no link direction
 * shared by two of them beyond its bandwidth: then each one runs at its
 * path's slowest link whatever else is in flight. Returns how many (src, dst)
 * pairs take each link direction (2 x link + direction), or NULL when they
 * compete. */
static int *contention_free(coll_flow_sched_t *const *jobs, int n, const topo_t *topo) {
  pair_set_t seen;
  pair_set_init(&seen);
  double *load = calloc((size_t)2 * topo->nlinks + 1, sizeof *load);
  int *users = calloc((size_t)2 * topo->nlinks + 1, sizeof *users);
  bool ok = true;
  for (int j = 0; j < n && ok; j++)
    for (int p = 0; p < jobs[j]->nphases && ok; p++) {
      const fphase_t *fp = &jobs[j]->phases[p];
      for (int i = 0; i < fp->ph->nxfers && ok; i++) {
        const fxfer_t *x = &fp->x[i];
        /* no in-network switch, and a path that moves data */
        ok = x->src < jobs[j]->ranks && x->dst < jobs[j]->ranks && x->rate_Bps > 0;
        if (!ok || !pair_set_add(&seen, x->src, x->dst))
          continue; /* a pair's transfers run one after the other */
        topo_hop_t hops[TOPO_MAX_HOPS];
        int nh = topo_route(topo, x->src, x->dst, hops);
        for (int h = 0; h < nh; h++) {
          int slot = 2 * hops[h].link + hops[h].dir;
          load[slot] += x->rate_Bps;
          users[slot]++;
        }
      }
    }
  /* a margin under the bandwidth: max-min sharing computes each rate exactly
   * from the slowest link only while the others keep room to spare */
  for (int slot = 0; ok && slot < 2 * topo->nlinks; slot++)
    ok = users[slot] < 2 || load[slot] <= topo_link_bw(topo, slot / 2) * (1 - 1e-9);
  free(load);
  pair_set_free(&seen);
  if (!ok) {
    free(users);
    return NULL;
  }
  return users;
}

/* Which link directions take their transfers in order, each one's interval
 * after the last's end: those of one (src, dst) pair, one transfer of it per
 * round (its rounds run one after another). users: contention_free's. Not a
 * link that can never bind (topo_link_never_binding): the replay lets other
 * groups share those with a collective it calls alone on its links. */
static bool *in_order_slots(coll_flow_sched_t *const *jobs, int n, const topo_t *topo,
                            const int *users) {
  bool *in_order = malloc((size_t)2 * topo->nlinks + 1);
  int *phase_of = malloc(((size_t)2 * topo->nlinks + 1) * sizeof *phase_of);
  for (int slot = 0; slot < 2 * topo->nlinks; slot++) {
    in_order[slot] = users[slot] == 1 && !topo_link_never_binding(topo, slot / 2);
    phase_of[slot] = -1;
  }
  int phase = 0; /* numbers every phase of every job: a slot seen twice in one is not in order */
  for (int j = 0; j < n; j++)
    for (int p = 0; p < jobs[j]->nphases; p++, phase++) {
      const fphase_t *fp = &jobs[j]->phases[p];
      for (int i = 0; i < fp->ph->nxfers; i++) {
        topo_hop_t hops[TOPO_MAX_HOPS];
        int nh = topo_route(topo, fp->x[i].src, fp->x[i].dst, hops);
        for (int h = 0; h < nh; h++) {
          int slot = 2 * hops[h].link + hops[h].dir;
          if (phase_of[slot] == phase)
            in_order[slot] = false;
          phase_of[slot] = phase;
        }
      }
    }
  free(phase_of);
  return in_order;
}

/* Whether every member's end waits for every member's start: in a round each
 * end of a transfer waits for the other to post it, so what a member waits
 * for grows by its partners' each round. Then no member ends a use before
 * the last one comes, and the members can meet before it is timed. Sets of
 * endpoints as bit rows, endpoints x endpoints bits; a phase's rounds stop
 * when a round adds nothing (the rest are the same). */
#define CLOSED_MAX_ENDPOINTS 8192 /* 8 MiB of bits */

static bool all_wait_for_all(const coll_flow_sched_t *job) {
  int n = job->endpoints;
  if (n > CLOSED_MAX_ENDPOINTS)
    return false;
  size_t w = ((size_t)n + 63) / 64;
  uint64_t *cur = calloc((size_t)n * w + 1, sizeof *cur), *nxt = malloc(((size_t)n * w + 1) * sizeof *nxt);
  uint64_t *all = calloc(w + 1, sizeof *all);
  for (int e = 0; e < n; e++)
    if (coll_flow_sched_has(job, e)) {
      cur[(size_t)e * w + (size_t)e / 64] |= 1ull << (e % 64);
      all[e / 64] |= 1ull << (e % 64);
    }
  bool full = false;
  for (int loop = 0; loop < job->loops && !full; loop++)
    for (int p = 0; p < job->nphases && !full; p++) {
      const fphase_t *fp = &job->phases[p];
      for (int r = 0; r < fp->ph->rounds; r++) {
        memcpy(nxt, cur, (size_t)n * w * sizeof *cur);
        for (int i = 0; i < fp->ph->nxfers; i++)
          for (size_t k = 0; k < w; k++) {
            nxt[(size_t)fp->x[i].src * w + k] |= cur[(size_t)fp->x[i].dst * w + k];
            nxt[(size_t)fp->x[i].dst * w + k] |= cur[(size_t)fp->x[i].src * w + k];
          }
        bool same = memcmp(nxt, cur, (size_t)n * w * sizeof *cur) == 0;
        uint64_t *t = cur;
        cur = nxt, nxt = t;
        if (same)
          break;
      }
      full = true;
      for (int e = 0; e < n && full; e++)
        for (size_t k = 0; k < w && full && (all[e / 64] >> (e % 64) & 1); k++)
          full = (cur[(size_t)e * w + k] & all[k]) == all[k];
    }
  free(cur);
  free(nxt);
  free(all);
  return full;
}

/* Each transfer's link directions, as 2 x slot + whether it takes its
 * transfers in order (in_order_slots), per phase in route_off/route; and the
 * link directions the job has to itself, once each, in slots. */
static void job_routes(const coll_flow_sched_t *job, const topo_t *topo, const bool *in_order,
                       fclosed_t *c) {
  bool *on = calloc((size_t)2 * topo->nlinks + 1, sizeof *on);
  c->slots = malloc(((size_t)2 * topo->nlinks + 1) * sizeof *c->slots);
  c->route_off = calloc((size_t)job->nphases + 1, sizeof *c->route_off);
  c->route = calloc((size_t)job->nphases + 1, sizeof *c->route);
  for (int p = 0; p < job->nphases; p++) {
    const fphase_t *fp = &job->phases[p];
    c->route_off[p] = malloc(((size_t)fp->ph->nxfers + 1) * sizeof **c->route_off);
    c->route[p] = malloc(((size_t)fp->ph->nxfers * TOPO_MAX_HOPS + 1) * sizeof **c->route);
    int k = 0;
    for (int i = 0; i < fp->ph->nxfers; i++) {
      c->route_off[p][i] = k;
      topo_hop_t hops[TOPO_MAX_HOPS];
      int nh = topo_route(topo, fp->x[i].src, fp->x[i].dst, hops);
      for (int h = 0; h < nh; h++) {
        int slot = 2 * hops[h].link + hops[h].dir;
        c->route[p][k++] = 2 * slot + in_order[slot];
        if (!on[slot] && !topo_link_never_binding(topo, hops[h].link)) /* see in_order_slots */
          on[slot] = true, c->slots[c->nslots++] = slot;
      }
    }
    c->route_off[p][fp->ph->nxfers] = k;
  }
  free(on);
}

int coll_flow_close(coll_flow_sched_t *const *jobs, int n, const topo_t *topo) {
  int *users = topo->nchanges || topo->after ? NULL : contention_free(jobs, n, topo);
  if (!users)
    return 0;
  bool *in_order = in_order_slots(jobs, n, topo, users);
  int closed = 0;
  for (int j = 0; j < n; j++) {
    coll_flow_sched_t *job = jobs[j];
    if (job->closed || !all_wait_for_all(job))
      continue;
    int most = 1;
    for (int p = 0; p < job->nphases; p++)
      most = job->phases[p].ph->nxfers > most ? job->phases[p].ph->nxfers : most;
    fclosed_t *c = calloc(1, sizeof *c);
    c->member = malloc((size_t)job->endpoints * sizeof *c->member);
    for (int e = 0; e < job->endpoints; e++)
      if (coll_flow_sched_has(job, e))
        c->member[c->members++] = e;
    c->barrier = sg_barrier_init((unsigned)c->members);
    c->arrive_s = calloc((size_t)job->endpoints, sizeof *c->arrive_s);
    c->end_s = calloc((size_t)job->endpoints, sizeof *c->end_s);
    c->post_s = calloc((size_t)job->endpoints, sizeof *c->post_s);
    c->wait_s = calloc((size_t)job->endpoints, sizeof *c->wait_s);
    c->xend_s = calloc((size_t)most, sizeof *c->xend_s);
    job_routes(job, topo, in_order, c);
    job->closed = c;
    closed++;
  }
  free(in_order);
  free(users);
  return closed;
}

/* Each endpoint's wait before posting a round of phase fp, as run_round
 * sums it: its sends' longest path latency, then the protocol's step. */
static void phase_waits(const coll_flow_sched_t *job, const coll_cfg_t *cfg, const fphase_t *fp) {
  fclosed_t *c = job->closed;
  for (int e = 0; e < job->endpoints; e++) {
    int s0 = fp->send_off[e], s1 = fp->send_off[e + 1];
    double wait = 0;
    for (int i = s0; i < s1; i++)
      wait = fmax(wait, fp->x[fp->send_idx[i]].alpha_s);
    if (s1 > s0)
      wait += cfg->step_latency_s + job->step_s;
    c->wait_s[e] = wait;
  }
}

/* One round of phase fp for every member, as run_round runs it in SimGrid,
 * operation for operation: each member's clock in end_s. */
static void time_closed_round(const coll_flow_sched_t *job, const coll_cfg_t *cfg, int p,
                              coll_flow_log_t *log) {
  const fphase_t *fp = &job->phases[p];
  fclosed_t *c = job->closed;
  for (int e = 0; e < job->endpoints; e++)
    c->post_s[e] = c->wait_s[e] > 0 ? c->end_s[e] + c->wait_s[e] : c->end_s[e];
  for (int i = 0; i < fp->ph->nxfers; i++) {
    const fxfer_t *x = &fp->x[i]; /* it starts once both ends posted it */
    c->xend_s[i] = fmax(c->post_s[x->src], c->post_s[x->dst]) + (double)x->bytes / x->rate_Bps;
  }
  for (int e = 0; e < job->endpoints; e++) {
    int s0 = fp->send_off[e], s1 = fp->send_off[e + 1];
    int r0 = fp->recv_off[e], r1 = fp->recv_off[e + 1];
    if (s0 == s1 && r0 == r1)
      continue;
    double done = c->post_s[e], received = 0;
    for (int i = r0; i < r1; i++) {
      done = fmax(done, c->xend_s[fp->recv_idx[i]]);
      received += fp->x[fp->recv_idx[i]].data_bytes;
    }
    for (int i = s0; i < s1; i++)
      done = fmax(done, c->xend_s[fp->send_idx[i]]);
    for (int i = r0; log && i < r1; i++) {
      int xi = fp->recv_idx[i], k0 = c->route_off[p][xi];
      coll_flow_log_add_routed(log, c->route[p] + k0, c->route_off[p][xi + 1] - k0,
                               coll_flow_logged_bytes(job, &fp->x[xi]), c->post_s[e], done);
    }
    double pipeline = e < job->ranks ? coll_phase_pipeline_s(fp->ph, done - c->post_s[e]) : 0;
    if (pipeline > 0)
      done += pipeline;
    if (received > 0)
      done += coll_phase_local_s(cfg, fp->ph, received);
    c->end_s[e] = done;
  }
}

/* The link figures of the schedule's own links up to its members' earliest
 * clock: nothing else uses them (coll_flow_close's callers see to it, but for
 * links that never bind: left out of slots), and each member's transfers from
 * now on, in this use or a later one, start
 * after its clock. So they need not wait for SimGrid's clock, which the
 * rounds timed here run ahead of. */
static void sweep_own_links(const coll_flow_sched_t *job, coll_flow_log_t *log) {
  const fclosed_t *c = job->closed;
  double t = INFINITY;
  for (int m = 0; m < c->members; m++)
    t = fmin(t, c->end_s[c->member[m]]);
  coll_flow_log_sweep_slots(log, c->slots, c->nslots, t);
}

#define CLOSED_SWEEP_ROUNDS 16 /* rounds timed between sweeps of its links */

/* Every member's part of this use, from the arrivals: end_s. */
static void time_closed(const coll_flow_sched_t *job, const coll_cfg_t *cfg, coll_flow_log_t *log) {
  fclosed_t *c = job->closed;
  memcpy(c->end_s, c->arrive_s, (size_t)job->endpoints * sizeof *c->end_s);
  long rounds = 0;
  for (int loop = 0; loop < job->loops; loop++)
    for (int p = 0; p < job->nphases; p++) {
      phase_waits(job, cfg, &job->phases[p]);
      for (int r = 0; r < job->phases[p].ph->rounds; r++) {
        time_closed_round(job, cfg, p, log);
        if (log && ++rounds % CLOSED_SWEEP_ROUNDS == 0)
          sweep_own_links(job, log);
      }
    }
  if (log)
    sweep_own_links(job, log);
  for (int m = 0; m < c->members; m++)
    coll_flow_log_release(log, c->arrive_s[c->member[m]]);
}

void coll_flow_run_closed(const coll_flow_sched_t *job, const coll_cfg_t *cfg, int me,
                       coll_flow_log_t *log) {
  fclosed_t *c = job->closed;
  c->arrive_s[me] = simgrid_get_clock();
  coll_flow_log_hold(log, c->arrive_s[me]); /* its transfers start from then on */
  sg_barrier_wait(c->barrier);
  if (!c->timed) {
    time_closed(job, cfg, log);
    c->timed = true;
  }
  double end = c->end_s[me];
  if (++c->read == c->members) /* the last reader clears it for the next use */
    c->timed = false, c->read = 0;
  sg_actor_sleep_until(end);
}

void coll_flow_closed_free(fclosed_t *c) {
  if (!c)
    return;
  sg_barrier_destroy(c->barrier);
  free(c->member);
  free(c->arrive_s);
  free(c->end_s);
  free(c->post_s);
  free(c->wait_s);
  free(c->xend_s);
  free(c->slots);
  for (int p = 0; c->route && c->route_off[p]; p++) {
    free(c->route_off[p]);
    free(c->route[p]);
  }
  free(c->route_off);
  free(c->route);
  free(c);
}
