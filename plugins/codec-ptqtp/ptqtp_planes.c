/* SPDX-License-Identifier: MIT */
/* PTQTP blocks: trit packing, the encoder's entry points, the decoder and
 * the reference dot against Q8_K (the layout: anvil/formats/ptqtp.h).
 *
 * The dot's integer part takes no multiplication per weight: each trit
 * turns into two masks, and a plane's sum is the activation codes kept by
 * the +1 mask minus those kept by the -1 mask. The float part is one
 * multiply per plane and block, then one by the activation scale, in the
 * order the format header spells out; every kernel in every backend keeps
 * the integers exact and may only reorder the float additions. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "anvil/numeric.h"
#include "anvil/status.h"
#include "ptqtp_ref.h"

#define Q8K_BYTES sizeof(anvil_block_q8_K)
#define Q8K_QS offsetof(anvil_block_q8_K, qs)
#define Q8K_D offsetof(anvil_block_q8_K, d)

typedef struct byte_group {
    unsigned first, bytes, trits, elem0;
} byte_group;

static const byte_group groups[3] = {
    { ANVIL_PTQTP_G0_FIRST, ANVIL_PTQTP_G0_BYTES, ANVIL_PTQTP_G0_TRITS, ANVIL_PTQTP_G0_ELEM0 },
    { ANVIL_PTQTP_G1_FIRST, ANVIL_PTQTP_G1_BYTES, ANVIL_PTQTP_G1_TRITS, ANVIL_PTQTP_G1_ELEM0 },
    { ANVIL_PTQTP_G2_FIRST, ANVIL_PTQTP_G2_BYTES, ANVIL_PTQTP_G2_TRITS, ANVIL_PTQTP_G2_ELEM0 },
};

static uint16_t rd_u16(const uint8_t *p) {
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static float rd_f32(const uint8_t *p) {
    float v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The next base-3 digit of a fraction byte: multiply by 3 (as x + 2x), the
 * carry out of the low byte is the digit, the low byte what is left. */
static unsigned next_digit(unsigned *x) {
    const unsigned w3 = *x + (*x << 1);
    *x = w3 & 0xffu;
    return w3 >> 8;
}

/* ---- packing ---------------------------------------------------------------- */

void anvil_ptqtp_pack_plane(const int8_t t[ANVIL_PTQTP_BLOCK], uint8_t *plane) {
    for (unsigned g = 0; g < 3; ++g) {
        const byte_group *gr = &groups[g];
        for (unsigned m = 0; m < gr->bytes; ++m) {
            unsigned u = 0;
            for (unsigned j = 0; j < 5; ++j) {
                const unsigned digit = j < gr->trits ? (unsigned)(t[gr->elem0 + j * gr->bytes + m] + 1) : 0;
                u = 3 * u + digit;
            }
            plane[gr->first + m] = (uint8_t)((u * 256 + 242) / 243); /* ceil(u * 256 / 243) */
        }
    }
}

void anvil_ptqtp_pack(const int8_t t[][ANVIL_PTQTP_BLOCK], const anvil_half *d, unsigned k, uint8_t *block) {
    for (unsigned p = 0; p < k; ++p) {
        anvil_ptqtp_pack_plane(t[p], block + p * ANVIL_PTQTP_PLANE_BYTES);
        memcpy(block + ANVIL_PTQTP_SCALE_OFFSET(k, p), &d[p], sizeof d[p]);
    }
}

void anvil_ptqtp_plane_digits(const uint8_t *plane, uint8_t u[ANVIL_PTQTP_BLOCK]) {
    for (unsigned g = 0; g < 3; ++g) {
        const byte_group *gr = &groups[g];
        for (unsigned m = 0; m < gr->bytes; ++m) {
            unsigned x = plane[gr->first + m];
            for (unsigned j = 0; j < gr->trits; ++j) u[gr->elem0 + j * gr->bytes + m] = (uint8_t)next_digit(&x);
        }
    }
}

void anvil_ptqtp_unpack(const uint8_t *block, unsigned k, int8_t t[][ANVIL_PTQTP_BLOCK], anvil_half *d) {
    for (unsigned p = 0; p < k; ++p) {
        uint8_t u[ANVIL_PTQTP_BLOCK];
        anvil_ptqtp_plane_digits(block + p * ANVIL_PTQTP_PLANE_BYTES, u);
        for (unsigned i = 0; i < ANVIL_PTQTP_BLOCK; ++i) t[p][i] = (int8_t)((int)u[i] - 1);
        d[p] = rd_u16(block + ANVIL_PTQTP_SCALE_OFFSET(k, p));
    }
}

/* ---- encoder ---------------------------------------------------------------- */

