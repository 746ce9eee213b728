/* serve_cfg.h - an inference deployment as the architect describes it: how
 * each instance of the model is split, how many instances there are (one
 * co-located pool, or disaggregated prefill and decode pools), how each
 * instance schedules its requests (continuous batching, chunked prefill), its
 * KV cache, and the requests that arrive.
 *
 * Plain configuration structs filled by the config loader (sim/config/), the
 * `serving` section of a workload config. Nothing here knows about the chip or
 * SimGrid; the request list is built from this in serve_requests.c and costed
 * in sim/serve/. */
#ifndef NPUSIM_SERVE_CFG_H
#define NPUSIM_SERVE_CFG_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels_form.h"
#include "moe_routing.h"

#define SERVE_PATH_MAX 1024
/* A node type's name: its chip's chip.name (CHIP_NAME_MAX). */
#define SERVE_NODE_TYPE_MAX 64

/* The most requests one run takes (a trace's rows, serving.requests.count).
 * A run holds about 110 to 130 bytes per request (the request, its state and
 * result in sim/serve/, its queue entries, its latencies in the report): 10^7
 * generated requests on one instance peaked at 1.04 GiB (55 s of CPU); a time
 * series or timeline adds its iterations. */
#define SERVE_MAX_REQUESTS 10000000

/* The latest arrival, seconds: the engine's clock restarts at each arrival
 * that finds the deployment idle (sim/serve/), so a late start costs no
 * precision (Unix timestamps are fine); the bound keeps the span of the run,
 * its rates and idle energy finite (beyond 10^18 s the idle energy could
 * overflow a double). */
#define SERVE_MAX_ARRIVAL_S 1e18

/* What a scheduler does when a running sequence needs a KV block and none is
 * free: drop the youngest sequence's cache and prefill it again later
 * (recompute), or move it to host memory and back (swap). */
typedef enum { SERVE_PREEMPT_RECOMPUTE, SERVE_PREEMPT_SWAP, SERVE_PREEMPT_COUNT } serve_preempt_t;

/* Data types of the weights (matmul inputs) and of the KV cache. */
typedef enum {
  SERVE_DTYPE_BF16,
  SERVE_DTYPE_FP16,
  SERVE_DTYPE_FP8,
  SERVE_DTYPE_INT8,
  SERVE_DTYPE_COUNT
} serve_dtype_t;

/* How request lengths are drawn: all equal to the mean, uniform over
 * [min, max], or log-normal with the mean and sigma, clipped to [min, max]. */
typedef enum {
  SERVE_LEN_FIXED,
  SERVE_LEN_UNIFORM,
  SERVE_LEN_LOGNORMAL,
  SERVE_LEN_COUNT
} serve_len_dist_t;

/* One pool of identical instances and how each is split: an instance holds
 * tp x pp x dp NPUs; attention runs data-parallel over dp groups of tp (each
 * group with its own batch and KV cache), the experts of a MoE layer are spread
 * over ep of the instance's ranks. */
/* How a MoE layer's tokens reach their experts' ranks: an all-to-all straight
 * to every rank (direct), or, across servers, once per destination server over
 * the scale-out rail and then on inside it (DeepEP's normal kernels). */
typedef enum {
  SERVE_DISPATCH_DIRECT,
  SERVE_DISPATCH_SERVER_DEDUP,
  SERVE_DISPATCH_COUNT
} serve_dispatch_t;

/* Who runs a tensor-parallel all-reduce: the collective library as any
 * collective (NCCL/HCCL's choice), or the serving engine's own kernels where it
 * has them (vLLM's custom one-shot/two-shot all-reduce on NVLink GPUs). */
typedef enum { SERVE_AR_COLLECTIVE, SERVE_AR_ENGINE, SERVE_AR_COUNT } serve_allreduce_t;


typedef struct {
  int instances;
  int tp, pp, dp, ep;
  serve_dispatch_t ep_dispatch;
  /* the chip (chip.name) of the servers the pool runs on, on a system with
   * cluster.node_types; "" the default chip's servers */
  char node_type[SERVE_NODE_TYPE_MAX];
} serve_pool_t;

/* Speculative decoding (serving.speculative): each decode step drafts k tokens
 * per sequence, with the model's own multi-token-prediction modules (mtp: one
 * transformer layer and the LM head per draft token, DeepSeek-V3) or a separate
 * draft model (draft: each draft token costs a share of the target's decode
 * step), and the target verifies the k + 1 tokens in one step. */
typedef enum { SERVE_SPEC_MTP, SERVE_SPEC_DRAFT, SERVE_SPEC_COUNT } serve_spec_method_t;

