/* Helpers shared by the AVX2 kernel files (compiled with -mavx2 -mfma
 * -mf16c; never included by backend_avx2.c, which stays baseline x86-64).
 *
 * How every kernel here is built, and why:
 *
 *  - A kernel computes R weight rows against one activation row in one pass
 *    (R = 8, 4, 2 or 1, a compile-time constant after inlining), so each
 *    activation block is loaded once for R rows and the per-row work runs as
 *    R independent dependency chains.
 *  - Per block (or super-block) each row's integer dot is reduced to ONE
 *    exact int32, the same integer the scalar reference computes. Lane r of
 *    a vector then carries row r through the float part, which performs the
 *    reference's float operations in the reference's order. Single float
 *    lanes round exactly like scalar code (the build has no FP contraction),
 *    so every result is bit-identical to plugins/ref -- stronger than the
 *    ABI's 1e-5 bound -- and a row's value cannot depend on R, on which
 *    other rows share its pass, or on the thread that ran it. (One
 *    exception, IQ4_XS, keeps the integer parts but folds the reference's
 *    per-sub-block float terms into one per block; see avx2_cold.c.)
 *  - Activations come from an activation quantizer, so their codes lie in
 *    [-127, 127] and Q8_K bsums match qs. The signed-by-signed products use
 *    |w| (unsigned) times a with w's sign, which is exact for any weight
 *    byte, -128 included, given that range.
 *  - Blocks are read with unaligned loads and memcpy: rows may start at any
 *    byte address (a tensor inside a mapped file).
 */
#ifndef ANVIL_AVX2_COMMON_H
#define ANVIL_AVX2_COMMON_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "anvil/backend.h"
#include "anvil/blocks.h"

#define AVX2_INLINE static inline __attribute__((always_inline))

AVX2_INLINE uint16_t avx2_u16(const uint8_t *p) {
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

AVX2_INLINE uint32_t avx2_u32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

AVX2_INLINE float avx2_f32(const uint8_t *p) {
    float v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* fp16 -> fp32 with F16C: exact, like anvil_fp16_to_fp32 (a signalling NaN
 * comes back quiet; every product with it is the same quiet NaN). */
AVX2_INLINE float avx2_half(const uint8_t *p) { return _cvtsh_ss(avx2_u16(p)); }

AVX2_INLINE __m256i avx2_load(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }
/* A load the compiler must keep in a register: when a vector is both
 * masked and shifted, compilers fold it into the AND as a memory operand
 * and load it a second time for the shift, and the L1 load ports are a
 * bottleneck of these kernels. */
AVX2_INLINE __m256i avx2_load_reg(const void *p) {
    __m256i v = _mm256_loadu_si256((const __m256i *)p);
    __asm__("" : "+x"(v));
    return v;
}
/* v, as a value the compiler cannot see through. Integer adds being
 * associative, compilers otherwise regroup a long accumulation into a
 * tree: every partial product of a block is computed first and kept
 * live, far more than sixteen registers hold, and spilled. */
AVX2_INLINE __m256i avx2_opaque(__m256i v) {
    __asm__("" : "+x"(v));
    return v;
}
/* 16 bytes at p in both 128-bit halves: a plain load on Zen 3 (no
 * shuffle uop), unlike a broadcast from a register. */
AVX2_INLINE __m256i avx2_load_lane(const void *p) { return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)p)); }
AVX2_INLINE __m128i avx2_load128(const void *p) { return _mm_loadu_si128((const __m128i *)p); }

/* The fp16 at p + r * stride for r < R, as floats in lanes 0..R-1 (the
 * other lanes are zero). */
AVX2_INLINE __m256 avx2_halves(const uint8_t *p, size_t stride, const int R) {
    __m128i h = _mm_cvtsi32_si128(avx2_u16(p));
    if (R > 1) h = _mm_insert_epi16(h, avx2_u16(p + stride), 1);
    if (R > 2) {
        h = _mm_insert_epi16(h, avx2_u16(p + 2 * stride), 2);
        h = _mm_insert_epi16(h, avx2_u16(p + 3 * stride), 3);
    }
    if (R > 4) {
        h = _mm_insert_epi16(h, avx2_u16(p + 4 * stride), 4);
        h = _mm_insert_epi16(h, avx2_u16(p + 5 * stride), 5);
        h = _mm_insert_epi16(h, avx2_u16(p + 6 * stride), 6);
        h = _mm_insert_epi16(h, avx2_u16(p + 7 * stride), 7);
    }
    return _mm256_cvtph_ps(h);
}

