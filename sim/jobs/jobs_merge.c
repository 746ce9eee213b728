/* jobs_merge.c - jobs' rank programs merged onto the cluster; see jobs_merge.h. */
#include "jobs_merge.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char **copy_names(char *const *names, int n) {
  char **out = calloc((size_t)n + 1, sizeof *out);
  for (int i = 0; i < n; i++)
    out[i] = strdup(names[i]);
  return out;
}

/* How a program's point-to-point offsets land once its ranks are on NPUs:
 * offsets[d] in the job becomes moved[d] on the cluster for this group. */
typedef struct {
  const int *offsets;
  const int *moved;
  int n;
} offset_map_t;

static int moved_offset(const offset_map_t *om, int offset) {
  for (int d = 0; d < om->n; d++)
    if (om->offsets[d] == offset)
      return om->moved[d];
  return offset; /* not reached: every offset of the program is in the map */
}

static void copy_op(const trace_op_t *src, int step, int nops, int id_span, int comm_base,
                    int nevents, const int *npu_of, const offset_map_t *om, trace_op_t *dst) {
  *dst = *src;
  dst->id = step * id_span + src->id;
  dst->deps = malloc(((size_t)src->ndeps + 1) * sizeof *dst->deps);
  for (int d = 0; d < src->ndeps; d++)
    dst->deps[d] = src->deps[d] + step * nops;
  dst->algo = src->algo ? strdup(src->algo) : NULL;
  dst->label = src->label ? strdup(src->label) : NULL;
  if (src->type == TRACE_OP_COLL)
    dst->comm = src->comm + comm_base;
  if (src->type == TRACE_OP_SEND || src->type == TRACE_OP_RECV)
    dst->peer = src->peer_relative ? moved_offset(om, src->peer) : npu_of[src->peer];
  if (src->type == TRACE_OP_RECORD || src->type == TRACE_OP_WAIT)
    dst->event = step * nevents + src->event;
  if (src->overlapping)
    dst->overlaps = src->overlaps + step * nops;
}

/* One program of the merged trace: src repeated `steps` times on the NPUs
 * `ranks` (sorted here), its relative peers moved as om says. */
static void build_program(const trace_program_t *src, int steps, int comm_base, const int *npu_of,
                          const offset_map_t *om, int *ranks, int nranks, trace_program_t *dst) {
  memset(dst, 0, sizeof *dst);
  dst->ranks = ranks;
  dst->nranks = nranks;
  for (int i = 1; i < nranks; i++) /* insertion sort: groups come nearly sorted */
    for (int j = i; j > 0 && ranks[j - 1] > ranks[j]; j--) {
      int t = ranks[j];
      ranks[j] = ranks[j - 1];
      ranks[j - 1] = t;
    }
  dst->streams = copy_names(src->streams, src->nstreams);
  dst->nstreams = src->nstreams;
  dst->buffers = copy_names(src->buffers, src->nbuffers);
  dst->nbuffers = src->nbuffers;
  dst->tags = copy_names(src->tags, src->ntags);
  dst->ntags = src->ntags;
  dst->nevents = src->nevents * steps;
  dst->events = calloc((size_t)dst->nevents + 1, sizeof *dst->events);
  for (int s = 0; s < steps; s++)
    for (int e = 0; e < src->nevents; e++) {
      char name[512];
      snprintf(name, sizeof name, steps > 1 ? "%.480s#%d" : "%.480s", src->events[e], s);
      dst->events[s * src->nevents + e] = strdup(name);
    }
  int id_span = 0;
  for (int i = 0; i < src->nops; i++)
    if (src->ops[i].id + 1 > id_span)
      id_span = src->ops[i].id + 1;
  dst->nops = src->nops * steps;
  dst->ops = calloc((size_t)dst->nops + 1, sizeof *dst->ops);
  for (int s = 0; s < steps; s++)
    for (int i = 0; i < src->nops; i++)
      copy_op(&src->ops[i], s, src->nops, id_span, comm_base, src->nevents, npu_of, om,
              &dst->ops[s * src->nops + i]);
}

/* The distinct relative peer offsets of a program. */
static int relative_offsets(const trace_program_t *p, int **out) {
  int n = 0;
  *out = NULL;
  for (int i = 0; i < p->nops; i++) {
    const trace_op_t *op = &p->ops[i];
    if ((op->type != TRACE_OP_SEND && op->type != TRACE_OP_RECV) || !op->peer_relative)
      continue;
    int d = 0;
    while (d < n && (*out)[d] != op->peer)
      d++;
    if (d == n) {
      *out = realloc(*out, (size_t)(n + 1) * sizeof **out);
      (*out)[n++] = op->peer;
    }
  }
  return n;
}

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

typedef struct {
  trace_t *t;
  jobs_program_t **info;
  int cap;
} sink_t;

static trace_program_t *add_program(sink_t *k, int job, int step_ops) {
  if (k->t->nprograms == k->cap) {
    k->cap = k->cap ? 2 * k->cap : 16;
    k->t->programs = realloc(k->t->programs, (size_t)k->cap * sizeof *k->t->programs);
    *k->info = realloc(*k->info, (size_t)k->cap * sizeof **k->info);
  }
  (*k->info)[k->t->nprograms] = (jobs_program_t){job, step_ops};
  return &k->t->programs[k->t->nprograms++];
}

