/* SPDX-License-Identifier: MIT */
/* backend-avx512: the activation quantizers Q8_0, Q8_1 and Q8_K.
 *
 * They write the bytes of the reference quantizers (plugins/ref), lane by
 * lane with the reference's float operations (see backend-avx2's
 * avx2_quantize.c for the derivations):
 *
 *  Q8_0/Q8_1  d = amax / 127, id = d ? 1 / d : 0, q = roundf(x * id), as
 *             trunc(v + copysign(0.5 - 2^-25, v)). When 1 / d overflows,
 *             every code is 0, as the reference's conversion gives.
 *  Q8_K       the signed value of largest magnitude (first on ties) maps to
 *             -127; q = nearest_int(iscale * x) (add 1.5 * 2^23, keep the
 *             mantissa), clamped to 127 at the top, stored as its low byte;
 *             bsums from the stored bytes; d = 1 / iscale.
 *
 * One Q8_0 block is two vectors; one Q8_K bsum group (16 elements) is one.
 */
#include <float.h>

#include "avx512_common.h"
#include "avx512_kernels.h"

#define Q8_0_BYTES 34
#define Q8_1_BYTES 36
#define Q8_K_QS 4
#define Q8_K_BSUMS (4 + 256)

AVX512_INLINE __m512 abs_ps(__m512 v) {
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7fffffff)));
}

/* roundf(v) per lane as int32 (finite v only). */
AVX512_INLINE __m512i roundf_epi32(__m512 v) {
    const __m512i sign = _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32((int)0x80000000u));
    const __m512 half = _mm512_castsi512_ps(_mm512_or_si512(sign, _mm512_castps_si512(_mm512_set1_ps(0.49999997f))));
    return _mm512_cvttps_epi32(_mm512_add_ps(v, half));
}

/* Codes of one 32-element block (v[0], v[1]) into 32 bytes; returns their
 * sum. */
AVX512_INLINE int codes32(const __m512 v[2], float id, uint8_t *qs) {
    if (!(id <= FLT_MAX)) {
        memset(qs, 0, 32);
        return 0;
    }
    const __m512 mul = _mm512_set1_ps(id);
    const __m512i q0 = roundf_epi32(_mm512_mul_ps(v[0], mul));
    const __m512i q1 = roundf_epi32(_mm512_mul_ps(v[1], mul));
    /* |q| <= 127: the saturating narrowings are exact */
    _mm_storeu_si128((__m128i *)qs, _mm512_cvtsepi32_epi8(q0));
    _mm_storeu_si128((__m128i *)(qs + 16), _mm512_cvtsepi32_epi8(q1));
    return _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
}

AVX512_INLINE float amax32(const float *x, __m512 v[2]) {
    v[0] = _mm512_loadu_ps(x);
    v[1] = _mm512_loadu_ps(x + 16);
    return _mm512_reduce_max_ps(_mm512_max_ps(abs_ps(v[0]), abs_ps(v[1])));
}

static void quantize_q8_0(const float *x, void *dst, size_t n) {
    uint8_t *out = dst;
    for (size_t i = 0; i < n / 32; ++i, x += 32, out += Q8_0_BYTES) {
        __m512 v[2];
        const float d = amax32(x, v) / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        avx512_put_half(out, d);
        (void)codes32(v, id, out + 2);
    }
}

static void quantize_q8_1(const float *x, void *dst, size_t n) {
    uint8_t *out = dst;
    for (size_t i = 0; i < n / 32; ++i, x += 32, out += Q8_1_BYTES) {
        __m512 v[2];
        const float d = amax32(x, v) / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        const int sum = codes32(v, id, out + 4);
        avx512_put_half(out, d);
        avx512_put_half(out + 2, (float)sum * d);
    }
}

static void quantize_q8_K(const float *x, void *dst, size_t n) {
    uint8_t *out = dst;
    for (size_t i = 0; i < n / 256; ++i, x += 256, out += sizeof(anvil_block_q8_K)) {
        __m512 mx = _mm512_setzero_ps();
        for (int k = 0; k < 16; ++k) mx = _mm512_max_ps(mx, abs_ps(_mm512_loadu_ps(x + 16 * k)));
        const float amax = _mm512_reduce_max_ps(mx);
        if (amax == 0.0f) {
            memset(out, 0, sizeof(anvil_block_q8_K)); /* d = +0, codes 0, bsums 0 */
            continue;
        }
        /* The first element whose magnitude is amax gives the sign. */
        const __m512 vmax = _mm512_set1_ps(amax);
        float max = amax;
        for (int k = 0; k < 16; ++k) {
            const __mmask16 hit = _mm512_cmp_ps_mask(abs_ps(_mm512_loadu_ps(x + 16 * k)), vmax, _CMP_EQ_OQ);
            if (hit != 0) {
                max = x[16 * k + __builtin_ctz((unsigned)hit)];
                break;
            }
        }
        const float iscale = -127.0f / max;
        const __m512 vs = _mm512_set1_ps(iscale);
        const __m512 magic = _mm512_set1_ps(12582912.f);
        const __m512i mant = _mm512_set1_epi32(0x007fffff);
        const __m512i bias = _mm512_set1_epi32(0x00400000);
        const __m512i top = _mm512_set1_epi32(127);
        int16_t bsums[16];
        for (int k = 0; k < 16; ++k) {
            const __m512 t = _mm512_add_ps(_mm512_mul_ps(vs, _mm512_loadu_ps(x + 16 * k)), magic);
            const __m512i v =
                _mm512_min_epi32(_mm512_sub_epi32(_mm512_and_si512(_mm512_castps_si512(t), mant), bias), top);
            _mm_storeu_si128((__m128i *)(out + Q8_K_QS + 16 * k), _mm512_cvtepi32_epi8(v)); /* low bytes */
            /* the stored bytes, sign-extended, summed */
            bsums[k] = (int16_t)_mm512_reduce_add_epi32(_mm512_srai_epi32(_mm512_slli_epi32(v, 24), 24));
        }
        memcpy(out + Q8_K_BSUMS, bsums, sizeof bsums);
        const float d = 1.0f / iscale;
        memcpy(out, &d, sizeof d);
    }
}

static const anvil_act_quantizer quantizer_q8_0 = { .struct_size = sizeof(anvil_act_quantizer),
                                                    .act_type = ANVIL_TYPE_Q8_0,
                                                    .variant = AVX512_VARIANT,
                                                    .quantize = quantize_q8_0 };
static const anvil_act_quantizer quantizer_q8_1 = { .struct_size = sizeof(anvil_act_quantizer),
                                                    .act_type = ANVIL_TYPE_Q8_1,
                                                    .variant = AVX512_VARIANT,
                                                    .quantize = quantize_q8_1 };
static const anvil_act_quantizer quantizer_q8_K = { .struct_size = sizeof(anvil_act_quantizer),
                                                    .act_type = ANVIL_TYPE_Q8_K,
                                                    .variant = AVX512_VARIANT,
                                                    .quantize = quantize_q8_K };

const anvil_act_quantizer *const AVX512_SYM(anvil_avx512_quantizers)[] = { &quantizer_q8_0, &quantizer_q8_1,
                                                                           &quantizer_q8_K, NULL };
