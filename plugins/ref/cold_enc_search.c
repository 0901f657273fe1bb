/* SPDX-License-Identifier: MIT */
/*
 * ggml's lattice scale sweep (see cold_enc_search.h), step for step.
 *
 * The float expressions are written with ggml's association and with its
 * int/float conversions spelled out; -ffp-contract=off keeps them unfused.
 * Ties go ggml's way: a trial replaces the best one only when strictly
 * better, and a candidate point only when its error is strictly smaller, in
 * candidate-list order.
 */
#include "ref/cold_enc_search.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "anvil/numeric.h"
#include "anvil/status.h"
#include "ref/checks.h"
#include "ref/cpu_probe.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define COLD_SWEEP_AVX2 1
#include <immintrin.h>
#define AVX2 __attribute__((target("avx2")))
#define AVX512 __attribute__((target("avx512f")))
#else
#define COLD_SWEEP_AVX2 0
#endif
#if defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
/* aarch64: the NEON build of the sweep and its neighbour search
 * (ref/enc_neon.h), always on (NEON is in the base architecture) */
#include "ref/enc_neon.h"
#define COLD_SWEEP_NEON 1
#else
#define COLD_SWEEP_NEON 0
#endif

/* In cold_f32x4 / cold_i32x4 vectors (cold_enc_search.h), a lane is either
 * a candidate (the neighbour searches) or a trial scale (the sweep's
 * rounding, keys and fit sums). */

typedef cold_f32x4 f32x4;
typedef cold_i32x4 i32x4;

/* Lane-wise a where m (all ones), else b. */
#define PICK_I32(m, a, b) (((m) & (a)) | (~(m) & (b)))
#define PICK_F32(m, a, b) ((f32x4)PICK_I32((m), (i32x4)(a), (i32x4)(b)))

/* The neighbour searches' choice, four candidates at a time: ggml's scan
 * keeps the first candidate, in list order, whose score is strictly below
 * the best so far (from FLT_MAX: a NaN or >= FLT_MAX score never wins).
 * Lane k is offered candidates k, k + 4, ... and keeps its first strictly
 * best; then the lanes' bests are compared, ties to the earlier candidate:
 * the same winner. Padding lanes past the list's end repeat its last
 * candidate, whose score then ties with (and loses to) its first copy. */
typedef struct lane_best {
    f32x4 best;
    i32x4 at;  /* list position of each lane's best */
    i32x4 pos; /* list positions of the next block's candidates */
} lane_best;

static inline void lane_best_init(lane_best *b) {
    const f32x4 flt_max = { FLT_MAX, FLT_MAX, FLT_MAX, FLT_MAX };
    const i32x4 first = { 0, 1, 2, 3 };
    b->best = flt_max;
    b->at = first - first;
    b->pos = first;
}

/* The scores d2 of the next block of candidates. */
static inline void lane_best_offer(lane_best *b, f32x4 d2) {
    const i32x4 better = d2 < b->best;
    b->best = PICK_F32(better, d2, b->best);
    b->at = PICK_I32(better, b->pos, b->at);
    b->pos += COLD_LANES;
}

/* The winner's list position, or -1. */
static inline int lane_best_pick(const lane_best *b) {
    int j = -1;
    float m = FLT_MAX;
    for (int k = 0; k < COLD_LANES; ++k) {
        if (b->best[k] < m || (b->best[k] == m && j >= 0 && b->at[k] < j)) {
            m = b->best[k];
            j = b->at[k];
        }
    }
    return j;
}

/* ggml's iq2_find_best_neighbour / iq1_find_best_neighbour2 (see the
 * header). A candidate's error is the sum over its elements, in element
 * order, of w (scale val[code] - x)^2: a function of (element, code) only.
 * With 3 codes and about 8 (IQ2) to 73 (IQ1) candidates of 8 elements, the
 * 24 terms are computed once, each by ggml's expression, and summed per
 * candidate in ggml's order, four candidates side by side: the same
 * floats, fewer operations. */
int anvil_cold_best_candidate3(const cold_lattice *lat, const uint16_t *cand, const float *x, const float *w,
                               float scale, const float val[3], int8_t *L) {
    float err[8][3];
    for (int i = 0; i < 8; ++i) {
        for (int c = 0; c < 3; ++c) {
            const float diff = scale * val[c] - x[i];
            err[i][c] = w[i] * diff * diff;
        }
    }
    const int count = cand[0];
    lane_best lb;
    lane_best_init(&lb);
    for (int j = 0; j < count; j += COLD_LANES) {
        const uint8_t *code[COLD_LANES];
        for (int k = 0; k < COLD_LANES; ++k) {
            code[k] = lat->code + (size_t)cand[1 + (j + k < count ? j + k : count - 1)] * 8;
        }
        f32x4 d2 = { 0 };
        for (int i = 0; i < 8; ++i) {
            const f32x4 e = { err[i][code[0][i]], err[i][code[1][i]], err[i][code[2][i]], err[i][code[3][i]] };
            d2 += e;
        }
        lane_best_offer(&lb, d2);
    }
    const int j = lane_best_pick(&lb);
    if (j < 0) {
        return -1;
    }
    const int best = cand[1 + j];
    if (L != NULL) {
        const uint8_t *c = lat->code + (size_t)best * 8;
        for (int i = 0; i < 8; ++i) {
            L[i] = (int8_t)c[i];
        }
    }
    return best;
}

/* ---- the sweep ----------------------------------------------------------- */

