/* cmd_coll.c - `npusim coll`: a collective's time, algorithm bandwidth and bus
 * bandwidth over a sweep of sizes, reported the way nccl-tests and hccl_test
 * users read them, in either fidelity. --style nccl-tests and --style hccl-test
 * print those tools' own tables, in their printf formats
 * (tests/data/formats/README.md), so the scripts that parse them read npusim's. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll_engine.h"
#include "commands.h"
#include "jsonfile.h"

#define MAX_SIZES 64

/* --style: whose table the output imitates (STYLE_NONE: npusim's own). */
typedef enum { STYLE_NONE, STYLE_NCCL_TESTS, STYLE_HCCL_TEST } coll_style_t;

typedef struct {
  coll_op_t op;
  int ranks, ranks_per_node, root;
  chip_dtype_t dtype;
  double sizes[MAX_SIZES];
  int nsizes;
  double factor;  /* --sizes' FACTOR: each size is the one before times it */
  double *matrix; /* alltoallv */
  coll_style_t style;
  linkstats_view_t links; /* --links, --links-kind */
} coll_args_t;

/* ---- argument parsing ---- */

static int parse_int(const char *opt, const char *text, int lo, int hi, int *out, npu_err_t *err) {
  char *end;
  errno = 0;
  long v = text ? strtol(text, &end, 10) : 0;
  if (!text || end == text || *end || errno || v < lo || v > hi)
    return npu_err_set(err, "--%s: expected an integer in [%d, %d], found \"%.40s\"", opt, lo, hi,
                       text ? text : "");
  *out = (int)v;
  return 0;
}

/* "64M", "1G", "4096", "1.5K": bytes, suffixes powers of 1024. */
static int parse_bytes(const char *text, double *out) {
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (end == text || errno || !isfinite(v))
    return -1;
  const char *units = "KMGT";
  const char *u = *end ? strchr(units, *end) : NULL;
  if (u && *end) {
    v *= pow(1024.0, (double)(u - units + 1));
    end++;
    if (*end == 'i')
      end++;
    if (*end == 'B')
      end++;
  } else if (*end == 'B') {
    end++;
  }
  if (*end || v < 1 || v > 1e15)
    return -1;
  *out = v;
  return 0;
}

static int parse_sizes(const char *text, coll_args_t *a, npu_err_t *err) {
  char buf[128];
  snprintf(buf, sizeof buf, "%s", text);
  char *parts[3] = {buf, NULL, NULL};
  for (int i = 1; i < 3; i++) {
    char *colon = parts[i - 1] ? strchr(parts[i - 1], ':') : NULL;
    if (colon) {
      *colon = '\0';
      parts[i] = colon + 1;
    }
  }
  double lo, hi, factor = 2;
  char *fend = NULL;
  if (parse_bytes(parts[0], &lo) || (parts[1] ? parse_bytes(parts[1], &hi) : (hi = lo, 0)) ||
      (parts[2] && ((factor = strtod(parts[2], &fend)) <= 1 || *fend || !isfinite(factor))) ||
      hi < lo)
    return npu_err_set(err, "--sizes: expected SIZE or MIN:MAX[:FACTOR] with sizes >= 1 byte "
                       "(K, M, G, T suffixes), MIN <= MAX and FACTOR > 1, found \"%.60s\"", text);
  a->nsizes = 0;
  a->factor = factor;
  for (double s = lo; s <= hi * (1 + 1e-12); s *= factor) {
    if (a->nsizes == MAX_SIZES)
      return npu_err_set(err, "--sizes: expected at most %d sizes, found more in \"%.60s\"",
                         MAX_SIZES, text);
    a->sizes[a->nsizes++] = round(s);
  }
  return 0;
}

