/* SPDX-License-Identifier: MIT */
/* anvil_encode / anvil_decode: the host's front door to codecs, plus the
 * plain float types (f32, f16, bf16) the host implements itself. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/numeric.h"
#include "ctx.h"
#include "error.h"

static int is_builtin_float(uint32_t t) { return t == ANVIL_TYPE_F32 || t == ANVIL_TYPE_F16 || t == ANVIL_TYPE_BF16; }

static int check_len(const char *name, size_t n, uint32_t be, uint32_t bb, size_t have, const char *what,
                     anvil_error *err) {
    if (n % be != 0) {
        return anvil__error_set(err, ANVIL_E_BLOCK_MISMATCH,
                                "%s: %zu elements is not a whole number of %u-element blocks (%zu left over)", name,
                                n, be, n % be);
    }
    const size_t blocks = n / be;
    if (blocks > SIZE_MAX / bb) return anvil__error_set(err, ANVIL_E_OVERFLOW, "%s: %zu elements overflow", name, n);
    if (have < blocks * bb) {
        return anvil__error_set(err, ANVIL_E_BUFFER_TOO_SMALL, "%s: %s holds %zu bytes, %zu elements need %zu", name,
                                what, have, n, blocks * bb);
    }
    return ANVIL_OK;
}

/* check_len for the float types the host implements (f32, f16, bf16). */
static int check_float_len(uint32_t type, size_t n, size_t have, const char *what, anvil_error *err) {
    const uint32_t es = type == ANVIL_TYPE_F32 ? 4 : 2;
    const char *name = type == ANVIL_TYPE_F32 ? "f32" : (type == ANVIL_TYPE_F16 ? "f16" : "bf16");
    return check_len(name, n, 1, es, have, what, err);
}

ANVIL_API int anvil_encode(anvil_ctx *ctx, uint32_t type, const float *src, size_t n, void *dst, size_t dst_size,
                           anvil_error *err) {
    anvil__error_clear(err);
    if ((src == NULL || dst == NULL) && n > 0) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_encode: NULL buffer");
    }
    if (is_builtin_float(type)) {
        int rc = check_float_len(type, n, dst_size, "destination", err);
        if (rc != ANVIL_OK) return rc;
        if (type == ANVIL_TYPE_F32) {
            memcpy(dst, src, n * 4);
        } else {
            uint16_t *d = dst;
            for (size_t i = 0; i < n; ++i) {
                d[i] = type == ANVIL_TYPE_F16 ? anvil_fp32_to_fp16(src[i]) : anvil_fp32_to_bf16(src[i]);
            }
        }
        return ANVIL_OK;
    }
    const anvil_codec *c = NULL;
    int rc = anvil__codec_for(ctx, type, &c, err);
    if (rc != ANVIL_OK) return rc;
    if (c->encode == NULL) {
        return anvil__error_set(err, ANVIL_E_ENCODER_UNAVAILABLE, "%s: no byte-exact encoder: %s", c->name,
                                c->encode_note ? c->encode_note : "this codec is decode-only");
    }
    rc = check_len(c->name, n, c->block_elems, c->block_bytes, dst_size, "destination", err);
    if (rc != ANVIL_OK) return rc;
    char msg[512] = "";
    const dispatch_rec *d = anvil__dispatch_find(ctx, type);
    if (d != NULL && d->encoder != NULL) {
        rc = n > 0 ? d->encoder->encode_rows(src, dst, 1, n, NULL, msg, sizeof msg) : ANVIL_OK;
    } else {
        rc = c->encode(src, dst, n, msg, sizeof msg);
    }
    msg[sizeof msg - 1] = '\0';
    if (rc != ANVIL_OK) {
        return anvil__error_set(err, rc < 0 ? rc : ANVIL_E_INTERNAL, "%s",
                                msg[0] ? msg : "encoder failed without a message");
    }
    return ANVIL_OK;
}

