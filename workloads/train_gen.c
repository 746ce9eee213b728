/* train_gen.c - the ops of one training step; see train_gen.h. */
#include "train_gen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline.h"
#include "transformer.h"

#define OPT_BYTES 12.0 /* fp32 master weights and two Adam moments */
/* The largest step generated: micro-batches per replica x layers x cp, 3 times the
 * largest published run we validate against (GPT 1T: 512 x 128); about 2.5 GiB. */
#define TRAIN_MAX_PASSES (1 << 18)
/* Zipf routing's placements in training (training.moe.routing zipf): drawn from
 * this seed, so a step is the same in every run. */
#define TRAIN_ROUTING_SEED 1

/* The compute ops and collectives the generator emits. Their names are looked
 * up in the caller's vocabulary once per step (resolve_kinds): a name it lacks
 * fails train_generate, never an op of kind -1. */
typedef enum {
  GEN_MATMUL,
  GEN_ATTENTION_FWD,
  GEN_ATTENTION_BWD,
  GEN_SOFTMAX,
  GEN_ADD,
  GEN_MUL,
  GEN_COPY,
  GEN_ROPE,
  GEN_LAYERNORM,
  GEN_RMSNORM,
  GEN_GELU,
  GEN_SWIGLU,
  GEN_GEGLU,
  GEN_CROSS_ENTROPY,
  GEN_REDUCE_SUM,
  GEN_ADAM,
  GEN_CAST,
  GEN_COMPUTE_COUNT
} gen_compute_t;

static const char *const gen_compute_names[GEN_COMPUTE_COUNT] = {
    [GEN_MATMUL] = "matmul",
    [GEN_ATTENTION_FWD] = "attention_fwd",
    [GEN_ATTENTION_BWD] = "attention_bwd",
    [GEN_SOFTMAX] = "softmax",
    [GEN_ADD] = "add",
    [GEN_MUL] = "mul",
    [GEN_COPY] = "copy",
    [GEN_ROPE] = "rope",
    [GEN_LAYERNORM] = "layernorm",
    [GEN_RMSNORM] = "rmsnorm",
    [GEN_GELU] = "gelu",
    [GEN_SWIGLU] = "swiglu",
    [GEN_GEGLU] = "geglu",
    [GEN_CROSS_ENTROPY] = "cross_entropy",
    [GEN_REDUCE_SUM] = "reduce_sum",
    [GEN_ADAM] = "adam",
    [GEN_CAST] = "cast",
};

typedef enum {
  GEN_ALLREDUCE,
  GEN_ALLGATHER,
  GEN_REDUCESCATTER,
  GEN_ALLTOALL,
  GEN_COLL_COUNT
} gen_coll_t;

static const char *const gen_coll_names[GEN_COLL_COUNT] = {
    [GEN_ALLREDUCE] = "allreduce",
    [GEN_ALLGATHER] = "allgather",
    [GEN_REDUCESCATTER] = "reducescatter",
    [GEN_ALLTOALL] = "alltoall",
};

/* The vocabulary's index of each, and of the data types used. */
typedef struct {
  int compute[GEN_COMPUTE_COUNT];
  int colls[GEN_COLL_COUNT];
  int dtype_mm, dtype_vec; /* matmuls in the training precision; fp8 keeps vector ops in bf16 */
  int dtype_fp32;          /* the optimizer's */
} gen_kinds_t;

/* The communicators of a step, in the trace's order, with the part of the step
 * their collectives are. */
typedef enum {
  COMM_TP,
  COMM_DP,
  COMM_EP,
  COMM_EDP,        /* replicas of the same experts */
  COMM_DP_PARAMS,  /* ZeRO-3's gathers, on their own stream */
  COMM_EDP_PARAMS,
  COMM_EMBD,       /* first and last stage: tied embeddings */
  COMM_DP_REPLICAS, /* hybrid sharding: the same shard in every shard group */
  COMM_CP_ULYSSES, /* context parallelism's all-to-alls (Ulysses) */
  COMM_CP_GATHER,  /* its key/value all-gathers (allgather) */
  COMM_ETP,        /* expert tensor parallelism apart from TP (parallel.etp) */
  COMM_COUNT
} gen_comm_t;

static const struct {
  const char *name;
  train_part_t part;
} gen_comms[COMM_COUNT] = {
    [COMM_TP] = {"tp", TRAIN_PART_TP},
    [COMM_DP] = {"dp", TRAIN_PART_DP},
    [COMM_EP] = {"ep", TRAIN_PART_EP},
    [COMM_EDP] = {"edp", TRAIN_PART_DP},
    [COMM_DP_PARAMS] = {"dp_params", TRAIN_PART_DP},
    [COMM_EDP_PARAMS] = {"edp_params", TRAIN_PART_DP},
    [COMM_EMBD] = {"embd", TRAIN_PART_DP},
    [COMM_DP_REPLICAS] = {"dp_replicas", TRAIN_PART_DP},
    [COMM_CP_ULYSSES] = {"cp_ulysses", TRAIN_PART_CP},
    [COMM_CP_GATHER] = {"cp_gather", TRAIN_PART_CP},
    [COMM_ETP] = {"etp", TRAIN_PART_EP},
};

/* A weight-gradient matmul or a gradient hand-over held back by a backward
 * whose weight gradients are deferred (DualPipeV's zero bubble), emitted by
 * the PIPE_WEIGHTS that pops its backward. */
typedef enum { DEFER_MATMUL, DEFER_GRADS, DEFER_FLUSH } defer_kind_t;

typedef struct {
  defer_kind_t kind;
  train_where_t at;
  double dims[4];        /* DEFER_MATMUL: m, n, k, batch */
  int dep;               /* ...and what it reads besides the backward (-1: nothing) */
  double dense, experts; /* DEFER_GRADS: bytes, as grads_ready takes them */
  bool last_mb;
} deferred_t;

/* The deferred weight gradients, in backward order, and where each
 * backward's run ends (a FIFO of backwards, as DualPipe's WeightGradStore). */
typedef struct {
  deferred_t *items;
  int n, cap;
  int *ends;          /* items[ends[b - 1] .. ends[b]) are backward b's */
  int nends, capends;
  int popped;         /* backwards whose weights have been emitted */
} weight_queue_t;

typedef struct {
  const workload_cfg_t *w;
  const gen_kinds_t *k;
  trace_program_t *p;
  train_program_t *info; /* what each op of p is for */
  int cap;
  /* streams */
  int compute, tp, dp, ep, send_next, recv_prev, send_prev, recv_next, cp_send, cp_recv;
  int v_send_next, v_recv_prev, v_send_prev, v_recv_next; /* DualPipeV's chunk 1 */
  int cp_coll; /* context parallelism's collectives (Ulysses, allgather) */
  int optimizer, zero;
  int tag_fwd, tag_bwd, tag_cp;
  int stride_pp;
  int cp_next, cp_prev; /* rank offsets of the context-parallel ring's neighbours */
  double e;        /* bytes per activation element */
  double moe_skew; /* the busiest EP rank's tokens over an even share (moe_routing.h) */
  bool gather_pending; /* overlap_tp_comm: tp_enter left its gather to the next op */
  int gather_src;      /* ...of this op's output */
  double tokens;   /* per rank per micro-batch: b * s / cp */
  double grad_pending;   /* dense gradient bytes not yet handed to a bucket */
  double expert_pending; /* the same of routed experts (reduced over their replicas) */
  int last_grad_op;    /* the op that produced them */
  int last_bucket_op;  /* the last gradient reduction (on one stream: it ends them all) */
  int *chunk_gather;   /* overlap_param_gather: per model chunk, its parameters' gather */
  train_where_t at;    /* where the ops being added are, recorded with each */
  bool defer_weights;  /* the backward being added defers its weight gradients */
  weight_queue_t wq;
  int *turn_fwd, *turn_bwd; /* DualPipeV's last stage, per micro-batch: the end of chunk
                             * 0's forward and of chunk 1's backward, which the other
                             * chunk takes in place of a message */
  long turns;               /* micro-batches those two hold */
} gen_t;

/* ---- building ops ---- */

static int name_index(const char *const *names, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], name) == 0)
      return i;
  return -1;
}

/* Looks up every name the generator emits in v. Returns 0, or -1 with the
 * first name v lacks in err (a vocabulary that does not match the generator:
 * an internal error, not a bad input). */
static int resolve_kinds(const trace_vocab_t *v, precision_t precision, gen_kinds_t *k, npu_err_t *err) {
  for (int i = 0; i < GEN_COMPUTE_COUNT; i++)
    if ((k->compute[i] = name_index(v->compute, v->ncompute, gen_compute_names[i])) < 0)
      return npu_err_set(err, "internal error: train_generate: expected compute op \"%s\" "
                      "in the vocabulary, found none", gen_compute_names[i]), -1;
  for (int i = 0; i < GEN_COLL_COUNT; i++)
    if ((k->colls[i] = name_index(v->colls, v->ncolls, gen_coll_names[i])) < 0)
      return npu_err_set(err, "internal error: train_generate: expected collective "
                      "\"%s\" in the vocabulary, found none", gen_coll_names[i]), -1;
  const char *dtypes[] = {workload_precision_names[precision], "fp32"};
  int *found[] = {&k->dtype_mm, &k->dtype_fp32};
  for (int i = 0; i < 2; i++)
    if ((*found[i] = name_index(v->dtypes, v->ndtypes, dtypes[i])) < 0)
      return npu_err_set(err, "internal error: train_generate: expected data type \"%s\" "
                      "in the vocabulary, found none", dtypes[i]), -1;
  k->dtype_vec = precision == PRECISION_FP8 ? v->default_dtype : k->dtype_mm;
  return 0;
}

static int stream_of(trace_program_t *p, const char *name) {
  return trace_intern(&p->streams, &p->nstreams, name);
}

static int tp_gather(gen_t *g, int dep);

/* Appends an op, a part of the step, on stream after the given dependencies
 * (-1 = none); a gather tp_enter left pending goes first. */
static int add(gen_t *g, trace_op_type_t type, train_part_t part, int stream, int dep1,
               int dep2) {
  trace_program_t *p = g->p;
  if (g->gather_pending) { /* the gather tp_enter left, before whatever comes next */
    int src = g->gather_src, gathered = tp_gather(g, src);
    dep1 = dep1 == src ? gathered : dep1;
    dep2 = dep2 == src ? gathered : dep2;
  }
  if (p->nops == g->cap) {
    g->cap = g->cap ? 2 * g->cap : 1024;
    p->ops = realloc(p->ops, (size_t)g->cap * sizeof *p->ops);
    g->info->parts = realloc(g->info->parts, (size_t)g->cap * sizeof *g->info->parts);
    g->info->where = realloc(g->info->where, (size_t)g->cap * sizeof *g->info->where);
  }
  g->info->parts[p->nops] = part;
  g->info->where[p->nops] = g->at;
  trace_op_t *op = &p->ops[p->nops];
  memset(op, 0, sizeof *op);
  op->id = p->nops;
  op->type = type;
  op->stream = stream;
  int deps[2] = {dep1, dep2}, n = 0;
  for (int i = 0; i < 2; i++)
    n += deps[i] >= 0;
  if (n) {
    op->deps = malloc((size_t)n * sizeof *op->deps);
    for (int i = 0; i < 2; i++)
      if (deps[i] >= 0)
        op->deps[op->ndeps++] = deps[i];
  }
  return p->nops++;
}

/* A zero-time op on the compute stream that waits for two others. */
static int join(gen_t *g, int dep1, int dep2) {
  return add(g, TRACE_OP_DELAY, TRAIN_PART_NONE, g->compute, dep1, dep2);
}

static int kernel(gen_t *g, gen_compute_t kind, double d0, double d1, double d2, double d3,
                  double d4, int dep) {
  int i = add(g, TRACE_OP_SHAPED, TRAIN_PART_COMPUTE, g->compute, dep, -1);
  trace_op_t *op = &g->p->ops[i];
  op->kind = g->k->compute[kind];
  op->dtype = kind == GEN_MATMUL ? g->k->dtype_mm : g->k->dtype_vec;
  double d[5] = {d0, d1, d2, d3, d4};
  for (int k = 0; k < 5; k++)
    op->dims[k] = (int64_t)ceil(d[k]);
  op->causal = kind == GEN_ATTENTION_FWD || kind == GEN_ATTENTION_BWD;
  if (op->causal && xf_layer_windowed(&g->w->model, g->at.layer))
    op->window = g->w->model.sliding_window_tokens;
  return i;
}

