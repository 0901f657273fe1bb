/* SPDX-License-Identifier: MIT */
/*
 * The IQ1 searches (see cold_enc_iq1_search.h): ggml's cut-point search,
 * candidate search and stable order, on the portable path and on an AVX2
 * path chosen at run time.
 *
 * Exactness. Every fit or candidate score is one of ggml's scalar
 * expressions, evaluated in one lane with its operations in ggml's order
 * (-ffp-contract=off: nothing fuses; the AVX2 functions enable no FMA);
 * a single sum is never split over lanes. The choices are ggml's scans:
 *  - fits: ggml replaces the best when sumq2 > 0 and sumqx^2 > best sumq2.
 *    A block of fits is tested against the current best all at once; when
 *    none passes, the in-order scan would change nothing and is skipped,
 *    otherwise the block's fits are scanned in ggml's order
 *    (cold_fit_scan).
 *    Where the fits are in a safe range, the search first runs without
 *    divisions, passing over the blocks that cannot hold ggml's choice
 *    (iq1_search_fast: the bounds that make this exact are there);
 *  - candidates: each lane keeps its first strictly smallest score, then
 *    the lanes' bests are compared with ties to the earlier candidate:
 *    ggml's first strict minimum.
 */
#include "ref/cold_enc_iq1_search.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "anvil/status.h"
#include "ref/cold_enc_search.h"
#include "ref/cpu_probe.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define COLD_IQ1_AVX2 1
#include <immintrin.h>
#else
#define COLD_IQ1_AVX2 0
#endif
#if defined(__aarch64__)
#include "ref/enc_neon.h" /* aarch64: the candidate search in NEON, always on */
#endif

/* ---- IQ1_S: 32 elements, three-term sums ------------------------------- */

#define S_GROUP 32
#define S_PAD (S_GROUP + 1 + 7) /* prefix sums 0..32, then room for a last 8-lane load */

/* ggml's prefix sums over the sorted order. */
static void iq1s_prefix(const float *xb, const float *weight, const int *idx, float *sumx, float *sumw) {
    /* running sums in registers: the same additions in the same order */
    float ax = 0.0f, aw = 0.0f;
    sumx[0] = sumw[0] = 0.0f;
    for (int j = 0; j < S_GROUP; ++j) {
        const int i = idx[j];
        ax = ax + weight[i] * xb[i];
        aw = aw + weight[i];
        sumx[j + 1] = ax;
        sumw[j + 1] = aw;
    }
    for (int j = S_GROUP + 1; j < S_PAD; ++j) {
        sumx[j] = sumw[j] = 0.0f;
    }
}

/* Portable: four i2 per vector. */
static void iq1s_split_portable(const float *sumx, const float *sumw, const float *x_p, const float *x_m,
                                cold_iq1_split *best) {
    const float *const v[2] = { x_p, x_m };
    float best_score = -FLT_MAX;
    for (int i1 = 0; i1 <= S_GROUP; ++i1) {
        for (int i2 = i1; i2 <= S_GROUP; i2 += 4) {
            cold_f32x4 x2, w2;
            memcpy(&x2, &sumx[i2], sizeof x2);
            memcpy(&w2, &sumw[i2], sizeof w2);
            cold_f32x4 sumqx[2], sumq2[2];
            for (int m = 0; m < 2; ++m) {
                sumqx[m] =
                    (sumx[i1] - sumx[0]) * v[m][0] + (x2 - sumx[i1]) * v[m][1] + (sumx[S_GROUP] - x2) * v[m][2];
                sumq2[m] = (sumw[i1] - sumw[0]) * v[m][0] * v[m][0] + (w2 - sumw[i1]) * v[m][1] * v[m][1] +
                           (sumw[S_GROUP] - w2) * v[m][2] * v[m][2];
            }
            /* ggml's order: i2, then the sign */
            const int got = cold_fit_lanes(sumqx, sumq2, 2, S_GROUP + 1 - i2, &best_score, &best->scale);
            if (got >= 0) {
                best->i1 = i1;
                best->i2 = i2 + got / 2;
                best->variant = got % 2;
            }
        }
    }
}

/* ---- IQ1_M: 16 elements, per-half prefix sums ---------------------------- */

#define M_GROUP 16
#define M_PAD (M_GROUP + 1 + 7)

typedef struct iq1m_sums {
    float px[2][M_PAD], pw[2][M_PAD];
    float txs[2], tws[2];
    float p2, m2, cp1, cp2, cm1, cm2;
} iq1m_sums;

/* a where m is all ones, b where m is 0: by bits, so that the compiler
 * does not branch on an unpredictable m. */
static inline float pick_f32(uint32_t m, float a, float b) {
    uint32_t ua, ub;
    memcpy(&ua, &a, sizeof ua);
    memcpy(&ub, &b, sizeof ub);
    const uint32_t r = (ua & m) | (ub & ~m);
    float f;
    memcpy(&f, &r, sizeof f);
    return f;
}

