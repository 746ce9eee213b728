/* test_replay.c - the replay's plan and its sweep engine, without the
 * command line: the fidelity table and its choice, what the plan decides for a
 * trace, the times the sweep gives for known meetings, and the one-line report
 * of an op that cannot finish. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay_contend.h"
#include "replay_summary.h"
#include "suites.h"
#include "test_util.h"

typedef struct {
  system_cfg_t sys;
  trace_t trace;
  topo_t topo;
  replay_plan_t plan;
  replay_record_t rec;
} fixture_t;


/* Reads the trace and builds its plan (asserting both work). */
static void setup(fixture_t *f, const char *text, replay_opts_t opts) {
  memset(f, 0, sizeof *f);
  f->sys = load_system("ascend-910b.json", NULL);
  npu_err_t err = {""};
  CU_ASSERT_EQUAL_FATAL(trace_parse("t.json", text, strlen(text), &replay_vocab, &f->trace, &err), 0);
  CU_ASSERT_EQUAL_FATAL(topo_build(&f->sys.node, &f->sys.cluster, f->sys.chip.dies_per_package,
                                   f->trace.ranks, 0, &f->topo, &err), 0);
  int rc =
      replay_plan_build(&f->plan, &f->sys, &f->trace, &f->topo,
                        replay_fidelity_choose(&opts, &f->topo), "t.json", &opts, &err);
  CU_ASSERT_STRING_EQUAL(err.msg, "");
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  replay_record_init(&f->rec, &f->plan);
}

static void teardown(fixture_t *f) {
  replay_record_free(&f->rec, &f->trace);
  replay_plan_free(&f->plan);
  topo_free(&f->topo);
  trace_free(&f->trace);
}

static const replay_opts_t analytic = {.flow = false};

#define TWO_ALLREDUCES                                                                    \
  "{\"ranks\": \"0-3\", \"ops\": [{\"id\": 0, \"kind\": \"matmul\", \"shape\": [512, 512, 512]}," \
  "{\"id\": 1, \"kind\": \"allreduce\", \"stream\": \"c\", \"comm\": \"w\", \"bytes\": 1048576," \
  " \"deps\": [0]}, {\"id\": 2, \"kind\": \"record\", \"event\": \"e\"},"                  \
  "{\"id\": 3, \"kind\": \"wait\", \"stream\": \"c\", \"event\": \"e\"},"                  \
  "{\"id\": 4, \"kind\": \"allreduce\", \"stream\": \"c\", \"comm\": \"w\", \"bytes\": 1048576}]}"

static void test_plan_shares_a_collective_and_picks_the_engine(void) {
  fixture_t f;
  setup(&f, trace_text(4, "{\"name\": \"w\", \"groups\": [\"0-3\"]}", TWO_ALLREDUCES), analytic);
  const replay_plan_t *pl = &f.plan;
  CU_ASSERT_EQUAL(pl->ninsts, 1); /* both allreduces: one group, one signature */
  CU_ASSERT_EQUAL(pl->inst_of[2][1], 0);
  CU_ASSERT_EQUAL(pl->inst_of[2][4], 0);
  CU_ASSERT_EQUAL(pl->insts[0].members, 4u);
  CU_ASSERT_EQUAL(pl->insts[0].mode, INST_ANALYTIC);
  CU_ASSERT(pl->insts[0].analytic_s > 0);
  CU_ASSERT(pl->compute_s[0][0] > 0);
  CU_ASSERT(pl->watched[0][0] && pl->watched[0][2] && !pl->watched[0][4]);
  CU_ASSERT_EQUAL(pl->record_of[0][0], 2);
  CU_ASSERT(pl->sweep);
  CU_ASSERT_EQUAL(replay_plan_streams(pl), 8);
  teardown(&f);
  /* one rank per program stands for the others */
  setup(&f, trace_text(4, "{\"name\": \"w\", \"groups\": [\"0-3\"]}", TWO_ALLREDUCES),
        (replay_opts_t){.representatives = true});
  CU_ASSERT(f.plan.simulated[0] && !f.plan.simulated[1] && !f.plan.simulated[3]);
  CU_ASSERT_EQUAL(f.plan.insts[0].members, 1u);
  CU_ASSERT_EQUAL(replay_plan_streams(&f.plan), 2);
  teardown(&f);
  /* asked for the actors, or memory ops: no sweep; flow: collectives flow */
  setup(&f, trace_text(4, "{\"name\": \"w\", \"groups\": [\"0-3\"]}", TWO_ALLREDUCES),
        (replay_opts_t){.force_actors = true});
  CU_ASSERT(!f.plan.sweep);
  teardown(&f);
  setup(&f, trace_text(1, "", "{\"ranks\": \"0\", \"ops\": [{\"id\": 0, \"kind\": \"alloc\", "
                        "\"buffer\": \"b\", \"bytes\": 8}]}"), analytic);
  CU_ASSERT(!f.plan.sweep);
  teardown(&f);
  setup(&f, trace_text(4, "{\"name\": \"w\", \"groups\": [\"0-3\"]}", TWO_ALLREDUCES),
        (replay_opts_t){.flow = true});
  CU_ASSERT(!f.plan.sweep && f.plan.insts[0].mode == INST_FLOW);
  CU_ASSERT_PTR_EQUAL(f.plan.fidelity, &replay_flow);
  teardown(&f);
}

