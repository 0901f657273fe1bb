/* SPDX-License-Identifier: MIT */
/*
 * hf_phi3: Phi3ForCausalLM as convert_hf_to_gguf.py's Phi3MiniModel writes
 * it (gguf architecture phi3; llama.cpp de3ff815, conversion/phi.py).
 *
 * - hparams (hf_phi3_hparams): its own set_gguf_parameters, in its order:
 *   context_length (n_positions / max_position_embeddings), the rope's
 *   original_max_position_embeddings, embedding/feed-forward length, block
 *   and head counts, rms epsilon, rope dims (int(partial_rotary_factor *
 *   hidden_size) // heads), rope theta, file type, sliding_window (0 when
 *   null or absent). The rope values are read from rope_parameters as
 *   TextModel.__init__ builds it: config.json's rope_parameters or
 *   rope_scaling object, with rope_theta, type, partial_rotary_factor and
 *   original_max_position_embeddings mirrored from the top level.
 * - tensors (hf_phi3_plan): the fused self_attn.qkv_proj and mlp.gate_up_proj
 *   are kept fused (attn_qkv, ffn_up), as the converter keeps them; no
 *   permutation. With longrope / su / yarn factors (long_factor,
 *   short_factor) the generated rope_factors_long.weight and
 *   rope_factors_short.weight (f32) come first, and the KV
 *   {arch}.rope.scaling.attn_factor (hf_phi3_extra_kvs) is written right
 *   after general.architecture: the converter adds it while preparing the
 *   tensors, before any other KV (not for --vocab-only).
 * What the converter would stop on (a missing key, factors of the wrong
 * length, an unknown scaling type) is an error naming config.json and the
 * key; a tensor the phi3 name map does not know, or of a shape config.json
 * does not imply, is refused by name.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hf_internal.h"
#include "hf_phi3.h"

typedef struct phi3_cfg {
    const anvil_json_value *cfg;
    const anvil_json_value *rope; /* rope_parameters / rope_scaling object, or NULL */
    int mirror;                   /* no full_attention / sliding_attention in it */
    char path[4096];              /* config.json */
    uint32_t n_embd, n_head, n_kv, n_ff, max_pos, orig, rope_dims, blocks;
    double rms_eps, theta;
} phi3_cfg;

static const anvil_json_value *find_key(const anvil_json_value *cfg, const char *const *keys) {
    for (; *keys != NULL; ++keys) {
        const anvil_json_value *v = anvil__json_get(cfg, *keys);
        if (v != NULL) return v;
    }
    return NULL;
}

/* rope_parameters[key] after TextModel.__init__: the object's own value,
 * else the first top-level key of tops present, when not null (mirrored). */
static const anvil_json_value *rope_get(const phi3_cfg *c, const char *key, const char *const *tops) {
    const anvil_json_value *v = anvil__json_get(c->rope, key);
    if (v != NULL || !c->mirror) return v;
    if (strcmp(key, "rope_type") == 0) {
        v = anvil__json_get(c->rope, "type");
        return anvil__json_is_null(v) ? NULL : v;
    }
    v = tops != NULL ? find_key(c->cfg, tops) : NULL;
    return anvil__json_is_null(v) ? NULL : v;
}

static int need(const phi3_cfg *c, const anvil_json_value *v, const char *what, anvil_error *err) {
    if (v != NULL) return ANVIL_OK;
    return anvil__error_set(err, ANVIL_E_FORMAT,
                            "%s: no %s (convert_hf_to_gguf.py's Phi3 class needs it); add it to config.json", c->path,
                            what);
}

static int as_u32(const phi3_cfg *c, const anvil_json_value *v, const char *what, uint32_t *out, anvil_error *err) {
    int64_t x = 0;
    int rc = need(c, v, what, err);
    if (rc != ANVIL_OK) return rc;
    if (anvil__json_i64(v, &x) != 0 || x < 0 || x > (int64_t)UINT32_MAX) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s: \"%s\" must be a whole number in [0, 2^32), not %s",
                                c->path, what, v->text ? v->text : anvil__json_event_what(v->kind));
    }
    *out = (uint32_t)x;
    return ANVIL_OK;
}

static int as_num(const phi3_cfg *c, const anvil_json_value *v, const char *what, double *out, anvil_error *err) {
    int rc = need(c, v, what, err);
    if (rc != ANVIL_OK) return rc;
    if (!anvil__json_is_number(v)) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s: \"%s\" must be a number, not %s", c->path, what,
                                anvil__json_event_what(v->kind));
    }
    *out = anvil__json_f64(v);
    return ANVIL_OK;
}

