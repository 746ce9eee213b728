/* coll_fit.c - link parameters fitted to measured collectives; see coll_fit.h. */
#include "coll_fit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll_matrix.h"
#include "coll_run.h"

#define EFF_MIN 0.02
#define LAT_MAX_S 500e-6
#define GRID_EFF 25
#define GRID_LAT 16
#define SEARCH_ROUNDS 40

const char *const coll_fit_eff_keys[FIT_LEVELS] = {"node.scale_up.efficiency",
                                                   "cluster.scale_out.efficiency"};
const char *const coll_fit_lat_keys[FIT_LEVELS] = {"node.scale_up.latency_us",
                                                   "cluster.scale_out.latency_us"};

bool coll_fit_row_fitted(const coll_fit_opts_t *o, int i) {
  return o->fit_all_rows || i % 2 == 0;
}

static link_cfg_t *level_link(system_cfg_t *s, int level) {
  return level == FIT_SCALE_UP ? &s->node.scale_up.link : &s->cluster.scale_out.nic;
}

/* A log's collective, ranks and ranks per server, from it or the options. */
static int complete_log(const coll_fit_opts_t *o, coll_log_t *log, npu_err_t *err) {
  if (log->op < 0)
    log->op = o->op;
  if (log->op < 0)
    return npu_err_set(err, "%s: expected the collective (nccl-tests 2.17's \"Collective test "
                       "starting\" line, or --op), found neither", log->path);
  if (o->ranks > 0)
    log->ranks = o->ranks;
  if (log->ranks <= 1)
    return npu_err_set(err, "%s: expected its ranks (nccl-tests' \"# Rank\" lines, or --ranks), "
                       "found %s", log->path, log->ranks ? "1" : "none");
  if (o->ranks_per_node > 0)
    log->ranks_per_node = o->ranks_per_node;
  if (log->ranks_per_node <= 0)
    log->ranks_per_node = log->ranks < o->sys->node.npus ? log->ranks : o->sys->node.npus;
  return 0;
}

/* Predicted times of one log's sizes on sys: -1 with the reason. */
static int predict(const coll_fit_opts_t *o, const system_cfg_t *sys, const coll_log_t *log,
                   double *time_s, npu_err_t *err) {
  coll_matrix_t m = {.op = (coll_op_t)log->op,
                     .ranks = log->ranks,
                     .ranks_per_node = log->ranks_per_node,
                     .dtype = CHIP_DTYPE_FP32,
                     .nsizes = log->nrows,
                     .factor = 2};
  memcpy(m.sizes, log->bytes, (size_t)log->nrows * sizeof *log->bytes);
  coll_run_opts_t ro = {.node = &sys->node,
                        .cluster = &sys->cluster,
                        .dies_per_package = sys->chip.dies_per_package,
                        .coll = sys->coll,
                        .algo = o->algo,
                        .analytic = true};
  coll_result_t res;
  npu_err_t why = {""};
  if (coll_run(&ro, &m, &res, &why))
    return npu_err_set(err, "%s: cannot run its %d ranks (%d per server) on the system: %s",
                       log->path, log->ranks, log->ranks_per_node, why.msg);
  for (int i = 0; i < log->nrows; i++)
    time_s[i] = res.rows[i].time_s;
  coll_result_free(&res);
  return 0;
}

/* The squared log error of the level's fitted sizes with the level's link at
 * (eff, lat): the objective. */
static double cost(const coll_fit_opts_t *o, system_cfg_t *s, const coll_fit_result_t *r,
                   int level, double eff, double lat) {
  link_cfg_t *link = level_link(s, level);
  link->efficiency = eff;
  link->latency_s = lat;
  double sum = 0, t[COLL_LOG_MAX_ROWS];
  npu_err_t ignored;
  for (int k = 0; k < r->nlogs; k++) {
    const coll_log_t *lg = &r->logs[k];
    if (r->level[k] != level)
      continue;
    if (predict(o, s, lg, t, &ignored))
      return INFINITY;
    for (int i = 0; i < lg->nrows; i++)
      if (coll_fit_row_fitted(o, i)) {
        double e = log(t[i] / lg->time_s[i]);
        sum += e * e;
      }
  }
  return sum;
}

/* The latency grid: 0, then geometric steps up to LAT_MAX_S. */
static double grid_lat(int j) {
  return j == 0 ? 0 : LAT_MAX_S * pow(2, j - (GRID_LAT - 1));
}

