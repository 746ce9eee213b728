/* platform.c - SimGrid platform XML from the topology; see platform.h. */
#include "platform.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void pair_set_init(pair_set_t *s) {
  s->cap = 1024;
  s->count = 0;
  s->keys = calloc(s->cap, sizeof *s->keys);
}

void pair_set_free(pair_set_t *s) {
  free(s->keys);
  s->keys = NULL;
  s->cap = s->count = 0;
}

static size_t slot_of(uint64_t key, size_t cap) {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdULL;
  key ^= key >> 33;
  return (size_t)key & (cap - 1);
}

static bool insert(uint64_t *keys, size_t cap, uint64_t key, size_t *count) {
  size_t i = slot_of(key, cap);
  while (keys[i] && keys[i] != key)
    i = (i + 1) & (cap - 1);
  if (keys[i])
    return false;
  keys[i] = key;
  (*count)++;
  return true;
}

bool pair_set_add(pair_set_t *s, int src, int dst) {
  if (2 * (s->count + 1) > s->cap) { /* keep the table at most half full */
    size_t cap = s->cap * 2, count = 0;
    uint64_t *keys = calloc(cap, sizeof *keys);
    for (size_t i = 0; i < s->cap; i++)
      if (s->keys[i])
        insert(keys, cap, s->keys[i], &count);
    free(s->keys);
    s->keys = keys;
    s->cap = cap;
  }
  return insert(s->keys, s->cap, (((uint64_t)src << 32) | (uint32_t)dst) + 1, &s->count);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void profile_path(const char *platform, int link, char *buf, size_t len) {
  snprintf(buf, len, "%s.L%d", platform, link);
}

/* Whether the link gets a bandwidth profile: it has timed faults, or dies. */
static bool has_profile(const topo_t *t, int link) {
  return (t->nchanges && t->change_off[link] < t->change_off[link + 1]) ||
         topo_link_dies(t, link);
}

void platform_remove(const topo_t *t, const char *path) {
  for (int l = 0; l < t->nlinks; l++)
    if (has_profile(t, l)) {
      char p[PLATFORM_PROFILE_PATH_MAX];
      profile_path(path, l, p, sizeof p);
      unlink(p);
    }
  unlink(path);
}

/* The link's bandwidth from each of its timed faults on, one "time bandwidth"
 * line per time (SimGrid's legacy profile, absolute dates, not repeated). */
static int write_profile(const topo_t *t, const char *platform, int link, npu_err_t *err) {
  char p[PLATFORM_PROFILE_PATH_MAX];
  profile_path(platform, link, p, sizeof p);
  FILE *f = fopen(p, "w");
  if (!f)
    return npu_err_set(err, "%s: cannot write a SimGrid bandwidth profile: %s", p,
                    strerror(errno)), -1;
  bool dies = topo_link_dies(t, link);
  for (int c = t->nchanges ? t->change_off[link] : 0; t->nchanges && c < t->change_off[link + 1];
       c++) {
    double at = t->changes[c].at_s;
    if (dies && at >= t->death_s)
      break; /* dead from then on */
    if (c + 1 < t->change_off[link + 1] && t->changes[c + 1].at_s == at)
      continue; /* one line per time, with every change at it */
    fprintf(f, "%.17g %.17g\n", at, topo_link_bw_at(t, link, at));
  }
  /* A dead link carries nothing new: no route from T crosses it, and the
   * transfers on it at T are resent elsewhere (coll_flow.c). What they left
   * on it crawls at 1 byte/s, unwaited, until its actors end (SimGrid 3.32's C
   * API cannot cancel a communication, and a link turned off fails them with
   * an exception C cannot catch). */
  if (dies)
    fprintf(f, "%.17g 1\n", t->death_s);
  bool failed = ferror(f) != 0; /* a write that failed (a full disk) sets it */
  if (fclose(f) != 0 || failed)
    return npu_err_set(err, "%s: cannot write a SimGrid bandwidth profile: %s", p,
                    strerror(errno)), -1;
  return 0;
}

static const char *platform_folder; /* platform_set_folder's; NULL: /tmp */

void platform_set_folder(const char *dir) {
  platform_folder = dir;
}

int platform_write(const topo_t *t, int endpoints, const pair_set_t *pairs, char *path,
                   size_t path_len, npu_err_t *err) {
  const char *dir = platform_folder ? platform_folder : "/tmp";
  size_t room = path_len < PLATFORM_PATH_MAX ? path_len : PLATFORM_PATH_MAX;
  if ((size_t)snprintf(path, room, "%s/npusim-platform-XXXXXX", dir) >= room) {
    npu_err_set(err, "TMPDIR: expected a folder path of at most %zu characters (the "
             "SimGrid platform is written there), found %zu", room - 24, strlen(dir));
    path[0] = '\0';
    return -1;
  }
  int fd = mkstemp(path);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) {
    npu_err_set(err, "%s: cannot write the SimGrid platform: %s", path, strerror(errno));
    if (fd >= 0)
      close(fd);
    return -1;
  }
  /* Routes in a fixed order, so the same inputs write the same file. */
  uint64_t *keys = malloc((pairs->count + 1) * sizeof *keys);
  size_t n = 0;
  for (size_t i = 0; i < pairs->cap; i++)
    if (pairs->keys[i])
      keys[n++] = pairs->keys[i] - 1;
  qsort(keys, n, sizeof *keys, cmp_u64);
  char *used = calloc((size_t)t->nlinks + 1, 1);
  topo_hop_t hops[TOPO_MAX_HOPS];
  for (size_t i = 0; i < n; i++)
    for (const topo_t *on = t; on; on = on == t ? t->after : NULL) {
      int nh = topo_route(on, (int)(keys[i] >> 32), (int)(uint32_t)keys[i], hops);
      for (int h = 0; h < nh; h++)
        used[hops[h].link] = 1;
    }
  fprintf(f, "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM "
             "\"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\">\n"
             "<zone id=\"npusim\" routing=\"Full\">\n");
  for (int e = 0; e < endpoints; e++)
    fprintf(f, "<host id=\"h%d\" speed=\"1f\"/>\n", e);
  for (int e = 0; t->after && e < endpoints; e++) /* the shadow hosts (platform.h) */
    fprintf(f, "<host id=\"a%d\" speed=\"1f\"/>\n", e);
  int rc = 0;
  for (int l = 0; l < t->nlinks; l++) {
    if (!used[l])
      continue;
    fprintf(f, "<link id=\"L%d\" bandwidth=\"%.17gBps\" latency=\"0s\" "
               "sharing_policy=\"SPLITDUPLEX\"", l, topo_link_bw(t, l));
    if (has_profile(t, l)) {
      /* by its name in the platform's folder: SimGrid 3.32 opens an absolute
       * path, then tries it again under "./", and fails (surf_ifsopen) */
      const char *base = strrchr(path, '/');
      fprintf(f, " bandwidth_file=\"%s.L%d\"", base ? base + 1 : path, l);
      rc = rc ? rc : write_profile(t, path, l, err);
    }
    fputs("/>\n", f);
  }
  static const char *const ends[4][2] = {{"h", "h"}, {"a", "a"}, {"a", "h"}, {"h", "a"}};
  for (int k = 0; k < (t->after ? 4 : 1); k++) /* k > 0: a shadow host at one end */
    for (size_t i = 0; i < n; i++) {
      int src = (int)(keys[i] >> 32), dst = (int)(uint32_t)keys[i];
      int nh = topo_route(k ? t->after : t, src, dst, hops);
      fprintf(f, "<route src=\"%s%d\" dst=\"%s%d\" symmetrical=\"NO\">", ends[k][0], src,
              ends[k][1], dst);
      for (int h = 0; h < nh; h++)
        fprintf(f, "<link_ctn id=\"L%d\" direction=\"%s\"/>", hops[h].link,
                hops[h].dir ? "DOWN" : "UP");
      fputs("</route>\n", f);
    }
  fputs("</zone>\n</platform>\n", f);
  free(keys);
  free(used);
  bool failed = ferror(f) != 0;
  if ((fclose(f) != 0 || failed) && rc == 0) {
    npu_err_set(err, "%s: cannot write the SimGrid platform: %s", path, strerror(errno));
    rc = -1;
  }
  if (rc)
    platform_remove(t, path);
  return rc;
}
