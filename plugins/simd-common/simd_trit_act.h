/* SPDX-License-Identifier: MIT */
/* Base-3 trit bytes (TQ1_0's packing, PTQTP's planes) against Q8_K, shared
 * by the SIMD backends: the activation row rearranged once per mat-vec so
 * that a weight byte's five trits meet their activations lane for lane,
 * and the entry points (vec_dot, gemv, gemm) that prepare it. Header only,
 * no intrinsics, so each backend compiles it with its own flags.
 *
 * Why. A 52-byte trit group (qs[48] + qh[4]) holds trit j of byte m at
 *     bytes  0..31   element       32 j + m         (j < 5)
 *     bytes 32..47   element 160 + 16 j + (m - 32)  (j < 5)
 *     bytes 48..51   element 240 +  4 j + (m - 48)  (j < 4)
 * and trit j comes out of state j of the byte (s_0 = x, s_{j+1} = 3 s_j mod
 * 256; digit d_j = floor(3 s_j / 256), trit d_j - 1). Kept in its byte
 * order, all 52 bytes take one vector and each level one multiply by 3 --
 * provided the activations come in the same order: lane m of level j the
 * activation of byte m's trit j (zero where there is none: bytes 48..51 at
 * level 4, lanes 52..63). That order is made here, once per activation
 * block, for every weight row and plane.
 *
 * And since 3 s_j = 256 d_j + s_{j+1} exactly, a digit never needs to be
 * formed: sum d_j q = (3 sum s_j q - sum s_{j+1} q) / 256, two u8 x s8
 * dot products of the states themselves (vpdpbusd) -- and the trits'
 * sum is that minus the activations' total (kept here too).
 *
 * Layout of one prepared block (simd_trit_act): q[j][m] as above, the
 * Q8_K scale d, the total of its 256 codes, the sums of its codes
 * 16 j .. 16 j + 15 (PTQTP-S's per-sub-block level bias; summed here, not
 * read from Q8_K's bsums, so the codes alone decide the result), and `carry`: 0 in the first
 * chunk of a row (the rows' sums start at 0), 1 after (they continue from
 * y, which holds the sums so far: the same float operations in the same
 * order as one pass over the whole row).
 *
 * A backend provides `<fmt>_rows(nb, w, ws, act, y, R, pf)` reading
 * simd_trit_act records (stride sizeof(simd_trit_act)) and invokes
 * SIMD_DEFINE_TRIT_ENTRY_POINTS(fmt, bytes).
 */
#ifndef ANVIL_SIMD_TRIT_ACT_H
#define ANVIL_SIMD_TRIT_ACT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "simd_row_passes.h"

#define SIMD_TRIT_Q8K_QS 4
#define SIMD_TRIT_Q8K_BYTES 292
#define SIMD_TRIT_CHUNK 32    /* blocks prepared at a time (k = 8192): 12 KiB of stack */
#define SIMD_TRIT_GEMM_COLS 4 /* gemm: activation rows per group, each SIMD_TRIT_CHUNK / 4 blocks */

typedef struct simd_trit_act {
    _Alignas(64) int8_t q[5][64];
    float d;              /* the Q8_K block's scale */
    int32_t total;        /* sum of its 256 codes */
    int32_t carry;        /* 1: the rows' sums so far are in y */
    int16_t sub_sums[16]; /* sum of codes 16 j .. 16 j + 15 */
} simd_trit_act;

/* nb Q8_K blocks at a -> out[0..nb-1]. */
static inline void simd_trit_prepare(const uint8_t *a, size_t nb, int carry, simd_trit_act *out) {
    for (size_t b = 0; b < nb; ++b, a += SIMD_TRIT_Q8K_BYTES) {
        const int8_t *qs = (const int8_t *)(a + SIMD_TRIT_Q8K_QS);
        simd_trit_act *o = &out[b];
        memset(o->q, 0, sizeof o->q);
        for (int j = 0; j < 5; ++j) {
            memcpy(&o->q[j][0], qs + 32 * j, 32);
            memcpy(&o->q[j][32], qs + 160 + 16 * j, 16);
            if (j < 4) memcpy(&o->q[j][48], qs + 240 + 4 * j, 4);
        }
        int32_t t = 0;
        for (int j = 0; j < 16; ++j) {
            int32_t u = 0;
            for (int i = 16 * j; i < 16 * j + 16; ++i) u += qs[i];
            o->sub_sums[j] = (int16_t)u; /* |u| <= 16 * 128 */
            t += u;
        }
        memcpy(&o->d, a, sizeof o->d);
        o->total = t;
        o->carry = carry;
    }
}

