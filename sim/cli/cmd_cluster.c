/* cmd_cluster.c - `npusim cluster`: several jobs on one fabric. Each job (a
 * training workload or a trace) is placed on the cluster's NPUs
 * (sim/jobs/jobs_place.h), run alone and then with the others
 * (sim/jobs/jobs_run.h); the report gives each job's step time alone and
 * together, its slowdown, and the links the jobs share with their
 * utilisation. The jobs repeat their steps until the longest has run
 * --steps; a job's step times compare the steps it finished before the first
 * job ran out of steps, alone and together, so neither side counts steps that
 * ran with the others gone. A job's steps follow one another: the next starts
 * when all its ranks ended the last (jobs_merge.h), so a step of a job alone
 * is its replay's. The runs' size is checked before any runs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "jobs_place.h"
#include "jobs_run.h"
#include "jsonfile.h"
#include "npu_err.h"
#include "replay.h"
#include "time_limit.h"
#include "train_gen.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define CLUSTER_DEFAULT_STEPS 3
#define CLUSTER_MAX_STEPS 1000 /* per job: a job far shorter than another repeats this often */

typedef struct {
  jobs_spec_t spec;
  char name[128]; /* the model's or the trace's */
  bool is_trace;
  trace_t trace;
  int *npu_of;
  char *npu_text; /* npu_of as ranges, whole: "0-15,32-47" */
  int steps;
  double alone_step_s;        /* one step, alone */
  int compared;               /* steps compared alone and together */
  double alone_s, together_s; /* mean step over the compared steps */
  double peak_bytes;          /* memory per NPU: the fullest pipeline stage (a workload, as npusim
                               * train counts it) or the replay's high-water mark (a trace) */
  double capacity_bytes;      /* the least HBM among the chips of its NPUs */
} job_t;

static int load_workload_job(const cli_configs_t *cfg, job_t *job, npu_err_t *err) {
  config_doc_t *doc = config_doc_load(CONFIG_WORKLOAD, job->spec.file, err);
  if (!doc)
    return -1;
  workload_cfg_t wl;
  int rc = config_doc_resolve(doc, &wl, err) ||
           config_check_job(cfg->sys_doc, &cfg->sys, doc, &wl, false, err);
  const char *refused = rc ? NULL : train_refusal(&wl);
  if (refused)
    rc = npu_err_set(err, "%s: %s", job->spec.file, refused);
  train_info_t info;
  char why[NPU_ERR_MAX - 256];
  if (rc == 0 &&
      train_generate(&wl, &replay_vocab, cfg->sys.node.npus, &job->trace, &info, why, sizeof why))
    rc = npu_err_set(err, "%s: %s", job->spec.file, why);
  if (rc == 0) {
    snprintf(job->name, sizeof job->name, "%s", wl.model.name);
    for (int st = 0; st < info.stages; st++)
      job->peak_bytes = fmax(job->peak_bytes, info.memory[st].total);
    train_info_free(&info);
  }
  config_doc_free(doc);
  return rc ? -1 : 0;
}

/* A job's file: an npusim trace (its "format" says so) or a workload config. */
static int load_job(const cli_configs_t *cfg, job_t *job, npu_err_t *err) {
  char why[256];
  size_t len;
  char *text = jsonfile_read(job->spec.file, TRACE_MAX_BYTES, &len, why, sizeof why);
  cJSON *root = text ? cJSON_ParseWithLength(text, len) : NULL;
  const cJSON *format = cJSON_GetObjectItemCaseSensitive(root, "format");
  bool trace = cJSON_IsString(format) && strcmp(format->valuestring, TRACE_FORMAT) == 0;
  cJSON_Delete(root);
  int rc = 0;
  if (!trace) /* the config loader names what is wrong with the file, if anything */
    rc = load_workload_job(cfg, job, err);
  else if (trace_parse(job->spec.file, text, len, &replay_vocab, &job->trace, err->msg,
                       sizeof err->msg))
    rc = -1;
  else if (job->trace.ranks_per_node != 0 && job->trace.ranks_per_node != cfg->sys.node.npus)
    rc = npu_err_set(err,
                     "%s: ranks_per_node: expected 0 or node.npus = %d (npusim cluster "
                     "places the ranks itself), found %d",
                     job->spec.file, cfg->sys.node.npus, job->trace.ranks_per_node);
  else
    snprintf(job->name, sizeof job->name, "%s", job->trace.name ? job->trace.name : "trace");
  job->is_trace = trace;
  free(text);
  return rc;
}

