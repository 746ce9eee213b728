/* config.c - reading config files: JSON with line:column errors, duplicate keys,
 * "extends" chains (relative paths, cycle detection), --set overrides, and the
 * record of where every value came from.
 *
 * Validation against the schema and conversion to structs are in
 * config_resolve.c; printing is in config_print.c. */
#include "config_doc.h"
#include "npu_utf8.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILE_BYTES (16L * 1024 * 1024)
/* A config may extend a file that extends another, and so on: at most 16
 * "extends" followed in a chain (17 files with the first), whether the first
 * is a file or text given to config_doc_parse. */
#define MAX_EXTENDS_DEPTH 16
/* Real configs hold a few hundred values; the cap keeps the provenance table
 * (searched linearly) fast on whatever a file contains. */
#define MAX_NODES 10000

/* ---- small helpers shared by the loader's parts ---- */

void cfg_path_join(char *buf, size_t len, const char *parent, const char *name) {
  if (parent[0])
    snprintf(buf, len, "%s.%s", parent, name);
  else
    snprintf(buf, len, "%s", name);
}

cJSON *cfg_tree_get(const cJSON *root, const char *path) {
  char seg[CFG_PATH_MAX];
  const cJSON *node = root;
  const char *p = path;
  while (node && *p) {
    const char *dot = strchr(p, '.');
    size_t n = dot ? (size_t)(dot - p) : strlen(p);
    if (n >= sizeof seg || !cJSON_IsObject(node))
      return NULL;
    memcpy(seg, p, n);
    seg[n] = '\0';
    node = cJSON_GetObjectItemCaseSensitive(node, seg);
    p += n + (dot ? 1 : 0);
  }
  return (cJSON *)node;
}

/* ---- origins ---- */

static cfg_origin_t *find_origin(const config_doc_t *doc, const char *path) {
  for (size_t i = 0; i < doc->norigins; i++)
    if (strcmp(doc->origins[i].path, path) == 0)
      return &doc->origins[i];
  return NULL;
}

void cfg_doc_set_origin(config_doc_t *doc, const char *path, const char *origin) {
  cfg_origin_t *o = find_origin(doc, path);
  if (o) {
    free(o->origin);
    o->origin = strdup(origin);
    return;
  }
  if (doc->norigins == doc->origins_cap) {
    size_t cap = doc->origins_cap ? doc->origins_cap * 2 : 64;
    cfg_origin_t *grown = realloc(doc->origins, cap * sizeof *grown);
    if (!grown)
      abort(); /* out of memory on a few hundred small strings: nothing sane to do */
    doc->origins = grown;
    doc->origins_cap = cap;
  }
  doc->origins[doc->norigins].path = strdup(path);
  doc->origins[doc->norigins].origin = strdup(origin);
  doc->norigins++;
}

const char *cfg_doc_origin(const config_doc_t *doc, const char *path) {
  char buf[CFG_PATH_MAX];
  snprintf(buf, sizeof buf, "%s", path);
  for (;;) {
    const cfg_origin_t *o = find_origin(doc, buf);
    if (o)
      return o->origin;
    size_t parent = cfg_path_parent_len(buf);
    if (parent == 0)
      return doc->file;
    buf[parent] = '\0';
  }
}

const char *cfg_doc_blame(const config_doc_t *doc, const char *path) {
  const char *o = cfg_doc_origin(doc, path);
  return strcmp(o, CFG_ORIGIN_DEFAULT) == 0 ? doc->file : o;
}

/* Records origin for every value (non-object) below node. */
static void record_leaves(config_doc_t *doc, const cJSON *node, const char *path,
                          const char *origin) {
  if (!cJSON_IsObject(node)) {
    cfg_doc_set_origin(doc, path, origin);
    return;
  }
  const cJSON *child;
  cJSON_ArrayForEach(child, node) {
    char sub[CFG_PATH_MAX];
    cfg_path_join(sub, sizeof sub, path, child->string);
    record_leaves(doc, child, sub, origin);
  }
}

/* ---- reading and parsing ---- */

/* Fails on the first object, at any depth, that holds a key twice: cJSON keeps
 * both and lookups would silently see only the first. */
