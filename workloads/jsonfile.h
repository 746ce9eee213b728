/* jsonfile.h - reading JSON files for configs and traces: plain or gzip (zlib
 * detects which), with errors that give the line and column of bad syntax.
 * Writing: outfile.h. */
#ifndef NPUSIM_JSONFILE_H
#define NPUSIM_JSONFILE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <zlib.h>

/* Reads a whole regular file, gunzipping it if it is gzip, NUL-terminated.
 * Returns NULL with a reason in why ("No such file or directory", "a
 * directory", "a truncated or corrupt gzip stream (...)") on failure. Anything
 * but a regular file (a FIFO, a device, a file of /proc or /sys) is refused
 * without reading it, so a special file can neither block nor be consumed. */
char *jsonfile_read(const char *path, size_t max_bytes, size_t *len, char *why, size_t why_len);

/* Opens a file for gzread (gzip or plain) after the same checks: the one way
 * in for every input file, also for readers that stream (serve_requests.c).
 * NULL with a reason in why on failure. */
gzFile jsonfile_open(const char *path, char *why, size_t why_len);

/* gzerror's message for gz (without the "<fd:N>: " of a gzdopen'ed file), its
 * code in *code. */
const char *jsonfile_gz_reason(gzFile gz, int *code);

/* Reads all of s as a decimal number: an optional sign, digits with an
 * optional fraction, an optional exponent; no spaces, hex, inf or nan (what
 * strtod would also take). False if s is not one, or is a nonzero number
 * below a double's normal range (1e-400 would read as 0); an overflow reads
 * as +-inf, for the caller's range check to refuse with the text. */
bool jsonfile_decimal(const char *s, double *v);

/* Parses text (text[len] must be '\0') as named; NULL with
 * "NAME:LINE:COL: expected valid JSON, found ..." in err on bad syntax. */
cJSON *jsonfile_parse(const char *name, const char *text, size_t len, char *err, size_t err_len);

/* Describes a value for a "found ..." clause: 12, "abc", an object, ... */
void jsonfile_describe(const cJSON *item, char *buf, size_t len);

/* Formats a number so that strtod reads back the same double, as briefly as
 * possible; whole numbers print without a fraction. */
void jsonfile_format_number(double v, char *buf, size_t len);

/* Writes s as a JSON string literal (quoted, escaped). */
void jsonfile_write_string(FILE *out, const char *s);

/* The length (1 to 4) of the valid UTF-8 character at s, its code point in
 * *cp; 0 if s starts no valid character (a stray or overlong byte sequence, a
 * surrogate, past U+10FFFF) or is at the terminating NUL. */
size_t jsonfile_utf8_char(const char *s, unsigned *cp);

#endif
