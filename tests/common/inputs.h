/* SPDX-License-Identifier: MIT */
/*
 * Deterministic test inputs: the row shapes that break quantizers. Every
 * parity check and golden fixture draws from these kinds, so "varied input"
 * means the same thing everywhere.
 */
#ifndef ANVIL_TEST_INPUTS_H
#define ANVIL_TEST_INPUTS_H

#include <stddef.h>
#include <stdint.h>

typedef enum test_input_kind {
    INPUT_RAMP = 0,       /* linear ramp across the row, both signs */
    INPUT_ALTERNATING,    /* +a, -a, +b, -b ... */
    INPUT_ALL_EQUAL,      /* one value repeated (sign varies per row) */
    INPUT_ZEROS,          /* all 0.0f (and some -0.0f) */
    INPUT_NEAR_ZERO,      /* |x| ~ 1e-8 .. 1e-6 */
    INPUT_DENORMALS,      /* subnormal floats and tiny normals */
    INPUT_WIDE_RANGE,     /* magnitudes spread over 1e-6 .. 1e4 */
    INPUT_OUTLIER,        /* normal data, one huge value per 32 block */
    INPUT_NORMAL,         /* N(0, 1) */
    INPUT_LLM_LIKE,       /* heavy-tailed, per-row scale 1e-3 .. 1, some channels hot */
    INPUT_SINGLE_NONZERO, /* one non-zero per block */
    INPUT_STRADDLE_ZERO,  /* small values clustered around 0, both signs */
    INPUT_TERNARY,        /* exactly {-s, 0, +s} */
    INPUT_UNIFORM,        /* U(-1, 1) */
    INPUT_SMALL_INTS,     /* integers -8..8 (rounding ties) */
    INPUT_HALF_STEPS,     /* k/2 values: exact .5 ties after scaling */
    INPUT_KIND_COUNT
} test_input_kind;

const char *test_input_kind_name(test_input_kind k);

/* Small, fast, reproducible PRNG (splitmix64). */
typedef struct test_rng {
    uint64_t s;
} test_rng;
void test_rng_seed(test_rng *r, uint64_t seed);
uint64_t test_rng_u64(test_rng *r);
float test_rng_uniform(test_rng *r); /* [0, 1) */
float test_rng_normal(test_rng *r);  /* N(0, 1) */

/* Fill x[0..n) with a row of the given kind; `row` varies the content. */
void test_input_fill(float *x, size_t n, test_input_kind kind, uint64_t seed, uint64_t row);

#endif
