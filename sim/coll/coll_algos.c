/* coll_algos.c - the collective algorithms, each as phases of transfers.
 *
 * Volumes follow the textbook/HCCL definitions (docs/hardware.md section 3.2):
 * ring and mesh move (g-1)/g of the buffer per rank per half; halving-doubling
 * folds the ranks beyond a power of two onto partners first (one extra step
 * each way); Bruck (NB) sends min(2^k, g-2^k) blocks in step k with no extra
 * volume; NHR uses the same steps with the largest blocks between the nearest
 * ranks; the double binary tree pipelines two half-size trees in chunks; the
 * in-switch reduction (NVLS) streams each buffer up once and the result down
 * once. Broadcast and reduce are scatter/gather plus an all-gather or
 * reduce-scatter on ring and mesh, binomial trees on halving-doubling, NHR, NB.
 * The serving engines' one-shot and two-shot all-reduce read peers' buffers
 * directly (peer_to_peer). */
#include <math.h>

#include "coll_algos.h"
#include "npu_int.h"

/* Adds one transfer between members i and j of the group. */
static void put(const coll_group_t *grp, int phase, int rounds, bool reduces, int i, int j,
                double bytes) {
  if (i == j || bytes <= 0)
    return;
  coll_phase_t *ph = coll_sched_phase(grp->sched, grp->base + phase, grp->level, rounds, reduces);
  coll_phase_add(ph, grp->ranks[i], grp->ranks[j], bytes);
}

/* Reserves a phase even if this group adds nothing to it (keeps groups aligned). */
static void touch(const coll_group_t *grp, int phase, int rounds, bool reduces) {
  coll_sched_phase(grp->sched, grp->base + phase, grp->level, rounds, reduces);
}

/* ---- ring and mesh ---- */

static void ring_pass(const coll_group_t *grp, int phase, bool reduces, double block) {
  touch(grp, phase, grp->g - 1, reduces);
  for (int i = 0; i < grp->g; i++)
    put(grp, phase, grp->g - 1, reduces, i, (i + 1) % grp->g, block);
}

static void mesh_pass(const coll_group_t *grp, int phase, bool reduces, double block) {
  touch(grp, phase, 1, reduces);
  for (int i = 0; i < grp->g; i++)
    for (int j = 0; j < grp->g; j++)
      put(grp, phase, 1, reduces, i, j, block);
}

/* Root sends block to every member (scatter), or every member to the root (gather). */
static void root_pass(const coll_group_t *grp, int phase, bool to_root, double block) {
  touch(grp, phase, 1, to_root);
  for (int i = 0; i < grp->g; i++)
    if (to_root)
      put(grp, phase, 1, true, i, grp->root, block);
    else
      put(grp, phase, 1, false, grp->root, i, block);
}

static void a2a_pass(const coll_group_t *grp, int phase, double n) {
  touch(grp, phase, 1, false);
  for (int i = 0; i < grp->g; i++)
    for (int j = 0; j < grp->g; j++)
      put(grp, phase, 1, false, i, j, grp->a2a ? grp->a2a[i * grp->g + j] : n / grp->g);
}

/* Ring and mesh share their structure: one pass per half. */
static int ring_or_mesh(bool ring, coll_prim_t prim, const coll_group_t *grp, double n) {
  void (*pass)(const coll_group_t *, int, bool, double) = ring ? ring_pass : mesh_pass;
  double block = n / grp->g;
  switch (prim) {
  case PRIM_RS:
  case PRIM_AG:
    pass(grp, 0, prim == PRIM_RS, block);
    return 1;
  case PRIM_AR:
    pass(grp, 0, true, block);
    pass(grp, 1, false, block);
    return 2;
  case PRIM_BCAST:
    root_pass(grp, 0, false, block);
    pass(grp, 1, false, block);
    return 2;
  case PRIM_REDUCE:
    pass(grp, 0, true, block);
    root_pass(grp, 1, true, block);
    return 2;
  case PRIM_A2A:
    if (ring)
      return -1;
    a2a_pass(grp, 0, n);
    return 1;
  }
  return -1;
}

/* ---- binomial trees (broadcast, reduce) ---- */

