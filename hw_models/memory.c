/* memory.c - shared HBM and L2 bandwidth; see memory.h. */
#include "memory.h"

double mem_time_s(const chip_cfg_t *chip, double hbm_bytes, double gm_bytes) {
  double hbm = hbm_bytes / chip_hbm_effective_bw(chip);
  double l2 = gm_bytes / chip->l2.bw_bytes_per_s;
  return hbm > l2 ? hbm : l2;
}