/* --matrix FILE: a JSON array of `ranks` arrays of `ranks` byte counts. */
#define MATRIX_MAX_BYTES (256L * 1024 * 1024)
static int read_matrix(const char *path, int ranks, double **out, npu_err_t *err) {
  char why[256];
  size_t len;
  char *text = jsonfile_read(path, MATRIX_MAX_BYTES, &len, why, sizeof why);
  if (!text)
    return npu_err_set(err, "%s: expected a readable JSON matrix file, found %s", path, why);
  cJSON *root = cJSON_ParseWithLength(text, len);
  free(text);
  int rc = 0;
  if (!cJSON_IsArray(root) || cJSON_GetArraySize(root) != ranks) {
    char found[64];
    if (cJSON_IsArray(root))
      snprintf(found, sizeof found, "%d rows", cJSON_GetArraySize(root));
    else
      snprintf(found, sizeof found, "%s", root ? "another JSON value" : "text that is not JSON");
    rc = npu_err_set(err, "%s: (top level): expected an array of %d rows (one per rank), found "
                     "%s", path, ranks, found);
    goto done;
  }
  *out = calloc((size_t)ranks * ranks, sizeof **out);
  if (!*out) {
    rc = npu_err_set(err, "%s: expected a %d x %d matrix that fits in memory, found no room "
                     "for it; use fewer --ranks", path, ranks, ranks);
    goto done;
  }
  for (int i = 0; i < ranks && rc == 0; i++) {
    const cJSON *row = cJSON_GetArrayItem(root, i);
    if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != ranks) {
      char found[64];
      if (cJSON_IsArray(row))
        snprintf(found, sizeof found, "an array of %d", cJSON_GetArraySize(row));
      else
        snprintf(found, sizeof found, "another value");
      rc = npu_err_set(err, "%s: [%d]: expected an array of %d byte counts, found %s", path, i,
                       ranks, found);
      break;
    }
    for (int j = 0; j < ranks; j++) {
      const cJSON *v = cJSON_GetArrayItem(row, j);
      if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0 ||
          v->valuedouble > 1e15) {
        rc = npu_err_set(err, "%s: [%d][%d]: expected a number of bytes in [0, 1e15], found "
                         "another value", path, i, j);
        break;
      }
      (*out)[i * ranks + j] = v->valuedouble;
    }
  }
  if (rc) {
    free(*out);
    *out = NULL;
  }
done:
  cJSON_Delete(root);
  return rc;
}

static int parse_op(const char *text, coll_op_t *op, npu_err_t *err) {
  for (int i = 0; text && i < COLL_OP_COUNT; i++)
    if (strcmp(text, coll_op_names[i]) == 0) {
      *op = (coll_op_t)i;
      return 0;
    }
  return npu_err_set(err, "--op: expected one of allreduce, allgather, reducescatter, broadcast, "
                     "reduce, alltoall, alltoallv, sendrecv, found \"%.40s\"", text ? text : "");
}

/* ---- output ---- */

typedef struct {
  double bytes, time_s;
  char algo[64];
} row_t;

static void print_rows(FILE *out, const cli_opts_t *opts, const coll_args_t *a,
                       const system_cfg_t *sys, const topo_t *t, const row_t *rows,
                       const link_stat_t *ls, int nls) {
  double factor = coll_busbw_factor(a->op, a->ranks);
  const char *op = coll_op_names[a->op], *dt = chip_dtype_name(a->dtype);
  int esize = chip_dtype_bytes(a->dtype);
  if (opts->format == FORMAT_TABLE)
    fprintf(out, "# npusim coll: %s on %d rank%s (%d per server, %d server%s) of %s, %s fidelity\n"
            "#\n# %12s %12s %6s %12s %12s %12s  %s\n", op, a->ranks, a->ranks == 1 ? "" : "s",
            t->ranks_per_node, t->nodes, t->nodes == 1 ? "" : "s", sys->name,
            cli_fidelity_names[opts->fidelity], "size", "count", "type", "time_us", "algbw_GBps",
            "busbw_GBps", "algo");
  else if (opts->format == FORMAT_CSV)
    fprintf(out, "op,ranks,bytes,count,type,time_us,algbw_GBps,busbw_GBps,algo\n");
  else
    fputs("[", out);
  for (int i = 0; i < a->nsizes; i++) {
    const row_t *r = &rows[i];
    double algbw = r->bytes / r->time_s / 1e9, busbw = algbw * factor;
    double count = floor(r->bytes / esize);
    if (opts->format == FORMAT_TABLE)
      fprintf(out, "  %12.0f %12.0f %6s %12.2f %12.2f %12.2f  %s\n", r->bytes, count, dt,
              r->time_s * 1e6, algbw, busbw, r->algo);
    else if (opts->format == FORMAT_CSV)
      fprintf(out, "%s,%d,%.0f,%.0f,%s,%.3f,%.4f,%.4f,%s\n", op, a->ranks, r->bytes, count, dt,
              r->time_s * 1e6, algbw, busbw, r->algo);
    else {
      fprintf(out, "%s\n  {\"op\": \"%s\", \"ranks\": %d, \"bytes\": %.0f, \"time_us\": %.3f, "
              "\"algbw_GBps\": %.4f, \"busbw_GBps\": %.4f, \"algo\": \"%s\"", i ? "," : "", op,
              a->ranks, r->bytes, r->time_s * 1e6, algbw, busbw, r->algo);
      if (nls > 0 && i == a->nsizes - 1) {
        fputs(", \"links\": ", out);
        linkstats_print_json(out, t, ls, nls);
      }
      fputs("}", out);
    }
  }
  if (opts->format == FORMAT_JSON)
    fputs("\n]\n", out);
  if (opts->format == FORMAT_TABLE && nls > 0) {
    fprintf(out, "\n# %s links of the largest size\n",
            a->links.rows == LINKSTATS_ALL ? "all used" : "most utilised");
    linkstats_print_table(out, t, ls, nls);
  }
}

