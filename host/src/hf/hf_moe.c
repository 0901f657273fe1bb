/* SPDX-License-Identifier: MIT */
/*
 * hf_moe: the expert tensors of Qwen2MoeForCausalLM, Qwen3MoeForCausalLM
 * and MixtralForCausalLM as convert_hf_to_gguf.py writes them
 * (Qwen2MoeModel.modify_tensors, LlamaModel.modify_tensors):
 *
 *  - per-expert weights (model.layers.L.mlp.experts.E.{gate,up,down}_proj,
 *    Mixtral's block_sparse_moe.experts.E.w{1,2,3}) are held back until the
 *    layer's last one is visited in convert's order, then written stacked
 *    as blk.L.ffn_{gate,up,down}_exps.weight ([E, rows, cols]) in convert's
 *    order (Qwen: down, gate, up; Mixtral: w1 gate, w2 down, w3 up);
 *  - the fused layout (transformers 5: mlp.experts.gate_up_proj
 *    [E, 2 * ff, hidden] and mlp.experts.down_proj [E, hidden, ff]) is
 *    written as it is visited, gate_up split into its gate and up halves.
 *
 * Nothing is copied here: an output is a list of pieces of its sources,
 * read when the tensor is written (hf_convert.c). A missing expert, an
 * expert tensor past num_experts or of another shape, a layer with both
 * layouts: refused naming the file and tensor.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hf_internal.h"

enum { W_GATE, W_UP, W_DOWN, N_W };

struct hf_moe_state {
    const hf_arch *a;
    const hf_folder *f;
    uint64_t n_blocks, n_exp, hidden, ff; /* ff: the experts' (0: not given) */
    int *src;                             /* [layer][w][expert]: source index or -1 */
    size_t *seen;                         /* per layer: expert tensors held */
    unsigned char *fused;                 /* per layer: a fused tensor seen */
};

static uint64_t cfg_u(const hf_folder *f, const char *key) {
    int64_t v = 0;
    return anvil__json_i64(anvil__json_get(f->config, key), &v) == 0 && v > 0 ? (uint64_t)v : 0;
}

int hf_moe_begin(const hf_arch *a, const hf_folder *f, uint64_t n_blocks, hf_moe_state **out, anvil_error *err) {
    *out = NULL;
    /* Mixtral: hparams["num_local_experts"]; Qwen: find_hparam(["num_local_experts", "num_experts"]) */
    const char *key = "num_local_experts";
    const anvil_json_value *v = anvil__json_get(f->config, key);
    if (a->id == HF_ARCH_DEEPSEEK2 || a->id == HF_ARCH_GLM4MOE) { /* hparams["n_routed_experts"] */
        key = "n_routed_experts";
        v = anvil__json_get(f->config, key);
    } else if (a->id != HF_ARCH_MIXTRAL && v == NULL) {
        key = "num_experts";
        v = anvil__json_get(f->config, key);
    }
    int64_t n = 0;
    if (v == NULL || anvil__json_i64(v, &n) != 0 || n <= 0 || n > 65536) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s/config.json: %s needs \"%s\", the number of experts (a whole number in "
                                "[1, 65536]), %s",
                                f->dir, a->hf_name, key, v == NULL ? "which is missing" : "not this value");
    }
    if (n_blocks > 65536) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s/config.json: %llu layers (at most 65536)", f->dir,
                                (unsigned long long)n_blocks);
    }
    hf_moe_state *st = calloc(1, sizeof *st);
    if (st == NULL) return anvil__nomem(err);
    st->a = a;
    st->f = f;
    st->n_blocks = n_blocks;
    st->n_exp = (uint64_t)n;
    st->hidden = cfg_u(f, "hidden_size");
    st->ff = cfg_u(f, a->id == HF_ARCH_MIXTRAL ? "intermediate_size" : "moe_intermediate_size");
    const size_t cells = (size_t)n_blocks * N_W * (size_t)st->n_exp;
    st->src = malloc((cells + 1) * sizeof *st->src);
    st->seen = calloc(n_blocks + 1, sizeof *st->seen);
    st->fused = calloc(n_blocks + 1, 1);
    if (st->src == NULL || st->seen == NULL || st->fused == NULL) {
        hf_moe_free(st);
        return anvil__nomem(err);
    }
    for (size_t i = 0; i < cells; ++i) st->src[i] = -1;
    *out = st;
    return ANVIL_OK;
}

void hf_moe_free(hf_moe_state *st) {
    if (st == NULL) return;
    free(st->src);
    free(st->seen);
    free(st->fused);
    free(st);
}

