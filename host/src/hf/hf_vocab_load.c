/* SPDX-License-Identifier: MIT */
/*
 * hf_vocab_load: hf_vocab_load/write/free (hf_vocab.h). Picks the
 * path convert_hf_to_gguf.py's set_vocab takes for the architecture
 * (LlamaModel.set_vocab: SentencePiece, else LlamaHfVocab, else gpt2, then
 * the CodeLlama and Granite tails; Qwen2Model.set_vocab: SentencePiece, else
 * gpt2; Gemma2Model/Gemma3Model.set_vocab: SentencePiece + no space prefix)
 * and replays the KV list into an anvil_gguf_writer.
 */
#include "hf_vocab_internal.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

static int load_json_if_file(const char *dir, const char *name, char **path, anvil_json_value **out, int required,
                             anvil_error *err) {
    *path = hf_path_join(dir, name);
    if (*path == NULL) return anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory");
    if (!hv_is_file(*path)) {
        if (!required) return ANVIL_OK;
        return anvil__error_set(err, ANVIL_E_NOT_FOUND, "%s is missing: a Hugging Face checkpoint folder has one",
                                *path);
    }
    int rc = anvil__json_tree_load(*path, out, err);
    if (rc == ANVIL_OK && (*out)->kind != ANVIL_JSON_OBJECT_BEGIN) {
        rc = anvil__error_set(err, ANVIL_E_FORMAT, "%s: expected a JSON object at the top, found %s", *path,
                              anvil__json_event_what((*out)->kind));
    }
    return rc;
}

static int read_vocab_size(hv_load *l, anvil_error *err) {
    const anvil_json_value *j = hv_hparam(l, "vocab_size");
    if (anvil__json_is_null(j)) return ANVIL_OK;
    if (anvil__json_i64(j, &l->vocab_size) != 0 || l->vocab_size < 0 || l->vocab_size > INT32_MAX) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s: vocab_size must be an integer in 0..2^31-1; fix config.json", l->config_path);
    }
    l->has_vocab_size = 1;
    return ANVIL_OK;
}

static int open_files(hv_load *l, anvil_error *err) {
    int rc = load_json_if_file(l->dir, "config.json", &l->config_path, &l->config, 1, err);
    if (rc == ANVIL_OK) rc = read_vocab_size(l, err);
    if (rc == ANVIL_OK) {
        rc = load_json_if_file(l->dir, "tokenizer_config.json", &l->tcfg_path, &l->tcfg, 0, err);
    }
    if (rc == ANVIL_OK) rc = load_json_if_file(l->dir, "tokenizer.json", &l->tok_path, &l->tok, 0, err);
    return rc;
}

/* LlamaModel.set_vocab's head: tokenizer_config.json's add_prefix_space, and
 * the tokenizer classes the converter sends elsewhere. */
static int llama_head(hv_load *l, anvil_error *err) {
    char *tekken = hf_path_join(l->dir, "tekken.json");
    if (tekken == NULL) return anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory");
    const int mistral_tok = hv_is_file(tekken) && l->tok == NULL;
    free(tekken);
    if (mistral_tok) {
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                "%s: a Mistral tekken.json tokenizer (no tokenizer.json) is not supported "
                                "by anvil convert; use convert_hf_to_gguf.py",
                                l->dir);
    }
    if (l->tcfg == NULL) return ANVIL_OK;
    const anvil_json_value *aps = anvil__json_get(l->tcfg, "add_prefix_space");
    if (!anvil__json_is_null(aps)) {
        if (aps->kind != ANVIL_JSON_TRUE && aps->kind != ANVIL_JSON_FALSE) {
            return anvil__error_set(err, ANVIL_E_FORMAT, "%s: add_prefix_space must be true or false", l->tcfg_path);
        }
        int rc = hv_set_bool(l->v, "tokenizer.ggml.add_space_prefix", aps->kind == ANVIL_JSON_TRUE, err);
        if (rc != ANVIL_OK) return rc;
    }
    if (hv_str_is(anvil__json_get(l->tcfg, "tokenizer_class"), "HybridDNATokenizer")) {
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED, "%s: HybridDNATokenizer is not supported by anvil convert",
                                l->tcfg_path);
    }
    return ANVIL_OK;
}

