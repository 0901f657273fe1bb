/* SPDX-License-Identifier: MIT */
/*
 * SIMD encoders for PTQTP-S (ptqtp2s, ptqtp3s: anvil/formats/ptqtps.h),
 * byte-identical to the codec's fit (plugins/codec-ptqtp/ptqtps.c,
 * anvil_ptqtps_fit, whose top comment gives the steps; simd_enc_common.h
 * says how a SIMD encoder keeps the reference's bytes).
 *
 * Lanes are sub-blocks: a block's 16 sub-blocks of 16 weights are
 * transposed so that lane l of group g holds sub-block g * EV_LANES + l
 * (EV_LANES = 4, 8 or 16 divides 16), and every per-sub-block search of
 * the reference -- the candidate steps of step 1, the codes of step 3 --
 * runs in all lanes at once with no cross-lane work. The reference keeps a
 * sub-block's 16 products as four 4-lane vectors and adds them in one
 * fixed order (its vsum: ((a[l] + a[4+l]) + a[8+l]) + a[12+l] per l, then
 * the four in order); ps_sum16 adds them in that order per lane. The
 * per-block steps (the error weights' rms, the least-squares refit of the
 * block scale, the sums of errors over sub-blocks) are the reference's
 * scalar code in its order.
 *
 * Defines EV_TABLE(ptqtps): NULL-terminated.
 */
#ifndef ANVIL_SIMD_ENC_PTQTPS_H
#define ANVIL_SIMD_ENC_PTQTPS_H

#include "anvil/formats/ptqtps.h"
#include "simd_enc_common.h"

#define PS_NB ANVIL_PTQTP_BLOCK
#define PS_SUB ANVIL_PTQTPS_SUB
#define PS_NSUB ANVIL_PTQTPS_NSUB
#define PS_GROUPS (PS_NSUB / EV_LANES)
#define PS_HALF_MAX 65504.0f

#if PS_NSUB % EV_LANES != 0
#error "simd_enc_ptqtps.h: EV_LANES must divide the 16 sub-blocks of a block"
#endif

static const int ps_mt[2][4] = { { ANVIL_PTQTPS_MULTS_NARROW }, { ANVIL_PTQTPS_MULTS_WIDE } };
/* The reference's candidate steps amax / (L + delta). */
static const float ps_delta[] = { -0.5f, -0.25f, 0.0f, 0.25f, 0.5f, 0.75f, 1.0f, 1.5f };
#define PS_NCAND (sizeof ps_delta / sizeof ps_delta[0])

/* A block in lanes: element e of group g's lanes at [(g * 16 + e) * EV_LANES]. */
typedef struct ps_block {
    float x[PS_NB] EV_ALIGN;  /* the weights */
    float wt[PS_NB] EV_ALIGN; /* the error weights */
    float wx[PS_NB] EV_ALIGN; /* wt x */
    float S[PS_NSUB];         /* step 1's best step per sub-block, sub-block order */
} ps_block;

/* One fit_mults pass: levels in lanes, codes and errors per sub-block. */
typedef struct ps_pass {
    float q[PS_NB] EV_ALIGN;
    int32_t code[PS_NSUB];
    float err[PS_NSUB];
} ps_pass;

#define PS_AT(g, e) ((((g)*PS_SUB) + (e)) * EV_LANES)

/* The reference's vlevel: clamp to -L..L (C's selects), round to nearest even. */
EV_INLINE ev_f ps_level(ev_f x, ev_f lim, ev_f nlim) {
    const ev_f magic = ev_set1(12582912.0f);
    return ev_sub(ev_add(ev_max_gt(ev_min_lt(x, lim), nlim), magic), magic);
}

/* A sub-block's 16 per-element terms are added in the reference's vsum
 * order: term e into accumulator e % 4, in e order, then the four in
 * order. The accumulators start at -0 (x + -0 is x, bit for bit, for
 * every x: the first term goes in unchanged). */
