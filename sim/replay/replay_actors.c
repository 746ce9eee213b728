/* replay_actors.c - the replay on SimGrid (an engine of replay_engine.h):
 * one actor per stream of each simulated rank runs its ops in order; an op
 * starts when the op before it on its stream and its dependencies are done.
 * Compute ops sleep their planned time; collectives and send/recv meet their
 * peers through SimGrid (barriers, one mailbox per message) and then, in flow
 * fidelity, move their bytes as SimGrid communications that share the links,
 * or in analytic fidelity wait their alpha-beta time computed from the
 * members' arrivals, with the sweep's arithmetic. This is the only part of the
 * replay that includes SimGrid. Not modelled here: anything the plan did not
 * decide (costs, modes, which ranks run). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay_engine.h"
#include "simgrid_dl.h"

/* A rank's progress: which ops are done, who waits, its buffers. */
typedef struct {
  sg_mutex_t mutex;
  sg_cond_t *conds;   /* per stream: signalled when the op it waits for completes */
  int *waiting_for;   /* per stream: that op, or -1 */
  int nstreams;
  char *done;         /* per op of its program: OP_* */
  int waiters;        /* actors blocked in wait_done */
  double memory;
  double *buffer_bytes; /* per buffer of its program */
} rank_state_t;

/* A collective's state while it runs. */
typedef struct {
  coll_flow_sched_t *flow; /* INST_FLOW: its transfers */
  sg_bar_t barrier;        /* INST_ANALYTIC: the members meet here */
  double latest_s;         /* analytic fidelity: the latest arrival at the current use */
  unsigned read;           /* members that have read it */
  replay_span_t **pending; /* INST_FLOW: the current use's members so far, whose ready_s
                            * becomes its latest arrival once all are there */
  unsigned npending;
  double pending_latest_s;
} inst_run_t;

/* A step barrier's state (replay_plan_t.barriers): as an analytic collective's. */
typedef struct {
  sg_bar_t barrier; /* two or more simulated members meet here */
  double latest_s;  /* the latest arrival at the current use */
  unsigned read;    /* members that have read it */
} barrier_run_t;

/* When each side of a message posted it (links dying during the run only): a
 * message both sides posted before T is resent whole if it is on a dying
 * link and not through at T, as coll_flow.c does with a collective's. */
typedef struct {
  sg_mailbox_t box; /* the message's own mailbox; NULL: a free slot */
  double sent_s, got_s;
  bool sent, got;
} p2p_stamp_t;

typedef struct actors actors_t;

/* How the actors find times in one fidelity (replay_fidelity_t.actors),
 * chosen once per run: the rest of this file is the same in both. */
struct replay_actor_rules {
  /* Waits for op i's dependencies; the time it may start (free_s: the end of
   * its stream's previous op). */
  double (*start)(actors_t *A, int rank, const trace_program_t *p, int i, double free_s);
  void (*collective)(actors_t *A, int rank, int i, replay_span_t *sp);
  /* A send (send) or recv of bytes from src to dst on the message's mailbox name. */
  void (*p2p)(actors_t *A, int rank, const char *name, bool send, int src, int dst, double bytes,
              int i, replay_span_t *sp);
  /* The platform: each endpoint's pairs that exchange data (NULL: one host,
   * no routes, every actor on it). */
  void (*pairs)(const actors_t *A, pair_set_t *pairs, int *endpoints);
  bool clock_ends;      /* an op ends when SimGrid's clock says, else at its span's end */
  const char *too_many; /* what to do with more streams than SimGrid holds */
};

struct actors {
  const replay_plan_t *pl;
  const replay_actor_rules_t *rules; /* the plan's fidelity's */
  replay_record_t *rec;
  rank_state_t *rs;   /* per rank */
  inst_run_t *runs;   /* per collective of the plan */
  barrier_run_t *bars; /* per step barrier of the plan */
  p2p_stamp_t *stamps; /* open addressing by mailbox; links dying only */
  size_t nstamps, capstamps;
  sg_comm_t *left; /* messages left on dead links at T (crawling, platform.c) */
  size_t nleft, capleft;
};

typedef struct {
  actors_t *a;
  int rank, stream;   /* stream actors */
  inst_run_t *run;    /* switch helpers: the collective and the switch id */
  int endpoint;
} actor_ctx_t;

/* rank_state_t.done: the actors mark ops done, or planned (ending at their
 * span's end_s, in the future). */
enum { OP_PENDING, OP_DONE, OP_PLANNED };

