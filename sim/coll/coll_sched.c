/* coll_sched.c - the schedule container: phases of concurrent transfers; see coll.h. */
#include <stdlib.h>
#include <string.h>

#include "coll.h"

static void *grow(void *p, int *cap, int need, size_t elem) {
  if (need <= *cap)
    return p;
  int cap2 = *cap ? *cap : 8;
  while (cap2 < need)
    cap2 *= 2;
  void *q = realloc(p, (size_t)cap2 * elem);
  if (!q)
    abort(); /* schedules are bounded by the ranks x steps the caller asked for */
  memset((char *)q + (size_t)*cap * elem, 0, (size_t)(cap2 - *cap) * elem);
  *cap = cap2;
  return q;
}

coll_phase_t *coll_sched_phase(coll_sched_t *s, int index, int level, int rounds, bool reduces) {
  s->phases = grow(s->phases, &s->cap, index + 1, sizeof *s->phases);
  if (index >= s->nphases)
    s->nphases = index + 1;
  coll_phase_t *ph = &s->phases[index];
  if (ph->nxfers == 0) {
    ph->level = level;
    ph->rounds = rounds;
    ph->reduces = reduces;
  }
  return ph;
}

void coll_phase_add(coll_phase_t *ph, int src, int dst, double bytes) {
  ph->xfers = grow(ph->xfers, &ph->cap, ph->nxfers + 1, sizeof *ph->xfers);
  ph->xfers[ph->nxfers++] = (coll_xfer_t){src, dst, bytes};
}

void coll_sched_free(coll_sched_t *s) {
  for (int i = 0; i < s->nphases; i++)
    free(s->phases[i].xfers);
  free(s->phases);
  memset(s, 0, sizeof *s);
}

double coll_sched_bytes(const coll_sched_t *s) {
  double total = 0;
  for (int i = 0; i < s->nphases; i++) {
    const coll_phase_t *ph = &s->phases[i];
    double phase = 0;
    for (int j = 0; j < ph->nxfers; j++)
      phase += ph->xfers[j].bytes;
    total += phase * ph->rounds;
  }
  return total * (s->loops > 0 ? s->loops : 1);
}

double coll_phase_pipeline_s(const coll_phase_t *ph, double link_s) {
  if (ph->chunk_steps <= 0)
    return 0;
  return link_s / ph->chunk_steps + (ph->chunk_steps + 1) * ph->chunk_step_s;
}

double coll_phase_local_s(const coll_cfg_t *cfg, const coll_phase_t *ph, double received) {
  return ph->reduces && cfg->reduce_bw_bytes_per_s > 0 ? received / cfg->reduce_bw_bytes_per_s : 0;
}
