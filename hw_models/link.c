/* link.c - alpha-beta cost of one link hop; see link.h. */
#include "link.h"

double link_effective_bw(const link_cfg_t *link) {
  return link->bw_bytes_per_s * link->efficiency;
}

double link_transfer_time_s(const link_cfg_t *link, double bytes) {
  return link->msg_overhead_s + link->latency_s + bytes / link_effective_bw(link);
}
