/* replay_plan.c - see replay_plan.h. */
#include "replay_plan.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_engine.h"
#include "op_cost.h"
#include "replay_engine.h"

/* Collectives a trace may use: the first six of coll_op_t, in its order. */
static const char *const trace_colls[] = {"allreduce", "allgather", "reducescatter",
                                          "broadcast", "reduce",    "alltoall"};

const trace_vocab_t replay_vocab = {
    .compute = op_kind_names,
    .ncompute = OP_KIND_COUNT,
    .colls = trace_colls,
    .ncolls = 6,
    .dtypes = chip_dtype_names,
    .ndtypes = CHIP_DTYPE_COUNT,
    .default_dtype = CHIP_DTYPE_BF16,
    .root_colls_mask = (1 << COLL_BROADCAST) | (1 << COLL_REDUCE),
};

void replay_op_desc(const trace_op_t *op, op_desc_t *d) {
  *d = (op_desc_t){.kind = (op_kind_t)op->kind, .dtype = (chip_dtype_t)op->dtype,
                   .causal = op->causal, .window = op->window, .trans_a = op->trans_a, .trans_b = op->trans_b,
                   .form = op->unfused ? OP_FORM_UNFUSED : OP_FORM_FUSED};
  d->out_dtype = op_default_out_dtype(d->kind, d->dtype);
  if (op_on_cube(d->kind)) {
    memcpy(d->dims, op->dims, sizeof d->dims);
  } else { /* [rows,]cols */
    d->dims[0] = op->dims[1] > 0 ? op->dims[0] : 1;
    d->dims[1] = op->dims[1] > 0 ? op->dims[1] : op->dims[0];
  }
}

/* ---- compute ---- */

/* The first rank of program p on chip index k (its first rank without node
 * types), or -1 where none of its ranks carries chip k. */
static int first_rank_on(const replay_plan_t *pl, const trace_program_t *p, int k) {
  if (!pl->chip_of)
    return p->ranks[0];
  for (int m = 0; m < p->nranks; m++)
    if (pl->chip_of[p->ranks[m]] == k)
      return p->ranks[m];
  return -1;
}

/* The shaped ops of every program some rank of which carries chip k, on that
 * chip at the clock it holds through a step (the other programs' rows stay 0:
 * no rank reads them, and an op of theirs the chip cannot run is no error);
 * an op the chip cannot run fails, naming the chip and a rank that carries it. */
static double **cost_on_chip(const replay_plan_t *pl, int k, const char *name, npu_err_t *err) {
  const chip_cfg_t *model = config_chip_at(pl->sys, k);
  const trace_t *t = pl->trace;
  chip_cfg_t chip = chip_in_step(model);
  op_cache_t *cache = op_cache_new(&chip);
  double **costs = calloc((size_t)t->nprograms, sizeof *costs);
  int rc = cache && costs ? 0 : -1;
  if (rc)
    npu_err_set(err, "%s: out of memory for the op costs", name);
  for (int pi = 0; pi < t->nprograms && rc == 0; pi++) {
    const trace_program_t *p = &t->programs[pi];
    if (!(costs[pi] = calloc((size_t)p->nops + 1, sizeof **costs)))
      rc = -1, npu_err_set(err, "%s: out of memory for the op costs", name);
    int rank = first_rank_on(pl, p, k);
    for (int i = 0; i < p->nops && rc == 0 && rank >= 0; i++) {
      const trace_op_t *op = &p->ops[i];
      if (op->type != TRACE_OP_SHAPED)
        continue;
      op_desc_t d;
      replay_op_desc(op, &d);
      npu_err_t why; /* read only when op_check fills it: no 1 KiB clear per op */
      if (op_check(model, &d, &why)) { /* "shape: ..." names the field */
        npu_err_set(err, "%s: rank %d op %d: %s", name, rank, op->id, why.msg);
        rc = -1;
      } else {
        costs[pi][i] = op_cost(cache, &d)->time_s;
      }
    }
  }
  op_cache_free(cache);
  if (rc) {
    for (int pi = 0; costs && pi < t->nprograms; pi++)
      free(costs[pi]);
    free(costs);
    return NULL;
  }
  return costs;
}

