/* SPDX-License-Identifier: MIT */
/* Row passes shared by the SIMD backends (backend-avx2, backend-avx512):
 * how a gemv/gemm walks the weight rows in passes of R rows, and the
 * software prefetch that runs alongside. Header only, no intrinsics
 * (__builtin_prefetch), so each backend compiles it with its own flags.
 *
 * A backend provides, per format, `<fmt>_rows(nb, w, ws, a, y, R, pf)`:
 * R (8, 4, 2 or 1, a constant after inlining) weight rows at w (stride ws)
 * against one activation row a, nb blocks, results to y[0..R-1], calling
 * simd_pf_block(pf, b, bytes, ws, R) once per block b (pf may be NULL).
 * SIMD_DEFINE_ENTRY_POINTS then defines vec_dot, gemv and gemm from it
 * (SIMD_DEFINE_ENTRY_POINTS_R4: passes of at most 4 rows, see there).
 */
#ifndef ANVIL_SIMD_ROW_PASSES_H
#define ANVIL_SIMD_ROW_PASSES_H

#include <stddef.h>
#include <stdint.h>

#define SIMD_INLINE static inline __attribute__((always_inline))

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
 * prefetch instructions measurably cost. Measured on Zen 3 (tests/simd has
 * no timing; see the bench): out of cache the 8-row passes went from
 * 0.8 - 1.1x to 1.2 - 1.7x of ggml, and in L2 the cost is within noise. */

#define SIMD_PF_PER_ROW_MIN 20480 /* pass bytes (R rows) from which per-row wins */
#define SIMD_PF_ROW_LEAD 448      /* per-row mode: bytes ahead in each row */

typedef struct simd_pf {
    const uint8_t *cur;  /* per row: row 0 of this pass */
    const uint8_t *next; /* linear: cursor in the next pass; per row: its row 0 (NULL: none) */
    const uint8_t *end;  /* linear: end of the next pass's bytes */
    size_t row_bytes;    /* per row: bytes of one row */
    size_t cap;          /* per row: where the cursor stops */
    size_t pos;          /* per row: cursor, byte offset in the rows */
    int per_row;
} simd_pf;

SIMD_INLINE void simd_pf_line(const uint8_t *p) { __builtin_prefetch(p, 0, 3); /* prefetcht0 */ }

/* One line in each of R rows at p (stride ws), written so that the
 * addresses come out as base + index * {1, 2, 4} from two bases. */
SIMD_INLINE void simd_pf_rows(const uint8_t *p, size_t ws, const int R) {
    simd_pf_line(p);
    if (R > 1) simd_pf_line(p + ws);
    if (R > 2) {
        const uint8_t *p3 = p + 3 * ws;
        simd_pf_line(p + 2 * ws);
        simd_pf_line(p3);
        if (R > 4) {
            simd_pf_line(p + 4 * ws);
            simd_pf_line(p3 + 2 * ws);
            simd_pf_line(p + 6 * ws);
            simd_pf_line(p3 + 4 * ws);
        }
    }
}

/* Set up for a pass of R rows at w (nb blocks of bb bytes, stride ws)
 * followed by a pass of next_rows rows at next. */
