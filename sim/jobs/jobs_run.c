/* jobs_run.c - jobs replayed alone (in a child process) and together; see
 * jobs_run.h. */
/* prctl, fork: Linux (the build defines _GNU_SOURCE) */
#include "jobs_run.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "progress.h"

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
                  jobs_figs_t *out, npu_err_t *err) {
  memset(out, 0, sizeof *out);
  if (jobs_merge(parts, nparts, npus, m, err))
    return -1;
  if (replay_run(sys, &m->trace, "npusim cluster", ropts, res, err)) {
    jobs_merged_free(m);
    return -1;
  }
  if (step_ends(m, res, parts, nparts, out)) {
    jobs_figs_free(out);
    replay_result_free(res, &m->trace);
    jobs_merged_free(m);
    return npu_err_set(err, "npusim cluster: out of memory for the jobs' step times"), -1;
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
  npu_err_t err = {""};
  replay_opts_t quiet = *ropts;
  quiet.progress = NULL;
  int rc = jobs_run_here(sys, parts, nparts, npus, &quiet, &m, &res, &f, &err);
  int ok = write_all(fd, &rc, sizeof rc) == 0;
  if (rc)
    ok = ok && write_all(fd, err.msg, sizeof err.msg) == 0;
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

static int receive(int fd, jobs_figs_t *out, npu_err_t *err) {
  int rc;
  if (read_all(fd, &rc, sizeof rc))
    return -2;
  if (rc) {
    char line[1024];
    if (read_all(fd, line, sizeof line))
      return -2;
    line[sizeof line - 1] = '\0';
    npu_err_set(err, "%s", line);
    return -1;
  }
  if (read_all(fd, &out->total_steps, sizeof out->total_steps) || out->total_steps < 0)
    return -2;
  if (!(out->step_end_s = calloc((size_t)out->total_steps + 1, sizeof *out->step_end_s)))
    return npu_err_set(err, "npusim cluster: out of memory for a run's figures"), -1;
  if (read_all(fd, out->step_end_s, (size_t)out->total_steps * sizeof *out->step_end_s) ||
      read_all(fd, &out->nslots, sizeof out->nslots) || out->nslots < 0)
    return -2;
  if (!(out->slot_bytes = calloc((size_t)out->nslots + 1, sizeof *out->slot_bytes)))
    return npu_err_set(err, "npusim cluster: out of memory for a run's figures"), -1;
  return read_all(fd, out->slot_bytes, (size_t)out->nslots * sizeof *out->slot_bytes) ? -2 : 0;
}

int jobs_run_apart(const system_cfg_t *sys, const jobs_part_t *parts, int nparts, int npus,
                   const replay_opts_t *ropts, jobs_figs_t *out, npu_err_t *err) {
  memset(out, 0, sizeof *out);
  int fds[2];
  if (pipe(fds))
    return npu_err_set(err, "npusim cluster: cannot start a run: %s", strerror(errno)), -1;
  fflush(NULL); /* the child must not write the parent's buffered output again */
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return npu_err_set(err, "npusim cluster: cannot start a run: %s", strerror(errno)), -1;
  }
  if (pid == 0) {
    close(fds[0]);
    child(fds[1], sys, parts, nparts, npus, ropts);
  }
  close(fds[1]);
  int rc = receive(fds[0], out, err);
  close(fds[0]);
  int status = 0, w;
  while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
    ;
  if (w < 0)
    rc = -2;
  if (rc == -2 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    jobs_figs_free(out);
    if (rc != -1)
      npu_err_set(err, "npusim cluster: a run alone ended without its figures (%s %d)",
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

/* The cluster run (jobs_run_cluster). */

/* Steps per job: the longest job (alone) runs `steps`, every other as many as
 * fit in that time, at least `steps`. Each job first runs `steps` steps alone
 * (into alone[j]): its first step's time sets its count, and a job that keeps
 * `steps` needs no second run alone. */
static int alone_steps(const system_cfg_t *sys, jobs_job_t *jobs, int njobs, int npus, int steps,
                       const replay_opts_t *ro, jobs_figs_t *alone, npu_err_t *err) {
  double longest = 0;
  for (int j = 0; j < njobs; j++) {
    jobs_part_t part = jobs_part_of(&jobs[j], steps);
    npu_err_t why = {""};
    if (jobs_run_apart(sys, &part, 1, npus, ro, &alone[j], &why))
      return npu_err_set(err, "%s: %s", jobs[j].spec.file, why.msg);
    jobs[j].alone_step_s = alone[j].step_end_s[0];
    if (!(jobs[j].alone_step_s > 0))
      return npu_err_set(err,
                         "%s: expected a step that takes time, found one of 0 s (nothing "
                         "to slow down)",
                         jobs[j].spec.file);
    longest = fmax(longest, jobs[j].alone_step_s);
  }
  for (int j = 0; j < njobs; j++) {
    double n = fmax(ceil(steps * longest / jobs[j].alone_step_s - 1e-9), steps);
    if (n > JOBS_MAX_STEPS)
      return npu_err_set(err,
                         "%s: expected a step of at least %.6g s (the longest job's %.6g s x "
                         "--steps / %d), found %.6g s: it would repeat %.0f times",
                         jobs[j].spec.file, steps * longest / JOBS_MAX_STEPS, longest,
                         JOBS_MAX_STEPS, jobs[j].alone_step_s, n);
    jobs[j].steps = (int)n;
  }
  return 0;
}

/* A job's comparison: the steps it finished together before the first job
 * finished all its steps, and the same steps alone; at least its first step
 * (which ran partly alone only if the jobs' slowdowns differ by more than
 * --steps times). */
static void compare(jobs_job_t *job, const double *alone_end, const double *together_end,
                    double window_end) {
  int m = 0;
  while (m < job->steps && together_end[m] <= window_end * (1 + 1e-12))
    m++;
  m = m > 0 ? m : 1;
  job->compared = m;
  job->alone_s = alone_end[m - 1] / m;
  job->together_s = together_end[m - 1] / m;
}

/* The link directions that two or more jobs cross when each runs alone, with
 * their figures together, most utilised first. The peak utilisation is the
 * flow engine's only: the analytic one keeps each transfer's share, not the
 * sum over the jobs' concurrent transfers. */
static int shared_links(int njobs, const jobs_figs_t *alone, const replay_result_t *res,
                        jobs_shared_link_t **out) {
  link_stat_t *ls = NULL;
  linkstats_view_t all = {LINKSTATS_ALL, 0};
  int nls = linkstats_rank(&res->links, res->step_time_s, &all, &ls), n = 0;
  if (!(*out = calloc((size_t)nls + 1, sizeof **out))) {
    free(ls);
    return -1;
  }
  for (int i = 0; i < nls; i++) {
    int slot = ls[i].link * 2 + ls[i].dir, users = 0;
    unsigned bits = 0;
    for (int j = 0; j < njobs; j++)
      if (slot < alone[j].nslots && alone[j].slot_bytes[slot] > 0) {
        users++;
        bits |= j < 32 ? 1u << j : 0;
      }
    if (users >= 2)
      (*out)[n++] = (jobs_shared_link_t){slot, bits, users, ls[i]};
  }
  free(ls);
  return n;
}

/* Runs each job alone with its steps (in a child) and all together (here),
 * and fills each job's comparison. */
static int run_all(const jobs_run_opts_t *opts, const system_cfg_t *sys, jobs_job_t *jobs,
                   int njobs, int npus, const replay_opts_t *ro, jobs_figs_t *alone,
                   jobs_merged_t *m, replay_result_t *res, npu_err_t *err) {
  for (int j = 0; j < njobs; j++) { /* a job that repeats more: alone again, all its steps */
    if (alone[j].total_steps == jobs[j].steps)
      continue;
    jobs_figs_free(&alone[j]);
    jobs_part_t part = jobs_part_of(&jobs[j], jobs[j].steps);
    npu_err_t why = {""};
    if (jobs_run_apart(sys, &part, 1, npus, ro, &alone[j], &why))
      return npu_err_set(err, "%s: %s", jobs[j].spec.file, why.msg);
  }
  jobs_part_t *parts = malloc((size_t)njobs * sizeof *parts);
  if (!parts)
    return npu_err_set(err, "npusim cluster: out of memory for %d jobs", njobs);
  for (int j = 0; j < njobs; j++)
    parts[j] = jobs_part_of(&jobs[j], jobs[j].steps);
  jobs_figs_t together;
  progress_t progress;
  progress_start(&progress, opts->progress, "npusim cluster", "ops", 0);
  replay_opts_t rot = *ro;
  rot.progress = &progress;
  int rc =
      jobs_run_here(sys, parts, njobs, npus, &rot, m, res, &together, err);
  progress_end(&progress);
  free(parts);
  if (rc)
    return -1;
  for (int j = 0; j < njobs; j++) /* a trace's memory: its ranks' high-water marks */
    for (int r = 0; r < jobs[j].trace.ranks && jobs[j].is_trace; r++)
      jobs[j].peak_bytes =
          fmax(jobs[j].peak_bytes, res->per_rank[jobs[j].npu_of[r]].peak_memory_bytes);
  double window = INFINITY;
  for (int j = 0, first = 0; j < njobs; first += jobs[j++].steps)
    window = fmin(window, together.step_end_s[first + jobs[j].steps - 1]);
  for (int j = 0, first = 0; j < njobs; first += jobs[j++].steps)
    compare(&jobs[j], alone[j].step_end_s, together.step_end_s + first, window);
  jobs_figs_free(&together);
  return 0;
}

int jobs_run_cluster(const jobs_run_opts_t *opts, jobs_job_t *jobs, int njobs, jobs_result_t *r,
                     npu_err_t *err) {
  replay_opts_t ro = replay_opts(opts->flow, false, &opts->switches);
  ro.system_file = opts->system_path;
  if (jobs_check_size(jobs, njobs, opts->steps, err) ||
      alone_steps(opts->sys, jobs, njobs, opts->npus, opts->steps, &ro, r->alone, err) ||
      jobs_check_size(jobs, njobs, 0, err))
    return -1;
  int rc = run_all(opts, opts->sys, jobs, njobs, opts->npus, &ro, r->alone, &r->m, &r->res, err);
  r->ran = rc == 0;
  if (rc)
    return -1;
  if ((r->nshared = shared_links(njobs, r->alone, &r->res, &r->shared)) < 0)
    return npu_err_set(err, "npusim cluster: out of memory for the shared links");
  return 0;
}

void jobs_result_free(jobs_result_t *r, int njobs) {
  free(r->shared);
  if (r->ran) {
    replay_result_free(&r->res, &r->m.trace);
    jobs_merged_free(&r->m);
  }
  for (int j = 0; r->alone && j < njobs; j++)
    jobs_figs_free(&r->alone[j]);
}
