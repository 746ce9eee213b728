/* coll_matrix.c - the sizes `npusim coll` runs and alltoallv's byte matrix:
 * parsed from their text and file here, run in coll_run.c. */
#include "coll_matrix.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonfile.h"

const char *const coll_nccl_type_names[CHIP_DTYPE_COUNT] = {"half", "bfloat16", "float", "int8",
                                                            "f8e4m3"};

bool coll_nccl_sliced(coll_op_t op) {
  return op == COLL_ALLGATHER || op == COLL_REDUCESCATTER || op == COLL_ALLTOALL ||
         op == COLL_ALLTOALLV;
}

/* "64M", "1G", "4096", "1.5K": bytes, suffixes powers of 1024. */
static int parse_bytes(const char *text, double *out) {
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (end == text || errno || !isfinite(v))
    return -1;
  const char *units = "KMGT";
  const char *u = *end ? strchr(units, *end) : NULL;
  if (u && *end) {
    v *= pow(1024.0, (double)(u - units + 1));
    end++;
    if (*end == 'i')
      end++;
    if (*end == 'B')
      end++;
  } else if (*end == 'B') {
    end++;
  }
  if (*end || v < 1 || v > 1e15)
    return -1;
  *out = v;
  return 0;
}

int coll_matrix_sizes(coll_matrix_t *m, const char *text, npu_err_t *err) {
  char buf[128];
  snprintf(buf, sizeof buf, "%s", text);
  char *parts[3] = {buf, NULL, NULL};
  for (int i = 1; i < 3; i++) {
    char *colon = parts[i - 1] ? strchr(parts[i - 1], ':') : NULL;
    if (colon) {
      *colon = '\0';
      parts[i] = colon + 1;
    }
  }
  double lo, hi, factor = 2;
  char *fend = NULL;
  if (parse_bytes(parts[0], &lo) || (parts[1] ? parse_bytes(parts[1], &hi) : (hi = lo, 0)) ||
      (parts[2] && ((factor = strtod(parts[2], &fend)) <= 1 || *fend || !isfinite(factor))) ||
      hi < lo)
    return npu_err_set(err,
                       "--sizes: expected SIZE or MIN:MAX[:FACTOR] with sizes >= 1 byte "
                       "(K, M, G, T suffixes), MIN <= MAX and FACTOR > 1, found \"%.60s\"",
                       text);
  m->nsizes = 0;
  m->factor = factor;
  for (double s = lo; s <= hi * (1 + 1e-12); s *= factor) {
    if (m->nsizes == COLL_MATRIX_MAX_SIZES)
      return npu_err_set(err, "--sizes: expected at most %d sizes, found more in \"%.60s\"",
                         COLL_MATRIX_MAX_SIZES, text);
    m->sizes[m->nsizes++] = round(s);
  }
  return 0;
}

/* --style nccl-tests runs and prints each size as nccl-tests does (setupArgs
 * and getCollByteCount in its src/): count = size / sizeof(type) elements,
 * cut to count / ranks per rank where the size is all ranks' slices; the row's
 * size is then max(send, receive bytes): count x sizeof(type), or count /
 * ranks x ranks x sizeof(type). So size and count agree and the times are the
 * printed size's. A size of no element per rank is refused. (alltoallv's size
 * is its matrix's mean, kept.) */
int coll_matrix_nccl_sizes(coll_matrix_t *m, npu_err_t *err) {
  if (m->op == COLL_ALLTOALLV)
    return 0;
  double esize = chip_dtype_bytes(m->dtype), per = coll_nccl_sliced(m->op) ? m->ranks : 1;
  for (int i = 0; i < m->nsizes; i++) {
    double count = floor(floor(m->sizes[i] / esize) / per);
    if (count < 1)
      return npu_err_set(err,
                         "--sizes: expected at least %.0f bytes with --style nccl-tests (one "
                         "%s element%s), found %.0f",
                         esize * per, coll_nccl_type_names[m->dtype], per > 1 ? " per rank" : "",
                         m->sizes[i]);
    m->sizes[i] = count * per * esize;
  }
  return 0;
}

/* --matrix FILE: a JSON array of `ranks` arrays of `ranks` byte counts. */
#define MATRIX_MAX_BYTES (256L * 1024 * 1024)
static int read_matrix(const char *path, int ranks, double **out, npu_err_t *err) {
  char why[256];
  size_t len;
  char *text = jsonfile_read(path, MATRIX_MAX_BYTES, &len, why, sizeof why);
  if (!text)
    return npu_err_set(err, "%s: expected a readable JSON matrix file, found %s", path, why);
  cJSON *root = cJSON_ParseWithLength(text, len);
  free(text);
  int rc = 0;
  if (!cJSON_IsArray(root) || cJSON_GetArraySize(root) != ranks) {
    char found[64];
    if (cJSON_IsArray(root))
      snprintf(found, sizeof found, "%d rows", cJSON_GetArraySize(root));
    else
      snprintf(found, sizeof found, "%s", root ? "another JSON value" : "text that is not JSON");
    rc = npu_err_set(err,
                     "%s: (top level): expected an array of %d rows (one per rank), found "
                     "%s",
                     path, ranks, found);
    goto done;
  }
  *out = calloc((size_t)ranks * ranks, sizeof **out);
  if (!*out) {
    rc = npu_err_set(err,
                     "%s: expected a %d x %d matrix that fits in memory, found no room "
                     "for it; use fewer --ranks",
                     path, ranks, ranks);
    goto done;
  }
  for (int i = 0; i < ranks && rc == 0; i++) {
    const cJSON *row = cJSON_GetArrayItem(root, i);
    if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != ranks) {
      char found[64];
      if (cJSON_IsArray(row))
        snprintf(found, sizeof found, "an array of %d", cJSON_GetArraySize(row));
      else
        snprintf(found, sizeof found, "another value");
      rc = npu_err_set(err, "%s: [%d]: expected an array of %d byte counts, found %s", path, i,
                       ranks, found);
      break;
    }
    for (int j = 0; j < ranks; j++) {
      const cJSON *v = cJSON_GetArrayItem(row, j);
      if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0 ||
          v->valuedouble > 1e15) {
        rc = npu_err_set(err,
                         "%s: [%d][%d]: expected a number of bytes in [0, 1e15], found "
                         "another value",
                         path, i, j);
        break;
      }
      (*out)[i * ranks + j] = v->valuedouble;
    }
  }
  if (rc) {
    free(*out);
    *out = NULL;
  }
done:
  cJSON_Delete(root);
  return rc;
}

int coll_matrix_read_alltoallv(coll_matrix_t *m, const char *path, npu_err_t *err) {
  if (read_matrix(path, m->ranks, &m->alltoallv, err))
    return -1;
  double total = 0;
  for (int i = 0; i < m->ranks * m->ranks; i++)
    total += m->alltoallv[i];
  m->sizes[0] = total / m->ranks; /* mean bytes a rank sends */
  m->nsizes = 1;
  return 0;
}
