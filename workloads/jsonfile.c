/* jsonfile.c - see jsonfile.h. */
#include "jsonfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <zlib.h>

/* What a file that is not a regular one is, for a "found ..." clause. */
static const char *kind_of(mode_t mode) {
  return S_ISDIR(mode)    ? "a directory"
         : S_ISCHR(mode)  ? "a character device, not a regular file"
         : S_ISBLK(mode)  ? "a block device, not a regular file"
         : S_ISFIFO(mode) ? "a FIFO, not a regular file"
         : S_ISSOCK(mode) ? "a socket, not a regular file"
                          : "not a regular file";
}

/* The kernel's pseudo file systems whose files stat as regular but are made up
 * on each read: /proc/kmsg blocks until the kernel logs something (and reading
 * consumes the log), others have side effects or a meaningless size. They are
 * refused by file system type: a list of paths would miss bind mounts, and
 * O_NONBLOCK alone would still consume /proc/kmsg. NULL for a disk file. */
static const char *pseudo_fs(const struct statfs *fs) {
  static const struct {
    unsigned long magic;
    const char *name;
  } pseudo[] = {{0x9fa0, "procfs"},          {0x62656572, "sysfs"},
                {0x64626720, "debugfs"},     {0x74726163, "tracefs"},
                {0x73636673, "securityfs"},  {0x62656570, "configfs"},
                {0x27e0eb, "cgroupfs"},      {0x63677270, "cgroup2fs"},
                {0xcafe4a11, "bpffs"},       {0xde5e81e4, "efivarfs"}};
  for (size_t i = 0; i < sizeof pseudo / sizeof pseudo[0]; i++)
    if ((unsigned long)fs->f_type == pseudo[i].magic)
      return pseudo[i].name;
  return NULL;
}

/* 0 if st and fs describe a regular file of a real file system; else -1 with
 * what it is in why. */
static int check_regular(const struct stat *st, const struct statfs *fs, char *why,
                         size_t why_len) {
  if (!S_ISREG(st->st_mode)) {
    snprintf(why, why_len, "%s", kind_of(st->st_mode));
    return -1;
  }
  const char *pseudo = pseudo_fs(fs);
  if (pseudo) {
    snprintf(why, why_len, "a file of the kernel's %s, not a regular file", pseudo);
    return -1;
  }
  return 0;
}

gzFile jsonfile_open(const char *path, char *why, size_t why_len) {
  /* Checked by path first, so that a special file is named as such whatever
   * the rights on it, and nothing is opened that could block or be consumed;
   * then again on the descriptor, opened without blocking (a FIFO put in its
   * place meanwhile), which is what is read. */
  struct stat st;
  struct statfs fs;
  if (stat(path, &st) != 0 || statfs(path, &fs) != 0) {
    snprintf(why, why_len, "%s", strerror(errno));
    return NULL;
  }
  if (check_regular(&st, &fs, why, why_len))
    return NULL;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(why, why_len, "%s", strerror(errno));
    return NULL;
  }
  if (fstat(fd, &st) != 0 || fstatfs(fd, &fs) != 0) {
    snprintf(why, why_len, "%s", strerror(errno));
    close(fd);
    return NULL;
  }
  if (check_regular(&st, &fs, why, why_len)) {
    close(fd);
    return NULL;
  }
  gzFile gz = gzdopen(fd, "rb");
  if (!gz) {
    snprintf(why, why_len, "%s", strerror(errno ? errno : ENOMEM));
    close(fd);
  }
  return gz;
}

const char *jsonfile_gz_reason(gzFile gz, int *code) {
  const char *msg = gzerror(gz, code);
  const char *sep = strncmp(msg, "<fd:", 4) == 0 ? strstr(msg, ">: ") : NULL;
  return sep ? sep + 3 : msg;
}

char *jsonfile_read(const char *path, size_t max_bytes, size_t *len, char *why, size_t why_len) {
  gzFile gz = jsonfile_open(path, why, why_len);
  if (!gz)
    return NULL;
  size_t cap = 65536, n = 0;
  char *buf = malloc(cap + 1);
  for (;;) {
    if (n == cap) {
      if (cap >= max_bytes) {
        snprintf(why, why_len, gzdirect(gz) ? "a file over %zu MiB"
                                             : "a gzip stream inflating to over %zu MiB",
                 max_bytes >> 20);
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
      snprintf(why, why_len, "a truncated or corrupt gzip stream (%s)",
               jsonfile_gz_reason(gz, &code));
      goto fail;
    }
    if (got == 0)
      break;
    n += (size_t)got;
  }
  int code;
  const char *reason = jsonfile_gz_reason(gz, &code);
  if (code != Z_OK && code != Z_STREAM_END) {
    snprintf(why, why_len, "a truncated or corrupt gzip stream (%s)", reason);
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

size_t jsonfile_utf8_char(const char *s, unsigned *cp) {
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

bool jsonfile_decimal(const char *s, double *v) {
  const char *p = s + (*s == '+' || *s == '-');
  size_t whole = strspn(p, "0123456789"), frac = 0;
  p += whole;
  if (*p == '.') {
    frac = strspn(p + 1, "0123456789");
    p += 1 + frac;
  }
  if (whole + frac == 0)
    return false;
  if (*p == 'e' || *p == 'E') {
    p += 1 + (p[1] == '+' || p[1] == '-');
    size_t exp = strspn(p, "0123456789");
    if (exp == 0)
      return false;
    p += exp;
  }
  if (*p)
    return false;
  /* The text is plain decimal, which strtod reads the same in every locale
   * npusim runs in (it never calls setlocale); an overflow reads as +-inf. A
   * number too near 0 for a double's normal range is refused: read as 0 it
   * could mean "off" where 0 does. */
  errno = 0;
  *v = strtod(s, NULL);
  return !(errno == ERANGE && fabs(*v) < 1);
}
