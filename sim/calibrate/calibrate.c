/* calibrate.c - fitting chip parameters to measured kernels; see calibrate.h. */
#include "calibrate.h"

#include <math.h>
#include <string.h>

#include "op_cost.h"

#define CAL_MAX_ROUNDS 30
#define CAL_SCAN_STEPS 16   /* first round: quarter-octave steps each side (4 octaves) */
#define CAL_GOLDEN_STEPS 24

double cal_log_error(const chip_cfg_t *chip, const meas_row_t *row) {
  double predicted_s = 0;
  for (int i = 0; i < row->nops; i++) {
    op_result_t r;
    op_model(chip, &row->ops[i], &r);
    predicted_s += r.time_s;
  }
  return log(predicted_s / row->time_s);
}

void cal_errors(const chip_cfg_t *chip, const meas_table_t *t, cal_errors_t *out) {
  double sum[MEAS_CLASS_COUNT][2] = {{0}};
  memset(out, 0, sizeof *out);
  for (size_t i = 0; i < t->n; i++) {
    const meas_row_t *row = &t->rows[i];
    sum[row->cls][row->held_out] += fabs(cal_log_error(chip, row));
    out->n[row->cls][row->held_out]++;
  }
  for (int c = 0; c < MEAS_CLASS_COUNT; c++)
    for (int h = 0; h < 2; h++)
      out->geomean[c][h] = out->n[c][h] ? exp(sum[c][h] / out->n[c][h]) - 1 : 0;
}

/* Mean over classes of the mean squared log error of the fit half. */
static double objective(const chip_cfg_t *chip, const meas_table_t *t) {
  double sum[MEAS_CLASS_COUNT] = {0};
  int n[MEAS_CLASS_COUNT] = {0};
  for (size_t i = 0; i < t->n; i++)
    if (!t->rows[i].held_out) {
      double e = cal_log_error(chip, &t->rows[i]);
      sum[t->rows[i].cls] += e * e;
      n[t->rows[i].cls]++;
    }
  double total = 0;
  int classes = 0;
  for (int c = 0; c < MEAS_CLASS_COUNT; c++)
    if (n[c]) {
      total += sum[c] / n[c];
      classes++;
    }
  return classes ? total / classes : 0;
}

int cal_dominant_rows(const chip_cfg_t *chip, const meas_table_t *t, int max, size_t *top,
                      double *share) {
  int n[MEAS_CLASS_COUNT] = {0}, classes = 0;
  for (size_t i = 0; i < t->n; i++)
    if (!t->rows[i].held_out)
      classes += n[t->rows[i].cls]++ == 0;
  double total = objective(chip, t);
  int found = 0;
  if (!(total > 0))
    return 0;
  for (size_t i = 0; i < t->n; i++) { /* insertion into the top max, ties by file order */
    if (t->rows[i].held_out)
      continue;
    double e = cal_log_error(chip, &t->rows[i]);
    double s = e * e / n[t->rows[i].cls] / classes / total;
    int k = found < max ? found++ : max;
    while (k > 0 && share[k - 1] < s) {
      if (k < max) {
        share[k] = share[k - 1];
        top[k] = top[k - 1];
      }
      k--;
    }
    if (k < max) {
      share[k] = s;
      top[k] = i;
    }
  }
  return found;
}

typedef struct {
  system_cfg_t *sys;
  const meas_table_t *t;
  const char *path;
  double before;   /* the scan stays within 16x of it: a fit explains, it does not run away */
  double lo, hi;   /* the key's range */
  bool lo_excl;
} axis_t;

static bool allowed(const axis_t *a, double v) {
  if (a->before > 0 && (v > 16 * a->before || (v > 0 && v < a->before / 16)))
    return false;
  return v <= a->hi && (a->lo_excl ? v > a->lo : v >= a->lo);
}

/* The objective with the axis' key at v (left there). */
static double at(const axis_t *a, double v) {
  if (!allowed(a, v))
    return INFINITY;
  config_system_set_number(a->sys, a->path, v, NULL);
  return objective(&a->sys->chip, a->t);
}

