/* SPDX-License-Identifier: MIT */
/* Q3_K: 3.4375 bits per weight. A 256-element super-block in sixteen groups
 * of 16; each group is x ~ d * sc * q with q in -4..3 and a 6-bit signed sc;
 * d is f16. Bytes: hmask[32] (the third bit of each code: element j's bit
 * lives in hmask[j % 32] at bit j / 32, set meaning "no -4"), qs[64] (low
 * two bits, packed as Q2_K), scales[12] (see anvil_kq_q3_scale), d. */
#include <math.h>
#include <string.h>

#include "anvil/blocks.h"
#include "anvil/numeric.h"
#include "ref/checks.h"
#include "ref/kquants.h"
#include "ref/kquants_search.h"
#include "ref/rows.h"

/* The value an int takes when stored in an int8_t on a two's complement
 * machine (ggml relies on it), without the implementation-defined cast. */
static int wrap_int8(int v) { return (int)((unsigned)v & 0xFFu) - (((unsigned)v & 0x80u) ? 256 : 0); }

/* Store the 6-bit code l (0..63, the scale + 32) of group j: low nibble in
 * byte j (j < 8) or the high half of byte j - 8, top two bits in byte
 * 8 + j % 4 at bit 2 (j / 4). The scale bytes start zeroed. */
static void put_scale(uint8_t scales[ANVIL_K_SCALE_SIZE], int j, int l) {
    if (j < 8) {
        scales[j] = (uint8_t)(l & 0xF);
    } else {
        scales[j - 8] |= (uint8_t)((l & 0xF) << 4);
    }
    l >>= 4;
    scales[j % 4 + 8] |= (uint8_t)(l << (2 * (j / 4)));
}

/* quantize_row_q3_K_ref: each group fitted by make_q3_quants (x^2 weights,
 * refined code by code), then the group scales quantized linearly so the
 * largest in magnitude lands on -32. Fills L, the scale bytes and d. */
static void scales_plain(const float *x, anvil_block_q3_K *y, int8_t L[ANVIL_QK_K]) {
    float sub_scale[ANVIL_QK_K / 16];

    /* The group scale of largest magnitude, sign kept (first one on ties). */
    float max_scale = 0;
    float amax = 0;
    for (int j = 0; j < ANVIL_QK_K / 16; ++j) {
        sub_scale[j] = anvil_kq_fit_symmetric_refined(16, 4, x + 16 * j, L + 16 * j);
        const float scale = fabsf(sub_scale[j]);
        if (scale > amax) {
            amax = scale;
            max_scale = sub_scale[j];
        }
    }

    if (max_scale != 0.0f) {
        /* The extreme scale maps to -32; every scale is stored + 32. */
        const float iscale = -32.f / max_scale;
        for (int j = 0; j < ANVIL_QK_K / 16; ++j) {
            int l = wrap_int8(anvil_nearest_int(iscale * sub_scale[j]));
            l = (l < -32 ? -32 : (l > 31 ? 31 : l)) + 32;
            put_scale(y->scales, j, l);
        }
        y->d = anvil_fp32_to_fp16(1 / iscale);
    } else {
        y->d = anvil_fp32_to_fp16(0.f);
    }
}

/* quantize_row_q3_K_impl: element weights qw * sqrt(2 mean x^2 + x^2)
 * (mean over the super-block), each group fitted by make_qx_quants with
 * those weights, then the group scales themselves fitted by make_qx_quants
 * weighted by each group's total weight. */
static void scales_weighted(const float *x, const float *qw, anvil_block_q3_K *y, int8_t L[ANVIL_QK_K]) {
    float sub_scale[ANVIL_QK_K / 16];
    float weights[16];
    float sw[ANVIL_QK_K / 16];
    int8_t ls[ANVIL_QK_K / 16];

    const float sigma2 = 2 * anvil_kq_sum_squares(x, ANVIL_QK_K) / ANVIL_QK_K;
    for (int j = 0; j < ANVIL_QK_K / 16; ++j) {
        sw[j] = anvil_kq_importance(16, x + 16 * j, qw + 16 * j, sigma2, weights);
        sub_scale[j] = anvil_kq_fit_symmetric(16, 4, x + 16 * j, L + 16 * j, weights);
    }
    const float d_block = anvil_kq_fit_symmetric(ANVIL_QK_K / 16, 32, sub_scale, ls, sw);
    for (int j = 0; j < ANVIL_QK_K / 16; ++j) {
        put_scale(y->scales, j, ls[j]);
    }
    y->d = anvil_fp32_to_fp16(d_block);
}

