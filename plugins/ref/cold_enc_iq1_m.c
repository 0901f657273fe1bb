/* SPDX-License-Identifier: MIT */
/*
 * IQ1_M encoder: what ggml_quantize_chunk(GGML_TYPE_IQ1_M, ...) writes with
 * or without an importance matrix (quantize_iq1_m; ggml has no
 * quantize_row_iq1_m_ref), byte for byte.
 *
 * Values are (code - 1 + delta) * scale with codes 0..2 and delta = +-1/8
 * chosen per 8 elements. Per 16 elements, ggml solves the weighted
 * (w = x^2, or with an importance matrix qw sqrt(sigma2 + x^2), sigma2 =
 * twice the block's mean square) least-squares problem exactly over the
 * three-level splits: sort
 * the elements, try every pair of cut points (i1 <= i2) and, for each, the
 * four ways of giving the two 8-element halves a delta sign; keep the best
 * fit. The code vectors of the halves are then snapped to the IQ1 grid
 * (candidates from cold_enc_lattice.h, scored at the fitted scale), the
 * scale refitted if one moved, and per 256 elements the 3-bit sub-scales
 * and one binary16 scale (refitted over the whole block, times 1.1125) are
 * stored, the latter split in four nibbles over the sub-scale words.
 *
 * Two things beyond the arithmetic decide ggml's bytes:
 *  - The sort. ggml calls qsort with a comparator that sees only the value,
 *    so the order of equal values is whatever the C library's qsort does.
 *    glibc's qsort is a merge sort for arrays this small (it falls back to
 *    quicksort only when it cannot get a scratch buffer), which keeps equal
 *    values in index order: a stable sort (anvil_cold_stable_order). That
 *    is what is done here, and what the oracle (on glibc) confirms. Equal values are common (zeros,
 *    repeated levels), and their order moves the cut points and the sums'
 *    rounding; ggml built on a C library with an unstable qsort (musl's
 *    smoothsort) writes other bytes for such groups.
 *  - The form of the split sums. ggml's current search (the oracle's)
 *    derives each split's sums from per-half prefix sums; an older one
 *    summed term by term. Both are the same in exact arithmetic, and
 *    many splits tie in exact arithmetic (a group of one sign fits
 *    equally well with all codes 0, 1 or 2), so the rounding of the
 *    chosen form picks the winner. The prefix form is reproduced.
 *
 * Block: qs (low 8 bits of the 11-bit indices), qh (per 16 elements: two
 * 3-bit index tops at bits 0-2 and 4-6, delta signs at bits 3 and 7),
 * scales (four u16: 3-bit sub-scales in bits 0..11, a binary16 nibble in
 * bits 12..15).
 */
#include "ref/cold_enc_grid.h"

#include <float.h>
#include <math.h>

#include "anvil/blocks.h"
#include "anvil/numeric.h"
#include "anvil/status.h"
#include "ref/cold_enc_iq1_search.h"
#include "ref/cold_enc_search.h"
#include "ref/cold_impl.h"
#include "ref/rows.h"
#include "ref/cold_tables.h"

#define QK ANVIL_QK_K
#define GROUP 16 /* ggml's IQ1M_BLOCK_SIZE */

/* ggml's GROUP_MAX_EPS_IQ1_M. */
#define IQ1M_TINY 1e-7f

/* What ggml does where the search overflows. */
#define GGML_READS_PAST "reads past the end of its input"
#define GGML_DIES "fails an assertion and aborts"

#define IQ1M_QS offsetof(anvil_block_iq1_m, qs)
#define IQ1M_QH offsetof(anvil_block_iq1_m, qh)
#define IQ1M_SCALES offsetof(anvil_block_iq1_m, scales)

/* Which delta sign a half gets under split variant k: 0 (+,+), 1 (+,-),
 * 2 (-,+), 3 (-,-) for (first 8, last 8). Returns 1 for x_m. */
static inline int variant_minus(int k, int second_half) { return second_half ? (k & 1) : (k >> 1); }