static int binomial(const coll_group_t *grp, bool reduce, double n) {
  int g = grp->g, steps = npu_ceil_log2(g);
  for (int k = 0; k < steps; k++) {
    /* broadcast: step k doubles the informed set; reduce runs the steps backwards */
    int phase = reduce ? steps - 1 - k : k;
    touch(grp, phase, 1, reduce);
    for (int idx = 0; idx < (1 << k) && idx + (1 << k) < g; idx++) {
      int a = (grp->root + idx) % g, b = (grp->root + idx + (1 << k)) % g;
      if (reduce)
        put(grp, phase, 1, true, b, a, n);
      else
        put(grp, phase, 1, false, a, b, n);
    }
  }
  return steps;
}

/* ---- recursive halving-doubling ---- */

static int halving_doubling(coll_prim_t prim, const coll_group_t *grp, double n) {
  int g = grp->g, p2 = 1;
  while (p2 * 2 <= g)
    p2 *= 2;
  int extra = g - p2, levels = npu_ceil_log2(p2), ph = 0;
  if (prim == PRIM_BCAST || prim == PRIM_REDUCE)
    return binomial(grp, prim == PRIM_REDUCE, n);
  if (prim == PRIM_A2A)
    return -1;
  bool rs = prim != PRIM_AG, ag = prim != PRIM_RS;
  if (extra) { /* fold: the ranks beyond p2 hand their data to a partner */
    touch(grp, ph, 1, rs);
    for (int i = 0; i < extra; i++)
      put(grp, ph, 1, rs, p2 + i, i, rs ? n : n / g);
    ph++;
  }
  if (rs)
    for (int j = 0; j < levels; j++, ph++) {
      int dist = p2 >> (j + 1);
      touch(grp, ph, 1, true);
      for (int i = 0; i < p2; i++)
        put(grp, ph, 1, true, i, i ^ dist, n / (double)(2 << j));
    }
  if (ag)
    for (int j = 0; j < levels; j++, ph++) {
      touch(grp, ph, 1, false);
      for (int i = 0; i < p2; i++)
        put(grp, ph, 1, false, i, i ^ (1 << j), n / p2 * (1 << j));
    }
  if (extra) { /* unfold: partners return the result */
    touch(grp, ph, 1, false);
    for (int i = 0; i < extra; i++)
      put(grp, ph, 1, false, i, p2 + i, ag ? n : n / g);
    ph++;
  }
  return ph;
}

/* ---- Bruck (NB) and NHR ---- */

/* Blocks sent in step k of a Bruck all-gather over g members. */
static int bruck_blocks(int k, int g) {
  int d = 1 << k;
  return d < g - d ? d : g - d;
}

/* NHR's blocks per step: the Bruck counts, largest first. */
static void nhr_blocks(int g, int steps, int *out) {
  for (int k = 0; k < steps; k++)
    out[k] = bruck_blocks(k, g);
  for (int i = 0; i < steps; i++) /* tiny insertion sort, descending */
    for (int j = i; j > 0 && out[j] > out[j - 1]; j--) {
      int t = out[j];
      out[j] = out[j - 1];
      out[j - 1] = t;
    }
}

static int bruck_like(bool nhr, coll_prim_t prim, const coll_group_t *grp, double n) {
  int g = grp->g, steps = npu_ceil_log2(g);
  double block = n / g;
  int sorted[32];
  nhr_blocks(g, steps, sorted);
  if (prim == PRIM_BCAST || prim == PRIM_REDUCE)
    return binomial(grp, prim == PRIM_REDUCE, n);
  if (prim == PRIM_A2A) {
    if (nhr || grp->a2a)
      return -1;
    for (int k = 0; k < steps; k++) { /* Bruck all-to-all: blocks whose index has bit k */
      int count = 0;
      for (int j = 1; j < g; j++)
        count += (j >> k) & 1;
      touch(grp, k, 1, false);
      for (int i = 0; i < g; i++)
        put(grp, k, 1, false, i, (i + (1 << k)) % g, count * block);
    }
    return steps;
  }
  int ph = 0;
  if (prim != PRIM_AG) /* reduce-scatter half */
    for (int k = 0; k < steps; k++, ph++) {
      /* NB: distance 2^k carries bruck_blocks(k); NHR: the same distances carry the
       * blocks largest-first, so the heavy steps stay between near ranks. */
      int kk = nhr ? k : steps - 1 - k;
      int dist = 1 << kk, blocks = nhr ? sorted[k] : bruck_blocks(kk, g);
      touch(grp, ph, 1, true);
      for (int i = 0; i < g; i++)
        put(grp, ph, 1, true, i, (i + dist) % g, blocks * block);
    }
  if (prim != PRIM_RS) /* all-gather half: the mirror image */
    for (int k = 0; k < steps; k++, ph++) {
      int kk = nhr ? steps - 1 - k : k;
      int dist = 1 << kk, blocks = nhr ? sorted[steps - 1 - k] : bruck_blocks(kk, g);
      touch(grp, ph, 1, false);
      for (int i = 0; i < g; i++)
        put(grp, ph, 1, false, i, (i - dist % g + g) % g, blocks * block);
    }
  return ph;
}

