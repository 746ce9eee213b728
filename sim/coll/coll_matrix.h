/* coll_matrix.h - what `npusim coll` runs: one collective on a number of
 * ranks over a sweep of sizes, as a plain struct, and the ways it is filled:
 * the size list from "MIN:MAX[:FACTOR]", the sizes nccl-tests would run
 * instead, the byte matrix of alltoallv from its JSON file. No command-line
 * type, no run (coll_run.h) and no printing (coll_report.h) here. */
#ifndef NPUSIM_COLL_MATRIX_H
#define NPUSIM_COLL_MATRIX_H

#include <stdbool.h>

#include "chip.h"
#include "coll.h"
#include "npu_err.h"

#define COLL_MATRIX_MAX_SIZES 64

/* The sizes of one collective to run, one after another. */
typedef struct {
  coll_op_t op;
  int ranks, ranks_per_node, root; /* ranks_per_node 0: all of node.npus */
  chip_dtype_t dtype;
  double sizes[COLL_MATRIX_MAX_SIZES]; /* bytes */
  int nsizes;
  double factor;     /* each size is the one before times it */
  double *alltoallv; /* ranks x ranks bytes, row-major; NULL but for alltoallv */
} coll_matrix_t;

/* nccl-tests' name of each chip_dtype_t (src/common.cu test_typenames). */
extern const char *const coll_nccl_type_names[CHIP_DTYPE_COUNT];

/* Whether an nccl-tests row's size is all ranks' slices of count elements. */
bool coll_nccl_sliced(coll_op_t op);

/* Fills m's sizes and factor from "SIZE" or "MIN:MAX[:FACTOR]" (K, M, G, T
 * suffixes, powers of 1024; FACTOR 2 if left out). Returns 0, or -1 with
 * "--sizes: expected ..." in err. */
int coll_matrix_sizes(coll_matrix_t *m, const char *text, npu_err_t *err);

/* Rounds m's sizes to the ones nccl-tests runs for them (whole elements, and
 * whole slices per rank where the size is all ranks' slices); alltoallv's
 * size is kept. Returns 0, or -1 with "--sizes: ..." in err for a size of no
 * element. */
int coll_matrix_nccl_sizes(coll_matrix_t *m, npu_err_t *err);

/* Reads alltoallv's byte matrix from path (a JSON array of m->ranks arrays of
 * m->ranks byte counts) into m->alltoallv, and makes its one size the mean
 * bytes a rank sends. Returns 0, or -1 with "PATH: ..." in err. The caller
 * frees m->alltoallv, set or not. */
int coll_matrix_read_alltoallv(coll_matrix_t *m, const char *path, npu_err_t *err);

#endif
