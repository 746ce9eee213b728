/* fuzz_trace.c - libFuzzer target for the trace reader and its checks.
 *
 * Input: the trace's JSON text. Whatever it holds, reading must end in a trace
 * or a one-line error - never a crash, leak or hang. A trace that reads must
 * write canonical JSON that reads back and writes the same bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jsonfile.h"
#include "npu_err.h"
#include "replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The canonical text of a trace, through a temporary file. */
static char *canonical(const trace_t *t) {
  char path[] = "/tmp/npusim-fuzz-trace-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    abort();
  close(fd);
  npu_err_t err = {""};
  char why[256];
  if (trace_write(t, &replay_vocab, path, &err))
    abort();
  size_t len;
  char *text = jsonfile_read(path, 1 << 26, &len, why, sizeof why);
  unlink(path);
  if (!text)
    abort();
  return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  memcpy(text, data, size);
  text[size] = '\0';
  npu_err_t err = {""};
  trace_t t;
  if (trace_parse("fuzz.json", text, size, &replay_vocab, &t, &err) == 0) {
    char *first = canonical(&t);
    trace_t again;
    if (trace_parse("fuzz.json", first, strlen(first), &replay_vocab, &again, &err))
      abort(); /* canonical output must read back */
    char *second = canonical(&again);
    if (strcmp(first, second) != 0)
      abort(); /* and write the same bytes */
    free(first);
    free(second);
    trace_free(&again);
    trace_free(&t);
  } else if (!npu_err_one_line(err.msg)) {
    abort(); /* every rejection is exactly one non-empty line, as printed */
  }
  free(text);
  return 0;
}