/* Servers in the cluster: the system's cluster.nodes, or as many as the jobs
 * need (each job's whole servers, and every NPU a list names). */
static int cluster_servers(const system_cfg_t *sys, const job_t *jobs, int njobs) {
  if (sys->cluster.nodes > 0)
    return sys->cluster.nodes;
  int k = sys->node.npus, servers = 0, listed = 0;
  for (int j = 0; j < njobs; j++) {
    servers += (jobs[j].trace.ranks + k - 1) / k;
    int ext = jobs_list_extent(&jobs[j].spec);
    listed = ext > listed ? ext : listed;
  }
  return servers > (listed + k - 1) / k ? servers : (listed + k - 1) / k;
}

static int place_jobs(const cli_opts_t *opts, const system_cfg_t *sys, job_t *jobs, int njobs,
                      int servers, npu_err_t *err) {
  int npus = servers * sys->node.npus;
  topo_t topo;
  char why[512];
  int rc = topo_build(&sys->node, &sys->cluster, sys->chip.dies_per_package, npus, 0, &topo, why,
                      sizeof why);
  if (rc)
    return npu_err_set(err, "%s: %s", opts->system_path, why);
  int *leaf = malloc(((size_t)servers + 1) * sizeof *leaf);
  for (int s = 0; leaf && s < servers; s++)
    leaf[s] = topo_leaf_of(&topo, s * sys->node.npus);
  topo_free(&topo);
  jobs_fabric_t fab = {servers, sys->node.npus, leaf};
  bool *used = calloc((size_t)npus + 1, sizeof *used);
  if (!leaf || !used)
    rc = npu_err_set(err, "npusim cluster: out of memory placing %d NPUs", npus);
  for (int j = 0; j < njobs && rc == 0; j++) {
    size_t len = (size_t)jobs[j].trace.ranks * 16 + 1; /* "NNNNNNN-NNNNNNN," per rank at most */
    if (!(jobs[j].npu_of = malloc(((size_t)jobs[j].trace.ranks + 1) * sizeof *jobs[j].npu_of)) ||
        !(jobs[j].npu_text = malloc(len)))
      rc = npu_err_set(err, "%s: out of memory placing its ranks", jobs[j].spec.file);
    else if (jobs_place(&jobs[j].spec, jobs[j].trace.ranks, &fab, used, jobs[j].npu_of, err->msg,
                        sizeof err->msg))
      rc = -1;
    else
      jobs_format_npus(jobs[j].npu_of, jobs[j].trace.ranks, jobs[j].npu_text, len);
  }
  free(used);
  free(leaf);
  for (int j = 0; j < njobs && rc == 0; j++) {
    jobs[j].capacity_bytes = INFINITY;
    for (int r = 0; r < jobs[j].trace.ranks; r++) {
      int server = jobs[j].npu_of[r] / sys->node.npus;
      const chip_cfg_t *chip = config_chip_at(sys, config_server_chip_index(sys, server));
      jobs[j].capacity_bytes = fmin(jobs[j].capacity_bytes, (double)chip->hbm.capacity_bytes);
    }
  }
  return rc;
}

static jobs_part_t part_of(const job_t *job, int steps) {
  return (jobs_part_t){&job->trace, job->npu_of, steps};
}

/* -1 with "FILE: expected at most MAX WHAT over its STEPS steps (HOW), found
 * FOUND" in err if found > max, else 0. */
static int over_bound(const char *file, int steps, int64_t found, int64_t max, const char *what,
                      const char *how, npu_err_t *err) {
  if (found <= max)
    return 0;
  return npu_err_set(err, "%s: expected at most %lld %s over its %d steps (%s), found %lld", file,
                     (long long)max, what, steps, how, (long long)found);
}

/* The runs' size before any runs (jobs_merge.h's bounds): each job alone with
 * its steps (steps_each > 0: that many each), then all of them together. */
