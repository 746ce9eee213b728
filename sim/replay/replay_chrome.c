/* replay_chrome.c - the timeline of a replay as a Chrome trace (Perfetto):
 * see replay.h. Timed link faults show as instant events across the whole
 * timeline ("fault LINK xFACTOR", cat "fault"). Not shown: link utilisation
 * over time (the analytic fidelity has no per-link timeline; `--links` gives
 * the totals).
 *
 * Each slice is a B/E pair, not an "X" event with a duration: times are whole
 * nanoseconds written as microseconds with three decimals, and a viewer reads
 * them as doubles. With "X", the end is ts + dur added in doubles (and
 * speedscope first subtracts the track's first ts, catapult divides by 1000),
 * which lands a rounding off the next slice's ts for about a tenth of
 * back-to-back slices: they overlap and are dropped or misnested. A B/E pair
 * prints each edge once, from the integer, so the end of one slice and the
 * start of the next are the same text, hence the same double after any
 * monotone conversion, and every viewer nests them exactly. The E repeats the
 * B's name and args because speedscope matches an E to its B by both (the
 * cost: a train timeline x1.75 in plain JSON, x1.24 gzipped). Per track
 * the events come in time order, an E before the B that starts at the same
 * time, a zero-length slice as its B then its E: the order viewers keep for
 * equal times (speedscope PR #322). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonfile.h"
#include "op_cost.h"
#include "outfile.h"
#include "replay.h"
#include "time_limit.h"

typedef struct {
  FILE *out;
  const trace_t *t;
  const replay_result_t *r;
  const replay_chrome_opts_t *o;
  op_cache_t *cache[CLUSTER_MAX_NODE_TYPES + 1]; /* bounding pipes per chip index (node
                                                  * types), made on first use; NULL: none */
  chip_cfg_t chips[CLUSTER_MAX_NODE_TYPES + 1]; /* the chips they cost on (a cache keeps a
                                                 * pointer to its chip) */
  bool bounds;       /* a system to cost ops on was given */
  trace_pairing_t pairing;
  bool first_event;
} chrome_t;

/* Seconds as whole nanoseconds. */
static int64_t ns_of(double s) {
  return (int64_t)llround(s * 1e9);
}

