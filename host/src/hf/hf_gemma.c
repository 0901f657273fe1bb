/* SPDX-License-Identifier: MIT */
/*
 * hf_gemma: Gemma2ForCausalLM and Gemma3ForCausalLM (text) as
 * convert_hf_to_gguf.py's Gemma2Model and Gemma3Model (conversion/gemma.py
 * of llama.cpp de3ff815) write them.
 *
 * KVs: Gemma2Model.set_gguf_parameters alone (context, embedding, blocks,
 * feed-forward, heads, kv heads, rms eps, key/value length, file type,
 * attention and final logit soft-capping, sliding window: each required
 * in config.json; no rope key). Gemma3Model: TextModel's keys first (rope
 * scaling and rope.freq_base of "full_attention", rope.freq_base_swa of
 * "sliding_attention" or rope_local_base_freq), then its own, which
 * overwrite the earlier ones in place (gguf-py keeps the KVs in a dict) or
 * come after them: context (default 131072), heads (8), rms eps (1e-6),
 * key/value length (256), rope.freq_base (1e6), final soft-capping when
 * set, sliding window unless sliding_window_pattern is 1, kv heads (4).
 *
 * Tensors: the names of gguf-py's TensorNameMap for gemma2/gemma3 (the
 * generated table, hf_table.h); every "*norm.weight" gets 1 added (the
 * checkpoints store them centred on zero), rounded to the source dtype as
 * PyTorch adds; Gemma 2 drops lm_head.weight; Gemma 3 cuts
 * model.embed_tokens to the vocabulary (config.json's vocab_size, else the
 * pieces of tokenizer.model). Shapes are checked against config.json;
 * unknown tensors, a Gemma 3 without tokenizer.model (the converter reads
 * tokenizer.json then, a path anvil does not take), text_config,
 * attn_logit_softcapping on Gemma 3 (the converter asserts it absent) and
 * MoE or mrope keys are refused by name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hf_internal.h"
#include "hf_table.h"
#include "hf_vocab.h"

int hf_arch_is_gemma(const hf_arch *a) { return a->id == HF_ARCH_GEMMA2 || a->id == HF_ARCH_GEMMA3; }

/* ---- the KVs, with Python dict semantics --------------------------------- */

enum { GK_U32, GK_F32, GK_STR, GK_BOOL };

typedef struct gkv {
    char key[96];
    int type;
    uint32_t u;
    float f;
    const char *s;
} gkv;

typedef struct gkvs {
    gkv kv[48];
    size_t n;
    const char *arch;
    const char *cfg_path;
    const anvil_json_value *cfg;
} gkvs;

/* Set arch.suffix (or the key itself when suffix has a '.general' form),
 * in place when present, else at the end. */
static gkv *gk_slot(gkvs *k, const char *suffix) {
    char key[96];
    if (strncmp(suffix, "general.", 8) == 0) snprintf(key, sizeof key, "%s", suffix);
    else snprintf(key, sizeof key, "%s.%s", k->arch, suffix);
    for (size_t i = 0; i < k->n; ++i)
        if (strcmp(k->kv[i].key, key) == 0) return &k->kv[i];
    if (k->n == sizeof k->kv / sizeof k->kv[0]) return NULL;
    gkv *s = &k->kv[k->n++];
    memset(s, 0, sizeof *s);
    snprintf(s->key, sizeof s->key, "%s", key);
    return s;
}

static void gk_u32(gkvs *k, const char *suffix, uint32_t v) {
    gkv *s = gk_slot(k, suffix);
    if (s == NULL) return;
    s->type = GK_U32;
    s->u = v;
}

static void gk_f32(gkvs *k, const char *suffix, double v) {
    gkv *s = gk_slot(k, suffix);
    if (s == NULL) return;
    s->type = GK_F32;
    s->f = (float)v;
}

static void gk_str(gkvs *k, const char *suffix, const char *v) {
    gkv *s = gk_slot(k, suffix);
    if (s == NULL) return;
    s->type = GK_STR;
    s->s = v;
}

