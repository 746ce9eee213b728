/* memory.h - the memory a chip's cores share: HBM (bandwidth x efficiency) behind
 * an L2 that serves every global-memory read, hits and misses alike.
 *
 * A kernel that moves gm_bytes through L2, of which hbm_bytes miss to HBM, needs
 * at least max(hbm_bytes / HBM effective bandwidth, gm_bytes / L2 bandwidth);
 * each core is further capped by its own port (the core models' MTE rates). No
 * bank conflicts, no refresh, no read/write turnaround beyond the efficiency. */
#ifndef NPUSIM_MEMORY_H
#define NPUSIM_MEMORY_H

#include "chip.h"

/* Seconds the memory system needs for the traffic (0 bytes: 0). */
double mem_time_s(const chip_cfg_t *chip, double hbm_bytes, double gm_bytes);


#endif
