/* test_serve.c - serving: the request generator (same seed, same requests;
 * lengths within bounds; the log-normal's mean; Poisson arrivals at the asked
 * rate), traces read back as written (JSONL, CSV in any column order, gzip)
 * and refused in one line, --slo parsing, and the event loop's laws on a small
 * deployment built from the shipped configs as `npusim serve` builds it: every
 * request completes, in causal order, with an iteration per output token at
 * least, under KV pressure too (recompute and swap preemption). */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "op_cost.h"
#include "serve_cost.h"
#include "serve_report.h"
#include "serve_requests.h"
#include "serve_sim.h"
#include "suites.h"
#include "test_util.h"
#include "topo.h"

/* ---- the generator ---- */

static serving_cfg_t gen_cfg(int count, int seed, double rate) {
  serving_cfg_t c;
  memset(&c, 0, sizeof c);
  c.count = count;
  c.seed = seed;
  c.rate_per_s = rate;
  c.prompt = (serve_len_cfg_t){SERVE_LEN_LOGNORMAL, 1024, 256, 4096, 0.8};
  c.output = (serve_len_cfg_t){SERVE_LEN_UNIFORM, 256, 8, 64, 0};
  return c;
}

static void generate(const serving_cfg_t *c, serve_requests_t *r) {
  npu_err_t err = {""};
  CU_ASSERT_EQUAL_FATAL(serve_requests_generate(c, r, &err), 0);
  CU_ASSERT_EQUAL_FATAL(r->n, c->count);
}

static void test_generate_same_seed_same_requests(void) {
  serving_cfg_t c = gen_cfg(2000, 7, 5);
  serve_requests_t a, b, d;
  generate(&c, &a);
  generate(&c, &b);
  c.seed = 8;
  generate(&c, &d);
  bool same = true, differs = false;
  for (long i = 0; i < a.n; i++) {
    same &= a.v[i].arrival_s == b.v[i].arrival_s && a.v[i].prompt_tokens == b.v[i].prompt_tokens &&
            a.v[i].output_tokens == b.v[i].output_tokens && a.v[i].line == 0;
    differs |= a.v[i].arrival_s != d.v[i].arrival_s ||
               a.v[i].prompt_tokens != d.v[i].prompt_tokens ||
               a.v[i].output_tokens != d.v[i].output_tokens;
  }
  CU_ASSERT(same);
  CU_ASSERT(differs);
  /* each stream differs on its own: not only one of them depends on the seed */
  long prompt_diff = 0, output_diff = 0, arrival_diff = 0;
  for (long i = 1; i < a.n; i++) {
    prompt_diff += a.v[i].prompt_tokens != d.v[i].prompt_tokens;
    output_diff += a.v[i].output_tokens != d.v[i].output_tokens;
    arrival_diff += a.v[i].arrival_s != d.v[i].arrival_s;
  }
  CU_ASSERT(prompt_diff > a.n / 2);
  CU_ASSERT(output_diff > a.n / 2);
  CU_ASSERT(arrival_diff > a.n / 2);
  serve_requests_free(&a);
  serve_requests_free(&b);
  serve_requests_free(&d);
  CU_ASSERT_PTR_NULL(a.v);
  CU_ASSERT_EQUAL(a.n, 0);
}

static void test_generate_lengths_within_bounds(void) {
  serving_cfg_t c = gen_cfg(5000, 3, 0);
  serve_requests_t r;
  generate(&c, &r);
  int pmin = 1 << 30, pmax = 0, omin = 1 << 30, omax = 0;
  for (long i = 0; i < r.n; i++) {
    pmin = r.v[i].prompt_tokens < pmin ? r.v[i].prompt_tokens : pmin;
    pmax = r.v[i].prompt_tokens > pmax ? r.v[i].prompt_tokens : pmax;
    omin = r.v[i].output_tokens < omin ? r.v[i].output_tokens : omin;
    omax = r.v[i].output_tokens > omax ? r.v[i].output_tokens : omax;
  }
  CU_ASSERT(pmin >= 256 && pmax <= 4096);
  /* log-normal, mean 1024, sigma 0.8 (mu = ln 1024 - 0.32): P(x < 256) is about
   * 9% and P(x > 4096) about 1.6%, so 5000 draws are clipped at both ends */
  CU_ASSERT_EQUAL(pmin, 256);
  CU_ASSERT_EQUAL(pmax, 4096);
  /* uniform over [8, 64]: 57 values, 5000 draws reach both ends (an off-by-one
   * that never draws max, or draws max + 1, fails here) */
  CU_ASSERT_EQUAL(omin, 8);
  CU_ASSERT_EQUAL(omax, 64);
  serve_requests_free(&r);
}

static void test_generate_fixed_is_the_mean(void) {
  serving_cfg_t c = gen_cfg(500, 11, 2);
  c.prompt = (serve_len_cfg_t){SERVE_LEN_FIXED, 700, 1, 700, 0.5};
  c.output = (serve_len_cfg_t){SERVE_LEN_FIXED, 33, 1, 33, 0.5};
  serve_requests_t r;
  generate(&c, &r);
  long bad = 0;
  for (long i = 0; i < r.n; i++)
    bad += r.v[i].prompt_tokens != 700 || r.v[i].output_tokens != 33;
  CU_ASSERT_EQUAL(bad, 0);
  serve_requests_free(&r);
}

/* The log-normal is drawn with mu = ln(mean) - sigma^2 / 2, so its mean is the
 * configured mean (clipping far out of the way). Standard error over 20000
 * draws at sigma 0.5 is about 0.4%: 5% is a wide margin. */
static void test_generate_lognormal_mean(void) {
  serving_cfg_t c = gen_cfg(20000, 5, 0);
  c.prompt = (serve_len_cfg_t){SERVE_LEN_LOGNORMAL, 2000, 1, 100000000, 0.5};
  serve_requests_t r;
  generate(&c, &r);
  double sum = 0;
  for (long i = 0; i < r.n; i++)
    sum += r.v[i].prompt_tokens;
  CU_ASSERT_DOUBLE_EQUAL(sum / (double)r.n, 2000, 100);
  serve_requests_free(&r);
}

static void test_generate_poisson_arrivals(void) {
  const double rate = 40;
  serving_cfg_t c = gen_cfg(20000, 2, rate);
  serve_requests_t r;
  generate(&c, &r);
  CU_ASSERT_EQUAL(r.v[0].arrival_s, 0);
  long backwards = 0, gaps_over_mean = 0;
  for (long i = 1; i < r.n; i++) {
    backwards += r.v[i].arrival_s < r.v[i - 1].arrival_s;
    gaps_over_mean += r.v[i].arrival_s - r.v[i - 1].arrival_s > 1 / rate;
  }
  CU_ASSERT_EQUAL(backwards, 0);
  double mean_gap = (r.v[r.n - 1].arrival_s - r.v[0].arrival_s) / (double)(r.n - 1);
  CU_ASSERT(fabs(mean_gap - 1 / rate) < 0.1 / rate);
  /* exponential gaps: P(gap > mean) = 1/e = 0.368, not the half of a
   * symmetric law nor all of them (fixed spacing) */
  double share = (double)gaps_over_mean / (double)(r.n - 1);
  CU_ASSERT(share > 0.33 && share < 0.40);
  serve_requests_free(&r);
}

static void test_generate_rate_zero_all_at_once(void) {
  serving_cfg_t c = gen_cfg(300, 9, 0);
  serve_requests_t r;
  generate(&c, &r);
  long late = 0;
  for (long i = 0; i < r.n; i++)
    late += r.v[i].arrival_s != 0;
  CU_ASSERT_EQUAL(late, 0);
  serve_requests_free(&r);
}

