/* op_cost.c - an op's cost from the core models, and the memo cache; see op_cost.h.
 *
 * The core models give the critical core's cycles and each pipe's busy cycles.
 * op_model adds the launch overhead, applies the HBM floor (no op finishes
 * before its HBM traffic could, at bandwidth x efficiency), and names the pipe
 * that bounds the op: the one busy for the largest share of the time. An op
 * whose power (power.h) at the chip's clock passes chip.power.max_W is costed
 * again at the highest clock that keeps it within: its cycles stretch, its HBM
 * floor and launch overhead stay. A matmul's clock is searched with its plan
 * fixed, then its plan searched again at that clock, until the plan holds (a
 * plan search at each of the 30 clocks tried cost about 1 ms per op).
 *
 * The cache is an open-addressing table from op descriptors to costs. Results
 * live in blocks that never move, so the pointers handed out survive the
 * table's growth. */
#include "op_cost.h"

#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "cube.h"
#include "npu_int.h"
#include "power.h"
#include "vector.h"

#define BLOCK_RESULTS 256

typedef struct {
  bool used;
  op_desc_t op;
  op_result_t *result;
} entry_t;

typedef struct block {
  struct block *next;
  op_result_t results[BLOCK_RESULTS];
} block_t;

struct op_cache {
  const chip_cfg_t *chip;
  entry_t *slots;
  size_t cap, count, hits;
  block_t *blocks; /* newest first; the newest is filled up to count % BLOCK_RESULTS */
};

/* The op at the chip's clock (chip->freq_hz); replan: a matmul keeps the plan in
 * out (chosen at another clock, see cube_matmul_replan). */
static void model_at_clock(const chip_cfg_t *chip, const op_desc_t *op, bool replan,
                           op_result_t *out) {
  if (op->kind == OP_MATMUL && replan)
    cube_matmul_replan(chip, op, out);
  else if (op->kind == OP_MATMUL)
    cube_matmul(chip, op, out);
  else if (op_on_cube(op->kind))
    attention_op(chip, op, out);
  else
    vector_op(chip, op, out);
  double f = chip->freq_hz;
  double overhead_s = op_on_cube(op->kind) ? chip->cube.op_overhead_s : chip->vector.op_overhead_s;
  overhead_s *= out->kernels > 1 ? out->kernels : 1; /* each kernel ramps up and drains */
  double core_s = out->cycles / f, hbm_s = out->hbm_bytes / chip_hbm_effective_bw(chip);
  double busy_s = core_s > hbm_s ? core_s : hbm_s;
  out->time_s = out->device_s = overhead_s + busy_s;
  if (out->host_s > out->time_s) { /* the device waits for the host to issue the kernels */
    overhead_s = out->host_s - busy_s;
    out->time_s = out->host_s;
  }
  out->cycles = out->time_s * f;
  out->clock_hz = f;
  double memory_s = out->util[PIPE_HBM] / f; /* HBM and L2 together, from the core model */
  double launch_s = overhead_s + out->util[PIPE_LAUNCH] / f; /* + the model's own kernels' */
  for (int p = 0; p < PIPE_COUNT; p++)
    out->util[p] /= out->cycles; /* busy cycles -> fraction of the op */
  out->util[PIPE_HBM] = (memory_s > hbm_s ? memory_s : hbm_s) / out->time_s;
  out->util[PIPE_LAUNCH] = launch_s / out->time_s;
  out->bound = PIPE_LAUNCH;
  for (int p = 0; p < PIPE_COUNT; p++)
    if (out->util[p] > out->util[out->bound])
      out->bound = (pipe_t)p;
  out->tflops = out->flops / out->time_s / 1e12;
  out->hbm_GBps = out->hbm_bytes / out->time_s / 1e9;
}

/* Halvings of the clock interval when throttling: 2^-30 of the clock, far
 * below any difference a report shows; a fixed count keeps runs identical. */
#define THROTTLE_STEPS 30

/* Power rises with the clock (units as f^k, HBM bytes over a time that shrinks
 * with it), so the highest clock within max_W is found by bisection between the
 * lowest clock and the chip's, a matmul keeping the plan in out. Leaves out
 * costed at that clock and returns it. */
static double throttled_clock(const chip_cfg_t *chip, const op_desc_t *op, op_result_t *out) {
  chip_cfg_t slow = *chip;
  double lo = chip->freq_hz * POWER_MIN_CLOCK_FRACTION, hi = chip->freq_hz;
  for (int i = 0; i < THROTTLE_STEPS; i++) {
    slow.freq_hz = 0.5 * (lo + hi);
    model_at_clock(&slow, op, true, out);
    if (power_op_W(&slow, out) > chip->power.max_W)
      hi = slow.freq_hz;
    else
      lo = slow.freq_hz;
  }
  slow.freq_hz = lo;
  model_at_clock(&slow, op, true, out);
  return lo;
}

