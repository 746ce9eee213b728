/* coll_plan.c - the hierarchical composition of a collective into one
 * schedule, on the layout of its group of ranks.
 *
 * Levels: 0 inside a server, 1 between servers (inside a supernode when there
 * is one), 2 between supernodes. Compositions (HCCL's, docs/hardware.md 3.1):
 *   allreduce      RS down the levels, AR at the top on 1/(ranks below) of the
 *                  data, AG back up; "pipeline" at level 1 overlaps each
 *                  inter-server ring step with the intra-server mesh step of
 *                  the next chunk;
 *   reducescatter  RS level by level, bottom up; allgather AG top down (the
 *                  orders that move the least data across servers);
 *   broadcast      scatter in the root's server, broadcast between servers,
 *                  AG in every server; reduce mirrors it;
 *   alltoall(v)    intra-server exchange, then inter-server exchange of the
 *                  aggregated blocks; sendrecv: a ring shift.
 * NCCL's ring between servers is no hierarchy: one flat ring per channel over
 * all ranks (flat_rings), which is why its busbw reaches the servers' NIC rate.
 * The algorithm per level comes from coll_select.c; a forced one that cannot
 * run is refused with the reason the capability table (coll_cfg.c) gives.
 * Not modelled: NCCL's tree as NCCL builds it (its intra-server chain is taken
 * as HCCL's reduce-scatter / all-gather around the inter-server tree), and groups whose servers contribute unequal numbers of ranks
 * are planned flat, one rank per server. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_algos.h"
#include "coll_engine.h"
#include "coll_select.h"
#include "npu_int.h"

const char *const coll_op_names[COLL_OP_COUNT] = {
    "allreduce", "allgather", "reducescatter", "broadcast",
    "reduce",    "alltoall",  "alltoallv",     "sendrecv"};

double coll_busbw_factor(coll_op_t op, int ranks) {
  double p = ranks;
  switch (op) {
  case COLL_ALLREDUCE:
    return 2 * (p - 1) / p;
  case COLL_ALLGATHER:
  case COLL_REDUCESCATTER:
  case COLL_ALLTOALL:
  case COLL_ALLTOALLV:
    return (p - 1) / p;
  default:
    return 1;
  }
}

/* ---- groups of a level ---- */

typedef struct {
  int ngroups, size;
  int *ranks; /* ngroups x size */
} groups_t;

/* Servers covered by one level-1 group: a supernode, or all servers. */
static int servers_per_l1(const topo_t *t, int levels) {
  return levels == 3 ? t->nodes_per_supernode : t->nodes;
}

/* Level 0: the ranks of each server. Level 1: ranks of the same local index in
 * the servers of a supernode (or all servers, flat = true or no supernodes).
 * Level 2: same local index and position, across supernodes. */
static groups_t make_groups(const topo_t *t, int level, int levels, bool flat) {
  groups_t g = {0};
  int k = t->ranks_per_node, n = t->nodes;
  int per = flat ? n : servers_per_l1(t, levels);
  if (level == 0) {
    g.ngroups = n;
    g.size = k;
  } else if (level == 1) {
    g.ngroups = (n / per) * k;
    g.size = per;
  } else {
    g.ngroups = per * k;
    g.size = n / per;
  }
  g.ranks = malloc((size_t)g.ngroups * g.size * sizeof *g.ranks);
  for (int gi = 0; gi < g.ngroups; gi++)
    for (int m = 0; m < g.size; m++) {
      int server, local;
      if (level == 0) {
        server = gi;
        local = m;
      } else if (level == 1) {
        server = (gi / k) * per + m;
        local = gi % k;
      } else {
        server = m * per + (gi / k);
        local = gi % k;
      }
      g.ranks[gi * g.size + m] = server * k + local;
    }
  return g;
}

/* The scale-up switch can reduce in the network (NVLink SHARP). */
static bool switch_reduces(const topo_t *t) {
  return t->node.scale_up.kind == SCALE_UP_SWITCH && t->node.scale_up.in_switch_reduction;
}

/* Emits prim with algo for every group of a level, from phase base. Returns the
 * phases used, -1 if the algorithm cannot run prim. */
