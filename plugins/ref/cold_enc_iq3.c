/* SPDX-License-Identifier: MIT */
/*
 * IQ3_XXS and IQ3_S encoders: ggml's quantize_row_iq3_xxs_impl and
 * quantize_row_iq3_s_impl, i.e. ggml_quantize_chunk with or without an
 * importance matrix (without one they are also quantize_row_<t>_ref), byte
 * for byte.
 *
 * Per 32 elements: weights x^2, or with an importance matrix
 * qw sqrt(sigma2 + x^2) (sigma2 = twice the mean square of the 256-element
 * block), signs split off (magnitudes searched), the
 * scale sweep of cold_enc_search.c over groups of 4, then per 256 elements
 * a binary16 scale d = max sub-scale / 31 (times ggml's fudge factor) and
 * 4-bit sub-scales l with sub-scale ~ d (2l + 1).
 *
 * The formats differ in details the bytes depend on:
 *  - IQ3_XXS stores 7 sign bits per 8 elements (the decoder infers the 8th
 *    from an even count of negatives), so when the count is odd the
 *    element with the smallest w x^2 has its sign bit flipped and its
 *    magnitude searched negated (its own code clamps to the lowest); it
 *    skips groups whose max is below 1e-8, sweeps 31 trial scales, refines
 *    only off-grid points, and its d carries a factor 1.0125.
 *  - IQ3_S stores all 8 sign bits, skips only all-zero groups, sweeps 19
 *    trials with no point counted as on the grid before the first accepted
 *    one, re-rounds every point in the refinement, has a 9-bit lattice
 *    index (high bits in qh) and d times 1.033. And it writes a group's
 *    indices and signs at a cursor that skips nothing for an all-zero
 *    group, so they shift (a ggml quirk, reproduced).
 */
#include "ref/cold_enc_grid.h"

#include "anvil/blocks.h"
#include "anvil/numeric.h"
#include "anvil/status.h"
#include "ref/cold_enc_search.h"
#include "ref/cold_impl.h"
#include "ref/rows.h"

#define QK ANVIL_QK_K

/* ggml's GROUP_MAX_EPS_IQ3_XXS. */
#define IQ3XXS_TINY 1e-8f

