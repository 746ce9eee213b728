/* trace_check.c - the checks of a trace that need all of it: events and buffers
 * that exist, peers and communicators that include the rank, collectives that
 * every member of a group issues alike, sends with their receives, and no cycle
 * - within a program (stream order, dependencies, events) or across ranks
 * (collectives and rendezvous send/recv pairs complete together, so a rank
 * waiting on a peer that waits on it can never finish). An eager send (at most
 * trace_vocab_t.eager_max_bytes) completes on its own: only its recv waits for
 * it, so ranks that all send before they receive are no cycle. */
#include <stdlib.h>
#include <string.h>

#include "trace_internal.h"

/* ---- per program ---- */

/* A communicator's collectives must come from one stream of a program: like
 * NCCL and HCCL streams, they run one after another in issue order. */
static int check_comm_streams(trace_ctx_t *c, const trace_t *t, const trace_program_t *p) {
  int *stream_of = malloc(((size_t)t->ncomms + 1) * sizeof *stream_of);
  for (int i = 0; i < t->ncomms; i++)
    stream_of[i] = -1;
  int rc = 0;
  for (int i = 0; i < p->nops && rc == 0; i++) {
    const trace_op_t *op = &p->ops[i];
    if (op->type != TRACE_OP_COLL)
      continue;
    if (stream_of[op->comm] < 0)
      stream_of[op->comm] = op->stream;
    else if (stream_of[op->comm] != op->stream)
      rc = trace_fail(c, p->ranks[0], op->id, "stream: expected the stream \"%s\" of the "
                      "earlier collectives on \"%s\", found \"%s\"",
                      p->streams[stream_of[op->comm]], t->comms[op->comm].name,
                      p->streams[op->stream]);
  }
  free(stream_of);
  return rc;
}

static int check_program(trace_ctx_t *c, const trace_t *t, const trace_program_t *p) {
  if (check_comm_streams(c, t, p))
    return -1;
  int *records = calloc((size_t)p->nevents + 1, sizeof *records);
  bool *allocated = calloc((size_t)p->nbuffers + 1, sizeof *allocated);
  int *in_use = malloc(((size_t)p->nbuffers + 1) * sizeof *in_use); /* by alloc op i, or -1 */
  for (int b = 0; b < p->nbuffers; b++)
    in_use[b] = -1;
  int rc = 0;
  for (int i = 0; i < p->nops && rc == 0; i++) {
    const trace_op_t *op = &p->ops[i];
    if (op->type == TRACE_OP_RECORD && records[op->event]++)
      rc = trace_fail(c, p->ranks[0], op->id, "event: expected each event recorded once, found "
                      "\"%s\" again", p->events[op->event]);
    if (op->type == TRACE_OP_ALLOC)
      allocated[op->buffer] = true;
  }
  /* a buffer is allocated, freed, allocated again... in program order */
  for (int i = 0; i < p->nops && rc == 0; i++) {
    const trace_op_t *op = &p->ops[i];
    if (op->type == TRACE_OP_ALLOC && in_use[op->buffer] >= 0)
      rc = trace_fail(c, p->ranks[0], op->id, "buffer: expected a buffer not in use, found "
                      "\"%s\" still allocated by op %d", p->buffers[op->buffer],
                      p->ops[in_use[op->buffer]].id);
    else if (op->type == TRACE_OP_FREE && allocated[op->buffer] && in_use[op->buffer] < 0)
      rc = trace_fail(c, p->ranks[0], op->id, "buffer: expected a buffer an earlier op "
                      "allocates, found \"%s\" not allocated here", p->buffers[op->buffer]);
    if (op->type == TRACE_OP_ALLOC || op->type == TRACE_OP_FREE)
      in_use[op->buffer] = op->type == TRACE_OP_ALLOC ? i : -1;
  }
  for (int i = 0; i < p->nops && rc == 0; i++) {
    const trace_op_t *op = &p->ops[i];
    if (op->type == TRACE_OP_WAIT && !records[op->event])
      rc = trace_fail(c, p->ranks[0], op->id, "event: expected an event some op records, found "
                      "\"%s\"", p->events[op->event]);
    else if (op->type == TRACE_OP_FREE && !allocated[op->buffer])
      rc = trace_fail(c, p->ranks[0], op->id, "buffer: expected a buffer some op allocates, "
                      "found \"%s\"", p->buffers[op->buffer]);
    for (int k = 0; k < p->nranks && rc == 0; k++) {
      int r = p->ranks[k];
      if (op->type == TRACE_OP_SEND || op->type == TRACE_OP_RECV) {
        int peer = trace_peer(op, r);
        if (peer < 0 || peer >= t->ranks || peer == r)
          rc = trace_fail(c, r, op->id, "peer: expected another rank in [0, %d), found %d",
                          t->ranks, peer);
      } else if (op->type == TRACE_OP_COLL) {
        const trace_comm_t *cm = &t->comms[op->comm];
        int g = trace_group_of(cm, r);
        if (g < 0)
          rc = trace_fail(c, r, op->id, "comm: expected a communicator with a group holding "
                          "rank %d, found \"%s\" without one", r, cm->name);
        else if (((c->vocab->root_colls_mask >> op->kind) & 1) && op->root >= cm->sizes[g])
          rc = trace_fail(c, r, op->id, "root: expected a position in its group of \"%s\" "
                          "(0 to %d), found %d", cm->name, cm->sizes[g] - 1, op->root);
      }
    }
  }
  free(records);
  free(allocated);
  free(in_use);
  return rc;
}

