/* op_list.h - the distinct compute ops of a trace, as a table a user times on
 * their own device (scripts/measure/measure_ops.py --ops) to calibrate npusim on the
 * kernels of their own model. */
#ifndef NPUSIM_OP_LIST_H
#define NPUSIM_OP_LIST_H

#include <stddef.h>

#include "trace.h"
#include "npu_err.h"

/* Writes the distinct shaped compute ops of the trace's programs (read with
 * replay_vocab) to path as CSV: op, shape (dims joined by 'x'), dtype,
 * out_dtype, causal, layout (matmuls: nn, nt, tn, tt), calls (occurrences in
 * the programs). Written whole or not at all. Returns 0, or -1 with a reason in
 * err. */
int op_list_write(const char *path, const trace_t *trace, npu_err_t *err);

#endif
