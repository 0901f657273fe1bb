/* SPDX-License-Identifier: MIT */
/*
 * hf_qwen35: Qwen3_5ForCausalLM and Qwen3_5MoeForCausalLM (the Qwen3.5
 * hybrids: gated delta-net linear-attention layers beside full-attention
 * ones) as convert_hf_to_gguf.py's Qwen3_5TextModel / Qwen3_5MoeTextModel
 * write them (gguf architectures qwen35 / qwen35moe), and their base
 * Qwen3NextForCausalLM (Qwen3NextModel, gguf qwen3next: the same but for
 * no V-head reordering and no default rope sections; its fused
 * linear_attn.in_proj_qkvz, [q, k, v, z] per key-head group, split into
 * attn_qkv and attn_gate as row gathers, in_proj_ba kept as ssm_ba; every
 * layer MoE: a dense mlp.* (mlp_only_layers) is refused by name, as the
 * converter's tensor map refuses it):
 *
 *  - filter (hf_qwen35_filter, before planning and for --vocab-only too):
 *    a text_config (Qwen3_5ForConditionalGeneration /
 *    Qwen3_5MoeForConditionalGeneration, the published checkpoints; their
 *    vision tensors are dropped and language_model. removed by the folder's
 *    filter) merged into the top level as TextModel does, then
 *    _QwenMtpMixin.filter_tensors: "model.mtp." loses "model.";
 *    mtp.layers.N.* becomes model.layers.<num_hidden_layers + N>.*, mtp.fc /
 *    pre_fc_norm_embedding / pre_fc_norm_hidden / norm become layer
 *    num_hidden_layers' eh_proj / enorm / hnorm / shared_head.norm. With
 *    no mtp_num_hidden_layers (or 0) the MTP layers are those mtp.layers.N
 *    seen; none at all stops the converter (its assert), refused here
 *    (not with --no-mtp, which drops the mtp.* tensors; --mtp drops all
 *    others but the embeddings, output norm and head, hf_mtp.c);
 *  - hparams: TextModel's keys (block_count with the MTP layers, rope
 *    sections where rope_parameters has mrope_section), general.file_type,
 *    the expert feed-forward lengths (Qwen2MoeModel), nextn_predict_layers,
 *    the ssm keys, recurrent_layers from layer_types (MTP layers false),
 *    full_attention_interval (4 when absent), the rope dimension count
 *    (head_dim times partial_rotary_factor, 0.25 when absent, truncated),
 *    and the rope sections [11, 11, 10, 0] when config.json gives none;
 *  - tensors in the converter's order, names from the generated table:
 *    A_log written as -exp(A_log) (PyTorch's float exp, hf_torch_expf),
 *    dt_bias as ssm_dt.bias, conv1d squeezed, norms other than
 *    linear_attn.norm + 1, experts stacked (hf_moe.c); when
 *    linear_num_key_heads != linear_num_value_heads the V heads of
 *    in_proj_qkv (V rows), in_proj_z, in_proj_a/b, A_log, dt_bias, conv1d
 *    (V channels) and out_proj (columns) go from grouped to tiled order
 *    (_LinearAttentionVReorderBase), as row/column maps read at write time.
 *
 * Config keys the converter reads with hparams[...] are required, refused
 * by name when missing or mistyped; value heads not a multiple of key heads,
 * a reordered tensor of the wrong size, a layer missing one of its tensors
 * (linear or full attention by layer_types, else full_attention_interval):
 * refused naming the file and tensor.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hf_internal.h"
#include "hf_table.h"

#define RET_IF(x)                \
    do {                         \
        const int rc_ = (x);     \
        if (rc_ < 0) return rc_; \
    } while (0)

static int is_qwen35(const hf_arch *a) {
    return a->id == HF_ARCH_QWEN35 || a->id == HF_ARCH_QWEN35MOE || a->id == HF_ARCH_QWEN3NEXT;
}

/* ---- PyTorch's exp ---------------------------------------------------------- */