/* Every pair of endpoints that exchanges data, for the platform's routes. */
static void collect_pairs(const actors_t *A, pair_set_t *pairs, int *endpoints) {
  const trace_t *t = A->pl->trace;
  *endpoints = t->ranks;
  for (int i = 0; i < A->pl->ninsts; i++) {
    if (!replay_inst_flows(&A->pl->insts[i]))
      continue;
    const coll_sched_t *s = &A->pl->insts[i].plan.sched;
    if (s->endpoints > *endpoints)
      *endpoints = s->endpoints;
    for (int p = 0; p < s->nphases; p++)
      for (int j = 0; j < s->phases[p].nxfers; j++)
        pair_set_add(pairs, s->phases[p].xfers[j].src, s->phases[p].xfers[j].dst);
  }
  for (int r = 0; r < t->ranks; r++) {
    const trace_program_t *p = &t->programs[t->program_of[r]];
    for (int i = 0; A->pl->simulated[r] && i < p->nops; i++)
      if (p->ops[i].type == TRACE_OP_SEND)
        pair_set_add(pairs, r, trace_peer(&p->ops[i], r));
  }
}

/* ---- the actors ---- */

/* Marks an op done, or planned (its end time is in its span already).
 * SimGrid runs one actor at a time and switches only inside its calls, so the
 * flags need the mutex only around waiting: a rank nobody waits on is marked
 * without a simulator call, and only the stream waiting for the op is woken. */
static void mark_done(actors_t *A, int rank, int op, char state) {
  rank_state_t *s = &A->rs[rank];
  s->done[op] = state;
  A->rec->finished[rank][op] = 1; /* planned: its end is set and comes before the run ends */
  if (state == OP_DONE)
    progress_step(A->rec->progress, 1, A->rec->spans[rank][op].end_s);
  if (s->waiters == 0)
    return;
  for (int k = 0; k < s->nstreams; k++)
    if (s->waiting_for[k] == op) {
      sg_mutex_lock(s->mutex);
      sg_cond_notify_one(s->conds[k]);
      sg_mutex_unlock(s->mutex);
    }
}

/* Waits until the op has ended or its end is planned; returns when it ends
 * (possibly later than now). */
static double wait_done(actors_t *A, int rank, int stream, int op) {
  rank_state_t *s = &A->rs[rank];
  if (s->done[op] == OP_PENDING) {
    sg_mutex_lock(s->mutex);
    s->waiters++;
    s->waiting_for[stream] = op;
    while (s->done[op] == OP_PENDING)
      sg_cond_wait(s->conds[stream], s->mutex);
    s->waiting_for[stream] = -1;
    s->waiters--;
    sg_mutex_unlock(s->mutex);
  }
  return s->done[op] == OP_PLANNED ? A->rec->spans[rank][op].end_s : 0;
}

/* Waits for everything op i of the rank depends on outside its stream.
 * Returns the latest end wait_done gave (planned ends, else 0), and the
 * latest of their spans' ends in *spans_end_s (from from_s on). */
static double wait_deps(actors_t *A, int rank, const trace_program_t *p, int i, double from_s,
                        double *spans_end_s) {
  const trace_op_t *op = &p->ops[i];
  const replay_span_t *sp = A->rec->spans[rank];
  double planned = 0, spans = from_s;
  int n = op->ndeps, wait_k = -1;
  if (op->type == TRACE_OP_WAIT)
    wait_k = A->pl->record_of[A->pl->trace->program_of[rank]][op->event];
  for (int d = 0; d <= n; d++) {
    int k = d < n ? op->deps[d] : wait_k;
    if (k < 0)
      continue;
    double end = wait_done(A, rank, op->stream, k);
    planned = end > planned ? end : planned;
    spans = sp[k].end_s > spans ? sp[k].end_s : spans;
  }
  *spans_end_s = spans;
  return planned;
}

/* Analytic: the latest end among the stream's previous op (free_s) and the
 * dependencies, from the spans, so the actors do the sweep's arithmetic to the
 * last bit (SimGrid's clock settles an action within its precision, not
 * exactly). */
static double start_analytic(actors_t *A, int rank, const trace_program_t *p, int i,
                             double free_s) {
  double spans;
  wait_deps(A, rank, p, i, free_s, &spans);
  return spans;
}

/* Flow: now, or a dependency's planned end. */
static double start_flow(actors_t *A, int rank, const trace_program_t *p, int i, double free_s) {
  (void)free_s;
  double spans, start = wait_deps(A, rank, p, i, 0, &spans);
  double now = simgrid_get_clock(); /* after any waiting */
  return now > start ? now : start;
}

static void switch_actor(int argc, char **argv) {
  (void)argc, (void)argv;
  actor_ctx_t *ctx = sg_actor_self_get_data();
  coll_flow_run_endpoint(ctx->run->flow, &ctx->a->pl->sys->coll, ctx->endpoint,
                         &ctx->a->rec->log);
  free(ctx);
}

