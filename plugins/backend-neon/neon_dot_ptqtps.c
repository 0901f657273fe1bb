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
 * order, so the results are the reference's to the bit. */
#include "neon_kernels.h"
#include "neon_ptqtp.h"

#define Q8K_D offsetof(anvil_block_q8_K, d)
#define Q8K_QS offsetof(anvil_block_q8_K, qs)

/* The multipliers of sub-blocks 4 g .. 4 g + 3 as int32 lanes. */
static inline int32x4_t mults_of_group(uint8x16_t m, int g) {
    const uint16x8_t h = g < 2 ? vmovl_u8(vget_low_u8(m)) : vmovl_high_u8(m);
    return vreinterpretq_s32_u32((g & 1) ? vmovl_high_u16(h) : vmovl_u16(vget_low_u16(h)));
}

static inline int32_t block_dot(const uint8_t *w, const uint8_t *q8, const int K) {
    int8x16_t L[16];
    ptqtps_levels(w, K, L);
    const uint8x16_t m = ptqtps_mults(w, K);
    const int32x4_t zero = vdupq_n_s32(0);
    int32x4_t acc = zero;
    for (int g = 0; g < 4; ++g) {
        int32x4_t d[4];
        for (int i = 0; i < 4; ++i) d[i] = neon_dot16(zero, L[4 * g + i], neon_ld_s8(q8 + 16 * (4 * g + i)));
        const int32x4_t sums = vpaddq_s32(vpaddq_s32(d[0], d[1]), vpaddq_s32(d[2], d[3])); /* sub-block sums */
        acc = vmlaq_s32(acc, sums, mults_of_group(m, g));
    }
    return vaddvq_s32(acc);
}

static inline void vec_dot(size_t n, float *s, const uint8_t *w, const uint8_t *a, const int K) {
    float sum = 0.0f;
    for (size_t b = 0; b < n / ANVIL_PTQTP_BLOCK;
         ++b, w += ANVIL_PTQTPS_BLOCK_BYTES(K), a += sizeof(anvil_block_q8_K)) {
        const int32_t isum = block_dot(w, a + Q8K_QS, K);
        sum = sum + ((float)isum * ptqtps_scale(w, K)) * anvil_rd_f32(a + Q8K_D);
    }
    *s = sum;
}

void NEON_FN(anvil_neon_vec_dot_ptqtp2s_q8_K)(size_t n, float *s, const void *w, const void *a) {
    vec_dot(n, s, w, a, 2);
}
void NEON_FN(anvil_neon_vec_dot_ptqtp3s_q8_K)(size_t n, float *s, const void *w, const void *a) {
    vec_dot(n, s, w, a, 3);
}
