/* coll_select.h - which algorithm runs at each level, and which protocol.
 * Internal to the collectives (sim/coll*.c). */
#ifndef NPUSIM_COLL_SELECT_H
#define NPUSIM_COLL_SELECT_H

#include "coll.h"

/* The algorithm per level for op on the job t (levels it does not use get
 * COLL_ALGO_AUTO): the one cfg forces, else the library's rule. loop_bytes is
 * the request's bytes per staging-buffer loop; switch_reduces: the scale-up
 * switch reduces in the network. */
void coll_select_algos(const topo_t *t, const coll_cfg_t *cfg, bool switch_reduces, coll_op_t op,
                       double loop_bytes, coll_algo_t out[COLL_LEVELS]);

/* The algorithms the library weighs when none is forced, at the level it
 * sets: NCCL's allreduce between servers, ring and tree; in one server whose
 * switch reduces, ring and NVLS. The planner costs each (with its protocol)
 * and keeps the fastest. Returns how many, 0 when the rule of
 * coll_select_algos stands. */
int coll_select_candidates(const topo_t *t, const coll_cfg_t *cfg, bool switch_reduces,
                           coll_op_t op, int *level, coll_algo_t out[2]);

/* Like NCCL's tuner: costs plan's schedule in every protocol cfg configures and
 * keeps the fastest (its wire factor and step latency in the schedule, "/name"
 * appended to the plan's name); none configured: plan->proto = -1, the wire at
 * the links' efficiency. A serving engine's one-shot or two-shot takes no
 * protocol: its launch and barriers are cfg's p2p_launch_s and p2p_sync_s. */
void coll_select_protocol(const topo_t *t, const coll_cfg_t *cfg, coll_plan_t *plan);

#endif
