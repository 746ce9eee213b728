/* cli.c - argument parsing (getopt_long), help texts, the command table and
 * the all-or-nothing output of npusim; see cli.h. The options are rows in
 * tables (cli.h), each command's beside it in cmd_*.c and the shared groups
 * here: getopt_long's table, which options a command takes and the options
 * part of its help all come from those rows. */
#include "cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "cli_env.h"
#include "commands.h"
#include "config_schema.h"
#include "jsonfile.h"
#include "outfile.h"
#include "simgrid_dl.h"
#include "time_limit.h"

const char *const cli_format_names[FORMAT_COUNT] = {"table", "json", "csv"};
const char *const cli_fidelity_names[FIDELITY_COUNT] = {"flow", "analytic"};

typedef struct {
  const char *name;
  const char *summary;
  const char *usage;    /* arguments after "npusim NAME" */
  const char *details;  /* further help text, or NULL */
  const cli_option_t *options; /* those it takes but --time-limit and --help */
  int (*run)(const cli_opts_t *opts, FILE *out, npu_err_t *err);
  cli_fidelity_t fidelity; /* its default */
  bool own_output;         /* writes --output itself; its report goes to stdout */
  unsigned formats;        /* bit per out_format_t it prints; 0: every format */
  void (*help_tail)(FILE *f); /* prints more help after the options, or NULL */
  int nargs;               /* arguments after the options it takes (check: 1, diff: 2) */
  bool own_time_limit;     /* --time-limit is its own (check: each row's), not the run's */
} command_t;