static int coll(gen_t *g, gen_coll_t kind, int stream, gen_comm_t comm, double bytes, int dep);
static void beside(gen_t *g, int c, int x);

/* ---- TP communication fused with its matmuls (training.overlap_tp_comm) ----
 * Megatron's userbuffer overlap and Ascend's MC2 kernels split the gather
 * before a column-parallel matmul, and the reduction after a row-parallel one,
 * into tp chunks pipelined with the matmul's: each chunk's transfer runs beside
 * a neighbouring chunk's matmul (slowed by collectives.compute_slowdown), and
 * only the first gather chunk or the last reduction chunk stays exposed. */

static bool tp_fused(const gen_t *g) {
  return g->w->training.overlap_tp_comm && g->w->parallel.tp > 1;
}

/* The all-gather of the [tokens, hidden] activation over TP after `dep`. */
static int tp_gather(gen_t *g, int dep) {
  g->gather_pending = false;
  return coll(g, GEN_ALLGATHER, g->tp, COMM_TP, g->tokens * g->w->model.hidden * g->e, dep);
}

/* A matmul on the gathered activation, fused: its rows in tp chunks, chunk c
 * waiting for its gather chunk, beside chunk c + 1's. */
static int gathered_matmul(gen_t *g, const double d[5], int dep) {
  int chunks = g->w->parallel.tp, first = g->p->nops, x = dep;
  g->gather_pending = false;
  double bytes = g->tokens * g->w->model.hidden * g->e / chunks;
  for (int c = 0; c < chunks; c++) /* the gathers, in order on the TP stream */
    coll(g, GEN_ALLGATHER, g->tp, COMM_TP, bytes, dep);
  for (int c = 0; c < chunks; c++) {
    x = kernel(g, GEN_MATMUL, d[0] / chunks, d[1], d[2], d[3], d[4], first + c);
    if (c + 1 < chunks)
      beside(g, x, first + c + 1);
  }
  return x;
}

static int shaped(gen_t *g, gen_compute_t kind, double d0, double d1, double d2, double d3,
                  double d4, int dep) {
  if (kind == GEN_MATMUL && g->gather_pending && dep == g->gather_src)
    return gathered_matmul(g, (double[5]){d0, d1, d2, d3, d4}, dep);
  return kernel(g, kind, d0, d1, d2, d3, d4, dep);
}

static int mm(gen_t *g, double m, double n, double k, int dep) {
  return shaped(g, GEN_MATMUL, m, n, k, 0, 0, dep);
}

/* A vector op; swiglu and cross_entropy in the kernels training.kernels names
 * (the backward of swiglu as its forward, as the fused op is costed). */
static int vec(gen_t *g, gen_compute_t kind, double rows, double cols, int dep) {
  int i = shaped(g, kind, rows, cols, 0, 0, 0, dep);
  const training_cfg_t *t = &g->w->training;
  g->p->ops[i].unfused = ((kind == GEN_SWIGLU || kind == GEN_GEGLU) &&
                          t->swiglu_kernels == KERNELS_UNFUSED) ||
                         (kind == GEN_CROSS_ENTROPY && t->cross_entropy_kernels == KERNELS_UNFUSED);
  return i;
}

static int coll(gen_t *g, gen_coll_t kind, int stream, gen_comm_t comm, double bytes, int dep) {
  if (bytes <= 0)
    return dep;
  int i = add(g, TRACE_OP_COLL, gen_comms[comm].part, stream, dep, -1);
  trace_op_t *op = &g->p->ops[i];
  op->kind = g->k->colls[kind];
  op->comm = (int)comm;
  op->bytes = ceil(bytes);
  return i;
}

static int p2p(gen_t *g, trace_op_type_t type, train_part_t part, int stream, int offset, int tag,
               double bytes, int dep) {
  int i = add(g, type, part, stream, dep, -1);
  trace_op_t *op = &g->p->ops[i];
  op->peer = offset;
  op->peer_relative = true;
  op->tag = tag;
  op->bytes = ceil(bytes);
  return i;
}

/* Marks compute op c as running beside transfer x of another stream, which
 * slows it on a chip whose transfers take compute resources (interference). */
static void beside(gen_t *g, int c, int x) {
  trace_op_t *o = &g->p->ops[x];
  if (o->stream == g->p->ops[c].stream ||
      (o->type != TRACE_OP_COLL && o->type != TRACE_OP_SEND && o->type != TRACE_OP_RECV))
    return;
  g->p->ops[c].overlapping = true;
  g->p->ops[c].overlaps = x;
}

/* ---- weight gradients deferred (DualPipeV's zero bubble) ---- */

static deferred_t *defer_push(gen_t *g, defer_kind_t kind) {
  weight_queue_t *q = &g->wq;
  if (q->n == q->cap) {
    q->cap = q->cap ? 2 * q->cap : 64;
    q->items = realloc(q->items, (size_t)q->cap * sizeof *q->items);
  }
  deferred_t *d = &q->items[q->n++];
  *d = (deferred_t){kind, g->at, {0, 0, 0, 0}, -1, 0, 0, false};
  return d;
}

/* Ends the deferring backward's run of items. */
static void defer_close(gen_t *g) {
  weight_queue_t *q = &g->wq;
  if (q->nends == q->capends) {
    q->capends = q->capends ? 2 * q->capends : 16;
    q->ends = realloc(q->ends, (size_t)q->capends * sizeof *q->ends);
  }
  q->ends[q->nends++] = q->n;
}

/* A weight-gradient matmul (m x n from k rows, `batch` of them) after dep:
 * added now, or held back when the backward defers its weight gradients,
 * then also waiting for `reads` (an op of another stream it needs, or -1).
 * Returns what the backward goes on after. */
static int wgrad(gen_t *g, double m, double n, double k, double batch, int dep, int reads) {
  if (!g->defer_weights)
    return shaped(g, GEN_MATMUL, m, n, k, batch, 0, dep);
  deferred_t *d = defer_push(g, DEFER_MATMUL);
  d->dims[0] = m;
  d->dims[1] = n;
  d->dims[2] = k;
  d->dims[3] = batch;
  d->dep = reads;
  return dep;
}

static void grads_ready(gen_t *g, double dense, double experts, int dep, bool last_microbatch);
static void flush_grads(gen_t *g, int dep);

/* PIPE_WEIGHTS: the oldest deferring backward's weight gradients, in its
 * order, after x; each hands its gradients over as the backward would have. */
static int weight_pass(gen_t *g, int x) {
  weight_queue_t *q = &g->wq;
  int from = q->popped ? q->ends[q->popped - 1] : 0, to = q->ends[q->popped++];
  for (int i = from; i < to; i++) {
    const deferred_t *d = &q->items[i];
    g->at = d->at;
    if (d->kind == DEFER_MATMUL)
      x = kernel(g, GEN_MATMUL, d->dims[0], d->dims[1], d->dims[2], d->dims[3], 0,
                 d->dep >= 0 ? join(g, x, d->dep) : x);
    else if (d->kind == DEFER_GRADS)
      grads_ready(g, d->dense, d->experts, x, d->last_mb);
    else
      flush_grads(g, g->last_grad_op);
  }
  g->at.layer = -1;
  return x;
}

/* ---- a transformer layer ---- */

/* Whether the layer the ops being added belong to is a MoE one (the first
 * model.moe.dense_layers keep a dense MLP). */
static bool layer_moe(const gen_t *g) {
  return xf_layer_is_moe(&g->w->model, g->at.layer);
}

static gen_compute_t norm_kind(const model_cfg_t *m) {
  return m->norm == NORM_RMSNORM ? GEN_RMSNORM : GEN_LAYERNORM;
}

/* Tensor-parallel communication of a [tokens, hidden] activation: with sequence
 * parallelism gather before / scatter after a parallel region, else an allreduce
 * after it. */
static int tp_enter(gen_t *g, int dep) {
  const parallel_cfg_t *par = &g->w->parallel;
  if (par->tp == 1 || !par->sequence_parallel)
    return dep;
  if (tp_fused(g)) { /* the next matmul gathers chunk by chunk (any other op: at once) */
    g->gather_pending = true;
    g->gather_src = dep;
    return dep;
  }
  return tp_gather(g, dep);
}

static int tp_exit(gen_t *g, int dep) {
  const parallel_cfg_t *par = &g->w->parallel;
  if (par->tp == 1)
    return dep;
  double bytes = g->tokens * g->w->model.hidden * g->e;
  return coll(g, par->sequence_parallel ? GEN_REDUCESCATTER : GEN_ALLREDUCE, g->tp, COMM_TP,
              bytes, dep);
}

/* tp_exit after a row-parallel matmul (`dep`, the last op): fused, the matmul
 * again in tp chunks of rows, each chunk's reduction beside the next chunk's
 * matmul. */
static int tp_exit_fused(gen_t *g, int dep) {
  trace_program_t *p = g->p;
  const parallel_cfg_t *par = &g->w->parallel;
  if (!tp_fused(g) || dep != p->nops - 1 || p->ops[dep].type != TRACE_OP_SHAPED ||
      p->ops[dep].kind != g->k->compute[GEN_MATMUL] || p->ops[dep].overlapping)
    return tp_exit(g, dep);
  trace_op_t op = p->ops[--p->nops]; /* taken back, to be issued in chunks */
  int before = op.ndeps ? op.deps[0] : -1, chunks = par->tp, x = before;
  free(op.deps);
  double bytes = g->tokens * g->w->model.hidden * g->e / chunks;
  for (int c = 0; c < chunks; c++) {
    int m = kernel(g, GEN_MATMUL, (double)op.dims[0] / chunks, (double)op.dims[1],
                   (double)op.dims[2], (double)op.dims[3], (double)op.dims[4], before);
    if (c > 0)
      beside(g, m, x);
    x = coll(g, par->sequence_parallel ? GEN_REDUCESCATTER : GEN_ALLREDUCE, g->tp, COMM_TP, bytes,
             m);
  }
  return x;
}

/* Dropout's mask multiply (forward, and again on the gradient in backward);
 * none when the model trains without dropout. */
static int dropout(gen_t *g, double rows, double cols, int dep) {
  return g->w->model.dropout > 0 ? vec(g, GEN_MUL, rows, cols, dep) : dep;
}

/* Ulysses' all-to-all of `width` columns (of this TP rank) per token of its
 * sequence shard over its Ulysses group (none without Ulysses). */
static int ulysses_exchange(gen_t *g, double width, int dep) {
  const parallel_cfg_t *par = &g->w->parallel;
  if (workload_cp_ulysses(par) == 1)
    return dep;
  return coll(g, GEN_ALLTOALL, g->cp_coll, COMM_CP_ULYSSES, g->tokens * width * g->e, dep);
}

/* Attention core; context parallelism passes key/value blocks around its ring
 * while each block is attended (ring), or swaps the sequence split for a head
 * split with all-to-alls first (Ulysses: queries, keys and values in, the
 * output back; the backward the reverse), or gathers every key and value
 * first and reduces their gradients after (allgather); hybrid runs Ulysses in
 * groups of cp_ulysses and the ring across them. */