static int read_cfg(const hf_folder *f, phi3_cfg *c, anvil_error *err) {
    static const char *const embd[] = { "hidden_size", "n_embd", NULL }, *const head[] = { "num_attention_heads",
                                                                                           "n_head", NULL };
    static const char *const kv[] = { "num_key_value_heads", "n_head_kv", NULL }, *const eps[] = { "rms_norm_eps",
                                                                                                   NULL };
    static const char *const pos[] = { "n_positions", "max_position_embeddings", NULL }, *const ff[] = {
        "intermediate_size", NULL
    };
    static const char *const theta[] = { "global_rope_theta", "rope_global_theta", "rope_theta_global",
                                         "rope_theta",        "rotary_emb_base",   NULL };
    static const char *const pct[] = { "partial_rotary_factor", "rope_pct", "rope_percent", NULL };
    static const char *const orig[] = { "original_max_position_embeddings", NULL };
    memset(c, 0, sizeof *c);
    c->cfg = f->config;
    snprintf(c->path, sizeof c->path, "%s/config.json", f->dir);
    const anvil_json_value *p = anvil__json_get(f->config, "rope_parameters");
    if (p == NULL) p = anvil__json_get(f->config, "rope_scaling");
    c->rope = p != NULL && p->kind == ANVIL_JSON_OBJECT_BEGIN ? p : NULL;
    c->mirror = anvil__json_get(c->rope, "full_attention") == NULL &&
                anvil__json_get(c->rope, "sliding_attention") == NULL;
    uint64_t blocks = 0;
    int rc = hf_arch_block_count(f, &blocks, err);
    c->blocks = (uint32_t)blocks;
    if (rc == ANVIL_OK) rc = as_u32(c, find_key(f->config, embd), "hidden_size", &c->n_embd, err);
    if (rc == ANVIL_OK) rc = as_u32(c, find_key(f->config, head), "num_attention_heads", &c->n_head, err);
    if (rc == ANVIL_OK) rc = as_u32(c, find_key(f->config, kv), "num_key_value_heads", &c->n_kv, err);
    if (rc == ANVIL_OK) rc = as_num(c, find_key(f->config, eps), "rms_norm_eps", &c->rms_eps, err);
    if (rc == ANVIL_OK) rc = as_u32(c, find_key(f->config, pos), "max_position_embeddings", &c->max_pos, err);
    if (rc == ANVIL_OK)
        rc = as_u32(c, rope_get(c, "original_max_position_embeddings", orig), "original_max_position_embeddings",
                    &c->orig, err);
    if (rc == ANVIL_OK) rc = as_u32(c, find_key(f->config, ff), "intermediate_size", &c->n_ff, err);
    double rot = 1.0;
    const anvil_json_value *rp = rope_get(c, "partial_rotary_factor", pct);
    if (rc == ANVIL_OK && rp != NULL) rc = as_num(c, rp, "partial_rotary_factor", &rot, err);
    if (rc == ANVIL_OK && c->n_head == 0) {
        rc = anvil__error_set(err, ANVIL_E_FORMAT, "%s: num_attention_heads is 0", c->path);
    }
    const double dims = floor(rot * (double)c->n_embd); /* int(rot_pct * n_embd), rot_pct >= 0 */
    if (rc == ANVIL_OK && !(dims >= 0 && dims <= (double)UINT32_MAX)) {
        rc = anvil__error_set(err, ANVIL_E_FORMAT, "%s: partial_rotary_factor %g is out of range", c->path, rot);
    }
    if (rc == ANVIL_OK) c->rope_dims = (uint32_t)dims / c->n_head;
    const anvil_json_value *full = anvil__json_get(c->rope, "full_attention");
    const anvil_json_value *th = full != NULL ? anvil__json_get(full, "rope_theta")
                                              : rope_get(c, "rope_theta", theta);
    if (rc == ANVIL_OK) rc = as_num(c, th, "rope_theta", &c->theta, err);
    return rc;
}

static int set_u32(anvil_gguf_writer *w, const char *suffix, uint32_t v, anvil_error *err) {
    char key[96];
    snprintf(key, sizeof key, "phi3.%s", suffix);
    return anvil_gguf_writer_set_u32(w, key, v, err);
}

static int set_f32(anvil_gguf_writer *w, const char *suffix, double v, anvil_error *err) {
    char key[96];
    snprintf(key, sizeof key, "phi3.%s", suffix);
    return anvil_gguf_writer_set_f32(w, key, (float)v, err);
}

