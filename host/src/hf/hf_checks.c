/* SPDX-License-Identifier: MIT */
/*
 * hf_checks: what a planned conversion must hold before anything is
 * encoded or written, and which files of a folder an output must not
 * replace.
 *
 * hf_check_plan refuses, naming what is missing: a plan with no tensors
 * (an empty model.safetensors, an empty weight_map), a tensor with a
 * dimension of 0 (its rows cannot be encoded: q8_0 would divide by its
 * column count), a generated tensor that is not finite (rope_freqs.weight
 * from a rope_scaling.factor of 1e400), and an incomplete model: token_embd
 * and output_norm, and in every layer below num_hidden_layers the
 * architecture's attention tensors, its norms and either the dense FFN or
 * the experts' (router and stacked experts), and no two tensors mapped to
 * one name. Names are looked up in a sorted copy: O(n log n).
 *
 * anvil_hf_output_check (anvil/hf.h) refuses an output that is one of the
 * files a conversion of the folder reads: config.json, the index, every
 * *.safetensors, the tokenizer and chat-template files, generation_config,
 * the model card, modules.json (anvil_output_check compares them).
 *
 * hf_check_vocab_size bounds config.json's vocab_size by the token
 * embedding present (convert pads the tokenizer to it).
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/hf.h"
#include "error.h"
#include "hf_checks.h"

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int has(char *const *sorted, size_t n, const char *name) {
    return bsearch(&name, sorted, n, sizeof *sorted, cmp_name) != NULL;
}

static int check_dims(const hf_folder *f, const hf_out_tensor *t, anvil_error *err) {
    for (uint32_t d = 0; d < t->n_dims; ++d) {
        if (t->ne[d] != 0) continue;
        const char *file = t->src >= 0 ? f->part_names[f->tensors[t->src].part] : "config.json";
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s/%s: tensor \"%s\" (%s) has a dimension of 0: it holds no values and cannot "
                                "be converted; the checkpoint is damaged or config.json does not fit it",
                                f->dir, file, t->src >= 0 ? f->tensors[t->src].name : t->name, t->name);
    }
    for (uint64_t i = 0; t->generated != NULL && i < t->n_elements; ++i) {
        if (isfinite(t->generated[i])) continue;
        return anvil__error_set(err, ANVIL_E_NONFINITE,
                                "%s/config.json: the rope scaling values give %s in \"%s\" (element %llu): "
                                "rope_scaling's factor, low/high_freq_factor and "
                                "original_max_position_embeddings must be finite numbers of a usable size",
                                f->dir, isnan(t->generated[i]) ? "NaN" : "Inf", t->name, (unsigned long long)i);
    }
    return ANVIL_OK;
}

static int missing(const hf_folder *f, const char *name, uint64_t layer, uint64_t n_blocks, anvil_error *err) {
    if (layer == UINT64_MAX) {
        return anvil__error_set(err, ANVIL_E_NOT_FOUND,
                                "%s: the checkpoint has no tensor that becomes %s: it is incomplete (a shard "
                                "missing or left out of the index?); re-download it",
                                f->dir, name);
    }
    return anvil__error_set(err, ANVIL_E_NOT_FOUND,
                            "%s: layer %llu has no tensor that becomes %s, but config.json gives %llu layers "
                            "(num_hidden_layers): the checkpoint is incomplete (a shard missing or left out of "
                            "the index?); re-download it",
                            f->dir, (unsigned long long)layer, name, (unsigned long long)n_blocks);
}

/* The first of names[] that layer b lacks, or NULL. */
static const char *layer_lacks(char *const *sorted, size_t n, uint64_t b, const char *const *names, char *buf,
                               size_t cap) {
    for (size_t i = 0; names[i] != NULL; ++i) {
        snprintf(buf, cap, "blk.%llu.%s", (unsigned long long)b, names[i]);
        if (!has(sorted, n, buf)) return buf;
    }
    return NULL;
}

