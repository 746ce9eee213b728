/* test_jobs.c - several jobs on one cluster: placement policies and the
 * merged trace (sim/jobs/). */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chakra.h"
#include "jobs_merge.h"
#include "jobs_place.h"
#include "replay.h"
#include "suites.h"

/* 8 servers of 4 NPUs, 2 servers per leaf. */
static const int leaf_of_server[8] = {0, 0, 1, 1, 2, 2, 3, 3};
static const jobs_fabric_t fab = {8, 4, leaf_of_server};

static void place(const char *arg, int ranks, bool *used, int *map, int want_rc) {
  jobs_spec_t spec;
  npu_err_t err = {""};
  CU_ASSERT_EQUAL_FATAL(jobs_parse_spec(arg, &spec, &err), 0);
  CU_ASSERT_EQUAL(jobs_place(&spec, ranks, &fab, used, map, &err), want_rc);
  CU_ASSERT(want_rc == 0 || strlen(err.msg) > 0);
}

static void test_packed(void) {
  bool used[32] = {false};
  int a[2], b[8], c[2];
  place("a.json", 2, used, a, 0);
  place("b.json@packed", 8, used, b, 0);
  place("c.json", 2, used, c, 0);
  CU_ASSERT(a[0] == 0 && a[1] == 1);
  CU_ASSERT(b[0] == 4 && b[7] == 11); /* whole free servers: 1 and 2 */
  CU_ASSERT(c[0] == 2 && c[1] == 3);  /* the small job fills server 0 */
}

static void test_spread(void) {
  bool used[32] = {false};
  int a[16], b[16];
  place("a.json@spread", 16, used, a, 0);
  place("b.json@spread", 16, used, b, 0);
  int want_a[4] = {0, 8, 16, 24}, want_b[4] = {4, 12, 20, 28}; /* one server per leaf each */
  for (int s = 0; s < 4; s++) {
    CU_ASSERT_EQUAL(a[4 * s], want_a[s]);
    CU_ASSERT_EQUAL(b[4 * s], want_b[s]);
    CU_ASSERT_EQUAL(a[4 * s + 3], want_a[s] + 3); /* local indices kept */
  }
  int c[4];
  place("c.json@spread", 4, used, c, -1); /* full */
}

static void test_list(void) {
  bool used[32] = {false};
  int a[4], b[4];
  place("a.json@3,1-2,30", 4, used, a, 0);
  CU_ASSERT(a[0] == 3 && a[1] == 1 && a[2] == 2 && a[3] == 30);
  place("b.json@0-2,3", 4, used, b, -1); /* 1 is taken */
  place("b.json@0-4", 4, used, b, -1);   /* five NPUs for four ranks */
  jobs_spec_t spec;
  npu_err_t err = {""};
  CU_ASSERT_EQUAL(jobs_parse_spec("a.json@4-2", &spec, &err), -1);
  CU_ASSERT_EQUAL(jobs_parse_spec("a.json@1,,2", &spec, &err), -1);
  CU_ASSERT_EQUAL(jobs_parse_spec("@packed", &spec, &err), -1);
  char buf[64];
  jobs_format_npus(a, 4, buf, sizeof buf);
  CU_ASSERT_STRING_EQUAL(buf, "3,1-2,30");
}

/* Four ranks in a ring of sends to the next (peer_offset +1, -3 at the end),
 * placed so that the offsets move: every send still reaches map[r + offset]. */
