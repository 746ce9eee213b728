/* out_format.h - the formats results are printed in (--format): a table for
 * people, JSON and CSV for programs. A report includes this, not cli.h.
 *
 * Also the guard every command's output passes before it is written: a number
 * printf wrote as not finite ("inf", "-nan") is a bug in the model or a range
 * the config let through, never a result, so the output is refused whole. */
#ifndef NPUSIM_OUT_FORMAT_H
#define NPUSIM_OUT_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef enum { FORMAT_TABLE, FORMAT_JSON, FORMAT_CSV, FORMAT_COUNT } out_format_t;

/* Writes s as one CSV field (RFC 4180: quoted, inner quotes doubled, when it
 * holds a comma, a quote or a line break, or reads as a number that is not
 * finite, so that out_find_nonfinite passes it), then end (",", "\n"). */
void out_csv_field(FILE *out, const char *s, const char *end);

/* Whether the n bytes at s are exactly what printf writes for a double that
 * is not finite: inf or nan, in either case, with an optional sign. */
bool out_is_nonfinite_text(const char *s, size_t n);

/* A number printed as not finite, and where. */
typedef struct {
  int line;        /* 1-based line of the output */
  char text[8];    /* as printed: "inf", "-nan" */
  char field[160]; /* JSON: its path ("[3].time_us"); CSV: its column's header;
                      table: the row's label and the column's header */
} out_nonfinite_t;

/* Looks through a whole output printed in fmt for a number written as not
 * finite: in JSON a bare inf or nan (strings skipped), in CSV an unquoted field
 * that is one, in a table a word that is one outside double quotes (a name
 * reading "inf" in a table is taken for a number). Returns true and fills
 * *found for the first one, false if there is none. */
bool out_find_nonfinite(out_format_t fmt, const char *buf, size_t len, out_nonfinite_t *found);

#endif
