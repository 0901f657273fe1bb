/* SPDX-License-Identifier: MIT */
/*
 * hf_arch: the four architectures convert_hf_to_gguf.py maps to llama and
 * qwen2/qwen3 (LlamaModel, Qwen2Model, Qwen3Model of its conversion/ tree):
 * which config.json keys become which hparams KVs (TextModel and
 * LlamaModel.set_gguf_parameters, same order, same wire types), which
 * checkpoint tensor becomes which GGUF tensor (its TensorNameMap entries for
 * these architectures), llama's Q/K permutation and the Llama 3 rope factors
 * (LlamaModel.generate_extra_tensors, computed in float32 as PyTorch does).
 * Tensors the map does not know are refused by name, as convert refuses
 * them; shapes are checked against config.json.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "file_input.h"
#include "hf_internal.h"
#include "hf_table.h"

/* vocab_as: Qwen2MoeModel and Qwen3MoeModel take TextModel.set_vocab
 * (gpt2 only); hf_convert.c refuses them a tokenizer.model. */
static const hf_arch k_arches[] = {
    { "LlamaForCausalLM", HF_ARCH_LLAMA, "llama", 1, "LlamaForCausalLM" },
    { "MistralForCausalLM", HF_ARCH_LLAMA, "llama", 1, "MistralForCausalLM" },
    { "Qwen2ForCausalLM", HF_ARCH_QWEN2, "qwen2", 0, "Qwen2ForCausalLM" },
    { "Qwen3ForCausalLM", HF_ARCH_QWEN3, "qwen3", 0, "Qwen3ForCausalLM" },
    { "Qwen2MoeForCausalLM", HF_ARCH_QWEN2MOE, "qwen2moe", 0, "Qwen2ForCausalLM" },
    { "Qwen3MoeForCausalLM", HF_ARCH_QWEN3MOE, "qwen3moe", 0, "Qwen3ForCausalLM" },
    { "MixtralForCausalLM", HF_ARCH_MIXTRAL, "llama", 1, "MistralForCausalLM" },
    { "Gemma2ForCausalLM", HF_ARCH_GEMMA2, "gemma2", 0, "Gemma2ForCausalLM" },
    { "Gemma3ForCausalLM", HF_ARCH_GEMMA3, "gemma3", 0, "Gemma3ForCausalLM" },
    { "Phi3ForCausalLM", HF_ARCH_PHI3, "phi3", 0, "Phi3ForCausalLM" },
    { "GptOssForCausalLM", HF_ARCH_GPTOSS, "gpt-oss", 0, "GptOssForCausalLM" },
    /* DeepseekV2Model.set_vocab: TextModel's gpt2 path first */
    { "DeepseekV3ForCausalLM", HF_ARCH_DEEPSEEK2, "deepseek2", 0, "Qwen2ForCausalLM" },
    /* Glm4MoeModel.set_vocab: _set_vocab_glm (gpt2 plus GLM's special ids) */
    { "Glm4MoeForCausalLM", HF_ARCH_GLM4MOE, "glm4moe", 0, "Glm4MoeForCausalLM" },
    /* Qwen3_5TextModel / Qwen3_5MoeTextModel: TextModel.set_vocab (gpt2) */
    { "Qwen3_5ForCausalLM", HF_ARCH_QWEN35, "qwen35", 0, "Qwen2ForCausalLM" },
    { "Qwen3_5MoeForCausalLM", HF_ARCH_QWEN35MOE, "qwen35moe", 0, "Qwen2ForCausalLM" },
    { "Qwen3NextForCausalLM", HF_ARCH_QWEN3NEXT, "qwen3next", 0, "Qwen2ForCausalLM" },
    /* the published checkpoints: their text model (text_config merged, vision tensors dropped) */
    { "Qwen3_5ForConditionalGeneration", HF_ARCH_QWEN35, "qwen35", 0, "Qwen2ForCausalLM" },
    { "Qwen3_5MoeForConditionalGeneration", HF_ARCH_QWEN35MOE, "qwen35moe", 0, "Qwen2ForCausalLM" },
};

int hf_arch_is_moe(const hf_arch *a) {
    return a->id == HF_ARCH_QWEN2MOE || a->id == HF_ARCH_QWEN3MOE || a->id == HF_ARCH_MIXTRAL;
}

