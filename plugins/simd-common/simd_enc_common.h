/* SPDX-License-Identifier: MIT */
/*
 * The SIMD weight encoders (ABI 1.1 backend encoders), shared machinery.
 *
 * One source per format family (simd_enc_flat.h, simd_enc_kquants.h,
 * simd_enc_iq4.h, simd_enc_small.h) is compiled once per instruction set:
 * a backend's encoder file includes its ISA layer (avx2_enc_isa.h,
 * avx512_enc_isa.h, neon_enc_isa.h, and backend-scalar's
 * portable_enc_isa.h on generic vectors, for any other CPU), then this
 * file, then the family. The
 * ISA layer defines EV_LANES float lanes and the ev_* operations:
 *
 *   ev_f / ev_i / ev_m   a vector of floats / int32s / a lane mask
 *   load store set1 add sub mul div sqrt abs neg   float lanes
 *   lt le gt ge eq ne    C's comparisons (ordered; != unordered)
 *   blend(m, a, b)       m ? b : a        ev_iblend the same for int32
 *   iinc(m, a)           a + 1 in the lanes of m (int32)
 *   max_mag(a, b)        max of magnitudes (>= +0, not NaN)
 *   min_lt(a, b)         a < b ? a : b    (C's select: b on NaN or equal)
 *   max_gt(a, b)         a > b ? a : b    (x86 minps/maxps exactly)
 *   fclamp(a, lo, hi)    min(max(a, lo), hi) (lanes not NaN)
 *   iadd isub imin imax iand ior ishl isra isrl ishlv ieq igt   int32 lanes
 *   cvt / cvtt           int32 -> float / float -> int32 by truncation
 *                        (NaN, out of range -> INT32_MIN: x86-64's cast)
 *   store_u8             the low byte of each lane
 *   hmax                 largest lane (finite lanes; a zero result's sign
 *                        unspecified)
 *   lut16                a 16-entry float table indexed per lane
 *   fp16                 binary32 -> binary16 of a non-NaN scalar
 *
 * Why the bytes are the reference's (plugins/ref, ggml's quantize_row_*_ref
 * and ggml_quantize_chunk) for every input, not just close:
 *  - Every float lane performs exactly the scalar reference's IEEE
 *    operations, in the reference's order; single operations round
 *    identically in a lane (no fused multiply-add: -ffp-contract=off and no
 *    FMA instruction is used).
 *  - Sums are never reassociated. Where the reference reduces over the
 *    elements of a group (the scale searches), a lane carries ONE group
 *    through the reference's whole sequential loop: groups, not elements,
 *    are spread across lanes (a transposed copy feeds element i of every
 *    group at once). Candidate scales that depend on earlier candidates
 *    (make_qkx2_quants moves its offset) are tried in the reference's order
 *    within each lane.
 *  - Only exact reductions cross lanes: a maximum of magnitudes, a first
 *    index (the reference's "first wins" ties, by mask bits).
 *  - Conversions are the x86-64 ones the reference pins down (truncation,
 *    INT32_MIN for NaN), ggml's nearest_int bit trick, fp16 round to
 *    nearest even.
 * tests/simd (tests/portable for the generic-vector build) checks
 * each encoder against the reference on every input kind, and tests/parity
 * against ggml itself.
 *
 * Every encoder has the anvil_encode_rows_fn contract: rows of n_per_row
 * elements (whole blocks), imatrix always NULL (they are not
 * ANVIL_ENCODER_WEIGHTED), NaN/Inf refused with the row and element named,
 * in the reference's words (plugins/ref/checks.h, linked in).
 * The source is checked and encoded in chunks of EV_CHUNK elements, so the
 * check reads memory and the encoder reads the chunk again from L1.
 */
#ifndef ANVIL_SIMD_ENC_COMMON_H
#define ANVIL_SIMD_ENC_COMMON_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "anvil/backend.h"
#include "anvil/blocks.h"
#include "anvil/numeric.h"
#include "anvil/status.h"
#include "ref/checks.h"
#include "ref/kquants_search.h"

#define EV_CHUNK 4096
#define EV_ALIGN __attribute__((aligned(64)))

/* Encode nb consecutive blocks of x into dst (input already checked). */
typedef void (*ev_blocks_fn)(const float *x, uint8_t *dst, size_t nb);