/* The in-network switches of a collective run their part beside its first member. */
static void start_switches(actors_t *A, const inst_t *x, inst_run_t *run) {
  for (int e = A->pl->trace->ranks; e < x->plan.sched.endpoints; e++) {
    if (!coll_flow_takes_part(run->flow, e))
      continue;
    actor_ctx_t *ctx = calloc(1, sizeof *ctx);
    *ctx = (actor_ctx_t){.a = A, .run = run, .endpoint = e};
    char host[32];
    snprintf(host, sizeof host, "h%d", e);
    sg_actor_t a = sg_actor_init("switch", sg_host_by_name(host));
    sg_actor_set_data(a, ctx);
    sg_actor_start(a, switch_actor, 0, NULL);
  }
}

/* A flow collective's data moves when its members are there: no member ends a
 * use before the last has arrived at it (each one's result needs every input),
 * so arrivals come use by use, and the last one's time is every member's
 * ready_s: the wait before it is waiting for a slower peer. */
static void note_arrival(inst_run_t *run, const inst_t *x, replay_span_t *sp) {
  if (sp->start_s > run->pending_latest_s)
    run->pending_latest_s = sp->start_s;
  run->pending[run->npending++] = sp;
  if (run->npending < x->members)
    return;
  for (unsigned k = 0; k < run->npending; k++)
    run->pending[k]->ready_s = run->pending_latest_s;
  run->npending = 0;
  run->pending_latest_s = 0;
}

/* Analytic: the members meet at the latest arrival, then wait the planned time. */
static void collective_analytic(actors_t *A, int rank, int i, replay_span_t *sp) {
  int k = A->pl->inst_of[rank][i];
  const inst_t *x = &A->pl->insts[k];
  inst_run_t *run = &A->runs[k];
  run->latest_s = sp->start_s > run->latest_s ? sp->start_s : run->latest_s;
  if (x->members > 1)
    sg_barrier_wait(run->barrier);
  sp->ready_s = run->latest_s;
  if (++run->read == x->members) /* the last reader clears it for the next use... */
    run->latest_s = run->read = 0;
  if (x->members > 1) /* ...before anyone can leave for that use */
    sg_barrier_wait(run->barrier);
  sp->end_s = sp->ready_s + replay_coll_s(A->pl, rank, i);
  sg_actor_sleep_until(sp->end_s);
}

/* Flow: the transfers as SimGrid flows, or the analytic time where the scope
 * found the collective alone on its links. */
static void collective_flow(actors_t *A, int rank, int i, replay_span_t *sp) {
  int k = A->pl->inst_of[rank][i];
  const inst_t *x = &A->pl->insts[k];
  inst_run_t *run = &A->runs[k];
  double overhead = A->pl->sys->coll.op_overhead_s;
  if (x->mode == INST_ANALYTIC) {
    if (x->members > 1)
      sg_barrier_wait(run->barrier); /* all members present */
    sp->ready_s = simgrid_get_clock();
    sg_actor_sleep_for(x->analytic_s);
    return;
  }
  note_arrival(run, x, sp);
  if (overhead > 0)
    sg_actor_sleep_for(overhead);
  const trace_comm_t *cm = &A->pl->trace->comms[x->comm];
  if (cm->groups[x->group][0] == rank)
    start_switches(A, x, run);
  coll_flow_run_endpoint(run->flow, &A->pl->sys->coll, rank, &A->rec->log);
}

/* A step barrier: the members meet and each leaves at the latest arrival,
 * taken from the spans as the sweep takes it (flow: the clock then). */
static void run_barrier(actors_t *A, int rank, const trace_op_t *op, replay_span_t *sp) {
  int b = replay_barrier_of(A->pl, rank, op);
  unsigned members = A->pl->barriers[b].members;
  barrier_run_t *run = &A->bars[b];
  run->latest_s = sp->start_s > run->latest_s ? sp->start_s : run->latest_s;
  if (members > 1)
    sg_barrier_wait(run->barrier);
  sp->ready_s = sp->end_s = run->latest_s;
  if (++run->read == members) /* the last reader clears it for the next use... */
    run->latest_s = run->read = 0;
  if (members > 1) /* ...before anyone can leave for that use */
    sg_barrier_wait(run->barrier);
}

/* Analytic send/recv: each side posts its arrival to the other (two
 * zero-byte messages), so both take the later one as the meeting time. */
static double exchange_arrivals(const char *name, bool send, double start_s) {
  char out[104], in[104];
  snprintf(out, sizeof out, "%s%s", name, send ? ">" : "<");
  snprintf(in, sizeof in, "%s%s", name, send ? "<" : ">");
  double *mine = malloc(sizeof *mine);
  *mine = start_s;
  sg_comm_detach(sg_mailbox_put_init(sg_mailbox_by_name(out), mine, 0), free);
  double *theirs = sg_mailbox_get(sg_mailbox_by_name(in));
  double ready = *theirs > start_s ? *theirs : start_s;
  free(theirs);
  return ready;
}

