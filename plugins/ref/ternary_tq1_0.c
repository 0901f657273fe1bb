/* SPDX-License-Identifier: MIT */
/* TQ1_0: 256 ternary weights in 54 bytes (1.6875 bits per weight).
 *
 * Layout (ggml's): five trits per byte in qs[48], four in qh[4], then the f16
 * scale d = absmax. A byte holds its trits as a base-3 number scaled to a
 * fraction of 256 (rounded up), so the k-th trit is the carry out of the low
 * byte after k+1 multiplications by 3. Element order, with t the trit
 * position inside a byte and m the byte:
 *   qs[ 0..31]  elements       t*32 + m   (0..159)
 *   qs[32..47]  elements 160 + t*16 + m   (160..239)
 *   qh[ 0.. 3]  elements 240 + t*4  + m   (240..255), a fifth zero trit pads
 * The same (bytes, trits per byte) walk serves encode, decode and dot. */
#include <math.h>
#include <stddef.h>

#include "anvil/blocks.h"
#include "anvil/numeric.h"
#include "ref/checks.h"
#include "ref/ternary.h"
#include "ref/ternary_impl.h"
#include "ref/rows.h"

#define TQ1_0_BYTES sizeof(anvil_block_tq1_0)
#define TQ1_0_D offsetof(anvil_block_tq1_0, d)

typedef struct tq1_0_group {
    size_t offset;   /* first byte inside the block (qs, then qh) */
    size_t nbytes;   /* bytes in the group = element stride between trits */
    unsigned ntrits; /* trits carried per byte */
} tq1_0_group;

static const tq1_0_group tq1_0_groups[3] = {
    { offsetof(anvil_block_tq1_0, qs), 32, 5 },
    { offsetof(anvil_block_tq1_0, qs) + 32, 16, 5 },
    { offsetof(anvil_block_tq1_0, qh), 4, 4 },
};

/* One byte of trits: base-3 digits, most significant first, padded to five
 * digits, then ceil(q * 256 / 243) so decoding can read the digits back as
 * carries. Arithmetic on uint8_t wraps exactly as ggml's does. */
static uint8_t tq1_0_pack_byte(const float *x, size_t stride, unsigned ntrits, float id) {
    uint8_t q = 0;
    for (unsigned t = 0; t < ntrits; ++t) {
        q = (uint8_t)(q * 3);
        q = (uint8_t)(q + ternary_lround_plus1(x[t * stride] * id));
    }
    for (unsigned t = ntrits; t < 5; ++t) {
        q = (uint8_t)(q * 3);
    }
    return (uint8_t)(((uint16_t)q * 256 + (243 - 1)) / 243);
}

/* ggml's quantize_tq1_0 ignores importance weights (qw). */
static void tq1_0_encode_block(const float *x, const float *qw, uint8_t *y) {
    (void)qw;
    float amax = 0.0f;
    for (int j = 0; j < ANVIL_QK_K; ++j) {
        const float a = fabsf(x[j]);
        amax = amax > a ? amax : a;
    }
    const float d = amax;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    anvil_wr_half(y + TQ1_0_D, d);
    for (size_t g = 0; g < 3; ++g) {
        const tq1_0_group *gr = &tq1_0_groups[g];
        for (size_t m = 0; m < gr->nbytes; ++m) {
            y[gr->offset + m] = tq1_0_pack_byte(x + m, gr->nbytes, gr->ntrits, id);
        }
        x += gr->nbytes * gr->ntrits;
    }
}

ANVIL_REF_DEFINE_BLOCK_ENCODERS(tq1_0, "tq1_0", ANVIL_QK_K, anvil_block_tq1_0, tq1_0_encode_block)

void anvil_ref_decode_tq1_0(const void *src, float *dst, size_t n) {
    const uint8_t *x = src;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i, x += TQ1_0_BYTES) {
        const float d = anvil_rd_half(x + TQ1_0_D);
        for (size_t g = 0; g < 3; ++g) {
            const tq1_0_group *gr = &tq1_0_groups[g];
            for (size_t m = 0; m < gr->nbytes; ++m) {
                unsigned q = x[gr->offset + m];
                for (unsigned t = 0; t < gr->ntrits; ++t) {
                    const int trit = (int)ternary_next_trit(&q);
                    /* (trit - 1) * d, not a select: 0 * d keeps ggml's
                     * signed zero and NaN for any scale. */
                    dst[t * gr->nbytes + m] = (float)(trit - 1) * d;
                }
            }
            dst += gr->nbytes * gr->ntrits;
        }
    }
}

void anvil_ref_vec_dot_tq1_0_q8_K(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w;
    const uint8_t *y = a;
    float sumf = 0.0f;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i, x += TQ1_0_BYTES, y += sizeof(anvil_block_q8_K)) {
        const int8_t *q8 = (const int8_t *)(y + offsetof(anvil_block_q8_K, qs));
        int sum = 0;
        for (size_t g = 0; g < 3; ++g) {
            const tq1_0_group *gr = &tq1_0_groups[g];
            /* Peel one trit off every byte of the group per pass, so the
             * passes run across independent bytes (and vectorize). */
            uint16_t q[32];
            for (size_t m = 0; m < gr->nbytes; ++m) {
                q[m] = x[gr->offset + m];
            }
            for (unsigned t = 0; t < gr->ntrits; ++t, q8 += gr->nbytes) {
                for (size_t m = 0; m < gr->nbytes; ++m) {
                    const unsigned w3 = (unsigned)q[m] + ((unsigned)q[m] << 1); /* 3q */
                    const unsigned trit = w3 >> 8;
                    q[m] = (uint16_t)(w3 & 0xffu);
                    /* trit 2 (+1) adds, trit 0 (-1) subtracts, 1 skips */
                    const int v = q8[m];
                    const int add = -(int)(trit >> 1);
                    const int sub = -(int)(trit == 0);
                    sum += (v & add) - (v & sub);
                }
            }
        }
        const float dy = anvil_rd_f32(y + offsetof(anvil_block_q8_K, d));
        sumf += (float)sum * (anvil_rd_half(x + TQ1_0_D) * dy);
    }
    *s = sumf;
}
