/* test_calibrate.c - kernel measurement tables and the calibration fit: rows,
 * halves and bad input of the reader; a fit that recovers parameters a table
 * was made with, predicts the held-out half, and leaves keys that move nothing
 * alone. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "calibrate.h"
#include "op_cost.h"
#include "suites.h"
#include "test_util.h"

static const char *const good_table =
    "# device: Test GPU\n"
    "op,shape,dtype,out_dtype,causal,layout,time_us,impl\n"
    "matmul,4096x4096x4096,bf16,,0,nt,200,x\n"
    "rmsnorm,4096x8192,bf16,,,,60,\"a, quoted\"\n"
    "attention_bwd,2x16x4096x128x4,bf16,,1,,900,y\n"
    "matmul,1024x1024x1024,bf16,,0,tn,20,x\n"
    "cast,4096x8192,bf16,fp32,,,40,y\n"
    "attention_fwd+attention_bwd,2x16x4096x128,bf16,,0,,3000,z\n";

static void test_reads_rows_and_splits_each_class_in_halves(void) {
  const char *dir = make_temp_dir();
  write_file(dir, "t.csv", good_table);
  char path[512];
  snprintf(path, sizeof path, "%s/t.csv", dir);
  meas_table_t t;
  npu_err_t err = {{0}};
  CU_ASSERT_EQUAL_FATAL(meas_read(path, &t, &err), 0);
  CU_ASSERT_EQUAL(t.n, 6);
  CU_ASSERT_EQUAL(t.rows[5].nops, 2);
  CU_ASSERT_EQUAL(t.rows[5].ops[1].kind, OP_ATTN_BWD);
  CU_ASSERT_EQUAL(t.rows[5].ops[1].dims[2], 4096);
  CU_ASSERT(t.rows[5].held_out);
  CU_ASSERT_STRING_EQUAL(t.device, "Test GPU");
  CU_ASSERT_EQUAL(t.rows[0].ops[0].kind, OP_MATMUL);
  CU_ASSERT(!t.rows[0].ops[0].trans_a && t.rows[0].ops[0].trans_b);
  CU_ASSERT(t.rows[3].ops[0].trans_a && !t.rows[3].ops[0].trans_b);
  CU_ASSERT_EQUAL(t.rows[2].ops[0].dims[4], 4);
  CU_ASSERT(t.rows[2].ops[0].causal);
  CU_ASSERT_EQUAL(t.rows[4].ops[0].out_dtype, CHIP_DTYPE_FP32);
  CU_ASSERT_DOUBLE_EQUAL(t.rows[1].time_s, 60e-6, 1e-12);
  /* matmuls: rows 0 (fit) and 3 (held out); vector: 1 (fit) and 4 (held out) */
  CU_ASSERT(!t.rows[0].held_out && t.rows[3].held_out);
  CU_ASSERT(!t.rows[1].held_out && t.rows[4].held_out);
  CU_ASSERT(!t.rows[2].held_out);
  CU_ASSERT_EQUAL(t.rows[2].line, 5);
  meas_free(&t);
  remove_temp_dir(dir);
}

/* --fit-rows all: every row is a fit row, and a fit then uses them all. */
static void test_fit_all_rows_holds_none_out(void) {
  const char *dir = make_temp_dir();
  write_file(dir, "t.csv", good_table);
  char path[512];
  snprintf(path, sizeof path, "%s/t.csv", dir);
  meas_table_t t;
  npu_err_t err = {{0}};
  CU_ASSERT_EQUAL_FATAL(meas_read(path, &t, &err), 0);
  CU_ASSERT(t.rows[3].held_out && t.rows[4].held_out && t.rows[5].held_out);
  meas_fit_all_rows(&t);
  for (size_t i = 0; i < t.n; i++)
    CU_ASSERT(!t.rows[i].held_out);
  system_cfg_t sys = load_system("h100-dgx.json", NULL);
  cal_errors_t e;
  cal_errors(&sys.chip, &t, &e);
  CU_ASSERT_EQUAL(e.n[MEAS_MATMUL][0], 2);
  CU_ASSERT_EQUAL(e.n[MEAS_VECTOR][0], 2);
  CU_ASSERT_EQUAL(e.n[MEAS_ATTENTION][0], 2);
  CU_ASSERT_EQUAL(e.n[MEAS_MATMUL][1] + e.n[MEAS_VECTOR][1] + e.n[MEAS_ATTENTION][1], 0);
  meas_free(&t);
  remove_temp_dir(dir);
}

