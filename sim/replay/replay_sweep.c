/* replay_sweep.c - the analytic replay without the simulator (an engine of
 * replay_engine.h).
 *
 * With analytic costs (interference is part of an op's cost), every op's
 * times follow from the ops before it: a stream starts an op when the op
 * before it on the stream and its dependencies have ended; a collective
 * starts when all its simulated members have arrived (arrivals at one
 * collective meet in order, as at a barrier) and lasts its analytic time; a
 * rendezvous send and its recv (paired by trace_pairing_t) start when both are
 * there and last the path time; an eager send (replay_p2p_eager) starts when
 * it arrives and lasts the path time, its recv ends when both it and the data
 * are there; a step barrier ends when its last member arrives. Each
 * stream moves as far as it can; a stream that stops is visited again only
 * when an op of its rank finishes (a worklist), so the work grows with the
 * ops, not with ops x streams. The same times the SimGrid actors produce,
 * without a context switch per op. Not for memory ops (their high-water mark
 * depends on the order the simulator interleaves them): the plan leaves those
 * to the actors. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "npu_int.h"
#include "replay_contend.h"
#include "replay_engine.h"

typedef struct {
  int rank, op;
  double at_s;
} arrival_t;

/* A collective's arrivals not yet met, or a channel's unmatched ops. */
typedef struct {
  arrival_t *v;
  int n, cap;
} queue_t;

/* One message (the k-th on a channel) one of whose sides has arrived: a
 * rendezvous one keeps the first side, an eager one each side until its recv
 * can end. */
typedef struct {
  int src, dst, tag, k;
  bool used, has_first, has_send, has_recv;
  arrival_t first, send, recv;
} message_t;

typedef struct {
  int rank, pi, stream, next;
  double free_s;
} cursor_t;

/* The ops waiting for a contended job (replay_contend.h) to end. */
typedef struct {
  arrival_t *v;
  int n, cap;
  double ready_s;
} owners_t;

typedef struct {
  const replay_plan_t *pl;
  replay_record_t *rec;
  replay_contend_t *fluid; /* NULL: each transfer alone */
  double **duration_s;     /* per simulated rank, per op: a transfer's duration, or NULL */
  owners_t *owners;        /* per job id */
  int nowners;
  char **arrived;    /* per simulated rank, per op: it has come (finished: rec->finished) */
  queue_t *colls;    /* per collective instance */
  queue_t *bars;     /* per step barrier (replay_plan_t.barriers) */
  message_t *msgs;   /* open addressing on (src, dst, tag, k) */
  size_t nmsgs;
  cursor_t *cur;     /* per stream of each simulated rank */
  int *first_cur;    /* per rank: its first cursor */
  int *work, nwork;  /* cursors to visit (a stack) */
  bool *queued;      /* per cursor: on the stack */
} sweep_t;

static void push(queue_t *q, arrival_t a) {
  if (q->n == q->cap) {
    q->cap = q->cap ? 2 * q->cap : 4;
    q->v = realloc(q->v, (size_t)q->cap * sizeof *q->v);
  }
  q->v[q->n++] = a;
}

/* An op has its times; the rank's streams may move again. */
static void resolve(sweep_t *sw, int rank, int op, double ready_s, double end_s) {
  replay_span_t *sp = &sw->rec->spans[rank][op];
  sp->ready_s = ready_s;
  sp->end_s = end_s;
  sw->rec->finished[rank][op] = 1;
  progress_step(sw->rec->progress, 1, end_s);
  const trace_t *t = sw->pl->trace;
  int streams = t->programs[t->program_of[rank]].nstreams;
  for (int k = sw->first_cur[rank]; k < sw->first_cur[rank] + streams; k++)
    if (!sw->queued[k]) {
      sw->queued[k] = true;
      sw->work[sw->nwork++] = k;
    }
}

/* A transfer's time is known: its ops end. */
static void resolve_comm(sweep_t *sw, int rank, int op, double ready_s, double duration_s) {
  if (sw->duration_s)
    sw->duration_s[rank][op] = duration_s;
  resolve(sw, rank, op, ready_s, ready_s + duration_s);
}

/* The ops job `id` ends: the arrivals of its meeting. */
static owners_t *owners_of(sweep_t *sw, int id, double ready_s) {
  if (id >= sw->nowners) {
    int n = sw->nowners ? 2 * sw->nowners : 256;
    while (n <= id)
      n *= 2;
    sw->owners = realloc(sw->owners, (size_t)n * sizeof *sw->owners);
    memset(sw->owners + sw->nowners, 0, (size_t)(n - sw->nowners) * sizeof *sw->owners);
    sw->nowners = n;
  }
  owners_t *o = &sw->owners[id];
  o->n = 0;
  o->ready_s = ready_s;
  return o;
}

