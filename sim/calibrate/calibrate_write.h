/* calibrate_write.h - the fitted config a calibration writes: a system config
 * that extends the measured system by its path relative to the new file and
 * gives each parameter the fit moved, with a "[cal]" source note naming the
 * measurements and the fitted error. Parameters the fit left alone keep the
 * system's own value and note. */
#ifndef NPUSIM_CALIBRATE_WRITE_H
#define NPUSIM_CALIBRATE_WRITE_H

#include "calibrate_run.h"
#include "npu_err.h"

/* Returned when the file could not be written (or the fit ran off to a
 * non-finite value): an internal error, not bad input. */
#define CAL_CANNOT_WRITE (-2)

/* Writes the fitted config of r to path, extending system_path; whole or not
 * at all, and the run's deadline (time_limit.h) ends before it is written.
 * Returns 0, -1 with the reason in err (path's folder does not exist), or
 * CAL_CANNOT_WRITE with the reason in err. */
int cal_write_config(const char *path, const char *system_path, const cal_opts_t *o,
                     const cal_result_t *r, npu_err_t *err);

/* A key of the config (its dotted path) and its value. */
typedef struct {
  const char *path;
  double value;
} cal_value_t;

/* The same for any fit: the config extending system_path with these values,
 * each with note as its source ("[cal] fitted to ..."). */
int cal_write_values(const char *path, const char *system_path, const cal_value_t *values, int n,
                     const char *note, npu_err_t *err);

#endif
