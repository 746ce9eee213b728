/* test_outfile.c - the output writer: bytes written in chunks of any size come
 * back whole (plain and gzip), a failed write (a file size limit, the kernel's
 * answer to a full disk) leaves neither the file nor its temporary behind and
 * says why, and an aborted file leaves the old one untouched. */
#include <CUnit/CUnit.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jsonfile.h"
#include "outfile.h"
#include "suites.h"

/* A fresh directory for one test's files. */
static void make_dir(char *dir, size_t len) {
  snprintf(dir, len, "/tmp/npusim_outfile_XXXXXX");
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
}

/* Files in dir (temporaries included). */
static int count_files(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    n += e->d_name[0] != '.';
  if (d)
    closedir(d);
  return n;
}

static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  char path[512];
  for (struct dirent *e; d && (e = readdir(d));)
    if (e->d_name[0] != '.') {
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      unlink(path);
    }
  if (d)
    closedir(d);
  rmdir(dir);
}

/* 300 KB of text that is not all alike, so gzip has work to do. */
static char *sample(size_t *len) {
  size_t n = 300000;
  char *s = malloc(n + 1);
  for (size_t i = 0; i < n; i++)
    s[i] = (char)('a' + (i * 7919 % 26));
  s[n] = '\0';
  *len = n;
  return s;
}

static void test_chunks_of_any_size_come_back_whole(void) {
  npu_err_t err = {""};
  char dir[64], path[128];
  make_dir(dir, sizeof dir);
  size_t len;
  char *data = sample(&len);
  size_t chunks[] = {1, 7, 4096, 0};
  for (int gz = 0; gz < 2; gz++)
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
      snprintf(path, sizeof path, "%s/out%s", dir, gz ? ".json.gz" : ".json");
      outfile_t *f = outfile_open(path, gz, chunks[c], &err);
      CU_ASSERT_PTR_NOT_NULL_FATAL(f);
      for (size_t i = 0; i < len; i += 1000) /* many small prints, as the writers do */
        fprintf(outfile_stream(f), "%.*s", (int)(len - i < 1000 ? len - i : 1000), data + i);
      CU_ASSERT_EQUAL(outfile_commit(f, &err), 0);
      size_t got_len = 0;
      char why[128];
      char *got = jsonfile_read(path, len * 2, &got_len, why, sizeof why); /* gunzips */
      CU_ASSERT_PTR_NOT_NULL_FATAL(got);
      CU_ASSERT_EQUAL(got_len, len);
      CU_ASSERT(memcmp(got, data, len) == 0);
      free(got);
      CU_ASSERT_EQUAL(count_files(dir), 1 + gz); /* out.json (and .gz): no temporary left */
    }
  free(data);
  remove_dir(dir);
}

/* In a child: writes 300 KB under a 64 KiB file size limit (EFBIG, as a full
 * disk gives ENOSPC: a write the kernel refuses). Exit 0 if the commit failed
 * with the reason and nothing is left in dir. */
static int write_past_limit(const char *dir, bool gz) {
  signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = {64 * 1024, 64 * 1024};
  if (setrlimit(RLIMIT_FSIZE, &lim) != 0)
    return 10;
  npu_err_t err = {""};
  char path[128];
  snprintf(path, sizeof path, "%s/big%s", dir, gz ? ".gz" : "");
  size_t len;
  char *data = sample(&len);
  outfile_t *f = outfile_open(path, gz, 4096, &err);
  if (!f)
    return 11;
  fwrite(data, 1, len, outfile_stream(f));
  free(data);
  if (gz) { /* compressed text may fit: write incompressible bytes too */
    for (unsigned i = 0, x = 1; i < 4 * 1024 * 1024; i++) {
      x = x * 1103515245u + 12345u;
      fputc((int)(x >> 24), outfile_stream(f));
    }
  }
  if (outfile_commit(f, &err) != -1)
    return 12;
  if (!strstr(err.msg, "cannot write: File too large") || strncmp(err.msg, path, strlen(path)) != 0)
    return 13;
  return count_files(dir) == 0 ? 0 : 14;
}

