/* fuzz_check.c - libFuzzer target for the readers of a team's own files:
 * expectations files (npusim check) and nccl-tests / hccl_test logs
 * (npusim calibrate --collectives), and the figure paths of check rows.
 *
 * Input: the first byte picks the reader (even: an expectations file, odd: a
 * collective log), the rest is the file. Whatever it holds, reading ends in
 * rows or a one-line error naming the file - never a crash, leak or hang. A
 * set that reads has every row judged against a prediction, and each row's
 * figure path looked up in a small JSON output. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "coll_log.h"
#include "figures.h"
#include "npu_err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const output =
    "{\"step_time_s\": 1.5, \"rows\": [{\"busbw_GBps\": 100}], \"a.b\": {\"c\": [1, [2]]}}";

static void check_set(const char *path) {
  check_set_t set;
  npu_err_t err = {""};
  if (check_load(path, &set, &err) != 0) {
    if (!npu_err_one_line(err.msg) || strncmp(err.msg, path, strlen(path)) != 0)
      abort(); /* one line, naming the file */
    return;
  }
  cJSON *doc = cJSON_Parse(output);
  for (int i = 0; i < set.nrows; i++) {
    check_result_t r = {0};
    check_judge(&set.rows[i], 1.5, &r);
    if (r.verdict != CHECK_PASS && r.verdict != CHECK_FAIL)
      abort();
    double v;
    npu_err_t why = {""};
    if (figures_get(doc, set.rows[i].figure, &v, &why) != 0 && !npu_err_one_line(why.msg))
      abort();
  }
  cJSON_Delete(doc);
  check_set_free(&set);
}

static void coll_log(const char *path) {
  coll_log_t log;
  npu_err_t err = {""};
  if (coll_log_read(path, &log, &err) != 0) {
    if (!npu_err_one_line(err.msg) || strncmp(err.msg, path, strlen(path)) != 0)
      abort();
    return;
  }
  for (int i = 0; i < log.nrows; i++)
    if (!(log.bytes[i] > 0 && log.time_s[i] > 0) || (i && log.bytes[i] <= log.bytes[i - 1]))
      abort(); /* sizes growing, times positive */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  char path[] = "/tmp/npusim-fuzz-check-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    abort();
  FILE *f = fdopen(fd, "wb");
  if (!f || fwrite(data + 1, 1, size - 1, f) != size - 1 || fclose(f) != 0)
    abort();
  if (data[0] % 2 == 0)
    check_set(path);
  else
    coll_log(path);
  unlink(path);
  return 0;
}
