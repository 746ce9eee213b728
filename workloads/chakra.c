/* chakra.c - Chakra ETs written from rank programs; see chakra.h (reading:
 * chakra_read.c). Protobuf wire format: each field a varint key (field number
 * << 3 | wire type); wire types 0 varint, 1 eight bytes, 2 a varint length
 * then that many bytes, 5 four bytes. */
#include "chakra.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chakra_internal.h"
#include "outfile.h"

const char *const chakra_node_type_names[CHAKRA_NODE_TYPE_COUNT] = {
    "INVALID_NODE", "METADATA_NODE",  "MEM_LOAD_NODE",  "MEM_STORE_NODE",
    "COMP_NODE",    "COMM_SEND_NODE", "COMM_RECV_NODE", "COMM_COLL_NODE",
    "STORAGE_NODE", "BATCH_NODE",     "CHECKPOINT_NODE"};

const char *const chakra_coll_type_names[CHAKRA_COLL_TYPE_COUNT] = {
    "ALL_REDUCE", "REDUCE",         "ALL_GATHER",           "GATHER", "SCATTER", "BROADCAST",
    "ALL_TO_ALL", "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK", "BARRIER"};
const char *const chakra_coll_npusim[CHAKRA_COLL_TYPE_COUNT] = {
    "allreduce", "reduce",        "allgather",     NULL, NULL, "broadcast",
    "alltoall",  "reducescatter", "reducescatter", NULL};

const char *const chakra_allgather_names[CHAKRA_ALLGATHER_COUNT] = {"input", "total"};

int chakra_allgather_parse(const char *name) {
  for (int k = 0; k < CHAKRA_ALLGATHER_COUNT; k++)
    if (strcmp(name, chakra_allgather_names[k]) == 0)
      return k;
  return -1;
}

/* ---- writing ---- */

typedef struct {
  uint8_t *p;
  size_t n, cap;
} out_t;

static void put_raw(out_t *o, const void *data, size_t n) {
  if (o->n + n > o->cap) {
    o->cap = (o->n + n) * 2 + 64;
    o->p = realloc(o->p, o->cap);
  }
  memcpy(o->p + o->n, data, n);
  o->n += n;
}

static void put_varint(out_t *o, uint64_t v) {
  uint8_t b[10];
  int n = 0;
  do {
    b[n] = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v)
      b[n] |= 0x80;
    n++;
  } while (v);
  put_raw(o, b, (size_t)n);
}

static void put_key(out_t *o, int field, int wire) {
  put_varint(o, (uint64_t)field << 3 | (uint64_t)wire);
}

static void put_len(out_t *o, int field, const void *data, size_t n) {
  put_key(o, field, 2);
  put_varint(o, n);
  put_raw(o, data, n);
}

/* An AttributeProto holding an int32, an int64, a bool, a double or a
 * string. Chakra's feeder (src/feeder/et_feeder_node.cpp) reads each
 * attribute from one field of the value oneof and any other as 0: comm_type
 * and comm_size int64_val, comm_src, comm_dst and comm_tag int32_val,
 * is_cpu_op bool_val, pg_name string_val; so they are written there
 * (tests/chakra_interop.py decodes them with Chakra's schema). */
typedef enum { ATTR_INT32, ATTR_INT64, ATTR_BOOL, ATTR_DOUBLE, ATTR_STRING } attr_kind_t;

static void put_attr(out_t *node, const char *name, attr_kind_t kind, int64_t i, double d,
                     const char *s) {
  out_t a = {0};
  put_len(&a, 1, name, strlen(name));
  switch (kind) {
  case ATTR_INT32: /* a negative one would be a 10-byte varint, as int64 */
    put_key(&a, 7, 0);
    put_varint(&a, (uint64_t)i);
    break;
  case ATTR_INT64:
    put_key(&a, 9, 0);
    put_varint(&a, (uint64_t)i);
    break;
  case ATTR_BOOL:
    put_key(&a, 27, 0);
    put_varint(&a, i != 0);
    break;
  case ATTR_DOUBLE: {
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    uint8_t b[8];
    for (int k = 0; k < 8; k++)
      b[k] = (uint8_t)(bits >> (8 * k));
    put_key(&a, 3, 1);
    put_raw(&a, b, 8);
    break;
  }
  case ATTR_STRING:
    put_len(&a, 29, s, strlen(s));
    break;
  }
  put_len(node, 10, a.p, a.n);
  free(a.p);
}

