/* coll_engine.h - the two ways of costing collective schedules.
 *
 * analytic: each round of a phase costs the slowest of its transfers, a
 *   transfer costing its path's alpha plus the bytes its busiest link carries
 *   in that round over that link's effective bandwidth; rounds, phases and
 *   loops add up. Exact for the symmetric schedules of one collective; ignores
 *   contention between collectives. Microseconds even at thousands of ranks.
 * flow: every transfer is a SimGrid communication between the ranks' hosts on
 *   a platform generated from the topology; ranks progress on their own, and
 *   links shared by concurrent transfers are divided by SimGrid's max-min model.
 *
 * Both add the per-collective overhead, the per-round software latency and the
 * reduction time (bytes received / reduce bandwidth) of the configuration. */
#ifndef NPUSIM_COLL_ENGINE_H
#define NPUSIM_COLL_ENGINE_H

#include "coll.h"
#include "linkstats.h"

/* Seconds the schedule takes; stats (may be NULL) receive per-link figures. */
double coll_analytic_time(const topo_t *topo, const coll_cfg_t *cfg, const coll_sched_t *sched,
                          linkstats_t *stats);

/* Runs the schedules one after another in one SimGrid simulation (SimGrid runs
 * once per process) and writes each one's duration to times_s. Link figures of
 * schedule stats_index go to stats (may be NULL). Returns 0, or -1 with a
 * reason in err (platform could not be written). */
int coll_flow_run(const topo_t *topo, const coll_cfg_t *cfg, const coll_sched_t *const *scheds,
                  int n, double *times_s, int stats_index, linkstats_t *stats, char *err,
                  size_t err_len);

#endif
