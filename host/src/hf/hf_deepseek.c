/* SPDX-License-Identifier: MIT */
/*
 * hf_deepseek: DeepseekV3ForCausalLM as convert_hf_to_gguf.py's
 * DeepseekV2Model writes it (gguf architecture deepseek2):
 *
 *  - hparams: TextModel's keys with num_key_value_heads set to 1 and
 *    rms_norm_eps defaulting to 1e-6 first, then general.file_type, the
 *    leading dense block count (first_k_dense_replace), vocab_size, the
 *    MLA ranks and head sizes (key/value length overwritten in place where
 *    TextModel wrote head_dim), the MoE keys and the YaRN log multiplier
 *    (0.1 * mscale_all_dim);
 *  - tensors in the converter's order: lm_head dropped when the
 *    embeddings are tied, MTP layers (model.layers.N with N >=
 *    num_hidden_layers) skipped, per-expert weights stacked (hf_moe.c, on
 *    n_routed_experts), e_score_correction_bias renamed as filter_tensors
 *    does (exp_probs_b.bias), and kv_b_proj split per head into k_b
 *    (transposed: [heads, kv_lora_rank, qk_nope_head_dim]) and v_b
 *    ([heads, v_head_dim, kv_lora_rank]), read block by block as pieces of
 *    the source (FP8 dequantized row by row, never the whole tensor).
 *
 * Config keys the converter reads with hparams[...] are required here;
 * missing or of the wrong type, they are refused naming config.json and
 * the key. Tensors the name map does not know, an FP8 weight without its
 * scale, an expert missing or past n_routed_experts: refused by name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hf_internal.h"
#include "hf_table.h"

#define DS_CLASS "DeepseekV3ForCausalLM" /* the class named in config errors */

#define RET_IF(x)                \
    do {                         \
        const int rc_ = (x);     \
        if (rc_ < 0) return rc_; \
    } while (0)

static int set_u32(anvil_gguf_writer *w, const char *suffix, uint32_t v, anvil_error *err) {
    char key[128];
    snprintf(key, sizeof key, "deepseek2.%s", suffix);
    return anvil_gguf_writer_set_u32(w, key, v, err);
}

static int set_f32(anvil_gguf_writer *w, const char *suffix, double v, anvil_error *err) {
    char key[128];
    snprintf(key, sizeof key, "deepseek2.%s", suffix);
    return anvil_gguf_writer_set_f32(w, key, (float)v, err);
}

