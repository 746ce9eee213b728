/* check.c - expectations files and the verdict on one prediction; see check.h. */
#include "check.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jsonfile.h"

#define CHECK_MAX_FILE_BYTES (64u << 20)

const char *const check_verdict_names[CHECK_VERDICT_COUNT] = {"pass", "FAIL", "ERROR"};

static const char *const row_keys[] = {"name",          "args",          "figure", "expected",
                                       "tolerance_pct", "tolerance_abs", "source", NULL};

/* A string member: required or "" when absent; -1 with the reason. */
static int get_text(const char *path, int i, const cJSON *o, const char *key, bool required,
                    char **out, npu_err_t *err) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  char found[128] = "nothing";
  if (!v && !required) {
    *out = strdup("");
    return 0;
  }
  if (!cJSON_IsString(v) || (required && !*v->valuestring)) {
    if (v)
      jsonfile_describe(v, found, sizeof found);
    return npu_err_set(err, "%s: expectations[%d].%s: expected a%s string, found %s", path, i,
                       key, required ? " non-empty" : "", found);
  }
  *out = strdup(v->valuestring);
  return 0;
}

static int get_number(const char *path, int i, const cJSON *o, const char *key, double lo,
                      double dflt, bool required, double *out, npu_err_t *err) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  char found[128] = "nothing";
  if (!v && !required) {
    *out = dflt;
    return 0;
  }
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo) {
    if (v)
      jsonfile_describe(v, found, sizeof found);
    return npu_err_set(err, "%s: expectations[%d].%s: expected a number >= %g, found %s", path, i,
                       key, lo, found);
  }
  *out = v->valuedouble;
  return 0;
}

static int get_args(const char *path, int i, const cJSON *o, check_row_t *row, npu_err_t *err) {
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "args");
  int n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : 0;
  if (n < 1 || n > CHECK_MAX_ARGS)
    return npu_err_set(err, "%s: expectations[%d].args: expected an array of 1 to %d strings, "
                       "an npusim command and its options (\"coll\", \"--system\", ...), found %s",
                       path, i, CHECK_MAX_ARGS, a ? "another value" : "nothing");
  row->args = calloc((size_t)n + 1, sizeof *row->args);
  const cJSON *e;
  cJSON_ArrayForEach(e, a) {
    if (!cJSON_IsString(e))
      return npu_err_set(err, "%s: expectations[%d].args[%d]: expected a string, found another "
                         "value", path, i, row->nargs);
    if (strcmp(e->valuestring, "--format") == 0 || strncmp(e->valuestring, "--format=", 9) == 0)
      return npu_err_set(err, "%s: expectations[%d].args[%d]: expected no --format (check reads "
                         "the JSON output), found one", path, i, row->nargs);
    row->args[row->nargs++] = strdup(e->valuestring);
  }
  return 0;
}

static int parse_row(const char *path, int i, const cJSON *o, check_row_t *row, npu_err_t *err) {
  if (!cJSON_IsObject(o))
    return npu_err_set(err, "%s: expectations[%d]: expected an object, found another value", path,
                       i);
  const cJSON *m;
  cJSON_ArrayForEach(m, o) {
    bool known = false;
    for (int k = 0; row_keys[k] && !known; k++)
      known = strcmp(m->string, row_keys[k]) == 0;
    if (!known)
      return npu_err_set(err, "%s: expectations[%d]: expected only name, args, figure, expected, "
                         "tolerance_pct, tolerance_abs and source, found \"%.40s\"", path, i,
                         m->string);
  }
  if (get_text(path, i, o, "name", true, &row->name, err) || get_args(path, i, o, row, err) ||
      get_text(path, i, o, "figure", true, &row->figure, err) ||
      get_number(path, i, o, "expected", -INFINITY, 0, true, &row->expected, err) ||
      get_number(path, i, o, "tolerance_pct", 0, 0, false, &row->tolerance_pct, err) ||
      get_number(path, i, o, "tolerance_abs", 0, 0, false, &row->tolerance_abs, err) ||
      get_text(path, i, o, "source", false, &row->source, err))
    return -1;
  if (!cJSON_GetObjectItemCaseSensitive(o, "tolerance_pct") &&
      !cJSON_GetObjectItemCaseSensitive(o, "tolerance_abs"))
    return npu_err_set(err, "%s: expectations[%d]: expected tolerance_pct or tolerance_abs, "
                       "found neither", path, i);
  return 0;
}

int check_load(const char *path, check_set_t *set, npu_err_t *err) {
  memset(set, 0, sizeof *set);
  cJSON *doc = jsonfile_load(path, CHECK_MAX_FILE_BYTES, err);
  if (!doc)
    return -1;
  const cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, "expectations");
  int n = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : 0, rc = 0;
  if (!cJSON_IsObject(doc) || n < 1 || n > CHECK_MAX_ROWS) {
    char found[128] = "nothing";
    if (cJSON_IsArray(list))
      snprintf(found, sizeof found, "%d rows", n);
    else if (list)
      jsonfile_describe(list, found, sizeof found);
    rc = npu_err_set(err, "%s: expectations: expected an array of 1 to %d rows, found %s", path,
                     CHECK_MAX_ROWS, found);
  } else {
    set->rows = calloc((size_t)n, sizeof *set->rows);
    const cJSON *o;
    cJSON_ArrayForEach(o, list) {
      if ((rc = parse_row(path, set->nrows, o, &set->rows[set->nrows], err)) != 0) {
        set->nrows++; /* freed with the others */
        break;
      }
      set->nrows++;
    }
  }
  cJSON_Delete(doc);
  if (rc)
    check_set_free(set);
  return rc;
}

void check_set_free(check_set_t *set) {
  for (int i = 0; i < set->nrows; i++) {
    check_row_t *r = &set->rows[i];
    for (int a = 0; a < r->nargs; a++)
      free(r->args[a]);
    free(r->args);
    free(r->name);
    free(r->figure);
    free(r->source);
  }
  free(set->rows);
  memset(set, 0, sizeof *set);
}

void check_judge(const check_row_t *row, double predicted, check_result_t *r) {
  double off = predicted - row->expected;
  double allowed = fmax(row->tolerance_pct / 100 * fabs(row->expected), row->tolerance_abs);
  r->predicted = predicted;
  r->error_pct = row->expected != 0 ? 100 * off / fabs(row->expected) : 0;
  r->verdict = fabs(off) <= allowed ? CHECK_PASS : CHECK_FAIL;
}
