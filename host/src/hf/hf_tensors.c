/* SPDX-License-Identifier: MIT */
/*
 * hf_tensors: the tensors convert_hf_to_gguf.py writes for the llama, qwen2
 * and qwen3 architectures, in its order (prepare_tensors: the generated
 * rope_freqs.weight first, then the checkpoint's tensors), with their GGUF
 * names (gguf-py's TensorNameMap entries for Hugging Face names), shapes in
 * ggml order, and llama's Q/K permutation. A tensor the map does not know,
 * a layer past num_hidden_layers, or a shape that disagrees with config.json
 * is refused by name.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hf_internal.h"
#include "hf_phi3.h"

typedef struct name_map {
    const char *hf;   /* checkpoint name without .weight/.bias ("{L}" = model.layers.N.) */
    const char *gguf; /* GGUF base name ("{B}" = blk.N.) */
    unsigned arches;  /* 0: every architecture, else a mask of 1 << hf_arch_id */
} name_map;

#define A_(id) (1u << (id))
#define QNORM (A_(HF_ARCH_QWEN3) | A_(HF_ARCH_QWEN3MOE))
#define ROUTER (A_(HF_ARCH_QWEN2MOE) | A_(HF_ARCH_QWEN3MOE))

/* The arch lists of gguf-py's constants.py (MODEL_TENSORS) limit which
 * TensorNameMap entries an architecture has. */
static const name_map k_names[] = {
    { "model.embed_tokens", "token_embd", 0 },
    { "lm_head", "output", 0 },
    { "model.norm", "output_norm", 0 },
    { "{L}input_layernorm", "{B}attn_norm", 0 },
    { "{L}self_attn.q_proj", "{B}attn_q", 0 },
    { "{L}self_attn.k_proj", "{B}attn_k", 0 },
    { "{L}self_attn.v_proj", "{B}attn_v", 0 },
    { "{L}self_attn.o_proj", "{B}attn_output", 0 },
    { "{L}post_attention_layernorm", "{B}ffn_norm", 0 },
    { "{L}mlp.gate_proj", "{B}ffn_gate", 0 },
    { "{L}mlp.up_proj", "{B}ffn_up", 0 },
    { "{L}mlp.down_proj", "{B}ffn_down", 0 },
    { "{L}self_attn.q_norm", "{B}attn_q_norm", QNORM },
    { "{L}self_attn.k_norm", "{B}attn_k_norm", QNORM },
    { "{L}mlp.gate", "{B}ffn_gate_inp", ROUTER },
    { "{L}block_sparse_moe.gate", "{B}ffn_gate_inp", A_(HF_ARCH_MIXTRAL) },
    { "{L}mlp.shared_expert.gate_proj", "{B}ffn_gate_shexp", A_(HF_ARCH_QWEN2MOE) },
    { "{L}mlp.shared_expert.up_proj", "{B}ffn_up_shexp", A_(HF_ARCH_QWEN2MOE) },
    { "{L}mlp.shared_expert.down_proj", "{B}ffn_down_shexp", A_(HF_ARCH_QWEN2MOE) },
    { "{L}mlp.shared_expert_gate", "{B}ffn_gate_inp_shexp", A_(HF_ARCH_QWEN2MOE) },
};

/* The first all-digit part of a dotted name (convert's bid), or -1. */
static long block_id(const char *name) {
    const char *p = name;
    while (*p) {
        const char *e = strchr(p, '.');
        const size_t n = e ? (size_t)(e - p) : strlen(p);
        size_t k = 0;
        while (k < n && p[k] >= '0' && p[k] <= '9') ++k;
        if (n > 0 && k == n && n < 10) return strtol(p, NULL, 10);
        if (e == NULL) break;
        p = e + 1;
    }
    return -1;
}

static int expand(const char *pattern, long bid, const char *tag, const char *repl_fmt, char *out, size_t cap) {
    const char *at = strstr(pattern, tag);
    if (at == NULL) return snprintf(out, cap, "%s", pattern) < (int)cap ? 0 : -1;
    if (bid < 0) return -1;
    char repl[64];
    snprintf(repl, sizeof repl, repl_fmt, bid);
    const int n = snprintf(out, cap, "%.*s%s%s", (int)(at - pattern), pattern, repl, at + strlen(tag));
    return n >= 0 && (size_t)n < cap ? 0 : -1;
}

/* GGUF name of a checkpoint tensor (TensorNameMap.get_name with the
 * suffixes .weight and .bias), or -1 when it has none. */