static int check_size(const job_t *jobs, int njobs, int steps_each, npu_err_t *err) {
  jobs_size_t all = {0, 0};
  int64_t largest = -1;
  const char *largest_file = "";
  for (int j = 0; j < njobs; j++) {
    int steps = steps_each > 0 ? steps_each : jobs[j].steps;
    jobs_part_t part = part_of(&jobs[j], steps);
    jobs_size_t size;
    if (jobs_merge_size(&part, 1, &size, err->msg, sizeof err->msg))
      return -1;
    if (over_bound(jobs[j].spec.file, steps, size.rank_ops, JOBS_MAX_RANK_OPS,
                   "ops run on its NPUs",
                   "its programs' ops x their ranks x the steps: npusim cluster simulates "
                   "every rank",
                   err) ||
        over_bound(jobs[j].spec.file, steps, size.merged_ops, JOBS_MAX_MERGED_OPS,
                   "ops in its programs on the cluster",
                   "its programs' ops x the groups its placement splits their ranks into x the "
                   "steps",
                   err))
      return -1;
    all.rank_ops += size.rank_ops;
    all.merged_ops += size.merged_ops;
    if (size.rank_ops > largest)
      largest = size.rank_ops, largest_file = jobs[j].spec.file;
  }
  if (all.rank_ops > JOBS_MAX_RANK_OPS || all.merged_ops > JOBS_MAX_MERGED_OPS)
    return npu_err_set(err,
                       "npusim cluster: expected at most %lld ops run on all NPUs and %lld in the "
                       "programs on the cluster over the jobs' steps, found %lld and %lld (the "
                       "most from %s)",
                       (long long)JOBS_MAX_RANK_OPS, (long long)JOBS_MAX_MERGED_OPS,
                       (long long)all.rank_ops, (long long)all.merged_ops, largest_file);
  return 0;
}

/* Steps per job: the longest job (alone) runs `steps`, every other as many as
 * fit in that time, at least `steps`. Each job first runs `steps` steps alone
 * (into alone[j]): its first step's time sets its count, and a job that keeps
 * `steps` needs no second run alone. */
static int alone_steps(const cli_configs_t *cfg, job_t *jobs, int njobs, int npus, int steps,
                       const replay_opts_t *ro, jobs_figs_t *alone, npu_err_t *err) {
  double longest = 0;
  for (int j = 0; j < njobs; j++) {
    jobs_part_t part = part_of(&jobs[j], steps);
    char why[NPU_ERR_MAX - 256];
    if (jobs_run_apart(&cfg->sys, &part, 1, npus, ro, &alone[j], why, sizeof why))
      return npu_err_set(err, "%s: %s", jobs[j].spec.file, why);
    jobs[j].alone_step_s = alone[j].step_end_s[0];
    if (!(jobs[j].alone_step_s > 0))
      return npu_err_set(err,
                         "%s: expected a step that takes time, found one of 0 s (nothing "
                         "to slow down)",
                         jobs[j].spec.file);
    longest = fmax(longest, jobs[j].alone_step_s);
  }
  for (int j = 0; j < njobs; j++) {
    double n = fmax(ceil(steps * longest / jobs[j].alone_step_s - 1e-9), steps);
    if (n > CLUSTER_MAX_STEPS)
      return npu_err_set(err,
                         "%s: expected a step of at least %.6g s (the longest job's %.6g s x "
                         "--steps / %d), found %.6g s: it would repeat %.0f times",
                         jobs[j].spec.file, steps * longest / CLUSTER_MAX_STEPS, longest,
                         CLUSTER_MAX_STEPS, jobs[j].alone_step_s, n);
    jobs[j].steps = (int)n;
  }
  return 0;
}

/* A job's comparison: the steps it finished together before the first job
 * finished all its steps, and the same steps alone; at least its first step
 * (which ran partly alone only if the jobs' slowdowns differ by more than
 * --steps times). */
static void compare(job_t *job, const double *alone_end, const double *together_end,
                    double window_end) {
  int m = 0;
  while (m < job->steps && together_end[m] <= window_end * (1 + 1e-12))
    m++;
  m = m > 0 ? m : 1;
  job->compared = m;
  job->alone_s = alone_end[m - 1] / m;
  job->together_s = together_end[m - 1] / m;
}