int hf_deepseek_hparams(const hf_arch *a, const hf_folder *f, uint32_t ftype, anvil_gguf_writer *w,
                        anvil_error *err) {
    uint32_t kv_lora = 512, rope = 0, nope = 0, vhd = 0, vocab = 0, q_lora = 0, n_exp = 0, shared = 0, moe_ff = 0;
    uint32_t dense = 0, layers = 0;
    RET_IF(hf_cfg_u32(f, f->config, "kv_lora_rank", DS_CLASS, 0, &kv_lora, err));
    RET_IF(hf_cfg_u32(f, f->config, "qk_rope_head_dim", DS_CLASS, 1, &rope, err));
    RET_IF(hf_cfg_u32(f, f->config, "qk_nope_head_dim", DS_CLASS, 1, &nope, err));
    RET_IF(hf_cfg_u32(f, f->config, "v_head_dim", DS_CLASS, 1, &vhd, err));
    RET_IF(hf_cfg_u32(f, f->config, "vocab_size", DS_CLASS, 1, &vocab, err));
    RET_IF(hf_cfg_u32(f, f->config, "num_hidden_layers", DS_CLASS, 1, &layers, err));
    int has_q_lora = 0, has_exp = 0, has_dense = 0;
    RET_IF(has_q_lora = hf_cfg_u32(f, f->config, "q_lora_rank", DS_CLASS, 0, &q_lora, err));
    RET_IF(has_exp = hf_cfg_u32(f, f->config, "n_routed_experts", DS_CLASS, 0, &n_exp, err));
    RET_IF(hf_cfg_u32(f, f->config, "n_shared_experts", DS_CLASS, 0, &shared, err));
    RET_IF(has_dense = hf_cfg_u32(f, f->config, "first_k_dense_replace", DS_CLASS, 0, &dense, err));
    /* find_hparam(["moe_intermediate_size", "intermediate_size"]): the first present */
    const char *ff_key = anvil__json_get(f->config, "moe_intermediate_size") != NULL ? "moe_intermediate_size"
                                                                                     : "intermediate_size";
    RET_IF(hf_cfg_u32(f, f->config, ff_key, DS_CLASS, 1, &moe_ff, err));
    if (!has_dense) dense = has_exp ? 0 : layers;
    if ((uint64_t)kv_lora + rope > UINT32_MAX || (uint64_t)nope + rope > UINT32_MAX) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s/config.json: kv_lora_rank / head dims overflow", f->dir);
    }
    double scale = 0, mscale = 0;
    const int has_scale = hf_cfg_num(f, f->config, "routed_scaling_factor", &scale, err);
    RET_IF(has_scale);
    const anvil_json_value *rp = anvil__json_get(f->config, "rope_parameters");
    if (rp == NULL) rp = anvil__json_get(f->config, "rope_scaling");
    const int has_mscale =
        rp != NULL && rp->kind == ANVIL_JSON_OBJECT_BEGIN ? hf_cfg_num(f, rp, "mscale_all_dim", &mscale, err) : 0;
    RET_IF(has_mscale);

    hf_text_over o = { 1, 1e-6, (int64_t)kv_lora + rope, kv_lora, has_exp ? (int64_t)n_exp : -1, 0, 0, 0, -1, 0 };
    int rc = hf_arch_text_hparams(a, f, &o, w, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, "general.file_type", ftype, err);
    if (rc == ANVIL_OK) rc = set_u32(w, "leading_dense_block_count", dense, err);
    if (rc == ANVIL_OK) rc = set_u32(w, "vocab_size", vocab, err);
    if (rc == ANVIL_OK && has_q_lora) rc = set_u32(w, "attention.q_lora_rank", q_lora, err);
    if (rc == ANVIL_OK) rc = set_u32(w, "attention.kv_lora_rank", kv_lora, err);
    if (rc == ANVIL_OK && !o.wrote_key_length) rc = set_u32(w, "attention.key_length", kv_lora + rope, err);
    if (rc == ANVIL_OK && !o.wrote_key_length) rc = set_u32(w, "attention.value_length", kv_lora, err);
    if (rc == ANVIL_OK) rc = set_u32(w, "attention.key_length_mla", nope + rope, err);
    if (rc == ANVIL_OK) rc = set_u32(w, "attention.value_length_mla", vhd, err);
    if (rc == ANVIL_OK) rc = set_u32(w, "expert_feed_forward_length", moe_ff, err);
    if (rc == ANVIL_OK && has_exp && !o.wrote_expert_count) rc = set_u32(w, "expert_count", n_exp, err);
    if (rc == ANVIL_OK) rc = set_u32(w, "expert_shared_count", shared, err);
    if (rc == ANVIL_OK && has_scale) rc = set_f32(w, "expert_weights_scale", scale, err);
    if (rc == ANVIL_OK && hf_truthy(anvil__json_get(f->config, "norm_topk_prob")))
        rc = anvil_gguf_writer_set_bool(w, "deepseek2.expert_weights_norm", 1, err);
    if (rc == ANVIL_OK) rc = set_u32(w, "rope.dimension_count", rope, err);
    if (rc == ANVIL_OK && has_mscale) rc = set_f32(w, "rope.scaling.yarn_log_multiplier", 0.1 * mscale, err);
    return rc;
}

/* ---- tensors ---------------------------------------------------------------- */

/* The layer number of "model.layers.N..." (re.match(r"model.layers.(\d+)")), or -1. */
static long mtp_layer(const char *name) {
    if (strncmp(name, "model", 5) != 0 || name[5] == '\0' || strncmp(name + 6, "layers", 6) != 0 ||
        name[12] == '\0' || name[13] < '0' || name[13] > '9')
        return -1;
    long v = 0;
    for (const char *p = name + 13; *p >= '0' && *p <= '9'; ++p) {
        if (v > 100000000L) return -1;
        v = v * 10 + (*p - '0');
    }
    return v;
}

static int map_name(const hf_arch *a, const hf_folder *f, const hf_src_tensor *s, const char *name, uint64_t n_blocks,
                    char *out, size_t cap, anvil_error *err) {
    if (hf_table_map_tensor(a->gguf_name, name, (unsigned long)n_blocks, out, cap) == 0) return ANVIL_OK;
    return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                            "%s/%s: cannot map tensor \"%s\" to a %s GGUF tensor (convert_hf_to_gguf.py refuses it "
                            "too)",
                            f->dir, f->part_names[s->part], s->name, a->gguf_name);
}

/* kv_b_proj [heads * (nope + v), kv_lora] -> k_b [heads, kv_lora, nope]
 * (each head's nope rows transposed) and v_b [heads, v, kv_lora]. */
