/* replay_contend.c - links shared by concurrent transfers in the analytic
 * fidelity; see replay_contend.h. Here the jobs in time (start, parts, end),
 * the stand-ins that matter, rank-paced collectives and links dying; the
 * sharing of the links among the jobs in flight is replay_contend_share.c's. */
#include "replay_contend_state.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "npu_int.h"

static void free_own(job_t *j);
static void paced_event(replay_contend_t *c, int run, int kind, int e, int p, int x);
static void paced_free(struct paced *pc);
static void end_job(replay_contend_t *c, int id);
static void find_relevant(replay_contend_t *c);

/* ---- shapes ---- */

/* Inst k's shape on topo: the plan's topology (alone: the plan's time) or
 * the one after links die. */
static void shape_of_inst(const replay_plan_t *pl, const topo_t *topo, int k, shape_t *sh) {
  const inst_t *x = &pl->insts[k];
  const coll_sched_t *s = &x->plan.sched;
  *sh = (shape_t){.overhead_s = pl->sys->coll.op_overhead_s,
                  .nphases = s->nphases,
                  .loops = s->loops > 0 ? s->loops : 1,
                  .phases = coll_analytic_phases(topo, &pl->sys->coll, s),
                  .alone_s = topo == pl->topo ? x->analytic_s
                                              : coll_analytic_time(topo, &pl->sys->coll, s, NULL)};
}

/* The topology a transfer starting at start_s is routed on: after the links'
 * death (or once it has been applied), round the dead links. */
static const topo_t *topo_now(const replay_contend_t *c, double start_s) {
  const topo_t *t = c->topo;
  return t->after && (c->dead || start_s >= t->death_s) ? t->after : t;
}

/* Inst k's shape for a job starting at start_s: after the links' death, on
 * the topology after it. */
static const shape_t *inst_shape(replay_contend_t *c, const replay_plan_t *pl, int k,
                                 double start_s) {
  bool after = topo_now(c, start_s) != c->topo;
  shape_t *sh = after ? &c->after_shapes[k] : &c->inst_shapes[k];
  if (!sh->phases)
    shape_of_inst(pl, after ? pl->topo->after : pl->topo, k, sh);
  return sh;
}

/* A message: its path's latency, then its bytes on every hop. */
static void shape_of_message(const topo_t *topo, int src, int dst, double bytes, shape_t *sh,
                             coll_phase_cost_t *ph) {
  topo_hop_t hops[TOPO_MAX_HOPS];
  int nh = topo_route(topo, src, dst, hops);
  ph->slots = malloc(((size_t)nh + 1) * sizeof *ph->slots);
  ph->bytes = malloc(((size_t)nh + 1) * sizeof *ph->bytes);
  ph->nloads = nh;
  for (int h = 0; h < nh; h++) {
    ph->slots[h] = 2 * hops[h].link + hops[h].dir;
    ph->bytes[h] = bytes;
  }
  /* alone: topo_path_time_s's parts, which sharing stretches apart */
  ph->link_s = topo_path_beta_s(topo, hops, nh, bytes);
  ph->fixed_s = topo_path_alpha_s(topo, hops, nh);
  *sh = (shape_t){.nphases = 1, .loops = 1, .phases = ph, .alone_s = ph->fixed_s + ph->link_s};
}

/* ---- who stands for whom ---- */

/* The groups of inst k's communicator without a simulated member whose ranks
 * the members of k's group stand for (the first rank of their program). */
static void find_siblings(replay_contend_t *c, const replay_plan_t *pl, int k) {
  const inst_t *x = &pl->insts[k];
  const trace_t *t = pl->trace;
  const trace_comm_t *cm = &t->comms[x->comm];
  trace_op_t sig = {.kind = x->kind, .bytes = x->bytes, .root = x->root, .algo = (char *)x->algo};
  for (int g = 0; g < cm->ngroups; g++) {
    if (g == x->group || cm->sizes[g] == 0 || pl->simulated[cm->groups[g][0]])
      continue;
    bool any_simulated = false;
    for (int m = 0; m < cm->sizes[g]; m++)
      any_simulated = any_simulated || pl->simulated[cm->groups[g][m]];
    int rep = t->programs[t->program_of[cm->groups[g][0]]].ranks[0];
    if (any_simulated || trace_group_of(cm, rep) != x->group)
      continue;
    int s = replay_inst_find(pl, x->comm, g, &sig);
    if (s < 0)
      continue; /* planned only where a program's rank leads it (replay_plan.c) */
    c->siblings[k] = realloc(c->siblings[k], ((size_t)c->nsiblings[k] + 1) * sizeof(int));
    c->siblings[k][c->nsiblings[k]++] = s;
  }
}

/* Timed faults in the order they strike: by time, then id (the same order
 * every run). A fault on a link kind of a large cluster makes thousands. */
static int cmp_change(const void *a, const void *b) {
  const change_ref_t *x = a, *y = b;
  if (x->at_s != y->at_s)
    return x->at_s < y->at_s ? -1 : 1;
  return (x->id > y->id) - (x->id < y->id);
}

