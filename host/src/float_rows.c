/*
 * The export engine's per-chunk float work (float_rows.h).
 *
 * f16/bf16/f32 source rows to f32, with the non-finite check fused in.
 *
 * The export engine converts every chunk of a float model before encoding
 * it. A table lookup per f16 (what anvil_decode does, as ggml without F16C)
 * is a gather per element; F16C (x86) and fcvtl (aarch64) convert 8 or 4
 * per instruction, exactly (every f16, subnormals included, is an f32; a
 * NaN stays a NaN, and a NaN is refused before anything is encoded). The
 * NaN/Inf test runs on the 16-bit source lanes in the same loop: an all-ones
 * exponent. Blocks of 1024 are scanned without an early exit; only a
 * flagged block is searched element by element.
 *
 * The quality report's error sums: in double, eight independent lanes (one
 * dependency chain costs ~4 cycles per element, more than a q8_0 encode),
 * with AVX where present; the scalar path keeps the same lanes, so both
 * give the same bits.
 */
#include "float_rows.h"

#include <math.h>
#include <string.h>

#include "anvil/anvil.h"
#include "anvil/numeric.h"
#include "cpu_probe.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define FLOAT_LOAD_X86 1
#elif defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#define FLOAT_LOAD_NEON 1
#endif
#ifndef FLOAT_LOAD_X86
#define FLOAT_LOAD_X86 0
#endif
#ifndef FLOAT_LOAD_NEON
#define FLOAT_LOAD_NEON 0
#endif

#define BLOCK 1024

size_t anvil_float_find_nonfinite(const float *x, size_t n) {
    for (size_t b = 0; b < n; b += BLOCK) {
        const size_t e = b + BLOCK < n ? b + BLOCK : n;
        uint32_t bad = 0;
        for (size_t i = b; i < e; ++i) {
            uint32_t bits;
            memcpy(&bits, &x[i], sizeof bits);
            bad |= (uint32_t)((bits & UINT32_C(0x7f800000)) == UINT32_C(0x7f800000));
        }
        if (bad) return b + anvil_find_nonfinite(x + b, e - b);
    }
    return n;
}

#if FLOAT_LOAD_X86 || FLOAT_LOAD_NEON
size_t anvil_float_find_nonfinite_raw(uint32_t type, const void *src, size_t n) {
    const uint8_t *s = src;
    const size_t es = type == ANVIL_TYPE_F32 ? 4 : 2;
    const uint32_t m = type == ANVIL_TYPE_F32 ? UINT32_C(0x7f800000) : type == ANVIL_TYPE_F16 ? 0x7c00 : 0x7f80;
    for (size_t b = 0; b < n; b += BLOCK) {
        const size_t e = b + BLOCK < n ? b + BLOCK : n;
        uint32_t bad = 0;
        if (es == 4) {
            for (size_t i = b; i < e; ++i) {
                uint32_t v;
                memcpy(&v, s + 4 * i, 4);
                bad |= (uint32_t)((v & m) == m);
            }
        } else {
            for (size_t i = b; i < e; ++i) {
                uint16_t v;
                memcpy(&v, s + 2 * i, 2);
                bad |= (uint32_t)((v & m) == m);
            }
        }
        if (!bad) continue;
        for (size_t i = b; i < e; ++i) {
            uint32_t v;
            if (es == 4) {
                memcpy(&v, s + 4 * i, 4);
            } else {
                uint16_t h;
                memcpy(&h, s + 2 * i, 2);
                v = h;
            }
            if ((v & m) == m) return i;
        }
    }
    return n;
}

/* The exponent mask of a 16-bit float type: all ones means NaN/Inf. */
static uint16_t exp_mask(uint32_t type) { return type == ANVIL_TYPE_F16 ? 0x7c00 : 0x7f80; }

static float half_to_f32(uint32_t type, uint16_t h) {
    return type == ANVIL_TYPE_F16 ? anvil_fp16_to_fp32(h) : anvil_bf16_to_fp32(h);
}