/* One step of a transposing reduction: for a and b with the same layout,
 * lanes 2i get a's pairwise sums (lanes 2i + 2i+1 of a) and lanes 2i+1
 * b's, when mask = 0xAA, shuf = 0xB1; with mask = 0xCC, shuf = 0x4E the
 * same at 64-bit granularity. Two blends (any vector pipe), one in-lane
 * shuffle and an add: a horizontal add takes twice a shuffle's slot on
 * Zen 3, and these reductions run once per block. */
#define AVX2_FOLD(a, b, mask, shuf)                                                                     \
    _mm256_add_epi32(_mm256_blend_epi32((a), (b), (mask)),                                              \
                     _mm256_shuffle_epi32(_mm256_blend_epi32((b), (a), (mask)), (shuf)))

/* Lane r = sum of the eight int32 lanes of m[r], for r < R. Integer adds
 * are exact, so the grouping does not matter. Horizontal adds: fewest
 * instructions, but each takes two shuffle-pipe slots on Zen 3. */
AVX2_INLINE __m256i avx2_reduce(const __m256i *m, const int R) {
    if (R == 1) {
        __m128i s = _mm_add_epi32(_mm256_castsi256_si128(m[0]), _mm256_extracti128_si256(m[0], 1));
        s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
        return _mm256_zextsi128_si256(s);
    }
    if (R == 2) {
        const __m256i t = _mm256_hadd_epi32(m[0], m[1]);
        const __m256i u = _mm256_hadd_epi32(t, t);
        return _mm256_zextsi128_si256(_mm_add_epi32(_mm256_castsi256_si128(u), _mm256_extracti128_si256(u, 1)));
    }
    const __m256i u0 = _mm256_hadd_epi32(_mm256_hadd_epi32(m[0], m[1]), _mm256_hadd_epi32(m[2], m[3]));
    if (R == 4) {
        return _mm256_zextsi128_si256(_mm_add_epi32(_mm256_castsi256_si128(u0), _mm256_extracti128_si256(u0, 1)));
    }
    const __m256i u1 = _mm256_hadd_epi32(_mm256_hadd_epi32(m[4], m[5]), _mm256_hadd_epi32(m[6], m[7]));
    return _mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20), _mm256_permute2x128_si256(u0, u1, 0x31));
}

/* Lane r = sum of the four int32 lanes of m[r], for r < R. Rows r and
 * r + 4 share a vector (low / high half), which saves the last step. */
AVX2_INLINE __m256i avx2_reduce128(const __m128i *m, const int R) {
    if (R < 8) {
        __m256i v[4];
        for (int r = 0; r < R; ++r) v[r] = _mm256_zextsi128_si256(m[r]);
        return avx2_reduce(v, R);
    }
    const __m256i v0 = _mm256_set_m128i(m[4], m[0]), v1 = _mm256_set_m128i(m[5], m[1]);
    const __m256i v2 = _mm256_set_m128i(m[6], m[2]), v3 = _mm256_set_m128i(m[7], m[3]);
    /* low half rows 0..3, high half rows 4..7 */
    return AVX2_FOLD(AVX2_FOLD(v0, v1, 0xAA, 0xB1), AVX2_FOLD(v2, v3, 0xAA, 0xB1), 0xCC, 0x4E);
}

/* Sum of the eight int32 lanes of v (a vec_dot's reductions). */
AVX2_INLINE int avx2_hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}

