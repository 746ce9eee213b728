/* serve_requests.c - reading and generating serving requests; see
 * serve_requests.h. */
#include "serve_requests.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonfile.h"
#include "npu_int.h"

#define NPU_JSONL_ERR 512

/* ---- the generator: splitmix64, so every platform draws the same numbers ---- */

typedef struct {
  uint64_t state;
} rng_t;

static uint64_t rng_next(rng_t *r) {
  return npu_splitmix64(&r->state);
}

/* Uniform in (0, 1): 53 random bits, never 0. */
static double rng_unit(rng_t *r) {
  return ((double)(rng_next(r) >> 11) + 0.5) / 9007199254740992.0;
}

static double rng_normal(rng_t *r) {
  double u = rng_unit(r), v = rng_unit(r);
  return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

static int draw_length(rng_t *r, const serve_len_cfg_t *c) {
  double x;
  switch (c->dist) {
  case SERVE_LEN_UNIFORM:
    x = c->min + floor(rng_unit(r) * (c->max - c->min + 1));
    break;
  case SERVE_LEN_LOGNORMAL:
    x = round(exp(log(c->mean) - c->sigma * c->sigma / 2 + c->sigma * rng_normal(r)));
    break;
  default:
    x = c->mean;
  }
  return (int)fmin(fmax(x, c->min), c->max);
}

int serve_requests_generate(const serving_cfg_t *cfg, serve_requests_t *out, npu_err_t *err) {
  out->v = NULL;
  out->n = 0;
  if (cfg->count < 1 || cfg->count > SERVE_MAX_REQUESTS)
    return npu_err_set(err, "serving.requests.count: expected an integer in [1, %d], found %d",
                    SERVE_MAX_REQUESTS, cfg->count),
           -1;
  out->v = calloc((size_t)cfg->count, sizeof *out->v);
  if (!out->v)
    return npu_err_set(err, "serving.requests.count: out of memory for %d requests",
                    cfg->count),
           -1;
  out->n = cfg->count;
  rng_t arrivals = {(uint64_t)cfg->seed * 3 + 1}, prompts = {(uint64_t)cfg->seed * 3 + 2},
        outputs = {(uint64_t)cfg->seed * 3 + 3};
  double t = 0;
  for (long i = 0; i < out->n; i++) {
    if (cfg->rate_per_s > 0 && i > 0)
      t += -log(rng_unit(&arrivals)) / cfg->rate_per_s;
    if (!(t <= SERVE_MAX_ARRIVAL_S)) {
      npu_err_set(err, "serving.requests.rate_per_s: expected arrivals within 1e18 s (count / rate_per_s "
               "at most about that), found request %ld of %d at %.6g s",
               i, cfg->count, t);
      serve_requests_free(out);
      return -1;
    }
    out->v[i] = (serve_request_t){t, draw_length(&prompts, &cfg->prompt),
                                  draw_length(&outputs, &cfg->output), 0};
  }
  return 0;
}

/* ---- traces ---- */

enum { COL_ARRIVAL, COL_PROMPT, COL_OUTPUT, NCOLS };
static const char *const col_names[NCOLS] = {"arrival_s", "prompt_tokens", "output_tokens"};

/* A value of its column, into the request; found is its text as the trace
 * spells it (JSONL: as cJSON read it). */
static int set_field(serve_request_t *q, int col, double v, const char *found, const char *path,
                     long line, npu_err_t *err) {
  if (col == COL_ARRIVAL) {
    if (!(v >= 0 && v <= SERVE_MAX_ARRIVAL_S))
      return npu_err_set(err, "%s:%ld: arrival_s: expected a time in [0, 1e18] seconds, found %.40s", path,
                      line, found),
             -1;
    q->arrival_s = v + 0.0; /* -0 reads as 0 */
    return 0;
  }
  if (!(v >= 1 && v <= SERVE_MAX_TOKENS) || v != floor(v))
    return npu_err_set(err, "%s:%ld: %s: expected a whole number of tokens in [1, 1e8], "
                    "found %.40s",
                    path, line, col_names[col], found),
           -1;
  if (col == COL_PROMPT)
    q->prompt_tokens = (int)v;
  else
    q->output_tokens = (int)v;
  return 0;
}

static int jsonl_row(const char *path, long line, char *text, size_t len, serve_request_t *q,
                     npu_err_t *err) {
  npu_err_t e; /* filled on failure only: no 1 KiB clear per request row */
  cJSON *o = jsonfile_parse("", text, len, &e);
  if (!o) { /* e is ":1:COL: expected ..." for this one line, cut as it always was */
    int skip = strncmp(e.msg, ":1:", 3) == 0 ? 2 : 0;
    return npu_err_set(err, "%s:%ld%.*s", path, line, NPU_JSONL_ERR - 1 - skip, e.msg + skip);
  }
  int rc = 0;
  if (!cJSON_IsObject(o)) {
    npu_err_set(err, "%s:%ld: expected an object {\"arrival_s\": ..., \"prompt_tokens\": "
             "..., \"output_tokens\": ...}, found another value",
             path, line);
    rc = -1;
  }
  /* cJSON keeps both of a key given twice and finds the first: which one the
   * writer meant is unknown, so a field given twice is refused. */
  int seen[NCOLS] = {0};
  for (const cJSON *f = rc ? NULL : o->child; f && !rc; f = f->next)
    for (int c = 0; c < NCOLS; c++)
      if (f->string && strcmp(f->string, col_names[c]) == 0 && seen[c]++) {
        npu_err_set(err, "%s:%ld: %s: expected each key once, found it twice", path, line,
                 col_names[c]);
        rc = -1;
      }
  for (int c = 0; c < NCOLS && !rc; c++) {
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, col_names[c]);
    char found[48] = "no such key";
    if (f)
      jsonfile_describe(f, found, sizeof found);
    if (!f || !cJSON_IsNumber(f)) {
      npu_err_set(err, "%s:%ld: %s: expected a number, found %s", path, line, col_names[c],
               found);
      rc = -1;
    } else {
      rc = set_field(q, c, f->valuedouble, found, path, line, err);
    }
  }
  cJSON_Delete(o);
  return rc;
}