#define SIMD_DEFINE_TRIT_ENTRY_POINTS(fmt, bytes)                                                            \
    SIMD_DEFINE_PASSES(fmt, bytes)                                                                           \
    /* rows r0..nrows-1 against one Q8_K row, SIMD_TRIT_CHUNK blocks at a time */                            \
    static void fmt##_gemv_act(size_t n, size_t r0, size_t nrows, size_t pf_end, float *y, const uint8_t *w, \
                               size_t ws, const uint8_t *a) {                                                \
        simd_trit_act act[SIMD_TRIT_CHUNK];                                                                  \
        const size_t nb = n / 256;                                                                           \
        for (size_t c = 0; c < nb; c += SIMD_TRIT_CHUNK) {                                                   \
            const size_t m = nb - c < SIMD_TRIT_CHUNK ? nb - c : SIMD_TRIT_CHUNK;                            \
            simd_trit_prepare(a + c * SIMD_TRIT_Q8K_BYTES, m, c > 0, act);                                   \
            fmt##_gemv_from(m, r0, nrows, pf_end, y, w + c * (size_t)(bytes), ws, (const uint8_t *)act);     \
        }                                                                                                    \
    }                                                                                                        \
    static void fmt##_vec_dot(size_t n, float *s, const void *w, const void *a) {                            \
        fmt##_gemv_act(n, 0, 1, 1, s, (const uint8_t *)w, 0, (const uint8_t *)a);                            \
    }                                                                                                        \
    static void fmt##_gemv(size_t n, size_t nrows, float *y, const void *w, size_t ws, const void *a) {      \
        fmt##_gemv_act(n, 0, nrows, nrows, y, (const uint8_t *)w, ws, (const uint8_t *)a);                   \
    }                                                                                                        \
    /* groups of SIMD_TRIT_GEMM_COLS activation rows, chunks of blocks: each weight row group's     \
     * chunk is read from memory once per group, then from cache */        \
    static void fmt##_gemm(size_t n, size_t nrows, size_t m, float *y, size_t ys, const void *w, size_t ws,  \
                           const void *a, size_t as) {                                                       \
        enum { G = SIMD_TRIT_GEMM_COLS, CH = SIMD_TRIT_CHUNK / SIMD_TRIT_GEMM_COLS };                        \
        simd_trit_act act[G][CH];                                                                            \
        const uint8_t *wb = (const uint8_t *)w, *ab = (const uint8_t *)a;                                    \
        const size_t nb = n / 256;                                                                           \
        for (size_t i0 = 0; i0 < m; i0 += G) {                                                               \
            const size_t g = m - i0 < G ? m - i0 : G;                                                        \
            for (size_t c = 0; c < nb; c += CH) {                                                            \
                const size_t cb = nb - c < CH ? nb - c : CH;                                                 \
                for (size_t i = 0; i < g; ++i) {                                                             \
                    simd_trit_prepare(ab + (i0 + i) * as + c * SIMD_TRIT_Q8K_BYTES, cb, c > 0, act[i]);      \
                }                                                                                            \
                const uint8_t *wc = wb + c * (size_t)(bytes);                                                \
                for (size_t r = 0; r < nrows; r += 8) {                                                      \
                    const size_t r1 = nrows - r < 8 ? nrows : r + 8;                                         \
                    const size_t r2 = nrows - r1 < 8 ? nrows : r1 + 8;                                       \
                    for (size_t i = 0; i < g; ++i) {                                                         \
                        fmt##_gemv_from(cb, r, r1, i == 0 ? r2 : r1, y + (i0 + i) * ys, wc, ws,              \
                                        (const uint8_t *)act[i]);                                            \
                    }                                                                                        \
                }                                                                                            \
            }                                                                                                \
        }                                                                                                    \
    }

#endif
