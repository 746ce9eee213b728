/* link.h - one class of point-to-point link (HCCS, SIO, UB, NVLink, RoCE port):
 * bandwidth per direction, latency, achievable efficiency, per-message overhead.
 *
 * All link technologies are parameter sets of this one model. The time of a
 * transfer is its path's (topo_path_time_s: latencies, overhead, the slowest
 * hop), contention between transfers the engine's business (sim/), not this
 * module's. */
#ifndef NPUSIM_LINK_H
#define NPUSIM_LINK_H

typedef struct {
  double bw_bytes_per_s;  /* line rate per direction */
  double latency_s;       /* one-way latency of one hop */
  double efficiency;      /* achievable fraction of bw_bytes_per_s, (0, 1] */
  double msg_overhead_s;  /* fixed software/DMA cost per message */
  double energy_J_per_byte; /* energy a byte costs crossing it (SerDes, NIC, optics); 0: not
                             * modelled */
} link_cfg_t;

/* Bandwidth a single transfer achieves on the link: line rate x efficiency. */
double link_effective_bw(const link_cfg_t *link);

#endif
