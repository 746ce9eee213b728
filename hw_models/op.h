/* op.h - one operator a training step runs, and what the chip model says it costs.
 *
 * An op is a kind (matmul, attention, a vector op), a shape and a dtype. Its cost
 * comes from the core models: cube.c (matmul on cube cores), vector.c (element-
 * wise, row-wise and optimizer ops on vector cores), attention.c (fused
 * attention on both) - each with its tiling, its pipes and the memory it shares
 * (memory.c). This header holds the op, its checks and the shape of a cost
 * (op.c); op_cost.h dispatches an op to its core model and memoises the costs
 * (op_cost.c). Nothing here knows about SimGrid. */
#ifndef NPUSIM_OP_H
#define NPUSIM_OP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chip.h"
#include "npu_err.h"

typedef enum {
  OP_MATMUL,        /* C[M,N] = A[M,K] B[K,N], batch of them: dims M, N, K, batch */
  OP_ATTN_FWD,      /* fused attention forward: dims batch, heads, seq, head_dim (+kv heads) */
  OP_ATTN_BWD,      /* its backward */
  OP_ADD,           /* vector ops: dims rows, cols */
  OP_MUL,
  OP_GELU,
  OP_SWIGLU,        /* input rows x 2 cols, output rows x cols */
  OP_SOFTMAX,
  OP_LAYERNORM,
  OP_RMSNORM,
  OP_ROPE,
  OP_CROSS_ENTROPY, /* logits rows x vocab -> loss per row */
  OP_ADAM,          /* cols parameters (rows 1): fp32 master, moments and gradient */
  OP_CAST,          /* to out_dtype */
  OP_COPY,
  OP_REDUCE_SUM,    /* rows reduced to one row */
  OP_ATTN_DECODE,   /* one new query token per sequence over its cached keys and values (paged,
                     * split-KV): dims batch, heads, context, head_dim (+kv heads) */
  OP_GEGLU,         /* GeLU-gated: input rows x 2 cols, output rows x cols */
  OP_KIND_COUNT
} op_kind_t;

extern const char *const op_kind_names[OP_KIND_COUNT];

/* Which kernels a vector op is: frameworks differ (docs/chip-model.md, "Vector ops"). */
typedef enum {
  OP_FORM_FUSED,   /* one hand-written kernel per op (Liger, Megatron/MindSpeed fused, Ascend C),
                    * rows held on chip, full-width loads, launched back to back */
  OP_FORM_UNFUSED, /* the framework's stock kernels as eager PyTorch runs them: swiglu = silu +
                    * mul over strided halves, cross_entropy = log-softmax + NLL/mean, row-wise
                    * kernels that loop over a row, element-wide loads where dtypes or strides
                    * differ, each kernel issued by the host */
  OP_FORM_COUNT
} op_form_t;

extern const char *const op_form_names[OP_FORM_COUNT];

typedef struct {
  op_kind_t kind;
  chip_dtype_t dtype;     /* compute/storage type of the inputs */
  chip_dtype_t out_dtype; /* CAST's target; otherwise dtype */
  int64_t dims[5];        /* see op_kind_t; unused dims are 0 */
  bool trans_a, trans_b;  /* matmul operand layouts */
  bool causal;            /* attention mask */
  int64_t window;         /* causal attention: each query sees the `window` keys ending at its
                           * own position (sliding-window attention); 0: all before it */
  int64_t past;           /* attention_fwd: keys cached before the first query (a prefill
                           * chunk after earlier ones, a prefix-cache hit): the queries are the
                           * last `seq` of past + seq keys, a causal mask aligned at the end */
  bool latent_kv;         /* attention_decode: one cached latent per token serves as key and
                           * value (MLA, absorbed), not two tensors */
  op_form_t form;         /* vector ops: fused (the default) or the framework's unfused kernels */
} op_desc_t;

/* The pipes a cost can be bound by. */
typedef enum {
  PIPE_MTE2,    /* GM -> L1/UB loads, per-core port */
  PIPE_MTE1,    /* L1 -> L0A/L0B */
  PIPE_CUBE,
  PIPE_FIXPIPE, /* L0C -> GM */
  PIPE_VECTOR,
  PIPE_MTE3,    /* UB -> GM */
  PIPE_HBM,     /* the chip's shared memory bandwidth */
  PIPE_LAUNCH,  /* launch and scalar overhead */
  PIPE_COUNT
} pipe_t;

extern const char *const pipe_names[PIPE_COUNT];

typedef struct {
  double time_s;
  double cycles;             /* core clock cycles, launch overhead included */
  double clock_hz;           /* the clock it ran at: the chip's, lower if it throttled at
                              * chip.power.max_W (power.h) */
  double flops;              /* useful FLOPs of the op */
  double hbm_bytes;          /* bytes moved to or from HBM */
  double tflops;             /* achieved, flops / time / 1e12 */
  double hbm_GBps;           /* achieved HBM bandwidth */
  double util[PIPE_COUNT];   /* busy fraction of each pipe over the op's time */
  pipe_t bound;              /* the pipe that sets the time */
  int tile[3];               /* matmul: m, n, k of a core's tile; vector: elements, 0, 0 */
  int64_t tiles;             /* tiles over all cores */
  int64_t waves;             /* rounds of tiles over the cores (a partial last one counts) */
  int cores;                 /* cores the op occupies */
  bool stream_k;             /* matmul: k-steps dealt over the cores (else whole tiles) */
  int kernels;               /* kernels the op launches (0 counts as 1); each pays the launch
                              * overhead (chip.*.op_overhead_us) */
  double host_s;             /* the host's time to issue them (unfused form); a faster device
                              * waits for it */
  double device_s;           /* the kernels' own time, host_s aside (time_s when the device
                              * is the slower); for steps whose host time is counted apart */
} op_result_t;

/* Parses an op kind name ("matmul", "softmax"); 0 on success, -1 if unknown. */
int op_kind_parse(const char *name, op_kind_t *out);

/* Parses a form name ("fused", "unfused"); 0 on success, -1 if unknown. */
int op_form_parse(const char *name, op_form_t *out);

/* The output dtype an op of kind on dtype has unless told otherwise: a cast goes
 * to fp32, or from fp32 to bf16; every other op keeps its input's. */
chip_dtype_t op_default_out_dtype(op_kind_t kind, chip_dtype_t dtype);

/* Whether the kind runs on the cube cores (matmul, attention). */
bool op_on_cube(op_kind_t kind);

/* Parses a shape into op->dims for op->kind: up to 5 integers separated by sep
 * (',' on the command line, 'x' in measurement tables); vector ops take
 * [rows,]cols. Returns 0, or -1 with "shape: expected ..., found ..." in err. */
int op_shape_parse(const char *text, char sep, op_desc_t *op, npu_err_t *err);

/* Checks a descriptor: positive dims where the kind needs them, byte counts that
 * fit in 64 bits, a dtype the chip computes. Returns 0, or -1 with "FIELD:
 * expected ..., found ..." in err, FIELD being shape or dtype. */
int op_check(const chip_cfg_t *chip, const op_desc_t *op, npu_err_t *err);

#endif
