/* test_config_rules.c - values that are each valid but contradict each other,
 * in one config or between the system and the workload. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

#include "suites.h"
#include "test_util.h"
#include "topo.h"

static system_cfg_t sys;
static workload_cfg_t wl;

/* Loads the base config of dir with the overrides and checks the error line. */
static void expect(config_kind_t kind, const char *base, const char *const *sets,
                   const char *expected) {
  char text[128];
  snprintf(text, sizeof text, "{\"extends\": \"%s\"}", base);
  const char *dir = kind == CONFIG_SYSTEM ? SYSTEMS_DIR : WORKLOADS_DIR;
  const char *got = load_text(kind, dir, text, sets, kind == CONFIG_SYSTEM ? (void *)&sys : &wl);
  CU_ASSERT_STRING_EQUAL(got, expected);
  if (strcmp(got, expected) != 0)
    fprintf(stderr, "\n  expected: %s\n  got:      %s\n", expected, got);
}

#define SET(...) ((const char *const[]){__VA_ARGS__, NULL})

static void test_scale_up_links_must_match_the_topology(void) {
  expect(CONFIG_SYSTEM, "ascend-910b.json", SET("node.scale_up.links_per_npu=6"),
         "--set: node.scale_up.links_per_npu: expected a multiple of the 7 peers each NPU has "
         "in a full_mesh of 8 NPUs, found 6");
  expect(CONFIG_SYSTEM, "ascend-910b.json", SET("node.scale_up.links_per_npu=14"), "");
  CU_ASSERT_EQUAL(topology_links_per_peer(&sys.node), 2);
  expect(CONFIG_SYSTEM, "ascend-910b.json",
         SET("node.scale_up.topology=two_group_mesh", "node.npus=6",
             "cluster.scale_out.npus_per_leaf=36", "node.scale_up.links_per_npu=3"),
         "--set: node.scale_up.links_per_npu: expected a multiple of the 2 peers each NPU has "
         "in a two_group_mesh of 6 NPUs, found 3");
  expect(CONFIG_SYSTEM, "ascend-910b.json",
         SET("node.scale_up.topology=two_group_mesh", "node.npus=7"),
         "--set: node.npus: expected an even number for a two_group_mesh, found 7");
  expect(CONFIG_SYSTEM, "ascend-910b.json",
         SET("node.scale_up.topology=ring", "node.scale_up.links_per_npu=3"),
         "--set: node.scale_up.links_per_npu: expected an even number for a ring (links to both "
         "neighbours), found 3");
  /* pods hold whole leaves (spine-leaf) or whole rail groups (rail-optimised) */
  expect(CONFIG_SYSTEM, "ascend-910b.json", SET("cluster.scale_out.npus_per_pod=48"),
         "--set: cluster.scale_out.npus_per_pod: expected a multiple of 32 (whole leaves in a "
         "pod), found 48");
  expect(CONFIG_SYSTEM, "ascend-910b.json", SET("cluster.scale_out.npus_per_pod=128"), "");
  expect(CONFIG_SYSTEM, "h100-dgx.json", SET("cluster.scale_out.npus_per_pod=128"),
         "--set: cluster.scale_out.npus_per_pod: expected a multiple of 256 (whole rail groups "
         "of leaves in a pod), found 128");
  expect(CONFIG_SYSTEM, "ascend-910b.json", SET("cluster.scale_out.pod_oversubscription=7"),
         "--set: cluster.scale_out.pod_oversubscription: expected 1 without pods "
         "(cluster.scale_out.npus_per_pod 0: no core tier), found 7");
  expect(CONFIG_SYSTEM, "ascend-910b.json", SET("cluster.scale_out.cores=2"),
         "--set: cluster.scale_out.cores: expected 1 without pods (cluster.scale_out.npus_per_pod "
         "0: no core tier), found 2");
  expect(CONFIG_SYSTEM, "ascend-910b.json", SET("node.scale_up.in_switch_reduction=true"),
         "--set: node.scale_up.in_switch_reduction: expected false for a full_mesh (only a "
         "switch can reduce in the network), found true");
  /* a system that extends one with NVLS onto a scale-up without it keeps the
   * section, unused (NVLS cannot run there): no error */
  expect(CONFIG_SYSTEM, "h100-dgx.json", SET("node.scale_up.in_switch_reduction=false"), "");
}

