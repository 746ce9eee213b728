/* replay.c - the replay engine: setup (op costs, collective plans, platform),
 * the stream actors, and the figures they leave behind; see replay.h. */
#include "replay.h"

#include <math.h>
#include <simgrid/actor.h>
#include <simgrid/barrier.h>
#include <simgrid/comm.h>
#include <simgrid/cond.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <simgrid/mutex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_cost.h"
#include "replay_internal.h"

/* Collectives a trace may use: the first six of coll_op_t, in its order. */
static const char *const trace_colls[] = {"allreduce", "allgather", "reducescatter",
                                          "broadcast", "reduce",    "alltoall"};

const trace_vocab_t replay_vocab = {
    .compute = op_kind_names,
    .ncompute = OP_KIND_COUNT,
    .colls = trace_colls,
    .ncolls = 6,
    .dtypes = chip_dtype_names,
    .ndtypes = CHIP_DTYPE_COUNT,
    .default_dtype = CHIP_DTYPE_BF16,
    .root_colls_mask = (1 << COLL_BROADCAST) | (1 << COLL_REDUCE),
};

typedef struct {
  rp_t *rp;
  int rank, stream;     /* stream actors */
  const inst_t *inst;   /* switch helpers: the collective and the switch id */
  int endpoint;
} actor_ctx_t;

/* ---- setup ---- */

void replay_op_desc(const trace_op_t *op, op_desc_t *d) {
  *d = (op_desc_t){.kind = (op_kind_t)op->kind, .dtype = (chip_dtype_t)op->dtype,
                   .causal = op->causal, .trans_a = op->trans_a, .trans_b = op->trans_b};
  d->out_dtype = op_default_out_dtype(d->kind, d->dtype);
  if (op_on_cube(d->kind)) {
    memcpy(d->dims, op->dims, sizeof d->dims);
  } else { /* [rows,]cols */
    d->dims[0] = op->dims[1] > 0 ? op->dims[0] : 1;
    d->dims[1] = op->dims[1] > 0 ? op->dims[1] : op->dims[0];
  }
}

static int cost_shaped(rp_t *rp, const char *name, op_cache_t *cache, char *err, size_t len) {
  const trace_t *t = rp->trace;
  rp->compute_s = calloc((size_t)t->nprograms, sizeof *rp->compute_s);
  for (int pi = 0; pi < t->nprograms; pi++) {
    const trace_program_t *p = &t->programs[pi];
    rp->compute_s[pi] = calloc((size_t)p->nops + 1, sizeof **rp->compute_s);
    for (int i = 0; i < p->nops; i++) {
      const trace_op_t *op = &p->ops[i];
      if (op->type != TRACE_OP_SHAPED)
        continue;
      op_desc_t d;
      replay_op_desc(op, &d);
      char why[512];
      if (op_check(&rp->sys->chip, &d, why, sizeof why)) /* "shape: ..." names the field */
        return snprintf(err, len, "%s: rank %d op %d: %s", name, p->ranks[0], op->id, why), -1;
      rp->compute_s[pi][i] = op_cost(cache, &d)->time_s;
    }
  }
  return 0;
}

static uint64_t inst_hash(int comm, int group, const trace_op_t *op) {
  uint64_t h = 1469598103934665603ULL, bytes;
  memcpy(&bytes, &op->bytes, sizeof bytes);
  uint64_t fields[5] = {(uint64_t)comm, (uint64_t)group, (uint64_t)op->kind, bytes,
                        (uint64_t)op->root};
  for (int i = 0; i < 5; i++) {
    h ^= fields[i];
    h *= 1099511628211ULL;
    h ^= h >> 31;
  }
  for (const char *c = op->algo; c && *c; c++)
    h = (h ^ (unsigned char)*c) * 1099511628211ULL;
  return h;
}

static bool inst_matches(const inst_t *x, int comm, int group, const trace_op_t *op) {
  return x->comm == comm && x->group == group && x->kind == op->kind && x->bytes == op->bytes &&
         x->root == op->root &&
         (x->algo == op->algo || (x->algo && op->algo && strcmp(x->algo, op->algo) == 0));
}

/* The slot of the collective (comm, group, op's signature): its index, or the
 * empty slot where it belongs. */
static int *find_slot(rp_t *rp, int comm, int group, const trace_op_t *op) {
  size_t i = (size_t)inst_hash(comm, group, op) & (rp->nslots - 1);
  while (rp->slots[i] >= 0 && !inst_matches(&rp->insts[rp->slots[i]], comm, group, op))
    i = (i + 1) & (rp->nslots - 1);
  return &rp->slots[i];
}

static void grow_slots(rp_t *rp) {
  size_t n = rp->nslots ? 2 * rp->nslots : 256;
  free(rp->slots);
  rp->slots = malloc(n * sizeof *rp->slots);
  rp->nslots = n;
  for (size_t i = 0; i < n; i++)
    rp->slots[i] = -1;
  for (int k = 0; k < rp->ninsts; k++) { /* re-insert by each collective's own signature */
    const inst_t *x = &rp->insts[k];
    trace_op_t op = {.kind = x->kind, .bytes = x->bytes, .root = x->root, .algo = (char *)x->algo};
    *find_slot(rp, x->comm, x->group, &op) = k;
  }
}

/* Marks the ops another stream depends on (explicitly, or as a recorded
 * event) and finds the op that records each event. */