typedef struct {
  int slot;      /* link x 2 + dir */
  unsigned jobs; /* bit per job that crosses it alone (first 32 jobs) */
  int njobs;
  link_stat_t stat; /* together */
} shared_link_t;

/* The link directions that two or more jobs cross when each runs alone, with
 * their figures together, most utilised first. The peak utilisation is the
 * flow engine's only: the analytic one keeps each transfer's share, not the
 * sum over the jobs' concurrent transfers. */
static int shared_links(int njobs, const jobs_figs_t *alone, const replay_result_t *res,
                        shared_link_t **out) {
  link_stat_t *ls = NULL;
  linkstats_view_t all = {LINKSTATS_ALL, 0};
  int nls = linkstats_rank(&res->links, res->step_time_s, &all, &ls), n = 0;
  if (!(*out = calloc((size_t)nls + 1, sizeof **out))) {
    free(ls);
    return -1;
  }
  for (int i = 0; i < nls; i++) {
    int slot = ls[i].link * 2 + ls[i].dir, users = 0;
    unsigned bits = 0;
    for (int j = 0; j < njobs; j++)
      if (slot < alone[j].nslots && alone[j].slot_bytes[slot] > 0) {
        users++;
        bits |= j < 32 ? 1u << j : 0;
      }
    if (users >= 2)
      (*out)[n++] = (shared_link_t){slot, bits, users, ls[i]};
  }
  free(ls);
  return n;
}

static bool fits(const job_t *job) {
  return job->peak_bytes <= job->capacity_bytes;
}

static void print_table(FILE *out, const cli_opts_t *opts, const system_cfg_t *sys,
                        const job_t *jobs, int njobs, int npus, int steps,
                        const replay_result_t *res, const shared_link_t *sh, int nsh) {
  fprintf(out,
          "# npusim cluster: %d jobs on %d NPUs of %s, %s fidelity, until the longest has "
          "run %d steps\n",
          njobs, npus, sys->name, cli_fidelity_names[opts->fidelity], steps);
  fprintf(out, "%-3s %-20s %6s %-8s %-16s %6s %12s %12s %9s %9s\n", "job", "name", "npus", "place",
          "npu_list", "steps", "alone_ms", "together_ms", "slowdown", "mem_GiB");
  for (int j = 0; j < njobs; j++) {
    char list[64]; /* the table shows its start */
    jobs_format_npus(jobs[j].npu_of, jobs[j].trace.ranks, list, sizeof list);
    fprintf(out, "%-3d %-20.20s %6d %-8s %-16.16s %6d %12.3f %12.3f %9.3f %9.2f%s\n", j,
            jobs[j].name, jobs[j].trace.ranks, jobs_policy_names[jobs[j].spec.policy], list,
            jobs[j].steps, jobs[j].alone_s * 1e3, jobs[j].together_s * 1e3,
            jobs[j].together_s / jobs[j].alone_s, jobs[j].peak_bytes / GIB,
            fits(&jobs[j]) ? "" : "  does NOT fit its HBM");
  }
  fprintf(out,
          "\nlinks shared by jobs (each crosses it alone), over the %.3f ms run together: "
          "%d\n",
          res->step_time_s * 1e3, nsh);
  if (nsh == 0)
    return;
  bool flow = opts->fidelity == FIDELITY_FLOW;
  fprintf(out, "  %-18s %3s %-10s %12s %10s%s\n", "link", "dir", "jobs", "bytes_GB", "mean_util",
          flow ? "  peak_util" : "");
  for (int i = 0; i < nsh && i < LINKSTATS_DEFAULT_ROWS; i++) {
    char name[64], who[128] = "";
    topo_link_name(&res->topo, sh[i].slot / 2, name, sizeof name);
    for (int j = 0; j < njobs && j < 32; j++)
      if (sh[i].jobs & 1u << j)
        snprintf(who + strlen(who), sizeof who - strlen(who), "%s%d", who[0] ? "," : "", j);
    fprintf(out, "  %-18s %3d %-10s %12.3f %10.3f", name, sh[i].slot % 2, who,
            sh[i].stat.bytes / 1e9, sh[i].stat.mean_util);
    if (flow)
      fprintf(out, " %10.3f", sh[i].stat.peak_util);
    fputc('\n', out);
  }
  if (nsh > LINKSTATS_DEFAULT_ROWS)
    fprintf(out, "  ... %d more (--format json lists them all)\n", nsh - LINKSTATS_DEFAULT_ROWS);
}