static int split_kv_b(const hf_arch *a, const hf_folder *f, size_t i, uint64_t n_blocks, hf_out_tensor *ts, size_t *n,
                      anvil_error *err) {
    const hf_src_tensor *s = &f->tensors[i];
    uint32_t heads = 0, vhd = 0, nope = 0;
    RET_IF(hf_cfg_u32(f, f->config, "num_key_value_heads", DS_CLASS, 1, &heads, err));
    RET_IF(hf_cfg_u32(f, f->config, "v_head_dim", DS_CLASS, 1, &vhd, err));
    RET_IF(hf_cfg_u32(f, f->config, "qk_nope_head_dim", DS_CLASS, 1, &nope, err));
    int rc = hf_src_check(f, s, err);
    if (rc != ANVIL_OK) return rc;
    const anvil_st_tensor *t = s->st;
    if (t->rank != 2 || heads == 0 || nope == 0 || vhd == 0 || t->shape[0] != (uint64_t)heads * (nope + vhd) ||
        t->shape[1] == 0) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s/%s: tensor \"%s\" must be [num_key_value_heads * (qk_nope_head_dim + "
                                "v_head_dim), kv_lora_rank] = [%llu, ...] by config.json (%zu dims, %llu rows)",
                                f->dir, f->part_names[s->part], s->name, (unsigned long long)heads * (nope + vhd),
                                t->rank, (unsigned long long)(t->rank ? t->shape[0] : 0));
    }
    const uint64_t c = t->shape[1], per = (uint64_t)(nope + vhd) * c;
    const size_t base = strlen(s->name) - strlen("kv_b_proj.weight");
    for (int k = 0; k < 2; ++k) {
        char nm[256];
        snprintf(nm, sizeof nm, "%.*s%s", (int)base, s->name, k == 0 ? "k_b_proj.weight" : "v_b_proj.weight");
        hf_out_tensor *o = &ts[*n];
        rc = map_name(a, f, s, nm, n_blocks, o->name, sizeof o->name, err);
        if (rc != ANVIL_OK) return rc;
        o->pieces = calloc(heads, sizeof *o->pieces);
        if (o->pieces == NULL) return anvil__nomem(err);
        o->n_pieces = heads;
        const uint64_t rows = k == 0 ? nope : vhd;
        for (uint32_t h = 0; h < heads; ++h)
            o->pieces[h] = (hf_piece){ (int)i, h * per + (k == 0 ? 0 : (uint64_t)nope * c), rows * c };
        o->src = -1;
        o->yield_src = (int)i;
        o->n_dims = 3;
        o->ne[0] = k == 0 ? rows : c;
        o->ne[1] = k == 0 ? c : rows;
        o->ne[2] = heads;
        o->n_elements = rows * c * heads;
        o->tr_rows = k == 0 ? rows : 0;
        ++*n;
    }
    return ANVIL_OK;
}

static int plain_tensor(const hf_arch *a, const hf_folder *f, size_t i, uint64_t n_blocks, hf_out_tensor *o,
                        anvil_error *err) {
    const hf_src_tensor *s = &f->tensors[i];
    char nm[256];
    const char *name = s->name;
    if (hf_ends_with(name, "e_score_correction_bias")) { /* ModelBase.filter_tensors */
        snprintf(nm, sizeof nm, "%.*se_score_correction.bias",
                 (int)(strlen(name) - strlen("e_score_correction_bias")), name);
        name = nm;
    }
    int rc = map_name(a, f, s, name, n_blocks, o->name, sizeof o->name, err);
    if (rc == ANVIL_OK) rc = hf_src_check(f, s, err);
    if (rc != ANVIL_OK) return rc;
    hf_out_fill(f, i, o);
    return ANVIL_OK;
}

int hf_deepseek_plan(const hf_arch *a, const hf_folder *f, hf_out_tensor **out, size_t *n_out, anvil_error *err) {
    *out = NULL;
    *n_out = 0;
    uint64_t n_blocks = 0;
    int rc = hf_arch_block_count(f, &n_blocks, err);
    if (rc != ANVIL_OK) return rc;
    const int tied = hf_truthy(anvil__json_get(f->config, "tie_word_embeddings"));
    const size_t cap = 2 * f->n_tensors + 2; /* kv_b gives two */
    hf_out_tensor *ts = calloc(cap, sizeof *ts);
    if (ts == NULL) return anvil__nomem(err);
    hf_moe_state *moe = NULL;
    int any_expert = 0;
    for (size_t i = 0; i < f->n_tensors && !any_expert; ++i)
        any_expert = strstr(f->tensors[i].name, "mlp.experts") != NULL;
    if (any_expert) rc = hf_moe_begin(a, f, n_blocks, &moe, err);
    size_t n = 0;
    for (size_t i = 0; i < f->n_tensors && rc == ANVIL_OK; ++i) {
        const char *nm = f->tensors[i].name;
        if (hf_src_dropped(nm)) continue;
        if (tied && (strcmp(nm, "lm_head.weight") == 0 || strcmp(nm, "model.lm_head.weight") == 0)) continue;
        const long layer = mtp_layer(nm);
        if (layer >= 0 && (uint64_t)layer >= n_blocks) continue; /* skip_mtp */
        if (strstr(nm, "mlp.experts") != NULL) {
            const int taken = hf_moe_take(moe, i, ts, &n, err);
            if (taken < 0) rc = taken;
            continue;
        }
        if (hf_ends_with(nm, "kv_b_proj.weight")) rc = split_kv_b(a, f, i, n_blocks, ts, &n, err);
        else if ((rc = plain_tensor(a, f, i, n_blocks, &ts[n], err)) == ANVIL_OK) n++;
    }
    if (rc == ANVIL_OK && moe != NULL) rc = hf_moe_done(moe, err);
    hf_moe_free(moe);
    if (rc != ANVIL_OK) {
        hf_plan_free(ts, cap);
        return rc;
    }
    *out = ts;
    *n_out = n;
    return ANVIL_OK;
}
