/* SPDX-License-Identifier: MIT */
/* The flat 32-element family: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1.
 *
 * One implementation, linked into codec-q8_0 and backend-scalar (and into
 * any codec whose dot consumes Q8_0/Q8_1 activations), so the reference and
 * the referee can never drift apart.
 *
 * Encoders are byte-identical to ggml's quantize_row_*_ref, decoders
 * bit-identical to dequantize_row_*. Q8_1 is an activation format: ggml has
 * no row decoder for it, so it decodes by its definition x = d * q. */
#ifndef ANVIL_REF_Q8_0_FAMILY_H
#define ANVIL_REF_Q8_0_FAMILY_H

#include <stddef.h>

/* Activation quantizers (anvil_quantize_fn): n a multiple of 32, no checks.
 * Byte-identical to ggml's quantize_row_q8_0_ref / quantize_row_q8_1_ref. */
void anvil_ref_quantize_q8_0(const float *x, void *dst, size_t n);
void anvil_ref_quantize_q8_1(const float *x, void *dst, size_t n);

/* Encoders (anvil_encode_fn): refuse a length that is not a whole number of
 * 32-element blocks (ANVIL_E_BLOCK_MISMATCH) and NaN/Inf (ANVIL_E_NONFINITE,
 * naming the first bad index), then encode. */
int anvil_ref_encode_q4_0(const float *src, void *dst, size_t n, char *msg, size_t msg_size);
int anvil_ref_encode_q4_1(const float *src, void *dst, size_t n, char *msg, size_t msg_size);
int anvil_ref_encode_q5_0(const float *src, void *dst, size_t n, char *msg, size_t msg_size);
int anvil_ref_encode_q5_1(const float *src, void *dst, size_t n, char *msg, size_t msg_size);
int anvil_ref_encode_q8_0(const float *src, void *dst, size_t n, char *msg, size_t msg_size);
int anvil_ref_encode_q8_1(const float *src, void *dst, size_t n, char *msg, size_t msg_size);

/* Row encoders (anvil_encode_rows_fn, see ref/rows.h): the bytes of
 * ggml_quantize_chunk. With imatrix NULL they equal the encoders above; with
 * an importance matrix Q4_0 .. Q5_1 run ggml's weighted searches
 * (quantize_row_<t>_impl, whose weights depend on the whole row), and Q8_0
 * ignores it as ggml does. */
int anvil_ref_encode_rows_q4_0(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,
                               char *msg, size_t msg_size);
int anvil_ref_encode_rows_q4_1(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,
                               char *msg, size_t msg_size);
int anvil_ref_encode_rows_q5_0(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,
                               char *msg, size_t msg_size);
int anvil_ref_encode_rows_q5_1(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,
                               char *msg, size_t msg_size);
int anvil_ref_encode_rows_q8_0(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,
                               char *msg, size_t msg_size);

/* Decoders (anvil_decode_fn): n a multiple of 32. Total on any bytes. */
void anvil_ref_decode_q4_0(const void *src, float *dst, size_t n);
void anvil_ref_decode_q4_1(const void *src, float *dst, size_t n);
void anvil_ref_decode_q5_0(const void *src, float *dst, size_t n);
void anvil_ref_decode_q5_1(const void *src, float *dst, size_t n);
void anvil_ref_decode_q8_0(const void *src, float *dst, size_t n);
void anvil_ref_decode_q8_1(const void *src, float *dst, size_t n);

/* Scalar dots (anvil_vec_dot_fn), computed as ggml's CPU backend does:
 * an integer dot per block, then one rescale per block. The _1 formats add
 * the weight min times the activation block's s field (d * sum(q)). */
void anvil_ref_vec_dot_q4_0_q8_0(size_t n, float *s, const void *w, const void *a);
void anvil_ref_vec_dot_q4_1_q8_1(size_t n, float *s, const void *w, const void *a);
void anvil_ref_vec_dot_q5_0_q8_0(size_t n, float *s, const void *w, const void *a);
void anvil_ref_vec_dot_q5_1_q8_1(size_t n, float *s, const void *w, const void *a);
void anvil_ref_vec_dot_q8_0_q8_0(size_t n, float *s, const void *w, const void *a);

#endif