static int encode_row(const float *src, void *dst, size_t n, const float *qw, char *msg, size_t msg_size) {
    const int rc = anvil_cold_lattice_ready("iq1_m", msg, msg_size);
    if (rc != ANVIL_OK) {
        return rc;
    }
    const cold_lattice *lat = anvil_ref_cold_lattice(COLD_LATTICE_IQ1);
    const float delta = anvil_cold_iq1m_delta;
    const float x_p[3] = { -1 + delta, delta, 1 + delta };
    const float x_m[3] = { -1 - delta, -delta, 1 - delta };
    static const uint8_t masks[4] = { 0x00, 0x80, 0x08, 0x88 };

    uint8_t *blk = dst;
    for (size_t ibl = 0; ibl < n / QK; ++ibl, blk += sizeof(anvil_block_iq1_m)) {
        const float *xbl = src + QK * ibl;
        const float *qwbl = qw != NULL ? qw + QK * ibl : NULL;
        const float sigma2 = qw != NULL ? 2 * cold_sum_squares(xbl, QK) / QK : 0.0f;
        uint8_t *qs = blk + IQ1M_QS;
        uint8_t *qh = blk + IQ1M_QH;
        memset(blk, 0, sizeof(anvil_block_iq1_m));
        float scales[QK / GROUP];
        int shifts[QK / GROUP];
        float max_scale = 0.0f;
        float weights[QK]; /* computed once, used by the search and the refit */
        for (int ib = 0; ib < QK / GROUP; ++ib) {
            const float *xb = xbl + GROUP * ib;
            float *weight = weights + GROUP * ib;
            cold_group_weights(xb, qwbl != NULL ? qwbl + GROUP * ib : NULL, GROUP, sigma2, weight);
            float max = fabsf(xb[0]);
            for (int i = 1; i < GROUP; ++i) {
                max = cold_max(max, fabsf(xb[i]));
            }
            scales[ib] = 0.0f;
            shifts[ib] = 0;
            if (max < IQ1M_TINY) {
                continue; /* indices 0, no delta sign */
            }
            int idx[GROUP];
            anvil_cold_stable_order_isa(xb, GROUP, idx, 1);
            cold_iq1_split fit;
            anvil_cold_iq1m_split(xb, weight, idx, x_p, x_m, max, &fit);
            if (fit.variant < 0) {
                continue;
            }
            const int i1 = fit.i1, i2 = fit.i2;
            float scale = fit.scale;
            int best_k = fit.variant;
            int8_t L[GROUP];
            for (int j = 0; j < GROUP; ++j) {
                L[idx[j]] = (int8_t)(j < i1 ? 0 : j < i2 ? 1 : 2);
            }
            if (scale < 0) {
                for (int j = 0; j < GROUP; ++j) {
                    L[j] = (int8_t)(2 - L[j]);
                }
                scale = -scale;
                best_k = 3 - best_k;
            }
            const float *const vals[2] = { variant_minus(best_k, 0) ? x_m : x_p,
                                           variant_minus(best_k, 1) ? x_m : x_p };
            int index[2];
            if (anvil_cold_iq1_snap(lat, L, 2, xb, weight, vals, &scale, index) != ANVIL_OK) {
                return anvil_cold_refuse_overflow("iq1_m", ibl, GROUP, ib, xb, GGML_READS_PAST, msg, msg_size);
            }
            qs[2 * ib + 0] = (uint8_t)(index[0] & 255);
            qs[2 * ib + 1] = (uint8_t)(index[1] & 255);
            qh[ib] = (uint8_t)((index[0] >> 8) | ((index[1] >> 8) << 4));
            if (!(scale >= 0)) {
                return anvil_cold_refuse_overflow("iq1_m", ibl, GROUP, ib, xb, GGML_DIES, msg, msg_size);
            }
            scales[ib] = scale;
            shifts[ib] = best_k;
            max_scale = cold_max(max_scale, scale);
        }
        if (!max_scale) {
            continue; /* all-zero block: scale 0 */
        }

        /* Sub-scales, then the super-block scale refitted over every
         * element with its final code and sub-scale. */
        uint16_t sc[4] = { 0, 0, 0, 0 };
        float d = max_scale / 15;
        const float id = 1 / d;
        float sumqx = 0.0f, sumq2 = 0.0f;
        for (int ib = 0; ib < QK / GROUP; ++ib) {
            int l = cold_sub_scale(id, scales[ib], 7);
            sc[ib / 4] |= (uint16_t)(l << 3 * (ib % 4));
            qh[ib] |= masks[shifts[ib]];
            const float *xb = xbl + GROUP * ib;
            const float *weight = weights + GROUP * ib;
            for (int k = 0; k < 2; ++k) {
                const float *xx = variant_minus(shifts[ib], k) ? x_m : x_p;
                const int g = qs[2 * ib + k] + ((qh[ib] << (8 - 4 * k)) & 0x700);
                const uint8_t *c = lat->code + (size_t)g * 8;
                for (int j = 0; j < 8; ++j) {
                    const float w = weight[8 * k + j];
                    const float q = xx[c[j]] * (float)(2 * l + 1);
                    sumqx += w * q * xb[8 * k + j];
                    sumq2 += w * q * q;
                }
            }
        }
        if (sumq2 > 0) {
            d = sumqx / sumq2;
        }
        const uint16_t h = anvil_fp32_to_fp16(d * 1.1125f);
        sc[0] |= (uint16_t)((h & 0x000f) << 12);
        sc[1] |= (uint16_t)((h & 0x00f0) << 8);
        sc[2] |= (uint16_t)((h & 0x0f00) << 4);
        sc[3] |= (uint16_t)(h & 0xf000);
        for (int w = 0; w < 4; ++w) {
            blk[IQ1M_SCALES + 2 * w] = (uint8_t)sc[w];
            blk[IQ1M_SCALES + 2 * w + 1] = (uint8_t)(sc[w] >> 8);
        }
    }
    return ANVIL_OK;
}

ANVIL_REF_DEFINE_CHECKED_ENCODERS(iq1_m, "iq1_m", QK, sizeof(anvil_block_iq1_m), encode_row)
