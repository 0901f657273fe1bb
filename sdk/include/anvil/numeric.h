/* SPDX-License-Identifier: MIT */
/*
 * anvil SDK — number conversions and rounding helpers, identical to ggml's.
 *
 * Everything is static inline so every plugin rounds the same way. These
 * functions are exact ports of ggml's scalar definitions (ggml-impl.h,
 * ggml-quants.c); parity depends on them, so they must be compiled without
 * floating-point contraction (-ffp-contract=off; anvil's build sets it).
 */
#ifndef ANVIL_NUMERIC_H
#define ANVIL_NUMERIC_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "anvil/blocks.h"

#ifdef __cplusplus
extern "C" {
#endif

static inline float anvil_f32_from_bits(uint32_t w) {
    float f;
    memcpy(&f, &w, sizeof f);
    return f;
}

static inline uint32_t anvil_f32_to_bits(float f) {
    uint32_t w;
    memcpy(&w, &f, sizeof w);
    return w;
}

/* binary16 -> binary32, exact for every input (NaN payloads kept). */
static inline float anvil_fp16_to_fp32(anvil_half h) {
    const uint32_t w = (uint32_t)h << 16;
    const uint32_t sign = w & UINT32_C(0x80000000);
    const uint32_t two_w = w + w;

    /* Normal numbers: shift the exponent and mantissa into place and rescale
     * by 2^-112 to fix the exponent bias (also maps Inf/NaN to Inf/NaN). */
    const uint32_t exp_offset = UINT32_C(0xE0) << 23;
    const float exp_scale = 0x1.0p-112f;
    const float normalized = anvil_f32_from_bits((two_w >> 4) + exp_offset) * exp_scale;

    /* Subnormals: build 0.5 + m * 2^-24 in the mantissa and subtract 0.5. */
    const uint32_t magic_mask = UINT32_C(126) << 23;
    const float magic_bias = 0.5f;
    const float denormalized = anvil_f32_from_bits((two_w >> 17) | magic_mask) - magic_bias;

    const uint32_t denormalized_cutoff = UINT32_C(1) << 27;
    const uint32_t result =
        sign | (two_w < denormalized_cutoff ? anvil_f32_to_bits(denormalized) : anvil_f32_to_bits(normalized));
    return anvil_f32_from_bits(result);
}

/* binary32 -> binary16, round to nearest even; NaN -> 0x7E00 (sign kept),
 * as ggml's GGML_FP32_TO_FP16. */
static inline anvil_half anvil_fp32_to_fp16(float f) {
    const float scale_to_inf = 0x1.0p+112f;
    const float scale_to_zero = 0x1.0p-110f;
    /* The two scalings push the value into a range where adding a power of
     * two (below) performs the round-to-nearest-even in hardware. */
    float base = (fabsf(f) * scale_to_inf) * scale_to_zero;

    const uint32_t w = anvil_f32_to_bits(f);
    const uint32_t shl1_w = w + w;
    const uint32_t sign = w & UINT32_C(0x80000000);
    uint32_t bias = shl1_w & UINT32_C(0xFF000000);
    if (bias < UINT32_C(0x71000000)) {
        bias = UINT32_C(0x71000000);
    }

    base = anvil_f32_from_bits((bias >> 1) + UINT32_C(0x07800000)) + base;
    const uint32_t bits = anvil_f32_to_bits(base);
    const uint32_t exp_bits = (bits >> 13) & UINT32_C(0x00007C00);
    const uint32_t mantissa_bits = bits & UINT32_C(0x00000FFF);
    const uint32_t nonsign = exp_bits + mantissa_bits;
    return (anvil_half)((sign >> 16) | (shl1_w > UINT32_C(0xFF000000) ? UINT16_C(0x7E00) : nonsign));
}

/* bfloat16 -> binary32 (exact). */
static inline float anvil_bf16_to_fp32(uint16_t h) { return anvil_f32_from_bits((uint32_t)h << 16); }

/* binary32 -> bfloat16, round to nearest even; NaN forced quiet, as ggml's
 * GGML_FP32_TO_BF16. */
static inline uint16_t anvil_fp32_to_bf16(float f) {
    const uint32_t u = anvil_f32_to_bits(f);
    if ((u & UINT32_C(0x7fffffff)) > UINT32_C(0x7f800000)) {
        return (uint16_t)((u >> 16) | 64);
    }
    return (uint16_t)((u + (UINT32_C(0x7fff) + ((u >> 16) & 1))) >> 16);
}

/* ggml's nearest_int: round to nearest, ties to even, via the 1.5*2^23
 * trick. Valid for |fval| <= 4194303. */
static inline int anvil_nearest_int(float fval) {
    const float val = fval + 12582912.f;
    int32_t i;
    memcpy(&i, &val, sizeof i);
    return (int)((i & 0x007fffff) - 0x00400000);
}

/* Index of the first NaN or Inf in x[0..n), or n when all are finite. */
static inline size_t anvil_find_nonfinite(const float *x, size_t n) {
    size_t i;
    for (i = 0; i < n; ++i) {
        if ((anvil_f32_to_bits(x[i]) & UINT32_C(0x7f800000)) == UINT32_C(0x7f800000)) {
            return i;
        }
    }
    return n;
}

/* ---- OCP microscaling formats: E8M0 scales, UE4M3 scales, E2M1 elements --
 *
 * ggml keeps its FP4 (E2M1) codebook doubled, as the integers
 * {0, 1, 2, 3, 4, 6, 8, 12} with a sign bit, so that codes stay int8; the
 * factor 1/2 then lives in the scale. That is why the scale decoders ggml
 * uses for MXFP4 and NVFP4 return HALF the scale's value (the *_half
 * functions below); anvil_e8m0_to_fp32 is the plain value, for formats whose
 * elements are not doubled (e.g. MXFP8: E4M3 elements, E8M0 scale). */

/* E8M0 (unsigned power of two, bias 127) -> binary32: 2^(e - 127). e = 0
 * gives 2^-127, a binary32 subnormal. e = 255, NaN in the OCP spec, gives
 * +Inf, as ggml's ggml_e8m0_to_fp32 (which does not special-case it). */
static inline float anvil_e8m0_to_fp32(uint8_t e) {
    const uint32_t bits = e == 0 ? UINT32_C(0x00400000) : (uint32_t)e << 23;
    return anvil_f32_from_bits(bits);
}

/* Half of anvil_e8m0_to_fp32, exactly: 2^(e - 128), as ggml's
 * ggml_e8m0_to_fp32_half (the MXFP4 scale). Finite for every e: 255 gives
 * 2^127; 0 and 1 give the subnormals 2^-128 and 2^-127. */
static inline float anvil_e8m0_to_fp32_half(uint8_t e) {
    const uint32_t bits = e < 2 ? UINT32_C(0x00200000) << e : (uint32_t)(e - 1) << 23;
    return anvil_f32_from_bits(bits);
}

/* UE4M3 (unsigned E4M3: 4 exponent bits, bias 7, 3 mantissa bits; the NVFP4
 * sub-block scale) -> HALF its value, as ggml's ggml_ue4m3_to_fp32:
 *   code 0 and 0x7F (the E4M3 NaN)  -> 0
 *   exponent field 0 (subnormal)     -> m * 2^-9 / 2
 *   otherwise                        -> (1 + m/8) * 2^(e-7) / 2
 * Bit 7 is ignored (0x80..0xFE decode like 0x00..0x7E, 0xFF gives 240), as
 * in ggml. Every result is exact in binary32, so it is built from bits. */
static inline float anvil_ue4m3_to_fp32_half(uint8_t x) {
    const uint32_t e = ((uint32_t)x >> 3) & 0xF;
    const uint32_t m = (uint32_t)x & 0x7;
    if (x == 0 || x == 0x7F) {
        return 0.0f;
    }
    if (e == 0) {
        return (float)m * 0x1.0p-10f;
    }
    /* (1 + m/8) * 2^(e-8): biased exponent e - 8 + 127, mantissa m in the
     * top three fraction bits. */
    return anvil_f32_from_bits(((e + 119) << 23) | (m << 20));
}

/* binary32 -> UE4M3, as ggml's ggml_fp32_to_ue4m3 (NVFP4's scale encoder).
 * Not IEEE rounding; reproduced because block bytes depend on it:
 *   x <= 0 or NaN -> 0; x > 448 (and +Inf) saturates to 448 first;
 *   below 2^-6 (subnormal range): m = (int)(x * 512 + 0.5), clamped to 7,
 *     0 when it rounds below 1;
 *   otherwise the three mantissa bits are rounded half-up on the fourth
 *     (no sticky bits), carrying into the exponent;
 *   any value whose exponent reaches 15 (>= 256) becomes 0x7E (448). */
static inline uint8_t anvil_fp32_to_ue4m3(float x) {
    if (!(x > 0.0f)) {
        return 0;
    }
    if (x > 448.0f) {
        x = 448.0f;
    }
    const uint32_t bits = anvil_f32_to_bits(x);
    int e = (int)((bits >> 23) & 0xFF) - 127 + 7;
    if (e <= 0) {
        int m = (int)(x * 512.0f + 0.5f);
        if (m > 7) {
            m = 7;
        }
        return m < 1 ? (uint8_t)0 : (uint8_t)m;
    }
    if (e >= 15) {
        return 0x7E;
    }
    int m = (int)((bits >> 20) & 0x7) + (int)((bits >> 19) & 1);
    if (m > 7) {
        m = 0;
        ++e;
        if (e >= 15) {
            return 0x7E;
        }
    }
    return (uint8_t)((e << 3) | m);
}

/* E2M1 (FP4: sign, 2 exponent bits, 1 mantissa bit; low 4 bits of code)
 * -> twice its value, as an integer: ggml's kvalues_mxfp4 entry, one of
 * 0, +-1, +-2, +-3, +-4, +-6, +-8, +-12. Code 8 (-0) gives 0. */
static inline int anvil_e2m1_to_int_x2(uint8_t code) {
    const int e = (code >> 1) & 3;
    const int m = code & 1;
    const int mag = e == 0 ? m : (2 + m) << (e - 1);
    return (code & 8) ? -mag : mag;
}

/* E2M1 -> its value in binary32 (0, +-0.5, +-1, +-1.5, +-2, +-3, +-4, +-6),
 * code 8 giving -0.0. ggml's decoders never produce -0.0 from code 8 (they
 * multiply the integer 0 by the scale); use anvil_e2m1_to_int_x2 to match
 * them. */
static inline float anvil_e2m1_to_fp32(uint8_t code) {
    const float v = (float)anvil_e2m1_to_int_x2(code) * 0.5f;
    return ((code & 0xF) == 8) ? -0.0f : v;
}

#ifdef __cplusplus
}
#endif

#endif /* ANVIL_NUMERIC_H */
