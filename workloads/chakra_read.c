/* chakra_read.c - Chakra ETs read into rank programs; see chakra.h.
 *
 * Protobuf wire format: each field a varint key (field number << 3 | wire
 * type); wire types 0 varint, 1 eight bytes, 2 a varint length then that many
 * bytes, 5 four bytes.
 *
 * Each rank file is read whole (inflated) and its nodes become the ops of a
 * program of the trace model directly, in three passes: the nodes are counted
 * (the bounds hold before anything per node is allocated), each node is
 * converted in file order (its fields checked; an error names the file, the
 * node's id and name, and the field), then the ops are ordered: dependencies
 * are resolved by id and the nodes placed in file order wherever their
 * dependencies allow (Kahn's algorithm, always taking the ready node that
 * comes first in the file), so a node may come before the nodes it depends
 * on; whatever cannot be placed lies on or behind a cycle. Ranks whose
 * programs come out the same share one. The checks that need the whole job
 * (trace_check: collectives alike across a group, sends with their receives,
 * cycles across ranks) then run as for an npusim trace, their message told in
 * the ET's terms. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>
#include <zlib.h>

#include "chakra.h"
#include "chakra_internal.h"
#include "jsonfile.h"
#include "npu_int.h"
#include "trace_internal.h"

const char *const chakra_compute_names[CHAKRA_COMPUTE_COUNT] = {"auto", "duration", "roofline"};

#define MAX_BYTES_FIELD 1e15 /* comm_size: the trace model's bound on bytes */
#define MAX_DURATION_US 1e12 /* the trace model's bound on a duration */
#define MAX_NAME_BYTES 255   /* labels and stream names of the trace model */

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

static bool name_is(const buf_t *b, const char *s) {
  size_t n = strlen(s);
  return (size_t)(b->end - b->p) == n && memcmp(b->p, s, n) == 0;
}

/* ---- errors: the file, the node, the field ---- */

typedef struct {
  const char *file;
  npu_err_t *err;
  long index; /* the node's place in the file (named so before its id is read) */
  bool has_id;
  uint64_t id;
  buf_t name; /* the node's name, as far as read */
} ctx_t;

/* "node 7 "name"", "node 7" or "node #3 of the file". */
static void node_where(const ctx_t *c, char *buf, size_t len) {
  size_t n = (size_t)(c->name.end - c->name.p);
  if (!c->has_id)
    snprintf(buf, len, "node #%ld of the file", c->index);
  else if (n)
    snprintf(buf, len, "node %" PRIu64 " \"%.*s\"", c->id, (int)(n > 60 ? 60 : n),
             (const char *)c->name.p);
  else
    snprintf(buf, len, "node %" PRIu64, c->id);
}

/* "FILE: node ...: FIELD: expected ..." (no FIELD: when field is NULL);
 * returns -1. */
