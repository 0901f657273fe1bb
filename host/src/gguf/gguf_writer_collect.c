/* SPDX-License-Identifier: MIT */
/*
 * GGUF writer, collecting side: KVs in insertion order with exact wire
 * widths (setting a key again moves it to the end, as ggml's gguf_set_val_*
 * do), raw verbatim copies, and the tensor directory.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "gguf_writer_internal.h"
#include "grow.h"

static void wkv_name_of(const void *items, size_t i, const char **p, size_t *len) {
    const gguf_wkv *kv = items;
    *p = kv[i].key;
    *len = kv[i].key_len;
}

static void wtensor_name_of(const void *items, size_t i, const char **p, size_t *len) {
    const gguf_wtensor *t = items;
    *p = t[i].name;
    *len = t[i].name_len;
}

ANVIL_API int anvil_gguf_writer_new(anvil_gguf_writer **out, const anvil_ctx *ctx, anvil_error *err) {
    if (out == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_gguf_writer_new: NULL out");
    }
    anvil_gguf_writer *w = calloc(1, sizeof *w);
    if (w == NULL) {
        return anvil__nomem(err);
    }
    w->ctx = ctx;
    w->alignment = ANVIL_GGUF_DEFAULT_ALIGNMENT;
    w->sink.fd = -1;
    gguf_index_init(&w->kv_index, wkv_name_of, NULL);
    gguf_index_init(&w->tensor_index, wtensor_name_of, NULL);
    *out = w;
    return ANVIL_OK;
}

ANVIL_API void anvil_gguf_writer_free(anvil_gguf_writer *w) {
    if (w == NULL) {
        return;
    }
    gguf_writer_stream_cleanup(w);
    for (size_t i = 0; i < w->n_kv; ++i) {
        free(w->kvs[i].key);
        free(w->kvs[i].wire);
    }
    free(w->kvs);
    for (size_t i = 0; i < w->n_tensors; ++i) {
        free(w->tensors[i].name);
    }
    free(w->tensors);
    gguf_index_free(&w->kv_index);
    gguf_index_free(&w->tensor_index);
    free(w);
}

static int check_building(const anvil_gguf_writer *w, anvil_error *err) {
    if (w == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL writer");
    }
    if (w->state != GGUF_W_BUILDING) {
        return anvil__error_set(err, ANVIL_E_STATE,
                                "a stream is being written: KVs and tensors are fixed until it "
                                "is finished or aborted");
    }
    return ANVIL_OK;
}

static void remove_kv_at(anvil_gguf_writer *w, size_t i) {
    free(w->kvs[i].key);
    free(w->kvs[i].wire);
    memmove(&w->kvs[i], &w->kvs[i + 1], (w->n_kv - i - 1) * sizeof *w->kvs);
    w->n_kv--;
    /* Indices after i moved down: rebuild (removal is the rare path). */
    gguf_index_clear(&w->kv_index);
    for (size_t k = 0; k < w->n_kv; ++k) {
        gguf_index_insert(&w->kv_index, k, NULL); /* cannot grow: n only shrank */
    }
}

/* The one reserved key: general.alignment must be a u32 power of two <= 1
 * MiB, checked on the wire bytes; it then sets the padding used. */
static int check_reserved(anvil_gguf_writer *w, const char *key, size_t key_len, uint32_t type, const uint8_t *value,
                          size_t value_size, int apply, anvil_error *err) {
    if (key_len != sizeof ANVIL_GGUF_KEY_ALIGNMENT - 1 || memcmp(key, ANVIL_GGUF_KEY_ALIGNMENT, key_len) != 0) {
        return ANVIL_OK;
    }
    if (type != ANVIL_GGUF_TYPE_U32 || value_size != 4) {
        const char *tn = anvil_gguf_type_name(type);
        return anvil__error_set(err, ANVIL_E_GGUF_KEY_TYPE, "general.alignment must be written as u32, not %s",
                                tn != NULL ? tn : "?");
    }
    const uint32_t a = gguf_load_u32(value);
    if (!gguf_is_pow2(a) || a > ANVIL_GGUF_MAX_ALIGNMENT) {
        return anvil__error_set(err, ANVIL_E_GGUF_ALIGNMENT,
                                "general.alignment %" PRIu32 " is not a power of two from 1 to "
                                "%u (1 MiB)",
                                a, ANVIL_GGUF_MAX_ALIGNMENT);
    }
    if (apply) {
        w->alignment = a;
    }
    return ANVIL_OK;
}

