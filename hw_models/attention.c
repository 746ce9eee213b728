/* attention.c - fused (FlashAttention-style) attention on cube and vector cores.
 *
 * Each cube core takes one block of Br query rows of one head at a time and loops
 * over the key/value blocks of Bc rows: the cube computes S = Q K^T and O += P V
 * (backward: S again, dP = dO V^T, dV += P^T dO, dQ += dS K, dK += dS^T Q), the
 * vector cores paired with it (chip.vector.cores / chip.cube.cores of them) run
 * the online softmax (backward: dS = P (dP - rowsum)) on the Br x Bc scores. On a
 * chip whose vector cores are separate from its cube cores (910B, 910C: 1 cube :
 * 2 vector) the scores go through global memory (L2) both ways; where each core
 * has both units (910A, GPUs) they stay on the core. A kv-step costs its slowest
 * pipe plus the handshake; a causal mask skips the blocks above the diagonal.
 * K and V of a head are re-read by every query block (from L2); Q, K, V, O (and
 * the gradients) cross HBM once. Block sizes are those of common kernels. */
#include <math.h>
#include <string.h>

#include "attention.h"
#include "memory.h"

#define BLOCK_ROWS 128       /* Br and Bc [A]: FlashAttention-2 / Ascend FA kernels */
#define FWD_INSTRS_PER_SCORE 8.0  /* max, sub, exp, sum, rescale, casts [A] */
#define BWD_INSTRS_PER_SCORE 12.0 /* exp recompute, dS, casts [A] */

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

void attention_op(const chip_cfg_t *chip, const op_desc_t *op, op_result_t *out) {
  const chip_cube_cfg_t *cube = &chip->cube;
  const chip_vector_cfg_t *vec = &chip->vector;
  bool bwd = op->kind == OP_ATTN_BWD;
  double batch = (double)op->dims[0], heads = (double)op->dims[1], seq = (double)op->dims[2];
  double dim = (double)op->dims[3], kv_heads = (double)(op->dims[4] > 0 ? op->dims[4] : op->dims[1]);
  double e = chip_dtype_bytes(op->dtype);
  double br = seq < BLOCK_ROWS ? seq : BLOCK_ROWS, bc = br;
  int64_t qblocks = ceil_div(op->dims[2], (int64_t)br);
  int64_t units = op->dims[0] * op->dims[1] * qblocks;
  int active = units < cube->cores ? (int)units : cube->cores;
  int64_t waves = ceil_div(units, cube->cores);
  /* kv blocks a query block visits: all, or about half under a causal mask */
  double kv_steps = op->causal ? (qblocks + 1) / 2.0 : (double)qblocks;
  double matmuls = bwd ? 5 : 2;
  bool separate = vec->cores != cube->cores; /* scores cross global memory */
  double vpc = (double)vec->cores / cube->cores;

  double scores = br * bc;
  double exchange = separate ? scores * (4 + 4 + e + e) * (bwd ? 2 : 1) : 0;
  double kv_block = 2 * bc * dim * e;
  double act = batch * seq * dim * e;
  double hbm = bwd ? act * (4 * heads + 4 * kv_heads) : act * (2 * heads + 2 * kv_heads);
  double steps_total = (double)units * kv_steps;
  double gm = hbm + steps_total * (kv_block + exchange);
  double port = cube->mte2_bytes_per_cycle;

  double compute = matmuls * scores * dim / cube->macs_per_cycle[op->dtype];
  double lanes = vec->bytes_per_cycle / 4.0; /* softmax in fp32 */
  double instrs = bwd ? BWD_INSTRS_PER_SCORE : FWD_INSTRS_PER_SCORE;
  double vector = scores * instrs / (lanes * (vpc > 1 ? vpc : 1));
  double mte2 = (kv_block + (separate ? scores * e * (bwd ? 2 : 1) : 0)) / port;
  double fix = separate ? scores * 4 * (bwd ? 2 : 1) / cube->fixpipe_bytes_per_cycle : 0;
  double step = fmax(fmax(compute, vector), fmax(mte2, fix)) + cube->step_overhead_cycles;
  /* per query block: its own rows in and out (Q, O; backward also dO, dQ) */
  double rows = br * dim * e * (bwd ? 4 : 2) / port;

  memset(out, 0, sizeof *out);
  double causal = op->causal ? 0.5 : 1;
  out->flops = 2 * matmuls * batch * heads * seq * seq * dim * causal;
  out->hbm_bytes = hbm;
  double memory = mem_time_s(chip, hbm, gm) * chip->freq_hz;
  out->cycles = fmax((double)waves * (kv_steps * step + rows), memory);
  out->util[PIPE_HBM] = memory;
  out->util[PIPE_CUBE] = (double)waves * kv_steps * compute;
  out->util[PIPE_VECTOR] = (double)waves * kv_steps * vector;
  out->util[PIPE_MTE2] = (double)waves * (kv_steps * mte2 + rows);
  out->util[PIPE_FIXPIPE] = (double)waves * kv_steps * fix;
  out->tile[0] = (int)br;
  out->tile[1] = (int)bc;
  out->tile[2] = (int)dim;
  out->tiles = units;
  out->waves = waves;
  out->cores = active;
}
