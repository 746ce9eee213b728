/* test_trace.c - the trace reader and writer: every class of bad input with its
 * line, and reading what the writer wrote gives the same bytes back. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"
#include "suites.h"
#include "test_util.h"


static const char *parse_err(const char *text) {
  static npu_err_t err;
  trace_t t;
  err.msg[0] = '\0';
  if (trace_parse("t.json", text, strlen(text), &replay_vocab, &t, &err) == 0)
    trace_free(&t);
  return err.msg;
}

static void expect(const char *text, const char *want) {
  const char *got = parse_err(text);
  CU_ASSERT_STRING_EQUAL(got, want);
  if (strcmp(got, want) != 0)
    fprintf(stderr, "\n  expected: %s\n  got:      %s\n", want, got);
}

#define P2(a, b) "{\"ranks\": \"0\", \"ops\": [" a "]}, {\"ranks\": \"1\", \"ops\": [" b "]}"

static void test_good_trace_reads(void) {
  CU_ASSERT_STRING_EQUAL(parse_err(trace_text(2, "{\"name\": \"w\", \"groups\": [\"0-1\"]}",
      "{\"ranks\": \"0-1\", \"ops\": [{\"id\": 0, \"kind\": \"matmul\", \"shape\": [8, 8, 8]},"
      "{\"id\": 1, \"kind\": \"allreduce\", \"stream\": \"comm\", \"comm\": \"w\", \"bytes\": 64,"
      " \"deps\": [0]}]}")), "");
}

/* "overlaps" names the transfer a compute op runs beside; the writer keeps it. */
static void test_overlaps_reads_and_writes_back(void) {
  const char *text = trace_text(2, "{\"name\": \"w\", \"groups\": [\"0-1\"]}",
      "{\"ranks\": \"0-1\", \"ops\": [{\"id\": 4, \"kind\": \"allreduce\", \"stream\": "
      "\"comm\", \"comm\": \"w\", \"bytes\": 64}, {\"id\": 9, \"kind\": \"matmul\", "
      "\"shape\": [8, 8, 8], \"overlaps\": 4}]}");
  trace_t t;
  npu_err_t err = {""};
  char path[512];
  CU_ASSERT_EQUAL_FATAL(trace_parse("t.json", text, strlen(text), &replay_vocab, &t, &err), 0);
  const trace_op_t *mm = &t.programs[0].ops[1];
  CU_ASSERT(mm->overlapping && mm->overlaps == 0 && !t.programs[0].ops[0].overlapping);
  const char *dir = make_temp_dir();
  snprintf(path, sizeof path, "%s/o.json", dir);
  CU_ASSERT_EQUAL(trace_write(&t, &replay_vocab, path, &err), 0);
  size_t len;
  char why[64];
  char *written = jsonfile_read(path, 1 << 20, &len, why, sizeof why);
  CU_ASSERT_PTR_NOT_NULL_FATAL(written);
  CU_ASSERT_PTR_NOT_NULL(strstr(written, "\"overlaps\": 4"));
  free(written);
  remove_temp_dir(dir);
  trace_free(&t);
  expect(trace_text(1, "", "{\"ranks\": \"0\", \"ops\": [{\"id\": 0, \"kind\": \"send\", \"peer\": 0, "
                     "\"bytes\": 1}, {\"id\": 1, \"kind\": \"matmul\", \"shape\": [8, 8, 8], "
                     "\"overlaps\": 0}]}"),
         "t.json: rank 0 op 1: overlaps: expected the id of a coll, send or recv on another "
         "stream of this program, found 0");
}

