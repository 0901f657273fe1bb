/* SPDX-License-Identifier: MIT */
/* Q5_K: 5.5 bits per weight. As Q4_K with codes 0..31: the low four bits in
 * qs[128] laid out as Q4_K's, the fifth in qh[32] (element 32 k + l of the
 * block has its bit in qh[l] at bit k). Bytes: d, dmin, scales[12], qh, qs. */
#include <string.h>

#include "anvil/blocks.h"
#include "anvil/numeric.h"
#include "ref/checks.h"
#include "ref/kquants.h"
#include "ref/kquants_search.h"
#include "ref/rows.h"

/* ggml's constants: quantize_row_q5_K_ref searches 16 grids stretched by
 * -0.5 + 0.1 k levels (k = 0..15); quantize_row_q5_K_impl caps its 6-bit
 * codes at 63. */
static const anvil_kq_k4_format k4_format = { 31, -0.5f, 15, 1 };

static void encode_block(const float *x, const float *qw, anvil_block_q5_K *y) {
    uint8_t L[ANVIL_QK_K];
    anvil_kq_encode_affine_k4(x, qw, &k4_format, L, y->scales, &y->d, &y->dmin);
    memset(y->qh, 0, sizeof y->qh);
    uint8_t *ql = y->qs;
    for (int n = 0; n < ANVIL_QK_K; n += 64) {
        const int bit = n / 32; /* this span's two groups: bits n/32, n/32 + 1 */
        for (int j = 0; j < 32; ++j) {
            int l1 = L[n + j];
            int l2 = L[n + j + 32];
            if (l1 > 15) {
                l1 -= 16;
                y->qh[j] |= (uint8_t)(1u << bit);
            }
            if (l2 > 15) {
                l2 -= 16;
                y->qh[j] |= (uint8_t)(1u << (bit + 1));
            }
            ql[j] = (uint8_t)(l1 | (l2 << 4));
        }
        ql += 32;
    }
}

ANVIL_REF_DEFINE_BLOCK_ENCODERS(q5_K, "q5_K", ANVIL_QK_K, anvil_block_q5_K, encode_block)

void anvil_ref_decode_q5_K(const void *src, float *dst, size_t n) {
    const anvil_block_q5_K *x = src;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i) {
        const float d = anvil_fp16_to_fp32(x[i].d);
        const float min = anvil_fp16_to_fp32(x[i].dmin);
        const uint8_t *ql = x[i].qs;
        const uint8_t *qh = x[i].qh;
        for (int g = 0; g < ANVIL_QK_K / 32; g += 2) {
            uint8_t sc, m;
            anvil_kq_scale_min_k4(x[i].scales, g, &sc, &m);
            const float d1 = d * (float)sc;
            const float m1 = min * (float)m;
            anvil_kq_scale_min_k4(x[i].scales, g + 1, &sc, &m);
            const float d2 = d * (float)sc;
            const float m2 = min * (float)m;
            const uint8_t u1 = (uint8_t)(1u << g);
            const uint8_t u2 = (uint8_t)(2u << g);
            for (int l = 0; l < 32; ++l) {
                *dst++ = d1 * (float)((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
            }
            for (int l = 0; l < 32; ++l) {
                *dst++ = d2 * (float)((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
            }
            ql += 32;
        }
    }
}

void anvil_ref_vec_dot_q5_K_q8_K(size_t n, float *s, const void *w, const void *a) {
    const anvil_block_q5_K *x = w;
    const anvil_block_q8_K *y = a;
    float sumf = 0;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i) {
        uint8_t sc[8], m[8];
        for (int g = 0; g < 8; ++g) {
            anvil_kq_scale_min_k4(x[i].scales, g, &sc[g], &m[g]);
        }
        int summs = 0;
        for (int j = 0; j < ANVIL_QK_K / 16; ++j) {
            summs += y[i].bsums[j] * m[j / 2];
        }
        /* Unpack the 5-bit codes first: the dot loops then vectorize. */
        uint8_t q5[ANVIL_QK_K];
        for (int g = 0; g < 8; g += 2) {
            const uint8_t *ql = x[i].qs + 16 * g;
            for (int l = 0; l < 32; ++l) {
                q5[32 * g + l] = (uint8_t)((ql[l] & 0xF) | (((x[i].qh[l] >> g) & 1) << 4));
                q5[32 * g + 32 + l] = (uint8_t)((ql[l] >> 4) | (((x[i].qh[l] >> (g + 1)) & 1) << 4));
            }
        }
        const int8_t *q8 = y[i].qs;
        int isum = 0;
        for (int g = 0; g < 8; ++g) {
            int sub = 0;
            for (int l = 32 * g; l < 32 * g + 32; ++l) {
                sub += q8[l] * q5[l];
            }
            isum += sc[g] * sub;
        }
        const float d = anvil_fp16_to_fp32(x[i].d) * y[i].d;
        const float dmin = anvil_fp16_to_fp32(x[i].dmin) * y[i].d;
        sumf += d * (float)isum - dmin * (float)summs;
    }
    *s = sumf;
}
