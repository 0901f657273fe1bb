/* SPDX-License-Identifier: MIT */
/*
 * NEON versions of the encoders' hot loops, for aarch64 (where NEON is
 * part of the base architecture: no run-time probe): the lattice
 * encoders' candidate scoring (ggml's iq3_find_best_neighbour,
 * iq2_find_best_neighbour, iq1_find_best_neighbour2 over a candidate list)
 * and make_qp_quants' eight trial grids. Each returns exactly what the
 * portable code returns: every lane performs one of ggml's scalar
 * computations, with its IEEE operations in ggml's order (the build's
 * -ffp-contract=off keeps GCC from fusing the intrinsics' multiply and
 * add, which its arm_neon.h writes as plain vector operators), and the
 * choice among candidates is ggml's first strictly smallest error.
 *
 * Private to plugins/ref: included by cold_enc_search.c,
 * cold_enc_iq1_search.c and kquants_search.c on aarch64 only (elsewhere
 * this header defines nothing). Static inline functions; the callers pass
 * the shape (dims, levels) as constants where they can, so the loops over
 * elements unroll.
 */
#ifndef ANVIL_REF_ENC_NEON_H
#define ANVIL_REF_ENC_NEON_H

#if defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
#define ANVIL_ENC_NEON 1

#include <arm_neon.h>
#include <float.h>
#include <stdint.h>
#include <string.h>

#include "ref/cold_enc_lattice.h"

/* The position in the list of the candidate with the smallest error, the
 * first of equals, or -1 when none scores below FLT_MAX. packed[j] holds
 * candidate j's codes, `bits` (2 or 3) per element, element 0 lowest (the
 * lattice's packed codes, cold_lattice.packed; 8 words of padding follow
 * the last list, so a load of eight from any j < count stays inside).
 * tab holds each element's error per code as floats: with 2-bit codes
 * one vector per element (codes 0..3), with 3-bit codes two (0..3, 4..7).
 *
 * Eight candidates per step, in two vectors (lane k: candidates j + k and
 * j + 4 + k). An element's error is looked up by code with one TBL per
 * four candidates: the code c, from the packed word by a shift and a mask,
 * becomes the byte indices 4c .. 4c + 3 of its float by one multiply-add
 * (c * 0x0404 + 0x0100: bytes 4c, 4c + 1 of a 16-bit lane; +0x0202 the
 * next two) and a zip. Each lane sums its errors from 0 in element order
 * (ggml's d2) and keeps its first strictly smallest score; lanes past the
 * list's end (the last step only) never take one. The winner: the
 * smallest score, ties to the smallest position. Scores below FLT_MAX are
 * never NaN, and never -0 (a sum from +0), so equal means tied. */