static void iq1m_prefix(const float *xb, const float *weight, const int *idx, const float *x_p, const float *x_m,
                        iq1m_sums *s) {
    /* running sums per half in registers: the same additions in the same
     * order. The other half's sum adds +0 instead, which leaves it as it
     * is: a sum that starts at +0 is never -0 (x + -x and +0 + -0 round
     * to +0), and x + +0 = x for every other x, NaN and infinities
     * included. */
    float ax0 = 0.0f, ax1 = 0.0f, aw0 = 0.0f, aw1 = 0.0f;
    s->px[0][0] = s->px[1][0] = s->pw[0][0] = s->pw[1][0] = 0.0f;
    for (int j = 0; j < M_GROUP; ++j) {
        const int i = idx[j];
        const float dx = weight[i] * xb[i], dw = weight[i];
        const uint32_t first = 0u - (uint32_t)(i < M_GROUP / 2);
        ax0 = ax0 + pick_f32(first, dx, 0.0f);
        aw0 = aw0 + pick_f32(first, dw, 0.0f);
        ax1 = ax1 + pick_f32(first, 0.0f, dx);
        aw1 = aw1 + pick_f32(first, 0.0f, dw);
        s->px[0][j + 1] = ax0;
        s->px[1][j + 1] = ax1;
        s->pw[0][j + 1] = aw0;
        s->pw[1][j + 1] = aw1;
    }
    for (int h = 0; h < 2; ++h) {
        for (int j = M_GROUP + 1; j < M_PAD; ++j) {
            s->px[h][j] = s->pw[h][j] = 0.0f;
        }
    }
    s->txs[0] = ax0;
    s->txs[1] = ax1;
    s->tws[0] = aw0;
    s->tws[1] = aw1;
    s->p2 = x_p[2];
    s->m2 = x_m[2];
    s->cp1 = x_p[0] * x_p[0] - x_p[1] * x_p[1];
    s->cp2 = x_p[1] * x_p[1] - x_p[2] * x_p[2];
    s->cm1 = x_m[0] * x_m[0] - x_m[1] * x_m[1];
    s->cm2 = x_m[1] * x_m[1] - x_m[2] * x_m[2];
}

static void iq1m_split_portable(const iq1m_sums *s, cold_iq1_split *best) {
    float best_score = -FLT_MAX;
    for (int i1 = 0; i1 <= M_GROUP; ++i1) {
        for (int i2 = i1; i2 <= M_GROUP; i2 += 4) {
            cold_f32x4 qx_p[2], qx_m[2], q2_p[2], q2_m[2];
            for (int h = 0; h < 2; ++h) {
                cold_f32x4 x2, w2;
                memcpy(&x2, &s->px[h][i2], sizeof x2);
                memcpy(&w2, &s->pw[h][i2], sizeof w2);
                const cold_f32x4 sx = s->px[h][i1] + x2;
                qx_p[h] = s->txs[h] * s->p2 - sx;
                qx_m[h] = s->txs[h] * s->m2 - sx;
                q2_p[h] = s->tws[h] * s->p2 * s->p2 + s->pw[h][i1] * s->cp1 + w2 * s->cp2;
                q2_m[h] = s->tws[h] * s->m2 * s->m2 + s->pw[h][i1] * s->cm1 + w2 * s->cm2;
            }
            /* variant k: first half minus when k >> 1, second when k & 1 */
            const cold_f32x4 sumqx[4] = { qx_p[0] + qx_p[1], qx_p[0] + qx_m[1], qx_m[0] + qx_p[1],
                                          qx_m[0] + qx_m[1] };
            const cold_f32x4 sumq2[4] = { q2_p[0] + q2_p[1], q2_p[0] + q2_m[1], q2_m[0] + q2_p[1],
                                          q2_m[0] + q2_m[1] };
            /* ggml's order: i2, then k */
            const int got = cold_fit_lanes(sumqx, sumq2, 4, M_GROUP + 1 - i2, &best_score, &best->scale);
            if (got >= 0) {
                best->i1 = i1;
                best->i2 = i2 + got / 4;
                best->variant = got % 4;
            }
        }
    }
}

enum { FMT_IQ1S, FMT_IQ1M };

/* ---- AVX2 --------------------------------------------------------------- */

#if COLD_IQ1_AVX2
#define AVX2 __attribute__((target("avx2")))

/* Mask of the fits of one block that pass ggml's test against best. */
AVX2 static inline __m256 fit_pass(__m256 sumqx, __m256 sumq2, __m256 best) {
    const __m256 pos = _mm256_cmp_ps(sumq2, _mm256_setzero_ps(), _CMP_GT_OQ);
    const __m256 gt = _mm256_cmp_ps(_mm256_mul_ps(sumqx, sumqx), _mm256_mul_ps(best, sumq2), _CMP_GT_OQ);
    return _mm256_and_ps(pos, gt);
}

/* Bits 0 .. n-1 of a lane mask (n may exceed 8). */
static inline unsigned lanes_live(int n) { return n >= 8 ? 0xFFu : (1u << n) - 1; }

/* ggml's test and update for one fit, scalar: 1 when it replaced the best. */
static inline int fit_one(float qx, float q2, float *best_score, float *scale) {
    if (q2 > 0 && qx * qx > *best_score * q2) {
        *scale = qx / q2;
        *best_score = *scale * qx;
        return 1;
    }
    return 0;
}

/* ggml's scan over the fits of nv vectors of 8 lanes, in the order lane,
 * then vector (fit j = nv l + v), over the lanes in `live` (a bit per
 * lane): the block is tested against the current best at once; only lanes
 * with a passing fit are visited: the first such lane's fits are tested in
 * order (scalar, the same expressions), then the later lanes are tested
 * again against the best they leave. Returns the last fit that replaced
 * the best, or -1. */
AVX2 static inline int fit_block(const __m256 *sumqx, const __m256 *sumq2, int nv, unsigned live, float *best_score,
                                 float *scale) {
    int got = -1;
    float qx[4][8], q2[4][8];
    int stored = 0;
    for (;;) {
        const __m256 vb = _mm256_set1_ps(*best_score);
        unsigned any = 0;
        for (int v = 0; v < nv; ++v) {
            any |= (unsigned)_mm256_movemask_ps(fit_pass(sumqx[v], sumq2[v], vb));
        }
        any &= live;
        if (any == 0) {
            return got;
        }
        if (!stored) {
            for (int v = 0; v < nv; ++v) {
                _mm256_storeu_ps(qx[v], sumqx[v]);
                _mm256_storeu_ps(q2[v], sumq2[v]);
            }
            stored = 1;
        }
        const int l = __builtin_ctz(any);
        for (int v = 0; v < nv; ++v) {
            if (fit_one(qx[v][l], q2[v][l], best_score, scale)) {
                got = nv * l + v;
            }
        }
        live &= ~((2u << l) - 1);
    }
}

