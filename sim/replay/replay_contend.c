/* replay_contend.c - links shared by concurrent transfers in the analytic
 * fidelity; see replay_contend.h. */
#include "replay_contend.h"

#include <math.h>
#include <stdlib.h>

/* A job's work: an optional fixed start (the collective's overhead), then
 * loops x phases, each a fixed part then a link part. */
typedef struct {
  double overhead_s;
  int nphases, loops;
  coll_phase_cost_t *phases;
  double alone_s;       /* what the analytic model says alone, exactly */
} shape_t;

/* One collective of a group, or one message, in flight. */
typedef struct {
  const shape_t *shape; /* an inst's, or own (a message) */
  shape_t own;
  coll_phase_cost_t own_phase;
  double start_s;
  long part;            /* 0: overhead; then 2 per phase per loop (fixed, link) */
  double left_s;        /* alone-time left of the part */
  double rate;          /* fraction of alone speed */
  bool slowed, owner;   /* owner: a caller waits for its end (else a group stood for) */
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
  const topo_t *topo;
  int *changes, nchanges, next_change; /* timed faults (topo_change_t) by time */
  /* the jobs in time */
  job_t *jobs;
  int njobs, capjobs;
  int *spare, nspare;    /* ended jobs' slots, reused */
  int *active, nactive;  /* started, not ended */
  int *open, *touched;   /* scratch of share() */
  int *heap, nheap;      /* not yet started, by start time */
  int *ended, nended, first_ended; /* owners ended at `now`, handed out one by one */
  double now;
  bool dirty;            /* the rates need sharing again */
};

/* ---- shapes ---- */

