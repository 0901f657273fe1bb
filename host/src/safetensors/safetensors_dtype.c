/* SPDX-License-Identifier: MIT */
/*
 * safetensors dtypes: names, widths, byte sizes, and the f32 view of the
 * three float dtypes the rest of anvil computes with.
 */
#include <stdio.h>
#include <string.h>

#include "anvil/numeric.h"
#include "anvil/safetensors.h"
#include "error.h"
#include "json.h"
#include "safetensors_internal.h"

/* Upstream's declaration order; the enum values index this table. */
static const struct {
    const char *name;
    unsigned bits;
} dtypes[ANVIL_ST_DTYPE_COUNT] = {
    [ANVIL_ST_BOOL] = { "BOOL", 8 },
    [ANVIL_ST_F4] = { "F4", 4 },
    [ANVIL_ST_F6_E2M3] = { "F6_E2M3", 6 },
    [ANVIL_ST_F6_E3M2] = { "F6_E3M2", 6 },
    [ANVIL_ST_U8] = { "U8", 8 },
    [ANVIL_ST_I8] = { "I8", 8 },
    [ANVIL_ST_F8_E5M2] = { "F8_E5M2", 8 },
    [ANVIL_ST_F8_E4M3] = { "F8_E4M3", 8 },
    [ANVIL_ST_F8_E8M0] = { "F8_E8M0", 8 },
    [ANVIL_ST_F8_E4M3FNUZ] = { "F8_E4M3FNUZ", 8 },
    [ANVIL_ST_F8_E5M2FNUZ] = { "F8_E5M2FNUZ", 8 },
    [ANVIL_ST_I16] = { "I16", 16 },
    [ANVIL_ST_U16] = { "U16", 16 },
    [ANVIL_ST_F16] = { "F16", 16 },
    [ANVIL_ST_BF16] = { "BF16", 16 },
    [ANVIL_ST_I32] = { "I32", 32 },
    [ANVIL_ST_U32] = { "U32", 32 },
    [ANVIL_ST_F32] = { "F32", 32 },
    [ANVIL_ST_C64] = { "C64", 64 },
    [ANVIL_ST_F64] = { "F64", 64 },
    [ANVIL_ST_I64] = { "I64", 64 },
    [ANVIL_ST_U64] = { "U64", 64 },
};

ANVIL_API const char *anvil_st_dtype_name(anvil_st_dtype dtype) {
    return (unsigned)dtype < ANVIL_ST_DTYPE_COUNT ? dtypes[dtype].name : NULL;
}

ANVIL_API unsigned anvil_st_dtype_bits(anvil_st_dtype dtype) {
    return (unsigned)dtype < ANVIL_ST_DTYPE_COUNT ? dtypes[dtype].bits : 0;
}

ANVIL_API int anvil_st_dtype_from_name(const char *name, anvil_st_dtype *out) {
    if (name != NULL) {
        for (unsigned i = 0; i < ANVIL_ST_DTYPE_COUNT; i++) {
            if (strcmp(name, dtypes[i].name) == 0) {
                *out = (anvil_st_dtype)i;
                return ANVIL_OK;
            }
        }
    }
    return ANVIL_E_ST_DTYPE;
}

void anvil__st_quote(char dst[ANVIL_ST_QUOTED_MAX], const char *name) {
    anvil__json_quote_for_message(dst, ANVIL_ST_QUOTED_MAX, name, strlen(name), 160);
}

/* Same arithmetic as upstream's validate(): product of the dims, times the
 * dtype's bits, each step checked; the bit count must be whole bytes. */
