/* SPDX-License-Identifier: MIT */
/*
 * The MoE feed-forward of llama (Mixtral) and qwen3moe layers, as
 * llama.cpp's build_moe_ffn computes it with softmax gating and norm_w:
 * router logits (ffn_gate_inp) -> softmax (max in float, sum in double) ->
 * the n_expert_used largest (argsort, descending) -> their probabilities
 * divided by their sum (at least 6.103515625e-5) and times
 * expert_weights_scale when that is neither 0 nor 1 -> per chosen expert
 * SwiGLU(gate, up) and down, times its weight -> the experts' outputs added
 * in the order chosen. Tokens are grouped by expert so that each expert's
 * matrices multiply all its tokens at once (anvil_matmul on its slice of
 * the 3-D tensors).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "model_internal.h"

typedef struct moe_buf {
    float *logits, *w, *xb, *ga, *ub, *db, *slots;
    uint32_t *sel;
    size_t *rows;
} moe_buf;

static void buf_free(moe_buf *b) {
    free(b->logits);
    free(b->w);
    free(b->xb);
    free(b->ga);
    free(b->ub);
    free(b->db);
    free(b->slots);
    free(b->sel);
    free(b->rows);
}

static int buf_alloc(const anvil_model *m, size_t n, moe_buf *b, anvil_error *err) {
    const size_t e = m->info.n_embd, k = m->n_expert_used, f = m->n_ff_exp;
    *b = (moe_buf){ 0 };
    if (n > SIZE_MAX / 4 / (k * e + f + m->n_expert + 1))
        return anvil__error_set(err, ANVIL_E_OVERFLOW, "MoE buffers overflow");
    b->logits = malloc(n * m->n_expert * sizeof(float) + 1);
    b->w = malloc(n * k * sizeof(float) + 1);
    b->xb = malloc(n * e * sizeof(float) + 1);
    b->ga = malloc(n * f * sizeof(float) + 1);
    b->ub = malloc(n * f * sizeof(float) + 1);
    b->db = malloc(n * e * sizeof(float) + 1);
    b->slots = malloc(n * k * e * sizeof(float) + 1);
    b->sel = malloc(n * k * sizeof(uint32_t) + 1);
    b->rows = malloc(n * sizeof(size_t) + 1);
    if (!b->logits || !b->w || !b->xb || !b->ga || !b->ub || !b->db || !b->slots || !b->sel || !b->rows) {
        buf_free(b);
        return anvil__nomem(err);
    }
    return ANVIL_OK;
}

/* Softmax of one token's router logits, its top k and their weights. */
static void route(const anvil_model *m, const float *logits, uint32_t *sel, float *w) {
    const uint32_t ne = m->n_expert, k = m->n_expert_used;
    float p[256];
    float max = -INFINITY;
    for (uint32_t i = 0; i < ne; ++i) max = logits[i] > max ? logits[i] : max;
    double sum = 0.0;
    for (uint32_t i = 0; i < ne; ++i) {
        p[i] = expf(logits[i] - max);
        sum += (double)p[i];
    }
    const float inv = (float)(1.0 / sum);
    for (uint32_t i = 0; i < ne; ++i) p[i] *= inv;
    for (uint32_t j = 0; j < k; ++j) {
        uint32_t best = UINT32_MAX;
        for (uint32_t i = 0; i < ne; ++i) {
            int used = 0;
            for (uint32_t u = 0; u < j; ++u) used |= sel[u] == i;
            if (!used && (best == UINT32_MAX || p[i] > p[best])) best = i;
        }
        sel[j] = best;
        w[j] = p[best];
    }
    float s = 0.0f;
    for (uint32_t j = 0; j < k; ++j) s += w[j];
    s = s < 6.103515625e-5f ? 6.103515625e-5f : s;
    for (uint32_t j = 0; j < k; ++j) {
        w[j] /= s;
        if (m->expert_weights_scale != 0.0f && m->expert_weights_scale != 1.0f) w[j] *= m->expert_weights_scale;
    }
}

/* Expert x on the tokens routed to it: SwiGLU, down, times the weight, into their slots. */
static int run_expert(anvil_model *m, const mdl_layer *L, uint32_t x, const float *h, size_t n, moe_buf *b,
                      anvil_error *err) {
    const size_t e = m->info.n_embd, k = m->n_expert_used, f = m->n_ff_exp;
    size_t cnt = 0;
    for (size_t t = 0; t < n * k; ++t) {
        if (b->sel[t] == x) b->rows[cnt++] = t;
    }
    if (cnt == 0) return ANVIL_OK;
    for (size_t r = 0; r < cnt; ++r) memcpy(b->xb + r * e, h + (b->rows[r] / k) * e, e * sizeof(float));
    int rc = mdl_matmul(m, &L->gate_exps[x], b->xb, cnt, b->ga, NULL, err);
    if (rc == ANVIL_OK) rc = mdl_matmul(m, &L->up_exps[x], b->xb, cnt, b->ub, NULL, err);
    if (rc != ANVIL_OK) return rc;
    for (size_t i = 0; i < cnt * f; ++i) {
        const float g = b->ga[i];
        b->ga[i] = g / (1.0f + expf(-g)) * b->ub[i];
    }
    rc = mdl_matmul(m, &L->down_exps[x], b->ga, cnt, b->db, NULL, err);
    if (rc != ANVIL_OK) return rc;
    for (size_t r = 0; r < cnt; ++r) {
        const float wt = b->w[b->rows[r]];
        float *dst = b->slots + b->rows[r] * e;
        for (size_t i = 0; i < e; ++i) dst[i] = b->db[r * e + i] * wt;
    }
    return ANVIL_OK;
}

int mdl_moe_ffn(anvil_model *m, const mdl_layer *L, const float *h, size_t n, float *out, anvil_error *err) {
    const size_t e = m->info.n_embd, k = m->n_expert_used;
    moe_buf b;
    int rc = buf_alloc(m, n, &b, err);
    if (rc != ANVIL_OK) return rc;
    rc = mdl_matmul(m, &L->gate_inp, h, n, b.logits, NULL, err);
    for (size_t t = 0; rc == ANVIL_OK && t < n; ++t) route(m, b.logits + t * m->n_expert, b.sel + t * k, b.w + t * k);
    for (uint32_t x = 0; rc == ANVIL_OK && x < m->n_expert; ++x) rc = run_expert(m, L, x, h, n, &b, err);
    for (size_t t = 0; rc == ANVIL_OK && t < n; ++t) {
        float *o = out + t * e;
        memcpy(o, b.slots + t * k * e, e * sizeof(float));
        for (size_t j = 1; j < k; ++j) {
            const float *s = b.slots + (t * k + j) * e;
            for (size_t i = 0; i < e; ++i) o[i] += s[i];
        }
    }
    buf_free(&b);
    return rc;
}