static size_t stamp_slot(const p2p_stamp_t *v, size_t cap, sg_mailbox_t box) {
  size_t k = ((uintptr_t)box >> 4) * 0x9E3779B97F4A7C15u & (cap - 1);
  while (v[k].box && v[k].box != box)
    k = (k + 1) & (cap - 1);
  return k;
}

/* The stamps of the message on box (found again after every wait: the table
 * grows as other actors post). */
static p2p_stamp_t *stamp_of(actors_t *A, sg_mailbox_t box) {
  if (2 * (A->nstamps + 1) > A->capstamps) {
    size_t cap = A->capstamps ? 2 * A->capstamps : 1024;
    p2p_stamp_t *v = calloc(cap, sizeof *v);
    for (size_t k = 0; k < A->capstamps; k++)
      if (A->stamps[k].box)
        v[stamp_slot(v, cap, A->stamps[k].box)] = A->stamps[k];
    free(A->stamps);
    A->stamps = v;
    A->capstamps = cap;
  }
  size_t k = stamp_slot(A->stamps, A->capstamps, box);
  if (!A->stamps[k].box) {
    A->stamps[k].box = box;
    A->nstamps++;
  }
  return &A->stamps[k];
}

static double p2p_payload; /* SimGrid refuses NULL payloads; never read or written */
static void *p2p_sink;     /* where messages left on dead links put it, if ever through */

/* Flow send/recv with links dying at T (topo_t.after): posted from the shadow
 * host at or after T (the routes round them); posted before T, waited with T
 * as deadline, then, if on a dying link, posted by both sides before T and not
 * through, left there and posted again whole from the shadow hosts at T. Both
 * sides then wait the latency of the route the data took. */
static void run_p2p_dying(actors_t *A, int rank, sg_mailbox_t box, bool send, int src, int dst,
                          double bytes, replay_span_t *sp) {
  const topo_t *topo = A->pl->topo;
  double T = topo->death_s, posted = simgrid_get_clock();
  if (posted >= T)
    coll_flow_to_shadow_host(rank);
  p2p_stamp_t *st = stamp_of(A, box);
  if (send)
    st->sent = true, st->sent_s = posted;
  else
    st->got = true, st->got_s = posted;
  if (!send) /* the data moves from then on */
    coll_flow_log_hold(&A->rec->log, posted);
  long size = (long)llround(bytes);
  sg_comm_t c =
      send ? sg_mailbox_put_async(box, &p2p_payload, size) : sg_mailbox_get_async(box, &p2p_sink);
  bool resent = false, through = false;
  if (posted < T) {
    through = sg_comm_wait_all_for(&c, 1, T - posted) == 1;
    if (!through) {
      coll_flow_to_shadow_host(rank);
      topo_hop_t hops[TOPO_MAX_HOPS];
      st = stamp_of(A, box);
      bool both = st->sent && st->got && st->sent_s < T && st->got_s < T;
      if (both && topo_path_dies(topo, hops, topo_route(topo, src, dst, hops)) &&
          !(through = sg_comm_test(c))) {
        if (A->nleft == A->capleft) {
          A->capleft = A->capleft ? 2 * A->capleft : 16;
          A->left = realloc(A->left, A->capleft * sizeof *A->left);
        }
        A->left[A->nleft++] = c;
        c = send ? sg_mailbox_put_async(box, &p2p_payload, size)
                 : sg_mailbox_get_async(box, &p2p_sink);
        resent = true;
      }
    }
  }
  if (!through)
    sg_comm_wait(c);
  st = stamp_of(A, box);
  double met = st->sent_s > st->got_s ? st->sent_s : st->got_s;
  if (!send) {
    sp->ready_s = met;
    coll_flow_log_add(&A->rec->log, src, dst, bytes, resent ? T : met, simgrid_get_clock());
    coll_flow_log_release(&A->rec->log, posted);
  }
  const topo_t *on = topo_at(topo, resent ? T : met);
  topo_hop_t hops[TOPO_MAX_HOPS];
  sg_actor_sleep_for(topo_path_alpha_s(on, hops, topo_route(on, src, dst, hops)));
}

/* The mailbox where an eager message's recv learns when its data moved: name
 * with "!". */
static sg_mailbox_t eager_box(const char *name) {
  char box[104];
  snprintf(box, sizeof box, "%s!", name);
  return sg_mailbox_by_name(box);
}

/* Posts an eager message's times (when its data started moving, when it was
 * in the receiver's buffer) to its recv, without waiting for it. */
static void post_delivery(const char *name, double moved_s, double arrived_s) {
  double *times = malloc(2 * sizeof *times);
  times[0] = moved_s;
  times[1] = arrived_s;
  sg_comm_detach(sg_mailbox_put_init(eager_box(name), times, 0), free);
}

