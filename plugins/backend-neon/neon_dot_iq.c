/* SPDX-License-Identifier: MIT */
/* backend-neon: the lattice i-quants against Q8_K (IQ2_XXS, IQ2_XS, IQ2_S,
 * IQ3_XXS, IQ3_S, IQ1_S, IQ1_M): vec_dot, gemv and gemm (neon_rows.h),
 * compiled once per variant. Rows decode through the referee's decoders
 * (plugins/ref/cold_grid.c); the lattice tables are the referee's
 * (ref/cold_tables.h, read through simd-common simd_iq23.h), one copy.
 *
 * Per 32-element sub-block of one row:
 *  - magnitudes: the lattice points, whole 8-byte words (IQ2: one point,
 *    IQ3: two 4-byte points; simd_iq23.h), two words per q register;
 *    IQ1: the signed 8-byte points of the IQ1 grid directly;
 *  - signs: IQ2_XXS, IQ3_XXS, IQ2_XS (7-bit sign indices): per 8
 *    elements one 8-byte word of +1/-1 bytes from a table built here
 *    (sign7: the index with its parity as bit 7, the referee's ksigns),
 *    multiplied into the magnitudes; IQ2_S, IQ3_S (raw sign bytes): by
 *    vector, (g ^ m) - m with m = 0xFF where the bit is set. |g| <= 62, so
 *    the signed weight fits int8; the activations (may be -128) are never
 *    negated;
 *  - the int8 dot (sdot, or smull + sadalp on plain ARMv8.0: neon_util.h)
 *    into int32 lanes, times the sub-scale of each 16 or 32 elements
 *    (mla by a scalar), summed: the referee's bsum = sum ls * sumi,
 *    exact in any grouping (bounds in simd_iq23.h).
 * IQ1_S's delta part comes from the activations' bsums, as the referee's;
 * IQ1_M's is the dot of the activations with the delta's +1/-1 per 8
 * elements (tbl, cmtst, orr from the qh bytes), its lattice indices built
 * 16 at a time by vector as IQ2_S's. Per super-block each row then takes the referee's float steps
 * in its order: sumf += (fp16(d) * a.d) * (float)bsum (IQ1: the lattice
 * and delta parts combined as there), times the format's final factor.
 * A pass runs its rows one at a time (the row loop is not unrolled): with
 * 8 rows unrolled gcc 12 interleaved them and spilled, IQ2_XXS 2,942
 * instructions per 8 row-blocks with 317 stack stores; one at a time, 265
 * per row-block, nothing spilled (dotprod, -O3).
 */
#include "neon_kernels.h"
#include "neon_rows.h"
#include "ref/cold_tables.h"
#include "simd_iq23.h"

#define Q8K_D offsetof(anvil_block_q8_K, d)
#define Q8K_QS offsetof(anvil_block_q8_K, qs)
#define Q8K_BSUMS offsetof(anvil_block_q8_K, bsums)
#define Q8K_BYTES sizeof(anvil_block_q8_K)

/* ---- sign words ------------------------------------------------------------------
 * NEON_S8(x): byte j = -1 where bit j of x is set, else +1 (little-endian
 * word: byte j is element j). sign7[x] = NEON_S8(x | parity(x) << 7) for
 * x < 128 (the referee's ksigns[x]). Format
 * constants: a wrong entry fails tests/neon's bit-exact check. The raw
 * sign bytes of IQ2_S and IQ3_S are applied by vector instead (below). */
#define NEON_SB(bit, j) ((bit) ? 0xFFULL << (8 * (j)) : 0x01ULL << (8 * (j)))
#define NEON_S8(x)                                                                                        \
    (NEON_SB((x)&1, 0) | NEON_SB((x) >> 1 & 1, 1) | NEON_SB((x) >> 2 & 1, 2) | NEON_SB((x) >> 3 & 1, 3) | \
     NEON_SB((x) >> 4 & 1, 4) | NEON_SB((x) >> 5 & 1, 5) | NEON_SB((x) >> 6 & 1, 6) | NEON_SB((x) >> 7 & 1, 7))