/* Calls fn(pred) for each op that op i of p must wait for inside its rank:
 * the previous op on its stream, its dependencies, the record of its event. */
typedef struct {
  int *prev_on_stream; /* per op */
  int *record_of;      /* per event */
} preds_t;

static preds_t make_preds(const trace_program_t *p) {
  preds_t pr = {malloc(((size_t)p->nops + 1) * sizeof(int)),
                malloc(((size_t)p->nevents + 1) * sizeof(int))};
  int *last = malloc(((size_t)p->nstreams + 1) * sizeof *last);
  for (int s = 0; s < p->nstreams; s++)
    last[s] = -1;
  for (int i = 0; i < p->nops; i++) {
    pr.prev_on_stream[i] = last[p->ops[i].stream];
    last[p->ops[i].stream] = i;
    if (p->ops[i].type == TRACE_OP_RECORD)
      pr.record_of[p->ops[i].event] = i;
  }
  free(last);
  return pr;
}

static int pred_list(const trace_program_t *p, const preds_t *pr, int i, int *out) {
  int n = 0;
  const trace_op_t *op = &p->ops[i];
  if (pr->prev_on_stream[i] >= 0)
    out[n++] = pr->prev_on_stream[i];
  for (int d = 0; d < op->ndeps; d++)
    out[n++] = op->deps[d];
  if (op->type == TRACE_OP_WAIT)
    out[n++] = pr->record_of[op->event];
  return n;
}

static void free_preds(preds_t *pr) {
  free(pr->prev_on_stream);
  free(pr->record_of);
}

/* ---- matching across ranks ---- */

/* Node of (rank, op index), numbered program by program in rank order. */
typedef struct {
  const trace_t *t;
  long *first; /* per rank: its first node */
  long nodes;
  long *parent; /* union-find: ops that complete together */
  long *eager;  /* pairs of nodes (send, recv): the recv of an eager send waits for it */
  size_t neager;
} graph_t;

static long find(graph_t *g, long x) {
  while (g->parent[x] != x) {
    g->parent[x] = g->parent[g->parent[x]];
    x = g->parent[x];
  }
  return x;
}

static void unite(graph_t *g, long a, long b) {
  a = find(g, a);
  b = find(g, b);
  if (a != b)
    g->parent[a > b ? a : b] = a < b ? a : b;
}

/* Every member of a group must issue the same collectives on the communicator,
 * in the same order; the k-th of each member form one collective. */
