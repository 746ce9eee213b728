/* cmd_calibrate.c - `npusim calibrate`: fits chip parameters to measured kernels
 * and writes a config that extends the system with the fitted values.
 *
 * The parameters are the chip's number keys whose source note is an assumption
 * ("[A]"), or the keys named with --fit; keys that move no prediction of the
 * measured ops are left alone. The report gives the error per op class before
 * and after, on the fit half and on the held-out half (op_measure.h), and each
 * parameter's value before and after. With --fit-rows all every row is fitted
 * and none held out: scripts/validate_ops.py cross-validates that way, holding
 * rows out by leaving them out of the file. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"
#include "cli.h"
#include "commands.h"
#include "jsonfile.h"
#include "outfile.h"
#include "time_limit.h"

#define CAL_MAX_PARAMS 64
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

/* --fit KEY,KEY,... or every [A] key of the chip that moves a prediction. */
static int choose_params(const cli_opts_t *opts, const cli_configs_t *cfg, const meas_table_t *t,
                         cal_param_t *out, npu_err_t *err) {
  const char *keys[CAL_MAX_KEYS];
  int nkeys = config_system_number_paths(opts->fit ? "" : "chip.", keys, CAL_MAX_KEYS);
  int n = 0;
  if (!opts->fit) {
    for (int i = 0; i < nkeys && n < CAL_MAX_PARAMS; i++)
      if (is_assumption(config_doc_source_note(cfg->sys_doc, keys[i])) &&
          cal_key_matters(&cfg->sys, t, keys[i]))
        out[n++].path = keys[i];
  } else if (strcmp(opts->fit, "none") != 0) {
    for (const char *p = opts->fit; *p;) {
      const char *comma = strchr(p, ',');
      size_t len = comma ? (size_t)(comma - p) : strlen(p);
      const char *key = find_key(keys, nkeys, p, len);
      if (!key)
        return npu_err_set(err, "--fit: expected number keys of the system config (e.g. "
                           "chip.hbm.efficiency), found \"%.*s\"", (int)(len > 80 ? 80 : len), p);
      if (n == CAL_MAX_PARAMS)
        return npu_err_set(err, "--fit: expected at most %d keys, found more", CAL_MAX_PARAMS);
      out[n++].path = key;
      p = comma ? comma + 1 : p + len;
    }
  }
  for (int i = 0; i < n; i++) {
    double lo, hi;
    bool excl;
    if (config_system_number(&cfg->sys, out[i].path, &out[i].before, &lo, &hi, &excl, err))
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

#define CAL_DOMINANT_ROWS 3

/* The fit rows that weigh most in the fitted objective: their line, class,
 * error (predicted / measured - 1) and share, so that a row that pulled the
 * fit is seen. */
static void print_dominant(FILE *out, out_format_t fmt, const chip_cfg_t *chip,
                           const meas_table_t *t) {
  size_t top[CAL_DOMINANT_ROWS];
  double share[CAL_DOMINANT_ROWS];
  int n = cal_dominant_rows(chip, t, CAL_DOMINANT_ROWS, top, share);
  if (fmt == FORMAT_TABLE)
    fprintf(out,
            "\n# fit rows that weigh most after the fit (share of its squared log error)\n"
            "  %-7s %-10s %10s %8s\n",
            "line", "class", "error", "share");
  else if (fmt == FORMAT_JSON)
    fprintf(out, ",\n  \"dominant_rows\": [");
  for (int k = 0; k < n; k++) {
    const meas_row_t *row = &t->rows[top[k]];
    double error = expm1(cal_log_error(chip, row));
    if (fmt == FORMAT_TABLE)
      fprintf(out, "  %-7d %-10s %+9.1f%% %7.1f%%\n", row->line, meas_class_names[row->cls],
              100 * error, 100 * share[k]);
    else if (fmt == FORMAT_CSV)
      fprintf(out, "dominant_row,%d,%s,fit,%.6f,%.6f\n", row->line, meas_class_names[row->cls],
              share[k], error);
    else
      fprintf(out, "%s\n    {\"line\": %d, \"class\": \"%s\", \"error\": %.6f, \"share\": %.6f}",
              k ? "," : "", row->line, meas_class_names[row->cls], error, share[k]);
  }
  if (fmt == FORMAT_JSON)
    fprintf(out, "]");
}

static void print_errors(FILE *out, out_format_t fmt, const char *when, const cal_errors_t *e,
                         bool *first) {
  for (int c = 0; c < MEAS_CLASS_COUNT; c++)
    for (int h = 0; h < 2; h++) {
      if (!e->n[c][h])
        continue;
      const char *half = h ? "held_out" : "fit";
      if (fmt == FORMAT_TABLE)
        fprintf(out, "  %-7s %-10s %-9s %5d %9.1f%%\n", when, meas_class_names[c], half, e->n[c][h],
                100 * e->geomean[c][h]);
      else if (fmt == FORMAT_CSV)
        fprintf(out, "error,%s,%s,%s,%d,%.6f\n", when, meas_class_names[c], half, e->n[c][h],
                e->geomean[c][h]);
      else
        fprintf(out, "%s\n    {\"when\": \"%s\", \"class\": \"%s\", \"half\": \"%s\", \"rows\": "
                "%d, \"geomean_error\": %.6f}", *first ? "" : ",", when, meas_class_names[c], half,
                e->n[c][h], e->geomean[c][h]);
      *first = false;
    }
}

static void print_report(FILE *out, out_format_t fmt, const char *file, const meas_table_t *t,
                         const cal_errors_t *before, const cal_errors_t *after,
                         const cal_param_t *params, int n, const chip_cfg_t *chip) {
  if (fmt == FORMAT_TABLE) {
    fprintf(out, "# npusim calibrate: %zu kernels from %s%s%s\n", t->n, file,
            t->device[0] ? " measured on " : "", t->device);
    fprintf(out, "# geometric-mean |error| per op class (fit half / held-out half)\n");
    fprintf(out, "  %-7s %-10s %-9s %5s %10s\n", "when", "class", "half", "rows", "error");
  } else if (fmt == FORMAT_CSV) {
    fprintf(out, "kind,when,class,half,rows,geomean_error\n");
  } else {
    fprintf(out, "{\"measurements\": ");
    jsonfile_write_string(out, file);
    fprintf(out, ", \"kernels\": %zu,\n  \"errors\": [", t->n);
  }
  bool first = true;
  print_errors(out, fmt, "before", before, &first);
  print_errors(out, fmt, "after", after, &first);
  if (fmt == FORMAT_TABLE)
    fprintf(out, "\n# parameters (config units)\n  %-44s %14s %14s\n", "key", "before", "after");
  else if (fmt == FORMAT_JSON)
    fprintf(out, "],\n  \"parameters\": [");
  for (int i = 0; i < n; i++) {
    if (fmt == FORMAT_TABLE)
      fprintf(out, "  %-44s %14.6g %14.6g\n", params[i].path, params[i].before, params[i].after);
    else if (fmt == FORMAT_CSV)
      fprintf(out, "parameter,%s,%.9g,%.9g,,\n", params[i].path, params[i].before, params[i].after);
    else
      fprintf(out, "%s\n    {\"key\": \"%s\", \"before\": %.9g, \"after\": %.9g}", i ? "," : "",
              params[i].path, params[i].before, params[i].after);
  }
  if (fmt == FORMAT_JSON)
    fprintf(out, "]");
  print_dominant(out, fmt, chip, t);
  if (fmt == FORMAT_JSON)
    fprintf(out, "}\n");
}

/* The path of target relative to the directory of from_file (both resolved). */
static int relative_path(const char *from_file, const char *target, char *buf, size_t len,
                         npu_err_t *err) {
  char dir[PATH_MAX], abs_dir[PATH_MAX + 1], abs_target[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", from_file);
  char *slash = strrchr(dir, '/');
  if (slash)
    slash[slash == dir] = '\0'; /* "/x" keeps "/" */
  else
    snprintf(dir, sizeof dir, ".");
  if (!realpath(dir, abs_dir) || !realpath(target, abs_target))
    return npu_err_set(err, "--output: expected a file in an existing directory, found \"%.200s\"",
                       from_file);
  if (strcmp(abs_dir, "/") != 0)
    strcat(abs_dir, "/");
  /* the common part, up to and including its last '/' */
  size_t common = 0;
  for (size_t i = 0; abs_dir[i] && abs_dir[i] == abs_target[i]; i++)
    if (abs_dir[i] == '/')
      common = i + 1;
  buf[0] = '\0';
  for (const char *p = abs_dir + common; *p; p++)
    if (*p == '/')
      strncat(buf, "../", len - strlen(buf) - 1);
  strncat(buf, abs_target + common, len - strlen(buf) - 1);
  return 0;
}

/* The fitted config: extends the system, one key per fitted parameter. */
static int write_config(const cli_opts_t *opts, const cal_param_t *params, int n,
                        const cal_errors_t *after, npu_err_t *err) {
  char extends[PATH_MAX * 2];
  if (relative_path(opts->output_path, opts->system_path, extends, sizeof extends, err))
    return -1;
  int rows = 0;
  double log_sum = 0;
  for (int c = 0; c < MEAS_CLASS_COUNT; c++) {
    rows += after->n[c][0];
    log_sum += after->n[c][0] * log1p(after->geomean[c][0]);
  }
  char note[512];
  snprintf(note, sizeof note, "[cal] fitted to %s (%d kernels, geomean %.1f%%)",
           opts->measurements, rows, rows ? 100 * expm1(log_sum / rows) : 0);
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "extends", extends);
  for (int i = 0; i < n; i++) {
    if (params[i].after == params[i].before)
      continue; /* unchanged: the system's own value and note stand */
    cJSON *node = root;
    char seg[128];
    const char *p = params[i].path;
    for (const char *dot; (dot = strchr(p, '.')) != NULL; p = dot + 1) {
      snprintf(seg, sizeof seg, "%.*s", (int)(dot - p), p);
      cJSON *next = cJSON_GetObjectItemCaseSensitive(node, seg);
      node = next ? next : cJSON_AddObjectToObject(node, seg);
    }
    char num[64], key[160];
    jsonfile_format_number(params[i].after, num, sizeof num);
    cJSON_AddRawToObject(node, p, num);
    snprintf(key, sizeof key, "%s_source", p);
    cJSON_AddStringToObject(node, key, note);
  }
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text)
    return npu_err_set(err, "%s: out of memory", opts->output_path);
  size_t len = strlen(text);
  char *data = realloc(text, len + 2);
  if (!data) {
    free(text);
    return npu_err_set(err, "%s: out of memory", opts->output_path);
  }
  data[len] = '\n';
  data[len + 1] = '\0';
  out_nonfinite_t bad; /* a fit that ran off to inf is no config (out_format.h) */
  if (out_find_nonfinite(FORMAT_JSON, data, len, &bad)) {
    free(data);
    npu_err_set(err, "%s: internal error: expected finite fitted values, found \"%s\" at %s; "
                "nothing written", opts->output_path, bad.text, bad.field);
    return CMD_CANNOT_WRITE;
  }
  time_limit_off(); /* the file is written whole: the time limit ends here */
  int rc = outfile_write_all(opts->output_path, data, len + 1, 0, err);
  free(data);
  return rc ? CMD_CANNOT_WRITE : 0;
}

static int calibrate(const cli_opts_t *opts, cli_configs_t *cfg, const meas_table_t *t, FILE *out,
                     npu_err_t *err) {
  if (check_rows(&cfg->sys.chip, opts->measurements, t, err))
    return -1;
  cal_param_t params[CAL_MAX_PARAMS];
  int n = choose_params(opts, cfg, t, params, err);
  if (n < 0)
    return -1;
  cal_errors_t before, after;
  cal_errors(&cfg->sys.chip, t, &before);
  if (cal_fit(&cfg->sys, t, params, n, err))
    return -1;
  cal_errors(&cfg->sys.chip, t, &after);
  print_report(out, opts->format, opts->measurements, t, &before, &after, params, n,
               &cfg->sys.chip);
  return opts->output_path ? write_config(opts, params, n, &after, err) : 0;
}

int cmd_calibrate(const cli_opts_t *opts, FILE *out, npu_err_t *err) {
  if (!opts->measurements)
    return npu_err_set(err, "npusim calibrate: expected --measurements FILE.csv, found none");
  const char *rows = opts->fit_rows ? opts->fit_rows : "half";
  if (strcmp(rows, "half") != 0 && strcmp(rows, "all") != 0)
    return npu_err_set(err, "--fit-rows: expected half or all, found \"%.80s\"", rows);
  cli_configs_t cfg;
  if (cli_load_configs(opts, &cfg, err))
    return -1;
  meas_table_t t;
  int rc = meas_read(opts->measurements, &t, err);
  if (rc == 0 && strcmp(rows, "all") == 0)
    meas_fit_all_rows(&t);
  if (rc == 0)
    rc = calibrate(opts, &cfg, &t, out, err);
  meas_free(&t);
  cli_free_configs(&cfg);
  return rc;
}

const cli_option_t cmd_calibrate_options[] = {
    CLI_GROUP(cli_options_system),
    CLI_GROUP(cli_options_set),
    CLI_GROUP(cli_options_format),
    CLI_GROUP(cli_options_output),
    CLI_STRING("measurements", "FILE", measurements, "measured kernel times (CSV)"),
    CLI_STRING("fit", "KEY,...", fit, "the keys to fit (default: the chip's [A] keys; none)"),
    CLI_STRING("fit-rows", "half|all", fit_rows,
               "fit the even rows of each class (half, default) or\n"
               "every row"),
    CLI_END};
