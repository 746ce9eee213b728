/* jobs_load.c - the jobs read, placed and sized before any run (jobs_load.h). */
#include "jobs_load.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jsonfile.h"
#include "replay.h"
#include "topo.h"
#include "train_gen.h"

static int load_workload_job(const jobs_load_opts_t *cfg, jobs_job_t *job, npu_err_t *err) {
  config_doc_t *doc = config_doc_load(CONFIG_WORKLOAD, job->spec.file, err);
  if (!doc)
    return -1;
  workload_cfg_t wl;
  int rc = config_doc_resolve(doc, &wl, err) ||
           config_check_job(cfg->sys_doc, cfg->sys, doc, &wl, false, err);
  const char *refused = rc ? NULL : train_refusal(&wl);
  if (refused)
    rc = npu_err_set(err, "%s: %s", job->spec.file, refused);
  train_info_t info;
  npu_err_t why = {""};
  if (rc == 0 &&
      train_generate(&wl, &replay_vocab, cfg->sys->node.npus, &job->trace, &info, &why))
    rc = npu_err_set(err, "%s: %s", job->spec.file, why.msg);
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
static int load_job(const jobs_load_opts_t *cfg, jobs_job_t *job, npu_err_t *err) {
  char why[256];
  size_t len;
  char *text = jsonfile_read(job->spec.file, TRACE_MAX_BYTES, &len, why, sizeof why);
  cJSON *root = text ? cJSON_ParseWithLength(text, len) : NULL;
  const cJSON *format = cJSON_GetObjectItemCaseSensitive(root, "format");
  bool trace = cJSON_IsString(format) && strcmp(format->valuestring, TRACE_FORMAT) == 0;
  cJSON_Delete(root);
  int rc = 0;
  trace_vocab_t vocab = replay_vocab_on(cfg->sys);
  if (!trace) /* the config loader names what is wrong with the file, if anything */
    rc = load_workload_job(cfg, job, err);
  else if (trace_parse(job->spec.file, text, len, &vocab, &job->trace, err))
    rc = -1;
  else if (job->trace.ranks_per_node != 0 && job->trace.ranks_per_node != cfg->sys->node.npus)
    rc = npu_err_set(err,
                     "%s: ranks_per_node: expected 0 or node.npus = %d (npusim cluster "
                     "places the ranks itself), found %d",
                     job->spec.file, cfg->sys->node.npus, job->trace.ranks_per_node);
  else
    snprintf(job->name, sizeof job->name, "%s", job->trace.name ? job->trace.name : "trace");
  job->is_trace = trace;
  free(text);
  return rc;
}

/* Servers in the cluster: the system's cluster.nodes, or as many as the jobs
 * need (each job's whole servers, and every NPU a list names). */
static int cluster_servers(const system_cfg_t *sys, const jobs_job_t *jobs, int njobs) {
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

static int place_jobs(const jobs_load_opts_t *opts, const system_cfg_t *sys, jobs_job_t *jobs,
                      int njobs, int servers, npu_err_t *err) {
  int npus = servers * sys->node.npus;
  topo_t topo;
  npu_err_t why = {""};
  int rc = topo_build(&sys->node, &sys->cluster, sys->chip.dies_per_package, npus, 0, &topo, &why);
  if (rc)
    return npu_err_set(err, "%s: %s", opts->system_path, why.msg);
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
    else if (jobs_place(&jobs[j].spec, jobs[j].trace.ranks, &fab, used, jobs[j].npu_of, err))
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

jobs_part_t jobs_part_of(const jobs_job_t *job, int steps) {
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

int jobs_check_size(const jobs_job_t *jobs, int njobs, int steps_each, npu_err_t *err) {
  jobs_size_t all = {0, 0};
  int64_t largest = -1;
  const char *largest_file = "";
  for (int j = 0; j < njobs; j++) {
    int steps = steps_each > 0 ? steps_each : jobs[j].steps;
    jobs_part_t part = jobs_part_of(&jobs[j], steps);
    jobs_size_t size;
    if (jobs_merge_size(&part, 1, &size, err))
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

bool jobs_fits(const jobs_job_t *job) {
  return job->peak_bytes <= job->capacity_bytes;
}

int jobs_load(const jobs_load_opts_t *opts, const char *const *args, int njobs, jobs_job_t *jobs,
              int *npus, npu_err_t *err) {
  int rc = 0;
  *npus = 0;
  for (int j = 0; j < njobs && rc == 0; j++)
    if ((rc = jobs_parse_spec(args[j], &jobs[j].spec, err)) == 0)
      rc = load_job(opts, &jobs[j], err);
  if (rc)
    return rc;
  int servers = cluster_servers(opts->sys, jobs, njobs);
  *npus = servers * opts->sys->node.npus;
  return place_jobs(opts, opts->sys, jobs, njobs, servers, err);
}

void jobs_free(jobs_job_t *jobs, int njobs) {
  for (int j = 0; jobs && j < njobs; j++) {
    trace_free(&jobs[j].trace); /* a job never loaded holds a zeroed trace */
    free(jobs[j].npu_of);
    free(jobs[j].npu_text);
  }
}