static void test_packages_fabric_and_buffers_must_agree(void) {
  expect(CONFIG_SYSTEM, "ascend-910b.json", SET("chip.dies_per_package=2"),
         "t.json: node.die_link: expected a section (chip.dies_per_package = 2 needs a "
         "die-to-die link), found none");
  expect(CONFIG_SYSTEM, "ascend-910b.json", SET("cluster.scale_out.npus_per_leaf=12"),
         "--set: cluster.scale_out.npus_per_leaf: expected a multiple of node.npus = 8 (whole "
         "servers under a leaf), found 12");
  expect(CONFIG_SYSTEM, "ascend-910b.json",
         SET("cluster.supernode.npus=12", "cluster.supernode.link_bandwidth_GBps=1",
             "cluster.supernode.latency_us=1", "cluster.supernode.efficiency=1"),
         "--set: cluster.supernode.npus: expected a multiple of node.npus = 8 (whole servers in "
         "a supernode), found 12");
  expect(CONFIG_SYSTEM, "ascend-910b.json", SET("chip.cube.fractal_mkn=256,256,16"),
         "--set: chip.cube.fractal_mkn: expected a fractal that fits chip.cube.l0a_KiB = 65536 "
         "B, found a 256x256 tile of 2-byte elements (131072 B)");
}

static void test_forced_algorithms_must_fit_their_level(void) {
  expect(CONFIG_SYSTEM, "ascend-910b.json", SET("collectives.level1_algorithm=mesh"),
         "--set: collectives.level1_algorithm: expected an algorithm that runs between servers "
         "(\"mesh\" works inside one), found \"mesh\"");
  expect(CONFIG_SYSTEM, "ascend-910b.json", SET("collectives.level0_algorithm=pipeline"),
         "--set: collectives.level0_algorithm: expected \"pipeline\" only at level 1 (it "
         "overlaps server and cluster links), found it at level 0");
  expect(CONFIG_SYSTEM, "ascend-910b.json", SET("collectives.level0_algorithm=nvls"),
         "--set: collectives.level0_algorithm: expected a switch with "
         "node.scale_up.in_switch_reduction = true for \"nvls\", found \"nvls\" without it");
  expect(CONFIG_SYSTEM, "h100-dgx.json", SET("collectives.level0_algorithm=nvls"), "");
  expect(CONFIG_SYSTEM, "ascend-910a.json", SET("collectives.level0_algorithm=mesh"),
         "--set: collectives.level0_algorithm: expected \"mesh\" only on a full_mesh or switch "
         "scale-up, found it on a two_group_mesh");
}

