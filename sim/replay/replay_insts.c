/* replay_insts.c - the collectives of a replay plan: one per distinct
 * communicator group, kind, size, root and forced algorithm, planned once
 * (coll_plan_group, the algorithms forced by the op) and shared by every issue
 * of it; a hash table on that signature finds them. See replay_plan.h. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_engine.h"
#include "npu_int.h"
#include "replay_plan.h"

static uint64_t inst_hash(int comm, int group, const trace_op_t *op) {
  uint64_t h = NPU_HASH_SEED, bytes;
  memcpy(&bytes, &op->bytes, sizeof bytes);
  uint64_t fields[5] = {(uint64_t)comm, (uint64_t)group, (uint64_t)op->kind, bytes,
                        (uint64_t)op->root};
  for (int i = 0; i < 5; i++)
    h = npu_hash_u64(h, fields[i]);
  return op->algo ? npu_hash_str(h, op->algo) : h;
}

static bool inst_matches(const inst_t *x, int comm, int group, const trace_op_t *op) {
  return x->comm == comm && x->group == group && x->kind == op->kind && x->bytes == op->bytes &&
         x->root == op->root &&
         (x->algo == op->algo || (x->algo && op->algo && strcmp(x->algo, op->algo) == 0));
}

/* The slot of the collective (comm, group, op's signature): its index, or the
 * empty slot where it belongs. */
static int *find_slot(const replay_plan_t *pl, int comm, int group, const trace_op_t *op) {
  size_t i = (size_t)inst_hash(comm, group, op) & (pl->nslots - 1);
  while (pl->slots[i] >= 0 && !inst_matches(&pl->insts[pl->slots[i]], comm, group, op))
    i = (i + 1) & (pl->nslots - 1);
  return &pl->slots[i];
}

int replay_inst_find(const replay_plan_t *pl, int comm, int group, const trace_op_t *op) {
  return pl->nslots ? *find_slot(pl, comm, group, op) : -1;
}

static void grow_slots(replay_plan_t *pl) {
  size_t n = pl->nslots ? 2 * pl->nslots : 256;
  free(pl->slots);
  pl->slots = malloc(n * sizeof *pl->slots);
  pl->nslots = n;
  for (size_t i = 0; i < n; i++)
    pl->slots[i] = -1;
  for (int k = 0; k < pl->ninsts; k++) { /* re-insert by each collective's own signature */
    const inst_t *x = &pl->insts[k];
    trace_op_t op = {.kind = x->kind, .bytes = x->bytes, .root = x->root, .algo = (char *)x->algo};
    *find_slot(pl, x->comm, x->group, &op) = k;
  }
}

/* Plans the collective of one group; forced algorithms from the op. */
static int plan_inst(replay_plan_t *pl, inst_t *x, const char *name, int rank, int op_id,
                     npu_err_t *err) {
  const trace_comm_t *cm = &pl->trace->comms[x->comm];
  const int *members = cm->groups[x->group];
  int g = cm->sizes[x->group];
  coll_cfg_t cfg = pl->sys->coll;
  npu_err_t why; /* read only after a failure, which fills it */
  bool spans = false;
  for (int m = 1; m < g; m++)
    spans = spans || topo_server_of(pl->topo, members[m]) != topo_server_of(pl->topo, members[0]);
  if (x->algo && coll_apply_algo(x->algo, spans, &cfg, &why))
    return npu_err_set(err, "%s: rank %d op %d: %s", name, rank, op_id, why.msg), -1;
  coll_req_t req = {(coll_op_t)x->kind, x->bytes, members[x->root], NULL};
  if (coll_plan_group(pl->topo, &cfg, members, g, &req, &x->plan, &why))
    return npu_err_set(err, "%s: rank %d op %d: %s", name, rank, op_id, why.msg), -1;
  x->analytic_s = coll_analytic_time(pl->topo, &cfg, &x->plan.sched, NULL);
  return 0;
}

int replay_inst_for(replay_plan_t *pl, int comm, int group, const trace_op_t *op,
                    const char *name, int rank, npu_err_t *err) {
  if (2 * ((size_t)pl->ninsts + 1) > pl->nslots)
    grow_slots(pl);
  int *slot = find_slot(pl, comm, group, op);
  if (*slot >= 0)
    return *slot;
  if (pl->ninsts == pl->cap_insts) {
    pl->cap_insts = pl->cap_insts ? 2 * pl->cap_insts : 16;
    pl->insts = realloc(pl->insts, (size_t)pl->cap_insts * sizeof *pl->insts);
  }
  inst_t *x = &pl->insts[pl->ninsts];
  *x = (inst_t){.comm = comm, .group = group, .kind = op->kind, .root = op->root,
                .bytes = op->bytes, .algo = op->algo};
  if (plan_inst(pl, x, name, rank, op->id, err)) {
    coll_plan_free(&x->plan);
    return -1;
  }
  return *slot = pl->ninsts++;
}

