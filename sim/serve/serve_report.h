/* serve_report.h - what a serving run says: latency percentiles (TTFT, TPOT,
 * end to end), throughput, goodput under SLOs, memory and KV cache per pool,
 * the breakdown of a decode step; as a table, JSON or CSV, and as a time
 * series (CSV) and a Chrome trace of iterations per instance. */
#ifndef NPUSIM_SERVE_REPORT_H
#define NPUSIM_SERVE_REPORT_H

#include <stdio.h>

#include "out_format.h"
#include "serve_sim.h"
#include "npu_err.h"

/* Service-level objectives; a limit of 0 is not checked. */
typedef struct {
  double ttft_s, tpot_s;
} serve_slo_t;

/* Parses "ttft_ms=T,tpot_ms=P" (either may be left out, neither given
 * twice; T and P plain decimal numbers of ms in [0.001, 1e9]). Returns 0, or
 * -1 with "--slo: expected ..., found ..." in err. */
int serve_slo_parse(const char *text, serve_slo_t *slo, npu_err_t *err);

typedef struct {
  double mean, p50, p90, p99, min, max;
} serve_dist_t;

typedef struct {
  long completed;
  serve_dist_t ttft_s, tpot_s, e2e_s;
  double requests_per_s, input_tokens_per_s, output_tokens_per_s;
  double output_tokens_per_s_per_npu, output_tokens_per_s_per_instance;
  double input_tokens_per_s_per_npu;
  long good; /* requests within the SLOs */
  double goodput_per_s, goodput_per_s_per_npu;
  long npus, instances;
  /* energy (chip.power): every NPU idle through the run, plus the iterations' */
  bool energy_modelled;
  double energy_J, idle_J, avg_power_W_per_npu, J_per_output_token;
} serve_summary_t;

/* Summarises a run of npus NPUs (chip: their power model) in instances
 * instances, the scale-out switch ports it holds drawing switch_W. Returns 0,
 * or -1 on out of memory. */
int serve_summarise(const serve_sim_result_t *r, long npus, long instances, const serve_slo_t *slo,
                    const chip_cfg_t *chip, double switch_W, serve_summary_t *out);

/* What the report shows besides the summary. */
typedef struct {
  const char *system, *workload;
  const serve_sim_pool_t *pools;
  int npools;
  const serve_slo_t *slo;
  int block_tokens;
} serve_report_ctx_t;

void serve_report(FILE *out, out_format_t format, const serve_report_ctx_t *ctx,
                  const serve_sim_result_t *r, const serve_summary_t *s);

/* A CSV row per request: arrival, tokens, the instance that prefilled it and
 * the one that decoded it, queueing delay (arrival to its first iteration),
 * TTFT, TPOT, end to end, preemptions, and which SLO limits it missed ("met",
 * "ttft", "tpot", "ttft+tpot"; empty without --slo). Times of a request that
 * did not get there are empty. Returns 0, or -1 with the reason in err. */
int serve_write_requests(const char *path, const serve_report_ctx_t *ctx,
                         const serve_sim_result_t *r, npu_err_t *err);

/* The iteration log as CSV, and as a Chrome trace (a process per instance, a
 * thread per virtual engine); all or nothing (outfile.h). Return 0, or -1
 * with "PATH: cannot write: ..." in err. */
int serve_write_timeseries(const char *path, const serve_report_ctx_t *ctx,
                           const serve_sim_result_t *r, npu_err_t *err);
int serve_write_chrome(const char *path, const serve_report_ctx_t *ctx, const serve_sim_result_t *r,
                       npu_err_t *err);

#endif
