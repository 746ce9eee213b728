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

/* An input file being read: plain bytes, or gzip inflated as it is read. */
struct jsonfile_stream {
  int fd;
  unsigned char in[1 << 16]; /* bytes read from fd, in[pos..end) not used yet */
  size_t pos, end;
  bool eof;
  unsigned long long offset; /* of in[end] in the file */
  unsigned long long file_bytes; /* 0 for standard input when a pipe (not known) */
  bool gz, done; /* gzip; its last member ended at the end of the file */
  z_stream zs;
  int members; /* gzip members ended so far */
};

/* Refills s->in once it is used up; 0, or -1 with the reason. */
static int fill(jsonfile_stream_t *s, char *why, size_t why_len) {
  while (s->pos == s->end && !s->eof) {
    ssize_t got = read(s->fd, s->in, sizeof s->in);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return snprintf(why, why_len, "%s", strerror(errno)), -1;
    s->pos = 0;
    s->end = (size_t)got;
    s->offset += (unsigned long long)got;
    s->eof = got == 0;
  }
  return 0;
}

static long read_plain(jsonfile_stream_t *s, char *dst, size_t n, char *why, size_t why_len) {
  if (fill(s, why, why_len))
    return -1;
  size_t k = s->end - s->pos < n ? s->end - s->pos : n;
  memcpy(dst, s->in + s->pos, k);
  s->pos += k;
  return (long)k;
}

/* Whether inflating stopped within what would be the 10-byte header of a
 * member after the first: bytes after a gzip stream that are none (why says
 * how many and where). */
static bool trailing(const jsonfile_stream_t *s, char *why, size_t why_len) {
  if (s->members == 0 || s->zs.total_out != 0 || s->zs.total_in > 10)
    return false;
  unsigned long long at = s->offset - (s->end - s->pos) - s->zs.total_in;
  if (s->file_bytes == 0) { /* a pipe: how many follow is not known */
    snprintf(why, why_len,
             "a gzip stream followed by bytes that are not a gzip member (at byte "
             "%llu)",
             at);
    return true;
  }
  unsigned long long n = s->file_bytes > at ? s->file_bytes - at : 0;
  snprintf(why, why_len, "a gzip stream followed by %llu %s not a gzip member (at byte %llu)", n,
           n == 1 ? "byte that is" : "bytes that are", at);
  return true;
}

/* Inflates gzip members one after another until the end of the file, into dst
 * until something came out. Several members are one stream (RFC 1952, section
 * 2.2: `cat a.gz b.gz` is a gzip file of both, as gzip -d reads it); anything
 * else after a member (garbage, zero padding) is refused, where zlib's gzread
 * would drop it silently. */
static long read_gzip(jsonfile_stream_t *s, char *dst, size_t n, char *why, size_t why_len) {
  size_t got = 0;
  while (got == 0 && !s->done) {
    if (fill(s, why, why_len))
      return -1;
    if (s->pos == s->end) {
      if (!trailing(s, why, why_len))
        snprintf(why, why_len, "a truncated or corrupt gzip stream (unexpected end of file)");
      return -1;
    }
    size_t room = n > (1u << 30) ? (1u << 30) : n;
    s->zs.next_in = s->in + s->pos;
    s->zs.avail_in = (uInt)(s->end - s->pos);
    s->zs.next_out = (Bytef *)dst;
    s->zs.avail_out = (uInt)room;
    int z = inflate(&s->zs, Z_NO_FLUSH);
    s->pos = s->end - s->zs.avail_in;
    got = room - s->zs.avail_out;
    if (z == Z_DATA_ERROR && trailing(s, why, why_len))
      return -1;
    if (z == Z_DATA_ERROR || z == Z_NEED_DICT || z == Z_STREAM_ERROR)
      return snprintf(why, why_len, "a truncated or corrupt gzip stream (%s)",
                      s->zs.msg ? s->zs.msg : "invalid data"),
             -1;
    if (z == Z_MEM_ERROR)
      return snprintf(why, why_len, "out of memory"), -1;
    if (z != Z_STREAM_END)
      continue;
    s->members++;
    /* A member ended: the file ends here, or another member follows. */
    if (fill(s, why, why_len))
      return -1;
    if (s->pos == s->end)
      s->done = true;
    else
      inflateReset(&s->zs);
  }
  return (long)got;
}

