/* SPDX-License-Identifier: MIT */
/*
 * hf_glm4moe: Glm4MoeForCausalLM (GLM-4.5 / 4.6) as convert_hf_to_gguf.py's
 * Glm4MoeModel writes it (gguf architecture glm4moe):
 *
 *  - hparams: TextModel's keys with block_count counting the MTP layers
 *    (num_hidden_layers + num_nextn_predict_layers), then general.file_type,
 *    the rope dimension count (head_dim, or hidden_size /
 *    num_attention_heads, times partial_rotary_factor from rope_parameters /
 *    rope_scaling / the config's top level, 0.5 when absent, truncated:
 *    hf_cfg_rope_dims),
 *    expert count and length, shared expert count, leading dense block
 *    count, the sigmoid gating function (in place where TextModel wrote
 *    the config's score function), routed_scaling_factor,
 *    norm_topk_prob (as a bool, false too) and nextn_predict_layers
 *    (--no-mtp: neither it nor the MTP layers in block_count; hf_mtp.c
 *    drops their tensors, and with --mtp all but theirs and the shared
 *    embeddings, output norm and head);
 *  - tensors in the converter's order: MTP layers (model.layers.N with N >=
 *    num_hidden_layers) kept, their enorm/hnorm/eh_proj/shared_head/
 *    embed_tokens named blk.N.nextn.* by the generated table, per-expert
 *    weights stacked (hf_moe.c, on n_routed_experts), e_score_correction_bias
 *    renamed as filter_tensors does (exp_probs_b.bias). q/k/v biases and
 *    q/k norms go through the name map as any tensor.
 *
 * Config keys the converter reads with hparams[...] are required; missing
 * or of the wrong type they are refused naming config.json and the key.
 * Tensors the name map does not know, an expert missing or past
 * n_routed_experts: refused by name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hf_internal.h"
#include "hf_table.h"

#define GLM_CLASS "Glm4MoeForCausalLM" /* the class named in config errors */

#define RET_IF(x)                \
    do {                         \
        const int rc_ = (x);     \
        if (rc_ < 0) return rc_; \
    } while (0)

static int set_u32(anvil_gguf_writer *w, const char *suffix, uint32_t v, anvil_error *err) {
    char key[128];
    snprintf(key, sizeof key, "glm4moe.%s", suffix);
    return anvil_gguf_writer_set_u32(w, key, v, err);
}

/* num_nextn_predict_layers: 0 when absent (hparams.get(..., 0)); with
 * --no-mtp 0 and not written (neither added to block_count). */
static int nextn_layers(const hf_folder *f, uint32_t *n, int *present, anvil_error *err) {
    *n = 0;
    const int rc = hf_cfg_u32(f, f->config, "num_nextn_predict_layers", GLM_CLASS, 0, n, err);
    if (rc < 0) return rc;
    *present = rc;
    if (f->mtp_mode == HF_MTP_NONE) *n = 0, *present = 0;
    return ANVIL_OK;
}

int hf_glm4moe_hparams(const hf_arch *a, const hf_folder *f, uint32_t ftype, anvil_gguf_writer *w, anvil_error *err) {
    uint32_t nextn = 0, n_exp = 0, moe_ff = 0, shared = 0, dense = 0;
    int has_nextn = 0;
    RET_IF(nextn_layers(f, &nextn, &has_nextn, err));
    uint32_t rope_d = 0;
    RET_IF(hf_cfg_rope_dims(f, GLM_CLASS, 0.5, &rope_d, err));
    int has_exp = 0, has_ff = 0, has_shared = 0, has_dense = 0, has_scale = 0;
    RET_IF(has_exp = hf_cfg_u32(f, f->config, "n_routed_experts", GLM_CLASS, 0, &n_exp, err));
    RET_IF(has_ff = hf_cfg_u32(f, f->config, "moe_intermediate_size", GLM_CLASS, 0, &moe_ff, err));
    RET_IF(has_shared = hf_cfg_u32(f, f->config, "n_shared_experts", GLM_CLASS, 0, &shared, err));
    RET_IF(has_dense = hf_cfg_u32(f, f->config, "first_k_dense_replace", GLM_CLASS, 0, &dense, err));
    double scale = 0;
    RET_IF(has_scale = hf_cfg_num(f, f->config, "routed_scaling_factor", &scale, err));
    const anvil_json_value *ntp = anvil__json_get(f->config, "norm_topk_prob");

    hf_text_over o = { 0, 0.0, -1, -1, has_exp ? (int64_t)n_exp : -1, 0, 0, nextn, 2, 0 };
    int rc = hf_arch_text_hparams(a, f, &o, w, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, "general.file_type", ftype, err);
    if (rc == ANVIL_OK) rc = set_u32(w, "rope.dimension_count", rope_d, err);
    if (rc == ANVIL_OK && has_exp && !o.wrote_expert_count) rc = set_u32(w, "expert_count", n_exp, err);
    if (rc == ANVIL_OK && has_ff) rc = set_u32(w, "expert_feed_forward_length", moe_ff, err);
    if (rc == ANVIL_OK && has_shared) rc = set_u32(w, "expert_shared_count", shared, err);
    if (rc == ANVIL_OK && has_dense) rc = set_u32(w, "leading_dense_block_count", dense, err);
    if (rc == ANVIL_OK && !o.wrote_gating) rc = set_u32(w, "expert_gating_func", 2, err); /* SIGMOID */
    if (rc == ANVIL_OK && has_scale)
        rc = anvil_gguf_writer_set_f32(w, "glm4moe.expert_weights_scale", (float)scale, err);
    if (rc == ANVIL_OK && !anvil__json_is_null(ntp))
        rc = anvil_gguf_writer_set_bool(w, "glm4moe.expert_weights_norm", hf_truthy(ntp), err);
    if (rc == ANVIL_OK && has_nextn) rc = set_u32(w, "nextn_predict_layers", nextn, err);
    return rc;
}

/* ---- tensors ---------------------------------------------------------------- */

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
    if (hf_table_map_tensor(a->gguf_name, name, (unsigned long)n_blocks, o->name, sizeof o->name) != 0) {
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                "%s/%s: cannot map tensor \"%s\" to a %s GGUF tensor (convert_hf_to_gguf.py "
                                "refuses it too)",
                                f->dir, f->part_names[s->part], s->name, a->gguf_name);
    }
    int rc = hf_src_check(f, s, err);
    if (rc != ANVIL_OK) return rc;
    hf_out_fill(f, i, o);
    return ANVIL_OK;
}

int hf_glm4moe_plan(const hf_arch *a, const hf_folder *f, hf_out_tensor **out, size_t *n_out, anvil_error *err) {
    *out = NULL;
    *n_out = 0;
    uint64_t n_main = 0;
    uint32_t nextn = 0;
    int has_nextn = 0;
    int rc = hf_arch_block_count(f, &n_main, err);
    if (rc == ANVIL_OK) rc = nextn_layers(f, &nextn, &has_nextn, err);
    if (rc != ANVIL_OK) return rc;
    const uint64_t n_blocks = n_main + nextn; /* block_count with the MTP layers */
    const size_t cap = f->n_tensors + 2;
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
        if (strstr(nm, "mlp.experts") != NULL) {
            const int taken = hf_moe_take(moe, i, ts, &n, err);
            if (taken < 0) rc = taken;
            continue;
        }
        if ((rc = plain_tensor(a, f, i, n_blocks, &ts[n], err)) == ANVIL_OK) n++;
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
