/* SPDX-License-Identifier: MIT */
/* backend-neon: every kernel the plugin is built from, per variant.
 *
 *   _base  ARMv8.0 Advanced SIMD: widening multiplies (smull) and pairwise
 *          accumulation; runs on every aarch64 CPU
 *   _dp    + the dot-product extension (sdot), ARMv8.2+ (HWCAP asimddp)
 *   _i8mm  + the int8 matrix multiply (smmla), ARMv8.6+ (HWCAP2 i8mm): only
 *          the packed GEMMs differ; everything else is the _dp code
 *
 * Quantizers and row decoders do no integer dots, so there is one copy.
 * neon_backend.c picks the variant from the host's CPU info in init().
 */
#ifndef ANVIL_BACKEND_NEON_KERNELS_H
#define ANVIL_BACKEND_NEON_KERNELS_H

#include <stddef.h>

/* ---- one copy ------------------------------------------------------------------ */
void anvil_neon_quantize_q8_0(const float *x, void *dst, size_t n);
void anvil_neon_quantize_q8_1(const float *x, void *dst, size_t n);
void anvil_neon_quantize_q8_K(const float *x, void *dst, size_t n);

void anvil_neon_decode_q4_0(const void *src, float *dst, size_t n);
void anvil_neon_decode_q4_1(const void *src, float *dst, size_t n);
void anvil_neon_decode_q5_0(const void *src, float *dst, size_t n);
void anvil_neon_decode_q5_1(const void *src, float *dst, size_t n);
void anvil_neon_decode_q8_0(const void *src, float *dst, size_t n);
void anvil_neon_decode_q2_K(const void *src, float *dst, size_t n);
void anvil_neon_decode_q3_K(const void *src, float *dst, size_t n);
void anvil_neon_decode_q4_K(const void *src, float *dst, size_t n);
void anvil_neon_decode_q5_K(const void *src, float *dst, size_t n);
void anvil_neon_decode_q6_K(const void *src, float *dst, size_t n);
void anvil_neon_decode_tq1_0(const void *src, float *dst, size_t n);
void anvil_neon_decode_tq2_0(const void *src, float *dst, size_t n);
void anvil_neon_decode_iq4_nl(const void *src, float *dst, size_t n);
void anvil_neon_decode_iq4_xs(const void *src, float *dst, size_t n);
void anvil_neon_decode_mxfp4(const void *src, float *dst, size_t n);
void anvil_neon_decode_ptqtp2(const void *src, float *dst, size_t n);
void anvil_neon_decode_ptqtp3(const void *src, float *dst, size_t n);
void anvil_neon_decode_ptqtp2s(const void *src, float *dst, size_t n);
void anvil_neon_decode_ptqtp3s(const void *src, float *dst, size_t n);

/* Weight encoders (ABI 1.1, neon_encode.c) by format family; NULL-terminated. */
#include "anvil/backend.h"
extern const anvil_weight_encoder *const anvil_neon_encoders_flat[];
extern const anvil_weight_encoder *const anvil_neon_encoders_kquants[];
extern const anvil_weight_encoder *const anvil_neon_encoders_iq4[];
extern const anvil_weight_encoder *const anvil_neon_encoders_small[];
extern const anvil_weight_encoder *const anvil_neon_encoders_ptqtps[];

/* ---- per variant ------------------------------------------------------------- */
#define ANVIL_NEON_DECLARE_VARIANT(sfx)                                                                      \
    void anvil_neon_vec_dot_q4_0_q8_0_##sfx(size_t n, float *s, const void *w, const void *a);               \
    void anvil_neon_vec_dot_q4_1_q8_1_##sfx(size_t n, float *s, const void *w, const void *a);               \
    void anvil_neon_vec_dot_q5_0_q8_0_##sfx(size_t n, float *s, const void *w, const void *a);               \
    void anvil_neon_vec_dot_q5_1_q8_1_##sfx(size_t n, float *s, const void *w, const void *a);               \
    void anvil_neon_vec_dot_q8_0_q8_0_##sfx(size_t n, float *s, const void *w, const void *a);               \
    void anvil_neon_vec_dot_q2_K_q8_K_##sfx(size_t n, float *s, const void *w, const void *a);               \
    void anvil_neon_vec_dot_q3_K_q8_K_##sfx(size_t n, float *s, const void *w, const void *a);               \
    void anvil_neon_vec_dot_q4_K_q8_K_##sfx(size_t n, float *s, const void *w, const void *a);               \
    void anvil_neon_vec_dot_q5_K_q8_K_##sfx(size_t n, float *s, const void *w, const void *a);               \
    void anvil_neon_vec_dot_q6_K_q8_K_##sfx(size_t n, float *s, const void *w, const void *a);               \
    void anvil_neon_vec_dot_tq1_0_q8_K_##sfx(size_t n, float *s, const void *w, const void *a);              \
    void anvil_neon_vec_dot_tq2_0_q8_K_##sfx(size_t n, float *s, const void *w, const void *a);              \
    void anvil_neon_vec_dot_iq4_nl_q8_0_##sfx(size_t n, float *s, const void *w, const void *a);             \
    void anvil_neon_vec_dot_iq4_xs_q8_K_##sfx(size_t n, float *s, const void *w, const void *a);             \
    void anvil_neon_vec_dot_mxfp4_q8_0_##sfx(size_t n, float *s, const void *w, const void *a);              \
    void anvil_neon_vec_dot_ptqtp2_q8_K_##sfx(size_t n, float *s, const void *w, const void *a);             \
    void anvil_neon_vec_dot_ptqtp3_q8_K_##sfx(size_t n, float *s, const void *w, const void *a);             \
    void anvil_neon_vec_dot_ptqtp2s_q8_K_##sfx(size_t n, float *s, const void *w, const void *a);            \
    void anvil_neon_vec_dot_ptqtp3s_q8_K_##sfx(size_t n, float *s, const void *w, const void *a);            \
    void anvil_neon_gemm_ptqtp2s_q8_K_##sfx(size_t n, size_t nrows, size_t m, float *y, size_t y_stride,     \
                                            const void *w, size_t w_stride, const void *a, size_t a_stride); \
    void anvil_neon_gemm_ptqtp3s_q8_K_##sfx(size_t n, size_t nrows, size_t m, float *y, size_t y_stride,     \
                                            const void *w, size_t w_stride, const void *a, size_t a_stride);

