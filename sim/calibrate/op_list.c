/* op_list.c - the distinct compute ops of a trace; see op_list.h. */
#include "op_list.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outfile.h"
#include "replay.h"
#include "time_limit.h"

typedef struct {
  op_desc_t op;
  long long calls;
} entry_t;

static int compare(const void *a, const void *b) {
  const op_desc_t *x = &((const entry_t *)a)->op, *y = &((const entry_t *)b)->op;
  if (x->kind != y->kind)
    return x->kind < y->kind ? -1 : 1;
  if (x->dtype != y->dtype)
    return x->dtype < y->dtype ? -1 : 1;
  for (int i = 0; i < 5; i++)
    if (x->dims[i] != y->dims[i])
      return x->dims[i] < y->dims[i] ? -1 : 1;
  int fx = x->trans_a | x->trans_b << 1 | x->causal << 2 | (int)x->out_dtype << 3;
  int fy = y->trans_a | y->trans_b << 1 | y->causal << 2 | (int)y->out_dtype << 3;
  if (fx != fy)
    return fx < fy ? -1 : 1;
  return (x->window > y->window) - (x->window < y->window);
}

static void write_row(FILE *f, const entry_t *e) {
  const op_desc_t *op = &e->op;
  char shape[128] = "";
  int n = op_on_cube(op->kind) ? 5 : 2;
  for (int i = 0; i < n; i++)
    if (op->dims[i] > 0)
      snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%lld", i ? "x" : "",
               (long long)op->dims[i]);
  char layout[3] = "";
  if (op->kind == OP_MATMUL)
    snprintf(layout, sizeof layout, "%c%c", op->trans_a ? 't' : 'n', op->trans_b ? 't' : 'n');
  fprintf(f, "%s,%s,%s,%s,%d,%s,%lld,%lld\n", op_kind_names[op->kind], shape,
          chip_dtype_name(op->dtype), chip_dtype_name(op->out_dtype), op->causal ? 1 : 0, layout,
          e->calls, (long long)op->window);
}

/* The ops, sorted, with equal ones merged (calls summed); returns the count. */
static size_t collect(const trace_t *t, entry_t *all, size_t n) {
  size_t k = 0;
  for (int pi = 0; pi < t->nprograms; pi++)
    for (int i = 0; i < t->programs[pi].nops; i++)
      if (t->programs[pi].ops[i].type == TRACE_OP_SHAPED) {
        replay_op_desc(&t->programs[pi].ops[i], &all[k].op);
        all[k++].calls = 1;
      }
  qsort(all, k, sizeof *all, compare);
  size_t m = 0;
  for (size_t i = 0; i < k && i < n; i++) {
    if (m && compare(&all[m - 1], &all[i]) == 0)
      all[m - 1].calls++;
    else
      all[m++] = all[i];
  }
  return m;
}

int op_list_write(const char *path, const trace_t *t, npu_err_t *err) {
  size_t n = 0;
  for (int pi = 0; pi < t->nprograms; pi++)
    for (int i = 0; i < t->programs[pi].nops; i++)
      n += t->programs[pi].ops[i].type == TRACE_OP_SHAPED;
  entry_t *all = malloc((n ? n : 1) * sizeof *all);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = all ? open_memstream(&buf, &len) : NULL;
  if (!f) {
    free(all);
    return npu_err_set(err, "%s: out of memory", path), -1;
  }
  size_t m = collect(t, all, n);
  fprintf(f, "# distinct compute ops of one training step (npusim train --list-ops); time them "
             "with scripts/measure_ops.py --ops\nop,shape,dtype,out_dtype,causal,layout,calls,window\n");
  for (size_t i = 0; i < m; i++)
    write_row(f, &all[i]);
  fclose(f);
  free(all);
  time_limit_off(); /* the file is written whole: the time limit ends here */
  int rc = outfile_write_all(path, buf, len, 0, err);
  free(buf);
  return rc;
}
