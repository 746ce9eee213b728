/* test_check.c - the pieces of `npusim check` and `npusim diff` below the
 * processes (sim/check/): figure paths into a JSON output, every leaf's path
 * reading back its own value, and the verdict at a tolerance's edges. */
#include <CUnit/CUnit.h>
#include <cjson/cJSON.h>
#include <string.h>

#include "check.h"
#include "figures.h"
#include "suites.h"

static const char *const doc_text =
    "{\"step_time_s\": 2.5, \"rows\": [{\"busbw_GBps\": 100}, {\"busbw_GBps\": 200}],"
    " \"a.b\": {\"c\": [1, [2, 3]]}, \"name\": \"x\", \"ok\": true, \"none\": null}";

static double get(const cJSON *doc, const char *path, int *rc) {
  double v = -1;
  npu_err_t err = {""};
  *rc = figures_get(doc, path, &v, &err);
  return v;
}

/* Keys, indices and quoted keys reach their numbers; a missing member, an
 * index past the end, a text and a malformed path are one-line errors. */
static void test_figure_paths(void) {
  cJSON *doc = cJSON_Parse(doc_text);
  int rc;
  CU_ASSERT_EQUAL(get(doc, "step_time_s", &rc), 2.5);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_EQUAL(get(doc, "rows[1].busbw_GBps", &rc), 200);
  CU_ASSERT_EQUAL(get(doc, "[\"a.b\"].c[1][0]", &rc), 2);
  CU_ASSERT_EQUAL(rc, 0);
  const char *bad[] = {"rows[2].busbw_GBps", "missing", "name", "rows[-1]", "rows[", "", "a.b.c"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    double v;
    npu_err_t err = {""};
    CU_ASSERT_EQUAL(figures_get(doc, bad[i], &v, &err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "figure "));
    CU_ASSERT_PTR_NULL(strchr(err.msg, '\n'));
  }
  cJSON_Delete(doc);
}

typedef struct {
  const cJSON *doc;
  int numbers, texts, failed;
} walk_t;

static void visit(const char *path, double value, const char *text, void *ctx) {
  walk_t *w = ctx;
  if (text) {
    w->texts++;
    return;
  }
  w->numbers++;
  double back;
  npu_err_t err = {""};
  if (figures_get(w->doc, path, &back, &err) != 0 || back != value)
    w->failed++;
}

/* Every number figures_each finds reads back through its own path (the
 * quoted key included); texts, booleans and nulls are leaves too. */
static void test_every_leaf_reads_back(void) {
  cJSON *doc = cJSON_Parse(doc_text);
  walk_t w = {doc, 0, 0, 0};
  figures_each(doc, visit, &w);
  CU_ASSERT_EQUAL(w.numbers, 6);
  CU_ASSERT_EQUAL(w.texts, 3);
  CU_ASSERT_EQUAL(w.failed, 0);
  cJSON_Delete(doc);
}

/* A prediction exactly at the tolerance passes, a hair past it fails; an
 * absolute tolerance serves an expected 0 (whose error is reported as 0%). */
static void test_tolerance_edges(void) {
  check_row_t row = {.expected = 200, .tolerance_pct = 10};
  check_result_t r;
  check_judge(&row, 220, &r);
  CU_ASSERT_EQUAL(r.verdict, CHECK_PASS);
  CU_ASSERT_DOUBLE_EQUAL(r.error_pct, 10, 1e-12);
  check_judge(&row, 220.001, &r);
  CU_ASSERT_EQUAL(r.verdict, CHECK_FAIL);
  check_judge(&row, 179.999, &r);
  CU_ASSERT_EQUAL(r.verdict, CHECK_FAIL);
  row = (check_row_t){.expected = 0, .tolerance_abs = 0.5};
  check_judge(&row, 0.4, &r);
  CU_ASSERT_EQUAL(r.verdict, CHECK_PASS);
  CU_ASSERT_EQUAL(r.error_pct, 0);
  check_judge(&row, -0.6, &r);
  CU_ASSERT_EQUAL(r.verdict, CHECK_FAIL);
}

CU_TestInfo check_tests[] = {
    {"figure paths", test_figure_paths},
    {"every leaf reads back through its path", test_every_leaf_reads_back},
    {"tolerance edges", test_tolerance_edges},
    CU_TEST_INFO_NULL,
};
