/* SPDX-License-Identifier: MIT */
/*
 * llama.cpp's quantization policy, rule for rule (src/llama-quant.cpp of the
 * release anvil's oracle is): which tensors may change type, the preset's
 * mixture by tensor category and layer, the overrides, and the fallback for
 * rows that do not divide the target's block. The presets are
 * llama-quantize's list (llama.cpp's tools/quantize/quantize.cpp), in its order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "quantize_internal.h"

/* ---- presets ------------------------------------------------------------------ */

static const anvil_quantize_preset presets[] = {
    { "Q1_0", QZ_Q1_0, " 1.125 bpw quantization" },
    { "Q2_0", QZ_Q2_0, " 2.25 bpw quantization (group 64)" },
    { "Q4_0", QZ_Q4_0, " 4.34G, +0.4685 ppl @ Llama-3-8B" },
    { "Q4_1", QZ_Q4_1, " 4.78G, +0.4511 ppl @ Llama-3-8B" },
    { "MXFP4_MOE", QZ_MXFP4_MOE, " MXFP4 MoE" },
    { "Q5_0", QZ_Q5_0, " 5.21G, +0.1316 ppl @ Llama-3-8B" },
    { "Q5_1", QZ_Q5_1, " 5.65G, +0.1062 ppl @ Llama-3-8B" },
    { "IQ2_XXS", QZ_IQ2_XXS, " 2.06 bpw quantization" },
    { "IQ2_XS", QZ_IQ2_XS, " 2.31 bpw quantization" },
    { "IQ2_S", QZ_IQ2_S, " 2.5  bpw quantization" },
    { "IQ2_M", QZ_IQ2_M, " 2.7  bpw quantization" },
    { "IQ1_S", QZ_IQ1_S, " 1.56 bpw quantization" },
    { "IQ1_M", QZ_IQ1_M, " 1.75 bpw quantization" },
    { "TQ1_0", QZ_TQ1_0, " 1.69 bpw ternarization" },
    { "TQ2_0", QZ_TQ2_0, " 2.06 bpw ternarization" },
    { "Q2_K", QZ_Q2_K, " 2.96G, +3.5199 ppl @ Llama-3-8B" },
    { "Q2_K_S", QZ_Q2_K_S, " 2.96G, +3.1836 ppl @ Llama-3-8B" },
    { "IQ3_XXS", QZ_IQ3_XXS, " 3.06 bpw quantization" },
    { "IQ3_S", QZ_IQ3_S, " 3.44 bpw quantization" },
    { "IQ3_M", QZ_IQ3_M, " 3.66 bpw quantization mix" },
    { "Q3_K", QZ_Q3_K_M, "alias for Q3_K_M" },
    { "IQ3_XS", QZ_IQ3_XS, " 3.3 bpw quantization" },
    { "Q3_K_S", QZ_Q3_K_S, " 3.41G, +1.6321 ppl @ Llama-3-8B" },
    { "Q3_K_M", QZ_Q3_K_M, " 3.74G, +0.6569 ppl @ Llama-3-8B" },
    { "Q3_K_L", QZ_Q3_K_L, " 4.03G, +0.5562 ppl @ Llama-3-8B" },
    { "IQ4_NL", QZ_IQ4_NL, " 4.50 bpw non-linear quantization" },
    { "IQ4_XS", QZ_IQ4_XS, " 4.25 bpw non-linear quantization" },
    { "Q4_K", QZ_Q4_K_M, "alias for Q4_K_M" },
    { "Q4_K_S", QZ_Q4_K_S, " 4.37G, +0.2689 ppl @ Llama-3-8B" },
    { "Q4_K_M", QZ_Q4_K_M, " 4.58G, +0.1754 ppl @ Llama-3-8B" },
    { "Q5_K", QZ_Q5_K_M, "alias for Q5_K_M" },
    { "Q5_K_S", QZ_Q5_K_S, " 5.21G, +0.1049 ppl @ Llama-3-8B" },
    { "Q5_K_M", QZ_Q5_K_M, " 5.33G, +0.0569 ppl @ Llama-3-8B" },
    { "Q6_K", QZ_Q6_K, " 6.14G, +0.0217 ppl @ Llama-3-8B" },
    { "Q8_0", QZ_Q8_0, " 7.96G, +0.0026 ppl @ Llama-3-8B" },
    { "F16", QZ_F16, "14.00G, +0.0020 ppl @ Mistral-7B" },
    { "BF16", QZ_BF16, "14.00G, -0.0050 ppl @ Mistral-7B" },
    { "F32", QZ_ALL_F32, "26.00G              @ 7B" },
    /* After F32, so that the number 0 names F32. */
    { "COPY", QZ_ALL_F32, "only copy tensors, no quantizing" },
};
#define N_PRESETS (sizeof presets / sizeof presets[0])

