/* SPDX-License-Identifier: MIT */
/*
 * gguf_same: see gguf_same.h.
 */
#include <stdio.h>
#include <string.h>

#include "anvil/gguf.h"
#include "gguf_same.h"

static size_t next_kv(const anvil_gguf *g, size_t i, const char *skip) {
    const size_t n = anvil_gguf_kv_count(g);
    while (i < n && skip != NULL && strncmp(anvil_gguf_kv_at(g, i)->key, skip, strlen(skip)) == 0) ++i;
    return i;
}

static int compare_kvs(const anvil_gguf *a, const anvil_gguf *b, const char *skip, char *why, size_t n) {
    size_t i = next_kv(a, 0, skip), j = next_kv(b, 0, skip);
    const size_t na = anvil_gguf_kv_count(a), nb = anvil_gguf_kv_count(b);
    for (; i < na && j < nb; i = next_kv(a, i + 1, skip), j = next_kv(b, j + 1, skip)) {
        const anvil_gguf_kv *x = anvil_gguf_kv_at(a, i), *y = anvil_gguf_kv_at(b, j);
        if (strcmp(x->key, y->key) != 0) {
            snprintf(why, n, "KV %zu: key %s vs %s", i, x->key, y->key);
            return 1;
        }
        if (x->type != y->type || x->raw_size != y->raw_size || memcmp(x->raw, y->raw, x->raw_size) != 0) {
            snprintf(why, n, "KV %s: value differs (wire type %u vs %u, %zu vs %zu bytes)", x->key, x->type, y->type,
                     x->raw_size, y->raw_size);
            return 1;
        }
    }
    if (i < na || j < nb) {
        snprintf(why, n, "KV count differs: extra %s",
                 i < na ? anvil_gguf_kv_at(a, i)->key : anvil_gguf_kv_at(b, j)->key);
        return 1;
    }
    return 0;
}

static int compare_tensors(const anvil_gguf *a, const anvil_gguf *b, char *why, size_t wn) {
    const size_t n = anvil_gguf_tensor_count(a);
    if (n != anvil_gguf_tensor_count(b)) {
        snprintf(why, wn, "tensor count %zu vs %zu", n, anvil_gguf_tensor_count(b));
        return 1;
    }
    for (size_t i = 0; i < n; ++i) {
        const anvil_gguf_tensor *x = anvil_gguf_tensor_at(a, i), *y = anvil_gguf_tensor_at(b, i);
        if (strcmp(x->name, y->name) != 0 || x->type != y->type || x->n_dims != y->n_dims ||
            memcmp(x->ne, y->ne, sizeof x->ne) != 0) {
            snprintf(why, wn, "tensor %zu: %s (type %u, %u dims) vs %s (type %u, %u dims)", i, x->name, x->type,
                     x->n_dims, y->name, y->type, y->n_dims);
            return 1;
        }
        if (x->n_bytes != y->n_bytes || memcmp(x->data, y->data, x->n_bytes) != 0) {
            size_t k = 0;
            while (k < x->n_bytes && ((const unsigned char *)x->data)[k] == ((const unsigned char *)y->data)[k]) ++k;
            snprintf(why, wn, "tensor %s: bytes differ from byte %zu", x->name, k);
            return 1;
        }
    }
    return 0;
}

int gguf_same(const char *pa, const char *pb, const char *skip, char *why, size_t why_size) {
    anvil_gguf *a = NULL, *b = NULL;
    anvil_error err = { 0 };
    if (anvil_gguf_open(&a, pa, NULL, 0, &err) != ANVIL_OK || anvil_gguf_open(&b, pb, NULL, 0, &err) != ANVIL_OK) {
        snprintf(why, why_size, "%s", err.message);
        anvil_gguf_close(a);
        return -1;
    }
    const int rc = compare_kvs(a, b, skip, why, why_size) || compare_tensors(a, b, why, why_size);
    anvil_gguf_close(a);
    anvil_gguf_close(b);
    return rc;
}
