/* npu_err.c - see npu_err.h. */
#include "npu_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int npu_err_set(npu_err_t *err, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    /* One line, always: a control character inside a quoted value would break
     * scripts reading it. */
    for (char *p = err->msg; *p; p++)
      if ((unsigned char)*p < 0x20)
        *p = ' ';
  }
  return -1;
}
