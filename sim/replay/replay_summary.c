/* replay_summary.c - see replay_summary.h. */
#include "replay_summary.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "intervals.h"

static int first_simulated(const replay_plan_t *pl, const trace_comm_t *cm, int group) {
  for (int m = 0; m < cm->sizes[group]; m++)
    if (pl->simulated[cm->groups[group][m]])
      return cm->groups[group][m];
  return -1;
}

/* Groups of a communicator with a simulated member. */
static int simulated_groups(const replay_plan_t *pl, const trace_comm_t *cm) {
  int n = 0;
  for (int g = 0; g < cm->ngroups; g++)
    n += first_simulated(pl, cm, g) >= 0;
  return n > 0 ? n : 1;
}

static bool is_compute(int type) { return type == TRACE_OP_SHAPED || type == TRACE_OP_COMPUTE; }
static bool is_comm(int type) {
  return type == TRACE_OP_COLL || type == TRACE_OP_SEND || type == TRACE_OP_RECV;
}

enum { CLS_COMPUTE, CLS_COMM, NCLS };

typedef struct {
  replay_rank_t *pr;
  double busy_s;  /* covered by compute or communication */
} rank_sweep_t;

static void rank_stretch(void *ctx, double dt, const int *open, double rate) {
  (void)rate;
  rank_sweep_t *w = ctx;
  replay_rank_t *pr = w->pr;
  if (open[CLS_COMPUTE] > 0)
    pr->compute_s += dt;
  if (open[CLS_COMM] > 0)
    pr->comm_s += dt;
  if (open[CLS_COMM] > 0 && open[CLS_COMPUTE] == 0)
    pr->exposed_comm_s += dt;
  if (open[CLS_COMPUTE] > 0 || open[CLS_COMM] > 0)
    w->busy_s += dt;
}

/* One sweep over a rank's compute and communication ops: the union of each,
 * communication not under compute, and the idle rest of the step. */
static void rank_times(const trace_program_t *p, const replay_span_t *sp, double step_s,
                       replay_rank_t *pr) {
  interval_edge_t *e = malloc(((size_t)p->nops * 2 + 1) * sizeof *e);
  int n = 0, open[NCLS];
  for (int i = 0; i < p->nops; i++) {
    int type = (int)p->ops[i].type;
    if (sp[i].end_s > sp[i].start_s && (is_compute(type) || is_comm(type)))
      intervals_add(e, &n, sp[i].start_s, sp[i].end_s, is_compute(type) ? CLS_COMPUTE : CLS_COMM,
                    0);
  }
  rank_sweep_t w = {pr, 0};
  intervals_sweep(e, n, NCLS, open, rank_stretch, &w);
  /* busy is a sum of stretches, step a difference of two times: where busy
   * covers the whole step they part by a few units in the step's last place,
   * which is rounding, not idle time */
  double idle = step_s - w.busy_s;
  pr->idle_s = idle > 8 * DBL_EPSILON * step_s ? idle : 0;
  free(e);
}

static void summarise(const replay_plan_t *pl, const replay_record_t *rec, replay_result_t *out) {
  const trace_t *t = pl->trace;
  out->per_rank = calloc((size_t)t->ranks, sizeof *out->per_rank);
  out->per_comm = calloc((size_t)t->ncomms + 1, sizeof *out->per_comm);
  double *scale = malloc(((size_t)t->ncomms + 1) * sizeof *scale); /* groups per simulated one */
  for (int c = 0; c < t->ncomms; c++)
    scale[c] = (double)t->comms[c].ngroups / simulated_groups(pl, &t->comms[c]);
  out->step_time_s = 0;
  for (int r = 0; r < t->ranks; r++) {
    const trace_program_t *p = &t->programs[t->program_of[r]];
    for (int i = 0; pl->simulated[r] && i < p->nops; i++)
      if (rec->spans[r][i].end_s > out->step_time_s)
        out->step_time_s = rec->spans[r][i].end_s;
  }
  for (int r = 0; r < t->ranks; r++) {
    const trace_program_t *p = &t->programs[t->program_of[r]];
    replay_rank_t *pr = &out->per_rank[r];
    if (!pl->simulated[r])
      continue;
    rank_times(p, rec->spans[r], out->step_time_s, pr);
    pr->peak_memory_bytes = rec->peak_memory_bytes[r];
    for (int i = 0; i < p->nops; i++) {
      if (p->ops[i].type != TRACE_OP_COLL)
        continue;
      const inst_t *x = &pl->insts[pl->inst_of[r][i]];
      const trace_comm_t *cm = &t->comms[x->comm];
      int g = cm->sizes[x->group], sim = 0;
      for (int m = 0; m < g; m++)
        sim += pl->simulated[cm->groups[x->group][m]];
      replay_comm_t *c = &out->per_comm[x->comm];
      /* unsimulated groups mirror a simulated one */
      double groups = scale[x->comm];
      c->busy_s += (rec->spans[r][i].end_s - rec->spans[r][i].start_s) / sim * groups;
      if (r == first_simulated(pl, cm, x->group)) { /* each group's collective once */
        c->collectives += (long)llround(groups);
        c->bytes += coll_sched_bytes(&x->plan.sched) * groups;
      }
    }
  }
  for (int r = 0; r < t->ranks; r++) /* by symmetry, as its program's representative */
    if (!pl->simulated[r])
      out->per_rank[r] = out->per_rank[t->programs[t->program_of[r]].ranks[0]];
  free(scale);
}

/* Analytic link figures of the collectives: each group's collective once per
 * issue. Ranks of one program issue the same collectives, so the first rank's
 * counts serve every group a rank of the program leads (the plan planned
 * them all). With links dying at T, an issue that met at or after T counts on
 * the routes after it (one in flight at T on the old ones). */
