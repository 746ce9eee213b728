/* cli.h - the npusim command line: subcommands, the options they share, and the
 * output every subcommand writes.
 *
 * Options are rows of tables (below): one row per flag, each command's table
 * beside the command, the groups several share here, all parsed once in cli.c.
 * Output is built in memory and written only when the command succeeds, so a
 * failed run never leaves a half-written file (or half a table on stdout). */
#ifndef NPUSIM_CLI_H
#define NPUSIM_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "coll.h"
#include "config.h"
#include "out_format.h"
#include "npu_err.h"

#define NPUSIM_VERSION "0.1.0"

/* Exit statuses: scripts rely on them. */
#define EXIT_OK 0
#define EXIT_INTERNAL 1 /* could not write the output, out of memory */
#define EXIT_BAD_INPUT 2 /* bad option, config, trace or value */
#define EXIT_NOT_ALL_PASSED 1 /* check: a row out of tolerance; diff: a figure moved */

typedef enum { FIDELITY_FLOW, FIDELITY_ANALYTIC, FIDELITY_COUNT } cli_fidelity_t;

extern const char *const cli_format_names[FORMAT_COUNT];
extern const char *const cli_fidelity_names[FIDELITY_COUNT];

#define CLI_MAX_SETS 256
#define CLI_MAX_JOBS 32 /* npusim cluster: a link names its jobs in a 32-bit set */
#define CLI_MAX_LOGS 64 /* calibrate --collectives (COLL_FIT_MAX_LOGS) */

struct cli_env; /* cli_env.h */

typedef struct {
  const char *command;          /* subcommand name */
  const char *system_path;      /* --system */
  const char *workload_path;    /* --workload */
  const char *output_path;      /* --output; NULL = stdout */
  const char *sets[CLI_MAX_SETS]; /* --set PATH=VALUE, in order */
  int nsets;
  out_format_t format;
  cli_fidelity_t fidelity;
  /* command-specific options, as given; each command parses and checks its own */
  const char *op;               /* --op */
  const char *ranks;            /* --ranks */
  const char *ranks_per_node;   /* --ranks-per-node */
  const char *sizes;            /* --sizes MIN:MAX[:FACTOR] */
  const char *algo;             /* --algo A or A0,A1[,A2] */
  const char *dtype;            /* --dtype */
  const char *root;             /* --root */
  const char *matrix;           /* --matrix FILE (alltoallv) */
  bool links;                   /* --links */
  const char *links_rows;       /* --links N|all */
  const char *links_kind;       /* --links-kind K[,K] */
  const char *style;            /* --style nccl-tests|hccl-test (coll) */
  const char *shape;            /* --shape */
  const char *kernels;          /* --kernels fused|unfused (vector ops) */
  bool explain, sweep, causal, trans_a, trans_b;
  const char *window;           /* --window N (op: causal attention's sliding window) */
  const char *past;             /* --past N (op: keys cached before attention's queries) */
  const char *trace;            /* --trace: the trace to replay */
  const char *chrome_trace;     /* --chrome-trace: timeline output */
  const char *trace_ranks;      /* --trace-ranks A-B */
  const char *measurements;     /* --measurements FILE.csv (calibrate) */
  const char *fit;              /* --fit KEY,... (calibrate) */
  const char *fit_rows;         /* --fit-rows half|all (calibrate) */
  const char *list_ops;         /* --list-ops FILE.csv (train) */
  const char *emit_trace;       /* --emit-trace FILE[.gz] (train) */
  double time_limit_s;          /* --time-limit; 0 = none */
  bool progress;                /* --progress: on stderr even when it is not a terminal */
  const char *chakra_compute;   /* --chakra-compute auto|duration|roofline (replay) */
  const char *comm_group;       /* --comm-group FILE (replay, Chakra) */
  bool chakra_skip;             /* --chakra-skip (replay) */
  const char *emit_chakra;      /* --emit-chakra PREFIX (train) */
  const char *chakra_allgather; /* --chakra-allgather input|total (train, replay) */
  const char *slo;              /* --slo ttft_ms=T,tpot_ms=P (serve) */
  const char *timeseries;       /* --timeseries FILE.csv (serve) */
  const char *requests_out;     /* --requests-out FILE.csv (serve) */
  const char *jobs[CLI_MAX_JOBS]; /* --job FILE[@PLACEMENT] (cluster), in order */
  int njobs;
  const char *steps;            /* --steps N (cluster) */
  const char *args[2];          /* the arguments after the options (check, diff) */
  int nargs;
  const char *junit;            /* --junit FILE (check) */
  const char *parallel;         /* -j / --parallel N (check) */
  const char *threshold;        /* --threshold PCT (diff) */
  const char *coll_logs[CLI_MAX_LOGS]; /* --collectives LOG, in order (calibrate) */
  int ncoll_logs;
  const struct cli_env *env;    /* the environment, read once (cli_env.h) */
} cli_opts_t;

/* ---- option tables ----
 * One row per option: its name, the value it takes, its help line and where
 * the value goes in cli_opts_t. Each command declares the rows it accepts, in
 * the order its --help lists them (commands.h); options several commands take
 * are groups below, which a command's table includes with CLI_GROUP. cli.c
 * builds getopt_long's table from every command's rows, refuses an option the
 * command's table lacks and prints the command's help from the same rows, so a
 * flag is one row and its help cannot drift from what is parsed. --time-limit
 * and --help are every command's and not listed. A row may have a one-letter
 * alias (-h for --help, -o for --output): the same row, parsed and helped
 * alike. */
