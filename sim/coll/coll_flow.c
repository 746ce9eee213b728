/* coll_flow.c - schedules as SimGrid communications; see coll_engine.h.
 *
 * Each endpoint (rank or in-network switch) walks the phases of a schedule: for
 * every round in which it takes part it waits its sends' path latency, posts its
 * receives and sends, and waits for all of them; then it reduces what it
 * received. Endpoints progress independently, so a slow link delays only the
 * ranks that depend on it. Each ordered pair of endpoints has its own mailbox
 * per channel: FIFO per pair keeps rounds from matching out of order.
 *
 * SimGrid runs once per process (its engine is global and its clock never
 * restarts), hence the guard in coll_flow_start: a second simulation is
 * refused, not silently wrong.
 *
 * Links dying at T (topo_t.after): an endpoint that posts at or after T moves
 * onto its shadow host first (platform.h), so its transfers take the routes
 * after T. Until T each endpoint waits its round with T as deadline; then a
 * transfer on a dying link that both ends had posted before T and that is not
 * through is resent whole from T: both ends leave the old communication (it
 * crawls on the dead link, platform.c) and post it again from their shadow
 * hosts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll_flow_sched.h"

/* ---- starting SimGrid ---- */

int coll_flow_start(const topo_t *topo, int endpoints, const pair_set_t *pairs, npu_err_t *err) {
  static bool simgrid_used = false; /* SimGrid's engine: once per process */
  if (simgrid_used) {
    npu_err_set(err, "flow fidelity: expected one SimGrid simulation per process, found a "
             "second");
    return -1;
  }
  simgrid_used = true;
  if (simgrid_dl_open(err))
    return -1;
  char path[PLATFORM_PATH_MAX];
  if (platform_write(topo, endpoints, pairs, path, sizeof path, err))
    return -1;
  /* ker_engine's deadlock report is silenced: the replay names the stuck op
   * itself, in one line (replay_summary.c replay_check_finished) */
  char *args[] = {"npusim", "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
                  "--cfg=contexts/stack-size:128", "--log=root.thres:critical",
                  "--log=xbt_cfg.thres:critical", "--log=ker_engine.additivity:off", NULL};
  int argc = 7;
  simgrid_init(&argc, args);
  simgrid_load_platform(path);
  platform_remove(topo, path); /* SimGrid read the profiles while loading */
  return 0;
}

/* ---- preparing a schedule ---- */

static void csr(int endpoints, const fxfer_t *x, int n, bool by_src, int **off, int **idx) {
  *off = calloc((size_t)endpoints + 1, sizeof **off);
  *idx = malloc((size_t)(n > 0 ? n : 1) * sizeof **idx);
  for (int i = 0; i < n; i++)
    (*off)[(by_src ? x[i].src : x[i].dst) + 1]++;
  for (int e = 0; e < endpoints; e++)
    (*off)[e + 1] += (*off)[e];
  int *fill = calloc((size_t)endpoints, sizeof *fill);
  for (int i = 0; i < n; i++) {
    int e = by_src ? x[i].src : x[i].dst;
    (*idx)[(*off)[e] + fill[e]++] = i;
  }
  free(fill);
}

/* Whether every transfer of a round of the phase is alike: the same bytes, the
 * same latency, and the same time on its busiest link with the whole round on
 * the links. Then, alone, all of them end together every round, and its
 * rounds can run as one (coll_flow_collapse) with the same result. */
static bool uniform_phase(const topo_t *topo, const coll_phase_t *ph, const fxfer_t *x) {
  if (ph->nxfers == 0 || ph->rounds < 2)
    return false;
  for (int i = 1; i < ph->nxfers; i++)
    if (x[i].bytes != x[0].bytes || x[i].alpha_s != x[0].alpha_s)
      return false;
  double *load = calloc((size_t)2 * topo->nlinks + 1, sizeof *load);
  topo_hop_t hops[TOPO_MAX_HOPS];
  for (int i = 0; i < ph->nxfers; i++) {
    int nh = topo_route(topo, x[i].src, x[i].dst, hops);
    for (int h = 0; h < nh; h++)
      load[2 * hops[h].link + hops[h].dir] += (double)x[i].bytes;
  }
  bool alike = true;
  double first = 0;
  for (int i = 0; i < ph->nxfers && alike; i++) {
    int nh = topo_route(topo, x[i].src, x[i].dst, hops);
    double busiest = 0;
    for (int h = 0; h < nh; h++) {
      double t = load[2 * hops[h].link + hops[h].dir] / topo_link_bw(topo, hops[h].link);
      busiest = t > busiest ? t : busiest;
    }
    if (i == 0)
      first = busiest;
    alike = busiest == first;
  }
  free(load);
  return alike;
}

