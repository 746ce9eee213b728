/* linkstats.h - how hard each link worked during a collective or a step: bytes
 * each way, busy time, mean and peak utilisation against the link's effective
 * bandwidth (line rate x efficiency). Filled by either engine:
 *   analytic: per round of a phase, from the bytes each link carries;
 *   flow:     from the start and end times of every transfer crossing it, with
 *             each transfer's average rate (an approximation of the rates
 *             SimGrid's max-min sharing gives it at each instant). */
#ifndef NPUSIM_LINKSTATS_H
#define NPUSIM_LINKSTATS_H

#include <stdio.h>

#include "topo.h"
#include "npu_err.h"

typedef struct {
  int link, dir;      /* topo link and direction (0: a -> b) */
  double bytes;       /* carried in this direction */
  double busy_s;      /* time with at least one transfer on it */
  double mean_util;   /* bytes / (effective bandwidth x duration) */
  double peak_util;   /* highest instantaneous utilisation, <= 1 */
} link_stat_t;

typedef struct {
  double start_s, end_s, bytes;
} link_interval_t;

typedef struct {
  const topo_t *topo;
  int nslots;            /* 2 per link */
  double *bytes, *busy_s, *peak;
  link_interval_t **iv;  /* flow engine: transfers per slot */
  int *niv, *cap;
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
void linkstats_close(linkstats_t *ls);

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
