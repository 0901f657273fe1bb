/* SPDX-License-Identifier: MIT */
/*
 * The scale sweep shared by the IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS and IQ2_S
 * encoders (the inner part of ggml's quantize_row_<t>_impl), and the
 * helpers the lattice encoders share (IQ1_S and IQ1_M too). Private to
 * cold_enc_*.c.
 */
#ifndef ANVIL_REF_COLD_ENC_SEARCH_H
#define ANVIL_REF_COLD_ENC_SEARCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "anvil/numeric.h"
#include "ref/cold_enc_lattice.h"

/* How the sweep ends: which groups are rounded again at the fitted scale
 * before the final refit. */
typedef enum cold_refine {
    COLD_REFINE_OFF_GRID, /* the groups last snapped onto the grid, if any (IQ3_XXS, IQ2_XS, IQ2_S) */
    COLD_REFINE_ALL,      /* every group, if any was snapped (IQ3_S) */
    COLD_REFINE_ALWAYS    /* every group, whenever the scale is positive (IQ2_XXS) */
} cold_refine;

/* How one format runs the sweep. For a group of n magnitudes xval (>= 0,
 * but one may be negative where a sign parity is forced) the trial scales
 * are
 *     id = (2 max_q - 1 + is * step) / max,   is = -steps .. steps,
 * each element's code is nearest_int((id * x - 1) / 2) clamped to
 * [0, max_q - 1], off-grid points are snapped to their best candidate, and
 * the trial with the best weighted fit (sumqx^2 / sumq2, strictly better
 * wins) is kept. Then groups are re-rounded at the fitted scale (`refine`)
 * and the scale refitted. */
typedef struct cold_sweep {
    const cold_lattice *lat;
    int n;             /* elements: 32 (IQ3, IQ2_XXS) or 16 (IQ2_XS, IQ2_S) */
    int max_q;         /* ggml's kMaxQ: 8 (IQ3) or 3 (IQ2) */
    float step;        /* 0.2f (IQ3) or 0.1f (IQ2) */
    int steps;         /* 15 (IQ3_XXS), 9 (IQ3_S, IQ2_XS, IQ2_S) or 6 (IQ2_XXS) */
    int start_on_grid; /* ggml's is_on_grid before any trial: 1, but 0 in IQ3_S */
    cold_refine refine;
} cold_sweep;

/* ggml's first scale, kept when no trial wins: max / (2 max_q - 1) (all
 * but IQ2_XXS, which starts from make_qp_quants' scale: anvil_kq_fit_positive). */
static inline float cold_sweep_first_scale(const cold_sweep *p, float max) { return max / (float)(2 * p->max_q - 1); }

/* The instruction sets the sweep and its neighbour searches have paths
 * for. Every path gives the same results (the tests compare them). */
typedef enum cold_isa {
    COLD_ISA_PORTABLE, /* generic vectors on the build's baseline */
    COLD_ISA_SIMD,     /* 8 lanes on AVX2 (x86-64), NEON on aarch64 */
    COLD_ISA_WIDE,     /* 16 lanes on AVX-512F (x86-64) */
    COLD_ISA_BEST      /* the widest that runs here: what the encoders use */
} cold_isa;

/* 1 where the path runs on this CPU and build (AVX2 and AVX-512F as the
 * host's CPU features allow: ref/cpu_probe.h), else 0. */
int anvil_cold_isa_runs(cold_isa isa);

/* Runs the sweep from scale0 (the scale kept when no trial wins). On
 * ANVIL_OK, L[0..n) holds the level codes of on-grid points (all 0 when
 * no trial won and nothing was refined) and *scale the fitted scale (it
 * may be negative or NaN; the caller does what ggml does with that).
 * ANVIL_E_UNSUPPORTED where ggml's search fails its assertion (no
 * candidate scores below FLT_MAX: the squared errors overflowed or are
 * NaN); ANVIL_E_INTERNAL for a shape it was not built for (a lattice
 * without lane blocks, more than 31 trials or 32 elements). The paths:
 * - AVX2: the same lane code with 8 trials per vector
 *   (cold_enc_sweep_body.h), whose candidate searches score 8 candidates
 *   per vector, looking each element's error up by code (from the list's
 *   packed codes) in a table of the per-code errors (each computed by
 *   ggml's expression) instead of recomputing it per candidate: the same
 *   floats, summed in the same order, the same first-minimum choice.
 * - AVX-512F: 16 trials per vector and 16 candidates per search vector
 *   (one vector holds 86 % of IQ3_XXS's lists).
 * - aarch64: the 4-trial body with its candidate searches in NEON
 *   (ref/enc_neon.h: the errors looked up by TBL from the lists' lane
 *   blocks), always (NEON is baseline there). */
int anvil_cold_sweep(const cold_sweep *p, const float *xval, const float *weight, const float *waux, float max,
                     float scale0, int8_t *L, float *scale);

