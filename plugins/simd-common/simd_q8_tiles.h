/* SPDX-License-Identifier: MIT */
/* The driver of the tiled Q8_0 GEMM shared by backend-avx2 and
 * backend-avx512: activation rows taken in chunks whose repacked blocks
 * fill about SIMD_Q8T_CHUNK_BYTES (L2), each chunk's activations prepared
 * once, each group of Q8T_R weight rows repacked once per chunk, then every
 * Q8T_C-row activation tile of the chunk run against it. The bytes of y do
 * not depend on the chunking: each (row, column) is one tile lane's exact
 * block sums in block order. Header only, no intrinsics.
 *
 * A backend defines, before SIMD_DEFINE_Q8T_GEMM(min_m, min_tiles):
 *   q8t_block, q8t_act      one repacked weight block (Q8T_R rows) and one
 *                           prepared activation block (Q8T_C rows)
 *   Q8T_R, Q8T_C            the tile's weight and activation rows
 *   q8t_prep(nb, rows, a, as, pa)   rows activation rows -> pa
 *   q8t_pack(nb, w, ws, rows, wp)   rows (<= Q8T_R) weight rows -> wp
 *   q8t_tile_any(nb, wp, pa, y, ys, rows, cols)  one tile into y
 *   q8_0_gemm                the gemv passes: for m below min_m, and when
 *                            the buffer cannot be had
 * and gets q8_0_gemm_tiled with anvil_gemm_fn's signature. min_tiles:
 * the fewest tiles a chunk holds (so that repacking stays small against
 * the tiles whatever the row length).
 */
#ifndef ANVIL_SIMD_Q8_TILES_H
#define ANVIL_SIMD_Q8_TILES_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define SIMD_Q8T_CHUNK_BYTES (256 * 1024)

#define SIMD_DEFINE_Q8T_GEMM(min_m, min_tiles)                                                                   \
    static void q8_0_gemm_tiled(size_t n, size_t nrows, size_t m, float *y, size_t ys, const void *w, size_t ws, \
                                const void *a, size_t as) {                                                      \
        const size_t nb = n / 32;                                                                                \
        if (m < (min_m) || nb == 0 || nb > SIZE_MAX / 16 / sizeof(q8t_block) / (min_tiles)) {                    \
            q8_0_gemm(n, nrows, m, y, ys, w, ws, a, as);                                                         \
            return;                                                                                              \
        }                                                                                                        \
        const size_t tiles = (m + Q8T_C - 1) / Q8T_C;                                                            \
        size_t chunk = SIMD_Q8T_CHUNK_BYTES / (nb * sizeof(q8t_act));                                            \
        if (chunk < (min_tiles)) chunk = (min_tiles);                                                            \
        if (chunk > tiles) chunk = tiles;                                                                        \
        const size_t wbytes = (nb * sizeof(q8t_block) + 63) / 64 * 64;                                           \
        const size_t abytes = (chunk * nb * sizeof(q8t_act) + 63) / 64 * 64;                                     \
        uint8_t *buf = aligned_alloc(64, wbytes + abytes);                                                       \
        if (buf == NULL) {                                                                                       \
            q8_0_gemm(n, nrows, m, y, ys, w, ws, a, as);                                                         \
            return;                                                                                              \
        }                                                                                                        \
        q8t_block *wp = (q8t_block *)buf;                                                                        \
        q8t_act *pa = (q8t_act *)(buf + wbytes);                                                                 \
        const uint8_t *wb = w, *ab = a;                                                                          \
        for (size_t t0 = 0; t0 < tiles; t0 += chunk) {                                                           \
            const size_t t1 = tiles - t0 < chunk ? tiles : t0 + chunk;                                           \
            const size_t c0 = t0 * Q8T_C, c1 = t1 * Q8T_C < m ? t1 * Q8T_C : m;                                  \
            q8t_prep(nb, c1 - c0, ab + c0 * as, as, pa);                                                         \
            for (size_t r = 0; r < nrows; r += Q8T_R) {                                                          \
                const size_t rows = nrows - r < Q8T_R ? nrows - r : Q8T_R;                                       \
                q8t_pack(nb, wb + r * ws, ws, rows, wp);                                                         \
                for (size_t t = t0; t < t1; ++t) {                                                               \
                    const size_t c = t * Q8T_C;                                                                  \
                    const int C = m - c < Q8T_C ? (int)(m - c) : Q8T_C;                                          \
                    q8t_tile_any(nb, wp, pa + (t - t0) * nb, y + c * ys + r, ys, rows, C);                       \
                }                                                                                                \
            }                                                                                                    \
        }                                                                                                        \
        free(buf);                                                                                               \
    }

#endif