/* Whole nanoseconds as microseconds with three decimals, exactly. */
static void put_us(FILE *out, int64_t ns) {
  fprintf(out, "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
}

static void event_sep(chrome_t *c) {
  fputs(c->first_event ? "\n" : ",\n", c->out);
  c->first_event = false;
}

/* kind: "process" or "thread". */
static void metadata(chrome_t *c, const char *kind, int pid, int tid, const char *name,
                     int sort_index) {
  event_sep(c);
  fprintf(c->out,
          "{\"name\": \"%s_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, \"args\": "
          "{\"name\": ",
          kind, pid, tid);
  jsonfile_write_string(c->out, name);
  fputs("}}", c->out);
  event_sep(c);
  fprintf(c->out,
          "{\"name\": \"%s_sort_index\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, "
          "\"args\": {\"sort_index\": %d}}",
          kind, pid, tid, sort_index);
}

static const char *op_name(const trace_op_t *op) {
  if (op->label)
    return op->label;
  if (op->type == TRACE_OP_SHAPED)
    return replay_vocab.compute[op->kind];
  if (op->type == TRACE_OP_COLL)
    return replay_vocab.colls[op->kind];
  return trace_op_type_names[op->type];
}

/* The op cache of rank's chip (its server's), at the clock the replay costed
 * compute at (replay_plan.c); NULL if it cannot be made. */
static op_cache_t *rank_cache(chrome_t *c, int rank) {
  const system_cfg_t *sys = c->o->sys;
  int k = sys->cluster.node_types.n ? config_server_chip_index(
                                          sys, topo_server_of(&c->r->topo, rank))
                                    : 0;
  if (!c->cache[k]) {
    c->chips[k] = chip_in_step(config_chip_at(sys, k));
    c->cache[k] = op_cache_new(&c->chips[k]);
  }
  return c->cache[k];
}

/* One edge of a slice on track (pid, tid): ph 'B' (with cat, its category)
 * or 'E' (cat unused). With args_follow it ends in `, "args": ` for the
 * caller to complete; otherwise the event is closed. */
static void slice_edge(chrome_t *c, char ph, const char *name, const char *cat, int64_t ns, int pid,
                       int tid, bool args_follow) {
  event_sep(c);
  fputs("{\"name\": ", c->out);
  jsonfile_write_string(c->out, name);
  if (ph == 'B' && cat)
    fprintf(c->out, ", \"cat\": \"%s\"", cat);
  fprintf(c->out, ", \"ph\": \"%c\", \"ts\": ", ph);
  put_us(c->out, ns);
  fprintf(c->out, ", \"pid\": %d, \"tid\": %d%s", pid, tid, args_follow ? ", \"args\": " : "}");
}

/* The op's args: its id, shape and data type, bytes, communicator, peer and
 * bounding pipe, as it has them (the same text on its B and its E). */
static void op_args(chrome_t *c, int rank, const trace_op_t *op) {
  FILE *out = c->out;
  fprintf(out, "{\"op\": %d", op->id);
  if (op->type == TRACE_OP_SHAPED) {
    op_desc_t d;
    replay_op_desc(op, &d);
    fputs(", \"shape\": [", out);
    for (int k = 0; k < 5 && op->dims[k] > 0; k++)
      fprintf(out, "%s%" PRId64, k ? ", " : "", op->dims[k]);
    fprintf(out, "], \"dtype\": \"%s\"", replay_vocab.dtypes[op->dtype]);
    op_cache_t *cache = c->bounds ? rank_cache(c, rank) : NULL;
    if (cache)
      fprintf(out, ", \"bound\": \"%s\"", pipe_names[op_cost(cache, &d)->bound]);
  }
  if (op->type == TRACE_OP_COLL || op->type == TRACE_OP_SEND || op->type == TRACE_OP_RECV ||
      op->type == TRACE_OP_ALLOC)
    fprintf(out, ", \"bytes\": %.17g", op->bytes);
  if (op->type == TRACE_OP_COLL) {
    fputs(", \"comm\": ", out);
    jsonfile_write_string(out, c->t->comms[op->comm].name);
    fprintf(out, ", \"group\": %d", trace_group_of(&c->t->comms[op->comm], rank));
  }
  if (op->type == TRACE_OP_SEND || op->type == TRACE_OP_RECV)
    fprintf(out, ", \"peer\": %d", trace_peer(op, rank));
  fputs("}}", out);
}

/* An arrow from each send to the recv it meets (trace_pairing_t), when both
 * ranks are shown. */
static void arrow(chrome_t *c, int rank, int i, const trace_op_t *op, int64_t start, int64_t end) {
  bool send = op->type == TRACE_OP_SEND;
  int peer = trace_peer(op, rank), src = send ? rank : peer, dst = send ? peer : rank;
  if (peer < c->o->first_rank || peer > c->o->last_rank)
    return;
  event_sep(c);
  fprintf(c->out,
          "{\"name\": \"p2p\", \"cat\": \"p2p\", \"ph\": \"%s\", \"id\": \"%d>%d:%d#%d\", "
          "\"ts\": ",
          send ? "s" : "f", src, dst, c->pairing.tag_id[c->t->program_of[rank]][op->tag],
          c->pairing.seq[rank][i]);
  put_us(c->out, send ? start : end);
  fprintf(c->out, ", \"pid\": %d, \"tid\": %d%s}", rank, op->stream, send ? "" : ", \"bp\": \"e\"");
}

/* The part of a collective spent waiting for its last member (a straggler),
 * nested in the collective's slice. */
static void wait_slice(chrome_t *c, int rank, int stream, int64_t start, int64_t ready) {
  slice_edge(c, 'B', "straggler wait", "straggler_wait", start, rank, stream, false);
  slice_edge(c, 'E', "straggler wait", NULL, ready, rank, stream, false);
}

static void chrome_rank(chrome_t *c, int rank) {
  const trace_t *t = c->t;
  int pi = t->program_of[rank];
  const trace_program_t *p = &t->programs[pi];
  char name[160];
  snprintf(name, sizeof name, "rank %d", rank);
  metadata(c, "process", rank, 0, name, rank);
  for (int s = 0; s < p->nstreams; s++)
    metadata(c, "thread", rank, s, p->streams[s], s);
  const replay_span_t *spans = c->r->spans[replay_stand_in(c->r, t, rank)];
  for (int i = 0; i < p->nops; i++) {
    const trace_op_t *op = &p->ops[i];
    int64_t start = ns_of(spans[i].start_s), end = ns_of(spans[i].end_s);
    const char *label = op_name(op);
    if (c->o->name && !op->label) {
      c->o->name(c->o->name_ctx, pi, i, name, sizeof name);
      label = name;
    }
    slice_edge(c, 'B', label, trace_op_type_names[op->type], start, rank, op->stream, true);
    op_args(c, rank, op);
    /* between the edges, so that an arrow binds to the slice open at its time */
    if (op->type == TRACE_OP_SEND)
      arrow(c, rank, i, op, start, end);
    int64_t ready = ns_of(spans[i].ready_s);
    if (ready > end)
      ready = end;
    if (op->type == TRACE_OP_COLL && ready > start) /* nested: waiting for a slower peer */
      wait_slice(c, rank, op->stream, start, ready);
    if (op->type == TRACE_OP_RECV)
      arrow(c, rank, i, op, start, end);
    slice_edge(c, 'E', label, NULL, end, rank, op->stream, true);
    op_args(c, rank, op);
  }
}

/* Each timed fault (cluster.faults.links "LINK:FACTOR@T", T > 0) as an
 * instant event across the whole timeline, naming the link and the bandwidth
 * left: "fault s0.nic0 x0.5", or "fault leaf0.spine1 dead" for a link dying. */
static void fault_marks(chrome_t *c) {
  const link_faults_t *f = &c->r->topo.cluster.faults;
  for (int i = 0; i < f->n; i++) {
    if (!f->v[i].timed)
      continue;
    char name[FAULTS_NAME_MAX + 64];
    if (f->v[i].factor == 0)
      snprintf(name, sizeof name, "fault %s dead", f->v[i].link);
    else
      snprintf(name, sizeof name, "fault %s x%g", f->v[i].link, f->v[i].factor);
    event_sep(c);
    fputs("{\"name\": ", c->out);
    jsonfile_write_string(c->out, name);
    fputs(", \"cat\": \"fault\", \"ph\": \"i\", \"s\": \"g\", \"ts\": ", c->out);
    put_us(c->out, ns_of(f->v[i].at_s));
    fprintf(c->out, ", \"pid\": %d, \"tid\": 0, \"args\": {\"link\": ", c->o->first_rank);
    jsonfile_write_string(c->out, f->v[i].link);
    fprintf(c->out, ", \"factor\": %.17g, \"at_s\": %.17g}}", f->v[i].factor, f->v[i].at_s);
  }
}

int replay_write_chrome(const char *path, const trace_t *t, const replay_result_t *r,
                        const replay_chrome_opts_t *o, npu_err_t *err) {
  time_limit_off(); /* the run is done: the file is written whole */
  outfile_t *f = outfile_open(path, outfile_is_gz(path), 0, err);
  if (!f)
    return -1;
  chrome_t c = {.out = outfile_stream(f), .t = t, .r = r, .o = o, .first_event = true};
  c.bounds = o->sys != NULL;
  trace_pairing_init(&c.pairing, t);
  int last = o->last_rank < t->ranks - 1 ? o->last_rank : t->ranks - 1;
  progress_t progress;
  progress_start(&progress, o->progress, "npusim: writing the timeline", "ranks",
                 last - o->first_rank + 1);
  fputs("{\"displayTimeUnit\": \"ns\", \"traceEvents\": [", c.out);
  for (int rank = o->first_rank; rank <= last; rank++) {
    chrome_rank(&c, rank);
    progress_step(&progress, 1, -1);
  }
  progress_end(&progress);
  fault_marks(&c);
  fputs("\n]}\n", c.out);
  trace_pairing_free(&c.pairing);
  for (int k = 0; k <= CLUSTER_MAX_NODE_TYPES; k++)
    op_cache_free(c.cache[k]);
  return outfile_commit(f, err);
}