coll_flow_sched_t *coll_flow_prepare(const topo_t *topo, const coll_sched_t *s,
                                     const char *channel) {
  coll_flow_sched_t *job = calloc(1, sizeof *job);
  job->nphases = s->nphases;
  job->loops = s->loops > 0 ? s->loops : 1;
  job->step_s = s->step_s;
  job->held = coll_sched_held(s);
  job->own_launch = s->own_launch;
  job->launch_s = s->launch_s;
  job->death_s = topo->after ? topo->death_s : 0;
  job->left = topo->after ? calloc(1, sizeof *job->left) : NULL;
  job->endpoints = s->endpoints;
  job->ranks = topo->ranks;
  job->phases = calloc((size_t)(s->nphases > 0 ? s->nphases : 1), sizeof *job->phases);
  double wire = s->wire_factor >= 1 ? s->wire_factor : 1;
  for (int p = 0; p < s->nphases; p++) {
    const coll_phase_t *ph = &s->phases[p];
    fphase_t *fp = &job->phases[p];
    fp->ph = ph;
    fp->x = calloc((size_t)(ph->nxfers > 0 ? ph->nxfers : 1), sizeof *fp->x);
    for (int i = 0; i < ph->nxfers; i++) {
      const coll_xfer_t *x = &ph->xfers[i];
      topo_hop_t hops[TOPO_MAX_HOPS];
      int nh = topo_route(topo, x->src, x->dst, hops);
      char name[96];
      snprintf(name, sizeof name, "%s:%d>%d", channel, x->src, x->dst);
      long bytes = lround(x->bytes * wire);
      double rate = nh > 0 ? topo_link_bw(topo, hops[0].link) : 0;
      for (int h = 1; h < nh; h++)
        rate = fmin(rate, topo_link_bw(topo, hops[h].link));
      fp->x[i] = (fxfer_t){x->src, x->dst, bytes > 0 ? bytes : 1, x->bytes,
                           topo_path_alpha_s(topo, hops, nh), sg_mailbox_by_name(name), 0,
                           topo_path_dies(topo, hops, nh), rate};
      fp->x[i].alpha_after_s = fp->x[i].alpha_s;
      if (topo->after) {
        nh = topo_route(topo->after, x->src, x->dst, hops);
        fp->x[i].alpha_after_s = topo_path_alpha_s(topo->after, hops, nh);
      }
    }
    if (topo->after)
      fp->stamp = calloc((size_t)(ph->nxfers > 0 ? ph->nxfers : 1), sizeof *fp->stamp);
    csr(job->endpoints, fp->x, ph->nxfers, true, &fp->send_off, &fp->send_idx);
    csr(job->endpoints, fp->x, ph->nxfers, false, &fp->recv_off, &fp->recv_idx);
  }
  return job;
}

void coll_flow_free(coll_flow_sched_t *job) {
  if (!job)
    return;
  for (int p = 0; p < job->nphases; p++) {
    fphase_t *fp = &job->phases[p];
    free(fp->x);
    free(fp->stamp);
    free(fp->send_off);
    free(fp->send_idx);
    free(fp->recv_off);
    free(fp->recv_idx);
  }
  free(job->phases);
  coll_flow_closed_free(job->closed);
  for (size_t i = 0; job->left && i < job->left->n; i++)
    sg_comm_unref(job->left->v[i]);
  if (job->left)
    free(job->left->v);
  free(job->left);
  free(job);
}

static int coll_flow_busiest(const coll_flow_sched_t *job, int me) {
  int most = 1;
  for (int p = 0; p < job->nphases; p++) {
    const fphase_t *fp = &job->phases[p];
    int k = fp->send_off[me + 1] - fp->send_off[me] + fp->recv_off[me + 1] - fp->recv_off[me];
    if (k > most)
      most = k;
  }
  return most;
}

bool coll_flow_takes_part(const coll_flow_sched_t *job, int me) {
  return coll_flow_sched_has(job, me);
}

