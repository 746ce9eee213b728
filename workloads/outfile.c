/* outfile.c - see outfile.h. */
#include "outfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "jsonfile.h"

/* A temporary file is TARGET.npusim-PID-N.tmp: a later run recognises the
 * debris of a killed one by it (remove_debris). */
#define TMP_TAG ".npusim-"

/* The temporary file being written, for the signal handler to remove. A
 * signal handler gets no argument: the path it must unlink has to be reachable
 * from a static. npusim writes one file at a time, so one slot is enough; it
 * is set and cleared with the signals blocked, so the handler never sees half
 * a path. */
static char pending_tmp[PATH_MAX];
static volatile sig_atomic_t pending_set;

/* Staging (outfile_stage_begin): the temporary files written whole and
 * waiting to be renamed together, and the files to remove then. Changed only
 * with the signals blocked, so the handler sees each file in one list. */
typedef struct {
  char *tmp;    /* the temporary file */
  char *target; /* where it goes (symlinks followed) */
  char *name;   /* the path as given, for messages */
  char *key;    /* the target's directory resolved, and its name: one key per file */
} staged_t;
static staged_t *staged;
static size_t nstaged, staged_cap;
static char **doomed; /* removed at publication: files the outputs replace as a set */
static size_t ndoomed, doomed_cap;
static bool staging;

static const int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define NCLEANUP (sizeof cleanup_signals / sizeof cleanup_signals[0])

void outfile_remove_pending(void) {
  if (pending_set)
    unlink(pending_tmp);
  for (size_t i = 0; i < nstaged; i++)
    unlink(staged[i].tmp);
}

/* Installed with SA_RESETHAND: after the unlink, raising the signal again ends
 * the process the way the signal would have (status, core, parent's view). */
static void remove_pending(int sig) {
  outfile_remove_pending();
  raise(sig);
}

typedef struct {
  struct sigaction old[NCLEANUP];
  bool installed[NCLEANUP];
} sig_guard_t;

/* Catches the cleanup signals the process does not ignore (a signal ignored by
 * nohup or a background shell stays ignored), while a file is open or staged:
 * one guard for all, held by each open file and by staging. */
static sig_guard_t guard;
static int guard_users;

static void guard_acquire(void) {
  if (guard_users++ > 0)
    return;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = remove_pending;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;
  for (size_t i = 0; i < NCLEANUP; i++) {
    guard.installed[i] = sigaction(cleanup_signals[i], NULL, &guard.old[i]) == 0 &&
                         guard.old[i].sa_handler != SIG_IGN &&
                         sigaction(cleanup_signals[i], &sa, NULL) == 0;
  }
}

static void guard_release(void) {
  if (--guard_users > 0)
    return;
  for (size_t i = 0; i < NCLEANUP; i++)
    if (guard.installed[i])
      sigaction(cleanup_signals[i], &guard.old[i], NULL);
}

/* The cleanup signals, and SIGALRM: the run's deadline (sim/base/time_limit.c)
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

struct outfile {
  FILE *stream;
  gzFile gz;      /* compressing into fd, or NULL */
  int fd;         /* the temporary file, the device, or stdout */
  bool temporary; /* fd is pending_tmp, renamed onto target at commit */
  bool close_fd;  /* fd is ours to close (not stdout) */
  size_t chunk;
  int err; /* the first errno of a failed write, 0 */
  unsigned long long bytes;
  char target[PATH_MAX - 48]; /* room for the temporary name's suffix */
  char name[PATH_MAX];        /* for messages: the path as given, or "stdout" */
};

/* Writes len bytes in chunks; the stream's write function (fopencookie):
 * returns len, or fewer with the error kept in f->err. */
static ssize_t cookie_write(void *cookie, const char *data, size_t len) {
  outfile_t *f = cookie;
  size_t done = 0;
  while (done < len && f->err == 0) {
    size_t n = len - done < f->chunk ? len - done : f->chunk;
    if (f->gz) {
      errno = 0;
      int w = gzwrite(f->gz, data + done, (unsigned)n);
      if (w <= 0) {
        int code;
        gzerror(f->gz, &code);
        f->err = code == Z_ERRNO && errno ? errno : code == Z_MEM_ERROR ? ENOMEM : EIO;
        break;
      }
      done += (size_t)w;
    } else {
      ssize_t w = write(f->fd, data + done, n);
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0) {
        f->err = w < 0 ? errno : EIO;
        break;
      }
      done += (size_t)w;
    }
  }
  f->bytes += done;
  return (ssize_t)done;
}

/* The pid in a temporary file's name, NAME.npusim-PID-N.tmp; 0 if name is
 * not one. */
