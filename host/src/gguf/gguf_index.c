/* SPDX-License-Identifier: MIT */
/*
 * Name index for GGUF keys and tensor names: open addressing with linear
 * probing, FNV-1a hashing. Duplicate checks and lookups stay O(1) even for a
 * hostile file that declares millions of keys, where a pairwise scan (as in
 * ggml's reader) would be quadratic.
 */
#include <stdlib.h>

#include "gguf_internal.h"

static uint64_t name_hash(const char *p, size_t len) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; ++i) {
        h ^= (unsigned char)p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

void gguf_index_init(gguf_name_index *ix, gguf_name_of_fn name_of, const void *items) {
    memset(ix, 0, sizeof *ix);
    ix->name_of = name_of;
    ix->items = items;
}

static int same_name(const gguf_name_index *ix, size_t item, const char *p, size_t len) {
    const char *q;
    size_t qlen;
    ix->name_of(ix->items, item, &q, &qlen);
    return qlen == len && (len == 0 || memcmp(p, q, len) == 0);
}

/* Place item without checking for duplicates (used when growing). */
static void place(size_t *slots, size_t cap, uint64_t h, size_t item) {
    size_t at = (size_t)h & (cap - 1);
    while (slots[at] != 0) {
        at = (at + 1) & (cap - 1);
    }
    slots[at] = item + 1;
}

static int grow(gguf_name_index *ix) {
    const size_t cap = ix->cap == 0 ? 16 : ix->cap * 2;
    if (cap < ix->cap || cap > SIZE_MAX / sizeof(size_t)) {
        return ANVIL_E_NOMEM;
    }
    size_t *slots = calloc(cap, sizeof *slots);
    if (slots == NULL) {
        return ANVIL_E_NOMEM;
    }
    for (size_t s = 0; s < ix->cap; ++s) {
        if (ix->slots[s] != 0) {
            const char *p;
            size_t len;
            ix->name_of(ix->items, ix->slots[s] - 1, &p, &len);
            place(slots, cap, name_hash(p, len), ix->slots[s] - 1);
        }
    }
    free(ix->slots);
    ix->slots = slots;
    ix->cap = cap;
    return ANVIL_OK;
}

int gguf_index_insert(gguf_name_index *ix, size_t i, size_t *existing) {
    /* Keep the load factor at or under one half. */
    if ((ix->n + 1) * 2 > ix->cap) {
        int rc = grow(ix);
        if (rc != ANVIL_OK) {
            return rc;
        }
    }
    const char *p;
    size_t len;
    ix->name_of(ix->items, i, &p, &len);
    size_t at = (size_t)name_hash(p, len) & (ix->cap - 1);
    while (ix->slots[at] != 0) {
        if (same_name(ix, ix->slots[at] - 1, p, len)) {
            if (existing != NULL) {
                *existing = ix->slots[at] - 1;
            }
            return 1;
        }
        at = (at + 1) & (ix->cap - 1);
    }
    ix->slots[at] = i + 1;
    ix->n++;
    return 0;
}

int64_t gguf_index_find(const gguf_name_index *ix, const char *p, size_t len) {
    if (ix->cap == 0) {
        return -1;
    }
    size_t at = (size_t)name_hash(p, len) & (ix->cap - 1);
    while (ix->slots[at] != 0) {
        if (same_name(ix, ix->slots[at] - 1, p, len)) {
            return (int64_t)(ix->slots[at] - 1);
        }
        at = (at + 1) & (ix->cap - 1);
    }
    return -1;
}

void gguf_index_clear(gguf_name_index *ix) {
    if (ix->slots != NULL) {
        memset(ix->slots, 0, ix->cap * sizeof *ix->slots);
    }
    ix->n = 0;
}

void gguf_index_free(gguf_name_index *ix) {
    free(ix->slots);
    ix->slots = NULL;
    ix->cap = 0;
    ix->n = 0;
}
