/* trace_read.c - parsing a trace file into rank programs; see trace.h.
 *
 * The file's text is freed as soon as it is parsed, and each program's JSON is
 * freed as soon as it is converted, so a large trace is never held twice.
 * Checks that need the whole job (communicators, matching across ranks,
 * cycles through collectives) are in trace_check.c. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsonfile.h"
#include "npu_int.h"
#include "trace.h"
#include "trace_internal.h"

#define MAX_RANKS (1 << 22)
/* Rank entries over all groups of all communicators: 16 communicators of the
 * largest job; more would be out of proportion to any real trace. */
#define MAX_COMM_MEMBERS (16L * MAX_RANKS)

/* ---- small JSON helpers ---- */

static int expect_fields(trace_ctx_t *c, const cJSON *obj, const char *const *allowed, int rank,
                         int id, const char *where) {
  const cJSON *item;
  cJSON_ArrayForEach(item, obj) {
    bool ok = false;
    for (int i = 0; allowed[i] && !ok; i++)
      ok = strcmp(item->string, allowed[i]) == 0;
    if (!ok)
      return trace_fail(c, rank, id, "%s: expected a known field, found unknown field \"%s\"",
                        where, item->string);
    for (const cJSON *prev = obj->child; prev != item; prev = prev->next)
      if (strcmp(prev->string, item->string) == 0)
        return trace_fail(c, rank, id, "%s: expected each field once, found \"%s\" twice", where,
                          item->string);
  }
  return 0;
}

static int get_int(trace_ctx_t *c, const cJSON *obj, const char *key, long lo, long hi, long dflt,
                   bool required, long *out, int rank, int id) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!v) {
    if (required)
      return trace_fail(c, rank, id, "%s: expected an integer in [%ld, %ld], found nothing", key,
                        lo, hi);
    *out = dflt;
    return 0;
  }
  char found[128];
  jsonfile_describe(v, found, sizeof found);
  if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < lo ||
      v->valuedouble > hi)
    return trace_fail(c, rank, id, "%s: expected an integer in [%ld, %ld], found %s", key, lo, hi,
                      found);
  *out = (long)v->valuedouble;
  return 0;
}

static int get_number(trace_ctx_t *c, const cJSON *obj, const char *key, double lo, double hi,
                      bool required, double *out, int rank, int id) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!v) {
    if (required)
      return trace_fail(c, rank, id, "%s: expected a number in [%g, %g], found nothing", key, lo,
                        hi);
    return 0;
  }
  char found[128];
  jsonfile_describe(v, found, sizeof found);
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo ||
      v->valuedouble > hi)
    return trace_fail(c, rank, id, "%s: expected a number in [%g, %g], found %s", key, lo, hi,
                      found);
  *out = v->valuedouble;
  return 0;
}

static int get_string(trace_ctx_t *c, const cJSON *obj, const char *key, bool required,
                      const char **out, int rank, int id) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!v) {
    if (required)
      return trace_fail(c, rank, id, "%s: expected a string, found nothing", key);
    *out = NULL;
    return 0;
  }
  if (!cJSON_IsString(v) || !v->valuestring[0] || strlen(v->valuestring) > 255) {
    char found[128];
    jsonfile_describe(v, found, sizeof found);
    return trace_fail(c, rank, id, "%s: expected a string of 1 to 255 characters, found %s", key,
                      found);
  }
  *out = v->valuestring;
  return 0;
}

static int get_bool(trace_ctx_t *c, const cJSON *obj, const char *key, bool *out, int rank, int id) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!v)
    return 0;
  if (!cJSON_IsBool(v)) {
    char found[128];
    jsonfile_describe(v, found, sizeof found);
    return trace_fail(c, rank, id, "%s: expected true or false, found %s", key, found);
  }
  *out = cJSON_IsTrue(v);
  return 0;
}

/* A program's name list (streams, tags, events, buffers) while it is read: a
 * hash of the names, so that each op finds its names in constant time however
 * many events a program records. */