static inline __attribute__((always_inline)) int
anvil_enc_neon_first_best(const uint16_t *packed, int count, int dims, int bits, const float32x4_t *tab) {
    const uint16x8_t mask = vdupq_n_u16((uint16_t)((1u << bits) - 1u));
    const uint16x8_t lo_pair = vdupq_n_u16(0x0100), hi_pair = vdupq_n_u16(0x0202);
    float32x4_t best0 = vdupq_n_f32(FLT_MAX), best1 = best0;
    int32x4_t at0 = vdupq_n_s32(0), at1 = at0;
    int32x4_t pos0 = { 0, 1, 2, 3 }, pos1 = { 4, 5, 6, 7 };
    const int32x4_t eight = vdupq_n_s32(8), vcount = vdupq_n_s32(count);
    for (int j = 0; j < count; j += 8) {
        const uint16x8_t u = vld1q_u16(packed + j);
        float32x4_t d0 = vdupq_n_f32(0.0f), d1 = d0;
        for (int i = 0; i < dims; ++i) {
            const uint16x8_t c = vandq_u16(vshlq_u16(u, vdupq_n_s16((int16_t)(-bits * i))), mask);
            const uint16x8_t a = vmlaq_n_u16(lo_pair, c, 0x0404);
            const uint16x8_t b = vaddq_u16(a, hi_pair);
            const uint8x16_t i0 = vreinterpretq_u8_u16(vzip1q_u16(a, b));
            const uint8x16_t i1 = vreinterpretq_u8_u16(vzip2q_u16(a, b));
            float32x4_t e0, e1;
            if (bits == 3) {
                const uint8x16x2_t t = { { vreinterpretq_u8_f32(tab[2 * i]), vreinterpretq_u8_f32(tab[2 * i + 1]) } };
                e0 = vreinterpretq_f32_u8(vqtbl2q_u8(t, i0));
                e1 = vreinterpretq_f32_u8(vqtbl2q_u8(t, i1));
            } else {
                const uint8x16_t t = vreinterpretq_u8_f32(tab[i]);
                e0 = vreinterpretq_f32_u8(vqtbl1q_u8(t, i0));
                e1 = vreinterpretq_f32_u8(vqtbl1q_u8(t, i1));
            }
            d0 = vaddq_f32(d0, e0);
            d1 = vaddq_f32(d1, e1);
        }
        uint32x4_t better0 = vcltq_f32(d0, best0), better1 = vcltq_f32(d1, best1);
        if (j + 8 > count) {
            better0 = vandq_u32(better0, vcltq_s32(pos0, vcount));
            better1 = vandq_u32(better1, vcltq_s32(pos1, vcount));
        }
        best0 = vbslq_f32(better0, d0, best0);
        best1 = vbslq_f32(better1, d1, best1);
        at0 = vbslq_s32(better0, pos0, at0);
        at1 = vbslq_s32(better1, pos1, at1);
        pos0 = vaddq_s32(pos0, eight);
        pos1 = vaddq_s32(pos1, eight);
    }
    const float m = vminvq_f32(vminq_f32(best0, best1));
    if (!(m < FLT_MAX)) {
        return -1;
    }
    const float32x4_t mv = vdupq_n_f32(m);
    const int32x4_t none = vdupq_n_s32(INT32_MAX);
    const int32x4_t a0 = vbslq_s32(vceqq_f32(best0, mv), at0, none);
    const int32x4_t a1 = vbslq_s32(vceqq_f32(best1, mv), at1, none);
    return vminvq_s32(vminq_s32(a0, a1));
}

/* The sweep's neighbour search (best_in_lanes in cold_enc_search.c) on a
 * lattice with packed codes: dims elements of `levels` (8: 3-bit codes,
 * dims <= 4; 3: 2-bit codes, dims <= 8), values scale (2l + 1). Element
 * i's error for code l is w[i] (scale (2l + 1) - x[i])^2, computed once per
 * code with ggml's expression (scale * odd, minus x, times w, times diff);
 * code 3 of a 3-level lattice (read only past the list's end) repeats code
 * 2's. The grid index of the winner, its codes to L; -1 when none scores
 * below FLT_MAX. */
static inline __attribute__((always_inline)) int anvil_enc_neon_best_lanes(const cold_lattice *lat, int dims,
                                                                           int levels, const uint16_t *cand,
                                                                           const float *x, const float *w,
                                                                           float scale, int8_t *L) {
    /* 3-bit codes: levels 8 with dims <= 4 (the test, where dims is a
     * constant and levels may not be, keeps tab's bounds visible) */
    const int wide = levels == 8 && dims <= 4;
    float32x4_t tab[8];
    const float32x4_t odd_lo = { 1.0f, 3.0f, 5.0f, wide ? 7.0f : 5.0f };
    const float32x4_t odd_hi = { 9.0f, 11.0f, 13.0f, 15.0f };
    const float32x4_t so_lo = vmulq_f32(vdupq_n_f32(scale), odd_lo), so_hi = vmulq_f32(vdupq_n_f32(scale), odd_hi);
    for (int i = 0; i < dims; ++i) {
        const float32x4_t xi = vdupq_n_f32(x[i]), wi = vdupq_n_f32(w[i]);
        const float32x4_t dlo = vsubq_f32(so_lo, xi);
        if (wide) {
            const float32x4_t dhi = vsubq_f32(so_hi, xi);
            tab[2 * i] = vmulq_f32(vmulq_f32(wi, dlo), dlo);
            tab[2 * i + 1] = vmulq_f32(vmulq_f32(wi, dhi), dhi);
        } else {
            tab[i] = vmulq_f32(vmulq_f32(wi, dlo), dlo);
        }
    }
    const int j = anvil_enc_neon_first_best(cold_packed_codes(lat, cand), cand[0], dims, wide ? 3 : 2, tab);
    if (j < 0) {
        return -1;
    }
    const int g = cand[1 + j];
    memcpy(L, lat->code + (size_t)g * (size_t)dims, (size_t)dims);
    return g;
}