/* y[r] = lane r of v, for r < R. */
AVX2_INLINE void avx2_store_rows(float *y, __m256 v, const int R) {
    if (R == 8) {
        _mm256_storeu_ps(y, v);
    } else if (R == 4) {
        _mm_storeu_ps(y, _mm256_castps256_ps128(v));
    } else if (R == 2) {
        _mm_storel_pi((__m64 *)y, _mm256_castps256_ps128(v));
    } else {
        _mm_store_ss(y, _mm256_castps256_ps128(v));
    }
}

/* sum over 32 int8 of (u8 x) * (s8 y), as 8 int32 lanes (lane i covers bytes
 * 4i..4i+3). Exact while |x * y| pairs stay below 2^15, which every caller
 * guarantees (x <= 128, |y| <= 127). */
AVX2_INLINE __m256i avx2_dot_u8s8(__m256i x, __m256i y) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), _mm256_set1_epi16(1));
}

/* The same for two signed operands: |x| times y with x's sign (x may be
 * -128; y must not be). */
AVX2_INLINE __m256i avx2_dot_s8s8(__m256i x, __m256i y) {
    return avx2_dot_u8s8(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

/* 16 bytes of packed nibbles -> 32 bytes: the low nibbles, then the high
 * ones (the Q4_0 / IQ4_NL element order). */
AVX2_INLINE __m256i avx2_nibbles(const uint8_t *p) {
    const __m256i b = _mm256_broadcastsi128_si256(avx2_load128(p));
    return _mm256_and_si256(_mm256_srlv_epi64(b, _mm256_set_epi64x(4, 4, 0, 0)), _mm256_set1_epi8(0x0F));
}

/* 32 bits -> 32 bytes: byte j is 0x10 when bit j is set, else 0 (the fifth
 * bit of a Q5_0 / Q5_1 code). */
AVX2_INLINE __m256i avx2_bit4_from_bits(uint32_t bits) {
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits),
                                               _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                                                 0x0101010101010101, 0x0000000000000000));
    const __m256i sel = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, sel), sel);
    return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

/* Kernel table entry with every optional part this backend provides. */
#define AVX2_KERNEL(ident, wtype, atype, var, dot, gv, gm, dec)                       \
    static const anvil_kernel ident = {                                              \
        .struct_size = sizeof(anvil_kernel), .weight_type = (wtype), .act_type = (atype), \
        .variant = (var), .vec_dot = (dot), .gemv = (gv), .gemm = (gm), .decode_row = (dec) }

/* ---- software prefetch of the weight rows ---------------------------------
 *
 * Why: a pass reads R rows side by side, so the weights arrive as R
 * interleaved streams that each last one row (1 - 4 KB at k = 4096), then
 * R new streams start. The hardware prefetchers train per stream and per
 * 4 KB page; on these short interleaved streams they barely get going, and
 * once the matrix is out of cache (or the L3 is shared with a busy
 * neighbour) a pass waits on DRAM at every row start: the 8-row kernels ran
 * at 0.6 - 0.9x of ggml's one-row-at-a-time loop, whose single sequential
 * stream the hardware follows perfectly. So each pass also prefetches, at
 * the rate it consumes its own rows, the bytes the next pass will read:
 *
 *  - linear: the next pass's rows in address order, spread evenly over
 *    this pass's blocks (a lead of one pass). One sequential stream, as
 *    the hardware likes it; best while a pass's rows are short.
 *  - per row: each of this pass's rows a fixed distance ahead of where it
 *    is read, running on into the next pass's rows near the end. Best for
 *    long rows, where the linear lead outgrows L1 and the row streams are
 *    long enough for the hardware to help.
 *
 * Each line is prefetched once (a byte cursor advances 64 at a time): extra
 * prefetch instructions measurably cost. Measured on Zen 3 (tests/avx2 has
 * no timing; see the bench): out of cache the 8-row passes went from
 * 0.8 - 1.1x to 1.2 - 1.7x of ggml, and in L2 the cost is within noise. */

#define AVX2_PF_PER_ROW_MIN 20480 /* pass bytes (R rows) from which per-row wins */
#define AVX2_PF_ROW_LEAD 448      /* per-row mode: bytes ahead in each row */