static void test_a_refused_write_leaves_nothing_and_says_why(void) {
  for (int gz = 0; gz < 2; gz++) {
    char dir[64];
    make_dir(dir, sizeof dir);
    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0)
      _exit(write_past_limit(dir, gz));
    int status;
    CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
    CU_ASSERT(WIFEXITED(status));
    CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);
    remove_dir(dir);
  }
}

static void test_an_aborted_file_keeps_the_old_one(void) {
  npu_err_t err = {""};
  char dir[64], path[128];
  make_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/keep.txt", dir);
  CU_ASSERT_EQUAL(outfile_write_all(path, "old\n", 4, false, &err), 0);
  outfile_t *f = outfile_open(path, false, 0, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fputs("new, half written", outfile_stream(f));
  outfile_abort(f);
  size_t len = 0;
  char why[128];
  char *got = jsonfile_read(path, 100, &len, why, sizeof why);
  CU_ASSERT_PTR_NOT_NULL_FATAL(got);
  CU_ASSERT_STRING_EQUAL(got, "old\n");
  free(got);
  CU_ASSERT_EQUAL(count_files(dir), 1);
  CU_ASSERT_EQUAL(outfile_write_all(dir, "x", 1, false, &err), -1); /* a directory */
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "cannot write: Is a directory"));
  remove_dir(dir);
}

/* The bytes of a file, NULL-safe for the tests. */
static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char *buf = malloc(1 << 16);
  *len = buf ? fread(buf, 1, 1 << 16, f) : 0;
  fclose(f);
  return buf;
}

static void spit(const char *path, const char *a, size_t na, const char *b, size_t nb) {
  FILE *f = fopen(path, "wb");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fwrite(a, 1, na, f);
  fwrite(b, 1, nb, f);
  CU_ASSERT_EQUAL(fclose(f), 0);
}

/* gzip members one after another read as one stream (RFC 1952, as gzip -d
 * reads them); anything else after a member is refused, saying where. */
static void test_gzip_members_concatenate_and_trailing_bytes_are_refused(void) {
  npu_err_t err = {""};
  char dir[64], a[128], b[128], both[128], why[256];
  make_dir(dir, sizeof dir);
  snprintf(a, sizeof a, "%s/a.gz", dir);
  snprintf(b, sizeof b, "%s/b.gz", dir);
  snprintf(both, sizeof both, "%s/both.gz", dir);
  CU_ASSERT_EQUAL(outfile_write_all(a, "{\"x\": ", 6, true, &err), 0);
  CU_ASSERT_EQUAL(outfile_write_all(b, "[1, 2]}", 7, true, &err), 0);
  size_t na = 0, nb = 0, len = 0;
  char *ga = slurp(a, &na), *gb = slurp(b, &nb);
  CU_ASSERT_PTR_NOT_NULL_FATAL(ga);
  CU_ASSERT_PTR_NOT_NULL_FATAL(gb);
  spit(both, ga, na, gb, nb);
  char *got = jsonfile_read(both, 1 << 20, &len, why, sizeof why);
  CU_ASSERT_PTR_NOT_NULL_FATAL(got);
  CU_ASSERT_STRING_EQUAL(got, "{\"x\": [1, 2]}");
  free(got);
  const char *tails[] = {"x", "garbage after the member", "\0\0\0\0", "\x1f"};
  size_t tail_len[] = {1, 24, 4, 1};
  for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
    spit(both, ga, na, tails[i], tail_len[i]);
    CU_ASSERT_PTR_NULL(jsonfile_read(both, 1 << 20, &len, why, sizeof why));
    char want[128];
    snprintf(want, sizeof want, "a gzip stream followed by %zu byte%s not a gzip member (at byte %zu)",
             tail_len[i], tail_len[i] == 1 ? " that is" : "s that are", na);
    CU_ASSERT_STRING_EQUAL(why, want);
  }
  free(ga);
  free(gb);
  remove_dir(dir);
}