replay_contend_t *replay_contend_new(const replay_plan_t *pl) {
  replay_contend_t *c = calloc(1, sizeof *c);
  c->ninsts = pl->ninsts;
  /* a plan of bare schedules (replay_contend_scheds) has no trace: every
   * collective shares, nobody stands for anyone */
  c->exclusive = pl->trace ? replay_exclusive_insts(pl)
                           : calloc((size_t)pl->ninsts + 1, sizeof *c->exclusive);
  int n = pl->ninsts;
  c->inst_shapes = calloc((size_t)n + 1, sizeof *c->inst_shapes);
  c->after_shapes = calloc((size_t)n + 1, sizeof *c->after_shapes);
  c->pl = pl;
  c->siblings = calloc((size_t)n + 1, sizeof *c->siblings);
  c->nsiblings = calloc((size_t)n + 1, sizeof *c->nsiblings);
  for (int k = 0; k < n; k++)
    if (!c->exclusive[k] && pl->insts[k].members > 0)
      find_siblings(c, pl, k);
  c->topo = pl->topo;
  c->rank_pace = coll_rank_paced(pl->sys->coll.analytic_progress, pl->topo);
  find_relevant(c);
  c->nslots = 2 * pl->topo->nlinks;
  c->cap = malloc(((size_t)c->nslots + 1) * sizeof *c->cap);
  c->used = calloc((size_t)c->nslots + 1, sizeof *c->used);
  c->demand = calloc((size_t)c->nslots + 1, sizeof *c->demand);
  c->full = calloc((size_t)c->nslots + 1, 1);
  c->users = calloc((size_t)c->nslots + 1, sizeof *c->users);
  for (int s = 0; s < c->nslots; s++)
    c->cap[s] = topo_link_bw(pl->topo, s / 2);
  c->nchanges = pl->topo->nchanges;
  c->changes = malloc(((size_t)c->nchanges + 1) * sizeof *c->changes);
  for (int k = 0; k < c->nchanges; k++)
    c->changes[k] = (change_ref_t){pl->topo->changes[k].at_s, k};
  qsort(c->changes, (size_t)c->nchanges, sizeof *c->changes, cmp_change);
  c->touched = malloc(((size_t)c->nslots + 1) * sizeof *c->touched);
  c->fill_at = malloc(((size_t)c->nslots + 1) * sizeof *c->fill_at);
  c->fill_off = malloc(((size_t)c->nslots + 2) * sizeof *c->fill_off);
  c->fill_fill = malloc(((size_t)c->nslots + 1) * sizeof *c->fill_fill);
  c->fill_changed = malloc(((size_t)c->nslots + 1) * sizeof *c->fill_changed);
  c->loads = calloc((size_t)c->nslots + 1, sizeof *c->loads);
  c->risky = malloc(((size_t)c->nslots + 1) * sizeof *c->risky);
  for (int s = 0; s < c->nslots; s++)
    c->loads[s].risky_at = -1;
  return c;
}

/* ---- the stand-ins that matter ----
 * A sibling (a group no simulated rank is in) or a stand-in message (a rank
 * left out, sending) is only there to load the links a job someone waits for
 * crosses. One that can share no link with such a job, directly or through
 * other stand-ins, changes nobody's time and is left out: on a fabric whose
 * shared tiers never bind (one spine, one core, no oversubscription), a DP
 * ring of one tensor-parallel position never meets another's (they use
 * different NICs), so 7 of 8 siblings at TP 8 go. Links are judged over
 * approximately: a group's transfers can cross its members' NICs and
 * supernode ports and, where two members share a server, that server's
 * scale-up and die links (topo_rank_links); a message its route. Without
 * such a fabric, with faults, or with links dying, every stand-in runs. */

typedef struct {
  char *mark;
  bool hit, grew;
} scan_t;

static void hit_link(void *arg, int link) {
  scan_t *s = arg;
  s->hit = s->hit || s->mark[link];
}

static void mark_link(void *arg, int link) {
  scan_t *s = arg;
  s->grew = s->grew || !s->mark[link];
  s->mark[link] = 1;
}

/* fn on the links group g of communicator comm can cross; seen: a scratch
 * per server, left all false. */
static void group_links(const topo_t *t, const trace_comm_t *cm, int g, bool *seen,
                        void (*fn)(void *, int), void *arg) {
  bool shared = false;
  for (int m = 0; m < cm->sizes[g] && !shared; m++) {
    int s = topo_server_of(t, cm->groups[g][m]);
    shared = seen[s];
    seen[s] = true;
  }
  for (int m = 0; m < cm->sizes[g]; m++) {
    seen[topo_server_of(t, cm->groups[g][m])] = false;
    topo_rank_links(t, cm->groups[g][m], shared, fn, arg);
  }
}

/* fn on the links of the message rank r sends for op o. */
static void message_links(const topo_t *t, const trace_op_t *o, int r, void (*fn)(void *, int),
                          void *arg) {
  topo_hop_t hops[TOPO_MAX_HOPS];
  int nh = topo_route(t, r, trace_peer(o, r), hops);
  for (int h = 0; h < nh; h++)
    if (!topo_link_never_binding(t, hops[h].link))
      fn(arg, hops[h].link);
}

/* Whether every link shared by more than a few jobs never binds, and nothing
 * reroutes (faults), so that the links above are all a job can share. */
static bool prunable(const topo_t *t) {
  if (t->after || t->cluster.faults.n > 0)
    return false;
  for (int l = t->first_uplink; l < t->nlinks; l++)
    if (!topo_link_never_binding(t, l))
      return false;
  return true;
}

/* Walks the stand-ins once: those that reach the marked links mark theirs
 * (scan.grew tells whether any did). */
