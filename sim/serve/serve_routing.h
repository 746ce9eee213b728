/* serve_routing.h - how unevenly a MoE router loads the expert-parallel ranks:
 * the busiest EP rank's share of a layer's token-expert assignments over its
 * share under even routing (serving.moe.routing: uniform, a Zipf popularity,
 * or a measured load per expert). serve_cost.c scales the expert matmuls and
 * the dispatch/combine bytes by it.
 *
 * The experts sit in contiguous blocks of ceil(experts / ep) per rank, as vLLM
 * and SGLang place them; with more ranks than experts each expert's copies
 * split its load. Zipf: the expert of popularity rank r gets a share
 * proportional to r^-s, capped at 1 / top_k (a token picks an expert once);
 * which expert is how popular is drawn at random, seeded by
 * serving.requests.seed, and the busiest rank's share averaged over 64 draws
 * (the expected busiest rank). Measured: the busiest block's share, exactly.
 *
 * Not modelled: a balancer's redundant experts and placement (EPLB), the
 * group-limited routing's effect on the shares, a load that changes from
 * batch to batch. */
#ifndef NPUSIM_SERVE_ROUTING_H
#define NPUSIM_SERVE_ROUTING_H

#include "workload.h"

/* The skew (>= 1; exactly 1 for uniform routing or ep < 2) of s's routing for
 * the experts of x over ep ranks. s->moe_expert_load must hold x->experts
 * loads when the routing is measured (serve_cost_new checks it). */
double serve_routing_skew(const serving_cfg_t *s, const moe_cfg_t *x, int ep);

#endif
