/* jobs_merge.c - jobs' rank programs merged onto the cluster; see jobs_merge.h.
 * Every allocation is checked: one that fails frees what was built and the
 * merge returns one line (the size bound keeps a merge it accepts far from
 * that). */
#include "jobs_merge.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int out_of_memory(npu_err_t *err) {
  npu_err_set(err, "npusim cluster: out of memory merging the jobs' programs");
  return -1;
}

static void free_names(char **names, int n) {
  for (int i = 0; names && i < n; i++)
    free(names[i]);
  free(names);
}

/* A copy of n names, or NULL. */
static char **copy_names(char *const *names, int n) {
  char **out = calloc((size_t)n + 1, sizeof *out);
  for (int i = 0; out && i < n; i++)
    if (!(out[i] = strdup(names[i]))) {
      free_names(out, i);
      return NULL;
    }
  return out;
}

/* ---- how a placement splits a program ---- */

typedef struct {
  const int *moved; /* the rank's offsets on the cluster */
  int n, rank;
} rank_sig_t;

static int cmp_sig(const void *a, const void *b) {
  const rank_sig_t *x = a, *y = b;
  for (int d = 0; d < x->n; d++)
    if (x->moved[d] != y->moved[d])
      return x->moved[d] < y->moved[d] ? -1 : 1;
  return (x->rank > y->rank) - (x->rank < y->rank);
}

/* A program's ranks grouped by where their relative peers land: offsets[d]
 * in the job becomes sig[i].moved[d] on the cluster; ranks of one group are
 * adjacent in sig and run one merged program (one group when the map keeps
 * the offsets). */
typedef struct {
  int *offsets, noff; /* the program's distinct relative peer offsets */
  int *moved;         /* per rank of the program: its offsets on the cluster */
  rank_sig_t *sig;    /* the program's ranks, sorted by their moved offsets */
  int nranks, ngroups;
} grouping_t;

static void grouping_free(grouping_t *g) {
  free(g->offsets);
  free(g->moved);
  free(g->sig);
  memset(g, 0, sizeof *g);
}

/* The distinct relative peer offsets of a program into g; -1 out of memory. */
static int relative_offsets(const trace_program_t *p, grouping_t *g) {
  int cap = 0;
  for (int i = 0; i < p->nops; i++) {
    const trace_op_t *op = &p->ops[i];
    if ((op->type != TRACE_OP_SEND && op->type != TRACE_OP_RECV) || !op->peer_relative)
      continue;
    int d = 0;
    while (d < g->noff && g->offsets[d] != op->peer)
      d++;
    if (d < g->noff)
      continue;
    if (g->noff == cap) {
      cap = cap ? 2 * cap : 4;
      int *v = realloc(g->offsets, (size_t)cap * sizeof *v);
      if (!v)
        return -1;
      g->offsets = v;
    }
    g->offsets[g->noff++] = op->peer;
  }
  return 0;
}

/* The end of the group that starts at sig[a]. */
static int group_end(const grouping_t *g, int a) {
  int b = a + 1;
  while (b < g->nranks &&
         memcmp(g->sig[a].moved, g->sig[b].moved, (size_t)g->noff * sizeof(int)) == 0)
    b++;
  return b;
}

/* Groups program p of part; -1 out of memory (g freed). */
static int group_ranks(const jobs_part_t *part, const trace_program_t *p, grouping_t *g) {
  memset(g, 0, sizeof *g);
  int jr = part->trace->ranks;
  if (relative_offsets(p, g) ||
      !(g->moved = malloc(((size_t)p->nranks * g->noff + 1) * sizeof *g->moved)) ||
      !(g->sig = malloc(((size_t)p->nranks + 1) * sizeof *g->sig))) {
    grouping_free(g);
    return -1;
  }
  g->nranks = p->nranks;
  for (int i = 0; i < p->nranks; i++) {
    int r = p->ranks[i];
    for (int d = 0; d < g->noff; d++) {
      int peer = r + g->offsets[d];
      g->moved[(size_t)i * g->noff + d] =
          peer >= 0 && peer < jr ? part->npu_of[peer] - part->npu_of[r] : INT_MIN;
    }
    g->sig[i] = (rank_sig_t){g->moved + (size_t)i * g->noff, g->noff, r};
  }
  qsort(g->sig, (size_t)p->nranks, sizeof *g->sig, cmp_sig);
  for (int a = 0; a < g->nranks; a = group_end(g, a))
    g->ngroups++;
  return 0;
}