static int encode(const float *src, void *dst, size_t n, unsigned k, char *msg, size_t msg_size) {
    if (n % ANVIL_PTQTP_BLOCK != 0) {
        if (msg != NULL && msg_size > 0) {
            snprintf(msg, msg_size, "ptqtp%u: %zu elements is not a whole number of %d-element blocks", k, n,
                     ANVIL_PTQTP_BLOCK);
        }
        return ANVIL_E_BLOCK_MISMATCH;
    }
    for (size_t i = 0; i < n; ++i) {
        if (!isfinite(src[i])) {
            if (msg != NULL && msg_size > 0) {
                snprintf(msg, msg_size, "ptqtp%u: element %zu is %s; encoders refuse non-finite input", k, i,
                         isnan(src[i]) ? "NaN" : "Inf");
            }
            return ANVIL_E_NONFINITE;
        }
    }
    uint8_t *y = dst;
    for (size_t b = 0; b < n / ANVIL_PTQTP_BLOCK; ++b) {
        anvil_ptqtp_fit_result fit;
        anvil_ptqtp_fit(src + b * ANVIL_PTQTP_BLOCK, k, &fit);
        anvil_ptqtp_pack((const int8_t(*)[ANVIL_PTQTP_BLOCK])fit.t, fit.d, k, y + b * ANVIL_PTQTP_BLOCK_BYTES(k));
    }
    return ANVIL_OK;
}

int anvil_ptqtp_encode2(const float *src, void *dst, size_t n, char *msg, size_t msg_size) {
    return encode(src, dst, n, 2, msg, msg_size);
}

int anvil_ptqtp_encode3(const float *src, void *dst, size_t n, char *msg, size_t msg_size) {
    return encode(src, dst, n, 3, msg, msg_size);
}

/* ---- decoder ---------------------------------------------------------------- */

static void decode(const void *src, float *dst, size_t n, unsigned k) {
    const uint8_t *x = src;
    for (size_t b = 0; b < n / ANVIL_PTQTP_BLOCK; ++b, x += ANVIL_PTQTP_BLOCK_BYTES(k), dst += ANVIL_PTQTP_BLOCK) {
        uint8_t u[ANVIL_PTQTP_MAX_PLANES][ANVIL_PTQTP_BLOCK];
        float d[ANVIL_PTQTP_MAX_PLANES];
        for (unsigned p = 0; p < k; ++p) {
            anvil_ptqtp_plane_digits(x + p * ANVIL_PTQTP_PLANE_BYTES, u[p]);
            d[p] = anvil_fp16_to_fp32(rd_u16(x + ANVIL_PTQTP_SCALE_OFFSET(k, p)));
        }
        for (unsigned i = 0; i < ANVIL_PTQTP_BLOCK; ++i) {
            /* (t * d, not a select: 0 * d keeps the sign of zero and NaN) */
            float y = (float)((int)u[0][i] - 1) * d[0];
            for (unsigned p = 1; p < k; ++p) y = y + (float)((int)u[p][i] - 1) * d[p];
            dst[i] = y;
        }
    }
}

void anvil_ptqtp_decode2(const void *src, float *dst, size_t n) { decode(src, dst, n, 2); }
void anvil_ptqtp_decode3(const void *src, float *dst, size_t n) { decode(src, dst, n, 3); }

/* ---- dot against Q8_K --------------------------------------------------------- */

/* sum over the plane of t * q: codes kept where the digit is 2 (t = +1) minus
 * codes kept where it is 0 (t = -1). One trit is peeled off every byte of a
 * group per pass, so a pass runs across independent bytes. */
static int plane_dot(const uint8_t *plane, const int8_t *q) {
    int sum = 0;
    for (unsigned g = 0; g < 3; ++g) {
        const byte_group *gr = &groups[g];
        unsigned x[ANVIL_PTQTP_G0_BYTES];
        for (unsigned m = 0; m < gr->bytes; ++m) x[m] = plane[gr->first + m];
        const int8_t *qg = q + gr->elem0;
        for (unsigned j = 0; j < gr->trits; ++j, qg += gr->bytes) {
            for (unsigned m = 0; m < gr->bytes; ++m) {
                const unsigned digit = next_digit(&x[m]);
                const int v = qg[m];
                const int plus = -(int)(digit >> 1);  /* all ones for digit 2 */
                const int minus = -(int)(digit == 0); /* all ones for digit 0 */
                sum += (v & plus) - (v & minus);
            }
        }
    }
    return sum;
}

static void vec_dot(size_t n, float *s, const uint8_t *w, const uint8_t *a, unsigned k) {
    float sum = 0.0f;
    for (size_t b = 0; b < n / ANVIL_PTQTP_BLOCK; ++b, w += ANVIL_PTQTP_BLOCK_BYTES(k), a += Q8K_BYTES) {
        const int8_t *q = (const int8_t *)(a + Q8K_QS);
        float acc = (float)plane_dot(w, q) * anvil_fp16_to_fp32(rd_u16(w + ANVIL_PTQTP_SCALE_OFFSET(k, 0)));
        for (unsigned p = 1; p < k; ++p) {
            const float d = anvil_fp16_to_fp32(rd_u16(w + ANVIL_PTQTP_SCALE_OFFSET(k, p)));
            acc = acc + (float)plane_dot(w + p * ANVIL_PTQTP_PLANE_BYTES, q) * d;
        }
        sum = sum + acc * rd_f32(a + Q8K_D);
    }
    *s = sum;
}

void anvil_ptqtp_vec_dot2_q8_K(size_t n, float *s, const void *w, const void *a) { vec_dot(n, s, w, a, 2); }
void anvil_ptqtp_vec_dot3_q8_K(size_t n, float *s, const void *w, const void *a) { vec_dot(n, s, w, a, 3); }