static int check_duplicates(const char *name, const cJSON *node, const char *path,
                            npu_err_t *err) {
  if (!cJSON_IsObject(node) && !cJSON_IsArray(node))
    return 0;
  const cJSON *child;
  cJSON_ArrayForEach(child, node) {
    char sub[CFG_PATH_MAX];
    if (cJSON_IsObject(node)) {
      for (const cJSON *prev = node->child; prev != child; prev = prev->next)
        if (strcmp(prev->string, child->string) == 0) {
          cfg_path_join(sub, sizeof sub, path, child->string);
          return npu_err_set(err, "%s: %s: expected each key once, found \"%s\" twice", name,
                             sub, child->string);
        }
      cfg_path_join(sub, sizeof sub, path, child->string);
    } else {
      snprintf(sub, sizeof sub, "%s[]", path);
    }
    if (check_duplicates(name, child, sub, err))
      return -1;
  }
  return 0;
}

static size_t count_nodes(const cJSON *node) {
  size_t n = 1;
  for (const cJSON *c = node->child; c; c = c->next)
    n += count_nodes(c);
  return n;
}

/* cJSON turns "\u0000" into a NUL byte, which silently ends the C string.
 * Returns a copy of text with each such escape inside a string replaced by the
 * bytes C0 80 (an overlong NUL, never valid UTF-8), for check_strings to report
 * at its JSON path; NULL when there is none. */
static char *mark_nul_escapes(const char *text, size_t len, size_t *out_len) {
  char *copy = NULL;
  size_t n = 0;
  bool in_string = false;
  for (size_t i = 0; i < len; i++) {
    char c = text[i];
    if (in_string && c == '\\' && i + 5 < len && memcmp(text + i + 1, "u0000", 5) == 0) {
      if (!copy) {
        copy = malloc(len + 1);
        if (!copy)
          return NULL;
        memcpy(copy, text, i);
        n = i;
      }
      copy[n++] = (char)0xc0;
      copy[n++] = (char)0x80;
      i += 5;
      continue;
    }
    if (in_string && c == '\\' && i + 1 < len) { /* any other escape: two bytes as they are */
      if (copy) {
        copy[n++] = c;
        copy[n++] = text[i + 1];
      }
      i++;
      continue;
    }
    if (c == '"')
      in_string = !in_string;
    if (copy)
      copy[n++] = c;
  }
  if (copy) {
    copy[n] = '\0';
    *out_len = n;
  }
  return copy;
}

/* NULL if s is printable UTF-8 text; else what it holds instead, for a
 * "found ..." clause. */
static const char *bad_text(const char *s, char *buf, size_t len) {
  for (const char *p = s; *p;) {
    unsigned cp;
    size_t n = npu_utf8_char(p, &cp);
    if ((unsigned char)p[0] == 0xc0 && (unsigned char)p[1] == 0x80) {
      snprintf(buf, len, "a NUL character (\\u0000), which would end the string");
    } else if (n == 0) {
      snprintf(buf, len, "invalid UTF-8 (byte 0x%02x)", (unsigned char)*p);
    } else if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0) || cp == 0x2028 || cp == 0x2029) {
      snprintf(buf, len, "a control character (U+%04X)", cp);
    } else {
      p += n;
      continue;
    }
    return buf;
  }
  return NULL;
}

/* Fails on the first string, key or value, that is not printable UTF-8 text:
 * control characters (tabs and newlines included) and invalid bytes would go
 * into tables, CSV and JSON as they are, and a "\u0000" would cut the string
 * short (see mark_nul_escapes). */
static int check_strings(const char *name, const cJSON *node, const char *path, npu_err_t *err) {
  const cJSON *child;
  int i = 0;
  cJSON_ArrayForEach(child, node) {
    char sub[CFG_PATH_MAX], what[96];
    if (cJSON_IsObject(node)) {
      cfg_path_join(sub, sizeof sub, path, child->string);
      if (bad_text(child->string, what, sizeof what))
        return npu_err_set(err, "%s: %s: expected a key of printable UTF-8 text, found %s", name,
                           sub, what);
    } else {
      snprintf(sub, sizeof sub, "%s[%d]", path, i);
    }
    i++;
    if (cJSON_IsString(child) && bad_text(child->valuestring, what, sizeof what))
      return npu_err_set(err, "%s: %s: expected printable UTF-8 text, found %s", name, sub, what);
    if (check_strings(name, child, sub, err))
      return -1;
  }
  return 0;
}