#define NEON_PAR7(x) (((x) ^ (x) >> 1 ^ (x) >> 2 ^ (x) >> 3 ^ (x) >> 4 ^ (x) >> 5 ^ (x) >> 6) & 1)
#define NEON_S7(x) NEON_S8((x) | NEON_PAR7(x) << 7)
#define NEON_X4(M, x) M(x), M((x) + 1), M((x) + 2), M((x) + 3)
#define NEON_X16(M, x) NEON_X4(M, x), NEON_X4(M, (x) + 4), NEON_X4(M, (x) + 8), NEON_X4(M, (x) + 12)
#define NEON_X64(M, x) NEON_X16(M, x), NEON_X16(M, (x) + 16), NEON_X16(M, (x) + 32), NEON_X16(M, (x) + 48)

static const uint64_t sign7[128] = { NEON_X64(NEON_S7, 0), NEON_X64(NEON_S7, 64) };

/* Two 8-byte words as one q register (first in the low half). */
SIMD_INLINE int8x16_t iq_pair(uint64_t lo, uint64_t hi) {
    return vreinterpretq_s8_u64(vcombine_u64(vcreate_u64(lo), vcreate_u64(hi)));
}

/* The signed weights of a sub-block: magnitudes g[0..3] times sign words. */
SIMD_INLINE void iq_signed(const uint64_t g[4], uint64_t s0, uint64_t s1, uint64_t s2, uint64_t s3, int8x16_t *w0,
                           int8x16_t *w1) {
    *w0 = vmulq_s8(iq_pair(g[0], g[1]), iq_pair(s0, s1));
    *w1 = vmulq_s8(iq_pair(g[2], g[3]), iq_pair(s2, s3));
}

/* acc + the sub-block's dot times one scale (32 elements). */
SIMD_INLINE int32x4_t iq_acc32(int32x4_t acc, int8x16_t w0, int8x16_t w1, const uint8_t *q8, int32_t ls) {
    return vmlaq_n_s32(acc, neon_dot32(vdupq_n_s32(0), w0, neon_ld_s8(q8), w1, neon_ld_s8(q8 + 16)), ls);
}

/* acc + the sub-block's dot, each 16 elements times its own scale. */
SIMD_INLINE int32x4_t iq_acc16(int32x4_t acc, int8x16_t w0, int8x16_t w1, const uint8_t *q8, int32_t ls0,
                               int32_t ls1) {
    acc = vmlaq_n_s32(acc, neon_dot16(vdupq_n_s32(0), w0, neon_ld_s8(q8)), ls0);
    return vmlaq_n_s32(acc, neon_dot16(vdupq_n_s32(0), w1, neon_ld_s8(q8 + 16)), ls1);
}

/* ---- the integer bsum of one super-block, per format ------------------------------ */

SIMD_INLINE int32_t iq2_xxs_bsum(const uint8_t *blk, const uint8_t *q8) {
    int32x4_t acc = vdupq_n_s32(0);
#pragma GCC unroll 8
    for (int ib = 0; ib < 8; ++ib) {
        const uint32_t aux = anvil_rd_u32(blk + offsetof(anvil_block_iq2_xxs, qs) + 8 * ib + 4);
        uint64_t g[4];
        int8x16_t w0, w1;
        simd_iq23_grid_iq2_xxs(blk, ib, g);
        iq_signed(g, sign7[aux & 127], sign7[(aux >> 7) & 127], sign7[(aux >> 14) & 127], sign7[(aux >> 21) & 127],
                  &w0, &w1);
        acc = iq_acc32(acc, w0, w1, q8 + 32 * ib, (int32_t)(2 * (aux >> 28) + 1));
    }
    return vaddvq_s32(acc);
}