/* Append key with its value's wire bytes (everything after the type
 * field), replacing an existing entry. */
static int put_kv(anvil_gguf_writer *w, const char *key, size_t key_len, uint32_t type, const uint8_t *value,
                  size_t value_size, anvil_error *err) {
    int rc = check_building(w, err);
    if (rc != ANVIL_OK) {
        return rc;
    }
    if (key == NULL || key_len == 0) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "a GGUF key must not be empty");
    }
    rc = check_reserved(w, key, key_len, type, value, value_size, 0, err);
    if (rc != ANVIL_OK) {
        return rc;
    }
    if (value_size > SIZE_MAX - 12 - key_len) {
        return anvil__error_set(err, ANVIL_E_OVERFLOW, "KV value too large");
    }
    const size_t wire_size = 8 + key_len + 4 + value_size;
    uint8_t *wire = malloc(wire_size);
    char *kcopy = malloc(key_len + 1);
    if (wire == NULL || kcopy == NULL) {
        free(wire);
        free(kcopy);
        return anvil__nomem(err);
    }
    gguf_store_u64(wire, key_len);
    memcpy(wire + 8, key, key_len);
    gguf_store_u32(wire + 8 + key_len, type);
    if (value_size > 0) {
        memcpy(wire + 12 + key_len, value, value_size);
    }
    memcpy(kcopy, key, key_len);
    kcopy[key_len] = '\0';

    /* Make room first, so a failure leaves the old value in place. */
    if (anvil__grow_array((void **)&w->kvs, &w->cap_kv, w->n_kv + 1, sizeof *w->kvs) != ANVIL_OK) {
        free(wire);
        free(kcopy);
        return anvil__nomem(err);
    }
    gguf_index_rebase(&w->kv_index, w->kvs);
    const int64_t old = gguf_index_find(&w->kv_index, key, key_len);
    if (old >= 0) {
        remove_kv_at(w, (size_t)old);
    }
    gguf_wkv *kv = &w->kvs[w->n_kv];
    kv->key = kcopy;
    kv->key_len = key_len;
    kv->type = type;
    kv->wire = wire;
    kv->wire_size = wire_size;
    if (gguf_index_insert(&w->kv_index, w->n_kv, NULL) < 0) {
        free(wire);
        free(kcopy);
        return anvil__nomem(err);
    }
    w->n_kv++;
    /* The padding follows general.alignment from the moment it is stored. */
    check_reserved(w, key, key_len, type, value, value_size, 1, NULL);
    return ANVIL_OK;
}

static int put_scalar(anvil_gguf_writer *w, const char *key, uint32_t type, uint64_t bits, anvil_error *err) {
    uint8_t v[8];
    const size_t n = anvil_gguf_type_size(type);
    for (size_t i = 0; i < n; ++i) {
        v[i] = (uint8_t)(bits >> (8 * i));
    }
    return put_kv(w, key, key != NULL ? strlen(key) : 0, type, v, n, err);
}