static void print_json(FILE *out, const cli_opts_t *opts, const system_cfg_t *sys,
                       const job_t *jobs, int njobs, int npus, int steps,
                       const replay_result_t *res, const shared_link_t *sh, int nsh) {
  fprintf(out, "{\n  \"system\": ");
  jsonfile_write_string(out, sys->name);
  fprintf(out,
          ",\n  \"fidelity\": \"%s\",\n  \"npus\": %d,\n  \"steps\": %d,\n"
          "  \"together_s\": %.9g,\n  \"jobs\": [",
          cli_fidelity_names[opts->fidelity], npus, steps, res->step_time_s);
  for (int j = 0; j < njobs; j++) {
    fprintf(out, "%s\n    {\"job\": %d, \"file\": ", j ? "," : "", j);
    jsonfile_write_string(out, jobs[j].spec.file);
    fprintf(out, ", \"name\": ");
    jsonfile_write_string(out, jobs[j].name);
    fprintf(out, ", \"npus\": %d, \"placement\": \"%s\", \"npu_list\": ", jobs[j].trace.ranks,
            jobs_policy_names[jobs[j].spec.policy]);
    jsonfile_write_string(out, jobs[j].npu_text);
    fprintf(out,
            ", \"steps\": %d, \"steps_compared\": %d, \"step_time_alone_s\": %.9g, "
            "\"step_time_together_s\": %.9g, \"slowdown\": %.6g, \"peak_memory_GiB\": %.6g, "
            "\"capacity_GiB\": %.6g, \"fits\": %s}",
            jobs[j].steps, jobs[j].compared, jobs[j].alone_s, jobs[j].together_s,
            jobs[j].together_s / jobs[j].alone_s, jobs[j].peak_bytes / GIB,
            jobs[j].capacity_bytes / GIB, fits(&jobs[j]) ? "true" : "false");
  }
  fprintf(out, "\n  ],\n  \"shared_links\": [");
  for (int i = 0; i < nsh; i++) {
    char name[64];
    topo_link_name(&res->topo, sh[i].slot / 2, name, sizeof name);
    fprintf(out, "%s\n    {\"link\": \"%s\", \"kind\": \"%s\", \"dir\": %d, \"jobs\": [",
            i ? "," : "", name, topo_link_kind_names[res->topo.links[sh[i].slot / 2].kind],
            sh[i].slot % 2);
    for (int j = 0, n = 0; j < njobs && j < 32; j++)
      if (sh[i].jobs & 1u << j)
        fprintf(out, "%s%d", n++ ? ", " : "", j);
    fprintf(out, "], \"bytes\": %.9g, \"mean_util\": %.6g", sh[i].stat.bytes, sh[i].stat.mean_util);
    if (opts->fidelity == FIDELITY_FLOW)
      fprintf(out, ", \"peak_util\": %.6g", sh[i].stat.peak_util);
    fputc('}', out);
  }
  fprintf(out, "%s]\n}\n", nsh ? "\n  " : "");
}

