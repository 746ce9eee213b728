/* variation.h - NPUs that do not all run at the same speed: stragglers.
 *
 * A cluster's NPUs differ: a card throttled by heat or power, a slower bin, a
 * neighbour's noise. Each rank gets a speed factor (1 = the chip model's
 * speed, 0.5 = half as fast): from explicit rank ranges, or drawn once per
 * rank from a seeded normal distribution around 1; on top, every compute op
 * of every rank is stretched by a seeded jitter. The random numbers come from
 * a hash of (seed, rank, op), so the same seed gives the same factors on
 * every machine and in any order of evaluation. Communication is not scaled:
 * a slow rank makes the others wait at their next collective.
 *
 * Nothing here knows about SimGrid; the replay applies the factors to compute
 * op durations (sim/replay/replay_plan.h). */
#ifndef NPUSIM_VARIATION_H
#define NPUSIM_VARIATION_H

#include <stdbool.h>

#define VARIATION_MAX_RANGES 64
/* The slowest and fastest a rank runs against the chip model: given factors
 * must lie here and drawn ones are clipped to the floor, so that no op takes
 * forever (a rank at 0.01 is already 100 times slower than its peers). */
#define VARIATION_MIN_FACTOR 0.01
#define VARIATION_MAX_FACTOR 100

typedef struct {
  int first, last; /* ranks, inclusive */
  double factor;
} variation_range_t;

typedef struct {
  int n;
  variation_range_t v[VARIATION_MAX_RANGES]; /* later ranges win */
} variation_ranges_t;

typedef struct {
  variation_ranges_t ranges;
  double speed_sigma;  /* per-rank factor ~ 1 + sigma N(0, 1); 0: none */
  double jitter_sigma; /* per-op stretch ~ 1 + sigma |N(0, 1)|; 0: none */
  int seed;
} variation_cfg_t;

/* Parses "R[-R]:FACTOR[,...]" (ranks >= 0, factors in [VARIATION_MIN_FACTOR,
 * VARIATION_MAX_FACTOR]) into out; "" is no range. Returns 0, or -1 if text is
 * not such a list. */
int variation_parse_ranges(const char *text, variation_ranges_t *out);

/* Whether any rank or op is away from the chip model's speed. */
bool variation_active(const variation_cfg_t *cfg);

/* The speed factor of rank. */
double variation_speed(const variation_cfg_t *cfg, int rank);

/* The stretch of compute op `op` of rank (>= 1: jitter only slows an op down,
 * as interrupts, clock dips and cache misses do). */
double variation_jitter(const variation_cfg_t *cfg, int rank, long op);

#endif