static int *cell(hf_moe_state *st, uint64_t layer, int w, uint64_t e) {
    return &st->src[((size_t)layer * N_W + (size_t)w) * st->n_exp + e];
}

/* The per-expert weight names ("w1" ...) in the order convert writes them,
 * with the GGUF name each becomes. */
typedef struct w_name {
    const char *hf;
    int w;
} w_name;
static const w_name k_qwen_w[N_W] = { { "down_proj", W_DOWN }, { "gate_proj", W_GATE }, { "up_proj", W_UP } };
static const w_name k_mixtral_w[N_W] = { { "w1", W_GATE }, { "w2", W_DOWN }, { "w3", W_UP } };
static const char *const k_gguf_w[N_W] = { "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps" };

static const char *part_of(const hf_moe_state *st, size_t i) { return st->f->part_names[st->f->tensors[i].part]; }

/* Parse "<prefix>L.<mid>E.<w>.weight": 0 and layer, expert, weight slot. */
static int parse_expert(const hf_moe_state *st, const char *name, uint64_t *layer, uint64_t *e, int *w) {
    const int mix = st->a->id == HF_ARCH_MIXTRAL;
    const char *mid = mix ? ".block_sparse_moe.experts." : ".mlp.experts.";
    if (strncmp(name, "model.layers.", 13) != 0) return -1;
    char *end = NULL;
    const unsigned long long l = strtoull(name + 13, &end, 10);
    if (end == name + 13 || strncmp(end, mid, strlen(mid)) != 0) return -1;
    const char *p = end + strlen(mid);
    const unsigned long long x = strtoull(p, &end, 10);
    if (end == p || *end != '.') return -1;
    const w_name *ws = mix ? k_mixtral_w : k_qwen_w;
    for (int k = 0; k < N_W; ++k) {
        const size_t n = strlen(ws[k].hf);
        if (strncmp(end + 1, ws[k].hf, n) == 0 && strcmp(end + 1 + n, ".weight") == 0) {
            *layer = l;
            *e = x;
            *w = ws[k].w;
            return 0;
        }
    }
    return -1;
}

static int readable(const hf_moe_state *st, size_t i, anvil_error *err) {
    const hf_src_tensor *s = &st->f->tensors[i];
    const anvil_st_dtype d = s->st->dtype;
    if (d == ANVIL_ST_F32 || d == ANVIL_ST_F16 || d == ANVIL_ST_BF16 || (s->scale != NULL && s->st->rank == 2)) {
        return ANVIL_OK;
    }
    return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                            "%s/%s: expert tensor \"%s\" is %s; anvil convert reads F32, F16, BF16 and "
                            "scaled FP8 (2-D) expert weights",
                            st->f->dir, part_of(st, i), s->name, anvil_st_dtype_name(d));
}

static int bad_shape(const hf_moe_state *st, size_t i, const char *want, anvil_error *err) {
    const anvil_st_tensor *t = st->f->tensors[i].st;
    char got[128];
    size_t o = 0;
    got[o++] = '[';
    for (size_t d = 0; d < t->rank && o < sizeof got - 24; ++d)
        o += (size_t)snprintf(got + o, sizeof got - o, "%s%llu", d ? ", " : "", (unsigned long long)t->shape[d]);
    snprintf(got + o, sizeof got - o, "]");
    return anvil__error_set(err, ANVIL_E_FORMAT, "%s/%s: expert tensor \"%s\" has shape %s; %s", st->f->dir,
                            part_of(st, i), st->f->tensors[i].name, got, want);
}

static int out_name(hf_out_tensor *o, uint64_t layer, int w) {
    const int n = snprintf(o->name, sizeof o->name, "blk.%llu.%s.weight", (unsigned long long)layer, k_gguf_w[w]);
    return n > 0 && (size_t)n < sizeof o->name ? 0 : -1;
}

/* The layer's three stacked tensors, each [n_exp, rows, cols], yielded
 * when source tensor `last` (the layer's last expert tensor) is visited. */