static float pow2i(int q) {
    const uint32_t b = (uint32_t)(q + 0x7f) << 23;
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* Sleef's expf (u10): q = rint(d / ln 2), s = d - q ln 2 in two FMAs, a
 * degree-6 polynomial by FMAs, 1 + s + s^2 p, scaled by 2^q in two steps.
 * d < -104: 0; d > 100: inf. Checked against torch.exp on 4M floats. */
float hf_torch_expf(float d) {
    if (isnan(d)) return d;
    if (d < -104.0f) return 0.0f;
    if (d > 100.0f) return INFINITY;
    const int q = (int)nearbyintf(d * 1.442695040888963407359924681001892137426645954152985934135449406931f);
    float s = fmaf((float)q, -0.693145751953125f, d);
    s = fmaf((float)q, -1.428606765330187045e-06f, s);
    float u = 0.000198527617612853646278381f;
    u = fmaf(u, s, 0.00139304355252534151077271f);
    u = fmaf(u, s, 0.00833336077630519866943359f);
    u = fmaf(u, s, 0.0416664853692054748535156f);
    u = fmaf(u, s, 0.166666671633720397949219f);
    u = fmaf(u, s, 0.5f);
    const float ss = s * s;
    u = 1.0f + fmaf(ss, u, s);
    const int h = q >= 0 ? q / 2 : -((1 - q) / 2); /* q >> 1 */
    return u * pow2i(h) * pow2i(q - h);
}

/* ---- the MTP tensors' names ------------------------------------------------- */

static anvil_json_value *json_copy(const anvil_json_value *v) {
    anvil_json_value *c = anvil__json_new(v->kind, v->key, v->text, v->len);
    for (size_t i = 0; c != NULL && i < v->n_items; ++i) {
        anvil_json_value *k = json_copy(v->items[i]);
        if (k == NULL || anvil__json_append(c, k) != 0) {
            anvil__json_free(k);
            anvil__json_free(c);
            c = NULL;
        }
    }
    return c;
}

/* TextModel.__init__: hparams = {**hparams, **text_config} (the
 * *ForConditionalGeneration checkpoints): each text_config member replaces
 * the top-level one in its place or is appended. _name_or_path stays the
 * top level's (metadata.py reads config.json itself). */
static int merge_text_config(hf_folder *f, anvil_error *err) {
    const anvil_json_value *tc = anvil__json_get(f->config, "text_config");
    if (tc == NULL || tc->kind != ANVIL_JSON_OBJECT_BEGIN) return ANVIL_OK;
    anvil_json_value *cfg = f->config;
    const size_t n_tc = tc->n_items; /* tc stays in cfg: its items are not replaced */
    for (size_t i = 0; i < n_tc; ++i) {
        const anvil_json_value *m = tc->items[i];
        if (m->key == NULL || strcmp(m->key, "_name_or_path") == 0 || strcmp(m->key, "text_config") == 0) continue;
        anvil_json_value *c = json_copy(m);
        if (c == NULL) return anvil__nomem(err);
        size_t at = cfg->n_items;
        for (size_t k = 0; k < cfg->n_items && at == cfg->n_items; ++k)
            if (cfg->items[k]->key != NULL && strcmp(cfg->items[k]->key, m->key) == 0) at = k;
        if (at < cfg->n_items) {
            anvil__json_free(cfg->items[at]);
            cfg->items[at] = c;
        } else if (anvil__json_append(cfg, c) != 0) {
            anvil__json_free(c);
            return anvil__nomem(err);
        }
    }
    return ANVIL_OK;
}

int hf_qwen35_filter(const hf_arch *a, hf_folder *f, anvil_error *err) {
    if (!is_qwen35(a)) return ANVIL_OK;
    RET_IF(merge_text_config(f, err));
    uint32_t n_main = 0, n_mtp = 0;
    RET_IF(hf_cfg_u32(f, f->config, "num_hidden_layers", a->hf_name, 1, &n_main, err));
    RET_IF(hf_cfg_u32(f, f->config, "mtp_num_hidden_layers", a->hf_name, 0, &n_mtp, err));
    static const char *const from[] = { "fc", "pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm" };
    static const char *const to[] = { "eh_proj", "enorm", "hnorm", "shared_head.norm" };
    uint64_t seen = 0;
    unsigned char *drop = f->mtp_mode != HF_MTP_ALL ? calloc(f->n_tensors + 1, 1) : NULL;
    if (f->mtp_mode != HF_MTP_ALL && drop == NULL) return anvil__nomem(err);
    for (size_t i = 0; i < f->n_tensors; ++i) {
        char *nm = f->tensors[i].name;
        const char *s = strncmp(nm, "model.mtp.", 10) == 0 ? nm + 6 : nm;
        const int mtp = strncmp(s, "mtp.", 4) == 0;
        if (drop != NULL) { /* --no-mtp: the mtp.* ones; --mtp: all others but the shared ones */
            drop[i] = f->mtp_mode == HF_MTP_NONE
                          ? mtp
                          : !mtp && !hf_mtp_keep_shared(nm) && strcmp(nm, "norm.weight") != 0 &&
                                strcmp(nm, "embed_tokens.weight") != 0;
            if (drop[i]) continue;
        }
        if (!mtp) continue;
        const char *p1 = s + 4, *d1 = strchr(p1, '.');
        const char *d2 = d1 != NULL ? strchr(d1 + 1, '.') : NULL;
        char out[512];
        out[0] = '\0';
        if (d1 != NULL && d2 != NULL && d1 - p1 == 6 && strncmp(p1, "layers", 6) == 0 && d2 > d1 + 1) {
            uint64_t idx = 0;
            int digits = 1;
            for (const char *c = d1 + 1; c < d2 && digits; ++c) {
                digits = *c >= '0' && *c <= '9' && idx < 100000000u;
                idx = idx * 10 + (uint64_t)(*c - '0');
            }
            if (digits) {
                snprintf(out, sizeof out, "model.layers.%llu.%s", (unsigned long long)(n_main + idx), d2 + 1);
                if (idx + 1 > seen) seen = idx + 1;
            }
        } else if (d1 != NULL && d2 == NULL) {
            for (size_t k = 0; k < sizeof from / sizeof from[0] && !out[0]; ++k) {
                if ((size_t)(d1 - p1) == strlen(from[k]) && strncmp(p1, from[k], strlen(from[k])) == 0)
                    snprintf(out, sizeof out, "model.layers.%u.%s.%s", n_main, to[k], d1 + 1);
            }
        }
        if (!out[0] && strlen(s) < sizeof out) snprintf(out, sizeof out, "%s", s);
        char *dup = strdup(out);
        if (dup == NULL) {
            free(drop);
            return anvil__nomem(err);
        }
        free(nm);
        f->tensors[i].name = dup;
    }
    if (drop != NULL) hf_mtp_compact(f, drop);
    free(drop);
    f->mtp_seen = seen;
    if (n_mtp == 0 && seen == 0 && f->mtp_mode != HF_MTP_NONE) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s/config.json: %s has no mtp_num_hidden_layers and the checkpoint no "
                                "mtp.layers.N tensors: convert_hf_to_gguf.py's class for it needs the "
                                "multi-token-prediction layer (it stops on an assert); use a checkpoint that "
                                "ships it, or convert with --no-mtp",
                                f->dir, a->hf_name);
    }
    return ANVIL_OK;
}

