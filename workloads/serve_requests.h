/* serve_requests.h - the requests a serving simulation replays: when each
 * arrives, how long its prompt is and how many tokens it generates.
 *
 * They come from a trace (JSONL: one object per line with arrival_s,
 * prompt_tokens, output_tokens; or CSV with a header naming those columns;
 * either optionally gzip) or from the generator of the serving config
 * (Poisson arrivals, length distributions, a seed: the same seed gives the
 * same requests on every machine, the random numbers being our own). Nothing
 * here knows about the chip or SimGrid. */
#ifndef NPUSIM_SERVE_REQUESTS_H
#define NPUSIM_SERVE_REQUESTS_H

#include <stddef.h>

#include "serve_cfg.h"

typedef struct {
  double arrival_s;
  int prompt_tokens;
  int output_tokens;
  int line; /* of the trace (1-based), 0 when generated */
} serve_request_t;

typedef struct {
  serve_request_t *v;
  long n;
} serve_requests_t;

/* The largest trace read, bytes (after gunzip). */
#define SERVE_TRACE_MAX_BYTES (1ul << 32)

/* Draws cfg->count requests. Returns 0, or -1 with the reason in err (out of
 * memory). */
int serve_requests_generate(const serving_cfg_t *cfg, serve_requests_t *out, char *err,
                            size_t err_len);

/* Reads a trace, JSONL or CSV (told by the first character: '{' is JSONL).
 * Checks every row: numbers of the right kind (arrival_s >= 0 and finite,
 * token counts >= 1 whole numbers), arrivals in time order, at least one
 * request. Returns 0, or -1 with "PATH:LINE: FIELD: expected ..., found ..."
 * (or "PATH: expected ...") in err. */
int serve_requests_read(const char *path, serve_requests_t *out, char *err, size_t err_len);

/* Refuses a request whose prompt and output do not fit the context: "WHERE:
 * prompt_tokens + output_tokens: expected at most CONTEXT (model.seq_len),
 * found P + O" where WHERE is path:line, or the generated request's index. */
int serve_requests_check_context(const serve_requests_t *r, const char *path, int context,
                                 char *err, size_t err_len);

void serve_requests_free(serve_requests_t *r);

#endif