static int gk_write(const gkvs *k, anvil_gguf_writer *w, anvil_error *err) {
    int rc = ANVIL_OK;
    for (size_t i = 0; i < k->n && rc == ANVIL_OK; ++i) {
        const gkv *v = &k->kv[i];
        switch (v->type) {
        case GK_U32: rc = anvil_gguf_writer_set_u32(w, v->key, v->u, err); break;
        case GK_F32: rc = anvil_gguf_writer_set_f32(w, v->key, v->f, err); break;
        case GK_STR: rc = anvil_gguf_writer_set_string(w, v->key, v->s, err); break;
        default: rc = anvil_gguf_writer_set_bool(w, v->key, (int)v->u, err); break;
        }
    }
    return rc;
}

/* ---- config.json values --------------------------------------------------- */

/* The first of keys present in cfg (a null value counts), as find_hparam. */
static const anvil_json_value *first_of(const anvil_json_value *cfg, const char *const *keys) {
    for (; *keys != NULL; ++keys) {
        const anvil_json_value *v = anvil__json_get(cfg, *keys);
        if (v != NULL) return v;
    }
    return NULL;
}

static int as_u32(const gkvs *k, const anvil_json_value *v, const char *key, uint32_t *out, anvil_error *err) {
    int64_t x = 0;
    if (v == NULL || anvil__json_i64(v, &x) != 0 || x < 0 || x > (int64_t)UINT32_MAX) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s: \"%s\" must be a whole number in [0, 2^32) for %s (%s); fix config.json",
                                k->cfg_path, key, k->arch, v == NULL ? "it is missing" : "it is not");
    }
    *out = (uint32_t)x;
    return ANVIL_OK;
}

static int as_num(const gkvs *k, const anvil_json_value *v, const char *key, double *out, anvil_error *err) {
    if (v == NULL || !anvil__json_is_number(v)) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s: \"%s\" must be a number for %s (%s); fix config.json",
                                k->cfg_path, key, k->arch, v == NULL ? "it is missing" : "it is not");
    }
    *out = anvil__json_f64(v);
    return ANVIL_OK;
}

/* A required u32 (Python: hparams[key]). */
static int req_u32(gkvs *k, const char *suffix, const char *key, anvil_error *err) {
    uint32_t x = 0;
    int rc = as_u32(k, anvil__json_get(k->cfg, key), key, &x, err);
    if (rc == ANVIL_OK) gk_u32(k, suffix, x);
    return rc;
}

static int req_f32(gkvs *k, const char *suffix, const char *key, anvil_error *err) {
    double x = 0;
    int rc = as_num(k, anvil__json_get(k->cfg, key), key, &x, err);
    if (rc == ANVIL_OK) gk_f32(k, suffix, x);
    return rc;
}

/* hparams.get(key, dflt): the default only when the key is absent. */
static int get_u32(gkvs *k, const char *suffix, const char *key, uint32_t dflt, anvil_error *err) {
    const anvil_json_value *v = anvil__json_get(k->cfg, key);
    if (v == NULL) {
        gk_u32(k, suffix, dflt);
        return ANVIL_OK;
    }
    return req_u32(k, suffix, key, err);
}

static int get_f32(gkvs *k, const char *suffix, const char *key, double dflt, anvil_error *err) {
    const anvil_json_value *v = anvil__json_get(k->cfg, key);
    if (v == NULL) {
        gk_f32(k, suffix, dflt);
        return ANVIL_OK;
    }
    return req_f32(k, suffix, key, err);
}

/* find_hparam(keys, optional=True): written when the first present key is
 * not null. */
static int opt_u32(gkvs *k, const char *suffix, const char *const *keys, anvil_error *err) {
    const anvil_json_value *v = first_of(k->cfg, keys);
    if (anvil__json_is_null(v)) return ANVIL_OK;
    uint32_t x = 0;
    int rc = as_u32(k, v, v->key ? v->key : keys[0], &x, err);
    if (rc == ANVIL_OK) gk_u32(k, suffix, x);
    return rc;
}

static int opt_f32(gkvs *k, const char *suffix, const anvil_json_value *v, const char *key, anvil_error *err) {
    if (anvil__json_is_null(v)) return ANVIL_OK;
    double x = 0;
    int rc = as_num(k, v, key, &x, err);
    if (rc == ANVIL_OK) gk_f32(k, suffix, x);
    return rc;
}

/* ---- Gemma 2 ---------------------------------------------------------------- */