static void test_model_and_plan_must_divide_evenly(void) {
  const char *b = "llama2-70b.json";
  expect(CONFIG_WORKLOAD, b, SET("model.hidden=8100"),
         "--set: model.hidden: expected a multiple of model.heads = 64, found 8100");
  /* with head_dim set, hidden need not be heads x head_dim (Qwen3-32B: 5120, 64 x 128) */
  expect(CONFIG_WORKLOAD, b, SET("model.hidden=8100", "model.head_dim=128"), "");
  CU_ASSERT_EQUAL(wl.model.head_dim, 128);
  expect(CONFIG_WORKLOAD, "serve-deepseek-v3-pd.json", SET("model.head_dim=128"),
         "--set: model.head_dim: expected 0 with model.mla (its head widths are model.mla's "
         "qk_nope_head_dim, qk_rope_head_dim and v_head_dim), found 128");
  expect(CONFIG_WORKLOAD, b, SET("model.head_dim=-1"),
         "--set: model.head_dim: expected an integer in [0, 100000], found -1");
  expect(CONFIG_WORKLOAD, b, SET("model.kv_heads=6"),
         "--set: model.kv_heads: expected a divisor of model.heads = 64, found 6");
  expect(CONFIG_WORKLOAD, b, SET("parallel.tp=16"),
         "--set: parallel.tp: expected a divisor of model.heads = 64 and model.kv_heads = 8, "
         "found 16");
  /* The rule blames the key it names, wherever that key was set. */
  char want[512];
  snprintf(want, sizeof want, "%s/llama2-70b.json: parallel.sequence_parallel: expected false "
           "when parallel.tp = 1 (nothing to split the sequence over), found true", WORKLOADS_DIR);
  expect(CONFIG_WORKLOAD, b, SET("parallel.tp=1"), want);
  snprintf(want, sizeof want, "%s/llama2-70b.json: parallel.vpp: expected 1 when parallel.pp = "
           "1, found 4", WORKLOADS_DIR);
  expect(CONFIG_WORKLOAD, b, SET("parallel.pp=1"), want);
  expect(CONFIG_WORKLOAD, b, SET("parallel.vpp=3"),
         "--set: parallel.vpp: expected pp x vpp to divide model.layers = 80, found pp = 4, vpp "
         "= 3");
  expect(CONFIG_WORKLOAD, b, SET("parallel.vpp=1", "parallel.first_stage_layers=19"),
         "--set: parallel.first_stage_layers: expected first and last stage layers that leave "
         "model.layers = 80 shared evenly by the 3 other stages (at least one each), found "
         "first 19, last 0");
  expect(CONFIG_WORKLOAD, b, SET("parallel.first_stage_layers=17", "parallel.last_stage_layers=17"),
         "--set: parallel.first_stage_layers: expected every stage's layers a multiple of "
         "parallel.vpp = 4, found stage 0 with 17");
  /* per-stage counts (MindSpeed's --num-layer-list) */
  expect(CONFIG_WORKLOAD, b, SET("parallel.vpp=1", "parallel.stage_layers=17,21,21,21"), "");
  CU_ASSERT_EQUAL(wl.parallel.stage_count, 4);
  CU_ASSERT_EQUAL(workload_stage_layers(&wl, 0), 17);
  CU_ASSERT_EQUAL(workload_stage_layers(&wl, 3), 21);
  expect(CONFIG_WORKLOAD, b, SET("parallel.vpp=1", "parallel.stage_layers=[]"), "");
  CU_ASSERT_EQUAL(wl.parallel.stage_count, 0);
  expect(CONFIG_WORKLOAD, b, SET("parallel.vpp=1", "parallel.stage_layers=40,40"),
         "--set: parallel.stage_layers: expected one entry per pipeline stage and virtual stage "
         "(pp x vpp = 4, chunk-major), found 2");
  expect(CONFIG_WORKLOAD, b, SET("parallel.vpp=1", "parallel.stage_layers=20,20,20,21"),
         "--set: parallel.stage_layers: expected entries that sum to model.layers = 80, found "
         "81");
  expect(CONFIG_WORKLOAD, b, SET("parallel.vpp=1", "parallel.stage_layers=20,0,40,20"),
         "--set: parallel.stage_layers: expected at least one layer on every pipeline stage, "
         "found none on stage 1");
  expect(CONFIG_WORKLOAD, b, SET("parallel.vpp=1", "parallel.stage_layers=20,-1,41,20"),
         "--set: parallel.stage_layers[1]: expected an integer in [0, 100000], found -1");
  expect(CONFIG_WORKLOAD, b, SET("parallel.vpp=1", "parallel.stage_layers=20,,40"),
         "--set: parallel.stage_layers: expected an array of at most 1024 integers in [0, "
         "100000], found \"20,,40\"");
  expect(
      CONFIG_WORKLOAD, b,
      SET("parallel.vpp=1", "parallel.first_stage_layers=20", "parallel.stage_layers=20,20,20,20"),
      "--set: parallel.stage_layers: expected it alone (not beside "
      "parallel.first_stage_layers or last_stage_layers), found first 20, last 0 as well");
  /* with interleaving (vpp 4 over pp 4): one entry per virtual stage, chunk-major */
  expect(CONFIG_WORKLOAD, b, SET("parallel.stage_layers=20,20,20,20"),
         "--set: parallel.stage_layers: expected one entry per pipeline stage and virtual stage "
         "(pp x vpp = 16, chunk-major), found 4");
  expect(CONFIG_WORKLOAD, b, /* a virtual stage of no-op layers only: none */
         SET("parallel.stage_layers=0,5,5,5, 5,5,5,5, 5,5,5,5, 5,5,5,10"), "");
  expect(CONFIG_WORKLOAD, b, SET("parallel.stage_layers=4,5,5,5, 5,5,5,5, 5,5,5,5, 5,5,5,6"), "");
  int first;
  CU_ASSERT_EQUAL(workload_stage_layers(&wl, 0), 4 + 5 + 5 + 5);
  CU_ASSERT_EQUAL(workload_stage_layers(&wl, 3), 5 + 5 + 5 + 6);
  CU_ASSERT_EQUAL(workload_chunk_layers(&wl, 1, 2, &first), 5); /* virtual stage 9 */
  CU_ASSERT_EQUAL(first, 4 + 8 * 5);
  CU_ASSERT_EQUAL(workload_chunk_layers(&wl, 3, 3, &first), 6);
  CU_ASSERT_EQUAL(first, 74);
  expect(CONFIG_WORKLOAD, b, SET("parallel.zero_shard_size=2"),
         "--set: parallel.zero_shard_size: expected 0, or with parallel.zero >= 1 a divisor of "
         "dp x cp = 1, found 2 (zero 0)");
  expect(CONFIG_WORKLOAD, b, SET("training.overlap_param_gather=true"),
         "--set: training.overlap_param_gather: expected false unless parallel.zero is 1 or 2 (a "
         "gather after the optimizer to overlap), found true with zero 0");
  expect(CONFIG_WORKLOAD, b, SET("parallel.cp=3"),
         "--set: parallel.cp: expected 2 x cp to divide model.seq_len = 4096 (load-balanced "
         "ring attention), found cp = 3");
  expect(CONFIG_WORKLOAD, b, SET("parallel.ep=2"),
         "--set: parallel.ep: expected 1 for a dense model (no model.moe), found 2");
  expect(CONFIG_WORKLOAD, b, SET("training.global_batch=1000", "parallel.dp=3"),
         "--set: training.global_batch: expected a multiple of micro_batch x dp = 3, found 1000");
}

