/* SPDX-License-Identifier: MIT */
/* backend-neon: the packed-RHS layouts of Q8_0 and Q4_K (shared by
 * neon_pack.c, which builds them, and neon_gemm_packed.c, which reads them).
 *
 * Rows are packed in groups of four (ANVIL_NEON_PACK_ROWS); the last group
 * of a matrix whose row count is not a multiple of four is padded with
 * all-zero rows, whose results are computed and never stored. Within a
 * group, block b of the four rows is stored together:
 *
 *   Q8_0, 144 bytes per block:
 *     float d[4]                    the rows' scales, fp16 widened (exact)
 *     int8  qs[4 chunks][4 rows][8] chunk c = elements 8c..8c+7
 *
 *   Q4_K, 608 bytes per super-block:
 *     float d[4], dmin[4]           fp16 widened (exact)
 *     uint8 sc[8][4], mn[8][4]      the 6-bit sub-block scales and mins,
 *                                   unpacked, [sub-block][row]
 *     uint8 qs[4 pairs][4 chunks][4 rows][8]
 *                                   the 32 nibble bytes of sub-block pair p
 *                                   (low nibble: sub-block 2p, high: 2p+1),
 *                                   chunk c = bytes 8c..8c+7
 *
 * Eight-byte chunks of two rows side by side (16 bytes) are what one
 * sdot (two rows against the same 8 activations, duplicated), two smull
 * (one per row) or one smmla (two rows against two activation rows) take. */
#ifndef ANVIL_BACKEND_NEON_PACKED_H
#define ANVIL_BACKEND_NEON_PACKED_H

#include <stddef.h>

#define NEON_PK_Q8_0_BLOCK 144u
#define NEON_PK_Q8_0_QS 16u

#define NEON_PK_Q4_K_BLOCK 608u
#define NEON_PK_Q4_K_DMIN 16u
#define NEON_PK_Q4_K_SC 32u
#define NEON_PK_Q4_K_MN 64u
#define NEON_PK_Q4_K_QS 96u

#endif
