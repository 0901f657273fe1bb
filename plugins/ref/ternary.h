/* SPDX-License-Identifier: MIT */
/* Ternary and sub-2-bit formats: TQ1_0, TQ2_0 (BitNet b1.58 / TriLM
 * weights, 256 elements, dot against Q8_K) and Q1_0, Q2_0 (128 and 64
 * elements, dot against Q8_0).
 *
 * One implementation, linked into codec-ternary and backend-scalar, so the
 * reference and the referee can never drift apart.
 *
 * Encoders are byte-identical to ggml's quantize_row_<type>_ref, decoders
 * bit-identical to dequantize_row_<type>; both were checked against the ggml
 * build of @node-llama-cpp/linux-x64 3.22.1 (the "oracle"), including the
 * blocks whose scale is so small that its reciprocal overflows.
 *
 * The dots compute the integer part without multiplying:
 *   TQ1_0  each trit selects add (+1), subtract (-1) or skip (0);
 *   TQ2_0  a code c is split into its bit planes, c - 1 = lo + 2*hi - 1, and
 *          the "-1" is folded in once per block from the Q8_K bsums;
 *   Q1_0   2 * (sum of q where the sign bit is set) - (sum of all q);
 *   Q2_0   the bit planes again, the "-1" from the Q8_0 block's own sum.
 * Bits become all-ones/zero masks that keep or drop q. The float part
 * follows ggml's C dot operation for operation, so the result equals
 * ggml_vec_dot_<w>_<act>_generic as compiled without FMA contraction (ggml's
 * baseline x64 build) bit for bit. */
#ifndef ANVIL_REF_TERNARY_H
#define ANVIL_REF_TERNARY_H

#include <stddef.h>

/* Encoders (anvil_encode_fn): refuse a length that is not a whole number of
 * blocks (ANVIL_E_BLOCK_MISMATCH) and NaN/Inf (ANVIL_E_NONFINITE, naming the
 * first bad index), then encode. */
int anvil_ref_encode_tq1_0(const float *src, void *dst, size_t n, char *msg, size_t msg_size);
int anvil_ref_encode_tq2_0(const float *src, void *dst, size_t n, char *msg, size_t msg_size);
int anvil_ref_encode_q1_0(const float *src, void *dst, size_t n, char *msg, size_t msg_size);
int anvil_ref_encode_q2_0(const float *src, void *dst, size_t n, char *msg, size_t msg_size);

/* Row encoders (anvil_encode_rows_fn, see ref/rows.h): ggml's quantize_tq1_0
 * .. quantize_q2_0 accept an importance matrix and ignore it, so the bytes
 * are the encoders' above whatever imatrix holds. */
int anvil_ref_encode_rows_tq1_0(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,
                                char *msg, size_t msg_size);
int anvil_ref_encode_rows_tq2_0(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,
                                char *msg, size_t msg_size);
int anvil_ref_encode_rows_q1_0(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,
                               char *msg, size_t msg_size);
int anvil_ref_encode_rows_q2_0(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,
                               char *msg, size_t msg_size);

/* Decoders (anvil_decode_fn): n a whole number of blocks. Total on any bytes
 * (a TQ1_0 byte >= 243 or a 2-bit code 3 decodes exactly as ggml does). */
void anvil_ref_decode_tq1_0(const void *src, float *dst, size_t n);
void anvil_ref_decode_tq2_0(const void *src, float *dst, size_t n);
void anvil_ref_decode_q1_0(const void *src, float *dst, size_t n);
void anvil_ref_decode_q2_0(const void *src, float *dst, size_t n);

/* Scalar dots (anvil_vec_dot_fn). n a whole number of weight blocks; `a`
 * holds the matching activation blocks: n/256 Q8_K blocks for TQ*, n/32
 * Q8_0 blocks for Q1_0 (four per weight block) and Q2_0 (two per block).
 * The TQ2_0 dot reads the Q8_K bsums, so they must match qs (as every Q8_K
 * quantizer writes them). */
void anvil_ref_vec_dot_tq1_0_q8_K(size_t n, float *s, const void *w, const void *a);
void anvil_ref_vec_dot_tq2_0_q8_K(size_t n, float *s, const void *w, const void *a);
void anvil_ref_vec_dot_q1_0_q8_0(size_t n, float *s, const void *w, const void *a);
void anvil_ref_vec_dot_q2_0_q8_0(size_t n, float *s, const void *w, const void *a);

#endif
