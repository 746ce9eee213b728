/* workload.h - a training job as the architect describes it: the transformer,
 * how it is split over NPUs, and how it is trained.
 *
 * Plain configuration structs filled by the config loader (sim/config/config.c), plus
 * the derived quantities every later stage needs (world size, gradient
 * accumulation). The generator that turns this into rank programs comes with
 * the training workloads; nothing here knows about the chip or SimGrid. */
#ifndef NPUSIM_WORKLOAD_H
#define NPUSIM_WORKLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "serve_cfg.h"

#define WORKLOAD_NAME_MAX 64
/* Pipeline stages parallel.stage_layers can list. */
#define WORKLOAD_STAGES_MAX 1024

/* GeLU, or a gated MLP (three matrices): SiLU-gated (SwiGLU) or GeLU-gated (GeGLU) */
typedef enum { ACTIVATION_GELU, ACTIVATION_SWIGLU, ACTIVATION_GEGLU, ACTIVATION_COUNT } activation_t;
typedef enum { NORM_LAYERNORM, NORM_RMSNORM, NORM_COUNT } norm_t;
typedef enum { POSITION_ROPE, POSITION_LEARNED, POSITION_COUNT } position_t;
typedef enum { RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL, RECOMPUTE_COUNT } recompute_t;
typedef enum { PRECISION_BF16, PRECISION_FP16, PRECISION_FP8, PRECISION_COUNT } precision_t;
typedef enum { OPTIMIZER_ADAM, OPTIMIZER_COUNT } optimizer_t;

/* How context parallelism splits attention: ring attention (key/value blocks
 * passed around the CP ring), Ulysses (all-to-alls swap the sequence split
 * for a head split), an all-gather of keys and values (MindSpeed's
 * kvallgather), or Ulysses inside groups with rings across them (hybrid). */
typedef enum { CP_RING, CP_ULYSSES, CP_ALLGATHER, CP_HYBRID, CP_ALGO_COUNT } cp_algo_t;
/* The pipeline schedule (pipeline.h): Megatron's 1F1B (interleaved with vpp > 1),
 * or DualPipeV (two chunks per stage in a V). */
typedef enum { PP_SCHEDULE_1F1B, PP_SCHEDULE_DUALPIPEV, PP_SCHEDULE_COUNT } pp_schedule_t;

/* Parallel dimensions in the order ranks are laid out, innermost first. */
typedef enum { PAR_DIM_TP, PAR_DIM_CP, PAR_DIM_DP, PAR_DIM_PP, PAR_DIM_COUNT } par_dim_t;

typedef struct {
  int experts;              /* routed experts per MoE layer */
  int top_k;                /* experts each token is routed to */
  int expert_ffn_hidden;    /* FFN width of one expert */
  double capacity_factor;   /* expert capacity relative to a uniform split */
  int shared_experts;       /* experts every token passes through */
  int dense_layers;         /* the first layers keep a dense MLP (DeepSeek-V3: 3) */
  int groups;               /* routing groups of experts; 0: none */
  int top_groups;           /* groups a token's experts may come from (DeepSeek-V3: 4 of 8) */
  int zero_experts;         /* zero-computation experts beside the routed ones (LongCat-Flash:
                             * 256): the router picks top_k of experts + zero_experts; a zero
                             * expert returns its input, scaled */
  bool shortcut;            /* LongCat-Flash's shortcut-connected MoE: each MoE layer holds two
                             * attention blocks, each followed by a dense MLP of ffn_hidden, and
                             * one MoE block fed from the first attention block's output */
} moe_cfg_t;

/* Multi-head latent attention (DeepSeek-V2/V3): keys and values are rebuilt
 * from one compressed latent per token, which is all the KV cache holds. */
typedef struct {
  int q_lora_rank;          /* query compression; 0: queries projected directly */
  int kv_lora_rank;         /* the latent cached per token */
  int qk_nope_head_dim;     /* per head, the part of q and k without rotary */
  int qk_rope_head_dim;     /* per head, the rotary part (its key shared by all heads) */
  int v_head_dim;
} mla_cfg_t;

typedef struct {
  char name[WORKLOAD_NAME_MAX];
  int layers;
  int hidden;
  int heads;
  int kv_heads;             /* < heads for grouped-query attention */
  int head_dim;             /* width of one query/key/value head; 0: hidden / heads */
  int ffn_hidden;
  int vocab;
  int seq_len;              /* tokens per sample */
  activation_t activation;
  norm_t norm;
  position_t position;      /* rotary in every layer, or a learned table added once */
  bool tied_embeddings;     /* input embedding and LM head share weights */
  double dropout;           /* attention and hidden dropout probability; 0 = none */
  bool has_moe;
  moe_cfg_t moe;
  bool has_mla;
  mla_cfg_t mla;
  int sliding_window_tokens; /* keys a query of a windowed layer sees, its own included; 0: all */
  int full_attention_every; /* with a window: each such layer (1-based: the Nth, 2Nth, ...)
                             * attends to the whole sequence; 0: every layer is windowed */
  int mtp_layers;           /* multi-token prediction depth (DeepSeek-V3: 1): modules after
                             * the last layer, each a projection, one layer and the shared
                             * LM head predicting one more token ahead */
} model_cfg_t;

