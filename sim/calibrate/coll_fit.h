/* coll_fit.h - `npusim calibrate --collectives LOG...`: the link parameters a
 * cluster's measured collectives determine, fitted so that `npusim coll`
 * (analytic) predicts the logs (coll_log.h).
 *
 * Per level: logs of one server fit the scale-up link's efficiency and
 * latency (node.scale_up.efficiency, .latency_us); logs over several servers
 * the NIC's (cluster.scale_out.efficiency, .latency_us), with the scale-up
 * link as fitted (or as configured). The fit minimises the squared log error
 * of the predicted times over each log's even sizes (the first, third, ...);
 * the odd ones are held out and reported apart (--fit-rows all: every size
 * fitted). A grid over the two parameters, then a pattern search that halves
 * its steps, from the best grid point: the model's algorithm and protocol
 * switches make the error surface uneven, and two parameters are few.
 * Nothing else is fitted: a link's bandwidth is a public fact. */
#ifndef NPUSIM_COLL_FIT_H
#define NPUSIM_COLL_FIT_H

#include <stdbool.h>

#include "coll_log.h"
#include "system.h"

#define COLL_FIT_MAX_LOGS 64

typedef struct {
  const system_cfg_t *sys;
  const char *const *logs;
  int nlogs;
  int op;              /* coll_op_t for logs that do not name theirs; -1: none given */
  int ranks;           /* for logs that do not count theirs; 0: none given */
  int ranks_per_node;  /* 0: the log's, else the server's NPUs */
  const char *algo;    /* forced algorithms, as `coll --algo` (the logs' NCCL_ALGO), or NULL */
  bool fit_all_rows;
} coll_fit_opts_t;

enum { FIT_SCALE_UP, FIT_SCALE_OUT, FIT_LEVELS };

typedef struct {
  bool fitted[FIT_LEVELS];      /* a level some log determines */
  double eff[FIT_LEVELS][2];    /* before, after */
  double lat_s[FIT_LEVELS][2];
  coll_log_t *logs;
  int nlogs;
  int *level;                   /* per log */
  double (*pred_s)[2][COLL_LOG_MAX_ROWS]; /* per log: before, after */
  double geomean[2][2];         /* [fitted, held out][before, after]: |error| */
  int n[2];
} coll_fit_result_t;

/* Reads the logs and fits; -1 with the reason (a log unreadable, its
 * collective or ranks unknown, a run the system cannot hold). */
int coll_fit_run(const coll_fit_opts_t *o, coll_fit_result_t *r, npu_err_t *err);
void coll_fit_free(coll_fit_result_t *r);

/* The config keys of a level's efficiency and latency. */
extern const char *const coll_fit_eff_keys[FIT_LEVELS], *const coll_fit_lat_keys[FIT_LEVELS];

/* Whether size i of a log is fitted (else held out). */
bool coll_fit_row_fitted(const coll_fit_opts_t *o, int i);

#endif
