/* calibrate_report.c - what a calibration says; see calibrate_report.h. */
#include "calibrate_report.h"

#include <math.h>

#include "jsonfile.h"

#define CAL_DOMINANT_ROWS 3

/* The fit rows that weigh most in the fitted objective: their line, class,
 * error (predicted / measured - 1) and share, so that a row that pulled the
 * fit is seen. */
static void print_dominant(FILE *out, out_format_t fmt, const chip_cfg_t *chip,
                           const meas_table_t *t) {
  size_t top[CAL_DOMINANT_ROWS];
  double share[CAL_DOMINANT_ROWS];
  int n = cal_dominant_rows(chip, t, CAL_DOMINANT_ROWS, top, share);
  if (fmt == FORMAT_TABLE)
    fprintf(out,
            "\n# fit rows that weigh most after the fit (share of its squared log error)\n"
            "  %-7s %-10s %10s %8s\n",
            "line", "class", "error", "share");
  else if (fmt == FORMAT_JSON)
    fprintf(out, ",\n  \"dominant_rows\": [");
  for (int k = 0; k < n; k++) {
    const meas_row_t *row = &t->rows[top[k]];
    double error = expm1(cal_log_error(chip, row));
    if (fmt == FORMAT_TABLE)
      fprintf(out, "  %-7d %-10s %+9.1f%% %7.1f%%\n", row->line, meas_class_names[row->cls],
              100 * error, 100 * share[k]);
    else if (fmt == FORMAT_CSV)
      fprintf(out, "dominant_row,%d,%s,fit,%.6f,%.6f\n", row->line, meas_class_names[row->cls],
              share[k], error);
    else
      fprintf(out, "%s\n    {\"line\": %d, \"class\": \"%s\", \"error\": %.6f, \"share\": %.6f}",
              k ? "," : "", row->line, meas_class_names[row->cls], error, share[k]);
  }
  if (fmt == FORMAT_JSON)
    fprintf(out, "]");
}

static void print_errors(FILE *out, out_format_t fmt, const char *when, const cal_errors_t *e,
                         bool *first) {
  for (int c = 0; c < MEAS_CLASS_COUNT; c++)
    for (int h = 0; h < 2; h++) {
      if (!e->n[c][h])
        continue;
      const char *half = h ? "held_out" : "fit";
      if (fmt == FORMAT_TABLE)
        fprintf(out, "  %-7s %-10s %-9s %5d %9.1f%%\n", when, meas_class_names[c], half, e->n[c][h],
                100 * e->geomean[c][h]);
      else if (fmt == FORMAT_CSV)
        fprintf(out, "error,%s,%s,%s,%d,%.6f\n", when, meas_class_names[c], half, e->n[c][h],
                e->geomean[c][h]);
      else
        fprintf(out,
                "%s\n    {\"when\": \"%s\", \"class\": \"%s\", \"half\": \"%s\", \"rows\": "
                "%d, \"geomean_error\": %.6f}",
                *first ? "" : ",", when, meas_class_names[c], half, e->n[c][h], e->geomean[c][h]);
      *first = false;
    }
}

static void print_params(FILE *out, out_format_t fmt, const cal_param_t *params, int n) {
  if (fmt == FORMAT_TABLE)
    fprintf(out, "\n# parameters (config units)\n  %-44s %14s %14s\n", "key", "before", "after");
  else if (fmt == FORMAT_JSON)
    fprintf(out, "],\n  \"parameters\": [");
  for (int i = 0; i < n; i++) {
    if (fmt == FORMAT_TABLE)
      fprintf(out, "  %-44s %14.6g %14.6g\n", params[i].path, params[i].before, params[i].after);
    else if (fmt == FORMAT_CSV)
      fprintf(out, "parameter,%s,%.9g,%.9g,,\n", params[i].path, params[i].before, params[i].after);
    else
      fprintf(out, "%s\n    {\"key\": \"%s\", \"before\": %.9g, \"after\": %.9g}", i ? "," : "",
              params[i].path, params[i].before, params[i].after);
  }
  if (fmt == FORMAT_JSON)
    fprintf(out, "]");
}

void cal_report(FILE *out, out_format_t fmt, const cal_opts_t *o, const cal_result_t *r) {
  const meas_table_t *t = &r->table;
  if (fmt == FORMAT_TABLE) {
    fprintf(out, "# npusim calibrate: %zu kernels from %s%s%s\n", t->n, o->measurements,
            t->device[0] ? " measured on " : "", t->device);
    fprintf(out, "# geometric-mean |error| per op class (fit half / held-out half)\n");
    fprintf(out, "  %-7s %-10s %-9s %5s %10s\n", "when", "class", "half", "rows", "error");
  } else if (fmt == FORMAT_CSV) {
    fprintf(out, "kind,when,class,half,rows,geomean_error\n");
  } else {
    fprintf(out, "{\"measurements\": ");
    jsonfile_write_string(out, o->measurements);
    fprintf(out, ", \"kernels\": %zu,\n  \"errors\": [", t->n);
  }
  bool first = true;
  print_errors(out, fmt, "before", &r->before, &first);
  print_errors(out, fmt, "after", &r->after, &first);
  print_params(out, fmt, r->params, r->nparams);
  print_dominant(out, fmt, &o->sys->chip, t);
  if (fmt == FORMAT_JSON)
    fprintf(out, "}\n");
}
