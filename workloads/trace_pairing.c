/* trace_pairing.c - which send meets which recv: the one pairing rule of the
 * trace model (trace.h), used by the checks and by both replay engines.
 *
 * A channel is (source rank, destination rank, tag) with peers resolved, so a
 * `peer` and a `peer_offset` naming the same rank are one channel. The k-th send
 * on a channel in its program's op order meets the k-th recv on it in the
 * receiver's op order, whatever streams they are issued from and whenever they
 * arrive: the pairing is fixed before the replay, so the checker's cycle search
 * sees exactly the meetings the engines make.
 *
 * Positions are computed per program from the ops as spelled, and shared by
 * every rank of the program whose resolved peers keep the spelled channels
 * apart (almost always); a rank where two spellings name one channel gets its
 * own positions. Memory: per program its ops, per rank a pointer. */
#include <stdlib.h>
#include <string.h>

#include "trace.h"

typedef struct {
  int type, rel, peer, tag, index;
} chan_key_t;

static int by_chan(const void *a, const void *b) {
  const chan_key_t *x = a, *y = b;
  int d[5] = {x->type - y->type, x->rel - y->rel, x->peer - y->peer, x->tag - y->tag,
              x->index - y->index};
  for (int i = 0; i < 5; i++)
    if (d[i])
      return d[i] < 0 ? -1 : 1;
  return 0;
}

static bool is_p2p(const trace_op_t *op) {
  return op->type == TRACE_OP_SEND || op->type == TRACE_OP_RECV;
}

/* The channel key of op i: as spelled (rank < 0) or resolved for rank. */
static chan_key_t key_of(const trace_program_t *p, int i, int rank) {
  const trace_op_t *op = &p->ops[i];
  if (rank < 0)
    return (chan_key_t){op->type, op->peer_relative, op->peer, op->tag, i};
  return (chan_key_t){op->type, 0, trace_peer(op, rank), op->tag, i};
}

/* Each send/recv's position among the ops of p on its channel, in op order
 * (other ops: 0). *firsts, when given, gets the ops that open a channel. */
static int *positions(const trace_program_t *p, int rank, int **firsts, int *nfirsts) {
  int *seq = calloc((size_t)p->nops + 1, sizeof *seq), n = 0;
  chan_key_t *keys = malloc(((size_t)p->nops + 1) * sizeof *keys);
  for (int i = 0; i < p->nops; i++)
    if (is_p2p(&p->ops[i]))
      keys[n++] = key_of(p, i, rank);
  qsort(keys, (size_t)n, sizeof *keys, by_chan);
  int *first = firsts ? malloc(((size_t)n + 1) * sizeof *first) : NULL, nf = 0;
  for (int k = 0; k < n; k++) {
    chan_key_t a = keys[k], b = k > 0 ? keys[k - 1] : a;
    bool same = k > 0 && a.type == b.type && a.rel == b.rel && a.peer == b.peer && a.tag == b.tag;
    seq[a.index] = same ? seq[b.index] + 1 : 0;
    if (!same && first)
      first[nf++] = a.index;
  }
  if (firsts) {
    *firsts = first;
    *nfirsts = nf;
  }
  free(keys);
  return seq;
}

/* Whether two spelled channels of p name one channel for rank. */
static bool spellings_merge(const trace_program_t *p, const int *firsts, int nf, int rank,
                            chan_key_t *scratch) {
  for (int k = 0; k < nf; k++) {
    scratch[k] = key_of(p, firsts[k], rank);
    scratch[k].index = 0;
  }
  qsort(scratch, (size_t)nf, sizeof *scratch, by_chan);
  for (int k = 1; k < nf; k++)
    if (by_chan(&scratch[k], &scratch[k - 1]) == 0)
      return true;
  return false;
}

typedef struct {
  const char *name;
  int program, tag;
} tag_ref_t;

static int by_tag_name(const void *a, const void *b) {
  const tag_ref_t *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  if (c)
    return c;
  return x->program != y->program ? (x->program < y->program ? -1 : 1) : x->tag - y->tag;
}

/* Tag names made into ids shared by all programs (a send and its recv live in
 * different programs, each with its own tag table). */
static void share_tags(trace_pairing_t *pp, const trace_t *t) {
  size_t n = 0;
  for (int pi = 0; pi < t->nprograms; pi++)
    n += (size_t)t->programs[pi].ntags;
  tag_ref_t *refs = malloc((n + 1) * sizeof *refs);
  n = 0;
  pp->tag_id = calloc((size_t)t->nprograms + 1, sizeof *pp->tag_id);
  for (int pi = 0; pi < t->nprograms; pi++) {
    const trace_program_t *p = &t->programs[pi];
    pp->tag_id[pi] = malloc(((size_t)p->ntags + 1) * sizeof **pp->tag_id);
    for (int k = 0; k < p->ntags; k++)
      refs[n++] = (tag_ref_t){p->tags[k], pi, k};
  }
  qsort(refs, n, sizeof *refs, by_tag_name);
  pp->ntags = 0;
  for (size_t i = 0; i < n; i++) {
    if (i > 0 && strcmp(refs[i].name, refs[i - 1].name) != 0)
      pp->ntags++;
    pp->tag_id[refs[i].program][refs[i].tag] = pp->ntags;
  }
  pp->ntags += n > 0;
  free(refs);
}

void trace_pairing_init(trace_pairing_t *pp, const trace_t *t) {
  memset(pp, 0, sizeof *pp);
  pp->ranks = t->ranks;
  pp->nprograms = t->nprograms;
  share_tags(pp, t);
  pp->program_seq = calloc((size_t)t->nprograms + 1, sizeof *pp->program_seq);
  pp->seq = calloc((size_t)t->ranks + 1, sizeof *pp->seq);
  pp->owned = calloc((size_t)t->ranks + 1, sizeof *pp->owned);
  for (int pi = 0; pi < t->nprograms; pi++) {
    const trace_program_t *p = &t->programs[pi];
    int *firsts = NULL, nf = 0;
    pp->program_seq[pi] = positions(p, -1, &firsts, &nf);
    chan_key_t *scratch = malloc(((size_t)nf + 1) * sizeof *scratch);
    for (int k = 0; k < p->nranks; k++) {
      int r = p->ranks[k];
      pp->owned[r] = spellings_merge(p, firsts, nf, r, scratch);
      pp->seq[r] = pp->owned[r] ? positions(p, r, NULL, NULL) : pp->program_seq[pi];
    }
    free(scratch);
    free(firsts);
  }
}

void trace_pairing_free(trace_pairing_t *pp) {
  for (int r = 0; pp->seq && r < pp->ranks; r++)
    if (pp->owned[r])
      free(pp->seq[r]);
  for (int pi = 0; pi < pp->nprograms; pi++) {
    if (pp->program_seq)
      free(pp->program_seq[pi]);
    if (pp->tag_id)
      free(pp->tag_id[pi]);
  }
  free(pp->program_seq);
  free(pp->tag_id);
  free(pp->seq);
  free(pp->owned);
  memset(pp, 0, sizeof *pp);
}