long jsonfile_stream_read(jsonfile_stream_t *s, char *dst, size_t n, char *why, size_t why_len) {
  if (n == 0)
    return 0;
  return s->gz ? read_gzip(s, dst, n, why, why_len) : read_plain(s, dst, n, why, why_len);
}

bool jsonfile_stream_gzip(const jsonfile_stream_t *s) { return s->gz; }

void jsonfile_stream_close(jsonfile_stream_t *s) {
  if (!s)
    return;
  if (s->gz)
    inflateEnd(&s->zs);
  close(s->fd);
  free(s);
}

int jsonfile_check(const char *path, char *why, size_t why_len) {
  struct stat st;
  struct statfs fs;
  if (stat(path, &st) != 0 || statfs(path, &fs) != 0) {
    snprintf(why, why_len, "%s", strerror(errno));
    return -1;
  }
  return check_regular(&st, &fs, why, why_len);
}

/* Every file read, by identity, so that no output replaces one (outfile.c
 * asks jsonfile_input_of before renaming into place). */
static struct input {
  dev_t dev;
  ino_t ino;
  char *path;
} * inputs;
static size_t ninputs, inputs_cap;

static void remember_input(const struct stat *st, const char *path) {
  if (jsonfile_input_of(st->st_dev, st->st_ino))
    return;
  if (ninputs == inputs_cap) {
    size_t cap = inputs_cap ? 2 * inputs_cap : 16;
    struct input *grown = realloc(inputs, cap * sizeof *grown);
    if (!grown)
      return; /* out of memory: the read fails soon after anyway */
    inputs = grown;
    inputs_cap = cap;
  }
  char *copy = strdup(path);
  if (copy)
    inputs[ninputs++] = (struct input){st->st_dev, st->st_ino, copy};
}

const char *jsonfile_input_of(dev_t dev, ino_t ino) {
  for (size_t i = 0; i < ninputs; i++)
    if (inputs[i].dev == dev && inputs[i].ino == ino)
      return inputs[i].path;
  return NULL;
}

void jsonfile_forget_inputs(void) {
  for (size_t i = 0; i < ninputs; i++)
    free(inputs[i].path);
  free(inputs);
  inputs = NULL;
  ninputs = inputs_cap = 0;
}

/* Standard input ("-"), read once: a pipe, a redirected file or a device
 * such as /dev/null, but not a terminal (the run would wait on the keyboard)
 * nor a directory. Its own descriptor (a dup), so closing the stream leaves
 * fd 0 alone. -1 with the reason in why. */
static int open_stdin(struct stat *st, char *why, size_t why_len) {
  static bool taken;
  if (taken)
    return snprintf(why, why_len, "standard input, already read for another input"), -1;
  if (isatty(STDIN_FILENO))
    return snprintf(why, why_len, "a terminal (pipe the input in, or redirect a file)"), -1;
  int fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
  if (fd < 0)
    return snprintf(why, why_len, "no standard input (%s)", strerror(errno)), -1;
  if (fstat(fd, st) != 0 || S_ISDIR(st->st_mode)) {
    snprintf(why, why_len, "%s", S_ISDIR(st->st_mode) ? "a directory" : strerror(errno));
    close(fd);
    return -1;
  }
  taken = true;
  if (S_ISREG(st->st_mode)) /* `< file`: no output may replace it either */
    remember_input(st, JSONFILE_STDIN);
  else
    st->st_size = 0; /* a pipe's size says nothing */
  return fd;
}

/* Opens path ("-": standard input) for reading, checked as the inputs are. */
static int open_input(const char *path, struct stat *st, char *why, size_t why_len) {
  if (strcmp(path, JSONFILE_STDIN) == 0)
    return open_stdin(st, why, why_len);
  /* Checked by path first, so that a special file is named as such whatever
   * the rights on it, and nothing is opened that could block or be consumed;
   * then again on the descriptor, opened without blocking (a FIFO put in its
   * place meanwhile), which is what is read. */
  if (jsonfile_check(path, why, why_len))
    return -1;
  struct statfs fs;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(why, why_len, "%s", strerror(errno));
    return -1;
  }
  if (fstat(fd, st) != 0 || fstatfs(fd, &fs) != 0) {
    snprintf(why, why_len, "%s", strerror(errno));
    close(fd);
    return -1;
  }
  if (check_regular(st, &fs, why, why_len)) {
    close(fd);
    return -1;
  }
  remember_input(st, path);
  return fd;
}

