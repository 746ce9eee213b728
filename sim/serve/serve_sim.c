/* serve_sim.c - the request-level event loop of serving; see serve_sim.h. */
#include "serve_sim.h"
#include "serve_state.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jsonfile.h"

const char *const serve_pool_kind_names[SERVE_POOL_DECODE + 1] = {"colocated", "prefill", "decode"};

const char *const serve_pool_paths[SERVE_POOL_DECODE + 1] = {"serving.parallel", "serving.prefill",
                                                             "serving.decode"};

int serve_sim_pools(const serving_cfg_t *cfg, serve_sim_pool_t pools[2]) {
  if (!cfg->disaggregated) {
    pools[0] = (serve_sim_pool_t){SERVE_POOL_COLOCATED, &cfg->colocated, NULL, 0, NULL};
    return 1;
  }
  pools[0] = (serve_sim_pool_t){SERVE_POOL_PREFILL, &cfg->prefill, NULL, 0, NULL};
  pools[1] =
      (serve_sim_pool_t){SERVE_POOL_DECODE, &cfg->decode, NULL,
                         (int)(serve_pool_npus(&cfg->prefill) * cfg->prefill.instances), NULL};
  return 2;
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
  serve_req_result_t *res = &s->out->req[r];
  if (res->instance < 0)
    res->instance = i;
  res->decode_instance = i; /* the last to hold it decodes it */
  group_t *gr = &in->engines[be].groups[bg];
  gr->load++;
  in->outstanding++;
  s->oom |= !dq_push(&gr->waiting, r, false);
}

static bool ev_less(const event_t *a, const event_t *b) {
  return a->t < b->t || (a->t == b->t && a->order < b->order);
}

