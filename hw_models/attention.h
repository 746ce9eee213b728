/* attention.h - fused attention forward and backward; see attention.c. */
#ifndef NPUSIM_ATTENTION_H
#define NPUSIM_ATTENTION_H

#include "op.h"

/* Fills out's shape-dependent part, as cube_matmul does (see cube.h). */
void attention_op(const chip_cfg_t *chip, const op_desc_t *op, op_result_t *out);

#endif