SIMD_INLINE int32_t iq3_xxs_bsum(const uint8_t *blk, const uint8_t *q8) {
    int32x4_t acc = vdupq_n_s32(0);
#pragma GCC unroll 8
    for (int ib = 0; ib < 8; ++ib) {
        const uint32_t aux = anvil_rd_u32(blk + offsetof(anvil_block_iq3_xxs, qs) + ANVIL_QK_K / 4 + 4 * ib);
        uint64_t g[4];
        int8x16_t w0, w1;
        simd_iq23_grid_iq3_xxs(blk, ib, g);
        iq_signed(g, sign7[aux & 127], sign7[(aux >> 7) & 127], sign7[(aux >> 14) & 127], sign7[(aux >> 21) & 127],
                  &w0, &w1);
        acc = iq_acc32(acc, w0, w1, q8 + 32 * ib, (int32_t)(2 * (aux >> 28) + 1));
    }
    return vaddvq_s32(acc);
}

SIMD_INLINE int32_t iq2_xs_bsum(const uint8_t *blk, const uint8_t *q8) {
    int32x4_t acc = vdupq_n_s32(0);
#pragma GCC unroll 8
    for (int ib = 0; ib < 8; ++ib) {
        const uint8_t *q = blk + offsetof(anvil_block_iq2_xs, qs) + 8 * ib;
        const uint32_t sc = blk[offsetof(anvil_block_iq2_xs, scales) + ib];
        uint64_t g[4];
        int8x16_t w0, w1;
        simd_iq23_grid_iq2_xs(blk, ib, g);
        iq_signed(g, sign7[anvil_rd_u16(q) >> 9], sign7[anvil_rd_u16(q + 2) >> 9], sign7[anvil_rd_u16(q + 4) >> 9],
                  sign7[anvil_rd_u16(q + 6) >> 9], &w0, &w1);
        acc = iq_acc16(acc, w0, w1, q8 + 32 * ib, (int32_t)(2 * (sc & 15) + 1), (int32_t)(2 * (sc >> 4) + 1));
    }
    return vaddvq_s32(acc);
}

/* ---- IQ2_S, IQ3_S: indices and raw sign bits by vector ---------------------------------
 * The 9/10-bit lattice indices of a whole super-block are built 16 at a
 * time (qs bytes zipped with their qh bits as the high byte) into a stack
 * array the codebook loads read; the raw sign bytes of four sub-blocks sit
 * in one q register, spread to bytes (tbl), tested against 1, 2, .., 128
 * (cmtst) and applied as (g ^ m) - m. */

/* Byte j: 1 << (j % 8). */
SIMD_INLINE uint8x16_t iq_bits(void) { return vreinterpretq_u8_u64(vdupq_n_u64(0x8040201008040201ULL)); }

/* Bytes b0 (8 times), b1 (8 times). */
SIMD_INLINE uint8x16_t iq_spread2(uint8_t b0, uint8_t b1) { return vcombine_u8(vdup_n_u8(b0), vdup_n_u8(b1)); }

/* The signed weights of sub-block j (0..3) of the 16 sign bytes sv. */
SIMD_INLINE void iq_raw_signed(uint8x16_t sv, int j, int8x16_t g0, int8x16_t g1, int8x16_t *w0, int8x16_t *w1) {
    const uint8x16_t bit = iq_bits();
    const int8x16_t m0 =
        vreinterpretq_s8_u8(vtstq_u8(vqtbl1q_u8(sv, iq_spread2((uint8_t)(4 * j), (uint8_t)(4 * j + 1))), bit));
    const int8x16_t m1 =
        vreinterpretq_s8_u8(vtstq_u8(vqtbl1q_u8(sv, iq_spread2((uint8_t)(4 * j + 2), (uint8_t)(4 * j + 3))), bit));
    *w0 = vsubq_s8(veorq_s8(g0, m0), m0);
    *w1 = vsubq_s8(veorq_s8(g1, m1), m1);
}

