/* coll_fit.c - link parameters fitted to measured collectives; see coll_fit.h. */
#include "coll_fit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll_matrix.h"
#include "coll_run.h"
#include "replay_contend.h"

#define EFF_MIN 0.02
#define GRID_EFF 13
#define GRID_TIME 10        /* 0, then geometric steps up to the time's bound */
#define SEARCH_ROUNDS 40

const char *const coll_fit_keys[FIT_PARAMS] = {"node.scale_up.efficiency",
                                               "node.scale_up.latency_us",
                                               "cluster.scale_out.efficiency",
                                               "cluster.scale_out.latency_us",
                                               "collectives.nvls.latency_us",
                                               "collectives.nvls.chunk_step_us"};

/* Each parameter's upper bound, and whether it is an efficiency (else a
 * latency, us). */
static const double param_max[FIT_PARAMS] = {1, 500, 1, 500, 500, 100};
static bool is_eff(int p) {
  return p == FIT_UP_EFF || p == FIT_OUT_EFF;
}

bool coll_fit_at_bound(const coll_fit_result_t *r, int p) {
  double lo = is_eff(p) ? EFF_MIN : 0;
  return r->fitted[p] && (r->after[p] <= lo || r->after[p] >= param_max[p]);
}

bool coll_fit_row_fitted(const coll_fit_opts_t *o, int i) {
  return o->fit_all_rows || i % 2 == 0;
}

static double *param_field(system_cfg_t *s, int p) {
  switch (p) {
  case FIT_UP_EFF: return &s->node.scale_up.link.efficiency;
  case FIT_UP_LAT: return &s->node.scale_up.link.latency_s;
  case FIT_OUT_EFF: return &s->cluster.scale_out.nic.efficiency;
  case FIT_OUT_LAT: return &s->cluster.scale_out.nic.latency_s;
  case FIT_NVLS_LAT: return &s->coll.nvls.latency_s;
  default: return &s->coll.nvls.chunk_step_s;
  }
}

/* A parameter in the config's units (us for a time). */
static double get_param(system_cfg_t *s, int p) {
  return *param_field(s, p) * (is_eff(p) ? 1 : 1e6);
}

static void set_param(system_cfg_t *s, int p, double v) {
  *param_field(s, p) = v * (is_eff(p) ? 1 : 1e-6);
}

/* A log's collective, ranks and ranks per server, from it or the options. */
static int complete_log(const coll_fit_opts_t *o, coll_log_t *log, npu_err_t *err) {
  if (log->op >= 0 && o->op >= 0 && log->op != o->op)
    return npu_err_set(err, "%s: --op %s: expected the log's collective, found its %s", log->path,
                       coll_op_names[o->op], coll_op_names[log->op]);
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
                        .analytic = true,
                        .time_rank_paced = replay_contend_scheds};
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

/* The squared log error of the level's fitted sizes with the parameters at
 * v (np of them, indexed by which): the objective. */