int hf_arch_find(const anvil_json_value *config, const char *config_path, const hf_arch **out, anvil_error *err) {
    const anvil_json_value *archs = anvil__json_get(config, "architectures");
    const char *name = NULL;
    if (archs != NULL && archs->kind == ANVIL_JSON_ARRAY_BEGIN && archs->n_items > 0) {
        name = anvil__json_str(archs->items[0]);
    }
    if (name == NULL) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s has no \"architectures\" list naming the model class",
                                config_path);
    }
    for (size_t i = 0; i < sizeof k_arches / sizeof k_arches[0]; ++i) {
        if (strcmp(k_arches[i].hf_name, name) == 0) {
            *out = &k_arches[i];
            return ANVIL_OK;
        }
    }
    /* the converter's registry says what the class would become */
    const hf_table_class *known = hf_table_class_find(name);
    char what[192] = "";
    if (known != NULL)
        snprintf(what, sizeof what, " (convert_hf_to_gguf.py's %s writes it as gguf architecture %s)",
                 known->py_class, known->gguf_arch);
    else snprintf(what, sizeof what, " (convert_hf_to_gguf.py does not register it either)");
    return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                            "%s: architecture %s is not supported%s; anvil convert knows LlamaForCausalLM, "
                            "MistralForCausalLM, MixtralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, "
                            "Qwen2MoeForCausalLM, Qwen3MoeForCausalLM, Gemma2ForCausalLM, "
                            "Gemma3ForCausalLM, Phi3ForCausalLM, GptOssForCausalLM, DeepseekV3ForCausalLM, "
                            "Glm4MoeForCausalLM, Qwen3_5ForCausalLM, Qwen3_5MoeForCausalLM and their "
                            "*ForConditionalGeneration text models (use llama.cpp's "
                            "convert_hf_to_gguf.py for others)",
                            config_path, name, what);
}

/* find_hparam: the first key present (a null value counts as present). */
static const anvil_json_value *find_hparam(const anvil_json_value *cfg, const char *const *keys) {
    for (; *keys != NULL; ++keys) {
        const anvil_json_value *v = anvil__json_get(cfg, *keys);
        if (v != NULL) return v;
    }
    return NULL;
}

static int want_u32(const anvil_json_value *v, const char *key, const char *cfg_path, uint32_t *out,
                    anvil_error *err) {
    int64_t x = 0;
    if (anvil__json_i64(v, &x) != 0 || x < 0 || x > (int64_t)UINT32_MAX) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s: \"%s\" must be a whole number in [0, 2^32), not %s",
                                cfg_path, key, v->text ? v->text : anvil__json_event_what(v->kind));
    }
    *out = (uint32_t)x;
    return ANVIL_OK;
}

static int want_num(const anvil_json_value *v, const char *key, const char *cfg_path, double *out, anvil_error *err) {
    if (!anvil__json_is_number(v)) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s: \"%s\" must be a number, not %s", cfg_path, key,
                                anvil__json_event_what(v->kind));
    }
    *out = anvil__json_f64(v);
    return ANVIL_OK;
}

int hf_arch_block_count(const hf_folder *f, uint64_t *out, anvil_error *err) {
    static const char *const keys[] = { "n_layers", "num_hidden_layers", "n_layer", "num_layers", NULL };
    const anvil_json_value *v = find_hparam(f->config, keys);
    if (v == NULL) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s/config.json: no layer count (num_hidden_layers)", f->dir);
    }
    uint32_t n = 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", f->dir);
    const int rc = want_u32(v, v->key, path, &n, err);
    *out = n;
    return rc;
}

#define CFG_PATH(buf, f) snprintf((buf), sizeof(buf), "%s/config.json", (f)->dir)

/* Optional u32 KV from the first of keys present (null: skipped). */
static int kv_u32_opt(anvil_gguf_writer *w, const char *arch, const char *suffix, const anvil_json_value *cfg,
                      const char *const *keys, const char *cfg_path, anvil_error *err) {
    const anvil_json_value *v = find_hparam(cfg, keys);
    if (anvil__json_is_null(v)) return ANVIL_OK;
    uint32_t x = 0;
    int rc = want_u32(v, v->key, cfg_path, &x, err);
    if (rc != ANVIL_OK) return rc;
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return anvil_gguf_writer_set_u32(w, key, x, err);
}

static int kv_f32_opt(anvil_gguf_writer *w, const char *arch, const char *suffix, const anvil_json_value *v,
                      const char *cfg_path, anvil_error *err) {
    if (anvil__json_is_null(v)) return ANVIL_OK;
    double d = 0;
    int rc = want_num(v, v->key ? v->key : suffix, cfg_path, &d, err);
    if (rc != ANVIL_OK) return rc;
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return anvil_gguf_writer_set_f32(w, key, (float)d, err);
}

/* rope_parameters as TextModel.__init__ builds it: the config's
 * rope_parameters / rope_scaling object (may be absent) with rope_theta
 * mirrored from the top level. Returns the rope_type string or NULL and the
 * theta value. */
typedef struct rope_view {
    const anvil_json_value *params; /* object or NULL */
    const anvil_json_value *theta;  /* number or NULL */
    const char *type;               /* rope_type / type, or NULL */
} rope_view;

