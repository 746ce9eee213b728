/* chakra.c - see chakra.h. Protobuf wire format: each field a varint key
 * (field number << 3 | wire type); wire types 0 varint, 1 eight bytes, 2 a
 * varint length then that many bytes, 5 four bytes. */
#include "chakra.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>
#include <zlib.h>

#include "jsonfile.h"
#include "outfile.h"

const char *const chakra_compute_names[CHAKRA_COMPUTE_COUNT] = {"auto", "duration", "roofline"};

/* Node types and collective types of et_def.proto. */
enum {
  NODE_INVALID,
  NODE_METADATA,
  NODE_MEM_LOAD,
  NODE_MEM_STORE,
  NODE_COMP,
  NODE_SEND,
  NODE_RECV,
  NODE_COLL,
  NODE_STORAGE,
  NODE_BATCH,
  NODE_CHECKPOINT,
  NODE_TYPE_COUNT
};
static const char *const node_type_names[NODE_TYPE_COUNT] = {
    "INVALID_NODE", "METADATA_NODE",  "MEM_LOAD_NODE",  "MEM_STORE_NODE",
    "COMP_NODE",    "COMM_SEND_NODE", "COMM_RECV_NODE", "COMM_COLL_NODE",
    "STORAGE_NODE", "BATCH_NODE",     "CHECKPOINT_NODE"};

enum { COLL_TYPE_COUNT = 10 };
static const char *const coll_type_names[COLL_TYPE_COUNT] = {
    "ALL_REDUCE", "REDUCE",         "ALL_GATHER",           "GATHER", "SCATTER", "BROADCAST",
    "ALL_TO_ALL", "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK", "BARRIER"};
/* npusim's collective for each, NULL where it has none. */
static const char *const coll_npusim[COLL_TYPE_COUNT] = {
    "allreduce", "reduce",        "allgather",     NULL, NULL, "broadcast",
    "alltoall",  "reducescatter", "reducescatter", NULL};

/* ---- reading the wire format ---- */

typedef struct {
  const uint8_t *p, *end;
} buf_t;

/* A varint; 0, or -1 when it runs past the end or past ten bytes. */
static int get_varint(buf_t *b, uint64_t *v) {
  uint64_t x = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (b->p >= b->end)
      return -1;
    uint8_t c = *b->p++;
    x |= (uint64_t)(c & 0x7f) << shift;
    if (!(c & 0x80)) {
      *v = x;
      return 0;
    }
  }
  return -1;
}

/* A length-delimited field's bytes as a sub-buffer. */
static int get_bytes(buf_t *b, buf_t *out) {
  uint64_t n;
  if (get_varint(b, &n) || n > (uint64_t)(b->end - b->p))
    return -1;
  *out = (buf_t){b->p, b->p + n};
  b->p += n;
  return 0;
}

/* Skips a field of the wire type; -1 past the end or on a group (3, 4) or
 * unknown type. */
static int skip_field(buf_t *b, int wire) {
  uint64_t v;
  buf_t sub;
  size_t fixed = wire == 1 ? 8 : wire == 5 ? 4 : 0;
  if (wire == 0)
    return get_varint(b, &v);
  if (wire == 2)
    return get_bytes(b, &sub);
  if (!fixed || (size_t)(b->end - b->p) < fixed)
    return -1;
  b->p += fixed;
  return 0;
}

