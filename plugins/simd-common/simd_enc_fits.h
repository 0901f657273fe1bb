/* SPDX-License-Identifier: MIT */
/*
 * The scale searches the K-quant and flat-family SIMD encoders share, one
 * group per lane (see simd_enc_common.h): ports of ggml's
 * make_qkx2_quants / make_qkx3_quants (ev_fit_affine: one routine, their
 * difference being the grid parameters and the weights), make_qx_quants
 * with rmse_type 1 (ev_fit_symmetric) and make_q3_quants
 * (simd_enc_kquants.h), each lane performing the reference's sequence of
 * operations (plugins/ref/kquants_search.c) for its group.
 */
#ifndef ANVIL_SIMD_ENC_FITS_H
#define ANVIL_SIMD_ENC_FITS_H

#include "ref/kquants_search.h"
#include "simd_enc_common.h"

#define EV_KQ_EPS ANVIL_KQ_GROUP_EPS

static inline int ev_clamp_int(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* ---- make_qkx2_quants / make_qkx3_quants, one group per lane -----------------
 * Fit x ~ scale * L - neg_min, L in [0, nmax], weighted; codes of the
 * winner: clamp(nearest(iscale * (x - gmin)), 0, nmax). */
typedef struct ev_affine_fit {
    ev_f scale, neg_min, iscale, gmin;
} ev_affine_fit;

EV_INLINE ev_affine_fit ev_fit_affine(int n, int nmax, const float *xt, const float *wt, float rmin, float rdelta,
                                      int nstep, int use_mad) {
    const ev_f zero = ev_set1(0.0f);
    ev_f min = ev_load(xt), max = min;
    ev_f sum_w = ev_load(wt);
    ev_f sum_x = ev_mul(sum_w, min);
    for (int i = 1; i < n; ++i) {
        const ev_f x = ev_load(xt + i * EV_LANES), w = ev_load(wt + i * EV_LANES);
        min = ev_min_lt(x, min); /* if (x < min) min = x */
        max = ev_max_gt(x, max); /* if (x > max) max = x */
        sum_w = ev_add(sum_w, w);
        sum_x = ev_add(sum_x, ev_mul(w, x));
    }
    min = ev_blend(ev_gt(min, zero), min, zero);
    const ev_m flat = ev_eq(max, min); /* the reference returns early: L = 0 */
    const ev_f flat_min = min;

    /* Candidate 0: nmax + 1 levels over [min, max]. */
    ev_f iscale = ev_div(ev_set1((float)nmax), ev_sub(max, min));
    ev_f scale = ev_div(ev_set1(1.0f), iscale);
    ev_f best = zero;
    for (int i = 0; i < n; ++i) {
        const ev_f x = ev_load(xt + i * EV_LANES), w = ev_load(wt + i * EV_LANES);
        const ev_f fl = ev_cvt(ev_clamp(ev_nearest(ev_mul(iscale, ev_sub(x, min))), 0, nmax));
        ev_f diff = ev_sub(ev_add(ev_mul(scale, fl), min), x);
        diff = use_mad ? ev_abs(diff) : ev_mul(diff, diff);
        best = ev_add(best, ev_mul(w, diff));
    }
    ev_f g_iscale = iscale, g_min = min;

    /* Stretched grids, each solved in closed form; the offset moves when a
     * candidate wins, and the next grids start from it (per lane). */
    float lf[32 * EV_LANES] EV_ALIGN;
    for (int is = 0; is <= nstep; ++is) {
        const float num = rmin + rdelta * (float)is + (float)nmax;
        const ev_f isc = ev_div(ev_set1(num), ev_sub(max, min));
        ev_f sl = zero, sl2 = zero, sxl = zero;
        for (int i = 0; i < n; ++i) {
            const ev_f x = ev_load(xt + i * EV_LANES), w = ev_load(wt + i * EV_LANES);
            const ev_f fl = ev_cvt(ev_clamp(ev_nearest(ev_mul(isc, ev_sub(x, min))), 0, nmax));
            ev_store(lf + i * EV_LANES, fl);
            const ev_f wl = ev_mul(w, fl);
            sl = ev_add(sl, wl);
            sl2 = ev_add(sl2, ev_mul(wl, fl));
            sxl = ev_add(sxl, ev_mul(wl, x));
        }
        const ev_f D = ev_sub(ev_mul(sum_w, sl2), ev_mul(sl, sl));
        const ev_m ok = ev_gt(D, zero);
        if (!ev_many(ok)) continue;
        ev_f this_scale = ev_div(ev_sub(ev_mul(sum_w, sxl), ev_mul(sum_x, sl)), D);
        ev_f this_min = ev_div(ev_sub(ev_mul(sl2, sum_x), ev_mul(sl, sxl)), D);
        const ev_m pos = ev_gt(this_min, zero);
        this_min = ev_blend(pos, this_min, zero);
        this_scale = ev_blend(pos, this_scale, ev_div(sxl, sl2));
        ev_f cur = zero;
        for (int i = 0; i < n; ++i) {
            const ev_f x = ev_load(xt + i * EV_LANES), w = ev_load(wt + i * EV_LANES);
            ev_f diff = ev_sub(ev_add(ev_mul(this_scale, ev_load(lf + i * EV_LANES)), this_min), x);
            diff = use_mad ? ev_abs(diff) : ev_mul(diff, diff);
            cur = ev_add(cur, ev_mul(w, diff));
        }
        const ev_m win = ev_mand(ok, ev_lt(cur, best));
        g_iscale = ev_blend(win, g_iscale, isc);
        g_min = ev_blend(win, g_min, min);
        best = ev_blend(win, best, cur);
        scale = ev_blend(win, scale, this_scale);
        min = ev_blend(win, min, this_min);
    }
    ev_affine_fit r;
    r.scale = ev_blend(flat, scale, zero);
    r.neg_min = ev_neg(ev_blend(flat, min, flat_min));
    r.iscale = ev_blend(flat, g_iscale, zero);
    r.gmin = ev_blend(flat, g_min, zero);
    return r;
}

/* Search codes of an affine group (for a group whose scale quantizes to 0). */
static void ev_affine_codes(const float *x, int n, int nmax, float iscale, float gmin, int32_t *L) {
    for (int i = 0; i < n; ++i) L[i] = ev_clamp_int(anvil_nearest_int(iscale * (x[i] - gmin)), 0, nmax);
}

/* ---- make_qx_quants (rmse_type 1), one group per lane -------------------------
 * Over n (<= 32) elements per lane, weights wt (transposed) or, with wt
 * NULL, x^2. Returns the scale per lane; the winner's grid is iscale_out
 * (codes clamp(nearest(iscale * x), -nmax, nmax - 1) + nmax), and tiny
 * lanes (all below EV_KQ_EPS: scale 0, codes 0) are flagged in tiny_out. */
EV_INLINE ev_f ev_fit_symmetric(const float *xt, const float *wt, int n, int nmax, ev_f *iscale_out, ev_m *tiny_out) {
    const ev_f zero = ev_set1(0.0f);
    ev_f amax, max;
    ev_lanes_absmax(xt, n, &amax, &max);
    const ev_m tiny = ev_lt(amax, ev_set1(EV_KQ_EPS));
    ev_f w[32], wx[32];
    for (int i = 0; i < n; ++i) {
        const ev_f x = ev_load(xt + i * EV_LANES);
        w[i] = wt != NULL ? ev_load(wt + i * EV_LANES) : ev_mul(x, x);
        wx[i] = ev_mul(w[i], x);
    }
    /* Every |iscale * x| is at most about nmax + 1 (|x| <= amax = |max|)
     * where the group is not tiny, and tiny groups' results are discarded:
     * the codes may be clamped as floats (ev_nearest_clamped). */
    ev_f best_iscale = ev_div(ev_set1((float)(-nmax)), max);
    ev_f sumlx = zero, suml2 = zero;
    for (int i = 0; i < n; ++i) {
        const ev_f fl = ev_cvt(ev_nearest_clamped(ev_mul(best_iscale, ev_load(xt + i * EV_LANES)), -nmax, nmax - 1));
        sumlx = ev_add(sumlx, ev_mul(wx[i], fl));
        suml2 = ev_add(suml2, ev_mul(ev_mul(w[i], fl), fl));
    }
    ev_f scale = ev_blend(ev_ne(suml2, zero), zero, ev_div(sumlx, suml2));
    ev_f best = ev_mul(scale, sumlx);
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        const ev_f isc = ev_div(ev_set1(-((float)nmax + 0.1f * (float)is)), max);
        sumlx = suml2 = zero;
        for (int i = 0; i < n; ++i) {
            const ev_f fl = ev_cvt(ev_nearest_clamped(ev_mul(isc, ev_load(xt + i * EV_LANES)), -nmax, nmax - 1));
            sumlx = ev_add(sumlx, ev_mul(wx[i], fl));
            suml2 = ev_add(suml2, ev_mul(ev_mul(w[i], fl), fl));
        }
        const ev_m win = ev_mand(ev_gt(suml2, zero), ev_gt(ev_mul(sumlx, sumlx), ev_mul(best, suml2)));
        const ev_f s = ev_div(sumlx, suml2);
        scale = ev_blend(win, scale, s);
        best = ev_blend(win, best, ev_mul(s, sumlx));
        best_iscale = ev_blend(win, best_iscale, isc);
    }
    *iscale_out = best_iscale;
    *tiny_out = tiny;
    return ev_blend(tiny, scale, zero);
}

/* Codes of a symmetric fit's winner (for a group whose codes are needed
 * after the search): 0 for a tiny group. */
static void ev_symmetric_codes(const float *x, int n, int nmax, float iscale, int tiny, int32_t *L) {
    for (int i = 0; i < n; ++i) {
        L[i] = tiny ? 0 : ev_clamp_int(anvil_nearest_int(iscale * x[i]), -nmax, nmax - 1) + nmax;
    }
}

#endif