static void rope_view_of(const anvil_json_value *cfg, rope_view *r) {
    static const char *const theta_keys[] = { "global_rope_theta", "rope_global_theta", "rope_theta_global",
                                              "rope_theta",        "rotary_emb_base",   NULL };
    const anvil_json_value *p = anvil__json_get(cfg, "rope_parameters");
    if (p == NULL) p = anvil__json_get(cfg, "rope_scaling");
    r->params = (p != NULL && p->kind == ANVIL_JSON_OBJECT_BEGIN && p->n_items > 0) ? p : NULL;
    r->theta = r->params ? anvil__json_get(r->params, "rope_theta") : NULL;
    if (r->theta == NULL) r->theta = find_hparam(cfg, theta_keys);
    r->type = r->params ? anvil__json_str(anvil__json_get(r->params, "rope_type")) : NULL;
    if (r->type == NULL && r->params) r->type = anvil__json_str(anvil__json_get(r->params, "type"));
}

static int rope_scaling_kvs(anvil_gguf_writer *w, const char *arch, const rope_view *r, const char *cfg_path,
                            anvil_error *err) {
    if (r->type == NULL) return ANVIL_OK;
    const anvil_json_value *factor = anvil__json_get(r->params, "factor");
    char key[128];
    int rc = ANVIL_OK;
    const int lin = strcmp(r->type, "linear") == 0, yarn = strcmp(r->type, "yarn") == 0;
    if ((lin || yarn) && !anvil__json_is_null(factor)) {
        snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
        rc = anvil_gguf_writer_set_string(w, key, lin ? "linear" : "yarn", err);
        if (rc == ANVIL_OK) rc = kv_f32_opt(w, arch, "rope.scaling.factor", factor, cfg_path, err);
        if (rc != ANVIL_OK || lin) return rc;
        const anvil_json_value *orig = anvil__json_get(r->params, "original_max_position_embeddings");
        if (orig == NULL) {
            return anvil__error_set(err, ANVIL_E_FORMAT,
                                    "%s: yarn rope scaling without "
                                    "original_max_position_embeddings",
                                    cfg_path);
        }
        uint32_t o = 0;
        rc = want_u32(orig, "original_max_position_embeddings", cfg_path, &o, err);
        snprintf(key, sizeof key, "%s.rope.scaling.original_context_length", arch);
        if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, key, o, err);
        const anvil_json_value *attn = anvil__json_get(r->params, "attention_factor");
        if (attn == NULL) attn = anvil__json_get(r->params, "attn_factor");
        if (rc == ANVIL_OK)
            rc = kv_f32_opt(w, arch, "rope.scaling.yarn_ext_factor",
                            anvil__json_get(r->params, "extrapolation_factor"), cfg_path, err);
        if (rc == ANVIL_OK) rc = kv_f32_opt(w, arch, "rope.scaling.yarn_attn_factor", attn, cfg_path, err);
        if (rc == ANVIL_OK)
            rc = kv_f32_opt(w, arch, "rope.scaling.yarn_beta_fast", anvil__json_get(r->params, "beta_fast"), cfg_path,
                            err);
        if (rc == ANVIL_OK)
            rc = kv_f32_opt(w, arch, "rope.scaling.yarn_beta_slow", anvil__json_get(r->params, "beta_slow"), cfg_path,
                            err);
        return rc;
    }
    if (strcmp(r->type, "su") == 0 || strcmp(r->type, "longrope") == 0) {
        snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
        return anvil_gguf_writer_set_string(w, key, "longrope", err);
    }
    return ANVIL_OK; /* llama3 (rope_freqs.weight), dynamic, unknown: no KV */
}

/* TextModel: rope_parameters' mrope_section padded with zeros to 4 and
 * cut to 4, an INT32 array. */
static int mrope_sections(anvil_gguf_writer *w, const char *arch, const rope_view *r, const char *cfg_path,
                          anvil_error *err) {
    const anvil_json_value *ms = r->params != NULL ? anvil__json_get(r->params, "mrope_section") : NULL;
    if (ms == NULL) return ANVIL_OK;
    int32_t v[4] = { 0, 0, 0, 0 };
    int ok = ms->kind == ANVIL_JSON_ARRAY_BEGIN;
    for (size_t i = 0; ok && i < ms->n_items && i < 4; ++i) {
        int64_t x = 0;
        ok = anvil__json_i64(ms->items[i], &x) == 0 && x >= INT32_MIN && x <= INT32_MAX;
        v[i] = (int32_t)x;
    }
    if (!ok) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s: rope_parameters' \"mrope_section\" must be a list of whole numbers "
                                "(32-bit), not %s",
                                cfg_path, ms->text ? ms->text : anvil__json_event_what(ms->kind));
    }
    char key[128];
    snprintf(key, sizeof key, "%s.rope.dimension_sections", arch);
    return anvil_gguf_writer_set_array(w, key, ANVIL_GGUF_TYPE_I32, v, 4, err);
}