/* The fits of one block: lanes i2 .. i2 + 7 of row i1, one vector per
 * sign variant. */
typedef struct iq1s_ctx {
    const float *sumx, *sumw, *x_p, *x_m;
} iq1s_ctx;

AVX2 static inline void iq1s_block(const iq1s_ctx *c, int i1, int i2, __m256 *qx, __m256 *q2) {
    const float *sumx = c->sumx, *sumw = c->sumw, *x_p = c->x_p, *x_m = c->x_m;
    /* the i1 terms, scalar as in ggml */
    const float a = sumx[i1] - sumx[0], aw = sumw[i1] - sumw[0];
    const __m256 ap = _mm256_set1_ps(a * x_p[0]), am = _mm256_set1_ps(a * x_m[0]);
    const __m256 awp = _mm256_set1_ps(aw * x_p[0] * x_p[0]), awm = _mm256_set1_ps(aw * x_m[0] * x_m[0]);
    const __m256 p1 = _mm256_set1_ps(x_p[1]), p2 = _mm256_set1_ps(x_p[2]);
    const __m256 m1 = _mm256_set1_ps(x_m[1]), m2 = _mm256_set1_ps(x_m[2]);
    const __m256 x2 = _mm256_loadu_ps(sumx + i2), w2 = _mm256_loadu_ps(sumw + i2);
    const __m256 b = _mm256_sub_ps(x2, _mm256_set1_ps(sumx[i1]));
    const __m256 c2 = _mm256_sub_ps(_mm256_set1_ps(sumx[S_GROUP]), x2);
    const __m256 bw = _mm256_sub_ps(w2, _mm256_set1_ps(sumw[i1]));
    const __m256 cw = _mm256_sub_ps(_mm256_set1_ps(sumw[S_GROUP]), w2);
    qx[0] = _mm256_add_ps(_mm256_add_ps(ap, _mm256_mul_ps(b, p1)), _mm256_mul_ps(c2, p2));
    qx[1] = _mm256_add_ps(_mm256_add_ps(am, _mm256_mul_ps(b, m1)), _mm256_mul_ps(c2, m2));
    q2[0] = _mm256_add_ps(_mm256_add_ps(awp, _mm256_mul_ps(_mm256_mul_ps(bw, p1), p1)),
                          _mm256_mul_ps(_mm256_mul_ps(cw, p2), p2));
    q2[1] = _mm256_add_ps(_mm256_add_ps(awm, _mm256_mul_ps(_mm256_mul_ps(bw, m1), m1)),
                          _mm256_mul_ps(_mm256_mul_ps(cw, m2), m2));
}

typedef struct iq1m_ctx {
    const iq1m_sums *s;
} iq1m_ctx;

AVX2 static inline void iq1m_block(const iq1m_ctx *c, int i1, int i2, __m256 *qx, __m256 *q2) {
    const iq1m_sums *s = c->s;
    __m256 qx_p[2], qx_m[2], q2_p[2], q2_m[2];
    for (int h = 0; h < 2; ++h) {
        const __m256 x2 = _mm256_loadu_ps(s->px[h] + i2), w2 = _mm256_loadu_ps(s->pw[h] + i2);
        const __m256 sx = _mm256_add_ps(_mm256_set1_ps(s->px[h][i1]), x2);
        qx_p[h] = _mm256_sub_ps(_mm256_set1_ps(s->txs[h] * s->p2), sx);
        qx_m[h] = _mm256_sub_ps(_mm256_set1_ps(s->txs[h] * s->m2), sx);
        /* tws p2 p2 + Pw(i1) cp1 scalar, as in ggml, then + Pw(i2) cp2 */
        q2_p[h] = _mm256_add_ps(_mm256_set1_ps(s->tws[h] * s->p2 * s->p2 + s->pw[h][i1] * s->cp1),
                                _mm256_mul_ps(w2, _mm256_set1_ps(s->cp2)));
        q2_m[h] = _mm256_add_ps(_mm256_set1_ps(s->tws[h] * s->m2 * s->m2 + s->pw[h][i1] * s->cm1),
                                _mm256_mul_ps(w2, _mm256_set1_ps(s->cm2)));
    }
    /* variant k: first half minus when k >> 1, second when k & 1 */
    qx[0] = _mm256_add_ps(qx_p[0], qx_p[1]);
    qx[1] = _mm256_add_ps(qx_p[0], qx_m[1]);
    qx[2] = _mm256_add_ps(qx_m[0], qx_p[1]);
    qx[3] = _mm256_add_ps(qx_m[0], qx_m[1]);
    q2[0] = _mm256_add_ps(q2_p[0], q2_p[1]);
    q2[1] = _mm256_add_ps(q2_p[0], q2_m[1]);
    q2[2] = _mm256_add_ps(q2_m[0], q2_p[1]);
    q2[3] = _mm256_add_ps(q2_m[0], q2_m[1]);
}

/* The whole search of a group of `group` elements (fits of nv variants
 * per (i1, i2), `blocks` 8-lane blocks in all), in ggml's order, exactly.
 *
 * ggml's scan keeps improving its best along the way (about fifty times
 * per IQ1_S group), and each improvement is a serial step. Most of them
 * are skipped, exactly, by starting near the best fit:
 *  1. Every fit's value v = (sumqx / sumq2) sumqx (what it would make the
 *     best: ggml's expressions) is computed, -inf where sumq2 <= 0 (never
 *     accepted); M is the largest, h the first fit (in ggml's order) with
 *     v >= M (1 - 2^-10), B the largest v before h (so B < v_h, unless
 *     rounding made the threshold itself round up).
 *  2. Whatever ggml's best is when it reaches h, it is the v of an earlier
 *     fit (or -FLT_MAX), so at most max(B, -FLT_MAX); rounding is
 *     monotonic, so if sumqx_h^2 > max(B, -FLT_MAX) sumq2_h (computed as
 *     ggml does), h passes ggml's test whatever came before, and ggml's
 *     state after h is known exactly: best = v_h, scale = sumqx_h /
 *     sumq2_h. The fits before h then cannot matter: ggml's result is the
 *     last improvement, and h is one.
 *  3. The fits after h are scanned from that state as ggml does (blocks
 *     tested at once against the best; the few near-ties with M that
 *     still improve it are taken one by one).
 * Where the test in 2 fails, or the sums may overflow (then a v could be
 * NaN: all_tame), the whole scan runs from the start instead. */
