/* SPDX-License-Identifier: MIT */
/*
 * The lattice i-quants: IQ1_S IQ1_M IQ2_XXS IQ2_XS IQ2_S IQ3_XXS IQ3_S.
 * Decoders and Q8_K dots; no encoders (see cold.h).
 *
 * Each 256-element super-block has one binary16 scale and, per 32 elements,
 * a small odd sub-scale. Elements come in groups of 8 (IQ1, IQ2) or 4 (IQ3)
 * that name one point of a fixed lattice (cold_tables.h) plus sign bits.
 *
 * Arithmetic follows ggml's scalar code operation for operation: the decoded
 * value is (scale expression) * lattice value, then its sign applied, and
 * the dots accumulate integers per sub-block and rescale once per
 * super-block. Changing an association here changes results in the last bit.
 */
#include "ref/cold.h"

#include "ref/cold_impl.h"

#define QK ANVIL_QK_K

/* ---- IQ2_XXS: 2.06 bpw --------------------------------------------------
 * Per 32 elements, 8 bytes: four 8-bit lattice indices, then a u32 holding
 * four 7-bit sign indices (bits 0..27) and a 4-bit sub-scale s (28..31):
 * scale = d * (0.5 + s) / 4. */

#define IQ2XXS_D offsetof(anvil_block_iq2_xxs, d)
#define IQ2XXS_QS offsetof(anvil_block_iq2_xxs, qs)

void anvil_ref_decode_iq2_xxs(const void *src, float *y, size_t n) {
    const uint8_t *blk = src;
    for (size_t i = 0; i < n / QK; ++i, blk += sizeof(anvil_block_iq2_xxs)) {
        const float d = anvil_rd_half(blk + IQ2XXS_D);
        for (int ib = 0; ib < QK / 32; ++ib) {
            const uint8_t *q = blk + IQ2XXS_QS + 8 * ib;
            const uint32_t meta = anvil_rd_u32(q + 4);
            const float db = d * (0.5f + (float)(meta >> 28)) * 0.25f;
            for (int l = 0; l < 4; ++l, y += 8) {
                const uint8_t *g = anvil_cold_iq2xxs_grid[q[l]];
                const uint8_t signs = anvil_cold_ksigns[(meta >> (7 * l)) & 127];
                for (int j = 0; j < 8; ++j) {
                    y[j] = cold_apply_sign(db * (float)g[j], signs, j);
                }
            }
        }
    }
}

void anvil_ref_vec_dot_iq2_xxs_q8_K(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *blk = w;
    const uint8_t *act = a;
    float sumf = 0.0f;
    for (size_t i = 0; i < n / QK; ++i, blk += sizeof(anvil_block_iq2_xxs), act += sizeof(anvil_block_q8_K)) {
        const float d = anvil_rd_half(blk + IQ2XXS_D) * anvil_rd_f32(act + COLD_Q8K_D);
        const int8_t *q8 = (const int8_t *)(act + COLD_Q8K_QS);
        int32_t bsum = 0;
        for (int ib = 0; ib < QK / 32; ++ib) {
            const uint8_t *q = blk + IQ2XXS_QS + 8 * ib;
            const uint32_t meta = anvil_rd_u32(q + 4);
            const int32_t ls = 2 * (int32_t)(meta >> 28) + 1;
            int32_t sumi = 0;
            for (int l = 0; l < 4; ++l, q8 += 8) {
                const uint8_t *g = anvil_cold_iq2xxs_grid[q[l]];
                const uint8_t signs = anvil_cold_ksigns[(meta >> (7 * l)) & 127];
                for (int j = 0; j < 8; ++j) {
                    sumi += g[j] * q8[j] * cold_sign_i(signs, j);
                }
            }
            bsum += sumi * ls;
        }
        sumf += d * (float)bsum;
    }
    /* The lattice values are 8x the real ones (the /8 of the decoder). */
    *s = 0.125f * sumf;
}

/* ---- IQ2_XS: 2.31 bpw ---------------------------------------------------
 * Per 8 elements a u16: 9-bit lattice index | 7-bit sign index << 9. Per 32
 * elements a byte of two 4-bit sub-scales (first and second 16). */

