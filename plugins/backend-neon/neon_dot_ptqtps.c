/* SPDX-License-Identifier: MIT */
/* backend-neon: PTQTP-S (ptqtp2s, ptqtp3s: anvil/formats/ptqtps.h) against
 * Q8_K. Compiled once per variant: the sub-block dots are sdot in the
 * dotprod copy, smull + sadalp in the plain one (neon_dot16).
 *
 * Per block: the K planes combine into one int8 level vector per 16-weight
 * sub-block (neon_ptqtp.h), its dot with the 16 activation codes is one
 * int32x4 (|L q| <= 13 * 128, at most 16 of them: exact), four sub-blocks'
 * lanes fold into one int32x4 of sub-block sums by pairwise adds, and those
 * are weighted by the sub-blocks' multipliers (<= 16) and added: the exact
 * int32 s of the reference (|s| < 2^23). Float part, the reference's
 * (codec-ptqtp's ptqtps.c): sum = sum + ((float)s * d) * d_a, blocks in
 * order, so the results are the reference's to the bit.
 *
 * The GEMM unpacks a weight row's planes once for every activation row
 * (the unpacking, K x 16 vectors of compares and multiply-adds, is most of
 * a block's work; the dot itself is 16 sdot), with the same per-output
 * float steps as vec_dot. No GEMV: with one activation row there is
 * nothing to share, and the host's loop over vec_dot is the same work. */
#include "neon_kernels.h"
#include "neon_ptqtp.h"

#define Q8K_D offsetof(anvil_block_q8_K, d)
#define Q8K_QS offsetof(anvil_block_q8_K, qs)

/* A block's levels and multipliers, ready for any number of dots. */
typedef struct block_prep {
    int8x16_t L[16]; /* sub-block v's levels */
    int32x4_t m[4];  /* multipliers of sub-blocks 4 g .. 4 g + 3 */
    float d;         /* block scale |h| */
} block_prep;

static inline void block_prepare(const uint8_t *w, const int K, block_prep *p) {
    ptqtps_levels(w, K, p->L);
    const uint8x16_t m = ptqtps_mults(w, K);
    const uint16x8_t lo = vmovl_u8(vget_low_u8(m)), hi = vmovl_high_u8(m);
    p->m[0] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(lo)));
    p->m[1] = vreinterpretq_s32_u32(vmovl_high_u16(lo));
    p->m[2] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(hi)));
    p->m[3] = vreinterpretq_s32_u32(vmovl_high_u16(hi));
    p->d = ptqtps_scale(w, K);
}

/* The block's exact int32 s against one Q8_K block's codes. */
static inline int32_t block_dot(const block_prep *p, const uint8_t *q8) {
    const int32x4_t zero = vdupq_n_s32(0);
    int32x4_t acc = zero;
    for (int g = 0; g < 4; ++g) {
        int32x4_t d[4];
        for (int i = 0; i < 4; ++i) d[i] = neon_dot16(zero, p->L[4 * g + i], neon_ld_s8(q8 + 16 * (4 * g + i)));
        const int32x4_t sums = vpaddq_s32(vpaddq_s32(d[0], d[1]), vpaddq_s32(d[2], d[3])); /* sub-block sums */
        acc = vmlaq_s32(acc, sums, p->m[g]);
    }
    return vaddvq_s32(acc);
}

/* The reference's float step for one block. */
static inline float block_step(float sum, const block_prep *p, const uint8_t *a) {
    return sum + ((float)block_dot(p, a + Q8K_QS) * p->d) * anvil_rd_f32(a + Q8K_D);
}

static inline void vec_dot(size_t n, float *s, const uint8_t *w, const uint8_t *a, const int K) {
    float sum = 0.0f;
    for (size_t b = 0; b < n / ANVIL_PTQTP_BLOCK;
         ++b, w += ANVIL_PTQTPS_BLOCK_BYTES(K), a += sizeof(anvil_block_q8_K)) {
        block_prep p;
        block_prepare(w, K, &p);
        sum = block_step(sum, &p, a);
    }
    *s = sum;
}

/* GEMM: the trit planes of a weight row are unpacked once per CHUNK blocks
 * and dotted with every activation row; y holds each output's running sum
 * between chunks, so every output is vec_dot's, bit for bit (blocks in
 * order, the same float steps). */
#define CHUNK 8 /* blocks prepared at a time: 8 x 336 bytes on the stack */

static inline void gemm(size_t n, size_t nrows, size_t m, float *y, size_t y_stride, const uint8_t *w,
                        size_t w_stride, const uint8_t *a, size_t a_stride, const int K) {
    const size_t nb = n / ANVIL_PTQTP_BLOCK, bb = ANVIL_PTQTPS_BLOCK_BYTES(K), ab = sizeof(anvil_block_q8_K);
    for (size_t r = 0; r < nrows; ++r) {
        const uint8_t *row = w + r * w_stride;
        for (size_t i = 0; i < m; ++i) y[i * y_stride + r] = 0.0f;
        for (size_t c0 = 0; c0 < nb; c0 += CHUNK) {
            const size_t cn = nb - c0 < CHUNK ? nb - c0 : CHUNK;
            block_prep p[CHUNK];
            for (size_t b = 0; b < cn; ++b) block_prepare(row + (c0 + b) * bb, K, &p[b]);
            for (size_t i = 0; i < m; ++i) {
                const uint8_t *ai = a + i * a_stride + c0 * ab;
                float sum = y[i * y_stride + r];
                for (size_t b = 0; b < cn; ++b) sum = block_step(sum, &p[b], ai + b * ab);
                y[i * y_stride + r] = sum;
            }
        }
    }
}

void NEON_FN(anvil_neon_vec_dot_ptqtp2s_q8_K)(size_t n, float *s, const void *w, const void *a) {
    vec_dot(n, s, w, a, 2);
}
void NEON_FN(anvil_neon_vec_dot_ptqtp3s_q8_K)(size_t n, float *s, const void *w, const void *a) {
    vec_dot(n, s, w, a, 3);
}
void NEON_FN(anvil_neon_gemm_ptqtp2s_q8_K)(size_t n, size_t nrows, size_t m, float *y, size_t y_stride, const void *w,
                                           size_t w_stride, const void *a, size_t a_stride) {
    gemm(n, nrows, m, y, y_stride, w, w_stride, a, a_stride, 2);
}
void NEON_FN(anvil_neon_gemm_ptqtp3s_q8_K)(size_t n, size_t nrows, size_t m, float *y, size_t y_stride, const void *w,
                                           size_t w_stride, const void *a, size_t a_stride) {
    gemm(n, nrows, m, y, y_stride, w, w_stride, a, a_stride, 3);
}