static long debris_pid(const char *name) {
  size_t n = strlen(name);
  if (n < 4 || strcmp(name + n - 4, ".tmp") != 0)
    return 0;
  const char *p = name + n - 4; /* back over N, '-', PID */
  const char *digits_end = p;
  while (p > name && p[-1] >= '0' && p[-1] <= '9')
    p--;
  if (p == digits_end || p == name || p[-1] != '-')
    return 0;
  const char *pid_end = --p;
  while (p > name && p[-1] >= '0' && p[-1] <= '9')
    p--;
  size_t tag = strlen(TMP_TAG);
  if (p == pid_end || pid_end - p > 9 || (size_t)(p - name) <= tag ||
      strncmp(p - tag, TMP_TAG, tag) != 0)
    return 0;
  return strtol(p, NULL, 10);
}

/* Removes from dir the temporary files of npusim runs that died without
 * cleaning up (SIGKILL, a power cut): regular files named as
 * open_temporary names them, whose process is gone. Each directory once per
 * run (the last one scanned is remembered: an output set shares one). */
static void remove_debris(const char *target) {
  static char last_dir[PATH_MAX];
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", target);
  char *slash = strrchr(dir, '/');
  if (!slash)
    snprintf(dir, sizeof dir, ".");
  else
    slash[slash == dir] = '\0'; /* "/x" -> "/" */
  if (strcmp(dir, last_dir) == 0)
    return;
  snprintf(last_dir, sizeof last_dir, "%s", dir);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
  if (!d) {
    if (dfd >= 0)
      close(dfd);
    return;
  }
  for (struct dirent *e; (e = readdir(d));) {
    long pid = debris_pid(e->d_name);
    struct stat st;
    if (pid <= 0 || pid == (long)getpid() ||
        fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
      continue;
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) /* EPERM: alive, another user's */
      unlinkat(dfd, e->d_name, 0);
  }
  closedir(d);
}

/* Creates the temporary file next to target (old: the target's stat, or NULL).
 * Returns 0 or an errno. */