static int refuse_unhandled(const hf_arch *a, const hf_folder *f, const char *cfg_path, anvil_error *err) {
    static const char *const keys[] = {
        "text_config",      "llm_config",           "mrope_section",     "n_group",     "topk_group",
        "score_function",   "scoring_func",         "num_local_experts", "num_experts", "n_routed_experts",
        "local_rope_theta", "rope_local_base_freq", "sliding_attention", NULL
    };
    const int moe = hf_arch_is_moe(a);
    for (size_t i = 0; keys[i] != NULL; ++i) {
        const int expert_key = strcmp(keys[i], "num_local_experts") == 0 || strcmp(keys[i], "num_experts") == 0 ||
                               strcmp(keys[i], "n_routed_experts") == 0;
        if (moe && expert_key) continue;
        if ((a->id == HF_ARCH_QWEN35MOE || a->id == HF_ARCH_QWEN3NEXT) && expert_key) continue;
        if ((a->id == HF_ARCH_QWEN35 || a->id == HF_ARCH_QWEN35MOE) && strcmp(keys[i], "text_config") == 0)
            continue; /* merged into the top level (hf_qwen35_filter) */
        if ((a->id == HF_ARCH_DEEPSEEK2 || a->id == HF_ARCH_GLM4MOE) &&
            strstr(" n_group topk_group score_function scoring_func n_routed_experts ", keys[i]) != NULL)
            continue;
        if (!anvil__json_is_null(anvil__json_get(f->config, keys[i]))) {
            return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                    "%s: \"%s\" is not supported by anvil convert "
                                    "(a multimodal, mixture-of-experts or sliding-window variant); use "
                                    "convert_hf_to_gguf.py",
                                    cfg_path, keys[i]);
        }
    }
    const anvil_json_value *q = anvil__json_get(f->config, "quantization_config");
    const char *qm = anvil__json_str(anvil__json_get(q, "quant_method"));
    if (!anvil__json_is_null(q) && !(qm != NULL && strcmp(qm, "fp8") == 0)) {
        const char *m = qm;
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                "%s: quantized checkpoint (quant_method %s) is not "
                                "supported; convert a float (F32/F16/BF16) or block-scaled fp8 checkpoint",
                                cfg_path, m ? m : "?");
    }
    return ANVIL_OK;
}

/* LlamaModel (Llama, Mistral): an EAGLE-3 draft (draft_vocab_size with one
 * layer) becomes arch eagle3 against --target-model-dir, and
 * transformer_layer_config is merged into the hparams first. Neither is
 * done here. */
static int refuse_eagle3(const hf_arch *a, const hf_folder *f, const char *cfg_path, anvil_error *err) {
    if (!a->undo_permute) return ANVIL_OK;
    int64_t layers = 0;
    const int one_layer = anvil__json_i64(anvil__json_get(f->config, "num_hidden_layers"), &layers) == 0 &&
                          layers == 1;
    if ((anvil__json_get(f->config, "draft_vocab_size") != NULL && one_layer) ||
        anvil__json_get(f->config, "transformer_layer_config") != NULL) {
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                "%s: an EAGLE-3 draft model (draft_vocab_size, one layer, "
                                "or transformer_layer_config): convert_hf_to_gguf.py writes it as arch eagle3 with "
                                "--target-model-dir, which anvil convert does not do; use convert_hf_to_gguf.py",
                                cfg_path);
    }
    return ANVIL_OK;
}

/* *found 1 when the file holds one of marks[] (ASCII, lower case), compared
 * without case: read in blocks, the tail of each kept for the next. A
 * missing file holds none; one that is not a regular file is refused
 * (file_input.h: a FIFO would block the read forever). */
static int file_mentions(const char *path, const char *const *marks, int *found, anvil_error *err) {
    *found = 0;
    FILE *fp = NULL;
    const int rc = file_input_open(path, "a model card", &fp, err);
    if (rc == ANVIL_E_NOT_FOUND) return ANVIL_OK;
    if (rc != ANVIL_OK) return rc;
    enum { KEEP = 64, BLOCK = 65536 };
    char buf[KEEP + BLOCK + 1];
    size_t have = 0, got = 0;
    while (!*found && (got = fread(buf + have, 1, BLOCK, fp)) > 0) {
        have += got;
        for (size_t i = 0; i < have; ++i) buf[i] = (char)tolower((unsigned char)buf[i]);
        buf[have] = '\0';
        for (size_t m = 0; marks[m] != NULL && !*found; ++m) *found = strstr(buf, marks[m]) != NULL;
        const size_t keep = have < KEEP ? have : KEEP;
        memmove(buf, buf + have - keep, keep);
        have = keep;
    }
    fclose(fp);
    return ANVIL_OK;
}

