/* test_coll.c - collective schedules and the analytic engine: each algorithm
 * moves the bytes its formula says, ring costs exactly its alpha-beta-gamma
 * formula, the automatic choices follow the documented rules, and bad requests
 * are refused with a reason. The capability table (coll_cfg.c) is walked row by
 * row: every name parses with --algo and is in `coll --help`, the config rules
 * take each algorithm exactly at its levels, and its prims are what the
 * emitters build. */
#include <CUnit/CUnit.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "coll_algos.h"
#include "coll_engine.h"
#include "suites.h"
#include "test_util.h"

/* Plans op on ranks (k per server) with algorithms forced per level. */
static int plan(const system_cfg_t *s, topo_t *t, coll_plan_t *p, coll_op_t op, int ranks, int k,
                double bytes, coll_algo_t a0, coll_algo_t a1, npu_err_t *err) {
  npu_err_t e = {""};
  CU_ASSERT_EQUAL_FATAL(topo_build(&s->node, &s->cluster, s->chip.dies_per_package, ranks, k, t, &e), 0);
  coll_cfg_t cfg = s->coll;
  cfg.algo[0] = a0;
  cfg.algo[1] = a1;
  coll_req_t req = {op, bytes, 0, NULL};
  return coll_plan(t, &cfg, &req, p, err ? err : &e);
}

/* Total bytes the schedule moves equals want (relative 1e-9). */
static void expect_bytes(const system_cfg_t *s, coll_op_t op, int ranks, int k, coll_algo_t a0,
                         coll_algo_t a1, double want, const char *what) {
  topo_t t;
  coll_plan_t p;
  double n = 64.0 * 1024 * 1024;
  CU_ASSERT_EQUAL_FATAL(plan(s, &t, &p, op, ranks, k, n, a0, a1, NULL), 0);
  double got = coll_sched_bytes(&p.sched);
  CU_ASSERT(fabs(got - want * n) <= 1e-9 * want * n);
  if (fabs(got - want * n) > 1e-9 * want * n)
    fprintf(stderr, "\n  %s: moved %.6g x n, formula %.6g x n\n", what, got / n, want);
  coll_plan_free(&p);
  topo_free(&t);
}

static void test_each_algorithm_moves_the_bytes_of_its_formula(void) {
  system_cfg_t s = load_system("ascend-910b.json", NULL);
  const coll_algo_t A = COLL_ALGO_AUTO;
  for (int p = 2; p <= 8; p++) {
    double ar = 2.0 * (p - 1), half = p - 1; /* in units of n: all ranks together */
    expect_bytes(&s, COLL_ALLREDUCE, p, p, COLL_ALGO_RING, A, ar, "ring allreduce");
    expect_bytes(&s, COLL_ALLREDUCE, p, p, COLL_ALGO_MESH, A, ar, "mesh allreduce");
    expect_bytes(&s, COLL_ALLREDUCE, p, p, COLL_ALGO_NB, A, ar, "NB allreduce");
    expect_bytes(&s, COLL_ALLREDUCE, p, p, COLL_ALGO_NHR, A, ar, "NHR allreduce");
    expect_bytes(&s, COLL_ALLREDUCE, p, p, COLL_ALGO_TREE, A, ar, "tree allreduce");
    int p2 = 1;
    while (p2 * 2 <= p)
      p2 *= 2;
    /* HD folds the p - p2 extra ranks in (n each) and back out (n each) */
    expect_bytes(&s, COLL_ALLREDUCE, p, p, COLL_ALGO_HD, A, 2.0 * (p2 - 1) + 2.0 * (p - p2),
                 "HD allreduce");
    expect_bytes(&s, COLL_REDUCESCATTER, p, p, COLL_ALGO_RING, A, half, "ring reducescatter");
    expect_bytes(&s, COLL_ALLGATHER, p, p, COLL_ALGO_NB, A, half, "NB allgather");
    expect_bytes(&s, COLL_ALLGATHER, p, p, COLL_ALGO_NHR, A, half, "NHR allgather");
    expect_bytes(&s, COLL_ALLTOALL, p, p, COLL_ALGO_PAIRWISE, A, half, "pairwise alltoall");
    expect_bytes(&s, COLL_ALLTOALL, p, p, COLL_ALGO_MESH, A, half, "mesh alltoall");
    expect_bytes(&s, COLL_BROADCAST, p, p, COLL_ALGO_RING, A, (p - 1.0) / p + (p - 1.0),
                 "ring broadcast (scatter + allgather)");
    expect_bytes(&s, COLL_BROADCAST, p, p, COLL_ALGO_HD, A, p - 1.0, "binomial broadcast");
    expect_bytes(&s, COLL_SENDRECV, p, p, A, A, p, "sendrecv ring shift");
  }
  /* Hierarchical allreduce over 4 servers of 8: intra RS and AG on n, inter on n/8. */
  double intra = 2.0 * 7 / 8 * 32, inter = 2.0 * 3 / 4 / 8 * 32;
  expect_bytes(&s, COLL_ALLREDUCE, 32, 8, COLL_ALGO_MESH, COLL_ALGO_RING, intra + inter,
               "mesh+ring allreduce");
  expect_bytes(&s, COLL_ALLREDUCE, 32, 8, COLL_ALGO_MESH, COLL_ALGO_PIPELINE, intra + inter,
               "pipelined allreduce");
  system_cfg_t h = load_system("h100-dgx.json", NULL);
  /* NVLS on 8: up n (1 + 1/8) + requests n/8 x r, down n (1 + 1/8) + requests n r */
  double r = h.node.scale_up.read_request_overhead;
  CU_ASSERT(r > 0);
  expect_bytes(&h, COLL_ALLREDUCE, 8, 8, COLL_ALGO_NVLS, A,
               8 * (2 * (1 + 1.0 / 8) + r / 8 + r), "NVLS (n (1 + 1/p) each way, requests)");
}

/* Ring on p ranks of one switch: op + 2(p-1)(alpha + step) + 2(p-1)/p n / B + (p-1)/p n / R. */
static void test_analytic_ring_costs_its_alpha_beta_gamma_formula(void) {
  const char *sets[] = {"collectives.reduce_bandwidth_GBps=500", "collectives.step_latency_us=2",
                        NULL};
  system_cfg_t s = load_system("a100-dgx.json", sets);
  for (int i = 0; i < COLL_PROTO_COUNT; i++)
    s.coll.proto[i].present = false; /* the bare model, no protocol choice */
  for (int p = 2; p <= 8; p *= 2) {
    topo_t t;
    coll_plan_t pl;
    double n = 256.0 * 1024 * 1024;
    CU_ASSERT_EQUAL_FATAL(
        plan(&s, &t, &pl, COLL_ALLREDUCE, p, p, n, COLL_ALGO_RING, COLL_ALGO_AUTO, NULL), 0);
    const link_cfg_t *port = &t.links[0].cfg; /* a switch port: 12 links merged */
    double alpha = 2 * port->latency_s + port->msg_overhead_s, beta = 1 / link_effective_bw(port);
    double want = s.coll.op_overhead_s + 2.0 * (p - 1) * (alpha + s.coll.step_latency_s) +
                  2.0 * (p - 1) / p * n * beta + (p - 1.0) / p * n / s.coll.reduce_bw_bytes_per_s;
    double got = coll_analytic_time(&t, &s.coll, &pl.sched, NULL);
    CU_ASSERT_DOUBLE_EQUAL(got, want, want * 1e-12);
    coll_plan_free(&pl);
    topo_free(&t);
  }
}

/* A serving engine's all-reduce on p GPUs of one switch: one-shot is
 * p2p_launch + (alpha + sync) + (p - 1) n / B (every rank reads every peer's
 * whole buffer), two-shot p2p_launch + 2 (alpha + sync) + 2 (p - 1) n / p / B;
 * no NCCL protocol, no op_overhead. B is the port's rate, or the rate the
 * kernel's loads reach (collectives.p2p_read_GBps) where that is lower: with the
 * config's (below the port) and without. */
