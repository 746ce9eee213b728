/* cli_env.c - see cli_env.h. */
#include "cli_env.h"

#include <stdlib.h>
#include <string.h>

#include "platform.h"
#include "progress.h"

/* Whether the environment sets name to value. */
static bool env_is(const char *name, const char *value) {
  const char *v = getenv(name);
  return v && strcmp(v, value) == 0;
}

void cli_env_read(cli_env_t *env) {
  *env = (cli_env_t){.replay = {.no_contention = env_is("NPUSIM_ANALYTIC_CONTENTION", "0"),
                                .no_collapse = env_is("NPUSIM_FLOW_COLLAPSE", "0"),
                                .tell_collapse = env_is("NPUSIM_FLOW_COLLAPSE", "tell"),
                                .force_actors = env_is("NPUSIM_REPLAY_ACTORS", "1"),
                                .all_ranks = env_is("NPUSIM_FLOW_ALL_RANKS", "1"),
                                .all_standins = env_is("NPUSIM_CONTEND_STANDINS", "all")},
                     .tmpdir = getenv("TMPDIR"),
                     .progress_after_s = getenv("NPUSIM_PROGRESS_AFTER_S")};
  platform_set_folder(env->tmpdir);
  if (env->progress_after_s) /* tests: print at once */
    progress_set_after_s(atof(env->progress_after_s));
}