typedef struct {
  int *slots;          /* list index + 1; 0 is empty */
  size_t nslots;       /* a power of two, at least twice the names */
  int cap;             /* the list's allocated length */
} name_index_t;

struct trace_names {
  name_index_t streams, tags, events, buffers;
};

static size_t name_hash(const char *s) { return (size_t)npu_hash_str(NPU_HASH_SEED, s); }

static int intern(char ***list, int *n, name_index_t *ix, const char *name) {
  if ((size_t)(*n + 1) * 2 > ix->nslots) { /* grow, re-adding what the list holds */
    free(ix->slots);
    ix->nslots = ix->nslots ? 2 * ix->nslots : 16;
    while ((size_t)(*n + 1) * 2 > ix->nslots)
      ix->nslots *= 2;
    ix->slots = calloc(ix->nslots, sizeof *ix->slots);
    for (int i = 0; i < *n; i++) {
      size_t h = name_hash((*list)[i]) & (ix->nslots - 1);
      while (ix->slots[h])
        h = (h + 1) & (ix->nslots - 1);
      ix->slots[h] = i + 1;
    }
  }
  size_t h = name_hash(name) & (ix->nslots - 1);
  for (; ix->slots[h]; h = (h + 1) & (ix->nslots - 1))
    if (strcmp((*list)[ix->slots[h] - 1], name) == 0)
      return ix->slots[h] - 1;
  if (*n >= ix->cap) {
    ix->cap = *n >= 4 ? 2 * *n : 8;
    *list = realloc(*list, (size_t)ix->cap * sizeof **list);
  }
  (*list)[*n] = strdup(name);
  ix->slots[h] = *n + 1;
  return (*n)++;
}

static void free_names_index(trace_names_t *ix) {
  free(ix->streams.slots);
  free(ix->tags.slots);
  free(ix->events.slots);
  free(ix->buffers.slots);
  memset(ix, 0, sizeof *ix);
}

static int find_name(const char *const *names, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], name) == 0)
      return i;
  return -1;
}

/* ---- ranks: "0-3,8" or [0, 1, 2] ---- */

static int parse_rank_list(trace_ctx_t *c, const cJSON *v, const char *where, int **out, int *n) {
  *out = NULL;
  *n = 0;
  if (cJSON_IsArray(v)) {
    *out = malloc(((size_t)cJSON_GetArraySize(v) + 1) * sizeof **out);
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
      if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || e->valuedouble < 0 ||
          e->valuedouble >= c->ranks) {
        char found[128];
        jsonfile_describe(e, found, sizeof found);
        return trace_fail(c, -1, -1, "%s: expected ranks in [0, %d), found %s", where,
                          c->ranks, found);
      }
      (*out)[(*n)++] = (int)e->valuedouble;
    }
  } else if (cJSON_IsString(v)) {
    const char *p = v->valuestring;
    size_t cap = 16;
    *out = malloc(cap * sizeof **out);
    while (*p) {
      char *end;
      long a = strtol(p, &end, 10), b = a;
      if (end == p)
        goto bad;
      if (*end == '-') {
        p = end + 1;
        b = strtol(p, &end, 10);
        if (end == p)
          goto bad;
      }
      if (a < 0 || b < a || b >= c->ranks)
        return trace_fail(c, -1, -1, "%s: expected ranks in [0, %d), found \"%.60s\"", where,
                          c->ranks, v->valuestring);
      if ((long)*n + (b - a + 1) > c->ranks) /* then some rank is there twice */
        return trace_fail(c, -1, -1, "%s: expected each rank once, found a list of more than "
                          "%d ranks", where, c->ranks);
      for (long r = a; r <= b; r++) {
        if ((size_t)*n == cap)
          *out = realloc(*out, (cap *= 2) * sizeof **out);
        (*out)[(*n)++] = (int)r;
      }
      p = *end == ',' ? end + 1 : end;
      if (*end && *end != ',')
        goto bad;
    }
  } else {
    goto bad;
  }
  if (*n == 0)
    goto bad;
  return 0;