/* ---- sizes ---- */

/* Ops a rank of a program of nops ops runs over the steps: each step's, and
 * a barrier between steps. */
static int64_t ops_over_steps(int nops, int steps) {
  return nops > 0 ? (int64_t)nops * steps + (steps - 1) : 0;
}

int jobs_merge_size(const jobs_part_t *parts, int nparts, jobs_size_t *out, npu_err_t *err) {
  memset(out, 0, sizeof *out);
  for (int j = 0; j < nparts; j++)
    for (int p = 0; p < parts[j].trace->nprograms; p++) {
      const trace_program_t *prog = &parts[j].trace->programs[p];
      int64_t ops = ops_over_steps(prog->nops, parts[j].steps);
      grouping_t g;
      if (group_ranks(&parts[j], prog, &g))
        return out_of_memory(err);
      out->rank_ops += ops * prog->nranks;
      out->merged_ops += ops * g.ngroups;
      grouping_free(&g);
    }
  return 0;
}

/* ---- building ---- */

/* Where a job's programs go: its communicators from comm_base, its step
 * barrier's communicator (-1: none, one step). */
typedef struct {
  const jobs_part_t *part;
  int comm_base, step_comm;
} job_ctx_t;

static int moved_offset(const grouping_t *g, const rank_sig_t *sig, int offset) {
  for (int d = 0; d < g->noff; d++)
    if (g->offsets[d] == offset)
      return sig->moved[d];
  return offset; /* not reached: every offset of the program is in the map */
}

/* Op src of step `step` as dst; stride: ops a step takes with its barrier.
 * Ids stay the trace's (errors and timelines name the op as its file does).
 * Room for one more dependency: the step's barrier. -1 out of memory. */
static int copy_op(const trace_op_t *src, int step, int stride, int nevents, const job_ctx_t *jc,
                   const grouping_t *g, const rank_sig_t *sig, trace_op_t *dst) {
  *dst = *src;
  dst->deps = NULL;
  dst->algo = dst->label = NULL;
  dst->ndeps = 0;
  if (!(dst->deps = malloc(((size_t)src->ndeps + 1) * sizeof *dst->deps)) ||
      (src->algo && !(dst->algo = strdup(src->algo))) ||
      (src->label && !(dst->label = strdup(src->label))))
    return -1;
  dst->ndeps = src->ndeps;
  for (int d = 0; d < src->ndeps; d++)
    dst->deps[d] = src->deps[d] + step * stride;
  if (src->type == TRACE_OP_COLL)
    dst->comm = src->comm + jc->comm_base;
  if (src->type == TRACE_OP_SEND || src->type == TRACE_OP_RECV)
    dst->peer = src->peer_relative ? moved_offset(g, sig, src->peer) : jc->part->npu_of[src->peer];
  if (src->type == TRACE_OP_RECORD || src->type == TRACE_OP_WAIT)
    dst->event = step * nevents + src->event;
  if (src->overlapping)
    dst->overlaps = src->overlaps + step * stride;
  return 0;
}

/* The events of src, once per step ("name#step" when it repeats). */
static int copy_events(const trace_program_t *src, int steps, trace_program_t *dst) {
  int n = src->nevents * steps;
  if (!(dst->events = calloc((size_t)n + 1, sizeof *dst->events)))
    return -1;
  dst->nevents = n;
  for (int s = 0; s < steps; s++)
    for (int e = 0; e < src->nevents; e++) {
      char name[512];
      snprintf(name, sizeof name, steps > 1 ? "%.480s#%d" : "%.480s", src->events[e], s);
      if (!(dst->events[s * src->nevents + e] = strdup(name)))
        return -1;
    }
  return 0;
}

/* The barrier that ends step s (of src's n ops, at s x stride + n): on stream
 * 0, after the step's last op on every other stream. The first op of step
 * s + 1 on each other stream waits for it (stream 0's follow it in order), so
 * no rank starts step s + 1 before every rank of the job has ended step s. */
