/* op_measure.c - reading kernel measurement tables; see op_measure.h. */
#include "op_measure.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonfile.h"

#define MEAS_MAX_BYTES (64u << 20)
#define MEAS_MAX_FIELDS 32
#define MEAS_FIELD_MAX 128

const char *const meas_class_names[MEAS_CLASS_COUNT] = {"matmul", "attention", "vector"};

enum {
  COL_OP,
  COL_SHAPE,
  COL_DTYPE,
  COL_TIME,
  COL_OUT_DTYPE,
  COL_CAUSAL,
  COL_LAYOUT,
  COL_KERNELS,
  COL_COUNT
};
static const char *const col_names[COL_COUNT] = {"op",        "shape",  "dtype",  "time_us",
                                                 "out_dtype", "causal", "layout", "kernels"};
#define COL_REQUIRED 4 /* the first four */

typedef struct {
  const char *path;
  int line;
  int col[COL_COUNT]; /* field index of each column, -1 if absent */
  char field[MEAS_MAX_FIELDS][MEAS_FIELD_MAX];
  int nfields;
} reader_t;

meas_class_t meas_class_of(op_kind_t kind) {
  return kind == OP_MATMUL ? MEAS_MATMUL
         : (kind == OP_ATTN_FWD || kind == OP_ATTN_BWD || kind == OP_ATTN_DECODE) ? MEAS_ATTENTION : MEAS_VECTOR;
}

/* Splits one line into fields (RFC 4180: a field may be quoted, "" inside quotes
 * is a quote). Returns 0, or -1 on an unterminated quote or an overlong field. */
static int split(reader_t *r, const char *line, size_t len, npu_err_t *err) {
  r->nfields = 0;
  size_t i = 0;
  for (;;) {
    if (r->nfields == MEAS_MAX_FIELDS)
      return npu_err_set(err, "%s:%d: expected at most %d columns, found more", r->path, r->line,
                         MEAS_MAX_FIELDS);
    char *f = r->field[r->nfields++];
    size_t n = 0;
    bool quoted = i < len && line[i] == '"';
    i += quoted;
    while (i < len && (quoted || line[i] != ',')) {
      if (quoted && line[i] == '"') {
        if (i + 1 < len && line[i + 1] == '"')
          i++;
        else {
          quoted = false;
          i++;
          continue;
        }
      }
      if (n + 1 == MEAS_FIELD_MAX)
        return npu_err_set(err, "%s:%d: expected fields of at most %d characters, found a longer "
                           "one", r->path, r->line, MEAS_FIELD_MAX - 1);
      f[n++] = line[i++];
    }
    if (quoted)
      return npu_err_set(err, "%s:%d: expected a closing quote, found the end of the line",
                         r->path, r->line);
    f[n] = '\0';
    if (i >= len)
      return 0;
    i++; /* the comma */
  }
}

static int read_header(reader_t *r, npu_err_t *err) {
  for (int c = 0; c < COL_COUNT; c++) {
    r->col[c] = -1;
    for (int i = 0; i < r->nfields; i++)
      if (strcmp(r->field[i], col_names[c]) == 0)
        r->col[c] = i;
    if (c < COL_REQUIRED && r->col[c] < 0)
      return npu_err_set(err, "%s:%d: expected a header with the columns op, shape, dtype and "
                         "time_us, found no \"%s\"", r->path, r->line, col_names[c]);
  }
  return 0;
}

static const char *get(const reader_t *r, int col) {
  return r->col[col] >= 0 && r->col[col] < r->nfields ? r->field[r->col[col]] : "";
}

static int parse_dtype(const reader_t *r, int col, chip_dtype_t *out, npu_err_t *err) {
  if (chip_dtype_parse(get(r, col), out))
    return npu_err_set(err, "%s:%d: %s: expected one of fp16, bf16, fp32, int8, fp8, found "
                       "\"%.20s\"", r->path, r->line, col_names[col], get(r, col));
  return 0;
}

/* layout: nn, nt (B transposed: x W^T), tn (A transposed: a weight gradient), tt */
static int parse_layout(const reader_t *r, op_desc_t *op, npu_err_t *err) {
  const char *s = get(r, COL_LAYOUT);
  if (!*s)
    return 0;
  if (strlen(s) != 2 || !strchr("nt", s[0]) || !strchr("nt", s[1]) || op->kind != OP_MATMUL)
    return npu_err_set(err, "%s:%d: layout: expected nn, nt, tn or tt on a matmul row (or empty), "
                       "found \"%.20s\"", r->path, r->line, s);
  op->trans_a = s[0] == 't';
  op->trans_b = s[1] == 't';
  return 0;
}

