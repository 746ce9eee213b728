/* topo.h - the links one job uses, as a graph, and the path a transfer takes.
 *
 * Built from the cluster's shape (cluster.h) for a job of R ranks placed K
 * per server (rank r on server r / K, NPU r % K of it). Links, all full duplex:
 *   scale-up  full_mesh: one link per NPU pair (links_per_peer of them merged);
 *             two_group_mesh: the same inside each half; switch: one port per NPU
 *             (links_per_npu merged); ring: one link per neighbour pair;
 *   die       one link between the dies of a package (SIO);
 *   supernode one port per NPU into the supernode fabric (UB), non-blocking;
 *   nic       one per NPU and plane (its share of nics_per_npu merged) to its
 *             leaf of that plane;
 *   uplink    one per leaf and spine, with capacity = ports under the leaf x
 *             NIC rate / oversubscription / spines (one spine: all merged);
 *   core      with pods (cluster.scale_out.npus_per_pod), one per pod and core
 *             switch, with capacity = ports in the pod x NIC rate /
 *             oversubscription / pod_oversubscription / cores: the pod's
 *             spines' (aggregation switches') links to the core tier, merged
 *             per core [A: a pod's spines share its core bandwidth evenly].
 * Routing is by rule, deterministic and minimal: die link, else scale-up, else
 * supernode, else NIC -> leaf [-> uplink [-> core -> core] -> uplink ->] leaf
 * -> NIC, the core hops between pods only. Scale-up
 * traffic never crosses a NIC, except between the two groups of a
 * two_group_mesh (910A), which HCCL sends over RoCE. Between leaves a flow
 * (source, destination NPU) is hashed onto one spine, and between pods onto
 * one core, as ECMP does, so flows can collide on a spine while another
 * idles; one spine (the default) merges them, perfect balance, and so does
 * spraying each flow's packets over all of them (cluster.scale_out.ecmp
 * packet: one uplink per leaf, one core link per pod). With planes
 * (cluster.scale_out.planes) each plane is a copy of the leaves, spines and
 * cores, and a flow between servers is hashed onto one plane on which both its
 * ends have a live NIC port (and their leaves reach each other), then onto a
 * spine of it. Servers fill
 * leaves and pods in order: a job's rank order decides which of its groups
 * cross the core.
 *
 * Faults (faults.h) slow links down or kill them; routes go around dead ones:
 * a full-mesh pair through a third NPU, a spine's flows onto the next live
 * spine. A fault from a time T > 0 is kept as a change of the link's bandwidth
 * at T (topo_change_t). Links dying at T > 0 ("LINK:0@T") give a second
 * topology, `after`, with them dead: a transfer starting at or after T takes
 * its routes, one starting before T the first one's (topo_at).
 *
 * Nothing here knows about SimGrid: sim/ turns the graph into a platform. */
#ifndef NPUSIM_TOPO_H
#define NPUSIM_TOPO_H

#include <stdbool.h>
#include <stddef.h>

#include "chip.h"
#include "cluster.h"
#include "npu_err.h"

typedef enum {
  TOPO_LINK_SCALE_UP,
  TOPO_LINK_DIE,
  TOPO_LINK_SUPERNODE,
  TOPO_LINK_NIC,
  TOPO_LINK_UPLINK,
  TOPO_LINK_CORE,
  TOPO_LINK_KIND_COUNT
} topo_link_kind_t;

extern const char *const topo_link_kind_names[TOPO_LINK_KIND_COUNT];

typedef struct {
  topo_link_kind_t kind;
  int owner;           /* server (scale-up, die, supernode, nic), leaf (uplink) or pod (core) */
  int a, b;            /* local NPU indices of the ends (pair links), else a = NPU */
  link_cfg_t cfg;      /* merged line rate, latency, efficiency, overhead */
  bool failed;         /* dead (cluster.faults): routes avoid it */
  int plane;           /* its scale-out plane (nic, uplink, core); 0 otherwise */
} topo_link_t;

