/* train_report.c - a training run's result as a table, JSON or CSV, and the
 * files it writes besides. */
#include "train_report.h"

#include <stdlib.h>

#include "chakra.h"
#include "jsonfile.h"
#include "op_list.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* The breakdown's names of the generator's parts of the step. */
/* clang-format off */
static const char *const part_names[TRAIN_PART_COUNT] = {
    [TRAIN_PART_COMPUTE] = "compute",
    [TRAIN_PART_TP] = "exposed_tp_comm",
    [TRAIN_PART_DP] = "exposed_dp_comm",
    [TRAIN_PART_PP] = "exposed_pp_comm",
    [TRAIN_PART_EP] = "exposed_ep_comm",
    [TRAIN_PART_CP] = "exposed_cp_comm",
    [TRAIN_PART_OPTIMIZER] = "optimizer"};
/* clang-format on */

static const char *yes_no(bool b) {
  return b ? "true" : "false";
}

/* ---- JSON ---- */

static void json_figures(FILE *out, const train_opts_t *o, const char *fidelity,
                         const train_result_t *r) {
  fprintf(out, "{\n  \"workload\": ");
  jsonfile_write_string(out, o->wl->model.name);
  fprintf(out, ",\n  \"system\": ");
  jsonfile_write_string(out, o->sys->name);
  fprintf(out,
          ",\n  \"fidelity\": \"%s\",\n  \"npus\": %ld,\n  \"simulated_npus\": %d,\n"
          "  \"microbatches\": %ld,\n  \"step_time_s\": %.9g,\n  \"tokens_per_s\": %.6g,\n"
          "  \"tokens_per_s_per_npu\": %.6g,\n  \"model_tflops_per_npu\": %.6g,\n"
          "  \"hw_tflops_per_npu\": %.6g,\n  \"mfu\": %.6g",
          fidelity, r->info.world, r->replay.simulated_ranks, r->info.microbatches, r->step_time_s,
          r->tokens_per_s, r->tokens_per_s_per_npu, r->model_tflops_per_npu, r->hw_tflops_per_npu,
          r->mfu);
}

/* A breakdown's fields and the closing brace of its object; lead: whether the
 * first field follows others in the object (then a comma goes before it). */
static void json_breakdown(FILE *out, const train_breakdown_t *b, bool lead) {
  for (int c = 0; c < TRAIN_PART_COUNT; c++)
    fprintf(out, "%s\"%s\": %.9g", c || lead ? ", " : "", part_names[c], b->part_s[c]);
  fprintf(out, ", \"straggler_wait\": %.9g, \"pipeline_bubble\": %.9g}", b->straggler_wait_s,
          b->bubble_s);
}

static void json_stages(FILE *out, const train_result_t *r) {
  fprintf(out, ",\n  \"stages\": [");
  for (int s = 0; s < r->info.stages; s++) {
    fprintf(out, "%s\n    {\"stage\": %d", s ? "," : "", s);
    json_breakdown(out, &r->stage[s], true);
  }
  fprintf(out, "\n  ]");
}

static void json_memory(FILE *out, const train_result_t *r) {
  const train_memory_t *m = &r->peak;
  double cap = r->capacity_bytes;
  fprintf(out,
          ",\n  \"memory\": {\"weights_GiB\": %.6g, "
          "\"gradients_GiB\": %.6g, \"optimizer_GiB\": %.6g, \"activations_GiB\": %.6g, "
          "\"temporary_GiB\": %.6g, \"peak_GiB\": %.6g, \"capacity_GiB\": %.6g, \"fits\": %s, "
          "\"overshoot_GiB\": %.6g},\n  ",
          m->weights / GIB, m->gradients / GIB, m->optimizer / GIB, m->activations / GIB,
          m->temporary / GIB, m->total / GIB, cap / GIB, yes_no(r->fits),
          r->fits ? 0 : (m->total - cap) / GIB);
}

static void json_energy(FILE *out, const train_result_t *r) {
  const replay_energy_t *en = &r->energy;
  fprintf(out,
          "\"energy\": {\"modelled\": %s, \"step_J\": %.9g, \"idle_J\": %.9g, "
          "\"compute_J\": %.9g, \"hbm_J\": %.9g, \"links_J\": %.9g, "
          "\"avg_power_W_per_npu\": %.6g, \"tokens_per_J\": %.6g}",
          yes_no(en->modelled), en->total_J, en->idle_J, en->compute_J, en->hbm_J, en->links_J,
          r->avg_power_W_per_npu, r->tokens_per_J);
}

/* Every link that carried bytes. */
static void json_links(FILE *out, const train_result_t *r) {
  linkstats_view_t all = {LINKSTATS_ALL, 0};
  link_stat_t *ls = NULL;
  int nls = linkstats_rank(&r->replay.links, r->step_time_s, &all, &ls);
  linkstats_print_json(out, &r->replay.topo, ls, nls);
  free(ls);
}

