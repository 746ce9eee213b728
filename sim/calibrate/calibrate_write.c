/* calibrate_write.c - the fitted config; see calibrate_write.h. */
#include "calibrate_write.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jsonfile.h"
#include "out_format.h"
#include "outfile.h"
#include "time_limit.h"

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

/* The config as a JSON tree: extends, then one key per value, each with the
 * note as its source. */
static cJSON *config_tree(const char *extends, const cal_value_t *values, int n, const char *note) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "extends", extends);
  for (int i = 0; i < n; i++) {
    cJSON *node = root;
    char seg[128];
    const char *p = values[i].path;
    for (const char *dot; (dot = strchr(p, '.')) != NULL; p = dot + 1) {
      snprintf(seg, sizeof seg, "%.*s", (int)(dot - p), p);
      cJSON *next = cJSON_GetObjectItemCaseSensitive(node, seg);
      node = next ? next : cJSON_AddObjectToObject(node, seg);
    }
    char num[64], key[160];
    jsonfile_format_number(values[i].value, num, sizeof num);
    cJSON_AddRawToObject(node, p, num);
    snprintf(key, sizeof key, "%s_source", p);
    cJSON_AddStringToObject(node, key, note);
  }
  return root;
}

int cal_write_config(const char *path, const char *system_path, const cal_opts_t *o,
                     const cal_result_t *r, npu_err_t *err) {
  int rows = 0;
  double log_sum = 0;
  for (int c = 0; c < MEAS_CLASS_COUNT; c++) {
    rows += r->after.n[c][0];
    log_sum += r->after.n[c][0] * log1p(r->after.geomean[c][0]);
  }
  char note[512];
  snprintf(note, sizeof note, "[cal] fitted to %s (%d kernels, geomean %.1f%%)", o->measurements,
           rows, rows ? 100 * expm1(log_sum / rows) : 0);
  cal_value_t *values = calloc((size_t)r->nparams + 1, sizeof *values);
  int n = 0;
  for (int i = 0; i < r->nparams; i++) /* unchanged: the system's own value and note stand */
    if (r->params[i].after != r->params[i].before)
      values[n++] = (cal_value_t){r->params[i].path, r->params[i].after};
  int rc = cal_write_values(path, system_path, values, n, note, err);
  free(values);
  return rc;
}

int cal_write_values(const char *path, const char *system_path, const cal_value_t *values, int n,
                     const char *note, npu_err_t *err) {
  char extends[PATH_MAX * 2];
  if (relative_path(path, system_path, extends, sizeof extends, err))
    return -1;
  cJSON *root = config_tree(extends, values, n, note);
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text)
    return npu_err_set(err, "%s: out of memory", path);
  size_t len = strlen(text);
  char *data = realloc(text, len + 2);
  if (!data) {
    free(text);
    return npu_err_set(err, "%s: out of memory", path);
  }
  data[len] = '\n';
  data[len + 1] = '\0';
  out_nonfinite_t bad; /* a fit that ran off to inf is no config (out_format.h) */
  if (out_find_nonfinite(FORMAT_JSON, data, len, &bad)) {
    free(data);
    npu_err_set(err,
                "%s: internal error: expected finite fitted values, found \"%s\" at %s; "
                "nothing written",
                path, bad.text, bad.field);
    return CAL_CANNOT_WRITE;
  }
  time_limit_off(); /* the file is written whole: the time limit ends here */
  int rc = outfile_write_all(path, data, len + 1, 0, err);
  free(data);
  return rc ? CAL_CANNOT_WRITE : 0;
}
