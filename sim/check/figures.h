/* figures.h - the numbers of an npusim JSON output, named by their paths:
 * what `npusim check` compares with expected values and `npusim diff`
 * compares between two runs.
 *
 * A path names an object member by its key and an array element by its index
 * in brackets, joined by dots: "step_time_s", "rows[3].busbw_GBps",
 * "ttft_s.p90", "pools[0].kv_cache_GiB"; a key that holds a dot, a bracket
 * or a quote is written ["key"]. An output whose top level is an array
 * starts with [i]. */
#ifndef NPUSIM_FIGURES_H
#define NPUSIM_FIGURES_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "npu_err.h"

/* The number at path in root: 0, or -1 with what was found instead in err
 * ("figure rows[9].busbw_GBps: expected a number, found nothing (rows has 4
 * elements)"). */
int figures_get(const cJSON *root, const char *path, double *value, npu_err_t *err);

/* Each leaf under root (numbers, strings, booleans, nulls) in document order,
 * with its path; text is NULL for a number. */
typedef void (*figures_visit_t)(const char *path, double value, const char *text, void *ctx);
void figures_each(const cJSON *root, figures_visit_t visit, void *ctx);

#endif