static void add_owner(owners_t *o, arrival_t a) {
  if (o->n == o->cap) {
    o->cap = o->cap ? 2 * o->cap : 4;
    o->v = realloc(o->v, (size_t)o->cap * sizeof *o->v);
  }
  o->v[o->n++] = a;
}

static message_t *message(sweep_t *sw, int src, int dst, int tag, int k) {
  uint64_t h = NPU_HASH_SEED;
  h = npu_hash_u64(npu_hash_u64(npu_hash_u64(npu_hash_u64(h, (uint64_t)src), (uint64_t)dst),
                                (uint64_t)tag), (uint64_t)k);
  size_t i = (size_t)(h & (sw->nmsgs - 1));
  while (sw->msgs[i].used && !(sw->msgs[i].src == src && sw->msgs[i].dst == dst &&
                               sw->msgs[i].tag == tag && sw->msgs[i].k == k))
    i = (i + 1) & (sw->nmsgs - 1);
  return &sw->msgs[i];
}

/* A collective op arrives at `at`; the last member to arrive starts it. */
static void arrive_coll(sweep_t *sw, int rank, int i, double at) {
  const replay_plan_t *pl = sw->pl;
  const inst_t *x = &pl->insts[pl->inst_of[rank][i]];
  queue_t *q = &sw->colls[pl->inst_of[rank][i]];
  push(q, (arrival_t){rank, i, at});
  if ((unsigned)q->n < x->members)
    return;
  double ready = 0;
  for (int k = 0; k < q->n; k++)
    ready = q->v[k].at_s > ready ? q->v[k].at_s : ready;
  int inst = pl->inst_of[rank][i];
  if (sw->fluid && replay_contend_shares(sw->fluid, inst)) {
    owners_t *o = owners_of(sw, replay_contend_coll(sw->fluid, pl, inst, ready), ready);
    for (int k = 0; k < q->n; k++)
      add_owner(o, q->v[k]);
  } else {
    for (int k = 0; k < q->n; k++)
      resolve_comm(sw, q->v[k].rank, q->v[k].op, ready,
                   replay_coll_s(pl, q->v[k].rank, q->v[k].op));
  }
  q->n = 0;
}

/* A step barrier's op arrives at `at`; the last member to arrive ends it for
 * all of them, then: no time passes. */
static void arrive_barrier(sweep_t *sw, int rank, int i, double at) {
  const trace_op_t *op = &sw->pl->trace->programs[sw->pl->trace->program_of[rank]].ops[i];
  int b = replay_barrier_of(sw->pl, rank, op);
  queue_t *q = &sw->bars[b];
  push(q, (arrival_t){rank, i, at});
  if ((unsigned)q->n < sw->pl->barriers[b].members)
    return;
  double ready = 0;
  for (int k = 0; k < q->n; k++)
    ready = q->v[k].at_s > ready ? q->v[k].at_s : ready;
  for (int k = 0; k < q->n; k++)
    resolve(sw, q->v[k].rank, q->v[k].op, ready, ready);
  q->n = 0;
}

/* The message send/recv op i of rank belongs to. */
static message_t *message_of(sweep_t *sw, int rank, int pi, int i) {
  const replay_plan_t *pl = sw->pl;
  const trace_op_t *op = &pl->trace->programs[pi].ops[i];
  bool send = op->type == TRACE_OP_SEND;
  int peer = trace_peer(op, rank), src = send ? rank : peer, dst = send ? peer : rank;
  int tag = pl->pairing.tag_id[pi][op->tag], k = pl->pairing.seq[rank][i];
  message_t *m = message(sw, src, dst, tag, k);
  if (!m->used)
    *m = (message_t){.src = src, .dst = dst, .tag = tag, .k = k, .used = true};
  return m;
}

/* An eager message's recv ends once it has arrived and the send has ended
 * (the data is in its buffer): at the later of the two; it waits from the
 * later of its arrival and the send's start. Its duration for the actors
 * (replay_contend.h) is the send's. */
