/* jobs_place.c - placing jobs on the cluster's NPUs; see jobs_place.h. */
#include "jobs_place.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu_int.h"

const char *const jobs_policy_names[JOBS_POLICY_COUNT] = {"packed", "spread", "list"};

int jobs_parse_spec(const char *arg, jobs_spec_t *out, npu_err_t *err) {
  memset(out, 0, sizeof *out);
  const char *at = strrchr(arg, '@');
  size_t flen = at ? (size_t)(at - arg) : strlen(arg);
  if (flen == 0 || flen >= sizeof out->file)
    return npu_err_set(err, "--job %.200s: expected FILE[@packed|@spread|@NPU-LIST], "
                    "found no file",
                    arg),
           -1;
  memcpy(out->file, arg, flen);
  out->file[flen] = '\0';
  const char *where = at ? at + 1 : "packed";
  if (strcmp(where, "packed") == 0)
    out->policy = JOBS_PACKED;
  else if (strcmp(where, "spread") == 0)
    out->policy = JOBS_SPREAD;
  else {
    out->policy = JOBS_LIST;
    out->list = where;
    if (jobs_list_extent(out) < 0)
      return npu_err_set(err, "--job %.200s: expected packed, spread or an NPU list "
                      "such as 0-15,32-47 after @, found \"%.60s\"",
                      arg, where),
             -1;
  }
  return 0;
}

/* Calls visit(npu) for each NPU of the list in order; returns how many, or
 * -1 if the text is not a list of ranges. */
static long walk_list(const char *text, void (*visit)(void *, int), void *ctx) {
  long n = 0;
  const char *p = text;
  for (;;) {
    long a, b;
    const char *end = npu_parse_range(p, JOBS_MAX_NPU, &a, &b);
    if (!end)
      return -1;
    for (long v = a; v <= b; v++, n++)
      if (visit)
        visit(ctx, (int)v);
    if (*end == '\0')
      return n;
    if (*end != ',')
      return -1;
    p = end + 1;
  }
}

static void note_max(void *ctx, int npu) {
  int *m = ctx;
  if (npu + 1 > *m)
    *m = npu + 1;
}

int jobs_list_extent(const jobs_spec_t *spec) {
  if (spec->policy != JOBS_LIST)
    return 0;
  int max = 0;
  return walk_list(spec->list, note_max, &max) < 0 ? -1 : max;
}

typedef struct {
  int *map, n;
} fill_t;

static void fill(void *ctx, int npu) {
  fill_t *f = ctx;
  f->map[f->n++] = npu;
}

static int free_in(const jobs_fabric_t *fab, const bool *used, int server) {
  int n = 0;
  for (int l = 0; l < fab->npus_per_server; l++)
    n += !used[server * fab->npus_per_server + l];
  return n;
}

/* The first `need` contiguous free NPUs of the server, or -1. */
static int free_run(const jobs_fabric_t *fab, const bool *used, int server, int need) {
  int k = fab->npus_per_server, run = 0;
  for (int l = 0; l < k; l++) {
    run = used[server * k + l] ? 0 : run + 1;
    if (run == need)
      return server * k + l - need + 1;
  }
  return -1;
}

/* The server for the job's i-th server slot: packed takes the first that
 * fits; spread the first that fits on the next leaf, round-robin. */
static int pick_server(const jobs_spec_t *spec, const jobs_fabric_t *fab, const bool *used,
                       int need, int *next_leaf) {
  int leaves = 0;
  for (int s = 0; s < fab->servers; s++)
    if (fab->leaf_of_server[s] + 1 > leaves)
      leaves = fab->leaf_of_server[s] + 1;
  for (int tries = 0; tries < (spec->policy == JOBS_SPREAD ? leaves : 1); tries++) {
    int leaf = (*next_leaf + tries) % leaves;
    for (int s = 0; s < fab->servers; s++)
      if ((spec->policy != JOBS_SPREAD || fab->leaf_of_server[s] == leaf) &&
          free_run(fab, used, s, need) >= 0) {
        *next_leaf = leaf + 1;
        return s;
      }
  }
  return -1;
}

int jobs_place(const jobs_spec_t *spec, int ranks, const jobs_fabric_t *fab, bool *used, int *map,
               npu_err_t *err) {
  int total = fab->servers * fab->npus_per_server;
  if (spec->policy == JOBS_LIST) {
    fill_t f = {map, 0};
    long n = walk_list(spec->list, NULL, NULL);
    if (n != ranks)
      return npu_err_set(err, "%s: expected %d NPUs after @ for its %d ranks, found %ld "
                      "in \"%.60s\"",
                      spec->file, ranks, ranks, n, spec->list),
             -1;
    walk_list(spec->list, fill, &f);
    for (int r = 0; r < ranks; r++) {
      if (map[r] >= total)
        return npu_err_set(err, "%s: expected NPUs below %d (the cluster's), found %d",
                        spec->file, total, map[r]),
               -1;
      if (used[map[r]])
        return npu_err_set(err, "%s: expected NPUs no other job holds, found NPU %d "
                        "taken (or named twice)",
                        spec->file, map[r]),
               -1;
      used[map[r]] = true;
    }
    return 0;
  }
  int k = fab->npus_per_server, per = ranks < k ? ranks : k, next_leaf = 0;
  if (ranks > k && ranks % k)
    return npu_err_set(err, "%s: expected at most %d ranks or a multiple of %d (whole "
                    "servers) to place it %s, found %d",
                    spec->file, k, k, jobs_policy_names[spec->policy], ranks),
           -1;
  for (int slot = 0; slot * k < ranks; slot++) {
    int s = pick_server(spec, fab, used, per, &next_leaf);
    if (s < 0) {
      int free_npus = 0;
      for (int t = 0; t < fab->servers; t++)
        free_npus += free_in(fab, used, t);
      return npu_err_set(err, "%s: expected room for its %d ranks (%s, %d per server), "
                      "found %d free NPUs%s",
                      spec->file, ranks, jobs_policy_names[spec->policy], per, free_npus,
                      free_npus >= ranks ? " in pieces" : ""),
             -1;
    }
    int first = free_run(fab, used, s, per);
    for (int l = 0; l < per; l++) {
      map[slot * k + l] = first + l;
      used[first + l] = true;
    }
  }
  return 0;
}

void jobs_format_npus(const int *map, int n, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && used < len;) {
    int j = i;
    while (j + 1 < n && map[j + 1] == map[j] + 1)
      j++;
    int w = j > i ? snprintf(buf + used, len - used, "%s%d-%d", i ? "," : "", map[i], map[j])
                  : snprintf(buf + used, len - used, "%s%d", i ? "," : "", map[i]);
    used += w > 0 ? (size_t)w : 0;
    i = j + 1;
  }
}