static void test_each_bad_input_is_named_with_rank_and_op(void) {
  expect(trace_text(1, "", "{\"ranks\": \"0\", \"ops\": [{\"id\": 3, \"kind\": \"matmull\"}]}"),
         "t.json: rank 0 op 3: kind: expected a compute op (matmul, softmax, ...), compute, a "
         "collective, send, recv, record, wait, delay, alloc or free, found \"matmull\"");
  expect(trace_text(1, "", "{\"ranks\": \"0\", \"ops\": [{\"id\": 3, \"kind\": \"compute\", "
                     "\"duration_us\": 1, \"flops\": 2}]}"),
         "t.json: rank 0 op 3: op: expected a known field, found unknown field \"flops\"");
  expect(trace_text(1, "", "{\"ranks\": \"0\", \"ops\": [{\"id\": 1, \"kind\": \"delay\", "
                     "\"duration_us\": 1}, {\"id\": 1, \"kind\": \"delay\", \"duration_us\": 1}]}"),
         "t.json: rank 0 op 1: id: expected ids unique in a program, found 1 twice");
  expect(trace_text(1, "", "{\"ranks\": \"0\", \"ops\": [{\"id\": 1, \"kind\": \"delay\", "
                     "\"duration_us\": 1, \"deps\": [7]}]}"),
         "t.json: rank 0 op 1: deps: expected ids of ops in this program, found 7");
  expect(trace_text(1, "", "{\"ranks\": \"0\", \"ops\": [{\"id\": 1, \"kind\": \"delay\", \"stream\": "
                     "\"a\", \"duration_us\": 1, \"deps\": [2]}, {\"id\": 2, \"kind\": \"delay\", "
                     "\"stream\": \"b\", \"duration_us\": 1, \"deps\": [1]}]}"),
         "t.json: rank 0 op 1: expected ops that can all complete, found it waiting for rank 0 "
         "op 2, which never completes (a cycle through streams, events, collectives or "
         "send/recv)");
  expect(trace_text(2, "{\"name\": \"w\", \"groups\": [\"0-2\"]}", "{\"ranks\": \"0-1\", \"ops\": []}"),
         "t.json: communicators[0].groups[0]: expected ranks in [0, 2), found \"0-2\"");
  expect(trace_text(2, "{\"name\": \"w\", \"groups\": [\"0-1\"]}",
              P2("{\"id\": 0, \"kind\": \"allreduce\", \"comm\": \"w\", \"bytes\": 64}",
                 "{\"id\": 0, \"kind\": \"allreduce\", \"comm\": \"w\", \"bytes\": 128}")),
         "t.json: rank 1 op 0: expected allreduce of 64 bytes on \"w\" as rank 0 issues it (op "
         "0), found allreduce of 128 bytes");
  expect(trace_text(2, "", P2("{\"id\": 0, \"kind\": \"send\", \"peer\": 1, \"bytes\": 8}",
                        "{\"id\": 0, \"kind\": \"delay\", \"duration_us\": 1}")),
         "t.json: rank 0 op 0: expected a recv on rank 1 for this send, found none");
  expect(trace_text(2, "", P2("{\"id\": 0, \"kind\": \"send\", \"peer\": 1, \"bytes\": 8}",
                        "{\"id\": 0, \"kind\": \"recv\", \"peer\": 0, \"bytes\": 9}")),
         "t.json: rank 1 op 0: bytes: expected 8 as rank 0 sends (op 0), found 9");
  /* each rank first waits for the other's message: a deadlock across ranks */
  expect(trace_text(2, "", P2("{\"id\": 0, \"kind\": \"recv\", \"peer\": 1, \"bytes\": 8},"
                        "{\"id\": 1, \"kind\": \"send\", \"peer\": 1, \"bytes\": 8}",
                        "{\"id\": 0, \"kind\": \"recv\", \"peer\": 0, \"bytes\": 8},"
                        "{\"id\": 1, \"kind\": \"send\", \"peer\": 0, \"bytes\": 8}")),
         "t.json: rank 0 op 1: expected ops that can all complete, found it waiting for rank 0 "
         "op 0, which never completes (a cycle through streams, events, collectives or "
         "send/recv)");
  expect(trace_text(1, "", "{\"ranks\": \"0\", \"ops\": [{\"id\": 0, \"kind\": \"wait\", \"event\": "
                     "\"e\"}]}"),
         "t.json: rank 0 op 0: event: expected an event some op records, found \"e\"");
  expect(trace_text(1, "", "{\"ranks\": \"0\", \"ops\": [{\"id\": 0, \"kind\": \"free\", \"buffer\": "
                     "\"b\"}]}"),
         "t.json: rank 0 op 0: buffer: expected a buffer some op allocates, found \"b\"");
  expect(trace_text(2, "{\"name\": \"w\", \"groups\": [\"0\"]}",
              "{\"ranks\": \"0-1\", \"ops\": [{\"id\": 0, \"kind\": \"allreduce\", \"comm\": "
              "\"w\", \"bytes\": 8}]}"),
         "t.json: rank 1 op 0: comm: expected a communicator with a group holding rank 1, found "
         "\"w\" without one");
  expect(trace_text(2, "{\"name\": \"w\", \"groups\": [\"0-1\"]}",
              "{\"ranks\": \"0-1\", \"ops\": [{\"id\": 0, \"kind\": \"broadcast\", \"comm\": "
              "\"w\", \"bytes\": 8, \"root\": 2}]}"),
         "t.json: rank 0 op 0: root: expected an integer in [0, 1], found 2");
  expect(trace_text(2, "{\"name\": \"w\", \"groups\": [\"0-1\"]}",
              "{\"ranks\": \"0-1\", \"ops\": [{\"id\": 0, \"kind\": \"allreduce\", \"comm\": "
              "\"w\", \"bytes\": 8}, {\"id\": 1, \"kind\": \"allreduce\", \"stream\": \"x\", "
              "\"comm\": \"w\", \"bytes\": 8}]}"),
         "t.json: rank 0 op 1: stream: expected the stream \"compute\" of the earlier "
         "collectives on \"w\", found \"x\"");
  expect(trace_text(2, "", "{\"ranks\": \"0\", \"ops\": []}"),
         "t.json: rank 1: expected a program for every rank, found none");
  expect("{\"format\": \"npusim-trace\", \"version\": 2}",
         "t.json: version: expected an integer in [1, 1], found 2");
  expect("{\"format\": \"x\"", "t.json:1:15: expected valid JSON, found the end of the file");
}