static int gemma2_kvs(gkvs *k, uint64_t blocks, uint32_t ftype, anvil_error *err) {
    int rc = req_u32(k, "context_length", "max_position_embeddings", err);
    if (rc == ANVIL_OK) rc = req_u32(k, "embedding_length", "hidden_size", err);
    if (rc == ANVIL_OK) gk_u32(k, "block_count", (uint32_t)blocks);
    if (rc == ANVIL_OK) rc = req_u32(k, "feed_forward_length", "intermediate_size", err);
    if (rc == ANVIL_OK) rc = req_u32(k, "attention.head_count", "num_attention_heads", err);
    const int has_kv = anvil__json_get(k->cfg, "num_key_value_heads") != NULL;
    if (rc == ANVIL_OK)
        rc = req_u32(k, "attention.head_count_kv", has_kv ? "num_key_value_heads" : "num_attention_heads", err);
    if (rc == ANVIL_OK) rc = req_f32(k, "attention.layer_norm_rms_epsilon", "rms_norm_eps", err);
    if (rc == ANVIL_OK) rc = req_u32(k, "attention.key_length", "head_dim", err);
    if (rc == ANVIL_OK) rc = req_u32(k, "attention.value_length", "head_dim", err);
    if (rc == ANVIL_OK) gk_u32(k, "general.file_type", ftype);
    if (rc == ANVIL_OK) rc = req_f32(k, "attn_logit_softcapping", "attn_logit_softcapping", err);
    if (rc == ANVIL_OK) rc = req_f32(k, "final_logit_softcapping", "final_logit_softcapping", err);
    if (rc == ANVIL_OK) rc = req_u32(k, "attention.sliding_window", "sliding_window", err);
    return rc;
}

/* ---- Gemma 3: TextModel's rope view ----------------------------------------- */

typedef struct rope3 {
    const anvil_json_value *full;  /* "full_attention" object, or the parameters themselves */
    const anvil_json_value *theta; /* full's rope_theta (mirrored from the top level) */
    const anvil_json_value *swa;   /* sliding rope theta, or NULL */
    const char *type;              /* rope_type (mirrored from "type"), or NULL */
    int theta_given;               /* the key exists (Gemma3's .get default otherwise) */
} rope3;

static void rope3_of(const anvil_json_value *cfg, rope3 *r) {
    static const char *const theta_keys[] = { "global_rope_theta", "rope_global_theta", "rope_theta_global",
                                              "rope_theta",        "rotary_emb_base",   NULL };
    static const char *const local_keys[] = { "local_rope_theta", "rope_local_theta",     "rope_theta_local",
                                              "swa_rope_theta",   "rope_local_base_freq", NULL };
    memset(r, 0, sizeof *r);
    const anvil_json_value *p = anvil__json_get(cfg, "rope_parameters");
    if (p == NULL) p = anvil__json_get(cfg, "rope_scaling");
    if (p != NULL && (p->kind != ANVIL_JSON_OBJECT_BEGIN || p->n_items == 0)) p = NULL;
    const anvil_json_value *fa = anvil__json_get(p, "full_attention"), *sa = anvil__json_get(p, "sliding_attention");
    if (fa != NULL || sa != NULL) {
        r->full = fa != NULL ? fa : p;
        r->theta = anvil__json_get(r->full, "rope_theta");
        r->theta_given = r->theta != NULL;
        r->swa = anvil__json_get(sa, "rope_theta");
        r->type = anvil__json_str(anvil__json_get(r->full, "rope_type"));
        return;
    }
    r->full = p;
    r->theta = anvil__json_get(p, "rope_theta");
    r->theta_given = r->theta != NULL;
    if (r->theta == NULL) {
        const anvil_json_value *t = first_of(cfg, theta_keys);
        if (!anvil__json_is_null(t)) {
            r->theta = t;
            r->theta_given = 1;
        }
    }
    const anvil_json_value *l = first_of(cfg, local_keys);
    r->swa = anvil__json_is_null(l) ? NULL : l;
    r->type = anvil__json_str(anvil__json_get(p, "rope_type"));
    if (r->type == NULL) r->type = anvil__json_str(anvil__json_get(p, "type"));
}