/* hparams.get("vocab_size", 32000) == n, as Python compares numbers. */
static int vocab_size_is(const hv_load *l, double n) {
    const anvil_json_value *j = hv_hparam(l, "vocab_size");
    if (j == NULL) return n == 32000.0;
    return anvil__json_is_number(j) && anvil__json_f64(j) == n;
}

static int llama_tail(hv_load *l, anvil_error *err) {
    if (vocab_size_is(l, 32016.0)) { /* CodeLlama */
        static const char *const types[] = { "prefix", "suffix", "middle", "eot" };
        static const int64_t ids[] = { 32007, 32008, 32009, 32010 };
        hv_special_opts o = { .types = types, .n_types = 4, .extra_types = types, .extra_ids = ids, .n_extra = 4 };
        int rc = hv_special_vocab(l, &o, err);
        if (rc != ANVIL_OK) return rc;
    }
    if (vocab_size_is(l, 49152.0)) { /* Granite small models */
        return hv_set_bool(l->v, "tokenizer.ggml.add_bos_token", 0, err);
    }
    return ANVIL_OK;
}

/* Gemma2Model.set_vocab / Gemma3Model.set_vocab: _set_vocab_sentencepiece
 * then add_space_prefix false. Gemma 2 has no other path (the converter
 * fails without tokenizer.model); Gemma 3 falls back to gpt2. */
static int gemma_paths(hv_load *l, anvil_error *err) {
    char *model = hf_path_join(l->dir, "tokenizer.model");
    if (model == NULL) return anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory");
    const int has_spm = hv_is_file(model);
    int rc = ANVIL_OK;
    if (!has_spm && l->is_gemma == 2) {
        rc = anvil__error_set(err, ANVIL_E_NOT_FOUND,
                              "%s is missing: Gemma 2's vocabulary is read from its SentencePiece model (as "
                              "convert_hf_to_gguf.py does); add the model's tokenizer.model",
                              model);
    }
    free(model);
    if (rc != ANVIL_OK) return rc;
    if (!has_spm) return hv_gpt2_vocab(l, err);
    rc = hv_spm_vocab(l, err);
    if (rc == ANVIL_OK) rc = hv_set_bool(l->v, "tokenizer.ggml.add_space_prefix", 0, err);
    return rc;
}

static int run_paths(hv_load *l, anvil_error *err) {
    if (l->is_gemma) return gemma_paths(l, err);
    if (l->is_glm) return hv_gpt2_vocab(l, err);
    if (l->is_llama == 2) return hv_phi3_vocab(l, err);
    int rc = l->is_llama ? llama_head(l, err) : ANVIL_OK;
    if (rc != ANVIL_OK) return rc;
    char *model = hf_path_join(l->dir, "tokenizer.model");
    if (model == NULL) return anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory");
    const int has_spm = hv_is_file(model);
    free(model);
    if (has_spm) {
        rc = hv_spm_vocab(l, err);
    } else {
        int llama_hf = 0;
        if (l->is_llama && l->tok != NULL) rc = hv_bpe_is_llama_hf(l, &llama_hf, err);
        if (rc == ANVIL_OK) rc = llama_hf ? hv_llama_hf_vocab(l, err) : hv_gpt2_vocab(l, err);
    }
    if (rc == ANVIL_OK && l->is_llama) rc = llama_tail(l, err);
    return rc;
}

