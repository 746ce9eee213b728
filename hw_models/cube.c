/* cube.c - matmul on cube cores: tiling for the on-core buffers and the pipes a
 * tile streams through.
 *
 * Each core computes output tiles of m x n (the L0C tile) one after another,
 * looping over K in steps of k. Per k-step, MTE2 brings the A (m x k) and B
 * (k x n) blocks from global memory into L1, MTE1 moves them into L0A/L0B, the
 * cube multiplies them into L0C; after the last k-step FixPipe writes the tile
 * back. The pipes overlap (double buffering), so a k-step costs its slowest pipe
 * plus a fixed handshake (chip.cube.step_overhead_cycles); the first step's
 * loads are the fill and the last FixPipe the drain. FixPipe overlaps the next
 * tile when L0C holds two tiles. Tiles go to cores in waves; the last wave may
 * be partial and costs a full one. With chip.cube.stream_k the library may
 * instead deal the tiles' k-steps out evenly over the cores (stream-K), the
 * cores sharing a tile adding their partial sums through L2.
 *
 * Tiles are chosen as a good kernel library would: every m, n, k that is a
 * multiple of the fractal and fits L0A/L0B (double-buffered), L0C and L1
 * (double-buffered A and B blocks) is costed, and the fastest kept (larger tiles
 * win ties: more reuse). Global-memory reads go through L2: when the smaller
 * operand fits in half of L2 each operand leaves HBM once; otherwise each wave
 * re-reads the rows and columns its block of tiles needs.
 *
 * Not modelled: bank conflicts, the ND/NZ format conversion, split-K as a kernel
 * of its own (stream-K covers its case where the chip has it), transposed loads
 * costing more than plain ones (MTE handles layouts at line rate; measured H100
 * layouts differ by up to 14%). */
#include <math.h>
#include <string.h>

#include "cube.h"
#include "memory.h"
#include "npu_int.h"

typedef struct {
  int m, n, k;            /* tile */
  bool stream_k;          /* k-steps spread evenly over the cores (else one tile per core) */
  double pipe[PIPE_COUNT];/* cycles per tile stream on the critical core, per pipe */
  double total_cycles;    /* whole op on the critical core, launch excluded */
  double hbm_bytes, gm_bytes;
  int64_t tiles, waves;
  int active;
} plan_t;

/* Global-memory traffic of the whole op for a tile shape. */
static void traffic(const chip_cfg_t *chip, const op_desc_t *op, const plan_t *p, int e,
                    int e_out, double *hbm, double *gm) {
  double M = (double)op->dims[0], N = (double)op->dims[1], K = (double)op->dims[2];
  double batch = (double)(op->dims[3] > 0 ? op->dims[3] : 1);
  double tiles_m = (double)npu_ceil_div(op->dims[0], p->m);
  double tiles_n = (double)npu_ceil_div(op->dims[1], p->n);
  double a = M * K * e * batch, b = K * N * e * batch, c = M * N * e_out * batch;
  *gm = a * tiles_n + b * tiles_m + c; /* every tile reads its A rows and B columns */
  double smaller = a < b ? a : b;
  if (smaller <= chip->l2.size_bytes / 2.0) {
    *hbm = a + b + c; /* one operand stays resident in L2, the other streams once */
    return;
  }
  /* Each wave works on a block of wr x wc tiles, near square in elements. */
  int cores = p->active;
  double wr = round(sqrt(cores * (double)p->n / p->m));
  if (wr < 1)
    wr = 1;
  if (wr > tiles_m)
    wr = tiles_m;
  double wc = ceil(cores / wr);
  if (wc > tiles_n)
    wc = tiles_n;
  *hbm = a * ceil(tiles_n / wc) + b * ceil(tiles_m / wr) + c;
}

/* Costs one tile shape: the critical core's cycles and its pipes' busy cycles.
 * A k-step costs its slowest pipe, each core's MTE2 limited by its own port;
 * the cores together are limited by what HBM and L2 deliver (memory.h).
 *
 * Data-parallel: each core takes whole tiles, a wave of them at a time; the
 * last wave may be partial and costs a full one. Stream-K: the tiles' k-steps
 * are dealt out evenly, each core taking ceil(tiles x k-steps / cores) of them
 * in a row; a tile whose k-steps two cores share is finished by one of them,
 * which reads the other's fp32 partial tile back through L2 (the fix-up). */
