/* SPDX-License-Identifier: MIT */
/*
 * GGUF wire values: type names and sizes, and the typed view (integers
 * widened, floats as double) of the raw bytes the parser validated. Below the
 * file layer: it reads bytes, never a file (the getters by key, which look a
 * key up in an open file, are gguf_getters.c).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "gguf_internal.h"

static const struct {
    const char *name;
    size_t size;
} wire_types[ANVIL_GGUF_TYPE_COUNT] = {
    [ANVIL_GGUF_TYPE_U8] = { "u8", 1 },      [ANVIL_GGUF_TYPE_I8] = { "i8", 1 },
    [ANVIL_GGUF_TYPE_U16] = { "u16", 2 },    [ANVIL_GGUF_TYPE_I16] = { "i16", 2 },
    [ANVIL_GGUF_TYPE_U32] = { "u32", 4 },    [ANVIL_GGUF_TYPE_I32] = { "i32", 4 },
    [ANVIL_GGUF_TYPE_F32] = { "f32", 4 },    [ANVIL_GGUF_TYPE_BOOL] = { "bool", 1 },
    [ANVIL_GGUF_TYPE_STRING] = { "str", 0 }, [ANVIL_GGUF_TYPE_ARRAY] = { "arr", 0 },
    [ANVIL_GGUF_TYPE_U64] = { "u64", 8 },    [ANVIL_GGUF_TYPE_I64] = { "i64", 8 },
    [ANVIL_GGUF_TYPE_F64] = { "f64", 8 },
};

ANVIL_API const char *anvil_gguf_type_name(uint32_t type) {
    return type < ANVIL_GGUF_TYPE_COUNT ? wire_types[type].name : NULL;
}

ANVIL_API size_t anvil_gguf_type_size(uint32_t type) {
    return type < ANVIL_GGUF_TYPE_COUNT ? wire_types[type].size : 0;
}

static void set_signed(anvil_gguf_value *v, int64_t x) {
    v->kind = ANVIL_GGUF_KIND_INT;
    v->i = x;
    v->in_i64 = 1;
    v->in_u64 = x >= 0;
    v->u = x >= 0 ? (uint64_t)x : 0;
}

static void set_unsigned(anvil_gguf_value *v, uint64_t x) {
    v->kind = ANVIL_GGUF_KIND_INT;
    v->u = x;
    v->in_u64 = 1;
    /* A u64 >= 2^63 has no int64 form: it is never shown as negative. */
    v->in_i64 = x <= (uint64_t)INT64_MAX;
    v->i = v->in_i64 ? (int64_t)x : 0;
}

