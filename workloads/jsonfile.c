/* jsonfile.c - see jsonfile.h. */
#include "jsonfile.h"

#include <errno.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

char *jsonfile_read(const char *path, size_t max_bytes, size_t *len, char *why, size_t why_len) {
  struct stat st;
  if (stat(path, &st) != 0) {
    snprintf(why, why_len, "%s", strerror(errno));
    return NULL;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(why, why_len, "%s", S_ISDIR(st.st_mode) ? "a directory" : "not a regular file");
    return NULL;
  }
  gzFile gz = gzopen(path, "rb");
  if (!gz) {
    snprintf(why, why_len, "%s", strerror(errno ? errno : ENOMEM));
    return NULL;
  }
  size_t cap = 65536, n = 0;
  char *buf = malloc(cap + 1);
  for (;;) {
    if (n == cap) {
      if (cap >= max_bytes) {
        snprintf(why, why_len, "a file over %zu MiB", max_bytes >> 20);
        goto fail;
      }
      cap *= 2;
      char *grown = realloc(buf, cap + 1);
      if (!grown) {
        snprintf(why, why_len, "a file too large for memory");
        goto fail;
      }
      buf = grown;
    }
    int got = gzread(gz, buf + n, (unsigned)(cap - n > (1u << 30) ? (1u << 30) : cap - n));
    if (got < 0) {
      int code;
      const char *msg = gzerror(gz, &code);
      snprintf(why, why_len, "a truncated or corrupt gzip stream (%s)", msg);
      goto fail;
    }
    if (got == 0)
      break;
    n += (size_t)got;
  }
  int code;
  const char *msg = gzerror(gz, &code);
  if (code != Z_OK && code != Z_STREAM_END) {
    snprintf(why, why_len, "a truncated or corrupt gzip stream (%s)", msg);
    goto fail;
  }
  gzclose(gz);
  buf[n] = '\0';
  *len = n;
  return buf;
fail:
  gzclose(gz);
  free(buf);
  return NULL;
}

static void position_of(const char *text, size_t offset, int *line, int *col) {
  *line = 1;
  *col = 1;
  for (size_t i = 0; i < offset; i++) {
    if (text[i] == '\n') {
      (*line)++;
      *col = 1;
    } else {
      (*col)++;
    }
  }
}

static void describe_char(const char *text, size_t len, size_t offset, char *buf, size_t n) {
  if (offset >= len) {
    snprintf(buf, n, "the end of the file");
    return;
  }
  unsigned char c = (unsigned char)text[offset];
  if (c >= 0x21 && c < 0x7f)
    snprintf(buf, n, "'%c'", c);
  else if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
    snprintf(buf, n, "only whitespace");
  else
    snprintf(buf, n, "byte 0x%02x", c);
}

cJSON *jsonfile_parse(const char *name, const char *text, size_t len, char *err, size_t err_len) {
  const char *nul = memchr(text, '\0', len);
  int line, col;
  if (nul) {
    position_of(text, (size_t)(nul - text), &line, &col);
    snprintf(err, err_len, "%s:%d:%d: expected JSON text, found a NUL byte", name, line, col);
    return NULL;
  }
  /* text[len] is '\0'; the length given to cJSON must include it. */
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, len + 1, &end, 1);
  if (!root) {
    size_t off = end ? (size_t)(end - text) : 0;
    /* cJSON may stop past the culprit, on the whitespace after it. */
    while (off > 0 && off < len && strchr(" \t\r\n", text[off]))
      off--;
    char what[32];
    position_of(text, off, &line, &col);
    describe_char(text, len, off, what, sizeof what);
    snprintf(err, err_len, "%s:%d:%d: expected valid JSON, found %s", name, line, col, what);
  }
  return root;
}

void jsonfile_format_number(double v, char *buf, size_t len) {
  if (v == floor(v) && fabs(v) < 1e15) {
    snprintf(buf, len, "%.0f", v);
    return;
  }
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, len, "%.*g", prec, v);
    if (strtod(buf, NULL) == v)
      return;
  }
}

void jsonfile_describe(const cJSON *item, char *buf, size_t len) {
  if (!item)
    snprintf(buf, len, "nothing");
  else if (cJSON_IsNumber(item))
    jsonfile_format_number(item->valuedouble, buf, len);
  else if (cJSON_IsString(item))
    snprintf(buf, len, "\"%.80s\"%s", item->valuestring,
             strlen(item->valuestring) > 80 ? "..." : "");
  else if (cJSON_IsBool(item))
    snprintf(buf, len, "%s", cJSON_IsTrue(item) ? "true" : "false");
  else if (cJSON_IsNull(item))
    snprintf(buf, len, "null");
  else if (cJSON_IsArray(item))
    snprintf(buf, len, "an array of %d", cJSON_GetArraySize(item));
  else
    snprintf(buf, len, "an object");
}

void jsonfile_write_string(FILE *out, const char *s) {
  fputc('"', out);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(out, "\\%c", *p);
    else if (*p == '\n')
      fputs("\\n", out);
    else if (*p == '\t')
      fputs("\\t", out);
    else if (*p < 0x20)
      fprintf(out, "\\u%04x", *p);
    else
      fputc(*p, out);
  }
  fputc('"', out);
}

int jsonfile_write_atomically(const char *path, const char *data, size_t len, int gzip,
                              char *err, size_t err_len) {
  size_t n = strlen(path);
  char *tmp = malloc(n + 16);
  snprintf(tmp, n + 16, "%s.tmpXXXXXX", path);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    snprintf(err, err_len, "%s: cannot write: %s", path, strerror(errno));
    free(tmp);
    return -1;
  }
  bool ok;
  if (gzip) {
    gzFile gz = gzdopen(fd, "wb9");
    ok = gz && (len == 0 || gzwrite(gz, data, (unsigned)len) == (int)len);
    ok = (gz && gzclose(gz) == Z_OK) && ok;
    if (!gz)
      close(fd);
  } else {
    FILE *f = fdopen(fd, "wb");
    ok = f && fwrite(data, 1, len, f) == len;
    ok = (f && fclose(f) == 0) && ok;
    if (!f)
      close(fd);
  }
  if (ok && rename(tmp, path) == 0) {
    free(tmp);
    return 0;
  }
  snprintf(err, err_len, "%s: cannot write: %s", path, strerror(errno ? errno : EIO));
  unlink(tmp);
  free(tmp);
  return -1;
}