ANVIL_API int anvil_gguf_writer_set_u8(anvil_gguf_writer *w, const char *key, uint8_t v, anvil_error *err) {
    return put_scalar(w, key, ANVIL_GGUF_TYPE_U8, v, err);
}
ANVIL_API int anvil_gguf_writer_set_i8(anvil_gguf_writer *w, const char *key, int8_t v, anvil_error *err) {
    return put_scalar(w, key, ANVIL_GGUF_TYPE_I8, (uint8_t)v, err);
}
ANVIL_API int anvil_gguf_writer_set_u16(anvil_gguf_writer *w, const char *key, uint16_t v, anvil_error *err) {
    return put_scalar(w, key, ANVIL_GGUF_TYPE_U16, v, err);
}
ANVIL_API int anvil_gguf_writer_set_i16(anvil_gguf_writer *w, const char *key, int16_t v, anvil_error *err) {
    return put_scalar(w, key, ANVIL_GGUF_TYPE_I16, (uint16_t)v, err);
}
ANVIL_API int anvil_gguf_writer_set_u32(anvil_gguf_writer *w, const char *key, uint32_t v, anvil_error *err) {
    return put_scalar(w, key, ANVIL_GGUF_TYPE_U32, v, err);
}
ANVIL_API int anvil_gguf_writer_set_i32(anvil_gguf_writer *w, const char *key, int32_t v, anvil_error *err) {
    return put_scalar(w, key, ANVIL_GGUF_TYPE_I32, (uint32_t)v, err);
}
ANVIL_API int anvil_gguf_writer_set_u64(anvil_gguf_writer *w, const char *key, uint64_t v, anvil_error *err) {
    return put_scalar(w, key, ANVIL_GGUF_TYPE_U64, v, err);
}
ANVIL_API int anvil_gguf_writer_set_i64(anvil_gguf_writer *w, const char *key, int64_t v, anvil_error *err) {
    return put_scalar(w, key, ANVIL_GGUF_TYPE_I64, (uint64_t)v, err);
}
ANVIL_API int anvil_gguf_writer_set_f32(anvil_gguf_writer *w, const char *key, float v, anvil_error *err) {
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits); /* bit pattern kept: NaN payloads survive */
    return put_scalar(w, key, ANVIL_GGUF_TYPE_F32, bits, err);
}
ANVIL_API int anvil_gguf_writer_set_f64(anvil_gguf_writer *w, const char *key, double v, anvil_error *err) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return put_scalar(w, key, ANVIL_GGUF_TYPE_F64, bits, err);
}
ANVIL_API int anvil_gguf_writer_set_bool(anvil_gguf_writer *w, const char *key, int v, anvil_error *err) {
    return put_scalar(w, key, ANVIL_GGUF_TYPE_BOOL, v != 0, err);
}

ANVIL_API int anvil_gguf_writer_set_string_n(anvil_gguf_writer *w, const char *key, const char *s, size_t len,
                                             anvil_error *err) {
    if (s == NULL && len > 0) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL string");
    }
    if (len > SIZE_MAX - 8) {
        return anvil__error_set(err, ANVIL_E_OVERFLOW, "string too long");
    }
    uint8_t *v = malloc(8 + len);
    if (v == NULL) {
        return anvil__nomem(err);
    }
    gguf_store_u64(v, len);
    if (len > 0) {
        memcpy(v + 8, s, len);
    }
    const int rc = put_kv(w, key, key != NULL ? strlen(key) : 0, ANVIL_GGUF_TYPE_STRING, v, 8 + len, err);
    free(v);
    return rc;
}

ANVIL_API int anvil_gguf_writer_set_string(anvil_gguf_writer *w, const char *key, const char *s, anvil_error *err) {
    if (s == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL string");
    }
    return anvil_gguf_writer_set_string_n(w, key, s, strlen(s), err);
}

ANVIL_API int anvil_gguf_writer_set_array(anvil_gguf_writer *w, const char *key, uint32_t elem_type,
                                          const void *values, uint64_t count, anvil_error *err) {
    const size_t es = anvil_gguf_type_size(elem_type);
    if (es == 0) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "anvil_gguf_writer_set_array takes fixed-width element types; "
                                "use set_string_array for strings (type %" PRIu32 ")",
                                elem_type);
    }
    uint64_t bytes;
    if (gguf_mul_overflows(count, es, &bytes) || bytes > SIZE_MAX - 12) {
        return anvil__error_set(err, ANVIL_E_OVERFLOW, "array of %" PRIu64 " values is too large", count);
    }
    if (values == NULL && count > 0) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL array values");
    }
    uint8_t *v = malloc(12 + (size_t)bytes);
    if (v == NULL) {
        return anvil__nomem(err);
    }
    gguf_store_u32(v, elem_type);
    gguf_store_u64(v + 4, count);
    const uint8_t *src = values;
    for (uint64_t i = 0; i < count; ++i) {
        uint8_t *dst = v + 12 + i * es;
        const uint8_t *e = src + i * es;
        switch (es) {
        case 1: dst[0] = elem_type == ANVIL_GGUF_TYPE_BOOL ? (e[0] != 0) : e[0]; break;
        case 2: {
            uint16_t x;
            memcpy(&x, e, 2);
            gguf_store_u16(dst, x);
            break;
        }
        case 4: {
            uint32_t x;
            memcpy(&x, e, 4);
            gguf_store_u32(dst, x);
            break;
        }
        default: {
            uint64_t x;
            memcpy(&x, e, 8);
            gguf_store_u64(dst, x);
            break;
        }
        }
    }
    const int rc = put_kv(w, key, key != NULL ? strlen(key) : 0, ANVIL_GGUF_TYPE_ARRAY, v, 12 + (size_t)bytes, err);
    free(v);
    return rc;
}

