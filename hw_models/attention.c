/* attention.c - fused (FlashAttention-style) attention on cube and vector cores.
 *
 * Forward: the work is cut into units of Br query rows of one (batch, head). A
 * unit loops over the Bc-row key/value blocks its rows see: all of them, or under
 * a causal mask those up to the diagonal (blocks above it are skipped; a block the
 * diagonal crosses runs whole and is masked), and with a sliding window of w keys
 * (op window) only those from the block holding its first row's oldest key, w - 1
 * before it (blocks wholly outside the window are skipped, as FlashAttention-2's
 * window_size and Ascend's sparse_mode 4 skip them). With op past, the queries are
 * the last seq of past + seq keys (a prefill chunk after earlier ones, or a
 * prefix-cache hit): each unit loops over the cached keys too, the mask aligned at
 * the end (FlashAttention-2's causal mask for seqlen_q < seqlen_k), so a short
 * chunk after a long past is few units with long loops. Per block (a step) the cube computes
 * S = Q K^T and O += P V, 2 Br Bc d MACs, reading K and V from L1 (shared memory
 * on a GPU) through MTE1; the vector unit runs the online softmax on the Br x Bc
 * scores - scale and running max, exp, row sum, conversion to the matmul dtype -
 * and rescales the Br x d accumulator.
 *
 * Backward (FlashAttention-2/3's algorithm), as the kernels autograd runs:
 *  1. preprocess: D = rowsum(dO * O), and the fp32 dQ buffer cleared;
 *  2. the main kernel: units are Bc-row key/value blocks, each looping over the
 *     Br-row query blocks that see it (under a causal mask those at or below the
 *     diagonal, and with a window those up to the block holding the last row that
 *     still sees its last key). Per step the cube runs five matmuls (S again, dP = dO V^T,
 *     dV += P^T dO, dK += dS^T Q, dQ += dS K), P and dS pass through L1 to be read
 *     transposed, the vector unit recomputes P = exp(S - LSE) and dS = P (dP - D),
 *     and the step's Br x d fp32 dQ block is added into the buffer in L2
 *     (chip.attention.dq_atomic_bytes_per_cycle: on the step's critical path; 0:
 *     through the store path beside the matmuls);
 *  3. dQ converted from fp32 to its dtype;
 *  4. with grouped-query attention, dK and dV of the query heads of a group summed
 *     into the KV head's (the kernel writes them per query head).
 * Each kernel pays a launch, and chip.attention.bwd_kernel_gap_us of host time
 * before it: the measured backward (autograd's out.backward() timed per call) runs
 * alone, so the host's time between its kernels is inside it; where the host runs
 * ahead (back-to-back loops, training) the gap is 0.
 *
 * Exponentials run on the special-function unit (chip.vector.special_per_cycle
 * results per cycle) beside the fp32 lanes; the vector time of a step is the
 * slower of the two. The cube's and the vector's work of one step overlap by
 * chip.vector.overlap_with_cube (1: warp-specialised ping-pong or separate vector
 * cores; 0: one set of warps alternates): a step costs the slower of cube, MTE1,
 * MTE2 and the store path, plus the part of the vector time not hidden, plus the
 * dQ reduction (backward), plus the handshake. On a chip whose vector cores are
 * separate from its cube cores (910B, 910C: one cube to two vector cores) the
 * scores go through global memory (L2) both ways; where one core has both units
 * (910A, GPUs) they stay on it. head_dim runs padded up to a multiple of
 * chip.attention.head_dim_granule (the head dims the kernels are built for). A
 * tile whose buffers (forward Q and two stages of K and V; backward two stages of
 * Q and dO, K and V, P and dS) pass L1 halves its key rows, then its query rows,
 * down to 64, as the kernels' tiles for large head dims do.
 *
 * Scheduling: units are launched in grid order - (batch, head) outer, the unit's
 * block index inner, ascending - and each goes to the core that frees first (as a
 * GPU's block scheduler or a persistent kernel's tile counter hands them out).
 * Uniform units (no mask) run in waves, a partial last wave costing a full one.
 * Causal units have unequal lengths (forward: query block i runs i + 1 blocks, the
 * longest last in each head; backward: key block j runs n - j, the longest first);
 * their makespan is this list schedule, simulated (beyond SCHED_EXACT_UNITS units
 * the heads past that many are added at the mean rate: the tail is set by the last
 * heads). Q, K, V, O (and the gradients) cross HBM once; K and V are re-read from
 * L2 per unit. Each unit pays its prologue and epilogue: its own rows (forward Q
 * in, O out and the first K, V block; backward K, V in, dK, dV out) through the
 * core's port.
 *
 * Decode (attention_decode): one new query token per sequence against its cached
 * keys and values, as paged split-KV kernels run it (FlashDecoding, vLLM/FlashInfer,
 * Ascend's incremental FA). The query heads of one KV head form the rows of a
 * unit (padded to the cube's fractal M: grouped-query attention fills them, plain
 * multi-head leaves 15 of 16 empty); a unit is one sequence, one KV head and one
 * split of BLOCK_KV-token blocks; splits are added until the units fill the cores.
 * Each block's K and V stream from HBM once (no reuse: the cache is read exactly
 * once per step), so at serving batch sizes the op is bound by HBM; a second
 * launch combines the splits' partial results. With latent_kv (MLA, absorbed) all
 * query heads share one cached latent that is read once as key and value. Decode
 * does not use chip.attention.
 *
 * Not modelled: register pressure, bank conflicts, extra work on the masked
 * diagonal blocks, a longest-first tile order (FA3's scheduler; grid order is
 * modelled), intra-kernel clock changes, dropout inside the kernel (the training
 * generator emits dropout as its own op), L2 misses of K and V re-reads. */