/* The next field of a CSV line at *p, in place: RFC 4180 quotes ("a, b",
 * "say ""hi""") removed, spaces and tabs around the text trimmed (inside
 * quotes too: " 8 " is 8, as for a reader of numbers). Sets *p to the next
 * field, or NULL after the last. Returns the field, or NULL with err set for a
 * quote left open or text after a closing quote. */
static char *csv_field(char **p, const char *path, long line, long index, npu_err_t *err) {
  char *f = *p + strspn(*p, " \t"), *end, *last;
  if (*f == '"') {
    char *r = ++f;
    last = f; /* where the unquoted text is written */
    for (; *r != '"' || r[1] == '"'; r++) {
      if (*r == '\0')
        return npu_err_set(err, "%s:%ld: field %ld: expected a closing quote on the same line, found "
                        "the end of the line",
                        path, line, index + 1),
               NULL;
      r += *r == '"'; /* "" is one quote */
      *last++ = *r;
    }
    end = r + 1 + strspn(r + 1, " \t");
    if (*end && *end != ',')
      return npu_err_set(err, "%s:%ld: field %ld: expected a comma after the closing quote, found "
                      "'%c'",
                      path, line, index + 1, *end),
             NULL;
  } else {
    last = end = f + strcspn(f, ",");
  }
  *p = *end == ',' ? end + 1 : NULL;
  *last = '\0'; /* last <= end: after *end was read */
  f += strspn(f, " \t");
  for (last = f + strlen(f); last > f && (last[-1] == ' ' || last[-1] == '\t');)
    *--last = '\0';
  return f;
}

/* The CSV header: which column each field is; every field must be named once
 * (other columns, named or not, are skipped). */
static int csv_header(const char *path, long line, char *text, long cols[NCOLS], long *ncols,
                      npu_err_t *err) {
  for (int c = 0; c < NCOLS; c++)
    cols[c] = -1;
  *ncols = 0;
  for (char *p = text; p; (*ncols)++) {
    char *name = csv_field(&p, path, line, *ncols, err);
    if (!name)
      return -1;
    for (int c = 0; c < NCOLS; c++)
      if (strcmp(name, col_names[c]) == 0) {
        if (cols[c] >= 0)
          return npu_err_set(err, "%s:%ld: %s: expected each column named once, found it "
                          "twice",
                          path, line, col_names[c]),
                 -1;
        cols[c] = *ncols;
      }
  }
  for (int c = 0; c < NCOLS; c++)
    if (cols[c] < 0)
      return npu_err_set(err, "%s:%ld: expected a CSV header naming arrival_s, "
                      "prompt_tokens and output_tokens (or JSONL objects), found no %s column",
                      path, line, col_names[c]),
             -1;
  return 0;
}

static int csv_row(const char *path, long line, char *text, const long cols[NCOLS], long ncols,
                   serve_request_t *q, npu_err_t *err) {
  char *fields[NCOLS] = {NULL};
  long n = 0;
  for (char *p = text; p; n++) {
    char *f = csv_field(&p, path, line, n, err);
    if (!f)
      return -1;
    for (int c = 0; c < NCOLS; c++)
      if (cols[c] == n)
        fields[c] = f;
  }
  if (n != ncols)
    return npu_err_set(err, "%s:%ld: expected %ld fields as in the header, found %ld", path,
                    line, ncols, n),
           -1;
  for (int c = 0; c < NCOLS; c++) {
    double v;
    if (!jsonfile_decimal(fields[c], &v))
      return npu_err_set(err, "%s:%ld: %s: expected a decimal number, found \"%.40s\"", path,
                      line, col_names[c], fields[c]),
             -1;
    if (set_field(q, c, v, fields[c], path, line, err))
      return -1;
  }
  return 0;
}

