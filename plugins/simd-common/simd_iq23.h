/* SPDX-License-Identifier: MIT */
/* The IQ2/IQ3 lattice formats (IQ2_XXS, IQ3_XXS, IQ2_XS, IQ2_S, IQ3_S) as
 * the x86 backends' dot kernels read them: per 32-element sub-block, the
 * lattice magnitudes as four 8-byte words (element order), the 32 sign
 * bits (bit j set: element j is negated) and the two int16 sub-scales
 * (elements 0..15, 16..31). Header only, no intrinsics: scalar loads from
 * the codebooks the scalar referee decodes with (ref/cold_tables.h, one
 * copy), so the kernels build a vector from whole 8-byte words instead of
 * a gather.
 *
 * Contract: for every block byte pattern, sum_j mag_j * a_j * sign_j per
 * 16-element half, times that half's scale, summed over a super-block, is
 * the integer `bsum` of plugins/ref/cold_grid.c's anvil_ref_vec_dot_<t>_q8_K
 * (every field masked to its width, as there, so no byte pattern reads
 * outside a table). The kernels then do the reference's float steps:
 * sumf += (fp16(d) * a.d) * (float)bsum per super-block, and
 * SIMD_IQ23_FINAL_<T> * sumf at the end.
 *
 * Bounds: magnitudes <= 62, |a| <= 127 (Q8_K), so a vpmaddubsw pair is
 * <= 2 * 62 * 127 = 15748 (no saturation); scales <= 31 and a super-block
 * sum <= 256 * 62 * 127 * 31 < 2^31.
 */
#ifndef ANVIL_SIMD_IQ23_H
#define ANVIL_SIMD_IQ23_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "anvil/blocks.h"
#include "ref/bytes.h"
#include "ref/cold_tables.h"
#include "simd_row_passes.h"

typedef struct simd_iq23_sub {
    uint64_t g[4];   /* magnitudes of elements 8l .. 8l + 7 in g[l], byte j = element 8l + j */
    uint32_t signs;  /* bit j: element j negated */
    uint32_t scales; /* int16 scale of elements 0..15 (low), 16..31 (high) */
} simd_iq23_sub;

#define SIMD_IQ23_FINAL_IQ2_XXS 0.125f
#define SIMD_IQ23_FINAL_IQ2_XS 0.125f
#define SIMD_IQ23_FINAL_IQ2_S 0.125f
#define SIMD_IQ23_FINAL_IQ3_XXS 0.25f
#define SIMD_IQ23_FINAL_IQ3_S 1.0f

#define SIMD_IQ23_Q8K_D 0
#define SIMD_IQ23_Q8K_QS 4
#define SIMD_IQ23_Q8K_BYTES 292

