/* SPDX-License-Identifier: MIT */
/*
 * The micro-scaled FP4 formats: E2M1 elements (one sign, two exponent bits,
 * one mantissa bit) sharing a scale.
 *   MXFP4 (OCP MX): 32 elements, one E8M0 scale (a power of two).
 *   NVFP4: 64 elements in four sub-blocks of 16, each with a UE4M3 scale.
 * ggml keeps the E2M1 codebook doubled (anvil_cold_e2m1_x2_values) and
 * halves the scales instead (anvil_e8m0_to_fp32_half,
 * anvil_ue4m3_to_fp32_half), so value = doubled code * half scale.
 *
 * Encoders: byte-identical to ggml's quantize_row_mxfp4_ref and
 * quantize_row_nvfp4_ref, which llama-quantize uses for these types
 * (ggml_quantize_chunk ignores an importance matrix for them, and so does
 * the row-wise entry here).
 */
#include "ref/cold.h"

#include <math.h>

#include "ref/checks.h"
#include "ref/cold_impl.h"
#include "ref/rows.h"

#define MXFP4_E offsetof(anvil_block_mxfp4, e)
#define MXFP4_QS offsetof(anvil_block_mxfp4, qs)
#define NVFP4_D offsetof(anvil_block_nvfp4, d)
#define NVFP4_QS offsetof(anvil_block_nvfp4, qs)
#define NVFP4_SUBS (ANVIL_QK_NVFP4 / ANVIL_QK_NVFP4_SUB)

/* The code whose value times the half scale e is nearest to x; on a tie the
 * lower code (so +0, code 0, is chosen over -0, code 8). Distances are
 * computed as ggml does, |code * e - x| in binary32, rounding included. */
static inline uint8_t fp4_nearest(float x, float e) {
    const int8_t *v = anvil_cold_e2m1_x2_values;
    int best = 0;
    float best_err = fabsf((float)v[0] * e - x);
    for (int i = 1; i < 16; ++i) {
        const float err = fabsf((float)v[i] * e - x);
        if (err < best_err) {
            best = i;
            best_err = err;
        }
    }
    return (uint8_t)best;
}

/* ggml converts the float exponent to uint8_t with a plain C cast. For a
 * block whose largest magnitude is below 2^-125 the float is negative (e.g.
 * -24.0 for a subnormal 1e-45), which C leaves undefined; on the x86-64 build
 * that defines ggml's bytes the cast is a truncating conversion to int32
 * whose low byte is kept, so -24 becomes 232. Do exactly that, portably. The
 * float is always an integer in [-24, 253], so the int conversion is exact. */
static inline uint8_t mxfp4_exponent_byte(float f) { return (uint8_t)((uint32_t)(int32_t)f & 0xFFu); }

static void encode_row_mxfp4(const float *src, void *dst, size_t n, const float *qw) {
    (void)qw; /* quantize_mxfp4: GGML_UNUSED(quant_weights) */
    uint8_t *blk = dst;
    for (size_t i = 0; i < n / ANVIL_QK_MXFP4; ++i, src += ANVIL_QK_MXFP4, blk += sizeof(anvil_block_mxfp4)) {
        float amax = 0.0f;
        for (int j = 0; j < ANVIL_QK_MXFP4; ++j) {
            if (amax < fabsf(src[j])) {
                amax = fabsf(src[j]);
            }
        }
        /* Shared exponent: floor(log2(amax)) - 2 (E2M1's largest exponent),
         * biased by 127. log2f, not an exact frexp: near a power of two
         * log2f rounds up to the integer and ggml's byte follows it; libm's
         * log2f is what ggml calls too. */
        const uint8_t e = amax > 0.0f ? mxfp4_exponent_byte(floorf(log2f(amax)) - 2.0f + 127.0f) : 0;
        const float d = anvil_e8m0_to_fp32_half(e);
        blk[MXFP4_E] = e;
        for (int j = 0; j < ANVIL_QK_MXFP4 / 2; ++j) {
            const uint8_t lo = fp4_nearest(src[j], d);
            const uint8_t hi = fp4_nearest(src[j + ANVIL_QK_MXFP4 / 2], d);
            blk[MXFP4_QS + j] = (uint8_t)(lo | (hi << 4));
        }
    }
}

static void encode_row_nvfp4(const float *src, void *dst, size_t n, const float *qw) {
    (void)qw; /* quantize_nvfp4: GGML_UNUSED(quant_weights) */
    uint8_t *blk = dst;
    for (size_t i = 0; i < n / ANVIL_QK_NVFP4; ++i, blk += sizeof(anvil_block_nvfp4)) {
        for (int sb = 0; sb < NVFP4_SUBS; ++sb, src += ANVIL_QK_NVFP4_SUB) {
            float amax = 0.0f;
            for (int j = 0; j < ANVIL_QK_NVFP4_SUB; ++j) {
                if (amax < fabsf(src[j])) {
                    amax = fabsf(src[j]);
                }
            }
            /* 6 is E2M1's largest value: the scale maps it onto amax. */
            const uint8_t ue = anvil_fp32_to_ue4m3(amax / 6.0f);
            const float d = anvil_ue4m3_to_fp32_half(ue);
            blk[NVFP4_D + sb] = ue;
            uint8_t *qs = blk + NVFP4_QS + sb * (ANVIL_QK_NVFP4_SUB / 2);
            for (int j = 0; j < ANVIL_QK_NVFP4_SUB / 2; ++j) {
                const uint8_t lo = fp4_nearest(src[j], d);
                const uint8_t hi = fp4_nearest(src[j + ANVIL_QK_NVFP4_SUB / 2], d);
                qs[j] = (uint8_t)(lo | (hi << 4));
            }
        }
    }
}

