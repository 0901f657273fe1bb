/* SPDX-License-Identifier: MIT */
/*
 * hf_vocab_phi3: Phi3MiniModel.set_vocab of convert_hf_to_gguf.py
 * (conversion/phi.py), which is not LlamaModel's:
 *   - tokenizer_config.json's tokenizer_class GPT2Tokenizer (Phi-4): the
 *     byte-level BPE path (_set_vocab_gpt2, hv_gpt2_vocab); a
 *     tokenizer_config.json without tokenizer_class stops the converter
 *     (KeyError) and is refused here;
 *   - else tokenizer.model (required): config.json's vocab_size entries
 *     (absent: the piece count), "[PAD<i>]" / -10000 / UNUSED first, then
 *     each piece (type UNKNOWN, CONTROL, UNUSED, BYTE, else NORMAL; text
 *     as stored, U+2581 kept); added_tokens.json ids below vocab_size as
 *     USER_DEFINED / -1000; then tokenizer_config.json's
 *     added_tokens_decoder and tokenizer.json's added_tokens, each entry
 *     USER_DEFINED / -1000, CONTROL when "special" is true (no
 *     does_token_look_special, no U+2581 rewriting, unlike LlamaModel);
 *   - model "llama", pre "default", tokens/scores/token_type, then
 *     SpecialVocab with n_vocab = the token count (hv_llama_finish).
 * No tokenizer.ggml.add_space_prefix (LlamaModel's head is not run). An id
 * of an added_tokens_decoder or added_tokens entry outside the vocabulary
 * (the converter's IndexError, or Python's index from the end) is an error
 * naming the file and the id.
 */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hf_vocab_internal.h"

static int phi3_size(hv_load *l, size_t n_pieces, uint64_t *out, anvil_error *err) {
    const anvil_json_value *j = hv_hparam(l, "vocab_size");
    int64_t vs = (int64_t)n_pieces;
    if (j != NULL && (anvil__json_i64(j, &vs) != 0 || vs < 0 || vs > INT32_MAX)) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s: vocab_size must be an integer in 0..2^31-1",
                                l->config_path);
    }
    if ((uint64_t)vs < n_pieces) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s: vocab_size %lld is below the %zu pieces of tokenizer.model "
                                "(convert_hf_to_gguf.py fails on it too); fix vocab_size",
                                l->config_path, (long long)vs, n_pieces);
    }
    *out = (uint64_t)vs;
    return ANVIL_OK;
}

static int piece_type(int t) {
    return t == HV_UNKNOWN || t == HV_CONTROL || t == HV_UNUSED || t == HV_BYTE ? t : HV_NORMAL;
}

/* added_tokens.json: {"text": id}; ids past the vocabulary are skipped. */
static int added_json(hv_load *l, anvil_error *err) {
    char *path = hf_path_join(l->dir, "added_tokens.json");
    if (path == NULL) return anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory");
    anvil_json_value *j = NULL;
    int rc = hv_is_file(path) ? anvil__json_tree_load(path, &j, err) : ANVIL_OK;
    if (rc == ANVIL_OK && j != NULL && j->kind != ANVIL_JSON_OBJECT_BEGIN) {
        rc = anvil__error_set(err, ANVIL_E_FORMAT, "%s: expected an object {\"token\": id}", path);
    }
    for (size_t i = 0; rc == ANVIL_OK && j != NULL && i < j->n_items; ++i) {
        int64_t id = 0;
        const char *k = j->items[i]->key;
        char q[256];
        if (anvil__json_i64(j->items[i], &id) != 0 || id < 0) {
            rc = anvil__error_set(err, ANVIL_E_FORMAT, "%s: the id of %s is not a non-negative integer", path,
                                  hv_quote(q, sizeof q, k, strlen(k)));
        } else if ((uint64_t)id < l->v->n_tokens) {
            rc = hv_put_token(l->v, (uint64_t)id, k, strlen(k), -1000.0f, HV_USER_DEFINED, 0, err);
        }
    }
    anvil__json_free(j);
    free(path);
    return rc;
}

/* One added-token entry: id, "content", "special". */
static int put_added(hv_load *l, const char *path, const char *where, int64_t id, const anvil_json_value *e,
                     anvil_error *err) {
    const anvil_json_value *c = anvil__json_get(e, "content");
    if (c == NULL || c->kind != ANVIL_JSON_STRING) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s: %s has no string \"content\"", path, where);
    }
    if (id < 0 || (uint64_t)id >= l->v->n_tokens) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s: %s has id %lld, outside the %llu tokens of config.json's vocab_size "
                                "(%s); fix vocab_size or the id",
                                path, where, (long long)id, (unsigned long long)l->v->n_tokens,
                                id < 0 ? "convert_hf_to_gguf.py would overwrite a token counted from the end"
                                       : "convert_hf_to_gguf.py fails on it too");
    }
    const int type = hf_truthy(anvil__json_get(e, "special")) ? HV_CONTROL : HV_USER_DEFINED;
    return hv_put_token(l->v, (uint64_t)id, c->text, c->len, -1000.0f, type, 0, err);
}