/* A whole message, length-delimited, into the file's bytes. */
static void put_message(out_t *file, const out_t *msg) {
  put_varint(file, msg->n);
  put_raw(file, msg->p, msg->n);
}

static const char *coll_comm_type(const char *kind, int *type) {
  for (int t = 0; t < CHAKRA_COLL_TYPE_COUNT; t++)
    if (chakra_coll_npusim[t] && strcmp(chakra_coll_npusim[t], kind) == 0) {
      *type = t;
      return chakra_coll_type_names[t];
    }
  return NULL;
}

/* A collective's comm_size: its bytes, but an all-gather's per rank under
 * CHAKRA_ALLGATHER_INPUT (ASTRA-sim gathers comm_size from each rank of the
 * group), rounded to whole bytes and at least 1. */
static int64_t coll_size(const trace_t *t, const trace_op_t *op, int rank, int ct,
                         chakra_allgather_t allgather) {
  double bytes = op->bytes;
  if (ct == CHAKRA_COLL_ALL_GATHER && allgather == CHAKRA_ALLGATHER_INPUT) {
    const trace_comm_t *cm = &t->comms[op->comm];
    bytes /= cm->sizes[trace_group_of(cm, rank)];
    return bytes < 1 ? 1 : llround(bytes);
  }
  return (int64_t)bytes;
}

/* The op's Chakra node. prev: the previous op on its stream (-1: none);
 * first_pg: the pg_name of each communicator's group 0 (see write_groups). */
static void encode_op(out_t *node, const trace_t *t, const trace_vocab_t *v,
                      const trace_pairing_t *pp, const int *first_pg, chakra_allgather_t allgather,
                      int rank, int i, int prev, const int *record_of, double dur_s,
                      double nominal_s) {
  const trace_program_t *p = &t->programs[t->program_of[rank]];
  const trace_op_t *op = &p->ops[i];
  const char *name = op->label                     ? op->label
                     : op->type == TRACE_OP_SHAPED ? v->compute[op->kind]
                     : op->type == TRACE_OP_COLL   ? v->colls[op->kind]
                                                   : trace_op_type_names[op->type];
  put_key(node, 1, 0);
  put_varint(node, (uint64_t)i);
  put_len(node, 2, name, strlen(name));
  int type = op->type == TRACE_OP_COLL   ? CHAKRA_NODE_COLL
             : op->type == TRACE_OP_SEND ? CHAKRA_NODE_SEND
             : op->type == TRACE_OP_RECV ? CHAKRA_NODE_RECV
                                         : CHAKRA_NODE_COMP;
  put_key(node, 3, 0);
  put_varint(node, (uint64_t)type);
  if (prev >= 0) { /* the stream's order */
    put_key(node, 4, 0);
    put_varint(node, (uint64_t)prev);
  }
  if (op->type == TRACE_OP_WAIT && record_of[op->event] >= 0) { /* the event's recorder */
    put_key(node, 4, 0);
    put_varint(node, (uint64_t)record_of[op->event]);
  }
  for (int d = 0; d < op->ndeps; d++) {
    put_key(node, 5, 0);
    put_varint(node, (uint64_t)op->deps[d]);
  }
  if (type == CHAKRA_NODE_COMP) { /* as it ran (for other tools), and at nominal speed */
    put_key(node, 7, 0);
    put_varint(node, (uint64_t)llround(dur_s * 1e6));
    put_attr(node, "is_cpu_op", ATTR_BOOL, 0, 0, NULL);
    put_attr(node, CHAKRA_ATTR_NOMINAL_S, ATTR_DOUBLE, 0, nominal_s, NULL);
    if (op->type == TRACE_OP_DELAY)
      put_attr(node, "npusim_kind", ATTR_STRING, 0, 0, "delay");
  } else if (type == CHAKRA_NODE_COLL) {
    int ct = 0;
    coll_comm_type(v->colls[op->kind], &ct);
    char pg[16], group[320];
    int g = trace_group_of(&t->comms[op->comm], rank);
    snprintf(pg, sizeof pg, "%d", first_pg[op->comm] + g);
    snprintf(group, sizeof group, "%.300s.%d", t->comms[op->comm].name, g);
    put_attr(node, "is_cpu_op", ATTR_BOOL, 0, 0, NULL);
    put_attr(node, "comm_type", ATTR_INT64, ct, 0, NULL);
    put_attr(node, "comm_size", ATTR_INT64, coll_size(t, op, rank, ct, allgather), 0, NULL);
    put_attr(node, "pg_name", ATTR_STRING, 0, 0, pg);
    put_attr(node, "npusim_group", ATTR_STRING, 0, 0, group); /* pg_name in npusim's words */
    if (ct == 1 || ct == 5)
      put_attr(node, "root", ATTR_INT64, op->root, 0, NULL);
    if (op->algo)
      put_attr(node, "npusim_algo", ATTR_STRING, 0, 0, op->algo);
  } else {
    int peer = trace_peer(op, rank);
    bool send = type == CHAKRA_NODE_SEND;
    put_attr(node, "is_cpu_op", ATTR_BOOL, 0, 0, NULL);
    put_attr(node, "comm_src", ATTR_INT32, send ? rank : peer, 0, NULL);
    put_attr(node, "comm_dst", ATTR_INT32, send ? peer : rank, 0, NULL);
    put_attr(node, "comm_tag", ATTR_INT32, pp->tag_id[t->program_of[rank]][op->tag], 0, NULL);
    put_attr(node, "comm_size", ATTR_INT64, (int64_t)op->bytes, 0, NULL);
  }
  put_attr(node, "npusim_stream", ATTR_STRING, 0, 0, p->streams[op->stream]);
}

