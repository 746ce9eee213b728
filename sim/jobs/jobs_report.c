/* jobs_report.c - npusim cluster's table, JSON and CSV (jobs_report.h). */
#include "jobs_report.h"

#include <string.h>

#include "jsonfile.h"
#include "linkstats.h"
#include "topo.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static void print_table(FILE *out, const jobs_report_opts_t *opts, const jobs_job_t *jobs,
                        int njobs, const replay_result_t *res, const jobs_shared_link_t *sh,
                        int nsh) {
  fprintf(out,
          "# npusim cluster: %d jobs on %d NPUs of %s, %s fidelity, until the longest has "
          "run %d steps\n",
          njobs, opts->npus, opts->system, opts->fidelity, opts->steps);
  fprintf(out, "%-3s %-20s %6s %-8s %-16s %6s %12s %12s %9s %9s\n", "job", "name", "npus", "place",
          "npu_list", "steps", "alone_ms", "together_ms", "slowdown", "mem_GiB");
  for (int j = 0; j < njobs; j++) {
    char list[64]; /* the table shows its start */
    jobs_format_npus(jobs[j].npu_of, jobs[j].trace.ranks, list, sizeof list);
    fprintf(out, "%-3d %-20.20s %6d %-8s %-16.16s %6d %12.3f %12.3f %9.3f %9.2f%s\n", j,
            jobs[j].name, jobs[j].trace.ranks, jobs_policy_names[jobs[j].spec.policy], list,
            jobs[j].steps, jobs[j].alone_s * 1e3, jobs[j].together_s * 1e3,
            jobs[j].together_s / jobs[j].alone_s, jobs[j].peak_bytes / GIB,
            jobs_fits(&jobs[j]) ? "" : "  does NOT fit its HBM");
  }
  fprintf(out,
          "\nlinks shared by jobs (each crosses it alone), over the %.3f ms run together: "
          "%d\n",
          res->step_time_s * 1e3, nsh);
  if (nsh == 0)
    return;
  bool flow = opts->flow;
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

static void print_json(FILE *out, const jobs_report_opts_t *opts, const jobs_job_t *jobs, int njobs,
                       const replay_result_t *res, const jobs_shared_link_t *sh, int nsh) {
  fprintf(out, "{\n  \"system\": ");
  jsonfile_write_string(out, opts->system);
  fprintf(out,
          ",\n  \"fidelity\": \"%s\",\n  \"npus\": %d,\n  \"steps\": %d,\n"
          "  \"together_s\": %.9g,\n  \"jobs\": [",
          opts->fidelity, opts->npus, opts->steps, res->step_time_s);
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
            jobs[j].capacity_bytes / GIB, jobs_fits(&jobs[j]) ? "true" : "false");
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
    if (opts->flow)
      fprintf(out, ", \"peak_util\": %.6g", sh[i].stat.peak_util);
    fputc('}', out);
  }
  fprintf(out, "%s]\n}\n", nsh ? "\n  " : "");
}

static void print_csv(FILE *out, const jobs_report_opts_t *opts, const jobs_job_t *jobs, int njobs,
                      int nsh) {
  fputs("system,fidelity,job,file,name,npus,placement,npu_list,steps,steps_compared,"
        "step_time_alone_s,step_time_together_s,slowdown,peak_memory_GiB,capacity_GiB,fits,"
        "shared_links\n",
        out);
  for (int j = 0; j < njobs; j++) {
    out_csv_field(out, opts->system, ",");
    fprintf(out, "%s,%d,", opts->fidelity, j);
    out_csv_field(out, jobs[j].spec.file, ",");
    out_csv_field(out, jobs[j].name, ",");
    fprintf(out, "%d,%s,", jobs[j].trace.ranks, jobs_policy_names[jobs[j].spec.policy]);
    out_csv_field(out, jobs[j].npu_text, ",");
    fprintf(out, "%d,%d,%.9g,%.9g,%.6g,%.6g,%.6g,%s,%d\n", jobs[j].steps, jobs[j].compared,
            jobs[j].alone_s, jobs[j].together_s, jobs[j].together_s / jobs[j].alone_s,
            jobs[j].peak_bytes / GIB, jobs[j].capacity_bytes / GIB,
            jobs_fits(&jobs[j]) ? "true" : "false", nsh);
  }
}

void jobs_report(FILE *out, const jobs_report_opts_t *opts, const jobs_job_t *jobs, int njobs,
                 const jobs_result_t *r) {
  if (opts->format == FORMAT_JSON)
    print_json(out, opts, jobs, njobs, &r->res, r->shared, r->nshared);
  else if (opts->format == FORMAT_CSV)
    print_csv(out, opts, jobs, njobs, r->nshared);
  else
    print_table(out, opts, jobs, njobs, &r->res, r->shared, r->nshared);
}
