/* cmd_train.c - `npusim train`: a transformer and its parallel plan become rank
 * programs (workloads/train_gen.c), which are replayed on the system; the step
 * time becomes throughput, MFU, a breakdown of where the time went, and the
 * memory each stage needs against HBM. What each op and program is for comes
 * from the generator (train_program_t); this file only sweeps and prints.
 * --emit-trace writes the programs as a trace file that `npusim replay` runs. */
#include <stdlib.h>
#include <string.h>

#include "chakra.h"
#include "commands.h"
#include "intervals.h"
#include "jsonfile.h"
#include "op_list.h"
#include "replay.h"
#include "replay_energy.h"
#include "time_limit.h"
#include "train_gen.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* The breakdown's names of the generator's parts of the step. */
static const char *const part_names[TRAIN_PART_COUNT] = {
    [TRAIN_PART_COMPUTE] = "compute",
    [TRAIN_PART_TP] = "exposed_tp_comm",
    [TRAIN_PART_DP] = "exposed_dp_comm",
    [TRAIN_PART_PP] = "exposed_pp_comm",
    [TRAIN_PART_EP] = "exposed_ep_comm",
    [TRAIN_PART_CP] = "exposed_cp_comm",
    [TRAIN_PART_OPTIMIZER] = "optimizer"};

/* The breakdown's extra category: time a rank waits at a collective for a
 * slower peer (start to ready of a TP, DP, EP or CP collective), claimed after
 * every part; a wait for a pipeline neighbour stays in the bubble. */
#define PART_WAIT TRAIN_PART_COUNT
#define NCATEGORIES (TRAIN_PART_COUNT + 1)

/* Each instant of the step goes to one category, so the parts add up to the
 * step: compute first, then the communication kinds in this order (what the
 * compute stream most likely waits on first), then waiting for stragglers;
 * idle time is the bubble. */
static const int claim_order[NCATEGORIES] = {
    TRAIN_PART_COMPUTE, TRAIN_PART_OPTIMIZER, TRAIN_PART_TP, TRAIN_PART_CP,
    TRAIN_PART_EP,      TRAIN_PART_PP,        TRAIN_PART_DP, PART_WAIT};

typedef struct {
  double part[TRAIN_PART_COUNT];
  double straggler_wait, bubble;
} breakdown_t;

typedef struct {
  double out[NCATEGORIES], busy;
} claim_t;

/* A stretch of the timeline goes to the first open category in claim order. */
static void claim_stretch(void *ctx, double dt, const int *open, double rate) {
  (void)rate;
  claim_t *cl = ctx;
  int c = 0;
  while (c < NCATEGORIES && !open[claim_order[c]])
    c++;
  if (c < NCATEGORIES) {
    cl->out[claim_order[c]] += dt;
    cl->busy += dt;
  }
}

static bool waits_for_peers(train_part_t part) {
  return part == TRAIN_PART_TP || part == TRAIN_PART_DP || part == TRAIN_PART_EP ||
         part == TRAIN_PART_CP;
}

/* Sweeps a rank's timeline: compute and optimizer time as they run, each kind
 * of communication where no compute hides it, the waits at collectives for
 * slower peers, and the idle rest (the bubble). */
static void breakdown(const trace_t *t, const train_info_t *info, const replay_result_t *r,
                      int rank, breakdown_t *b) {
  int pi = t->program_of[rank];
  const trace_program_t *p = &t->programs[pi];
  const train_part_t *parts = info->programs[pi].parts;
  interval_edge_t *e = malloc(((size_t)p->nops * 4 + 1) * sizeof *e);
  int n = 0, open[NCATEGORIES];
  for (int i = 0; i < p->nops; i++) {
    train_part_t part = parts[i];
    const replay_span_t *sp = &r->spans[replay_stand_in(r, t, rank)][i];
    /* communication counts from when its peers were there: waiting for a
     * pipeline neighbour is bubble, not communication */
    bool compute = part == TRAIN_PART_COMPUTE || part == TRAIN_PART_OPTIMIZER;
    double start = compute ? sp->start_s : sp->ready_s;
    if (part != TRAIN_PART_NONE && sp->end_s > start)
      intervals_add(e, &n, start, sp->end_s, (int)part, 0);
    if (waits_for_peers(part) && sp->ready_s > sp->start_s)
      intervals_add(e, &n, sp->start_s, sp->ready_s, PART_WAIT, 0);
  }
  claim_t cl = {{0}, 0};
  intervals_sweep(e, n, NCATEGORIES, open, claim_stretch, &cl);
  memcpy(b->part, cl.out, sizeof b->part);
  b->straggler_wait = cl.out[PART_WAIT];
  b->bubble = r->step_time_s - cl.busy;
  free(e);
}

