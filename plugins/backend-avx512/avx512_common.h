/* SPDX-License-Identifier: MIT */
/* Helpers shared by the AVX-512 kernel files. Each kernel file is compiled
 * once per variant (CMakeLists.txt):
 *
 *   AVX512_VNNI=0   -mavx512f -mavx512bw -mavx512vl: u8 x s8 dots by
 *                   vpmaddubsw + vpmaddwd (Skylake-SP and later)
 *   AVX512_VNNI=1   the same plus -mavx512vnni: vpdpbusd (Cascade Lake,
 *                   Ice Lake, Zen 4 and later)
 *   AVX512_EMULATED=1  either of the above through SIMDe
 *                   (avx512_emulate.h), for tests on CPUs without AVX-512
 *
 * and every public symbol gets the variant's suffix (AVX512_SYM), so one
 * plugin holds both sets and init() picks one from the host's CPU
 * features. backend_avx512.c itself is compiled for baseline x86-64.
 *
 * How the kernels are built, and why (as in backend-avx2):
 *  - A kernel computes R weight rows (8, 4, 2, 1: a constant after
 *    inlining) against one activation row in one pass; each activation
 *    block is loaded once for R rows.
 *  - Per block, each row's integer dot is reduced to ONE exact int32, the
 *    integer the scalar reference computes; lane r of a float vector then
 *    carries row r through the reference's float operations in the
 *    reference's order. Single float lanes round like scalar code (no FP
 *    contraction in this build), so every result is bit-identical to
 *    plugins/ref and cannot depend on R or on the thread that ran it.
 *  - Activation codes lie in [-127, 127] (they come from an activation
 *    quantizer), so |w| (unsigned) times a with w's sign is exact for any
 *    weight byte, -128 included, and no vpmaddubsw pair saturates.
 *  - Blocks are read with unaligned loads and memcpy.
 */
#ifndef ANVIL_AVX512_COMMON_H
#define ANVIL_AVX512_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if AVX512_EMULATED
#include "avx512_emulate.h"
#define AVX512_PERM(imm) (imm)
#else
#define AVX512_PERM(imm) ((_MM_PERM_ENUM)(imm))
#include <immintrin.h>
#endif

#include "anvil/backend.h"
#include "anvil/blocks.h"
#include "anvil/numeric.h"
#include "simd_row_passes.h"
#include "ref/bytes.h" /* unaligned field loads: one copy for every backend */
#include "simd_x86_scales.h"

#if AVX512_VNNI
#define AVX512_SYM(name) name##_vnni
#define AVX512_VARIANT_BASE "avx512-vnni"
#else
#define AVX512_SYM(name) name##_base
#define AVX512_VARIANT_BASE "avx512"
#endif
#if AVX512_EMULATED
#define AVX512_VARIANT AVX512_VARIANT_BASE "-emu"
#else
#define AVX512_VARIANT AVX512_VARIANT_BASE
#endif

#define AVX512_INLINE static inline __attribute__((always_inline))

/* Put before a kernel's per-row loop (R <= 8 passes): unrolled, the R rows'
 * sums stay in registers (gcc -O2 keeps such loops rolled and the sums on
 * the stack; llvm-mca's icelake model: Q8_0 8-row pass 61 -> 45 cycles per
 * pair of blocks, scripts/mca). Not in the emulated build, where SIMDe's
 * lane loops would make it far larger; unrolling cannot change a result. */
#if AVX512_EMULATED
#define AVX512_FOR_ROWS
#else
#define AVX512_FOR_ROWS _Pragma("GCC unroll 8")
#endif

/* fp16 -> fp32, exact (F16C is part of every AVX-512 CPU). */
AVX512_INLINE float avx512_half(const uint8_t *p) {
#if AVX512_EMULATED
    return anvil_fp16_to_fp32(anvil_rd_u16(p));
#else
    return _cvtsh_ss(anvil_rd_u16(p));
#endif
}

AVX512_INLINE void avx512_put_half(uint8_t *p, float v) {
#if AVX512_EMULATED
    const uint16_t h = anvil_fp32_to_fp16(v);
#else
    const uint16_t h = (uint16_t)_cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT);
#endif
    memcpy(p, &h, sizeof h);
}

AVX512_INLINE __m512i avx512_load(const void *p) { return _mm512_loadu_si512(p); }
AVX512_INLINE __m256i avx512_load256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }
AVX512_INLINE __m128i avx512_load128(const void *p) { return _mm_loadu_si128((const __m128i *)p); }

/* v in the low 256 bits, zeros above. */
AVX512_INLINE __m512i avx512_zext256(__m256i v) { return _mm512_inserti64x4(_mm512_setzero_si512(), v, 0); }

/* 32 bytes at p then 32 bytes at q, as one vector. */
AVX512_INLINE __m512i avx512_load2x256(const void *p, const void *q) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(avx512_load256(p)), avx512_load256(q), 1);
}

/* The float at p + r * stride for r < R, in lane r (the others zero). */
AVX512_INLINE __m256 avx512_floats(const uint8_t *p, size_t stride, const int R) {
    float v[8] = { 0 };
    for (int r = 0; r < R; ++r) v[r] = anvil_rd_f32(p + (size_t)r * stride);
    return _mm256_loadu_ps(v);
}