static int write_rank(const char *prefix, const trace_t *t, const trace_vocab_t *v,
                      const trace_pairing_t *pp, const int *first_pg, chakra_allgather_t allgather,
                      int rank, chakra_duration_fn duration, const void *ctx, npu_err_t *err) {
  const trace_program_t *p = &t->programs[t->program_of[rank]];
  char path[4096];
  snprintf(path, sizeof path, "%s.%d.et", prefix, rank);
  outfile_t *f = outfile_open(path, false, 0, err);
  if (!f)
    return -1;
  out_t file = {0}, msg = {0};
  put_len(&msg, 1, "0.0.4", 5); /* GlobalMetadata.version: the schema version written */
  put_message(&file, &msg);
  int *last = malloc(((size_t)p->nstreams + 1) * sizeof *last);
  for (int s = 0; s < p->nstreams; s++)
    last[s] = -1;
  int *record_of = malloc(((size_t)p->nevents + 1) * sizeof *record_of); /* one per event */
  for (int e = 0; e < p->nevents; e++)
    record_of[e] = -1;
  for (int i = 0; i < p->nops; i++)
    if (p->ops[i].type == TRACE_OP_RECORD)
      record_of[p->ops[i].event] = i;
  for (int i = 0; i < p->nops; i++) {
    msg.n = 0;
    const trace_op_t *op = &p->ops[i];
    double ran_s, nominal_s;
    duration(ctx, rank, i, &ran_s, &nominal_s);
    encode_op(&msg, t, v, pp, first_pg, allgather, rank, i, last[op->stream], record_of, ran_s,
              nominal_s);
    last[op->stream] = i;
    put_message(&file, &msg);
    if (file.n > (1u << 20)) { /* bounded memory: flush every MiB */
      fwrite(file.p, 1, file.n, outfile_stream(f));
      file.n = 0;
    }
  }
  fwrite(file.p, 1, file.n, outfile_stream(f));
  free(last);
  free(record_of);
  free(file.p);
  free(msg.p);
  return outfile_commit(f, err);
}

/* PREFIX.comm_groups.json: every group of every communicator, named as the
 * nodes' pg_name: a number, as ASTRA-sim reads both (std::stoi), counted from
 * 1 (its "0" means all ranks) over the communicators in order, so group g of
 * communicator c is first_pg[c] + g. */
