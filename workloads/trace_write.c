/* trace_write.c - the canonical form of a trace: fixed field order, one op per
 * line, rank lists as ranges, numbers in their shortest exact form. Reading it
 * back gives the same trace, and writing that the same bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonfile.h"
#include "outfile.h"
#include "trace.h"

/* Ranks as "0-3,8": runs of consecutive ascending ranks joined, order kept. */
static void write_ranks(FILE *out, const int *ranks, int n) {
  fputc('"', out);
  for (int i = 0; i < n;) {
    int j = i;
    while (j + 1 < n && ranks[j + 1] == ranks[j] + 1)
      j++;
    fprintf(out, "%s%d", i ? "," : "", ranks[i]);
    if (j > i)
      fprintf(out, "-%d", ranks[j]);
    i = j + 1;
  }
  fputc('"', out);
}

static void write_number(FILE *out, double v) {
  char buf[40];
  jsonfile_format_number(v, buf, sizeof buf);
  fputs(buf, out);
}

static const char *kind_name(const trace_op_t *op, const trace_vocab_t *v) {
  static const char *const fixed[TRACE_OP_TYPE_COUNT] = {
      [TRACE_OP_COMPUTE] = "compute", [TRACE_OP_SEND] = "send",   [TRACE_OP_RECV] = "recv",
      [TRACE_OP_RECORD] = "record",   [TRACE_OP_WAIT] = "wait",   [TRACE_OP_DELAY] = "delay",
      [TRACE_OP_ALLOC] = "alloc",     [TRACE_OP_FREE] = "free"};
  if (op->type == TRACE_OP_SHAPED)
    return v->compute[op->kind];
  if (op->type == TRACE_OP_COLL)
    return v->colls[op->kind];
  return fixed[op->type];
}

static void write_op(FILE *out, const trace_t *t, const trace_program_t *p, const trace_op_t *op,
                     const trace_vocab_t *v) {
  fprintf(out, "{\"id\": %d, \"kind\": ", op->id);
  jsonfile_write_string(out, kind_name(op, v));
  fputs(", \"stream\": ", out);
  jsonfile_write_string(out, p->streams[op->stream]);
  if (op->ndeps) {
    fputs(", \"deps\": [", out);
    for (int d = 0; d < op->ndeps; d++)
      fprintf(out, "%s%d", d ? ", " : "", p->ops[op->deps[d]].id);
    fputc(']', out);
  }
  if (op->label) {
    fputs(", \"label\": ", out);
    jsonfile_write_string(out, op->label);
  }
  switch (op->type) {
  case TRACE_OP_SHAPED:
    fputs(", \"shape\": [", out);
    for (int i = 0; i < 5 && op->dims[i] > 0; i++)
      fprintf(out, "%s%lld", i ? ", " : "", (long long)op->dims[i]);
    fprintf(out, "], \"dtype\": \"%s\"", v->dtypes[op->dtype]);
    if (op->causal)
      fputs(", \"causal\": true", out);
    if (op->window > 0)
      fprintf(out, ", \"window\": %lld", (long long)op->window);
    if (op->trans_a)
      fputs(", \"trans_a\": true", out);
    if (op->trans_b)
      fputs(", \"trans_b\": true", out);
    if (op->unfused)
      fputs(", \"kernels\": \"unfused\"", out);
    if (op->overlapping)
      fprintf(out, ", \"overlaps\": %d", p->ops[op->overlaps].id);
    break;
  case TRACE_OP_COMPUTE:
  case TRACE_OP_DELAY:
    fputs(", \"duration_us\": ", out);
    write_number(out, op->duration_us);
    break;
  case TRACE_OP_COLL:
    fputs(", \"comm\": ", out);
    jsonfile_write_string(out, t->comms[op->comm].name);
    fputs(", \"bytes\": ", out);
    write_number(out, op->bytes);
    if ((v->root_colls_mask >> op->kind) & 1)
      fprintf(out, ", \"root\": %d", op->root);
    if (op->algo) {
      fputs(", \"algo\": ", out);
      jsonfile_write_string(out, op->algo);
    }
    break;
  case TRACE_OP_SEND:
  case TRACE_OP_RECV:
    fprintf(out, ", \"%s\": %d, \"bytes\": ", op->peer_relative ? "peer_offset" : "peer", op->peer);
    write_number(out, op->bytes);
    if (trace_tag(p, op)[0]) {
      fputs(", \"tag\": ", out);
      jsonfile_write_string(out, trace_tag(p, op));
    }
    break;
  case TRACE_OP_RECORD:
  case TRACE_OP_WAIT:
    fputs(", \"event\": ", out);
    jsonfile_write_string(out, p->events[op->event]);
    break;
  case TRACE_OP_ALLOC:
  case TRACE_OP_FREE:
    fputs(", \"buffer\": ", out);
    jsonfile_write_string(out, p->buffers[op->buffer]);
    if (op->type == TRACE_OP_ALLOC) {
      fputs(", \"bytes\": ", out);
      write_number(out, op->bytes);
    }
    break;
  default:
    break;
  }
  fputc('}', out);
}

