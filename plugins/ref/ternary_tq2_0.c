/* SPDX-License-Identifier: MIT */
/* TQ2_0: 256 ternary weights in 66 bytes (2.0625 bits per weight).
 *
 * Layout (ggml's): qs[64] of 2-bit codes c (weight = c - 1), then the f16
 * scale d = absmax. Byte j + m (j in {0, 32}, m < 32) holds, in bit pair l,
 * element 4*j + 32*l + m. Code 3 (weight +2) is never written by the encoder
 * but decodes and dots as ggml does. */
#include <math.h>
#include <stddef.h>

#include "anvil/blocks.h"
#include "anvil/numeric.h"
#include "ref/checks.h"
#include "ref/ternary.h"
#include "ref/ternary_impl.h"
#include "ref/rows.h"

#define TQ2_0_BYTES sizeof(anvil_block_tq2_0)
#define TQ2_0_QS offsetof(anvil_block_tq2_0, qs)
#define TQ2_0_NQS (ANVIL_QK_K / 4)
#define TQ2_0_D offsetof(anvil_block_tq2_0, d)

/* ggml's quantize_tq2_0 ignores importance weights (qw). */
static void tq2_0_encode_block(const float *x, const float *qw, uint8_t *y) {
    (void)qw;
    float amax = 0.0f;
    for (int j = 0; j < ANVIL_QK_K; ++j) {
        const float a = fabsf(x[j]);
        amax = amax > a ? amax : a;
    }
    const float d = amax;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    anvil_wr_half(y + TQ2_0_D, d);
    for (size_t j = 0; j < TQ2_0_NQS; j += 32, x += 128) {
        for (size_t m = 0; m < 32; ++m) {
            unsigned q = 0;
            for (unsigned l = 0; l < 4; ++l) {
                q += ((unsigned)ternary_lround_plus1(x[m + 32 * l] * id) & 3u) << (2 * l);
            }
            y[TQ2_0_QS + j + m] = (uint8_t)q;
        }
    }
}

ANVIL_REF_DEFINE_BLOCK_ENCODERS(tq2_0, "tq2_0", ANVIL_QK_K, anvil_block_tq2_0, tq2_0_encode_block)

void anvil_ref_decode_tq2_0(const void *src, float *dst, size_t n) {
    const uint8_t *x = src;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i, x += TQ2_0_BYTES) {
        const float d = anvil_rd_half(x + TQ2_0_D);
        const uint8_t *qs = x + TQ2_0_QS;
        for (size_t j = 0; j < TQ2_0_NQS; j += 32) {
            for (unsigned l = 0; l < 4; ++l) {
                for (size_t m = 0; m < 32; ++m) {
                    const int c = (qs[j + m] >> (2 * l)) & 3;
                    *dst++ = (float)(c - 1) * d;
                }
            }
        }
    }
}

void anvil_ref_vec_dot_tq2_0_q8_K(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w;
    const uint8_t *y = a;
    float sumf = 0.0f;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i, x += TQ2_0_BYTES, y += sizeof(anvil_block_q8_K)) {
        /* sum (c - 1) * q8 = sum_{bit0} q8 + 2 * sum_{bit1} q8 - sum q8; the
         * last term is the sum of the block sums Q8_K already carries. */
        const uint8_t *qs = x + TQ2_0_QS;
        const int8_t *q8 = (const int8_t *)(y + offsetof(anvil_block_q8_K, qs));
        int lo = 0, hi = 0;
        for (size_t j = 0; j < TQ2_0_NQS; j += 32) {
            for (unsigned l = 0; l < 4; ++l) {
                for (size_t m = 0; m < 32; ++m) {
                    const unsigned c = (unsigned)(qs[j + m] >> (2 * l));
                    const int v = *q8++;
                    lo += v & -(int)(c & 1u); /* bit masks keep or drop v */
                    hi += v & -(int)((c >> 1) & 1u);
                }
            }
        }
        int all = 0;
        for (size_t b = 0; b < ANVIL_QK_K / 16; ++b) {
            all += anvil_rd_i16(y + offsetof(anvil_block_q8_K, bsums) + 2 * b);
        }
        const int sumi = lo + hi + hi - all;
        const float d = anvil_rd_f32(y + offsetof(anvil_block_q8_K, d)) * anvil_rd_half(x + TQ2_0_D);
        sumf += (float)sumi * d;
    }
    *s = sumf;
}
