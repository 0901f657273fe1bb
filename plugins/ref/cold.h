/* SPDX-License-Identifier: MIT */
/*
 * The cold formats: i-quants (IQ1_S IQ1_M IQ2_XXS IQ2_XS IQ2_S IQ3_XXS IQ3_S
 * IQ4_NL IQ4_XS) and the micro-scaled FP4 formats (MXFP4 NVFP4).
 *
 * One implementation, linked into codec-cold and backend-scalar so that the
 * reference and the referee can never drift apart.
 *
 *  - Decoders are bit-identical to ggml's dequantize_row_<type> and total:
 *    every field is masked to its width and every table has exactly as many
 *    entries as its index field can name, so no bit pattern reads outside a
 *    table. n is a whole number of blocks (callers check).
 *  - Encoders are byte-identical to ggml_quantize_chunk, with or without an
 *    importance matrix: IQ4_NL (the chunk path, with the scale search),
 *    IQ4_XS, MXFP4, NVFP4 (here), and the lattice searches IQ3_XXS, IQ3_S,
 *    IQ2_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ1_S (cold_enc_grid.h). Each format has
 *    a row-wise entry, anvil_ref_encode_rows_<t> (the codec ABI's
 *    encode_rows: rows of n_per_row elements, optional importance weights,
 *    one per column), and all but the three that ggml encodes only with an
 *    importance matrix (IQ2_XXS, IQ2_XS, IQ1_S) an unweighted single-row
 *    one, anvil_ref_encode_<t>, whose bytes equal encode_rows' without one.
 *  - Dots follow ggml's scalar (generic) kernels operation for operation, so
 *    they equal ggml_vec_dot_<w>_<act>_generic bit for bit and ggml's SIMD
 *    kernels to accumulation order. Activations: Q8_0 for IQ4_NL, MXFP4 and
 *    NVFP4; Q8_K for the rest.
 */
#ifndef ANVIL_REF_COLD_H
#define ANVIL_REF_COLD_H

#include <stddef.h>

/* ---- decoders (anvil_decode_fn) ----------------------------------------- */
void anvil_ref_decode_iq1_s(const void *src, float *dst, size_t n);
void anvil_ref_decode_iq1_m(const void *src, float *dst, size_t n);
void anvil_ref_decode_iq2_xxs(const void *src, float *dst, size_t n);
void anvil_ref_decode_iq2_xs(const void *src, float *dst, size_t n);
void anvil_ref_decode_iq2_s(const void *src, float *dst, size_t n);
void anvil_ref_decode_iq3_xxs(const void *src, float *dst, size_t n);
void anvil_ref_decode_iq3_s(const void *src, float *dst, size_t n);
void anvil_ref_decode_iq4_nl(const void *src, float *dst, size_t n);
void anvil_ref_decode_iq4_xs(const void *src, float *dst, size_t n);
void anvil_ref_decode_mxfp4(const void *src, float *dst, size_t n);
void anvil_ref_decode_nvfp4(const void *src, float *dst, size_t n);

/* ---- encoders (anvil_encode_fn) ------------------------------------------
 * Refuse a length that is not a whole number of blocks
 * (ANVIL_E_BLOCK_MISMATCH) and NaN/Inf (ANVIL_E_NONFINITE, naming the first
 * bad index), then encode. Thread-safe: no state outside the call. */
int anvil_ref_encode_iq4_nl(const float *src, void *dst, size_t n, char *msg, size_t msg_size);
int anvil_ref_encode_iq4_xs(const float *src, void *dst, size_t n, char *msg, size_t msg_size);
int anvil_ref_encode_mxfp4(const float *src, void *dst, size_t n, char *msg, size_t msg_size);
int anvil_ref_encode_nvfp4(const float *src, void *dst, size_t n, char *msg, size_t msg_size);

/* Row-wise, optionally importance-weighted (anvil_encode_rows_fn; checks
 * and refusals in ref/rows.h). MXFP4 and NVFP4 ignore the weights, as
 * ggml does. */
int anvil_ref_encode_rows_iq4_nl(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,
                                 char *msg, size_t msg_size);
int anvil_ref_encode_rows_iq4_xs(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,
                                 char *msg, size_t msg_size);
int anvil_ref_encode_rows_mxfp4(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,
                                char *msg, size_t msg_size);
int anvil_ref_encode_rows_nvfp4(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,
                                char *msg, size_t msg_size);

/* ---- scalar dots (anvil_vec_dot_fn) --------------------------------------- */
void anvil_ref_vec_dot_iq1_s_q8_K(size_t n, float *s, const void *w, const void *a);
void anvil_ref_vec_dot_iq1_m_q8_K(size_t n, float *s, const void *w, const void *a);
void anvil_ref_vec_dot_iq2_xxs_q8_K(size_t n, float *s, const void *w, const void *a);
void anvil_ref_vec_dot_iq2_xs_q8_K(size_t n, float *s, const void *w, const void *a);
void anvil_ref_vec_dot_iq2_s_q8_K(size_t n, float *s, const void *w, const void *a);
void anvil_ref_vec_dot_iq3_xxs_q8_K(size_t n, float *s, const void *w, const void *a);
void anvil_ref_vec_dot_iq3_s_q8_K(size_t n, float *s, const void *w, const void *a);
void anvil_ref_vec_dot_iq4_nl_q8_0(size_t n, float *s, const void *w, const void *a);
void anvil_ref_vec_dot_iq4_xs_q8_K(size_t n, float *s, const void *w, const void *a);
void anvil_ref_vec_dot_mxfp4_q8_0(size_t n, float *s, const void *w, const void *a);
void anvil_ref_vec_dot_nvfp4_q8_0(size_t n, float *s, const void *w, const void *a);

#endif
