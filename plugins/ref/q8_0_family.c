/* SPDX-License-Identifier: MIT */
/* The flat 32-element family, encoding side: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1
 * encoders, their row encoders (ggml_quantize_chunk, with or without an
 * importance matrix) and the Q8_0/Q8_1 activation quantizers.
 *
 * Every float operation below is the one ggml's quantize_row_*_ref (or,
 * with importance weights, quantize_row_*_impl) performs,
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
#include "ref/kquants_search.h"
#include "ref/q8_0_family_impl.h"
#include "ref/rows.h"
#include "bytes.h"

static void put_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, sizeof v); /* little-endian hosts only (see blocks.h) */ }

/* Q4_0 and Q5_0 share one scheme: the signed value of largest magnitude
 * (the first one on ties) gets the most negative code, so d = max / -2^(b-1)
 * and the other sign gets one code fewer. Codes are truncations of
 * x / d + (2^(b-1) + 0.5), i.e. round-half-up of x / d, capped at the top
 * code because x / d can land exactly on 2^(b-1). Returns d; writes the
 * 32 codes (each already the low byte ggml stores, before packing). */
static float symmetric_codes(const float *x, float levels, float offset, int top, uint8_t codes[Q8_0_FAMILY_BLOCK]) {
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
static void affine_codes(const float *x, float steps, int cap, int signed_cast, float *d_out, float *min_out,
                         uint8_t codes[Q8_0_FAMILY_BLOCK]) {
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
        int q = signed_cast ? q8_0_family_cvt_i8(scaled + 0.5f) : q8_0_family_cvt_low_byte(scaled + 0.5f);
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
static void pack_five_bits(const uint8_t codes[Q8_0_FAMILY_BLOCK], uint8_t qs[Q8_0_FAMILY_HALF], uint8_t *qh) {
    uint32_t high = 0;
    for (int j = 0; j < Q8_0_FAMILY_HALF; ++j) {
        const unsigned lo = codes[j], hi = codes[j + Q8_0_FAMILY_HALF];
        qs[j] = (uint8_t)((lo & 0x0fu) | ((hi & 0x0fu) << 4));
        high |= (uint32_t)((lo >> 4) & 1u) << j;
        high |= (uint32_t)((hi >> 4) & 1u) << (j + Q8_0_FAMILY_HALF);
    }
    put_u32(qh, high);
}

/* One of the four formats with 4- or 5-bit codes, as both of ggml's
 * encoders see it. */
typedef struct flat_format {
    int nmax;      /* symmetric: codes -nmax..nmax-1 (8, 16); affine: 0..nmax (15, 31) */
    int affine;    /* a min besides the scale (Q4_1, Q5_1) */
    int five_bits; /* fifth code bits in the qh word (Q5_0, Q5_1) */
    size_t block_bytes;
    size_t off_m;  /* offset of the f16 min (affine formats) */
    size_t off_qh; /* offset of the qh word (5-bit formats) */
    size_t off_qs; /* offset of the nibbles */
} flat_format;

static const flat_format format_q4_0 = { 8, 0, 0, sizeof(anvil_block_q4_0), 0, 0, offsetof(anvil_block_q4_0, qs) };
static const flat_format format_q4_1 = {
    15, 1, 0, sizeof(anvil_block_q4_1), offsetof(anvil_block_q4_1, m), 0, offsetof(anvil_block_q4_1, qs)
};
static const flat_format format_q5_0 = {
    16, 0, 1, sizeof(anvil_block_q5_0), 0, offsetof(anvil_block_q5_0, qh), offsetof(anvil_block_q5_0, qs)
};
static const flat_format format_q5_1 = { 31,
                                         1,
                                         1,
                                         sizeof(anvil_block_q5_1),
                                         offsetof(anvil_block_q5_1, m),
                                         offsetof(anvil_block_q5_1, qh),
                                         offsetof(anvil_block_q5_1, qs) };

/* d (and m) first in every block, then the packed codes. */
static void store_block(const flat_format *f, uint8_t *dst, float d, float m,
                        const uint8_t codes[Q8_0_FAMILY_BLOCK]) {
    anvil_wr_half(dst, d);
    if (f->affine) {
        anvil_wr_half(dst + f->off_m, m);
    }
    if (f->five_bits) {
        pack_five_bits(codes, dst + f->off_qs, dst + f->off_qh);
    } else {
        pack_nibbles(codes, dst + f->off_qs);
    }
}

/* quantize_row_<t>_ref: no search, the extreme value(s) fix the grid. Of
 * the affine pair, Q4_1 casts its codes signed and caps them at 15, Q5_1
 * casts unsigned without a cap (ggml's code, kept quirk for quirk). */
static void encode_block_plain(const flat_format *f, const float *x, uint8_t *dst) {
    uint8_t codes[Q8_0_FAMILY_BLOCK];
    float d;
    float m = 0.0f;
    if (f->affine) {
        affine_codes(x, (float)f->nmax, f->five_bits ? -1 : f->nmax, !f->five_bits, &d, &m, codes);
    } else {
        d = symmetric_codes(x, -(float)f->nmax, (float)f->nmax + 0.5f, 2 * f->nmax - 1, codes);
    }
    store_block(f, dst, d, m, codes);
}

/* quantize_row_<t>_impl's block: the weighted least-squares searches the
 * K-quants use, make_qx_quants (rmse_type 1) for the symmetric formats and
 * make_qkx3_quants (36 grids from nmax - 0.9 in steps of 0.05) for the
 * affine ones. */
static void encode_block_weighted(const flat_format *f, const float *x, const float *weight, uint8_t *dst) {
    uint8_t codes[Q8_0_FAMILY_BLOCK];
    float d;
    float m = 0.0f;
    if (f->affine) {
        uint8_t scratch[Q8_0_FAMILY_BLOCK];
        float neg_min;
        d = anvil_kq_fit_affine(Q8_0_FAMILY_BLOCK, f->nmax, x, weight, codes, &neg_min, scratch, -0.9f, 0.05f, 36, 0);
        m = -neg_min;
    } else {
        int8_t L[Q8_0_FAMILY_BLOCK];
        d = anvil_kq_fit_symmetric(Q8_0_FAMILY_BLOCK, f->nmax, x, L, weight);
        for (int j = 0; j < Q8_0_FAMILY_BLOCK; ++j) {
            codes[j] = (uint8_t)L[j];
        }
    }
    store_block(f, dst, d, m, codes);
}

/* One row as ggml_quantize_chunk encodes it. With importance weights each
 * element's weight is qw * sqrt(sigma2 + x^2), sigma2 the mean square of
 * the whole row (not of the block). */
static void encode_row(const flat_format *f, const float *x, void *dst, size_t n, const float *qw) {
    uint8_t *out = dst;
    const size_t nb = n / Q8_0_FAMILY_BLOCK;
    if (qw == NULL) {
        for (size_t i = 0; i < nb; ++i) {
            encode_block_plain(f, x + i * Q8_0_FAMILY_BLOCK, out + i * f->block_bytes);
        }
        return;
    }
    const float sigma2 = anvil_kq_sum_squares(x, n) / (float)n;
    for (size_t i = 0; i < nb; ++i) {
        const float *xb = x + i * Q8_0_FAMILY_BLOCK;
        float weight[Q8_0_FAMILY_BLOCK];
        (void)anvil_kq_importance(Q8_0_FAMILY_BLOCK, xb, qw + i * Q8_0_FAMILY_BLOCK, sigma2, weight);
        encode_block_weighted(f, xb, weight, out + i * f->block_bytes);
    }
}

static void encode_row_q4_0(const float *x, void *dst, size_t n, const float *qw) {
    encode_row(&format_q4_0, x, dst, n, qw);
}
static void encode_row_q4_1(const float *x, void *dst, size_t n, const float *qw) {
    encode_row(&format_q4_1, x, dst, n, qw);
}
static void encode_row_q5_0(const float *x, void *dst, size_t n, const float *qw) {
    encode_row(&format_q5_0, x, dst, n, qw);
}
static void encode_row_q5_1(const float *x, void *dst, size_t n, const float *qw) {
    encode_row(&format_q5_1, x, dst, n, qw);
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
        anvil_wr_half(out + offsetof(anvil_block_q8_0, d), d);
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
        anvil_wr_half(out + offsetof(anvil_block_q8_1, d), d);
        /* ggml rounds (float)sum * d once, to fp16; |sum| <= 4096 is exact. */
        anvil_wr_half(out + offsetof(anvil_block_q8_1, s), (float)sum * d);
        memcpy(out + offsetof(anvil_block_q8_1, qs), qs, sizeof qs);
    }
}

/* ggml's quantize_q8_0 ignores importance weights. */
static void encode_row_q8_0(const float *x, void *dst, size_t n, const float *qw) {
    (void)qw;
    anvil_ref_quantize_q8_0(x, dst, n);
}

ANVIL_REF_DEFINE_ENCODERS(q4_0, "q4_0", Q8_0_FAMILY_BLOCK, sizeof(anvil_block_q4_0), encode_row_q4_0)
ANVIL_REF_DEFINE_ENCODERS(q4_1, "q4_1", Q8_0_FAMILY_BLOCK, sizeof(anvil_block_q4_1), encode_row_q4_1)
ANVIL_REF_DEFINE_ENCODERS(q5_0, "q5_0", Q8_0_FAMILY_BLOCK, sizeof(anvil_block_q5_0), encode_row_q5_0)
ANVIL_REF_DEFINE_ENCODERS(q5_1, "q5_1", Q8_0_FAMILY_BLOCK, sizeof(anvil_block_q5_1), encode_row_q5_1)
ANVIL_REF_DEFINE_ENCODERS(q8_0, "q8_0", Q8_0_FAMILY_BLOCK, sizeof(anvil_block_q8_0), encode_row_q8_0)

/* Q8_1 is an activation format (not one ggml_quantize_chunk encodes): the
 * plain encoder only. */
int anvil_ref_encode_q8_1(const float *src, void *dst, size_t n, char *msg, size_t msg_size) {
    const int rc = anvil_ref_check_encode_input("q8_1", src, n, Q8_0_FAMILY_BLOCK, msg, msg_size);
    if (rc != ANVIL_OK) {
        return rc;
    }
    anvil_ref_quantize_q8_1(src, dst, n);
    return ANVIL_OK;
}