/* Costs the shaped ops on each chip a rank carries: the default chip only
 * where a rank is on it, so a chip no server of the job uses need not run its
 * ops (node types covering every server). */
static int cost_shaped(replay_plan_t *pl, const char *name, npu_err_t *err) {
  if (!pl->chip_of)
    return (pl->compute_s = cost_on_chip(pl, 0, name, err)) ? 0 : -1;
  for (int r = 0; r < pl->trace->ranks; r++) {
    int k = pl->chip_of[r];
    if (!pl->chip_compute_s[k] && !(pl->chip_compute_s[k] = cost_on_chip(pl, k, name, err)))
      return -1;
    pl->compute_s = pl->chip_compute_s[0]; /* freed as compute_s; NULL while no rank is on it */
  }
  return 0;
}

/* Marks the ops another stream depends on (explicitly, or as a recorded
 * event) and finds the op that records each event. */
static void find_watched(replay_plan_t *pl) {
  const trace_t *t = pl->trace;
  pl->watched = calloc((size_t)t->nprograms, sizeof *pl->watched);
  pl->record_of = calloc((size_t)t->nprograms, sizeof *pl->record_of);
  for (int pi = 0; pi < t->nprograms; pi++) {
    const trace_program_t *p = &t->programs[pi];
    pl->watched[pi] = calloc((size_t)p->nops + 1, 1);
    pl->record_of[pi] = calloc((size_t)p->nevents + 1, sizeof **pl->record_of);
    for (int i = 0; i < p->nops; i++) {
      const trace_op_t *op = &p->ops[i];
      for (int d = 0; d < op->ndeps; d++)
        if (p->ops[op->deps[d]].stream != op->stream)
          pl->watched[pi][op->deps[d]] = 1;
      if (op->type == TRACE_OP_RECORD || op->type == TRACE_OP_WAIT)
        pl->watched[pi][i] = 1;
      if (op->type == TRACE_OP_RECORD)
        pl->record_of[pi][op->event] = i;
    }
  }
}

/* ---- collectives ---- */

/* Gives every collective op of every simulated rank its group's plan. */
static int plan_collectives(replay_plan_t *pl, const char *name, npu_err_t *err) {
  const trace_t *t = pl->trace;
  pl->inst_of = calloc((size_t)t->ranks, sizeof *pl->inst_of);
  for (int r = 0; r < t->ranks; r++) {
    if (!pl->simulated[r])
      continue;
    const trace_program_t *p = &t->programs[t->program_of[r]];
    pl->inst_of[r] = malloc(((size_t)p->nops + 1) * sizeof **pl->inst_of);
    for (int i = 0; i < p->nops; i++) {
      const trace_op_t *op = &p->ops[i];
      pl->inst_of[r][i] = -1;
      if (op->type != TRACE_OP_COLL)
        continue;
      pl->inst_of[r][i] = replay_inst_for(pl, op->comm, trace_group_of(&t->comms[op->comm], r),
                                          op, name, r, err);
      if (pl->inst_of[r][i] < 0)
        return -1;
    }
  }
  return 0;
}

/* ---- step boundaries ---- */

/* A barrier per group of each communicator that BARRIER ops name, with its
 * simulated members. */