/* ---- running it ---- */

static double dummy_payload; /* SimGrid refuses NULL payloads; never read or written */

/* One round of one phase for endpoint me. With a log, each receive records its
 * transfer from when the round was posted to when the round completed: the
 * transfers of a round run side by side, and waiting for them one by one
 * would cost far more simulation time than it tells. */
void coll_flow_collapse(coll_flow_sched_t *job, const topo_t *topo) {
  /* a bandwidth that changes during a phase ends its rounds unevenly */
  for (int p = 0; p < job->nphases && !topo->nchanges && !topo->after; p++)
    job->phases[p].uniform = uniform_phase(topo, job->phases[p].ph, job->phases[p].x);
}

void coll_flow_to_shadow_host(int me) {
  char name[32];
  snprintf(name, sizeof name, "a%d", me);
  sg_host_t shadow = sg_host_by_name(name);
  if (sg_host_self() != shadow)
    sg_actor_set_host(sg_actor_self(), shadow);
}

static void *sink_left; /* where left communications put their payload, if ever through */

/* At T: comms[done..n) of endpoint me's round are not through (comms[0..nr)
 * its receives, the rest its sends). Each one on a dying link that both ends
 * posted before T is left and posted again from the shadow hosts, whole;
 * marks those receives in resent. Returns the comms to wait for, compacted
 * into comms[done..]. */
static size_t resend_at_death(const coll_flow_sched_t *job, const fphase_t *fp, int me,
                              sg_comm_t *comms, size_t done, size_t n, size_t nr, int times,
                              char *resent) {
  double T = job->death_s;
  size_t keep = done;
  int r0 = fp->recv_off[me], s0 = fp->send_off[me];
  coll_flow_to_shadow_host(me);
  for (size_t i = done; i < n; i++) {
    int xi = i < nr ? fp->recv_idx[r0 + (int)i] : fp->send_idx[s0 + (int)(i - nr)];
    const fxfer_t *x = &fp->x[xi];
    const fstamp_t *st = &fp->stamp[xi];
    bool on_it = x->dies && st->sent == st->got && st->sent_s < T && st->got_s < T;
    if (!on_it) {
      comms[keep++] = comms[i];
      continue;
    }
    if (sg_comm_test(comms[i])) /* through at T after all */
      continue;
    left_comms_t *left = job->left;
    if (left->n == left->cap) {
      left->cap = left->cap ? 2 * left->cap : 16;
      left->v = realloc(left->v, left->cap * sizeof *left->v);
    }
    left->v[left->n++] = comms[i];
    if (i < nr) {
      comms[keep++] = sg_mailbox_get_async(x->box, &sink_left);
      resent[i] = 1;
    } else {
      comms[keep++] = sg_mailbox_put_async(x->box, &dummy_payload, x->bytes * times);
    }
  }
  return keep;
}

/* One round of a phase, or `times` of them as one: every wait, transfer and
 * reduction `times` as long. */