/* ---- config.json ------------------------------------------------------------ */

typedef struct q35_cfg {
    uint32_t n_main, n_mtp, conv, dk, dv, nk, nv;
} q35_cfg;

static int read_cfg(const hf_arch *a, const hf_folder *f, q35_cfg *c, anvil_error *err) {
    memset(c, 0, sizeof *c);
    RET_IF(hf_cfg_u32(f, f->config, "num_hidden_layers", a->hf_name, 1, &c->n_main, err));
    RET_IF(hf_cfg_u32(f, f->config, "mtp_num_hidden_layers", a->hf_name, 0, &c->n_mtp, err));
    if (c->n_mtp == 0) c->n_mtp = (uint32_t)f->mtp_seen;
    if (f->mtp_mode == HF_MTP_NONE) c->n_mtp = 0; /* --no-mtp: block_count without them, no nextn key */
    if ((uint64_t)c->n_main + c->n_mtp > UINT32_MAX)
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s/config.json: the layer count overflows with the MTP layers",
                                f->dir);
    RET_IF(hf_cfg_u32(f, f->config, "linear_conv_kernel_dim", a->hf_name, 1, &c->conv, err));
    RET_IF(hf_cfg_u32(f, f->config, "linear_key_head_dim", a->hf_name, 1, &c->dk, err));
    RET_IF(hf_cfg_u32(f, f->config, "linear_value_head_dim", a->hf_name, 1, &c->dv, err));
    RET_IF(hf_cfg_u32(f, f->config, "linear_num_key_heads", a->hf_name, 1, &c->nk, err));
    RET_IF(hf_cfg_u32(f, f->config, "linear_num_value_heads", a->hf_name, 1, &c->nv, err));
    if (c->nk == 0 || c->nv == 0 || c->nv % c->nk != 0) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s/config.json: linear_num_value_heads %u must be a positive multiple of "
                                "linear_num_key_heads %u (each key head serves a group of value heads); "
                                "convert_hf_to_gguf.py cannot regroup the value heads either",
                                f->dir, c->nv, c->nk);
    }
    return ANVIL_OK;
}