/* ---- traces ---- */

/* Reads text written as dir/name; returns serve_requests_read's status, err set. */
static int read_trace(const char *dir, const char *name, const char *text, serve_requests_t *r,
                      npu_err_t *err) {
  write_file(dir, name, text);
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  err->msg[0] = '\0';
  return serve_requests_read(path, r, err);
}

/* The error line expected for dir/name: "DIR/NAME" then suffix. */
static const char *want(const char *dir, const char *name, const char *suffix) {
  static char buf[1024];
  snprintf(buf, sizeof buf, "%s/%s%s", dir, name, suffix);
  return buf;
}

static void test_read_jsonl(void) {
  const char *dir = make_temp_dir();
  serve_requests_t r;
  npu_err_t err = {""};
  /* a blank line inside counts for the line numbers; keys in any order, extra keys ignored */
  CU_ASSERT_EQUAL_FATAL(
      read_trace(
          dir, "t.jsonl",
          "{\"arrival_s\": 0, \"prompt_tokens\": 100, \"output_tokens\": 5}\n"
          "\n"
          "{\"output_tokens\": 1, \"prompt_tokens\": 7, \"arrival_s\": 0.25, \"id\": \"x\"}\n"
          "{\"arrival_s\": 0.25, \"prompt_tokens\": 3e3, \"output_tokens\": 12}",
          &r, &err),
      0);
  CU_ASSERT_STRING_EQUAL(err.msg, "");
  CU_ASSERT_EQUAL_FATAL(r.n, 3);
  CU_ASSERT(r.v[0].arrival_s == 0 && r.v[0].prompt_tokens == 100 && r.v[0].output_tokens == 5);
  CU_ASSERT(r.v[1].arrival_s == 0.25 && r.v[1].prompt_tokens == 7 && r.v[1].output_tokens == 1);
  CU_ASSERT(r.v[2].prompt_tokens == 3000 && r.v[2].output_tokens == 12);
  CU_ASSERT_EQUAL(r.v[0].line, 1);
  CU_ASSERT_EQUAL(r.v[1].line, 3);
  CU_ASSERT_EQUAL(r.v[2].line, 4);
  serve_requests_free(&r);
  remove_temp_dir(dir);
}

static void test_read_csv_any_column_order(void) {
  const char *dir = make_temp_dir();
  serve_requests_t r;
  npu_err_t err = {""};
  /* columns reordered, an extra column, spaces, CRLF line ends */
  CU_ASSERT_EQUAL_FATAL(read_trace(dir, "t.csv",
                                   "output_tokens, user, arrival_s ,prompt_tokens\r\n"
                                   "9,alice,0.5,120\r\n"
                                   " 1 ,bob, 1.5 , 64\r\n",
                                   &r, &err),
                        0);
  CU_ASSERT_STRING_EQUAL(err.msg, "");
  CU_ASSERT_EQUAL_FATAL(r.n, 2);
  CU_ASSERT(r.v[0].arrival_s == 0.5 && r.v[0].prompt_tokens == 120 && r.v[0].output_tokens == 9);
  CU_ASSERT(r.v[1].arrival_s == 1.5 && r.v[1].prompt_tokens == 64 && r.v[1].output_tokens == 1);
  CU_ASSERT_EQUAL(r.v[0].line, 2);
  CU_ASSERT_EQUAL(r.v[1].line, 3);
  serve_requests_free(&r);
  remove_temp_dir(dir);
}

static void test_read_gzip(void) {
  const char *dir = make_temp_dir();
  npu_err_t err = {""};
  char path[512];
  snprintf(path, sizeof path, "%s/t.csv.gz", dir);
  gzFile g = gzopen(path, "wb");
  CU_ASSERT_PTR_NOT_NULL_FATAL(g);
  gzputs(g, "arrival_s,prompt_tokens,output_tokens\n0,10,2\n3,20,4\n");
  CU_ASSERT_EQUAL(gzclose(g), Z_OK);
  serve_requests_t r;
  CU_ASSERT_EQUAL_FATAL(serve_requests_read(path, &r, &err), 0);
  CU_ASSERT_EQUAL_FATAL(r.n, 2);
  CU_ASSERT(r.v[1].arrival_s == 3 && r.v[1].prompt_tokens == 20 && r.v[1].output_tokens == 4);
  serve_requests_free(&r);
  remove_temp_dir(dir);
}

static void test_read_errors(void) {
  const char *dir = make_temp_dir();
  serve_requests_t r;
  npu_err_t err = {""};
  static const struct {
    const char *name, *text, *suffix;
  } cases[] = {
      {"empty.jsonl", "", ": expected at least one request, found none"},
      {"header.csv", "arrival_s,prompt_tokens,output_tokens\n",
       ": expected at least one request, found none"},
      {"order.jsonl",
       "{\"arrival_s\": 1, \"prompt_tokens\": 1, \"output_tokens\": 1}\n"
       "{\"arrival_s\": 2, \"prompt_tokens\": 1, \"output_tokens\": 1}\n"
       "{\"arrival_s\": 1.5, \"prompt_tokens\": 1, \"output_tokens\": 1}\n",
       ":3: arrival_s: expected arrivals in time order (at least 2, line 2's), found 1.5"},
      {"string.jsonl", "{\"arrival_s\": 0, \"prompt_tokens\": \"8\", \"output_tokens\": 1}\n",
       ":1: prompt_tokens: expected a number, found \"8\""},
      {"missing.jsonl", "{\"arrival_s\": 0, \"prompt_tokens\": 8}\n",
       ":1: output_tokens: expected a number, found no such key"},
      {"frac.jsonl", "{\"arrival_s\": 0, \"prompt_tokens\": 8, \"output_tokens\": 2.5}\n",
       ":1: output_tokens: expected a whole number of tokens in [1, 1e8], found 2.5"},
      {"negative.csv", "arrival_s,prompt_tokens,output_tokens\n-0.5,8,1\n",
       ":2: arrival_s: expected a time in [0, 1e18] seconds, found -0.5"},
      {"column.csv", "arrival_s,prompt,output_tokens\n0,8,1\n",
       ":1: expected a CSV header naming arrival_s, prompt_tokens and output_tokens (or JSONL "
       "objects), found no prompt_tokens column"},
      {"fields.csv", "arrival_s,prompt_tokens,output_tokens\n0,8,1\n1,8\n",
       ":3: expected 3 fields as in the header, found 2"},
      {"word.csv", "arrival_s,prompt_tokens,output_tokens\n0,8,lots\n",
       ":2: output_tokens: expected a decimal number, found \"lots\""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    r.v = (serve_request_t *)&r; /* must be reset, not freed */
    r.n = 99;
    CU_ASSERT_EQUAL(read_trace(dir, cases[i].name, cases[i].text, &r, &err), -1);
    CU_ASSERT_STRING_EQUAL(err.msg, want(dir, cases[i].name, cases[i].suffix));
    CU_ASSERT_PTR_NULL(r.v);
    CU_ASSERT_EQUAL(r.n, 0);
  }
  CU_ASSERT_EQUAL(serve_requests_read("/nonexistent/npusim/t.jsonl", &r, &err), -1);
  CU_ASSERT_STRING_EQUAL(err.msg, "/nonexistent/npusim/t.jsonl: expected a request trace (JSONL or "
                              "CSV), found No such file or directory");
  remove_temp_dir(dir);
}

/* Writes len bytes (NULs too) as dir/name. */
static void write_bytes(const char *dir, const char *name, const char *bytes, size_t len) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  CU_ASSERT_EQUAL(fwrite(bytes, 1, len, f), len);
  CU_ASSERT_EQUAL(fclose(f), 0);
}

