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

/* The choice among candidates, eight per step in two vectors (lane k:
 * candidates j + k and j + 4 + k): each lane keeps its first strictly
 * smallest score (ggml's scan: from FLT_MAX, `d2 < best`, false for NaN);
 * the winner is the smallest score, ties to the smallest position. Scores
 * below FLT_MAX are never NaN, and never -0 (sums from +0), so equal
 * means tied. */
typedef struct enc_neon_best {
    float32x4_t best[2];
    int32x4_t at[2], pos[2];
} enc_neon_best;

static inline __attribute__((always_inline)) void enc_neon_best_init(enc_neon_best *b) {
    b->best[0] = b->best[1] = vdupq_n_f32(FLT_MAX);
    b->at[0] = b->at[1] = vdupq_n_s32(0);
    b->pos[0] = (int32x4_t){ 0, 1, 2, 3 };
    b->pos[1] = (int32x4_t){ 4, 5, 6, 7 };
}

/* Offers the scores d of half h (candidates pos[h]), only the lanes below
 * count where `tail`; then that half's positions move on by 8. */
static inline __attribute__((always_inline)) void enc_neon_best_offer(enc_neon_best *b, int h, float32x4_t d,
                                                                      int tail, int count) {
    uint32x4_t better = vcltq_f32(d, b->best[h]);
    if (tail) {
        better = vandq_u32(better, vcltq_s32(b->pos[h], vdupq_n_s32(count)));
    }
    b->best[h] = vbslq_f32(better, d, b->best[h]);
    b->at[h] = vbslq_s32(better, b->pos[h], b->at[h]);
    b->pos[h] = vaddq_s32(b->pos[h], vdupq_n_s32(8));
}

/* The winner's list position, or -1 when none scored below FLT_MAX. */
static inline __attribute__((always_inline)) int enc_neon_best_pick(const enc_neon_best *b) {
    const float m = vminvq_f32(vminq_f32(b->best[0], b->best[1]));
    if (!(m < FLT_MAX)) {
        return -1;
    }
    const float32x4_t mv = vdupq_n_f32(m);
    const int32x4_t none = vdupq_n_s32(INT32_MAX);
    const int32x4_t a0 = vbslq_s32(vceqq_f32(b->best[0], mv), b->at[0], none);
    const int32x4_t a1 = vbslq_s32(vceqq_f32(b->best[1], mv), b->at[1], none);
    return vminvq_s32(vminq_s32(a0, a1));
}

/* The errors of the four candidates of one lane block (cold_lattice.lanes:
 * row i holds element i's odd values 2l + 1 of candidates 4b .. 4b + 3),
 * each lane summed from 0 in element order (ggml's d2). Element i's error
 * for code l sits at bytes 4l .. 4l + 3 of its table (t1[i]: 16 bytes,
 * 3 levels; t2[i]: 32 bytes, 8 levels). The block's bytes doubled once
 * (2 (2l + 1) = 4l + 2); per element one TBL spreads each candidate's byte
 * over its lane, an add of (-2, -1, 0, 1) makes the byte indices
 * 4l .. 4l + 3, and one TBL looks its error up. */
