/* serve_sched.c - one attention group's next batch: which running sequences
 * decode, which prompts (or parts of them) prefill, who is preempted when KV
 * blocks run out; see serve_sim.h for the policy. */
#include <string.h>

#include "serve_state.h"

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
  s->seqs[r].in_batch = true;
  s->oom |= !list_add(&g->sched, r);
}

static void remove_running(group_t *g, long r) {
  long k = 0;
  for (long i = 0; i < g->running.n; i++)
    if (g->running.v[i] != r)
      g->running.v[k++] = g->running.v[i];
  g->running.n = k;
}

/* Takes r out of its running batch and frees its blocks: swapped to host (its
 * cache kept, the copy's time on en's iteration, the one that needs the
 * blocks), or to be prefilled again. r may belong to another virtual engine
 * of the instance: its group gi draws on the same blocks. */
static void preempt(sim_t *s, inst_t *in, engine_t *en, int gi, long r, bool swap) {
  seq_t *q = &s->seqs[r];
  group_t *g = &in->engines[q->engine].groups[gi];
  remove_running(g, r);
  q->running = false;
  in->free_blocks[gi] += q->blocks;
  q->blocks = 0;
  if (swap) {
    en->extra_s += kv_bytes(in, q->cached) / s->cfg->swap_bytes_per_s;
    s->oom |= !dq_push(&g->swapped, r, true);
  } else {
    q->cached = q->shared; /* the prefix's blocks stay cached */
    q->target = s->reqs->v[r].prompt_tokens + q->generated;
    s->oom |= !dq_push(&g->waiting, r, true);
  }
  s->out->req[r].preemptions++;
  s->out->preemptions++;
}

/* Preempts the youngest (last admitted) running sequence of the pool of
 * blocks that group gi of every virtual engine shares, if it is younger than
 * self and in no batch (the one being scheduled, or another engine's in
 * flight); false if there is none (self is the youngest: vLLM would preempt
 * self). Looking past this engine's own group matters with pp > 1: two
 * half-prefilled prompts of two engines could otherwise each hold half the
 * blocks and wait for the other forever; here the older one takes the
 * younger's blocks. */
static bool preempt_younger(sim_t *s, inst_t *in, engine_t *en, int gi, long self) {
  long victim = -1;
  for (int e = 0; e < in->pool->plan->pp; e++) {
    const group_t *g = &in->engines[e].groups[gi];
    /* a running list is in admission order: its last candidate is its youngest */
    for (long i = g->running.n - 1; i >= 0; i--) {
      long r = g->running.v[i];
      if (r == self || s->seqs[r].in_batch)
        continue;
      if (victim < 0 || s->seqs[r].admitted > s->seqs[victim].admitted)
        victim = r;
      break;
    }
  }
  if (victim < 0 || s->seqs[victim].admitted < s->seqs[self].admitted)
    return false;
  preempt(s, in, en, gi, victim, s->cfg->preemption == SERVE_PREEMPT_SWAP);
  return true;
}

/* Takes blocks so that r holds enough for tokens; false when none are free. */
static bool take_blocks(sim_t *s, inst_t *in, int gi, seq_t *q, long tokens) {
  long need = serve_blocks_for(s, q, tokens) - q->blocks;
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
  int tokens = chunk ? chunk : serve_spec_verify_tokens(s->cfg); /* a decode: as schedule_decodes */
  if (!take_blocks(s, in, gi, q, q->cached + tokens))
    return false;
  q->running = true;
  q->admitted = s->admissions++;
  s->oom |= !list_add(&g->running, r);
  sched_add(s, g, r, chunk, q->cached);
  *budget -= tokens;
  return true;
}

/* The running sequences that decode, each a new block when its last is full
 * (preempting the youngest when none is free). */
static void schedule_decodes(sim_t *s, inst_t *in, engine_t *en, group_t *g, int gi, int *budget) {
  const serving_cfg_t *cfg = s->cfg;
  int step = serve_spec_verify_tokens(cfg); /* tokens each decode writes to the cache */
  for (long i = 0; i < g->running.n && g->sched.n<cfg->max_num_seqs && * budget> 0; i++) {
    long r = g->running.v[i];
    seq_t *q = &s->seqs[r];
    if (!serve_decoding(q))
      continue;
    while (!take_blocks(s, in, gi, q, q->cached + step))
      if (!preempt_younger(s, in, en, gi, r))
        break;
    while (g->running.v[i] != r) /* a victim before r moved it down */
      i--;
    if (q->blocks < serve_blocks_for(s, q, q->cached + step)) {
      /* nothing younger left: r itself goes, recomputed (swapping it out to swap it
       * back in would free nothing) */
      preempt(s, in, en, gi, r, false);
      i--;
      continue;
    }
    sched_add(s, g, r, 0, q->cached);
    *budget -= step;
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
    q->admitted = s->admissions++;
    s->oom |= !list_add(&g->running, r);
  }
}

/* Prefill: running sequences with part of their prompt left, then new ones
 * from the queue, chunks filling the budget (whole prompts without chunking). */
static void schedule_prefills(sim_t *s, inst_t *in, engine_t *en, group_t *g, int gi, int *budget) {
  const serving_cfg_t *cfg = s->cfg;
  bool whole = !cfg->chunked_prefill;
  for (long i = 0; i<g->running.n && * budget> 0 && !whole; i++) {
    long r = g->running.v[i];
    seq_t *q = &s->seqs[r];
    if (serve_decoding(q) || q->in_batch)
      continue;
    int chunk = q->target - q->cached < *budget ? q->target - q->cached : *budget;
    /* a prompt part-way through takes its blocks from younger sequences rather than
     * stall: with every block held by unfinished prompts none could go on */
    while (!take_blocks(s, in, gi, q, q->cached + chunk))
      if (!preempt_younger(s, in, en, gi, r))
        break;
    while (i >= g->running.n || g->running.v[i] != r) /* a victim before r moved it down */
      i--;
    if (q->blocks < serve_blocks_for(s, q, q->cached + chunk))
      break;
    sched_add(s, g, r, chunk, q->cached);
    *budget -= chunk;
  }
  while (g->waiting.n && *budget > 0 && g->sched.n < cfg->max_num_seqs) {
    long r = dq_front(&g->waiting);
    seq_t *q = &s->seqs[r];
    int left = q->target - q->cached;
    if (serve_decoding(q)) /* arrived with its cache (disaggregated): decodes */
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
  if (!s->cfg->chunked_prefill && g->waiting.n &&
      !serve_decoding(&s->seqs[dq_front(&g->waiting)])) {
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
  int step = serve_spec_verify_tokens(s->cfg);
  b->verify = step;
  for (long i = 0; i < g->sched.n; i++) {
    const seq_t *q = &s->seqs[g->sched.v[i]];
    if (g->chunk[i] == 0) {
      b->decodes++;
      b->decode_ctx += q->cached + step;
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

void serve_sched_group(sim_t *s, inst_t *in, engine_t *en, group_t *g, int gi) {
  schedule_group(s, in, en, g, gi);
  describe_batch(s, g);
}