static void test_engine_allreduce_costs_its_formula(void) {
  system_cfg_t s = load_system("h100-dgx.json", NULL);
  CU_ASSERT(s.coll.p2p_launch_s > 0 && s.coll.p2p_sync_s > 0 && s.coll.p2p_read_bytes_per_s > 0);
  double read_Bps = s.coll.p2p_read_bytes_per_s;
  for (int measured = 0; measured <= 1; measured++)
    for (int p = 2; p <= 8; p += 2)
      for (int two = 0; two <= 1; two++) {
        topo_t t;
        coll_plan_t pl;
        double n = 128.0 * 1024;
        coll_algo_t a = two ? COLL_ALGO_TWOSHOT : COLL_ALGO_ONESHOT;
        s.coll.p2p_read_bytes_per_s = measured ? read_Bps : 0;
        CU_ASSERT_EQUAL_FATAL(plan(&s, &t, &pl, COLL_ALLREDUCE, p, p, n, a, COLL_ALGO_AUTO, NULL),
                              0);
        CU_ASSERT_EQUAL(pl.proto, -1);
        const link_cfg_t *port = &t.links[0].cfg;
        CU_ASSERT(read_Bps < link_effective_bw(port)); /* the measured rate binds on H100 */
        double alpha = 2 * port->latency_s + port->msg_overhead_s;
        double beta = 1 / (measured ? read_Bps : link_effective_bw(port));
        double stages = two ? 2 : 1, per_rank = two ? 2.0 * (p - 1) / p * n : (p - 1) * n;
        double want = s.coll.p2p_launch_s + stages * (alpha + s.coll.p2p_sync_s) + per_rank * beta;
        double got = coll_analytic_time(&t, &s.coll, &pl.sched, NULL);
        CU_ASSERT_DOUBLE_EQUAL(got, want, want * 1e-12);
        coll_plan_free(&pl);
        topo_free(&t);
      }
  /* vLLM's switch points: one-shot on 2 GPUs, under 512 KiB on 4, under 256 KiB on
   * 8, two-shot above, the library from 8 MiB, across servers and on HCCL */
  topo_t t;
  npu_err_t e = {""};
  CU_ASSERT_EQUAL_FATAL(topo_build(&s.node, &s.cluster, 1, 16, 8, &t, &e), 0);
  int m[16];
  for (int i = 0; i < 16; i++)
    m[i] = i;
  const double K = 1024;
  CU_ASSERT_EQUAL(coll_select_engine_allreduce(&t, &s.coll, m, 2, 4096 * K), COLL_ALGO_ONESHOT);
  CU_ASSERT_EQUAL(coll_select_engine_allreduce(&t, &s.coll, m, 4, 511 * K), COLL_ALGO_ONESHOT);
  CU_ASSERT_EQUAL(coll_select_engine_allreduce(&t, &s.coll, m, 4, 512 * K), COLL_ALGO_TWOSHOT);
  CU_ASSERT_EQUAL(coll_select_engine_allreduce(&t, &s.coll, m, 8, 255 * K), COLL_ALGO_ONESHOT);
  CU_ASSERT_EQUAL(coll_select_engine_allreduce(&t, &s.coll, m, 8, 256 * K), COLL_ALGO_TWOSHOT);
  CU_ASSERT_EQUAL(coll_select_engine_allreduce(&t, &s.coll, m, 8, 8192 * K), COLL_ALGO_AUTO);
  CU_ASSERT_EQUAL(coll_select_engine_allreduce(&t, &s.coll, m + 4, 8, 16 * K), COLL_ALGO_AUTO);
  CU_ASSERT_EQUAL(coll_select_engine_allreduce(&t, &s.coll, m, 3, 16 * K), COLL_ALGO_AUTO);
  coll_cfg_t hccl = s.coll;
  hccl.library = COLL_LIB_HCCL;
  CU_ASSERT_EQUAL(coll_select_engine_allreduce(&t, &hccl, m, 8, 16 * K), COLL_ALGO_AUTO);
  topo_free(&t);
}

/* Analytic time of op on ranks (k per server) with a0 forced inside servers. */
static double plan_time(const system_cfg_t *s, coll_op_t op, int ranks, int k, double n,
                        coll_algo_t a0) {
  topo_t t;
  coll_plan_t p;
  CU_ASSERT_EQUAL_FATAL(plan(s, &t, &p, op, ranks, k, n, a0, COLL_ALGO_AUTO, NULL), 0);
  double time = coll_analytic_time(&t, &s->coll, &p.sched, NULL);
  coll_plan_free(&p);
  topo_free(&t);
  return time;
}

static double busbw(const system_cfg_t *s, coll_op_t op, int ranks, int k, double n) {
  return n / plan_time(s, op, ranks, k, n, COLL_ALGO_AUTO) * coll_busbw_factor(op, ranks) / 1e9;
}

static void test_full_mesh_busbw_grows_with_the_npus_used(void) {
  system_cfg_t s = load_system("ascend-910b.json", NULL);
  double prev = 0;
  for (int k = 2; k <= 8; k++) {
    double b = busbw(&s, COLL_ALLREDUCE, k, k, 256.0 * 1024 * 1024);
    CU_ASSERT(b > prev);
    prev = b;
  }
  /* 8 NPUs, 7 HCCS links of 28 GB/s at 0.7: the mesh bound is 7 x 19.6 = 137.2 GB/s */
  CU_ASSERT(prev > 0.95 * 137.2 && prev <= 137.2);
}

static coll_algo_t auto_level(const system_cfg_t *s, coll_op_t op, int ranks, double n, int lvl) {
  topo_t t;
  coll_plan_t p;
  CU_ASSERT_EQUAL_FATAL(plan(s, &t, &p, op, ranks, 0, n, COLL_ALGO_AUTO, COLL_ALGO_AUTO, NULL), 0);
  coll_algo_t a = p.algo[lvl];
  coll_plan_free(&p);
  topo_free(&t);
  return a;
}

/* NVLS as NCCL runs it: NCCL's chunk rule, Simple only, and the analytic time
 * of its one round: launch + latency + link + fill (one step's share of the
 * link) + (steps + 1) chunk syncs. */
static void test_nvls_pipelines_chunk_steps_as_nccl_does(void) {
  system_cfg_t s = load_system("h100-dgx.json", NULL);
  CU_ASSERT_FATAL(s.coll.nvls.present && s.coll.nvls.channels == 16);
  const coll_nvls_t *nv = &s.coll.nvls;
  double K = 1024, M = K * K;
  /* 16 channels x 8 heads = 128 lanes of 128 KiB: 64 rows = 1 GiB */
  CU_ASSERT_EQUAL(coll_nvls_chunk_bytes(nv, 1024 * M, 8), 128 * K);
  CU_ASSERT_EQUAL(coll_nvls_chunk_bytes(nv, 1024 * M - 1, 8), 64 * K);
  CU_ASSERT_EQUAL(coll_nvls_chunk_bytes(nv, 64 * M, 8), 64 * K);
  CU_ASSERT_EQUAL(coll_nvls_chunk_bytes(nv, 64 * M - 1, 8), 32 * K);
  CU_ASSERT_EQUAL(coll_nvls_chunk_bytes(nv, 8 * M, 8), 32 * K);
  CU_ASSERT_EQUAL(coll_nvls_chunk_bytes(nv, 8 * M - 1, 8), 16 * K);
  CU_ASSERT_EQUAL(coll_nvls_chunk_bytes(nv, 1, 8), 16 * K);
  for (int i = 0; i < 3; i++) {
    double n = (double[]){1 * M, 48 * M, 2048 * M}[i];
    topo_t t;
    coll_plan_t pl;
    CU_ASSERT_EQUAL_FATAL(plan(&s, &t, &pl, COLL_ALLREDUCE, 8, 8, n, COLL_ALGO_NVLS,
                               COLL_ALGO_AUTO, NULL), 0);
    CU_ASSERT_EQUAL(pl.proto, COLL_PROTO_SIMPLE); /* NCCL runs NVLS in Simple only */
    const coll_phase_t *ph = &pl.sched.phases[0];
    int steps = (int)ceil(n / (128 * coll_nvls_chunk_bytes(nv, n, 8)));
    CU_ASSERT_EQUAL(ph->chunk_steps, steps);
    const link_cfg_t *port = &t.links[0].cfg;
    double r = s.node.scale_up.read_request_overhead, down = n * (1 + 1.0 / 8) + r * n;
    double link = down / link_effective_bw(port), alpha = port->latency_s + port->msg_overhead_s;
    double want = s.coll.op_overhead_s + alpha + nv->latency_s + link + link / steps +
                  (steps + 1) * nv->chunk_step_s;
    double got = coll_analytic_time(&t, &s.coll, &pl.sched, NULL);
    CU_ASSERT_DOUBLE_EQUAL(got, want, want * 1e-12);
    if (fabs(got - want) > want * 1e-12)
      fprintf(stderr, "\n  NVLS %.0f B: %.9g s, formula %.9g s\n", n, got, want);
    coll_plan_free(&pl);
    topo_free(&t);
  }
  /* without the section NVLS is one round at link rate, no chunk steps */
  s.coll.nvls.present = false;
  topo_t t;
  coll_plan_t pl;
  CU_ASSERT_EQUAL_FATAL(plan(&s, &t, &pl, COLL_ALLREDUCE, 8, 8, 64 * M, COLL_ALGO_NVLS,
                             COLL_ALGO_AUTO, NULL), 0);
  CU_ASSERT_EQUAL(pl.sched.phases[0].chunk_steps, 0);
  coll_plan_free(&pl);
  topo_free(&t);
}