static void spread(replay_contend_t *c, scan_t *scan, bool *seen) {
  const replay_plan_t *pl = c->pl;
  const trace_t *tr = pl->trace;
  for (int k = 0; k < c->ninsts; k++)
    for (int s = 0; s < c->nsiblings[k]; s++) {
      int sib = c->siblings[k][s];
      const inst_t *x = &pl->insts[sib];
      if (c->relevant_inst[sib])
        continue;
      scan->hit = false;
      group_links(c->topo, &tr->comms[x->comm], x->group, seen, hit_link, scan);
      if (scan->hit) {
        c->relevant_inst[sib] = true;
        group_links(c->topo, &tr->comms[x->comm], x->group, seen, mark_link, scan);
      }
    }
  for (int pi = 0; pi < tr->nprograms; pi++) {
    const trace_program_t *p = &tr->programs[pi];
    for (int i = 0; i < p->nops; i++) {
      if (p->ops[i].type != TRACE_OP_SEND)
        continue;
      for (int m = 0; m < p->nranks; m++) {
        if (pl->simulated[p->ranks[m]])
          continue;
        scan->hit = false;
        message_links(c->topo, &p->ops[i], p->ranks[m], hit_link, scan);
        if (scan->hit)
          message_links(c->topo, &p->ops[i], p->ranks[m], mark_link, scan);
      }
    }
  }
}

/* Marks the links of the jobs someone waits for (the simulated members'
 * collectives, the simulated ranks' messages), then spreads the marks
 * through the stand-ins until none reaches a new link. */
static void find_relevant(replay_contend_t *c) {
  const replay_plan_t *pl = c->pl;
  const trace_t *tr = pl->trace;
  const topo_t *t = c->topo;
  if (pl->all_standins || !prunable(t))
    return;
  c->relevant_link = calloc((size_t)t->nlinks + 1, 1);
  c->relevant_inst = calloc((size_t)c->ninsts + 1, sizeof *c->relevant_inst);
  bool *seen = calloc((size_t)t->nodes + 1, sizeof *seen);
  scan_t scan = {c->relevant_link, false, false};
  for (int k = 0; k < c->ninsts; k++)
    if (!c->exclusive[k] && pl->insts[k].members > 0)
      group_links(t, &tr->comms[pl->insts[k].comm], pl->insts[k].group, seen, mark_link, &scan);
  for (int pi = 0; pi < tr->nprograms; pi++) {
    const trace_program_t *p = &tr->programs[pi];
    for (int i = 0; i < p->nops; i++)
      for (int m = 0; m < p->nranks && p->ops[i].type == TRACE_OP_SEND; m++)
        if (pl->simulated[p->ranks[m]])
          message_links(t, &p->ops[i], p->ranks[m], mark_link, &scan);
  }
  do {
    scan.grew = false;
    spread(c, &scan, seen);
  } while (scan.grew);
  free(seen);
}

int replay_contend_siblings(const replay_contend_t *c, int inst, int *left_out) {
  int run = 0;
  for (int s = 0; s < c->nsiblings[inst]; s++)
    run += !c->relevant_inst || c->relevant_inst[c->siblings[inst][s]];
  *left_out = c->nsiblings[inst] - run;
  return run;
}

bool replay_contend_shares(const replay_contend_t *c, int inst) {
  return !c->exclusive[inst];
}

void replay_contend_free(replay_contend_t *c) {
  if (!c)
    return;
  for (int k = 0; k < c->ninsts; k++) {
    coll_phase_costs_free(c->inst_shapes[k].phases, c->inst_shapes[k].nphases);
    coll_phase_costs_free(c->after_shapes[k].phases, c->after_shapes[k].nphases);
    free(c->siblings[k]);
  }
  free(c->inst_shapes);
  free(c->after_shapes);
  free(c->siblings);
  free(c->nsiblings);
  free(c->exclusive);
  free(c->cap);
  free(c->changes);
  free(c->used);
  free(c->demand);
  free(c->full);
  free(c->users);
  for (int j = 0; j < c->njobs; j++) { /* jobs still in flight (a replay cut short) */
    free_own(&c->jobs[j]);
    paced_free(c->jobs[j].paced);
  }
  free(c->jobs);
  free(c->spare);
  free(c->active);
  free(c->open);
  free(c->open_link);
  free(c->ending);
  free(c->touched);
  free(c->fill);
  free(c->fill_at);
  free(c->fill_off);
  free(c->fill_fill);
  free(c->fill_jobs);
  free(c->fill_frozen);
  free(c->in_open);
  free(c->fill_list);
  free(c->fill_changed);
  free(c->heap);
  free(c->ended);
  for (int s = 0; s < c->nslots; s++)
    free(c->loads[s].e);
  for (int j = 0; j < c->capjobs; j++) {
    free(c->reg_slots[j]);
    free(c->reg_pos[j]);
    free(c->reg_rate[j]);
  }
  free(c->loads);
  free(c->risky);
  free(c->order);
  free(c->reg_link);
  free(c->reg_slots);
  free(c->reg_pos);
  free(c->reg_rate);
  free(c->nreg);
  free(c->seq);
  free(c->relevant_link);
  free(c->relevant_inst);
  free(c);
}

/* ---- jobs ---- */


/* Frees what a job's own shape holds (a caught collective's phases after the
 * first are its inst's). */
static void free_own(job_t *j) {
  free(j->own_phase.slots);
  free(j->own_phase.bytes);
  j->own_phase.slots = NULL;
  j->own_phase.bytes = NULL;
  if (j->own_phases) {
    free(j->own_phases[0].slots);
    free(j->own_phases[0].bytes);
    free(j->own_phases);
    j->own_phases = NULL;
  }
}