static cJSON *parse_text(const char *name, const char *text, size_t len, npu_err_t *err) {
  cJSON *root = jsonfile_parse(name, text, len, err);
  if (!root)
    return NULL;
  size_t marked_len;
  char *marked = mark_nul_escapes(text, len, &marked_len);
  if (marked) {
    /* The same JSON with the NULs kept visible; syntax errors came from text. */
    cJSON_Delete(root);
    root = jsonfile_parse(name, marked, marked_len, err);
    free(marked);
    if (!root)
      return NULL;
  }
  if (!cJSON_IsObject(root)) {
    char what[96];
    jsonfile_describe(root, what, sizeof what);
    npu_err_set(err, "%s: (top level): expected a JSON object, found %s", name, what);
    cJSON_Delete(root);
    return NULL;
  }
  return root;
}

/* ---- extends ---- */

typedef struct {
  char *real[MAX_EXTENDS_DEPTH + 1]; /* canonical paths of the files being loaded */
  const char *shown[MAX_EXTENDS_DEPTH + 1];
  int depth;   /* entries in real and shown */
  int extends; /* "extends" followed so far; the first file may not be in real */
} chain_t;

/* Deep-merges child into base: objects merge key by key, anything else in the
 * child replaces. A value the child sets drops the base's "_source" note for
 * it, which described the old value. */
