/* npu_int.h - integer helpers every layer shares: rounding up, sorting, hashing
 * and the rank or server ranges of config strings ("3-5").
 *
 * Header-only, with no dependency, so hw_models/, workloads/ and sim/ can all
 * include it (CMake target npusim_common; it lives under the lowest layer
 * because the top-level folders are fixed). The hash is FNV-1a for in-memory hash
 * tables; its values are not stable across versions and never reach an output. */
#ifndef NPUSIM_NPU_INT_H
#define NPUSIM_NPU_INT_H

#include <stdint.h>
#include <stdlib.h>

/* a / b rounded up, for a >= 0 and b > 0. */
static inline int64_t npu_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The least l with 2^l >= x: 0 for x <= 1. */
static inline int npu_ceil_log2(int x) {
  int l = 0;
  while ((1 << l) < x)
    l++;
  return l;
}

/* qsort's comparison of two ints, ascending. */
static inline int npu_cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

#define NPU_HASH_SEED 1469598103934665603ULL /* FNV-1a's 64-bit offset basis */
#define NPU_HASH_PRIME 1099511628211ULL      /* FNV-1a's 64-bit prime */

/* Folds one 64-bit word into hash h (start from NPU_HASH_SEED): an FNV-1a step,
 * then a shift that carries the high bits down, since a table indexes by the low
 * bits and the multiply moves information only upwards. */
static inline uint64_t npu_hash_u64(uint64_t h, uint64_t word) {
  h = (h ^ word) * NPU_HASH_PRIME;
  return h ^ (h >> 29);
}

/* The next number of the splitmix64 sequence whose state is *state (Steele,
 * Lea and Flood 2014): the same numbers on every platform, for the seeded
 * draws (the request generator, the routing skew). */
static inline uint64_t npu_splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Folds the bytes of NUL-terminated s into hash h: plain FNV-1a. */
static inline uint64_t npu_hash_str(uint64_t h, const char *s) {
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * NPU_HASH_PRIME;
  return h;
}

/* A range "N" or "N-M" of plain digits (no sign, no space) at p, with
 * N <= M <= max: returns the character after it, or NULL if p does not start
 * with one. The one reader of the ranges in speed factors, node types and
 * job placements. */
static inline const char *npu_parse_range(const char *p, long max, long *first, long *last) {
  if (*p < '0' || *p > '9')
    return NULL;
  char *end;
  *first = *last = strtol(p, &end, 10);
  if (*end == '-') {
    if (end[1] < '0' || end[1] > '9')
      return NULL;
    *last = strtol(end + 1, &end, 10);
  }
  return *first <= *last && *last <= max ? end : NULL;
}

#endif