static void test_moe_plan_must_fit_the_experts(void) {
  const char *b = "llama2-70b.json";
  const char *moe[] = {"model.moe.experts=8", "model.moe.top_k=2",
                       "model.moe.expert_ffn_hidden=1024"};
  expect(CONFIG_WORKLOAD, b, SET(moe[0], moe[1], moe[2], "parallel.dp=4", "parallel.ep=4",
                                 "training.global_batch=1024"), "");
  CU_ASSERT_TRUE(wl.model.has_moe);
  CU_ASSERT_DOUBLE_EQUAL(wl.model.moe.capacity_factor, 1.0, 1e-12);
  expect(CONFIG_WORKLOAD, b, SET(moe[0], moe[1], moe[2], "parallel.dp=6", "parallel.ep=3",
                                 "training.global_batch=1200"),
         "--set: parallel.ep: expected a divisor of model.moe.experts = 8, found 3");
  expect(CONFIG_WORKLOAD, b, SET(moe[0], moe[1], moe[2], "parallel.dp=2", "parallel.ep=4",
                                 "training.global_batch=1024"),
         "--set: parallel.ep: expected a divisor of dp x cp = 2 (EP is carved out of them; "
         "parallel.etp other than tp folds it over tp x cp x dp), found 4");
  expect(CONFIG_WORKLOAD, b, SET(moe[0], moe[1], moe[2], "parallel.dp=2", "parallel.etp=3"),
         "--set: parallel.etp: expected ep x etp (1 x 3) dividing tp x cp x dp = 16 (the expert "
         "grid ETP x EP x EDP folded over them), found 3");
  expect(CONFIG_WORKLOAD, b, SET(moe[0], moe[1], "model.moe.expert_ffn_hidden=1000",
                                 "parallel.dp=2", "parallel.etp=16"),
         "--set: parallel.etp: expected a divisor of model.moe.expert_ffn_hidden = 1000 (each "
         "expert's width is split over it), found 16");
  expect(CONFIG_WORKLOAD, b, SET("training.moe.routing=zipf"),
         "--set: training.moe.routing: expected uniform for a dense model (no experts), found zipf");
  expect(CONFIG_WORKLOAD, b, SET(moe[0], moe[1], moe[2], "training.moe.routing=measured",
                                 "training.moe.expert_load=1,2"),
         "--set: training.moe.expert_load: expected a load for each of the 8 routed experts "
         "(model.moe.experts) with training.moe.routing measured, found 2");
  expect(CONFIG_WORKLOAD, b, SET("training.overlap_moe_a2a=true"),
         "--set: training.overlap_moe_a2a: expected false for a dense model (no all-to-all to "
         "overlap), found true");
  expect(CONFIG_WORKLOAD, b, SET(moe[0], moe[1], moe[2], "parallel.vpp=1",
                                 "training.overlap_moe_a2a=true"),
         "--set: training.overlap_moe_a2a: expected parallel.vpp > 1 with pp = 4 (merged passes "
         "of one model chunk would wait for the next stage's gradient of the same step, halving "
         "the pipeline's rate; Megatron-Core's merged 1F1B runs on the interleaved schedule), "
         "found vpp 1");
  /* DualPipeV's V: two chunks on each of at least two stages, placed by it */
  expect(CONFIG_WORKLOAD, b, SET("parallel.pp_schedule=dualpipev", "parallel.vpp=2"), "");
  expect(CONFIG_WORKLOAD, b, SET("parallel.pp_schedule=dualpipev", "parallel.vpp=4"),
         "--set: parallel.vpp: expected 2 with pp_schedule dualpipev (its V holds two model "
         "chunks per stage), found 4");
  expect(CONFIG_WORKLOAD, b, SET("parallel.pp_schedule=dualpipev", "parallel.vpp=1",
                                 "parallel.pp=1", "parallel.dp=8"),
         "--set: parallel.pp: expected at least 2 with pp_schedule dualpipev, found 1");
  expect(CONFIG_WORKLOAD, b, SET("parallel.pp_schedule=dualpipev", "parallel.vpp=2",
                                 "parallel.first_stage_layers=8", "parallel.pp=2"),
         "--set: parallel.first_stage_layers: expected 0 with pp_schedule dualpipev (stage 0 "
         "holds both ends of its V; parallel.stage_layers lists each virtual stage), found 8");
  expect(CONFIG_WORKLOAD, b, SET(moe[0], "model.moe.top_k=9", moe[2]),
         "--set: model.moe.top_k: expected at most model.moe.experts = 8, found 9");
}