#include <math.h>
#include <string.h>

#include "attention.h"
#include "memory.h"
#include "npu_int.h"

#define BLOCK_KV 128              /* decode: Bc of the split-KV kernels [A] */
#define FWD_ALU_PER_SCORE 4.0     /* FMA scale-subtract, max, row-sum add, cvt (half) [A] */
#define BWD_ALU_PER_SCORE 4.0     /* FMA S-LSE, sub and mul for dS, two cvt (half) [A] */
#define EXP_PER_SCORE 1.0         /* one exp per score, forward and backward recompute */
#define SCHED_EXACT_UNITS 131072  /* causal units list-scheduled one by one, at most */
#define SCHED_MAX_CORES 4096      /* the schema's bound on chip.cube.cores */
#define PIPE_STAGES 2             /* K/V (backward Q/dO) blocks in flight: double buffering [A] */

typedef struct {
  bool bwd, causal, separate;
  double window;       /* causal: keys a query sees, its own included; all keys when 0 */
  double past;         /* forward: keys before the first query (0 backward) */
  chip_dtype_t dtype;
  double batch, heads, kv_heads, seq, dim, e;
  double dpad;         /* head_dim as the kernel runs it (padded) */
  double br, bc;       /* block rows: query, key/value */
  int64_t own_blocks;  /* units per (batch, head) */
  int64_t loop_blocks; /* blocks a unit without a mask loops over */
  int64_t units;
  double vpc;          /* vector cores paired with a cube core */
} attn_t;

/* L1 a tile holds: forward Q and PIPE_STAGES stages of K and V; backward
 * PIPE_STAGES stages of Q and dO, K and V, and P and dS for their transposed uses. */
static double tile_bytes(const attn_t *a) {
  double d = a->dpad * a->e;
  if (!a->bwd)
    return a->br * d + PIPE_STAGES * 2 * a->bc * d;
  return PIPE_STAGES * 2 * a->br * d + 2 * a->bc * d + 2 * a->br * a->bc * a->e;
}