#define PS_NEG0 ev_set1(-0.0f)
EV_INLINE ev_f ps_total(ev_f a0, ev_f a1, ev_f a2, ev_f a3) { return ev_add(ev_add(ev_add(a0, a1), a2), a3); }

/* Step 1's terms of element at: wx q and wt q^2 into *ax and *a2. */
EV_INLINE void ps_step_terms(const ps_block *b, int at, ev_f inv, ev_f vl, ev_f vnl, ev_f *ax, ev_f *a2) {
    const ev_f q = ps_level(ev_mul(ev_load(b->x + at), inv), vl, vnl);
    *ax = ev_add(*ax, ev_mul(ev_load(b->wx + at), q));
    *a2 = ev_add(*a2, ev_mul(ev_load(b->wt + at), ev_mul(q, q)));
}

/* Step 1 for the lanes of group g: the best real step per sub-block. */
static void ps_steps(const ps_block *b, int g, float lim, float *S) {
    ev_f amax = ev_set1(0.0f);
    for (int e = 0; e < PS_SUB; ++e) amax = ev_max_mag(amax, ev_abs(ev_load(b->x + PS_AT(g, e))));
    const ev_m zero = ev_eq(amax, ev_set1(0.0f));
    /* zero sub-blocks: every level 0, nothing beats the start, S = 0 */
    const ev_f iamax = ev_blend(zero, ev_div(ev_set1(1.0f), amax), ev_set1(0.0f));
    const ev_f vl = ev_set1(lim), vnl = ev_set1(-lim);
    ev_f best_qx = ev_set1(0.0f), best_q2 = ev_set1(1.0f);
    for (unsigned c = 0; c < PS_NCAND; ++c) {
        const ev_f inv = ev_mul(ev_set1(lim + ps_delta[c]), iamax);
        ev_f x0 = PS_NEG0, x1 = PS_NEG0, x2 = PS_NEG0, x3 = PS_NEG0;
        ev_f y0 = PS_NEG0, y1 = PS_NEG0, y2 = PS_NEG0, y3 = PS_NEG0;
        for (int e = 0; e < PS_SUB; e += 4) {
            ps_step_terms(b, PS_AT(g, e), inv, vl, vnl, &x0, &y0);
            ps_step_terms(b, PS_AT(g, e + 1), inv, vl, vnl, &x1, &y1);
            ps_step_terms(b, PS_AT(g, e + 2), inv, vl, vnl, &x2, &y2);
            ps_step_terms(b, PS_AT(g, e + 3), inv, vl, vnl, &x3, &y3);
        }
        const ev_f sqx = ps_total(x0, x1, x2, x3), sq2 = ps_total(y0, y1, y2, y3);
        const ev_m better = ev_mand(ev_gt(sq2, ev_set1(0.0f)),
                                    ev_gt(ev_mul(ev_mul(sqx, sqx), best_q2), ev_mul(ev_mul(best_qx, best_qx), sq2)));
        best_qx = ev_blend(better, best_qx, sqx);
        best_q2 = ev_blend(better, best_q2, sq2);
    }
    const ev_f s = ev_blend(ev_gt(best_qx, ev_set1(0.0f)), ev_set1(0.0f), ev_div(best_qx, best_q2));
    ev_store(S + g * EV_LANES, s);
}

/* The multiplier of each lane's code (codes 0..3). */
EV_INLINE ev_f ps_mult(const int *mt, ev_i code) {
    ev_f m = ev_set1((float)mt[0]);
    for (int c = 1; c < 4; ++c) m = ev_blend(ev_ieq(code, ev_iset1(c)), m, ev_set1((float)mt[c]));
    return m;
}

/* The reference's sub_err per lane: weighted squared error at multiplier
 * m and scale d, 1 / (m d) in inv. */
EV_INLINE ev_f ps_err_term(const ps_block *b, int at, ev_f m, ev_f vd, ev_f inv, ev_f vl, ev_f vnl) {
    const ev_f x = ev_load(b->x + at);
    const ev_f r = ev_sub(x, ev_mul(ev_mul(m, ps_level(ev_mul(x, inv), vl, vnl)), vd));
    return ev_mul(ev_load(b->wt + at), ev_mul(r, r));
}

