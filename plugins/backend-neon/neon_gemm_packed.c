/* SPDX-License-Identifier: MIT */
/* backend-neon: GEMMs over the packed Q8_0 and Q4_K layouts
 * (neon_packed.h). Compiled once per variant:
 *   base  smull + sadalp, one accumulator per row
 *   dp    sdot: two rows against one 8-byte activation chunk (duplicated)
 *   i8mm  smmla: two rows against two activation rows at once (the dp
 *         code takes a last odd activation row)
 *
 * Each lane of a result vector is one weight row. Its integer sums are
 * exact, and its float operations are those of the row's vec_dot, lane by
 * lane, in block order. So every output equals vec_dot's for that row and
 * activation to the bit, whichever rows share a call or a group. */
#include "anvil/status.h"
#include "neon_kernels.h"
#include "neon_packed.h"
#include "neon_util.h"

#define ROWS ANVIL_NEON_PACK_ROWS

static inline float32x4_t ld_f32x4(const uint8_t *p) { return vreinterpretq_f32_u8(vld1q_u8(p)); }

#if NEON_VARIANT >= 1
/* Eight activation bytes, duplicated into both halves. */
static inline int8x16_t dup8(const uint8_t *p) {
    const int8x8_t v = vreinterpret_s8_u8(vld1_u8(p));
    return vcombine_s8(v, v);
}
#endif

/* Four rows' integer dots over one 8-byte chunk: w01 holds rows 0 and 1
 * (8 bytes each), w23 rows 2 and 3; a the chunk's activations. The running
 * state is kept per variant and reduced by rows4(). */
typedef struct row_acc {
#if NEON_VARIANT >= 1
    int32x4_t r01, r23; /* lanes: row0 lo, row0 hi, row1 lo, row1 hi */
#else
    int32x4_t r[4];
#endif
} row_acc;

static inline void acc_zero(row_acc *s) {
#if NEON_VARIANT >= 1
    s->r01 = s->r23 = vdupq_n_s32(0);
#else
    for (int k = 0; k < 4; ++k) {
        s->r[k] = vdupq_n_s32(0);
    }
#endif
}

static inline void acc_chunk(row_acc *s, int8x16_t w01, int8x16_t w23, const uint8_t *a) {
#if NEON_VARIANT >= 1
    const int8x16_t av = dup8(a);
    s->r01 = vdotq_s32(s->r01, w01, av);
    s->r23 = vdotq_s32(s->r23, w23, av);
#else
    const int8x8_t av = vreinterpret_s8_u8(vld1_u8(a));
    s->r[0] = vpadalq_s16(s->r[0], vmull_s8(vget_low_s8(w01), av));
    s->r[1] = vpadalq_s16(s->r[1], vmull_s8(vget_high_s8(w01), av));
    s->r[2] = vpadalq_s16(s->r[2], vmull_s8(vget_low_s8(w23), av));
    s->r[3] = vpadalq_s16(s->r[3], vmull_s8(vget_high_s8(w23), av));
#endif
}

/* [row0, row1, row2, row3] */
static inline int32x4_t rows4(const row_acc *s) {
#if NEON_VARIANT >= 1
    return vpaddq_s32(s->r01, s->r23);
#else
    return vpaddq_s32(vpaddq_s32(s->r[0], s->r[1]), vpaddq_s32(s->r[2], s->r[3]));
#endif
}

/* Store the lanes of v whose rows lie in [r0, r1). */
static inline void store_rows(float *y, size_t row, size_t r0, size_t r1, float32x4_t v) {
    float t[ROWS];
    vst1q_f32(t, v);
    for (size_t k = 0; k < ROWS; ++k) {
        if (row + k >= r0 && row + k < r1) {
            y[row + k] = t[k];
        }
    }
}

#if NEON_VARIANT == 2
/* Two activation rows at once: acc = [r0.a0, r0.a1, r1.a0, r1.a1] per pair
 * of weight rows. The even lanes of (r01, r23) are activation 0's four
 * rows, the odd lanes activation 1's. */
typedef struct pair_acc {
    int32x4_t r01, r23;
} pair_acc;

