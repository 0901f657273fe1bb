/* SPDX-License-Identifier: MIT */
/* Q2_K: 2.625 bits per weight. A 256-element super-block in sixteen groups
 * of 16; each group is x ~ d * sc * q - dmin * m with q in 0..3 and 4-bit
 * sc, m; d and dmin are f16. Bytes: scales[16] (sc | m << 4), qs[64] (four
 * codes per byte: element l, l+32, l+64, l+96 of each 128-half in bit pairs
 * 0, 2, 4, 6), d, dmin. */
#include <math.h>
#include <string.h>

#include "anvil/blocks.h"
#include "anvil/numeric.h"
#include "ref/checks.h"
#include "ref/kquants.h"
#include "ref/kquants_search.h"
#include "ref/rows.h"

/* quantize_row_q2_K_ref: each group fitted with weights |x| by absolute
 * error, then 4-bit sub-scales and sub-mins relative to the largest of
 * each. Fills L, the scale bytes, d and dmin. */
static void scales_plain(const float *x, anvil_block_q2_K *y, uint8_t L[ANVIL_QK_K]) {
    uint8_t Laux[16];
    float weights[16];
    float sub_scale[ANVIL_QK_K / 16];
    float sub_min[ANVIL_QK_K / 16];
    const float q4scale = 15.f;

    float max_scale = 0;
    float max_min = 0;
    for (int j = 0; j < ANVIL_QK_K / 16; ++j) {
        for (int l = 0; l < 16; ++l) {
            weights[l] = fabsf(x[16 * j + l]);
        }
        sub_scale[j] =
            anvil_kq_fit_affine(16, 3, x + 16 * j, weights, L + 16 * j, &sub_min[j], Laux, -0.5f, 0.1f, 15, 1);
        if (sub_scale[j] > max_scale) {
            max_scale = sub_scale[j];
        }
        if (sub_min[j] > max_min) {
            max_min = sub_min[j];
        }
    }

    /* The codes are stored as ggml stores them: no clamp, low bits kept. */
    if (max_scale > 0) {
        const float iscale = q4scale / max_scale;
        for (int j = 0; j < ANVIL_QK_K / 16; ++j) {
            y->scales[j] = (uint8_t)anvil_nearest_int(iscale * sub_scale[j]);
        }
        y->d = anvil_fp32_to_fp16(max_scale / q4scale);
    } else {
        memset(y->scales, 0, sizeof y->scales);
        y->d = anvil_fp32_to_fp16(0.f);
    }
    if (max_min > 0) {
        const float iscale = q4scale / max_min;
        for (int j = 0; j < ANVIL_QK_K / 16; ++j) {
            const int l = anvil_nearest_int(iscale * sub_min[j]);
            y->scales[j] |= (uint8_t)((unsigned)l << 4);
        }
        y->dmin = anvil_fp32_to_fp16(max_min / q4scale);
    } else {
        y->dmin = anvil_fp32_to_fp16(0.f);
    }
}

/* quantize_row_q2_K_impl: element weights qw * sqrt(mean x^2 + x^2) (mean
 * over the super-block), a finer squared-error grid search per group, then
 * the sub-scales and sub-mins fitted as non-negative 4-bit codes weighted by
 * each group's total weight. */
static void scales_weighted(const float *x, const float *qw, anvil_block_q2_K *y, uint8_t L[ANVIL_QK_K]) {
    uint8_t Laux[16];
    float weights[16];
    float sub_scale[ANVIL_QK_K / 16];
    float sub_min[ANVIL_QK_K / 16];
    float sw[ANVIL_QK_K / 16];

    const float sigma2 = anvil_kq_sum_squares(x, ANVIL_QK_K) / ANVIL_QK_K;
    for (int j = 0; j < ANVIL_QK_K / 16; ++j) {
        sw[j] = anvil_kq_importance(16, x + 16 * j, qw + 16 * j, sigma2, weights);
        sub_scale[j] =
            anvil_kq_fit_affine(16, 3, x + 16 * j, weights, L + 16 * j, &sub_min[j], Laux, -0.9f, 0.05f, 36, 0);
    }
    uint8_t ls[ANVIL_QK_K / 16], lm[ANVIL_QK_K / 16];
    const float dm = anvil_kq_fit_positive(ANVIL_QK_K / 16, 15, sub_scale, ls, sw);
    const float mm = anvil_kq_fit_positive(ANVIL_QK_K / 16, 15, sub_min, lm, sw);
    y->d = anvil_fp32_to_fp16(dm);
    y->dmin = anvil_fp32_to_fp16(mm);
    for (int j = 0; j < ANVIL_QK_K / 16; ++j) {
        y->scales[j] = (uint8_t)(ls[j] | (lm[j] << 4));
    }
}

