/* config_resolve.c - checks a merged config tree against the schema, fills in
 * defaults and converts values into the plain structs (base units).
 *
 * Order of checks, so the first error is the most useful one: unknown keys and
 * wrong types/ranges while walking the tree, then missing required keys, then
 * the cross-key rules (config_rules.c) on the converted struct. */
#include "config_doc.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), ns = strlen(suffix);
  return n > ns && strcmp(s + n - ns, suffix) == 0;
}

static int type_error(const config_doc_t *doc, const cfg_key_t *key, const cJSON *item,
                      const char *detail, npu_err_t *err) {
  char expect[256], found[128];
  cfg_key_expectation(key, expect, sizeof expect);
  jsonfile_describe(item, found, sizeof found);
  return npu_err_set(err, "%s: %s: expected %s%s, found %s", cfg_doc_blame(doc, key->path),
                     key->path, expect, detail, found);
}

static bool in_range(const cfg_key_t *key, double v) {
  if (v == 0 && key->zero_ok)
    return true;
  if (v > key->max)
    return false;
  return key->min_exclusive ? v > key->min : v >= key->min;
}

static int check_number(const config_doc_t *doc, const cfg_key_t *key, const cJSON *item,
                        npu_err_t *err) {
  if (!cJSON_IsNumber(item) || !isfinite(item->valuedouble))
    return type_error(doc, key, item, "", err);
  double v = item->valuedouble;
  if (key->type == CFG_INT && v != floor(v))
    return type_error(doc, key, item, "", err);
  if (!in_range(key, v))
    return type_error(doc, key, item, "", err);
  if (key->type == CFG_SIZE) {
    double bytes = v * key->to_base;
    if (bytes != floor(bytes))
      return type_error(doc, key, item, " (a whole number of bytes)", err);
  }
  return 0;
}

static int check_enum(const config_doc_t *doc, const cfg_key_t *key, const cJSON *item,
                      npu_err_t *err) {
  if (!cJSON_IsString(item))
    return type_error(doc, key, item, "", err);
  for (int i = 0; i < key->nchoices; i++)
    if (strcmp(item->valuestring, cfg_key_choice(key, i)) == 0)
      return 0;
  const char *hint = cfg_key_suggest_choice(key, item->valuestring);
  char expect[256], hint_text[96] = "";
  cfg_key_expectation(key, expect, sizeof expect);
  if (hint)
    snprintf(hint_text, sizeof hint_text, " (did you mean \"%s\"?)", hint);
  return npu_err_set(err, "%s: %s: expected %s, found \"%.80s\"%s", cfg_doc_blame(doc, key->path),
                     key->path, expect, item->valuestring, hint_text);
}

static int check_string(const config_doc_t *doc, const cfg_key_t *key, const cJSON *item,
                        npu_err_t *err) {
  if (!cJSON_IsString(item))
    return type_error(doc, key, item, "", err);
  size_t n = strlen(item->valuestring);
  if (n < key->min || n > key->max)
    return type_error(doc, key, item, "", err);
  if (key->convert) {
    /* Parse into a scratch buffer: the real field is written by fill_key. */
    _Alignas(16) unsigned char scratch[CFG_CONVERT_MAX_BYTES];
    if (key->convert(item->valuestring, scratch) != 0)
      return type_error(doc, key, item, "", err);
  }
  return 0;
}

/* A list's entry out of range, named by its index: "path[i]: expected ...". */
static int element_error(const config_doc_t *doc, const cfg_key_t *key, const cJSON *e, int i,
                         npu_err_t *err) {
  char lo[32], hi[32], found[128];
  jsonfile_format_number(key->min, lo, sizeof lo);
  jsonfile_format_number(key->max, hi, sizeof hi);
  jsonfile_describe(e, found, sizeof found);
  return npu_err_set(err, "%s: %s[%d]: expected an integer in [%s, %s], found %s",
                     cfg_doc_blame(doc, key->path), key->path, i, lo, hi, found);
}

/* An INT3 (3 numbers) or INTS (at most key->items) array of integers in range. */
static int check_int_array(const config_doc_t *doc, const cfg_key_t *key, const cJSON *item,
                           npu_err_t *err) {
  if (!cJSON_IsArray(item) || (key->type == CFG_INT3 ? cJSON_GetArraySize(item) != 3
                                                     : cJSON_GetArraySize(item) > key->items))
    return type_error(doc, key, item, "", err);
  const cJSON *e;
  int i = 0;
  cJSON_ArrayForEach(e, item) {
    if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble) || e->valuedouble != floor(e->valuedouble) ||
        !in_range(key, e->valuedouble))
      return key->type == CFG_INTS ? element_error(doc, key, e, i, err)
                                   : type_error(doc, key, item, "", err);
    i++;
  }
  return 0;
}

