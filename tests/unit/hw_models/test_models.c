/* test_models.c - the derived figures of hw_models/ and workloads/: peak rates
 * against the published numbers, link alpha-beta time, rank-order parsing. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>

#include "suites.h"
#include "test_util.h"
#include "topo.h"

/* Relative error of got against want. */
static double rel(double got, double want) { return fabs(got - want) / want; }

static void test_cube_peaks_match_published_figures(void) {
  /* tests/data/validation/gemm_peak.csv peak_tflops column and docs/hardware.md §1.3 / §5.1. */
  /* 910A has no bf16: its published peak is fp16. */
  static const struct {
    const char *system;
    chip_dtype_t dtype;
    double tflops;
  } peaks[] = {{"ascend-910b.json", CHIP_DTYPE_BF16, 353.9},
               {"ascend-910a.json", CHIP_DTYPE_FP16, 262.1},
               {"ascend-910c-cm384.json", CHIP_DTYPE_BF16, 353.9},
               {"a100-dgx.json", CHIP_DTYPE_BF16, 312.0},
               {"h100-dgx.json", CHIP_DTYPE_BF16, 989.0}};
  for (size_t i = 0; i < sizeof peaks / sizeof peaks[0]; i++) {
    system_cfg_t s = load_system(peaks[i].system, NULL);
    double got = chip_cube_peak_flops(&s.chip, peaks[i].dtype) / 1e12;
    CU_ASSERT(rel(got, peaks[i].tflops) < 0.005);
    if (rel(got, peaks[i].tflops) >= 0.005)
      fprintf(stderr, "\n  %s: %s peak %.1f TFLOP/s, published %.1f\n", peaks[i].system,
              chip_dtype_name(peaks[i].dtype), got, peaks[i].tflops);
  }
}

static void test_vector_peak_and_hbm_follow_the_config(void) {
  system_cfg_t s = load_system("ascend-910b.json", NULL);
  /* 48 AIV x 128 fp16 lanes x 2 x 1.8 GHz = 22.1 TFLOP/s (docs/hardware.md §1.2). */
  CU_ASSERT(rel(chip_vector_peak_flops(&s.chip, CHIP_DTYPE_FP16), 22.1e12) < 0.01);
  CU_ASSERT_DOUBLE_EQUAL(chip_vector_peak_flops(&s.chip, CHIP_DTYPE_FP32),
                         chip_vector_peak_flops(&s.chip, CHIP_DTYPE_FP16) / 2, 1);
  CU_ASSERT_DOUBLE_EQUAL(chip_hbm_effective_bw(&s.chip), 1600e9 * 0.8, 1);
  CU_ASSERT_DOUBLE_EQUAL(chip_cube_peak_flops(&s.chip, CHIP_DTYPE_FP8), 0, 0);
  CU_ASSERT_DOUBLE_EQUAL(topology_scale_up_bw_per_npu(&s.node), 196e9, 1);
}

static void test_link_bandwidth_is_line_rate_times_efficiency(void) {
  link_cfg_t l = {.bw_bytes_per_s = 25e9, .latency_s = 1.5e-6, .efficiency = 0.8,
                  .msg_overhead_s = 2e-6};
  CU_ASSERT_DOUBLE_EQUAL(link_effective_bw(&l), 20e9, 1e-3);
}

/* The one point-to-point time (topo_path_time_s): the hops' latencies, the
 * largest overhead once, the bytes over the slowest hop; the replay and
 * serving both cost messages with it. */
static void test_path_time_is_alpha_plus_bytes_over_the_slowest_hop(void) {
  system_cfg_t s = load_system("a100-dgx.json", NULL);
  topo_t t;
  npu_err_t err = {""};
  CU_ASSERT_EQUAL_FATAL(topo_build(&s.node, &s.cluster, 1, 16, 8, &t, &err), 0);
  int pairs[][2] = {{0, 1}, {0, 8}, {9, 2}};
  for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
    topo_hop_t hops[TOPO_MAX_HOPS];
    int n = topo_route(&t, pairs[k][0], pairs[k][1], hops);
    CU_ASSERT(n >= 1);
    double latency = 0, overhead = 0, bw = INFINITY;
    for (int h = 0; h < n; h++) {
      const link_cfg_t *c = &t.links[hops[h].link].cfg;
      latency += c->latency_s;
      overhead = fmax(overhead, c->msg_overhead_s);
      bw = fmin(bw, c->bw_bytes_per_s * c->efficiency);
    }
    double bytes = 3e6 + 7 * (double)k;
    CU_ASSERT_EQUAL(topo_path_time_s(&t, pairs[k][0], pairs[k][1], 0), latency + overhead);
    CU_ASSERT_EQUAL(topo_path_beta_s(&t, hops, n, bytes), bytes / bw); /* to the bit */
    CU_ASSERT_EQUAL(topo_path_time_s(&t, pairs[k][0], pairs[k][1], bytes),
                    latency + overhead + bytes / bw);
  }
  /* across servers costs more than inside one; to itself, nothing */
  CU_ASSERT(topo_path_time_s(&t, 0, 8, 1e6) > topo_path_time_s(&t, 0, 1, 1e6));
  CU_ASSERT_EQUAL(topo_path_time_s(&t, 3, 3, 1e6), 0);
  topo_free(&t);
}

