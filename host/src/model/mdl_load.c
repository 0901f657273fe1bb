/* SPDX-License-Identifier: MIT */
/*
 * Opening a model: the GGUF mapped, the architecture's hyper-parameters
 * read as llama.cpp's loader reads them ({arch}.* keys, llama.cpp's
 * defaults where a key is optional), every weight checked for its shape
 * and prepared for anvil_matmul, the small vectors (norms, biases, rope
 * factors) read to f32. Hostile files: every shape is checked against the
 * hyper-parameters before any pointer is used; a missing tensor or key is
 * named in the error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "model_internal.h"

static const char *const supported = "llama (dense or Mixtral-style MoE), qwen2, qwen3, qwen3moe";

static int get_u32(const anvil_model *m, const char *suffix, uint32_t def, int required, uint32_t *out,
                   anvil_error *err) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", m->info.arch, suffix);
    if (anvil_gguf_find_kv(m->g, key) == NULL) {
        if (required) return anvil__error_set(err, ANVIL_E_NOT_FOUND, "the model has no %s (a required key)", key);
        *out = def;
        return ANVIL_OK;
    }
    uint64_t v = 0;
    int rc = anvil_gguf_get_u64(m->g, key, &v, err);
    if (rc != ANVIL_OK) return rc;
    if (v > (1u << 24))
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s = %llu is out of range", key, (unsigned long long)v);
    *out = (uint32_t)v;
    return ANVIL_OK;
}

static int get_f32(const anvil_model *m, const char *suffix, float def, float *out, anvil_error *err) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", m->info.arch, suffix);
    *out = def;
    if (anvil_gguf_find_kv(m->g, key) == NULL) return ANVIL_OK;
    double v = 0;
    int rc = anvil_gguf_get_f64(m->g, key, &v, err);
    if (rc == ANVIL_OK) *out = (float)v;
    return rc;
}

/* A tensor of the given shape (ne0 = cols, ne1 = rows; rows 1 for vectors). */
static int find_tensor(const anvil_model *m, const char *name, uint64_t cols, uint64_t rows, int required,
                       const anvil_gguf_tensor **out, anvil_error *err) {
    *out = anvil_gguf_find_tensor(m->g, name);
    if (*out == NULL) {
        return required ? anvil__error_set(err, ANVIL_E_NOT_FOUND, "the model has no tensor %s", name) : ANVIL_OK;
    }
    const anvil_gguf_tensor *t = *out;
    if (t->ne[0] != cols || t->ne[1] != rows || t->ne[2] != 1 || t->ne[3] != 1) {
        return anvil__error_set(
            err, ANVIL_E_FORMAT, "tensor %s is %llu x %llu x %llu x %llu; the hyper-parameters say %llu x %llu", name,
            (unsigned long long)t->ne[0], (unsigned long long)t->ne[1], (unsigned long long)t->ne[2],
            (unsigned long long)t->ne[3], (unsigned long long)cols, (unsigned long long)rows);
    }
    return ANVIL_OK;
}

int mdl_read_vector(anvil_model *m, const char *name, uint64_t want, int required, float **out, anvil_error *err) {
    *out = NULL;
    const anvil_gguf_tensor *t = NULL;
    int rc = find_tensor(m, name, want, 1, required, &t, err);
    if (rc != ANVIL_OK || t == NULL) return rc;
    float *v = malloc((size_t)want * sizeof *v);
    if (v == NULL) return anvil__nomem(err);
    rc = anvil_decode(m->ctx, t->type, t->data, (size_t)t->n_bytes, v, (size_t)want, err);
    if (rc != ANVIL_OK) {
        anvil__error_prefix(err, "%s", name);
        free(v);
        return rc;
    }
    *out = v;
    return ANVIL_OK;
}

static int load_mat(anvil_model *m, const char *name, uint64_t cols, uint64_t rows, mdl_mat *out, anvil_error *err) {
    int rc = find_tensor(m, name, cols, rows, 1, &out->t, err);
    if (rc != ANVIL_OK) return rc;
    out->rows = rows;
    out->cols = cols;
    rc = anvil_weights_prepare(m->ctx, out->t->type, out->t->data, (size_t)rows, (size_t)cols,
                               ANVIL_WEIGHTS_TRANSIENT, &out->w, err);
    if (rc != ANVIL_OK) anvil__error_prefix(err, "%s", name);
    return rc;
}