/* The first rank of pipeline stage s at context-parallel position 0, as the
 * generator says which program is which. */
static int stage_rank(const trace_t *t, const train_info_t *info, int s) {
  for (int pi = 0; pi < info->nprograms; pi++)
    if (info->programs[pi].stage == s && info->programs[pi].cp_pos == 0)
      return t->programs[pi].ranks[0];
  return 0; /* not reached: the generator makes a program per stage and position */
}

static void print_stages_json(FILE *out, const trace_t *t, const train_info_t *info,
                              const replay_result_t *r) {
  fprintf(out, ",\n  \"stages\": [");
  for (int s = 0; s < info->stages; s++) {
    breakdown_t b;
    breakdown(t, info, r, stage_rank(t, info, s), &b);
    fprintf(out, "%s\n    {\"stage\": %d", s ? "," : "", s);
    for (int c = 0; c < TRAIN_PART_COUNT; c++)
      fprintf(out, ", \"%s\": %.9g", part_names[c], b.part[c]);
    fprintf(out, ", \"straggler_wait\": %.9g, \"pipeline_bubble\": %.9g}", b.straggler_wait,
            b.bubble);
  }
  fprintf(out, "\n  ]");
}

/* One line per pipeline stage (its first rank), ms, when there is a pipeline. */
static void print_stages_table(FILE *out, const trace_t *t, const train_info_t *info,
                               const replay_result_t *r) {
  if (info->stages == 1)
    return;
  fprintf(out, "\nper pipeline stage, its first rank (ms):\n  stage %11s %10s %10s %10s "
               "%10s %10s %10s %10s %10s\n", "compute", "tp", "dp", "pp", "ep", "cp", "optimizer",
          "wait", "bubble");
  for (int s = 0; s < info->stages; s++) {
    breakdown_t b;
    breakdown(t, info, r, stage_rank(t, info, s), &b);
    fprintf(out, "  %5d ", s);
    for (int c = 0; c < TRAIN_PART_COUNT; c++)
      fprintf(out, " %10.1f", b.part[c] * 1e3);
    fprintf(out, " %10.1f %10.1f\n", b.straggler_wait * 1e3, b.bubble * 1e3);
  }
}

/* One row per pipeline stage (its first rank's breakdown), the step's figures
 * repeated on each, so a sweep can stack the rows of many runs. */
static void print_csv(FILE *out, const system_cfg_t *sys, const workload_cfg_t *w,
                      const train_info_t *info, const replay_result_t *r, const trace_t *t,
                      const double figures[7], const train_memory_t *peak, bool fits) {
  fputs("workload,system,npus,step_time_s,tokens_per_s,tokens_per_s_per_npu,"
        "model_tflops_per_npu,hw_tflops_per_npu,mfu,energy_J,tokens_per_J,peak_memory_GiB,fits,"
        "stage,stage_rank", out);
  for (int c = 0; c < TRAIN_PART_COUNT; c++)
    fprintf(out, ",%s_s", part_names[c]);
  fputs(",straggler_wait_s,pipeline_bubble_s,stage_memory_GiB\n", out);
  for (int s = 0; s < info->stages; s++) {
    breakdown_t b;
    int rank = stage_rank(t, info, s);
    breakdown(t, info, r, rank, &b);
    out_csv_field(out, w->model.name, ",");
    out_csv_field(out, sys->name, ",");
    fprintf(out, "%ld,%.9g,%.6g,%.6g,%.6g,%.6g,%.6g,%.9g,%.6g,%.6g,%s,%d,%d", info->world,
            r->step_time_s, figures[0], figures[1], figures[2], figures[3], figures[4],
            figures[5], figures[6], peak->total / GIB, fits ? "true" : "false", s, rank);
    for (int c = 0; c < TRAIN_PART_COUNT; c++)
      fprintf(out, ",%.9g", b.part[c]);
    fprintf(out, ",%.9g,%.9g,%.6g\n", b.straggler_wait, b.bubble, info->memory[s].total / GIB);
  }
}