typedef enum {
  CLI_OPT_END,    /* ends a table */
  CLI_OPT_GROUP,  /* the rows of another table, here */
  CLI_OPT_STRING, /* const char *field = the value (the last one given) */
  CLI_OPT_FLAG,   /* bool field = true */
  CLI_OPT_LIST,   /* const char *field[max], int count: the values, in order */
  CLI_OPT_CUSTOM, /* set() handles it */
} cli_opt_kind_t;

typedef struct cli_parse cli_parse_t; /* the parse in progress (cli.c) */

typedef struct cli_option {
  cli_opt_kind_t kind;
  const char *name;  /* --NAME */
  char letter;       /* -L, its short alias (help lists it first), or 0 */
  const char *value; /* the value as the help names it ("FILE"); NULL: none */
  const char *help;  /* the help, lines apart by \n; NULL: on the next row's line */
  size_t field;      /* offsetof(cli_opts_t, ...) of the value */
  size_t count;      /* CLI_OPT_LIST: offsetof the int counting the values */
  int max;           /* CLI_OPT_LIST: the most values taken */
  const char *noun;  /* CLI_OPT_LIST: what the values are, for the error */
  int has_arg;       /* CLI_OPT_CUSTOM: getopt_long's no_argument or required_argument */
  /* CLI_OPT_CUSTOM: returns 0, 1 to stop parsing (help printed) or -1 (err) */
  int (*set)(const cli_parse_t *p, cli_opts_t *opts, const char *arg, npu_err_t *err);
  /* help text that depends on the command (its formats), in place of help */
  void (*describe)(const char *command, char *buf, size_t len);
  const struct cli_option *group; /* CLI_OPT_GROUP */
} cli_option_t;

#define CLI_STRING(NAME, VALUE, FIELD, HELP)                                                       \
  {                                                                                                \
    .kind = CLI_OPT_STRING, .name = NAME, .value = VALUE, .help = HELP,                            \
    .field = offsetof(cli_opts_t, FIELD)                                                           \
  }
#define CLI_FLAG(NAME, FIELD, HELP)                                                                \
  { .kind = CLI_OPT_FLAG, .name = NAME, .help = HELP, .field = offsetof(cli_opts_t, FIELD) }
#define CLI_LIST(NAME, VALUE, FIELD, COUNT, MAX, NOUN, HELP)                                       \
  {                                                                                                \
    .kind = CLI_OPT_LIST, .name = NAME, .value = VALUE, .help = HELP,                              \
    .field = offsetof(cli_opts_t, FIELD), .count = offsetof(cli_opts_t, COUNT), .max = MAX,        \
    .noun = NOUN                                                                                   \
  }
#define CLI_CUSTOM(NAME, VALUE, HAS_ARG, SET, HELP)                                                \
  {                                                                                                \
    .kind = CLI_OPT_CUSTOM, .name = NAME, .value = VALUE, .help = HELP, .has_arg = HAS_ARG,        \
    .set = SET                                                                                     \
  }
#define CLI_GROUP(TABLE)                                                                           \
  { .kind = CLI_OPT_GROUP, .group = TABLE }
#define CLI_END                                                                                    \
  { .kind = CLI_OPT_END }

/* The groups commands share: --system, --workload, --set, --format,
 * --fidelity, --output, --op, --dtype, --ranks and --ranks-per-node, --algo,
 * --chrome-trace and --trace-ranks,
 * --links and --links-kind, --progress. */
extern const cli_option_t cli_options_system[], cli_options_workload[], cli_options_set[],
    cli_options_format[], cli_options_fidelity[], cli_options_output[], cli_options_op[],
    cli_options_dtype[], cli_options_ranks[], cli_options_algo[],
    cli_options_timeline[], cli_options_links[], cli_options_progress[];
extern const cli_option_t cli_options_chakra_allgather[]; /* --chakra-allgather */

/* An option's integer value in [lo, hi] (text may be NULL: not given, an
 * error); -1 with "--OPT: expected an integer in [lo, hi], found ..." in err. */
int cli_parse_int(const char *opt, const char *text, int lo, int hi, int *out, npu_err_t *err);

/* --op's collective; -1 with the list of them in err. */
int cli_parse_coll_op(const char *text, coll_op_t *op, npu_err_t *err);

/* The most --time-limit accepts: a year. */
#define CLI_MAX_TIME_LIMIT_S 31536000

/* Configs loaded for a command: resolved structs and their documents (kept for
 * printing provenance). wl_doc is NULL when no workload was given. */
typedef struct {
  config_doc_t *sys_doc;
  config_doc_t *wl_doc;
  system_cfg_t sys;
  workload_cfg_t wl;
} cli_configs_t;

/* Loads --system (required) and --workload (optional), applies each --set to
 * the config its path belongs to, resolves both and checks the job against the
 * system. On failure everything is freed and err holds the line. */
int cli_load_configs(const cli_opts_t *opts, cli_configs_t *cfg, npu_err_t *err);
void cli_free_configs(cli_configs_t *cfg);

/* The ranks --trace-ranks A-B keeps in a timeline of a job of `ranks` (all
 * without it; B is clipped to the job). Returns 0, or -1 with the line in err. */
int cli_trace_ranks(const cli_opts_t *opts, int ranks, int *first, int *last, npu_err_t *err);

/* Runs npusim with its arguments; returns the process exit status. */
int cli_main(int argc, char **argv);

#endif
