/* npu_err.h - the one-line error a fallible call hands back to its caller.
 *
 * Functions that can fail on bad input take an npu_err_t *, return 0 on
 * success and -1 on failure, and leave a complete one-line message here
 * ("FILE: json.path: expected ..., found ..."). main() prints it with
 * npu_err_print and exits 2 (1 when an output could not be written).
 *
 * A message may quote anything the user gave (file names, arguments, config
 * strings) as it is; npu_err_print is the one place that makes it safe to show. */
#ifndef NPUSIM_NPU_ERR_H
#define NPUSIM_NPU_ERR_H

#include <stdbool.h>
#include <stdio.h>

#define NPU_ERR_MAX 1024

typedef struct {
  char msg[NPU_ERR_MAX];
} npu_err_t;

/* Formats the message (printf-style) into err, if err is not NULL; returns -1
 * so callers can write `return npu_err_set(err, ...);`. */
int npu_err_set(npu_err_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints msg and a newline to f as exactly one line: newlines, tabs and CRs
 * as \n \t \r; other control characters (C0, DEL, C1), U+2028, U+2029 and
 * bytes of no valid UTF-8 as \xNN. Everything npusim says on stderr goes
 * through here. */
void npu_err_print(FILE *f, const char *msg);

/* Whether msg prints (npu_err_print) as exactly one non-empty line: what the
 * fuzz targets hold every rejection to. */
bool npu_err_one_line(const char *msg);

#endif