/* IQ2_S: idx[4 ib + l] = qs[4 ib + l] | (qh[ib] >> 2 l & 3) << 8. */
SIMD_INLINE void iq2_s_indices(const uint8_t *blk, uint16_t idx[32]) {
    const uint8x8_t h8 = vld1_u8(blk + offsetof(anvil_block_iq2_s, qh));
    const uint8x16_t h = vcombine_u8(h8, h8);
    static const uint8_t spread[2][16] = { { 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3 },
                                           { 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7 } };
    static const int8_t shift[16] = { 0, -2, -4, -6, 0, -2, -4, -6, 0, -2, -4, -6, 0, -2, -4, -6 };
    for (int j = 0; j < 2; ++j) {
        const uint8x16_t hb = vandq_u8(vshlq_u8(vqtbl1q_u8(h, vld1q_u8(spread[j])), vld1q_s8(shift)), vdupq_n_u8(3));
        const uint8x16_t q = vld1q_u8(blk + offsetof(anvil_block_iq2_s, qs) + 16 * j);
        vst1q_u8((uint8_t *)(idx + 16 * j), vzip1q_u8(q, hb));
        vst1q_u8((uint8_t *)(idx + 16 * j + 8), vzip2q_u8(q, hb));
    }
}

/* IQ3_S: idx[8 ib + k] = qs[8 ib + k] | (qh[ib] >> k & 1) << 8. */
SIMD_INLINE void iq3_s_indices(const uint8_t *blk, uint16_t idx[64]) {
    const uint8x8_t h8 = vld1_u8(blk + offsetof(anvil_block_iq3_s, qh));
    const uint8x16_t h = vcombine_u8(h8, h8);
    for (int j = 0; j < 4; ++j) {
        const uint8x16_t hb =
            vshrq_n_u8(vtstq_u8(vqtbl1q_u8(h, iq_spread2((uint8_t)(2 * j), (uint8_t)(2 * j + 1))), iq_bits()), 7);
        const uint8x16_t q = vld1q_u8(blk + offsetof(anvil_block_iq3_s, qs) + 16 * j);
        vst1q_u8((uint8_t *)(idx + 16 * j), vzip1q_u8(q, hb));
        vst1q_u8((uint8_t *)(idx + 16 * j + 8), vzip2q_u8(q, hb));
    }
}

/* The magnitudes of sub-block ib from the built indices (each below the
 * table size by construction: 10 resp. 9 bits, so no mask). */
SIMD_INLINE void iq2_s_grid(const uint16_t *idx, int ib, uint64_t g[4]) {
    for (int l = 0; l < 4; ++l) g[l] = simd_iq23_word8(anvil_cold_iq2s_grid[idx[4 * ib + l]]);
}

SIMD_INLINE void iq3_s_grid(const uint16_t *idx, int ib, uint64_t g[4]) {
    for (int l = 0; l < 4; ++l) {
        g[l] = simd_iq23_word4x2(anvil_cold_iq3s_grid[idx[8 * ib + 2 * l]],
                                 anvil_cold_iq3s_grid[idx[8 * ib + 2 * l + 1]]);
    }
}

SIMD_INLINE int32_t iq2_s_bsum(const uint8_t *blk, const uint8_t *q8) {
    const uint8_t *signs = blk + offsetof(anvil_block_iq2_s, qs) + ANVIL_QK_K / 8;
    uint16_t idx[32];
    iq2_s_indices(blk, idx);
    int32x4_t acc = vdupq_n_s32(0);
    uint8x16_t sv = vdupq_n_u8(0);
#pragma GCC unroll 8
    for (int ib = 0; ib < 8; ++ib) {
        if (ib % 4 == 0) sv = vld1q_u8(signs + 4 * ib);
        const uint32_t sc = blk[offsetof(anvil_block_iq2_s, scales) + ib];
        uint64_t g[4];
        int8x16_t w0, w1;
        iq2_s_grid(idx, ib, g);
        iq_raw_signed(sv, ib % 4, iq_pair(g[0], g[1]), iq_pair(g[2], g[3]), &w0, &w1);
        acc = iq_acc16(acc, w0, w1, q8 + 32 * ib, (int32_t)(2 * (sc & 15) + 1), (int32_t)(2 * (sc >> 4) + 1));
    }
    return vaddvq_s32(acc);
}