static void test_sweep_meets_at_the_later_arrival(void) {
  fixture_t f;
  setup(&f, trace_text(2, "{\"name\": \"w\", \"groups\": [\"0-1\"]}",
                 "{\"ranks\": \"0\", \"ops\": [{\"id\": 0, \"kind\": \"compute\", "
                 "\"duration_us\": 10}, {\"id\": 1, \"kind\": \"send\", \"peer\": 1, "
                 "\"bytes\": 1048576}, {\"id\": 2, \"kind\": \"compute\", \"duration_us\": 50},"
                 "{\"id\": 3, \"kind\": \"allreduce\", \"comm\": \"w\", \"bytes\": 4096}]},"
                 "{\"ranks\": \"1\", \"ops\": [{\"id\": 0, \"kind\": \"recv\", \"peer\": 0, "
                 "\"bytes\": 1048576}, {\"id\": 1, \"kind\": \"allreduce\", \"comm\": \"w\", "
                 "\"bytes\": 4096}]}"),
        analytic);
  replay_sweep_run(&f.plan, &f.rec);
  npu_err_t err = {""};
  CU_ASSERT_EQUAL(replay_check_finished(&f.plan, &f.rec, "t.json", &err), 0);
  const replay_span_t *s0 = f.rec.spans[0], *s1 = f.rec.spans[1];
  double p2p = topo_path_time_s(&f.topo, 0, 1, 1048576);
  CU_ASSERT_DOUBLE_EQUAL(s1[0].start_s, 0, 1e-15); /* the recv waits from 0 */
  CU_ASSERT_DOUBLE_EQUAL(s1[0].ready_s, 10e-6, 1e-15);
  CU_ASSERT_EQUAL(s1[0].end_s, s1[0].ready_s + p2p); /* the same arithmetic, to the bit */
  CU_ASSERT_EQUAL(s0[1].end_s, s1[0].end_s);
  double ar = f.plan.insts[0].analytic_s, later = s0[2].end_s;
  CU_ASSERT_EQUAL(s1[1].ready_s, later); /* the allreduce starts when rank 0 comes */
  CU_ASSERT_EQUAL(s1[1].end_s, later + ar);
  CU_ASSERT_EQUAL(s0[3].end_s, later + ar);
  teardown(&f);
}

/* The stand-ins that matter: 16 ranks on two 910B servers under one leaf,
 * ranks 0-7 one program (rank 0 its representative) and 8-15 another (rank
 * 8), each an all-reduce on DP groups {i, i + 8} beside a message from i to
 * i + 8, so the representatives' all-reduce shares its NICs with their
 * message. The groups and messages of ranks 1..7 ride NICs of their own,
 * which nothing waited for crosses: all 7 siblings are left out, and the
 * run's times are those of a run with every stand-in
 * (NPUSIM_CONTEND_STANDINS=all), to the bit. On an oversubscribed spine,
 * where they could meet on an uplink, every sibling runs. */
