/* npu_err.h - the one-line error a fallible call hands back to its caller.
 *
 * Functions that can fail on bad input take an npu_err_t *, return 0 on
 * success and -1 on failure, and leave a complete one-line message here
 * ("FILE: json.path: expected ..., found ..."). main() prints it and exits 2. */
#ifndef NPUSIM_NPU_ERR_H
#define NPUSIM_NPU_ERR_H

#define NPU_ERR_MAX 1024

typedef struct {
  char msg[NPU_ERR_MAX];
} npu_err_t;

/* Formats the message (printf-style) into err, if err is not NULL; returns -1
 * so callers can write `return npu_err_set(err, ...);`. */
int npu_err_set(npu_err_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
