/* The flat 32-element family, encoding side: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1
 * encoders and the Q8_0/Q8_1 activation quantizers.
 *
 * Every float operation below is the one ggml's quantize_row_*_ref performs,
 * in the same order and precision (the build sets -ffp-contract=off), so the
 * bytes are ggml's bytes. Blocks are read and written through memcpy at
 * their ggml offsets: callers may hand us any byte address (a row inside a
 * mapped file, a packed buffer), and struct access would need alignment.
 */
#include "ref/q8_0_family.h"

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "anvil/blocks.h"
#include "anvil/numeric.h"
#include "anvil/status.h"
#include "ref/checks.h"
#include "ref/q8_0_family_impl.h"

static void put_half(uint8_t *p, float v) {
    const anvil_half h = anvil_fp32_to_fp16(v);
    memcpy(p, &h, sizeof h);
}

static void put_u32(uint8_t *p, uint32_t v) {
    memcpy(p, &v, sizeof v); /* little-endian hosts only (see blocks.h) */
}

/* Q4_0 and Q5_0 share one scheme: the signed value of largest magnitude
 * (the first one on ties) gets the most negative code, so d = max / -2^(b-1)
 * and the other sign gets one code fewer. Codes are truncations of
 * x / d + (2^(b-1) + 0.5), i.e. round-half-up of x / d, capped at the top
 * code because x / d can land exactly on 2^(b-1). Returns d; writes the
 * 32 codes (each already the low byte ggml stores, before packing). */
static float symmetric_codes(const float *x, float levels, float offset, int top,
                             uint8_t codes[Q8_0_FAMILY_BLOCK]) {
    float amax = 0.0f;
    float max = 0.0f;
    for (int j = 0; j < Q8_0_FAMILY_BLOCK; ++j) {
        const float a = fabsf(x[j]);
        if (amax < a) {
            amax = a;
            max = x[j];
        }
    }
    const float d = max / levels;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < Q8_0_FAMILY_BLOCK; ++j) {
        const float scaled = x[j] * id;
        int q = q8_0_family_cvt_i8(scaled + offset);
        if (q > top) {
            q = top;
        }
        codes[j] = (uint8_t)(q & 0xff);
    }
    return d;
}

/* Q4_1 and Q5_1: an affine map from [min, max] onto 0..2^b-1; codes are
 * truncations of (x - min) / d + 0.5. Q4_1 caps at 15 after a signed cast;
 * Q5_1 casts to unsigned without a cap (cap < 0 means "no cap"), exactly as
 * ggml does. Writes d and min. */
static void affine_codes(const float *x, float steps, int cap, int signed_cast, float *d_out,
                         float *min_out, uint8_t codes[Q8_0_FAMILY_BLOCK]) {
    float min = FLT_MAX;
    float max = -FLT_MAX;
    for (int j = 0; j < Q8_0_FAMILY_BLOCK; ++j) {
        const float v = x[j];
        if (v < min) {
            min = v;
        }
        if (v > max) {
            max = v;
        }
    }
    const float d = (max - min) / steps;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < Q8_0_FAMILY_BLOCK; ++j) {
        const float scaled = (x[j] - min) * id;
        int q = signed_cast ? q8_0_family_cvt_i8(scaled + 0.5f)
                            : q8_0_family_cvt_low_byte(scaled + 0.5f);
        if (cap >= 0 && q > cap) {
            q = cap;
        }
        codes[j] = (uint8_t)(q & 0xff);
    }
    *d_out = d;
    *min_out = min;
}

/* 4-bit packing: element j in the low nibble of byte j, element j + 16 in
 * the high nibble. ggml ORs the raw low code into the byte, so a code with
 * bits above the nibble (impossible for finite input, kept for fidelity)
 * would spill into the high nibble exactly as there. */