static void test_stand_ins_that_share_nothing_are_left_out(void) {
  const char *comms = "{\"name\": \"dp\", \"groups\": [[0, 8], [1, 9], [2, 10], [3, 11], "
                      "[4, 12], [5, 13], [6, 14], [7, 15]]}";
  char progs[1024];
  snprintf(progs, sizeof progs,
           "{\"ranks\": \"0-7\", \"ops\": [{\"id\": 0, \"kind\": \"matmul\", \"shape\": [512, 512, "
           "512]}, {\"id\": 1, \"kind\": \"allreduce\", \"comm\": \"dp\", \"bytes\": 67108864, "
           "\"deps\": [0]}, {\"id\": 2, \"kind\": \"send\", \"stream\": \"p\", \"peer_offset\": 8, "
           "\"bytes\": 67108864}]}, {\"ranks\": \"8-15\", \"ops\": [{\"id\": 0, \"kind\": "
           "\"matmul\", \"shape\": [512, 512, 512]}, {\"id\": 1, \"kind\": \"allreduce\", "
           "\"comm\": \"dp\", \"bytes\": 67108864, \"deps\": [0]}, {\"id\": 2, \"kind\": "
           "\"recv\", \"stream\": \"p\", \"peer_offset\": -8, \"bytes\": 67108864}]}");
  double ends[2];
  for (int all = 0; all < 3; all++) {
    fixture_t f;
    setup(&f, trace_text(16, comms, progs),
          (replay_opts_t){.representatives = true, .contention = true, .all_standins = all == 1});
    if (all == 2) /* the uplinks may bind: nothing is left out */
      f.topo.cluster.scale_out.oversubscription = 2;
    CU_ASSERT(f.plan.simulated[0] && f.plan.simulated[8] && !f.plan.simulated[1]);
    replay_contend_t *c = replay_contend_new(&f.plan);
    int left_out = -1, inst = f.plan.inst_of[0][1];
    CU_ASSERT(replay_contend_shares(c, inst));
    CU_ASSERT_EQUAL(replay_contend_siblings(c, inst, &left_out), all ? 7 : 0);
    CU_ASSERT_EQUAL(left_out, all ? 0 : 7);
    if (all < 2) {
      double **dur = calloc(16, sizeof *dur);
      dur[0] = calloc(3, sizeof **dur);
      dur[8] = calloc(3, sizeof **dur);
      replay_sweep_contended(&f.plan, &f.rec, c, dur);
      ends[all] = f.rec.spans[0][1].end_s;
      CU_ASSERT(ends[all] > 0);
      free(dur[0]);
      free(dur[8]);
      free(dur);
    }
    replay_contend_free(c);
    teardown(&f);
  }
  CU_ASSERT_EQUAL(ends[0], ends[1]);
}

/* An op that can never run (here a recv whose tag no send uses, which the
 * checks would have refused) is named in one line, not left silent. */
static void test_an_op_that_never_finishes_is_named(void) {
  fixture_t f;
  setup(&f, trace_text(2, "", "{\"ranks\": \"0\", \"ops\": [{\"id\": 0, \"kind\": \"send\", "
                        "\"peer\": 1, \"bytes\": 8}]}, {\"ranks\": \"1\", \"ops\": [{\"id\": 7, "
                        "\"kind\": \"recv\", \"peer\": 0, \"bytes\": 8}]}"),
        analytic);
  trace_program_t *p1 = &f.trace.programs[1];
  p1->ops[0].tag = trace_intern(&p1->tags, &p1->ntags, "other");
  trace_pairing_free(&f.plan.pairing); /* re-pair the damaged trace */
  trace_pairing_init(&f.plan.pairing, &f.trace);
  replay_sweep_run(&f.plan, &f.rec);
  npu_err_t err = {""};
  CU_ASSERT_EQUAL(replay_check_finished(&f.plan, &f.rec, "t.json", &err), -1);
  CU_ASSERT_STRING_EQUAL(err.msg, "t.json: rank 0 op 0: expected every op to finish, found it "
                              "waiting forever for rank 1 to receive message 1 of tag \"\"");
  teardown(&f);
}

/* The fidelity is chosen once from the options (and timed faults), and each
 * row says how the stages find times. */