static void write_trace(FILE *out, const trace_t *t, const trace_vocab_t *v) {
  fprintf(out, "{\n  \"format\": \"%s\",\n  \"version\": %d,\n", TRACE_FORMAT, TRACE_VERSION);
  if (t->name) {
    fputs("  \"name\": ", out);
    jsonfile_write_string(out, t->name);
    fputs(",\n", out);
  }
  fprintf(out, "  \"ranks\": %d,\n", t->ranks);
  if (t->ranks_per_node)
    fprintf(out, "  \"ranks_per_node\": %d,\n", t->ranks_per_node);
  fputs("  \"communicators\": [", out);
  for (int i = 0; i < t->ncomms; i++) {
    fprintf(out, "%s\n    {\"name\": ", i ? "," : "");
    jsonfile_write_string(out, t->comms[i].name);
    fputs(", \"groups\": [", out);
    for (int g = 0; g < t->comms[i].ngroups; g++) {
      fputs(g ? ", " : "", out);
      write_ranks(out, t->comms[i].groups[g], t->comms[i].sizes[g]);
    }
    fputs("]}", out);
  }
  fputs(t->ncomms ? "\n  ],\n" : "],\n", out);
  fputs("  \"programs\": [", out);
  for (int i = 0; i < t->nprograms; i++) {
    const trace_program_t *p = &t->programs[i];
    fprintf(out, "%s\n    {\"ranks\": ", i ? "," : "");
    write_ranks(out, p->ranks, p->nranks);
    fputs(", \"ops\": [", out);
    for (int j = 0; j < p->nops; j++) {
      fputs(j ? ",\n      " : "\n      ", out);
      write_op(out, t, p, &p->ops[j], v);
    }
    fputs("\n    ]}", out);
  }
  fputs("\n  ]\n}\n", out);
}

int trace_write(const trace_t *t, const trace_vocab_t *vocab, const char *path, npu_err_t *err) {
  if (trace_has_barrier(t))
    return npu_err_set(err, "%s: cannot write: the trace holds step barriers (npusim cluster's, which "
                    "no trace file has)",
                    path),
           -1;
  outfile_t *f = outfile_open(path, outfile_is_gz(path), 0, err);
  if (!f)
    return -1;
  write_trace(outfile_stream(f), t, vocab);
  fflush(outfile_stream(f)); /* outfile_bytes counts what left the stream's buffer */
  if (outfile_bytes(f) >= TRACE_MAX_BYTES) { /* the reader would refuse it */
    npu_err_set(err, "%s: cannot write: the trace is %llu MiB of JSON; a trace must stay "
             "under %lu MiB to be read back (docs/trace-format.md)", path, outfile_bytes(f) >> 20,
             TRACE_MAX_BYTES >> 20);
    outfile_abort(f);
    return -1;
  }
  return outfile_commit(f, err);
}