static bool heap_push(heap_t *h, event_t e) {
  if (h->n == h->cap && !serve_grow((void **)&h->v, &h->cap, sizeof(event_t)))
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

/* ---- iterations ---- */

/* Seconds from the run's first arrival to time t of the current busy stretch:
 * for timelines and the makespan, which span the idle gaps too. */
static double since_first(const sim_t *s, double t) {
  return (s->epoch_s - s->first_s) + t;
}

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

/* The queueing delay of the requests in a group's batch that start now for
 * the first time. */
static void mark_started(sim_t *s, const group_t *gr, double now) {
  for (long k = 0; k < gr->sched.n; k++) {
    long r = gr->sched.v[k];
    if (isnan(s->out->req[r].queue_s))
      s->out->req[r].queue_s = now - s->seqs[r].arrival_s;
  }
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
  serve_group_batch_t *batches = in->batches;
  for (int g = 0; g < p->dp; g++) {
    group_t *gr = &en->groups[g];
    serve_sched_group(s, in, en, gr, g);
    mark_started(s, gr, now);
    batches[g] = gr->batch;
    decodes += gr->batch.decodes;
    prefills += gr->batch.prefills;
    tokens += gr->batch.decodes;
    for (int k = 0; k < gr->batch.prefills; k++)
      tokens += gr->batch.chunk[k];
  }
  if (decodes + prefills == 0)
    return;
  serve_parts_t parts;
  serve_cost_iteration(in->pool->cost, batches, in->stage_s, &parts);
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
  o->dynamic_J += parts.J;
  serve_step_stats_t *kind = prefills == 0 ? &o->decode : decodes == 0 ? &o->prefill : NULL;
  if (kind) {
    for (int k = 0; k < SERVE_PART_COUNT; k++)
      kind->parts.s[k] += parts.s[k];
    kind->iterations++;
    kind->batch_sum += prefills == 0 ? decodes : tokens;
    if (prefills == 0 && s->cfg->spec.on) /* the tokens the decodes gain, expected */
      kind->token_sum += decodes * serve_spec_tokens_per_step(s->cfg);
  }
  if (s->opts->log_iterations) {
    if (o->nlog == s->log_cap && !serve_grow((void **)&o->log, &s->log_cap, sizeof *o->log)) {
      s->oom = true;
    } else {
      o->log[o->nlog++] = (serve_iter_log_t){.instance = i,
                                             .engine = e,
                                             .start_s = since_first(s, now),
                                             .end_s = since_first(s, t),
                                             .decodes = decodes,
                                             .prefills = prefills,
                                             .tokens = tokens,
                                             .waiting = waiting_at(in)};
    }
  }
  s->oom |= !heap_push(&s->events, (event_t){.t = t, .type = EV_ITER_DONE, .inst = i, .engine = e});
}

/* Starts every idle engine of instance i that has work. An engine that starts
 * may have preempted a sequence of an engine tried before it (they share the
 * blocks), which then has work: so again until none starts. */
static void kick(sim_t *s, int i, double now) {
  bool started;
  do {
    started = false;
    for (int e = 0; e < s->insts[i].pool->plan->pp; e++) {
      if (s->insts[i].engines[e].busy)
        continue;
      try_start(s, i, e, now);
      started |= s->insts[i].engines[e].busy;
    }
  } while (started);
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
  s->active--;
  serve_req_result_t *res = &s->out->req[r];
  res->e2e_s = now - q->arrival_s;
  res->decode_s = now - q->first_token_s;
  res->end_s = since_first(s, now);
  s->out->makespan_s = fmax(s->out->makespan_s, res->end_s);
  progress_step(s->opts->progress, 1, res->end_s);
}

/* Tokens a decode of q gains this step: 1, or with speculative decoding the
 * expected accepted tokens per step, carried as a fraction from step to step
 * so that every sequence averages it exactly (no random draws), capped by what
 * the request still has to generate. */
static int decode_gain(const sim_t *s, seq_t *q, int left) {
  if (!s->cfg->spec.on)
    return 1;
  q->spec_credit += serve_spec_tokens_per_step(s->cfg);
  int n = (int)floor(q->spec_credit + 1e-9);
  q->spec_credit -= n;
  return n < left ? n : left;
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
      q->in_batch = false;
      int gain = g->chunk[k] ? 1 : decode_gain(s, q, res->output_tokens - q->generated);
      q->cached += g->chunk[k] ? g->chunk[k] : gain;
      if (g->chunk[k] == 0 || q->cached >= q->target) {
        q->generated += gain;
        if (q->generated == 1) {
          q->first_token_s = ev->t;
          res->ttft_s = ev->t - q->arrival_s;
        }
      }
      if (q->generated >= res->output_tokens) {
        finish(s, in, g, q, r, ev->t);
      } else if (prefill_pool && serve_decoding(q)) {
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

/* Prefix caching: the prefix's tokens cached in whole blocks, at most the
 * prompt less one token (the engine computes the last token again to sample
 * from it: vLLM). */
static long prefix_tokens(const sim_t *s, long prompt) {
  long p = s->cfg->prefix.shared_prefix_tokens;
  if (p > prompt - 1)
    p = prompt - 1;
  return p / s->cfg->block_tokens * s->cfg->block_tokens;
}

/* Whether request r finds the prefix cached: hit_rate of the requests, spread
 * evenly in arrival order (r hits when floor((r + 1) h) passes floor(r h)). */
static int prefix_hit_tokens(const sim_t *s, long r) {
  const serve_prefix_cfg_t *p = &s->cfg->prefix;
  if (!p->on || p->hit_rate <= 0)
    return 0;
  double h = p->hit_rate;
  if (floor((double)(r + 1) * h + 1e-9) <= floor((double)r * h + 1e-9))
    return 0;
  return (int)prefix_tokens(s, s->reqs->v[r].prompt_tokens);
}

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
      in->batches = calloc((size_t)p->dp, sizeof *in->batches);
      if (!in->engines || !in->free_blocks || !in->stage_free || !in->stage_s || !in->batches)
        return -1;
      for (int g = 0; g < p->dp; g++)
        in->free_blocks[g] =
            serve_cost_memory(pools[k].cost)->kv_blocks - serve_prefix_blocks(s->cfg);
      for (int e = 0; e < p->pp; e++)
        if (!(in->engines[e].groups = calloc((size_t)p->dp, sizeof(group_t))))
          return -1;
    }
  }
  for (long r = 0; r < s->reqs->n; r++) {
    const serve_request_t *q = &s->reqs->v[r];
    s->seqs[r].target = q->prompt_tokens;
    s->seqs[r].cached = s->seqs[r].shared = prefix_hit_tokens(s, r);
    s->out->req[r] = (serve_req_result_t){.arrival_s = q->arrival_s,
                                          .ttft_s = NAN,
                                          .decode_s = NAN,
                                          .e2e_s = NAN,
                                          .end_s = NAN,
                                          .queue_s = NAN,
                                          .instance = -1,
                                          .decode_instance = -1,
                                          .prompt_tokens = q->prompt_tokens,
                                          .output_tokens = q->output_tokens};
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
    free(in->batches);
  }
  free(s->insts);
  free(s->seqs);
  free(s->events.v);
}

/* Restarts the clock at 0 at arrival_s, which finds the deployment idle: the
 * times kept in the state (stages and links free again) are all at or before
 * it, so they become 0 with nothing else changed. */
static void rebase(sim_t *s, double arrival_s) {
  s->epoch_s = arrival_s;
  s->out->busy_stretches++;
  for (int i = 0; i < s->ninsts; i++) {
    inst_t *in = &s->insts[i];
    for (int st = 0; st < in->pool->plan->pp; st++)
      in->stage_free[st] = 0;
    in->egress_free = in->ingress_free = 0;
  }
}

