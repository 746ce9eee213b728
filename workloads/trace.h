/* trace.h - rank programs: what each rank of a job runs, op by op, and the file
 * format they travel in (docs/trace-format.md).
 *
 * A trace names the job's ranks, its communicators (each a family of disjoint
 * rank groups, like Megatron's TP or DP groups) and its programs. A program is
 * an ordered list of ops on named streams, shared by every rank that runs it:
 * ops on one stream run in order, ops on different streams only wait for their
 * explicit dependencies. Memory therefore grows with the distinct programs, not
 * with the ranks.
 *
 * Reading checks everything that can be checked without a system: kinds and
 * fields, duplicate ids, dependencies on missing ops, cycles (within a program
 * and, through collectives and send/recv pairs, across ranks), communicators
 * naming ranks outside the job, collectives that differ across a group, sends
 * without their receive (paired by trace_pairing_t's rule), buffers allocated
 * twice or freed before they are allocated. Every failure is one line naming
 * the file, the rank and the op id. Nothing here knows about the chip or
 * SimGrid: the kinds of compute ops, collectives and data types are a
 * vocabulary the caller passes.
 *
 * The model and its lookups (trace_free, trace_intern, trace_tag, trace_peer,
 * trace_group_of, trace_comm_index) are trace.c; reading is trace_read.c with
 * its whole-trace checks in trace_check.c, writing trace_write.c, pairing
 * trace_pairing.c. */
#ifndef NPUSIM_TRACE_H
#define NPUSIM_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "npu_err.h"

#define TRACE_FORMAT "npusim-trace"
#define TRACE_VERSION 1
/* The largest trace, as JSON text (a .json.gz counts inflated; a trace is
 * smaller than this): about 3.5 million ops, parsed in about 1.5 GiB;
 * docs/trace-format.md says so. */
#define TRACE_MAX_BYTES (256UL << 20)

typedef enum {
  TRACE_OP_SHAPED,  /* compute costed by the chip model from its shape */
  TRACE_OP_COMPUTE, /* compute with a given (measured) duration */
  TRACE_OP_COLL,    /* a collective on a communicator */
  TRACE_OP_SEND,
  TRACE_OP_RECV,
  TRACE_OP_RECORD,  /* marks an event done */
  TRACE_OP_WAIT,    /* waits for an event of the same rank */
  TRACE_OP_DELAY,   /* idles its stream */
  TRACE_OP_ALLOC,   /* memory footprint: a buffer comes into use */
  TRACE_OP_FREE,
  /* A step boundary: waits until every rank of its comm's group is there; takes
   * no time, moves nothing. Made in memory by npusim cluster between a job's
   * steps (jobs_merge.h); no file holds one. */
  TRACE_OP_BARRIER,
  TRACE_OP_TYPE_COUNT
} trace_op_type_t;

typedef struct {
  int id;               /* as in the file; unique in its program, or per step (jobs_merge.h) */
  trace_op_type_t type;
  int kind;             /* SHAPED: vocabulary compute kind; COLL: vocabulary collective */
  int stream;           /* index into the program's streams */
  int *deps, ndeps;     /* indices of ops of the same program */
  int64_t dims[5];      /* SHAPED: the op's shape */
  int dtype;            /* SHAPED: vocabulary dtype */
  bool causal, trans_a, trans_b;
  int64_t window;       /* SHAPED causal attention: keys a query sees (op_desc_t); 0: all */
  bool unfused;         /* SHAPED vector op: the framework's unfused kernels (op_form_t) */
  double duration_us;   /* COMPUTE, DELAY: as written, so traces round-trip exactly */
  double bytes;         /* COLL (as npusim coll counts them), SEND, RECV, ALLOC */
  int comm;             /* COLL, BARRIER: index into the trace's communicators */
  int root;             /* COLL broadcast/reduce: position of the root in its group */
  char *algo;           /* COLL: forced algorithms ("ring", "mesh,hd"), or NULL */
  int peer;             /* SEND/RECV: a rank, or an offset when peer_relative */
  bool peer_relative;
  int tag;              /* SEND/RECV: index into the program's tags (0 = untagged) */
  int event;            /* RECORD/WAIT: index into the program's events */
  int buffer;           /* ALLOC/FREE: index into the program's buffers */
  char *label;          /* optional, shown in timelines */
  bool overlapping;     /* SHAPED: runs beside a transfer of its rank... */
  int overlaps;         /* ...this op (index of a COLL, SEND or RECV on another stream) */
} trace_op_t;

typedef struct {
  int *ranks, nranks;   /* who runs it */
  trace_op_t *ops;
  int nops;
  char **streams;
  int nstreams;
  char **events;
  int nevents;
  char **buffers;
  int nbuffers;
  char **tags;          /* tags[0] is "" */
  int ntags;
} trace_program_t;