EV_INLINE ev_f ps_err(const ps_block *b, int g, ev_f m, ev_f vd, ev_f inv, ev_f vl, ev_f vnl) {
    ev_f a0 = PS_NEG0, a1 = PS_NEG0, a2 = PS_NEG0, a3 = PS_NEG0;
    for (int e = 0; e < PS_SUB; e += 4) {
        a0 = ev_add(a0, ps_err_term(b, PS_AT(g, e), m, vd, inv, vl, vnl));
        a1 = ev_add(a1, ps_err_term(b, PS_AT(g, e + 1), m, vd, inv, vl, vnl));
        a2 = ev_add(a2, ps_err_term(b, PS_AT(g, e + 2), m, vd, inv, vl, vnl));
        a3 = ev_add(a3, ps_err_term(b, PS_AT(g, e + 3), m, vd, inv, vl, vnl));
    }
    return ps_total(a0, a1, a2, a3);
}

/* Step 3 for the lanes of group g at block scale d > 0: the nearest code
 * to S / d and its neighbours, the least error kept (ties: nearest first,
 * then the lower, then the higher, as the reference tries them). */
static void ps_mults_group(const ps_block *b, int g, const int *mt, float d, float lim, ps_pass *p) {
    const ev_f vd = ev_set1(d), vl = ev_set1(lim), vnl = ev_set1(-lim);
    const ev_f r = ev_div(ev_load(b->S + g * EV_LANES), vd);
    ev_i c0 = ev_iset1(0);
    ev_f bd = ev_abs(ev_sub(ev_set1((float)mt[0]), r));
    for (int c = 1; c < 4; ++c) {
        const ev_f dc = ev_abs(ev_sub(ev_set1((float)mt[c]), r));
        const ev_m closer = ev_lt(dc, bd);
        c0 = ev_iblend(closer, c0, ev_iset1(c));
        bd = ev_blend(closer, bd, dc);
    }
    const ev_m has_lo = ev_igt(c0, ev_iset1(0)), has_hi = ev_igt(ev_iset1(3), c0);
    const ev_i c_lo = ev_iblend(has_lo, c0, ev_isub(c0, ev_iset1(1)));
    const ev_i c_hi = ev_iblend(has_hi, c0, ev_iadd(c0, ev_iset1(1)));
    const ev_f m0 = ps_mult(mt, c0), m_lo = ps_mult(mt, c_lo), m_hi = ps_mult(mt, c_hi);
    const ev_f one = ev_set1(1.0f);
    const ev_f i0 = ev_div(one, ev_mul(m0, vd)), i_lo = ev_div(one, ev_mul(m_lo, vd));
    const ev_f i_hi = ev_div(one, ev_mul(m_hi, vd));
    ev_f best = ps_err(b, g, m0, vd, i0, vl, vnl), bi = i0;
    ev_i bc = c0;
    const ev_f e_lo = ps_err(b, g, m_lo, vd, i_lo, vl, vnl);
    ev_m win = ev_mand(has_lo, ev_lt(e_lo, best));
    best = ev_blend(win, best, e_lo);
    bi = ev_blend(win, bi, i_lo);
    bc = ev_iblend(win, bc, c_lo);
    const ev_f e_hi = ps_err(b, g, m_hi, vd, i_hi, vl, vnl);
    win = ev_mand(has_hi, ev_lt(e_hi, best));
    best = ev_blend(win, best, e_hi);
    bi = ev_blend(win, bi, i_hi);
    bc = ev_iblend(win, bc, c_hi);
    for (int e = 0; e < PS_SUB; ++e) {
        ev_store(p->q + PS_AT(g, e), ps_level(ev_mul(ev_load(b->x + PS_AT(g, e)), bi), vl, vnl));
    }
    ev_istore(p->code + g * EV_LANES, bc);
    ev_store(p->err + g * EV_LANES, best);
}

