/* train_report.h - what a training run says: the step's figures, where rank
 * 0's and each pipeline stage's time went, the memory verdict, the energy and
 * the links, as a table, JSON or CSV; and the files a run writes besides (the
 * op list, the programs as a trace or Chakra ETs, a Chrome timeline).
 *
 * Everything printed is read from train_result_t: nothing here works a
 * figure out. */
#ifndef NPUSIM_TRAIN_REPORT_H
#define NPUSIM_TRAIN_REPORT_H

#include <stdio.h>

#include "chakra.h"
#include "npu_err.h"
#include "out_format.h"
#include "train_run.h"

/* What the report shows besides the result. */
typedef struct {
  const char *fidelity;          /* its name, as the command line spells it */
  const linkstats_view_t *links; /* the table's links (--links); NULL: none. JSON lists every one */
} train_report_opts_t;

void train_report(FILE *out, out_format_t format, const train_opts_t *o,
                  const train_report_opts_t *ro, const train_result_t *r);

/* The files a run writes besides its report; NULL: not written. */
typedef struct {
  const char *list_ops;      /* the distinct compute ops, CSV (calibrate/op_list.h) */
  const char *emit_trace;    /* the programs as an npusim trace */
  const char *emit_chakra;   /* the programs as Chakra ETs: PREFIX.<rank>.et */
  chakra_allgather_t chakra_allgather; /* what their ALL_GATHER comm_size counts */
  const char *chrome_trace;  /* the step's timeline, slices named by layer, micro-batch, pass */
  int first_rank, last_rank; /* the ranks the timeline shows */
  bool progress;             /* timeline progress on stderr even when it is not a terminal */
} train_files_t;

/* Writes the files asked for, in the order above, after a run (each whole or
 * not at all). Returns 0, or -1 with "PATH: cannot write: ..." in err. */
int train_write_files(const train_files_t *f, const train_opts_t *o, const train_result_t *r,
                      npu_err_t *err);

#endif
