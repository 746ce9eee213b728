/* coll_report.c - a coll run printed: npusim's table, JSON and CSV, and the
 * nccl-tests and hccl_test tables. */
#include "coll_report.h"

#include <math.h>
#include <stdlib.h>

/* npusim's own table, CSV or JSON: a row per size, then the links. */
static void print_rows(FILE *out, const coll_report_opts_t *o, const coll_matrix_t *m,
                       const topo_t *t, const coll_row_t *rows, const link_stat_t *ls, int nls) {
  double factor = coll_busbw_factor(m->op, m->ranks);
  const char *op = coll_op_names[m->op], *dt = chip_dtype_name(m->dtype);
  int esize = chip_dtype_bytes(m->dtype);
  if (o->format == FORMAT_TABLE)
    fprintf(out,
            "# npusim coll: %s on %d rank%s (%d per server, %d server%s) of %s, %s fidelity\n"
            "#\n# %12s %12s %6s %12s %12s %12s  %s\n",
            op, m->ranks, m->ranks == 1 ? "" : "s", t->ranks_per_node, t->nodes,
            t->nodes == 1 ? "" : "s", o->system, o->fidelity, "size", "count", "type", "time_us",
            "algbw_GBps", "busbw_GBps", "algo");
  else if (o->format == FORMAT_CSV)
    fprintf(out, "op,ranks,bytes,count,type,time_us,algbw_GBps,busbw_GBps,algo\n");
  else
    fputs("[", out);
  for (int i = 0; i < m->nsizes; i++) {
    const coll_row_t *r = &rows[i];
    double algbw = r->bytes / r->time_s / 1e9, busbw = algbw * factor;
    double count = floor(r->bytes / esize);
    if (o->format == FORMAT_TABLE)
      fprintf(out, "  %12.0f %12.0f %6s %12.2f %12.2f %12.2f  %s\n", r->bytes, count, dt,
              r->time_s * 1e6, algbw, busbw, r->algo);
    else if (o->format == FORMAT_CSV)
      fprintf(out, "%s,%d,%.0f,%.0f,%s,%.3f,%.4f,%.4f,%s\n", op, m->ranks, r->bytes, count, dt,
              r->time_s * 1e6, algbw, busbw, r->algo);
    else {
      fprintf(out,
              "%s\n  {\"op\": \"%s\", \"ranks\": %d, \"bytes\": %.0f, \"time_us\": %.3f, "
              "\"algbw_GBps\": %.4f, \"busbw_GBps\": %.4f, \"algo\": \"%s\"",
              i ? "," : "", op, m->ranks, r->bytes, r->time_s * 1e6, algbw, busbw, r->algo);
      if (nls > 0 && i == m->nsizes - 1) {
        fputs(", \"links\": ", out);
        linkstats_print_json(out, t, ls, nls);
      }
      fputs("}", out);
    }
  }
  if (o->format == FORMAT_JSON)
    fputs("\n]\n", out);
  if (o->format == FORMAT_TABLE && nls > 0) {
    fprintf(out, "\n# %s links of the largest size\n",
            o->view.rows == LINKSTATS_ALL ? "all used" : "most utilised");
    linkstats_print_table(out, t, ls, nls);
  }
}

/* ---- --style: the tables nccl-tests and hccl_test print ---- */

/* The elements an nccl-tests row counts: the count passed to NCCL, which is
 * one rank's slice where the size is all ranks' slices (allgather,
 * reducescatter, alltoall; alltoallv: a rank's mean send over its peers). */
static long long nccl_count(const coll_matrix_t *m, double bytes) {
  double elems = floor(bytes / chip_dtype_bytes(m->dtype));
  return (long long)(coll_nccl_sliced(m->op) ? floor(elems / m->ranks) : elems);
}

/* A number the way the tools print a step factor: "4", or "1.5". */
static void format_factor(double factor, char *buf, size_t len) {
  if (factor == floor(factor) && factor < 1e15)
    snprintf(buf, len, "%.0f", factor);
  else
    snprintf(buf, len, "%g", factor);
}

/* One half (out-of-place or in-place) of an nccl-tests row: time in us with 2,
 * 1 or 0 decimals as it grows past 100 and 10000 us, algbw, busbw, and "N/A"
 * in #wrong, as nccl-tests prints with -c 0 (nothing is checked here). */
static void print_nccl_half(FILE *out, double time_s, double algbw, double busbw) {
  double us = time_s * 1e6;
  char time[32];
  if (us >= 10000.0)
    snprintf(time, sizeof time, "%7.0f", us);
  else if (us >= 100.0)
    snprintf(time, sizeof time, "%7.1f", us);
  else
    snprintf(time, sizeof time, "%7.2f", us);
  fprintf(out, "  %7s  %6.2f  %6.2f  %5s", time, algbw, busbw, "N/A");
}

