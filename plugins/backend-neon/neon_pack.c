/* SPDX-License-Identifier: MIT */
/* backend-neon: building the packed-RHS copies of Q8_0 and Q4_K weights
 * (layout in neon_packed.h). Plain C: it runs once per weight matrix. */
#include <stdint.h>
#include <string.h>

#include "anvil/blocks.h"
#include "anvil/numeric.h"
#include "anvil/status.h"
#include "neon_kernels.h"
#include "neon_packed.h"

/* groups(nrows) * (n / block_elems) * packed_block, or 0 when the shape
 * cannot be packed (n not whole blocks, empty) or the size overflows. */
static size_t packed_bytes(size_t n, size_t nrows, size_t block_elems, size_t packed_block) {
    if (n == 0 || nrows == 0 || n % block_elems != 0) {
        return 0;
    }
    const size_t groups = nrows / ANVIL_NEON_PACK_ROWS + (nrows % ANVIL_NEON_PACK_ROWS != 0);
    const size_t nb = n / block_elems;
    if (nb > SIZE_MAX / packed_block || groups > SIZE_MAX / (nb * packed_block)) {
        return 0;
    }
    return groups * nb * packed_block;
}

static float half_at(const uint8_t *p) {
    anvil_half h;
    memcpy(&h, p, sizeof h);
    return anvil_fp16_to_fp32(h);
}

size_t anvil_neon_packed_size_q8_0(size_t n, size_t nrows) { return packed_bytes(n, nrows, 32, NEON_PK_Q8_0_BLOCK); }

int anvil_neon_pack_q8_0(const void *w, size_t w_stride, size_t n, size_t nrows, void *dst, size_t dst_size) {
    const size_t need = anvil_neon_packed_size_q8_0(n, nrows);
    if (need == 0 || dst_size < need || w == NULL || dst == NULL) {
        return ANVIL_E_INVALID_ARG;
    }
    memset(dst, 0, need);
    uint8_t *out = dst;
    const size_t nb = n / 32;
    for (size_t g = 0; g * ANVIL_NEON_PACK_ROWS < nrows; ++g) {
        for (size_t b = 0; b < nb; ++b, out += NEON_PK_Q8_0_BLOCK) {
            for (size_t r = 0; r < ANVIL_NEON_PACK_ROWS; ++r) {
                const size_t row = g * ANVIL_NEON_PACK_ROWS + r;
                if (row >= nrows) {
                    break; /* padding rows stay zero */
                }
                const uint8_t *blk = (const uint8_t *)w + row * w_stride + b * sizeof(anvil_block_q8_0);
                const float d = half_at(blk + offsetof(anvil_block_q8_0, d));
                memcpy(out + 4 * r, &d, sizeof d);
                for (size_t c = 0; c < 4; ++c) {
                    memcpy(out + NEON_PK_Q8_0_QS + 32 * c + 8 * r, blk + offsetof(anvil_block_q8_0, qs) + 8 * c, 8);
                }
            }
        }
    }
    return ANVIL_OK;
}

size_t anvil_neon_packed_size_q4_K(size_t n, size_t nrows) {
    return packed_bytes(n, nrows, ANVIL_QK_K, NEON_PK_Q4_K_BLOCK);
}

int anvil_neon_pack_q4_K(const void *w, size_t w_stride, size_t n, size_t nrows, void *dst, size_t dst_size) {
    const size_t need = anvil_neon_packed_size_q4_K(n, nrows);
    if (need == 0 || dst_size < need || w == NULL || dst == NULL) {
        return ANVIL_E_INVALID_ARG;
    }
    memset(dst, 0, need);
    uint8_t *out = dst;
    const size_t nb = n / ANVIL_QK_K;
    for (size_t g = 0; g * ANVIL_NEON_PACK_ROWS < nrows; ++g) {
        for (size_t b = 0; b < nb; ++b, out += NEON_PK_Q4_K_BLOCK) {
            for (size_t r = 0; r < ANVIL_NEON_PACK_ROWS; ++r) {
                const size_t row = g * ANVIL_NEON_PACK_ROWS + r;
                if (row >= nrows) {
                    break;
                }
                const uint8_t *blk = (const uint8_t *)w + row * w_stride + b * sizeof(anvil_block_q4_K);
                const float d = half_at(blk + offsetof(anvil_block_q4_K, d));
                const float dmin = half_at(blk + offsetof(anvil_block_q4_K, dmin));
                memcpy(out + 4 * r, &d, sizeof d);
                memcpy(out + NEON_PK_Q4_K_DMIN + 4 * r, &dmin, sizeof dmin);
                /* The 6-bit scale/min unpacking of the k-quants (see
                 * neon_scale_min_k4), done once here instead of per dot. */
                const uint8_t *p = blk + offsetof(anvil_block_q4_K, scales);
                for (int j = 0; j < 8; ++j) {
                    uint8_t sc, mn;
                    if (j < 4) {
                        sc = p[j] & 63;
                        mn = p[j + 4] & 63;
                    } else {
                        sc = (uint8_t)((p[j + 4] & 0xF) | ((p[j - 4] >> 6) << 4));
                        mn = (uint8_t)((p[j + 4] >> 4) | ((p[j] >> 6) << 4));
                    }
                    out[NEON_PK_Q4_K_SC + 4 * j + r] = sc;
                    out[NEON_PK_Q4_K_MN + 4 * j + r] = mn;
                }
                const uint8_t *qs = blk + offsetof(anvil_block_q4_K, qs);
                for (size_t pr = 0; pr < 4; ++pr) {
                    for (size_t c = 0; c < 4; ++c) {
                        memcpy(out + NEON_PK_Q4_K_QS + 128 * pr + 32 * c + 8 * r, qs + 32 * pr + 8 * c, 8);
                    }
                }
            }
        }
    }
    return ANVIL_OK;
}
