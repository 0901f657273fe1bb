/* SPDX-License-Identifier: MIT */
/*
 * GGUF metadata getters by key: anvil_gguf_get_<type>(file, key) looks the
 * key up in the open file (gguf_file.c) and returns its value, widened, or
 * says what type the key holds instead.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "gguf_internal.h"

static int lookup(const anvil_gguf *g, const char *key, anvil_gguf_value *v, anvil_error *err) {
    if (g == NULL || key == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL file or key");
    }
    const anvil_gguf_kv *kv = anvil_gguf_find_kv(g, key);
    if (kv == NULL) {
        return anvil__error_set(err, ANVIL_E_NOT_FOUND, "key '%s' is not in the file", key);
    }
    if (anvil_gguf_kv_value(kv, v) != ANVIL_OK) {
        return anvil__error_set(err, ANVIL_E_INTERNAL, "key '%s' has an unreadable value", key);
    }
    return ANVIL_OK;
}

static int wrong_type(const char *key, const anvil_gguf_value *v, const char *want, anvil_error *err) {
    const char *tn = anvil_gguf_type_name(v->wire_type);
    return anvil__error_set(err, ANVIL_E_GGUF_KEY_TYPE, "key '%s' holds a %s value, not %s", key,
                            tn != NULL ? tn : "?", want);
}

/* The value of key, which must be of kind `kind` (`want` names it for the
 * message): the lookup and the type check every getter makes. */
static int lookup_kind(const anvil_gguf *g, const char *key, int kind, const char *want, anvil_gguf_value *v,
                       anvil_error *err) {
    int rc = lookup(g, key, v, err);
    if (rc == ANVIL_OK && (int)v->kind != kind) {
        rc = wrong_type(key, v, want, err);
    }
    return rc;
}

ANVIL_API int anvil_gguf_get_i64(const anvil_gguf *g, const char *key, int64_t *out, anvil_error *err) {
    anvil_gguf_value v;
    int rc = lookup_kind(g, key, ANVIL_GGUF_KIND_INT, "an integer", &v, err);
    if (rc != ANVIL_OK) {
        return rc;
    }
    if (!v.in_i64) {
        return anvil__error_set(err, ANVIL_E_OVERFLOW,
                                "key '%s' holds u64 %" PRIu64 ", which does not fit int64: read "
                                "it with anvil_gguf_get_u64",
                                key, v.u);
    }
    *out = v.i;
    return ANVIL_OK;
}

ANVIL_API int anvil_gguf_get_u64(const anvil_gguf *g, const char *key, uint64_t *out, anvil_error *err) {
    anvil_gguf_value v;
    int rc = lookup_kind(g, key, ANVIL_GGUF_KIND_INT, "an integer", &v, err);
    if (rc != ANVIL_OK) {
        return rc;
    }
    if (!v.in_u64) {
        return anvil__error_set(err, ANVIL_E_OVERFLOW, "key '%s' holds %" PRId64 ", which is negative", key, v.i);
    }
    *out = v.u;
    return ANVIL_OK;
}

ANVIL_API int anvil_gguf_get_f64(const anvil_gguf *g, const char *key, double *out, anvil_error *err) {
    anvil_gguf_value v;
    int rc = lookup_kind(g, key, ANVIL_GGUF_KIND_FLOAT, "f32 or f64", &v, err);
    if (rc != ANVIL_OK) {
        return rc;
    }
    *out = v.f;
    return ANVIL_OK;
}

ANVIL_API int anvil_gguf_get_bool(const anvil_gguf *g, const char *key, int *out, anvil_error *err) {
    anvil_gguf_value v;
    int rc = lookup_kind(g, key, ANVIL_GGUF_KIND_BOOL, "bool", &v, err);
    if (rc != ANVIL_OK) {
        return rc;
    }
    *out = v.b;
    return ANVIL_OK;
}

ANVIL_API int anvil_gguf_get_str(const anvil_gguf *g, const char *key, anvil_gguf_str *out, anvil_error *err) {
    anvil_gguf_value v;
    int rc = lookup_kind(g, key, ANVIL_GGUF_KIND_STRING, "a string", &v, err);
    if (rc != ANVIL_OK) {
        return rc;
    }
    *out = v.s;
    return ANVIL_OK;
}

ANVIL_API int anvil_gguf_get_array(const anvil_gguf *g, const char *key, anvil_gguf_array *out, anvil_error *err) {
    anvil_gguf_value v;
    int rc = lookup_kind(g, key, ANVIL_GGUF_KIND_ARRAY, "an array", &v, err);
    if (rc != ANVIL_OK) {
        return rc;
    }
    *out = v.a;
    return ANVIL_OK;
}