static inline __attribute__((always_inline)) float32x4_t enc_neon_lane_scores(const uint8_t *blk, int dims, int wide,
                                                                              const uint8x16_t *t1, uint8x16x2_t q0,
                                                                              uint8x16x2_t q1, uint8x16x2_t q2,
                                                                              uint8x16x2_t q3) {
    const uint8x16_t spread0 = { 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3 };
    const uint8x16_t bytes = { 254, 255, 0, 1, 254, 255, 0, 1, 254, 255, 0, 1, 254, 255, 0, 1 };
    uint8x16_t rows[2];
    for (int r = 0; r < dims / 4; ++r) {
        rows[r] = vld1q_u8(blk + 16 * r);
        rows[r] = vaddq_u8(rows[r], rows[r]);
    }
    float32x4_t d = vdupq_n_f32(0.0f);
    for (int i = 0; i < dims; ++i) {
        const uint8x16_t spread = vaddq_u8(spread0, vdupq_n_u8((uint8_t)(4 * (i % 4))));
        const uint8x16_t idx = vaddq_u8(vqtbl1q_u8(rows[i / 4], spread), bytes);
        /* (the pairs by value: GCC keeps them in registers then) */
        const uint8x16x2_t q = i == 0 ? q0 : i == 1 ? q1 : i == 2 ? q2 : q3;
        const uint8x16_t e = wide ? vqtbl2q_u8(q, idx) : vqtbl1q_u8(t1[i], idx);
        d = vaddq_f32(d, vreinterpretq_f32_u8(e));
    }
    return d;
}

/* The sweep's neighbour search (best_in_lanes in cold_enc_search.c) on a
 * lattice with lane blocks: dims elements of `levels` (8 with dims 4, or
 * 3 with dims 8), values scale (2l + 1). Element i's error for code l is
 * w[i] (scale (2l + 1) - x[i])^2, computed once per code with ggml's
 * expression (scale * odd, minus x, times w, times diff). Two lane blocks
 * (eight candidates) per step; a last block alone where the list ends
 * within four (its lanes past the end, repeats of the last candidate, are
 * masked all the same). The grid index of the winner, its codes to L; -1
 * when none scores below FLT_MAX. */
static inline __attribute__((always_inline)) int anvil_enc_neon_best_lanes(const cold_lattice *lat, int dims,
                                                                           int levels, const uint16_t *cand,
                                                                           const float *x, const float *w,
                                                                           float scale, int8_t *L) {
    /* 8 levels only with dims 4 (the test, where dims is a constant and
     * levels may not be, keeps the tables' bounds visible) */
    const int wide = levels == 8 && dims == 4;
    uint8x16_t t1[8];
    uint8x16x2_t t2[4] = { 0 };
    const float32x4_t odd_lo = { 1.0f, 3.0f, 5.0f, wide ? 7.0f : 5.0f };
    const float32x4_t odd_hi = { 9.0f, 11.0f, 13.0f, 15.0f };
    const float32x4_t so_lo = vmulq_f32(vdupq_n_f32(scale), odd_lo), so_hi = vmulq_f32(vdupq_n_f32(scale), odd_hi);
    for (int i = 0; i < dims; ++i) {
        const float32x4_t xi = vdupq_n_f32(x[i]), wi = vdupq_n_f32(w[i]);
        const float32x4_t dlo = vsubq_f32(so_lo, xi);
        const uint8x16_t elo = vreinterpretq_u8_f32(vmulq_f32(vmulq_f32(wi, dlo), dlo));
        if (wide) {
            const float32x4_t dhi = vsubq_f32(so_hi, xi);
            t2[i].val[0] = elo;
            t2[i].val[1] = vreinterpretq_u8_f32(vmulq_f32(vmulq_f32(wi, dhi), dhi));
        } else {
            t1[i] = elo;
        }
    }
    const int count = cand[0], blk = dims * COLD_LANES;
    const uint8_t *lane = (const uint8_t *)(cand + 1 + count);
    enc_neon_best b;
    enc_neon_best_init(&b);
#define ENC_NEON_SCORES(at) enc_neon_lane_scores((at), dims, wide, t1, t2[0], t2[1], t2[2], t2[3])
    int j = 0;
    for (; j + 2 * COLD_LANES <= count; j += 2 * COLD_LANES, lane += 2 * blk) {
        const float32x4_t d0 = ENC_NEON_SCORES(lane), d1 = ENC_NEON_SCORES(lane + blk);
        enc_neon_best_offer(&b, 0, d0, 0, count);
        enc_neon_best_offer(&b, 1, d1, 0, count);
    }
    if (j + COLD_LANES < count) { /* the last two blocks, the second part full */
        const float32x4_t d0 = ENC_NEON_SCORES(lane), d1 = ENC_NEON_SCORES(lane + blk);
        enc_neon_best_offer(&b, 0, d0, 0, count);
        enc_neon_best_offer(&b, 1, d1, 1, count);
    } else if (j < count) { /* the last block */
        enc_neon_best_offer(&b, 0, ENC_NEON_SCORES(lane), 1, count);
    }
#undef ENC_NEON_SCORES
    const int at = enc_neon_best_pick(&b);
    if (at < 0) {
        return -1;
    }
    const int g = cand[1 + at];
    memcpy(L, lat->code + (size_t)g * (size_t)dims, (size_t)dims);
    return g;
}

