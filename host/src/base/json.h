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

#include "anvil/anvil.h"

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
    ANVIL_JSON_E_STOPPED = 4 /* the handler asked to stop (its own error) */
} anvil_json_status;

typedef struct anvil_json_error {
    anvil_json_status status;
    size_t offset;     /* where in the input */
    char message[512]; /* says what and where, including the key path */
} anvil_json_error;

/* Objects and arrays nested deeper than this are refused. */
#define ANVIL_JSON_MAX_DEPTH 64

anvil_json_status anvil__json_parse(const char *text, size_t len, anvil_json_handler handler, void *user,
                                    anvil_json_error *err);

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
void anvil__json_quote_for_message(char *dst, size_t cap, const char *s, size_t len, size_t max_bytes);

/* ---- The tree (json_tree.c) ---------------------------------------------
 * A document kept whole, for the small JSON files a caller wants to walk
 * (a Hugging Face checkpoint's config.json, tokenizer.json, ...): built from
 * the events above, so the same strictness and duplicate keys refused.
 * Objects keep their members in file order. Numbers keep their text as
 * written, so a caller can tell 10000 from 10000.0 as Python's json does.
 * Appending grows geometrically: a 280,000-entry merges list costs O(n)
 * copies, not O(n^2). Lookup by key is a linear scan of the object. */
typedef struct anvil_json_value anvil_json_value;
struct anvil_json_value {
    anvil_json_event_kind kind; /* OBJECT_BEGIN, ARRAY_BEGIN, STRING, NUMBER, TRUE, FALSE, NULL */
    char *key;                  /* member name inside an object, else NULL */
    char *text;                 /* STRING: decoded UTF-8; NUMBER: its text; NUL-terminated */
    size_t len;                 /* bytes of text */
    anvil_json_value **items;   /* OBJECT/ARRAY children in order */
    size_t n_items;
    size_t cap_items; /* allocated slots of items (anvil__json_append grows it) */
};

/* Parse text into a tree; *out is the root (free with anvil__json_free).
 * Errors name `what` (a file path) and the offset. */
int anvil__json_tree_parse(const char *text, size_t len, const char *what, anvil_json_value **out, anvil_error *err);
/* Read and parse a file (ANVIL_E_NOT_FOUND when it does not exist). */
int anvil__json_tree_load(const char *path, anvil_json_value **out, anvil_error *err);
/* Free a node and everything below it (NULL is fine). */
void anvil__json_free(anvil_json_value *j);

/* A new node of kind with copies of key and text[0..len) (either may be
 * NULL), or NULL when out of memory. For callers that build a tree. */
anvil_json_value *anvil__json_new(anvil_json_event_kind kind, const char *key, const char *text, size_t len);
/* Append child to parent's items. 0, or -1 when out of memory (child is then
 * not appended; the caller still owns it). */
int anvil__json_append(anvil_json_value *parent, anvil_json_value *child);

/* Member of an object by key, or NULL (also when j is NULL or not an object). */
const anvil_json_value *anvil__json_get(const anvil_json_value *j, const char *key);
/* 1 when j is a NUMBER (int or float), 0 else. */
int anvil__json_is_number(const anvil_json_value *j);
/* 1 when j is a NUMBER without fraction or exponent (a Python int). */
int anvil__json_is_int(const anvil_json_value *j);
/* j as an int64 (0 ok; -1 not an integer number or out of range). */
int anvil__json_i64(const anvil_json_value *j, int64_t *out);
/* j (any NUMBER) as a double, as Python's float() reads it; 0.0 else. */
double anvil__json_f64(const anvil_json_value *j);
/* String text, or NULL when j is not a string. */
const char *anvil__json_str(const anvil_json_value *j);
/* 1 for null or absent (j == NULL). */
int anvil__json_is_null(const anvil_json_value *j);

#endif