/* The four bytes of a lane-block row as int32 lanes, lane k = byte k, by
 * one byte shuffle: for targets that have one (AVX2's vpshufb; SSE2 would
 * take several operations). */
static inline __attribute__((always_inline)) i32x4 lane_ints(const uint8_t *p) {
    typedef uint8_t u8x16 __attribute__((vector_size(16)));
    uint32_t u;
    memcpy(&u, p, sizeof u);
    const u8x16 v = (u8x16)((i32x4){ (int32_t)u, 0, 0, 0 });
    const u8x16 z = { 0 };
    const u8x16 spread = { 0, 16, 16, 16, 1, 16, 16, 16, 2, 16, 16, 16, 3, 16, 16, 16 };
#if defined(__clang__)
    (void)spread;
    return (i32x4)__builtin_shufflevector(v, z, 0, 16, 16, 16, 1, 16, 16, 16, 2, 16, 16, 16, 3, 16, 16, 16);
#else
    return (i32x4)__builtin_shuffle(v, z, spread);
#endif
}

/* Lane k of the result: t[l[k]] (l in 0..3), and the same from the eight
 * entries lo, hi (l in 0..7). GCC's variable shuffle (vpermilps on AVX);
 * clang has none in C, so selects by compare there. */
static inline __attribute__((always_inline)) f32x4 table3(f32x4 t, i32x4 l) {
#if defined(__clang__)
    /* l in 0..3 (table8's halves) */
    const i32x4 zero = { 0 };
    const f32x4 t0 = { t[0], t[0], t[0], t[0] }, t1 = { t[1], t[1], t[1], t[1] }, t2 = { t[2], t[2], t[2], t[2] },
                t3 = { t[3], t[3], t[3], t[3] };
    return PICK_F32(l == zero, t0, PICK_F32(l == zero + 1, t1, PICK_F32(l == zero + 2, t2, t3)));
#else
    return __builtin_shuffle(t, l);
#endif
}

static inline __attribute__((always_inline)) f32x4 table8(f32x4 lo, f32x4 hi, i32x4 l) {
#if defined(__clang__)
    const i32x4 four = { 4, 4, 4, 4 };
    return PICK_F32(l < four, table3(lo, l), table3(hi, l - four));
#else
    return __builtin_shuffle(lo, hi, l);
#endif
}

/* The four bytes of a lane-block row as floats, lane k = byte k: each
 * byte masked in place, converted (exact: below 2^28) and scaled back by
 * 2^-8k (exact). No byte-to-int widening, which SSE2 lacks as a
 * generic-vector operation. */
static inline __attribute__((always_inline)) f32x4 lane_bytes(const uint8_t *p, int wide) {
    if (wide) {
        return __builtin_convertvector(lane_ints(p), f32x4);
    }
    const uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    const i32x4 mask = { 0xff, 0xff00, 0xff0000, (int32_t)0xff000000u };
    const f32x4 down = { 1.0f, 1.0f / 256, 1.0f / 65536, 1.0f / 16777216 };
    const i32x4 b = ((i32x4){ 0 } + (int32_t)u) & mask;
    return __builtin_convertvector(b, f32x4) * down;
}

/* The searches' last step where several lanes hold the smallest score
 * (the lanes set in tie, pos_of[lane] the list position of each lane's
 * first best): the earliest of those positions. */
static inline int first_of_ties(const int32_t *pos_of, unsigned tie) {
    int first = pos_of[__builtin_ctz(tie)];
    for (tie &= tie - 1; tie != 0; tie &= tie - 1) {
        const int p = pos_of[__builtin_ctz(tie)];
        first = p < first ? p : first;
    }
    return first;
}

/* The candidate at list position first: its codes to L, its grid index. */
static inline int take_candidate(const cold_lattice *lat, int dims, const uint16_t *cand, int first, int8_t *L) {
    const int g = cand[1 + first];
    memcpy(L, lat->code + (size_t)g * (size_t)dims, (size_t)dims);
    return g;
}

#if COLD_SWEEP_AVX2
/* best_in_lanes on AVX2, eight candidates per vector: lane k scores
 * candidates k, k + 8, ... An element's term w (scale (2l + 1) - x)^2
 * depends on its code l only, so its 8 (IQ3) or 3 (IQ2) values are
 * computed once, each by ggml's expression, into a table that each
 * candidate's lane indexes by its code (vpermps on 3-bit codes, vpermilps
 * on 2-bit ones, from the list's packed codes: one load of eight, shifted
 * per element), summed in element order from 0: the same floats as ggml's
 * d2. Each lane keeps its first strictly smallest score (lanes past the
 * list's end never take one); the winner is the smallest score, ties to
 * the earliest candidate: ggml's first strictly best. */