static void find_watched(rp_t *rp) {
  const trace_t *t = rp->trace;
  rp->watched = calloc((size_t)t->nprograms, sizeof *rp->watched);
  rp->record_of = calloc((size_t)t->nprograms, sizeof *rp->record_of);
  for (int pi = 0; pi < t->nprograms; pi++) {
    const trace_program_t *p = &t->programs[pi];
    rp->watched[pi] = calloc((size_t)p->nops + 1, 1);
    rp->record_of[pi] = calloc((size_t)p->nevents + 1, sizeof **rp->record_of);
    for (int i = 0; i < p->nops; i++) {
      const trace_op_t *op = &p->ops[i];
      for (int d = 0; d < op->ndeps; d++)
        if (p->ops[op->deps[d]].stream != op->stream)
          rp->watched[pi][op->deps[d]] = 1;
      if (op->type == TRACE_OP_RECORD || op->type == TRACE_OP_WAIT)
        rp->watched[pi][i] = 1;
      if (op->type == TRACE_OP_RECORD)
        rp->record_of[pi][op->event] = i;
    }
  }
}

/* Plans the collective of one group; forced algorithms from the op. */
static int plan_inst(rp_t *rp, inst_t *x, const char *name, int rank, int op_id, char *err,
                     size_t len) {
  const trace_comm_t *cm = &rp->trace->comms[x->comm];
  const int *members = cm->groups[x->group];
  int g = cm->sizes[x->group];
  coll_cfg_t cfg = rp->sys->coll;
  char why[512];
  bool spans = false;
  for (int m = 1; m < g; m++)
    spans = spans || topo_server_of(rp->topo, members[m]) != topo_server_of(rp->topo, members[0]);
  if (x->algo && coll_apply_algo(x->algo, spans, &cfg, why, sizeof why))
    return snprintf(err, len, "%s: rank %d op %d: %s", name, rank, op_id, why), -1;
  coll_req_t req = {(coll_op_t)x->kind, x->bytes, members[x->root], NULL};
  if (coll_plan_group(rp->topo, &cfg, members, g, &req, &x->plan, why, sizeof why))
    return snprintf(err, len, "%s: rank %d op %d: %s", name, rank, op_id, why), -1;
  x->analytic_s = coll_analytic_time(rp->topo, &cfg, &x->plan.sched, NULL);
  return 0;
}

/* One collective per distinct group, kind, size, root and forced algorithm. */
int replay_inst_for(rp_t *rp, int comm, int group, const trace_op_t *op, const char *name,
                    int rank, char *err, size_t len) {
  if (2 * ((size_t)rp->ninsts + 1) > rp->nslots)
    grow_slots(rp);
  int *slot = find_slot(rp, comm, group, op);
  if (*slot >= 0)
    return *slot;
  if (rp->ninsts == rp->cap_insts) {
    rp->cap_insts = rp->cap_insts ? 2 * rp->cap_insts : 16;
    rp->insts = realloc(rp->insts, (size_t)rp->cap_insts * sizeof *rp->insts);
  }
  inst_t *x = &rp->insts[rp->ninsts];
  *x = (inst_t){.comm = comm, .group = group, .kind = op->kind, .root = op->root,
                .bytes = op->bytes, .algo = op->algo};
  if (plan_inst(rp, x, name, rank, op->id, err, len)) {
    coll_plan_free(&x->plan);
    return -1;
  }
  return *slot = rp->ninsts++;
}

/* Gives every collective op of every simulated rank its group's plan. */
static int plan_collectives(rp_t *rp, const char *name, char *err, size_t len) {
  const trace_t *t = rp->trace;
  rp->inst_of = calloc((size_t)t->ranks, sizeof *rp->inst_of);
  for (int r = 0; r < t->ranks; r++) {
    if (!rp->simulated[r])
      continue;
    const trace_program_t *p = &t->programs[t->program_of[r]];
    rp->inst_of[r] = malloc(((size_t)p->nops + 1) * sizeof **rp->inst_of);
    for (int i = 0; i < p->nops; i++) {
      const trace_op_t *op = &p->ops[i];
      rp->inst_of[r][i] = -1;
      if (op->type != TRACE_OP_COLL)
        continue;
      rp->inst_of[r][i] = replay_inst_for(rp, op->comm, trace_group_of(&t->comms[op->comm], r), op,
                                          name, r, err, len);
      if (rp->inst_of[r][i] < 0)
        return -1;
    }
  }
  return 0;
}

/* Interference: a compute op that runs beside a transfer of its rank (the
 * trace's "overlaps") shares the chip with it - SMs or HBM bandwidth taken by
 * the transfer's kernels - and takes collectives.compute_slowdown times the
 * shorter of the two longer. The transfer's length is its uncontended
 * (analytic) time, for the program's first rank, so both fidelities and both
 * engines charge the same. */
static void add_interference(rp_t *rp) {
  const trace_t *t = rp->trace;
  double slowdown = rp->sys->coll.compute_slowdown;
  for (int pi = 0; slowdown > 0 && pi < t->nprograms; pi++) {
    const trace_program_t *p = &t->programs[pi];
    int r = p->ranks[0];
    for (int i = 0; i < p->nops; i++) {
      if (!p->ops[i].overlapping)
        continue;
      int j = p->ops[i].overlaps;
      const trace_op_t *o = &p->ops[j];
      double comm_s = o->type == TRACE_OP_COLL
                          ? rp->insts[rp->inst_of[r][j]].analytic_s
                          : replay_p2p_analytic_s(rp->topo, r, trace_peer(o, r), o->bytes);
      double base = rp->compute_s[pi][i];
      rp->compute_s[pi][i] += slowdown * (base < comm_s ? base : comm_s);
    }
  }
}

/* Simulated members of a collective's group. */
static unsigned simulated_members(const rp_t *rp, const inst_t *x) {
  const trace_comm_t *cm = &rp->trace->comms[x->comm];
  unsigned n = 0;
  for (int m = 0; m < cm->sizes[x->group]; m++)
    n += rp->simulated[cm->groups[x->group][m]];
  return n;
}