#define IQ2XS_D offsetof(anvil_block_iq2_xs, d)
#define IQ2XS_QS offsetof(anvil_block_iq2_xs, qs)
#define IQ2XS_SCALES offsetof(anvil_block_iq2_xs, scales)

void anvil_ref_decode_iq2_xs(const void *src, float *y, size_t n) {
    const uint8_t *blk = src;
    for (size_t i = 0; i < n / QK; ++i, blk += sizeof(anvil_block_iq2_xs)) {
        const float d = anvil_rd_half(blk + IQ2XS_D);
        for (int ib = 0; ib < QK / 32; ++ib) {
            const uint8_t sc = blk[IQ2XS_SCALES + ib];
            float db[2];
            db[0] = d * (0.5f + (float)(sc & 0xf)) * 0.25f;
            db[1] = d * (0.5f + (float)(sc >> 4)) * 0.25f;
            for (int l = 0; l < 4; ++l, y += 8) {
                const uint16_t v = anvil_rd_u16(blk + IQ2XS_QS + 2 * (4 * ib + l));
                const uint8_t *g = anvil_cold_iq2xs_grid[v & 511];
                const uint8_t signs = anvil_cold_ksigns[v >> 9];
                for (int j = 0; j < 8; ++j) {
                    y[j] = cold_apply_sign(db[l / 2] * (float)g[j], signs, j);
                }
            }
        }
    }
}

void anvil_ref_vec_dot_iq2_xs_q8_K(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *blk = w;
    const uint8_t *act = a;
    float sumf = 0.0f;
    for (size_t i = 0; i < n / QK; ++i, blk += sizeof(anvil_block_iq2_xs), act += sizeof(anvil_block_q8_K)) {
        const float d = anvil_rd_half(blk + IQ2XS_D) * anvil_rd_f32(act + COLD_Q8K_D);
        const int8_t *q8 = (const int8_t *)(act + COLD_Q8K_QS);
        int32_t bsum = 0;
        for (int ib = 0; ib < QK / 32; ++ib) {
            const uint8_t sc = blk[IQ2XS_SCALES + ib];
            const int32_t ls[2] = { 2 * (sc & 0xf) + 1, 2 * (sc >> 4) + 1 };
            for (int half = 0; half < 2; ++half) {
                int32_t sumi = 0;
                for (int l = 2 * half; l < 2 * half + 2; ++l, q8 += 8) {
                    const uint16_t v = anvil_rd_u16(blk + IQ2XS_QS + 2 * (4 * ib + l));
                    const uint8_t *g = anvil_cold_iq2xs_grid[v & 511];
                    const uint8_t signs = anvil_cold_ksigns[v >> 9];
                    for (int j = 0; j < 8; ++j) {
                        sumi += g[j] * q8[j] * cold_sign_i(signs, j);
                    }
                }
                bsum += sumi * ls[half];
            }
        }
        sumf += d * (float)bsum;
    }
    *s = 0.125f * sumf;
}

/* ---- IQ2_S: 2.56 bpw ----------------------------------------------------
 * 10-bit lattice index: a byte of qs plus 2 bits of qh[ib32] (bits 2l, 2l+1
 * for group l); raw sign bytes (no parity trick) after the 32 index bytes;
 * two 4-bit sub-scales per 32 elements. */

#define IQ2S_D offsetof(anvil_block_iq2_s, d)
#define IQ2S_QS offsetof(anvil_block_iq2_s, qs)
#define IQ2S_SIGNS (offsetof(anvil_block_iq2_s, qs) + QK / 8)
#define IQ2S_QH offsetof(anvil_block_iq2_s, qh)
#define IQ2S_SCALES offsetof(anvil_block_iq2_s, scales)

static inline int iq2s_index(const uint8_t *blk, int ib, int l) {
    return blk[IQ2S_QS + 4 * ib + l] | ((blk[IQ2S_QH + ib] << (8 - 2 * l)) & 0x300);
}

