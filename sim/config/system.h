/* system.h - a whole system as the loader hands it on: the default chip, the
 * chips of other node types, stragglers, the node and the fabric, the
 * collectives. A plain struct in base units (bytes, bytes/s, seconds, hertz);
 * config.h reads and checks it, and everything downstream takes only this. */
#ifndef NPUSIM_SYSTEM_H
#define NPUSIM_SYSTEM_H

#include "chip.h"
#include "cluster.h"
#include "coll_cfg.h"
#include "variation.h"

/* A whole system: one node type and the fabric that joins nodes; servers of
 * cluster.node_types carry other chips. */
typedef struct {
  char name[CHIP_NAME_MAX];
  chip_cfg_t chip;            /* the default chip: every server no node type names */
  chip_cfg_t node_chips[CLUSTER_MAX_NODE_TYPES]; /* cluster.node_types' chips, by entry */
  variation_cfg_t variation; /* stragglers: per-rank speed, per-op jitter */
  node_cfg_t node;
  cluster_cfg_t cluster;
  coll_cfg_t coll;
} system_cfg_t;

/* Which chip server carries: 0 the default, k + 1 entry k of cluster.node_types. */
static inline int config_server_chip_index(const system_cfg_t *sys, int server) {
  return cluster_node_type_of(&sys->cluster.node_types, server) + 1;
}

/* The chip of chip index k (config_server_chip_index). */
static inline const chip_cfg_t *config_chip_at(const system_cfg_t *sys, int k) {
  return k == 0 ? &sys->chip : &sys->node_chips[k - 1];
}

#endif
