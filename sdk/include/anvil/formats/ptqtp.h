/* SPDX-License-Identifier: MIT */
/*
 * anvil SDK — a published third-party format: PTQTP trit planes.
 *
 * Why this header exists. To the host, a format a plugin defines is only a
 * type id, a name and a block geometry (anvil/codec.h). A backend that wants
 * kernels for such a format needs its byte layout as well, and must not link
 * or include the plugin that defines it (plugins link only the SDK). So a
 * format whose layout is published for other plugins to implement lives here,
 * under anvil/formats/: its ids are reserved forever, its layout never
 * changes, and the plugin that encodes it (plugins/codec-ptqtp) is built from
 * this header like any backend carrying kernels for it. A backend that has a
 * kernel for a type whose codec is not loaded is harmless: the host only
 * dispatches types a loaded codec defines.
 *
 * PTQTP (Post-Training Quantization to Trit-Planes, arXiv 2509.16989)
 * approximates a group of 256 weights by K ternary planes with one real
 * scale each:
 *
 *     w[i] ~ d[0] * t[0][i] + d[1] * t[1][i] (+ d[2] * t[2][i]),  t in {-1, 0, +1}
 *
 * so a dot product against Q8_K activations (256 codes q and a scale) needs
 * no multiplication per weight: per plane, add q[i] where the trit is +1 and
 * subtract it where it is -1, then one multiply per plane and block.
 *
 * Block (256 weights, the span of one Q8_K block), K = 2 or 3:
 *
 *     uint8_t   planes[K][52]   plane k's 256 trits, packed as TQ1_0 packs its trits
 *     anvil_half d[K]           plane k's scale, IEEE binary16
 *
 *     ptqtp2: 108 bytes = 3.375 bits/weight    ptqtp3: 162 bytes = 5.0625 bits/weight
 *
 * A plane's 52 bytes (ggml's TQ1_0 qs[48] + qh[4], without its scale): byte
 * m of a group holds up to five trits as base-3 digits u = t + 1, most
 * significant first, stored as the fraction ceil(U * 256 / 243) of the
 * five-digit number U (a four-trit byte has a fifth digit 0 appended). The
 * digits come back as carries: with x the byte, repeat { x *= 3; digit =
 * x >> 8; x &= 255 }. Element of trit j (0-based, first digit first) of
 * byte m:
 *
 *     bytes  0..31   element       32 j + m        (j < 5: elements   0..159)
 *     bytes 32..47   element 160 + 16 j + (m - 32) (j < 5: elements 160..239)
 *     bytes 48..51   element 240 +  4 j + (m - 48) (j < 4: elements 240..255)
 *
 * Any byte decodes (a byte >= 243 yields digits as the carries say), any
 * scale too. Decoding is, in this order and in binary32:
 *
 *     y = (float)t[0][i] * d[0];  y = y + (float)t[1][i] * d[1];  (K = 3: y = y + (float)t[2][i] * d[2])
 *
 * The reference dot against Q8_K (d_a its f32 scale, q its codes) is
 *
 *     for each block: s_k = sum_i t[k][i] * q[i]           (exact integers)
 *                     acc = (float)s_0 * d[0];  acc = acc + (float)s_1 * d[1]  (...)
 *                     sum = sum + acc * d_a                 (blocks in order, binary32)
 *
 * and a kernel may differ from it only by float accumulation order (see
 * anvil/backend.h).
 */
#ifndef ANVIL_FORMATS_PTQTP_H
#define ANVIL_FORMATS_PTQTP_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/blocks.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Third-party type ids (anvil/codec.h: 1024-2047), reserved for PTQTP. */
#define ANVIL_TYPE_PTQTP2 1024u /* "ptqtp2": two planes */
#define ANVIL_TYPE_PTQTP3 1025u /* "ptqtp3": three planes */

#define ANVIL_PTQTP_BLOCK 256      /* weights per block = one Q8_K block */
#define ANVIL_PTQTP_PLANE_BYTES 52 /* 48 bytes of five trits, 4 of four */
#define ANVIL_PTQTP_MAX_PLANES 3

/* Bytes of a K-plane block, and the offset of plane k's scale in it. */
#define ANVIL_PTQTP_BLOCK_BYTES(K) ((K) * (ANVIL_PTQTP_PLANE_BYTES + 2))
#define ANVIL_PTQTP_SCALE_OFFSET(K, k) ((K)*ANVIL_PTQTP_PLANE_BYTES + 2 * (k))

/* The three byte groups of a plane: first byte, bytes, trits per byte. The
 * element of trit j of byte `first + m` is `elem0 + j * bytes + m`. */
#define ANVIL_PTQTP_G0_FIRST 0
#define ANVIL_PTQTP_G0_BYTES 32
#define ANVIL_PTQTP_G0_TRITS 5
#define ANVIL_PTQTP_G0_ELEM0 0
#define ANVIL_PTQTP_G1_FIRST 32
#define ANVIL_PTQTP_G1_BYTES 16
#define ANVIL_PTQTP_G1_TRITS 5
#define ANVIL_PTQTP_G1_ELEM0 160
#define ANVIL_PTQTP_G2_FIRST 48
#define ANVIL_PTQTP_G2_BYTES 4
#define ANVIL_PTQTP_G2_TRITS 4
#define ANVIL_PTQTP_G2_ELEM0 240

typedef struct {
    uint8_t planes[2][ANVIL_PTQTP_PLANE_BYTES];
    anvil_half d[2];
} anvil_block_ptqtp2;

typedef struct {
    uint8_t planes[3][ANVIL_PTQTP_PLANE_BYTES];
    anvil_half d[3];
} anvil_block_ptqtp3;

ANVIL_STATIC_ASSERT(block_ptqtp2_size, sizeof(anvil_block_ptqtp2) == ANVIL_PTQTP_BLOCK_BYTES(2));
ANVIL_STATIC_ASSERT(block_ptqtp3_size, sizeof(anvil_block_ptqtp3) == ANVIL_PTQTP_BLOCK_BYTES(3));
ANVIL_STATIC_ASSERT(block_ptqtp2_scales, offsetof(anvil_block_ptqtp2, d) == ANVIL_PTQTP_SCALE_OFFSET(2, 0));
ANVIL_STATIC_ASSERT(block_ptqtp3_scales, offsetof(anvil_block_ptqtp3, d) == ANVIL_PTQTP_SCALE_OFFSET(3, 0));

#ifdef __cplusplus
}
#endif

#endif /* ANVIL_FORMATS_PTQTP_H */