ANVIL_API size_t anvil_quantize_preset_count(void) { return N_PRESETS; }

ANVIL_API const anvil_quantize_preset *anvil_quantize_preset_at(size_t i) {
    return i < N_PRESETS ? &presets[i] : NULL;
}

static int upper_equal(const char *a, const char *b) {
    for (; *a && *b; ++a, ++b) {
        const unsigned char x = (unsigned char)*a, y = (unsigned char)*b;
        const int ux = x >= 'a' && x <= 'z' ? x - 32 : x, uy = y >= 'a' && y <= 'z' ? y - 32 : y;
        if (ux != uy) return 0;
    }
    return *a == *b;
}

/* std::stoi: leading white space, a sign, digits, anything after ignored;
 * out of int's range fails. */
static int stoi_like(const char *s, int *out) {
    while (*s == ' ' || (*s >= '\t' && *s <= '\r')) s++;
    int neg = 0;
    if (*s == '+' || *s == '-') neg = *s++ == '-';
    if (*s < '0' || *s > '9') return 0;
    long long v = 0;
    for (; *s >= '0' && *s <= '9'; ++s) {
        v = v * 10 + (*s - '0');
        if (v > 2147483648LL) return 0;
    }
    if (neg) v = -v;
    if (v > 2147483647LL || v < -2147483648LL) return 0;
    *out = (int)v;
    return 1;
}

ANVIL_API const anvil_quantize_preset *anvil_quantize_preset_find(const char *s) {
    if (s == NULL) return NULL;
    for (size_t i = 0; i < N_PRESETS; ++i) {
        if (upper_equal(presets[i].name, s)) return &presets[i];
    }
    int v;
    if (!stoi_like(s, &v)) return NULL;
    for (size_t i = 0; i < N_PRESETS; ++i) {
        if ((int)presets[i].ftype == v) return &presets[i];
    }
    return NULL;
}

/* llama_ftype_get_default_type. */
ANVIL_API uint32_t anvil_quantize_default_type(uint32_t ftype) {
    switch (ftype) {
    case QZ_Q4_0: return ANVIL_TYPE_Q4_0;
    case QZ_Q4_1: return ANVIL_TYPE_Q4_1;
    case QZ_Q5_0: return ANVIL_TYPE_Q5_0;
    case QZ_Q5_1: return ANVIL_TYPE_Q5_1;
    case QZ_Q8_0: return ANVIL_TYPE_Q8_0;
    case QZ_F16: return ANVIL_TYPE_F16;
    case QZ_BF16: return ANVIL_TYPE_BF16;
    case QZ_ALL_F32: return ANVIL_TYPE_F32;
    case QZ_Q1_0: return ANVIL_TYPE_Q1_0;
    case QZ_Q2_0: return ANVIL_TYPE_Q2_0;
    case QZ_MXFP4_MOE: return ANVIL_TYPE_MXFP4;
    case QZ_Q2_K_S:
    case QZ_Q2_K: return ANVIL_TYPE_Q2_K;
    case QZ_IQ3_XS: return ANVIL_TYPE_IQ3_S;
    case QZ_Q3_K_S:
    case QZ_Q3_K_M:
    case QZ_Q3_K_L: return ANVIL_TYPE_Q3_K;
    case QZ_Q4_K_S:
    case QZ_Q4_K_M: return ANVIL_TYPE_Q4_K;
    case QZ_Q5_K_S:
    case QZ_Q5_K_M: return ANVIL_TYPE_Q5_K;
    case QZ_Q6_K: return ANVIL_TYPE_Q6_K;
    case QZ_TQ1_0: return ANVIL_TYPE_TQ1_0;
    case QZ_TQ2_0: return ANVIL_TYPE_TQ2_0;
    case QZ_IQ2_XXS: return ANVIL_TYPE_IQ2_XXS;
    case QZ_IQ2_XS: return ANVIL_TYPE_IQ2_XS;
    case QZ_IQ2_S: return ANVIL_TYPE_IQ2_XS;
    case QZ_IQ2_M: return ANVIL_TYPE_IQ2_S;
    case QZ_IQ3_XXS: return ANVIL_TYPE_IQ3_XXS;
    case QZ_IQ1_S: return ANVIL_TYPE_IQ1_S;
    case QZ_IQ1_M: return ANVIL_TYPE_IQ1_M;
    case QZ_IQ4_NL: return ANVIL_TYPE_IQ4_NL;
    case QZ_IQ4_XS: return ANVIL_TYPE_IQ4_XS;
    case QZ_IQ3_S:
    case QZ_IQ3_M: return ANVIL_TYPE_IQ3_S;
    default: return ANVIL_TRANSCODE_NO_TYPE;
    }
}

