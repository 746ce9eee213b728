/* test_serve_comm.c - the serving cost model's communication effects, by known
 * answers: the engine's own TP all-reduce (serving.allreduce engine) changes
 * nothing where the engine has none (an HCCL system) and, on NVLink GPUs,
 * replaces each decode all-reduce by exactly the one-shot the collectives cost;
 * uniform routing is today's cost, a Zipf routing's busiest rank holds the
 * capped share of the most popular expert when every rank holds one, a measured
 * per-expert load sets the busiest block's share, and the
 * dispatch kernels' rate changes nothing above the links' rate. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_engine.h"
#include "op_cost.h"
#include "serve_cost.h"
#include "suites.h"
#include "test_util.h"
#include "topo.h"

#define SERVE_DATA_DIR NPUSIM_SOURCE_DIR "/tests/data/validation/serve"

/* One co-located instance built as serve_run.c builds it. */
typedef struct {
  system_cfg_t sys;
  workload_cfg_t wl;
  topo_t topo;
  op_cache_t *ops;
  serve_cost_t *c;
} instance_t;

static void instance_new(instance_t *in, const char *system, const char *dir, const char *text,
                         const char *const *sets) {
  memset(in, 0, sizeof *in);
  in->sys = load_system(system, NULL);
  const char *why = load_text(CONFIG_WORKLOAD, dir, text, sets, &in->wl);
  if (*why)
    fprintf(stderr, "\n  %s\n", why);
  CU_ASSERT_STRING_EQUAL_FATAL(why, "");
  const serve_pool_t *pool = &in->wl.serving.colocated;
  npu_err_t err = {""};
  CU_ASSERT_EQUAL_FATAL(topo_build(&in->sys.node, &in->sys.cluster, in->sys.chip.dies_per_package,
                                   (int)serve_pool_npus(pool), 0, &in->topo, &err),
                        0);
  in->ops = op_cache_new(&in->sys.chip);
  in->c = serve_cost_new(&in->sys, &in->wl, "w.json", "serving", pool, &in->topo, 0, in->ops, &err);
  if (!in->c)
    fprintf(stderr, "\n  %s\n", err.msg);
  CU_ASSERT_PTR_NOT_NULL_FATAL(in->c);
}

static void instance_free(instance_t *in) {
  serve_cost_free(in->c);
  op_cache_free(in->ops);
  topo_free(&in->topo);
}

/* A decode iteration of b sequences of ctx tokens in every attention group. */
static serve_parts_t decode_parts(instance_t *in, int b, double ctx) {
  int dp = in->wl.serving.colocated.dp;
  serve_group_batch_t *g = calloc((size_t)dp, sizeof *g);
  double *stage = calloc((size_t)in->wl.serving.colocated.pp, sizeof *stage);
  for (int i = 0; i < dp; i++)
    g[i] = (serve_group_batch_t){.decodes = b, .decode_ctx = b * ctx, .samples = b};
  serve_parts_t p;
  serve_cost_iteration(in->c, g, stage, &p);
  free(g);
  free(stage);
  return p;
}

static bool parts_equal(const serve_parts_t *a, const serve_parts_t *b) {
  for (int k = 0; k < SERVE_PART_COUNT; k++)
    if (a->s[k] != b->s[k])
      return false;
  return a->J == b->J;
}

/* The analytic time of an allreduce of bytes over ranks 0..g-1, algo forced at
 * level 0 (auto: the library's choice). */
static double allreduce_s(instance_t *in, int g, double bytes, coll_algo_t algo) {
  int members[8];
  for (int i = 0; i < g; i++)
    members[i] = i;
  coll_cfg_t cfg = in->sys.coll;
  cfg.algo[0] = algo;
  coll_req_t req = {.op = COLL_ALLREDUCE, .bytes = bytes};
  coll_plan_t plan;
  npu_err_t err = {""};
  CU_ASSERT_EQUAL_FATAL(coll_plan_group(&in->topo, &cfg, members, g, &req, &plan, &err), 0);
  double t = coll_analytic_time(&in->topo, &cfg, &plan.sched, NULL);
  coll_plan_free(&plan);
  return t;
}