static void test_bad_tables_get_one_line_naming_file_line_and_column(void) {
  static const struct {
    const char *text, *expect;
  } cases[] = {
      {"op,shape,dtype\n", "t.csv:1: expected a header with the columns op, shape, dtype and "
                           "time_us, found no \"time_us\""},
      {"op,shape,dtype,time_us\n", "t.csv: expected a header line and at least one measurement, "
                                   "found only the header"},
      {"", "t.csv: expected a header line and at least one measurement, found none"},
      {"op,shape,dtype,time_us\nmatmull,8x8x8,bf16,1\n", "t.csv:2: op: expected an npusim op"},
      {"op,shape,dtype,time_us\nmatmul+rmsnorm,8x8x8,bf16,1\n", "t.csv:2: op: expected joined ops"},
      {"op,shape,dtype,time_us\nmatmul,8x8,8,bf16,1\n", "t.csv:2: dtype: expected one of"},
      {"op,shape,dtype,time_us\nmatmul,8*8*8,bf16,1\n", "t.csv:2: shape: expected up to 5 "
                                                        "integers separated by 'x'"},
      {"op,shape,dtype,time_us\nmatmul,8x8x8,bf16,-1\n", "t.csv:2: time_us: expected a positive"},
      {"op,shape,dtype,time_us\nmatmul,8x8x8,bf16,nan\n", "t.csv:2: time_us: expected a positive"},
      {"op,shape,dtype,time_us,layout\nrmsnorm,8x8,bf16,1,nt\n", "t.csv:2: layout: expected nn"},
      {"op,shape,dtype,time_us,causal\nattention_fwd,1x1x8x8,bf16,1,2\n",
       "t.csv:2: causal: expected 0 or 1"},
      {"op,shape,dtype,time_us\n\"matmul,8x8x8,bf16,1\n", "t.csv:2: expected a closing quote"},
  };
  const char *dir = make_temp_dir();
  char path[512];
  snprintf(path, sizeof path, "%s/t.csv", dir);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    write_file(dir, "t.csv", cases[i].text);
    meas_table_t t;
    npu_err_t err = {{0}};
    CU_ASSERT_EQUAL(meas_read(path, &t, &err), -1);
    const char *msg = strstr(err.msg, "t.csv");
    CU_ASSERT_PTR_NOT_NULL_FATAL(msg);
    if (strncmp(msg, cases[i].expect, strlen(cases[i].expect)) != 0)
      printf("\n  case %zu: got \"%s\"\n", i, msg);
    CU_ASSERT_EQUAL(strncmp(msg, cases[i].expect, strlen(cases[i].expect)), 0);
    CU_ASSERT_PTR_NULL(strchr(err.msg, '\n'));
    CU_ASSERT_PTR_NULL(t.rows);
  }
  remove_temp_dir(dir);
}

/* A table made by the model itself with known parameters. */
static void synthetic_table(const system_cfg_t *truth, meas_table_t *t, meas_row_t *rows,
                            size_t max) {
  static const struct {
    op_kind_t kind;
    int64_t r, c;
  } shapes[] = {{OP_RMSNORM, 256, 4096},   {OP_RMSNORM, 8192, 8192}, {OP_SOFTMAX, 2048, 1024},
                {OP_ADD, 4096, 4096},      {OP_COPY, 16, 1024},      {OP_LAYERNORM, 32768, 2048},
                {OP_SOFTMAX, 256, 16384},  {OP_GELU, 8192, 4096},    {OP_RMSNORM, 64, 1024},
                {OP_CAST, 1, 1 << 26}};
  memset(t, 0, sizeof *t);
  t->rows = rows;
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0] && i < max; i++) {
    meas_row_t *row = &rows[t->n++];
    *row = (meas_row_t){.nops = 1,
                        .ops = {{.kind = shapes[i].kind, .dtype = CHIP_DTYPE_BF16,
                               .out_dtype = CHIP_DTYPE_BF16, .dims = {shapes[i].r, shapes[i].c}}},
                        .cls = MEAS_VECTOR, .held_out = i % 2 == 1};
    op_result_t r;
    op_model(&truth->chip, &row->ops[0], &r);
    row->time_s = r.time_s;
  }
}

