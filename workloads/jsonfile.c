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

/* gzerror's message without the "<fd:N>: " it starts with for a gzdopen'ed file. */
static const char *gz_reason(gzFile gz, int *code) {
  const char *msg = gzerror(gz, code);
  const char *sep = strncmp(msg, "<fd:", 4) == 0 ? strstr(msg, ">: ") : NULL;
  return sep ? sep + 3 : msg;
}

char *jsonfile_read(const char *path, size_t max_bytes, size_t *len, char *why, size_t why_len) {
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
    return NULL;
  }
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
      snprintf(why, why_len, "a truncated or corrupt gzip stream (%s)", gz_reason(gz, &code));
      goto fail;
    }
    if (got == 0)
      break;
    n += (size_t)got;
  }
  int code;
  const char *reason = gz_reason(gz, &code);
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

/* ---- writing ---- */

/* The temporary file being written, for the signal handler to remove. This is
 * the module's one piece of mutable global state, and it exists only because a
 * signal handler gets no argument: the path it must unlink has to be reachable
 * from a static. npusim writes one file at a time, so one slot is enough; it
 * is set and cleared with the signals blocked, so the handler never sees half
 * a path. */
static char pending_tmp[PATH_MAX];
static volatile sig_atomic_t pending_set;

static const int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define NCLEANUP (sizeof cleanup_signals / sizeof cleanup_signals[0])

void jsonfile_remove_pending(void) {
  if (pending_set)
    unlink(pending_tmp);
}

/* Installed with SA_RESETHAND: after the unlink, raising the signal again ends
 * the process the way the signal would have (status, core, parent's view). */
static void remove_pending(int sig) {
  jsonfile_remove_pending();
  raise(sig);
}

typedef struct {
  struct sigaction old[NCLEANUP];
  bool installed[NCLEANUP];
} sig_guard_t;

/* Catches the cleanup signals the process does not ignore (a signal ignored by
 * nohup or a background shell stays ignored). */
static void guard_install(sig_guard_t *g) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = remove_pending;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;
  for (size_t i = 0; i < NCLEANUP; i++) {
    g->installed[i] = sigaction(cleanup_signals[i], NULL, &g->old[i]) == 0 &&
                      g->old[i].sa_handler != SIG_IGN &&
                      sigaction(cleanup_signals[i], &sa, NULL) == 0;
  }
}

static void guard_remove(sig_guard_t *g) {
  for (size_t i = 0; i < NCLEANUP; i++)
    if (g->installed[i])
      sigaction(cleanup_signals[i], &g->old[i], NULL);
}

/* The cleanup signals, and SIGALRM: the run's deadline (sim/time_limit.c)
 * removes the pending file too, so it must not strike between the file's
 * creation and its registration. */
static void block_cleanup_signals(sigset_t *old) {
  sigset_t set;
  sigemptyset(&set);
  for (size_t i = 0; i < NCLEANUP; i++)
    sigaddset(&set, cleanup_signals[i]);
  sigaddset(&set, SIGALRM);
  sigprocmask(SIG_BLOCK, &set, old);
}

/* Writes all of data to fd, gzip-compressed if gzip is set; fd stays open.
 * Returns 0 or an errno value. */
static int write_fd(int fd, const char *data, size_t len, int gzip) {
  if (!gzip) {
    while (len > 0) {
      ssize_t n = write(fd, data, len);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return n < 0 ? errno : EIO;
      data += n;
      len -= (size_t)n;
    }
    return 0;
  }
  int dup_fd = dup(fd); /* gzclose closes the descriptor it was given */
  gzFile gz = dup_fd < 0 ? NULL : gzdopen(dup_fd, "wb9");
  if (!gz) {
    int e = dup_fd < 0 ? errno : ENOMEM;
    if (dup_fd >= 0)
      close(dup_fd);
    return e;
  }
  int e = 0;
  while (len > 0 && e == 0) {
    unsigned chunk = len > (1u << 30) ? (1u << 30) : (unsigned)len;
    errno = 0;
    if (gzwrite(gz, data, chunk) != (int)chunk)
      e = errno ? errno : EIO;
    data += chunk;
    len -= chunk;
  }
  errno = 0;
  if (gzclose(gz) != Z_OK && e == 0)
    e = errno ? errno : EIO;
  return e;
}

/* Follows the symlinks from path to the name to write: the file at the end of
 * the chain, or the name a dangling link points to. Returns 0 or an errno. */
