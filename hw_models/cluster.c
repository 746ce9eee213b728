/* cluster.c - names and derived figures of the cluster's shape; see cluster.h. */
#include "cluster.h"

const char *const topology_scale_up_names[SCALE_UP_COUNT] = {"full_mesh", "two_group_mesh",
                                                            "switch", "ring"};
const char *const topology_scale_out_names[SCALE_OUT_COUNT] = {"spine_leaf", "rail_optimized"};

int topology_links_per_peer(const node_cfg_t *node) {
  int peers;
  switch (node->scale_up.kind) {
  case SCALE_UP_FULL_MESH:
    peers = node->npus - 1;
    break;
  case SCALE_UP_TWO_GROUP_MESH:
    peers = node->npus / 2 - 1;
    break;
  default:
    return 0;
  }
  return peers > 0 ? node->scale_up.links_per_npu / peers : 0;
}

double topology_scale_up_bw_per_npu(const node_cfg_t *node) {
  return node->scale_up.links_per_npu * node->scale_up.link.bw_bytes_per_s;
}