ANVIL_API int anvil_encode_rows(anvil_ctx *ctx, uint32_t type, const float *src, size_t nrows, size_t n_per_row,
                                const float *imatrix, void *dst, size_t dst_size, anvil_error *err) {
    anvil__error_clear(err);
    if (nrows != 0 && n_per_row > SIZE_MAX / nrows) {
        return anvil__error_set(err, ANVIL_E_OVERFLOW, "anvil_encode_rows: %zu rows x %zu elements overflow", nrows,
                                n_per_row);
    }
    const size_t n = nrows * n_per_row;
    if (is_builtin_float(type)) return anvil_encode(ctx, type, src, n, dst, dst_size, err);
    if ((src == NULL || dst == NULL) && n > 0) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_encode_rows: NULL buffer");
    }
    const anvil_codec *c = NULL;
    int rc = anvil__codec_for(ctx, type, &c, err);
    if (rc != ANVIL_OK) return rc;
    if (n_per_row % c->block_elems != 0) {
        return anvil__error_set(err, ANVIL_E_BLOCK_MISMATCH,
                                "%s: rows of %zu elements are not a whole number of %u-element blocks", c->name,
                                n_per_row, c->block_elems);
    }
    rc = check_len(c->name, n, c->block_elems, c->block_bytes, dst_size, "destination", err);
    if (rc != ANVIL_OK) return rc;
    if (imatrix != NULL) {
        for (size_t j = 0; j < n_per_row; ++j) {
            if (!(imatrix[j] == imatrix[j]) || imatrix[j] > 3.4e38f || imatrix[j] < -3.4e38f) {
                return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                        "%s: importance weight %zu is %g; weights must be finite (ggml takes "
                                        "negative ones as given)",
                                        c->name, j, (double)imatrix[j]);
            }
        }
    }
    char msg[512] = "";
    /* A backend's encoder where dispatch chose one (same bytes, faster). */
    const dispatch_rec *d = anvil__dispatch_find(ctx, type);
    if (imatrix == NULL && d != NULL && d->encoder != NULL) {
        rc = n > 0 ? d->encoder->encode_rows(src, dst, nrows, n_per_row, NULL, msg, sizeof msg) : ANVIL_OK;
    } else if (imatrix != NULL && d != NULL && d->weighted != NULL) {
        const float *w = d->weighted_drops_imatrix ? NULL : imatrix;
        rc = n > 0 ? d->weighted->encode_rows(src, dst, nrows, n_per_row, w, msg, sizeof msg) : ANVIL_OK;
    } else if (c->encode_rows != NULL) {
        rc = c->encode_rows(src, dst, nrows, n_per_row, imatrix, msg, sizeof msg);
    } else if (imatrix != NULL) {
        return anvil__error_set(err, ANVIL_E_ENCODER_UNAVAILABLE,
                                "%s: the %s codec has no importance-weighted encoder; encode without an "
                                "importance matrix or update the plugin",
                                c->name, c->name);
    } else if (c->flags & ANVIL_CODEC_NEEDS_IMATRIX) {
        return anvil__error_set(err, ANVIL_E_NEEDS_IMATRIX,
                                "%s: ggml encodes this format only with an importance matrix (pass one, e.g. "
                                "--imatrix FILE)",
                                c->name);
    } else if (c->encode == NULL) {
        return anvil__error_set(err, ANVIL_E_ENCODER_UNAVAILABLE, "%s: no byte-exact encoder: %s", c->name,
                                c->encode_note ? c->encode_note : "this codec is decode-only");
    } else {
        const size_t row_bytes = n_per_row / c->block_elems * c->block_bytes;
        rc = ANVIL_OK;
        for (size_t r = 0; r < nrows && rc == ANVIL_OK; ++r) {
            rc = c->encode(src + r * n_per_row, (char *)dst + r * row_bytes, n_per_row, msg, sizeof msg);
        }
    }
    msg[sizeof msg - 1] = '\0';
    if (rc != ANVIL_OK) {
        return anvil__error_set(err, rc < 0 ? rc : ANVIL_E_INTERNAL, "%s",
                                msg[0] ? msg : "encoder failed without a message");
    }
    return ANVIL_OK;
}

/* Every f16's f32 value (256 KiB, made once from anvil_fp16_to_fp32, so
 * bit-identical to it): decoding a model's f16 weights is a table lookup, as
 * ggml does where it has no F16C. */
static float fp16_values[65536];
static pthread_once_t fp16_once = PTHREAD_ONCE_INIT;

static void fp16_fill(void) {
    for (uint32_t h = 0; h < 65536; ++h) fp16_values[h] = anvil_fp16_to_fp32((uint16_t)h);
}

static const float *fp16_table(void) {
    pthread_once(&fp16_once, fp16_fill);
    return fp16_values;
}

ANVIL_API int anvil_decode(anvil_ctx *ctx, uint32_t type, const void *src, size_t src_size, float *dst, size_t n,
                           anvil_error *err) {
    anvil__error_clear(err);
    if ((src == NULL || dst == NULL) && n > 0) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_decode: NULL buffer");
    }
    if (is_builtin_float(type)) {
        int rc = check_float_len(type, n, src_size, "source", err);
        if (rc != ANVIL_OK) return rc;
        if (type == ANVIL_TYPE_F32) {
            memcpy(dst, src, n * 4);
        } else {
            /* One loop per type (no per-element branch); a uint16_t view is
             * fine unless the caller's buffer is odd-aligned. */
            if (((uintptr_t)src & 1) == 0) {
                const uint16_t *h = src;
                if (type == ANVIL_TYPE_F16) {
                    const float *table = fp16_table();
                    for (size_t i = 0; i < n; ++i) dst[i] = table[h[i]];
                } else {
                    for (size_t i = 0; i < n; ++i) dst[i] = anvil_bf16_to_fp32(h[i]);
                }
            } else {
                const uint8_t *s = src;
                for (size_t i = 0; i < n; ++i) {
                    uint16_t h;
                    memcpy(&h, s + 2 * i, 2);
                    dst[i] = type == ANVIL_TYPE_F16 ? anvil_fp16_to_fp32(h) : anvil_bf16_to_fp32(h);
                }
            }
        }
        return ANVIL_OK;
    }
    const anvil_codec *c = NULL;
    int rc = anvil__codec_for(ctx, type, &c, err);
    if (rc != ANVIL_OK) return rc;
    rc = check_len(c->name, n, c->block_elems, c->block_bytes, src_size, "source", err);
    if (rc != ANVIL_OK) return rc;
    c->decode(src, dst, n);
    return ANVIL_OK;
}
