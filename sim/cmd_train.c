/* cmd_train.c - `npusim train`: a transformer and its parallel plan become rank
 * programs (workloads/train_gen.c), which are replayed on the system; the step
 * time becomes throughput, MFU, a breakdown of where the time went, and the
 * memory each stage needs against HBM. */
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "jsonfile.h"
#include "op_list.h"
#include "replay.h"
#include "train_gen.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

typedef enum {
  CAT_COMPUTE,
  CAT_TP,
  CAT_DP,
  CAT_PP,
  CAT_EP,
  CAT_CP,
  CAT_OPTIMIZER,
  CAT_COUNT
} category_t;

static const char *const category_names[CAT_COUNT] = {
    "compute", "exposed_tp_comm", "exposed_dp_comm", "exposed_pp_comm",
    "exposed_ep_comm", "exposed_cp_comm", "optimizer"};

/* What an op of a generated program is for. */
static int category_of(const trace_t *t, const trace_program_t *p, const trace_op_t *op) {
  if (op->type == TRACE_OP_SHAPED)
    return strcmp(p->streams[op->stream], "optimizer") == 0 ? CAT_OPTIMIZER : CAT_COMPUTE;
  if (op->type == TRACE_OP_COLL) { /* dp, edp, dp_params, edp_params, embd: data parallel */
    const char *c = t->comms[op->comm].name;
    return strcmp(c, "tp") == 0 ? CAT_TP : strcmp(c, "ep") == 0 ? CAT_EP : CAT_DP;
  }
  if (op->type == TRACE_OP_SEND || op->type == TRACE_OP_RECV)
    return strcmp(trace_tag(p, op), "cp") == 0 ? CAT_CP : CAT_PP;
  return -1;
}

typedef struct {
  double t;
  int cat, delta;
} edge_t;

static int by_time(const void *a, const void *b) {
  const edge_t *x = a, *y = b;
  if (x->t != y->t)
    return x->t < y->t ? -1 : 1;
  return x->delta - y->delta; /* ends first */
}

/* Each instant of the step goes to one category, so the parts add up to the
 * step: compute first, then the communication kinds in this order (what the
 * compute stream most likely waits on first); idle time is the bubble. */
static const category_t claim_order[CAT_COUNT] = {CAT_COMPUTE, CAT_OPTIMIZER, CAT_TP, CAT_CP,
                                                  CAT_EP, CAT_PP, CAT_DP};

/* Sweeps a rank's timeline: compute and optimizer time as they run, each kind
 * of communication where no compute hides it, and the idle rest (the bubble). */
static void breakdown(const trace_t *t, const replay_result_t *r, int rank,
                      double out[CAT_COUNT], double *bubble) {
  const trace_program_t *p = &t->programs[t->program_of[rank]];
  edge_t *e = malloc(((size_t)p->nops * 2 + 1) * sizeof *e);
  int n = 0;
  for (int i = 0; i < p->nops; i++) {
    int cat = category_of(t, p, &p->ops[i]);
    const replay_span_t *sp = &r->spans[replay_stand_in(r, t, rank)][i];
    /* communication counts from when its peers were there: waiting for a
     * pipeline neighbour is bubble, not communication */
    double start = cat == CAT_COMPUTE || cat == CAT_OPTIMIZER ? sp->start_s : sp->ready_s;
    if (cat < 0 || sp->end_s <= start)
      continue;
    e[n++] = (edge_t){start, cat, 1};
    e[n++] = (edge_t){sp->end_s, cat, -1};
  }
  qsort(e, (size_t)n, sizeof *e, by_time);
  int active[CAT_COUNT] = {0};
  memset(out, 0, CAT_COUNT * sizeof *out);
  double busy = 0;
  for (int i = 0; i < n; i++) {
    double dt = i > 0 ? e[i].t - e[i - 1].t : 0;
    int c = 0;
    while (c < CAT_COUNT && !active[claim_order[c]])
      c++;
    if (c < CAT_COUNT) {
      out[claim_order[c]] += dt;
      busy += dt;
    }
    active[e[i].cat] += e[i].delta;
  }
  *bubble = r->step_time_s - busy;
  free(e);
}

/* The first rank of pipeline stage s (context-parallel position 0): its
 * program is the generator's s * cp. */
static int stage_rank(const trace_t *t, const workload_cfg_t *w, int s) {
  return t->programs[s * w->parallel.cp].ranks[0];
}