static int emit_stacked(hf_moe_state *st, uint64_t layer, size_t last, hf_out_tensor *ts, size_t *n,
                        anvil_error *err) {
    const w_name *ws = st->a->id == HF_ARCH_MIXTRAL ? k_mixtral_w : k_qwen_w;
    for (int k = 0; k < N_W; ++k) {
        const int w = ws[k].w;
        const anvil_st_tensor *t0 = st->f->tensors[*cell(st, layer, w, 0)].st;
        const uint64_t r0 = t0->shape[0], c0 = t0->shape[1];
        const uint64_t want_r = w == W_DOWN ? st->hidden : st->ff, want_c = w == W_DOWN ? st->ff : st->hidden;
        hf_out_tensor *o = &ts[*n];
        o->pieces = calloc(st->n_exp, sizeof *o->pieces);
        if (o->pieces == NULL) return anvil__nomem(err);
        o->n_pieces = st->n_exp;
        for (uint64_t e = 0; e < st->n_exp; ++e) {
            const int i = *cell(st, layer, w, e);
            const anvil_st_tensor *t = st->f->tensors[i].st;
            char want[160];
            snprintf(want, sizeof want,
                     "expert 0 of this layer has [%llu, %llu] and config.json implies [%llu, %llu]",
                     (unsigned long long)r0, (unsigned long long)c0, (unsigned long long)want_r,
                     (unsigned long long)want_c);
            if (t->rank != 2 || t->shape[0] != r0 || t->shape[1] != c0 || (want_r && r0 != want_r) ||
                (want_c && c0 != want_c))
                return bad_shape(st, (size_t)i, want, err);
            int rc = readable(st, (size_t)i, err);
            if (rc != ANVIL_OK) return rc;
            o->pieces[e] = (hf_piece){ i, 0, t->n_elements };
        }
        if (out_name(o, layer, w) != 0) return anvil__error_set(err, ANVIL_E_INTERNAL, "tensor name too long");
        o->src = -1;
        o->yield_src = (int)last;
        o->n_dims = 3;
        o->ne[0] = c0;
        o->ne[1] = r0;
        o->ne[2] = st->n_exp;
        o->n_elements = c0 * r0 * st->n_exp;
        ++*n;
    }
    return ANVIL_OK;
}

static int fused_kind(const char *name, uint64_t *layer) {
    if (strncmp(name, "model.layers.", 13) != 0) return -1;
    char *end = NULL;
    *layer = strtoull(name + 13, &end, 10);
    if (end == name + 13) return -1;
    if (strcmp(end, ".mlp.experts.down_proj") == 0 || strcmp(end, ".mlp.experts.down_proj.weight") == 0)
        return W_DOWN;
    if (strcmp(end, ".mlp.experts.gate_up_proj") == 0 || strcmp(end, ".mlp.experts.gate_up_proj.weight") == 0)
        return W_GATE;
    return -1;
}

/* Fused layout: down_proj [E, hidden, ff] as it is; gate_up_proj
 * [E, 2 * ff, hidden] split into gate (each expert's first ff rows) then up. */
static int take_fused(hf_moe_state *st, size_t i, uint64_t layer, int kind, hf_out_tensor *ts, size_t *n,
                      anvil_error *err) {
    const anvil_st_tensor *t = st->f->tensors[i].st;
    const int down = kind == W_DOWN;
    char want[160];
    snprintf(want, sizeof want, "the fused layout has %s [num_experts %llu, %s]", down ? "down_proj" : "gate_up_proj",
             (unsigned long long)st->n_exp,
             down ? "hidden_size, moe_intermediate_size" : "2 * moe_intermediate_size, hidden_size");
    if (t->rank != 3 || t->shape[0] != st->n_exp || (!down && t->shape[1] % 2 != 0))
        return bad_shape(st, i, want, err);
    const uint64_t rows = down ? t->shape[1] : t->shape[1] / 2, cols = t->shape[2];
    if ((st->ff && rows != (down ? st->hidden : st->ff)) || (st->hidden && cols != (down ? st->ff : st->hidden)))
        return bad_shape(st, i, want, err);
    if (t->dtype != ANVIL_ST_F32 && t->dtype != ANVIL_ST_F16 && t->dtype != ANVIL_ST_BF16) {
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                "%s/%s: fused expert tensor \"%s\" is %s; anvil convert reads it in F32, F16 or BF16",
                                st->f->dir, part_of(st, i), st->f->tensors[i].name, anvil_st_dtype_name(t->dtype));
    }
    st->fused[layer] = 1;
    const int outs[2] = { down ? W_DOWN : W_GATE, W_UP };
    for (int k = 0; k < (down ? 1 : 2); ++k) {
        hf_out_tensor *o = &ts[*n];
        const uint64_t n_p = down ? 1 : st->n_exp, slab = rows * cols;
        o->pieces = calloc(n_p, sizeof *o->pieces);
        if (o->pieces == NULL) return anvil__nomem(err);
        o->n_pieces = n_p;
        for (uint64_t e = 0; e < n_p; ++e)
            o->pieces[e] = down ? (hf_piece){ (int)i, 0, t->n_elements }
                                : (hf_piece){ (int)i, e * 2 * slab + (uint64_t)k * slab, slab };
        if (out_name(o, layer, outs[k]) != 0) return anvil__error_set(err, ANVIL_E_INTERNAL, "tensor name too long");
        o->src = -1;
        o->yield_src = (int)i;
        o->n_dims = 3;
        o->ne[0] = cols;
        o->ne[1] = rows;
        o->ne[2] = st->n_exp;
        o->n_elements = slab * st->n_exp;
        ++*n;
    }
    return 1;
}

