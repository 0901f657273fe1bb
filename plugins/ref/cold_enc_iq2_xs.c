/* SPDX-License-Identifier: MIT */
/*
 * IQ2_XXS and IQ2_XS encoders: ggml's quantize_row_iq2_xxs_impl and
 * quantize_row_iq2_xs_impl (ggml_quantize_chunk's path), byte for byte.
 * ggml runs them only with an importance matrix ("missing quantization
 * weights" otherwise), so these encoders exist only row-wise with one.
 *
 * Per 32 (IQ2_XXS) or 16 (IQ2_XS) elements: weights qw sqrt(sigma2 + x^2)
 * with sigma2 the block's mean square (not twice it, as in the other
 * i-quants), 7 sign bits per 8 elements with the parity trick of IQ3_XXS
 * (anvil_cold_split_signs_even), then the scale sweep of cold_enc_search.c
 * over groups of 8 with codes 0..2 (magnitudes 1, 3, 5 times the scale),
 * and per 256 elements a binary16 d = max sub-scale / 31 (no fudge factor)
 * and 4-bit sub-scales l with sub-scale ~ d (2l + 1).
 *
 * The sweeps differ:
 *  - IQ2_XXS first fits a scale with ggml's make_qp_quants (codes 0..4;
 *    anvil_kq_fit_positive, shared with the weighted K-quants), then tries (5 + 0.1 is) / (3 scale), is =
 *    -6..6, keeping the qp scale when no trial fits better, and always
 *    re-rounds every group at the final scale when it is positive;
 *  - IQ2_XS sweeps (5 + 0.1 is) / max, is = -9..9, like IQ2_S, and
 *    re-rounds only the groups that were off the grid.
 *
 * Blocks:
 *  - IQ2_XXS: d, then per 32 elements two u32: four 8-bit lattice indices,
 *    and four 7-bit sign fields (bits 0..27) with the 4-bit sub-scale
 *    (28..31).
 *  - IQ2_XS: d, per 8 elements a u16 (9-bit lattice index | 7 sign bits
 *    << 9), then per 32 elements a byte of two 4-bit sub-scales.
 *
 * Refusals are those of cold_enc_grid.h: where ggml's search overflows and
 * aborts (an assertion, or its "point not on grid" abort), ANVIL_E_UNSUPPORTED
 * naming the block.
 */
#include "ref/cold_enc_grid.h"

#include "anvil/blocks.h"
#include "anvil/numeric.h"
#include "anvil/status.h"
#include "ref/cold_enc_search.h"
#include "ref/cold_impl.h"
#include "ref/kquants_search.h"
#include "ref/rows.h"

#define QK ANVIL_QK_K

#define IQ2XXS_D offsetof(anvil_block_iq2_xxs, d)
#define IQ2XXS_QS offsetof(anvil_block_iq2_xxs, qs)
#define IQ2XS_D offsetof(anvil_block_iq2_xs, d)
#define IQ2XS_QS offsetof(anvil_block_iq2_xs, qs)
#define IQ2XS_SCALES offsetof(anvil_block_iq2_xs, scales)

/* What ggml does where the search overflows. */
#define GGML_DIES "fails an assertion and aborts"