static void test_auto_follows_the_libraries_rules(void) {
  system_cfg_t b = load_system("ascend-910b.json", NULL);
  double mb = 1024.0 * 1024;
  CU_ASSERT_EQUAL(auto_level(&b, COLL_ALLREDUCE, 8, mb, 0), COLL_ALGO_MESH);
  /* pipeline when each rank's share is >= 1 MB (64 ranks x 1 MB) */
  CU_ASSERT_EQUAL(auto_level(&b, COLL_ALLREDUCE, 64, 64 * mb, 1), COLL_ALGO_PIPELINE);
  /* small: HCCL's alpha-beta rule, 8 servers (power of two): NHR ties HD, NHR wins */
  CU_ASSERT_EQUAL(auto_level(&b, COLL_ALLREDUCE, 64, mb, 1), COLL_ALGO_NHR);
  /* 3 servers, large per-server data: ring's volume term is the same, HD's is not */
  CU_ASSERT_EQUAL(auto_level(&b, COLL_ALLGATHER, 24, 1024 * mb, 1), COLL_ALGO_RING);
  CU_ASSERT_EQUAL(auto_level(&b, COLL_ALLTOALL, 64, mb, 1), COLL_ALGO_PAIRWISE);
  system_cfg_t a = load_system("ascend-910a.json", NULL);
  CU_ASSERT_EQUAL(auto_level(&a, COLL_ALLREDUCE, 8, mb, 0), COLL_ALGO_RING);
  CU_ASSERT_EQUAL(auto_level(&a, COLL_ALLREDUCE, 32, mb, 1), COLL_ALGO_HD);
  CU_ASSERT_EQUAL(auto_level(&a, COLL_ALLREDUCE, 24, mb, 1), COLL_ALGO_RING);
  system_cfg_t h = load_system("h100-dgx.json", NULL);
  CU_ASSERT_EQUAL(auto_level(&h, COLL_ALLREDUCE, 8, 64 * mb, 0), COLL_ALGO_NVLS);
  /* NCCL's tuner weighs NVLS against its ring in one server: auto takes the
   * faster of the two forced, at every size */
  for (double n = 4096; n <= 4096 * mb; n *= 8) {
    double ring = plan_time(&h, COLL_ALLREDUCE, 8, 8, n, COLL_ALGO_RING);
    double nvls = plan_time(&h, COLL_ALLREDUCE, 8, 8, n, COLL_ALGO_NVLS);
    CU_ASSERT_EQUAL(auto_level(&h, COLL_ALLREDUCE, 8, n, 0), nvls < ring ? COLL_ALGO_NVLS : COLL_ALGO_RING);
  }
  CU_ASSERT_EQUAL(auto_level(&h, COLL_ALLREDUCE, 32, mb, 1), COLL_ALGO_TREE);
  CU_ASSERT_EQUAL(auto_level(&h, COLL_ALLREDUCE, 32, 1024 * mb, 1), COLL_ALGO_RING);
  /* NCCL's tuner at scale: 512 MiB takes ring on 16 servers, tree on 1024 (the
   * flat ring's 2 (p - 1) latencies), 64 MiB tree on both; the choice is the
   * faster of the two forced */
  CU_ASSERT_EQUAL(auto_level(&h, COLL_ALLREDUCE, 128, 512 * mb, 1), COLL_ALGO_RING);
  CU_ASSERT_EQUAL(auto_level(&h, COLL_ALLREDUCE, 128, 64 * mb, 1), COLL_ALGO_TREE);
  CU_ASSERT_EQUAL(auto_level(&h, COLL_ALLREDUCE, 8192, 512 * mb, 1), COLL_ALGO_TREE);
  int sizes[] = {128, 8192};
  for (int i = 0; i < 2; i++) {
    topo_t t;
    coll_plan_t p[3];
    coll_algo_t a1[3] = {COLL_ALGO_AUTO, COLL_ALGO_RING, COLL_ALGO_TREE};
    double time[3];
    for (int k = 0; k < 3; k++) {
      CU_ASSERT_EQUAL_FATAL(plan(&h, &t, &p[k], COLL_ALLREDUCE, sizes[i], 8, 512 * mb,
                                 COLL_ALGO_AUTO, a1[k], NULL), 0);
      time[k] = coll_analytic_time(&t, &h.coll, &p[k].sched, NULL);
      coll_plan_free(&p[k]);
      topo_free(&t);
    }
    CU_ASSERT_DOUBLE_EQUAL(time[0], fmin(time[1], time[2]), 1e-12 * time[0]);
  }
}

/* NCCL's ring between servers is one flat ring per channel: per phase every rank
 * sends once over its NIC, to the same local NPU of the next server (rails kept
 * but for the closing hop when the server count is not a multiple of K), and the
 * rest over the scale-up fabric; so every NIC carries n (p - 1) / (K p) each way
 * per phase and the allreduce moves 2 (p - 1) n in all. HCCL's ring stays
 * hierarchical. */
static void test_nccl_rings_run_flat_over_all_ranks(void) {
  system_cfg_t a = load_system("a100-dgx.json", NULL);
  double n = 1024.0 * 1024 * 1024;
  int p = 24, k = 8, m = 3;
  topo_t t;
  coll_plan_t pl;
  CU_ASSERT_EQUAL_FATAL(plan(&a, &t, &pl, COLL_ALLREDUCE, p, k, n, COLL_ALGO_AUTO,
                             COLL_ALGO_RING, NULL), 0);
  CU_ASSERT_STRING_EQUAL(pl.name, "ring/simple");
  CU_ASSERT_EQUAL_FATAL(pl.sched.nphases, 2);
  for (int ph = 0; ph < 2; ph++) {
    const coll_phase_t *x = &pl.sched.phases[ph];
    CU_ASSERT_EQUAL(x->rounds, p - 1);
    CU_ASSERT_EQUAL(x->reduces, ph == 0);
    int inter = 0, off_rail = 0;
    for (int i = 0; i < x->nxfers; i++) {
      int src = x->xfers[i].src, dst = x->xfers[i].dst;
      if (dst / k == src / k)
        continue;
      inter++;
      CU_ASSERT_EQUAL(dst / k, (src / k + 1) % m);
      CU_ASSERT_DOUBLE_EQUAL(x->xfers[i].bytes, n / ((double)k * p), 1e-6);
      off_rail += dst % k != src % k;
    }
    CU_ASSERT_EQUAL(inter, p);      /* one NIC send per rank */
    CU_ASSERT_EQUAL(off_rail, k);   /* only the closing hops (3 is not a multiple of 8) */
  }
  CU_ASSERT_DOUBLE_EQUAL(coll_sched_bytes(&pl.sched), 2.0 * (p - 1) * n, 1e-6 * n);
  coll_plan_free(&pl);
  topo_free(&t);
  system_cfg_t b = load_system("ascend-910b.json", NULL);
  CU_ASSERT_EQUAL_FATAL(plan(&b, &t, &pl, COLL_ALLREDUCE, 32, 8, n, COLL_ALGO_AUTO,
                             COLL_ALGO_RING, NULL), 0);
  CU_ASSERT(pl.sched.nphases > 2); /* RS in servers, ring between, AG in servers */
  coll_plan_free(&pl);
  topo_free(&t);
}