/* Whether a flow replay runs the collective as transfers. */
static bool flows(const inst_t *x) {
  return x->members > 0 && !x->exclusive;
}

/* Every pair of endpoints that exchanges data, for the platform's routes. */
static void collect_pairs(const rp_t *rp, pair_set_t *pairs, int *endpoints) {
  const trace_t *t = rp->trace;
  *endpoints = t->ranks;
  for (int i = 0; i < rp->ninsts; i++) {
    if (!flows(&rp->insts[i]))
      continue;
    const coll_sched_t *s = &rp->insts[i].plan.sched;
    if (s->endpoints > *endpoints)
      *endpoints = s->endpoints;
    for (int p = 0; p < s->nphases; p++)
      for (int j = 0; j < s->phases[p].nxfers; j++)
        pair_set_add(pairs, s->phases[p].xfers[j].src, s->phases[p].xfers[j].dst);
  }
  for (int r = 0; r < t->ranks; r++) {
    const trace_program_t *p = &t->programs[t->program_of[r]];
    for (int i = 0; rp->simulated[r] && i < p->nops; i++)
      if (p->ops[i].type == TRACE_OP_SEND)
        pair_set_add(pairs, r, trace_peer(&p->ops[i], r));
  }
}

/* ---- the actors ---- */

/* Marks an op done, or planned (its end time is in its span already).
 * SimGrid runs one actor at a time and switches only inside its calls, so the
 * flags need the mutex only around waiting: a rank nobody waits on is marked
 * without a simulator call, and only the stream waiting for the op is woken. */