/* Step 3 for the block; returns its error (sub-blocks added in order). */
static double ps_mults(const ps_block *b, const int *mt, float d, float lim, ps_pass *p) {
    for (int g = 0; g < PS_GROUPS; ++g) ps_mults_group(b, g, mt, d, lim, p);
    double err = 0.0;
    for (int j = 0; j < PS_NSUB; ++j) err += (double)p->err[j];
    return err;
}

/* Where element i of the block (sub-block order) sits in the lanes. */
static inline int ps_at(int i) {
    const int j = i / PS_SUB;
    return PS_AT(j / EV_LANES, i % PS_SUB) + j % EV_LANES;
}

/* One multiplier table's fit (the reference's fit_table): its passes, the
 * better one, its error and block scale. */
typedef struct ps_tab {
    const int *mt;
    ps_pass p[2];
    ps_pass *best;
    double err;
    anvil_half d;
} ps_tab;

/* A table's least-squares scale for its best pass (step 4), or d0. */
/* binary16 of a least-squares scale (the reference's clamp and roundings). */
static anvil_half ps_half(double d) { return anvil_fp32_to_fp16(d > (double)PS_HALF_MAX ? PS_HALF_MAX : (float)d); }

static anvil_half ps_scale(double num, double den, anvil_half d0) {
    if (!(den > 0.0) || !(num > 0.0)) return d0;
    return ps_half(num / den);
}

/* Step 4 for n (1 or 2) tables at once, each sum in the reference's
 * element order: the sums are sequential, so two tables in one loop
 * overlap their latency. */
EV_INLINE void ps_refit(const ps_block *b, ps_tab *t, int n, anvil_half d0, anvil_half *d2) {
    double num0 = 0.0, den0 = 0.0, num1 = 0.0, den1 = 0.0;
    const ps_pass *p0 = t[0].best, *p1 = t[n - 1].best;
    for (int j = 0; j < PS_NSUB; ++j) {
        const int m0 = t[0].mt[p0->code[j]], m1 = t[n - 1].mt[p1->code[j]];
        for (int e = 0; e < PS_SUB; ++e) {
            const int at = PS_AT(j / EV_LANES, e) + j % EV_LANES;
            const double wt = (double)b->wt[at], x = (double)b->x[at];
            const double mv0 = (double)(m0 * (int)p0->q[at]);
            num0 += wt * mv0 * x;
            den0 += wt * mv0 * mv0;
            if (n == 2) {
                const double mv1 = (double)(m1 * (int)p1->q[at]);
                num1 += wt * mv1 * x;
                den1 += wt * mv1 * mv1;
            }
        }
    }
    d2[0] = ps_scale(num0, den0, d0);
    if (n == 2) d2[1] = ps_scale(num1, den1, d0);
}

/* Step 4 without its sequential sum, where that provably gives the same
 * scale: 1 and *d2 set, or 0 (then ps_refit decides). Each term is the
 * reference's, and den's terms are exact multiples of 2^-23 (wt >= 1 a
 * binary32, m v an integer, |m v| <= 208, wt <= 17) whose sums stay below
 * 2^28: exact in any order. num's sum, in lanes, is within
 * 2^-44 sum |terms| of the sequential one (both within 255 u of the exact
 * sum), so inside +-B, B = 2^-40 sum |terms|; the scale's roundings are
 * monotonic, so when both ends of that interval give one binary16 value
 * the sequential sum gives it too. Non-finite sums: 0. */