/* The text of a small file, or "" (for asserts). */
static void text_of(const char *path, char *buf, size_t len) {
  FILE *f = fopen(path, "rb");
  size_t n = f ? fread(buf, 1, len - 1, f) : 0;
  buf[n] = '\0';
  if (f)
    fclose(f);
}

/* Staged files wait as temporary files: the targets change only at publish,
 * all together, and a discard leaves every old one. */
static void test_staged_files_land_together_or_not_at_all(void) {
  npu_err_t err = {""};
  char dir[64], a[128], b[128], got[64];
  make_dir(dir, sizeof dir);
  jsonfile_forget_inputs(); /* an earlier test's input may have had these inodes */
  snprintf(a, sizeof a, "%s/a.txt", dir);
  snprintf(b, sizeof b, "%s/b.txt", dir);
  CU_ASSERT_EQUAL(outfile_write_all(a, "old a", 5, false, &err), 0);
  CU_ASSERT_EQUAL(outfile_write_all(b, "old b", 5, false, &err), 0);
  for (int publish = 0; publish < 2; publish++) {
    CU_ASSERT_TRUE(outfile_stage_begin());
    CU_ASSERT_FALSE(outfile_stage_begin()); /* already staging: the caller's */
    CU_ASSERT_EQUAL(outfile_write_all(a, "new a", 5, false, &err), 0);
    CU_ASSERT_EQUAL(outfile_write_all(b, "new b", 5, false, &err), 0);
    text_of(a, got, sizeof got);
    CU_ASSERT_STRING_EQUAL(got, "old a");
    CU_ASSERT_EQUAL(count_files(dir), 4); /* two targets, two waiting */
    CU_ASSERT_EQUAL(outfile_stage_check(&err), 0);
    if (publish) {
      CU_ASSERT_EQUAL(outfile_stage_publish(&err), 0);
    } else {
      outfile_stage_discard();
    }
    text_of(a, got, sizeof got);
    CU_ASSERT_STRING_EQUAL(got, publish ? "new a" : "old a");
    text_of(b, got, sizeof got);
    CU_ASSERT_STRING_EQUAL(got, publish ? "new b" : "old b");
    CU_ASSERT_EQUAL(count_files(dir), 2);
  }
  remove_dir(dir);
}

/* A file marked for removal goes at publish, not before; a staged file that
 * is a file read as input (any name) or another staged file's is refused. */
static void test_staging_removes_marked_files_and_refuses_inputs(void) {
  npu_err_t err = {""};
  char dir[64], a[128], link[128], stale[128], why[128];
  make_dir(dir, sizeof dir);
  snprintf(a, sizeof a, "%s/in.json", dir);
  snprintf(link, sizeof link, "%s/link.json", dir);
  snprintf(stale, sizeof stale, "%s/stale.et", dir);
  CU_ASSERT_EQUAL(outfile_write_all(stale, "x", 1, false, &err), 0);
  outfile_stage_begin();
  CU_ASSERT_EQUAL(outfile_stage_remove(stale), 0);
  CU_ASSERT_EQUAL(access(stale, F_OK), 0);
  CU_ASSERT_EQUAL(outfile_stage_publish(&err), 0);
  CU_ASSERT_NOT_EQUAL(access(stale, F_OK), 0);

  CU_ASSERT_EQUAL(outfile_write_all(a, "{}", 2, false, &err), 0);
  CU_ASSERT_EQUAL(symlink("in.json", link), 0);
  size_t len;
  free(jsonfile_read(a, 100, &len, why, sizeof why)); /* now an input */
  outfile_stage_begin();
  CU_ASSERT_EQUAL(outfile_write_all(link, "[]", 2, false, &err), 0);
  CU_ASSERT_EQUAL(outfile_stage_check(&err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "link.json: expected an output that is none of the run's "
                                     "inputs, found the input "));
  outfile_stage_discard();
  jsonfile_forget_inputs();
  CU_ASSERT_STRING_EQUAL((text_of(a, why, sizeof why), why), "{}");

  outfile_stage_begin();
  CU_ASSERT_EQUAL(outfile_write_all(a, "1", 1, false, &err), 0);
  CU_ASSERT_EQUAL(outfile_write_all(link, "2", 1, false, &err), 0);
  CU_ASSERT_EQUAL(outfile_stage_check(&err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "expected a file of its own for each output"));
  outfile_stage_discard();
  remove_dir(dir);
}