static int emit_level(coll_sched_t *s, const topo_t *t, const groups_t *gs, int level, int base,
                      coll_algo_t algo, coll_prim_t prim, double n, int root) {
  int used = 0;
  for (int gi = 0; gi < gs->ngroups; gi++) {
    const int *members = &gs->ranks[gi * gs->size];
    coll_group_t grp = {.sched = s, .base = base, .level = level, .ranks = members,
                        .g = gs->size, .root = root, .switch_id = -1};
    if (algo == COLL_ALGO_NVLS && switch_reduces(t)) {
      grp.switch_id = t->ranks + topo_server_of(t, members[0]);
      grp.read_request = t->node.scale_up.read_request_overhead;
    }
    int r = coll_algo_emit(algo, prim, &grp, n);
    if (r < 0)
      return -1;
    used = r;
  }
  return used;
}

/* ---- compositions ---- */

/* Pipelined hierarchical allreduce (two levels, mesh inside servers). */
static int pipeline_allreduce(coll_sched_t *s, const topo_t *t, double n) {
  int k = t->ranks_per_node, m = t->nodes, ph = 0;
  double piece = n / ((double)k * m); /* s/p of HCCL's formula */
  for (int half = 0; half < 2; half++) {
    bool rs = half == 0;
    /* RS: an intra-only round first, then m-1 overlapped rounds; AG mirrors it. */
    for (int round = 0; round < m; round++, ph++) {
      bool intra = true, inter = rs ? round > 0 : round < m - 1;
      coll_phase_t *p = coll_sched_phase(s, ph, inter ? 1 : 0, 1, rs);
      for (int r = 0; r < t->ranks; r++) {
        int server = r / k, local = r % k;
        if (inter)
          coll_phase_add(p, r, ((server + 1) % m) * k + local, piece);
        for (int j = 0; intra && j < k; j++)
          if (j != local)
            coll_phase_add(p, r, server * k + j, piece);
      }
    }
  }
  return ph;
}

static int compose_allreduce(coll_sched_t *s, const topo_t *t, const coll_algo_t algo[],
                             double n) {
  int levels = topo_levels_used(t), ph = 0, used;
  if (levels == 2 && algo[1] == COLL_ALGO_PIPELINE)
    return pipeline_allreduce(s, t, n);
  if (levels == 1) {
    groups_t g0 = make_groups(t, 0, levels, false);
    used = emit_level(s, t, &g0, 0, 0, algo[0], PRIM_AR, n, 0);
    free(g0.ranks);
    return used;
  }
  groups_t g[COLL_LEVELS];
  for (int l = 0; l < levels; l++)
    g[l] = make_groups(t, l, levels, false);
  double size[COLL_LEVELS];
  size[0] = n;
  for (int l = 1; l < levels; l++)
    size[l] = size[l - 1] / g[l - 1].size;
  int rc = 0;
  for (int l = 0; l < levels - 1 && rc >= 0; l++, ph += rc) /* reduce-scatter down */
    rc = emit_level(s, t, &g[l], l, ph, algo[l], PRIM_RS, size[l], 0);
  if (rc >= 0) {
    rc = emit_level(s, t, &g[levels - 1], levels - 1, ph, algo[levels - 1], PRIM_AR,
                    size[levels - 1], 0);
    ph += rc;
  }
  for (int l = levels - 2; l >= 0 && rc >= 0; l--, ph += rc) /* all-gather up */
    rc = emit_level(s, t, &g[l], l, ph, algo[l], PRIM_AG, size[l], 0);
  for (int l = 0; l < levels; l++)
    free(g[l].ranks);
  return rc < 0 ? -1 : ph;
}

/* RS bottom up, or AG top down; n is the total (all ranks' slices). */
static int compose_gather_scatter(coll_sched_t *s, const topo_t *t, const coll_algo_t algo[],
                                  double n, bool rs) {
  int levels = topo_levels_used(t), ph = 0, rc = 0;
  groups_t g[COLL_LEVELS];
  double size[COLL_LEVELS];
  for (int l = 0; l < levels; l++)
    g[l] = make_groups(t, l, levels, false);
  size[0] = n;
  for (int l = 1; l < levels; l++)
    size[l] = size[l - 1] / g[l - 1].size;
  for (int i = 0; i < levels && rc >= 0; i++, ph += rc) {
    int l = rs ? i : levels - 1 - i;
    rc = emit_level(s, t, &g[l], l, ph, algo[l], rs ? PRIM_RS : PRIM_AG, size[l], 0);
  }
  for (int l = 0; l < levels; l++)
    free(g[l].ranks);
  return rc < 0 ? -1 : ph;
}