static int fail(const ctx_t *c, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(const ctx_t *c, const char *field, const char *fmt, ...) {
  char where[128], what[512];
  node_where(c, where, sizeof where);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  npu_err_set(c->err, "%s: %s: %s%sexpected %s", c->file, where, field ? field : "",
           field ? ": " : "", what);
  return -1;
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
  long ndeps; /* ctrl_deps and data_deps listed (read by take_deps) */
  uint64_t duration_us;
  attr_t comm_type, comm_size, comm_src, comm_dst, comm_tag, pg_name, num_ops, tensor_size, root,
      stream, nominal_s, kind, algo, is_cpu_op;
} node_t;

/* An AttributeProto: its name and a scalar value (lists are skipped). */
static int parse_attr(const ctx_t *c, buf_t b, attr_t *a) {
  memset(a, 0, sizeof *a);
  while (b.p < b.end) {
    uint64_t key, v = 0;
    if (get_varint(&b, &key))
      return fail(c, "attr", "a complete attribute, found a truncated field key");
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
      return fail(c, "attr", "an attribute value of et_def.proto (fields 1-32), found field %d",
                  field);
    }
    if (!ok)
      return fail(c, "attr",
                  "a complete attribute, found one cut short (a length or varint "
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
               {CHAKRA_ATTR_NOMINAL_S, offsetof(node_t, nominal_s)},
               {"npusim_kind", offsetof(node_t, kind)},
               {"npusim_algo", offsetof(node_t, algo)},
               {"is_cpu_op", offsetof(node_t, is_cpu_op)}};
  for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
    if (name_is(&a->name, known[k].name))
      *(attr_t *)((char *)n + known[k].offset) = *a;
}

/* Walks repeated uint64 ids, packed (wire 2) or one per field (wire 0),
 * counting them or, with out, storing them. -1 on a bad encoding. */
static int walk_ids(buf_t *b, int wire, long *count, uint64_t *out) {
  uint64_t v;
  if (wire == 0) {
    if (get_varint(b, &v))
      return -1;
    if (out)
      out[*count] = v;
    ++*count;
    return 0;
  }
  buf_t sub;
  if (wire != 2 || get_bytes(b, &sub))
    return -1;
  while (sub.p < sub.end) {
    if (get_varint(&sub, &v))
      return -1;
    if (out)
      out[*count] = v;
    ++*count;
  }
  return 0;
}

/* Reads a node's fields; its dependencies are only counted (n->ndeps), so
 * that the bound on them holds before they are stored (take_deps). */
static int parse_node(ctx_t *c, buf_t b, node_t *n) {
  memset(n, 0, sizeof *n);
  c->has_id = false;
  c->name = (buf_t){0};
  while (b.p < b.end) {
    uint64_t key, v = 0;
    if (get_varint(&b, &key))
      return fail(c, NULL, "a complete node, found a truncated field key");
    int field = (int)(key >> 3), wire = (int)(key & 7);
    int rc = 0;
    if (field == 1 && wire == 0) {
      rc = get_varint(&b, &n->id);
      c->has_id = rc == 0;
      c->id = n->id;
    } else if (field == 2 && wire == 2) {
      rc = get_bytes(&b, &n->name);
      c->name = n->name;
    } else if (field == 3 && wire == 0) {
      rc = get_varint(&b, &v);
      n->type = v < CHAKRA_NODE_TYPE_COUNT ? (int)v : -1;
      if (rc == 0 && n->type < 0)
        return fail(c, "type", "a node type of et_def.proto (0-%d), found %" PRIu64,
                    CHAKRA_NODE_TYPE_COUNT - 1, v);
    } else if (field == 4 || field == 5) {
      if (walk_ids(&b, wire, &n->ndeps, NULL))
        return fail(c, field == 4 ? "ctrl_deps" : "data_deps",
                    "node ids (varints, packed or not), found a bad encoding (wire type %d, "
                    "or a length or varint past the end)",
                    wire);
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
      rc = skip_field(&b, wire); /* times, IOInfo, storage, fields of later versions */
    }
    if (rc)
      return fail(c, NULL,
                  "a complete node, found one cut short (a length or varint past its "
                  "end, or a group field)");
  }
  if (!c->has_id) { /* proto3 leaves a field at its default off the wire: id 0 */
    c->has_id = true;
    c->id = n->id = 0;
  }
  return 0;
}

/* Stores a parsed node's dependencies (ids) and which field each came from. */
static void take_deps(buf_t b, uint64_t *ids, uint8_t *ctrl) {
  long n = 0;
  while (b.p < b.end) {
    uint64_t key;
    if (get_varint(&b, &key))
      return;
    int field = (int)(key >> 3), wire = (int)(key & 7);
    long before = n;
    if ((field == 4 || field == 5) ? walk_ids(&b, wire, &n, ids) : skip_field(&b, wire))
      return; /* not reached: parse_node read the same bytes */
    for (long k = before; k < n; k++)
      ctrl[k] = field == 4;
  }
}

/* ---- the job being read ---- */

/* A list of names with a hash index (streams and tags of a program). */
typedef struct {
  int *slots;    /* list index + 1; 0 is empty */
  size_t nslots; /* a power of two, at least twice the names */
} name_index_t;

/* The slot of name in the index: where it is, or the empty one where it
 * would go. */
static size_t find_slot(char *const *list, const name_index_t *ix, const char *name) {
  size_t h = npu_hash_str(NPU_HASH_SEED, name) & (ix->nslots - 1);
  for (; ix->slots[h]; h = (h + 1) & (ix->nslots - 1))
    if (strcmp(list[ix->slots[h] - 1], name) == 0)
      break;
  return h;
}

/* The index of name in the list, appended if new. */
static int intern(char ***list, int *n, name_index_t *ix, const char *name) {
  if ((size_t)(*n + 1) * 2 > ix->nslots) {
    free(ix->slots);
    ix->nslots = ix->nslots ? 2 * ix->nslots : 16;
    ix->slots = calloc(ix->nslots, sizeof *ix->slots);
    for (int i = 0; i < *n; i++) {
      size_t h = npu_hash_str(NPU_HASH_SEED, (*list)[i]) & (ix->nslots - 1);
      while (ix->slots[h])
        h = (h + 1) & (ix->nslots - 1);
      ix->slots[h] = i + 1;
    }
  }
  size_t h = find_slot(*list, ix, name);
  if (ix->slots[h])
    return ix->slots[h] - 1;
  if ((*n & (*n - 1)) == 0) /* grown at powers of two */
    *list = realloc(*list, (size_t)(*n ? 2 * *n : 1) * sizeof **list);
  (*list)[*n] = strdup(name);
  ix->slots[h] = *n + 1;
  return (*n)++;
}

typedef struct {
  const char *prefix;
  const chakra_opts_t *o;
  const trace_vocab_t *vocab;
  cJSON *groups;      /* the comm-group JSON: {"pg": [ranks]}, or NULL */
  char **group_names; /* its groups */
  int ngroups;
  name_index_t group_ix;
  const cJSON **group_items;
  int *group_comm; /* per group: its communicator, -1 until used */
  int world;       /* the communicator of all ranks, -1 until used */
  trace_t *t;
  int cap_comms;
  uint64_t *prog_hash; /* per program */
  int *prog_slots;     /* hash index of programs: index + 1, 0 empty */
  size_t nprog_slots;
  size_t bytes;     /* inflated bytes of the files read */
  long nodes, deps; /* over the files read */
  long skipped;
} job_t;

/* One rank file while its nodes become a program: per node in file order. */
typedef struct {
  const char *file;
  int rank;
  long n;
  trace_op_t *ops;
  uint64_t *ids;
  buf_t *names;
  long *dep_off;     /* n + 1: node i's dependencies are [dep_off[i], dep_off[i + 1]) */
  uint64_t *deps;    /* ids, then (order_rank) positions */
  uint8_t *dep_ctrl; /* from ctrl_deps (else data_deps), for messages */
  long cap_deps;
  trace_program_t *p; /* being built */
  name_index_t streams, tags;
} rank_t;

static trace_comm_t *new_comm(job_t *j, const char *name, int *index) {
  trace_t *t = j->t;
  if (t->ncomms == j->cap_comms) {
    j->cap_comms = j->cap_comms ? 2 * j->cap_comms : 8;
    t->comms = realloc(t->comms, (size_t)j->cap_comms * sizeof *t->comms);
  }
  *index = t->ncomms;
  trace_comm_t *cm = &t->comms[t->ncomms++];
  memset(cm, 0, sizeof *cm);
  cm->name = strdup(name);
  cm->ngroups = 1;
  cm->groups = calloc(1, sizeof *cm->groups);
  cm->sizes = calloc(1, sizeof *cm->sizes);
  return cm;
}

static int world_comm(job_t *j) {
  if (j->world < 0) {
    trace_comm_t *cm = new_comm(j, "world", &j->world);
    cm->groups[0] = malloc((size_t)j->t->ranks * sizeof **cm->groups);
    for (int r = 0; r < j->t->ranks; r++)
      cm->groups[0][r] = r;
    cm->sizes[0] = j->t->ranks;
    int dup, dg;
    trace_comm_index(cm, j->t->ranks, &dup, &dg);
  }
  return j->world;
}

/* The communicator of process group pg_name (the comm-group JSON's group,
 * checked on first use: ranks of the job, each once); -1 with err set. */
static int pg_comm(job_t *j, const ctx_t *c, const buf_t *pg_name) {
  char *pg = strndup((const char *)pg_name->p, (size_t)(pg_name->end - pg_name->p));
  int gi = -1;
  if (j->groups) {
    size_t h = find_slot(j->group_names, &j->group_ix, pg);
    gi = j->group_ix.slots[h] - 1;
  }
  if (gi < 0) {
    fail(c, "pg_name",
         "a process group of the comm-group JSON (--comm-group FILE), found "
         "\"%.60s\"%s",
         pg, j->groups ? ", which it does not hold" : " and no such file");
    free(pg);
    return -1;
  }
  free(pg);
  const cJSON *g = j->group_items[gi];
  if (j->group_comm[gi] >= 0)
    return j->group_comm[gi];
  char name[MAX_NAME_BYTES + 8];
  snprintf(name, sizeof name, "pg:%.*s", MAX_NAME_BYTES, g->string);
  trace_comm_t *cm = new_comm(j, name, &j->group_comm[gi]);
  cm->groups[0] = malloc(((size_t)cJSON_GetArraySize(g) + 1) * sizeof **cm->groups);
  const cJSON *e;
  cJSON_ArrayForEach(e, g) {
    if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || e->valuedouble < 0 ||
        e->valuedouble >= j->t->ranks) {
      char found[64];
      jsonfile_describe(e, found, sizeof found);
      return npu_err_set(c->err, "%s: %s: expected ranks of the job's %d (0 to %d), "
                      "found %s",
                      j->o->comm_groups, g->string, j->t->ranks, j->t->ranks - 1, found),
             -1;
    }
    cm->groups[0][cm->sizes[0]++] = (int)e->valuedouble;
  }
  int dup, dg;
  if (trace_comm_index(cm, j->t->ranks, &dup, &dg) && dup < 0)
    return npu_err_set(c->err, "%s: %s: out of memory", j->o->comm_groups, g->string), -1;
  if (dup >= 0)
    return npu_err_set(c->err, "%s: %s: expected each rank once, found %d twice",
                    j->o->comm_groups, g->string, dup),
           -1;
  return j->group_comm[gi];
}

