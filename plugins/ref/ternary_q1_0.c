/* SPDX-License-Identifier: MIT */
/* Q1_0: 128 weights as sign bits plus one f16 scale, 18 bytes (1.125 bits
 * per weight).
 *
 * Layout (ggml's): d = mean |x| over the block, then qs[16] with bit j%8 of
 * byte j/8 set when x[j] >= 0 (so -0.0 counts as positive). A weight decodes
 * to +d or -d: zero is not representable. Its dot pairs one weight block
 * with four consecutive Q8_0 blocks. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "anvil/blocks.h"
#include "anvil/numeric.h"
#include "ref/checks.h"
#include "ref/ternary.h"
#include "ref/ternary_impl.h"
#include "ref/rows.h"

#define Q1_0_BYTES sizeof(anvil_block_q1_0)
#define Q1_0_D offsetof(anvil_block_q1_0, d)
#define Q1_0_QS offsetof(anvil_block_q1_0, qs)
#define Q1_0_ACT_BLOCKS (ANVIL_QK1_0 / ANVIL_QK8_0)
#define Q8_0_BYTES sizeof(anvil_block_q8_0)

/* ggml's quantize_q1_0 ignores importance weights (qw). */
static void q1_0_encode_block(const float *x, const float *qw, uint8_t *y) {
    (void)qw;
    /* Summed in element order: the f32 rounding of the mean is part of the
     * byte contract. */
    float sum_abs = 0.0f;
    for (int j = 0; j < ANVIL_QK1_0; ++j) {
        sum_abs += fabsf(x[j]);
    }
    anvil_wr_half(y + Q1_0_D, sum_abs / (float)ANVIL_QK1_0);
    uint8_t *qs = y + Q1_0_QS;
    memset(qs, 0, ANVIL_QK1_0 / 8);
    for (int j = 0; j < ANVIL_QK1_0; ++j) {
        if (x[j] >= 0.0f) {
            qs[j / 8] |= (uint8_t)(1u << (j % 8));
        }
    }
}

ANVIL_REF_DEFINE_BLOCK_ENCODERS(q1_0, "q1_0", ANVIL_QK1_0, anvil_block_q1_0, q1_0_encode_block)

void anvil_ref_decode_q1_0(const void *src, float *dst, size_t n) {
    const uint8_t *x = src;
    for (size_t i = 0; i < n / ANVIL_QK1_0; ++i, x += Q1_0_BYTES) {
        const float d = anvil_rd_half(x + Q1_0_D);
        const float neg_d = -d;
        const uint8_t *qs = x + Q1_0_QS;
        for (int j = 0; j < ANVIL_QK1_0; ++j) {
            *dst++ = ((qs[j / 8] >> (j % 8)) & 1u) ? d : neg_d;
        }
    }
}

void anvil_ref_vec_dot_q1_0_q8_0(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w;
    const uint8_t *y = a;
    float sumf = 0.0f;
    for (size_t i = 0; i < n / ANVIL_QK1_0; ++i, x += Q1_0_BYTES) {
        const float d0 = anvil_rd_half(x + Q1_0_D);
        /* ggml keeps the per-activation-block partial sums in a float and
         * applies the weight scale once per weight block; same order here. */
        float sumi = 0.0f;
        for (int k = 0; k < Q1_0_ACT_BLOCKS; ++k, y += Q8_0_BYTES) {
            const uint8_t *bits = x + Q1_0_QS + k * (ANVIL_QK8_0 / 8);
            const int8_t *q8 = (const int8_t *)(y + offsetof(anvil_block_q8_0, qs));
            /* sum (bit ? +q : -q) = 2 * sum_{bit set} q - sum q; the bit
             * becomes an all-ones/zero mask that keeps or drops q */
            int pos = 0, all = 0;
            for (int b = 0; b < ANVIL_QK8_0 / 8; ++b, q8 += 8) {
                const unsigned byte = bits[b];
                for (int k = 0; k < 8; ++k) {
                    all += q8[k];
                    pos += q8[k] & -(int)((byte >> k) & 1u);
                }
            }
            const int sumi_block = pos + pos - all;
            sumi += anvil_rd_half(y + offsetof(anvil_block_q8_0, d)) * (float)sumi_block;
        }
        sumf += d0 * sumi;
    }
    *s = sumf;
}
