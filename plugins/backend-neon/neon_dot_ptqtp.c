/* SPDX-License-Identifier: MIT */
/* backend-neon: PTQTP trit planes (ptqtp2, ptqtp3) against Q8_K. Compiled
 * once per variant; the code is the same in each (no multiply to speed up).
 *
 * Multiplication-free: per plane and 16 activation codes, the codes under
 * the +1 mask minus the codes under the -1 mask (exact in int8: Q8_K codes
 * lie in [-127, 127] and a trit is never both), widened by a pairwise add
 * (sadalp) into int16 (at most 16 * 2 * 127 = 4064 per lane and block).
 * Float part, the reference's (codec-ptqtp's ptqtp_planes.c):
 * acc = s0 * d0; acc = acc + s1 * d1 (+ s2 * d2); sum = sum + acc * da,
 * so the results are the reference's to the bit. */
#include "neon_kernels.h"
#include "neon_ptqtp.h"

#define Q8K_D offsetof(anvil_block_q8_K, d)
#define Q8K_QS offsetof(anvil_block_q8_K, qs)

static inline int plane_dot(const uint8_t *p, const uint8_t *q8) {
    int8x16_t s[16];
    ptqtp_states(p, s);
    int16x8_t acc = vdupq_n_s16(0);
    for (int v = 0; v < 16; ++v) {
        const int8x16_t act = neon_ld_s8(q8 + 16 * v);
        const int8x16_t x = vsubq_s8(vandq_s8(act, ptqtp_plus(s[v])), vandq_s8(act, ptqtp_minus(s[v])));
        acc = vpadalq_s8(acc, x);
    }
    return vaddlvq_s16(acc);
}

static inline void vec_dot(size_t n, float *s, const uint8_t *w, const uint8_t *a, const int K) {
    float sum = 0.0f;
    for (size_t b = 0; b < n / ANVIL_PTQTP_BLOCK;
         ++b, w += ANVIL_PTQTP_BLOCK_BYTES(K), a += sizeof(anvil_block_q8_K)) {
        float acc = (float)plane_dot(w, a + Q8K_QS) * neon_half(w + ANVIL_PTQTP_SCALE_OFFSET(K, 0));
        for (int k = 1; k < K; ++k) {
            const float d = neon_half(w + ANVIL_PTQTP_SCALE_OFFSET(K, k));
            acc = acc + (float)plane_dot(w + k * ANVIL_PTQTP_PLANE_BYTES, a + Q8K_QS) * d;
        }
        sum = sum + acc * anvil_rd_f32(a + Q8K_D);
    }
    *s = sum;
}

void NEON_FN(anvil_neon_vec_dot_ptqtp2_q8_K)(size_t n, float *s, const void *w, const void *a) {
    vec_dot(n, s, w, a, 2);
}
void NEON_FN(anvil_neon_vec_dot_ptqtp3_q8_K)(size_t n, float *s, const void *w, const void *a) {
    vec_dot(n, s, w, a, 3);
}
