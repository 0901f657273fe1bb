/* SPDX-License-Identifier: MIT */
/* backend-avx2: the activation quantizers Q8_0, Q8_1 and Q8_K.
 *
 * They must write the bytes of the reference quantizers (plugins/ref), not
 * those of ggml's own SIMD quantizers, which round differently (ggml's AVX
 * Q8_0 multiplies by 127/amax and rounds half to even; its reference divides,
 * takes 1/d and rounds half away from zero). So every float operation below
 * is the reference's, lane by lane:
 *
 *  Q8_0/Q8_1  d = amax / 127, id = d ? 1 / d : 0, q = roundf(x * id).
 *             roundf (half away from zero) is trunc(v + copysign(0.5 - 2^-25, v)):
 *             the addend just below one half makes a value just below .5 stay
 *             below, while an exact .5 still reaches the next integer (the
 *             sum rounds up to it). When d is a tiny subnormal, 1 / d is +Inf
 *             and the reference's x86 conversion turns every code into 0.
 *  Q8_K       the signed value of largest magnitude (first on ties) maps to
 *             -127; q = nearest_int(iscale * x), which is the reference's own
 *             bit trick (add 1.5 * 2^23, keep the mantissa), clamped to 127
 *             at the top only and stored as its low byte. d = 1 / iscale.
 */
#include <float.h>

#include "avx2_common.h"
#include "avx2_kernels.h"

#define Q8_0_BYTES 34
#define Q8_1_BYTES 36

/* Largest |x| over 32 floats, and the 32 codes roundf(x * id) as int32 in
 * four vectors (element order). Returns amax. */
AVX2_INLINE float q8_amax32(const float *x, __m256 v[4]) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 mx = _mm256_setzero_ps();
    for (int k = 0; k < 4; ++k) {
        v[k] = _mm256_loadu_ps(x + 8 * k);
        mx = _mm256_max_ps(mx, _mm256_and_ps(v[k], abs_mask));
    }
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    return _mm_cvtss_f32(m4);
}

/* roundf(v) for each lane, as int32 (lanes whose v is +-Inf or NaN come out
 * INT32_MIN, as cvttss2si; callers only pass finite values). */
AVX2_INLINE __m256i q8_roundf(__m256 v) {
    const __m256 sign = _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u)));
    const __m256 half = _mm256_or_ps(sign, _mm256_set1_ps(0.49999997f));
    return _mm256_cvttps_epi32(_mm256_add_ps(v, half));
}

/* Codes of one block into 32 bytes; returns their sum. */
AVX2_INLINE int q8_codes32(const __m256 v[4], float id, uint8_t *qs) {
    if (!(id <= FLT_MAX)) {
        /* 1/d overflowed: x * id is +-Inf or NaN, which the reference's
         * conversion stores as 0. */
        memset(qs, 0, 32);
        return 0;
    }
    const __m256 mul = _mm256_set1_ps(id);
    __m256i q[4];
    for (int k = 0; k < 4; ++k) {
        q[k] = q8_roundf(_mm256_mul_ps(v[k], mul));
    }
    /* |q| <= 127: the saturating packs are plain narrowings here. Packing
     * works per 128-bit lane; the permute restores element order. */
    const __m256i p16a = _mm256_packs_epi32(q[0], q[1]);
    const __m256i p16b = _mm256_packs_epi32(q[2], q[3]);
    const __m256i p8 =
        _mm256_permutevar8x32_epi32(_mm256_packs_epi16(p16a, p16b), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)qs, p8);
    const __m256i s = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
    return avx2_hsum_i32(s);
}

AVX2_INLINE void put_half(uint8_t *p, float v) {
    const uint16_t h = (uint16_t)_cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT);
    memcpy(p, &h, sizeof h);
}

static void quantize_q8_0(const float *x, void *dst, size_t n) {
    uint8_t *out = dst;
    for (size_t i = 0; i < n / 32; ++i, x += 32, out += Q8_0_BYTES) {
        __m256 v[4];
        const float amax = q8_amax32(x, v);
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        put_half(out, d);
        (void)q8_codes32(v, id, out + 2);
    }
}

static void quantize_q8_1(const float *x, void *dst, size_t n) {
    uint8_t *out = dst;
    for (size_t i = 0; i < n / 32; ++i, x += 32, out += Q8_1_BYTES) {
        __m256 v[4];
        const float amax = q8_amax32(x, v);
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        const int sum = q8_codes32(v, id, out + 4);
        put_half(out, d);
        put_half(out + 2, (float)sum * d);
    }
}

