/* faults.c - parsing link faults; applying them is topo.c's (topo_build). */
#include "faults.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int faults_parse(const char *text, link_faults_t *out) {
  int n = 0;
  const char *p = text;
  while (*p) {
    size_t len = strcspn(p, ":,");
    if (len == 0 || len >= FAULTS_NAME_MAX || p[len] != ':' || n == FAULTS_MAX)
      return -1;
    for (size_t i = 0; i < len; i++)
      if (!isalnum((unsigned char)p[i]) && p[i] != '.' && p[i] != '-' && p[i] != '_')
        return -1;
    memcpy(out->v[n].link, p, len);
    out->v[n].link[len] = '\0';
    char *end;
    errno = 0;
    double f = strtod(p + len + 1, &end);
    if (end == p + len + 1 || errno || !(f == 0 || (f >= FAULTS_MIN_FACTOR && f <= 1)))
      return -1;
    out->v[n].factor = f;
    out->v[n].at_s = 0;
    if (*end == '@') {
      const char *at = end + 1;
      double t = strtod(at, &end);
      /* no errno: a T that underflows (1e-310) is a time after 0 all the same */
      if (end == at || !(t >= 0 && t <= FAULTS_MAX_AT_S) || isspace((unsigned char)*at))
        return -1;
      out->v[n].at_s = t;
    }
    /* "@0" is the fault from the start, exactly: no change in time, no mark */
    out->v[n].timed = out->v[n].at_s > 0;
    if (*end && *end != ',')
      return -1;
    n++;
    p = end;
    if (*p == ',' && !*++p)
      return -1;
  }
  out->n = n;
  return 0;
}