static int plan_barriers(replay_plan_t *pl, const char *name, npu_err_t *err) {
  const trace_t *t = pl->trace;
  if (!(pl->barrier_base = malloc(((size_t)t->ncomms + 1) * sizeof *pl->barrier_base)))
    return npu_err_set(err, "%s: out of memory for the step barriers", name), -1;
  for (int c = 0; c < t->ncomms; c++)
    pl->barrier_base[c] = -1;
  for (int pi = 0; pi < t->nprograms; pi++)
    for (int i = 0; i < t->programs[pi].nops; i++) {
      const trace_op_t *op = &t->programs[pi].ops[i];
      if (op->type == TRACE_OP_BARRIER && pl->barrier_base[op->comm] < 0) {
        pl->barrier_base[op->comm] = pl->nbarriers;
        pl->nbarriers += t->comms[op->comm].ngroups;
      }
    }
  if (!(pl->barriers = calloc((size_t)pl->nbarriers + 1, sizeof *pl->barriers)))
    return npu_err_set(err, "%s: out of memory for the step barriers", name), -1;
  for (int c = 0; c < t->ncomms; c++) {
    const trace_comm_t *cm = &t->comms[c];
    for (int g = 0; pl->barrier_base[c] >= 0 && g < cm->ngroups; g++) {
      barrier_t *b = &pl->barriers[pl->barrier_base[c] + g];
      *b = (barrier_t){.comm = c, .group = g};
      for (int m = 0; m < cm->sizes[g]; m++)
        b->members += pl->simulated[cm->groups[g][m]];
    }
  }
  return 0;
}

/* Analytic link figures count each group's collective once per issue
 * (replay_summary.c); the groups no simulated rank leads are planned here, in
 * the order the summary visits them. */
int replay_plan_link_groups(replay_plan_t *pl, const char *name, npu_err_t *err) {
  const trace_t *t = pl->trace;
  for (int pi = 0; pi < t->nprograms; pi++) {
    const trace_program_t *p = &t->programs[pi];
    int first = p->ranks[0], n = pl->ninsts;
    int *op_at = malloc(((size_t)n + 1) * sizeof *op_at);
    for (int k = 0; k < n; k++)
      op_at[k] = -1;
    for (int i = 0; i < p->nops; i++)
      if (p->ops[i].type == TRACE_OP_COLL && op_at[pl->inst_of[first][i]] < 0)
        op_at[pl->inst_of[first][i]] = i;
    for (int k = 0; k < n; k++) {
      if (op_at[k] < 0)
        continue;
      const trace_op_t *op = &p->ops[op_at[k]];
      const trace_comm_t *cm = &t->comms[op->comm];
      for (int m = 0; m < p->nranks; m++) {
        int r = p->ranks[m], g = trace_group_of(cm, r);
        if (cm->groups[g][0] == r && replay_inst_for(pl, op->comm, g, op, name, r, err) < 0) {
          free(op_at);
          return -1;
        }
      }
    }
    free(op_at);
  }
  return 0;
}

/* Interference: a compute op that runs beside a transfer of its rank (the
 * trace's "overlaps") shares the chip with it - SMs or HBM bandwidth taken by
 * the transfer's kernels - and takes collectives.compute_slowdown times the
 * shorter of the two longer. The transfer's length is its uncontended
 * (analytic) time, for the program's first rank, so both fidelities and both
 * engines charge the same. */
static void add_interference(replay_plan_t *pl) {
  const trace_t *t = pl->trace;
  double slowdown = pl->sys->coll.compute_slowdown;
  for (int pi = 0; slowdown > 0 && pi < t->nprograms; pi++) {
    const trace_program_t *p = &t->programs[pi];
    int r = p->ranks[0];
    for (int i = 0; i < p->nops; i++) {
      if (!p->ops[i].overlapping)
        continue;
      int j = p->ops[i].overlaps;
      const trace_op_t *o = &p->ops[j];
      double comm_s = o->type == TRACE_OP_COLL
                          ? pl->insts[pl->inst_of[r][j]].analytic_s
                          : topo_path_time_s(pl->topo, r, trace_peer(o, r), o->bytes);
      for (int k = 0; k < (pl->chip_of ? pl->nchips : 1); k++) {
        double **costs = pl->chip_of ? pl->chip_compute_s[k] : pl->compute_s;
        if (!costs)
          continue;
        double base = costs[pi][i];
        costs[pi][i] += slowdown * (base < comm_s ? base : comm_s);
      }
    }
  }
}

/* ---- which ranks, which engine ---- */