AVX2 static inline int best8_avx2(const cold_lattice *lat, int dims, int levels, const uint16_t *cand, const float *x,
                                  const float *w, float scale, int8_t *L) {
    const int count = cand[0];
    const uint16_t *packed = cold_packed_codes(lat, cand);
    const __m256 odd = levels == 8 ? _mm256_setr_ps(1.0f, 3.0f, 5.0f, 7.0f, 9.0f, 11.0f, 13.0f, 15.0f)
                                   : _mm256_setr_ps(1.0f, 3.0f, 5.0f, 5.0f, 1.0f, 3.0f, 5.0f, 5.0f);
    const __m256 so = _mm256_mul_ps(_mm256_set1_ps(scale), odd);
    __m256 tab[8];
    for (int i = 0; i < dims; ++i) {
        const __m256 diff = _mm256_sub_ps(so, _mm256_set1_ps(x[i]));
        tab[i] = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(w[i]), diff), diff);
    }
    const __m256 flt_max = _mm256_set1_ps(FLT_MAX);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    int first;
    if (count <= 8) {
        /* one vector: candidate k in lane k; the first lane of the
         * smallest score that is below FLT_MAX (the others, FLT_MAX,
         * cannot equal it) */
        const __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)packed));
        __m256 d2 = _mm256_setzero_ps();
        for (int i = 0; i < dims; ++i) {
            d2 = _mm256_add_ps(d2, levels == 8 ? _mm256_permutevar8x32_ps(tab[i], _mm256_srli_epi32(u, 3 * i))
                                               : _mm256_permutevar_ps(tab[i], _mm256_srli_epi32(u, 2 * i)));
        }
        const __m256 live = _mm256_and_ps(_mm256_cmp_ps(d2, flt_max, _CMP_LT_OQ),
                                          _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(count), lane)));
        const __m256 v = _mm256_blendv_ps(flt_max, d2, live);
        __m256 m = _mm256_min_ps(v, _mm256_permute2f128_ps(v, v, 1));
        m = _mm256_min_ps(m, _mm256_shuffle_ps(m, m, 0x4E));
        m = _mm256_min_ps(m, _mm256_shuffle_ps(m, m, 0xB1));
        if (!(_mm256_cvtss_f32(m) < FLT_MAX)) {
            return -1;
        }
        first = __builtin_ctz((unsigned)_mm256_movemask_ps(_mm256_cmp_ps(v, m, _CMP_EQ_OQ)));
    } else {
        const __m256i eight = _mm256_set1_epi32(8), vcount = _mm256_set1_epi32(count);
        __m256 best = flt_max;
        __m256i at = lane, pos = lane;
        for (int j = 0; j < count; j += 8) {
            /* past the list's end: the next words (or the padding), never chosen */
            const __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(packed + j)));
            __m256 d2 = _mm256_setzero_ps();
            for (int i = 0; i < dims; ++i) {
                d2 = _mm256_add_ps(d2, levels == 8 ? _mm256_permutevar8x32_ps(tab[i], _mm256_srli_epi32(u, 3 * i))
                                                   : _mm256_permutevar_ps(tab[i], _mm256_srli_epi32(u, 2 * i)));
            }
            const __m256i better = _mm256_and_si256(_mm256_castps_si256(_mm256_cmp_ps(d2, best, _CMP_LT_OQ)),
                                                    _mm256_cmpgt_epi32(vcount, pos));
            best = _mm256_blendv_ps(best, d2, _mm256_castsi256_ps(better));
            at = _mm256_blendv_epi8(at, pos, better);
            pos = _mm256_add_epi32(pos, eight);
        }
        /* the smallest score (no NaN: lanes only take scores below
         * FLT_MAX), then the smallest position among the lanes that hold
         * it: one lane but for exact ties */
        __m256 m = _mm256_min_ps(best, _mm256_permute2f128_ps(best, best, 1));
        m = _mm256_min_ps(m, _mm256_shuffle_ps(m, m, 0x4E));
        m = _mm256_min_ps(m, _mm256_shuffle_ps(m, m, 0xB1));
        if (!(_mm256_cvtss_f32(m) < FLT_MAX)) {
            return -1;
        }
        int32_t pos_of[8];
        _mm256_storeu_si256((__m256i *)(void *)pos_of, at);
        first = first_of_ties(pos_of, (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(best, m, _CMP_EQ_OQ)));
    }
    return take_candidate(lat, dims, cand, first, L);
}

/* best8_avx2 on AVX-512F, sixteen candidates per vector: one pass holds
 * the 86 % of IQ3_XXS lists that have at most 16. vpermps on 16 lanes
 * reads 4 index bits, one or two more than a code has: the table repeats
 * every 8 (3-bit codes) or 4 (2-bit) entries, so those bits (the next
 * element's) select the same entry. A candidate's score starts from its
 * first term, not 0 + it: they differ only where that term is -0 (a -0
 * weight), and -0 and +0 compare equal. */
