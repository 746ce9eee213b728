/* linkstats.h - how hard each link worked during a collective or a step: bytes
 * each way, busy time, mean and peak utilisation against the link's effective
 * bandwidth (line rate x efficiency). Filled by either engine:
 *   analytic: per round of a phase, from the bytes each link carries;
 *   flow:     from the start and end times of every transfer crossing it, with
 *             each transfer's average rate (an approximation of the rates
 *             SimGrid's max-min sharing gives it at each instant). */
#ifndef NPUSIM_LINKSTATS_H
#define NPUSIM_LINKSTATS_H

#include <stdbool.h>
#include <stdio.h>

#include "intervals.h"
#include "topo.h"
#include "npu_err.h"

typedef struct {
  int link, dir;      /* topo link and direction (0: a -> b) */
  double bytes;       /* carried in this direction */
  double busy_s;      /* time with at least one transfer on it */
  double mean_util;   /* bytes / (effective bandwidth x duration) */
  double peak_util;   /* highest instantaneous utilisation, <= 1 */
} link_stat_t;

/* A link direction's transfers not swept yet, and the sweep so far (flow). */
typedef struct {
  interval_edge_t *edges;
  int n, cap;
  int open;          /* transfers open after the edges walked */
  interval_walk_t walk;
  bool dirty;        /* in the dirty list */
} link_sweep_t;

typedef struct {
  const topo_t *topo;
  int nslots;            /* 2 per link */
  double *bytes, *busy_s, *peak;
  link_sweep_t *sweep;   /* flow engine: per slot; NULL until a transfer comes */
  int *dirty, ndirty;    /* slots with edges not swept yet */
} linkstats_t;

void linkstats_init(linkstats_t *ls, const topo_t *topo);
void linkstats_free(linkstats_t *ls);

/* Analytic engine: a link direction carried bytes, busy for busy_s, at a
 * utilisation of util while busy. */
void linkstats_add(linkstats_t *ls, int link, int dir, double bytes, double busy_s, double util);

/* Flow engine: a transfer of bytes crossed the link direction from start to end.
 * Call linkstats_close once all are added. */
void linkstats_add_interval(linkstats_t *ls, int link, int dir, double start_s, double end_s,
                            double bytes);
/* Flow engine: the same for a transfer on slot (2 x link + direction) that
 * the caller knows ends before any transfer to come on it starts, and
 * starts after the last one's end: walked at once, none of it kept. */
void linkstats_add_in_order(linkstats_t *ls, int slot, double start_s, double end_s,
                            double bytes);
/* Flow engine: no transfer added from now on starts before t, so the sweeps
 * go up to it and hold only what comes after (memory holds what is in
 * flight, not what ran); the same figures as one sweep at the close. */
void linkstats_sweep_before(linkstats_t *ls, double t);
/* The same for the slots (2 x link + direction) slots[0..n) only. */
void linkstats_sweep_slots_before(linkstats_t *ls, const int *slots, int n, double t);
void linkstats_close(linkstats_t *ls);
/* Adds the figures of a closed src (same topology) to ls: ls's are src's
 * exactly where ls had none. */
void linkstats_merge(linkstats_t *ls, const linkstats_t *src);

/* Which link directions a report shows: the most utilised `rows` (or all) of
 * the kinds in `kinds` (a bit per topo_link_kind_t; 0: every kind). */
typedef struct {
  int rows;
  unsigned kinds;
} linkstats_view_t;

#define LINKSTATS_ALL (-1)
#define LINKSTATS_DEFAULT_ROWS 10

/* The view --links [N|all] and --links-kind K[,K] ask for (NULL: not given):
 * 0, or -1 with "--links...: expected ..., found ..." in err. scale_out is nic
 * and uplink. */
int linkstats_parse_view(const char *rows, const char *kinds, linkstats_view_t *view,
                         npu_err_t *err);

/* The link directions that carried bytes, of the view's kinds, most utilised
 * first (mean utilisation over duration_s, then bytes, then link id and
 * direction), in *out (malloc'd, the caller frees it; all of them are there).
 * Returns how many of them the view shows. */
int linkstats_rank(const linkstats_t *ls, double duration_s, const linkstats_view_t *view,
                   link_stat_t **out);

/* Rows of linkstats_rank as a table (with a header line) or a JSON array. */
void linkstats_print_table(FILE *out, const topo_t *t, const link_stat_t *ls, int n);
void linkstats_print_json(FILE *out, const topo_t *t, const link_stat_t *ls, int n);

#endif
