/* jobs_run.c - jobs replayed alone (in a child process) and together; see
 * jobs_run.h. */
/* prctl, fork: Linux (the build defines _GNU_SOURCE) */
#include "jobs_run.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* When each part finished each of its steps: the latest end of the step's ops
 * (its barrier's, which ends with the last of them, included) over the part's
 * ranks. Returns 0, or -1 out of memory. */
static int step_ends(const jobs_merged_t *m, const replay_result_t *res, const jobs_part_t *parts,
                     int nparts, jobs_figs_t *f) {
  int *first = malloc(((size_t)nparts + 1) * sizeof *first);
  if (!first)
    return -1;
  f->total_steps = 0;
  for (int j = 0; j < nparts; j++) {
    first[j] = f->total_steps;
    f->total_steps += parts[j].steps;
  }
  f->nslots = res->links.nslots;
  f->step_end_s = calloc((size_t)f->total_steps + 1, sizeof *f->step_end_s);
  f->slot_bytes = malloc(((size_t)f->nslots + 1) * sizeof *f->slot_bytes);
  if (!f->step_end_s || !f->slot_bytes) {
    free(first);
    return -1;
  }
  const trace_t *t = &m->trace;
  for (int p = 0; p < t->nprograms; p++) {
    const jobs_program_t *info = &m->programs[p];
    if (info->job < 0 || info->step_ops == 0)
      continue;
    double *ends = f->step_end_s + first[info->job];
    int stride = info->step_ops + 1; /* a step's ops and its barrier */
    for (int k = 0; k < t->programs[p].nranks; k++) {
      const replay_span_t *sp = res->spans[replay_stand_in(res, t, t->programs[p].ranks[k])];
      for (int i = 0; i < t->programs[p].nops; i++)
        if (sp[i].end_s > ends[i / stride])
          ends[i / stride] = sp[i].end_s;
    }
  }
  free(first);
  if (f->nslots)
    memcpy(f->slot_bytes, res->links.bytes, (size_t)f->nslots * sizeof *f->slot_bytes);
  return 0;
}

int jobs_run_here(const system_cfg_t *sys, const jobs_part_t *parts, int nparts, int npus,
                  const replay_opts_t *ropts, jobs_merged_t *m, replay_result_t *res,
                  jobs_figs_t *out, char *err, size_t err_len) {
  memset(out, 0, sizeof *out);
  if (jobs_merge(parts, nparts, npus, m, err, err_len))
    return -1;
  if (replay_run(sys, &m->trace, "npusim cluster", ropts, res, err, err_len)) {
    jobs_merged_free(m);
    return -1;
  }
  if (step_ends(m, res, parts, nparts, out)) {
    jobs_figs_free(out);
    replay_result_free(res, &m->trace);
    jobs_merged_free(m);
    return snprintf(err, err_len, "npusim cluster: out of memory for the jobs' step times"), -1;
  }
  return 0;
}

static int write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int read_all(int fd, void *buf, size_t n) {
  char *p = buf;
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

/* The child: runs, sends {rc, then the error line or the figures}, exits. */
static void child(int fd, const system_cfg_t *sys, const jobs_part_t *parts, int nparts, int npus,
                  const replay_opts_t *ropts) {
  prctl(PR_SET_PDEATHSIG, SIGKILL); /* the parent's deadline ends us too... */
  if (getppid() == 1)               /* ...even if it came before the line above */
    _exit(1);
  jobs_merged_t m;
  replay_result_t res;
  jobs_figs_t f;
  char err[1024] = "";
  replay_opts_t quiet = *ropts;
  quiet.progress = NULL;
  int rc = jobs_run_here(sys, parts, nparts, npus, &quiet, &m, &res, &f, err, sizeof err);
  int ok = write_all(fd, &rc, sizeof rc) == 0;
  if (rc)
    ok = ok && write_all(fd, err, sizeof err) == 0;
  else {
    ok = ok && write_all(fd, &f.total_steps, sizeof f.total_steps) == 0 &&
         write_all(fd, f.step_end_s, (size_t)f.total_steps * sizeof *f.step_end_s) == 0 &&
         write_all(fd, &f.nslots, sizeof f.nslots) == 0 &&
         write_all(fd, f.slot_bytes, (size_t)f.nslots * sizeof *f.slot_bytes) == 0;
    replay_result_free(&res, &m.trace);
    jobs_merged_free(&m);
    jobs_figs_free(&f);
  }
  close(fd);
  _exit(ok ? 0 : 1);
}

static int receive(int fd, jobs_figs_t *out, char *err, size_t err_len) {
  int rc;
  if (read_all(fd, &rc, sizeof rc))
    return -2;
  if (rc) {
    char line[1024];
    if (read_all(fd, line, sizeof line))
      return -2;
    line[sizeof line - 1] = '\0';
    snprintf(err, err_len, "%s", line);
    return -1;
  }
  if (read_all(fd, &out->total_steps, sizeof out->total_steps) || out->total_steps < 0)
    return -2;
  if (!(out->step_end_s = calloc((size_t)out->total_steps + 1, sizeof *out->step_end_s)))
    return snprintf(err, err_len, "npusim cluster: out of memory for a run's figures"), -1;
  if (read_all(fd, out->step_end_s, (size_t)out->total_steps * sizeof *out->step_end_s) ||
      read_all(fd, &out->nslots, sizeof out->nslots) || out->nslots < 0)
    return -2;
  if (!(out->slot_bytes = calloc((size_t)out->nslots + 1, sizeof *out->slot_bytes)))
    return snprintf(err, err_len, "npusim cluster: out of memory for a run's figures"), -1;
  return read_all(fd, out->slot_bytes, (size_t)out->nslots * sizeof *out->slot_bytes) ? -2 : 0;
}

int jobs_run_apart(const system_cfg_t *sys, const jobs_part_t *parts, int nparts, int npus,
                   const replay_opts_t *ropts, jobs_figs_t *out, char *err, size_t err_len) {
  memset(out, 0, sizeof *out);
  int fds[2];
  if (pipe(fds))
    return snprintf(err, err_len, "npusim cluster: cannot start a run: %s", strerror(errno)), -1;
  fflush(NULL); /* the child must not write the parent's buffered output again */
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return snprintf(err, err_len, "npusim cluster: cannot start a run: %s", strerror(errno)), -1;
  }
  if (pid == 0) {
    close(fds[0]);
    child(fds[1], sys, parts, nparts, npus, ropts);
  }
  close(fds[1]);
  int rc = receive(fds[0], out, err, err_len);
  close(fds[0]);
  int status = 0, w;
  while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
    ;
  if (w < 0)
    rc = -2;
  if (rc == -2 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    jobs_figs_free(out);
    if (rc != -1)
      snprintf(err, err_len, "npusim cluster: a run alone ended without its figures (%s %d)",
               WIFSIGNALED(status) ? "signal" : "exit status",
               WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    return -1;
  }
  if (rc)
    jobs_figs_free(out);
  return rc;
}

void jobs_figs_free(jobs_figs_t *f) {
  free(f->step_end_s);
  free(f->slot_bytes);
  memset(f, 0, sizeof *f);
}
