/* coll_flow.c - schedules as SimGrid communications; see coll_engine.h.
 *
 * One actor per endpoint (rank or in-network switch) walks the phases of each
 * schedule: for every round in which it takes part it waits its sends' path
 * latency, posts its receives and sends, and waits for all of them; then it
 * reduces what it received. Ranks progress independently, so a slow link
 * delays only the ranks that depend on it. A controller actor times each
 * schedule between two barriers. Each ordered pair of endpoints has its own
 * mailbox: FIFO per pair keeps rounds from matching out of order.
 *
 * SimGrid runs once per process (its engine is global and its clock never
 * restarts), hence the guard below: a second call is refused, not silently
 * wrong. */
#include <math.h>
#include <simgrid/actor.h>
#include <simgrid/barrier.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll_engine.h"
#include "platform.h"

typedef struct {
  int src, dst;
  long bytes;        /* on the wire, as SimGrid counts them */
  double data_bytes; /* what the receiver reduces */
  double alpha_s;    /* path latency + message overhead */
  sg_mailbox_t box;
} fxfer_t;

typedef struct {
  const coll_phase_t *ph;
  fxfer_t *x;
  int *send_off, *send_idx; /* transfers by sender, CSR over endpoints */
  int *recv_off, *recv_idx; /* transfers by receiver */
} fphase_t;

typedef struct {
  int nphases, loops;
  double step_s;     /* protocol latency per round */
  fphase_t *phases;
} fjob_t;

typedef struct {
  int xfer, phase;   /* which transfer of which phase */
  double start_s, end_s;
} flog_t;

typedef struct {
  const topo_t *topo;
  const coll_cfg_t *cfg;
  fjob_t *jobs;
  int njobs, endpoints, stats_job;
  sg_bar_t barrier;
  double *times;
  flog_t *log;       /* transfers of the stats job */
  size_t nlog, logcap;
} run_t;

typedef struct {
  run_t *run;
  int id;            /* endpoint id; -1 for the controller */
} actor_ctx_t;

/* ---- preparing the jobs ---- */

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

static void prepare_job(run_t *run, const coll_sched_t *s, fjob_t *job) {
  job->nphases = s->nphases;
  job->loops = s->loops > 0 ? s->loops : 1;
  job->step_s = s->step_s;
  job->phases = calloc((size_t)(s->nphases ? s->nphases : 1), sizeof *job->phases);
  for (int p = 0; p < s->nphases; p++) {
    const coll_phase_t *ph = &s->phases[p];
    fphase_t *fp = &job->phases[p];
    fp->ph = ph;
    fp->x = calloc((size_t)(ph->nxfers ? ph->nxfers : 1), sizeof *fp->x);
    for (int i = 0; i < ph->nxfers; i++) {
      const coll_xfer_t *x = &ph->xfers[i];
      topo_hop_t hops[TOPO_MAX_HOPS];
      int nh = topo_route(run->topo, x->src, x->dst, hops);
      char name[48];
      snprintf(name, sizeof name, "%d>%d", x->src, x->dst);
      long bytes = lround(x->bytes * (s->wire_factor >= 1 ? s->wire_factor : 1));
      fp->x[i] = (fxfer_t){x->src, x->dst, bytes > 0 ? bytes : 1, x->bytes,
                           topo_path_alpha_s(run->topo, hops, nh), sg_mailbox_by_name(name)};
    }
    csr(run->endpoints, fp->x, ph->nxfers, true, &fp->send_off, &fp->send_idx);
    csr(run->endpoints, fp->x, ph->nxfers, false, &fp->recv_off, &fp->recv_idx);
  }
}

static void free_job(fjob_t *job) {
  for (int p = 0; p < job->nphases; p++) {
    fphase_t *fp = &job->phases[p];
    free(fp->x);
    free(fp->send_off);
    free(fp->send_idx);
    free(fp->recv_off);
    free(fp->recv_idx);
  }
  free(job->phases);
}

/* ---- the actors ---- */

static void log_transfer(run_t *run, int phase, int xfer, double start, double end) {
  if (run->nlog == run->logcap) {
    run->logcap = run->logcap ? 2 * run->logcap : 1024;
    run->log = realloc(run->log, run->logcap * sizeof *run->log);
  }
  run->log[run->nlog++] = (flog_t){xfer, phase, start, end};
}

/* Per-actor scratch, sized for the busiest round of the actor. */
typedef struct {
  sg_comm_t *comms;
  double *posted;  /* when each comm was posted */
  int *orig;       /* its index among this round's comms (receives first) */
  void **data;     /* what each receive got: the sender's post time */
} scratch_t;

static double dummy_payload; /* SimGrid refuses NULL payloads */

/* One round of one phase for endpoint me. When record is set, each receive
 * logs its transfer from max(post times) to its completion. */
