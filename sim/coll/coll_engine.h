/* coll_engine.h - the two ways of costing collective schedules.
 *
 * analytic: each round of a phase costs the slowest of its transfers, a
 *   transfer costing its path's alpha plus the bytes its busiest link carries
 *   in that round over that link's effective bandwidth; rounds, phases and
 *   loops add up. Exact for the symmetric schedules of one collective; a replay
 *   shares links between concurrent collectives on top of it
 *   (coll_analytic_phases, sim/replay/replay_contend.c). Microseconds even at
 *   thousands of ranks.
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
#include "platform.h"
#include "npu_err.h"

/* Seconds the schedule takes; stats (may be NULL) receive per-link figures. */
double coll_analytic_time(const topo_t *topo, const coll_cfg_t *cfg, const coll_sched_t *sched,
                          linkstats_t *stats);

/* The same for the schedule started start_s into the run, with the timed
 * faults (topo_change_t) that fall in it: the rounds one by one, each link
 * direction draining its round's load at its bandwidth of the moment, so a
 * transfer crossing a fault runs at the old rate until it and the new one
 * after. Exactly coll_analytic_time when no fault falls in the schedule's time
 * alone. */
double coll_analytic_time_from(const topo_t *topo, const coll_cfg_t *cfg,
                               const coll_sched_t *sched, double start_s);

/* Records the schedule's link figures as if it ran `times` times. */
void coll_analytic_record(const topo_t *topo, const coll_cfg_t *cfg, const coll_sched_t *sched,
                          linkstats_t *stats, double times);

/* One phase of a schedule (all its rounds, one loop) as the analytic model
 * costs it alone, for engines that share links among concurrent schedules
 * (sim/replay/replay_contend.c). Only link_s stretches when links are shared. */
typedef struct {
  double fixed_s;  /* path latencies, software steps and reductions */
  double link_s;   /* the rounds' busiest link direction, busy */
  int nloads;
  int *slots;      /* link directions the phase loads: 2 x link + direction,
                    * ascending and each once as coll_analytic gives them */
  double *bytes;   /* bytes on each (wire bytes, all rounds) */
} coll_phase_cost_t;

/* The schedule's phases, sched->nphases of them (a phase without transfers
 * left zero): alone, op_overhead_s + loops x their fixed_s + link_s is
 * coll_analytic_time. Free with coll_phase_costs_free. */
coll_phase_cost_t *coll_analytic_phases(const topo_t *topo, const coll_cfg_t *cfg,
                                        const coll_sched_t *sched);
void coll_phase_costs_free(coll_phase_cost_t *costs, int n);

/* The rest of phase p (one loop) of a schedule in flight when links die
 * (topo->after), its fixed parts done and done_frac of its rounds' link time
 * through at T: the round in flight keeps what its transfers on live paths
 * have left (their bytes times the part of the round not through) and resends
 * those on a dying path whole on their routes after T; the rounds after it run
 * on those routes. Writes out's link loads and link_s (alone on topo->after),
 * fixed_s 0; free its arrays as coll_phase_costs_free does. */
void coll_analytic_death_rest(const topo_t *topo, const coll_sched_t *sched, int p,
                              double done_frac, coll_phase_cost_t *out);

/* What one SimGrid simulation can hold, refused before it starts. Each actor's
 * stack takes two of the kernel's memory maps (vm.max_map_count is 65530 by
 * default), so SimGrid aborts at about 32,000 actors; each transfer of a
 * schedule prepared for the flow engine costs about 650 bytes and 12 us. */
#define FLOW_MAX_ACTORS 30000
#define FLOW_MAX_XFERS (1L << 23)

/* coll_flow_run's return when the run is more than SimGrid holds: err says
 * "flow: expected at most ...". */
#define COLL_FLOW_TOO_LARGE (-2)

/* Runs the schedules one after another in one SimGrid simulation (SimGrid runs
 * once per process) and writes each one's duration to times_s. collapse:
 * uniform rounds as one and closed forms where they give the same result
 * (coll_flow_collapse, coll_flow_close); false runs every round in SimGrid. Link figures of
 * schedule stats_index go to stats (may be NULL). Returns how many schedules
 * took the closed form (0 or more), or -1 with a reason in err (the platform
 * could not be written), or COLL_FLOW_TOO_LARGE when the run is more than
 * SimGrid holds (FLOW_MAX_*). */
int coll_flow_run(const topo_t *topo, const coll_cfg_t *cfg, const coll_sched_t *const *scheds,
                  int n, bool collapse, double *times_s, int stats_index, linkstats_t *stats,
                  npu_err_t *err);

/* ---- the flow engine's parts, for engines that run collectives among other
 * work (the replay) ---- */

