/* linkstats.c - per-link bytes, busy time and utilisation; see linkstats.h. */
#include "linkstats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intervals.h"

void linkstats_init(linkstats_t *ls, const topo_t *topo) {
  memset(ls, 0, sizeof *ls);
  ls->topo = topo;
  ls->nslots = 2 * topo->nlinks;
  ls->bytes = calloc((size_t)ls->nslots, sizeof *ls->bytes);
  ls->busy_s = calloc((size_t)ls->nslots, sizeof *ls->busy_s);
  ls->peak = calloc((size_t)ls->nslots, sizeof *ls->peak);
}

void linkstats_free(linkstats_t *ls) {
  for (int i = 0; ls->sweep && i < ls->nslots; i++)
    free(ls->sweep[i].edges);
  free(ls->sweep);
  free(ls->dirty);
  free(ls->bytes);
  free(ls->busy_s);
  free(ls->peak);
  memset(ls, 0, sizeof *ls);
}

void linkstats_add(linkstats_t *ls, int link, int dir, double bytes, double busy_s, double util) {
  int slot = 2 * link + dir;
  ls->bytes[slot] += bytes;
  ls->busy_s[slot] += busy_s;
  if (util > ls->peak[slot])
    ls->peak[slot] = util > 1 ? 1 : util;
}

void linkstats_merge(linkstats_t *ls, const linkstats_t *src) {
  for (int slot = 0; src->bytes && slot < ls->nslots; slot++)
    if (src->bytes[slot] > 0 || src->busy_s[slot] > 0)
      linkstats_add(ls, slot / 2, slot % 2, src->bytes[slot], src->busy_s[slot], src->peak[slot]);
}

static link_sweep_t *slot_sweep(linkstats_t *ls, int slot) {
  if (!ls->sweep) {
    ls->sweep = calloc((size_t)ls->nslots, sizeof *ls->sweep);
    ls->dirty = malloc((size_t)ls->nslots * sizeof *ls->dirty);
  }
  return &ls->sweep[slot];
}

void linkstats_add_interval(linkstats_t *ls, int link, int dir, double start_s, double end_s,
                            double bytes) {
  int slot = 2 * link + dir;
  link_sweep_t *sw = slot_sweep(ls, slot);
  ls->bytes[slot] += bytes;
  double d = end_s - start_s;
  if (d <= 0)
    return;
  if (sw->n + 2 > sw->cap) {
    sw->cap = sw->cap ? 2 * sw->cap : 8;
    sw->edges = realloc(sw->edges, (size_t)sw->cap * sizeof *sw->edges);
  }
  intervals_add(sw->edges, &sw->n, start_s, end_s, 0, bytes / d);
  if (!sw->dirty) {
    sw->dirty = true;
    ls->dirty[ls->ndirty++] = slot;
  }
}

typedef struct {
  linkstats_t *ls;
  int slot;
  double bw;
} slot_sweep_t;

static void slot_stretch(void *ctx, double dt, const int *open, double rate) {
  slot_sweep_t *w = ctx;
  if (open[0] > 0)
    w->ls->busy_s[w->slot] += dt;
  double util = rate / w->bw;
  if (util > w->ls->peak[w->slot])
    w->ls->peak[w->slot] = util > 1 ? 1 : util;
}

/* Walks a slot's edges before t: busy time is the union of its transfers'
 * intervals; the peak is the largest sum of average rates of overlapping
 * transfers. The edges at or after t wait for a later sweep. */
static void sweep_slot(linkstats_t *ls, int slot, double t) {
  link_sweep_t *sw = &ls->sweep[slot];
  intervals_sort(sw->edges, sw->n);
  int k = 0;
  while (k < sw->n && sw->edges[k].t < t)
    k++;
  slot_sweep_t w = {ls, slot, topo_link_bw(ls->topo, slot / 2)};
  intervals_walk(&sw->walk, sw->edges, k, &sw->open, slot_stretch, &w);
  memmove(sw->edges, sw->edges + k, (size_t)(sw->n - k) * sizeof *sw->edges);
  sw->n -= k;
}

void linkstats_add_in_order(linkstats_t *ls, int slot, double start_s, double end_s,
                            double bytes) {
  link_sweep_t *sw = slot_sweep(ls, slot);
  if (sw->n > 0 || (sw->walk.edges > 0 && start_s < sw->walk.last_t)) {
    linkstats_add_interval(ls, slot / 2, slot % 2, start_s, end_s, bytes); /* swept later */
    return;
  }
  ls->bytes[slot] += bytes;
  double d = end_s - start_s;
  if (d <= 0)
    return;
  interval_edge_t e[2];
  int n = 0;
  intervals_add(e, &n, start_s, end_s, 0, bytes / d);
  slot_sweep_t w = {ls, slot, topo_link_bw(ls->topo, slot / 2)};
  intervals_walk(&sw->walk, e, n, &sw->open, slot_stretch, &w);
}

void linkstats_sweep_before(linkstats_t *ls, double t) {
  int kept = 0;
  for (int i = 0; i < ls->ndirty; i++) {
    int slot = ls->dirty[i];
    sweep_slot(ls, slot, t);
    if (ls->sweep[slot].n > 0)
      ls->dirty[kept++] = slot;
    else
      ls->sweep[slot].dirty = false;
  }
  ls->ndirty = kept;
}

