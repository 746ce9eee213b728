/* diff.c - the figures that moved between two JSON outputs; see diff.h. */
#include "diff.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "figures.h"
#include "jsonfile.h"

#define DIFF_MAX_FILE_BYTES (1u << 30)

typedef struct {
  char *path;
  double value;
  char *text;
} leaf_t;

typedef struct {
  leaf_t *v;
  size_t n, cap;
} leaves_t;

static void add_leaf(const char *path, double value, const char *text, void *ctx) {
  leaves_t *l = ctx;
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 256;
    l->v = realloc(l->v, l->cap * sizeof *l->v);
  }
  l->v[l->n++] = (leaf_t){strdup(path), value, text ? strdup(text) : NULL};
}

static int cmp_leaf(const void *x, const void *y) {
  return strcmp(((const leaf_t *)x)->path, ((const leaf_t *)y)->path);
}

static void free_leaves(leaves_t *l) {
  for (size_t i = 0; i < l->n; i++) {
    free(l->v[i].path);
    free(l->v[i].text);
  }
  free(l->v);
}

static int load(const char *path, leaves_t *l, npu_err_t *err) {
  cJSON *doc = jsonfile_load(path, DIFF_MAX_FILE_BYTES, err);
  if (!doc)
    return -1;
  figures_each(doc, add_leaf, l);
  cJSON_Delete(doc);
  if (l->n > 1) /* an output of no leaf has no array to sort */
    qsort(l->v, l->n, sizeof *l->v, cmp_leaf);
  return 0;
}

static void add_row(diff_t *d, diff_row_t r) {
  d->rows = realloc(d->rows, ((size_t)d->nrows + 1) * sizeof *d->rows);
  d->rows[d->nrows++] = r;
}

/* How far a row moved, for the order: a number from 0 and a figure one side
 * lacks first, then texts, then numbers by their change. */
static double size_of(const diff_row_t *r) {
  if (r->kind == DIFF_ONLY_A || r->kind == DIFF_ONLY_B)
    return DBL_MAX;
  if (r->kind == DIFF_TEXT)
    return DBL_MAX / 2;
  return r->a == 0 ? DBL_MAX / 4 : fabs(r->change_pct);
}

static int cmp_row(const void *x, const void *y) {
  const diff_row_t *a = x, *b = y;
  double sa = size_of(a), sb = size_of(b);
  if (sa != sb)
    return sa > sb ? -1 : 1;
  return strcmp(a->path, b->path);
}

static bool same_leaf(const leaf_t *a, const leaf_t *b) {
  if (!a->text != !b->text)
    return false;
  return a->text ? strcmp(a->text, b->text) == 0 : a->value == b->value;
}

static void compare(const leaf_t *a, const leaf_t *b, double threshold_pct, diff_t *d) {
  if (same_leaf(a, b))
    return;
  if (a->text || b->text) {
    char num[40];
    diff_row_t r = {.kind = DIFF_TEXT, .path = strdup(a->path)};
    jsonfile_format_number(a->value, num, sizeof num);
    r.text_a = strdup(a->text ? a->text : num);
    jsonfile_format_number(b->value, num, sizeof num);
    r.text_b = strdup(b->text ? b->text : num);
    add_row(d, r);
    return;
  }
  double pct = a->value != 0 ? 100 * (b->value - a->value) / fabs(a->value) : 0;
  if (a->value != 0 && fabs(pct) <= threshold_pct)
    return;
  add_row(d, (diff_row_t){.kind = DIFF_MOVED, .path = strdup(a->path), .a = a->value,
                          .b = b->value, .change_pct = pct});
}

static diff_row_t only(diff_kind_t kind, const leaf_t *l) {
  return (diff_row_t){.kind = kind, .path = strdup(l->path), .a = l->value, .b = l->value,
                      .text_a = l->text ? strdup(l->text) : NULL};
}

int diff_files(const char *path_a, const char *path_b, double threshold_pct, diff_t *d,
               npu_err_t *err) {
  memset(d, 0, sizeof *d);
  leaves_t a = {0}, b = {0};
  if (load(path_a, &a, err) || load(path_b, &b, err)) {
    free_leaves(&a);
    free_leaves(&b);
    return -1;
  }
  size_t i = 0, j = 0;
  while (i < a.n || j < b.n) {
    int c = i == a.n ? 1 : j == b.n ? -1 : strcmp(a.v[i].path, b.v[j].path);
    d->figures++;
    if (c == 0)
      compare(&a.v[i++], &b.v[j++], threshold_pct, d);
    else if (c < 0)
      add_row(d, only(DIFF_ONLY_A, &a.v[i++]));
    else
      add_row(d, only(DIFF_ONLY_B, &b.v[j++]));
  }
  free_leaves(&a);
  free_leaves(&b);
  if (d->nrows > 1)
    qsort(d->rows, (size_t)d->nrows, sizeof *d->rows, cmp_row);
  return 0;
}