/* A string attribute as a name of the trace model (1 to 255 bytes); NULL with
 * err set. */
static char *name_attr(const ctx_t *c, const attr_t *a, const char *field) {
  size_t n = (size_t)(a->sval.end - a->sval.p);
  if (!a->has_string || n == 0 || n > MAX_NAME_BYTES || memchr(a->sval.p, 0, n)) {
    fail(c, field, "a string of 1 to %d bytes, found %s", MAX_NAME_BYTES,
         !a->has_string ? "another value"
         : n            ? "a longer one or one holding a NUL"
                        : "\"\"");
    return NULL;
  }
  return strndup((const char *)a->sval.p, n);
}

/* The node's name as a label: at most 255 bytes, cut before a whole UTF-8
 * character, up to any NUL; NULL when empty. */
static char *label_of(const buf_t *name) {
  size_t n = (size_t)(name->end - name->p);
  if (n == 0)
    return NULL;
  if (n > MAX_NAME_BYTES) {
    n = MAX_NAME_BYTES;
    while (n > 0 && (name->p[n] & 0xc0) == 0x80)
      n--;
  }
  char *s = strndup((const char *)name->p, n);
  if (!*s) {
    free(s);
    return NULL;
  }
  return s;
}

static int set_stream(rank_t *rk, const ctx_t *c, const node_t *n, trace_op_t *op,
                      const char *dflt) {
  char *own = n->stream.name.p ? name_attr(c, &n->stream, "npusim_stream") : NULL;
  if (n->stream.name.p && !own)
    return -1;
  op->stream = intern(&rk->p->streams, &rk->p->nstreams, &rk->streams, own ? own : dflt);
  free(own);
  return 0;
}

static int put_compute(job_t *j, rank_t *rk, const ctx_t *c, const node_t *n, trace_op_t *op) {
  const chakra_opts_t *o = j->o;
  bool nominal = n->nominal_s.has_double;
  bool roofline = o->compute == CHAKRA_COMPUTE_ROOFLINE ||
                  (o->compute == CHAKRA_COMPUTE_AUTO && n->num_ops.has_int && !nominal);
  double us;
  if (roofline && !n->num_ops.has_int)
    return fail(c, "num_ops",
                "a count of operations on a COMP_NODE for --chakra-compute "
                "roofline, found none");
  if (roofline && (n->num_ops.ival < 0 || (n->tensor_size.has_int && n->tensor_size.ival < 0)))
    return fail(c, n->num_ops.ival < 0 ? "num_ops" : "tensor_size", "a count >= 0, found %" PRId64,
                n->num_ops.ival < 0 ? n->num_ops.ival : n->tensor_size.ival);
  if (roofline && o->flops_per_s > 0) {
    double flops_s = (double)n->num_ops.ival / o->flops_per_s;
    double mem_s = n->tensor_size.has_int && o->mem_bytes_per_s > 0
                       ? (double)n->tensor_size.ival / o->mem_bytes_per_s
                       : 0;
    us = 1e6 * (flops_s > mem_s ? flops_s : mem_s);
    if (!(us <= MAX_DURATION_US))
      return fail(c, flops_s > mem_s ? "num_ops" : "tensor_size",
                  "a count the chip runs through in at most %g us, found %" PRId64, MAX_DURATION_US,
                  flops_s > mem_s ? n->num_ops.ival : n->tensor_size.ival);
  } else if (nominal) { /* npusim's own export: exact, before chip.variation */
    us = n->nominal_s.dval * 1e6;
    if (!(us >= 0 && us <= MAX_DURATION_US))
      return fail(c, CHAKRA_ATTR_NOMINAL_S, "seconds in [0, %g], found %g", MAX_DURATION_US * 1e-6,
                  n->nominal_s.dval);
  } else {
    if (n->duration_us > (uint64_t)MAX_DURATION_US)
      return fail(c, "duration_micros", "at most %g, found %" PRIu64, MAX_DURATION_US,
                  n->duration_us);
    us = (double)n->duration_us;
  }
  bool delay = n->kind.has_string && name_is(&n->kind.sval, "delay");
  op->type = delay ? TRACE_OP_DELAY : TRACE_OP_COMPUTE;
  op->duration_us = us;
  return set_stream(rk, c, n, op, "compute");
}

static int find_coll(const trace_vocab_t *v, const char *name) {
  for (int k = 0; k < v->ncolls; k++)
    if (strcmp(v->colls[k], name) == 0)
      return k;
  return -1;
}

/* comm_size as bytes of the trace model: [1, 1e15]. */
static int get_size(const ctx_t *c, const node_t *n, double *bytes) {
  if (!n->comm_size.has_int)
    return fail(c, "comm_size", "bytes on a %s, found none", chakra_node_type_names[n->type]);
  if (n->comm_size.ival < 1 || n->comm_size.ival > MAX_BYTES_FIELD)
    return fail(c, "comm_size", "bytes in [1, %g], found %" PRId64, MAX_BYTES_FIELD,
                n->comm_size.ival);
  *bytes = (double)n->comm_size.ival;
  return 0;
}

/* A node npusim does not model, kept under --chakra-skip: a zero-time delay
 * on stream "chakra_skipped", counted; what depends on it still waits for
 * its dependencies. */
static int put_skipped(job_t *j, rank_t *rk, trace_op_t *op) {
  j->skipped++;
  op->kind = 0;
  op->type = TRACE_OP_DELAY;
  op->stream = intern(&rk->p->streams, &rk->p->nstreams, &rk->streams, "chakra_skipped");
  return 0;
}

