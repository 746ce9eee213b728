/* fuzz_serve.c - libFuzzer target for the serving request traces.
 *
 * Input: the bytes of a request trace (JSONL or CSV, plain or gzip). Whatever
 * they hold, reading must end in requests that satisfy everything the
 * simulation relies on (at least one and at most SERVE_MAX_REQUESTS; arrivals
 * in [0, SERVE_MAX_ARRIVAL_S], never -0, and in time order; token counts whole
 * and in [1, 1e8]; increasing line numbers) or in one line naming the file -
 * never a crash, leak or hang. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "npu_err.h"
#include "serve_requests.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_requests(const serve_requests_t *r) {
  if (r->n < 1 || r->n > SERVE_MAX_REQUESTS)
    abort();
  for (long i = 0; i < r->n; i++) {
    const serve_request_t *q = &r->v[i];
    if (!(q->arrival_s >= 0 && q->arrival_s <= SERVE_MAX_ARRIVAL_S) || signbit(q->arrival_s) ||
        q->line < 1 || q->prompt_tokens < 1 || q->prompt_tokens > 100000000 ||
        q->output_tokens < 1 || q->output_tokens > 100000000)
      abort();
    if (i > 0 && (q->arrival_s < r->v[i - 1].arrival_s || q->line <= r->v[i - 1].line))
      abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[] = "/tmp/npusim-fuzz-serve-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    abort();
  FILE *f = fdopen(fd, "wb");
  if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
    abort();
  serve_requests_t r;
  npu_err_t err = {""};
  if (serve_requests_read(path, &r, &err) == 0) {
    check_requests(&r);
    serve_requests_free(&r);
  } else if (!npu_err_one_line(err.msg) || strncmp(err.msg, path, strlen(path)) != 0 || r.v || r.n) {
    abort();
  }
  unlink(path);
  return 0;
}