typedef struct avx2_pf {
    const uint8_t *cur;  /* per row: row 0 of this pass */
    const uint8_t *next; /* linear: cursor in the next pass; per row: its row 0 (NULL: none) */
    const uint8_t *end;  /* linear: end of the next pass's bytes */
    size_t row_bytes;    /* per row: bytes of one row */
    size_t cap;          /* per row: where the cursor stops */
    size_t pos;          /* per row: cursor, byte offset in the rows */
    int per_row;
} avx2_pf;

AVX2_INLINE void avx2_pf_line(const uint8_t *p) { _mm_prefetch((const char *)p, _MM_HINT_T0); }

/* One line in each of R rows at p (stride ws), written so that the
 * addresses come out as base + index * {1, 2, 4} from two bases. */
AVX2_INLINE void avx2_pf_rows(const uint8_t *p, size_t ws, const int R) {
    avx2_pf_line(p);
    if (R > 1) avx2_pf_line(p + ws);
    if (R > 2) {
        const uint8_t *p3 = p + 3 * ws;
        avx2_pf_line(p + 2 * ws);
        avx2_pf_line(p3);
        if (R > 4) {
            avx2_pf_line(p + 4 * ws);
            avx2_pf_line(p3 + 2 * ws);
            avx2_pf_line(p + 6 * ws);
            avx2_pf_line(p3 + 4 * ws);
        }
    }
}

/* Set up for a pass of R rows at w (nb blocks of bb bytes, stride ws)
 * followed by a pass of next_rows rows at next. */
AVX2_INLINE void avx2_pf_init(avx2_pf *pf, const uint8_t *w, size_t nb, size_t bb, size_t ws, const int R,
                              const uint8_t *next, size_t next_rows) {
    pf->per_row = (size_t)R * ws >= AVX2_PF_PER_ROW_MIN;
    pf->cur = w;
    pf->row_bytes = nb * bb;
    if (pf->per_row) {
        /* the run into the next pass needs R rows there (else stop at the
         * row end), and stays inside their first row_bytes */
        const size_t run = pf->row_bytes < AVX2_PF_ROW_LEAD ? pf->row_bytes : AVX2_PF_ROW_LEAD;
        pf->next = next_rows == (size_t)R ? next : NULL;
        pf->cap = pf->next != NULL ? pf->row_bytes + run : pf->row_bytes;
        pf->pos = AVX2_PF_ROW_LEAD;
        pf->end = NULL;
    } else {
        pf->next = next_rows ? next : NULL;
        pf->end = next_rows ? next + (next_rows - 1) * ws + nb * bb : NULL;
    }
}

/* Prefetches due while a pass reads block b. Small blocks are handled
 * every S blocks (S * bb >= 128 bytes), to keep the bookkeeping per block
 * low. Linear: a fixed whole number of lines per step (unrolled; at least
 * the bytes the pass reads per step, so the cursor keeps up, and it stops
 * before the end). Per row: one line per row each time the cursor passes
 * 64 bytes. */
AVX2_INLINE void avx2_pf_block(avx2_pf *pf, size_t b, const size_t bb, size_t ws, const int R) {
    const size_t S = bb >= 128 ? 1 : bb >= 64 ? 2 : bb >= 32 ? 4 : 8;
    if (pf == NULL || (b & (S - 1)) != 0) return;
    if (!pf->per_row) {
        const size_t lines = (S * (size_t)R * bb + 63) / 64;
        if (pf->next != NULL && (size_t)(pf->end - pf->next) >= 64 * lines) {
#pragma GCC unroll 64
            for (size_t i = 0; i < lines; ++i) avx2_pf_line(pf->next + 64 * i);
            pf->next += 64 * lines;
        }
        return;
    }
    size_t lim = (b + S) * bb + AVX2_PF_ROW_LEAD;
    if (lim > pf->cap) lim = pf->cap;
    for (; pf->pos < lim; pf->pos += 64) {
        /* past the row end, the same offsets in the next pass's rows */
        const uint8_t *p = pf->pos < pf->row_bytes ? pf->cur + pf->pos : pf->next + (pf->pos - pf->row_bytes);
        avx2_pf_rows(p, ws, R);
    }
}

