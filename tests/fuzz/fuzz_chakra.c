/* fuzz_chakra.c - libFuzzer target for the Chakra ET reader.
 *
 * Input: the bytes of one rank's .et file (a one-rank job). Whatever they hold,
 * reading must end in a trace or a one-line error naming the file - never a
 * crash, leak or hang. A trace that reads is written back as Chakra and read
 * again: the same ranks and as many ops. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chakra.h"
#include "npu_err.h"
#include "replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void zero(const void *ctx, int rank, int op, double *ran_s, double *nominal_s) {
  (void)ctx, (void)rank, (void)op;
  *ran_s = *nominal_s = 1e-6;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char dir[] = "/tmp/npusim-fuzz-chakra-XXXXXX";
  if (!mkdtemp(dir))
    abort();
  char prefix[64], file[96];
  snprintf(prefix, sizeof prefix, "%s/t", dir);
  snprintf(file, sizeof file, "%s.0.et", prefix);
  FILE *f = fopen(file, "wb");
  if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
    abort();
  chakra_opts_t o = {.compute = CHAKRA_COMPUTE_AUTO,
                     .flops_per_s = 1e15,
                     .mem_bytes_per_s = 1e12,
                     .skip = size % 2 == 0};
  trace_t t;
  long skipped;
  npu_err_t err = {""};
  if (chakra_read(prefix, &o, &replay_vocab, &t, &skipped, &err) == 0) {
    char back[96];
    snprintf(back, sizeof back, "%s/b", dir);
    if (chakra_write(back, &t, &replay_vocab, o.allgather, zero, NULL, &err) == 0) {
      trace_t t2;
      char groups[128];
      snprintf(groups, sizeof groups, "%s.comm_groups.json", back);
      o.comm_groups = groups;
      if (chakra_read(back, &o, &replay_vocab, &t2, &skipped, &err) != 0 ||
          t2.ranks != t.ranks ||
          t2.programs[t2.program_of[0]].nops != t.programs[t.program_of[0]].nops)
        abort(); /* what npusim writes, it reads: every op */
      trace_free(&t2);
    }
    trace_free(&t);
  } else if (!npu_err_one_line(err.msg) || strncmp(err.msg, prefix, strlen(prefix)) != 0) {
    abort(); /* one line, naming the file */
  }
  const char *made[] = {"t.0.et", "b.0.et", "b.comm_groups.json"}; /* one rank: these only */
  for (size_t i = 0; i < sizeof made / sizeof made[0]; i++) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, made[i]);
    unlink(path);
  }
  if (rmdir(dir) != 0)
    abort(); /* something else was left behind */
  return 0;
}