static int put_coll(job_t *j, rank_t *rk, const ctx_t *c, const node_t *n, trace_op_t *op) {
  int64_t ct = n->comm_type.has_int ? n->comm_type.ival : -1;
  if (!n->comm_type.has_int)
    return fail(c, "comm_type",
                "et_def.proto's CollectiveCommType (0-9) on a COMM_COLL_NODE, "
                "found none");
  if (ct < 0 || ct >= CHAKRA_COLL_TYPE_COUNT)
    return fail(c, "comm_type", "et_def.proto's CollectiveCommType (0-9), found %" PRId64, ct);
  const char *kind = chakra_coll_npusim[ct];
  op->kind = kind ? find_coll(j->vocab, kind) : -1;
  if (op->kind < 0 && j->o->skip) /* GATHER, SCATTER, BARRIER: as the node types */
    return put_skipped(j, rk, op);
  if (op->kind < 0)
    return fail(c, "comm_type",
                "a collective npusim models (ALL_REDUCE, REDUCE, ALL_GATHER, "
                "BROADCAST, ALL_TO_ALL, REDUCE_SCATTER), found %s",
                chakra_coll_type_names[ct]);
  op->type = TRACE_OP_COLL;
  if (get_size(c, n, &op->bytes))
    return -1;
  op->comm = n->pg_name.has_string ? pg_comm(j, c, &n->pg_name.sval) : world_comm(j);
  if (op->comm < 0)
    return -1;
  const trace_comm_t *cm = &j->t->comms[op->comm];
  int group = trace_group_of(cm, rk->rank);
  if (group < 0)
    return fail(c, "pg_name", "a process group holding rank %d, found \"%.*s\" without it",
                rk->rank, (int)(n->pg_name.sval.end - n->pg_name.sval.p),
                (const char *)n->pg_name.sval.p);
  if (ct == CHAKRA_COLL_ALL_GATHER && j->o->allgather == CHAKRA_ALLGATHER_INPUT) {
    /* each rank's input, as ASTRA-sim gathers it: npusim counts all ranks' */
    op->bytes *= cm->sizes[group];
    if (op->bytes > MAX_BYTES_FIELD)
      return fail(c, "comm_size",
                  "bytes in [1, %g] over the group's %d ranks, found %" PRId64
                  " each (--chakra-allgather input)",
                  MAX_BYTES_FIELD, cm->sizes[group], n->comm_size.ival);
  }
  if ((j->vocab->root_colls_mask >> op->kind) & 1) {
    int64_t root = n->root.has_int ? n->root.ival : 0;
    if (root < 0 || root >= cm->sizes[0])
      return fail(c, "root", "a position in the process group (0 to %d), found %" PRId64,
                  cm->sizes[0] - 1, root);
    op->root = (int)root;
  }
  if (n->algo.name.p && !(op->algo = name_attr(c, &n->algo, "npusim_algo")))
    return -1;
  return set_stream(rk, c, n, op, "comm");
}

static int put_p2p(job_t *j, rank_t *rk, const ctx_t *c, const node_t *n, trace_op_t *op) {
  bool send = n->type == CHAKRA_NODE_SEND;
  const attr_t *peer = send ? &n->comm_dst : &n->comm_src;
  int ranks = j->t->ranks;
  const char *field = send ? "comm_dst" : "comm_src";
  if (!peer->has_int)
    return fail(c, field, "another rank of the %d ranks, found none", ranks);
  if (peer->ival < 0 || peer->ival >= ranks || peer->ival == rk->rank)
    return fail(c, field, "another rank of the %d ranks, found %" PRId64 "%s", ranks, peer->ival,
                peer->ival == rk->rank ? " (this file's rank)" : "");
  op->type = send ? TRACE_OP_SEND : TRACE_OP_RECV;
  op->peer = (int)peer->ival;
  if (get_size(c, n, &op->bytes))
    return -1;
  char tag[32] = "";
  if (n->comm_tag.has_int && n->comm_tag.ival != 0)
    snprintf(tag, sizeof tag, "t%" PRId64, n->comm_tag.ival);
  op->tag = intern(&rk->p->tags, &rk->p->ntags, &rk->tags, tag);
  return set_stream(rk, c, n, op, send ? "send" : "recv");
}

/* A host-side node (is_cpu_op true), as ASTRA-sim 2.x's Workload::issue
 * takes it whatever its type: no device work and no communication, only its
 * recorded duration_micros on the host (replayed, never a roofline), one
 * such node at a time; a delay on stream "chakra_host", zero-time where it
 * records none, what depends on it waiting for it. */
static int put_host(rank_t *rk, const ctx_t *c, const node_t *n, trace_op_t *op) {
  if (n->duration_us > (uint64_t)MAX_DURATION_US)
    return fail(c, "duration_micros", "at most %g, found %" PRIu64, MAX_DURATION_US,
                n->duration_us);
  op->type = TRACE_OP_DELAY;
  op->duration_us = (double)n->duration_us;
  op->stream = intern(&rk->p->streams, &rk->p->nstreams, &rk->streams, "chakra_host");
  return 0;
}

/* The node as op: its kind and fields, label and stream. */
static int put_node(job_t *j, rank_t *rk, const ctx_t *c, const node_t *n, trace_op_t *op) {
  if (n->id > INT32_MAX)
    return fail(c, "id", "a node id below 2^31, found %" PRIu64, n->id);
  op->id = (int)n->id;
  op->label = label_of(&n->name);
  bool host = n->is_cpu_op.has_int && n->is_cpu_op.ival != 0;
  if (host && n->type >= CHAKRA_NODE_COMP && n->type <= CHAKRA_NODE_COLL)
    return put_host(rk, c, n, op);
  switch (n->type) {
  case CHAKRA_NODE_METADATA: /* nothing to run; what depends on it still waits for its deps */
    op->type = TRACE_OP_DELAY;
    op->stream = intern(&rk->p->streams, &rk->p->nstreams, &rk->streams, "chakra_metadata");
    return 0;
  case CHAKRA_NODE_COMP:
    return put_compute(j, rk, c, n, op);
  case CHAKRA_NODE_COLL:
    return put_coll(j, rk, c, n, op);
  case CHAKRA_NODE_SEND:
  case CHAKRA_NODE_RECV:
    return put_p2p(j, rk, c, n, op);
  default:
    if (!j->o->skip)
      return fail(c, "type",
                  "a node type npusim models (COMP_NODE, COMM_COLL_NODE, "
                  "COMM_SEND_NODE, COMM_RECV_NODE), found %s (--chakra-skip keeps it as a delay)",
                  chakra_node_type_names[n->type]);
    return put_skipped(j, rk, op);
  }
}

/* ---- a rank's nodes in an order their dependencies allow ---- */

/* The context naming node i of the rank. */
static ctx_t ctx_of(const rank_t *rk, long i, npu_err_t *err) {
  return (ctx_t){.file = rk->file,
                 .err = err,
                 .index = i,
                 .has_id = true,
                 .id = rk->ids[i],
                 .name = rk->names[i]};
}

typedef struct {
  uint64_t id;
  long pos;
} id_pos_t;

static int by_id(const void *a, const void *b) {
  const id_pos_t *x = a, *y = b;
  if (x->id != y->id)
    return x->id < y->id ? -1 : 1;
  return (x->pos > y->pos) - (x->pos < y->pos);
}