static int refuse_mixed(const hf_moe_state *st, size_t i, uint64_t layer, anvil_error *err) {
    return anvil__error_set(err, ANVIL_E_FORMAT,
                            "%s/%s: tensor \"%s\": layer %llu holds both per-expert and fused (gate_up_proj) "
                            "expert weights; a checkpoint has one layout",
                            st->f->dir, part_of(st, i), st->f->tensors[i].name, (unsigned long long)layer);
}

int hf_moe_take(hf_moe_state *st, size_t i, hf_out_tensor *ts, size_t *n, anvil_error *err) {
    const char *name = st->f->tensors[i].name;
    const int mix = st->a->id == HF_ARCH_MIXTRAL;
    if (strstr(name, mix ? "block_sparse_moe.experts" : "experts") == NULL) return 0;
    uint64_t layer = 0, e = 0;
    int w = 0;
    const int fk = mix ? -1 : fused_kind(name, &layer);
    if (fk >= 0 && layer < st->n_blocks) {
        if (st->seen[layer] != 0) return refuse_mixed(st, i, layer, err);
        return take_fused(st, i, layer, fk, ts, n, err);
    }
    if (fk < 0 && parse_expert(st, name, &layer, &e, &w) == 0 && layer < st->n_blocks && e < st->n_exp) {
        if (st->fused[layer]) return refuse_mixed(st, i, layer, err);
        int *c = cell(st, layer, w, e);
        *c = (int)i; /* the folder holds each name once */
        if (++st->seen[layer] < N_W * st->n_exp) return 1;
        st->seen[layer] = 0;
        int rc = emit_stacked(st, layer, i, ts, n, err);
        return rc == ANVIL_OK ? 1 : rc;
    }
    return anvil__error_set(
        err, ANVIL_E_UNSUPPORTED,
        "%s/%s: tensor \"%s\" is not an expert weight convert_hf_to_gguf.py stacks for %s "
        "(model.layers.L.%s.E.%s.weight with L < %llu layers and E < %llu experts%s)",
        st->f->dir, part_of(st, i), name, st->a->hf_name, mix ? "block_sparse_moe.experts" : "mlp.experts",
        mix ? "{w1,w2,w3}" : "{gate,up,down}_proj", (unsigned long long)st->n_blocks, (unsigned long long)st->n_exp,
        mix ? "" : ", or the fused mlp.experts.gate_up_proj / down_proj");
}

int hf_moe_done(hf_moe_state *st, anvil_error *err) {
    const w_name *ws = st->a->id == HF_ARCH_MIXTRAL ? k_mixtral_w : k_qwen_w;
    for (uint64_t l = 0; l < st->n_blocks; ++l) {
        if (st->seen[l] == 0) continue;
        /* name the first missing tensor, and one of the layer's present ones for its file */
        int have = -1;
        for (int k = 0; k < N_W && have < 0; ++k)
            for (uint64_t e = 0; e < st->n_exp && have < 0; ++e) have = *cell(st, l, ws[k].w, e);
        for (uint64_t e = 0; e < st->n_exp; ++e) {
            for (int k = 0; k < N_W; ++k) {
                if (*cell(st, l, ws[k].w, e) >= 0) continue;
                return anvil__error_set(err, ANVIL_E_FORMAT,
                                        "%s: expert tensor \"model.layers.%llu.%s.%llu.%s.weight\" is missing "
                                        "(layer %llu has %zu of its %llu expert weights, e.g. \"%s\" in %s); "
                                        "convert_hf_to_gguf.py stops on it too (Unprocessed experts)",
                                        st->f->dir, (unsigned long long)l,
                                        st->a->id == HF_ARCH_MIXTRAL ? "block_sparse_moe.experts" : "mlp.experts",
                                        (unsigned long long)e, ws[k].hf, (unsigned long long)l, st->seen[l],
                                        (unsigned long long)(N_W * st->n_exp), st->f->tensors[have].name,
                                        part_of(st, (size_t)have));
            }
        }
    }
    return ANVIL_OK;
}