static int check_value(const config_doc_t *doc, const cfg_key_t *key, const cJSON *item,
                       npu_err_t *err) {
  switch (key->type) {
  case CFG_OBJECT:
    return cJSON_IsObject(item) ? 0 : type_error(doc, key, item, "", err);
  case CFG_INT:
  case CFG_NUM:
  case CFG_SIZE:
    return check_number(doc, key, item, err);
  case CFG_BOOL:
    return cJSON_IsBool(item) ? 0 : type_error(doc, key, item, "", err);
  case CFG_STR:
    return check_string(doc, key, item, err);
  case CFG_ENUM:
    return check_enum(doc, key, item, err);
  case CFG_INT3:
  case CFG_INTS:
    return check_int_array(doc, key, item, err);
  }
  return 0;
}

static int unknown_key_error(const config_doc_t *doc, const char *parent, const char *name,
                             const char *full, npu_err_t *err) {
  const char *hint = cfg_schema_suggest(doc->schema, parent, strlen(parent), name, NULL);
  char hint_text[CFG_PATH_MAX + 32] = "";
  if (hint)
    snprintf(hint_text, sizeof hint_text, " (did you mean \"%s\"?)", hint);
  return npu_err_set(err, "%s: %s: expected a key of %s, found unknown key \"%s\"%s",
                     cfg_doc_blame(doc, full), full, parent[0] ? parent : "the top level", name,
                     hint_text);
}

/* A "<key>_source" note must annotate a value key of the same object. */
static int check_source_note(const config_doc_t *doc, const char *parent, const cJSON *item,
                             const char *full, npu_err_t *err) {
  char target[CFG_PATH_MAX];
  snprintf(target, sizeof target, "%.*s", (int)(strlen(full) - strlen(CFG_SOURCE_SUFFIX)), full);
  const cfg_key_t *k = cfg_schema_find(doc->schema, target);
  if (!k || k->type == CFG_OBJECT)
    return unknown_key_error(doc, parent, item->string, full, err);
  if (!cJSON_IsString(item)) {
    char found[128];
    jsonfile_describe(item, found, sizeof found);
    return npu_err_set(err, "%s: %s: expected a string (where %s comes from), found %s",
                       cfg_doc_blame(doc, full), full, cfg_path_leaf(target), found);
  }
  return 0;
}

/* Adds the default of key to obj. "=path" copies the already resolved value of
 * another key. */
static void add_default(config_doc_t *doc, cJSON *obj, const cfg_key_t *key) {
  cJSON *value;
  if (key->def[0] == '=')
    value = cJSON_Duplicate(cfg_tree_get(doc->root, key->def + 1), 1);
  else
    value = cJSON_Parse(key->def);
  cJSON_AddItemToObject(obj, cfg_path_leaf(key->path), value);
  cfg_doc_set_origin(doc, key->path, CFG_ORIGIN_DEFAULT);
}

static int resolve_object(config_doc_t *doc, const char *path, cJSON *obj, npu_err_t *err);

/* Fills what the object at path lacks: defaults, required sections (so their own
 * defaults fill and their required keys are reported). */
static int fill_missing(config_doc_t *doc, const char *path, cJSON *obj, npu_err_t *err) {
  size_t plen = strlen(path);
  for (size_t i = 0; i < doc->schema->nkeys; i++) {
    const cfg_key_t *key = &doc->schema->keys[i];
    if (!cfg_key_is_child(key, path, plen))
      continue;
    const char *leaf = cfg_path_leaf(key->path);
    if (cJSON_GetObjectItemCaseSensitive(obj, leaf))
      continue;
    if (key->type == CFG_OBJECT) {
      if (key->optional)
        continue;
      cJSON *section = cJSON_AddObjectToObject(obj, leaf);
      if (resolve_object(doc, key->path, section, err))
        return -1;
    } else if (key->def) {
      add_default(doc, obj, key);
    } else {
      char expect[256];
      cfg_key_expectation(key, expect, sizeof expect);
      return npu_err_set(err, "%s: %s: expected %s (required), found no such key",
                         cfg_doc_blame(doc, key->path), key->path, expect);
    }
  }
  return 0;
}

static int resolve_object(config_doc_t *doc, const char *path, cJSON *obj, npu_err_t *err) {
  cJSON *item;
  cJSON_ArrayForEach(item, obj) {
    char full[CFG_PATH_MAX];
    cfg_path_join(full, sizeof full, path, item->string);
    if (ends_with(item->string, CFG_SOURCE_SUFFIX)) {
      if (check_source_note(doc, path, item, full, err))
        return -1;
      continue;
    }
    const cfg_key_t *key = cfg_schema_find(doc->schema, full);
    if (!key)
      return unknown_key_error(doc, path, item->string, full, err);
    if (check_value(doc, key, item, err))
      return -1;
    if (key->type == CFG_OBJECT && resolve_object(doc, full, item, err))
      return -1;
  }
  return fill_missing(doc, path, obj, err);
}