/* Loads a shipped system and workload pair with workload overrides and runs
 * the job rules; returns the error line or "". */
static const char *job(const char *system, const char *workload, const char *const *sets) {
  static npu_err_t err;
  char text[128];
  err.msg[0] = '\0';
  snprintf(text, sizeof text, "{\"extends\": \"%s\"}", system);
  config_doc_t *s = load_text_doc(CONFIG_SYSTEM, SYSTEMS_DIR, text, NULL, &sys, &err);
  snprintf(text, sizeof text, "{\"extends\": \"%s\"}", workload);
  config_doc_t *w = s ? load_text_doc(CONFIG_WORKLOAD, WORKLOADS_DIR, text, sets, &wl, &err) : NULL;
  if (w)
    config_check_job(s, &sys, w, &wl, true, &err);
  config_doc_free(s);
  config_doc_free(w);
  return err.msg;
}

static void test_job_must_fit_the_system(void) {
  char want[512];
  CU_ASSERT_STRING_EQUAL(job("ascend-910b.json", "llama2-70b.json", NULL), "");
  snprintf(want, sizeof want,
           "t.json: parallel: expected dp x tp x pp x cp <= node.npus = 8 (in t.json) or a "
           "multiple of it (whole servers), found 12");
  CU_ASSERT_STRING_EQUAL(job("ascend-910b.json", "llama2-7b.json",
                             SET("parallel.dp=6", "training.global_batch=60")),
                         want);
  snprintf(want, sizeof want,
           "--set: training.precision: expected a precision the chip computes "
           "(chip.cube.fp8_macs_per_cycle = 0 in t.json), found \"fp8\"");
  CU_ASSERT_STRING_EQUAL(job("ascend-910b.json", "llama2-7b.json", SET("training.precision=fp8")),
                         want);
  CU_ASSERT_STRING_EQUAL(job("h100-dgx.json", "llama2-7b.json", SET("training.precision=fp8")),
                         "");
}

/* A board limit at or below what a die running any op draws leaves no clock
 * to throttle to: refused, as are the files of other servers' chips that have
 * one (they pass the same rules). */
