/* SPDX-License-Identifier: MIT */
/* backend-neon: vec_dot, gemv and gemm of a format from its R-row kernel,
 * through the SIMD backends' shared row passes (simd-common
 * simd_row_passes.h: passes of 8, 4, 2, 1 rows, software prefetch of the
 * next pass, gemm runs every activation row against a group of 8 weight
 * rows while it is in cache).
 *
 * A kernel file defines `<fmt>_rows(nb, w, ws, a, y, R, pf)` (see
 * simd_row_passes.h), then NEON_ROWS_EXPORT(fmt, act, block, bytes) gives
 * the variant's three exported entry points
 *   anvil_neon_{vec_dot,gemv,gemm}_<fmt>_<act>_<variant>
 * declared in neon_kernels.h (ANVIL_NEON_DECLARE_ROWS).
 *
 * The rows kernels keep one float accumulator per row and run each row
 * through the referee's float operations in its order (block by block),
 * so every output is the referee's dot to the bit whatever pass covers it.
 */
#ifndef ANVIL_BACKEND_NEON_ROWS_H
#define ANVIL_BACKEND_NEON_ROWS_H

#include "neon_util.h"
#include "simd_row_passes.h"

#define NEON_ROWS_EXPORT(fmt, act, block, bytes)                                                            \
    SIMD_DEFINE_ENTRY_POINTS(fmt, block, bytes)                                                             \
    void NEON_FN(anvil_neon_vec_dot_##fmt##_##act)(size_t n, float *s, const void *w, const void *a) {      \
        fmt##_vec_dot(n, s, w, a);                                                                          \
    }                                                                                                       \
    void NEON_FN(anvil_neon_gemv_##fmt##_##act)(size_t n, size_t nrows, float *y, const void *w, size_t ws, \
                                                const void *a) {                                            \
        fmt##_gemv(n, nrows, y, w, ws, a);                                                                  \
    }                                                                                                       \
    void NEON_FN(anvil_neon_gemm_##fmt##_##act)(size_t n, size_t nrows, size_t m, float *y, size_t ys,      \
                                                const void *w, size_t ws, const void *a, size_t as) {       \
        fmt##_gemm(n, nrows, m, y, ys, w, ws, a, as);                                                       \
    }

#endif
