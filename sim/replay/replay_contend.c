/* replay_contend.c - links shared by concurrent transfers in the analytic
 * fidelity; see replay_contend.h. */
#include "replay_contend.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "npu_int.h"

/* A job's work: an optional fixed start (the collective's overhead), then
 * loops x phases, each a fixed part then a link part. */
typedef struct {
  double overhead_s;
  int nphases, loops;
  coll_phase_cost_t *phases;
  bool owned;           /* phases allocated for this shape (else the inst's) */
  double alone_s;       /* what the analytic model says alone, exactly */
} shape_t;

/* One collective of a group, or one message, in flight. */
typedef struct {
  const shape_t *shape;
  double start_s, end_s;
  long part;            /* 0: overhead; then 2 per phase per loop (fixed, link) */
  double left_s;        /* alone-time left of the part */
  double rate;          /* fraction of alone speed in a link part */
  bool slowed;
  int meeting;          /* the meeting whose duration it gives, or -1 (a sibling) */
} job_t;

struct replay_contend {
  int ninsts;
  shape_t *inst_shapes;  /* per inst; phases NULL until built */
  bool *exclusive;       /* per inst */
  int **siblings;        /* per inst: the same collective of the groups it stands for */
  int *nsiblings;
  double *cap;           /* per link direction: effective bandwidth */
  double *used, *demand; /* progressive filling, per link direction */
  int *users;            /* open jobs on each link direction */
  char *full;
  int nslots;
};

/* ---- shapes ---- */

static void shape_of_inst(const replay_plan_t *pl, int k, shape_t *sh) {
  const inst_t *x = &pl->insts[k];
  const coll_sched_t *s = &x->plan.sched;
  *sh = (shape_t){.overhead_s = pl->sys->coll.op_overhead_s, .nphases = s->nphases,
                  .loops = s->loops > 0 ? s->loops : 1,
                  .phases = coll_analytic_phases(pl->topo, &pl->sys->coll, s), .owned = true,
                  .alone_s = x->analytic_s};
}

static const shape_t *inst_shape(replay_contend_t *c, const replay_plan_t *pl, int k) {
  if (!c->inst_shapes[k].phases)
    shape_of_inst(pl, k, &c->inst_shapes[k]);
  return &c->inst_shapes[k];
}

