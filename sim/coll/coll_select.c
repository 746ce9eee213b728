/* coll_select.c - the libraries' automatic choice of algorithm per level, and
 * NCCL's choice of protocol.
 *
 * HCCL (Ascend systems; docs/hardware.md 3.3): level 0 from the scale-up
 * topology; level 1 "pipeline" for a large allreduce with a mesh inside the
 * servers, else the cheapest of ring, NHR and HD under HCCL's own alpha-beta
 * model, pairwise for all-to-all, and 910A's documented legacy rule; level 2
 * ring or HD by the supernode count. NCCL (GPU systems): NVLS for an allreduce
 * inside one server whose switch reduces, ring inside; between servers an
 * allreduce takes ring or tree, and every collective the protocol, whichever
 * the analytic model finds fastest for the size and the server count, as
 * NCCL's tuner does with its own model (so tree wins larger sizes as servers
 * grow: ring's 2 (p - 1) steps of latency against tree's 2 log p).
 *
 * A serving engine's own all-reduce (coll_select_engine_allreduce) follows
 * vLLM's custom all-reduce: one-shot or two-shot by size and group, peer-to-peer
 * over NVLink, its own launch and flag barriers instead of NCCL's protocols.
 *
 * Not modelled: NCCL's channel count and its tuning tables, HCCL's AIV mode
 * and the A3 algorithms (BIRS, AHC). A forced algorithm is taken as it is; the
 * planner refuses one that cannot run (coll_plan.c). */
#include "coll_select.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "coll_engine.h"
#include "npu_int.h"

/* HCCL's level-1 selector constants (docs/hardware.md 3.3). */
#define HCCL_ALPHA_S 60e-6
#define HCCL_PIPELINE_MIN_BYTES (1024.0 * 1024.0)

static bool is_pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }

static bool is_alltoall(coll_op_t op) { return op == COLL_ALLTOALL || op == COLL_ALLTOALLV; }

/* Members of one group at level 1 (servers of a supernode, or all servers) or
 * level 2 (supernodes). */
static int group_size(const topo_t *t, int level, int levels) {
  if (level == 1)
    return levels == 3 ? t->nodes_per_supernode : t->nodes;
  return t->nodes / (t->nodes_per_supernode ? t->nodes_per_supernode : 1);
}

/* ---- HCCL ---- */

static coll_algo_t hccl_level0(const topo_t *t, coll_op_t op) {
  switch (t->node.scale_up.kind) {
  case SCALE_UP_FULL_MESH:
    return COLL_ALGO_MESH;
  case SCALE_UP_TWO_GROUP_MESH: /* 910A: 8P ring, 4P mesh */
    return t->ranks_per_node <= t->node.npus / 2 ? COLL_ALGO_MESH : COLL_ALGO_RING;
  default:
    return is_alltoall(op) ? COLL_ALGO_MESH : COLL_ALGO_RING;
  }
}

/* HCCL's alpha-beta comparison of ring, NHR and HD between m servers. */
static coll_algo_t hccl_alpha_beta(const topo_t *t, double loop_bytes, int m) {
  double beta = 1.0 / link_effective_bw(&t->cluster.scale_out.nic);
  double vol = 2.0 * (m - 1) / m * loop_bytes / t->ranks_per_node * beta;
  double ring = 2.0 * (m - 1) * HCCL_ALPHA_S + vol;
  double nhr = 2.0 * npu_ceil_log2(m) * HCCL_ALPHA_S + vol;
  double hd = is_pow2(m) ? 2.0 * npu_ceil_log2(m) * HCCL_ALPHA_S + vol
                         : 2.0 * npu_ceil_log2(m) * HCCL_ALPHA_S +
                               2.0 * (2 * m - 1) / m * loop_bytes / t->ranks_per_node * beta;
  if (ring <= nhr && ring <= hd)
    return COLL_ALGO_RING;
  return nhr <= hd ? COLL_ALGO_NHR : COLL_ALGO_HD;
}