static void test_merge_moves_offsets(void) {
  const char *fixed =
      "{\"format\": \"npusim-trace\", \"version\": 1, \"name\": \"ring\", \"ranks\": 4,"
      " \"communicators\": [{\"name\": \"all\", \"groups\": [\"0-3\"]}], \"programs\": ["
      " {\"ranks\": \"0\", \"ops\": ["
      "  {\"id\": 0, \"kind\": \"send\", \"stream\": \"a\", \"peer_offset\": 1, \"bytes\": 8},"
      "  {\"id\": 1, \"kind\": \"recv\", \"stream\": \"b\", \"peer_offset\": 3, \"bytes\": 8},"
      "  {\"id\": 2, \"kind\": \"allreduce\", \"stream\": \"a\", \"comm\": \"all\","
      "   \"bytes\": 64},"
      "  {\"id\": 3, \"kind\": \"record\", \"stream\": \"b\", \"event\": \"e\", \"deps\": [2]},"
      "  {\"id\": 4, \"kind\": \"wait\", \"stream\": \"a\", \"event\": \"e\"}]},"
      " {\"ranks\": \"1-2\", \"ops\": ["
      "  {\"id\": 0, \"kind\": \"send\", \"stream\": \"a\", \"peer_offset\": 1, \"bytes\": 8},"
      "  {\"id\": 1, \"kind\": \"recv\", \"stream\": \"b\", \"peer_offset\": -1, \"bytes\": 8},"
      "  {\"id\": 2, \"kind\": \"allreduce\", \"stream\": \"a\", \"comm\": \"all\","
      "   \"bytes\": 64}]},"
      " {\"ranks\": \"3\", \"ops\": ["
      "  {\"id\": 0, \"kind\": \"send\", \"stream\": \"a\", \"peer_offset\": -3, \"bytes\": 8},"
      "  {\"id\": 1, \"kind\": \"recv\", \"stream\": \"b\", \"peer_offset\": -1, \"bytes\": 8},"
      "  {\"id\": 2, \"kind\": \"allreduce\", \"stream\": \"a\", \"comm\": \"all\","
      "   \"bytes\": 64}]}]}";
  trace_t t;
  npu_err_t err = {""};
  CU_ASSERT_EQUAL_FATAL(
      trace_parse("ring", fixed, strlen(fixed), &replay_vocab, &t, &err), 0);
  int map[4] = {9, 2, 7, 4};
  jobs_part_t part = {&t, map, 2};
  jobs_merged_t m;
  CU_ASSERT_EQUAL_FATAL(jobs_merge(&part, 1, 12, &m, &err), 0);
  CU_ASSERT_EQUAL(m.trace.ranks, 12);
  for (int r = 0; r < 4; r++) {
    int pi = m.trace.program_of[map[r]];
    const trace_program_t *p = &m.trace.programs[pi];
    CU_ASSERT_EQUAL(m.programs[pi].job, 0);
    int step = r == 0 ? 5 : 3; /* ops per step; step 2 starts after the barrier */
    CU_ASSERT_EQUAL(p->nops, 2 * step + 1);
    CU_ASSERT_EQUAL(m.programs[pi].step_ops, step);
    CU_ASSERT_EQUAL(p->ops[step].type, TRACE_OP_BARRIER);
    CU_ASSERT_EQUAL(trace_peer(&p->ops[0], map[r]), map[(r + 1) % 4]);
    CU_ASSERT_EQUAL(trace_peer(&p->ops[step + 2], map[r]), map[(r + 3) % 4]); /* step 2's recv */
    CU_ASSERT_EQUAL(p->ops[step + 1].id, p->ops[0].id); /* the trace's ids, each step */
    const trace_comm_t *cm = &m.trace.comms[p->ops[2].comm];
    CU_ASSERT_EQUAL(cm->groups[trace_group_of(cm, map[r])][r], map[r]);
  }
  const trace_program_t *p0 = &m.trace.programs[m.trace.program_of[map[0]]];
  CU_ASSERT_EQUAL_FATAL(p0->ops[6 + 3].ndeps, 1);
  CU_ASSERT_EQUAL(p0->ops[6 + 3].deps[0], 6 + 2); /* step 2's record waits on step 2's op */
  CU_ASSERT_STRING_EQUAL(p0->events[p0->ops[3].event], "e#0");
  CU_ASSERT_STRING_EQUAL(p0->events[p0->ops[6 + 4].event], "e#1"); /* its own step's event */
  int idle = m.trace.program_of[0];
  CU_ASSERT_EQUAL(m.programs[idle].job, -1);
  CU_ASSERT_EQUAL(m.trace.programs[idle].nops, 0);
  CU_ASSERT_EQUAL(m.trace.programs[idle].nranks, 8);
  jobs_merged_free(&m);
  trace_free(&t);
}