static int new_job(replay_contend_t *c, double start_s, bool owner) {
  int id;
  if (c->nspare > 0) {
    id = c->spare[--c->nspare];
  } else {
    if (c->njobs == c->capjobs) {
      c->capjobs = c->capjobs ? 2 * c->capjobs : 256;
      c->jobs = realloc(c->jobs, (size_t)c->capjobs * sizeof *c->jobs);
      c->spare = realloc(c->spare, (size_t)c->capjobs * sizeof *c->spare);
      c->active = realloc(c->active, (size_t)c->capjobs * sizeof *c->active);
      c->open = realloc(c->open, (size_t)c->capjobs * sizeof *c->open);
      c->open_link = realloc(c->open_link, (size_t)c->capjobs * sizeof *c->open_link);
      c->fill_frozen = realloc(c->fill_frozen, (size_t)c->capjobs * sizeof *c->fill_frozen);
      c->in_open = realloc(c->in_open, (size_t)c->capjobs * sizeof *c->in_open);
      c->fill_list = realloc(c->fill_list, (size_t)c->capjobs * sizeof *c->fill_list);
      c->ending = realloc(c->ending, (size_t)c->capjobs * sizeof *c->ending);
      c->heap = realloc(c->heap, (size_t)c->capjobs * sizeof *c->heap);
      c->ended = realloc(c->ended, (size_t)c->capjobs * sizeof *c->ended);
      c->reg_link = realloc(c->reg_link, (size_t)c->capjobs * sizeof *c->reg_link);
      c->reg_slots = realloc(c->reg_slots, (size_t)c->capjobs * sizeof *c->reg_slots);
      c->reg_pos = realloc(c->reg_pos, (size_t)c->capjobs * sizeof *c->reg_pos);
      c->reg_rate = realloc(c->reg_rate, (size_t)c->capjobs * sizeof *c->reg_rate);
      c->nreg = realloc(c->nreg, (size_t)c->capjobs * sizeof *c->nreg);
      c->seq = realloc(c->seq, (size_t)c->capjobs * sizeof *c->seq);
      for (int k = c->njobs; k < c->capjobs; k++) {
        c->reg_link[k] = NULL;
        c->reg_slots[k] = NULL;
        c->reg_pos[k] = NULL;
        c->reg_rate[k] = NULL;
        c->nreg[k] = 0;
        c->seq[k] = 0;
        c->in_open[k] = 0;
      }
    }
    id = c->njobs++;
  }
  c->jobs[id] = (job_t){.start_s = start_s, .owner = owner, .inst = -1, .paced_of = -1};
  return id;
}

static bool heap_less(const replay_contend_t *c, int a, int b) {
  const job_t *x = &c->jobs[a], *y = &c->jobs[b];
  return x->start_s != y->start_s ? x->start_s < y->start_s : a < b;
}

static void heap_push(replay_contend_t *c, int id) {
  int i = c->nheap++;
  c->heap[i] = id;
  while (i > 0 && heap_less(c, c->heap[i], c->heap[(i - 1) / 2])) {
    int up = (i - 1) / 2, t = c->heap[up];
    c->heap[up] = c->heap[i];
    c->heap[i] = t;
    i = up;
  }
}

static int heap_pop(replay_contend_t *c) {
  int top = c->heap[0], i = 0;
  c->heap[0] = c->heap[--c->nheap];
  for (;;) {
    int l = 2 * i + 1, r = l + 1, m = i;
    if (l < c->nheap && heap_less(c, c->heap[l], c->heap[m]))
      m = l;
    if (r < c->nheap && heap_less(c, c->heap[r], c->heap[m]))
      m = r;
    if (m == i)
      return top;
    int t = c->heap[m];
    c->heap[m] = c->heap[i];
    c->heap[i] = t;
    i = m;
  }
}

/* ---- rank-paced collectives (collectives.analytic_progress "rank") ----
 * Where ECMP hashes flows onto several spines or cores, a collective's
 * transfers collide unevenly, and a phase that ends for every rank with its
 * slowest transfer charges each collision to every rank in every phase.
 * Rank-paced, a collective runs as coll_flow.c runs it on the fabric: every
 * endpoint walks the phases where it sends or receives, round by round; it
 * waits its sends' path latency (and the step latency), then posts them and
 * its receives; a transfer starts once both its ends have posted (the
 * rendezvous) and shares the links with every other job in flight by the same
 * max-min sharing; the endpoint's round ends with its last transfer, then it
 * reduces what it received. A rank a collision missed goes on, and meets the
 * ranks it delayed only where the schedule makes it. Each transfer and each
 * wait is a job of its own (a wait an empty job starting when it is over), so
 * a collective costs events per transfer, not per phase. Transfers are
 * messages to the faults: a timed fault changes the capacity they share; when
 * links die, one on a dying link is resent whole round it from then, and later
 * ones take the routes after. Chunked (NVLS) phases keep the phase model. */

enum { PACED_LAUNCH, PACED_POST, PACED_REDUCE, PACED_XFER };

typedef struct {
  int src, dst;        /* endpoints, the collective's own numbering */
  double bytes;
  double alpha_s[2];   /* its path's latency before and after links die */
} pxfer_t;

typedef struct {
  pxfer_t *x;
  int nx;
  int *off, *idx;      /* per endpoint: the transfers it sends or receives */
  int *posted;         /* per transfer: ends posted this round */
  int rounds;
  const coll_phase_t *ph; /* the schedule's phase (the inst's plan, kept through the run) */
} pphase_t;