static void run_round(const coll_flow_sched_t *job, const coll_cfg_t *cfg, int me,
                      const fphase_t *fp, coll_flow_log_t *log, sg_comm_t *comms, int times) {
  int s0 = fp->send_off[me], s1 = fp->send_off[me + 1];
  int r0 = fp->recv_off[me], r1 = fp->recv_off[me + 1];
  double T = job->death_s;
  bool after = T > 0 && simgrid_get_clock() >= T; /* routes round the dead links */
  double wait = 0;
  for (int i = s0; i < s1; i++) {
    const fxfer_t *x = &fp->x[fp->send_idx[i]];
    double a = after ? x->alpha_after_s : x->alpha_s;
    wait = a > wait ? a : wait;
  }
  if (s1 > s0)
    wait += cfg->step_latency_s + job->step_s;
  if (wait > 0)
    sg_actor_sleep_for(wait * times);
  double posted = simgrid_get_clock(), received = 0;
  if (r1 > r0) /* its receives' transfers start from then on */
    coll_flow_log_hold(log, posted);
  if (T > 0 && posted >= T)
    coll_flow_to_shadow_host(me);
  size_t n = 0;
  void *sink; /* SimGrid needs somewhere to put the (dummy) payload */
  for (int i = r0; i < r1; i++) {
    const fxfer_t *x = &fp->x[fp->recv_idx[i]];
    comms[n++] = sg_mailbox_get_async(x->box, T > 0 ? &sink_left : &sink);
    received += x->data_bytes * times;
    if (fp->stamp)
      fp->stamp[fp->recv_idx[i]].got++, fp->stamp[fp->recv_idx[i]].got_s = posted;
  }
  size_t nr = n;
  for (int i = s0; i < s1; i++) {
    const fxfer_t *x = &fp->x[fp->send_idx[i]];
    comms[n++] = sg_mailbox_put_async(x->box, &dummy_payload, x->bytes * times);
    if (fp->stamp)
      fp->stamp[fp->send_idx[i]].sent++, fp->stamp[fp->send_idx[i]].sent_s = posted;
  }
  char *resent = NULL;
  size_t done = 0, left = n;
  if (T > 0 && posted < T && n > 0) {
    done = sg_comm_wait_all_for(comms, n, T - posted);
    if (done < n) {
      resent = calloc(n, 1);
      left = resend_at_death(job, fp, me, comms, done, n, nr, times, resent);
    }
  }
  sg_comm_wait_all(comms + done, left - done);
  for (int i = r0; log && i < r1; i++) {
    const fxfer_t *x = &fp->x[fp->recv_idx[i]];
    /* posted before T, the data moved after it once the sender posted (still in
     * this round): it went the routes of then */
    const fstamp_t *st = fp->stamp ? &fp->stamp[fp->recv_idx[i]] : NULL;
    double from = resent && resent[i - r0] ? T : posted;
    if (st && !(resent && resent[i - r0]) && posted < T && st->sent == st->got &&
        st->sent_s >= T)
      from = st->sent_s;
    coll_flow_log_add(log, x->src, x->dst, coll_flow_logged_bytes(job, x) * times, from,
                      simgrid_get_clock());
  }
  if (r1 > r0)
    coll_flow_log_release(log, posted);
  free(resent);
  /* a chunked phase (NVLS): its fill and chunk steps, from the time the data
   * took; the ranks wait them out (a switch endpoint posted before the ranks
   * launched, and ends with them) */
  double pipeline = me < job->ranks
                        ? coll_phase_pipeline_s(fp->ph, (simgrid_get_clock() - posted) / times) : 0;
  if (pipeline > 0)
    sg_actor_sleep_for(pipeline * times);
  double local = received > 0 ? coll_phase_local_s(cfg, fp->ph, received) : 0;
  if (local > 0)
    sg_actor_sleep_for(local);
}

void coll_flow_run_endpoint(const coll_flow_sched_t *job, const coll_cfg_t *cfg, int me,
                            coll_flow_log_t *log) {
  if (job->closed) {
    if (coll_flow_takes_part(job, me))
      coll_flow_run_closed(job, cfg, me, log);
    return;
  }
  sg_comm_t *comms = malloc((size_t)coll_flow_busiest(job, me) * sizeof *comms);
  for (int loop = 0; loop < job->loops; loop++)
    for (int p = 0; p < job->nphases; p++) {
      const fphase_t *fp = &job->phases[p];
      if (fp->send_off[me] == fp->send_off[me + 1] && fp->recv_off[me] == fp->recv_off[me + 1])
        continue;
      if (fp->uniform) /* set by coll_flow_collapse */
        run_round(job, cfg, me, fp, log, comms, fp->ph->rounds);
      else
        for (int r = 0; r < fp->ph->rounds; r++)
          run_round(job, cfg, me, fp, log, comms, 1);
    }
  free(comms);
}

/* ---- npusim coll: schedules one after another, timed between barriers ---- */

typedef struct {
  const topo_t *topo;
  const coll_cfg_t *cfg;
  coll_flow_sched_t **jobs;
  int njobs, endpoints, stats_job;
  sg_bar_t barrier;
  double *times;
  coll_flow_log_t log;
} run_t;

typedef struct {
  run_t *run;
  int id; /* endpoint id; -1 for the controller */
} actor_ctx_t;

static void endpoint_actor(int argc, char **argv) {
  (void)argc, (void)argv;
  actor_ctx_t *ctx = sg_actor_self_get_data();
  run_t *run = ctx->run;
  for (int j = 0; j < run->njobs; j++) {
    sg_barrier_wait(run->barrier);
    const coll_flow_sched_t *job = run->jobs[j];
    double launch = job->own_launch ? job->launch_s : run->cfg->op_overhead_s;
    if (ctx->id < run->topo->ranks && launch > 0)
      sg_actor_sleep_for(launch);
    coll_flow_run_endpoint(run->jobs[j], run->cfg, ctx->id, j == run->stats_job ? &run->log : NULL);
    sg_barrier_wait(run->barrier);
  }
}