int hf_phi3_hparams(const hf_folder *f, uint32_t ftype, anvil_gguf_writer *w, anvil_error *err) {
    phi3_cfg c;
    int rc = read_cfg(f, &c, err);
    uint32_t sw = 0;
    const anvil_json_value *swv = anvil__json_get(f->config, "sliding_window");
    if (rc == ANVIL_OK && !anvil__json_is_null(swv)) rc = as_u32(&c, swv, "sliding_window", &sw, err);
    if (rc == ANVIL_OK) rc = set_u32(w, "context_length", c.max_pos, err);
    if (rc == ANVIL_OK) rc = set_u32(w, "rope.scaling.original_context_length", c.orig, err);
    if (rc == ANVIL_OK) rc = set_u32(w, "embedding_length", c.n_embd, err);
    if (rc == ANVIL_OK) rc = set_u32(w, "feed_forward_length", c.n_ff, err);
    if (rc == ANVIL_OK) rc = set_u32(w, "block_count", c.blocks, err);
    if (rc == ANVIL_OK) rc = set_u32(w, "attention.head_count", c.n_head, err);
    if (rc == ANVIL_OK) rc = set_u32(w, "attention.head_count_kv", c.n_kv, err);
    if (rc == ANVIL_OK) rc = set_f32(w, "attention.layer_norm_rms_epsilon", c.rms_eps, err);
    if (rc == ANVIL_OK) rc = set_u32(w, "rope.dimension_count", c.rope_dims, err);
    if (rc == ANVIL_OK) rc = set_f32(w, "rope.freq_base", c.theta, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, "general.file_type", ftype, err);
    if (rc == ANVIL_OK) rc = set_u32(w, "attention.sliding_window", sw, err);
    return rc;
}

/* generate_extra_tensors' checks: 0 without long factors, 1 with them
 * (*attn the attention factor, *lf and *sf the two lists), or an error. */
static int longrope(const phi3_cfg *c, double *attn, const anvil_json_value **lf, const anvil_json_value **sf,
                    anvil_error *err) {
    *lf = rope_get(c, "long_factor", NULL);
    *sf = rope_get(c, "short_factor", NULL);
    const anvil_json_value *l = *lf;
    if (l == NULL || l->kind == ANVIL_JSON_NULL || l->kind == ANVIL_JSON_FALSE ||
        (l->kind == ANVIL_JSON_ARRAY_BEGIN && l->n_items == 0))
        return 0;
    if (c->orig == 0) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s: original_max_position_embeddings is 0", c->path);
    }
    const double scale = (double)c->max_pos / (double)c->orig;
    const char *type = anvil__json_str(rope_get(c, "rope_type", NULL));
    if (type == NULL || type[0] == '\0') {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s: rope scaling with long_factor but no \"type\" / \"rope_type\" "
                                "(longrope, su or yarn)",
                                c->path);
    }
    char low[16];
    size_t n = 0;
    for (; type[n] != '\0' && n + 1 < sizeof low; ++n)
        low[n] = (char)(type[n] >= 'A' && type[n] <= 'Z' ? type[n] + 32 : type[n]);
    low[n] = '\0';
    if (type[n] == '\0' && (strcmp(low, "su") == 0 || strcmp(low, "longrope") == 0)) {
        *attn = scale > 1.0 ? sqrt(1.0 + log(scale) / log((double)c->orig)) : 1.0;
    } else if (type[n] == '\0' && strcmp(low, "yarn") == 0) {
        *attn = scale > 1.0 ? 0.1 * log(scale) + 1.0 : 1.0;
    } else {
        return anvil__error_set(
            err, ANVIL_E_UNSUPPORTED,
            "%s: rope scaling type \"%s\" with long_factor is not supported (convert_hf_to_gguf.py "
            "knows longrope, su and yarn)",
            c->path, type);
    }
    const anvil_json_value *s = *sf;
    if (l->kind != ANVIL_JSON_ARRAY_BEGIN || s == NULL || s->kind != ANVIL_JSON_ARRAY_BEGIN) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s: rope scaling needs long_factor and short_factor lists",
                                c->path);
    }
    if (l->n_items != s->n_items || 2 * (uint64_t)l->n_items != c->rope_dims) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s: the rope long and short factors must hold %u / 2 values each (rope dims), not "
                                "%zu and %zu",
                                c->path, c->rope_dims, l->n_items, s->n_items);
    }
    for (size_t i = 0; i < l->n_items; ++i) {
        if (!anvil__json_is_number(l->items[i]) || !anvil__json_is_number(s->items[i])) {
            return anvil__error_set(err, ANVIL_E_FORMAT,
                                    "%s: rope long_factor / short_factor item %zu is not a number", c->path, i);
        }
    }
    return 1;
}

