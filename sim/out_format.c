/* out_format.c - see out_format.h. */
#include "out_format.h"

#include <string.h>

void out_csv_field(FILE *out, const char *s, const char *end) {
  if (strpbrk(s, ",\"\r\n")) {
    fputc('"', out);
    for (; *s; s++) {
      if (*s == '"')
        fputc('"', out);
      fputc(*s, out);
    }
    fputc('"', out);
  } else {
    fputs(s, out);
  }
  fputs(end, out);
}
