/* serve_cost.h - what one serving iteration costs on one instance: the model's
 * layers at the batch's shape, costed by the chip model (hw_models/op_cost.h)
 * and the collectives' analytic engine (sim/coll/), and the memory an instance
 * needs (weights, activations, KV cache).
 *
 * An instance is tp x pp x dp NPUs (serve_cfg.h). Each of its dp attention
 * groups (tp NPUs) runs its own batch: norms, projections, attention over its
 * paged KV cache (decode: attention_decode; prefill chunks: causal fused
 * attention of the chunk against what came before), the TP all-reduces, and a
 * dense MLP; a MoE layer gathers the tokens of all groups: router, all-to-all
 * dispatch over ep ranks, the experts' grouped matmuls (balanced routing), the
 * all-to-all combine. The groups step in lockstep, so an iteration's layer
 * costs its slowest group plus the MoE part. The first stage adds the
 * embedding, the last the LM head and sampling (with the TP gather of the
 * logits); pipeline stages pass activations point to point.
 *
 * Every cost is memoised: matmul, norm and collective parts by token count,
 * attention by (sequences, mean context) and by (chunk, context before) in
 * 16-token steps, the MoE part by the instance's token count. A run of 10^5
 * requests then costs few distinct shapes.
 *
 * Serving engines' own TP all-reduce (serving.allreduce engine: vLLM's one-shot
 * and two-shot kernels, sim/coll/coll_select.c), a skewed routing
 * (serving.moe.routing zipf or measured: the busiest EP rank's tokens set the
 * expert matmuls and the dispatch/combine bytes) and the dispatch kernels' measured rate
 * (serving.moe.dispatch_*_GBps) are options; by default the library runs the
 * all-reduce, routing is even and all-to-alls move at the links' rate.
 *
 * Speculative decoding (serving.speculative): a decode runs k + 1 tokens (its
 * attention with k + 1 queries per sequence over one read of its cache, the
 * matmuls and the LM head over every token), and the last stage adds the
 * drafting: k MTP modules one after another, or k draft-model steps costed as
 * a share of the target's one-token step. CUDA-graph padding
 * (cuda_graph_max_batch): a decode-only group's tokens round up to the next
 * captured size for everything but the attention kernel.
 *
 * Not modelled: redundant experts placed by a balancer (EPLB), tree drafting, the host's
 * own time beyond serving.scheduler.iteration_overhead_us. */
#ifndef NPUSIM_SERVE_COST_H
#define NPUSIM_SERVE_COST_H

#include "npu_err.h"
#include "system.h"
#include "workload.h"
#include "op_cost.h"
#include "topo.h"

/* Where an iteration's time goes. */
typedef enum {
  SERVE_PART_ATTENTION, /* attention kernels over the KV cache */
  SERVE_PART_MATMUL,    /* projections, MLP, experts, LM head */
  SERVE_PART_COMM,      /* TP, EP and PP communication */
  SERVE_PART_OTHER,     /* norms, rotary, activations, sampling, host overhead */
  SERVE_PART_COUNT
} serve_part_t;

extern const char *const serve_part_names[SERVE_PART_COUNT];

typedef struct {
  double s[SERVE_PART_COUNT];
  double J; /* energy above idle the instance's NPUs and links spend on it (power.h) */
} serve_parts_t;

/* One attention group's work in an iteration. */
typedef struct {
  int decodes;       /* sequences generating one token */
  double decode_ctx; /* their context tokens, summed (the new token's included) */
  int prefills;      /* sequences with a prefill chunk */
  const int *chunk;  /* per prefill: its tokens in this iteration */
  const int *past;   /* per prefill: its tokens already in the cache */
  int samples;       /* sequences that sample a token at the end */
  int verify;        /* tokens each decode runs (k + 1 with speculative decoding); 0 or 1: one */
} serve_group_batch_t;

/* Memory of one NPU of the instance, bytes. */
typedef struct {
  double weights;
  double activations;  /* workspace at max_batched_tokens */
  double kv_capacity;  /* left for the KV cache (or as configured) */
  double kv_per_token; /* one token of one sequence, on each NPU of its group */
  long kv_blocks;      /* blocks of block_tokens per attention group */
  double usable;       /* HBM x memory_utilization */
} serve_memory_t;

typedef struct serve_cost serve_cost_t;

/* The cost model of one instance of pool, whose ranks start at first_rank of
 * topo. NULL with a one-line reason in err (naming wl_path) when the instance
 * does not fit: weights over HBM, or a group that cannot be planned. */
serve_cost_t *serve_cost_new(const system_cfg_t *sys, const workload_cfg_t *wl, const char *wl_path,
                             const char *pool_path, const serve_pool_t *pool, const topo_t *topo,
                             int first_rank, op_cache_t *ops, npu_err_t *err);
void serve_cost_free(serve_cost_t *c);

const serve_memory_t *serve_cost_memory(const serve_cost_t *c);

/* The busiest EP rank's tokens in a MoE layer over its share under even
 * routing (serving.moe.routing; 1 when uniform): the expert matmuls and the
 * dispatch/combine bytes are scaled by it. */
double serve_cost_moe_skew(const serve_cost_t *c);

/* Costs an iteration of the groups' batches (pool->dp of them): each pipeline
 * stage's time to stage_s (pool->pp entries) and where the time went, summed
 * over the stages, to parts. */
void serve_cost_iteration(serve_cost_t *c, const serve_group_batch_t *groups, double *stage_s,
                          serve_parts_t *parts);

/* Seconds to send a KV cache of tokens from an instance of this pool (first
 * rank src_first) to one of another (first rank dst_first): every NPU of the
 * source's first group sends its share to its peer, the slowest path counts. */
double serve_cost_kv_transfer_s(const serve_cost_t *src, const topo_t *topo, int src_first,
                                int dst_first, int dst_npus, double tokens);

#endif