static void pack_nibbles(const uint8_t codes[Q8_0_FAMILY_BLOCK], uint8_t qs[Q8_0_FAMILY_HALF]) {
    for (int j = 0; j < Q8_0_FAMILY_HALF; ++j) {
        qs[j] = (uint8_t)((codes[j] | (codes[j + Q8_0_FAMILY_HALF] << 4)) & 0xff);
    }
}

/* 5-bit packing: low nibbles as above, bit 4 of element j in bit j of the
 * little-endian 32-bit qh word. */
static void pack_five_bits(const uint8_t codes[Q8_0_FAMILY_BLOCK], uint8_t qs[Q8_0_FAMILY_HALF],
                           uint8_t *qh) {
    uint32_t high = 0;
    for (int j = 0; j < Q8_0_FAMILY_HALF; ++j) {
        const unsigned lo = codes[j], hi = codes[j + Q8_0_FAMILY_HALF];
        qs[j] = (uint8_t)((lo & 0x0fu) | ((hi & 0x0fu) << 4));
        high |= (uint32_t)((lo >> 4) & 1u) << j;
        high |= (uint32_t)((hi >> 4) & 1u) << (j + Q8_0_FAMILY_HALF);
    }
    put_u32(qh, high);
}

static void encode_rows_q4_0(const float *x, uint8_t *dst, size_t nb) {
    for (size_t i = 0; i < nb; ++i, x += Q8_0_FAMILY_BLOCK, dst += sizeof(anvil_block_q4_0)) {
        uint8_t codes[Q8_0_FAMILY_BLOCK];
        const float d = symmetric_codes(x, -8.0f, 8.5f, 15, codes);
        put_half(dst + offsetof(anvil_block_q4_0, d), d);
        pack_nibbles(codes, dst + offsetof(anvil_block_q4_0, qs));
    }
}

static void encode_rows_q5_0(const float *x, uint8_t *dst, size_t nb) {
    for (size_t i = 0; i < nb; ++i, x += Q8_0_FAMILY_BLOCK, dst += sizeof(anvil_block_q5_0)) {
        uint8_t codes[Q8_0_FAMILY_BLOCK];
        const float d = symmetric_codes(x, -16.0f, 16.5f, 31, codes);
        put_half(dst + offsetof(anvil_block_q5_0, d), d);
        pack_five_bits(codes, dst + offsetof(anvil_block_q5_0, qs),
                       dst + offsetof(anvil_block_q5_0, qh));
    }
}

static void encode_rows_q4_1(const float *x, uint8_t *dst, size_t nb) {
    for (size_t i = 0; i < nb; ++i, x += Q8_0_FAMILY_BLOCK, dst += sizeof(anvil_block_q4_1)) {
        uint8_t codes[Q8_0_FAMILY_BLOCK];
        float d, min;
        affine_codes(x, 15.0f, 15, 1, &d, &min, codes);
        put_half(dst + offsetof(anvil_block_q4_1, d), d);
        put_half(dst + offsetof(anvil_block_q4_1, m), min);
        pack_nibbles(codes, dst + offsetof(anvil_block_q4_1, qs));
    }
}

static void encode_rows_q5_1(const float *x, uint8_t *dst, size_t nb) {
    for (size_t i = 0; i < nb; ++i, x += Q8_0_FAMILY_BLOCK, dst += sizeof(anvil_block_q5_1)) {
        uint8_t codes[Q8_0_FAMILY_BLOCK];
        float d, min;
        affine_codes(x, 31.0f, -1, 0, &d, &min, codes);
        put_half(dst + offsetof(anvil_block_q5_1, d), d);
        put_half(dst + offsetof(anvil_block_q5_1, m), min);
        pack_five_bits(codes, dst + offsetof(anvil_block_q5_1, qs),
                       dst + offsetof(anvil_block_q5_1, qh));
    }
}

/* Q8_0 and Q8_1 codes: d = amax / 127, q = round-half-away(x / d). Returns
 * d and the sum of the stored codes (Q8_1 keeps d * sum for the dot's min
 * term). */