static void test_algorithms_that_cannot_run_are_refused(void) {
  system_cfg_t b = load_system("ascend-910b.json", NULL);
  topo_t t;
  coll_plan_t p;
  npu_err_t err = {""};
  CU_ASSERT_EQUAL(plan(&b, &t, &p, COLL_ALLREDUCE, 8, 8, 1e6, COLL_ALGO_PAIRWISE,
                       COLL_ALGO_AUTO, &err), -1);
  CU_ASSERT_STRING_EQUAL(
      err.msg,
      "collectives.level0_algorithm: expected one that can run allreduce "
      "at this level (mesh, ring, hd, nhr, nb, tree, oneshot, twoshot), found \"pairwise\"");
  topo_free(&t);
  CU_ASSERT_EQUAL(plan(&b, &t, &p, COLL_ALLREDUCE, 8, 8, 1e6, COLL_ALGO_NVLS, COLL_ALGO_AUTO,
                       &err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "expected \"nvls\" only on a switch that reduces"));
  topo_free(&t);
  CU_ASSERT_EQUAL(plan(&b, &t, &p, COLL_ALLGATHER, 16, 8, 1e6, COLL_ALGO_MESH,
                       COLL_ALGO_PIPELINE, &err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "expected \"pipeline\" only for allreduce"));
  topo_free(&t);
  CU_ASSERT_EQUAL(plan(&b, &t, &p, COLL_ALLTOALL, 8, 8, 1e6, COLL_ALGO_RING, COLL_ALGO_AUTO,
                       &err), -1);
  topo_free(&t);
}

/* ECMP: with 4 spines a leaf has 4 uplinks sharing the merged one's capacity;
 * a flow between leaves goes up and down through the same spine, its own by
 * hash, and the flows of one leaf spread over more than one spine. */
static void test_ecmp_hashes_each_flow_onto_one_spine(void) {
  const char *sets[] = {"cluster.scale_out.spines=4", NULL};
  system_cfg_t one = load_system("ascend-910b.json", NULL), four = load_system("ascend-910b.json", sets);
  topo_t t1, t4;
  npu_err_t err = {""};
  CU_ASSERT_EQUAL_FATAL(topo_build(&one.node, &one.cluster, 1, 256, 8, &t1, &err), 0);
  CU_ASSERT_EQUAL_FATAL(topo_build(&four.node, &four.cluster, 1, 256, 8, &t4, &err), 0);
  CU_ASSERT_EQUAL(t4.nlinks, t1.nlinks + 3 * t1.leaves);
  CU_ASSERT_DOUBLE_EQUAL(4 * topo_link_bw(&t4, t4.first_uplink), topo_link_bw(&t1, t1.first_uplink),
                         1e-9 * topo_link_bw(&t1, t1.first_uplink));
  bool used[4] = {false};
  for (int src = 0; src < 32; src++) { /* leaf 0 to leaf 1 */
    topo_hop_t h[TOPO_MAX_HOPS];
    CU_ASSERT_EQUAL_FATAL(topo_route(&t4, src, 32 + src, h), 4);
    int up = h[1].link - t4.first_uplink, down = h[2].link - t4.first_uplink;
    CU_ASSERT_EQUAL(t4.links[h[1].link].kind, TOPO_LINK_UPLINK);
    CU_ASSERT(up / 4 == 0 && down / 4 == 1 && up % 4 == down % 4);
    used[up % 4] = true;
  }
  CU_ASSERT(used[0] + used[1] + used[2] + used[3] > 1);
  topo_free(&t1);
  topo_free(&t4);
}

/* The spine hash mixes both ends: rail-aligned flows (NPU 0 of each server of
 * leaf 0 to NPU 0 of each of leaf 1, source ^ destination always even) reach
 * every one of 2 spines (FNV-1a's low bit kept them on one), and the job is
 * ECMP-hashed, so the analytic fidelity paces collectives by rank (auto).
 * Packets sprayed over the 4 spines (cluster.scale_out.ecmp packet) give the
 * links of one merged spine, named leafN.up, while the ports of 4 are held. */
static void test_ecmp_mixes_and_sprays(void) {
  const char *two_sets[] = {"cluster.scale_out.spines=2", NULL};
  const char *spray_sets[] = {"cluster.scale_out.spines=4", "cluster.scale_out.ecmp=packet",
                              NULL};
  const char *four_sets[] = {"cluster.scale_out.spines=4", NULL};
  system_cfg_t one = load_system("ascend-910b.json", NULL),
               two = load_system("ascend-910b.json", two_sets),
               spray = load_system("ascend-910b.json", spray_sets),
               four = load_system("ascend-910b.json", four_sets);
  topo_t t1, t2, ts, t4;
  npu_err_t err = {""};
  CU_ASSERT_EQUAL_FATAL(topo_build(&one.node, &one.cluster, 1, 256, 8, &t1, &err), 0);
  CU_ASSERT_EQUAL_FATAL(topo_build(&two.node, &two.cluster, 1, 256, 8, &t2, &err), 0);
  CU_ASSERT_EQUAL_FATAL(topo_build(&spray.node, &spray.cluster, 1, 256, 8, &ts, &err), 0);
  CU_ASSERT_EQUAL_FATAL(topo_build(&four.node, &four.cluster, 1, 256, 8, &t4, &err), 0);
  int on[2] = {0, 0};
  for (int a = 0; a < 32; a += 8)
    for (int b = 32; b < 64; b += 8) {
      topo_hop_t h[TOPO_MAX_HOPS];
      CU_ASSERT_EQUAL_FATAL(topo_route(&t2, a, b, h), 4);
      on[(h[1].link - t2.first_uplink) % 2]++;
    }
  CU_ASSERT(on[0] > 0 && on[1] > 0);
  CU_ASSERT(topo_ecmp_hashed(&t2) && !topo_ecmp_hashed(&t1) && !topo_ecmp_hashed(&ts));
  CU_ASSERT(coll_rank_paced(COLL_PROGRESS_AUTO, &t2) && !coll_rank_paced(COLL_PROGRESS_AUTO, &t1));
  CU_ASSERT(coll_rank_paced(COLL_PROGRESS_RANK, &t1) && !coll_rank_paced(COLL_PROGRESS_PHASE, &t2));
  CU_ASSERT_EQUAL(ts.nlinks, t1.nlinks);
  CU_ASSERT_EQUAL(ts.spine_paths, 1);
  CU_ASSERT_DOUBLE_EQUAL(topo_link_bw(&ts, ts.first_uplink), topo_link_bw(&t1, t1.first_uplink),
                         1e-9 * topo_link_bw(&t1, t1.first_uplink));
  CU_ASSERT_EQUAL(topo_switch_ports(&ts), topo_switch_ports(&t4));
  char name[64];
  topo_link_name(&ts, ts.first_uplink, name, sizeof name);
  CU_ASSERT_STRING_EQUAL(name, "leaf0.up");
  topo_free(&t1);
  topo_free(&t2);
  topo_free(&ts);
  topo_free(&t4);
}

