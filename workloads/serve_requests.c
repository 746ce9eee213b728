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

#define NPU_JSONL_ERR 512

/* ---- the generator: splitmix64, so every platform draws the same numbers ---- */

typedef struct {
  uint64_t state;
} rng_t;

static uint64_t rng_next(rng_t *r) {
  uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
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

int serve_requests_generate(const serving_cfg_t *cfg, serve_requests_t *out, char *err,
                            size_t err_len) {
  out->n = cfg->count;
  out->v = calloc((size_t)cfg->count, sizeof *out->v);
  if (!out->v)
    return snprintf(err, err_len, "serving.requests.count: out of memory for %d requests",
                    cfg->count),
           -1;
  rng_t arrivals = {(uint64_t)cfg->seed * 3 + 1}, prompts = {(uint64_t)cfg->seed * 3 + 2},
        outputs = {(uint64_t)cfg->seed * 3 + 3};
  double t = 0;
  for (long i = 0; i < out->n; i++) {
    if (cfg->rate_per_s > 0 && i > 0)
      t += -log(rng_unit(&arrivals)) / cfg->rate_per_s;
    out->v[i] = (serve_request_t){t, draw_length(&prompts, &cfg->prompt),
                                  draw_length(&outputs, &cfg->output), 0};
  }
  return 0;
}

/* ---- traces ---- */

enum { COL_ARRIVAL, COL_PROMPT, COL_OUTPUT, NCOLS };
static const char *const col_names[NCOLS] = {"arrival_s", "prompt_tokens", "output_tokens"};

/* A field's text as a value of its column, into the request. */
static int set_field(serve_request_t *q, int col, double v, const char *found, const char *path,
                     int line, char *err, size_t err_len) {
  if (col == COL_ARRIVAL) {
    if (!isfinite(v) || v < 0)
      return snprintf(err, err_len,
                      "%s:%d: arrival_s: expected a time >= 0 in seconds, found "
                      "%.40s",
                      path, line, found),
             -1;
    q->arrival_s = v;
    return 0;
  }
  if (!isfinite(v) || v < 1 || v > 1e8 || v != floor(v))
    return snprintf(err, err_len,
                    "%s:%d: %s: expected a whole number of tokens in [1, 1e8], "
                    "found %.40s",
                    path, line, col_names[col], found),
           -1;
  if (col == COL_PROMPT)
    q->prompt_tokens = (int)v;
  else
    q->output_tokens = (int)v;
  return 0;
}

static int jsonl_row(const char *path, int line, char *text, serve_request_t *q, char *err,
                     size_t err_len) {
  char why[NPU_JSONL_ERR];
  cJSON *o = jsonfile_parse("", text, strlen(text), why, sizeof why);
  if (!o) /* why is ":1:COL: expected ..." for this one line */
    return snprintf(err, err_len, "%s:%d%s", path, line,
                    why + (strncmp(why, ":1:", 3) == 0 ? 2 : 0)),
           -1;
  int rc = 0;
  if (!cJSON_IsObject(o)) {
    snprintf(err, err_len,
             "%s:%d: expected an object {\"arrival_s\": ..., \"prompt_tokens\": "
             "..., \"output_tokens\": ...}, found another value",
             path, line);
    rc = -1;
  }
  for (int c = 0; c < NCOLS && !rc; c++) {
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, col_names[c]);
    char found[48] = "no such key";
    if (f)
      jsonfile_describe(f, found, sizeof found);
    if (!f || !cJSON_IsNumber(f)) {
      snprintf(err, err_len, "%s:%d: %s: expected a number, found %s", path, line, col_names[c],
               found);
      rc = -1;
    } else {
      rc = set_field(q, c, f->valuedouble, found, path, line, err, err_len);
    }
  }
  cJSON_Delete(o);
  return rc;
}

/* The CSV header: which column each field is; every field must be named once. */
static int csv_header(const char *path, char *text, int cols[NCOLS], int *ncols, char *err,
                      size_t err_len) {
  for (int c = 0; c < NCOLS; c++)
    cols[c] = -1;
  int i = 0;
  for (char *tok = strtok(text, ","); tok; tok = strtok(NULL, ","), i++) {
    tok += strspn(tok, " \t\"");
    tok[strcspn(tok, " \t\"\r")] = '\0';
    for (int c = 0; c < NCOLS; c++)
      if (strcmp(tok, col_names[c]) == 0) {
        if (cols[c] >= 0)
          return snprintf(err, err_len,
                          "%s:1: %s: expected each column named once, found it "
                          "twice",
                          path, col_names[c]),
                 -1;
        cols[c] = i;
      }
  }
  *ncols = i;
  for (int c = 0; c < NCOLS; c++)
    if (cols[c] < 0)
      return snprintf(err, err_len,
                      "%s:1: expected a CSV header naming arrival_s, "
                      "prompt_tokens and output_tokens (or JSONL objects), found no %s column",
                      path, col_names[c]),
             -1;
  return 0;
}