static int attention(gen_t *g, bool bwd, int dep) {
  const model_cfg_t *m = &g->w->model;
  const parallel_cfg_t *par = &g->w->parallel;
  double b = g->w->training.micro_batch, s = (double)m->seq_len / par->cp, t = par->tp;
  xf_attention_widths_t wd = xf_attention_widths(m);
  /* the fused kernel takes one head width: the mean of the query/key and value
   * widths keeps its FLOPs (MLA: 192 and 128 -> 160) */
  double heads = m->heads / t, kv = wd.kv_heads / t, d = (wd.qk + wd.v) / 2;
  gen_compute_t kind = bwd ? GEN_ATTENTION_BWD : GEN_ATTENTION_FWD;
  if (!g->w->training.flash_attention) { /* unfused: scores materialised, softmax apart */
    int x = dep;
    for (int pass = 0; pass < (bwd ? 2 : 1); pass++) { /* backward: dgrad and wgrad */
      x = shaped(g, GEN_MATMUL, s, s, wd.qk, b * heads, 0, x);
      x = vec(g, GEN_SOFTMAX, b * heads * s, s, x);
      if (pass == 0)
        x = dropout(g, b * heads * s, s, x);
      x = shaped(g, GEN_MATMUL, s, wd.v, s, b * heads, 0, x);
    }
    return x;
  }
  int u = workload_cp_ulysses(par), ring = par->cp / u;
  /* Ulysses with fewer key/value heads than its degree repeats them up to it
   * (as MindSpeed and DeepSpeed do) */
  kv = fmax(kv, u);
  double qkv = heads * wd.qk + kv * (wd.qk + wd.v), out = heads * wd.v;
  int x = ulysses_exchange(g, bwd ? out : qkv, dep);
  heads /= u, kv /= u, s *= u; /* after Ulysses: fewer heads over a longer sequence block */
  /* allgather: every rank's keys and values first; the backward reduces their
   * gradients back after the blocks */
  double kv_all = b * (double)m->seq_len * kv * (wd.qk + wd.v) * g->e;
  bool gather = par->cp_algo == CP_ALLGATHER;
  if (gather)
    x = coll(g, GEN_ALLGATHER, g->cp_coll, COMM_CP_GATHER, kv_all, x);
  /* ring attention: each step attends the key/value block received in the
   * previous one while passing it on */
  int block = x; /* this rank's own keys and values are ready */
  x = shaped(g, kind, b, heads, s, d, kv, x);
  /* keys and values; the backward also passes their gradients around */
  double kv_bytes = (bwd ? 2 : 1) * b * s * kv * (wd.qk + wd.v) * g->e;
  for (int step = 1; step < ring; step++) {
    if (gather) {
      x = shaped(g, kind, b, heads, s, d, kv, x);
      continue;
    }
    beside(g, x, p2p(g, TRACE_OP_SEND, TRAIN_PART_CP, g->cp_send, g->cp_next, g->tag_cp,
                     kv_bytes, block));
    block = p2p(g, TRACE_OP_RECV, TRAIN_PART_CP, g->cp_recv, g->cp_prev, g->tag_cp, kv_bytes, -1);
    int joined = join(g, x, block);
    x = shaped(g, kind, b, heads, s, d, kv, joined);
  }
  if (gather && bwd)
    x = coll(g, GEN_REDUCESCATTER, g->cp_coll, COMM_CP_GATHER, kv_all, x);
  return ulysses_exchange(g, bwd ? qkv : out, x);
}

/* Backward of a column-parallel linear (QKV, MLP up, LM head) of `tokens` rows
 * with n output columns per rank and k inputs. Megatron gathers the input's
 * saved sequence shard again while the data gradient is computed, then reduces
 * the input gradient (scatter with sequence parallelism, allreduce without) on
 * the TP stream while the weight gradient is computed. */
static int column_backward(gen_t *g, double tokens, double n, double k, int dep) {
  const parallel_cfg_t *par = &g->w->parallel;
  if (par->tp == 1)
    return wgrad(g, k, n, tokens, 0, mm(g, tokens, k, n, dep), -1);
  int gather = par->sequence_parallel
                   ? coll(g, GEN_ALLGATHER, g->tp, COMM_TP, tokens * k * g->e, dep)
                   : dep;
  int dgrad = mm(g, tokens, k, n, dep);
  int reduce = tp_exit(g, dgrad);
  if (gather != dep)
    beside(g, dgrad, gather);
  if (g->defer_weights) { /* the input gradient's reduction left exposed */
    wgrad(g, k, n, tokens, 0, gather, gather != dep ? gather : -1);
    return join(g, dgrad, reduce);
  }
  int w = wgrad(g, k, n, tokens, 0, gather, -1);
  beside(g, w, reduce);
  return join(g, w, reduce);
}

/* Up projection, activation, down projection of `tokens` rows through `f`
 * columns per rank, as `batch` independent experts (1: a dense MLP); the
 * backward runs down then up, each as its dgrad and wgrad matmuls, and a dense
 * MLP (`column`) leaves the tensor-parallel region in its up projection's
 * backward. */
static int ffn(gen_t *g, double tokens, double f, double batch, bool column, bool bwd,
               int dep) {
  const model_cfg_t *m = &g->w->model;
  double h = m->hidden;
  bool gated = xf_gated(m);
  gen_compute_t act = m->activation == ACTIVATION_SWIGLU  ? GEN_SWIGLU
                      : m->activation == ACTIVATION_GEGLU ? GEN_GEGLU
                                                          : GEN_GELU;
  double up = gated ? 2 * f : f, rows = tokens * batch;
  if (!bwd) {
    int x = shaped(g, GEN_MATMUL, tokens, up, h, batch, 0, dep);
    x = vec(g, act, rows, f, x);
    return shaped(g, GEN_MATMUL, tokens, h, f, batch, 0, x);
  }
  int x = shaped(g, GEN_MATMUL, tokens, f, h, batch, 0, dep); /* down: dgrad, wgrad */
  x = wgrad(g, f, h, tokens, batch, x, -1);
  x = vec(g, act, rows, f, x);
  if (column)
    return column_backward(g, tokens, up, h, x);
  x = shaped(g, GEN_MATMUL, tokens, h, up, batch, 0, x); /* up: dgrad, wgrad */
  return wgrad(g, h, up, tokens, batch, x, -1);
}

/* The tokens a rank's picks of zero-computation experts send (model.moe.
 * zero_experts): as MindSpeed-LLM runs them, through their own dispatch and
 * combine all-to-alls over the EP group, scaled by the router's weight on
 * arrival. Returns what follows them. */
static int zero_experts(gen_t *g, double rows, int x) {
  const model_cfg_t *m = &g->w->model;
  const parallel_cfg_t *par = &g->w->parallel;
  double picks = rows * (m->moe.top_k - xf_routed_k(m));
  if (m->moe.zero_experts == 0 || picks <= 0)
    return x;
  double a2a = par->ep > 1 ? picks * m->hidden * g->e : 0;
  x = coll(g, GEN_ALLTOALL, g->ep, COMM_EP, a2a, x);
  x = vec(g, GEN_MUL, picks, m->hidden, x);
  return coll(g, GEN_ALLTOALL, g->ep, COMM_EP, a2a, x);
}

/* Whether the experts are folded over the tensor-parallel ranks (etp other
 * than tp, parallel.etp). */
static bool ep_folded(const parallel_cfg_t *par) {
  return par->etp != par->tp;
}

/* Whether folded experts are split over an ETP group of their own (etp > 1):
 * Megatron-Core's expert grid ETP x EP x EDP over tp x cp x dp, ETP innermost.
 * Each expert's width is split over it, and the tokens the dispatch brings are
 * gathered over it before the experts and reduce-scattered after them. */
static bool etp_split(const parallel_cfg_t *par) {
  return ep_folded(par) && par->etp > 1;
}

/* The router and the routed experts between their all-to-alls (dispatch and
 * combine, reversed in the backward), for `rows` tokens of this rank whose
 * experts are `width` wide on it; the experts see the busiest EP rank's tokens
 * (moe_routing.h); then the picks of zero-computation experts. */
static int routed_experts(gen_t *g, double rows, double width, bool bwd, int x) {
  const moe_cfg_t *moe = &g->w->model.moe;
  const parallel_cfg_t *par = &g->w->parallel;
  double h = g->w->model.hidden, local = (double)moe->experts / par->ep;
  double routed = rows * xf_routed_k(&g->w->model) * moe->capacity_factor * g->moe_skew;
  double a2a = par->ep > 1 ? routed * h * g->e : 0;
  if (!bwd)
    x = mm(g, rows, moe->experts, h, x);
  /* Megatron-Core's permutation (moe_utils.py permute): each routed copy of a
   * token moved to its expert's rows before the dispatch, and back, weighted
   * and summed, after the combine (unpermute); the backward moves the gradients
   * the same ways. Memory-bound copies of routed x h each. */
  x = vec(g, GEN_COPY, routed, h, x);
  x = coll(g, GEN_ALLTOALL, g->ep, COMM_EP, a2a, x);
  double etp = etp_split(par) ? par->etp : 1, gathered = routed * etp * h * g->e;
  if (etp > 1) /* the ETP group's tokens to each of its ranks (the same in the backward) */
    x = coll(g, GEN_ALLGATHER, g->ep, COMM_ETP, gathered, x);
  x = ffn(g, routed * etp / local, width, local, false, bwd, x);
  if (etp > 1)
    x = coll(g, GEN_REDUCESCATTER, g->ep, COMM_ETP, gathered, x);
  x = coll(g, GEN_ALLTOALL, g->ep, COMM_EP, a2a, x);
  x = vec(g, GEN_COPY, routed, h, x);
  x = zero_experts(g, rows, x);
  if (bwd) { /* router: dgrad, wgrad */
    x = mm(g, rows, h, moe->experts, x);
    x = wgrad(g, h, moe->experts, rows, 0, x, -1);
  }
  return x;
}

/* A MoE block with its experts folded over the tensor-parallel ranks
 * (Megatron-Core's MoE parallel folding, expert tensor parallelism other than
 * tp): each rank routes its own sequence shard (sequence parallelism, tk / tp
 * tokens) and dispatches it over the EP group, which may span TP ranks; its
 * local experts are whole (etp 1) or split over the ETP group (etp_split).
 * The shared experts stay a TP-split MLP on the gathered sequence, after the
 * routed ones (before them in the backward). */
static int moe_folded(gen_t *g, bool bwd, int x) {
  const moe_cfg_t *moe = &g->w->model.moe;
  double t = g->w->parallel.tp, shared = moe->shared_experts * moe->expert_ffn_hidden / t;
  if (bwd && shared > 0)
    x = tp_exit(g, ffn(g, g->tokens, shared, 1, false, true, tp_enter(g, x)));
  x = routed_experts(g, g->tokens / t, moe->expert_ffn_hidden / g->w->parallel.etp, bwd, x);
  if (!bwd && shared > 0)
    x = tp_exit(g, ffn(g, g->tokens, shared, 1, false, false, tp_enter(g, x)));
  return x;
}

/* The dense MLP (moe false), or the router, the routed experts between their
 * all-to-alls and the shared experts, all on the TP group's tokens (each
 * expert split over it). */
static int mlp(gen_t *g, bool moe_block, bool bwd, int dep) {
  const model_cfg_t *m = &g->w->model;
  double tk = g->tokens, t = g->w->parallel.tp;
  if (!moe_block)
    return ffn(g, tk, m->ffn_hidden / t, 1, true, bwd, dep);
  const moe_cfg_t *moe = &m->moe;
  double fe = moe->expert_ffn_hidden / t;
  int x = routed_experts(g, tk, fe, bwd, dep);
  if (moe->shared_experts)
    x = ffn(g, tk, moe->shared_experts * fe, 1, false, bwd, x);
  return bwd ? tp_exit(g, x) : x;
}

/* Rotary position embedding of this rank's queries and keys (none with a
 * learned position table). */
static int rotary(gen_t *g, int dep) {
  const model_cfg_t *m = &g->w->model;
  double t = g->w->parallel.tp;
  if (m->has_mla) /* the queries' rotary parts and the key's one, shared by all heads */
    return vec(g, GEN_ROPE, g->tokens, (m->heads / t + 1) * m->mla.qk_rope_head_dim, dep);
  if (m->position != POSITION_ROPE)
    return dep;
  double d = xf_head_dim(m);
  return vec(g, GEN_ROPE, g->tokens, (m->heads + m->kv_heads) * d / t, dep);
}

/* The widths of one rank's query, key and value projections. Grouped-query
 * attention: one fused matmul, `fused` wide. Multi-head latent attention: the
 * queries' up projection (q_up, from q_lora_rank, or from hidden without it),
 * the latent and shared rotary key's down projection (kv_down, whole on every
 * rank: transformer.h), the keys' and values' up projection (kv_up). */
typedef struct {
  double fused, q_up, kv_down, kv_up;
} qkv_widths_t;

static qkv_widths_t qkv_widths(const model_cfg_t *m, double tp) {
  if (!m->has_mla)
    return (qkv_widths_t){.fused = (m->heads + 2.0 * m->kv_heads) * xf_head_dim(m) / tp};
  const mla_cfg_t *a = &m->mla;
  double hl = m->heads / tp;
  return (qkv_widths_t){0, hl * ((double)a->qk_nope_head_dim + a->qk_rope_head_dim),
                        (double)a->kv_lora_rank + a->qk_rope_head_dim,
                        hl * ((double)a->qk_nope_head_dim + a->v_head_dim)};
}