static const command_t commands[] = {
    {"coll", "time a collective (allreduce, allgather, ...) on a cluster, as nccl-tests does",
     "--system S.json --op OP --ranks N [--ranks-per-node K] [--sizes MIN:MAX[:FACTOR]] "
     "[--algo A] [--fidelity flow|analytic] [--links [N|all]] [options]",
     "OP: allreduce, allgather, reducescatter, broadcast, reduce, alltoall, alltoallv,\n"
     "sendrecv. Sizes are bytes with K, M, G, T suffixes (powers of 1024), as nccl-tests\n"
     "prints them: the per-rank buffer, or the total for allgather, reducescatter and\n"
     "alltoall; default 1K:1G:4. --algo A forces the algorithm between servers (inside\n"
     "the server for a one-server job); --algo A0,A1[,A2] forces one per level (auto\n"
     "keeps the library's choice); the algorithms are listed below. --links [N|all] adds\n"
     "the N (10) most utilised links of the largest size, or all (--links-kind K keeps\n"
     "those kinds).\n"
     "alltoallv takes --matrix FILE: a JSON array of ranks arrays of bytes (row = sender).\n"
     "--dtype (fp32 default) sets the count column; --root R for broadcast and reduce.\n"
     "--style nccl-tests prints the table and summary lines of nccl-tests' *_perf (2.13 to\n"
     "2.16), --style hccl-test those of hccl_test, so their parsers read it: one run per\n"
     "size (nccl-tests: rounded as it runs sizes, to whole elements per rank), no data\n"
     "check (#wrong N/A, check_result NULL), nccl-tests' in-place half\n"
     "repeating the out-of-place numbers (the model has no in-place difference); device\n"
     "lines name the simulated chip. Not with --format json or csv, nor with --links.\n",
     cmd_coll_options, cmd_coll, FIDELITY_FLOW, false, 0, coll_algo_print_help, 0, false},
    {"op", "cost one op (matmul, attention, vector op) on the chip model",
     "--system S.json --op OP --shape DIMS [--dtype bf16] [--explain] [--sweep] [options]",
     "OP and DIMS: matmul M,N,K[,batch]; attention_fwd, attention_bwd\n"
     "batch,heads,seq,head_dim[,kv_heads] (--causal); attention_decode\n"
     "batch,heads,context,head_dim[,kv_heads] (one query token per sequence); vector ops "
     "[rows,]cols: add, mul,\n"
     "gelu, swiglu, softmax, layernorm, rmsnorm, rope, cross_entropy, adam, cast (to fp32,\n"
     "or to bf16 from fp32), copy, reduce_sum. --explain prints the tiling, each pipe's\n"
     "busy time and the bound; --sweep costs sizes from small to large (matmul: square\n"
     "M=N=K; others: cols, with the rows of --shape) and prints the efficiency curve.\n",
     cmd_op_options, cmd_op, FIDELITY_FLOW, false, 0, NULL, 0, false},
    {"replay", "replay a trace of per-rank programs on the simulated cluster",
     "--system S.json --trace T.json[.gz] [--fidelity flow|analytic] [--chrome-trace "
     "OUT.json.gz [--trace-ranks 0-7]] [options]",
     "The trace format: docs/trace-format.md; samples in traces/. Prints the step time,\n"
     "per rank the compute, communication (and how much of it is exposed) and idle time,\n"
     "per communicator the collectives and bytes, the most utilised links and the memory\n"
     "high-water mark against HBM. --chrome-trace writes a Chrome trace (open it in\n"
     "Perfetto): a process per rank, a thread per stream, arrows from sends to receives.\n"
     "--trace also takes a Chakra execution trace (ASTRA-sim's): PREFIX, or one of its\n"
     "PREFIX.<rank>.et[.gz] files; the format is told by the content.\n",
     cmd_replay_options, cmd_replay, FIDELITY_FLOW, false, 0, NULL, 0, false},
    {"train", "predict one training step: time, throughput, MFU, breakdown, memory",
     "--system S.json --workload W.json [--fidelity analytic|flow] [--chrome-trace OUT] "
     "[options]",
     "The workload (configs/workloads/) becomes Megatron-style rank programs, replayed on\n"
     "the system. analytic (the default) replays one rank per pipeline stage (the others\n"
     "by symmetry) and suits sweeps; flow replays every rank with contention on shared\n"
     "links and takes seconds on the shipped workloads (llama2-70b on 32 NPUs: about 4 s,\n"
     "analytic about 2 s).\n",
     cmd_train_options, cmd_train, FIDELITY_ANALYTIC, false, 0, NULL, 0, false},
    {"serve", "simulate inference serving: TTFT, TPOT, throughput, goodput, KV cache",
     "--system S.json --workload W.json [--slo ttft_ms=T,tpot_ms=P] [--timeseries OUT.csv] "
     "[--requests-out OUT.csv] [--chrome-trace OUT] [options]",
     "The workload's serving section (docs/serve.md) places instances of the model on the\n"
     "system, co-located or as prefill and decode pools, and replays its requests (a trace\n"
     "or the generator) through continuous batching; every iteration is costed by the chip\n"
     "model and the collectives at its batch's shape. Prints TTFT, TPOT (time per output\n"
     "token after the first) and end-to-end latency (mean, p50, p90, p99; JSON adds min\n"
     "and max), throughput per NPU and per instance, goodput under --slo, each pool's\n"
     "memory and KV cache, and the breakdown of a decode step.\n",
     cmd_serve_options, cmd_serve, FIDELITY_ANALYTIC, false, 0, NULL, 0, false},
    {"cluster", "run several jobs on one fabric: each one's step alone and together, shared links",
     "--system S.json --job W.json[@PLACEMENT] --job ... [--steps N] [--fidelity analytic|flow] "
     "[options]",
     "Each --job is a training workload (configs/workloads/) or an npusim trace, placed by\n"
     "PLACEMENT: packed (the default: the first free servers, or the first server with\n"
     "room), spread (the job's servers round-robin over the leaf switches) or a list of\n"
     "NPUs, 0-15,32-47, for job ranks 0, 1, ... in order. The cluster is the system's\n"
     "cluster.nodes servers, or as many as the jobs need. Each job runs alone, then all\n"
     "together on the one fabric, their transfers sharing links; the jobs repeat their\n"
     "steps until the longest has run --steps (3). Prints each job's step time alone and\n"
     "together and its slowdown (over the steps it finished before the first job ran out\n"
     "of steps), and the links two or more jobs cross with their utilisation together.\n",
     cmd_cluster_options, cmd_cluster, FIDELITY_ANALYTIC, false, 0, NULL, 0, false},
    {"calibrate", "fit the chip's assumed parameters to measured kernel times",
     "--system S.json --measurements OPS.csv [--fit KEY,...] [--output FITTED.json] [options]",
     "OPS.csv: kernel times as scripts/measure_ops.py writes them (op, shape, dtype,\n"
     "time_us, ...; tests/data/validation/README.md). Fits the chip keys whose source note\n"
     "is an assumption ([A]) and that move a prediction of the measured ops, or the keys\n"
     "--fit names (--fit none: only report the errors). Each op class (matmul,\n"
     "attention, vector) is split in file order: even rows are fitted, odd rows held\n"
     "out (--fit-rows all: every row is fitted, none held out). Prints the\n"
     "geometric-mean |error| per class and half before and after, and each key before\n"
     "and after. --output writes a config that extends S.json with the\n"
     "fitted values, each with a \"[cal] fitted to ...\" source note.\n",
     cmd_calibrate_options, cmd_calibrate, FIDELITY_FLOW, true, 0, NULL, 0, false},
    {"validate", "check configs and print them resolved (extends, --set and defaults applied)",
     "--system S.json [--workload W.json] [--set PATH=VALUE]... [--format table|json|csv]",
     "table and csv list every key with its value, unit, the file (or default, or --set)\n"
     "it came from and its source note; json prints the canonical resolved config, which\n"
     "loads back to the same config. With both configs, json prints\n"
     "{\"system\": ..., \"workload\": ...}.\n",
     cmd_validate_options, cmd_validate, FIDELITY_FLOW, false, 0, NULL, 0, false},
    {"check", "run an expectations file: each figure npusim predicts against its measured value",
     "EXPECT.json [-j N] [--junit OUT.xml] [--time-limit S] [--format table|json|csv]",
     "EXPECT.json lists rows (docs/check.md): a name, an npusim command line (args, without\n"
     "--format), the figure of its JSON output to compare (rows[0].busbw_GBps), the expected\n"
     "value, tolerance_pct (or tolerance_abs) and a source. Every row runs as its own npusim\n"
     "process (-j N at once, each under --time-limit); a table gives predicted, expected,\n"
     "error and verdict per row. Exit status 0 when every row is within tolerance, 1 when\n"
     "one is not or did not run (never skipped; --junit writes JUnit XML for a CI server\n"
     "either way), 2 for a bad expectations file.\n",
     cmd_check_options, cmd_check, FIDELITY_FLOW, false, 0, NULL, 1, true},
    {"diff", "the figures that moved between two JSON outputs of npusim",
     "A.json B.json [--threshold PCT] [--format table|json|csv]",
     "A.json and B.json are two outputs of one npusim command with --format json (before and\n"
     "after an upgrade, or two configs). Prints every number whose change is over\n"
     "--threshold percent (default 0: any change), every text that differs and every\n"
     "figure only one has, largest change first. Exit status 0 when nothing moved, 1 when\n"
     "something did, 2 on bad input.\n",
     cmd_diff_options, cmd_diff, FIDELITY_FLOW, false, 0, NULL, 2, false},
    {"schema", "print the reference of every config key (docs/config.md)", "[--format table|json]",
     "table prints Markdown, the text of docs/config.md; json prints one object per key.\n",
     cmd_schema_options, cmd_schema, FIDELITY_FLOW, false, 1u << FORMAT_TABLE | 1u << FORMAT_JSON,
     NULL, 0, false},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void print_option_help(FILE *f, const command_t *c);

static void print_main_usage(FILE *f) {
  fprintf(f, "usage: npusim [--version] [--help] COMMAND [OPTIONS]\n");
}

static void print_main_help(FILE *f) {
  print_main_usage(f);
  fprintf(f, "\nnpusim predicts training steps and inference serving on NPU clusters (Ascend,\n"
             "GPU) on SimGrid.\n"
             "\ncommands:\n");
  for (size_t i = 0; i < NCOMMANDS; i++)
    fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
  fprintf(f, "\n'npusim COMMAND --help' describes a command. Exit status: 0 success, 2 bad input"
             "\n(one line on stderr naming the file, JSON path and what was expected), 1 an output"
             "\ncould not be written (one line too). Docs: README.md, docs/config.md.\n");
}

static bool prints(const command_t *c, int format) {
  return c->formats == 0 || (c->formats & (1u << format));
}

/* "table (default), json or csv": the formats the command prints. */
static void format_list(const command_t *c, bool mark_default, char *buf, size_t len) {
  size_t used = 0;
  int n = 0, total = 0;
  for (int k = 0; k < FORMAT_COUNT; k++)
    total += prints(c, k);
  buf[0] = '\0';
  for (int k = 0; k < FORMAT_COUNT && used < len; k++)
    if (prints(c, k)) {
      n++;
      used += (size_t)snprintf(buf + used, len - used, "%s%s%s", n == 1 ? "" : n == total ? " or " : ", ",
                               cli_format_names[k],
                               mark_default && k == FORMAT_TABLE ? " (default)" : "");
    }
}

static void print_command_usage(FILE *f, const command_t *c) {
  fprintf(f, "usage: npusim %s %s\n", c->name, c->usage);
}

static void print_command_help(FILE *f, const command_t *c) {
  print_command_usage(f, c);
  fprintf(f, "\n%s.\n", c->summary);
  if (c->details)
    fprintf(f, "\n%s", c->details);
  fprintf(f, "\noptions:\n");
  print_option_help(f, c);
  if (c->help_tail)
    c->help_tail(f);
}

static void print_version(FILE *f) {
  int major = 0, minor = 0, patch = 0;
  npu_err_t err = {0};
  if (simgrid_dl_open(&err) == 0)
    sg_version_get(&major, &minor, &patch);
  else
    fprintf(stderr, "npusim: %s\n", err.msg);
  fprintf(f, "npusim %s (SimGrid %d.%d.%d, cJSON %s, zlib %s)\n", NPUSIM_VERSION, major, minor,
          patch, cJSON_Version(), zlibVersion());
}

static const command_t *find_command(const char *name) {
  for (size_t i = 0; i < NCOMMANDS; i++)
    if (strcmp(commands[i].name, name) == 0)
      return &commands[i];
  return NULL;
}

/* " (did you mean \"train\"?)" for a mistyped command name, or "" when no
 * command is that close (config_schema.h's measure, as for config keys). */
static void command_hint(const char *name, char *buf, size_t len) {
  const char *names[NCOMMANDS];
  for (size_t i = 0; i < NCOMMANDS; i++)
    names[i] = commands[i].name;
  const char *hint = cfg_suggest_name(name, names, NCOMMANDS, NULL);
  if (hint)
    snprintf(buf, len, " (did you mean \"%s\"?)", hint);
  else if (len > 0)
    buf[0] = '\0';
}

static int parse_choice(const char *opt, const char *arg, const char *const *names, int n,
                        int *out, npu_err_t *err) {
  for (int i = 0; i < n; i++)
    if (strcmp(arg, names[i]) == 0) {
      *out = i;
      return 0;
    }
  char list[128] = "";
  for (int i = 0; i < n; i++)
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[i]);
  return npu_err_set(err, "--%s: expected one of %s, found \"%s\"", opt, list, arg);
}