static void print_stages_json(FILE *out, const trace_t *t, const workload_cfg_t *w,
                              const replay_result_t *r) {
  fprintf(out, ",\n  \"stages\": [");
  for (int s = 0; s < w->parallel.pp; s++) {
    double cat[CAT_COUNT], bubble;
    breakdown(t, r, stage_rank(t, w, s), cat, &bubble);
    fprintf(out, "%s\n    {\"stage\": %d", s ? "," : "", s);
    for (int c = 0; c < CAT_COUNT; c++)
      fprintf(out, ", \"%s\": %.9g", category_names[c], cat[c]);
    fprintf(out, ", \"pipeline_bubble\": %.9g}", bubble);
  }
  fprintf(out, "\n  ]");
}

/* One line per pipeline stage (its first rank), ms, when there is a pipeline. */
static void print_stages_table(FILE *out, const trace_t *t, const workload_cfg_t *w,
                               const replay_result_t *r) {
  if (w->parallel.pp == 1)
    return;
  fprintf(out, "\nper pipeline stage, its first rank (ms):\n  stage %11s %10s %10s %10s "
               "%10s %10s %10s %10s\n", "compute", "tp", "dp", "pp", "ep", "cp", "optimizer",
          "bubble");
  for (int s = 0; s < w->parallel.pp; s++) {
    double cat[CAT_COUNT], bubble;
    breakdown(t, r, stage_rank(t, w, s), cat, &bubble);
    fprintf(out, "  %5d ", s);
    for (int c = 0; c < CAT_COUNT; c++)
      fprintf(out, " %10.1f", cat[c] * 1e3);
    fprintf(out, " %10.1f\n", bubble * 1e3);
  }
}

static void print_result(FILE *out, int format, const system_cfg_t *sys, const workload_cfg_t *w,
                         const train_info_t *info, const replay_result_t *r, const char *fidelity,
                         const trace_t *t) {
  double step = r->step_time_s, npus = (double)info->world;
  double tps = info->tokens / step, model_tf = info->model_flops / step / npus / 1e12;
  double hw_tf = info->hw_flops / step / npus / 1e12;
  chip_dtype_t dt = w->training.precision == PRECISION_FP16 ? CHIP_DTYPE_FP16
                    : w->training.precision == PRECISION_FP8 ? CHIP_DTYPE_FP8 : CHIP_DTYPE_BF16;
  double mfu = model_tf * 1e12 / chip_cube_peak_flops(&sys->chip, dt);
  double cat[CAT_COUNT], bubble;
  breakdown(t, r, 0, cat, &bubble);
  train_memory_t peak = info->memory[0];
  for (int s = 1; s < info->stages; s++)
    if (info->memory[s].total > peak.total)
      peak = info->memory[s];
  double cap = (double)sys->chip.hbm.capacity_bytes;
  bool fits = peak.total <= cap;
  if (format == FORMAT_JSON) {
    fprintf(out, "{\n  \"workload\": ");
    jsonfile_write_string(out, w->model.name);
    fprintf(out, ",\n  \"system\": ");
    jsonfile_write_string(out, sys->name);
    fprintf(out, ",\n  \"fidelity\": \"%s\",\n  \"npus\": %ld,\n  \"simulated_npus\": %d,\n"
            "  \"microbatches\": %ld,\n  \"step_time_s\": %.9g,\n  \"tokens_per_s\": %.6g,\n"
            "  \"tokens_per_s_per_npu\": %.6g,\n  \"model_tflops_per_npu\": %.6g,\n"
            "  \"hw_tflops_per_npu\": %.6g,\n  \"mfu\": %.6g,\n  \"breakdown\": {",
            fidelity, info->world, r->simulated_ranks, info->microbatches, step, tps, tps / npus,
            model_tf, hw_tf, mfu);
    for (int c = 0; c < CAT_COUNT; c++)
      fprintf(out, "%s\"%s\": %.9g", c ? ", " : "", category_names[c], cat[c]);
    fprintf(out, ", \"pipeline_bubble\": %.9g}", bubble);
    print_stages_json(out, t, w, r);
    fprintf(out, ",\n  \"memory\": {\"weights_GiB\": %.6g, "
            "\"gradients_GiB\": %.6g, \"optimizer_GiB\": %.6g, \"activations_GiB\": %.6g, "
            "\"temporary_GiB\": %.6g, \"peak_GiB\": %.6g, \"capacity_GiB\": %.6g, \"fits\": %s, "
            "\"overshoot_GiB\": %.6g}\n}\n", peak.weights / GIB, peak.gradients / GIB,
            peak.optimizer / GIB, peak.activations / GIB, peak.temporary / GIB, peak.total / GIB,
            cap / GIB, fits ? "true" : "false", fits ? 0 : (peak.total - cap) / GIB);
    return;
  }
  if (format == FORMAT_CSV) {
    fprintf(out, "workload,system,npus,step_time_s,tokens_per_s,tokens_per_s_per_npu,"
                 "model_tflops_per_npu,hw_tflops_per_npu,mfu,peak_memory_GiB,fits\n");
    fprintf(out, "%s,%s,%ld,%.9g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%s\n", w->model.name, sys->name,
            info->world, step, tps, tps / npus, model_tf, hw_tf, mfu, peak.total / GIB,
            fits ? "true" : "false");
    return;
  }
  fprintf(out, "# npusim train: %s on %ld NPUs of %s (dp %d, tp %d, pp %d, vpp %d, cp %d, ep %d), "
          "%s fidelity, %d simulated\n", w->model.name, info->world, sys->name, w->parallel.dp,
          w->parallel.tp, w->parallel.pp, w->parallel.vpp, w->parallel.cp, w->parallel.ep,
          fidelity, r->simulated_ranks);
  fprintf(out, "step time            %12.3f ms (%ld micro-batches per pipeline)\n", step * 1e3,
          info->microbatches);
  fprintf(out, "tokens/s             %12.0f (%.1f per NPU)\n", tps, tps / npus);
  fprintf(out, "model TFLOP/s/NPU    %12.1f (MFU %.1f%%; with recompute %.1f)\n", model_tf,
          100 * mfu, hw_tf);
  fprintf(out, "\nwhere rank 0's step went (ms):\n");
  for (int c = 0; c < CAT_COUNT; c++)
    fprintf(out, "  %-18s %10.3f\n", category_names[c], cat[c] * 1e3);
  fprintf(out, "  %-18s %10.3f\n", "pipeline_bubble", bubble * 1e3);
  print_stages_table(out, t, w, r);
  fprintf(out, "\nmemory per NPU, fullest stage (GiB): weights %.2f, gradients %.2f, optimizer "
          "%.2f, activations %.2f, temporary %.2f = %.2f of %.1f: %s", peak.weights / GIB,
          peak.gradients / GIB, peak.optimizer / GIB, peak.activations / GIB,
          peak.temporary / GIB, peak.total / GIB, cap / GIB, fits ? "fits\n" : "");
  if (!fits)
    fprintf(out, "does NOT fit, %.2f GiB over\n", (peak.total - cap) / GIB);
}

