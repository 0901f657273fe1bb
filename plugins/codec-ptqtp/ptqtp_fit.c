/* SPDX-License-Identifier: MIT */
/* The PTQTP fit of one 256-weight block: k ternary planes and their scales
 * minimising the squared error (why these choices: codec_ptqtp.c).
 *
 * Alternating minimisation, as the paper does it:
 *  - given the scales, every weight takes the nearest of the 3^k values
 *    sum_j t_j d_j (an exact, exhaustive choice: at most 27 candidates);
 *  - given the trits, the scales are the k x k ridge least-squares solution
 *    (T'T + lambda I) d = T'w, in closed form, rounded to binary16 at once
 *    so that every step is judged with the scales the decoder will use.
 * Both steps can only lower the error (up to the binary16 rounding), so it
 * stops when a step no longer gains a relative 2^-20, or after 32 steps.
 *
 * The nearest-value assignment of sorted weights is a run of contiguous
 * segments, one per candidate value, cut at the midpoints between
 * neighbouring values; with prefix sums of the sorted weights and of their
 * squares, a step costs O(3^k log 256) instead of O(256 * 3^k): the
 * per-candidate counts and sums give T'T, T'w and the error directly.
 * The final trits are then chosen weight by weight, exhaustively, with the
 * decoder's own float arithmetic.
 *
 * Starting points (the alternation finds a local minimum; the best of a few
 * starts is kept, ties to the first):
 *  1. progressive, the paper's: plane 1 is the best single ternary plane
 *     for w, plane j the best for the residual of planes 1..j-1;
 *  2. "wide": the largest value sum_j d_j at 0.9 max|w|, with the ratio
 *     d1/d0 in {0.9, 0.1} and (k = 3) d2/d1 in {0.7, 0.3}: near-equal
 *     planes, or one plane for the outliers and small ones for the bulk,
 *     the two shapes a brute-force search finds on heavy-tailed blocks.
 *
 * Deterministic on every ISA: only IEEE +, -, *, / and comparisons, in a
 * fixed order (the build has no FP contraction), no libm call whose result
 * could differ, a sort by a total order, and binary16 rounding through the
 * SDK's bit-exact helper. */
#include <math.h>
#include <string.h>

#include "anvil/numeric.h"
#include "ptqtp_ref.h"

#define N ANVIL_PTQTP_BLOCK
#define MAX_COMBOS 27
#define MAX_STEPS 32
#define STOP_GAIN 0x1.0p-20 /* relative error drop below which a start stops */
#define RIDGE 0x1.0p-20     /* lambda, in units of "one weight" of T'T */
#define WIDE_TOP 0.9        /* largest value of a wide start, times max|w| */
#define HALF_MAX 65504.0

typedef struct combos {
    unsigned n; /* 3^k */
    int8_t t[MAX_COMBOS][ANVIL_PTQTP_MAX_PLANES];
    double td[MAX_COMBOS][ANVIL_PTQTP_MAX_PLANES]; /* the same, as doubles */
} combos;

/* Combination c has plane j's trit {0, +1, -1}[(c / 3^j) % 3]: c = 0 is all
 * zeros, and dropping a nonzero trit lowers c, so exact ties go to the
 * sparser combination. */
static void combos_init(combos *cs, unsigned k) {
    static const int8_t trit_of[3] = { 0, 1, -1 };
    cs->n = k == 2 ? 9 : 27;
    for (unsigned c = 0; c < cs->n; ++c) {
        unsigned x = c;
        for (unsigned j = 0; j < ANVIL_PTQTP_MAX_PLANES; ++j, x /= 3) {
            cs->t[c][j] = j < k ? trit_of[x % 3] : 0;
            cs->td[c][j] = (double)cs->t[c][j];
        }
    }
}

/* ---- sorting floats by a total order (LSD radix on the bits) ---------------- */

static uint32_t sort_key(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (u & 0x80000000u) ? ~u : u | 0x80000000u;
}

static void sort_ascending(float *v) {
    uint32_t a[N], b[N];
    for (unsigned i = 0; i < N; ++i) a[i] = sort_key(v[i]);
    uint32_t *src = a, *dst = b;
    for (unsigned shift = 0; shift < 32; shift += 8) {
        unsigned count[257] = { 0 };
        for (unsigned i = 0; i < N; ++i) count[((src[i] >> shift) & 0xffu) + 1]++;
        for (unsigned r = 0; r < 256; ++r) count[r + 1] += count[r];
        for (unsigned i = 0; i < N; ++i) dst[count[(src[i] >> shift) & 0xffu]++] = src[i];
        uint32_t *t = src;
        src = dst;
        dst = t;
    }
    for (unsigned i = 0; i < N; ++i) {
        const uint32_t k = src[i], u = (k & 0x80000000u) ? k & 0x7fffffffu : ~k;
        memcpy(&v[i], &u, sizeof u);
    }
}