/* ---- type facts ------------------------------------------------------------------- */

int qz_is_quantized(uint32_t type) {
    anvil_type_info ti;
    return anvil_type_builtin(type, &ti, NULL) == ANVIL_OK && ti.is_quantized;
}

uint32_t qz_block_size(uint32_t type) {
    anvil_type_info ti;
    return anvil_type_builtin(type, &ti, NULL) == ANVIL_OK ? ti.block_elems : 0;
}

/* ggml_n_dims: up to the last dim greater than 1. */
static int ggml_n_dims(const anvil_gguf_tensor *t) {
    for (int i = ANVIL_GGUF_MAX_DIMS - 1; i >= 1; --i) {
        if (t->ne[i] > 1) return i + 1;
    }
    return 1;
}

static int has(const char *s, const char *part) { return strstr(s, part) != NULL; }

/* ---- categories and what may change type -------------------------------------- */

qz_category qz_category_of(const char *name) {
    if (strcmp(name, "output.weight") == 0) return QZ_OUTPUT;
    if (strcmp(name, "token_embd.weight") == 0 || strcmp(name, "per_layer_token_embd.weight") == 0) {
        return QZ_TOKEN_EMBD;
    }
    if (has(name, "attn_qkv.weight")) return QZ_ATTENTION_QKV;
    if (has(name, "attn_kv_b.weight")) return QZ_ATTENTION_KV_B;
    if (has(name, "attn_v.weight")) return QZ_ATTENTION_V;
    if (has(name, "attn_k.weight")) return QZ_ATTENTION_K;
    if (has(name, "attn_q.weight")) return QZ_ATTENTION_Q;
    if (has(name, "attn_output.weight")) return QZ_ATTENTION_OUTPUT;
    if (has(name, "ffn_up")) return QZ_FFN_UP;
    if (has(name, "ffn_gate")) return QZ_FFN_GATE;
    if (has(name, "ffn_down")) return QZ_FFN_DOWN;
    return QZ_OTHER;
}

static int is_attn_v_like(qz_category c) {
    return c == QZ_ATTENTION_V || c == QZ_ATTENTION_QKV || c == QZ_ATTENTION_KV_B;
}

int qz_allows_quantization(const anvil_quantize_options *o, const anvil_gguf_tensor *t) {
    if (o->only_copy) return 0;
    if (ggml_n_dims(t) < 2) return 0;
    const char *name = t->name;
    const size_t len = strlen(name);
    /* name.rfind("weight") == name.size() - 6, unsigned: a 5-byte name
     * passes (npos == size - 6 there). */
    int q = (len >= 6 && strcmp(name + len - 6, "weight") == 0) || (len == 5 && strstr(name, "weight") == NULL);
    static const char *const never[] = {
        "_norm.weight",
        "ffn_gate_inp.weight",
        "ffn_gate_tid2eid.weight",
        "altup",
        "laurel",
        "per_layer_model_proj",
        "ssm_conv1d",
        "shortconv.conv.weight",
        "indexer.k_proj.weight",
        "indexer.q_proj.weight",
        "time_mix_first.weight",
        "time_mix_w0.weight",
        "time_mix_w1.weight",
        "time_mix_w2.weight",
        "time_mix_v0.weight",
        "time_mix_v1.weight",
        "time_mix_v2.weight",
        "time_mix_a0.weight",
        "time_mix_a1.weight",
        "time_mix_a2.weight",
        "time_mix_g1.weight",
        "time_mix_g2.weight",
        "time_mix_decay_w1.weight",
        "time_mix_decay_w2.weight",
        "time_mix_lerp_fused.weight",
        "attn_rel_b.weight",
        ".position_embd",
        "sam.pos_embd",
        "sam.neck.",
        "sam.net_",
        ".rel_pos",
        ".patch_embd",
        ".patch_merger",
        "a.rvq.codebook",
        "mm.a.code_embd",
    };
    for (size_t i = 0; q && i < sizeof never / sizeof never[0]; ++i) q = !has(name, never[i]);
    if (o->leave_output_tensor && strcmp(name, "output.weight") == 0) q = 0;
    if (strcmp(name, "position_embd.weight") == 0 || strcmp(name, "token_types.weight") == 0) q = 0;
    return q;
}

