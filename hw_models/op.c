/* op.c - op kinds and pipe names, parsing a shape, checking a descriptor; see op.h.
 * The cost of a checked op comes from op_cost.c. */
#include "op.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const op_kind_names[OP_KIND_COUNT] = {
    "matmul", "attention_fwd", "attention_bwd", "add", "mul", "gelu", "swiglu", "softmax",
    "layernorm", "rmsnorm", "rope", "cross_entropy", "adam", "cast", "copy", "reduce_sum",
    "attention_decode", "geglu"};

const char *const op_form_names[OP_FORM_COUNT] = {"fused", "unfused"};

const char *const pipe_names[PIPE_COUNT] = {"mte2", "mte1", "cube", "fixpipe",
                                            "vector", "mte3", "hbm", "launch"};

int op_kind_parse(const char *name, op_kind_t *out) {
  for (int i = 0; i < OP_KIND_COUNT; i++)
    if (strcmp(name, op_kind_names[i]) == 0) {
      *out = (op_kind_t)i;
      return 0;
    }
  return -1;
}

int op_form_parse(const char *name, op_form_t *out) {
  for (int i = 0; i < OP_FORM_COUNT; i++)
    if (strcmp(name, op_form_names[i]) == 0) {
      *out = (op_form_t)i;
      return 0;
    }
  return -1;
}

chip_dtype_t op_default_out_dtype(op_kind_t kind, chip_dtype_t dtype) {
  if (kind != OP_CAST)
    return dtype;
  return dtype == CHIP_DTYPE_FP32 ? CHIP_DTYPE_BF16 : CHIP_DTYPE_FP32;
}

bool op_on_cube(op_kind_t k) {
  return k == OP_MATMUL || k == OP_ATTN_FWD || k == OP_ATTN_BWD || k == OP_ATTN_DECODE;
}

int op_shape_parse(const char *text, char sep, op_desc_t *op, npu_err_t *err) {
  int64_t v[5] = {0};
  int n = 0;
  const char *p = text;
  while (*p) {
    char *end;
    errno = 0;
    long long x = strtoll(p, &end, 10);
    if (end == p || errno || n == 5 || (*end && *end != sep))
      return npu_err_set(err, "shape: expected up to 5 integers separated by '%c', found \"%.60s\"", sep,
                      text), -1;
    v[n++] = x;
    p = *end ? end + 1 : end;
  }
  if (n == 0)
    return npu_err_set(err, "shape: expected up to 5 integers separated by '%c', found \"\"",
                    sep), -1;
  if (op_on_cube(op->kind)) {
    memcpy(op->dims, v, sizeof v);
    return 0;
  }
  if (n > 2) /* vector ops: [rows,]cols */
    return npu_err_set(err, "shape: expected [rows%c]cols for %s, found %d sizes", sep,
                    op_kind_names[op->kind], n), -1;
  op->dims[0] = n == 1 ? 1 : v[0];
  op->dims[1] = n == 1 ? v[0] : v[1];
  return 0;
}

/* Dims each kind needs (positive) and how many it may have. */
static int needed_dims(op_kind_t k) {
  return k == OP_MATMUL ? 3 : op_on_cube(k) ? 4 : 1;
}

int op_check(const chip_cfg_t *chip, const op_desc_t *op, npu_err_t *err) {
  static const char *const shapes[] = {"M,N,K[,batch]", "batch,heads,seq,head_dim[,kv_heads]",
                                       "[rows,]cols"};
  int need = needed_dims(op->kind);
  const char *shape = op->kind == OP_MATMUL ? shapes[0] : op_on_cube(op->kind) ? shapes[1] : shapes[2];
  int first = op_on_cube(op->kind) ? 0 : 1; /* vector ops: cols (dims[1]) is the one needed */
  for (int i = first; i < first + need; i++)
    if (op->dims[i] <= 0)
      return npu_err_set(err, "shape: expected %s with every size >= 1 for %s, found %lld "
                      "at position %d", shape, op_kind_names[op->kind], (long long)op->dims[i],
                      i + 1 - first), -1;
  for (int i = 0; i < 5; i++)
    if (op->dims[i] < 0)
      return npu_err_set(err, "shape: expected sizes >= 1, found %lld", (long long)op->dims[i]), -1;
  /* every operand's bytes must fit 64 bits: check the largest products */
  uint64_t bytes = (uint64_t)chip_dtype_bytes(op->dtype) * 4, prod = 1;
  for (int i = 0; i < 5; i++)
    if (op->dims[i] > 0 && __builtin_mul_overflow(prod, (uint64_t)op->dims[i], &prod))
      return npu_err_set(err, "shape: expected sizes whose byte counts fit in 64 bits, "
                      "found a product over 2^64"), -1;
  if (__builtin_mul_overflow(prod, bytes, &prod))
    return npu_err_set(err, "shape: expected sizes whose byte counts fit in 64 bits, "
                    "found a product over 2^64"), -1;
  if (op_on_cube(op->kind) && chip->cube.macs_per_cycle[op->dtype] <= 0)
    return npu_err_set(err, "dtype: expected a type the cube of %s computes, found %s "
                    "(chip.cube.%s_macs_per_cycle = 0)", chip->name, chip_dtype_name(op->dtype),
                    chip_dtype_name(op->dtype)), -1;
  if (op_on_cube(op->kind) && op->dims[4] > 0 && op->dims[1] % op->dims[4])
    return npu_err_set(err, "shape: expected kv_heads dividing heads (%lld), found %lld",
                    (long long)op->dims[1], (long long)op->dims[4]), -1;
  return 0;
}