/* 1 when x[0..n) (n a multiple of EV_LANES) holds no NaN or Inf. */
EV_INLINE int ev_all_finite(const float *x, size_t n) {
    const ev_i expo = ev_iset1(0x7f800000);
    ev_i acc0 = ev_iset1(0), acc1 = acc0;
    size_t i = 0;
    for (; i + 2 * EV_LANES <= n; i += 2 * EV_LANES) {
        acc0 = ev_imax(acc0, ev_iand(ev_bits(ev_load(x + i)), expo));
        acc1 = ev_imax(acc1, ev_iand(ev_bits(ev_load(x + i + EV_LANES)), expo));
    }
    for (; i < n; i += EV_LANES) acc0 = ev_imax(acc0, ev_iand(ev_bits(ev_load(x + i)), expo));
    return !ev_many(ev_ieq(ev_imax(acc0, acc1), expo));
}

static int ev_encode_rows(const char *name, size_t be, size_t bb, ev_blocks_fn fn, const float *src, void *dst,
                          size_t nrows, size_t n_per_row, char *msg, size_t msg_size) {
    if (be == 0 || n_per_row % be != 0) {
        anvil_ref_message(msg, msg_size,
                          "%s: rows of %zu elements are not a whole number of %zu-element blocks (%zu left over); "
                          "choose a row length divisible by %zu",
                          name, n_per_row, be, be ? n_per_row % be : n_per_row, be);
        return ANVIL_E_BLOCK_MISMATCH;
    }
    const size_t chunk = EV_CHUNK / be * be > 0 ? EV_CHUNK / be * be : be;
    const size_t row_bytes = n_per_row / be * bb;
    for (size_t r = 0; r < nrows; ++r) {
        const float *x = src + r * n_per_row;
        uint8_t *d = (uint8_t *)dst + r * row_bytes;
        for (size_t off = 0; off < n_per_row; off += chunk) {
            const size_t len = n_per_row - off < chunk ? n_per_row - off : chunk;
            if (!ev_all_finite(x + off, len)) {
                /* the reference's refusal, word for word (row, element) */
                return anvil_ref_check_finite(name, src, (r + 1) * n_per_row, n_per_row, msg, msg_size);
            }
            fn(x + off, d + off / be * bb, len / be);
        }
    }
    return ANVIL_OK;
}

/* Importance-weighted blocks: qw holds the weights of x's columns; sigma2
 * is the row's mean square for the formats that weight by it (the flat
 * family), else 0 (the K-quants take theirs per super-block). */
typedef void (*ev_wblocks_fn)(const float *x, const float *qw, float sigma2, uint8_t *dst, size_t nb);

/* encode_rows with an importance matrix: the reference's checks (weights
 * finite (negative ones are taken as given, as ggml does), naming the column; input finite, naming row and
 * element), then row by row; row_sigma2: pass the row's mean square. */
static int ev_encode_rows_weighted(const char *name, size_t be, size_t bb, ev_wblocks_fn fn, int row_sigma2,
                                   const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,
                                   char *msg, size_t msg_size) {
    if (be == 0 || n_per_row % be != 0)
        return ev_encode_rows(name, be, bb, NULL, src, dst, nrows, n_per_row, msg, msg_size);
    for (size_t j = 0; j < n_per_row; ++j) {
        if (!isfinite(imatrix[j])) {
            anvil_ref_message(msg, msg_size,
                              "%s: importance weight of column %zu is %g; weights must be finite "
                              "(check the importance matrix)",
                              name, j, (double)imatrix[j]);
            return ANVIL_E_INVALID_ARG;
        }
    }
    const size_t chunk = EV_CHUNK / be * be > 0 ? EV_CHUNK / be * be : be;
    const size_t row_bytes = n_per_row / be * bb;
    for (size_t r = 0; r < nrows; ++r) {
        const float *x = src + r * n_per_row;
        for (size_t off = 0; off < n_per_row; off += chunk) {
            const size_t len = n_per_row - off < chunk ? n_per_row - off : chunk;
            if (!ev_all_finite(x + off, len)) {
                return anvil_ref_check_finite(name, src, (r + 1) * n_per_row, n_per_row, msg, msg_size);
            }
        }
        const float sigma2 = row_sigma2 && n_per_row > 0 ? anvil_kq_sum_squares(x, n_per_row) / (float)n_per_row
                                                         : 0.0f;
        uint8_t *d = (uint8_t *)dst + r * row_bytes;
        for (size_t off = 0; off < n_per_row; off += chunk) {
            const size_t len = n_per_row - off < chunk ? n_per_row - off : chunk;
            fn(x + off, imatrix + off, sigma2, d + off / be * bb, len / be);
        }
    }
    return ANVIL_OK;
}

/* An ANVIL_ENCODER_WEIGHTED entry `ev_enc_<name>`: blocks_fn without an
 * importance matrix, wblocks_fn with one. */
