/* npu_utf8.c - one UTF-8 character decoded (npu_utf8.h). */
#include "npu_utf8.h"

size_t npu_utf8_char(const char *s, unsigned *cp) {
  const unsigned char *p = (const unsigned char *)s;
  unsigned c = p[0], min;
  size_t n;
  if (c == 0)
    return 0;
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  if ((c & 0xe0) == 0xc0) {
    n = 2, c &= 0x1f, min = 0x80;
  } else if ((c & 0xf0) == 0xe0) {
    n = 3, c &= 0x0f, min = 0x800;
  } else if ((c & 0xf8) == 0xf0) {
    n = 4, c &= 0x07, min = 0x10000;
  } else {
    return 0;
  }
  for (size_t i = 1; i < n; i++) {
    if ((p[i] & 0xc0) != 0x80) /* also stops at the NUL */
      return 0;
    c = (c << 6) | (p[i] & 0x3f);
  }
  if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
    return 0;
  *cp = c;
  return n;
}
