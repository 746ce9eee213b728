/* figures.c - numbers of a JSON output by path; see figures.h. */
#include "figures.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonfile.h"

#define PATH_MAX_CHARS 1024

/* One step of a path: a key (written plain or as ["key"]) or an index. Moves
 * *p past it; returns 0, or -1 on a malformed path. */
static int next_step(const char **p, char *key, size_t len, long *index) {
  const char *s = *p;
  *index = -1;
  key[0] = '\0';
  if (*s == '.')
    s++;
  if (s[0] == '[' && s[1] == '"') { /* ["key"] */
    const char *end = strstr(s + 2, "\"]");
    if (!end || (size_t)(end - s - 2) >= len)
      return -1;
    snprintf(key, len, "%.*s", (int)(end - s - 2), s + 2);
    *p = end + 2;
    return 0;
  }
  if (*s == '[') {
    char *end;
    *index = strtol(s + 1, &end, 10);
    if (end == s + 1 || *end != ']' || *index < 0)
      return -1;
    *p = end + 1;
    return 0;
  }
  size_t n = strcspn(s, ".[");
  if (n == 0 || n >= len)
    return -1;
  snprintf(key, len, "%.*s", (int)n, s);
  *p = s + n;
  return 0;
}

int figures_get(const cJSON *root, const char *path, double *value, npu_err_t *err) {
  const cJSON *at = root;
  const char *p = path;
  char key[256], found[128];
  while (*p) {
    long index;
    const char *step = p;
    if (next_step(&p, key, sizeof key, &index))
      return npu_err_set(err, "figure %.200s: expected a path of keys and [indices] "
                         "(rows[0].time_us), found \"%.40s\" at its end", path, step);
    const cJSON *next;
    if (index >= 0) {
      next = cJSON_IsArray(at) ? cJSON_GetArrayItem(at, (int)index) : NULL;
      if (!next)
        return npu_err_set(err, "figure %.200s: expected an element %ld, found %s", path, index,
                           cJSON_IsArray(at) ? "a shorter array" : "no array there");
    } else {
      next = cJSON_IsObject(at) ? cJSON_GetObjectItemCaseSensitive(at, key) : NULL;
      if (!next)
        return npu_err_set(err, "figure %.200s: expected a member \"%.60s\", found %s", path,
                           key, cJSON_IsObject(at) ? "none of that name" : "no object there");
    }
    at = next;
  }
  if (!cJSON_IsNumber(at)) {
    jsonfile_describe(at, found, sizeof found);
    return npu_err_set(err, "figure %.200s: expected a number, found %s", path, found);
  }
  *value = at->valuedouble;
  return 0;
}

/* Whether a key can be written plain in a path. */
static bool plain_key(const char *k) {
  return *k && !strpbrk(k, ".[]\"");
}

static void walk(const cJSON *at, char *path, size_t len, figures_visit_t visit, void *ctx) {
  if (cJSON_IsArray(at) || cJSON_IsObject(at)) {
    int i = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, at) {
      size_t n = strlen(path);
      if (cJSON_IsArray(at))
        snprintf(path + n, len - n, "[%d]", i);
      else if (plain_key(c->string))
        snprintf(path + n, len - n, "%s%s", n ? "." : "", c->string);
      else
        snprintf(path + n, len - n, "[\"%s\"]", c->string);
      walk(c, path, len, visit, ctx);
      path[n] = '\0';
      i++;
    }
    return;
  }
  if (cJSON_IsNumber(at))
    visit(path, at->valuedouble, NULL, ctx);
  else if (cJSON_IsString(at))
    visit(path, 0, at->valuestring, ctx);
  else if (cJSON_IsBool(at))
    visit(path, 0, cJSON_IsTrue(at) ? "true" : "false", ctx);
  else
    visit(path, 0, "null", ctx);
}

void figures_each(const cJSON *root, figures_visit_t visit, void *ctx) {
  char path[PATH_MAX_CHARS] = "";
  walk(root, path, sizeof path, visit, ctx);
}