static bool blank(const char *s) {
  return s[strspn(s, " \t")] == '\0';
}

/* ---- reading a trace line by line ---- */

/* A trace streamed through zlib in chunks: memory holds one line (at most
 * SERVE_TRACE_MAX_LINE bytes) and a chunk, however long the trace. */
typedef struct {
  const char *path;
  jsonfile_stream_t *in;
  char *buf;
  size_t cap, start, end, scanned; /* the unread bytes are buf[start, end) */
  unsigned long long inflated;     /* bytes read so far, after gunzip */
  bool eof;
  long line; /* of the line returned last */
} line_reader_t;

#define READ_CHUNK (64u << 10)

/* Reads more into r->buf, keeping its unread bytes. Returns 0, or -1 with err
 * set (the file's size cap, a corrupt gzip stream, no memory). */
static int fill(line_reader_t *r, npu_err_t *err) {
  if (r->start > 0) { /* move the partial line to the front */
    memmove(r->buf, r->buf + r->start, r->end - r->start);
    r->end -= r->start;
    r->scanned -= r->start;
    r->start = 0;
  }
  if (r->cap - r->end < READ_CHUNK + 1) {
    size_t cap = r->end + READ_CHUNK + 1;
    char *grown = realloc(r->buf, cap);
    if (!grown)
      return npu_err_set(err, "%s:%ld: out of memory", r->path, r->line + 1), -1;
    r->buf = grown;
    r->cap = cap;
  }
  char why[256];
  long got = jsonfile_stream_read(r->in, r->buf + r->end, READ_CHUNK, why, sizeof why);
  if (got < 0)
    return npu_err_set(err, "%s: expected a request trace (JSONL or CSV), found %s", r->path,
                    why),
           -1;
  r->eof = got == 0;
  r->end += (size_t)got;
  r->inflated += (unsigned long long)got;
  if (r->inflated > SERVE_TRACE_MAX_BYTES)
    return npu_err_set(err, "%s: expected a request trace (JSONL or CSV), found %s over %lu MiB", r->path,
                    jsonfile_stream_gzip(r->in) ? "a gzip stream inflating to" : "a file",
                    SERVE_TRACE_MAX_BYTES >> 20),
           -1;
  return 0;
}

/* The next line, without its "\n" or "\r\n", NUL-terminated, in *text (valid
 * until the next call). Returns 1, 0 at the end of the trace, or -1 with err
 * set: a line over SERVE_TRACE_MAX_LINE bytes, a NUL byte, a read error. */
static int next_line(line_reader_t *r, char **text, size_t *len, npu_err_t *err) {
  char *nl;
  for (;;) {
    while (r->start < r->end && r->buf[r->start] == '\n') { /* empty lines, in bulk */
      r->start++;
      r->line++;
    }
    r->scanned = r->scanned > r->start ? r->scanned : r->start;
    if (r->scanned < r->end && (nl = memchr(r->buf + r->scanned, '\n', r->end - r->scanned)))
      break;
    r->scanned = r->end;
    if (r->end - r->start > SERVE_TRACE_MAX_LINE + 1) /* + 1: a "\r" before the "\n" */
      return npu_err_set(err, "%s:%ld: expected a line of at most %u bytes, found a longer one", r->path,
                      r->line + 1, SERVE_TRACE_MAX_LINE),
             -1;
    if (r->eof) {
      if (r->start == r->end)
        return 0;
      nl = r->buf + r->end; /* the last line has no newline: cap > end */
      break;
    }
    if (fill(r, err))
      return -1;
  }
  r->line++;
  *text = r->buf + r->start;
  *len = (size_t)(nl - *text);
  size_t next = (size_t)(nl - r->buf) + (nl < r->buf + r->end);
  r->start = r->scanned = next;
  if (*len > 0 && (*text)[*len - 1] == '\r')
    (*len)--;
  if (*len > SERVE_TRACE_MAX_LINE)
    return npu_err_set(err, "%s:%ld: expected a line of at most %u bytes, found a longer one",
                    r->path, r->line, SERVE_TRACE_MAX_LINE),
           -1;
  (*text)[*len] = '\0';
  const char *nul = memchr(*text, '\0', *len);
  if (nul)
    return npu_err_set(err, "%s:%ld:%ld: expected text, found a NUL byte", r->path, r->line,
                    (long)(nul - *text) + 1),
           -1;
  if (r->line == 1 && *len >= 3 && memcmp(*text, "\xef\xbb\xbf", 3) == 0) {
    *text += 3; /* a UTF-8 byte order mark, as spreadsheets write CSV */
    *len -= 3;
  }
  return 1;
}