ANVIL_NEON_DECLARE_VARIANT(base)
ANVIL_NEON_DECLARE_VARIANT(dp)

/* Formats with vec_dot, gemv and gemm from one R-row kernel (neon_rows.h):
 * the lattice i-quants (neon_dot_iq.c), Q1_0, Q2_0, NVFP4 (neon_dot_lowbit.c). */
#define ANVIL_NEON_DECLARE_ROWS_FMT(fmt, act, sfx)                                                               \
    void anvil_neon_vec_dot_##fmt##_##act##_##sfx(size_t n, float *s, const void *w, const void *a);             \
    void anvil_neon_gemv_##fmt##_##act##_##sfx(size_t n, size_t nrows, float *y, const void *w, size_t w_stride, \
                                               const void *a);                                                   \
    void anvil_neon_gemm_##fmt##_##act##_##sfx(size_t n, size_t nrows, size_t m, float *y, size_t y_stride,      \
                                               const void *w, size_t w_stride, const void *a, size_t a_stride);
#define ANVIL_NEON_DECLARE_ROWS(sfx)                \
    ANVIL_NEON_DECLARE_ROWS_FMT(iq2_xxs, q8_K, sfx) \
    ANVIL_NEON_DECLARE_ROWS_FMT(iq2_xs, q8_K, sfx)  \
    ANVIL_NEON_DECLARE_ROWS_FMT(iq2_s, q8_K, sfx)   \
    ANVIL_NEON_DECLARE_ROWS_FMT(iq3_xxs, q8_K, sfx) \
    ANVIL_NEON_DECLARE_ROWS_FMT(iq3_s, q8_K, sfx)   \
    ANVIL_NEON_DECLARE_ROWS_FMT(iq1_s, q8_K, sfx)   \
    ANVIL_NEON_DECLARE_ROWS_FMT(iq1_m, q8_K, sfx)   \
    ANVIL_NEON_DECLARE_ROWS_FMT(nvfp4, q8_0, sfx)   \
    ANVIL_NEON_DECLARE_ROWS_FMT(q1_0, q8_0, sfx)    \
    ANVIL_NEON_DECLARE_ROWS_FMT(q2_0, q8_0, sfx)

ANVIL_NEON_DECLARE_ROWS(base)
ANVIL_NEON_DECLARE_ROWS(dp)

/* Packed RHS (neon_packed.c): four weight rows interleaved per group (see
 * there for the layout). One layout for every variant; the GEMMs differ. */
#define ANVIL_NEON_PACK_ROWS 4

size_t anvil_neon_packed_size_q8_0(size_t n, size_t nrows);
int anvil_neon_pack_q8_0(const void *w, size_t w_stride, size_t n, size_t nrows, void *dst, size_t dst_size);
size_t anvil_neon_packed_size_q4_K(size_t n, size_t nrows);
int anvil_neon_pack_q4_K(const void *w, size_t w_stride, size_t n, size_t nrows, void *dst, size_t dst_size);

#define ANVIL_NEON_DECLARE_PACKED(sfx)                                                                           \
    void anvil_neon_gemm_packed_q8_0_##sfx(size_t n, size_t nrows, size_t r0, size_t r1, size_t m, float *y,     \
                                           size_t y_stride, const void *packed, const void *a, size_t a_stride); \
    void anvil_neon_gemm_packed_q4_K_##sfx(size_t n, size_t nrows, size_t r0, size_t r1, size_t m, float *y,     \
                                           size_t y_stride, const void *packed, const void *a, size_t a_stride);

ANVIL_NEON_DECLARE_PACKED(base)
ANVIL_NEON_DECLARE_PACKED(dp)
ANVIL_NEON_DECLARE_PACKED(i8mm)

#endif
