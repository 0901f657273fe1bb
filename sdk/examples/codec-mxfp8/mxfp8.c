/* SPDX-License-Identifier: MIT */
/*
 * codec-mxfp8 — MXFP8 (E4M3) from the OCP Microscaling Formats (MX)
 * specification v1.0, as an anvil third-party codec.
 *
 * A block is 32 FP8 E4M3 elements sharing one E8M0 scale: 33 bytes,
 * 8.25 bits per weight. Type id 1100 (third-party range 1024-2047).
 *
 * Encoding (spec section 6.3): the shared exponent is the exponent of the
 * block's largest magnitude minus E4M3's largest exponent (8), so the largest
 * element lands in [256, 512); the scale is 2^shared_exp as E8M0; each
 * element is v / scale rounded to nearest-even in E4M3 and saturated to
 * +-448 (E4M3 has no infinity).
 *
 * It carries a reference dot product against f32 activations, so it works
 * in anvil's matmul without any backend knowing the format.
 *
 * Includes only the anvil SDK.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "anvil/abi.h"
#include "anvil/blocks.h"
#include "anvil/codec.h"
#include "anvil/status.h"

#define MXFP8_TYPE_ID 1100
#define MXFP8_BLOCK 32
#define E4M3_EMAX 8     /* largest exponent of a normal E4M3 value */
#define E4M3_MAX 448.0f /* S.1111.110 */
#define E8M0_NAN 0xFF

typedef struct {
    uint8_t e;               /* E8M0 shared scale: 2^(e - 127) */
    uint8_t qs[MXFP8_BLOCK]; /* E4M3 elements */
} block_mxfp8;

/* Round to nearest integer, ties to even, for 0 <= x < 2^22. Exact with
 * IEEE single precision in any rounding-mode-agnostic way. */
static float round_half_even(float x) {
    float f = floorf(x);
    float diff = x - f;
    if (diff > 0.5f) return f + 1.0f;
    if (diff < 0.5f) return f;
    return fmodf(f, 2.0f) == 0.0f ? f : f + 1.0f;
}

/* f32 -> E4M3 (OCP "FN": bias 7, no infinities, NaN = S.1111.111),
 * round-to-nearest-even, saturating to +-448. */