static void encode_block(const float *x, const float *qw, anvil_block_q2_K *y) {
    uint8_t L[ANVIL_QK_K];
    if (qw != NULL) {
        scales_weighted(x, qw, y, L);
    } else {
        scales_plain(x, y, L);
    }

    /* Requantize against the stored scales; a group whose scale is 0 keeps
     * the search's codes. */
    const float d_all = anvil_fp16_to_fp32(y->d);
    const float dmin_all = anvil_fp16_to_fp32(y->dmin);
    for (int j = 0; j < ANVIL_QK_K / 16; ++j) {
        const float d = d_all * (float)(y->scales[j] & 0xF);
        if (d == 0.0f) {
            continue;
        }
        const float dm = dmin_all * (float)(y->scales[j] >> 4);
        for (int ii = 0; ii < 16; ++ii) {
            int l = anvil_nearest_int((x[16 * j + ii] + dm) / d);
            l = l < 0 ? 0 : (l > 3 ? 3 : l);
            L[16 * j + ii] = (uint8_t)l;
        }
    }

    for (int j = 0; j < ANVIL_QK_K; j += 128) {
        for (int l = 0; l < 32; ++l) {
            y->qs[j / 4 + l] =
                (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
        }
    }
}

ANVIL_REF_DEFINE_BLOCK_ENCODERS(q2_K, "q2_K", ANVIL_QK_K, anvil_block_q2_K, encode_block)

void anvil_ref_decode_q2_K(const void *src, float *dst, size_t n) {
    const anvil_block_q2_K *x = src;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i) {
        const float d = anvil_fp16_to_fp32(x[i].d);
        const float min = anvil_fp16_to_fp32(x[i].dmin);
        const uint8_t *q = x[i].qs;
        int is = 0;
        for (int half = 0; half < ANVIL_QK_K; half += 128) {
            for (int shift = 0; shift < 8; shift += 2) {
                /* Two groups of 16 share each bit pair of 32 bytes. */
                for (int g = 0; g < 2; ++g) {
                    const uint8_t sc = x[i].scales[is++];
                    const float dl = d * (float)(sc & 0xF);
                    const float ml = min * (float)(sc >> 4);
                    for (int l = 0; l < 16; ++l) {
                        *dst++ = dl * (float)((q[16 * g + l] >> shift) & 3) - ml;
                    }
                }
            }
            q += 32;
        }
    }
}

void anvil_ref_vec_dot_q2_K_q8_K(size_t n, float *s, const void *w, const void *a) {
    const anvil_block_q2_K *x = w;
    const anvil_block_q8_K *y = a;
    float sumf = 0;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i) {
        const uint8_t *sc = x[i].scales;
        /* Min term: sum over groups of m * (sum of that group's activation
         * codes), which Q8_K already carries as bsums. */
        int summs = 0;
        for (int j = 0; j < 16; ++j) {
            summs += y[i].bsums[j] * (sc[j] >> 4);
        }
        const uint8_t *q2 = x[i].qs;
        const int8_t *q8 = y[i].qs;
        int isum = 0;
        int is = 0;
        for (int half = 0; half < ANVIL_QK_K / 128; ++half) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int g = 0; g < 2; ++g) {
                    int isuml = 0;
                    for (int l = 16 * g; l < 16 * g + 16; ++l) {
                        isuml += q8[l] * ((q2[l] >> shift) & 3);
                    }
                    isum += (sc[is++] & 0xF) * isuml;
                }
                q8 += 32;
            }
            q2 += 32;
        }
        const float dall = y[i].d * anvil_fp16_to_fp32(x[i].d);
        const float dmin = y[i].d * anvil_fp16_to_fp32(x[i].dmin);
        sumf += dall * (float)isum - dmin * (float)summs;
    }
    *s = sumf;
}