struct paced {
  int inst, nphases, steps, nends, left;
  int *ends;           /* global id of each endpoint */
  pphase_t *ph;
  int *step, *round, *pending; /* per endpoint: where it is */
  double *received;
};

static bool sched_chunked(const coll_sched_t *s) {
  for (int p = 0; p < s->nphases; p++)
    if (s->phases[p].chunk_steps > 0)
      return true;
  return false;
}

static void paced_free(struct paced *pc) {
  if (!pc)
    return;
  for (int p = 0; p < pc->nphases; p++) {
    free(pc->ph[p].x);
    free(pc->ph[p].off);
    free(pc->ph[p].idx);
    free(pc->ph[p].posted);
  }
  free(pc->ph);
  free(pc->ends);
  free(pc->step);
  free(pc->round);
  free(pc->pending);
  free(pc->received);
  free(pc);
}

static int end_index(const struct paced *pc, int id) {
  const int *at = bsearch(&id, pc->ends, (size_t)pc->nends, sizeof id, npu_cmp_int);
  return (int)(at - pc->ends);
}

static double path_alpha_s(const topo_t *t, int src, int dst) {
  topo_hop_t hops[TOPO_MAX_HOPS];
  int nh = topo_route(t, src, dst, hops);
  return topo_path_alpha_s(t, hops, nh);
}

/* A schedule's phases as endpoints walk them. */
static struct paced *paced_new(const replay_plan_t *pl, int inst) {
  const coll_sched_t *s = &pl->insts[inst].plan.sched;
  const topo_t *t = pl->topo;
  struct paced *pc = calloc(1, sizeof *pc);
  pc->inst = inst;
  pc->nphases = s->nphases;
  pc->steps = s->nphases * (s->loops > 0 ? s->loops : 1);
  size_t n = 0;
  for (int p = 0; p < s->nphases; p++)
    n += 2 * (size_t)s->phases[p].nxfers;
  pc->ends = malloc((n + 1) * sizeof *pc->ends);
  for (int p = 0; p < s->nphases; p++)
    for (int i = 0; i < s->phases[p].nxfers; i++) {
      pc->ends[pc->nends++] = s->phases[p].xfers[i].src;
      pc->ends[pc->nends++] = s->phases[p].xfers[i].dst;
    }
  qsort(pc->ends, (size_t)pc->nends, sizeof *pc->ends, npu_cmp_int);
  int k = 0;
  for (int i = 0; i < pc->nends; i++)
    if (k == 0 || pc->ends[k - 1] != pc->ends[i])
      pc->ends[k++] = pc->ends[i];
  pc->nends = k;
  double wire = s->wire_factor >= 1 ? s->wire_factor : 1;
  pc->ph = calloc((size_t)s->nphases + 1, sizeof *pc->ph);
  for (int p = 0; p < s->nphases; p++) {
    const coll_phase_t *ph = &s->phases[p];
    pphase_t *q = &pc->ph[p];
    q->nx = ph->nxfers;
    q->rounds = ph->rounds > 0 ? ph->rounds : 1;
    q->ph = ph;
    q->x = malloc(((size_t)q->nx + 1) * sizeof *q->x);
    q->posted = calloc((size_t)q->nx + 1, sizeof *q->posted);
    q->off = calloc((size_t)pc->nends + 1, sizeof *q->off);
    q->idx = malloc((2 * (size_t)q->nx + 1) * sizeof *q->idx);
    for (int i = 0; i < q->nx; i++) {
      const coll_xfer_t *x = &ph->xfers[i];
      q->x[i] = (pxfer_t){end_index(pc, x->src), end_index(pc, x->dst), x->bytes * wire,
                          {path_alpha_s(t, x->src, x->dst),
                           t->after ? path_alpha_s(t->after, x->src, x->dst) : 0}};
      q->off[q->x[i].src + 1]++;
      q->off[q->x[i].dst + 1]++;
    }
    for (int e = 0; e < pc->nends; e++)
      q->off[e + 1] += q->off[e];
    int *fill = calloc((size_t)pc->nends + 1, sizeof *fill);
    for (int i = 0; i < q->nx; i++) {
      int a = q->x[i].src, b = q->x[i].dst;
      q->idx[q->off[a] + fill[a]++] = i;
      q->idx[q->off[b] + fill[b]++] = i;
    }
    free(fill);
  }
  pc->step = calloc((size_t)pc->nends + 1, sizeof *pc->step);
  pc->round = calloc((size_t)pc->nends + 1, sizeof *pc->round);
  pc->pending = calloc((size_t)pc->nends + 1, sizeof *pc->pending);
  pc->received = calloc((size_t)pc->nends + 1, sizeof *pc->received);
  pc->left = pc->nends;
  return pc;
}

/* A step of run: a wait (fixed) or a transfer (its path, shared), from now. */
static void paced_job(replay_contend_t *c, int run, int kind, int e, int p, int x, double wait_s) {
  /* a wait is an empty job starting when it is over: the heap of starts
   * times it, and it never joins the jobs in flight */
  int id = new_job(c, kind == PACED_XFER ? c->now : c->now + wait_s, false);
  job_t *j = &c->jobs[id];
  j->paced_of = run;
  j->paced_kind = kind;
  j->paced_e = e;
  j->paced_p = p;
  j->paced_x = x;
  j->shape = NULL;
  if (kind == PACED_XFER) { /* a message's shape, routed on the links alive now */
    const struct paced *pc = c->jobs[run].paced;
    const pxfer_t *t = &pc->ph[p].x[x];
    j->src = pc->ends[t->src];
    j->dst = pc->ends[t->dst];
    j->bytes = t->bytes;
    shape_of_message(topo_now(c, c->now), j->src, j->dst, j->bytes, &j->own, &j->own_phase);
    j->own_phase.fixed_s = 0; /* its latency waited before posting */
    j->own.alone_s = j->own_phase.link_s;
  } else {
    j->own_phase = (coll_phase_cost_t){0};
    j->own = (shape_t){.nphases = 1, .loops = 1};
  }
  heap_push(c, id);
}

