/* replay_report.c - what a replay reports: the step time, each rank's compute,
 * communication (exposed or hidden) and idle time, each communicator's traffic,
 * the busiest links and the memory high-water mark. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonfile.h"
#include "out_format.h"
#include "replay.h"
#include "replay_energy.h"

#define TABLE_RANKS 16 /* beyond this, the table shows min / mean / max */
#define GIB (1024.0 * 1024.0 * 1024.0)

/* HBM of rank's chip (its server's, cluster.node_types), bytes. */
static double rank_hbm_bytes(const system_cfg_t *sys, const replay_result_t *r, int rank) {
  int k = config_server_chip_index(sys, topo_server_of(&r->topo, rank));
  return (double)config_chip_at(sys, k)->hbm.capacity_bytes;
}

/* The rank whose peak memory leaves the least room on its chip: the fullest
 * rank when every chip is the same. */
static int peak_rank(const system_cfg_t *sys, const replay_result_t *r) {
  int best = 0;
  bool mixed = sys->cluster.node_types.n > 0;
  for (int i = 1; i < r->ranks; i++) {
    double room = mixed ? rank_hbm_bytes(sys, r, i) - r->per_rank[i].peak_memory_bytes : 0;
    double best_room =
        mixed ? rank_hbm_bytes(sys, r, best) - r->per_rank[best].peak_memory_bytes : 0;
    if (mixed ? room < best_room
              : r->per_rank[i].peak_memory_bytes > r->per_rank[best].peak_memory_bytes)
      best = i;
  }
  return best;
}

static void print_json(FILE *out, const trace_t *t, const system_cfg_t *sys,
                       const replay_result_t *r, const char *fidelity, const link_stat_t *ls,
                       int nls) {
  fprintf(out, "{\n  \"fidelity\": \"%s\",\n  \"ranks\": %d,\n  \"step_time_s\": %.9g,\n"
          "  \"per_rank\": [", fidelity, r->ranks, r->step_time_s);
  for (int i = 0; i < r->ranks; i++) {
    const replay_rank_t *p = &r->per_rank[i];
    fprintf(out, "%s\n    {\"rank\": %d, \"compute_s\": %.9g, \"comm_s\": %.9g, "
            "\"exposed_comm_s\": %.9g, \"idle_s\": %.9g, \"peak_memory_GiB\": %.6g}",
            i ? "," : "", i, p->compute_s, p->comm_s, p->exposed_comm_s, p->idle_s,
            p->peak_memory_bytes / GIB);
  }
  fputs("\n  ],\n  \"communicators\": [", out);
  for (int c = 0; c < t->ncomms; c++) {
    fprintf(out, "%s\n    {\"name\": ", c ? "," : "");
    jsonfile_write_string(out, t->comms[c].name);
    fprintf(out, ", \"collectives\": %ld, \"bytes\": %.0f, \"busy_s\": %.9g}",
            r->per_comm[c].collectives, r->per_comm[c].bytes, r->per_comm[c].busy_s);
  }
  fputs(t->ncomms ? "\n  ],\n  \"links\": " : "],\n  \"links\": ", out);
  linkstats_print_json(out, &r->topo, ls, nls);
  int pk = peak_rank(sys, r);
  double cap = rank_hbm_bytes(sys, r, pk), peak = r->per_rank[pk].peak_memory_bytes;
  fprintf(out, ",\n  \"memory\": {\"capacity_GiB\": %.6g, \"peak_GiB\": %.6g, \"peak_rank\": %d, "
          "\"fits\": %s},\n", cap / GIB, peak / GIB, pk, peak <= cap ? "true" : "false");
  replay_energy_t en;
  replay_energy(sys, t, r, &en);
  fprintf(out, "  \"energy\": {\"modelled\": %s, \"step_J\": %.9g, \"idle_J\": %.9g, "
          "\"compute_J\": %.9g, \"hbm_J\": %.9g, \"links_J\": %.9g, "
          "\"avg_power_W_per_npu\": %.6g}\n}\n", en.modelled ? "true" : "false", en.total_J,
          en.idle_J, en.compute_J, en.hbm_J, en.links_J,
          r->step_time_s > 0 ? en.total_J / r->step_time_s / r->ranks : 0);
}

static void print_rank_row(FILE *out, const char *label, const replay_rank_t *p) {
  fprintf(out, "  %-6s %14.3f %14.3f %16.3f %14.3f %13.3f\n", label, p->compute_s * 1e6,
          p->comm_s * 1e6, p->exposed_comm_s * 1e6, p->idle_s * 1e6, p->peak_memory_bytes / GIB);
}