/* ---- --style: the tables nccl-tests and hccl_test print ---- */

/* nccl-tests' name of each chip_dtype_t (src/common.cu test_typenames). */
static const char *const nccl_type_names[CHIP_DTYPE_COUNT] = {"half", "bfloat16", "float", "int8",
                                                              "f8e4m3"};

/* Whether an nccl-tests row's size is all ranks' slices of count elements. */
static bool nccl_sliced(coll_op_t op) {
  return op == COLL_ALLGATHER || op == COLL_REDUCESCATTER || op == COLL_ALLTOALL ||
         op == COLL_ALLTOALLV;
}

/* --style nccl-tests runs and prints each size as nccl-tests does (setupArgs
 * and getCollByteCount in its src/): count = size / sizeof(type) elements,
 * cut to count / ranks per rank where the size is all ranks' slices; the row's
 * size is then max(send, receive bytes): count x sizeof(type), or count /
 * ranks x ranks x sizeof(type). So size and count agree and the times are the
 * printed size's. A size of no element per rank is refused. (alltoallv's size
 * is its matrix's mean, kept.) */
static int nccl_sizes(coll_args_t *a, npu_err_t *err) {
  if (a->op == COLL_ALLTOALLV)
    return 0;
  double esize = chip_dtype_bytes(a->dtype), per = nccl_sliced(a->op) ? a->ranks : 1;
  for (int i = 0; i < a->nsizes; i++) {
    double count = floor(floor(a->sizes[i] / esize) / per);
    if (count < 1)
      return npu_err_set(err,
                         "--sizes: expected at least %.0f bytes with --style nccl-tests (one "
                         "%s element%s), found %.0f",
                         esize * per, nccl_type_names[a->dtype], per > 1 ? " per rank" : "",
                         a->sizes[i]);
    a->sizes[i] = count * per * esize;
  }
  return 0;
}

/* The elements an nccl-tests row counts: the count passed to NCCL, which is
 * one rank's slice where the size is all ranks' slices (allgather,
 * reducescatter, alltoall; alltoallv: a rank's mean send over its peers). */