int cmd_train(const cli_opts_t *opts, FILE *out, npu_err_t *err) {
  if (!opts->workload_path)
    return npu_err_set(err, "npusim train: expected --workload FILE, found none");
  cli_configs_t cfg;
  if (cli_load_configs(opts, &cfg, err))
    return -1;
  trace_t trace;
  train_info_t info;
  int rc = train_generate(&cfg.wl, &replay_vocab, cfg.sys.node.npus, &trace, &info, err->msg,
                          sizeof err->msg);
  if (rc) {
    cli_free_configs(&cfg);
    return -1;
  }
  if (opts->list_ops && op_list_write(opts->list_ops, &trace, err->msg, sizeof err->msg)) {
    trace_free(&trace);
    train_info_free(&info);
    cli_free_configs(&cfg);
    return CMD_CANNOT_WRITE;
  }
  bool flow = opts->fidelity == FIDELITY_FLOW;
  replay_result_t res;
  rc = replay_run(&cfg.sys, &trace, opts->workload_path, flow, true, &res, err->msg,
                  sizeof err->msg);
  bool ran = rc == 0;
  if (ran && opts->chrome_trace &&
      replay_write_chrome(opts->chrome_trace, &trace, &res, 0, trace.ranks - 1, err->msg,
                          sizeof err->msg))
    rc = CMD_CANNOT_WRITE;
  if (rc == 0)
    print_result(out, opts->format, &cfg.sys, &cfg.wl, &info, &res,
                 cli_fidelity_names[opts->fidelity], &trace);
  if (ran)
    replay_result_free(&res, &trace);
  trace_free(&trace);
  train_info_free(&info);
  cli_free_configs(&cfg);
  return rc;
}
