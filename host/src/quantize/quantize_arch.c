/* SPDX-License-Identifier: MIT */
/*
 * What llama.cpp's model loader decides before llama_model_quantize's
 * per-tensor rules run, per architecture (facts from the oracle's
 * src/llama-model.cpp, src/llama-model-loader.cpp, src/models/ (one file per model); the
 * table in quantize_arch_table.h is generated from them):
 *
 *  - the architecture must be a name of llama.cpp's table ("unknown model
 *    architecture") that llama_model_create makes a model for ("unsupported
 *    model architecture");
 *  - clip (mmproj files) loads no hyperparameters: no layers, no experts;
 *  - the other architectures need the generic keys (context and embedding
 *    length, block count), satisfy the loader's expert and head asserts and
 *    have the keys their load_arch_hparams requires, with the GGUF type the
 *    loader insists on;
 *  - n_layer_all is changed by graniteswitch (+1, its router layer) and
 *    nanbeige (times num_loops); LLM_TYPE_70B is set by llama / llama-embed
 *    (80 layers, GQA, not 8 experts), qwen2, deci, olmo (80) and jais2 (68);
 *  - tensor data read is validated as ggml_validate_row_data does: F16/BF16
 *    NaN and Inf values, fp16 scales that are NaN or Inf, an E8M0 exponent
 *    0xff; a type ggml cannot validate (Q8_1, ...) is refused.
 * Every refusal is an error that names the key or tensor and says what to do.
 */
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "anvil/blocks.h"
#include "error.h"
#include "quantize_arch_table.h"
#include "quantize_internal.h"

#define QZ_MAX_EXPERTS 1024u /* LLAMA_MAX_EXPERTS */

static const qz_arch_row *find_row(const char *name) {
    for (size_t i = 0; i < sizeof qz_arch_rows / sizeof qz_arch_rows[0]; ++i) {
        if (strcmp(qz_arch_rows[i].name, name) == 0) return &qz_arch_rows[i];
    }
    return NULL;
}

size_t qz_arch_count(void) { return sizeof qz_arch_rows / sizeof qz_arch_rows[0]; }

const char *qz_arch_name(size_t i) { return i < qz_arch_count() ? qz_arch_rows[i].name : NULL; }

static void key_name(char *buf, size_t size, const char *fmt, const char *arch) {
    const char *s = strstr(fmt, "%s");
    if (s == NULL) {
        snprintf(buf, size, "%s", fmt);
    } else {
        snprintf(buf, size, "%.*s%s%s", (int)(s - fmt), fmt, arch, s + 2);
    }
}

/* The override the loader's get_key takes for key (the first given). */
static const anvil_kv_override *override_of(const anvil_quantize_options *o, const char *key) {
    for (size_t i = 0; i < o->n_kv_overrides; ++i) {
        if (strcmp(o->kv_overrides[i].key, key) == 0) return &o->kv_overrides[i];
    }
    return NULL;
}

static uint32_t wire_type(char c) {
    switch (c) {
    case 'i': return ANVIL_GGUF_TYPE_I32;
    case 'U': return ANVIL_GGUF_TYPE_U64;
    case 'f': return ANVIL_GGUF_TYPE_F32;
    case 'd': return ANVIL_GGUF_TYPE_F64;
    case 'b': return ANVIL_GGUF_TYPE_BOOL;
    case 's': return ANVIL_GGUF_TYPE_STRING;
    case 'a': return ANVIL_GGUF_TYPE_ARRAY;
    default: return ANVIL_GGUF_TYPE_U32;
    }
}

static int override_fits(char c, const anvil_kv_override *ov) {
    if (ov == NULL) return 0;
    switch (c) {
    case 'f':
    case 'd': return ov->tag == ANVIL_KV_OVERRIDE_FLOAT;
    case 'b': return ov->tag == ANVIL_KV_OVERRIDE_BOOL;
    case 's': return ov->tag == ANVIL_KV_OVERRIDE_STR;
    case 'a':
    case 'A':
    case 'R': return 0;
    default: return ov->tag == ANVIL_KV_OVERRIDE_INT;
    }
}

/* One required key of the architecture's load_arch_hparams (spec: type
 * letter, for A and R then the scalar's type letter, then the key's format). */