static void cost_plan(const chip_cfg_t *chip, const op_desc_t *op, plan_t *p) {
  const chip_cube_cfg_t *cube = &chip->cube;
  int e = chip_dtype_bytes(op->dtype);
  int64_t batch = op->dims[3] > 0 ? op->dims[3] : 1;
  int64_t ksteps = npu_ceil_div(op->dims[2], p->k);
  p->tiles = batch * npu_ceil_div(op->dims[0], p->m) * npu_ceil_div(op->dims[1], p->n);
  p->active = p->tiles < cube->cores ? (int)p->tiles : cube->cores;
  p->waves = npu_ceil_div(p->tiles, cube->cores);
  double a_bytes = (double)p->m * p->k * e, b_bytes = (double)p->k * p->n * e;
  double mte2 = (a_bytes + b_bytes) / cube->mte2_bytes_per_cycle;
  double mte1 = a_bytes / cube->mte1_l0a_bytes_per_cycle + b_bytes / cube->mte1_l0b_bytes_per_cycle;
  double compute = (double)p->m * p->n * p->k / cube->macs_per_cycle[op->dtype];
  double fix = (double)p->m * p->n * e / cube->fixpipe_bytes_per_cycle;
  double step = fmax(fmax(mte2, mte1), compute) + cube->step_overhead_cycles;
  bool overlap_fix = 2.0 * p->m * p->n * 4 <= (double)cube->l0c_bytes;
  double tile_fix = overlap_fix ? 0 : fix; /* write-back a tile adds after its last k-step */
  double steps_per_core = (double)p->waves * ksteps, tiles_per_core = (double)p->waves;
  double fixup = 0, fixup_bytes = 0;
  if (p->stream_k) {
    p->active = (int)fmin((double)p->tiles * ksteps, cube->cores);
    steps_per_core = (double)npu_ceil_div(p->tiles * ksteps, p->active);
    tiles_per_core = ceil(steps_per_core / ksteps);
    double partial = (double)p->m * p->n * 4; /* fp32 accumulators */
    if (p->tiles % p->active != 0) { /* else every core gets whole tiles, as data-parallel */
      fixup = partial / cube->fixpipe_bytes_per_cycle + partial / cube->mte2_bytes_per_cycle;
      fixup_bytes = 2.0 * partial * p->active;
    }
  }
  traffic(chip, op, p, e, e, &p->hbm_bytes, &p->gm_bytes);
  p->gm_bytes += fixup_bytes; /* partial tiles stay in L2 */
  /* fill: the first blocks' loads; drain: the last tile's write-back */
  double core = mte2 + mte1 + steps_per_core * step + tiles_per_core * tile_fix + fixup +
                (overlap_fix ? fix : 0);
  double memory = mem_time_s(chip, p->hbm_bytes, p->gm_bytes) * chip->freq_hz;
  p->total_cycles = fmax(core, memory);
  if (p->stream_k) /* report the cores' rounds of whole tiles */
    p->waves = (int64_t)tiles_per_core;
  p->pipe[PIPE_MTE2] = steps_per_core * mte2;
  p->pipe[PIPE_MTE1] = steps_per_core * mte1;
  p->pipe[PIPE_CUBE] = steps_per_core * compute;
  p->pipe[PIPE_FIXPIPE] = tiles_per_core * fix + fixup;
  p->pipe[PIPE_HBM] = memory;
}

/* Whether a tile fits the buffers: L0A/L0B and the L1 blocks double-buffered. */
static bool fits(const chip_cube_cfg_t *cube, int m, int n, int k, int e) {
  return 2.0 * m * k * e <= (double)cube->l0a_bytes && 2.0 * k * n * e <= (double)cube->l0b_bytes &&
         (double)m * n * 4 <= (double)cube->l0c_bytes &&
         2.0 * (m + n) * k * e <= (double)cube->l1_bytes;
}

/* Candidate sizes along one dimension: fractal multiples doubling up to the
 * buffer limit, none much larger than the dimension itself. */
static int candidates(int fractal, int64_t dim, int out[12]) {
  int n = 0;
  for (int s = fractal; s <= 1024 && n < 12; s *= 2) {
    out[n++] = s;
    if (s >= dim)
      break;
  }
  return n;
}

/* The op's result from its plan. */
static void fill_result(const op_desc_t *op, const plan_t *best, op_result_t *out) {
  memset(out, 0, sizeof *out);
  double m = (double)op->dims[0], n = (double)op->dims[1], k = (double)op->dims[2];
  out->flops = 2.0 * m * n * k * (double)(op->dims[3] > 0 ? op->dims[3] : 1);
  out->hbm_bytes = best->hbm_bytes;
  out->cycles = best->total_cycles;
  for (int p = 0; p < PIPE_COUNT; p++)
    out->util[p] = best->pipe[p];
  out->tile[0] = best->m;
  out->tile[1] = best->n;
  out->tile[2] = best->k;
  out->tiles = best->tiles;
  out->waves = best->waves;
  out->cores = best->active;
  out->stream_k = best->stream_k;
}

void cube_matmul(const chip_cfg_t *chip, const op_desc_t *op, op_result_t *out) {
  const chip_cube_cfg_t *cube = &chip->cube;
  const int *fr = op->dtype == CHIP_DTYPE_INT8 ? cube->fractal_mkn_int8 : cube->fractal_mkn;
  int e = chip_dtype_bytes(op->dtype);
  int ms[12], ns[12], ks[12];
  int nm = candidates(fr[0], op->dims[0], ms), nn = candidates(fr[2], op->dims[1], ns);
  int nk = candidates(fr[1], op->dims[2], ks);
  plan_t best = {0};
  bool have = false;
  for (int i = 0; i < nm; i++)
    for (int j = 0; j < nn; j++)
      for (int l = 0; l < nk; l++) {
        if (!fits(cube, ms[i], ns[j], ks[l], e))
          continue;
        for (int sk = 0; sk <= (cube->stream_k ? 1 : 0); sk++) {
          plan_t p = {.m = ms[i], .n = ns[j], .k = ks[l], .stream_k = sk};
          cost_plan(chip, op, &p);
          double area = (double)p.m * p.n * p.k, best_area = (double)best.m * best.n * best.k;
          if (!have || p.total_cycles < best.total_cycles * (1 - 1e-12) ||
              (p.total_cycles <= best.total_cycles * (1 + 1e-12) && area > best_area)) {
            best = p;
            have = true;
          }
        }
      }
  if (!have) { /* buffers too small for any tile: one fractal, unbuffered */
    best = (plan_t){.m = fr[0], .n = fr[2], .k = fr[1]};
    cost_plan(chip, op, &best);
  }
  fill_result(op, &best, out);
}

void cube_matmul_replan(const chip_cfg_t *chip, const op_desc_t *op, op_result_t *out) {
  plan_t p = {.m = out->tile[0], .n = out->tile[1], .k = out->tile[2], .stream_k = out->stream_k};
  cost_plan(chip, op, &p);
  fill_result(op, &p, out);
}
