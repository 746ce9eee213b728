/* time_limit.c - the run's deadline on SIGALRM; see time_limit.h. The handler
 * does only async-signal-safe work: unlink, write, _exit. */
#include "time_limit.h"

#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "outfile.h"

static char time_limit_line[256];
static size_t time_limit_len;
static int time_limit_status;

static void time_limit_expired(int sig) {
  (void)sig;
  outfile_remove_pending(); /* a --chrome-trace or --list-ops being written */
  ssize_t w = write(STDERR_FILENO, time_limit_line, time_limit_len);
  (void)w;
  _exit(time_limit_status);
}

void time_limit_arm(double seconds, const char *line, int exit_status) {
  size_t n = strlen(line);
  time_limit_len = n < sizeof time_limit_line ? n : sizeof time_limit_line - 1;
  memcpy(time_limit_line, line, time_limit_len);
  time_limit_status = exit_status;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = time_limit_expired;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval it = {{0, 0},
                         {(time_t)seconds, (suseconds_t)((seconds - floor(seconds)) * 1e6)}};
  if (it.it_value.tv_sec == 0 && it.it_value.tv_usec == 0)
    it.it_value.tv_usec = 1;
  setitimer(ITIMER_REAL, &it, NULL);
}

void time_limit_off(void) {
  struct itimerval it = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &it, NULL);
}