static int map_name(hf_arch_id arch, const char *name, uint64_t n_blocks, char *out, size_t cap) {
    const long bid = block_id(name);
    static const char *const suffixes[] = { "", ".weight", ".bias" };
    for (size_t s = 0; s < 3; ++s) {
        const size_t nl = strlen(name), sl = strlen(suffixes[s]);
        if (nl < sl || strcmp(name + nl - sl, suffixes[s]) != 0) continue;
        for (size_t i = 0; i < sizeof k_names / sizeof k_names[0]; ++i) {
            if (k_names[i].arches != 0 && !(k_names[i].arches & A_(arch))) continue;
            char hf[256], gg[128];
            if (expand(k_names[i].hf, bid, "{L}", "model.layers.%ld.", hf, sizeof hf) != 0) continue;
            if (strlen(hf) != nl - sl || memcmp(hf, name, nl - sl) != 0) continue;
            if (bid >= 0 && strstr(k_names[i].hf, "{L}") != NULL && (uint64_t)bid >= n_blocks) return -1;
            if (expand(k_names[i].gguf, bid, "{B}", "blk.%ld.", gg, sizeof gg) != 0) return -1;
            const int n = snprintf(out, cap, "%s%s", gg, suffixes[s]);
            return n >= 0 && (size_t)n < cap ? 0 : -1;
        }
    }
    return -1;
}

static uint64_t cfg_u(const hf_folder *f, const char *key) {
    int64_t v = 0;
    return anvil__json_i64(anvil__json_get(f->config, key), &v) == 0 && v > 0 ? (uint64_t)v : 0;
}

/* The shape config.json implies for a GGUF base name (row-major dims), 0
 * dims when it implies none. */
static size_t expected_shape(const hf_folder *f, const char *gguf, uint64_t dims[2]) {
    const uint64_t hidden = cfg_u(f, "hidden_size"), vocab = cfg_u(f, "vocab_size");
    const uint64_t ff = cfg_u(f, "intermediate_size"), nh = cfg_u(f, "num_attention_heads");
    uint64_t n_exp = cfg_u(f, "num_experts");
    if (n_exp == 0) n_exp = cfg_u(f, "num_local_experts");
    const uint64_t sff = cfg_u(f, "shared_expert_intermediate_size");
    uint64_t nkv = cfg_u(f, "num_key_value_heads");
    if (nkv == 0) nkv = nh;
    uint64_t hd = cfg_u(f, "head_dim");
    if (hd == 0 && nh != 0) hd = hidden / nh;
    const char *b = strncmp(gguf, "blk.", 4) == 0 ? strchr(gguf + 4, '.') + 1 : gguf;
    struct {
        const char *n;
        uint64_t d0, d1;
        size_t nd;
    } t[] = {
        { "token_embd.weight", vocab, hidden, 2 },
        { "output.weight", vocab, hidden, 2 },
        { "output_norm.weight", hidden, 0, 1 },
        { "attn_norm.weight", hidden, 0, 1 },
        { "ffn_norm.weight", hidden, 0, 1 },
        { "attn_q.weight", nh * hd, hidden, 2 },
        { "attn_k.weight", nkv * hd, hidden, 2 },
        { "attn_v.weight", nkv * hd, hidden, 2 },
        { "attn_output.weight", hidden, nh * hd, 2 },
        { "ffn_gate.weight", ff, hidden, 2 },
        { "ffn_up.weight", ff, hidden, 2 },
        { "ffn_down.weight", hidden, ff, 2 },
        { "attn_q.bias", nh * hd, 0, 1 },
        { "attn_k.bias", nkv * hd, 0, 1 },
        { "attn_v.bias", nkv * hd, 0, 1 },
        { "attn_q_norm.weight", hd, 0, 1 },
        { "attn_k_norm.weight", hd, 0, 1 },
        { "ffn_gate_inp.weight", n_exp, hidden, 2 },
        { "ffn_gate_shexp.weight", sff, hidden, 2 },
        { "ffn_up_shexp.weight", sff, hidden, 2 },
        { "ffn_down_shexp.weight", hidden, sff, 2 },
        { "ffn_gate_inp_shexp.weight", 1, hidden, 2 },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; ++i) {
        if (strcmp(b, t[i].n) == 0) {
            if (t[i].d0 == 0 || (t[i].nd == 2 && t[i].d1 == 0)) return 0;
            dims[0] = t[i].d0;
            dims[1] = t[i].d1;
            return t[i].nd;
        }
    }
    return 0;
}