static void print_csv(FILE *out, const system_cfg_t *sys, const job_t *jobs, int njobs,
                      const cli_opts_t *opts, int nsh) {
  fputs("system,fidelity,job,file,name,npus,placement,npu_list,steps,steps_compared,"
        "step_time_alone_s,step_time_together_s,slowdown,peak_memory_GiB,capacity_GiB,fits,"
        "shared_links\n",
        out);
  for (int j = 0; j < njobs; j++) {
    out_csv_field(out, sys->name, ",");
    fprintf(out, "%s,%d,", cli_fidelity_names[opts->fidelity], j);
    out_csv_field(out, jobs[j].spec.file, ",");
    out_csv_field(out, jobs[j].name, ",");
    fprintf(out, "%d,%s,", jobs[j].trace.ranks, jobs_policy_names[jobs[j].spec.policy]);
    out_csv_field(out, jobs[j].npu_text, ",");
    fprintf(out, "%d,%d,%.9g,%.9g,%.6g,%.6g,%.6g,%s,%d\n", jobs[j].steps, jobs[j].compared,
            jobs[j].alone_s, jobs[j].together_s, jobs[j].together_s / jobs[j].alone_s,
            jobs[j].peak_bytes / GIB, jobs[j].capacity_bytes / GIB,
            fits(&jobs[j]) ? "true" : "false", nsh);
  }
}

static int parse_steps(const cli_opts_t *opts, int *steps, npu_err_t *err) {
  *steps = CLUSTER_DEFAULT_STEPS;
  if (!opts->steps)
    return 0;
  char *end;
  long v = strtol(opts->steps, &end, 10);
  if (end == opts->steps || *end || v < 1 || v > CLUSTER_MAX_STEPS)
    return npu_err_set(err, "--steps: expected a whole number in [1, %d], found \"%.40s\"",
                       CLUSTER_MAX_STEPS, opts->steps);
  *steps = (int)v;
  return 0;
}

/* Runs each job alone with its steps (in a child) and all together (here),
 * and fills each job's comparison. */
static int run_all(const cli_opts_t *opts, const cli_configs_t *cfg, job_t *jobs, int njobs,
                   int npus, const replay_opts_t *ro, jobs_figs_t *alone, jobs_merged_t *m,
                   replay_result_t *res, npu_err_t *err) {
  for (int j = 0; j < njobs; j++) { /* a job that repeats more: alone again, all its steps */
    if (alone[j].total_steps == jobs[j].steps)
      continue;
    jobs_figs_free(&alone[j]);
    jobs_part_t part = part_of(&jobs[j], jobs[j].steps);
    char why[NPU_ERR_MAX - 256];
    if (jobs_run_apart(&cfg->sys, &part, 1, npus, ro, &alone[j], why, sizeof why))
      return npu_err_set(err, "%s: %s", jobs[j].spec.file, why);
  }
  jobs_part_t *parts = malloc((size_t)njobs * sizeof *parts);
  if (!parts)
    return npu_err_set(err, "npusim cluster: out of memory for %d jobs", njobs);
  for (int j = 0; j < njobs; j++)
    parts[j] = part_of(&jobs[j], jobs[j].steps);
  jobs_figs_t together;
  progress_t progress;
  progress_start(&progress, opts->progress, "npusim cluster", "ops", 0);
  replay_opts_t rot = *ro;
  rot.progress = &progress;
  int rc = jobs_run_here(&cfg->sys, parts, njobs, npus, &rot, m, res, &together, err->msg,
                         sizeof err->msg);
  progress_end(&progress);
  free(parts);
  if (rc)
    return -1;
  for (int j = 0; j < njobs; j++) /* a trace's memory: its ranks' high-water marks */
    for (int r = 0; r < jobs[j].trace.ranks && jobs[j].is_trace; r++)
      jobs[j].peak_bytes =
          fmax(jobs[j].peak_bytes, res->per_rank[jobs[j].npu_of[r]].peak_memory_bytes);
  double window = INFINITY;
  for (int j = 0, first = 0; j < njobs; first += jobs[j++].steps)
    window = fmin(window, together.step_end_s[first + jobs[j].steps - 1]);
  for (int j = 0, first = 0; j < njobs; first += jobs[j++].steps)
    compare(&jobs[j], alone[j].step_end_s, together.step_end_s + first, window);
  jobs_figs_free(&together);
  return 0;
}