static int match_collectives(trace_ctx_t *c, graph_t *g) {
  const trace_t *t = g->t;
  for (int ci = 0; ci < t->ncomms; ci++) {
    const trace_comm_t *cm = &t->comms[ci];
    for (int gi = 0; gi < cm->ngroups; gi++) {
      int lead = cm->groups[gi][0];
      const trace_program_t *lp = &t->programs[t->program_of[lead]];
      for (int m = 1; m < cm->sizes[gi]; m++) {
        int r = cm->groups[gi][m];
        const trace_program_t *p = &t->programs[t->program_of[r]];
        int a = 0, b = 0;
        for (;;) {
          while (a < lp->nops && !(lp->ops[a].type == TRACE_OP_COLL && lp->ops[a].comm == ci))
            a++;
          while (b < p->nops && !(p->ops[b].type == TRACE_OP_COLL && p->ops[b].comm == ci))
            b++;
          if (a == lp->nops && b == p->nops)
            break;
          if (a == lp->nops || b == p->nops)
            return trace_fail(c, a == lp->nops ? r : lead, a == lp->nops ? p->ops[b].id : lp->ops[a].id,
                              "comm: expected the same collectives on \"%s\" from rank %d, found "
                              "one rank %d does not issue", cm->name, a == lp->nops ? lead : r,
                              a == lp->nops ? lead : r);
          const trace_op_t *x = &lp->ops[a], *y = &p->ops[b];
          bool rooted = (c->vocab->root_colls_mask >> x->kind) & 1;
          if (x->kind != y->kind || x->bytes != y->bytes)
            return trace_fail(c, r, y->id, "expected %s of %.0f bytes on \"%s\" as rank %d "
                              "issues it (op %d), found %s of %.0f bytes",
                              c->vocab->colls[x->kind], x->bytes, cm->name, lead, x->id,
                              c->vocab->colls[y->kind], y->bytes);
          if (rooted && x->root != y->root)
            return trace_fail(c, r, y->id, "root: expected %d on \"%s\" as rank %d gives it "
                              "(op %d), found %d", x->root, cm->name, lead, x->id, y->root);
          unite(g, g->first[lead] + a, g->first[r] + b);
          a++;
          b++;
        }
      }
    }
  }
  return 0;
}

typedef struct {
  int src, dst, seq, rank, op; /* the op of `rank` (src for sends, dst for receives) */
  const char *tag;
  double bytes;
  long node;
} p2p_t;

static int by_pair(const void *a, const void *b) {
  const p2p_t *x = a, *y = b;
  if (x->src != y->src)
    return x->src < y->src ? -1 : 1;
  if (x->dst != y->dst)
    return x->dst < y->dst ? -1 : 1;
  int t = strcmp(x->tag, y->tag);
  if (t)
    return t;
  return x->seq - y->seq;
}

