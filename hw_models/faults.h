/* faults.h - links that are slower than built, or dead.
 *
 * A fault names a link kind (scale_up, die, supernode, nic, uplink: every link
 * of it) or one link by its name in the job's topology (topo_link_name:
 * "s0.mesh1-5", "s2.nic3", "leaf0.spine1") and the fraction of its bandwidth
 * left: 0.5 for a link training down to half its lanes, 0 for a dead one.
 * A dead link's traffic takes the paths that remain, as the fabric reroutes:
 * a full-mesh pair through a third NPU of the server (HCCL's detour), a
 * spine uplink's flows hashed onto the other spines (ECMP), a NIC port's or a
 * plane's onto another plane (cluster.scale_out.planes). Any other dead link
 * cuts ranks off, and the job is refused, naming them.
 *
 * A fault holds from the start, or from a time in the run ("LINK:FACTOR@T",
 * T in seconds of simulated time): from T on the link has FACTOR of the
 * bandwidth it had before (faults on one link multiply). A transfer that
 * crosses T runs at the old rate until T and the new one after, as a link
 * training down its lanes does. A link dying during the run (FACTOR 0 with
 * T > 0; all such links at one T) works until T; transfers starting at or
 * after T take the paths that remain, and a transfer on it at T is resent
 * whole on them from T (an RDMA queue pair retransmits what was not
 * acknowledged after a link-down; here all of it). "@0" is the fault from the
 * start.
 *
 * Nothing here knows about SimGrid: the flow platform and the analytic costs
 * both read the faulted topology (topo.h, its timed changes too), so the two
 * fidelities see the same fabric. */
#ifndef NPUSIM_FAULTS_H
#define NPUSIM_FAULTS_H

#include <stdbool.h>
#include <stddef.h>

#define FAULTS_MAX 32
#define FAULTS_NAME_MAX 48
/* The least bandwidth a slowed link keeps, as a fraction of what it was
 * built with, all its faults multiplied: a link of 25 GB/s keeps at least
 * 25 MB/s, below any lane-down state (one lane of 16 keeps 1/16). Slower
 * than that is dead (0): a transfer on a link at 1e-300 of its rate would
 * take longer than any clock can count. */
#define FAULTS_MIN_FACTOR 0.001
/* The latest a timed fault may strike, seconds into the run (31 years: later
 * is never). Any time from 0 is fine: one at 1e-300 s is the fault from the
 * start, drawn as a change. */
#define FAULTS_MAX_AT_S 1e9

typedef struct {
  char link[FAULTS_NAME_MAX]; /* a link kind or a link's name */
  double factor;              /* bandwidth left: 0 (dead) or [FAULTS_MIN_FACTOR, 1] */
  double at_s;                /* from when, seconds into the run; 0: the start */
  bool timed;                 /* from a T > 0 (shown on the timeline); "@0" is not */
} link_fault_t;

typedef struct {
  int n;
  link_fault_t v[FAULTS_MAX];
} link_faults_t;

/* Parses "LINK:FACTOR[@T][,...]" (FACTOR 0 or in [FAULTS_MIN_FACTOR, 1]; T in
 * [0, FAULTS_MAX_AT_S] seconds) into out; "" is no fault. Returns 0, or -1 if
 * text is not such a list. */
int faults_parse(const char *text, link_faults_t *out);

#endif
