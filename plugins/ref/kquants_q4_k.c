/* SPDX-License-Identifier: MIT */
/* Q4_K: 4.5 bits per weight. A 256-element super-block in eight groups of
 * 32; each group is x ~ d * sc * q - dmin * m with q in 0..15 and 6-bit sc,
 * m; d and dmin are f16. Bytes: d, dmin, scales[12] (see
 * anvil_kq_pack_scale_min_k4), qs[128]: each 64-element span is 32 bytes,
 * its first 32 elements in the low nibbles, the next 32 in the high ones. */
#include <string.h>

#include "anvil/blocks.h"
#include "anvil/numeric.h"
#include "ref/checks.h"
#include "ref/kquants.h"
#include "ref/kquants_search.h"
#include "ref/rows.h"

/* ggml's constants: quantize_row_q4_K_ref searches 21 grids stretched by
 * -1.0 + 0.1 k levels (k = 0..20); quantize_row_q4_K_impl stores its 6-bit
 * codes uncapped. */
static const anvil_kq_k4_format k4_format = { 15, -1.f, 20, 0 };

static void encode_block(const float *x, const float *qw, anvil_block_q4_K *y) {
    uint8_t L[ANVIL_QK_K];
    anvil_kq_encode_affine_k4(x, qw, &k4_format, L, y->scales, &y->d, &y->dmin);
    uint8_t *q = y->qs;
    for (int j = 0; j < ANVIL_QK_K; j += 64) {
        for (int l = 0; l < 32; ++l) {
            q[l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
        }
        q += 32;
    }
}

ANVIL_REF_DEFINE_BLOCK_ENCODERS(q4_K, "q4_K", ANVIL_QK_K, anvil_block_q4_K, encode_block)

void anvil_ref_decode_q4_K(const void *src, float *dst, size_t n) {
    const anvil_block_q4_K *x = src;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i) {
        const float d = anvil_fp16_to_fp32(x[i].d);
        const float min = anvil_fp16_to_fp32(x[i].dmin);
        const uint8_t *q = x[i].qs;
        for (int g = 0; g < ANVIL_QK_K / 32; g += 2) {
            uint8_t sc, m;
            anvil_kq_scale_min_k4(x[i].scales, g, &sc, &m);
            const float d1 = d * (float)sc;
            const float m1 = min * (float)m;
            anvil_kq_scale_min_k4(x[i].scales, g + 1, &sc, &m);
            const float d2 = d * (float)sc;
            const float m2 = min * (float)m;
            for (int l = 0; l < 32; ++l) {
                *dst++ = d1 * (float)(q[l] & 0xF) - m1;
            }
            for (int l = 0; l < 32; ++l) {
                *dst++ = d2 * (float)(q[l] >> 4) - m2;
            }
            q += 32;
        }
    }
}

void anvil_ref_vec_dot_q4_K_q8_K(size_t n, float *s, const void *w, const void *a) {
    const anvil_block_q4_K *x = w;
    const anvil_block_q8_K *y = a;
    float sumf = 0;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i) {
        uint8_t sc[8], m[8];
        for (int g = 0; g < 8; ++g) {
            anvil_kq_scale_min_k4(x[i].scales, g, &sc[g], &m[g]);
        }
        /* Min term from bsums: each 32-group spans two 16-element sums. */
        int summs = 0;
        for (int j = 0; j < ANVIL_QK_K / 16; ++j) {
            summs += y[i].bsums[j] * m[j / 2];
        }
        const uint8_t *q4 = x[i].qs;
        const int8_t *q8 = y[i].qs;
        int isum = 0;
        for (int g = 0; g < 8; g += 2) {
            int lo = 0, hi = 0;
            for (int l = 0; l < 32; ++l) {
                lo += q8[l] * (q4[l] & 0xF);
                hi += q8[l + 32] * (q4[l] >> 4);
            }
            isum += sc[g] * lo + sc[g + 1] * hi;
            q4 += 32;
            q8 += 64;
        }
        const float d = anvil_fp16_to_fp32(x[i].d) * y[i].d;
        const float dmin = anvil_fp16_to_fp32(x[i].dmin) * y[i].d;
        sumf += d * (float)isum - dmin * (float)summs;
    }
    *s = sumf;
}