/* ---- option tables (cli.h) ---- */

#define MAX_ROWS 96     /* the options of all commands together, each once */
#define STR(x) #x
#define XSTR(x) STR(x)
#define CODE_BASE 0x100 /* getopt_long's code of row i is CODE_BASE + i: no char, '?' or ':' */

/* The parse in progress, for the rows' set(). */
struct cli_parse {
  const command_t *cmd;
  int argc;
  char **argv;
};

static int set_format(const cli_parse_t *p, cli_opts_t *opts, const char *arg, npu_err_t *err) {
  if (parse_choice("format", arg, cli_format_names, FORMAT_COUNT, (int *)&opts->format, err))
    return -1;
  if (!prints(p->cmd, opts->format)) {
    char list[96];
    format_list(p->cmd, false, list, sizeof list);
    return npu_err_set(err, "npusim %s: --format: expected %s, found \"%s\"", p->cmd->name, list,
                       arg);
  }
  return 0;
}

static void describe_formats(const char *command, char *buf, size_t len) {
  format_list(find_command(command), true, buf, len);
}

/* --time-limit bounds the run, or (check) each row's run: check itself has none. */
static void describe_time_limit(const char *command, char *buf, size_t len) {
  const command_t *c = find_command(command);
  snprintf(buf, len, "%s", c && c->own_time_limit
                               ? "each row's limit: a row that runs longer fails as\n"
                                 "not run (check itself has none)"
                               : "stop with one line and exit status 2, writing nothing, if\n"
                                 "the run takes longer");
}

