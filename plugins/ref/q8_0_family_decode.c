/* SPDX-License-Identifier: MIT */
/* The flat 32-element family, decoding side. Each decoder performs ggml's
 * dequantize_row_* float operations (int code -> float, times d, plus m for
 * the _1 formats, no fused multiply-add), so the floats are bit-identical.
 * Q8_1 has no ggml row decoder: it decodes by its definition x = d * q (the
 * s field is redundant, d * sum(q), and is not read).
 * Decoders are total: every bit pattern is a valid block. */
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

/* Code of element j of a 5-bit block: nibble from qs, bit 4 from qh. */
static int five_bit_code(const uint8_t *qs, uint32_t qh, int j) {
    const int half = j >= Q8_0_FAMILY_HALF;
    const int k = half ? j - Q8_0_FAMILY_HALF : j;
    const int nibble = half ? qs[k] >> 4 : qs[k] & 0x0f;
    return nibble | (int)(((qh >> j) & 1u) << 4);
}

void anvil_ref_decode_q4_0(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / Q8_0_FAMILY_BLOCK; ++i, b += sizeof(anvil_block_q4_0)) {
        const float d = get_half(b + offsetof(anvil_block_q4_0, d));
        const uint8_t *qs = b + offsetof(anvil_block_q4_0, qs);
        for (int j = 0; j < Q8_0_FAMILY_HALF; ++j) {
            dst[j] = (float)((qs[j] & 0x0f) - 8) * d;
            dst[j + Q8_0_FAMILY_HALF] = (float)((qs[j] >> 4) - 8) * d;
        }
        dst += Q8_0_FAMILY_BLOCK;
    }
}

void anvil_ref_decode_q4_1(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / Q8_0_FAMILY_BLOCK; ++i, b += sizeof(anvil_block_q4_1)) {
        const float d = get_half(b + offsetof(anvil_block_q4_1, d));
        const float m = get_half(b + offsetof(anvil_block_q4_1, m));
        const uint8_t *qs = b + offsetof(anvil_block_q4_1, qs);
        for (int j = 0; j < Q8_0_FAMILY_HALF; ++j) {
            const float lo = (float)(qs[j] & 0x0f) * d;
            const float hi = (float)(qs[j] >> 4) * d;
            dst[j] = lo + m;
            dst[j + Q8_0_FAMILY_HALF] = hi + m;
        }
        dst += Q8_0_FAMILY_BLOCK;
    }
}

void anvil_ref_decode_q5_0(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / Q8_0_FAMILY_BLOCK; ++i, b += sizeof(anvil_block_q5_0)) {
        const float d = get_half(b + offsetof(anvil_block_q5_0, d));
        const uint32_t qh = get_u32(b + offsetof(anvil_block_q5_0, qh));
        const uint8_t *qs = b + offsetof(anvil_block_q5_0, qs);
        for (int j = 0; j < Q8_0_FAMILY_BLOCK; ++j) {
            dst[j] = (float)(five_bit_code(qs, qh, j) - 16) * d;
        }
        dst += Q8_0_FAMILY_BLOCK;
    }
}

void anvil_ref_decode_q5_1(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / Q8_0_FAMILY_BLOCK; ++i, b += sizeof(anvil_block_q5_1)) {
        const float d = get_half(b + offsetof(anvil_block_q5_1, d));
        const float m = get_half(b + offsetof(anvil_block_q5_1, m));
        const uint32_t qh = get_u32(b + offsetof(anvil_block_q5_1, qh));
        const uint8_t *qs = b + offsetof(anvil_block_q5_1, qs);
        for (int j = 0; j < Q8_0_FAMILY_BLOCK; ++j) {
            const float scaled = (float)five_bit_code(qs, qh, j) * d;
            dst[j] = scaled + m;
        }
        dst += Q8_0_FAMILY_BLOCK;
    }
}

void anvil_ref_decode_q8_0(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / Q8_0_FAMILY_BLOCK; ++i, b += sizeof(anvil_block_q8_0)) {
        const float d = get_half(b + offsetof(anvil_block_q8_0, d));
        const int8_t *qs = (const int8_t *)(b + offsetof(anvil_block_q8_0, qs));
        for (int j = 0; j < Q8_0_FAMILY_BLOCK; ++j) {
            dst[j] = (float)qs[j] * d;
        }
        dst += Q8_0_FAMILY_BLOCK;
    }
}

void anvil_ref_decode_q8_1(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / Q8_0_FAMILY_BLOCK; ++i, b += sizeof(anvil_block_q8_1)) {
        const float d = get_half(b + offsetof(anvil_block_q8_1, d));
        const int8_t *qs = (const int8_t *)(b + offsetof(anvil_block_q8_1, qs));
        for (int j = 0; j < Q8_0_FAMILY_BLOCK; ++j) {
            dst[j] = (float)qs[j] * d;
        }
        dst += Q8_0_FAMILY_BLOCK;
    }
}