/* One hop: a link and the direction it is crossed in (0: a -> b, 1: b -> a). */
typedef struct {
  int link;
  int dir;
} topo_hop_t;

/* A timed fault on one link: from at_s on, its bandwidth is factor (> 0)
 * times what it was just before. */
typedef struct {
  int link;
  double at_s;
  double factor;
} topo_change_t;

#define TOPO_MAX_HOPS 16 /* a ring of 32 NPUs needs 16 hops; everything else <= 4 */

typedef struct topo topo_t;

struct topo {
  node_cfg_t node;
  cluster_cfg_t cluster;
  int dies_per_package;
  int ranks;              /* ranks in the job */
  int ranks_per_node;     /* K: NPUs used per server */
  int nodes;              /* servers used */
  int nodes_per_supernode; /* 0 without a supernode level */
  int leaves;             /* leaf switches */
  int pods;               /* pods under the core tier; 0: no core tier */
  int spine_paths;        /* uplinks per leaf: the spines, or 1 (one spine, or
                           * packets sprayed over all: cluster.scale_out.ecmp) */
  int core_paths;         /* the same for a pod's links to the cores */
  int planes;             /* scale-out planes as built (1 with packets sprayed): the
                           * NIC, uplink and core blocks hold one copy per plane */
  int nlinks;
  topo_link_t *links;
  /* first link id of each block, to find a link by rule */
  int first_scale_up, per_server_scale_up;
  int first_die, per_server_die;
  int first_supernode, first_nic, first_uplink, first_core;
  /* timed faults (T > 0), by link then time; change_off[l]..change_off[l+1]
   * are link l's (CSR); NULL and 0 without timed faults */
  int nchanges;
  topo_change_t *changes;
  int *change_off;
  /* links dying during the run (FACTOR 0 at T > 0, one T for all of them):
   * death_s = T, and after is this topology with them dead (its own death_s
   * 0, died_s T); NULL and 0 without */
  double death_s, died_s;
  topo_t *after;
};

/* Builds the graph for ranks placed ranks_per_node per server (0 = node.npus),
 * with cluster->faults applied (and the topology after links die, if any do
 * during the run: refused when they cut ranks off, or die at two times).
 * Returns 0, or -1 with a one-line reason in err
 * when the job does not fit the system, or a fault names no link of it or cuts
 * ranks off: "FIELD: expected ..., found ...", FIELD being the parameter at
 * fault (ranks, ranks_per_node or cluster.faults.links); the caller adds where
 * its value came from: the job's for -1, the system config's for
 * TOPO_BAD_FAULT (a fault naming no link of the job, cutting ranks off, or
 * faults that together leave a link below FAULTS_MIN_FACTOR). */
#define TOPO_BAD_FAULT (-2)
int topo_build(const node_cfg_t *node, const cluster_cfg_t *cluster, int dies_per_package,
               int ranks, int ranks_per_node, topo_t *out, npu_err_t *err);

void topo_free(topo_t *t);

/* Server, local NPU index and supernode of a rank. */
int topo_server_of(const topo_t *t, int rank);
int topo_local_of(const topo_t *t, int rank);
int topo_supernode_of(const topo_t *t, int rank);

/* The leaf switch of a rank's NIC (of its NIC 0 in a rail-optimised fabric,
 * where NIC i of a server sits on rail i's leaf of its group). */
int topo_leaf_of(const topo_t *t, int rank);

/* Whether a link never limits a transfer: a merged uplink (one spine) of a
 * leaf without oversubscription carries every NIC under the leaf at full
 * rate, and so does a merged core link (one core) of a pod when neither tier
 * is oversubscribed; any NIC it carries fills first. */
bool topo_link_never_binding(const topo_t *t, int link);

/* Whether the job's flows between leaves (or pods) are hashed over more than
 * one spine (or core): ECMP, where flows can collide on one path while
 * another idles. */
bool topo_ecmp_hashed(const topo_t *t);