/* ---- the search state: sorted weights and prefix sums ---------------------- */

typedef struct group {
    float w[N];      /* ascending */
    double wd[N];    /* the same, widened */
    double p[N + 1]; /* p[i] = sum of w[0..i-1] */
    double q[N + 1]; /* q[i] = sum of w[0..i-1]^2 */
} group;

typedef struct seg_stats {
    double n[MAX_COMBOS], s[MAX_COMBOS]; /* weights taking combination c, their sum */
    double err;
} seg_stats;

/* The number of weights <= x, but at least lo (the segments' ends rise):
 * lo plus those <= x among w[lo..N-1] (if some weight below lo is above x,
 * so are all from lo on: the same count). A halving search over the
 * remaining span only; the step is a select, no branch to mispredict. */
static unsigned upper_bound(const group *g, unsigned lo, double x) {
    const double *base = g->wd + lo;
    unsigned len = N - lo;
    if (len == 0) return lo;
    while (len > 1) {
        const unsigned half = len / 2;
        base = base[half - 1] <= x ? base + half : base;
        len -= half;
    }
    return (unsigned)(base - g->wd) + (base[0] <= x);
}

/* (v[x], x) before (v[y], y): by value, ties by index -- a total order. */
static int before(const double *v, unsigned x, unsigned y) { return v[x] < v[y] || (v[x] == v[y] && x < y); }

/* The combinations in that order, built plane by plane: those of planes
 * 0..j are those of planes 0..j-1 with plane j's trit 0, +1 or -1 (index
 * + 0, 3^j, 2 * 3^j), three runs each already in order (a run shifted by
 * d_j keeps its order: the values are exact), merged. */
static void order_combos(unsigned k, const double *v, unsigned *ord) {
    unsigned buf[MAX_COMBOS];
    unsigned *cur = (k % 2) ? buf : ord, *nxt = (k % 2) ? ord : buf; /* ends in ord */
    unsigned m = 1, p3 = 1;
    cur[0] = 0;
    for (unsigned j = 0; j < k; ++j, m *= 3, p3 *= 3) {
        unsigned i0 = 0, i1 = 0, i2 = 0;
        for (unsigned o = 0; o < 3 * m; ++o) {
            unsigned best = 3, bc = 0;
            if (i0 < m) {
                best = 0;
                bc = cur[i0];
            }
            if (i1 < m && (best == 3 || before(v, cur[i1] + p3, bc))) {
                best = 1;
                bc = cur[i1] + p3;
            }
            if (i2 < m && (best == 3 || before(v, cur[i2] + 2 * p3, bc))) {
                best = 2;
                bc = cur[i2] + 2 * p3;
            }
            nxt[o] = bc;
            i0 += best == 0;
            i1 += best == 1;
            i2 += best == 2;
        }
        unsigned *t = cur;
        cur = nxt;
        nxt = t;
    }
}

/* Assign every weight its nearest combination value under scales d and
 * collect the segments' statistics and the squared error. Values are
 * sums of at most three binary16 numbers: exact in double. */
static void assign(const group *g, const combos *cs, unsigned k, const double *d, seg_stats *st) {
    double v[MAX_COMBOS];
    unsigned ord[MAX_COMBOS];
    for (unsigned c = 0; c < cs->n; ++c) {
        double x = 0.0;
        for (unsigned j = 0; j < k; ++j) x = x + cs->td[c][j] * d[j];
        v[c] = x;
        st->n[c] = 0.0;
        st->s[c] = 0.0;
    }
    order_combos(k, v, ord);
    double err = 0.0;
    unsigned lo = 0;
    for (unsigned i = 0; i < cs->n; ++i) {
        const unsigned c = ord[i];
        const unsigned hi = i + 1 < cs->n ? upper_bound(g, lo, 0.5 * (v[c] + v[ord[i + 1]])) : N;
        const double cnt = (double)(hi - lo), s = g->p[hi] - g->p[lo], s2 = g->q[hi] - g->q[lo];
        st->n[c] = cnt;
        st->s[c] = s;
        err = err + (s2 - 2.0 * v[c] * s + v[c] * v[c] * cnt);
        lo = hi;
    }
    st->err = err;
}