static int add_barrier(const trace_program_t *src, int s, int stride, const int *last_on,
                       const int *first_on, int step_comm, trace_program_t *dst) {
  int n = src->nops, at = s * stride + n;
  trace_op_t *b = &dst->ops[at];
  *b = (trace_op_t){.id = -1, .type = TRACE_OP_BARRIER, .stream = 0, .comm = step_comm};
  char label[32];
  snprintf(label, sizeof label, "end of step %d", s + 1);
  if (!(b->deps = malloc(((size_t)src->nstreams + 1) * sizeof *b->deps)) ||
      !(b->label = strdup(label)))
    return -1;
  for (int st = 1; st < src->nstreams; st++)
    if (last_on[st] >= 0)
      b->deps[b->ndeps++] = s * stride + last_on[st];
  for (int st = 1; st < src->nstreams; st++)
    if (first_on[st] >= 0) {
      trace_op_t *first = &dst->ops[(s + 1) * stride + first_on[st]];
      first->deps[first->ndeps++] = at;
    }
  return 0;
}

/* The first and last op of src on each stream (-1: none). */
static int stream_ends(const trace_program_t *src, int **first_on, int **last_on) {
  *first_on = malloc(((size_t)src->nstreams + 1) * sizeof **first_on);
  *last_on = malloc(((size_t)src->nstreams + 1) * sizeof **last_on);
  if (!*first_on || !*last_on)
    return -1;
  for (int st = 0; st < src->nstreams; st++)
    (*first_on)[st] = (*last_on)[st] = -1;
  for (int i = 0; i < src->nops; i++) {
    int st = src->ops[i].stream;
    if ((*first_on)[st] < 0)
      (*first_on)[st] = i;
    (*last_on)[st] = i;
  }
  return 0;
}

/* The ops of the merged program: src's once per step, a barrier between
 * steps (jobs_merge.h says where). */
static int copy_ops(const trace_program_t *src, const job_ctx_t *jc, const grouping_t *g,
                    const rank_sig_t *sig, trace_program_t *dst) {
  int steps = jc->part->steps, n = src->nops, stride = n + 1;
  if (n == 0)
    return 0;
  int64_t total = ops_over_steps(n, steps);
  if (total > INT_MAX || !(dst->ops = calloc((size_t)total + 1, sizeof *dst->ops)))
    return -1;
  dst->nops = (int)total;
  for (int s = 0; s < steps; s++)
    for (int i = 0; i < n; i++)
      if (copy_op(&src->ops[i], s, stride, src->nevents, jc, g, sig, &dst->ops[s * stride + i]))
        return -1;
  int *first_on, *last_on, rc = stream_ends(src, &first_on, &last_on);
  for (int s = 0; rc == 0 && s + 1 < steps; s++)
    rc = add_barrier(src, s, stride, last_on, first_on, jc->step_comm, dst);
  free(first_on);
  free(last_on);
  return rc;
}

/* One program of the merged trace: src repeated on the NPUs `ranks` (sorted
 * here, owned by dst), its relative peers moved as the group's sig says.
 * -1 out of memory (dst holds what was built, for trace_free). */
static int build_program(const trace_program_t *src, const job_ctx_t *jc, const grouping_t *g,
                         const rank_sig_t *sig, int *ranks, int nranks, trace_program_t *dst) {
  memset(dst, 0, sizeof *dst);
  dst->ranks = ranks;
  dst->nranks = nranks;
  for (int i = 1; i < nranks; i++) /* insertion sort: groups come nearly sorted */
    for (int j = i; j > 0 && ranks[j - 1] > ranks[j]; j--) {
      int t = ranks[j];
      ranks[j] = ranks[j - 1];
      ranks[j - 1] = t;
    }
  if (!(dst->streams = copy_names(src->streams, src->nstreams)))
    return -1;
  dst->nstreams = src->nstreams;
  if (!(dst->buffers = copy_names(src->buffers, src->nbuffers)))
    return -1;
  dst->nbuffers = src->nbuffers;
  if (!(dst->tags = copy_names(src->tags, src->ntags)))
    return -1;
  dst->ntags = src->ntags;
  if (copy_events(src, jc->part->steps, dst))
    return -1;
  return copy_ops(src, jc, g, sig, dst);
}

typedef struct {
  trace_t *t;
  jobs_program_t **info;
  int cap;
} sink_t;

