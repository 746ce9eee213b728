/* test_main.c - runs every CUnit suite of the module tests and exits non-zero
 * on any failure. Suites are declared by their files (test_*.c). */
#include <CUnit/Basic.h>
#include <stdio.h>

#include "suites.h"

int main(void) {
  CU_SuiteInfo suites[] = {
      {.pName = "config", .pTests = config_tests},
      {.pName = "config_rules", .pTests = config_rules_tests},
      {.pName = "models", .pTests = model_tests},
      {.pName = "coll", .pTests = coll_tests},
      {.pName = "op", .pTests = op_tests},
      {.pName = "trace", .pTests = trace_tests},
      {.pName = "chakra", .pTests = chakra_tests},
      {.pName = "replay", .pTests = replay_tests},
      {.pName = "train", .pTests = train_tests},
      {.pName = "calibrate", .pTests = calibrate_tests},
      {.pName = "outfile", .pTests = outfile_tests},
      {.pName = "serve", .pTests = serve_tests},
      {.pName = "serve_comm", .pTests = serve_comm_tests},
      {.pName = "jobs", .pTests = jobs_tests},
      {.pName = "out_format", .pTests = out_format_tests},
      {.pName = "intervals", .pTests = intervals_tests},
      {.pName = "transformer", .pTests = transformer_tests},
      {.pName = "check", .pTests = check_tests},
      CU_SUITE_INFO_NULL,
  };
  if (CU_initialize_registry() != CUE_SUCCESS)
    return 1;
  if (CU_register_suites(suites) != CUE_SUCCESS) {
    fprintf(stderr, "%s\n", CU_get_error_msg());
    CU_cleanup_registry();
    return 1;
  }
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failures = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
  CU_cleanup_registry();
  return failures != 0;
}
