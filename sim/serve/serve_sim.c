/* serve_sim.c - the request-level event loop of serving; see serve_sim.h. */
#include "serve_sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const serve_pool_kind_names[SERVE_POOL_DECODE + 1] = {"colocated", "prefill", "decode"};

const char *const serve_pool_paths[SERVE_POOL_DECODE + 1] = {"serving.parallel", "serving.prefill",
                                                             "serving.decode"};

int serve_sim_pools(const serving_cfg_t *cfg, serve_sim_pool_t pools[2]) {
  if (!cfg->disaggregated) {
    pools[0] = (serve_sim_pool_t){SERVE_POOL_COLOCATED, &cfg->colocated, NULL, 0};
    return 1;
  }
  pools[0] = (serve_sim_pool_t){SERVE_POOL_PREFILL, &cfg->prefill, NULL, 0};
  pools[1] = (serve_sim_pool_t){SERVE_POOL_DECODE, &cfg->decode, NULL,
                                (int)(serve_pool_npus(&cfg->prefill) * cfg->prefill.instances)};
  return 2;
}

/* ---- growable queues of request ids ---- */

typedef struct {
  long *v;
  long head, n, cap;
} deque_t;

static bool grow(void **v, long *cap, size_t elem) {
  long c = *cap ? *cap * 2 : 16;
  void *p = realloc(*v, (size_t)c * elem);
  if (!p)
    return false;
  *v = p;
  *cap = c;
  return true;
}