/* An eager message's recv: waits for the delivery, and waits from the later of
 * its arrival and the data's; returns when the data is in (the later of that
 * and its arrival). */
static double take_delivery(const char *name, replay_span_t *sp) {
  double *times = sg_mailbox_get(eager_box(name));
  sp->ready_s = times[0] > sp->start_s ? times[0] : sp->start_s;
  double end = times[1] > sp->start_s ? times[1] : sp->start_s;
  free(times);
  return end;
}

/* Analytic: an eager send ends after the path time from its arrival, its recv
 * when the data is in; a rendezvous pair meets, then both wait the planned time
 * (alone: the path time). */
static void p2p_analytic(actors_t *A, int rank, const char *name, bool send, int src, int dst,
                         double bytes, int i, replay_span_t *sp) {
  if (replay_p2p_eager(A->pl, bytes)) {
    if (send) {
      sp->end_s = sp->start_s + replay_p2p_s(A->pl, rank, i, src, dst, bytes);
      post_delivery(name, sp->start_s, sp->end_s);
    } else {
      sp->end_s = take_delivery(name, sp);
    }
    sg_actor_sleep_until(sp->end_s);
    return;
  }
  sp->ready_s = exchange_arrivals(name, send, sp->start_s);
  sp->end_s = sp->ready_s + replay_p2p_s(A->pl, rank, i, src, dst, bytes);
  sg_actor_sleep_until(sp->end_s);
}

/* Flow: one side of a message, its bytes as a SimGrid communication on the
 * message's mailbox. */
static void flow_side(actors_t *A, int rank, const char *name, bool send, int src, int dst,
                      double bytes, replay_span_t *sp) {
  sg_mailbox_t box = sg_mailbox_by_name(name);
  if (A->pl->topo->after) {
    run_p2p_dying(A, rank, box, send, src, dst, bytes, sp);
    return;
  }
  topo_hop_t hops[TOPO_MAX_HOPS];
  double alpha = topo_path_alpha_s(A->pl->topo, hops, topo_route(A->pl->topo, src, dst, hops));
  /* The data moves once both sides are there; then both wait out the path
   * latency (the analytic engine charges the same). */
  if (send) {
    double *stamp = malloc(sizeof *stamp);
    *stamp = simgrid_get_clock();
    sg_mailbox_put(box, stamp, (long)llround(bytes));
    sg_actor_sleep_for(alpha);
  } else {
    double posted = simgrid_get_clock();
    coll_flow_log_hold(&A->rec->log, posted); /* the data moves from then on */
    double *stamp = sg_mailbox_get(box);
    sp->ready_s = *stamp > posted ? *stamp : posted;
    coll_flow_log_add(&A->rec->log, src, dst, bytes, *stamp > posted ? *stamp : posted,
                      simgrid_get_clock());
    coll_flow_log_release(&A->rec->log, posted);
    free(stamp);
    sg_actor_sleep_for(alpha);
  }
}

/* The receiver's buffer of an eager message (flow): it takes the data as soon
 * as the send posts it, on the receiver's host, then tells the recv. */
typedef struct {
  actors_t *A;
  char name[96];
  int src, dst;
  double bytes;
} eager_buffer_t;

static void eager_buffer_actor(int argc, char **argv) {
  (void)argc, (void)argv;
  eager_buffer_t *b = sg_actor_self_get_data();
  replay_span_t sp = {.start_s = simgrid_get_clock()};
  flow_side(b->A, b->dst, b->name, false, b->src, b->dst, b->bytes, &sp);
  post_delivery(b->name, sp.ready_s, simgrid_get_clock());
  free(b);
}

/* Flow: an eager send starts its data at once into the receiver's buffer (an
 * actor on the receiver's host) and ends when it is there; its recv ends when
 * both it and the data are there. A rendezvous pair moves its data once both
 * sides are there. */
static void p2p_flow(actors_t *A, int rank, const char *name, bool send, int src, int dst,
                     double bytes, int i, replay_span_t *sp) {
  (void)i;
  if (!replay_p2p_eager(A->pl, bytes)) {
    flow_side(A, rank, name, send, src, dst, bytes, sp);
    return;
  }
  if (!send) {
    double end = take_delivery(name, sp);
    if (end > simgrid_get_clock())
      sg_actor_sleep_until(end);
    return;
  }
  eager_buffer_t *b = malloc(sizeof *b);
  *b = (eager_buffer_t){.A = A, .src = src, .dst = dst, .bytes = bytes};
  snprintf(b->name, sizeof b->name, "%s", name);
  char host[32];
  snprintf(host, sizeof host, "h%d", dst);
  sg_actor_t a = sg_actor_init("eager_buffer", sg_host_by_name(host));
  sg_actor_set_data(a, b);
  sg_actor_start(a, eager_buffer_actor, 0, NULL);
  flow_side(A, rank, name, true, src, dst, bytes, sp);
}