AVX512 static inline int best16_avx512(const cold_lattice *lat, int dims, int levels, const uint16_t *cand,
                                       const float *x, const float *w, float scale, int8_t *L) {
    const int count = cand[0];
    /* the sweep's lattices carry lane blocks (anvil_cold_sweep_isa
     * checks): the packed codes follow them */
    const uint16_t *packed = cand + 1 + count + cold_lane_blocks(count) * dims * COLD_LANES / 2;
    const __m512 odd = levels == 8 ? _mm512_setr_ps(1.0f, 3.0f, 5.0f, 7.0f, 9.0f, 11.0f, 13.0f, 15.0f, 1.0f, 3.0f,
                                                    5.0f, 7.0f, 9.0f, 11.0f, 13.0f, 15.0f)
                                   : _mm512_setr_ps(1.0f, 3.0f, 5.0f, 5.0f, 1.0f, 3.0f, 5.0f, 5.0f, 1.0f, 3.0f, 5.0f,
                                                    5.0f, 1.0f, 3.0f, 5.0f, 5.0f);
    const unsigned bits = levels == 8 ? 3 : 2;
    const __m512 so = _mm512_mul_ps(_mm512_set1_ps(scale), odd);
    __m512 tab[8];
    for (int i = 0; i < dims; ++i) {
        const __m512 diff = _mm512_sub_ps(so, _mm512_set1_ps(x[i]));
        tab[i] = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(w[i]), diff), diff);
    }
    const __m512 flt_max = _mm512_set1_ps(FLT_MAX);
    int first;
    if (count <= 16) {
        /* one vector: candidate k in lane k; the first lane of the
         * smallest score that is below FLT_MAX */
        const __m512i u = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)packed));
        __m512 d2 = _mm512_permutexvar_ps(u, tab[0]);
        for (int i = 1; i < dims; ++i) {
            d2 = _mm512_add_ps(d2, _mm512_permutexvar_ps(_mm512_srli_epi32(u, bits * (unsigned)i), tab[i]));
        }
        const __mmask16 live = _mm512_mask_cmp_ps_mask((__mmask16)((1u << count) - 1u), d2, flt_max, _CMP_LT_OQ);
        if (live == 0) {
            return -1;
        }
        const float m = _mm512_mask_reduce_min_ps(live, d2);
        first = __builtin_ctz(_mm512_mask_cmp_ps_mask(live, d2, _mm512_set1_ps(m), _CMP_EQ_OQ));
    } else {
        const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        const __m512i vcount = _mm512_set1_epi32(count);
        __m512 best = flt_max;
        __m512i at = lane;
        for (int j = 0; j < count; j += 16) {
            /* past the list's end: the next words (or the padding), never chosen */
            const __m512i u = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(packed + j)));
            __m512 d2 = _mm512_permutexvar_ps(u, tab[0]);
            for (int i = 1; i < dims; ++i) {
                d2 = _mm512_add_ps(d2, _mm512_permutexvar_ps(_mm512_srli_epi32(u, bits * (unsigned)i), tab[i]));
            }
            const __m512i pos = _mm512_add_epi32(lane, _mm512_set1_epi32(j));
            const __mmask16 better =
                _mm512_mask_cmp_ps_mask(_mm512_cmplt_epi32_mask(pos, vcount), d2, best, _CMP_LT_OQ);
            best = _mm512_mask_mov_ps(best, better, d2);
            at = _mm512_mask_mov_epi32(at, better, pos);
        }
        /* the smallest score (no NaN: lanes only take scores below
         * FLT_MAX), then the smallest position among the lanes that hold
         * it: one lane but for exact ties */
        const float m = _mm512_reduce_min_ps(best);
        if (!(m < FLT_MAX)) {
            return -1;
        }
        int32_t pos_of[16];
        _mm512_storeu_si512((void *)pos_of, at);
        first = first_of_ties(pos_of, _mm512_cmp_ps_mask(best, _mm512_set1_ps(m), _CMP_EQ_OQ));
    }
    return take_candidate(lat, dims, cand, first, L);
}
#endif

/* ggml's iq3_find_best_neighbour / iq2_find_best_neighbour on a lattice
 * with lane blocks: the candidate (of the list cand) whose odd values
 * scale * (2l + 1) are closest to x in w-weighted squared error, in list
 * order the first of equals, its codes to L; -1 when none scores below
 * FLT_MAX. Each lane scores its candidate as ggml does (0 + w0 diff0^2 +
 * w1 diff1^2 + ..., element order); lane_best chooses as ggml's scan. */
static inline __attribute__((always_inline)) int best_in_lanes(const cold_lattice *lat, int dims,
                                                               const uint16_t *cand, const float *x, const float *w,
                                                               float scale, int8_t *L, int levels, int wide) {
#if COLD_SWEEP_AVX2
    if (wide == 2) {
        return best16_avx512(lat, dims, levels, cand, x, w, scale, L);
    }
    if (wide) {
        return best8_avx2(lat, dims, levels, cand, x, w, scale, L);
    }
#endif
#if COLD_SWEEP_NEON
    if (wide) {
        return anvil_enc_neon_best_lanes(lat, dims, levels, cand, x, w, scale, L);
    }
#endif
    const int count = cand[0];
    const uint8_t *lane = (const uint8_t *)(cand + 1 + count);
    lane_best lb;
    lane_best_init(&lb);
    if (wide && levels == 3 && dims <= 8) {
        /* An element's term w (scale (2l + 1) - x)^2 depends on its code l
         * only: the three are computed once, each by the same expression,
         * in lanes 0..2 of a table, and each candidate's lane picks its
         * code's (l = odd >> 1; vpermilps) and sums them in element order:
         * the same floats as below, fewer operations. */
        f32x4 tab[8];
        const f32x4 odd = { 1.0f, 3.0f, 5.0f, 5.0f };
        for (int i = 0; i < dims; ++i) {
            const f32x4 diff = scale * odd - x[i];
            tab[i] = w[i] * diff * diff;
        }
        for (int b = 0; b < cold_lane_blocks(count); ++b, lane += (size_t)dims * COLD_LANES) {
            f32x4 d2 = { 0 };
            for (int i = 0; i < dims; ++i) {
                d2 += table3(tab[i], lane_ints(lane + COLD_LANES * i) >> 1);
            }
            lane_best_offer(&lb, d2);
        }
    }
    if (wide && levels == 8 && dims <= 4) {
        /* The same with eight codes: a table of two vectors per element. */
        f32x4 lo[4], hi[4];
        const f32x4 odd_lo = { 1.0f, 3.0f, 5.0f, 7.0f }, odd_hi = { 9.0f, 11.0f, 13.0f, 15.0f };
        for (int i = 0; i < dims; ++i) {
            const f32x4 dlo = scale * odd_lo - x[i], dhi = scale * odd_hi - x[i];
            lo[i] = w[i] * dlo * dlo;
            hi[i] = w[i] * dhi * dhi;
        }
        for (int b = 0; b < cold_lane_blocks(count); ++b, lane += (size_t)dims * COLD_LANES) {
            f32x4 d2 = { 0 };
            for (int i = 0; i < dims; ++i) {
                d2 += table8(lo[i], hi[i], lane_ints(lane + COLD_LANES * i) >> 1);
            }
            lane_best_offer(&lb, d2);
        }
    }
    for (int b = 0;
         !(wide && ((levels == 3 && dims <= 8) || (levels == 8 && dims <= 4))) && b < cold_lane_blocks(count);
         ++b, lane += (size_t)dims * COLD_LANES) {
        f32x4 d2 = { 0 };
        for (int i = 0; i < dims; ++i) {
            const f32x4 diff = scale * lane_bytes(lane + COLD_LANES * i, wide) - x[i];
            d2 += w[i] * diff * diff;
        }
        lane_best_offer(&lb, d2);
    }
    const int j = lane_best_pick(&lb);
    if (j < 0) {
        return -1;
    }
    const int g = cand[1 + j];
    const uint8_t *c = lat->code + (size_t)g * (size_t)dims;
    for (int i = 0; i < dims; ++i) {
        L[i] = (int8_t)c[i];
    }
    return g;
}

