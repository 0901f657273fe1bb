/* SPDX-License-Identifier: MIT */
/* backend-neon: the activation quantizers Q8_0, Q8_1 and Q8_K.
 *
 * Their bytes must be the reference quantizers' bytes (plugins/ref:
 * q8_0_family.c, q8_k.c), which are ggml's. Every float operation below is
 * the one the reference performs, lane by lane, with the same rounding:
 *   Q8_0/Q8_1  q = (int8_t)roundf(x * id): roundf is FRINTA (ties away from
 *              zero); the cast is ggml's x86 one, emulated exactly as the
 *              reference does (in range: truncate and keep the low byte;
 *              NaN or out of range: 0);
 *   Q8_K       q = nearest_int(iscale * x) by the 1.5 * 2^23 trick (ties to
 *              even, and the trick's own answer for Inf/NaN), clamped at 127
 *              at the top only, low byte kept.
 * The per-block scalars (max, scale, its fp16 rounding) use the very same
 * scalar expressions. */
#include <math.h>

#include "neon_kernels.h"
#include "neon_util.h"
#include "ref/bytes.h"

#define Q8_0_BYTES sizeof(anvil_block_q8_0)
#define Q8_1_BYTES sizeof(anvil_block_q8_1)
#define Q8_K_BYTES sizeof(anvil_block_q8_K)

/* ggml's float -> int8 cast as compiled on x86 (cvttss2si, low byte kept):
 * the truncated value where it fits int32, else INT32_MIN, whose low byte
 * is 0 (as is 0's). */
static inline int32x4_t cvt_x86_low(float32x4_t v) {
    const uint32x4_t fits =
        vandq_u32(vcgeq_f32(v, vdupq_n_f32(-2147483648.0f)), vcltq_f32(v, vdupq_n_f32(2147483648.0f)));
    return vandq_s32(vcvtq_s32_f32(v), vreinterpretq_s32_u32(fits));
}

/* The low bytes of 16 int32 lanes. */
static inline int8x16_t low_bytes(int32x4_t a, int32x4_t b, int32x4_t c, int32x4_t d) {
    const int16x8_t ab = vcombine_s16(vmovn_s32(a), vmovn_s32(b));
    const int16x8_t cd = vcombine_s16(vmovn_s32(c), vmovn_s32(d));
    return vcombine_s8(vmovn_s16(ab), vmovn_s16(cd));
}

/* One 32-element block of codes; returns d, writes the 32 codes and their
 * sum (Q8_1 keeps d * sum). */
static float q8_block(const float *x, int8_t qs[32], int *sum) {
    float32x4_t v[8];
    float32x4_t m = vdupq_n_f32(0.0f);
    for (int k = 0; k < 8; ++k) {
        v[k] = vld1q_f32(x + 4 * k);
        m = vmaxq_f32(m, vabsq_f32(v[k]));
    }
    const float amax = vmaxvq_f32(m);
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int32x4_t c[8];
    for (int k = 0; k < 8; ++k) {
        c[k] = cvt_x86_low(vrndaq_f32(vmulq_n_f32(v[k], id)));
    }
    const int8x16_t q0 = low_bytes(c[0], c[1], c[2], c[3]);
    const int8x16_t q1 = low_bytes(c[4], c[5], c[6], c[7]);
    vst1q_s8(qs, q0);
    vst1q_s8(qs + 16, q1);
    *sum = vaddlvq_s8(q0) + vaddlvq_s8(q1);
    return d;
}

void anvil_neon_quantize_q8_0(const float *x, void *dst, size_t n) {
    uint8_t *out = dst;
    for (size_t i = 0; i < n / 32; ++i, x += 32, out += Q8_0_BYTES) {
        int8_t qs[32];
        int sum;
        const float d = q8_block(x, qs, &sum);
        anvil_wr_half(out + offsetof(anvil_block_q8_0, d), d);
        memcpy(out + offsetof(anvil_block_q8_0, qs), qs, sizeof qs);
    }
}

void anvil_neon_quantize_q8_1(const float *x, void *dst, size_t n) {
    uint8_t *out = dst;
    for (size_t i = 0; i < n / 32; ++i, x += 32, out += Q8_1_BYTES) {
        int8_t qs[32];
        int sum;
        const float d = q8_block(x, qs, &sum);
        anvil_wr_half(out + offsetof(anvil_block_q8_1, d), d);
        anvil_wr_half(out + offsetof(anvil_block_q8_1, s), (float)sum * d);
        memcpy(out + offsetof(anvil_block_q8_1, qs), qs, sizeof qs);
    }
}

/* ggml's nearest_int on four lanes: add 1.5 * 2^23, keep the mantissa. The
 * same float add as the scalar trick, so the same answer for every input
 * (including the Inf/NaN of an overflowed scale, which give -2^22). */
static inline int32x4_t nearest_int4(float32x4_t v) {
    const float32x4_t t = vaddq_f32(v, vdupq_n_f32(12582912.0f));
    const int32x4_t bits = vreinterpretq_s32_f32(t);
    return vsubq_s32(vandq_s32(bits, vdupq_n_s32(0x007fffff)), vdupq_n_s32(0x00400000));
}

void anvil_neon_quantize_q8_K(const float *x, void *dst, size_t n) {
    uint8_t *out = dst;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i, x += ANVIL_QK_K, out += Q8_K_BYTES) {
        float32x4_t m = vdupq_n_f32(0.0f);
        for (int k = 0; k < ANVIL_QK_K; k += 4) {
            m = vmaxq_f32(m, vabsq_f32(vld1q_f32(x + k)));
        }
        const float amax = vmaxvq_f32(m);
        uint8_t *qs = out + offsetof(anvil_block_q8_K, qs);
        uint8_t *bsums = out + offsetof(anvil_block_q8_K, bsums);
        if (amax == 0.0f) {
            const float zero = 0.0f;
            memcpy(out + offsetof(anvil_block_q8_K, d), &zero, sizeof zero);
            memset(qs, 0, ANVIL_QK_K);
            memset(bsums, 0, 2 * (ANVIL_QK_K / 16));
            continue;
        }
        /* The signed value of the first element of largest magnitude. */
        float max = 0.0f;
        for (int j = 0; j < ANVIL_QK_K; ++j) {
            if (fabsf(x[j]) == amax) {
                max = x[j];
                break;
            }
        }
        const float iscale = -127.0f / max;
        const int32x4_t top = vdupq_n_s32(127);
        for (int g = 0; g < ANVIL_QK_K / 16; ++g) {
            int32x4_t c[4];
            for (int k = 0; k < 4; ++k) {
                const float32x4_t v = vmulq_n_f32(vld1q_f32(x + 16 * g + 4 * k), iscale);
                c[k] = vminq_s32(nearest_int4(v), top);
            }
            const int8x16_t q = low_bytes(c[0], c[1], c[2], c[3]);
            vst1q_s8((int8_t *)(qs + 16 * g), q);
            const int16_t s = (int16_t)vaddlvq_s8(q);
            memcpy(bsums + 2 * g, &s, sizeof s);
        }
        const float d = 1.0f / iscale;
        memcpy(out + offsetof(anvil_block_q8_K, d), &d, sizeof d);
    }
}