int qz_is_grid_iq(uint32_t type) {
    switch (type) {
    case ANVIL_TYPE_IQ1_S:
    case ANVIL_TYPE_IQ1_M:
    case ANVIL_TYPE_IQ2_XXS:
    case ANVIL_TYPE_IQ2_XS:
    case ANVIL_TYPE_IQ2_S:
    case ANVIL_TYPE_IQ3_XXS:
    case ANVIL_TYPE_IQ3_S: return 1;
    default: return 0;
    }
}

int qz_requires_imatrix(const char *name, uint32_t type, uint32_t ftype) {
    if (strcmp(name, "token_embd.weight") == 0 || strcmp(name, "per_layer_token_embd.weight") == 0 ||
        strcmp(name, "output.weight") == 0) {
        return 0;
    }
    switch (type) {
    case ANVIL_TYPE_IQ3_XXS:
    case ANVIL_TYPE_IQ2_XXS:
    case ANVIL_TYPE_IQ2_XS:
    case ANVIL_TYPE_IQ2_S:
    case ANVIL_TYPE_IQ1_M:
    case ANVIL_TYPE_IQ1_S: return 1;
    case ANVIL_TYPE_Q2_K: return ftype == QZ_Q2_K_S;
    default: return 0;
    }
}

/* ---- the mixture ------------------------------------------------------------------- */

static int use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

/* The layer a ffn tensor is in: counted in order, or (MoE models, whose
 * experts llama.cpp found out of order) read from the name. */
static int layer_info(const qz_policy_state *qs, int counter, const char *name, int *layer, anvil_error *err) {
    *layer = counter;
    const int n_expert = qs->model.n_expert > 1 ? (int)qs->model.n_expert : 1;
    if (n_expert > 1) {
        if (sscanf(name, "blk.%d.", layer) != 1) {
            return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                    "Failed to determine layer for tensor %s (a MoE "
                                    "model's ffn tensors must be named blk.N....)",
                                    name);
        }
        if (*layer < 0 || *layer >= (int)qs->model.n_layer_all) {
            return anvil__error_set(err, ANVIL_E_INVALID_ARG, "Bad layer %d for tensor %s. Must be in [0, %d)",
                                    *layer, name, (int)qs->model.n_layer_all);
        }
    }
    return ANVIL_OK;
}

#define FT(x) (ftype == QZ_##x)

/* The branches of llama.cpp's llama_tensor_get_type, one function each, in
 * its order: t is the type so far, the result the type the rule gives. */

/* output.weight (and a tied token_embd): --output-tensor-type, else by preset. */
static uint32_t mix_output(const qz_policy_state *qs, const anvil_gguf_tensor *tensor, uint32_t t) {
    const uint32_t ftype = qs->ftype;
    const anvil_quantize_options *o = qs->opts;
    const qz_model *m = &qs->model;
    if (o->output_tensor_type != ANVIL_TRANSCODE_NO_TYPE) {
        t = o->output_tensor_type;
    } else {
        const uint32_t qk = qz_block_size(t);
        if (FT(MXFP4_MOE)) {
            t = ANVIL_TYPE_Q8_0;
        } else if (m->arch == QZ_ARCH_FALCON || qk == 0 || tensor->ne[0] % qk != 0) {
            t = ANVIL_TYPE_Q8_0;
        } else if (FT(IQ2_XXS) || FT(IQ2_XS) || FT(IQ3_XXS) || FT(IQ1_S) || FT(IQ2_S) || FT(IQ2_M) || FT(IQ1_M)) {
            t = ANVIL_TYPE_Q5_K;
        } else if (t != ANVIL_TYPE_Q8_0) {
            t = ANVIL_TYPE_Q6_K;
        }
    }
    return t;
}