static int check_shape(const hf_folder *f, const hf_src_tensor *s, const char *gguf, anvil_error *err) {
    uint64_t d[2];
    const size_t nd = expected_shape(f, gguf, d);
    if (nd == 0) return ANVIL_OK;
    const anvil_st_tensor *t = s->st;
    if (t->rank == nd && t->shape[0] == d[0] && (nd == 1 || t->shape[1] == d[1])) return ANVIL_OK;
    char want[64], got[128];
    if (nd == 1) snprintf(want, sizeof want, "[%llu]", (unsigned long long)d[0]);
    else snprintf(want, sizeof want, "[%llu, %llu]", (unsigned long long)d[0], (unsigned long long)d[1]);
    size_t o = 0;
    got[o++] = '[';
    for (size_t i = 0; i < t->rank && o < sizeof got - 24; ++i) {
        o += (size_t)snprintf(got + o, sizeof got - o, "%s%llu", i ? ", " : "", (unsigned long long)t->shape[i]);
    }
    snprintf(got + o, sizeof got - o, "]");
    return anvil__error_set(err, ANVIL_E_FORMAT,
                            "%s/%s: tensor \"%s\" has shape %s, but config.json implies %s; "
                            "the weights and config.json do not belong together",
                            f->dir, f->part_names[s->part], s->name, got, want);
}

static int src_tensor(const hf_arch *a, const hf_folder *f, size_t i, uint64_t n_blocks, hf_out_tensor *o,
                      anvil_error *err) {
    const hf_src_tensor *s = &f->tensors[i];
    const anvil_st_tensor *t = s->st;
    if (map_name(a->id, s->name, n_blocks, o->name, sizeof o->name) != 0) {
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                "%s/%s: cannot map tensor \"%s\" to a %s GGUF tensor "
                                "(convert_hf_to_gguf.py refuses it too)",
                                f->dir, f->part_names[s->part], s->name, a->gguf_name);
    }
    if (t->dtype != ANVIL_ST_F32 && t->dtype != ANVIL_ST_F16 && t->dtype != ANVIL_ST_BF16 && s->scale == NULL) {
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                "%s/%s: tensor \"%s\" is %s; anvil convert reads "
                                "F32, F16, BF16 and scaled FP8 weights",
                                f->dir, f->part_names[s->part], s->name, anvil_st_dtype_name(t->dtype));
    }
    if (t->rank > 4) {
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED, "%s: tensor \"%s\" has %zu dims (GGUF holds 4)", f->dir,
                                s->name, t->rank);
    }
    int rc = check_shape(f, s, o->name, err);
    if (rc != ANVIL_OK) return rc;
    hf_out_fill(f, i, o);
    if (a->undo_permute && (hf_ends_with(s->name, "q_proj.weight") || hf_ends_with(s->name, "q_proj.bias") ||
                            hf_ends_with(s->name, "k_proj.weight") || hf_ends_with(s->name, "k_proj.bias"))) {
        const int is_k = strstr(s->name, "k_proj.") != NULL;
        uint64_t heads = cfg_u(f, "num_attention_heads");
        const uint64_t kv = cfg_u(f, "num_key_value_heads");
        if (is_k && kv != 0 && kv != heads) heads = kv;
        if (heads == 0 || t->rank == 0 || t->shape[0] % (heads * 2) != 0) {
            return anvil__error_set(err, ANVIL_E_FORMAT,
                                    "%s: tensor \"%s\": %llu rows do not split into %llu "
                                    "heads of two halves",
                                    f->dir, s->name, (unsigned long long)(t->rank ? t->shape[0] : 0),
                                    (unsigned long long)heads);
        }
        o->permute_heads = (int)heads;
    }
    return ANVIL_OK;
}

/* LlamaModel.generate_extra_tensors for rope_type llama3, in float32 as
 * PyTorch evaluates it (a / tensor is reciprocal() * a). */
static int llama3_rope_freqs(const hf_folder *f, hf_out_tensor *o, anvil_error *err) {
    const anvil_json_value *p = anvil__json_get(f->config, "rope_parameters");
    if (p == NULL) p = anvil__json_get(f->config, "rope_scaling");
    const char *type = anvil__json_str(anvil__json_get(p, "rope_type"));
    if (type == NULL) type = anvil__json_str(anvil__json_get(p, "type"));
    if (type == NULL || strcasecmp(type, "llama3") != 0) return 0;
    const anvil_json_value *th = anvil__json_get(p, "rope_theta");
    if (th == NULL) th = anvil__json_get(f->config, "rope_theta");
    const double base = anvil__json_is_number(th) ? anvil__json_f64(th) : 10000.0;
    uint64_t dim = cfg_u(f, "head_dim");
    if (dim == 0 && cfg_u(f, "num_attention_heads") != 0)
        dim = cfg_u(f, "hidden_size") / cfg_u(f, "num_attention_heads");
    if (dim == 0 || dim > (1u << 20)) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s/config.json: no usable head dim for the rope factors",
                                f->dir);
    }