static void run_p2p(actors_t *A, int rank, int i, replay_span_t *sp) {
  int pi = A->pl->trace->program_of[rank];
  const trace_op_t *op = &A->pl->trace->programs[pi].ops[i];
  int peer = trace_peer(op, rank);
  bool send = op->type == TRACE_OP_SEND;
  int src = send ? rank : peer, dst = send ? peer : rank;
  /* one mailbox per message: the k-th send on a channel meets the k-th recv,
   * whichever arrives first (trace_pairing_t) */
  char name[96];
  snprintf(name, sizeof name, "p:%d>%d:%d#%d", src, dst, A->pl->pairing.tag_id[pi][op->tag],
           A->pl->pairing.seq[rank][i]);
  A->rules->p2p(A, rank, name, send, src, dst, op->bytes, i, sp);
}

static void run_op(actors_t *A, int rank, int pi, int i) {
  const trace_program_t *p = &A->pl->trace->programs[pi];
  const trace_op_t *op = &p->ops[i];
  rank_state_t *s = &A->rs[rank];
  switch (op->type) {
  case TRACE_OP_SHAPED:
  case TRACE_OP_COMPUTE:
  case TRACE_OP_DELAY:
    sg_actor_sleep_for(replay_timed_s(A->pl, rank, pi, i));
    break;
  case TRACE_OP_COLL:
    A->rules->collective(A, rank, i, &A->rec->spans[rank][i]);
    break;
  case TRACE_OP_SEND:
  case TRACE_OP_RECV:
    run_p2p(A, rank, i, &A->rec->spans[rank][i]);
    break;
  case TRACE_OP_BARRIER:
    run_barrier(A, rank, op, &A->rec->spans[rank][i]);
    break;
  case TRACE_OP_ALLOC:
    s->buffer_bytes[op->buffer] += op->bytes;
    s->memory += op->bytes;
    if (s->memory > A->rec->peak_memory_bytes[rank])
      A->rec->peak_memory_bytes[rank] = s->memory;
    break;
  case TRACE_OP_FREE:
    s->memory -= s->buffer_bytes[op->buffer];
    s->buffer_bytes[op->buffer] = 0;
    break;
  default: /* record, wait: nothing but ordering */
    break;
  }
}

/* Whether op j's dependencies on other streams have ended by time t. */
static bool ready_at(const actors_t *A, int rank, const trace_program_t *p, int j, double t) {
  const trace_op_t *op = &p->ops[j];
  for (int d = 0; d < op->ndeps; d++) {
    int k = op->deps[d];
    char state = A->rs[rank].done[k];
    if (p->ops[k].stream != op->stream &&
        (state == OP_PENDING || (state == OP_PLANNED && A->rec->spans[rank][k].end_s > t)))
      return false;
  }
  return true;
}

/* Runs timed-only ops from i on as one sleep while their dependencies on
 * other streams are met: SimGrid wakes the stream once, the spans are those of
 * running them one by one, and an op another stream waits for is marked
 * planned at once, so its waiter sleeps to its end instead of being woken.
 * Returns the last op run. */
static int run_batch(actors_t *A, int rank, int pi, int i) {
  const trace_program_t *p = &A->pl->trace->programs[pi];
  replay_span_t *sp = A->rec->spans[rank];
  int stream = p->ops[i].stream, last = i;
  double t = sp[i].start_s + replay_timed_s(A->pl, rank, pi, i);
  sp[i].end_s = t;
  for (int j = i + 1; j < p->nops; j++) {
    if (p->ops[j].stream != stream)
      continue;
    if (!replay_timed_only(p->ops[j].type) || !ready_at(A, rank, p, j, t))
      break;
    sp[j].start_s = sp[j].ready_s = t;
    t += replay_timed_s(A->pl, rank, pi, j);
    sp[j].end_s = t;
    last = j;
  }
  for (int j = i; j <= last; j++)
    if (p->ops[j].stream == stream && A->pl->watched[pi][j])
      mark_done(A, rank, j, OP_PLANNED);
  sg_actor_sleep_until(t);
  for (int j = i; j <= last; j++)
    if (p->ops[j].stream == stream)
      mark_done(A, rank, j, OP_DONE);
  return last;
}

/* A collective whose time is known when it starts: analytic (in either
 * fidelity) with no other simulated member to meet. */
static bool lone_analytic(const actors_t *A, int rank, const trace_program_t *p, int i) {
  if (p->ops[i].type != TRACE_OP_COLL)
    return false;
  const inst_t *x = &A->pl->insts[A->pl->inst_of[rank][i]];
  return x->mode == INST_ANALYTIC && x->members == 1;
}