static uint64_t get_fixed(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

/* ---- a node as the reader needs it ---- */

typedef struct {
  buf_t name; /* the attribute's name */
  bool has_int, has_double, has_string;
  int64_t ival;
  double dval;
  buf_t sval;
} attr_t;

typedef struct {
  uint64_t id;
  int type;
  buf_t name;
  uint64_t *deps;
  int ndeps, cap;
  uint64_t duration_us;
  attr_t comm_type, comm_size, comm_src, comm_dst, comm_tag, pg_name, num_ops, tensor_size, root,
      stream, duration_s, kind, algo;
} node_t;

typedef struct {
  const char *file;
  char *err;
  size_t err_len;
  long index; /* the node's place in the file (for errors before its id is known) */
  bool has_id;
  uint64_t id;
} ctx_t;

static int fail(ctx_t *c, const char *what) {
  char where[64];
  if (c->has_id)
    snprintf(where, sizeof where, "node %" PRIu64, c->id);
  else
    snprintf(where, sizeof where, "node #%ld of the file", c->index);
  snprintf(c->err, c->err_len, "%s: %s: expected %s", c->file, where, what);
  return -1;
}

static bool name_is(const buf_t *b, const char *s) {
  size_t n = strlen(s);
  return (size_t)(b->end - b->p) == n && memcmp(b->p, s, n) == 0;
}

/* An AttributeProto: its name and a scalar value (lists are skipped). */
static int parse_attr(ctx_t *c, buf_t b, attr_t *a) {
  memset(a, 0, sizeof *a);
  while (b.p < b.end) {
    uint64_t key, v = 0;
    if (get_varint(&b, &key))
      return fail(c, "a complete attribute, found a truncated field key");
    int field = (int)(key >> 3), wire = (int)(key & 7);
    bool ok = true;
    if (field == 1 && wire == 2) {
      ok = get_bytes(&b, &a->name) == 0;
    } else if (field == 29 && wire == 2) { /* string_val */
      ok = get_bytes(&b, &a->sval) == 0;
      a->has_string = true;
    } else if ((field == 7 || field == 9 || field == 11 || field == 13) && wire == 0) {
      ok = get_varint(&b, &v) == 0; /* int32 and int64 negatives are 10-byte varints */
      a->ival = (int64_t)v;
      a->has_int = true;
    } else if ((field == 15 || field == 17) && wire == 0) { /* zigzag */
      ok = get_varint(&b, &v) == 0;
      a->ival = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
      a->has_int = true;
    } else if (field == 27 && wire == 0) { /* bool */
      ok = get_varint(&b, &v) == 0;
      a->ival = v != 0;
      a->has_int = true;
    } else if ((field == 3 || field == 21 || field == 25) && wire == 1 && b.end - b.p >= 8) {
      uint64_t bits = get_fixed(b.p, 8);
      b.p += 8;
      if (field == 3) {
        memcpy(&a->dval, &bits, sizeof a->dval);
        a->has_double = true;
      } else {
        a->ival = (int64_t)bits;
        a->has_int = true;
      }
    } else if ((field == 5 || field == 19 || field == 23) && wire == 5 && b.end - b.p >= 4) {
      uint32_t bits = (uint32_t)get_fixed(b.p, 4);
      b.p += 4;
      if (field == 5) {
        float f;
        memcpy(&f, &bits, sizeof f);
        a->dval = f;
        a->has_double = true;
      } else {
        a->ival = field == 23 ? (int32_t)bits : (int64_t)bits;
        a->has_int = true;
      }
    } else if (field == 2 || (field >= 3 && field <= 32)) {
      ok = skip_field(&b, wire) == 0; /* doc_string, lists, bytes */
    } else {
      char what[96];
      snprintf(what, sizeof what,
               "an attribute value of et_def.proto (fields 1-32), found field "
               "%d",
               field);
      return fail(c, what);
    }
    if (!ok)
      return fail(c, "a complete attribute, found one cut short (a length or varint "
                     "past its end)");
  }
  if (a->has_double && !a->has_int) { /* a number given as a double counts where it fits */
    a->has_int = isfinite(a->dval) && fabs(a->dval) < 9.0e18;
    a->ival = a->has_int ? (int64_t)a->dval : 0;
  }
  if (a->has_int && !a->has_double)
    a->dval = (double)a->ival;
  return 0;
}

static void keep_attr(node_t *n, const attr_t *a) {
  static const struct {
    const char *name;
    size_t offset;
  } known[] = {{"comm_type", offsetof(node_t, comm_type)},
               {"comm_size", offsetof(node_t, comm_size)},
               {"comm_src", offsetof(node_t, comm_src)},
               {"comm_dst", offsetof(node_t, comm_dst)},
               {"comm_tag", offsetof(node_t, comm_tag)},
               {"pg_name", offsetof(node_t, pg_name)},
               {"num_ops", offsetof(node_t, num_ops)},
               {"tensor_size", offsetof(node_t, tensor_size)},
               {"root", offsetof(node_t, root)},
               {"npusim_stream", offsetof(node_t, stream)},
               {"npusim_duration_s", offsetof(node_t, duration_s)},
               {"npusim_kind", offsetof(node_t, kind)},
               {"npusim_algo", offsetof(node_t, algo)}};
  for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
    if (name_is(&a->name, known[k].name))
      *(attr_t *)((char *)n + known[k].offset) = *a;
}

static void add_dep(node_t *n, uint64_t id) {
  if (n->ndeps == n->cap) {
    n->cap = n->cap ? 2 * n->cap : 4;
    n->deps = realloc(n->deps, (size_t)n->cap * sizeof *n->deps);
  }
  n->deps[n->ndeps++] = id;
}

/* Repeated uint64 ids, packed (wire 2) or one per field (wire 0). */
static int parse_ids(buf_t *b, int wire, node_t *n) {
  uint64_t v;
  if (wire == 0) {
    if (get_varint(b, &v))
      return -1;
    add_dep(n, v);
    return 0;
  }
  buf_t sub;
  if (wire != 2 || get_bytes(b, &sub))
    return -1;
  while (sub.p < sub.end) {
    if (get_varint(&sub, &v))
      return -1;
    add_dep(n, v);
  }
  return 0;
}

static int parse_node(ctx_t *c, buf_t b, node_t *n) {
  memset(n, 0, sizeof *n);
  c->has_id = false;
  while (b.p < b.end) {
    uint64_t key, v = 0;
    if (get_varint(&b, &key))
      return fail(c, "a complete node, found a truncated field key");
    int field = (int)(key >> 3), wire = (int)(key & 7);
    int rc = 0;
    if (field == 1 && wire == 0) {
      rc = get_varint(&b, &n->id);
      c->has_id = rc == 0;
      c->id = n->id;
    } else if (field == 2 && wire == 2) {
      rc = get_bytes(&b, &n->name);
    } else if (field == 3 && wire == 0) {
      rc = get_varint(&b, &v);
      n->type = v < NODE_TYPE_COUNT ? (int)v : -1;
      if (rc == 0 && n->type < 0) {
        char what[96];
        snprintf(what, sizeof what, "a node type of et_def.proto (0-%d), found %" PRIu64,
                 NODE_TYPE_COUNT - 1, v);
        return fail(c, what);
      }
    } else if (field == 4 || field == 5) {
      rc = parse_ids(&b, wire, n);
    } else if (field == 7 && wire == 0) {
      rc = get_varint(&b, &n->duration_us);
    } else if (field == 10 && wire == 2) {
      buf_t sub;
      attr_t a;
      rc = get_bytes(&b, &sub);
      if (rc == 0 && parse_attr(c, sub, &a))
        return -1;
      if (rc == 0)
        keep_attr(n, &a);
    } else {
      rc = skip_field(&b, wire); /* name, times, IOInfo, storage, fields of later versions */
    }
    if (rc)
      return fail(c, "a complete node, found one cut short (a length or varint past its "
                     "end, or a group field)");
  }
  if (!c->has_id)
    return fail(c, "a node id (field 1), found none");
  return 0;
}

/* ---- one rank's program, as trace JSON ---- */

typedef struct {
  cJSON *groups; /* the comm-group JSON: {"pg": [ranks]} */
  int ranks;
  bool uses_world; /* a collective without pg_name */
  long skipped;
} job_t;

static void put_str(FILE *f, const buf_t *b) {
  char *s = strndup((const char *)b->p, (size_t)(b->end - b->p));
  jsonfile_write_string(f, s);
  free(s);
}

static void put_stream(FILE *f, const node_t *n, const char *dflt) {
  fputs(", \"stream\": ", f);
  if (n->stream.has_string)
    put_str(f, &n->stream.sval);
  else
    jsonfile_write_string(f, dflt);
}

static int put_compute(ctx_t *c, FILE *f, const node_t *n, const chakra_opts_t *o) {
  double us = (double)n->duration_us;
  if (n->duration_s.has_double) /* npusim's own export: exact */
    us = n->duration_s.dval * 1e6;
  bool roofline =
      o->compute == CHAKRA_COMPUTE_ROOFLINE ||
      (o->compute == CHAKRA_COMPUTE_AUTO && n->num_ops.has_int && !n->duration_s.has_double);
  if (roofline && !n->num_ops.has_int)
    return fail(c, "num_ops on a COMP_NODE for --chakra-compute roofline, found none");
  if (roofline && o->flops_per_s > 0) {
    double flops_s = (double)n->num_ops.ival / o->flops_per_s;
    double mem_s = n->tensor_size.has_int && o->mem_bytes_per_s > 0
                       ? (double)n->tensor_size.ival / o->mem_bytes_per_s
                       : 0;
    us = 1e6 * (flops_s > mem_s ? flops_s : mem_s);
  }
  bool delay = n->kind.has_string && name_is(&n->kind.sval, "delay");
  fprintf(f, "\"kind\": \"%s\", \"duration_us\": %.17g", delay ? "delay" : "compute", us);
  put_stream(f, n, "compute");
  return 0;
}

static int put_coll(ctx_t *c, FILE *f, const node_t *n, job_t *job) {
  int64_t t = n->comm_type.has_int ? n->comm_type.ival : -1;
  if (t < 0 || t >= COLL_TYPE_COUNT)
    return fail(c, "comm_type of et_def.proto's CollectiveCommType (0-9) on a "
                   "COMM_COLL_NODE");
  if (!coll_npusim[t]) {
    char what[128];
    snprintf(what, sizeof what,
             "a collective npusim models (ALL_REDUCE, REDUCE, ALL_GATHER, "
             "BROADCAST, ALL_TO_ALL, REDUCE_SCATTER), found %s",
             coll_type_names[t]);
    return fail(c, what);
  }
  if (!n->comm_size.has_int || n->comm_size.ival < 0)
    return fail(c, "comm_size (bytes) on a COMM_COLL_NODE");
  fprintf(f, "\"kind\": \"%s\", \"bytes\": %" PRId64 ", \"comm\": ", coll_npusim[t],
          n->comm_size.ival);
  if (n->pg_name.has_string) {
    char *pg =
        strndup((const char *)n->pg_name.sval.p, (size_t)(n->pg_name.sval.end - n->pg_name.sval.p));
    bool known = job->groups && cJSON_GetObjectItemCaseSensitive(job->groups, pg);
    if (!known) {
      char what[200];
      snprintf(what, sizeof what,
               "process group \"%.60s\" in the comm-group JSON "
               "(--comm-group FILE), found %s",
               pg, job->groups ? "no such group" : "no file");
      free(pg);
      return fail(c, what);
    }
    char name[96];
    snprintf(name, sizeof name, "pg:%.80s", pg);
    jsonfile_write_string(f, name);
    free(pg);
  } else {
    job->uses_world = true;
    fputs("\"world\"", f);
  }
  if (t == 1 || t == 5)
    fprintf(f, ", \"root\": %" PRId64, n->root.has_int ? n->root.ival : 0);
  if (n->algo.has_string) {
    fputs(", \"algo\": ", f);
    put_str(f, &n->algo.sval);
  }
  put_stream(f, n, "comm");
  return 0;
}

static int put_p2p(ctx_t *c, FILE *f, const node_t *n, int rank, int ranks) {
  bool send = n->type == NODE_SEND;
  const attr_t *peer = send ? &n->comm_dst : &n->comm_src;
  if (!peer->has_int || peer->ival < 0 || peer->ival >= ranks || peer->ival == rank) {
    char what[128];
    snprintf(what, sizeof what, "%s naming another rank of the %d ranks",
             send ? "comm_dst" : "comm_src", ranks);
    return fail(c, what);
  }
  if (!n->comm_size.has_int || n->comm_size.ival < 0)
    return fail(c, "comm_size (bytes) on a send or receive node");
  fprintf(f, "\"kind\": \"%s\", \"peer\": %" PRId64 ", \"bytes\": %" PRId64, send ? "send" : "recv",
          peer->ival, n->comm_size.ival);
  if (n->comm_tag.has_int && n->comm_tag.ival != 0)
    fprintf(f, ", \"tag\": \"t%" PRId64 "\"", n->comm_tag.ival);
  put_stream(f, n, send ? "send" : "recv");
  return 0;
}

/* Writes the node as an op of the trace; METADATA nodes write nothing
 * (returns 1). */
static int put_node(ctx_t *c, FILE *f, const node_t *n, const chakra_opts_t *o, job_t *job,
                    int rank, bool first) {
  if (n->type == NODE_METADATA)
    return 1;
  if (n->id > INT32_MAX)
    return fail(c, "a node id below 2^31");
  fprintf(f, "%s{\"id\": %" PRIu64 ", ", first ? "" : ",\n", n->id);
  int rc = 0;
  switch (n->type) {
  case NODE_COMP:
    rc = put_compute(c, f, n, o);
    break;
  case NODE_COLL:
    rc = put_coll(c, f, n, job);
    break;
  case NODE_SEND:
  case NODE_RECV:
    rc = put_p2p(c, f, n, rank, job->ranks);
    break;
  default:
    if (!o->skip) {
      char what[160];
      snprintf(what, sizeof what,
               "a node type npusim models (COMP_NODE, COMM_COLL_NODE, "
               "COMM_SEND_NODE, COMM_RECV_NODE), found %s (--chakra-skip keeps it as a delay)",
               node_type_names[n->type]);
      return fail(c, what);
    }
    job->skipped++;
    fputs("\"kind\": \"delay\", \"duration_us\": 0, \"stream\": \"chakra_skipped\"", f);
  }
  if (rc)
    return rc;
  if (n->name.end > n->name.p) {
    fputs(", \"label\": ", f);
    put_str(f, &n->name);
  }
  if (n->ndeps) {
    fputs(", \"deps\": [", f);
    for (int i = 0; i < n->ndeps; i++)
      fprintf(f, "%s%" PRIu64, i ? ", " : "", n->deps[i]);
    fputc(']', f);
  }
  fputc('}', f);
  return 0;
}

/* The ops of one rank file as a JSON array body; NULL with err set. */
static char *rank_program(const char *file, const chakra_opts_t *o, job_t *job, int rank, char *err,
                          size_t err_len) {
  size_t len;
  char why[256];
  char *data = jsonfile_read(file, TRACE_MAX_BYTES, &len, why, sizeof why);
  if (!data) {
    snprintf(err, err_len, "%s: expected a readable Chakra ET file, found %s", file, why);
    return NULL;
  }
  ctx_t c = {.file = file, .err = err, .err_len = err_len};
  buf_t b = {(const uint8_t *)data, (const uint8_t *)data + len}, msg;
  char *text = NULL;
  size_t tlen = 0;
  FILE *f = open_memstream(&text, &tlen);
  int rc = get_bytes(&b, &msg); /* GlobalMetadata: its version is not checked */
  if (rc)
    snprintf(err, err_len,
             "%s: expected a Chakra ET file (a length-delimited GlobalMetadata "
             "first), found a length past the end of the file",
             file);
  bool first = true;
  for (c.index = 0; rc == 0 && b.p < b.end; c.index++) {
    node_t n;
    c.has_id = false;
    if (get_bytes(&b, &msg)) {
      rc = fail(&c, "a node's length within the file, found a truncated varint or a "
                    "length past the end");
      break;
    }
    rc = parse_node(&c, msg, &n);
    if (rc == 0) {
      int put = put_node(&c, f, &n, o, job, rank, first);
      rc = put < 0 ? -1 : 0;
      first = first && put == 1;
    }
    free(n.deps);
  }
  fclose(f);
  free(data);
  if (rc) {
    free(text);
    return NULL;
  }
  return text;
}

/* ---- the whole trace ---- */

/* The first bytes of a file (gunzipped) look like an ET: not JSON, a varint
 * length, then GlobalMetadata's field 1 (version, which Chakra's writers always
 * set; a stream of zero bytes is not an ET). */
static bool looks_like_et(const char *path) {
  gzFile gz = gzopen(path, "rb");
  if (!gz)
    return false;
  uint8_t head[16];
  int n = gzread(gz, head, sizeof head);
  gzclose(gz);
  if (n < 1 || head[0] == '{' || head[0] == ' ' || head[0] == '\n' || head[0] == '\t')
    return false;
  buf_t b = {head, head + n};
  uint64_t len;
  if (get_varint(&b, &len))
    return false;
  return len >= 2 && b.p < b.end && *b.p == 0x0a;
}

/* PREFIX of a file named PREFIX.<rank>.et or .et.gz; false if not so named. */
static bool prefix_of(const char *path, char *prefix, size_t len) {
  size_t n = strlen(path);
  const char *end = n > 6 && strcmp(path + n - 6, ".et.gz") == 0 ? path + n - 6
                    : n > 3 && strcmp(path + n - 3, ".et") == 0  ? path + n - 3
                                                                 : NULL;
  const char *dot = end;
  while (dot && dot > path && dot[-1] >= '0' && dot[-1] <= '9')
    dot--;
  if (!end || dot == end || dot - 1 <= path || dot[-1] != '.')
    return false;
  snprintf(prefix, len, "%.*s", (int)(dot - 1 - path), path);
  return true;
}

int chakra_detect(const char *path, char *prefix, size_t len, char *err, size_t err_len) {
  struct stat st;
  char why[128];
  if (stat(path, &st) == 0) {
    /* The inputs' one check before the peek: a FIFO or a /proc file is left
     * unopened, for the JSON reader to refuse. */
    if (jsonfile_check(path, why, sizeof why) || !looks_like_et(path))
      return 0;
    if (prefix_of(path, prefix, len))
      return 1;
    return snprintf(err, err_len,
                    "%s: expected a Chakra ET file named PREFIX.<rank>.et or "
                    ".et.gz (the ranks are read by their prefix), found another name",
                    path),
           -1;
  }
  char probe[4096];
  for (int gz = 0; gz < 2; gz++) {
    snprintf(probe, sizeof probe, "%s.0.et%s", path, gz ? ".gz" : "");
    if (stat(probe, &st) == 0) {
      snprintf(prefix, len, "%s", path);
      return 1;
    }
  }
  return 0;
}

/* The file of a rank, .et or .et.gz; NULL if neither exists. */
static const char *rank_file(const char *prefix, int rank, char *buf, size_t len) {
  struct stat st;
  for (int gz = 0; gz < 2; gz++) {
    snprintf(buf, len, "%s.%d.et%s", prefix, rank, gz ? ".gz" : "");
    if (stat(buf, &st) == 0)
      return buf;
  }
  return NULL;
}

typedef struct {
  char *ops;
  uint64_t hash;
  int *ranks, nranks;
} program_t;

static uint64_t fnv1a(const char *s) {
  uint64_t h = 1469598103934665603ULL;
  for (; *s; s++)
    h = (h ^ (uint8_t)*s) * 1099511628211ULL;
  return h;
}

static int load_groups(const chakra_opts_t *o, job_t *job, char *err, size_t err_len) {
  if (!o->comm_groups)
    return 0;
  size_t len;
  char why[256];
  char *text = jsonfile_read(o->comm_groups, 64UL << 20, &len, why, sizeof why);
  if (!text)
    return snprintf(err, err_len, "%s: expected a readable comm-group JSON, found %s",
                    o->comm_groups, why),
           -1;
  job->groups = jsonfile_parse(o->comm_groups, text, len, err, err_len);
  free(text);
  if (!job->groups)
    return -1;
  const cJSON *g;
  cJSON_ArrayForEach(g, job->groups) {
    if (!cJSON_IsArray(g) || cJSON_GetArraySize(g) == 0)
      return snprintf(err, err_len, "%s: %s: expected an array of ranks, found something else",
                      o->comm_groups, g->string),
             -1;
  }
  if (!cJSON_IsObject(job->groups))
    return snprintf(err, err_len,
                    "%s: expected an object {\"process group\": [ranks]}, found "
                    "something else",
                    o->comm_groups),
           -1;
  return 0;
}

/* The trace as JSON text: communicators (every process group used, and the
 * world), programs (identical ranks' programs once). */
static char *assemble(const char *prefix, job_t *job, program_t *progs, int nprogs) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  fprintf(f, "{\"format\": \"npusim-trace\", \"version\": 1, \"name\": ");
  char name[512];
  snprintf(name, sizeof name, "Chakra ET %.400s%s", prefix, job->skipped ? " (nodes skipped)" : "");
  jsonfile_write_string(f, name);
  fprintf(f, ", \"ranks\": %d, \"communicators\": [", job->ranks);
  bool first = true;
  if (job->uses_world) {
    fprintf(f, "{\"name\": \"world\", \"groups\": [\"0-%d\"]}", job->ranks - 1);
    first = false;
  }
  const cJSON *g;
  cJSON_ArrayForEach(g, job->groups) {
    char cname[96];
    snprintf(cname, sizeof cname, "pg:%.80s", g->string);
    fputs(first ? "" : ", ", f);
    first = false;
    fputs("{\"name\": ", f);
    jsonfile_write_string(f, cname);
    char *ranks = cJSON_PrintUnformatted(g);
    fprintf(f, ", \"groups\": [%s]}", ranks);
    free(ranks);
  }
  fputs("], \"programs\": [", f);
  for (int i = 0; i < nprogs; i++) {
    fprintf(f, "%s{\"ranks\": [", i ? ",\n" : "\n");
    for (int k = 0; k < progs[i].nranks; k++)
      fprintf(f, "%s%d", k ? ", " : "", progs[i].ranks[k]);
    fprintf(f, "], \"ops\": [\n%s]}", progs[i].ops);
  }
  fputs("]}\n", f);
  fclose(f);
  return text;
}