/* Two planes (cluster.scale_out.planes 2, 2 NIC ports per NPU) on 32 servers
 * of 910B: every NIC, uplink and core link twice, each of one port's
 * bandwidth, named p0./p1.; a flow between servers stays in one plane (its
 * NIC ports and uplinks all of it), the planes both used; a dead port moves
 * its NPU's flows, both ways, to the other plane. */
static void test_planes_are_copies_of_the_fabric(void) {
  const char *one_sets[] = {"cluster.scale_out.nics_per_npu=2", NULL};
  const char *two_sets[] = {"cluster.scale_out.nics_per_npu=2", "cluster.scale_out.planes=2",
                            NULL};
  const char *dead_sets[] = {"cluster.scale_out.nics_per_npu=2", "cluster.scale_out.planes=2",
                             "cluster.faults.links=p0.s0.nic0:0", NULL};
  system_cfg_t one = load_system("ascend-910b.json", one_sets),
               two = load_system("ascend-910b.json", two_sets),
               dead = load_system("ascend-910b.json", dead_sets);
  topo_t t1, t2, td;
  npu_err_t err = {""};
  CU_ASSERT_EQUAL_FATAL(topo_build(&one.node, &one.cluster, 1, 256, 8, &t1, &err), 0);
  CU_ASSERT_EQUAL_FATAL(topo_build(&two.node, &two.cluster, 1, 256, 8, &t2, &err), 0);
  CU_ASSERT_EQUAL_FATAL(topo_build(&dead.node, &dead.cluster, 1, 256, 8, &td, &err), 0);
  int nic_and_up = t1.nlinks - t1.first_nic;
  CU_ASSERT_EQUAL(t2.nlinks - t2.first_nic, 2 * nic_and_up);
  CU_ASSERT_DOUBLE_EQUAL(2 * topo_link_bw(&t2, t2.first_nic), topo_link_bw(&t1, t1.first_nic),
                         1e-9 * topo_link_bw(&t1, t1.first_nic));
  CU_ASSERT(topo_ecmp_hashed(&t2) && !topo_ecmp_hashed(&t1));
  char name[64];
  topo_link_name(&t2, t2.first_nic + 256, name, sizeof name);
  CU_ASSERT_STRING_EQUAL(name, "p1.s0.nic0");
  topo_link_name(&t2, t2.first_uplink, name, sizeof name);
  CU_ASSERT_STRING_EQUAL(name, "p0.leaf0.up");
  bool used[2] = {false, false};
  for (int src = 0; src < 32; src++) {
    topo_hop_t h[TOPO_MAX_HOPS];
    int n = topo_route(&t2, src, 128 + src, h);
    CU_ASSERT_EQUAL_FATAL(n, 4);
    int p = t2.links[h[0].link].plane;
    used[p] = true;
    for (int k = 0; k < n; k++)
      CU_ASSERT_EQUAL(t2.links[h[k].link].plane, p);
    n = topo_route(&td, 0, 128 + src, h); /* NPU 0's port on plane 0 is dead */
    CU_ASSERT_EQUAL(td.links[h[0].link].plane, 1);
    n = topo_route(&td, 128 + src, 0, h);
    CU_ASSERT_EQUAL(td.links[h[n - 1].link].plane, 1);
  }
  CU_ASSERT(used[0] && used[1]);
  topo_free(&t1);
  topo_free(&t2);
  topo_free(&td);
}

/* A core tier over pods (cluster.scale_out.npus_per_pod): 32 servers of 910B
 * (4 per leaf) in pods of 128 NPUs under 2 cores at 1:7. Each pod has one link
 * per core, of the pod's ports x NIC / 7 / 2; a flow inside a pod never
 * touches them, one between pods goes NIC, leaf up, core up, core down, leaf
 * down, NIC, on one spine and one core at both ends; a dead core link is
 * routed round on the other core, and with one core it cuts the pod off. */
static void test_pods_under_a_core_tier(void) {
  const char *sets[] = {"cluster.scale_out.npus_per_pod=128",
                        "cluster.scale_out.pod_oversubscription=7", "cluster.scale_out.cores=2",
                        NULL};
  system_cfg_t two = load_system("ascend-910b.json", NULL), pods = load_system("ascend-910b.json", sets);
  topo_t t2, t;
  npu_err_t err = {""};
  CU_ASSERT_EQUAL_FATAL(topo_build(&two.node, &two.cluster, 1, 256, 8, &t2, &err), 0);
  CU_ASSERT_EQUAL_FATAL(topo_build(&pods.node, &pods.cluster, 1, 256, 8, &t, &err), 0);
  CU_ASSERT_EQUAL(t.pods, 2);
  CU_ASSERT_EQUAL(t.nlinks, t2.nlinks + 2 * 2);
  CU_ASSERT_EQUAL(t.links[t.first_core + 3].kind, TOPO_LINK_CORE);
  double nic = topo_link_bw(&t, t.first_nic);
  CU_ASSERT_DOUBLE_EQUAL(topo_link_bw(&t, t.first_core), nic * 128 / 7 / 2, 1e-9 * nic);
  CU_ASSERT_EQUAL(topo_switch_ports(&t), topo_switch_ports(&t2) + 2 * 2 * 2);
  char name[64];
  topo_link_name(&t, t.first_core + 3, name, sizeof name);
  CU_ASSERT_STRING_EQUAL(name, "pod1.core1");
  CU_ASSERT(topo_pod_of(&t, 127) == 0 && topo_pod_of(&t, 128) == 1);
  topo_hop_t h[TOPO_MAX_HOPS], h2[TOPO_MAX_HOPS];
  for (int dst = 8; dst < 128; dst += 8) { /* inside pod 0: the two-tier route */
    int n = topo_route(&t, 0, dst, h);
    CU_ASSERT_EQUAL(n, topo_route(&t2, 0, dst, h2));
    CU_ASSERT(memcmp(h, h2, (size_t)n * sizeof *h) == 0);
  }
  bool core_used[2] = {false, false};
  for (int src = 0; src < 32; src++) {
    CU_ASSERT_EQUAL_FATAL(topo_route(&t, src, 128 + src, h), 6);
    static const topo_link_kind_t kinds[6] = {TOPO_LINK_NIC, TOPO_LINK_UPLINK, TOPO_LINK_CORE,
                                              TOPO_LINK_CORE, TOPO_LINK_UPLINK, TOPO_LINK_NIC};
    for (int k = 0; k < 6; k++)
      CU_ASSERT_EQUAL(t.links[h[k].link].kind, kinds[k]);
    int up = h[2].link - t.first_core, down = h[3].link - t.first_core;
    CU_ASSERT(up / 2 == 0 && down / 2 == 1 && up % 2 == down % 2 && h[2].dir == 0 &&
              h[3].dir == 1);
    CU_ASSERT(h[1].dir == 0 && h[4].dir == 1 && t.links[h[1].link].owner == 0 &&
              t.links[h[4].link].owner == 4);
    core_used[up % 2] = true;
  }
  CU_ASSERT(core_used[0] && core_used[1]); /* hashed over both */
  topo_free(&t);
  topo_free(&t2);
  CU_ASSERT_EQUAL_FATAL(faults_parse("pod0.core0:0", &pods.cluster.faults), 0);
  CU_ASSERT_EQUAL_FATAL(topo_build(&pods.node, &pods.cluster, 1, 256, 8, &t, &err), 0);
  for (int src = 0; src < 32; src++) {
    topo_route(&t, src, 128 + src, h);
    CU_ASSERT_EQUAL(h[2].link, t.first_core + 1); /* round on core 1 */
    CU_ASSERT_EQUAL(h[3].link, t.first_core + 3);
  }
  topo_free(&t);
  pods.cluster.scale_out.cores = 1;
  CU_ASSERT_EQUAL(topo_build(&pods.node, &pods.cluster, 1, 256, 8, &t, &err), TOPO_BAD_FAULT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "every rank of pod 0 from the other pods"));
  /* pod 0 on core 0 only, pod 1 on core 1 only: no core joins them */
  CU_ASSERT_EQUAL_FATAL(faults_parse("pod0.core1:0,pod1.core0:0", &pods.cluster.faults), 0);
  pods.cluster.scale_out.cores = 2;
  CU_ASSERT_EQUAL(topo_build(&pods.node, &pods.cluster, 1, 256, 8, &t, &err), TOPO_BAD_FAULT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "expected two pods to keep a core both reach, found "
                                         "none for pods 0 and 1"));
}