ANVIL_API int anvil_gguf_writer_set_str_array(anvil_gguf_writer *w, const char *key, const anvil_gguf_str *items,
                                              uint64_t count, anvil_error *err) {
    if (items == NULL && count > 0) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL string array");
    }
    uint64_t total = 12;
    for (uint64_t i = 0; i < count; ++i) {
        if ((items[i].ptr == NULL && items[i].len > 0) || gguf_add_overflows(total, 8, &total) ||
            gguf_add_overflows(total, items[i].len, &total)) {
            return anvil__error_set(err, ANVIL_E_INVALID_ARG, "string %" PRIu64 " is invalid", i);
        }
    }
    if (total > SIZE_MAX) {
        return anvil__error_set(err, ANVIL_E_OVERFLOW, "string array too large");
    }
    uint8_t *v = malloc((size_t)total);
    if (v == NULL) {
        return anvil__nomem(err);
    }
    gguf_store_u32(v, ANVIL_GGUF_TYPE_STRING);
    gguf_store_u64(v + 4, count);
    size_t at = 12;
    for (uint64_t i = 0; i < count; ++i) {
        gguf_store_u64(v + at, items[i].len);
        if (items[i].len > 0) {
            memcpy(v + at + 8, items[i].ptr, items[i].len);
        }
        at += 8 + items[i].len;
    }
    const int rc = put_kv(w, key, key != NULL ? strlen(key) : 0, ANVIL_GGUF_TYPE_ARRAY, v, (size_t)total, err);
    free(v);
    return rc;
}

ANVIL_API int anvil_gguf_writer_set_string_array(anvil_gguf_writer *w, const char *key, const char *const *items,
                                                 uint64_t count, anvil_error *err) {
    if (items == NULL && count > 0) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL string array");
    }
    if (count > SIZE_MAX / sizeof(anvil_gguf_str)) {
        return anvil__error_set(err, ANVIL_E_OVERFLOW, "string array too large");
    }
    anvil_gguf_str *s = malloc((count > 0 ? (size_t)count : 1) * sizeof *s);
    if (s == NULL) {
        return anvil__nomem(err);
    }
    for (uint64_t i = 0; i < count; ++i) {
        if (items[i] == NULL) {
            free(s);
            return anvil__error_set(err, ANVIL_E_INVALID_ARG, "string %" PRIu64 " is NULL", i);
        }
        s[i].ptr = items[i];
        s[i].len = strlen(items[i]);
    }
    const int rc = anvil_gguf_writer_set_str_array(w, key, s, count, err);
    free(s);
    return rc;
}

ANVIL_API int anvil_gguf_writer_copy_kv(anvil_gguf_writer *w, const anvil_gguf_kv *kv, anvil_error *err) {
    if (kv == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL KV");
    }
    return put_kv(w, kv->key, kv->key_len, kv->type, kv->raw, kv->raw_size, err);
}

ANVIL_API int anvil_gguf_writer_copy_kv_as(anvil_gguf_writer *w, const anvil_gguf_kv *kv, const char *key,
                                           anvil_error *err) {
    if (kv == NULL || key == NULL || key[0] == '\0') {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL KV or empty key");
    }
    return put_kv(w, key, strlen(key), kv->type, kv->raw, kv->raw_size, err);
}

/* ggml reads a bool byte as (b != 0) and writes it back as 0/1. */
static int copy_kv_canonical_bool(anvil_gguf_writer *w, const anvil_gguf_kv *kv, anvil_error *err) {
    const int scalar = kv->type == ANVIL_GGUF_TYPE_BOOL;
    const int array = kv->type == ANVIL_GGUF_TYPE_ARRAY && kv->elem_type == ANVIL_GGUF_TYPE_BOOL;
    if (!scalar && !array) {
        return anvil_gguf_writer_copy_kv(w, kv, err);
    }
    uint8_t *v = malloc(kv->raw_size > 0 ? kv->raw_size : 1);
    if (v == NULL) {
        return anvil__nomem(err);
    }
    memcpy(v, kv->raw, kv->raw_size);
    for (size_t i = array ? 12 : 0; i < kv->raw_size; ++i) {
        v[i] = v[i] != 0;
    }
    const int rc = put_kv(w, kv->key, kv->key_len, kv->type, v, kv->raw_size, err);
    free(v);
    return rc;
}

