/* config_doc.h - the config document shared by the loader's parts: the merged
 * cJSON tree and where every value came from. Internal to sim/config*.c. */
#ifndef NPUSIM_CONFIG_DOC_H
#define NPUSIM_CONFIG_DOC_H

#include <cjson/cJSON.h>

#include "jsonfile.h"

#include "config.h"
#include "config_schema.h"
#include "npu_err.h"

#define CFG_ORIGIN_SET "--set"
#define CFG_ORIGIN_DEFAULT "default"
#define CFG_SOURCE_SUFFIX "_source"
#define CFG_PATH_MAX 256

typedef struct {
  char *path;   /* dotted path of a value */
  char *origin; /* file it was read from, "--set" or "default" */
} cfg_origin_t;

struct config_doc {
  config_kind_t kind;
  const cfg_schema_t *schema;
  char *file;             /* the file the user named */
  cJSON *root;            /* merged tree: extends resolved, --set applied */
  cfg_origin_t *origins;  /* latest origin of each value path */
  size_t norigins, origins_cap;
  size_t nodes_read;      /* JSON values in all files read, against a cap */
  char *json_refusal;     /* why the canonical JSON would not load back (a node-type
                           * path that cannot be made absolute), or NULL */
};

/* Records that the value at path came from origin (replacing an earlier one). */
void cfg_doc_set_origin(config_doc_t *doc, const char *path, const char *origin);

/* Where the value at path came from: its own origin, else its nearest
 * recorded parent's, else the document's file. Never NULL. */
const char *cfg_doc_origin(const config_doc_t *doc, const char *path);

/* The file to name in an error about path: its origin, or the document's file
 * when the value is a default (the user did not write it, but can fix it there). */
const char *cfg_doc_blame(const config_doc_t *doc, const char *path);

/* The tree node at a dotted path, or NULL. */
cJSON *cfg_tree_get(const cJSON *root, const char *path);

/* Joins parent and name into a dotted path ("" parent gives name). */
void cfg_path_join(char *buf, size_t len, const char *parent, const char *name);

/* Checks every key of one document, fills defaults, converts into out and
 * applies its cross-key rules; no node-type files (sim/config/config_resolve.c).
 * config_doc_resolve (sim/config/config_node_types.c) is this, then the chips
 * that a system's cluster.node_types reference, each resolved by this. */
int cfg_resolve_keys(config_doc_t *doc, void *out, npu_err_t *err);

/* Checks the cross-key rules of one resolved document (sim/config/config_rules.c). */
int cfg_rules_check(const config_doc_t *doc, const void *cfg, npu_err_t *err);

#endif
