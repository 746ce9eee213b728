/* check_run.c - the rows of an expectations file as npusim processes; see
 * check_run.h. */
#include "check_run.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "figures.h"
#include "jsonfile.h"
#include "progress.h"

#define STDERR_KEEP_BYTES 65536 /* a failed row's stderr, its tail kept */

extern char **environ;

typedef struct {
  char *data;
  size_t len, cap;
} buf_t;

/* One row in flight. */
typedef struct {
  int row;
  pid_t pid;
  int out_fd, err_fd; /* -1 once closed */
  buf_t out, err;
  double start_s;
} child_t;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Appends what fd has; returns false at its end (or an error). */
static bool drain(int fd, buf_t *b, size_t keep) {
  char chunk[65536];
  ssize_t n = read(fd, chunk, sizeof chunk);
  if (n < 0 && (errno == EINTR || errno == EAGAIN))
    return true;
  if (n <= 0)
    return false;
  if (keep && b->len + (size_t)n > keep) { /* keep the tail: the last line is the reason */
    size_t drop = b->len + (size_t)n > keep ? b->len + (size_t)n - keep : 0;
    drop = drop > b->len ? b->len : drop;
    memmove(b->data, b->data + drop, b->len - drop);
    b->len -= drop;
  }
  if (b->len + (size_t)n + 1 > b->cap) {
    b->cap = (b->len + (size_t)n + 1) * 2;
    b->data = realloc(b->data, b->cap);
  }
  memcpy(b->data + b->len, chunk, (size_t)n);
  b->len += (size_t)n;
  b->data[b->len] = '\0';
  return true;
}

static int start_child(const check_row_t *row, const check_run_opts_t *o, child_t *c,
                       npu_err_t *err) {
  int out[2], er[2];
  if (pipe2(out, O_CLOEXEC))
    return npu_err_set(err, "npusim check: cannot make a pipe: %s", strerror(errno));
  if (pipe2(er, O_CLOEXEC)) {
    close(out[0]);
    close(out[1]);
    return npu_err_set(err, "npusim check: cannot make a pipe: %s", strerror(errno));
  }
  char limit[32];
  snprintf(limit, sizeof limit, "%.17g", o->time_limit_s);
  const char **argv = calloc((size_t)row->nargs + 7, sizeof *argv);
  int n = 0;
  argv[n++] = o->exe;
  for (int a = 0; a < row->nargs; a++)
    argv[n++] = row->args[a];
  argv[n++] = "--format";
  argv[n++] = "json";
  if (o->time_limit_s > 0) {
    argv[n++] = "--time-limit";
    argv[n++] = limit;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, er[1], 2);
  int rc = posix_spawn(&c->pid, o->exe, &fa, NULL, (char *const *)argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  free(argv);
  close(out[1]);
  close(er[1]);
  if (rc) {
    close(out[0]);
    close(er[0]);
    return npu_err_set(err, "npusim check: cannot run %s: %s", o->exe, strerror(rc));
  }
  c->out_fd = out[0];
  c->err_fd = er[0];
  c->start_s = now_s();
  return 0;
}

/* The last non-empty line of a child's stderr, for a failed row's reason. */
static void last_line(const buf_t *b, char *dst, size_t len) {
  size_t end = b->len;
  while (end > 0 && (b->data[end - 1] == '\n' || b->data[end - 1] == '\r'))
    end--;
  size_t start = end;
  while (start > 0 && b->data[start - 1] != '\n')
    start--;
  snprintf(dst, len, "%.*s", (int)(end - start), end > start ? b->data + start : "");
}

/* A finished child's verdict from its exit status and output. */
static void judge_child(const check_row_t *row, child_t *c, int status, check_result_t *r) {
  r->wall_s = now_s() - c->start_s;
  r->verdict = CHECK_ERROR;
  char line[256];
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    last_line(&c->err, line, sizeof line);
    if (WIFSIGNALED(status))
      snprintf(r->why, sizeof r->why, "npusim died of signal %d", WTERMSIG(status));
    else
      snprintf(r->why, sizeof r->why, "npusim exited %d: %s", WEXITSTATUS(status),
               *line ? line : "(no message)");
    return;
  }
  npu_err_t e = {""};
  cJSON *doc = c->out.len ? jsonfile_parse("output", c->out.data, c->out.len, &e) : NULL;
  double v;
  if (!doc)
    snprintf(r->why, sizeof r->why, "its output is not JSON: %s", *e.msg ? e.msg : "empty");
  else if (figures_get(doc, row->figure, &v, &e))
    snprintf(r->why, sizeof r->why, "%s", e.msg);
  else
    check_judge(row, v, r);
  cJSON_Delete(doc);
}