static void merge_into(cJSON *base, const cJSON *child) {
  const cJSON *c;
  cJSON_ArrayForEach(c, child) {
    cJSON *b = cJSON_GetObjectItemCaseSensitive(base, c->string);
    if (b && cJSON_IsObject(b) && cJSON_IsObject(c)) {
      merge_into(b, c);
      continue;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(base, c->string);
    cJSON_AddItemToObject(base, c->string, cJSON_Duplicate(c, 1));
    size_t n = strlen(c->string), ns = strlen(CFG_SOURCE_SUFFIX);
    if (n < ns || strcmp(c->string + n - ns, CFG_SOURCE_SUFFIX) != 0) {
      char note[CFG_PATH_MAX];
      snprintf(note, sizeof note, "%s%s", c->string, CFG_SOURCE_SUFFIX);
      if (!cJSON_GetObjectItemCaseSensitive(child, note))
        cJSON_DeleteItemFromObjectCaseSensitive(base, note);
    }
  }
}

static cJSON *load_tree(config_doc_t *doc, const char *name, const char *base_dir,
                        const char *text, size_t len, chain_t *chain, npu_err_t *err);

/* Loads the file that `name` extends and merges tree over it. */
static cJSON *apply_extends(config_doc_t *doc, const char *name, const char *base_dir,
                            cJSON *tree, chain_t *chain, npu_err_t *err) {
  cJSON *ext = cJSON_GetObjectItemCaseSensitive(tree, "extends");
  char what[96];
  if (!cJSON_IsString(ext) || ext->valuestring[0] == '\0') {
    jsonfile_describe(ext, what, sizeof what);
    npu_err_set(err, "%s: extends: expected the path of a config file, found %s", name, what);
    return NULL;
  }
  char path[PATH_MAX];
  if (ext->valuestring[0] == '/')
    snprintf(path, sizeof path, "%s", ext->valuestring);
  else
    snprintf(path, sizeof path, "%s/%s", base_dir, ext->valuestring);

  char real[PATH_MAX];
  if (!realpath(path, real)) {
    npu_err_set(err, "%s: extends: expected a readable file, found \"%s\" (%s)", name,
                ext->valuestring, strerror(errno));
    return NULL;
  }
  for (int i = 0; i < chain->depth; i++) {
    if (strcmp(chain->real[i], real) == 0) {
      char cycle[NPU_ERR_MAX / 2] = "";
      size_t used = 0;
      for (int j = i; j < chain->depth && used < sizeof cycle; j++)
        used += (size_t)snprintf(cycle + used, sizeof cycle - used, "%s -> ", chain->shown[j]);
      npu_err_set(err, "%s: extends: expected a chain without cycles, found %s%s", name, cycle,
                  path);
      return NULL;
    }
  }
  if (chain->extends == MAX_EXTENDS_DEPTH) {
    npu_err_set(err, "%s: extends: expected at most %d extends in a chain, found more", name,
                MAX_EXTENDS_DEPTH);
    return NULL;
  }
  size_t len;
  char why[256];
  char *text = jsonfile_read(path, MAX_FILE_BYTES, &len, why, sizeof why);
  if (!text) {
    npu_err_set(err, "%s: extends: expected a readable file, found \"%s\" (%s)", name,
                ext->valuestring, why);
    return NULL;
  }
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  *slash = '\0'; /* path always holds a '/' (base_dir joined, or absolute) */
  if (dir[0] == '\0')
    snprintf(dir, sizeof dir, "/");

  char *shown = strdup(path);
  chain->real[chain->depth] = strdup(real);
  chain->shown[chain->depth] = shown;
  chain->depth++;
  chain->extends++;
  cJSON *base = load_tree(doc, shown, dir, text, len, chain, err);
  chain->extends--;
  chain->depth--;
  free(chain->real[chain->depth]);
  free(text);
  if (base) {
    cJSON_DeleteItemFromObjectCaseSensitive(tree, "extends");
    merge_into(base, tree);
  }
  /* The origins table keeps its own copies; shown is no longer needed. */
  free(shown);
  return base;
}

/* Parses text and, if it extends another file, merges it over that file's tree.
 * Records the origin of every value it contributes. */
static cJSON *load_tree(config_doc_t *doc, const char *name, const char *base_dir,
                        const char *text, size_t len, chain_t *chain, npu_err_t *err) {
  cJSON *tree = parse_text(name, text, len, err);
  if (!tree)
    return NULL;
  doc->nodes_read += count_nodes(tree);
  if (doc->nodes_read > MAX_NODES) {
    npu_err_set(err, "%s: (top level): expected at most %d JSON values in a config and the files "
                "it extends, found %zu", name, MAX_NODES, doc->nodes_read);
    cJSON_Delete(tree);
    return NULL;
  }
  if (check_duplicates(name, tree, "", err) || check_strings(name, tree, "", err)) {
    cJSON_Delete(tree);
    return NULL;
  }
  cJSON *result = tree;
  if (cJSON_GetObjectItemCaseSensitive(tree, "extends")) {
    result = apply_extends(doc, name, base_dir, tree, chain, err);
    if (!result) {
      cJSON_Delete(tree);
      return NULL;
    }
  }
  record_leaves(doc, tree, "", name);
  if (result != tree)
    cJSON_Delete(tree);
  return result;
}

config_doc_t *config_doc_parse(config_kind_t kind, const char *name, const char *base_dir,
                               const char *text, size_t len, npu_err_t *err) {
  config_doc_t *doc = calloc(1, sizeof *doc);
  if (!doc)
    return NULL;
  doc->kind = kind;
  doc->schema = cfg_schema_get(kind);
  doc->file = strdup(name);
  chain_t chain = {.depth = 0, .extends = 0};
  char real[PATH_MAX];
  /* The top file is part of the chain when it exists on disk (not when fuzzing,
   * nor for standard input, "-", whatever file of that name the folder holds). */
  if (strcmp(name, JSONFILE_STDIN) != 0 && realpath(name, real)) {
    chain.real[0] = strdup(real);
    chain.shown[0] = name;
    chain.depth = 1;
  }
  doc->root = load_tree(doc, name, base_dir, text, len, &chain, err);
  if (chain.depth)
    free(chain.real[0]);
  if (!doc->root) {
    config_doc_free(doc);
    return NULL;
  }
  return doc;
}

config_doc_t *config_doc_load(config_kind_t kind, const char *path, npu_err_t *err) {
  size_t len;
  char why[256];
  char *text = jsonfile_read(path, MAX_FILE_BYTES, &len, why, sizeof why);
  if (!text) {
    npu_err_set(err, "%s: expected a readable %s config file, found %s", path,
                cfg_schema_get(kind)->name, why);
    return NULL;
  }
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash)
    snprintf(dir, sizeof dir, ".");
  else if (slash == dir)
    dir[1] = '\0';
  else
    *slash = '\0';
  config_doc_t *doc = config_doc_parse(kind, path, dir, text, len, err);
  free(text);
  return doc;
}

void config_doc_free(config_doc_t *doc) {
  if (!doc)
    return;
  for (size_t i = 0; i < doc->norigins; i++) {
    free(doc->origins[i].path);
    free(doc->origins[i].origin);
  }
  free(doc->origins);
  free(doc->json_refusal);
  cJSON_Delete(doc->root);
  free(doc->file);
  free(doc);
}

/* ---- --set ---- */

/* Explains why path names no value key: the first segment that is unknown (with
 * a suggestion), or a section named where a value was expected. */