int anvil__st_tensor_bytes(anvil_st_dtype dtype, const uint64_t *shape, size_t rank, const char *name,
                           uint64_t *n_elements, uint64_t *bytes, anvil_error *err) {
    char q[ANVIL_ST_QUOTED_MAX];
    uint64_t n = 1;
    for (size_t i = 0; i < rank; i++) {
        if (shape[i] != 0 && n > UINT64_MAX / shape[i]) {
            anvil__st_quote(q, name);
            return anvil__error_set(err, ANVIL_E_ST_OVERFLOW,
                                    "tensor %s: the element count of its shape overflows 64 bits "
                                    "at dim %zu (%llu); the header is corrupt or hostile",
                                    q, i, (unsigned long long)shape[i]);
        }
        n *= shape[i];
    }
    const unsigned bits = anvil_st_dtype_bits(dtype);
    if (n > UINT64_MAX / bits) {
        anvil__st_quote(q, name);
        return anvil__error_set(err, ANVIL_E_ST_OVERFLOW,
                                "tensor %s: %llu elements of %s overflow a 64-bit bit count; "
                                "the header is corrupt or hostile",
                                q, (unsigned long long)n, anvil_st_dtype_name(dtype));
    }
    const uint64_t nbits = n * bits;
    if (nbits % 8 != 0) {
        anvil__st_quote(q, name);
        return anvil__error_set(err, ANVIL_E_ST_SUBBYTE,
                                "tensor %s: %llu elements of %u-bit %s make %llu bits, not a whole "
                                "number of bytes (sub-byte tensors must fill their last byte)",
                                q, (unsigned long long)n, bits, anvil_st_dtype_name(dtype),
                                (unsigned long long)nbits);
    }
    *n_elements = n;
    *bytes = nbits / 8;
    return ANVIL_OK;
}

ANVIL_API int anvil_st_tensor_to_f32(const anvil_st_tensor *t, float *dst, size_t n, anvil_error *err) {
    if (t == NULL || (dst == NULL && n != 0)) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_st_tensor_to_f32: NULL argument");
    }
    char q[ANVIL_ST_QUOTED_MAX];
    if (t->dtype != ANVIL_ST_F32 && t->dtype != ANVIL_ST_F16 && t->dtype != ANVIL_ST_BF16) {
        anvil__st_quote(q, t->name);
        return anvil__error_set(err, ANVIL_E_ST_CONVERSION,
                                "tensor %s: dtype %s is unsupported for conversion to f32 "
                                "(only F32, F16 and BF16 convert; its raw bytes are still readable)",
                                q, anvil_st_dtype_name(t->dtype) ? anvil_st_dtype_name(t->dtype) : "(invalid)");
    }
    if ((uint64_t)n != t->n_elements) {
        anvil__st_quote(q, t->name);
        return anvil__error_set(err, ANVIL_E_BUFFER_TOO_SMALL, "tensor %s has %llu elements but the output holds %zu",
                                q, (unsigned long long)t->n_elements, n);
    }
    /* Element size times count equals t->size for every validated tensor;
     * re-check so a hand-built view cannot make us read past its bytes. */
    const unsigned width = anvil_st_dtype_bits(t->dtype) / 8;
    if (t->size / width < t->n_elements || (t->data == NULL && n != 0)) {
        anvil__st_quote(q, t->name);
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "tensor %s: %llu bytes cannot hold %llu %s elements", q,
                                (unsigned long long)t->size, (unsigned long long)t->n_elements,
                                anvil_st_dtype_name(t->dtype));
    }
    /* The file is little-endian whatever the host is: assemble from bytes. */
    const unsigned char *b = t->data;
    switch (t->dtype) {
    case ANVIL_ST_F32:
        for (size_t i = 0; i < n; i++) {
            const unsigned char *p = b + 4 * i;
            dst[i] = anvil_f32_from_bits((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                                         (uint32_t)p[3] << 24);
        }
        break;
    case ANVIL_ST_F16:
        for (size_t i = 0; i < n; i++) {
            dst[i] = anvil_fp16_to_fp32((anvil_half)(b[2 * i] | b[2 * i + 1] << 8));
        }
        break;
    default: /* BF16 */
        for (size_t i = 0; i < n; i++) {
            dst[i] = anvil_bf16_to_fp32((uint16_t)(b[2 * i] | b[2 * i + 1] << 8));
        }
        break;
    }
    return ANVIL_OK;
}
