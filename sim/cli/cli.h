/* cli.h - the npusim command line: subcommands, the options they share, and the
 * output every subcommand writes.
 *
 * Options common to all subcommands (--system, --workload, --set, --format,
 * --fidelity, --output, --help) are parsed once here. Output is built in memory
 * and written only when the command succeeds, so a failed run never leaves a
 * half-written file (or half a table on stdout). */
#ifndef NPUSIM_CLI_H
#define NPUSIM_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "config.h"
#include "out_format.h"

#define NPUSIM_VERSION "0.1.0"

/* Exit statuses: scripts rely on them. */
#define EXIT_OK 0
#define EXIT_INTERNAL 1 /* could not write the output, out of memory */
#define EXIT_BAD_INPUT 2 /* bad option, config, trace or value */

typedef enum { FIDELITY_FLOW, FIDELITY_ANALYTIC, FIDELITY_COUNT } cli_fidelity_t;

extern const char *const cli_format_names[FORMAT_COUNT];
extern const char *const cli_fidelity_names[FIDELITY_COUNT];

#define CLI_MAX_SETS 256
#define CLI_MAX_JOBS 32 /* npusim cluster: a link names its jobs in a 32-bit set */

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
  const char *slo;              /* --slo ttft_ms=T,tpot_ms=P (serve) */
  const char *timeseries;       /* --timeseries FILE.csv (serve) */
  const char *jobs[CLI_MAX_JOBS]; /* --job FILE[@PLACEMENT] (cluster), in order */
  int njobs;
  const char *steps;            /* --steps N (cluster) */
} cli_opts_t;

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
