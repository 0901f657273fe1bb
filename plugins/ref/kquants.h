/* SPDX-License-Identifier: MIT */
/* K-quants: Q2_K Q3_K Q4_K Q5_K Q6_K, ggml's 256-element super-block formats.
 *
 * One implementation, linked into codec-kquants and backend-scalar, so the
 * reference and the referee can never drift apart. Their activation format
 * is Q8_K (ref/q8_k.h).
 *
 * Encoders are byte-identical to ggml's quantize_row_q{2..6}_K_ref (what
 * llama-quantize writes without an importance matrix), the row encoders to
 * ggml_quantize_chunk with or without one (quantize_row_q{2..6}_K_impl);
 * decoders are bit-identical to dequantize_row_q{2..6}_K. */
#ifndef ANVIL_REF_KQUANTS_H
#define ANVIL_REF_KQUANTS_H

#include <stddef.h>

/* Encoders (anvil_encode_fn): refuse a length that is not a whole number of
 * 256-element super-blocks (ANVIL_E_BLOCK_MISMATCH) and NaN/Inf
 * (ANVIL_E_NONFINITE, naming the first bad index), then encode. */
int anvil_ref_encode_q2_K(const float *src, void *dst, size_t n, char *msg, size_t msg_size);
int anvil_ref_encode_q3_K(const float *src, void *dst, size_t n, char *msg, size_t msg_size);
int anvil_ref_encode_q4_K(const float *src, void *dst, size_t n, char *msg, size_t msg_size);
int anvil_ref_encode_q5_K(const float *src, void *dst, size_t n, char *msg, size_t msg_size);
int anvil_ref_encode_q6_K(const float *src, void *dst, size_t n, char *msg, size_t msg_size);

/* Row encoders (anvil_encode_rows_fn, see ref/rows.h): rows of n_per_row
 * (a multiple of 256), each super-block weighted by its 256 columns of the
 * importance matrix, or unweighted when imatrix is NULL (then the same
 * bytes as the encoders above). */
int anvil_ref_encode_rows_q2_K(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,
                               char *msg, size_t msg_size);
int anvil_ref_encode_rows_q3_K(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,
                               char *msg, size_t msg_size);
int anvil_ref_encode_rows_q4_K(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,
                               char *msg, size_t msg_size);
int anvil_ref_encode_rows_q5_K(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,
                               char *msg, size_t msg_size);
int anvil_ref_encode_rows_q6_K(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,
                               char *msg, size_t msg_size);

/* Decoders (anvil_decode_fn): n a multiple of 256. Total on any bytes. */
void anvil_ref_decode_q2_K(const void *src, float *dst, size_t n);
void anvil_ref_decode_q3_K(const void *src, float *dst, size_t n);
void anvil_ref_decode_q4_K(const void *src, float *dst, size_t n);
void anvil_ref_decode_q5_K(const void *src, float *dst, size_t n);
void anvil_ref_decode_q6_K(const void *src, float *dst, size_t n);

/* Scalar dots against Q8_K (anvil_vec_dot_fn), computed as ggml's CPU
 * backend does: an integer dot per sub-block weighted by its integer scale,
 * the asymmetric formats' min term from the activation's bsums, then one
 * float rescale per super-block. */
void anvil_ref_vec_dot_q2_K_q8_K(size_t n, float *s, const void *w, const void *a);
void anvil_ref_vec_dot_q3_K_q8_K(size_t n, float *s, const void *w, const void *a);
void anvil_ref_vec_dot_q4_K_q8_K(size_t n, float *s, const void *w, const void *a);
void anvil_ref_vec_dot_q5_K_q8_K(size_t n, float *s, const void *w, const void *a);
void anvil_ref_vec_dot_q6_K_q8_K(size_t n, float *s, const void *w, const void *a);

#endif
