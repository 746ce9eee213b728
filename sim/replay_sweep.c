/* replay_sweep.c - the analytic replay without the simulator.
 *
 * With analytic costs (interference is part of an op's cost), every op's
 * times follow from the ops before it: a stream starts an op when the op
 * before it on the stream and its dependencies have ended; a collective
 * starts when all its simulated members have arrived (arrivals at one
 * collective meet in order, as at a barrier) and lasts its analytic time; a send and its recv (k-th with k-th on
 * one source, destination and tag) start when both are there and last the
 * path time. This sweeps the streams, moving each as far as it can, until none
 * can move: the same times the SimGrid actors produce, without a context
 * switch per op. Not for memory ops (their high-water mark depends on the
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

typedef struct {
  long key;          /* (src * ranks + dst) * ntags + tag, or -1 */
  queue_t q;
} channel_t;

typedef struct {
  rp_t *rp;
  queue_t *colls;    /* per collective instance */
  channel_t *chans;  /* open addressing on key */
  size_t nchans;
  int **gtag;        /* per program, per tag: an id shared by programs */
  int ntags;
} sweep_t;

static void push(queue_t *q, arrival_t a) {
  if (q->n == q->cap) {
    q->cap = q->cap ? 2 * q->cap : 4;
    q->v = realloc(q->v, (size_t)q->cap * sizeof *q->v);
  }
  q->v[q->n++] = a;
}

static void resolve(rp_t *rp, int rank, int op, double ready_s, double end_s) {
  replay_span_t *sp = &rp->spans[rank][op];
  sp->ready_s = ready_s;
  sp->end_s = end_s;
  rp->rs[rank].done[op] = SWEEP_FINISHED;
}

/* Tag names made into ids shared by all programs (a send and its recv live in
 * different programs, each with its own tag table). */
static void share_tags(sweep_t *sw) {
  const trace_t *t = sw->rp->trace;
  const char **names = NULL;
  sw->gtag = calloc((size_t)t->nprograms, sizeof *sw->gtag);
  for (int pi = 0; pi < t->nprograms; pi++) {
    const trace_program_t *p = &t->programs[pi];
    sw->gtag[pi] = malloc(((size_t)p->ntags + 1) * sizeof **sw->gtag);
    for (int k = 0; k < p->ntags; k++) {
      int g = 0;
      while (g < sw->ntags && strcmp(names[g], p->tags[k]) != 0)
        g++;
      if (g == sw->ntags) {
        names = realloc(names, (size_t)(sw->ntags + 1) * sizeof *names);
        names[sw->ntags++] = p->tags[k];
      }
      sw->gtag[pi][k] = g;
    }
  }
  free(names);
}

static queue_t *channel(sweep_t *sw, long key) {
  size_t i = (size_t)(((uint64_t)key * 2654435761u) & (sw->nchans - 1));
  while (sw->chans[i].key != -1 && sw->chans[i].key != key)
    i = (i + 1) & (sw->nchans - 1);
  sw->chans[i].key = key;
  return &sw->chans[i].q;
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
    resolve(rp, q->v[k].rank, q->v[k].op, ready, ready + x->analytic_s);
  q->n = 0;
}

