/* serve_state.h - the state of a serving simulation, shared by the event loop
 * (serve_sim.c) and the batch scheduler (serve_sched.c); not an interface:
 * nothing outside sim/serve/ includes it. Requests are sequences (seq_t) held
 * by attention groups (group_t) of virtual engines (engine_t) of instances
 * (inst_t); queues are growable arrays of request ids. */
#ifndef NPUSIM_SERVE_STATE_H
#define NPUSIM_SERVE_STATE_H

#include <stdbool.h>
#include <stdlib.h>

#include "serve_sim.h"

/* ---- growable queues of request ids ---- */

typedef struct {
  long *v;
  long head, n, cap;
} deque_t;

static inline bool serve_grow(void **v, long *cap, size_t elem) {
  long c = *cap ? *cap * 2 : 16;
  void *p = realloc(*v, (size_t)c * elem);
  if (!p)
    return false;
  *v = p;
  *cap = c;
  return true;
}

static inline bool dq_push(deque_t *q, long x, bool front) {
  if (q->n == q->cap) {
    long old = q->cap;
    if (!serve_grow((void **)&q->v, &q->cap, sizeof(long)))
      return false;
    /* unwrap: the part before head moves after the old end */
    for (long i = 0; i < q->head; i++)
      q->v[old + i] = q->v[i];
    if (old == 0)
      q->head = 0;
  }
  if (front) {
    q->head = (q->head - 1 + q->cap) % q->cap;
    q->v[q->head] = x;
  } else {
    q->v[(q->head + q->n) % q->cap] = x;
  }
  q->n++;
  return true;
}

static inline long dq_front(const deque_t *q) {
  return q->v[q->head];
}

static inline void dq_pop(deque_t *q) {
  q->head = (q->head + 1) % q->cap;
  q->n--;
}

typedef struct {
  long *v;
  long n, cap;
} list_t;

static inline bool list_add(list_t *l, long x) {
  if (l->n == l->cap && !serve_grow((void **)&l->v, &l->cap, sizeof(long)))
    return false;
  l->v[l->n++] = x;
  return true;
}

/* ---- state ---- */

typedef struct {
  int inst, engine, group; /* where it is now */
  int target;              /* tokens to have cached before it decodes */
  int cached;              /* tokens in its KV cache */
  int generated;
  long blocks; /* KV blocks held */
  bool running, done;
  bool in_batch; /* in its group's batch being scheduled or run */
  long admitted; /* when it last joined a running batch (sim_t.admissions): its age */
  int shared;    /* prompt tokens in the cached prefix's blocks, held in common (prefix_cache) */
  double spec_credit; /* speculative decoding: expected tokens not yet generated, below 1 */
  double arrival_s, first_token_s; /* on the clock of its busy stretch */
} seq_t;

typedef struct {
  deque_t waiting, swapped;
  list_t running;
  list_t sched;      /* this iteration's sequences */
  int *chunk, *past; /* per scheduled: prefill tokens (0: a decode), tokens before */
  long chunk_cap;
  serve_group_batch_t batch;
  long load; /* waiting + running + swapped */
} group_t;

typedef struct {
  group_t *groups;
  bool busy;
  double start_s, extra_s; /* the iteration's start; swap time it carries */
} engine_t;

typedef struct {
  const serve_sim_pool_t *pool;
  int first_rank, npus;
  engine_t *engines; /* pp */
  long *free_blocks; /* per attention group */
  double *stage_free, *stage_s;
  serve_group_batch_t *batches; /* per attention group: the iteration being costed */
  long outstanding;
  double egress_free, ingress_free;
} inst_t;

enum { EV_ITER_DONE, EV_KV_DONE };

typedef struct {
  double t;
  long order; /* ties: first pushed, first out */
  int type, inst, engine;
  long req;
} event_t;

typedef struct {
  event_t *v;
  long n, cap, pushed;
} heap_t;

typedef struct {
  const serving_cfg_t *cfg;
  const topo_t *topo;
  const serve_requests_t *reqs;
  const serve_sim_opts_t *opts;
  serve_sim_result_t *out;
  seq_t *seqs;
  inst_t *insts;
  int ninsts;
  int first_of[SERVE_POOL_DECODE + 1], count_of[SERVE_POOL_DECODE + 1]; /* instances by kind */
  heap_t events;
  long log_cap;
  bool oom;
  long admissions; /* sequences admitted to a running batch so far */
  long active;     /* requests arrived and not finished */
  double first_s;  /* the first arrival (absolute) */
  double epoch_s;  /* the arrival (absolute) the clock counts from: 0 there */
} sim_t;

/* Schedules group g's next batch (engine en of instance in): decodes, swap-ins
 * and prefill chunks as serve_sim.h describes, preempting when blocks run out;
 * its shape to g->batch, its sequences to g->sched (prefills first). */
void serve_sched_group(sim_t *s, inst_t *in, engine_t *en, group_t *g, int gi);

/* Whether a sequence has its whole prompt cached and generates. */
static inline bool serve_decoding(const seq_t *q) {
  return q->generated > 0 && q->cached >= q->target;
}

/* KV blocks of block_tokens that tokens of sequence q need beyond the shared
 * prefix's (prefix caching: those are held once per group, not per sequence). */
static inline long serve_blocks_for(const sim_t *s, const seq_t *q, long tokens) {
  long own = tokens - q->shared;
  return own > 0 ? (own + s->cfg->block_tokens - 1) / s->cfg->block_tokens : 0;
}

#endif