static int rope3_scaling(gkvs *k, const rope3 *r, anvil_error *err) {
    if (r->type == NULL) return ANVIL_OK;
    const anvil_json_value *factor = anvil__json_get(r->full, "factor");
    if (strcmp(r->type, "linear") == 0 && !anvil__json_is_null(factor)) {
        gk_str(k, "rope.scaling.type", "linear");
        return opt_f32(k, "rope.scaling.factor", factor, "factor", err);
    }
    if (strcmp(r->type, "yarn") == 0 && !anvil__json_is_null(factor)) {
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                "%s: yarn rope scaling on a Gemma 3 model is not supported by anvil convert; use "
                                "convert_hf_to_gguf.py",
                                k->cfg_path);
    }
    if (strcmp(r->type, "su") == 0 || strcmp(r->type, "longrope") == 0) gk_str(k, "rope.scaling.type", "longrope");
    return ANVIL_OK; /* default, dynamic, llama3, unknown: no key */
}

/* TextModel.set_gguf_parameters for what a Gemma 3 config holds. */
static int gemma3_base(gkvs *k, uint64_t blocks, uint32_t ftype, const rope3 *r, anvil_error *err) {
    static const char *const ctx[] = {
        "max_position_embeddings", "n_ctx", "n_positions", "max_length", "max_sequence_length",
        "model_max_length",        NULL
    };
    static const char *const embd[] = { "hidden_size", "n_embd", "dim", NULL };
    static const char *const ff[] = { "prefix_dense_intermediate_size",
                                      "dense_intermediate_size",
                                      "intermediate_size",
                                      "n_inner",
                                      "hidden_dim",
                                      NULL };
    static const char *const heads[] = { "num_attention_heads", "n_head", "n_heads", NULL };
    static const char *const kvh[] = { "num_key_value_heads", "n_kv_heads", NULL };
    static const char *const rms[] = { "rms_norm_eps", "norm_eps", NULL };
    static const char *const ln[] = { "layer_norm_eps", "layer_norm_epsilon", "norm_epsilon", NULL };
    static const char *const hd[] = { "head_dim", NULL };
    gk_u32(k, "block_count", (uint32_t)blocks);
    int rc = opt_u32(k, "context_length", ctx, err);
    if (rc == ANVIL_OK) rc = opt_u32(k, "embedding_length", embd, err);
    if (rc == ANVIL_OK) rc = opt_u32(k, "feed_forward_length", ff, err);
    if (rc == ANVIL_OK) rc = opt_u32(k, "attention.head_count", heads, err);
    if (rc == ANVIL_OK) rc = opt_u32(k, "attention.head_count_kv", kvh, err);
    const anvil_json_value *causal = anvil__json_get(k->cfg, "is_causal");
    if (rc == ANVIL_OK && causal != NULL && causal->kind == ANVIL_JSON_FALSE) {
        gkv *s = gk_slot(k, "attention.causal");
        if (s != NULL) s->type = GK_BOOL;
    }
    if (rc == ANVIL_OK) rc = rope3_scaling(k, r, err);
    if (rc == ANVIL_OK) rc = opt_f32(k, "rope.freq_base", r->theta, "rope_theta", err);
    if (rc == ANVIL_OK) rc = opt_f32(k, "rope.freq_base_swa", r->swa, "rope_local_base_freq", err);
    if (rc == ANVIL_OK)
        rc = opt_f32(k, "attention.layer_norm_rms_epsilon", first_of(k->cfg, rms), "rms_norm_eps", err);
    if (rc == ANVIL_OK) rc = opt_f32(k, "attention.layer_norm_epsilon", first_of(k->cfg, ln), "layer_norm_eps", err);
    if (rc == ANVIL_OK) rc = opt_u32(k, "attention.key_length", hd, err);
    if (rc == ANVIL_OK) rc = opt_u32(k, "attention.value_length", hd, err);
    gk_u32(k, "general.file_type", ftype);
    return rc;
}

