/* SPDX-License-Identifier: MIT */
/*
 * mdl_matmul: one weight matrix times n activation rows through
 * anvil_matmul_prepared, plus the optional bias. Used by the dense blocks
 * (mdl_forward.c) and the experts (mdl_moe.c); it calls neither. The
 * model's observer (anvil_model_set_observer), when set, sees the input rows
 * first, as they are before any rounding (what ggml's eval callback sees as
 * src1 of the mul_mat / mul_mat_id).
 */
#include <stdlib.h>

#include "anvil/numeric.h"
#include "error.h"
#include "model_internal.h"

/* ggml converts the activations of an F16 / BF16 matrix to the weight's
 * type (its vec_dot_type) before the dot products: the same rounding here,
 * whatever kernel anvil_matmul picks (rounding twice changes nothing). */
static float *round_activations(uint32_t type, const float *x, size_t count) {
    float *r = malloc(count * sizeof *r + 1);
    if (r == NULL) return NULL;
    if (type == ANVIL_TYPE_F16) {
        mdl_round_f16_rows(x, r, count);
        return r;
    }
    for (size_t i = 0; i < count; ++i) r[i] = anvil_bf16_to_fp32(anvil_fp32_to_bf16(x[i]));
    return r;
}

int mdl_matmul(anvil_model *m, const mdl_mat *w, const float *x, size_t n, float *y, const float *bias,
               anvil_error *err) {
    float *xr = NULL;
    if (m->observe != NULL) {
        const uint32_t n_mat = w->is_expert ? (uint32_t)w->t->ne[2] : 1;
        m->observe(m->observe_arg, w->t->name, w->expert, n_mat, x, n, (size_t)w->cols);
    }
    if (w->t->type == ANVIL_TYPE_F16 || w->t->type == ANVIL_TYPE_BF16) {
        xr = round_activations(w->t->type, x, n * (size_t)w->cols);
        if (xr == NULL) return anvil__nomem(err);
    }
    int rc = anvil_matmul_prepared(m->ctx, w->w, xr ? xr : x, n, y, err);
    free(xr);
    if (rc != ANVIL_OK) {
        anvil__error_prefix(err, "%s", w->t->name);
        return rc;
    }
    if (bias != NULL) {
        for (size_t i = 0; i < n; ++i) {
            for (size_t r = 0; r < w->rows; ++r) y[i * w->rows + r] += bias[r];
        }
    }
    return ANVIL_OK;
}