static void test_power_limit_must_pass_idle_and_active(void) {
  expect(CONFIG_SYSTEM, "ascend-910b.json", SET("chip.power.max_W=50"),
         "--set: chip.power.max_W: expected 0 or more than chip.power.idle_W + active_W = 90 W "
         "(the least a running die draws), found 50");
  expect(CONFIG_SYSTEM, "a100-dgx.json", SET("chip.power.max_W=295"),
         "--set: chip.power.max_W: expected 0 or more than chip.power.idle_W + active_W = 295 "
         "W (the least a running die draws), found 295");
  expect(CONFIG_SYSTEM, "a100-dgx.json", SET("chip.power.max_W=296"), "");
  expect(CONFIG_SYSTEM, "ascend-910b.json", SET("chip.power.max_W=0"), "");
  expect(CONFIG_SYSTEM, "ascend-910b.json",
         SET("chip.power.max_W=1", "chip.power.idle_W=0", "chip.power.active_W=0"), "");
}

/* Speed and link factors near 0 (1e-305 of a rank's speed or of a link's
 * bandwidth) made times that no double holds: factors have floors, and the
 * faults on one link must leave it the link floor together. */
static void test_factors_near_zero_are_refused(void) {
  expect(CONFIG_SYSTEM, "ascend-910b.json", SET("chip.variation.speed_factors=3:0.0099"),
         "--set: chip.variation.speed_factors: expected ranks and speed factors, "
         "\"R[-R]:FACTOR,...\" (FACTOR in [0.01, 100]), found \"3:0.0099\"");
  expect(CONFIG_SYSTEM, "ascend-910b.json", SET("chip.variation.speed_factors=3:0.01,4:100"), "");
  const char *fault_error = "--set: cluster.faults.links: expected links and the bandwidth "
                            "left, \"LINK:FACTOR[@T],...\" (FACTOR 0 or in [0.001, 1]; T in "
                            "[0, 1e9] s), found ";
  const char *refused[] = {"nic:1e-305", "nic:0.0009", "nic:0.5@2e9", "nic:0.5@1e300"};
  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
    char set[64], msg[512];
    snprintf(set, sizeof set, "cluster.faults.links=%s", refused[i]);
    snprintf(msg, sizeof msg, "%s\"%s\"", fault_error, refused[i]);
    expect(CONFIG_SYSTEM, "ascend-910b.json", SET(set), msg);
  }
  expect(CONFIG_SYSTEM, "ascend-910b.json",
         SET("cluster.faults.links=nic:0.001@1e-310,uplink:0@1e9,s0.mesh0-1:0"), "");
  /* two faults on one link multiply below the floor: refused when the job's
   * links are built, naming the link */
  system_cfg_t s =
      load_system("ascend-910b.json", SET("cluster.faults.links=nic:0.01,s1.nic2:0.05"));
  topo_t t;
  npu_err_t err = {""};
  CU_ASSERT_EQUAL(topo_build(&s.node, &s.cluster, 1, 16, 8, &t, &err), TOPO_BAD_FAULT);
  CU_ASSERT_STRING_EQUAL(err.msg, "cluster.faults.links: expected the faults on one link to leave it "
                              "at least 0.001 of its bandwidth together (or 0: dead), found "
                              "s1.nic2 at 0.0005");
  s = load_system("ascend-910b.json", SET("cluster.faults.links=nic:0.1,s1.nic2:0.01"));
  CU_ASSERT_EQUAL_FATAL(topo_build(&s.node, &s.cluster, 1, 16, 8, &t, &err), 0);
  topo_free(&t);
}

CU_TestInfo config_rules_tests[] = {
    {"scale-up links must match the topology", test_scale_up_links_must_match_the_topology},
    {"packages, fabric and buffers must agree", test_packages_fabric_and_buffers_must_agree},
    {"forced algorithms must fit their level", test_forced_algorithms_must_fit_their_level},
    {"model and plan must divide evenly", test_model_and_plan_must_divide_evenly},
    {"moe plan must fit the experts", test_moe_plan_must_fit_the_experts},
    {"job must fit the system", test_job_must_fit_the_system},
    {"power limit must pass idle and active", test_power_limit_must_pass_idle_and_active},
    {"factors near zero are refused", test_factors_near_zero_are_refused},
    CU_TEST_INFO_NULL,
};