int hf_phi3_extra_kvs(const hf_folder *f, anvil_gguf_writer *w, anvil_error *err) {
    phi3_cfg c;
    int rc = read_cfg(f, &c, err);
    double attn = 0;
    const anvil_json_value *lf = NULL, *sf = NULL;
    if (rc == ANVIL_OK) rc = longrope(&c, &attn, &lf, &sf, err);
    if (rc <= 0) return rc;
    return set_f32(w, "rope.scaling.attn_factor", attn, err);
}

/* ---- tensors ------------------------------------------------------------------ */

typedef struct phi3_name {
    const char *hf;   /* after "model.layers.N." when layer, else whole (no .weight/.bias) */
    const char *gguf; /* after "blk.N." when layer */
    int layer;
} phi3_name;

/* gguf-py's TensorNameMap entries of the tensor kinds MODEL_TENSORS gives
 * phi3, for the names transformers' Phi3 (and Llama-style) checkpoints use. */
static const phi3_name k_phi3_names[] = {
    { "model.embed_tokens", "token_embd", 0 }, { "lm_head", "output", 0 },
    { "model.norm", "output_norm", 0 },        { "input_layernorm", "attn_norm", 1 },
    { "self_attn.qkv_proj", "attn_qkv", 1 },   { "self_attn.q_proj", "attn_q", 1 },
    { "self_attn.k_proj", "attn_k", 1 },       { "self_attn.v_proj", "attn_v", 1 },
    { "self_attn.o_proj", "attn_output", 1 },  { "post_attention_layernorm", "ffn_norm", 1 },
    { "mlp.gate_up_proj", "ffn_up", 1 },       { "mlp.up_proj", "ffn_up", 1 },
    { "mlp.down_proj", "ffn_down", 1 },
};

/* The GGUF name of a checkpoint tensor and the rows config.json implies for
 * it (0: not checked), or -1. */
static int phi3_map(const phi3_cfg *c, const char *name, char *out, size_t cap, uint64_t *rows, uint64_t *cols) {
    static const char *const sfx[] = { ".weight", ".bias", "" };
    unsigned long bid = 0;
    const char *rest = name;
    int layer = 0;
    if (strncmp(name, "model.layers.", 13) == 0 && name[13] >= '0' && name[13] <= '9') {
        char *end = NULL;
        bid = strtoul(name + 13, &end, 10);
        if (*end != '.' || end - (name + 13) > 9) return -1;
        rest = end + 1;
        layer = 1;
        if (bid >= c->blocks) return -1;
    }
    const uint64_t H = c->n_embd, hd = c->n_head ? c->n_embd / c->n_head : 0;
    for (size_t i = 0; i < sizeof k_phi3_names / sizeof k_phi3_names[0]; ++i) {
        const phi3_name *m = &k_phi3_names[i];
        const size_t hl = strlen(m->hf);
        if (m->layer != layer || strncmp(rest, m->hf, hl) != 0) continue;
        for (size_t s = 0; s < 3; ++s) {
            if (strcmp(rest + hl, sfx[s]) != 0) continue;
            const int n = layer ? snprintf(out, cap, "blk.%lu.%s%s", bid, m->gguf, sfx[s])
                                : snprintf(out, cap, "%s%s", m->gguf, sfx[s]);
            if (n < 0 || (size_t)n >= cap) return -1;
            const struct {
                const char *g;
                uint64_t r, k;
            } shapes[] = {
                { "attn_qkv", (c->n_head + 2ull * c->n_kv) * hd, H },
                { "attn_q", c->n_head * hd, H },
                { "attn_k", c->n_kv * hd, H },
                { "attn_v", c->n_kv * hd, H },
                { "attn_output", H, c->n_head * hd },
                { "ffn_up", (strstr(m->hf, "gate_up") ? 2ull : 1ull) * c->n_ff, H },
                { "ffn_down", H, c->n_ff },
                { "attn_norm", H, 0 },
                { "ffn_norm", H, 0 },
                { "output_norm", H, 0 },
            };
            *rows = *cols = 0;
            for (size_t k = 0; s == 0 && k < sizeof shapes / sizeof shapes[0]; ++k) {
                if (strcmp(m->gguf, shapes[k].g) == 0) {
                    *rows = shapes[k].r;
                    *cols = shapes[k].k;
                }
            }
            return 0;
        }
    }
    return -1;
}

