/* cmd_coll.c - `npusim coll`: a collective's time, algorithm bandwidth and bus
 * bandwidth over a sweep of sizes, reported the way nccl-tests and hccl_test
 * users read them, in either fidelity. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll_engine.h"
#include "commands.h"
#include "jsonfile.h"

#define MAX_SIZES 64
#define TOP_LINKS 10

typedef struct {
  coll_op_t op;
  int ranks, ranks_per_node, root;
  chip_dtype_t dtype;
  double sizes[MAX_SIZES];
  int nsizes;
  double *matrix; /* alltoallv */
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
    rc = npu_err_set(err, "%s: (top level): expected an array of %d rows (one per rank), found "
                     "%s", path, ranks, cJSON_IsArray(root) ? "another count" : "no array");
    goto done;
  }
  *out = calloc((size_t)ranks * ranks, sizeof **out);
  for (int i = 0; i < ranks && rc == 0; i++) {
    const cJSON *row = cJSON_GetArrayItem(root, i);
    if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != ranks) {
      rc = npu_err_set(err, "%s: [%d]: expected an array of %d byte counts, found another value",
                       path, i, ranks);
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
    fprintf(out, "# npusim coll: %s on %d ranks (%d per server, %d servers) of %s, %s fidelity\n"
            "#\n# %12s %12s %6s %12s %12s %12s  %s\n", op, a->ranks, t->ranks_per_node,
            t->nodes, sys->name, cli_fidelity_names[opts->fidelity], "size", "count", "type",
            "time_us", "algbw_GBps", "busbw_GBps", "algo");
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
    fprintf(out, "\n# most utilised links of the largest size\n");
    linkstats_print_table(out, t, ls, nls);
  }
}

/* ---- the command ---- */

static int parse_args(const cli_opts_t *opts, coll_args_t *a, npu_err_t *err) {
  memset(a, 0, sizeof *a);
  a->dtype = CHIP_DTYPE_FP32;
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
  return parse_sizes(opts->sizes ? opts->sizes : "1K:1G:4", a, err);
}

/* topo_build names the parameter at fault ("ranks_per_node: expected ..."); here
 * each came from the flag of that name: "--ranks-per-node: expected ...". */
static int topo_flag_error(const char *why, npu_err_t *err) {
  char flag[32];
  size_t n = strcspn(why, ":");
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
  if (topo_build(&sys->node, &sys->cluster, sys->chip.dies_per_package, a->ranks,
                 a->ranks_per_node, &topo, why, sizeof why))
    return topo_flag_error(why, err);
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
    for (int i = 0; i < a->nsizes; i++)
      rows[i].time_s = coll_analytic_time(&topo, &cfg, &plans[i].sched,
                                          (opts->links && i == last) ? &stats : NULL);
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
    link_stat_t top[TOP_LINKS];
    int ntop = opts->links ? linkstats_top(&stats, rows[last].time_s, top, TOP_LINKS) : 0;
    print_rows(out, opts, a, sys, &topo, rows, top, ntop);
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
