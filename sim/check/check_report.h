/* check_report.h - what `npusim check` prints: a row per expectation
 * (predicted, expected, error, tolerance, verdict, source) and the count that
 * passed, as a table, JSON or CSV; and the same as JUnit XML for a CI server
 * (--junit: one testcase per row, a failure element for FAIL and ERROR). */
#ifndef NPUSIM_CHECK_REPORT_H
#define NPUSIM_CHECK_REPORT_H

#include <stdio.h>

#include "check.h"
#include "out_format.h"

void check_report(FILE *out, out_format_t fmt, const char *path, const check_set_t *set,
                  const check_result_t *results);

/* The JUnit XML of the run, into a string the caller frees. */
char *check_junit(const char *path, const check_set_t *set, const check_result_t *results,
                  size_t *len);

/* Rows that did not pass. */
int check_failures(const check_set_t *set, const check_result_t *results);

#endif