/* ggml's iq1_find_best_neighbour2 on the IQ1 lattice (8 elements of 3
 * levels, values scale * val[code]; no lane blocks, the candidates' codes
 * packed 2 bits per element right after the list, 8 words of padding
 * after the last list): the grid index of the first candidate with the
 * smallest w-weighted squared error, or -1 when none scores below
 * FLT_MAX. Each element's three errors are computed once with ggml's
 * expression; eight candidates per step from one load of their packed
 * codes: per element the code c (a shift and a mask) becomes the byte
 * indices 4c .. 4c + 3 of its error (c * 0x0404 | 0x0100: bytes 4c,
 * 4c + 1 of a 16-bit lane; + 0x0202 the next two; a zip), and one TBL per
 * four candidates looks it up (code 3, read only past the list's end,
 * repeats code 2's). */
static inline int anvil_enc_neon_iq1_candidate(const uint16_t *cand, const float *x, const float *w, float scale,
                                               const float val[3]) {
    uint8x16_t tab[8];
    const float32x4_t v = { val[0], val[1], val[2], val[2] };
    const float32x4_t sv = vmulq_f32(vdupq_n_f32(scale), v);
    for (int i = 0; i < 8; ++i) {
        const float32x4_t diff = vsubq_f32(sv, vdupq_n_f32(x[i]));
        tab[i] = vreinterpretq_u8_f32(vmulq_f32(vmulq_f32(vdupq_n_f32(w[i]), diff), diff));
    }
    const int count = cand[0];
    const uint16_t *packed = cand + 1 + count;
    const uint16x8_t three = vdupq_n_u16(3), pair = vdupq_n_u16(0x0404);
    const uint16x8_t lo_pair = vdupq_n_u16(0x0100), hi_pair = vdupq_n_u16(0x0202);
    enc_neon_best b;
    enc_neon_best_init(&b);
    for (int j = 0; j < count; j += 8) {
        const uint16x8_t u = vld1q_u16(packed + j);
        float32x4_t d0 = vdupq_n_f32(0.0f), d1 = d0;
        for (int i = 0; i < 8; ++i) {
            const uint16x8_t c = vandq_u16(vshlq_u16(u, vdupq_n_s16((int16_t)(-2 * i))), three);
            const uint16x8_t a = vorrq_u16(vmulq_u16(c, pair), lo_pair);
            const uint16x8_t a2 = vaddq_u16(a, hi_pair);
            d0 = vaddq_f32(d0, vreinterpretq_f32_u8(vqtbl1q_u8(tab[i], vreinterpretq_u8_u16(vzip1q_u16(a, a2)))));
            d1 = vaddq_f32(d1, vreinterpretq_f32_u8(vqtbl1q_u8(tab[i], vreinterpretq_u8_u16(vzip2q_u16(a, a2)))));
        }
        const int tail = j + 8 > count;
        enc_neon_best_offer(&b, 0, d0, tail, count);
        enc_neon_best_offer(&b, 1, d1, tail, count);
    }
    const int at = enc_neon_best_pick(&b);
    return at < 0 ? -1 : cand[1 + at];
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