static void test_routes_stay_on_the_physical_path(void) {
  system_cfg_t b = load_system("ascend-910b.json", NULL);
  topo_t t;
  npu_err_t err = {""};
  CU_ASSERT_EQUAL_FATAL(topo_build(&b.node, &b.cluster, 1, 128, 8, &t, &err), 0);
  topo_hop_t h[TOPO_MAX_HOPS];
  CU_ASSERT_EQUAL(topo_route(&t, 0, 7, h), 1); /* HCCS, never a NIC */
  CU_ASSERT_EQUAL(t.links[h[0].link].kind, TOPO_LINK_SCALE_UP);
  CU_ASSERT_EQUAL(topo_route(&t, 0, 8, h), 2); /* same leaf (4 servers per leaf) */
  CU_ASSERT_EQUAL(t.links[h[0].link].kind, TOPO_LINK_NIC);
  CU_ASSERT_EQUAL(topo_route(&t, 0, 64, h), 4); /* across the spine */
  CU_ASSERT_EQUAL(t.links[h[1].link].kind, TOPO_LINK_UPLINK);
  CU_ASSERT_EQUAL(h[1].dir, 0);
  CU_ASSERT_EQUAL(h[2].dir, 1);
  topo_free(&t);
  system_cfg_t a = load_system("ascend-910a.json", NULL); /* two groups of 4: across goes by RoCE */
  CU_ASSERT_EQUAL_FATAL(topo_build(&a.node, &a.cluster, 1, 8, 8, &t, &err), 0);
  CU_ASSERT_EQUAL(topo_route(&t, 0, 3, h), 1);
  CU_ASSERT_EQUAL(topo_route(&t, 0, 4, h), 2);
  CU_ASSERT_EQUAL(t.links[h[0].link].kind, TOPO_LINK_NIC);
  topo_free(&t);
  system_cfg_t c = load_system("ascend-910c-cm384.json", NULL); /* SIO, UB in server, UB supernode */
  CU_ASSERT_EQUAL_FATAL(topo_build(&c.node, &c.cluster, 2, 2048, 16, &t, &err), 0);
  CU_ASSERT_EQUAL(topo_route(&t, 0, 1, h), 1);
  CU_ASSERT_EQUAL(t.links[h[0].link].kind, TOPO_LINK_DIE);
  CU_ASSERT_EQUAL(topo_route(&t, 0, 2, h), 2);
  CU_ASSERT_EQUAL(t.links[h[0].link].kind, TOPO_LINK_SCALE_UP);
  CU_ASSERT_EQUAL(topo_route(&t, 0, 16, h), 2);
  CU_ASSERT_EQUAL(t.links[h[0].link].kind, TOPO_LINK_SUPERNODE);
  CU_ASSERT_EQUAL(topo_level(&t, 0, 768), 2); /* the next supernode: RoCE */
  CU_ASSERT_EQUAL(topo_levels_used(&t), 3);
  topo_route(&t, 0, 768, h);
  CU_ASSERT_EQUAL(t.links[h[0].link].kind, TOPO_LINK_NIC);
  topo_free(&t);
  /* more ranks than the cluster holds */
  const char *fixed[] = {"cluster.nodes=2", NULL};
  system_cfg_t f = load_system("ascend-910b.json", fixed);
  CU_ASSERT_EQUAL(topo_build(&f.node, &f.cluster, 1, 24, 8, &t, &err), -1);
  CU_ASSERT_STRING_EQUAL(err.msg, "ranks: expected at most 16 (cluster.nodes = 2 servers x 8 ranks "
                              "per node), found 24");
}

static void test_communicators_plan_on_their_own_ranks(void) {
  system_cfg_t s = load_system("ascend-910b.json", NULL);
  topo_t t;
  npu_err_t err = {""};
  CU_ASSERT_EQUAL_FATAL(topo_build(&s.node, &s.cluster, 1, 64, 8, &t, &err), 0);
  double n = 64.0 * 1024 * 1024;
  coll_req_t req = {COLL_ALLREDUCE, n, 0, NULL};
  int tp[8], dp[8];
  for (int i = 0; i < 8; i++) {
    tp[i] = 8 + i;  /* one server: a mesh on its HCCS links */
    dp[i] = 3 + 8 * i; /* NPU 3 of every server: between servers only */
  }
  coll_plan_t p;
  CU_ASSERT_EQUAL_FATAL(coll_plan_group(&t, &s.coll, tp, 8, &req, &p, &err), 0);
  CU_ASSERT_STRING_EQUAL(p.name, "mesh");
  CU_ASSERT_DOUBLE_EQUAL(coll_sched_bytes(&p.sched), 2.0 * 7 * n, 1);
  for (int i = 0; i < p.sched.nphases; i++)
    for (int j = 0; j < p.sched.phases[i].nxfers; j++) {
      CU_ASSERT(p.sched.phases[i].xfers[j].src >= 8 && p.sched.phases[i].xfers[j].src < 16);
      CU_ASSERT_EQUAL(topo_level(&t, p.sched.phases[i].xfers[j].src,
                                 p.sched.phases[i].xfers[j].dst), 0);
    }
  coll_plan_free(&p);
  CU_ASSERT_EQUAL_FATAL(coll_plan_group(&t, &s.coll, dp, 8, &req, &p, &err), 0);
  CU_ASSERT_EQUAL(p.algo[0], COLL_ALGO_MESH); /* a level of one rank per server: nothing to do */
  CU_ASSERT_DOUBLE_EQUAL(coll_sched_bytes(&p.sched), 2.0 * 7 * n, 1);
  for (int i = 0; i < p.sched.nphases; i++)
    for (int j = 0; j < p.sched.phases[i].nxfers; j++) {
      CU_ASSERT_EQUAL(p.sched.phases[i].xfers[j].src % 8, 3);
      CU_ASSERT_EQUAL(topo_level(&t, p.sched.phases[i].xfers[j].src,
                                 p.sched.phases[i].xfers[j].dst), 1);
    }
  coll_plan_free(&p);
  topo_free(&t);
}

/* ---- the capability table ---- */

static void test_every_algorithm_of_the_table_parses_with_algo(void) {
  npu_err_t err = {""};
  char two[64];
  for (int a = 0; a < COLL_ALGO_COUNT; a++) {
    const char *name = coll_algo_caps((coll_algo_t)a)->name;
    CU_ASSERT_EQUAL(coll_algo_parse(name), a);
    CU_ASSERT_STRING_EQUAL(coll_algo_name(a), name);
    coll_cfg_t cfg = {0};
    CU_ASSERT_EQUAL(coll_apply_algo(name, true, &cfg, &err), 0);
    CU_ASSERT_EQUAL(cfg.algo[1], a); /* one name: between servers */
    snprintf(two, sizeof two, "ring,%s", name);
    CU_ASSERT_EQUAL(coll_apply_algo(two, false, &cfg, &err), 0);
    CU_ASSERT_EQUAL(cfg.algo[0], COLL_ALGO_RING);
    CU_ASSERT_EQUAL(cfg.algo[1], a);
  }
  coll_cfg_t cfg = {0};
  CU_ASSERT_EQUAL(coll_apply_algo("ring,quantum", true, &cfg, &err), -1);
  CU_ASSERT_EQUAL(cfg.algo[0], COLL_ALGO_AUTO); /* untouched */
  for (int a = 0; a < COLL_ALGO_COUNT; a++) /* the refusal lists every name */
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, coll_algo_name(a)));
}

