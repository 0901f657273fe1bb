/* SPDX-License-Identifier: MIT */
/*
 * IQ1_S encoder: ggml's quantize_row_iq1_s_impl (ggml_quantize_chunk's
 * path), byte for byte. ggml runs it only with an importance matrix
 * ("missing quantization weights" otherwise), so this encoder exists only
 * row-wise with one.
 *
 * Values are (code - 1 + delta) * scale with codes 0..2 and delta = +-1/8,
 * the delta's sign chosen per 32 elements (IQ1_M chooses it per 8). Per 32
 * elements, with weights qw sqrt(sigma2 + x^2) (sigma2 = twice the block's
 * mean square), ggml solves the weighted least-squares problem exactly over
 * the three-level splits of the sorted elements (the stable order glibc's
 * qsort gives, as for IQ1_M), both delta signs, from prefix sums; snaps the
 * four 8-element code vectors to the IQ1 grid (candidates scored at the
 * fitted scale), refits the scale if one moved, and per 256 elements stores
 * a binary16 d = max sub-scale / 15 * 1.125 and 3-bit sub-scales.
 *
 * Unlike IQ1_M, the split sums here are ggml's three-term expressions
 * (S(i1) - S(0)) v0 + (S(i2) - S(i1)) v1 + (S(32) - S(i2)) v2, written out
 * exactly so: they round differently from IQ1_M's collapsed form, and on
 * near-ties the rounding picks the split.
 *
 * Block: d, qs (low 8 bits of the 11-bit indices, 4 per 32 elements), qh
 * (a u16 per 32 elements: the indices' top 3 bits at 3k, the sub-scale at
 * bits 12..14, the delta sign at bit 15).
 *
 * Refusals (ANVIL_E_UNSUPPORTED, naming the block) where ggml's search
 * overflows and aborts: no candidate scores below FLT_MAX (ggml then scans
 * the whole grid reading past the end of its input, then asserts), or the
 * refitted scale is NaN (an assertion).
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
#define GROUP 32 /* ggml's IQ1S_BLOCK_SIZE */

/* ggml's GROUP_MAX_EPS_IQ1_S. */
#define IQ1S_TINY 1e-12f

/* What ggml does where the search overflows. */
#define GGML_READS_PAST "reads past the end of its input"
#define GGML_DIES "fails an assertion and aborts"

#define IQ1S_D offsetof(anvil_block_iq1_s, d)
#define IQ1S_QS offsetof(anvil_block_iq1_s, qs)
#define IQ1S_QH offsetof(anvil_block_iq1_s, qh)

static int encode_row(const float *src, void *dst, size_t n, const float *qw, char *msg, size_t msg_size) {
    const int rc = anvil_cold_lattice_ready("iq1_s", msg, msg_size);
    if (rc != ANVIL_OK) {
        return rc;
    }
    const cold_lattice *lat = anvil_ref_cold_lattice(COLD_LATTICE_IQ1);
    const float delta = anvil_cold_iq1s_delta;
    const float x_p[3] = { -1 + delta, delta, 1 + delta };
    const float x_m[3] = { -1 - delta, -delta, 1 - delta };

    uint8_t *blk = dst;
    for (size_t ibl = 0; ibl < n / QK; ++ibl, blk += sizeof(anvil_block_iq1_s)) {
        const float *xbl = src + QK * ibl;
        memset(blk, 0, sizeof(anvil_block_iq1_s));
        const float sigma2 = 2 * cold_sum_squares(xbl, QK) / QK;
        uint16_t qh[QK / GROUP];
        float scales[QK / GROUP];
        int shifts[QK / GROUP];
        float max_scale = 0.0f;
        for (int ib = 0; ib < QK / GROUP; ++ib) {
            const float *xb = xbl + GROUP * ib;
            float weight[GROUP];
            cold_imatrix_weights(qw + QK * ibl + GROUP * ib, xb, GROUP, sigma2, weight);
            float max = fabsf(xb[0]);
            for (int i = 1; i < GROUP; ++i) {
                max = cold_max(max, fabsf(xb[i]));
            }
            qh[ib] = 0;
            scales[ib] = 0.0f;
            shifts[ib] = 1;
            if (max < IQ1S_TINY) {
                continue; /* indices 0, delta + */
            }
            int idx[GROUP];
            anvil_cold_stable_order_isa(xb, GROUP, idx, 1);
            cold_iq1_split fit;
            anvil_cold_iq1s_split(xb, weight, idx, x_p, x_m, max, &fit);
            if (fit.i1 < 0 || fit.i2 < 0 || fit.variant < 0) {
                continue;
            }
            int shift = fit.variant == 0 ? 1 : -1; /* the delta sign */
            int8_t L[GROUP];
            for (int j = 0; j < GROUP; ++j) {
                L[idx[j]] = (int8_t)(j < fit.i1 ? 0 : j < fit.i2 ? 1 : 2);
            }
            if (fit.scale < 0) {
                for (int j = 0; j < GROUP; ++j) {
                    L[j] = (int8_t)(2 - L[j]);
                }
                fit.scale = -fit.scale;
                shift = -shift;
            }
            const float *xx = shift == 1 ? x_p : x_m;
            const float *const vals[GROUP / 8] = { xx, xx, xx, xx };
            int index[GROUP / 8];
            if (anvil_cold_iq1_snap(lat, L, GROUP / 8, xb, weight, vals, &fit.scale, index) != ANVIL_OK) {
                return anvil_cold_refuse_overflow("iq1_s", ibl, GROUP, ib, xb, GGML_READS_PAST, msg, msg_size);
            }
            for (int k = 0; k < GROUP / 8; ++k) {
                blk[IQ1S_QS + (GROUP / 8) * ib + k] = (uint8_t)(index[k] & 255);
                qh[ib] |= (uint16_t)((index[k] >> 8) << 3 * k);
            }
            /* Stored now: a group fitted with scale 0 keeps its index bits
             * even when the whole block ends up with d = 0. */
            blk[IQ1S_QH + 2 * ib] = (uint8_t)qh[ib];
            blk[IQ1S_QH + 2 * ib + 1] = (uint8_t)(qh[ib] >> 8);
            if (!(fit.scale >= 0)) {
                return anvil_cold_refuse_overflow("iq1_s", ibl, GROUP, ib, xb, GGML_DIES, msg, msg_size);
            }
            scales[ib] = fit.scale;
            shifts[ib] = shift;
            max_scale = cold_max(max_scale, fit.scale);
        }
        if (!max_scale) {
            continue; /* d = 0, no sub-scales */
        }
        const float d = max_scale / 15;
        const anvil_half h = anvil_fp32_to_fp16(d * 1.125f);
        blk[IQ1S_D] = (uint8_t)h;
        blk[IQ1S_D + 1] = (uint8_t)(h >> 8);
        const float id = 1 / d;
        for (int ib = 0; ib < QK / GROUP; ++ib) {
            int l = cold_sub_scale(id, scales[ib], 7);
            if (shifts[ib] == -1) {
                l |= 8;
            }
            qh[ib] |= (uint16_t)(l << 12);
            blk[IQ1S_QH + 2 * ib] = (uint8_t)qh[ib];
            blk[IQ1S_QH + 2 * ib + 1] = (uint8_t)(qh[ib] >> 8);
        }
    }
    return ANVIL_OK;
}

ANVIL_REF_DEFINE_WEIGHTED_ENCODER(iq1_s, "iq1_s", QK, sizeof(anvil_block_iq1_s), encode_row)
