/* npu_utf8.h - decoding one UTF-8 character: what the one-line errors
 * (npu_err.c) and the config loader's key check need; no encoding, no
 * normalisation. */
#ifndef NPUSIM_NPU_UTF8_H
#define NPUSIM_NPU_UTF8_H

#include <stddef.h>

/* The length (1 to 4) of the valid UTF-8 character at s, its code point in
 * *cp; 0 if s starts no valid character (a stray or overlong byte sequence, a
 * surrogate, past U+10FFFF) or is at the terminating NUL. */
size_t npu_utf8_char(const char *s, unsigned *cp);

#endif