/* Calls fn(arg, link) on every link a transfer to or from rank `rank` can
 * cross other than the switch tiers (uplinks, cores): its NIC, its supernode
 * port and, with scale_up (a transfer inside its server), every scale-up and
 * die link of its server (a ring's routes pass other NPUs; so does a full-mesh
 * detour round a dead link). */
void topo_rank_links(const topo_t *t, int rank, bool scale_up, void (*fn)(void *, int), void *arg);

/* The pod of a rank's servers (0 without a core tier). */
int topo_pod_of(const topo_t *t, int rank);

/* Hierarchy level two ranks meet at: 0 same server, 1 same supernode (or
 * cluster, without supernodes), 2 different supernodes. */
int topo_level(const topo_t *t, int a, int b);

/* Number of levels the job spans (1, 2 or 3). */
int topo_levels_used(const topo_t *t);

/* The path from rank src to rank dst (src != dst): fills hops, returns their
 * number. An id ranks + s stands for the switch of server s (switch scale-up
 * only), the endpoint of in-switch reductions. */
int topo_route(const topo_t *t, int src, int dst, topo_hop_t hops[TOPO_MAX_HOPS]);

/* Latency and per-message overhead of the path (sums of the hops' latencies;
 * the largest overhead of a hop, as a message pays it once). */
double topo_path_alpha_s(const topo_t *t, const topo_hop_t *hops, int nhops);

/* Seconds bytes take on the path's slowest hop (each hop carries them all;
 * beta of the alpha-beta cost). */
double topo_path_beta_s(const topo_t *t, const topo_hop_t *hops, int nhops, double bytes);

/* The one point-to-point time: seconds to move bytes from src to dst alone on
 * their route, alpha plus beta (topo_path_alpha_s + topo_path_beta_s); 0 from
 * a rank to itself (nothing moves). The replay's analytic send/recv, its
 * contention sweep's messages and serving's pipeline and KV handoffs all
 * cost a message with it. */
double topo_path_time_s(const topo_t *t, int src, int dst, double bytes);

/* Switch ports the job holds in the scale-out network: a leaf port per NIC of
 * its servers and both ends of every leaf-spine and pod-core link of every
 * plane, sprayed or not (0 for one server). */
long topo_switch_ports(const topo_t *t);

/* Effective bandwidth of a link (line rate x efficiency), bytes/s, at the
 * start of the run (faults from the start applied, timed ones not). */
double topo_link_bw(const topo_t *t, int link);

/* The same at time_s into the run: timed faults up to time_s applied. */
double topo_link_bw_at(const topo_t *t, int link, double time_s);

/* When bytes sent over the link from start_s at its full (time-varying)
 * bandwidth are through: start_s + bytes / bandwidth without timed faults. */
double topo_link_drain_end_s(const topo_t *t, int link, double bytes, double start_s);

/* The topology a transfer starting at start_s is routed on: after from the
 * links' death on, else t itself. */
const topo_t *topo_at(const topo_t *t, double start_s);

/* Whether the link dies during the run (alive in t, dead in t->after). */
bool topo_link_dies(const topo_t *t, int link);

/* Whether a path crosses a link that dies during the run. */
bool topo_path_dies(const topo_t *t, const topo_hop_t *hops, int nhops);

/* Bytes the link carries at full bandwidth from from_s to to_s (its timed
 * faults applied; a dying link as if it lived). */
double topo_link_bytes_between(const topo_t *t, int link, double from_s, double to_s);

/* Whether a timed fault of any link (a death too) falls in (from_s, to_s]. */
bool topo_changes_within(const topo_t *t, double from_s, double to_s);

/* A stable, readable name: "s0.mesh1-5", "s0.ring3-4", "s2.port3" (switch),
 * "s1.die4-5", "s3.sn2" (supernode port), "s3.nic2", "leaf4.up", "pod1.core2". */
void topo_link_name(const topo_t *t, int link, char *buf, size_t len);

#endif