static int set_u32(const hf_arch *a, anvil_gguf_writer *w, const char *suffix, uint32_t v, anvil_error *err) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", a->gguf_name, suffix);
    return anvil_gguf_writer_set_u32(w, key, v, err);
}

/* layer_types: 1 when given (types[b]: 1 linear attention), 0 absent. */
static int layer_types(const hf_folder *f, const q35_cfg *c, unsigned char *types, anvil_error *err) {
    const anvil_json_value *lt = anvil__json_get(f->config, "layer_types");
    if (anvil__json_is_null(lt)) return 0;
    if (lt->kind != ANVIL_JSON_ARRAY_BEGIN || lt->n_items != c->n_main) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s/config.json: \"layer_types\" must be a list of num_hidden_layers (%u) "
                                "entries; convert_hf_to_gguf.py stops on it too",
                                f->dir, c->n_main);
    }
    for (size_t i = 0; i < lt->n_items; ++i) {
        const char *s = anvil__json_str(lt->items[i]);
        types[i] = s != NULL && strcmp(s, "linear_attention") == 0;
    }
    return 1;
}

static int interval_of(const hf_arch *a, const hf_folder *f, uint32_t *iv, anvil_error *err) {
    *iv = 4;
    const anvil_json_value *v = anvil__json_get(f->config, "full_attention_interval");
    if (v != NULL && v->kind == ANVIL_JSON_NULL) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s/config.json: \"full_attention_interval\" is null; give a whole number or "
                                "leave it out (4)",
                                f->dir);
    }
    const int rc = hf_cfg_u32(f, f->config, "full_attention_interval", a->hf_name, 0, iv, err);
    return rc < 0 ? rc : ANVIL_OK;
}

int hf_qwen35_hparams(const hf_arch *a, const hf_folder *f, uint32_t ftype, anvil_gguf_writer *w, anvil_error *err) {
    q35_cfg c;
    RET_IF(read_cfg(a, f, &c, err));
    uint32_t moe_ff = 0, shared_ff = 0, iv = 4, rope_d = 0;
    int has_moe_ff = 0, has_shared_ff = 0;
    RET_IF(has_moe_ff = hf_cfg_u32(f, f->config, "moe_intermediate_size", a->hf_name, 0, &moe_ff, err));
    RET_IF(has_shared_ff =
               hf_cfg_u32(f, f->config, "shared_expert_intermediate_size", a->hf_name, 0, &shared_ff, err));
    RET_IF(interval_of(a, f, &iv, err));
    RET_IF(hf_cfg_rope_dims(f, a->hf_name, 0.25, &rope_d, err));
    if ((uint64_t)c.dv * c.nv > UINT32_MAX) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s/config.json: linear_value_head_dim %u times linear_num_value_heads %u "
                                "overflows the ssm inner size",
                                f->dir, c.dv, c.nv);
    }
    const uint64_t n_all = (uint64_t)c.n_main + c.n_mtp;
    unsigned char *types = calloc(n_all + 1, 1);
    if (types == NULL) return anvil__nomem(err);
    const int has_types = layer_types(f, &c, types, err);
    hf_text_over o = { 0, 0.0, -1, -1, -1, 0, 0, c.n_mtp, -1, 0 };
    int rc = has_types < 0 ? has_types : hf_arch_text_hparams(a, f, &o, w, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, "general.file_type", ftype, err);
    if (rc == ANVIL_OK && has_moe_ff) rc = set_u32(a, w, "expert_feed_forward_length", moe_ff, err);
    if (rc == ANVIL_OK && has_shared_ff) rc = set_u32(a, w, "expert_shared_feed_forward_length", shared_ff, err);
    if (rc == ANVIL_OK && c.n_mtp > 0) rc = set_u32(a, w, "nextn_predict_layers", c.n_mtp, err);
    if (rc == ANVIL_OK) rc = set_u32(a, w, "ssm.conv_kernel", c.conv, err);
    if (rc == ANVIL_OK) rc = set_u32(a, w, "ssm.state_size", c.dk, err);
    if (rc == ANVIL_OK) rc = set_u32(a, w, "ssm.group_count", c.nk, err);
    if (rc == ANVIL_OK) rc = set_u32(a, w, "ssm.time_step_rank", c.nv, err);
    if (rc == ANVIL_OK) rc = set_u32(a, w, "ssm.inner_size", c.dv * c.nv, err);
    char key[128];
    if (rc == ANVIL_OK && has_types) {
        snprintf(key, sizeof key, "%s.attention.recurrent_layers", a->gguf_name);
        rc = anvil_gguf_writer_set_array(w, key, ANVIL_GGUF_TYPE_BOOL, types, n_all, err);
    }
    free(types);
    if (rc == ANVIL_OK) rc = set_u32(a, w, "full_attention_interval", iv, err);
    if (rc == ANVIL_OK) rc = set_u32(a, w, "rope.dimension_count", rope_d, err);
    const anvil_json_value *rp = hf_cfg_rope_params(f);
    /* _Qwen35MRopeMixin (not Qwen3-Next) */
    if (rc == ANVIL_OK && a->id != HF_ARCH_QWEN3NEXT &&
        (rp == NULL || anvil__json_get(rp, "mrope_section") == NULL)) {
        static const int32_t sections[4] = { 11, 11, 10, 0 }; /* _QWEN35_DEFAULT_MROPE_SECTION */
        snprintf(key, sizeof key, "%s.rope.dimension_sections", a->gguf_name);
        rc = anvil_gguf_writer_set_array(w, key, ANVIL_GGUF_TYPE_I32, sections, 4, err);
    }
    return rc;
}

