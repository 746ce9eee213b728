/* cli_env.h - the environment npusim reads, all of it, in one place: the
 * layers below the command line never call getenv; they take the values as
 * plain fields (the replay's test switches) or as a setting made once before
 * a command runs (the platform's folder, progress's first wait). */
#ifndef NPUSIM_CLI_ENV_H
#define NPUSIM_CLI_ENV_H

#include "replay.h"

typedef struct cli_env {
  replay_switches_t replay;     /* NPUSIM_ANALYTIC_CONTENTION=0, NPUSIM_FLOW_COLLAPSE=0,
                                 * NPUSIM_REPLAY_ACTORS=1, NPUSIM_FLOW_ALL_RANKS=1,
                                 * NPUSIM_CONTEND_STANDINS=all (tests) */
  const char *tmpdir;           /* TMPDIR: where the SimGrid platform is written; NULL: /tmp */
  const char *progress_after_s; /* NPUSIM_PROGRESS_AFTER_S (tests); NULL: progress.h's */
} cli_env_t;

/* Reads the environment into env, and hands the platform its folder and
 * progress its first wait. */
void cli_env_read(cli_env_t *env);

#endif