static int gemma3_kvs(gkvs *k, uint64_t blocks, uint32_t ftype, anvil_error *err) {
    rope3 r;
    rope3_of(k->cfg, &r);
    int rc = gemma3_base(k, blocks, ftype, &r, err);
    if (rc == ANVIL_OK) rc = get_u32(k, "context_length", "max_position_embeddings", 131072, err);
    if (rc == ANVIL_OK) rc = get_u32(k, "attention.head_count", "num_attention_heads", 8, err);
    if (rc == ANVIL_OK) rc = get_f32(k, "attention.layer_norm_rms_epsilon", "rms_norm_eps", 1e-6, err);
    if (rc == ANVIL_OK) rc = get_u32(k, "attention.key_length", "head_dim", 256, err);
    if (rc == ANVIL_OK) rc = get_u32(k, "attention.value_length", "head_dim", 256, err);
    if (rc == ANVIL_OK && r.theta_given) rc = opt_f32(k, "rope.freq_base", r.theta, "rope_theta", err);
    if (rc == ANVIL_OK && !r.theta_given) gk_f32(k, "rope.freq_base", 1000000.0);
    if (rc == ANVIL_OK && anvil__json_is_null(r.theta) && r.theta_given) {
        rc = anvil__error_set(err, ANVIL_E_FORMAT, "%s: rope_theta is null; give a number", k->cfg_path);
    }
    const anvil_json_value *fsc = anvil__json_get(k->cfg, "final_logit_softcapping");
    if (rc == ANVIL_OK && !anvil__json_is_null(fsc) && !(anvil__json_is_number(fsc) && anvil__json_f64(fsc) == 0))
        rc = req_f32(k, "final_logit_softcapping", "final_logit_softcapping", err);
    const anvil_json_value *pat = anvil__json_get(k->cfg, "sliding_window_pattern");
    const int pattern_one = anvil__json_is_number(pat) && anvil__json_f64(pat) == 1.0;
    if (rc == ANVIL_OK && !pattern_one) rc = req_u32(k, "attention.sliding_window", "sliding_window", err);
    if (rc == ANVIL_OK) rc = get_u32(k, "attention.head_count_kv", "num_key_value_heads", 4, err);
    return rc;
}

/* What the converter does differently (or anvil does not do) for these
 * classes: an error naming the key. */
static int refuse_gemma(const hf_arch *a, const hf_folder *f, const char *cfg_path, anvil_error *err) {
    static const char *const keys[] = {
        "text_config", "num_local_experts", "num_experts",  "n_routed_experts", "n_group",
        "topk_group",  "score_function",    "scoring_func", "mrope_section",    NULL
    };
    for (size_t i = 0; keys[i] != NULL; ++i) {
        if (!anvil__json_is_null(anvil__json_get(f->config, keys[i]))) {
            return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                    "%s: \"%s\" is not part of a %s text model anvil convert knows; use "
                                    "convert_hf_to_gguf.py",
                                    cfg_path, keys[i], a->hf_name);
        }
    }
    if (a->id == HF_ARCH_GEMMA3 && !anvil__json_is_null(anvil__json_get(f->config, "attn_logit_softcapping"))) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s: attn_logit_softcapping is set, which Gemma 3 does not have "
                                "(convert_hf_to_gguf.py asserts it is null); fix config.json",
                                cfg_path);
    }
    const anvil_json_value *q = anvil__json_get(f->config, "quantization_config");
    if (!anvil__json_is_null(q)) {
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                "%s: a quantized %s checkpoint (quantization_config) is not supported; convert a "
                                "float (F32/F16/BF16) one",
                                cfg_path, a->hf_name);
    }
    if (a->id == HF_ARCH_GEMMA3 && !hf_file_exists(f->dir, "tokenizer.model")) {
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                "%s: no tokenizer.model: convert_hf_to_gguf.py then reads Gemma 3's vocabulary "
                                "from tokenizer.json as byte-level BPE, which anvil convert does not do; add the "
                                "model's tokenizer.model, or use convert_hf_to_gguf.py",
                                f->dir);
    }
    return ANVIL_OK;
}

int hf_gemma_hparams(const hf_arch *a, const hf_folder *f, uint32_t ftype, anvil_gguf_writer *w, anvil_error *err) {
    char cfg_path[4200];
    snprintf(cfg_path, sizeof cfg_path, "%s/config.json", f->dir);
    gkvs *k = calloc(1, sizeof *k);
    if (k == NULL) return anvil__nomem(err);
    k->arch = a->gguf_name;
    k->cfg_path = cfg_path;
    k->cfg = f->config;
    uint64_t blocks = 0;
    int rc = refuse_gemma(a, f, cfg_path, err);
    if (rc == ANVIL_OK) rc = hf_arch_block_count(f, &blocks, err);
    if (rc == ANVIL_OK && blocks > UINT32_MAX) {
        rc = anvil__error_set(err, ANVIL_E_FORMAT, "%s: num_hidden_layers does not fit 32 bits", cfg_path);
    }
    if (rc == ANVIL_OK)
        rc = a->id == HF_ARCH_GEMMA2 ? gemma2_kvs(k, blocks, ftype, err) : gemma3_kvs(k, blocks, ftype, err);
    if (rc == ANVIL_OK) rc = gk_write(k, w, err);
    free(k);
    return rc;
}

