/* fuzz_config.c - libFuzzer target for the config loader.
 *
 * Input: byte 0 picks the config kind (even: system, odd: workload); the rest
 * is the JSON text, optionally followed by "\n--set " and one override. The
 * target parses, applies the override and resolves; whatever the input, that
 * must end in success or a one-line error, never a crash, leak or hang. When a
 * config resolves, its canonical JSON must load back to the same JSON (the
 * round-trip property of `npusim validate --format json`). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "npu_err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Loads text, applies set (may be NULL) and resolves; NULL on a rejected input. */
static config_doc_t *load(config_kind_t kind, const char *text, size_t len, const char *set) {
  union {
    system_cfg_t s;
    workload_cfg_t w;
  } cfg;
  npu_err_t err;
  config_doc_t *doc = config_doc_parse(kind, "fuzz.json", "/nonexistent", text, len, &err);
  if (doc && ((set && config_doc_set(doc, set, &err)) || config_doc_resolve(doc, &cfg, &err))) {
    config_doc_free(doc);
    doc = NULL;
  }
  if (!doc && !npu_err_one_line(err.msg))
    abort(); /* every rejection is exactly one non-empty line, as printed */
  return doc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  config_kind_t kind = (data[0] & 1) ? CONFIG_WORKLOAD : CONFIG_SYSTEM;
  char *text = malloc(size);
  memcpy(text, data + 1, size - 1);
  text[size - 1] = '\0';
  size_t len = size - 1;
  const char *set = NULL;
  char *marker = memmem(text, len, "\n--set ", 7);
  if (marker) {
    *marker = '\0';
    set = marker + 7;
    len = (size_t)(marker - text);
  }
  config_doc_t *doc = load(kind, text, len, set);
  if (doc) {
    char *first = config_doc_json_string(doc);
    config_doc_t *again = load(kind, first, strlen(first), NULL);
    if (!again)
      abort(); /* canonical output must load */
    char *second = config_doc_json_string(again);
    if (strcmp(first, second) != 0)
      abort(); /* and print the same */
    free(first);
    free(second);
    config_doc_free(again);
    config_doc_free(doc);
  }
  free(text);
  return 0;
}
