/* out_format.c - see out_format.h.
 *
 * The non-finite guard reads the text a command printed, not its numbers: the
 * reports print with printf in many places, and the one place all of them pass
 * is the buffer cli.c writes out whole. printf writes a non-finite double as
 * inf or nan (INF, NAN for %F %E %G), signed or not, and never as anything
 * else, so a word of exactly that shape in a number's place is one. */
#include "out_format.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool out_is_nonfinite_text(const char *s, size_t n) {
  if (n > 0 && (s[0] == '-' || s[0] == '+'))
    s++, n--;
  return n == 3 && (memcmp(s, "inf", 3) == 0 || memcmp(s, "nan", 3) == 0 ||
                    memcmp(s, "INF", 3) == 0 || memcmp(s, "NAN", 3) == 0);
}

void out_csv_field(FILE *out, const char *s, const char *end) {
  if (strpbrk(s, ",\"\r\n") || out_is_nonfinite_text(s, strlen(s))) {
    fputc('"', out);
    for (; *s; s++) {
      if (*s == '"')
        fputc('"', out);
      fputc(*s, out);
    }
    fputc('"', out);
  } else {
    fputs(s, out);
  }
  fputs(end, out);
}

/* ---- the guard ---- */

/* A word: what printf writes for one number (digits, sign, point, exponent)
 * and the names around it; "-nan" and "a>b" split where they should. */
static bool word_char(char c) {
  return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-' || c == '+';
}

static bool numeric_word(const char *s, size_t n) {
  size_t i = (n > 1 && (s[0] == '-' || s[0] == '+' || s[0] == '.')) ? 1 : 0;
  return (n > i && isdigit((unsigned char)s[i])) || out_is_nonfinite_text(s, n);
}

static void found_at(out_nonfinite_t *f, const char *buf, const char *word, size_t n) {
  f->line = 1;
  for (const char *p = buf; p < word; p++)
    f->line += *p == '\n';
  snprintf(f->text, sizeof f->text, "%.*s", (int)n, word);
}

/* Appends sep (when the field is not empty) and the n bytes at s to f->field,
 * truncating. */
static void field_add(out_nonfinite_t *f, const char *sep, const char *s, size_t n) {
  size_t used = strlen(f->field);
  snprintf(f->field + used, sizeof f->field - used, "%s%.*s", used ? sep : "", (int)n, s);
}

/* -- JSON: the path of containers and keys down to the value -- */

#define JSON_DEPTH 32

typedef struct {
  bool array;
  int index;       /* array: the element being read */
  const char *key; /* object: the key being read (in the buffer, unquoted), and its length */
  int key_len;
} json_frame_t;

static void json_path(out_nonfinite_t *f, const json_frame_t *st, int depth) {
  f->field[0] = '\0';
  for (int i = 0; i < depth && i < JSON_DEPTH; i++) {
    char index[16];
    if (st[i].array)
      field_add(f, "", index, (size_t)snprintf(index, sizeof index, "[%d]", st[i].index));
    else if (st[i].key)
      field_add(f, ".", st[i].key, (size_t)st[i].key_len);
  }
}

/* The end of the string literal starting at the quote s. */
static const char *json_string_end(const char *s, const char *end) {
  for (s++; s < end && *s != '"'; s++)
    if (*s == '\\' && s + 1 < end)
      s++;
  return s < end ? s + 1 : end;
}

static bool find_json(const char *buf, size_t len, out_nonfinite_t *f) {
  json_frame_t st[JSON_DEPTH];
  int depth = 0;
  const char *end = buf + len;
  for (const char *p = buf; p < end;) {
    char c = *p;
    json_frame_t *top = depth > 0 && depth <= JSON_DEPTH ? &st[depth - 1] : NULL;
    if (c == '"') {
      const char *q = json_string_end(p, end), *after = q;
      while (after < end && isspace((unsigned char)*after))
        after++;
      if (top && !top->array && after < end && *after == ':')
        top->key = p + 1, top->key_len = (int)(q - p - 2);
      p = q;
    } else if (c == '{' || c == '[') {
      if (depth < JSON_DEPTH)
        st[depth] = (json_frame_t){.array = c == '['};
      depth++, p++;
    } else if (c == '}' || c == ']') {
      depth -= depth > 0, p++;
    } else if (c == ',') {
      if (top && top->array)
        top->index++;
      p++;
    } else if (word_char(c)) {
      const char *w = p;
      while (p < end && word_char(*p))
        p++;
      if (out_is_nonfinite_text(w, (size_t)(p - w))) {
        found_at(f, buf, w, (size_t)(p - w));
        json_path(f, st, depth);
        return true;
      }
    } else {
      p++;
    }
  }
  return false;
}

/* -- CSV: each section's first line names its columns -- */

/* The field of the CSV line at p (up to end) starting there: sets [*s, *e)
 * to its text (quotes included) and returns where the next one starts, or
 * NULL after the last. */
static const char *csv_next(const char *p, const char *end, const char **s, const char **e) {
  *s = p;
  if (p < end && *p == '"')
    for (p++; p < end && !(*p == '"' && (p + 1 >= end || p[1] != '"')); p++)
      p += *p == '"';
  while (p < end && *p != ',')
    p++;
  *e = p;
  return p < end ? p + 1 : NULL;
}