static int set_fidelity(const cli_parse_t *p, cli_opts_t *opts, const char *arg, npu_err_t *err) {
  (void)p;
  return parse_choice("fidelity", arg, cli_fidelity_names, FIDELITY_COUNT, (int *)&opts->fidelity,
                      err);
}

/* --links takes an optional value given apart (--links 20, --links all), which
 * getopt_long cannot: the next argument is its value when it reads as one. */
static int set_links(const cli_parse_t *p, cli_opts_t *opts, const char *arg, npu_err_t *err) {
  (void)arg, (void)err;
  opts->links = true;
  const char *next = optind < p->argc ? p->argv[optind] : NULL;
  if (next && next[0] && (strcmp(next, "all") == 0 || strspn(next, "0123456789") == strlen(next)))
    opts->links_rows = p->argv[optind++];
  return 0;
}

static int set_time_limit(const cli_parse_t *p, cli_opts_t *opts, const char *arg, npu_err_t *err) {
  (void)p;
  double v; /* plain decimal: strtod alone took 0x10 and " 5" */
  if (!jsonfile_decimal(arg, &v) || !isfinite(v) || v <= 0 || v > CLI_MAX_TIME_LIMIT_S)
    return npu_err_set(err, "--time-limit: expected seconds in (0, %d], found \"%s\"",
                       CLI_MAX_TIME_LIMIT_S, arg);
  opts->time_limit_s = v;
  return 0;
}

static int set_help(const cli_parse_t *p, cli_opts_t *opts, const char *arg, npu_err_t *err) {
  (void)opts, (void)arg, (void)err;
  print_command_help(stdout, p->cmd);
  return 1;
}

const cli_option_t cli_options_system[] = {
    CLI_STRING("system", "FILE", system_path,
               "system config (configs/systems/*.json; - reads stdin)"),
    CLI_END};
const cli_option_t cli_options_workload[] = {
    CLI_STRING("workload", "FILE", workload_path,
               "workload config (configs/workloads/*.json; - reads stdin)"),
    CLI_END};
const cli_option_t cli_options_set[] = {
    CLI_LIST("set", "PATH=VALUE", sets, nsets, CLI_MAX_SETS, "overrides",
             "override one config key, e.g. chip.hbm.bandwidth_GBps=3200 (repeatable);\n"
             "system.PATH or workload.PATH names the config (name,\n"
             "description: the system's without it)"),
    CLI_END};
const cli_option_t cli_options_format[] = {{.kind = CLI_OPT_CUSTOM,
                                            .name = "format",
                                            .value = "FMT",
                                            .has_arg = required_argument,
                                            .set = set_format,
                                            .describe = describe_formats},
                                           CLI_END};
const cli_option_t cli_options_fidelity[] = {
    CLI_CUSTOM("fidelity", "F", required_argument, set_fidelity,
               "flow (contention on shared links; the default but for train) or analytic "
               "(alpha-beta, fast)"),
    CLI_END};
const cli_option_t cli_options_output[] = {{.kind = CLI_OPT_STRING,
                                            .name = "output",
                                            .letter = 'o',
                                            .value = "FILE",
                                            .help = "write there instead of stdout (only if the "
                                                    "run succeeds)",
                                            .field = offsetof(cli_opts_t, output_path)},
                                           CLI_END};
const cli_option_t cli_options_op[] = {CLI_STRING("op", "OP", op, "the collective or op"),
                                       CLI_END};
const cli_option_t cli_options_dtype[] = {
    CLI_STRING("dtype", "T", dtype, "data type: fp16, bf16, fp32, int8, fp8"), CLI_END};
const cli_option_t cli_options_algo[] = {
    CLI_STRING("algo", "A[,A1[,A2]]", algo,
               "force algorithms (coll --help lists them; calibrate: as the\n"
               "logs ran, NCCL_ALGO=Ring: --algo ring)"),
    CLI_END};
const cli_option_t cli_options_ranks[] = {
    CLI_STRING("ranks", "N", ranks, "ranks in the job"),
    CLI_STRING("ranks-per-node", "K", ranks_per_node,
               "NPUs used per server (default: all of node.npus)"),
    CLI_END};
const cli_option_t cli_options_timeline[] = {
    CLI_STRING("chrome-trace", "FILE", chrome_trace,
               "write a Chrome trace of the run (.json or .json.gz)"),
    CLI_STRING("trace-ranks", "A-B", trace_ranks, "only these ranks in the Chrome trace"), CLI_END};
const cli_option_t cli_options_links[] = {
    CLI_CUSTOM("links", "[N|all]", no_argument, set_links,
               "the N (10) most utilised link directions, or all, in the\n"
               "table (coll: of the largest size); JSON lists them all"),
    CLI_STRING("links-kind", "K[,K]", links_kind,
               "only links of these kinds: scale_up, die, supernode, nic,\n"
               "uplink, core, scale_out (nic, uplink and core)"),
    CLI_END};
