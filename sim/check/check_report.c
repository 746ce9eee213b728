/* check_report.c - the table, JSON, CSV and JUnit XML of a check run; see
 * check_report.h. */
#include "check_report.h"

#include <stdlib.h>
#include <string.h>

#include "jsonfile.h"

int check_failures(const check_set_t *set, const check_result_t *results) {
  int n = 0;
  for (int i = 0; i < set->nrows; i++)
    n += results[i].verdict != CHECK_PASS;
  return n;
}

/* The tolerance as written: "10%", "0.5", "10% or 0.5". */
static void tolerance_text(const check_row_t *r, char *buf, size_t len) {
  if (r->tolerance_abs > 0 && r->tolerance_pct > 0)
    snprintf(buf, len, "%g%% or %g", r->tolerance_pct, r->tolerance_abs);
  else if (r->tolerance_abs > 0)
    snprintf(buf, len, "%g", r->tolerance_abs);
  else
    snprintf(buf, len, "%g%%", r->tolerance_pct);
}

static void print_table(FILE *out, const char *path, const check_set_t *set,
                        const check_result_t *res) {
  int width = 4;
  for (int i = 0; i < set->nrows; i++) {
    int n = (int)strlen(set->rows[i].name);
    width = n > width ? n : width;
  }
  width = width > 60 ? 60 : width;
  fprintf(out, "# npusim check: %s, %d expectations\n", path, set->nrows);
  fprintf(out, "%-*s  %14s  %14s  %9s  %10s  %-6s  %s\n", width, "name", "predicted", "expected",
          "error", "tolerance", "result", "source / why");
  for (int i = 0; i < set->nrows; i++) {
    const check_row_t *r = &set->rows[i];
    const check_result_t *x = &res[i];
    char tol[48];
    tolerance_text(r, tol, sizeof tol);
    if (x->verdict == CHECK_ERROR) {
      fprintf(out, "%-*.*s  %14s  %14.6g  %9s  %10s  %-6s  %s\n", width, width, r->name, "-",
              r->expected, "-", tol, check_verdict_names[x->verdict], x->why);
      continue;
    }
    fprintf(out, "%-*.*s  %14.6g  %14.6g  %+8.2f%%  %10s  %-6s  %s\n", width, width, r->name,
            x->predicted, r->expected, x->error_pct, tol, check_verdict_names[x->verdict],
            r->source);
  }
  int bad = check_failures(set, res);
  fprintf(out, "%d of %d within tolerance%s\n", set->nrows - bad, set->nrows,
          bad ? "; not all: exit status 1" : "");
}

static void json_number(FILE *out, double v) {
  char buf[40];
  jsonfile_format_number(v, buf, sizeof buf);
  fputs(buf, out);
}

static void print_json(FILE *out, const char *path, const check_set_t *set,
                       const check_result_t *res) {
  fputs("{\"file\": ", out);
  jsonfile_write_string(out, path);
  fprintf(out, ", \"rows\": %d, \"failed\": %d, \"results\": [", set->nrows,
          check_failures(set, res));
  for (int i = 0; i < set->nrows; i++) {
    const check_row_t *r = &set->rows[i];
    const check_result_t *x = &res[i];
    fputs(i ? ",\n  {\"name\": " : "\n  {\"name\": ", out);
    jsonfile_write_string(out, r->name);
    fputs(", \"figure\": ", out);
    jsonfile_write_string(out, r->figure);
    fputs(", \"expected\": ", out);
    json_number(out, r->expected);
    fputs(", \"tolerance_pct\": ", out);
    json_number(out, r->tolerance_pct);
    fputs(", \"tolerance_abs\": ", out);
    json_number(out, r->tolerance_abs);
    fprintf(out, ", \"result\": \"%s\"", x->verdict == CHECK_PASS   ? "pass"
                                         : x->verdict == CHECK_FAIL ? "fail"
                                                                    : "error");
    if (x->verdict != CHECK_ERROR) {
      fputs(", \"predicted\": ", out);
      json_number(out, x->predicted);
      fputs(", \"error_pct\": ", out);
      json_number(out, x->error_pct);
    } else {
      fputs(", \"why\": ", out);
      jsonfile_write_string(out, x->why);
    }
    fputs(", \"source\": ", out);
    jsonfile_write_string(out, r->source);
    fputc('}', out);
  }
  fputs("\n]}\n", out);
}