/* The query, key and value projections of one rank: grouped-query attention's
 * one fused column-parallel matmul, or multi-head latent attention as
 * Megatron-Core trains it (not absorbed): the queries through their low-rank
 * pair (or directly), the latent and the shared rotary key from one down
 * projection, the latents normed, then every local head's no-rope key and
 * value rebuilt from the latent. */
static int qkv_forward(gen_t *g, int x) {
  const model_cfg_t *m = &g->w->model;
  double tk = g->tokens, h = m->hidden;
  qkv_widths_t w = qkv_widths(m, g->w->parallel.tp);
  if (!m->has_mla)
    return mm(g, tk, w.fused, h, x);
  const mla_cfg_t *a = &m->mla;
  if (a->q_lora_rank) {
    x = mm(g, tk, a->q_lora_rank, h, x);
    x = vec(g, norm_kind(m), tk, a->q_lora_rank, x);
    x = mm(g, tk, w.q_up, a->q_lora_rank, x);
  } else {
    x = mm(g, tk, w.q_up, h, x);
  }
  x = mm(g, tk, w.kv_down, h, x);
  x = vec(g, norm_kind(m), tk, a->kv_lora_rank, x);
  return mm(g, tk, w.kv_up, a->kv_lora_rank, x);
}

/* The backward of qkv_forward: MLA's up projections (dgrad, wgrad) and their
 * norms, then the projections from the hidden state as one column-parallel
 * linear, whose input gradient is reduced over the tensor-parallel group [A:
 * Megatron-Core reduces the latents' gradients instead; the same order of
 * bytes]. */
static int qkv_backward(gen_t *g, int x) {
  const model_cfg_t *m = &g->w->model;
  double tk = g->tokens, h = m->hidden;
  qkv_widths_t w = qkv_widths(m, g->w->parallel.tp);
  if (!m->has_mla)
    return column_backward(g, tk, w.fused, h, x);
  const mla_cfg_t *a = &m->mla;
  x = mm(g, tk, a->kv_lora_rank, w.kv_up, x);
  x = wgrad(g, a->kv_lora_rank, w.kv_up, tk, 0, x, -1);
  x = vec(g, norm_kind(m), tk, a->kv_lora_rank, x);
  double down = w.kv_down + (a->q_lora_rank ? a->q_lora_rank : w.q_up);
  if (a->q_lora_rank) {
    x = mm(g, tk, a->q_lora_rank, w.q_up, x);
    x = wgrad(g, a->q_lora_rank, w.q_up, tk, 0, x, -1);
    x = vec(g, norm_kind(m), tk, a->q_lora_rank, x);
  }
  return column_backward(g, tk, down, h, x);
}

/* The output projection's input width on one rank: the local heads' values. */
static double out_proj_width(const model_cfg_t *m, int tp) {
  return (double)m->heads * xf_attention_widths(m).v / tp;
}

/* Rows of a [tokens, hidden] activation on this rank: the sequence's shard
 * with sequence parallelism, where norms, dropout and residual adds run. */
static double shard_rows(const gen_t *g) {
  const parallel_cfg_t *par = &g->w->parallel;
  return par->sequence_parallel ? g->tokens / par->tp : g->tokens;
}

/* A norm, the attention block and its residual add. */
static int attention_forward(gen_t *g, int dep) {
  const model_cfg_t *m = &g->w->model;
  double tk = g->tokens, h = m->hidden, rows = shard_rows(g);
  int x = vec(g, norm_kind(m), rows, h, dep);
  x = tp_enter(g, x);
  x = qkv_forward(g, x);
  x = rotary(g, x);
  x = attention(g, false, x);
  x = mm(g, tk, h, out_proj_width(m, g->w->parallel.tp), x);
  x = tp_exit_fused(g, x);
  return vec(g, GEN_ADD, rows, h, dropout(g, rows, h, x));
}

/* A norm, the dense MLP or the MoE block, and its residual add. */
static int mlp_forward(gen_t *g, bool moe_block, int dep) {
  const model_cfg_t *m = &g->w->model;
  double h = m->hidden, rows = shard_rows(g);
  int x = vec(g, norm_kind(m), rows, h, dep);
  if (moe_block && ep_folded(&g->w->parallel))
    x = moe_folded(g, false, x);
  else
    x = tp_exit_fused(g, mlp(g, moe_block, false, tp_enter(g, x)));
  return vec(g, GEN_ADD, rows, h, dropout(g, rows, h, x));
}

/* A layer: attention then its MLP or MoE block; LongCat-Flash's MoE layer
 * (model.moe.shortcut) is an attention block, the MoE block and a dense MLP
 * on its output, then a second attention block and dense MLP, run in turn as
 * MindSpeed-LLM runs them (the dense MLP takes its own norm of the same
 * input [A]: one norm more than the model has). */
static int layer_forward(gen_t *g, int dep) {
  bool moe = layer_moe(g);
  int x = mlp_forward(g, moe, attention_forward(g, dep));
  if (xf_attention_blocks(&g->w->model, moe) == 2)
    x = mlp_forward(g, false, attention_forward(g, mlp_forward(g, false, x)));
  return x;
}

/* The backward of mlp_forward: the residual's gradient joins after its norm. */
static int mlp_backward(gen_t *g, bool moe_block, int dep) {
  const model_cfg_t *m = &g->w->model;
  double h = m->hidden, rows = shard_rows(g);
  int x = dropout(g, rows, h, dep);
  if (moe_block && ep_folded(&g->w->parallel))
    x = moe_folded(g, true, x);
  else /* the mirror of the forward's exit; leaves the tensor-parallel region */
    x = mlp(g, moe_block, true, tp_enter(g, x));
  x = vec(g, norm_kind(m), rows, h, x);
  return vec(g, GEN_ADD, rows, h, x); /* the residual's gradient joins */
}

/* The backward of attention_forward. */
static int attention_backward(gen_t *g, int dep) {
  const model_cfg_t *m = &g->w->model;
  const parallel_cfg_t *par = &g->w->parallel;
  double tk = g->tokens, h = m->hidden, rows = shard_rows(g), o = out_proj_width(m, par->tp);
  int x = dropout(g, rows, h, dep);
  x = tp_enter(g, x);
  x = mm(g, tk, o, h, x); /* output projection: dgrad, wgrad */
  x = wgrad(g, o, h, tk, 0, x, -1);
  if (par->recompute == RECOMPUTE_SELECTIVE)
    x = attention(g, false, x);
  x = attention(g, true, x);
  x = rotary(g, x);
  x = qkv_backward(g, x);
  x = vec(g, norm_kind(m), rows, h, x);
  return vec(g, GEN_ADD, rows, h, x); /* the residual's gradient joins */
}

static int layer_backward(gen_t *g, int dep) {
  bool moe = layer_moe(g);
  int x = dep;
  if (g->w->parallel.recompute == RECOMPUTE_FULL)
    x = layer_forward(g, x);
  if (xf_attention_blocks(&g->w->model, moe) == 2)
    x = mlp_backward(g, false, attention_backward(g, mlp_backward(g, false, x)));
  return attention_backward(g, mlp_backward(g, moe, x));
}

/* ---- parameters, gradients, buckets ---- */

/* The weights' split in training: experts over ep ranks, each expert's width
 * over the tensor-parallel group, as Megatron splits them. */
static xf_split_t train_split(const workload_cfg_t *w) {
  const parallel_cfg_t *par = &w->parallel;
  return (xf_split_t){par->tp, par->ep, par->ep * par->etp};
}

/* Parameters of one layer on one rank, and of its routed experts. */
static double layer_params(const workload_cfg_t *w, bool moe) {
  xf_split_t split = train_split(w);
  xf_params_t p = xf_layer_params(&w->model, &split, moe);
  return xf_params_total(&p);
}

static double routed_expert_params(const workload_cfg_t *w, bool moe) {
  xf_split_t split = train_split(w);
  return xf_layer_params(&w->model, &split, moe).experts;
}

/* Ranks holding a replica of a dense parameter, and of a routed expert's. */
static double dense_replicas(const parallel_cfg_t *par) { return (double)par->dp * par->cp; }

/* Ranks one ZeRO shard of a dense parameter spans: all its replicas, or the
 * hybrid shard group (zero_shard_size). */
static double dense_shards(const parallel_cfg_t *par) {
  return par->zero_shard_size > 0 ? par->zero_shard_size : dense_replicas(par);
}
static double expert_replicas(const parallel_cfg_t *par) {
  return (double)par->tp * par->dp * par->cp / ((double)par->ep * par->etp);
}

/* A gradient reduction over the replicas of its parameters (COMM_DP, or
 * COMM_EDP for experts), on the dp stream. */
static void add_bucket(gen_t *g, gen_comm_t comm, double replicas, double bytes, int dep) {
  const parallel_cfg_t *par = &g->w->parallel;
  if (replicas == 1 || bytes <= 0)
    return;
  gen_coll_t kind = par->zero >= 1 ? GEN_REDUCESCATTER : GEN_ALLREDUCE;
  g->last_bucket_op = coll(g, kind, g->dp, comm, bytes, dep);
  double shards = dense_shards(par);
  if (comm == COMM_DP && par->zero >= 1 && shards < replicas) /* HSDP: across the groups */
    g->last_bucket_op = coll(g, GEN_ALLREDUCE, g->dp, COMM_DP_REPLICAS, bytes / shards,
                             g->last_bucket_op);
}

/* Reduces the gradients handed over so far. */
static void flush_grads(gen_t *g, int dep) {
  add_bucket(g, COMM_DP, dense_replicas(&g->w->parallel), g->grad_pending, dep);
  add_bucket(g, COMM_EDP, expert_replicas(&g->w->parallel), g->expert_pending, dep);
  g->grad_pending = g->expert_pending = 0;
}

/* ZeRO-3 keeps a shard of each layer's parameters: gathers the layer before
 * its forward and its backward (dense parameters and routed experts each from
 * their replicas), prefetched while the layer before it runs (*prefetch: the
 * op that started that layer). Returns what the layer waits for. */
static int gather_params(gen_t *g, int *prefetch, int x) {
  const parallel_cfg_t *par = &g->w->parallel;
  if (par->zero < 3 || dense_shards(par) == 1)
    return x;
  bool moe = layer_moe(g);
  double experts = routed_expert_params(g->w, moe), dense = layer_params(g->w, moe) - experts;
  int p = coll(g, GEN_ALLGATHER, g->zero, COMM_DP_PARAMS, dense * g->e, *prefetch);
  if (expert_replicas(par) > 1)
    p = coll(g, GEN_ALLGATHER, g->zero, COMM_EDP_PARAMS, experts * g->e, p);
  *prefetch = x;
  return join(g, x, p);
}

/* Hands a layer's gradients (dense and routed-expert bytes) to the data-parallel
 * reduction: bucket by bucket when overlapping, all at the end otherwise;
 * during the last micro-batch, or (ZeRO-2/3, whose ranks keep only their shard
 * of the gradients) during each. */
static void grads_ready(gen_t *g, double dense, double experts, int dep, bool last_microbatch) {
  if (g->defer_weights) { /* when the weight gradients are computed */
    deferred_t *d = defer_push(g, DEFER_GRADS);
    d->dense = dense;
    d->experts = experts;
    d->last_mb = last_microbatch;
    return;
  }
  g->last_grad_op = dep;
  if (!last_microbatch && g->w->parallel.zero < 2) /* accumulate into the same buffer */
    return;
  g->grad_pending += dense;
  g->expert_pending += experts;
  const training_cfg_t *tr = &g->w->training;
  if (tr->overlap_grad_reduce && g->grad_pending + g->expert_pending >= tr->grad_bucket_bytes)
    flush_grads(g, dep);
}

/* ---- a pipeline stage ---- */

typedef struct {
  int stage, pp, vpp;
  bool v_shape;     /* DualPipeV: chunk 1 runs back up the stages, the loss on stage 0 */
  int most_layers;  /* of its model chunks, the one with the most layers: that many */
  long microbatches;
  double act_bytes; /* activation or gradient passed between stages */
} stage_t;

/* Rank offsets of the next and previous pipeline stage; the last stage's next
 * is the first (interleaving wraps chunks around the ring of stages). */
static int pp_next(const gen_t *g, const stage_t *st) {
  return st->stage == st->pp - 1 ? -(st->pp - 1) * g->stride_pp : g->stride_pp;
}