static uint8_t fp32_to_e4m3(float v) {
    const uint8_t sign = signbit(v) ? 0x80 : 0x00;
    float a = fabsf(v);
    if (!(a < E4M3_MAX)) return sign | 0x7E; /* >= 448 (and NaN, refused earlier) */
    if (a < 0x1.0p-6f) {
        /* subnormals: m * 2^-9, m = 0..7; m == 8 is the smallest normal */
        return sign | (uint8_t)round_half_even(a * 512.0f);
    }
    int e;
    float m = frexpf(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    e -= 1;                  /* a = (2m) * 2^e, 2m in [1, 2) */
    float mant = round_half_even((2.0f * m - 1.0f) * 8.0f);
    if (mant == 8.0f) {
        mant = 0.0f;
        e += 1;
    }
    if (e > E4M3_EMAX || (e == E4M3_EMAX && mant > 6.0f)) return sign | 0x7E;
    return sign | (uint8_t)(((e + 7) << 3) | (int)mant);
}

static float e4m3_to_fp32(uint8_t c) {
    const float sign = (c & 0x80) ? -1.0f : 1.0f;
    const int exp = (c >> 3) & 0x0F;
    const int mant = c & 0x07;
    if (exp == 0x0F && mant == 0x07) return NAN;
    if (exp == 0) return sign * ldexpf((float)mant, -9);
    return sign * ldexpf(1.0f + (float)mant / 8.0f, exp - 7);
}

static float e8m0_to_fp32(uint8_t e) { return e == E8M0_NAN ? NAN : ldexpf(1.0f, (int)e - 127); }

static int mxfp8_encode(const float *src, void *dst, size_t n, char *msg, size_t msg_size) {
    if (n % MXFP8_BLOCK != 0) {
        snprintf(msg, msg_size, "mxfp8: %zu elements is not a whole number of %d-element blocks", n, MXFP8_BLOCK);
        return ANVIL_E_BLOCK_MISMATCH;
    }
    for (size_t i = 0; i < n; ++i) {
        if (!isfinite(src[i])) {
            snprintf(msg, msg_size, "mxfp8: element %zu is %s; encoders refuse non-finite input", i,
                     isnan(src[i]) ? "NaN" : "Inf");
            return ANVIL_E_NONFINITE;
        }
    }
    block_mxfp8 *out = dst;
    for (size_t b = 0; b < n / MXFP8_BLOCK; ++b) {
        const float *x = src + b * MXFP8_BLOCK;
        float amax = 0.0f;
        for (int i = 0; i < MXFP8_BLOCK; ++i) amax = fmaxf(amax, fabsf(x[i]));
        block_mxfp8 blk;
        if (amax == 0.0f) {
            /* all zeros: the smallest scale, zero elements */
            blk.e = 0;
            memset(blk.qs, 0, sizeof blk.qs);
        } else {
            int e;
            frexpf(amax, &e);                 /* amax in [2^(e-1), 2^e) */
            int shared = (e - 1) - E4M3_EMAX; /* floor(log2(amax)) - emax */
            if (shared < -127) shared = -127; /* E8M0's smallest scale */
            blk.e = (uint8_t)(shared + 127);
            for (int i = 0; i < MXFP8_BLOCK; ++i) {
                /* dividing by a power of two is exact (or underflows far
                 * below E4M3's smallest subnormal) */
                blk.qs[i] = fp32_to_e4m3(ldexpf(x[i], -shared));
            }
        }
        memcpy(&out[b], &blk, sizeof blk);
    }
    return ANVIL_OK;
}

static void mxfp8_decode(const void *src, float *dst, size_t n) {
    const block_mxfp8 *in = src;
    for (size_t b = 0; b < n / MXFP8_BLOCK; ++b) {
        const float scale = e8m0_to_fp32(in[b].e);
        for (int i = 0; i < MXFP8_BLOCK; ++i) dst[b * MXFP8_BLOCK + i] = e4m3_to_fp32(in[b].qs[i]) * scale;
    }
}

/* Reference dot against f32 activations: per block, sum the element
 * products, then apply the shared scale once. */
static void mxfp8_dot(size_t n, float *s, const void *w, const void *a) {
    const block_mxfp8 *blk = w;
    const float *x = a;
    double sum = 0.0;
    for (size_t b = 0; b < n / MXFP8_BLOCK; ++b) {
        double bs = 0.0;
        for (int i = 0; i < MXFP8_BLOCK; ++i) bs += (double)e4m3_to_fp32(blk[b].qs[i]) * x[b * MXFP8_BLOCK + i];
        sum += bs * e8m0_to_fp32(blk[b].e);
    }
    *s = (float)sum;
}

static const anvil_codec mxfp8_codec = {
    .struct_size = sizeof(anvil_codec),
    .type_id = MXFP8_TYPE_ID,
    .name = "mxfp8",
    .family = "ocp-mx",
    .block_elems = MXFP8_BLOCK,
    .block_bytes = sizeof(block_mxfp8),
    .act_type = ANVIL_TYPE_F32,
    .encode = mxfp8_encode,
    .decode = mxfp8_decode,
    .ref_vec_dot = mxfp8_dot,
};

static const anvil_codec *const codecs[] = { &mxfp8_codec };

static const anvil_plugin_desc desc = {
    .struct_size = sizeof(anvil_plugin_desc),
    .abi_major = ANVIL_ABI_MAJOR,
    .abi_minor = ANVIL_ABI_MINOR,
    .kind = ANVIL_PLUGIN_CODEC,
    .id = "codec-mxfp8",
    .version = "1.0.0",
    .license = "MIT",
    .description = "OCP MX v1.0 MXFP8 (E4M3 elements, E8M0 scale per 32)",
    .n_codecs = 1,
    .codecs = codecs,
};

ANVIL_PLUGIN_EXPORT const anvil_plugin_desc *anvil_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor) {
    (void)host_abi_minor;
    return host_abi_major == ANVIL_ABI_MAJOR ? &desc : NULL;
}