static void test_written_traces_read_back_to_the_same_bytes(void) {
  const char *dir = make_temp_dir();
  const char *samples[] = {"two_ranks_p2p.json", "pipeline_4stage.json", "tp_overlap.json.gz",
                           "mixed.json"};
  for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++) {
    npu_err_t err = {""};
    char in[512], a[512], b[512];
    snprintf(in, sizeof in, "%s/traces/%s", NPUSIM_SOURCE_DIR, samples[i]);
    snprintf(a, sizeof a, "%s/a-%s", dir, samples[i]);
    snprintf(b, sizeof b, "%s/b-%s", dir, samples[i]);
    trace_t t1, t2;
    CU_ASSERT_EQUAL_FATAL(trace_read(in, &replay_vocab, &t1, &err), 0);
    CU_ASSERT_EQUAL_FATAL(trace_write(&t1, &replay_vocab, a, &err), 0);
    CU_ASSERT_EQUAL_FATAL(trace_read(a, &replay_vocab, &t2, &err), 0);
    CU_ASSERT_EQUAL_FATAL(trace_write(&t2, &replay_vocab, b, &err), 0);
    CU_ASSERT_EQUAL(t1.ranks, t2.ranks);
    CU_ASSERT_EQUAL(t1.nprograms, t2.nprograms);
    size_t la, lb;
    char why[64];
    char *da = jsonfile_read(a, 1 << 24, &la, why, sizeof why);
    char *db = jsonfile_read(b, 1 << 24, &lb, why, sizeof why);
    CU_ASSERT_PTR_NOT_NULL_FATAL(da);
    CU_ASSERT_PTR_NOT_NULL_FATAL(db);
    CU_ASSERT(la == lb && memcmp(da, db, la) == 0);
    free(da);
    free(db);
    trace_free(&t1);
    trace_free(&t2);
  }
  remove_temp_dir(dir);
}

static void test_damaged_gzip_is_refused(void) {
  const char *dir = make_temp_dir();
  npu_err_t err = {""};
  char in[512], path[512];
  snprintf(in, sizeof in, "%s/traces/tp_overlap.json.gz", NPUSIM_SOURCE_DIR);
  FILE *f = fopen(in, "rb");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  unsigned char buf[8192];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  snprintf(path, sizeof path, "%s/cut.json.gz", dir);
  f = fopen(path, "wb");
  fwrite(buf, 1, n / 2, f);
  fclose(f);
  trace_t t;
  CU_ASSERT_EQUAL(trace_read(path, &replay_vocab, &t, &err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "expected a readable trace file (.json or .json.gz), found a "
                                     "truncated or corrupt gzip stream"));
  buf[n / 2] ^= 0xff; /* a flipped byte in the deflate stream */
  f = fopen(path, "wb");
  fwrite(buf, 1, n, f);
  fclose(f);
  CU_ASSERT_EQUAL(trace_read(path, &replay_vocab, &t, &err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "truncated or corrupt gzip stream"));
  remove_temp_dir(dir);
}