static int pp_prev(const gen_t *g, const stage_t *st) {
  return st->stage == 0 ? (st->pp - 1) * g->stride_pp : -g->stride_pp;
}

/* Whether a pass's messages run down the stages (received from the previous,
 * sent to the next): forwards do, backwards run up; DualPipeV's chunk 1 the
 * other way round. */
static bool runs_down(const stage_t *st, int chunk, bool bwd) {
  return (st->v_shape && chunk == 1) == bwd;
}

/* DualPipeV's last stage, where the V turns: chunk 0's forward hands its output
 * to chunk 1's, and chunk 1's backward to chunk 0's, with no message. */
static bool v_turn(const stage_t *st) {
  return st->v_shape && st->stage == st->pp - 1;
}

/* The message a pass of `chunk` receives its input in (DualPipeV's chunk 1 on
 * streams of its own, so that each stream carries one flow in micro-batch
 * order). */
static int pass_recv(gen_t *g, const stage_t *st, int chunk, bool bwd) {
  bool down = runs_down(st, chunk, bwd), v1 = st->v_shape && chunk == 1;
  int stream = down ? (v1 ? g->v_recv_prev : g->recv_prev) : (v1 ? g->v_recv_next : g->recv_next);
  return p2p(g, TRACE_OP_RECV, TRAIN_PART_PP, stream, down ? pp_prev(g, st) : pp_next(g, st),
             bwd ? g->tag_bwd : g->tag_fwd, st->act_bytes, -1);
}

/* Sends a pass's output on; returns what the compute stream goes on after. */
static int pass_send(gen_t *g, const stage_t *st, int chunk, bool bwd, int x);

/* Megatron's scatter/gather of pipeline messages: each rank of a TP group
 * sends and receives 1/tp of the activation (over its own NIC); without
 * sequence parallelism the receivers then allgather it over the scale-up
 * links. Returns the op the next chunk waits for. */
static int gathered(gen_t *g, int recv) {
  const parallel_cfg_t *par = &g->w->parallel;
  if (par->tp == 1 || par->sequence_parallel)
    return recv;
  return coll(g, GEN_ALLGATHER, g->tp, COMM_TP, g->tokens * g->w->model.hidden * g->e, recv);
}

/* Megatron's pipeline sends block the compute stream until the transfer is
 * done, unless overlap_p2p_comm lets the next chunk start at once. */
static int sent_wait(gen_t *g, int last_compute, int send) {
  if (g->w->training.overlap_p2p_comm)
    return last_compute;
  return join(g, last_compute, send);
}

static int pass_send(gen_t *g, const stage_t *st, int chunk, bool bwd, int x) {
  bool down = runs_down(st, chunk, bwd), v1 = st->v_shape && chunk == 1;
  int stream = down ? (v1 ? g->v_send_next : g->send_next) : (v1 ? g->v_send_prev : g->send_prev);
  int sent = p2p(g, TRACE_OP_SEND, TRAIN_PART_PP, stream, down ? pp_next(g, st) : pp_prev(g, st),
                 bwd ? g->tag_bwd : g->tag_fwd, st->act_bytes, x);
  return sent_wait(g, x, sent);
}

/* The final norm, the LM head and the loss of the last stage. */
static int head_forward(gen_t *g, int x) {
  const model_cfg_t *m = &g->w->model;
  double tk = g->tokens, h = m->hidden, t = g->w->parallel.tp, vocab = (double)m->vocab / t;
  x = vec(g, norm_kind(m), shard_rows(g), h, x);
  x = tp_enter(g, x);
  x = mm(g, tk, vocab, h, x);
  return vec(g, GEN_CROSS_ENTROPY, tk, vocab, x);
}

/* The loss's and the LM head's backward (dgrad, wgrad), the final norm's. */
static int head_backward(gen_t *g, int x) {
  const model_cfg_t *m = &g->w->model;
  double tk = g->tokens, h = m->hidden, t = g->w->parallel.tp, vocab = (double)m->vocab / t;
  if (g->w->training.cross_entropy_kernels == KERNELS_UNFUSED) {
    /* log-softmax's backward: reads its output and the gradient, writes the input
     * gradient - a mul's bytes (NLL's backward scatter into zeros not counted) */
    x = vec(g, GEN_MUL, tk, vocab, x);
    g->p->ops[x].unfused = true;
  }
  x = column_backward(g, tk, vocab, h, x);
  return vec(g, norm_kind(m), shard_rows(g), h, x);
}

/* Multi-token prediction module k (transformer.h), after the main head on the
 * last stage: the hidden state and the next token's embedding (looked up
 * again) each normed, projected together (2 hidden -> hidden, column-parallel,
 * its output gathered over the tensor-parallel group), one layer, then the
 * shared final norm, LM head and loss. Its layer counts as layer layers + k. */
static int mtp_forward(gen_t *g, int k, int x) {
  const model_cfg_t *m = &g->w->model;
  double tk = g->tokens, h = m->hidden, t = g->w->parallel.tp, rows = shard_rows(g);
  g->at.layer = m->layers + k;
  x = vec(g, GEN_COPY, tk, h, x); /* the shifted tokens' embedding */
  x = vec(g, norm_kind(m), rows, h, x);
  x = vec(g, norm_kind(m), rows, h, x);
  x = tp_enter(g, x);
  x = mm(g, tk, h / t, 2 * h, x);
  if (t > 1)
    x = coll(g, GEN_ALLGATHER, g->tp, COMM_TP, tk * h * g->e, x);
  x = layer_forward(g, x);
  return head_forward(g, x);
}

/* The backward of mtp_forward; the module's own weights' gradients are ready
 * after it (the LM head's add to the main head's). */
static int mtp_backward(gen_t *g, int k, bool last_mb, int x) {
  const model_cfg_t *m = &g->w->model;
  double tk = g->tokens, h = m->hidden, t = g->w->parallel.tp, rows = shard_rows(g);
  double grad_bytes = workload_grad_bytes(g->w);
  g->at.layer = m->layers + k;
  x = head_backward(g, x);
  x = layer_backward(g, x);
  bool moe = xf_mtp_is_moe(m);
  double expert_grad = routed_expert_params(g->w, moe) * grad_bytes;
  grads_ready(g, layer_params(g->w, moe) * grad_bytes - expert_grad, expert_grad, x, last_mb);
  x = mm(g, tk, 2 * h, h / t, x); /* the projection: dgrad, wgrad */
  x = wgrad(g, 2 * h, h / t, tk, 0, x, -1);
  x = tp_exit(g, x);
  x = vec(g, norm_kind(m), rows, h, x);
  x = vec(g, norm_kind(m), rows, h, x);
  grads_ready(g, xf_mtp_extra_params(m, g->w->parallel.tp) * grad_bytes, 0, x, last_mb);
  return x;
}

/* Forward or backward of one chunk of layers for one micro-batch. */
static int chunk_pass(gen_t *g, const stage_t *st, int chunk, long mb, bool bwd, int last_op) {
  const model_cfg_t *m = &g->w->model;
  const parallel_cfg_t *par = &g->w->parallel;
  bool first_virtual = st->stage == 0 && chunk == 0;
  bool last_virtual = st->v_shape ? st->stage == 0 && chunk == 1
                                  : st->stage == st->pp - 1 && chunk == st->vpp - 1;
  /* at the V's turn chunk 1's forward and chunk 0's backward take the other
   * chunk's output in place of a message */
  int *turn_in = v_turn(st) ? (bwd ? (chunk == 0 ? g->turn_bwd : NULL)
                                   : (chunk == 1 ? g->turn_fwd : NULL))
                            : NULL;
  int *turn_out = v_turn(st) ? (bwd ? (chunk == 1 ? g->turn_bwd : NULL)
                                    : (chunk == 0 ? g->turn_fwd : NULL))
                             : NULL;
  double tk = g->tokens, h = m->hidden, t = par->tp, vocab = (double)m->vocab / t;
  double grad_bytes = workload_grad_bytes(g->w);
  bool last_mb = mb == st->microbatches - 1;
  int x = last_op;
  /* the model's layer l of this chunk (its virtual stage:
   * workload_virtual_stage) */
  int layer0, nlayers = workload_chunk_layers(g->w, st->stage, chunk, &layer0);
  g->at = (train_where_t){-1, (int)mb, bwd ? TRAIN_PASS_BWD : TRAIN_PASS_FWD};
  /* input: from the previous virtual stage, or the embedding */
  int in = -1;
  if ((bwd ? !last_virtual : !first_virtual) && !turn_in)
    in = pass_recv(g, st, chunk, bwd);
  if (!bwd) {
    if (first_virtual) {
      x = vec(g, GEN_COPY, tk, h, x); /* embedding lookup */
      if (m->position == POSITION_LEARNED)
        x = vec(g, GEN_ADD, tk, h, x); /* position table */
      x = tp_exit(g, x);
    } else {
      x = join(g, x, turn_in ? turn_in[mb] : gathered(g, in));
    }
    if (g->chunk_gather && mb == 0) /* the chunk's parameters, gathered beside the step */
      x = join(g, x, g->chunk_gather[chunk]);
    for (int l = 0, prefetch = x; l < nlayers; l++) {
      g->at.layer = layer0 + l;
      x = layer_forward(g, gather_params(g, &prefetch, x));
    }
    g->at.layer = -1;
    if (last_virtual) {
      x = head_forward(g, x);
      for (int k = 0; k < m->mtp_layers; k++)
        x = mtp_forward(g, k, x);
      g->at.layer = -1;
    } else if (turn_out) {
      turn_out[mb] = x;
    } else {
      x = pass_send(g, st, chunk, false, x);
    }
    return x;
  }
  if (last_virtual) {
    for (int k = m->mtp_layers - 1; k >= 0; k--)
      x = mtp_backward(g, k, last_mb, x);
    g->at.layer = -1;
    x = head_backward(g, x);
    grads_ready(g, h * vocab * grad_bytes, 0, x, last_mb);
  } else {
    x = join(g, x, turn_in ? turn_in[mb] : gathered(g, in));
  }
  for (int l = nlayers - 1, prefetch = x; l >= 0; l--) { /* last layer first */
    g->at.layer = layer0 + l;
    x = layer_backward(g, gather_params(g, &prefetch, x));
    double expert_grad = routed_expert_params(g->w, layer_moe(g)) * grad_bytes;
    grads_ready(g, layer_params(g->w, layer_moe(g)) * grad_bytes - expert_grad, expert_grad, x,
                last_mb);
  }
  g->at.layer = -1;
  if (first_virtual) {
    x = tp_enter(g, x); /* the mirror of the embedding's scatter */
    x = vec(g, GEN_ADD, tk, h, x); /* embedding gradient */
    double table = m->position == POSITION_LEARNED ? (double)m->seq_len * h : 0;
    grads_ready(g, (h * vocab + table) * grad_bytes, 0, x, last_mb);
  } else if (turn_out) {
    turn_out[mb] = x;
  } else {
    x = pass_send(g, st, chunk, true, x);
  }
  if (par->zero >= 2 && !last_mb) { /* this micro-batch's shard is reduced now */
    if (g->defer_weights)
      defer_push(g, DEFER_FLUSH);
    else
      flush_grads(g, g->last_grad_op);
  }
  return x;
}

/* ---- 1F1B with the all-to-alls overlapped (training.overlap_moe_a2a) ---- */

static bool is_ep_alltoall(const gen_t *g, int i) {
  return g->p->ops[i].type == TRACE_OP_COLL && g->p->ops[i].comm == COMM_EP;
}

/* Splits ops [from, to) into segments: a new one where the layer changes and
 * after each EP all-to-all. Returns how many; starts[k] is segment k's first
 * op, starts[n] = to. */
static int pass_segments(const gen_t *g, int from, int to, int *starts) {
  int n = 0;
  for (int i = from; i < to; i++)
    if (i == from || g->info->where[i].layer != g->info->where[i - 1].layer ||
        is_ep_alltoall(g, i - 1))
      starts[n++] = i;
  starts[n] = to;
  return n;
}

/* A kernel's size, to find a segment's largest: the product of its dims. */
static double kernel_size(const trace_op_t *op) {
  double size = 1;
  for (int d = 0; d < 4; d++)
    size *= op->dims[d] > 0 ? (double)op->dims[d] : 1;
  return op->type == TRACE_OP_SHAPED ? size : 0;
}

