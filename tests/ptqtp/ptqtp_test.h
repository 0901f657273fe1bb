/* SPDX-License-Identifier: MIT */
/*
 * What test_ptqtp (PTQTP: ptqtp2, ptqtp3) and test_ptqtps (PTQTP-S:
 * ptqtp2s, ptqtp3s) share: a format's entry points, the trit planes read
 * from the header's text (anvil/formats/ptqtp.h), Q8_K activation blocks
 * written by definition, the decode-against-the-text check, and the golden
 * files' activation row.
 */
#ifndef ANVIL_TEST_PTQTP_TEST_H
#define ANVIL_TEST_PTQTP_TEST_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/codec.h"
#include "inputs.h"

#define PTQTP_N 256         /* weights a block */
#define PTQTP_MAX_BLOCK 162 /* the largest block of the four formats (3 planes) */
#define PTQTP_Q8K_BYTES 292 /* a Q8_K block: f32 scale, 256 codes, 16 sums */

/* One format: the codec's entry points. */
typedef struct ptqtp_fmt {
    const char *name;
    uint32_t id;
    unsigned k; /* planes */
    anvil_encode_fn encode;
    anvil_decode_fn decode;
    anvil_vec_dot_fn dot;
} ptqtp_fmt;

/* The two floats have the same bits. */
int ptqtp_same_bits(float a, float b);
/* Digit j (0 = first) of a fraction byte: the carry of the (j+1)-th
 * multiplication by 3. */
int ptqtp_spec_digit(unsigned byte, unsigned j);
/* Trit (-1, 0, +1) of element i of a 52-byte plane: which byte and which
 * digit hold it, as the header's text says. */
int ptqtp_spec_trit(const uint8_t *plane, unsigned i);
/* A Q8_K block written by definition: scale d, codes in [-lim, lim]. */
void ptqtp_make_act(test_rng *r, float d, int lim, uint8_t *blk);

/* A block of random bytes (sane: normal binary16 scales), and a decoder
 * written from the format's text. */
typedef void (*ptqtp_block_fn)(const ptqtp_fmt *f, test_rng *r, int sane, uint8_t *blk);
typedef void (*ptqtp_spec_fn)(const uint8_t *blk, unsigned k, float *y);
/* 4000 random blocks (every other one with any scale bits: NaN, Inf,
 * subnormal): the codec's decoder equals spec_decode bit for bit (NaN for
 * NaN). Asserts; prints the first mismatch. */
void ptqtp_check_decode_spec(const ptqtp_fmt *f, uint64_t seed, size_t block_bytes, ptqtp_block_fn random_block,
                             ptqtp_spec_fn spec_decode);
/* The golden files' activation row: llm-like values from seed, and its
 * Q8_K blocks. */
void ptqtp_golden_act(uint64_t seed, float *act, uint8_t *act_q, size_t n);

#endif