typedef struct {
  char *name;
  int ngroups;
  int **groups;         /* rank lists, in algorithm order */
  int *sizes;
  /* Which group holds a rank: ask trace_group_of(). Built by trace_comm_index:
   * a table per rank (group_of) only when the groups cover at least half the
   * ranks, else the members sorted by rank with their groups, so memory follows
   * the members, not ranks x communicators. */
  int *group_of;        /* per rank: its group, or -1; NULL when sparse */
  int *members;         /* sparse: member ranks, ascending */
  int *member_group;    /* sparse: the group of members[i] */
  int nmembers;
} trace_comm_t;

typedef struct {
  char *name;
  int ranks;
  int ranks_per_node;   /* placement; 0 = the system's node.npus */
  trace_comm_t *comms;
  int ncomms;
  trace_program_t *programs;
  int nprograms;
  int *program_of;      /* per rank */
} trace_t;

/* The names the caller accepts, in the caller's enum order. */
typedef struct {
  const char *const *compute;
  int ncompute;
  const char *const *colls;
  int ncolls;
  const char *const *dtypes;
  int ndtypes;
  int default_dtype;
  int root_colls_mask;  /* bit i: collective i takes a root */
  double eager_max_bytes; /* how the caller's sends complete: one of at most this many
                           * bytes without its recv (eager), a larger one with it
                           * (rendezvous; 0: every send); the cycle check follows it */
} trace_vocab_t;

extern const char *const trace_op_type_names[TRACE_OP_TYPE_COUNT];

/* ---- files (trace_read.c, trace_write.c) ---- */

/* Reads a trace (.json or .json.gz, detected from the content). Returns 0, or -1
 * with "FILE: [rank R op ID: ]expected ..., found ..." in err. */
int trace_read(const char *path, const trace_vocab_t *vocab, trace_t *out, npu_err_t *err);

/* Parses a trace from memory (for tests and fuzzing); name is used in errors. */
int trace_parse(const char *name, const char *text, size_t len, const trace_vocab_t *vocab,
                trace_t *out, npu_err_t *err);

/* Writes the trace in canonical form, gzip-compressed when path ends in ".gz".
 * Reading it back gives the same trace; writing that gives the same bytes. A
 * trace too large to read back (TRACE_MAX_BYTES), or holding a step barrier
 * (no file format has one), is not written: -1 with "PATH: cannot write: ..."
 * in err, as for any failed write. */
int trace_write(const trace_t *t, const trace_vocab_t *vocab, const char *path, npu_err_t *err);

/* ---- the model (trace.c) ---- */

void trace_free(trace_t *t);

/* Whether the trace holds a TRACE_OP_BARRIER (npusim cluster's merged trace):
 * the writers refuse such a trace, as no file format can say what one does. */
bool trace_has_barrier(const trace_t *t);

/* The index of name in a program's list of names (streams, tags, events,
 * buffers), appended if new. */
int trace_intern(char ***list, int *n, const char *name);

/* The tag of a SEND/RECV ("" when untagged): sends meet receives of the same tag. */
const char *trace_tag(const trace_program_t *p, const trace_op_t *op);

/* The rank a SEND/RECV of `rank` talks to. */
int trace_peer(const trace_op_t *op, int rank);

/* The group of cm holding rank, or -1. */
int trace_group_of(const trace_comm_t *cm, int rank);

/* Builds cm's rank -> group lookup from its groups, in a job of `ranks` ranks.
 * Returns 0 (*dup -1), or -1 with *dup the smallest rank in two groups (or twice in one)
 * and *dup_group the later of those groups, or -1 with *dup -1 out of memory. */
int trace_comm_index(trace_comm_t *cm, int ranks, int *dup, int *dup_group);

/* Point-to-point pairing, the one rule the checks and both replay engines follow
 * (trace_pairing.c): a SEND of rank s to rank d and a RECV of rank d from rank s
 * with the same tag travel on the channel (s, d, tag), peers resolved (`peer` and
 * `peer_offset` naming one rank are one channel); the k-th send on a channel in
 * program order meets the k-th recv on it in program order, whatever streams they
 * are issued from and whenever they arrive. */
typedef struct {
  int **seq;           /* per rank, per op of its program: its k on its channel */
  int **tag_id;        /* per program, per tag: an id shared by all programs */
  int ntags;
  int **program_seq;   /* per program: k as spelled, shared by most of its ranks */
  bool *owned;         /* per rank: seq is its own (two spellings meet on it) */
  int ranks, nprograms;
} trace_pairing_t;

void trace_pairing_init(trace_pairing_t *pp, const trace_t *t);
void trace_pairing_free(trace_pairing_t *pp);

#endif