void anvil_ref_decode_iq2_s(const void *src, float *y, size_t n) {
    const uint8_t *blk = src;
    for (size_t i = 0; i < n / QK; ++i, blk += sizeof(anvil_block_iq2_s)) {
        const float d = anvil_rd_half(blk + IQ2S_D);
        for (int ib = 0; ib < QK / 32; ++ib) {
            const uint8_t sc = blk[IQ2S_SCALES + ib];
            float db[2];
            db[0] = d * (0.5f + (float)(sc & 0xf)) * 0.25f;
            db[1] = d * (0.5f + (float)(sc >> 4)) * 0.25f;
            for (int l = 0; l < 4; ++l, y += 8) {
                const uint8_t *g = anvil_cold_iq2s_grid[iq2s_index(blk, ib, l)];
                const uint8_t signs = blk[IQ2S_SIGNS + 4 * ib + l];
                for (int j = 0; j < 8; ++j) {
                    y[j] = cold_apply_sign(db[l / 2] * (float)g[j], signs, j);
                }
            }
        }
    }
}

void anvil_ref_vec_dot_iq2_s_q8_K(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *blk = w;
    const uint8_t *act = a;
    float sumf = 0.0f;
    for (size_t i = 0; i < n / QK; ++i, blk += sizeof(anvil_block_iq2_s), act += sizeof(anvil_block_q8_K)) {
        const float d = anvil_rd_half(blk + IQ2S_D) * anvil_rd_f32(act + COLD_Q8K_D);
        const int8_t *q8 = (const int8_t *)(act + COLD_Q8K_QS);
        int32_t bsum = 0;
        for (int ib = 0; ib < QK / 32; ++ib) {
            const uint8_t sc = blk[IQ2S_SCALES + ib];
            int32_t sumi[2] = { 0, 0 };
            for (int l = 0; l < 4; ++l, q8 += 8) {
                const uint8_t *g = anvil_cold_iq2s_grid[iq2s_index(blk, ib, l)];
                const uint8_t signs = blk[IQ2S_SIGNS + 4 * ib + l];
                for (int j = 0; j < 8; ++j) {
                    sumi[l / 2] += q8[j] * g[j] * cold_sign_i(signs, j);
                }
            }
            bsum += (2 * (sc & 0xf) + 1) * sumi[0] + (2 * (sc >> 4) + 1) * sumi[1];
        }
        sumf += d * (float)bsum;
    }
    *s = 0.125f * sumf;
}

/* ---- IQ3_XXS: 3.06 bpw --------------------------------------------------
 * 64 bytes of 8-bit lattice indices (one per 4 elements), then per 32
 * elements a u32 of four 7-bit sign indices and a 4-bit sub-scale:
 * scale = d * (0.5 + s) / 2. */

#define IQ3XXS_D offsetof(anvil_block_iq3_xxs, d)
#define IQ3XXS_QS offsetof(anvil_block_iq3_xxs, qs)
#define IQ3XXS_META (offsetof(anvil_block_iq3_xxs, qs) + QK / 4)

void anvil_ref_decode_iq3_xxs(const void *src, float *y, size_t n) {
    const uint8_t *blk = src;
    for (size_t i = 0; i < n / QK; ++i, blk += sizeof(anvil_block_iq3_xxs)) {
        const float d = anvil_rd_half(blk + IQ3XXS_D);
        for (int ib = 0; ib < QK / 32; ++ib) {
            const uint8_t *q = blk + IQ3XXS_QS + 8 * ib;
            const uint32_t meta = anvil_rd_u32(blk + IQ3XXS_META + 4 * ib);
            const float db = d * (0.5f + (float)(meta >> 28)) * 0.5f;
            for (int l = 0; l < 4; ++l, y += 8) {
                const uint8_t signs = anvil_cold_ksigns[(meta >> (7 * l)) & 127];
                const uint8_t *g1 = anvil_cold_iq3xxs_grid[q[2 * l + 0]];
                const uint8_t *g2 = anvil_cold_iq3xxs_grid[q[2 * l + 1]];
                for (int j = 0; j < 4; ++j) {
                    y[j + 0] = cold_apply_sign(db * (float)g1[j], signs, j + 0);
                    y[j + 4] = cold_apply_sign(db * (float)g2[j], signs, j + 4);
                }
            }
        }
    }
}