/* Elements [i, e) one at a time (block tails); returns 1 if one is bad. */
static int tail16(uint32_t type, const uint8_t *s, float *d, size_t i, size_t e) {
    const uint16_t m = exp_mask(type);
    int bad = 0;
    for (; i < e; ++i) {
        uint16_t h;
        memcpy(&h, s + 2 * i, 2);
        d[i] = half_to_f32(type, h);
        bad |= (h & m) == m;
    }
    return bad;
}
#endif

#if FLOAT_LOAD_X86
/* One block [b, e): 16 halves per step. Returns nonzero if any is NaN/Inf. */
__attribute__((target("avx2,f16c"))) static int block16_avx2(uint32_t type, const uint8_t *s, float *d, size_t b,
                                                             size_t e) {
    const __m256i m = _mm256_set1_epi16((short)exp_mask(type));
    __m256i bad = _mm256_setzero_si256();
    size_t i = b;
    if (type == ANVIL_TYPE_F16) {
        for (; i + 16 <= e; i += 16) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(s + 2 * i));
            bad = _mm256_or_si256(bad, _mm256_cmpeq_epi16(_mm256_and_si256(v, m), m));
            _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm256_castsi256_si128(v)));
            _mm256_storeu_ps(d + i + 8, _mm256_cvtph_ps(_mm256_extracti128_si256(v, 1)));
        }
    } else {
        for (; i + 16 <= e; i += 16) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(s + 2 * i));
            bad = _mm256_or_si256(bad, _mm256_cmpeq_epi16(_mm256_and_si256(v, m), m));
            const __m256i lo = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(v)), 16);
            const __m256i hi = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(v, 1)), 16);
            _mm256_storeu_ps(d + i, _mm256_castsi256_ps(lo));
            _mm256_storeu_ps(d + i + 8, _mm256_castsi256_ps(hi));
        }
    }
    return (!_mm256_testz_si256(bad, bad)) | tail16(type, s, d, i, e);
}
#endif

#if FLOAT_LOAD_NEON
static int block16_neon(uint32_t type, const uint8_t *s, float *d, size_t b, size_t e) {
    const uint16x8_t m = vdupq_n_u16(exp_mask(type));
    uint16x8_t bad = vdupq_n_u16(0);
    size_t i = b;
    for (; i + 8 <= e; i += 8) {
        const uint16x8_t v = vld1q_u16((const uint16_t *)(const void *)(s + 2 * i));
        bad = vorrq_u16(bad, vceqq_u16(vandq_u16(v, m), m));
        if (type == ANVIL_TYPE_F16) {
            vst1q_f32(d + i, vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(v))));
            vst1q_f32(d + i + 4, vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(v))));
        } else {
            vst1q_f32(d + i, vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(v), 16)));
            vst1q_f32(d + i + 4, vreinterpretq_f32_u32(vshll_n_u16(vget_high_u16(v), 16)));
        }
    }
    return (vmaxvq_u16(bad) != 0) | tail16(type, s, d, i, e);
}
#endif

typedef int (*block_fn)(uint32_t type, const uint8_t *s, float *d, size_t b, size_t e);

static block_fn pick_block(void) {
#if FLOAT_LOAD_X86
    const uint64_t need = ANVIL_CPU_AVX2 | ANVIL_CPU_F16C;
    if ((anvil__cpu_probe()->features & need) == need) return block16_avx2;
#elif FLOAT_LOAD_NEON
    return block16_neon;
#endif
    return NULL;
}