/* Snap the group at L (dims codes) onto the grid, in place. 1: it was on
 * the grid, 0: snapped, -1: no candidate (ggml aborts). */
static inline __attribute__((always_inline)) int snap_group(const cold_lattice *lat, int dims, const float *xval,
                                                            const float *waux, float scale, int8_t *L, int wide) {
    int key = 0;
    for (int i = dims - 1; i >= 0; --i) {
        key = key * lat->levels + L[i];
    }
    const int32_t v = lat->map[key];
    if (v >= 0) {
        return 1;
    }
    return best_in_lanes(lat, dims, cold_candidates(lat, v), xval, waux, scale, L, lat->levels, wide) >= 0 ? 0 : -1;
}

/* sum w x q and sum w q q over the group, q = 2 l + 1, in element order. */
static void fit_sums(const float *xval, const float *weight, const int8_t *L, int n, float *sumqx, float *sumq2) {
    float sx = 0.0f, s2 = 0.0f;
    for (int i = 0; i < n; ++i) {
        const float w = weight[i];
        const float q = (float)(2 * L[i] + 1);
        sx += w * xval[i] * q;
        s2 += w * q * q;
    }
    *sumqx = sx;
    *sumq2 = s2;
}

#define MAX_TRIALS 32 /* 2 steps + 1 <= 31 */

/* sweep4 (4 trials per vector) and sweep8 (8), from one body. */
#define SWEEP_FN sweep4
#define SWEEP_W 4
#include "ref/cold_enc_sweep_body.h"
#undef SWEEP_FN
#undef SWEEP_W
#define SWEEP_FN sweep8
#define SWEEP_W 8
#include "ref/cold_enc_sweep_body.h"
#undef SWEEP_FN
#undef SWEEP_W
#if COLD_SWEEP_AVX2
#define SWEEP_FN sweep16
#define SWEEP_W 16
#include "ref/cold_enc_sweep_body.h"
#undef SWEEP_FN
#undef SWEEP_W
#endif

/* The sweep's shapes, each as one function per instruction set: the
 * portable one (generic vectors on the build's baseline) and, on x86, an
 * AVX2 one chosen at run time (VEX three-operand forms, byte widening),
 * performing the same IEEE operations lane for lane: the same bytes. */
#define SWEEP_SHAPES(X) \
    X(32, 4, 8)         \
    X(32, 8, 3)         \
    X(16, 8, 3)

#define SWEEP_ARGS                                                                                           \
    const cold_sweep *p, const float *xval, const float *weight, const float *waux, float max, float scale0, \
        int8_t *L, float *scale_out

#define SWEEP_PORTABLE(n, dims, levels)                                                      \
    static int sweep_##n##_##dims##_##levels(SWEEP_ARGS) {                                   \
        return sweep4(p, n, dims, levels, xval, weight, waux, max, scale0, L, scale_out, 0); \
    }
SWEEP_SHAPES(SWEEP_PORTABLE)

#if COLD_SWEEP_AVX2
#define SWEEP_AVX2(n, dims, levels)                                                             \
    __attribute__((target("avx2"))) static int sweep_avx2_##n##_##dims##_##levels(SWEEP_ARGS) { \
        return sweep8(p, n, dims, levels, xval, weight, waux, max, scale0, L, scale_out, 1);    \
    }
SWEEP_SHAPES(SWEEP_AVX2)
#define SWEEP_AVX512(n, dims, levels)                                                                \
    __attribute__((target("avx512f"))) static int sweep_avx512_##n##_##dims##_##levels(SWEEP_ARGS) { \
        return sweep16(p, n, dims, levels, xval, weight, waux, max, scale0, L, scale_out, 2);        \
    }
SWEEP_SHAPES(SWEEP_AVX512)

#endif

#if COLD_SWEEP_NEON
/* aarch64: the same body, 4 trials per vector, its searches in NEON */
#define SWEEP_NEON(n, dims, levels)                                                          \
    static int sweep_neon_##n##_##dims##_##levels(SWEEP_ARGS) {                              \
        return sweep4(p, n, dims, levels, xval, weight, waux, max, scale0, L, scale_out, 1); \
    }
SWEEP_SHAPES(SWEEP_NEON)
#endif