/* token_embd.weight: --token-embedding-type, else by preset. */
static uint32_t mix_token_embd(const qz_policy_state *qs, uint32_t t) {
    const uint32_t ftype = qs->ftype;
    const anvil_quantize_options *o = qs->opts;
    if (o->token_embedding_type != ANVIL_TRANSCODE_NO_TYPE) {
        t = o->token_embedding_type;
    } else if (FT(IQ2_XXS) || FT(IQ2_XS) || FT(IQ1_S) || FT(IQ1_M)) {
        t = ANVIL_TYPE_Q2_K;
    } else if (FT(IQ2_S) || FT(IQ2_M)) {
        t = ANVIL_TYPE_IQ3_S;
    } else if (FT(IQ3_XXS)) {
        t = ANVIL_TYPE_IQ3_S;
    } else if (FT(TQ1_0) || FT(TQ2_0) || FT(Q2_0)) {
        t = ANVIL_TYPE_Q4_K;
    }
    return t;
}

/* The IQ1/IQ2 presets' own rules (the attn_v and ffn_down counters move). */
static uint32_t mix_low_iq(qz_policy_state *qs, qz_category cat, uint32_t t) {
    const uint32_t ftype = qs->ftype;
    const uint32_t gqa = qs->model.n_gqa, nexp = qs->model.n_expert;
    const uint32_t low = FT(IQ2_S) || FT(IQ2_M) ? ANVIL_TYPE_IQ3_S : ANVIL_TYPE_Q2_K;
    if (is_attn_v_like(cat)) {
        t = gqa >= 4 || nexp >= 4 ? ANVIL_TYPE_Q4_K : low;
        ++qs->i_attention_wv;
    } else if (nexp == 8 && cat == QZ_ATTENTION_K) {
        t = ANVIL_TYPE_Q4_K;
    } else if (cat == QZ_FFN_DOWN) {
        if (qs->i_ffn_down < qs->n_ffn_down / 8) t = low;
        ++qs->i_ffn_down;
    } else if (cat == QZ_ATTENTION_OUTPUT) {
        if (nexp == 8) {
            t = ANVIL_TYPE_Q5_K;
        } else if (FT(IQ1_S) || FT(IQ1_M)) {
            t = ANVIL_TYPE_IQ2_XXS;
        } else if (FT(IQ2_S) || FT(IQ2_M)) {
            t = ANVIL_TYPE_IQ3_S;
        }
    }
    return t;
}

/* attn_v (and what counts as it): the head ratio, the counter, the 70B rule. */
static uint32_t mix_attn_v(qz_policy_state *qs, uint32_t t) {
    const uint32_t ftype = qs->ftype;
    const qz_model *m = &qs->model;
    const uint32_t gqa = m->n_gqa, nexp = m->n_expert;
    if (FT(Q2_K)) {
        t = gqa >= 4 ? ANVIL_TYPE_Q4_K : ANVIL_TYPE_Q3_K;
    } else if (FT(Q2_K_S) && gqa >= 4) {
        t = ANVIL_TYPE_Q4_K;
    } else if (FT(IQ3_XXS)) {
        t = gqa >= 4 ? ANVIL_TYPE_Q4_K : !qs->has_imatrix ? ANVIL_TYPE_IQ3_S : ANVIL_TYPE_IQ3_XXS;
    } else if ((FT(IQ3_XS) || FT(IQ3_S)) && gqa >= 4) {
        t = ANVIL_TYPE_Q4_K;
    } else if (FT(IQ3_M)) {
        t = ANVIL_TYPE_Q4_K;
    } else if (FT(Q3_K_M)) {
        t = qs->i_attention_wv < 2 ? ANVIL_TYPE_Q5_K : ANVIL_TYPE_Q4_K;
    } else if (FT(Q3_K_L)) {
        t = ANVIL_TYPE_Q5_K;
    } else if ((FT(IQ4_NL) || FT(IQ4_XS)) && gqa >= 4) {
        t = ANVIL_TYPE_Q5_K;
    } else if ((FT(Q4_K_M) || FT(Q5_K_M)) && use_more_bits(qs->i_attention_wv, qs->n_attention_wv)) {
        t = ANVIL_TYPE_Q6_K;
    } else if (FT(Q4_K_S) && qs->i_attention_wv < 4) {
        t = ANVIL_TYPE_Q5_K;
    }
    if (m->is_70b && (t == ANVIL_TYPE_Q3_K || t == ANVIL_TYPE_Q4_K)) t = ANVIL_TYPE_Q5_K;
    if (nexp == 8) t = ANVIL_TYPE_Q8_0;
    ++qs->i_attention_wv;
    return t;
}