SIMD_INLINE void simd_pf_init(simd_pf *pf, const uint8_t *w, size_t nb, size_t bb, size_t ws, const int R,
                              const uint8_t *next, size_t next_rows) {
    pf->per_row = (size_t)R * ws >= SIMD_PF_PER_ROW_MIN;
    pf->cur = w;
    pf->row_bytes = nb * bb;
    if (pf->per_row) {
        /* the run into the next pass needs R rows there (else stop at the
         * row end), and stays inside their first row_bytes */
        const size_t run = pf->row_bytes < SIMD_PF_ROW_LEAD ? pf->row_bytes : SIMD_PF_ROW_LEAD;
        pf->next = next_rows == (size_t)R ? next : NULL;
        pf->cap = pf->next != NULL ? pf->row_bytes + run : pf->row_bytes;
        pf->pos = SIMD_PF_ROW_LEAD;
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
SIMD_INLINE void simd_pf_block(simd_pf *pf, size_t b, const size_t bb, size_t ws, const int R) {
    const size_t S = bb >= 128 ? 1 : bb >= 64 ? 2 : bb >= 32 ? 4 : 8;
    if (pf == NULL || (b & (S - 1)) != 0) return;
    if (!pf->per_row) {
        const size_t lines = (S * (size_t)R * bb + 63) / 64;
        if (pf->next != NULL && (size_t)(pf->end - pf->next) >= 64 * lines) {
#pragma GCC unroll 64
            for (size_t i = 0; i < lines; ++i) simd_pf_line(pf->next + 64 * i);
            pf->next += 64 * lines;
        }
        return;
    }
    size_t lim = (b + S) * bb + SIMD_PF_ROW_LEAD;
    if (lim > pf->cap) lim = pf->cap;
    for (; pf->pos < lim; pf->pos += 64) {
        /* past the row end, the same offsets in the next pass's rows */
        const uint8_t *p = pf->pos < pf->row_bytes ? pf->cur + pf->pos : pf->next + (pf->pos - pf->row_bytes);
        simd_pf_rows(p, ws, R);
    }
}

/* `<fmt>_rows` as a K-parameterised kernel impl(nb, w, ws, a, y, R, pf, K)
 * with K fixed: formats that differ only in their plane count. */
#define SIMD_DEFINE_ROWS_K(fmt, impl, K)                                                                         \
    SIMD_INLINE void fmt##_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R, \
                                simd_pf *pf) {                                                                   \
        impl(nb, w, ws, a, y, R, pf, K);                                                                         \
    }

/* The same, with the entry points of a 256-element block of `bytes` bytes
 * (SIMD_DEFINE_ENTRY_POINTS below). */
#define SIMD_DEFINE_ENTRY_POINTS_K(fmt, impl, K, bytes) \
    SIMD_DEFINE_ROWS_K(fmt, impl, K)                    \
    SIMD_DEFINE_ENTRY_POINTS(fmt, 256, bytes)

/* vec_dot, gemv and gemm of a format from its R-row kernel
 * `<fmt>_rows(nb, w, w_stride, a, y, R, pf)` (nb blocks of `block`
 * elements, pf NULL or the prefetch state for this pass).
 * gemv runs 8 rows per pass, then 4, 2, 1, each pass prefetching the rows
 * of the next one. gemm walks the weight rows in groups of 8 and runs every
 * activation row against a group while its bytes are still in L1/L2: the
 * weights are read from memory once, not m times (the first activation row
 * prefetches the next group). */
/* The passes alone: `<fmt>_pass` and `<fmt>_gemv_from(nb, r0, nrows,
 * pf_end, y, w, ws, a)` (rows r0..nrows-1, prefetching on up to row
 * pf_end), for entry points that prepare the activation row first.
 * maxr (8 or 4): the most rows per pass. */
#define SIMD_DEFINE_PASSES(fmt, bytes) SIMD_DEFINE_PASSES_MAXR(fmt, bytes, 8)
#define SIMD_DEFINE_PASSES_MAXR(fmt, bytes, maxr)                                                                \
    /* one pass of R rows at row r; the next pass starts at row r + R and ends at `end` */                       \
    static inline __attribute__((always_inline)) void fmt##_pass(                                                \
        size_t nb, size_t r, const int R, size_t end, float *y, const uint8_t *w, size_t ws, const uint8_t *a) { \
        const size_t left = end - r - (size_t)R;                                                                 \
        simd_pf pf = { 0 };                                                                                      \
        simd_pf_init(&pf, w + r * ws, nb, (bytes), ws, R, w + (r + (size_t)R) * ws, left < 8 ? left : 8);        \
        /* two copies, so the mode is a constant inside each */                                                  \
        if (pf.per_row) {                                                                                        \
            fmt##_rows(nb, w + r * ws, ws, a, y + r, R, &pf);                                                    \
        } else {                                                                                                 \
            fmt##_rows(nb, w + r * ws, ws, a, y + r, R, &pf);                                                    \
        }                                                                                                        \
    }                                                                                                            \
    static void fmt##_gemv_from(size_t nb, size_t r0, size_t nrows, size_t pf_end, float *y, const uint8_t *w,   \
                                size_t ws, const uint8_t *a) {                                                   \
        size_t r = r0;                                                                                           \
        for (; (maxr) >= 8 && r + 8 <= nrows; r += 8) {                                                          \
            fmt##_pass(nb, r, 8, r + 8 < nrows ? nrows : pf_end, y, w, ws, a);                                   \
        }                                                                                                        \
        for (; r + 4 <= nrows; r += 4) fmt##_pass(nb, r, 4, r + 4 < nrows ? nrows : pf_end, y, w, ws, a);        \
        if (r + 2 <= nrows) {                                                                                    \
            fmt##_pass(nb, r, 2, r + 2 < nrows ? nrows : pf_end, y, w, ws, a);                                   \
            r += 2;                                                                                              \
        }                                                                                                        \
        if (r < nrows) fmt##_pass(nb, r, 1, r + 1 < nrows ? nrows : pf_end, y, w, ws, a);                        \
    }