static int by_long(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Ids unique; each dependency's id replaced by its node's position, each
 * node's list sorted without repeats (dep_off rewritten). */
static int resolve_deps(rank_t *rk, npu_err_t *err) {
  id_pos_t *ix = malloc(((size_t)rk->n + 1) * sizeof *ix);
  for (long i = 0; i < rk->n; i++)
    ix[i] = (id_pos_t){rk->ids[i], i};
  qsort(ix, (size_t)rk->n, sizeof *ix, by_id);
  long dup = -1;
  for (long k = 1; k < rk->n; k++)
    if (ix[k].id == ix[k - 1].id && (dup < 0 || ix[k].pos < dup))
      dup = ix[k].pos;
  int rc = 0;
  if (dup >= 0) {
    ctx_t c = ctx_of(rk, dup, err);
    rc = fail(&c, "id", "ids unique in the file, found %" PRIu64 " again", rk->ids[dup]);
  }
  long w = 0;
  for (long i = 0; i < rk->n && rc == 0; i++) {
    long from = rk->dep_off[i], to = rk->dep_off[i + 1], start = w;
    rk->dep_off[i] = start;
    for (long k = from; k < to && rc == 0; k++) {
      id_pos_t key = {rk->deps[k], -1};
      long lo = 0, hi = rk->n; /* the first entry >= key */
      while (lo < hi) {
        long mid = lo + (hi - lo) / 2;
        if (by_id(&ix[mid], &key) < 0)
          lo = mid + 1;
        else
          hi = mid;
      }
      ctx_t c = ctx_of(rk, i, err);
      const char *field = rk->dep_ctrl[k] ? "ctrl_deps" : "data_deps";
      if (lo == rk->n || ix[lo].id != key.id)
        rc = fail(&c, field, "ids of nodes in this file, found %" PRIu64, key.id);
      else if (ix[lo].pos == i)
        rc = fail(&c, field, "other nodes than this one, found its own id");
      else /* the position, and the field in the low bit while sorting */
        rk->deps[w++] = (uint64_t)ix[lo].pos << 1 | rk->dep_ctrl[k];
    }
    qsort(rk->deps + start, (size_t)(w - start), sizeof *rk->deps, by_long);
    long u = start;
    for (long k = start; k < w; k++)
      if (k == start || rk->deps[k] >> 1 != rk->deps[u - 1])
        rk->dep_ctrl[u] = rk->deps[k] & 1, rk->deps[u++] = rk->deps[k] >> 1;
    w = u;
  }
  if (rc == 0)
    rk->dep_off[rk->n] = w;
  free(ix);
  return rc;
}

/* A min-heap of node positions: the ready node earliest in the file first. */
typedef struct {
  long *v, n;
} heap_t;

static void heap_push(heap_t *h, long x) {
  long i = h->n++;
  for (; i > 0 && h->v[(i - 1) / 2] > x; i = (i - 1) / 2)
    h->v[i] = h->v[(i - 1) / 2];
  h->v[i] = x;
}

static long heap_pop(heap_t *h) {
  long top = h->v[0], x = h->v[--h->n], i = 0;
  for (;;) {
    long c = 2 * i + 1;
    if (c >= h->n)
      break;
    if (c + 1 < h->n && h->v[c + 1] < h->v[c])
      c++;
    if (h->v[c] >= x)
      break;
    h->v[i] = h->v[c];
    i = c;
  }
  if (h->n > 0)
    h->v[i] = x;
  return top;
}

/* Names a dependency on a cycle among the nodes left unplaced (left[i]): walk
 * from one of them along unplaced dependencies until a node repeats. */
static int report_cycle(const rank_t *rk, const bool *left, npu_err_t *err) {
  long u = 0;
  while (!left[u])
    u++;
  char *seen = calloc((size_t)rk->n, 1);
  long next = -1, at = -1;
  for (;;) {
    seen[u] = 1;
    next = -1;
    for (long k = rk->dep_off[u]; k < rk->dep_off[u + 1] && next < 0; k++)
      if (left[rk->deps[k]])
        next = (long)rk->deps[k], at = k;
    if (next < 0 || seen[next]) /* next < 0 cannot be: an unplaced node waits on one */
      break;
    u = next;
  }
  free(seen);
  ctx_t c = ctx_of(rk, u, err);
  ctx_t d = next >= 0 ? ctx_of(rk, next, err) : c;
  char dep[128];
  node_where(&d, dep, sizeof dep);
  return fail(&c, at >= 0 && rk->dep_ctrl[at] ? "ctrl_deps" : "data_deps",
              "dependencies without a cycle, found one through %s", dep);
}

/* The ops in an order their dependencies allow, into the program, each op's
 * deps as indices of that order. */
static int order_rank(rank_t *rk, npu_err_t *err) {
  if (resolve_deps(rk, err))
    return -1;
  long n = rk->n, m = rk->dep_off[n];
  long *indeg = calloc((size_t)n + 1, sizeof *indeg), *off = calloc((size_t)n + 2, sizeof *off);
  long *succ = malloc(((size_t)m + 1) * sizeof *succ),
       *order = malloc(((size_t)n + 1) * sizeof *order);
  heap_t h = {malloc(((size_t)n + 1) * sizeof *h.v), 0};
  for (long i = 0; i < n; i++)
    for (long k = rk->dep_off[i]; k < rk->dep_off[i + 1]; k++)
      off[rk->deps[k] + 1]++, indeg[i]++;
  for (long i = 0; i < n; i++)
    off[i + 1] += off[i];
  for (long i = 0; i < n; i++) /* successors, with off[] as fill pointers then restored */
    for (long k = rk->dep_off[i]; k < rk->dep_off[i + 1]; k++)
      succ[off[rk->deps[k]]++] = i;
  for (long i = n; i > 0; i--)
    off[i] = off[i - 1];
  off[0] = 0;
  for (long i = 0; i < n; i++)
    if (indeg[i] == 0)
      heap_push(&h, i);
  long placed = 0;
  while (h.n > 0) {
    long u = heap_pop(&h);
    order[placed++] = u;
    for (long k = off[u]; k < off[u + 1]; k++)
      if (--indeg[succ[k]] == 0)
        heap_push(&h, succ[k]);
  }
  int rc = 0;
  if (placed < n) {
    bool *left = malloc((size_t)n * sizeof *left);
    for (long i = 0; i < n; i++)
      left[i] = indeg[i] > 0;
    rc = report_cycle(rk, left, err);
    free(left);
  } else {
    long *at = indeg; /* reused: the place of each node in the order */
    for (long i = 0; i < n; i++)
      at[order[i]] = i;
    trace_program_t *p = rk->p;
    for (long i = 0; i < n; i++) {
      long u = order[i];
      trace_op_t *op = &p->ops[i];
      *op = rk->ops[u];
      long nd = rk->dep_off[u + 1] - rk->dep_off[u];
      op->deps = nd ? malloc((size_t)nd * sizeof *op->deps) : NULL;
      for (long k = 0; k < nd; k++)
        op->deps[k] = (int)at[rk->deps[rk->dep_off[u] + k]];
      op->ndeps = (int)nd;
    }
    p->nops = (int)n;
    memset(rk->ops, 0, (size_t)n * sizeof *rk->ops); /* moved */
  }
  free(indeg);
  free(off);
  free(succ);
  free(order);
  free(h.v);
  return rc;
}

/* ---- programs shared by ranks ---- */

static uint64_t hash_str(uint64_t h, const char *s) {
  return npu_hash_u64(s ? npu_hash_str(h, s) : h, s != NULL);
}

static uint64_t hash_program(const trace_program_t *p) {
  uint64_t h = NPU_HASH_SEED;
  for (int i = 0; i < p->nops; i++) {
    const trace_op_t *op = &p->ops[i];
    uint64_t dur, bytes;
    memcpy(&dur, &op->duration_us, sizeof dur);
    memcpy(&bytes, &op->bytes, sizeof bytes);
    h = npu_hash_u64(h, (uint64_t)op->id << 32 | (uint64_t)op->type << 16 | (uint32_t)op->kind);
    h = npu_hash_u64(h, dur ^ bytes * 31 ^ (uint64_t)op->comm << 40 ^ (uint64_t)op->peer << 20);
    h = npu_hash_u64(h, (uint64_t)op->root << 32 | (uint32_t)op->ndeps);
    for (int d = 0; d < op->ndeps; d++)
      h = npu_hash_u64(h, (uint64_t)op->deps[d]);
    h = hash_str(hash_str(h, p->streams[op->stream]), trace_tag(p, op));
    h = hash_str(hash_str(h, op->label), op->algo);
  }
  return h;
}

static bool same_str(const char *a, const char *b) {
  return a == b || (a && b && strcmp(a, b) == 0);
}

static bool same_program(const trace_program_t *a, const trace_program_t *b) {
  if (a->nops != b->nops)
    return false;
  for (int i = 0; i < a->nops; i++) {
    const trace_op_t *x = &a->ops[i], *y = &b->ops[i];
    if (x->id != y->id || x->type != y->type || x->kind != y->kind ||
        x->duration_us != y->duration_us || x->bytes != y->bytes || x->comm != y->comm ||
        x->root != y->root || x->peer != y->peer || x->ndeps != y->ndeps ||
        (x->ndeps && memcmp(x->deps, y->deps, (size_t)x->ndeps * sizeof *x->deps)) ||
        strcmp(a->streams[x->stream], b->streams[y->stream]) ||
        strcmp(trace_tag(a, x), trace_tag(b, y)) || !same_str(x->label, y->label) ||
        !same_str(x->algo, y->algo))
      return false;
  }
  return true;
}

static void free_program(trace_program_t *p) {
  trace_t one = {.programs = p, .nprograms = 1};
  trace_free(&one); /* frees p's contents and p */
}

/* Hands the rank's program to the trace: shared with a rank whose program is
 * the same, else added. */
static void add_program(job_t *j, rank_t *rk) {
  trace_t *t = j->t;
  trace_program_t *p = rk->p;
  uint64_t h = hash_program(p);
  if ((size_t)(t->nprograms + 1) * 2 > j->nprog_slots) { /* grow the index */
    free(j->prog_slots);
    j->nprog_slots = j->nprog_slots ? 2 * j->nprog_slots : 64;
    j->prog_slots = calloc(j->nprog_slots, sizeof *j->prog_slots);
    for (int i = 0; i < t->nprograms; i++) {
      size_t s = j->prog_hash[i] & (j->nprog_slots - 1);
      while (j->prog_slots[s])
        s = (s + 1) & (j->nprog_slots - 1);
      j->prog_slots[s] = i + 1;
    }
  }
  size_t s = h & (j->nprog_slots - 1);
  for (; j->prog_slots[s]; s = (s + 1) & (j->nprog_slots - 1)) {
    int k = j->prog_slots[s] - 1;
    if (j->prog_hash[k] == h && same_program(&t->programs[k], p)) {
      trace_program_t *q = &t->programs[k];
      if ((q->nranks & (q->nranks - 1)) == 0) /* grown at powers of two */
        q->ranks = realloc(q->ranks, (size_t)(2 * q->nranks) * sizeof *q->ranks);
      q->ranks[q->nranks++] = rk->rank;
      t->program_of[rk->rank] = k;
      free_program(p);
      rk->p = NULL;
      return;
    }
  }
  int k = t->nprograms++;
  if ((k & (k - 1)) == 0) { /* grown at powers of two */
    t->programs = realloc(t->programs, (size_t)(k ? 2 * k : 1) * sizeof *t->programs);
    j->prog_hash = realloc(j->prog_hash, (size_t)(k ? 2 * k : 1) * sizeof *j->prog_hash);
  }
  j->prog_slots[s] = k + 1;
  j->prog_hash[k] = h;
  t->programs[k] = *p;
  t->programs[k].ranks = malloc(sizeof(int));
  t->programs[k].ranks[0] = rk->rank;
  t->programs[k].nranks = 1;
  t->program_of[rk->rank] = k;
  free(p);
  rk->p = NULL;
}

/* ---- a rank file ---- */

static void free_rank(rank_t *rk) {
  for (long i = 0; rk->ops && i < rk->n; i++) {
    free(rk->ops[i].label);
    free(rk->ops[i].algo);
  }
  free(rk->ops);
  free(rk->ids);
  free(rk->names);
  free(rk->dep_off);
  free(rk->deps);
  free(rk->dep_ctrl);
  if (rk->p)
    free_program(rk->p);
  free(rk->streams.slots);
  free(rk->tags.slots);
}

/* Counts the node messages after GlobalMetadata; -1 with err set if the
 * file is not such a sequence. */
static long count_nodes(const char *file, buf_t b, npu_err_t *err) {
  buf_t msg;
  if (get_bytes(&b, &msg))
    return npu_err_set(err, "%s: expected a Chakra ET file (a length-delimited "
                    "GlobalMetadata first), found a length past the end of the file",
                    file),
           -1;
  long n = 0;
  for (; b.p < b.end; n++)
    if (get_bytes(&b, &msg)) {
      ctx_t c = {.file = file, .err = err, .index = n};
      return fail(&c, NULL,
                  "a node's length within the file, found a truncated varint or a "
                  "length past the end");
    }
  return n;
}

/* Converts the nodes of one rank's file (data) into rk->p. */
static int convert_rank(job_t *j, rank_t *rk, buf_t b, npu_err_t *err) {
  long n = count_nodes(rk->file, b, err);
  if (n < 0)
    return -1;
  if (n > CHAKRA_MAX_NODES - j->nodes)
    return npu_err_set(err, "%s: expected a Chakra ET set of at most %ld nodes (its rank "
                    "files together), found %ld with this file",
                    rk->file, (long)CHAKRA_MAX_NODES, j->nodes + n),
           -1;
  j->nodes += n;
  rk->n = n;
  rk->ops = calloc((size_t)n + 1, sizeof *rk->ops);
  rk->ids = malloc(((size_t)n + 1) * sizeof *rk->ids);
  rk->names = malloc(((size_t)n + 1) * sizeof *rk->names);
  rk->dep_off = malloc(((size_t)n + 1) * sizeof *rk->dep_off);
  rk->p = calloc(1, sizeof *rk->p);
  rk->p->ops = calloc((size_t)n + 1, sizeof *rk->p->ops);
  intern(&rk->p->tags, &rk->p->ntags, &rk->tags, ""); /* tag 0: untagged */
  buf_t msg;
  get_bytes(&b, &msg); /* GlobalMetadata: its version is not checked */
  long ndeps = 0;
  for (long i = 0; i < n; i++) {
    ctx_t c = {.file = rk->file, .err = err, .index = i};
    node_t node;
    get_bytes(&b, &msg);
    if (parse_node(&c, msg, &node))
      return -1;
    rk->ids[i] = node.id;
    rk->names[i] = node.name;
    rk->dep_off[i] = ndeps;
    if (node.ndeps > CHAKRA_MAX_DEPS - j->deps)
      return fail(&c, NULL,
                  "a Chakra ET set of at most %ld dependencies (ctrl_deps and "
                  "data_deps of its rank files together), found %ld with this node",
                  (long)CHAKRA_MAX_DEPS, j->deps + node.ndeps);
    j->deps += node.ndeps;
    if (ndeps + node.ndeps > rk->cap_deps) {
      while (ndeps + node.ndeps > rk->cap_deps)
        rk->cap_deps = rk->cap_deps ? 2 * rk->cap_deps : 64;
      rk->deps = realloc(rk->deps, (size_t)rk->cap_deps * sizeof *rk->deps);
      rk->dep_ctrl = realloc(rk->dep_ctrl, (size_t)rk->cap_deps);
    }
    if (node.ndeps)
      take_deps(msg, rk->deps + ndeps, rk->dep_ctrl + ndeps);
    ndeps += node.ndeps;
    if (put_node(j, rk, &c, &node, &rk->ops[i]))
      return -1;
  }
  rk->dep_off[n] = ndeps;
  if (!rk->deps) { /* order_rank reads them as arrays */
    rk->deps = malloc(sizeof *rk->deps);
    rk->dep_ctrl = malloc(1);
  }
  return order_rank(rk, err);
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

/* The bytes of an input file (gunzipped), at most max; NULL with "PATH:
 * expected WHAT, found WHY" in err. */
static char *read_input(const char *path, size_t max, const char *what, size_t *len, npu_err_t *err) {
  char why[256];
  char *data = jsonfile_read(path, max, len, why, sizeof why);
  if (!data)
    npu_err_set(err, "%s: expected %s, found %s", path, what, why);
  return data;
}

static int read_rank(job_t *j, int rank, npu_err_t *err) {
  char file[4096];
  rank_file(j->prefix, rank, file, sizeof file);
  size_t len;
  char *data = read_input(file, TRACE_MAX_BYTES, "a readable Chakra ET file", &len, err);
  if (!data)
    return -1;
  int rc = 0;
  if (len > TRACE_MAX_BYTES - j->bytes) {
    npu_err_set(err, "%s: expected a Chakra ET set of at most %lu MiB (its rank files "
             "together, inflated), found more with this file",
             file, TRACE_MAX_BYTES >> 20);
    rc = -1;
  }
  j->bytes += len;
  rank_t rk = {.file = file, .rank = rank};
  if (rc == 0)
    rc = convert_rank(j, &rk, (buf_t){(const uint8_t *)data, (const uint8_t *)data + len}, err);
  if (rc == 0)
    add_program(j, &rk);
  free_rank(&rk);
  free(data);
  return rc;
}

/* ---- the whole trace ---- */

/* Whether b holds protobuf fields as far as it goes: each a key of a field
 * number >= 1 and wire type 0, 1, 2 or 5, its value within b. With cut (b is
 * the end of a head read short of the file) a last field may run past b. */
static bool fields_walk(buf_t b, bool cut) {
  while (b.p < b.end) {
    uint64_t key;
    if (get_varint(&b, &key))
      return cut;
    int wire = (int)(key & 7);
    if (key >> 3 == 0 || !(wire == 0 || wire == 1 || wire == 2 || wire == 5))
      return false;
    if (skip_field(&b, wire))
      return cut;
  }
  return true;
}

/* The first bytes of a file (gunzipped, up to 4 KiB) look like an ET, told by
 * structure, not by any field's value (Chakra's PyTorch converter writes no
 * version): a chain of length-delimited messages whose contents are protobuf
 * fields, at least one not empty (zero bytes are empty messages without end).
 * A head cut at 4 KiB may end inside a message; a corrupt gzip shorter than
 * that is left to the JSON reader, which says so. JSON text fails the walk
 * at a ',' (wire type 4, a group's end) or a key or length past its end. */
static bool looks_like_et(const char *path) {
  gzFile gz = gzopen(path, "rb");
  if (!gz)
    return false;
  uint8_t head[4096];
  int n = gzread(gz, head, sizeof head);
  gzclose(gz);
  bool cut = n == (int)sizeof head, filled = false;
  buf_t b = {head, head + (n > 0 ? n : 0)};
  while (b.p < b.end) {
    uint64_t len;
    if (get_varint(&b, &len))
      return cut && filled;
    bool whole = len <= (uint64_t)(b.end - b.p);
    if (!whole && !cut)
      return false;
    buf_t msg = {b.p, whole ? b.p + len : b.end};
    if (!fields_walk(msg, !whole))
      return false;
    filled = filled || len > 0;
    b.p = msg.end;
  }
  return filled;
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

int chakra_detect(const char *path, char *prefix, size_t len, npu_err_t *err) {
  struct stat st;
  char why[128];
  if (stat(path, &st) == 0) {
    /* The inputs' one check before the peek: a FIFO or a /proc file is left
     * unopened, for the JSON reader to refuse. */
    if (jsonfile_check(path, why, sizeof why) || !looks_like_et(path))
      return 0;
    if (prefix_of(path, prefix, len))
      return 1;
    return npu_err_set(err, "%s: expected a Chakra ET file named PREFIX.<rank>.et or "
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

/* The comm-group JSON: an object of rank arrays (the ranks are checked when a
 * node names the group). */
static int load_groups(job_t *j, npu_err_t *err) {
  const char *path = j->o->comm_groups;
  if (!path)
    return 0;
  size_t len;
  char *text =
      read_input(path, CHAKRA_GROUPS_MAX_BYTES, "a readable comm-group JSON", &len, err);
  if (!text)
    return -1;
  j->groups = jsonfile_parse(path, text, len, err);
  free(text);
  if (!j->groups)
    return -1;
  if (!cJSON_IsObject(j->groups))
    return npu_err_set(err, "%s: expected an object {\"process group\": [ranks]}, found "
                    "something else",
                    path),
           -1;
  int n = cJSON_GetArraySize(j->groups);
  j->group_items = malloc(((size_t)n + 1) * sizeof *j->group_items);
  j->group_comm = malloc(((size_t)n + 1) * sizeof *j->group_comm);
  j->group_ix.nslots = 16;
  j->group_ix.slots = calloc(j->group_ix.nslots, sizeof *j->group_ix.slots);
  if (!j->group_items || !j->group_comm || !j->group_ix.slots)
    return npu_err_set(err, "%s: out of memory", path), -1; /* freed with the job */
  const cJSON *g;
  cJSON_ArrayForEach(g, j->groups) {
    if (!cJSON_IsArray(g) || cJSON_GetArraySize(g) == 0)
      return npu_err_set(err, "%s: %s: expected an array of ranks, found something else",
                      path, g->string),
             -1;
    int k = intern(&j->group_names, &j->ngroups, &j->group_ix, g->string);
    if (k < j->ngroups - 1)
      return npu_err_set(err, "%s: %s: expected each process group once, found it again",
                      path, g->string),
             -1;
    j->group_items[k] = g;
    j->group_comm[k] = -1;
  }
  return 0;
}

void chakra_explain(const char *prefix, const trace_t *t, const char *msg, npu_err_t *err) {
  size_t skip = strlen(prefix);
  if (strncmp(msg, prefix, skip) != 0 || strncmp(msg + skip, ": ", 2) != 0) {
    if (err && msg != err->msg)
      npu_err_set(err, "%s", msg);
    return; /* not about the trace */
  }
  char copy[TRACE_ERR_MAX];
  snprintf(copy, sizeof copy, "%s", msg + skip + 2);
  const char *m = copy;
  int rank = -1, id = -1, used = 0;
  if (sscanf(m, "rank %d op %d: %n", &rank, &id, &used) < 2 || used == 0) {
    used = 0;
    id = -1;
    if (sscanf(m, "rank %d: %n", &rank, &used) < 1 || used == 0)
      rank = -1, used = 0;
  }
  char file[4096] = "", where[128] = "";
  if (rank >= 0 && rank < t->ranks)
    rank_file(prefix, rank, file, sizeof file);
  const trace_op_t *op = NULL;
  const trace_program_t *p = file[0] ? &t->programs[t->program_of[rank]] : NULL;
  for (int i = 0; p && id >= 0 && i < p->nops && !op; i++)
    if (p->ops[i].id == id)
      op = &p->ops[i];
  if (op) {
    ctx_t c = {.has_id = true, .id = (uint64_t)id};
    if (op->label)
      c.name = (buf_t){(const uint8_t *)op->label, (const uint8_t *)op->label + strlen(op->label)};
    node_where(&c, where, sizeof where);
  }
  m += used;
  static const struct {
    const char *field, *chakra;
  } fields[] = {{"bytes: ", "comm_size: "},
                {"comm: ", "pg_name: "},
                {"stream: ", "npusim_stream: "},
                {"algo: ", "npusim_algo: "}};
  const char *field = "";
  for (size_t k = 0; k < sizeof fields / sizeof *fields; k++)
    if (strncmp(m, fields[k].field, strlen(fields[k].field)) == 0)
      field = fields[k].chakra, m += strlen(fields[k].field);
  if (strncmp(m, "peer: ", 6) == 0)
    field = op && op->type == TRACE_OP_SEND ? "comm_dst: " : "comm_src: ", m += 6;
  char rest[TRACE_ERR_MAX];
  size_t n = 0;
  for (; *m && n + 8 < sizeof rest; m++) { /* op ids are node ids */
    if (strncmp(m, "op ", 3) == 0 && m[3] >= '0' && m[3] <= '9' &&
        (n == 0 || rest[n - 1] == ' ' || rest[n - 1] == '(')) {
      memcpy(rest + n, "node ", 5);
      n += 5;
      m += 2;
    } else {
      rest[n++] = *m;
    }
  }
  rest[n] = '\0';
  npu_err_set(err, "%s: %s%s%s%s", file[0] ? file : prefix, where, where[0] ? ": " : "",
           field, rest);
}

int chakra_read(const char *prefix, const chakra_opts_t *o, const trace_vocab_t *vocab,
                trace_t *out, long *skipped, npu_err_t *err) {
  memset(out, 0, sizeof *out);
  *skipped = 0;
  job_t j = {.prefix = prefix, .o = o, .vocab = vocab, .world = -1, .t = out};
  char file[4096];
  int ranks = 0;
  while (ranks <= CHAKRA_MAX_RANKS && rank_file(prefix, ranks, file, sizeof file))
    ranks++;
  if (ranks == 0)
    return npu_err_set(err, "%s: expected Chakra ET files %s.0.et, %s.1.et, ... (or "
                    ".et.gz), found none",
                    prefix, prefix, prefix),
           -1;
  if (ranks > CHAKRA_MAX_RANKS)
    return npu_err_set(err, "%s: expected at most %d rank files %s.0.et, ..., found more",
                    prefix, CHAKRA_MAX_RANKS, prefix),
           -1;
  char name[512];
  snprintf(name, sizeof name, "Chakra ET %.400s", prefix);
  out->name = strdup(name);
  out->ranks = ranks;
  out->program_of = malloc((size_t)ranks * sizeof *out->program_of);
  int rc = load_groups(&j, err);
  for (int r = 0; rc == 0 && r < ranks; r++)
    rc = read_rank(&j, r, err);
  if (rc == 0) {
    npu_err_t msg = {""};
    trace_ctx_t c = {.name = prefix, .vocab = vocab, .err = &msg, .ranks = ranks};
    rc = trace_check(&c, out);
    if (rc)
      chakra_explain(prefix, out, msg.msg, err);
  }
  if (rc)
    trace_free(out);
  free(j.prog_hash);
  free(j.prog_slots);
  free(j.group_comm);
  free(j.group_items);
  for (int i = 0; i < j.ngroups; i++)
    free(j.group_names[i]);
  free(j.group_names);
  free(j.group_ix.slots);
  cJSON_Delete(j.groups);
  *skipped = j.skipped;
  return rc;
}