typedef struct {
  bool on; /* the section is there */
  serve_spec_method_t method;
  int draft_tokens;        /* k */
  double acceptance_rate;  /* alpha: each draft token accepted with this chance, in order */
  double draft_cost_share; /* draft: one draft token's step / the target's decode step */
} serve_spec_cfg_t;

/* Prefix caching (serving.prefix_cache): requests share the first
 * shared_prefix_tokens of their prompts; a share hit_rate of them find the
 * prefix's KV blocks cached (whole blocks), skip its prefill and hold those
 * blocks in common. */
typedef struct {
  bool on;
  int shared_prefix_tokens;
  double hit_rate;
} serve_prefix_cfg_t;

typedef struct {
  serve_len_dist_t dist;
  int mean, min, max; /* tokens */
  double sigma;       /* log-normal shape */
} serve_len_cfg_t;

typedef struct {
  /* the pools: co-located (every instance prefills and decodes), or, when
   * disaggregated, prefill instances hand each request's KV cache to decode
   * instances over the fabric */
  serve_pool_t colocated;
  bool disaggregated; /* the decode section is there (and so the prefill one) */
  bool has_prefill;
  serve_pool_t prefill, decode;
  serve_dtype_t weight_dtype;
  /* scheduler (vLLM-style continuous batching) */
  int max_num_seqs;            /* sequences in one iteration's batch, per attention group */
  int max_batched_tokens;      /* tokens (prefill + decode) in one iteration, per group */
  bool chunked_prefill;        /* Sarathi: prefill chunks ride along with the decodes */
  bool two_batch_overlap;      /* MoE layers run as two micro-batches, one's all-to-alls
                                * under the other's compute (SGLang TBO, DeepSeek, CloudMatrix) */
  double iteration_overhead_s; /* host time per iteration: scheduling, input prep, sampling glue */
  serve_allreduce_t allreduce; /* who runs the TP all-reduces */
  /* MoE: the router's skew and the rate dispatch/combine kernels reach */
  moe_routing_t moe_route;        /* how unevenly the router loads the EP ranks */
  double moe_dispatch_rdma_Bps;   /* per rank between servers; 0: the links' rate */
  double moe_dispatch_nvlink_Bps; /* per rank inside a server; 0: the links' rate */
  int cuda_graph_max_batch;    /* decode batches up to this padded to captured sizes; 0: off */
  kernels_form_t swiglu_kernels; /* the gated activation: fused (engines' silu_and_mul) or
                                  * eager PyTorch's silu, then mul */
  serve_spec_cfg_t spec;
  serve_prefix_cfg_t prefix;
  /* KV cache */
  int block_tokens;
  serve_dtype_t kv_dtype;
  double kv_capacity_bytes;  /* per NPU; 0: HBM x memory_utilization - weights - activations */
  double memory_utilization; /* share of HBM the engine may use */
  serve_preempt_t preemption;
  double swap_bytes_per_s; /* host link for swapping, per NPU */
  /* requests: a trace file, or a generator */
  char trace_path[SERVE_PATH_MAX];
  double rate_per_s; /* Poisson arrivals; 0: all arrive at time 0 */
  int count;
  int seed;
  serve_len_cfg_t prompt, output;
} serving_cfg_t;

extern const char *const serve_preempt_names[SERVE_PREEMPT_COUNT];
extern const char *const serve_dtype_names[SERVE_DTYPE_COUNT];
extern const char *const serve_len_dist_names[SERVE_LEN_COUNT];
extern const char *const serve_dispatch_names[SERVE_DISPATCH_COUNT];
extern const char *const serve_allreduce_names[SERVE_AR_COUNT];

extern const char *const serve_spec_names[SERVE_SPEC_COUNT];

/* Tokens one decode step verifies per sequence: k + 1 with speculative
 * decoding, else 1. */
int serve_spec_verify_tokens(const serving_cfg_t *s);

/* KV blocks every attention group keeps for the shared prefix (prefix caching
 * with hits: the hits hold them in common); 0 otherwise. */
long serve_prefix_blocks(const serving_cfg_t *s);

/* Expected tokens a sequence gains per decode step, (1 - a^(k+1)) / (1 - a)
 * (Leviathan et al., ICML 2023, eq. 1); 1 without speculative decoding. */
double serve_spec_tokens_per_step(const serving_cfg_t *s);

/* Bytes of one element of a serving dtype. */
int serve_dtype_bytes(serve_dtype_t d);

/* NPUs one instance of the pool holds, and all instances of it. */
long serve_pool_npus(const serve_pool_t *p);

/* NPUs of the whole deployment. */
long serve_total_npus(const serving_cfg_t *s);

#endif