bad:
  return trace_fail(c, -1, -1, "%s: expected a rank list such as \"0-3,8\" or [0, 1], found %s",
                    where, cJSON_IsString(v) ? v->valuestring : "another value");
}

/* ---- communicators ---- */

static int parse_comms(trace_ctx_t *c, const cJSON *arr, trace_t *t) {
  static const char *const fields[] = {"name", "groups", NULL};
  if (!cJSON_IsArray(arr))
    return trace_fail(c, -1, -1, "communicators: expected an array, found another value");
  t->comms = calloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof *t->comms);
  long members = 0;
  const cJSON *cj;
  cJSON_ArrayForEach(cj, arr) {
    char where[64];
    snprintf(where, sizeof where, "communicators[%d]", t->ncomms);
    if (!cJSON_IsObject(cj))
      return trace_fail(c, -1, -1, "%s: expected an object, found another value", where);
    if (expect_fields(c, cj, fields, -1, -1, where))
      return -1;
    trace_comm_t *cm = &t->comms[t->ncomms++];
    const char *name;
    if (get_string(c, cj, "name", true, &name, -1, -1))
      return -1;
    cm->name = strdup(name);
    for (int i = 0; i < t->ncomms - 1; i++)
      if (strcmp(t->comms[i].name, name) == 0)
        return trace_fail(c, -1, -1, "%s: expected a new name, found \"%s\" again", where, name);
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(cj, "groups");
    if (!cJSON_IsArray(groups) || cJSON_GetArraySize(groups) == 0)
      return trace_fail(c, -1, -1, "%s.groups: expected an array of rank lists, found %s", where,
                        groups ? "another value" : "nothing");
    int ng = cJSON_GetArraySize(groups);
    cm->groups = calloc((size_t)ng, sizeof *cm->groups);
    cm->sizes = calloc((size_t)ng, sizeof *cm->sizes);
    const cJSON *g;
    cJSON_ArrayForEach(g, groups) {
      char gw[96];
      snprintf(gw, sizeof gw, "%s.groups[%d]", where, cm->ngroups);
      int gi = cm->ngroups++;
      if (parse_rank_list(c, g, gw, &cm->groups[gi], &cm->sizes[gi]))
        return -1;
      if ((members += cm->sizes[gi]) > MAX_COMM_MEMBERS)
        return trace_fail(c, -1, -1, "%s: expected at most %ld ranks over all groups of all "
                          "communicators, found more", gw, MAX_COMM_MEMBERS);
    }
    int dup, dup_group;
    if (trace_comm_index(cm, t->ranks, &dup, &dup_group) && dup < 0)
      return trace_fail(c, -1, -1, "%s: out of memory indexing the groups of \"%s\"", where, name);
    if (dup >= 0)
      return trace_fail(c, dup, -1, "%s.groups[%d]: expected each rank in one group of \"%s\", "
                        "found it in two", where, dup_group, name);
  }
  return 0;
}

/* ---- ops ---- */

static const char *const common_fields[] = {"id", "kind", "stream", "deps", "label"};

/* Fields allowed for each op type, besides the common ones. */
static const char *const *type_fields(trace_op_type_t type) {
  static const char *const shaped[] = {"shape",    "dtype",   "causal", "window", "trans_a",
                                       "trans_b",  "overlaps", "kernels", NULL};
  static const char *const duration[] = {"duration_us", NULL};
  static const char *const coll[] = {"comm", "bytes", "root", "algo", NULL};
  static const char *const p2p[] = {"peer", "peer_offset", "bytes", "tag", NULL};
  static const char *const event[] = {"event", NULL};
  static const char *const alloc[] = {"buffer", "bytes", NULL};
  static const char *const buffer[] = {"buffer", NULL};
  switch (type) {
  case TRACE_OP_SHAPED:
    return shaped;
  case TRACE_OP_COMPUTE:
  case TRACE_OP_DELAY:
    return duration;
  case TRACE_OP_COLL:
    return coll;
  case TRACE_OP_SEND:
  case TRACE_OP_RECV:
    return p2p;
  case TRACE_OP_RECORD:
  case TRACE_OP_WAIT:
    return event;
  case TRACE_OP_ALLOC:
    return alloc;
  default:
    return buffer;
  }
}