static long long nccl_count(const coll_args_t *a, double bytes) {
  double elems = floor(bytes / chip_dtype_bytes(a->dtype));
  return (long long)(nccl_sliced(a->op) ? floor(elems / a->ranks) : elems);
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
static void print_nccl_tests(FILE *out, const coll_args_t *a, const system_cfg_t *sys,
                             const topo_t *t, const row_t *rows) {
  char step[32];
  format_factor(a->factor, step, sizeof step);
  fprintf(out, "# nThread 1 nGpus 1 minBytes %lld maxBytes %lld step: %s(factor) warmup iters: 0 "
          "iters: 1 agg iters: 1 validation: 0 graph: 0\n#\n# Using devices\n",
          (long long)a->sizes[0], (long long)a->sizes[a->nsizes - 1], step);
  for (int r = 0; r < a->ranks; r++) {
    char host[32];
    snprintf(host, sizeof host, "node%d", r / t->ranks_per_node);
    fprintf(out, "#  Rank %2d Group %2d Pid %6d on %10s device %2d [0x%02x] %s (npusim, %s)\n",
            r, 0, 0, host, r % t->ranks_per_node, (r % t->ranks_per_node) & 0xff,
            sys->chip.name, sys->name);
  }
  fprintf(out, "#\n# %10s  %12s  %8s  %6s  %6s           out-of-place                       "
          "in-place          \n", "", "", "", "", "");
  fprintf(out, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size",
          "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
          "busbw", "#wrong");
  fprintf(out, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)",
          "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)",
          "");
  bool reduces = a->op == COLL_ALLREDUCE || a->op == COLL_REDUCESCATTER ||
                 a->op == COLL_REDUCE || a->op == COLL_SENDRECV; /* sendrecv_perf: -o sum */
  int root = (a->op == COLL_BROADCAST || a->op == COLL_REDUCE) ? a->root : -1;
  double factor = coll_busbw_factor(a->op, a->ranks), busbw_sum = 0;
  for (int i = 0; i < a->nsizes; i++) {
    const row_t *r = &rows[i];
    double algbw = r->bytes / r->time_s / 1e9, busbw = algbw * factor;
    fprintf(out, "%12lld  %12lld  %8s  %6s  %6d", (long long)r->bytes, nccl_count(a, r->bytes),
            nccl_type_names[a->dtype], reduces ? "sum" : "none", root);
    print_nccl_half(out, r->time_s, algbw, busbw); /* out-of-place */
    print_nccl_half(out, r->time_s, algbw, busbw); /* in-place */
    fputc('\n', out);
    busbw_sum += 2 * busbw;
  }
  fprintf(out, "# Out of bounds values : %d %s\n", 0, "OK");
  fprintf(out, "# Avg bus bandwidth    : %g %s\n#\n", busbw_sum / (2 * a->nsizes), "");
}

/* hccl_test's output (hicann/oam-tools src/hccl_test: the run line of
 * hccl_test_common.cc, the header and rows of hccl_opbase_rootinfo_base.cc as
 * printed with -c 0, check_result NULL): data_size, the mean time and the
 * algorithm bandwidth, data_size / time in decimal GB/s. */
static void print_hccl_test(FILE *out, const coll_args_t *a, const row_t *rows) {
  fprintf(out, "the minbytes is %llu, maxbytes is %llu, iters is %d, warmup_iters is %d\n",
          (unsigned long long)a->sizes[0], (unsigned long long)a->sizes[a->nsizes - 1], 1, 0);
  fprintf(out, "%-15s | %-12s | %-18s | %s\n", "data_size(Bytes):", "aveg_time(us):",
          "alg_bandwidth(GB/s):", "check_result:");
  for (int i = 0; i < a->nsizes; i++)
    fprintf(out, "%-17llu | %-14.2f | %-20.5f | NULL\n", (unsigned long long)rows[i].bytes,
            rows[i].time_s * 1e6, rows[i].bytes / rows[i].time_s / 1e9);
}

/* --style S: which table, and only where it can be printed (one line naming
 * the option otherwise). */
static int parse_style(const cli_opts_t *opts, coll_args_t *a, npu_err_t *err) {
  if (!opts->style)
    return 0;
  if (strcmp(opts->style, "nccl-tests") == 0)
    a->style = STYLE_NCCL_TESTS;
  else if (strcmp(opts->style, "hccl-test") == 0)
    a->style = STYLE_HCCL_TEST;
  else
    return npu_err_set(err, "--style: expected nccl-tests or hccl-test, found \"%.40s\"",
                       opts->style);
  if (opts->format != FORMAT_TABLE)
    return npu_err_set(err, "--style %s: expected --format table (the style is the table's "
                       "layout), found --format %s", opts->style, cli_format_names[opts->format]);
  if (opts->links)
    return npu_err_set(err, "--style %s: expected no --links (%s prints no link table), found "
                       "--links", opts->style,
                       a->style == STYLE_NCCL_TESTS ? "nccl-tests" : "hccl_test");
  return 0;
}

/* ---- the command ---- */