static int need_key(const anvil_gguf *g, const anvil_quantize_options *o, const char *spec, const char *arch,
                    uint32_t n_layer_all, anvil_error *err) {
    const char c = spec[0];
    const int either = c == 'A' || c == 'R';
    const char sc = either ? spec[1] : c; /* the scalar's type */
    char key[256];
    key_name(key, sizeof key, spec + (either ? 2 : 1), arch);
    const anvil_gguf_kv *kv = anvil_gguf_find_kv(g, key);
    /* get_key takes an override of the right kind; get_key_or_arr first looks at the file. */
    if (!either && override_fits(c, override_of(o, key))) return ANVIL_OK;
    if (kv == NULL) {
        return anvil__error_set(err, ANVIL_E_NOT_FOUND,
                                "key not found in model: %s (llama.cpp's %s loader requires it; add it, e.g. "
                                "with --override-kv, or convert the model again)",
                                key, arch);
    }
    if (either && kv->type == ANVIL_GGUF_TYPE_ARRAY) {
        anvil_gguf_value v;
        anvil_gguf_kv_value(kv, &v);
        if (c == 'A' && v.a.count != n_layer_all) {
            return anvil__error_set(err, ANVIL_E_GGUF_KEY_TYPE,
                                    "key %s has wrong array length; expected %u, got %" PRIu64
                                    " (one value per layer)",
                                    key, n_layer_all, v.a.count);
        }
        return ANVIL_OK;
    }
    if (either && override_fits(sc, override_of(o, key))) return ANVIL_OK;
    if (kv->type != wire_type(sc)) {
        const char *have = anvil_gguf_type_name(kv->type), *want = anvil_gguf_type_name(wire_type(sc));
        return anvil__error_set(err, ANVIL_E_GGUF_KEY_TYPE,
                                "key %s has wrong type %s but expected type %s (llama.cpp refuses it too)", key,
                                have ? have : "?", want ? want : "?");
    }
    return ANVIL_OK;
}

static int u32_key(anvil_transcode *t, const anvil_quantize_options *o, const char *arch, const char *fmt,
                   int required, uint32_t *v, anvil_error *err) {
    char key[256];
    key_name(key, sizeof key, fmt, arch);
    int found = 0;
    const int rc = qz_key_u32(t, o, key, v, &found, err);
    if (rc != ANVIL_OK) return rc;
    if (!found && required) {
        return anvil__error_set(err, ANVIL_E_NOT_FOUND,
                                "key not found in model: %s (llama.cpp's loader requires it; add it, e.g. with "
                                "--override-kv, or convert the model again)",
                                key);
    }
    return ANVIL_OK;
}

static int assert_fail(anvil_error *err, const char *arch, const char *what) {
    return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                            "%s model: %s (llama.cpp's loader asserts this and aborts); fix the model's metadata",
                            arch, what);
}

/* The expert counts' asserts of load_hparams. */
static int check_experts(anvil_transcode *t, const anvil_quantize_options *o, const char *a, qz_model *m,
                         anvil_error *err) {
    char key[256];
    uint32_t used = 0, groups = 0, group_used = 0;
    key_name(key, sizeof key, "%s.expert_used_count", a);
    int rc = qz_key_layers(t, o, key, m->n_layer_all, NULL, &used, err);
    if (rc == ANVIL_OK) rc = u32_key(t, o, a, "%s.expert_group_count", 0, &groups, err);
    if (rc == ANVIL_OK) rc = u32_key(t, o, a, "%s.expert_group_used_count", 0, &group_used, err);
    if (rc != ANVIL_OK) return rc;
    if (strcmp(a, "hunyuan-vl") == 0 || strcmp(a, "hunyuan-dense") == 0) {
        if (m->n_expert <= 1) m->n_expert = used = 0;
    }
    if (m->n_expert > QZ_MAX_EXPERTS) return assert_fail(err, a, "more than 1024 experts");
    if (used > m->n_expert) return assert_fail(err, a, "expert_used_count exceeds expert_count");
    if (m->n_expert > 0) {
        if (used == 0) return assert_fail(err, a, "experts but no expert_used_count");
        if (groups >= m->n_expert) return assert_fail(err, a, "expert_group_count not below expert_count");
        if (groups > 1 && (m->n_expert % groups != 0 || group_used == 0 || group_used >= groups)) {
            return assert_fail(err, a, "expert groups that do not divide the experts");
        }
    } else if (used != 0 || groups != 0) {
        return assert_fail(err, a, "expert_used_count or expert_group_count without experts");
    }
    return ANVIL_OK;
}

