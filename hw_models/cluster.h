/* cluster.h - the cluster's shape: how dies are wired inside a server (scale-up),
 * between the dies of one package, inside a supernode, and between servers
 * (scale-out).
 *
 * This header holds the configuration structs the loader fills, the names of the
 * topology kinds (the values of the "topology" keys, hence topology_*) and
 * figures derived from them. The graph of NPUs, switches and links that one job
 * uses, and routing on it, is topo.h; nothing here knows about SimGrid. */
#ifndef NPUSIM_CLUSTER_H
#define NPUSIM_CLUSTER_H

#include <stdbool.h>

#include "faults.h"
#include "link.h"

typedef enum {
  SCALE_UP_FULL_MESH,      /* every pair of NPUs has its own links (910B HCCS) */
  SCALE_UP_TWO_GROUP_MESH, /* two full meshes of npus/2; groups meet through the NICs (910A) */
  SCALE_UP_SWITCH,         /* one port per NPU into a switch (NVSwitch, UB switch) */
  SCALE_UP_RING,           /* each NPU linked to its two neighbours */
  SCALE_UP_COUNT
} scale_up_kind_t;

typedef enum {
  SCALE_OUT_SPINE_LEAF,     /* whole servers under a leaf, leaves under spines */
  SCALE_OUT_RAIL_OPTIMIZED, /* NPU i of every server on leaf (rail) i */
  SCALE_OUT_COUNT
} scale_out_kind_t;

/* How the switches spread traffic over equal-cost paths (spines, cores). */
typedef enum {
  ECMP_FLOW,   /* each flow hashed onto one path: flows collide while a path idles */
  ECMP_PACKET, /* each flow's packets sprayed over every path (adaptive routing, the NIC
                * reordering): the paths act as one of their summed capacity */
  ECMP_COUNT
} ecmp_mode_t;

typedef struct {
  scale_up_kind_t kind;
  link_cfg_t link;          /* one link, one direction */
  int links_per_npu;        /* links leaving one NPU (to peers or to the switch) */
  bool in_switch_reduction; /* switch can reduce in the network (NVLink SHARP) */
  double read_request_overhead; /* request bytes per byte a read returns (loads from
                                 * the switch: NVLS), carried against the data */
} scale_up_cfg_t;

typedef struct {
  int npus;                 /* ranks (dies) per server */
  scale_up_cfg_t scale_up;
  bool has_die_link;        /* dies of one package joined by their own link */
  link_cfg_t die_link;      /* SIO between the dies of a package */
} node_cfg_t;

typedef struct {
  scale_out_kind_t kind;
  link_cfg_t nic;           /* one NIC port, one direction */
  int nics_per_npu;
  int npus_per_leaf;        /* NIC ports under one leaf switch */
  double oversubscription;  /* leaf downlink : uplink bandwidth, >= 1 */
  int spines;               /* uplinks per leaf, one per spine; a flow's is hashed (ECMP) */
  ecmp_mode_t ecmp;         /* per flow (hashed) or per packet (sprayed) over spines, cores */
  int planes;               /* independent copies of the leaf-spine(-core) fabric; each NPU's
                             * NIC ports split evenly over them, a flow's hashed onto one */
  int npus_per_pod;         /* NIC ports in one pod of leaves and their spines under the
                             * core tier; 0: two tiers (no core) */
  double pod_oversubscription; /* a pod's leaf uplink : core uplink bandwidth, >= 1 */
  int cores;                /* core switches: each pod's core bandwidth split over one link
                             * to each, a flow's hashed (ECMP) */
  double switch_port_W;     /* power of one switch port while held; 0: not counted */
} scale_out_cfg_t;

typedef struct {
  int npus;                 /* ranks in one supernode domain (e.g. UB) */
  link_cfg_t link;          /* per-rank port into the supernode fabric */
} supernode_cfg_t;

/* Servers of another chip type: a heterogeneous cluster. Each entry names a
 * range of servers and the system config whose chip they carry (the loader
 * reads that file's chip into system_cfg_t.node_chips); servers no entry
 * names carry the default chip. Only the chip differs: the servers' NPU
 * count, scale-up links and NICs are the cluster's own. */
#define CLUSTER_MAX_NODE_TYPES 8
#define CLUSTER_NODE_TYPE_PATH_MAX 200

typedef struct {
  int first, last;                               /* servers, inclusive */
  char system[CLUSTER_NODE_TYPE_PATH_MAX + 1];   /* system config file of their chip */
} node_type_t;

typedef struct {
  int n;
  node_type_t v[CLUSTER_MAX_NODE_TYPES];
} node_types_t;

typedef struct {
  int nodes;                /* servers; 0 = the smallest number that fits the job */
  node_types_t node_types;  /* servers of other chips; n = 0: every server the default chip */
  link_faults_t faults;     /* slow and dead links (faults.h) */
  scale_out_cfg_t scale_out;
  bool has_supernode;
  supernode_cfg_t supernode;
} cluster_cfg_t;

/* Parses "S[-S]:FILE[,...]" (servers >= 0, FILE a path of at most
 * CLUSTER_NODE_TYPE_PATH_MAX characters, no ',' or ':') into out; "" is no
 * entry. Overlaps are left to the caller, which can name them. Returns 0, or
 * -1 if text is not such a list. */
int cluster_parse_node_types(const char *text, node_types_t *out);

/* The entry that names server, or -1 (the default chip). */
int cluster_node_type_of(const node_types_t *types, int server);

/* Names as written in JSON, indexed by the enums above. */
extern const char *const topology_scale_up_names[SCALE_UP_COUNT];
extern const char *const topology_scale_out_names[SCALE_OUT_COUNT];
extern const char *const ecmp_mode_names[ECMP_COUNT];

/* Links one NPU has to each peer in its scale-up domain (full and two-group
 * mesh); 0 for switch and ring topologies, where peers share ports. */
int topology_links_per_peer(const node_cfg_t *node);

/* Bandwidth one NPU can push into the scale-up fabric, all links together,
 * bytes per second per direction (line rate, before efficiency). */
double topology_scale_up_bw_per_npu(const node_cfg_t *node);

#endif
