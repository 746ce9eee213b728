/* serve_sim.h - serving as a request-level discrete-event simulation.
 *
 * Requests arrive (serve_requests.h) and go to the instance with the fewest
 * outstanding requests: a co-located instance, or a prefill instance when the
 * deployment is disaggregated. Inside an instance each attention group has its
 * own queue, running batch and pool of KV blocks; each of its pp virtual
 * engines (vLLM's, one batch in flight per pipeline stage) schedules an
 * iteration as soon as its last one ends:
 *   - the running sequences decode first (one token each; with speculative
 *     decoding k + 1 tokens verified and (1 - a^(k+1)) / (1 - a) gained, on
 *     average, carried exactly from step to step), a new KV block when one
 *     fills; with no block free the youngest running sequence is
 *     preempted, from whichever engine of the instance holds it (they share
 *     the group's blocks): recompute drops its cache, its prompt and output
 *     so far prefilled again later; swap copies its blocks to host and back,
 *     at the host link's rate, inside the iterations that do it;
 *   - then prefill, Sarathi-style chunks filling the token budget
 *     (chunked_prefill), or whole prompts in prefill-only iterations before any
 *     decode (vLLM V0);
 *   - the iteration costs what serve_cost says for that batch, each pipeline
 *     stage being busy for its share (a stage still busy with another virtual
 *     engine's batch delays this one: the pipeline's bubbles).
 * With prefix caching a request that hits starts with the shared prefix
 * cached, in blocks its attention group holds once for every hit.
 * The end of a prefill samples the first token. Disaggregated, a prefill
 * instance then sends the request's KV cache to the decode instance with the
 * fewest outstanding requests, over the links that join them, one transfer at
 * a time per sending and per receiving instance; the decode instance admits it
 * once blocks are free. A request ends with its last output token.
 *
 * Nothing here knows about SimGrid: time is a double, events a heap, and the
 * same inputs give the same events in the same order. */
#ifndef NPUSIM_SERVE_SIM_H
#define NPUSIM_SERVE_SIM_H

#include <stdbool.h>

#include "progress.h"
#include "serve_cost.h"
#include "serve_requests.h"
#include "npu_err.h"

typedef enum { SERVE_POOL_COLOCATED, SERVE_POOL_PREFILL, SERVE_POOL_DECODE } serve_pool_kind_t;

extern const char *const serve_pool_kind_names[SERVE_POOL_DECODE + 1];

/* A pool as the simulation runs it: its split, its cost model (all its
 * instances cost alike) and where its instances start. */
typedef struct {
  serve_pool_kind_t kind;
  const serve_pool_t *plan;
  serve_cost_t *cost;
  int first_rank; /* of its first instance; instance i starts i x npus later */
  const char *chip; /* its servers' chip on a system with node types, else NULL */
} serve_sim_pool_t;

/* Lays out the pools of a deployment (costs left NULL): prefill then decode
 * when disaggregated, else the co-located pool, on consecutive ranks. Returns
 * their number. */
int serve_sim_pools(const serving_cfg_t *cfg, serve_sim_pool_t pools[2]);

/* The config path of a pool kind's split ("serving.parallel", ...). */
extern const char *const serve_pool_paths[SERVE_POOL_DECODE + 1];

/* What happened to a request. Its latencies are differences of the clock
 * inside one busy stretch (see serve_sim_run), so they do not depend on when
 * the run starts; NAN until known. */
typedef struct {
  double arrival_s; /* as the trace or generator gave it */
  double ttft_s;    /* arrival to first token */
  double decode_s;  /* first token to last (0 with one output token) */
  double e2e_s;     /* arrival to last token */
  double end_s;     /* the last token, seconds after the run's first arrival */
  double queue_s;   /* arrival to the start of its first iteration */
  int prompt_tokens, output_tokens;
  int preemptions;
  int instance;        /* where it was prefilled (over all pools, as serve_iter_log_t) */
  int decode_instance; /* where it decoded: the same, or a decode pool's instance */
} serve_req_result_t;

/* Iterations of one kind, summed: where their time went and their batches. */
typedef struct {
  serve_parts_t parts;
  long iterations;
  double batch_sum;
  double token_sum; /* decode: tokens the sequences gain (speculative decoding only; else 0) */
} serve_step_stats_t;

/* One iteration of one virtual engine, for timelines. */
typedef struct {
  int instance; /* over all pools, prefill (or co-located) first */
  int engine;   /* virtual engine (pipeline slot) */
  double start_s, end_s;
  int decodes, prefills, tokens;
  long kv_used_blocks; /* the instance's, after the iteration */
  long waiting;        /* requests queued at the instance */
} serve_iter_log_t;

typedef struct {
  serve_req_result_t *req;
  long nreq;
  double makespan_s; /* first arrival to last token */
  long busy_stretches; /* arrivals that found the deployment idle */
  long iterations, preemptions, kv_transfers;
  double kv_transfer_s;       /* summed over transfers */
  double dynamic_J;           /* energy above idle of every iteration (serve_cost: parts.J) */
  serve_step_stats_t decode;  /* decode-only iterations (batch: sequences) */
  serve_step_stats_t prefill; /* prefill-only iterations (batch: tokens) */
  serve_iter_log_t *log;      /* when asked for */
  long nlog;
} serve_sim_result_t;

typedef struct {
  bool log_iterations;  /* fill result.log */
  progress_t *progress; /* a step per finished request; may be NULL */
  const char *where;    /* names the requests in a refusal (trace or workload path) */
  double busy_max_s;    /* 0: SERVE_BUSY_MAX_S (tests lower it) */
} serve_sim_opts_t;

/* The longest busy stretch, seconds: the clock restarts at 0 at each arrival
 * that finds the deployment idle (nothing queued, running or in flight), and
 * below 2^23 s a double resolves 1 ns or better (2^-30 s). */
#define SERVE_BUSY_MAX_S 8388608.0

/* What serve_sim_run returns besides 0. */
enum {
  SERVE_SIM_REFUSED = -1, /* out of memory or a busy stretch past busy_max_s
                             (arrivals: SERVE_MAX_ARRIVAL_S, serve_cfg.h) */
  SERVE_SIM_INTERNAL = -2 /* requests left unfinished: a bug, never a result */
};

/* Runs the requests through the pools (one co-located pool, or prefill then
 * decode) laid out on topo. Times are kept relative to the start of each busy
 * stretch, so latencies are exact whatever the arrivals' magnitude. Returns 0
 * (every request completed), or SERVE_SIM_REFUSED / SERVE_SIM_INTERNAL with
 * the reason, one line, in err. */
int serve_sim_run(const serving_cfg_t *cfg, const serve_sim_pool_t *pools, int npools,
                  const topo_t *topo, const serve_requests_t *reqs, const serve_sim_opts_t *opts,
                  serve_sim_result_t *out, npu_err_t *err);

void serve_sim_result_free(serve_sim_result_t *r);

#endif
