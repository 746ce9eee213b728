/* outfile.h - writing an output file of any size, all or nothing.
 *
 * A regular file (or a new one) is written through a temporary file next to
 * it, renamed into place only when everything was written, so the target is
 * either complete or untouched; it keeps its mode (a new one gets 0666 less the
 * umask), and a symlink is followed and stays a symlink. A device or FIFO is
 * written in place, and "-" is stdout. Bytes go out through a buffered stream
 * in chunks of bounded size, through gzip when asked, and every write and
 * close is checked: memory stays bounded whatever the file's size, and no
 * failure (a full disk, a file size limit) passes silently. The temporary file
 * is removed on every failure and on SIGINT, SIGTERM and SIGHUP; its name,
 * TARGET.npusim-PID-N.tmp, lets a later run remove what a killed one (SIGKILL)
 * left: the files so named beside a target whose process is gone.
 *
 * Staging makes the outputs of a run one set: between outfile_stage_begin and
 * outfile_stage_publish, a committed file waits as its temporary file, and
 * publishing renames them all (and removes the files the set replaces, such as
 * a Chakra export's ranks past the new count) with the signals blocked;
 * outfile_stage_discard, a failure or a signal removes them all. What is
 * written in place (a device, a FIFO, stdout) cannot wait: it is written at
 * commit. Not covered: a rename that fails after others succeeded (the
 * directory gone or made read-only meanwhile) leaves those others new. */
#ifndef NPUSIM_OUTFILE_H
#define NPUSIM_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "npu_err.h"

typedef struct outfile outfile_t;

/* Bytes handed to write() or gzwrite() at a time (zlib takes at most 2^31 - 1). */
#define OUTFILE_CHUNK_BYTES (1u << 20)

/* Opens path for writing, gzip-compressed if gzip is set; chunk_bytes bounds
 * each write (0: OUTFILE_CHUNK_BYTES). Returns NULL with "PATH: cannot write:
 * REASON" in err. */
outfile_t *outfile_open(const char *path, bool gzip, size_t chunk_bytes, npu_err_t *err);

/* The stream to print to. Its errors are kept and reported by outfile_commit. */
FILE *outfile_stream(outfile_t *f);

/* Bytes printed so far (before compression). */
unsigned long long outfile_bytes(const outfile_t *f);

/* Flushes, closes and renames into place; frees f. Returns 0, or -1 with "PATH:
 * cannot write: REASON" in err (nothing left behind). */
int outfile_commit(outfile_t *f, npu_err_t *err);

/* Discards what was written (the target stays untouched); frees f. */
void outfile_abort(outfile_t *f);

/* Writes len bytes of data to path at once: outfile_open, one write, commit. */
int outfile_write_all(const char *path, const char *data, size_t len, bool gzip, npu_err_t *err);

/* Copies path's directory into dir ("." when it names none, "/" for the root)
 * and returns its base name, a pointer into path. */
const char *outfile_split_path(const char *path, char *dir, size_t dir_len);

/* Whether path names a gzip output (ends in ".gz"). */
bool outfile_is_gz(const char *path);

/* Starts staging; returns false (and does nothing) if it was already started,
 * so that a writer of several files (chakra_write) stages them itself only
 * when its caller does not. */
bool outfile_stage_begin(void);

/* While staging: path is removed when the staged files are published (a file
 * of an output set that this run's set no longer has). 0, or -1 out of memory. */
int outfile_stage_remove(const char *path);

/* While staging: 0 if no staged file replaces an input that jsonfile_read read
 * (the same file, by device and inode, whatever the name or link) or another
 * staged file, and no file to remove is an input; else -1 with "PATH:
 * expected ..., found ..." in err (bad input: nothing may be published). */
int outfile_stage_check(npu_err_t *err);

/* Renames every staged file into place and removes the files marked; ends
 * staging. Returns 0, or -1 with "PATH: cannot write: REASON" in err (the
 * staged files not yet renamed are removed). 0 when not staging. */
int outfile_stage_publish(npu_err_t *err);

/* Removes every staged file (the targets stay untouched) and ends staging. */
void outfile_stage_discard(void);

/* Removes the temporary files being written and staged, if any. Async-signal-safe: for
 * another signal handler that ends the process with _exit (--time-limit's),
 * which would otherwise leave the file behind. */
void outfile_remove_pending(void);

#endif