/* A scale as binary16 can hold it (saturating: weights beyond +-65504 lose
 * accuracy, never become Inf), back in double. */
static double to_half(double x, anvil_half *bits) {
    if (!(x == x)) x = 0.0;
    if (x > HALF_MAX) x = HALF_MAX;
    if (x < -HALF_MAX) x = -HALF_MAX;
    const anvil_half h = anvil_fp32_to_fp16((float)x);
    if (bits != NULL) *bits = h;
    return (double)anvil_fp16_to_fp32(h);
}

/* The ridge least-squares scales for the assignment in st: (T'T + lambda I)
 * d = T'w, by Gaussian elimination in a fixed order (the matrix is
 * symmetric positive definite: no pivoting), rounded to binary16. */
static void solve(const combos *cs, unsigned k, const seg_stats *st, double *d) {
    double m[ANVIL_PTQTP_MAX_PLANES][ANVIL_PTQTP_MAX_PLANES + 1];
    for (unsigned i = 0; i < k; ++i) {
        for (unsigned j = 0; j <= k; ++j) m[i][j] = 0.0;
    }
    /* A term with a zero trit is a signed zero, and adding one changes no
     * sum (each starts at +0, and +0 + -0 is +0): only the nonzero terms
     * are added, in the same order -- the same sums to the bit. So are
     * empty segments skipped. */
    for (unsigned c = 0; c < cs->n; ++c) {
        if (st->n[c] == 0.0) continue;
        for (unsigned i = 0; i < k; ++i) {
            const double ti = cs->td[c][i];
            if (ti == 0.0) continue;
            for (unsigned j = 0; j < k; ++j) {
                if (cs->td[c][j] != 0.0) m[i][j] = m[i][j] + ti * cs->td[c][j] * st->n[c];
            }
            m[i][k] = m[i][k] + ti * st->s[c];
        }
    }
    for (unsigned i = 0; i < k; ++i) m[i][i] = m[i][i] + RIDGE;
    for (unsigned c = 0; c < k; ++c) {
        for (unsigned r = c + 1; r < k; ++r) {
            const double f = m[r][c] / m[c][c];
            for (unsigned j = c; j <= k; ++j) m[r][j] = m[r][j] - f * m[c][j];
        }
    }
    for (unsigned c = k; c-- > 0;) {
        double x = m[c][k];
        for (unsigned j = c + 1; j < k; ++j) x = x - m[c][j] * d[j];
        d[c] = x / m[c][c];
    }
    for (unsigned j = 0; j < k; ++j) d[j] = to_half(d[j], NULL);
}

/* Alternate from scales d (binary16 values) until the error stops falling;
 * d ends as the best scales seen. Returns their error. */
static double refine(const group *g, const combos *cs, unsigned k, double *d, unsigned *steps) {
    seg_stats st;
    assign(g, cs, k, d, &st);
    for (unsigned it = 0; it < MAX_STEPS && st.err > 0.0; ++it) {
        double nd[ANVIL_PTQTP_MAX_PLANES] = { 0 };
        solve(cs, k, &st, nd);
        seg_stats ns;
        assign(g, cs, k, nd, &ns);
        ++*steps;
        if (!(ns.err < st.err)) break;
        const int going = ns.err < st.err - st.err * STOP_GAIN;
        st = ns;
        memcpy(d, nd, sizeof nd);
        if (!going) break;
    }
    return st.err;
}

/* |w| in ascending order, from w sorted ascending: the two ends of w
 * walked inwards give the magnitudes largest first. */
static void magnitudes_from_sorted(const float *w, float *mag) {
    unsigned lo = 0, hi = N;
    for (unsigned k = N; k-- > 0;) {
        const float a = fabsf(w[lo]), b = fabsf(w[hi - 1]);
        if (a > b) {
            mag[k] = a;
            ++lo;
        } else {
            mag[k] = b;
            --hi;
        }
    }
}

/* The best single ternary plane for r, given |r| in ascending order (mag):
 * the m largest at the scale of their mean, m maximising (their sum)^2 / m.
 * The scale goes to *d (binary16 value); r loses the plane. */
static void progressive_plane(float *r, const float *mag, double *d) {
    double sum = 0.0, best = 0.0, best_sum = 0.0;
    unsigned best_m = 0;
    for (unsigned m = 1; m <= N; ++m) {
        sum = sum + (double)mag[N - m];
        const double gain = sum * sum / (double)m;
        if (gain > best) {
            best = gain;
            best_m = m;
            best_sum = sum;
        }
    }
    *d = best_m > 0 ? to_half(best_sum / (double)best_m, NULL) : 0.0;
    if (best_m == 0) return;
    const float thr = mag[N - best_m], s = (float)*d;
    for (unsigned i = 0; i < N; ++i) {
        if (fabsf(r[i]) >= thr) r[i] = r[i] < 0.0f ? r[i] + s : r[i] - s;
    }
}