int chakra_read(const char *prefix, const chakra_opts_t *o, const trace_vocab_t *vocab,
                trace_t *out, long *skipped, char *err, size_t err_len) {
  memset(out, 0, sizeof *out);
  job_t job = {0};
  char file[4096];
  while (rank_file(prefix, job.ranks, file, sizeof file))
    job.ranks++;
  if (job.ranks == 0)
    return snprintf(err, err_len,
                    "%s: expected Chakra ET files %s.0.et, %s.1.et, ... (or "
                    ".et.gz), found none",
                    prefix, prefix, prefix),
           -1;
  int rc = load_groups(o, &job, err, err_len);
  program_t *progs = calloc((size_t)job.ranks, sizeof *progs);
  int nprogs = 0;
  for (int r = 0; rc == 0 && r < job.ranks; r++) {
    char *ops = rank_program(rank_file(prefix, r, file, sizeof file), o, &job, r, err, err_len);
    if (!ops) {
      rc = -1;
      break;
    }
    uint64_t h = fnv1a(ops);
    int p = 0;
    while (p < nprogs && (progs[p].hash != h || strcmp(progs[p].ops, ops) != 0))
      p++;
    if (p == nprogs) {
      progs[nprogs++] = (program_t){ops, h, malloc((size_t)job.ranks * sizeof(int)), 0};
    } else {
      free(ops);
    }
    progs[p].ranks[progs[p].nranks++] = r;
  }
  if (rc == 0) {
    char *text = assemble(prefix, &job, progs, nprogs);
    rc = trace_parse(prefix, text, strlen(text), vocab, out, err, err_len);
    free(text);
  }
  for (int p = 0; p < nprogs; p++) {
    free(progs[p].ops);
    free(progs[p].ranks);
  }
  free(progs);
  cJSON_Delete(job.groups);
  *skipped = job.skipped;
  return rc;
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

/* An AttributeProto holding an int64, a uint64, a double or a string. */
typedef enum { ATTR_INT64, ATTR_UINT64, ATTR_BOOL, ATTR_DOUBLE, ATTR_STRING } attr_kind_t;

static void put_attr(out_t *node, const char *name, attr_kind_t kind, int64_t i, double d,
                     const char *s) {
  out_t a = {0};
  put_len(&a, 1, name, strlen(name));
  switch (kind) {
  case ATTR_INT64:
    put_key(&a, 9, 0);
    put_varint(&a, (uint64_t)i);
    break;
  case ATTR_UINT64:
    put_key(&a, 13, 0);
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
  for (int t = 0; t < COLL_TYPE_COUNT; t++)
    if (coll_npusim[t] && strcmp(coll_npusim[t], kind) == 0) {
      *type = t;
      return coll_type_names[t];
    }
  return NULL;
}

/* The op's Chakra node. prev: the previous op on its stream (-1: none). */
static void encode_op(out_t *node, const trace_t *t, const trace_vocab_t *v,
                      const trace_pairing_t *pp, int rank, int i, int prev, const int *record_of,
                      double dur_s) {
  const trace_program_t *p = &t->programs[t->program_of[rank]];
  const trace_op_t *op = &p->ops[i];
  static const char *const kind_of_type[TRACE_OP_TYPE_COUNT] = {
      NULL, NULL, NULL, NULL, NULL, "record", "wait", "delay", "alloc", "free"};
  const char *name = op->label                     ? op->label
                     : op->type == TRACE_OP_SHAPED ? v->compute[op->kind]
                     : op->type == TRACE_OP_COLL   ? v->colls[op->kind]
                                                   : trace_op_type_names[op->type];
  put_key(node, 1, 0);
  put_varint(node, (uint64_t)i);
  put_len(node, 2, name, strlen(name));
  int type = op->type == TRACE_OP_COLL   ? NODE_COLL
             : op->type == TRACE_OP_SEND ? NODE_SEND
             : op->type == TRACE_OP_RECV ? NODE_RECV
                                         : NODE_COMP;
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
  if (type == NODE_COMP) {
    put_key(node, 7, 0);
    put_varint(node, (uint64_t)llround(dur_s * 1e6));
    put_attr(node, "is_cpu_op", ATTR_BOOL, 0, 0, NULL);
    put_attr(node, "npusim_duration_s", ATTR_DOUBLE, 0, dur_s, NULL);
    if (kind_of_type[op->type] && op->type == TRACE_OP_DELAY)
      put_attr(node, "npusim_kind", ATTR_STRING, 0, 0, "delay");
  } else if (type == NODE_COLL) {
    int ct = 0;
    coll_comm_type(v->colls[op->kind], &ct);
    char pg[160];
    snprintf(pg, sizeof pg, "%s.%d", t->comms[op->comm].name,
             trace_group_of(&t->comms[op->comm], rank));
    put_attr(node, "is_cpu_op", ATTR_BOOL, 0, 0, NULL);
    put_attr(node, "comm_type", ATTR_INT64, ct, 0, NULL);
    put_attr(node, "comm_size", ATTR_UINT64, (int64_t)op->bytes, 0, NULL);
    put_attr(node, "pg_name", ATTR_STRING, 0, 0, pg);
    if (ct == 1 || ct == 5)
      put_attr(node, "root", ATTR_INT64, op->root, 0, NULL);
    if (op->algo)
      put_attr(node, "npusim_algo", ATTR_STRING, 0, 0, op->algo);
  } else {
    int peer = trace_peer(op, rank);
    bool send = type == NODE_SEND;
    put_attr(node, "is_cpu_op", ATTR_BOOL, 0, 0, NULL);
    put_attr(node, "comm_src", ATTR_INT64, send ? rank : peer, 0, NULL);
    put_attr(node, "comm_dst", ATTR_INT64, send ? peer : rank, 0, NULL);
    put_attr(node, "comm_tag", ATTR_INT64, pp->tag_id[t->program_of[rank]][op->tag], 0, NULL);
    put_attr(node, "comm_size", ATTR_UINT64, (int64_t)op->bytes, 0, NULL);
  }
  put_attr(node, "npusim_stream", ATTR_STRING, 0, 0, p->streams[op->stream]);
}

static int write_rank(const char *prefix, const trace_t *t, const trace_vocab_t *v,
                      const trace_pairing_t *pp, int rank, chakra_duration_fn duration,
                      const void *ctx, char *err, size_t err_len) {
  const trace_program_t *p = &t->programs[t->program_of[rank]];
  char path[4096];
  snprintf(path, sizeof path, "%s.%d.et", prefix, rank);
  outfile_t *f = outfile_open(path, false, 0, err, err_len);
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
    encode_op(&msg, t, v, pp, rank, i, last[op->stream], record_of, duration(ctx, rank, i));
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
  return outfile_commit(f, err, err_len);
}

/* PREFIX.comm_groups.json: every group of every communicator, named as the
 * nodes' pg_name ("tp.3"). */
static int write_groups(const char *prefix, const trace_t *t, char *err, size_t err_len) {
  char path[4096];
  snprintf(path, sizeof path, "%s.comm_groups.json", prefix);
  outfile_t *f = outfile_open(path, false, 0, err, err_len);
  if (!f)
    return -1;
  FILE *out = outfile_stream(f);
  fputc('{', out);
  bool first = true;
  for (int c = 0; c < t->ncomms; c++)
    for (int g = 0; g < t->comms[c].ngroups; g++) {
      char name[160];
      snprintf(name, sizeof name, "%s.%d", t->comms[c].name, g);
      fputs(first ? "\n  " : ",\n  ", out);
      first = false;
      jsonfile_write_string(out, name);
      fputs(": [", out);
      for (int k = 0; k < t->comms[c].sizes[g]; k++)
        fprintf(out, "%s%d", k ? ", " : "", t->comms[c].groups[g][k]);
      fputc(']', out);
    }
  fputs("\n}\n", out);
  return outfile_commit(f, err, err_len);
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
static int remove_stale_ranks(const char *prefix, int ranks, char *err, size_t err_len) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", prefix);
  char *slash = strrchr(dir, '/');
  const char *base = slash ? prefix + (slash - dir) + 1 : prefix;
  if (slash)
    slash[slash == dir] = '\0';
  else
    snprintf(dir, sizeof dir, ".");
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
      snprintf(err, err_len, "%s: cannot write: out of memory", prefix);
      rc = -1;
    }
  }
  closedir(d);
  return rc;
}