static void test_dtype_names_round_trip(void) {
  for (int i = 0; i < CHIP_DTYPE_COUNT; i++) {
    chip_dtype_t d;
    CU_ASSERT_EQUAL(chip_dtype_parse(chip_dtype_name((chip_dtype_t)i), &d), 0);
    CU_ASSERT_EQUAL(d, i);
  }
  chip_dtype_t d;
  CU_ASSERT_EQUAL(chip_dtype_parse("fp64", &d), -1);
  CU_ASSERT_EQUAL(chip_dtype_bytes(CHIP_DTYPE_BF16), 2);
  CU_ASSERT_EQUAL(chip_dtype_bytes(CHIP_DTYPE_INT8), 1);
}

static void test_rank_order_must_be_a_permutation(void) {
  par_dim_t o[PAR_DIM_COUNT];
  CU_ASSERT_EQUAL(workload_parse_order("tp-cp-dp-pp", o), 0);
  CU_ASSERT_EQUAL(o[0], PAR_DIM_TP);
  CU_ASSERT_EQUAL(o[3], PAR_DIM_PP);
  CU_ASSERT_EQUAL(workload_parse_order("pp-dp-cp-tp", o), 0);
  CU_ASSERT_EQUAL(o[0], PAR_DIM_PP);
  CU_ASSERT_EQUAL(workload_parse_order("tp-tp-dp-pp", o), -1);
  CU_ASSERT_EQUAL(workload_parse_order("tp-cp-dp", o), -1);
  CU_ASSERT_EQUAL(workload_parse_order("tp-cp-dp-pp-", o), -1);
  CU_ASSERT_EQUAL(workload_parse_order("tp,cp,dp,pp", o), -1);
  CU_ASSERT_EQUAL(workload_parse_order("", o), -1);
}

static void test_world_size_and_accumulation_follow_the_plan(void) {
  workload_cfg_t w = {0};
  w.parallel = (parallel_cfg_t){.dp = 4, .tp = 8, .pp = 4, .cp = 2, .ep = 1, .vpp = 1};
  w.training.micro_batch = 2;
  w.training.global_batch = 64;
  CU_ASSERT_EQUAL(workload_world_size(&w), 256);
  CU_ASSERT_EQUAL(workload_grad_accum_steps(&w), 8);
}

static void test_node_types_parse_servers_and_files(void) {
  node_types_t t;
  CU_ASSERT_EQUAL(cluster_parse_node_types("0-3:a.json,6:../b.json", &t), 0);
  CU_ASSERT_EQUAL(t.n, 2);
  CU_ASSERT_EQUAL(t.v[0].first, 0);
  CU_ASSERT_EQUAL(t.v[0].last, 3);
  CU_ASSERT_STRING_EQUAL(t.v[0].system, "a.json");
  CU_ASSERT_EQUAL(t.v[1].first, 6);
  CU_ASSERT_EQUAL(t.v[1].last, 6);
  CU_ASSERT_STRING_EQUAL(t.v[1].system, "../b.json");
  CU_ASSERT_EQUAL(cluster_node_type_of(&t, 2), 0);
  CU_ASSERT_EQUAL(cluster_node_type_of(&t, 5), -1);
  CU_ASSERT_EQUAL(cluster_node_type_of(&t, 6), 1);
  CU_ASSERT_EQUAL(cluster_parse_node_types("", &t), 0);
  CU_ASSERT_EQUAL(t.n, 0);
  static const char *const bad[] = {"0-3", "0-3:", "3-1:a.json", "-1:a.json", "0:a.json,",
                                    "0:a:b.json", "x:a.json", "0-3:a.json,,1:b.json",
                                    "0:a,1:a,2:a,3:a,4:a,5:a,6:a,7:a,8:a"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CU_ASSERT_EQUAL(cluster_parse_node_types(bad[i], &t), -1);
}

/* The chip index of every server follows the node list; absent servers keep
 * the default chip. */
static void test_servers_take_their_node_types_chip(void) {
  system_cfg_t s = load_system("ascend-910b.json", NULL);
  s.cluster.node_types = (node_types_t){.n = 1, .v = {{.first = 2, .last = 3}}};
  s.node_chips[0] = s.chip;
  s.node_chips[0].cube.cores = 20;
  CU_ASSERT_EQUAL(config_server_chip_index(&s, 1), 0);
  CU_ASSERT_EQUAL(config_server_chip_index(&s, 2), 1);
  CU_ASSERT_EQUAL(config_chip_at(&s, config_server_chip_index(&s, 3))->cube.cores, 20);
  CU_ASSERT_EQUAL(config_chip_at(&s, config_server_chip_index(&s, 4))->cube.cores, 24);
}

CU_TestInfo model_tests[] = {
    {"node types parse servers and files", test_node_types_parse_servers_and_files},
    {"servers take their node type's chip", test_servers_take_their_node_types_chip},
    {"cube peaks match published figures", test_cube_peaks_match_published_figures},
    {"vector peak and HBM follow the config", test_vector_peak_and_hbm_follow_the_config},
    {"link time is alpha plus bytes over effective bandwidth",
     test_link_bandwidth_is_line_rate_times_efficiency},
    {"path time is alpha plus bytes over the slowest hop",
     test_path_time_is_alpha_plus_bytes_over_the_slowest_hop},
    {"dtype names round trip", test_dtype_names_round_trip},
    {"rank order must be a permutation", test_rank_order_must_be_a_permutation},
    {"world size and accumulation follow the plan",
     test_world_size_and_accumulation_follow_the_plan},
    CU_TEST_INFO_NULL,
};