/* NAME.npusim-PID-N.tmp of a process that is gone is removed when a file is
 * written beside it; a live process's stays, as does any other name. */
static void test_a_dead_runs_temporary_files_are_removed(void) {
  npu_err_t err = {""};
  char dir[64], path[160];
  make_dir(dir, sizeof dir);
  pid_t dead = fork();
  CU_ASSERT_FATAL(dead >= 0);
  if (dead == 0)
    _exit(0);
  waitpid(dead, NULL, 0);
  const char *names[] = {"x.json.npusim-%ld-0.tmp", "y.npusim-%ld-12.tmp",
                         "x.json.npusim-%ld-0.tmp", "x.json.tmp%ld.0", "x.json.npusim-%ldx-0.tmp"};
  long pids[] = {(long)dead, (long)dead, (long)getppid(), (long)dead, (long)dead};
  bool removed[] = {true, true, false, false, false};
  for (int i = 0; i < 5; i++) {
    char name[64];
    snprintf(name, sizeof name, names[i], pids[i]);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    spit(path, "d", 1, "", 0); /* not through outfile: its first file here scans */
  }
  snprintf(path, sizeof path, "%s/x.json", dir);
  CU_ASSERT_EQUAL(outfile_write_all(path, "{}", 2, false, &err), 0);
  for (int i = 0; i < 5; i++) {
    char name[64];
    snprintf(name, sizeof name, names[i], pids[i]);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    CU_ASSERT_EQUAL(access(path, F_OK) != 0, removed[i]);
  }
  remove_dir(dir);
}

/* A path splits at its last slash; no slash is the current directory, and a
 * file at the root keeps "/" (not "") as its directory. */
static void test_a_path_splits_into_directory_and_name(void) {
  const char *paths[] = {"a/b/c.et", "/c.et", "c.et", "a/", "//c"};
  const char *dirs[] = {"a/b", "/", ".", "a", "/"};
  const char *bases[] = {"c.et", "c.et", "c.et", "", "c"};
  for (int i = 0; i < 5; i++) {
    char dir[8] = "?";
    const char *base = outfile_split_path(paths[i], dir, sizeof dir);
    CU_ASSERT_STRING_EQUAL(dir, dirs[i]);
    CU_ASSERT_STRING_EQUAL(base, bases[i]);
    CU_ASSERT_PTR_EQUAL(base, paths[i] + strlen(paths[i]) - strlen(bases[i])); /* into path */
  }
}

CU_TestInfo outfile_tests[] = {
    {"a path splits into directory and name", test_a_path_splits_into_directory_and_name},
    {"staged files land together or not at all", test_staged_files_land_together_or_not_at_all},
    {"staging removes marked files and refuses inputs",
     test_staging_removes_marked_files_and_refuses_inputs},
    {"a dead run's temporary files are removed", test_a_dead_runs_temporary_files_are_removed},
    {"gzip members concatenate and trailing bytes are refused",
     test_gzip_members_concatenate_and_trailing_bytes_are_refused},
    {"chunks of any size come back whole", test_chunks_of_any_size_come_back_whole},
    {"a refused write leaves nothing and says why",
     test_a_refused_write_leaves_nothing_and_says_why},
    {"an aborted file keeps the old one", test_an_aborted_file_keeps_the_old_one},
    CU_TEST_INFO_NULL,
};
