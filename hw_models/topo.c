/* topo.c - building the link graph and routing by rule; see topo.h. */
#include "topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu_int.h"

const char *const topo_link_kind_names[TOPO_LINK_KIND_COUNT] = {"scale_up", "die", "supernode",
                                                                "nic", "uplink", "core"};

/* Index of pair (i, j), i < j, among the n(n-1)/2 pairs of n items. */
static int pair_index(int i, int j, int n) { return i * n - i * (i + 1) / 2 + (j - i - 1); }

static link_cfg_t merged(link_cfg_t one, int count) {
  one.bw_bytes_per_s *= count;
  return one;
}

/* Scale-up links of one server, in the order the routing rules index them. */
static int scale_up_links_per_server(const node_cfg_t *node) {
  int n = node->npus, g = n / 2;
  switch (node->scale_up.kind) {
  case SCALE_UP_FULL_MESH:
    return n * (n - 1) / 2;
  case SCALE_UP_TWO_GROUP_MESH:
    return 2 * (g * (g - 1) / 2);
  case SCALE_UP_SWITCH:
    return n;
  case SCALE_UP_RING:
    return n >= 3 ? n : n - 1;
  default:
    return 0;
  }
}

static void add_link(topo_t *t, topo_link_kind_t kind, int owner, int a, int b, link_cfg_t cfg) {
  topo_link_t *l = &t->links[t->nlinks++];
  l->kind = kind;
  l->owner = owner;
  l->a = a;
  l->b = b;
  l->cfg = cfg;
}

static void add_plane_link(topo_t *t, topo_link_kind_t kind, int plane, int owner, int a,
                           link_cfg_t cfg) {
  add_link(t, kind, owner, a, -1, cfg);
  t->links[t->nlinks - 1].plane = plane;
}

static void add_scale_up(topo_t *t, int server) {
  const node_cfg_t *node = &t->node;
  const scale_up_cfg_t *up = &node->scale_up;
  int n = node->npus, g = n / 2, per_peer = topology_links_per_peer(node);
  switch (up->kind) {
  case SCALE_UP_FULL_MESH:
    for (int i = 0; i < n; i++)
      for (int j = i + 1; j < n; j++)
        add_link(t, TOPO_LINK_SCALE_UP, server, i, j, merged(up->link, per_peer));
    break;
  case SCALE_UP_TWO_GROUP_MESH:
    for (int grp = 0; grp < 2; grp++)
      for (int i = 0; i < g; i++)
        for (int j = i + 1; j < g; j++)
          add_link(t, TOPO_LINK_SCALE_UP, server, grp * g + i, grp * g + j,
                   merged(up->link, per_peer));
    break;
  case SCALE_UP_SWITCH:
    for (int i = 0; i < n; i++)
      add_link(t, TOPO_LINK_SCALE_UP, server, i, -1, merged(up->link, up->links_per_npu));
    break;
  case SCALE_UP_RING: {
    /* links_per_npu are split over the two neighbours */
    int per_side = n >= 3 ? up->links_per_npu / 2 : up->links_per_npu;
    for (int i = 0; i < scale_up_links_per_server(node); i++)
      add_link(t, TOPO_LINK_SCALE_UP, server, i, (i + 1) % n, merged(up->link, per_side));
    break;
  }
  default:
    break;
  }
}

static int apply_faults(topo_t *t, npu_err_t *err);
static bool planes_split(const topo_t *t, int *a, int *b);
static int build_after(topo_t *t, npu_err_t *err);
static int build(const node_cfg_t *node, const cluster_cfg_t *cluster, int dies_per_package,
                 int ranks, int ranks_per_node, double died_s, topo_t *out, npu_err_t *err);

int topo_build(const node_cfg_t *node, const cluster_cfg_t *cluster, int dies_per_package,
               int ranks, int ranks_per_node, topo_t *out, npu_err_t *err) {
  return build(node, cluster, dies_per_package, ranks, ranks_per_node, 0, out, err);
}