/* A send or recv arrives at `at`; it meets the oldest unmatched opposite op. */
static void arrive_p2p(sweep_t *sw, int rank, int pi, int i, double at) {
  rp_t *rp = sw->rp;
  const trace_op_t *op = &rp->trace->programs[pi].ops[i];
  bool send = op->type == TRACE_OP_SEND;
  int peer = trace_peer(op, rank), src = send ? rank : peer, dst = send ? peer : rank;
  long key = ((long)src * rp->trace->ranks + dst) * sw->ntags + sw->gtag[pi][op->tag];
  queue_t *q = channel(sw, key);
  if (q->n > 0 && (rp->trace->programs[rp->trace->program_of[q->v[0].rank]]
                       .ops[q->v[0].op].type == TRACE_OP_SEND) != send) {
    arrival_t other = q->v[0];
    memmove(q->v, q->v + 1, (size_t)(q->n - 1) * sizeof *q->v);
    q->n--;
    double ready = at > other.at_s ? at : other.at_s;
    double end = ready + replay_p2p_analytic_s(rp->topo, src, dst, op->bytes);
    resolve(rp, rank, i, ready, end);
    resolve(rp, other.rank, other.op, ready, end);
    return;
  }
  push(q, (arrival_t){rank, i, at});
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

typedef struct {
  int rank, pi, stream, next;
  double free_s;
} cursor_t;

static int next_on_stream(const trace_program_t *p, int stream, int i) {
  while (i < p->nops && p->ops[i].stream != stream)
    i++;
  return i;
}

/* Moves a stream as far as it can; returns whether it moved. */
static bool advance(sweep_t *sw, cursor_t *c) {
  rp_t *rp = sw->rp;
  const trace_program_t *p = &rp->trace->programs[c->pi];
  char *done = rp->rs[c->rank].done;
  replay_span_t *sp = rp->spans[c->rank];
  bool moved = false;
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
        resolve(rp, c->rank, i, start,
                start + (replay_timed_only(op->type) ? replay_timed_s(rp, c->pi, i) : 0));
    }
    if (done[i] != SWEEP_FINISHED)
      break;
    c->free_s = sp[i].end_s;
    c->next = next_on_stream(p, op->stream, i + 1);
    moved = true;
  }
  return moved;
}

int replay_sweep(rp_t *rp, const char *name, char *err, size_t len) {
  const trace_t *t = rp->trace;
  sweep_t sw = {.rp = rp};
  sw.colls = calloc((size_t)rp->ninsts + 1, sizeof *sw.colls);
  share_tags(&sw);
  int n = 0;
  long p2p = 0;
  for (int r = 0; r < t->ranks; r++)
    if (rp->simulated[r]) {
      const trace_program_t *p = &t->programs[t->program_of[r]];
      n += p->nstreams;
      for (int i = 0; i < p->nops; i++)
        p2p += p->ops[i].type == TRACE_OP_SEND || p->ops[i].type == TRACE_OP_RECV;
    }
  sw.nchans = 64;
  while (sw.nchans < 2 * (size_t)p2p + 2)
    sw.nchans *= 2;
  sw.chans = malloc(sw.nchans * sizeof *sw.chans);
  for (size_t i = 0; i < sw.nchans; i++)
    sw.chans[i] = (channel_t){.key = -1};
  cursor_t *cur = calloc((size_t)n + 1, sizeof *cur);
  n = 0;
  for (int r = 0; r < t->ranks; r++) {
    if (!rp->simulated[r])
      continue;
    const trace_program_t *p = &t->programs[t->program_of[r]];
    for (int s = 0; s < p->nstreams; s++)
      cur[n++] = (cursor_t){r, t->program_of[r], s, next_on_stream(p, s, 0), 0};
  }
  for (bool moved = true; moved;) {
    moved = false;
    for (int k = 0; k < n; k++)
      moved = advance(&sw, &cur[k]) || moved;
  }
  int rc = 0;
  for (int k = 0; k < n && rc == 0; k++)
    if (cur[k].next < t->programs[cur[k].pi].nops) {
      const trace_op_t *op = &t->programs[cur[k].pi].ops[cur[k].next];
      rc = -1;
      snprintf(err, len, "%s: rank %d op %d: expected every op to finish, found it waiting "
               "forever (a collective or peer that never comes)", name, cur[k].rank, op->id);
    }
  free(cur);
  for (int i = 0; i < rp->ninsts; i++)
    free(sw.colls[i].v);
  free(sw.colls);
  for (size_t i = 0; i < sw.nchans; i++)
    free(sw.chans[i].q.v);
  free(sw.chans);
  for (int pi = 0; pi < t->nprograms; pi++)
    free(sw.gtag[pi]);
  free(sw.gtag);
  return rc;
}