#define CSV_HEAD "arrival_s,prompt_tokens,output_tokens\n"
#define JSONL_ROW "{\"arrival_s\": 0, \"prompt_tokens\": 8, \"output_tokens\": 1"

/* Numbers and shapes strtod, strtok and cJSON's first match let through: each
 * is now refused with its line and field. */
static void test_read_strict(void) {
  const char *dir = make_temp_dir();
  serve_requests_t r;
  npu_err_t err = {""};
  char wide_head[1024] = "", wide_row[1024] = "";
  for (int i = 0; i < 61; i++) /* 64 columns; a row of 65 fields */
    snprintf(wide_head + strlen(wide_head), 64, "c%d,", i);
  strcat(wide_head, "arrival_s,prompt_tokens,output_tokens\n");
  for (int i = 0; i < 62; i++)
    strcat(wide_row, "x,");
  strcat(wide_row, "0,8,1\n");
  char *wide = malloc(strlen(wide_head) + strlen(wide_row) + 1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(wide);
  strcat(strcpy(wide, wide_head), wide_row);
  const struct {
    const char *name, *text, *suffix;
  } cases[] = {
      {"hex.csv", CSV_HEAD "0x10,8,1\n",
       ":2: arrival_s: expected a decimal number, found \"0x10\""},
      {"inside.csv", CSV_HEAD "0,12 34,1\n",
       ":2: prompt_tokens: expected a decimal number, found \"12 34\""},
      {"exp.csv", CSV_HEAD "0,8,1e\n",
       ":2: output_tokens: expected a decimal number, found \"1e\""},
      {"inf.csv", CSV_HEAD "inf,8,1\n", ":2: arrival_s: expected a decimal number, found \"inf\""},
      {"nan.csv", CSV_HEAD "0,nan,1\n",
       ":2: prompt_tokens: expected a decimal number, found \"nan\""},
      {"signs.csv", CSV_HEAD "0,+-8,1\n",
       ":2: prompt_tokens: expected a decimal number, found \"+-8\""},
      {"empty.csv", CSV_HEAD "0,,1\n", ":2: prompt_tokens: expected a decimal number, found \"\""},
      {"huge.csv", CSV_HEAD "0,1e400,1\n",
       ":2: prompt_tokens: expected a whole number of tokens in [1, 1e8], found 1e400"},
      {"late.csv", CSV_HEAD "1e300,8,1\n",
       ":2: arrival_s: expected a time in [0, 1e18] seconds, found 1e300"},
      {"late.jsonl", "{\"arrival_s\": 1.5e18, \"prompt_tokens\": 8, \"output_tokens\": 1}\n",
       ":1: arrival_s: expected a time in [0, 1e18] seconds, found 1.5e+18"},
      {"quote.csv", CSV_HEAD "0,8,\"1\n",
       ":2: field 3: expected a closing quote on the same line, found the end of the line"},
      {"after.csv", CSV_HEAD "\"0\"x,8,1\n",
       ":2: field 1: expected a comma after the closing quote, found 'x'"},
      {"unnamed.csv", "arrival_s,,prompt_tokens,output_tokens\n0,8,1\n",
       ":2: expected 4 fields as in the header, found 3"},
      {"name.csv", "arrival_s x,prompt_tokens,output_tokens\n0,8,1\n",
       ":1: expected a CSV header naming arrival_s, prompt_tokens and output_tokens (or JSONL "
       "objects), found no arrival_s column"},
      {"wide.csv", wide, ":2: expected 64 fields as in the header, found 65"},
      {"twice.jsonl", JSONL_ROW ", \"prompt_tokens\": 9}\n",
       ":1: prompt_tokens: expected each key once, found it twice"},
      {"after.jsonl", JSONL_ROW "} x\n", ":1:58: expected valid JSON, found 'x'"},
      {"close.csv", CSV_HEAD "1234567.8901,8,1\n1234567.89009,8,1\n",
       ":3: arrival_s: expected arrivals in time order (at least 1234567.8901, line 2's), found "
       "1234567.89009"},
      {"cr.csv", CSV_HEAD "0,8,1\r\r\n",
       ":2: output_tokens: expected a decimal number, found \"1\r\""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    r.v = (serve_request_t *)&r;
    r.n = 99;
    CU_ASSERT_EQUAL(read_trace(dir, cases[i].name, cases[i].text, &r, &err), -1);
    CU_ASSERT_STRING_EQUAL(err.msg, want(dir, cases[i].name, cases[i].suffix));
    CU_ASSERT_PTR_NULL(r.v);
    CU_ASSERT_EQUAL(r.n, 0);
  }
  free(wide);
  /* a NUL byte names its line and column */
  static const char nul[] = CSV_HEAD "0,8,1\n1,8\0,1\n";
  write_bytes(dir, "nul.csv", nul, sizeof nul - 1);
  char path[512];
  snprintf(path, sizeof path, "%s/nul.csv", dir);
  CU_ASSERT_EQUAL(serve_requests_read(path, &r, &err), -1);
  CU_ASSERT_STRING_EQUAL(err.msg, want(dir, "nul.csv", ":3:4: expected text, found a NUL byte"));
  remove_temp_dir(dir);
}

/* What CSV writers and JSONL files legitimately hold reads as meant. */
static void test_read_lenient_where_clear(void) {
  const char *dir = make_temp_dir();
  serve_requests_t r;
  npu_err_t err = {""};
  /* a byte order mark (spreadsheets), CRLF, quoted fields with commas and quotes,
   * an unnamed last column (a trailing comma), decimals in every spelling */
  CU_ASSERT_EQUAL_FATAL(
      read_trace(dir, "excel.csv",
                 "\xef\xbb\xbf\"arrival_s\",\"prompt_tokens\",\"output_tokens\",\"note\",\r\n"
                 "-0,+16,1E2,,\r\n"
                 "\"0.5\",\" 8 \",1,\"a, b \"\"c\"\"\",\r\n"
                 ".75,0012,2.,x,\r\n"
                 "1.25e1 , 5.0e0,3,\"\",",
                 &r, &err),
      0);
  CU_ASSERT_STRING_EQUAL(err.msg, "");
  CU_ASSERT_EQUAL_FATAL(r.n, 4);
  /* -0 arrives at 0, not at a -0 that would print as "-0" */
  CU_ASSERT(r.v[0].arrival_s == 0 && !signbit(r.v[0].arrival_s));
  CU_ASSERT(r.v[0].prompt_tokens == 16 && r.v[0].output_tokens == 100);
  CU_ASSERT(r.v[1].arrival_s == 0.5 && r.v[1].prompt_tokens == 8 && r.v[1].output_tokens == 1);
  CU_ASSERT(r.v[2].arrival_s == 0.75 && r.v[2].prompt_tokens == 12 && r.v[2].output_tokens == 2);
  CU_ASSERT(r.v[3].arrival_s == 12.5 && r.v[3].prompt_tokens == 5 && r.v[3].output_tokens == 3);
  CU_ASSERT_EQUAL(r.v[3].line, 5);
  serve_requests_free(&r);
  /* empty and blank lines count for the line numbers, before and between rows */
  CU_ASSERT_EQUAL_FATAL(read_trace(dir, "blank.jsonl",
                                   "\n\n \t\n\r\n" JSONL_ROW "}\n\n\n" JSONL_ROW "}\r\n\n", &r, &err),
                        0);
  CU_ASSERT_EQUAL_FATAL(r.n, 2);
  CU_ASSERT_EQUAL(r.v[0].line, 5);
  CU_ASSERT_EQUAL(r.v[1].line, 8);
  serve_requests_free(&r);
  remove_temp_dir(dir);
}

/* A line is at most SERVE_TRACE_MAX_LINE bytes, its line end not counted. */
static void test_read_line_bound(void) {
  const char *dir = make_temp_dir();
  serve_requests_t r;
  npu_err_t err = {""};
  size_t len = SERVE_TRACE_MAX_LINE;
  char *text = malloc(2 * len + 64);
  CU_ASSERT_PTR_NOT_NULL_FATAL(text);
  static const char head[] = JSONL_ROW ", \"pad\": \"";
  for (int extra = 0; extra <= 1; extra++) {
    size_t pad = len + (size_t)extra - strlen(head) - 2;
    strcpy(text, head);
    memset(text + strlen(head), 'x', pad);
    strcpy(text + strlen(head) + pad, "\"}\r\n");
    CU_ASSERT_EQUAL(strlen(text), len + (size_t)extra + 2);
    int rc = read_trace(dir, "long.jsonl", text, &r, &err);
    if (extra == 0) {
      CU_ASSERT_EQUAL(rc, 0);
      CU_ASSERT_EQUAL(r.n, 1);
      serve_requests_free(&r);
    } else {
      CU_ASSERT_EQUAL(rc, -1);
      CU_ASSERT_STRING_EQUAL(err.msg, want(dir, "long.jsonl",
                                       ":1: expected a line of at most 1048576 bytes, found a "
                                       "longer one"));
    }
  }
  /* a line far longer than the bound is refused as soon as it passes it */
  memset(text, ' ', 2 * len);
  text[2 * len] = '\0';
  CU_ASSERT_EQUAL(read_trace(dir, "spaces.csv", text, &r, &err), -1);
  CU_ASSERT_STRING_EQUAL(err.msg, want(dir, "spaces.csv",
                                   ":1: expected a line of at most 1048576 "
                                   "bytes, found a longer one"));
  free(text);
  remove_temp_dir(dir);
}

static void test_check_context(void) {
  serve_request_t v[] = {{0, 100, 28, 1}, {0, 100, 29, 2}};
  serve_requests_t r = {v, 2};
  npu_err_t err = {""};
  serve_requests_t first = {v, 1};
  CU_ASSERT_EQUAL(serve_requests_check_context(&first, "t.jsonl", 128, &err), 0);
  CU_ASSERT_EQUAL(serve_requests_check_context(&r, "t.jsonl", 128, &err), -1);
  CU_ASSERT_STRING_EQUAL(err.msg, "t.jsonl:2: prompt_tokens + output_tokens: expected at most the "
                              "context, model.seq_len = 128, found 100 + 29");
  v[1].line = 0; /* generated: named by index */
  CU_ASSERT_EQUAL(serve_requests_check_context(&r, "w.json", 128, &err), -1);
  CU_ASSERT_STRING_EQUAL(err.msg, "w.json: generated request 1: prompt_tokens + output_tokens: "
                              "expected at most the context, model.seq_len = 128, found 100 + 29");
}

/* ---- --slo ---- */

static void test_slo_parse(void) {
  serve_slo_t slo;
  npu_err_t err = {""};
  CU_ASSERT_EQUAL(serve_slo_parse("ttft_ms=200,tpot_ms=50", &slo, &err), 0);
  CU_ASSERT_DOUBLE_EQUAL(slo.ttft_s, 0.2, 1e-15);
  CU_ASSERT_DOUBLE_EQUAL(slo.tpot_s, 0.05, 1e-15);
  CU_ASSERT_EQUAL(serve_slo_parse("tpot_ms=2.5", &slo, &err), 0);
  CU_ASSERT_EQUAL(slo.ttft_s, 0); /* left out: not checked */
  CU_ASSERT_DOUBLE_EQUAL(slo.tpot_s, 0.0025, 1e-15);
  CU_ASSERT_EQUAL(serve_slo_parse("tpot_ms=1e9,ttft_ms=.001", &slo, &err), 0);
  CU_ASSERT_DOUBLE_EQUAL(slo.ttft_s, 1e-6, 1e-21); /* the range's ends */
  CU_ASSERT_DOUBLE_EQUAL(slo.tpot_s, 1e6, 1e-9);
  static const struct {
    const char *text, *err;
  } bad[] = {
      {"latency_ms=3", "--slo: expected ttft_ms or tpot_ms, found \"latency_ms\""},
      {"ttft_ms=0", "--slo: ttft_ms: expected a number of ms in [0.001, 1e9], found \"0\""},
      {"tpot_ms=-4", "--slo: tpot_ms: expected a number of ms in [0.001, 1e9], found \"-4\""},
      {"ttft_ms=5,tpot_ms=fast",
       "--slo: tpot_ms: expected a number of ms in [0.001, 1e9], found \"fast\""},
      {"ttft_ms=nan", "--slo: ttft_ms: expected a number of ms in [0.001, 1e9], found \"nan\""},
      {"ttft_ms=inf", "--slo: ttft_ms: expected a number of ms in [0.001, 1e9], found \"inf\""},
      {"ttft_ms", "--slo: expected ttft_ms=T,tpot_ms=P, found \"ttft_ms\""},
      {"ttft_ms=1;tpot_ms=2",
       "--slo: ttft_ms: expected a number of ms in [0.001, 1e9], found \"1;tpot_ms=2\""},
      /* strtod took these: hex, spaces, a trailing comma or nothing, a key twice (the
       * last won), values that round to no limit at all */
      {"ttft_ms=0x10", "--slo: ttft_ms: expected a number of ms in [0.001, 1e9], found \"0x10\""},
      {"ttft_ms= 5", "--slo: ttft_ms: expected a number of ms in [0.001, 1e9], found \" 5\""},
      {"ttft_ms=5 ", "--slo: ttft_ms: expected a number of ms in [0.001, 1e9], found \"5 \""},
      {"ttft_ms=5,", "--slo: expected ttft_ms=T,tpot_ms=P, found \"ttft_ms=5,\""},
      {"", "--slo: expected ttft_ms=T,tpot_ms=P, found \"\""},
      {"ttft_ms=5,ttft_ms=1e-9", "--slo: ttft_ms: expected it once, found it twice"},
      {"tpot_ms=1e-4", "--slo: tpot_ms: expected a number of ms in [0.001, 1e9], found \"1e-4\""},
      {"tpot_ms=1e400", "--slo: tpot_ms: expected a number of ms in [0.001, 1e9], found \"1e400\""},
      {"tpot_ms=1e", "--slo: tpot_ms: expected a number of ms in [0.001, 1e9], found \"1e\""},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err.msg[0] = '\0';
    CU_ASSERT_EQUAL(serve_slo_parse(bad[i].text, &slo, &err), -1);
    CU_ASSERT_STRING_EQUAL(err.msg, bad[i].err);
  }
}

/* ---- the event loop on a deployment from the shipped configs ---- */

typedef struct {
  system_cfg_t sys;
  workload_cfg_t wl;
  topo_t topo;
  op_cache_t *ops;
  serve_sim_pool_t pools[2];
  int npools;
  serve_requests_t reqs;
  serve_sim_result_t res;
} deployment_t;

/* serve-llama3-8b.json on ascend-910b.json with the overrides, deployed and
 * run as serve_run.c does, busy stretches held to busy_max_s (0: the default);
 * what serve_sim_run returns, its message in err. */
static int deploy_and_try(const char *const *sets, bool log, double busy_max_s, deployment_t *d,
                          npu_err_t *err) {
  memset(d, 0, sizeof *d);
  d->sys = load_system("ascend-910b.json", NULL);
  const char *why = load_text(CONFIG_WORKLOAD, WORKLOADS_DIR,
                              "{\"extends\": \"serve-llama3-8b.json\"}", sets, &d->wl);
  if (*why)
    fprintf(stderr, "\n  %s\n", why);
  CU_ASSERT_STRING_EQUAL_FATAL(why, "");
  const serving_cfg_t *s = &d->wl.serving;
  CU_ASSERT_FATAL(d->wl.has_serving);
  CU_ASSERT_EQUAL_FATAL(serve_requests_generate(s, &d->reqs, err), 0);
  CU_ASSERT_EQUAL_FATAL(
      serve_requests_check_context(&d->reqs, "w.json", d->wl.model.seq_len, err), 0);
  d->npools = serve_sim_pools(s, d->pools);
  CU_ASSERT_EQUAL_FATAL(topo_build(&d->sys.node, &d->sys.cluster, d->sys.chip.dies_per_package,
                                   (int)serve_total_npus(s), 0, &d->topo, err),
                        0);
  d->ops = op_cache_new(&d->sys.chip);
  CU_ASSERT_PTR_NOT_NULL_FATAL(d->ops);
  for (int k = 0; k < d->npools; k++) {
    npu_err_t e = {{0}};
    d->pools[k].cost =
        serve_cost_new(&d->sys, &d->wl, "w.json", serve_pool_paths[d->pools[k].kind],
                       d->pools[k].plan, &d->topo, d->pools[k].first_rank, d->ops, &e);
    if (!d->pools[k].cost)
      fprintf(stderr, "\n  %s\n", e.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d->pools[k].cost);
  }
  serve_sim_opts_t opts = {log, NULL, "w.json", busy_max_s};
  return serve_sim_run(s, d->pools, d->npools, &d->topo, &d->reqs, &opts, &d->res, err);
}

static void deploy_and_run(const char *const *sets, bool log, deployment_t *d) {
  npu_err_t err = {""};
  int rc = deploy_and_try(sets, log, 0, d, &err);
  if (rc)
    fprintf(stderr, "\n  %s\n", err.msg);
  CU_ASSERT_EQUAL_FATAL(rc, 0);
}

static void deployment_free(deployment_t *d) {
  serve_sim_result_free(&d->res);
  for (int k = 0; k < d->npools; k++)
    serve_cost_free(d->pools[k].cost);
  op_cache_free(d->ops);
  topo_free(&d->topo);
  serve_requests_free(&d->reqs);
}

/* The laws of any run: every request done, each after it arrived and its first
 * token before its last; an iteration of the engine per output token at least;
 * the counters add up. Returns how many requests did not complete. */
static long check_run(const deployment_t *d) {
  const serve_sim_result_t *r = &d->res;
  CU_ASSERT_EQUAL(r->nreq, d->reqs.n);
  long unfinished = 0, causal = 0, one_token = 0, copied = 0, preempt = 0;
  for (long i = 0; i < r->nreq; i++)
    preempt += r->req[i].preemptions;
  int longest_output = 0;
  double last = 0;
  for (long i = 0; i < r->nreq; i++) {
    const serve_req_result_t *q = &r->req[i];
    if (!isfinite(q->e2e_s) || !isfinite(q->ttft_s) || !isfinite(q->decode_s)) {
      unfinished++;
      continue;
    }
    causal += q->ttft_s > 0 && q->decode_s >= 0 && /* a prefill takes time */
              q->e2e_s >= q->ttft_s && q->end_s >= q->e2e_s;
    one_token += q->output_tokens != 1 || q->decode_s == 0;
    copied += q->arrival_s == d->reqs.v[i].arrival_s &&
              q->prompt_tokens == d->reqs.v[i].prompt_tokens &&
              q->output_tokens == d->reqs.v[i].output_tokens;
    longest_output = q->output_tokens > longest_output ? q->output_tokens : longest_output;
    last = fmax(last, q->end_s);
  }
  CU_ASSERT_EQUAL(unfinished, 0);
  CU_ASSERT_EQUAL(causal, r->nreq - unfinished);
  CU_ASSERT_EQUAL(one_token, r->nreq - unfinished);
  CU_ASSERT_EQUAL(copied, r->nreq - unfinished);
  CU_ASSERT_EQUAL(preempt, r->preemptions);
  CU_ASSERT(r->iterations >= longest_output);
  CU_ASSERT(r->decode.iterations + r->prefill.iterations <= r->iterations);
  if (unfinished == 0)
    CU_ASSERT_EQUAL(r->makespan_s, last);
  return unfinished;
}

static void test_sim_every_request_completes(void) {
  const char *sets[] = {"serving.requests.count=120", "serving.requests.rate_per_s=20", NULL};
  deployment_t d;
  deploy_and_run(sets, true, &d);
  check_run(&d);
  /* the default KV cache (tens of GiB) holds this load: nothing preempted */
  CU_ASSERT_EQUAL(d.res.preemptions, 0);
  CU_ASSERT_EQUAL(d.res.kv_transfers, 0);
  /* the log: a row per iteration, each ending after it starts, in time order
   * on its one engine (pp 1) */
  CU_ASSERT_EQUAL(d.res.nlog, d.res.iterations);
  long bad = 0;
  for (long i = 0; i < d.res.nlog; i++) {
    const serve_iter_log_t *l = &d.res.log[i];
    bad += !(l->end_s > l->start_s) || l->instance != 0 || l->engine != 0 ||
           l->decodes + l->prefills == 0 || l->tokens < l->decodes + l->prefills ||
           (i > 0 && l->start_s < d.res.log[i - 1].end_s);
  }
  CU_ASSERT_EQUAL(bad, 0);
  deployment_free(&d);
}

static void test_sim_is_deterministic(void) {
  const char *sets[] = {"serving.requests.count=60", "serving.requests.rate_per_s=30", NULL};
  deployment_t a, b;
  deploy_and_run(sets, false, &a);
  deploy_and_run(sets, false, &b);
  CU_ASSERT_EQUAL_FATAL(a.res.nreq, b.res.nreq);
  CU_ASSERT(memcmp(a.res.req, b.res.req, (size_t)a.res.nreq * sizeof *a.res.req) == 0);
  CU_ASSERT_EQUAL(a.res.iterations, b.res.iterations);
  CU_ASSERT_EQUAL(a.res.makespan_s, b.res.makespan_s);
  CU_ASSERT_PTR_NULL(a.res.log);
  deployment_free(&a);
  deployment_free(&b);
}

/* The generator's overrides for prompts of P tokens and outputs of O. */
#define FIXED_LENGTHS(P, O)                                                                        \
  "serving.requests.prompt.distribution=fixed", "serving.requests.prompt.mean=" #P,                \
      "serving.requests.prompt.max=" #P, "serving.requests.output.distribution=fixed",             \
      "serving.requests.output.mean=" #O, "serving.requests.output.max=" #O

/* 40 requests at once, each a 32-token prompt and 480 output tokens (512 tokens,
 * 32 blocks of 16), into a 0.1 GiB cache: 51 blocks of 16 tokens at 128 KiB a
 * token. All 40 prompts fit when admitted, their decodes cannot: sequences are
 * preempted, and still every one completes. */
static const char *const tight_kv[] = {"serving.requests.count=40",
                                       "serving.requests.rate_per_s=0",
                                       FIXED_LENGTHS(32, 480),
                                       "serving.kv_cache.capacity_GiB=0.1",
                                       NULL,
                                       NULL,
                                       NULL};

static void tight_kv_run(const char *extra, const char *extra2) {
  const char *sets[sizeof tight_kv / sizeof tight_kv[0]];
  memcpy(sets, tight_kv, sizeof sets);
  sets[9] = extra;
  sets[10] = extra2;
  deployment_t d;
  deploy_and_run(sets, false, &d);
  const serve_memory_t *m = serve_cost_memory(d.pools[0].cost);
  /* each NPU holds its stage's layers: 32 / pp x K,V x 8 kv_heads x 128 x bf16 */
  CU_ASSERT_EQUAL(m->kv_per_token, 32 / d.wl.serving.colocated.pp * 2 * 8 * 128 * 2);
  CU_ASSERT_EQUAL(m->kv_blocks, (long)(0.1 * 1024 * 1024 * 1024 / (16 * m->kv_per_token)));
  CU_ASSERT(d.res.preemptions > 0);
  long unfinished = check_run(&d);
  if (unfinished)
    fprintf(stderr, "\n  %s%s%s: %ld of %ld requests never finished\n", extra ? extra : "",
            extra2 ? " " : "", extra2 ? extra2 : "", unfinished, d.res.nreq);
  /* one sequence's 480 tokens need 480 iterations: 40 of them in at most 51
   * blocks cannot all run at once, so the run takes more iterations than one
   * request alone */
  CU_ASSERT(d.res.iterations > 480);
  deployment_free(&d);
}

static void test_sim_preemption_recompute(void) {
  tight_kv_run(NULL, NULL);
}

static void test_sim_preemption_swap(void) {
  tight_kv_run("serving.kv_cache.preemption=swap", NULL);
}

static void test_sim_preemption_pipeline(void) {
  tight_kv_run("serving.parallel.pp=2", NULL);
}

/* Two 2000-token prompts at once on two pipeline engines, in 512-token chunks,
 * sharing a 0.15 GiB cache: 153 blocks of 16 tokens at 64 KiB a token (16
 * layers a stage), 125 blocks for each whole prompt. Each engine prefills its
 * own prompt; at 96 blocks each neither can go on. The older takes the
 * younger's blocks (its engine's is in no batch): both complete. Before, each
 * engine looked only at its own sequences and the run ended with neither. */
static void test_sim_pipeline_engines_share_the_pool(void) {
  const char *sets[] = {"serving.requests.count=2",
                        "serving.requests.rate_per_s=0",
                        FIXED_LENGTHS(2000, 10),
                        "serving.scheduler.max_batched_tokens=512",
                        "serving.kv_cache.capacity_GiB=0.15",
                        "serving.parallel.pp=2",
                        NULL};
  deployment_t d;
  deploy_and_run(sets, false, &d);
  const serve_memory_t *m = serve_cost_memory(d.pools[0].cost);
  CU_ASSERT_EQUAL(m->kv_blocks, 153);
  CU_ASSERT_EQUAL(check_run(&d), 0);
  /* the younger prompt was preempted (once or more), the older never */
  CU_ASSERT(d.res.preemptions >= 1);
  CU_ASSERT_EQUAL(d.res.req[0].preemptions, 0);
  CU_ASSERT_EQUAL(d.res.req[1].preemptions, d.res.preemptions);
  deployment_free(&d);
}

/* model.head_dim apart from hidden / heads: the KV cache holds kv_heads x
 * head_dim per layer for keys and for values (32 layers x 2 x 8 x 64 x bf16),
 * the attention output in the activations is 32 x 64 wide instead of 4096, and
 * the run completes. */
static void test_sim_head_dim_sizes_the_kv_cache(void) {
  const char *sets[] = {"serving.requests.count=4", "model.head_dim=64", NULL};
  const char *plain[] = {"serving.requests.count=4", NULL};
  deployment_t d, p;
  deploy_and_run(sets, false, &d);
  const serve_memory_t *m = serve_cost_memory(d.pools[0].cost);
  CU_ASSERT_EQUAL(m->kv_per_token, 32 * 2 * 8 * 64 * 2);
  CU_ASSERT_EQUAL(check_run(&d), 0);
  double activations = m->activations;
  deployment_free(&d);
  deploy_and_run(plain, false, &p);
  CU_ASSERT_EQUAL(p.wl.model.head_dim, 0);
  CU_ASSERT_EQUAL(p.wl.serving.max_batched_tokens * (4096.0 - 32 * 64) * 2,
                  serve_cost_memory(p.pools[0].cost)->activations - activations);
  deployment_free(&p);
}

/* Requests far apart: the clock restarts at each (the deployment idle), each
 * request's latencies are those of the same request alone, and the makespan
 * spans the gaps. */
static void test_sim_clock_restarts_when_idle(void) {
  const char *far[] = {"serving.requests.count=5", "serving.requests.rate_per_s=1e-9", NULL};
  deployment_t d;
  deploy_and_run(far, false, &d);
  CU_ASSERT_EQUAL(check_run(&d), 0);
  CU_ASSERT_EQUAL(d.res.busy_stretches, 5);
  CU_ASSERT(d.res.makespan_s > d.reqs.v[4].arrival_s - d.reqs.v[0].arrival_s);
  for (long i = 0; i < d.reqs.n; i++) {
    char prompt[64], output[64];
    snprintf(prompt, sizeof prompt, "serving.requests.prompt.mean=%d", d.reqs.v[i].prompt_tokens);
    snprintf(output, sizeof output, "serving.requests.output.mean=%d", d.reqs.v[i].output_tokens);
    const char *one[] = {"serving.requests.count=1",
                         "serving.requests.prompt.distribution=fixed",
                         prompt,
                         "serving.requests.prompt.min=1",
                         "serving.requests.output.distribution=fixed",
                         output,
                         "serving.requests.output.min=1",
                         NULL};
    deployment_t a;
    deploy_and_run(one, false, &a);
    const serve_req_result_t *q = &d.res.req[i], *r = &a.res.req[0];
    CU_ASSERT_EQUAL(r->output_tokens, q->output_tokens);
    CU_ASSERT(q->ttft_s == r->ttft_s && q->decode_s == r->decode_s && q->e2e_s == r->e2e_s);
    deployment_free(&a);
  }
  deployment_free(&d);
}

/* A busy stretch longer than the clock resolves to 1 ns is refused in one
 * line naming the requests (here the bound is lowered to 1 ms so that 40
 * requests at once exceed it). */
static void test_sim_refuses_a_busy_stretch_past_the_bound(void) {
  const char *sets[] = {"serving.requests.count=40", "serving.requests.rate_per_s=0", NULL};
  deployment_t d;
  npu_err_t err = {""};
  CU_ASSERT_EQUAL(deploy_and_try(sets, true, 1e-3, &d, &err), SERVE_SIM_REFUSED);
  CU_ASSERT_STRING_EQUAL(err.msg, "w.json: arrival_s: expected the deployment idle again within "
                              "0.001 s of an arrival that finds it idle (the serving clock "
                              "resolves 1 ns up to there), found it still busy 0.001 s after "
                              "the arrival at 0 s");
  CU_ASSERT_PTR_NULL(d.res.req);
  CU_ASSERT_PTR_NULL(d.res.log);
  deployment_free(&d);
}

/* The last line of defence: a request the simulation cannot finish (here one
 * larger than the whole cache, which npusim serve refuses before simulating,
 * serve_deploy_check_fits) ends the run in an internal error naming it, not in
 * a result with the request missing. */
static void test_sim_unfinished_requests_are_an_error(void) {
  const char *sets[] = {"serving.requests.count=2", "serving.requests.rate_per_s=0",
                        FIXED_LENGTHS(100, 10), "serving.kv_cache.capacity_GiB=0.01", NULL};
  deployment_t d;
  npu_err_t err = {""};
  CU_ASSERT_EQUAL(deploy_and_try(sets, true, 0, &d, &err), SERVE_SIM_INTERNAL);
  CU_ASSERT_STRING_EQUAL(err.msg, "npusim serve: internal error: 2 of 2 requests unfinished when "
                              "nothing was left to run (request 0, arrival_s 0: instance 0, "
                              "engine 0, group 0, 0 of 100 tokens cached, 0 generated, not "
                              "running); nothing written");
  CU_ASSERT_PTR_NULL(d.res.req);
  deployment_free(&d);
}

/* Disaggregated: every request with more than one output token has its KV
 * cache sent once to the decode pool; a one-token request ends at its prefill. */
static void test_sim_disaggregated_transfers(void) {
  const char *sets[] = {"serving.requests.count=80",
                        "serving.requests.rate_per_s=15",
                        "serving.requests.output.distribution=uniform",
                        "serving.requests.output.min=1",
                        "serving.requests.output.mean=2",
                        "serving.requests.output.max=4",
                        "serving.prefill.instances=1",
                        "serving.decode.instances=2",
                        NULL};
  deployment_t d;
  deploy_and_run(sets, false, &d);
  CU_ASSERT_FATAL(d.wl.serving.disaggregated);
  check_run(&d);
  long multi = 0, single = 0;
  for (long i = 0; i < d.reqs.n; i++) {
    multi += d.reqs.v[i].output_tokens > 1;
    single += d.reqs.v[i].output_tokens == 1;
  }
  CU_ASSERT(single > 0 && multi > 0); /* the draw exercises both */
  CU_ASSERT_EQUAL(d.res.kv_transfers, multi);
  CU_ASSERT(d.res.kv_transfer_s > 0);
  deployment_free(&d);
}

/* ---- serving effects: speculative decoding, prefix caching, CUDA graphs ---- */

/* A closed batch of 4 requests at t=0: 512-token prompts, 129 tokens out. */
#define CLOSED_BATCH                                                                               \
  "serving.requests.count=4", "serving.requests.rate_per_s=0", FIXED_LENGTHS(512, 129)

static void assert_same_results(const deployment_t *a, const deployment_t *b) {
  CU_ASSERT_EQUAL_FATAL(a->res.nreq, b->res.nreq);
  CU_ASSERT(memcmp(a->res.req, b->res.req, (size_t)a->res.nreq * sizeof *a->res.req) == 0);
  CU_ASSERT_EQUAL(a->res.iterations, b->res.iterations);
  CU_ASSERT_EQUAL(a->res.makespan_s, b->res.makespan_s);
  CU_ASSERT_EQUAL(a->res.dynamic_J, b->res.dynamic_J);
}

/* Acceptance 1 with k draft tokens: k + 1 tokens per decode step, so the 128
 * tokens after the first take 128 / (k + 1) steps; k = 0 is today's run. */
static void test_spec_known_answers(void) {
  const char *base[] = {CLOSED_BATCH, NULL};
  const char *k0[] = {CLOSED_BATCH, "serving.speculative.draft_tokens=0",
                      "serving.speculative.acceptance_rate=0.6", NULL};
  const char *k3[] = {CLOSED_BATCH, "serving.speculative.draft_tokens=3",
                      "serving.speculative.acceptance_rate=1", NULL};
  const char *half[] = {CLOSED_BATCH, "serving.speculative.draft_tokens=1",
                        "serving.speculative.acceptance_rate=0.5", NULL};
  deployment_t a, b, c, h;
  deploy_and_run(base, false, &a);
  deploy_and_run(k0, false, &b);
  deploy_and_run(k3, false, &c);
  deploy_and_run(half, false, &h);
  assert_same_results(&a, &b);
  for (long i = 0; i < c.res.nreq; i++) /* every request done (fewer steps than tokens) */
    CU_ASSERT(isfinite(c.res.req[i].e2e_s));
  CU_ASSERT_EQUAL(a.res.decode.iterations, 128);
  CU_ASSERT_EQUAL(c.res.decode.iterations, 32);
  CU_ASSERT_DOUBLE_EQUAL(c.res.decode.token_sum / c.res.decode.iterations, 16, 1e-9);
  /* a step verifies 4 tokens and drafts 3: longer than a one-token step, far
   * shorter than four of them */
  double step_a = a.res.makespan_s - a.res.req[0].ttft_s,
         step_c = c.res.makespan_s - c.res.req[0].ttft_s;
  CU_ASSERT(step_c > step_a / 128 * 32 && step_c < step_a);
  /* a = 0.5, k = 1: 1.5 tokens a step, carried exactly: 128 tokens in 86 steps */
  CU_ASSERT_DOUBLE_EQUAL(serve_spec_tokens_per_step(&h.wl.serving), 1.5, 1e-12);
  CU_ASSERT_EQUAL(h.res.decode.iterations, 86);
  deployment_free(&a);
  deployment_free(&b);
  deployment_free(&c);
  deployment_free(&h);
}

/* A 256-token shared prefix: hit by every request, the batch prefills 256
 * tokens each and holds the prefix's 16 blocks once; hit by none, today's run. */
static void test_prefix_known_answers(void) {
  const char *base[] = {CLOSED_BATCH, NULL};
  const char *none[] = {CLOSED_BATCH, "serving.prefix_cache.shared_prefix_tokens=256",
                        "serving.prefix_cache.hit_rate=0", NULL};
  const char *all[] = {CLOSED_BATCH, "serving.prefix_cache.shared_prefix_tokens=256", NULL};
  const char *half[] = {CLOSED_BATCH, "serving.prefix_cache.shared_prefix_tokens=256",
                        "serving.prefix_cache.hit_rate=0.5", NULL};
  deployment_t a, b, c, h;
  deploy_and_try(base, true, 0, &a, &(npu_err_t){""});
  deploy_and_run(none, false, &b);
  deploy_and_try(all, true, 0, &c, &(npu_err_t){""});
  deploy_and_try(half, true, 0, &h, &(npu_err_t){""});
  assert_same_results(&a, &b);
  check_run(&c);
  CU_ASSERT_EQUAL(a.res.log[0].tokens, 4 * 512);
  CU_ASSERT_EQUAL(c.res.log[0].tokens, 4 * 256);
  CU_ASSERT_EQUAL(h.res.log[0].tokens, 2 * 512 + 2 * 256);
  CU_ASSERT(c.res.req[0].ttft_s < a.res.req[0].ttft_s);
  /* KV blocks after the prefill: 4 x 32 (512 tokens) without the cache; with
   * it, the prefix's 16 once and 4 x 16 */
  CU_ASSERT_EQUAL(a.res.log[0].kv_used_blocks, 4 * 32);
  CU_ASSERT_EQUAL(c.res.log[0].kv_used_blocks, 16 + 4 * 16);
  deployment_free(&a);
  deployment_free(&b);
  deployment_free(&c);
  deployment_free(&h);
}

/* serving.kernels.swiglu: the first iteration prefills the closed batch's 4 x 512
 * tokens; with eager PyTorch's silu-then-mul it takes exactly 32 layers x the
 * two kernels' device time over the fused kernel's at 2048 x 14336 (no host
 * time per kernel: a serving step's host time is iteration_overhead_us); the
 * decode iteration after it is slower too. */
static void test_swiglu_kernels_known_answer(void) {
  const char *fused[] = {CLOSED_BATCH, NULL};
  const char *eager[] = {CLOSED_BATCH, "serving.kernels.swiglu=unfused", NULL};
  deployment_t a, b;
  deploy_and_try(fused, true, 0, &a, &(npu_err_t){""});
  deploy_and_try(eager, true, 0, &b, &(npu_err_t){""});
  op_desc_t op = {.kind = OP_SWIGLU, .dtype = CHIP_DTYPE_BF16, .out_dtype = CHIP_DTYPE_BF16,
                  .dims = {2048, 14336}};
  double one = op_cost(a.ops, &op)->device_s;
  op.form = OP_FORM_UNFUSED;
  double want = 32 * (op_cost(a.ops, &op)->device_s - one);
  double fused_s = a.res.log[0].end_s - a.res.log[0].start_s;
  double eager_s = b.res.log[0].end_s - b.res.log[0].start_s;
  CU_ASSERT(want > 0);
  CU_ASSERT_DOUBLE_EQUAL(eager_s - fused_s, want, 1e-9 * eager_s);
  CU_ASSERT(b.res.log[1].end_s - b.res.log[1].start_s > a.res.log[1].end_s - a.res.log[1].start_s);
  deployment_free(&a);
  deployment_free(&b);
}

/* CUDA-graph padding: 5 decodes run as the graph of 8; 8 (a captured size) and
 * 9 past the largest captured batch run as they are. */
static void test_cuda_graph_padding(void) {
  const char *base[] = {"serving.requests.count=1", NULL};
  const char *graph[] = {"serving.requests.count=1", "serving.scheduler.cuda_graph_max_batch=8",
                         NULL};
  deployment_t a, g;
  deploy_and_run(base, false, &a);
  deploy_and_run(graph, false, &g);
  double t[3][2];
  const int n[3] = {5, 8, 9};
  for (int i = 0; i < 3; i++) {
    serve_group_batch_t b = {.decodes = n[i], .decode_ctx = n[i] * 1000.0, .samples = n[i]};
    serve_parts_t pa, pg;
    double sa, sg;
    serve_cost_iteration(a.pools[0].cost, &b, &sa, &pa);
    serve_cost_iteration(g.pools[0].cost, &b, &sg, &pg);
    t[i][0] = pa.s[SERVE_PART_MATMUL];
    t[i][1] = pg.s[SERVE_PART_MATMUL];
  }
  CU_ASSERT(t[0][1] > t[0][0]);
  CU_ASSERT_EQUAL(t[1][1], t[1][0]);
  CU_ASSERT_EQUAL(t[2][1], t[2][0]);
  deployment_free(&a);
  deployment_free(&g);
}

/* Sliding windows in serving (model.sliding_window_tokens): a window past
 * every context changes nothing; with every layer windowed at 512 tokens, a
 * decode at 8K of context costs what one at 512 costs without a window (the
 * attention reads only the window), and its matmuls are the same. Every other
 * layer windowed (full_attention_every 2) lands between the two. */
static void test_window_known_answers(void) {
  const char *none[] = {"serving.requests.count=1", NULL};
  const char *wide[] = {"serving.requests.count=1", "model.sliding_window_tokens=1000000", NULL};
  const char *narrow[] = {"serving.requests.count=1", "model.sliding_window_tokens=512", NULL};
  const char *half[] = {"serving.requests.count=1", "model.sliding_window_tokens=512",
                        "model.full_attention_every=2", NULL};
  deployment_t a, w, n, h;
  deploy_and_run(none, false, &a);
  deploy_and_run(wide, false, &w);
  deploy_and_run(narrow, false, &n);
  deploy_and_run(half, false, &h);
  serve_group_batch_t longb = {.decodes = 4, .decode_ctx = 4 * 8192.0, .samples = 4};
  serve_group_batch_t shortb = {.decodes = 4, .decode_ctx = 4 * 512.0, .samples = 4};
  serve_parts_t pa, pw, pn, ps, ph;
  double sa, sw, sn, ss, sh;
  serve_cost_iteration(a.pools[0].cost, &longb, &sa, &pa);
  serve_cost_iteration(w.pools[0].cost, &longb, &sw, &pw);
  serve_cost_iteration(n.pools[0].cost, &longb, &sn, &pn);
  serve_cost_iteration(a.pools[0].cost, &shortb, &ss, &ps);
  serve_cost_iteration(h.pools[0].cost, &longb, &sh, &ph);
  CU_ASSERT_EQUAL(sw, sa);
  CU_ASSERT_EQUAL(pn.s[SERVE_PART_ATTENTION], ps.s[SERVE_PART_ATTENTION]);
  CU_ASSERT_EQUAL(pn.s[SERVE_PART_MATMUL], pa.s[SERVE_PART_MATMUL]);
  CU_ASSERT(pn.s[SERVE_PART_ATTENTION] < pa.s[SERVE_PART_ATTENTION]);
  CU_ASSERT_DOUBLE_EQUAL(ph.s[SERVE_PART_ATTENTION],
                         (pa.s[SERVE_PART_ATTENTION] + pn.s[SERVE_PART_ATTENTION]) / 2,
                         1e-12 * pa.s[SERVE_PART_ATTENTION]);
  deployment_free(&a);
  deployment_free(&w);
  deployment_free(&n);
  deployment_free(&h);
}

CU_TestInfo serve_tests[] = {
    {"generator: same seed, same requests; another seed, others",
     test_generate_same_seed_same_requests},
    {"generator: lengths within [min, max], reaching both", test_generate_lengths_within_bounds},
    {"generator: fixed lengths are the mean", test_generate_fixed_is_the_mean},
    {"generator: log-normal lengths average the mean", test_generate_lognormal_mean},
    {"generator: Poisson arrivals at the rate", test_generate_poisson_arrivals},
    {"generator: rate 0 arrives all at once", test_generate_rate_zero_all_at_once},
    {"trace: JSONL", test_read_jsonl},
    {"trace: CSV in any column order", test_read_csv_any_column_order},
    {"trace: gzip", test_read_gzip},
    {"trace: errors in one line", test_read_errors},
    {"trace: strict numbers and shapes", test_read_strict},
    {"trace: BOM, CRLF, quotes, blank lines, decimal spellings", test_read_lenient_where_clear},
    {"trace: the longest line", test_read_line_bound},
    {"trace: context check", test_check_context},
    {"--slo parsing", test_slo_parse},
    {"sim: every request completes, in causal order", test_sim_every_request_completes},
    {"sim: the same inputs give the same results", test_sim_is_deterministic},
    {"sim: tight KV, recompute preemption completes", test_sim_preemption_recompute},
    {"sim: tight KV, swap preemption completes", test_sim_preemption_swap},
    {"sim: tight KV, two pipeline stages completes", test_sim_preemption_pipeline},
    {"sim: pipeline engines preempt across the pool they share",
     test_sim_pipeline_engines_share_the_pool},
    {"sim: disaggregated KV transfers", test_sim_disaggregated_transfers},
    {"sim: model.head_dim sizes the KV cache", test_sim_head_dim_sizes_the_kv_cache},
    {"sim: the clock restarts when idle; far-apart requests run as alone",
     test_sim_clock_restarts_when_idle},
    {"sim: a busy stretch past the clock's bound is refused",
     test_sim_refuses_a_busy_stretch_past_the_bound},
    {"sim: requests left unfinished are an internal error",
     test_sim_unfinished_requests_are_an_error},
    {"effects: speculative decoding, k + 1 tokens a step at acceptance 1; k = 0 as without",
     test_spec_known_answers},
    {"effects: prefix caching, a hit skips the prefix's prefill and shares its blocks",
     test_prefix_known_answers},
    {"effects: CUDA-graph padding to the captured batch sizes", test_cuda_graph_padding},
    {"effects: serving.kernels.swiglu, the eager kernels, known answer",
     test_swiglu_kernels_known_answer},
    {"effects: sliding windows, the attention of windowed layers reads the window",
     test_window_known_answers},
    CU_TEST_INFO_NULL,
};