/* topo_build; died_s > 0 builds the topology after links died at died_s. */
static int build(const node_cfg_t *node, const cluster_cfg_t *cluster, int dies_per_package,
                 int ranks, int ranks_per_node, double died_s, topo_t *out, npu_err_t *err) {
  memset(out, 0, sizeof *out);
  out->died_s = died_s;
  int k = ranks_per_node > 0 ? ranks_per_node : node->npus;
  if (ranks < 1) {
    npu_err_set(err, "ranks: expected at least 1 rank, found %d", ranks);
    return -1;
  }
  if (k > node->npus) {
    npu_err_set(err, "ranks_per_node: expected at most node.npus = %d, found %d",
             node->npus, k);
    return -1;
  }
  if (ranks > k && ranks % k) {
    npu_err_set(err, "ranks: expected at most %d or a multiple of %d (ranks per node), found %d", k, k,
             ranks);
    return -1;
  }
  if (ranks < k)
    k = ranks;
  int nodes = (ranks + k - 1) / k;
  if (cluster->nodes > 0 && nodes > cluster->nodes) {
    npu_err_set(err, "ranks: expected at most %d (cluster.nodes = %d servers x %d ranks per node), "
             "found %d", cluster->nodes * k, cluster->nodes, k, ranks);
    return -1;
  }
  out->node = *node;
  out->cluster = *cluster;
  out->dies_per_package = dies_per_package;
  out->ranks = ranks;
  out->ranks_per_node = k;
  out->nodes = nodes;
  out->nodes_per_supernode = cluster->has_supernode ? cluster->supernode.npus / node->npus : 0;

  const scale_out_cfg_t *so = &cluster->scale_out;
  int npus = node->npus;
  int leaf_groups; /* leaves per rail (rail) or in all (spine-leaf) */
  if (so->kind == SCALE_OUT_RAIL_OPTIMIZED) {
    leaf_groups = (nodes + so->npus_per_leaf - 1) / so->npus_per_leaf;
    out->leaves = leaf_groups * npus;
  } else {
    int servers_per_leaf = so->npus_per_leaf / npus;
    out->leaves = (nodes + servers_per_leaf - 1) / servers_per_leaf;
  }
  out->per_server_scale_up = scale_up_links_per_server(node);
  out->per_server_die = dies_per_package > 1 ? (npus / dies_per_package) *
                                                   (dies_per_package * (dies_per_package - 1) / 2)
                                             : 0;
  out->pods = so->npus_per_pod > 0 ? (nodes * npus + so->npus_per_pod - 1) / so->npus_per_pod : 0;
  bool sprayed = so->ecmp == ECMP_PACKET; /* the paths as one of their summed capacity */
  out->spine_paths = sprayed ? 1 : so->spines;
  out->core_paths = sprayed ? 1 : so->cores;
  out->planes = sprayed || so->planes < 1 ? 1 : so->planes;
  int planes = out->planes;
  size_t total = (size_t)nodes * (out->per_server_scale_up + out->per_server_die) +
                 (cluster->has_supernode ? (size_t)nodes * npus : 0) +
                 (size_t)planes * ((size_t)nodes * npus + (size_t)out->leaves * out->spine_paths +
                                   (size_t)out->pods * out->core_paths);
  out->links = calloc(total ? total : 1, sizeof *out->links);
  if (!out->links) {
    npu_err_set(err, "ranks: out of memory for %zu links", total);
    return -1;
  }
  out->first_scale_up = 0;
  for (int s = 0; s < nodes; s++)
    add_scale_up(out, s);
  out->first_die = out->nlinks;
  for (int s = 0; s < nodes && dies_per_package > 1; s++)
    for (int p = 0; p < npus / dies_per_package; p++)
      for (int i = 0; i < dies_per_package; i++)
        for (int j = i + 1; j < dies_per_package; j++)
          add_link(out, TOPO_LINK_DIE, s, p * dies_per_package + i, p * dies_per_package + j,
                   node->die_link);
  out->first_supernode = out->nlinks;
  for (int r = 0; cluster->has_supernode && r < nodes * npus; r++)
    add_link(out, TOPO_LINK_SUPERNODE, r / npus, r % npus, -1, cluster->supernode.link);
  link_cfg_t port = merged(so->nic, so->nics_per_npu / planes); /* one NPU's in a plane */
  out->first_nic = out->nlinks;
  for (int p = 0; p < planes; p++)
    for (int r = 0; r < nodes * npus; r++)
      add_plane_link(out, TOPO_LINK_NIC, p, r / npus, r % npus, port);
  out->first_uplink = out->nlinks;
  for (int p = 0; p < planes; p++)
    for (int leaf = 0; leaf < out->leaves; leaf++)
      for (int spine = 0; spine < out->spine_paths; spine++) {
        link_cfg_t up = port;
        up.bw_bytes_per_s *= so->npus_per_leaf / so->oversubscription / out->spine_paths;
        add_plane_link(out, TOPO_LINK_UPLINK, p, leaf, spine, up);
      }
  out->first_core = out->nlinks;
  for (int p = 0; p < planes; p++)
    for (int pod = 0; pod < out->pods; pod++)
      for (int core = 0; core < out->core_paths; core++) {
        link_cfg_t up = port;
        up.bw_bytes_per_s *= so->npus_per_pod / so->oversubscription /
                             so->pod_oversubscription / out->core_paths;
        add_plane_link(out, TOPO_LINK_CORE, p, pod, core, up);
      }
  if (apply_faults(out, err) || build_after(out, err)) {
    topo_free(out);
    return TOPO_BAD_FAULT;
  }
  return 0;
}

/* The topology from the links' death on: the same faults, the dying links
 * dead from the start (only transfers starting at or after T use it). */
static int build_after(topo_t *t, npu_err_t *err) {
  if (t->death_s <= 0)
    return 0;
  cluster_cfg_t cl = t->cluster;
  for (int i = 0; i < cl.faults.n; i++)
    if (cl.faults.v[i].factor == 0)
      cl.faults.v[i].at_s = 0;
  topo_t *after = malloc(sizeof *after);
  if (!after)
    return npu_err_set(err, "cluster.faults.links: out of memory"), -1;
  int rc = build(&t->node, &cl, t->dies_per_package, t->ranks, t->ranks_per_node, t->death_s,
                 after, err);
  if (rc) {
    free(after);
    return -1;
  }
  t->after = after;
  return 0;
}

