/* vector.h - vector-core ops; see vector.c for the model. */
#ifndef NPUSIM_VECTOR_H
#define NPUSIM_VECTOR_H

#include "op.h"

/* Fills out's shape-dependent part, as cube_matmul does (see cube.h). */
void vector_op(const chip_cfg_t *chip, const op_desc_t *op, op_result_t *out);

#endif
