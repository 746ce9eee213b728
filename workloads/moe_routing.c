/* moe_routing.c - the busiest EP rank's share under a skewed routing; see
 * moe_routing.h. */
#include "moe_routing.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "npu_int.h"

#define SKEW_DRAWS 64 /* seeded placements averaged for the expected busiest rank */

/* Zipf shares of n experts with exponent s, largest first, each capped at
 * 1 / top_k (a token picks an expert once) with the excess spread over the
 * others in proportion. */
static void zipf_shares(double *p, int n, double s, int top_k) {
  double sum = 0;
  for (int i = 0; i < n; i++)
    sum += p[i] = pow(i + 1, -s);
  for (int i = 0; i < n; i++)
    p[i] /= sum;
  double cap = 1.0 / (top_k > 0 ? top_k : 1);
  for (int round = 0; round < n && n * cap >= 1; round++) {
    double excess = 0, free = 0;
    for (int i = 0; i < n; i++)
      if (p[i] > cap) {
        excess += p[i] - cap;
        p[i] = cap;
      } else if (p[i] < cap) {
        free += p[i];
      }
    if (excess <= 0 || free <= 0)
      break;
    for (int i = 0; i < n; i++)
      if (p[i] < cap)
        p[i] += excess * p[i] / free;
  }
}

/* Measured routing: the busiest EP rank's share of the measured loads over its
 * even share. */
static double measured_skew(const moe_expert_load_t *l, int ep) {
  int n = l->n, local = ep <= n ? (int)npu_ceil_div(n, ep) : 1;
  double total = 0, most = 0;
  for (int i = 0; i < n; i++)
    total += l->w[i];
  for (int r = 0; r * local < n && r < ep; r++) {
    double load = 0;
    for (int i = r * local; i < n && i < (r + 1) * local; i++)
      load += l->w[i];
    most = fmax(most, load);
  }
  if (ep > n) /* an expert's copies share its load */
    most /= (double)ep / n;
  double even = ep <= n ? (double)local / n : 1.0 / ep;
  return total > 0 ? fmax(most / total / even, 1) : 1;
}

double moe_routing_skew(const moe_routing_t *r, uint64_t seed, int experts, int top_k, int ep) {
  int n = experts;
  if (r->kind == MOE_ROUTE_MEASURED && ep >= 2)
    return measured_skew(&r->load, ep);
  if (r->kind != MOE_ROUTE_ZIPF || ep < 2 || n < 2)
    return 1;
  double *p = malloc((size_t)n * sizeof *p), *load = calloc((size_t)ep, sizeof *load);
  int *order = malloc((size_t)n * sizeof *order);
  if (!p || !load || !order) {
    free(p), free(load), free(order);
    return 1;
  }
  zipf_shares(p, n, r->zipf_s, top_k);
  int local = ep <= n ? (int)npu_ceil_div(n, ep) : 1;
  double copies = ep > n ? (double)ep / n : 1, busiest = 0;
  uint64_t state = npu_hash_u64(0x6d6f65, seed);
  for (int d = 0; d < SKEW_DRAWS; d++) {
    for (int i = 0; i < n; i++)
      order[i] = i;
    for (int i = n - 1; i > 0; i--) { /* Fisher-Yates: expert order[i] gets popularity i */
      int j = (int)(npu_splitmix64(&state) % (uint64_t)(i + 1)), t = order[i];
      order[i] = order[j], order[j] = t;
    }
    memset(load, 0, (size_t)ep * sizeof *load);
    double most = 0;
    for (int i = 0; i < n; i++) {
      /* above one rank per expert, the first holder stands for its copies */
      int rank = ep <= n ? order[i] / local : order[i] % ep;
      load[rank] += p[i] / copies;
      most = fmax(most, load[rank]);
    }
    busiest += most;
  }
  free(p), free(load), free(order);
  double even = ep <= n ? (double)local / n : 1.0 / ep;
  return fmax(busiest / SKEW_DRAWS / even, 1);
}

const char *const moe_routing_names[MOE_ROUTE_COUNT] = {"uniform", "zipf", "measured"};

int moe_parse_expert_load(const char *text, moe_expert_load_t *out) {
  out->n = 0;
  bool positive = false;
  for (const char *p = text; *p;) {
    char *end;
    double w = strtod(p, &end);
    if (end == p || !(w >= 0) || w > 1e30 || out->n == MOE_MAX_EXPERT_LOADS)
      return -1;
    positive |= w > 0;
    out->w[out->n++] = (float)w;
    p = end;
    if (*p == ',' && p[1])
      p++;
    else if (*p)
      return -1;
  }
  return out->n == 0 || positive ? 0 : -1;
}