/* anvil_cold_sweep on one path (COLD_ISA_BEST: anvil_cold_sweep's):
 * ANVIL_E_INTERNAL where it does not run here (anvil_cold_isa_runs). For
 * the tests that check the paths agree. */
int anvil_cold_sweep_isa(const cold_sweep *p, const float *xval, const float *weight, const float *waux, float max,
                         float scale0, int8_t *L, float *scale_out, cold_isa isa);

/* The sweep's neighbour search (ggml's iq3_find_best_neighbour /
 * iq2_find_best_neighbour) on a lattice with lane blocks, alone, on one
 * path: among the candidates cand, the first with the smallest w-weighted
 * squared error of scale (2l + 1) against x; its codes to L and its grid
 * index returned, -1 when none scores below FLT_MAX or the path does not
 * run here. For the tests that check the paths agree. */
int anvil_cold_best_in_lanes_isa(const cold_lattice *lat, const uint16_t *cand, const float *x, const float *w,
                                 float scale, int8_t *L, cold_isa isa);

/* A group through the sweep to what is stored of it, as every sweep-based
 * encoder (ggml's quantize_row_<t>_impl) finishes one: the sweep from
 * scale0; a negative scale made positive with the group's sign bits
 * flipped (within sign_mask: 127 where 7 bits per 8 elements are stored,
 * 0xFF where 8); idx[k] the grid index of sub-group k (lat->dims codes).
 * ANVIL_E_UNSUPPORTED where ggml dies: the sweep's assertion, a point off
 * the grid ("not on grid" abort), a scale that is not >= 0 (NaN). */
int anvil_cold_sweep_group(const cold_sweep *p, const float *xval, const float *weight, const float *waux, float max,
                           float scale0, uint8_t *signs, uint8_t sign_mask, int *idx, float *scale);

/* A sub-scale code l in [0, max] with scale ~ d (2l + 1), id = 1 / d. */
static inline int cold_sub_scale(float id, float scale, int max) {
    int l = anvil_nearest_int(0.5f * (id * scale - 1));
    l = l < max ? l : max;
    return l > 0 ? l : 0;
}

/* ggml's iq2_find_best_neighbour / iq1_find_best_neighbour2 on a 3-level
 * lattice: among the candidates cand (cand[0] of them, then their grid
 * indices), the one whose values scale * val[code] are closest to x in
 * w-weighted squared error, first on ties; its codes go to L (when not
 * NULL). -1 when none scores below FLT_MAX (ggml asserts there). */
int anvil_cold_best_candidate3(const cold_lattice *lat, const uint16_t *cand, const float *x, const float *w,
                               float scale, const float val[3], int8_t *L);

/* ggml's "keep the better fit" step, over fits j = 0 .. n-1 in order:
 * fit j (sumqx[j], sumq2[j]) replaces the best when sumq2 > 0 and
 * sumqx^2 > best_score sumq2 (strictly better), and then
 * scale = sumqx / sumq2, best_score = scale sumqx. Returns the last fit
 * that replaced the best, or -1. */
static inline int cold_fit_scan(const float *sumqx, const float *sumq2, int n, float *best_score, float *scale) {
    int got = -1;
    for (int j = 0; j < n; ++j) {
        if (sumq2[j] > 0 && sumqx[j] * sumqx[j] > *best_score * sumq2[j]) {
            *scale = sumqx[j] / sumq2[j];
            *best_score = *scale * sumqx[j];
            got = j;
        }
    }
    return got;
}

/* 4-lane generic vectors (16 bytes: one SSE2 or NEON register; GCC splits
 * wider ones and often scalarises their compares and blends). Portable:
 * any target's compiler lowers them to its SIMD or to scalars. Every lane
 * does one of ggml's scalar computations, with its operations in its
 * order; a single reduction is never split over lanes. */
typedef float cold_f32x4 __attribute__((vector_size(16)));
typedef int32_t cold_i32x4 __attribute__((vector_size(16)));

/* cold_fit_scan over the fits in nv (<= 4) vectors of 4 lanes, in the
 * order lane, then vector (fit j = nv l + v: sumqx[v][l]), lanes >= lanes
 * left out. The best changes only on a pass, so where no fit passes the
 * test against the current best (all of them tested at once) the scan
 * would change nothing and is skipped; otherwise they are scanned in
 * order. Returns the last fit that replaced the best, or -1. */
