/* SPDX-License-Identifier: MIT */
/*
 * anvil_model_eval: one sequence of n tokens through every layer, as
 * llama.cpp's graph for llama / qwen2 / qwen3 computes it (see
 * anvil/model.h). Matrices go through anvil_matmul_prepared on the
 * context's threads; the element-wise steps are in mdl_attn.c. The scratch
 * is allocated per call (n rows of each activation) and freed before
 * returning. F16 / BF16 matrices get their activations rounded to the
 * weight's type first, as ggml's vec_dot_type conversion does (mdl_matmul.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/numeric.h"
#include "error.h"
#include "model_internal.h"

static void scratch_free(mdl_scratch *s) {
    free(s->x);
    free(s->h);
    free(s->q);
    free(s->k);
    free(s->v);
    free(s->att);
    free(s->ff_a);
    free(s->ff_b);
}

static float *alloc_rows(size_t n, size_t d) {
    if (d != 0 && n > SIZE_MAX / sizeof(float) / d) return NULL;
    return malloc(n * d * sizeof(float) + 1);
}

static int scratch_alloc(const anvil_model *m, size_t n, mdl_scratch *s, anvil_error *err) {
    const anvil_model_info *in = &m->info;
    const size_t nq = (size_t)in->n_head * in->head_dim, nkv = (size_t)in->n_head_kv * in->head_dim;
    const size_t wide = nq > in->n_embd ? nq : in->n_embd;
    *s = (mdl_scratch){ .n = n };
    s->x = alloc_rows(n, in->n_embd);
    s->h = alloc_rows(n, wide);
    s->q = alloc_rows(n, nq);
    s->k = alloc_rows(n, nkv);
    s->v = alloc_rows(n, nkv);
    s->att = alloc_rows(n, wide);
    s->ff_a = alloc_rows(n, in->n_ff);
    s->ff_b = alloc_rows(n, in->n_ff);
    if (!s->x || !s->h || !s->q || !s->k || !s->v || !s->att || !s->ff_a || !s->ff_b) {
        scratch_free(s);
        return anvil__error_set(err, ANVIL_E_NOMEM, "out of memory for the activations of %zu tokens", n);
    }
    return ANVIL_OK;
}

static int embed(anvil_model *m, const int32_t *tokens, size_t n, float *x, anvil_error *err) {
    const anvil_gguf_tensor *t = m->tok_embd;
    const size_t e = m->info.n_embd;
    for (size_t i = 0; i < n; ++i) {
        const char *base = m->tok_embd_data != NULL ? (const char *)m->tok_embd_data : (const char *)t->data;
        const char *row = base + (size_t)tokens[i] * t->row_bytes;
        int rc = anvil_decode(m->ctx, t->type, row, (size_t)t->row_bytes, x + i * e, e, err);
        if (rc != ANVIL_OK) {
            anvil__error_prefix(err, "token_embd.weight row %d", tokens[i]);
            return rc;
        }
    }
    return ANVIL_OK;
}

static void round_f16(float *x, size_t n) { mdl_round_f16_rows(x, x, n); }

static int attn_block(anvil_model *m, const mdl_layer *L, mdl_scratch *s, anvil_error *err) {
    const anvil_model_info *in = &m->info;
    const size_t n = s->n, hd = in->head_dim;
    mdl_rms_norm(s->x, n, in->n_embd, m->eps, L->attn_norm, s->h);
    int rc = mdl_matmul(m, &L->wq, s->h, n, s->q, L->bq, err);
    if (rc == ANVIL_OK) rc = mdl_matmul(m, &L->wk, s->h, n, s->k, L->bk, err);
    if (rc == ANVIL_OK) rc = mdl_matmul(m, &L->wv, s->h, n, s->v, L->bv, err);
    if (rc != ANVIL_OK) return rc;
    if (L->q_norm != NULL) mdl_rms_norm(s->q, n * in->n_head, hd, m->eps, L->q_norm, s->q);
    if (L->k_norm != NULL) mdl_rms_norm(s->k, n * in->n_head_kv, hd, m->eps, L->k_norm, s->k);
    mdl_rope(m, s->q, n, in->n_head);
    mdl_rope(m, s->k, n, in->n_head_kv);
    if (m->kv_f16) {
        round_f16(s->q, n * in->n_head * hd);
        round_f16(s->k, n * in->n_head_kv * hd);
        round_f16(s->v, n * in->n_head_kv * hd);
    }
    rc = mdl_attention(m, s->q, s->k, s->v, n, s->att, err);
    if (rc == ANVIL_OK) rc = mdl_matmul(m, &L->wo, s->att, n, s->h, NULL, err);
    if (rc != ANVIL_OK) return rc;
    for (size_t i = 0; i < n * in->n_embd; ++i) s->x[i] = s->h[i] + s->x[i];
    return ANVIL_OK;
}

static int ffn_block(anvil_model *m, const mdl_layer *L, mdl_scratch *s, anvil_error *err) {
    const anvil_model_info *in = &m->info;
    const size_t n = s->n;
    mdl_rms_norm(s->x, n, in->n_embd, m->eps, L->ffn_norm, s->h);
    if (L->gate_exps != NULL) {
        int rc = mdl_moe_ffn(m, L, s->h, n, s->att, err);
        if (rc != ANVIL_OK) return rc;
        for (size_t i = 0; i < n * in->n_embd; ++i) s->x[i] = s->att[i] + s->x[i];
        return ANVIL_OK;
    }
    int rc = mdl_matmul(m, &L->gate, s->h, n, s->ff_a, NULL, err);
    if (rc == ANVIL_OK) rc = mdl_matmul(m, &L->up, s->h, n, s->ff_b, NULL, err);
    if (rc != ANVIL_OK) return rc;
    for (size_t i = 0; i < n * in->n_ff; ++i) {
        const float g = s->ff_a[i];
        s->ff_a[i] = g / (1.0f + expf(-g)) * s->ff_b[i];
    }
    rc = mdl_matmul(m, &L->down, s->ff_a, n, s->h, NULL, err);
    if (rc != ANVIL_OK) return rc;
    for (size_t i = 0; i < n * in->n_embd; ++i) s->x[i] = s->h[i] + s->x[i];
    return ANVIL_OK;
}

ANVIL_API int anvil_model_eval(anvil_model *m, const int32_t *tokens, size_t n, float *logits, anvil_error *err) {
    anvil__error_clear(err);
    if (m == NULL || (n > 0 && (tokens == NULL || logits == NULL))) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_model_eval: NULL argument");
    }
    return mdl_eval(m, tokens, n, logits, err);
}

ANVIL_API void anvil_model_set_observer(anvil_model *m, anvil_model_observer fn, void *arg) {
    if (m == NULL) return;
    m->observe = fn;
    m->observe_arg = fn != NULL ? arg : NULL;
}

int mdl_eval(anvil_model *m, const int32_t *tokens, size_t n, float *logits, anvil_error *err) {
    return mdl_eval_layers(m, tokens, n, 0, NULL, NULL, logits, err);
}

ANVIL_API int anvil_model_eval_layers(anvil_model *m, const int32_t *tokens, size_t n, uint32_t first,
                                      const float *x_in, float *save, float *logits, anvil_error *err) {
    anvil__error_clear(err);
    if (m == NULL || (n > 0 && tokens == NULL) || (x_in == NULL && first != 0) || first > m->info.n_layer) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "anvil_model_eval_layers: NULL argument, or first layer %u past the model's %u "
                                "(or without its input)",
                                first, m != NULL ? m->info.n_layer : 0);
    }
    return mdl_eval_layers(m, tokens, n, first, x_in, save, logits, err);
}

int mdl_eval_layers(anvil_model *m, const int32_t *tokens, size_t n, uint32_t first, const float *x_in, float *save,
                    float *logits, anvil_error *err) {
    if (n == 0) return ANVIL_OK;
    for (size_t i = 0; i < n; ++i) {
        if (tokens[i] < 0 || (uint32_t)tokens[i] >= m->info.n_vocab) {
            return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                    "token %zu is %d: outside the vocabulary of %u tokens (ids from another model?)",
                                    i, tokens[i], m->info.n_vocab);
        }
    }
    mdl_scratch s;
    int rc = scratch_alloc(m, n, &s, err);
    if (rc != ANVIL_OK) return rc;
    const size_t plane = n * (size_t)m->info.n_embd;
    if (x_in != NULL) {
        memcpy(s.x, x_in, plane * sizeof *s.x);
    } else {
        rc = embed(m, tokens, n, s.x, err);
    }
    for (uint32_t il = first; rc == ANVIL_OK && il < m->info.n_layer; ++il) {
        if (save != NULL) memcpy(save + (size_t)il * plane, s.x, plane * sizeof *s.x);
        rc = attn_block(m, &m->layers[il], &s, err);
        if (rc == ANVIL_OK) rc = ffn_block(m, &m->layers[il], &s, err);
    }
    if (rc == ANVIL_OK && save != NULL) memcpy(save + (size_t)m->info.n_layer * plane, s.x, plane * sizeof *s.x);
    if (rc == ANVIL_OK && logits != NULL) {
        mdl_rms_norm(s.x, n, m->info.n_embd, m->eps, m->output_norm, s.h);
        rc = mdl_matmul(m, &m->output, s.h, n, logits, NULL, err);
    }
    scratch_free(&s);
    return rc;
}
