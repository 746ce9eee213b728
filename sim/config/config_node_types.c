/* config_node_types.c - the chips of a heterogeneous cluster: each entry of
 * cluster.node_types names a system config file, whose chip its servers carry.
 *
 * A reference to a file, not a chip block inline: the chip is then checked by
 * the same schema and rules as any system's (its errors name its own file and
 * path), a what-if chip is the usual three-line file that extends a shipped
 * one, and the key stays a string that --set and sweeps can vary. The
 * referenced file is loaded whole (it must be a valid system config) but only
 * its chip is kept; a file with node types of its own is refused, so
 * references never chain or cycle. config_doc_resolve, the loader's last step,
 * is here: a document's keys (config_resolve.c), then its node types' chips. */
#include "config_doc.h"
#include "jsonfile.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY "cluster.node_types"

/* path relative to the file that set the key (the working directory for --set). */
static void referenced_path(const config_doc_t *doc, const char *system, char *out, size_t len) {
  const char *origin = cfg_doc_origin(doc, KEY);
  const char *slash = strrchr(origin, '/');
  if (system[0] == '/' || strcmp(origin, CFG_ORIGIN_SET) == 0 || !slash)
    snprintf(out, len, "%s", system);
  else
    snprintf(out, len, "%.*s/%s", (int)(slash - origin), origin, system);
}

/* "3" or "0-3". */
static const char *range_text(const node_type_t *t, char *buf, size_t len) {
  if (t->first == t->last)
    snprintf(buf, len, "%d", t->first);
  else
    snprintf(buf, len, "%d-%d", t->first, t->last);
  return buf;
}

/* Ranges overlap nowhere and, with cluster.nodes set, stay inside it. */
static int check_ranges(const config_doc_t *doc, const system_cfg_t *sys, npu_err_t *err) {
  const node_types_t *nt = &sys->cluster.node_types;
  for (int i = 0; i < nt->n; i++) {
    const node_type_t *a = &nt->v[i];
    if (sys->cluster.nodes > 0 && a->last >= sys->cluster.nodes)
      return npu_err_set(err, "%s: " KEY ": expected servers below cluster.nodes = %d, found %d",
                         cfg_doc_blame(doc, KEY), sys->cluster.nodes, a->last);
    for (int j = 0; j < i; j++) {
      const node_type_t *b = &nt->v[j];
      char ra[32], rb[32];
      if (a->first <= b->last && b->first <= a->last)
        return npu_err_set(err,
                           "%s: " KEY ": expected server ranges that do not overlap, found "
                           "server %d in %s and %s",
                           cfg_doc_blame(doc, KEY), a->first > b->first ? a->first : b->first,
                           range_text(b, rb, sizeof rb), range_text(a, ra, sizeof ra));
    }
  }
  return 0;
}

/* Loads entry i's file and keeps its chip. */
static int load_chip(const config_doc_t *doc, system_cfg_t *sys, int i, npu_err_t *err) {
  const char *system = sys->cluster.node_types.v[i].system;
  char path[PATH_MAX];
  referenced_path(doc, system, path, sizeof path);
  char why[256];
  /* The inputs' one check (a FIFO would block an open), named from this key. */
  if (jsonfile_check(path, why, sizeof why))
    return npu_err_set(err,
                       "%s: " KEY ": expected readable system config files, found \"%.200s\" "
                       "(%s)",
                       cfg_doc_blame(doc, KEY), path, why);
  config_doc_t *sub = config_doc_load(CONFIG_SYSTEM, path, err);
  if (!sub)
    return -1;
  int rc = 0;
  const cJSON *own = cfg_tree_get(sub->root, KEY);
  if (cJSON_IsString(own) && own->valuestring[0]) {
    rc = npu_err_set(err,
                     "%s: " KEY ": expected system files without node types of their own, "
                     "found \"%.200s\", whose " KEY " is \"%.200s\"",
                     cfg_doc_blame(doc, KEY), system, own->valuestring);
  } else {
    system_cfg_t *s = malloc(sizeof *s);
    if (!s)
      rc = npu_err_set(err, "%s: " KEY ": out of memory", cfg_doc_blame(doc, KEY));
    else if ((rc = cfg_resolve_keys(sub, s, err)) == 0)
      sys->node_chips[i] = s->chip;
    free(s);
  }
  config_doc_free(sub);
  if (rc == 0 && sys->node_chips[i].dies_per_package != sys->chip.dies_per_package)
    rc = npu_err_set(err,
                     "%s: " KEY ": expected chips of chip.dies_per_package = %d (the "
                     "default chip's: the servers' links are the cluster's), found %d in "
                     "\"%.200s\"",
                     cfg_doc_blame(doc, KEY), sys->chip.dies_per_package,
                     sys->node_chips[i].dies_per_package, system);
  return rc;
}