/* Broadcast or reduce: single level, or scatter/bcast/AG across two (all
 * servers form the inter-server level). */
static int compose_rooted(coll_sched_t *s, const topo_t *t, const coll_algo_t algo[], double n,
                          int root, bool reduce) {
  int levels = topo_levels_used(t), k = t->ranks_per_node, ph = 0, rc;
  if (levels == 1) {
    groups_t g0 = make_groups(t, 0, 1, false);
    rc = emit_level(s, t, &g0, 0, 0, algo[0], reduce ? PRIM_REDUCE : PRIM_BCAST, n, root);
    free(g0.ranks);
    return rc;
  }
  int rs = topo_server_of(t, root), rl = topo_local_of(t, root);
  groups_t g0 = make_groups(t, 0, 2, true), g1 = make_groups(t, 1, 2, true);
  coll_algo_t inter = algo[1] != COLL_ALGO_AUTO ? algo[1] : algo[levels - 1];
  double piece = n / k;
  if (!reduce) { /* scatter in the root's server */
    coll_phase_t *p = coll_sched_phase(s, ph++, 0, 1, false);
    for (int j = 0; j < k; j++)
      if (j != rl)
        coll_phase_add(p, root, rs * k + j, piece);
    rc = emit_level(s, t, &g1, 1, ph, inter, PRIM_BCAST, piece, rs);
    ph += rc < 0 ? 0 : rc;
    int rc2 = rc < 0 ? -1 : emit_level(s, t, &g0, 0, ph, algo[0], PRIM_AG, n, 0);
    rc = rc2 < 0 ? -1 : ph + rc2;
  } else {
    rc = emit_level(s, t, &g0, 0, ph, algo[0], PRIM_RS, n, 0);
    ph += rc < 0 ? 0 : rc;
    int rc2 = rc < 0 ? -1 : emit_level(s, t, &g1, 1, ph, inter, PRIM_REDUCE, piece, rs);
    ph += rc2 < 0 ? 0 : rc2;
    if (rc2 >= 0) { /* gather onto the root */
      coll_phase_t *p = coll_sched_phase(s, ph++, 0, 1, true);
      for (int j = 0; j < k; j++)
        if (j != rl)
          coll_phase_add(p, rs * k + j, root, piece);
    }
    rc = rc2 < 0 ? -1 : ph;
  }
  free(g0.ranks);
  free(g1.ranks);
  return rc;
}

/* All-to-all: intra-server exchange of blocks bound for each local index, then
 * inter-server exchange between ranks of the same local index. */
static int compose_alltoall(coll_sched_t *s, const topo_t *t, const coll_algo_t algo[],
                            const coll_req_t *req) {
  int levels = topo_levels_used(t), k = t->ranks_per_node, m = t->nodes, p = t->ranks, rc;
  double block = req->bytes / p;
  const double *mx = req->matrix;
  groups_t g0 = make_groups(t, 0, 2, true), g1 = make_groups(t, 1, 2, true);
  double *a0 = calloc((size_t)k * k, sizeof *a0), *a1 = calloc((size_t)m * m, sizeof *a1);
  int ph = 0;
  if (levels == 1) { /* one server: the request's blocks (or matrix) as they are */
    coll_group_t grp = {.sched = s, .base = 0, .level = 0, .ranks = g0.ranks, .g = k,
                        .switch_id = -1, .a2a = mx};
    rc = coll_algo_emit(algo[0], PRIM_A2A, &grp, req->bytes);
  } else {
    rc = 0;
    for (int sv = 0; sv < m && rc >= 0; sv++) { /* intra: sum over destination servers */
      for (int i = 0; i < k; i++)
        for (int j = 0; j < k; j++) {
          double b = 0;
          for (int d = 0; d < m; d++)
            b += mx ? mx[(sv * k + i) * p + d * k + j] : block;
          a0[i * k + j] = b;
        }
      coll_group_t grp = {.sched = s, .base = 0, .level = 0, .ranks = &g0.ranks[sv * k],
                          .g = k, .switch_id = -1, .a2a = a0};
      rc = coll_algo_emit(algo[0], PRIM_A2A, &grp, 0);
    }
    ph = rc;
    for (int l = 0; l < k && rc >= 0; l++) { /* inter: sum over source local ranks */
      for (int a = 0; a < m; a++)
        for (int b = 0; b < m; b++) {
          double sum = 0;
          for (int i = 0; i < k; i++)
            sum += mx ? mx[(a * k + i) * p + b * k + l] : block;
          a1[a * m + b] = sum;
        }
      coll_group_t grp = {.sched = s, .base = ph, .level = 1, .ranks = &g1.ranks[l * m], .g = m,
                          .switch_id = -1, .a2a = a1};
      rc = coll_algo_emit(algo[1] != COLL_ALGO_AUTO ? algo[1] : algo[levels - 1], PRIM_A2A, &grp,
                          0);
    }
    rc = rc < 0 ? -1 : ph + rc;
  }
  free(a0);
  free(a1);
  free(g0.ranks);
  free(g1.ranks);
  return rc;
}