void linkstats_sweep_slots_before(linkstats_t *ls, const int *slots, int n, double t) {
  for (int i = 0; ls->sweep && i < n; i++)
    if (ls->sweep[slots[i]].n > 0)
      sweep_slot(ls, slots[i], t);
}

void linkstats_close(linkstats_t *ls) {
  linkstats_sweep_before(ls, INFINITY);
}

static double slot_util(const linkstats_t *ls, int slot, double duration_s) {
  double bw = topo_link_bw(ls->topo, slot / 2);
  return duration_s > 0 ? ls->bytes[slot] / (bw * duration_s) : 0;
}

/* Most utilised first; ties by bytes, then link id and direction (slot order). */
static int by_utilisation(const void *pa, const void *pb) {
  const link_stat_t *a = pa, *b = pb;
  if (a->mean_util != b->mean_util)
    return a->mean_util < b->mean_util ? 1 : -1;
  if (a->bytes != b->bytes)
    return a->bytes < b->bytes ? 1 : -1;
  int sa = 2 * a->link + a->dir, sb = 2 * b->link + b->dir;
  return (sa > sb) - (sa < sb);
}

int linkstats_rank(const linkstats_t *ls, double duration_s, const linkstats_view_t *view,
                   link_stat_t **out) {
  int count = 0;
  *out = malloc(((size_t)ls->nslots + 1) * sizeof **out);
  for (int slot = 0; slot < ls->nslots; slot++) {
    unsigned kind = 1u << ls->topo->links[slot / 2].kind;
    if (ls->bytes[slot] <= 0 || (view->kinds && !(view->kinds & kind)))
      continue;
    (*out)[count++] = (link_stat_t){
        slot / 2,      slot % 2, ls->bytes[slot], ls->busy_s[slot], slot_util(ls, slot, duration_s),
        ls->peak[slot]};
  }
  qsort(*out, (size_t)count, sizeof **out, by_utilisation);
  return view->rows >= 0 && view->rows < count ? view->rows : count;
}

int linkstats_parse_view(const char *rows, const char *kinds, linkstats_view_t *view, npu_err_t *err) {
  *view = (linkstats_view_t){LINKSTATS_DEFAULT_ROWS, 0};
  if (rows && strcmp(rows, "all") == 0) {
    view->rows = LINKSTATS_ALL;
  } else if (rows) {
    char *end;
    long n = strtol(rows, &end, 10);
    if (end == rows || *end || n < 1 || n > 1000000000L)
      return npu_err_set(err, "--links: expected a count of rows (1 or more) or all, found "
                      "\"%.40s\"",
                      rows),
             -1;
    view->rows = (int)n;
  }
  for (const char *p = kinds; p && *p;) {
    size_t len = strcspn(p, ",");
    int k = 0;
    if (len == 9 && strncmp(p, "scale_out", 9) == 0) {
      view->kinds |= 1u << TOPO_LINK_NIC | 1u << TOPO_LINK_UPLINK | 1u << TOPO_LINK_CORE;
    } else {
      while (k < TOPO_LINK_KIND_COUNT && !(strlen(topo_link_kind_names[k]) == len &&
                                           strncmp(p, topo_link_kind_names[k], len) == 0))
        k++;
      if (k == TOPO_LINK_KIND_COUNT)
        return npu_err_set(err, "--links-kind: expected a comma-separated list of scale_up, "
                        "die, supernode, nic, uplink, core, scale_out (nic, uplink and core), "
                        "found \"%.*s\"",
                        (int)(len < 40 ? len : 40), p),
               -1;
      view->kinds |= 1u << k;
    }
    p += len + (p[len] == ',');
  }
  return 0;
}

void linkstats_print_table(FILE *out, const topo_t *t, const link_stat_t *ls, int n) {
  fprintf(out, "# %-18s %-10s %4s %14s %12s %9s %9s\n", "link", "kind", "dir", "bytes", "busy_us",
          "mean_util", "peak_util");
  for (int i = 0; i < n; i++) {
    char name[64];
    topo_link_name(t, ls[i].link, name, sizeof name);
    fprintf(out, "  %-18s %-10s %4s %14.0f %12.2f %9.3f %9.3f\n", name,
            topo_link_kind_names[t->links[ls[i].link].kind], ls[i].dir ? "b>a" : "a>b", ls[i].bytes,
            ls[i].busy_s * 1e6, ls[i].mean_util, ls[i].peak_util);
  }
}

void linkstats_print_json(FILE *out, const topo_t *t, const link_stat_t *ls, int n) {
  fputs("[", out);
  for (int i = 0; i < n; i++) {
    char name[64];
    topo_link_name(t, ls[i].link, name, sizeof name);
    fprintf(out,
            "%s\n    {\"link\": \"%s\", \"kind\": \"%s\", \"direction\": \"%s\", "
            "\"bytes\": %.0f, \"busy_us\": %.3f, \"mean_util\": %.4f, \"peak_util\": %.4f}",
            i ? "," : "", name, topo_link_kind_names[t->links[ls[i].link].kind],
            ls[i].dir ? "b>a" : "a>b", ls[i].bytes, ls[i].busy_s * 1e6, ls[i].mean_util,
            ls[i].peak_util);
  }
  fputs("]", out);
}