/* Room for one more program, zeroed; NULL out of memory. */
static trace_program_t *add_program(sink_t *k, int job, int step_ops) {
  if (k->t->nprograms == k->cap) {
    int cap = k->cap ? 2 * k->cap : 16;
    trace_program_t *v = realloc(k->t->programs, (size_t)cap * sizeof *v);
    if (!v)
      return NULL;
    k->t->programs = v;
    jobs_program_t *w = realloc(*k->info, (size_t)cap * sizeof *w);
    if (!w)
      return NULL;
    *k->info = w;
    k->cap = cap;
  }
  (*k->info)[k->t->nprograms] = (jobs_program_t){job, step_ops};
  trace_program_t *p = &k->t->programs[k->t->nprograms++];
  memset(p, 0, sizeof *p);
  return p;
}

/* Program p of part j: one merged program per group of its ranks. */
static int merge_program(sink_t *k, const job_ctx_t *jc, int j, const trace_program_t *p) {
  grouping_t g;
  if (group_ranks(jc->part, p, &g))
    return -1;
  int rc = 0;
  for (int a = 0, b; a < p->nranks && rc == 0; a = b) {
    b = group_end(&g, a);
    int *ranks = malloc((size_t)(b - a) * sizeof *ranks);
    trace_program_t *dst = ranks ? add_program(k, j, p->nops) : NULL;
    if (!dst) {
      free(ranks);
      rc = -1;
      break;
    }
    for (int i = a; i < b; i++)
      ranks[i - a] = jc->part->npu_of[g.sig[i].rank];
    rc = build_program(p, jc, &g, &g.sig[a], ranks, b - a, dst);
  }
  grouping_free(&g);
  return rc;
}

/* A communicator of the merged trace, its groups given, indexed; -1 with err. */
static int add_comm(trace_t *m, const char *name, int j, npu_err_t *err) {
  trace_comm_t *cm = &m->comms[m->ncomms - 1];
  int dup, dup_group;
  if (trace_comm_index(cm, m->ranks, &dup, &dup_group) && dup < 0)
    return out_of_memory(err);
  if (dup >= 0)
    return npu_err_set(err, "job %d: communicator %.200s: NPU %d in two groups (the placement maps two "
                    "ranks onto it)",
                    j, name, dup),
           -1;
  return 0;
}

static int merge_comms(trace_t *m, const jobs_part_t *part, int j, npu_err_t *err) {
  const trace_t *t = part->trace;
  for (int c = 0; c < t->ncomms; c++) {
    const trace_comm_t *src = &t->comms[c];
    trace_comm_t *cm = &m->comms[m->ncomms++];
    memset(cm, 0, sizeof *cm);
    char name[512];
    snprintf(name, sizeof name, "job%d.%.480s", j, src->name);
    if (!(cm->name = strdup(name)) ||
        !(cm->sizes = calloc((size_t)src->ngroups + 1, sizeof *cm->sizes)) ||
        !(cm->groups = calloc((size_t)src->ngroups + 1, sizeof *cm->groups)))
      return out_of_memory(err);
    cm->ngroups = src->ngroups;
    for (int g = 0; g < src->ngroups; g++) {
      if (!(cm->groups[g] = malloc(((size_t)src->sizes[g] + 1) * sizeof **cm->groups)))
        return out_of_memory(err);
      cm->sizes[g] = src->sizes[g];
      for (int i = 0; i < src->sizes[g]; i++)
        cm->groups[g][i] = part->npu_of[src->groups[g][i]];
    }
    if (add_comm(m, src->name, j, err))
      return -1;
  }
  return 0;
}

/* The job's step barrier: one group of its NPUs whose programs have ops
 * (in its rank order); *index its communicator, -1 when it runs one step. */
static int merge_step_comm(trace_t *m, const jobs_part_t *part, int j, int *index, npu_err_t *err) {
  const trace_t *t = part->trace;
  *index = -1;
  int n = 0;
  for (int r = 0; r < t->ranks; r++)
    n += t->programs[t->program_of[r]].nops > 0;
  if (part->steps < 2 || n == 0)
    return 0;
  trace_comm_t *cm = &m->comms[m->ncomms++];
  memset(cm, 0, sizeof *cm);
  char name[32];
  snprintf(name, sizeof name, "job%d.steps", j);
  if (!(cm->name = strdup(name)) || !(cm->sizes = calloc(2, sizeof *cm->sizes)) ||
      !(cm->groups = calloc(2, sizeof *cm->groups)))
    return out_of_memory(err);
  cm->ngroups = 1;
  if (!(cm->groups[0] = malloc((size_t)n * sizeof **cm->groups)))
    return out_of_memory(err);
  for (int r = 0; r < t->ranks; r++)
    if (t->programs[t->program_of[r]].nops > 0)
      cm->groups[0][cm->sizes[0]++] = part->npu_of[r];
  *index = m->ncomms - 1;
  return add_comm(m, "steps", j, err);
}

