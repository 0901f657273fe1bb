/* SPDX-License-Identifier: MIT */
/*
 * anvil_model_set_weight: evaluate with other bytes for one weight tensor
 * (what a sensitivity measurement perturbs). Every matrix prepared from the
 * tensor (its expert slices; the output too when the embedding is tied) is
 * prepared again from the caller's bytes, or from the file's on restore;
 * the token embedding's rows are read from them as well. The stored type
 * and byte count are the file's, so the forward pass is unchanged.
 */
#include <string.h>

#include "error.h"
#include "model_internal.h"

static int reprepare(anvil_model *m, mdl_mat *x, const void *data, anvil_error *err) {
    const char *base = data != NULL ? (const char *)data : (const char *)x->t->data;
    if (x->is_expert) base += (size_t)x->expert * (size_t)x->rows * (size_t)x->t->row_bytes;
    anvil_weights *w = NULL;
    int rc = anvil_weights_prepare(m->ctx, x->t->type, base, (size_t)x->rows, (size_t)x->cols,
                                   ANVIL_WEIGHTS_TRANSIENT, &w, err);
    if (rc != ANVIL_OK) {
        anvil__error_prefix(err, "%s", x->t->name);
        return rc;
    }
    anvil_weights_free(x->w);
    x->w = w;
    return ANVIL_OK;
}

/* Re-prepare x when it is a matrix of tensor t; *hits counts them. */
static int visit(anvil_model *m, mdl_mat *x, const anvil_gguf_tensor *t, const void *data, int *hits,
                 anvil_error *err) {
    if (x->t != t || x->w == NULL) return ANVIL_OK;
    ++*hits;
    return reprepare(m, x, data, err);
}

ANVIL_API int anvil_model_set_weight(anvil_model *m, const char *name, const void *data, anvil_error *err) {
    anvil__error_clear(err);
    if (m == NULL || name == NULL) return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_model_set_weight: NULL");
    const anvil_gguf_tensor *t = anvil_gguf_find_tensor(m->g, name);
    if (t == NULL) return anvil__error_set(err, ANVIL_E_NOT_FOUND, "the model has no tensor %s", name);
    int hits = 0, rc = ANVIL_OK;
    if (t == m->tok_embd) {
        m->tok_embd_data = data;
        ++hits;
    }
    rc = visit(m, &m->output, t, data, &hits, err);
    for (uint32_t il = 0; rc == ANVIL_OK && il < m->info.n_layer; ++il) {
        mdl_layer *L = &m->layers[il];
        mdl_mat *mats[] = { &L->wq, &L->wk, &L->wv, &L->wo, &L->gate, &L->up, &L->down, &L->gate_inp };
        for (size_t k = 0; rc == ANVIL_OK && k < sizeof mats / sizeof mats[0]; ++k) {
            rc = visit(m, mats[k], t, data, &hits, err);
        }
        mdl_mat *sets[] = { L->gate_exps, L->up_exps, L->down_exps };
        for (size_t s = 0; rc == ANVIL_OK && s < 3; ++s) {
            for (uint32_t x = 0; sets[s] != NULL && rc == ANVIL_OK && x < m->n_expert; ++x) {
                rc = visit(m, &sets[s][x], t, data, &hits, err);
            }
        }
    }
    if (rc == ANVIL_OK && hits == 0) {
        return anvil__error_set(err, ANVIL_E_NOT_FOUND, "tensor %s is not a matrix of the forward pass", name);
    }
    return rc;
}
