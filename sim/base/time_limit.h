/* time_limit.h - a deadline for the whole run: a real-time timer that, when it
 * fires, removes the output file being written (jsonfile), prints the line it was
 * armed with and ends the process. cli.c arms it for --time-limit; whoever writes
 * a file of its own switches it off just before, so that a run stopped by it
 * never leaves a file and a run that wrote one is never stopped. */
#ifndef NPUSIM_TIME_LIMIT_H
#define NPUSIM_TIME_LIMIT_H

/* Arms the timer: after seconds (> 0), line (one line, newline included; copied,
 * cut to 255 bytes) goes to stderr and the process exits with exit_status. */
void time_limit_arm(double seconds, const char *line, int exit_status);

/* Stops the timer, if armed. Safe to call any number of times. */
void time_limit_off(void);

#endif
