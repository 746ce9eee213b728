/* replay_summary.h - the replay's last stage: from the plan and what an
 * engine recorded, the figures a user reads: the step time, each rank's
 * compute, communication, exposed communication and idle time (unions of its
 * ops' intervals, intervals.h), peak memory, each communicator's collectives
 * and bytes, and the link figures (flow: the transfers logged; analytic: each
 * collective's rounds and each send's bytes). Unsimulated ranks and groups
 * take their representative's figures. */
#ifndef NPUSIM_REPLAY_SUMMARY_H
#define NPUSIM_REPLAY_SUMMARY_H

#include "replay_engine.h"
#include "npu_err.h"

/* Every op of a simulated rank finished, or -1 with one line naming the first
 * that did not (the head of a stuck stream) and what it waits for. */
int replay_check_finished(const replay_plan_t *pl, const replay_record_t *rec, const char *name,
                          npu_err_t *err);

/* Link figures (replay_fidelity_t.links). Logged (flow): from the transfers
 * the engine logged. Planned (analytic): from each collective's rounds and
 * each send's bytes. */
void replay_links_logged(const replay_plan_t *pl, const replay_record_t *rec, linkstats_t *links);
void replay_links_planned(const replay_plan_t *pl, const replay_record_t *rec, linkstats_t *links);

/* Fills out's figures (not its spans or topology). */
void replay_summarise(const replay_plan_t *pl, const replay_record_t *rec, replay_result_t *out);

#endif