/* ---- tensors ---------------------------------------------------------------- */

/* _LinearAttentionVReorderBase.modify_tensors: which V-head map the
 * tensor takes (o->vr_*), its size checked as the reshape needs it. */
static int plan_reorder(const hf_folder *f, const hf_src_tensor *s, const q35_cfg *c, hf_out_tensor *o,
                        anvil_error *err) {
    const char *nm = s->name;
    if (c->nk == c->nv || strstr(nm, "linear_attn.") == NULL) return ANVIL_OK;
    const anvil_st_tensor *t = s->st;
    const uint64_t qk = 2ull * c->nk * c->dk;
    uint64_t d = 0, first = 0;
    int cols = 0;
    if (strstr(nm, ".in_proj_qkv.") != NULL) d = c->dv, first = qk;
    else if (strstr(nm, ".in_proj_z.") != NULL) d = c->dv;
    else if (strstr(nm, ".in_proj_b.") != NULL || strstr(nm, ".in_proj_a.") != NULL) d = 1;
    else if (strstr(nm, ".A_log") != NULL || strstr(nm, ".dt_bias") != NULL || strstr(nm, ".dt_proj") != NULL)
        d = 1, cols = o->n_dims > 1;
    else if (strstr(nm, ".conv1d") != NULL) d = c->dv, first = qk;
    else if (strstr(nm, ".out_proj.") != NULL) d = c->dv, cols = 1;
    else return ANVIL_OK;
    /* rows: the source's first dim (conv1d: its channels); columns: the last */
    const uint64_t span = cols ? o->ne[0] : t->shape[0];
    const uint64_t want = (uint64_t)c->nv * d;
    if (cols && t->rank != 2) { /* the map permutes whole source rows' columns */
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                "%s/%s: tensor \"%s\" has %zu dims; anvil convert regroups value-head columns "
                                "of 2-D tensors only",
                                f->dir, f->part_names[s->part], nm, t->rank);
    }
    if (t->rank == 0 || span < first || span - first != want) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s/%s: tensor \"%s\" has %llu %s where config.json implies %llu (%s%llu value "
                                "heads of %llu); the checkpoint does not fit its linear_* head counts",
                                f->dir, f->part_names[s->part], nm, (unsigned long long)span,
                                cols ? "columns" : "rows", (unsigned long long)(first + want),
                                first ? "2 x key heads x linear_key_head_dim + " : "", (unsigned long long)c->nv,
                                (unsigned long long)d);
    }
    o->vr_k = c->nk;
    o->vr_r = c->nv / c->nk;
    o->vr_d = d;
    o->vr_first = first;
    o->vr_cols = cols;
    return ANVIL_OK;
}