static int check_layers(const hf_arch *a, const hf_folder *f, char *const *sorted, size_t n, uint64_t n_blocks,
                        anvil_error *err) {
    static const char *const attn[] = { "attn_norm.weight",
                                        "attn_q.weight",
                                        "attn_k.weight",
                                        "attn_v.weight",
                                        "attn_output.weight",
                                        "ffn_norm.weight",
                                        NULL };
    /* Phi3 keeps q/k/v and gate/up fused (attn_qkv, ffn_up) */
    static const char *const attn_fused[] = { "attn_norm.weight", "attn_qkv.weight", "attn_output.weight",
                                              "ffn_norm.weight", NULL };
    /* GLM-4.5 (glm4moe): post_attention_layernorm is post_attention_norm */
    static const char *const attn_glm[] = { "attn_norm.weight",
                                            "attn_q.weight",
                                            "attn_k.weight",
                                            "attn_v.weight",
                                            "attn_output.weight",
                                            "post_attention_norm.weight",
                                            NULL };
    static const char *const dense_fused[] = { "ffn_up.weight", "ffn_down.weight", NULL };
    static const char *const qk_norm[] = { "attn_q_norm.weight", "attn_k_norm.weight", NULL };
    static const char *const dense[] = { "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight", NULL };
    static const char *const moe[] = { "ffn_gate_inp.weight", "ffn_gate_exps.weight", "ffn_up_exps.weight",
                                       "ffn_down_exps.weight", NULL };
    static const char *const global[] = { "token_embd.weight", "output_norm.weight", NULL };
    /* gpt-oss: GptOssModel's layer (post_attention_norm, sinks, experts) */
    static const char *const gptoss[] = {
        "attn_norm.weight",     "attn_q.weight",      "attn_k.weight",        "attn_v.weight",
        "attn_output.weight",   "attn_sinks.weight",  "ffn_gate_inp.weight",  "post_attention_norm.weight",
        "ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight", "ffn_gate_inp.bias",
        "ffn_gate_exps.bias",   "ffn_up_exps.bias",   "ffn_down_exps.bias",   NULL
    };
    for (size_t i = 0; global[i] != NULL; ++i) {
        if (!has(sorted, n, global[i])) return missing(f, global[i], UINT64_MAX, n_blocks, err);
    }
    /* Qwen3.5, Qwen3-Next: hf_qwen35_plan checked their linear and full attention layers;
     * --mtp: the main layers are left out on purpose (hf_mtp.c) */
    if (a->id == HF_ARCH_QWEN35 || a->id == HF_ARCH_QWEN35MOE || a->id == HF_ARCH_QWEN3NEXT ||
        f->mtp_mode == HF_MTP_ONLY)
        return ANVIL_OK;
    /* DeepSeek's MLA (q_a/q_b or q alone, not checked: either layout) */
    static const char *const attn_mla[] = { "attn_norm.weight",      "attn_kv_a_mqa.weight",
                                            "attn_kv_a_norm.weight", "attn_k_b.weight",
                                            "attn_v_b.weight",       "attn_output.weight",
                                            "ffn_norm.weight",       NULL };
    const int mla = a->id == HF_ARCH_DEEPSEEK2;
    const int qk = a->id == HF_ARCH_QWEN3 || a->id == HF_ARCH_QWEN3MOE;
    const int fused = a->id == HF_ARCH_PHI3;
    char buf[96], buf2[96];
    for (uint64_t b = 0; b < n_blocks; ++b) {
        if (a->id == HF_ARCH_GPTOSS) {
            const char *lack = layer_lacks(sorted, n, b, gptoss, buf, sizeof buf);
            if (lack != NULL) return missing(f, lack, b, n_blocks, err);
            continue;
        }
        const char *const *want = mla ? attn_mla : fused ? attn_fused : a->id == HF_ARCH_GLM4MOE ? attn_glm : attn;
        const char *lack = layer_lacks(sorted, n, b, want, buf, sizeof buf);
        if (lack == NULL && qk) lack = layer_lacks(sorted, n, b, qk_norm, buf, sizeof buf);
        if (lack == NULL) {
            /* a MoE model may keep dense layers (mlp_only_layers, decoder_sparse_step) */
            const int is_moe = hf_arch_is_moe(a) || mla || a->id == HF_ARCH_GLM4MOE;
            lack = layer_lacks(sorted, n, b, is_moe ? moe : fused ? dense_fused : dense, buf, sizeof buf);
            if (lack != NULL && is_moe && layer_lacks(sorted, n, b, dense, buf2, sizeof buf2) == NULL) lack = NULL;
        }
        if (lack != NULL) return missing(f, lack, b, n_blocks, err);
    }
    return ANVIL_OK;
}