/* Rounds of choosing a throttled matmul's plan again at the clock the power
 * limit leaves it: the plan a search picks depends on the clock, and one chosen
 * at a clock the chip cannot hold (a what-if that doubles chip.freq_GHz) may be
 * slower at the clock it gets than the one a search there picks. The rounds stop
 * when the search keeps the plan, after one round in the shipped configs. */
#define REPLAN_ROUNDS 4

void op_model(const chip_cfg_t *chip, const op_desc_t *op, op_result_t *out) {
  model_at_clock(chip, op, false, out);
  if (!power_throttles(chip) || power_op_W(chip, out) <= chip->power.max_W)
    return;
  chip_cfg_t slow = *chip;
  slow.freq_hz = throttled_clock(chip, op, out);
  for (int round = 0; op->kind == OP_MATMUL && round < REPLAN_ROUNDS; round++) {
    op_result_t fresh;
    model_at_clock(&slow, op, false, &fresh);
    if (memcmp(fresh.tile, out->tile, sizeof fresh.tile) == 0 && fresh.stream_k == out->stream_k)
      break;
    *out = fresh;
    slow.freq_hz = throttled_clock(chip, op, out);
  }
}

op_cache_t *op_cache_new(const chip_cfg_t *chip) {
  op_cache_t *c = calloc(1, sizeof *c);
  if (!c)
    return NULL;
  c->chip = chip;
  c->cap = 64;
  c->slots = calloc(c->cap, sizeof *c->slots);
  if (!c->slots) {
    free(c);
    return NULL;
  }
  return c;
}

void op_cache_free(op_cache_t *c) {
  if (!c)
    return;
  while (c->blocks) {
    block_t *next = c->blocks->next;
    free(c->blocks);
    c->blocks = next;
  }
  free(c->slots);
  free(c);
}

/* Field by field: descriptors may carry padding. */
static uint64_t hash_op(const op_desc_t *op) {
  uint64_t h = NPU_HASH_SEED;
  uint64_t fields[11] = {(uint64_t)op->kind, (uint64_t)op->dtype, (uint64_t)op->out_dtype,
                         (uint64_t)op->dims[0], (uint64_t)op->dims[1], (uint64_t)op->dims[2],
                         (uint64_t)op->dims[3], (uint64_t)op->dims[4],
                         (uint64_t)(op->trans_a | op->trans_b << 1 | op->causal << 2 |
                                    op->latent_kv << 3 | (uint64_t)op->form << 4),
                         (uint64_t)op->window, (uint64_t)op->past};
  for (int i = 0; i < 11; i++)
    h = npu_hash_u64(h, fields[i]);
  return h;
}

static bool same_op(const op_desc_t *a, const op_desc_t *b) {
  return a->kind == b->kind && a->dtype == b->dtype && a->out_dtype == b->out_dtype &&
         memcmp(a->dims, b->dims, sizeof a->dims) == 0 && a->trans_a == b->trans_a &&
         a->trans_b == b->trans_b && a->causal == b->causal && a->window == b->window &&
         a->past == b->past &&
         a->latent_kv == b->latent_kv && a->form == b->form;
}

static entry_t *find(entry_t *slots, size_t cap, const op_desc_t *op) {
  size_t i = (size_t)hash_op(op) & (cap - 1);
  while (slots[i].used && !same_op(&slots[i].op, op))
    i = (i + 1) & (cap - 1);
  return &slots[i];
}

static void grow(op_cache_t *c) {
  size_t cap = c->cap * 2;
  entry_t *slots = calloc(cap, sizeof *slots);
  if (!slots)
    abort(); /* a few MB of op costs: nothing sane to do without them */
  for (size_t i = 0; i < c->cap; i++)
    if (c->slots[i].used)
      *find(slots, cap, &c->slots[i].op) = c->slots[i];
  free(c->slots);
  c->slots = slots;
  c->cap = cap;
}

const op_result_t *op_cost(op_cache_t *c, const op_desc_t *op) {
  entry_t *e = find(c->slots, c->cap, op);
  if (e->used) {
    c->hits++;
    return e->result;
  }
  if (2 * (c->count + 1) > c->cap) {
    grow(c);
    e = find(c->slots, c->cap, op);
  }
  if (c->count % BLOCK_RESULTS == 0) {
    block_t *b = malloc(sizeof *b);
    if (!b)
      abort();
    b->next = c->blocks;
    c->blocks = b;
  }
  e->used = true;
  e->op = *op;
  e->result = &c->blocks->results[c->count % BLOCK_RESULTS];
  op_model(c->chip, op, e->result);
  c->count++;
  return e->result;
}

size_t op_cache_misses(const op_cache_t *c) { return c->count; }
size_t op_cache_hits(const op_cache_t *c) { return c->hits; }