/* Entry t's file by its absolute path (into real), or -1 with why it cannot
 * stand in the key: the key holds paths of at most CLUSTER_NODE_TYPE_PATH_MAX
 * characters, without ',' or ':' (a symbolic link's target may have them). */
static int absolute_path(const config_doc_t *doc, const node_type_t *t, char *real, char *why,
                         size_t len) {
  char path[PATH_MAX];
  referenced_path(doc, t->system, path, sizeof path);
  size_t n = 0;
  if (!realpath(path, real))
    snprintf(why, len, "%s", strerror(errno));
  else if ((n = strlen(real)) > CLUSTER_NODE_TYPE_PATH_MAX)
    snprintf(why, len, "its absolute path has %zu characters, over %d", n,
             CLUSTER_NODE_TYPE_PATH_MAX);
  else if (strpbrk(real, ",:"))
    snprintf(why, len, "its absolute path \"%.300s\" has a ',' or ':'", real);
  else
    return 0;
  return -1;
}

/* The document's canonical JSON (npusim validate) names each file by its
 * absolute path, so that it loads back to the same chips wherever it is
 * written; the struct keeps the paths as written, for messages. A list whose
 * absolute paths the key cannot hold stays as written, and the document
 * records why its JSON would not load back (config_doc_json_loadable refuses
 * it): the run itself reads the files as written. */
static int absolute_paths(config_doc_t *doc, const system_cfg_t *sys) {
  const node_types_t *nt = &sys->cluster.node_types;
  char text[1024] = "", real[PATH_MAX], why[512], range[32];
  size_t used = 0;
  free(doc->json_refusal);
  doc->json_refusal = NULL;
  for (int i = 0; i < nt->n; i++) {
    const node_type_t *t = &nt->v[i];
    int n = absolute_path(doc, t, real, why, sizeof why)
                ? -1
                : snprintf(text + used, sizeof text - used, "%s%s:%s", i ? "," : "",
                           range_text(t, range, sizeof range), real);
    if (n >= 0 && (size_t)n >= sizeof text - used)
      snprintf(why, sizeof why, "the absolute paths pass the key's %zu characters",
               sizeof text - 1);
    if (n < 0 || (size_t)n >= sizeof text - used) {
      npu_err_t e;
      npu_err_set(&e,
                  "%s: " KEY ": expected files whose absolute paths the key can hold (for "
                  "npusim validate's JSON), found \"%s:%.200s\" (%s)",
                  cfg_doc_blame(doc, KEY), range_text(t, range, sizeof range), t->system, why);
      return (doc->json_refusal = strdup(e.msg)) ? 0 : -1;
    }
    used += (size_t)n;
  }
  cJSON *item = cfg_tree_get(doc->root, KEY);
  if (cJSON_IsString(item) && !cJSON_SetValuestring(item, text))
    return -1;
  return 0;
}

/* Loads the chips of cluster.node_types' files into sys->node_chips, after
 * checking the ranges, and writes the files' absolute paths into the document. */
static int node_types_load(config_doc_t *doc, system_cfg_t *sys, npu_err_t *err) {
  if (check_ranges(doc, sys, err))
    return -1;
  for (int i = 0; i < sys->cluster.node_types.n; i++)
    if (load_chip(doc, sys, i, err))
      return -1;
  if (sys->cluster.node_types.n > 0 && absolute_paths(doc, sys))
    return npu_err_set(err, "%s: " KEY ": out of memory", cfg_doc_blame(doc, KEY));
  return 0;
}

/* The last step of resolving, so it lives here: a referenced file is resolved
 * by its keys alone (cfg_resolve_keys), never by this, which keeps the loader's
 * files free of a call circle. */
int config_doc_resolve(config_doc_t *doc, void *out, npu_err_t *err) {
  if (cfg_resolve_keys(doc, out, err))
    return -1;
  return doc->kind == CONFIG_SYSTEM ? node_types_load(doc, out, err) : 0;
}