SIMD_INLINE int32_t iq3_s_bsum(const uint8_t *blk, const uint8_t *q8) {
    const uint8_t *signs = blk + offsetof(anvil_block_iq3_s, signs);
    uint16_t idx[64];
    iq3_s_indices(blk, idx);
    int32x4_t acc = vdupq_n_s32(0);
    uint8x16_t sv = vdupq_n_u8(0);
#pragma GCC unroll 8
    for (int ib = 0; ib < 8; ++ib) {
        if (ib % 4 == 0) sv = vld1q_u8(signs + 4 * ib);
        const uint32_t sc = (blk[offsetof(anvil_block_iq3_s, scales) + ib / 2] >> (4 * (ib % 2))) & 15;
        uint64_t g[4];
        int8x16_t w0, w1;
        iq3_s_grid(idx, ib, g);
        iq_raw_signed(sv, ib % 4, iq_pair(g[0], g[1]), iq_pair(g[2], g[3]), &w0, &w1);
        acc = iq_acc32(acc, w0, w1, q8 + 32 * ib, (int32_t)(2 * sc + 1));
    }
    return vaddvq_s32(acc);
}

/* ---- rows: the referee's float steps per row ----------------------------------------
 * acc_r += (fp16(d_r) * a.d) * (float)bsum_r per super-block, then
 * y_r = final * acc_r (the final factor skipped where it is 1). */