/* nccl-tests' all_reduce_perf (and the other *_perf) output as versions 2.13.4
 * to 2.14.0 print it (src/common.cu; up to 2.16 only the device line's PCI id
 * differs): the run line, one device line per rank (the
 * simulated chip, rank r on node r / K as device r % K), the two-row column
 * header, a row per size with the out-of-place and in-place halves (the same
 * numbers: the model has no in-place difference), and the summary lines;
 * "Avg bus bandwidth" is the mean busbw of both halves of every row. */
static void print_nccl_tests(FILE *out, const coll_matrix_t *m, const coll_report_opts_t *o,
                             const topo_t *t, const coll_row_t *rows) {
  char step[32];
  format_factor(m->factor, step, sizeof step);
  fprintf(out,
          "# nThread 1 nGpus 1 minBytes %lld maxBytes %lld step: %s(factor) warmup iters: 0 "
          "iters: 1 agg iters: 1 validation: 0 graph: 0\n#\n# Using devices\n",
          (long long)m->sizes[0], (long long)m->sizes[m->nsizes - 1], step);
  for (int r = 0; r < m->ranks; r++) {
    char host[32];
    snprintf(host, sizeof host, "node%d", r / t->ranks_per_node);
    fprintf(out, "#  Rank %2d Group %2d Pid %6d on %10s device %2d [0x%02x] %s (npusim, %s)\n", r,
            0, 0, host, r % t->ranks_per_node, (r % t->ranks_per_node) & 0xff, o->chip, o->system);
  }
  fprintf(out,
          "#\n# %10s  %12s  %8s  %6s  %6s           out-of-place                       "
          "in-place          \n",
          "", "", "", "", "");
  fprintf(out, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size",
          "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
          "busbw", "#wrong");
  fprintf(out, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)",
          "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  bool reduces = m->op == COLL_ALLREDUCE || m->op == COLL_REDUCESCATTER || m->op == COLL_REDUCE ||
                 m->op == COLL_SENDRECV; /* sendrecv_perf: -o sum */
  int root = (m->op == COLL_BROADCAST || m->op == COLL_REDUCE) ? m->root : -1;
  double factor = coll_busbw_factor(m->op, m->ranks), busbw_sum = 0;
  for (int i = 0; i < m->nsizes; i++) {
    const coll_row_t *r = &rows[i];
    double algbw = r->bytes / r->time_s / 1e9, busbw = algbw * factor;
    fprintf(out, "%12lld  %12lld  %8s  %6s  %6d", (long long)r->bytes, nccl_count(m, r->bytes),
            coll_nccl_type_names[m->dtype], reduces ? "sum" : "none", root);
    print_nccl_half(out, r->time_s, algbw, busbw); /* out-of-place */
    print_nccl_half(out, r->time_s, algbw, busbw); /* in-place */
    fputc('\n', out);
    busbw_sum += 2 * busbw;
  }
  fprintf(out, "# Out of bounds values : %d %s\n", 0, "OK");
  fprintf(out, "# Avg bus bandwidth    : %g %s\n#\n", busbw_sum / (2 * m->nsizes), "");
}

/* hccl_test's output (hicann/oam-tools src/hccl_test: the run line of
 * hccl_test_common.cc, the header and rows of hccl_opbase_rootinfo_base.cc as
 * printed with -c 0, check_result NULL): data_size, the mean time and the
 * algorithm bandwidth, data_size / time in decimal GB/s. */
static void print_hccl_test(FILE *out, const coll_matrix_t *m, const coll_row_t *rows) {
  fprintf(out, "the minbytes is %llu, maxbytes is %llu, iters is %d, warmup_iters is %d\n",
          (unsigned long long)m->sizes[0], (unsigned long long)m->sizes[m->nsizes - 1], 1, 0);
  fprintf(out, "%-15s | %-12s | %-18s | %s\n",
          "data_size(Bytes):", "aveg_time(us):", "alg_bandwidth(GB/s):", "check_result:");
  for (int i = 0; i < m->nsizes; i++)
    fprintf(out, "%-17llu | %-14.2f | %-20.5f | NULL\n", (unsigned long long)rows[i].bytes,
            rows[i].time_s * 1e6, rows[i].bytes / rows[i].time_s / 1e9);
}

void coll_report(FILE *out, const coll_report_opts_t *opts, const coll_matrix_t *m,
                 const coll_result_t *r) {
  if (opts->style == COLL_STYLE_NCCL_TESTS) {
    print_nccl_tests(out, m, opts, &r->topo, r->rows);
    return;
  }
  if (opts->style == COLL_STYLE_HCCL_TEST) {
    print_hccl_test(out, m, r->rows);
    return;
  }
  link_stat_t *top = NULL;
  int ntop = 0;
  if (opts->links) { /* JSON lists every link */
    linkstats_view_t all = {LINKSTATS_ALL, 0};
    ntop = linkstats_rank(&r->stats, r->rows[r->nrows - 1].time_s,
                          opts->format == FORMAT_JSON ? &all : &opts->view, &top);
  }
  print_rows(out, opts, m, &r->topo, r->rows, top, ntop);
  free(top);
}