static inline void pair_chunk(pair_acc *s, int8x16_t w01, int8x16_t w23, const uint8_t *a0, const uint8_t *a1) {
    const int8x16_t av = vcombine_s8(vreinterpret_s8_u8(vld1_u8(a0)), vreinterpret_s8_u8(vld1_u8(a1)));
    s->r01 = vmmlaq_s32(s->r01, w01, av);
    s->r23 = vmmlaq_s32(s->r23, w23, av);
}
#endif

/* ---- Q8_0 ------------------------------------------------------------------- */

/* One activation row against one packed group: vec_dot's
 * acc += (float)sumi * (dw * da) per lane. */
static float32x4_t q8_0_group_one(const uint8_t *grp, size_t nb, const uint8_t *act) {
    float32x4_t sumf = vdupq_n_f32(0.0f);
    for (size_t b = 0; b < nb; ++b, grp += NEON_PK_Q8_0_BLOCK, act += sizeof(anvil_block_q8_0)) {
        const uint8_t *qs = grp + NEON_PK_Q8_0_QS;
        const uint8_t *aq = act + offsetof(anvil_block_q8_0, qs);
        row_acc s;
        acc_zero(&s);
        for (int c = 0; c < 4; ++c) {
            acc_chunk(&s, neon_ld_s8(qs + 32 * c), neon_ld_s8(qs + 32 * c + 16), aq + 8 * c);
        }
        const float da = neon_half(act + offsetof(anvil_block_q8_0, d));
        const float32x4_t dd = vmulq_n_f32(ld_f32x4(grp), da);
        sumf = vaddq_f32(sumf, vmulq_f32(vcvtq_f32_s32(rows4(&s)), dd));
    }
    return sumf;
}

#if NEON_VARIANT == 2
static void q8_0_group_two(const uint8_t *grp, size_t nb, const uint8_t *act0, const uint8_t *act1, float32x4_t *out0,
                           float32x4_t *out1) {
    float32x4_t sum0 = vdupq_n_f32(0.0f), sum1 = vdupq_n_f32(0.0f);
    for (size_t b = 0; b < nb;
         ++b, grp += NEON_PK_Q8_0_BLOCK, act0 += sizeof(anvil_block_q8_0), act1 += sizeof(anvil_block_q8_0)) {
        const uint8_t *qs = grp + NEON_PK_Q8_0_QS;
        const uint8_t *aq0 = act0 + offsetof(anvil_block_q8_0, qs);
        const uint8_t *aq1 = act1 + offsetof(anvil_block_q8_0, qs);
        pair_acc s = { vdupq_n_s32(0), vdupq_n_s32(0) };
        for (int c = 0; c < 4; ++c) {
            pair_chunk(&s, neon_ld_s8(qs + 32 * c), neon_ld_s8(qs + 32 * c + 16), aq0 + 8 * c, aq1 + 8 * c);
        }
        const float32x4_t dw = ld_f32x4(grp);
        const float da0 = neon_half(act0 + offsetof(anvil_block_q8_0, d));
        const float da1 = neon_half(act1 + offsetof(anvil_block_q8_0, d));
        sum0 = vaddq_f32(sum0, vmulq_f32(vcvtq_f32_s32(vuzp1q_s32(s.r01, s.r23)), vmulq_n_f32(dw, da0)));
        sum1 = vaddq_f32(sum1, vmulq_f32(vcvtq_f32_s32(vuzp2q_s32(s.r01, s.r23)), vmulq_n_f32(dw, da1)));
    }
    *out0 = sum0;
    *out1 = sum1;
}
#endif

void NEON_FN(anvil_neon_gemm_packed_q8_0)(size_t n, size_t nrows, size_t r0, size_t r1, size_t m, float *y,
                                          size_t y_stride, const void *packed, const void *a, size_t a_stride) {
    const size_t nb = n / 32;
    const size_t group_bytes = nb * NEON_PK_Q8_0_BLOCK;
    if (r1 > nrows) {
        r1 = nrows;
    }
    for (size_t g = r0 / ROWS; g * ROWS < r1; ++g) {
        const uint8_t *grp = (const uint8_t *)packed + g * group_bytes;
        size_t i = 0;
#if NEON_VARIANT == 2
        for (; i + 1 < m; i += 2) {
            float32x4_t v0, v1;
            q8_0_group_two(grp, nb, (const uint8_t *)a + i * a_stride, (const uint8_t *)a + (i + 1) * a_stride, &v0,
                           &v1);
            store_rows(y + i * y_stride, g * ROWS, r0, r1, v0);
            store_rows(y + (i + 1) * y_stride, g * ROWS, r0, r1, v1);
        }
#endif
        for (; i < m; ++i) {
            const float32x4_t v = q8_0_group_one(grp, nb, (const uint8_t *)a + i * a_stride);
            store_rows(y + i * y_stride, g * ROWS, r0, r1, v);
        }
    }
}