/* ggml's iq1_find_best_neighbour2 (the IQ1 lattice: 8 elements of 3
 * levels, values scale * val[code], packed codes right after the list):
 * the grid index of the first candidate with the smallest w-weighted
 * squared error, or -1 when none scores below FLT_MAX. Each element's
 * three errors are computed once with ggml's expression. */
static inline int anvil_enc_neon_iq1_candidate(const uint16_t *cand, const float *x, const float *w, float scale,
                                               const float val[3]) {
    float32x4_t tab[8];
    const float32x4_t v = { val[0], val[1], val[2], val[2] };
    const float32x4_t sv = vmulq_f32(vdupq_n_f32(scale), v);
    for (int i = 0; i < 8; ++i) {
        const float32x4_t diff = vsubq_f32(sv, vdupq_n_f32(x[i]));
        tab[i] = vmulq_f32(vmulq_f32(vdupq_n_f32(w[i]), diff), diff);
    }
    const int count = cand[0];
    const int j = anvil_enc_neon_first_best(cand + 1 + count, count, 8, 2, tab);
    return j < 0 ? -1 : cand[1 + j];
}

/* make_qp_quants' eight trial grids (qp_trials in kquants_search.c), the
 * trials in the lanes of two vectors: per element, ggml's nearest_int
 * (the 1.5 * 2^23 trick: add, mask, subtract), the upper clamp at nmax,
 * diff = x - scale * l, and the error qw * diff * diff added in element
 * order. */
static inline void anvil_enc_neon_qp_trials(int n, int nmax, const float *x, const float *qw, const float *iscale,
                                            const float *scale, float *mse) {
    const float32x4_t vi0 = vld1q_f32(iscale), vi1 = vld1q_f32(iscale + 4);
    const float32x4_t vs0 = vld1q_f32(scale), vs1 = vld1q_f32(scale + 4);
    const float32x4_t magic = vdupq_n_f32(12582912.f);
    const int32x4_t mant = vdupq_n_s32(0x007fffff), half = vdupq_n_s32(0x00400000), top = vdupq_n_s32(nmax);
    float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = acc0;
    for (int i = 0; i < n; ++i) {
        const float32x4_t xi = vdupq_n_f32(x[i]), wi = vdupq_n_f32(qw[i]);
        const float32x4_t r0 = vaddq_f32(vmulq_f32(vi0, xi), magic);
        const float32x4_t r1 = vaddq_f32(vmulq_f32(vi1, xi), magic);
        int32x4_t l0 = vsubq_s32(vandq_s32(vreinterpretq_s32_f32(r0), mant), half);
        int32x4_t l1 = vsubq_s32(vandq_s32(vreinterpretq_s32_f32(r1), mant), half);
        l0 = vminq_s32(l0, top);
        l1 = vminq_s32(l1, top);
        const float32x4_t diff0 = vsubq_f32(xi, vmulq_f32(vs0, vcvtq_f32_s32(l0)));
        const float32x4_t diff1 = vsubq_f32(xi, vmulq_f32(vs1, vcvtq_f32_s32(l1)));
        acc0 = vaddq_f32(acc0, vmulq_f32(vmulq_f32(wi, diff0), diff0));
        acc1 = vaddq_f32(acc1, vmulq_f32(vmulq_f32(wi, diff1), diff1));
    }
    vst1q_f32(mse, acc0);
    vst1q_f32(mse + 4, acc1);
}

#endif
#endif