int gguf_value_at(uint32_t type, const uint8_t *raw, size_t raw_size, anvil_gguf_value *out) {
    memset(out, 0, sizeof *out);
    out->wire_type = type;
    const size_t fixed = anvil_gguf_type_size(type);
    if (fixed > 0 && raw_size < fixed) {
        return ANVIL_E_INVALID_ARG;
    }
    switch (type) {
    case ANVIL_GGUF_TYPE_U8: set_unsigned(out, raw[0]); break;
    case ANVIL_GGUF_TYPE_I8: set_signed(out, (int8_t)raw[0]); break;
    case ANVIL_GGUF_TYPE_U16: set_unsigned(out, gguf_load_u16(raw)); break;
    case ANVIL_GGUF_TYPE_I16: set_signed(out, (int16_t)gguf_load_u16(raw)); break;
    case ANVIL_GGUF_TYPE_U32: set_unsigned(out, gguf_load_u32(raw)); break;
    case ANVIL_GGUF_TYPE_I32: set_signed(out, (int32_t)gguf_load_u32(raw)); break;
    case ANVIL_GGUF_TYPE_U64: set_unsigned(out, gguf_load_u64(raw)); break;
    case ANVIL_GGUF_TYPE_I64: set_signed(out, (int64_t)gguf_load_u64(raw)); break;
    case ANVIL_GGUF_TYPE_F32: {
        const uint32_t bits = gguf_load_u32(raw);
        float f;
        memcpy(&f, &bits, sizeof f);
        out->kind = ANVIL_GGUF_KIND_FLOAT;
        out->f = (double)f;
        break;
    }
    case ANVIL_GGUF_TYPE_F64: {
        const uint64_t bits = gguf_load_u64(raw);
        memcpy(&out->f, &bits, sizeof out->f);
        out->kind = ANVIL_GGUF_KIND_FLOAT;
        break;
    }
    case ANVIL_GGUF_TYPE_BOOL:
        out->kind = ANVIL_GGUF_KIND_BOOL;
        out->b = raw[0] != 0;
        break;
    case ANVIL_GGUF_TYPE_STRING: {
        if (raw_size < 8) {
            return ANVIL_E_INVALID_ARG;
        }
        const uint64_t len = gguf_load_u64(raw);
        if (len > raw_size - 8) {
            return ANVIL_E_INVALID_ARG;
        }
        out->kind = ANVIL_GGUF_KIND_STRING;
        out->s.ptr = (const char *)raw + 8;
        out->s.len = (size_t)len;
        break;
    }
    case ANVIL_GGUF_TYPE_ARRAY:
        if (raw_size < 12) {
            return ANVIL_E_INVALID_ARG;
        }
        out->kind = ANVIL_GGUF_KIND_ARRAY;
        out->a.elem_type = gguf_load_u32(raw);
        out->a.count = gguf_load_u64(raw + 4);
        out->a.data = raw + 12;
        out->a.size = raw_size - 12;
        break;
    default: return ANVIL_E_GGUF_KV_TYPE;
    }
    return ANVIL_OK;
}

ANVIL_API int anvil_gguf_kv_value(const anvil_gguf_kv *kv, anvil_gguf_value *out) {
    if (kv == NULL || out == NULL) {
        return ANVIL_E_INVALID_ARG;
    }
    return gguf_value_at(kv->type, kv->raw, kv->raw_size, out);
}

ANVIL_API int anvil_gguf_array_get(const anvil_gguf_array *a, uint64_t i, anvil_gguf_value *out) {
    if (a == NULL || out == NULL || i >= a->count) {
        return ANVIL_E_INVALID_ARG;
    }
    const uint8_t *p = a->data;
    if (a->elem_type == ANVIL_GGUF_TYPE_STRING) {
        size_t at = 0;
        for (uint64_t k = 0;; ++k) {
            if (a->size - at < 8) {
                return ANVIL_E_INVALID_ARG;
            }
            const uint64_t len = gguf_load_u64(p + at);
            if (len > a->size - at - 8) {
                return ANVIL_E_INVALID_ARG;
            }
            if (k == i) {
                return gguf_value_at(ANVIL_GGUF_TYPE_STRING, p + at, (size_t)(8 + len), out);
            }
            at += 8 + (size_t)len;
        }
    }
    const size_t es = anvil_gguf_type_size(a->elem_type);
    if (es == 0 || i >= a->size / es) {
        return ANVIL_E_INVALID_ARG;
    }
    return gguf_value_at(a->elem_type, p + i * es, es, out);
}

ANVIL_API uint64_t anvil_gguf_array_strings(const anvil_gguf_array *a, anvil_gguf_str *out, uint64_t cap) {
    if (a == NULL || a->elem_type != ANVIL_GGUF_TYPE_STRING) {
        return 0;
    }
    const uint8_t *p = a->data;
    size_t at = 0;
    uint64_t k = 0;
    for (; k < a->count && k < cap; ++k) {
        if (a->size - at < 8) {
            break;
        }
        const uint64_t len = gguf_load_u64(p + at);
        if (len > a->size - at - 8) {
            break;
        }
        out[k].ptr = (const char *)p + at + 8;
        out[k].len = (size_t)len;
        at += 8 + (size_t)len;
    }
    return k;
}