static int phi3_src(const phi3_cfg *c, const hf_folder *f, size_t i, hf_out_tensor *o, anvil_error *err) {
    const hf_src_tensor *s = &f->tensors[i];
    const anvil_st_tensor *t = s->st;
    uint64_t rows = 0, cols = 0;
    if (phi3_map(c, s->name, o->name, sizeof o->name, &rows, &cols) != 0) {
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                "%s/%s: cannot map tensor \"%s\" to a phi3 GGUF tensor "
                                "(convert_hf_to_gguf.py refuses it too)",
                                f->dir, f->part_names[s->part], s->name);
    }
    if (t->dtype != ANVIL_ST_F32 && t->dtype != ANVIL_ST_F16 && t->dtype != ANVIL_ST_BF16 && s->scale == NULL) {
        return anvil__error_set(
            err, ANVIL_E_UNSUPPORTED,
            "%s/%s: tensor \"%s\" is %s; anvil convert reads F32, F16, BF16 and scaled FP8 weights", f->dir,
            f->part_names[s->part], s->name, anvil_st_dtype_name(t->dtype));
    }
    const size_t want_rank = cols ? 2 : 1;
    if (t->rank > 4 ||
        (rows != 0 && (t->rank != want_rank || t->shape[0] != rows || (cols && t->shape[1] != cols)))) {
        return anvil__error_set(
            err, ANVIL_E_FORMAT,
            "%s/%s: tensor \"%s\" has %zu dims [%llu, %llu, ...], but config.json implies [%llu%s%llu]; "
            "the weights and config.json do not belong together",
            f->dir, f->part_names[s->part], s->name, t->rank, (unsigned long long)(t->rank ? t->shape[0] : 0),
            (unsigned long long)(t->rank > 1 ? t->shape[1] : 0), (unsigned long long)rows, cols ? ", " : "",
            (unsigned long long)cols);
    }
    hf_out_fill(f, i, o);
    return ANVIL_OK;
}

static int factors(const anvil_json_value *list, const char *name, hf_out_tensor *o, anvil_error *err) {
    o->generated = malloc(list->n_items * sizeof(float));
    if (o->generated == NULL) return anvil__nomem(err);
    for (size_t i = 0; i < list->n_items; ++i) o->generated[i] = (float)anvil__json_f64(list->items[i]);
    snprintf(o->name, sizeof o->name, "%s", name);
    o->src = -1;
    o->n_dims = 1;
    o->ne[0] = list->n_items;
    o->n_elements = list->n_items;
    return ANVIL_OK;
}

int hf_phi3_plan(const hf_folder *f, hf_out_tensor **out, size_t *n_out, anvil_error *err) {
    *out = NULL;
    *n_out = 0;
    phi3_cfg c;
    int rc = read_cfg(f, &c, err);
    if (rc != ANVIL_OK) return rc;
    const size_t cap = f->n_tensors + 2;
    hf_out_tensor *ts = calloc(cap, sizeof *ts);
    if (ts == NULL) return anvil__nomem(err);
    size_t n = 0;
    double attn = 0;
    const anvil_json_value *lf = NULL, *sf = NULL;
    rc = longrope(&c, &attn, &lf, &sf, err);
    if (rc > 0) {
        rc = factors(lf, "rope_factors_long.weight", &ts[n++], err);
        if (rc == ANVIL_OK) rc = factors(sf, "rope_factors_short.weight", &ts[n++], err);
    }
    for (size_t i = 0; i < f->n_tensors && rc == ANVIL_OK; ++i) {
        const char *nm = f->tensors[i].name;
        if (hf_src_dropped(nm)) continue;
        rc = phi3_src(&c, f, i, &ts[n], err);
        if (rc == ANVIL_OK) n++;
    }
    for (size_t i = 0; i < n && rc == ANVIL_OK; ++i) {
        for (size_t j = 0; j < i && rc == ANVIL_OK; ++j) {
            if (strcmp(ts[i].name, ts[j].name) == 0)
                rc = anvil__error_set(err, ANVIL_E_DUPLICATE, "%s: two tensors map to %s", f->dir, ts[i].name);
        }
    }
    if (rc != ANVIL_OK) {
        hf_plan_free(ts, cap);
        return rc;
    }
    *out = ts;
    *n_out = n;
    return ANVIL_OK;
}