void anvil_ref_vec_dot_iq3_xxs_q8_K(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *blk = w;
    const uint8_t *act = a;
    float sumf = 0.0f;
    for (size_t i = 0; i < n / QK; ++i, blk += sizeof(anvil_block_iq3_xxs), act += sizeof(anvil_block_q8_K)) {
        const float d = anvil_rd_half(blk + IQ3XXS_D) * anvil_rd_f32(act + COLD_Q8K_D);
        const int8_t *q8 = (const int8_t *)(act + COLD_Q8K_QS);
        int32_t bsum = 0;
        for (int ib = 0; ib < QK / 32; ++ib) {
            const uint8_t *q = blk + IQ3XXS_QS + 8 * ib;
            const uint32_t meta = anvil_rd_u32(blk + IQ3XXS_META + 4 * ib);
            const int32_t ls = 2 * (int32_t)(meta >> 28) + 1;
            int32_t sumi = 0;
            for (int l = 0; l < 4; ++l, q8 += 8) {
                const uint8_t signs = anvil_cold_ksigns[(meta >> (7 * l)) & 127];
                const uint8_t *g1 = anvil_cold_iq3xxs_grid[q[2 * l + 0]];
                const uint8_t *g2 = anvil_cold_iq3xxs_grid[q[2 * l + 1]];
                for (int j = 0; j < 4; ++j) {
                    sumi += g1[j] * q8[j + 0] * cold_sign_i(signs, j + 0);
                    sumi += g2[j] * q8[j + 4] * cold_sign_i(signs, j + 4);
                }
            }
            bsum += sumi * ls;
        }
        sumf += d * (float)bsum;
    }
    *s = 0.25f * sumf;
}

/* ---- IQ3_S: 3.44 bpw ----------------------------------------------------
 * 9-bit lattice index: a byte of qs plus one bit of qh[ib32] (bit k for the
 * k-th group of 4 in that 32); raw sign bytes; a 4-bit sub-scale per 32:
 * scale = d * (1 + 2s). */

#define IQ3S_D offsetof(anvil_block_iq3_s, d)
#define IQ3S_QS offsetof(anvil_block_iq3_s, qs)
#define IQ3S_QH offsetof(anvil_block_iq3_s, qh)
#define IQ3S_SIGNS offsetof(anvil_block_iq3_s, signs)
#define IQ3S_SCALES offsetof(anvil_block_iq3_s, scales)

static inline int iq3s_index(const uint8_t *blk, int ib, int k) {
    return blk[IQ3S_QS + 8 * ib + k] | ((blk[IQ3S_QH + ib] << (8 - k)) & 256);
}

static inline int iq3s_sub_scale(const uint8_t *blk, int ib) {
    return 1 + 2 * ((blk[IQ3S_SCALES + ib / 2] >> (4 * (ib % 2))) & 0xf);
}

void anvil_ref_decode_iq3_s(const void *src, float *y, size_t n) {
    const uint8_t *blk = src;
    for (size_t i = 0; i < n / QK; ++i, blk += sizeof(anvil_block_iq3_s)) {
        const float d = anvil_rd_half(blk + IQ3S_D);
        for (int ib = 0; ib < QK / 32; ++ib) {
            const float db = d * (float)iq3s_sub_scale(blk, ib);
            for (int l = 0; l < 4; ++l, y += 8) {
                const uint8_t *g1 = anvil_cold_iq3s_grid[iq3s_index(blk, ib, 2 * l + 0)];
                const uint8_t *g2 = anvil_cold_iq3s_grid[iq3s_index(blk, ib, 2 * l + 1)];
                const uint8_t signs = blk[IQ3S_SIGNS + 4 * ib + l];
                for (int j = 0; j < 4; ++j) {
                    y[j + 0] = cold_apply_sign(db * (float)g1[j], signs, j + 0);
                    y[j + 4] = cold_apply_sign(db * (float)g2[j], signs, j + 4);
                }
            }
        }
    }
}