static int compose_sendrecv(coll_sched_t *s, const topo_t *t, double n) {
  if (t->ranks < 2)
    return 0;
  for (int r = 0; r < t->ranks; r++) {
    int dst = (r + 1) % t->ranks;
    coll_phase_add(coll_sched_phase(s, 0, topo_level(t, r, dst), 1, false), r, dst, n);
  }
  return 1;
}

/* NCCL runs a ring between servers as one flat ring per channel over all ranks, not
 * as HCCL's ring of rings: channel c enters server j at local NPU e = (c - j) mod K,
 * runs e, e+1, ... over the scale-up fabric and leaves from e - 1 through that NPU's
 * NIC to the same local index of server j + 1 (the next server's entry), so every
 * hop between servers stays on its rail but the closing one. With K channels every
 * NIC carries exactly one channel each way and the scale-up links K - 1, so
 * between servers the ring moves at the server's whole NIC rate. Only for
 * allreduce, reduce-scatter and all-gather on servers of more than one rank. */
static bool nccl_flat_ring(const topo_t *t, const coll_cfg_t *cfg, const coll_algo_t algo[],
                           coll_op_t op) {
  return cfg->library == COLL_LIB_NCCL && algo[1] == COLL_ALGO_RING &&
         topo_levels_used(t) == 2 && t->ranks_per_node > 1 &&
         (op == COLL_ALLREDUCE || op == COLL_REDUCESCATTER || op == COLL_ALLGATHER);
}

/* The K channel rings' rounds merged per rank: (K - 1) chunks to the next NPU of
 * its server, one chunk over its NIC (channel (i + j + 1) mod K leaves there).
 * p - 1 reduce-scatter rounds, p - 1 all-gather rounds; chunk = n / (K p). */
static int flat_rings(coll_sched_t *s, const topo_t *t, coll_op_t op, double n) {
  int k = t->ranks_per_node, m = t->nodes, p = t->ranks, ph = 0;
  double chunk = n / ((double)k * p);
  for (int half = 0; half < 2; half++) {
    bool rs = half == 0;
    if ((rs && op == COLL_ALLGATHER) || (!rs && op == COLL_REDUCESCATTER))
      continue;
    coll_phase_t *phase = coll_sched_phase(s, ph++, 1, p - 1, rs);
    for (int r = 0; r < p; r++) {
      int j = r / k, i = r % k;
      int exit_to = j < m - 1 ? (j + 1) * k + i : (i + m) % k; /* closing hop: to server 0 */
      coll_phase_add(phase, r, j * k + (i + 1) % k, (k - 1) * chunk);
      coll_phase_add(phase, r, exit_to, chunk);
    }
  }
  return ph;
}

static int compose(coll_sched_t *s, const topo_t *t, const coll_cfg_t *cfg,
                   const coll_algo_t algo[], const coll_req_t *req, double n) {
  if (nccl_flat_ring(t, cfg, algo, req->op))
    return flat_rings(s, t, req->op, n);
  switch (req->op) {
  case COLL_ALLREDUCE:
    return compose_allreduce(s, t, algo, n);
  case COLL_REDUCESCATTER:
  case COLL_ALLGATHER:
    return compose_gather_scatter(s, t, algo, n, req->op == COLL_REDUCESCATTER);
  case COLL_BROADCAST:
  case COLL_REDUCE:
    return compose_rooted(s, t, algo, n, req->root, req->op == COLL_REDUCE);
  case COLL_ALLTOALL:
  case COLL_ALLTOALLV: {
    coll_req_t one_loop = *req; /* a staging buffer's share (alltoallv runs in one loop) */
    one_loop.bytes = n;
    return compose_alltoall(s, t, algo, &one_loop);
  }
  case COLL_SENDRECV:
    return compose_sendrecv(s, t, n);
  default:
    return -1;
  }
}