/* A fault names a link kind, or one link. */
static bool fault_matches(const topo_t *t, int link, const char *name) {
  if (strcmp(name, topo_link_kind_names[t->links[link].kind]) == 0)
    return true;
  char buf[64];
  topo_link_name(t, link, buf, sizeof buf);
  return strcmp(name, buf) == 0;
}

/* The ranks a dead link leaves without a path, or NULL when it has a detour:
 * a full-mesh link of a server of 3 or more NPUs, a spine uplink with another
 * spine. */
static const char *cut_off(const topo_t *t, int link, char *buf, size_t len) {
  const topo_link_t *l = &t->links[link];
  if (l->kind == TOPO_LINK_SCALE_UP && t->node.scale_up.kind == SCALE_UP_FULL_MESH &&
      t->node.npus >= 3)
    return NULL;
  if (l->kind == TOPO_LINK_UPLINK && (t->spine_paths > 1 || t->planes > 1))
    return NULL;
  if (l->kind == TOPO_LINK_CORE && (t->core_paths > 1 || t->planes > 1))
    return NULL;
  if (l->kind == TOPO_LINK_NIC && t->planes > 1)
    return NULL; /* its NPU may keep another plane: planes_split() judges */
  if (l->kind == TOPO_LINK_NIC && t->nodes == 1)
    return NULL; /* a one-server job never uses its NICs */
  int first = l->owner * t->node.npus + l->a; /* NIC, port, supernode port: its NPU */
  if (l->kind == TOPO_LINK_UPLINK)
    snprintf(buf, len, "every rank under leaf %d from the other leaves", l->owner);
  else if (l->kind == TOPO_LINK_CORE)
    snprintf(buf, len, "every rank of pod %d from the other pods", l->owner);
  else if (l->b >= 0)
    snprintf(buf, len, "ranks %d and %d of server %d from each other", l->a, l->b, l->owner);
  else
    snprintf(buf, len, "rank %d", first);
  return buf;
}

static int cmp_change(const void *a, const void *b) {
  const topo_change_t *x = a, *y = b;
  if (x->link != y->link)
    return x->link < y->link ? -1 : 1;
  return x->at_s < y->at_s ? -1 : x->at_s > y->at_s; /* qsort is not stable: ties */
}

/* Keeps the timed faults (T > 0) as changes by link, then time. */
static int add_changes(topo_t *t) {
  const link_faults_t *f = &t->cluster.faults;
  int n = 0;
  for (int i = 0; i < f->n; i++)
    for (int link = 0; f->v[i].at_s > 0 && link < t->nlinks; link++)
      n += fault_matches(t, link, f->v[i].link);
  if (n == 0)
    return 0;
  t->changes = malloc((size_t)n * sizeof *t->changes);
  t->change_off = calloc((size_t)t->nlinks + 1, sizeof *t->change_off);
  if (!t->changes || !t->change_off)
    return -1;
  for (int i = 0; i < f->n; i++)
    for (int link = 0; f->v[i].at_s > 0 && link < t->nlinks; link++)
      if (fault_matches(t, link, f->v[i].link))
        t->changes[t->nchanges++] = (topo_change_t){link, f->v[i].at_s, f->v[i].factor};
  /* changes of one link at one time multiply: their order does not matter */
  qsort(t->changes, (size_t)n, sizeof *t->changes, cmp_change);
  for (int c = 0; c < n; c++)
    t->change_off[t->changes[c].link + 1]++;
  for (int l = 0; l < t->nlinks; l++)
    t->change_off[l + 1] += t->change_off[l];
  return 0;
}

/* Faults on one link multiply, from the start or at their times: together
 * they must leave it FAULTS_MIN_FACTOR of its bandwidth (one alone does, by
 * the parser), or the link's times pass any clock. */
static int check_floor(const topo_t *t, npu_err_t *err) {
  const link_faults_t *f = &t->cluster.faults;
  int slowing = 0;
  for (int i = 0; i < f->n; i++)
    slowing += f->v[i].factor > 0 && f->v[i].factor < 1;
  for (int link = 0; slowing > 1 && link < t->nlinks; link++) {
    double left = 1;
    for (int i = 0; i < f->n; i++)
      if (f->v[i].factor > 0 && fault_matches(t, link, f->v[i].link))
        left *= f->v[i].factor;
    if (left < FAULTS_MIN_FACTOR) {
      char name[64];
      topo_link_name(t, link, name, sizeof name);
      return npu_err_set(err, "cluster.faults.links: expected the faults on one link to "
                      "leave it at least %g of its bandwidth together (or 0: dead), found %s "
                      "at %g",
                      FAULTS_MIN_FACTOR, name, left),
             -1;
    }
  }
  return 0;
}

/* Whether switches a and b (leaves or pods), each with n links up from
 * first + k * n, keep a live one in common. */
static bool common_live(const topo_t *t, int first, int n, int a, int b) {
  for (int s = 0; s < n; s++)
    if (!t->links[first + a * n + s].failed && !t->links[first + b * n + s].failed)
      return true;
  return false;
}

/* Whether two of `count` switches (leaves or pods), each with n links up
 * from first + k * n (to the spines or cores), keep no live one in common;
 * *a and *b are the first such pair. */