/* 1 when s, lower-cased, holds one of marks[]. */
static int hint_mentions(const char *s, const char *const *marks) {
    if (s == NULL) return 0;
    char low[512];
    size_t n = 0;
    for (; s[n] != '\0' && n + 1 < sizeof low; ++n) low[n] = (char)tolower((unsigned char)s[n]);
    low[n] = '\0';
    for (size_t m = 0; marks[m] != NULL; ++m) {
        if (strstr(low, marks[m]) != NULL) return 1;
    }
    return 0;
}

/* Qwen3Model._is_qwen3_reranker: a README.md heading "# Qwen3-Reranker" /
 * "# Qwen3-VL-Reranker", or the folder name, _name_or_path, model_type or
 * architectures[0] naming one (any case). convert turns such a model into
 * a ranker (cls.output from the "yes"/"no" rows of the output head,
 * pooling_type RANK, classifier labels, a "rerank" chat template), which
 * anvil does not: refused rather than converted as a plain chat model. */
static int refuse_reranker(const hf_arch *a, const hf_folder *f, const char *cfg_path, anvil_error *err) {
    static const char *const heads[] = { "# qwen3-reranker", "# qwen3-vl-reranker", NULL };
    static const char *const names[] = { "qwen3-reranker", "qwen3-vl-reranker", NULL };
    static const char *const cls[] = { "sequenceclassification", NULL };
    if (a->id != HF_ARCH_QWEN3) return ANVIL_OK;
    const char *slash = strrchr(f->dir, '/');
    const char *hints[] = { slash ? slash + 1 : f->dir, anvil__json_str(anvil__json_get(f->config, "_name_or_path")),
                            anvil__json_str(anvil__json_get(f->config, "model_type")), a->hf_name };
    const char *why = NULL;
    char *readme = hf_path_join(f->dir, "README.md");
    if (readme == NULL) return anvil__nomem(err);
    int card = 0;
    const int rc = file_mentions(readme, heads, &card, err);
    free(readme);
    if (rc != ANVIL_OK) return rc;
    if (card) why = "its README.md is a Qwen3-Reranker model card";
    for (size_t i = 0; why == NULL && i < sizeof hints / sizeof hints[0]; ++i) {
        if (hint_mentions(hints[i], names)) why = "its name says Qwen3-Reranker";
    }
    if (why == NULL && hint_mentions(a->hf_name, cls)) why = "its architecture is a sequence classifier";
    if (why == NULL) return ANVIL_OK;
    return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                            "%s: a Qwen3 reranker (%s): convert_hf_to_gguf.py turns it "
                            "into a ranking model (cls.output from the output head's \"yes\"/\"no\" rows, "
                            "pooling type rank, a rerank chat template), which anvil convert does not do; use "
                            "convert_hf_to_gguf.py for it",
                            cfg_path, why);
}

static int base_hparams_ex(const hf_arch *a, const hf_folder *f, const char *cfg_path, hf_text_over *o,
                           anvil_gguf_writer *w, anvil_error *err);
static int base_hparams(const hf_arch *a, const hf_folder *f, const char *cfg_path, anvil_gguf_writer *w,
                        anvil_error *err) {
    hf_text_over o = { 0, 0.0, -1, -1, -1, 0, 0, 0, -1, 0 };
    return base_hparams_ex(a, f, cfg_path, &o, w, err);
}

/* TextModel's score_function values (ExpertGatingFuncType). */
static int gating_func(anvil_gguf_writer *w, const char *an, const anvil_json_value *cfg, const char *cfg_path,
                       hf_text_over *o, anvil_error *err) {
    static const char *const keys[] = { "score_function",
                                        "scoring_func",
                                        "score_func",
                                        "moe_router_activation",
                                        "moe_router_activation_func",
                                        "expert_selection_fn",
                                        NULL };
    const anvil_json_value *v = find_hparam(cfg, keys);
    if (anvil__json_is_null(v)) return ANVIL_OK;
    const char *s = anvil__json_str(v);
    static const char *const names[] = { "softmax", "sigmoid", "sqrtsoftplus" };
    static const uint32_t values[] = { 1, 2, 4 };
    for (uint32_t i = 0; s != NULL && i < 3; ++i) {
        if (strcmp(s, names[i]) == 0) {
            char key[128];
            snprintf(key, sizeof key, "%s.expert_gating_func", an);
            if (o->gating >= 0) o->wrote_gating = 1; /* the subclass's value, at TextModel's place */
            return anvil_gguf_writer_set_u32(w, key, o->gating >= 0 ? (uint32_t)o->gating : values[i], err);
        }
    }
    return anvil__error_set(err, ANVIL_E_FORMAT,
                            "%s: \"%s\" is %s; convert_hf_to_gguf.py knows sigmoid, softmax and sqrtsoftplus",
                            cfg_path, v->key, s != NULL ? s : anvil__json_event_what(v->kind));
}

