/* replay_contend.h - contention between concurrent transfers in the analytic
 * fidelity: collectives and send/recv pairs that run at the same time share
 * the links they cross.
 *
 * The analytic engines price each communication op alone. Here every
 * collective meeting and every message is a job whose phases put known bytes
 * on known link directions (coll_analytic_phases). Jobs run in time: between
 * two events (a job starts, or one of its phases ends) each progresses at a
 * rate, the fraction of its alone speed, set by max-min fairness over the link
 * directions (progressive filling: all rates rise together until a link
 * direction is full, the jobs crossing it stop there, the others go on, none
 * above 1). Only a phase's link time stretches; its latencies, software steps
 * and reductions do not. A job never slowed keeps its alone time exactly.
 *
 * The analytic sweep (replay_sweep.c) drives it as a conservative discrete-
 * event simulation: it starts a job when a collective's members or a message's
 * two sides have met, and asks for the next job to end only once no stream can
 * move without one; every job not yet known then starts after that end, so the
 * sharing is exact in one pass.
 *
 * With representatives, the ranks left out run their program at the same
 * times by symmetry: each collective a representative joins brings along the
 * same collective of every group whose members it stands for, and each message
 * the same message of every rank of its program, so a DP ring shares the
 * uplinks with the other DP rings of its stage.
 *
 * Timed faults (topo_change_t) change a link direction's capacity at their
 * time: the rates are shared again there, so a transfer crossing the fault
 * runs at the old rate until it and at the new one after (rates are fractions
 * of the speed alone on the links as they were built: a link at half its
 * bandwidth halves the rate of a job that needs all of it).
 *
 * Links dying at T (topo_t.after): a job starting at or after T has its shape
 * on the topology after it. At T a message on a dying link is resent whole on
 * its route after T; a collective in a link part on one goes on with the rest
 * of its phase as coll_analytic_death_rest says (the round in flight's
 * transfers on dying paths resent whole, the others' rest kept, its later
 * rounds round the dead links), then its phases after T; any other job takes
 * its phases after T from its next part. Every job in flight at T is timed by
 * the clock from then on.
 *
 * A sibling or a stand-in message that can share no link with a job someone
 * waits for, directly or through other stand-ins, is left out (the answers
 * are the same, byte for byte): on a fabric whose switch tiers never bind, the
 * DP rings of the other tensor-parallel positions use NICs of their own.
 *
 * Finding that no link direction is full, the usual case, does not cost the
 * loads of every transfer in flight at each event: each transfer's loads are
 * registered when its link part changes, and only link directions near their
 * capacity are checked, in the arithmetic of the full sharing (the answers are
 * the same, bit for bit, but where a level falls within 1e-9 of 1: see
 * slot_risky), and only the jobs on those directions are shared out.
 *
 * collectives.analytic_progress "rank" (and "auto" where ECMP hashes flows,
 * coll_rank_paced): a collective runs rank-paced instead,
 * each endpoint walking its phases on its own and each transfer a job of its
 * own, started once both its ends have posted (replay_contend.c).
 *
 * Not modelled: how a real transport shares a link (congestion control, NCCL's
 * channels); a collective's rounds are averaged over its phase (phase pace); collectives
 * whose links carry nothing else (replay_exclusive_insts: a TP group inside a
 * server) are left alone. */
#ifndef NPUSIM_REPLAY_CONTEND_H
#define NPUSIM_REPLAY_CONTEND_H

#include "coll_engine.h"
#include "replay_plan.h"

typedef struct replay_contend replay_contend_t;

/* The jobs' shapes and who stands for whom, for a plan built for the analytic
 * fidelity; no job yet, time 0. */
replay_contend_t *replay_contend_new(const replay_plan_t *pl);
void replay_contend_free(replay_contend_t *c);

/* Whether collective inst can share a link with anything (else it runs alone). */
bool replay_contend_shares(const replay_contend_t *c, int inst);

/* The siblings collective inst brings along when it runs, and in *left_out
 * those it leaves out (they share no link with any job waited for). */
int replay_contend_siblings(const replay_contend_t *c, int inst, int *left_out);

/* Starts a job at start_s (never before a job already handed out ended):
 * collective inst met there, or the message of send op `op` of simulated rank
 * sender. Returns its id. */
int replay_contend_coll(replay_contend_t *c, const replay_plan_t *pl, int inst, double start_s);
int replay_contend_message(replay_contend_t *c, const replay_plan_t *pl, int sender, int op,
                           double start_s);

/* Runs time to the next end of a started job: returns its id and how long it
 * took, or -1 when none is left. Jobs ending at one moment come one per call. */
int replay_contend_next(replay_contend_t *c, double *duration_s);

/* The coll command's analytic sizes where collectives run rank-paced
 * (coll_rank_paced): each schedule alone on topo, one after another on the
 * clock from 0 (a timed fault meets the size it falls in), in times_s. Fits
 * coll_run_opts_t.time_rank_paced. */
void replay_contend_scheds(const topo_t *topo, const coll_cfg_t *cfg,
                           const coll_sched_t *const *scheds, int n, double *times_s);

#endif
