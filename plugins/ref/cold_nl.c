/* SPDX-License-Identifier: MIT */
/*
 * The non-linear 4-bit formats: IQ4_NL (32 elements, one binary16 scale) and
 * IQ4_XS (256 elements, a binary16 scale and a 6-bit signed sub-scale per
 * 32). Both map each 4-bit code through the same 16 increasing levels
 * (anvil_cold_iq4nl_values); a value is scale * level.
 *
 * The encoders reproduce what llama-quantize writes, i.e. ggml_quantize_chunk,
 * with or without an importance matrix:
 *  - IQ4_XS: quantize_iq4_xs, which quantize_row_iq4_xs_ref calls with none.
 *  - IQ4_NL: quantize_iq4_nl. NOT quantize_row_iq4_nl_ref: that one skips
 *    the scale search and leaves the codes of near-zero blocks
 *    uninitialised, so its bytes are not even reproducible run to run.
 * Both run ggml's search (quantize_row_iq4_nl_impl): per 32 elements, a
 * weighted least-squares scale for the first guess and for 15 nearby ones,
 * weights x^2, or with an importance matrix qw sqrt(sigma2 + x^2) (sigma2 =
 * twice the mean square of the 32 (IQ4_NL) or 256 (IQ4_XS) elements); then
 * (IQ4_XS) the per-32 scales are quantized to 6 bits against one
 * super-block scale, and every element is re-coded against its final
 * scale. The float arithmetic below keeps ggml's operation order (and
 * -ffp-contract=off keeps it from being fused): one rounding different and
 * a code flips.
 */
#include "ref/cold.h"

#include <math.h>

#include "ref/checks.h"
#include "ref/cold_impl.h"
#include "ref/rows.h"

/* ggml's GROUP_MAX_EPS: a block whose largest magnitude is below this gets
 * scale 0. */
#define IQ4_TINY 1e-15f
/* ggml's ntry for the no-importance-matrix path: scales -7..+7 steps from
 * the first guess are tried. */
#define IQ4_NTRY 7

#define IQ4NL_D offsetof(anvil_block_iq4_nl, d)
#define IQ4NL_QS offsetof(anvil_block_iq4_nl, qs)
#define IQ4XS_D offsetof(anvil_block_iq4_xs, d)
#define IQ4XS_SCALES_H offsetof(anvil_block_iq4_xs, scales_h)
#define IQ4XS_SCALES_L offsetof(anvil_block_iq4_xs, scales_l)
#define IQ4XS_QS offsetof(anvil_block_iq4_xs, qs)

/* The level nearest to x; at an exact midpoint the upper one. Level k is
 * chosen once x reaches the midpoint of levels k-1 and k: comparing 2x with
 * their (integer) sum is exact, so no rounding can move a boundary. ggml's
 * best_index_int8 has had two forms (a branchless one like this, and an
 * older one comparing the rounded distances x - v[k-1] and v[k] - x); both
 * pick this level for every finite float (checked exhaustively over all
 * 2^32 bit patterns), so the result does not depend on ggml's version.
 * NaN (the scale of a block whose weighted sums overflowed, x huge or its
 * importance weights): every comparison in ggml's search fails, which
 * walks it to the top level, 15; here the test is written as !(2x < sum)
 * so that NaN passes every step to 15 as well, with no extra branch. */
static inline int iq4_nearest(float x) {
    const int8_t *v = anvil_cold_iq4nl_values;
    const float x2 = x + x;
    int k = 0;
    for (int step = 8; step > 0; step >>= 1) {
        const int j = k + step;
        if (!(x2 < (float)(v[j - 1] + v[j]))) {
            k = j;
        }
    }
    return k;
}

/* ggml's sigma2 of a super-block of n elements (32 or 256): the sum of
 * squares, then times 2 / n. */
static float iq4_sigma2(const float *x, int n) {
    float sigma2 = 0.0f;
    for (int j = 0; j < n; ++j) {
        sigma2 += x[j] * x[j];
    }
    sigma2 *= 2.f / (float)n;
    return sigma2;
}

/* ggml's search for one 32-element block (quantize_row_iq4_nl_impl's inner
 * loop): weights x^2, or qw sqrt(sigma2 + x^2) with importance weights qw.
 * Returns the scale; 0 for a near-zero block. */