static void report_json(FILE *out, const train_opts_t *o, const char *fidelity,
                        const train_result_t *r) {
  json_figures(out, o, fidelity, r);
  fprintf(out, ",\n  \"breakdown\": {");
  json_breakdown(out, &r->rank0, false);
  json_stages(out, r);
  json_memory(out, r);
  json_energy(out, r);
  fprintf(out, ",\n  \"links\": ");
  json_links(out, r);
  fputs("\n}\n", out);
}

/* ---- CSV ---- */

static void csv_header(FILE *out) {
  fputs("workload,system,npus,step_time_s,tokens_per_s,tokens_per_s_per_npu,"
        "model_tflops_per_npu,hw_tflops_per_npu,mfu,energy_J,tokens_per_J,peak_memory_GiB,fits,"
        "stage,stage_rank",
        out);
  for (int c = 0; c < TRAIN_PART_COUNT; c++)
    fprintf(out, ",%s_s", part_names[c]);
  fputs(",straggler_wait_s,pipeline_bubble_s,stage_memory_GiB\n", out);
}

/* One row per pipeline stage (its first rank's breakdown), the step's figures
 * repeated on each, so a sweep can stack the rows of many runs. */
static void report_csv(FILE *out, const train_opts_t *o, const train_result_t *r) {
  csv_header(out);
  for (int s = 0; s < r->info.stages; s++) {
    const train_breakdown_t *b = &r->stage[s];
    out_csv_field(out, o->wl->model.name, ",");
    out_csv_field(out, o->sys->name, ",");
    fprintf(out, "%ld,%.9g,%.6g,%.6g,%.6g,%.6g,%.6g,%.9g,%.6g,%.6g,%s,%d,%d", r->info.world,
            r->step_time_s, r->tokens_per_s, r->tokens_per_s_per_npu, r->model_tflops_per_npu,
            r->hw_tflops_per_npu, r->mfu, r->energy.total_J, r->tokens_per_J, r->peak.total / GIB,
            yes_no(r->fits), s, r->stage_rank[s]);
    for (int c = 0; c < TRAIN_PART_COUNT; c++)
      fprintf(out, ",%.9g", b->part_s[c]);
    fprintf(out, ",%.9g,%.9g,%.6g\n", b->straggler_wait_s, b->bubble_s,
            r->info.memory[s].total / GIB);
  }
}

/* ---- table ---- */

static void table_figures(FILE *out, const train_opts_t *o, const char *fidelity,
                          const train_result_t *r) {
  const parallel_cfg_t *p = &o->wl->parallel;
  fprintf(out,
          "# npusim train: %s on %ld NPUs of %s (dp %d, tp %d, pp %d, vpp %d, cp %d, ep %d), "
          "%s fidelity, %d simulated\n",
          o->wl->model.name, r->info.world, o->sys->name, p->dp, p->tp, p->pp, p->vpp, p->cp, p->ep,
          fidelity, r->replay.simulated_ranks);
  fprintf(out, "step time            %12.3f ms (%ld micro-batches per pipeline)\n",
          r->step_time_s * 1e3, r->info.microbatches);
  fprintf(out, "tokens/s             %12.0f (%.1f per NPU)\n", r->tokens_per_s,
          r->tokens_per_s_per_npu);
  fprintf(out, "model TFLOP/s/NPU    %12.1f (MFU %.1f%%; with recompute %.1f)\n",
          r->model_tflops_per_npu, 100 * r->mfu, r->hw_tflops_per_npu);
  const replay_energy_t *en = &r->energy;
  if (en->modelled)
    fprintf(out,
            "energy per step      %12.1f kJ (%.0f W per NPU, %.2f tokens/J): idle %.1f, "
            "compute %.1f, HBM %.1f, links %.1f kJ\n",
            en->total_J / 1e3, r->avg_power_W_per_npu, r->tokens_per_J, en->idle_J / 1e3,
            en->compute_J / 1e3, en->hbm_J / 1e3, en->links_J / 1e3);
}

static void table_breakdown(FILE *out, const train_breakdown_t *b) {
  fprintf(out, "\nwhere rank 0's step went (ms):\n");
  for (int c = 0; c < TRAIN_PART_COUNT; c++)
    fprintf(out, "  %-18s %10.3f\n", part_names[c], b->part_s[c] * 1e3);
  fprintf(out, "  %-18s %10.3f\n", "straggler_wait", b->straggler_wait_s * 1e3);
  fprintf(out, "  %-18s %10.3f\n", "pipeline_bubble", b->bubble_s * 1e3);
}