static int plain_tensor(const hf_arch *a, const hf_folder *f, const q35_cfg *c, size_t i, hf_out_tensor *o,
                        anvil_error *err) {
    const hf_src_tensor *s = &f->tensors[i];
    const anvil_st_tensor *t = s->st;
    const char *name = s->name;
    char nm[512];
    const int a_log = hf_ends_with(name, ".A_log"), dt_bias = !a_log && hf_ends_with(name, ".dt_bias");
    const int conv = !a_log && !dt_bias && strstr(name, "conv1d") != NULL;
    const int norm = !a_log && !dt_bias && !conv && hf_ends_with(name, "norm.weight") &&
                     !hf_ends_with(name, "linear_attn.norm.weight");
    if (dt_bias && strlen(name) < sizeof nm - 8) { /* Qwen3NextModel: .dt_bias -> .dt_proj.bias */
        snprintf(nm, sizeof nm, "%.*s.dt_proj.bias", (int)(strlen(name) - strlen(".dt_bias")), name);
        name = nm;
    }
    const unsigned long n_blocks = (unsigned long)c->n_main + c->n_mtp;
    if (hf_table_map_tensor(a->gguf_name, name, n_blocks, o->name, sizeof o->name) != 0) {
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                "%s/%s: cannot map tensor \"%s\" to a %s GGUF tensor (convert_hf_to_gguf.py "
                                "refuses it too)",
                                f->dir, f->part_names[s->part], s->name, a->gguf_name);
    }
    RET_IF(hf_src_check(f, s, err));
    o->src = (int)i;
    o->n_elements = t->n_elements;
    o->n_dims = 0;
    for (size_t d = t->rank; d-- > 0;) { /* squeeze(): conv1d's [C, 1, K] is [C, K] */
        if (conv && t->shape[d] == 1) continue;
        o->ne[o->n_dims++] = t->shape[d];
    }
    if (o->n_dims == 0) {
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                "%s/%s: tensor \"%s\" squeezes to a scalar, which convert_hf_to_gguf.py cannot "
                                "write either",
                                f->dir, f->part_names[s->part], s->name);
    }
    o->neg_exp = a_log;
    o->shift = norm ? 1.0f : 0.0f;
    /* _LinearAttentionVReorderBase is Qwen3.5's, not Qwen3NextModel's */
    return a->id == HF_ARCH_QWEN3NEXT ? ANVIL_OK : plan_reorder(f, s, c, o, err);
}

/* Qwen3NextModel.modify_tensors' in_proj_qkvz: [q, k, v, z] per key-head
 * group split into attn_qkv (q of all groups, then k, then v) and
 * attn_gate (z): two row gathers of the one source (hf_convert.c). */
static int qkvz_tensors(const hf_arch *a, const hf_folder *f, const q35_cfg *c, size_t i, hf_out_tensor *o,
                        anvil_error *err) {
    const hf_src_tensor *s = &f->tensors[i];
    const anvil_st_tensor *t = s->st;
    RET_IF(hf_src_check(f, s, err));
    const uint64_t vd = (uint64_t)(c->nv / c->nk) * c->dv, per = 2ull * c->dk + 2 * vd;
    if (t->rank != 2 || t->shape[0] != c->nk * per) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s/%s: tensor \"%s\" has %llu rows where config.json implies %llu (%u key-head "
                                "groups of 2 x %u + 2 x %llu); the checkpoint does not fit its linear_* head counts",
                                f->dir, f->part_names[s->part], s->name,
                                (unsigned long long)(t->rank ? t->shape[0] : 0), (unsigned long long)(c->nk * per),
                                c->nk, c->dk, (unsigned long long)vd);
    }
    const unsigned long n_blocks = (unsigned long)c->n_main + c->n_mtp;
    char base[512], nm[560];
    snprintf(base, sizeof base, "%.*s", (int)(strlen(s->name) - strlen("in_proj_qkvz.weight")), s->name);
    for (int z = 0; z < 2; ++z) {
        hf_out_fill(f, i, &o[z]);
        o[z].ne[1] = z ? c->nk * vd : c->nk * (2ull * c->dk + vd);
        o[z].n_elements = o[z].ne[0] * o[z].ne[1];
        o[z].qz_k = c->nk, o[z].qz_dk = c->dk, o[z].qz_vd = vd, o[z].qz_z = z;
        /* the names format_tensor_name gives ATTN_QKV / ATTN_GATE, through the table */
        snprintf(nm, sizeof nm, "%s%s", base, z ? "in_proj_z.weight" : "in_proj_qkv.weight");
        if (hf_table_map_tensor(a->gguf_name, nm, n_blocks, o[z].name, sizeof o[z].name) != 0) {
            return anvil__error_set(err, ANVIL_E_UNSUPPORTED, "%s/%s: cannot map tensor \"%s\" to a %s GGUF tensor",
                                    f->dir, f->part_names[s->part], s->name, a->gguf_name);
        }
    }
    return ANVIL_OK;
}