static void put_u32_le(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static void put_half(uint8_t *p, float f) {
    const anvil_half h = anvil_fp32_to_fp16(f);
    p[0] = (uint8_t)h;
    p[1] = (uint8_t)(h >> 8);
}

/* What ggml does where the search overflows. */
#define GGML_DIES "fails an assertion and aborts"

/* ---- IQ3_XXS --------------------------------------------------------------
 * Block: d, then 64 bytes of lattice indices (8 per 32 elements), then per
 * 32 elements a u32: four 7-bit sign fields (bits 0..27) and the 4-bit
 * sub-scale (28..31). */

#define IQ3XXS_D offsetof(anvil_block_iq3_xxs, d)
#define IQ3XXS_QS offsetof(anvil_block_iq3_xxs, qs)
#define IQ3XXS_META (offsetof(anvil_block_iq3_xxs, qs) + QK / 4)

static int encode_row_iq3_xxs(const float *src, void *dst, size_t n, const float *qw, char *msg, size_t msg_size) {
    const int rc = anvil_cold_lattice_ready("iq3_xxs", msg, msg_size);
    if (rc != ANVIL_OK) {
        return rc;
    }
    const cold_sweep sweep = {
        .lat = anvil_ref_cold_lattice(COLD_LATTICE_IQ3XXS),
        .n = 32,
        .max_q = 8,
        .step = 0.2f,
        .steps = 15,
        .start_on_grid = 1,
        .refine = COLD_REFINE_OFF_GRID,
    };
    uint8_t *blk = dst;
    for (size_t ibl = 0; ibl < n / QK; ++ibl, blk += sizeof(anvil_block_iq3_xxs)) {
        const float *xbl = src + QK * ibl;
        const float sigma2 = qw != NULL ? 2 * cold_sum_squares(xbl, QK) / QK : 0.0f;
        uint8_t *qs = blk + IQ3XXS_QS;
        memset(blk, 0, sizeof(anvil_block_iq3_xxs));
        float scales[QK / 32];
        uint32_t meta[QK / 32];
        float max_scale = 0.0f;
        for (int ib = 0; ib < QK / 32; ++ib) {
            const float *xb = xbl + 32 * ib;
            float weight[32], waux[32], xval[32];
            cold_group_weights(xb, qw != NULL ? qw + QK * ibl + 32 * ib : NULL, 32, sigma2, weight);
            uint8_t signs[4];
            const float max = anvil_cold_group_setup(xb, weight, 32, 1, waux, xval, signs);
            meta[ib] = 0;
            if (max < IQ3XXS_TINY) {
                scales[ib] = 0.0f;
                continue; /* indices and signs stay 0 */
            }
            int idx[8];
            float scale;
            if (anvil_cold_sweep_group(&sweep, xval, weight, waux, max, cold_sweep_first_scale(&sweep, max), signs,
                                       127, idx, &scale) != ANVIL_OK) {
                return anvil_cold_refuse_overflow("iq3_xxs", ibl, 32, ib, xb, GGML_DIES, msg, msg_size);
            }
            for (int k = 0; k < 8; ++k) {
                qs[8 * ib + k] = (uint8_t)idx[k];
            }
            meta[ib] = (uint32_t)signs[0] | (uint32_t)signs[1] << 7 | (uint32_t)signs[2] << 14 |
                       (uint32_t)signs[3] << 21;
            scales[ib] = scale;
            max_scale = cold_max(max_scale, scale);
        }
        if (!max_scale) {
            memset(blk, 0, sizeof(anvil_block_iq3_xxs));
            continue;
        }
        const float d = max_scale / 31;
        put_half(blk + IQ3XXS_D, d * 1.0125f);
        const float id = 1 / d;
        for (int ib = 0; ib < QK / 32; ++ib) {
            const int l = cold_sub_scale(id, scales[ib], 15);
            put_u32_le(blk + IQ3XXS_META + 4 * ib, meta[ib] | (uint32_t)l << 28);
        }
    }
    return ANVIL_OK;
}

/* ---- IQ3_S ----------------------------------------------------------------
 * Block: d, qs (low 8 bits of each 9-bit lattice index), qh (their 9th
 * bits, one byte per 32 elements), signs (one bit per element), scales
 * (two 4-bit sub-scales per byte). */

#define IQ3S_D offsetof(anvil_block_iq3_s, d)
#define IQ3S_QS offsetof(anvil_block_iq3_s, qs)
#define IQ3S_QH offsetof(anvil_block_iq3_s, qh)
#define IQ3S_SIGNS offsetof(anvil_block_iq3_s, signs)
#define IQ3S_SCALES offsetof(anvil_block_iq3_s, scales)

static int encode_row_iq3_s(const float *src, void *dst, size_t n, const float *qw, char *msg, size_t msg_size) {
    const int rc = anvil_cold_lattice_ready("iq3_s", msg, msg_size);
    if (rc != ANVIL_OK) {
        return rc;
    }
    const cold_sweep sweep = {
        .lat = anvil_ref_cold_lattice(COLD_LATTICE_IQ3S),
        .n = 32,
        .max_q = 8,
        .step = 0.2f,
        .steps = 9,
        .start_on_grid = 0,
        .refine = COLD_REFINE_ALL,
    };
    uint8_t *blk = dst;
    for (size_t ibl = 0; ibl < n / QK; ++ibl, blk += sizeof(anvil_block_iq3_s)) {
        const float *xbl = src + QK * ibl;
        const float sigma2 = qw != NULL ? 2 * cold_sum_squares(xbl, QK) / QK : 0.0f;
        memset(blk, 0, sizeof(anvil_block_iq3_s));
        /* ggml advances its index and sign cursors only past groups it
         * encodes: after an all-zero group (skipped) the following groups'
         * indices and signs land one group early, and the tail stays 0. The
         * decoder then reads them at the wrong place; the bytes are what
         * ggml writes, so they are reproduced. qh and scales are indexed
         * by group and unaffected. */
        size_t cursor = 0;
        float scales[QK / 32];
        float max_scale = 0.0f;
        for (int ib = 0; ib < QK / 32; ++ib) {
            const float *xb = xbl + 32 * ib;
            float weight[32], waux[32], xval[32];
            cold_group_weights(xb, qw != NULL ? qw + QK * ibl + 32 * ib : NULL, 32, sigma2, weight);
            uint8_t signs[4];
            const float max = anvil_cold_group_setup(xb, weight, 32, 0, waux, xval, signs);
            if (!max) {
                scales[ib] = 0.0f;
                continue; /* skipped: the cursor stays (see above) */
            }
            int idx[8];
            float scale;
            if (anvil_cold_sweep_group(&sweep, xval, weight, waux, max, cold_sweep_first_scale(&sweep, max), signs,
                                       0xFF, idx, &scale) != ANVIL_OK) {
                return anvil_cold_refuse_overflow("iq3_s", ibl, 32, ib, xb, GGML_DIES, msg, msg_size);
            }
            for (int k = 0; k < 8; ++k) {
                blk[IQ3S_QS + 8 * cursor + (size_t)k] = (uint8_t)(idx[k] & 255);
                blk[IQ3S_QH + ib] |= (uint8_t)((idx[k] >> 8) << k);
            }
            for (int k = 0; k < 4; ++k) {
                blk[IQ3S_SIGNS + 4 * cursor + (size_t)k] = signs[k];
            }
            cursor++;
            scales[ib] = scale;
            max_scale = cold_max(max_scale, scale);
        }
        if (!max_scale) {
            continue; /* d = 0; whatever indices and signs were written stay */
        }
        const float d = max_scale / 31;
        put_half(blk + IQ3S_D, d * 1.033f);
        const float id = 1 / d;
        for (int ib = 0; ib < QK / 32; ib += 2) {
            const int l1 = cold_sub_scale(id, scales[ib + 0], 15);
            const int l2 = cold_sub_scale(id, scales[ib + 1], 15);
            blk[IQ3S_SCALES + ib / 2] = (uint8_t)(l1 | (l2 << 4));
        }
    }
    return ANVIL_OK;
}

ANVIL_REF_DEFINE_CHECKED_ENCODERS(iq3_xxs, "iq3_xxs", QK, sizeof(anvil_block_iq3_xxs), encode_row_iq3_xxs)
ANVIL_REF_DEFINE_CHECKED_ENCODERS(iq3_s, "iq3_s", QK, sizeof(anvil_block_iq3_s), encode_row_iq3_s)