/* ---- pairwise all-to-all ---- */

static int pairwise(coll_prim_t prim, const coll_group_t *grp, double n) {
  if (prim != PRIM_A2A)
    return -1;
  int g = grp->g;
  for (int k = 1; k < g; k++) {
    touch(grp, k - 1, 1, false);
    for (int i = 0; i < g; i++) {
      int j = (i + k) % g;
      put(grp, k - 1, 1, false, i, j, grp->a2a ? grp->a2a[i * g + j] : n / g);
    }
  }
  return g - 1;
}

/* ---- double binary tree, pipelined in chunks ---- */

static int heap_depth(int pos) { return (int)floor(log2(pos + 1.0)); }

/* One pass over the edges of both trees: up (reduce) or down (broadcast).
 * Tree 0 puts member pos at heap position pos; tree 1 is its mirror (member
 * g-1-pos), so the two trees share no directed edge and the leaves of one are
 * the inner nodes of the other, as in NCCL's double binary tree. The edge from
 * a child at depth d carries chunk c in wave c + D - d going up, c + d - 1
 * going down. */
static void tree_waves(const coll_group_t *grp, int first, int trees, bool up, int chunks,
                       double chunk_bytes) {
  int g = grp->g, depth = heap_depth(g - 1), waves = depth + chunks - 1;
  for (int w = 0; w < waves; w++)
    touch(grp, first + w, 1, up);
  for (int t = 0; t < trees; t++)
    for (int pos = 1; pos < g; pos++) {
      int d = heap_depth(pos), child = t ? g - 1 - pos : pos;
      int parent = t ? g - 1 - (pos - 1) / 2 : (pos - 1) / 2;
      if (trees == 1) { /* one tree rooted at the root member */
        child = (pos + grp->root) % g;
        parent = ((pos - 1) / 2 + grp->root) % g;
      }
      for (int c = 0; c < chunks; c++) {
        int w = up ? c + depth - d : c + d - 1;
        if (up)
          put(grp, first + w, 1, true, child, parent, chunk_bytes);
        else
          put(grp, first + w, 1, false, parent, child, chunk_bytes);
      }
    }
}

static int tree(coll_prim_t prim, const coll_group_t *grp, double n) {
  if (prim != PRIM_AR && prim != PRIM_BCAST && prim != PRIM_REDUCE)
    return -1;
  int trees = prim == PRIM_AR ? 2 : 1;
  double per_tree = n / trees;
  int chunks = (int)ceil(per_tree / COLL_TREE_CHUNK_BYTES);
  if (chunks < 1)
    chunks = 1;
  if (chunks > COLL_TREE_MAX_CHUNKS)
    chunks = COLL_TREE_MAX_CHUNKS;
  int waves = heap_depth(grp->g - 1) + chunks - 1;
  if (prim == PRIM_BCAST) {
    tree_waves(grp, 0, 1, false, chunks, per_tree / chunks);
    return waves;
  }
  tree_waves(grp, 0, trees, true, chunks, per_tree / chunks);
  if (prim == PRIM_REDUCE)
    return waves;
  tree_waves(grp, waves, trees, false, chunks, per_tree / chunks);
  return 2 * waves;
}