const cli_option_t cli_options_progress[] = {
    CLI_FLAG("progress", progress,
             "show progress on stderr even when it is not a terminal\n"
             "(on a terminal it shows for runs over 2 s anyway)"),
    CLI_END};

/* train --emit-chakra's and replay's: what an ALL_GATHER's comm_size counts
 * (chakra.h) */
const cli_option_t cli_options_chakra_allgather[] = {
    CLI_STRING("chakra-allgather", "C", chakra_allgather,
               "what a Chakra ALL_GATHER's comm_size counts: input\n"
               "(each rank's, as ASTRA-sim reads it; the default)\n"
               "or total (all ranks', as npusim coll)"),
    CLI_END};

/* Every command's, listed last in its help. */
static const cli_option_t every_command_options[] = {
    {.kind = CLI_OPT_CUSTOM,
     .name = "time-limit",
     .value = "SECONDS",
     .has_arg = required_argument,
     .set = set_time_limit,
     .describe = describe_time_limit},
    {.kind = CLI_OPT_CUSTOM,
     .name = "help",
     .letter = 'h',
     .help = "this text",
     .has_arg = no_argument,
     .set = set_help},
    CLI_END};

/* A mistake in the option tables, met by every run: stops with its line. */
static void table_mistake(const char *what, const char *name) {
  fprintf(stderr, "npusim: internal error: %s --%s\n", what, name);
  abort();
}

/* Appends the rows of table t, its groups opened, to rows[*n]. */
static void table_rows(const cli_option_t *t, const cli_option_t **rows, size_t *n) {
  for (; t->kind != CLI_OPT_END; t++)
    if (t->kind == CLI_OPT_GROUP)
      table_rows(t->group, rows, n);
    else if (*n < MAX_ROWS)
      rows[(*n)++] = t;
    else
      table_mistake("expected at most " XSTR(MAX_ROWS) " options, found more at", t->name);
}

/* The rows command c takes, in the order of its help; returns how many. */
static size_t command_rows(const command_t *c, const cli_option_t **rows) {
  size_t n = 0;
  table_rows(c->options, rows, &n);
  table_rows(every_command_options, rows, &n);
  return n;
}

/* Every command's rows, each once, and getopt_long's table of them: every
 * command knows every option, so one it does not take is named as unknown
 * with its value consumed, and abbreviations resolve alike for all. */
static size_t all_rows(const cli_option_t **all, struct option *longopts, char *shorts) {
  size_t n = 0;
  size_t ns = 0;
  shorts[ns++] = ':'; /* a missing value is ':', not '?' */
  for (size_t i = 0; i < NCOMMANDS; i++) {
    const cli_option_t *rows[MAX_ROWS];
    size_t nrows = command_rows(&commands[i], rows);
    for (size_t r = 0; r < nrows; r++) {
      size_t k = 0;
      while (k < n && strcmp(all[k]->name, rows[r]->name) != 0)
        k++;
      if (k < n && all[k] != rows[r])
        table_mistake("expected one row per option, found two of", all[k]->name);
      if (k == n) {
        int has_arg = rows[r]->kind == CLI_OPT_FLAG     ? no_argument
                      : rows[r]->kind == CLI_OPT_CUSTOM ? rows[r]->has_arg
                                                        : required_argument;
        longopts[n] = (struct option){rows[r]->name, has_arg, NULL, CODE_BASE + (int)n};
        if (rows[r]->letter) { /* "o:" takes a value, "h" none */
          shorts[ns++] = rows[r]->letter;
          if (has_arg == required_argument)
            shorts[ns++] = ':';
        }
        all[n++] = rows[r];
      }
    }
  }
  longopts[n] = (struct option){NULL, 0, NULL, 0};
  shorts[ns] = '\0';
  return n;
}

/* The row getopt_long's code names: CODE_BASE + i for a long option, the
 * letter for a short one; NULL if none (an unknown letter). */
static const cli_option_t *row_of_code(const cli_option_t *const *all, size_t n, int code) {
  if (code >= CODE_BASE)
    return code - CODE_BASE < (int)n ? all[code - CODE_BASE] : NULL;
  for (size_t i = 0; i < n; i++)
    if (all[i]->letter && all[i]->letter == code)
      return all[i];
  return NULL;
}

/* The options part of command c's help: a line per row ("  --NAME VALUE" and
 * its help in a column), rows without help on the next row's line. */
static void print_option_help(FILE *f, const command_t *c) {
  const cli_option_t *rows[MAX_ROWS];
  size_t n = command_rows(c, rows);
  char label[96] = "", text[128];
  for (size_t i = 0; i < n; i++) {
    const cli_option_t *r = rows[i];
    char letter[8] = "";
    if (r->letter)
      snprintf(letter, sizeof letter, "-%c, ", r->letter);
    snprintf(label + strlen(label), sizeof label - strlen(label), "%s%s--%s%s%s",
             label[0] ? ", " : "", letter, r->name, r->value ? " " : "", r->value ? r->value : "");
    if (!r->help && !r->describe)
      continue;
    const char *help = r->help;
    if (r->describe) {
      r->describe(c->name, text, sizeof text);
      help = text;
    }
    fprintf(f, "  %-21s  ", label);
    for (size_t len;; help += len + 1) { /* later lines under the first */
      len = strcspn(help, "\n");
      fprintf(f, "%.*s\n", (int)len, help);
      if (!help[len])
        break;
      fprintf(f, "%25s", "");
    }
    label[0] = '\0';
  }
}