void anvil_ref_vec_dot_iq3_s_q8_K(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *blk = w;
    const uint8_t *act = a;
    float sumf = 0.0f;
    for (size_t i = 0; i < n / QK; ++i, blk += sizeof(anvil_block_iq3_s), act += sizeof(anvil_block_q8_K)) {
        const float d = anvil_rd_half(blk + IQ3S_D) * anvil_rd_f32(act + COLD_Q8K_D);
        const int8_t *q8 = (const int8_t *)(act + COLD_Q8K_QS);
        int32_t bsum = 0;
        for (int ib = 0; ib < QK / 32; ++ib) {
            int32_t sumi = 0;
            for (int l = 0; l < 4; ++l, q8 += 8) {
                const uint8_t *g1 = anvil_cold_iq3s_grid[iq3s_index(blk, ib, 2 * l + 0)];
                const uint8_t *g2 = anvil_cold_iq3s_grid[iq3s_index(blk, ib, 2 * l + 1)];
                const uint8_t signs = blk[IQ3S_SIGNS + 4 * ib + l];
                for (int j = 0; j < 4; ++j) {
                    sumi += g1[j] * q8[j + 0] * cold_sign_i(signs, j + 0);
                    sumi += g2[j] * q8[j + 4] * cold_sign_i(signs, j + 4);
                }
            }
            bsum += sumi * iq3s_sub_scale(blk, ib);
        }
        sumf += d * (float)bsum;
    }
    *s = sumf;
}

/* ---- IQ1_S: 1.56 bpw ----------------------------------------------------
 * 11-bit lattice index: a byte of qs plus 3 bits of qh[ib32] (bits 3l..3l+2);
 * qh bits 12..14 are the sub-scale s (scale = d * (2s + 1)), bit 15 the sign
 * of the delta added to all 32 values. */

#define IQ1S_D offsetof(anvil_block_iq1_s, d)
#define IQ1S_QS offsetof(anvil_block_iq1_s, qs)
#define IQ1S_QH offsetof(anvil_block_iq1_s, qh)

void anvil_ref_decode_iq1_s(const void *src, float *y, size_t n) {
    const uint8_t *blk = src;
    for (size_t i = 0; i < n / QK; ++i, blk += sizeof(anvil_block_iq1_s)) {
        const float d = anvil_rd_half(blk + IQ1S_D);
        for (int ib = 0; ib < QK / 32; ++ib) {
            const uint16_t h = anvil_rd_u16(blk + IQ1S_QH + 2 * ib);
            const float dl = d * (float)(2 * ((h >> 12) & 7) + 1);
            const float delta = (h & 0x8000) ? -anvil_cold_iq1s_delta : anvil_cold_iq1s_delta;
            for (int l = 0; l < 4; ++l, y += 8) {
                const int8_t *g = anvil_cold_iq1s_grid[blk[IQ1S_QS + 4 * ib + l] | (((h >> (3 * l)) & 7) << 8)];
                for (int j = 0; j < 8; ++j) {
                    y[j] = dl * ((float)g[j] + delta);
                }
            }
        }
    }
}

void anvil_ref_vec_dot_iq1_s_q8_K(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *blk = w;
    const uint8_t *act = a;
    float sumf = 0.0f;
    for (size_t i = 0; i < n / QK; ++i, blk += sizeof(anvil_block_iq1_s), act += sizeof(anvil_block_q8_K)) {
        const int8_t *q8 = (const int8_t *)(act + COLD_Q8K_QS);
        /* sumi: the lattice part; sumi1: the delta part, which only needs
         * the activation's 16-element sums (bsums). */
        int32_t sumi = 0, sumi1 = 0;
        for (int ib = 0; ib < QK / 32; ++ib) {
            const uint16_t h = anvil_rd_u16(blk + IQ1S_QH + 2 * ib);
            const int32_t ls = 2 * ((h >> 12) & 7) + 1;
            const int32_t delta = (h & 0x8000) ? -1 : 1;
            int32_t lsum = 0;
            for (int l = 0; l < 4; ++l, q8 += 8) {
                const int8_t *g = anvil_cold_iq1s_grid[blk[IQ1S_QS + 4 * ib + l] | (((h >> (3 * l)) & 7) << 8)];
                for (int j = 0; j < 8; ++j) {
                    lsum += q8[j] * g[j];
                }
            }
            sumi += ls * lsum;
            sumi1 += ls * delta *
                     (anvil_rd_i16(act + COLD_Q8K_BSUMS + 2 * (2 * ib)) +
                      anvil_rd_i16(act + COLD_Q8K_BSUMS + 2 * (2 * ib + 1)));
        }
        sumf += anvil_rd_half(blk + IQ1S_D) * anvil_rd_f32(act + COLD_Q8K_D) *
                ((float)sumi + anvil_cold_iq1s_delta * (float)sumi1);
    }
    *s = sumf;
}