static int parse_args(const cli_opts_t *opts, coll_args_t *a, npu_err_t *err) {
  memset(a, 0, sizeof *a);
  a->dtype = CHIP_DTYPE_FP32;
  a->factor = 2;
  if (opts->links_kind && !opts->links)
    return npu_err_set(err, "--links-kind: expected --links with it, found none");
  if (parse_style(opts, a, err) ||
      linkstats_parse_view(opts->links_rows, opts->links_kind, &a->links, err->msg,
                           sizeof err->msg))
    return -1;
  if (!opts->op)
    return npu_err_set(err, "npusim coll: expected --op OP, found none");
  if (parse_op(opts->op, &a->op, err))
    return -1;
  if (!opts->ranks)
    return npu_err_set(err, "npusim coll: expected --ranks N, found none");
  if (parse_int("ranks", opts->ranks, 1, 1 << 20, &a->ranks, err))
    return -1;
  if (opts->ranks_per_node &&
      parse_int("ranks-per-node", opts->ranks_per_node, 1, 1 << 20, &a->ranks_per_node, err))
    return -1;
  if (opts->root && parse_int("root", opts->root, 0, a->ranks - 1, &a->root, err))
    return -1;
  if (opts->dtype && chip_dtype_parse(opts->dtype, &a->dtype))
    return npu_err_set(err, "--dtype: expected one of fp16, bf16, fp32, int8, fp8, found \"%.20s\"",
                       opts->dtype);
  if (a->op == COLL_ALLTOALLV) {
    if (!opts->matrix)
      return npu_err_set(err, "npusim coll: expected --matrix FILE for alltoallv, found none");
    if (read_matrix(opts->matrix, a->ranks, &a->matrix, err))
      return -1;
    double total = 0;
    for (int i = 0; i < a->ranks * a->ranks; i++)
      total += a->matrix[i];
    a->sizes[0] = total / a->ranks; /* mean bytes a rank sends */
    a->nsizes = 1;
    return 0;
  }
  if (parse_sizes(opts->sizes ? opts->sizes : "1K:1G:4", a, err))
    return -1;
  return a->style == STYLE_NCCL_TESTS ? nccl_sizes(a, err) : 0;
}

/* topo_build names the parameter at fault ("ranks_per_node: expected ..."); here
 * each came from the flag of that name: "--ranks-per-node: expected ...", or
 * from the system config ("S.json: cluster.faults.links: ..."). */
static int topo_flag_error(int rc, const char *why, const char *system, npu_err_t *err) {
  char flag[32];
  size_t n = strcspn(why, ":");
  if (rc == TOPO_BAD_FAULT)
    return npu_err_set(err, "%s: %s", system, why);
  if (n >= sizeof flag || !why[n])
    return npu_err_set(err, "%s", why);
  for (size_t i = 0; i < n; i++)
    flag[i] = why[i] == '_' ? '-' : why[i];
  flag[n] = '\0';
  return npu_err_set(err, "--%s%s", flag, why + n);
}