/* The fits of block (i1, i2) of format fmt (IQ1_S or IQ1_M). */
AVX2 static inline __attribute__((always_inline)) void fmt_block(int fmt, const void *c, int i1, int i2, __m256 *qx,
                                                                 __m256 *q2) {
    if (fmt == FMT_IQ1S) {
        iq1s_block(c, i1, i2, qx, q2);
    } else {
        iq1m_block(c, i1, i2, qx, q2);
    }
}

#define MAX_VECS (85 * 2) /* IQ1_S: 85 blocks of 2 variants; IQ1_M: 27 blocks of 4 */

#define MAX_BLOCKS 85 /* as MAX_VECS, in blocks */

/* The lanes of block (i1 row, i2) that are fits: all but in a row's last
 * block. */
AVX2 static inline __m256 live_lanes(int group, int i2) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(group + 1 - i2), lane));
}

/* The whole search without a division, where the fits are in a range that
 * makes it exact (else 0, *best untouched, and the exact search decides):
 * the prefix sums at most 2^30 in magnitude (tame 2: |sumqx| < 2^34,
 * |sumq2| < 2^34), every sumq2 of the blocks (past-the-row lanes included)
 * at least 2^-40, and U, the largest approximate value u = fl(sumqx^2)
 * rcp(sumq2) (within 2^-11 of sumqx^2 / sumq2), in [2^-60, 2^60]. Then:
 *  1. With L = U (1 - 2^-9), h is the first fit, in ggml's order, that
 *     passes ggml's test against L (sumqx^2 > L sumq2, as ggml computes
 *     them). Such a fit has u > L (1 - 2^-10): blocks whose largest u
 *     (bmax) is below L (1 - 2^-8) hold none and are passed over.
 *  2. Every fit f before h fails that test: fl(sumqx^2) <= fl(L sumq2),
 *     L sumq2 >= 2^-101 a normal number, so v_f = fl(fl(sumqx / sumq2)
 *     sumqx) <= L (1 + 5 2^-24) (or below 2^-86 < L where sumqx^2 is
 *     below the normal range), at most B = L (1 + 2^-20): ggml's best on
 *     reaching h is at most B. If h passes ggml's test against B
 *     (checked: else 0), it passes against whatever ggml's best was
 *     (rounding is monotonic), and ggml's state after it is known: best =
 *     v_h, scale = sumqx_h / sumq2_h.
 *  3. After h, ggml's best b never falls below v_h (1 - 2^-11) (a fit it
 *     takes has v > b (1 - 5 2^-24), at most 1122 times), and a fit it
 *     takes has sumqx^2 / sumq2 > b (1 - 2^-23), so u > v_h (1 - 2^-9):
 *     blocks whose bmax is below v_h (1 - 2^-8) change nothing and are
 *     passed over; the others are recomputed and scanned as ggml does.
 * The fits are computed once for all, and again only for the few blocks
 * near the largest value. */