static bool split_pair(const topo_t *t, int first, int n, int count, int *a, int *b) {
  for (*a = 0; *a < count; (*a)++)
    for (*b = *a + 1; *b < count; (*b)++)
      if (!common_live(t, first, n, *a, *b))
        return true;
  return false;
}

/* Whether the dead links leave two ranks of different servers no path
 * through the switches: leaves without a spine in common, pods without a
 * core, or (with planes) two ranks without a plane that serves both. */
static bool cuts_fabric(const topo_t *t, npu_err_t *err) {
  const char *after = t->died_s > 0 ? " after links die" : "";
  int a, b;
  if (t->planes > 1) {
    if (planes_split(t, &a, &b))
      return npu_err_set(err, "cluster.faults.links: expected every two ranks of different "
                         "servers to keep a plane where both have a live NIC port and their "
                         "leaves reach each other%s, found none for ranks %d and %d", after, a,
                         b), true;
    return false;
  }
  if (split_pair(t, t->first_uplink, t->spine_paths, t->leaves, &a, &b)) { /* a common spine */
    if (t->died_s > 0)
      return npu_err_set(err, "cluster.faults.links: expected two leaves to keep a "
                      "spine both reach after links die at %g s, found none for leaves %d and "
                      "%d, which cuts the ranks under one off from the other's from %g s",
                      t->died_s, a, b, t->died_s), true;
    return npu_err_set(err, "cluster.faults.links: expected two leaves to keep a "
                    "spine both reach, found none for leaves %d and %d, which cuts the ranks "
                    "under one off from the other's", a, b), true;
  }
  if (split_pair(t, t->first_core, t->core_paths, t->pods, &a, &b)) /* a common core */
    return npu_err_set(err, "cluster.faults.links: expected two pods to keep a core both "
                    "reach%s, found none for pods %d and %d, which cuts the ranks of one off "
                    "from the other's", after, a, b), true;
  return false;
}

/* Applies the faults; a fault naming no link, or a dead link without a
 * detour, or a link dying during the run, or faults that together leave a
 * link less than FAULTS_MIN_FACTOR, are refused in err. */
static int apply_faults(topo_t *t, npu_err_t *err) {
  const link_faults_t *f = &t->cluster.faults;
  if (check_floor(t, err))
    return -1;
  for (int i = 0; i < f->n; i++) {
    int matched = 0;
    if (f->v[i].at_s > 0 && f->v[i].factor == 0) { /* dies during the run: build_after */
      if (t->death_s > 0 && t->death_s != f->v[i].at_s)
        return npu_err_set(err, "cluster.faults.links: expected links dying during the "
                        "run (FACTOR 0 at T > 0) to die at one time, found %s:0@%g after one "
                        "@%g", f->v[i].link, f->v[i].at_s, t->death_s), -1;
      t->death_s = f->v[i].at_s;
    }
    for (int link = 0; link < t->nlinks; link++) {
      if (!fault_matches(t, link, f->v[i].link))
        continue;
      matched++;
      if (f->v[i].at_s > 0) /* a change at T: add_changes; a death: build_after */
        continue;
      if (f->v[i].factor > 0) {
        t->links[link].cfg.bw_bytes_per_s *= f->v[i].factor;
        continue;
      }
      char who[96];
      if (cut_off(t, link, who, sizeof who) && t->died_s > 0 && f->v[i].timed)
        return npu_err_set(err, "cluster.faults.links: expected links dying during the "
                        "run to leave a path (a full-mesh link, a spine uplink), found %s:0@%g, "
                        "which cuts off %s from %g s", f->v[i].link, t->died_s, who, t->died_s),
               -1;
      if (cut_off(t, link, who, sizeof who))
        return npu_err_set(err, "cluster.faults.links: expected dead links that leave a "
                        "path (a full-mesh link, a spine uplink), found %s dead, which cuts off "
                        "%s", f->v[i].link, who), -1;
      t->links[link].failed = true;
    }
    if (!matched)
      return npu_err_set(err, "cluster.faults.links: expected a link kind (scale_up, die, "
                      "supernode, nic, uplink, core) or a link of this job (e.g. s0.nic0), found "
                      "\"%s\"", f->v[i].link), -1;
  }
  if (cuts_fabric(t, err))
    return -1;
  if (add_changes(t))
    return npu_err_set(err, "cluster.faults.links: out of memory for %d links' faults",
                    t->nlinks), -1;
  return 0;
}

void topo_free(topo_t *t) {
  if (t->after) {
    topo_free(t->after);
    free(t->after);
    t->after = NULL;
  }
  free(t->links);
  free(t->changes);
  free(t->change_off);
  t->links = NULL;
  t->changes = NULL;
  t->change_off = NULL;
  t->nlinks = t->nchanges = 0;
}

int topo_server_of(const topo_t *t, int rank) { return rank / t->ranks_per_node; }
int topo_local_of(const topo_t *t, int rank) { return rank % t->ranks_per_node; }

int topo_supernode_of(const topo_t *t, int rank) {
  return t->nodes_per_supernode ? topo_server_of(t, rank) / t->nodes_per_supernode : 0;
}

