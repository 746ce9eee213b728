/* replay_contend_state.h - the analytic contention model's state, shared by
 * its parts (not a public header): replay_contend.c keeps the jobs in time,
 * replay_contend_share.c shares the link directions among the jobs in flight
 * (max-min fairness by progressive filling). */
#ifndef NPUSIM_REPLAY_CONTEND_STATE_H
#define NPUSIM_REPLAY_CONTEND_STATE_H

#include "replay_contend.h"

/* A job's work: an optional fixed start (the collective's overhead), then
 * loops x phases, each a fixed part then a link part. */
typedef struct {
  double overhead_s;
  int nphases, loops;
  coll_phase_cost_t *phases;
  double alone_s;       /* what the analytic model says alone, exactly */
} shape_t;

/* A timed fault: its time and its index in topo_t.changes. */
typedef struct {
  double at_s;
  int id;
} change_ref_t;

/* A job's load on one link direction, in that direction's list of them. */
typedef struct {
  int job;
  int load;        /* its index in the job's link part */
  long seq;        /* the job's place in the active list */
  double rate_Bps; /* bytes of the link part per second alone */
} load_entry_t;

/* The loads registered on one link direction (unordered), their count and
 * their sum in extended precision (long double), kept as loads come and go. */
typedef struct {
  load_entry_t *e;
  int n, cap;
  long double demand;
  int risky_at;    /* its place in the risky list, or -1 */
  double level;    /* share()'s first level on it, as first_level() found it */
  bool level_known; /* since the loads last changed */
} slot_loads_t;

/* A link direction's level in share()'s filling (fill_levels). */
typedef struct {
  double level;
  int q;  /* the direction's index in touched */
} fill_entry_t;

/* One collective of a group, or one message, in flight. */
typedef struct {
  const shape_t *shape; /* an inst's, or own (a message; a collective the links'
                         * death caught in a link part) */
  shape_t own;
  coll_phase_cost_t own_phase;   /* a message's */
  coll_phase_cost_t *own_phases; /* a caught collective's rest: [0] its own, the others
                                  * its inst's after the death (their arrays borrowed) */
  int inst;                      /* the collective's inst, or -1 (a message: src to dst) */
  int src, dst;
  double bytes;
  double start_s;
  long part;            /* 0: overhead; then 2 per phase per loop (fixed, link) */
  double left_s;        /* alone-time left of the part */
  double rate;          /* fraction of alone speed */
  bool slowed, owner;   /* owner: a caller waits for its end (else a group stood for) */
  struct paced *paced;  /* a rank-paced collective's own state (it runs no parts) */
  int paced_of;         /* the rank-paced collective this job is a step of, or -1 */
  int paced_kind, paced_e, paced_p, paced_x; /* which step: PACED_*, endpoint, phase, transfer */
} job_t;

struct replay_contend {
  int ninsts;
  shape_t *inst_shapes;  /* per inst; phases NULL until built */
  shape_t *after_shapes; /* per inst, on the topology after links die (topo_t.after) */
  const replay_plan_t *pl;
  bool dead;             /* the links' death has been applied to the jobs */
  bool *exclusive;       /* per inst */
  int **siblings;        /* per inst: the same collective of the groups it stands for */
  int *nsiblings;
  double *cap;           /* per link direction: effective bandwidth */
  double *used, *demand; /* progressive filling, per link direction */
  int *users;            /* open jobs on each link direction */
  char *full;
  int nslots;
  const topo_t *topo;
  change_ref_t *changes; /* timed faults (topo_change_t) by time */
  int nchanges, next_change;
  /* the jobs in time */
  job_t *jobs;
  int njobs, capjobs;
  int *spare, nspare;    /* ended jobs' slots, reused */
  int *active, nactive;  /* started, not ended */
  int *ending;           /* scratch of step(): the jobs that end at its time */
  int *open, *touched;   /* scratch of share() */
  const coll_phase_cost_t **open_link; /* per open job, its link part (share() finds
                                        * each once: its parts do not move during it) */
  /* scratch of fill_levels(): its heap of levels; per direction its index in
   * touched; per touched direction its open jobs (CSR); per open job whether
   * it froze; the jobs frozen at a level; the directions they changed */
  fill_entry_t *fill;
  int nfill, capfill;
  int *fill_at, *fill_off, *fill_fill, *fill_jobs;
  size_t capfill_jobs;
  char *fill_frozen;
  int *fill_list, *fill_changed;
  char *in_open;         /* per job id: scratch of open_jobs(), left all 0 */
  int *heap, nheap;      /* not yet started, by start time */
  int *ended, nended, first_ended; /* owners ended at `now`, handed out one by one */
  double now;
  bool dirty;            /* the rates need sharing again */
  bool fill_by_heap;     /* the last share's filling needed the heap (fill_levels) */
  /* kept between shares (see no_link_full): per job id, the link part whose
   * loads are registered, their slots, places in the slots' lists and rates;
   * per slot, the registered loads; the slots that may be full */
  const coll_phase_cost_t **reg_link;
  int **reg_slots, **reg_pos, *nreg;
  double **reg_rate;
  long *seq, next_seq;
  slot_loads_t *loads;
  int *risky, nrisky;
  load_entry_t *order;   /* scratch: a risky slot's loads in the active list's order */
  int norder;
  /* the stand-ins that matter (see find_relevant): per link, whether a job
   * someone waits for may share it, directly or through other stand-ins; per
   * inst, whether it matters as a sibling; NULL: every stand-in runs */
  char *relevant_link;
  bool *relevant_inst;
  bool rank_pace;        /* collectives run rank-paced (coll_rank_paced) */
};

/* A message's shape lives in its job, which may move: found through here. */
static inline const shape_t *job_shape(job_t *j) {
  if (j->shape)
    return j->shape;
  j->own.phases = j->own_phases ? j->own_phases : &j->own_phase;
  return &j->own;
}

/* replay_contend_share.c: part `part` of a shape, its alone length and its
 * link loads (NULL if none); the link loads of a job's current part. */
double contend_part_len(const shape_t *sh, long part, const coll_phase_cost_t **link);
const coll_phase_cost_t *contend_job_link(job_t *j);

/* replay_contend_share.c: every active job's rate, max-min fair over the
 * link directions (c->dirty: the caller's); a job's loads taken out of the
 * directions' sums as its link part ends; slot s's capacity changed. */
void contend_share(replay_contend_t *c);
void contend_unregister_loads(replay_contend_t *c, int id);
void contend_update_risk(replay_contend_t *c, int s);

#endif