/* Writes the platform for endpoints and the routes of pairs and starts
 * SimGrid (once per process). */
int coll_flow_start(const topo_t *topo, int endpoints, const pair_set_t *pairs, npu_err_t *err);

/* A schedule ready to run: routes, latencies and mailboxes (named after
 * channel, so collectives of different communicators never match). */
typedef struct coll_flow_sched coll_flow_sched_t;
coll_flow_sched_t *coll_flow_prepare(const topo_t *topo, const coll_sched_t *s,
                                     const char *channel);
void coll_flow_free(coll_flow_sched_t *job);

/* Runs the rounds of each uniform phase (every transfer alike: bytes,
 * latency, busiest link's time) as one round with every transfer, wait and
 * reduction rounds times as long. For a schedule alone on its links, all its
 * transfers then end together every round, so the result is the same from
 * one SimGrid communication per transfer instead of one per round (a ring of
 * p ranks under one switch: 2 instead of 2 (p - 1)). */
void coll_flow_collapse(coll_flow_sched_t *job, const topo_t *topo);

/* Times schedules in closed form where SimGrid would add nothing: when all of
 * them at once load no link direction that two of their (src, dst) pairs
 * share beyond its bandwidth (nothing else may use their links but links
 * that never bind, topo_link_never_binding, whose figures then wait for
 * SimGrid's clock; no timed faults, no dying links, no in-network switch),
 * every transfer runs at its
 * path's slowest link, so its end is when both ends posted it plus its bytes
 * at that rate. A closed schedule's members then meet as they come, the
 * first to leave times every member's rounds as run_round would (the same
 * operations in the same order), and each sleeps until its end: one SimGrid
 * event per member instead of one per transfer per round. Only schedules
 * whose every member's end waits for every member's start are closed (no one
 * could have ended before the last came). Returns how many it closed. */
int coll_flow_close(coll_flow_sched_t *const *jobs, int n, const topo_t *topo);

/* Whether endpoint me has transfers in the schedule. */
bool coll_flow_takes_part(const coll_flow_sched_t *job, int me);

/* A min-heap of times. */
typedef struct {
  double *v;
  size_t n, cap;
} coll_flow_times_t;

/* The transfers of a flow run as they end, into link figures that sweep as
 * the run goes (linkstats_sweep_before), so memory holds what is in flight,
 * not what ran. Whatever logs a transfer holds the time it may start from
 * while it is in flight (coll_flow_log_hold, _release): the sweeps never
 * pass the earliest time held, nor SimGrid's clock. */
typedef struct {
  const topo_t *topo;
  linkstats_t *stats;      /* NULL: nothing logged */
  coll_flow_times_t held;  /* times held */
  coll_flow_times_t gone;  /* of those, the ones released (taken out lazily) */
  long since_sweep;        /* link intervals added since the last sweep */
  double swept_before_s;   /* the last sweep's time */
} coll_flow_log_t;

/* A log into stats (initialised, on topo); stats NULL: a log that takes nothing. */
void coll_flow_log_init(coll_flow_log_t *log, const topo_t *topo, linkstats_t *stats);
void coll_flow_log_hold(coll_flow_log_t *log, double start_s);
void coll_flow_log_release(coll_flow_log_t *log, double start_s);
/* A transfer from start_s (it took the routes of then) to end_s. */
void coll_flow_log_add(coll_flow_log_t *log, int src, int dst, double bytes, double start_s,
                       double end_s);
/* The same on a route known beforehand: route[0..n) holds 2 x slot (2 x link
 * + direction) + 1 where the slot takes its transfers in order, each one
 * after the last's end and before any to come (linkstats_add_in_order). */
void coll_flow_log_add_routed(coll_flow_log_t *log, const int *route, int n, double bytes,
                              double start_s, double end_s);
/* Sweeps the link directions slots[0..n) up to t: the caller knows no
 * transfer logged on them from now on starts before t. */
void coll_flow_log_sweep_slots(coll_flow_log_t *log, const int *slots, int n, double t);
/* Closes the stats (every transfer logged) and frees the log's own parts. */
void coll_flow_log_close(coll_flow_log_t *log);

/* Moves the calling actor onto endpoint me's shadow host (platform.h), whose
 * routes go round the links dead from T; call at or after T. */
void coll_flow_to_shadow_host(int me);

/* Runs endpoint me's part of the schedule; call from a SimGrid actor on me's
 * host. Transfers are logged when log is not NULL. */
void coll_flow_run_endpoint(const coll_flow_sched_t *job, const coll_cfg_t *cfg, int me,
                            coll_flow_log_t *log);

#endif