/* load_hparams before load_arch_hparams: the keys every model needs. */
static int generic_hparams(anvil_transcode *t, const anvil_quantize_options *o, const char *a, qz_model *m,
                           uint32_t *n_head0, uint32_t *n_head_kv0, uint32_t *nextn, anvil_error *err) {
    uint32_t n_ctx = 0, n_embd = 0, x = 0;
    int rc = u32_key(t, o, a, "%s.context_length", 1, &n_ctx, err);
    if (rc == ANVIL_OK) rc = u32_key(t, o, a, "%s.embedding_length", 1, &n_embd, err);
    if (rc == ANVIL_OK) rc = u32_key(t, o, a, "%s.block_count", 1, &m->n_layer_all, err);
    if (rc != ANVIL_OK) return rc;
    if (m->n_layer_all == 0 || m->n_layer_all > QZ_MAX_LAYERS) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "%s.block_count is %u: llama.cpp takes 1 to %u layers", a,
                                m->n_layer_all, QZ_MAX_LAYERS);
    }
    rc = u32_key(t, o, a, "%s.nextn_predict_layers", 0, nextn, err);
    if (rc == ANVIL_OK && *nextn > m->n_layer_all)
        return assert_fail(err, a, "nextn_predict_layers exceeds block_count");
    if (rc == ANVIL_OK) rc = u32_key(t, o, a, "%s.expert_count", 0, &m->n_expert, err);
    if (rc == ANVIL_OK && strcmp(a, "wavtokenizer-dec") == 0) {
        static const char *const wav[] = { "%s.features_length",           "%s.embedding_length",
                                           "%s.posnet.embedding_length",   "%s.posnet.block_count",
                                           "%s.convnext.embedding_length", "%s.convnext.block_count" };
        for (size_t i = 0; rc == ANVIL_OK && i < sizeof wav / sizeof wav[0]; ++i) {
            rc = u32_key(t, o, a, wav[i], 1, &x, err);
            if (rc == ANVIL_OK && (i == 3 || i == 5) && x > m->n_layer_all) {
                rc = assert_fail(err, a, "posnet/convnext block count exceeds block_count");
            }
        }
    }
    if (rc == ANVIL_OK) rc = check_experts(t, o, a, m, err);
    char key[256];
    key_name(key, sizeof key, "%s.attention.head_count", a);
    if (rc == ANVIL_OK) rc = qz_key_layers(t, o, key, m->n_layer_all, n_head0, NULL, err);
    *n_head_kv0 = *n_head0; /* head_count_kv defaults to head_count */
    key_name(key, sizeof key, "%s.attention.head_count_kv", a);
    if (rc == ANVIL_OK) rc = qz_key_layers(t, o, key, m->n_layer_all, n_head_kv0, NULL, err);
    if (rc != ANVIL_OK) return rc;
    anvil_gguf_str s;
    key_name(key, sizeof key, "%s.rope.scaling.type", a);
    if (anvil_gguf_get_str(t->src, key, &s, NULL) == ANVIL_OK) {
        static const char *const ok[] = { "none", "linear", "yarn", "longrope" };
        int known = 0;
        for (size_t i = 0; i < 4; ++i) known |= s.len == strlen(ok[i]) && memcmp(s.ptr, ok[i], s.len) == 0;
        if (!known) return assert_fail(err, a, "rope.scaling.type is not none, linear, yarn or longrope");
    }
    /* invalid n_rot: llama, deci, falcon and llama-embed need rope.dimension_count == head size. */
    if (*n_head0 > 0 && (strcmp(a, "llama") == 0 || strcmp(a, "deci") == 0 || strcmp(a, "falcon") == 0 ||
                         strcmp(a, "llama-embed") == 0)) {
        uint32_t head_k = n_embd / *n_head0, n_rot;
        rc = u32_key(t, o, a, "%s.attention.key_length", 0, &head_k, err);
        n_rot = head_k;
        if (rc == ANVIL_OK) rc = u32_key(t, o, a, "%s.rope.dimension_count", 0, &n_rot, err);
        if (rc == ANVIL_OK && n_rot != head_k) {
            return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                    "invalid n_rot: %u, expected %u (%s.rope.dimension_count must be the head "
                                    "size; llama.cpp refuses the model too)",
                                    n_rot, head_k, a);
        }
    }
    return rc;
}

