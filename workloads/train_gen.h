/* train_gen.h - a training step as rank programs: a transformer and its parallel
 * plan turned into the ops every rank runs, Megatron-style.
 *
 * Ranks are laid out innermost first in parallel.order (Megatron: tp, cp, dp,
 * pp); the ranks of one pipeline stage at one context-parallel position run
 * one shared program, so memory grows with pp x cp (and the micro-batches and
 * layers of a stage), not with the ranks. Per layer and
 * micro-batch: norms, QKV (or latent attention's projections), rotary,
 * attention (fused or not), output projection, MLP or experts, residuals,
 * with their exact per-rank shapes; multi-token-prediction modules after the
 * last stage's head;
 * tensor parallelism adds allreduces, or allgathers and reduce-scatters with
 * sequence parallelism, where Megatron puts them (a column-parallel linear's
 * backward gathers its input again and reduces its input gradient on the TP
 * stream, overlapping its two matmuls; training.overlap_tp_comm fuses the
 * forward's with the matmuls in chunks); context parallelism splits
 * the sequence and passes key/value blocks around its ring (or Ulysses'
 * all-to-alls, or an all-gather); expert parallelism adds the all-to-all
 * dispatch and combine, the experts split over TP or folded across it, each
 * rank taking the busiest one's tokens; pipeline stages exchange
 * activations and gradients in 1F1B or Megatron's interleaved order
 * (pipeline.c), a forward and a backward merged layer by layer with
 * training.overlap_moe_a2a;
 * recomputation repeats the forward (full) or the attention core (selective)
 * before the backward; gradients are reduced over data parallelism in buckets
 * during the last micro-batch's backward (or after it), then the optimizer
 * runs on its shard (ZeRO) and parameters are gathered back.
 *
 * Nothing here knows about the chip or SimGrid: ops are named through the
 * trace vocabulary and costed by whoever replays the programs. What each op and
 * program is for travels beside the trace as typed data (train_program_t), so a
 * report never reads it back from stream, communicator or tag names. */
#ifndef NPUSIM_TRAIN_GEN_H
#define NPUSIM_TRAIN_GEN_H

#include "npu_err.h"
#include "trace.h"
#include "workload.h"

/* Memory one rank of a pipeline stage holds, bytes. */
typedef struct {
  double weights;     /* parameters in the training precision */
  double gradients;   /* gradient buffers */
  double optimizer;   /* fp32 master weights and Adam moments */
  double activations; /* kept for the backward, micro-batches in flight included */
  double temporary;   /* workspace: the largest logits/attention buffers */
  double total;
} train_memory_t;

/* The part of the step an op is, as `npusim train`'s breakdown counts it. */
typedef enum {
  TRAIN_PART_COMPUTE,   /* forward, backward and recompute */
  TRAIN_PART_TP,        /* tensor-parallel collectives */
  TRAIN_PART_DP,        /* gradient reductions, parameter gathers, tied embeddings */
  TRAIN_PART_PP,        /* pipeline sends and receives */
  TRAIN_PART_EP,        /* expert all-to-alls */
  TRAIN_PART_CP,        /* the context-parallel ring's key/value blocks */
  TRAIN_PART_OPTIMIZER, /* the optimizer step on this rank's shard */
  TRAIN_PART_COUNT,
  TRAIN_PART_NONE = TRAIN_PART_COUNT /* joins: no time of their own */
} train_part_t;

/* The pass of the step an op belongs to. */
typedef enum { TRAIN_PASS_NONE, TRAIN_PASS_FWD, TRAIN_PASS_BWD, TRAIN_PASS_OPT } train_pass_t;

extern const char *const train_pass_names[TRAIN_PASS_OPT + 1];

/* Where in the step an op is, for timelines: its transformer layer (0-based,
 * over the whole model) and micro-batch, -1 where it has none. */
typedef struct {
  int layer;
  int microbatch;
  train_pass_t pass;
} train_where_t;

/* What the generator knows of one program of the trace it built. */
typedef struct {
  int stage;            /* the pipeline stage its ranks are */
  int cp_pos;           /* their position in the context-parallel ring */
  train_part_t *parts;  /* per op of the program */
  train_where_t *where; /* per op of the program */
} train_program_t;

typedef struct {
  long world;                 /* NPUs */
  long microbatches;          /* per pipeline per step */
  double tokens;              /* tokens per step */
  double model_flops;         /* per step, no recompute (MFU numerator) */
  double hw_flops;            /* per step, with recompute */
  train_memory_t *memory;     /* per pipeline stage */
  int stages;
  train_program_t *programs;  /* per program of the trace, in its order */
  int nprograms;
} train_info_t;

/* A timeline name for op i of program pi of the generated trace:
 * "mb3 L12 fwd attention_fwd", "mb7 bwd dp reducescatter", "opt adam". */
void train_op_name(const train_info_t *info, const trace_t *t, const trace_vocab_t *vocab,
                   int pi, int i, char *buf, size_t len);

/* What the generator cannot build from this workload, as "KEY: expected ...,
 * found ..." (no training section, latent attention), or NULL: commands refuse such a workload
 * before generating. */
const char *train_refusal(const workload_cfg_t *w);

/* Builds the programs of one training step. ranks_per_node places the ranks
 * (written into the trace). Every compute op, collective and data type the
 * generator emits must be in vocab (an internal error otherwise). Returns 0,
 * or -1 with a reason in err. */
int train_generate(const workload_cfg_t *w, const trace_vocab_t *vocab, int ranks_per_node,
                   trace_t *out, train_info_t *info, npu_err_t *err);

void train_info_free(train_info_t *info);

#endif
