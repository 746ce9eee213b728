/* link.c - see link.h. */
#include "link.h"

double link_effective_bw(const link_cfg_t *link) {
  return link->bw_bytes_per_s * link->efficiency;
}