static float int8_codes(const float *x, int8_t qs[Q8_0_FAMILY_BLOCK], int *sum_out) {
    float amax = 0.0f;
    for (int j = 0; j < Q8_0_FAMILY_BLOCK; ++j) {
        const float a = fabsf(x[j]);
        amax = amax > a ? amax : a;
    }
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int sum = 0;
    for (int j = 0; j < Q8_0_FAMILY_BLOCK; ++j) {
        const int q = q8_0_family_cvt_i8(roundf(x[j] * id));
        qs[j] = (int8_t)q;
        sum += q;
    }
    *sum_out = sum;
    return d;
}

void anvil_ref_quantize_q8_0(const float *x, void *dst, size_t n) {
    uint8_t *out = dst;
    const size_t nb = n / Q8_0_FAMILY_BLOCK;
    for (size_t i = 0; i < nb; ++i, x += Q8_0_FAMILY_BLOCK, out += sizeof(anvil_block_q8_0)) {
        int8_t qs[Q8_0_FAMILY_BLOCK];
        int sum;
        const float d = int8_codes(x, qs, &sum);
        put_half(out + offsetof(anvil_block_q8_0, d), d);
        memcpy(out + offsetof(anvil_block_q8_0, qs), qs, sizeof qs);
    }
}

void anvil_ref_quantize_q8_1(const float *x, void *dst, size_t n) {
    uint8_t *out = dst;
    const size_t nb = n / Q8_0_FAMILY_BLOCK;
    for (size_t i = 0; i < nb; ++i, x += Q8_0_FAMILY_BLOCK, out += sizeof(anvil_block_q8_1)) {
        int8_t qs[Q8_0_FAMILY_BLOCK];
        int sum;
        const float d = int8_codes(x, qs, &sum);
        put_half(out + offsetof(anvil_block_q8_1, d), d);
        /* ggml rounds (float)sum * d once, to fp16; |sum| <= 4096 is exact. */
        put_half(out + offsetof(anvil_block_q8_1, s), (float)sum * d);
        memcpy(out + offsetof(anvil_block_q8_1, qs), qs, sizeof qs);
    }
}

/* Encoders: the shared checks, then the block loop. */
#define DEFINE_ENCODER(type, name, rows_fn)                                               \
    int anvil_ref_encode_##type(const float *src, void *dst, size_t n, char *msg,         \
                                size_t msg_size) {                                        \
        const int rc = anvil_ref_check_encode_input(name, src, n, Q8_0_FAMILY_BLOCK, msg, \
                                                    msg_size);                            \
        if (rc != ANVIL_OK) {                                                             \
            return rc;                                                                    \
        }                                                                                 \
        rows_fn(src, dst, n);                                                             \
        return ANVIL_OK;                                                                  \
    }

static void encode_q4_0(const float *x, void *dst, size_t n) { encode_rows_q4_0(x, dst, n / Q8_0_FAMILY_BLOCK); }
static void encode_q4_1(const float *x, void *dst, size_t n) { encode_rows_q4_1(x, dst, n / Q8_0_FAMILY_BLOCK); }
static void encode_q5_0(const float *x, void *dst, size_t n) { encode_rows_q5_0(x, dst, n / Q8_0_FAMILY_BLOCK); }
static void encode_q5_1(const float *x, void *dst, size_t n) { encode_rows_q5_1(x, dst, n / Q8_0_FAMILY_BLOCK); }

DEFINE_ENCODER(q4_0, "q4_0", encode_q4_0)
DEFINE_ENCODER(q4_1, "q4_1", encode_q4_1)
DEFINE_ENCODER(q5_0, "q5_0", encode_q5_0)
DEFINE_ENCODER(q5_1, "q5_1", encode_q5_1)
DEFINE_ENCODER(q8_0, "q8_0", anvil_ref_quantize_q8_0)
DEFINE_ENCODER(q8_1, "q8_1", anvil_ref_quantize_q8_1)
