/* platform.h - the SimGrid platform of a topology, written as XML (SimGrid 3.32's
 * C API cannot build platforms).
 *
 * One host per endpoint ("h<id>": ranks, then in-network switches), one
 * SPLITDUPLEX link per topology link that some route uses ("L<id>", bandwidth =
 * line rate x efficiency), and an explicit route for every ordered pair that
 * exchanges data, along topo_route's path: routing stays ours, deterministic
 * and rail-aware, and the file stays proportional to the pairs that talk.
 *
 * Links are declared with zero latency: SimGrid's CM02 model divides a shared
 * link in proportion to each flow's inverse route latency (TCP's RTT
 * unfairness), which RDMA fabrics do not show. The engine charges each
 * transfer's path latency itself, as a delay before it is posted.
 *
 * A link with timed faults (topo_change_t) gets a SimGrid bandwidth profile,
 * a file "<platform>.L<id>" of "time bandwidth" lines (absolute seconds and
 * bytes/s: SimGrid 3.32 sets the link's bandwidth to the value at the time):
 * SimGrid then shares the link at the new bandwidth from that time on,
 * transfers in flight included.
 *
 * With links dying at T (topo_t.after), each endpoint has a shadow host
 * "a<id>" too: routes between two shadow hosts, or a shadow host and a host,
 * follow the topology after T, so an actor that moves onto its shadow host
 * at T sends and receives round the dead links; a dying link's profile drops
 * to 1 byte/s at T. */
#ifndef NPUSIM_PLATFORM_H
#define NPUSIM_PLATFORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "topo.h"
#include "npu_err.h"

/* A set of ordered (src, dst) endpoint pairs. */
typedef struct {
  uint64_t *keys; /* (src << 32 | dst) + 1; 0 = empty slot */
  size_t cap, count;
} pair_set_t;

void pair_set_init(pair_set_t *s);
/* Adds the pair; false when it was there. */
bool pair_set_add(pair_set_t *s, int src, int dst);
void pair_set_free(pair_set_t *s);

/* The longest platform path (TMPDIR/npusim-platform-XXXXXX), and room for a
 * profile's suffix (".L<link>") after it. */
#define PLATFORM_PATH_MAX 256
#define PLATFORM_PROFILE_PATH_MAX (PLATFORM_PATH_MAX + 16)

/* The folder platform_write writes in from now on (the command line passes
 * TMPDIR); NULL: /tmp. The string must outlive the writes. */
void platform_set_folder(const char *dir);

/* Writes the platform for endpoints 0..endpoints-1 and the routes of pairs to a
 * new temporary file, and its links' bandwidth profiles beside it; its path
 * goes to path (the caller removes them with platform_remove once SimGrid has
 * loaded them). path_len is at most PLATFORM_PATH_MAX. Returns 0, or -1 with a
 * reason in err (nothing left behind): a TMPDIR too long for it is refused. */
int platform_write(const topo_t *t, int endpoints, const pair_set_t *pairs, char *path,
                   size_t path_len, npu_err_t *err);

/* Removes the platform file at path and its bandwidth profiles. */
void platform_remove(const topo_t *t, const char *path);

#endif
