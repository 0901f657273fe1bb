/* SPDX-License-Identifier: MIT */
/*
 * anvil SDK — a published third-party format: PTQTP-S, trit planes with
 * sub-block scales (the revision of anvil/formats/ptqtp.h that issue 29
 * asked for; the old ptqtp2/ptqtp3 layouts there are unchanged and still
 * decode). Ids reserved forever, layout frozen, as for every header here.
 *
 * A block of 256 weights keeps K ternary planes packed exactly as ptqtp's
 * (five trits a byte, TQ1_0's base-3 fractions: see ptqtp.h for the byte
 * and element order of a plane), but the planes no longer carry a free
 * scale each. Their ratio is fixed at 3, so the K trits of a weight are the
 * balanced-ternary digits of one integer level
 *
 *     v[i] = 3 t[0][i] + t[1][i]                 K = 2: v in -4..4   (9 levels)
 *     v[i] = 9 t[0][i] + 3 t[1][i] + t[2][i]     K = 3: v in -13..13 (27 levels)
 *
 * and the scale moves to 16-weight sub-blocks: sub-block j (elements 16 j
 * .. 16 j + 15) has a 2-bit code c[j] naming its multiplier in one of two
 * tables, chosen per block by the sign bit of the binary16 block scale h:
 *
 *     sign 0 (narrow): m = {10, 12, 14, 16}[c]     sign 1 (wide): m = {1, 3, 7, 16}[c]
 *     d = the value of h with its sign bit cleared (|h|, so d >= 0 or NaN)
 *
 * A weight decodes, in binary32, as
 *
 *     y[i] = (float)(m[i / 16] * v[i]) * d        (one rounding: m v is exact)
 *
 * Block (K = 2 or 3):
 *
 *     uint8_t    planes[K][52]   plane k's 256 trits, ptqtp's plane packing
 *     uint8_t    sc[4]           sub-block 4b + i's code in bits 2i..2i+1 of sc[b]
 *     anvil_half h               block scale |h| and, in its sign bit, the table
 *
 *     ptqtp2s: 110 bytes = 3.4375 bits/weight (q3_K's size exactly)
 *     ptqtp3s: 162 bytes = 5.0625 bits/weight (ptqtp3's size)
 *
 * Any byte decodes (a trit byte >= 243 yields digits as the carries say),
 * any scale too.
 *
 * The reference dot against Q8_K (d_a its f32 scale, q its codes) is one
 * exact integer per block:
 *
 *     for each block: s = sum_j m[j] * sum_{i in sub-block j} v[i] * q[i]   (int32, exact)
 *                     sum = sum + ((float)s * d) * d_a      (blocks in order, binary32)
 *
 * (|s| <= 256 * 13 * 128 * 16 < 2^23.) Per weight it still needs no
 * multiplication: v q is a sum of +-q over the planes, weighted 3^k per
 * plane and sub-block. A kernel may differ from the reference only by the
 * float accumulation order across blocks (see anvil/backend.h).
 */
#ifndef ANVIL_FORMATS_PTQTPS_H
#define ANVIL_FORMATS_PTQTPS_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/blocks.h"
#include "anvil/formats/ptqtp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Third-party type ids (anvil/codec.h: 1024-2047), reserved for PTQTP-S. */
#define ANVIL_TYPE_PTQTP2S 1026u /* "ptqtp2s": two planes, 9 levels */
#define ANVIL_TYPE_PTQTP3S 1027u /* "ptqtp3s": three planes, 27 levels */

#define ANVIL_PTQTPS_SUB 16      /* weights per sub-block */
#define ANVIL_PTQTPS_NSUB 16     /* sub-blocks per block */
#define ANVIL_PTQTPS_CODE_BITS 2 /* bits of a sub-block's code */
#define ANVIL_PTQTPS_SC_BYTES 4  /* 16 two-bit codes */
/* m for codes 0..3 (initializer lists): the narrow table when d's sign
 * bit is 0, the wide one when it is 1. */
#define ANVIL_PTQTPS_MULTS_NARROW 10, 12, 14, 16
#define ANVIL_PTQTPS_MULTS_WIDE 1, 3, 7, 16

/* Bytes of a K-plane block, and the offsets of its codes and scale. */
#define ANVIL_PTQTPS_BLOCK_BYTES(K) ((K)*ANVIL_PTQTP_PLANE_BYTES + ANVIL_PTQTPS_SC_BYTES + 2)
#define ANVIL_PTQTPS_SC_OFFSET(K) ((K)*ANVIL_PTQTP_PLANE_BYTES)
#define ANVIL_PTQTPS_D_OFFSET(K) ((K)*ANVIL_PTQTP_PLANE_BYTES + ANVIL_PTQTPS_SC_BYTES)

typedef struct {
    uint8_t planes[2][ANVIL_PTQTP_PLANE_BYTES];
    uint8_t sc[ANVIL_PTQTPS_SC_BYTES];
    anvil_half d; /* sign bit: the multiplier table */
} anvil_block_ptqtp2s;

typedef struct {
    uint8_t planes[3][ANVIL_PTQTP_PLANE_BYTES];
    uint8_t sc[ANVIL_PTQTPS_SC_BYTES];
    anvil_half d;
} anvil_block_ptqtp3s;

ANVIL_STATIC_ASSERT(block_ptqtp2s_size, sizeof(anvil_block_ptqtp2s) == ANVIL_PTQTPS_BLOCK_BYTES(2));
ANVIL_STATIC_ASSERT(block_ptqtp3s_size, sizeof(anvil_block_ptqtp3s) == ANVIL_PTQTPS_BLOCK_BYTES(3));
ANVIL_STATIC_ASSERT(block_ptqtp2s_d, offsetof(anvil_block_ptqtp2s, d) == ANVIL_PTQTPS_D_OFFSET(2));
ANVIL_STATIC_ASSERT(block_ptqtp3s_d, offsetof(anvil_block_ptqtp3s, d) == ANVIL_PTQTPS_D_OFFSET(3));
ANVIL_STATIC_ASSERT(block_ptqtp2s_sc, offsetof(anvil_block_ptqtp2s, sc) == ANVIL_PTQTPS_SC_OFFSET(2));

#ifdef __cplusplus
}
#endif

#endif /* ANVIL_FORMATS_PTQTPS_H */