static int check_op_fields(trace_ctx_t *c, const cJSON *oj, trace_op_type_t type, int rank, int id) {
  const char *allowed[16];
  int n = 0;
  for (size_t i = 0; i < sizeof common_fields / sizeof *common_fields; i++)
    allowed[n++] = common_fields[i];
  for (const char *const *f = type_fields(type); *f; f++)
    allowed[n++] = *f;
  allowed[n] = NULL;
  return expect_fields(c, oj, allowed, rank, id, "op");
}

/* Resolves "kind" to an op type (and vocabulary kind). */
static int op_type_of(trace_ctx_t *c, const char *kind, trace_op_t *op, int rank) {
  static const struct {
    const char *name;
    trace_op_type_t type;
  } fixed[] = {{"compute", TRACE_OP_COMPUTE}, {"send", TRACE_OP_SEND},   {"recv", TRACE_OP_RECV},
               {"record", TRACE_OP_RECORD},   {"wait", TRACE_OP_WAIT},   {"delay", TRACE_OP_DELAY},
               {"alloc", TRACE_OP_ALLOC},     {"free", TRACE_OP_FREE}};
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
    if (strcmp(kind, fixed[i].name) == 0) {
      op->type = fixed[i].type;
      return 0;
    }
  int k = find_name(c->vocab->colls, c->vocab->ncolls, kind);
  if (k >= 0) {
    op->type = TRACE_OP_COLL;
    op->kind = k;
    return 0;
  }
  k = find_name(c->vocab->compute, c->vocab->ncompute, kind);
  if (k >= 0) {
    op->type = TRACE_OP_SHAPED;
    op->kind = k;
    return 0;
  }
  return trace_fail(c, rank, op->id, "kind: expected a compute op (matmul, softmax, ...), "
                    "compute, a collective, send, recv, record, wait, delay, alloc or free, "
                    "found \"%.40s\"", kind);
}

static int parse_shape(trace_ctx_t *c, const cJSON *oj, trace_op_t *op, int rank) {
  const cJSON *shape = cJSON_GetObjectItemCaseSensitive(oj, "shape");
  int n = cJSON_IsArray(shape) ? cJSON_GetArraySize(shape) : 0;
  if (n < 1 || n > 5)
    return trace_fail(c, rank, op->id, "shape: expected an array of 1 to 5 sizes, found %s",
                      shape ? "another value" : "nothing");
  int i = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, shape) {
    if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || e->valuedouble < 1 ||
        e->valuedouble > 9.2e18)
      return trace_fail(c, rank, op->id, "shape[%d]: expected a size >= 1, found another value", i);
    op->dims[i++] = (int64_t)e->valuedouble;
  }
  const char *dt;
  if (get_string(c, oj, "dtype", false, &dt, rank, op->id))
    return -1;
  op->dtype = dt ? find_name(c->vocab->dtypes, c->vocab->ndtypes, dt) : c->vocab->default_dtype;
  if (op->dtype < 0)
    return trace_fail(c, rank, op->id, "dtype: expected fp16, bf16, fp32, int8 or fp8, found "
                      "\"%.20s\"", dt);
  if (get_bool(c, oj, "causal", &op->causal, rank, op->id) ||
      get_bool(c, oj, "trans_a", &op->trans_a, rank, op->id) ||
      get_bool(c, oj, "trans_b", &op->trans_b, rank, op->id))
    return -1;
  long window;
  if (get_int(c, oj, "window", 1, LONG_MAX, 0, false, &window, rank, op->id))
    return -1;
  if (window && !op->causal)
    return trace_fail(c, rank, op->id, "window: expected only with \"causal\": true (a sliding "
                      "window of keys before each query), found %ld", window);
  op->window = window;
  const char *kernels;
  if (get_string(c, oj, "kernels", false, &kernels, rank, op->id))
    return -1;
  if (kernels && strcmp(kernels, "fused") && strcmp(kernels, "unfused"))
    return trace_fail(c, rank, op->id, "kernels: expected fused or unfused, found \"%.20s\"",
                      kernels);
  op->unfused = kernels && strcmp(kernels, "unfused") == 0;
  return 0;
}