/* Writes one checked value into its struct field, in base units. */
static void fill_key(const cfg_key_t *key, const cJSON *item, char *base) {
  void *field = base + key->offset;
  switch (key->type) {
  case CFG_OBJECT:
    *(bool *)field = item != NULL;
    break;
  case CFG_INT:
    *(int *)field = (int)item->valuedouble;
    break;
  case CFG_NUM:
    *(double *)field = item->valuedouble * key->to_base;
    break;
  case CFG_SIZE:
    *(uint64_t *)field = (uint64_t)(item->valuedouble * key->to_base);
    break;
  case CFG_BOOL:
    *(bool *)field = cJSON_IsTrue(item);
    break;
  case CFG_STR:
    if (key->convert)
      key->convert(item->valuestring, field);
    else
      snprintf((char *)field, (size_t)key->max + 1, "%s", item->valuestring);
    break;
  case CFG_ENUM:
    for (int i = 0; i < key->nchoices; i++)
      if (strcmp(item->valuestring, cfg_key_choice(key, i)) == 0)
        *(int *)field = i;
    break;
  case CFG_INT3:
  case CFG_INTS: {
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, item) ((int *)field)[i++] = (int)e->valuedouble;
    if (key->type == CFG_INTS)
      *(int *)(base + key->count_offset) = i;
    break;
  }
  }
}

/* True if key lies in an optional section that the document does not have. */
static bool in_absent_section(const config_doc_t *doc, const cfg_key_t *key) {
  char parent[CFG_PATH_MAX];
  snprintf(parent, sizeof parent, "%s", key->path);
  for (size_t n = cfg_path_parent_len(parent); n > 0; n = cfg_path_parent_len(parent)) {
    parent[n] = '\0';
    if (!cfg_tree_get(doc->root, parent))
      return true;
  }
  return false;
}

int cfg_resolve_keys(config_doc_t *doc, void *out, npu_err_t *err) {
  memset(out, 0, doc->schema->struct_size); /* fields of absent sections read as zero */
  if (resolve_object(doc, "", doc->root, err))
    return -1;
  for (size_t i = 0; i < doc->schema->nkeys; i++) {
    const cfg_key_t *key = &doc->schema->keys[i];
    if (key->offset == CFG_NO_FIELD)
      continue;
    const cJSON *item = cfg_tree_get(doc->root, key->path);
    if (item || key->type == CFG_OBJECT)
      fill_key(key, item, out);
    else if (!in_absent_section(doc, key))
      return npu_err_set(err, "%s: %s: internal error: resolved value missing", doc->file,
                         key->path);
  }
  return cfg_rules_check(doc, out, err);
}

static const cfg_key_t *number_key(const char *path, npu_err_t *err) {
  const cfg_key_t *key = cfg_schema_find(cfg_schema_get(CONFIG_SYSTEM), path);
  if (!key || key->type != CFG_NUM || key->offset == CFG_NO_FIELD) {
    npu_err_set(err, "%.200s: expected a number key of the system config (e.g. "
                "chip.hbm.efficiency), found %s", path, key ? "a key of another type" : "none");
    return NULL;
  }
  return key;
}

int config_system_number(const system_cfg_t *sys, const char *path, double *value, double *lo,
                         double *hi, bool *lo_excl, npu_err_t *err) {
  const cfg_key_t *key = number_key(path, err);
  if (!key)
    return -1;
  *value = *(const double *)((const char *)sys + key->offset) / key->to_base;
  *lo = key->min;
  *hi = key->max;
  *lo_excl = key->min_exclusive;
  return 0;
}

int config_system_set_number(system_cfg_t *sys, const char *path, double value, npu_err_t *err) {
  const cfg_key_t *key = number_key(path, err);
  if (!key)
    return -1;
  if (!isfinite(value) || !in_range(key, value)) {
    char expect[256];
    cfg_key_expectation(key, expect, sizeof expect);
    return npu_err_set(err, "%s: expected %s, found %g", path, expect, value);
  }
  *(double *)((char *)sys + key->offset) = value * key->to_base;
  return 0;
}

const char *config_doc_source_note(const config_doc_t *doc, const char *path) {
  char note[CFG_PATH_MAX];
  snprintf(note, sizeof note, "%s%s", path, CFG_SOURCE_SUFFIX);
  const cJSON *item = cfg_tree_get(doc->root, note);
  return cJSON_IsString(item) ? item->valuestring : NULL;
}

int config_system_number_paths(const char *prefix, const char **out, int max) {
  const cfg_schema_t *schema = cfg_schema_get(CONFIG_SYSTEM);
  int n = 0;
  for (size_t i = 0; i < schema->nkeys && n < max; i++) {
    const cfg_key_t *key = &schema->keys[i];
    if (key->type == CFG_NUM && key->offset != CFG_NO_FIELD &&
        strncmp(key->path, prefix, strlen(prefix)) == 0)
      out[n++] = key->path;
  }
  return n;
}