static void describe(const chip_cfg_t *chip, const op_desc_t *op, attn_t *a) {
  const chip_attention_cfg_t *cfg = &chip->attention;
  a->bwd = op->kind == OP_ATTN_BWD;
  a->causal = op->causal;
  a->dtype = op->dtype;
  a->batch = (double)op->dims[0];
  a->heads = (double)op->dims[1];
  a->seq = (double)op->dims[2];
  a->past = a->bwd ? 0 : (double)op->past;
  double keys = a->past + a->seq;
  a->window = op->window > 0 && (double)op->window < keys ? (double)op->window : keys;
  a->dim = (double)op->dims[3];
  double granule = cfg->head_dim_granule > 0 ? cfg->head_dim_granule : 1;
  a->dpad = ceil(a->dim / granule) * granule;
  a->kv_heads = (double)(op->dims[4] > 0 ? op->dims[4] : op->dims[1]);
  a->e = chip_dtype_bytes(op->dtype);
  double q = a->bwd ? cfg->bwd_block_q : cfg->fwd_block_q;
  double kv = a->bwd ? cfg->bwd_block_kv : cfg->fwd_block_kv;
  a->br = fmin(a->seq, q);
  a->bc = fmin(a->bwd ? a->seq : keys, kv);
  /* a tile too large for L1 halves its key rows, then its query rows, down to 64
   * each, as the kernels' large-head-dim tiles do (FA3 at head_dim 256: 128 x 80
   * forward, 64 x 64 backward); past that they drop double buffering instead */
  while (tile_bytes(a) > (double)chip->cube.l1_bytes && (a->bc > 64 || a->br > 64)) {
    if (a->bc > 64)
      a->bc /= 2;
    else
      a->br /= 2;
  }
  /* forward units are query blocks looping over kv blocks; backward the reverse */
  double own = ceil(a->seq / (a->bwd ? a->bc : a->br));
  a->own_blocks = (int64_t)own;
  a->loop_blocks = (int64_t)ceil(a->bwd ? a->seq / a->br : keys / a->bc);
  a->units = op->dims[0] * op->dims[1] * a->own_blocks;
  a->separate = chip->vector.cores != chip->cube.cores;
  a->vpc = (double)chip->vector.cores / chip->cube.cores;
}

/* Steps of unit i of a (batch, head): the blocks it loops over. Under a causal
 * mask a forward query block sees the key blocks up to its last row, a backward
 * key block the query blocks from the one holding its first row on; with a
 * window of w keys, a forward query block's first key block is the one holding
 * its first row's oldest key (w - 1 back), a backward key block's last query
 * block the one holding the last row that sees its last key (w - 1 on). */
static double unit_steps(const attn_t *a, int64_t i) {
  if (!a->causal)
    return (double)a->loop_blocks;
  double first_row = (double)i * (a->bwd ? a->bc : a->br);
  if (!a->bwd) { /* key positions: the cached ones first, then the queries' own */
    double oldest = fmax(0, a->past + first_row - (a->window - 1));
    return ceil((a->past + fmin(a->seq, first_row + a->br)) / a->bc) - floor(oldest / a->bc);
  }
  double last_row = fmin(a->seq, first_row + a->bc + a->window - 1);
  return ceil(last_row / a->br) - floor(first_row / a->br);
}

/* Query-key pairs of one (batch, head): all; causal, the past keys for every
 * query plus half the square (the diagonal not added); with a window, less the
 * pairs beyond it (query r sees past + r keys, at most the window). */
static double query_key_pairs(const attn_t *a) {
  double keys = a->past + a->seq;
  if (!a->causal)
    return a->seq * keys;
  double pairs = a->seq * a->past + a->seq * a->seq * 0.5;
  double first = fmax(0, a->past - a->window); /* beyond the window at the first query */
  double last = keys - a->window;              /* and at the last */
  return last > 0 ? pairs - (last * last - first * first) * 0.5 : pairs;
}