static int arch_is(const char *arch, int *is_llama, int *is_gemma, int *is_glm, anvil_error *err) {
    if (arch != NULL && strcmp(arch, "Glm4MoeForCausalLM") == 0) {
        *is_glm = 1; /* Glm4MoeModel._set_vocab_glm: gpt2 with GLM's special ids */
        return ANVIL_OK;
    }
    if (arch != NULL && strcmp(arch, "Phi3ForCausalLM") == 0) {
        *is_llama = 2; /* Phi3MiniModel's own set_vocab */
        return ANVIL_OK;
    }
    if (arch != NULL && (strcmp(arch, "Gemma2ForCausalLM") == 0 || strcmp(arch, "Gemma3ForCausalLM") == 0)) {
        *is_gemma = arch[5] == '2' ? 2 : 3;
        return ANVIL_OK;
    }
    if (arch != NULL && (strcmp(arch, "LlamaForCausalLM") == 0 || strcmp(arch, "MistralForCausalLM") == 0)) {
        *is_llama = 1;
        return ANVIL_OK;
    }
    /* GptOssModel: _set_vocab_gpt2, as Qwen's when there is no tokenizer.model */
    if (arch != NULL && (strcmp(arch, "Qwen2ForCausalLM") == 0 || strcmp(arch, "Qwen3ForCausalLM") == 0 ||
                         strcmp(arch, "GptOssForCausalLM") == 0)) {
        *is_llama = 0;
        return ANVIL_OK;
    }
    return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                            "tokenizer of architecture %s: anvil convert supports LlamaForCausalLM, "
                            "MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma2ForCausalLM, "
                            "Gemma3ForCausalLM, Phi3ForCausalLM, GptOssForCausalLM and Glm4MoeForCausalLM",
                            arch != NULL ? arch : "(none)");
}

int hf_vocab_load(const char *hf_dir, const char *arch, anvil__hf_vocab **out, anvil_error *err) {
    *out = NULL;
    hv_load l;
    memset(&l, 0, sizeof l);
    int rc = arch_is(arch, &l.is_llama, &l.is_gemma, &l.is_glm, err);
    if (rc != ANVIL_OK) return rc;
    l.v = calloc(1, sizeof *l.v);
    if (l.v == NULL) return anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory");
    l.dir = hf_dir;
    rc = open_files(&l, err);
    if (rc == ANVIL_OK) rc = run_paths(&l, err);
    anvil__json_free(l.config);
    anvil__json_free(l.tok);
    anvil__json_free(l.tcfg);
    free(l.config_path);
    free(l.tok_path);
    free(l.tcfg_path);
    if (rc != ANVIL_OK) {
        hf_vocab_free(l.v);
        return rc;
    }
    *out = l.v;
    return ANVIL_OK;
}

static int write_one(const hv_kv *kv, anvil_gguf_writer *w, anvil_error *err) {
    switch (kv->type) {
    case ANVIL_GGUF_TYPE_U32: return anvil_gguf_writer_set_u32(w, kv->key, kv->u, err);
    case ANVIL_GGUF_TYPE_BOOL: return anvil_gguf_writer_set_bool(w, kv->key, (int)kv->u, err);
    case ANVIL_GGUF_TYPE_STRING: return anvil_gguf_writer_set_string_n(w, kv->key, kv->s.ptr, kv->s.len, err);
    default: break;
    }
    if (kv->elem == ANVIL_GGUF_TYPE_STRING) {
        return anvil_gguf_writer_set_str_array(w, kv->key, kv->strs, kv->count, err);
    }
    return anvil_gguf_writer_set_array(w, kv->key, kv->elem, kv->nums, kv->count, err);
}

int hf_vocab_write(const anvil__hf_vocab *v, anvil_gguf_writer *w, anvil_error *err) {
    for (size_t i = 0; i < v->n_kvs; ++i) {
        const int rc = write_one(&v->kvs[i], w, err);
        if (rc != ANVIL_OK) return rc;
    }
    return ANVIL_OK;
}

void hf_vocab_free(anvil__hf_vocab *v) {
    if (v == NULL) return;
    free(v->kvs);
    free(v->tokens);
    free(v->scores);
    free(v->types);
    free(v->merges);
    hv_arena_free(&v->arena);
    free(v);
}

uint64_t hf_vocab_count(const anvil__hf_vocab *v) { return v->n_tokens; }

const char *hf_vocab_kind(const anvil__hf_vocab *v) { return v->kind != NULL ? v->kind : ""; }

const char *hf_vocab_pre(const anvil__hf_vocab *v) { return v->pre != NULL ? v->pre : ""; }