/* The building block op needs at level l of a job spanning `levels`. */
static coll_prim_t prim_at(coll_op_t op, int l, int levels) {
  bool top = l == levels - 1;
  switch (op) {
  case COLL_ALLREDUCE:
    return top ? PRIM_AR : PRIM_RS;
  case COLL_ALLGATHER:
    return PRIM_AG;
  case COLL_REDUCESCATTER:
    return PRIM_RS;
  case COLL_BROADCAST:
    return levels == 1 ? PRIM_BCAST : l == 0 ? PRIM_AG : PRIM_BCAST;
  case COLL_REDUCE:
    return levels == 1 ? PRIM_REDUCE : l == 0 ? PRIM_RS : PRIM_REDUCE;
  default:
    return PRIM_A2A;
  }
}

/* How the capability table judges an algorithm at one level of a job. */
typedef enum { FITS, NEEDS_SWITCH, WRONG_JOB, WRONG_BLOCK } fit_t;

/* algo at level l, where it must build prim; reduces: the switch reduces. The
 * levels column binds only the rows that fit one kind of job (only_for): the
 * others run wherever their emitter builds the block, as the planner accepts. */
static fit_t table_fit(coll_algo_t algo, int l, coll_prim_t prim, bool reduces) {
  const coll_algo_caps_t *c = coll_algo_caps(algo);
  bool builds = coll_algo_builds(algo, prim);
  if (c->in_switch && !reduces)
    return NEEDS_SWITCH;
  if (c->only_for)
    return (c->levels & (1u << l)) && builds ? FITS : WRONG_JOB;
  return builds ? FITS : WRONG_BLOCK;
}

/* "mesh, ring, ...": the algorithms the table lets build prim at level l. */
static void fitting_list(int l, coll_prim_t prim, bool reduces, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int a = COLL_ALGO_AUTO + 1; a < COLL_ALGO_COUNT && used < len; a++)
    if (table_fit((coll_algo_t)a, l, prim, reduces) == FITS)
      used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
                               coll_algo_name(a));
}

/* Why the forced choice algo[] cannot run req on t, as "expected ..., found ...":
 * the first level the capability table refuses, else the combination. */
static int explain_forced(const topo_t *t, const coll_algo_t algo[], const coll_req_t *req,
                          bool reduces, npu_err_t *err) {
  int levels = topo_levels_used(t);
  const char *op = coll_op_names[req->op];
  for (int l = 0; l < levels; l++) {
    if (algo[l] == COLL_ALGO_AUTO)
      continue;
    const coll_algo_caps_t *c = coll_algo_caps(algo[l]);
    coll_prim_t prim = prim_at(req->op, l, levels);
    char can[128];
    switch (table_fit(algo[l], l, prim, reduces)) {
    case NEEDS_SWITCH:
      return npu_err_set(err, "collectives.level%d_algorithm: expected \"%s\" only on a switch "
                      "that reduces (node.scale_up.in_switch_reduction), found it on a %s", l,
                      c->name, topology_scale_up_names[t->node.scale_up.kind]), -1;
    case WRONG_JOB:
      return npu_err_set(err, "collectives.level%d_algorithm: expected \"%s\" only for %s, "
                      "found it for %s on %d ranks in %d server%s", l, c->name, c->only_for, op,
                      t->ranks, t->nodes, t->nodes == 1 ? "" : "s"), -1;
    case WRONG_BLOCK:
      fitting_list(l, prim, reduces, can, sizeof can);
      return npu_err_set(err, "collectives.level%d_algorithm: expected one that can run %s "
                      "at this level (%s), found \"%s\"", l, op, can, c->name), -1;
    case FITS:
      break;
    }
  }
  npu_err_set(err, "algo: expected algorithms that can run %s, found a combination that "
           "cannot", op);
  return COLL_PLAN_FORCED_MISFIT;
}