/* Moves ops [start, end) of the program to `order` (old indices, in their new
 * order), with their parts and places; remaps every index into the range (deps,
 * overlaps, ids, the gradient state); new_of[i - start] gets op i's new index. */
static void reorder_ops(gen_t *g, int start, int end, const int *order, int *new_of) {
  int n = end - start;
  trace_op_t *ops = malloc((size_t)n * sizeof *ops);
  train_part_t *parts = malloc((size_t)n * sizeof *parts);
  train_where_t *where = malloc((size_t)n * sizeof *where);
  for (int k = 0; k < n; k++) {
    new_of[order[k] - start] = start + k;
    ops[k] = g->p->ops[order[k]];
    parts[k] = g->info->parts[order[k]];
    where[k] = g->info->where[order[k]];
  }
#define REMAP(i) ((i) >= start && (i) < end ? new_of[(i) - start] : (i))
  for (int k = 0; k < n; k++) {
    trace_op_t *op = &ops[k];
    op->id = start + k;
    for (int d = 0; d < op->ndeps; d++)
      op->deps[d] = REMAP(op->deps[d]);
    if (op->overlapping)
      op->overlaps = REMAP(op->overlaps);
  }
  g->last_grad_op = REMAP(g->last_grad_op);
  g->last_bucket_op = REMAP(g->last_bucket_op);
  for (long mb = 0; g->turn_fwd && mb < g->turns; mb++) { /* DualPipeV's hand-overs */
    g->turn_fwd[mb] = REMAP(g->turn_fwd[mb]);
    g->turn_bwd[mb] = REMAP(g->turn_bwd[mb]);
  }
#undef REMAP
  memcpy(&g->p->ops[start], ops, (size_t)n * sizeof *ops);
  memcpy(&g->info->parts[start], parts, (size_t)n * sizeof *parts);
  memcpy(&g->info->where[start], where, (size_t)n * sizeof *where);
  free(ops);
  free(parts);
  free(where);
}

/* A forward and a backward of two micro-batches as one merged pass, as
 * Megatron-Core's 1F1B all-to-all overlap runs them: both generated from the
 * same predecessor, then their segments (pass_segments) taken in turn, the
 * backward's first, so that each one's dispatch or combine runs on the EP
 * stream while the other's next segment computes: per MoE layer, the
 * backward's combine beside the forward's attention, the forward's dispatch
 * beside the backward's experts, the backward's dispatch beside the forward's
 * experts, the forward's combine beside the backward's attention. The largest kernel of a segment that follows the
 * other's all-to-all runs beside it (collectives.compute_slowdown: the
 * transfer's kernels take cores). Returns the op that ends both. */
static int merged_pass(gen_t *g, const stage_t *st, pipeline_step_t fwd, pipeline_step_t bwd,
                       int x) {
  int start = g->p->nops;
  int xf = chunk_pass(g, st, fwd.chunk, fwd.microbatch, false, x);
  int mid = g->p->nops;
  int xb = chunk_pass(g, st, bwd.chunk, bwd.microbatch, true, x);
  int end = g->p->nops, n = end - start;
  int *sf = malloc((size_t)(mid - start + 1) * sizeof *sf);
  int *sb = malloc((size_t)(end - mid + 1) * sizeof *sb);
  int nf = pass_segments(g, start, mid, sf), nb = pass_segments(g, mid, end, sb);
  int *order = malloc((size_t)n * sizeof *order), *new_of = malloc((size_t)n * sizeof *new_of);
  int *beside_of = malloc((size_t)n * sizeof *beside_of); /* per new index: the a2a, or -1 */
  int k = 0, after_a2a = -1;
  for (int seg = 0; seg < nf || seg < nb; seg++)
    for (int side = 1; side >= 0; side--) { /* the backward's segment first */
      const int *starts = side ? sb : sf;
      if (seg >= (side ? nb : nf))
        continue;
      int largest = -1;
      for (int i = starts[seg]; i < starts[seg + 1]; i++) {
        beside_of[k] = -1;
        if (largest < 0 || kernel_size(&g->p->ops[i]) > kernel_size(&g->p->ops[order[largest]]))
          largest = k;
        order[k++] = i;
      }
      if (after_a2a >= 0 && kernel_size(&g->p->ops[order[largest]]) > 0)
        beside_of[largest] = after_a2a;
      after_a2a = is_ep_alltoall(g, starts[seg + 1] - 1) ? starts[seg + 1] - 1 : -1;
    }
  reorder_ops(g, start, end, order, new_of);
  for (k = 0; k < n; k++)
    if (beside_of[k] >= 0 && !g->p->ops[start + k].overlapping)
      beside(g, start + k, new_of[beside_of[k] - start]);
  int done = join(g, new_of[xf - start], new_of[xb - start]);
  free(sf);
  free(sb);
  free(order);
  free(new_of);
  free(beside_of);
  return done;
}

/* A stage's passes in DualPipeV's order (pipeline_dualpipev): a paired
 * forward and backward merged when the all-to-alls overlap, else the forward
 * then the backward (as dualpipev.py runs modules without an overlapped
 * forward-backward); a backward that defers its weight gradients leaves them
 * to the PIPE_WEIGHTS that pops it. */
static void dualpipev_program(gen_t *g, const stage_t *st) {
  pipeline_t order = {st->stage, st->pp, 2, st->microbatches};
  long n = pipeline_dualpipev(&order, NULL);
  pipe_op_t *ops = malloc((size_t)n * sizeof *ops);
  pipeline_dualpipev(&order, ops);
  g->turns = st->microbatches;
  g->turn_fwd = malloc((size_t)g->turns * sizeof *g->turn_fwd);
  g->turn_bwd = malloc((size_t)g->turns * sizeof *g->turn_bwd);
  for (long mb = 0; mb < g->turns; mb++)
    g->turn_fwd[mb] = g->turn_bwd[mb] = -1;
  int x = -1;
  for (long i = 0; i < n; i++) {
    pipe_op_t o = ops[i];
    pipeline_step_t f = {false, o.microbatch, o.chunk}, b = {true, o.bwd_microbatch, o.bwd_chunk};
    switch (o.kind) {
    case PIPE_FORWARD:
      x = chunk_pass(g, st, o.chunk, o.microbatch, false, x);
      break;
    case PIPE_BACKWARD:
      g->defer_weights = o.defer_weights;
      x = chunk_pass(g, st, o.chunk, o.microbatch, true, x);
      if (o.defer_weights)
        defer_close(g);
      g->defer_weights = false;
      break;
    case PIPE_WEIGHTS:
      x = weight_pass(g, x);
      break;
    case PIPE_FORWARD_BACKWARD:
      if (g->w->training.overlap_moe_a2a)
        x = merged_pass(g, st, f, b, x);
      else
        x = chunk_pass(g, st, b.chunk, b.microbatch, true,
                       chunk_pass(g, st, f.chunk, f.microbatch, false, x));
      break;
    }
  }
  free(ops);
  free(g->turn_fwd);
  free(g->turn_bwd);
  g->turn_fwd = g->turn_bwd = NULL;
  free(g->wq.items);
  free(g->wq.ends);
}

/* A stage's passes in Megatron's order (pipeline.c). With the all-to-alls
 * overlapped, each forward followed by a backward of another micro-batch runs
 * merged with it (the steady state of 1F1B); without a pipeline, the
 * micro-batches go F0, F1+B0, F2+B1, ..., B(n-1), two in flight. */
static void stage_program(gen_t *g, const stage_t *st) {
  pipeline_t order = {st->stage, st->pp, st->vpp, st->microbatches};
  bool overlap = g->w->training.overlap_moe_a2a;
  long steps = pipeline_steps(&order);
  int x = -1;
  if (st->v_shape) {
    dualpipev_program(g, st);
    return;
  }
  if (overlap && st->pp == 1 && st->vpp == 1) {
    x = chunk_pass(g, st, 0, 0, false, x);
    for (long mb = 1; mb < st->microbatches; mb++)
      x = merged_pass(g, st, (pipeline_step_t){false, mb, 0}, (pipeline_step_t){true, mb - 1, 0},
                      x);
    chunk_pass(g, st, 0, st->microbatches - 1, true, x);
    return;
  }
  for (long k = 0; k < steps; k++) {
    pipeline_step_t step = pipeline_step(&order, k);
    pipeline_step_t next = k + 1 < steps ? pipeline_step(&order, k + 1) : step;
    if (overlap && !step.backward && next.backward && next.microbatch != step.microbatch) {
      x = merged_pass(g, st, step, next, x);
      k++;
      continue;
    }
    x = chunk_pass(g, st, step.chunk, step.microbatch, step.backward, x);
  }
}

/* Bytes of `per_param` for dense and routed-expert parameters, sharded when
 * the ZeRO stage covers them: dense over the dp x cp replicas, experts over
 * their expert-data-parallel replicas (expert_replicas). */
static double zero_bytes(const parallel_cfg_t *par, double dense, double experts, double per_param,
                         bool sharded) {
  if (!sharded)
    return (dense + experts) * per_param;
  return (dense / dense_shards(par) + experts / expert_replicas(par)) * per_param;
}

/* An op of the optimizer step: fp32 (master weights, moments, main gradients),
 * on the "optimizer" stream so reports can tell it from the step's compute. */
static int optimizer_op(gen_t *g, gen_compute_t kind, double elements, int dep) {
  int i = shaped(g, kind, 1, elements, 0, 0, 0, dep);
  trace_op_t *op = &g->p->ops[i];
  op->stream = g->optimizer;
  op->dtype = g->k->dtype_fp32;
  g->info->parts[i] = TRAIN_PART_OPTIMIZER;
  return i;
}

/* Tied embeddings on two stages: Megatron sums the first stage's embedding
 * gradient and the last stage's LM-head gradient before the step. */
static void tie_embeddings(gen_t *g, int stage) {
  const model_cfg_t *m = &g->w->model;
  const parallel_cfg_t *par = &g->w->parallel;
  int head = workload_head_stage(par); /* DualPipeV: both on stage 0 */
  if (!m->tied_embeddings || head == 0 || (stage != 0 && stage != head))
    return;
  double bytes = (double)m->hidden * m->vocab / par->tp * workload_grad_bytes(g->w);
  g->last_bucket_op = coll(g, GEN_ALLREDUCE, g->dp, COMM_EMBD, bytes, g->last_grad_op);
}

/* Reduction of what is left, optimizer step on this rank's shard, parameter gather. */
/* Megatron's overlap_param_gather: the all-gather of the parameters the last
 * step updated runs on the DP stream beside the forward, chunk by chunk, each
 * chunk's first forward waiting for its own (one step seen in steady state: the
 * gathers open it rather than close the previous one). */
static void gather_beside_forward(gen_t *g, int chunks, double params, double experts) {
  const parallel_cfg_t *par = &g->w->parallel;
  g->chunk_gather = malloc((size_t)chunks * sizeof *g->chunk_gather);
  for (int c = 0; c < chunks; c++) {
    int x = -1;
    if (dense_shards(par) > 1)
      x = coll(g, GEN_ALLGATHER, g->dp, COMM_DP, (params - experts) / chunks * g->e, -1);
    /* the experts' gather after the dense one on the same stream, so it ends
     * both: a join here would sit on the compute stream at the step's start
     * and hold it until every chunk's gather had ended */
    if (expert_replicas(par) > 1)
      x = coll(g, GEN_ALLGATHER, g->dp, COMM_EDP, experts / chunks * g->e, x);
    g->chunk_gather[c] = x;
  }
}

static void optimizer_step(gen_t *g, int stage, double params, double experts) {
  const parallel_cfg_t *par = &g->w->parallel;
  g->at = (train_where_t){-1, -1, TRAIN_PASS_OPT};
  flush_grads(g, g->last_grad_op);
  tie_embeddings(g, stage);
  double shard = zero_bytes(par, params - experts, experts, 1, par->zero >= 1);
  int x = join(g, g->last_grad_op, g->last_bucket_op);
  /* Megatron's step over this rank's shard: unscale and inf check (fp16 loss
   * scaling), the gradient norm for clipping, Adam, and the copy of the fp32
   * master weights into the training-precision parameters */
  if (g->w->training.precision == PRECISION_FP16)
    x = optimizer_op(g, GEN_MUL, shard, x);
  x = optimizer_op(g, GEN_REDUCE_SUM, shard, x);
  x = optimizer_op(g, GEN_ADAM, shard, x);
  x = optimizer_op(g, GEN_CAST, shard, x); /* fp32 -> training precision */
  /* ZeRO-3 gathers layer by layer; overlap_param_gather, beside the forward */
  if ((par->zero == 1 || par->zero == 2) && !g->chunk_gather) {
    if (dense_shards(par) > 1)
      x = coll(g, GEN_ALLGATHER, g->dp, COMM_DP, (params - experts) * g->e, x);
    if (expert_replicas(par) > 1)
      coll(g, GEN_ALLGATHER, g->dp, COMM_EDP, experts * g->e, x);
  }
}

