/* npu_err.c - see npu_err.h. */
#include "npu_err.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "npu_utf8.h"

int npu_err_set(npu_err_t *err, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
  }
  return -1;
}

void npu_err_print(FILE *f, const char *msg) {
  for (const char *p = msg; *p;) {
    unsigned char c = (unsigned char)*p;
    unsigned cp = 0;
    size_t n = c < 0x80 ? 1 : npu_utf8_char(p, &cp);
    if (c == '\n' || c == '\r' || c == '\t') {
      fprintf(f, "\\%c", c == '\n' ? 'n' : c == '\r' ? 'r' : 't');
      p++;
    } else if (c < 0x20 || c == 0x7f || n == 0) {
      fprintf(f, "\\x%02x", c); /* a control character or a byte of no valid UTF-8 */
      p++;
    } else if ((cp >= 0x80 && cp < 0xa0) || cp == 0x2028 || cp == 0x2029) {
      /* C1 controls and the Unicode line separators end a line for some readers */
      for (size_t i = 0; i < n; i++)
        fprintf(f, "\\x%02x", (unsigned char)p[i]);
      p += n;
    } else {
      fwrite(p, 1, n, f);
      p += n;
    }
  }
  fputc('\n', f);
}

bool npu_err_one_line(const char *msg) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f)
    return false;
  npu_err_print(f, msg);
  fclose(f);
  bool ok = len > 1 && memchr(buf, '\n', len - 1) == NULL && buf[len - 1] == '\n';
  free(buf);
  return ok;
}
