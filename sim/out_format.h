/* out_format.h - the formats results are printed in (--format): a table for
 * people, JSON and CSV for programs. A report includes this, not cli.h. */
#ifndef NPUSIM_OUT_FORMAT_H
#define NPUSIM_OUT_FORMAT_H

#include <stdio.h>

typedef enum { FORMAT_TABLE, FORMAT_JSON, FORMAT_CSV, FORMAT_COUNT } out_format_t;

/* Writes s as one CSV field (RFC 4180: quoted, inner quotes doubled, when it
 * holds a comma, a quote or a line break), then end (",", "\n"). */
void out_csv_field(FILE *out, const char *s, const char *end);

#endif