int cmd_cluster(const cli_opts_t *opts, FILE *out, npu_err_t *err) {
  if (opts->njobs < 1)
    return npu_err_set(err, "npusim cluster: expected --job FILE[@PLACEMENT], found none");
  int steps;
  if (parse_steps(opts, &steps, err))
    return -1;
  cli_configs_t cfg;
  if (cli_load_configs(opts, &cfg, err))
    return -1;
  int njobs = opts->njobs, rc = 0;
  job_t *jobs = calloc((size_t)njobs, sizeof *jobs);
  jobs_figs_t *alone = calloc((size_t)njobs, sizeof *alone);
  if (!jobs || !alone) {
    free(jobs);
    free(alone);
    cli_free_configs(&cfg);
    return npu_err_set(err, "npusim cluster: out of memory for %d jobs", njobs);
  }
  for (int j = 0; j < njobs && rc == 0; j++)
    if ((rc = jobs_parse_spec(opts->jobs[j], &jobs[j].spec, err->msg, sizeof err->msg)) == 0)
      rc = load_job(&cfg, &jobs[j], err);
  int servers = rc ? 0 : cluster_servers(&cfg.sys, jobs, njobs), npus = servers * cfg.sys.node.npus;
  if (rc == 0)
    rc = place_jobs(opts, &cfg.sys, jobs, njobs, servers, err);
  replay_opts_t ro = replay_opts(opts->fidelity == FIDELITY_FLOW, false);
  ro.system_file = opts->system_path;
  if (rc == 0)
    rc = check_size(jobs, njobs, steps, err);
  if (rc == 0)
    rc = alone_steps(&cfg, jobs, njobs, npus, steps, &ro, alone, err);
  if (rc == 0)
    rc = check_size(jobs, njobs, 0, err);
  jobs_merged_t m = {0};
  replay_result_t res;
  bool ran = false;
  if (rc == 0)
    ran = (rc = run_all(opts, &cfg, jobs, njobs, npus, &ro, alone, &m, &res, err)) == 0;
  if (ran)
    time_limit_off();
  int first = 0, last = npus - 1; /* --trace-ranks: the NPUs the Chrome trace shows */
  if (rc == 0 && opts->chrome_trace)
    rc = cli_trace_ranks(opts, npus, &first, &last, err);
  shared_link_t *sh = NULL;
  int nsh = rc == 0 ? shared_links(njobs, alone, &res, &sh) : 0;
  if (nsh < 0)
    rc = npu_err_set(err, "npusim cluster: out of memory for the shared links");
  replay_chrome_opts_t copts = {
      .first_rank = first, .last_rank = last, .sys = &cfg.sys, .progress = opts->progress};
  if (rc == 0 && opts->chrome_trace &&
      replay_write_chrome(opts->chrome_trace, &m.trace, &res, &copts, err->msg, sizeof err->msg))
    rc = CMD_CANNOT_WRITE;
  if (rc == 0 && opts->format == FORMAT_JSON)
    print_json(out, opts, &cfg.sys, jobs, njobs, npus, steps, &res, sh, nsh);
  else if (rc == 0 && opts->format == FORMAT_CSV)
    print_csv(out, &cfg.sys, jobs, njobs, opts, nsh);
  else if (rc == 0)
    print_table(out, opts, &cfg.sys, jobs, njobs, npus, steps, &res, sh, nsh);
  free(sh);
  if (ran) {
    replay_result_free(&res, &m.trace);
    jobs_merged_free(&m);
  }
  for (int j = 0; j < njobs; j++) {
    jobs_figs_free(&alone[j]);
    trace_free(&jobs[j].trace); /* a job never loaded holds a zeroed trace */
    free(jobs[j].npu_of);
    free(jobs[j].npu_text);
  }
  free(alone);
  free(jobs);
  cli_free_configs(&cfg);
  return rc;
}

const cli_option_t cmd_cluster_options[] = {
    CLI_GROUP(cli_options_system),
    CLI_GROUP(cli_options_set),
    CLI_GROUP(cli_options_format),
    CLI_GROUP(cli_options_fidelity),
    CLI_GROUP(cli_options_output),
    CLI_GROUP(cli_options_timeline),
    CLI_GROUP(cli_options_progress),
    CLI_LIST("job", "FILE[@P]", jobs, njobs, CLI_MAX_JOBS, "jobs",
             "a job: a workload or trace, placed by P: packed, spread\n"
             "or an NPU list such as 0-15,32-47 (repeatable)"),
    CLI_STRING("steps", "N", steps, "steps the longest job runs (default 3)"),
    CLI_END};