/* The tensors a layer below num_hidden_layers must end with. */
typedef struct need {
    const char *gguf, *hf;
} need;
static const need k_common[] = { { "attn_norm.weight", "input_layernorm.weight" },
                                 { "post_attention_norm.weight", "post_attention_layernorm.weight" } };
static const need k_linear[] = { { "attn_qkv.weight", "linear_attn.in_proj_qkv.weight" },
                                 { "attn_gate.weight", "linear_attn.in_proj_z.weight" },
                                 { "ssm_beta.weight", "linear_attn.in_proj_b.weight" },
                                 { "ssm_alpha.weight", "linear_attn.in_proj_a.weight" },
                                 { "ssm_conv1d.weight", "linear_attn.conv1d.weight" },
                                 { "ssm_dt.bias", "linear_attn.dt_bias" },
                                 { "ssm_a", "linear_attn.A_log" },
                                 { "ssm_norm.weight", "linear_attn.norm.weight" },
                                 { "ssm_out.weight", "linear_attn.out_proj.weight" } };
/* Qwen3-Next: in_proj_qkvz split in two (qkvz_tensors), in_proj_ba as is */
static const need k_linear_next[] = { { "attn_qkv.weight", "linear_attn.in_proj_qkvz.weight" },
                                      { "attn_gate.weight", "linear_attn.in_proj_qkvz.weight" },
                                      { "ssm_ba.weight", "linear_attn.in_proj_ba.weight" },
                                      { "ssm_conv1d.weight", "linear_attn.conv1d.weight" },
                                      { "ssm_dt.bias", "linear_attn.dt_bias" },
                                      { "ssm_a", "linear_attn.A_log" },
                                      { "ssm_norm.weight", "linear_attn.norm.weight" },
                                      { "ssm_out.weight", "linear_attn.out_proj.weight" } };
static const need k_full[] = {
    { "attn_q.weight", "self_attn.q_proj.weight" },      { "attn_k.weight", "self_attn.k_proj.weight" },
    { "attn_v.weight", "self_attn.v_proj.weight" },      { "attn_output.weight", "self_attn.o_proj.weight" },
    { "attn_q_norm.weight", "self_attn.q_norm.weight" }, { "attn_k_norm.weight", "self_attn.k_norm.weight" }
};
static const need k_dense[] = { { "ffn_gate.weight", "mlp.gate_proj.weight" },
                                { "ffn_up.weight", "mlp.up_proj.weight" },
                                { "ffn_down.weight", "mlp.down_proj.weight" } };
static const need k_moe[] = { { "ffn_gate_inp.weight", "mlp.gate.weight" },
                              { "ffn_gate_exps.weight", "mlp.experts (gate_proj)" },
                              { "ffn_up_exps.weight", "mlp.experts (up_proj)" },
                              { "ffn_down_exps.weight", "mlp.experts (down_proj)" } };