/* A busy stretch past busy_max_s: "WHERE: arrival_s: expected ..." in err. */
static int refuse_busy(const sim_t *s, npu_err_t *err) {
  char max[32], at[32];
  jsonfile_format_number(s->opts->busy_max_s > 0 ? s->opts->busy_max_s : SERVE_BUSY_MAX_S, max,
                         sizeof max);
  jsonfile_format_number(s->epoch_s, at, sizeof at);
  return npu_err_set(err, "%s: arrival_s: expected the deployment idle again within %s s of an "
                  "arrival that finds it idle (the serving clock resolves 1 ns up to there), "
                  "found it still busy %s s after the arrival at %s s",
                  s->opts->where ? s->opts->where : "serving.requests", max, max, at),
         SERVE_SIM_REFUSED;
}

/* Every request must have completed: if one did not, the simulation has a
 * bug, and the run says which request waits where instead of a result. */
static int check_completed(const sim_t *s, npu_err_t *err) {
  long left = 0, first = -1;
  for (long r = 0; r < s->reqs->n; r++)
    if (!s->seqs[r].done) {
      left++;
      first = first < 0 ? r : first;
    }
  if (left == 0)
    return 0;
  const seq_t *q = &s->seqs[first];
  char at[32];
  jsonfile_format_number(s->reqs->v[first].arrival_s, at, sizeof at);
  return npu_err_set(err, "npusim serve: internal error: %ld of %ld requests unfinished when nothing "
                  "was left to run (request %ld, arrival_s %s: instance %d, engine %d, "
                  "group %d, %d of %d tokens cached, %d generated, %s); nothing written",
                  left, s->reqs->n, first, at, q->inst, q->engine, q->group, q->cached, q->target,
                  q->generated, q->running ? "running" : "not running"),
         SERVE_SIM_INTERNAL;
}

/* Queues every request that arrives at the instant of request *next, then
 * lets the entry pool's instances start: requests that arrive together are
 * scheduled together (a closed batch prefills in one iteration when the
 * budget allows), not one iteration for the first and another for the rest. */
static void admit_arrivals(sim_t *s, long *next, serve_pool_kind_t entry, double now) {
  const serve_requests_t *reqs = s->reqs;
  double at_s = reqs->v[*next].arrival_s;
  long first = *next;
  do {
    s->seqs[*next].arrival_s = now;
    s->active++;
    enqueue(s, pick_instance(s, entry), (*next)++);
  } while (*next < reqs->n && reqs->v[*next].arrival_s == at_s);
  for (long r = first; r < *next; r++) /* a second kick of one instance finds nothing new */
    kick(s, s->seqs[r].inst, now);
}

/* The event loop: arrivals and events in time order (an arrival first on a
 * tie). Returns 0 or a refusal, as serve_sim_run. */
static int run_events(sim_t *s, npu_err_t *err) {
  const serve_requests_t *reqs = s->reqs;
  double max = s->opts->busy_max_s > 0 ? s->opts->busy_max_s : SERVE_BUSY_MAX_S;
  serve_pool_kind_t entry = s->cfg->disaggregated ? SERVE_POOL_PREFILL : SERVE_POOL_COLOCATED;
  long next = 0;
  while (!s->oom && (next < reqs->n || s->events.n)) {
    if (next < reqs->n &&
        (s->events.n == 0 || reqs->v[next].arrival_s - s->epoch_s <= s->events.v[0].t)) {
      if (s->events.n == 0 && s->active == 0)
        rebase(s, reqs->v[next].arrival_s);
      double now = reqs->v[next].arrival_s - s->epoch_s;
      if (!(now < max))
        return refuse_busy(s, err);
      admit_arrivals(s, &next, entry, now);
      continue;
    }
    event_t ev = heap_pop(&s->events);
    if (!(ev.t < max))
      return refuse_busy(s, err);
    if (ev.type == EV_ITER_DONE)
      iteration_done(s, &ev);
    else
      kv_done(s, &ev);
  }
  if (s->oom)
    return npu_err_set(err, "serve: out of memory during the simulation"), SERVE_SIM_REFUSED;
  return check_completed(s, err);
}

int serve_sim_run(const serving_cfg_t *cfg, const serve_sim_pool_t *pools, int npools,
                  const topo_t *topo, const serve_requests_t *reqs, const serve_sim_opts_t *opts,
                  serve_sim_result_t *out, npu_err_t *err) {
  memset(out, 0, sizeof *out);
  sim_t s = {.cfg = cfg, .topo = topo, .reqs = reqs, .opts = opts, .out = out};
  out->nreq = reqs->n;
  if (build(&s, pools, npools)) {
    teardown(&s);
    serve_sim_result_free(out);
    return npu_err_set(err, "serve: out of memory for %ld requests", reqs->n),
           SERVE_SIM_REFUSED;
  }
  s.first_s = s.epoch_s = reqs->n ? reqs->v[0].arrival_s : 0;
  int rc = run_events(&s, err);
  teardown(&s);
  if (rc)
    serve_sim_result_free(out);
  return rc;
}

void serve_sim_result_free(serve_sim_result_t *r) {
  free(r->req);
  free(r->log);
  r->req = NULL;
  r->log = NULL;
}