static int array_len(const anvil_gguf *g, const char *fmt, const char *arch, uint64_t *n) {
    char key[256];
    key_name(key, sizeof key, fmt, arch);
    const anvil_gguf_kv *kv = anvil_gguf_find_kv(g, key);
    if (kv == NULL || kv->type != ANVIL_GGUF_TYPE_ARRAY) return 0;
    anvil_gguf_value v;
    anvil_gguf_kv_value(kv, &v);
    *n = v.a.count;
    return 1;
}

/* The checks some load_arch_hparams make by hand (beyond the table's keys). */
static int own_checks(anvil_transcode *t, const anvil_quantize_options *o, const char *a, uint32_t n_layer,
                      anvil_error *err) {
    int rc = ANVIL_OK;
    uint64_t n = 0;
    if (strcmp(a, "cohere2moe") == 0) {
        char k1[256], k2[256];
        key_name(k1, sizeof k1, "%s.attention.layer_norm_epsilon", a);
        key_name(k2, sizeof k2, "%s.attention.layer_norm_rms_epsilon", a);
        if (anvil_gguf_find_kv(t->src, k1) == NULL && anvil_gguf_find_kv(t->src, k2) == NULL &&
            override_of(o, k1) == NULL && override_of(o, k2) == NULL) {
            return anvil__error_set(err, ANVIL_E_NOT_FOUND,
                                    "missing Cohere2 MoE norm epsilon: %s or %s (llama.cpp requires one)", k1, k2);
        }
    } else if (strcmp(a, "ernie4_5-moe") == 0) {
        rc = need_key(t->src, o, "Au%s.expert_feed_forward_length", a, n_layer, err);
        if (rc == ANVIL_OK) rc = need_key(t->src, o, "u%s.interleave_moe_layer_step", a, n_layer, err);
    } else if (strcmp(a, "hrm_text") == 0) {
        uint32_t per = 0, h = 0, l = 0;
        rc = u32_key(t, o, a, "%s.hrm.layers_per_stack", 1, &per, err);
        if (rc == ANVIL_OK) rc = u32_key(t, o, a, "%s.hrm.h_cycles", 1, &h, err);
        if (rc == ANVIL_OK) rc = u32_key(t, o, a, "%s.hrm.l_cycles", 1, &l, err);
        if (rc == ANVIL_OK && (per == 0 || h == 0 || l == 0 || (uint64_t)per * h * ((uint64_t)l + 1) != n_layer)) {
            rc = assert_fail(err, a, "block_count is not hrm.layers_per_stack * h_cycles * (l_cycles + 1)");
        }
    } else if (strcmp(a, "bailingmoe3") == 0) {
        /* kda.safe_gate (default true) must be true, kda.gate_lower_bound below 0 */
        double bound = 0.0;
        int safe = 1;
        char key[256];
        key_name(key, sizeof key, "%s.kda.gate_lower_bound", a);
        const anvil_kv_override *ov = override_of(o, key);
        const anvil_gguf_kv *kv = anvil_gguf_find_kv(t->src, key);
        anvil_gguf_value v;
        if (ov != NULL && ov->tag == ANVIL_KV_OVERRIDE_FLOAT) {
            bound = (double)(float)ov->f;
        } else if (kv != NULL) {
            anvil_gguf_kv_value(kv, &v);
            bound = v.f;
        }
        key_name(key, sizeof key, "%s.kda.safe_gate", a);
        ov = override_of(o, key);
        kv = anvil_gguf_find_kv(t->src, key);
        if (ov != NULL && ov->tag == ANVIL_KV_OVERRIDE_BOOL) {
            safe = ov->b != 0;
        } else if (kv != NULL && kv->type == ANVIL_GGUF_TYPE_BOOL) {
            anvil_gguf_kv_value(kv, &v);
            safe = v.b;
        } else if (kv != NULL) {
            return anvil__error_set(err, ANVIL_E_GGUF_KEY_TYPE, "key %s has wrong type %s but expected type bool",
                                    key, anvil_gguf_type_name(kv->type) ? anvil_gguf_type_name(kv->type) : "?");
        }
        if (!safe) return assert_fail(err, a, "kda.safe_gate is false");
        if (!(bound < 0.0)) return assert_fail(err, a, "kda.gate_lower_bound is not below 0");
    } else if (strcmp(a, "eagle3") == 0 || strcmp(a, "dflash") == 0) {
        if (!array_len(t->src, "%s.target_layers", a, &n)) {
            return anvil__error_set(err, ANVIL_E_NOT_FOUND,
                                    "%s model requires the array %s.target_layers (llama.cpp refuses it without)", a,
                                    a);
        }
        if (strcmp(a, "eagle3") == 0 && n != 3) {
            return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                    "EAGLE3 requires exactly 3 entries in %s.target_layers, not %" PRIu64, a, n);
        }
    }
    return rc;
}