static int write_groups(const char *prefix, const trace_t *t, const int *first_pg, npu_err_t *err) {
  char path[4096];
  snprintf(path, sizeof path, "%s.comm_groups.json", prefix);
  outfile_t *f = outfile_open(path, false, 0, err);
  if (!f)
    return -1;
  FILE *out = outfile_stream(f);
  fputc('{', out);
  bool first = true;
  for (int c = 0; c < t->ncomms; c++)
    for (int g = 0; g < t->comms[c].ngroups; g++) {
      fprintf(out, "%s\"%d\": [", first ? "\n  " : ",\n  ", first_pg[c] + g);
      first = false;
      for (int k = 0; k < t->comms[c].sizes[g]; k++)
        fprintf(out, "%s%d", k ? ", " : "", t->comms[c].groups[g][k]);
      fputc(']', out);
    }
  fputs("\n}\n", out);
  return outfile_commit(f, err);
}

/* The rank of a file of the set PREFIX (dir/base): base.<rank>.et or .et.gz
 * with rank written as rank_file writes it (no sign, no leading zero); -1 for
 * any other name. gz is set for .et.gz. */
static long set_rank(const char *name, const char *base, bool *gz) {
  size_t nb = strlen(base);
  if (strncmp(name, base, nb) != 0 || name[nb] != '.')
    return -1;
  const char *digits = name + nb + 1, *end = digits;
  while (*end >= '0' && *end <= '9')
    end++;
  if (end == digits || end - digits > 9 || (*digits == '0' && end - digits > 1))
    return -1;
  *gz = strcmp(end, ".et.gz") == 0;
  if (!*gz && strcmp(end, ".et") != 0)
    return -1;
  return strtol(digits, NULL, 10);
}

/* Marks for removal, when the new set lands, the files of PREFIX the reader
 * would take for ranks that this set does not write: ranks from `ranks` on,
 * and any .et.gz (this writer writes .et). */
static int remove_stale_ranks(const char *prefix, int ranks, npu_err_t *err) {
  char dir[4096];
  const char *base = outfile_split_path(prefix, dir, sizeof dir);
  DIR *d = opendir(dir);
  if (!d)
    return 0; /* a missing directory: the first file's open says so */
  int rc = 0;
  for (struct dirent *e; rc == 0 && (e = readdir(d));) {
    bool gz;
    long r = set_rank(e->d_name, base, &gz);
    if (r < 0 || (!gz && r < ranks))
      continue;
    char path[8192];
    snprintf(path, sizeof path, "%.*s%s", (int)(base - prefix), prefix, e->d_name);
    if (outfile_stage_remove(path)) {
      npu_err_set(err, "%s: cannot write: out of memory", prefix);
      rc = -1;
    }
  }
  closedir(d);
  return rc;
}

int chakra_write(const char *prefix, const trace_t *t, const trace_vocab_t *vocab,
                 chakra_allgather_t allgather, chakra_duration_fn duration, const void *ctx,
                 npu_err_t *err) {
  if (trace_has_barrier(t))
    return npu_err_set(err, "%s: cannot write: the trace holds step barriers (npusim cluster's, which "
                    "Chakra cannot say)",
                    prefix),
           -1;
  for (int p = 0; p < t->nprograms; p++)
    for (int i = 0; i < t->programs[p].nops; i++) {
      const trace_op_t *op = &t->programs[p].ops[i];
      int ct;
      if (op->type == TRACE_OP_COLL && !coll_comm_type(vocab->colls[op->kind], &ct))
        return npu_err_set(err, "%s: expected collectives Chakra has, found %s", prefix,
                        vocab->colls[op->kind]),
               -1;
    }
  /* One set: the files land together (the caller's staging, or our own), and
   * the ranks of an earlier export past this one's go with them, or a replay
   * of PREFIX would read them as ranks of this one. */
  bool own = outfile_stage_begin();
  trace_pairing_t pp;
  trace_pairing_init(&pp, t);
  int *first_pg = malloc(((size_t)t->ncomms + 1) * sizeof *first_pg);
  for (int c = 0, next = 1; c < t->ncomms; c++) {
    first_pg[c] = next;
    next += t->comms[c].ngroups;
  }
  int rc = remove_stale_ranks(prefix, t->ranks, err);
  if (rc == 0)
    rc = write_groups(prefix, t, first_pg, err);
  for (int r = 0; rc == 0 && r < t->ranks; r++)
    rc = write_rank(prefix, t, vocab, &pp, first_pg, allgather, r, duration, ctx, err);
  free(first_pg);
  trace_pairing_free(&pp);
  if (own && rc == 0)
    rc = outfile_stage_publish(err);
  else if (own)
    outfile_stage_discard();
  return rc;
}
