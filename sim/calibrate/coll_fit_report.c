/* coll_fit_report.c - the report of a collectives fit; see coll_fit_report.h. */
#include "coll_fit_report.h"

#include "coll.h"
#include "jsonfile.h"

static const char *const level_names[FIT_LEVELS] = {"scale_up", "scale_out"};

static double pct(double pred, double meas) {
  return 100 * (pred / meas - 1);
}

static void print_table(FILE *out, const coll_fit_opts_t *o, const coll_fit_result_t *r) {
  fprintf(out, "# npusim calibrate --collectives: %d log%s, analytic model\n", r->nlogs,
          r->nlogs > 1 ? "s" : "");
  fprintf(out, "%-30s %12s %12s\n", "parameter", "before", "after");
  for (int p = 0; p < FIT_PARAMS; p++)
    if (r->fitted[p])
      fprintf(out, "%-30s %12.4g %12.4g%s\n", coll_fit_keys[p], r->before[p], r->after[p],
              coll_fit_at_bound(r, p) ? "  at its bound: the model cannot reach the logs by it"
                                      : "");
  for (int k = 0; k < r->nlogs; k++) {
    const coll_log_t *log = &r->logs[k];
    fprintf(out, "\n%s: %s, %d ranks (%d per server), fits %s\n", log->path,
            coll_op_names[log->op], log->ranks, log->ranks_per_node, level_names[r->level[k]]);
    fprintf(out, "%14s %12s %12s %9s %12s %9s  %s\n", "bytes", "measured_us", "before_us",
            "error", "after_us", "error", "set");
    for (int i = 0; i < log->nrows; i++) {
      double m = log->time_s[i], b = r->pred_s[k][0][i], a = r->pred_s[k][1][i];
      fprintf(out, "%14.0f %12.2f %12.2f %+8.1f%% %12.2f %+8.1f%%  %s\n", log->bytes[i], m * 1e6,
              b * 1e6, pct(b, m), a * 1e6, pct(a, m),
              coll_fit_row_fitted(o, i) ? "fitted" : "held out");
    }
  }
  for (int k = 0; k < r->nlogs; k++)
    if (r->log_geomean[k][1] > r->log_geomean[k][0])
      fprintf(out, "\nwarning: the fit made %s worse (geomean |error| %.1f%% -> %.1f%%): the "
              "parameters fitted to %s do not carry to it", r->logs[k].path,
              100 * r->log_geomean[k][0], 100 * r->log_geomean[k][1],
              r->nlogs > 1 ? "the logs' fitted sizes" : "its fitted sizes");
  fprintf(out, "\ngeomean |error|: fitted sizes (%d) %.1f%% -> %.1f%%", r->n[0],
          100 * r->geomean[0][0], 100 * r->geomean[0][1]);
  if (r->n[1])
    fprintf(out, "; held out (%d) %.1f%% -> %.1f%%", r->n[1], 100 * r->geomean[1][0],
            100 * r->geomean[1][1]);
  fputc('\n', out);
}

static void json_num(FILE *out, const char *key, double v, const char *end) {
  char buf[40];
  jsonfile_format_number(v, buf, sizeof buf);
  fprintf(out, "\"%s\": %s%s", key, buf, end);
}

static void print_json(FILE *out, const coll_fit_opts_t *o, const coll_fit_result_t *r) {
  fputs("{\"parameters\": [", out);
  int n = 0;
  for (int p = 0; p < FIT_PARAMS; p++) {
    if (!r->fitted[p])
      continue;
    fprintf(out, "%s\n  {\"key\": \"%s\", ", n++ ? "," : "", coll_fit_keys[p]);
    json_num(out, "before", r->before[p], ", ");
    json_num(out, "after", r->after[p], ", ");
    fprintf(out, "\"at_bound\": %s}", coll_fit_at_bound(r, p) ? "true" : "false");
  }
  fputs("\n], \"logs\": [", out);
  for (int k = 0; k < r->nlogs; k++) {
    const coll_log_t *log = &r->logs[k];
    fputs(k ? ",\n  {\"file\": " : "\n  {\"file\": ", out);
    jsonfile_write_string(out, log->path);
    fprintf(out, ", \"op\": \"%s\", \"ranks\": %d, \"ranks_per_node\": %d, \"level\": \"%s\", "
            "\"sizes\": [", coll_op_names[log->op], log->ranks, log->ranks_per_node,
            level_names[r->level[k]]);
    for (int i = 0; i < log->nrows; i++) {
      fputs(i ? ",\n    {" : "\n    {", out);
      json_num(out, "bytes", log->bytes[i], ", ");
      json_num(out, "measured_us", log->time_s[i] * 1e6, ", ");
      json_num(out, "before_us", r->pred_s[k][0][i] * 1e6, ", ");
      json_num(out, "after_us", r->pred_s[k][1][i] * 1e6, ", ");
      fprintf(out, "\"fitted\": %s}", coll_fit_row_fitted(o, i) ? "true" : "false");
    }
    fputs("], ", out);
    json_num(out, "geomean_error_before_pct", 100 * r->log_geomean[k][0], ", ");
    json_num(out, "geomean_error_after_pct", 100 * r->log_geomean[k][1], "}");
  }
  fputs("\n], ", out);
  json_num(out, "fitted_geomean_error_before_pct", 100 * r->geomean[0][0], ", ");
  json_num(out, "fitted_geomean_error_after_pct", 100 * r->geomean[0][1], ", ");
  json_num(out, "held_out_geomean_error_before_pct", 100 * r->geomean[1][0], ", ");
  json_num(out, "held_out_geomean_error_after_pct", 100 * r->geomean[1][1], ", ");
  fprintf(out, "\"held_out_sizes\": %d}\n", r->n[1]);
}

static void print_csv(FILE *out, const coll_fit_opts_t *o, const coll_fit_result_t *r) {
  fputs("file,op,ranks,ranks_per_node,bytes,measured_us,before_us,after_us,set\n", out);
  for (int k = 0; k < r->nlogs; k++) {
    const coll_log_t *log = &r->logs[k];
    for (int i = 0; i < log->nrows; i++) {
      out_csv_field(out, log->path, ",");
      fprintf(out, "%s,%d,%d,%.0f,%.4f,%.4f,%.4f,%s\n", coll_op_names[log->op], log->ranks,
              log->ranks_per_node, log->bytes[i], log->time_s[i] * 1e6, r->pred_s[k][0][i] * 1e6,
              r->pred_s[k][1][i] * 1e6, coll_fit_row_fitted(o, i) ? "fitted" : "held_out");
    }
  }
}

void coll_fit_report(FILE *out, out_format_t fmt, const coll_fit_opts_t *o,
                     const coll_fit_result_t *r) {
  if (fmt == FORMAT_JSON)
    print_json(out, o, r);
  else if (fmt == FORMAT_CSV)
    print_csv(out, o, r);
  else
    print_table(out, o, r);
}