/* acc + sum over each group of 4 bytes of (u8 x) * (s8 y), per int32 lane.
 * Exact while |x * y| pairs stay below 2^15 (x <= 128, |y| <= 127 in every
 * caller), so both variants give the same integers. */
AVX512_INLINE __m512i avx512_dpbusd(__m512i acc, __m512i x, __m512i y) {
#if AVX512_VNNI
    return _mm512_dpbusd_epi32(acc, x, y);
#else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(x, y), _mm512_set1_epi16(1)));
#endif
}

/* The same for two signed operands: |x| times y with x's sign (x may be
 * -128; y must not be). AVX-512 has no vpsignb: negate y under x's sign
 * mask (where x is 0, |x| is 0 and y does not matter). */
AVX512_INLINE __m512i avx512_dpbssd(__m512i acc, __m512i x, __m512i y) {
    const __mmask64 neg = _mm512_movepi8_mask(x);
    const __m512i ys = _mm512_mask_sub_epi8(y, neg, _mm512_setzero_si512(), y);
    return avx512_dpbusd(acc, _mm512_abs_epi8(x), ys);
}

/* One step of a transposing reduction (per 128-bit lane): with mask
 * 0xAAAA, shuf 0xB1, int32 lanes 2i get a's pair sums and lanes 2i+1 b's;
 * with mask 0xCCCC, shuf 0x4E the same at 64-bit granularity. */
#define AVX512_FOLD(a, b, mask, shuf)                           \
    _mm512_add_epi32(_mm512_mask_blend_epi32((mask), (a), (b)), \
                     _mm512_shuffle_epi32(_mm512_mask_blend_epi32((mask), (b), (a)), AVX512_PERM(shuf)))

/* For m[0..R-1] (missing rows count as zero): 128-bit lane j of the
 * result holds, in its int32 lanes 0..3, the sums of lane j of rows
 * 0..3 (first result) and rows 4..7 (second). */
AVX512_INLINE void avx512_fold_rows(const __m512i *m, const int R, __m512i *u0, __m512i *u1) {
    const __m512i z = _mm512_setzero_si512();
    const __m512i t01 = AVX512_FOLD(m[0], R > 1 ? m[1] : z, 0xAAAA, 0xB1);
    const __m512i t23 = R > 2 ? AVX512_FOLD(m[2], m[3], 0xAAAA, 0xB1) : z;
    *u0 = AVX512_FOLD(t01, t23, 0xCCCC, 0x4E);
    if (R > 4) {
        const __m512i t45 = AVX512_FOLD(m[4], m[5], 0xAAAA, 0xB1);
        const __m512i t67 = AVX512_FOLD(m[6], m[7], 0xAAAA, 0xB1);
        *u1 = AVX512_FOLD(t45, t67, 0xCCCC, 0x4E);
    } else {
        *u1 = z;
    }
}

/* Per row r < R, the sums of int32 lanes 0..7 and 8..15 of m[r]:
 * lanes 0..7 of the result are the first half of rows 0..7, lanes 8..15
 * the second half (two 32-element blocks per vector). Exact. */
AVX512_INLINE __m512i avx512_reduce_halves(const __m512i *m, const int R) {
    __m512i u0, u1;
    avx512_fold_rows(m, R, &u0, &u1);
    /* [u0.0 + u0.1, u0.2 + u0.3, u1.0 + u1.1, u1.2 + u1.3] in 128-bit lanes */
    const __m512i s = _mm512_add_epi32(_mm512_shuffle_i64x2(u0, u1, _MM_SHUFFLE(2, 0, 2, 0)),
                                       _mm512_shuffle_i64x2(u0, u1, _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_shuffle_i64x2(s, s, _MM_SHUFFLE(3, 1, 2, 0));
}

/* Lane r = sum of the sixteen int32 lanes of m[r], for r < R. Exact. */
AVX512_INLINE __m256i avx512_reduce(const __m512i *m, const int R) {
    const __m512i h = avx512_reduce_halves(m, R);
    return _mm256_add_epi32(_mm512_castsi512_si256(h), _mm512_extracti64x4_epi64(h, 1));
}

/* y[r] = lane r of v, for r < R. */
AVX512_INLINE void avx512_store_rows(float *y, __m256 v, const int R) {
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

/* Lane r = y[r] for r < R (the others zero): store_rows' inverse. */
AVX512_INLINE __m256 avx512_load_rows(const float *y, const int R) {
    if (R == 8) return _mm256_loadu_ps(y);
    if (R == 4) return _mm256_castps128_ps256(_mm_loadu_ps(y));
    if (R == 2) return _mm256_castps128_ps256(_mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)y)));
    return _mm256_castps128_ps256(_mm_load_ss(y));
}

/* Kernel table entry with every optional part this backend provides. */
#define AVX512_KERNEL(ident, wtype, atype, dot, gv, gm, dec)                 \
    static const anvil_kernel ident = { .struct_size = sizeof(anvil_kernel), \
                                        .weight_type = (wtype),              \
                                        .act_type = (atype),                 \
                                        .variant = AVX512_VARIANT,           \
                                        .vec_dot = (dot),                    \
                                        .gemv = (gv),                        \
                                        .gemm = (gm),                        \
                                        .decode_row = (dec) }

#endif