static int base_hparams_ex(const hf_arch *a, const hf_folder *f, const char *cfg_path, hf_text_over *o,
                           anvil_gguf_writer *w, anvil_error *err) {
    const int kv_one = o->kv_one;
    const double rms_default = o->rms_default;
    static const char *const ctx_keys[] = {
        "max_position_embeddings", "n_ctx", "n_positions", "max_length", "max_sequence_length",
        "model_max_length",        NULL
    };
    static const char *const embd_keys[] = { "hidden_size", "n_embd", "dim", NULL };
    static const char *const ff_keys[] = { "prefix_dense_intermediate_size",
                                           "dense_intermediate_size",
                                           "intermediate_size",
                                           "n_inner",
                                           "hidden_dim",
                                           NULL };
    static const char *const head_keys[] = { "num_attention_heads", "n_head", "n_heads", NULL };
    static const char *const kv_keys[] = { "num_key_value_heads", "n_kv_heads", NULL };
    const char *an = a->gguf_name;
    const anvil_json_value *cfg = f->config;
    uint64_t blocks = 0;
    int rc = hf_arch_block_count(f, &blocks, err);
    char key[128];
    snprintf(key, sizeof key, "%s.block_count", an);
    if (rc == ANVIL_OK && blocks + o->extra_blocks > UINT32_MAX)
        rc = anvil__error_set(err, ANVIL_E_FORMAT, "%s: the layer count overflows with the MTP layers", cfg_path);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, key, (uint32_t)(blocks + o->extra_blocks), err);
    if (rc == ANVIL_OK) rc = kv_u32_opt(w, an, "context_length", cfg, ctx_keys, cfg_path, err);
    if (rc == ANVIL_OK) rc = kv_u32_opt(w, an, "embedding_length", cfg, embd_keys, cfg_path, err);
    if (rc == ANVIL_OK) rc = kv_u32_opt(w, an, "feed_forward_length", cfg, ff_keys, cfg_path, err);
    if (rc == ANVIL_OK) rc = kv_u32_opt(w, an, "attention.head_count", cfg, head_keys, cfg_path, err);
    if (rc == ANVIL_OK && kv_one) {
        snprintf(key, sizeof key, "%s.attention.head_count_kv", an);
        rc = anvil_gguf_writer_set_u32(w, key, 1, err);
    } else if (rc == ANVIL_OK) {
        rc = kv_u32_opt(w, an, "attention.head_count_kv", cfg, kv_keys, cfg_path, err);
    }
    const anvil_json_value *causal = anvil__json_get(cfg, "is_causal");
    if (rc == ANVIL_OK && causal != NULL && causal->kind == ANVIL_JSON_FALSE) {
        snprintf(key, sizeof key, "%s.attention.causal", an);
        rc = anvil_gguf_writer_set_bool(w, key, 0, err);
    }
    rope_view r;
    rope_view_of(cfg, &r);
    if (rc == ANVIL_OK) rc = rope_scaling_kvs(w, an, &r, cfg_path, err);
    if (rc == ANVIL_OK) rc = mrope_sections(w, an, &r, cfg_path, err);
    if (rc == ANVIL_OK) rc = kv_f32_opt(w, an, "rope.freq_base", r.theta, cfg_path, err);
    static const char *const rms_keys[] = { "rms_norm_eps", "norm_eps", NULL };
    static const char *const ln_keys[] = { "layer_norm_eps", "layer_norm_epsilon", "norm_epsilon", NULL };
    if (rc == ANVIL_OK && rms_default != 0.0 && find_hparam(cfg, rms_keys) == NULL) {
        snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", an);
        rc = anvil_gguf_writer_set_f32(w, key, (float)rms_default, err);
    } else if (rc == ANVIL_OK) {
        rc = kv_f32_opt(w, an, "attention.layer_norm_rms_epsilon", find_hparam(cfg, rms_keys), cfg_path, err);
    }
    if (rc == ANVIL_OK)
        rc = kv_f32_opt(w, an, "attention.layer_norm_epsilon", find_hparam(cfg, ln_keys), cfg_path, err);
    static const char *const n_exp_keys[] = { "num_local_experts", "num_experts", "n_routed_experts", NULL };
    const anvil_json_value *n_exp = find_hparam(cfg, n_exp_keys);
    if (rc == ANVIL_OK && o->expert_count >= 0 && !anvil__json_is_null(n_exp)) {
        snprintf(key, sizeof key, "%s.expert_count", an);
        rc = anvil_gguf_writer_set_u32(w, key, (uint32_t)o->expert_count, err);
        o->wrote_expert_count = 1;
    } else if (rc == ANVIL_OK) {
        rc = kv_u32_opt(w, an, "expert_count", cfg, n_exp_keys, cfg_path, err);
    }
    static const char *const used_keys[] = { "num_experts_per_tok", "num_experts_per_token", "top_k_experts", NULL };
    if (rc == ANVIL_OK) rc = kv_u32_opt(w, an, "expert_used_count", cfg, used_keys, cfg_path, err);
    /* n_group, topk_group, the gating function: refused before this for
     * the classes that do not convert them */
    static const char *const grp_keys[] = { "n_group", NULL }, *const grp_used_keys[] = { "topk_group", NULL };
    if (rc == ANVIL_OK) rc = kv_u32_opt(w, an, "expert_group_count", cfg, grp_keys, cfg_path, err);
    if (rc == ANVIL_OK) rc = kv_u32_opt(w, an, "expert_group_used_count", cfg, grp_used_keys, cfg_path, err);
    if (rc == ANVIL_OK) rc = gating_func(w, an, cfg, cfg_path, o, err);
    static const char *const hd_keys[] = { "head_dim", NULL };
    if (rc == ANVIL_OK && o->key_length >= 0 && !anvil__json_is_null(anvil__json_get(cfg, "head_dim"))) {
        snprintf(key, sizeof key, "%s.attention.key_length", an);
        rc = anvil_gguf_writer_set_u32(w, key, (uint32_t)o->key_length, err);
        snprintf(key, sizeof key, "%s.attention.value_length", an);
        if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, key, (uint32_t)o->value_length, err);
        o->wrote_key_length = 1;
        return rc;
    }
    if (rc == ANVIL_OK) rc = kv_u32_opt(w, an, "attention.key_length", cfg, hd_keys, cfg_path, err);
    if (rc == ANVIL_OK) rc = kv_u32_opt(w, an, "attention.value_length", cfg, hd_keys, cfg_path, err);
    return rc;
}

