/* SPDX-License-Identifier: MIT */
/*
 * Internal: a small strict JSON (RFC 8259) parser that reports events
 * (begin/end of objects and arrays, keys, scalars) to a handler instead of
 * building a tree, so its memory is bounded by the keys of the objects open
 * at a time, not by the size of the document: a hostile 100 MB array of
 * numbers costs the caller what it chooses to keep, nothing more.
 *
 * Strict means: one value with optional whitespace around it, no comments,
 * no trailing commas, no leading zeros, no raw control characters in strings,
 * no lone surrogate escapes, valid UTF-8 only, and no object with the same key
 * twice (a reader that silently keeps the first or last copy of a duplicated
 * key can be fooled into seeing a different file than another reader does).
 * "\u0000" is refused too: keys and strings are handed out as C strings.
 *
 * Precedence: a syntax error stops the parse at once. A duplicate key is
 * detected when its object closes; the parse goes on (so a later syntax
 * error still wins) and the duplicate is reported at the end.
 */
#ifndef ANVIL_HOST_JSON_H
#define ANVIL_HOST_JSON_H

#include <stddef.h>
#include <stdint.h>

typedef enum anvil_json_event_kind {
    ANVIL_JSON_OBJECT_BEGIN,
    ANVIL_JSON_OBJECT_END,
    ANVIL_JSON_ARRAY_BEGIN,
    ANVIL_JSON_ARRAY_END,
    ANVIL_JSON_KEY,
    ANVIL_JSON_STRING,
    ANVIL_JSON_NUMBER,
    ANVIL_JSON_TRUE,
    ANVIL_JSON_FALSE,
    ANVIL_JSON_NULL
} anvil_json_event_kind;

typedef struct anvil_json_event {
    anvil_json_event_kind kind;
    /* Containers open around the event: the top-level value is at depth 0,
     * the keys and values inside it at 1; an END has its BEGIN's depth. */
    int depth;
    size_t offset; /* byte offset of the token in the input */
    /* KEY, STRING: decoded UTF-8, NUL-terminated, valid during the call.
     * NUMBER: the validated number text in the input (not NUL-terminated).
     * Others: NULL, 0. */
    const char *text;
    size_t len;
} anvil_json_event;

/* Return 0 to go on; anything else stops the parse (ANVIL_JSON_E_STOPPED). */
typedef int (*anvil_json_handler)(void *user, const anvil_json_event *ev);

typedef enum anvil_json_status {
    ANVIL_JSON_OK = 0,
    ANVIL_JSON_E_SYNTAX = 1,  /* not JSON, or not strict JSON */
    ANVIL_JSON_E_DUP_KEY = 2, /* an object has the same key twice */
    ANVIL_JSON_E_NOMEM = 3,
    ANVIL_JSON_E_STOPPED = 4  /* the handler asked to stop (its own error) */
} anvil_json_status;

typedef struct anvil_json_error {
    anvil_json_status status;
    size_t offset;     /* where in the input */
    char message[512]; /* says what and where, including the key path */
} anvil_json_error;

/* Objects and arrays nested deeper than this are refused. */
#define ANVIL_JSON_MAX_DEPTH 64

anvil_json_status anvil__json_parse(const char *text, size_t len, anvil_json_handler handler,
                                   void *user, anvil_json_error *err);

/* A NUMBER's text to u64: 0 ok, 1 not a non-negative integer written
 * without fraction or exponent, 2 does not fit 64 bits. */
int anvil__json_number_u64(const char *text, size_t len, uint64_t *out);

/* "a string", "an object", "null", ... for messages (BEGIN kinds name the
 * container; END and KEY kinds answer "?"). */
const char *anvil__json_event_what(anvil_json_event_kind kind);

/* Length of the longest valid UTF-8 prefix of s[0..n) (== n when valid).
 * Overlong forms, surrogates and code points past U+10FFFF are invalid. */
size_t anvil__utf8_valid_prefix(const unsigned char *s, size_t n);

/* Write s (len bytes) into dst as a double-quoted, terminal-safe string for
 * messages: control and non-UTF-8 bytes as \xNN, cut after max_bytes at a
 * character boundary with "..." appended. Always NUL-terminates. */
void anvil__json_quote_for_message(char *dst, size_t cap, const char *s, size_t len,
                                  size_t max_bytes);

#endif
