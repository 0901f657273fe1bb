/*
 * Pieces the cold family's two modules share (parity_cold.c: tables,
 * unweighted encoders, decoders, dots, goldens; parity_cold_weighted.c:
 * the importance-weighted encoders). Private to them.
 */
#ifndef ANVIL_PARITY_COLD_H
#define ANVIL_PARITY_COLD_H

#include <stddef.h>
#include <stdint.h>

#include "parity.h"

/* Synthetic importance matrices (one weight per column), the shapes that
 * stress a weighted search. The ordinary ones leave ordinary rows
 * encodable; with the extreme one the lattice searches overflow (and ggml
 * aborts) on ordinary rows, so ggml runs it in a child process. */
typedef enum cold_imatrix_kind {
    COLD_IMX_ONES = 0,  /* all 1: weights sqrt(sigma2 + x^2) */
    COLD_IMX_LOGNORMAL, /* exp(1.5 N(0,1)): positive, ~e^-6 .. e^6 */
    COLD_IMX_HEAVY,     /* log-normal with a few columns 1e3 .. 1e6 times larger */
    COLD_IMX_ZEROS,     /* a quarter exact zeros, and some all-zero runs of 32 */
    COLD_IMX_TINY,      /* 1e-38 .. 1e-18 (subnormals included) */
    COLD_IMX_ORDINARY,  /* how many kinds come before this one */
    COLD_IMX_EXTREME = COLD_IMX_ORDINARY, /* log-normal, one column in 40 up to 3e38 */
    COLD_IMX_KIND_COUNT
} cold_imatrix_kind;

const char *cold_imatrix_kind_name(cold_imatrix_kind kind);
void cold_imatrix_fill(float *qw, size_t n, cold_imatrix_kind kind, uint64_t seed);

/* A row of `kind` times 10^e (clamped to +-FLT_MAX), with some groups
 * zeroed: per 32 elements, one chance in four that all are 0 (ggml's IQ3_S
 * then shifts what follows), one in four that one half is. */
void cold_edge_row(float *x, size_t n, test_input_kind kind, uint64_t seed, uint64_t row, float e);

/* ggml_quantize_chunk in a child process (its searches abort on overflow):
 * 1 and dst filled when ggml finished, 0 when it died, -1 when the child
 * could not be run. dst_size <= 64 KiB. */
int cold_ggml_quantize_isolated(const parity_ctx *pc, int type, const float *x, size_t nrows,
                                size_t n_per_row, const float *imatrix, void *dst, size_t dst_size);

double cold_now_s(void);

/* The importance-weighted checks of every cold format (parity_cold_weighted.c). */
void parity_cold_weighted(parity_ctx *pc);

#endif
