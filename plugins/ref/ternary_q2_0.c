/* SPDX-License-Identifier: MIT */
/* Q2_0: 64 weights as 2-bit codes plus one f16 scale, 18 bytes (2.25 bits
 * per weight).
 *
 * Layout (ggml's): d = absmax of the block, then qs[16] with element j in
 * bits 2*(j%4) of byte j/4. Code c decodes to (c - 1) * d, c = 0..3, so the
 * weights are {-1, 0, +1, +2} * d; the encoder rounds x/d half away from
 * zero and so never writes code 3. Its dot pairs one weight block with two
 * consecutive Q8_0 blocks. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "anvil/blocks.h"
#include "anvil/numeric.h"
#include "ref/checks.h"
#include "ref/ternary.h"
#include "ref/ternary_impl.h"
#include "ref/rows.h"

#define Q2_0_BYTES sizeof(anvil_block_q2_0)
#define Q2_0_D offsetof(anvil_block_q2_0, d)
#define Q2_0_QS offsetof(anvil_block_q2_0, qs)
#define Q2_0_ACT_BLOCKS (ANVIL_QK2_0 / ANVIL_QK8_0)
#define Q8_0_BYTES sizeof(anvil_block_q8_0)

/* ggml's quantize_q2_0 ignores importance weights (qw). */
static void q2_0_encode_block(const float *x, const float *qw, uint8_t *y) {
    (void)qw;
    float amax = 0.0f;
    for (int j = 0; j < ANVIL_QK2_0; ++j) {
        const float a = fabsf(x[j]);
        if (a > amax) {
            amax = a;
        }
    }
    const float d = amax;
    const float id = d > 0.0f ? 1.0f / d : 0.0f;
    anvil_wr_half(y + Q2_0_D, d);
    uint8_t *qs = y + Q2_0_QS;
    memset(qs, 0, ANVIL_QK2_0 / 4);
    for (int j = 0; j < ANVIL_QK2_0; ++j) {
        qs[j / 4] |= (uint8_t)(q2_0_code(x[j] * id) << (2 * (j % 4)));
    }
}

ANVIL_REF_DEFINE_BLOCK_ENCODERS(q2_0, "q2_0", ANVIL_QK2_0, anvil_block_q2_0, q2_0_encode_block)

void anvil_ref_decode_q2_0(const void *src, float *dst, size_t n) {
    const uint8_t *x = src;
    for (size_t i = 0; i < n / ANVIL_QK2_0; ++i, x += Q2_0_BYTES) {
        const float d = anvil_rd_half(x + Q2_0_D);
        const uint8_t *qs = x + Q2_0_QS;
        for (int j = 0; j < ANVIL_QK2_0; ++j) {
            const int c = (qs[j / 4] >> (2 * (j % 4))) & 3;
            *dst++ = (float)(c - 1) * d;
        }
    }
}

void anvil_ref_vec_dot_q2_0_q8_0(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w;
    const uint8_t *y = a;
    float sumf = 0.0f;
    for (size_t i = 0; i < n / ANVIL_QK2_0; ++i, x += Q2_0_BYTES) {
        const float d0 = anvil_rd_half(x + Q2_0_D);
        float sumi = 0.0f;
        for (int k = 0; k < Q2_0_ACT_BLOCKS; ++k, y += Q8_0_BYTES) {
            const uint8_t *codes = x + Q2_0_QS + k * (ANVIL_QK8_0 / 4);
            const int8_t *q8 = (const int8_t *)(y + offsetof(anvil_block_q8_0, qs));
            /* sum (c - 1) * q = sum_{bit0} q + 2 * sum_{bit1} q - sum q */
            int lo = 0, hi = 0, all = 0;
            for (int b = 0; b < ANVIL_QK8_0 / 4; ++b, q8 += 4) {
                const unsigned byte = codes[b];
                for (int k = 0; k < 4; ++k) {
                    /* the code's two bits become masks that keep or drop q */
                    all += q8[k];
                    lo += q8[k] & -(int)((byte >> (2 * k)) & 1u);
                    hi += q8[k] & -(int)((byte >> (2 * k + 1)) & 1u);
                }
            }
            const int sumi_block = lo + hi + hi - all;
            sumi += anvil_rd_half(y + offsetof(anvil_block_q8_0, d)) * (float)sumi_block;
        }
        sumf += d0 * sumi;
    }
    *s = sumf;
}