static const char *name(char *buf, size_t size, uint32_t il, const char *s) {
    snprintf(buf, size, "blk.%u.%s", il, s);
    return buf;
}

/* A 3-D expert tensor (cols x rows x n_expert), each expert's slice prepared. */
static int load_expert_mats(anvil_model *m, const char *nm, uint64_t cols, uint64_t rows, mdl_mat **out,
                            anvil_error *err) {
    const anvil_gguf_tensor *t = anvil_gguf_find_tensor(m->g, nm);
    if (t == NULL) return anvil__error_set(err, ANVIL_E_NOT_FOUND, "the model has no tensor %s", nm);
    if (t->ne[0] != cols || t->ne[1] != rows || t->ne[2] != m->n_expert || t->ne[3] != 1) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "tensor %s is %llu x %llu x %llu; expected %llu x %llu x %u", nm,
                                (unsigned long long)t->ne[0], (unsigned long long)t->ne[1],
                                (unsigned long long)t->ne[2], (unsigned long long)cols, (unsigned long long)rows,
                                m->n_expert);
    }
    *out = calloc(m->n_expert, sizeof **out);
    if (*out == NULL) return anvil__nomem(err);
    for (uint32_t x = 0; x < m->n_expert; ++x) {
        mdl_mat *mm = &(*out)[x];
        mm->t = t;
        mm->rows = rows;
        mm->cols = cols;
        mm->expert = x;
        mm->is_expert = 1;
        const char *data = (const char *)t->data + (size_t)x * (size_t)rows * (size_t)t->row_bytes;
        int rc = anvil_weights_prepare(m->ctx, t->type, data, (size_t)rows, (size_t)cols, ANVIL_WEIGHTS_TRANSIENT,
                                       &mm->w, err);
        if (rc != ANVIL_OK) {
            anvil__error_prefix(err, "%s expert %u", nm, x);
            return rc;
        }
    }
    return ANVIL_OK;
}

static int load_experts(anvil_model *m, uint32_t il, anvil_error *err) {
    mdl_layer *L = &m->layers[il];
    const uint64_t e = m->info.n_embd, f = m->n_ff_exp;
    char n[96];
    int rc = load_mat(m, name(n, sizeof n, il, "ffn_gate_inp.weight"), e, m->n_expert, &L->gate_inp, err);
    if (rc == ANVIL_OK)
        rc = load_expert_mats(m, name(n, sizeof n, il, "ffn_gate_exps.weight"), e, f, &L->gate_exps, err);
    if (rc == ANVIL_OK) rc = load_expert_mats(m, name(n, sizeof n, il, "ffn_up_exps.weight"), e, f, &L->up_exps, err);
    if (rc == ANVIL_OK)
        rc = load_expert_mats(m, name(n, sizeof n, il, "ffn_down_exps.weight"), f, e, &L->down_exps, err);
    return rc;
}

static void free_experts(const anvil_model *m, mdl_layer *L) {
    mdl_mat *sets[] = { L->gate_exps, L->up_exps, L->down_exps };
    for (size_t s = 0; s < 3; ++s) {
        for (uint32_t x = 0; sets[s] != NULL && x < m->n_expert; ++x) anvil_weights_free(sets[s][x].w);
        free(sets[s]);
    }
    anvil_weights_free(L->gate_inp.w);
}

