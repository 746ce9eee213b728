/* attention.c - fused (FlashAttention-style) attention on cube and vector cores.
 *
 * Forward: the work is cut into units of Br query rows of one head. A unit loops
 * over the Bc-row key/value blocks its rows see: all of them, or those up to the
 * diagonal under a causal mask (the diagonal block is computed whole and masked,
 * so a causal unit i runs i + 1 blocks). Per block (a step) the cube computes
 * S = Q K^T and O += P V, 2 Br Bc d MACs, reading K and V from L1 (shared memory
 * on a GPU) through MTE1; the vector unit runs the online softmax on the Br x Bc
 * scores - scale and running max, exp, row sum, conversion to the matmul dtype -
 * and rescales the Br x d accumulator.
 *
 * Backward (FlashAttention-2's algorithm): units are Bc-row key/value blocks, each
 * looping over the Br-row query blocks that see it. Per step the cube runs five
 * matmuls (S again, dP = dO V^T, dV += P^T dO, dK += dS^T Q, dQ += dS K), P and dS
 * pass through L1 to be read transposed, the vector unit recomputes
 * P = exp(S - LSE) and dS = P (dP - D), and the step's dQ contribution (Br x d
 * fp32) is added into a buffer in global memory through the core's store path
 * (atomics in L2). Two passes go around the main kernel: D = rowsum(dO * O)
 * before it, and dQ converted from fp32 to its dtype after it (plus clearing the
 * fp32 buffer): each a launch and a stream over HBM.
 *
 * Exponentials run on the special-function unit (chip.vector.special_per_cycle
 * results per cycle) beside the fp32 lanes; the vector time of a step is the
 * slower of the two. The cube's and the vector's work of one step overlap by
 * chip.vector.overlap_with_cube: a step costs the slower of cube, MTE1, MTE2 and
 * the store path, plus the part of the vector time not hidden, plus the
 * handshake. On a chip whose vector cores are separate from its cube cores (910B,
 * 910C: one cube to two vector cores) the scores go through global memory (L2)
 * both ways; where one core has both units (910A, GPUs) they stay on it.
 *
 * Units go to the cube cores in order: uniform units in waves (a partial last
 * wave costs a full one); causal units, whose lengths run from 1 to n blocks, as
 * the longer of the longest unit and the total spread over the cores. Q, K, V, O
 * (and the gradients) cross HBM once; K and V are re-read from L2 per unit.
 * Block sizes and instruction counts are those of FlashAttention-2/3 and the
 * Ascend FA kernels (constants below, assumptions).
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
 * query heads share one cached latent that is read once as key and value.
 *
 * Not modelled: register pressure, bank conflicts, dropout inside the kernel (the
 * training generator emits dropout as its own op), the GQA sum of dK and dV over
 * the query heads of a group (small next to the main kernel). */
#include <math.h>
#include <string.h>

#include "attention.h"
#include "memory.h"
#include "npu_int.h"

#define FWD_BLOCK_Q 128           /* Br forward [A]: FlashAttention-2/3, Ascend FA */
#define BWD_BLOCK_Q 64            /* Br backward [A]: FA2/FA3 head_dim 128 backward */
#define BLOCK_KV 128              /* Bc [A] */
#define FWD_ALU_PER_SCORE 4.0     /* FMA scale-subtract, max, row-sum add, cvt (half) [A] */
#define BWD_ALU_PER_SCORE 4.0     /* FMA S-LSE, sub and mul for dS, two cvt (half) [A] */
#define EXP_PER_SCORE 1.0         /* one exp per score, forward and backward recompute */

typedef struct {
  bool bwd, causal, separate;
  chip_dtype_t dtype;
  double batch, heads, kv_heads, seq, dim, e;
  double br, bc;                  /* block rows: the unit's own, the looped-over */
  int64_t units, loop_blocks;     /* units; blocks a non-causal unit loops over */
  double vpc;                     /* vector cores paired with a cube core */
} attn_t;

static void describe(const chip_cfg_t *chip, const op_desc_t *op, attn_t *a) {
  a->bwd = op->kind == OP_ATTN_BWD;
  a->causal = op->causal;
  a->dtype = op->dtype;
  a->batch = (double)op->dims[0];
  a->heads = (double)op->dims[1];
  a->seq = (double)op->dims[2];
  a->dim = (double)op->dims[3];
  a->kv_heads = (double)(op->dims[4] > 0 ? op->dims[4] : op->dims[1]);
  a->e = chip_dtype_bytes(op->dtype);
  double q = a->bwd ? BWD_BLOCK_Q : FWD_BLOCK_Q;
  a->br = a->seq < q ? a->seq : q;       /* query rows per block */
  a->bc = a->seq < BLOCK_KV ? a->seq : BLOCK_KV;
  /* forward units are query blocks looping over kv blocks; backward the reverse */
  int64_t own = npu_ceil_div(op->dims[2], (int64_t)(a->bwd ? a->bc : a->br));
  a->loop_blocks = npu_ceil_div(op->dims[2], (int64_t)(a->bwd ? a->br : a->bc));
  a->units = op->dims[0] * op->dims[1] * own;
  a->separate = chip->vector.cores != chip->cube.cores;
  a->vpc = (double)chip->vector.cores / chip->cube.cores;
}

