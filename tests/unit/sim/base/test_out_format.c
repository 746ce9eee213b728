/* test_out_format.c - the output guard (out_find_nonfinite): a number printf
 * wrote as not finite is found in JSON, CSV and tables with its line and the
 * field it stands in; names and strings that merely read "inf" are not; and
 * CSV quotes a name that would read as one. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "out_format.h"
#include "suites.h"

/* Runs the guard on text and checks what it finds: expect_text NULL for nothing. */
static void expect(out_format_t fmt, const char *text, const char *expect_text, int line,
                   const char *field) {
  out_nonfinite_t f;
  bool found = out_find_nonfinite(fmt, text, strlen(text), &f);
  CU_ASSERT_EQUAL(found, expect_text != NULL);
  if (!found || !expect_text)
    return;
  CU_ASSERT_STRING_EQUAL(f.text, expect_text);
  CU_ASSERT_EQUAL(f.line, line);
  CU_ASSERT_STRING_EQUAL(f.field, field);
  if (strcmp(f.field, field) != 0 || f.line != line)
    fprintf(stderr, "\n  expected line %d \"%s\", got line %d \"%s\"\n", line, field, f.line,
            f.field);
}

/* What printf writes for inf, -inf, nan and -nan in every conversion. */
static void test_every_printf_spelling_of_a_nonfinite_number_is_one(void) {
  const char *convs[] = {"%f", "%.3f", "%g", "%.9g", "%e", "%F", "%G", "%E", "%+f"};
  const double values[] = {INFINITY, -INFINITY, NAN, -NAN};
  for (size_t c = 0; c < sizeof convs / sizeof *convs; c++)
    for (size_t v = 0; v < sizeof values / sizeof *values; v++) {
      char buf[32];
      int n = snprintf(buf, sizeof buf, convs[c], values[v]);
      CU_ASSERT(out_is_nonfinite_text(buf, (size_t)n));
    }
  const char *not_numbers[] = {"", "-", "in", "info", "Inf", "NaN", "nan1", "--inf", "1.5"};
  for (size_t i = 0; i < sizeof not_numbers / sizeof *not_numbers; i++)
    CU_ASSERT(!out_is_nonfinite_text(not_numbers[i], strlen(not_numbers[i])));
}

static void test_json_names_the_path_of_the_value(void) {
  expect(FORMAT_JSON, "{\"a\": 1, \"b\": {\"c\": [1, 2, -nan]}}", "-nan", 1, "b.c[2]");
  expect(FORMAT_JSON, "[\n  {\"time_us\": 1.5, \"x\": [1]},\n  {\"time_us\": inf}\n]", "inf", 3,
         "[1].time_us");
  expect(FORMAT_JSON, "{\"links\": [{\"busy_us\": 1}, {\"busy_us\": 2}], \"step\": nan}", "nan", 1,
         "step");
  /* strings are names, not numbers: a model called "inf", a key called "nan" */
  expect(FORMAT_JSON, "{\"name\": \"inf\", \"nan\": 1e+308, \"s\": \"a \\\" nan\"}", NULL, 0, "");
  expect(FORMAT_JSON, "{\"t\": 1.5e-300, \"u\": -0}", NULL, 0, "");
}

static void test_csv_names_the_column(void) {
  expect(FORMAT_CSV, "op,bytes,time_us\nallreduce,1024,17.0\nallreduce,2048,inf\n", "inf", 3,
         "time_us");
  /* a blank line starts a section with its own header */
  expect(FORMAT_CSV, "a,b\n1,2\n\nc,\"d, e\"\n3,-nan\n", "-nan", 5, "d, e");
  /* quoted fields are strings; a field past the header is counted */
  expect(FORMAT_CSV, "name,x\n\"inf\",1\n\"a,\"\"nan\"\"\",2\n", NULL, 0, "");
  expect(FORMAT_CSV, "x\n1,NAN\n", "NAN", 2, "column 2");
}

static void test_csv_quotes_a_name_that_reads_as_a_nonfinite_number(void) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  out_csv_field(f, "nan", ",");
  out_csv_field(f, "-inf", ",");
  out_csv_field(f, "tiny", "\n");
  fclose(f);
  CU_ASSERT_STRING_EQUAL(buf, "\"nan\",\"-inf\",tiny\n");
  char text[128];
  snprintf(text, sizeof text, "a,b,c\n%s", buf);
  expect(FORMAT_CSV, text, NULL, 0, "");
  free(buf);
}

static void test_table_names_the_row_and_the_column(void) {
  expect(FORMAT_TABLE, "# npusim train: tiny on 8 NPUs\nstep time        inf ms (4 micro)\n", "inf",
         2, "step time");
  expect(FORMAT_TABLE, "model TFLOP/s/NPU   1.0 (MFU -nan%; with recompute 0.0)\n", "-nan", 1,
         "model TFLOP/s/NPU");
  /* right-aligned numbers under a header line */
  expect(FORMAT_TABLE,
         "per stage (ms):\n  stage  compute     wait\n      0      6.1      1.0\n"
         "      1      8.3     -nan\n",
         "-nan", 4, "wait");
  /* a row with a label takes its column from a '#' header */
  expect(FORMAT_TABLE,
         "# link          kind      bytes   busy_us\n  s0.mesh0-1    scale_up    512       inf\n",
         "inf", 2, "s0.mesh0-1 scale_up, busy_us");
  /* a blank line ends the header's block */
  expect(FORMAT_TABLE, "#  a   b\n   1   2\n\n   3 -inf\n", "-inf", 4, "word 2");
  /* names, quoted strings and words that only start like one are not numbers */
  expect(FORMAT_TABLE,
         "chip.name   \"inf\"\ninfo: information about nan-free infinity\ns0.nan 1.0\n", NULL, 0,
         "");
}

CU_TestInfo out_format_tests[] = {
    {"every printf spelling of a nonfinite number is one",
     test_every_printf_spelling_of_a_nonfinite_number_is_one},
    {"json names the path of the value", test_json_names_the_path_of_the_value},
    {"csv names the column", test_csv_names_the_column},
    {"csv quotes a name that reads as a nonfinite number",
     test_csv_quotes_a_name_that_reads_as_a_nonfinite_number},
    {"table names the row and the column", test_table_names_the_row_and_the_column},
    CU_TEST_INFO_NULL,
};