static inline __attribute__((always_inline)) int cold_fit_lanes(const cold_f32x4 *sumqx, const cold_f32x4 *sumq2,
                                                                int nv, int lanes, float *best_score, float *scale) {
    const cold_f32x4 zero = { 0 };
    const cold_i32x4 lane = { 0, 1, 2, 3 };
    cold_i32x4 pass = { 0 };
    for (int v = 0; v < nv; ++v) {
        pass |= (sumq2[v] > zero) & (sumqx[v] * sumqx[v] > *best_score * sumq2[v]);
    }
    pass &= lane < lanes;
    if ((pass[0] | pass[1] | pass[2] | pass[3]) == 0) {
        return -1;
    }
    float fx[16], f2[16];
    for (int l = 0; l < lanes && l < 4; ++l) {
        for (int v = 0; v < nv; ++v) {
            fx[nv * l + v] = sumqx[v][l];
            f2[nv * l + v] = sumq2[v][l];
        }
    }
    return cold_fit_scan(fx, f2, nv * (lanes < 4 ? lanes : 4), best_score, scale);
}

/* The candidate list of an off-grid key (map value v < 0). */
static inline const uint16_t *cold_candidates(const cold_lattice *lat, int32_t v) {
    return lat->nb + (-(size_t)v - 1);
}

/* Stable ascending order of x[0..n) (idx gets the indices), without the C
 * library: what ggml's IQ1 searches get from glibc. ggml qsorts n 8-byte
 * (value, index) pairs (n = 32 for IQ1_S, 16 for IQ1_M) with a comparator
 * that sees only the value (iq1_sort_helper; -0 equals +0), so the order of
 * ties is the C library's. glibc's qsort is a merge sort with a scratch
 * buffer on the stack for arrays under 1 KiB (these are 256 and 128 bytes),
 * hence stable: equal values in index order. Ties are common (rows of few
 * levels, zeros) and move the searches' cut points, so a libc qsort here
 * would give other bytes on musl or BSD. An insertion sort: at most 496
 * comparisons per 32 elements. */
void anvil_cold_stable_order(const float *x, int n, int *idx);

/* Builds the search tables (once) of the lattice encoder `name` searches
 * (all six for a name it does not know): ANVIL_OK, or ANVIL_E_INTERNAL with
 * a message when they fail their self-check. */
int anvil_cold_lattice_ready(const char *name, char *msg, size_t msg_size);

/* The refusal where ggml's search overflows and dies: ANVIL_E_UNSUPPORTED,
 * the message naming super-block ibl, the elements of its group ib (of
 * `group` elements, xb), their largest magnitude and what ggml does there
 * (ggml_does, e.g. "fails an assertion and aborts"). */
int anvil_cold_refuse_overflow(const char *name, size_t ibl, int group, int ib, const float *xb,
                               const char *ggml_does, char *msg, size_t msg_size);

/* One group of n elements (a multiple of 8) made ready for the sweep:
 * waux = sqrt(weight), per 8 elements the signs split off into signs[]
 * (anvil_cold_split_signs_even when `even`, else anvil_cold_split_signs)
 * and the magnitudes into xval. Returns the largest xval (ggml's MAX
 * chain from xval[0]). */
float anvil_cold_group_setup(const float *xb, const float *weight, int n, int even, float *waux, float *xval,
                             uint8_t *signs);

/* anvil_cold_group_setup on one path: COLD_ISA_WIDE, AVX-512F 16 elements
 * at a time (n 16 or 32, where it runs), else the portable one. The same
 * results: for the tests that check the two agree. */
float anvil_cold_group_setup_isa(const float *xb, const float *weight, int n, int even, float *waux, float *xval,
                                 uint8_t *signs, cold_isa isa);

/* Splits the signs off a group of 8: xval = |x|, bit i of the result set
 * when x[i] < 0 (IQ3_S and IQ2_S store all 8 bits). */
uint8_t anvil_cold_split_signs(const float *x, float *xval);

/* The same for the formats that store 7 sign bits per 8 elements and let
 * the decoder infer the 8th from an even count of negatives (IQ3_XXS,
 * IQ2_XXS, IQ2_XS): when the count is odd, the element with the smallest
 * weight * x^2 (the first of equals) keeps its sign bit flipped and its
 * magnitude negated (its code then clamps to the lowest). Returns the 7
 * stored bits. */
uint8_t anvil_cold_split_signs_even(const float *x, const float *weight, float *xval);

/* Sum of x^2 in element order (ggml's sumx2 of a 256-element block). */
static inline float cold_sum_squares(const float *x, int n) {
    float s = 0.0f;
    for (int i = 0; i < n; ++i) {
        s += x[i] * x[i];
    }
    return s;
}

/* Grid index of the code vector at L (dims codes), or -1 when off-grid
 * (or, which ggml's searches never leave behind, a code is out of range). */
static inline int cold_grid_index(const cold_lattice *lat, const int8_t *L) {
    if (!cold_lattice_codes_valid(lat, L)) {
        return -1;
    }
    const int32_t v = lat->map[cold_lattice_key(lat, L)];
    return v >= 0 ? (int)v : -1;
}

/* ggml's MAX for floats, with its exact operand order: ((a) > (b) ? (a) : (b)). */
static inline float cold_max(float a, float b) { return a > b ? a : b; }

#endif