/* The k-th send on a channel meets its k-th receive (trace_pairing_t). */
static int match_p2p(trace_ctx_t *c, graph_t *g) {
  const trace_t *t = g->t;
  size_t ns = 0, nr = 0, cap = 0;
  for (int r = 0; r < t->ranks; r++) {
    const trace_program_t *p = &t->programs[t->program_of[r]];
    for (int i = 0; i < p->nops; i++)
      cap += p->ops[i].type == TRACE_OP_SEND || p->ops[i].type == TRACE_OP_RECV;
  }
  p2p_t *sends = malloc((cap + 1) * sizeof *sends), *recvs = malloc((cap + 1) * sizeof *recvs);
  g->eager = malloc((cap + 1) * sizeof *g->eager); /* two per pair, at most cap */
  trace_pairing_t pairing;
  trace_pairing_init(&pairing, t);
  for (int r = 0; r < t->ranks; r++) {
    const trace_program_t *p = &t->programs[t->program_of[r]];
    for (int i = 0; i < p->nops; i++) {
      const trace_op_t *op = &p->ops[i];
      if (op->type != TRACE_OP_SEND && op->type != TRACE_OP_RECV)
        continue;
      bool recv = op->type == TRACE_OP_RECV;
      int peer = trace_peer(op, r);
      p2p_t e = {recv ? peer : r, recv ? r : peer, pairing.seq[r][i], r, op->id,
                 trace_tag(p, op), op->bytes, g->first[r] + i};
      if (recv)
        recvs[nr++] = e;
      else
        sends[ns++] = e;
    }
  }
  trace_pairing_free(&pairing);
  qsort(sends, ns, sizeof *sends, by_pair);
  qsort(recvs, nr, sizeof *recvs, by_pair);
  int rc = 0;
  size_t i = 0, j = 0;
  while (rc == 0 && (i < ns || j < nr)) {
    int cmp = i == ns ? 1 : j == nr ? -1 : by_pair(&sends[i], &recvs[j]);
    if (cmp < 0)
      rc = trace_fail(c, sends[i].rank, sends[i].op, "expected a recv on rank %d for this send, "
                      "found none", sends[i].dst);
    else if (cmp > 0)
      rc = trace_fail(c, recvs[j].rank, recvs[j].op, "expected a send from rank %d for this "
                      "recv, found none", recvs[j].src);
    else if (sends[i].bytes != recvs[j].bytes)
      rc = trace_fail(c, recvs[j].rank, recvs[j].op, "bytes: expected %.0f as rank %d sends "
                      "(op %d), found %.0f", sends[i].bytes, sends[i].rank, sends[i].op,
                      recvs[j].bytes);
    else if (sends[i].bytes <= c->vocab->eager_max_bytes) {
      g->eager[2 * g->neager] = sends[i++].node;
      g->eager[2 * g->neager++ + 1] = recvs[j++].node;
    } else {
      unite(g, sends[i++].node, recvs[j++].node);
    }
  }
  free(sends);
  free(recvs);
  return rc;
}

/* ---- cycles ---- */

/* Where a node sits: its rank and op index. */
static void locate(const graph_t *g, long node, int *rank, int *op) {
  int lo = 0, hi = g->t->ranks - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (g->first[mid] <= node)
      lo = mid;
    else
      hi = mid - 1;
  }
  *rank = lo;
  *op = (int)(node - g->first[lo]);
}

/* Edges between groups of ops that complete together (representatives), as
 * successor lists in CSR form, with each group's count of predecessors. */
typedef struct {
  preds_t *pr;  /* per program */
  int *buf;     /* scratch for one op's predecessors */
  long *off, *succ, *indeg;
} edges_t;

static void add_edge(edges_t *e, long u, long v, bool fill_pass, long *fill) {
  if (fill_pass) {
    e->succ[e->off[u] + fill[u]++] = v;
  } else {
    e->off[u + 1]++;
    e->indeg[v]++;
  }
}

static void for_each_edge(graph_t *g, edges_t *e, bool fill_pass, long *fill) {
  const trace_t *t = g->t;
  for (size_t k = 0; k < g->neager; k++)
    add_edge(e, find(g, g->eager[2 * k]), find(g, g->eager[2 * k + 1]), fill_pass, fill);
  for (int r = 0; r < t->ranks; r++) {
    int pi = t->program_of[r];
    const trace_program_t *p = &t->programs[pi];
    for (int i = 0; i < p->nops; i++) {
      long v = find(g, g->first[r] + i);
      int n = pred_list(p, &e->pr[pi], i, e->buf);
      for (int k = 0; k < n; k++)
        add_edge(e, find(g, g->first[r] + e->buf[k]), v, fill_pass, fill);
    }
  }
}

