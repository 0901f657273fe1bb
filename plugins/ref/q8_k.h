/* SPDX-License-Identifier: MIT */
/* Q8_K: the activation format of the 256-element formats (K-quants,
 * ternary TQ*, most i-quants). One implementation, shared by every codec
 * and backend-scalar. */
#ifndef ANVIL_REF_Q8_K_H
#define ANVIL_REF_Q8_K_H

#include <stddef.h>

/* Activation quantizer (anvil_quantize_fn): n a multiple of 256, no checks.
 * Byte-identical to ggml's quantize_row_q8_K_ref, except that an all-zero
 * block also gets zero bsums (ggml leaves them unwritten). */
void anvil_ref_quantize_q8_K(const float *x, void *dst, size_t n);

/* Codec encoder (anvil_encode_fn): checks length and finiteness first. */
int anvil_ref_encode_q8_K(const float *src, void *dst, size_t n, char *msg, size_t msg_size);

/* Decoder (anvil_decode_fn): x = d * q, as ggml's dequantize_row_q8_K. */
void anvil_ref_decode_q8_K(const void *src, float *dst, size_t n);

#endif