static void test_the_fidelity_table_is_chosen_from_the_options(void) {
  topo_t topo = {0};
  replay_switches_t alone = {.no_contention = true};
  replay_opts_t o = replay_opts(false, false, NULL);
  CU_ASSERT(o.contention && o.collapse_rounds && !o.force_actors && !o.all_ranks);
  CU_ASSERT_PTR_EQUAL(replay_fidelity_choose(&o, &topo), &replay_analytic_contended);
  o = replay_opts(false, false, &alone);
  CU_ASSERT_PTR_EQUAL(replay_fidelity_choose(&o, &topo), &replay_analytic);
  topo.nchanges = 1; /* timed faults: only the links shared in time see them */
  CU_ASSERT_PTR_EQUAL(replay_fidelity_choose(&o, &topo), &replay_analytic_contended);
  o = replay_opts(true, true, &alone);
  CU_ASSERT_PTR_EQUAL(replay_fidelity_choose(&o, &topo), &replay_flow);
  replay_switches_t all = {.no_collapse = true, .force_actors = true, .all_ranks = true};
  o = replay_opts(true, false, &all);
  CU_ASSERT(o.flow && !o.collapse_rounds && o.force_actors && o.all_ranks && o.contention);
  const replay_fidelity_t *analytic_rows[] = {&replay_analytic, &replay_analytic_contended};
  for (int k = 0; k < 2; k++) {
    const replay_fidelity_t *f = analytic_rows[k];
    CU_ASSERT(f->symmetric && !f->scoped && f->sweeps && f->mode == INST_ANALYTIC);
    CU_ASSERT_PTR_EQUAL(f->actors, &replay_actors_analytic);
    CU_ASSERT(f->links == replay_links_planned && f->plan_finish == replay_plan_link_groups);
  }
  CU_ASSERT(replay_analytic.run != replay_analytic_contended.run);
  const replay_fidelity_t *f = &replay_flow;
  CU_ASSERT(!f->symmetric && f->scoped && !f->sweeps && f->mode == INST_FLOW);
  CU_ASSERT_PTR_EQUAL(f->actors, &replay_actors_flow);
  CU_ASSERT(f->links == replay_links_logged && f->plan_finish == replay_plan_check_flows);
}

/* The plan keeps the fidelity it was built in, and its engine is the one the
 * row names: the analytic row's run gives the sweep's times to the bit. */
static void test_a_run_goes_through_its_fidelity(void) {
  fixture_t f, g;
  const char *text = trace_text(4, "{\"name\": \"w\", \"groups\": [\"0-3\"]}", TWO_ALLREDUCES);
  setup(&f, text, analytic);
  setup(&g, text, analytic);
  CU_ASSERT_PTR_EQUAL(f.plan.fidelity, &replay_analytic);
  npu_err_t err = {""};
  CU_ASSERT_EQUAL(f.plan.fidelity->run(&f.plan, &f.rec, "t.json", &err), 0);
  replay_sweep_run(&g.plan, &g.rec);
  CU_ASSERT_EQUAL(replay_check_finished(&f.plan, &f.rec, "t.json", &err), 0);
  for (int r = 0; r < 4; r++)
    for (int i = 0; i < 5; i++) {
      CU_ASSERT_EQUAL(f.rec.spans[r][i].end_s, g.rec.spans[r][i].end_s);
      CU_ASSERT_EQUAL(f.rec.spans[r][i].ready_s, g.rec.spans[r][i].ready_s);
    }
  CU_ASSERT(f.rec.spans[0][4].end_s > 0);
  teardown(&f);
  teardown(&g);
}

CU_TestInfo replay_tests[] = {
    {"the fidelity table is chosen from the options",
     test_the_fidelity_table_is_chosen_from_the_options},
    {"a run goes through its fidelity", test_a_run_goes_through_its_fidelity},
    {"the plan shares a collective and picks the engine",
     test_plan_shares_a_collective_and_picks_the_engine},
    {"the sweep meets at the later arrival", test_sweep_meets_at_the_later_arrival},
    {"stand-ins that share nothing are left out", test_stand_ins_that_share_nothing_are_left_out},
    {"an op that never finishes is named", test_an_op_that_never_finishes_is_named},
    CU_TEST_INFO_NULL,
};
