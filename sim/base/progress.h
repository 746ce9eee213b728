/* progress.h - a long run's progress on stderr: work done of the total,
 * simulated time reached, an estimate of the wall time left. Printed only
 * when asked (--progress) or when stderr is a terminal, and only once the run
 * has taken PROGRESS_AFTER_S: short runs and piped output stay silent, and
 * stdout is never touched. On a terminal the line rewrites itself and is
 * cleared at the end; elsewhere (--progress into a file) a line is appended
 * every PROGRESS_LOG_EVERY_S. progress_set_after_s replaces PROGRESS_AFTER_S
 * (the command line passes NPUSIM_PROGRESS_AFTER_S=SECONDS, for tests). */
#ifndef NPUSIM_PROGRESS_H
#define NPUSIM_PROGRESS_H

#include <stdbool.h>

#define PROGRESS_AFTER_S 2.0
#define PROGRESS_TTY_EVERY_S 0.5
#define PROGRESS_LOG_EVERY_S 5.0

typedef struct {
  bool on, tty;
  const char *what;        /* "npusim train: replay", ... */
  const char *unit;        /* "ops", "ranks written" */
  double start_s, next_s;  /* monotonic clock: when it began, when to print next */
  long done, total, calls, shown; /* shown: done at the last line printed */
  double sim_s;            /* simulated time reached, < 0: none to show */
  bool printed;
} progress_t;

/* The wall time a progress waits before its first line, for every progress
 * started from now on (PROGRESS_AFTER_S until set). */
void progress_set_after_s(double after_s);

/* Starts a progress of total units of work; on when forced or stderr is a
 * terminal. */
void progress_start(progress_t *p, bool forced, const char *what, const char *unit, long total);

/* n more units done, the simulation at sim_s (< 0: not a simulation). Cheap:
 * with more than 65536 units of work it reads the clock once every 256 calls.
 * p may be NULL. */
void progress_step(progress_t *p, long n, double sim_s);

/* Clears the line a terminal shows (or ends the log with a last line). p may
 * be NULL. */
void progress_end(progress_t *p);

#endif
