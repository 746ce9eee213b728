/* config_schema.h - the one table that describes every config key.
 *
 * The loader validates and converts with it, `npusim schema` and docs/config.md
 * are generated from it, --set is typed by it: the three cannot drift. Internal
 * to the config loader (sim/config*.c). */
#ifndef NPUSIM_CONFIG_SCHEMA_H
#define NPUSIM_CONFIG_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

typedef enum {
  CFG_OBJECT, /* a section; field: its bool presence flag (optional sections) */
  CFG_INT,    /* whole number; field: int */
  CFG_NUM,    /* number x to_base; field: double */
  CFG_SIZE,   /* number x to_base, a whole number of bytes; field: uint64_t */
  CFG_BOOL,   /* true/false; field: bool */
  CFG_STR,    /* string of at most max chars; field: char[max + 1], or parsed by convert */
  CFG_ENUM,   /* one of choices; field: int-sized enum */
  CFG_INT3,   /* array of 3 whole numbers; field: int[3] */
  CFG_INTS,   /* array of 0 to items whole numbers; field: int[items], count: int */
} cfg_type_t;

#define CFG_NO_FIELD ((size_t)-1)

#define CFG_CONVERT_MAX_BYTES 4096

typedef struct {
  const char *path;              /* dotted JSON path, e.g. "chip.hbm.bandwidth_GBps" */
  cfg_type_t type;
  const char *unit;              /* unit of the JSON value, for the docs ("GB/s") */
  double to_base;                /* JSON value x to_base = struct value in base units */
  double min, max;               /* inclusive range of the JSON value (STR: length) */
  bool min_exclusive;            /* the lower bound itself is not allowed */
  bool zero_ok;                  /* 0 is allowed besides [min, max] (0 = off, none) */
  bool optional;                 /* CFG_OBJECT: the section may be absent */
  const char *def;               /* default as JSON text; "=path" copies that key;
                                    NULL: required */
  const char *const *choices;    /* CFG_ENUM names, indexed by the enum, or NULL: */
  const char *(*choice_name)(int i); /* the name of value i (a column of a table) */
  int nchoices;
  int (*convert)(const char *text, void *field); /* CFG_STR parser into a field of at most
                                                  * CFG_CONVERT_MAX_BYTES, or NULL */
  const char *convert_expect;    /* what convert accepts, for error messages */
  int items;                     /* CFG_INTS: at most this many numbers */
  size_t count_offset;           /* CFG_INTS: the int field that receives how many */
  size_t offset;                 /* field in the target struct, or CFG_NO_FIELD */
  const char *doc;               /* meaning, one sentence */
} cfg_key_t;

typedef struct {
  config_kind_t kind;
  const char *name;              /* "system", "workload" */
  const cfg_key_t *keys;
  size_t nkeys;
  size_t struct_size;            /* sizeof the struct the keys fill */
} cfg_schema_t;

/* The schema of a config kind. */
const cfg_schema_t *cfg_schema_get(config_kind_t kind);

/* The entry for an exact dotted path, or NULL. */
const cfg_key_t *cfg_schema_find(const cfg_schema_t *schema, const char *path);

/* Length of the parent part of a path ("chip.hbm" for "chip.hbm.bandwidth_GBps",
 * 0 for a root key). */
size_t cfg_path_parent_len(const char *path);

/* The last segment of a path. */
const char *cfg_path_leaf(const char *path);

/* True if key is a direct child of the object at parent (length parent_len). */
bool cfg_key_is_child(const cfg_key_t *key, const char *parent, size_t parent_len);

/* The one of names[0..n) closest to name by the same measure as
 * cfg_schema_suggest, or NULL if none is close enough to suggest (commands,
 * --set's system./workload. prefixes). *distance as there. */
const char *cfg_suggest_name(const char *name, const char *const *names, size_t n, int *distance);

/* The known child name of parent closest to name (edit distance, ignoring
 * case), or NULL if none is close enough to suggest. *distance (if not NULL)
 * receives the distance of the closest name. */
const char *cfg_schema_suggest(const cfg_schema_t *schema, const char *parent,
                               size_t parent_len, const char *name, int *distance);

/* The name of value i of an enum key (0 <= i < nchoices). */
const char *cfg_key_choice(const cfg_key_t *key, int i);

/* The choice of an enum key closest to name, or NULL if none is close. */
const char *cfg_key_suggest_choice(const cfg_key_t *key, const char *name);

/* Describes what the key accepts ("an integer in [1, 4096]") into buf. */
void cfg_key_expectation(const cfg_key_t *key, char *buf, size_t len);

#endif