static void stream_actor(int argc, char **argv) {
  (void)argc, (void)argv;
  actor_ctx_t *ctx = sg_actor_self_get_data();
  actors_t *A = ctx->a;
  int pi = A->pl->trace->program_of[ctx->rank];
  const trace_program_t *p = &A->pl->trace->programs[pi];
  replay_span_t *sp = A->rec->spans[ctx->rank];
  double free_s = 0; /* end of the stream's previous op */
  for (int i = 0; i < p->nops; i++) {
    if (p->ops[i].stream != ctx->stream)
      continue;
    sp[i].start_s = sp[i].ready_s = A->rules->start(A, ctx->rank, p, i, free_s);
    if (replay_timed_only(p->ops[i].type)) {
      i = run_batch(A, ctx->rank, pi, i);
      free_s = sp[i].end_s;
      continue;
    }
    if (lone_analytic(A, ctx->rank, p, i)) { /* planned, so waiters need no wake-up */
      sp[i].end_s = sp[i].start_s + replay_coll_s(A->pl, ctx->rank, i);
      mark_done(A, ctx->rank, i, OP_PLANNED);
      sg_actor_sleep_until(sp[i].end_s);
      mark_done(A, ctx->rank, i, OP_DONE);
      free_s = sp[i].end_s;
      continue;
    }
    if (sp[i].start_s > simgrid_get_clock())
      sg_actor_sleep_until(sp[i].start_s);
    sp[i].end_s = sp[i].start_s; /* instant ops; analytic transfers set their end */
    run_op(A, ctx->rank, pi, i);
    if (A->rules->clock_ends)
      sp[i].end_s = simgrid_get_clock();
    free_s = sp[i].end_s;
    mark_done(A, ctx->rank, i, OP_DONE);
  }
}

static void start_actors(actors_t *A, actor_ctx_t *ctxs) {
  const trace_t *t = A->pl->trace;
  int n = 0;
  for (int r = 0; r < t->ranks; r++) {
    if (!A->pl->simulated[r])
      continue;
    const trace_program_t *p = &t->programs[t->program_of[r]];
    char host[32];
    snprintf(host, sizeof host, "h%d", A->rules->pairs ? r : 0); /* one host without a platform */
    for (int s = 0; s < p->nstreams; s++) {
      ctxs[n] = (actor_ctx_t){.a = A, .rank = r, .stream = s};
      sg_actor_t a = sg_actor_init(p->streams[s], sg_host_by_name(host));
      sg_actor_set_data(a, &ctxs[n++]);
      sg_actor_start(a, stream_actor, 0, NULL);
    }
  }
}

/* ---- running ---- */

typedef struct {
  int comm, group, inst;
} inst_key_t;

static int by_group(const void *pa, const void *pb) {
  const inst_key_t *a = pa, *b = pb;
  if (a->comm != b->comm)
    return a->comm < b->comm ? -1 : 1;
  if (a->group != b->group)
    return a->group < b->group ? -1 : 1;
  return (a->inst > b->inst) - (a->inst < b->inst);
}

/* Times the flow collectives alone on their links in closed form where they
 * qualify (coll_flow_close), a communicator group's together: its
 * collectives' uses may overlap on its links. */
static void close_groups(actors_t *A) {
  const replay_plan_t *pl = A->pl;
  inst_key_t *keys = malloc(((size_t)pl->ninsts + 1) * sizeof *keys);
  coll_flow_sched_t **jobs = malloc(((size_t)pl->ninsts + 1) * sizeof *jobs);
  int n = 0;
  for (int k = 0; k < pl->ninsts; k++)
    if (pl->insts[k].collapsed)
      keys[n++] = (inst_key_t){pl->insts[k].comm, pl->insts[k].group, k};
  qsort(keys, (size_t)n, sizeof *keys, by_group);
  for (int a = 0, b; a < n; a = b) {
    for (b = a; b < n && keys[b].comm == keys[a].comm && keys[b].group == keys[a].group; b++)
      jobs[b - a] = A->runs[keys[b].inst].flow;
    A->rec->closed += coll_flow_close(jobs, b - a, pl->topo);
  }
  free(jobs);
  free(keys);
}