/* Appends a request to out, the array growing up to SERVE_MAX_REQUESTS (a
 * request past it is refused before anything grows). NULL with err set. */
static serve_request_t *add_request(serve_requests_t *out, long *cap, const char *path, long line,
                                    npu_err_t *err) {
  if (out->n == SERVE_MAX_REQUESTS)
    return npu_err_set(err, "%s:%ld: expected at most %d requests (the most one run holds), found more",
                    path, line, SERVE_MAX_REQUESTS),
           NULL;
  if (out->n == *cap) {
    long grown = *cap ? *cap * 2 : 1024;
    grown = grown < SERVE_MAX_REQUESTS ? grown : SERVE_MAX_REQUESTS;
    serve_request_t *v = realloc(out->v, (size_t)grown * sizeof *v);
    if (!v)
      return npu_err_set(err, "%s:%ld: out of memory for %ld requests", path, line, grown),
             NULL;
    out->v = v;
    *cap = grown;
  }
  serve_request_t *q = &out->v[out->n];
  *q = (serve_request_t){0, 0, 0, line};
  return q;
}

/* Reads the trace's lines into out (which grows): the first non-blank line
 * tells the format ('{': JSONL, else a CSV header). */
static int parse_lines(line_reader_t *r, serve_requests_t *out, npu_err_t *err) {
  const char *path = r->path;
  bool jsonl = false, header = true;
  long cols[NCOLS] = {-1, -1, -1}, ncols = 0, cap = 0;
  char *text;
  size_t len;
  int got;
  while ((got = next_line(r, &text, &len, err)) == 1) {
    if (blank(text))
      continue;
    if (header) {
      jsonl = text[strspn(text, " \t")] == '{';
      header = false;
      if (!jsonl) {
        if (csv_header(path, r->line, text, cols, &ncols, err))
          return -1;
        continue;
      }
    }
    serve_request_t *q = add_request(out, &cap, path, r->line, err);
    if (!q || (jsonl ? jsonl_row(path, r->line, text, len, q, err)
                     : csv_row(path, r->line, text, cols, ncols, q, err)))
      return -1;
    if (out->n > 0 && q->arrival_s < out->v[out->n - 1].arrival_s) {
      char least[32], found[32]; /* in full: 9 digits could print the two alike */
      jsonfile_format_number(out->v[out->n - 1].arrival_s, least, sizeof least);
      jsonfile_format_number(q->arrival_s, found, sizeof found);
      return npu_err_set(err, "%s:%ld: arrival_s: expected arrivals in time order (at "
                      "least %s, line %ld's), found %s",
                      path, r->line, least, out->v[out->n - 1].line, found),
             -1;
    }
    out->n++;
  }
  if (got < 0)
    return -1;
  if (out->n == 0)
    return npu_err_set(err, "%s: expected at least one request, found none", path), -1;
  return 0;
}

int serve_requests_read(const char *path, serve_requests_t *out, npu_err_t *err) {
  out->v = NULL;
  out->n = 0;
  char why[256];
  line_reader_t r = {path, jsonfile_stream_open(path, why, sizeof why), NULL, 0, 0, 0, 0, 0, false, 0};
  if (!r.in)
    return npu_err_set(err, "%s: expected a request trace (JSONL or CSV), found %s", path,
                    why),
           -1;
  int rc = parse_lines(&r, out, err);
  jsonfile_stream_close(r.in);
  free(r.buf);
  if (rc)
    serve_requests_free(out);
  return rc;
}

int serve_requests_check_context(const serve_requests_t *r, const char *path, int context,
                                 npu_err_t *err) {
  for (long i = 0; i < r->n; i++) {
    const serve_request_t *q = &r->v[i];
    if ((long)q->prompt_tokens + q->output_tokens <= context)
      continue;
    char where[SERVE_PATH_MAX + 32];
    if (q->line)
      snprintf(where, sizeof where, "%s:%ld", path, q->line);
    else
      snprintf(where, sizeof where, "%s: generated request %ld", path, i);
    return npu_err_set(err, "%s: prompt_tokens + output_tokens: expected at most the "
                    "context, model.seq_len = %d, found %d + %d",
                    where, context, q->prompt_tokens, q->output_tokens),
           -1;
  }
  return 0;
}

void serve_requests_free(serve_requests_t *r) {
  free(r->v);
  r->v = NULL;
  r->n = 0;
}