static void no_time(const void *ctx, int rank, int op, double *ran_s, double *nominal_s) {
  (void)ctx, (void)rank, (void)op;
  *ran_s = *nominal_s = 0;
}

/* A trace with step barriers is no file's: both writers refuse it, saying so,
 * and write nothing. */
static void writers_refuse_barriers(const trace_t *t) {
  npu_err_t err = {""};
  char dir[] = "/tmp/npusim_jobs_XXXXXX", path[64];
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/t.json", dir);
  CU_ASSERT_EQUAL(trace_write(t, &replay_vocab, path, &err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "step barrier"));
  snprintf(path, sizeof path, "%s/c", dir);
  err.msg[0] = '\0';
  CU_ASSERT_EQUAL(chakra_write(path, t, &replay_vocab, CHAKRA_ALLGATHER_INPUT, no_time, NULL, &err),
                  -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "step barrier"));
  CU_ASSERT_EQUAL(rmdir(dir), 0); /* empty: nothing was written */
}

/* One rank on two streams, 3 steps: a barrier ends each step but the last,
 * after the step's last op on the other stream, and the next step's first op
 * there waits for it; the barrier's communicator holds the job's NPU. */
static void test_merge_step_barrier(void) {
  const char *two =
      "{\"format\": \"npusim-trace\", \"version\": 1, \"name\": \"two\", \"ranks\": 1,"
      " \"communicators\": [], \"programs\": [{\"ranks\": \"0\", \"ops\": ["
      "  {\"id\": 0, \"kind\": \"delay\", \"stream\": \"a\", \"duration_us\": 1},"
      "  {\"id\": 1, \"kind\": \"delay\", \"stream\": \"b\", \"duration_us\": 5},"
      "  {\"id\": 2, \"kind\": \"delay\", \"stream\": \"b\", \"duration_us\": 5}]}]}";
  trace_t t;
  npu_err_t err = {""};
  CU_ASSERT_EQUAL_FATAL(trace_parse("two", two, strlen(two), &replay_vocab, &t, &err),
                        0);
  int map[1] = {2};
  jobs_part_t part = {&t, map, 3};
  jobs_merged_t m;
  CU_ASSERT_EQUAL_FATAL(jobs_merge(&part, 1, 4, &m, &err), 0);
  const trace_program_t *p = &m.trace.programs[m.trace.program_of[2]];
  CU_ASSERT_EQUAL_FATAL(p->nops, 3 * 3 + 2);
  for (int s = 0; s < 2; s++) {
    const trace_op_t *b = &p->ops[s * 4 + 3];
    CU_ASSERT_EQUAL(b->type, TRACE_OP_BARRIER);
    CU_ASSERT_EQUAL(b->stream, 0);
    CU_ASSERT_EQUAL_FATAL(b->ndeps, 1);
    CU_ASSERT_EQUAL(b->deps[0], s * 4 + 2); /* stream b's last op of the step */
    const trace_op_t *next_b = &p->ops[(s + 1) * 4 + 1];
    CU_ASSERT_EQUAL_FATAL(next_b->ndeps, 1);
    CU_ASSERT_EQUAL(next_b->deps[0], s * 4 + 3); /* the next step waits for the barrier */
    const trace_comm_t *cm = &m.trace.comms[b->comm];
    CU_ASSERT(cm->ngroups == 1 && cm->sizes[0] == 1 && cm->groups[0][0] == 2);
  }
  writers_refuse_barriers(&m.trace);
  jobs_merged_free(&m);
  part.steps = 1; /* one step: no barrier, no communicator */
  CU_ASSERT_EQUAL_FATAL(jobs_merge(&part, 1, 4, &m, &err), 0);
  CU_ASSERT_EQUAL(m.trace.programs[m.trace.program_of[2]].nops, 3);
  CU_ASSERT_EQUAL(m.trace.ncomms, 0);
  jobs_merged_free(&m);
  trace_free(&t);
}

/* Op ids up to the reader's 2^30 merge over several steps as the trace has them (were
 * step x (largest id + 1) + id: signed overflow from 2^30). */
