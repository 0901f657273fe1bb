/* SPDX-License-Identifier: MIT */
/*
 * Pieces the cold family's two modules share (parity_cold.c: tables,
 * unweighted encoders, decoders, dots, goldens; parity_cold_weighted.c:
 * the importance-weighted encoders). Private to them.
 */
#ifndef ANVIL_PARITY_COLD_H
#define ANVIL_PARITY_COLD_H

#include <stddef.h>
#include <stdint.h>

#include "imatrix_kinds.h"
#include "parity.h"

/* Importance matrices: tests/common/imatrix_kinds.h (test_imatrix_fill). */

/* A row of `kind` times 10^e (clamped to +-FLT_MAX), with some groups
 * zeroed: per 32 elements, one chance in four that all are 0 (ggml's IQ3_S
 * then shifts what follows), one in four that one half is. */
void cold_edge_row(float *x, size_t n, test_input_kind kind, uint64_t seed, uint64_t row, float e);

/* ggml_quantize_chunk in a child process (its searches abort on overflow):
 * 1 and dst filled when ggml finished, 0 when it died, -1 when the child
 * could not be run. dst_size <= 64 KiB. */
int cold_ggml_quantize_isolated(const parity_ctx *pc, int type, const float *x, size_t nrows, size_t n_per_row,
                                const float *imatrix, void *dst, size_t dst_size);

double cold_now_s(void);

/* The importance-weighted checks of every cold format (parity_cold_weighted.c). */
void parity_cold_weighted(parity_ctx *pc);

#endif