static int parse_coll(trace_ctx_t *c, const cJSON *oj, trace_t *t, trace_op_t *op, int rank) {
  const char *comm, *algo;
  if (get_string(c, oj, "comm", true, &comm, rank, op->id) ||
      get_number(c, oj, "bytes", 1, 1e15, true, &op->bytes, rank, op->id) ||
      get_string(c, oj, "algo", false, &algo, rank, op->id))
    return -1;
  op->comm = -1;
  for (int i = 0; i < t->ncomms; i++)
    if (strcmp(t->comms[i].name, comm) == 0)
      op->comm = i;
  if (op->comm < 0)
    return trace_fail(c, rank, op->id, "comm: expected a communicator of the trace, found "
                      "\"%.40s\"", comm);
  bool rooted = (c->vocab->root_colls_mask >> op->kind) & 1;
  long root = 0;
  if (get_int(c, oj, "root", 0, t->ranks - 1, 0, false, &root, rank, op->id))
    return -1;
  if (!rooted && cJSON_GetObjectItemCaseSensitive(oj, "root"))
    return trace_fail(c, rank, op->id, "root: expected no root for %s, found one",
                      c->vocab->colls[op->kind]);
  op->root = (int)root;
  op->algo = algo ? strdup(algo) : NULL;
  return 0;
}

static int parse_p2p(trace_ctx_t *c, const cJSON *oj, trace_program_t *p, trace_op_t *op,
                     int rank) {
  bool abs = cJSON_GetObjectItemCaseSensitive(oj, "peer") != NULL;
  bool rel = cJSON_GetObjectItemCaseSensitive(oj, "peer_offset") != NULL;
  if (abs == rel)
    return trace_fail(c, rank, op->id, "peer: expected exactly one of peer and peer_offset, "
                      "found %s", abs ? "both" : "neither");
  long v;
  if (get_int(c, oj, abs ? "peer" : "peer_offset", abs ? 0 : -(long)c->ranks,
              (long)c->ranks - 1, 0, true, &v, rank, op->id) ||
      get_number(c, oj, "bytes", 1, 1e15, true, &op->bytes, rank, op->id))
    return -1;
  op->peer = (int)v;
  op->peer_relative = rel;
  const char *tag;
  if (get_string(c, oj, "tag", false, &tag, rank, op->id))
    return -1;
  op->tag = intern(&p->tags, &p->ntags, &c->names->tags, tag ? tag : "");
  return 0;
}

static int parse_op(trace_ctx_t *c, const cJSON *oj, trace_t *t, trace_program_t *p,
                    trace_op_t *op, int rank) {
  long id;
  const char *kind, *stream, *label;
  if (!cJSON_IsObject(oj))
    return trace_fail(c, rank, -1, "ops[%d]: expected an object, found another value", p->nops - 1);
  if (get_int(c, oj, "id", 0, 1L << 30, 0, true, &id, rank, -1))
    return -1;
  op->id = (int)id;
  if (get_string(c, oj, "kind", true, &kind, rank, op->id) || op_type_of(c, kind, op, rank) ||
      check_op_fields(c, oj, op->type, rank, op->id) ||
      get_string(c, oj, "stream", false, &stream, rank, op->id) ||
      get_string(c, oj, "label", false, &label, rank, op->id))
    return -1;
  op->stream = intern(&p->streams, &p->nstreams, &c->names->streams,
                      stream ? stream : "compute");
  op->label = label ? strdup(label) : NULL;
  switch (op->type) {
  case TRACE_OP_SHAPED:
    return parse_shape(c, oj, op, rank);
  case TRACE_OP_COMPUTE:
  case TRACE_OP_DELAY:
    return get_number(c, oj, "duration_us", 0, 1e12, true, &op->duration_us, rank, op->id);
  case TRACE_OP_COLL:
    return parse_coll(c, oj, t, op, rank);
  case TRACE_OP_SEND:
  case TRACE_OP_RECV:
    return parse_p2p(c, oj, p, op, rank);
  case TRACE_OP_RECORD:
  case TRACE_OP_WAIT: {
    const char *ev;
    if (get_string(c, oj, "event", true, &ev, rank, op->id))
      return -1;
    op->event = intern(&p->events, &p->nevents, &c->names->events, ev);
    return 0;
  }
  case TRACE_OP_ALLOC:
  case TRACE_OP_FREE: {
    const char *buf;
    if (get_string(c, oj, "buffer", true, &buf, rank, op->id) ||
        (op->type == TRACE_OP_ALLOC &&
         get_number(c, oj, "bytes", 0, 1e18, true, &op->bytes, rank, op->id)))
      return -1;
    op->buffer = intern(&p->buffers, &p->nbuffers, &c->names->buffers, buf);
    return 0;
  }
  default:
    return 0;
  }
}