ANVIL_REF_DEFINE_ENCODERS(mxfp4, "mxfp4", ANVIL_QK_MXFP4, sizeof(anvil_block_mxfp4), encode_row_mxfp4)
ANVIL_REF_DEFINE_ENCODERS(nvfp4, "nvfp4", ANVIL_QK_NVFP4, sizeof(anvil_block_nvfp4), encode_row_nvfp4)

void anvil_ref_decode_mxfp4(const void *src, float *y, size_t n) {
    const uint8_t *blk = src;
    for (size_t i = 0; i < n / ANVIL_QK_MXFP4; ++i, blk += sizeof(anvil_block_mxfp4), y += ANVIL_QK_MXFP4) {
        const float d = anvil_e8m0_to_fp32_half(blk[MXFP4_E]);
        for (int j = 0; j < ANVIL_QK_MXFP4 / 2; ++j) {
            const uint8_t q = blk[MXFP4_QS + j];
            y[j] = (float)anvil_cold_e2m1_x2_values[q & 0xf] * d;
            y[j + ANVIL_QK_MXFP4 / 2] = (float)anvil_cold_e2m1_x2_values[q >> 4] * d;
        }
    }
}

void anvil_ref_decode_nvfp4(const void *src, float *y, size_t n) {
    const uint8_t *blk = src;
    for (size_t i = 0; i < n / ANVIL_QK_NVFP4; ++i, blk += sizeof(anvil_block_nvfp4)) {
        for (int sb = 0; sb < NVFP4_SUBS; ++sb, y += ANVIL_QK_NVFP4_SUB) {
            const float d = anvil_ue4m3_to_fp32_half(blk[NVFP4_D + sb]);
            const uint8_t *qs = blk + NVFP4_QS + sb * (ANVIL_QK_NVFP4_SUB / 2);
            for (int j = 0; j < ANVIL_QK_NVFP4_SUB / 2; ++j) {
                y[j] = (float)anvil_cold_e2m1_x2_values[qs[j] & 0xf] * d;
                y[j + ANVIL_QK_NVFP4_SUB / 2] = (float)anvil_cold_e2m1_x2_values[qs[j] >> 4] * d;
            }
        }
    }
}

/* Integer dot of `pairs` bytes of FP4 codes (low nibble j, high nibble
 * j + pairs) with 2 * pairs int8 activations. */
static inline int32_t fp4_dot(const uint8_t *qs, const int8_t *q8, int pairs) {
    int32_t lo = 0, hi = 0;
    for (int j = 0; j < pairs; ++j) {
        lo += q8[j] * anvil_cold_e2m1_x2_values[qs[j] & 0xf];
        hi += q8[j + pairs] * anvil_cold_e2m1_x2_values[qs[j] >> 4];
    }
    return lo + hi;
}

void anvil_ref_vec_dot_mxfp4_q8_0(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *blk = w;
    const uint8_t *act = a;
    float sumf = 0.0f;
    for (size_t i = 0; i < n / ANVIL_QK_MXFP4;
         ++i, blk += sizeof(anvil_block_mxfp4), act += sizeof(anvil_block_q8_0)) {
        const float d = anvil_rd_half(act + COLD_Q80_D) * anvil_e8m0_to_fp32_half(blk[MXFP4_E]);
        sumf += d * (float)fp4_dot(blk + MXFP4_QS, (const int8_t *)(act + COLD_Q80_QS), ANVIL_QK_MXFP4 / 2);
    }
    *s = sumf;
}

/* One NVFP4 block spans two Q8_0 blocks: sub-blocks 0-1 the first, 2-3 the
 * second. */
void anvil_ref_vec_dot_nvfp4_q8_0(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *blk = w;
    const uint8_t *act = a;
    float sumf = 0.0f;
    for (size_t i = 0; i < n / ANVIL_QK_NVFP4; ++i, blk += sizeof(anvil_block_nvfp4)) {
        for (int sb = 0; sb < NVFP4_SUBS; ++sb) {
            const uint8_t *ab = act + (2 * i + (size_t)(sb / 2)) * sizeof(anvil_block_q8_0);
            const float d = anvil_ue4m3_to_fp32_half(blk[NVFP4_D + sb]);
            const float dy = anvil_rd_half(ab + COLD_Q80_D);
            const int8_t *q8 = (const int8_t *)(ab + COLD_Q80_QS) + (sb % 2) * ANVIL_QK_NVFP4_SUB;
            const int32_t sumi = fp4_dot(blk + NVFP4_QS + sb * (ANVIL_QK_NVFP4_SUB / 2), q8, ANVIL_QK_NVFP4_SUB / 2);
            sumf += dy * d * (float)sumi;
        }
    }
    *s = sumf;
}