void diff_free(diff_t *d) {
  for (int i = 0; i < d->nrows; i++) {
    free(d->rows[i].path);
    free(d->rows[i].text_a);
    free(d->rows[i].text_b);
  }
  free(d->rows);
  memset(d, 0, sizeof *d);
}

static const char *const kind_names[] = {"moved", "text", "only_a", "only_b"};

/* A side's value as text: the number, the text, or "-" where it has none. */
static void side(const diff_row_t *r, bool b, char *buf, size_t len) {
  if ((r->kind == DIFF_ONLY_A && b) || (r->kind == DIFF_ONLY_B && !b)) {
    snprintf(buf, len, "-");
    return;
  }
  const char *text = r->kind == DIFF_TEXT ? (b ? r->text_b : r->text_a) : r->text_a;
  if (text)
    snprintf(buf, len, "%s", text);
  else
    jsonfile_format_number(b ? r->b : r->a, buf, len);
}

static void change_text(const diff_row_t *r, char *buf, size_t len) {
  if (r->kind == DIFF_MOVED && r->a != 0)
    snprintf(buf, len, "%+.3f%%", r->change_pct);
  else if (r->kind == DIFF_MOVED)
    snprintf(buf, len, "from 0");
  else
    snprintf(buf, len, "%s", r->kind == DIFF_TEXT ? "changed" : kind_names[r->kind]);
}

void diff_report(FILE *out, out_format_t fmt, const char *path_a, const char *path_b,
                 double threshold_pct, const diff_t *d) {
  char a[64], b[64], change[32];
  if (fmt == FORMAT_JSON) {
    fputs("{\"a\": ", out);
    jsonfile_write_string(out, path_a);
    fputs(", \"b\": ", out);
    jsonfile_write_string(out, path_b);
    jsonfile_format_number(threshold_pct, a, sizeof a);
    fprintf(out, ", \"threshold_pct\": %s, \"figures\": %ld, \"moved\": [", a, d->figures);
    for (int i = 0; i < d->nrows; i++) {
      const diff_row_t *r = &d->rows[i];
      fprintf(out, "%s\n  {\"figure\": ", i ? "," : "");
      jsonfile_write_string(out, r->path);
      fprintf(out, ", \"kind\": \"%s\", \"a\": ", kind_names[r->kind]);
      side(r, false, a, sizeof a);
      side(r, true, b, sizeof b);
      jsonfile_write_string(out, a);
      fputs(", \"b\": ", out);
      jsonfile_write_string(out, b);
      if (r->kind == DIFF_MOVED && r->a != 0) {
        jsonfile_format_number(r->change_pct, change, sizeof change);
        fprintf(out, ", \"change_pct\": %s", change);
      }
      fputc('}', out);
    }
    fputs("\n]}\n", out);
    return;
  }
  if (fmt == FORMAT_CSV) {
    fputs("figure,kind,a,b,change_pct\n", out);
    for (int i = 0; i < d->nrows; i++) {
      const diff_row_t *r = &d->rows[i];
      side(r, false, a, sizeof a);
      side(r, true, b, sizeof b);
      out_csv_field(out, r->path, ",");
      fprintf(out, "%s,", kind_names[r->kind]);
      out_csv_field(out, a, ",");
      out_csv_field(out, b, ",");
      if (r->kind == DIFF_MOVED && r->a != 0)
        fprintf(out, "%.6g\n", r->change_pct);
      else
        fputc('\n', out);
    }
    return;
  }
  fprintf(out, "# npusim diff: %s -> %s, %ld figures, %d moved (threshold %g%%)\n", path_a,
          path_b, d->figures, d->nrows, threshold_pct);
  if (d->nrows == 0)
    return;
  int width = 6;
  for (int i = 0; i < d->nrows; i++) {
    int n = (int)strlen(d->rows[i].path);
    width = n > width ? n : width;
  }
  width = width > 70 ? 70 : width;
  fprintf(out, "%-*s  %16s  %16s  %10s\n", width, "figure", "a", "b", "change");
  for (int i = 0; i < d->nrows; i++) {
    const diff_row_t *r = &d->rows[i];
    side(r, false, a, sizeof a);
    side(r, true, b, sizeof b);
    change_text(r, change, sizeof change);
    fprintf(out, "%-*s  %16.16s  %16.16s  %10s\n", width, r->path, a, b, change);
  }
}