static void init_state(actors_t *A) {
  const replay_plan_t *pl = A->pl;
  const trace_t *t = pl->trace;
  A->rs = calloc((size_t)t->ranks, sizeof *A->rs);
  for (int r = 0; r < t->ranks; r++) {
    if (!pl->simulated[r])
      continue;
    const trace_program_t *p = &t->programs[t->program_of[r]];
    rank_state_t *s = &A->rs[r];
    s->mutex = sg_mutex_init();
    s->nstreams = p->nstreams;
    s->conds = malloc((size_t)p->nstreams * sizeof *s->conds);
    s->waiting_for = malloc((size_t)p->nstreams * sizeof *s->waiting_for);
    for (int k = 0; k < p->nstreams; k++) {
      s->conds[k] = sg_cond_init();
      s->waiting_for[k] = -1;
    }
    s->done = calloc((size_t)p->nops + 1, 1);
    s->buffer_bytes = calloc((size_t)p->nbuffers + 1, sizeof(double));
  }
  A->runs = calloc((size_t)pl->ninsts + 1, sizeof *A->runs);
  for (int i = 0; i < pl->ninsts; i++) {
    const inst_t *x = &pl->insts[i];
    if (replay_inst_flows(x)) {
      char channel[48];
      snprintf(channel, sizeof channel, "c%d.%d", x->comm, x->group);
      A->runs[i].flow = coll_flow_prepare(pl->topo, &x->plan.sched, channel);
      A->runs[i].pending = calloc((size_t)x->members + 1, sizeof *A->runs[i].pending);
      if (x->collapsed)
        coll_flow_collapse(A->runs[i].flow, pl->topo);
    } else if (x->members > 0) {
      A->runs[i].barrier = sg_barrier_init(x->members);
    }
  }
  close_groups(A);
  A->bars = calloc((size_t)pl->nbarriers + 1, sizeof *A->bars);
  for (int b = 0; b < pl->nbarriers; b++)
    if (pl->barriers[b].members > 1)
      A->bars[b].barrier = sg_barrier_init(pl->barriers[b].members);
}

static void free_state(actors_t *A) {
  const trace_t *t = A->pl->trace;
  for (int r = 0; A->rs && r < t->ranks; r++) {
    if (A->rs[r].mutex) {
      sg_mutex_destroy(A->rs[r].mutex);
      for (int k = 0; k < A->rs[r].nstreams; k++)
        sg_cond_destroy(A->rs[r].conds[k]);
      free(A->rs[r].conds);
      free(A->rs[r].waiting_for);
    }
    free(A->rs[r].done);
    free(A->rs[r].buffer_bytes);
  }
  free(A->rs);
  for (int i = 0; A->runs && i < A->pl->ninsts; i++) {
    coll_flow_free(A->runs[i].flow);
    free(A->runs[i].pending);
    if (A->runs[i].barrier)
      sg_barrier_destroy(A->runs[i].barrier);
  }
  free(A->runs);
  for (int b = 0; A->bars && b < A->pl->nbarriers; b++)
    if (A->bars[b].barrier)
      sg_barrier_destroy(A->bars[b].barrier);
  free(A->bars);
  for (size_t k = 0; k < A->nleft; k++)
    sg_comm_unref(A->left[k]);
  free(A->left);
  free(A->stamps);
}

int replay_actors_run(const replay_plan_t *pl, replay_record_t *rec, const char *name, npu_err_t *err) {
  const replay_actor_rules_t *rules = pl->fidelity->actors;
  long nactors = replay_plan_streams(pl);
  for (int k = 0; k < pl->ninsts; k++) /* and the in-network switches' actors */
    if (replay_inst_flows(&pl->insts[k]) && pl->insts[k].plan.sched.endpoints > pl->trace->ranks)
      nactors += pl->insts[k].plan.sched.endpoints - pl->trace->ranks;
  if (nactors > FLOW_MAX_ACTORS) /* before SimGrid aborts */
    return npu_err_set(err, "%s: expected at most %d rank streams to simulate (a SimGrid "
                    "actor each), found %ld; %s",
                    name, FLOW_MAX_ACTORS, nactors, rules->too_many),
           -1;
  actors_t A = {.pl = pl, .rules = rules, .rec = rec};
  pair_set_t pairs; /* the simulator and its platform: routes for the pairs that talk */
  pair_set_init(&pairs);
  int endpoints = 1;
  if (rules->pairs)
    rules->pairs(&A, &pairs, &endpoints);
  int rc = coll_flow_start(pl->topo, endpoints, &pairs, err);
  pair_set_free(&pairs);
  if (rc)
    return rc;
  linkstats_init(&rec->links, pl->topo);
  coll_flow_log_init(&rec->log, pl->topo, &rec->links);
  init_state(&A);
  actor_ctx_t *ctxs = calloc((size_t)nactors + 1, sizeof *ctxs);
  start_actors(&A, ctxs);
  simgrid_run();
  coll_flow_log_close(&rec->log);
  free(ctxs);
  free_state(&A);
  return 0;
}

const replay_actor_rules_t replay_actors_analytic = {
    .start = start_analytic,
    .collective = collective_analytic,
    .p2p = p2p_analytic,
    .too_many = "give ranks that run alike one program",
};

const replay_actor_rules_t replay_actors_flow = {
    .start = start_flow,
    .collective = collective_flow,
    .p2p = p2p_flow,
    .pairs = collect_pairs,
    .clock_ends = true,
    .too_many = "use --fidelity analytic, where one rank runs for all ranks of a program",
};
