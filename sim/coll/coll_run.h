/* coll_run.h - runs what a coll_matrix_t names: the ranks laid out on the
 * system's topology, each size planned (an algorithm chosen or forced) and
 * timed in either fidelity, one after another, and the links of the largest
 * size measured if asked. Printing is coll_report.h's. */
#ifndef NPUSIM_COLL_RUN_H
#define NPUSIM_COLL_RUN_H

#include <stdbool.h>

#include "cluster.h"
#include "coll.h"
#include "coll_matrix.h"
#include "linkstats.h"
#include "npu_err.h"

/* How to run a matrix. Its errors name the command's flags (--algo,
 * --ranks-per-node, --fidelity), where the values came from. */
typedef struct {
  const node_cfg_t *node;
  const cluster_cfg_t *cluster;
  int dies_per_package;
  coll_cfg_t coll;         /* the system's collectives config */
  const char *system_path; /* its file, named by a fault's error */
  const char *algo;        /* forced algorithms ("A[,A1[,A2]]"), or NULL */
  bool analytic;           /* fidelity: analytic, else flow */
  bool links;              /* measure the largest size's links */
  bool plain_rounds;       /* flow: every round in SimGrid (NPUSIM_FLOW_COLLAPSE=0) */
  /* analytic: times the sizes rank-paced where coll_rank_paced says so, one
   * after another from 0 (replay_contend_scheds: the replay's contention
   * model, a layer above); NULL: phase-paced always */
  void (*time_rank_paced)(const topo_t *topo, const coll_cfg_t *cfg,
                          const coll_sched_t *const *scheds, int n, double *times_s);
} coll_run_opts_t;

/* One size's result. */
typedef struct {
  double bytes, time_s;
  char algo[64]; /* the plan's name */
} coll_row_t;

/* A run's results: a row per size of the matrix, on the topology they ran on. */
typedef struct {
  topo_t topo;
  coll_row_t *rows;
  int nrows;
  linkstats_t stats; /* the largest size's links, if opts.links */
  int closed;        /* flow: sizes timed in closed form (coll_flow_run) */
} coll_result_t;

/* Runs m. Returns 0 with *r filled (free it with coll_result_free), or -1
 * with a one-line error in err and nothing to free. */
int coll_run(const coll_run_opts_t *opts, const coll_matrix_t *m, coll_result_t *r, npu_err_t *err);

void coll_result_free(coll_result_t *r);

#endif