/* Passes of 4 rows instead of 8, for a format whose kernel is so much
 * faster than memory that only the access pattern counts. TQ2_0 (66-byte
 * blocks), AVX-512 VNNI, Zen 4, 1 thread, out of cache (32000 x 8192):
 * 8-row passes read 9 - 10 GB/s, 0.8x of ggml's one-row loop; 4-row passes
 * 14 - 18 GB/s, 1.4x (AVX2 5.6 -> 15 GB/s). In L3 (4096 x 4096) the 8-row
 * pass is faster (25.8 against 21.1 GB/s AVX-512, 23.2 / 22.0 AVX2); the
 * weights of a real model do not stay in cache. */
#define SIMD_DEFINE_ENTRY_POINTS_R4(fmt, block, bytes) SIMD_DEFINE_ENTRY_POINTS_MAXR(fmt, block, bytes, 4)
#define SIMD_DEFINE_ENTRY_POINTS(fmt, block, bytes) SIMD_DEFINE_ENTRY_POINTS_MAXR(fmt, block, bytes, 8)
#define SIMD_DEFINE_ENTRY_POINTS_MAXR(fmt, block, bytes, maxr)                                              \
    static void fmt##_vec_dot(size_t n, float *s, const void *w, const void *a) {                           \
        fmt##_rows(n / (block), (const uint8_t *)w, 0, (const uint8_t *)a, s, 1, NULL);                     \
    }                                                                                                       \
    SIMD_DEFINE_PASSES_MAXR(fmt, bytes, maxr)                                                               \
    static void fmt##_gemv(size_t n, size_t nrows, float *y, const void *w, size_t ws, const void *a) {     \
        fmt##_gemv_from(n / (block), 0, nrows, nrows, y, (const uint8_t *)w, ws, (const uint8_t *)a);       \
    }                                                                                                       \
    static void fmt##_gemm(size_t n, size_t nrows, size_t m, float *y, size_t ys, const void *w, size_t ws, \
                           const void *a, size_t as) {                                                      \
        const uint8_t *wb = (const uint8_t *)w, *ab = (const uint8_t *)a;                                   \
        for (size_t r = 0; r < nrows; r += 8) {                                                             \
            const size_t r1 = nrows - r < 8 ? nrows : r + 8;                                                \
            const size_t r2 = nrows - r1 < 8 ? nrows : r1 + 8;                                              \
            for (size_t i = 0; i < m; ++i) {                                                                \
                fmt##_gemv_from(n / (block), r, r1, i == 0 ? r2 : r1, y + i * ys, wb, ws, ab + i * as);     \
            }                                                                                               \
        }                                                                                                   \
    }

#endif