static void run_round(run_t *run, int me, int p, const fphase_t *fp, double step_s, bool record,
                      scratch_t *sc) {
  int s0 = fp->send_off[me], s1 = fp->send_off[me + 1];
  int r0 = fp->recv_off[me], r1 = fp->recv_off[me + 1], nrecv = r1 - r0;
  double wait = 0;
  for (int i = s0; i < s1; i++)
    if (fp->x[fp->send_idx[i]].alpha_s > wait)
      wait = fp->x[fp->send_idx[i]].alpha_s;
  if (s1 > s0)
    wait += run->cfg->step_latency_s + step_s;
  if (wait > 0)
    sg_actor_sleep_for(wait);
  int n = 0;
  double now = simgrid_get_clock(), received = 0;
  for (int i = r0; i < r1; i++, n++) {
    const fxfer_t *x = &fp->x[fp->recv_idx[i]];
    sc->posted[n] = now;
    sc->orig[n] = n;
    sc->data[n] = NULL;
    sc->comms[n] = sg_mailbox_get_async(x->box, &sc->data[n]);
    received += x->data_bytes;
  }
  for (int i = s0; i < s1; i++, n++) {
    const fxfer_t *x = &fp->x[fp->send_idx[i]];
    double *stamp = &dummy_payload;
    if (record) {
      stamp = malloc(sizeof *stamp);
      *stamp = now;
    }
    sc->orig[n] = n;
    sc->comms[n] = sg_mailbox_put_async(x->box, stamp, x->bytes);
  }
  if (!record) {
    sg_comm_wait_all(sc->comms, (size_t)n);
  } else {
    for (int left = n; left > 0; left--) {
      ssize_t k = sg_comm_wait_any(sc->comms, (size_t)left);
      if (k < 0)
        break;
      int o = sc->orig[k];
      if (o < nrecv) {
        double *stamp = sc->data[o];
        double start = stamp && *stamp > sc->posted[k] ? *stamp : sc->posted[k];
        log_transfer(run, p, fp->recv_idx[r0 + o], start, simgrid_get_clock());
        free(stamp);
      }
      sc->comms[k] = sc->comms[left - 1];
      sc->posted[k] = sc->posted[left - 1];
      sc->orig[k] = sc->orig[left - 1];
    }
  }
  if (fp->ph->reduces && run->cfg->reduce_bw_bytes_per_s > 0 && received > 0)
    sg_actor_sleep_for(received / run->cfg->reduce_bw_bytes_per_s);
}

static void endpoint_actor(int argc, char **argv) {
  (void)argc, (void)argv;
  actor_ctx_t *ctx = sg_actor_self_get_data();
  run_t *run = ctx->run;
  int me = ctx->id, most = 1;
  for (int j = 0; j < run->njobs; j++)
    for (int p = 0; p < run->jobs[j].nphases; p++) {
      const fphase_t *fp = &run->jobs[j].phases[p];
      int k = fp->send_off[me + 1] - fp->send_off[me] + fp->recv_off[me + 1] - fp->recv_off[me];
      if (k > most)
        most = k;
    }
  scratch_t sc = {malloc((size_t)most * sizeof *sc.comms), malloc((size_t)most * sizeof *sc.posted),
                  malloc((size_t)most * sizeof *sc.orig), malloc((size_t)most * sizeof *sc.data)};
  for (int j = 0; j < run->njobs; j++) {
    const fjob_t *job = &run->jobs[j];
    sg_barrier_wait(run->barrier);
    if (me < run->topo->ranks && run->cfg->op_overhead_s > 0)
      sg_actor_sleep_for(run->cfg->op_overhead_s);
    for (int loop = 0; loop < job->loops; loop++)
      for (int p = 0; p < job->nphases; p++) {
        const fphase_t *fp = &job->phases[p];
        if (fp->send_off[me] == fp->send_off[me + 1] && fp->recv_off[me] == fp->recv_off[me + 1])
          continue;
        for (int r = 0; r < fp->ph->rounds; r++)
          run_round(run, me, p, fp, job->step_s, j == run->stats_job, &sc);
      }
    sg_barrier_wait(run->barrier);
  }
  free(sc.comms);
  free(sc.posted);
  free(sc.orig);
  free(sc.data);
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
                  int n, double *times_s, int stats_index, linkstats_t *stats, char *err,
                  size_t err_len) {
  static bool simgrid_used = false; /* SimGrid's engine: once per process */
  if (simgrid_used) {
    snprintf(err, err_len, "flow fidelity: expected one SimGrid simulation per process, found a "
             "second");
    return -1;
  }
  simgrid_used = true;
  run_t run = {.topo = topo, .cfg = cfg, .njobs = n, .stats_job = stats ? stats_index : -1,
               .times = times_s};
  pair_set_t pairs;
  pair_set_init(&pairs);
  for (int j = 0; j < n; j++) {
    if (scheds[j]->endpoints > run.endpoints)
      run.endpoints = scheds[j]->endpoints;
    for (int p = 0; p < scheds[j]->nphases; p++)
      for (int i = 0; i < scheds[j]->phases[p].nxfers; i++)
        pair_set_add(&pairs, scheds[j]->phases[p].xfers[i].src, scheds[j]->phases[p].xfers[i].dst);
  }
  char path[256];
  int rc = platform_write(topo, run.endpoints, &pairs, path, sizeof path, err, err_len);
  pair_set_free(&pairs);
  if (rc)
    return -1;

  char *args[] = {"npusim", "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
                  "--cfg=contexts/stack-size:128", "--log=root.thres:critical",
                  "--log=xbt_cfg.thres:critical", NULL};
  int argc = 6;
  simgrid_init(&argc, args);
  simgrid_load_platform(path);
  unlink(path);

  run.jobs = calloc((size_t)(n > 0 ? n : 1), sizeof *run.jobs);
  for (int j = 0; j < n; j++)
    prepare_job(&run, scheds[j], &run.jobs[j]);
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
  if (stats && stats_index >= 0) { /* the logged transfers, hop by hop */
    for (size_t i = 0; i < run.nlog; i++) {
      const fxfer_t *x = &run.jobs[stats_index].phases[run.log[i].phase].x[run.log[i].xfer];
      topo_hop_t hops[TOPO_MAX_HOPS];
      int nh = topo_route(topo, x->src, x->dst, hops);
      for (int h = 0; h < nh; h++)
        linkstats_add_interval(stats, hops[h].link, hops[h].dir, run.log[i].start_s,
                               run.log[i].end_s, (double)x->bytes);
    }
    linkstats_close(stats);
  }
  for (int j = 0; j < n; j++)
    free_job(&run.jobs[j]);
  free(run.jobs);
  free(ctx);
  free(run.log);
  return 0;
}