/* ---- in-switch reduction ---- */

static int nvls(coll_prim_t prim, const coll_group_t *grp, double n) {
  if (prim != PRIM_AR || grp->switch_id < 0)
    return -1;
  /* NCCL's NVLS: each rank heads 1/g of the buffer. It loads its slice reduced
   * over all ranks (multimem.ld_reduce: the switch reads the slice from every
   * rank and returns the sum) and stores the result to all (multimem.st: the
   * switch multicasts it). So every rank's port carries, up, the read responses
   * for all heads (n) and its own store (n/g), and, down, its reduced slice
   * (n/g) and every head's store (n): n (1 + 1/g) each way, not n (NCCL
   * maintainers: algbw = wire bw x g / (g + 1), nccl-tests PR #239). Reads also
   * need requests, against the data: the head's for its slice up, the
   * switch's for every slice read from the rank down. Up and down overlap. */
  double g = grp->g, r = grp->read_request;
  double up = n * (1 + 1 / g) + r * n / g, down = n * (1 + 1 / g) + r * n;
  coll_phase_t *ph = coll_sched_phase(grp->sched, grp->base, grp->level, 1, false);
  const coll_nvls_t *nv = &grp->sched->nvls;
  if (nv->present) { /* every channel and head walks its share chunk by chunk */
    double lanes = (double)nv->channels * grp->g;
    double steps = ceil(n / (lanes * coll_nvls_chunk_bytes(nv, n, grp->g)));
    ph->chunk_steps = steps < 1e9 ? (int)steps : 1000000000;
    ph->chunk_step_s = nv->chunk_step_s;
  }
  for (int i = 0; i < grp->g; i++) {
    coll_phase_add(ph, grp->ranks[i], grp->switch_id, up);
    coll_phase_add(ph, grp->switch_id, grp->ranks[i], down);
  }
  return 1;
}

/* ---- serving engines' peer-to-peer all-reduce ---- */

/* vLLM's custom all-reduce (csrc/custom_all_reduce.cuh) and TensorRT-LLM's:
 * the ranks map each other's buffers (CUDA IPC) and read them over NVLink.
 * One-shot: every rank reads every peer's whole buffer and reduces locally,
 * (g - 1) n in per rank in one stage. Two-shot: rank i reduces slice i from
 * every peer (reduce-scatter), then reads every peer's reduced slice
 * (all-gather): 2 (g - 1) n / g per rank in two stages. A read of n bytes is
 * costed as n sent by its owner. The stages' flag barriers are the plan's
 * step_s (collectives.p2p_sync_us, coll_select.c). */
static int peer_to_peer(coll_algo_t algo, coll_prim_t prim, const coll_group_t *grp, double n) {
  if (prim != PRIM_AR || grp->level != 0) /* peers map each other's memory: one server */
    return -1;
  if (algo == COLL_ALGO_ONESHOT) {
    mesh_pass(grp, 0, true, n);
    return 1;
  }
  mesh_pass(grp, 0, true, n / grp->g);
  mesh_pass(grp, 1, false, n / grp->g);
  return 2;
}

int coll_algo_emit(coll_algo_t algo, coll_prim_t prim, const coll_group_t *grp, double n) {
  if (grp->g <= 1)
    return 0;
  switch (algo) {
  case COLL_ALGO_RING:
    return ring_or_mesh(true, prim, grp, n);
  case COLL_ALGO_MESH:
    return ring_or_mesh(false, prim, grp, n);
  case COLL_ALGO_HD:
    return halving_doubling(prim, grp, n);
  case COLL_ALGO_NB:
    return bruck_like(false, prim, grp, n);
  case COLL_ALGO_NHR:
    return bruck_like(true, prim, grp, n);
  case COLL_ALGO_PAIRWISE:
    return pairwise(prim, grp, n);
  case COLL_ALGO_TREE:
    return tree(prim, grp, n);
  case COLL_ALGO_NVLS:
    return nvls(prim, grp, n);
  case COLL_ALGO_ONESHOT:
  case COLL_ALGO_TWOSHOT:
    return peer_to_peer(algo, prim, grp, n);
  default:
    return -1;
  }
}