/* ---- Q4_K ------------------------------------------------------------------- */

/* The per-row sub-block scales (or mins) of sub-block j, widened. */
static inline int32x4_t bytes4(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    const uint16x4_t w = vget_low_u16(vmovl_u8(vreinterpret_u8_u32(vdup_n_u32(v))));
    return vreinterpretq_s32_u32(vmovl_u16(w));
}

/* Min term of the four rows: sum_j mn[j][r] * (bsums[2j] + bsums[2j+1]). */
static inline int32x4_t q4_K_summs(const uint8_t *blk, const uint8_t *act) {
    const uint8_t *bs = act + offsetof(anvil_block_q8_K, bsums);
    const int16x8_t b0 = neon_ld_s16x8(bs), b1 = neon_ld_s16x8(bs + 16);
    int32_t pairs[8];
    vst1q_s32(pairs, vpaddlq_s16(b0));
    vst1q_s32(pairs + 4, vpaddlq_s16(b1));
    int32x4_t s = vdupq_n_s32(0);
    for (int j = 0; j < 8; ++j) {
        s = vmlaq_n_s32(s, bytes4(blk + NEON_PK_Q4_K_MN + 4 * j), pairs[j]);
    }
    return s;
}

/* vec_dot's float step per lane: sumf += d * isum - dmin * summs, with
 * d = dx * yd and dmin = dminx * yd. */
static inline float32x4_t q4_K_float(float32x4_t sumf, const uint8_t *blk, const uint8_t *act, int32x4_t isum,
                                     int32x4_t summs) {
    const float yd = anvil_rd_f32(act + offsetof(anvil_block_q8_K, d));
    const float32x4_t d = vmulq_n_f32(ld_f32x4(blk), yd);
    const float32x4_t dmin = vmulq_n_f32(ld_f32x4(blk + NEON_PK_Q4_K_DMIN), yd);
    const float32x4_t t = vsubq_f32(vmulq_f32(d, vcvtq_f32_s32(isum)), vmulq_f32(dmin, vcvtq_f32_s32(summs)));
    return vaddq_f32(sumf, t);
}

static float32x4_t q4_K_group_one(const uint8_t *grp, size_t nb, const uint8_t *act) {
    float32x4_t sumf = vdupq_n_f32(0.0f);
    const uint8x16_t low = vdupq_n_u8(0x0F);
    for (size_t b = 0; b < nb; ++b, grp += NEON_PK_Q4_K_BLOCK, act += sizeof(anvil_block_q8_K)) {
        const uint8_t *q8 = act + offsetof(anvil_block_q8_K, qs);
        int32x4_t isum = vdupq_n_s32(0);
        for (int p = 0; p < 4; ++p) {
            const uint8_t *qs = grp + NEON_PK_Q4_K_QS + 128 * p;
            row_acc lo, hi;
            acc_zero(&lo);
            acc_zero(&hi);
            for (int c = 0; c < 4; ++c) {
                const uint8x16_t w01 = vld1q_u8(qs + 32 * c), w23 = vld1q_u8(qs + 32 * c + 16);
                acc_chunk(&lo, vreinterpretq_s8_u8(vandq_u8(w01, low)), vreinterpretq_s8_u8(vandq_u8(w23, low)),
                          q8 + 64 * p + 8 * c);
                acc_chunk(&hi, vreinterpretq_s8_u8(vshrq_n_u8(w01, 4)), vreinterpretq_s8_u8(vshrq_n_u8(w23, 4)),
                          q8 + 64 * p + 32 + 8 * c);
            }
            isum = vmlaq_s32(isum, rows4(&lo), bytes4(grp + NEON_PK_Q4_K_SC + 4 * (2 * p)));
            isum = vmlaq_s32(isum, rows4(&hi), bytes4(grp + NEON_PK_Q4_K_SC + 4 * (2 * p + 1)));
        }
        sumf = q4_K_float(sumf, grp, act, isum, q4_K_summs(grp, act));
    }
    return sumf;
}