static int load_layer(anvil_model *m, uint32_t il, anvil_error *err) {
    mdl_layer *L = &m->layers[il];
    const anvil_model_info *in = &m->info;
    const uint64_t e = in->n_embd, hd = in->head_dim, nq = (uint64_t)in->n_head * hd,
                   nkv = (uint64_t)in->n_head_kv * hd;
    char n[96];
#define NAME(s) (snprintf(n, sizeof n, "blk.%u.%s", il, s), n)
    int rc = mdl_read_vector(m, NAME("attn_norm.weight"), e, 1, &L->attn_norm, err);
    if (rc == ANVIL_OK) rc = mdl_read_vector(m, NAME("ffn_norm.weight"), e, 1, &L->ffn_norm, err);
    if (rc == ANVIL_OK) rc = mdl_read_vector(m, NAME("attn_q_norm.weight"), hd, 0, &L->q_norm, err);
    if (rc == ANVIL_OK) rc = mdl_read_vector(m, NAME("attn_k_norm.weight"), hd, 0, &L->k_norm, err);
    if (rc == ANVIL_OK) rc = mdl_read_vector(m, NAME("attn_q.bias"), nq, 0, &L->bq, err);
    if (rc == ANVIL_OK) rc = mdl_read_vector(m, NAME("attn_k.bias"), nkv, 0, &L->bk, err);
    if (rc == ANVIL_OK) rc = mdl_read_vector(m, NAME("attn_v.bias"), nkv, 0, &L->bv, err);
    if (rc == ANVIL_OK) rc = load_mat(m, NAME("attn_q.weight"), e, nq, &L->wq, err);
    if (rc == ANVIL_OK) rc = load_mat(m, NAME("attn_k.weight"), e, nkv, &L->wk, err);
    if (rc == ANVIL_OK) rc = load_mat(m, NAME("attn_v.weight"), e, nkv, &L->wv, err);
    if (rc == ANVIL_OK) rc = load_mat(m, NAME("attn_output.weight"), nq, e, &L->wo, err);
#undef NAME
    if (rc == ANVIL_OK && m->n_expert > 0) return load_experts(m, il, err);
    if (rc == ANVIL_OK) rc = load_mat(m, name(n, sizeof n, il, "ffn_gate.weight"), e, in->n_ff, &L->gate, err);
    if (rc == ANVIL_OK) rc = load_mat(m, name(n, sizeof n, il, "ffn_up.weight"), e, in->n_ff, &L->up, err);
    if (rc == ANVIL_OK) rc = load_mat(m, name(n, sizeof n, il, "ffn_down.weight"), in->n_ff, e, &L->down, err);
    return rc;
}

static int read_arch(anvil_model *m, anvil_error *err) {
    anvil_gguf_str s;
    if (anvil_gguf_find_kv(m->g, "general.architecture") == NULL) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "the file has no general.architecture: not a model");
    }
    int rc = anvil_gguf_get_str(m->g, "general.architecture", &s, err);
    if (rc != ANVIL_OK) return rc;
    if (s.len >= sizeof m->info.arch) s.len = sizeof m->info.arch - 1;
    memcpy(m->info.arch, s.ptr, s.len);
    m->info.arch[s.len] = '\0';
    if (strcmp(m->info.arch, "llama") == 0) {
        m->rope_type = MDL_ROPE_NORM;
    } else if (strcmp(m->info.arch, "qwen2") == 0 || strcmp(m->info.arch, "qwen3") == 0 ||
               strcmp(m->info.arch, "qwen3moe") == 0) {
        m->rope_type = MDL_ROPE_NEOX;
    } else {
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED, "architecture '%s' is not supported (supported: %s)",
                                m->info.arch, supported);
    }
    return ANVIL_OK;
}

/* tokenizer.ggml.bos_token_id and llama.cpp's add_bos rule. */
static void read_bos(anvil_model *m) {
    anvil_error e;
    uint64_t bos = 0;
    m->info.bos = -1;
    if (anvil_gguf_find_kv(m->g, "tokenizer.ggml.bos_token_id") != NULL &&
        anvil_gguf_get_u64(m->g, "tokenizer.ggml.bos_token_id", &bos, &e) == ANVIL_OK && bos < m->info.n_vocab) {
        m->info.bos = (int32_t)bos;
    }
    anvil_gguf_str s = { "", 0 }, pre = { "", 0 };
    if (anvil_gguf_find_kv(m->g, "tokenizer.ggml.model") != NULL)
        anvil_gguf_get_str(m->g, "tokenizer.ggml.model", &s, &e);
    if (anvil_gguf_find_kv(m->g, "tokenizer.ggml.pre") != NULL)
        anvil_gguf_get_str(m->g, "tokenizer.ggml.pre", &pre, &e);
    int add = (s.len == 5 && memcmp(s.ptr, "llama", 5) == 0) ||
              (pre.len == 9 && memcmp(pre.ptr, "llama-bpe", 9) == 0);
    int v = 0;
    if (anvil_gguf_find_kv(m->g, "tokenizer.ggml.add_bos_token") != NULL &&
        anvil_gguf_get_bool(m->g, "tokenizer.ggml.add_bos_token", &v, &e) == ANVIL_OK) {
        add = v;
    }
    m->info.add_bos = add && m->info.bos >= 0;
}