void anvil_ptqtp_fit(const float *w, unsigned k, anvil_ptqtp_fit_result *out) {
    combos cs;
    combos_init(&cs, k);
    memset(out, 0, sizeof *out);
    group g;
    memcpy(g.w, w, sizeof g.w);
    sort_ascending(g.w);
    g.p[0] = g.q[0] = 0.0;
    for (unsigned i = 0; i < N; ++i) {
        g.wd[i] = (double)g.w[i];
        g.p[i + 1] = g.p[i] + (double)g.w[i];
        g.q[i + 1] = g.q[i] + (double)g.w[i] * (double)g.w[i];
    }
    const double amax = fmax(fabs((double)g.w[0]), fabs((double)g.w[N - 1]));

    double best[ANVIL_PTQTP_MAX_PLANES] = { 0 };
    double best_err = g.q[N]; /* all zeros */
    if (amax > 0.0) {
        /* 1. progressive */
        double d[ANVIL_PTQTP_MAX_PLANES] = { 0 };
        float r[N], mag[N];
        memcpy(r, w, sizeof r);
        magnitudes_from_sorted(g.w, mag);
        for (unsigned j = 0; j < k; ++j) {
            if (j > 0) {
                for (unsigned i = 0; i < N; ++i) mag[i] = fabsf(r[i]);
                sort_ascending(mag);
            }
            progressive_plane(r, mag, &d[j]);
        }
        double e = refine(&g, &cs, k, d, &out->steps);
        out->starts++;
        if (e < best_err) {
            best_err = e;
            memcpy(best, d, sizeof d);
        }
        /* 2. wide */
        static const double ratio1[2] = { 0.9, 0.1 }, ratio2[2] = { 0.7, 0.3 };
        for (unsigned a = 0; a < 2; ++a) {
            for (unsigned b = 0; b < (k == 3 ? 2u : 1u); ++b) {
                const double r1 = ratio1[a], r2 = k == 3 ? ratio2[b] : 0.0;
                const double top = WIDE_TOP * amax / (1.0 + r1 + r1 * r2);
                d[0] = to_half(top, NULL);
                d[1] = to_half(top * r1, NULL);
                d[2] = k == 3 ? to_half(top * r1 * r2, NULL) : 0.0;
                e = refine(&g, &cs, k, d, &out->steps);
                out->starts++;
                if (e < best_err) {
                    best_err = e;
                    memcpy(best, d, sizeof d);
                }
            }
        }
    }
    out->sse = best_err;

    /* Canonical signs (every candidate set is symmetric in each plane's
     * sign), then each weight's nearest combination, exhaustively, with the
     * decoder's arithmetic: y = t0 * d0, y += t1 * d1 (...) in binary32. */
    float df[ANVIL_PTQTP_MAX_PLANES] = { 0 };
    for (unsigned j = 0; j < k; ++j) {
        df[j] = (float)to_half(fabs(best[j]), &out->d[j]);
    }
    float v[MAX_COMBOS];
    for (unsigned c = 0; c < cs.n; ++c) {
        float y = (float)cs.t[c][0] * df[0];
        for (unsigned j = 1; j < k; ++j) y = y + (float)cs.t[c][j] * df[j];
        v[c] = y;
    }
    /* candidates outermost, so the weights' loop runs across independent
     * lanes; strict < keeps the first minimum in candidate order */
    float be[N];
    int32_t bc[N]; /* as wide as be[], so the loop vectorizes */
    for (unsigned i = 0; i < N; ++i) {
        be[i] = fabsf(w[i] - v[0]);
        bc[i] = 0;
    }
    for (unsigned c = 1; c < cs.n; ++c) {
        const float vc = v[c];
        for (unsigned i = 0; i < N; ++i) {
            const float e = fabsf(w[i] - vc);
            const int32_t better = -(int32_t)(e < be[i]); /* a mask: no branch */
            bc[i] = (bc[i] & ~better) | ((int32_t)c & better);
            be[i] = e < be[i] ? e : be[i];
        }
    }
    for (unsigned i = 0; i < N; ++i) {
        for (unsigned j = 0; j < k; ++j) out->t[j][i] = cs.t[bc[i]][j];
    }
}
