/* test_util.c - see test_util.h. */
#include "test_util.h"

#include <CUnit/CUnit.h>

#include <stdio.h>
#include <stdlib.h>
#include <ftw.h>
#include <string.h>

config_doc_t *load_text_doc(config_kind_t kind, const char *dir, const char *text,
                            const char *const *sets, void *out, npu_err_t *err) {
  err->msg[0] = '\0';
  config_doc_t *doc = config_doc_parse(kind, "t.json", dir, text, strlen(text), err);
  if (!doc)
    return NULL;
  for (int i = 0; sets && sets[i]; i++)
    if (config_doc_set(doc, sets[i], err))
      goto fail;
  if (config_doc_resolve(doc, out, err))
    goto fail;
  return doc;
fail:
  config_doc_free(doc);
  return NULL;
}

const char *load_text(config_kind_t kind, const char *dir, const char *text,
                      const char *const *sets, void *out) {
  static npu_err_t err;
  config_doc_free(load_text_doc(kind, dir, text, sets, out, &err));
  return err.msg;
}

system_cfg_t load_system(const char *name, const char *const *sets) {
  system_cfg_t s;
  char text[128];
  snprintf(text, sizeof text, "{\"extends\": \"%s\"}", name);
  CU_ASSERT_STRING_EQUAL(load_text(CONFIG_SYSTEM, SYSTEMS_DIR, text, sets, &s), "");
  return s;
}

const char *trace_text(int ranks, const char *comms, const char *programs) {
  static char buf[8192];
  snprintf(buf, sizeof buf,
           "{\"format\": \"npusim-trace\", \"version\": 1, \"ranks\": %d, "
           "\"communicators\": [%s], \"programs\": [%s]}", ranks, comms, programs);
  return buf;
}

const char *make_temp_dir(void) {
  static char dir[64];
  snprintf(dir, sizeof dir, "/tmp/npusim-test-XXXXXX");
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    exit(1);
  }
  return dir;
}

void write_file(const char *dir, const char *name, const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
    perror(path);
    exit(1);
  }
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

void remove_temp_dir(const char *dir) { nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS); }

char *rows_csv(const config_doc_t *doc) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  config_doc_print_rows(doc, f, true);
  fclose(f);
  return buf;
}