/* A message: its path's latency, then its bytes on every hop. */
static void shape_of_message(const topo_t *topo, int src, int dst, double bytes, shape_t *sh,
                             coll_phase_cost_t *ph) {
  topo_hop_t hops[TOPO_MAX_HOPS];
  int nh = topo_route(topo, src, dst, hops);
  ph->slots = malloc(((size_t)nh + 1) * sizeof *ph->slots);
  ph->bytes = malloc(((size_t)nh + 1) * sizeof *ph->bytes);
  ph->nloads = nh;
  ph->link_s = 0;
  for (int h = 0; h < nh; h++) {
    ph->slots[h] = 2 * hops[h].link + hops[h].dir;
    ph->bytes[h] = bytes;
    double t = bytes / topo_link_bw(topo, hops[h].link);
    ph->link_s = t > ph->link_s ? t : ph->link_s;
  }
  ph->fixed_s = topo_path_alpha_s(topo, hops, nh);
  *sh = (shape_t){.nphases = 1, .loops = 1, .phases = ph, .owned = false,
                  .alone_s = ph->fixed_s + ph->link_s};
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

replay_contend_t *replay_contend_new(const replay_plan_t *pl) {
  replay_contend_t *c = calloc(1, sizeof *c);
  c->ninsts = pl->ninsts;
  c->exclusive = replay_exclusive_insts(pl);
  int n = pl->ninsts;
  c->inst_shapes = calloc((size_t)n + 1, sizeof *c->inst_shapes);
  c->siblings = calloc((size_t)n + 1, sizeof *c->siblings);
  c->nsiblings = calloc((size_t)n + 1, sizeof *c->nsiblings);
  for (int k = 0; k < n; k++)
    if (!c->exclusive[k] && pl->insts[k].members > 0)
      find_siblings(c, pl, k);
  c->nslots = 2 * pl->topo->nlinks;
  c->cap = malloc(((size_t)c->nslots + 1) * sizeof *c->cap);
  c->used = calloc((size_t)c->nslots + 1, sizeof *c->used);
  c->demand = calloc((size_t)c->nslots + 1, sizeof *c->demand);
  c->full = calloc((size_t)c->nslots + 1, 1);
  c->users = calloc((size_t)c->nslots + 1, sizeof *c->users);
  for (int s = 0; s < c->nslots; s++)
    c->cap[s] = topo_link_bw(pl->topo, s / 2);
  return c;
}

void replay_contend_free(replay_contend_t *c) {
  if (!c)
    return;
  for (int k = 0; k < c->ninsts; k++) {
    coll_phase_costs_free(c->inst_shapes[k].phases, c->inst_shapes[k].nphases);
    free(c->siblings[k]);
  }
  free(c->inst_shapes);
  free(c->siblings);
  free(c->nsiblings);
  free(c->exclusive);
  free(c->cap);
  free(c->used);
  free(c->demand);
  free(c->full);
  free(c->users);
  free(c);
}

/* ---- the jobs of one run ---- */

typedef struct {
  job_t *v;
  int n, cap;
  shape_t *msg_shapes;        /* one per message job */
  coll_phase_cost_t *msg_phases;
  int nmsg, capmsg;
} jobs_t;

static int add_job(jobs_t *J, const shape_t *sh, double start_s) {
  if (J->n == J->cap) {
    J->cap = J->cap ? 2 * J->cap : 256;
    J->v = realloc(J->v, (size_t)J->cap * sizeof *J->v);
  }
  J->v[J->n] = (job_t){.shape = sh, .start_s = start_s, .meeting = -1};
  return J->n++;
}

/* Message shapes live in their own arrays, which may move while jobs are
 * added: jobs point at them only once all are made (bind_messages). */
static int add_message(jobs_t *J, const topo_t *topo, int src, int dst, double bytes,
                       double start_s) {
  if (J->nmsg == J->capmsg) {
    J->capmsg = J->capmsg ? 2 * J->capmsg : 256;
    J->msg_shapes = realloc(J->msg_shapes, (size_t)J->capmsg * sizeof *J->msg_shapes);
    J->msg_phases = realloc(J->msg_phases, (size_t)J->capmsg * sizeof *J->msg_phases);
  }
  shape_of_message(topo, src, dst, bytes, &J->msg_shapes[J->nmsg], &J->msg_phases[J->nmsg]);
  int j = add_job(J, NULL, start_s);
  J->v[j].meeting = -2 - J->nmsg++; /* rebound to its shape below */
  return j;
}

static void bind_messages(jobs_t *J) {
  for (int m = 0; m < J->nmsg; m++)
    J->msg_shapes[m].phases = &J->msg_phases[m];
  for (int j = 0; j < J->n; j++)
    if (J->v[j].meeting <= -2) {
      J->v[j].shape = &J->msg_shapes[-2 - J->v[j].meeting];
      J->v[j].meeting = -1;
    }
}

static void jobs_free(jobs_t *J) {
  for (int m = 0; m < J->nmsg; m++) {
    free(J->msg_phases[m].slots);
    free(J->msg_phases[m].bytes);
  }
  free(J->msg_shapes);
  free(J->msg_phases);
  free(J->v);
}

/* Each collective meeting of a non-exclusive group: a job for it and one for
 * each group it stands for; job_of gets the meeting's job for every member's op. */
static void add_collectives(replay_contend_t *c, const replay_plan_t *pl,
                            const replay_record_t *rec, jobs_t *J, int **job_of) {
  const trace_t *t = pl->trace;
  int **meetings = calloc((size_t)c->ninsts + 1, sizeof *meetings);
  int *nmeet = calloc((size_t)c->ninsts + 1, sizeof *nmeet);
  int *seen = calloc((size_t)c->ninsts + 1, sizeof *seen);
  int *touched = malloc(((size_t)c->ninsts + 1) * sizeof *touched);
  for (int r = 0; r < t->ranks; r++) {
    if (!pl->simulated[r])
      continue;
    const trace_program_t *p = &t->programs[t->program_of[r]];
    int ntouched = 0;
    for (int i = 0; i < p->nops; i++) {
      int k = p->ops[i].type == TRACE_OP_COLL ? pl->inst_of[r][i] : -1;
      if (k < 0 || c->exclusive[k])
        continue;
      if (seen[k] == 0)
        touched[ntouched++] = k;
      int occ = seen[k]++;
      if (occ == nmeet[k]) { /* the first member here opens the meeting */
        meetings[k] = realloc(meetings[k], ((size_t)nmeet[k] + 1) * sizeof **meetings);
        double at = rec->spans[r][i].ready_s;
        meetings[k][nmeet[k]++] = add_job(J, inst_shape(c, pl, k), at);
        for (int s = 0; s < c->nsiblings[k]; s++)
          add_job(J, inst_shape(c, pl, c->siblings[k][s]), at);
      }
      job_of[r][i] = meetings[k][occ];
    }
    for (int q = 0; q < ntouched; q++)
      seen[touched[q]] = 0;
  }
  for (int k = 0; k < c->ninsts; k++)
    free(meetings[k]);
  free(meetings);
  free(nmeet);
  free(seen);
  free(touched);
}

/* A send or recv of a simulated rank, keyed by its message. */
typedef struct {
  int src, dst, tag, seq, rank, op;
} p2p_end_t;

static int cmp_p2p(const void *a, const void *b) {
  const p2p_end_t *x = a, *y = b;
  int kx[6] = {x->src, x->dst, x->tag, x->seq, x->rank, x->op};
  int ky[6] = {y->src, y->dst, y->tag, y->seq, y->rank, y->op};
  for (int i = 0; i < 6; i++)
    if (kx[i] != ky[i])
      return kx[i] < ky[i] ? -1 : 1;
  return 0;
}

/* Each message between simulated ranks (its send and recv paired by
 * trace_pairing_t) and the same message of every rank its sender stands for. */
static void add_messages(const replay_plan_t *pl, const replay_record_t *rec, jobs_t *J,
                         int **job_of) {
  const trace_t *t = pl->trace;
  p2p_end_t *ends = NULL;
  size_t n = 0, cap = 0;
  for (int r = 0; r < t->ranks; r++) {
    if (!pl->simulated[r])
      continue;
    int pi = t->program_of[r];
    const trace_program_t *p = &t->programs[pi];
    for (int i = 0; i < p->nops; i++) {
      const trace_op_t *op = &p->ops[i];
      if (op->type != TRACE_OP_SEND && op->type != TRACE_OP_RECV)
        continue;
      bool send = op->type == TRACE_OP_SEND;
      int peer = trace_peer(op, r);
      if (n == cap) {
        cap = cap ? 2 * cap : 256;
        ends = realloc(ends, cap * sizeof *ends);
      }
      ends[n++] = (p2p_end_t){send ? r : peer, send ? peer : r, pl->pairing.tag_id[pi][op->tag],
                              pl->pairing.seq[r][i], r, i};
    }
  }
  qsort(ends, n, sizeof *ends, cmp_p2p);
  for (size_t e = 0; e + 1 < n; e++) {
    const p2p_end_t *a = &ends[e], *b = &ends[e + 1];
    if (a->src != b->src || a->dst != b->dst || a->tag != b->tag || a->seq != b->seq)
      continue;
    const p2p_end_t *snd = a->rank == a->src ? a : b;
    const trace_program_t *p = &t->programs[t->program_of[snd->src]];
    const trace_op_t *op = &p->ops[snd->op];
    double at = rec->spans[snd->rank][snd->op].ready_s;
    int j = add_message(J, pl->topo, snd->src, snd->dst, op->bytes, at);
    job_of[a->rank][a->op] = job_of[b->rank][b->op] = j;
    for (int m = 0; m < p->nranks; m++) { /* the ranks the sender stands for */
      int r2 = p->ranks[m];
      if (!pl->simulated[r2])
        add_message(J, pl->topo, r2, trace_peer(op, r2), op->bytes, at);
    }
    e++;
  }
  free(ends);
}

/* ---- sharing the links ---- */

typedef struct {
  double start_s;
  int job;
} start_t;

static int cmp_start(const void *a, const void *b) {
  const start_t *x = a, *y = b;
  if (x->start_s != y->start_s)
    return x->start_s < y->start_s ? -1 : 1;
  return (x->job > y->job) - (x->job < y->job);
}

/* Job indices by start time (ties in job order). */
static void sort_by_start(int *order, int n, const job_t *v) {
  start_t *s = malloc(((size_t)n + 1) * sizeof *s);
  for (int j = 0; j < n; j++)
    s[j] = (start_t){v[j].start_s, j};
  qsort(s, (size_t)n, sizeof *s, cmp_start);
  for (int j = 0; j < n; j++)
    order[j] = s[j].job;
  free(s);
}

/* What the plan held for an op before this update. */
static double rec_was(const replay_plan_t *pl, int r, int i, double alone) {
  return pl->comm_s ? pl->comm_s[r][i] : alone;
}

/* Part `part` of a shape: its alone length and whether it uses links. */
static double part_len(const shape_t *sh, long part, const coll_phase_cost_t **link) {
  *link = NULL;
  if (part == 0)
    return sh->overhead_s;
  long q = part - 1, ph = (q / 2) % sh->nphases;
  const coll_phase_cost_t *c = &sh->phases[ph];
  if (q % 2 == 0)
    return c->fixed_s;
  if (c->nloads > 0 && c->link_s > 0)
    *link = c;
  return c->link_s;
}

static long part_count(const shape_t *sh) {
  return 1 + 2L * sh->nphases * sh->loops;
}

/* Moves a job past finished parts; returns false once it has ended. */
static bool next_part(job_t *j, double now) {
  const coll_phase_cost_t *link;
  while (j->left_s <= 1e-12) {
    if (++j->part >= part_count(j->shape)) {
      j->end_s = now;
      return false;
    }
    j->left_s = part_len(j->shape, j->part, &link);
  }
  return true;
}

/* Max-min fair rates (fractions of alone speed, at most 1) of the active jobs
 * in a link part: every rate rises together until a link direction is full;
 * the jobs crossing it keep that rate, the others rise on. */
static void share(replay_contend_t *c, job_t *v, const int *active, int nactive, int *open,
                  int *touched) {
  int nopen = 0, ntouched = 0;
  for (int a = 0; a < nactive; a++) {
    job_t *j = &v[active[a]];
    const coll_phase_cost_t *link;
    part_len(j->shape, j->part, &link);
    j->rate = 1;
    if (!link)
      continue;
    open[nopen++] = active[a];
    for (int l = 0; l < link->nloads; l++) {
      int s = link->slots[l];
      if (c->users[s] == 0)
        touched[ntouched++] = s;
      c->users[s]++;
      c->demand[s] += link->bytes[l] / link->link_s;
    }
  }
  double level = 0;
  while (nopen > 0) {
    double next = 1;
    for (int q = 0; q < ntouched; q++) {
      int s = touched[q];
      if (c->users[s] > 0 && c->demand[s] > 0) {
        double l = (c->cap[s] - c->used[s]) / c->demand[s];
        next = l < next ? l : next;
      }
    }
    if (next >= 1)
      break;
    level = next > level ? next : level;
    for (int q = 0; q < ntouched; q++) {
      int s = touched[q];
      c->full[s] = c->users[s] > 0 && c->demand[s] > 0 &&
                   (c->cap[s] - c->used[s]) / c->demand[s] <= level * (1 + 1e-9);
    }
    int kept = 0;
    for (int o = 0; o < nopen; o++) {
      job_t *j = &v[open[o]];
      const coll_phase_cost_t *link;
      part_len(j->shape, j->part, &link);
      bool full = false;
      for (int l = 0; l < link->nloads && !full; l++)
        full = c->full[link->slots[l]];
      if (!full) {
        open[kept++] = open[o];
        continue;
      }
      j->rate = level;
      j->slowed = true;
      for (int l = 0; l < link->nloads; l++) {
        int s = link->slots[l];
        double d = link->bytes[l] / link->link_s;
        c->used[s] += level * d;
        c->demand[s] = --c->users[s] > 0 ? c->demand[s] - d : 0;
      }
    }
    if (kept == nopen) /* nothing froze: no link is full any more */
      break;
    nopen = kept;
  }
  for (int q = 0; q < ntouched; q++) {
    int s = touched[q];
    c->demand[s] = c->used[s] = 0;
    c->full[s] = 0;
    c->users[s] = 0;
  }
}


/* Runs the jobs through time; each gets its end. */
static void run_jobs(replay_contend_t *c, jobs_t *J) {
  int n = J->n;
  int *order = malloc(((size_t)n + 1) * sizeof *order);
  for (int j = 0; j < n; j++)
    order[j] = j;
  sort_by_start(order, n, J->v);
  int *active = malloc(((size_t)n + 1) * sizeof *active), nactive = 0;
  int *open = malloc(((size_t)n + 1) * sizeof *open);
  int *touched = malloc(((size_t)c->nslots + 1) * sizeof *touched);
  double now = 0;
  int next = 0;
  while (next < n || nactive > 0) {
    double t = next < n ? J->v[order[next]].start_s : INFINITY;
    for (int a = 0; a < nactive; a++) {
      const job_t *j = &J->v[active[a]];
      double done = now + j->left_s / j->rate;
      t = done < t ? done : t;
    }
    for (int a = 0; a < nactive; a++)
      J->v[active[a]].left_s -= J->v[active[a]].rate * (t - now);
    now = t;
    int kept = 0;
    for (int a = 0; a < nactive; a++)
      if (next_part(&J->v[active[a]], now))
        active[kept++] = active[a];
    nactive = kept;
    while (next < n && J->v[order[next]].start_s <= now) {
      job_t *j = &J->v[order[next++]];
      const coll_phase_cost_t *link;
      j->part = 0;
      j->left_s = part_len(j->shape, 0, &link);
      if (next_part(j, now))
        active[nactive++] = (int)(j - J->v);
    }
    share(c, J->v, active, nactive, open, touched);
  }
  free(order);
  free(active);
  free(open);
  free(touched);
}

/* ---- one update ---- */

double replay_contend_update(replay_contend_t *c, replay_plan_t *pl, const replay_record_t *rec) {
  const trace_t *t = pl->trace;
  int **job_of = calloc((size_t)t->ranks + 1, sizeof *job_of);
  for (int r = 0; r < t->ranks; r++) {
    if (!pl->simulated[r])
      continue;
    int nops = t->programs[t->program_of[r]].nops;
    job_of[r] = malloc(((size_t)nops + 1) * sizeof **job_of);
    for (int i = 0; i < nops; i++)
      job_of[r][i] = -1;
  }
  jobs_t J = {0};
  add_collectives(c, pl, rec, &J, job_of);
  add_messages(pl, rec, &J, job_of);
  bind_messages(&J);
  run_jobs(c, &J);
  if (!pl->comm_s) {
    pl->comm_s = calloc((size_t)t->ranks + 1, sizeof *pl->comm_s);
    for (int r = 0; r < t->ranks; r++)
      if (pl->simulated[r])
        pl->comm_s[r] = calloc((size_t)t->programs[t->program_of[r]].nops + 1, sizeof **pl->comm_s);
  }
  double change = 0;
  for (int r = 0; r < t->ranks; r++) {
    if (!pl->simulated[r])
      continue;
    const trace_program_t *p = &t->programs[t->program_of[r]];
    for (int i = 0; i < p->nops; i++) {
      const trace_op_t *op = &p->ops[i];
      double alone;
      if (op->type == TRACE_OP_COLL)
        alone = pl->insts[pl->inst_of[r][i]].analytic_s;
      else if (op->type == TRACE_OP_SEND || op->type == TRACE_OP_RECV) {
        int peer = trace_peer(op, r);
        bool send = op->type == TRACE_OP_SEND;
        alone = replay_p2p_analytic_s(pl->topo, send ? r : peer, send ? peer : r, op->bytes);
      } else
        continue;
      const job_t *j = job_of[r][i] >= 0 ? &J.v[job_of[r][i]] : NULL;
      double now = j && j->slowed ? j->end_s - j->start_s : alone;
      double was = rec_was(pl, r, i, alone);
      double big = fmax(fabs(now), fabs(was));
      if (big > 0 && fabs(now - was) / big > change)
        change = fabs(now - was) / big;
      pl->comm_s[r][i] = now;
    }
  }
  for (int r = 0; r < t->ranks; r++)
    free(job_of[r]);
  free(job_of);
  jobs_free(&J);
  return change;
}
