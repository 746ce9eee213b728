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
 * Memory-level parallelism (Little's law): a core cannot stream faster than the
 * bytes it keeps in flight divided by the load latency
 * (chip.vector.bytes_in_flight_KiB per input stream, load_latency_ns). Near
 * both that limit and HBM's, queues fill and the latency grows, so the two
 * times blend as (t_hbm^p + t_mlp^p)^(1/p) (mlp_blend_exponent). A row-wise
 * kernel gives each row to a block, so the busiest core reads ceil(rows /
 * cores) rows: a kernel with fewer rows than cores leaves cores idle and
 * streams no faster per core.
 *
 * An op is one kernel in its fused form (op_form_t; the default). In the
 * unfused form it is what eager PyTorch runs: swiglu = silu on the strided
 * first half, then mul with the strided second half (two kernels, element-wide
 * loads since the halves are strided); cross_entropy = log-softmax, then NLL
 * and mean (forward only, as F.cross_entropy runs); norms and softmax loop
 * over a row between block reductions, keeping only
 * rowwise_bytes_in_flight_KiB in flight per core (softmax only over rows of
 * more than 1024 elements; shorter ones go one per warp, in registers); a cast (2 bytes in, 4 out)
 * loads one element per thread (TensorIterator does not vectorise mixed
 * dtypes), as does a strided operand. Each kernel pays the launch overhead
 * (op_cost.c); an unfused op also reports the host's time to issue its
 * kernels (host_issue_us each, host_wrapper_us more for torch.nn.functional
 * calls), which a faster device waits for.
 *
 * Instructions per element are estimates of what a hand-written Ascend C kernel
 * issues (each an assumption, listed in the table below); transcendentals run on
 * the special-function unit beside the lanes (chip.vector.special_per_cycle). A
 * row-wise op keeps a row on chip when it fits the UB and reads it once; a row
 * that does not fit, or an algorithm that needs two passes (the fused
 * cross-entropy: max and sum of exponentials, then the gradient), reads it
 * again - from L2 while the rows in flight on all cores fit half of it, else
 * from HBM. Not modelled: the scalar unit, UB bank conflicts, DRAM page
 * locality of strided reads, how the eager row-wise kernels' occupancy changes
 * with the row length. */
#include <math.h>
#include <string.h>

#include "memory.h"
#include "npu_int.h"
#include "vector.h"

typedef struct {
  double in_elems;  /* input elements read per element of the op (in dtype) */
  double in_fp32;   /* additional fp32 values read per element */
  double out_elems; /* outputs written per element (in out dtype) */
  double out_fp32;  /* additional fp32 values written per element */
  double instrs;    /* vector instructions per element [A] */
  bool fp32_lanes;  /* computes in fp32 */
  bool row_wise;    /* needs a whole row (two passes if a row exceeds the UB) */
  double exps;      /* transcendentals (exp, tanh, rsqrt) per element, on the SFU */
  int passes;       /* reads of the input the algorithm needs (a row held on chip: 1) */
} vec_profile_t;

/* Per-element profiles, indexed by op_kind_t (matmul and attention unused). */
static const vec_profile_t profiles[OP_KIND_COUNT] = {
    [OP_ADD] = {2, 0, 1, 0, 1, false, false, 0, 1},
    [OP_MUL] = {2, 0, 1, 0, 1, false, false, 0, 1},
    [OP_GELU] = {1, 0, 1, 0, 14, true, false, 1, 1},  /* tanh form: ~7 ops, fp32 and casts */
    [OP_SWIGLU] = {2, 0, 1, 0, 8, true, false, 1, 1}, /* per output: exp, add, div, 2 mul, casts */
    [OP_GEGLU] = {2, 0, 1, 0, 15, true, false, 1, 1}, /* gelu's tanh form, then a mul */
    [OP_SOFTMAX] = {1, 0, 1, 0, 6, true, true, 1, 1}, /* max, sub, exp, sum, mul, cast */
    [OP_LAYERNORM] = {1, 0, 1, 0, 8, true, true, 0, 1},
    [OP_RMSNORM] = {1, 0, 1, 0, 5, true, true, 0, 1},
    [OP_ROPE] = {1, 0, 1, 0, 4, true, false, 0, 1}, /* cos/sin tables stay in UB */
    /* the loss and its gradient, fused (one op per step in training): a pass for the
     * row's max and sum of exponentials, a second that writes the gradient */
    [OP_CROSS_ENTROPY] = {1, 0, 1, 0, 6, true, true, 2, 2},
    [OP_ADAM] = {1, 3, 1, 3, 12, true, false, 0, 1}, /* grad in; param, m, v fp32 in and out */
    [OP_CAST] = {1, 0, 1, 0, 1, false, false, 0, 1},
    [OP_COPY] = {1, 0, 1, 0, 0, false, false, 0, 1},
    /* over the outer dim (x.sum(0)): each output column is independent, so the
     * columns spread over the cores like an element-wise op; no row is held */
    [OP_REDUCE_SUM] = {1, 0, 0, 0, 1, true, false, 0, 1},
};

/* One kernel of an op: its per-element profile over rows x cols, and how it
 * loads (what an unfused framework kernel does differently from a fused one). */
typedef struct {
  vec_profile_t pf;
  double rows, cols;
  double load_elems; /* elements per thread load: 0 = full-width vector loads */
  bool looped_rows;  /* row-wise, looping over a row between block reductions */
} kernel_t;

/* Whether eager (log-)softmax loops over a row with a block per row: rows of
 * more than 1024 elements or 4 KiB; shorter ones go one per warp, held in
 * registers (PyTorch aten/src/ATen/native/cuda/SoftMax.cu, host_softmax). */
static bool looped_softmax(const op_desc_t *op) {
  return op->dims[1] > 1024 || op->dims[1] * chip_dtype_bytes(op->dtype) > 4096;
}

#define MAX_KERNELS 5 /* eager rotate-half RoPE */

/* The kernels of op in its form; returns how many (at most MAX_KERNELS). The
 * unfused forms are what eager PyTorch 2.x runs (../shared/calibration/h100/README.md). */
static int op_kernels(const op_desc_t *op, kernel_t k[MAX_KERNELS]) {
  double rows = (double)(op->dims[0] > 0 ? op->dims[0] : 1), cols = (double)op->dims[1];
  k[0] = (kernel_t){profiles[op->kind], rows, cols, 0, false};
  if (op->form != OP_FORM_UNFUSED)
    return 1;
  switch (op->kind) {
  case OP_SWIGLU: /* a, b = x.chunk(2, -1); silu(a) * b: strided halves, element-wide loads */
    k[0] = (kernel_t){{1, 0, 1, 0, 6, true, false, 1, 1}, rows, cols, 1, false};
    k[1] = (kernel_t){{2, 0, 1, 0, 1, false, false, 0, 1}, rows, cols, 1, false};
    return 2;
  case OP_GEGLU: /* a, b = x.chunk(2, -1); gelu(a) * b: the same two kernels, gelu's first */
    k[0] = (kernel_t){profiles[OP_GELU], rows, cols, 1, false};
    k[1] = (kernel_t){{2, 0, 1, 0, 1, false, false, 0, 1}, rows, cols, 1, false};
    return 2;
  case OP_CROSS_ENTROPY: /* log-softmax writes log-probabilities; NLL gathers one per row
                          * (an int64 target: two 4-byte words) and takes the mean */
    k[0] = (kernel_t){{1, 0, 1, 0, 5, true, true, 1, 1}, rows, cols, 0, looped_softmax(op)};
    k[1] = (kernel_t){{1, 2, 0, 0, 2, true, false, 0, 1}, 1, rows, 1, false};
    return 2;
  case OP_ROPE: /* x * cos + cat(-x2, x1) * sin (rotate-half; Megatron's unfused
                 * apply_rotary_pos_emb): neg on the strided second half, cat, two muls
                 * and an add, each over whole rows; cos and sin read from memory */
    k[0] = (kernel_t){{0.5, 0, 0.5, 0, 1, false, false, 0, 1}, rows, cols, 1, false};
    k[1] = (kernel_t){{1, 0, 1, 0, 0, false, false, 0, 1}, rows, cols, 0, false};
    k[2] = (kernel_t){{2, 0, 1, 0, 1, false, false, 0, 1}, rows, cols, 0, false};
    k[3] = k[2];
    k[4] = k[2];
    return 5;
  case OP_SOFTMAX:
    k[0].looped_rows = looped_softmax(op);
    return 1;
  case OP_LAYERNORM:
  case OP_RMSNORM: /* a block per row, looping over it; re-reads hit L1 */
    k[0].looped_rows = true;
    return 1;
  case OP_CAST: /* mixed dtypes: TensorIterator's non-vectorised path, one element per
                 * load; but fp32 to bf16 / fp16 has its own kernel without the dynamic
                 * cast (bfloat16_copy_kernel_cuda, float16_copy_kernel_cuda through
                 * gpu_kernel_nocast: PyTorch aten/src/ATen/native/cuda/Copy.cu), whose
                 * loads vectorise */
    k[0].load_elems = op->dtype == CHIP_DTYPE_FP32 && chip_dtype_bytes(op->out_dtype) == 2 ? 0 : 1;
    return 1;
  case OP_REDUCE_SUM: /* over the outer dim: a thread accumulates 4 adjacent outputs [A] */
    k[0].load_elems = 4;
    return 1;
  default:
    return 1;
  }
}

/* Ops eager code calls through a Python function of torch.nn.functional
 * (F.layer_norm, F.rms_norm, F.silu, F.cross_entropy); F.gelu and torch.softmax
 * bind straight to C++, as x + y does. */
static bool functional_wrapper(op_kind_t kind) {
  return kind == OP_SWIGLU || kind == OP_GEGLU || kind == OP_LAYERNORM || kind == OP_RMSNORM ||
         kind == OP_CROSS_ENTROPY;
}

/* Seconds the busiest core needs to stream its reads with the bytes it keeps in
 * flight (Little's law: in flight / latency); 0 when not modelled. A row-wise
 * kernel gives a row to a block: ceil(rows / cores) rows on the busiest core;
 * an element-wise grid spreads evenly. */
static double mlp_time_s(const chip_cfg_t *chip, const kernel_t *k, double in_b, double e_in,
                         double streams) {
  const chip_vector_cfg_t *vec = &chip->vector;
  if (vec->bytes_in_flight <= 0 || vec->load_latency_s <= 0)
    return 0;
  double core_bytes = k->pf.row_wise && k->rows > 1 ? ceil(k->rows / vec->cores) * k->cols * in_b
                                                    : k->rows * k->cols * in_b / vec->cores;
  double in_flight = vec->bytes_in_flight * streams;
  if (k->looped_rows && vec->rowwise_bytes_in_flight > 0)
    in_flight = vec->rowwise_bytes_in_flight;
  else if (k->load_elems > 0 && vec->load_vector_bytes > 0)
    in_flight *= fmin(1.0, k->load_elems * e_in / vec->load_vector_bytes);
  return core_bytes * vec->load_latency_s / in_flight;
}

/* HBM (with L2) and Little's law together: near saturation latency rises, so a
 * kernel close to both limits runs slower than either alone. */
static double blend(double hbm, double mlp, double p) {
  if (mlp <= 0)
    return hbm;
  if (p <= 0 || hbm <= 0)
    return fmax(hbm, mlp);
  double big = fmax(hbm, mlp); /* scaled so that the powers stay finite */
  return big * pow(pow(hbm / big, p) + pow(mlp / big, p), 1.0 / p);
}

/* Adds one kernel's cost to out (cycles, bytes, busy cycles per pipe). */
static void kernel_cost(const chip_cfg_t *chip, const op_desc_t *op, const kernel_t *k,
                        op_result_t *out) {
  const chip_vector_cfg_t *vec = &chip->vector;
  const vec_profile_t *pf = &k->pf;
  double rows = k->rows, cols = k->cols;
  double elems = rows * cols;
  double e_in = chip_dtype_bytes(op->dtype), e_out = chip_dtype_bytes(op->out_dtype);
  double in_b = pf->in_elems * e_in + pf->in_fp32 * 4,
         out_b = pf->out_elems * e_out + pf->out_fp32 * 4;
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
   * together: what HBM and L2 deliver, slowed where the loads in flight run short */
  double core = mte2 + (double)waves * step + mte3;
  double streams = pf->in_elems + pf->in_fp32;
  double mlp = mlp_time_s(chip, k, in_b * passes, e_in, streams) * chip->freq_hz;
  double memory = mem_time_s(chip, hbm, gm) * chip->freq_hz;
  double stream = blend(memory, mlp, vec->mlp_blend_exponent);

  out->flops += elems * pf->instrs;
  out->hbm_bytes += hbm;
  out->cycles += fmax(core, stream);
  out->util[PIPE_MTE2] += (double)waves * mte2;
  out->util[PIPE_VECTOR] += (double)waves * compute;
  out->util[PIPE_MTE3] += (double)waves * mte3;
  out->util[PIPE_HBM] += stream;
  if (out->tiles == 0) { /* the first (largest) kernel's tiling */
    out->tile[0] = (int)tile;
    out->tiles = tiles;
    out->waves = waves;
    out->cores = active;
  }
}

void vector_op(const chip_cfg_t *chip, const op_desc_t *op, op_result_t *out) {
  kernel_t k[MAX_KERNELS];
  int n = op_kernels(op, k);
  memset(out, 0, sizeof *out);
  for (int i = 0; i < n; i++)
    kernel_cost(chip, op, &k[i], out);
  out->kernels = n;
  if (op->form == OP_FORM_UNFUSED)
    out->host_s = n * chip->vector.host_issue_s +
                  (functional_wrapper(op->kind) ? chip->vector.host_wrapper_s : 0);
}
