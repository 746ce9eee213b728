/* trace.c - the trace data model: the rank programs that the reader
 * (trace_read.c) fills, the generator (train_gen.c) builds and the writer
 * (trace_write.c) prints; see trace.h. Lookups and freeing only: no parsing,
 * no checks, no file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

const char *const trace_op_type_names[TRACE_OP_TYPE_COUNT] = {
    "shaped", "compute", "collective", "send", "recv",   "record",
    "wait",   "delay",   "alloc",      "free", "barrier"};

bool trace_has_barrier(const trace_t *t) {
  for (int p = 0; p < t->nprograms; p++)
    for (int i = 0; i < t->programs[p].nops; i++)
      if (t->programs[p].ops[i].type == TRACE_OP_BARRIER)
        return true;
  return false;
}

/* Index of name in a growing list of names, adding it if new. */
int trace_intern(char ***list, int *n, const char *name) {
  for (int i = 0; i < *n; i++)
    if (strcmp((*list)[i], name) == 0)
      return i;
  *list = realloc(*list, (size_t)(*n + 1) * sizeof **list);
  (*list)[*n] = strdup(name);
  return (*n)++;
}

static void free_names(char **names, int n) {
  for (int j = 0; j < n; j++)
    free(names[j]);
  free(names);
}

void trace_free(trace_t *t) {
  for (int i = 0; i < t->nprograms; i++) {
    trace_program_t *p = &t->programs[i];
    for (int j = 0; j < p->nops; j++) {
      free(p->ops[j].deps);
      free(p->ops[j].algo);
      free(p->ops[j].label);
    }
    free_names(p->streams, p->nstreams);
    free_names(p->events, p->nevents);
    free_names(p->buffers, p->nbuffers);
    free_names(p->tags, p->ntags);
    free(p->ops);
    free(p->ranks);
  }
  for (int i = 0; i < t->ncomms; i++) {
    trace_comm_t *cm = &t->comms[i];
    for (int g = 0; g < cm->ngroups; g++)
      free(cm->groups[g]);
    free(cm->groups);
    free(cm->sizes);
    free(cm->group_of);
    free(cm->members);
    free(cm->member_group);
    free(cm->name);
  }
  free(t->comms);
  free(t->programs);
  free(t->program_of);
  free(t->name);
  memset(t, 0, sizeof *t);
}

const char *trace_tag(const trace_program_t *p, const trace_op_t *op) {
  return p->tags && op->tag < p->ntags ? p->tags[op->tag] : "";
}

int trace_peer(const trace_op_t *op, int rank) {
  return op->peer_relative ? rank + op->peer : op->peer;
}

int trace_group_of(const trace_comm_t *cm, int rank) {
  if (cm->group_of)
    return cm->group_of[rank];
  int lo = 0, hi = cm->nmembers;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (cm->members[mid] < rank)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < cm->nmembers && cm->members[lo] == rank ? cm->member_group[lo] : -1;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

int trace_comm_index(trace_comm_t *cm, int ranks, int *dup, int *dup_group) {
  *dup = -1; /* out of memory, unless a rank is found twice */
  size_t n = 0;
  for (int g = 0; g < cm->ngroups; g++)
    n += (size_t)cm->sizes[g];
  if (n * 2 >= (size_t)ranks) { /* dense: a table per rank costs at most twice the members */
    cm->group_of = malloc((size_t)ranks * sizeof *cm->group_of);
    if (!cm->group_of)
      return -1;
    for (int r = 0; r < ranks; r++)
      cm->group_of[r] = -1;
    for (int g = 0; g < cm->ngroups; g++)
      for (int i = 0; i < cm->sizes[g]; i++) {
        int r = cm->groups[g][i];
        if (cm->group_of[r] >= 0) {
          *dup = r;
          *dup_group = g;
          return -1;
        }
        cm->group_of[r] = g;
      }
    return 0;
  }
  uint64_t *pairs = malloc((n + 1) * sizeof *pairs); /* rank, then group */
  cm->members = malloc((n + 1) * sizeof *cm->members);
  cm->member_group = malloc((n + 1) * sizeof *cm->member_group);
  if (!pairs || !cm->members || !cm->member_group) {
    free(pairs);
    return -1; /* trace_free frees the others */
  }
  size_t k = 0;
  for (int g = 0; g < cm->ngroups; g++)
    for (int i = 0; i < cm->sizes[g]; i++)
      pairs[k++] = (uint64_t)cm->groups[g][i] << 32 | (uint32_t)g;
  qsort(pairs, n, sizeof *pairs, cmp_u64);
  cm->nmembers = (int)n;
  for (size_t i = 0; i < n; i++) {
    cm->members[i] = (int)(pairs[i] >> 32);
    cm->member_group[i] = (int)(uint32_t)pairs[i];
    if (i > 0 && cm->members[i] == cm->members[i - 1]) {
      *dup = cm->members[i];
      *dup_group = cm->member_group[i];
      free(pairs);
      return -1;
    }
  }
  free(pairs);
  return 0;
}