static void test_merge_large_ids(void) {
  const char *big =
      "{\"format\": \"npusim-trace\", \"version\": 1, \"name\": \"big\", \"ranks\": 1,"
      " \"communicators\": [], \"programs\": [{\"ranks\": \"0\", \"ops\": ["
      "  {\"id\": 1073741823, \"kind\": \"delay\", \"stream\": \"a\", \"duration_us\": 1},"
      "  {\"id\": 1073741824, \"kind\": \"delay\", \"stream\": \"a\", \"duration_us\": 1,"
      "   \"deps\": [1073741823]}]}]}";
  trace_t t;
  npu_err_t err = {""};
  CU_ASSERT_EQUAL_FATAL(trace_parse("big", big, strlen(big), &replay_vocab, &t, &err),
                        0);
  int map[1] = {0};
  jobs_part_t part = {&t, map, 3};
  jobs_merged_t m;
  CU_ASSERT_EQUAL_FATAL(jobs_merge(&part, 1, 1, &m, &err), 0);
  const trace_program_t *p = &m.trace.programs[0];
  CU_ASSERT_EQUAL_FATAL(p->nops, 3 * 2 + 2);
  for (int s = 0; s < 3; s++) {
    CU_ASSERT_EQUAL(p->ops[s * 3].id, 1073741823);
    CU_ASSERT_EQUAL(p->ops[s * 3 + 1].id, 1073741824);
    CU_ASSERT_EQUAL(p->ops[s * 3 + 1].deps[0], s * 3); /* its own step's op */
  }
  jobs_merged_free(&m);
  trace_free(&t);
}

/* A merge past the bound (jobs_merge.h) is refused before anything is built. */
static void test_merge_size_bound(void) {
  const char *one =
      "{\"format\": \"npusim-trace\", \"version\": 1, \"name\": \"one\", \"ranks\": 2,"
      " \"communicators\": [], \"programs\": [{\"ranks\": \"0-1\", \"ops\": ["
      "  {\"id\": 0, \"kind\": \"delay\", \"stream\": \"a\", \"duration_us\": 1}]}]}";
  trace_t t;
  npu_err_t err = {""};
  CU_ASSERT_EQUAL_FATAL(trace_parse("one", one, strlen(one), &replay_vocab, &t, &err),
                        0);
  int map[2] = {0, 1};
  int steps = (int)(JOBS_MAX_RANK_OPS / 4) + 1; /* 2 ranks x (1 op + 1 barrier) per step */
  jobs_part_t part = {&t, map, steps};
  jobs_size_t size;
  CU_ASSERT_EQUAL_FATAL(jobs_merge_size(&part, 1, &size, &err), 0);
  CU_ASSERT_EQUAL(size.rank_ops, 2 * (2 * (int64_t)steps - 1));
  CU_ASSERT_EQUAL(size.merged_ops, 2 * (int64_t)steps - 1); /* one program, one group */
  jobs_merged_t m;
  CU_ASSERT_EQUAL(jobs_merge(&part, 1, 2, &m, &err), -1);
  char want[64];
  snprintf(want, sizeof want, "expected at most %lld ops run on all NPUs", JOBS_MAX_RANK_OPS);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, want));
  CU_ASSERT_EQUAL(m.trace.nprograms, 0);
  part.steps = steps - 1; /* 2 x (2 x steps - 3) is within it */
  CU_ASSERT_EQUAL(jobs_merge_size(&part, 1, &size, &err), 0);
  CU_ASSERT(size.rank_ops <= JOBS_MAX_RANK_OPS);
  trace_free(&t);
}

CU_TestInfo jobs_tests[] = {
    {"packed: whole free servers, small jobs fill a server", test_packed},
    {"spread: servers round-robin over the leaves", test_spread},
    {"list: in rank order, taken and miscounted NPUs refused", test_list},
    {"merge: peers land on the mapped NPUs, steps repeat, idle NPUs run nothing",
     test_merge_moves_offsets},
    {"merge: a barrier between steps, after every stream's last op", test_merge_step_barrier},
    {"merge: op ids up to 2^30 keep their values over the steps", test_merge_large_ids},
    {"merge: past the size bound, refused before building", test_merge_size_bound},
    CU_TEST_INFO_NULL,
};
