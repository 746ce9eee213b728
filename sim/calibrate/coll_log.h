/* coll_log.h - measured collective times from the logs the benchmark tools
 * print: nccl-tests' *_perf tables (the layout `npusim coll --style
 * nccl-tests` writes, and real ones, from version 2.13 on) and hccl_test's
 * (`--style hccl-test`). What `npusim calibrate --collectives` fits.
 *
 * nccl-tests: the "#  Rank N ... on HOST device D" lines give the ranks and
 * the ranks per server (the same on every host); "# Collective test starting:
 * all_reduce_perf" (from 2.17) or the caller gives the collective; each data
 * row its size and the out-of-place time. hccl_test prints neither ranks nor
 * the collective: the caller gives them. Rows with a time of 0 or a size of 0
 * are left out; an in-place time is not read (the model has no difference). */
#ifndef NPUSIM_COLL_LOG_H
#define NPUSIM_COLL_LOG_H

#include "coll.h"
#include "npu_err.h"

#define COLL_LOG_MAX_ROWS 64

typedef enum { COLL_LOG_NCCL_TESTS, COLL_LOG_HCCL_TEST } coll_log_style_t;

typedef struct {
  const char *path;
  coll_log_style_t style;
  int op;              /* coll_op_t, or -1 when the log does not say */
  int ranks;           /* 0 when the log does not say */
  int ranks_per_node;  /* 0 when the log does not say */
  double bytes[COLL_LOG_MAX_ROWS], time_s[COLL_LOG_MAX_ROWS];
  int nrows;
} coll_log_t;

/* Reads one log; -1 with "PATH:LINE: ..." on anything it cannot read (no
 * table, a row that is not one, hosts with unequal ranks, over
 * COLL_LOG_MAX_ROWS rows). */
int coll_log_read(const char *path, coll_log_t *log, npu_err_t *err);

#endif