AVX2 static inline __attribute__((always_inline)) int iq1_search_fast(int fmt, const void *c, cold_iq1_split *best) {
    const int group = fmt == FMT_IQ1S ? S_GROUP : M_GROUP, nv = fmt == FMT_IQ1S ? 2 : 4;
    __m256 bmax[MAX_BLOCKS];
    __m256 top = _mm256_setzero_ps(), qmin = _mm256_set1_ps(FLT_MAX);
    int nb = 0;
    for (int i1 = 0; i1 <= group; ++i1) {
        for (int i2 = i1; i2 <= group; i2 += 8, ++nb) {
            __m256 qx[4], q2[4];
            fmt_block(fmt, c, i1, i2, qx, q2);
            __m256 bm = _mm256_setzero_ps();
            for (int v = 0; v < nv; ++v) {
                const __m256 u = _mm256_mul_ps(_mm256_mul_ps(qx[v], qx[v]), _mm256_rcp_ps(q2[v]));
                bm = _mm256_max_ps(bm, u);
                qmin = _mm256_min_ps(qmin, q2[v]);
            }
            if (i2 + 8 > group + 1) {
                bm = _mm256_and_ps(bm, live_lanes(group, i2));
            }
            bmax[nb] = bm;
            top = _mm256_max_ps(top, bm);
        }
    }
    float t[8], q[8];
    _mm256_storeu_ps(t, top);
    _mm256_storeu_ps(q, qmin);
    float m = t[0], q2min = q[0];
    for (int k = 1; k < 8; ++k) {
        m = t[k] > m ? t[k] : m;
        q2min = q[k] < q2min ? q[k] : q2min;
    }
    if (!(m >= 0x1p-60f && m <= 0x1p60f && q2min >= 0x1p-40f)) {
        return 0;
    }
    const float L = m * (1.0f - 0x1p-9f), B = L * (1.0f + 0x1p-20f);
    __m256 skip = _mm256_set1_ps(L * (1.0f - 0x1p-8f));
    float best_score = -FLT_MAX;
    int found = 0;
    for (int i1 = 0, b = 0; i1 <= group; ++i1) {
        for (int i2 = i1; i2 <= group; i2 += 8, ++b) {
            if (_mm256_movemask_ps(_mm256_cmp_ps(bmax[b], skip, _CMP_GE_OQ)) == 0) {
                continue;
            }
            __m256 qx[4], q2[4];
            fmt_block(fmt, c, i1, i2, qx, q2);
            unsigned live = lanes_live(group + 1 - i2);
            if (!found) {
                /* step 1: the first fit passing the test against L */
                const __m256 vl = _mm256_set1_ps(L);
                unsigned pass[4] = { 0, 0, 0, 0 }, any = 0;
                for (int v = 0; v < nv; ++v) {
                    pass[v] = (unsigned)_mm256_movemask_ps(fit_pass(qx[v], q2[v], vl));
                    any |= pass[v];
                }
                any &= live;
                if (any == 0) {
                    continue;
                }
                const int l = __builtin_ctz(any);
                float fx[4][8], f2[4][8];
                for (int v = 0; v < nv; ++v) {
                    _mm256_storeu_ps(fx[v], qx[v]);
                    _mm256_storeu_ps(f2[v], q2[v]);
                }
                int gv = 0;
                while (gv < nv - 1 && !(pass[gv] >> l & 1)) {
                    ++gv;
                }
                /* step 2 */
                const float gx = fx[gv][l], g2 = f2[gv][l];
                if (!(g2 > 0 && gx * gx > B * g2)) {
                    return 0;
                }
                best->scale = gx / g2;
                best_score = best->scale * gx;
                best->i1 = i1;
                best->i2 = i2 + l;
                best->variant = gv;
                found = 1;
                skip = _mm256_set1_ps(best_score * (1.0f - 0x1p-8f));
                /* the rest of h's lane, then the later lanes */
                for (int v = gv + 1; v < nv; ++v) {
                    if (fit_one(fx[v][l], f2[v][l], &best_score, &best->scale)) {
                        best->variant = v;
                    }
                }
                live &= ~((2u << l) - 1);
            }
            /* step 3 */
            const int got = fit_block(qx, q2, nv, live, &best_score, &best->scale);
            if (got >= 0) {
                best->i1 = i1;
                best->i2 = i2 + got / nv;
                best->variant = got % nv;
            }
        }
    }
    return found;
}

AVX2 static inline __attribute__((always_inline)) void iq1_search(int fmt, const void *c, int tame,
                                                                  cold_iq1_split *best) {
    const int group = fmt == FMT_IQ1S ? S_GROUP : M_GROUP, nv = fmt == FMT_IQ1S ? 2 : 4;
    if (!tame) {
        /* sums that may overflow: ggml's scan from the start, as it is */
        float best_score = -FLT_MAX;
        for (int i1 = 0; i1 <= group; ++i1) {
            for (int i2 = i1; i2 <= group; i2 += 8) {
                __m256 qx[4], q2[4];
                fmt_block(fmt, c, i1, i2, qx, q2);
                const int got = fit_block(qx, q2, nv, lanes_live(group + 1 - i2), &best_score, &best->scale);
                if (got >= 0) {
                    best->i1 = i1;
                    best->i2 = i2 + got / nv;
                    best->variant = got % nv;
                }
            }
        }
        return;
    }
    if (tame == 2 && iq1_search_fast(fmt, c, best)) {
        return;
    }
    __m256 vals[MAX_VECS], sqx[MAX_VECS], sq2[MAX_VECS];
    __m256 top = _mm256_set1_ps(-__builtin_inff());
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    int nb = 0;
    for (int i1 = 0; i1 <= group; ++i1) {
        for (int i2 = i1; i2 <= group; i2 += 8, ++nb) {
            __m256 qx[4], q2[4];
            fmt_block(fmt, c, i1, i2, qx, q2);
            const __m256 live = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(group + 1 - i2), lane));
            for (int v = 0; v < nv; ++v) {
                const __m256 ok = _mm256_and_ps(live, _mm256_cmp_ps(q2[v], _mm256_setzero_ps(), _CMP_GT_OQ));
                const __m256 val = _mm256_mul_ps(_mm256_div_ps(qx[v], q2[v]), qx[v]);
                const __m256 x = _mm256_blendv_ps(_mm256_set1_ps(-__builtin_inff()), val, ok);
                vals[nv * nb + v] = x;
                sqx[nv * nb + v] = qx[v];
                sq2[nv * nb + v] = q2[v];
                top = _mm256_max_ps(top, x);
            }
        }
    }
    float best_score = -FLT_MAX;
    /* where the scan resumes: block start_b, at (start_i1, start_i2), its
     * fits up to `after` (g) skipped */
    int start_i1 = 0, start_i2 = 0, start_b = 0, after = -1;
    {
        float t[8];
        _mm256_storeu_ps(t, top);
        float m = t[0];
        for (int k = 1; k < 8; ++k) {
            m = t[k] > m ? t[k] : m;
        }
        if (m == -__builtin_inff()) {
            return; /* no fit has sumq2 > 0: nothing is ever accepted */
        }
        /* h: the first fit within 2^-10 of the largest value (any
         * threshold <= m keeps this exact: h is checked below) */
        const float thr = m * (1.0f - 1.0f / 1024);
        const __m256 vm = _mm256_set1_ps(thr);
        __m256 below = _mm256_set1_ps(-__builtin_inff());
        int b = 0, gl = -1, gv = -1;
        for (; b < nb; ++b) {
            unsigned eq = 0;
            for (int v = 0; v < nv; ++v) {
                eq |= (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(vals[nv * b + v], vm, _CMP_GE_OQ));
            }
            if (eq != 0) {
                gl = __builtin_ctz(eq);
                break;
            }
            for (int v = 0; v < nv; ++v) {
                below = _mm256_max_ps(below, vals[nv * b + v]);
            }
        }
        if (b == nb) {
            b = 0; /* not reached: m >= thr is one of the values */
            gl = 0;
        }
        float bv[4][8];
        for (int v = 0; v < nv; ++v) {
            _mm256_storeu_ps(bv[v], vals[nv * b + v]);
        }
        _mm256_storeu_ps(t, below);
        float bmax = -FLT_MAX;
        for (int k = 0; k < 8; ++k) {
            bmax = t[k] > bmax ? t[k] : bmax;
        }
        for (int l = 0; l <= gl; ++l) {
            for (int v = 0; v < nv; ++v) {
                if (l == gl && bv[v][l] >= thr) {
                    gv = v;
                    break;
                }
                bmax = bv[v][l] > bmax ? bv[v][l] : bmax;
            }
        }
        /* the block's (i1, i2) */
        int bi1 = 0, bi2 = 0;
        for (int k = 0, i1 = 0; i1 <= group && k <= b; ++i1) {
            for (int i2 = i1; i2 <= group && k <= b; i2 += 8, ++k) {
                bi1 = i1;
                bi2 = i2;
            }
        }
        if (gl < 0 || gv < 0) {
            gl = gv = 0;             /* not reached: m >= thr is one of the values */
            bmax = __builtin_inff(); /* fails the test below: the whole scan */
        }
        float fx[8], f2[8];
        _mm256_storeu_ps(fx, sqx[nv * b + gv]);
        _mm256_storeu_ps(f2, sq2[nv * b + gv]);
        const float gx = fx[gl], g2 = f2[gl];
        if (g2 > 0 && gx * gx > bmax * g2) {
            best->scale = gx / g2;
            best_score = best->scale * gx;
            best->i1 = bi1;
            best->i2 = bi2 + gl;
            best->variant = gv;
            start_i1 = bi1;
            start_i2 = bi2;
            start_b = b;
            after = nv * gl + gv;
        }
    }
    for (int i1 = start_i1, b = start_b; i1 <= group; ++i1) {
        for (int i2 = i1 == start_i1 ? start_i2 : i1; i2 <= group; i2 += 8, ++b) {
            const __m256 *qx = sqx + nv * b, *q2 = sq2 + nv * b;
            unsigned live = lanes_live(group + 1 - i2);
            int got = -1;
            if (after >= 0) {
                /* the block of g: the fits after g only */
                const int l = after / nv;
                float fx[4][8], f2[4][8];
                for (int v = 0; v < nv; ++v) {
                    _mm256_storeu_ps(fx[v], qx[v]);
                    _mm256_storeu_ps(f2[v], q2[v]);
                }
                for (int v = after % nv + 1; v < nv; ++v) {
                    if (fit_one(fx[v][l], f2[v][l], &best_score, &best->scale)) {
                        got = nv * l + v;
                    }
                }
                live &= ~((2u << l) - 1);
                after = -1;
            }
            const int more = fit_block(qx, q2, nv, live, &best_score, &best->scale);
            got = more >= 0 ? more : got;
            if (got >= 0) {
                best->i1 = i1;
                best->i2 = i2 + got / nv;
                best->variant = got % nv;
            }
        }
    }
}