static bool dq_push(deque_t *q, long x, bool front) {
  if (q->n == q->cap) {
    long old = q->cap;
    if (!grow((void **)&q->v, &q->cap, sizeof(long)))
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

static long dq_front(const deque_t *q) {
  return q->v[q->head];
}

static void dq_pop(deque_t *q) {
  q->head = (q->head + 1) % q->cap;
  q->n--;
}

typedef struct {
  long *v;
  long n, cap;
} list_t;

static bool list_add(list_t *l, long x) {
  if (l->n == l->cap && !grow((void **)&l->v, &l->cap, sizeof(long)))
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

static bool ev_less(const event_t *a, const event_t *b) {
  return a->t < b->t || (a->t == b->t && a->order < b->order);
}

static bool heap_push(heap_t *h, event_t e) {
  if (h->n == h->cap && !grow((void **)&h->v, &h->cap, sizeof(event_t)))
    return false;
  e.order = h->pushed++;
  long i = h->n++;
  while (i > 0 && ev_less(&e, &h->v[(i - 1) / 2])) {
    h->v[i] = h->v[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h->v[i] = e;
  return true;
}

static event_t heap_pop(heap_t *h) {
  event_t top = h->v[0], last = h->v[--h->n];
  long i = 0;
  for (;;) {
    long c = 2 * i + 1;
    if (c >= h->n)
      break;
    if (c + 1 < h->n && ev_less(&h->v[c + 1], &h->v[c]))
      c++;
    if (!ev_less(&h->v[c], &last))
      break;
    h->v[i] = h->v[c];
    i = c;
  }
  h->v[i] = last;
  return top;
}

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
} sim_t;

static long blocks_for(const sim_t *s, long tokens) {
  return (tokens + s->cfg->block_tokens - 1) / s->cfg->block_tokens;
}

static bool decoding(const seq_t *q) {
  return q->generated > 0 && q->cached >= q->target;
}

/* The instance of kind with the fewest outstanding requests (the first on a tie). */
static int pick_instance(const sim_t *s, serve_pool_kind_t kind) {
  int best = s->first_of[kind];
  for (int i = best + 1; i < s->first_of[kind] + s->count_of[kind]; i++)
    if (s->insts[i].outstanding < s->insts[best].outstanding)
      best = i;
  return best;
}

/* Queues request r at instance i, on its least loaded engine and group. */
static void enqueue(sim_t *s, int i, long r) {
  inst_t *in = &s->insts[i];
  const serve_pool_t *p = in->pool->plan;
  int be = 0, bg = 0;
  for (int e = 0; e < p->pp; e++)
    for (int g = 0; g < p->dp; g++)
      if (in->engines[e].groups[g].load < in->engines[be].groups[bg].load)
        be = e, bg = g;
  seq_t *q = &s->seqs[r];
  q->inst = i;
  q->engine = be;
  q->group = bg;
  group_t *gr = &in->engines[be].groups[bg];
  gr->load++;
  in->outstanding++;
  s->oom |= !dq_push(&gr->waiting, r, false);
}

/* ---- scheduling one group's batch ---- */

static double kv_bytes(const inst_t *in, long tokens) {
  return (double)tokens * serve_cost_memory(in->pool->cost)->kv_per_token;
}

static void sched_add(sim_t *s, group_t *g, long r, int chunk, int past) {
  if (g->sched.n == g->chunk_cap) {
    long cap = g->chunk_cap ? g->chunk_cap * 2 : 16;
    int *c = realloc(g->chunk, (size_t)cap * sizeof *c),
        *p = c ? realloc(g->past, (size_t)cap * sizeof *p) : NULL;
    if (c)
      g->chunk = c;
    if (!c || !p) {
      s->oom = true;
      return;
    }
    g->past = p;
    g->chunk_cap = cap;
  }
  g->chunk[g->sched.n] = chunk;
  g->past[g->sched.n] = past;
  s->oom |= !list_add(&g->sched, r);
}

static bool scheduled(const group_t *g, long r) {
  for (long i = 0; i < g->sched.n; i++)
    if (g->sched.v[i] == r)
      return true;
  return false;
}

static void remove_running(group_t *g, long r) {
  long k = 0;
  for (long i = 0; i < g->running.n; i++)
    if (g->running.v[i] != r)
      g->running.v[k++] = g->running.v[i];
  g->running.n = k;
}

/* Takes r out of the running batch and frees its blocks: swapped to host (its
 * cache kept, the copy's time on this iteration), or to be prefilled again. */
static void preempt(sim_t *s, inst_t *in, engine_t *en, group_t *g, int gi, long r, bool swap) {
  seq_t *q = &s->seqs[r];
  remove_running(g, r);
  q->running = false;
  in->free_blocks[gi] += q->blocks;
  q->blocks = 0;
  if (swap) {
    en->extra_s += kv_bytes(in, q->cached) / s->cfg->swap_bytes_per_s;
    s->oom |= !dq_push(&g->swapped, r, true);
  } else {
    q->cached = 0;
    q->target = s->reqs->v[r].prompt_tokens + q->generated;
    s->oom |= !dq_push(&g->waiting, r, true);
  }
  s->out->req[r].preemptions++;
  s->out->preemptions++;
}

/* Preempts the youngest running sequence that is neither in this batch nor
 * self; false if there is none. */
static bool preempt_younger(sim_t *s, inst_t *in, engine_t *en, group_t *g, int gi, long self) {
  for (long i = g->running.n - 1; i >= 0; i--) {
    long r = g->running.v[i];
    if (r == self || scheduled(g, r))
      continue;
    preempt(s, in, en, g, gi, r, s->cfg->preemption == SERVE_PREEMPT_SWAP);
    return true;
  }
  return false;
}

/* Takes blocks so that r holds enough for tokens; false when none are free. */
static bool take_blocks(sim_t *s, inst_t *in, int gi, seq_t *q, long tokens) {
  long need = blocks_for(s, tokens) - q->blocks;
  if (need > in->free_blocks[gi])
    return false;
  if (need > 0) {
    in->free_blocks[gi] -= need;
    q->blocks += need;
  }
  return true;
}

/* Admits request r of the queue's front into the running batch with a chunk
 * (0: a decode); false when its blocks are not free. */
static bool admit(sim_t *s, inst_t *in, group_t *g, int gi, long r, int chunk, int *budget) {
  seq_t *q = &s->seqs[r];
  if (!take_blocks(s, in, gi, q, q->cached + (chunk ? chunk : 1)))
    return false;
  q->running = true;
  s->oom |= !list_add(&g->running, r);
  sched_add(s, g, r, chunk, q->cached);
  *budget -= chunk ? chunk : 1;
  return true;
}

/* The running sequences that decode, each a new block when its last is full
 * (preempting the youngest when none is free). */
static void schedule_decodes(sim_t *s, inst_t *in, engine_t *en, group_t *g, int gi, int *budget) {
  const serving_cfg_t *cfg = s->cfg;
  for (long i = 0; i < g->running.n && g->sched.n<cfg->max_num_seqs && * budget> 0; i++) {
    long r = g->running.v[i];
    seq_t *q = &s->seqs[r];
    if (!decoding(q))
      continue;
    while (!take_blocks(s, in, gi, q, q->cached + 1))
      if (!preempt_younger(s, in, en, g, gi, r))
        break;
    while (g->running.v[i] != r) /* a victim before r moved it down */
      i--;
    if (q->blocks < blocks_for(s, q->cached + 1)) {
      /* nothing younger left: r itself goes, recomputed (swapping it out to swap it
       * back in would free nothing) */
      preempt(s, in, en, g, gi, r, false);
      i--;
      continue;
    }
    sched_add(s, g, r, 0, q->cached);
    (*budget)--;
  }
}

/* Swapped-out sequences come back first when their blocks are free. */
static void schedule_swap_ins(sim_t *s, inst_t *in, engine_t *en, group_t *g, int gi) {
  while (g->swapped.n && g->sched.n < s->cfg->max_num_seqs) {
    long r = dq_front(&g->swapped);
    seq_t *q = &s->seqs[r];
    if (!take_blocks(s, in, gi, q, q->cached + 1))
      break;
    dq_pop(&g->swapped);
    en->extra_s += kv_bytes(in, q->cached) / s->cfg->swap_bytes_per_s;
    q->running = true;
    s->oom |= !list_add(&g->running, r);
  }
}

/* Prefill: running sequences with part of their prompt left, then new ones
 * from the queue, chunks filling the budget (whole prompts without chunking). */
static void schedule_prefills(sim_t *s, inst_t *in, engine_t *en, group_t *g, int gi,
                              int *budget) {
  const serving_cfg_t *cfg = s->cfg;
  bool whole = !cfg->chunked_prefill;
  for (long i = 0; i < g->running.n && *budget > 0 && !whole; i++) {
    long r = g->running.v[i];
    seq_t *q = &s->seqs[r];
    if (decoding(q) || scheduled(g, r))
      continue;
    int chunk = q->target - q->cached < *budget ? q->target - q->cached : *budget;
    /* a prompt part-way through takes its blocks from younger sequences rather than
     * stall: with every block held by unfinished prompts none could go on */
    while (!take_blocks(s, in, gi, q, q->cached + chunk))
      if (!preempt_younger(s, in, en, g, gi, r))
        break;
    while (i >= g->running.n || g->running.v[i] != r) /* a victim before r moved it down */
      i--;
    if (q->blocks < blocks_for(s, q->cached + chunk))
      break;
    sched_add(s, g, r, chunk, q->cached);
    *budget -= chunk;
  }
  while (g->waiting.n && *budget > 0 && g->sched.n < cfg->max_num_seqs) {
    long r = dq_front(&g->waiting);
    seq_t *q = &s->seqs[r];
    int left = q->target - q->cached;
    if (decoding(q)) /* arrived with its cache (disaggregated): decodes */
      left = 0;
    else if (left > *budget && whole && (g->sched.n > 0 || q->generated == 0))
      break; /* a recomputed sequence longer than the budget goes alone, whole */
    int chunk = left < *budget || whole ? left : *budget;
    if (!admit(s, in, g, gi, r, chunk, budget))
      break;
    dq_pop(&g->waiting);
  }
}

static void schedule_group(sim_t *s, inst_t *in, engine_t *en, group_t *g, int gi) {
  g->sched.n = 0;
  int budget = s->cfg->max_batched_tokens;
  schedule_swap_ins(s, in, en, g, gi);
  /* vLLM V0 without chunking: waiting prompts go first, alone in their iteration */
  if (!s->cfg->chunked_prefill && g->waiting.n && !decoding(&s->seqs[dq_front(&g->waiting)])) {
    schedule_prefills(s, in, en, g, gi, &budget);
    if (g->sched.n)
      return;
  }
  schedule_decodes(s, in, en, g, gi, &budget);
  schedule_prefills(s, in, en, g, gi, &budget);
}

/* The batch shape of a group's scheduled sequences. */
static void describe_batch(sim_t *s, group_t *g) {
  serve_group_batch_t *b = &g->batch;
  *b = (serve_group_batch_t){0};
  long np = 0;
  for (long i = 0; i < g->sched.n; i++) {
    const seq_t *q = &s->seqs[g->sched.v[i]];
    if (g->chunk[i] == 0) {
      b->decodes++;
      b->decode_ctx += q->cached + 1;
      b->samples++;
    } else {
      /* prefills first in chunk/past: move this one to slot np */
      int c = g->chunk[i], p = g->past[i];
      long r = g->sched.v[i];
      g->chunk[i] = g->chunk[np];
      g->past[i] = g->past[np];
      g->sched.v[i] = g->sched.v[np];
      g->chunk[np] = c;
      g->past[np] = p;
      g->sched.v[np] = r;
      np++;
      b->samples += p + c >= q->target;
    }
  }
  b->prefills = (int)np;
  b->chunk = g->chunk;
  b->past = g->past;
}

/* ---- iterations ---- */

static long used_blocks(const inst_t *in) {
  long used = 0;
  for (int g = 0; g < in->pool->plan->dp; g++)
    used += serve_cost_memory(in->pool->cost)->kv_blocks - in->free_blocks[g];
  return used;
}

static long waiting_at(const inst_t *in) {
  long w = 0;
  for (int e = 0; e < in->pool->plan->pp; e++)
    for (int g = 0; g < in->pool->plan->dp; g++)
      w += in->engines[e].groups[g].waiting.n;
  return w;
}

/* Starts an iteration of engine e of instance i at time now, if it has work. */
static void try_start(sim_t *s, int i, int e, double now) {
  inst_t *in = &s->insts[i];
  engine_t *en = &in->engines[e];
  const serve_pool_t *p = in->pool->plan;
  if (en->busy)
    return;
  en->extra_s = 0;
  int decodes = 0, prefills = 0, tokens = 0;
  serve_group_batch_t *batches = malloc((size_t)p->dp * sizeof *batches);
  if (!batches) {
    s->oom = true;
    return;
  }
  for (int g = 0; g < p->dp; g++) {
    group_t *gr = &en->groups[g];
    schedule_group(s, in, en, gr, g);
    describe_batch(s, gr);
    batches[g] = gr->batch;
    decodes += gr->batch.decodes;
    prefills += gr->batch.prefills;
    tokens += gr->batch.decodes;
    for (int k = 0; k < gr->batch.prefills; k++)
      tokens += gr->batch.chunk[k];
  }
  if (decodes + prefills == 0) {
    free(batches);
    return;
  }
  serve_parts_t parts;
  serve_cost_iteration(in->pool->cost, batches, in->stage_s, &parts);
  free(batches);
  double t = now + en->extra_s;
  for (int st = 0; st < p->pp; st++) {
    double start = fmax(t, in->stage_free[st]);
    t = start + in->stage_s[st];
    in->stage_free[st] = t;
  }
  en->busy = true;
  en->start_s = now;
  serve_sim_result_t *o = s->out;
  o->iterations++;
  serve_step_stats_t *kind = prefills == 0 ? &o->decode : decodes == 0 ? &o->prefill : NULL;
  if (kind) {
    for (int k = 0; k < SERVE_PART_COUNT; k++)
      kind->parts.s[k] += parts.s[k];
    kind->iterations++;
    kind->batch_sum += prefills == 0 ? decodes : tokens;
  }
  if (s->opts->log_iterations) {
    if (o->nlog == s->log_cap && !grow((void **)&o->log, &s->log_cap, sizeof *o->log)) {
      s->oom = true;
    } else {
      o->log[o->nlog++] =
          (serve_iter_log_t){i, e, now, t, decodes, prefills, tokens, 0, waiting_at(in)};
    }
  }
  s->oom |= !heap_push(&s->events, (event_t){.t = t, .type = EV_ITER_DONE, .inst = i, .engine = e});
}

static void kick(sim_t *s, int i, double now) {
  for (int e = 0; e < s->insts[i].pool->plan->pp; e++)
    try_start(s, i, e, now);
}

/* A prefill instance's request leaves for a decode instance: its cache goes
 * over the fabric, one transfer at a time per sender and per receiver. */
static void send_kv(sim_t *s, int i, long r, double now) {
  int d = pick_instance(s, SERVE_POOL_DECODE);
  inst_t *src = &s->insts[i], *dst = &s->insts[d];
  double start = fmax(now, fmax(src->egress_free, dst->ingress_free));
  double dur = serve_cost_kv_transfer_s(src->pool->cost, s->topo, src->first_rank, dst->first_rank,
                                        dst->npus, s->seqs[r].cached);
  src->egress_free = dst->ingress_free = start + dur;
  s->out->kv_transfers++;
  s->out->kv_transfer_s += dur;
  dst->outstanding++; /* reserved now, so the next transfers spread */
  s->oom |=
      !heap_push(&s->events, (event_t){.t = start + dur, .type = EV_KV_DONE, .inst = d, .req = r});
}

static void finish(sim_t *s, inst_t *in, group_t *g, seq_t *q, long r, double now) {
  in->free_blocks[q->group] += q->blocks;
  q->blocks = 0;
  q->done = true;
  q->running = false;
  g->load--;
  in->outstanding--;
  s->out->req[r].finish_s = now;
  progress_step(s->opts->progress, 1, now);
}

static void iteration_done(sim_t *s, const event_t *ev) {
  inst_t *in = &s->insts[ev->inst];
  engine_t *en = &in->engines[ev->engine];
  bool prefill_pool = in->pool->kind == SERVE_POOL_PREFILL;
  en->busy = false;
  for (int gi = 0; gi < in->pool->plan->dp; gi++) {
    group_t *g = &en->groups[gi];
    for (long k = 0; k < g->sched.n; k++) {
      long r = g->sched.v[k];
      seq_t *q = &s->seqs[r];
      serve_req_result_t *res = &s->out->req[r];
      q->cached += g->chunk[k] ? g->chunk[k] : 1;
      if (g->chunk[k] == 0 || q->cached >= q->target) {
        q->generated++;
        if (q->generated == 1)
          res->first_token_s = ev->t;
      }
      if (q->generated >= res->output_tokens) {
        finish(s, in, g, q, r, ev->t);
      } else if (prefill_pool && decoding(q)) {
        /* leaves the running batch; its blocks stay until the cache is sent */
        q->running = false;
        send_kv(s, ev->inst, r, ev->t);
      }
    }
    long k = 0;
    for (long j = 0; j < g->running.n; j++)
      if (s->seqs[g->running.v[j]].running)
        g->running.v[k++] = g->running.v[j];
    g->running.n = k;
    g->sched.n = 0;
  }
  if (s->opts->log_iterations && s->out->nlog > 0) {
    /* the KV use after the iteration, on its log row (the latest of this engine) */
    for (long j = s->out->nlog - 1; j >= 0; j--)
      if (s->out->log[j].instance == ev->inst && s->out->log[j].engine == ev->engine) {
        s->out->log[j].kv_used_blocks = used_blocks(in);
        break;
      }
  }
  kick(s, ev->inst, ev->t);
}

static void kv_done(sim_t *s, const event_t *ev) {
  seq_t *q = &s->seqs[ev->req];
  inst_t *src = &s->insts[q->inst];
  group_t *g = &src->engines[q->engine].groups[q->group];
  src->free_blocks[q->group] += q->blocks;
  q->blocks = 0;
  g->load--;
  src->outstanding--;
  kick(s, q->inst, ev->t);
  s->insts[ev->inst].outstanding--; /* enqueue counts it again */
  enqueue(s, ev->inst, ev->req);
  kick(s, ev->inst, ev->t);
}

/* ---- setup ---- */

static int build(sim_t *s, const serve_sim_pool_t *pools, int npools) {
  for (int k = 0; k < npools; k++) {
    s->first_of[pools[k].kind] = s->ninsts;
    s->count_of[pools[k].kind] = pools[k].plan->instances;
    s->ninsts += pools[k].plan->instances;
  }
  s->insts = calloc((size_t)s->ninsts, sizeof *s->insts);
  s->seqs = calloc((size_t)s->reqs->n, sizeof *s->seqs);
  s->out->req = calloc((size_t)s->reqs->n, sizeof *s->out->req);
  if (!s->insts || !s->seqs || !s->out->req)
    return -1;
  int i = 0;
  for (int k = 0; k < npools; k++) {
    const serve_pool_t *p = pools[k].plan;
    for (int j = 0; j < p->instances; j++, i++) {
      inst_t *in = &s->insts[i];
      in->pool = &pools[k];
      in->npus = (int)serve_pool_npus(p);
      in->first_rank = pools[k].first_rank + j * in->npus;
      in->engines = calloc((size_t)p->pp, sizeof *in->engines);
      in->free_blocks = calloc((size_t)p->dp, sizeof *in->free_blocks);
      in->stage_free = calloc((size_t)p->pp, sizeof *in->stage_free);
      in->stage_s = calloc((size_t)p->pp, sizeof *in->stage_s);
      if (!in->engines || !in->free_blocks || !in->stage_free || !in->stage_s)
        return -1;
      for (int g = 0; g < p->dp; g++)
        in->free_blocks[g] = serve_cost_memory(pools[k].cost)->kv_blocks;
      for (int e = 0; e < p->pp; e++)
        if (!(in->engines[e].groups = calloc((size_t)p->dp, sizeof(group_t))))
          return -1;
    }
  }
  for (long r = 0; r < s->reqs->n; r++) {
    const serve_request_t *q = &s->reqs->v[r];
    s->seqs[r].target = q->prompt_tokens;
    s->out->req[r] =
        (serve_req_result_t){q->arrival_s, NAN, NAN, q->prompt_tokens, q->output_tokens, 0};
  }
  return 0;
}

static void teardown(sim_t *s) {
  for (int i = 0; s->insts && i < s->ninsts; i++) {
    inst_t *in = &s->insts[i];
    for (int e = 0; in->engines && e < in->pool->plan->pp; e++)
      for (int g = 0; in->engines[e].groups && g < in->pool->plan->dp; g++) {
        group_t *gr = &in->engines[e].groups[g];
        free(gr->waiting.v);
        free(gr->swapped.v);
        free(gr->running.v);
        free(gr->sched.v);
        free(gr->chunk);
        free(gr->past);
      }
    for (int e = 0; in->engines && e < in->pool->plan->pp; e++)
      free(in->engines[e].groups);
    free(in->engines);
    free(in->free_blocks);
    free(in->stage_free);
    free(in->stage_s);
  }
  free(s->insts);
  free(s->seqs);
  free(s->events.v);
}

int serve_sim_run(const serving_cfg_t *cfg, const serve_sim_pool_t *pools, int npools,
                  const topo_t *topo, const serve_requests_t *reqs, const serve_sim_opts_t *opts,
                  serve_sim_result_t *out, char *err, size_t err_len) {
  memset(out, 0, sizeof *out);
  sim_t s = {cfg, topo, reqs, opts, out, NULL, NULL, 0, {0}, {0}, {0}, 0, false};
  out->nreq = reqs->n;
  if (build(&s, pools, npools)) {
    teardown(&s);
    serve_sim_result_free(out);
    return snprintf(err, err_len, "serve: out of memory for %ld requests", reqs->n), -1;
  }
  serve_pool_kind_t entry = cfg->disaggregated ? SERVE_POOL_PREFILL : SERVE_POOL_COLOCATED;
  long next = 0;
  while (!s.oom && (next < reqs->n || s.events.n)) {
    if (next < reqs->n && (s.events.n == 0 || reqs->v[next].arrival_s <= s.events.v[0].t)) {
      double now = reqs->v[next].arrival_s;
      int i = pick_instance(&s, entry);
      enqueue(&s, i, next++);
      kick(&s, i, now);
      continue;
    }
    event_t ev = heap_pop(&s.events);
    if (ev.type == EV_ITER_DONE)
      iteration_done(&s, &ev);
    else
      kv_done(&s, &ev);
  }
  double first = reqs->n ? reqs->v[0].arrival_s : 0, last = first;
  for (long r = 0; r < reqs->n; r++)
    last = fmax(last, out->req[r].finish_s);
  out->makespan_s = last - first;
  teardown(&s);
  if (s.oom) {
    serve_sim_result_free(out);
    return snprintf(err, err_len, "serve: out of memory during the simulation"), -1;
  }
  return 0;
}

void serve_sim_result_free(serve_sim_result_t *r) {
  free(r->req);
  free(r->log);
  r->req = NULL;
  r->log = NULL;
}