int topo_level(const topo_t *t, int a, int b) {
  if (topo_server_of(t, a) == topo_server_of(t, b))
    return 0;
  return topo_supernode_of(t, a) == topo_supernode_of(t, b) ? 1 : 2;
}

int topo_levels_used(const topo_t *t) {
  if (t->nodes == 1)
    return 1;
  return t->nodes_per_supernode && t->nodes > t->nodes_per_supernode ? 3 : 2;
}

int topo_leaf_of(const topo_t *t, int rank) {
  const scale_out_cfg_t *so = &t->cluster.scale_out;
  int server = topo_server_of(t, rank), local = topo_local_of(t, rank);
  if (so->kind == SCALE_OUT_RAIL_OPTIMIZED) {
    int groups = (t->nodes + so->npus_per_leaf - 1) / so->npus_per_leaf;
    return local * groups + server / so->npus_per_leaf;
  }
  return server / (so->npus_per_leaf / t->node.npus);
}

int topo_pod_of(const topo_t *t, int rank) {
  return t->pods ? topo_server_of(t, rank) * t->node.npus / t->cluster.scale_out.npus_per_pod
                 : 0;
}

static int npu_id(const topo_t *t, int rank) {
  return topo_server_of(t, rank) * t->node.npus + topo_local_of(t, rank);
}

/* A rank's NIC port in a plane, and the first uplink and core link of a plane. */
static int nic_of(const topo_t *t, int plane, int rank) {
  return t->first_nic + plane * t->nodes * t->node.npus + npu_id(t, rank);
}
static int uplinks_of(const topo_t *t, int plane) {
  return t->first_uplink + plane * t->leaves * t->spine_paths;
}
static int cores_of(const topo_t *t, int plane) {
  return t->first_core + plane * t->pods * t->core_paths;
}

bool topo_link_never_binding(const topo_t *t, int link) {
  const scale_out_cfg_t *so = &t->cluster.scale_out;
  topo_link_kind_t kind = t->links[link].kind;
  bool uplinks = so->oversubscription <= 1 && t->spine_paths == 1;
  return (kind == TOPO_LINK_UPLINK && uplinks) ||
         (kind == TOPO_LINK_CORE && uplinks && so->pod_oversubscription <= 1 && t->core_paths == 1);
}

bool topo_ecmp_hashed(const topo_t *t) {
  return (t->leaves > 1 && t->spine_paths > 1) || (t->pods > 1 && t->core_paths > 1) ||
         (t->nodes > 1 && t->planes > 1);
}

void topo_rank_links(const topo_t *t, int rank, bool scale_up, void (*fn)(void *, int), void *arg) {
  int server = topo_server_of(t, rank);
  for (int p = 0; p < t->planes; p++)
    fn(arg, nic_of(t, p, rank));
  if (t->nodes_per_supernode)
    fn(arg, t->first_supernode + npu_id(t, rank));
  if (!scale_up)
    return;
  int blocks[2][2] = {{t->first_scale_up + server * t->per_server_scale_up, t->per_server_scale_up},
                      {t->first_die + server * t->per_server_die, t->per_server_die}};
  for (int b = 0; b < 2; b++)
    for (int l = blocks[b][0]; l < blocks[b][0] + blocks[b][1]; l++)
      fn(arg, l);
}

/* Which of n equal-cost switches a flow (source NPU, destination NPU) crosses
 * in a tier, as ECMP hashes a flow's header onto its paths: splitmix64's mixer,
 * every bit of both ends in every bit of the hash. Each tier seeds it its own
 * way, as switches do (one hash at every tier would send a flow's choice at
 * one tier to the same index at the next: polarisation). A real switch hashes
 * the 5-tuple, in which RoCE v2 varies the UDP source port per queue pair: as
 * uneven, not the same paths. (The spines' hash was FNV-1a before; its low bit
 * kept the parity of src ^ dst, so with an even number of spines rail-aligned
 * flows used half of them.) */
static int ecmp_choice(int src, int dst, int n, uint64_t tier_seed) {
  if (n <= 1)
    return 0;
  uint64_t state = ((uint64_t)src << 32 | (uint32_t)dst) ^ tier_seed;
  return (int)(npu_splitmix64(&state) % (uint64_t)n);
}

static const uint64_t ECMP_SEED_CORE = 0, ECMP_SEED_SPINE = 0x5350494e45, /* "SPINE" */
    ECMP_SEED_PLANE = 0x504c414e45;                                          /* "PLANE" */

/* The first live one of n links from first + k * n + choice on, for both ends
 * k = a and k = b (ECMP over the live spines or cores). */
static int live_choice(const topo_t *t, int first, int n, int a, int b, int choice) {
  for (int k = 0; k < n; k++, choice = (choice + 1) % n)
    if (!t->links[first + a * n + choice].failed && !t->links[first + b * n + choice].failed)
      break;
  return choice;
}

/* Whether leaves la and lb (in pods pa and pb) reach each other in plane p:
 * the same leaf, or a spine both keep and, between pods, a core both keep. */
static bool plane_joins(const topo_t *t, int p, int la, int lb, int pa, int pb) {
  if (la == lb)
    return true;
  if (!common_live(t, uplinks_of(t, p), t->spine_paths, la, lb))
    return false;
  return pa == pb || common_live(t, cores_of(t, p), t->core_paths, pa, pb);
}

