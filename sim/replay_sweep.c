/* replay_sweep.c - the analytic replay without the simulator.
 *
 * With analytic costs (interference is part of an op's cost), every op's
 * times follow from the ops before it: a stream starts an op when the op
 * before it on the stream and its dependencies have ended; a collective
 * starts when all its simulated members have arrived (arrivals at one
 * collective meet in order, as at a barrier) and lasts its analytic time; a send and its recv (k-th with k-th on
 * one source, destination and tag) start when both are there and last the
 * path time. Each stream moves as far as it can; a stream that stops is
 * visited again only when an op of its rank finishes (a worklist), so the
 * work grows with the ops, not with ops x streams. The same times the SimGrid
 * actors produce, without a context switch per op. Not for memory ops (their high-water mark depends on the
 * order the simulator interleaves them): replay.c keeps the actors for those. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "replay_internal.h"

typedef struct {
  int rank, op;
  double at_s;
} arrival_t;

/* A collective's arrivals not yet met, or a channel's unmatched ops. */
typedef struct {
  arrival_t *v;
  int n, cap;
} queue_t;

/* One message (the k-th on a channel) whose first side has arrived. */
typedef struct {
  int src, dst, tag, k;
  bool used;
  arrival_t first;
} message_t;

typedef struct {
  int rank, pi, stream, next;
  double free_s;
} cursor_t;

typedef struct {
  rp_t *rp;
  queue_t *colls;    /* per collective instance */
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
  rp_t *rp = sw->rp;
  replay_span_t *sp = &rp->spans[rank][op];
  sp->ready_s = ready_s;
  sp->end_s = end_s;
  rp->rs[rank].done[op] = SWEEP_FINISHED;
  int streams = rp->trace->programs[rp->trace->program_of[rank]].nstreams;
  for (int k = sw->first_cur[rank]; k < sw->first_cur[rank] + streams; k++)
    if (!sw->queued[k]) {
      sw->queued[k] = true;
      sw->work[sw->nwork++] = k;
    }
}

static uint64_t mix(uint64_t h, int v) {
  h = (h ^ (uint32_t)v) * 0x9E3779B97F4A7C15u;
  return h ^ (h >> 29);
}

static message_t *message(sweep_t *sw, int src, int dst, int tag, int k) {
  size_t i = (size_t)(mix(mix(mix(mix(0, src), dst), tag), k) & (sw->nmsgs - 1));
  while (sw->msgs[i].used && !(sw->msgs[i].src == src && sw->msgs[i].dst == dst &&
                               sw->msgs[i].tag == tag && sw->msgs[i].k == k))
    i = (i + 1) & (sw->nmsgs - 1);
  return &sw->msgs[i];
}

/* A collective op arrives at `at`; the last member to arrive starts it. */
static void arrive_coll(sweep_t *sw, int rank, int i, double at) {
  rp_t *rp = sw->rp;
  const inst_t *x = &rp->insts[rp->inst_of[rank][i]];
  queue_t *q = &sw->colls[rp->inst_of[rank][i]];
  push(q, (arrival_t){rank, i, at});
  if ((unsigned)q->n < x->members)
    return;
  double ready = 0;
  for (int k = 0; k < q->n; k++)
    ready = q->v[k].at_s > ready ? q->v[k].at_s : ready;
  for (int k = 0; k < q->n; k++)
    resolve(sw, q->v[k].rank, q->v[k].op, ready, ready + x->analytic_s);
  q->n = 0;
}

/* A send or recv arrives at `at`; the second side of its message starts it. */
static void arrive_p2p(sweep_t *sw, int rank, int pi, int i, double at) {
  rp_t *rp = sw->rp;
  const trace_op_t *op = &rp->trace->programs[pi].ops[i];
  bool send = op->type == TRACE_OP_SEND;
  int peer = trace_peer(op, rank), src = send ? rank : peer, dst = send ? peer : rank;
  int tag = rp->pairing.tag_id[pi][op->tag], k = rp->pairing.seq[rank][i];
  message_t *m = message(sw, src, dst, tag, k);
  if (!m->used) {
    *m = (message_t){src, dst, tag, k, true, {rank, i, at}};
    return;
  }
  double ready = at > m->first.at_s ? at : m->first.at_s;
  double end = ready + replay_p2p_analytic_s(rp->topo, src, dst, op->bytes);
  resolve(sw, rank, i, ready, end);
  resolve(sw, m->first.rank, m->first.op, ready, end);
}

/* When op i may start: the stream's free time and its dependencies' ends, or
 * -1 while one of them is still open. */
static double start_of(const rp_t *rp, int rank, const trace_program_t *p, int i, double free_s) {
  const trace_op_t *op = &p->ops[i];
  const char *done = rp->rs[rank].done;
  const replay_span_t *sp = rp->spans[rank];
  double start = free_s;
  for (int d = 0; d < op->ndeps; d++) {
    if (done[op->deps[d]] != SWEEP_FINISHED)
      return -1;
    start = sp[op->deps[d]].end_s > start ? sp[op->deps[d]].end_s : start;
  }
  if (op->type == TRACE_OP_WAIT) {
    int j = rp->record_of[rp->trace->program_of[rank]][op->event];
    if (done[j] != SWEEP_FINISHED)
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
  rp_t *rp = sw->rp;
  const trace_program_t *p = &rp->trace->programs[c->pi];
  char *done = rp->rs[c->rank].done;
  replay_span_t *sp = rp->spans[c->rank];
  while (c->next < p->nops) {
    int i = c->next;
    const trace_op_t *op = &p->ops[i];
    if (done[i] == 0) {
      double start = start_of(rp, c->rank, p, i, c->free_s);
      if (start < 0)
        break;
      sp[i].start_s = sp[i].ready_s = start;
      done[i] = SWEEP_ARRIVED;
      if (op->type == TRACE_OP_COLL)
        arrive_coll(sw, c->rank, i, start);
      else if (op->type == TRACE_OP_SEND || op->type == TRACE_OP_RECV)
        arrive_p2p(sw, c->rank, c->pi, i, start);
      else
        resolve(sw, c->rank, i, start,
                start + (replay_timed_only(op->type) ? replay_timed_s(rp, c->pi, i) : 0));
    }
    if (done[i] != SWEEP_FINISHED)
      break;
    c->free_s = sp[i].end_s;
    c->next = next_on_stream(p, op->stream, i + 1);
  }
}

void replay_sweep(rp_t *rp) {
  const trace_t *t = rp->trace;
  sweep_t sw = {.rp = rp};
  sw.colls = calloc((size_t)rp->ninsts + 1, sizeof *sw.colls);
  int n = 0;
  long p2p = 0;
  for (int r = 0; r < t->ranks; r++)
    if (rp->simulated[r]) {
      const trace_program_t *p = &t->programs[t->program_of[r]];
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
    if (!rp->simulated[r])
      continue;
    const trace_program_t *p = &t->programs[t->program_of[r]];
    sw.first_cur[r] = n;
    for (int s = 0; s < p->nstreams; s++) {
      sw.cur[n] = (cursor_t){r, t->program_of[r], s, next_on_stream(p, s, 0), 0};
      sw.queued[n] = true;
      sw.work[sw.nwork++] = n++;
    }
  }
  while (sw.nwork > 0) {
    int k = sw.work[--sw.nwork];
    sw.queued[k] = false;
    advance(&sw, &sw.cur[k]);
  }
  free(sw.cur);
  free(sw.work);
  free(sw.queued);
  free(sw.first_cur);
  for (int i = 0; i < rp->ninsts; i++)
    free(sw.colls[i].v);
  free(sw.colls);
  free(sw.msgs);
}