static int read_hparams(anvil_model *m, anvil_error *err) {
    anvil_model_info *in = &m->info;
    int rc = get_u32(m, "expert_count", 0, 0, &m->n_expert, err);
    if (rc == ANVIL_OK) rc = get_u32(m, "expert_used_count", 0, m->n_expert > 0, &m->n_expert_used, err);
    if (rc == ANVIL_OK) rc = get_u32(m, "embedding_length", 0, 1, &in->n_embd, err);
    if (rc == ANVIL_OK) rc = get_u32(m, "block_count", 0, 1, &in->n_layer, err);
    if (rc == ANVIL_OK) rc = get_u32(m, "feed_forward_length", 0, m->n_expert == 0, &in->n_ff, err);
    if (rc == ANVIL_OK) rc = get_u32(m, "expert_feed_forward_length", in->n_ff, 0, &m->n_ff_exp, err);
    if (rc == ANVIL_OK) rc = get_f32(m, "expert_weights_scale", 0.0f, &m->expert_weights_scale, err);
    if (rc == ANVIL_OK && (m->n_expert > 256 || m->n_expert_used > m->n_expert ||
                           (m->n_expert > 0 && (m->n_expert_used == 0 || m->n_ff_exp == 0)))) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s: %u experts, %u used, expert n_ff %u: not a supported MoE (1 <= used <= experts "
                                "<= 256)",
                                in->arch, m->n_expert, m->n_expert_used, m->n_ff_exp);
    }
    if (rc == ANVIL_OK && in->n_ff == 0) in->n_ff = m->n_ff_exp;
    if (rc == ANVIL_OK) rc = get_u32(m, "attention.head_count", 0, 1, &in->n_head, err);
    if (rc == ANVIL_OK) rc = get_u32(m, "attention.head_count_kv", in->n_head, 0, &in->n_head_kv, err);
    if (rc == ANVIL_OK) rc = get_u32(m, "context_length", 0, 0, &in->n_ctx_train, err);
    if (rc != ANVIL_OK) return rc;
    if (in->n_embd == 0 || in->n_layer == 0 || in->n_ff == 0 || in->n_head == 0 || in->n_head_kv == 0 ||
        in->n_head % in->n_head_kv != 0 || in->n_embd % in->n_head != 0) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s: impossible hyper-parameters (n_embd %u, n_head %u, n_head_kv %u, n_layer %u, "
                                "n_ff %u)",
                                in->arch, in->n_embd, in->n_head, in->n_head_kv, in->n_layer, in->n_ff);
    }
    rc = get_u32(m, "attention.key_length", in->n_embd / in->n_head, 0, &in->head_dim, err);
    uint32_t vlen = 0;
    if (rc == ANVIL_OK) rc = get_u32(m, "attention.value_length", in->head_dim, 0, &vlen, err);
    if (rc == ANVIL_OK) rc = get_u32(m, "rope.dimension_count", in->head_dim, 0, &m->n_rot, err);
    if (rc == ANVIL_OK) rc = get_f32(m, "attention.layer_norm_rms_epsilon", 1e-5f, &m->eps, err);
    if (rc == ANVIL_OK) rc = get_f32(m, "rope.freq_base", 10000.0f, &m->freq_base, err);
    float factor = 0.0f;
    if (rc == ANVIL_OK) rc = get_f32(m, "rope.scaling.factor", 0.0f, &factor, err);
    if (rc != ANVIL_OK) return rc;
    if (vlen != in->head_dim || in->head_dim == 0 || in->head_dim % 2 || m->n_rot > in->head_dim || m->n_rot % 2) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s: head size %u / value size %u / rope dims %u not supported",
                                in->arch, in->head_dim, vlen, m->n_rot);
    }
    char key[128];
    snprintf(key, sizeof key, "%s.rope.scaling.type", in->arch);
    anvil_gguf_str st = { "none", 4 };
    if (anvil_gguf_find_kv(m->g, key) != NULL) anvil_gguf_get_str(m->g, key, &st, err);
    if (st.len == 4 && memcmp(st.ptr, "yarn", 4) == 0) {
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED, "%s: YaRN rope scaling is not supported", in->arch);
    }
    m->freq_scale = factor > 0.0f && !(st.len == 4 && memcmp(st.ptr, "none", 4) == 0) ? 1.0f / factor : 1.0f;
    return ANVIL_OK;
}