/* Each rank's speed factor; ranges must name ranks of the job. */
static int plan_speeds(replay_plan_t *pl, const char *name, const char *system, npu_err_t *err) {
  const variation_cfg_t *v = &pl->sys->variation;
  int ranks = pl->trace->ranks;
  for (int i = 0; i < v->ranges.n; i++)
    if (v->ranges.v[i].last >= ranks)
      return npu_err_set(err, "%s: chip.variation.speed_factors: expected ranks below the "
                      "job's %d (%s), found %d", system, ranks, name, v->ranges.v[i].last), -1;
  if (!(pl->speed = malloc((size_t)ranks * sizeof *pl->speed)))
    return npu_err_set(err, "%s: out of memory for %d ranks' speeds", name, ranks), -1;
  for (int r = 0; r < ranks; r++)
    pl->speed[r] = variation_speed(v, r);
  return 0;
}

/* Each rank's chip (cluster.node_types); ranges must name servers of the job.
 * Sets *mixed when the ranks do not all carry the same chip. */
static int plan_chips(replay_plan_t *pl, const char *name, const char *system, bool *mixed,
                      npu_err_t *err) {
  const system_cfg_t *sys = pl->sys;
  const node_types_t *nt = &sys->cluster.node_types;
  *mixed = false;
  if (nt->n == 0)
    return 0;
  for (int i = 0; i < nt->n && sys->cluster.nodes == 0; i++) /* else checked on loading */
    if (nt->v[i].last >= pl->topo->nodes)
      return npu_err_set(err, "%s: cluster.node_types: expected servers below the job's %d "
                      "(%s), found %d", system, pl->topo->nodes, name, nt->v[i].last), -1;
  int ranks = pl->trace->ranks;
  pl->nchips = nt->n + 1;
  pl->chip_of = malloc((size_t)ranks * sizeof *pl->chip_of);
  pl->chip_compute_s = calloc((size_t)pl->nchips, sizeof *pl->chip_compute_s);
  if (!pl->chip_of || !pl->chip_compute_s)
    return npu_err_set(err, "%s: out of memory for %d ranks' chips", name, ranks), -1;
  for (int r = 0; r < ranks; r++) {
    pl->chip_of[r] = config_server_chip_index(sys, topo_server_of(pl->topo, r));
    *mixed = *mixed || pl->chip_of[r] != pl->chip_of[0];
  }
  return 0;
}

/* Representatives need their send/recv peers to be representatives too. */
static int choose_simulated(replay_plan_t *pl, bool representatives, const char *name,
                            npu_err_t *err) {
  const trace_t *t = pl->trace;
  pl->simulated = malloc((size_t)t->ranks * sizeof *pl->simulated);
  for (int r = 0; r < t->ranks; r++)
    pl->simulated[r] = !representatives || t->programs[t->program_of[r]].ranks[0] == r;
  for (int r = 0; representatives && r < t->ranks; r++) {
    const trace_program_t *p = &t->programs[t->program_of[r]];
    for (int i = 0; pl->simulated[r] && i < p->nops; i++)
      if ((p->ops[i].type == TRACE_OP_SEND || p->ops[i].type == TRACE_OP_RECV) &&
          !pl->simulated[trace_peer(&p->ops[i], r)])
        return npu_err_set(err, "%s: rank %d op %d: expected a peer that runs the first rank "
                        "of its program (symmetric replay), found rank %d", name, r,
                        p->ops[i].id, trace_peer(&p->ops[i], r)), -1;
  }
  return 0;
}

/* Flow with representatives: the scope's choices of ranks and modes. */
static int apply_scope(replay_plan_t *pl, const char *name, bool **analytic, int *nscoped,
                       npu_err_t *err) {
  replay_scope_t sc = {0};
  int rc = replay_scope_choose(pl, name, &sc, err);
  *analytic = sc.analytic;
  *nscoped = pl->ninsts;
  for (int r = 0; rc == 0 && sc.simulated && r < pl->trace->ranks; r++) {
    pl->simulated[r] = sc.simulated[r];
    pl->reduced = pl->reduced || !sc.simulated[r];
  }
  free(sc.simulated);
  return rc;
}

/* Each collective's simulated members and how its time is found. A flow
 * collective whose links carry nothing else runs its rounds collapsed: alone,
 * every round of a phase takes the same time. */
