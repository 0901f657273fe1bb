/* SPDX-License-Identifier: MIT */
/* Q6_K: 6.5625 bits per weight. A 256-element super-block in sixteen groups
 * of 16; each group is x ~ d * sc * q with q in -32..31 (stored + 32) and an
 * int8 sc; d is f16. Bytes: ql[128] (low nibbles), qh[64] (top two bits),
 * scales[16], d. Each 128-element half uses 64 ql bytes and 32 qh bytes:
 * element 32 k + l (k = 0..3) has its low nibble in ql[l + 32 (k & 1)]
 * (low half for k < 2, high half otherwise) and its top bits in qh[l] at
 * bit 2 k. */
#include <math.h>
#include <string.h>

#include "anvil/blocks.h"
#include "anvil/numeric.h"
#include "ref/checks.h"
#include "ref/kquants.h"
#include "ref/kquants_search.h"
#include "ref/rows.h"

/* See kquants_q3_k.c: an int stored into int8_t, two's complement. */
static int wrap_int8(int v) { return (int)((unsigned)v & 0xFFu) - (((unsigned)v & 0x80u) ? 256 : 0); }

/* quantize_row_q6_K_ref and, with importance weights qw (the block's 256),
 * quantize_row_q6_K_impl: they differ only in the weights of the group
 * fits (x^2, or qw itself). */
static void encode_block(const float *x, const float *qw, anvil_block_q6_K *y) {
    int8_t L[ANVIL_QK_K];
    float sub_scale[ANVIL_QK_K / 16];

    float max_scale = 0;
    float max_abs_scale = 0;
    for (int ib = 0; ib < ANVIL_QK_K / 16; ++ib) {
        sub_scale[ib] = anvil_kq_fit_symmetric(16, 32, x + 16 * ib, L + 16 * ib, qw ? qw + 16 * ib : NULL);
        const float abs_scale = fabsf(sub_scale[ib]);
        if (abs_scale > max_abs_scale) {
            max_abs_scale = abs_scale;
            max_scale = sub_scale[ib];
        }
    }
    if (max_abs_scale < ANVIL_KQ_GROUP_EPS) {
        /* Nothing to represent: an all-zero block (d = +0). */
        memset(y, 0, sizeof *y);
        y->d = anvil_fp32_to_fp16(0.f);
        return;
    }

    /* The extreme group scale maps to -128; the rest saturate at 127. */
    const float iscale = -128.f / max_scale;
    y->d = anvil_fp32_to_fp16(1 / iscale);
    for (int ib = 0; ib < ANVIL_QK_K / 16; ++ib) {
        const int v = anvil_nearest_int(iscale * sub_scale[ib]);
        y->scales[ib] = (int8_t)wrap_int8(v < 127 ? v : 127);
    }

    /* Requantize against the stored scales; a group whose scale is 0 keeps
     * the search's codes. */
    const float d_all = anvil_fp16_to_fp32(y->d);
    for (int j = 0; j < ANVIL_QK_K / 16; ++j) {
        const float d = d_all * (float)y->scales[j];
        if (d == 0.0f) {
            continue;
        }
        for (int ii = 0; ii < 16; ++ii) {
            int l = anvil_nearest_int(x[16 * j + ii] / d);
            l = l < -32 ? -32 : (l > 31 ? 31 : l);
            L[16 * j + ii] = (int8_t)(l + 32);
        }
    }

    uint8_t *ql = y->ql;
    uint8_t *qh = y->qh;
    for (int j = 0; j < ANVIL_QK_K; j += 128) {
        for (int l = 0; l < 32; ++l) {
            const int c0 = L[j + l], c1 = L[j + l + 32], c2 = L[j + l + 64], c3 = L[j + l + 96];
            ql[l] = (uint8_t)((c0 & 0xF) | ((c2 & 0xF) << 4));
            ql[l + 32] = (uint8_t)((c1 & 0xF) | ((c3 & 0xF) << 4));
            qh[l] = (uint8_t)((c0 >> 4) | ((c1 >> 4) << 2) | ((c2 >> 4) << 4) | ((c3 >> 4) << 6));
        }
        ql += 64;
        qh += 32;
    }
}

ANVIL_REF_DEFINE_BLOCK_ENCODERS(q6_K, "q6_K", ANVIL_QK_K, anvil_block_q6_K, encode_block)

/* The 256 signed codes (-32..31) of a block, in element order (layout in
 * the header comment). */
static void unpack_codes(const anvil_block_q6_K *b, int8_t q[ANVIL_QK_K]) {
    for (int h = 0; h < 2; ++h) {
        const uint8_t *ql = b->ql + 64 * h;
        const uint8_t *qh = b->qh + 32 * h;
        int8_t *out = q + 128 * h;
        for (int k = 0; k < 4; ++k) {
            const uint8_t *lo = ql + 32 * (k & 1);
            const int lo_shift = 4 * (k >> 1);
            for (int l = 0; l < 32; ++l) {
                const int v = ((lo[l] >> lo_shift) & 0xF) | (((qh[l] >> (2 * k)) & 3) << 4);
                out[32 * k + l] = (int8_t)(v - 32);
            }
        }
    }
}

void anvil_ref_decode_q6_K(const void *src, float *dst, size_t n) {
    const anvil_block_q6_K *x = src;
    int8_t q[ANVIL_QK_K];
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i) {
        const float d = anvil_fp16_to_fp32(x[i].d);
        unpack_codes(&x[i], q);
        /* (d * sc) * q per element, as ggml rounds it. */
        for (int g = 0; g < ANVIL_QK_K / 16; ++g) {
            const float sc = (float)x[i].scales[g];
            for (int l = 0; l < 16; ++l) {
                dst[16 * g + l] = d * sc * (float)q[16 * g + l];
            }
        }
        dst += ANVIL_QK_K;
    }
}

void anvil_ref_vec_dot_q6_K_q8_K(size_t n, float *s, const void *w, const void *a) {
    const anvil_block_q6_K *x = w;
    const anvil_block_q8_K *y = a;
    float sumf = 0;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i) {
        int8_t q6[ANVIL_QK_K];
        unpack_codes(&x[i], q6);
        int isum = 0;
        for (int g = 0; g < ANVIL_QK_K / 16; ++g) {
            int isuml = 0;
            for (int l = 16 * g; l < 16 * g + 16; ++l) {
                isuml += y[i].qs[l] * q6[l];
            }
            isum += x[i].scales[g] * isuml;
        }
        const float d = anvil_fp16_to_fp32(x[i].d) * y[i].d;
        sumf += d * (float)isum;
    }
    *s = sumf;
}