static void test_engine_allreduce_is_the_library_where_the_engine_has_none(void) {
  const char *coll[] = {"serving.parallel.tp=4", NULL};
  const char *eng[] = {"serving.parallel.tp=4", "serving.allreduce=engine", NULL};
  instance_t a, b;
  instance_new(&a, "ascend-910b.json", WORKLOADS_DIR, "{\"extends\": \"serve-llama3-8b.json\"}",
               coll);
  instance_new(&b, "ascend-910b.json", WORKLOADS_DIR, "{\"extends\": \"serve-llama3-8b.json\"}",
               eng);
  serve_parts_t pa = decode_parts(&a, 8, 1024), pb = decode_parts(&b, 8, 1024);
  CU_ASSERT(parts_equal(&pa, &pb));
  instance_free(&a);
  instance_free(&b);
}

/* llama3-8b, tp 4 on an H100 server, 8 decodes: 2 all-reduces a layer and the
 * embedding's, each of 8 x hidden x 2 bytes (64 KiB: one-shot on 4 GPUs). */
static void test_engine_allreduce_is_the_one_shot_on_nvlink(void) {
  const char *coll[] = {"serving.parallel.tp=4", NULL};
  const char *eng[] = {"serving.parallel.tp=4", "serving.allreduce=engine", NULL};
  instance_t a, b;
  instance_new(&a, "h100-dgx.json", WORKLOADS_DIR, "{\"extends\": \"serve-llama3-8b.json\"}",
               coll);
  instance_new(&b, "h100-dgx.json", WORKLOADS_DIR, "{\"extends\": \"serve-llama3-8b.json\"}",
               eng);
  serve_parts_t pa = decode_parts(&a, 8, 1024), pb = decode_parts(&b, 8, 1024);
  double bytes = 8.0 * a.wl.model.hidden * 2, n = 2.0 * a.wl.model.layers + 1;
  double lib = allreduce_s(&a, 4, bytes, COLL_ALGO_AUTO);
  double one = allreduce_s(&a, 4, bytes, COLL_ALGO_ONESHOT);
  CU_ASSERT(one < lib);
  double want = pa.s[SERVE_PART_COMM] - n * (lib - one);
  CU_ASSERT_DOUBLE_EQUAL(pb.s[SERVE_PART_COMM], want, want * 1e-12);
  for (int k = 0; k < SERVE_PART_COUNT; k++)
    if (k != SERVE_PART_COMM)
      CU_ASSERT_EQUAL(pa.s[k], pb.s[k]);
  instance_free(&a);
  instance_free(&b);
}

#define DSV3 "{\"extends\": \"deepseek-v3.json\"}"

/* DeepSeek-V3 on two H100 servers, attention DP 16, EP 16, fp8. */
static void moe_instance(instance_t *in, const char *extra, const char *extra2) {
  const char *sets[] = {"serving.parallel.dp=16", "serving.parallel.ep=16",
                        "serving.weight_dtype=fp8", extra, extra2, NULL};
  instance_new(in, "h100-dgx.json", SERVE_DATA_DIR, DSV3, sets);
}

static void test_uniform_routing_is_todays_cost(void) {
  instance_t a, b, z0;
  moe_instance(&a, NULL, NULL);
  moe_instance(&b, "serving.moe.routing=uniform", NULL);
  moe_instance(&z0, "serving.moe.routing=zipf", "serving.moe.zipf_s=0");
  CU_ASSERT_EQUAL(serve_cost_moe_skew(a.c), 1);
  CU_ASSERT_EQUAL(serve_cost_moe_skew(z0.c), 1); /* Zipf of exponent 0 is even */
  serve_parts_t pa = decode_parts(&a, 32, 2048), pb = decode_parts(&b, 32, 2048);
  serve_parts_t pz = decode_parts(&z0, 32, 2048);
  CU_ASSERT(parts_equal(&pa, &pb));
  CU_ASSERT(parts_equal(&pa, &pz));
  instance_free(&a);
  instance_free(&b);
  instance_free(&z0);
}