/* load_arch_hparams: required keys, layer count changes, LLM_TYPE_70B. */
static int arch_hparams(anvil_transcode *t, const anvil_quantize_options *o, const qz_arch_row *row, qz_model *m,
                        uint32_t n_head, uint32_t n_head_kv, uint32_t nextn, anvil_error *err) {
    const char *a = row->name;
    int rc = ANVIL_OK;
    for (size_t i = 0; rc == ANVIL_OK && row->keys[i] != NULL; ++i) {
        rc = need_key(t->src, o, row->keys[i], a, m->n_layer_all, err);
    }
    if (rc == ANVIL_OK) rc = own_checks(t, o, a, m->n_layer_all - nextn, err);
    if (rc != ANVIL_OK) return rc;
    const uint32_t n_layer = m->n_layer_all - nextn;
    if (strcmp(a, "deepseek2") == 0 || strcmp(a, "mistral4") == 0) {
        /* q_lora_rank is required but for the "lite" variants */
        uint32_t n_vocab = 0;
        int found = 0;
        char key[256];
        key_name(key, sizeof key, "%s.vocab_size", a);
        rc = qz_key_u32(t, o, key, &n_vocab, &found, err);
        if (rc != ANVIL_OK) return rc;
        const anvil_gguf_kv *toks = anvil_gguf_find_kv(t->src, "tokenizer.ggml.tokens");
        if (!found && toks != NULL && toks->type == ANVIL_GGUF_TYPE_ARRAY) {
            anvil_gguf_value v;
            anvil_gguf_kv_value(toks, &v);
            n_vocab = (uint32_t)v.a.count;
        }
        const int lite = n_layer == 27 || n_layer == 26 || (n_layer == 48 && n_vocab == 128256);
        if (!lite) rc = need_key(t->src, o, "u%s.attention.q_lora_rank", a, m->n_layer_all, err);
        if (rc != ANVIL_OK) return rc;
    }
    if (strcmp(a, "llama") == 0 || strcmp(a, "llama-embed") == 0) {
        m->is_70b = m->n_expert != 8 && n_layer == 80 && n_head != n_head_kv;
    } else if (strcmp(a, "qwen2") == 0 || strcmp(a, "deci") == 0 || strcmp(a, "olmo") == 0) {
        m->is_70b = n_layer == 80;
    } else if (strcmp(a, "jais2") == 0) {
        m->is_70b = n_layer == 68;
    } else if (strcmp(a, "graniteswitch") == 0) {
        /* The router's extra layer; the adapter arrays must match the count. */
        uint32_t n_adapters = 0, rank = 0;
        rc = u32_key(t, o, a, "%s.adapters.count", 1, &n_adapters, err);
        if (rc == ANVIL_OK) rc = u32_key(t, o, a, "%s.adapters.lora_rank", 1, &rank, err);
        if (rc != ANVIL_OK) return rc;
        if (n_adapters > 4096 || rank > 4096) return assert_fail(err, a, "adapter count or lora rank above 4096");
        static const char *const arrs[] = { "%s.adapters.token_ids_activate", "%s.adapters.token_ids_substitute" };
        for (size_t i = 0; i < 2; ++i) {
            char key[256];
            key_name(key, sizeof key, arrs[i], a);
            anvil_gguf_value v;
            anvil_gguf_kv_value(anvil_gguf_find_kv(t->src, key), &v);
            if (v.a.count != n_adapters)
                return assert_fail(err, a, "adapter token id arrays do not match adapters.count");
        }
        if (n_layer >= QZ_MAX_LAYERS) return assert_fail(err, a, "block count reaches LLAMA_MAX_LAYERS");
        m->n_layer_all = n_layer + 1;
    } else if (strcmp(a, "nanbeige") == 0) {
        uint32_t loops = 1;
        rc = u32_key(t, o, a, "%s.num_loops", 0, &loops, err);
        if (rc != ANVIL_OK) return rc;
        if (loops < 1 || (uint64_t)n_layer * loops > QZ_MAX_LAYERS) {
            return assert_fail(err, a, "num_loops is 0, or block_count times num_loops exceeds 512 layers");
        }
        if (loops > 1) m->n_layer_all = n_layer * loops;
    }
    return ANVIL_OK;
}