int anvil_cold_isa_runs(cold_isa isa) {
    switch (isa) {
    case COLD_ISA_PORTABLE:
    case COLD_ISA_BEST: return 1;
    case COLD_ISA_SIMD: return COLD_SWEEP_NEON || (COLD_SWEEP_AVX2 && anvil_ref_has_avx2());
    case COLD_ISA_WIDE: return COLD_SWEEP_AVX2 && anvil_ref_has_avx512();
    }
    return 0;
}

/* The widest of isa's paths that runs here (COLD_ISA_BEST: the widest of
 * all); -1 for a path this CPU or build lacks. */
static int isa_pick(cold_isa isa) {
    if (isa == COLD_ISA_BEST) {
        return anvil_cold_isa_runs(COLD_ISA_WIDE)   ? COLD_ISA_WIDE
               : anvil_cold_isa_runs(COLD_ISA_SIMD) ? COLD_ISA_SIMD
                                                    : COLD_ISA_PORTABLE;
    }
    return anvil_cold_isa_runs(isa) ? (int)isa : -1;
}

int anvil_cold_sweep_isa(const cold_sweep *p, const float *xval, const float *weight, const float *waux, float max,
                         float scale0, int8_t *L, float *scale_out, cold_isa isa) {
    const cold_lattice *lat = p->lat;
    const int use = isa_pick(isa);
    if (use < 0 || !lat->lanes || 2 * p->steps + 1 > MAX_TRIALS || p->n > 32 || p->n / lat->dims > 8) {
        return ANVIL_E_INTERNAL;
    }
#if COLD_SWEEP_AVX2
#define SWEEP_PICK(n_, dims_, levels_)                                                                         \
    if (lat->dims == (dims_) && lat->levels == (levels_) && p->n == (n_)) {                                    \
        return use == COLD_ISA_WIDE                                                                            \
                   ? sweep_avx512_##n_##_##dims_##_##levels_(p, xval, weight, waux, max, scale0, L, scale_out) \
               : use == COLD_ISA_SIMD                                                                          \
                   ? sweep_avx2_##n_##_##dims_##_##levels_(p, xval, weight, waux, max, scale0, L, scale_out)   \
                   : sweep_##n_##_##dims_##_##levels_(p, xval, weight, waux, max, scale0, L, scale_out);       \
    }
#elif COLD_SWEEP_NEON
#define SWEEP_PICK(n_, dims_, levels_)                                                                       \
    if (lat->dims == (dims_) && lat->levels == (levels_) && p->n == (n_)) {                                  \
        return use == COLD_ISA_SIMD                                                                          \
                   ? sweep_neon_##n_##_##dims_##_##levels_(p, xval, weight, waux, max, scale0, L, scale_out) \
                   : sweep_##n_##_##dims_##_##levels_(p, xval, weight, waux, max, scale0, L, scale_out);     \
    }
#else
#define SWEEP_PICK(n_, dims_, levels_)                                                             \
    if (lat->dims == (dims_) && lat->levels == (levels_) && p->n == (n_)) {                        \
        return sweep_##n_##_##dims_##_##levels_(p, xval, weight, waux, max, scale0, L, scale_out); \
    }
#endif
    SWEEP_SHAPES(SWEEP_PICK)
#undef SWEEP_PICK
    return ANVIL_E_INTERNAL;
}

int anvil_cold_sweep(const cold_sweep *p, const float *xval, const float *weight, const float *waux, float max,
                     float scale0, int8_t *L, float *scale_out) {
    return anvil_cold_sweep_isa(p, xval, weight, waux, max, scale0, L, scale_out, COLD_ISA_BEST);
}

int anvil_cold_best_in_lanes_isa(const cold_lattice *lat, const uint16_t *cand, const float *x, const float *w,
                                 float scale, int8_t *L, cold_isa isa) {
    const int use = isa_pick(isa);
    if (use < 0 || !lat->lanes || lat->dims > 8) {
        return -1;
    }
#if COLD_SWEEP_AVX2
    /* the sweep's two shapes, as the sweep inlines them */
    if (use == COLD_ISA_WIDE && lat->levels == 8 && lat->dims == 4) {
        return best16_avx512(lat, 4, 8, cand, x, w, scale, L);
    }
    if (use == COLD_ISA_WIDE && lat->levels == 3 && lat->dims == 8) {
        return best16_avx512(lat, 8, 3, cand, x, w, scale, L);
    }
    if (use == COLD_ISA_SIMD) {
        return best8_avx2(lat, lat->dims, lat->levels, cand, x, w, scale, L);
    }
#elif COLD_SWEEP_NEON
    /* the sweep's two shapes, as the sweep inlines them */
    if (use == COLD_ISA_SIMD && lat->levels == 8 && lat->dims == 4) {
        return anvil_enc_neon_best_lanes(lat, 4, 8, cand, x, w, scale, L);
    }
    if (use == COLD_ISA_SIMD && lat->levels == 3 && lat->dims == 8) {
        return anvil_enc_neon_best_lanes(lat, 8, 3, cand, x, w, scale, L);
    }
#endif
    return best_in_lanes(lat, lat->dims, cand, x, w, scale, L, lat->levels, 0);
}

