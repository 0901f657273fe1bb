/* SPDX-License-Identifier: MIT */
/* Helpers shared by the AVX2 kernel files (compiled with -mavx2 -mfma
 * -mf16c; never included by backend_avx2.c, which stays baseline x86-64).
 *
 * How every kernel here is built, and why:
 *
 *  - A kernel computes R weight rows against one activation row in one pass
 *    (R = 8, 4, 2 or 1, a compile-time constant after inlining), so each
 *    activation block is loaded once for R rows and the per-row work runs as
 *    R independent dependency chains.
 *  - Per block (or super-block) each row's integer dot is reduced to ONE
 *    exact int32, the same integer the scalar reference computes. Lane r of
 *    a vector then carries row r through the float part, which performs the
 *    reference's float operations in the reference's order. Single float
 *    lanes round exactly like scalar code (the build has no FP contraction),
 *    so every result is bit-identical to plugins/ref -- stronger than the
 *    ABI's 1e-5 bound -- and a row's value cannot depend on R, on which
 *    other rows share its pass, or on the thread that ran it. (One
 *    exception, IQ4_XS, keeps the integer parts but folds the reference's
 *    per-sub-block float terms into one per block; see avx2_cold.c.)
 *  - Activations come from an activation quantizer, so their codes lie in
 *    [-127, 127] and Q8_K bsums match qs. The signed-by-signed products use
 *    |w| (unsigned) times a with w's sign, which is exact for any weight
 *    byte, -128 included, given that range.
 *  - Blocks are read with unaligned loads and memcpy: rows may start at any
 *    byte address (a tensor inside a mapped file).
 */
#ifndef ANVIL_AVX2_COMMON_H
#define ANVIL_AVX2_COMMON_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "anvil/backend.h"
#include "anvil/blocks.h"
#include "simd_row_passes.h"
#include "ref/bytes.h" /* unaligned field loads: one copy for every backend */
#include "simd_x86_scales.h"

#define AVX2_INLINE static inline __attribute__((always_inline))

/* fp16 -> fp32 with F16C: exact, like anvil_fp16_to_fp32 (a signalling NaN
 * comes back quiet; every product with it is the same quiet NaN). */
AVX2_INLINE float avx2_half(const uint8_t *p) { return _cvtsh_ss(anvil_rd_u16(p)); }

AVX2_INLINE __m256i avx2_load(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }
/* A load the compiler must keep in a register: when a vector is both
 * masked and shifted, compilers fold it into the AND as a memory operand
 * and load it a second time for the shift, and the L1 load ports are a
 * bottleneck of these kernels. */
AVX2_INLINE __m256i avx2_load_reg(const void *p) {
    __m256i v = _mm256_loadu_si256((const __m256i *)p);
    __asm__("" : "+x"(v));
    return v;
}
/* v, as a value the compiler cannot see through. Integer adds being
 * associative, compilers otherwise regroup a long accumulation into a
 * tree: every partial product of a block is computed first and kept
 * live, far more than sixteen registers hold, and spilled. */
AVX2_INLINE __m256i avx2_opaque(__m256i v) {
    __asm__("" : "+x"(v));
    return v;
}
/* 16 bytes at p in both 128-bit halves: a plain load on Zen 3 (no
 * shuffle uop), unlike a broadcast from a register. */
AVX2_INLINE __m256i avx2_load_lane(const void *p) {
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)p));
}
AVX2_INLINE __m128i avx2_load128(const void *p) { return _mm_loadu_si128((const __m128i *)p); }

/* One step of a transposing reduction: for a and b with the same layout,
 * lanes 2i get a's pairwise sums (lanes 2i + 2i+1 of a) and lanes 2i+1
 * b's, when mask = 0xAA, shuf = 0xB1; with mask = 0xCC, shuf = 0x4E the
 * same at 64-bit granularity. Two blends (any vector pipe), one in-lane
 * shuffle and an add: a horizontal add takes twice a shuffle's slot on
 * Zen 3, and these reductions run once per block. */
#define AVX2_FOLD(a, b, mask, shuf)                        \
    _mm256_add_epi32(_mm256_blend_epi32((a), (b), (mask)), \
                     _mm256_shuffle_epi32(_mm256_blend_epi32((b), (a), (mask)), (shuf)))

/* Lane r = sum of the eight int32 lanes of m[r], for r < R. Integer adds
 * are exact, so the grouping does not matter. Horizontal adds: fewest
 * instructions, but each takes two shuffle-pipe slots on Zen 3. */