/* One line per pipeline stage (its first rank), ms, when there is a pipeline. */
static void table_stages(FILE *out, const train_result_t *r) {
  if (r->info.stages == 1)
    return;
  fprintf(out,
          "\nper pipeline stage, its first rank (ms):\n  stage %11s %10s %10s %10s "
          "%10s %10s %10s %10s %10s\n",
          "compute", "tp", "dp", "pp", "ep", "cp", "optimizer", "wait", "bubble");
  for (int s = 0; s < r->info.stages; s++) {
    const train_breakdown_t *b = &r->stage[s];
    fprintf(out, "  %5d ", s);
    for (int c = 0; c < TRAIN_PART_COUNT; c++)
      fprintf(out, " %10.1f", b->part_s[c] * 1e3);
    fprintf(out, " %10.1f %10.1f\n", b->straggler_wait_s * 1e3, b->bubble_s * 1e3);
  }
}

static void table_memory(FILE *out, const train_result_t *r) {
  const train_memory_t *m = &r->peak;
  double cap = r->capacity_bytes;
  fprintf(out,
          "\nmemory per NPU, %s (GiB): weights %.2f, gradients %.2f, optimizer "
          "%.2f, activations %.2f, temporary %.2f = %.2f of %.1f: %s",
          r->per_chip ? "tightest stage on its chip" : "fullest stage", m->weights / GIB,
          m->gradients / GIB, m->optimizer / GIB, m->activations / GIB, m->temporary / GIB,
          m->total / GIB, cap / GIB, r->fits ? "fits\n" : "");
  if (!r->fits)
    fprintf(out, "does NOT fit, %.2f GiB over\n", (m->total - cap) / GIB);
}

static void table_links(FILE *out, const linkstats_view_t *links, const train_result_t *r) {
  link_stat_t *ls = NULL;
  int nls = linkstats_rank(&r->replay.links, r->step_time_s, links, &ls);
  fprintf(out, "\n# %s links\n", links->rows == LINKSTATS_ALL ? "all used" : "most utilised");
  linkstats_print_table(out, &r->replay.topo, ls, nls);
  free(ls);
}

static void report_table(FILE *out, const train_opts_t *o, const train_report_opts_t *ro,
                         const train_result_t *r) {
  table_figures(out, o, ro->fidelity, r);
  table_breakdown(out, &r->rank0);
  table_stages(out, r);
  table_memory(out, r);
  if (ro->links)
    table_links(out, ro->links, r);
}

void train_report(FILE *out, out_format_t format, const train_opts_t *o,
                  const train_report_opts_t *ro, const train_result_t *r) {
  if (format == FORMAT_JSON)
    report_json(out, o, ro->fidelity, r);
  else if (format == FORMAT_CSV)
    report_csv(out, o, r);
  else
    report_table(out, o, ro, r);
}

/* ---- files ---- */

static void name_op(const void *ctx, int pi, int i, char *buf, size_t len) {
  const train_result_t *r = ctx;
  train_op_name(&r->info, &r->trace, &replay_vocab, pi, i, buf, len);
}

typedef struct {
  const train_result_t *r;
  const variation_cfg_t *variation;
} spans_t;

/* How long op i of rank r ran, for the Chakra export, and how long it takes at
 * the chip model's speed: the replay divided compute ops by the rank's speed
 * factor and stretched them by their jitter (replay_timed_s), which a replay
 * of the ETs on the same system does again. */
static void op_duration(const void *ctx, int rank, int i, double *ran_s, double *nominal_s) {
  const spans_t *s = ctx;
  const trace_t *t = &s->r->trace;
  const replay_span_t *sp = &s->r->replay.spans[replay_stand_in(&s->r->replay, t, rank)][i];
  trace_op_type_t type = t->programs[t->program_of[rank]].ops[i].type;
  *ran_s = *nominal_s = sp->end_s - sp->start_s;
  if ((type == TRACE_OP_SHAPED || type == TRACE_OP_COMPUTE) && variation_active(s->variation))
    *nominal_s =
        *ran_s * variation_speed(s->variation, rank) / variation_jitter(s->variation, rank, i);
}

/* The step's timeline, its slices named by layer, micro-batch and pass. */
static int write_timeline(const train_files_t *f, const train_opts_t *o, const train_result_t *r,
                          npu_err_t *err) {
  replay_chrome_opts_t copts = {.first_rank = f->first_rank,
                                .last_rank = f->last_rank,
                                .sys = o->sys,
                                .name = name_op,
                                .name_ctx = r,
                                .progress = f->progress};
  return replay_write_chrome(f->chrome_trace, &r->trace, &r->replay, &copts, err);
}

int train_write_files(const train_files_t *f, const train_opts_t *o, const train_result_t *r,
                      npu_err_t *err) {
  const trace_t *t = &r->trace;
  spans_t spans = {r, &o->sys->variation};
  if ((f->list_ops && op_list_write(f->list_ops, t, err)) ||
      (f->emit_trace && trace_write(t, &replay_vocab, f->emit_trace, err)) ||
      (f->emit_chakra && chakra_write(f->emit_chakra, t, &replay_vocab, f->chakra_allgather,
                                      op_duration, &spans, err)) ||
      (f->chrome_trace && write_timeline(f, o, r, err)))
    return -1;
  return 0;
}