static int open_temporary(outfile_t *f, const struct stat *old) {
  remove_debris(f->target);
  sigset_t mask;
  block_cleanup_signals(&mask);
  /* 0666: the kernel applies the umask (and a default ACL) as for any new
   * file; mkstemp would give 0600. */
  f->fd = -1;
  for (unsigned attempt = 0; f->fd < 0 && attempt < 1000; attempt++) {
    snprintf(pending_tmp, sizeof pending_tmp, "%s" TMP_TAG "%ld-%u.tmp", f->target, (long)getpid(),
             attempt);
    /* O_EXCL: never an existing file, nor one a link points to. */
    f->fd = open(pending_tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (f->fd < 0 && errno != EEXIST)
      break;
  }
  int e = f->fd < 0 ? errno : 0;
  pending_set = f->fd >= 0;
  sigprocmask(SIG_SETMASK, &mask, NULL);
  if (e == 0 && old) {
    /* The owner and group only as far as allowed (root: always); the mode
     * after, since a change of owner drops set-id bits. */
    if (fchown(f->fd, old->st_uid, old->st_gid) != 0) {
      /* not allowed (another owner, a group we are not in): keep ours */
    }
    if (fchmod(f->fd, old->st_mode & 07777) != 0)
      e = errno;
  }
  f->temporary = f->close_fd = f->fd >= 0;
  return e;
}

/* Picks where the bytes go: stdout, a temporary file, or a device in place. */
static int open_target(outfile_t *f, const char *path) {
  if (strcmp(path, "-") == 0) {
    f->fd = STDOUT_FILENO;
    return fflush(stdout) == 0 ? 0 : errno;
  }
  struct stat st;
  int e = follow_links(path, f->target, sizeof f->target);
  if (e)
    return e;
  if (stat(f->target, &st) != 0)
    return errno == ENOENT ? open_temporary(f, NULL) : errno;
  if (S_ISREG(st.st_mode))
    return open_temporary(f, &st);
  if (S_ISDIR(st.st_mode))
    return EISDIR;
  /* A device, FIFO or socket: written in place; a rename would replace the
   * node itself (as root, /dev/null with a regular file). */
  f->fd = open(f->target, O_WRONLY | O_NOCTTY | O_CLOEXEC);
  f->close_fd = f->fd >= 0;
  return f->fd < 0 ? errno : 0;
}

static int fail_message(const outfile_t *f, int e, npu_err_t *err) {
  npu_err_set(err, "%s: cannot write: %s", f->name, strerror(e));
  return -1;
}

/* Closes everything; returns the first error (0 if all went well). */
static int close_all(outfile_t *f, int e) {
  if (f->stream) {
    if (fclose(f->stream) != 0 && e == 0)
      e = f->err ? f->err : errno ? errno : EIO;
    f->stream = NULL;
  }
  if (e == 0)
    e = f->err;
  if (f->gz) {
    errno = 0;
    int rc = gzclose(f->gz);
    if (rc != Z_OK && e == 0)
      e = rc == Z_ERRNO && errno ? errno : EIO;
  }
  /* Durable before it replaces the old file; some file systems cannot sync. */
  if (e == 0 && f->temporary && fsync(f->fd) != 0 && errno != EINVAL && errno != EROFS)
    e = errno;
  if (f->close_fd && close(f->fd) != 0 && e == 0)
    e = errno;
  return e;
}

static void release(outfile_t *f, bool keep) {
  if (f->temporary) {
    sigset_t mask;
    block_cleanup_signals(&mask);
    if (!keep)
      unlink(pending_tmp);
    pending_set = 0;
    sigprocmask(SIG_SETMASK, &mask, NULL);
  }
  guard_release();
  free(f);
}

outfile_t *outfile_open(const char *path, bool gzip, size_t chunk_bytes, npu_err_t *err) {
  outfile_t *f = calloc(1, sizeof *f);
  if (!f) {
    npu_err_set(err, "%s: cannot write: out of memory", path);
    return NULL;
  }
  f->fd = -1;
  f->chunk = chunk_bytes ? chunk_bytes : OUTFILE_CHUNK_BYTES;
  snprintf(f->name, sizeof f->name, "%s", strcmp(path, "-") == 0 ? "stdout" : path);
  guard_acquire();
  int e = open_target(f, path);
  if (e == 0 && gzip) {
    int dup_fd = dup(f->fd); /* gzclose closes the descriptor it is given */
    f->gz = dup_fd < 0 ? NULL : gzdopen(dup_fd, "wb6");
    if (!f->gz) {
      e = dup_fd < 0 ? errno : ENOMEM;
      if (dup_fd >= 0)
        close(dup_fd);
    }
  }
  if (e == 0) {
    f->stream = fopencookie(f, "w", (cookie_io_functions_t){.write = cookie_write});
    e = f->stream ? 0 : ENOMEM;
  }
  if (e) {
    fail_message(f, e, err);
    close_all(f, e);
    release(f, false);
    return NULL;
  }
  return f;
}

FILE *outfile_stream(outfile_t *f) {
  return f->stream;
}

unsigned long long outfile_bytes(const outfile_t *f) {
  return f->bytes;
}

static int stage(outfile_t *f);

int outfile_commit(outfile_t *f, npu_err_t *err) {
  int e = 0;
  if (fflush(f->stream) != 0 || ferror(f->stream))
    e = f->err ? f->err : EIO;
  e = close_all(f, e);
  if (e == 0 && f->temporary && staging)
    e = stage(f);
  else if (e == 0 && f->temporary) {
    sigset_t mask;
    block_cleanup_signals(&mask);
    if (rename(pending_tmp, f->target) != 0)
      e = errno;
    sigprocmask(SIG_SETMASK, &mask, NULL);
  }
  if (e)
    fail_message(f, e, err);
  release(f, e == 0);
  return e ? -1 : 0;
}

/* ---- staging: the outputs of a run land together ---- */

const char *outfile_split_path(const char *path, char *dir, size_t dir_len) {
  const char *slash = strrchr(path, '/');
  if (!slash) {
    snprintf(dir, dir_len, ".");
    return path;
  }
  snprintf(dir, dir_len, "%.*s", slash == path ? 1 : (int)(slash - path), path);
  return slash + 1;
}

/* The key of a file: its directory resolved (symlinks, "..") and its name. */
static char *key_of(const char *target) {
  char dir[PATH_MAX], real[PATH_MAX];
  const char *base = outfile_split_path(target, dir, sizeof dir);
  char *key = NULL;
  if (!realpath(dir, real) || asprintf(&key, "%s/%s", real, base) < 0)
    return strdup(target);
  return key;
}

/* Moves f's written temporary file from pending to the staged list. */
static int stage(outfile_t *f) {
  staged_t s = {strdup(pending_tmp), strdup(f->target), strdup(f->name), key_of(f->target)};
  int e = 0;
  sigset_t mask;
  block_cleanup_signals(&mask);
  if (nstaged == staged_cap) {
    size_t cap = staged_cap ? 2 * staged_cap : 8;
    staged_t *grown = realloc(staged, cap * sizeof *grown);
    if (grown) {
      staged = grown;
      staged_cap = cap;
    }
  }
  if (nstaged < staged_cap && s.tmp && s.target && s.name && s.key) {
    staged[nstaged++] = s;
    pending_set = 0; /* now in the staged list: release keeps it */
  } else {
    e = ENOMEM;
  }
  sigprocmask(SIG_SETMASK, &mask, NULL);
  if (e) {
    free(s.tmp);
    free(s.target);
    free(s.name);
    free(s.key);
  }
  return e;
}

bool outfile_stage_begin(void) {
  if (staging)
    return false;
  staging = true;
  guard_acquire();
  return true;
}

int outfile_stage_remove(const char *path) {
  char *copy = strdup(path);
  sigset_t mask;
  block_cleanup_signals(&mask);
  if (copy && ndoomed == doomed_cap) {
    size_t cap = doomed_cap ? 2 * doomed_cap : 8;
    char **grown = realloc(doomed, cap * sizeof *grown);
    if (grown) {
      doomed = grown;
      doomed_cap = cap;
    }
  }
  bool kept = copy && ndoomed < doomed_cap;
  if (kept)
    doomed[ndoomed++] = copy;
  sigprocmask(SIG_SETMASK, &mask, NULL);
  if (!kept)
    free(copy);
  return kept ? 0 : -1;
}

/* The input read as the file at path (symlinks followed), or NULL. */
static const char *input_at(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? jsonfile_input_of(st.st_dev, st.st_ino) : NULL;
}

int outfile_stage_check(npu_err_t *err) {
  for (size_t i = 0; i < nstaged; i++) {
    const char *input = input_at(staged[i].target);
    if (input)
      return npu_err_set(err, "%s: expected an output that is none of the run's inputs, found the "
                      "input %s",
                      staged[i].name, input),
             -1;
    for (size_t j = 0; j < i; j++)
      if (strcmp(staged[i].key, staged[j].key) == 0)
        return npu_err_set(err, "%s: expected a file of its own for each output, found the file of "
                        "the output %s",
                        staged[i].name, staged[j].name),
               -1;
  }
  for (size_t i = 0; i < ndoomed; i++) {
    const char *input = input_at(doomed[i]);
    if (input)
      return npu_err_set(err, "%s: expected no input among the files the outputs replace, found "
                      "the input %s",
                      doomed[i], input),
             -1;
  }
  return 0;
}

/* Frees the lists (signals blocked by the caller) and ends staging. */
static void stage_end(void) {
  for (size_t i = 0; i < nstaged; i++) {
    free(staged[i].tmp);
    free(staged[i].target);
    free(staged[i].name);
    free(staged[i].key);
  }
  for (size_t i = 0; i < ndoomed; i++)
    free(doomed[i]);
  free(staged);
  free(doomed);
  staged = NULL;
  doomed = NULL;
  nstaged = staged_cap = ndoomed = doomed_cap = 0;
  staging = false;
}

int outfile_stage_publish(npu_err_t *err) {
  if (!staging)
    return 0;
  int e = 0;
  const char *failed = NULL;
  /* With the signals blocked, SIGINT and SIGTERM wait until every file has
   * landed: a run's outputs are all new, or (on failure) all old. */
  sigset_t mask;
  block_cleanup_signals(&mask);
  for (size_t i = 0; i < nstaged; i++) {
    if (e == 0 && rename(staged[i].tmp, staged[i].target) != 0) {
      e = errno;
      failed = staged[i].name;
    }
    if (e)
      unlink(staged[i].tmp);
  }
  for (size_t i = 0; e == 0 && i < ndoomed; i++)
    if (unlink(doomed[i]) != 0 && errno != ENOENT) {
      e = errno;
      failed = doomed[i];
    }
  if (e)
    npu_err_set(err, "%s: cannot write: %s", failed, strerror(e));
  stage_end();
  sigprocmask(SIG_SETMASK, &mask, NULL);
  guard_release();
  return e ? -1 : 0;
}

void outfile_stage_discard(void) {
  if (!staging)
    return;
  sigset_t mask;
  block_cleanup_signals(&mask);
  for (size_t i = 0; i < nstaged; i++)
    unlink(staged[i].tmp);
  stage_end();
  sigprocmask(SIG_SETMASK, &mask, NULL);
  guard_release();
}

void outfile_abort(outfile_t *f) {
  close_all(f, ECANCELED);
  release(f, false);
}

int outfile_write_all(const char *path, const char *data, size_t len, bool gzip, npu_err_t *err) {
  outfile_t *f = outfile_open(path, gzip, 0, err);
  if (!f)
    return -1;
  fwrite(data, 1, len, f->stream); /* a short write is kept in the stream's error */
  return outfile_commit(f, err);
}

bool outfile_is_gz(const char *path) {
  size_t n = strlen(path);
  return n > 3 && strcmp(path + n - 3, ".gz") == 0;
}