static void mark_done(rp_t *rp, int rank, int op, char state) {
  rank_state_t *s = &rp->rs[rank];
  s->done[op] = state;
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
static double wait_done(rp_t *rp, int rank, int stream, int op) {
  rank_state_t *s = &rp->rs[rank];
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
  return s->done[op] == OP_PLANNED ? rp->spans[rank][op].end_s : 0;
}

/* Waits for everything op i of the rank depends on outside its stream; returns
 * the time the op may start. Analytic: the latest end among the stream's
 * previous op (free_s) and the dependencies, from the spans, so the actors do
 * the sweep's arithmetic to the last bit (SimGrid's clock settles an action
 * within its precision, not exactly). Flow: now, or a dependency's planned end. */
static double wait_deps(rp_t *rp, int rank, const trace_program_t *p, int i, double free_s) {
  const trace_op_t *op = &p->ops[i];
  const replay_span_t *sp = rp->spans[rank];
  double start = rp->flow ? 0 : free_s;
  for (int d = 0; d < op->ndeps; d++) {
    double end = wait_done(rp, rank, op->stream, op->deps[d]);
    if (!rp->flow)
      end = sp[op->deps[d]].end_s;
    start = end > start ? end : start;
  }
  if (op->type == TRACE_OP_WAIT) {
    int pi = rp->trace->program_of[rank], k = rp->record_of[pi][op->event];
    double end = wait_done(rp, rank, op->stream, k);
    if (!rp->flow)
      end = sp[k].end_s;
    start = end > start ? end : start;
  }
  double now = simgrid_get_clock(); /* after any waiting */
  return rp->flow && now > start ? now : start;
}

static void switch_actor(int argc, char **argv) {
  (void)argc, (void)argv;
  actor_ctx_t *ctx = sg_actor_self_get_data();
  coll_flow_run_endpoint(ctx->inst->flow, &ctx->rp->sys->coll, ctx->endpoint, &ctx->rp->log);
  free(ctx);
}

/* The in-network switches of a collective run their part beside its first member. */
static void start_switches(rp_t *rp, const inst_t *x) {
  for (int e = rp->trace->ranks; e < x->plan.sched.endpoints; e++) {
    if (!coll_flow_takes_part(x->flow, e))
      continue;
    actor_ctx_t *ctx = calloc(1, sizeof *ctx);
    *ctx = (actor_ctx_t){.rp = rp, .inst = x, .endpoint = e};
    char host[32];
    snprintf(host, sizeof host, "h%d", e);
    sg_actor_t a = sg_actor_init("switch", sg_host_by_name(host));
    sg_actor_set_data(a, ctx);
    sg_actor_start(a, switch_actor, 0, NULL);
  }
}

static void run_collective(rp_t *rp, int rank, int i, replay_span_t *sp) {
  inst_t *x = &rp->insts[rp->inst_of[rank][i]];
  double overhead = rp->sys->coll.op_overhead_s;
  if (!rp->flow) { /* the members meet at the latest arrival */
    x->latest_s = sp->start_s > x->latest_s ? sp->start_s : x->latest_s;
    if (x->members > 1)
      sg_barrier_wait(x->barrier);
    /* read before this actor's next simcall: no member can arrive at this
     * collective's next use before every member has read this one's */
    sp->ready_s = x->latest_s;
    if (++x->read == x->members)
      x->latest_s = x->read = 0;
    sp->end_s = sp->ready_s + x->analytic_s;
    sg_actor_sleep_until(sp->end_s);
    return;
  }
  if (x->exclusive) {
    if (x->members > 1)
      sg_barrier_wait(x->barrier); /* all members present */
    sp->ready_s = simgrid_get_clock();
    sg_actor_sleep_for(x->analytic_s);
    return;
  }
  if (overhead > 0)
    sg_actor_sleep_for(overhead);
  const trace_comm_t *cm = &rp->trace->comms[x->comm];
  if (cm->groups[x->group][0] == rank)
    start_switches(rp, x);
  coll_flow_run_endpoint(x->flow, &rp->sys->coll, rank, &rp->log);
}

double replay_p2p_analytic_s(const topo_t *topo, int src, int dst, double bytes) {
  topo_hop_t hops[TOPO_MAX_HOPS];
  int nh = topo_route(topo, src, dst, hops);
  double slowest = 0;
  for (int h = 0; h < nh; h++) {
    double t = bytes / topo_link_bw(topo, hops[h].link);
    slowest = t > slowest ? t : slowest;
  }
  return topo_path_alpha_s(topo, hops, nh) + slowest;
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

static void run_p2p(rp_t *rp, int rank, int i, replay_span_t *sp) {
  int pi = rp->trace->program_of[rank];
  const trace_op_t *op = &rp->trace->programs[pi].ops[i];
  int peer = trace_peer(op, rank);
  bool send = op->type == TRACE_OP_SEND;
  int src = send ? rank : peer, dst = send ? peer : rank;
  /* one mailbox per message: the k-th send on a channel meets the k-th recv,
   * whichever arrives first (trace_pairing_t) */
  char name[96];
  snprintf(name, sizeof name, "p:%d>%d:%d#%d", src, dst, rp->pairing.tag_id[pi][op->tag],
           rp->pairing.seq[rank][i]);
  if (!rp->flow) { /* meet, then both wait the uncontended path time */
    sp->ready_s = exchange_arrivals(name, send, sp->start_s);
    sp->end_s = sp->ready_s + replay_p2p_analytic_s(rp->topo, src, dst, op->bytes);
    sg_actor_sleep_until(sp->end_s);
    return;
  }
  sg_mailbox_t box = sg_mailbox_by_name(name);
  topo_hop_t hops[TOPO_MAX_HOPS];
  double alpha = topo_path_alpha_s(rp->topo, hops, topo_route(rp->topo, src, dst, hops));
  /* The data moves once both sides are there; then both wait out the path
   * latency (the analytic engine charges the same). */
  if (send) {
    double *stamp = malloc(sizeof *stamp);
    *stamp = simgrid_get_clock();
    sg_mailbox_put(box, stamp, (long)llround(op->bytes));
    sg_actor_sleep_for(alpha);
  } else {
    double posted = simgrid_get_clock();
    double *stamp = sg_mailbox_get(box);
    sp->ready_s = *stamp > posted ? *stamp : posted;
    coll_flow_log_add(&rp->log, src, dst, op->bytes, *stamp > posted ? *stamp : posted,
                      simgrid_get_clock());
    free(stamp);
    sg_actor_sleep_for(alpha);
  }
}

static void run_op(rp_t *rp, int rank, int pi, int i) {
  const trace_program_t *p = &rp->trace->programs[pi];
  const trace_op_t *op = &p->ops[i];
  rank_state_t *s = &rp->rs[rank];
  switch (op->type) {
  case TRACE_OP_SHAPED:
  case TRACE_OP_COMPUTE:
  case TRACE_OP_DELAY:
    sg_actor_sleep_for(replay_timed_s(rp, pi, i));
    break;
  case TRACE_OP_COLL:
    run_collective(rp, rank, i, &rp->spans[rank][i]);
    break;
  case TRACE_OP_SEND:
  case TRACE_OP_RECV:
    run_p2p(rp, rank, i, &rp->spans[rank][i]);
    break;
  case TRACE_OP_ALLOC:
    s->buffer_bytes[op->buffer] += op->bytes;
    s->memory += op->bytes;
    if (s->memory > s->peak_memory)
      s->peak_memory = s->memory;
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
static bool ready_at(const rp_t *rp, int rank, const trace_program_t *p, int j, double t) {
  const trace_op_t *op = &p->ops[j];
  for (int d = 0; d < op->ndeps; d++) {
    int k = op->deps[d];
    char state = rp->rs[rank].done[k];
    if (p->ops[k].stream != op->stream &&
        (state == OP_PENDING || (state == OP_PLANNED && rp->spans[rank][k].end_s > t)))
      return false;
  }
  return true;
}

/* Runs timed-only ops from i on as one sleep while their dependencies on
 * other streams are met: SimGrid wakes the stream once, the spans are those of
 * running them one by one, and an op another stream waits for is marked
 * planned at once, so its waiter sleeps to its end instead of being woken.
 * Returns the last op run. */
static int run_batch(rp_t *rp, int rank, int pi, int i) {
  const trace_program_t *p = &rp->trace->programs[pi];
  replay_span_t *sp = rp->spans[rank];
  int stream = p->ops[i].stream, last = i;
  double t = sp[i].start_s + replay_timed_s(rp, pi, i);
  sp[i].end_s = t;
  for (int j = i + 1; j < p->nops; j++) {
    if (p->ops[j].stream != stream)
      continue;
    if (!replay_timed_only(p->ops[j].type) || !ready_at(rp, rank, p, j, t))
      break;
    sp[j].start_s = sp[j].ready_s = t;
    t += replay_timed_s(rp, pi, j);
    sp[j].end_s = t;
    last = j;
  }
  for (int j = i; j <= last; j++)
    if (p->ops[j].stream == stream && rp->watched[pi][j])
      mark_done(rp, rank, j, OP_PLANNED);
  sg_actor_sleep_until(t);
  for (int j = i; j <= last; j++)
    if (p->ops[j].stream == stream)
      mark_done(rp, rank, j, OP_DONE);
  return last;
}

/* A collective whose time is known when it starts: analytic (or a flow
 * replay's exclusive one) with no other simulated member to meet. */
static bool lone_analytic(const rp_t *rp, int rank, const trace_program_t *p, int i) {
  if (p->ops[i].type != TRACE_OP_COLL)
    return false;
  const inst_t *x = &rp->insts[rp->inst_of[rank][i]];
  return (!rp->flow || x->exclusive) && x->members == 1;
}

static void stream_actor(int argc, char **argv) {
  (void)argc, (void)argv;
  actor_ctx_t *ctx = sg_actor_self_get_data();
  rp_t *rp = ctx->rp;
  int pi = rp->trace->program_of[ctx->rank];
  const trace_program_t *p = &rp->trace->programs[pi];
  replay_span_t *sp = rp->spans[ctx->rank];
  double free_s = 0; /* end of the stream's previous op */
  for (int i = 0; i < p->nops; i++) {
    if (p->ops[i].stream != ctx->stream)
      continue;
    sp[i].start_s = sp[i].ready_s = wait_deps(rp, ctx->rank, p, i, free_s);
    if (replay_timed_only(p->ops[i].type)) {
      i = run_batch(rp, ctx->rank, pi, i);
      free_s = sp[i].end_s;
      continue;
    }
    if (lone_analytic(rp, ctx->rank, p, i)) { /* planned, so waiters need no wake-up */
      sp[i].end_s = sp[i].start_s + rp->insts[rp->inst_of[ctx->rank][i]].analytic_s;
      mark_done(rp, ctx->rank, i, OP_PLANNED);
      sg_actor_sleep_until(sp[i].end_s);
      mark_done(rp, ctx->rank, i, OP_DONE);
      free_s = sp[i].end_s;
      continue;
    }
    if (sp[i].start_s > simgrid_get_clock())
      sg_actor_sleep_until(sp[i].start_s);
    sp[i].end_s = sp[i].start_s; /* instant ops; analytic transfers set their end */
    run_op(rp, ctx->rank, pi, i);
    if (rp->flow)
      sp[i].end_s = simgrid_get_clock();
    free_s = sp[i].end_s;
    mark_done(rp, ctx->rank, i, OP_DONE);
  }
}

/* ---- running ---- */

static void start_actors(rp_t *rp, actor_ctx_t *ctxs) {
  const trace_t *t = rp->trace;
  int n = 0;
  for (int r = 0; r < t->ranks; r++) {
    if (!rp->simulated[r])
      continue;
    const trace_program_t *p = &t->programs[t->program_of[r]];
    char host[32];
    snprintf(host, sizeof host, "h%d", rp->flow ? r : 0);
    for (int s = 0; s < p->nstreams; s++) {
      ctxs[n] = (actor_ctx_t){.rp = rp, .rank = r, .stream = s};
      sg_actor_t a = sg_actor_init(p->streams[s], sg_host_by_name(host));
      sg_actor_set_data(a, &ctxs[n++]);
      sg_actor_start(a, stream_actor, 0, NULL);
    }
  }
}

static void init_ranks(rp_t *rp) {
  const trace_t *t = rp->trace;
  rp->rs = calloc((size_t)t->ranks, sizeof *rp->rs);
  rp->spans = calloc((size_t)t->ranks, sizeof *rp->spans);
  for (int r = 0; r < t->ranks; r++) {
    if (!rp->simulated[r])
      continue;
    const trace_program_t *p = &t->programs[t->program_of[r]];
    if (!rp->sweep) {
      rank_state_t *s = &rp->rs[r];
      s->mutex = sg_mutex_init();
      s->nstreams = p->nstreams;
      s->conds = malloc((size_t)p->nstreams * sizeof *s->conds);
      s->waiting_for = malloc((size_t)p->nstreams * sizeof *s->waiting_for);
      for (int k = 0; k < p->nstreams; k++) {
        s->conds[k] = sg_cond_init();
        s->waiting_for[k] = -1;
      }
    }
    rp->rs[r].done = calloc((size_t)p->nops + 1, 1);
    rp->rs[r].buffer_bytes = calloc((size_t)p->nbuffers + 1, sizeof(double));
    rp->spans[r] = calloc((size_t)p->nops + 1, sizeof **rp->spans);
  }
  for (int i = 0; i < rp->ninsts; i++) {
    inst_t *x = &rp->insts[i];
    if (rp->flow && flows(x)) {
      char channel[48];
      snprintf(channel, sizeof channel, "c%d.%d", x->comm, x->group);
      x->flow = coll_flow_prepare(rp->topo, &x->plan.sched, channel);
    } else if (!rp->sweep && x->members > 0) {
      x->barrier = sg_barrier_init(x->members);
    }
  }
}

static void free_state(rp_t *rp) {
  const trace_t *t = rp->trace;
  for (int r = 0; rp->rs && r < t->ranks; r++) {
    if (rp->rs[r].mutex) {
      sg_mutex_destroy(rp->rs[r].mutex);
      for (int k = 0; k < rp->rs[r].nstreams; k++)
        sg_cond_destroy(rp->rs[r].conds[k]);
      free(rp->rs[r].conds);
      free(rp->rs[r].waiting_for);
    }
    free(rp->rs[r].done);
    free(rp->rs[r].buffer_bytes);
  }
  free(rp->rs);
  for (int r = 0; rp->spans && r < t->ranks; r++) /* still ours when the replay failed */
    free(rp->spans[r]);
  free(rp->spans);
  for (int i = 0; i < rp->ninsts; i++) {
    coll_plan_free(&rp->insts[i].plan);
    coll_flow_free(rp->insts[i].flow);
    if (rp->insts[i].barrier)
      sg_barrier_destroy(rp->insts[i].barrier);
  }
  free(rp->insts);
  free(rp->slots);
  for (int r = 0; rp->inst_of && r < t->ranks; r++)
    free(rp->inst_of[r]);
  free(rp->inst_of);
  for (int pi = 0; rp->compute_s && pi < t->nprograms; pi++)
    free(rp->compute_s[pi]);
  free(rp->compute_s);
  for (int pi = 0; rp->watched && pi < t->nprograms; pi++) {
    free(rp->watched[pi]);
    free(rp->record_of[pi]);
  }
  free(rp->watched);
  free(rp->record_of);
  trace_pairing_free(&rp->pairing);
  free(rp->log.v);
  free(rp->simulated);
}

typedef struct {
  double t;
  int dw, dm; /* +1 when an op starts, -1 when it ends */
} ev_t;

static int by_time(const void *a, const void *b) {
  const ev_t *x = a, *y = b;
  if (x->t != y->t)
    return x->t < y->t ? -1 : 1;
  return (x->dw + x->dm) - (y->dw + y->dm); /* ends before starts at a tie */
}

/* Union of the intervals of the ops of one rank matching `want`, minus those
 * matching `minus` when it is set. */
static double busy_time(const trace_program_t *p, const replay_span_t *sp, bool (*want)(int),
                        bool (*minus)(int)) {
  ev_t *ev = malloc(((size_t)p->nops * 2 + 1) * sizeof *ev);
  int n = 0;
  for (int i = 0; i < p->nops; i++) {
    int w = want((int)p->ops[i].type), m = minus && minus((int)p->ops[i].type);
    if ((w || m) && sp[i].end_s > sp[i].start_s) {
      ev[n++] = (ev_t){sp[i].start_s, w, m};
      ev[n++] = (ev_t){sp[i].end_s, -w, -m};
    }
  }
  qsort(ev, (size_t)n, sizeof *ev, by_time);
  double total = 0;
  int cw = 0, cm = 0;
  for (int i = 0; i < n; i++) {
    if (i > 0 && cw > 0 && cm == 0)
      total += ev[i].t - ev[i - 1].t;
    cw += ev[i].dw;
    cm += ev[i].dm;
  }
  free(ev);
  return total;
}

static int first_simulated(const rp_t *rp, const trace_comm_t *cm, int group) {
  for (int m = 0; m < cm->sizes[group]; m++)
    if (rp->simulated[cm->groups[group][m]])
      return cm->groups[group][m];
  return -1;
}

/* Groups of a communicator with a simulated member. */
static int simulated_groups(const rp_t *rp, const trace_comm_t *cm) {
  int n = 0;
  for (int g = 0; g < cm->ngroups; g++)
    n += first_simulated(rp, cm, g) >= 0;
  return n > 0 ? n : 1;
}

static bool is_compute(int type) { return type == TRACE_OP_SHAPED || type == TRACE_OP_COMPUTE; }
static bool is_comm(int type) {
  return type == TRACE_OP_COLL || type == TRACE_OP_SEND || type == TRACE_OP_RECV;
}
static bool is_busy(int type) { return is_compute(type) || is_comm(type); }

static void summarise(rp_t *rp, replay_result_t *out) {
  const trace_t *t = rp->trace;
  out->per_rank = calloc((size_t)t->ranks, sizeof *out->per_rank);
  out->per_comm = calloc((size_t)t->ncomms + 1, sizeof *out->per_comm);
  double *scale = malloc(((size_t)t->ncomms + 1) * sizeof *scale); /* groups per simulated one */
  for (int c = 0; c < t->ncomms; c++)
    scale[c] = (double)t->comms[c].ngroups / simulated_groups(rp, &t->comms[c]);
  out->step_time_s = 0;
  for (int r = 0; r < t->ranks; r++) {
    const trace_program_t *p = &t->programs[t->program_of[r]];
    for (int i = 0; rp->simulated[r] && i < p->nops; i++)
      if (rp->spans[r][i].end_s > out->step_time_s)
        out->step_time_s = rp->spans[r][i].end_s;
  }
  for (int r = 0; r < t->ranks; r++) {
    const trace_program_t *p = &t->programs[t->program_of[r]];
    replay_rank_t *pr = &out->per_rank[r];
    if (!rp->simulated[r])
      continue;
    pr->compute_s = busy_time(p, rp->spans[r], is_compute, NULL);
    pr->comm_s = busy_time(p, rp->spans[r], is_comm, NULL);
    pr->exposed_comm_s = busy_time(p, rp->spans[r], is_comm, is_compute);
    pr->idle_s = out->step_time_s - busy_time(p, rp->spans[r], is_busy, NULL);
    pr->peak_memory_bytes = rp->rs[r].peak_memory;
    for (int i = 0; i < p->nops; i++) {
      if (p->ops[i].type != TRACE_OP_COLL)
        continue;
      const inst_t *x = &rp->insts[rp->inst_of[r][i]];
      const trace_comm_t *cm = &t->comms[x->comm];
      int g = cm->sizes[x->group], sim = 0;
      for (int m = 0; m < g; m++)
        sim += rp->simulated[cm->groups[x->group][m]];
      replay_comm_t *c = &out->per_comm[x->comm];
      /* unsimulated groups mirror a simulated one */
      double groups = scale[x->comm];
      c->busy_s += (rp->spans[r][i].end_s - rp->spans[r][i].start_s) / sim * groups;
      if (r == first_simulated(rp, cm, x->group)) { /* each group's collective once */
        c->collectives += (long)llround(groups);
        c->bytes += coll_sched_bytes(&x->plan.sched) * groups;
      }
    }
  }
  for (int r = 0; r < t->ranks; r++) /* by symmetry, as its program's representative */
    if (!rp->simulated[r])
      out->per_rank[r] = out->per_rank[t->programs[t->program_of[r]].ranks[0]];
  free(scale);
}

/* Analytic link figures of the collectives: each group's collective once per
 * issue. Ranks of one program issue the same collectives, so the first rank's
 * counts serve every group a rank of the program leads; groups no simulated
 * rank is in are planned here. */
static int collective_links(rp_t *rp, linkstats_t *links, const char *name, char *err,
                            size_t len) {
  const trace_t *t = rp->trace;
  int rc = 0;
  for (int pi = 0; pi < t->nprograms && rc == 0; pi++) {
    const trace_program_t *p = &t->programs[pi];
    int first = p->ranks[0], n = rp->ninsts;
    int *count = calloc((size_t)n + 1, sizeof *count), *op_at = calloc((size_t)n + 1, sizeof *op_at);
    for (int i = 0; i < p->nops; i++)
      if (p->ops[i].type == TRACE_OP_COLL && count[rp->inst_of[first][i]]++ == 0)
        op_at[rp->inst_of[first][i]] = i;
    for (int k = 0; k < n && rc == 0; k++) {
      if (!count[k])
        continue;
      const trace_op_t *op = &p->ops[op_at[k]];
      const trace_comm_t *cm = &t->comms[op->comm];
      for (int m = 0; m < p->nranks && rc == 0; m++) {
        int r = p->ranks[m], g = trace_group_of(cm, r);
        if (cm->groups[g][0] != r)
          continue;
        int x = replay_inst_for(rp, op->comm, g, op, name, r, err, len);
        if (x < 0)
          rc = -1;
        else
          coll_analytic_record(rp->topo, &rp->sys->coll, &rp->insts[x].plan.sched, links,
                               count[k]);
      }
    }
    free(count);
    free(op_at);
  }
  return rc;
}

/* Analytic link figures of the sends: every rank's, timed by its stand-in. */
static void send_links(rp_t *rp, linkstats_t *links) {
  const trace_t *t = rp->trace;
  for (int r = 0; r < t->ranks; r++) {
    const trace_program_t *p = &t->programs[t->program_of[r]];
    int in = rp->simulated[r] ? r : p->ranks[0];
    for (int i = 0; i < p->nops; i++) {
      const trace_op_t *op = &p->ops[i];
      if (op->type != TRACE_OP_SEND)
        continue;
      topo_hop_t hops[TOPO_MAX_HOPS];
      int nh = topo_route(rp->topo, r, trace_peer(op, r), hops);
      double dur = rp->spans[in][i].end_s - rp->spans[in][i].start_s;
      for (int h = 0; h < nh; h++) {
        double busy = op->bytes / topo_link_bw(rp->topo, hops[h].link);
        linkstats_add(links, hops[h].link, hops[h].dir, op->bytes, busy,
                      dur > 0 ? busy / dur : 0);
      }
    }
  }
}

/* Link figures: flow from the transfers logged; analytic from each collective's
 * rounds and each send's bytes. */
static int link_figures(rp_t *rp, replay_result_t *out, const char *name, char *err,
                        size_t len) {
  linkstats_init(&out->links, rp->topo);
  if (rp->flow) {
    coll_flow_log_to_stats(&rp->log, rp->topo, &out->links);
    return 0;
  }
  send_links(rp, &out->links);
  return collective_links(rp, &out->links, name, err, len);
}

/* Representatives need their send/recv peers to be representatives too. */
static int choose_simulated(rp_t *rp, bool representatives, const char *name, char *err,
                            size_t len) {
  const trace_t *t = rp->trace;
  rp->simulated = malloc((size_t)t->ranks * sizeof *rp->simulated);
  for (int r = 0; r < t->ranks; r++)
    rp->simulated[r] = !representatives || t->programs[t->program_of[r]].ranks[0] == r;
  for (int r = 0; representatives && r < t->ranks; r++) {
    const trace_program_t *p = &t->programs[t->program_of[r]];
    for (int i = 0; rp->simulated[r] && i < p->nops; i++)
      if ((p->ops[i].type == TRACE_OP_SEND || p->ops[i].type == TRACE_OP_RECV) &&
          !rp->simulated[trace_peer(&p->ops[i], r)])
        return snprintf(err, len, "%s: rank %d op %d: expected a peer that runs the first rank "
                        "of its program (symmetric replay), found rank %d", name, r,
                        p->ops[i].id, trace_peer(&p->ops[i], r)), -1;
  }
  return 0;
}

int replay_stand_in(const replay_result_t *r, const trace_t *trace, int rank) {
  return r->representatives ? trace->programs[trace->program_of[rank]].ranks[0] : rank;
}

/* The sweep computes what the actors would when costs are analytic: meetings
 * pair up the same in any interleaving (a communicator's collectives come from
 * one stream, checked on reading; sends and recvs by trace_pairing_t). Memory
 * ops are left to the actors: their high-water mark depends on how the
 * simulator interleaves streams. The environment variable
 * NPUSIM_REPLAY_ACTORS=1 keeps the actors, so tests can check that both give
 * the same bytes. */
static bool sweepable(const rp_t *rp) {
  const char *force = getenv("NPUSIM_REPLAY_ACTORS");
  if ((force && strcmp(force, "1") == 0) || rp->flow)
    return false;
  const trace_t *t = rp->trace;
  for (int pi = 0; pi < t->nprograms; pi++)
    for (int i = 0; i < t->programs[pi].nops; i++)
      if (t->programs[pi].ops[i].type == TRACE_OP_ALLOC ||
          t->programs[pi].ops[i].type == TRACE_OP_FREE)
        return false;
  return true;
}

/* What an op that never finished waits for, for the one-line error. */
static void describe_wait(const rp_t *rp, int rank, int i, char *buf, size_t len) {
  int pi = rp->trace->program_of[rank];
  const trace_program_t *p = &rp->trace->programs[pi];
  const trace_op_t *op = &p->ops[i];
  switch (op->type) {
  case TRACE_OP_SEND:
  case TRACE_OP_RECV:
    snprintf(buf, len, "rank %d to %s message %d of tag \"%s\"", trace_peer(op, rank),
             op->type == TRACE_OP_SEND ? "receive" : "send", rp->pairing.seq[rank][i] + 1,
             trace_tag(p, op));
    break;
  case TRACE_OP_COLL:
    snprintf(buf, len, "the other members of its group of \"%s\"",
             rp->trace->comms[op->comm].name);
    break;
  case TRACE_OP_WAIT:
    snprintf(buf, len, "event \"%s\"", p->events[op->event]);
    break;
  default:
    snprintf(buf, len, "its dependencies");
  }
}

/* After either engine: every op of a simulated rank finished, or one line
 * naming the first that did not (the head of a stuck stream) and what it waits
 * for. The checks on reading make this unreachable for a valid trace; it stays
 * so that a gap in them can never give figures with exit 0. */
static int check_finished(const rp_t *rp, const char *name, char *err, size_t len) {
  const trace_t *t = rp->trace;
  for (int r = 0; r < t->ranks; r++) {
    if (!rp->simulated[r])
      continue;
    const trace_program_t *p = &t->programs[t->program_of[r]];
    for (int i = 0; i < p->nops; i++) {
      char state = rp->rs[r].done[i];
      if (rp->sweep ? state == SWEEP_FINISHED : state != OP_PENDING)
        continue;
      char what[160];
      describe_wait(rp, r, i, what, sizeof what);
      snprintf(err, len, "%s: rank %d op %d: expected every op to finish, found it waiting "
               "forever for %s", name, r, p->ops[i].id, what);
      return -1;
    }
  }
  return 0;
}

/* One actor per stream of each simulated rank. */
static long count_actors(const rp_t *rp) {
  const trace_t *t = rp->trace;
  long nactors = 0;
  for (int r = 0; r < t->ranks; r++)
    nactors += rp->simulated[r] ? t->programs[t->program_of[r]].nstreams : 0;
  return nactors;
}

static void run_actors(rp_t *rp) {
  long nactors = count_actors(rp);
  actor_ctx_t *ctxs = calloc((size_t)nactors + 1, sizeof *ctxs);
  start_actors(rp, ctxs);
  simgrid_run();
  free(ctxs);
}

int replay_run(const system_cfg_t *sys, const trace_t *trace, const char *trace_name, bool flow,
               bool representatives, replay_result_t *out, char *err, size_t err_len) {
  memset(out, 0, sizeof *out);
  out->ranks = trace->ranks;
  out->representatives = representatives && !flow;
  if (topo_build(&sys->node, &sys->cluster, sys->chip.dies_per_package, trace->ranks,
                 trace->ranks_per_node, &out->topo, err, err_len))
    return -1;
  rp_t rp = {.sys = sys, .trace = trace, .topo = &out->topo, .flow = flow};
  find_watched(&rp);
  trace_pairing_init(&rp.pairing, trace);
  chip_cfg_t chip = sys->chip; /* ops in a step run at the clock the chip holds through it */
  chip.freq_hz *= chip.sustained_clock;
  op_cache_t *cache = op_cache_new(&chip);
  int rc = choose_simulated(&rp, out->representatives, trace_name, err, err_len);
  if (rc == 0)
    rc = cost_shaped(&rp, trace_name, cache, err, err_len);
  op_cache_free(cache);
  const char *all_ranks = getenv("NPUSIM_FLOW_ALL_RANKS"); /* tests compare with the full flow */
  if (rc == 0 && flow && representatives && !(all_ranks && strcmp(all_ranks, "1") == 0))
    rc = replay_scope_flow(&rp, trace_name, &out->representatives, err, err_len);
  if (rc == 0)
    rc = plan_collectives(&rp, trace_name, err, err_len);
  for (int i = 0; rc == 0 && i < rp.ninsts; i++)
    rp.insts[i].members = simulated_members(&rp, &rp.insts[i]);
  if (rc == 0)
    add_interference(&rp);
  rp.sweep = rc == 0 && sweepable(&rp);
  if (rc == 0 && !rp.sweep && count_actors(&rp) > FLOW_MAX_ACTORS) /* before SimGrid aborts */
    rc = (snprintf(err, err_len, "%s: expected at most %d rank streams to simulate (a SimGrid "
                   "actor each), found %ld; %s", trace_name, FLOW_MAX_ACTORS, count_actors(&rp),
                   flow ? "use --fidelity analytic, where one rank runs for all ranks of a "
                          "program" : "give ranks that run alike one program"), -1);
  if (rc == 0 && !rp.sweep) { /* the actors need the simulator and its platform */
    pair_set_t pairs;
    pair_set_init(&pairs);
    int endpoints = 1;
    if (flow)
      collect_pairs(&rp, &pairs, &endpoints);
    rc = coll_flow_start(&out->topo, endpoints, &pairs, err, err_len);
    pair_set_free(&pairs);
  }
  if (rc == 0) {
    init_ranks(&rp);
    if (rp.sweep)
      replay_sweep(&rp);
    else
      run_actors(&rp);
    rc = check_finished(&rp, trace_name, err, err_len);
  }
  if (rc == 0) {
    for (int r = 0; r < trace->ranks; r++)
      out->simulated_ranks += rp.simulated[r];
    summarise(&rp, out);
    rc = link_figures(&rp, out, trace_name, err, err_len);
    out->spans = rp.spans;
    rp.spans = NULL;
  }
  free_state(&rp);
  if (rc)
    replay_result_free(out, trace);
  return rc;
}

void replay_result_free(replay_result_t *r, const trace_t *trace) {
  for (int i = 0; r->spans && i < trace->ranks; i++)
    free(r->spans[i]);
  free(r->spans);
  free(r->per_rank);
  free(r->per_comm);
  linkstats_free(&r->links);
  topo_free(&r->topo);
  memset(r, 0, sizeof *r);
}
