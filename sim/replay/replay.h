/* replay.h - rank programs replayed on the simulated cluster.
 *
 * A replay runs in three stages along its data flow:
 *   plan     (replay_plan.c, replay_scope.c) every cost and choice: compute
 *            ops on the chip model, each collective's plan and cost mode,
 *            which ranks are simulated, which engine runs; in the analytic
 *            fidelity also every transfer's duration with contention, found by
 *            a sweep that shares the links (replay_contend.h);
 *   engine   (replay_engine.h: replay_sweep.c without the simulator,
 *            replay_actors.c on SimGrid) runs the plan and records when each
 *            op ran;
 *   summary  (replay_summary.c) turns the record into the figures below.
 * An op starts when the ops before it on its stream and its dependencies are
 * done. Compute ops take what the chip model says (or their given duration);
 * collectives and send/recv use the collectives layer in the chosen fidelity:
 *   flow:     their transfers are SimGrid communications on the platform built
 *             from the topology, so everything in flight shares the links;
 *   analytic: the members of a collective meet, then each waits the
 *             collective's alpha-beta cost; a send/recv pair meets, then waits
 *             its path time; collectives and messages that run at the same
 *             time share the links they cross (replay_contend.h: max-min
 *             sharing between jobs as they run in time).
 * A step barrier (TRACE_OP_BARRIER, between the steps of npusim cluster's
 * jobs) ends, taking no time, when the last member of its group arrives.
 * Compute and communication on different streams overlap; a compute op the
 * trace marks as running beside a transfer ("overlaps") takes
 * collectives.compute_slowdown x the shorter of the two longer (interference;
 * 0 = off). The trace was checked on reading, so the replay cannot deadlock;
 * should an op still not finish, the replay fails with one line. */
#ifndef NPUSIM_REPLAY_H
#define NPUSIM_REPLAY_H

#include <stdbool.h>

#include "system.h"
#include "workload.h"
#include "linkstats.h"
#include "op.h"
#include "progress.h"
#include "trace.h"
#include "npu_err.h"

/* The names a trace may use: compute ops of the chip model, collectives,
 * data types. */
extern const trace_vocab_t replay_vocab;

/* replay_vocab with the system's sends (collectives.p2p_eager_max_MiB), so a
 * trace's cycle check knows which sends wait for their recvs as the replay will
 * (replay_vocab alone: every send waits). */
static inline trace_vocab_t replay_vocab_on(const system_cfg_t *sys) {
  trace_vocab_t v = replay_vocab;
  v.eager_max_bytes = sys->coll.eager_max_bytes;
  return v;
}

/* The chip-model descriptor of a shaped compute op of a trace read with
 * replay_vocab. */
void replay_op_desc(const trace_op_t *op, op_desc_t *d);

/* How to replay: what the command asked, and switches for tests. */
typedef struct {
  bool flow;              /* flow fidelity, else analytic */
  bool representatives;   /* analytic: one rank per program; flow: only what contends */
  bool contention;        /* analytic: concurrent transfers share links (replay_contend.h) */
  bool collapse_rounds;   /* flow: a collective alone on its links runs each phase's
                           * rounds as one (coll_flow_collapse) */
  bool force_actors;      /* analytic on the SimGrid actors where the sweep would do */
  bool all_ranks;         /* flow with representatives: simulate every rank anyway */
  bool all_standins;      /* analytic with contention: every stand-in job runs, even one
                           * that shares no link with a job waited for (replay_contend.h) */
  progress_t *progress;   /* ops done, on stderr (progress.h); NULL: none */
  const char *system_file; /* named in errors about system keys (faults, speed factors);
                            * NULL: the trace's name */
} replay_opts_t;

/* Switches for tests, zero for a normal run; the command line fills them
 * from the environment (sim/cli/cli_env.c), the replay never reads it. */
typedef struct {
  bool no_contention; /* NPUSIM_ANALYTIC_CONTENTION=0: analytic as it was before contention */
  bool no_collapse;   /* NPUSIM_FLOW_COLLAPSE=0: every round of every flow collective */
  bool tell_collapse; /* NPUSIM_FLOW_COLLAPSE=tell: say on stderr how many collectives
                       * were timed in closed form (read by the command line) */
  bool force_actors;  /* NPUSIM_REPLAY_ACTORS=1: analytic on the SimGrid actors */
  bool all_ranks;     /* NPUSIM_FLOW_ALL_RANKS=1: flow simulates every rank */
  bool all_standins;  /* NPUSIM_CONTEND_STANDINS=all: no stand-in job left out */
} replay_switches_t;