static bool takes(const cli_option_t *const *rows, size_t n, const cli_option_t *row) {
  for (size_t i = 0; i < n; i++)
    if (rows[i] == row)
      return true;
  return false;
}

/* Puts row's value arg where the row says. 0, 1 (stop: help printed) or -1. */
static int set_option(const cli_parse_t *p, const cli_option_t *row, cli_opts_t *opts,
                      const char *arg, npu_err_t *err) {
  char *base = (char *)opts;
  switch (row->kind) {
  case CLI_OPT_STRING:
    *(const char **)(base + row->field) = arg;
    return 0;
  case CLI_OPT_FLAG:
    *(bool *)(base + row->field) = true;
    return 0;
  case CLI_OPT_LIST: {
    int *count = (int *)(base + row->count);
    if (*count == row->max)
      return npu_err_set(err, "--%s: expected at most %d %s, found more", row->name, row->max,
                         row->noun);
    ((const char **)(base + row->field))[(*count)++] = arg;
    return 0;
  }
  case CLI_OPT_CUSTOM:
    return row->set(p, opts, arg, err);
  default:
    return 0;
  }
}

/* Parses the options after the command name. Returns 0 to run, 1 if help was
 * printed, -1 on a usage error (message in err). */
static int parse_options(const command_t *cmd, int argc, char **argv, cli_opts_t *opts,
                         npu_err_t *err) {
  const cli_option_t *all[MAX_ROWS], *rows[MAX_ROWS];
  struct option longopts[MAX_ROWS + 1];
  char shorts[2 * MAX_ROWS + 2];
  size_t nall = all_rows(all, longopts, shorts);
  size_t nrows = command_rows(cmd, rows);
  const cli_parse_t p = {cmd, argc, argv};
  int c;
  opterr = 0; /* we print our own messages */
  optind = 1;
  while ((c = getopt_long(argc, argv, shorts, longopts, NULL)) != -1) {
    /* '?': unknown or ambiguous, or a value given to a flag; ':': no value */
    const cli_option_t *row = c == '?' ? NULL : row_of_code(all, nall, c == ':' ? optopt : c);
    if (!row || !takes(rows, nrows, row)) /* a known option names itself, not its value */
      return npu_err_set(err, "npusim %s: unknown option %s%s; usage: npusim %s %s", cmd->name,
                         row ? "--" : argv[optind - 1], row ? row->name : "", cmd->name,
                         cmd->usage);
    if (c == ':')
      return npu_err_set(err, "npusim %s: option %s expects a value; usage: npusim %s %s",
                         cmd->name, argv[optind - 1], cmd->name, cmd->usage);
    int rc = set_option(&p, row, opts, optarg, err);
    if (rc)
      return rc;
  }
  while (optind < argc && opts->nargs < cmd->nargs)
    opts->args[opts->nargs++] = argv[optind++];
  if (optind < argc)
    return npu_err_set(err, "npusim %s: unexpected argument \"%s\"; usage: npusim %s %s",
                       cmd->name, argv[optind], cmd->name, cmd->usage);
  if (opts->nargs < cmd->nargs)
    return npu_err_set(err, "npusim %s: expected %d file argument%s, found %d; usage: npusim %s "
                       "%s", cmd->name, cmd->nargs, cmd->nargs > 1 ? "s" : "", opts->nargs,
                       cmd->name, cmd->usage);
  return 0;
}

/* Prints a one-line error (made safe by npu_err_print) and returns status. */
static int fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int status, const char *fmt, ...) {
  npu_err_t err = {""};
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err.msg, sizeof err.msg, fmt, ap);
  va_end(ap);
  npu_err_print(stderr, err.msg);
  return status;
}

/* Help and version texts go through stdio: a failed write (a full disk, a
 * closed stdout) is an error like any other output's. */
static int finish_stdout(void) {
  if (fflush(stdout) != 0 || ferror(stdout))
    return fail(EXIT_INTERNAL, "stdout: cannot write: %s", strerror(errno ? errno : EIO));
  return EXIT_OK;
}

/* --time-limit: the line the deadline prints (time_limit.h); exit status 2. */
static void time_limit_start(const char *command, double seconds) {
  char s[32], line[256];
  jsonfile_format_number(seconds, s, sizeof s);
  snprintf(line, sizeof line, "npusim %s: --time-limit: expected the run to end within %s s, "
           "found it still running; stopped, nothing written\n", command, s);
  time_limit_arm(seconds, line, EXIT_BAD_INPUT);
}

/* Whether a command's JSON output parses: inf and nan, which printf writes for
 * numbers that are not finite, are not JSON and fail here, so they never reach
 * a file. */
static bool json_output_valid(const char *buf, size_t len) {
  cJSON *root = cJSON_ParseWithLength(buf, len);
  cJSON_Delete(root);
  return root != NULL;
}

/* An output option naming the file of an input option (by device and inode:
 * any name, any link), refused before the run. The outputs are checked again,
 * against every file the run read (extends, node types, request traces, ...),
 * before they land (outfile_stage_check). */