AVX2_INLINE __m256i avx2_reduce(const __m256i *m, const int R) {
    if (R == 1) {
        __m128i s = _mm_add_epi32(_mm256_castsi256_si128(m[0]), _mm256_extracti128_si256(m[0], 1));
        s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
        return _mm256_zextsi128_si256(s);
    }
    if (R == 2) {
        const __m256i t = _mm256_hadd_epi32(m[0], m[1]);
        const __m256i u = _mm256_hadd_epi32(t, t);
        return _mm256_zextsi128_si256(_mm_add_epi32(_mm256_castsi256_si128(u), _mm256_extracti128_si256(u, 1)));
    }
    const __m256i u0 = _mm256_hadd_epi32(_mm256_hadd_epi32(m[0], m[1]), _mm256_hadd_epi32(m[2], m[3]));
    if (R == 4) {
        return _mm256_zextsi128_si256(_mm_add_epi32(_mm256_castsi256_si128(u0), _mm256_extracti128_si256(u0, 1)));
    }
    const __m256i u1 = _mm256_hadd_epi32(_mm256_hadd_epi32(m[4], m[5]), _mm256_hadd_epi32(m[6], m[7]));
    return _mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20), _mm256_permute2x128_si256(u0, u1, 0x31));
}

/* Lane r = sum of the four int32 lanes of m[r], for r < R. Rows r and
 * r + 4 share a vector (low / high half), which saves the last step. */
AVX2_INLINE __m256i avx2_reduce128(const __m128i *m, const int R) {
    if (R < 8) {
        __m256i v[4];
        for (int r = 0; r < R; ++r) v[r] = _mm256_zextsi128_si256(m[r]);
        return avx2_reduce(v, R);
    }
    const __m256i v0 = _mm256_set_m128i(m[4], m[0]), v1 = _mm256_set_m128i(m[5], m[1]);
    const __m256i v2 = _mm256_set_m128i(m[6], m[2]), v3 = _mm256_set_m128i(m[7], m[3]);
    /* low half rows 0..3, high half rows 4..7 */
    return AVX2_FOLD(AVX2_FOLD(v0, v1, 0xAA, 0xB1), AVX2_FOLD(v2, v3, 0xAA, 0xB1), 0xCC, 0x4E);
}

/* Sum of the eight int32 lanes of v (a vec_dot's reductions). */
AVX2_INLINE int avx2_hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}

/* y[r] = lane r of v, for r < R. */
AVX2_INLINE void avx2_store_rows(float *y, __m256 v, const int R) {
    if (R == 8) {
        _mm256_storeu_ps(y, v);
    } else if (R == 4) {
        _mm_storeu_ps(y, _mm256_castps256_ps128(v));
    } else if (R == 2) {
        _mm_storel_pi((__m64 *)y, _mm256_castps256_ps128(v));
    } else {
        _mm_store_ss(y, _mm256_castps256_ps128(v));
    }
}

/* sum over 32 int8 of (u8 x) * (s8 y), as 8 int32 lanes (lane i covers bytes
 * 4i..4i+3). Exact while |x * y| pairs stay below 2^15, which every caller
 * guarantees (x <= 128, |y| <= 127). */
AVX2_INLINE __m256i avx2_dot_u8s8(__m256i x, __m256i y) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), _mm256_set1_epi16(1));
}

/* The same for two signed operands: |x| times y with x's sign (x may be
 * -128; y must not be). */
AVX2_INLINE __m256i avx2_dot_s8s8(__m256i x, __m256i y) {
    return avx2_dot_u8s8(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

/* 16 bytes of packed nibbles -> 32 bytes: the low nibbles, then the high
 * ones (the Q4_0 / IQ4_NL element order). */
AVX2_INLINE __m256i avx2_nibbles(const uint8_t *p) {
    const __m256i b = _mm256_broadcastsi128_si256(avx2_load128(p));
    return _mm256_and_si256(_mm256_srlv_epi64(b, _mm256_set_epi64x(4, 4, 0, 0)), _mm256_set1_epi8(0x0F));
}

/* 32 bits -> 32 bytes: byte j is 0x10 when bit j is set, else 0 (the fifth
 * bit of a Q5_0 / Q5_1 code). */
AVX2_INLINE __m256i avx2_bit4_from_bits(uint32_t bits) {
    const __m256i spread =
        _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                                                            0x0101010101010101, 0x0000000000000000));
    const __m256i sel = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, sel), sel);
    return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

/* Kernel table entry with every optional part this backend provides. */
#define AVX2_KERNEL(ident, wtype, atype, var, dot, gv, gm, dec)              \
    static const anvil_kernel ident = { .struct_size = sizeof(anvil_kernel), \
                                        .weight_type = (wtype),              \
                                        .act_type = (atype),                 \
                                        .variant = (var),                    \
                                        .vec_dot = (dot),                    \
                                        .gemv = (gv),                        \
                                        .gemm = (gm),                        \
                                        .decode_row = (dec) }

#endif
