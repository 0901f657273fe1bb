/* SPDX-License-Identifier: MIT */
/*
 * Internal: a JSON document as a tree, for the small JSON files of a Hugging
 * Face checkpoint folder (config.json, model.safetensors.index.json,
 * generation_config.json, a --metadata override). Built on the project's
 * strict event parser (json.h): the same strictness, duplicate keys refused.
 * Objects keep their keys in file order. Numbers keep their text, so a
 * caller can tell 10000 from 10000.0 as Python's json module does.
 */
#ifndef ANVIL_HOST_HF_JSON_H
#define ANVIL_HOST_HF_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/anvil.h"
#include "json.h"

typedef struct hf_json hf_json;
struct hf_json {
    anvil_json_event_kind kind; /* OBJECT_BEGIN, ARRAY_BEGIN, STRING, NUMBER, TRUE, FALSE, NULL */
    char *key;                  /* member name inside an object, else NULL */
    char *text;                 /* STRING: decoded UTF-8; NUMBER: its text */
    size_t len;                 /* bytes of text */
    hf_json **items;            /* OBJECT/ARRAY children in order */
    size_t n_items;
    size_t cap_items;           /* allocated slots of items (hf_json_append grows it) */
};

/* Parse text; *out is the root (free with hf_json_free). Errors name `what`
 * (a file path) and the offset. */
int hf_json_parse(const char *text, size_t len, const char *what, hf_json **out, anvil_error *err);
/* Read and parse a file. */
int hf_json_load(const char *path, hf_json **out, anvil_error *err);
void hf_json_free(hf_json *j);

/* Append child to parent's items (growing geometrically: a 280,000-entry
 * merges list costs O(n), not O(n^2) copies). 0, or -1 when out of memory
 * (child is then not appended; the caller still owns it). */
int hf_json_append(hf_json *parent, hf_json *child);

/* Member of an object by key, or NULL (also when j is not an object). */
const hf_json *hf_json_get(const hf_json *j, const char *key);
/* 1 when j is a NUMBER without fraction or exponent (a Python int). */
int hf_json_is_int(const hf_json *j);
/* 1 when j is a NUMBER (int or float), 0 else. */
int hf_json_is_number(const hf_json *j);
/* j as an int64 (0 ok; -1 not an integer number or out of range). */
int hf_json_i64(const hf_json *j, int64_t *out);
/* j (any NUMBER) as a double, as Python's float() reads it. */
double hf_json_f64(const hf_json *j);
/* String text or NULL when j is not a string. */
const char *hf_json_str(const hf_json *j);
/* 1 for null or absent. */
int hf_json_is_null(const hf_json *j);

#endif