void anvil_cold_stable_order(const float *x, int n, int *idx) {
    if (n % 4 != 0 || n > 32) {
        /* Insertion sort, moving an element left only past strictly
         * greater ones: equal values keep their index order. */
        for (int j = 0; j < n; ++j) {
            int m = j;
            while (m > 0 && x[idx[m - 1]] > x[j]) {
                idx[m] = idx[m - 1];
                m--;
            }
            idx[m] = j;
        }
        return;
    }
    /* The same order by ranks, four elements j at a time: j's place is the
     * number of elements below x[j] plus the equal ones before it (equal
     * compares -0 with +0, as the sorts' comparisons do; the values are
     * finite). */
    i32x4 rank[8];
    f32x4 xj[8];
    const i32x4 lane = { 0, 1, 2, 3 };
    for (int v = 0; v < n / 4; ++v) {
        memcpy(&xj[v], x + 4 * v, sizeof xj[v]);
        rank[v] = (i32x4){ 0 };
    }
    for (int i = 0; i < n; ++i) {
        for (int v = 0; v < n / 4; ++v) {
            const i32x4 before = (x[i] < xj[v]) | ((x[i] == xj[v]) & (lane + 4 * v > i));
            rank[v] -= before; /* -1 where true */
        }
    }
    for (int j = 0; j < n; ++j) {
        idx[rank[j / 4][j % 4]] = j;
    }
}

uint8_t anvil_cold_split_signs(const float *x, float *xval) {
    /* four at a time, by selects: x where x >= 0 (false for NaN), else -x
     * (the sign bit flipped, as the scalar negation), with the bit set */
    unsigned s = 0;
    for (int h = 0; h < 2; ++h) {
        f32x4 v;
        memcpy(&v, x + 4 * h, sizeof v);
        const i32x4 keep = v >= (f32x4){ 0 };
        const f32x4 r = PICK_F32(keep, v, -v);
        memcpy(xval + 4 * h, &r, sizeof r);
        for (int i = 0; i < 4; ++i) {
            s |= (unsigned)(keep[i] == 0) << (4 * h + i);
        }
    }
    return (uint8_t)s;
}

uint8_t anvil_cold_split_signs_even(const float *x, const float *weight, float *xval) {
    uint8_t s = anvil_cold_split_signs(x, xval);
    /* The element with the smallest weight x^2 (the first of equals; a NaN
     * never replaces), flipped where the count of negatives is odd: found
     * either way, applied by select (no branch on the data). */
    int imin = 0;
    float min = weight[0] * x[0] * x[0];
    for (int i = 1; i < 8; ++i) {
        const float ax = weight[i] * x[i] * x[i];
        const int lt = ax < min;
        min = lt ? ax : min;
        imin = lt ? i : imin;
    }
    const unsigned odd = (unsigned)__builtin_popcount(s) & 1u;
    xval[imin] = odd ? -xval[imin] : xval[imin];
    s ^= (uint8_t)(odd << imin);
    return s & 127;
}

int anvil_cold_lattice_ready(const char *name, char *msg, size_t msg_size) {
    /* the lattice the encoder of that name searches: built on first use */
    static const struct {
        const char *name;
        enum cold_lattice_id id;
    } uses[] = {
        { "iq1_s", COLD_LATTICE_IQ1 },    { "iq1_m", COLD_LATTICE_IQ1 },  { "iq2_xxs", COLD_LATTICE_IQ2XXS },
        { "iq2_xs", COLD_LATTICE_IQ2XS }, { "iq2_s", COLD_LATTICE_IQ2S }, { "iq3_xxs", COLD_LATTICE_IQ3XXS },
        { "iq3_s", COLD_LATTICE_IQ3S },
    };
    int rc = ANVIL_E_INTERNAL;
    size_t u = 0;
    while (u < sizeof uses / sizeof uses[0] && strcmp(uses[u].name, name) != 0) {
        ++u;
    }
    rc = u < sizeof uses / sizeof uses[0] ? anvil_ref_cold_lattice_init_one(uses[u].id)
                                          : anvil_ref_cold_lattice_init();
    if (rc != ANVIL_OK) {
        anvil_ref_message(msg, msg_size, "%s: the lattice search tables failed their self-check", name);
    }
    return rc;
}

int anvil_cold_refuse_overflow(const char *name, size_t ibl, int group, int ib, const float *xb,
                               const char *ggml_does, char *msg, size_t msg_size) {
    float amax = 0.0f;
    for (int i = 0; i < group; ++i) {
        amax = fabsf(xb[i]) > amax ? fabsf(xb[i]) : amax;
    }
    const size_t first = ibl * 256 + (size_t)group * (size_t)ib;
    anvil_ref_message(msg, msg_size,
                      "%s: block %zu (elements %zu..%zu, largest magnitude %g): the lattice search's "
                      "squared errors overflow float at this magnitude (and these weights), where ggml "
                      "%s; no byte-exact encoding exists (scale the tensor down before quantizing)",
                      name, ibl, first, first + (size_t)group - 1, (double)amax, ggml_does);
    return ANVIL_E_UNSUPPORTED;
}

/* ggml's MAX chain from xval[0] over n values. */
static float max_chain(const float *xval, int n) {
    float max = xval[0];
    for (int i = 1; i < n; ++i) {
        max = cold_max(max, xval[i]);
    }
    return max;
}

#if COLD_SWEEP_AVX2
/* anvil_cold_group_setup for n = 16 or 32 on AVX-512F, 16 elements per
 * vector, every value as the portable path computes it: sqrt (IEEE, as
 * sqrtf), the select of x or -x (x >= 0 is false for NaN), the even-parity
 * flip at the first smallest weight x^2 of each 8 (a NaN never replaces;
 * a NaN first element keeps index 0), found by a min within each half
 * vector and the first equal lane. The MAX chain equals the vector maximum
 * unless a value is NaN or the maximum is a zero (its sign then follows
 * the chain's order): those take the chain. */