/* ffn_down: by layer (counted, or read from the name for MoE models). */
static int mix_ffn_down(qz_policy_state *qs, const char *name, uint32_t *type, anvil_error *err) {
    const uint32_t ftype = qs->ftype;
    const qz_model *m = &qs->model;
    const uint32_t nexp = m->n_expert;
    uint32_t t = *type;
    int layer = 0;
    const int rc = layer_info(qs, qs->i_ffn_down, name, &layer, err);
    if (rc != ANVIL_OK) return rc;
    const int n = qs->n_ffn_down, falcon = m->arch == QZ_ARCH_FALCON;
    if (FT(Q2_K)) {
        t = ANVIL_TYPE_Q3_K;
    } else if (FT(Q2_K_S)) {
        if (layer < n / 8) t = ANVIL_TYPE_Q4_K;
    } else if (FT(IQ3_XXS) && !qs->has_imatrix) {
        t = layer < n / 8 ? ANVIL_TYPE_Q4_K : ANVIL_TYPE_Q3_K;
    } else if (FT(Q3_K_M)) {
        t = layer < n / 16 ? ANVIL_TYPE_Q5_K : !falcon || use_more_bits(layer, n) ? ANVIL_TYPE_Q4_K : ANVIL_TYPE_Q3_K;
    } else if (FT(IQ3_M) && (layer < n / 8 || (nexp == 8 && use_more_bits(layer, n)))) {
        t = ANVIL_TYPE_Q4_K;
    } else if (FT(Q3_K_L)) {
        t = falcon ? ANVIL_TYPE_Q4_K : ANVIL_TYPE_Q5_K;
    } else if (FT(Q4_K_M)) {
        if (falcon) {
            t = layer < n / 16 ? ANVIL_TYPE_Q6_K : use_more_bits(layer, n) ? ANVIL_TYPE_Q5_K : ANVIL_TYPE_Q4_K;
        } else if (use_more_bits(layer, n)) {
            t = ANVIL_TYPE_Q6_K;
        }
    } else if (layer < n / 8 && (FT(IQ4_NL) || FT(IQ4_XS)) && !qs->has_imatrix) {
        t = ANVIL_TYPE_Q5_K;
    } else if (FT(Q5_K_M) && use_more_bits(layer, n)) {
        t = ANVIL_TYPE_Q6_K;
    } else if (FT(Q4_K_S) && !falcon && layer < n / 8) {
        t = ANVIL_TYPE_Q5_K;
    } else if ((FT(Q4_0) || FT(Q5_0)) && qs->has_imatrix && layer < n / 8) {
        t = FT(Q4_0) ? ANVIL_TYPE_Q4_1 : ANVIL_TYPE_Q5_1;
    }
    ++qs->i_ffn_down;
    *type = t;
    return ANVIL_OK;
}

/* attn_output: by preset, experts, falcon. */
static uint32_t mix_attn_output(const qz_policy_state *qs, uint32_t t) {
    const uint32_t ftype = qs->ftype;
    const qz_model *m = &qs->model;
    const uint32_t nexp = m->n_expert;
    if (m->arch != QZ_ARCH_FALCON) {
        if (nexp == 8) {
            if (FT(Q2_K) || FT(IQ3_XS) || FT(IQ3_XXS) || FT(Q3_K_S) || FT(Q3_K_M) || FT(IQ4_NL) || FT(Q4_K_S) ||
                FT(Q4_K_M) || FT(IQ3_S) || FT(IQ3_M) || FT(IQ4_XS)) {
                t = ANVIL_TYPE_Q5_K;
            }
        } else if (FT(Q2_K)) {
            t = ANVIL_TYPE_Q3_K;
        } else if (FT(IQ3_XXS)) {
            t = ANVIL_TYPE_IQ3_S;
        } else if (FT(Q3_K_M)) {
            t = ANVIL_TYPE_Q4_K;
        } else if (FT(Q3_K_L)) {
            t = ANVIL_TYPE_Q5_K;
        } else if (FT(IQ3_M)) {
            t = ANVIL_TYPE_Q4_K;
        }
    } else if (FT(Q3_K_L)) {
        t = ANVIL_TYPE_Q4_K;
    }
    return t;
}

