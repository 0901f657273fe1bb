/* SPDX-License-Identifier: MIT */
/* Per-row block scales gathered into one vector, for the x86 backends
 * (backend-avx2, backend-avx512 and its SIMDe build): lane r holds the
 * scale of row r (r < R; R = 8, 4, 2 or 1, a constant after inlining); the
 * other lanes hold the scale of a zero field (0, or 2^-128 for E8M0), which
 * the kernels compute with and never store. The includer has included its intrinsics
 * (immintrin.h, or SIMDe's aliases) and ref/bytes.h first.
 *
 * Why in a vector: a float per row written to memory and reloaded as a
 * vector stalls on store forwarding once per block, which made the MXFP4
 * kernels slower than ggml's one-row loop. */
#ifndef ANVIL_SIMD_X86_SCALES_H
#define ANVIL_SIMD_X86_SCALES_H

#include <stddef.h>
#include <stdint.h>

#include "simd_row_passes.h"

/* The binary16 at p + r * stride, as f32 (exact). */
SIMD_INLINE __m256 simd_x86_halves(const uint8_t *p, size_t stride, const int R) {
    __m128i h = _mm_cvtsi32_si128(anvil_rd_u16(p));
    if (R > 1) h = _mm_insert_epi16(h, anvil_rd_u16(p + stride), 1);
    if (R > 2) {
        h = _mm_insert_epi16(h, anvil_rd_u16(p + 2 * stride), 2);
        h = _mm_insert_epi16(h, anvil_rd_u16(p + 3 * stride), 3);
    }
    if (R > 4) {
        h = _mm_insert_epi16(h, anvil_rd_u16(p + 4 * stride), 4);
        h = _mm_insert_epi16(h, anvil_rd_u16(p + 5 * stride), 5);
        h = _mm_insert_epi16(h, anvil_rd_u16(p + 6 * stride), 6);
        h = _mm_insert_epi16(h, anvil_rd_u16(p + 7 * stride), 7);
    }
    return _mm256_cvtph_ps(h);
}

/* The E8M0 byte e at p + r * stride as 2^(e - 128) (ggml's
 * GGML_E8M0_TO_FP32_HALF, exactly: a subnormal for e < 2). */
SIMD_INLINE __m256 simd_x86_e8m0_halves(const uint8_t *p, size_t stride, const int R) {
    __m128i b = _mm_cvtsi32_si128(p[0]);
    if (R > 1) b = _mm_insert_epi8(b, p[stride], 1);
    if (R > 2) {
        b = _mm_insert_epi8(b, p[2 * stride], 2);
        b = _mm_insert_epi8(b, p[3 * stride], 3);
    }
    if (R > 4) {
        b = _mm_insert_epi8(b, p[4 * stride], 4);
        b = _mm_insert_epi8(b, p[5 * stride], 5);
        b = _mm_insert_epi8(b, p[6 * stride], 6);
        b = _mm_insert_epi8(b, p[7 * stride], 7);
    }
    const __m256i e = _mm256_cvtepu8_epi32(b);
    const __m256i sub = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e); /* e < 2: 2^-128, 2^-127 */
    const __m256i norm = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    return _mm256_castsi256_ps(_mm256_blendv_epi8(norm, sub, _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e)));
}

#endif