ANVIL_API int anvil_gguf_writer_remove_key(anvil_gguf_writer *w, const char *key) {
    if (w == NULL || key == NULL || w->state != GGUF_W_BUILDING) {
        return 0;
    }
    const int64_t i = gguf_index_find(&w->kv_index, key, strlen(key));
    if (i < 0) {
        return 0;
    }
    remove_kv_at(w, (size_t)i);
    if (strcmp(key, ANVIL_GGUF_KEY_ALIGNMENT) == 0) {
        w->alignment = ANVIL_GGUF_DEFAULT_ALIGNMENT;
    }
    return 1;
}

ANVIL_API size_t anvil_gguf_writer_kv_count(const anvil_gguf_writer *w) { return w->n_kv; }
ANVIL_API uint32_t anvil_gguf_writer_alignment(const anvil_gguf_writer *w) { return w->alignment; }

/* ---- tensors ------------------------------------------------------------- */

static int add_tensor(anvil_gguf_writer *w, const char *name, size_t name_len, uint32_t type, uint32_t n_dims,
                      const uint64_t *ne, const void *data, uint64_t size, anvil_error *err) {
    int rc = check_building(w, err);
    if (rc != ANVIL_OK) {
        return rc;
    }
    if (name == NULL || (ne == NULL && n_dims > 0)) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL tensor name or dims");
    }
    if (name_len > ANVIL_GGUF_MAX_TENSOR_NAME || memchr(name, '\0', name_len) != NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "tensor name '%.*s...' is %zu bytes%s; ggml accepts names of at "
                                "most %d bytes without NUL bytes",
                                (int)(name_len > 40 ? 40 : name_len), name, name_len,
                                memchr(name, '\0', name_len) != NULL ? " with a NUL byte" : "",
                                ANVIL_GGUF_MAX_TENSOR_NAME);
    }
    if (n_dims > ANVIL_GGUF_MAX_DIMS) {
        return anvil__error_set(err, ANVIL_E_GGUF_DIMS, "tensor '%s': %" PRIu32 " dims (at most %d)", name, n_dims,
                                ANVIL_GGUF_MAX_DIMS);
    }
    gguf_wtensor t;
    memset(&t, 0, sizeof t);
    uint64_t n_elements = 1;
    for (uint32_t j = 0; j < ANVIL_GGUF_MAX_DIMS; ++j) {
        t.ne[j] = j < n_dims ? ne[j] : 1;
        if (t.ne[j] > (uint64_t)INT64_MAX || gguf_mul_overflows(n_elements, t.ne[j], &n_elements) ||
            n_elements > (uint64_t)INT64_MAX) {
            return anvil__error_set(err, ANVIL_E_GGUF_DIMS, "tensor '%s': dims overflow the element count", name);
        }
    }
    anvil_type_info ti;
    anvil_error lookup;
    anvil__error_clear(&lookup);
    if (anvil_type_lookup(w->ctx, type, &ti, &lookup) != ANVIL_OK) {
        return anvil__error_set(err, ANVIL_E_GGUF_TENSOR_TYPE, "tensor '%s': %s", name, lookup.message);
    }
    if (ti.block_elems == 0 || ti.block_bytes == 0) {
        return anvil__error_set(err, ANVIL_E_GGUF_TENSOR_TYPE,
                                "tensor '%s': type %s has an empty "
                                "block",
                                name, ti.name);
    }
    if (t.ne[0] % ti.block_elems != 0) {
        return anvil__error_set(err, ANVIL_E_GGUF_ROW_BLOCKS,
                                "tensor '%s' (%s): rows of %" PRIu64 " elements are not a whole "
                                "number of %" PRIu32 "-element blocks",
                                name, ti.name, t.ne[0], ti.block_elems);
    }
    if (gguf_mul_overflows(n_elements / ti.block_elems, ti.block_bytes, &t.n_bytes) ||
        t.n_bytes > (uint64_t)INT64_MAX) {
        return anvil__error_set(err, ANVIL_E_GGUF_DIMS, "tensor '%s': byte size overflows", name);
    }
    if (data != NULL && size != t.n_bytes) {
        return anvil__error_set(err, ANVIL_E_GGUF_WRITER,
                                "tensor '%s' (%s, %" PRIu64 " elements) is %" PRIu64 " bytes but "
                                "%" PRIu64 " bytes were given",
                                name, ti.name, n_elements, t.n_bytes, size);
    }
    /* As ggml_n_dims: drop trailing dims of exactly 1 (a 0 dim is kept:
     * ggml would drop it too and write a directory entry whose size
     * disagrees with its data). */
    t.disk_dims = 1;
    for (uint32_t j = ANVIL_GGUF_MAX_DIMS; j-- > 1;) {
        if (t.ne[j] != 1) {
            t.disk_dims = j + 1;
            break;
        }
    }
    t.type = type;
    t.data = data;
    t.name_len = name_len;
    t.name = malloc(name_len + 1);
    if (t.name == NULL) {
        return anvil__nomem(err);
    }
    memcpy(t.name, name, name_len);
    t.name[name_len] = '\0';
    if (anvil__grow_array((void **)&w->tensors, &w->cap_tensors, w->n_tensors + 1, sizeof *w->tensors) != ANVIL_OK) {
        free(t.name);
        return anvil__nomem(err);
    }
    gguf_index_rebase(&w->tensor_index, w->tensors);
    w->tensors[w->n_tensors] = t;
    rc = gguf_index_insert(&w->tensor_index, w->n_tensors, NULL);
    if (rc != 0) {
        free(t.name);
        if (rc == 1) {
            return anvil__error_set(err, ANVIL_E_GGUF_DUP_TENSOR, "tensor '%s' was already added", name);
        }
        return anvil__nomem(err);
    }
    w->n_tensors++;
    return ANVIL_OK;
}