static int mixture(qz_policy_state *qs, const anvil_gguf_tensor *tensor, const char *name, qz_category cat,
                   uint32_t *type, anvil_error *err) {
    const uint32_t ftype = qs->ftype;
    const qz_model *m = &qs->model;
    const uint32_t nexp = m->n_expert;
    uint32_t t = *type;
    int rc = ANVIL_OK, layer = 0;
    if (m->no_layers && is_attn_v_like(cat) && qz_rules_ask_gqa(ftype)) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "tensor '%s': this preset's rule for it needs the model's attention heads, and "
                                "the model has no layers (llama.cpp aborts here); choose a K-quant preset other "
                                "than Q2_K, or set its type with --tensor-type",
                                name);
    }
    if (cat == QZ_OUTPUT || (qs->has_tied_embeddings && cat == QZ_TOKEN_EMBD)) {
        t = mix_output(qs, tensor, t);
    } else if (FT(MXFP4_MOE)) {
        const int bailing_expert = m->arch == QZ_ARCH_BAILINGMOE3 &&
                                   (cat == QZ_FFN_UP || cat == QZ_FFN_GATE || cat == QZ_FFN_DOWN);
        t = tensor->ne[2] > 1 && (m->arch != QZ_ARCH_BAILINGMOE3 || bailing_expert) ? ANVIL_TYPE_MXFP4
                                                                                    : ANVIL_TYPE_Q8_0;
    } else if (cat == QZ_TOKEN_EMBD) {
        t = mix_token_embd(qs, t);
    } else if (FT(IQ2_XXS) || FT(IQ2_XS) || FT(IQ1_S) || FT(IQ2_S) || FT(IQ2_M) || FT(IQ1_M)) {
        t = mix_low_iq(qs, cat, t);
    } else if (is_attn_v_like(cat)) {
        t = mix_attn_v(qs, t);
    } else if (cat == QZ_ATTENTION_K) {
        if (nexp == 8) {
            t = ANVIL_TYPE_Q8_0;
        } else if (FT(IQ3_XS)) {
            t = ANVIL_TYPE_IQ3_XXS;
        } else if (FT(IQ3_XXS)) {
            t = ANVIL_TYPE_IQ2_S;
        }
    } else if (cat == QZ_ATTENTION_Q) {
        if (FT(IQ3_XS)) {
            t = ANVIL_TYPE_IQ3_XXS;
        } else if (FT(IQ3_XXS)) {
            t = ANVIL_TYPE_IQ2_S;
        }
    } else if (cat == QZ_FFN_DOWN) {
        rc = mix_ffn_down(qs, name, &t, err);
        if (rc != ANVIL_OK) return rc;
    } else if (cat == QZ_ATTENTION_OUTPUT) {
        t = mix_attn_output(qs, t);
    } else if (cat == QZ_ATTENTION_QKV) {
        if (FT(Q3_K_M) || FT(Q3_K_L) || FT(IQ3_M)) {
            t = ANVIL_TYPE_Q4_K;
        } else if (FT(Q4_K_M)) {
            t = ANVIL_TYPE_Q5_K;
        } else if (FT(Q5_K_M)) {
            t = ANVIL_TYPE_Q6_K;
        }
    } else if (cat == QZ_FFN_GATE || cat == QZ_FFN_UP) {
        int *counter = cat == QZ_FFN_GATE ? &qs->i_ffn_gate : &qs->i_ffn_up;
        const int n = cat == QZ_FFN_GATE ? qs->n_ffn_gate : qs->n_ffn_up;
        rc = layer_info(qs, *counter, name, &layer, err);
        if (rc != ANVIL_OK) return rc;
        if (FT(IQ3_XS) && layer >= n / 8 && layer < 7 * n / 8) t = ANVIL_TYPE_IQ3_XXS;
        ++*counter;
    }
    *type = t;
    return ANVIL_OK;
}