static void test_fit_recovers_the_parameters_a_table_was_made_with(void) {
  const char *truth_sets[] = {"chip.hbm.efficiency=0.7", "chip.vector.op_overhead_us=5", NULL};
  system_cfg_t truth = load_system("h100-dgx.json", truth_sets);
  system_cfg_t sys = load_system("h100-dgx.json", NULL);
  meas_row_t rows[16];
  meas_table_t t;
  synthetic_table(&truth, &t, rows, 16);
  cal_errors_t before, after;
  cal_errors(&sys.chip, &t, &before);
  CU_ASSERT(before.geomean[MEAS_VECTOR][1] > 0.05);
  cal_param_t params[] = {{.path = "chip.hbm.efficiency"}, {.path = "chip.vector.op_overhead_us"}};
  double lo, hi;
  bool excl;
  for (int i = 0; i < 2; i++)
    CU_ASSERT_EQUAL(config_system_number(&sys, params[i].path, &params[i].before, &lo, &hi, &excl,
                                         NULL), 0);
  npu_err_t err;
  CU_ASSERT_EQUAL_FATAL(cal_fit(&sys, &t, params, 2, &err), 0);
  CU_ASSERT_DOUBLE_EQUAL(params[0].after, 0.7, 0.007);
  CU_ASSERT_DOUBLE_EQUAL(params[1].after, 5, 0.05);
  cal_errors(&sys.chip, &t, &after);
  CU_ASSERT(after.geomean[MEAS_VECTOR][1] < 0.005); /* the held-out half, never fitted */
  CU_ASSERT_EQUAL(after.n[MEAS_VECTOR][0], 5);
  CU_ASSERT_EQUAL(after.n[MEAS_VECTOR][1], 5);
}

static void test_keys_that_move_nothing_are_not_fitted(void) {
  system_cfg_t sys = load_system("h100-dgx.json", NULL);
  meas_row_t rows[16];
  meas_table_t t;
  synthetic_table(&sys, &t, rows, 16);
  CU_ASSERT(cal_key_matters(&sys, &t, "chip.hbm.efficiency"));
  CU_ASSERT(!cal_key_matters(&sys, &t, "chip.cube.fixpipe_bytes_per_cycle"));
  CU_ASSERT(!cal_key_matters(&sys, &t, "no.such.key"));
}

static void test_number_keys_are_read_and_written_in_config_units(void) {
  system_cfg_t sys = load_system("h100-dgx.json", NULL);
  double v, lo, hi;
  bool excl;
  npu_err_t err;
  CU_ASSERT_EQUAL(config_system_number(&sys, "chip.hbm.bandwidth_GBps", &v, &lo, &hi, &excl, &err),
                  0);
  CU_ASSERT_DOUBLE_EQUAL(v, 3350, 1e-9);
  CU_ASSERT(!excl && lo == 1);
  CU_ASSERT_EQUAL(config_system_set_number(&sys, "chip.hbm.bandwidth_GBps", 4000, &err), 0);
  CU_ASSERT_DOUBLE_EQUAL(sys.chip.hbm.bw_bytes_per_s, 4e12, 1);
  CU_ASSERT_EQUAL(config_system_set_number(&sys, "chip.hbm.efficiency", 1.5, &err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "chip.hbm.efficiency: expected"));
  CU_ASSERT_EQUAL(config_system_number(&sys, "chip.cube.cores", &v, &lo, &hi, &excl, &err), -1);
  const char *paths[128];
  int n = config_system_number_paths("chip.vector.", paths, 128);
  CU_ASSERT(n >= 5);
  for (int i = 0; i < n; i++)
    CU_ASSERT_EQUAL(strncmp(paths[i], "chip.vector.", 12), 0);
}

CU_TestInfo calibrate_tests[] = {
    {"reads rows and splits each class in halves", test_reads_rows_and_splits_each_class_in_halves},
    {"fit all rows holds none out", test_fit_all_rows_holds_none_out},
    {"bad tables get one line naming file, line and column",
     test_bad_tables_get_one_line_naming_file_line_and_column},
    {"fit recovers the parameters a table was made with",
     test_fit_recovers_the_parameters_a_table_was_made_with},
    {"keys that move nothing are not fitted", test_keys_that_move_nothing_are_not_fitted},
    {"number keys are read and written in config units",
     test_number_keys_are_read_and_written_in_config_units},
    CU_TEST_INFO_NULL,
};