/* Min-heap of the cores' finish times: the earliest (the root) becomes t. */
static void heap_replace_root(double *h, int n, double t) {
  int i = 0;
  for (;;) {
    int c = 2 * i + 1;
    if (c >= n)
      break;
    if (c + 1 < n && h[c + 1] < h[c])
      c++;
    if (h[c] >= t)
      break;
    h[i] = h[c];
    i = c;
  }
  h[i] = t;
}

/* Cycles on the busiest core: units of unit_c fixed cycles plus their steps at
 * step_c each, in grid order to the core that frees first (see the header). */
static double makespan_cycles(const chip_cfg_t *chip, const attn_t *a, double step_c, double unit_c,
                              int64_t *waves) {
  int cores = chip->cube.cores < SCHED_MAX_CORES ? chip->cube.cores : SCHED_MAX_CORES;
  *waves = npu_ceil_div(a->units, cores);
  if (!a->causal)
    return (double)*waves * ((double)a->loop_blocks * step_c + unit_c);
  int64_t pairs = a->units / a->own_blocks;
  int64_t sim = SCHED_EXACT_UNITS / a->own_blocks;
  sim = sim < 1 ? 1 : sim < pairs ? sim : pairs;
  double finish[SCHED_MAX_CORES] = {0}, end = 0, head_c = 0;
  for (int64_t i = 0; i < a->own_blocks; i++)
    head_c += unit_steps(a, i) * step_c + unit_c;
  for (int64_t p = 0; p < sim; p++)
    for (int64_t i = 0; i < a->own_blocks; i++) {
      double t = finish[0] + unit_steps(a, i) * step_c + unit_c;
      heap_replace_root(finish, cores, t);
      end = fmax(end, t);
    }
  return end + (double)(pairs - sim) * head_c / cores;
}

typedef struct {
  double cube, mte1, mte2, store, vector, dq, step;
} step_t;

/* One step's pipes, in cycles of one cube core (and its paired vector cores). */
static void step_cost(const chip_cfg_t *chip, const attn_t *a, step_t *s) {
  const chip_cube_cfg_t *cube = &chip->cube;
  const chip_vector_cfg_t *vec = &chip->vector;
  double scores = a->br * a->bc, d = a->dpad, e = a->e;
  double macs = (a->bwd ? 5 : 2) * scores * d;
  s->cube = macs / cube->macs_per_cycle[a->dtype];
  /* operands read from L1: forward K and V; backward also Q, dO twice, and P, dS
   * written and read back for their transposed uses */
  double kv = 2 * a->bc * d * e;
  double l1 = a->bwd ? kv * 2 + 4 * a->br * d * e + 4 * scores * e : kv;
  s->mte1 = l1 / (cube->mte1_l0a_bytes_per_cycle + cube->mte1_l0b_bytes_per_cycle);
  double exchange = a->separate ? scores * (4 + e) * (a->bwd ? 2 : 1) : 0;
  s->mte2 = (kv + exchange / 2) / cube->mte2_bytes_per_cycle;
  /* the step's fp32 dQ block into L2: on the critical path at its own rate, or
   * beside the matmuls through the store path */
  double dq = a->bwd ? a->br * d * 4 : 0, dq_rate = chip->attention.dq_atomic_bytes_per_cycle;
  s->dq = dq_rate > 0 ? dq / dq_rate : 0;
  s->store = ((dq_rate > 0 ? 0 : dq) + exchange / 2) / cube->fixpipe_bytes_per_cycle;
  double lanes = vec->bytes_per_cycle / 4.0 * (a->vpc > 1 ? a->vpc : 1); /* fp32 */
  double alu = scores * (a->bwd ? BWD_ALU_PER_SCORE : FWD_ALU_PER_SCORE) +
               (a->bwd ? 0 : a->br * d); /* forward: rescale the accumulator */
  double exps = scores * EXP_PER_SCORE;
  if (vec->special_per_cycle > 0)
    s->vector = fmax(alu / lanes, exps / (vec->special_per_cycle * (a->vpc > 1 ? a->vpc : 1)));
  else
    s->vector = (alu + exps) / lanes;
  double busy = fmax(fmax(s->cube, s->mte1), fmax(s->mte2, s->store));
  double hidden = vec->overlap_with_cube * fmin(s->vector, busy);
  s->step =
      fmax(busy, s->vector) + fmin(s->vector, busy) - hidden + s->dq + cube->step_overhead_cycles;
}