static void paced_begin(replay_contend_t *c, int run, int e);

/* The collective is through (its last endpoint, or none had anything to do). */
static void paced_done(replay_contend_t *c, int run) {
  job_t *j = &c->jobs[run];
  j->slowed = true; /* timed by the clock */
  if (j->owner)
    c->ended[c->nended++] = run;
  else
    end_job(c, run);
}

/* Endpoint e posts its round: each of its transfers whose other end posted
 * starts. */
static void paced_post(replay_contend_t *c, int run, int e) {
  struct paced *pc = c->jobs[run].paced;
  int p = pc->step[e] % pc->nphases;
  pphase_t *q = &pc->ph[p];
  pc->pending[e] = q->off[e + 1] - q->off[e];
  pc->received[e] = 0;
  for (int k = q->off[e]; k < q->off[e + 1]; k++) {
    int x = q->idx[k];
    if (++q->posted[x] == 2) {
      q->posted[x] = 0;
      paced_job(c, run, PACED_XFER, -1, p, x, 0);
      pc = c->jobs[run].paced; /* the job array may have moved */
    }
  }
}

/* Endpoint e is through its round: the next round, the next phase it takes
 * part in, or its end; the collective ends with its last endpoint. */
static void paced_next(replay_contend_t *c, int run, int e) {
  struct paced *pc = c->jobs[run].paced;
  if (++pc->round[e] >= pc->ph[pc->step[e] % pc->nphases].rounds) {
    pc->round[e] = 0;
    pc->step[e]++;
  }
  paced_begin(c, run, e);
}

static void paced_begin(replay_contend_t *c, int run, int e) {
  struct paced *pc = c->jobs[run].paced;
  while (pc->step[e] < pc->steps) {
    const pphase_t *q = &pc->ph[pc->step[e] % pc->nphases];
    if (q->off[e + 1] > q->off[e])
      break;
    pc->step[e]++;
  }
  if (pc->step[e] >= pc->steps) {
    if (--pc->left == 0)
      paced_done(c, run);
    return;
  }
  const replay_plan_t *pl = c->pl;
  const coll_sched_t *s = &pl->insts[pc->inst].plan.sched;
  const pphase_t *q = &pc->ph[pc->step[e] % pc->nphases];
  double wait = 0;
  bool sends = false;
  int after = topo_now(c, c->now) != c->topo; /* the latencies round dead links */
  for (int k = q->off[e]; k < q->off[e + 1]; k++) {
    const pxfer_t *x = &q->x[q->idx[k]];
    if (x->src != e)
      continue;
    sends = true;
    double alpha_s = x->alpha_s[after];
    wait = alpha_s > wait ? alpha_s : wait;
  }
  if (sends)
    wait += pl->sys->coll.step_latency_s + s->step_s;
  if (wait > 0)
    paced_job(c, run, PACED_POST, e, 0, 0, wait);
  else
    paced_post(c, run, e);
}

static void paced_event(replay_contend_t *c, int run, int kind, int e, int p, int x) {
  struct paced *pc = c->jobs[run].paced;
  const replay_plan_t *pl = c->pl;
  switch (kind) {
  case PACED_LAUNCH:
    if (pc->nends == 0)
      paced_done(c, run);
    for (int k = 0; k < pc->nends; k++)
      paced_begin(c, run, k);
    break;
  case PACED_POST:
    paced_post(c, run, e);
    break;
  case PACED_REDUCE:
    paced_next(c, run, e);
    break;
  default: {
    const pxfer_t *t = &pc->ph[p].x[x];
    const coll_xfer_t *sx = &pl->insts[pc->inst].plan.sched.phases[p].xfers[x];
    int ends[2] = {t->src, t->dst};
    pc->received[t->dst] += sx->bytes;
    for (int k = 0; k < 2; k++) {
      pc = c->jobs[run].paced;
      int en = ends[k];
      if (--pc->pending[en] > 0)
        continue;
      double reduce = coll_phase_local_s(&pl->sys->coll, pc->ph[p].ph, pc->received[en]);
      if (reduce > 0)
        paced_job(c, run, PACED_REDUCE, en, 0, 0, reduce);
      else
        paced_next(c, run, en);
    }
  }
  }
}

/* A rank-paced collective: its own job (no parts), started by its launch. */
static int paced_start(replay_contend_t *c, const replay_plan_t *pl, int inst, double start_s,
                       bool owner) {
  int id = new_job(c, start_s, owner);
  c->jobs[id].inst = inst;
  c->jobs[id].paced = paced_new(pl, inst);
  double now = c->now;
  c->now = start_s; /* its launch starts then */
  paced_job(c, id, PACED_LAUNCH, -1, 0, 0,
            coll_sched_launch_s(&pl->sys->coll, &pl->insts[inst].plan.sched));
  c->now = now;
  return id;
}