/* Steps on the busiest core, in blocks. */
static double core_steps(const chip_cfg_t *chip, const attn_t *a, int64_t *waves) {
  int64_t cores = chip->cube.cores;
  *waves = npu_ceil_div(a->units, cores);
  if (!a->causal)
    return (double)*waves * (double)a->loop_blocks;
  double n = (double)a->loop_blocks; /* unit lengths 1..n, batch x heads of each */
  double total = (double)a->units * (n + 1) / 2;
  return fmax(n, ceil(total / (double)cores));
}

typedef struct {
  double cube, mte1, mte2, store, vector, step;
} step_t;

/* One step's pipes, in cycles of one cube core (and its paired vector cores). */
static void step_cost(const chip_cfg_t *chip, const attn_t *a, step_t *s) {
  const chip_cube_cfg_t *cube = &chip->cube;
  const chip_vector_cfg_t *vec = &chip->vector;
  double scores = a->br * a->bc, d = a->dim, e = a->e;
  double macs = (a->bwd ? 5 : 2) * scores * d;
  s->cube = macs / cube->macs_per_cycle[a->dtype];
  /* operands read from L1: forward K and V; backward also Q, dO twice, and P, dS
   * written and read back for their transposed uses */
  double kv = 2 * a->bc * d * e;
  double l1 = a->bwd ? kv * 2 + 4 * a->br * d * e + 4 * scores * e : kv;
  s->mte1 = l1 / (cube->mte1_l0a_bytes_per_cycle + cube->mte1_l0b_bytes_per_cycle);
  double exchange = a->separate ? scores * (4 + e) * (a->bwd ? 2 : 1) : 0;
  s->mte2 = (kv + exchange / 2) / cube->mte2_bytes_per_cycle;
  double dq = a->bwd ? a->br * d * 4 : 0; /* fp32 dQ accumulation */
  s->store = (dq + exchange / 2) / cube->fixpipe_bytes_per_cycle;
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
  s->step = fmax(busy, s->vector) + fmin(s->vector, busy) - hidden + cube->step_overhead_cycles;
}

/* The passes around the backward kernel: D = rowsum(dO * O), clearing the fp32
 * dQ buffer, converting it; bytes over HBM and their launches, in seconds. */
static double bwd_passes_s(const chip_cfg_t *chip, const attn_t *a, double *bytes) {
  double q = a->batch * a->heads * a->seq;
  *bytes = q * (2 * a->dim * a->e + 4) + q * a->dim * 4 + q * a->dim * (4 + a->e);
  return *bytes / chip_hbm_effective_bw(chip) + 2 * chip->vector.op_overhead_s;
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
  int64_t waves;
  double steps = core_steps(chip, &a, &waves);
  /* per unit on the busiest core: its own rows in and out (Q, O; backward K, V in and
   * dK, dV out) through the core's port */
  double own = 2 * a.bc * a.dim * a.e * (a.bwd ? 2 : 1) + (a.bwd ? 0 : 2 * a.br * a.dim * a.e);
  double per_unit = own / chip->cube.mte2_bytes_per_cycle;
  double all_steps = a.causal ? (double)a.units * ((double)a.loop_blocks + 1) / 2
                              : (double)a.units * (double)a.loop_blocks;
  double act = a.batch * a.seq * a.dim * a.e;
  double hbm = a.bwd ? act * (4 * a.heads + 4 * a.kv_heads) : act * (2 * a.heads + 2 * a.kv_heads);
  double gm = hbm + all_steps * 2 * a.bc * a.dim * a.e;
  double pass_bytes = 0, pass_s = a.bwd ? bwd_passes_s(chip, &a, &pass_bytes) : 0;
  double memory = mem_time_s(chip, hbm, gm) * chip->freq_hz;
  double core = steps * s.step + (double)waves * per_unit;

  memset(out, 0, sizeof *out);
  out->flops = 2 * (a.bwd ? 5 : 2) * a.batch * a.heads * a.seq * a.seq * a.dim *
               (a.causal ? 0.5 : 1);
  out->hbm_bytes = hbm + pass_bytes;
  out->cycles = fmax(core, memory) + pass_s * chip->freq_hz;
  out->util[PIPE_HBM] = memory + pass_s * chip->freq_hz;
  out->util[PIPE_CUBE] = steps * s.cube;
  out->util[PIPE_MTE1] = steps * s.mte1;
  out->util[PIPE_VECTOR] = steps * s.vector;
  out->util[PIPE_MTE2] = steps * s.mte2 + (double)waves * per_unit;
  out->util[PIPE_FIXPIPE] = steps * s.store;
  out->tile[0] = (int)a.br;
  out->tile[1] = (int)a.bc;
  out->tile[2] = (int)a.dim;
  out->tiles = a.units;
  out->waves = waves;
  out->cores = a.units < chip->cube.cores ? (int)a.units : chip->cube.cores;
}
