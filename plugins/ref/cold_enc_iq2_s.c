/* SPDX-License-Identifier: MIT */
/*
 * IQ2_S encoder: ggml's quantize_row_iq2_s_impl, i.e. ggml_quantize_chunk
 * with or without an importance matrix (without one it is also
 * quantize_row_iq2_s_ref), byte for byte.
 *
 * Per 16 elements: weights sigma2 / 4 + x^2, or with an importance matrix
 * qw sqrt(sigma2 + x^2) (sigma2 = twice the mean square of the 256-element
 * block), signs split off, the scale sweep of
 * cold_enc_search.c over two groups of 8 with codes 0..2 (magnitudes 1, 3,
 * 5 times the scale; trials (5 + 0.1 is) / max, is = -9..9), then per 256
 * elements a binary16 d = max sub-scale / 31 * 0.9875 and 4-bit sub-scales.
 *
 * Block: d; qs[0..32) the low 8 bits of each 10-bit lattice index (one per
 * 8 elements), qs[32..64) the 8 sign bits of each group, qh the indices'
 * top 2 bits (four per byte), scales two 4-bit sub-scales per byte.
 */
#include "ref/cold_enc_grid.h"

#include "anvil/blocks.h"
#include "anvil/numeric.h"
#include "anvil/status.h"
#include "ref/cold_enc_search.h"
#include "ref/cold_impl.h"
#include "ref/rows.h"

#define QK ANVIL_QK_K

/* ggml's GROUP_MAX_EPS_IQ2_S. */
#define IQ2S_TINY 1e-8f

#define IQ2S_D offsetof(anvil_block_iq2_s, d)
#define IQ2S_QS offsetof(anvil_block_iq2_s, qs)
#define IQ2S_SIGNS (offsetof(anvil_block_iq2_s, qs) + QK / 8)
#define IQ2S_QH offsetof(anvil_block_iq2_s, qh)
#define IQ2S_SCALES offsetof(anvil_block_iq2_s, scales)

/* What ggml does where the search overflows. */
#define GGML_DIES "fails an assertion and aborts"

static int encode_row(const float *src, void *dst, size_t n, const float *qw, char *msg, size_t msg_size) {
    const int rc = anvil_cold_lattice_ready("iq2_s", msg, msg_size);
    if (rc != ANVIL_OK) {
        return rc;
    }
    const cold_sweep sweep = {
        .lat = anvil_ref_cold_lattice(COLD_LATTICE_IQ2S),
        .n = 16,
        .max_q = 3,
        .step = 0.1f,
        .steps = 9,
        .start_on_grid = 1,
        .refine = COLD_REFINE_OFF_GRID,
    };
    uint8_t *blk = dst;
    for (size_t ibl = 0; ibl < n / QK; ++ibl, blk += sizeof(anvil_block_iq2_s)) {
        const float *xbl = src + QK * ibl;
        memset(blk, 0, sizeof(anvil_block_iq2_s));
        const float sigma2 = 2 * cold_sum_squares(xbl, QK) / QK;

        float scales[QK / 16];
        float max_scale = 0.0f;
        for (int ib = 0; ib < QK / 16; ++ib) {
            const float *xb = xbl + 16 * ib;
            float weight[16], waux[16], xval[16];
            if (qw != NULL) {
                cold_imatrix_weights(qw + QK * ibl + 16 * ib, xb, 16, sigma2, weight);
            } else {
                for (int i = 0; i < 16; ++i) {
                    weight[i] = 0.25f * sigma2 + xb[i] * xb[i];
                }
            }
            uint8_t signs[2];
            const float max = anvil_cold_group_setup(xb, weight, 16, 0, waux, xval, signs);
            if (max < IQ2S_TINY) {
                scales[ib] = 0.0f;
                continue; /* indices and signs stay 0 */
            }
            int idx[2];
            float scale;
            if (anvil_cold_sweep_group(&sweep, xval, weight, waux, max, cold_sweep_first_scale(&sweep, max), signs,
                                       0xFF, idx, &scale) != ANVIL_OK) {
                return anvil_cold_refuse_overflow("iq2_s", ibl, 16, ib, xb, GGML_DIES, msg, msg_size);
            }
            for (int k = 0; k < 2; ++k) {
                const int i8 = 2 * ib + k;
                blk[IQ2S_QS + i8] = (uint8_t)(idx[k] & 255);
                blk[IQ2S_QH + i8 / 4] |= (uint8_t)((idx[k] >> 8) << 2 * (i8 % 4));
                blk[IQ2S_SIGNS + i8] = signs[k];
            }
            scales[ib] = scale;
            max_scale = cold_max(max_scale, scale);
        }
        if (!max_scale) {
            continue; /* d = 0, sub-scales 0 */
        }
        const float d = max_scale / 31;
        const anvil_half h = anvil_fp32_to_fp16(d * 0.9875f);
        blk[IQ2S_D] = (uint8_t)h;
        blk[IQ2S_D + 1] = (uint8_t)(h >> 8);
        const float id = 1 / d;
        for (int ib = 0; ib < QK / 16; ++ib) {
            const int l = cold_sub_scale(id, scales[ib], 15);
            if (ib % 2 == 0) {
                blk[IQ2S_SCALES + ib / 2] = (uint8_t)l;
            } else {
                blk[IQ2S_SCALES + ib / 2] |= (uint8_t)(l << 4);
            }
        }
    }
    return ANVIL_OK;
}

ANVIL_REF_DEFINE_CHECKED_ENCODERS(iq2_s, "iq2_s", QK, sizeof(anvil_block_iq2_s), encode_row)