static int csv_row(const char *path, int line, char *text, const int cols[NCOLS], int ncols,
                   serve_request_t *q, char *err, size_t err_len) {
  char *fields[64];
  int n = 0;
  for (char *p = text; n < 64;) {
    fields[n++] = p;
    char *comma = strchr(p, ',');
    if (!comma)
      break;
    *comma = '\0';
    p = comma + 1;
  }
  if (n != ncols)
    return snprintf(err, err_len, "%s:%d: expected %d fields as in the header, found %d", path,
                    line, ncols, n),
           -1;
  for (int c = 0; c < NCOLS; c++) {
    char *f = fields[cols[c]];
    f += strspn(f, " \t");
    f[strcspn(f, " \t\r")] = '\0';
    char *end;
    errno = 0;
    double v = strtod(f, &end);
    if (end == f || *end || errno == ERANGE)
      return snprintf(err, err_len, "%s:%d: %s: expected a number, found \"%.40s\"", path, line,
                      col_names[c], f),
             -1;
    if (set_field(q, c, v, f, path, line, err, err_len))
      return -1;
  }
  return 0;
}

static bool blank(const char *s) {
  return s[strspn(s, " \t\r")] == '\0';
}

/* Parses the text line by line into out (which grows). */
static int parse_lines(const char *path, char *text, serve_requests_t *out, char *err,
                       size_t err_len) {
  const char *first = text + strspn(text, " \t\r\n");
  bool jsonl = *first == '{';
  int cols[NCOLS], ncols = 0;
  long cap = 0;
  int line = 0;
  bool header = !jsonl;
  for (char *p = text; *p;) {
    char *nl = strchr(p, '\n');
    if (nl)
      *nl = '\0';
    line++;
    if (!blank(p)) {
      if (header) {
        if (csv_header(path, p, cols, &ncols, err, err_len))
          return -1;
        header = false;
      } else {
        if (out->n == cap) {
          cap = cap ? cap * 2 : 1024;
          serve_request_t *v = realloc(out->v, (size_t)cap * sizeof *v);
          if (!v)
            return snprintf(err, err_len, "%s: out of memory at line %d", path, line), -1;
          out->v = v;
        }
        serve_request_t *q = &out->v[out->n];
        q->line = line;
        if (jsonl ? jsonl_row(path, line, p, q, err, err_len)
                  : csv_row(path, line, p, cols, ncols, q, err, err_len))
          return -1;
        if (out->n > 0 && q->arrival_s < out->v[out->n - 1].arrival_s)
          return snprintf(err, err_len,
                          "%s:%d: arrival_s: expected arrivals in time order (at "
                          "least %.9g, line %d's), found %.9g",
                          path, line, out->v[out->n - 1].arrival_s, out->v[out->n - 1].line,
                          q->arrival_s),
                 -1;
        out->n++;
      }
    }
    p = nl ? nl + 1 : p + strlen(p);
  }
  if (out->n == 0)
    return snprintf(err, err_len, "%s: expected at least one request, found none", path), -1;
  return 0;
}

int serve_requests_read(const char *path, serve_requests_t *out, char *err, size_t err_len) {
  out->v = NULL;
  out->n = 0;
  char why[256];
  size_t len;
  char *text = jsonfile_read(path, SERVE_TRACE_MAX_BYTES, &len, why, sizeof why);
  if (!text)
    return snprintf(err, err_len, "%s: expected a request trace (JSONL or CSV), found %s", path,
                    why),
           -1;
  if (strlen(text) != len) {
    free(text);
    return snprintf(err, err_len, "%s: expected a text file, found a NUL byte", path), -1;
  }
  int rc = parse_lines(path, text, out, err, err_len);
  free(text);
  if (rc)
    serve_requests_free(out);
  return rc;
}

int serve_requests_check_context(const serve_requests_t *r, const char *path, int context,
                                 char *err, size_t err_len) {
  for (long i = 0; i < r->n; i++) {
    const serve_request_t *q = &r->v[i];
    if ((long)q->prompt_tokens + q->output_tokens <= context)
      continue;
    char where[SERVE_PATH_MAX + 32];
    if (q->line)
      snprintf(where, sizeof where, "%s:%d", path, q->line);
    else
      snprintf(where, sizeof where, "%s: generated request %ld", path, i);
    return snprintf(err, err_len,
                    "%s: prompt_tokens + output_tokens: expected at most the "
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