ANVIL_API int anvil_gguf_writer_add_tensor(anvil_gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                                           const uint64_t *ne, const void *data, uint64_t size, anvil_error *err) {
    return add_tensor(w, name, name != NULL ? strlen(name) : 0, type, n_dims, ne, data, size, err);
}

int gguf_writer_exact_dims(anvil_gguf_writer *w, uint32_t n_dims, anvil_error *err) {
    if (w->n_tensors == 0 || n_dims > ANVIL_GGUF_MAX_DIMS || n_dims < w->tensors[w->n_tensors - 1].disk_dims) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "exact dims %" PRIu32 " for no tensor or too few", n_dims);
    }
    w->tensors[w->n_tensors - 1].disk_dims = n_dims;
    return ANVIL_OK;
}

ANVIL_API size_t anvil_gguf_writer_tensor_count(const anvil_gguf_writer *w) { return w->n_tensors; }

ANVIL_API uint64_t anvil_gguf_writer_tensor_bytes(const anvil_gguf_writer *w, size_t i) {
    return i < w->n_tensors ? w->tensors[i].n_bytes : 0;
}

static int is_split_key(const char *key) {
    return strcmp(key, ANVIL_GGUF_KEY_SPLIT_NO) == 0 || strcmp(key, ANVIL_GGUF_KEY_SPLIT_COUNT) == 0 ||
           strcmp(key, ANVIL_GGUF_KEY_SPLIT_TENSORS) == 0;
}

ANVIL_API int anvil_gguf_writer_copy_from(anvil_gguf_writer *w, const anvil_gguf *src, unsigned flags,
                                          anvil_error *err) {
    if (src == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL source");
    }
    int rc = check_building(w, err);
    if (rc != ANVIL_OK) {
        return rc;
    }
    if (flags & ANVIL_GGUF_COPY_KVS) {
        const size_t n = anvil_gguf_kv_count(src);
        for (size_t i = 0; i < n && rc == ANVIL_OK; ++i) {
            const anvil_gguf_kv *kv = anvil_gguf_kv_at(src, i);
            if ((flags & ANVIL_GGUF_COPY_SKIP_SPLIT_KEYS) && is_split_key(kv->key)) {
                continue;
            }
            rc = (flags & ANVIL_GGUF_COPY_CANONICAL_BOOL) ? copy_kv_canonical_bool(w, kv, err)
                                                          : anvil_gguf_writer_copy_kv(w, kv, err);
        }
    }
    if (flags & ANVIL_GGUF_COPY_TENSORS) {
        const size_t n = anvil_gguf_tensor_count(src);
        for (size_t i = 0; i < n && rc == ANVIL_OK; ++i) {
            const anvil_gguf_tensor *t = anvil_gguf_tensor_at(src, i);
            const int declare = (flags & ANVIL_GGUF_COPY_DECLARE_ONLY) != 0;
            rc = add_tensor(w, t->name, t->name_len, t->type, t->n_dims, t->ne, declare ? NULL : t->data,
                            declare ? 0 : t->n_bytes, err);
        }
    }
    return rc;
}
