/* vector.c - element-wise, row-wise and optimizer ops on the vector cores.
 *
 * Data streams through each core's unified buffer (UB) in tiles: MTE2 loads a
 * tile's inputs from global memory, the vector unit runs the op's instructions
 * on it, MTE3 stores the outputs; with double buffering a tile costs its slowest
 * pipe plus a handshake (chip.vector.step_overhead_cycles), with one tile of
 * fill and one of drain. Tiles go to the vector cores in waves. The vector unit
 * processes bytes_per_cycle / element-size lanes per instruction; ops that keep
 * fp32 intermediates (norms, softmax, activations, losses, Adam) run at fp32
 * lanes. Reads and writes share HBM (bandwidth x efficiency), split evenly over
 * the active cores, each capped by its MTE2/MTE3 port.
 *
 * Instructions per element are estimates of what a hand-written Ascend C kernel
 * issues (each an assumption, listed in the table below); transcendentals run on
 * the special-function unit beside the lanes (chip.vector.special_per_cycle). A
 * row-wise op keeps a row on chip when it fits the UB and reads it once; a row
 * that does not fit, or an algorithm that needs two passes (the fused
 * cross-entropy: max and sum of exponentials, then the gradient), reads it
 * again - from L2 while the rows in flight on all cores fit half of it, else
 * from HBM. Not modelled: the scalar unit, UB bank conflicts, the memory-level
 * parallelism a core's outstanding loads allow (Little's law). */
#include <math.h>
#include <string.h>

#include "memory.h"
#include "npu_int.h"
#include "vector.h"

typedef struct {
  double in_elems;       /* input elements read per element of the op (in dtype) */
  double in_fp32;        /* additional fp32 values read per element */
  double out_elems;      /* outputs written per element (in out dtype) */
  double out_fp32;       /* additional fp32 values written per element */
  double instrs;         /* vector instructions per element [A] */
  bool fp32_lanes;       /* computes in fp32 */
  bool row_wise;         /* needs a whole row (two passes if a row exceeds the UB) */
  double exps;           /* transcendentals (exp, tanh, rsqrt) per element, on the SFU */
  int passes;            /* reads of the input the algorithm needs (a row held on chip: 1) */
} vec_profile_t;

/* Per-element profiles, indexed by op_kind_t (matmul and attention unused). */
static const vec_profile_t profiles[OP_KIND_COUNT] = {
    [OP_ADD] = {2, 0, 1, 0, 1, false, false, 0, 1},
    [OP_MUL] = {2, 0, 1, 0, 1, false, false, 0, 1},
    [OP_GELU] = {1, 0, 1, 0, 14, true, false, 1, 1},  /* tanh form: ~7 ops, fp32 and casts */
    [OP_SWIGLU] = {2, 0, 1, 0, 8, true, false, 1, 1}, /* per output: exp, add, div, 2 mul, casts */
    [OP_SOFTMAX] = {1, 0, 1, 0, 6, true, true, 1, 1}, /* max, sub, exp, sum, mul, cast */
    [OP_LAYERNORM] = {1, 0, 1, 0, 8, true, true, 0, 1},
    [OP_RMSNORM] = {1, 0, 1, 0, 5, true, true, 0, 1},
    [OP_ROPE] = {1, 0, 1, 0, 4, true, false, 0, 1},   /* cos/sin tables stay in UB */
    /* the loss and its gradient, fused (one op per step in training): a pass for the
     * row's max and sum of exponentials, a second that writes the gradient */
    [OP_CROSS_ENTROPY] = {1, 0, 1, 0, 6, true, true, 2, 2},
    [OP_ADAM] = {1, 3, 1, 3, 12, true, false, 0, 1},  /* grad in; param, m, v fp32 in and out */
    [OP_CAST] = {1, 0, 1, 0, 1, false, false, 0, 1},
    [OP_COPY] = {1, 0, 1, 0, 0, false, false, 0, 1},
    [OP_REDUCE_SUM] = {1, 0, 0, 0, 1, true, true, 0, 1},
};

void vector_op(const chip_cfg_t *chip, const op_desc_t *op, op_result_t *out) {
  const chip_vector_cfg_t *vec = &chip->vector;
  const vec_profile_t *pf = &profiles[op->kind];
  double rows = (double)(op->dims[0] > 0 ? op->dims[0] : 1), cols = (double)op->dims[1];
  double elems = rows * cols;
  double e_in = chip_dtype_bytes(op->dtype), e_out = chip_dtype_bytes(op->out_dtype);
  double in_b = pf->in_elems * e_in + pf->in_fp32 * 4, out_b = pf->out_elems * e_out + pf->out_fp32 * 4;
  if (op->kind == OP_REDUCE_SUM)
    out_b = e_out / rows; /* one value per column */
  double lanes = vec->bytes_per_cycle / (pf->fp32_lanes ? 4.0 : e_in);

  /* Tile: as many elements as fit the UB twice (double buffer), 32-byte aligned. */
  double per_elem = in_b + out_b + (pf->fp32_lanes ? 4 : 0);
  double tile = floor((double)vec->ub_bytes / (2 * per_elem) / 32) * 32;
  if (tile < 32)
    tile = 32;
  /* a row-wise op holds a row on chip if it fits the UB; else it reads it again */
  bool row_fits = cols * (in_b + (pf->fp32_lanes ? 4 : 0)) <= (double)vec->ub_bytes;
  int passes = pf->row_wise && !row_fits && pf->passes < 2 ? 2 : pf->passes;
  if (tile > elems)
    tile = elems;
  int64_t tiles = npu_ceil_div((int64_t)ceil(elems), (int64_t)tile);
  int active = tiles < vec->cores ? (int)tiles : vec->cores;
  int64_t waves = npu_ceil_div(tiles, vec->cores);

  double data = elems * (in_b + out_b);
  /* a second read of a row comes after the first read of the whole row: it hits
   * L2 while the rows the cores work on (double-buffered) fit half of it */
  double reread = (passes - 1) * elems * in_b;
  double in_flight = 2.0 * vec->cores * cols * in_b;
  double hbm = data + (in_flight > chip->l2.size_bytes / 2.0 ? reread : 0);
  double gm = data + reread;
  double mte2 = tile * in_b * passes / vec->mte2_bytes_per_cycle;
  double mte3 = tile * out_b / vec->mte3_bytes_per_cycle;
  double alu = tile * pf->instrs * passes / lanes;
  double sfu = vec->special_per_cycle > 0 ? tile * pf->exps / vec->special_per_cycle : 0;
  double compute = fmax(alu, sfu);
  double step = fmax(fmax(mte2, mte3), compute) + vec->step_overhead_cycles;
  /* each core: its tiles through its own ports, plus fill and drain; all cores
   * together: what HBM and L2 deliver */
  double core = mte2 + (double)waves * step + mte3;
  double memory = mem_time_s(chip, hbm, gm) * chip->freq_hz;

  memset(out, 0, sizeof *out);
  out->flops = elems * pf->instrs;
  out->hbm_bytes = hbm;
  out->cycles = fmax(core, memory);
  out->util[PIPE_MTE2] = (double)waves * mte2;
  out->util[PIPE_VECTOR] = (double)waves * compute;
  out->util[PIPE_MTE3] = (double)waves * mte3;
  out->util[PIPE_HBM] = memory;
  out->tile[0] = (int)tile;
  out->tiles = tiles;
  out->waves = waves;
  out->cores = active;
}
