/* moe_routing.h - how unevenly a MoE router loads the expert-parallel ranks:
 * the busiest EP rank's share of a layer's token-expert assignments over its
 * share under even routing. The same mechanism in serving
 * (serving.moe.routing: serve_cost.c scales the expert matmuls and the
 * dispatch/combine bytes by it) and training (training.moe.routing: the
 * generator gives every rank the busiest one's tokens, since the all-to-alls
 * hold the others until it is done).
 *
 * The experts sit in contiguous blocks of ceil(experts / ep) per rank, as vLLM,
 * SGLang and Megatron place them; with more ranks than experts each expert's
 * copies split its load. Uniform: a skew of 1. Zipf: the expert of popularity
 * rank r gets a share proportional to r^-s, capped at 1 / top_k (a token picks
 * an expert once); which expert is how popular is drawn at random, seeded, and
 * the busiest rank's share averaged over 64 draws (the expected busiest rank).
 * Measured: the busiest block's share, exactly.
 *
 * Not modelled: a balancer's redundant experts and placement (EPLB), the
 * group-limited routing's effect on the shares, a load that changes from
 * batch to batch or layer to layer. */
#ifndef NPUSIM_MOE_ROUTING_H
#define NPUSIM_MOE_ROUTING_H

#include <stdint.h>

typedef enum {
  MOE_ROUTE_UNIFORM,
  MOE_ROUTE_ZIPF,
  MOE_ROUTE_MEASURED, /* a measured load per expert */
  MOE_ROUTE_COUNT
} moe_routing_kind_t;

/* A measured load per routed expert, in expert order (relative: token counts
 * or shares). */
#define MOE_MAX_EXPERT_LOADS 512
typedef struct {
  int n;
  float w[MOE_MAX_EXPERT_LOADS];
} moe_expert_load_t;

typedef struct {
  moe_routing_kind_t kind;
  double zipf_s;          /* Zipf exponent (kind zipf) */
  moe_expert_load_t load; /* kind measured: one per routed expert */
} moe_routing_t;

extern const char *const moe_routing_names[MOE_ROUTE_COUNT];

/* The skew (>= 1; exactly 1 for uniform routing or ep < 2) of r for `experts`
 * routed experts, top_k per token, over ep ranks; Zipf's placements drawn from
 * seed. r->load must hold `experts` loads when the routing is measured (the
 * caller checks it). */
double moe_routing_skew(const moe_routing_t *r, uint64_t seed, int experts, int top_k, int ep);

/* Parses "w0,w1,..." (non-negative numbers, at least one positive, at most
 * MOE_MAX_EXPERT_LOADS) into out; "" is an empty list. 0, or -1. */
int moe_parse_expert_load(const char *text, moe_expert_load_t *out);

#endif