static int check_outputs(const cli_opts_t *o, npu_err_t *err) {
  struct named {
    const char *opt, *path;
  };
  char jobs[CLI_MAX_JOBS][PATH_MAX];
  struct named in[6 + CLI_MAX_JOBS] = {{"--system", o->system_path},
                                       {"--workload", o->workload_path},
                                       {"--trace", o->trace},
                                       {"--matrix", o->matrix},
                                       {"--measurements", o->measurements},
                                       {"--comm-group", o->comm_group}};
  size_t nin = 6;
  for (int j = 0; j < o->njobs; j++) { /* FILE[@PLACEMENT] */
    snprintf(jobs[j], sizeof jobs[j], "%.*s", (int)strcspn(o->jobs[j], "@"), o->jobs[j]);
    in[nin++] = (struct named){"--job", jobs[j]};
  }
  const struct named out[] = {{"--output", o->output_path},    {"--chrome-trace", o->chrome_trace},
                              {"--timeseries", o->timeseries}, {"--requests-out", o->requests_out},
                              {"--emit-trace", o->emit_trace}, {"--list-ops", o->list_ops}};
  /* "-" is standard input, which one input at most can read */
  for (size_t k = 0; k < nin; k++)
    for (size_t j = k + 1; j < nin; j++)
      if (in[k].path && in[j].path && strcmp(in[k].path, JSONFILE_STDIN) == 0 &&
          strcmp(in[j].path, JSONFILE_STDIN) == 0)
        return npu_err_set(err,
                           "%s -: expected standard input for one input at most, found %s "
                           "- too",
                           in[j].opt, in[k].opt);
  for (size_t i = 0; i < sizeof out / sizeof out[0]; i++) {
    struct stat so, si;
    if (!out[i].path || strcmp(out[i].path, "-") == 0 || stat(out[i].path, &so) != 0 ||
        !S_ISREG(so.st_mode))
      continue;
    for (size_t k = 0; k < nin; k++)
      if (in[k].path && strcmp(in[k].path, JSONFILE_STDIN) != 0 && stat(in[k].path, &si) == 0 &&
          si.st_dev == so.st_dev && si.st_ino == so.st_ino)
        return npu_err_set(err,
                           "%s: %s: expected an output that is none of the run's inputs, found "
                           "the file of %s %s",
                           out[i].path, out[i].opt, in[k].opt, in[k].path);
  }
  return 0;
}

static int run_command(const command_t *cmd, int argc, char **argv) {
  cli_env_t env;
  cli_env_read(&env);
  cli_opts_t opts = {
      .command = cmd->name, .format = FORMAT_TABLE, .fidelity = cmd->fidelity, .env = &env};
  npu_err_t err = {{0}};
  int parsed = parse_options(cmd, argc, argv, &opts, &err);
  if (parsed == 1)
    return finish_stdout();
  if (parsed < 0) {
    npu_err_print(stderr, err.msg);
    return EXIT_BAD_INPUT;
  }
  if (check_outputs(&opts, &err)) {
    npu_err_print(stderr, err.msg);
    return EXIT_BAD_INPUT;
  }
  char *buf = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&buf, &len);
  if (!out)
    return fail(EXIT_INTERNAL, "npusim: out of memory");
  if (opts.time_limit_s > 0 && !cmd->own_time_limit)
    time_limit_start(cmd->name, opts.time_limit_s);
  /* Every file the command writes waits as a temporary file; all land
   * together below, or none. */
  outfile_stage_begin();
  int rc = cmd->run(&opts, out, &err);
  time_limit_off();
  bool not_all_passed = rc == CMD_NOT_ALL_PASSED; /* written as any output, then status 1 */
  rc = not_all_passed ? 0 : rc;
  int status = EXIT_OK;
  if (fclose(out) != 0 && rc == 0) {
    npu_err_set(&err, "npusim: out of memory");
    rc = CMD_CANNOT_WRITE;
  }
  out_nonfinite_t bad;
  if (rc == 0 && out_find_nonfinite(opts.format, buf, len, &bad)) {
    npu_err_set(&err,
                "npusim %s: internal error: expected finite numbers in the %s output, "
                "found \"%s\" at line %d, field \"%s\"; nothing written",
                cmd->name, cli_format_names[opts.format], bad.text, bad.line, bad.field);
    rc = CMD_CANNOT_WRITE;
  }
  if (rc == 0 && opts.format == FORMAT_JSON && !json_output_valid(buf, len)) {
    npu_err_set(&err, "npusim %s: internal error: the JSON output is not valid JSON (a number "
                "that is not finite?); nothing written", cmd->name);
    rc = CMD_CANNOT_WRITE;
  }
  /* Checked before anything is written in place (stdout, a device), and again
   * once --output waits beside its target. */
  if (rc == 0 && outfile_stage_check(&err))
    rc = -1;
  if (rc == 0) {
    /* --output "-" is stdout, as no --output is. */
    const char *dest = opts.output_path && !cmd->own_output ? opts.output_path : "-";
    if (outfile_write_all(dest, buf, len, 0, &err))
      rc = CMD_CANNOT_WRITE;
  }
  if (rc == 0 && outfile_stage_check(&err))
    rc = -1;
  if (rc == 0 && outfile_stage_publish(&err))
    rc = CMD_CANNOT_WRITE;
  if (rc != 0)
    outfile_stage_discard();
  if (rc != 0) {
    npu_err_print(stderr, err.msg);
    status = rc == CMD_CANNOT_WRITE ? EXIT_INTERNAL : EXIT_BAD_INPUT;
  } else if (not_all_passed) {
    status = EXIT_NOT_ALL_PASSED;
  }
  free(buf);
  return status;
}