/* The options for a fidelity with the test switches sw (NULL: none). */
replay_opts_t replay_opts(bool flow, bool representatives, const replay_switches_t *sw);

typedef struct {
  double start_s, end_s;  /* per (rank, op): when it ran */
  double ready_s;         /* communication: when its peers were there and data began to move */
} replay_span_t;

typedef struct {
  double compute_s;       /* time with some compute op running */
  double comm_s;          /* time with some collective or send/recv running */
  double exposed_comm_s;  /* communication not hidden under compute */
  double idle_s;          /* neither */
  double peak_memory_bytes;
} replay_rank_t;

typedef struct {
  long collectives;       /* collectives run (one per group per issue) */
  double bytes;           /* bytes their schedules moved */
  double busy_s;          /* summed over collectives: mean member time */
} replay_comm_t;

typedef struct {
  double step_time_s;
  int ranks;
  replay_rank_t *per_rank;
  replay_comm_t *per_comm;   /* indexed like trace->comms */
  linkstats_t links;
  replay_span_t **spans;     /* per simulated rank, per op of its program */
  bool representatives;
  int simulated_ranks;       /* ranks that ran their own program */
  int closed_collectives;    /* flow: collectives timed in closed form (coll_flow_close) */
  topo_t topo;
} replay_result_t;

/* Replays the trace on the system. With representatives, analytic: only the
 * first rank of each program runs: the others run the same program at the
 * same times by symmetry (a collective's members are met by the representative
 * alone), which is exact for symmetric plans and makes thousands of ranks
 * cheap; flow: collectives whose links carry nothing else run at their analytic
 * time and only the ranks whose traffic meets the first ranks' are simulated
 * (replay_scope.c), which keeps every contention the full flow would see; link
 * figures then cover the simulated traffic only. Returns 0, or -1 with a
 * one-line reason ("FILE: rank R op ID: expected ..., found ...") in err. */
int replay_run(const system_cfg_t *sys, const trace_t *trace, const char *trace_name,
               const replay_opts_t *opts, replay_result_t *out, npu_err_t *err);

/* The rank whose timeline stands for rank r (r itself unless representatives). */
int replay_stand_in(const replay_result_t *r, const trace_t *trace, int rank);

void replay_result_free(replay_result_t *r, const trace_t *trace);

/* Output (replay_report.c): the summary as table, JSON or CSV; the table shows
 * the links the view asks for, JSON every link. */
void replay_print(FILE *out, int format, const trace_t *trace, const system_cfg_t *sys,
                  const replay_result_t *r, const char *fidelity, const linkstats_view_t *links);

/* What a Chrome trace shows (replay_chrome.c). */
typedef struct {
  int first_rank, last_rank;     /* the ranks shown */
  const system_cfg_t *sys;       /* for the pipe bounding each compute op; NULL: none */
  /* The slice name of op i of program pi into buf, or NULL for the op's label
   * or kind ("mb3 L12 fwd attention_fwd" for a generated step). */
  void (*name)(const void *ctx, int pi, int i, char *buf, size_t len);
  const void *name_ctx;
  bool progress;                 /* --progress: ranks written, on stderr (progress.h) */
} replay_chrome_opts_t;

/* A Chrome trace (Perfetto): a process per rank, a thread per stream (named
 * and sorted), a slice per op with its shape, bytes, communicator and bounding
 * pipe, flow arrows from sends to receives. Times are whole nanoseconds, a
 * slice's end its rounded start plus its rounded length, so slices of one
 * stream never overlap. Streamed to the file (bounded memory, gzip for .gz);
 * the file is complete or not there. Returns 0, or -1 with "PATH: cannot
 * write: ..." in err. */
int replay_write_chrome(const char *path, const trace_t *trace, const replay_result_t *r,
                        const replay_chrome_opts_t *opts, npu_err_t *err);

#endif
