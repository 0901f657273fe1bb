/* SPDX-License-Identifier: MIT */
/* Synthetic importance matrices (one weight per column) for the weighted
 * encoders' tests: the shapes that break the weighted searches. One
 * generator for the unit suites and every parity family (imatrix, cold,
 * backends). The kinds before TEST_IMX_EXTREME leave ordinary rows
 * encodable; with the extreme one the lattice searches overflow (ggml
 * aborts), so the cold family runs ggml in a child process for it. */
#ifndef ANVIL_TEST_IMATRIX_KINDS_H
#define ANVIL_TEST_IMATRIX_KINDS_H

#include <stddef.h>
#include <stdint.h>

typedef enum test_imatrix_kind {
    TEST_IMX_ONES = 0,  /* every column 1 */
    TEST_IMX_LOGNORMAL, /* exp(1.5 N(0,1)): real activations' mean squares */
    TEST_IMX_HEAVY,     /* log-normal, one column in 40 scaled by 1e3 .. 1e8 */
    TEST_IMX_ZEROS,     /* a third exact zeros, and whole 16-column groups of zeros */
    TEST_IMX_TINY,      /* 1e-30 .. 1e-45: products underflow, some to zero */
    TEST_IMX_EXTREME,   /* one column in 40 up to 3e38: the searches' sums overflow */
    TEST_IMX_KIND_COUNT,
    TEST_IMX_ORDINARY = TEST_IMX_EXTREME /* how many kinds come before the extreme one */
} test_imatrix_kind;

const char *test_imatrix_kind_name(test_imatrix_kind k);
void test_imatrix_fill(float *w, size_t n, test_imatrix_kind kind, uint64_t seed);

#endif