/* head_dim, or hidden_size / num_attention_heads (LlamaModel's rope dim). */
static int head_dim_of(const hf_folder *f, const char *cfg_path, uint32_t *out, anvil_error *err) {
    const anvil_json_value *hd = anvil__json_get(f->config, "head_dim");
    if (!anvil__json_is_null(hd)) return want_u32(hd, "head_dim", cfg_path, out, err);
    const anvil_json_value *h = anvil__json_get(f->config, "hidden_size"),
                           *n = anvil__json_get(f->config, "num_attention_heads");
    uint32_t hs = 0, nh = 0;
    if (h == NULL || n == NULL) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s: needs hidden_size and num_attention_heads", cfg_path);
    }
    int rc = want_u32(h, "hidden_size", cfg_path, &hs, err);
    if (rc == ANVIL_OK) rc = want_u32(n, "num_attention_heads", cfg_path, &nh, err);
    if (rc == ANVIL_OK && nh == 0) {
        rc = anvil__error_set(err, ANVIL_E_FORMAT, "%s: num_attention_heads is 0", cfg_path);
    }
    if (rc == ANVIL_OK) *out = hs / nh;
    return rc;
}

/* Qwen2Model._try_set_pooling_type: a sentence-transformers modules.json
 * naming a Pooling module gives {arch}.pooling_type (MEAN 1, CLS 2, LAST 3). */
static int pooling_type(const hf_arch *a, const hf_folder *f, anvil_gguf_writer *w, anvil_error *err) {
    if (!hf_file_exists(f->dir, "modules.json")) return ANVIL_OK;
    char path[4200];
    snprintf(path, sizeof path, "%s/modules.json", f->dir);
    anvil_json_value *mods = NULL, *pool = NULL;
    int rc = anvil__json_tree_load(path, &mods, err);
    const char *sub = NULL;
    for (size_t i = 0; rc == ANVIL_OK && mods->kind == ANVIL_JSON_ARRAY_BEGIN && i < mods->n_items && !sub; ++i) {
        const char *type = anvil__json_str(anvil__json_get(mods->items[i], "type"));
        const size_t tl = type ? strlen(type) : 0;
        if (tl >= 7 && strcmp(type + tl - 7, "Pooling") == 0)
            sub = anvil__json_str(anvil__json_get(mods->items[i], "path"));
    }
    if (rc == ANVIL_OK && sub != NULL) {
        snprintf(path, sizeof path, "%s/%s/config.json", f->dir, sub);
        rc = strstr(sub, "..")
                 ? anvil__error_set(err, ANVIL_E_FORMAT, "%s/modules.json: path %s leaves the folder", f->dir, sub)
                 : anvil__json_tree_load(path, &pool, err);
    }
    if (rc == ANVIL_OK && pool != NULL) {
        static const char *const flags[3] = { "pooling_mode_mean_tokens", "pooling_mode_cls_token",
                                              "pooling_mode_lasttoken" };
        static const char *const modes[3] = { "mean", "cls", "lasttoken" };
        uint32_t type = 0;
        for (uint32_t k = 0; k < 3 && type == 0; ++k) {
            const anvil_json_value *v = anvil__json_get(pool, flags[k]);
            if (v != NULL && v->kind == ANVIL_JSON_TRUE) type = k + 1;
        }
        const char *mode = anvil__json_str(anvil__json_get(pool, "pooling_mode"));
        for (uint32_t k = 0; k < 3 && type == 0 && mode; ++k) type = strcmp(mode, modes[k]) == 0 ? k + 1 : 0;
        char key[128];
        snprintf(key, sizeof key, "%s.pooling_type", a->gguf_name);
        rc = type == 0 ? anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                          "%s: only MEAN, CLS and LAST pooling are "
                                          "supported",
                                          path)
                       : anvil_gguf_writer_set_u32(w, key, type, err);
    }
    anvil__json_free(mods);
    anvil__json_free(pool);
    return rc;
}