/* 1 when every value is finite and at most 1e37 in magnitude: then every
 * fit's sumqx and sumq2 (a few products of these with level values below
 * 1.13 in magnitude, or their squares, added) is finite, and so no value v
 * is NaN (a finite sumqx over a positive finite sumq2 times sumqx is a
 * number or an infinity); 2 when every one is at most 2^30 (the range of
 * iq1_search_fast); 0 otherwise. */
static int tame_level(const float *v, int n) {
    int ok = 1, tight = 1;
    for (int i = 0; i < n; ++i) {
        ok &= fabsf(v[i]) <= 1e37f;
        tight &= fabsf(v[i]) <= 0x1p30f;
    }
    return ok + (ok & tight);
}

static inline int min_level(int a, int b) { return a < b ? a : b; }

AVX2 static void iq1s_search_avx2(const iq1s_ctx *c, cold_iq1_split *best) {
    const int tame = min_level(tame_level(c->sumx, S_GROUP + 1), tame_level(c->sumw, S_GROUP + 1));
    iq1_search(FMT_IQ1S, c, tame, best);
}

AVX2 static void iq1m_search_avx2(const iq1m_ctx *c, cold_iq1_split *best) {
    int tame = 2;
    for (int h = 0; h < 2; ++h) {
        tame = min_level(tame, min_level(tame_level(c->s->px[h], M_GROUP + 1), tame_level(c->s->pw[h], M_GROUP + 1)));
    }
    iq1_search(FMT_IQ1M, c, tame, best);
}

/* Eight candidates per vector: lane k scores candidates k, k + 8, ...; an
 * element's three possible errors sit in lanes 0..2 of both halves of a
 * table, picked by the code (bits 0..1 of each lane's index: vpermilps)
 * from the candidates' packed codes (cold_lattice.packed, after the
 * list: one load of eight, shifted by two bits per element). */
