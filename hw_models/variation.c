/* variation.c - per-rank speed factors and per-op jitter; see variation.h. */
#include "variation.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "npu_int.h"

int variation_parse_ranges(const char *text, variation_ranges_t *out) {
  int n = 0;
  const char *p = text;
  while (*p) {
    long first, last;
    if (!(p = npu_parse_range(p, 100000000, &first, &last)))
      return -1;
    if (*p != ':')
      return -1;
    char *end;
    errno = 0;
    double f = strtod(p + 1, &end);
    if (end == p + 1 || !(f >= VARIATION_MIN_FACTOR && f <= VARIATION_MAX_FACTOR) || errno)
      return -1;
    p = end;
    if (n == VARIATION_MAX_RANGES || (*p && *p != ','))
      return -1;
    out->v[n++] = (variation_range_t){(int)first, (int)last, f};
    if (*p == ',' && !*++p)
      return -1;
  }
  out->n = n;
  return 0;
}

bool variation_active(const variation_cfg_t *cfg) {
  return cfg->ranges.n > 0 || cfg->speed_sigma > 0 || cfg->jitter_sigma > 0;
}

/* A uniform number in (0, 1) from (seed, a, b, stream): splitmix64 of a mix. */
static double unit(int seed, uint64_t a, uint64_t b, uint64_t stream) {
  uint64_t z = (uint64_t)(uint32_t)seed * 0x9e3779b97f4a7c15ull ^ a * 0xbf58476d1ce4e5b9ull ^
               b * 0x94d049bb133111ebull ^ stream;
  for (int i = 0; i < 2; i++) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
  }
  return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}

static double normal(int seed, uint64_t a, uint64_t b) {
  return sqrt(-2 * log(unit(seed, a, b, 1))) * cos(2 * M_PI * unit(seed, a, b, 2));
}

double variation_speed(const variation_cfg_t *cfg, int rank) {
  double f = 1;
  if (cfg->speed_sigma > 0)
    f = fmax(VARIATION_MIN_FACTOR, 1 + cfg->speed_sigma * normal(cfg->seed, (uint64_t)rank, 0));
  for (int i = 0; i < cfg->ranges.n; i++)
    if (rank >= cfg->ranges.v[i].first && rank <= cfg->ranges.v[i].last)
      f = cfg->ranges.v[i].factor;
  return f;
}

double variation_jitter(const variation_cfg_t *cfg, int rank, long op) {
  if (cfg->jitter_sigma <= 0)
    return 1;
  return 1 + cfg->jitter_sigma * fabs(normal(cfg->seed, (uint64_t)rank + 1, (uint64_t)op + 1));
}
