/* cluster.c - names and derived figures of the cluster's shape; see cluster.h. */
#include "cluster.h"

#include <stdlib.h>
#include <string.h>

#include "npu_int.h"

const char *const topology_scale_up_names[SCALE_UP_COUNT] = {"full_mesh", "two_group_mesh",
                                                            "switch", "ring"};
const char *const topology_scale_out_names[SCALE_OUT_COUNT] = {"spine_leaf", "rail_optimized"};
const char *const ecmp_mode_names[ECMP_COUNT] = {"flow", "packet"};

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

int cluster_parse_node_types(const char *text, node_types_t *out) {
  int n = 0;
  const char *p = text;
  while (*p) {
    long first, last;
    if (!(p = npu_parse_range(p, 1000000, &first, &last)))
      return -1;
    if (*p != ':' || n == CLUSTER_MAX_NODE_TYPES)
      return -1;
    size_t len = strcspn(p + 1, ",:");
    if (len == 0 || len > CLUSTER_NODE_TYPE_PATH_MAX || p[1 + len] == ':')
      return -1;
    node_type_t *t = &out->v[n++];
    t->first = (int)first;
    t->last = (int)last;
    memcpy(t->system, p + 1, len);
    t->system[len] = '\0';
    p += 1 + len;
    if (*p == ',' && !*++p)
      return -1;
  }
  out->n = n;
  return 0;
}

int cluster_node_type_of(const node_types_t *types, int server) {
  for (int i = 0; i < types->n; i++)
    if (server >= types->v[i].first && server <= types->v[i].last)
      return i;
  return -1;
}