int cli_main(int argc, char **argv) {
  if (argc < 2) {
    print_main_usage(stderr);
    return EXIT_BAD_INPUT;
  }
  const char *first = argv[1];
  if (strcmp(first, "--help") == 0 || strcmp(first, "-h") == 0) {
    print_main_help(stdout);
    return finish_stdout();
  }
  if (strcmp(first, "--version") == 0) {
    print_version(stdout);
    return finish_stdout();
  }
  if (strcmp(first, "help") == 0) {
    const command_t *c = argc > 2 ? find_command(argv[2]) : NULL;
    if (argc > 2 && !c) {
      char names[256] = "";
      for (size_t i = 0; i < NCOMMANDS; i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                 commands[i].name);
      char hint[64];
      command_hint(argv[2], hint, sizeof hint);
      return fail(EXIT_BAD_INPUT,
                  "npusim help: expected one of %s, found unknown command "
                  "\"%s\"%s",
                  names, argv[2], hint);
    }
    if (c)
      print_command_help(stdout, c);
    else
      print_main_help(stdout);
    return finish_stdout();
  }
  const command_t *cmd = find_command(first);
  if (!cmd) {
    char hint[64] = "";
    if (first[0] != '-')
      command_hint(first, hint, sizeof hint);
    return fail(EXIT_BAD_INPUT,
                "npusim: unknown %s \"%s\"%s; usage: npusim [--version] [--help] "
                "COMMAND [OPTIONS]",
                first[0] == '-' ? "option" : "command", first, hint);
  }
  return run_command(cmd, argc - 1, argv + 1);
}

/* ---- values shared by the commands ---- */

int cli_parse_int(const char *opt, const char *text, int lo, int hi, int *out, npu_err_t *err) {
  char *end;
  errno = 0;
  long v = text ? strtol(text, &end, 10) : 0;
  if (!text || end == text || *end || errno || v < lo || v > hi)
    return npu_err_set(err, "--%s: expected an integer in [%d, %d], found \"%.40s\"", opt, lo, hi,
                       text ? text : "");
  *out = (int)v;
  return 0;
}

int cli_parse_coll_op(const char *text, coll_op_t *op, npu_err_t *err) {
  for (int i = 0; text && i < COLL_OP_COUNT; i++)
    if (strcmp(text, coll_op_names[i]) == 0) {
      *op = (coll_op_t)i;
      return 0;
    }
  return npu_err_set(err, "--op: expected one of allreduce, allgather, reducescatter, broadcast, "
                     "reduce, alltoall, alltoallv, sendrecv, found \"%.40s\"", text ? text : "");
}

/* ---- configs shared by the commands ---- */

int cli_load_configs(const cli_opts_t *opts, cli_configs_t *cfg, npu_err_t *err) {
  memset(cfg, 0, sizeof *cfg);
  if (!opts->system_path)
    return npu_err_set(err, "npusim %s: expected --system FILE, found none", opts->command);
  cfg->sys_doc = config_doc_load(CONFIG_SYSTEM, opts->system_path, err);
  if (!cfg->sys_doc)
    goto fail;
  if (opts->workload_path) {
    cfg->wl_doc = config_doc_load(CONFIG_WORKLOAD, opts->workload_path, err);
    if (!cfg->wl_doc)
      goto fail;
  }
  for (int i = 0; i < opts->nsets; i++) {
    /* "system." or "workload." names the config (name and description are in both) */
    const char *set = opts->sets[i];
    int kind = strncmp(set, "system.", 7) == 0     ? (set += 7, CONFIG_SYSTEM)
               : strncmp(set, "workload.", 9) == 0 ? (set += 9, CONFIG_WORKLOAD)
                                                   : config_kind_of_path(set, err);
    if (kind < 0)
      goto fail;
    config_doc_t *doc = kind == CONFIG_SYSTEM ? cfg->sys_doc : cfg->wl_doc;
    if (!doc) {
      npu_err_set(err, "--set: %.*s: expected --workload FILE for a workload key, found none",
                  (int)strcspn(opts->sets[i], "="), opts->sets[i]);
      goto fail;
    }
    if (config_doc_set(doc, set, err))
      goto fail;
  }
  if (config_doc_resolve(cfg->sys_doc, &cfg->sys, err))
    goto fail;
  if (cfg->wl_doc && (config_doc_resolve(cfg->wl_doc, &cfg->wl, err) ||
                      config_check_job(cfg->sys_doc, &cfg->sys, cfg->wl_doc, &cfg->wl, true, err)))
    goto fail;
  return 0;
fail:
  cli_free_configs(cfg);
  return -1;
}

void cli_free_configs(cli_configs_t *cfg) {
  config_doc_free(cfg->sys_doc);
  config_doc_free(cfg->wl_doc);
  cfg->sys_doc = cfg->wl_doc = NULL;
}

int cli_trace_ranks(const cli_opts_t *opts, int ranks, int *first, int *last, npu_err_t *err) {
  *first = 0;
  *last = ranks - 1;
  if (!opts->trace_ranks)
    return 0;
  const char *text = opts->trace_ranks;
  char *end;
  long a = strtol(text, &end, 10), b = a;
  if (end != text && *end == '-')
    b = strtol(end + 1, &end, 10);
  if (end == text || *end || a < 0 || b < a)
    return npu_err_set(err, "--trace-ranks: expected FIRST-LAST (e.g. 0-7), found \"%.40s\"",
                       text);
  if (a >= ranks)
    return npu_err_set(err, "--trace-ranks: expected ranks within 0-%d, found \"%.40s\"",
                       ranks - 1, text);
  *first = (int)a;
  *last = (int)(b < ranks - 1 ? b : ranks - 1);
  return 0;
}