#define EV_ENCODER_WEIGHTED(name, TYPE, be, bb, blocks_fn, wblocks_fn, row_sigma2)                                \
    static int ev_rows_##name(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,  \
                              char *msg, size_t msg_size) {                                                       \
        if (imatrix == NULL) {                                                                                    \
            return ev_encode_rows(#name, (be), (bb), (blocks_fn), src, dst, nrows, n_per_row, msg, msg_size);     \
        }                                                                                                         \
        return ev_encode_rows_weighted(#name, (be), (bb), (wblocks_fn), (row_sigma2), src, dst, nrows, n_per_row, \
                                       imatrix, msg, msg_size);                                                   \
    }                                                                                                             \
    static const anvil_weight_encoder ev_enc_##name = { .struct_size = sizeof(anvil_weight_encoder),              \
                                                        .type_id = (TYPE),                                        \
                                                        .flags = ANVIL_ENCODER_WEIGHTED,                          \
                                                        .variant = EV_VARIANT,                                    \
                                                        .encode_rows = ev_rows_##name }

/* An encoder table entry `ev_enc_<name>` running blocks_fn row by row. */
#define EV_ENCODER(name, TYPE, be, bb, blocks_fn)                                                                \
    static int ev_rows_##name(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix, \
                              char *msg, size_t msg_size) {                                                      \
        (void)imatrix; /* not ANVIL_ENCODER_WEIGHTED: the host passes NULL */                                    \
        return ev_encode_rows(#name, (be), (bb), (blocks_fn), src, dst, nrows, n_per_row, msg, msg_size);        \
    }                                                                                                            \
    static const anvil_weight_encoder ev_enc_##name = { .struct_size = sizeof(anvil_weight_encoder),             \
                                                        .type_id = (TYPE),                                       \
                                                        .variant = EV_VARIANT,                                   \
                                                        .encode_rows = ev_rows_##name }

EV_INLINE void ev_put_u16(uint8_t *p, uint16_t v) { memcpy(p, &v, sizeof v); }

/* ggml's nearest_int, lane by lane: round to nearest even through the
 * 1.5 * 2^23 trick (valid for |v| <= 2^22, as the scalar one). */
EV_INLINE ev_i ev_nearest(ev_f v) {
    const ev_i t = ev_bits(ev_add(v, ev_set1(12582912.f)));
    return ev_isub(ev_iand(t, ev_iset1(0x007fffff)), ev_iset1(0x00400000));
}

/* clamp(nearest(v), lo, hi) for lanes with |v| <= 2^22, where nearest is
 * the exact rounding and monotonic, so clamping the float first gives the
 * same integer: two float operations where an integer clamp costs four
 * on some layers. Other lanes get a value the caller must discard. */
EV_INLINE ev_i ev_nearest_clamped(ev_f v, int lo, int hi) { return ev_nearest(ev_fclamp(v, (float)lo, (float)hi)); }

/* clamp(nearest(v), lo, hi) as a float, for any v: the clamp done after
 * the rounding, on the float of the code, which is exact (the bit trick
 * gives -2^22..2^22 - 1 for every v, NaN included) and keeps order. For
 * quotients that may be huge, where ev_nearest_clamped does not apply. */
EV_INLINE ev_f ev_nearest_clamped_f(ev_f v, float lo, float hi) { return ev_fclamp(ev_cvt(ev_nearest(v)), lo, hi); }

/* roundf (half away from zero) as int32, for |v| < 2^23: truncate
 * v + copysign(0.5 - 2^-25, v). The addend just below one half keeps a
 * value just below .5 below, while an exact .5 still reaches the next
 * integer (the sum rounds up to it). +-Inf and NaN give INT32_MIN, as the
 * reference's conversion. */
EV_INLINE ev_i ev_roundf(ev_f v) {
    const ev_i sign = ev_iand(ev_bits(v), ev_iset1((int)0x80000000u));
    const ev_f half = ev_from_bits(ev_ior(sign, ev_bits(ev_set1(0.49999997f))));
    return ev_cvtt(ev_add(v, half));
}

/* The low byte of an int32 read as a signed byte: C's (int8_t) on x86-64. */
EV_INLINE ev_i ev_sext8(ev_i v) { return ev_isra(ev_ishl(v, 24), 24); }

EV_INLINE ev_i ev_clamp(ev_i v, int lo, int hi) { return ev_imax(ev_imin(v, ev_iset1(hi)), ev_iset1(lo)); }

/* Groups in lanes: xt[i * EV_LANES + l] = x[l * len + i] (element i of
 * group l, groups of len elements one after the other) for l < nl, and 0
 * for the lanes past nl, whose results are discarded. */
EV_INLINE void ev_transpose(const float *x, int len, int nl, float *xt) {
    for (int l = 0; l < EV_LANES; ++l) {
        if (l < nl) {
            for (int i = 0; i < len; ++i) xt[i * EV_LANES + l] = x[l * len + i];
        } else {
            for (int i = 0; i < len; ++i) xt[i * EV_LANES + l] = 0.0f;
        }
    }
}

/* Per lane, over a group in lanes (xt, qt: elements and importance weights
 * transposed): ggml's element weights qw * sqrt(sigma2 + x^2) into wt, and
 * their sum in element order (anvil_kq_importance, lane by lane). */
EV_INLINE ev_f ev_lanes_importance(const float *xt, const float *qt, int len, ev_f sigma2, float *wt) {
    ev_f sum = ev_set1(0.0f);
    for (int i = 0; i < len; ++i) {
        const ev_f x = ev_load(xt + i * EV_LANES);
        const ev_f w = ev_mul(ev_load(qt + i * EV_LANES), ev_sqrt(ev_add(sigma2, ev_mul(x, x))));
        ev_store(wt + i * EV_LANES, w);
        sum = ev_add(sum, w);
    }
    return sum;
}

/* Per lane, over a group in lanes (len a multiple of 4): the largest
 * magnitude and the signed value that first reaches it (strict >, starting
 * from +0): the reference's `if (ax > amax) { amax = ax; max = x[i]; }`.
 * The maximum is exact in any order, so it is taken over four independent
 * chains; the value is then found scanning backwards (the first element
 * reaching the maximum is the last one written), each step a blend whose
 * mask does not wait for the previous step. All-zero lanes give +0, as the
 * reference's max starts there. */
EV_INLINE void ev_lanes_absmax(const float *xt, int len, ev_f *amax_out, ev_f *max_out) {
    ev_f m0 = ev_abs(ev_load(xt)), m1 = ev_abs(ev_load(xt + EV_LANES));
    ev_f m2 = ev_abs(ev_load(xt + 2 * EV_LANES)), m3 = ev_abs(ev_load(xt + 3 * EV_LANES));
    for (int i = 4; i < len; i += 4) {
        m0 = ev_max_mag(m0, ev_abs(ev_load(xt + i * EV_LANES)));
        m1 = ev_max_mag(m1, ev_abs(ev_load(xt + (i + 1) * EV_LANES)));
        m2 = ev_max_mag(m2, ev_abs(ev_load(xt + (i + 2) * EV_LANES)));
        m3 = ev_max_mag(m3, ev_abs(ev_load(xt + (i + 3) * EV_LANES)));
    }
    const ev_f amax = ev_max_mag(ev_max_mag(m0, m1), ev_max_mag(m2, m3));
    const ev_f zero = ev_set1(0.0f);
    ev_f max = zero;
    for (int i = len - 1; i >= 0; --i) {
        const ev_f x = ev_load(xt + i * EV_LANES);
        max = ev_blend(ev_eq(ev_abs(x), amax), max, x);
    }
    *amax_out = amax;
    *max_out = ev_blend(ev_eq(amax, zero), max, zero);
}

/* The same over n contiguous elements (n a multiple of EV_LANES): the
 * element of largest magnitude, the first one on ties; +0 when all are
 * zero (the reference's max starts at +0 and only a larger magnitude
 * replaces it). */
EV_INLINE float ev_first_absmax(const float *x, int n, float *amax_out) {
    ev_f m = ev_abs(ev_load(x));
    for (int k = EV_LANES; k < n; k += EV_LANES) m = ev_max_mag(m, ev_abs(ev_load(x + k)));
    const float amax = ev_hmax(m);
    *amax_out = amax;
    if (amax == 0.0f) return 0.0f;
    const ev_f va = ev_set1(amax);
    for (int k = 0; k < n; k += EV_LANES) {
        const unsigned hit = ev_mbits(ev_eq(ev_abs(ev_load(x + k)), va));
        if (hit != 0) return x[k + __builtin_ctz(hit)];
    }
    return amax; /* not reached */
}

/* Largest magnitude of n contiguous elements (n a multiple of EV_LANES). */
EV_INLINE float ev_absmax(const float *x, int n) {
    ev_f m = ev_abs(ev_load(x));
    for (int k = EV_LANES; k < n; k += EV_LANES) m = ev_max_mag(m, ev_abs(ev_load(x + k)));
    return ev_hmax(m);
}

#endif