int qz_load_model(anvil_transcode *t, const anvil_quantize_options *o, const char *arch, qz_model *m,
                  anvil_error *err) {
    const qz_arch_row *row = find_row(arch);
    if (row == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "unknown model architecture: '%s' (llama.cpp knows %zu architectures and refuses "
                                "others; check general.architecture)",
                                arch, qz_arch_count());
    }
    if (!row->supported) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "unsupported model architecture: '%s' (llama.cpp names it but loads no such model, "
                                "so it cannot quantize it)",
                                arch);
    }
    m->arch = strcmp(arch, "llama") == 0         ? QZ_ARCH_LLAMA
              : strcmp(arch, "falcon") == 0      ? QZ_ARCH_FALCON
              : strcmp(arch, "bailingmoe3") == 0 ? QZ_ARCH_BAILINGMOE3
                                                 : QZ_ARCH_OTHER;
    if (strcmp(arch, "clip") == 0) {
        /* mmproj: tensors only, no hyperparameters (no layers, no experts). */
        m->n_layer_all = 0;
        m->n_expert = 0;
        m->n_gqa = 0;
        m->is_70b = 0;
        m->no_layers = 1;
        return ANVIL_OK;
    }
    uint32_t n_head = 0, n_head_kv = 0, nextn = 0;
    int rc = generic_hparams(t, o, arch, m, &n_head, &n_head_kv, &nextn, err);
    if (rc != ANVIL_OK) return rc;
    m->n_gqa = n_head_kv == 0 ? 0 : n_head / n_head_kv;
    m->no_layers = m->n_layer_all == nextn;
    return arch_hparams(t, o, row, m, n_head, n_head_kv, nextn, err);
}

int qz_rules_ask_gqa(uint32_t ftype) {
    switch (ftype) {
    case QZ_IQ2_XXS:
    case QZ_IQ2_XS:
    case QZ_IQ1_S:
    case QZ_IQ2_S:
    case QZ_IQ2_M:
    case QZ_IQ1_M:
    case QZ_Q2_K:
    case QZ_Q2_K_S:
    case QZ_IQ3_XXS:
    case QZ_IQ3_XS:
    case QZ_IQ3_S:
    case QZ_IQ4_NL:
    case QZ_IQ4_XS: return 1;
    default: return 0;
    }
}

/* ---- ggml_validate_row_data -------------------------------------------------------- */

static int half_bad(const uint8_t *p) {
    const uint16_t h = (uint16_t)(p[0] | (p[1] << 8));
    return (h & 0x7c00) == 0x7c00;
}

/* Where a block's fp16 scales are: offsets (a second one or -1). */
static int scale_offsets(uint32_t type, long *d, long *m) {
    *m = -1;
    *d = 0;
    switch (type) {
    case ANVIL_TYPE_Q4_1: *m = offsetof(anvil_block_q4_1, m); return 1;
    case ANVIL_TYPE_Q5_1: *m = offsetof(anvil_block_q5_1, m); return 1;
    case ANVIL_TYPE_Q2_K:
        *d = offsetof(anvil_block_q2_K, d);
        *m = offsetof(anvil_block_q2_K, dmin);
        return 1;
    case ANVIL_TYPE_Q4_K: *m = offsetof(anvil_block_q4_K, dmin); return 1;
    case ANVIL_TYPE_Q5_K: *m = offsetof(anvil_block_q5_K, dmin); return 1;
    case ANVIL_TYPE_Q3_K: *d = offsetof(anvil_block_q3_K, d); return 1;
    case ANVIL_TYPE_Q6_K: *d = offsetof(anvil_block_q6_K, d); return 1;
    case ANVIL_TYPE_TQ2_0: *d = offsetof(anvil_block_tq2_0, d); return 1;
    case ANVIL_TYPE_TQ1_0: *d = offsetof(anvil_block_tq1_0, d); return 1;
    case ANVIL_TYPE_Q1_0:
    case ANVIL_TYPE_Q2_0:
    case ANVIL_TYPE_Q4_0:
    case ANVIL_TYPE_Q5_0:
    case ANVIL_TYPE_Q8_0:
    case ANVIL_TYPE_IQ1_S:
    case ANVIL_TYPE_IQ2_XXS:
    case ANVIL_TYPE_IQ2_XS:
    case ANVIL_TYPE_IQ2_S:
    case ANVIL_TYPE_IQ3_XXS:
    case ANVIL_TYPE_IQ3_S:
    case ANVIL_TYPE_IQ4_XS:
    case ANVIL_TYPE_IQ4_NL: return 1;
    default: return 0;
    }
}