int hf_check_plan(const hf_arch *a, const hf_folder *f, const hf_out_tensor *ts, size_t n, anvil_error *err) {
    size_t n_src = 0;
    for (size_t i = 0; i < n; ++i) n_src += ts[i].src >= 0 || ts[i].pieces != NULL;
    if (n_src == 0) {
        return anvil__error_set(err, ANVIL_E_NOT_FOUND,
                                "%s holds no tensors to convert (an empty model.safetensors or weight_map?): "
                                "re-download the checkpoint",
                                f->dir);
    }
    for (size_t i = 0; i < n; ++i) {
        const int rc = check_dims(f, &ts[i], err);
        if (rc != ANVIL_OK) return rc;
    }
    uint64_t n_blocks = 0;
    int rc = hf_arch_block_count(f, &n_blocks, err);
    if (rc != ANVIL_OK) return rc;
    char **sorted = malloc((n + 1) * sizeof *sorted);
    if (sorted == NULL) return anvil__nomem(err);
    for (size_t i = 0; i < n; ++i) sorted[i] = (char *)ts[i].name;
    qsort(sorted, n, sizeof *sorted, cmp_name);
    for (size_t i = 1; i < n && rc == ANVIL_OK; ++i) {
        if (strcmp(sorted[i - 1], sorted[i]) == 0)
            rc = anvil__error_set(err, ANVIL_E_DUPLICATE, "%s: two tensors map to %s", f->dir, sorted[i]);
    }
    if (rc == ANVIL_OK) rc = check_layers(a, f, sorted, n, n_blocks, err);
    free(sorted);
    return rc;
}

/* ---- outputs that would replace an input ------------------------------------ */

static int is_input_name(const char *n) {
    static const char *const names[] = {
        "config.json",
        "model.safetensors.index.json",
        "generation_config.json",
        "tokenizer.json",
        "tokenizer.model",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "added_tokens.json",
        "merges.txt",
        "vocab.json",
        "tekken.json",
        "chat_template.jinja",
        "chat_template.json",
        "README.md",
        "modules.json",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
        if (strcmp(n, names[i]) == 0) return 1;
    }
    const size_t l = strlen(n), s = strlen(".safetensors");
    return l > s && strcmp(n + l - s, ".safetensors") == 0;
}

/* Every file of dir (and of dir/additional_chat_templates when top) that a
 * conversion reads, checked against out. */
static int check_folder(const char *dir, const char *out, int top, anvil_error *err) {
    DIR *d = opendir(dir);
    if (d == NULL) return ANVIL_OK; /* the reader reports the folder itself */
    int rc = ANVIL_OK;
    for (struct dirent *e; rc == ANVIL_OK && (e = readdir(d)) != NULL;) {
        const int sub = top && strcmp(e->d_name, "additional_chat_templates") == 0;
        if (!sub && top && !is_input_name(e->d_name)) continue;
        if (e->d_name[0] == '.' && !top) continue;
        const size_t a = strlen(dir), b = strlen(e->d_name);
        char *p = malloc(a + b + 2);
        if (p == NULL) {
            rc = anvil__nomem(err);
            break;
        }
        memcpy(p, dir, a);
        p[a] = '/';
        memcpy(p + a + 1, e->d_name, b + 1);
        const char *one = p;
        rc = sub ? check_folder(p, out, 0, err) : anvil_output_check(out, &one, 1, err);
        free(p);
    }
    closedir(d);
    return rc;
}

int anvil_hf_output_check(const char *hf_dir, const char *out, anvil_error *err) {
    if (hf_dir == NULL || out == NULL) return ANVIL_OK;
    return check_folder(hf_dir, out, 1, err);
}

/* ---- vocab_size bounded by the tensors present ------------------------------ */

int hf_check_vocab_size(const hf_folder *f, anvil_error *err) {
    int64_t v = 0;
    const anvil_json_value *j = anvil__json_get(f->config, "vocab_size");
    if (j == NULL || anvil__json_i64(j, &v) != 0 || v <= 0) return ANVIL_OK; /* the vocab reader's message */
    const hf_src_tensor *embd = NULL;
    for (size_t i = 0; i < f->n_tensors && embd == NULL; ++i) {
        if (strcmp(f->tensors[i].name, "model.embed_tokens.weight") == 0) embd = &f->tensors[i];
    }
    /* More rows than vocab_size is a layout the converter handles (Gemma 3
     * cuts the embedding to vocab_size); fewer would pad the tokenizer. */
    if (embd != NULL && embd->st->rank == 2 && embd->st->shape[0] < (uint64_t)v) {
        return anvil__error_set(
            err, ANVIL_E_FORMAT,
            "%s/config.json: vocab_size %lld, but %s/%s's model.embed_tokens.weight has only %llu "
            "rows: the tokenizer would be padded to a vocabulary the weights do not have; fix "
            "vocab_size or re-download the checkpoint",
            f->dir, (long long)v, f->dir, f->part_names[embd->part], (unsigned long long)embd->st->shape[0]);
    }
    if (embd == NULL && v > HF_MAX_VOCAB) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s/config.json: vocab_size %lld is over %d and no model.embed_tokens.weight "
                                "confirms it: refused (it would write that many padding tokens)",
                                f->dir, (long long)v, HF_MAX_VOCAB);
    }
    return ANVIL_OK;
}