/* ---- memory ---- */

/* The layers a pipeline stage holds, by kind: dense MLP or MoE. */
typedef struct {
  int dense, moe;
} stage_mix_t;

static stage_mix_t stage_mix(const workload_cfg_t *w, const stage_t *st) {
  stage_mix_t k = {0, 0};
  for (int chunk = 0; chunk < st->vpp; chunk++) {
    int layer0, n = workload_chunk_layers(w, st->stage, chunk, &layer0);
    for (int l = layer0; l < layer0 + n; l++)
      *(xf_layer_is_moe(&w->model, l) ? &k.moe : &k.dense) += 1;
  }
  return k;
}

/* Bytes per token one layer keeps for its backward (transformer.h): with
 * grouped-query attention, a gated MLP and the absence of dropout counted, a
 * GPT layer with dropout gives Korthikanti et al.'s 34 h + 5 a s (10 h + 24 h
 * / t + 5 a s / t without sequence parallelism); a stage mixing dense and MoE
 * layers is held to its larger kind. */
static double layer_activations(const workload_cfg_t *w, stage_mix_t mix) {
  const model_cfg_t *m = &w->model;
  const parallel_cfg_t *par = &w->parallel;
  double t = par->tp, s = (double)m->seq_len / par->cp, b = w->training.micro_batch;
  if (par->recompute == RECOMPUTE_FULL) /* only the layer's input */
    return 2 * s * b * m->hidden / (par->sequence_parallel ? t : 1);
  /* the attention scores unless fused or recomputed */
  bool kept = par->recompute != RECOMPUTE_SELECTIVE && !w->training.flash_attention;
  double most = 0;
  for (int moe = 0; moe < 2; moe++) {
    if ((moe ? mix.moe : mix.dense) == 0)
      continue;
    xf_act_bytes_t a = xf_layer_activation_bytes(m, moe, kept, s);
    most = fmax(most, s * b * (a.tp_split / t + a.sequence / (par->sequence_parallel ? t : 1)));
  }
  return most;
}

static train_memory_t stage_memory(const workload_cfg_t *w, int stage, double params,
                                   double experts, stage_mix_t mix, double layers, long in_flight) {
  const model_cfg_t *m = &w->model;
  const parallel_cfg_t *par = &w->parallel;
  double t = par->tp;
  double s = (double)m->seq_len / par->cp, b = w->training.micro_batch;
  train_memory_t mem = {0};
  double dense = params - experts;
  mem.weights = zero_bytes(par, dense, experts, 2, par->zero >= 3);
  mem.gradients = zero_bytes(par, dense, experts, workload_grad_bytes(w), par->zero >= 2);
  mem.optimizer = zero_bytes(par, dense, experts, OPT_BYTES, par->zero >= 1);
  mem.activations = layer_activations(w, mix) * layers * in_flight;
  if (stage == workload_head_stage(par))
    mem.temporary = 4.0 * s * b * m->vocab / t; /* fp32 logits */
  if (par->zero >= 3) /* the gathered layer and the one prefetched, the larger kind */
    mem.temporary += 2 * layer_params(w, mix.moe > 0) * 2;
  mem.total = mem.weights + mem.gradients + mem.optimizer + mem.activations + mem.temporary;
  return mem;
}

/* ---- the whole job ---- */

/* FLOPs per token of layer `index`: forward and backward (twice the forward)
 * of its matmuls and attention core (over its window's keys where it has
 * one); with recomputation, the forward again (full) or its attention core
 * (selective). */
static double layer_flops(const workload_cfg_t *w, int index, bool with_recompute) {
  const model_cfg_t *m = &w->model;
  bool moe = xf_layer_is_moe(m, index);
  double core = xf_attention_blocks(m, moe) * xf_attention_flops(m, xf_layer_context(m, index,
                                                                                     m->seq_len));
  double fwd_layer = xf_layer_matmul_flops(m, moe) + core;
  double layer = 3 * fwd_layer;
  if (with_recompute && w->parallel.recompute == RECOMPUTE_FULL)
    layer += fwd_layer;
  else if (with_recompute && w->parallel.recompute == RECOMPUTE_SELECTIVE)
    layer += core;
  return layer;
}

/* Model FLOPs per token of a step: every layer's, the LM head's, and the
 * multi-token-prediction modules'. */
static double flops_per_token(const workload_cfg_t *w, bool with_recompute) {
  const model_cfg_t *m = &w->model;
  double h = m->hidden, total = 0;
  /* the layers by kind (MoE or dense, windowed or not): how many, and one of each */
  int count[2][2] = {{0}}, example[2][2];
  for (int l = 0; l < m->layers; l++) {
    int moe = xf_layer_is_moe(m, l), win = xf_layer_windowed(m, l);
    example[moe][win] = l;
    count[moe][win]++;
  }
  for (int moe = 0; moe < 2; moe++)
    for (int win = 0; win < 2; win++)
      if (count[moe][win] > 0)
        total += count[moe][win] * layer_flops(w, example[moe][win], with_recompute);
  /* each multi-token-prediction module: its projection (2h -> h), its layer, the LM head */
  if (m->mtp_layers > 0)
    total += m->mtp_layers * (layer_flops(w, m->layers, with_recompute) +
                              3 * 2 * (2 * h * h) + 6.0 * h * m->vocab);
  return total + 6.0 * h * m->vocab;
}

/* Ranks along each parallel dimension, indexed by par_dim_t. */
static void dim_sizes(const parallel_cfg_t *par, int size[PAR_DIM_COUNT]) {
  size[PAR_DIM_TP] = par->tp;
  size[PAR_DIM_CP] = par->cp;
  size[PAR_DIM_DP] = par->dp;
  size[PAR_DIM_PP] = par->pp;
}

/* Coordinates of rank r along each dimension, innermost first in the order. */
static void coords_of(const parallel_cfg_t *par, int r, int coord[PAR_DIM_COUNT]) {
  int size[PAR_DIM_COUNT];
  dim_sizes(par, size);
  for (int i = 0; i < PAR_DIM_COUNT; i++) {
    coord[par->order[i]] = r % size[par->order[i]];
    r /= size[par->order[i]];
  }
}

static int rank_of(const parallel_cfg_t *par, const int coord[PAR_DIM_COUNT]) {
  int size[PAR_DIM_COUNT], r = 0, stride = 1;
  dim_sizes(par, size);
  for (int i = 0; i < PAR_DIM_COUNT; i++) {
    r += coord[par->order[i]] * stride;
    stride *= size[par->order[i]];
  }
  return r;
}

static int stride_of(const parallel_cfg_t *par, par_dim_t dim) {
  int size[PAR_DIM_COUNT], stride = 1;
  dim_sizes(par, size);
  for (int i = 0; i < PAR_DIM_COUNT && par->order[i] != dim; i++)
    stride *= size[par->order[i]];
  return stride;
}

/* A communicator whose groups vary `dims` (in order) with the others fixed:
 * along the linear index of those dims, groups of `gsize` members `stride`
 * apart (gsize 0: all the index's members at that stride). Stride 1 gives runs
 * of consecutive ranks (tensor, expert parallel groups); stride k the ranks at
 * one position of every run of k (expert data parallel groups). */
static void make_comm(trace_t *t, const parallel_cfg_t *par, gen_comm_t id, int ndims,
                      const par_dim_t *dims, int stride, int gsize) {
  int size[PAR_DIM_COUNT], full = 1;
  dim_sizes(par, size);
  for (int i = 0; i < ndims; i++)
    full *= size[dims[i]];
  if (gsize <= 0)
    gsize = full / stride;
  int per = full / gsize;
  trace_comm_t *cm = &t->comms[id];
  cm->name = strdup(gen_comms[id].name);
  cm->ngroups = t->ranks / gsize;
  cm->groups = calloc((size_t)cm->ngroups, sizeof *cm->groups);
  cm->sizes = calloc((size_t)cm->ngroups, sizeof *cm->sizes);
  cm->group_of = malloc((size_t)t->ranks * sizeof *cm->group_of);
  for (int r = 0; r < t->ranks; r++)
    cm->group_of[r] = -1;
  int next = 0;
  for (int r = 0; r < t->ranks; r++) {
    if (cm->group_of[r] >= 0)
      continue;
    /* coordinates of r, then every member sharing its fixed coordinates */
    int coord[PAR_DIM_COUNT];
    coords_of(par, r, coord);
    for (int j = 0; j < per; j++) {
      int gi = next++;
      cm->groups[gi] = malloc((size_t)gsize * sizeof(int));
      for (int m = 0; m < gsize; m++) {
        int rest = j / stride * stride * gsize + j % stride + m * stride;
        for (int i = 0; i < ndims; i++) {
          coord[dims[i]] = rest % size[dims[i]];
          rest /= size[dims[i]];
        }
        int member = rank_of(par, coord);
        cm->groups[gi][cm->sizes[gi]++] = member;
        cm->group_of[member] = gi;
      }
    }
  }
}

/* The streams a program uses (each one an actor per rank in a replay): only
 * those the plan needs; the others stay -1 and nothing is issued on them. */
static void add_streams(gen_t *g) {
  const parallel_cfg_t *par = &g->w->parallel;
  trace_program_t *p = g->p;
  bool pipeline = par->pp > 1 || par->vpp > 1, replicas = par->dp * par->cp > 1;
  g->compute = stream_of(p, "compute");
  g->tp = par->tp > 1 ? stream_of(p, "tp") : -1;
  g->dp = replicas || (g->w->model.tied_embeddings && par->pp > 1) ? stream_of(p, "dp") : -1;
  g->ep = par->ep > 1 || etp_split(par) ? stream_of(p, "ep") : -1;
  g->send_next = pipeline ? stream_of(p, "pp_send_next") : -1;
  g->recv_prev = pipeline ? stream_of(p, "pp_recv_prev") : -1;
  g->send_prev = pipeline ? stream_of(p, "pp_send_prev") : -1;
  g->recv_next = pipeline ? stream_of(p, "pp_recv_next") : -1;
  bool v_shape = par->pp_schedule == PP_SCHEDULE_DUALPIPEV;
  g->v_send_next = v_shape ? stream_of(p, "pp_v_send_next") : -1;
  g->v_recv_prev = v_shape ? stream_of(p, "pp_v_recv_prev") : -1;
  g->v_send_prev = v_shape ? stream_of(p, "pp_v_send_prev") : -1;
  g->v_recv_next = v_shape ? stream_of(p, "pp_v_recv_next") : -1;
  g->cp_send = par->cp > 1 ? stream_of(p, "cp_send") : -1;
  g->cp_recv = par->cp > 1 ? stream_of(p, "cp_recv") : -1;
  g->cp_coll = par->cp > 1 && par->cp_algo != CP_RING ? stream_of(p, "cp") : -1;
  g->optimizer = stream_of(p, "optimizer");
  g->zero = par->zero >= 3 && replicas ? stream_of(p, "zero") : -1;
}

/* Pairs of the first stage's and the head stage's ranks at the same other
 * coordinates (one rank alone when they are one stage); the other stages are
 * in no group. */
static void make_ends_comm(trace_t *t, const parallel_cfg_t *par, gen_comm_t id) {
  trace_comm_t *cm = &t->comms[id];
  int head = workload_head_stage(par), gsize = head > 0 ? 2 : 1;
  cm->name = strdup(gen_comms[id].name);
  cm->ngroups = t->ranks / par->pp;
  cm->groups = calloc((size_t)cm->ngroups, sizeof *cm->groups);
  cm->sizes = calloc((size_t)cm->ngroups, sizeof *cm->sizes);
  cm->group_of = malloc((size_t)t->ranks * sizeof *cm->group_of);
  for (int r = 0; r < t->ranks; r++)
    cm->group_of[r] = -1;
  for (int r = 0, gi = 0; r < t->ranks; r++) {
    int coord[PAR_DIM_COUNT];
    coords_of(par, r, coord);
    if (coord[PAR_DIM_PP] != 0)
      continue;
    cm->groups[gi] = malloc((size_t)gsize * sizeof(int));
    cm->groups[gi][cm->sizes[gi]++] = r;
    coord[PAR_DIM_PP] = head;
    if (gsize == 2)
      cm->groups[gi][cm->sizes[gi]++] = rank_of(par, coord);
    for (int k = 0; k < gsize; k++)
      cm->group_of[cm->groups[gi][k]] = gi;
    gi++;
  }
}