/* Whether two ranks can use plane p: both keep a live NIC port there, and
 * their leaves reach each other in it. */
static bool plane_serves(const topo_t *t, int p, int a, int b) {
  return !t->links[nic_of(t, p, a)].failed && !t->links[nic_of(t, p, b)].failed &&
         plane_joins(t, p, topo_leaf_of(t, a), topo_leaf_of(t, b), topo_pod_of(t, a),
                     topo_pod_of(t, b));
}

/* Ranks grouped by their leaf and the planes their NIC ports live in. */
typedef struct {
  int leaf;
  unsigned live; /* bit p: its port in plane p lives */
  int rank;      /* the first rank of the group */
  int other;     /* its first rank on another server than `rank`'s, or -1 */
} plane_group_t;

static int cmp_plane_group(const void *a, const void *b) {
  const plane_group_t *x = a, *y = b;
  if (x->leaf != y->leaf)
    return x->leaf < y->leaf ? -1 : 1;
  if (x->live != y->live)
    return x->live < y->live ? -1 : 1;
  return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Whether groups g and h (g == h: two ranks of one group) can reach each
 * other on some plane both keep. */
static bool groups_joined(const topo_t *t, const plane_group_t *g, const plane_group_t *h) {
  unsigned both = g->live & h->live;
  for (int p = 0; p < t->planes; p++)
    if ((both >> p & 1) && plane_joins(t, p, g->leaf, h->leaf, topo_pod_of(t, g->rank),
                                       topo_pod_of(t, h->rank)))
      return true;
  return false;
}

/* Whether two ranks of different servers share no plane that serves both;
 * *a and *b are the first such pair. Ranks are grouped by leaf and live
 * planes, so each two groups are judged once. */
static bool planes_split(const topo_t *t, int *a, int *b) {
  plane_group_t *g = malloc(((size_t)t->ranks + 1) * sizeof *g);
  for (int r = 0; r < t->ranks; r++) {
    g[r] = (plane_group_t){topo_leaf_of(t, r), 0, r, -1};
    for (int p = 0; p < t->planes; p++)
      g[r].live |= (unsigned)!t->links[nic_of(t, p, r)].failed << p;
  }
  qsort(g, (size_t)t->ranks, sizeof *g, cmp_plane_group);
  int ng = 0;
  for (int r = 0; r < t->ranks; r++) {
    plane_group_t *last = ng ? &g[ng - 1] : NULL;
    if (last && last->leaf == g[r].leaf && last->live == g[r].live) {
      if (last->other < 0 && topo_server_of(t, g[r].rank) != topo_server_of(t, last->rank))
        last->other = g[r].rank;
      continue;
    }
    g[ng++] = g[r];
  }
  bool split = false;
  for (int i = 0; i < ng && !split; i++)
    for (int j = i; j < ng && !split; j++) {
      int ra = g[i].rank, rb = i == j ? g[i].other : g[j].rank;
      if (rb >= 0 && topo_server_of(t, ra) == topo_server_of(t, rb))
        rb = g[j].other >= 0 ? g[j].other : g[i].other;
      if (rb < 0 || topo_server_of(t, ra) == topo_server_of(t, rb) ||
          groups_joined(t, &g[i], &g[j]))
        continue;
      *a = ra < rb ? ra : rb;
      *b = ra < rb ? rb : ra;
      split = true;
    }
  free(g);
  return split;
}

/* The plane a flow between servers takes: hashed onto one (ECMP), then the
 * first from there on that serves both its ends. */
static int plane_of(const topo_t *t, int src, int dst) {
  if (t->planes <= 1) /* one plane: nothing to choose (every route passes here) */
    return 0;
  int n = t->planes, choice = ecmp_choice(src, dst, n, ECMP_SEED_PLANE);
  for (int k = 0; k < n; k++)
    if (plane_serves(t, (choice + k) % n, src, dst))
      return (choice + k) % n;
  return choice;
}

static int route_scale_out(const topo_t *t, int src, int dst, topo_hop_t *hops) {
  int n = 0, plane = plane_of(t, src, dst);
  int la = topo_leaf_of(t, src), lb = topo_leaf_of(t, dst);
  hops[n++] = (topo_hop_t){nic_of(t, plane, src), 0};
  if (la != lb) {
    int spines = t->spine_paths, up = uplinks_of(t, plane);
    int s = live_choice(t, up, spines, la, lb, ecmp_choice(src, dst, spines, ECMP_SEED_SPINE));
    int pa = topo_pod_of(t, src), pb = topo_pod_of(t, dst);
    hops[n++] = (topo_hop_t){up + la * spines + s, 0};
    if (pa != pb) {
      int cores = t->core_paths, first = cores_of(t, plane);
      int c = live_choice(t, first, cores, pa, pb, ecmp_choice(src, dst, cores, ECMP_SEED_CORE));
      hops[n++] = (topo_hop_t){first + pa * cores + c, 0};
      hops[n++] = (topo_hop_t){first + pb * cores + c, 1};
    }
    hops[n++] = (topo_hop_t){up + lb * spines + s, 1};
  }
  hops[n++] = (topo_hop_t){nic_of(t, plane, dst), 1};
  return n;
}

static int route_ring(const topo_t *t, int base, int a, int b, topo_hop_t *hops) {
  int n = t->node.npus;
  if (n < 3) /* one link between the two */
    return (hops[0] = (topo_hop_t){base, a < b ? 0 : 1}), 1;
  int fwd = (b - a + n) % n, nh = 0;
  if (fwd <= n - fwd) {
    for (int i = a; i != b; i = (i + 1) % n)
      hops[nh++] = (topo_hop_t){base + i, 0}; /* link i joins i and i+1 */
  } else {
    for (int i = a; i != b; i = (i - 1 + n) % n)
      hops[nh++] = (topo_hop_t){base + (i - 1 + n) % n, 1};
  }
  return nh;
}

/* Route inside one server; returns 0 when the pair must leave through the NICs. */
static int route_scale_up(const topo_t *t, int server, int a, int b, topo_hop_t *hops) {
  const node_cfg_t *node = &t->node;
  int base = t->first_scale_up + server * t->per_server_scale_up, n = node->npus;
  int lo = a < b ? a : b, hi = a < b ? b : a, dir = a < b ? 0 : 1;
  switch (node->scale_up.kind) {
  case SCALE_UP_FULL_MESH: {
    int direct = base + pair_index(lo, hi, n);
    if (!t->links[direct].failed) {
      hops[0] = (topo_hop_t){direct, dir};
      return 1;
    }
    for (int c = 0; c < n; c++) { /* HCCL's detour: through the first NPU joined to both */
      if (c == a || c == b)
        continue;
      int ac = base + pair_index(a < c ? a : c, a < c ? c : a, n);
      int cb = base + pair_index(c < b ? c : b, c < b ? b : c, n);
      if (!t->links[ac].failed && !t->links[cb].failed) {
        hops[0] = (topo_hop_t){ac, a < c ? 0 : 1};
        hops[1] = (topo_hop_t){cb, c < b ? 0 : 1};
        return 2;
      }
    }
    return 0; /* no detour inside: out through the NICs */
  }
  case SCALE_UP_TWO_GROUP_MESH: {
    int g = n / 2;
    if (lo / g != hi / g)
      return 0;
    int grp = lo / g;
    hops[0] = (topo_hop_t){base + grp * (g * (g - 1) / 2) + pair_index(lo % g, hi % g, g), dir};
    return 1;
  }
  case SCALE_UP_SWITCH:
    hops[0] = (topo_hop_t){base + a, 0};
    hops[1] = (topo_hop_t){base + b, 1};
    return 2;
  case SCALE_UP_RING:
    return route_ring(t, base, a, b, hops);
  default:
    return 0;
  }
}

int topo_route(const topo_t *t, int src, int dst, topo_hop_t hops[TOPO_MAX_HOPS]) {
  if (src >= t->ranks || dst >= t->ranks) { /* to or from a server's switch (NVLS) */
    int rank = src >= t->ranks ? dst : src;
    int base = t->first_scale_up + topo_server_of(t, rank) * t->per_server_scale_up;
    hops[0] = (topo_hop_t){base + topo_local_of(t, rank), src >= t->ranks ? 1 : 0};
    return 1;
  }
  int server = topo_server_of(t, src), a = topo_local_of(t, src), b = topo_local_of(t, dst);
  if (server == topo_server_of(t, dst)) {
    int d = t->dies_per_package;
    if (d > 1 && a / d == b / d) {
      int lo = a < b ? a % d : b % d, hi = a < b ? b % d : a % d;
      int per_pkg = d * (d - 1) / 2;
      hops[0] = (topo_hop_t){t->first_die + server * t->per_server_die + (a / d) * per_pkg +
                                 pair_index(lo, hi, d),
                             a < b ? 0 : 1};
      return 1;
    }
    int n = route_scale_up(t, server, a, b, hops);
    if (n > 0)
      return n;
    return route_scale_out(t, src, dst, hops);
  }
  if (t->nodes_per_supernode && topo_supernode_of(t, src) == topo_supernode_of(t, dst)) {
    hops[0] = (topo_hop_t){t->first_supernode + npu_id(t, src), 0};
    hops[1] = (topo_hop_t){t->first_supernode + npu_id(t, dst), 1};
    return 2;
  }
  return route_scale_out(t, src, dst, hops);
}

double topo_path_alpha_s(const topo_t *t, const topo_hop_t *hops, int nhops) {
  double latency = 0, overhead = 0;
  for (int i = 0; i < nhops; i++) {
    const link_cfg_t *c = &t->links[hops[i].link].cfg;
    latency += c->latency_s;
    if (c->msg_overhead_s > overhead)
      overhead = c->msg_overhead_s;
  }
  return latency + overhead;
}

double topo_path_beta_s(const topo_t *t, const topo_hop_t *hops, int nhops, double bytes) {
  double slowest = 0; /* the largest bytes / bw: the same bits as bytes / the smallest bw */
  for (int i = 0; i < nhops; i++) {
    double s = bytes / topo_link_bw(t, hops[i].link);
    slowest = s > slowest ? s : slowest;
  }
  return slowest;
}

double topo_path_time_s(const topo_t *t, int src, int dst, double bytes) {
  if (src == dst)
    return 0;
  topo_hop_t hops[TOPO_MAX_HOPS];
  int n = topo_route(t, src, dst, hops);
  return topo_path_alpha_s(t, hops, n) + topo_path_beta_s(t, hops, n, bytes);
}

long topo_switch_ports(const topo_t *t) {
  if (t->nodes < 2)
    return 0;
  const scale_out_cfg_t *so = &t->cluster.scale_out;
  long planes = so->planes > 1 ? so->planes : 1; /* built, even where sprayed as one */
  return (long)t->nodes * t->node.npus * so->nics_per_npu +
         (t->leaves > 1 ? 2L * planes * t->leaves * so->spines : 0) +
         (t->pods > 1 ? 2L * planes * t->pods * so->cores : 0);
}

double topo_link_bw(const topo_t *t, int link) { return link_effective_bw(&t->links[link].cfg); }

double topo_link_bw_at(const topo_t *t, int link, double time_s) {
  double bw = topo_link_bw(t, link);
  for (int c = t->nchanges ? t->change_off[link] : 0;
       t->nchanges && c < t->change_off[link + 1] && t->changes[c].at_s <= time_s; c++)
    bw *= t->changes[c].factor;
  return bw;
}

double topo_link_drain_end_s(const topo_t *t, int link, double bytes, double start_s) {
  double bw = topo_link_bw_at(t, link, start_s);
  if (!t->nchanges)
    return start_s + bytes / bw;
  double now = start_s;
  for (int c = t->change_off[link]; c < t->change_off[link + 1]; c++) {
    const topo_change_t *ch = &t->changes[c];
    if (ch->at_s <= now)
      continue; /* already in bw */
    if (now + bytes / bw <= ch->at_s)
      break;
    bytes -= (ch->at_s - now) * bw; /* at the old rate until the change */
    now = ch->at_s;
    bw *= ch->factor;
  }
  return now + bytes / bw;
}

const topo_t *topo_at(const topo_t *t, double start_s) {
  return t->after && start_s >= t->death_s ? t->after : t;
}

bool topo_link_dies(const topo_t *t, int link) {
  return t->after && t->after->links[link].failed && !t->links[link].failed;
}

bool topo_path_dies(const topo_t *t, const topo_hop_t *hops, int nhops) {
  for (int h = 0; t->after && h < nhops; h++)
    if (topo_link_dies(t, hops[h].link))
      return true;
  return false;
}

double topo_link_bytes_between(const topo_t *t, int link, double from_s, double to_s) {
  if (to_s <= from_s)
    return 0;
  double bytes = 0, now = from_s, bw = topo_link_bw_at(t, link, from_s);
  for (int c = t->nchanges ? t->change_off[link] : 0;
       t->nchanges && c < t->change_off[link + 1]; c++) {
    const topo_change_t *ch = &t->changes[c];
    if (ch->at_s <= now)
      continue; /* already in bw */
    if (ch->at_s >= to_s)
      break;
    bytes += (ch->at_s - now) * bw;
    now = ch->at_s;
    bw *= ch->factor;
  }
  return bytes + (to_s - now) * bw;
}

bool topo_changes_within(const topo_t *t, double from_s, double to_s) {
  if (t->after && t->death_s > from_s && t->death_s <= to_s)
    return true;
  for (int c = 0; c < t->nchanges; c++)
    if (t->changes[c].at_s > from_s && t->changes[c].at_s <= to_s)
      return true;
  return false;
}

void topo_link_name(const topo_t *t, int link, char *buf, size_t len) {
  const topo_link_t *l = &t->links[link];
  bool planed = t->planes > 1 && (l->kind == TOPO_LINK_NIC || l->kind == TOPO_LINK_UPLINK ||
                                  l->kind == TOPO_LINK_CORE);
  if (planed && len > 0) { /* "p1." before the plane's link */
    int n = snprintf(buf, len, "p%d.", l->plane);
    if (n < 0 || (size_t)n >= len)
      return;
    buf += n;
    len -= (size_t)n;
  }
  switch (l->kind) {
  case TOPO_LINK_SCALE_UP:
    if (l->b < 0)
      snprintf(buf, len, "s%d.port%d", l->owner, l->a);
    else
      snprintf(buf, len, "s%d.%s%d-%d", l->owner,
               t->node.scale_up.kind == SCALE_UP_RING ? "ring" : "mesh", l->a, l->b);
    break;
  case TOPO_LINK_DIE:
    snprintf(buf, len, "s%d.die%d-%d", l->owner, l->a, l->b);
    break;
  case TOPO_LINK_SUPERNODE:
    snprintf(buf, len, "s%d.sn%d", l->owner, l->a);
    break;
  case TOPO_LINK_NIC:
    snprintf(buf, len, "s%d.nic%d", l->owner, l->a);
    break;
  case TOPO_LINK_UPLINK:
    if (t->spine_paths > 1)
      snprintf(buf, len, "leaf%d.spine%d", l->owner, l->a);
    else
      snprintf(buf, len, "leaf%d.up", l->owner);
    break;
  case TOPO_LINK_CORE:
    snprintf(buf, len, "pod%d.core%d", l->owner, l->a);
    break;
  default:
    snprintf(buf, len, "link%d", link);
  }
}