static int added_decoder(hv_load *l, anvil_error *err) {
    const anvil_json_value *d = l->tcfg != NULL ? anvil__json_get(l->tcfg, "added_tokens_decoder") : NULL;
    if (d == NULL || d->kind != ANVIL_JSON_OBJECT_BEGIN) return ANVIL_OK;
    for (size_t i = 0; i < d->n_items; ++i) {
        const anvil_json_value *e = d->items[i];
        char where[320], q[256];
        snprintf(where, sizeof where, "added_tokens_decoder[%s]", hv_quote(q, sizeof q, e->key, strlen(e->key)));
        char *end = NULL;
        const long long id = strtoll(e->key, &end, 10);
        if (e->key[0] == '\0' || *end != '\0') {
            return anvil__error_set(err, ANVIL_E_FORMAT, "%s: %s: the key is not an integer id", l->tcfg_path, where);
        }
        const int rc = put_added(l, l->tcfg_path, where, id, e, err);
        if (rc != ANVIL_OK) return rc;
    }
    return ANVIL_OK;
}

static int added_tokens(hv_load *l, anvil_error *err) {
    const anvil_json_value *a = l->tok != NULL ? anvil__json_get(l->tok, "added_tokens") : NULL;
    if (a == NULL || a->kind != ANVIL_JSON_ARRAY_BEGIN) return ANVIL_OK;
    for (size_t i = 0; i < a->n_items; ++i) {
        char where[64];
        snprintf(where, sizeof where, "added_tokens[%zu]", i);
        int64_t id = 0;
        if (anvil__json_i64(anvil__json_get(a->items[i], "id"), &id) != 0) {
            return anvil__error_set(err, ANVIL_E_FORMAT, "%s: %s has no integer \"id\"", l->tok_path, where);
        }
        const int rc = put_added(l, l->tok_path, where, id, a->items[i], err);
        if (rc != ANVIL_OK) return rc;
    }
    return ANVIL_OK;
}

static int spm_tokens(hv_load *l, anvil_error *err) {
    char *buf = NULL;
    hv_spm_piece *pcs = NULL;
    size_t n = 0;
    uint64_t vs = 0;
    int rc = hv_spm_read(l->dir, &buf, &pcs, &n, err);
    if (rc == ANVIL_OK) rc = phi3_size(l, n, &vs, err);
    if (rc == ANVIL_OK) rc = hv_alloc_tokens(l->v, vs, 1, err);
    for (uint64_t i = 0; rc == ANVIL_OK && i < vs; ++i) {
        char *t = hv_printf(&l->v->arena, "[PAD%llu]", (unsigned long long)i);
        if (t == NULL) rc = anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory");
        else rc = hv_put_token(l->v, i, t, strlen(t), -10000.0f, HV_UNUSED, 0, err);
    }
    for (size_t i = 0; rc == ANVIL_OK && i < n; ++i) {
        rc = hv_put_token(l->v, i, pcs[i].text, pcs[i].len, pcs[i].score, piece_type(pcs[i].type), 0, err);
    }
    free(pcs);
    free(buf);
    return rc;
}

int hv_phi3_vocab(hv_load *l, anvil_error *err) {
    if (l->tcfg != NULL) {
        const anvil_json_value *cls = anvil__json_get(l->tcfg, "tokenizer_class");
        if (cls == NULL) {
            return anvil__error_set(err, ANVIL_E_FORMAT,
                                    "%s: no \"tokenizer_class\" (convert_hf_to_gguf.py's Phi3 class reads it "
                                    "and stops without it); add \"tokenizer_class\": \"LlamaTokenizer\"",
                                    l->tcfg_path);
        }
        if (hv_str_is(cls, "GPT2Tokenizer")) return hv_gpt2_vocab(l, err);
    }
    char *model = hf_path_join(l->dir, "tokenizer.model");
    if (model == NULL) return anvil__error_set(err, ANVIL_E_NOMEM, "tokenizer: out of memory");
    const int has = hv_is_file(model);
    int rc = has ? ANVIL_OK
                 : anvil__error_set(err, ANVIL_E_NOT_FOUND,
                                    "%s is missing: a Phi-3 checkpoint's SentencePiece tokenizer (the converter "
                                    "requires it too)",
                                    model);
    free(model);
    if (rc == ANVIL_OK) rc = spm_tokens(l, err);
    if (rc == ANVIL_OK) rc = added_json(l, err);
    if (rc == ANVIL_OK) rc = added_decoder(l, err);
    if (rc == ANVIL_OK) rc = added_tokens(l, err);
    if (rc == ANVIL_OK) rc = hv_llama_finish(l, "spm", err);
    return rc;
}
