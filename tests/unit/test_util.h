/* test_util.h - helpers shared by the config tests: load a config from text and
 * return its error line, write scratch files into a temporary directory. */
#ifndef NPUSIM_TEST_UTIL_H
#define NPUSIM_TEST_UTIL_H

#include "config.h"
#include "jsonfile.h"

/* The repository root and the shipped system configs, from CMake. */
#define SYSTEMS_DIR NPUSIM_SOURCE_DIR "/configs/systems"
#define WORKLOADS_DIR NPUSIM_SOURCE_DIR "/configs/workloads"

/* Loads text as a config named "t.json" in dir (extends resolve there), applies
 * the NULL-terminated overrides, resolves into out. Returns the error line, or
 * "" on success (static buffer). */
const char *load_text(config_kind_t kind, const char *dir, const char *text,
                      const char *const *sets, void *out);

/* Same, returning the resolved document (caller frees) or NULL with *err set. */
config_doc_t *load_text_doc(config_kind_t kind, const char *dir, const char *text,
                            const char *const *sets, void *out, npu_err_t *err);

/* A shipped system config (file name in configs/systems) with overrides
 * (NULL-terminated, may be NULL), resolved; a CUnit assertion checks it loads. */
system_cfg_t load_system(const char *name, const char *const *sets);

/* A fresh temporary directory (static buffer) and a file written into it. */
const char *make_temp_dir(void);
void write_file(const char *dir, const char *name, const char *text);

/* A trace of `ranks` ranks with the given communicators and programs, as JSON
 * text (static buffer). */
const char *trace_text(int ranks, const char *comms, const char *programs);

/* Removes a directory made by make_temp_dir and everything in it. */
void remove_temp_dir(const char *dir);

/* Prints a resolved document's rows as CSV into a string the caller frees. */
char *rows_csv(const config_doc_t *doc);

#endif
