/* coll_log.c - nccl-tests and hccl_test logs; see coll_log.h. */
#include "coll_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonfile.h"

#define COLL_LOG_MAX_BYTES (16u << 20)
#define COLL_LOG_MAX_HOSTS 4096

/* nccl-tests' program names (its src/ files) of each collective. */
static const struct {
  const char *prog;
  coll_op_t op;
} perf_names[] = {{"all_reduce_perf", COLL_ALLREDUCE},     {"all_gather_perf", COLL_ALLGATHER},
                  {"reduce_scatter_perf", COLL_REDUCESCATTER}, {"broadcast_perf", COLL_BROADCAST},
                  {"reduce_perf", COLL_REDUCE},            {"alltoall_perf", COLL_ALLTOALL},
                  {"sendrecv_perf", COLL_SENDRECV}};

typedef struct {
  char name[COLL_LOG_MAX_HOSTS][64];
  int count[COLL_LOG_MAX_HOSTS];
  int n;
} hosts_t;

static int add_host(hosts_t *h, const char *name) {
  for (int i = 0; i < h->n; i++)
    if (strcmp(h->name[i], name) == 0)
      return ++h->count[i], 0;
  if (h->n == COLL_LOG_MAX_HOSTS)
    return -1;
  snprintf(h->name[h->n], sizeof h->name[h->n], "%s", name);
  h->count[h->n++] = 1;
  return 0;
}

static int add_row(coll_log_t *log, int line, double bytes, double time_us, npu_err_t *err) {
  if (bytes <= 0 || time_us <= 0)
    return 0;
  if (log->nrows == COLL_LOG_MAX_ROWS)
    return npu_err_set(err, "%s:%d: expected at most %d sizes, found more", log->path, line,
                       COLL_LOG_MAX_ROWS);
  if (log->nrows && bytes <= log->bytes[log->nrows - 1])
    return npu_err_set(err, "%s:%d: expected sizes growing row by row (one table per log), "
                       "found %.0f after %.0f", log->path, line, bytes,
                       log->bytes[log->nrows - 1]);
  log->bytes[log->nrows] = bytes;
  log->time_s[log->nrows++] = time_us * 1e-6;
  return 0;
}

/* A "#" line of nccl-tests: a rank's host, or the collective's name. */
static int comment_line(coll_log_t *log, hosts_t *hosts, const char *s, int line, npu_err_t *err) {
  int rank;
  char host[64];
  if (sscanf(s, "# Rank %d Group %*d Pid %*d on %63s device", &rank, host) == 2) {
    if (add_host(hosts, host))
      return npu_err_set(err, "%s:%d: expected at most %d hosts, found more", log->path, line,
                         COLL_LOG_MAX_HOSTS);
    log->ranks++;
    return 0;
  }
  char prog[64];
  const char *start = strstr(s, "Collective test starting:");
  if (!start || sscanf(start, "Collective test starting: %63s", prog) != 1)
    return 0;
  for (size_t i = 0; i < sizeof perf_names / sizeof perf_names[0]; i++)
    if (strcmp(prog, perf_names[i].prog) == 0) /* whole names: all_reduce_perf holds reduce_perf */
      log->op = perf_names[i].op;
  return 0;
}

/* A data row of nccl-tests: size count type redop root time algbw busbw ... */
static int nccl_row(coll_log_t *log, const char *s, int line, npu_err_t *err) {
  char type[32], redop[32];
  double bytes, count, time_us;
  int root;
  if (sscanf(s, "%lf %lf %31s %31s %d %lf", &bytes, &count, type, redop, &root, &time_us) != 6)
    return npu_err_set(err, "%s:%d: expected an nccl-tests row (size count type redop root time "
                       "algbw busbw ...), found \"%.60s\"", log->path, line, s);
  return add_row(log, line, bytes, time_us, err);
}

/* A data row of hccl_test: size | time | algbw | check */
static int hccl_row(coll_log_t *log, const char *s, int line, npu_err_t *err) {
  double bytes, time_us;
  if (sscanf(s, "%lf | %lf |", &bytes, &time_us) != 2)
    return npu_err_set(err, "%s:%d: expected an hccl_test row (data_size | time | "
                       "alg_bandwidth | check_result), found \"%.60s\"", log->path, line, s);
  return add_row(log, line, bytes, time_us, err);
}

static int read_lines(char *text, coll_log_t *log, hosts_t *hosts, npu_err_t *err) {
  int line = 0;
  bool table = false; /* past hccl_test's header */
  for (char *s = text, *next; s && *s; s = next) {
    next = strchr(s, '\n');
    if (next)
      *next++ = '\0';
    line++;
    s += strspn(s, " \t");
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\r' || s[n - 1] == ' '))
      s[--n] = '\0';
    if (!*s)
      continue;
    if (strncmp(s, "the minbytes is", 15) == 0) {
      log->style = COLL_LOG_HCCL_TEST;
      continue;
    }
    if (strncmp(s, "data_size(Bytes)", 16) == 0) {
      log->style = COLL_LOG_HCCL_TEST;
      table = true;
      continue;
    }
    int rc = 0;
    if (*s == '#')
      rc = comment_line(log, hosts, s, line, err);
    else if (table)
      rc = hccl_row(log, s, line, err);
    else if (*s >= '0' && *s <= '9')
      rc = nccl_row(log, s, line, err);
    if (rc)
      return -1;
  }
  return 0;
}

int coll_log_read(const char *path, coll_log_t *log, npu_err_t *err) {
  memset(log, 0, sizeof *log);
  log->path = path;
  log->op = -1;
  char why[256];
  size_t len;
  char *text = jsonfile_read(path, COLL_LOG_MAX_BYTES, &len, why, sizeof why);
  if (!text)
    return npu_err_set(err, "%s: cannot read: %s", path, why);
  hosts_t *hosts = calloc(1, sizeof *hosts);
  int rc = read_lines(text, log, hosts, err);
  free(text);
  if (rc == 0 && log->nrows == 0)
    rc = npu_err_set(err, "%s: expected an nccl-tests or hccl_test table of sizes and times, "
                     "found no row", path);
  if (rc == 0 && hosts->n > 0) {
    for (int i = 1; i < hosts->n; i++)
      if (hosts->count[i] != hosts->count[0])
        rc = npu_err_set(err, "%s: expected as many ranks on every host, found %d on %s and %d "
                         "on %s", path, hosts->count[0], hosts->name[0], hosts->count[i],
                         hosts->name[i]);
    log->ranks_per_node = hosts->count[0];
  }
  free(hosts);
  return rc;
}