/* The kernels around the backward's main kernel (see the header): their bytes
 * over HBM, the seconds they stream, and in *fixed_s their launches and the host
 * gaps before all the backward's kernels. */
static double bwd_kernels_s(const chip_cfg_t *chip, const attn_t *a, double *bytes,
                            double *fixed_s) {
  double q = a->batch * a->heads * a->seq, d = a->dim, e = a->e;
  double pre = q * (2 * d * e + 4) + q * d * 4; /* read O, dO; write D; clear dQ fp32 */
  double convert = q * d * (4 + e);
  bool gqa = a->kv_heads < a->heads;
  double gqa_sum = gqa ? 2 * q * d * e + 2 * a->batch * a->kv_heads * a->seq * d * e : 0;
  *bytes = pre + convert + gqa_sum;
  double launches = gqa ? 3 : 2;
  *fixed_s =
      launches * chip->vector.op_overhead_s + (launches + 1) * chip->attention.bwd_kernel_gap_s;
  return *bytes / chip_hbm_effective_bw(chip);
}

/* Decode: see the header comment. */
static void decode_op(const chip_cfg_t *chip, const op_desc_t *op, op_result_t *out) {
  const chip_cube_cfg_t *cube = &chip->cube;
  double batch = (double)op->dims[0], heads = (double)op->dims[1], ctx = (double)op->dims[2];
  double d = (double)op->dims[3], kvh = (double)(op->dims[4] > 0 ? op->dims[4] : op->dims[1]);
  double e = chip_dtype_bytes(op->dtype), group = heads / kvh;
  double rows = ceil(group / cube->fractal_mkn[0]) * cube->fractal_mkn[0];
  double blocks = ceil(ctx / BLOCK_KV), bc = fmin(ctx, BLOCK_KV);
  double pairs = batch * kvh, cores = cube->cores;
  double splits = fmin(blocks, ceil(cores / pairs)); /* fill the cores with splits */
  double units = pairs * splits;
  int64_t waves = npu_ceil_div((int64_t)units, cube->cores);
  double steps = (double)waves * ceil(blocks / splits);
  /* one block: S = q K^T and O += P V on the padded rows; K and V through the port
   * (MLA: the latent is both, read once; its value width taken as the key's, within 12%) */
  double tensors = op->latent_kv ? 1 : 2;
  double kv_bytes = tensors * bc * d * e;
  double cube_c = 2 * rows * bc * d / cube->macs_per_cycle[op->dtype];
  double mte2_c = kv_bytes / cube->mte2_bytes_per_cycle;
  double mte1_c = kv_bytes / (cube->mte1_l0a_bytes_per_cycle + cube->mte1_l0b_bytes_per_cycle);
  double vpc = (double)chip->vector.cores / cube->cores;
  double lanes = chip->vector.bytes_per_cycle / 4.0 * (vpc > 1 ? vpc : 1);
  double vec_c = group * bc * (FWD_ALU_PER_SCORE + EXP_PER_SCORE) / lanes;
  double step = fmax(fmax(cube_c, mte2_c), fmax(mte1_c, vec_c)) + cube->step_overhead_cycles;
  double hbm = batch * kvh * ctx * tensors * d * e + 2 * batch * heads * d * e;
  double partial = splits > 1 ? batch * heads * splits * (d + 2) * 4 * 2 : 0; /* fp32 out, in */
  double memory = mem_time_s(chip, hbm + partial, hbm + partial) * chip->freq_hz;
  double combine_s = splits > 1 ? chip->vector.op_overhead_s : 0;

  memset(out, 0, sizeof *out);
  out->flops = 2 * 2 * batch * heads * ctx * d;
  out->hbm_bytes = hbm + partial;
  out->cycles = fmax(steps * step, memory) + combine_s * chip->freq_hz;
  out->util[PIPE_HBM] = memory;
  out->util[PIPE_CUBE] = steps * cube_c;
  out->util[PIPE_MTE2] = steps * mte2_c;
  out->util[PIPE_MTE1] = steps * mte1_c;
  out->util[PIPE_VECTOR] = steps * vec_c;
  out->tile[0] = (int)rows;
  out->tile[1] = (int)bc;
  out->tile[2] = (int)d;
  out->tiles = (int64_t)units;
  out->waves = waves;
  out->cores = units < cores ? (int)units : cube->cores;
}