static void fit_level(const coll_fit_opts_t *o, system_cfg_t *s, coll_fit_result_t *r, int level) {
  double best = INFINITY, be = 1, bl = 0;
  for (int i = 0; i < GRID_EFF; i++)
    for (int j = 0; j < GRID_LAT; j++) {
      double e = EFF_MIN + (1 - EFF_MIN) * i / (GRID_EFF - 1), l = grid_lat(j);
      double c = cost(o, s, r, level, e, l);
      if (c < best)
        best = c, be = e, bl = l;
    }
  /* pattern search: a step each way in each parameter, halving when none helps */
  double de = (1 - EFF_MIN) / (GRID_EFF - 1), dl = fmax(bl, 1e-6);
  for (int round = 0; round < SEARCH_ROUNDS; round++) {
    bool moved = false;
    const double tries[4][2] = {{de, 0}, {-de, 0}, {0, dl}, {0, -dl}};
    for (int t = 0; t < 4; t++) {
      double e = be + tries[t][0], l = bl + tries[t][1];
      if (e < EFF_MIN || e > 1 || l < 0 || l > LAT_MAX_S)
        continue;
      double c = cost(o, s, r, level, e, l);
      if (c < best)
        best = c, be = e, bl = l, moved = true;
    }
    if (!moved)
      de /= 2, dl /= 2;
  }
  link_cfg_t *link = level_link(s, level);
  link->efficiency = be;
  link->latency_s = bl;
  r->eff[level][1] = be;
  r->lat_s[level][1] = bl;
}

/* Geometric mean |error| of every log's fitted and held-out sizes. */
static void summarise(const coll_fit_opts_t *o, coll_fit_result_t *r) {
  double sum[2][2] = {{0}};
  for (int k = 0; k < r->nlogs; k++)
    for (int i = 0; i < r->logs[k].nrows; i++) {
      int set = coll_fit_row_fitted(o, i) ? 0 : 1;
      for (int when = 0; when < 2; when++)
        sum[set][when] += fabs(log(r->pred_s[k][when][i] / r->logs[k].time_s[i]));
      r->n[set]++;
    }
  for (int set = 0; set < 2; set++)
    for (int when = 0; when < 2; when++)
      r->geomean[set][when] = r->n[set] ? expm1(sum[set][when] / r->n[set]) : 0;
}

int coll_fit_run(const coll_fit_opts_t *o, coll_fit_result_t *r, npu_err_t *err) {
  memset(r, 0, sizeof *r);
  if (o->nlogs < 1 || o->nlogs > COLL_FIT_MAX_LOGS)
    return npu_err_set(err, "--collectives: expected 1 to %d logs, found %d", COLL_FIT_MAX_LOGS,
                       o->nlogs);
  r->logs = calloc((size_t)o->nlogs, sizeof *r->logs);
  r->level = calloc((size_t)o->nlogs, sizeof *r->level);
  r->pred_s = calloc((size_t)o->nlogs, sizeof *r->pred_s);
  r->nlogs = o->nlogs;
  system_cfg_t s = *o->sys;
  for (int k = 0; k < o->nlogs; k++) {
    coll_log_t *log = &r->logs[k];
    if (coll_log_read(o->logs[k], log, err) || complete_log(o, log, err) ||
        predict(o, &s, log, r->pred_s[k][0], err))
      return -1;
    r->level[k] = log->ranks > log->ranks_per_node ? FIT_SCALE_OUT : FIT_SCALE_UP;
    r->fitted[r->level[k]] = true;
  }
  for (int level = 0; level < FIT_LEVELS; level++) {
    const link_cfg_t *link = level_link(&s, level);
    r->eff[level][0] = r->eff[level][1] = link->efficiency;
    r->lat_s[level][0] = r->lat_s[level][1] = link->latency_s;
  }
  for (int level = 0; level < FIT_LEVELS; level++) /* scale-up first: scale-out runs cross it */
    if (r->fitted[level])
      fit_level(o, &s, r, level);
  for (int k = 0; k < o->nlogs; k++)
    if (predict(o, &s, &r->logs[k], r->pred_s[k][1], err))
      return -1;
  summarise(o, r);
  return 0;
}

void coll_fit_free(coll_fit_result_t *r) {
  free(r->logs);
  free(r->level);
  free(r->pred_s);
  memset(r, 0, sizeof *r);
}