static coll_algo_t hccl_level1(const topo_t *t, coll_op_t op, coll_algo_t l0, double loop_bytes,
                               int m) {
  if (is_alltoall(op))
    return COLL_ALGO_PAIRWISE;
  if (t->node.scale_up.kind == SCALE_UP_TWO_GROUP_MESH) /* 910A: documented default */
    return is_pow2(m) ? COLL_ALGO_HD : COLL_ALGO_RING;
  if (op == COLL_ALLREDUCE && l0 == COLL_ALGO_MESH && t->ranks_per_node > 1 &&
      loop_bytes / t->ranks >= HCCL_PIPELINE_MIN_BYTES && topo_levels_used(t) == 2)
    return COLL_ALGO_PIPELINE;
  return hccl_alpha_beta(t, loop_bytes, m);
}

static coll_algo_t hccl_level2(int m) {
  return (m < 8 && !is_pow2(m)) ? COLL_ALGO_RING : COLL_ALGO_HD;
}

static coll_algo_t hccl_choice(const topo_t *t, coll_op_t op, int level, coll_algo_t l0,
                               double loop_bytes) {
  int m = group_size(t, level, topo_levels_used(t));
  if (level == 0)
    return hccl_level0(t, op);
  return level == 1 ? hccl_level1(t, op, l0, loop_bytes, m) : hccl_level2(m);
}

/* ---- NCCL ---- */

static coll_algo_t nccl_choice(const topo_t *t, coll_op_t op, int level, bool nvls) {
  if (is_alltoall(op))
    return level == 0 ? COLL_ALGO_MESH : COLL_ALGO_PAIRWISE;
  if (level == 0)
    return (nvls && op == COLL_ALLREDUCE && t->nodes == 1) ? COLL_ALGO_NVLS : COLL_ALGO_RING;
  return COLL_ALGO_RING; /* an allreduce weighs tree too: coll_select_candidates */
}

int coll_select_candidates(const topo_t *t, const coll_cfg_t *cfg, bool switch_reduces,
                           coll_op_t op, int *level, coll_algo_t out[2]) {
  if (cfg->library != COLL_LIB_NCCL || op != COLL_ALLREDUCE)
    return 0;
  out[0] = COLL_ALGO_RING;
  if (topo_levels_used(t) >= 2 && cfg->algo[1] == COLL_ALGO_AUTO) {
    *level = 1;
    out[1] = COLL_ALGO_TREE;
    return 2;
  }
  /* in one server NCCL weighs NVLS against its ring: NVLS's fixed cost and
   * chunk steps lose to ring/LL on small buffers */
  if (t->nodes == 1 && switch_reduces && cfg->algo[0] == COLL_ALGO_AUTO) {
    *level = 0;
    out[1] = COLL_ALGO_NVLS;
    return 2;
  }
  return 0;
}

void coll_select_algos(const topo_t *t, const coll_cfg_t *cfg, bool switch_reduces, coll_op_t op,
                       double loop_bytes, coll_algo_t out[COLL_LEVELS]) {
  int levels = topo_levels_used(t);
  for (int l = 0; l < COLL_LEVELS; l++)
    out[l] = COLL_ALGO_AUTO;
  for (int l = 0; l < levels; l++) {
    if (cfg->algo[l] != COLL_ALGO_AUTO)
      out[l] = cfg->algo[l];
    else if (cfg->library == COLL_LIB_NCCL)
      out[l] = nccl_choice(t, op, l, switch_reduces);
    else
      out[l] = hccl_choice(t, op, l, out[0], loop_bytes);
  }
}

/* ---- a serving engine's own all-reduce ---- */

/* vLLM's custom all-reduce (vllm-project/vllm csrc/custom_all_reduce.cuh,
 * CustomAllreduce::allreduce, and custom_all_reduce.py): 2, 4, 6 or 8 GPUs
 * that NVLink joins pairwise, buffers under max_size = 8 MiB; one-shot
 * (cross_device_reduce_1stage) on 2 GPUs, under 512 KiB on up to 4 and under
 * 256 KiB on up to 8, two-shot (2stage) above; NCCL beyond 8 MiB. */
#define ENGINE_AR_MAX_BYTES (8.0 * 1024 * 1024)