static void collective_links(const replay_plan_t *pl, const replay_record_t *rec,
                             linkstats_t *links) {
  const trace_t *t = pl->trace;
  const topo_t *after = pl->topo->after;
  for (int pi = 0; pi < t->nprograms; pi++) {
    const trace_program_t *p = &t->programs[pi];
    int first = p->ranks[0], n = pl->ninsts;
    int *count = calloc((size_t)2 * n + 1, sizeof *count),
        *op_at = calloc((size_t)n + 1, sizeof *op_at);
    for (int i = 0; i < p->nops; i++) {
      if (p->ops[i].type != TRACE_OP_COLL)
        continue;
      int k = pl->inst_of[first][i];
      bool late = after && rec->spans[first][i].ready_s >= pl->topo->death_s;
      if (count[k] + count[n + k] == 0)
        op_at[k] = i;
      count[late ? n + k : k]++;
    }
    for (int k = 0; k < n; k++) {
      if (!count[k] && !count[n + k])
        continue;
      const trace_op_t *op = &p->ops[op_at[k]];
      const trace_comm_t *cm = &t->comms[op->comm];
      for (int m = 0; m < p->nranks; m++) {
        int r = p->ranks[m], g = trace_group_of(cm, r);
        if (cm->groups[g][0] != r)
          continue;
        const coll_sched_t *s = &pl->insts[replay_inst_find(pl, op->comm, g, op)].plan.sched;
        if (count[k])
          coll_analytic_record(pl->topo, &pl->sys->coll, s, links, count[k]);
        if (count[n + k])
          coll_analytic_record(after, &pl->sys->coll, s, links, count[n + k]);
      }
    }
    free(count);
    free(op_at);
  }
}

/* Analytic link figures of the sends: every rank's, timed by its stand-in. */
static void send_links(const replay_plan_t *pl, const replay_record_t *rec, linkstats_t *links) {
  const trace_t *t = pl->trace;
  for (int r = 0; r < t->ranks; r++) {
    int pi = t->program_of[r];
    const trace_program_t *p = &t->programs[pi];
    int in = pl->simulated[r] ? r : p->ranks[0];
    for (int k = 0; k < pl->nsends[pi]; k++) {
      int i = pl->sends[pi][k];
      const trace_op_t *op = &p->ops[i];
      topo_hop_t hops[TOPO_MAX_HOPS]; /* routed round links dead when both ends met */
      int nh = topo_route(topo_at(pl->topo, rec->spans[in][i].ready_s), r, trace_peer(op, r), hops);
      double dur = rec->spans[in][i].end_s - rec->spans[in][i].start_s;
      for (int h = 0; h < nh; h++) {
        double busy = op->bytes / topo_link_bw(pl->topo, hops[h].link);
        linkstats_add(links, hops[h].link, hops[h].dir, op->bytes, busy,
                      dur > 0 ? busy / dur : 0);
      }
    }
  }
}

void replay_links_logged(const replay_plan_t *pl, const replay_record_t *rec, linkstats_t *links) {
  (void)pl;
  linkstats_merge(links, &rec->links);
}

void replay_links_planned(const replay_plan_t *pl, const replay_record_t *rec, linkstats_t *links) {
  send_links(pl, rec, links);
  collective_links(pl, rec, links);
}

void replay_summarise(const replay_plan_t *pl, const replay_record_t *rec,
                      replay_result_t *out) {
  for (int r = 0; r < pl->trace->ranks; r++)
    out->simulated_ranks += pl->simulated[r];
  summarise(pl, rec, out);
  linkstats_init(&out->links, pl->topo);
  pl->fidelity->links(pl, rec, &out->links);
}

/* What an op that never finished waits for, for the one-line error. */
static void describe_wait(const replay_plan_t *pl, int rank, int i, char *buf, size_t len) {
  int pi = pl->trace->program_of[rank];
  const trace_program_t *p = &pl->trace->programs[pi];
  const trace_op_t *op = &p->ops[i];
  switch (op->type) {
  case TRACE_OP_SEND:
  case TRACE_OP_RECV:
    snprintf(buf, len, "rank %d to %s message %d of tag \"%s\"", trace_peer(op, rank),
             op->type == TRACE_OP_SEND ? "receive" : "send", pl->pairing.seq[rank][i] + 1,
             trace_tag(p, op));
    break;
  case TRACE_OP_COLL:
  case TRACE_OP_BARRIER:
    snprintf(buf, len, "the other members of its group of \"%s\"",
             pl->trace->comms[op->comm].name);
    break;
  case TRACE_OP_WAIT:
    snprintf(buf, len, "event \"%s\"", p->events[op->event]);
    break;
  default:
    snprintf(buf, len, "its dependencies");
  }
}

/* After either engine: every op of a simulated rank finished, or one line
 * naming the first that did not (the head of a stuck stream) and what it waits
 * for. The checks on reading make this unreachable for a valid trace; it stays
 * so that a gap in them can never give figures with exit 0. */
int replay_check_finished(const replay_plan_t *pl, const replay_record_t *rec, const char *name,
                          npu_err_t *err) {
  const trace_t *t = pl->trace;
  for (int r = 0; r < t->ranks; r++) {
    if (!pl->simulated[r])
      continue;
    const trace_program_t *p = &t->programs[t->program_of[r]];
    for (int i = 0; i < p->nops; i++) {
      if (rec->finished[r][i])
        continue;
      char what[160];
      describe_wait(pl, r, i, what, sizeof what);
      npu_err_set(err, "%s: rank %d op %d: expected every op to finish, found it waiting "
               "forever for %s", name, r, p->ops[i].id, what);
      return -1;
    }
  }
  return 0;
}