AVX2 static int iq1_candidate_avx2(const uint16_t *cand, const float *x, const float *w, float scale,
                                   const float val[3]) {
    /* e[c] = w diff diff, diff = scale val[c] - x, for the eight elements
     * at once, then element i's (e0, e1, e2, e2) put in both halves of
     * tab[i] (a transposition) */
    const __m256 xv = _mm256_loadu_ps(x), wv = _mm256_loadu_ps(w);
    __m256 e[3];
    for (int c = 0; c < 3; ++c) {
        const __m256 diff = _mm256_sub_ps(_mm256_set1_ps(scale * val[c]), xv);
        e[c] = _mm256_mul_ps(_mm256_mul_ps(wv, diff), diff);
    }
    __m256 tab[8];
    {
        const __m256 lo01 = _mm256_unpacklo_ps(e[0], e[1]), lo22 = _mm256_unpacklo_ps(e[2], e[2]);
        const __m256 hi01 = _mm256_unpackhi_ps(e[0], e[1]), hi22 = _mm256_unpackhi_ps(e[2], e[2]);
        /* r[k]: element k in the low half, element k + 4 in the high */
        const __m256 r[4] = { _mm256_shuffle_ps(lo01, lo22, _MM_SHUFFLE(1, 0, 1, 0)),
                              _mm256_shuffle_ps(lo01, lo22, _MM_SHUFFLE(3, 2, 3, 2)),
                              _mm256_shuffle_ps(hi01, hi22, _MM_SHUFFLE(1, 0, 1, 0)),
                              _mm256_shuffle_ps(hi01, hi22, _MM_SHUFFLE(3, 2, 3, 2)) };
        for (int k = 0; k < 4; ++k) {
            tab[k] = _mm256_permute2f128_ps(r[k], r[k], 0x00);
            tab[k + 4] = _mm256_permute2f128_ps(r[k], r[k], 0x11);
        }
    }
    const int count = cand[0];
    const uint16_t *packed = cand + 1 + count;
    __m256 best = _mm256_set1_ps(FLT_MAX);
    __m256i at = _mm256_setzero_si256();
    __m256i pos = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i eight = _mm256_set1_epi32(8), vcount = _mm256_set1_epi32(count);
    for (int j = 0; j < count; j += 8) {
        /* past the list's end: the next list or the padding, never chosen */
        const __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(packed + j)));
        __m256 d2 = _mm256_setzero_ps();
        d2 = _mm256_add_ps(d2, _mm256_permutevar_ps(tab[0], u));
        d2 = _mm256_add_ps(d2, _mm256_permutevar_ps(tab[1], _mm256_srli_epi32(u, 2)));
        d2 = _mm256_add_ps(d2, _mm256_permutevar_ps(tab[2], _mm256_srli_epi32(u, 4)));
        d2 = _mm256_add_ps(d2, _mm256_permutevar_ps(tab[3], _mm256_srli_epi32(u, 6)));
        d2 = _mm256_add_ps(d2, _mm256_permutevar_ps(tab[4], _mm256_srli_epi32(u, 8)));
        d2 = _mm256_add_ps(d2, _mm256_permutevar_ps(tab[5], _mm256_srli_epi32(u, 10)));
        d2 = _mm256_add_ps(d2, _mm256_permutevar_ps(tab[6], _mm256_srli_epi32(u, 12)));
        d2 = _mm256_add_ps(d2, _mm256_permutevar_ps(tab[7], _mm256_srli_epi32(u, 14)));
        /* strictly better, and a candidate of this list */
        const __m256i better = _mm256_and_si256(_mm256_castps_si256(_mm256_cmp_ps(d2, best, _CMP_LT_OQ)),
                                                _mm256_cmpgt_epi32(vcount, pos));
        best = _mm256_blendv_ps(best, d2, _mm256_castsi256_ps(better));
        at = _mm256_blendv_epi8(at, pos, better);
        pos = _mm256_add_epi32(pos, eight);
    }
    /* the smallest score over the lanes (no lane holds a NaN: a lane only
     * takes a score below the one it has), then the earliest candidate
     * among the lanes that hold it; none below FLT_MAX: -1 */
    __m256 mn = _mm256_min_ps(best, _mm256_permute_ps(best, _MM_SHUFFLE(2, 3, 0, 1)));
    mn = _mm256_min_ps(mn, _mm256_permute_ps(mn, _MM_SHUFFLE(1, 0, 3, 2)));
    mn = _mm256_min_ps(mn, _mm256_permute2f128_ps(mn, mn, 0x01));
    if (!(_mm_cvtss_f32(_mm256_castps256_ps128(mn)) < FLT_MAX)) {
        return -1;
    }
    const __m256i eq = _mm256_castps_si256(_mm256_cmp_ps(best, mn, _CMP_EQ_OQ));
    __m256i j = _mm256_blendv_epi8(_mm256_set1_epi32(INT32_MAX), at, eq);
    j = _mm256_min_epi32(j, _mm256_shuffle_epi32(j, _MM_SHUFFLE(2, 3, 0, 1)));
    j = _mm256_min_epi32(j, _mm256_shuffle_epi32(j, _MM_SHUFFLE(1, 0, 3, 2)));
    j = _mm256_min_epi32(j, _mm256_permute2x128_si256(j, j, 0x01));
    return cand[1 + _mm256_cvtsi256_si32(j)];
}

/* Ranks eight elements at a time: j's place is the count of elements below
 * x[j] plus the equal ones before it (as the portable path): x[i] <= x[j]
 * for i before j's vector, x[i] < x[j] after it, and within it (i < j and
 * x[i] == x[j]) or x[i] < x[j] (ordered compares: <= is < or ==). */
AVX2 static void stable_order_avx2(const float *x, int n, int *idx) {
    __m256i rank[4];
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const int nv = n / 8;
    for (int v = 0; v < nv; ++v) {
        const __m256 xj = _mm256_loadu_ps(x + 8 * v);
        __m256i rk = _mm256_setzero_si256();
        for (int i = 0; i < 8 * v; ++i) {
            rk = _mm256_sub_epi32(rk, _mm256_castps_si256(_mm256_cmp_ps(_mm256_set1_ps(x[i]), xj, _CMP_LE_OQ)));
        }
        for (int i = 8 * v; i < 8 * v + 8; ++i) {
            const __m256 xi = _mm256_set1_ps(x[i]);
            const __m256i lt = _mm256_castps_si256(_mm256_cmp_ps(xi, xj, _CMP_LT_OQ));
            const __m256i eq = _mm256_castps_si256(_mm256_cmp_ps(xi, xj, _CMP_EQ_OQ));
            const __m256i after = _mm256_cmpgt_epi32(lane, _mm256_set1_epi32(i - 8 * v));
            rk = _mm256_sub_epi32(rk, _mm256_or_si256(lt, _mm256_and_si256(eq, after)));
        }
        for (int i = 8 * v + 8; i < n; ++i) {
            rk = _mm256_sub_epi32(rk, _mm256_castps_si256(_mm256_cmp_ps(_mm256_set1_ps(x[i]), xj, _CMP_LT_OQ)));
        }
        rank[v] = rk;
    }
    int r[32];
    for (int v = 0; v < nv; ++v) {
        _mm256_storeu_si256((__m256i *)(void *)(r + 8 * v), rank[v]);
    }
    for (int j = 0; j < n; ++j) {
        idx[r[j]] = j;
    }
}
#endif

