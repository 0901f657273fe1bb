/* SPDX-License-Identifier: MIT */
/*
 * The referee dots of F32, F16 and BF16 weights against f32 activations
 * (float_dot.c): what backend-scalar runs, and what every SIMD kernel for
 * these types must equal BIT FOR BIT (tests/simd/simd_float_test.c).
 *
 * The summation order is the contract, chosen to be what one 512-bit
 * vector accumulator computes, so a SIMD kernel needs no tolerance:
 *
 *  F16:  16 lanes; lane j accumulates, for i = j, j + 16, j + 32, ... in
 *        that order, lane = fmaf(f16(w[i]), a[i], lane). The activations
 *        are used as given (mdl_matmul rounds them to f16 first, as ggml's
 *        vec_dot_type does); f16 x f16 products are exact in f32.
 *  F32:  as F16, the weight read as stored (f32 x f32 products rounded
 *        by the FMA only). ggml's vec_dot_f32 sums in vector lanes too;
 *        the double-accumulated decode + dot of matmul.c is the fallback.
 *  BF16: the order of AVX-512 BF16's vdpbf16ps. Activations are rounded to
 *        bf16 (round to nearest even; f32 subnormals read as zero first).
 *        16 lanes; per 32-element chunk c, lane j takes the pair
 *        (32c + 2j + 1, then 32c + 2j): lane = ftz(fmaf(daz(w), daz(a),
 *        lane)), where daz reads a bf16 subnormal as zero and ftz flushes
 *        a subnormal result to zero (checked against the instruction on
 *        Zen 4: 3.2 M lanes, random bit patterns, 0 differences).
 *
 * Both: a row is padded with zeros to a whole chunk (16 resp. 32
 * elements; masked vector loads give the same), then the 16 lanes are
 * summed in a fixed tree: h[j] = s[j] + s[j + 8], q[j] = h[j] + h[j + 4],
 * (q[0] + q[2]) + (q[1] + q[3]). NaN payloads are not part of the
 * contract (a NaN is a NaN).
 */
#ifndef ANVIL_REF_FLOAT_DOT_H
#define ANVIL_REF_FLOAT_DOT_H

#include <stddef.h>
#include <stdint.h>

/* anvil_vec_dot_fn for (F32, F32), (F16, F32) and (BF16, F32): *s = dot of
 * n elements. */
void anvil_ref_vec_dot_f32_f32(size_t n, float *s, const void *w, const void *a);
void anvil_ref_vec_dot_f16_f32(size_t n, float *s, const void *w, const void *a);
void anvil_ref_vec_dot_bf16_f32(size_t n, float *s, const void *w, const void *a);

/* The activation rounding of the BF16 dot: f32 -> bf16 bits. */
uint16_t anvil_ref_bf16_act(float a);

#endif
