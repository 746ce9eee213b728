/* trace_internal.h - shared by the trace reader and its checks. */
#ifndef NPUSIM_TRACE_INTERNAL_H
#define NPUSIM_TRACE_INTERNAL_H

#include "trace.h"
#include "npu_err.h"

#define TRACE_ERR_MAX 1024

typedef struct trace_names trace_names_t; /* the reader's name lookups */

typedef struct {
  const char *name;              /* the file, for messages */
  const trace_vocab_t *vocab;
  npu_err_t *err;
  int ranks;
  trace_names_t *names;          /* reading: the current program's name lookups */
} trace_ctx_t;

/* Formats "FILE: rank R op ID: <what>" (rank/op left out when < 0) on one line,
 * control characters made spaces; returns -1 (trace_error.c). */
int trace_fail(trace_ctx_t *c, int rank, int op_id, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The checks that need the whole trace (trace_check.c). */
int trace_check(trace_ctx_t *c, const trace_t *t);

#endif