#define IQ23_ROWS(fmt, FINAL)                                                                                    \
    SIMD_INLINE void fmt##_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R, \
                                simd_pf *pf) {                                                                   \
        float acc[8] = { 0 };                                                                                    \
        for (size_t b = 0; b < nb; ++b, w += sizeof(anvil_block_##fmt), a += Q8K_BYTES) {                        \
            simd_pf_block(pf, b, sizeof(anvil_block_##fmt), ws, R);                                              \
            const float ad = anvil_rd_f32(a + Q8K_D);                                                            \
            _Pragma("GCC unroll 1") for (int r = 0; r < R; ++r) { /* one row at a time: no spills */             \
                const uint8_t *wr = w + (size_t)r * ws;                                                          \
                const int32_t bsum = fmt##_bsum(wr, a + Q8K_QS);                                                 \
                const float d = neon_half(wr + offsetof(anvil_block_##fmt, d)) * ad;                             \
                acc[r] += d * (float)bsum;                                                                       \
            }                                                                                                    \
        }                                                                                                        \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) y[r] = (FINAL) == 1.0f ? acc[r] : (FINAL)*acc[r];    \
    }                                                                                                            \
    NEON_ROWS_EXPORT(fmt, q8_K, 256, sizeof(anvil_block_##fmt))

IQ23_ROWS(iq2_xxs, SIMD_IQ23_FINAL_IQ2_XXS)
IQ23_ROWS(iq3_xxs, SIMD_IQ23_FINAL_IQ3_XXS)
IQ23_ROWS(iq2_xs, SIMD_IQ23_FINAL_IQ2_XS)
IQ23_ROWS(iq2_s, SIMD_IQ23_FINAL_IQ2_S)
IQ23_ROWS(iq3_s, SIMD_IQ23_FINAL_IQ3_S)

/* ---- IQ1_S, IQ1_M: the signed IQ1 grid, a delta part ---------------------------------- */

/* The 8-byte IQ1 grid point of an 11-bit index, as a word. */
SIMD_INLINE uint64_t iq1_point(uint32_t index) {
    return simd_iq23_word8((const uint8_t *)anvil_cold_iq1s_grid[index]);
}

/* IQ1_S: sumi (lattice part) and sumi1 (delta part from the bsums). */
SIMD_INLINE void iq1_s_sums(const uint8_t *blk, const uint8_t *act, int32_t *sumi, int32_t *sumi1) {
    const uint8_t *qs = blk + offsetof(anvil_block_iq1_s, qs);
    int32x4_t acc = vdupq_n_s32(0);
    int32_t s1 = 0;
#pragma GCC unroll 8
    for (int ib = 0; ib < 8; ++ib) {
        const uint32_t h = anvil_rd_u16(blk + offsetof(anvil_block_iq1_s, qh) + 2 * ib);
        const uint8_t *q = qs + 4 * ib;
        const int8x16_t g0 = iq_pair(iq1_point(q[0] | ((h << 8) & 0x700)), iq1_point(q[1] | ((h << 5) & 0x700)));
        const int8x16_t g1 = iq_pair(iq1_point(q[2] | ((h << 2) & 0x700)), iq1_point(q[3] | ((h >> 1) & 0x700)));
        const int32_t ls = (int32_t)(2 * ((h >> 12) & 7) + 1);
        acc = iq_acc32(acc, g0, g1, act + Q8K_QS + 32 * ib, ls);
        const int32_t bs = anvil_rd_i16(act + Q8K_BSUMS + 4 * ib) + anvil_rd_i16(act + Q8K_BSUMS + 4 * ib + 2);
        s1 += ls * ((h & 0x8000) ? -bs : bs);
    }
    *sumi = vaddvq_s32(acc);
    *sumi1 = s1;
}

SIMD_INLINE void iq1_s_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                            simd_pf *pf) {
    float acc[8] = { 0 };
    for (size_t b = 0; b < nb; ++b, w += sizeof(anvil_block_iq1_s), a += Q8K_BYTES) {
        simd_pf_block(pf, b, sizeof(anvil_block_iq1_s), ws, R);
        const float ad = anvil_rd_f32(a + Q8K_D);
#pragma GCC unroll 1 /* one row at a time: no spills */
        for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + (size_t)r * ws;
            int32_t sumi, sumi1;
            iq1_s_sums(wr, a, &sumi, &sumi1);
            acc[r] += neon_half(wr + offsetof(anvil_block_iq1_s, d)) * ad *
                      ((float)sumi + anvil_cold_iq1s_delta * (float)sumi1);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) y[r] = acc[r];
}

NEON_ROWS_EXPORT(iq1_s, q8_K, 256, sizeof(anvil_block_iq1_s))

/* IQ1_M's 11-bit lattice indices, 16 at a time: idx[4 ib + l] = qs[4 ib + l]
 * | (nibble l of qh[2 ib .. 2 ib + 1] & 7) << 8 (nibble l: byte l / 2, low
 * for even l). */
SIMD_INLINE void iq1_m_indices(const uint8_t *blk, uint16_t idx[32]) {
    const uint8x16_t qh = vld1q_u8(blk + offsetof(anvil_block_iq1_m, qh));
    static const uint8_t spread[2][16] = { { 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7 },
                                           { 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15 } };
    static const int8_t shift[16] = { 0, -4, 0, -4, 0, -4, 0, -4, 0, -4, 0, -4, 0, -4, 0, -4 };
    for (int j = 0; j < 2; ++j) {
        const uint8x16_t hb = vandq_u8(vshlq_u8(vqtbl1q_u8(qh, vld1q_u8(spread[j])), vld1q_s8(shift)), vdupq_n_u8(7));
        const uint8x16_t q = vld1q_u8(blk + offsetof(anvil_block_iq1_m, qs) + 16 * j);
        vst1q_u8((uint8_t *)(idx + 16 * j), vzip1q_u8(q, hb));
        vst1q_u8((uint8_t *)(idx + 16 * j + 8), vzip2q_u8(q, hb));
    }
}

/* +1 / -1 per group of 8 of the 16 elements whose qh byte is byte b of
 * qh: bit 3 for bytes 0..7, bit 7 for bytes 8..15 (set: -1). */
SIMD_INLINE int8x16_t iq1_m_delta(uint8x16_t qh, int b) {
    const uint8x16_t sel = vcombine_u8(vdup_n_u8(8), vdup_n_u8(128));
    const uint8x16_t m = vtstq_u8(vqtbl1q_u8(qh, vdupq_n_u8((uint8_t)b)), sel);
    return vreinterpretq_s8_u8(vorrq_u8(m, vdupq_n_u8(1)));
}

/* IQ1_M: sumi1 (lattice part) and sumi2 (delta part), per 16 elements times
 * their 3-bit sub-scale. */
SIMD_INLINE void iq1_m_sums(const uint8_t *blk, const uint8_t *q8, int32_t *sumi1, int32_t *sumi2) {
    const uint8x16_t qh = vld1q_u8(blk + offsetof(anvil_block_iq1_m, qh));
    uint16_t idx[32];
    iq1_m_indices(blk, idx);
    int32x4_t lat = vdupq_n_s32(0), del = vdupq_n_s32(0);
#pragma GCC unroll 8
    for (int ib = 0; ib < 8; ++ib) {
        const uint16_t *ix = idx + 4 * ib;
        const int8x16_t g0 = iq_pair(iq1_point(ix[0]), iq1_point(ix[1]));
        const int8x16_t g1 = iq_pair(iq1_point(ix[2]), iq1_point(ix[3]));
        const uint32_t sub = (uint32_t)anvil_rd_u16(blk + offsetof(anvil_block_iq1_m, scales) + 2 * (ib / 2)) >>
                             (6 * (ib % 2));
        const int32_t ls1 = (int32_t)(2 * (sub & 7) + 1), ls2 = (int32_t)(2 * ((sub >> 3) & 7) + 1);
        const int8x16_t a0 = neon_ld_s8(q8 + 32 * ib), a1 = neon_ld_s8(q8 + 32 * ib + 16);
        lat = vmlaq_n_s32(lat, neon_dot16(vdupq_n_s32(0), g0, a0), ls1);
        lat = vmlaq_n_s32(lat, neon_dot16(vdupq_n_s32(0), g1, a1), ls2);
        del = vmlaq_n_s32(del, neon_dot16(vdupq_n_s32(0), iq1_m_delta(qh, 2 * ib), a0), ls1);
        del = vmlaq_n_s32(del, neon_dot16(vdupq_n_s32(0), iq1_m_delta(qh, 2 * ib + 1), a1), ls2);
    }
    *sumi1 = vaddvq_s32(lat);
    *sumi2 = vaddvq_s32(del);
}

/* The binary16 scale, spread over the top nibbles of the four scale words. */
SIMD_INLINE float iq1_m_d(const uint8_t *blk) {
    const uint8_t *sc = blk + offsetof(anvil_block_iq1_m, scales);
    const uint32_t s0 = anvil_rd_u16(sc), s1 = anvil_rd_u16(sc + 2), s2 = anvil_rd_u16(sc + 4),
                   s3 = anvil_rd_u16(sc + 6);
    const uint16_t h = (uint16_t)((s0 >> 12) | ((s1 >> 8) & 0x00f0) | ((s2 >> 4) & 0x0f00) | (s3 & 0xf000));
    return anvil_fp16_to_fp32(h);
}

SIMD_INLINE void iq1_m_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                            simd_pf *pf) {
    float acc[8] = { 0 };
    for (size_t b = 0; b < nb; ++b, w += sizeof(anvil_block_iq1_m), a += Q8K_BYTES) {
        simd_pf_block(pf, b, sizeof(anvil_block_iq1_m), ws, R);
        const float ad = anvil_rd_f32(a + Q8K_D);
#pragma GCC unroll 1 /* one row at a time: no spills */
        for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + (size_t)r * ws;
            int32_t sumi1, sumi2;
            iq1_m_sums(wr, a + Q8K_QS, &sumi1, &sumi2);
            acc[r] += iq1_m_d(wr) * ad * ((float)sumi1 + anvil_cold_iq1m_delta * (float)sumi2);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) y[r] = acc[r];
}

NEON_ROWS_EXPORT(iq1_m, q8_K, 256, sizeof(anvil_block_iq1_m))
