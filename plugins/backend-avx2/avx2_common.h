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

#define AVX2_INLINE static inline __attribute__((always_inline))

AVX2_INLINE uint16_t avx2_u16(const uint8_t *p) {
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

AVX2_INLINE uint32_t avx2_u32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

AVX2_INLINE float avx2_f32(const uint8_t *p) {
    float v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* fp16 -> fp32 with F16C: exact, like anvil_fp16_to_fp32 (a signalling NaN
 * comes back quiet; every product with it is the same quiet NaN). */
AVX2_INLINE float avx2_half(const uint8_t *p) { return _cvtsh_ss(avx2_u16(p)); }

AVX2_INLINE __m256i avx2_load(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }
AVX2_INLINE __m128i avx2_load128(const void *p) { return _mm_loadu_si128((const __m128i *)p); }

/* The fp16 at p + r * stride for r < R, as floats in lanes 0..R-1 (the
 * other lanes are zero). */
AVX2_INLINE __m256 avx2_halves(const uint8_t *p, size_t stride, const int R) {
    __m128i h = _mm_cvtsi32_si128(avx2_u16(p));
    if (R > 1) h = _mm_insert_epi16(h, avx2_u16(p + stride), 1);
    if (R > 2) {
        h = _mm_insert_epi16(h, avx2_u16(p + 2 * stride), 2);
        h = _mm_insert_epi16(h, avx2_u16(p + 3 * stride), 3);
    }
    if (R > 4) {
        h = _mm_insert_epi16(h, avx2_u16(p + 4 * stride), 4);
        h = _mm_insert_epi16(h, avx2_u16(p + 5 * stride), 5);
        h = _mm_insert_epi16(h, avx2_u16(p + 6 * stride), 6);
        h = _mm_insert_epi16(h, avx2_u16(p + 7 * stride), 7);
    }
    return _mm256_cvtph_ps(h);
}

/* Lane r = sum of the eight int32 lanes of m[r], for r < R. Integer adds
 * are exact, so the grouping does not matter. */
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
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits),
                                               _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                                                 0x0101010101010101, 0x0000000000000000));
    const __m256i sel = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, sel), sel);
    return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

/* Kernel table entry with every optional part this backend provides. */
#define AVX2_KERNEL(ident, wtype, atype, var, dot, gv, gm, dec)                       \
    static const anvil_kernel ident = {                                              \
        .struct_size = sizeof(anvil_kernel), .weight_type = (wtype), .act_type = (atype), \
        .variant = (var), .vec_dot = (dot), .gemv = (gv), .gemm = (gm), .decode_row = (dec) }

/* vec_dot, gemv and gemm of a format from its R-row kernel
 * `<fmt>_rows(nb, w, w_stride, a, y, R)` (nb blocks of `block` elements).
 * gemv runs 8 rows per pass, then 4, 2, 1. gemm walks the weight rows in
 * groups of 8 and runs every activation row against a group while its bytes
 * are still in L1/L2: the weights are read from memory once, not m times. */
#define AVX2_DEFINE_ENTRY_POINTS(fmt, block)                                                  \
    static void fmt##_vec_dot(size_t n, float *s, const void *w, const void *a) {          \
        fmt##_rows(n / (block), (const uint8_t *)w, 0, (const uint8_t *)a, s, 1);           \
    }                                                                                       \
    static void fmt##_gemv_from(size_t nb, size_t r0, size_t nrows, float *y,               \
                                const uint8_t *w, size_t ws, const uint8_t *a) {            \
        size_t r = r0;                                                                      \
        for (; r + 8 <= nrows; r += 8) fmt##_rows(nb, w + r * ws, ws, a, y + r, 8);                           \
        if (r + 4 <= nrows) {                                                               \
            fmt##_rows(nb, w + r * ws, ws, a, y + r, 4);                                    \
            r += 4;                                                                         \
        }                                                                                   \
        if (r + 2 <= nrows) {                                                               \
            fmt##_rows(nb, w + r * ws, ws, a, y + r, 2);                                    \
            r += 2;                                                                         \
        }                                                                                   \
        if (r < nrows) fmt##_rows(nb, w + r * ws, ws, a, y + r, 1);                         \
    }                                                                                       \
    static void fmt##_gemv(size_t n, size_t nrows, float *y, const void *w, size_t ws,       \
                           const void *a) {                                                 \
        fmt##_gemv_from(n / (block), 0, nrows, y, (const uint8_t *)w, ws, (const uint8_t *)a); \
    }                                                                                       \
    static void fmt##_gemm(size_t n, size_t nrows, size_t m, float *y, size_t ys,            \
                           const void *w, size_t ws, const void *a, size_t as) {            \
        const uint8_t *wb = (const uint8_t *)w, *ab = (const uint8_t *)a;                   \
        for (size_t r = 0; r < nrows; r += 8) {                                             \
            const size_t r1 = nrows - r < 8 ? nrows : r + 8;                                \
            for (size_t i = 0; i < m; ++i) {                                                \
                fmt##_gemv_from(n / (block), r, r1, y + i * ys, wb, ws, ab + i * as);       \
            }                                                                               \
        }                                                                                   \
    }

#endif