/* Index of the first invalid block, or n when all are valid; -1: the type is not one ggml validates. */
static long long first_bad_block(uint32_t type, const uint8_t *p, size_t bs, size_t n) {
    long d, m;
    if (scale_offsets(type, &d, &m)) {
        for (size_t i = 0; i < n; ++i, p += bs) {
            if (half_bad(p + d) || (m >= 0 && half_bad(p + m))) return (long long)i;
        }
        return (long long)n;
    }
    switch (type) {
    case ANVIL_TYPE_MXFP4:
        for (size_t i = 0; i < n; ++i, p += bs) {
            if (p[offsetof(anvil_block_mxfp4, e)] == 0xff) return (long long)i;
        }
        return (long long)n;
    case ANVIL_TYPE_Q8_K:
        for (size_t i = 0; i < n; ++i, p += bs) {
            float f;
            memcpy(&f, p + offsetof(anvil_block_q8_K, d), sizeof f);
            if (!isfinite(f)) return (long long)i;
        }
        return (long long)n;
    case ANVIL_TYPE_IQ1_M:
        for (size_t i = 0; i < n; ++i, p += bs) {
            const uint8_t *s = p + offsetof(anvil_block_iq1_m, scales);
            uint16_t sc[4];
            memcpy(sc, s, sizeof sc);
            const uint16_t h =
                (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
            if ((h & 0x7c00) == 0x7c00) return (long long)i;
        }
        return (long long)n;
    case ANVIL_TYPE_F64:
        for (size_t i = 0; i < n; ++i, p += bs) {
            double f;
            memcpy(&f, p, sizeof f);
            if (!isfinite(f)) return (long long)i;
        }
        return (long long)n;
    case ANVIL_TYPE_NVFP4:
    case ANVIL_TYPE_I8:
    case ANVIL_TYPE_I16:
    case ANVIL_TYPE_I32:
    case ANVIL_TYPE_I64: return (long long)n;
    default: return -1;
    }
}

int qz_check_data(const anvil_transcode_tensor *it, const uint8_t *data, anvil_error *err) {
    const uint32_t ty = it->src_type;
    if (tc_is_float_type(ty) || it->src_bytes == 0) return ANVIL_OK; /* the run checks floats as it reads them */
    anvil_type_info ti;
    if (anvil_type_builtin(ty, &ti, NULL) != ANVIL_OK || ti.block_bytes == 0) {
        return anvil__error_set(err, ANVIL_E_UNKNOWN_TYPE,
                                "tensor '%s' has invalid data: type %u is not a ggml type llama.cpp can validate",
                                it->name, ty);
    }
    const size_t bs = ti.block_bytes, n = (size_t)(it->src_bytes / bs);
    const long long bad = first_bad_block(ty, data, bs, n);
    if (bad < 0) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "tensor '%s' has invalid data: ggml cannot validate %s data, so llama.cpp refuses "
                                "to read it; convert the tensor to another type first",
                                it->name, ti.name);
    }
    if ((size_t)bad < n) {
        return anvil__error_set(err, ANVIL_E_NONFINITE,
                                "tensor '%s' has invalid data: block %lld of %s has a NaN or infinite scale "
                                "(llama.cpp refuses such a model too); fix or re-create the source model",
                                it->name, bad, ti.name);
    }
    return ANVIL_OK;
}
