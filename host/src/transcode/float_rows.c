/* SPDX-License-Identifier: MIT */
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
 * The quality report's error sums: float lanes flushed to double per block
 * (see the section below), the same bits on every path.
 */
#include "float_rows.h"

#include <float.h>
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

size_t anvil__float_find_nonfinite(const float *x, size_t n) {
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

size_t anvil__float_load(uint32_t type, const void *src, float *dst, size_t n) {
    if (type == ANVIL_TYPE_F32) {
        memcpy(dst, src, n * sizeof *dst);
        return anvil__float_find_nonfinite(dst, n);
    }
    const block_fn fast = pick_block();
    if (fast == NULL) { /* no SIMD here: the table lookup, then a scan */
        anvil_decode(NULL, type, src, n * 2, dst, n, NULL);
        return anvil__float_find_nonfinite(dst, n);
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

/* ---- The quality report's error sums ------------------------------------
 *
 * Per block of BLOCK elements, 16 float lanes: lane k takes elements
 * k, k + 16, ... of the block in order (64 of them), e += d d, s += x x,
 * m = max(|d|, m), d = x - y in float. Each block's lanes are then added
 * to 16 double accumulators, and the lanes summed in lane order at the end.
 * Every path (AVX, NEON, scalar) does these float operations in this
 * order, so the figures are the same bits on every CPU.
 *
 * Why float: in double (what this was) the sums cost a q8_0 encode's time
 * again (cvtps_pd and 4 doubles per 256-bit op). A lane partial adds 64
 * non-negative terms, each rounded once or twice: its relative error is
 * below 66 * 2^-24 (4e-6), and so is the total's; the report prints 4
 * digits. Where float would lie, a block is summed again in double, per
 * element in order: a lane that overflowed or is NaN, a block whose
 * signal (or nonzero error) is below 2^-80, where terms may underflow
 * (an all-zero block too: it costs a rescan, nothing more). The tail
 * (n not a multiple of BLOCK) is summed in double. max_abs is the largest
 * |x - y| rounded to float, NaN differences ignored (the block's m lanes,
 * every path: "|d| > m ? |d| : m"). */

#define SUM_LANES 16

typedef struct sum_block {
    float e[SUM_LANES], s[SUM_LANES], m[SUM_LANES];
} sum_block;

#if FLOAT_LOAD_X86
__attribute__((target("avx"))) static void block_sums_avx(const float *x, const float *y, sum_block *b) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(INT32_MAX));
    __m256 e0 = _mm256_setzero_ps(), e1 = e0, s0 = e0, s1 = e0, m0 = e0, m1 = e0;
    for (size_t i = 0; i < BLOCK; i += SUM_LANES) {
        const __m256 a0 = _mm256_loadu_ps(x + i), a1 = _mm256_loadu_ps(x + i + 8);
        const __m256 d0 = _mm256_sub_ps(a0, _mm256_loadu_ps(y + i));
        const __m256 d1 = _mm256_sub_ps(a1, _mm256_loadu_ps(y + i + 8));
        e0 = _mm256_add_ps(e0, _mm256_mul_ps(d0, d0));
        e1 = _mm256_add_ps(e1, _mm256_mul_ps(d1, d1));
        s0 = _mm256_add_ps(s0, _mm256_mul_ps(a0, a0));
        s1 = _mm256_add_ps(s1, _mm256_mul_ps(a1, a1));
        /* max_ps(a, b) is a > b ? a : b, b when either is NaN */
        m0 = _mm256_max_ps(_mm256_and_ps(d0, abs_mask), m0);
        m1 = _mm256_max_ps(_mm256_and_ps(d1, abs_mask), m1);
    }
    _mm256_storeu_ps(b->e, e0);
    _mm256_storeu_ps(b->e + 8, e1);
    _mm256_storeu_ps(b->s, s0);
    _mm256_storeu_ps(b->s + 8, s1);
    _mm256_storeu_ps(b->m, m0);
    _mm256_storeu_ps(b->m + 8, m1);
}
#endif

#if FLOAT_LOAD_NEON
static void block_sums_neon(const float *x, const float *y, sum_block *b) {
    float32x4_t e[4], s[4], m[4];
    for (int k = 0; k < 4; ++k) e[k] = s[k] = m[k] = vdupq_n_f32(0.0f);
    for (size_t i = 0; i < BLOCK; i += SUM_LANES) {
        for (int k = 0; k < 4; ++k) {
            const float32x4_t a = vld1q_f32(x + i + 4 * k);
            const float32x4_t d = vsubq_f32(a, vld1q_f32(y + i + 4 * k));
            e[k] = vaddq_f32(e[k], vmulq_f32(d, d));
            s[k] = vaddq_f32(s[k], vmulq_f32(a, a));
            const float32x4_t ad = vabsq_f32(d);
            m[k] = vbslq_f32(vcgtq_f32(ad, m[k]), ad, m[k]);
        }
    }
    for (int k = 0; k < 4; ++k) {
        vst1q_f32(b->e + 4 * k, e[k]);
        vst1q_f32(b->s + 4 * k, s[k]);
        vst1q_f32(b->m + 4 * k, m[k]);
    }
}
#endif

static void block_sums_scalar(const float *x, const float *y, sum_block *b) {
    memset(b, 0, sizeof *b);
    for (size_t i = 0; i < BLOCK; i += SUM_LANES) {
        for (size_t k = 0; k < SUM_LANES; ++k) {
            const float a = x[i + k], d = a - y[i + k], ad = fabsf(d);
            b->e[k] += d * d;
            b->s[k] += a * a;
            b->m[k] = ad > b->m[k] ? ad : b->m[k];
        }
    }
}

typedef void (*block_sums_fn)(const float *x, const float *y, sum_block *b);

static block_sums_fn pick_block_sums(int simd) {
#if FLOAT_LOAD_X86
    if (simd && (anvil__cpu_probe()->features & ANVIL_CPU_AVX)) return block_sums_avx;
#elif FLOAT_LOAD_NEON
    if (simd) return block_sums_neon;
#endif
    (void)simd;
    return block_sums_scalar;
}

/* Whether a block's float lanes can be trusted (see above). */
static int block_trusted(const sum_block *b) {
    int finite = 1, e_big = 0, s_big = 0, m_nonzero = 0;
    for (size_t k = 0; k < SUM_LANES; ++k) { /* bitwise, no branches: it vectorizes */
        finite &= (b->e[k] <= FLT_MAX) & (b->s[k] <= FLT_MAX);
        e_big |= b->e[k] >= 0x1p-80f;
        s_big |= b->s[k] >= 0x1p-80f;
        m_nonzero |= b->m[k] > 0.0f;
    }
    return finite && s_big && (e_big || !m_nonzero);
}

/* e and s of x[0..n) in double, element by element in order. */
static void sums_double(const float *x, const float *y, size_t n, double *e, double *s) {
    for (size_t i = 0; i < n; ++i) {
        const double a = x[i], d = a - (double)y[i];
        *e += d * d;
        *s += a * a;
    }
}

void anvil__float_error_sums_path(const float *x, const float *y, size_t n, int simd, double *sse, double *signal,
                                  double *max_abs) {
    const block_sums_fn lanes = pick_block_sums(simd);
    double e[SUM_LANES] = { 0 }, s[SUM_LANES] = { 0 }, again_e = 0, again_s = 0;
    float ms[SUM_LANES] = { 0 };
    size_t i = 0;
    for (; i + BLOCK <= n; i += BLOCK) {
        sum_block b;
        lanes(x + i, y + i, &b);
        for (size_t k = 0; k < SUM_LANES; ++k) ms[k] = b.m[k] > ms[k] ? b.m[k] : ms[k];
        if (block_trusted(&b)) {
            for (size_t k = 0; k < SUM_LANES; ++k) {
                e[k] += b.e[k];
                s[k] += b.s[k];
            }
        } else {
            sums_double(x + i, y + i, BLOCK, &again_e, &again_s);
        }
    }
    double te = 0, ts = 0;
    float m = 0.0f;
    for (size_t k = 0; k < SUM_LANES; ++k) {
        te += e[k];
        ts += s[k];
        m = ms[k] > m ? ms[k] : m;
    }
    te += again_e;
    ts += again_s;
    sums_double(x + i, y + i, n - i, &te, &ts);
    for (; i < n; ++i) {
        const float ad = fabsf(x[i] - y[i]);
        m = ad > m ? ad : m;
    }
    *sse = te;
    *signal = ts;
    *max_abs = m;
}

void anvil_float_error_sums(const float *x, const float *y, size_t n, double *sse, double *signal, double *max_abs) {
    anvil__float_error_sums_path(x, y, n, 1, sse, signal, max_abs);
}