static int follow_links(const char *path, char *out, size_t out_len) {
  char cur[PATH_MAX];
  if (snprintf(cur, sizeof cur, "%s", path) >= (int)sizeof cur)
    return ENAMETOOLONG;
  for (int hops = 0;; hops++) {
    struct stat lst;
    if (lstat(cur, &lst) != 0) {
      if (errno == ENOENT)
        break; /* a new file, or where a dangling link points */
      return errno;
    }
    if (!S_ISLNK(lst.st_mode))
      break;
    if (hops == 40)
      return ELOOP;
    char link[PATH_MAX];
    ssize_t n = readlink(cur, link, sizeof link - 1);
    if (n < 0)
      return errno;
    link[n] = '\0';
    const char *slash = strrchr(cur, '/');
    int dir_len = link[0] == '/' || !slash ? 0 : (int)(slash - cur + 1);
    char next[PATH_MAX];
    if (snprintf(next, sizeof next, "%.*s%s", dir_len, cur, link) >= (int)sizeof next)
      return ENAMETOOLONG;
    memcpy(cur, next, sizeof cur);
  }
  if (snprintf(out, out_len, "%s", cur) >= (int)out_len)
    return ENAMETOOLONG;
  return 0;
}

/* Writes a regular file (old: its stat, or NULL if there is none yet) through a
 * temporary file next to it and a rename. Returns 0 or an errno value. */
static int write_replacing(const char *path, const struct stat *old, const char *data,
                           size_t len, int gzip) {
  char target[PATH_MAX - 48]; /* room for the temporary name's suffix */
  int e = follow_links(path, target, sizeof target);
  if (e)
    return e;
  sig_guard_t guard;
  guard_install(&guard);
  sigset_t mask;
  block_cleanup_signals(&mask);
  /* 0666: the kernel applies the umask (and a default ACL) as for any new
   * file; mkstemp would give 0600. */
  int fd = -1;
  for (unsigned attempt = 0; fd < 0 && attempt < 1000; attempt++) {
    snprintf(pending_tmp, sizeof pending_tmp, "%s.tmp%ld.%u", target, (long)getpid(), attempt);
    /* O_EXCL: never an existing file, nor one a link points to. */
    fd = open(pending_tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST)
      break;
  }
  e = fd < 0 ? errno : 0;
  pending_set = fd >= 0;
  sigprocmask(SIG_SETMASK, &mask, NULL);
  if (fd >= 0) {
    if (old) {
      /* The owner and group only as far as allowed (root: always); the mode
       * after, since a change of owner drops set-id bits. */
      if (fchown(fd, old->st_uid, old->st_gid) != 0) {
        /* not allowed (another owner, a group we are not in): keep ours */
      }
      if (fchmod(fd, old->st_mode & 07777) != 0)
        e = errno;
    }
    if (e == 0)
      e = write_fd(fd, data, len, gzip);
    /* Durable before it replaces the old file; some file systems cannot sync. */
    if (e == 0 && fsync(fd) != 0 && errno != EINVAL && errno != EROFS)
      e = errno;
    if (close(fd) != 0 && e == 0)
      e = errno;
    block_cleanup_signals(&mask);
    if (e == 0 && rename(pending_tmp, target) != 0)
      e = errno;
    if (e)
      unlink(pending_tmp);
    pending_set = 0;
    sigprocmask(SIG_SETMASK, &mask, NULL);
  }
  guard_remove(&guard);
  return e;
}

int jsonfile_write_atomically(const char *path, const char *data, size_t len, int gzip,
                              char *err, size_t err_len) {
  bool to_stdout = strcmp(path, "-") == 0;
  struct stat st;
  int e;
  if (to_stdout) {
    e = fflush(stdout) == 0 ? write_fd(STDOUT_FILENO, data, len, gzip) : errno;
  } else if (stat(path, &st) != 0) {
    e = errno == ENOENT ? write_replacing(path, NULL, data, len, gzip) : errno;
  } else if (S_ISREG(st.st_mode)) {
    e = write_replacing(path, &st, data, len, gzip);
  } else if (S_ISDIR(st.st_mode)) {
    e = EISDIR;
  } else {
    /* A device, FIFO or socket: written in place; a rename would replace the
     * node itself (as root, /dev/null with a regular file). */
    int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    e = fd < 0 ? errno : write_fd(fd, data, len, gzip);
    if (fd >= 0 && close(fd) != 0 && e == 0)
      e = errno;
  }
  if (e)
    snprintf(err, err_len, "%s: cannot write: %s", to_stdout ? "stdout" : path, strerror(e));
  return e ? -1 : 0;
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
