/* replay_scope.c - what a flow replay with representatives must simulate.
 *
 * Contention is what a flow replay adds to the analytic one, so two kinds of
 * work can be left out without losing any:
 *  - a collective group whose links carry nothing but its own collectives,
 *    issued from one stream (so one at a time): it runs at its analytic time
 *    (INST_ANALYTIC; the flow engine's own time for a lone collective is
 *    within a few percent of it, docs/collectives.md); a tensor-parallel group
 *    inside a server is the usual case;
 *  - ranks whose traffic never shares a link with the simulated ranks' traffic,
 *    and that run a program a simulated rank runs: with exclusive collectives
 *    out of the way, the ranks of one rail (one NIC index) of a rail-optimised
 *    or non-blocking fabric only meet each other.
 * The simulated set is the closure of each program's first rank under send /
 * recv peers and the members of non-exclusive collectives; if its traffic
 * shares a link with the rest, every rank is simulated. A link that can never
 * limit a transfer (an uplink carrying at most what the NIC ports under its leaf
 * allow: oversubscription 1) is shared harmlessly and ignored.
 * What it does not do: find symmetry the programs do not state (ranks of one
 * program are taken to behave alike), or drop ranks from a replay that prints
 * link figures (npusim replay simulates every rank). */
#include <stdlib.h>
#include <string.h>

#include "replay_plan.h"

enum { LINK_FREE = -1, LINK_P2P = -2, LINK_SHARED = -3 };

typedef struct {
  replay_plan_t *pl;
  const char *name;
  bool *exclusive; /* per collective: its links carry nothing else */
} scope_t;

/* Calls fn on every link a transfer from src to dst crosses. */
static void each_link(const topo_t *topo, int src, int dst, void (*fn)(void *, int), void *arg) {
  topo_hop_t hops[TOPO_MAX_HOPS];
  int nh = topo_route(topo, src, dst, hops);
  for (int h = 0; h < nh; h++)
    if (!topo_link_never_binding(topo, hops[h].link))
      fn(arg, hops[h].link);
}

static void each_inst_link(const topo_t *topo, const inst_t *x, void (*fn)(void *, int),
                           void *arg) {
  const coll_sched_t *s = &x->plan.sched;
  for (int p = 0; p < s->nphases; p++)
    for (int j = 0; j < s->phases[p].nxfers; j++)
      each_link(topo, s->phases[p].xfers[j].src, s->phases[p].xfers[j].dst, fn, arg);
}

/* Calls fn on every link a send of any rank crosses; the rank's flag in
 * `side` (NULL: none) picks arg_in or arg_out. */
static void each_send_link(const replay_plan_t *pl, const bool *side, void (*fn)(void *, int),
                           void *arg_in, void *arg_out) {
  const trace_t *t = pl->trace;
  for (int r = 0; r < t->ranks; r++) {
    int pi = t->program_of[r];
    for (int k = 0; k < pl->nsends[pi]; k++)
      each_link(pl->topo, r, trace_peer(&t->programs[pi].ops[pl->sends[pi][k]], r), fn,
                !side || side[r] ? arg_in : arg_out);
  }
}

/* ---- which collectives are exclusive ---- */

/* Marks links with their one user (a group id, or LINK_P2P) or LINK_SHARED;
 * a group that meets another user on a link, or is met there, is shared. */
typedef struct {
  int *user;
  bool *shared; /* per group id */
  int id;
} mark_t;

static void mark_user(void *arg, int link) {
  mark_t *m = arg;
  int was = m->user[link];
  if (was == LINK_FREE || was == m->id) {
    m->user[link] = m->id;
    return;
  }
  if (was >= 0)
    m->shared[was] = true;
  if (m->id >= 0)
    m->shared[m->id] = true;
  m->user[link] = LINK_SHARED;
}

/* Plans the collectives of every group (not only of simulated ranks'). */
static int plan_every_group(scope_t *sc, npu_err_t *err) {
  replay_plan_t *pl = sc->pl;
  const trace_t *t = pl->trace;
  for (int pi = 0; pi < t->nprograms; pi++) {
    const trace_program_t *p = &t->programs[pi];
    for (int i = 0; i < p->nops; i++) {
      const trace_op_t *op = &p->ops[i];
      if (op->type != TRACE_OP_COLL)
        continue;
      const trace_comm_t *cm = &t->comms[op->comm];
      for (int m = 0; m < p->nranks; m++) {
        int r = p->ranks[m], g = trace_group_of(cm, r);
        if (cm->groups[g][0] == r &&
            replay_inst_for(pl, op->comm, g, op, sc->name, r, err) < 0)
          return -1;
      }
    }
  }
  return 0;
}

/* Whether each communicator is used from one stream in every program. */
static bool *one_stream_comms(const trace_t *t) {
  bool *ok = malloc(((size_t)t->ncomms + 1) * sizeof *ok);
  int *stream = malloc(((size_t)t->ncomms + 1) * sizeof *stream);
  for (int c = 0; c < t->ncomms; c++)
    ok[c] = true;
  for (int pi = 0; pi < t->nprograms; pi++) {
    const trace_program_t *p = &t->programs[pi];
    for (int c = 0; c < t->ncomms; c++)
      stream[c] = -1;
    for (int i = 0; i < p->nops; i++) {
      const trace_op_t *op = &p->ops[i];
      if (op->type != TRACE_OP_COLL)
        continue;
      if (stream[op->comm] >= 0 && stream[op->comm] != op->stream)
        ok[op->comm] = false;
      stream[op->comm] = op->stream;
    }
  }
  free(stream);
  return ok;
}