static double cost(const coll_fit_opts_t *o, system_cfg_t *s, const coll_fit_result_t *r,
                   int level, const int *which, const double *v, int np) {
  for (int i = 0; i < np; i++)
    set_param(s, which[i], v[i]);
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

/* Grid point g of parameter p: efficiencies evenly from EFF_MIN to 1, times
 * 0 then geometric steps up to the bound. */
static double grid_value(int p, int g) {
  if (is_eff(p))
    return EFF_MIN + (1 - EFF_MIN) * g / (GRID_EFF - 1);
  return g == 0 ? 0 : param_max[p] * pow(2, g - (GRID_TIME - 1));
}

static int grid_points(int p) {
  return is_eff(p) ? GRID_EFF : GRID_TIME;
}

/* Fits np (at most 2) parameters (which) on the level's logs: every grid point, then a
 * pattern search from the best one, a step each way in each parameter,
 * halving the steps when none helps. */
static void fit_level(const coll_fit_opts_t *o, system_cfg_t *s, coll_fit_result_t *r, int level,
                      const int *which, int np) {
  double best = INFINITY, at[2] = {0}, v[2];
  int g[2] = {0}, total = 1;
  for (int i = 0; i < np; i++)
    total *= grid_points(which[i]);
  for (int n = 0; n < total; n++) {
    for (int i = 0, rest = n; i < np; i++) {
      g[i] = rest % grid_points(which[i]);
      rest /= grid_points(which[i]);
      v[i] = grid_value(which[i], g[i]);
    }
    double c = cost(o, s, r, level, which, v, np);
    if (c < best) {
      best = c;
      memcpy(at, v, sizeof v);
    }
  }
  double step[2];
  for (int i = 0; i < np; i++)
    step[i] = is_eff(which[i]) ? (1 - EFF_MIN) / (GRID_EFF - 1) : fmax(at[i], 0.01);
  for (int round = 0; round < SEARCH_ROUNDS; round++) {
    bool moved = false;
    for (int i = 0; i < np; i++)
      for (int sign = -1; sign <= 1; sign += 2) {
        memcpy(v, at, sizeof v);
        v[i] += sign * step[i];
        double lo = is_eff(which[i]) ? EFF_MIN : 0;
        if (v[i] < lo || v[i] > param_max[which[i]])
          continue;
        double c = cost(o, s, r, level, which, v, np);
        if (c < best) {
          best = c;
          memcpy(at, v, sizeof v);
          moved = true;
        }
      }
    if (!moved)
      for (int i = 0; i < np; i++)
        step[i] /= 2;
  }
  for (int i = 0; i < np; i++) {
    set_param(s, which[i], at[i]);
    r->after[which[i]] = at[i];
    r->fitted[which[i]] = true;
  }
}

/* Geometric mean |error| of every log's fitted and held-out sizes. */
static void summarise(const coll_fit_opts_t *o, coll_fit_result_t *r) {
  double sum[2][2] = {{0}};
  for (int k = 0; k < r->nlogs; k++) {
    double mine[2] = {0, 0};
    for (int i = 0; i < r->logs[k].nrows; i++) {
      int set = coll_fit_row_fitted(o, i) ? 0 : 1;
      for (int when = 0; when < 2; when++) {
        double e = fabs(log(r->pred_s[k][when][i] / r->logs[k].time_s[i]));
        sum[set][when] += e;
        mine[when] += e;
      }
      r->n[set]++;
    }
    for (int when = 0; when < 2; when++)
      r->log_geomean[k][when] = expm1(mine[when] / r->logs[k].nrows);
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
  r->log_geomean = calloc((size_t)o->nlogs, sizeof *r->log_geomean);
  r->nlogs = o->nlogs;
  system_cfg_t s = *o->sys;
  /* one-server logs ran NVLS when --algo forces it inside the server */
  coll_cfg_t forced = s.coll;
  npu_err_t ignored;
  bool nvls = o->algo && coll_apply_algo(o->algo, false, &forced, &ignored) == 0 &&
              forced.algo[0] == COLL_ALGO_NVLS;
  if (nvls && !s.coll.nvls.present)
    return npu_err_set(err, "--algo nvls: expected a system with collectives.nvls (the pipeline "
                       "the fit moves), found none");
  for (int k = 0; k < o->nlogs; k++) {
    coll_log_t *log = &r->logs[k];
    if (coll_log_read(o->logs[k], log, err) || complete_log(o, log, err) ||
        predict(o, &s, log, r->pred_s[k][0], err))
      return -1;
    r->level[k] = log->ranks > log->ranks_per_node ? FIT_SCALE_OUT : FIT_SCALE_UP;
    r->level_logs[r->level[k]]++;
  }
  for (int p = 0; p < FIT_PARAMS; p++)
    r->before[p] = r->after[p] = get_param(&s, p);
  for (int level = 0; level < FIT_LEVELS; level++) { /* scale-up first: scale-out runs cross it */
    if (!r->level_logs[level])
      continue;
    int which[2] = {level == FIT_SCALE_UP ? FIT_UP_EFF : FIT_OUT_EFF,
                    level == FIT_SCALE_UP ? FIT_UP_LAT : FIT_OUT_LAT};
    if (nvls && level == FIT_SCALE_UP)
      which[0] = FIT_NVLS_LAT, which[1] = FIT_NVLS_STEP;
    fit_level(o, &s, r, level, which, 2);
  }
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
  free(r->log_geomean);
  memset(r, 0, sizeof *r);
}
