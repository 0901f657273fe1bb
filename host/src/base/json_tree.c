/* SPDX-License-Identifier: MIT */
/*
 * json_tree: a JSON document kept whole (see json.h, "The tree"). The parser
 * is json_parse.c; this file keeps what its events report, and answers the
 * lookups a caller walking the tree needs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "file_input.h"
#include "grow.h"
#include "json.h"

/* A JSON file read whole: a checkpoint's tokenizer.json is tens of MB. */
#define TREE_FILE_MAX ((size_t)1 << 32)

typedef struct builder {
    anvil_json_value *stack[ANVIL_JSON_MAX_DEPTH + 2];
    int depth;
    anvil_json_value *root;
    char *pending_key;
    int nomem;
} builder;

void anvil__json_free(anvil_json_value *j) {
    if (j == NULL) return;
    for (size_t i = 0; i < j->n_items; ++i) anvil__json_free(j->items[i]);
    free(j->items);
    free(j->key);
    free(j->text);
    free(j);
}

anvil_json_value *anvil__json_new(anvil_json_event_kind kind, const char *key, const char *text, size_t len) {
    anvil_json_value *j = calloc(1, sizeof *j);
    if (j == NULL) return NULL;
    j->kind = kind;
    if (key != NULL && (j->key = strdup(key)) == NULL) {
        free(j);
        return NULL;
    }
    if (text != NULL) {
        j->text = malloc(len + 1);
        if (j->text == NULL) {
            anvil__json_free(j);
            return NULL;
        }
        memcpy(j->text, text, len);
        j->text[len] = '\0';
        j->len = len;
    }
    return j;
}

int anvil__json_append(anvil_json_value *parent, anvil_json_value *child) {
    if (anvil__grow_array((void **)&parent->items, &parent->cap_items, parent->n_items + 1, sizeof *parent->items) !=
        ANVIL_OK) {
        return -1;
    }
    parent->items[parent->n_items++] = child;
    return 0;
}

static int attach(builder *b, anvil_json_value *node) {
    node->key = b->pending_key;
    b->pending_key = NULL;
    if (b->depth == 0) {
        b->root = node;
        return 0;
    }
    return anvil__json_append(b->stack[b->depth - 1], node);
}

static int on_event(void *user, const anvil_json_event *ev) {
    builder *b = user;
    if (ev->kind == ANVIL_JSON_KEY) {
        free(b->pending_key);
        b->pending_key = strdup(ev->text); /* a KEY's text is NUL-terminated */
        return b->pending_key == NULL ? (b->nomem = 1) : 0;
    }
    if (ev->kind == ANVIL_JSON_OBJECT_END || ev->kind == ANVIL_JSON_ARRAY_END) {
        b->depth--;
        return 0;
    }
    const int has_text = ev->kind == ANVIL_JSON_STRING || ev->kind == ANVIL_JSON_NUMBER;
    anvil_json_value *node = anvil__json_new(ev->kind, NULL, has_text ? ev->text : NULL, ev->len);
    if (node == NULL) return (b->nomem = 1);
    if (attach(b, node) != 0) {
        anvil__json_free(node);
        return (b->nomem = 1);
    }
    if (ev->kind == ANVIL_JSON_OBJECT_BEGIN || ev->kind == ANVIL_JSON_ARRAY_BEGIN) {
        b->stack[b->depth++] = node;
    }
    return 0;
}

int anvil__json_tree_parse(const char *text, size_t len, const char *what, anvil_json_value **out, anvil_error *err) {
    *out = NULL;
    builder b;
    memset(&b, 0, sizeof b);
    anvil_json_error jerr;
    const anvil_json_status st = anvil__json_parse(text, len, on_event, &b, &jerr);
    free(b.pending_key);
    if (st != ANVIL_JSON_OK || b.nomem) {
        anvil__json_free(b.root);
        if (b.nomem || st == ANVIL_JSON_E_NOMEM) {
            return anvil__error_set(err, ANVIL_E_NOMEM, "%s: out of memory while reading its JSON", what);
        }
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s is not valid JSON: %s; fix or re-download the file", what,
                                jerr.message);
    }
    *out = b.root;
    return ANVIL_OK;
}

int anvil__json_tree_load(const char *path, anvil_json_value **out, anvil_error *err) {
    *out = NULL;
    char *buf = NULL;
    size_t len = 0;
    int rc = file_input_read(path, TREE_FILE_MAX, "a config file", &buf, &len, err);
    if (rc == ANVIL_OK) rc = anvil__json_tree_parse(buf, len, path, out, err);
    free(buf);
    return rc;
}

const anvil_json_value *anvil__json_get(const anvil_json_value *j, const char *key) {
    if (j == NULL || j->kind != ANVIL_JSON_OBJECT_BEGIN) return NULL;
    for (size_t i = 0; i < j->n_items; ++i) {
        if (strcmp(j->items[i]->key, key) == 0) return j->items[i];
    }
    return NULL;
}

int anvil__json_is_number(const anvil_json_value *j) { return j != NULL && j->kind == ANVIL_JSON_NUMBER; }

int anvil__json_is_int(const anvil_json_value *j) {
    return anvil__json_is_number(j) && strpbrk(j->text, ".eE") == NULL;
}

int anvil__json_i64(const anvil_json_value *j, int64_t *out) {
    if (!anvil__json_is_int(j)) return -1;
    errno = 0;
    char *end = NULL;
    const long long v = strtoll(j->text, &end, 10);
    if (errno != 0 || end == NULL || *end != '\0') return -1;
    *out = (int64_t)v;
    return 0;
}

double anvil__json_f64(const anvil_json_value *j) { return anvil__json_is_number(j) ? strtod(j->text, NULL) : 0.0; }

const char *anvil__json_str(const anvil_json_value *j) {
    return j != NULL && j->kind == ANVIL_JSON_STRING ? j->text : NULL;
}

int anvil__json_is_null(const anvil_json_value *j) { return j == NULL || j->kind == ANVIL_JSON_NULL; }