static void deliver_eager(sweep_t *sw, message_t *m) {
  if (!m->has_send || !m->has_recv || !sw->rec->finished[m->send.rank][m->send.op] ||
      sw->rec->finished[m->recv.rank][m->recv.op])
    return;
  const replay_span_t *s = &sw->rec->spans[m->send.rank][m->send.op];
  double at = m->recv.at_s, end = s->end_s > at ? s->end_s : at;
  double ready = s->start_s > at ? s->start_s : at;
  if (sw->duration_s)
    sw->duration_s[m->recv.rank][m->recv.op] = s->end_s - s->start_s;
  resolve(sw, m->recv.rank, m->recv.op, ready, end);
}

/* An eager send or its recv arrives at `at`: the send moves its data at once. */
static void arrive_eager(sweep_t *sw, message_t *m, int rank, int i, double at, bool send) {
  if (!send) {
    m->has_recv = true;
    m->recv = (arrival_t){rank, i, at};
    deliver_eager(sw, m);
    return;
  }
  m->has_send = true;
  m->send = (arrival_t){rank, i, at};
  if (sw->fluid) { /* the recv is delivered when the job ends (end_next_job) */
    int id = replay_contend_message(sw->fluid, sw->pl, rank, i, at);
    add_owner(owners_of(sw, id, at), m->send);
    return;
  }
  resolve_comm(sw, rank, i, at,
               replay_p2p_s(sw->pl, rank, i, m->src, m->dst,
                            sw->pl->trace->programs[sw->pl->trace->program_of[rank]].ops[i].bytes));
  deliver_eager(sw, m);
}

/* A send or recv arrives at `at`; a rendezvous message starts with its second
 * side. */
static void arrive_p2p(sweep_t *sw, int rank, int pi, int i, double at) {
  const replay_plan_t *pl = sw->pl;
  const trace_op_t *op = &pl->trace->programs[pi].ops[i];
  bool send = op->type == TRACE_OP_SEND;
  message_t *m = message_of(sw, rank, pi, i);
  if (replay_p2p_eager(pl, op->bytes)) {
    arrive_eager(sw, m, rank, i, at, send);
    return;
  }
  if (!m->has_first) {
    m->has_first = true;
    m->first = (arrival_t){rank, i, at};
    return;
  }
  double ready = at > m->first.at_s ? at : m->first.at_s;
  if (sw->fluid) {
    int sender = send ? rank : m->first.rank, sop = send ? i : m->first.op;
    owners_t *o = owners_of(sw, replay_contend_message(sw->fluid, pl, sender, sop, ready), ready);
    add_owner(o, (arrival_t){rank, i, at});
    add_owner(o, m->first);
    return;
  }
  double d = replay_p2p_s(pl, rank, i, m->src, m->dst, op->bytes);
  resolve_comm(sw, rank, i, ready, d);
  resolve_comm(sw, m->first.rank, m->first.op, ready, d);
}

/* When op i may start: the stream's free time and its dependencies' ends, or
 * -1 while one of them is still open. */
static double start_of(const sweep_t *sw, int rank, const trace_program_t *p, int i,
                       double free_s) {
  const trace_op_t *op = &p->ops[i];
  const char *done = sw->rec->finished[rank];
  const replay_span_t *sp = sw->rec->spans[rank];
  double start = free_s;
  for (int d = 0; d < op->ndeps; d++) {
    if (!done[op->deps[d]])
      return -1;
    start = sp[op->deps[d]].end_s > start ? sp[op->deps[d]].end_s : start;
  }
  if (op->type == TRACE_OP_WAIT) {
    int j = sw->pl->record_of[sw->pl->trace->program_of[rank]][op->event];
    if (!done[j])
      return -1;
    start = sp[j].end_s > start ? sp[j].end_s : start;
  }
  return start;
}

static int next_on_stream(const trace_program_t *p, int stream, int i) {
  while (i < p->nops && p->ops[i].stream != stream)
    i++;
  return i;
}

/* Moves a stream as far as it can. */
static void advance(sweep_t *sw, cursor_t *c) {
  const replay_plan_t *pl = sw->pl;
  const trace_program_t *p = &pl->trace->programs[c->pi];
  char *arrived = sw->arrived[c->rank];
  const char *done = sw->rec->finished[c->rank];
  replay_span_t *sp = sw->rec->spans[c->rank];
  while (c->next < p->nops) {
    int i = c->next;
    const trace_op_t *op = &p->ops[i];
    if (!arrived[i]) {
      double start = start_of(sw, c->rank, p, i, c->free_s);
      if (start < 0)
        break;
      sp[i].start_s = sp[i].ready_s = start;
      arrived[i] = 1;
      if (op->type == TRACE_OP_COLL)
        arrive_coll(sw, c->rank, i, start);
      else if (op->type == TRACE_OP_SEND || op->type == TRACE_OP_RECV)
        arrive_p2p(sw, c->rank, c->pi, i, start);
      else if (op->type == TRACE_OP_BARRIER)
        arrive_barrier(sw, c->rank, i, start);
      else
        resolve(sw, c->rank, i, start,
                start + (replay_timed_only(op->type) ? replay_timed_s(pl, c->rank, c->pi, i) : 0));
    }
    if (!done[i])
      break;
    c->free_s = sp[i].end_s;
    c->next = next_on_stream(p, op->stream, i + 1);
  }
}