/* Program p of part j: one merged program per group of its ranks whose
 * relative peers land at the same offsets (one group when the map keeps them). */
static void merge_program(sink_t *k, const jobs_part_t *part, int j, int comm_base,
                          const trace_program_t *p) {
  int *offsets, noff = relative_offsets(p, &offsets);
  int jr = part->trace->ranks;
  int *moved = malloc(((size_t)p->nranks * noff + 1) * sizeof *moved);
  rank_sig_t *sig = malloc(((size_t)p->nranks + 1) * sizeof *sig);
  for (int i = 0; i < p->nranks; i++) {
    int r = p->ranks[i];
    for (int d = 0; d < noff; d++) {
      int peer = r + offsets[d];
      moved[(size_t)i * noff + d] =
          peer >= 0 && peer < jr ? part->npu_of[peer] - part->npu_of[r] : INT_MIN;
    }
    sig[i] = (rank_sig_t){moved + (size_t)i * noff, noff, r};
  }
  qsort(sig, (size_t)p->nranks, sizeof *sig, cmp_sig);
  for (int a = 0, b; a < p->nranks; a = b) {
    b = a + 1;
    while (b < p->nranks && memcmp(sig[a].moved, sig[b].moved, (size_t)noff * sizeof(int)) == 0)
      b++;
    int *ranks = malloc((size_t)(b - a) * sizeof *ranks);
    for (int i = a; i < b; i++)
      ranks[i - a] = part->npu_of[sig[i].rank];
    offset_map_t om = {offsets, sig[a].moved, noff};
    build_program(p, part->steps, comm_base, part->npu_of, &om, ranks, b - a,
                  add_program(k, j, p->nops));
  }
  free(sig);
  free(moved);
  free(offsets);
}

static int merge_comms(trace_t *m, const jobs_part_t *part, int j, char *err, size_t err_len) {
  const trace_t *t = part->trace;
  for (int c = 0; c < t->ncomms; c++) {
    const trace_comm_t *src = &t->comms[c];
    trace_comm_t *cm = &m->comms[m->ncomms++];
    memset(cm, 0, sizeof *cm);
    char name[512];
    snprintf(name, sizeof name, "job%d.%.480s", j, src->name);
    cm->name = strdup(name);
    cm->ngroups = src->ngroups;
    cm->groups = calloc((size_t)src->ngroups + 1, sizeof *cm->groups);
    cm->sizes = calloc((size_t)src->ngroups + 1, sizeof *cm->sizes);
    for (int g = 0; g < src->ngroups; g++) {
      cm->sizes[g] = src->sizes[g];
      cm->groups[g] = malloc(((size_t)src->sizes[g] + 1) * sizeof **cm->groups);
      for (int i = 0; i < src->sizes[g]; i++)
        cm->groups[g][i] = part->npu_of[src->groups[g][i]];
    }
    int dup, dup_group;
    if (trace_comm_index(cm, m->ranks, &dup, &dup_group))
      return snprintf(err, err_len,
                      "job %d: communicator %.200s: NPU %d in two groups (the "
                      "placement maps two ranks onto it)",
                      j, src->name, dup),
             -1;
  }
  return 0;
}

int jobs_merge(const jobs_part_t *parts, int nparts, int npus, jobs_merged_t *out, char *err,
               size_t err_len) {
  memset(out, 0, sizeof *out);
  trace_t *m = &out->trace;
  m->name = strdup("cluster");
  m->ranks = npus;
  int ncomms = 0;
  for (int j = 0; j < nparts; j++)
    ncomms += parts[j].trace->ncomms;
  m->comms = calloc((size_t)ncomms + 1, sizeof *m->comms);
  m->program_of = malloc((size_t)npus * sizeof *m->program_of);
  for (int r = 0; r < npus; r++)
    m->program_of[r] = -1;
  sink_t k = {m, &out->programs, 0};
  for (int j = 0; j < nparts; j++) {
    int comm_base = m->ncomms;
    if (merge_comms(m, &parts[j], j, err, err_len)) {
      jobs_merged_free(out);
      return -1;
    }
    for (int p = 0; p < parts[j].trace->nprograms; p++)
      merge_program(&k, &parts[j], j, comm_base, &parts[j].trace->programs[p]);
  }
  for (int p = 0; p < m->nprograms; p++)
    for (int i = 0; i < m->programs[p].nranks; i++)
      m->program_of[m->programs[p].ranks[i]] = p;
  int idle = 0;
  for (int r = 0; r < npus; r++)
    idle += m->program_of[r] < 0;
  if (idle) { /* NPUs no job holds run nothing */
    trace_program_t *p = add_program(&k, -1, 0);
    memset(p, 0, sizeof *p);
    p->ranks = malloc((size_t)idle * sizeof *p->ranks);
    for (int r = 0; r < npus; r++)
      if (m->program_of[r] < 0) {
        m->program_of[r] = m->nprograms - 1;
        p->ranks[p->nranks++] = r;
      }
    p->streams = copy_names((char *const[]){"idle"}, 1);
    p->nstreams = 1;
    p->tags = copy_names((char *const[]){""}, 1);
    p->ntags = 1;
  }
  return 0;
}

void jobs_merged_free(jobs_merged_t *m) {
  trace_free(&m->trace);
  free(m->programs);
  memset(m, 0, sizeof *m);
}
