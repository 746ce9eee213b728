/* coll_algos.h - one algorithm on one group of ranks, as phases of a schedule:
 * the emitters of the building blocks (coll_prim_t, coll_cfg.h) that the
 * capability table says each algorithm builds. Internal to the collectives
 * (sim/coll*.c). */
#ifndef NPUSIM_COLL_ALGOS_H
#define NPUSIM_COLL_ALGOS_H

#include "coll.h"

typedef struct {
  coll_sched_t *sched;
  int base;            /* first phase index: groups of one level share phases */
  int level;
  const int *ranks;    /* members, in algorithm order */
  int g;
  int root;            /* index of the root member (BCAST, REDUCE) */
  int switch_id;       /* endpoint id of the group's reducing switch (NVLS), or -1 */
  double read_request; /* NVLS: request bytes per byte the switch reads */
  const double *a2a;   /* g x g bytes for A2A (row = sender), or NULL for n/g each */
} coll_group_t;

/* Adds the group's transfers for prim with algo, starting at phase grp->base.
 * Returns the number of phases used (the same for every group of the same size),
 * or -1 if algo cannot do prim. */
int coll_algo_emit(coll_algo_t algo, coll_prim_t prim, const coll_group_t *grp, double n);

/* Tree pipelining: chunks of this size per tree, at most this many. */
#define COLL_TREE_CHUNK_BYTES (1024.0 * 1024.0)
#define COLL_TREE_MAX_CHUNKS 64

#endif
