/* cube.h - matmul on the cube cores; see cube.c for the model. */
#ifndef NPUSIM_CUBE_H
#define NPUSIM_CUBE_H

#include "op.h"

/* Fills out's shape-dependent part: cycles of the critical core (launch
 * excluded), per-pipe busy cycles in util[], FLOPs, HBM bytes, tile, waves.
 * op_model() (op_cost.c) turns cycles into time and busy cycles into fractions. */
void cube_matmul(const chip_cfg_t *chip, const op_desc_t *op, op_result_t *out);

/* The same with the plan (out->tile, out->stream_k) that cube_matmul chose
 * earlier, at another clock: a library picks its kernel by shape, not by the
 * clock the chip will hold, so throttling (op_cost.c) re-costs the plan it has
 * rather than searching again at every clock it tries. */
void cube_matmul_replan(const chip_cfg_t *chip, const op_desc_t *op, op_result_t *out);

#endif
