/* config_print.c - printing configs and the schema: canonical JSON of a resolved
 * document, rows with provenance, and the key reference (docs/config.md).
 *
 * Canonical means: keys in schema order, every default present, numbers in
 * their shortest round-trip form, no "extends" and no "_source" notes. Loading
 * the output back gives the same structs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_doc.h"
#include "out_format.h"

/* A resolved value as JSON text (no objects). */
static void print_value(FILE *out, const cfg_key_t *key, const cJSON *item) {
  char num[64];
  switch (key->type) {
  case CFG_INT:
  case CFG_NUM:
  case CFG_SIZE:
    jsonfile_format_number(item->valuedouble, num, sizeof num);
    fputs(num, out);
    break;
  case CFG_BOOL:
    fputs(cJSON_IsTrue(item) ? "true" : "false", out);
    break;
  case CFG_STR:
  case CFG_ENUM:
    jsonfile_write_string(out, item->valuestring);
    break;
  case CFG_INT3:
  case CFG_INTS: {
    const cJSON *e;
    const char *sep = "";
    fputc('[', out);
    cJSON_ArrayForEach(e, item) {
      jsonfile_format_number(e->valuedouble, num, sizeof num);
      fprintf(out, "%s%s", sep, num);
      sep = ", ";
    }
    fputc(']', out);
    break;
  }
  case CFG_OBJECT:
    break;
  }
}

#define INDENT 2

static void print_object(const config_doc_t *doc, FILE *out, const char *path, int depth) {
  size_t plen = strlen(path);
  const char *sep = "";
  fputc('{', out);
  for (size_t i = 0; i < doc->schema->nkeys; i++) {
    const cfg_key_t *key = &doc->schema->keys[i];
    if (!cfg_key_is_child(key, path, plen))
      continue;
    const cJSON *item = cfg_tree_get(doc->root, key->path);
    if (!item)
      continue; /* an optional section the config does not have */
    fprintf(out, "%s\n%*s", sep, (depth + 1) * INDENT, "");
    jsonfile_write_string(out, cfg_path_leaf(key->path));
    fputs(": ", out);
    if (key->type == CFG_OBJECT)
      print_object(doc, out, key->path, depth + 1);
    else
      print_value(out, key, item);
    sep = ",";
  }
  fprintf(out, "\n%*s}", depth * INDENT, "");
}

void config_doc_print_json(const config_doc_t *doc, FILE *out, int depth) {
  print_object(doc, out, "", depth);
}

char *config_doc_json_string(const config_doc_t *doc) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f)
    return NULL;
  config_doc_print_json(doc, f, 0);
  fclose(f);
  return buf;
}

/* ---- rows with provenance ---- */

#define TABLE_VALUE_MAX 40 /* longer values (descriptions) are cut in tables, not in CSV */

typedef struct {
  const char *key, *unit, *origin, *source;
  char *value; /* JSON text of the value, owned */
} row_t;

static void collect_row(const config_doc_t *doc, const cfg_key_t *key, const cJSON *item,
                        bool csv, row_t *row) {
  size_t len = 0;
  FILE *mem = open_memstream(&row->value, &len);
  if (csv && cJSON_IsString(item))
    fputs(item->valuestring, mem); /* CSV quotes on its own terms */
  else
    print_value(mem, key, item);
  fclose(mem);
  if (!csv && len > TABLE_VALUE_MAX)
    strcpy(row->value + TABLE_VALUE_MAX - 3, "...");
  row->key = key->path;
  row->unit = key->unit;
  row->origin = cfg_doc_origin(doc, key->path);
  char note[CFG_PATH_MAX];
  snprintf(note, sizeof note, "%s%s", key->path, CFG_SOURCE_SUFFIX);
  const cJSON *src = cfg_tree_get(doc->root, note);
  row->source = cJSON_IsString(src) ? src->valuestring : "";
}

void config_doc_print_rows(const config_doc_t *doc, FILE *out, bool csv) {
  row_t *rows = calloc(doc->schema->nkeys, sizeof *rows);
  size_t n = 0;
  int wk = 3, wv = 5, wu = 4, wo = 4;
  for (size_t i = 0; i < doc->schema->nkeys; i++) {
    const cfg_key_t *key = &doc->schema->keys[i];
    const cJSON *item = cfg_tree_get(doc->root, key->path);
    if (key->type == CFG_OBJECT || !item)
      continue;
    row_t *r = &rows[n++];
    collect_row(doc, key, item, csv, r);
#define WIDEN(w, s) if ((int)strlen(s) > w) w = (int)strlen(s)
    WIDEN(wk, r->key);
    WIDEN(wv, r->value);
    WIDEN(wu, r->unit);
    WIDEN(wo, r->origin);
#undef WIDEN
  }
  if (csv)
    fprintf(out, "config,key,value,unit,from,source\n");
  else
    fprintf(out, "%-*s  %-*s  %-*s  %-*s  %s\n", wk, "key", wv, "value", wu, "unit", wo, "from",
            "source");
  for (size_t i = 0; i < n; i++) {
    const row_t *r = &rows[i];
    if (csv) {
      out_csv_field(out, doc->schema->name, ",");
      out_csv_field(out, r->key, ",");
      out_csv_field(out, r->value, ",");
      out_csv_field(out, r->unit, ",");
      out_csv_field(out, r->origin, ",");
      out_csv_field(out, r->source, "\n");
    } else {
      fprintf(out, "%-*s  %-*s  %-*s  %-*s  %s\n", wk, r->key, wv, r->value, wu, r->unit, wo,
              r->origin, r->source);
    }
    free(rows[i].value);
  }
  free(rows);
}