jsonfile_stream_t *jsonfile_stream_open(const char *path, char *why, size_t why_len) {
  struct stat st;
  int fd = open_input(path, &st, why, why_len);
  if (fd < 0)
    return NULL;
  jsonfile_stream_t *s = calloc(1, sizeof *s); /* 64 KiB: not on a (SimGrid actor's) stack */
  if (!s) {
    snprintf(why, why_len, "out of memory");
    close(fd);
    return NULL;
  }
  s->fd = fd;
  s->file_bytes = (unsigned long long)st.st_size;
  /* gzip is told by its magic bytes (1f 8b), not by the file's name */
  if (fill(s, why, why_len)) {
    jsonfile_stream_close(s);
    return NULL;
  }
  s->gz = s->end - s->pos >= 2 && s->in[s->pos] == 0x1f && s->in[s->pos + 1] == 0x8b;
  if (s->gz && inflateInit2(&s->zs, 16 + MAX_WBITS) != Z_OK) {
    s->gz = false;
    jsonfile_stream_close(s);
    snprintf(why, why_len, "out of memory");
    return NULL;
  }
  return s;
}

/* Grows *buf (its capacity *cap) to hold at least one more byte; -1 with the
 * reason past max (the caller has found that more bytes follow). */
static int make_room(char **buf, size_t *cap, size_t max, bool gz, char *why, size_t why_len) {
  if (*cap >= max)
    return snprintf(why, why_len,
                    gz ? "a gzip stream inflating to over %zu MiB" : "a file over %zu MiB",
                    max >> 20),
           -1;
  size_t grown_cap = *cap ? 2 * *cap : 65536;
  char *grown = realloc(*buf, grown_cap + 1);
  if (!grown)
    return snprintf(why, why_len, "a file too large for memory"), -1;
  *buf = grown;
  *cap = grown_cap;
  return 0;
}

char *jsonfile_read(const char *path, size_t max_bytes, size_t *len, char *why, size_t why_len) {
  jsonfile_stream_t *s = jsonfile_stream_open(path, why, why_len);
  if (!s)
    return NULL;
  char *buf = malloc(65536 + 1);
  size_t n = 0, cap = 65536;
  long got = buf ? 1 : -1;
  if (!buf)
    snprintf(why, why_len, "out of memory");
  while (got > 0) {
    if (n == cap) { /* full: a byte more is over the bound, the end is not */
      char probe;
      got = jsonfile_stream_read(s, &probe, 1, why, why_len);
      if (got <= 0)
        break;
      if (make_room(&buf, &cap, max_bytes, s->gz, why, why_len)) {
        got = -1;
        break;
      }
      buf[n++] = probe;
    }
    got = jsonfile_stream_read(s, buf + n, cap - n, why, why_len);
    if (got > 0)
      n += (size_t)got;
  }
  jsonfile_stream_close(s);
  if (got < 0) {
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  *len = n;
  return buf;
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

/* How many objects and arrays are open at text[off], strings skipped. */
static int depth_at(const char *text, size_t off) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < off; i++) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        i++;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      depth++;
    } else if (c == '}' || c == ']') {
      depth--;
    }
  }
  return depth;
}

cJSON *jsonfile_parse(const char *name, const char *text, size_t len, npu_err_t *err) {
  const char *nul = memchr(text, '\0', len);
  int line, col;
  if (nul) {
    position_of(text, (size_t)(nul - text), &line, &col);
    npu_err_set(err, "%s:%d:%d: expected JSON text, found a NUL byte", name, line, col);
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
    int depth = depth_at(text, off);
    if (off < len && (text[off] == '{' || text[off] == '[') && depth >= CJSON_NESTING_LIMIT)
      npu_err_set(err, "%s:%d:%d: expected JSON nested at most %d deep (cJSON's nesting limit), found %s "
               "opening level %d",
               name, line, col, CJSON_NESTING_LIMIT, what, depth + 1);
    else
      npu_err_set(err, "%s:%d:%d: expected valid JSON, found %s", name, line, col, what);
  }
  return root;
}

cJSON *jsonfile_load(const char *path, size_t max_bytes, npu_err_t *err) {
  char why[256];
  size_t len;
  char *text = jsonfile_read(path, max_bytes, &len, why, sizeof why);
  if (!text) {
    npu_err_set(err, "%s: cannot read: %s", path, why);
    return NULL;
  }
  cJSON *doc = jsonfile_parse(path, text, len, err);
  free(text);
  return doc;
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
