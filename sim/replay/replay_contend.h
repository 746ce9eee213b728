/* replay_contend.h - contention between concurrent transfers in the analytic
 * fidelity: collectives and send/recv pairs that run at the same time share
 * the links they cross.
 *
 * The analytic engines price each communication op alone. This stage reads a
 * run's record (when each op met its peers), treats every collective and every
 * message as a job whose phases put known bytes on known link directions
 * (coll_analytic_phases), and lets the jobs that overlap in time share each
 * link: between two events (a job starts, or one of its phases ends) every job
 * progresses at a rate, the fraction of its alone speed, set by max-min
 * fairness over the link directions (progressive filling: all rates rise
 * together until a link direction is full, the jobs crossing it stop there,
 * the others go on, none above 1). Only a phase's link time stretches; its
 * latencies, software steps and reductions do not. A job never slowed keeps
 * its alone time exactly. The durations found go into pl->comm_s; the engine
 * then runs again, since later ops move when earlier ones take longer, until
 * no duration changes (replay.c).
 *
 * With representatives, the ranks left out run their program at the same
 * times by symmetry: each collective a representative joins brings along the
 * same collective of every group whose members it stands for, and each message
 * the same message of every rank of its program, so a DP ring shares the
 * uplinks with the other DP rings of its stage.
 *
 * Not modelled: how a real transport shares a link (congestion control, NCCL's
 * channels); a collective's rounds are averaged over its phase; collectives
 * whose links carry nothing else (replay_scope.c: a TP group inside a server)
 * are left alone. */
#ifndef NPUSIM_REPLAY_CONTEND_H
#define NPUSIM_REPLAY_CONTEND_H

#include "replay_engine.h"

typedef struct replay_contend replay_contend_t;

/* The jobs' shapes for a plan built for the analytic fidelity; NULL when
 * nothing in it can contend (every collective alone on its links, no
 * send/recv). */
replay_contend_t *replay_contend_new(const replay_plan_t *pl);

/* Finds every communication op's duration under contention from the record
 * of a run (every op finished) and writes it to pl->comm_s. Returns the
 * largest change of a duration against what pl->comm_s held (alone times when
 * NULL), relative to the longer of the two. */
double replay_contend_update(replay_contend_t *c, replay_plan_t *pl, const replay_record_t *rec);

void replay_contend_free(replay_contend_t *c);

#endif