static void name_plan(coll_plan_t *plan, const topo_t *t, const coll_cfg_t *cfg, coll_op_t op) {
  if (op == COLL_SENDRECV || nccl_flat_ring(t, cfg, plan->algo, op)) {
    snprintf(plan->name, sizeof plan->name, op == COLL_SENDRECV ? "p2p" : "ring");
    return;
  }
  plan->name[0] = '\0';
  for (int l = 0; l < topo_levels_used(t); l++) {
    size_t used = strlen(plan->name);
    snprintf(plan->name + used, sizeof plan->name - used, "%s%s", l ? "+" : "",
             coll_algo_name(plan->algo[l]));
  }
}

/* The layout of a group of ranks as the planner sees it: a virtual job of g
 * ranks, K per server, with virtual rank v = (server index) * K + (position in
 * that server). Members must come server by server, K from each; otherwise
 * every member is treated as its own server (a flat group). */
typedef struct {
  topo_t vt;       /* the virtual job (counts only; routing uses the real topology) */
  int *physical;   /* virtual rank -> real rank */
  int *server_of;  /* virtual server -> real server */
} layout_t;

/* Whether no server comes back in the run-length list of a group's servers
 * (sorted, so a group of thousands of servers costs n log n, not n^2). */
static bool servers_distinct(const int *server_of, int n) {
  int *sorted = malloc(((size_t)n + 1) * sizeof *sorted);
  memcpy(sorted, server_of, (size_t)n * sizeof *sorted);
  qsort(sorted, (size_t)n, sizeof *sorted, npu_cmp_int);
  bool distinct = true;
  for (int i = 1; i < n && distinct; i++)
    distinct = sorted[i] != sorted[i - 1];
  free(sorted);
  return distinct;
}

static void make_layout(const topo_t *t, const int *members, int g, layout_t *lay) {
  lay->physical = malloc((size_t)g * sizeof *lay->physical);
  lay->server_of = malloc((size_t)g * sizeof *lay->server_of);
  int nservers = 0, k = 0;
  for (int i = 0; i < g; i++) {
    int s = topo_server_of(t, members[i]);
    if (nservers == 0 || lay->server_of[nservers - 1] != s)
      lay->server_of[nservers++] = s;
  }
  k = g / nservers;
  bool regular = nservers * k == g && servers_distinct(lay->server_of, nservers);
  for (int i = 0; regular && i < g; i++) /* K members from each server, in a row */
    regular = topo_server_of(t, members[i]) == lay->server_of[i / k];
  if (!regular) {
    nservers = g;
    k = 1;
    for (int i = 0; i < g; i++)
      lay->server_of[i] = topo_server_of(t, members[i]);
  }
  for (int i = 0; i < g; i++)
    lay->physical[i] = members[i];
  lay->vt = *t;
  lay->vt.ranks = g;
  lay->vt.ranks_per_node = k;
  lay->vt.nodes = nservers;
  int first_sn = -1, nsn = 0;
  for (int s = 0; s < nservers && t->nodes_per_supernode; s++) {
    int sn = lay->server_of[s] / t->nodes_per_supernode;
    if (sn != first_sn && (first_sn = sn, 1))
      nsn++;
  }
  lay->vt.nodes_per_supernode = (nsn > 1 && nservers % nsn == 0) ? nservers / nsn : 0;
}

/* Rewrites the schedule's virtual endpoints as real ranks and switches. */
static void map_endpoints(const topo_t *t, const layout_t *lay, coll_sched_t *s) {
  int g = lay->vt.ranks;
  s->endpoints = 0;
  for (int i = 0; i < s->nphases; i++)
    for (int j = 0; j < s->phases[i].nxfers; j++) {
      coll_xfer_t *x = &s->phases[i].xfers[j];
      x->src = x->src < g ? lay->physical[x->src] : t->ranks + lay->server_of[x->src - g];
      x->dst = x->dst < g ? lay->physical[x->dst] : t->ranks + lay->server_of[x->dst - g];
      int hi = (x->src > x->dst ? x->src : x->dst) + 1;
      if (hi > s->endpoints)
        s->endpoints = hi;
    }
  if (s->endpoints < t->ranks)
    s->endpoints = t->ranks;
}

/* An all-to-all's schedule holds a transfer per ordered pair of ranks in a server
 * and per ordered pair of servers at each local index (and an m x m matrix of
 * servers' bytes): above this many it is refused before it is built, not left to
 * exhaust memory. 2^26 transfers take about 1.5 GiB; 16384 ranks in servers of 8
 * fit. */
#define COLL_MAX_XFERS (1L << 26)