static float iq4_block_scale(const float *x, const float *qw, float sigma2) {
    const int8_t *values = anvil_cold_iq4nl_values;
    float weight[32];
    cold_group_weights(x, qw, 32, sigma2, weight);
    /* The element of largest magnitude, first one on ties, with its sign. */
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; ++j) {
        const float ax = fabsf(x[j]);
        if (ax > amax) {
            amax = ax;
            max = x[j];
        }
    }
    if (amax < IQ4_TINY) {
        return 0.0f;
    }
    /* First guess: map the extreme element onto the most negative level. */
    float d = -max / (float)values[0];
    float id = 1.0f / d;
    float sumqx = 0.0f, sumq2 = 0.0f;
    for (int j = 0; j < 32; ++j) {
        const float q = (float)values[iq4_nearest(id * x[j])];
        const float w = weight[j];
        sumqx += w * q * x[j];
        sumq2 += w * q * q;
    }
    d = sumq2 > 0.0f ? sumqx / sumq2 : 0.0f;
    float best = d * sumqx;
    for (int itry = -IQ4_NTRY; itry <= IQ4_NTRY; ++itry) {
        id = (float)(itry + values[0]) / max;
        sumqx = sumq2 = 0.0f;
        for (int j = 0; j < 32; ++j) {
            const float q = (float)values[iq4_nearest(id * x[j])];
            const float w = weight[j];
            sumqx += w * q * x[j];
            sumq2 += w * q * q;
        }
        if (sumq2 > 0.0f && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

/* Two 16-element halves share a byte: element j in the low nibble, j + 16 in
 * the high one. */
static void iq4_pack32(const float *x, float id, uint8_t *qs) {
    uint8_t L[32];
    for (int j = 0; j < 32; ++j) {
        L[j] = (uint8_t)iq4_nearest(id * x[j]);
    }
    for (int j = 0; j < 16; ++j) {
        qs[j] = (uint8_t)(L[j] | (L[j + 16] << 4));
    }
}

static void encode_row_iq4_nl(const float *src, void *dst, size_t n, const float *qw) {
    uint8_t *blk = dst;
    for (size_t i = 0; i < n / ANVIL_QK4_NL; ++i, src += ANVIL_QK4_NL, blk += sizeof(anvil_block_iq4_nl)) {
        const float d = qw != NULL ? iq4_block_scale(src, qw + ANVIL_QK4_NL * i, iq4_sigma2(src, ANVIL_QK4_NL))
                                   : iq4_block_scale(src, NULL, 0.0f);
        const anvil_half h = anvil_fp32_to_fp16(d);
        memcpy(blk + IQ4NL_D, &h, sizeof h);
        /* Codes against the unrounded scale, as ggml. A near-zero block
         * (d = 0) codes every element as 0 * x, i.e. level 8 (+1). */
        iq4_pack32(src, d != 0.0f ? 1.0f / d : 0.0f, blk + IQ4NL_QS);
    }
}

static void encode_row_iq4_xs(const float *src, void *dst, size_t n, const float *qw) {
    uint8_t *blk = dst;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i, src += ANVIL_QK_K, blk += sizeof(anvil_block_iq4_xs)) {
        const float *qwb = qw != NULL ? qw + ANVIL_QK_K * i : NULL;
        const float sigma2 = qw != NULL ? iq4_sigma2(src, ANVIL_QK_K) : 0.0f;
        float scales[ANVIL_QK_K / 32];
        /* The sub-block scale of largest magnitude (first on ties), signed:
         * the super-block scale is -that/32, so it maps to sub-scale -32. */
        float amax_scale = 0.0f, max_scale = 0.0f;
        for (int ib = 0; ib < ANVIL_QK_K / 32; ++ib) {
            scales[ib] = iq4_block_scale(src + 32 * ib, qwb != NULL ? qwb + 32 * ib : NULL, sigma2);
            const float a = fabsf(scales[ib]);
            if (a > amax_scale) {
                amax_scale = a;
                max_scale = scales[ib];
            }
        }
        /* -0.0f when every block is near zero: stored as binary16 -0. */
        const float d = -max_scale / 32.0f;
        const anvil_half h = anvil_fp32_to_fp16(d);
        memcpy(blk + IQ4XS_D, &h, sizeof h);
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        uint16_t scales_h = 0;
        uint8_t *scales_l = blk + IQ4XS_SCALES_L;
        for (int ib = 0; ib < ANVIL_QK_K / 32; ++ib) {
            int l = anvil_nearest_int(id * scales[ib]);
            l = l < -32 ? -32 : (l > 31 ? 31 : l);
            const float dl = d * (float)l;
            iq4_pack32(src + 32 * ib, dl != 0.0f ? 1.0f / dl : 0.0f, blk + IQ4XS_QS + 16 * ib);
            /* Stored biased (0..63): low 4 bits in scales_l nibbles, high 2
             * bits in scales_h. */
            l += 32;
            if (ib % 2 == 0) {
                scales_l[ib / 2] = (uint8_t)(l & 0xf);
            } else {
                scales_l[ib / 2] |= (uint8_t)((l & 0xf) << 4);
            }
            scales_h |= (uint16_t)((l >> 4) << (2 * ib));
        }
        memcpy(blk + IQ4XS_SCALES_H, &scales_h, sizeof scales_h);
    }
}

ANVIL_REF_DEFINE_ENCODERS(iq4_nl, "iq4_nl", ANVIL_QK4_NL, sizeof(anvil_block_iq4_nl), encode_row_iq4_nl)
ANVIL_REF_DEFINE_ENCODERS(iq4_xs, "iq4_xs", ANVIL_QK_K, sizeof(anvil_block_iq4_xs), encode_row_iq4_xs)

void anvil_ref_decode_iq4_nl(const void *src, float *y, size_t n) {
    const uint8_t *blk = src;
    for (size_t i = 0; i < n / ANVIL_QK4_NL; ++i, blk += sizeof(anvil_block_iq4_nl), y += ANVIL_QK4_NL) {
        const float d = anvil_rd_half(blk + IQ4NL_D);
        const uint8_t *qs = blk + IQ4NL_QS;
        for (int j = 0; j < 16; ++j) {
            y[j + 0] = d * (float)anvil_cold_iq4nl_values[qs[j] & 0xf];
            y[j + 16] = d * (float)anvil_cold_iq4nl_values[qs[j] >> 4];
        }
    }
}

/* Biased 6-bit sub-scale of 32-element block ib. */
static inline int iq4xs_sub_scale(const uint8_t *blk, int ib) {
    const uint16_t h = anvil_rd_u16(blk + IQ4XS_SCALES_H);
    return ((blk[IQ4XS_SCALES_L + ib / 2] >> (4 * (ib % 2))) & 0xf) | (((h >> (2 * ib)) & 3) << 4);
}

void anvil_ref_decode_iq4_xs(const void *src, float *y, size_t n) {
    const uint8_t *blk = src;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i, blk += sizeof(anvil_block_iq4_xs)) {
        const float d = anvil_rd_half(blk + IQ4XS_D);
        for (int ib = 0; ib < ANVIL_QK_K / 32; ++ib, y += 32) {
            const float dl = d * (float)(iq4xs_sub_scale(blk, ib) - 32);
            const uint8_t *qs = blk + IQ4XS_QS + 16 * ib;
            for (int j = 0; j < 16; ++j) {
                y[j + 0] = dl * (float)anvil_cold_iq4nl_values[qs[j] & 0xf];
                y[j + 16] = dl * (float)anvil_cold_iq4nl_values[qs[j] >> 4];
            }
        }
    }
}