/* A program's op ids, sorted, for finding an op by id. */
typedef struct {
  int id, index;
} id_ref_t;

static int by_id(const void *a, const void *b) {
  const id_ref_t *x = a, *y = b;
  if (x->id != y->id)
    return x->id < y->id ? -1 : 1;
  return x->index - y->index;
}

static int op_index(const id_ref_t *ids, int n, const cJSON *id) {
  if (!cJSON_IsNumber(id))
    return -1;
  int lo = 0, hi = n - 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    if (ids[mid].id == id->valuedouble)
      return ids[mid].index;
    if (ids[mid].id < id->valuedouble)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return -1;
}

/* Sorts the program's ids; an id used twice is named at its second use in
 * file order (the first such op). */
static id_ref_t *index_ids(trace_ctx_t *c, const trace_program_t *p) {
  id_ref_t *ids = malloc(((size_t)p->nops + 1) * sizeof *ids);
  for (int i = 0; i < p->nops; i++)
    ids[i] = (id_ref_t){p->ops[i].id, i};
  qsort(ids, (size_t)p->nops, sizeof *ids, by_id);
  int dup = -1;
  for (int k = 1; k < p->nops; k++)
    if (ids[k].id == ids[k - 1].id && (dup < 0 || ids[k].index < dup))
      dup = ids[k].index;
  if (dup >= 0) {
    trace_fail(c, p->ranks[0], p->ops[dup].id, "id: expected ids unique in a program, found "
               "%d twice", p->ops[dup].id);
    free(ids);
    return NULL;
  }
  return ids;
}

/* "overlaps": the id of a collective, send or recv of another stream of the
 * program, which the op runs beside. */
static int resolve_overlaps(trace_ctx_t *c, const cJSON *oj, trace_program_t *p,
                            const id_ref_t *ids, trace_op_t *op) {
  const cJSON *ov = cJSON_GetObjectItemCaseSensitive(oj, "overlaps");
  if (!ov)
    return 0;
  int j = op_index(ids, p->nops, ov);
  const trace_op_t *o = j >= 0 ? &p->ops[j] : NULL;
  if (!o || o->stream == op->stream ||
      (o->type != TRACE_OP_COLL && o->type != TRACE_OP_SEND && o->type != TRACE_OP_RECV)) {
    char what[64];
    jsonfile_describe(ov, what, sizeof what);
    return trace_fail(c, p->ranks[0], op->id, "overlaps: expected the id of a coll, send or "
                      "recv on another stream of this program, found %s", what);
  }
  op->overlapping = true;
  op->overlaps = j;
  return 0;
}

/* Turns "deps" and "overlaps" ids into op indices; ids must exist in the
 * program. */
