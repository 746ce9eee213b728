/* progress.c - see progress.h. */
#include "progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double progress_after_s = PROGRESS_AFTER_S; /* progress_set_after_s's */

void progress_set_after_s(double after_s) {
  progress_after_s = after_s;
}

void progress_start(progress_t *p, bool forced, const char *what, const char *unit, long total) {
  *p = (progress_t){
      .tty = isatty(STDERR_FILENO) == 1, .what = what, .unit = unit, .total = total, .sim_s = -1};
  p->on = forced || p->tty;
  p->start_s = now_s();
  p->next_s = p->start_s + progress_after_s;
}

static void print_line(progress_t *p, double t) {
  double frac = p->total > 0 ? (double)p->done / (double)p->total : 0;
  char sim[48] = "", left[48] = "";
  if (p->sim_s >= 0)
    snprintf(sim, sizeof sim, ", simulated %.3f s", p->sim_s);
  if (frac > 0.01) {
    double rest = (t - p->start_s) * (1 - frac) / frac;
    snprintf(left, sizeof left, rest < 120 ? ", about %.0f s left" : ", about %.0f min left",
             rest < 120 ? rest : rest / 60);
  }
  fprintf(stderr, "%s%s: %ld of %ld %s (%.0f%%)%s%s%s", p->tty ? "\r\033[K" : "", p->what, p->done,
          p->total, p->unit, 100 * frac, sim, left, p->tty ? "" : "\n");
  fflush(stderr);
  p->printed = true;
  p->shown = p->done;
  p->next_s = t + (p->tty ? PROGRESS_TTY_EVERY_S : PROGRESS_LOG_EVERY_S);
}

void progress_step(progress_t *p, long n, double sim_s) {
  if (!p || !p->on)
    return;
  p->done += n;
  if (sim_s > p->sim_s)
    p->sim_s = sim_s;
  long stride = p->total > 65536 ? 256 : 1; /* fine-grained work: the clock now and then */
  if (++p->calls % stride != 0)
    return;
  double t = now_s();
  if (t >= p->next_s)
    print_line(p, t);
}

void progress_end(progress_t *p) {
  if (!p || !p->on || !p->printed)
    return;
  if (p->tty) {
    fputs("\r\033[K", stderr);
  } else if (p->shown != p->total) {
    p->done = p->total;
    print_line(p, now_s());
  }
  fflush(stderr);
}