/* ---- the schema reference ---- */

static const char *type_name(const cfg_key_t *key) {
  switch (key->type) {
  case CFG_OBJECT:
    return key->optional ? "section (optional)" : "section";
  case CFG_INT:
    return "integer";
  case CFG_NUM:
  case CFG_SIZE:
    return "number";
  case CFG_BOOL:
    return "boolean";
  case CFG_STR:
    return "string";
  case CFG_ENUM:
    return "enum";
  case CFG_INT3:
    return "3 integers";
  case CFG_INTS:
    return "integers";
  }
  return "?";
}

static void accepted_text(const cfg_key_t *key, char *buf, size_t len) {
  if (key->type == CFG_OBJECT || key->type == CFG_BOOL)
    buf[0] = '\0';
  else
    cfg_key_expectation(key, buf, len);
}

static void default_text(const cfg_key_t *key, char *buf, size_t len) {
  if (key->type == CFG_OBJECT)
    snprintf(buf, len, "%s", "");
  else if (!key->def)
    snprintf(buf, len, "required");
  else if (key->def[0] == '=')
    snprintf(buf, len, "same as `%s`", key->def + 1);
  else
    snprintf(buf, len, "`%s`", key->def);
}

void config_schema_print_markdown(FILE *out) {
  fputs("# Config reference\n\n"
        "Generated by `npusim schema` from the key table in `sim/config/config_schema.c`; do not edit.\n"
        "Every key's unit is in its name. Any key may be overridden with\n"
        "`--set dotted.path=value`. Next to any value key `k` a config may carry a string\n"
        "`k_source` saying where the value comes from; `npusim validate` shows it.\n"
        "A config may start from another with `\"extends\": \"relative/path.json\"`\n"
        "(at most 16 extends in a chain). Strings are printable UTF-8: no control\n"
        "characters, no `\\u0000`.\n",
        out);
  for (int kind = 0; kind < CONFIG_KIND_COUNT; kind++) {
    const cfg_schema_t *s = cfg_schema_get((config_kind_t)kind);
    fprintf(out, "\n## %s config\n\n", s->name);
    fputs("| key | type | unit | default | accepted | meaning |\n|---|---|---|---|---|---|\n", out);
    for (size_t i = 0; i < s->nkeys; i++) {
      const cfg_key_t *key = &s->keys[i];
      char def[128], acc[256];
      default_text(key, def, sizeof def);
      accepted_text(key, acc, sizeof acc);
      fprintf(out, "| `%s` | %s | %s | %s | %s | %s |\n", key->path, type_name(key), key->unit,
              def, acc, key->doc);
    }
  }
}

void config_schema_print_json(FILE *out) {
  fputs("[", out);
  const char *sep = "";
  for (int kind = 0; kind < CONFIG_KIND_COUNT; kind++) {
    const cfg_schema_t *s = cfg_schema_get((config_kind_t)kind);
    for (size_t i = 0; i < s->nkeys; i++) {
      const cfg_key_t *key = &s->keys[i];
      char def[128], acc[256];
      default_text(key, def, sizeof def);
      accepted_text(key, acc, sizeof acc);
      fprintf(out, "%s\n  {\"config\": \"%s\", \"key\": ", sep, s->name);
      jsonfile_write_string(out, key->path);
      fprintf(out, ", \"type\": \"%s\", \"unit\": ", type_name(key));
      jsonfile_write_string(out, key->unit ? key->unit : "");
      fputs(", \"default\": ", out);
      jsonfile_write_string(out, def);
      fputs(", \"accepted\": ", out);
      jsonfile_write_string(out, acc);
      fputs(", \"meaning\": ", out);
      jsonfile_write_string(out, key->doc);
      fputs("}", out);
      sep = ",";
    }
  }
  fputs("\n]\n", out);
}

int config_doc_json_loadable(const config_doc_t *doc, npu_err_t *err) {
  if (doc->json_refusal)
    return npu_err_set(err, "%s", doc->json_refusal);
  return 0;
}
