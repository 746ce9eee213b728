/* test_chakra.c - the Chakra execution-trace writer and reader: a trace written
 * as Chakra ETs reads back with its streams, dependencies and events. */
#include <CUnit/CUnit.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "chakra.h"
#include "replay.h"
#include "suites.h"
#include "test_util.h"

static void one_us(const void *ctx, int rank, int op, double *ran_s, double *nominal_s) {
  (void)ctx, (void)rank, (void)op;
  *ran_s = *nominal_s = 1e-6;
}

/* Removes PREFIX.0.et .. PREFIX.(n-1).et, a test's exported ranks. */
static void remove_ranks(const char *prefix, int n) {
  for (int r = 0; r < n; r++) {
    char f[256];
    snprintf(f, sizeof f, "%s.%d.et", prefix, r);
    remove(f);
  }
}

/* A trace written as Chakra reads back with its streams, its dependencies and
 * its events: a wait depends on the op that records its event (a ctrl_dep). */
static void test_chakra_keeps_streams_deps_and_events(void) {
  npu_err_t err = {""};
  char in[512];
  snprintf(in, sizeof in, "%s/traces/mixed.json", NPUSIM_SOURCE_DIR);
  trace_t t, back;
  CU_ASSERT_EQUAL_FATAL(trace_read(in, &replay_vocab, &t, &err), 0);
  char dir[] = "/tmp/npusim-chakra-XXXXXX", prefix[64], groups[96];
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
  snprintf(prefix, sizeof prefix, "%s/m", dir);
  snprintf(groups, sizeof groups, "%s.comm_groups.json", prefix);
  CU_ASSERT_EQUAL_FATAL(
      chakra_write(prefix, &t, &replay_vocab, CHAKRA_ALLGATHER_INPUT, one_us, NULL, &err), 0);
  chakra_opts_t o = {.compute = CHAKRA_COMPUTE_DURATION, .comm_groups = groups};
  long skipped;
  CU_ASSERT_EQUAL_FATAL(chakra_read(prefix, &o, &replay_vocab, &back, &skipped, &err),
                        0);
  CU_ASSERT_EQUAL(back.ranks, t.ranks);
  const trace_program_t *p = &back.programs[0];
  CU_ASSERT_EQUAL_FATAL(p->nops, t.programs[0].nops);
  const trace_op_t *wait = &p->ops[5]; /* mixed.json: op 4 records attn_done, op 5 waits */
  bool on_record = false;
  for (int d = 0; d < wait->ndeps; d++)
    on_record = on_record || wait->deps[d] == 4;
  CU_ASSERT(on_record);
  CU_ASSERT_STRING_EQUAL(p->streams[wait->stream], "comm");
  CU_ASSERT_EQUAL(p->ops[6].type, TRACE_OP_COLL); /* the tp allreduce */
  trace_free(&back);
  trace_free(&t);
  remove_ranks(prefix, 16);
  remove(groups);
  remove(dir);
}

/* An all-gather of 4096 bytes (npusim's count: all 4 ranks' data) on a group
 * of 4, written under one convention of comm_size and read under each: input
 * (ASTRA-sim's: 1024 bytes a rank, read back x 4) or total. An all-reduce's
 * size is the same under both. */
static void test_chakra_allgather_sizes(void) {
  npu_err_t err = {""};
  char dir[] = "/tmp/npusim-chakra-ag-XXXXXX", in[96], prefix[96], groups[128];
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
  snprintf(in, sizeof in, "%s/ag.json", dir);
  FILE *f = fopen(in, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fputs("{\"format\": \"npusim-trace\", \"version\": 1, \"ranks\": 8,\n"
        " \"communicators\": [{\"name\": \"tp\", \"groups\": [\"0-3\", \"4-7\"]}],\n"
        " \"programs\": [{\"ranks\": \"0-7\", \"ops\": [\n"
        "  {\"id\": 0, \"kind\": \"allgather\", \"stream\": \"comm\", \"comm\": \"tp\", "
        "\"bytes\": 4096},\n"
        "  {\"id\": 1, \"kind\": \"allreduce\", \"stream\": \"comm\", \"comm\": \"tp\", "
        "\"bytes\": 4096}]}]}\n",
        f);
  fclose(f);
  trace_t t;
  CU_ASSERT_EQUAL_FATAL(trace_read(in, &replay_vocab, &t, &err), 0);
  snprintf(prefix, sizeof prefix, "%s/ag", dir);
  snprintf(groups, sizeof groups, "%s.comm_groups.json", prefix);
  /* [written][read]: the all-gather's bytes read back */
  const double want[2][2] = {{4096, 1024}, {16384, 4096}};
  for (int w = 0; w < CHAKRA_ALLGATHER_COUNT; w++) {
    CU_ASSERT_EQUAL_FATAL(
        chakra_write(prefix, &t, &replay_vocab, (chakra_allgather_t)w, one_us, NULL, &err), 0);
    for (int r = 0; r < CHAKRA_ALLGATHER_COUNT; r++) {
      chakra_opts_t o = {.compute = CHAKRA_COMPUTE_DURATION,
                         .comm_groups = groups,
                         .allgather = (chakra_allgather_t)r};
      trace_t back;
      long skipped;
      CU_ASSERT_EQUAL_FATAL(chakra_read(prefix, &o, &replay_vocab, &back, &skipped, &err), 0);
      for (int rank = 0; rank < 8; rank++) {
        const trace_program_t *p = &back.programs[back.program_of[rank]];
        CU_ASSERT_EQUAL(p->ops[0].bytes, want[w][r]);
        CU_ASSERT_EQUAL(p->ops[1].bytes, 4096);
      }
      trace_free(&back);
    }
  }
  CU_ASSERT_EQUAL(chakra_allgather_parse("input"), CHAKRA_ALLGATHER_INPUT);
  CU_ASSERT_EQUAL(chakra_allgather_parse("total"), CHAKRA_ALLGATHER_TOTAL);
  CU_ASSERT_EQUAL(chakra_allgather_parse("output"), -1);
  trace_free(&t);
  remove_ranks(prefix, 8);
  remove(groups);
  remove(in);
  remove(dir);
}

CU_TestInfo chakra_tests[] = {
    {"Chakra keeps streams, deps and events", test_chakra_keeps_streams_deps_and_events},
    {"Chakra all-gather comm_size: input or total", test_chakra_allgather_sizes},
    CU_TEST_INFO_NULL,
};
