/* op_cost.h - what an op costs on a chip: op_model asks the op's core model
 * (cube, vector, attention) and adds what every op pays; the cache memoises it,
 * so identical ops (kind, shape, dtype, flags) on one chip are costed once. The
 * cache belongs to its caller; no global state. */
#ifndef NPUSIM_OP_COST_H
#define NPUSIM_OP_COST_H

#include "op.h"

/* Costs an op on the chip, without memoisation: the core model's cycles plus
 * the launch overhead, floored by the HBM traffic, with the bounding pipe; at
 * the chip's clock, or lower where its power would pass chip.power.max_W
 * (power.h). op must have passed op_check. */
void op_model(const chip_cfg_t *chip, const op_desc_t *op, op_result_t *out);

typedef struct op_cache op_cache_t;

/* A cache for costs on chip (which must outlive it). NULL if out of memory. */
op_cache_t *op_cache_new(const chip_cfg_t *chip);
void op_cache_free(op_cache_t *cache);

/* The cost of op (which passed op_check), computed on the first request. The
 * result stays valid until the cache is freed. */
const op_result_t *op_cost(op_cache_t *cache, const op_desc_t *op);

/* Distinct ops costed, and requests answered from the cache. */
size_t op_cache_misses(const op_cache_t *cache);
size_t op_cache_hits(const op_cache_t *cache);

#endif
