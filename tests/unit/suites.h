/* suites.h - the CUnit test arrays each test_*.c exports. */
#ifndef NPUSIM_TEST_SUITES_H
#define NPUSIM_TEST_SUITES_H

#include <CUnit/CUnit.h>

extern CU_TestInfo config_tests[];
extern CU_TestInfo config_rules_tests[];
extern CU_TestInfo model_tests[];
extern CU_TestInfo coll_tests[];
extern CU_TestInfo op_tests[];
extern CU_TestInfo trace_tests[];
extern CU_TestInfo chakra_tests[];
extern CU_TestInfo replay_tests[];
extern CU_TestInfo train_tests[];
extern CU_TestInfo calibrate_tests[];
extern CU_TestInfo outfile_tests[];
extern CU_TestInfo serve_tests[];
extern CU_TestInfo serve_comm_tests[];
extern CU_TestInfo jobs_tests[];
extern CU_TestInfo out_format_tests[];
extern CU_TestInfo intervals_tests[];
extern CU_TestInfo transformer_tests[];
extern CU_TestInfo check_tests[];

#endif