/* NPUs no job holds run one empty program. */
static int add_idle(sink_t *k, int npus) {
  trace_t *m = k->t;
  int idle = 0;
  for (int r = 0; r < npus; r++)
    idle += m->program_of[r] < 0;
  if (idle == 0)
    return 0;
  trace_program_t *p = add_program(k, -1, 0);
  if (!p || !(p->ranks = malloc((size_t)idle * sizeof *p->ranks)))
    return -1;
  for (int r = 0; r < npus; r++)
    if (m->program_of[r] < 0) {
      m->program_of[r] = m->nprograms - 1;
      p->ranks[p->nranks++] = r;
    }
  if (!(p->streams = copy_names((char *const[]){"idle"}, 1)))
    return -1;
  p->nstreams = 1;
  if (!(p->tags = copy_names((char *const[]){""}, 1)))
    return -1;
  p->ntags = 1;
  return 0;
}

/* The size against the bounds (jobs_merge.h); 0, or -1 with err. */
static int check_size(const jobs_part_t *parts, int nparts, npu_err_t *err) {
  jobs_size_t size;
  if (jobs_merge_size(parts, nparts, &size, err))
    return -1;
  if (size.rank_ops > JOBS_MAX_RANK_OPS)
    return npu_err_set(err, "npusim cluster: expected at most %lld ops run on all NPUs over all steps, "
                    "found %lld",
                    (long long)JOBS_MAX_RANK_OPS, (long long)size.rank_ops),
           -1;
  if (size.merged_ops > JOBS_MAX_MERGED_OPS)
    return npu_err_set(err, "npusim cluster: expected at most %lld ops in the merged programs, found %lld",
                    (long long)JOBS_MAX_MERGED_OPS, (long long)size.merged_ops),
           -1;
  return 0;
}

static int merge_all(const jobs_part_t *parts, int nparts, int npus, jobs_merged_t *out, npu_err_t *err) {
  trace_t *m = &out->trace;
  int ncomms = 0;
  for (int j = 0; j < nparts; j++)
    ncomms += parts[j].trace->ncomms + 1;
  if (!(m->name = strdup("cluster")) ||
      !(m->comms = calloc((size_t)ncomms + 1, sizeof *m->comms)) ||
      !(m->program_of = malloc(((size_t)npus + 1) * sizeof *m->program_of)))
    return out_of_memory(err);
  m->ranks = npus;
  for (int r = 0; r < npus; r++)
    m->program_of[r] = -1;
  sink_t k = {m, &out->programs, 0};
  for (int j = 0; j < nparts; j++) {
    job_ctx_t jc = {&parts[j], m->ncomms, -1};
    if (merge_comms(m, &parts[j], j, err) ||
        merge_step_comm(m, &parts[j], j, &jc.step_comm, err))
      return -1;
    for (int p = 0; p < parts[j].trace->nprograms; p++)
      if (merge_program(&k, &jc, j, &parts[j].trace->programs[p]))
        return out_of_memory(err);
  }
  for (int p = 0; p < m->nprograms; p++)
    for (int i = 0; i < m->programs[p].nranks; i++)
      m->program_of[m->programs[p].ranks[i]] = p;
  return add_idle(&k, npus) ? out_of_memory(err) : 0;
}

int jobs_merge(const jobs_part_t *parts, int nparts, int npus, jobs_merged_t *out, npu_err_t *err) {
  memset(out, 0, sizeof *out);
  if (check_size(parts, nparts, err))
    return -1;
  if (merge_all(parts, nparts, npus, out, err)) {
    jobs_merged_free(out);
    return -1;
  }
  return 0;
}

void jobs_merged_free(jobs_merged_t *m) {
  trace_free(&m->trace);
  free(m->programs);
  memset(m, 0, sizeof *m);
}