static void print_csv(FILE *out, const check_set_t *set, const check_result_t *res) {
  fputs("name,figure,predicted,expected,error_pct,tolerance_pct,tolerance_abs,result,why,source\n",
        out);
  for (int i = 0; i < set->nrows; i++) {
    const check_row_t *r = &set->rows[i];
    const check_result_t *x = &res[i];
    char num[40];
    out_csv_field(out, r->name, ",");
    out_csv_field(out, r->figure, ",");
    if (x->verdict == CHECK_ERROR)
      fputc(',', out);
    else
      fprintf(out, "%.10g,", x->predicted);
    fprintf(out, "%.10g,", r->expected);
    if (x->verdict == CHECK_ERROR)
      fputc(',', out);
    else
      fprintf(out, "%.6g,", x->error_pct);
    snprintf(num, sizeof num, "%g,%g,", r->tolerance_pct, r->tolerance_abs);
    fputs(num, out);
    fprintf(out, "%s,", x->verdict == CHECK_PASS ? "pass" : x->verdict == CHECK_FAIL ? "fail"
                                                                                   : "error");
    out_csv_field(out, x->verdict == CHECK_ERROR ? x->why : "", ",");
    out_csv_field(out, r->source, "\n");
  }
}

void check_report(FILE *out, out_format_t fmt, const char *path, const check_set_t *set,
                  const check_result_t *results) {
  if (fmt == FORMAT_JSON)
    print_json(out, path, set, results);
  else if (fmt == FORMAT_CSV)
    print_csv(out, set, results);
  else
    print_table(out, path, set, results);
}

/* Text as XML character data or attribute value. */
static void xml_text(FILE *out, const char *s) {
  for (; *s; s++) {
    switch (*s) {
    case '&': fputs("&amp;", out); break;
    case '<': fputs("&lt;", out); break;
    case '>': fputs("&gt;", out); break;
    case '"': fputs("&quot;", out); break;
    default:
      if ((unsigned char)*s < 0x20 && *s != '\t')
        fputc(' ', out); /* control characters are not allowed in XML 1.0 */
      else
        fputc(*s, out);
    }
  }
}

char *check_junit(const char *path, const check_set_t *set, const check_result_t *res,
                  size_t *len) {
  char *buf = NULL;
  FILE *out = open_memstream(&buf, len);
  if (!out)
    return NULL;
  double total = 0;
  int errors = 0, failures = 0;
  for (int i = 0; i < set->nrows; i++) {
    total += res[i].wall_s;
    errors += res[i].verdict == CHECK_ERROR;
    failures += res[i].verdict == CHECK_FAIL;
  }
  fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"", out);
  xml_text(out, path);
  fprintf(out, "\" tests=\"%d\" failures=\"%d\" errors=\"%d\" time=\"%.3f\">\n", set->nrows,
          failures, errors, total);
  for (int i = 0; i < set->nrows; i++) {
    const check_row_t *r = &set->rows[i];
    const check_result_t *x = &res[i];
    fputs("    <testcase classname=\"npusim.check\" name=\"", out);
    xml_text(out, r->name);
    fprintf(out, "\" time=\"%.3f\"", x->wall_s);
    if (x->verdict == CHECK_PASS) {
      fputs("/>\n", out);
      continue;
    }
    char msg[512], tol[48];
    tolerance_text(r, tol, sizeof tol);
    if (x->verdict == CHECK_FAIL)
      snprintf(msg, sizeof msg, "%s: predicted %.6g, expected %.6g (%+.2f%%, tolerance %s)",
               r->figure, x->predicted, r->expected, x->error_pct, tol);
    else
      snprintf(msg, sizeof msg, "%s", x->why);
    fprintf(out, ">\n      <%s message=\"", x->verdict == CHECK_FAIL ? "failure" : "error");
    xml_text(out, msg);
    fprintf(out, "\" type=\"%s\"/>\n    </testcase>\n",
            x->verdict == CHECK_FAIL ? "out_of_tolerance" : "did_not_run");
  }
  fputs("  </testsuite>\n</testsuites>\n", out);
  if (fclose(out) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}