static double alltoall_xfers(const topo_t *vt) {
  double k = vt->ranks_per_node, m = vt->nodes, p = vt->ranks;
  return topo_levels_used(vt) == 1 ? p * (p - 1) : m * k * (k - 1) + k * m * (m - 1);
}

/* Composes the schedule of plan->algo on the layout's ranks and chooses its
 * protocol; 0, or -1 with the forced algorithms' misfit in err. */
static int build(const topo_t *topo, const coll_cfg_t *cfg, const layout_t *lay,
                 const coll_req_t *vreq, coll_op_t op, double loop_bytes, int loops,
                 coll_plan_t *plan, npu_err_t *err) {
  const topo_t *vt = &lay->vt;
  plan->sched.nvls = cfg->nvls;
  if (compose(&plan->sched, vt, cfg, plan->algo, vreq, loop_bytes) < 0) {
    coll_sched_free(&plan->sched);
    return explain_forced(vt, plan->algo, vreq, switch_reduces(vt), err);
  }
  plan->sched.loops = loops;
  map_endpoints(topo, lay, &plan->sched);
  name_plan(plan, vt, cfg, op);
  coll_select_protocol(topo, cfg, plan);
  return 0;
}

int coll_plan_group(const topo_t *topo, const coll_cfg_t *cfg, const int *members, int g,
                    const coll_req_t *req, coll_plan_t *plan, npu_err_t *err) {
  memset(plan, 0, sizeof *plan);
  layout_t lay;
  make_layout(topo, members, g, &lay);
  const topo_t *vt = &lay.vt;
  if ((req->op == COLL_ALLTOALL || req->op == COLL_ALLTOALLV) &&
      alltoall_xfers(vt) > COLL_MAX_XFERS) {
    npu_err_set(err, "%s over %d ranks: expected a schedule of at most %ld transfers, "
             "found %.0f (one per pair of ranks in a server and per pair of servers); use "
             "fewer ranks", coll_op_names[req->op], g, COLL_MAX_XFERS, alltoall_xfers(vt));
    free(lay.physical);
    free(lay.server_of);
    return -1;
  }
  coll_req_t vreq = *req;
  vreq.root = 0;
  for (int i = 0; i < g; i++) /* the root as a virtual rank */
    if (members[i] == req->root)
      vreq.root = i;
  double n = req->bytes;
  /* HCCL relaunches per staging buffer; NCCL streams any size through its
   * channels' small buffers in one launch (its slices are not relaunches). */
  int loops = cfg->buffer_bytes > 0 && cfg->library == COLL_LIB_HCCL
                  ? (int)ceil(n / cfg->buffer_bytes) : 1;
  if (loops < 1 || req->op == COLL_ALLTOALLV)
    loops = 1;
  coll_select_algos(vt, cfg, switch_reduces(vt), req->op, n / loops, plan->algo);
  coll_algo_t cands[2];
  int level = 0, rc = 0;
  int ncands = coll_select_candidates(vt, cfg, switch_reduces(vt), req->op, &level, cands);
  if (ncands == 0) {
    rc = build(topo, cfg, &lay, &vreq, req->op, n / loops, loops, plan, err);
  } else { /* the library's tuner: the fastest candidate */
    double best = 0;
    for (int c = 0; c < ncands && rc == 0; c++) {
      coll_plan_t cand = *plan;
      memset(&cand.sched, 0, sizeof cand.sched);
      cand.algo[level] = cands[c];
      rc = build(topo, cfg, &lay, &vreq, req->op, n / loops, loops, &cand, err);
      double t = rc == 0 ? coll_analytic_time(topo, cfg, &cand.sched, NULL) : 0;
      if (rc == 0 && (c == 0 || t < best)) {
        best = t;
        coll_plan_free(plan);
        *plan = cand;
      } else if (rc == 0) {
        coll_plan_free(&cand);
      }
    }
  }
  free(lay.physical);
  free(lay.server_of);
  return rc;
}

int coll_plan(const topo_t *topo, const coll_cfg_t *cfg, const coll_req_t *req,
              coll_plan_t *plan, npu_err_t *err) {
  int *all = malloc((size_t)topo->ranks * sizeof *all);
  for (int r = 0; r < topo->ranks; r++)
    all[r] = r;
  int rc = coll_plan_group(topo, cfg, all, topo->ranks, req, plan, err);
  free(all);
  return rc;
}

void coll_plan_free(coll_plan_t *plan) { coll_sched_free(&plan->sched); }