static int ps_refit_fast(const ps_block *b, const ps_tab *t, anvil_half d0, anvil_half *d2) {
    typedef float f4 __attribute__((vector_size(16)));
    typedef double d4 __attribute__((vector_size(32)));
    typedef int64_t q4 __attribute__((vector_size(32)));
    float mv[PS_NB] EV_ALIGN;
    for (int g = 0; g < PS_GROUPS; ++g) {
        const ev_f m = ps_mult(t->mt, ev_iload(t->best->code + g * EV_LANES));
        for (int e = 0; e < PS_SUB; ++e) ev_store(mv + PS_AT(g, e), ev_mul(m, ev_load(t->best->q + PS_AT(g, e))));
    }
    d4 num = { 0.0, 0.0, 0.0, 0.0 }, den = num, mag = num;
    for (int i = 0; i < PS_NB; i += 4) {
        f4 fw, fm, fx;
        memcpy(&fw, b->wt + i, sizeof fw);
        memcpy(&fm, mv + i, sizeof fm);
        memcpy(&fx, b->x + i, sizeof fx);
        const d4 wm = __builtin_convertvector(fw, d4) * __builtin_convertvector(fm, d4);
        const d4 tn = wm * __builtin_convertvector(fx, d4);
        num = num + tn;
        den = den + wm * __builtin_convertvector(fm, d4);
        mag = mag + (d4)((q4)tn & INT64_MAX); /* |tn| */
    }
    const double sn = (num[0] + num[1]) + (num[2] + num[3]), sd = (den[0] + den[1]) + (den[2] + den[3]);
    const double bound = ((mag[0] + mag[1]) + (mag[2] + mag[3])) * 0x1p-40;
    if (!isfinite(sn) || !isfinite(sd) || !isfinite(bound)) return 0;
    const double lo = sn - bound, hi = sn + bound;
    if (!(sd > 0.0) || hi <= 0.0) { /* the reference keeps d0 (den is exact; num <= hi <= 0) */
        *d2 = d0;
        return 1;
    }
    if (!(lo > 0.0)) return 0;
    const anvil_half a = ps_half(lo / sd), z = ps_half(hi / sd);
    if (a != z) return 0;
    *d2 = a;
    return 1;
}

/* Steps 2-4 for the narrow table and, where some sub-block's step is
 * below 0.4 of the largest, the wide one (the reference's WIDE_BELOW; it
 * tries wide only when narrow's final d is not 0: decided by the caller).
 * d0 > 0 is step 2's scale, the same for both tables. */
static int ps_tables(const ps_block *b, float lim, anvil_half d0, int wide, ps_tab *t) {
    const int n = wide ? 2 : 1;
    anvil_half d2[2];
    for (int i = 0; i < n; ++i) {
        t[i].mt = ps_mt[i];
        t[i].best = &t[i].p[0];
        t[i].d = d0;
        t[i].err = ps_mults(b, t[i].mt, anvil_fp16_to_fp32(d0), lim, t[i].best);
    }
    const int fast0 = ps_refit_fast(b, &t[0], d0, &d2[0]), fast1 = n == 2 && ps_refit_fast(b, &t[1], d0, &d2[1]);
    if (!fast0 && n == 2 && !fast1) ps_refit(b, t, 2, d0, d2);
    else if (!fast0) ps_refit(b, &t[0], 1, d0, &d2[0]);
    else if (n == 2 && !fast1) ps_refit(b, &t[1], 1, d0, &d2[1]);
    for (int i = 0; i < n; ++i) {
        if (d2[i] == d0) continue;
        const double err2 = ps_mults(b, t[i].mt, anvil_fp16_to_fp32(d2[i]), lim, &t[i].p[1]);
        if (err2 < t[i].err) {
            t[i].err = err2;
            t[i].d = d2[i];
            t[i].best = &t[i].p[1];
        }
    }
    return n;
}

/* Nearest integer of small floats (no ties arise where it is used). */
EV_INLINE ev_f ps_round(ev_f v) {
    const ev_f magic = ev_set1(12582912.0f);
    return ev_sub(ev_add(v, magic), magic);
}

/* Balanced-ternary digit `pl` (0: most significant) of k-digit levels v,
 * plus one (0..2): v / 3 and v / 9 never fall on a half. */
EV_INLINE ev_f ps_digit(ev_f v, unsigned k, unsigned pl) {
    const ev_f three = ev_set1(3.0f), third = ev_set1(1.0f / 3.0f), one = ev_set1(1.0f);
    if (k == 3) {
        const ev_f top = ps_round(ev_mul(v, ev_set1(1.0f / 9.0f)));
        if (pl == 0) return ev_add(top, one);
        v = ev_sub(v, ev_mul(ev_set1(9.0f), top));
        --pl;
    }
    const ev_f hi = ps_round(ev_mul(v, third));
    return ev_add(pl == 0 ? hi : ev_sub(v, ev_mul(three, hi)), one);
}