static int resolve_deps(trace_ctx_t *c, const cJSON *ops_json, trace_program_t *p,
                        const id_ref_t *ids) {
  int i = 0;
  const cJSON *oj;
  cJSON_ArrayForEach(oj, ops_json) {
    trace_op_t *op = &p->ops[i++];
    if (resolve_overlaps(c, oj, p, ids, op))
      return -1;
    const cJSON *deps = cJSON_GetObjectItemCaseSensitive(oj, "deps");
    if (!deps)
      continue;
    if (!cJSON_IsArray(deps))
      return trace_fail(c, p->ranks[0], op->id, "deps: expected an array of op ids, found "
                        "another value");
    op->deps = malloc(((size_t)cJSON_GetArraySize(deps) + 1) * sizeof *op->deps);
    const cJSON *d;
    cJSON_ArrayForEach(d, deps) {
      int found = op_index(ids, p->nops, d);
      if (found < 0) {
        char what[64];
        jsonfile_describe(d, what, sizeof what);
        return trace_fail(c, p->ranks[0], op->id, "deps: expected ids of ops in this program, "
                          "found %s", what);
      }
      op->deps[op->ndeps++] = found;
    }
  }
  return 0;
}

static int parse_program(trace_ctx_t *c, const cJSON *pj, trace_t *t, trace_program_t *p, int idx) {
  static const char *const fields[] = {"ranks", "ops", NULL};
  char where[64];
  snprintf(where, sizeof where, "programs[%d]", idx);
  if (!cJSON_IsObject(pj))
    return trace_fail(c, -1, -1, "%s: expected an object, found another value", where);
  if (expect_fields(c, pj, fields, -1, -1, where))
    return -1;
  const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(pj, "ranks");
  snprintf(where, sizeof where, "programs[%d].ranks", idx);
  if (!ranks)
    return trace_fail(c, -1, -1, "%s: expected a rank list, found nothing", where);
  if (parse_rank_list(c, ranks, where, &p->ranks, &p->nranks))
    return -1;
  for (int i = 0; i < p->nranks; i++) {
    if (t->program_of[p->ranks[i]] >= 0)
      return trace_fail(c, p->ranks[i], -1, "expected one program per rank, found two");
    t->program_of[p->ranks[i]] = idx;
  }
  const cJSON *ops = cJSON_GetObjectItemCaseSensitive(pj, "ops");
  if (!cJSON_IsArray(ops))
    return trace_fail(c, p->ranks[0], -1, "ops: expected an array of ops, found %s",
                      ops ? "another value" : "nothing");
  p->ops = calloc((size_t)cJSON_GetArraySize(ops) + 1, sizeof *p->ops);
  trace_intern(&p->tags, &p->ntags, ""); /* tag 0: untagged */
  const cJSON *oj;
  trace_names_t names = {0};
  c->names = &names;
  int rc = 0;
  cJSON_ArrayForEach(oj, ops) {
    trace_op_t *op = &p->ops[p->nops++]; /* counted first, so a half-read op is freed too */
    if ((rc = parse_op(c, oj, t, p, op, p->ranks[0])) != 0)
      break;
  }
  free_names_index(&names);
  c->names = NULL;
  id_ref_t *ids = rc == 0 ? index_ids(c, p) : NULL;
  rc = ids ? resolve_deps(c, ops, p, ids) : -1;
  free(ids);
  return rc;
}

