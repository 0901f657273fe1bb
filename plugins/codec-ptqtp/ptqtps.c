/* SPDX-License-Identifier: MIT */
/* PTQTP-S blocks (anvil/formats/ptqtps.h): the encoder's fit, the decoder
 * and the reference dot against Q8_K. Why this format: codec_ptqtp.c.
 *
 * The fit of a block minimises the weighted squared error
 * sum wt_i (x_i - y_i)^2 with wt_i = 1 + |x_i| / rms(block) (fit_weights),
 * all in binary32 in a fixed order (no contraction: the project builds
 * with -ffp-contract=off), so the bytes are the same on every thread count
 * and ISA:
 *  1. per 16-weight sub-block, the best real step S for the uniform levels
 *     -L..L (L = 4 or 13): NCAND candidate steps amax / (L + delta), each
 *     rounded and then refitted by least squares (S = sum wt x q / sum wt q^2),
 *     the one with the largest (sum wt x q)^2 / sum wt q^2 kept;
 *  2. the block scale d = max S / 16, rounded to binary16;
 *  3. per sub-block, the code whose multiplier is nearest S / d and its
 *     neighbouring codes are tried with the decoder's own arithmetic, the
 *     least error kept, its levels with it;
 *  4. d refitted by least squares over the block with those integers,
 *     rounded to binary16, and step 3 run again from it; the better of
 *     the two passes is the block.
 * Steps 2-4 run with the narrow multiplier table, and again with the wide
 * one when some sub-block's S is below 0.4 of the largest (the narrow
 * table stops at 10/16); the lower weighted error wins, ties to narrow.
 * At 9/16 instead the wide table is tried on most trained blocks and wins
 * on almost none (86 bytes of 1.8 MB differ on the test model, the same
 * 16.52 dB) for 1.3 times the time.
 * Speed, 1 thread, this reference fit: ~145 MB/s of f32 source (`anvil
 * bench --encode`, 512 x 4096 llm-like rows; scalar sums: 41). The
 * backends encode with the same fit on their vector layers, byte for byte
 * these bytes (plugins/simd-common/simd_enc_ptqtps.h: sub-blocks in lanes),
 * CPU time, best of several runs, f32 source, test model / llm-like rows:
 * portable (SSE2 generic vectors; NEON alike) 380 / 316 MB/s, AVX2
 * 737 / 617, AVX-512 885 / 744. `transcode --ptqtp 2s` (3s) of the F16
 * test model, 1 thread, CPU time: 123 ms for 8.4 MB with this fit on a
 * busy machine (69 MB/s of F16 source; 103 ms idle), 39 (39) ms with
 * AVX-512: 218 (215) MB/s, AVX2 170 (162), portable 111 (101); about
 * 10 ms of each is start-up and 7 the decode-back for the error figures.
 * Without step 4: 1.35 times faster, 0.05 dB less on the test model.
 * Vectors: a sub-block's 16 weights are four 4-lane generic vectors
 * (v4f); every sum over them is kept per element and added in one fixed
 * order (vsum), so SSE2, NEON or scalar code all give the same bytes. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "anvil/numeric.h"
#include "anvil/status.h"
#include "ptqtp_ref.h"

#define NB ANVIL_PTQTP_BLOCK
#define SUB ANVIL_PTQTPS_SUB
#define NSUB ANVIL_PTQTPS_NSUB
#define CB ANVIL_PTQTPS_CODE_BITS
static const int MT[2][4] = { { ANVIL_PTQTPS_MULTS_NARROW }, { ANVIL_PTQTPS_MULTS_WIDE } };
#define NCODE (1 << CB)
#define MAX_MULT 16
#define WIDE_BELOW 0.4f /* the narrow table's 10/16, less a margin: below it wide can win */
#define HALF_MAX 65504.0f
#define Q8K_QS offsetof(anvil_block_q8_K, qs)
#define Q8K_D offsetof(anvil_block_q8_K, d)

/* Step candidates, as offsets to L in amax / (L + delta). */
static const float cand_delta[] = { -0.5f, -0.25f, 0.0f, 0.25f, 0.5f, 0.75f, 1.0f, 1.5f };
#define NCAND (sizeof cand_delta / sizeof cand_delta[0])