static void put_le(uint8_t *p, uint32_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

/* ---- IQ2_XXS ------------------------------------------------------------- */

static int encode_row_iq2_xxs(const float *src, void *dst, size_t n, const float *qw, char *msg, size_t msg_size) {
    const int rc = anvil_cold_lattice_ready("iq2_xxs", msg, msg_size);
    if (rc != ANVIL_OK) {
        return rc;
    }
    const cold_sweep sweep = {
        .lat = anvil_ref_cold_lattice(COLD_LATTICE_IQ2XXS),
        .n = 32,
        .max_q = 3,
        .step = 0.1f,
        .steps = 6,
        .start_on_grid = 1,
        .refine = COLD_REFINE_ALWAYS,
    };
    uint8_t *blk = dst;
    for (size_t ibl = 0; ibl < n / QK; ++ibl, blk += sizeof(anvil_block_iq2_xxs)) {
        const float *xbl = src + QK * ibl;
        memset(blk, 0, sizeof(anvil_block_iq2_xxs));
        const float sigma2 = cold_sum_squares(xbl, QK) / QK;
        uint32_t q2[2 * (QK / 32)];
        memset(q2, 0, sizeof q2);
        float scales[QK / 32];
        float max_scale = 0.0f;
        for (int ib = 0; ib < QK / 32; ++ib) {
            const float *xb = xbl + 32 * ib;
            float weight[32], waux[32], xval[32];
            cold_imatrix_weights(qw + QK * ibl + 32 * ib, xb, 32, sigma2, weight);
            uint8_t signs[4];
            const float max = anvil_cold_group_setup(xb, weight, 32, 1, waux, xval, signs);
            scales[ib] = 0.0f;
            if (max < ANVIL_KQ_GROUP_EPS) {
                continue; /* indices and signs stay 0 */
            }
            /* ggml's make_qp_quants (its codes, uint8_t, are not kept). */
            uint8_t qp_codes[32];
            float scale = anvil_kq_fit_positive(32, sweep.max_q + 1, xval, qp_codes, weight);
            const float eff_max = scale * (float)sweep.max_q;
            if (eff_max <= 0) {
                continue;
            }
            int idx[4];
            if (anvil_cold_sweep_group(&sweep, xval, weight, waux, eff_max, scale, signs, 127, idx, &scale) !=
                ANVIL_OK) {
                return anvil_cold_refuse_overflow("iq2_xxs", ibl, 32, ib, xb, GGML_DIES, msg, msg_size);
            }
            for (int k = 0; k < 4; ++k) {
                q2[2 * ib + 0] |= (uint32_t)idx[k] << 8 * k;
                q2[2 * ib + 1] |= (uint32_t)signs[k] << 7 * k;
            }
            scales[ib] = scale;
            max_scale = cold_max(max_scale, scale);
        }
        if (!max_scale) {
            continue; /* d = 0, every index and sign 0 */
        }
        const float d = max_scale / 31;
        put_le(blk + IQ2XXS_D, anvil_fp32_to_fp16(d), 2);
        const float id = 1 / d;
        for (int ib = 0; ib < QK / 32; ++ib) {
            q2[2 * ib + 1] |= (uint32_t)cold_sub_scale(id, scales[ib], 15) << 28;
        }
        for (int w = 0; w < 2 * (QK / 32); ++w) {
            put_le(blk + IQ2XXS_QS + 4 * w, q2[w], 4);
        }
    }
    return ANVIL_OK;
}

/* ---- IQ2_XS -------------------------------------------------------------- */

static int encode_row_iq2_xs(const float *src, void *dst, size_t n, const float *qw, char *msg, size_t msg_size) {
    const int rc = anvil_cold_lattice_ready("iq2_xs", msg, msg_size);
    if (rc != ANVIL_OK) {
        return rc;
    }
    const cold_sweep sweep = {
        .lat = anvil_ref_cold_lattice(COLD_LATTICE_IQ2XS),
        .n = 16,
        .max_q = 3,
        .step = 0.1f,
        .steps = 9,
        .start_on_grid = 1,
        .refine = COLD_REFINE_OFF_GRID,
    };
    uint8_t *blk = dst;
    for (size_t ibl = 0; ibl < n / QK; ++ibl, blk += sizeof(anvil_block_iq2_xs)) {
        const float *xbl = src + QK * ibl;
        memset(blk, 0, sizeof(anvil_block_iq2_xs));
        const float sigma2 = cold_sum_squares(xbl, QK) / QK;
        uint16_t q2[2 * (QK / 16)];
        memset(q2, 0, sizeof q2);
        float scales[QK / 16];
        float max_scale = 0.0f;
        for (int ib = 0; ib < QK / 16; ++ib) {
            const float *xb = xbl + 16 * ib;
            float weight[16], waux[16], xval[16];
            cold_imatrix_weights(qw + QK * ibl + 16 * ib, xb, 16, sigma2, weight);
            uint8_t signs[2];
            const float max = anvil_cold_group_setup(xb, weight, 16, 1, waux, xval, signs);
            scales[ib] = 0.0f;
            if (max < ANVIL_KQ_GROUP_EPS) {
                continue;
            }
            int idx[2];
            float scale;
            if (anvil_cold_sweep_group(&sweep, xval, weight, waux, max, cold_sweep_first_scale(&sweep, max), signs,
                                       127, idx, &scale) != ANVIL_OK) {
                return anvil_cold_refuse_overflow("iq2_xs", ibl, 16, ib, xb, GGML_DIES, msg, msg_size);
            }
            for (int k = 0; k < 2; ++k) {
                q2[2 * ib + k] = (uint16_t)(idx[k] | signs[k] << 9);
            }
            scales[ib] = scale;
            max_scale = cold_max(max_scale, scale);
        }
        if (!max_scale) {
            continue;
        }
        const float d = max_scale / 31;
        put_le(blk + IQ2XS_D, anvil_fp32_to_fp16(d), 2);
        const float id = 1 / d;
        for (int ib = 0; ib < QK / 16; ++ib) {
            const int l = cold_sub_scale(id, scales[ib], 15);
            blk[IQ2XS_SCALES + ib / 2] |= (uint8_t)(ib % 2 == 0 ? l : l << 4);
        }
        for (int w = 0; w < 2 * (QK / 16); ++w) {
            put_le(blk + IQ2XS_QS + 2 * w, q2[w], 2);
        }
    }
    return ANVIL_OK;
}

ANVIL_REF_DEFINE_WEIGHTED_ENCODER(iq2_xxs, "iq2_xxs", QK, sizeof(anvil_block_iq2_xxs), encode_row_iq2_xxs)
ANVIL_REF_DEFINE_WEIGHTED_ENCODER(iq2_xs, "iq2_xs", QK, sizeof(anvil_block_iq2_xs), encode_row_iq2_xs)
