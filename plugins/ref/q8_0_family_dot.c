/* SPDX-License-Identifier: MIT */
/* The flat 32-element family, scalar dot products: the referee every SIMD
 * backend is checked against.
 *
 * As in ggml's CPU backend, each block contributes an exact integer dot of
 * its codes with the activation codes, rescaled once by the product of the
 * two fp16 scales; the float accumulation runs block by block in order.
 * The _1 formats store codes 0..2^b-1 plus a min m, so
 *     sum_j (d_w q_j + m)(d_a a_j) = d_w d_a sum_j q_j a_j + m * (d_a sum_j a_j)
 * and the bracket is the Q8_1 block's precomputed s field. The float
 * expressions follow ggml's generic kernels term for term, so this code
 * agrees with ggml's scalar build bit for bit and with its SIMD builds up to
 * accumulation order. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "anvil/blocks.h"
#include "anvil/numeric.h"
#include "ref/q8_0_family.h"
#include "ref/q8_0_family_impl.h"

static float get_half(const uint8_t *p) {
    anvil_half h;
    memcpy(&h, p, sizeof h);
    return anvil_fp16_to_fp32(h);
}

static uint32_t get_u32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* sum_j nibble_j(qs) * a_j for the 32 codes of a 4-bit block, nibble values
 * shifted by -offset (8 for Q4_0, 0 for Q4_1). At most 32 * 15 * 128 in
 * magnitude: no overflow. */
static int dot_nibbles(const uint8_t *qs, int offset, const int8_t *a) {
    int sum = 0;
    for (int j = 0; j < Q8_0_FAMILY_HALF; ++j) {
        sum += ((qs[j] & 0x0f) - offset) * a[j];
        sum += ((qs[j] >> 4) - offset) * a[j + Q8_0_FAMILY_HALF];
    }
    return sum;
}

/* The same for a 5-bit block (bit 4 of element j is bit j of qh). */
static int dot_five_bits(const uint8_t *qs, uint32_t qh, int offset, const int8_t *a) {
    int sum = 0;
    for (int j = 0; j < Q8_0_FAMILY_HALF; ++j) {
        const int lo = (qs[j] & 0x0f) | (int)(((qh >> j) & 1u) << 4);
        const int hi = (qs[j] >> 4) | (int)(((qh >> (j + Q8_0_FAMILY_HALF)) & 1u) << 4);
        sum += (lo - offset) * a[j];
        sum += (hi - offset) * a[j + Q8_0_FAMILY_HALF];
    }
    return sum;
}

void anvil_ref_vec_dot_q4_0_q8_0(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *wb = w, *ab = a;
    float acc = 0.0f;
    for (size_t i = 0; i < n / Q8_0_FAMILY_BLOCK; ++i) {
        const int sumi = dot_nibbles(wb + offsetof(anvil_block_q4_0, qs), 8,
                                     (const int8_t *)(ab + offsetof(anvil_block_q8_0, qs)));
        const float dw = get_half(wb + offsetof(anvil_block_q4_0, d));
        const float da = get_half(ab + offsetof(anvil_block_q8_0, d));
        acc += (float)sumi * dw * da; /* ggml: (sumi * dw) * da */
        wb += sizeof(anvil_block_q4_0);
        ab += sizeof(anvil_block_q8_0);
    }
    *s = acc;
}

void anvil_ref_vec_dot_q4_1_q8_1(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *wb = w, *ab = a;
    float acc = 0.0f;
    for (size_t i = 0; i < n / Q8_0_FAMILY_BLOCK; ++i) {
        const int sumi = dot_nibbles(wb + offsetof(anvil_block_q4_1, qs), 0,
                                     (const int8_t *)(ab + offsetof(anvil_block_q8_1, qs)));
        const float dw = get_half(wb + offsetof(anvil_block_q4_1, d));
        const float mw = get_half(wb + offsetof(anvil_block_q4_1, m));
        const float da = get_half(ab + offsetof(anvil_block_q8_1, d));
        const float sa = get_half(ab + offsetof(anvil_block_q8_1, s));
        const float scaled = (dw * da) * (float)sumi;
        const float min_term = mw * sa;
        acc += scaled + min_term;
        wb += sizeof(anvil_block_q4_1);
        ab += sizeof(anvil_block_q8_1);
    }
    *s = acc;
}

void anvil_ref_vec_dot_q5_0_q8_0(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *wb = w, *ab = a;
    float acc = 0.0f;
    for (size_t i = 0; i < n / Q8_0_FAMILY_BLOCK; ++i) {
        const int sumi = dot_five_bits(wb + offsetof(anvil_block_q5_0, qs),
                                       get_u32(wb + offsetof(anvil_block_q5_0, qh)), 16,
                                       (const int8_t *)(ab + offsetof(anvil_block_q8_0, qs)));
        const float dw = get_half(wb + offsetof(anvil_block_q5_0, d));
        const float da = get_half(ab + offsetof(anvil_block_q8_0, d));
        acc += (dw * da) * (float)sumi;
        wb += sizeof(anvil_block_q5_0);
        ab += sizeof(anvil_block_q8_0);
    }
    *s = acc;
}

void anvil_ref_vec_dot_q5_1_q8_1(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *wb = w, *ab = a;
    float acc = 0.0f;
    for (size_t i = 0; i < n / Q8_0_FAMILY_BLOCK; ++i) {
        const int sumi = dot_five_bits(wb + offsetof(anvil_block_q5_1, qs),
                                       get_u32(wb + offsetof(anvil_block_q5_1, qh)), 0,
                                       (const int8_t *)(ab + offsetof(anvil_block_q8_1, qs)));
        const float dw = get_half(wb + offsetof(anvil_block_q5_1, d));
        const float mw = get_half(wb + offsetof(anvil_block_q5_1, m));
        const float da = get_half(ab + offsetof(anvil_block_q8_1, d));
        const float sa = get_half(ab + offsetof(anvil_block_q8_1, s));
        const float scaled = (dw * da) * (float)sumi;
        const float min_term = mw * sa;
        acc += scaled + min_term;
        wb += sizeof(anvil_block_q5_1);
        ab += sizeof(anvil_block_q8_1);
    }
    *s = acc;
}

void anvil_ref_vec_dot_q8_0_q8_0(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *wb = w, *ab = a;
    float acc = 0.0f;
    for (size_t i = 0; i < n / Q8_0_FAMILY_BLOCK; ++i) {
        const int8_t *qw = (const int8_t *)(wb + offsetof(anvil_block_q8_0, qs));
        const int8_t *qa = (const int8_t *)(ab + offsetof(anvil_block_q8_0, qs));
        int sumi = 0; /* at most 32 * 128 * 128: no overflow */
        for (int j = 0; j < Q8_0_FAMILY_BLOCK; ++j) {
            sumi += qw[j] * qa[j];
        }
        const float dw = get_half(wb + offsetof(anvil_block_q8_0, d));
        const float da = get_half(ab + offsetof(anvil_block_q8_0, d));
        acc += (float)sumi * (dw * da);
        wb += sizeof(anvil_block_q8_0);
        ab += sizeof(anvil_block_q8_0);
    }
    *s = acc;
}