static void encode_block(const float *x, const float *qw, anvil_block_q3_K *y) {
    int8_t L[ANVIL_QK_K];
    memset(y->scales, 0, sizeof y->scales);
    if (qw != NULL) {
        scales_weighted(x, qw, y, L);
    } else {
        scales_plain(x, y, L);
    }

    /* Requantize against the stored scales; a group whose scale is 0 keeps
     * the search's codes. */
    const float d_all = anvil_fp16_to_fp32(y->d);
    for (int j = 0; j < ANVIL_QK_K / 16; ++j) {
        const float d = d_all * (float)anvil_kq_q3_scale(y->scales, j);
        if (d == 0.0f) {
            continue;
        }
        for (int ii = 0; ii < 16; ++ii) {
            int l = anvil_nearest_int(x[16 * j + ii] / d);
            l = l < -4 ? -4 : (l > 3 ? 3 : l);
            L[16 * j + ii] = (int8_t)(l + 4);
        }
    }

    /* Codes are 0..7 here; bit 2 goes to hmask, the rest to qs. */
    memset(y->hmask, 0, sizeof y->hmask);
    for (int j = 0; j < ANVIL_QK_K; ++j) {
        if (L[j] > 3) {
            y->hmask[j % 32] |= (uint8_t)(1u << (j / 32));
            L[j] = (int8_t)(L[j] - 4);
        }
    }
    for (int j = 0; j < ANVIL_QK_K; j += 128) {
        for (int l = 0; l < 32; ++l) {
            y->qs[j / 4 + l] =
                (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
        }
    }
}

ANVIL_REF_DEFINE_BLOCK_ENCODERS(q3_K, "q3_K", ANVIL_QK_K, anvil_block_q3_K, encode_block)

/* The 256 signed codes (-4..3) of a block, in element order. Element
 * 128 h + 32 j + l has its low bits in qs[32 h + l] at bit 2 j and its third
 * bit in hmask[l] at bit 4 h + j (clear: subtract 4). */
static void unpack_codes(const anvil_block_q3_K *b, int8_t q[ANVIL_QK_K]) {
    for (int h = 0; h < 2; ++h) {
        for (int j = 0; j < 4; ++j) {
            const int shift = 2 * j;
            const int hbit = 4 * h + j;
            int8_t *out = q + 128 * h + 32 * j;
            for (int l = 0; l < 32; ++l) {
                const int low = (b->qs[32 * h + l] >> shift) & 3;
                const int high = (b->hmask[l] >> hbit) & 1;
                out[l] = (int8_t)(low - (high ? 0 : 4));
            }
        }
    }
}

void anvil_ref_decode_q3_K(const void *src, float *dst, size_t n) {
    const anvil_block_q3_K *x = src;
    int8_t q[ANVIL_QK_K];
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i) {
        const float d_all = anvil_fp16_to_fp32(x[i].d);
        unpack_codes(&x[i], q);
        for (int g = 0; g < ANVIL_QK_K / 16; ++g) {
            const float dl = d_all * (float)anvil_kq_q3_scale(x[i].scales, g);
            for (int l = 0; l < 16; ++l) {
                *dst++ = dl * (float)q[16 * g + l];
            }
        }
    }
}

void anvil_ref_vec_dot_q3_K_q8_K(size_t n, float *s, const void *w, const void *a) {
    const anvil_block_q3_K *x = w;
    const anvil_block_q8_K *y = a;
    float sumf = 0;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i) {
        int8_t q3[ANVIL_QK_K];
        unpack_codes(&x[i], q3);
        int isum = 0;
        for (int g = 0; g < ANVIL_QK_K / 16; ++g) {
            int isuml = 0;
            for (int l = 16 * g; l < 16 * g + 16; ++l) {
                isuml += y[i].qs[l] * q3[l];
            }
            isum += anvil_kq_q3_scale(x[i].scales, g) * isuml;
        }
        const float d = anvil_fp16_to_fp32(x[i].d) * y[i].d;
        sumf += d * (float)isum;
    }
    *s = sumf;
}
