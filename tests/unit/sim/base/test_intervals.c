/* test_intervals.c - intervals_sort: the stable sort by time (ends before
 * starts at a tie, then by rate; equal edges keep their order), on inputs that
 * take each of its paths: in order already, a few interleaved chains with
 * ties, one pile per edge (reversed), and random order. The reference is qsort
 * on the same key with the edge's place as the last key. */
#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>

#include "intervals.h"
#include "suites.h"

typedef struct {
  interval_edge_t e;
  int place;
} placed_t;

static int by_key_then_place(const void *a, const void *b) {
  const placed_t *x = a, *y = b;
  if (x->e.t != y->e.t)
    return x->e.t < y->e.t ? -1 : 1;
  if (x->e.delta != y->e.delta)
    return x->e.delta - y->e.delta;
  if (x->e.rate != y->e.rate)
    return x->e.rate < y->e.rate ? -1 : 1;
  return x->place - y->place;
}

/* Sorts e both ways and checks every field of every edge; the class records
 * the edge's place, so a tie broken the other way is seen. */
static void expect_stable_sort(interval_edge_t *e, int n) {
  placed_t *ref = malloc((size_t)n * sizeof *ref + 1);
  for (int i = 0; i < n; i++) {
    e[i].cls = i;
    ref[i] = (placed_t){e[i], i};
  }
  qsort(ref, (size_t)n, sizeof *ref, by_key_then_place);
  intervals_sort(e, n);
  int wrong = 0;
  for (int i = 0; i < n; i++)
    wrong += memcmp(&e[i], &ref[i].e, sizeof e[i]) != 0;
  CU_ASSERT_EQUAL(wrong, 0);
  free(ref);
}

/* chains interleaved: edge i belongs to chain i % chains, each chain's times
 * rise by whole steps, so chains tie with each other often */
static void test_sort_is_stable_by_time(void) {
  enum { N = 20000 };
  interval_edge_t *e = malloc(N * sizeof *e);
  unsigned seed = 12345;
  for (int chains = 1; chains <= 64; chains *= 4) {
    for (int i = 0; i < N; i++) {
      seed = seed * 1103515245u + 12345u;
      e[i] = (interval_edge_t){(double)(i / chains) + (double)(i % chains % 3), 0,
                               (seed >> 16) % 2 ? 1 : -1, (double)((seed >> 8) % 3)};
    }
    expect_stable_sort(e, N);
  }
  for (int i = 0; i < N; i++) /* in order already */
    e[i] = (interval_edge_t){(double)(i / 2), 0, i % 2 ? 1 : -1, 0};
  expect_stable_sort(e, N);
  for (int i = 0; i < N; i++) /* reversed: a pile per edge */
    e[i] = (interval_edge_t){(double)(N - i), 0, 1, 0};
  expect_stable_sort(e, N);
  for (int i = 0; i < N; i++) { /* random, few distinct keys: many ties */
    seed = seed * 1103515245u + 12345u;
    e[i] = (interval_edge_t){(double)((seed >> 16) % 50), 0, (seed >> 4) % 2 ? 1 : -1,
                             (double)((seed >> 8) % 2)};
  }
  expect_stable_sort(e, N);
  expect_stable_sort(e, 1);
  expect_stable_sort(e, 0);
  free(e);
}

CU_TestInfo intervals_tests[] = {
    {"edges sort stably by time", test_sort_is_stable_by_time},
    CU_TEST_INFO_NULL,
};