/* v to 4 significant digits: a config value, not a float's noise. */
static double round4(double v) {
  if (v == 0)
    return 0;
  double scale = pow(10, 3 - floor(log10(fabs(v))));
  return round(v * scale) / scale;
}

/* Golden-section search for a minimum of at() on [x0, x1] in log space. */
static void golden(const axis_t *a, double x0, double x1, double *best_v, double *best_f) {
  const double g = (sqrt(5.0) - 1) / 2;
  double l0 = log(x0), l1 = log(x1);
  for (int i = 0; i < CAL_GOLDEN_STEPS; i++) {
    double m1 = l1 - g * (l1 - l0), m2 = l0 + g * (l1 - l0);
    double f1 = at(a, exp(m1)), f2 = at(a, exp(m2));
    if (f1 < *best_f) {
      *best_f = f1;
      *best_v = exp(m1);
    }
    if (f2 < *best_f) {
      *best_f = f2;
      *best_v = exp(m2);
    }
    if (f1 <= f2)
      l1 = m2;
    else
      l0 = m1;
  }
}

/* One coordinate step from v: scan quarter-octaves (span of them each side) around
 * v - around 1 when v is 0, with 0 itself when allowed - never further than 16x
 * from the value before the fit; then refine around the best point. */
static double improve(const axis_t *a, double v, int span) {
  double base = v > 0 ? v : a->before > 0 ? a->before : 1;
  double best_v = v, best_f = at(a, v);
  for (int k = -span; k <= span; k++) {
    double x = base * exp2(k / 4.0);
    double f = at(a, x);
    if (f < best_f) {
      best_f = f;
      best_v = x;
    }
  }
  double at_zero = at(a, 0); /* INFINITY where 0 is not allowed */
  if (at_zero < best_f) {
    best_f = at_zero;
    best_v = 0;
  }
  if (best_v > 0)
    golden(a, fmax(best_v * exp2(-0.25), a->lo > 0 ? a->lo : 0),
           fmin(best_v * exp2(0.25), a->hi), &best_v, &best_f);
  config_system_set_number(a->sys, a->path, best_v, NULL);
  return best_v;
}

bool cal_key_matters(const system_cfg_t *sys, const meas_table_t *t, const char *path) {
  system_cfg_t probe = *sys;
  double v, lo, hi;
  bool lo_excl;
  if (config_system_number(&probe, path, &v, &lo, &hi, &lo_excl, NULL))
    return false;
  double base = objective(&probe.chip, t);
  double x = v > 0 ? v * 1.5 : 1;
  if (!(x <= hi) && v > 0)
    x = v / 1.5;
  if (config_system_set_number(&probe, path, x, NULL))
    return false;
  return objective(&probe.chip, t) != base;
}

int cal_fit(system_cfg_t *sys, const meas_table_t *t, cal_param_t *params, int n, npu_err_t *err) {
  axis_t axes[n > 0 ? n : 1];
  for (int i = 0; i < n; i++) {
    double v;
    axes[i] = (axis_t){.sys = sys, .t = t, .path = params[i].path};
    if (config_system_number(sys, params[i].path, &v, &axes[i].lo, &axes[i].hi, &axes[i].lo_excl,
                             err))
      return -1;
    axes[i].before = v;
    params[i].after = v;
  }
  double last = objective(&sys->chip, t);
  for (int round = 0; round < CAL_MAX_ROUNDS; round++) {
    for (int i = 0; i < n; i++)
      params[i].after = improve(&axes[i], params[i].after, round ? 4 : CAL_SCAN_STEPS);
    double now = objective(&sys->chip, t);
    if (now >= last * (1 - 1e-6))
      break; /* a round that gains nothing: converged */
    last = now;
  }
  for (int i = 0; i < n; i++) { /* keep the value before when the fit did not move it */
    double r = round4(params[i].after);
    params[i].after = round4(params[i].before) == r || !allowed(&axes[i], r) ? params[i].before : r;
    config_system_set_number(sys, params[i].path, params[i].after, NULL);
  }
  return 0;
}