static void csv_column(out_nonfinite_t *f, const char *header, const char *hend, int col) {
  const char *p = header, *s = NULL, *e = NULL;
  int read = 0;
  while (p && read <= col)
    p = csv_next(p, hend, &s, &e), read++;
  if (read <= col) {
    snprintf(f->field, sizeof f->field, "column %d", col + 1);
    return;
  }
  if (e - s >= 2 && *s == '"')
    s++, e--;
  snprintf(f->field, sizeof f->field, "%.*s", (int)(e - s), s);
}

static bool find_csv(const char *buf, size_t len, out_nonfinite_t *f) {
  const char *end = buf + len, *header = NULL, *hend = NULL;
  for (const char *line = buf; line < end;) {
    const char *eol = memchr(line, '\n', (size_t)(end - line));
    if (!eol)
      eol = end;
    if (eol == line || *line == '#') {
      header = NULL; /* a blank or comment line: the next line heads a new section */
    } else if (!header) {
      header = line, hend = eol;
    } else {
      const char *p = line, *s, *e;
      for (int col = 0; p; col++) {
        p = csv_next(p, eol, &s, &e);
        while (s < e && *s == ' ')
          s++;
        while (e > s && e[-1] == ' ')
          e--;
        if (out_is_nonfinite_text(s, (size_t)(e - s))) {
          found_at(f, buf, s, (size_t)(e - s));
          csv_column(f, header, hend, col);
          return true;
        }
      }
    }
    line = eol + (eol < end);
  }
  return false;
}

/* -- table: a row's label (its words before the first number) and the column
 * header above the number -- */

typedef struct {
  const char *s, *e;
} span_t;

/* The next word of [p, end) outside double quotes, or false. */
static bool table_word(const char **p, const char *end, span_t *w) {
  const char *q = *p;
  while (q < end && !word_char(*q)) {
    if (*q == '"') {
      const char *close = memchr(q + 1, '"', (size_t)(end - q - 1));
      q = close ? close : end;
    }
    q += q < end;
  }
  if (q >= end)
    return false;
  w->s = q;
  while (q < end && word_char(*q))
    q++;
  w->e = q;
  *p = q;
  return true;
}

/* Whether the line [s, e) is a header: two or more words and no number. */
static bool header_line(const char *s, const char *e) {
  span_t w;
  int words = 0;
  for (const char *p = s; table_word(&p, e, &w); words++)
    if (numeric_word(w.s, (size_t)(w.e - w.s)))
      return false;
  return words >= 2;
}

/* The header word above the number at columns [col, col_end): the one over
 * it, or the one ending nearest its end (numbers are right-aligned). */
static bool header_word(const char *s, const char *e, long col, long col_end, span_t *out) {
  span_t w;
  long best = -1;
  for (const char *p = s; table_word(&p, e, &w);) {
    long ws = w.s - s, we = w.e - s;
    long d = ws < col_end && col < we ? 0 : labs(we - col_end);
    if (best < 0 || d < best)
      best = d, *out = w;
  }
  return best >= 0;
}

static void table_field(out_nonfinite_t *f, const char *buf, const char *line, const char *eol,
                        span_t num) {
  f->field[0] = '\0';
  /* the row's label: its words before the first number */
  span_t w, first = {NULL, NULL}, last = {NULL, NULL};
  for (const char *p = line; table_word(&p, eol, &w) && !numeric_word(w.s, (size_t)(w.e - w.s));)
    last = w, first = first.s ? first : w;
  if (first.s) {
    for (const char *p = first.s; p < last.e; p++) /* spaces collapsed */
      if (*p != ' ' || p[1] != ' ')
        field_add(f, "", p, 1);
  }
  /* the column: the nearest header line above in the same block; a row with a
   * label takes it only from a '#' header (a title above rows is no header) */
  for (const char *l = line; l > buf;) {
    const char *prev_end = l - 1, *prev = prev_end;
    while (prev > buf && prev[-1] != '\n')
      prev--;
    if (prev == prev_end)
      break; /* a blank line ends the block */
    if (header_line(prev, prev_end) && (!first.s || *prev == '#')) {
      span_t h;
      if (header_word(prev, prev_end, num.s - line, num.e - line, &h))
        field_add(f, ", ", h.s, (size_t)(h.e - h.s));
      break;
    }
    l = prev;
  }
  if (!f->field[0]) {
    int col = 1;
    for (const char *p = line; table_word(&p, eol, &w) && w.s < num.s;)
      col++;
    snprintf(f->field, sizeof f->field, "word %d", col);
  }
}

static bool find_table(const char *buf, size_t len, out_nonfinite_t *f) {
  const char *end = buf + len;
  for (const char *line = buf; line < end;) {
    const char *eol = memchr(line, '\n', (size_t)(end - line));
    if (!eol)
      eol = end;
    span_t w;
    for (const char *p = line; table_word(&p, eol, &w);)
      if (out_is_nonfinite_text(w.s, (size_t)(w.e - w.s))) {
        found_at(f, buf, w.s, (size_t)(w.e - w.s));
        table_field(f, buf, line, eol, w);
        return true;
      }
    line = eol + (eol < end);
  }
  return false;
}

bool out_find_nonfinite(out_format_t fmt, const char *buf, size_t len, out_nonfinite_t *found) {
  memset(found, 0, sizeof *found);
  if (!buf)
    return false;
  switch (fmt) {
  case FORMAT_JSON:
    return find_json(buf, len, found);
  case FORMAT_CSV:
    return find_csv(buf, len, found);
  default:
    return find_table(buf, len, found);
  }
}