static void print_table(FILE *out, const trace_t *t, const system_cfg_t *sys,
                        const replay_result_t *r, const char *fidelity, const link_stat_t *ls,
                        int nls) {
  fprintf(out, "# npusim replay: %s, %d ranks on %s, %s fidelity\n", t->name ? t->name : "trace",
          r->ranks, sys->name, fidelity);
  fprintf(out, "step time: %.3f us\n\n", r->step_time_s * 1e6);
  fprintf(out, "# %-6s %14s %14s %16s %14s %13s\n", "rank", "compute_us", "comm_us",
          "exposed_comm_us", "idle_us", "peak_mem_GiB");
  if (r->ranks <= TABLE_RANKS) {
    for (int i = 0; i < r->ranks; i++) {
      char label[16];
      snprintf(label, sizeof label, "%d", i);
      print_rank_row(out, label, &r->per_rank[i]);
    }
  } else { /* min, mean, max of each column */
    replay_rank_t lo = r->per_rank[0], hi = lo, mean = {0};
    for (int i = 0; i < r->ranks; i++) {
      const replay_rank_t *p = &r->per_rank[i];
      double v[5] = {p->compute_s, p->comm_s, p->exposed_comm_s, p->idle_s, p->peak_memory_bytes};
      double *l[5] = {&lo.compute_s, &lo.comm_s, &lo.exposed_comm_s, &lo.idle_s, &lo.peak_memory_bytes};
      double *h[5] = {&hi.compute_s, &hi.comm_s, &hi.exposed_comm_s, &hi.idle_s, &hi.peak_memory_bytes};
      double *m[5] = {&mean.compute_s, &mean.comm_s, &mean.exposed_comm_s, &mean.idle_s,
                      &mean.peak_memory_bytes};
      for (int k = 0; k < 5; k++) {
        *l[k] = v[k] < *l[k] ? v[k] : *l[k];
        *h[k] = v[k] > *h[k] ? v[k] : *h[k];
        *m[k] += v[k] / r->ranks;
      }
    }
    print_rank_row(out, "min", &lo);
    print_rank_row(out, "mean", &mean);
    print_rank_row(out, "max", &hi);
  }
  if (t->ncomms) {
    fprintf(out, "\n# %-14s %12s %16s %14s\n", "communicator", "collectives", "bytes", "busy_us");
    for (int c = 0; c < t->ncomms; c++)
      fprintf(out, "  %-14s %12ld %16.0f %14.3f\n", t->comms[c].name, r->per_comm[c].collectives,
              r->per_comm[c].bytes, r->per_comm[c].busy_s * 1e6);
  }
  if (nls > 0) {
    fprintf(out, "\n# most utilised links\n");
    linkstats_print_table(out, &r->topo, ls, nls);
  }
  int pk = peak_rank(sys, r);
  double cap = rank_hbm_bytes(sys, r, pk), peak = r->per_rank[pk].peak_memory_bytes;
  fprintf(out, "\nmemory: peak %.3f GiB on rank %d of %.1f GiB HBM: %s", peak / GIB, pk, cap / GIB,
          peak <= cap ? "fits\n" : "");
  if (peak > cap)
    fprintf(out, "does NOT fit, %.3f GiB over\n", (peak - cap) / GIB);
  replay_energy_t en;
  replay_energy(sys, t, r, &en);
  if (en.modelled && r->step_time_s > 0)
    fprintf(out, "energy: %.3f J per step (%.0f W per NPU): idle %.3f, compute %.3f, HBM %.3f, "
            "links %.3f J\n", en.total_J, en.total_J / r->step_time_s / r->ranks, en.idle_J,
            en.compute_J, en.hbm_J, en.links_J);
}

static void print_csv(FILE *out, const replay_result_t *r) {
  fprintf(out, "rank,step_time_s,compute_s,comm_s,exposed_comm_s,idle_s,peak_memory_GiB\n");
  for (int i = 0; i < r->ranks; i++) {
    const replay_rank_t *p = &r->per_rank[i];
    fprintf(out, "%d,%.9g,%.9g,%.9g,%.9g,%.9g,%.6g\n", i, r->step_time_s, p->compute_s, p->comm_s,
            p->exposed_comm_s, p->idle_s, p->peak_memory_bytes / GIB);
  }
}

void replay_print(FILE *out, int format, const trace_t *trace, const system_cfg_t *sys,
                  const replay_result_t *r, const char *fidelity, const linkstats_view_t *links) {
  linkstats_view_t all = {LINKSTATS_ALL, 0}; /* JSON lists every link */
  link_stat_t *ls = NULL;
  int nls = linkstats_rank(&r->links, r->step_time_s, format == FORMAT_JSON ? &all : links, &ls);
  if (format == FORMAT_JSON)
    print_json(out, trace, sys, r, fidelity, ls, nls);
  else if (format == FORMAT_CSV)
    print_csv(out, r);
  else
    print_table(out, trace, sys, r, fidelity, ls, nls);
  free(ls);
}