/* Peak FLOP/s per NPU the MFU divides by: the chip's, or with node types the
 * mean over the job's ranks of their chips' peaks. */
static double job_peak_flops(const system_cfg_t *sys, const topo_t *topo, chip_dtype_t dt) {
  if (sys->cluster.node_types.n == 0)
    return chip_cube_peak_flops(&sys->chip, dt);
  double sum = 0;
  for (int rank = 0; rank < topo->ranks; rank++)
    sum += chip_cube_peak_flops(
        config_chip_at(sys, config_server_chip_index(sys, topo_server_of(topo, rank))), dt);
  return sum / topo->ranks;
}

/* With node types: each stage's memory against the HBM of each chip that runs
 * it; the stage and capacity with the least room left (the fullest stage on
 * its own chip when one fits nowhere else). */
static void tightest_stage(const system_cfg_t *sys, const trace_t *t, const train_info_t *info,
                           const topo_t *topo, train_memory_t *peak, double *cap) {
  bool first = true;
  for (int pi = 0; pi < t->nprograms; pi++) {
    const train_memory_t *m = &info->memory[info->programs[pi].stage];
    for (int k = 0; k < t->programs[pi].nranks; k++) {
      int server = topo_server_of(topo, t->programs[pi].ranks[k]);
      double c = (double)config_chip_at(sys, config_server_chip_index(sys, server))
                     ->hbm.capacity_bytes;
      if (first || c - m->total < *cap - peak->total) {
        *peak = *m;
        *cap = c;
        first = false;
      }
    }
  }
}

static void print_result(FILE *out, int format, const system_cfg_t *sys, const workload_cfg_t *w,
                         const train_info_t *info, const replay_result_t *r, const char *fidelity,
                         const trace_t *t, const linkstats_view_t *links) {
  double step = r->step_time_s, npus = (double)info->world;
  double tps = info->tokens / step, model_tf = info->model_flops / step / npus / 1e12;
  double hw_tf = info->hw_flops / step / npus / 1e12;
  chip_dtype_t dt = w->training.precision == PRECISION_FP16 ? CHIP_DTYPE_FP16
                    : w->training.precision == PRECISION_FP8 ? CHIP_DTYPE_FP8 : CHIP_DTYPE_BF16;
  double mfu = model_tf * 1e12 / job_peak_flops(sys, &r->topo, dt);
  breakdown_t b;
  breakdown(t, info, r, 0, &b);
  train_memory_t peak = info->memory[0];
  for (int s = 1; s < info->stages; s++)
    if (info->memory[s].total > peak.total)
      peak = info->memory[s];
  double cap = (double)sys->chip.hbm.capacity_bytes;
  if (sys->cluster.node_types.n > 0)
    tightest_stage(sys, t, info, &r->topo, &peak, &cap);
  bool fits = peak.total <= cap;
  replay_energy_t en;
  replay_energy(sys, t, r, &en);
  double watts = en.total_J / step / npus, tokens_per_J = en.total_J > 0 ? info->tokens / en.total_J : 0;
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
    for (int c = 0; c < TRAIN_PART_COUNT; c++)
      fprintf(out, "%s\"%s\": %.9g", c ? ", " : "", part_names[c], b.part[c]);
    fprintf(out, ", \"straggler_wait\": %.9g, \"pipeline_bubble\": %.9g}", b.straggler_wait,
            b.bubble);
    print_stages_json(out, t, info, r);
    fprintf(out, ",\n  \"memory\": {\"weights_GiB\": %.6g, "
            "\"gradients_GiB\": %.6g, \"optimizer_GiB\": %.6g, \"activations_GiB\": %.6g, "
            "\"temporary_GiB\": %.6g, \"peak_GiB\": %.6g, \"capacity_GiB\": %.6g, \"fits\": %s, "
            "\"overshoot_GiB\": %.6g},\n  ", peak.weights / GIB, peak.gradients / GIB,
            peak.optimizer / GIB, peak.activations / GIB, peak.temporary / GIB, peak.total / GIB,
            cap / GIB, fits ? "true" : "false", fits ? 0 : (peak.total - cap) / GIB);
    fprintf(out, "\"energy\": {\"modelled\": %s, \"step_J\": %.9g, \"idle_J\": %.9g, "
            "\"compute_J\": %.9g, \"hbm_J\": %.9g, \"links_J\": %.9g, "
            "\"avg_power_W_per_npu\": %.6g, \"tokens_per_J\": %.6g},\n  \"links\": ",
            en.modelled ? "true" : "false", en.total_J, en.idle_J, en.compute_J, en.hbm_J,
            en.links_J, watts, tokens_per_J);
    linkstats_view_t all = {LINKSTATS_ALL, 0}; /* JSON lists every link */
    link_stat_t *ls = NULL;
    int nls = linkstats_rank(&r->links, step, &all, &ls);
    linkstats_print_json(out, &r->topo, ls, nls);
    fputs("\n}\n", out);
    free(ls);
    return;
  }
  if (format == FORMAT_CSV) {
    double figures[7] = {tps, tps / npus, model_tf, hw_tf, mfu, en.total_J, tokens_per_J};
    print_csv(out, sys, w, info, r, t, figures, &peak, fits);
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
  if (en.modelled)
    fprintf(out, "energy per step      %12.1f kJ (%.0f W per NPU, %.2f tokens/J): idle %.1f, "
            "compute %.1f, HBM %.1f, links %.1f kJ\n", en.total_J / 1e3, watts, tokens_per_J,
            en.idle_J / 1e3, en.compute_J / 1e3, en.hbm_J / 1e3, en.links_J / 1e3);
  fprintf(out, "\nwhere rank 0's step went (ms):\n");
  for (int c = 0; c < TRAIN_PART_COUNT; c++)
    fprintf(out, "  %-18s %10.3f\n", part_names[c], b.part[c] * 1e3);
  fprintf(out, "  %-18s %10.3f\n", "straggler_wait", b.straggler_wait * 1e3);
  fprintf(out, "  %-18s %10.3f\n", "pipeline_bubble", b.bubble * 1e3);
  print_stages_table(out, t, info, r);
  fprintf(out, "\nmemory per NPU, %s (GiB): weights %.2f, gradients %.2f, optimizer "
          "%.2f, activations %.2f, temporary %.2f = %.2f of %.1f: %s",
          sys->cluster.node_types.n ? "tightest stage on its chip" : "fullest stage",
          peak.weights / GIB,
          peak.gradients / GIB, peak.optimizer / GIB, peak.activations / GIB,
          peak.temporary / GIB, peak.total / GIB, cap / GIB, fits ? "fits\n" : "");
  if (!fits)
    fprintf(out, "does NOT fit, %.2f GiB over\n", (peak.total - cap) / GIB);
  if (links) {
    link_stat_t *ls = NULL;
    int nls = linkstats_rank(&r->links, step, links, &ls);
    fprintf(out, "\n# %s links\n", links->rows == LINKSTATS_ALL ? "all used" : "most utilised");
    linkstats_print_table(out, &r->topo, ls, nls);
    free(ls);
  }
}