/* ---- tensors ---------------------------------------------------------------- */

static uint64_t cfg_u(const hf_folder *f, const char *key, uint64_t dflt) {
    int64_t v = 0;
    const anvil_json_value *j = anvil__json_get(f->config, key);
    if (j == NULL) return dflt;
    return anvil__json_i64(j, &v) == 0 && v > 0 ? (uint64_t)v : 0;
}

/* Rows Gemma3Model keeps of embed_tokens: len(tokens) of
 * _create_vocab_sentencepiece (vocab_size, else the pieces). */
static int gemma3_vocab_rows(const hf_arch *a, const hf_folder *f, uint64_t *out, anvil_error *err) {
    *out = cfg_u(f, "vocab_size", 0);
    if (*out != 0) return ANVIL_OK;
    anvil__hf_vocab *v = NULL;
    int rc = hf_vocab_load(f->dir, a->hf_name, &v, err);
    if (rc == ANVIL_OK) *out = hf_vocab_count(v);
    hf_vocab_free(v);
    return rc;
}

typedef struct gshape {
    const char *base; /* GGUF name after blk.N. */
    uint64_t d0, d1;  /* d0 0: any number of rows */
    size_t nd;
} gshape;

static int check_shape(const hf_arch *a, const hf_folder *f, const hf_src_tensor *s, const char *gguf,
                       anvil_error *err) {
    const int g3 = a->id == HF_ARCH_GEMMA3;
    const uint64_t H = cfg_u(f, "hidden_size", 0), V = cfg_u(f, "vocab_size", 0),
                   F = cfg_u(f, "intermediate_size", 0);
    const uint64_t nh = cfg_u(f, "num_attention_heads", g3 ? 8 : 0);
    const uint64_t nkv = cfg_u(f, "num_key_value_heads", g3 ? 4 : nh), hd = cfg_u(f, "head_dim", g3 ? 256 : 0);
    const gshape t[] = {
        { "token_embd.weight", g3 ? 0 : V, H, 2 },
        { "output.weight", V, H, 2 },
        { "output_norm.weight", H, 0, 1 },
        { "attn_norm.weight", H, 0, 1 },
        { "post_attention_norm.weight", H, 0, 1 },
        { "ffn_norm.weight", H, 0, 1 },
        { "post_ffw_norm.weight", H, 0, 1 },
        { "attn_q.weight", nh * hd, H, 2 },
        { "attn_k.weight", nkv * hd, H, 2 },
        { "attn_v.weight", nkv * hd, H, 2 },
        { "attn_output.weight", H, nh * hd, 2 },
        { "ffn_gate.weight", F, H, 2 },
        { "ffn_up.weight", F, H, 2 },
        { "ffn_down.weight", H, F, 2 },
        { "attn_q_norm.weight", hd, 0, 1 },
        { "attn_k_norm.weight", hd, 0, 1 },
    };
    const char *b = gguf;
    if (strncmp(gguf, "blk.", 4) == 0 && strchr(gguf + 4, '.') != NULL) b = strchr(gguf + 4, '.') + 1;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; ++i) {
        if (strcmp(b, t[i].base) != 0) continue;
        const anvil_st_tensor *st = s->st;
        const int ok = st->rank == t[i].nd && (t[i].d0 == 0 || st->shape[0] == t[i].d0) &&
                       (t[i].nd == 1 || st->shape[1] == t[i].d1);
        if (ok) return ANVIL_OK;
        char got[96];
        size_t o = 0;
        got[o++] = '[';
        for (size_t d = 0; d < st->rank && o < sizeof got - 24; ++d)
            o += (size_t)snprintf(got + o, sizeof got - o, "%s%llu", d ? ", " : "", (unsigned long long)st->shape[d]);
        snprintf(got + o, sizeof got - o, "]");
        char want[64];
        if (t[i].nd == 1) snprintf(want, sizeof want, "[%llu]", (unsigned long long)t[i].d0);
        else if (t[i].d0 == 0) snprintf(want, sizeof want, "[rows, %llu]", (unsigned long long)t[i].d1);
        else snprintf(want, sizeof want, "[%llu, %llu]", (unsigned long long)t[i].d0, (unsigned long long)t[i].d1);
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s/%s: tensor \"%s\" has shape %s, but config.json implies %s; the weights and "
                                "config.json do not belong together",
                                f->dir, f->part_names[s->part], s->name, got, want);
    }
    return ANVIL_OK;
}

