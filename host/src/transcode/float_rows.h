/* SPDX-License-Identifier: MIT */
/* Internal: the export engine's per-chunk float work, done while the chunk
 * is in cache: a float tensor's rows (F32, F16, BF16) as f32 in one pass
 * that also finds the first NaN/Inf, and the quality report's error sums. */
#ifndef ANVIL_HOST_FLOAT_ROWS_H
#define ANVIL_HOST_FLOAT_ROWS_H

#include <stddef.h>
#include <stdint.h>

/* Convert n values of `type` (ANVIL_TYPE_F32/F16/BF16) at src (any
 * alignment) to f32 at dst, bit-identical to anvil_decode, and return the
 * index of the first non-finite value, or n when all are finite. All n are
 * converted either way. Uses F16C/AVX2 or NEON where the CPU has them. */
size_t anvil__float_load(uint32_t type, const void *src, float *dst, size_t n);

/* Index of the first NaN/Inf among n values of `type` (F32/F16/BF16) at
 * src (any alignment), without converting them, or n. */
size_t anvil_float_find_nonfinite_raw(uint32_t type, const void *src, size_t n);

/* Index of the first NaN/Inf in x[0..n), or n (vectorizable scan). */
size_t anvil__float_find_nonfinite(const float *x, size_t n);

/* Over x[0..n) (the source) and y[0..n) (decoded back):
 * *sse = sum (x-y)^2, *signal = sum x^2 (relative error below 4e-6: float
 * lanes per block of 1024, flushed to double; summed again in double where
 * float would overflow or underflow), *max_abs = max |x-y| rounded to
 * float (NaN differences ignored). The order of the operations is fixed,
 * so the figures are the same bits on every CPU, with or without SIMD. */
void anvil_float_error_sums(const float *x, const float *y, size_t n, double *sse, double *signal, double *max_abs);

/* The same, on the SIMD path where the CPU has one (simd = 1) or on the
 * portable path (simd = 0): for the tests that hold them to the same bits. */
void anvil__float_error_sums_path(const float *x, const float *y, size_t n, int simd, double *sse, double *signal,
                                  double *max_abs);

#endif