static void build_edges(graph_t *g, edges_t *e) {
  const trace_t *t = g->t;
  int max_preds = 2;
  e->pr = malloc((size_t)t->nprograms * sizeof *e->pr);
  for (int i = 0; i < t->nprograms; i++) {
    e->pr[i] = make_preds(&t->programs[i]);
    for (int j = 0; j < t->programs[i].nops; j++)
      if (t->programs[i].ops[j].ndeps + 2 > max_preds)
        max_preds = t->programs[i].ops[j].ndeps + 2;
  }
  e->buf = malloc((size_t)max_preds * sizeof *e->buf);
  e->indeg = calloc((size_t)g->nodes + 1, sizeof *e->indeg);
  e->off = calloc((size_t)g->nodes + 1, sizeof *e->off);
  for_each_edge(g, e, false, NULL);
  for (long n = 0; n < g->nodes; n++)
    e->off[n + 1] += e->off[n];
  e->succ = malloc(((size_t)e->off[g->nodes] + 1) * sizeof *e->succ);
  long *fill = calloc((size_t)g->nodes + 1, sizeof *fill);
  for_each_edge(g, e, true, fill);
  free(fill);
}

static void free_edges(const trace_t *t, edges_t *e) {
  for (int i = 0; i < t->nprograms; i++)
    free_preds(&e->pr[i]);
  free(e->pr);
  free(e->buf);
  free(e->off);
  free(e->succ);
  free(e->indeg);
}

/* Names an op that can never run and one op it waits for. */
static int report_cycle(trace_ctx_t *c, graph_t *g, edges_t *e) {
  const trace_t *t = g->t;
  for (long n = 0; n < g->nodes; n++) {
    if (e->indeg[find(g, n)] == 0)
      continue;
    int r, i;
    locate(g, n, &r, &i);
    int pi = t->program_of[r];
    int k = pred_list(&t->programs[pi], &e->pr[pi], i, e->buf);
    for (int j = 0; j < k; j++) {
      long u = find(g, g->first[r] + e->buf[j]);
      if (e->indeg[u] > 0) {
        int q, qi;
        locate(g, g->first[r] + e->buf[j], &q, &qi);
        return trace_fail(c, r, t->programs[pi].ops[i].id, "expected ops that can all complete, "
                          "found it waiting for rank %d op %d, which never completes (a cycle "
                          "through streams, events, collectives or send/recv)", q,
                          t->programs[t->program_of[q]].ops[qi].id);
      }
    }
  }
  return trace_fail(c, -1, -1, "expected ops that can all complete, found a cycle");
}

/* Kahn's algorithm over the groups of ops that complete together; whatever is
 * left waits on a cycle. */
static int check_cycles(trace_ctx_t *c, graph_t *g) {
  edges_t e;
  build_edges(g, &e);
  long *queue = malloc(((size_t)g->nodes + 1) * sizeof *queue), head = 0, tail = 0, groups = 0;
  for (long n = 0; n < g->nodes; n++)
    if (find(g, n) == n) {
      groups++;
      if (e.indeg[n] == 0)
        queue[tail++] = n;
    }
  while (head < tail) {
    long u = queue[head++];
    for (long k = e.off[u]; k < e.off[u + 1]; k++)
      if (--e.indeg[e.succ[k]] == 0)
        queue[tail++] = e.succ[k];
  }
  int rc = tail < groups ? report_cycle(c, g, &e) : 0;
  free(queue);
  free_edges(g->t, &e);
  return rc;
}

int trace_check(trace_ctx_t *c, const trace_t *t) {
  for (int i = 0; i < t->nprograms; i++)
    if (check_program(c, t, &t->programs[i]))
      return -1;
  graph_t g = {.t = t};
  g.first = malloc(((size_t)t->ranks + 1) * sizeof *g.first);
  for (int r = 0; r < t->ranks; r++) {
    g.first[r] = g.nodes;
    g.nodes += t->programs[t->program_of[r]].nops;
  }
  g.parent = malloc(((size_t)g.nodes + 1) * sizeof *g.parent);
  for (long n = 0; n < g.nodes; n++)
    g.parent[n] = n;
  int rc = match_collectives(c, &g);
  if (rc == 0)
    rc = match_p2p(c, &g);
  if (rc == 0)
    rc = check_cycles(c, &g);
  free(g.first);
  free(g.parent);
  free(g.eager);
  return rc;
}