static int parse_row(const reader_t *r, meas_row_t *row, npu_err_t *err) {
  memset(row, 0, sizeof *row);
  row->line = r->line;
  op_desc_t *op = &row->ops[0];
  char kinds[MEAS_FIELD_MAX];
  snprintf(kinds, sizeof kinds, "%s", get(r, COL_OP));
  char *save = NULL;
  for (char *k = strtok_r(kinds, "+", &save); k; k = strtok_r(NULL, "+", &save)) {
    if (row->nops == MEAS_MAX_OPS || op_kind_parse(k, &row->ops[row->nops].kind))
      return npu_err_set(err, "%s:%d: op: expected an npusim op (matmul, attention_fwd, rmsnorm, "
                         "...; see npusim op --help), or up to %d joined by '+', found \"%.40s\"",
                         r->path, r->line, MEAS_MAX_OPS, get(r, COL_OP));
    row->nops++;
  }
  if (row->nops == 0)
    return npu_err_set(err, "%s:%d: op: expected an npusim op, found \"\"", r->path, r->line);
  npu_err_t why = {""};
  if (op_shape_parse(get(r, COL_SHAPE), 'x', op, &why))
    return npu_err_set(err, "%s:%d: %s", r->path, r->line, why.msg); /* "shape: ..." */
  if (parse_dtype(r, COL_DTYPE, &op->dtype, err))
    return -1;
  op->out_dtype = op_default_out_dtype(op->kind, op->dtype);
  if (*get(r, COL_OUT_DTYPE) && parse_dtype(r, COL_OUT_DTYPE, &op->out_dtype, err))
    return -1;
  const char *causal = get(r, COL_CAUSAL);
  if (*causal && strcmp(causal, "0") && strcmp(causal, "1"))
    return npu_err_set(err, "%s:%d: causal: expected 0 or 1, found \"%.20s\"", r->path, r->line,
                       causal);
  op->causal = strcmp(causal, "1") == 0;
  if (parse_layout(r, op, err))
    return -1;
  const char *kernels = get(r, COL_KERNELS); /* empty: fused */
  if (*kernels && op_form_parse(kernels, &op->form))
    return npu_err_set(err,
                       "%s:%d: kernels: expected fused or unfused (or empty), found "
                       "\"%.20s\"",
                       r->path, r->line, kernels);
  for (int i = 1; i < row->nops; i++) { /* the others: the first's sizes and types */
    op_kind_t kind = row->ops[i].kind;
    row->ops[i] = *op;
    row->ops[i].kind = kind;
    if (op_on_cube(kind) != op_on_cube(op->kind))
      return npu_err_set(err, "%s:%d: op: expected joined ops with the same kind of shape, found "
                         "\"%.40s\"", r->path, r->line, get(r, COL_OP));
  }
  char *end;
  double us = strtod(get(r, COL_TIME), &end);
  if (end == get(r, COL_TIME) || *end || !isfinite(us) || us <= 0)
    return npu_err_set(err, "%s:%d: time_us: expected a positive number of microseconds, found "
                       "\"%.40s\"", r->path, r->line, get(r, COL_TIME));
  if (us > MEAS_MAX_TIME_US)
    return npu_err_set(err,
                       "%s:%d: time_us: expected at most %.0f microseconds (an hour: one "
                       "kernel call, not a run), found \"%.40s\"",
                       r->path, r->line, MEAS_MAX_TIME_US, get(r, COL_TIME));
  row->time_s = us * 1e-6;
  row->cls = meas_class_of(op->kind);
  return 0;
}

static void header_comment(meas_table_t *t, const char *line, size_t len) {
  static const char key[] = "# device:";
  if (len > sizeof key && strncmp(line, key, sizeof key - 1) == 0 && !t->device[0]) {
    const char *v = line + sizeof key - 1;
    while (*v == ' ')
      v++;
    int n = (int)(len - (size_t)(v - line));
    snprintf(t->device, sizeof t->device, "%.*s", n, v);
  }
}

/* Splits the rows of each class into halves: even rows fit, odd rows held out. */
static void split_halves(meas_table_t *t) {
  int seen[MEAS_CLASS_COUNT] = {0};
  for (size_t i = 0; i < t->n; i++)
    t->rows[i].held_out = seen[t->rows[i].cls]++ % 2 == 1;
}

void meas_fit_all_rows(meas_table_t *t) {
  for (size_t i = 0; i < t->n; i++)
    t->rows[i].held_out = false;
}

static int parse_lines(reader_t *r, const char *text, size_t len, meas_table_t *t,
                       npu_err_t *err) {
  bool have_header = false;
  size_t cap = 0;
  for (size_t pos = 0; pos < len;) {
    const char *line = text + pos;
    const char *nl = memchr(line, '\n', len - pos);
    size_t n = nl ? (size_t)(nl - line) : len - pos;
    pos += n + 1;
    r->line++;
    if (n && line[n - 1] == '\r')
      n--;
    if (n == 0 || line[0] == '#') {
      header_comment(t, line, n);
      continue;
    }
    if (split(r, line, n, err))
      return -1;
    if (!have_header) {
      have_header = true;
      if (read_header(r, err))
        return -1;
      continue;
    }
    if (t->n == MEAS_MAX_ROWS)
      return npu_err_set(err, "%s:%d: expected at most %d rows, found more", r->path, r->line,
                         MEAS_MAX_ROWS);
    if (t->n == cap) {
      cap = cap ? 2 * cap : 64;
      meas_row_t *rows = realloc(t->rows, cap * sizeof *rows);
      if (!rows)
        return npu_err_set(err, "%s: out of memory", r->path);
      t->rows = rows;
    }
    if (parse_row(r, &t->rows[t->n], err))
      return -1;
    t->n++;
  }
  if (t->n == 0)
    return npu_err_set(err, "%s: expected a header line and at least one measurement, found %s",
                       r->path, have_header ? "only the header" : "none");
  return 0;
}

int meas_read(const char *path, meas_table_t *t, npu_err_t *err) {
  memset(t, 0, sizeof *t);
  char why[256];
  size_t len;
  char *text = jsonfile_read(path, MEAS_MAX_BYTES, &len, why, sizeof why);
  if (!text)
    return npu_err_set(err, "%s: cannot read measurements: %s", path, why);
  reader_t *r = calloc(1, sizeof *r);
  if (!r) {
    free(text);
    return npu_err_set(err, "%s: out of memory", path);
  }
  r->path = path;
  int rc = parse_lines(r, text, len, t, err);
  free(r);
  free(text);
  if (rc) {
    meas_free(t);
    return -1;
  }
  split_halves(t);
  return 0;
}

void meas_free(meas_table_t *t) {
  free(t->rows);
  t->rows = NULL;
  t->n = 0;
}