typedef struct {
  int dp, tp, pp, vpp, cp, ep;
  pp_schedule_t pp_schedule;
  cp_algo_t cp_algo;
  int cp_ulysses;           /* CP_HYBRID: the Ulysses degree inside cp (1 < it < cp) */
  int etp;                  /* expert tensor parallelism: tp (each expert split over the TP
                             * group, EP carved out of dp x cp), or 1 (experts whole, EP
                             * folded over tp x cp x dp: Megatron-Core's MoE parallel folding) */
  int first_stage_layers;   /* layers on pipeline stage 0; 0: an even share */
  int last_stage_layers;    /* layers on the last stage; 0: an even share */
  int stage_layers[WORKLOAD_STAGES_MAX]; /* layers on each stage (Megatron/MindSpeed's
                                          * --num-layer-list), stage_count of them; with
                                          * vpp > 1 on each virtual stage, chunk-major */
  int stage_count;          /* 0: stage_layers not given */
  bool sequence_parallel;
  int zero;                 /* 0..3; 1 = distributed optimizer */
  int zero_shard_size;      /* replicas a ZeRO shard spans: 0 = all dp x cp; fewer = hybrid
                             * sharding (HSDP), the shard groups replicated */
  recompute_t recompute;
  par_dim_t order[PAR_DIM_COUNT]; /* innermost first; Megatron: tp, cp, dp, pp */
} parallel_cfg_t;

typedef struct {
  int micro_batch;          /* samples per micro-batch per DP replica */
  int global_batch;         /* samples per step over all replicas */
  precision_t precision;
  optimizer_t optimizer;
  bool flash_attention;     /* fused attention kernel */
  bool overlap_grad_reduce; /* DP gradient reduction overlapped with backward */
  bool overlap_p2p_comm;    /* pipeline sends do not block the compute stream */
  uint64_t grad_bucket_bytes; /* gradient bucket for the overlapped reduction */
  bool grad_reduce_in_fp32; /* fp32 gradient buffers and reduction (Megatron with bf16) */
  bool overlap_param_gather; /* distributed optimizer: parameter gather beside the forward */
  bool overlap_tp_comm;     /* TP communication overlapped with compute */
  bool overlap_moe_a2a;     /* 1F1B's forward and backward of two micro-batches merged layer by
                             * layer, each one's all-to-alls beside the other's compute */
  moe_routing_t moe_route;  /* how unevenly the router loads the EP ranks (moe_routing.h) */
  kernels_form_t swiglu_kernels;        /* fused, or silu + mul over strided halves */
  kernels_form_t cross_entropy_kernels; /* fused loss + gradient, or log-softmax + NLL and
                                         * their backward */
} training_cfg_t;

/* A workload trains (training section) or serves (serving section). */
typedef struct {
  model_cfg_t model;
  parallel_cfg_t parallel;
  bool has_training;
  training_cfg_t training;
  bool has_serving;
  serving_cfg_t serving;
} workload_cfg_t;

/* Names as written in JSON, indexed by the enums above. */
extern const char *const workload_activation_names[ACTIVATION_COUNT];
extern const char *const workload_position_names[POSITION_COUNT];
extern const char *const workload_norm_names[NORM_COUNT];
extern const char *const workload_cp_algo_names[CP_ALGO_COUNT];
extern const char *const workload_pp_schedule_names[PP_SCHEDULE_COUNT];
extern const char *const workload_recompute_names[RECOMPUTE_COUNT];
extern const char *const workload_precision_names[PRECISION_COUNT];
extern const char *const workload_kernels_names[KERNELS_COUNT];
extern const char *const workload_optimizer_names[OPTIMIZER_COUNT];
extern const char *const workload_par_dim_names[PAR_DIM_COUNT];

/* NPUs the job occupies: dp x tp x pp x cp (EP is carved out of dp x cp). */
long workload_world_size(const workload_cfg_t *w);

/* Micro-batches each pipeline runs per step: global / (micro x dp). */
long workload_grad_accum_steps(const workload_cfg_t *w);

/* Transformer layers pipeline stage `stage` holds: its stage_layers entry
 * where they are given; else first_stage_layers and last_stage_layers where set
 * (Megatron's decoder_first/last_pipeline_num_layers), the rest shared evenly
 * by the other stages. */
int workload_stage_layers(const workload_cfg_t *w, int stage);

/* The virtual stage model chunk `chunk` of pipeline stage `stage` runs:
 * chunk x pp + stage in Megatron's interleaving (chunk 0 without it); with
 * DualPipeV's V, stage for chunk 0 and 2 pp - 1 - stage for chunk 1. */
int workload_virtual_stage(const parallel_cfg_t *p, int stage, int chunk);

/* The pipeline stage that holds the last virtual stage (LM head, loss, MTP):
 * the last, or with DualPipeV the first. */
int workload_head_stage(const parallel_cfg_t *p);

/* Layers of model chunk `chunk` of pipeline stage `stage` (its virtual stage,
 * workload_virtual_stage), and in
 * *first the model's index of its first layer: parallel.stage_layers with one
 * entry per virtual stage, else an even split of the stage's layers. */
int workload_chunk_layers(const workload_cfg_t *w, int stage, int chunk, int *first);

/* The Ulysses degree of context parallelism: cp with Ulysses, cp_ulysses in a
 * hybrid, else 1; the ring (or all-gather) spans cp / it positions. */
int workload_cp_ulysses(const parallel_cfg_t *p);

/* Bytes per parameter of the gradient buffers and of their reduction. */
double workload_grad_bytes(const workload_cfg_t *w);

/* Parses a rank order such as "tp-cp-dp-pp" (innermost first) into order[].
 * Every dimension must appear once. Returns 0, or -1 if the text is not such
 * a permutation. */
int workload_parse_order(const char *text, par_dim_t order[PAR_DIM_COUNT]);

#endif