/* EV_LANES bytes of five trits of plane pl: byte m holds the digits of
 * v[m + s t], t = 0..4, as ceil(U * 256 / 243) (U <= 242: exact in binary32,
 * and the quotient truncates to the integer one). */
EV_INLINE void ps_trit_bytes(const float *v, int s, unsigned k, unsigned pl, uint8_t *out) {
    ev_f u = ps_digit(ev_load(v), k, pl);
    for (int t = 1; t < 5; ++t) u = ev_add(ev_mul(u, ev_set1(3.0f)), ps_digit(ev_load(v + s * t), k, pl));
    const ev_f num = ev_add(ev_mul(u, ev_set1(256.0f)), ev_set1(242.0f));
    ev_store_u8(out, ev_cvtt(ev_div(num, ev_set1(243.0f))));
}

/* The levels, codes and scale as the block's bytes (anvil/formats/ptqtp.h
 * gives the plane layout). */
static void ps_pack(const ps_pass *p, anvil_half d, unsigned k, uint8_t *block) {
    float v[PS_NB] EV_ALIGN;
    for (int i = 0; i < PS_NB; ++i) v[i] = p->q[ps_at(i)];
    for (unsigned pl = 0; pl < k; ++pl) {
        uint8_t *plane = block + pl * ANVIL_PTQTP_PLANE_BYTES;
        for (int m = 0; m < ANVIL_PTQTP_G0_BYTES; m += EV_LANES) {
            ps_trit_bytes(v + ANVIL_PTQTP_G0_ELEM0 + m, ANVIL_PTQTP_G0_BYTES, k, pl,
                          plane + ANVIL_PTQTP_G0_FIRST + m);
        }
        for (int m = 0; m < ANVIL_PTQTP_G1_BYTES; m += EV_LANES) {
            ps_trit_bytes(v + ANVIL_PTQTP_G1_ELEM0 + m, ANVIL_PTQTP_G1_BYTES, k, pl,
                          plane + ANVIL_PTQTP_G1_FIRST + m);
        }
        /* four bytes of four trits (and a fifth digit 0) */
        float last[4 * EV_LANES] EV_ALIGN;
        for (int t = 0; t < 4; ++t) {
            for (int l = 0; l < EV_LANES; ++l) {
                last[t * EV_LANES + l] =
                    l < ANVIL_PTQTP_G2_BYTES ? v[ANVIL_PTQTP_G2_ELEM0 + ANVIL_PTQTP_G2_BYTES * t + l] : 0.0f;
            }
        }
        ev_f u = ps_digit(ev_load(last), k, pl);
        for (int t = 1; t < 4; ++t)
            u = ev_add(ev_mul(u, ev_set1(3.0f)), ps_digit(ev_load(last + t * EV_LANES), k, pl));
        const ev_f num = ev_add(ev_mul(ev_mul(u, ev_set1(3.0f)), ev_set1(256.0f)), ev_set1(242.0f));
        uint8_t bytes[EV_LANES];
        ev_store_u8(bytes, ev_cvtt(ev_div(num, ev_set1(243.0f))));
        memcpy(plane + ANVIL_PTQTP_G2_FIRST, bytes, ANVIL_PTQTP_G2_BYTES);
    }
    uint32_t field = 0;
    for (int j = 0; j < PS_NSUB; ++j) field |= (uint32_t)p->code[j] << (ANVIL_PTQTPS_CODE_BITS * j);
    for (int i = 0; i < ANVIL_PTQTPS_SC_BYTES; ++i)
        block[ANVIL_PTQTPS_SC_OFFSET(k) + i] = (uint8_t)(field >> (8 * i));
    memcpy(block + ANVIL_PTQTPS_D_OFFSET(k), &d, sizeof d);
}