static int unknown_path_error(const cfg_schema_t *schema, const char *path, npu_err_t *err) {
  char prefix[CFG_PATH_MAX];
  const char *p = path;
  size_t plen = 0;
  for (;;) {
    const char *dot = strchr(p, '.');
    size_t n = dot ? (size_t)(dot - p) : strlen(p);
    if (plen + n + 1 >= sizeof prefix)
      break;
    char seg[CFG_PATH_MAX];
    memcpy(seg, p, n);
    seg[n] = '\0';
    char full[CFG_PATH_MAX];
    prefix[plen] = '\0';
    cfg_path_join(full, sizeof full, prefix, seg);
    const cfg_key_t *k = cfg_schema_find(schema, full);
    if (!k) {
      const char *hint = cfg_schema_suggest(schema, prefix, plen, seg, NULL);
      char hint_text[CFG_PATH_MAX + 32] = "";
      if (hint)
        snprintf(hint_text, sizeof hint_text, " (did you mean \"%s\"?)", hint);
      return npu_err_set(err, "%s: %s: expected a key of %s, found unknown key \"%s\"%s",
                         CFG_ORIGIN_SET, full, plen ? prefix : "the top level", seg, hint_text);
    }
    if (!dot) {
      return npu_err_set(err, "%s: %s: expected a value key, found the section \"%s\"",
                         CFG_ORIGIN_SET, full, full);
    }
    snprintf(prefix, sizeof prefix, "%s", full);
    plen = strlen(prefix);
    p = dot + 1;
  }
  return npu_err_set(err, "%s: %.200s: expected a known key, found a path that is too long",
                     CFG_ORIGIN_SET, path);
}

int config_kind_of_path(const char *path, npu_err_t *err) {
  size_t n = strcspn(path, ".="); /* "name=x" names the top-level key name */
  if (n == 0)
    return npu_err_set(err, "%s: expected PATH=VALUE with a key before \"%c\", found \"%.40s\"",
                       CFG_ORIGIN_SET, path[0] ? path[0] : '=', path);
  char root[CFG_PATH_MAX];
  snprintf(root, sizeof root, "%.*s", (int)(n < sizeof root ? n : sizeof root - 1), path);
  for (int kind = 0; kind < CONFIG_KIND_COUNT; kind++) {
    const cfg_key_t *k = cfg_schema_find(cfg_schema_get((config_kind_t)kind), root);
    /* name and description exist in both; they belong to the system. */
    if (k)
      return kind;
  }
  int d_sys, d_wl;
  const char *hint_sys = cfg_schema_suggest(cfg_schema_get(CONFIG_SYSTEM), "", 0, root, &d_sys);
  const char *hint_wl = cfg_schema_suggest(cfg_schema_get(CONFIG_WORKLOAD), "", 0, root, &d_wl);
  const char *hint = (hint_wl && d_wl < d_sys) ? hint_wl : hint_sys ? hint_sys : hint_wl;
  /* "sytem.chip...": a mistyped prefix naming the config, when nearer */
  static const char *const prefixes[] = {"system", "workload"};
  int d_pre;
  const char *pre = cfg_suggest_name(root, prefixes, 2, &d_pre);
  if (path[n] == '.' && pre && d_pre < (hint == hint_wl && hint ? d_wl : d_sys))
    hint = pre;
  char hint_text[CFG_PATH_MAX + 32] = "";
  if (hint)
    snprintf(hint_text, sizeof hint_text, " (did you mean \"%s\"?)", hint);
  return npu_err_set(err, "%s: %s: expected a key of the system or workload config, "
                     "found unknown key \"%s\"%s", CFG_ORIGIN_SET, root, root, hint_text);
}

/* "4,8,8,4", "[4,8,8,4]", "" or "[]" as a JSON array of numbers; NULL if the
 * text is not such a list. Range and count are the schema check's. */
static cJSON *parse_number_list(const char *text) {
  bool bracket = text[0] == '[';
  size_t n = strlen(text);
  if (bracket && (n < 2 || text[n - 1] != ']'))
    return NULL;
  cJSON *list = cJSON_CreateArray();
  const char *p = text + bracket, *end = text + n - bracket;
  while (list && p < end) {
    char *next;
    double v = strtod(p, &next);
    bool more = next < end && *next == ',';
    if (next == p || !isfinite(v) || next > end || (next < end && !more) ||
        !cJSON_AddItemToArray(list, cJSON_CreateNumber(v))) {
      cJSON_Delete(list);
      return NULL;
    }
    p = next + more;
    if (more && p == end) { /* a trailing comma */
      cJSON_Delete(list);
      return NULL;
    }
  }
  return list;
}