/* vec_dot, gemv and gemm of a format from its R-row kernel
 * `<fmt>_rows(nb, w, w_stride, a, y, R, pf)` (nb blocks of `block`
 * elements, pf NULL or the prefetch state for this pass).
 * gemv runs 8 rows per pass, then 4, 2, 1, each pass prefetching the rows
 * of the next one. gemm walks the weight rows in groups of 8 and runs every
 * activation row against a group while its bytes are still in L1/L2: the
 * weights are read from memory once, not m times (the first activation row
 * prefetches the next group). */
#define AVX2_DEFINE_ENTRY_POINTS(fmt, block, bytes)                                                   \
    static void fmt##_vec_dot(size_t n, float *s, const void *w, const void *a) {                  \
        fmt##_rows(n / (block), (const uint8_t *)w, 0, (const uint8_t *)a, s, 1, NULL);             \
    }                                                                                               \
    /* one pass of R rows at row r; the next pass starts at row r + R and ends at `end` */          \
    static inline __attribute__((always_inline)) void fmt##_pass(                                   \
        size_t nb, size_t r, const int R, size_t end, float *y, const uint8_t *w, size_t ws,        \
        const uint8_t *a) {                                                                         \
        const size_t left = end - r - (size_t)R;                                                    \
        avx2_pf pf;                                                                                 \
        avx2_pf_init(&pf, w + r * ws, nb, (bytes), ws, R, w + (r + (size_t)R) * ws, left < 8 ? left : 8);       \
        /* two copies, so the mode is a constant inside each */                                     \
        if (pf.per_row) {                                                                           \
            fmt##_rows(nb, w + r * ws, ws, a, y + r, R, &pf);                                       \
        } else {                                                                                    \
            fmt##_rows(nb, w + r * ws, ws, a, y + r, R, &pf);                                       \
        }                                                                                           \
    }                                                                                               \
    static void fmt##_gemv_from(size_t nb, size_t r0, size_t nrows, size_t pf_end, float *y,        \
                                const uint8_t *w, size_t ws, const uint8_t *a) {                    \
        size_t r = r0;                                                                              \
        for (; r + 8 <= nrows; r += 8) fmt##_pass(nb, r, 8, r + 8 < nrows ? nrows : pf_end, y, w, ws, a); \
        if (r + 4 <= nrows) {                                                                       \
            fmt##_pass(nb, r, 4, r + 4 < nrows ? nrows : pf_end, y, w, ws, a);                      \
            r += 4;                                                                                 \
        }                                                                                           \
        if (r + 2 <= nrows) {                                                                       \
            fmt##_pass(nb, r, 2, r + 2 < nrows ? nrows : pf_end, y, w, ws, a);                      \
            r += 2;                                                                                 \
        }                                                                                           \
        if (r < nrows) fmt##_pass(nb, r, 1, r + 1 < nrows ? nrows : pf_end, y, w, ws, a);           \
    }                                                                                               \
    static void fmt##_gemv(size_t n, size_t nrows, float *y, const void *w, size_t ws,               \
                           const void *a) {                                                         \
        fmt##_gemv_from(n / (block), 0, nrows, nrows, y, (const uint8_t *)w, ws, (const uint8_t *)a); \
    }                                                                                               \
    static void fmt##_gemm(size_t n, size_t nrows, size_t m, float *y, size_t ys,                    \
                           const void *w, size_t ws, const void *a, size_t as) {                    \
        const uint8_t *wb = (const uint8_t *)w, *ab = (const uint8_t *)a;                           \
        for (size_t r = 0; r < nrows; r += 8) {                                                     \
            const size_t r1 = nrows - r < 8 ? nrows : r + 8;                                        \
            const size_t r2 = nrows - r1 < 8 ? nrows : r1 + 8;                                      \
            for (size_t i = 0; i < m; ++i) {                                                        \
                fmt##_gemv_from(n / (block), r, r1, i == 0 ? r2 : r1, y + i * ys, wb, ws, ab + i * as); \
            }                                                                                       \
        }                                                                                           \
    }

#endif
