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
#include "npu_err.h"

typedef struct {
  double arrival_s;
  int prompt_tokens;
  int output_tokens;
  long line; /* of the trace (1-based), 0 when generated */
} serve_request_t;

typedef struct {
  serve_request_t *v;
  long n;
} serve_requests_t;

/* The largest trace read, bytes (after gunzip, counted as they are read), and
 * its longest line. A trace is streamed: memory holds one line and the
 * requests (SERVE_MAX_REQUESTS in serve_cfg.h, 24 bytes each here), never the
 * file. */
#define SERVE_TRACE_MAX_BYTES (1ul << 30)
#define SERVE_TRACE_MAX_LINE (1u << 20)

/* The most tokens of a prompt or an output. */
#define SERVE_MAX_TOKENS 100000000

/* Draws cfg->count requests (at most SERVE_MAX_REQUESTS). Returns 0, or -1
 * with "serving.requests.KEY: expected ..., found ..." in err: too many
 * requests, arrivals past SERVE_MAX_ARRIVAL_S (count over rate_per_s), out of
 * memory. */
int serve_requests_generate(const serving_cfg_t *cfg, serve_requests_t *out, npu_err_t *err);

/* Reads a trace, JSONL or CSV (told by the first non-blank line: '{' is
 * JSONL, else a CSV header), gzip or plain, through jsonfile_stream_open's checks (no
 * FIFO, device or /proc file is read). Blank lines are skipped; lines end in
 * "\n" or "\r\n"; a UTF-8 byte order mark is skipped. CSV fields may be
 * quoted (RFC 4180, on one line); JSONL objects may hold other keys, not one
 * of the three twice. Checks every row: numbers of the right kind (CSV: plain
 * decimal, no hex, inf, nan or trailing text; arrival_s in [0, 1e18] s, token
 * counts whole in [1, 1e8]), arrivals in time order, at least one request and
 * at most SERVE_MAX_REQUESTS, refused before the array grows. Returns 0, or -1
 * with "PATH:LINE: FIELD: expected ..., found ..." (or "PATH: expected ...")
 * in err. */
int serve_requests_read(const char *path, serve_requests_t *out, npu_err_t *err);

/* Refuses a request whose prompt and output do not fit the context: "WHERE:
 * prompt_tokens + output_tokens: expected at most CONTEXT (model.seq_len),
 * found P + O" where WHERE is path:line, or the generated request's index. */
int serve_requests_check_context(const serve_requests_t *r, const char *path, int context,
                                 npu_err_t *err);

void serve_requests_free(serve_requests_t *r);

#endif
