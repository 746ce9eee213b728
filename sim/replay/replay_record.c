/* replay_record.c - the record an engine fills as it replays a plan: each op's
 * span, each rank's end and peak memory (replay_engine.h). Allocated for the
 * simulated ranks only; the summary reads it. */
#include <stdlib.h>
#include <string.h>

#include "replay_engine.h"

void replay_record_init(replay_record_t *rec, const replay_plan_t *pl) {
  const trace_t *t = pl->trace;
  memset(rec, 0, sizeof *rec);
  rec->spans = calloc((size_t)t->ranks, sizeof *rec->spans);
  rec->finished = calloc((size_t)t->ranks, sizeof *rec->finished);
  rec->peak_memory_bytes = calloc((size_t)t->ranks, sizeof *rec->peak_memory_bytes);
  rec->progress = pl->progress;
  if (rec->progress) /* a second engine's pass counts again */
    rec->progress->done = rec->progress->total = 0;
  for (int r = 0; r < t->ranks; r++) {
    if (!pl->simulated[r])
      continue;
    int nops = t->programs[t->program_of[r]].nops;
    if (rec->progress)
      rec->progress->total += nops;
    rec->spans[r] = calloc((size_t)nops + 1, sizeof **rec->spans);
    rec->finished[r] = calloc((size_t)nops + 1, 1);
  }
}

void replay_record_free(replay_record_t *rec, const trace_t *trace) {
  for (int r = 0; r < trace->ranks; r++) {
    if (rec->spans)
      free(rec->spans[r]);
    if (rec->finished)
      free(rec->finished[r]);
  }
  free(rec->spans);
  free(rec->finished);
  free(rec->peak_memory_bytes);
  linkstats_free(&rec->links);
  memset(rec, 0, sizeof *rec);
}