const char *train_refusal(const workload_cfg_t *w) {
  return !w->has_training ? "training: expected a training section (a serving workload runs "
                            "with npusim serve)"
                          : NULL;
}

int train_generate(const workload_cfg_t *w, const trace_vocab_t *vocab, int ranks_per_node,
                   trace_t *out, train_info_t *info, npu_err_t *err) {
  const parallel_cfg_t *par = &w->parallel;
  const model_cfg_t *m = &w->model;
  memset(out, 0, sizeof *out);
  memset(info, 0, sizeof *info);
  long world = workload_world_size(w), mbs = workload_grad_accum_steps(w);
  /* Every micro-batch's ops are generated (about 10 KB per micro-batch and layer with
   * the replay's tables), so the step's size is bounded before anything is built. */
  double passes = (double)mbs * m->layers * par->cp;
  if (passes > TRAIN_MAX_PASSES)
    return npu_err_set(err, "training.global_batch: expected at most %d micro-batch "
                    "passes through a layer per step (micro-batches per replica %ld x layers "
                    "%d x cp %d), found %.0f; raise training.micro_batch or parallel.dp",
                    TRAIN_MAX_PASSES, mbs, m->layers, par->cp, passes), -1;
  pipeline_t whole = {0, par->pp, par->vpp, mbs};
  if (par->pp_schedule == PP_SCHEDULE_DUALPIPEV && mbs < pipeline_dualpipev_min_microbatches(&whole))
    return npu_err_set(err, "training.global_batch: expected at least 2 x parallel.pp = %ld "
                       "micro-batches per pipeline for pp_schedule dualpipev, found %ld",
                       pipeline_dualpipev_min_microbatches(&whole), mbs), -1;
  if (par->pp_schedule == PP_SCHEDULE_1F1B && par->vpp > 1 && mbs % par->pp)
    return npu_err_set(err, "training.global_batch: expected micro-batches per pipeline "
                    "(%ld) divisible by parallel.pp = %d for the interleaved schedule, found %ld",
                    mbs, par->pp, mbs % par->pp), -1;
  gen_kinds_t kinds;
  if (resolve_kinds(vocab, w->training.precision, &kinds, err))
    return -1;
  double skew = m->has_moe ? moe_routing_skew(&w->training.moe_route, TRAIN_ROUTING_SEED,
                                               m->moe.experts, m->moe.top_k, par->ep)
                           : 1;
  out->name = strdup(m->name);
  out->ranks = (int)world;
  out->ranks_per_node = ranks_per_node;
  out->comms = calloc(COMM_COUNT, sizeof *out->comms);
  out->ncomms = COMM_COUNT;
  static const par_dim_t tp_dims[] = {PAR_DIM_TP}, dp_dims[] = {PAR_DIM_CP, PAR_DIM_DP};
  make_comm(out, par, COMM_TP, 1, tp_dims, 1, 0);
  /* hybrid sharding: the DP groups are the shard groups, replicated across */
  int shard = par->zero_shard_size > 0 ? par->zero_shard_size : par->dp * par->cp;
  make_comm(out, par, COMM_DP, 2, dp_dims, 1, shard);
  /* experts: EP carved out of dp x cp, or folded over tp x cp x dp as
   * Megatron-Core's expert grid ETP x EP x EDP (ETP innermost; etp 1: the EP
   * group innermost) */
  static const par_dim_t folded_dims[] = {PAR_DIM_TP, PAR_DIM_CP, PAR_DIM_DP};
  int edims = ep_folded(par) ? 3 : 2, etp = ep_folded(par) ? par->etp : 1;
  const par_dim_t *expert_dims = ep_folded(par) ? folded_dims : dp_dims;
  make_comm(out, par, COMM_EP, edims, expert_dims, etp, par->ep);
  make_comm(out, par, COMM_EDP, edims, expert_dims, etp * par->ep, 0);
  make_comm(out, par, COMM_DP_PARAMS, 2, dp_dims, 1, shard);
  make_comm(out, par, COMM_DP_REPLICAS, 2, dp_dims, shard, 0);
  make_comm(out, par, COMM_EDP_PARAMS, edims, expert_dims, etp * par->ep, 0);
  make_ends_comm(out, par, COMM_EMBD);
  /* context parallelism's groups: Ulysses' consecutive positions, all of them
   * to gather; traces of ring attention keep the communicators they had (the
   * groups are made when ETP's communicator follows them) */
  static const par_dim_t cp_dims[] = {PAR_DIM_CP};
  if (par->cp_algo != CP_RING || etp_split(par)) {
    make_comm(out, par, COMM_CP_ULYSSES, 1, cp_dims, 1, workload_cp_ulysses(par));
    make_comm(out, par, COMM_CP_GATHER, 1, cp_dims, 1, 0);
  }
  if (etp_split(par))
    make_comm(out, par, COMM_ETP, edims, expert_dims, 1, par->etp);
  out->ncomms = etp_split(par) ? COMM_COUNT : par->cp_algo != CP_RING ? COMM_ETP : COMM_CP_ULYSSES;
  /* one program per pipeline stage (and context-parallel position: its ring wraps) */
  int nprog = par->pp * par->cp;
  out->programs = calloc((size_t)nprog, sizeof *out->programs);
  out->program_of = malloc((size_t)world * sizeof *out->program_of);
  info->memory = calloc((size_t)par->pp, sizeof *info->memory);
  info->stages = par->pp;
  info->programs = calloc((size_t)nprog, sizeof *info->programs);
  info->nprograms = nprog;
  for (int r = 0; r < world; r++) {
    int coord[PAR_DIM_COUNT];
    coords_of(par, r, coord);
    int pi = coord[PAR_DIM_PP] * par->cp + coord[PAR_DIM_CP];
    trace_program_t *p = &out->programs[pi];
    p->ranks = realloc(p->ranks, (size_t)(p->nranks + 1) * sizeof *p->ranks);
    p->ranks[p->nranks++] = r;
    out->program_of[r] = pi;
  }
  out->nprograms = nprog;
  for (int pi = 0; pi < nprog; pi++) {
    int stage = pi / par->cp, cpi = pi % par->cp;
    trace_program_t *p = &out->programs[pi];
    info->programs[pi].stage = stage;
    info->programs[pi].cp_pos = cpi;
    gen_t g = {.w = w, .k = &kinds, .p = p, .info = &info->programs[pi], .e = 2, .moe_skew = skew,
               .last_grad_op = -1, .last_bucket_op = -1, .at = {-1, -1, TRAIN_PASS_NONE}};
    g.tokens = (double)w->training.micro_batch * m->seq_len / par->cp;
    g.stride_pp = stride_of(par, PAR_DIM_PP);
    /* the ring of context parallelism wraps at its last position */
    int u = workload_cp_ulysses(par), ring = par->cp / u, pos = cpi / u;
    int stride_ring = stride_of(par, PAR_DIM_CP) * u; /* the ring across Ulysses groups */
    g.cp_next = pos == ring - 1 ? -(ring - 1) * stride_ring : stride_ring;
    g.cp_prev = pos == 0 ? (ring - 1) * stride_ring : -stride_ring;
    trace_intern(&p->tags, &p->ntags, ""); /* tag 0: untagged */
    add_streams(&g);
    g.tag_fwd = trace_intern(&p->tags, &p->ntags, "fwd");
    g.tag_bwd = trace_intern(&p->tags, &p->ntags, "bwd");
    g.tag_cp = trace_intern(&p->tags, &p->ntags, "cp");
    double act = g.tokens * m->hidden * g.e / par->tp; /* scatter/gather: see gathered() */
    int most = 0, first;
    for (int chunk = 0; chunk < par->vpp; chunk++) {
      int n = workload_chunk_layers(w, stage, chunk, &first);
      most = n > most ? n : most;
    }
    bool v_shape = par->pp_schedule == PP_SCHEDULE_DUALPIPEV;
    stage_t st = {stage, par->pp, par->vpp, v_shape, most, mbs, act};
    /* the stage's layers, the embedding on the first stage, the LM head on the
     * head stage (Megatron keeps a copy per stage when tied) */
    int head = workload_head_stage(par);
    stage_mix_t mix = stage_mix(w, &st);
    xf_split_t split = train_split(w);
    double params =
        xf_stage_params(m, &split, mix.dense, mix.moe, stage == 0, stage == head, true);
    double experts = mix.moe ? routed_expert_params(w, true) * mix.moe : 0;
    double mtp_layers = stage == head ? m->mtp_layers : 0; /* the MTP modules */
    if (mtp_layers > 0) {
      bool moe = xf_mtp_is_moe(m);
      params += mtp_layers * (layer_params(w, moe) + xf_mtp_extra_params(m, par->tp));
      experts += mtp_layers * routed_expert_params(w, moe);
      *(moe ? &mix.moe : &mix.dense) += m->mtp_layers;
    }
    if (w->training.overlap_param_gather && g.dp >= 0)
      gather_beside_forward(&g, par->vpp, params, experts);
    stage_program(&g, &st);
    optimizer_step(&g, stage, params, experts);
    free(g.chunk_gather);
    /* micro-batch chunks whose activations a stage holds at once */
    pipeline_t order = {stage, par->pp, par->vpp, mbs};
    long in_flight = pipeline_warmup(&order) + 1 < mbs * par->vpp ? pipeline_warmup(&order) + 1
                                                                  : mbs * par->vpp;
    if (w->training.overlap_moe_a2a && par->pp == 1 && par->vpp == 1 && mbs > 1)
      in_flight = 2; /* F(i + 1) runs beside B(i) */
    if (v_shape)
      in_flight = pipeline_dualpipev_in_flight(&order);
    if (cpi == 0)
      info->memory[stage] =
          stage_memory(w, stage, params, experts, mix, st.most_layers + mtp_layers, in_flight);
  }
  info->world = world;
  info->microbatches = mbs;
  info->tokens = (double)w->training.global_batch * m->seq_len;
  info->model_flops = info->tokens * flops_per_token(w, false);
  info->hw_flops = info->tokens * flops_per_token(w, true);
  return 0;
}

void train_info_free(train_info_t *info) {
  for (int i = 0; i < info->nprograms; i++) {
    free(info->programs[i].parts);
    free(info->programs[i].where);
  }
  free(info->programs);
  free(info->memory);
  memset(info, 0, sizeof *info);
}

const char *const train_pass_names[TRAIN_PASS_OPT + 1] = {"", "fwd", "bwd", "opt"};

void train_op_name(const train_info_t *info, const trace_t *t, const trace_vocab_t *vocab,
                   int pi, int i, char *buf, size_t len) {
  const train_where_t *w = &info->programs[pi].where[i];
  const trace_op_t *op = &t->programs[pi].ops[i];
  size_t n = 0;
  buf[0] = '\0';
  if (w->microbatch >= 0)
    n += (size_t)snprintf(buf + n, len - n, "mb%d ", w->microbatch);
  if (w->layer >= 0 && n < len)
    n += (size_t)snprintf(buf + n, len - n, "L%d ", w->layer);
  if (w->pass != TRAIN_PASS_NONE && n < len)
    n += (size_t)snprintf(buf + n, len - n, "%s ", train_pass_names[w->pass]);
  if (n >= len)
    return;
  if (op->type == TRACE_OP_SHAPED)
    snprintf(buf + n, len - n, "%s", vocab->compute[op->kind]);
  else if (op->type == TRACE_OP_COLL)
    snprintf(buf + n, len - n, "%s %s", t->comms[op->comm].name, vocab->colls[op->kind]);
  else if (op->type == TRACE_OP_SEND || op->type == TRACE_OP_RECV)
    snprintf(buf + n, len - n, "pp %s %s", trace_op_type_names[op->type],
             t->programs[pi].tags[op->tag]);
  else
    snprintf(buf + n, len - n, "%s", trace_op_type_names[op->type]);
}