static int gemma_tensor(const hf_arch *a, const hf_folder *f, size_t i, uint64_t n_blocks, uint64_t vocab_rows,
                        hf_out_tensor *o, anvil_error *err) {
    const hf_src_tensor *s = &f->tensors[i];
    const anvil_st_tensor *t = s->st;
    if (hf_table_map_tensor(a->gguf_name, s->name, (unsigned long)n_blocks, o->name, sizeof o->name) != 0) {
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                "%s/%s: cannot map tensor \"%s\" to a %s GGUF tensor (convert_hf_to_gguf.py "
                                "refuses it too)",
                                f->dir, f->part_names[s->part], s->name, a->gguf_name);
    }
    if (t->dtype != ANVIL_ST_F32 && t->dtype != ANVIL_ST_F16 && t->dtype != ANVIL_ST_BF16) {
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                "%s/%s: tensor \"%s\" is %s; anvil convert reads Gemma's F32, F16 and BF16 weights",
                                f->dir, f->part_names[s->part], s->name, anvil_st_dtype_name(t->dtype));
    }
    if (t->rank == 0 || t->rank > 4) {
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED, "%s: tensor \"%s\" has %zu dims (GGUF holds 1 to 4)",
                                f->dir, s->name, t->rank);
    }
    int rc = check_shape(a, f, s, o->name, err);
    if (rc != ANVIL_OK) return rc;
    hf_out_fill(f, i, o);
    if (hf_ends_with(s->name, "norm.weight")) o->shift = 1.0f;
    if (a->id == HF_ARCH_GEMMA3 && strstr(s->name, "embed_tokens.weight") != NULL && t->shape[0] > vocab_rows) {
        o->ne[t->rank - 1] = vocab_rows; /* data_torch[:n_vocab_real] */
        o->n_elements = t->n_elements / t->shape[0] * vocab_rows;
    }
    return ANVIL_OK;
}

int hf_gemma_plan(const hf_arch *a, const hf_folder *f, hf_out_tensor **out, size_t *n_out, anvil_error *err) {
    *out = NULL;
    *n_out = 0;
    uint64_t n_blocks = 0, vocab_rows = 0;
    int rc = hf_arch_block_count(f, &n_blocks, err);
    if (rc == ANVIL_OK && a->id == HF_ARCH_GEMMA3) rc = gemma3_vocab_rows(a, f, &vocab_rows, err);
    if (rc != ANVIL_OK) return rc;
    hf_out_tensor *ts = calloc(f->n_tensors + 1, sizeof *ts);
    if (ts == NULL) return anvil__nomem(err);
    size_t n = 0;
    for (size_t i = 0; i < f->n_tensors && rc == ANVIL_OK; ++i) {
        const char *nm = f->tensors[i].name;
        if (hf_src_dropped(nm)) {
            continue;
        }
        if (a->id == HF_ARCH_GEMMA2 && strcmp(nm, "lm_head.weight") == 0) continue; /* filter_tensors */
        rc = gemma_tensor(a, f, i, n_blocks, vocab_rows, &ts[n], err);
        if (rc == ANVIL_OK) n++;
    }
    for (size_t i = 0; i < n && rc == ANVIL_OK; ++i) {
        for (size_t j = 0; j < i; ++j) {
            if (strcmp(ts[i].name, ts[j].name) == 0) {
                rc = anvil__error_set(err, ANVIL_E_DUPLICATE, "%s: two tensors map to %s", f->dir, ts[i].name);
                break;
            }
        }
    }
    if (rc != ANVIL_OK) {
        free(ts);
        return rc;
    }
    *out = ts;
    *n_out = n;
    return ANVIL_OK;
}