#if NEON_VARIANT == 2
static void q4_K_group_two(const uint8_t *grp, size_t nb, const uint8_t *act0, const uint8_t *act1, float32x4_t *out0,
                           float32x4_t *out1) {
    float32x4_t sum0 = vdupq_n_f32(0.0f), sum1 = vdupq_n_f32(0.0f);
    const uint8x16_t low = vdupq_n_u8(0x0F);
    for (size_t b = 0; b < nb;
         ++b, grp += NEON_PK_Q4_K_BLOCK, act0 += sizeof(anvil_block_q8_K), act1 += sizeof(anvil_block_q8_K)) {
        const uint8_t *q80 = act0 + offsetof(anvil_block_q8_K, qs);
        const uint8_t *q81 = act1 + offsetof(anvil_block_q8_K, qs);
        int32x4_t isum0 = vdupq_n_s32(0), isum1 = vdupq_n_s32(0);
        for (int p = 0; p < 4; ++p) {
            const uint8_t *qs = grp + NEON_PK_Q4_K_QS + 128 * p;
            pair_acc lo = { vdupq_n_s32(0), vdupq_n_s32(0) }, hi = { vdupq_n_s32(0), vdupq_n_s32(0) };
            for (int c = 0; c < 4; ++c) {
                const uint8x16_t w01 = vld1q_u8(qs + 32 * c), w23 = vld1q_u8(qs + 32 * c + 16);
                const size_t off = (size_t)(64 * p + 8 * c);
                pair_chunk(&lo, vreinterpretq_s8_u8(vandq_u8(w01, low)), vreinterpretq_s8_u8(vandq_u8(w23, low)),
                           q80 + off, q81 + off);
                pair_chunk(&hi, vreinterpretq_s8_u8(vshrq_n_u8(w01, 4)), vreinterpretq_s8_u8(vshrq_n_u8(w23, 4)),
                           q80 + off + 32, q81 + off + 32);
            }
            const int32x4_t sc_lo = bytes4(grp + NEON_PK_Q4_K_SC + 4 * (2 * p));
            const int32x4_t sc_hi = bytes4(grp + NEON_PK_Q4_K_SC + 4 * (2 * p + 1));
            isum0 = vmlaq_s32(isum0, vuzp1q_s32(lo.r01, lo.r23), sc_lo);
            isum0 = vmlaq_s32(isum0, vuzp1q_s32(hi.r01, hi.r23), sc_hi);
            isum1 = vmlaq_s32(isum1, vuzp2q_s32(lo.r01, lo.r23), sc_lo);
            isum1 = vmlaq_s32(isum1, vuzp2q_s32(hi.r01, hi.r23), sc_hi);
        }
        sum0 = q4_K_float(sum0, grp, act0, isum0, q4_K_summs(grp, act0));
        sum1 = q4_K_float(sum1, grp, act1, isum1, q4_K_summs(grp, act1));
    }
    *out0 = sum0;
    *out1 = sum1;
}
#endif

void NEON_FN(anvil_neon_gemm_packed_q4_K)(size_t n, size_t nrows, size_t r0, size_t r1, size_t m, float *y,
                                          size_t y_stride, const void *packed, const void *a, size_t a_stride) {
    const size_t nb = n / ANVIL_QK_K;
    const size_t group_bytes = nb * NEON_PK_Q4_K_BLOCK;
    if (r1 > nrows) {
        r1 = nrows;
    }
    for (size_t g = r0 / ROWS; g * ROWS < r1; ++g) {
        const uint8_t *grp = (const uint8_t *)packed + g * group_bytes;
        size_t i = 0;
#if NEON_VARIANT == 2
        for (; i + 1 < m; i += 2) {
            float32x4_t v0, v1;
            q4_K_group_two(grp, nb, (const uint8_t *)a + i * a_stride, (const uint8_t *)a + (i + 1) * a_stride, &v0,
                           &v1);
            store_rows(y + i * y_stride, g * ROWS, r0, r1, v0);
            store_rows(y + (i + 1) * y_stride, g * ROWS, r0, r1, v1);
        }
#endif
        for (; i < m; ++i) {
            const float32x4_t v = q4_K_group_one(grp, nb, (const uint8_t *)a + i * a_stride);
            store_rows(y + i * y_stride, g * ROWS, r0, r1, v);
        }
    }
}