static void set_modes(replay_plan_t *pl, const bool *scoped_analytic, int nscoped,
                      bool collapse) {
  const trace_t *t = pl->trace;
  /* with a scope, every collective alone on its links already runs analytic */
  bool flows = pl->fidelity->mode == INST_FLOW;
  bool *exclusive = flows && collapse && !scoped_analytic ? replay_exclusive_insts(pl) : NULL;
  for (int k = 0; k < pl->ninsts; k++) {
    inst_t *x = &pl->insts[k];
    const trace_comm_t *cm = &t->comms[x->comm];
    x->members = 0;
    for (int m = 0; m < cm->sizes[x->group]; m++)
      x->members += pl->simulated[cm->groups[x->group][m]];
    bool alone = scoped_analytic && k < nscoped && scoped_analytic[k];
    x->mode = alone ? INST_ANALYTIC : pl->fidelity->mode;
    x->collapsed = x->mode == INST_FLOW && exclusive && exclusive[k];
  }
  free(exclusive);
}

/* Flow: the SimGrid transfers one collective posts, at most this many (as
 * many as an all-to-all schedule may hold), refused before anything runs. A
 * collective over collectives.buffer_MiB runs its schedule once per
 * staging-buffer loop, so its transfers grow with its bytes: one all-reduce
 * of 1e15 bytes on 16 ranks would post 2.3e9 of them (hours); analytic costs
 * the loops in one step. */
#define FLOW_MAX_ISSUE_XFERS (1L << 26)

int replay_plan_check_flows(replay_plan_t *pl, const char *name, npu_err_t *err) {
  for (int k = 0; k < pl->ninsts; k++) {
    const inst_t *x = &pl->insts[k];
    const coll_sched_t *s = &x->plan.sched;
    double n = 0; /* a collapsed collective runs each phase's rounds as one */
    for (int ph = 0; x->mode == INST_FLOW && ph < s->nphases; ph++)
      n += (double)s->phases[ph].nxfers * (x->collapsed ? 1 : s->phases[ph].rounds) *
           (s->loops > 0 ? s->loops : 1);
    if (n > FLOW_MAX_ISSUE_XFERS)
      return npu_err_set(err, "%s: expected flow collectives of at most %ld transfers each, "
                      "found %s of %.0f bytes on \"%s\" with %.0f (its schedule once per "
                      "collectives.buffer_MiB of its bytes); use --fidelity analytic",
                      name, FLOW_MAX_ISSUE_XFERS, replay_vocab.colls[x->kind], x->bytes,
                      pl->trace->comms[x->comm].name, n),
             -1;
  }
  return 0;
}

/* The sweep computes what the actors would when costs are analytic: meetings
 * pair up the same in any interleaving (a communicator's collectives come from
 * one stream, checked on reading; sends and recvs by trace_pairing_t). Memory
 * ops are left to the actors: their high-water mark depends on how the
 * simulator interleaves streams. */
static bool sweepable(const replay_plan_t *pl, const replay_opts_t *opts) {
  if (opts->force_actors)
    return false;
  const trace_t *t = pl->trace;
  for (int pi = 0; pi < t->nprograms; pi++)
    for (int i = 0; i < t->programs[pi].nops; i++)
      if (t->programs[pi].ops[i].type == TRACE_OP_ALLOC ||
          t->programs[pi].ops[i].type == TRACE_OP_FREE)
        return false;
  return true;
}

long replay_plan_streams(const replay_plan_t *pl) {
  const trace_t *t = pl->trace;
  long n = 0;
  for (int r = 0; r < t->ranks; r++)
    n += pl->simulated[r] ? t->programs[t->program_of[r]].nstreams : 0;
  return n;
}

/* Each program's sends, so that walks over every rank's messages skip the
 * other ops (a 131,072-rank job's programs hold thousands of them). */