size_t anvil_float_load(uint32_t type, const void *src, float *dst, size_t n) {
    if (type == ANVIL_TYPE_F32) {
        memcpy(dst, src, n * sizeof *dst);
        return anvil_float_find_nonfinite(dst, n);
    }
    const block_fn fast = pick_block();
    if (fast == NULL) { /* no SIMD here: the table lookup, then a scan */
        anvil_decode(NULL, type, src, n * 2, dst, n, NULL);
        return anvil_float_find_nonfinite(dst, n);
    }
    const uint8_t *s = src;
    size_t first = n;
    for (size_t b = 0; b < n; b += BLOCK) {
        const size_t e = b + BLOCK < n ? b + BLOCK : n;
        const int bad = fast(type, s, dst, b, e);
        if (bad && first == n) first = b + anvil_find_nonfinite(dst + b, e - b);
    }
    return first;
}

#define LANES 8

#if FLOAT_LOAD_X86
__attribute__((target("avx"))) static size_t sums_avx(const float *x, const float *y, size_t n, double *se,
                                                       double *sg, double *mx) {
    const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(INT64_MAX));
    __m256d e0 = _mm256_setzero_pd(), e1 = e0, s0 = e0, s1 = e0, m0 = e0, m1 = e0;
    size_t i = 0;
    for (; i + LANES <= n; i += LANES) {
        const __m256d a0 = _mm256_cvtps_pd(_mm_loadu_ps(x + i)), a1 = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4));
        const __m256d d0 = _mm256_sub_pd(a0, _mm256_cvtps_pd(_mm_loadu_ps(y + i)));
        const __m256d d1 = _mm256_sub_pd(a1, _mm256_cvtps_pd(_mm_loadu_ps(y + i + 4)));
        e0 = _mm256_add_pd(e0, _mm256_mul_pd(d0, d0));
        e1 = _mm256_add_pd(e1, _mm256_mul_pd(d1, d1));
        s0 = _mm256_add_pd(s0, _mm256_mul_pd(a0, a0));
        s1 = _mm256_add_pd(s1, _mm256_mul_pd(a1, a1));
        /* max_pd(|d|, m) is |d| > m ? |d| : m for the finite values seen here */
        m0 = _mm256_max_pd(_mm256_and_pd(d0, abs_mask), m0);
        m1 = _mm256_max_pd(_mm256_and_pd(d1, abs_mask), m1);
    }
    _mm256_storeu_pd(se, e0);
    _mm256_storeu_pd(se + 4, e1);
    _mm256_storeu_pd(sg, s0);
    _mm256_storeu_pd(sg + 4, s1);
    _mm256_storeu_pd(mx, m0);
    _mm256_storeu_pd(mx + 4, m1);
    return i;
}
#endif

static size_t sums_scalar(const float *x, const float *y, size_t n, double *se, double *sg, double *mx) {
    size_t i = 0;
    for (; i + LANES <= n; i += LANES) {
        for (size_t k = 0; k < LANES; ++k) {
            const double a = x[i + k], d = a - (double)y[i + k], ad = fabs(d);
            se[k] += d * d;
            sg[k] += a * a;
            mx[k] = ad > mx[k] ? ad : mx[k];
        }
    }
    return i;
}

void anvil_float_error_sums(const float *x, const float *y, size_t n, double *sse, double *signal,
                            double *max_abs) {
    double se[LANES] = { 0 }, sg[LANES] = { 0 }, mx[LANES] = { 0 };
    size_t i;
#if FLOAT_LOAD_X86
    if (anvil__cpu_probe()->features & ANVIL_CPU_AVX) {
        i = sums_avx(x, y, n, se, sg, mx);
    } else
#endif
    {
        i = sums_scalar(x, y, n, se, sg, mx);
    }
    double e = 0, s = 0, m = 0;
    for (size_t k = 0; k < LANES; ++k) {
        e += se[k];
        s += sg[k];
        m = mx[k] > m ? mx[k] : m;
    }
    for (; i < n; ++i) {
        const double a = x[i], d = a - (double)y[i], ad = fabs(d);
        e += d * d;
        s += a * a;
        m = ad > m ? ad : m;
    }
    *sse = e;
    *signal = s;
    *max_abs = m;
}
