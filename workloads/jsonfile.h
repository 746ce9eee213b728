/* jsonfile.h - reading JSON files for configs and traces: plain or gzip (zlib
 * detects which), with errors that give the line and column of bad syntax.
 * Writing: outfile.h. */
#ifndef NPUSIM_JSONFILE_H
#define NPUSIM_JSONFILE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include "npu_err.h"

/* Reads a whole regular file, gunzipping it if it is gzip, NUL-terminated;
 * every input file of npusim is read here. Returns NULL with a reason in why
 * ("No such file or directory", "a directory", "a file over N MiB", "a
 * truncated or corrupt gzip stream (...)") on failure. Anything but a regular
 * file (a FIFO, a device, a file of /proc or /sys) is refused without reading
 * it (jsonfile_check), so a special file can neither block nor be consumed.
 * gzip: one member or several concatenated (RFC 1952), nothing after the last
 * (trailing bytes are refused). max_bytes bounds the bytes read (inflated).
 * The file is remembered as an input (jsonfile_input_of).
 * The path "-" (JSONFILE_STDIN) is standard input, with the same bound and
 * gzip rules: a pipe or a redirected file (not a terminal), read once per
 * run (a second "-" is refused: "standard input, already read for another
 * input"); messages name it "-", as given. */
#define JSONFILE_STDIN "-"
char *jsonfile_read(const char *path, size_t max_bytes, size_t *len, char *why, size_t why_len);

/* The one check of an input path, without opening it: 0 for a regular file of
 * a disk file system, else -1 with what it is in why ("a FIFO, not a regular
 * file", "No such file or directory", ...). For a caller that wants to name a
 * bad file before jsonfile_read reads it. */
int jsonfile_check(const char *path, char *why, size_t why_len);

/* The path of a file jsonfile_read has read that is the file dev/ino (the same
 * file under any name or link), or NULL: outputs are checked against it. */
const char *jsonfile_input_of(dev_t dev, ino_t ino);

/* Forgets the inputs read so far (frees their record). */
void jsonfile_forget_inputs(void);

/* An input file read piece by piece, for readers that stream
 * (serve_requests.c): the same checks (and "-"), the same gzip rules and the same record
 * of inputs as jsonfile_read, with no bound on the bytes (the caller counts). */
typedef struct jsonfile_stream jsonfile_stream_t;

/* NULL with a reason in why on failure. */
jsonfile_stream_t *jsonfile_stream_open(const char *path, char *why, size_t why_len);

/* Up to n bytes (inflated) into dst: how many, 0 at the end of the file, -1
 * with the reason in why (a truncated or corrupt gzip stream, bytes after the
 * last member that are none, a read error). */
long jsonfile_stream_read(jsonfile_stream_t *s, char *dst, size_t n, char *why, size_t why_len);

/* Whether the file is gzip (told by its first two bytes). */
bool jsonfile_stream_gzip(const jsonfile_stream_t *s);

void jsonfile_stream_close(jsonfile_stream_t *s);

/* Reads all of s as a decimal number: an optional sign, digits with an
 * optional fraction, an optional exponent; no spaces, hex, inf or nan (what
 * strtod would also take). False if s is not one, or is a nonzero number
 * below a double's normal range (1e-400 would read as 0); an overflow reads
 * as +-inf, for the caller's range check to refuse with the text. */
bool jsonfile_decimal(const char *s, double *v);

/* Parses text (text[len] must be '\0') as named; NULL with
 * "NAME:LINE:COL: expected valid JSON, found ..." in err on bad syntax. */
cJSON *jsonfile_parse(const char *name, const char *text, size_t len, npu_err_t *err);

/* jsonfile_read then jsonfile_parse: a whole JSON file (max_bytes at most),
 * or NULL with "PATH: cannot read: ..." or the syntax error in err. */
cJSON *jsonfile_load(const char *path, size_t max_bytes, npu_err_t *err);

/* Describes a value for a "found ..." clause: 12, "abc", an object, ... */
void jsonfile_describe(const cJSON *item, char *buf, size_t len);

/* Formats a number so that strtod reads back the same double, as briefly as
 * possible; whole numbers print without a fraction. */
void jsonfile_format_number(double v, char *buf, size_t len);

/* Writes s as a JSON string literal (quoted, escaped). */
void jsonfile_write_string(FILE *out, const char *s);

#endif