#define RP(k, d) (anvil__json_is_number(anvil__json_get(p, k)) ? anvil__json_f64(anvil__json_get(p, k)) : (d))
    const double factor = RP("factor", 8.0), lo = RP("low_freq_factor", 1.0), hi = RP("high_freq_factor", 4.0);
    const double old_ctx = RP("original_max_position_embeddings", 8192.0);
#undef RP
    const double lo_wl = old_ctx / lo, hi_wl = old_ctx / hi;
    const size_t n = (size_t)((dim + 1) / 2);
    o->generated = malloc(n * sizeof(float));
    if (o->generated == NULL) return anvil__nomem(err);
    const float fbase = (float)base, fdim = (float)dim;
    for (size_t i = 0; i < n; ++i) {
        const float e = (float)(2 * i) / fdim;
        const float freq = 1.0f / powf(fbase, e);
        const float wavelen = (1.0f / freq) * (float)(2 * M_PI);
        float r;
        if (wavelen < (float)hi_wl) r = 1.0f;
        else if (wavelen > (float)lo_wl) r = (float)factor;
        else {
            const float smooth = ((1.0f / wavelen) * (float)old_ctx - (float)lo) / (float)(hi - lo);
            r = 1.0f / ((1.0f - smooth) / (float)factor + smooth);
        }
        o->generated[i] = r;
    }
    snprintf(o->name, sizeof o->name, "rope_freqs.weight");
    o->src = -1;
    o->n_dims = 1;
    o->ne[0] = n;
    o->n_elements = n;
    return 1;
}

int hf_arch_plan(const hf_arch *a, const hf_folder *f, hf_out_tensor **out, size_t *n_out, anvil_error *err) {
    if (hf_arch_is_gemma(a)) return hf_gemma_plan(a, f, out, n_out, err);
    if (a->id == HF_ARCH_PHI3) return hf_phi3_plan(f, out, n_out, err);
    if (a->id == HF_ARCH_GPTOSS) return hf_gptoss_plan(a, f, out, n_out, err);
    if (a->id == HF_ARCH_DEEPSEEK2) return hf_deepseek_plan(a, f, out, n_out, err);
    if (a->id == HF_ARCH_GLM4MOE) return hf_glm4moe_plan(a, f, out, n_out, err);
    if (a->id == HF_ARCH_QWEN35 || a->id == HF_ARCH_QWEN35MOE || a->id == HF_ARCH_QWEN3NEXT)
        return hf_qwen35_plan(a, f, out, n_out, err);
    *out = NULL;
    *n_out = 0;
    uint64_t n_blocks = 0;
    int rc = hf_arch_block_count(f, &n_blocks, err);
    if (rc != ANVIL_OK) return rc;
    /* a fused gate_up gives two outputs: room for 2 per source */
    const size_t cap = 2 * f->n_tensors + 2;
    hf_out_tensor *ts = calloc(cap, sizeof *ts);
    if (ts == NULL) return anvil__nomem(err);
    hf_moe_state *moe = NULL;
    if (hf_arch_is_moe(a)) rc = hf_moe_begin(a, f, n_blocks, &moe, err);
    size_t n = 0;
    if (rc == ANVIL_OK && a->undo_permute) {
        rc = llama3_rope_freqs(f, &ts[n], err);
        if (rc > 0) n++;
        rc = rc < 0 ? rc : ANVIL_OK;
    }
    for (size_t i = 0; i < f->n_tensors && rc == ANVIL_OK; ++i) {
        const char *nm = f->tensors[i].name;
        if (hf_src_dropped(nm)) {
            continue;
        }
        const int taken = moe != NULL ? hf_moe_take(moe, i, ts, &n, err) : 0;
        if (taken < 0) rc = taken;
        if (taken != 0) continue;
        rc = src_tensor(a, f, i, n_blocks, &ts[n], err);
        if (rc == ANVIL_OK) n++;
    }
    if (rc == ANVIL_OK && moe != NULL) rc = hf_moe_done(moe, err);
    hf_moe_free(moe);
    /* two tensors mapped to one name: hf_check_plan (sorted, O(n log n)) */
    if (rc != ANVIL_OK) {
        hf_plan_free(ts, cap);
        return rc;
    }
    *out = ts;
    *n_out = n;
    return ANVIL_OK;
}