/* Turns the text of an override into a JSON value of the key's type. */
static cJSON *parse_set_value(const cfg_key_t *key, const char *path, const char *text,
                              npu_err_t *err) {
  char expect[256];
  cfg_key_expectation(key, expect, sizeof expect);
  switch (key->type) {
  case CFG_INT:
  case CFG_NUM:
  case CFG_SIZE: {
    double v; /* plain decimal: strtod alone took " 16", 0x10 and 0x1p4 */
    if (!jsonfile_decimal(text, &v) || !isfinite(v))
      break;
    return cJSON_CreateNumber(v);
  }
  case CFG_BOOL:
    if (strcmp(text, "true") == 0 || strcmp(text, "false") == 0)
      return cJSON_CreateBool(text[0] == 't');
    break;
  case CFG_STR:
  case CFG_ENUM: {
    char what[96];
    if (bad_text(text, what, sizeof what)) {
      npu_err_set(err, "%s: %s: expected printable UTF-8 text, found %s", CFG_ORIGIN_SET, path,
                  what);
      return NULL;
    }
    return cJSON_CreateString(text);
  }
  case CFG_INT3: {
    /* "16,32,16" or "[16,32,16]" */
    double v[3];
    const char *p = text + (text[0] == '[');
    int i = 0;
    for (; i < 3; i++) {
      char *end;
      v[i] = strtod(p, &end);
      if (end == p || !isfinite(v[i]))
        break;
      p = end;
      if (i < 2 && *p++ != ',')
        break;
    }
    if (i == 3 && (strcmp(p, text[0] == '[' ? "]" : "") == 0))
      return cJSON_CreateDoubleArray(v, 3);
    break;
  }
  case CFG_INTS: {
    cJSON *list = parse_number_list(text);
    if (list)
      return list;
    break;
  }
  case CFG_OBJECT:
    break;
  }
  npu_err_set(err, "%s: %s: expected %s, found \"%.80s\"", CFG_ORIGIN_SET, path, expect, text);
  return NULL;
}

int config_doc_set(config_doc_t *doc, const char *assignment, npu_err_t *err) {
  const char *eq = strchr(assignment, '=');
  if (!eq || eq == assignment || (size_t)(eq - assignment) >= CFG_PATH_MAX)
    return npu_err_set(err, "%s: expected PATH=VALUE (e.g. chip.hbm.bandwidth_GBps=3200), "
                       "found \"%.80s\"", CFG_ORIGIN_SET, assignment);
  char path[CFG_PATH_MAX];
  snprintf(path, sizeof path, "%.*s", (int)(eq - assignment), assignment);
  const cfg_key_t *key = cfg_schema_find(doc->schema, path);
  if (!key || key->type == CFG_OBJECT)
    return unknown_path_error(doc->schema, path, err);
  cJSON *value = parse_set_value(key, path, eq + 1, err);
  if (!value)
    return -1;

  /* Walk to the parent object, creating sections the file left out. */
  cJSON *node = doc->root;
  char seg[CFG_PATH_MAX];
  const char *p = path;
  for (const char *dot; (dot = strchr(p, '.')) != NULL; p = dot + 1) {
    snprintf(seg, sizeof seg, "%.*s", (int)(dot - p), p);
    cJSON *next = cJSON_GetObjectItemCaseSensitive(node, seg);
    if (!next) {
      next = cJSON_AddObjectToObject(node, seg);
    } else if (!cJSON_IsObject(next)) {
      char what[96], where[CFG_PATH_MAX];
      snprintf(where, sizeof where, "%.*s", (int)(dot - path), path);
      jsonfile_describe(next, what, sizeof what);
      cJSON_Delete(value);
      return npu_err_set(err, "%s: %s: expected an object, found %s", cfg_doc_blame(doc, where),
                         where, what);
    }
    node = next;
  }
  cJSON_DeleteItemFromObjectCaseSensitive(node, p);
  cJSON_AddItemToObject(node, p, value);
  char note[CFG_PATH_MAX];
  snprintf(note, sizeof note, "%s%s", p, CFG_SOURCE_SUFFIX);
  cJSON_DeleteItemFromObjectCaseSensitive(node, note);
  cfg_doc_set_origin(doc, path, CFG_ORIGIN_SET);
  return 0;
}