/* What `npusim coll --help` prints, in a string the caller frees. */
static char *coll_help(void) {
  char path[] = "/tmp/npusim_help_XXXXXX";
  int fd = mkstemp(path), saved = dup(STDOUT_FILENO);
  char *argv[] = {"npusim", "coll", "--help", NULL};
  fflush(stdout);
  dup2(fd, STDOUT_FILENO);
  CU_ASSERT_EQUAL(cli_main(3, argv), 0);
  fflush(stdout);
  dup2(saved, STDOUT_FILENO);
  close(saved);
  close(fd);
  char why[128];
  size_t len;
  char *text = jsonfile_read(path, 1 << 20, &len, why, sizeof why);
  unlink(path);
  return text;
}

static void test_every_algorithm_of_the_table_is_in_the_help(void) {
  char *help = coll_help();
  CU_ASSERT_PTR_NOT_NULL_FATAL(help);
  for (int a = COLL_ALGO_AUTO + 1; a < COLL_ALGO_COUNT; a++) {
    const coll_algo_caps_t *c = coll_algo_caps((coll_algo_t)a);
    char row[64];
    snprintf(row, sizeof row, "\n  %-9s %s", c->name, c->what);
    CU_ASSERT_PTR_NOT_NULL(strstr(help, row));
  }
  free(help);
}

/* Forces algo at level through --set on a shipped system; "" if it loads. */
static const char *force(const char *system, coll_algo_t algo, int level) {
  static system_cfg_t sys;
  char text[128], set[96];
  snprintf(text, sizeof text, "{\"extends\": \"%s\"}", system);
  snprintf(set, sizeof set, "collectives.level%d_algorithm=%s", level, coll_algo_name(algo));
  const char *const sets[] = {set, NULL};
  return load_text(CONFIG_SYSTEM, SYSTEMS_DIR, text, sets, &sys);
}

/* On h100-dgx (a switch that reduces) the config takes an algorithm exactly at
 * the levels of its row; on ascend-910b (a full mesh) also never one that
 * needs in-switch reduction; on ascend-910a (two groups) never one that needs
 * every pair linked. */
static void test_the_config_rules_follow_the_table_levels(void) {
  for (int a = 0; a < COLL_ALGO_COUNT; a++) {
    const coll_algo_caps_t *c = coll_algo_caps((coll_algo_t)a);
    for (int l = 0; l < COLL_LEVELS; l++) {
      bool at = (c->levels >> l) & 1;
      const char *got = force("h100-dgx.json", (coll_algo_t)a, l);
      CU_ASSERT_EQUAL(got[0] == '\0', at);
      if (!at)
        CU_ASSERT_PTR_NOT_NULL(strstr(got, "--set: collectives.level"));
      CU_ASSERT_EQUAL(force("ascend-910b.json", (coll_algo_t)a, l)[0] == '\0',
                      at && !c->in_switch);
      CU_ASSERT_EQUAL(force("ascend-910a.json", (coll_algo_t)a, l)[0] == '\0',
                      at && !c->in_switch && !c->all_pairs);
    }
  }
}

/* The prims column is what the emitters build (on a group of 4 with a switch). */
static void test_the_table_prims_are_what_the_emitters_build(void) {
  static const int members[4] = {0, 1, 2, 3};
  for (int a = COLL_ALGO_AUTO + 1; a < COLL_ALGO_COUNT; a++) {
    if (coll_algo_caps((coll_algo_t)a)->composed)
      continue; /* pipeline: the planner composes it */
    for (int p = 0; p < PRIM_COUNT; p++) {
      coll_sched_t tmp = {0};
      coll_group_t grp = {.sched = &tmp, .ranks = members, .g = 4, .switch_id = 4};
      bool built = coll_algo_emit((coll_algo_t)a, (coll_prim_t)p, &grp, 1024) >= 0;
      coll_sched_free(&tmp);
      CU_ASSERT_EQUAL(built, coll_algo_builds((coll_algo_t)a, (coll_prim_t)p));
      if (built != coll_algo_builds((coll_algo_t)a, (coll_prim_t)p))
        fprintf(stderr, "\n  %s, block %d: the table and the emitter differ\n",
                coll_algo_name(a), p);
    }
  }
}

/* "LINK:FACTOR@T": parsed with its time; on the topology a change of the
 * link's bandwidth at T, that drains bytes at the old rate until T and the
 * new one after; "@0" is the fault from the start; a link dying at T > 0
 * gives the topology after T, and the rest of a phase caught by it follows
 * the resend rule; deaths at two times are refused. */
static void test_timed_faults_change_a_link_at_their_time(void) {
  link_faults_t f;
  CU_ASSERT_EQUAL_FATAL(faults_parse("s0.mesh0-1:0.5@0.002,nic:0.25", &f), 0);
  CU_ASSERT_EQUAL(f.n, 2);
  CU_ASSERT_DOUBLE_EQUAL(f.v[0].at_s, 0.002, 0);
  CU_ASSERT(f.v[0].timed && !f.v[1].timed);
  CU_ASSERT_DOUBLE_EQUAL(f.v[1].at_s, 0, 0);
  CU_ASSERT_EQUAL_FATAL(faults_parse("nic:0.5@0,nic:0@0", &f), 0); /* the static fault */
  CU_ASSERT(!f.v[0].timed && !f.v[1].timed);
  CU_ASSERT_EQUAL(faults_parse("nic:0.5@", &f), -1);
  CU_ASSERT_EQUAL(faults_parse("nic:0.5@-1", &f), -1);
  CU_ASSERT_EQUAL(faults_parse("nic:0.5@1x", &f), -1);
  system_cfg_t b = load_system("ascend-910b.json", NULL);
  CU_ASSERT_EQUAL_FATAL(faults_parse("s0.mesh0-1:0.5@0.002,s0.mesh0-1:0.5@0.004",
                                     &b.cluster.faults), 0);
  topo_t t;
  npu_err_t err = {""};
  CU_ASSERT_EQUAL_FATAL(topo_build(&b.node, &b.cluster, 1, 8, 8, &t, &err), 0);
  topo_hop_t h[TOPO_MAX_HOPS];
  CU_ASSERT_EQUAL_FATAL(topo_route(&t, 0, 1, h), 1);
  int l = h[0].link;
  double bw = topo_link_bw(&t, l);
  CU_ASSERT_EQUAL(t.nchanges, 2);
  CU_ASSERT_DOUBLE_EQUAL(topo_link_bw_at(&t, l, 0.001), bw, 0);
  CU_ASSERT_DOUBLE_EQUAL(topo_link_bw_at(&t, l, 0.002), bw / 2, 0);
  CU_ASSERT_DOUBLE_EQUAL(topo_link_bw_at(&t, l, 0.005), bw / 4, 0);
  /* 3 ms of bytes from 1 ms: 1 ms at bw, 2 ms at bw/2 (1 ms of bytes), the
   * last 1 ms of bytes at bw/4 takes 4 ms: done at 8 ms */
  CU_ASSERT_DOUBLE_EQUAL(topo_link_drain_end_s(&t, l, 0.003 * bw, 0.001), 0.008, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL(topo_link_drain_end_s(&t, l, 0.0005 * bw, 0.001), 0.0015, 1e-12);
  CU_ASSERT(topo_changes_within(&t, 0.001, 0.002) && !topo_changes_within(&t, 0.004, 1));
  int other = h[0].link == 0 ? 1 : 0; /* another mesh link keeps its bandwidth */
  CU_ASSERT_DOUBLE_EQUAL(topo_link_bw_at(&t, other, 1), topo_link_bw(&t, other), 0);
  topo_free(&t);
  /* a link dying at 2 ms: its route before, the detour through NPU 2 from then
   * on; 1 ms of bytes from 1.5 ms carried 0.5 ms of them by 2 ms */
  CU_ASSERT_EQUAL_FATAL(faults_parse("s0.mesh0-1:0@0.002", &b.cluster.faults), 0);
  CU_ASSERT_EQUAL_FATAL(topo_build(&b.node, &b.cluster, 1, 8, 8, &t, &err), 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t.after);
  CU_ASSERT_DOUBLE_EQUAL(t.death_s, 0.002, 0);
  CU_ASSERT(topo_at(&t, 0.0019) == &t && topo_at(&t, 0.002) == t.after);
  CU_ASSERT_EQUAL(topo_route(&t, 0, 1, h), 1);
  CU_ASSERT(topo_link_dies(&t, h[0].link) && topo_path_dies(&t, h, 1));
  CU_ASSERT_EQUAL(topo_route(t.after, 0, 1, h), 2);
  CU_ASSERT(!topo_path_dies(&t, h, 2));
  CU_ASSERT(topo_changes_within(&t, 0.001, 0.002) && !topo_changes_within(&t, 0.002, 1));
  CU_ASSERT_DOUBLE_EQUAL(topo_link_bytes_between(&t, l, 0.0015, 0.002), 0.0005 * bw, 1e-3);
  /* the rest of a 2-round phase (0 -> 1 and 2 -> 3, B each) caught a quarter
   * through its link time, half way through its first round: 0 -> 1 resent
   * whole round NPU k, 2 -> 3 keeps its half left; then one round after T. On
   * the detour B + B, on 2-3 B / 2 + B; B / bw for each of the two rounds */
  double B = 1 << 20;
  coll_xfer_t xs[2] = {{0, 1, B}, {2, 3, B}};
  coll_phase_t ph = {.rounds = 2, .nxfers = 2, .xfers = xs};
  coll_sched_t s = {.nphases = 1, .phases = &ph, .loops = 1, .endpoints = 8, .wire_factor = 1};
  coll_phase_cost_t rest;
  coll_analytic_death_rest(&t, &s, 0, 0.25, &rest);
  topo_hop_t d[TOPO_MAX_HOPS], q[TOPO_MAX_HOPS];
  CU_ASSERT_EQUAL_FATAL(topo_route(t.after, 0, 1, d), 2);
  CU_ASSERT_EQUAL_FATAL(topo_route(&t, 2, 3, q), 1);
  CU_ASSERT_EQUAL(rest.nloads, 3);
  CU_ASSERT_DOUBLE_EQUAL(rest.fixed_s, 0, 0);
  CU_ASSERT_DOUBLE_EQUAL(rest.link_s, 2 * B / topo_link_bw(t.after, d[0].link), 1e-15);
  for (int k = 0; k < rest.nloads; k++) {
    bool detour = rest.slots[k] == 2 * d[0].link + d[0].dir ||
                  rest.slots[k] == 2 * d[1].link + d[1].dir;
    CU_ASSERT(detour || rest.slots[k] == 2 * q[0].link + q[0].dir);
    CU_ASSERT_DOUBLE_EQUAL(rest.bytes[k], detour ? 2 * B : 1.5 * B, 1e-6);
  }
  free(rest.slots);
  free(rest.bytes);
  topo_free(&t);
  CU_ASSERT_EQUAL_FATAL(faults_parse("s0.mesh0-1:0@0.002,s0.mesh0-2:0@0.003",
                                     &b.cluster.faults), 0);
  CU_ASSERT_EQUAL(topo_build(&b.node, &b.cluster, 1, 8, 8, &t, &err), TOPO_BAD_FAULT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "to die at one time"));
}