/* The one pairing rule: channels by resolved peer and tag, k-th with k-th in
 * program order, whatever the streams and spellings. */
static void test_sends_pair_with_recvs_by_resolved_channel_in_program_order(void) {
  /* rank 0: ops 0 (peer_offset +1) and 1 (peer 1) are one channel, from two
   * streams, so rank 0 gets positions of its own; so does rank 1, receiving
   * them spelled two ways; tags x and "" are two channels of rank 2 */
  const char *text = trace_text(3, "",
      "{\"ranks\": \"0\", \"ops\": ["
      "{\"id\": 0, \"kind\": \"send\", \"peer_offset\": 1, \"bytes\": 8, \"stream\": \"a\"},"
      "{\"id\": 1, \"kind\": \"send\", \"peer\": 1, \"bytes\": 16, \"stream\": \"b\"},"
      "{\"id\": 2, \"kind\": \"send\", \"peer\": 2, \"bytes\": 32, \"tag\": \"x\"},"
      "{\"id\": 3, \"kind\": \"send\", \"peer\": 2, \"bytes\": 64}]},"
      "{\"ranks\": \"1\", \"ops\": ["
      "{\"id\": 0, \"kind\": \"recv\", \"peer\": 0, \"bytes\": 8, \"stream\": \"b\"},"
      "{\"id\": 1, \"kind\": \"recv\", \"peer_offset\": -1, \"bytes\": 16, \"stream\": \"a\"}]},"
      "{\"ranks\": \"2\", \"ops\": ["
      "{\"id\": 0, \"kind\": \"recv\", \"peer\": 0, \"bytes\": 64, \"stream\": \"c\"},"
      "{\"id\": 1, \"kind\": \"recv\", \"peer\": 0, \"bytes\": 32, \"tag\": \"x\"}]}");
  trace_t t;
  npu_err_t err = {""};
  int rc = trace_parse("t.json", text, strlen(text), &replay_vocab, &t, &err);
  CU_ASSERT_STRING_EQUAL(err.msg, "");
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  trace_pairing_t pp;
  trace_pairing_init(&pp, &t);
  CU_ASSERT(pp.owned[0] && pp.owned[1] && !pp.owned[2]);
  CU_ASSERT(pp.seq[0][0] == 0 && pp.seq[0][1] == 1 && pp.seq[0][2] == 0 && pp.seq[0][3] == 0);
  CU_ASSERT(pp.seq[1][0] == 0 && pp.seq[1][1] == 1);
  CU_ASSERT(pp.seq[2][0] == 0 && pp.seq[2][1] == 0);
  CU_ASSERT(pp.tag_id[0][t.programs[0].ops[2].tag] == pp.tag_id[2][t.programs[2].ops[1].tag]);
  CU_ASSERT(pp.tag_id[0][0] != pp.tag_id[2][t.programs[2].ops[1].tag]);
  trace_pairing_free(&pp);
  trace_free(&t);
  /* the same channel spelled two ways: the second send meets the second recv */
  expect(trace_text(2, "", P2("{\"id\": 0, \"kind\": \"send\", \"peer\": 1, \"bytes\": 8},"
                        "{\"id\": 1, \"kind\": \"send\", \"peer_offset\": 1, \"bytes\": 9}",
                        "{\"id\": 0, \"kind\": \"recv\", \"peer\": 0, \"bytes\": 8},"
                        "{\"id\": 1, \"kind\": \"recv\", \"peer\": 0, \"bytes\": 8}")),
         "t.json: rank 1 op 1: bytes: expected 9 as rank 0 sends (op 1), found 8");
}

/* The error of text read with sends eager up to eager_max_bytes ("" if none). */
static const char *eager_err(const char *text, double eager_max_bytes) {
  static npu_err_t err;
  trace_vocab_t vocab = replay_vocab;
  vocab.eager_max_bytes = eager_max_bytes;
  trace_t t;
  err.msg[0] = '\0';
  if (trace_parse("t.json", text, strlen(text), &vocab, &t, &err) == 0)
    trace_free(&t);
  return err.msg;
}

