/* coll_fit.h - `npusim calibrate --collectives LOG...`: the link parameters a
 * cluster's measured collectives determine, fitted so that `npusim coll`
 * (analytic) predicts the logs (coll_log.h).
 *
 * Per level: logs of one server fit the scale-up link's efficiency and
 * latency (node.scale_up.efficiency, .latency_us); logs over several servers
 * the NIC's (cluster.scale_out.efficiency, .latency_us), with the scale-up
 * link as fitted (or as configured). The collective's fixed cost
 * (collectives.op_overhead_us) is not fitted: for one algorithm on one
 * number of ranks it and a link's latency move every size alike (its steps
 * are fixed), so the logs cannot tell them apart; the link latency takes the
 * difference, which may not carry to the other level's algorithms (the
 * report warns of a log the fit made worse). With --algo nvls, one-server
 * logs fit NVLS's pipeline instead (collectives.nvls.latency_us and
 * .chunk_step_us, coll_cfg.h): its data moves at the link rate that ring
 * logs fit, and its chunk steps change with the size as NCCL's chunk does,
 * so the two are told apart. The fit minimises
 * the squared log error of the predicted times over each log's even sizes
 * (the first, third, ...); the odd ones are held out and reported apart
 * (--fit-rows all: every size fitted). A grid over the parameters, then a
 * pattern search that halves its steps, from the best grid point: the
 * model's algorithm and protocol switches make the error surface uneven,
 * and two parameters are few. Nothing else is fitted: a link's bandwidth
 * is a public fact. */
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

/* The parameters a fit may move, in the config's units (us for times). */
typedef enum {
  FIT_UP_EFF,
  FIT_UP_LAT,
  FIT_OUT_EFF,
  FIT_OUT_LAT,
  FIT_NVLS_LAT,
  FIT_NVLS_STEP,
  FIT_PARAMS
} coll_fit_param_t;

extern const char *const coll_fit_keys[FIT_PARAMS];

typedef struct {
  bool fitted[FIT_PARAMS];
  double before[FIT_PARAMS], after[FIT_PARAMS];
  int level_logs[FIT_LEVELS];   /* logs of each level */
  coll_log_t *logs;
  int nlogs;
  int *level;                   /* per log */
  double (*pred_s)[2][COLL_LOG_MAX_ROWS]; /* per log: before, after */
  double geomean[2][2];         /* [fitted, held out][before, after]: |error| */
  int n[2];
  double (*log_geomean)[2];     /* per log: |error| over all its sizes, before and after */
} coll_fit_result_t;

/* Reads the logs and fits; -1 with the reason (a log unreadable, its
 * collective or ranks unknown, a run the system cannot hold). */
int coll_fit_run(const coll_fit_opts_t *o, coll_fit_result_t *r, npu_err_t *err);
void coll_fit_free(coll_fit_result_t *r);

/* Whether parameter p ended at an end of its range: the model cannot reach
 * the measurements by it (a cost it lacks, or one it overstates). */
bool coll_fit_at_bound(const coll_fit_result_t *r, int p);

/* Whether size i of a log is fitted (else held out). */
bool coll_fit_row_fitted(const coll_fit_opts_t *o, int i);

#endif