int hf_arch_refuse_unhandled(const hf_arch *a, const hf_folder *f, anvil_error *err) {
    char cfg_path[4096];
    CFG_PATH(cfg_path, f);
    return refuse_unhandled(a, f, cfg_path, err);
}

int hf_arch_hparams(const hf_arch *a, const hf_folder *f, uint32_t ftype, anvil_gguf_writer *w, anvil_error *err) {
    char cfg_path[4096];
    CFG_PATH(cfg_path, f);
    /* gpt-oss: experts and MXFP4 are its own (hf_gptoss.c checks them) */
    int rc = a->id == HF_ARCH_GPTOSS ? ANVIL_OK : refuse_unhandled(a, f, cfg_path, err);
    if (rc == ANVIL_OK) rc = base_hparams(a, f, cfg_path, w, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, "general.file_type", ftype, err);
    if (a->id == HF_ARCH_GPTOSS) {
        /* GptOssModel.set_gguf_parameters: both keys required */
        static const char *const sw[] = { "sliding_window", NULL }, *const ff[] = { "intermediate_size", NULL };
        for (int k = 0; k < 2 && rc == ANVIL_OK; ++k) {
            const anvil_json_value *v = anvil__json_get(f->config, k ? ff[0] : sw[0]);
            if (anvil__json_is_null(v))
                rc = anvil__error_set(err, ANVIL_E_FORMAT, "%s: GptOssForCausalLM needs \"%s\" (a whole number)",
                                      cfg_path, k ? ff[0] : sw[0]);
        }
        if (rc == ANVIL_OK)
            rc = kv_u32_opt(w, a->gguf_name, "attention.sliding_window", f->config, sw, cfg_path, err);
        if (rc == ANVIL_OK)
            rc = kv_u32_opt(w, a->gguf_name, "expert_feed_forward_length", f->config, ff, cfg_path, err);
        return rc;
    }
    if (rc == ANVIL_OK && (a->id == HF_ARCH_QWEN2 || a->id == HF_ARCH_QWEN3)) rc = pooling_type(a, f, w, err);
    if (a->id == HF_ARCH_QWEN2MOE || a->id == HF_ARCH_QWEN3MOE) {
        /* Qwen2MoeModel.set_gguf_parameters */
        static const char *const moe_ff[] = { "moe_intermediate_size", NULL };
        static const char *const shared_ff[] = { "shared_expert_intermediate_size", NULL };
        if (rc == ANVIL_OK)
            rc = kv_u32_opt(w, a->gguf_name, "expert_feed_forward_length", f->config, moe_ff, cfg_path, err);
        if (rc == ANVIL_OK)
            rc =
                kv_u32_opt(w, a->gguf_name, "expert_shared_feed_forward_length", f->config, shared_ff, cfg_path, err);
        return rc;
    }
    if (rc != ANVIL_OK || !a->undo_permute) return rc;
    const anvil_json_value *vs = anvil__json_get(f->config, "vocab_size");
    if (vs == NULL) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s: no \"vocab_size\"", cfg_path);
    }
    uint32_t v = 0, rd = 0;
    char key[128];
    rc = want_u32(vs, "vocab_size", cfg_path, &v, err);
    snprintf(key, sizeof key, "%s.vocab_size", a->gguf_name);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, key, v, err);
    if (rc == ANVIL_OK) rc = head_dim_of(f, cfg_path, &rd, err);
    snprintf(key, sizeof key, "%s.rope.dimension_count", a->gguf_name);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, key, rd, err);
    return rc;
}

int hf_arch_refuse_variants(const hf_arch *a, const hf_folder *f, int vocab_only, anvil_error *err) {
    char cfg_path[4096];
    CFG_PATH(cfg_path, f);
    int rc = refuse_eagle3(a, f, cfg_path, err);
    if (rc == ANVIL_OK && !vocab_only) rc = refuse_reranker(a, f, cfg_path, err);
    return rc;
}

int hf_arch_text_hparams(const hf_arch *a, const hf_folder *f, hf_text_over *o, anvil_gguf_writer *w,
                         anvil_error *err) {
    char cfg_path[4096];
    CFG_PATH(cfg_path, f);
    int rc = refuse_unhandled(a, f, cfg_path, err);
    return rc == ANVIL_OK ? base_hparams_ex(a, f, cfg_path, o, w, err) : rc;
}