/* A skewed routing slows the MoE layers: the busiest rank's expert matmuls and
 * all-to-alls grow with the exponent; the attention does not move. */
static void test_zipf_routing_slows_the_busiest_rank(void) {
  instance_t a, z1, z2;
  moe_instance(&a, NULL, NULL);
  moe_instance(&z1, "serving.moe.routing=zipf", "serving.moe.zipf_s=0.5");
  moe_instance(&z2, "serving.moe.routing=zipf", "serving.moe.zipf_s=1");
  double s1 = serve_cost_moe_skew(z1.c), s2 = serve_cost_moe_skew(z2.c);
  CU_ASSERT(1 < s1 && s1 < s2);
  CU_ASSERT(s2 <= 16); /* the busiest rank gets at most every assignment */
  serve_parts_t pa = decode_parts(&a, 64, 2048), p1 = decode_parts(&z1, 64, 2048);
  serve_parts_t p2 = decode_parts(&z2, 64, 2048);
  CU_ASSERT(pa.s[SERVE_PART_MATMUL] < p1.s[SERVE_PART_MATMUL]);
  CU_ASSERT(p1.s[SERVE_PART_MATMUL] < p2.s[SERVE_PART_MATMUL]);
  CU_ASSERT(pa.s[SERVE_PART_COMM] < p1.s[SERVE_PART_COMM]);
  CU_ASSERT_EQUAL(pa.s[SERVE_PART_ATTENTION], p2.s[SERVE_PART_ATTENTION]);
  instance_free(&a);
  instance_free(&z1);
  instance_free(&z2);
}

/* One expert per rank (EP 256): whatever the placement, the busiest rank holds
 * the most popular expert, so the skew is 256 p1, p1 = 1 / sum r^-s (under the
 * 1 / top_k cap: s = 0.5 gives p1 = 0.033). */
static void test_zipf_skew_with_an_expert_per_rank(void) {
  const char *sets[] = {"serving.parallel.dp=256", "serving.parallel.ep=256",
                        "serving.weight_dtype=fp8", "serving.moe.routing=zipf",
                        "serving.moe.zipf_s=0.5", NULL};
  instance_t in;
  instance_new(&in, "h100-dgx.json", SERVE_DATA_DIR, DSV3, sets);
  double h = 0;
  for (int r = 1; r <= 256; r++)
    h += pow(r, -0.5);
  CU_ASSERT(1 / h < 1.0 / 8);
  CU_ASSERT_DOUBLE_EQUAL(serve_cost_moe_skew(in.c), 256 / h, 1e-9);
  instance_free(&in);
}

/* A measured load per expert: even loads are today's cost; experts 0-15 (EP
 * rank 0's block of 16) at twice the others' load give rank 0 32/272 of the
 * tokens against 1/16 even: skew 16 x 32 / 272. A list of the wrong length is
 * refused in one line. */