static void shape_of_inst(const replay_plan_t *pl, int k, shape_t *sh) {
  const inst_t *x = &pl->insts[k];
  const coll_sched_t *s = &x->plan.sched;
  *sh = (shape_t){.overhead_s = pl->sys->coll.op_overhead_s, .nphases = s->nphases,
                  .loops = s->loops > 0 ? s->loops : 1,
                  .phases = coll_analytic_phases(pl->topo, &pl->sys->coll, s),
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

/* Sorts change ids by time (then id: the same order every run); few, so an
 * insertion sort. */
static void sort_changes(int *ids, int n, const topo_t *topo) {
  for (int i = 1; i < n; i++)
    for (int k = i; k > 0 && topo->changes[ids[k]].at_s < topo->changes[ids[k - 1]].at_s; k--) {
      int x = ids[k];
      ids[k] = ids[k - 1];
      ids[k - 1] = x;
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
  c->topo = pl->topo;
  c->nchanges = pl->topo->nchanges;
  c->changes = malloc(((size_t)c->nchanges + 1) * sizeof *c->changes);
  for (int k = 0; k < c->nchanges; k++)
    c->changes[k] = k;
  sort_changes(c->changes, c->nchanges, pl->topo);
  c->touched = malloc(((size_t)c->nslots + 1) * sizeof *c->touched);
  return c;
}

bool replay_contend_shares(const replay_contend_t *c, int inst) {
  return !c->exclusive[inst];
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
  free(c->changes);
  free(c->used);
  free(c->demand);
  free(c->full);
  free(c->users);
  for (int j = 0; j < c->njobs; j++) { /* messages still in flight (a replay cut short) */
    free(c->jobs[j].own_phase.slots);
    free(c->jobs[j].own_phase.bytes);
  }
  free(c->jobs);
  free(c->spare);
  free(c->active);
  free(c->open);
  free(c->touched);
  free(c->heap);
  free(c->ended);
  free(c);
}

/* ---- jobs ---- */

/* A message's shape lives in its job, which may move: found through here. */
static const shape_t *job_shape(job_t *j) {
  if (j->shape)
    return j->shape;
  j->own.phases = &j->own_phase;
  return &j->own;
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
      c->heap = realloc(c->heap, (size_t)c->capjobs * sizeof *c->heap);
      c->ended = realloc(c->ended, (size_t)c->capjobs * sizeof *c->ended);
    }
    id = c->njobs++;
  }
  c->jobs[id] = (job_t){.start_s = start_s, .owner = owner};
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

int replay_contend_coll(replay_contend_t *c, const replay_plan_t *pl, int inst, double start_s) {
  const shape_t *sh = inst_shape(c, pl, inst);
  int id = new_job(c, start_s, true);
  c->jobs[id].shape = sh;
  heap_push(c, id);
  for (int s = 0; s < c->nsiblings[inst]; s++) {
    const shape_t *sib = inst_shape(c, pl, c->siblings[inst][s]);
    int k = new_job(c, start_s, false);
    c->jobs[k].shape = sib;
    heap_push(c, k);
  }
  return id;
}

static int add_message(replay_contend_t *c, const topo_t *topo, int src, int dst, double bytes,
                       double start_s, bool owner) {
  int id = new_job(c, start_s, owner);
  job_t *j = &c->jobs[id];
  shape_of_message(topo, src, dst, bytes, &j->own, &j->own_phase);
  j->shape = NULL;
  heap_push(c, id);
  return id;
}

int replay_contend_message(replay_contend_t *c, const replay_plan_t *pl, int sender, int op,
                           double start_s) {
  const trace_t *t = pl->trace;
  const trace_program_t *p = &t->programs[t->program_of[sender]];
  const trace_op_t *o = &p->ops[op];
  int id = add_message(c, pl->topo, sender, trace_peer(o, sender), o->bytes, start_s, true);
  for (int m = 0; m < p->nranks; m++) { /* the ranks the sender stands for */
    int r = p->ranks[m];
    if (!pl->simulated[r])
      add_message(c, pl->topo, r, trace_peer(o, r), o->bytes, start_s, false);
  }
  return id;
}

/* ---- sharing the links ---- */

/* Part `part` of a shape: its alone length and the link loads, if any. */
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

/* Moves a job past finished parts; returns false once it has ended. */
static bool next_part(job_t *j) {
  const shape_t *sh = job_shape(j);
  long parts = 1 + 2L * sh->nphases * sh->loops;
  const coll_phase_cost_t *link;
  while (j->left_s <= 1e-15) {
    if (++j->part >= parts)
      return false;
    j->left_s = part_len(sh, j->part, &link);
  }
  return true;
}

/* The link loads of a job's current part, or NULL. */
static const coll_phase_cost_t *job_link(job_t *j) {
  const coll_phase_cost_t *link;
  part_len(job_shape(j), j->part, &link);
  return link;
}

/* Max-min fair rates (fractions of alone speed, at most 1) of the active jobs
 * in a link part: every rate rises together until a link direction is full;
 * the jobs crossing it keep that rate, the others rise on. */
static void share(replay_contend_t *c) {
  int nopen = 0, ntouched = 0;
  for (int a = 0; a < c->nactive; a++) {
    job_t *j = &c->jobs[c->active[a]];
    const coll_phase_cost_t *link = job_link(j);
    j->rate = 1;
    if (!link)
      continue;
    c->open[nopen++] = c->active[a];
    for (int l = 0; l < link->nloads; l++) {
      int s = link->slots[l];
      if (c->users[s]++ == 0)
        c->touched[ntouched++] = s;
      c->demand[s] += link->bytes[l] / link->link_s;
    }
  }
  double level = 0;
  while (nopen > 0) {
    double next = 1;
    for (int q = 0; q < ntouched; q++) {
      int s = c->touched[q];
      if (c->users[s] > 0 && c->demand[s] > 0) {
        double l = (c->cap[s] - c->used[s]) / c->demand[s];
        next = l < next ? l : next;
      }
    }
    if (next >= 1)
      break;
    level = next > level ? next : level;
    for (int q = 0; q < ntouched; q++) {
      int s = c->touched[q];
      c->full[s] = c->users[s] > 0 && c->demand[s] > 0 &&
                   (c->cap[s] - c->used[s]) / c->demand[s] <= level * (1 + 1e-9);
    }
    int kept = 0;
    for (int o = 0; o < nopen; o++) {
      job_t *j = &c->jobs[c->open[o]];
      const coll_phase_cost_t *link = job_link(j);
      bool full = false;
      for (int l = 0; l < link->nloads && !full; l++)
        full = c->full[link->slots[l]];
      if (!full) {
        c->open[kept++] = c->open[o];
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
    int s = c->touched[q];
    c->demand[s] = c->used[s] = 0;
    c->full[s] = 0;
    c->users[s] = 0;
  }
}

/* ---- time ---- */

static void end_job(replay_contend_t *c, int id) {
  job_t *j = &c->jobs[id];
  if (j->owner) {
    c->ended[c->nended++] = id;
    return; /* freed once handed out */
  }
  if (!j->shape) {
    free(j->own_phase.slots);
    free(j->own_phase.bytes);
    j->own_phase.slots = NULL;
    j->own_phase.bytes = NULL;
  }
  c->spare[c->nspare++] = id;
}

/* Runs time to the next moment some job ends or starts. */
static void step(replay_contend_t *c) {
  if (c->dirty) {
    share(c);
    c->dirty = false;
  }
  double t = c->nheap > 0 ? c->jobs[c->heap[0]].start_s : INFINITY;
  for (int a = 0; a < c->nactive; a++) {
    const job_t *j = &c->jobs[c->active[a]];
    double done = c->now + j->left_s / j->rate;
    t = done < t ? done : t;
  }
  if (c->next_change < c->nchanges) { /* a timed fault: the rates change there */
    double at = c->topo->changes[c->changes[c->next_change]].at_s;
    t = at < t ? at : t;
  }
  if (t < c->now) /* a start computed a hair before now: it starts now */
    t = c->now;
  int kept = 0;
  for (int a = 0; a < c->nactive; a++) {
    job_t *j = &c->jobs[c->active[a]];
    double done = c->now + j->left_s / j->rate;
    long part = j->part;
    j->left_s = done <= t ? 0 : j->left_s - j->rate * (t - c->now);
    if (!next_part(j))
      end_job(c, c->active[a]);
    else
      c->active[kept++] = c->active[a];
    c->dirty = c->dirty || j->part != part || done <= t;
  }
  c->nactive = kept;
  c->now = t;
  for (; c->next_change < c->nchanges &&
         c->topo->changes[c->changes[c->next_change]].at_s <= c->now;
       c->next_change++) {
    const topo_change_t *ch = &c->topo->changes[c->changes[c->next_change]];
    c->cap[2 * ch->link] = c->cap[2 * ch->link + 1] = topo_link_bw_at(c->topo, ch->link, ch->at_s);
    c->dirty = true;
  }
  while (c->nheap > 0 && c->jobs[c->heap[0]].start_s <= c->now) {
    int id = heap_pop(c);
    job_t *j = &c->jobs[id];
    const coll_phase_cost_t *link;
    j->left_s = part_len(job_shape(j), 0, &link);
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