void attention_op(const chip_cfg_t *chip, const op_desc_t *op, op_result_t *out) {
  if (op->kind == OP_ATTN_DECODE) {
    decode_op(chip, op, out);
    return;
  }
  attn_t a;
  describe(chip, op, &a);
  step_t s;
  step_cost(chip, &a, &s);
  /* per unit on its core: its own rows in and out (forward Q in, O out and the
   * first K, V block; backward K, V in and dK, dV out) through the core's port */
  double own = 2 * a.bc * a.dpad * a.e * (a.bwd ? 2 : 1) + (a.bwd ? 0 : 2 * a.br * a.dpad * a.e);
  double per_unit = own / chip->cube.mte2_bytes_per_cycle;
  int64_t waves;
  double core = makespan_cycles(chip, &a, s.step, per_unit, &waves);
  double all_steps = 0;
  for (int64_t i = 0; i < a.own_blocks; i++)
    all_steps += unit_steps(&a, i);
  all_steps *= a.batch * a.heads;
  double busy_steps = all_steps / (a.units < chip->cube.cores ? a.units : chip->cube.cores);
  double act = a.batch * a.seq * a.dim * a.e, kv_act = a.batch * (a.past + a.seq) * a.dim * a.e;
  double hbm = a.bwd ? act * (4 * a.heads + 4 * a.kv_heads)
                     : act * 2 * a.heads + kv_act * 2 * a.kv_heads;
  double gm = hbm + all_steps * 2 * a.bc * a.dim * a.e;
  double pass_bytes = 0, fixed_s = 0;
  double pass_s = a.bwd ? bwd_kernels_s(chip, &a, &pass_bytes, &fixed_s) : 0;
  double memory = mem_time_s(chip, hbm, gm) * chip->freq_hz;

  memset(out, 0, sizeof *out);
  out->flops = 2 * (a.bwd ? 5 : 2) * a.batch * a.heads * query_key_pairs(&a) * a.dim;
  out->hbm_bytes = hbm + pass_bytes;
  out->cycles = fmax(core, memory) + (pass_s + fixed_s) * chip->freq_hz;
  out->util[PIPE_HBM] = memory + pass_s * chip->freq_hz;
  out->util[PIPE_LAUNCH] = fixed_s * chip->freq_hz; /* the backward's other launches, gaps */
  out->util[PIPE_CUBE] = busy_steps * s.cube;
  out->util[PIPE_MTE1] = busy_steps * s.mte1;
  out->util[PIPE_VECTOR] = busy_steps * s.vector;
  out->util[PIPE_MTE2] = busy_steps * s.mte2 + (double)waves * per_unit;
  out->util[PIPE_FIXPIPE] = busy_steps * (s.store + s.dq);
  out->tile[0] = (int)a.br;
  out->tile[1] = (int)a.bc;
  out->tile[2] = (int)a.dpad;
  out->tiles = a.units;
  out->waves = waves;
  out->cores = a.units < chip->cube.cores ? (int)a.units : chip->cube.cores;
}