static int run(const cli_opts_t *opts, const coll_args_t *a, const system_cfg_t *sys, FILE *out,
               npu_err_t *err) {
  topo_t topo;
  char why[512];
  int topo_rc = topo_build(&sys->node, &sys->cluster, sys->chip.dies_per_package, a->ranks,
                           a->ranks_per_node, &topo, why, sizeof why);
  if (topo_rc)
    return topo_flag_error(topo_rc, why, opts->system_path, err);
  coll_cfg_t cfg = sys->coll;
  if (opts->algo &&
      coll_apply_algo(opts->algo, topo_levels_used(&topo) > 1, &cfg, why, sizeof why)) {
    topo_free(&topo);
    return npu_err_set(err, "--%s", why); /* "algo: ..." came from --algo */
  }
  coll_plan_t *plans = calloc((size_t)a->nsizes, sizeof *plans);
  row_t *rows = calloc((size_t)a->nsizes, sizeof *rows);
  int rc = 0, planned = 0;
  for (; planned < a->nsizes && rc == 0; planned++) {
    coll_req_t req = {a->op, a->sizes[planned], a->root, a->matrix};
    rc = coll_plan(&topo, &cfg, &req, &plans[planned], why, sizeof why);
    if (rc) /* the planner names the field it was given; the forced ones came from --algo */
      rc = npu_err_set(err, "%s%s", rc == COLL_PLAN_FORCED_MISFIT && opts->algo ? "--" : "", why);
    rows[planned].bytes = a->sizes[planned];
    snprintf(rows[planned].algo, sizeof rows[planned].algo, "%s", plans[planned].name);
  }
  linkstats_t stats;
  linkstats_init(&stats, &topo);
  int last = a->nsizes - 1;
  if (rc == 0 && opts->fidelity == FIDELITY_ANALYTIC) {
    double clock_s = 0; /* sizes run one after another, as in the flow fidelity */
    for (int i = 0; i < a->nsizes; i++) {
      /* the links it crosses: round the links dead by its start */
      rows[i].time_s = coll_analytic_time(topo_at(&topo, clock_s), &cfg, &plans[i].sched,
                                          (opts->links && i == last) ? &stats : NULL);
      if (topo.nchanges || topo.after) /* timed faults: when it runs matters */
        rows[i].time_s = coll_analytic_time_from(&topo, &cfg, &plans[i].sched, clock_s);
      clock_s += rows[i].time_s;
    }
  } else if (rc == 0) {
    const coll_sched_t **scheds = malloc((size_t)a->nsizes * sizeof *scheds);
    double *times = malloc((size_t)a->nsizes * sizeof *times);
    for (int i = 0; i < a->nsizes; i++)
      scheds[i] = &plans[i].sched;
    rc = coll_flow_run(&topo, &cfg, scheds, a->nsizes, times, opts->links ? last : -1, &stats,
                       why, sizeof why);
    if (rc == COLL_FLOW_TOO_LARGE) /* "flow: ..." is the --fidelity this command was given */
      rc = npu_err_set(err, "--fidelity %s; use --fidelity analytic", why);
    else if (rc)
      rc = npu_err_set(err, "%s", why);
    for (int i = 0; rc == 0 && i < a->nsizes; i++)
      rows[i].time_s = times[i];
    free(scheds);
    free(times);
  }
  if (rc == 0) {
    link_stat_t *top = NULL;
    int ntop = 0;
    if (opts->links) { /* JSON lists every link */
      linkstats_view_t all = {LINKSTATS_ALL, 0};
      ntop = linkstats_rank(&stats, rows[last].time_s,
                            opts->format == FORMAT_JSON ? &all : &a->links, &top);
    }
    if (a->style == STYLE_NCCL_TESTS)
      print_nccl_tests(out, a, sys, &topo, rows);
    else if (a->style == STYLE_HCCL_TEST)
      print_hccl_test(out, a, rows);
    else
      print_rows(out, opts, a, sys, &topo, rows, top, ntop);
    free(top);
  }
  linkstats_free(&stats);
  for (int i = 0; i < planned; i++)
    coll_plan_free(&plans[i]);
  free(plans);
  free(rows);
  topo_free(&topo);
  return rc;
}

int cmd_coll(const cli_opts_t *opts, FILE *out, npu_err_t *err) {
  coll_args_t args;
  if (parse_args(opts, &args, err)) {
    free(args.matrix);
    return -1;
  }
  cli_configs_t cfg;
  if (cli_load_configs(opts, &cfg, err)) {
    free(args.matrix);
    return -1;
  }
  int rc = run(opts, &args, &cfg.sys, out, err);
  cli_free_configs(&cfg);
  free(args.matrix);
  return rc;
}

const cli_option_t cmd_coll_options[] = {
    CLI_GROUP(cli_options_system),
    CLI_GROUP(cli_options_set),
    CLI_GROUP(cli_options_format),
    CLI_GROUP(cli_options_fidelity),
    CLI_GROUP(cli_options_output),
    CLI_GROUP(cli_options_kind),
    CLI_STRING("ranks", "N", ranks, "ranks in the job"),
    CLI_STRING("ranks-per-node", "K", ranks_per_node,
               "NPUs used per server (default: all of node.npus)"),
    CLI_STRING("sizes", "MIN:MAX[:F]", sizes,
               "sizes from MIN to MAX, times F each (default 1K:1G:4)"),
    CLI_STRING("algo", "A[,A1[,A2]]", algo, "force algorithms (see above)"),
    CLI_STRING("root", "R", root, "root rank of broadcast and reduce (default 0)"),
    CLI_STRING("matrix", "FILE", matrix, "alltoallv bytes, a JSON array of arrays"),
    CLI_STRING("style", "S", style, "print the table of nccl-tests or hccl-test (see above)"),
    CLI_GROUP(cli_options_links),
    CLI_END};