static unsigned max_level(unsigned k) { return k == 2 ? 4u : 13u; }

/* Four lanes of binary32 (GCC/clang generic vectors: element-wise IEEE
 * operations, so any ISA gives the same bits; SSE2 / NEON registers where
 * the target has them). A sub-block is SUB / 4 of them; its sums are kept
 * per element and added in one fixed order (vsum). */
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));
#define NV (SUB / 4)

static v4f vsplat(float x) { return (v4f){ x, x, x, x }; }

static v4f vload(const float *p) {
    v4f v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Clamp to -L..L, then round to nearest, ties to even, four lanes (the
 * input is never NaN). */
static v4f vlevel(v4f x, v4f lim, v4f nlim) {
    const v4i hi = x<lim, lo = x> nlim;
    x = (v4f)(((v4i)x & hi) | ((v4i)lim & ~hi));
    x = (v4f)(((v4i)x & lo) | ((v4i)nlim & ~lo));
    const v4f magic = vsplat(12582912.0f);
    return (x + magic) - magic;
}

/* The lanes of NV vectors, added vector by vector, then lane by lane. */
static float vsum(const v4f *a) {
    v4f t = a[0];
    for (unsigned k = 1; k < NV; ++k) t = t + a[k];
    return ((t[0] + t[1]) + t[2]) + t[3];
}

/* The error weights: 1 + |w| / rms(w) over the block (large weights count
 * more, as ggml's k-quants weigh av_x + |x|; relative, so no magnitude can
 * overflow them: |w| / rms <= 16). Also wx = wt w. */
static void fit_weights(const float *w, float *wt, float *wx) {
    double p[4] = { 0.0, 0.0, 0.0, 0.0 }; /* element i into p[i % 4], then in order */
    for (unsigned i = 0; i < NB; ++i) p[i % 4] += (double)w[i] * (double)w[i];
    const float rms = (float)sqrt((((p[0] + p[1]) + p[2]) + p[3]) / (double)NB);
    const float irms = rms > 0.0f ? 1.0f / rms : 0.0f;
    for (unsigned i = 0; i < NB; ++i) {
        wt[i] = 1.0f + fabsf(w[i]) * irms;
        wx[i] = wt[i] * w[i];
    }
}

/* Step 1: the best real step of one sub-block (0 when it is all zeros). */
static float sub_step(const float *x, const float *wt, const float *wx, float lim) {
    float amax = 0.0f;
    for (unsigned i = 0; i < SUB; ++i) amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
    if (amax == 0.0f) return 0.0f;
    const float iamax = 1.0f / amax;
    const v4f vl = vsplat(lim), vnl = vsplat(-lim);
    float best_qx = 0.0f, best_q2 = 1.0f;
    for (unsigned c = 0; c < NCAND; ++c) {
        const v4f inv = vsplat((lim + cand_delta[c]) * iamax);
        v4f qx[NV], q2[NV];
        for (unsigned k = 0; k < NV; ++k) {
            const v4f q = vlevel(vload(x + 4 * k) * inv, vl, vnl);
            qx[k] = vload(wx + 4 * k) * q;
            q2[k] = vload(wt + 4 * k) * (q * q);
        }
        const float sqx = vsum(qx), sq2 = vsum(q2);
        /* sqx^2 / sq2 > best_qx^2 / best_q2, without dividing */
        if (sq2 > 0.0f && sqx * sqx * best_q2 > best_qx * best_qx * sq2) {
            best_qx = sqx;
            best_q2 = sq2;
        }
    }
    return best_qx > 0.0f ? best_qx / best_q2 : 0.0f;
}

/* The weighted squared error of x at multiplier m and block scale d, the
 * weights computed as the decoder computes them ((m q) * d, m q exact). */
static float sub_err(const float *x, const float *wt, float d, int m, float lim) {
    const float fm = (float)m;
    const v4f inv = vsplat(1.0f / (fm * d)), vm = vsplat(fm), vd = vsplat(d), vl = vsplat(lim), vnl = vsplat(-lim);
    v4f e[NV];
    for (unsigned k = 0; k < NV; ++k) {
        const v4f xv = vload(x + 4 * k);
        const v4f r = xv - (vm * vlevel(xv * inv, vl, vnl)) * vd;
        e[k] = vload(wt + 4 * k) * (r * r);
    }
    return vsum(e);
}

/* The levels sub_err judged. */
static void sub_store(const float *x, float d, int m, float lim, int8_t *v) {
    const v4f inv = vsplat(1.0f / ((float)m * d)), vl = vsplat(lim), vnl = vsplat(-lim);
    for (unsigned k = 0; k < NV; ++k) {
        const v4i q = __builtin_convertvector(vlevel(vload(x + 4 * k) * inv, vl, vnl), v4i); /* exact */
        for (unsigned l = 0; l < 4; ++l) v[4 * k + l] = (int8_t)q[l];
    }
}

/* The code whose multiplier is nearest r (ties to the lower; NaN: 0). */
static unsigned nearest_code(const int *mt, float r) {
    unsigned best = 0;
    for (unsigned c = 1; c < NCODE; ++c) {
        if (fabsf((float)mt[c] - r) < fabsf((float)mt[best] - r)) best = c;
    }
    return best;
}

/* Step 3 for every sub-block at block scale d: codes, levels; returns the
 * block's squared error. d > 0. */
static double fit_mults(const float *w, const float *wt, const float *S, const int *mt, float d, float lim, int8_t *v,
                        uint8_t *code) {
    double err = 0.0;
    for (unsigned j = 0; j < NSUB; ++j) {
        const unsigned c0 = nearest_code(mt, S[j] / d);
        unsigned best_c = c0;
        float best = sub_err(w + j * SUB, wt + j * SUB, d, mt[c0], lim);
        for (int dc = -1; dc <= 1; dc += 2) {
            const int c = (int)c0 + dc;
            if (c < 0 || c >= NCODE) continue;
            const float e = sub_err(w + j * SUB, wt + j * SUB, d, mt[c], lim);
            if (e < best) {
                best = e;
                best_c = (unsigned)c;
            }
        }
        sub_store(w + j * SUB, d, mt[best_c], lim, v + j * SUB);
        code[j] = (uint8_t)best_c;
        err += (double)best;
    }
    return err;
}

/* Step 4: the least-squares block scale for fixed integers m v, in binary16. */
static anvil_half refit_scale(const float *w, const float *wt, const int8_t *v, const uint8_t *code, const int *mt,
                              anvil_half d0) {
    double num = 0.0, den = 0.0;
    for (unsigned i = 0; i < NB; ++i) {
        const double mv = (double)(mt[code[i / SUB]] * v[i]);
        num += (double)wt[i] * mv * (double)w[i];
        den += (double)wt[i] * mv * mv;
    }
    if (!(den > 0.0) || !(num > 0.0)) return d0;
    const double d = num / den;
    return anvil_fp32_to_fp16(d > (double)HALF_MAX ? HALF_MAX : (float)d);
}

static void pack_block(const int8_t *v, const uint8_t *code, anvil_half d, unsigned k, uint8_t *block) {
    int8_t t[ANVIL_PTQTP_MAX_PLANES][NB];
    int8_t digits[27][3]; /* balanced-ternary digits of v = -13..13, least significant last */
    for (int lv = -13; lv <= 13; ++lv) {
        int r = lv;
        for (unsigned p = 3; p-- > 0;) {
            const int digit = ((r % 3) + 4) % 3 - 1;
            digits[lv + 13][p] = (int8_t)digit;
            r = (r - digit) / 3;
        }
    }
    for (unsigned i = 0; i < NB; ++i) {
        for (unsigned p = 0; p < k; ++p) t[p][i] = digits[v[i] + 13][p + 3 - k];
    }
    for (unsigned p = 0; p < k; ++p) anvil_ptqtp_pack_plane(t[p], block + p * ANVIL_PTQTP_PLANE_BYTES);
    uint32_t field = 0;
    for (unsigned j = 0; j < NSUB; ++j) field |= (uint32_t)code[j] << (CB * j);
    for (unsigned b = 0; b < ANVIL_PTQTPS_SC_BYTES; ++b)
        block[ANVIL_PTQTPS_SC_OFFSET(k) + b] = (uint8_t)(field >> (8 * b));
    memcpy(block + ANVIL_PTQTPS_D_OFFSET(k), &d, sizeof d);
}

/* Steps 2-4 with one multiplier table; d > 0, or 0 when every weight
 * rounds to zero at any binary16 scale. Returns the weighted error. */
static double fit_table(const float *w, const float *wt, const float *S, float smax, float lim, const int *mt,
                        int8_t *v, uint8_t *code, anvil_half *d_out) {
    anvil_half d = anvil_fp32_to_fp16(smax / (float)MAX_MULT > HALF_MAX ? HALF_MAX : smax / (float)MAX_MULT);
    double err;
    if (anvil_fp16_to_fp32(d) > 0.0f) {
        err = fit_mults(w, wt, S, mt, anvil_fp16_to_fp32(d), lim, v, code);
        const anvil_half d2 = refit_scale(w, wt, v, code, mt, d);
        if (d2 != d) {
            int8_t v2[NB];
            uint8_t code2[NSUB];
            const double err2 = fit_mults(w, wt, S, mt, anvil_fp16_to_fp32(d2), lim, v2, code2);
            if (err2 < err) {
                err = err2;
                d = d2;
                memcpy(v, v2, sizeof v2);
                memcpy(code, code2, sizeof code2);
            }
        }
    } else {
        d = 0;
        memset(v, 0, NB);
        memset(code, 0, NSUB);
        err = 0.0;
        for (unsigned i = 0; i < NB; ++i) err += (double)wt[i] * (double)w[i] * (double)w[i];
    }
    *d_out = d;
    return err;
}

double anvil_ptqtps_fit(const float *w, unsigned k, int8_t v[NB], uint8_t code[NSUB], anvil_half *d_out,
                        uint8_t *block) {
    const float lim = (float)max_level(k);
    float wt[NB], wx[NB];
    fit_weights(w, wt, wx);
    float S[NSUB], smax = 0.0f, smin = HALF_MAX;
    for (unsigned j = 0; j < NSUB; ++j) {
        S[j] = sub_step(w + j * SUB, wt + j * SUB, wx + j * SUB, lim);
        smax = S[j] > smax ? S[j] : smax;
        smin = S[j] < smin ? S[j] : smin;
    }
    anvil_half d;
    double err = fit_table(w, wt, S, smax, lim, MT[0], v, code, &d);
    /* the wide table too (the sign bit of d names it), where some sub-block
     * wants a step below the narrow table's reach */
    if (d != 0 && smin < WIDE_BELOW * smax) {
        int8_t v2[NB];
        uint8_t code2[NSUB];
        anvil_half d2;
        const double err2 = fit_table(w, wt, S, smax, lim, MT[1], v2, code2, &d2);
        if (err2 < err) {
            err = err2;
            d = (anvil_half)(d2 | 0x8000u);
            memcpy(v, v2, sizeof v2);
            memcpy(code, code2, sizeof code2);
        }
    }
    *d_out = d;
    if (block != NULL) pack_block(v, code, d, k, block);
    return err;
}

/* ---- encoder ---------------------------------------------------------------- */

static int encode(const float *src, void *dst, size_t n, unsigned k, char *msg, size_t msg_size) {
    if (n % NB != 0) {
        if (msg != NULL && msg_size > 0) {
            snprintf(msg, msg_size, "ptqtp%us: %zu elements is not a whole number of %d-element blocks", k, n, NB);
        }
        return ANVIL_E_BLOCK_MISMATCH;
    }
    const size_t bad = anvil_find_nonfinite(src, n);
    if (bad < n) {
        if (msg != NULL && msg_size > 0) {
            snprintf(msg, msg_size, "ptqtp%us: element %zu is %s; encoders refuse non-finite input", k, bad,
                     isnan(src[bad]) ? "NaN" : "Inf");
        }
        return ANVIL_E_NONFINITE;
    }
    uint8_t *y = dst;
    for (size_t b = 0; b < n / NB; ++b) {
        int8_t v[NB];
        uint8_t code[NSUB];
        anvil_half d;
        anvil_ptqtps_fit(src + b * NB, k, v, code, &d, y + b * ANVIL_PTQTPS_BLOCK_BYTES(k));
    }
    return ANVIL_OK;
}

int anvil_ptqtps_encode2(const float *src, void *dst, size_t n, char *msg, size_t msg_size) {
    return encode(src, dst, n, 2, msg, msg_size);
}

int anvil_ptqtps_encode3(const float *src, void *dst, size_t n, char *msg, size_t msg_size) {
    return encode(src, dst, n, 3, msg, msg_size);
}

/* ---- decoder and dot ---------------------------------------------------------- */

/* A block's levels v (element order) and its sub-blocks' multipliers. */
static void block_levels(const uint8_t *x, unsigned k, int v[NB], int m[NSUB]) {
    uint8_t u[NB];
    for (unsigned i = 0; i < NB; ++i) v[i] = 0;
    for (unsigned p = 0; p < k; ++p) {
        anvil_ptqtp_plane_digits(x + p * ANVIL_PTQTP_PLANE_BYTES, u);
        for (unsigned i = 0; i < NB; ++i) v[i] = 3 * v[i] + ((int)u[i] - 1);
    }
    uint32_t field = 0;
    for (unsigned b = 0; b < ANVIL_PTQTPS_SC_BYTES; ++b)
        field |= (uint32_t)x[ANVIL_PTQTPS_SC_OFFSET(k) + b] << (8 * b);
    anvil_half h;
    memcpy(&h, x + ANVIL_PTQTPS_D_OFFSET(k), sizeof h);
    const int *mt = MT[h >> 15];
    for (unsigned j = 0; j < NSUB; ++j) m[j] = mt[(field >> (CB * j)) & (NCODE - 1u)];
}

static float block_scale(const uint8_t *x, unsigned k) {
    anvil_half h;
    memcpy(&h, x + ANVIL_PTQTPS_D_OFFSET(k), sizeof h);
    return anvil_fp16_to_fp32((anvil_half)(h & 0x7fffu)); /* the sign bit names the table */
}

static void decode(const void *src, float *dst, size_t n, unsigned k) {
    const uint8_t *x = src;
    for (size_t b = 0; b < n / NB; ++b, x += ANVIL_PTQTPS_BLOCK_BYTES(k), dst += NB) {
        int v[NB], m[NSUB];
        block_levels(x, k, v, m);
        const float d = block_scale(x, k);
        for (unsigned i = 0; i < NB; ++i) dst[i] = (float)(m[i / SUB] * v[i]) * d;
    }
}

void anvil_ptqtps_decode2(const void *src, float *dst, size_t n) { decode(src, dst, n, 2); }
void anvil_ptqtps_decode3(const void *src, float *dst, size_t n) { decode(src, dst, n, 3); }

static void vec_dot(size_t n, float *s, const uint8_t *w, const uint8_t *a, unsigned k) {
    float sum = 0.0f;
    for (size_t b = 0; b < n / NB; ++b, w += ANVIL_PTQTPS_BLOCK_BYTES(k), a += sizeof(anvil_block_q8_K)) {
        const int8_t *q = (const int8_t *)(a + Q8K_QS);
        int v[NB], m[NSUB];
        block_levels(w, k, v, m);
        int32_t isum = 0;
        for (unsigned j = 0; j < NSUB; ++j) {
            int32_t sj = 0;
            for (unsigned i = j * SUB; i < (j + 1) * SUB; ++i) sj += v[i] * q[i];
            isum += m[j] * sj;
        }
        float da;
        memcpy(&da, a + Q8K_D, sizeof da);
        sum = sum + ((float)isum * block_scale(w, k)) * da;
    }
    *s = sum;
}

void anvil_ptqtps_vec_dot2_q8_K(size_t n, float *s, const void *w, const void *a) { vec_dot(n, s, w, a, 2); }
void anvil_ptqtps_vec_dot3_q8_K(size_t n, float *s, const void *w, const void *a) { vec_dot(n, s, w, a, 3); }
