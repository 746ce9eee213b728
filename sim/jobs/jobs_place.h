/* jobs_place.h - several jobs on one cluster: which NPUs each job gets.
 *
 * `npusim cluster --job FILE@PLACEMENT ...` names each job and where it goes:
 *   packed   the lowest free NPUs: a job of whole servers takes the first
 *            wholly free servers, a smaller job the first server with enough
 *            free NPUs (contiguous), as a scheduler that fills racks in order;
 *   spread   the job's servers round-robin over the leaf switches (the leaf
 *            groups of a rail-optimised fabric), each on the first free
 *            server of its leaf: a job across as many uplinks as it can get;
 *   a list   "0-15,32-47": the NPUs for job ranks 0, 1, ... in order.
 * Jobs are placed in command-line order. Under packed and spread a job of
 * whole servers keeps each rank's local index (r % node.npus), and a smaller
 * job sits on contiguous NPUs of one server, so scale-up groups stay inside
 * servers (a small job may straddle the two halves of a 910A's two-group mesh).
 *
 * What it does not do: schedule in time (every job runs from time 0), or move
 * jobs to avoid each other; the placement is the user's what-if. Nothing here
 * knows about traces or SimGrid. */
#ifndef NPUSIM_JOBS_PLACE_H
#define NPUSIM_JOBS_PLACE_H

#include <stdbool.h>
#include <stddef.h>
#include "npu_err.h"

#define JOBS_MAX_NPU 65535 /* the highest NPU a list may name */

typedef enum { JOBS_PACKED, JOBS_SPREAD, JOBS_LIST, JOBS_POLICY_COUNT } jobs_policy_t;

extern const char *const jobs_policy_names[JOBS_POLICY_COUNT];

typedef struct {
  char file[4096]; /* the job's workload or trace */
  jobs_policy_t policy;
  const char *list; /* JOBS_LIST: the NPU list as given (points into the argument) */
} jobs_spec_t;

/* Parses "FILE[@packed|@spread|@LIST]" (no @: packed). Returns 0, or -1 with
 * "--job ARG: expected ..." in err. */
int jobs_parse_spec(const char *arg, jobs_spec_t *out, npu_err_t *err);

/* The cluster the jobs share, as placement sees it. */
typedef struct {
  int servers;
  int npus_per_server;
  const int *leaf_of_server; /* per server: its leaf (group) */
} jobs_fabric_t;

/* NPUs a LIST spec names at most (its highest NPU + 1), or 0 for packed and
 * spread; -1 if the list is not "N[-M][,...]". */
int jobs_list_extent(const jobs_spec_t *spec);

/* Places a job of `ranks` ranks: map[r] = its NPU, marking them in used (per
 * NPU). Returns 0, or -1 with a one-line reason in err ("no room", a list of
 * the wrong length, an NPU outside the cluster or already taken). */
int jobs_place(const jobs_spec_t *spec, int ranks, const jobs_fabric_t *fab, bool *used, int *map,
               npu_err_t *err);

/* "0-15,32-47": the NPUs of map, as ranges, into buf. */
void jobs_format_npus(const int *map, int n, char *buf, size_t len);

#endif