static int cmp_str(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

static int check_group(const hf_folder *f, char *const *sorted, size_t n, uint64_t b, const need *g, size_t ng,
                       const char *what, anvil_error *err) {
    for (size_t k = 0; k < ng; ++k) {
        char want[96];
        snprintf(want, sizeof want, "blk.%llu.%s", (unsigned long long)b, g[k].gguf);
        const char *key = want;
        if (bsearch(&key, sorted, n, sizeof *sorted, cmp_str) != NULL) continue;
        return anvil__error_set(err, ANVIL_E_NOT_FOUND,
                                "%s: layer %llu (%s) has no model.layers.%llu.%s (GGUF %s): the checkpoint is "
                                "incomplete (a shard missing or left out of the index?); re-download it",
                                f->dir, (unsigned long long)b, what, (unsigned long long)b, g[k].hf, want);
    }
    return ANVIL_OK;
}

static int check_layers(const hf_arch *a, const hf_folder *f, const q35_cfg *c, const hf_out_tensor *ts, size_t n,
                        anvil_error *err) {
    uint32_t iv = 4;
    RET_IF(interval_of(a, f, &iv, err));
    unsigned char *types = calloc((size_t)c->n_main + 1, 1);
    char **sorted = malloc((n + 1) * sizeof *sorted);
    if (types == NULL || sorted == NULL) {
        free(types);
        free(sorted);
        return anvil__nomem(err);
    }
    for (size_t i = 0; i < n; ++i) sorted[i] = (char *)ts[i].name;
    qsort(sorted, n, sizeof *sorted, cmp_str);
    int rc = layer_types(f, c, types, err);
    const int has_types = rc > 0;
    rc = rc < 0 ? rc : ANVIL_OK;
    const int moe = a->id == HF_ARCH_QWEN35MOE || a->id == HF_ARCH_QWEN3NEXT;
    const int next = a->id == HF_ARCH_QWEN3NEXT;
    for (uint64_t b = 0; b < c->n_main && rc == ANVIL_OK; ++b) {
        /* Qwen3_5TextConfig: linear unless (b + 1) % full_attention_interval == 0 */
        const int linear = has_types ? types[b] : (iv == 0 || (b + 1) % iv != 0);
        const char *what = linear ? "linear attention" : "full attention";
        rc = check_group(f, sorted, n, b, k_common, 2, what, err);
        if (rc == ANVIL_OK && linear)
            rc = next ? check_group(f, sorted, n, b, k_linear_next, 8, what, err)
                      : check_group(f, sorted, n, b, k_linear, 9, what, err);
        if (rc == ANVIL_OK && !linear) rc = check_group(f, sorted, n, b, k_full, 6, what, err);
        if (rc == ANVIL_OK) rc = check_group(f, sorted, n, b, moe ? k_moe : k_dense, moe ? 4 : 3, what, err);
    }
    free(types);
    free(sorted);
    return rc;
}

int hf_qwen35_plan(const hf_arch *a, const hf_folder *f, hf_out_tensor **out, size_t *n_out, anvil_error *err) {
    *out = NULL;
    *n_out = 0;
    q35_cfg c;
    RET_IF(read_cfg(a, f, &c, err));
    const uint64_t n_blocks = (uint64_t)c.n_main + c.n_mtp;
    const size_t cap = 2 * f->n_tensors + 2; /* a fused gate_up gives two */
    hf_out_tensor *ts = calloc(cap, sizeof *ts);
    if (ts == NULL) return anvil__nomem(err);
    hf_moe_state *moe = NULL;
    int rc = ANVIL_OK;
    size_t n = 0;
    for (size_t i = 0; i < f->n_tensors && rc == ANVIL_OK; ++i) {
        const char *nm = f->tensors[i].name;
        if (hf_src_dropped(nm)) continue;
        if (strstr(nm, "experts") != NULL) { /* Qwen2MoeModel.modify_tensors */
            if (moe == NULL) rc = hf_moe_begin(a, f, n_blocks, &moe, err);
            const int taken = rc == ANVIL_OK ? hf_moe_take(moe, i, ts, &n, err) : rc;
            if (taken < 0) rc = taken;
            if (taken != 0) continue;
        }
        if (rc == ANVIL_OK && hf_ends_with(nm, ".linear_attn.in_proj_qkvz.weight")) {
            if ((rc = qkvz_tensors(a, f, &c, i, &ts[n], err)) == ANVIL_OK) n += 2;
            continue;
        }
        if (rc == ANVIL_OK && (rc = plain_tensor(a, f, &c, i, &ts[n], err)) == ANVIL_OK) n++;
    }
    if (rc == ANVIL_OK && moe != NULL) rc = hf_moe_done(moe, err);
    hf_moe_free(moe);
    if (rc == ANVIL_OK && f->mtp_mode != HF_MTP_ONLY) rc = check_layers(a, f, &c, ts, n, err); /* --mtp: none */
    if (rc != ANVIL_OK) {
        hf_plan_free(ts, cap);
        return rc;
    }
    *out = ts;
    *n_out = n;
    return ANVIL_OK;
}