/* The block in lanes, with the reference's error weights 1 + |w| / rms
 * (rms: element i into sum i % 4, in double, then the four in order) and
 * wt w. */
static void ps_load(const float *w, ps_block *b) {
    typedef float f4 __attribute__((vector_size(16)));
    typedef double d4 __attribute__((vector_size(32)));
    d4 s = { 0.0, 0.0, 0.0, 0.0 };
    for (int i = 0; i < PS_NB; i += 4) {
        f4 v;
        memcpy(&v, w + i, sizeof v);
        const d4 dv = __builtin_convertvector(v, d4);
        s = s + dv * dv;
    }
    const float rms = (float)sqrt((((s[0] + s[1]) + s[2]) + s[3]) / (double)PS_NB);
    const float irms = rms > 0.0f ? 1.0f / rms : 0.0f;
    for (int j = 0; j < PS_NSUB; ++j) {
        for (int e = 0; e < PS_SUB; ++e) b->x[PS_AT(j / EV_LANES, e) + j % EV_LANES] = w[j * PS_SUB + e];
    }
    const ev_f one = ev_set1(1.0f), vi = ev_set1(irms);
    for (int i = 0; i < PS_NB; i += EV_LANES) {
        const ev_f x = ev_load(b->x + i), wt = ev_add(one, ev_mul(ev_abs(x), vi));
        ev_store(b->wt + i, wt);
        ev_store(b->wx + i, ev_mul(wt, x));
    }
}

static void ps_block_fit(const float *w, unsigned k, uint8_t *y) {
    const float lim = k == 2 ? 4.0f : 13.0f;
    ps_block b;
    ps_load(w, &b);
    for (int g = 0; g < PS_GROUPS; ++g) ps_steps(&b, g, lim, b.S);
    float smax = 0.0f, smin = PS_HALF_MAX;
    for (int j = 0; j < PS_NSUB; ++j) {
        smax = b.S[j] > smax ? b.S[j] : smax;
        smin = b.S[j] < smin ? b.S[j] : smin;
    }
    const anvil_half d0 = anvil_fp32_to_fp16(smax / 16.0f > PS_HALF_MAX ? PS_HALF_MAX : smax / 16.0f);
    if (!(anvil_fp16_to_fp32(d0) > 0.0f)) { /* every weight rounds to zero: levels, codes and d 0 */
        ps_pass zero;
        memset(&zero, 0, sizeof zero);
        ps_pack(&zero, 0, k, y);
        return;
    }
    ps_tab t[2];
    const int n = ps_tables(&b, lim, d0, smin < 0.4f * smax, t);
    if (n == 2 && t[0].d != 0 && t[1].err < t[0].err) {
        ps_pack(t[1].best, (anvil_half)(t[1].d | 0x8000u), k, y);
    } else {
        ps_pack(t[0].best, t[0].d, k, y);
    }
}

static void ev_blocks_ptqtp2s(const float *x, uint8_t *y, size_t nb) {
    for (size_t i = 0; i < nb; ++i) ps_block_fit(x + i * PS_NB, 2, y + i * ANVIL_PTQTPS_BLOCK_BYTES(2));
}

static void ev_blocks_ptqtp3s(const float *x, uint8_t *y, size_t nb) {
    for (size_t i = 0; i < nb; ++i) ps_block_fit(x + i * PS_NB, 3, y + i * ANVIL_PTQTPS_BLOCK_BYTES(3));
}

EV_ENCODER(ptqtp2s, ANVIL_TYPE_PTQTP2S, PS_NB, ANVIL_PTQTPS_BLOCK_BYTES(2), ev_blocks_ptqtp2s);
EV_ENCODER(ptqtp3s, ANVIL_TYPE_PTQTP3S, PS_NB, ANVIL_PTQTPS_BLOCK_BYTES(3), ev_blocks_ptqtp3s);

const anvil_weight_encoder *const EV_TABLE(ptqtps)[] = { &ev_enc_ptqtp2s, &ev_enc_ptqtp3s, NULL };

#endif /* ANVIL_SIMD_ENC_PTQTPS_H */