static void controller_actor(int argc, char **argv) {
  (void)argc, (void)argv;
  actor_ctx_t *ctx = sg_actor_self_get_data();
  run_t *run = ctx->run;
  for (int j = 0; j < run->njobs; j++) {
    sg_barrier_wait(run->barrier);
    double t0 = simgrid_get_clock();
    sg_barrier_wait(run->barrier);
    run->times[j] = simgrid_get_clock() - t0;
  }
}

int coll_flow_run(const topo_t *topo, const coll_cfg_t *cfg, const coll_sched_t *const *scheds,
                  int n, bool collapse, double *times_s, int stats_index, linkstats_t *stats,
                  npu_err_t *err) {
  run_t run = {.topo = topo, .cfg = cfg, .njobs = n, .stats_job = stats ? stats_index : -1,
               .times = times_s};
  long xfers = 0;
  for (int j = 0; j < n; j++) {
    if (scheds[j]->endpoints > run.endpoints)
      run.endpoints = scheds[j]->endpoints;
    for (int p = 0; p < scheds[j]->nphases; p++)
      xfers += scheds[j]->phases[p].nxfers;
  }
  if (run.endpoints + 1 > FLOW_MAX_ACTORS)
    return npu_err_set(err, "flow: expected at most %d SimGrid actors (one per rank and "
                    "switch, and a controller), found %d", FLOW_MAX_ACTORS, run.endpoints + 1),
           COLL_FLOW_TOO_LARGE;
  if (xfers > FLOW_MAX_XFERS)
    return npu_err_set(err, "flow: expected at most %ld transfers over all sizes, found "
                    "%ld", FLOW_MAX_XFERS, xfers), COLL_FLOW_TOO_LARGE;
  pair_set_t pairs;
  pair_set_init(&pairs);
  int closed = 0;
  for (int j = 0; j < n; j++) {
    for (int p = 0; p < scheds[j]->nphases; p++)
      for (int i = 0; i < scheds[j]->phases[p].nxfers; i++)
        pair_set_add(&pairs, scheds[j]->phases[p].xfers[i].src, scheds[j]->phases[p].xfers[i].dst);
  }
  int rc = coll_flow_start(topo, run.endpoints, &pairs, err);
  pair_set_free(&pairs);
  if (rc)
    return -1;
  coll_flow_log_init(&run.log, topo, stats && stats_index >= 0 ? stats : NULL);
  run.jobs = calloc((size_t)(n > 0 ? n : 1), sizeof *run.jobs);
  for (int j = 0; j < n; j++) {
    coll_sched_t widened = *scheds[j];
    widened.endpoints = run.endpoints; /* every endpoint runs every job */
    run.jobs[j] = coll_flow_prepare(topo, &widened, "c");
    if (collapse) { /* each schedule runs alone, between barriers */
      coll_flow_collapse(run.jobs[j], topo);
      closed += coll_flow_close(&run.jobs[j], 1, topo);
    }
  }
  run.barrier = sg_barrier_init((unsigned)run.endpoints + 1);
  actor_ctx_t *ctx = calloc((size_t)run.endpoints + 1, sizeof *ctx);
  for (int e = 0; e <= run.endpoints; e++) {
    ctx[e] = (actor_ctx_t){&run, e < run.endpoints ? e : -1};
    char name[32];
    snprintf(name, sizeof name, "h%d", e < run.endpoints ? e : 0);
    sg_actor_t a = sg_actor_init(e < run.endpoints ? name + 1 : "controller",
                                 sg_host_by_name(name));
    sg_actor_set_data(a, &ctx[e]);
    sg_actor_start(a, e < run.endpoints ? endpoint_actor : controller_actor, 0, NULL);
  }
  simgrid_run();
  sg_barrier_destroy(run.barrier);
  coll_flow_log_close(&run.log);
  for (int j = 0; j < n; j++)
    coll_flow_free(run.jobs[j]);
  free(run.jobs);
  free(ctx);
  return closed;
}