int chakra_write(const char *prefix, const trace_t *t, const trace_vocab_t *vocab,
                 chakra_duration_fn duration, const void *ctx, char *err, size_t err_len) {
  for (int p = 0; p < t->nprograms; p++)
    for (int i = 0; i < t->programs[p].nops; i++) {
      const trace_op_t *op = &t->programs[p].ops[i];
      int ct;
      if (op->type == TRACE_OP_COLL && !coll_comm_type(vocab->colls[op->kind], &ct))
        return snprintf(err, err_len, "%s: expected collectives Chakra has, found %s", prefix,
                        vocab->colls[op->kind]),
               -1;
    }
  /* One set: the files land together (the caller's staging, or our own), and
   * the ranks of an earlier export past this one's go with them, or a replay
   * of PREFIX would read them as ranks of this one. */
  bool own = outfile_stage_begin();
  trace_pairing_t pp;
  trace_pairing_init(&pp, t);
  int rc = remove_stale_ranks(prefix, t->ranks, err, err_len);
  if (rc == 0)
    rc = write_groups(prefix, t, err, err_len);
  for (int r = 0; rc == 0 && r < t->ranks; r++)
    rc = write_rank(prefix, t, vocab, &pp, r, duration, ctx, err, err_len);
  trace_pairing_free(&pp);
  if (own && rc == 0)
    rc = outfile_stage_publish(err, err_len);
  else if (own)
    outfile_stage_discard();
  return rc;
}