typedef struct {
  const train_info_t *info;
  const trace_t *trace;
} namer_t;

static void name_op(const void *ctx, int pi, int i, char *buf, size_t len) {
  const namer_t *n = ctx;
  train_op_name(n->info, n->trace, &replay_vocab, pi, i, buf, len);
}

/* The step's timeline, its slices named by layer, micro-batch and pass. */
static int write_timeline(const cli_opts_t *opts, const system_cfg_t *sys, const trace_t *trace,
                          const train_info_t *info, const replay_result_t *res, int first,
                          int last, npu_err_t *err) {
  namer_t namer = {info, trace};
  replay_chrome_opts_t copts = {.first_rank = first, .last_rank = last, .sys = sys,
                                .name = name_op, .name_ctx = &namer,
                                .progress = opts->progress};
  return replay_write_chrome(opts->chrome_trace, trace, res, &copts, err->msg, sizeof err->msg);
}

typedef struct {
  const trace_t *trace;
  const replay_result_t *res;
  const variation_cfg_t *variation;
} spans_t;

/* How long op i of rank r ran, for the Chakra export, and how long it takes at
 * the chip model's speed: the replay divided compute ops by the rank's speed
 * factor and stretched them by their jitter (replay_timed_s), which a replay
 * of the ETs on the same system does again. */
static void op_duration(const void *ctx, int rank, int i, double *ran_s, double *nominal_s) {
  const spans_t *s = ctx;
  const replay_span_t *sp = &s->res->spans[replay_stand_in(s->res, s->trace, rank)][i];
  trace_op_type_t type = s->trace->programs[s->trace->program_of[rank]].ops[i].type;
  *ran_s = *nominal_s = sp->end_s - sp->start_s;
  if ((type == TRACE_OP_SHAPED || type == TRACE_OP_COMPUTE) && variation_active(s->variation))
    *nominal_s =
        *ran_s * variation_speed(s->variation, rank) / variation_jitter(s->variation, rank, i);
}

