/* trace_error.c - the one error line of the trace reader and its checks; see
 * trace_internal.h. */
#include <stdarg.h>
#include <stdio.h>

#include "trace_internal.h"

int trace_fail(trace_ctx_t *c, int rank, int op_id, const char *fmt, ...) {
  char what[TRACE_ERR_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (rank >= 0 && op_id >= 0)
    npu_err_set(c->err, "%s: rank %d op %d: %s", c->name, rank, op_id, what);
  else if (rank >= 0)
    npu_err_set(c->err, "%s: rank %d: %s", c->name, rank, what);
  else
    npu_err_set(c->err, "%s: %s", c->name, what);
  for (char *p = c->err ? c->err->msg : ""; *p; p++) /* one line, whatever names the file holds */
    if ((unsigned char)*p < 0x20)
      *p = ' ';
  return -1;
}