static void find_sends(replay_plan_t *pl) {
  const trace_t *t = pl->trace;
  pl->sends = calloc((size_t)t->nprograms + 1, sizeof *pl->sends);
  pl->nsends = calloc((size_t)t->nprograms + 1, sizeof *pl->nsends);
  for (int pi = 0; pi < t->nprograms; pi++) {
    const trace_program_t *p = &t->programs[pi];
    pl->sends[pi] = malloc(((size_t)p->nops + 1) * sizeof **pl->sends);
    for (int i = 0; i < p->nops; i++)
      if (p->ops[i].type == TRACE_OP_SEND)
        pl->sends[pi][pl->nsends[pi]++] = i;
  }
}

int replay_plan_build(replay_plan_t *pl, const system_cfg_t *sys, const trace_t *trace,
                      const topo_t *topo, const replay_fidelity_t *fidelity, const char *name,
                      const replay_opts_t *opts, npu_err_t *err) {
  memset(pl, 0, sizeof *pl);
  *pl = (replay_plan_t){
      .sys = sys, .trace = trace, .topo = topo, .fidelity = fidelity, .progress = opts->progress,
      .all_standins = opts->all_standins};
  find_watched(pl);
  find_sends(pl);
  trace_pairing_init(&pl->pairing, trace);
  bool *scoped = NULL;
  int nscoped = 0;
  /* stragglers and chips that differ break the symmetry representatives rely
   * on: every rank runs */
  const char *system = opts->system_file ? opts->system_file : name;
  bool mixed;
  int rc = plan_chips(pl, name, system, &mixed, err);
  bool varied = variation_active(&sys->variation) || mixed;
  if (rc == 0 && variation_active(&sys->variation))
    rc = plan_speeds(pl, name, system, err);
  if (rc == 0)
    rc = choose_simulated(pl, opts->representatives && fidelity->symmetric && !varied, name, err);
  if (rc == 0)
    rc = cost_shaped(pl, name, err);
  if (rc == 0 && fidelity->scoped && opts->representatives && !opts->all_ranks && !varied)
    rc = apply_scope(pl, name, &scoped, &nscoped, err);
  if (rc == 0)
    rc = plan_collectives(pl, name, err);
  if (rc == 0)
    rc = plan_barriers(pl, name, err);
  if (rc == 0)
    set_modes(pl, scoped, nscoped, opts->collapse_rounds);
  if (rc == 0)
    add_interference(pl);
  if (rc == 0)
    rc = fidelity->plan_finish(pl, name, err);
  free(scoped);
  pl->sweep = rc == 0 && fidelity->sweeps && sweepable(pl, opts);
  if (rc)
    replay_plan_free(pl);
  return rc;
}

void replay_plan_free(replay_plan_t *pl) {
  free(pl->speed);
  free(pl->chip_of);
  const trace_t *t = pl->trace;
  if (!t)
    return;
  for (int k = 1; pl->chip_compute_s && k < pl->nchips; k++) {
    for (int pi = 0; pl->chip_compute_s[k] && pi < t->nprograms; pi++)
      free(pl->chip_compute_s[k][pi]);
    free(pl->chip_compute_s[k]);
  }
  free(pl->chip_compute_s);
  for (int i = 0; i < pl->ninsts; i++)
    coll_plan_free(&pl->insts[i].plan);
  free(pl->insts);
  free(pl->slots);
  free(pl->barriers);
  free(pl->barrier_base);
  for (int r = 0; pl->inst_of && r < t->ranks; r++)
    free(pl->inst_of[r]);
  free(pl->inst_of);
  for (int r = 0; pl->comm_s && r < t->ranks; r++)
    free(pl->comm_s[r]);
  free(pl->comm_s);
  for (int pi = 0; pl->compute_s && pi < t->nprograms; pi++)
    free(pl->compute_s[pi]);
  free(pl->compute_s);
  for (int pi = 0; pl->sends && pi < t->nprograms; pi++)
    free(pl->sends[pi]);
  free(pl->sends);
  free(pl->nsends);
  for (int pi = 0; pl->watched && pi < t->nprograms; pi++) {
    free(pl->watched[pi]);
    free(pl->record_of[pi]);
  }
  free(pl->watched);
  free(pl->record_of);
  trace_pairing_free(&pl->pairing);
  free(pl->simulated);
  memset(pl, 0, sizeof *pl);
}