coll_algo_t coll_select_engine_allreduce(const topo_t *topo, const coll_cfg_t *cfg,
                                         const int *members, int g, double bytes) {
  scale_up_kind_t kind = topo->node.scale_up.kind;
  if (cfg->library != COLL_LIB_NCCL || g < 2 || g > 8 || g % 2 || bytes >= ENGINE_AR_MAX_BYTES ||
      (kind != SCALE_UP_SWITCH && kind != SCALE_UP_FULL_MESH))
    return COLL_ALGO_AUTO;
  for (int i = 1; i < g; i++)
    if (topo_server_of(topo, members[i]) != topo_server_of(topo, members[0]))
      return COLL_ALGO_AUTO;
  if (g == 2 || (g <= 4 && bytes < 512.0 * 1024) || bytes < 256.0 * 1024)
    return COLL_ALGO_ONESHOT;
  return COLL_ALGO_TWOSHOT;
}

/* ---- protocol ---- */

static void use_protocol(coll_plan_t *plan, const coll_proto_t *pr) {
  plan->sched.wire_factor = 1 / pr->wire_efficiency;
  plan->sched.step_s = pr->step_latency_s;
}

/* The engine's kernel loads its peers' buffers at cfg's p2p_read rate per rank,
 * all peers together, where that is below its port's (the slowest link of a
 * transfer's path; one server's ports are alike): each data byte then holds the
 * links as long as port / rate bytes would, as a protocol's wire efficiency
 * does, but moves one byte (the schedule's hold_factor); 1 at or above it. */
static double engine_hold_factor(const topo_t *t, const coll_cfg_t *cfg, const coll_sched_t *s) {
  if (cfg->p2p_read_bytes_per_s <= 0 || s->nphases == 0 || s->phases[0].nxfers == 0)
    return 1;
  topo_hop_t hops[TOPO_MAX_HOPS];
  int nh = topo_route(t, s->phases[0].xfers[0].src, s->phases[0].xfers[0].dst, hops);
  double port = INFINITY;
  for (int h = 0; h < nh; h++)
    port = fmin(port, topo_link_bw(t, hops[h].link));
  return nh > 0 && port > cfg->p2p_read_bytes_per_s ? port / cfg->p2p_read_bytes_per_s : 1;
}

void coll_select_protocol(const topo_t *t, const coll_cfg_t *cfg, coll_plan_t *plan) {
  plan->proto = -1;
  plan->sched.wire_factor = plan->sched.hold_factor = 1;
  if (plan->algo[0] == COLL_ALGO_ONESHOT || plan->algo[0] == COLL_ALGO_TWOSHOT) {
    /* the engine's kernel: plain loads and stores at the rate they reach, its
     * own launch, a flag barrier per stage; no NCCL protocol */
    plan->sched.step_s = cfg->p2p_sync_s;
    plan->sched.own_launch = true;
    plan->sched.launch_s = cfg->p2p_launch_s > 0 ? cfg->p2p_launch_s : cfg->op_overhead_s;
    plan->sched.wire_factor = plan->sched.hold_factor = engine_hold_factor(t, cfg, &plan->sched);
    return;
  }
  /* NVLS runs Simple only (NCCL's src/graph/tuning.cc); its configured pipeline
   * (coll_cfg.h) replaces the protocol's step latency */
  bool nvls = plan->algo[0] == COLL_ALGO_NVLS;
  double best = 0;
  for (int p = 0; p < COLL_PROTO_COUNT; p++) {
    if (!cfg->proto[p].present || (nvls && p != COLL_PROTO_SIMPLE))
      continue;
    use_protocol(plan, &cfg->proto[p]);
    double time = coll_analytic_time(t, cfg, &plan->sched, NULL);
    if (plan->proto < 0 || time < best) {
      best = time;
      plan->proto = p;
    }
  }
  if (plan->proto < 0) {
    plan->sched.wire_factor = 1;
    plan->sched.step_s = 0;
    return;
  }
  use_protocol(plan, &cfg->proto[plan->proto]);
  if (nvls && cfg->nvls.present)
    plan->sched.step_s = cfg->nvls.latency_s;
  size_t used = strlen(plan->name);
  snprintf(plan->name + used, sizeof plan->name - used, "/%s", coll_proto_names[plan->proto]);
}