/* An empty slot: no process, no pipes, no buffers. */
static void empty_child(child_t *c) {
  memset(c, 0, sizeof *c);
  c->out_fd = c->err_fd = -1;
}

static void free_child(child_t *c) {
  if (c->out_fd >= 0)
    close(c->out_fd);
  if (c->err_fd >= 0)
    close(c->err_fd);
  free(c->out.data);
  free(c->err.data);
  empty_child(c);
}

/* Reads from the running children until one has closed both its pipes; reaps
 * it, judges it; returns its slot. */
static int wait_one(const check_set_t *set, child_t *run, int nrun, check_result_t *results) {
  for (;;) {
    struct pollfd fds[2 * 64];
    int owner[2 * 64], n = 0;
    for (int k = 0; k < nrun; k++) {
      if (run[k].out_fd < 0 && run[k].err_fd < 0) {
        int status;
        while (waitpid(run[k].pid, &status, 0) < 0 && errno == EINTR)
          ;
        judge_child(&set->rows[run[k].row], &run[k], status, &results[run[k].row]);
        return k;
      }
      if (run[k].out_fd >= 0) {
        fds[n] = (struct pollfd){.fd = run[k].out_fd, .events = POLLIN};
        owner[n++] = k;
      }
      if (run[k].err_fd >= 0) {
        fds[n] = (struct pollfd){.fd = run[k].err_fd, .events = POLLIN};
        owner[n++] = k;
      }
    }
    if (poll(fds, (nfds_t)n, -1) < 0)
      continue; /* EINTR */
    for (int i = 0; i < n; i++) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      child_t *c = &run[owner[i]];
      bool is_out = fds[i].fd == c->out_fd;
      if (!drain(fds[i].fd, is_out ? &c->out : &c->err, is_out ? 0 : STDERR_KEEP_BYTES)) {
        close(fds[i].fd);
        *(is_out ? &c->out_fd : &c->err_fd) = -1;
      }
    }
  }
}

int check_run(const check_set_t *set, const check_run_opts_t *o, check_result_t *results,
              npu_err_t *err) {
  int jobs = o->jobs < 1 ? 1 : o->jobs > 64 ? 64 : o->jobs;
  child_t run[64];
  for (int k = 0; k < 64; k++)
    empty_child(&run[k]);
  progress_t prog;
  progress_start(&prog, o->progress, "npusim check", "rows", set->nrows);
  int next = 0, nrun = 0, rc = 0;
  while (next < set->nrows || nrun > 0) {
    if (next < set->nrows && nrun < jobs && rc == 0) {
      run[nrun].row = next;
      if (start_child(&set->rows[next], o, &run[nrun], err)) {
        rc = -1;
        if (nrun == 0)
          break;
        continue;
      }
      next++;
      nrun++;
      continue;
    }
    if (nrun == 0)
      break;
    int k = wait_one(set, run, nrun, results);
    free_child(&run[k]);
    run[k] = run[--nrun]; /* the last one moves into the freed slot */
    empty_child(&run[nrun]);
    progress_step(&prog, 1, -1);
  }
  progress_end(&prog);
  return rc;
}