/* ---- entries ------------------------------------------------------------- */

void anvil_cold_iq1s_split_isa(const float *xb, const float *weight, const int *idx, const float x_p[3],
                               const float x_m[3], float scale0, cold_iq1_split *out, int allow_simd) {
    float sumx[S_PAD], sumw[S_PAD];
    iq1s_prefix(xb, weight, idx, sumx, sumw);
    *out = (cold_iq1_split){ -1, -1, -1, scale0 };
#if COLD_IQ1_AVX2
    if (allow_simd && anvil_ref_has_avx2()) {
        const iq1s_ctx c = { sumx, sumw, x_p, x_m };
        iq1s_search_avx2(&c, out);
        return;
    }
#else
    (void)allow_simd;
#endif
    iq1s_split_portable(sumx, sumw, x_p, x_m, out);
}

void anvil_cold_iq1m_split_isa(const float *xb, const float *weight, const int *idx, const float x_p[3],
                               const float x_m[3], float scale0, cold_iq1_split *out, int allow_simd) {
    iq1m_sums s;
    iq1m_prefix(xb, weight, idx, x_p, x_m, &s);
    *out = (cold_iq1_split){ -1, -1, -1, scale0 };
#if COLD_IQ1_AVX2
    if (allow_simd && anvil_ref_has_avx2()) {
        const iq1m_ctx c = { &s };
        iq1m_search_avx2(&c, out);
        return;
    }
#else
    (void)allow_simd;
#endif
    iq1m_split_portable(&s, out);
}

int anvil_cold_iq1_candidate_isa(const cold_lattice *lat, const uint16_t *cand, const float *x, const float *w,
                                 float scale, const float val[3], int allow_simd) {
#if defined(__aarch64__) && defined(ANVIL_ENC_NEON)
    if (allow_simd && lat->packed) {
        return anvil_enc_neon_iq1_candidate(cand, x, w, scale, val);
    }
#endif
#if COLD_IQ1_AVX2
    if (allow_simd && lat->packed && anvil_ref_has_avx2()) {
        return iq1_candidate_avx2(cand, x, w, scale, val);
    }
#else
    (void)allow_simd;
#endif
    return anvil_cold_best_candidate3(lat, cand, x, w, scale, val, NULL);
}

void anvil_cold_stable_order_isa(const float *x, int n, int *idx, int allow_simd) {
#if COLD_IQ1_AVX2
    if (allow_simd && (n == 16 || n == 32) && anvil_ref_has_avx2()) {
        stable_order_avx2(x, n, idx);
        return;
    }
#else
    (void)allow_simd;
#endif
    anvil_cold_stable_order(x, n, idx);
}

/* cold_lattice_key for the IQ1 grid (8 base-3 digits) as a tree of
 * independent products rather than a chain: the same integer. */
static inline int iq1_key(const cold_lattice *lat, const int8_t *l) {
    if (lat->dims != 8 || lat->levels != 3) {
        return cold_lattice_key(lat, l);
    }
    const int a = l[0] + 3 * l[1], b = l[2] + 3 * l[3], c = l[4] + 3 * l[5], d = l[6] + 3 * l[7];
    return (a + 9 * b) + 81 * (c + 9 * d);
}

int anvil_cold_iq1_snap_isa(const cold_lattice *lat, const int8_t *L, int groups, const float *xb,
                            const float *weight, const float *const *vals, float *scale, int *index, int allow_simd) {
    int all_on_grid = 1;
    int32_t keys[4];
    for (int k = 0; k < groups && k < 4; ++k) {
        /* the lists (up to 2 x 73 + 1 words) fetched for all groups at
         * once: they are spread over 1.3 MB */
        keys[k] = lat->map[iq1_key(lat, L + 8 * k)];
        if (keys[k] < 0) {
            const char *list = (const char *)cold_candidates(lat, keys[k]);
            for (int b = 0; b < 320; b += 64) {
                __builtin_prefetch(list + b);
            }
        }
    }
    for (int k = 0; k < groups; ++k) {
        const int32_t v = k < 4 ? keys[k] : lat->map[iq1_key(lat, L + 8 * k)];
        if (v >= 0) {
            index[k] = (int)v;
            continue;
        }
        all_on_grid = 0;
        index[k] = anvil_cold_iq1_candidate_isa(lat, cold_candidates(lat, v), xb + 8 * k, weight + 8 * k, *scale,
                                                vals[k], allow_simd);
        if (index[k] < 0) {
            return ANVIL_E_UNSUPPORTED;
        }
    }
    if (!all_on_grid) {
        float sumqx = 0.0f, sumq2 = 0.0f;
        for (int k = 0; k < groups; ++k) {
            const uint8_t *c = lat->code + (size_t)index[k] * 8;
            for (int j = 0; j < 8; ++j) {
                const float w = weight[8 * k + j];
                const float q = vals[k][c[j]];
                sumqx += w * q * xb[8 * k + j];
                sumq2 += w * q * q;
            }
        }
        if (sumqx > 0 && sumq2 > 0) {
            *scale = sumqx / sumq2;
        }
    }
    return ANVIL_OK;
}