AVX512 static float group_setup_avx512(const float *xb, const float *weight, int n, int even, float *waux,
                                       float *xval, uint8_t *signs) {
    const __m512i sign_bit = _mm512_set1_epi32(INT32_MIN);
    const __m512 inf = _mm512_set1_ps(INFINITY);
    __m512 vmax = _mm512_set1_ps(-INFINITY);
    int nan_seen = 0;
    for (int h = 0; h < n / 16; ++h) {
        const __m512 x = _mm512_loadu_ps(xb + 16 * h), w = _mm512_loadu_ps(weight + 16 * h);
        _mm512_storeu_ps(waux + 16 * h, _mm512_sqrt_ps(w));
        const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ);
        __m512i r =
            _mm512_mask_blend_epi32(keep, _mm512_xor_si512(_mm512_castps_si512(x), sign_bit), _mm512_castps_si512(x));
        unsigned neg = (unsigned)(uint16_t)~keep;
        if (even) {
            const __m512 v = _mm512_mul_ps(_mm512_mul_ps(w, x), x);
            const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
            const __m512 vr = _mm512_mask_blend_ps(nan, v, inf);
            __m512 m = _mm512_min_ps(vr, _mm512_shuffle_f32x4(vr, vr, _MM_SHUFFLE(2, 3, 0, 1)));
            m = _mm512_min_ps(m, _mm512_permute_ps(m, 0x4E));
            m = _mm512_min_ps(m, _mm512_permute_ps(m, 0xB1));
            const unsigned first = _mm512_mask_cmp_ps_mask((__mmask16)~nan, vr, m, _CMP_EQ_OQ);
            uint32_t flip = 0;
            for (int k = 0; k < 2; ++k) {
                const unsigned s8 = (neg >> (8 * k)) & 0xFFu, f8 = (first >> (8 * k)) & 0xFFu;
                const unsigned imin = (nan >> (8 * k)) & 1u || f8 == 0 ? 0u : (unsigned)__builtin_ctz(f8);
                flip |= ((unsigned)__builtin_popcount(s8) & 1u) << (8 * k + imin);
            }
            r = _mm512_mask_xor_epi32(r, (__mmask16)flip, r, sign_bit);
            neg ^= flip;
        }
        const __m512 rf = _mm512_castsi512_ps(r);
        _mm512_storeu_ps(xval + 16 * h, rf);
        signs[2 * h] = (uint8_t)(neg & (even ? 127u : 255u));
        signs[2 * h + 1] = (uint8_t)((neg >> 8) & (even ? 127u : 255u));
        nan_seen |= _mm512_cmp_ps_mask(rf, rf, _CMP_UNORD_Q) != 0;
        vmax = _mm512_max_ps(vmax, rf);
    }
    const float max = _mm512_reduce_max_ps(vmax);
    return nan_seen || max == 0.0f ? max_chain(xval, n) : max;
}
#endif

static float group_setup_portable(const float *xb, const float *weight, int n, int even, float *waux, float *xval,
                                  uint8_t *signs) {
    for (int i = 0; i < n; ++i) {
        waux[i] = sqrtf(weight[i]);
    }
    for (int k = 0; k < n / 8; ++k) {
        signs[k] = even ? anvil_cold_split_signs_even(xb + 8 * k, weight + 8 * k, xval + 8 * k)
                        : anvil_cold_split_signs(xb + 8 * k, xval + 8 * k);
    }
    return max_chain(xval, n);
}

float anvil_cold_group_setup_isa(const float *xb, const float *weight, int n, int even, float *waux, float *xval,
                                 uint8_t *signs, cold_isa isa) {
#if COLD_SWEEP_AVX2
    if ((n == 16 || n == 32) && isa_pick(isa) == COLD_ISA_WIDE) {
        return group_setup_avx512(xb, weight, n, even, waux, xval, signs);
    }
#endif
    (void)isa;
    return group_setup_portable(xb, weight, n, even, waux, xval, signs);
}

float anvil_cold_group_setup(const float *xb, const float *weight, int n, int even, float *waux, float *xval,
                             uint8_t *signs) {
    return anvil_cold_group_setup_isa(xb, weight, n, even, waux, xval, signs, COLD_ISA_BEST);
}

int anvil_cold_sweep_group(const cold_sweep *p, const float *xval, const float *weight, const float *waux, float max,
                           float scale0, uint8_t *signs, uint8_t sign_mask, int *idx, float *scale) {
    int8_t L[32];
    if (anvil_cold_sweep(p, xval, weight, waux, max, scale0, L, scale) != ANVIL_OK) {
        return ANVIL_E_UNSUPPORTED;
    }
    if (*scale < 0) {
        /* ggml: "should never happen"; flips the stored signs. */
        *scale = -*scale;
        for (int k = 0; k < p->n / 8; ++k) {
            signs[k] = (uint8_t)(~signs[k] & sign_mask);
        }
    }
    const int dims = p->lat->dims;
    for (int k = 0; k < p->n / dims; ++k) {
        /* Off the grid only where the sweep left L unrounded: a NaN scale,
         * which ggml refuses either way. */
        idx[k] = cold_grid_index(p->lat, L + dims * k);
        if (idx[k] < 0) {
            return ANVIL_E_UNSUPPORTED;
        }
    }
    return *scale >= 0 ? ANVIL_OK : ANVIL_E_UNSUPPORTED;
}
