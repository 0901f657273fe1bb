/* SPDX-License-Identifier: MIT */
/* backend-neon: PTQTP-S row decoders (ptqtp2s, ptqtp3s; one copy):
 * y = (float)(m * v) * d in binary32, m v exact in int16 (|m v| <= 208),
 * one rounding, as the reference (codec-ptqtp's ptqtps.c), bit for bit. */
#include "neon_kernels.h"
#include "neon_ptqtp.h"

static inline void decode(const void *src, float *dst, size_t n, const int K) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / ANVIL_PTQTP_BLOCK; ++i, b += ANVIL_PTQTPS_BLOCK_BYTES(K), dst += ANVIL_PTQTP_BLOCK) {
        int8x16_t L[16];
        ptqtps_levels(b, K, L);
        uint8_t m[16];
        vst1q_u8(m, ptqtps_mults(b, K));
        const float32x4_t d = vdupq_n_f32(ptqtps_scale(b, K));
        for (int v = 0; v < 16; ++v) {
            const int16x8_t lo = vmulq_n_s16(vmovl_s8(vget_low_s8(L[v])), (int16_t)m[v]);
            const int16x8_t hi = vmulq_n_s16(vmovl_high_s8(L[v]), (int16_t)m[v]);
            float *y = dst + 16 * v;
            vst1q_f32(y, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))), d));
            vst1q_f32(y + 4, vmulq_f32(vcvtq_f32_s32(vmovl_high_s16(lo)), d));
            vst1q_f32(y + 8, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))), d));
            vst1q_f32(y + 12, vmulq_f32(vcvtq_f32_s32(vmovl_high_s16(hi)), d));
        }
    }
}

void anvil_neon_decode_ptqtp2s(const void *src, float *dst, size_t n) { decode(src, dst, n, 2); }
void anvil_neon_decode_ptqtp3s(const void *src, float *dst, size_t n) { decode(src, dst, n, 3); }
