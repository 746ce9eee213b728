/* serve_report.c - summaries and outputs of a serving run; see serve_report.h. */
#include "serve_report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jsonfile.h"
#include "outfile.h"
#include "power.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* The range of an SLO, ms: a microsecond to about 11.6 days. */
#define SLO_MIN_MS 1e-3
#define SLO_MAX_MS 1e9

int serve_slo_parse(const char *text, serve_slo_t *slo, npu_err_t *err) {
  *slo = (serve_slo_t){0, 0};
  for (const char *p = text;; p++) {
    size_t n = strcspn(p, "=,"), len = n + strcspn(p + n, ",");
    if (p[n] != '=')
      return npu_err_set(err, "--slo: expected ttft_ms=T,tpot_ms=P, found \"%s\"", text), -1;
    double *limit = n == 7 && strncmp(p, "ttft_ms", n) == 0   ? &slo->ttft_s
                    : n == 7 && strncmp(p, "tpot_ms", n) == 0 ? &slo->tpot_s
                                                              : NULL;
    if (!limit)
      return npu_err_set(err, "--slo: expected ttft_ms or tpot_ms, found \"%.*s\"", (int)n,
                      p),
             -1;
    if (*limit > 0)
      return npu_err_set(err, "--slo: %.*s: expected it once, found it twice", (int)n, p), -1;
    char value[64];
    double v;
    snprintf(value, sizeof value, "%.*s", (int)(len - n - 1), p + n + 1);
    if (len - n - 1 >= sizeof value || !jsonfile_decimal(value, &v) || !(v >= SLO_MIN_MS) ||
        !(v <= SLO_MAX_MS))
      return npu_err_set(err, "--slo: %.*s: expected a number of ms in [0.001, 1e9], found \"%.*s\"",
                      (int)n, p, (int)(len - n - 1), p + n + 1),
             -1;
    *limit = v / 1e3;
    p += len;
    if (*p == '\0')
      return 0;
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Percentile q of sorted v[n] with linear interpolation between ranks. */
static double percentile(const double *v, long n, double q) {
  if (n == 0)
    return 0;
  double pos = q * (double)(n - 1);
  long lo = (long)floor(pos);
  long hi = lo + 1 < n ? lo + 1 : lo;
  /* kept inside its two ranks, which rounding could leave by an ulp: the
   * percentiles stay ordered */
  return fmin(fmax(v[lo] + (v[hi] - v[lo]) * (pos - (double)lo), v[lo]), v[hi]);
}

static void distribution(double *v, long n, serve_dist_t *d) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  double sum = 0;
  for (long i = 0; i < n; i++)
    sum += v[i];
  double lo = n ? v[0] : 0, hi = n ? v[n - 1] : 0;
  /* the sum's rounding can put the mean of equal values an ulp past them */
  double mean = fmin(fmax(n ? sum / (double)n : 0, lo), hi);
  *d = (serve_dist_t){
      mean, percentile(v, n, 0.5), percentile(v, n, 0.9), percentile(v, n, 0.99), lo, hi};
}

static double tpot_of(const serve_req_result_t *q) {
  return q->output_tokens > 1 ? q->decode_s / (q->output_tokens - 1) : 0;
}

/* Which limits of slo request q missed: SLO_MISSED_TTFT | SLO_MISSED_TPOT, or 0. */
enum { SLO_MISSED_TTFT = 1, SLO_MISSED_TPOT = 2 };
static int slo_missed(const serve_slo_t *slo, const serve_req_result_t *q) {
  return (slo->ttft_s > 0 && !(q->ttft_s <= slo->ttft_s) ? SLO_MISSED_TTFT : 0) |
         (slo->tpot_s > 0 && !(tpot_of(q) <= slo->tpot_s) ? SLO_MISSED_TPOT : 0);
}

int serve_summarise(const serve_sim_result_t *r, long npus, long instances, const serve_slo_t *slo,
                    const chip_cfg_t *chip, double switch_W, serve_summary_t *out) {
  memset(out, 0, sizeof *out);
  double *ttft = malloc((size_t)(r->nreq + 1) * sizeof *ttft);
  double *tpot = malloc((size_t)(r->nreq + 1) * sizeof *tpot);
  double *e2e = malloc((size_t)(r->nreq + 1) * sizeof *e2e);
  if (!ttft || !tpot || !e2e) {
    free(ttft);
    free(tpot);
    free(e2e);
    return -1;
  }
  long n = 0, ntpot = 0;
  double in_tokens = 0, out_tokens = 0;
  for (long i = 0; i < r->nreq; i++) {
    const serve_req_result_t *q = &r->req[i];
    if (isnan(q->e2e_s))
      continue;
    ttft[n] = q->ttft_s;
    e2e[n] = q->e2e_s;
    if (q->output_tokens > 1)
      tpot[ntpot++] = tpot_of(q);
    in_tokens += q->prompt_tokens;
    out_tokens += q->output_tokens;
    out->good += slo_missed(slo, q) == 0;
    n++;
  }
  out->completed = n;
  out->npus = npus;
  out->instances = instances;
  double span = r->makespan_s > 0 ? r->makespan_s : 1;
  out->requests_per_s = (double)n / span;
  out->input_tokens_per_s = in_tokens / span;
  out->output_tokens_per_s = out_tokens / span;
  out->output_tokens_per_s_per_npu = out->output_tokens_per_s / (double)npus;
  out->input_tokens_per_s_per_npu = out->input_tokens_per_s / (double)npus;
  out->output_tokens_per_s_per_instance = out->output_tokens_per_s / (double)instances;
  out->energy_modelled = power_modelled(chip);
  out->idle_J = (chip->power.idle_W * (double)npus + switch_W) * r->makespan_s;
  out->energy_J = out->idle_J + r->dynamic_J;
  out->avg_power_W_per_npu = out->energy_J / span / (double)npus;
  out->J_per_output_token = out_tokens > 0 ? out->energy_J / out_tokens : 0;
  out->goodput_per_s = (double)out->good / span;
  out->goodput_per_s_per_npu = out->goodput_per_s / (double)npus;
  distribution(ttft, n, &out->ttft_s);
  distribution(tpot, ntpot, &out->tpot_s);
  distribution(e2e, n, &out->e2e_s);
  free(ttft);
  free(tpot);
  free(e2e);
  return 0;
}

/* ---- the report ---- */

static const char *const dist_names[3] = {"ttft", "tpot", "e2e"};

static const serve_dist_t *dist_of(const serve_summary_t *s, int k) {
  return k == 0 ? &s->ttft_s : k == 1 ? &s->tpot_s : &s->e2e_s;
}

/* The mean step of a kind and its parts; its mean batch to *batch. */
static double mean_step(const serve_step_stats_t *st, double parts[SERVE_PART_COUNT],
                        double *batch) {
  double total = 0, n = st->iterations ? (double)st->iterations : 1;
  for (int k = 0; k < SERVE_PART_COUNT; k++) {
    parts[k] = st->parts.s[k] / n;
    total += parts[k];
  }
  *batch = st->batch_sum / n;
  return total;
}

static const char *const step_names[2] = {"decode", "prefill"};

static const serve_step_stats_t *step_of(const serve_sim_result_t *r, int k) {
  return k == 0 ? &r->decode : &r->prefill;
}

static void report_table(FILE *out, const serve_report_ctx_t *ctx, const serve_sim_result_t *r,
                         const serve_summary_t *s) {
  fprintf(out, "npusim serve: %s on %s, %ld NPUs in %ld instances\n", ctx->workload, ctx->system,
          s->npus, s->instances);
  fprintf(out, "\n%-9s %-7s %-6s %-4s %-4s %-4s %11s %11s %11s %13s %10s\n", "pool", "inst", "tp",
          "pp", "dp", "ep", "weights_GiB", "activ_GiB", "kv_GiB", "kv_tokens/grp", "KiB/token");
  for (int k = 0; k < ctx->npools; k++) {
    const serve_sim_pool_t *p = &ctx->pools[k];
    const serve_memory_t *m = serve_cost_memory(p->cost);
    fprintf(out, "%-9s %-7d %-6d %-4d %-4d %-4d %11.2f %11.2f %11.2f %13ld %10.1f\n",
            serve_pool_kind_names[p->kind], p->plan->instances, p->plan->tp, p->plan->pp,
            p->plan->dp, p->plan->ep, m->weights / GIB, m->activations / GIB, m->kv_capacity / GIB,
            m->kv_blocks * ctx->block_tokens, m->kv_per_token / 1024);
  }
  for (int k = 0; k < ctx->npools; k++) /* on a system with node types: each pool's chip */
    if (ctx->pools[k].chip)
      fprintf(out, "%s%s on %s (ranks %d-%ld)%s", k ? ", " : "chips     ",
              serve_pool_kind_names[ctx->pools[k].kind], ctx->pools[k].chip,
              ctx->pools[k].first_rank,
              ctx->pools[k].first_rank +
                  serve_pool_npus(ctx->pools[k].plan) * ctx->pools[k].plan->instances - 1,
              k == ctx->npools - 1 ? "\n" : "");
  fprintf(out, "\nrequests %ld of %ld completed in %.3f s; %ld iterations, %ld preemptions",
          s->completed, r->nreq, r->makespan_s, r->iterations, r->preemptions);
  if (r->kv_transfers)
    fprintf(out, ", %ld KV transfers (mean %.3f ms)", r->kv_transfers,
            r->kv_transfer_s / (double)r->kv_transfers * 1e3);
  fprintf(out, "\n\n%-14s %10s %10s %10s %10s\n", "latency (ms)", "mean", "p50", "p90", "p99");
  for (int k = 0; k < 3; k++) {
    const serve_dist_t *d = dist_of(s, k);
    fprintf(out, "%-14s %10.2f %10.2f %10.2f %10.2f\n", dist_names[k], d->mean * 1e3, d->p50 * 1e3,
            d->p90 * 1e3, d->p99 * 1e3);
  }
  fprintf(out,
          "\nthroughput  %.1f output tokens/s (%.1f per NPU, %.1f per instance), %.1f input "
          "tokens/s (%.1f per NPU), %.3f requests/s\n",
          s->output_tokens_per_s, s->output_tokens_per_s_per_npu,
          s->output_tokens_per_s_per_instance, s->input_tokens_per_s, s->input_tokens_per_s_per_npu,
          s->requests_per_s);
  if (s->energy_modelled)
    fprintf(out, "energy      %.1f kJ (%.0f W per NPU, %.4f J per output token)\n",
            s->energy_J / 1e3, s->avg_power_W_per_npu, s->J_per_output_token);
  if (ctx->slo->ttft_s > 0 || ctx->slo->tpot_s > 0)
    fprintf(out,
            "goodput     %.3f requests/s (%.4f per NPU): %ld of %ld within ttft <= %g ms, "
            "tpot <= %g ms\n",
            s->goodput_per_s, s->goodput_per_s_per_npu, s->good, s->completed,
            ctx->slo->ttft_s * 1e3, ctx->slo->tpot_s * 1e3);
  for (int k = 0; k < 2; k++) {
    double parts[SERVE_PART_COUNT], batch, step = mean_step(step_of(r, k), parts, &batch);
    if (step_of(r, k)->iterations == 0)
      continue;
    fprintf(out, "%s%s step %8.3f ms at a mean batch of %.1f %s per instance:", k ? "" : "\n",
            step_names[k], step * 1e3, batch, k ? "tokens" : "sequences");
    for (int j = 0; j < SERVE_PART_COUNT; j++)
      fprintf(out, " %s %.3f (%.0f%%)", serve_part_names[j], parts[j] * 1e3,
              step > 0 ? parts[j] / step * 100 : 0);
    fprintf(out, "\n");
  }
}

static void report_json(FILE *out, const serve_report_ctx_t *ctx, const serve_sim_result_t *r,
                        const serve_summary_t *s) {
  fprintf(out, "{\n  \"system\": ");
  jsonfile_write_string(out, ctx->system);
  fprintf(out, ",\n  \"workload\": ");
  jsonfile_write_string(out, ctx->workload);
  fprintf(out, ",\n  \"npus\": %ld,\n  \"instances\": %ld,\n  \"pools\": [", s->npus, s->instances);
  for (int k = 0; k < ctx->npools; k++) {
    const serve_sim_pool_t *p = &ctx->pools[k];
    const serve_memory_t *m = serve_cost_memory(p->cost);
    fprintf(out,
            "%s\n    {\"kind\": \"%s\", \"instances\": %d, \"tp\": %d, \"pp\": %d, \"dp\": "
            "%d, \"ep\": %d, \"weights_GiB\": %.6g, \"activations_GiB\": %.6g, "
            "\"kv_cache_GiB\": %.6g, \"kv_bytes_per_token\": %.9g, \"kv_blocks_per_group\": "
            "%ld",
            k ? "," : "", serve_pool_kind_names[p->kind], p->plan->instances, p->plan->tp,
            p->plan->pp, p->plan->dp, p->plan->ep, m->weights / GIB, m->activations / GIB,
            m->kv_capacity / GIB, m->kv_per_token, m->kv_blocks);
    if (p->chip) { /* on a system with node types */
      fprintf(out, ", \"chip\": ");
      jsonfile_write_string(out, p->chip);
      fprintf(out, ", \"first_rank\": %d", p->first_rank);
    }
    fprintf(out, "}");
  }
  fprintf(out,
          "\n  ],\n  \"requests\": %ld,\n  \"completed\": %ld,\n  \"makespan_s\": %.9g,\n"
          "  \"iterations\": %ld,\n  \"preemptions\": %ld,\n  \"kv_transfers\": %ld,\n"
          "  \"kv_transfer_mean_s\": %.9g,\n",
          r->nreq, s->completed, r->makespan_s, r->iterations, r->preemptions, r->kv_transfers,
          r->kv_transfers ? r->kv_transfer_s / (double)r->kv_transfers : 0);
  for (int k = 0; k < 3; k++) {
    const serve_dist_t *d = dist_of(s, k);
    fprintf(out,
            "  \"%s_s\": {\"mean\": %.9g, \"p50\": %.9g, \"p90\": %.9g, \"p99\": %.9g, "
            "\"min\": %.9g, \"max\": %.9g},\n",
            dist_names[k], d->mean, d->p50, d->p90, d->p99, d->min, d->max);
  }
  fprintf(out,
          "  \"requests_per_s\": %.9g,\n  \"input_tokens_per_s\": %.9g,\n"
          "  \"output_tokens_per_s\": %.9g,\n  \"input_tokens_per_s_per_npu\": %.9g,\n"
          "  \"output_tokens_per_s_per_npu\": %.9g,\n"
          "  \"output_tokens_per_s_per_instance\": %.9g,\n",
          s->requests_per_s, s->input_tokens_per_s, s->output_tokens_per_s,
          s->input_tokens_per_s_per_npu, s->output_tokens_per_s_per_npu,
          s->output_tokens_per_s_per_instance);
  fprintf(out,
          "  \"energy\": {\"modelled\": %s, \"total_J\": %.9g, \"idle_J\": %.9g, "
          "\"avg_power_W_per_npu\": %.6g, \"J_per_output_token\": %.6g},\n",
          s->energy_modelled ? "true" : "false", s->energy_J, s->idle_J, s->avg_power_W_per_npu,
          s->J_per_output_token);
  fprintf(out,
          "  \"slo\": {\"ttft_s\": %.9g, \"tpot_s\": %.9g},\n  \"good_requests\": %ld,\n"
          "  \"goodput_per_s\": %.9g,\n  \"goodput_per_s_per_npu\": %.9g,\n",
          ctx->slo->ttft_s, ctx->slo->tpot_s, s->good, s->goodput_per_s, s->goodput_per_s_per_npu);
  for (int k = 0; k < 2; k++) {
    double parts[SERVE_PART_COUNT], batch, step = mean_step(step_of(r, k), parts, &batch);
    fprintf(out, "%s  \"%s_step\": {\"iterations\": %ld, \"%s\": %.9g, \"time_s\": %.9g",
            k ? ",\n" : "", step_names[k], step_of(r, k)->iterations,
            k ? "mean_tokens" : "mean_batch", batch, step);
    if (step_of(r, k)->token_sum > 0) /* speculative decoding: tokens per decode step */
      fprintf(out, ", \"mean_tokens\": %.9g",
              step_of(r, k)->token_sum / (double)step_of(r, k)->iterations);
    for (int j = 0; j < SERVE_PART_COUNT; j++)
      fprintf(out, ", \"%s_s\": %.9g", serve_part_names[j], parts[j]);
    fprintf(out, "}");
  }
  fprintf(out, "\n}\n");
}

static void report_csv(FILE *out, const serve_report_ctx_t *ctx, const serve_sim_result_t *r,
                       const serve_summary_t *s) {
  fprintf(out, "system,workload,npus,instances,requests,completed,makespan_s,preemptions");
  for (int k = 0; k < 3; k++)
    fprintf(out, ",%s_mean_s,%s_p50_s,%s_p90_s,%s_p99_s", dist_names[k], dist_names[k],
            dist_names[k], dist_names[k]);
  fprintf(out, ",output_tokens_per_s,output_tokens_per_s_per_npu,input_tokens_per_s_per_npu,"
               "goodput_per_s,goodput_per_s_per_npu,decode_step_s,decode_mean_batch,prefill_step_s,"
               "prefill_mean_tokens\n");
  out_csv_field(out, ctx->system, ",");
  out_csv_field(out, ctx->workload, ",");
  fprintf(out, "%ld,%ld,%ld,%ld,%.9g,%ld", s->npus, s->instances, r->nreq, s->completed,
          r->makespan_s, r->preemptions);
  for (int k = 0; k < 3; k++) {
    const serve_dist_t *d = dist_of(s, k);
    fprintf(out, ",%.9g,%.9g,%.9g,%.9g", d->mean, d->p50, d->p90, d->p99);
  }
  double parts[SERVE_PART_COUNT], batch, step = mean_step(&r->decode, parts, &batch);
  double pparts[SERVE_PART_COUNT], ptokens, pstep = mean_step(&r->prefill, pparts, &ptokens);
  fprintf(out, ",%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g\n", s->output_tokens_per_s,
          s->output_tokens_per_s_per_npu, s->input_tokens_per_s_per_npu, s->goodput_per_s,
          s->goodput_per_s_per_npu, step, batch, pstep, ptokens);
}

void serve_report(FILE *out, out_format_t format, const serve_report_ctx_t *ctx,
                  const serve_sim_result_t *r, const serve_summary_t *s) {
  if (format == FORMAT_JSON)
    report_json(out, ctx, r, s);
  else if (format == FORMAT_CSV)
    report_csv(out, ctx, r, s);
  else
    report_table(out, ctx, r, s);
}

/* ---- files ---- */

/* The pool and index within it of instance i (pools in order). */
static const serve_sim_pool_t *instance_pool(const serve_report_ctx_t *ctx, int i, int *index) {
  for (int k = 0; k < ctx->npools; k++) {
    if (i < ctx->pools[k].plan->instances) {
      *index = i;
      return &ctx->pools[k];
    }
    i -= ctx->pools[k].plan->instances;
  }
  *index = i;
  return &ctx->pools[ctx->npools - 1];
}

int serve_write_timeseries(const char *path, const serve_report_ctx_t *ctx,
                           const serve_sim_result_t *r, npu_err_t *err) {
  outfile_t *f = outfile_open(path, outfile_is_gz(path), 0, err);
  if (!f)
    return -1;
  FILE *o = outfile_stream(f);
  fprintf(o, "start_s,end_s,pool,instance,engine,decodes,prefills,tokens,kv_used_blocks,"
             "kv_used_fraction,waiting\n");
  for (long i = 0; i < r->nlog; i++) {
    const serve_iter_log_t *l = &r->log[i];
    int index;
    const serve_sim_pool_t *p = instance_pool(ctx, l->instance, &index);
    const serve_memory_t *m = serve_cost_memory(p->cost);
    double blocks = (double)m->kv_blocks * p->plan->dp;
    fprintf(o, "%.9f,%.9f,%s,%d,%d,%d,%d,%d,%ld,%.6f,%ld\n", l->start_s, l->end_s,
            serve_pool_kind_names[p->kind], index, l->engine, l->decodes, l->prefills, l->tokens,
            l->kv_used_blocks, blocks > 0 ? (double)l->kv_used_blocks / blocks : 0, l->waiting);
  }
  return outfile_commit(f, err);
}

/* A time in seconds, or nothing for one not known (NAN). */
static void put_time(FILE *o, double t_s) {
  if (!isnan(t_s))
    fprintf(o, "%.9f", t_s);
}

int serve_write_requests(const char *path, const serve_report_ctx_t *ctx,
                         const serve_sim_result_t *r, npu_err_t *err) {
  static const char *const slo_words[] = {"met", "ttft", "tpot", "ttft+tpot"};
  bool has_slo = ctx->slo->ttft_s > 0 || ctx->slo->tpot_s > 0;
  outfile_t *f = outfile_open(path, outfile_is_gz(path), 0, err);
  if (!f)
    return -1;
  FILE *o = outfile_stream(f);
  fprintf(o, "request,arrival_s,prompt_tokens,output_tokens,pool,instance,decode_pool,"
             "decode_instance,queue_s,ttft_s,tpot_s,e2e_s,preemptions,slo_missed\n");
  for (long i = 0; i < r->nreq; i++) {
    const serve_req_result_t *q = &r->req[i];
    int at, dat;
    const serve_sim_pool_t *p = instance_pool(ctx, q->instance, &at);
    const serve_sim_pool_t *dp = instance_pool(ctx, q->decode_instance, &dat);
    fprintf(o, "%ld,%.9f,%d,%d,%s,%d,%s,%d,", i, q->arrival_s, q->prompt_tokens, q->output_tokens,
            serve_pool_kind_names[p->kind], at, serve_pool_kind_names[dp->kind], dat);
    put_time(o, q->queue_s);
    fputc(',', o);
    put_time(o, q->ttft_s);
    fputc(',', o);
    put_time(o, q->output_tokens > 1 && !isnan(q->decode_s) ? tpot_of(q) : NAN);
    fputc(',', o);
    put_time(o, q->e2e_s);
    fprintf(o, ",%d,%s\n", q->preemptions, has_slo ? slo_words[slo_missed(ctx->slo, q)] : "");
  }
  return outfile_commit(f, err);
}

/* One edge of an iteration's slice, at whole nanoseconds ns written as
 * microseconds with three decimals. A B/E pair, not an "X" with a duration:
 * each edge is printed once from its integer, so an iteration's end and the
 * next one's start are the same text and any viewer, adding nothing, nests
 * them exactly (replay_chrome.c says why "X" does not). The E repeats the
 * name and args, as speedscope matches an E to its B by both. */
static void chrome_edge(FILE *o, const serve_iter_log_t *l, char ph, long long ns) {
  const char *name = l->prefills == 0 ? "decode" : l->decodes == 0 ? "prefill" : "mixed";
  fprintf(o,
          ",\n{\"ph\": \"%c\", \"pid\": %d, \"tid\": %d, \"name\": \"%s\", \"ts\": "
          "%lld.%03lld, \"args\": {\"decodes\": %d, \"prefills\": %d, \"tokens\": %d, "
          "\"kv_used_blocks\": %ld, \"waiting\": %ld}}",
          ph, l->instance, l->engine, name, ns / 1000, ns % 1000, l->decodes, l->prefills,
          l->tokens, l->kv_used_blocks, l->waiting);
}

int serve_write_chrome(const char *path, const serve_report_ctx_t *ctx, const serve_sim_result_t *r,
                       npu_err_t *err) {
  outfile_t *f = outfile_open(path, outfile_is_gz(path), 0, err);
  if (!f)
    return -1;
  FILE *o = outfile_stream(f);
  fprintf(o, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
  int total = 0;
  for (int k = 0; k < ctx->npools; k++)
    total += ctx->pools[k].plan->instances;
  for (int i = 0; i < total; i++) {
    int index;
    const serve_sim_pool_t *p = instance_pool(ctx, i, &index);
    fprintf(o,
            "%s{\"ph\": \"M\", \"pid\": %d, \"name\": \"process_name\", \"args\": "
            "{\"name\": \"%s %d\"}},\n{\"ph\": \"M\", \"pid\": %d, \"name\": "
            "\"process_sort_index\", \"args\": {\"sort_index\": %d}}",
            i ? ",\n" : "", i, serve_pool_kind_names[p->kind], index, i, i);
  }
  for (int i = 0; i < total; i++) {
    int index;
    const serve_sim_pool_t *p = instance_pool(ctx, i, &index);
    for (int e = 0; e < p->plan->pp; e++)
      fprintf(o,
              ",\n{\"ph\": \"M\", \"pid\": %d, \"tid\": %d, \"name\": \"thread_name\", "
              "\"args\": {\"name\": \"engine %d\"}}",
              i, e, e);
  }
  for (long i = 0; i < r->nlog; i++) {
    const serve_iter_log_t *l = &r->log[i];
    chrome_edge(o, l, 'B', llround(l->start_s * 1e9));
    chrome_edge(o, l, 'E', llround(l->end_s * 1e9));
  }
  fprintf(o, "\n]}\n");
  return outfile_commit(f, err);
}
