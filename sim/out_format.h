/* out_format.h - the formats results are printed in (--format): a table for
 * people, JSON and CSV for programs. A report includes this, not cli.h. */
#ifndef NPUSIM_OUT_FORMAT_H
#define NPUSIM_OUT_FORMAT_H

typedef enum { FORMAT_TABLE, FORMAT_JSON, FORMAT_CSV, FORMAT_COUNT } out_format_t;

#endif