/* Ends the next contended job; false when none is left. */
static bool end_next_job(sweep_t *sw) {
  double d;
  int id = replay_contend_next(sw->fluid, &d);
  if (id < 0)
    return false;
  owners_t *o = &sw->owners[id];
  const trace_t *t = sw->pl->trace;
  for (int k = 0; k < o->n; k++) {
    int r = o->v[k].rank, i = o->v[k].op, pi = t->program_of[r];
    resolve_comm(sw, r, i, o->ready_s, d);
    const trace_op_t *op = &t->programs[pi].ops[i];
    if (op->type == TRACE_OP_SEND && replay_p2p_eager(sw->pl, op->bytes))
      deliver_eager(sw, message_of(sw, r, pi, i)); /* its data is there */
  }
  o->n = 0;
  return true;
}

void replay_sweep_run(const replay_plan_t *pl, replay_record_t *rec) {
  replay_sweep_contended(pl, rec, NULL, NULL);
}

void replay_sweep_contended(const replay_plan_t *pl, replay_record_t *rec,
                            replay_contend_t *fluid, double **duration_s) {
  const trace_t *t = pl->trace;
  sweep_t sw = {.pl = pl, .rec = rec, .fluid = fluid, .duration_s = duration_s};
  sw.colls = calloc((size_t)pl->ninsts + 1, sizeof *sw.colls);
  sw.bars = calloc((size_t)pl->nbarriers + 1, sizeof *sw.bars);
  sw.arrived = calloc((size_t)t->ranks + 1, sizeof *sw.arrived);
  int n = 0;
  long p2p = 0;
  for (int r = 0; r < t->ranks; r++)
    if (pl->simulated[r]) {
      const trace_program_t *p = &t->programs[t->program_of[r]];
      sw.arrived[r] = calloc((size_t)p->nops + 1, 1);
      n += p->nstreams;
      for (int i = 0; i < p->nops; i++)
        p2p += p->ops[i].type == TRACE_OP_SEND || p->ops[i].type == TRACE_OP_RECV;
    }
  sw.nmsgs = 64;
  while (sw.nmsgs < (size_t)p2p + 2) /* at most one entry per send/recv pair */
    sw.nmsgs *= 2;
  sw.msgs = calloc(sw.nmsgs, sizeof *sw.msgs);
  sw.cur = calloc((size_t)n + 1, sizeof *sw.cur);
  sw.work = malloc(((size_t)n + 1) * sizeof *sw.work);
  sw.queued = calloc((size_t)n + 1, sizeof *sw.queued);
  sw.first_cur = calloc((size_t)t->ranks + 1, sizeof *sw.first_cur);
  n = 0;
  for (int r = 0; r < t->ranks; r++) {
    if (!pl->simulated[r])
      continue;
    const trace_program_t *p = &t->programs[t->program_of[r]];
    sw.first_cur[r] = n;
    for (int s = 0; s < p->nstreams; s++) {
      sw.cur[n] = (cursor_t){r, t->program_of[r], s, next_on_stream(p, s, 0), 0};
      sw.queued[n] = true;
      sw.work[sw.nwork++] = n++;
    }
  }
  do { /* a contended job ends only when no stream can move without it */
    while (sw.nwork > 0) {
      int k = sw.work[--sw.nwork];
      sw.queued[k] = false;
      advance(&sw, &sw.cur[k]);
    }
  } while (fluid && end_next_job(&sw));
  for (int i = 0; i < sw.nowners; i++)
    free(sw.owners[i].v);
  free(sw.owners);
  free(sw.cur);
  free(sw.work);
  free(sw.queued);
  free(sw.first_cur);
  for (int r = 0; r < t->ranks; r++)
    free(sw.arrived[r]);
  free(sw.arrived);
  for (int i = 0; i < pl->ninsts; i++)
    free(sw.colls[i].v);
  free(sw.colls);
  for (int i = 0; i < pl->nbarriers; i++)
    free(sw.bars[i].v);
  free(sw.bars);
  free(sw.msgs);
}