static bool runs_paced(const replay_contend_t *c, const replay_plan_t *pl, int inst) {
  return c->rank_pace && !sched_chunked(&pl->insts[inst].plan.sched);
}

int replay_contend_coll(replay_contend_t *c, const replay_plan_t *pl, int inst, double start_s) {
  int id;
  if (runs_paced(c, pl, inst)) {
    id = paced_start(c, pl, inst, start_s, true);
  } else {
    id = new_job(c, start_s, true);
    c->jobs[id].shape = inst_shape(c, pl, inst, start_s);
    c->jobs[id].inst = inst;
    heap_push(c, id);
  }
  for (int s = 0; s < c->nsiblings[inst]; s++) {
    int sib = c->siblings[inst][s];
    if (c->relevant_inst && !c->relevant_inst[sib])
      continue; /* it shares no link with anyone waited for */
    if (runs_paced(c, pl, sib)) {
      paced_start(c, pl, sib, start_s, false);
      continue;
    }
    int k = new_job(c, start_s, false);
    c->jobs[k].shape = inst_shape(c, pl, sib, start_s);
    c->jobs[k].inst = sib;
    heap_push(c, k);
  }
  return id;
}

static int add_message(replay_contend_t *c, int src, int dst, double bytes, double start_s,
                       bool owner) {
  int id = new_job(c, start_s, owner);
  job_t *j = &c->jobs[id];
  shape_of_message(topo_now(c, start_s), src, dst, bytes, &j->own, &j->own_phase);
  j->shape = NULL;
  j->src = src;
  j->dst = dst;
  j->bytes = bytes;
  heap_push(c, id);
  return id;
}

int replay_contend_message(replay_contend_t *c, const replay_plan_t *pl, int sender, int op,
                           double start_s) {
  const trace_t *t = pl->trace;
  const trace_program_t *p = &t->programs[t->program_of[sender]];
  const trace_op_t *o = &p->ops[op];
  int id = add_message(c, sender, trace_peer(o, sender), o->bytes, start_s, true);
  for (int m = 0; m < p->nranks; m++) { /* the ranks the sender stands for */
    int r = p->ranks[m];
    if (pl->simulated[r])
      continue;
    if (c->relevant_link) { /* only one that shares a link with anyone waited for */
      scan_t scan = {c->relevant_link, false, false};
      message_links(pl->topo, o, r, hit_link, &scan);
      if (!scan.hit)
        continue;
    }
    add_message(c, r, trace_peer(o, r), o->bytes, start_s, false);
  }
  return id;
}

/* ---- sharing the links ---- */

/* Moves a job past finished parts; returns false once it has ended. */
static bool next_part(job_t *j) {
  const shape_t *sh = job_shape(j);
  long parts = 1 + 2L * sh->nphases * sh->loops;
  const coll_phase_cost_t *link;
  while (j->left_s <= 1e-15) {
    if (++j->part >= parts)
      return false;
    j->left_s = contend_part_len(sh, j->part, &link);
  }
  return true;
}


/* ---- time ---- */

static void end_job(replay_contend_t *c, int id) {
  job_t *j = &c->jobs[id];
  contend_unregister_loads(c, id);
  if (j->owner) {
    c->ended[c->nended++] = id;
    return; /* freed once handed out */
  }
  int run = j->paced_of, kind = j->paced_kind, e = j->paced_e, p = j->paced_p, x = j->paced_x;
  free_own(j);
  paced_free(j->paced);
  j->paced = NULL;
  c->spare[c->nspare++] = id;
  if (run >= 0) /* last: it may start new jobs, which may move the array */
    paced_event(c, run, kind, e, p, x);
}

/* ---- links dying (topo_t.after) ---- */

/* Whether a link part loads a link direction whose link dies. */
static bool part_dies(const topo_t *topo, const coll_phase_cost_t *link) {
  for (int l = 0; link && l < link->nloads; l++)
    if (topo_link_dies(topo, link->slots[l] / 2))
      return true;
  return false;
}

/* A collective in a link part on a dying link at T: its own shape from there,
 * the rest of the phase (coll_analytic_death_rest: the round in flight's
 * transfers on dying paths resent whole round them) then its inst's phases
 * after the death to the end of its last loop. */
static void catch_collective(replay_contend_t *c, job_t *j, const shape_t *pre,
                             const shape_t *after) {
  const replay_plan_t *pl = c->pl;
  long q = j->part - 1, ph = (q / 2) % pre->nphases, loop = q / 2 / pre->nphases;
  const coll_phase_cost_t *was = &pre->phases[ph];
  double done = was->link_s > 0 ? 1 - j->left_s / was->link_s : 0;
  long rest = pre->nphases - ph - 1 + (pre->loops - loop - 1) * pre->nphases;
  coll_phase_cost_t *v = calloc((size_t)rest + 1, sizeof *v);
  coll_analytic_death_rest(pl->topo, &pl->insts[j->inst].plan.sched, (int)ph, done > 0 ? done : 0,
                           &v[0]);
  for (long k = 1; k <= rest; k++)
    v[k] = after->phases[(ph + k) % pre->nphases];
  j->shape = NULL;
  j->own = (shape_t){.nphases = (int)rest + 1, .loops = 1};
  j->own_phases = v;
  j->part = 2; /* the rest's link part */
  j->left_s = v[0].link_s;
}

/* At T: every job on the links' old routes goes on on the routes after it.
 * One in a link part on a dying link is resent whole there (a message) or as
 * coll_analytic_death_rest says (a collective); the others keep their place
 * (their routes cross no dying link, so they are the same after) and take
 * the phases after the death from the next part on. Each is then timed by the
 * clock (slowed), not by its time alone. */