/* Link figures swept as a run goes (linkstats_sweep_before, each sweep up to a
 * time no later transfer starts before) are those of one sweep at the close,
 * to the last bit: overlapping transfers of uneven rates, ties at an edge and
 * a transfer of no length, added out of order between sweeps; and transfers
 * one after another on a link of their own, walked as they come. */
static void test_link_figures_swept_as_they_come(void) {
  system_cfg_t b = load_system("ascend-910b.json", NULL);
  topo_t t;
  npu_err_t err = {""};
  CU_ASSERT_EQUAL_FATAL(topo_build(&b.node, &b.cluster, 1, 16, 8, &t, &err), 0);
  linkstats_t whole, swept;
  linkstats_init(&whole, &t);
  linkstats_init(&swept, &t);
  unsigned seed = 7;
  double start = 0;
  int swept_times = 0;
  for (int i = 0; i < 4000; i++) {
    seed = seed * 1103515245u + 12345u;
    int link = (int)(seed >> 8) % 3, dir = (int)(seed >> 4) & 1;
    start += (seed >> 20) % 5 == 0 ? 0 : 1e-7 * ((seed >> 12) % 7); /* ties too */
    double len = (seed >> 16) % 11 == 0 ? 0 : 1e-6 * (1 + (seed >> 6) % 13);
    double bytes = 1000.0 + (seed >> 3) % 50000;
    linkstats_add_interval(&whole, link, dir, start, start + len, bytes);
    linkstats_add_interval(&swept, link, dir, start, start + len, bytes);
    /* one pair's transfers, one after another, on a link of its own:
     * walked as they come */
    double from = 1e-3 * i, to = from + (i % 5 == 0 ? 0 : 5e-4 + 1e-7 * (i % 3));
    linkstats_add_interval(&whole, 3, 0, from, to, bytes);
    linkstats_add_in_order(&swept, 2 * 3, from, to, bytes);
    if (i % 97 == 96) { /* the next transfer starts at or after start */
      linkstats_sweep_before(&swept, start);
      swept_times++;
    }
  }
  linkstats_close(&whole);
  linkstats_close(&swept);
  CU_ASSERT(swept_times > 40);
  int used = 0;
  for (int slot = 0; slot < whole.nslots; slot++) {
    used += whole.bytes[slot] > 0;
    CU_ASSERT_EQUAL(swept.bytes[slot], whole.bytes[slot]);
    CU_ASSERT_EQUAL(swept.busy_s[slot], whole.busy_s[slot]);
    CU_ASSERT_EQUAL(swept.peak[slot], whole.peak[slot]);
  }
  CU_ASSERT(used >= 5);
  CU_ASSERT(swept.sweep[6].n == 0 && whole.busy_s[6] > 0); /* kept nothing */
  CU_ASSERT(whole.peak[0] > 0 || whole.peak[1] > 0);
  linkstats_free(&whole);
  linkstats_free(&swept);
  topo_free(&t);
}

CU_TestInfo coll_tests[] = {
    {"communicators plan on their own ranks", test_communicators_plan_on_their_own_ranks},
    {"each algorithm moves the bytes of its formula",
     test_each_algorithm_moves_the_bytes_of_its_formula},
    {"analytic ring costs its alpha-beta-gamma formula",
     test_analytic_ring_costs_its_alpha_beta_gamma_formula},
    {"engine all-reduce costs its formula", test_engine_allreduce_costs_its_formula},
    {"full-mesh busbw grows with the NPUs used", test_full_mesh_busbw_grows_with_the_npus_used},
    {"auto follows the libraries' rules", test_auto_follows_the_libraries_rules},
    {"NVLS pipelines chunk steps as NCCL does", test_nvls_pipelines_chunk_steps_as_nccl_does},
    {"algorithms that cannot run are refused", test_algorithms_that_cannot_run_are_refused},
    {"routes stay on the physical path", test_routes_stay_on_the_physical_path},
    {"ECMP hashes each flow onto one spine", test_ecmp_hashes_each_flow_onto_one_spine},
    {"ECMP mixes both ends, or sprays packets", test_ecmp_mixes_and_sprays},
    {"planes are copies of the fabric", test_planes_are_copies_of_the_fabric},
    {"pods under a core tier", test_pods_under_a_core_tier},
    {"NCCL's rings run flat over all ranks", test_nccl_rings_run_flat_over_all_ranks},
    {"every algorithm of the table parses with --algo",
     test_every_algorithm_of_the_table_parses_with_algo},
    {"every algorithm of the table is in the help", test_every_algorithm_of_the_table_is_in_the_help},
    {"the config rules follow the table's levels", test_the_config_rules_follow_the_table_levels},
    {"the table's prims are what the emitters build",
     test_the_table_prims_are_what_the_emitters_build},
    {"timed faults change a link at their time", test_timed_faults_change_a_link_at_their_time},
    {"link figures swept as they come", test_link_figures_swept_as_they_come},
    CU_TEST_INFO_NULL,
};
