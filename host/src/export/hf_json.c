/* SPDX-License-Identifier: MIT */
/*
 * hf_json: a JSON tree for a checkpoint folder's small JSON files (see
 * hf_json.h). The parser is json_parse.c; this file only keeps what it
 * reports.
 */
#include "hf_json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

typedef struct builder {
    hf_json *stack[ANVIL_JSON_MAX_DEPTH + 2];
    int depth;
    hf_json *root;
    char *pending_key;
    int nomem;
} builder;

static char *dup_n(const char *s, size_t n) {
    char *p = malloc(n + 1);
    if (p != NULL) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

void hf_json_free(hf_json *j) {
    if (j == NULL) return;
    for (size_t i = 0; i < j->n_items; ++i) hf_json_free(j->items[i]);
    free(j->items);
    free(j->key);
    free(j->text);
    free(j);
}

int hf_json_append(hf_json *parent, hf_json *child) {
    if (parent->n_items == parent->cap_items) {
        const size_t cap = parent->cap_items ? parent->cap_items * 2 : 8;
        hf_json **items = realloc(parent->items, cap * sizeof *items);
        if (items == NULL) return -1;
        parent->items = items;
        parent->cap_items = cap;
    }
    parent->items[parent->n_items++] = child;
    return 0;
}

static int attach(builder *b, hf_json *node) {
    node->key = b->pending_key;
    b->pending_key = NULL;
    if (b->depth == 0) {
        b->root = node;
        return 0;
    }
    return hf_json_append(b->stack[b->depth - 1], node);
}

static int on_event(void *user, const anvil_json_event *ev) {
    builder *b = user;
    if (ev->kind == ANVIL_JSON_KEY) {
        free(b->pending_key);
        b->pending_key = dup_n(ev->text, ev->len);
        return b->pending_key == NULL ? (b->nomem = 1) : 0;
    }
    if (ev->kind == ANVIL_JSON_OBJECT_END || ev->kind == ANVIL_JSON_ARRAY_END) {
        b->depth--;
        return 0;
    }
    hf_json *node = calloc(1, sizeof *node);
    if (node == NULL) return (b->nomem = 1);
    node->kind = ev->kind;
    if (ev->kind == ANVIL_JSON_STRING || ev->kind == ANVIL_JSON_NUMBER) {
        node->text = dup_n(ev->text, ev->len);
        node->len = ev->len;
        if (node->text == NULL) {
            free(node);
            return (b->nomem = 1);
        }
    }
    if (attach(b, node) != 0) {
        hf_json_free(node);
        return (b->nomem = 1);
    }
    if (ev->kind == ANVIL_JSON_OBJECT_BEGIN || ev->kind == ANVIL_JSON_ARRAY_BEGIN) {
        b->stack[b->depth++] = node;
    }
    return 0;
}

int hf_json_parse(const char *text, size_t len, const char *what, hf_json **out, anvil_error *err) {
    *out = NULL;
    builder b;
    memset(&b, 0, sizeof b);
    anvil_json_error jerr;
    const anvil_json_status st = anvil__json_parse(text, len, on_event, &b, &jerr);
    free(b.pending_key);
    if (st != ANVIL_JSON_OK || b.nomem) {
        hf_json_free(b.root);
        if (b.nomem || st == ANVIL_JSON_E_NOMEM) {
            return anvil__error_set(err, ANVIL_E_NOMEM, "%s: out of memory while reading its JSON", what);
        }
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s is not valid JSON: %s; fix or re-download the file",
                                what, jerr.message);
    }
    *out = b.root;
    return ANVIL_OK;
}

int hf_json_load(const char *path, hf_json **out, anvil_error *err) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return anvil__error_set(err, errno == ENOENT ? ANVIL_E_NOT_FOUND : ANVIL_E_IO,
                                "cannot open %s: %s", path, strerror(errno));
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            if (cap > ((size_t)1 << 32)) {
                fclose(f);
                free(buf);
                return anvil__error_set(err, ANVIL_E_FORMAT, "%s is over 4 GiB: not a config file", path);
            }
            cap = cap ? cap * 2 : 65536;
            char *nb = realloc(buf, cap);
            if (nb == NULL) {
                fclose(f);
                free(buf);
                return anvil__error_set(err, ANVIL_E_NOMEM, "%s: out of memory", path);
            }
            buf = nb;
        }
        const size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    const int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return anvil__error_set(err, ANVIL_E_IO, "cannot read %s", path);
    }
    const int rc = hf_json_parse(buf, len, path, out, err);
    free(buf);
    return rc;
}

const hf_json *hf_json_get(const hf_json *j, const char *key) {
    if (j == NULL || j->kind != ANVIL_JSON_OBJECT_BEGIN) return NULL;
    for (size_t i = 0; i < j->n_items; ++i) {
        if (strcmp(j->items[i]->key, key) == 0) return j->items[i];
    }
    return NULL;
}

int hf_json_is_number(const hf_json *j) {
    return j != NULL && j->kind == ANVIL_JSON_NUMBER;
}

int hf_json_is_int(const hf_json *j) {
    return hf_json_is_number(j) && strpbrk(j->text, ".eE") == NULL;
}

int hf_json_i64(const hf_json *j, int64_t *out) {
    if (!hf_json_is_int(j)) return -1;
    errno = 0;
    char *end = NULL;
    const long long v = strtoll(j->text, &end, 10);
    if (errno != 0 || end == NULL || *end != '\0') return -1;
    *out = (int64_t)v;
    return 0;
}

double hf_json_f64(const hf_json *j) {
    return hf_json_is_number(j) ? strtod(j->text, NULL) : 0.0;
}

const char *hf_json_str(const hf_json *j) {
    return j != NULL && j->kind == ANVIL_JSON_STRING ? j->text : NULL;
}

int hf_json_is_null(const hf_json *j) {
    return j == NULL || j->kind == ANVIL_JSON_NULL;
}