/* ---- Q8_K ---------------------------------------------------------------- */

#define Q8_K_QS 4
#define Q8_K_BSUMS (4 + 256)

static void quantize_q8_K(const float *x, void *dst, size_t n) {
    uint8_t *out = dst;
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    for (size_t i = 0; i < n / 256; ++i, x += 256, out += sizeof(anvil_block_q8_K)) {
        __m256 mx = _mm256_setzero_ps();
        for (int k = 0; k < 32; ++k) {
            mx = _mm256_max_ps(mx, _mm256_and_ps(_mm256_loadu_ps(x + 8 * k), abs_mask));
        }
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4);
        if (amax == 0.0f) {
            memset(out, 0, sizeof(anvil_block_q8_K)); /* d = +0, codes 0, bsums 0 */
            continue;
        }
        /* The first element whose magnitude is amax gives the sign. */
        const __m256 vmax = _mm256_set1_ps(amax);
        float max = amax;
        for (int k = 0; k < 32; ++k) {
            const int hit = _mm256_movemask_ps(
                _mm256_cmp_ps(_mm256_and_ps(_mm256_loadu_ps(x + 8 * k), abs_mask), vmax, _CMP_EQ_OQ));
            if (hit != 0) {
                max = x[8 * k + __builtin_ctz((unsigned)hit)];
                break;
            }
        }
        const float iscale = -127.0f / max;
        const __m256 vs = _mm256_set1_ps(iscale);
        const __m256 magic = _mm256_set1_ps(12582912.f);
        const __m256i mant = _mm256_set1_epi32(0x007fffff);
        const __m256i bias = _mm256_set1_epi32(0x00400000);
        const __m256i top = _mm256_set1_epi32(127);
        const __m256i low_byte = _mm256_set1_epi32(0xff);
        const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        int16_t bsums[16];
        for (int k = 0; k < 8; ++k) {
            __m256i q[4];
            for (int j = 0; j < 4; ++j) {
                const __m256 t = _mm256_add_ps(_mm256_mul_ps(vs, _mm256_loadu_ps(x + 32 * k + 8 * j)), magic);
                __m256i v = _mm256_sub_epi32(_mm256_and_si256(_mm256_castps_si256(t), mant), bias);
                v = _mm256_min_epi32(v, top);
                q[j] = _mm256_and_si256(v, low_byte); /* the stored byte, 0..255 */
            }
            /* Unsigned packs of 0..255 are exact narrowings. */
            const __m256i p8 = _mm256_permutevar8x32_epi32(
                _mm256_packus_epi16(_mm256_packus_epi32(q[0], q[1]), _mm256_packus_epi32(q[2], q[3])), order);
            _mm256_storeu_si256((__m256i *)(out + Q8_K_QS + 32 * k), p8);
            /* bsums from the stored (signed) bytes, 16 per sum. */
            const __m256i s4 = avx2_dot_u8s8(_mm256_set1_epi8(1), p8);
            const __m128i s = _mm_hadd_epi32(_mm256_castsi256_si128(s4), _mm256_extracti128_si256(s4, 1));
            const __m128i s2 = _mm_hadd_epi32(s, s);
            bsums[2 * k] = (int16_t)_mm_cvtsi128_si32(s2);
            bsums[2 * k + 1] = (int16_t)_mm_extract_epi32(s2, 1);
        }
        memcpy(out + Q8_K_BSUMS, bsums, sizeof bsums);
        const float d = 1.0f / iscale;
        memcpy(out, &d, sizeof d);
    }
}

static const anvil_act_quantizer quantizer_q8_0 = { .struct_size = sizeof(anvil_act_quantizer),
                                                    .act_type = ANVIL_TYPE_Q8_0,
                                                    .variant = "avx2",
                                                    .quantize = quantize_q8_0 };
static const anvil_act_quantizer quantizer_q8_1 = { .struct_size = sizeof(anvil_act_quantizer),
                                                    .act_type = ANVIL_TYPE_Q8_1,
                                                    .variant = "avx2",
                                                    .quantize = quantize_q8_1 };
static const anvil_act_quantizer quantizer_q8_K = { .struct_size = sizeof(anvil_act_quantizer),
                                                    .act_type = ANVIL_TYPE_Q8_K,
                                                    .variant = "avx2",
                                                    .quantize = quantize_q8_K };

const anvil_act_quantizer *const anvil_avx2_quantizers[] = { &quantizer_q8_0, &quantizer_q8_1, &quantizer_q8_K,
                                                             NULL };
