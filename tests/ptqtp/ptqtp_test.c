/* SPDX-License-Identifier: MIT */
/* The helpers test_ptqtp and test_ptqtps share (ptqtp_test.h). */
#include "ptqtp_test.h"

#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ref/q8_k.h"

int ptqtp_same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

int ptqtp_spec_digit(unsigned byte, unsigned j) {
    unsigned x = byte, digit = 0;
    for (unsigned s = 0; s <= j; ++s) {
        x *= 3;
        digit = x >> 8;
        x &= 255;
    }
    return (int)digit;
}

int ptqtp_spec_trit(const uint8_t *plane, unsigned i) {
    unsigned byte, j;
    if (i < 160) {
        byte = i % 32;
        j = i / 32;
    } else if (i < 240) {
        byte = 32 + (i - 160) % 16;
        j = (i - 160) / 16;
    } else {
        byte = 48 + (i - 240) % 4;
        j = (i - 240) / 4;
    }
    return ptqtp_spec_digit(plane[byte], j) - 1;
}

void ptqtp_make_act(test_rng *r, float d, int lim, uint8_t *blk) {
    int8_t q[PTQTP_N];
    memcpy(blk, &d, 4);
    for (unsigned i = 0; i < PTQTP_N; ++i) q[i] = (int8_t)((int)(test_rng_u64(r) % (unsigned)(2 * lim + 1)) - lim);
    memcpy(blk + 4, q, PTQTP_N);
    for (unsigned g = 0; g < 16; ++g) {
        int16_t s = 0;
        for (unsigned j = 0; j < 16; ++j) s = (int16_t)(s + q[16 * g + j]);
        memcpy(blk + 260 + 2 * g, &s, 2);
    }
}

void ptqtp_check_decode_spec(const ptqtp_fmt *f, uint64_t seed, size_t block_bytes, ptqtp_block_fn random_block,
                             ptqtp_spec_fn spec_decode) {
    test_rng r;
    test_rng_seed(&r, seed);
    uint8_t blk[PTQTP_MAX_BLOCK];
    float got[PTQTP_N], want[PTQTP_N];
    size_t bad = 0;
    CU_ASSERT_FATAL(block_bytes <= sizeof blk);
    for (int rep = 0; rep < 4000; ++rep) {
        random_block(f, &r, rep % 2, blk);
        f->decode(blk, got, PTQTP_N);
        spec_decode(blk, f->k, want);
        for (unsigned i = 0; i < PTQTP_N; ++i) {
            if (!ptqtp_same_bits(got[i], want[i]) && !(isnan(got[i]) && isnan(want[i]))) {
                if (bad++ == 0)
                    fprintf(stderr, "\n%s: block %d element %u: %a vs %a\n", f->name, rep, i, got[i], want[i]);
            }
        }
    }
    CU_ASSERT_EQUAL(bad, 0);
}

void ptqtp_golden_act(uint64_t seed, float *act, uint8_t *act_q, size_t n) {
    test_input_fill(act, n, INPUT_LLM_LIKE, seed, 0);
    anvil_ref_quantize_q8_K(act, act_q, n);
}