static void test_measured_expert_load(void) {
  char even[4096] = "", hot[4096] = "";
  for (int i = 0; i < 256; i++) {
    snprintf(even + strlen(even), sizeof even - strlen(even), "%s5", i ? "," : "");
    snprintf(hot + strlen(hot), sizeof hot - strlen(hot), "%s%d", i ? "," : "", i < 16 ? 2 : 1);
  }
  char set_even[4200], set_hot[4200];
  snprintf(set_even, sizeof set_even, "serving.moe.expert_load=%s", even);
  snprintf(set_hot, sizeof set_hot, "serving.moe.expert_load=%s", hot);
  instance_t a, e, h;
  moe_instance(&a, NULL, NULL);
  moe_instance(&e, "serving.moe.routing=measured", set_even);
  moe_instance(&h, "serving.moe.routing=measured", set_hot);
  CU_ASSERT_EQUAL(serve_cost_moe_skew(e.c), 1);
  CU_ASSERT_DOUBLE_EQUAL(serve_cost_moe_skew(h.c), 16.0 * 32 / 272, 1e-12);
  serve_parts_t pa = decode_parts(&a, 32, 2048), pe = decode_parts(&e, 32, 2048);
  CU_ASSERT(parts_equal(&pa, &pe));
  instance_free(&a);
  instance_free(&e);
  instance_free(&h);
  const char *sets[] = {"serving.parallel.dp=16",        "serving.parallel.ep=16",
                        "serving.weight_dtype=fp8",      "serving.moe.routing=measured",
                        "serving.moe.expert_load=1,2,3", NULL};
  system_cfg_t sys = load_system("h100-dgx.json", NULL);
  workload_cfg_t wl;
  CU_ASSERT_STRING_EQUAL_FATAL(load_text(CONFIG_WORKLOAD, SERVE_DATA_DIR, DSV3, sets, &wl), "");
  topo_t t;
  npu_err_t err = {""};
  CU_ASSERT_EQUAL_FATAL(topo_build(&sys.node, &sys.cluster, 1, 16, 0, &t, &err), 0);
  op_cache_t *ops = op_cache_new(&sys.chip);
  CU_ASSERT_PTR_NULL(
      serve_cost_new(&sys, &wl, "w.json", "serving", &wl.serving.colocated, &t, 0, ops, &err));
  CU_ASSERT_STRING_EQUAL(err.msg, "w.json: serving.moe.expert_load: expected a load for each of "
                                  "the 256 routed experts (model.moe.experts) with "
                                  "serving.moe.routing measured, found 3");
  op_cache_free(ops);
  topo_free(&t);
}

/* The dispatch kernels' rate: above the links' rate it changes nothing; below
 * it the all-to-alls take longer. */
static void test_dispatch_rate_bounds_the_all_to_alls(void) {
  instance_t a, fast, slow;
  moe_instance(&a, NULL, NULL);
  moe_instance(&fast, "serving.moe.dispatch_rdma_GBps=100000",
               "serving.moe.dispatch_nvlink_GBps=100000");
  moe_instance(&slow, "serving.moe.dispatch_rdma_GBps=5", "serving.moe.dispatch_nvlink_GBps=5");
  serve_parts_t pa = decode_parts(&a, 64, 2048), pf = decode_parts(&fast, 64, 2048);
  serve_parts_t ps = decode_parts(&slow, 64, 2048);
  CU_ASSERT(parts_equal(&pa, &pf));
  CU_ASSERT(ps.s[SERVE_PART_COMM] > pa.s[SERVE_PART_COMM]);
  CU_ASSERT_EQUAL(ps.s[SERVE_PART_MATMUL], pa.s[SERVE_PART_MATMUL]);
  instance_free(&a);
  instance_free(&fast);
  instance_free(&slow);
}

CU_TestInfo serve_comm_tests[] = {
    {"engine all-reduce: the library's where the engine has none",
     test_engine_allreduce_is_the_library_where_the_engine_has_none},
    {"engine all-reduce: the one-shot on NVLink", test_engine_allreduce_is_the_one_shot_on_nvlink},
    {"uniform routing is today's cost", test_uniform_routing_is_todays_cost},
    {"Zipf routing slows the busiest rank", test_zipf_routing_slows_the_busiest_rank},
    {"Zipf skew with an expert per rank", test_zipf_skew_with_an_expert_per_rank},
    {"measured expert load", test_measured_expert_load},
    {"the dispatch rate bounds the all-to-alls", test_dispatch_rate_bounds_the_all_to_alls},
    CU_TEST_INFO_NULL,
};
