/* SPDX-License-Identifier: MIT */
/*
 * Internal: the ECMAScript regular expressions llama.cpp's --tensor-type
 * patterns are written in (std::regex with the default ECMAScript grammar,
 * as GNU libstdc++ implements it), for regex_search over tensor names.
 *
 * What is supported is what libstdc++ accepts: alternation, groups (capturing
 * and (?:...)), lookaheads (?=...) (?!...), quantifiers * + ? {n} {n,}
 * {n,m} (greedy or lazy, and stacked: a** is valid), ^ $ \b \B, . (any
 * byte but \n and \r), classes [...] / [^...] with ranges, \d \s \w (and
 * negations) inside and outside brackets, [:name:] classes, [=x=] and
 * single-character [.x.], escapes \f \n \r \t \v \0 \xHH \uHHHH (truncated
 * to a byte, as libstdc++ does with char), \cX (the character X itself:
 * libstdc++'s reading), back-references \1..\N, and any other escaped
 * character as itself. Quirks kept on purpose because llama.cpp has them:
 * "[]" matches nothing and "[^]" any byte; ']' and '}' outside a bracket
 * are ordinary; ranges compare bytes as signed chars ("[\x7f-\x80]" is an
 * invalid range); inside a lookahead, ^ matches at the lookahead's own start
 * while the search is at its first position. Named collating elements
 * ([.space.]) are refused with a message (libstdc++ knows the POSIX names).
 * Bytes are matched in the "C" locale: a byte >= 0x80 is in no class.
 */
#ifndef ANVIL_HOST_ECMA_REGEX_H
#define ANVIL_HOST_ECMA_REGEX_H

#include <stddef.h>

typedef struct ecma_re ecma_re;

/* Compile pattern (len bytes). 0 on success; -1 with a reason in why. */
int ecma_re_compile(const char *pattern, size_t len, ecma_re **out, char *why, size_t why_size);
/* 1 when the pattern matches somewhere in s (regex_search), 0 when not, -1
 * when the search gave up (a pattern with back-references that needs more
 * than a million steps on this subject: libstdc++ gives up too). */
int ecma_re_search(const ecma_re *re, const char *s, size_t len);
void ecma_re_free(ecma_re *re);

#endif