/* Integer dot of one 32-element IQ4 group with 32 int8 activations. */
static inline int32_t iq4_dot32(const uint8_t *qs, const int8_t *q8) {
    int32_t lo = 0, hi = 0;
    for (int j = 0; j < 16; ++j) {
        lo += q8[j + 0] * anvil_cold_iq4nl_values[qs[j] & 0xf];
        hi += q8[j + 16] * anvil_cold_iq4nl_values[qs[j] >> 4];
    }
    return lo + hi;
}

void anvil_ref_vec_dot_iq4_nl_q8_0(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *blk = w;
    const uint8_t *act = a;
    float sumf = 0.0f;
    for (size_t i = 0; i < n / ANVIL_QK4_NL;
         ++i, blk += sizeof(anvil_block_iq4_nl), act += sizeof(anvil_block_q8_0)) {
        const float d = anvil_rd_half(act + COLD_Q80_D) * anvil_rd_half(blk + IQ4NL_D);
        sumf += d * (float)iq4_dot32(blk + IQ4NL_QS, (const int8_t *)(act + COLD_Q80_QS));
    }
    *s = sumf;
}

void anvil_ref_vec_dot_iq4_xs_q8_K(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *blk = w;
    const uint8_t *act = a;
    float sumf = 0.0f;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i, blk += sizeof(anvil_block_iq4_xs), act += sizeof(anvil_block_q8_K)) {
        const float d4d8 = anvil_rd_half(blk + IQ4XS_D) * anvil_rd_f32(act + COLD_Q8K_D);
        const int8_t *q8 = (const int8_t *)(act + COLD_Q8K_QS);
        for (int ib = 0; ib < ANVIL_QK_K / 32; ++ib) {
            const float dl = d4d8 * (float)(iq4xs_sub_scale(blk, ib) - 32);
            sumf += dl * (float)iq4_dot32(blk + IQ4XS_QS + 16 * ib, q8 + 32 * ib);
        }
    }
    *s = sumf;
}