/* Ranks that all send before they receive (ASTRA-sim's custom ring): no cycle
 * when the sends are eager, the cycle it is when they wait for their recvs;
 * ranks that all receive first deadlock whatever the sends do. */
static void test_eager_sends_do_not_wait_for_their_recvs(void) {
#define RING(r, next, prev)                                                                        \
  "{\"ranks\": \"" #r "\", \"ops\": [{\"id\": 0, \"kind\": \"send\", \"peer\": " #next             \
  ", \"bytes\": 8}, {\"id\": 1, \"kind\": \"recv\", \"peer\": " #prev ", \"bytes\": 8}]}"
  const char *ring = trace_text(3, "", RING(0, 1, 2) "," RING(1, 2, 0) "," RING(2, 0, 1));
#undef RING
  const char *cycle = "t.json: rank 0 op 1: expected ops that can all complete, found it "
                      "waiting for rank 0 op 0, which never completes (a cycle through "
                      "streams, events, collectives or send/recv)";
  CU_ASSERT_STRING_EQUAL(eager_err(ring, 8), "");
  CU_ASSERT_STRING_EQUAL(eager_err(ring, 7), cycle); /* 8 bytes: above the limit */
  CU_ASSERT_STRING_EQUAL(eager_err(ring, 0), cycle);
  const char *recv_first =
      trace_text(2, "",
                 P2("{\"id\": 0, \"kind\": \"recv\", \"peer\": 1, \"bytes\": 8},"
                    "{\"id\": 1, \"kind\": \"send\", \"peer\": 1, \"bytes\": 8}",
                    "{\"id\": 0, \"kind\": \"recv\", \"peer\": 0, \"bytes\": 8},"
                    "{\"id\": 1, \"kind\": \"send\", \"peer\": 0, \"bytes\": 8}"));
  CU_ASSERT_STRING_EQUAL(eager_err(recv_first, 1e15),
                         "t.json: rank 0 op 1: expected ops that can all complete, found it "
                         "waiting for rank 0 op 0, which never completes (a cycle through "
                         "streams, events, collectives or send/recv)");
}

static void test_buffers_are_allocated_and_freed_in_turn(void) {
  expect(trace_text(1, "", "{\"ranks\": \"0\", \"ops\": ["
                     "{\"id\": 0, \"kind\": \"alloc\", \"buffer\": \"a\", \"bytes\": 8},"
                     "{\"id\": 1, \"kind\": \"alloc\", \"buffer\": \"a\", \"bytes\": 8}]}"),
         "t.json: rank 0 op 1: buffer: expected a buffer not in use, found \"a\" still "
         "allocated by op 0");
  expect(trace_text(1, "", "{\"ranks\": \"0\", \"ops\": ["
                     "{\"id\": 0, \"kind\": \"free\", \"buffer\": \"a\"},"
                     "{\"id\": 1, \"kind\": \"alloc\", \"buffer\": \"a\", \"bytes\": 8}]}"),
         "t.json: rank 0 op 0: buffer: expected a buffer an earlier op allocates, found \"a\" "
         "not allocated here");
  CU_ASSERT_STRING_EQUAL(parse_err(trace_text(1, "", "{\"ranks\": \"0\", \"ops\": ["
      "{\"id\": 0, \"kind\": \"alloc\", \"buffer\": \"a\", \"bytes\": 8},"
      "{\"id\": 1, \"kind\": \"free\", \"buffer\": \"a\"},"
      "{\"id\": 2, \"kind\": \"alloc\", \"buffer\": \"a\", \"bytes\": 8}]}")), "");
}

CU_TestInfo trace_tests[] = {
    {"a good trace reads", test_good_trace_reads},
    {"overlaps reads and writes back", test_overlaps_reads_and_writes_back},
    {"each bad input is named with rank and op", test_each_bad_input_is_named_with_rank_and_op},
    {"written traces read back to the same bytes", test_written_traces_read_back_to_the_same_bytes},
    {"damaged gzip is refused", test_damaged_gzip_is_refused},
    {"sends pair with recvs by resolved channel in program order",
     test_sends_pair_with_recvs_by_resolved_channel_in_program_order},
    {"buffers are allocated and freed in turn", test_buffers_are_allocated_and_freed_in_turn},
    {"eager sends do not wait for their recvs", test_eager_sends_do_not_wait_for_their_recvs},
    CU_TEST_INFO_NULL,
};