/* ---- IQ1_M: 1.75 bpw ----------------------------------------------------
 * No block-level d field: the binary16 scale is spread over the top nibbles
 * of the four u16 scale words (nibble k in word k). The rest of each word
 * holds 3-bit sub-scales, two per 32 elements (one per 16). Per 8 elements
 * a byte of qs plus a nibble of qh: 3 index bits and the delta's sign. */

#define IQ1M_QS offsetof(anvil_block_iq1_m, qs)
#define IQ1M_QH offsetof(anvil_block_iq1_m, qh)
#define IQ1M_SCALES offsetof(anvil_block_iq1_m, scales)

static inline void iq1m_scales(const uint8_t *blk, uint16_t sc[4], float *d) {
    for (int k = 0; k < 4; ++k) {
        sc[k] = anvil_rd_u16(blk + IQ1M_SCALES + 2 * k);
    }
    const uint16_t h =
        (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
    *d = anvil_fp16_to_fp32(h);
}

/* Group l (0..3) of 32-element sub-block ib: its qh nibble. */
static inline int iq1m_nibble(const uint8_t *blk, int ib, int l) {
    return (blk[IQ1M_QH + 2 * ib + l / 2] >> (4 * (l % 2))) & 0xf;
}

void anvil_ref_decode_iq1_m(const void *src, float *y, size_t n) {
    const uint8_t *blk = src;
    for (size_t i = 0; i < n / QK; ++i, blk += sizeof(anvil_block_iq1_m)) {
        uint16_t sc[4];
        float d;
        iq1m_scales(blk, sc, &d);
        for (int ib = 0; ib < QK / 32; ++ib) {
            const int sub = sc[ib / 2] >> (6 * (ib % 2));
            const float dl[2] = { d * (float)(2 * (sub & 7) + 1), d * (float)(2 * ((sub >> 3) & 7) + 1) };
            for (int l = 0; l < 4; ++l, y += 8) {
                const int nib = iq1m_nibble(blk, ib, l);
                const int8_t *g = anvil_cold_iq1s_grid[blk[IQ1M_QS + 4 * ib + l] | ((nib & 7) << 8)];
                const float delta = (nib & 8) ? -anvil_cold_iq1m_delta : anvil_cold_iq1m_delta;
                for (int j = 0; j < 8; ++j) {
                    y[j] = dl[l / 2] * ((float)g[j] + delta);
                }
            }
        }
    }
}

void anvil_ref_vec_dot_iq1_m_q8_K(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *blk = w;
    const uint8_t *act = a;
    float sumf = 0.0f;
    for (size_t i = 0; i < n / QK; ++i, blk += sizeof(anvil_block_iq1_m), act += sizeof(anvil_block_q8_K)) {
        uint16_t sc[4];
        float d;
        iq1m_scales(blk, sc, &d);
        const int8_t *q8 = (const int8_t *)(act + COLD_Q8K_QS);
        int32_t sumi1 = 0, sumi2 = 0; /* lattice part, delta part */
        for (int ib = 0; ib < QK / 32; ++ib) {
            int32_t lat[2] = { 0, 0 }, del[2] = { 0, 0 };
            for (int l = 0; l < 4; ++l, q8 += 8) {
                const int nib = iq1m_nibble(blk, ib, l);
                const int8_t *g = anvil_cold_iq1s_grid[blk[IQ1M_QS + 4 * ib + l] | ((nib & 7) << 8)];
                int32_t lsum1 = 0, lsum2 = 0;
                for (int j = 0; j < 8; ++j) {
                    lsum1 += q8[j] * g[j];
                    lsum2 += q8[j];
                }
                lat[l / 2] += lsum1;
                del[l / 2] += lsum2 * ((nib & 8) ? -1 : 1);
            }
            const int sub = sc[ib / 2] >> (6 * (ib % 2));
            const int32_t ls1 = 2 * (sub & 7) + 1;
            const int32_t ls2 = 2 * ((sub >> 3) & 7) + 1;
            sumi1 += lat[0] * ls1 + lat[1] * ls2;
            sumi2 += del[0] * ls1 + del[1] * ls2;
        }
        sumf += d * anvil_rd_f32(act + COLD_Q8K_D) * ((float)sumi1 + anvil_cold_iq1m_delta * (float)sumi2);
    }
    *s = sumf;
}
