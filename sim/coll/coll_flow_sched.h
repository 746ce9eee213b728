/* coll_flow_sched.h - the flow engine's prepared schedule, shared by its
 * parts (not a public header): coll_flow.c runs it in SimGrid,
 * coll_flow_closed.c times it in closed form where SimGrid would add nothing. */
#ifndef NPUSIM_COLL_FLOW_SCHED_H
#define NPUSIM_COLL_FLOW_SCHED_H

#include "coll_engine.h"
#include "simgrid_dl.h"

typedef struct {
  int src, dst;
  long bytes;        /* on the wire, as SimGrid counts them */
  double data_bytes; /* what the receiver reduces */
  double alpha_s;    /* path latency + message overhead */
  sg_mailbox_t box;
  double alpha_after_s; /* the same on the route after links die */
  bool dies;            /* its route crosses a link that dies during the run */
  double rate_Bps;      /* alone: its path's slowest link's bandwidth */
} fxfer_t;

/* When each end last posted a transfer (links dying during the run only):
 * both had posted it before T when the counts match and both times are. */
typedef struct {
  long sent, got;
  double sent_s, got_s;
} fstamp_t;

typedef struct {
  const coll_phase_t *ph;
  bool uniform;             /* its rounds run as one (coll_flow_collapse, uniform_phase) */
  fxfer_t *x;
  fstamp_t *stamp;          /* per transfer; NULL unless links die */
  int *send_off, *send_idx; /* transfers by sender, CSR over endpoints */
  int *recv_off, *recv_idx; /* transfers by receiver */
} fphase_t;

/* Communications left on dead links at T: still running (at 1 byte/s), so
 * held until SimGrid has run (it cancels them as their actors end). */
typedef struct {
  sg_comm_t *v;
  size_t n, cap;
} left_comms_t;

struct coll_flow_sched {
  int nphases, loops, endpoints;
  int ranks;         /* endpoints below are ranks, from it in-network switches */
  left_comms_t *left; /* NULL unless links die */
  double step_s;     /* protocol latency per round */
  double held;       /* the schedule's hold_factor (coll_flow_logged_bytes) */
  bool own_launch;   /* launch_s replaces the config's op_overhead_s (coll.h) */
  double launch_s;
  double death_s;    /* when links die (topo_t.death_s); 0: none do */
  fphase_t *phases;
  struct coll_flow_closed *closed; /* NULL: SimGrid runs its rounds (coll_flow_closed.c) */
};

/* Whether endpoint me has transfers in the schedule (coll_flow_takes_part). */
static inline bool coll_flow_sched_has(const coll_flow_sched_t *job, int me) {
  for (int p = 0; p < job->nphases; p++)
    if (job->phases[p].send_off[me] != job->phases[p].send_off[me + 1] ||
        job->phases[p].recv_off[me] != job->phases[p].recv_off[me + 1])
      return true;
  return false;
}

/* The bytes the link figures count for transfer x: what SimGrid moves, but for
 * a held schedule (a kernel below the links' rate, no protocol): its data, the
 * rest being time. */
static inline double coll_flow_logged_bytes(const coll_flow_sched_t *job, const fxfer_t *x) {
  return job->held > 1 ? x->data_bytes : (double)x->bytes;
}

/* Endpoint me's part of a closed schedule (coll_flow_close): meets the other
 * members, times them all if first, sleeps until its end. */
void coll_flow_run_closed(const coll_flow_sched_t *job, const coll_cfg_t *cfg, int me,
                          coll_flow_log_t *log);
void coll_flow_closed_free(struct coll_flow_closed *c);

#endif
