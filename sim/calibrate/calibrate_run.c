/* calibrate_run.c - a calibration, run; see calibrate_run.h. */
#include "calibrate_run.h"

#include <math.h>
#include <string.h>

#define CAL_MAX_KEYS 512 /* number keys of the system schema, with room to grow */

static bool is_assumption(const char *note) {
  while (note && *note == ' ')
    note++;
  return note && strncmp(note, "[A]", 3) == 0;
}

/* The number key of the system schema spelled by name[0..len), or NULL. */
static const char *find_key(const char *const *keys, int nkeys, const char *name, size_t len) {
  for (int i = 0; i < nkeys; i++)
    if (strlen(keys[i]) == len && strncmp(keys[i], name, len) == 0)
      return keys[i];
  return NULL;
}

/* o->fit's keys, or every [A] key of the chip that moves a prediction. */
static int choose_params(const cal_opts_t *o, const meas_table_t *t, cal_param_t *out,
                         npu_err_t *err) {
  const char *keys[CAL_MAX_KEYS];
  int nkeys = config_system_number_paths(o->fit ? "" : "chip.", keys, CAL_MAX_KEYS);
  int n = 0;
  if (!o->fit) {
    for (int i = 0; i < nkeys && n < CAL_MAX_PARAMS; i++)
      if (is_assumption(config_doc_source_note(o->sys_doc, keys[i])) &&
          cal_key_matters(o->sys, t, keys[i]))
        out[n++].path = keys[i];
  } else if (strcmp(o->fit, "none") != 0) {
    for (const char *p = o->fit; *p;) {
      const char *comma = strchr(p, ',');
      size_t len = comma ? (size_t)(comma - p) : strlen(p);
      const char *key = find_key(keys, nkeys, p, len);
      if (!key)
        return npu_err_set(err,
                           "--fit: expected number keys of the system config (e.g. "
                           "chip.hbm.efficiency), found \"%.*s\"",
                           (int)(len > 80 ? 80 : len), p);
      if (n == CAL_MAX_PARAMS)
        return npu_err_set(err, "--fit: expected at most %d keys, found more", CAL_MAX_PARAMS);
      out[n++].path = key;
      p = comma ? comma + 1 : p + len;
    }
  }
  for (int i = 0; i < n; i++) {
    double lo, hi;
    bool excl;
    if (config_system_number(o->sys, out[i].path, &out[i].before, &lo, &hi, &excl, err))
      return -1;
    out[i].after = out[i].before;
  }
  return n;
}

static int check_rows(const chip_cfg_t *chip, const char *file, const meas_table_t *t,
                      npu_err_t *err) {
  npu_err_t why = {""};
  for (size_t i = 0; i < t->n; i++)
    for (int k = 0; k < t->rows[i].nops; k++)
      if (op_check(chip, &t->rows[i].ops[k], &why))
        return npu_err_set(err, "%s:%d: %s", file, t->rows[i].line, why.msg);
  for (size_t i = 0; i < t->n; i++) { /* a row no fit can explain drags every key to its bound */
    double ratio = exp(-cal_log_error(chip, &t->rows[i])); /* measured / predicted */
    if (!(ratio <= CAL_MAX_MODEL_RATIO && ratio >= 1 / CAL_MAX_MODEL_RATIO))
      return npu_err_set(err,
                         "%s:%d: time_us: expected a time within a factor of %.0f of the "
                         "model's %.4g us for this op (a kernel call in microseconds), found "
                         "%.4g us",
                         file, t->rows[i].line, CAL_MAX_MODEL_RATIO,
                         t->rows[i].time_s / ratio * 1e6, t->rows[i].time_s * 1e6);
  }
  return 0;
}

static int fit(const cal_opts_t *o, cal_result_t *r, npu_err_t *err) {
  if (check_rows(&o->sys->chip, o->measurements, &r->table, err))
    return -1;
  r->nparams = choose_params(o, &r->table, r->params, err);
  if (r->nparams < 0)
    return -1;
  cal_errors(&o->sys->chip, &r->table, &r->before);
  if (cal_fit(o->sys, &r->table, r->params, r->nparams, err))
    return -1;
  cal_errors(&o->sys->chip, &r->table, &r->after);
  return 0;
}

int cal_run(const cal_opts_t *o, cal_result_t *r, npu_err_t *err) {
  memset(r, 0, sizeof *r);
  if (meas_read(o->measurements, &r->table, err))
    return -1;
  if (o->fit_all_rows)
    meas_fit_all_rows(&r->table);
  return fit(o, r, err);
}

void cal_result_free(cal_result_t *r) {
  meas_free(&r->table);
}
