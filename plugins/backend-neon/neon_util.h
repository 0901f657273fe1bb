/* SPDX-License-Identifier: MIT */
/* backend-neon: helpers every kernel file shares.
 *
 * The dot-product files are compiled once per instruction-set variant (see
 * CMakeLists.txt): NEON_VARIANT 0 is plain ARMv8.0 Advanced SIMD, 1 adds the
 * dot-product extension (sdot), 2 adds the int8 matrix multiply (smmla) on
 * top of it. NEON_FN(name) gives each copy its own symbol, and the helpers
 * below are static inline so every copy is compiled with its own flags.
 *
 * Blocks are read through byte loads and memcpy only: weight rows come
 * straight out of a mapped file and activation rows may sit at any address,
 * so nothing here assumes the alignment of a block struct.
 */
#ifndef ANVIL_BACKEND_NEON_UTIL_H
#define ANVIL_BACKEND_NEON_UTIL_H

#include <arm_neon.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "anvil/blocks.h"
#include "anvil/numeric.h"
#include "ref/bytes.h" /* unaligned field loads: one copy for every backend */

#ifndef NEON_VARIANT
#define NEON_VARIANT 0
#endif

#if NEON_VARIANT == 2
#define NEON_FN(name) name##_i8mm
#elif NEON_VARIANT == 1
#define NEON_FN(name) name##_dp
#else
#define NEON_FN(name) name##_base
#endif

#if NEON_VARIANT >= 1 && !defined(__ARM_FEATURE_DOTPROD)
#error "the dot-product variant must be compiled with +dotprod"
#endif
#if NEON_VARIANT == 2 && !defined(__ARM_FEATURE_MATMUL_INT8)
#error "the i8mm variant must be compiled with +i8mm"
#endif

/* ---- scalar field loads ---------------------------------------------------- */

/* binary16 -> binary32 by the FP unit (fcvt): every one of the 65,536
 * inputs gives anvil_fp16_to_fp32's bits, NaN payloads included (checked
 * exhaustively under qemu-aarch64), in one instruction instead of a dozen. */
static inline float neon_half(const uint8_t *p) {
    __fp16 h;
    memcpy(&h, p, sizeof h);
    return (float)h;
}

/* ---- vector loads at any address --------------------------------------------- */

static inline int8x16_t neon_ld_s8(const uint8_t *p) { return vreinterpretq_s8_u8(vld1q_u8(p)); }

/* Eight little-endian int16 at any address. */
static inline int16x8_t neon_ld_s16x8(const uint8_t *p) { return vreinterpretq_s16_u8(vld1q_u8(p)); }

/* ---- the integer dot ------------------------------------------------------------
 * acc + the 16 products a[k] * b[k], spread over the four lanes. Which lane
 * holds which products differs between the variants; only the lane sum is
 * meaningful, and it is exact in both (no product or partial sum overflows:
 * |a[k] * b[k]| <= 128 * 128 fits int16, pairs are widened to int32). */
static inline int32x4_t neon_dot16(int32x4_t acc, int8x16_t a, int8x16_t b) {
#if NEON_VARIANT >= 1
    return vdotq_s32(acc, a, b);
#else
    const int16x8_t lo = vmull_s8(vget_low_s8(a), vget_low_s8(b));
    const int16x8_t hi = vmull_high_s8(a, b);
    return vpadalq_s16(vpadalq_s16(acc, lo), hi);
#endif
}

/* Sum of the 32 products of two 32-byte runs. */
static inline int32x4_t neon_dot32(int32x4_t acc, int8x16_t a0, int8x16_t b0, int8x16_t a1, int8x16_t b1) {
    return neon_dot16(neon_dot16(acc, a0, b0), a1, b1);
}

/* ---- unpacking ------------------------------------------------------------------ */

static inline int8x16_t neon_lo_nibbles(uint8x16_t q) { return vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(0x0F))); }

static inline int8x16_t neon_hi_nibbles(uint8x16_t q) { return vreinterpretq_s8_u8(vshrq_n_u8(q, 4)); }

/* Bits 0..15 of `bits` as 16 bytes, 0xFF where the bit is set. */
static inline uint8x16_t neon_bits_to_mask16(uint32_t bits) {
    static const uint8_t sel[16] = { 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128 };
    const uint8x16_t v = vcombine_u8(vdup_n_u8((uint8_t)(bits & 0xFF)), vdup_n_u8((uint8_t)((bits >> 8) & 0xFF)));
    return vtstq_u8(v, vld1q_u8(sel));
}

/* (v >> shift) & mask for a run-time shift. */
static inline uint8x16_t neon_shr_and(uint8x16_t v, int shift, uint8_t mask) {
    return vandq_u8(vshlq_u8(v, vdupq_n_s8((int8_t)-shift)), vdupq_n_u8(mask));
}

/* The eight 6-bit scales and mins of a Q4_K/Q5_K super-block (12 bytes):
 * bytes 0-3 hold scales 0-3, bytes 4-7 mins 0-3 (low six bits); bytes 8-11
 * the low nibbles of scale/min 4-7, whose top two bits ride in the top bits
 * of bytes 0-3 (scales) and 4-7 (mins). */
static inline void neon_scale_min_k4(const uint8_t *packed, uint8_t sc[8], uint8_t mn[8]) {
    for (int j = 0; j < 4; ++j) {
        sc[j] = packed[j] & 63;
        mn[j] = packed[j + 4] & 63;
    }
    for (int j = 4; j < 8; ++j) {
        sc[j] = (uint8_t)((packed[j + 4] & 0xF) | ((packed[j - 4] >> 6) << 4));
        mn[j] = (uint8_t)((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4));
    }
}

/* ---- float stores for the row decoders --------------------------------------------
 * Each element is computed with exactly the float operations of the scalar
 * decoder (int -> float is exact; then one multiply, and for the affine
 * formats one add or subtract), so the results are bit-identical. The build
 * has -ffp-contract=off: the multiply and the add are never fused. */

static inline void neon_i8_to_f32(int8x16_t q, float32x4_t out[4]) {
    const int16x8_t lo = vmovl_s8(vget_low_s8(q));
    const int16x8_t hi = vmovl_high_s8(q);
    out[0] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo)));
    out[1] = vcvtq_f32_s32(vmovl_high_s16(lo));
    out[2] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi)));
    out[3] = vcvtq_f32_s32(vmovl_high_s16(hi));
}

/* dst[k] = (float)q[k] * d */
static inline void neon_store_scaled(float *dst, int8x16_t q, float d) {
    float32x4_t f[4];
    neon_i8_to_f32(q, f);
    for (int k = 0; k < 4; ++k) {
        vst1q_f32(dst + 4 * k, vmulq_n_f32(f[k], d));
    }
}

/* dst[k] = (float)q[k] * d + m */
static inline void neon_store_scaled_add(float *dst, int8x16_t q, float d, float m) {
    float32x4_t f[4];
    neon_i8_to_f32(q, f);
    const float32x4_t mv = vdupq_n_f32(m);
    for (int k = 0; k < 4; ++k) {
        vst1q_f32(dst + 4 * k, vaddq_f32(vmulq_n_f32(f[k], d), mv));
    }
}

/* dst[k] = (float)q[k] * d - m */
static inline void neon_store_scaled_sub(float *dst, int8x16_t q, float d, float m) {
    float32x4_t f[4];
    neon_i8_to_f32(q, f);
    const float32x4_t mv = vdupq_n_f32(m);
    for (int k = 0; k < 4; ++k) {
        vst1q_f32(dst + 4 * k, vsubq_f32(vmulq_n_f32(f[k], d), mv));
    }
}

#endif