static void apply_death(replay_contend_t *c) {
  const topo_t *topo = c->topo;
  for (int a = 0; a < c->nactive; a++) /* their loads change: registered again in share() */
    contend_unregister_loads(c, c->active[a]);
  for (int a = 0; a < c->nactive; a++) {
    int id = c->active[a];
    job_t *j = &c->jobs[id];
    const coll_phase_cost_t *link = contend_job_link(j);
    bool caught = part_dies(topo, link);
    j->slowed = true;
    if (j->inst >= 0) {
      const shape_t *pre = j->shape;
      const shape_t *after = inst_shape(c, c->pl, j->inst, INFINITY);
      if (caught && pre)
        catch_collective(c, j, pre, after);
      else if (pre)
        j->shape = after;
      continue;
    }
    free_own(j); /* a message: its route after T, whole if it was caught */
    shape_of_message(topo->after, j->src, j->dst, j->bytes, &j->own, &j->own_phase);
    if (caught) {
      j->part = 2;
      j->left_s = j->own_phase.link_s;
    }
  }
  c->dead = true;
  c->dirty = true;
}

/* Runs time to the next moment some job ends or starts. */
static void step(replay_contend_t *c) {
  if (c->dirty) {
    contend_share(c);
    c->dirty = false;
  }
  double t = c->nheap > 0 ? c->jobs[c->heap[0]].start_s : INFINITY;
  for (int a = 0; a < c->nactive; a++) {
    const job_t *j = &c->jobs[c->active[a]];
    double done = c->now + j->left_s / j->rate;
    t = done < t ? done : t;
  }
  if (c->next_change < c->nchanges) { /* a timed fault: the rates change there */
    double at = c->changes[c->next_change].at_s;
    t = at < t ? at : t;
  }
  if (t < c->now) /* a start computed a hair before now: it starts now */
    t = c->now;
  int kept = 0, nending = 0;
  for (int a = 0; a < c->nactive; a++) {
    job_t *j = &c->jobs[c->active[a]];
    double done = c->now + j->left_s / j->rate;
    long part = j->part;
    j->left_s = done <= t ? 0 : j->left_s - j->rate * (t - c->now);
    bool more = next_part(j);
    c->dirty = c->dirty || j->part != part || done <= t;
    if (!more)
      c->ending[nending++] = c->active[a];
    else
      c->active[kept++] = c->active[a];
  }
  c->nactive = kept;
  c->now = t;
  for (int k = 0; k < nending; k++) /* at t: a rank-paced step's end starts the next */
    end_job(c, c->ending[k]);
  for (; c->next_change < c->nchanges && c->changes[c->next_change].at_s <= c->now;
       c->next_change++) {
    const topo_change_t *ch = &c->topo->changes[c->changes[c->next_change].id];
    c->cap[2 * ch->link] = c->cap[2 * ch->link + 1] = topo_link_bw_at(c->topo, ch->link, ch->at_s);
    contend_update_risk(c, 2 * ch->link);
    contend_update_risk(c, 2 * ch->link + 1);
    c->dirty = true;
  }
  if (c->topo->after && !c->dead && c->now >= c->topo->death_s)
    apply_death(c);
  while (c->nheap > 0 && c->jobs[c->heap[0]].start_s <= c->now) {
    int id = heap_pop(c);
    job_t *j = &c->jobs[id];
    const coll_phase_cost_t *link;
    j->left_s = contend_part_len(job_shape(j), 0, &link);
    c->seq[id] = c->next_seq++;
    if (next_part(j))
      c->active[c->nactive++] = id;
    else
      end_job(c, id);
    c->dirty = true;
  }
}

int replay_contend_next(replay_contend_t *c, double *duration_s) {
  while (c->first_ended == c->nended) {
    c->first_ended = c->nended = 0;
    if (c->nactive == 0 && c->nheap == 0)
      return -1;
    step(c);
  }
  int id = c->ended[c->first_ended++];
  job_t *j = &c->jobs[id];
  /* a job never slowed keeps the analytic model's own figure, bit for bit */
  *duration_s = j->slowed ? c->now - j->start_s : job_shape(j)->alone_s;
  j->owner = false;
  end_job(c, id);
  return id;
}

/* ---- collectives alone, rank-paced (the coll command) ---- */

void replay_contend_scheds(const topo_t *topo, const coll_cfg_t *cfg,
                           const coll_sched_t *const *scheds, int n, double *times_s) {
  system_cfg_t *sys = calloc(1, sizeof *sys);
  sys->coll = *cfg;
  inst_t *insts = calloc((size_t)n + 1, sizeof *insts);
  for (int i = 0; i < n; i++) {
    insts[i].plan.sched = *scheds[i]; /* borrowed, never freed here */
    insts[i].analytic_s = coll_analytic_time(topo, cfg, scheds[i], NULL);
  }
  replay_plan_t pl = {.sys = sys, .topo = topo, .insts = insts, .ninsts = n, .all_standins = true};
  replay_contend_t *c = replay_contend_new(&pl);
  double clock_s = 0;
  for (int i = 0; i < n; i++) {
    replay_contend_coll(c, &pl, i, clock_s);
    if (replay_contend_next(c, &times_s[i]) < 0)
      times_s[i] = 0;
    clock_s += times_s[i];
  }
  replay_contend_free(c);
  free(insts);
  free(sys);
}