#undef FT

/* tensor_type_fallback: a type whose block does not divide the rows. */
static int fallback(qz_policy_state *qs, const anvil_gguf_tensor *tensor, uint32_t *type, uint32_t *from,
                    anvil_error *err) {
    const uint32_t target = *type, qk = qz_block_size(target);
    const uint64_t ncols = tensor->ne[0];
    if (qk == 0) return anvil__error_set(err, ANVIL_E_UNKNOWN_TYPE, "type id %u is not a ggml type", target);
    if (ncols % qk == 0) return ANVIL_OK;
    ++qs->n_fallback;
    uint32_t r;
    switch (target) {
    case ANVIL_TYPE_IQ4_XS: r = ANVIL_TYPE_IQ4_NL; break;
    case ANVIL_TYPE_Q2_0:
    case ANVIL_TYPE_Q2_K:
    case ANVIL_TYPE_Q3_K:
    case ANVIL_TYPE_TQ1_0:
    case ANVIL_TYPE_TQ2_0: r = ANVIL_TYPE_Q4_0; break;
    case ANVIL_TYPE_Q4_K: r = ANVIL_TYPE_Q5_0; break;
    case ANVIL_TYPE_Q5_K: r = ANVIL_TYPE_Q5_1; break;
    case ANVIL_TYPE_Q6_K: r = ANVIL_TYPE_Q8_0; break;
    default:
        if (qz_is_grid_iq(target)) {
            r = ANVIL_TYPE_IQ4_NL;
            break;
        }
        if (qk <= 32) {
            r = target; /* no smaller block: F16 below */
            break;
        }
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "tensor '%s': rows of %llu are not a multiple of %s's %u and llama.cpp "
                                "defines no fallback type for %s",
                                tensor->name, (unsigned long long)ncols, anvil_type_name(NULL, target), qk,
                                anvil_type_name(NULL, target));
    }
    if (ncols % qz_block_size(r) != 0) r = ANVIL_TYPE_F16;
    *from = target;
    *type = r;
    return ANVIL_OK;
}

int qz_tensor_type(qz_policy_state *qs, anvil_transcode *t, const anvil_gguf_tensor *tensor, const char *name,
                   qz_category cat, uint32_t default_type, uint32_t *type, uint32_t *fallback_from, const char **why,
                   anvil_error *err) {
    const anvil_quantize_options *o = qs->opts;
    *fallback_from = ANVIL_TRANSCODE_NO_TYPE;
    size_t k = 0;
    if (o->token_embedding_type != ANVIL_TRANSCODE_NO_TYPE && cat == QZ_TOKEN_EMBD) {
        /* per_layer_token_embd follows it unless a --tensor-type names it. */
        int named = 0;
        if (strcmp(name, "per_layer_token_embd.weight") == 0) {
            named = tc_match_rule(t, name, &k, err);
            if (named < 0) return ANVIL_E_INVALID_ARG;
        }
        if (!named) {
            *type = o->token_embedding_type;
            *why = "--token-embedding-type";
            return ANVIL_OK;
        }
    }
    if (o->output_tensor_type != ANVIL_TRANSCODE_NO_TYPE && cat == QZ_OUTPUT) {
        *type = o->output_tensor_type;
        *why = "--output-tensor-type";
        return ANVIL_OK;
    }
    uint32_t nt = default_type;
    *why = "preset";
    if (!qz_is_quantized(default_type)) {
        *type = nt;
        return ANVIL_OK;
    }
    const int manual = tc_match_rule(t, name, &k, err);
    if (manual < 0) return ANVIL_E_INVALID_ARG;
    if (manual) {
        nt = t->rules[k].type;
        *why = t->rules[k].label;
    } else if (!o->pure) {
        const int rc = mixture(qs, tensor, name, cat, &nt, err);
        if (rc != ANVIL_OK) return rc;
        if (nt != default_type) *why = "preset mixture";
    } else {
        *why = "--pure";
    }
    const int rc = fallback(qs, tensor, &nt, fallback_from, err);
    if (rc != ANVIL_OK) return rc;
    *type = nt;
    return ANVIL_OK;
}