SIMD_INLINE uint64_t simd_iq23_word8(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Two 4-byte IQ3 lattice points as one word (first in the low half). */
SIMD_INLINE uint64_t simd_iq23_word4x2(const uint8_t *p, const uint8_t *q) {
    uint32_t lo, hi;
    memcpy(&lo, p, sizeof lo);
    memcpy(&hi, q, sizeof hi);
    return (uint64_t)lo | (uint64_t)hi << 32;
}

/* Four 7-bit sign indices (bits 0..27 of meta) through ksigns. */
SIMD_INLINE uint32_t simd_iq23_ksigns4(uint32_t meta) {
    return (uint32_t)anvil_cold_ksigns[meta & 127] | (uint32_t)anvil_cold_ksigns[(meta >> 7) & 127] << 8 |
           (uint32_t)anvil_cold_ksigns[(meta >> 14) & 127] << 16 |
           (uint32_t)anvil_cold_ksigns[(meta >> 21) & 127] << 24;
}

SIMD_INLINE uint32_t simd_iq23_scale2(uint32_t lo, uint32_t hi) { return lo | hi << 16; }

/* The magnitudes alone (simd_iq23_sub.g), per format. */
SIMD_INLINE void simd_iq23_grid_iq2_xxs(const uint8_t *blk, int ib, uint64_t g[4]) {
    const uint8_t *q = blk + offsetof(anvil_block_iq2_xxs, qs) + 8 * ib;
    for (int l = 0; l < 4; ++l) g[l] = simd_iq23_word8(anvil_cold_iq2xxs_grid[q[l]]);
}

SIMD_INLINE void simd_iq23_grid_iq3_xxs(const uint8_t *blk, int ib, uint64_t g[4]) {
    const uint8_t *q = blk + offsetof(anvil_block_iq3_xxs, qs) + 8 * ib;
    for (int l = 0; l < 4; ++l) {
        g[l] = simd_iq23_word4x2(anvil_cold_iq3xxs_grid[q[2 * l]], anvil_cold_iq3xxs_grid[q[2 * l + 1]]);
    }
}

SIMD_INLINE void simd_iq23_grid_iq2_xs(const uint8_t *blk, int ib, uint64_t g[4]) {
    const uint8_t *q = blk + offsetof(anvil_block_iq2_xs, qs) + 8 * ib;
    for (int l = 0; l < 4; ++l) g[l] = simd_iq23_word8(anvil_cold_iq2xs_grid[anvil_rd_u16(q + 2 * l) & 511]);
}

SIMD_INLINE void simd_iq23_grid_iq2_s(const uint8_t *blk, int ib, uint64_t g[4]) {
    const uint8_t *q = blk + offsetof(anvil_block_iq2_s, qs) + 4 * ib;
    const uint32_t qh = blk[offsetof(anvil_block_iq2_s, qh) + ib];
    for (int l = 0; l < 4; ++l) {
        g[l] = simd_iq23_word8(anvil_cold_iq2s_grid[q[l] | ((qh << (8 - 2 * l)) & 0x300)]);
    }
}

SIMD_INLINE void simd_iq23_grid_iq3_s(const uint8_t *blk, int ib, uint64_t g[4]) {
    const uint8_t *q = blk + offsetof(anvil_block_iq3_s, qs) + 8 * ib;
    const uint32_t qh = blk[offsetof(anvil_block_iq3_s, qh) + ib];
    for (int l = 0; l < 4; ++l) {
        const int k = 2 * l;
        g[l] = simd_iq23_word4x2(anvil_cold_iq3s_grid[q[k] | ((qh << (8 - k)) & 256)],
                                 anvil_cold_iq3s_grid[q[k + 1] | ((qh << (7 - k)) & 256)]);
    }
}

/* IQ2_S and IQ3_S from their lattice indices, precomputed (idx[4 ib + l],
 * resp. idx[8 ib + k]; each below the table size). */
SIMD_INLINE void simd_iq23_grid_iq2_s_idx(const uint16_t *idx, int ib, uint64_t g[4]) {
    for (int l = 0; l < 4; ++l) g[l] = simd_iq23_word8(anvil_cold_iq2s_grid[idx[4 * ib + l] & 1023]);
}

SIMD_INLINE void simd_iq23_grid_iq3_s_idx(const uint16_t *idx, int ib, uint64_t g[4]) {
    for (int l = 0; l < 4; ++l) {
        g[l] = simd_iq23_word4x2(anvil_cold_iq3s_grid[idx[8 * ib + 2 * l] & 511],
                                 anvil_cold_iq3s_grid[idx[8 * ib + 2 * l + 1] & 511]);
    }
}

/* IQ2_XXS: qs[8 ib .. 8 ib + 3] lattice indices, then u32 meta: four
 * 7-bit sign indices, 4-bit s (scale 2 s + 1). */
SIMD_INLINE void simd_iq23_iq2_xxs(const uint8_t *blk, int ib, simd_iq23_sub *u) {
    const uint8_t *q = blk + offsetof(anvil_block_iq2_xxs, qs) + 8 * ib;
    const uint32_t meta = anvil_rd_u32(q + 4);
    simd_iq23_grid_iq2_xxs(blk, ib, u->g);
    u->signs = simd_iq23_ksigns4(meta);
    const uint32_t ls = 2 * (meta >> 28) + 1;
    u->scales = simd_iq23_scale2(ls, ls);
}

/* IQ3_XXS: qs[8 ib .. 8 ib + 7] lattice indices (4 elements each), the
 * sub-block's u32 meta after the 64 index bytes. */
SIMD_INLINE void simd_iq23_iq3_xxs(const uint8_t *blk, int ib, simd_iq23_sub *u) {
    const uint32_t meta = anvil_rd_u32(blk + offsetof(anvil_block_iq3_xxs, qs) + ANVIL_QK_K / 4 + 4 * ib);
    simd_iq23_grid_iq3_xxs(blk, ib, u->g);
    u->signs = simd_iq23_ksigns4(meta);
    const uint32_t ls = 2 * (meta >> 28) + 1;
    u->scales = simd_iq23_scale2(ls, ls);
}

/* IQ2_XS: u16 per 8 elements, 9-bit index | 7-bit sign index << 9; a byte
 * of two 4-bit sub-scales per sub-block. */
SIMD_INLINE void simd_iq23_iq2_xs(const uint8_t *blk, int ib, simd_iq23_sub *u) {
    const uint8_t *q = blk + offsetof(anvil_block_iq2_xs, qs) + 8 * ib;
    uint32_t signs = 0;
    simd_iq23_grid_iq2_xs(blk, ib, u->g);
    for (int l = 0; l < 4; ++l) signs |= (uint32_t)anvil_cold_ksigns[anvil_rd_u16(q + 2 * l) >> 9] << (8 * l);
    u->signs = signs;
    const uint32_t sc = blk[offsetof(anvil_block_iq2_xs, scales) + ib];
    u->scales = simd_iq23_scale2(2 * (sc & 15) + 1, 2 * (sc >> 4) + 1);
}

/* IQ2_S: 10-bit index (qs byte | 2 bits of qh[ib] << 8), raw sign bytes
 * after the 32 index bytes, two 4-bit sub-scales. */
SIMD_INLINE void simd_iq23_iq2_s(const uint8_t *blk, int ib, simd_iq23_sub *u) {
    const uint8_t *q = blk + offsetof(anvil_block_iq2_s, qs) + 4 * ib;
    simd_iq23_grid_iq2_s(blk, ib, u->g);
    u->signs = anvil_rd_u32(q + ANVIL_QK_K / 8);
    const uint32_t sc = blk[offsetof(anvil_block_iq2_s, scales) + ib];
    u->scales = simd_iq23_scale2(2 * (sc & 15) + 1, 2 * (sc >> 4) + 1);
}

/* IQ3_S: 9-bit index (qs byte | bit k of qh[ib] << 8) per 4 elements, raw
 * sign bytes, a 4-bit sub-scale s per sub-block (scale 2 s + 1). */
SIMD_INLINE void simd_iq23_iq3_s(const uint8_t *blk, int ib, simd_iq23_sub *u) {
    simd_iq23_grid_iq3_s(blk, ib, u->g);
    u->signs = anvil_rd_u32(blk + offsetof(anvil_block_iq3_s, signs) + 4 * ib);
    const uint32_t ls = 2 * ((blk[offsetof(anvil_block_iq3_s, scales) + ib / 2] >> (4 * (ib % 2))) & 15) + 1;
    u->scales = simd_iq23_scale2(ls, ls);
}

#endif