int cmd_train(const cli_opts_t *opts, FILE *out, npu_err_t *err) {
  if (!opts->workload_path)
    return npu_err_set(err, "npusim train: expected --workload FILE, found none");
  cli_configs_t cfg;
  if (cli_load_configs(opts, &cfg, err))
    return -1;
  const char *refused = train_refusal(&cfg.wl);
  if (refused) {
    npu_err_set(err, "%s: %s", opts->workload_path, refused);
    cli_free_configs(&cfg);
    return -1;
  }
  trace_t trace;
  train_info_t info;
  int rc = train_generate(&cfg.wl, &replay_vocab, cfg.sys.node.npus, &trace, &info, err->msg,
                          sizeof err->msg);
  if (rc) {
    cli_free_configs(&cfg);
    return -1;
  }
  int first, last;
  linkstats_view_t links;
  if (cli_trace_ranks(opts, trace.ranks, &first, &last, err) ||
      (opts->links_kind && !opts->links &&
       npu_err_set(err, "--links-kind: expected --links with it, found none")) ||
      linkstats_parse_view(opts->links_rows, opts->links_kind, &links, err->msg,
                           sizeof err->msg)) {
    trace_free(&trace);
    train_info_free(&info);
    cli_free_configs(&cfg);
    return -1;
  }
  bool flow = opts->fidelity == FIDELITY_FLOW;
  replay_result_t res;
  replay_opts_t ropts = replay_opts(flow, true);
  ropts.system_file = opts->system_path;
  progress_t progress;
  progress_start(&progress, opts->progress, "npusim train", "ops", 0);
  ropts.progress = &progress;
  rc = replay_run(&cfg.sys, &trace, opts->workload_path, &ropts, &res, err->msg,
                  sizeof err->msg);
  progress_end(&progress);
  bool ran = rc == 0;
  if (ran) /* the files are written whole once the run is done: the deadline ends here */
    time_limit_off();
  if (ran && ((opts->list_ops && op_list_write(opts->list_ops, &trace, err->msg, sizeof err->msg)) ||
              (opts->emit_trace &&
               trace_write(&trace, &replay_vocab, opts->emit_trace, err->msg, sizeof err->msg)) ||
              (opts->emit_chakra &&
               chakra_write(opts->emit_chakra, &trace, &replay_vocab, op_duration,
                            &(spans_t){&trace, &res, &cfg.sys.variation}, err->msg,
                            sizeof err->msg)) ||
              (opts->chrome_trace && write_timeline(opts, &cfg.sys, &trace, &info,
                                                    &res, first, last, err))))
    rc = CMD_CANNOT_WRITE;
  if (rc == 0)
    print_result(out, opts->format, &cfg.sys, &cfg.wl, &info, &res,
                 cli_fidelity_names[opts->fidelity], &trace, opts->links ? &links : NULL);
  if (ran)
    replay_result_free(&res, &trace);
  trace_free(&trace);
  train_info_free(&info);
  cli_free_configs(&cfg);
  return rc;
}

const cli_option_t cmd_train_options[] = {
    CLI_GROUP(cli_options_system),
    CLI_GROUP(cli_options_workload),
    CLI_GROUP(cli_options_set),
    CLI_GROUP(cli_options_format),
    CLI_GROUP(cli_options_fidelity),
    CLI_GROUP(cli_options_output),
    CLI_GROUP(cli_options_timeline),
    CLI_GROUP(cli_options_links),
    CLI_GROUP(cli_options_progress),
    CLI_STRING("emit-chakra", "PREFIX", emit_chakra,
               "also write the step as Chakra ETs, PREFIX.<rank>.et,\n"
               "and PREFIX.comm_groups.json (ASTRA-sim's inputs)"),
    CLI_STRING("list-ops", "FILE.csv", list_ops,
               "also write the distinct compute ops of the step, in\n"
               "scripts/measure_ops.py's --ops format"),
    CLI_STRING("emit-trace", "FILE", emit_trace,
               "also write the step's rank programs as a trace\n"
               "(.json or .json.gz) that replay --trace runs"),
    CLI_END};
