/* SPDX-License-Identifier: MIT */
/* backend-neon: PTQTP row decoders (one copy): y = t0 * d0, y = y + t1 * d1
 * (+ t2 * d2) in binary32, as the reference (codec-ptqtp), bit for bit. */
#include "neon_kernels.h"
#include "neon_ptqtp.h"

static inline void decode(const void *src, float *dst, size_t n, const int K) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / ANVIL_PTQTP_BLOCK; ++i, b += ANVIL_PTQTP_BLOCK_BYTES(K), dst += ANVIL_PTQTP_BLOCK) {
        int8x16_t t[3][16];
        float32x4_t d[3];
        for (int k = 0; k < K; ++k) {
            int8x16_t s[16];
            ptqtp_states(b + k * ANVIL_PTQTP_PLANE_BYTES, s);
            for (int v = 0; v < 16; ++v) t[k][v] = vsubq_s8(ptqtp_minus(s[v]), ptqtp_plus(s[v])); /* -1, 0, +1 */
            d[k] = vdupq_n_f32(neon_half(b + ANVIL_PTQTP_SCALE_OFFSET(K, k)));
        }
        for (int v = 0; v < 16; ++v) {
            for (int q = 0; q < 4; ++q) {
                float32x4_t y = vdupq_n_f32(0.0f);
                for (int k = 0; k < K; ++k) {
                    const int16x8_t h = q < 2 ? vmovl_s8(vget_low_s8(t[k][v])) : vmovl_high_s8(t[k][v]);
                    const int32x4_t w = (q & 1) ? vmovl_high_s16(h) : vmovl_s16(vget_low_s16(h));
                    const float32x4_t tk = vmulq_f32(vcvtq_f32_s32(w), d[k]);
                    y = k == 0 ? tk : vaddq_f32(y, tk);
                }
                vst1q_f32(dst + 16 * v + 4 * q, y);
            }
        }
    }
}

void anvil_neon_decode_ptqtp2(const void *src, float *dst, size_t n) { decode(src, dst, n, 2); }
void anvil_neon_decode_ptqtp3(const void *src, float *dst, size_t n) { decode(src, dst, n, 3); }