static int parse_top(trace_ctx_t *c, cJSON *root, trace_t *t) {
  static const char *const fields[] = {"format", "version", "name", "ranks", "ranks_per_node",
                                       "communicators", "programs", NULL};
  if (!cJSON_IsObject(root))
    return trace_fail(c, -1, -1, "(top level): expected a JSON object, found another value");
  if (expect_fields(c, root, fields, -1, -1, "(top level)"))
    return -1;
  const char *format, *name;
  long version, ranks, per_node;
  if (get_string(c, root, "format", true, &format, -1, -1))
    return -1;
  if (strcmp(format, TRACE_FORMAT) != 0)
    return trace_fail(c, -1, -1, "format: expected \"%s\", found \"%.40s\"", TRACE_FORMAT, format);
  if (get_int(c, root, "version", TRACE_VERSION, TRACE_VERSION, 0, true, &version, -1, -1) ||
      get_string(c, root, "name", false, &name, -1, -1) ||
      get_int(c, root, "ranks", 1, MAX_RANKS, 0, true, &ranks, -1, -1) ||
      get_int(c, root, "ranks_per_node", 0, 1 << 16, 0, false, &per_node, -1, -1))
    return -1;
  t->name = name ? strdup(name) : NULL;
  t->ranks = c->ranks = (int)ranks;
  t->ranks_per_node = (int)per_node;
  t->program_of = malloc((size_t)t->ranks * sizeof *t->program_of);
  for (int r = 0; r < t->ranks; r++)
    t->program_of[r] = -1;
  cJSON *comms = cJSON_GetObjectItemCaseSensitive(root, "communicators");
  if (comms && parse_comms(c, comms, t))
    return -1;
  cJSON *progs = cJSON_GetObjectItemCaseSensitive(root, "programs");
  if (!cJSON_IsArray(progs) || cJSON_GetArraySize(progs) == 0)
    return trace_fail(c, -1, -1, "programs: expected a non-empty array, found %s",
                      progs ? "another value" : "nothing");
  t->programs = calloc((size_t)cJSON_GetArraySize(progs), sizeof *t->programs);
  /* convert and drop each program's JSON in turn: the trace is never held twice */
  for (cJSON *pj = progs->child; pj; pj = progs->child) {
    int idx = t->nprograms++;
    int rc = parse_program(c, pj, t, &t->programs[idx], idx);
    cJSON_Delete(cJSON_DetachItemViaPointer(progs, pj));
    if (rc)
      return -1;
  }
  for (int r = 0; r < t->ranks; r++)
    if (t->program_of[r] < 0)
      return trace_fail(c, r, -1, "expected a program for every rank, found none");
  return 0;
}

/* Converts a parsed trace (consuming root) and runs the whole-trace checks. */
static int finish(const char *name, cJSON *root, const trace_vocab_t *vocab, trace_t *out,
                  npu_err_t *err) {
  trace_ctx_t c = {.name = name, .vocab = vocab, .err = err};
  int rc = parse_top(&c, root, out);
  cJSON_Delete(root);
  if (rc == 0)
    rc = trace_check(&c, out);
  if (rc)
    trace_free(out);
  return rc;
}

int trace_parse(const char *name, const char *text, size_t len, const trace_vocab_t *vocab,
                trace_t *out, npu_err_t *err) {
  memset(out, 0, sizeof *out);
  cJSON *root = jsonfile_parse(name, text, len, err);
  return root ? finish(name, root, vocab, out, err) : -1;
}

/* Whether text opens as binary data, as a Chakra ET does (a varint length,
 * then byte 0x0a), rather than as JSON text (a brace, white space or a UTF-8
 * BOM): stdin has no name to tell an ET by, and an ET set is one file per
 * rank, which one pipe cannot carry, so it gets its own line. */
static bool looks_like_protobuf(const char *text, size_t len) {
  const unsigned char *b = (const unsigned char *)text;
  bool bom = len >= 3 && b[0] == 0xef && b[1] == 0xbb && b[2] == 0xbf;
  return len >= 2 && !bom && (b[0] < 0x20 || b[0] >= 0x80) && b[0] != '\t' && b[0] != '\n' &&
         b[0] != '\r';
}

int trace_read(const char *path, const trace_vocab_t *vocab, trace_t *out, npu_err_t *err) {
  memset(out, 0, sizeof *out);
  size_t len;
  char why[256];
  char *text = jsonfile_read(path, TRACE_MAX_BYTES, &len, why, sizeof why);
  if (!text) {
    npu_err_set(err, "%s: expected a readable trace file (.json or .json.gz), found %s",
             path, why);
    return -1;
  }
  if (strcmp(path, JSONFILE_STDIN) == 0 && looks_like_protobuf(text, len)) {
    free(text);
    return npu_err_set(err, "-: expected an npusim JSON trace on standard input, found binary "
                            "data (a Chakra ET? Those are one file per rank: give --trace PREFIX)");
  }
  cJSON *root = jsonfile_parse(path, text, len, err);
  free(text); /* the parsed tree replaces the text */
  return root ? finish(path, root, vocab, out, err) : -1;
}