static int load_globals(anvil_model *m, anvil_error *err) {
    const anvil_gguf_tensor *te = anvil_gguf_find_tensor(m->g, "token_embd.weight");
    if (te == NULL) return anvil__error_set(err, ANVIL_E_NOT_FOUND, "the model has no token_embd.weight");
    if (te->ne[1] == 0 || te->ne[1] > INT32_MAX)
        return anvil__error_set(err, ANVIL_E_FORMAT, "token_embd.weight: bad vocabulary size");
    m->info.n_vocab = (uint32_t)te->ne[1];
    int rc = find_tensor(m, "token_embd.weight", m->info.n_embd, m->info.n_vocab, 1, &m->tok_embd, err);
    if (rc == ANVIL_OK) rc = mdl_read_vector(m, "output_norm.weight", m->info.n_embd, 1, &m->output_norm, err);
    if (rc == ANVIL_OK) rc = mdl_read_vector(m, "rope_freqs.weight", m->n_rot / 2, 0, &m->rope_freqs, err);
    if (rc != ANVIL_OK) return rc;
    const char *out_name = anvil_gguf_find_tensor(m->g, "output.weight") ? "output.weight" : "token_embd.weight";
    return load_mat(m, out_name, m->info.n_embd, m->info.n_vocab, &m->output, err);
}

ANVIL_API int anvil_model_open(anvil_model **out, anvil_ctx *ctx, const char *path, const anvil_model_opts *opts,
                               anvil_error *err) {
    anvil__error_clear(err);
    if (out == NULL || ctx == NULL || path == NULL)
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_model_open: NULL argument");
    *out = NULL;
    anvil_model *m = calloc(1, sizeof *m);
    if (m == NULL) return anvil__nomem(err);
    m->ctx = anvil_ctx_retain(ctx);
    m->info.size = sizeof m->info;
    if (opts != NULL && opts->size >= offsetof(anvil_model_opts, kv_f16) + sizeof opts->kv_f16)
        m->kv_f16 = opts->kv_f16 != 0;
    int rc = anvil_gguf_open(&m->g, path, ctx, 0, err);
    if (rc == ANVIL_OK) rc = read_arch(m, err);
    if (rc == ANVIL_OK) rc = read_hparams(m, err);
    if (rc == ANVIL_OK && anvil_gguf_tensor_count(m->g) == 0) {
        rc = anvil__error_set(err, ANVIL_E_FORMAT, "the file holds no tensors (a vocab-only file?): nothing to run");
    }
    if (rc == ANVIL_OK) rc = load_globals(m, err);
    if (rc == ANVIL_OK) {
        read_bos(m);
        m->layers = calloc(m->info.n_layer, sizeof *m->layers);
        if (m->layers == NULL) rc = anvil__nomem(err);
    }
    for (uint32_t il = 0; rc == ANVIL_OK && il < m->info.n_layer; ++il) rc = load_layer(m, il, err);
    if (rc == ANVIL_OK) m->info.type = m->layers[0].wq.t->type;
    if (rc != ANVIL_OK) {
        anvil__error_prefix(err, "%s", path);
        anvil_model_close(m);
        return rc;
    }
    *out = m;
    return ANVIL_OK;
}

static void free_mat(mdl_mat *x) { anvil_weights_free(x->w); }

ANVIL_API void anvil_model_close(anvil_model *m) {
    if (m == NULL) return;
    for (uint32_t il = 0; m->layers != NULL && il < m->info.n_layer; ++il) {
        mdl_layer *L = &m->layers[il];
        free(L->attn_norm);
        free(L->ffn_norm);
        free(L->q_norm);
        free(L->k_norm);
        free(L->bq);
        free(L->bk);
        free(L->bv);
        mdl_mat *mats[] = { &L->wq, &L->wk, &L->wv, &L->wo, &L->gate, &L->up, &L->down };
        for (size_t i = 0; i < sizeof mats / sizeof mats[0]; ++i) free_mat(mats[i]);
        free_experts(m, L);
    }
    free(m->layers);
    free_mat(&m->output);
    free(m->output_norm);
    free(m->rope_freqs);
    anvil_gguf_close(m->g);
    anvil_ctx_close(m->ctx);
    free(m);
}

ANVIL_API int anvil_model_get_info(const anvil_model *m, anvil_model_info *out) {
    if (m == NULL || out == NULL || out->size < sizeof out->size) return ANVIL_E_INVALID_ARG;
    const size_t n = out->size < sizeof m->info ? out->size : sizeof m->info;
    memcpy((char *)out + sizeof out->size, (const char *)&m->info + sizeof out->size, n - sizeof out->size);
    return ANVIL_OK;
}