bool *replay_exclusive_insts(const replay_plan_t *pl) {
  const trace_t *t = pl->trace;
  if (pl->topo->nchanges) /* a timed fault: a collective's time depends on when it runs */
    return calloc((size_t)pl->ninsts + 1, sizeof(bool));
  int *gid_base = malloc(((size_t)t->ncomms + 1) * sizeof *gid_base), ngids = 0;
  for (int c = 0; c < t->ncomms; ngids += t->comms[c++].ngroups)
    gid_base[c] = ngids;
  int *user = malloc(((size_t)pl->topo->nlinks + 1) * sizeof *user);
  for (int l = 0; l < pl->topo->nlinks; l++)
    user[l] = LINK_FREE;
  bool *shared = calloc((size_t)ngids + 1, sizeof *shared);
  for (int k = 0; k < pl->ninsts; k++) {
    const inst_t *x = &pl->insts[k];
    mark_t m = {user, shared, gid_base[x->comm] + x->group};
    each_inst_link(pl->topo, x, mark_user, &m);
  }
  mark_t p2p = {user, shared, LINK_P2P};
  each_send_link(pl, NULL, mark_user, &p2p, &p2p);
  bool *one_stream = one_stream_comms(t);
  bool *exclusive = calloc((size_t)pl->ninsts + 1, sizeof *exclusive);
  for (int k = 0; k < pl->ninsts; k++) {
    const inst_t *x = &pl->insts[k];
    exclusive[k] = one_stream[x->comm] && !shared[gid_base[x->comm] + x->group];
  }
  free(one_stream);
  free(shared);
  free(user);
  free(gid_base);
  return exclusive;
}

/* ---- which ranks to simulate ---- */

static void add_rank(bool *in, int *queue, int *n, int r) {
  if (!in[r]) {
    in[r] = true;
    queue[(*n)++] = r;
  }
}

/* The closure of the programs' first ranks under peers and the members of
 * non-exclusive collectives. */
static bool *closure(scope_t *sc, npu_err_t *err) {
  replay_plan_t *pl = sc->pl;
  const trace_t *t = pl->trace;
  bool *in = calloc((size_t)t->ranks, sizeof *in);
  int *queue = malloc((size_t)t->ranks * sizeof *queue), n = 0;
  for (int pi = 0; pi < t->nprograms; pi++)
    add_rank(in, queue, &n, t->programs[pi].ranks[0]);
  for (int q = 0; q < n; q++) {
    int r = queue[q];
    const trace_program_t *p = &t->programs[t->program_of[r]];
    for (int i = 0; i < p->nops; i++) {
      const trace_op_t *op = &p->ops[i];
      if (op->type == TRACE_OP_SEND || op->type == TRACE_OP_RECV) {
        add_rank(in, queue, &n, trace_peer(op, r));
      } else if (op->type == TRACE_OP_COLL) {
        const trace_comm_t *cm = &t->comms[op->comm];
        int g = trace_group_of(cm, r), k = replay_inst_for(pl, op->comm, g, op, sc->name, r, err);
        if (k < 0) {
          free(in);
          in = NULL;
          break;
        }
        for (int m = 0; !sc->exclusive[k] && m < cm->sizes[g]; m++)
          add_rank(in, queue, &n, cm->groups[g][m]);
      }
    }
    if (!in)
      break;
  }
  free(queue);
  return in;
}

enum { SIDE_IN = 1, SIDE_OUT = 2 };

typedef struct {
  char *side;
  char mine;
} side_t;

static void mark_side(void *arg, int link) {
  side_t *s = arg;
  s->side[link] |= s->mine;
}

/* Whether no link carries traffic of both simulated and left-out ranks. */
static bool separable(const scope_t *sc, const bool *in) {
  const replay_plan_t *pl = sc->pl;
  const trace_t *t = pl->trace;
  char *side = calloc((size_t)pl->topo->nlinks + 1, 1);
  for (int k = 0; k < pl->ninsts; k++) {
    const inst_t *x = &pl->insts[k];
    if (sc->exclusive[k])
      continue;
    side_t s = {side, in[t->comms[x->comm].groups[x->group][0]] ? SIDE_IN : SIDE_OUT};
    each_inst_link(pl->topo, x, mark_side, &s);
  }
  side_t s_in = {side, SIDE_IN}, s_out = {side, SIDE_OUT};
  each_send_link(pl, in, mark_side, &s_in, &s_out);
  bool ok = true;
  for (int l = 0; l < pl->topo->nlinks; l++)
    ok = ok && side[l] != (SIDE_IN | SIDE_OUT);
  free(side);
  return ok;
}

int replay_scope_choose(replay_plan_t *pl, const char *name, replay_scope_t *out, npu_err_t *err) {
  scope_t sc = {.pl = pl, .name = name};
  int rc = plan_every_group(&sc, err);
  bool *in = NULL;
  if (rc == 0) {
    sc.exclusive = replay_exclusive_insts(pl);
    in = closure(&sc, err);
    rc = in ? 0 : -1;
  }
  out->analytic = sc.exclusive;
  out->simulated = NULL;
  if (in && separable(&sc, in))
    out->simulated = in;
  else
    free(in);
  return rc;
}
