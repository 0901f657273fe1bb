/* SPDX-License-Identifier: MIT */
/*
 * hf_gptoss: GptOssForCausalLM as convert_hf_to_gguf.py's GptOssModel writes
 * it (gguf architecture gpt-oss; llama.cpp de3ff815, conversion/gpt_oss.py).
 *
 * - MXFP4 experts (mlp.experts.{down,gate_up}_proj_{blocks,scales}, U8):
 *   generate_extra_tensors repacks each blocks/scales pair into GGUF MXFP4
 *   (scale byte, then the 16 bytes of nibbles reordered) before any other
 *   tensor, in checkpoint order, never inflated; gate_up's even rows become
 *   ffn_gate_exps, its odd rows ffn_up_exps. A scales tensor must follow its
 *   own blocks tensor (the converter pairs them by order); a blocks tensor
 *   without its scales, or of a shape config.json does not imply, is refused
 *   by file and name.
 * - the rest in checkpoint order (modify_tensors): sinks as attn_sinks.weight,
 *   BF16/F16/F32 experts transposed ([E, in, out] -> [E, out, in]), gate_up
 *   and its bias split even/odd (gate first), names from the generated table
 *   (hf_table.h), shapes checked against config.json.
 * The hparams are TextModel's plus sliding_window and
 * expert_feed_forward_length (hf_arch.c); the vocabulary is gpt2 (gpt-4o).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hf_internal.h"
#include "hf_table.h"

int hf_gptoss_is_mxfp4(const hf_folder *f) {
    const anvil_json_value *q = anvil__json_get(f->config, "quantization_config");
    const char *m = anvil__json_str(anvil__json_get(q, "quant_method"));
    return m != NULL && strcmp(m, "mxfp4") == 0;
}

static uint64_t cfg_u(const hf_folder *f, const char *key) {
    int64_t v = 0;
    return anvil__json_i64(anvil__json_get(f->config, key), &v) == 0 && v > 0 ? (uint64_t)v : 0;
}

static const char *part_of(const hf_folder *f, size_t i) { return f->part_names[f->tensors[i].part]; }

static void shape_str(const anvil_st_tensor *t, char *buf, size_t cap) {
    size_t o = 0;
    buf[o++] = '[';
    for (size_t i = 0; i < t->rank && o + 24 < cap; ++i)
        o += (size_t)snprintf(buf + o, cap - o, "%s%llu", i ? ", " : "", (unsigned long long)t->shape[i]);
    snprintf(buf + o, cap - o, "]");
}

/* Tensor i has rank nd and dims d (0 in d: any). */
static int want_shape(const hf_folder *f, size_t i, size_t nd, const uint64_t *d, anvil_error *err) {
    const anvil_st_tensor *t = f->tensors[i].st;
    int ok = t->rank == nd;
    for (size_t k = 0; ok && k < nd; ++k) ok = d[k] == 0 || t->shape[k] == d[k];
    if (ok) return ANVIL_OK;
    char got[160], want[160] = "[";
    shape_str(t, got, sizeof got);
    for (size_t k = 0; k < nd; ++k) {
        const size_t l = strlen(want);
        if (d[k]) snprintf(want + l, sizeof want - l, "%s%llu", k ? ", " : "", (unsigned long long)d[k]);
        else snprintf(want + l, sizeof want - l, "%s*", k ? ", " : "");
    }
    strncat(want, "]", sizeof want - strlen(want) - 1);
    return anvil__error_set(err, ANVIL_E_FORMAT,
                            "%s/%s: tensor \"%s\" has shape %s, but config.json implies %s; the weights and "
                            "config.json do not belong together",
                            f->dir, part_of(f, i), f->tensors[i].name, got, want);
}

typedef struct gp_cfg {
    uint64_t hidden, inter, n_exp, n_blocks;
} gp_cfg;

static int map_name(const hf_folder *f, size_t i, const char *name, const gp_cfg *c, char *out, anvil_error *err) {
    if (hf_table_map_tensor("gpt-oss", name, (unsigned long)c->n_blocks, out, 64) == 0) return ANVIL_OK;
    return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                            "%s/%s: cannot map tensor \"%s\" to a gpt-oss GGUF tensor (convert_hf_to_gguf.py "
                            "refuses it too)",
                            f->dir, part_of(f, i), f->tensors[i].name);
}

/* name with the first `from` replaced by `to`, into out[256]. */
static void replace(const char *name, const char *from, const char *to, char *out) {
    const char *at = strstr(name, from);
    if (at == NULL) snprintf(out, 256, "%s", name);
    else snprintf(out, 256, "%.*s%s%s", (int)(at - name), name, to, at + strlen(from));
}

static int is_mx_part(const char *nm) {
    return (strstr(nm, "mlp.experts.down_proj_") != NULL || strstr(nm, "mlp.experts.gate_up_proj_") != NULL) &&
           (hf_ends_with(nm, "_blocks") || hf_ends_with(nm, "_scales"));
}

static int float_src(const hf_folder *f, size_t i, anvil_error *err) {
    const anvil_st_tensor *t = f->tensors[i].st;
    if (t->dtype == ANVIL_ST_F32 || t->dtype == ANVIL_ST_F16 || t->dtype == ANVIL_ST_BF16) {
        if (t->rank >= 1 && t->rank <= 4) return ANVIL_OK;
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED, "%s/%s: tensor \"%s\" has %zu dims (GGUF holds 1 to 4)",
                                f->dir, part_of(f, i), f->tensors[i].name, t->rank);
    }
    return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                            "%s/%s: tensor \"%s\" is %s; anvil convert reads gpt-oss's F32, F16 and BF16 "
                            "weights and its MXFP4 experts (U8 *_blocks with *_scales)",
                            f->dir, part_of(f, i), f->tensors[i].name, anvil_st_dtype_name(t->dtype));
}

/* One MXFP4 output from blocks tensor b and scales tensor s (rows step/off). */
static int mx_out(const hf_folder *f, size_t b, size_t s, const char *gguf, uint32_t step, uint32_t off,
                  hf_out_tensor *o) {
    const anvil_st_tensor *bt = f->tensors[b].st;
    snprintf(o->name, sizeof o->name, "%s", gguf);
    o->src = (int)b;
    o->mxfp4 = 1;
    o->mx_scales = (int)s;
    o->mx_step = step;
    o->mx_off = off;
    o->type = ANVIL_TYPE_MXFP4;
    o->n_dims = 3;
    o->ne[0] = bt->shape[2] * 32;
    o->ne[1] = bt->shape[1] / step;
    o->ne[2] = bt->shape[0];
    o->n_elements = o->ne[0] * o->ne[1] * o->ne[2];
    return ANVIL_OK;
}

/* generate_extra_tensors: the MXFP4 pairs, in checkpoint order. */
static int plan_mxfp4(const hf_folder *f, const gp_cfg *c, hf_out_tensor *ts, size_t *n, anvil_error *err) {
    long pending[2] = { -1, -1 }; /* 0 down, 1 gate_up: a blocks tensor waiting for its scales */
    static const char *const kind[2] = { "mlp.experts.down_proj_", "mlp.experts.gate_up_proj_" };
    for (size_t i = 0; i < f->n_tensors; ++i) {
        const char *nm = f->tensors[i].name;
        if (!is_mx_part(nm)) continue;
        int k = -1;
        for (int q = 0; q < 2; ++q)
            if (strstr(nm, kind[q]) != NULL) k = q;
        if (k < 0) continue; /* mapped (and refused) with the rest */
        const anvil_st_tensor *t = f->tensors[i].st;
        if (t->dtype != ANVIL_ST_U8) {
            return anvil__error_set(err, ANVIL_E_FORMAT, "%s/%s: MXFP4 tensor \"%s\" is %s, not U8", f->dir,
                                    part_of(f, i), nm, anvil_st_dtype_name(t->dtype));
        }
        /* down: [E, hidden, inter/32, 16]; gate_up: [E, 2 inter, hidden/32, 16] */
        const uint64_t rows = k == 0 ? c->hidden : 2 * c->inter, in = k == 0 ? c->inter : c->hidden;
        if (in % 32 != 0) {
            return anvil__error_set(err, ANVIL_E_FORMAT,
                                    "%s/config.json: %s is %llu, not a multiple of 32: no MXFP4 experts fit it",
                                    f->dir, k == 0 ? "intermediate_size" : "hidden_size", (unsigned long long)in);
        }
        if (hf_ends_with(nm, "_blocks")) {
            if (pending[k] >= 0) {
                return anvil__error_set(err, ANVIL_E_FORMAT,
                                        "%s/%s: MXFP4 tensor \"%s\" has no \"%.*s_scales\" after it (its scales "
                                        "are missing); the checkpoint is incomplete: re-download it",
                                        f->dir, part_of(f, (size_t)pending[k]), f->tensors[pending[k]].name,
                                        (int)(strlen(f->tensors[pending[k]].name) - 7), f->tensors[pending[k]].name);
            }
            const uint64_t d[4] = { c->n_exp, rows, in / 32, 16 };
            int rc = want_shape(f, i, 4, d, err);
            if (rc != ANVIL_OK) return rc;
            pending[k] = (long)i;
            continue;
        }
        /* _scales: its blocks tensor must be the one waiting */
        const size_t nl = strlen(nm);
        const char *bn = pending[k] >= 0 ? f->tensors[pending[k]].name : NULL;
        if (bn == NULL || strlen(bn) != nl || memcmp(bn, nm, nl - 7) != 0) {
            return anvil__error_set(err, ANVIL_E_FORMAT,
                                    "%s/%s: MXFP4 scales \"%s\" do not follow their \"%.*s_blocks\" (missing, or "
                                    "out of convert_hf_to_gguf.py's order); the checkpoint is incomplete: "
                                    "re-download it",
                                    f->dir, part_of(f, i), nm, (int)(nl - 7), nm);
        }
        const uint64_t d[3] = { c->n_exp, rows, in / 32 };
        int rc = want_shape(f, i, 3, d, err);
        if (rc != ANVIL_OK) return rc;
        const size_t b = (size_t)pending[k];
        pending[k] = -1;
        char hf[256], gguf[64];
        if (k == 0) {
            replace(nm, "_scales", ".weight", hf);
            rc = map_name(f, i, hf, c, gguf, err);
            if (rc == ANVIL_OK) mx_out(f, b, i, gguf, 1, 0, &ts[(*n)++]);
        } else {
            replace(nm, "gate_up_proj_scales", "gate_proj.weight", hf);
            rc = map_name(f, i, hf, c, gguf, err);
            if (rc == ANVIL_OK) mx_out(f, b, i, gguf, 2, 0, &ts[(*n)++]);
            replace(nm, "gate_up_proj_scales", "up_proj.weight", hf);
            if (rc == ANVIL_OK) rc = map_name(f, i, hf, c, gguf, err);
            if (rc == ANVIL_OK) mx_out(f, b, i, gguf, 2, 1, &ts[(*n)++]);
        }
        if (rc != ANVIL_OK) return rc;
    }
    for (int k = 0; k < 2; ++k) {
        if (pending[k] < 0) continue;
        const char *bn = f->tensors[pending[k]].name;
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s/%s: MXFP4 tensor \"%s\" has no \"%.*s_scales\" (its scales are missing); the "
                                "checkpoint is incomplete: re-download it",
                                f->dir, part_of(f, (size_t)pending[k]), bn, (int)(strlen(bn) - 7), bn);
    }
    return ANVIL_OK;
}

static void plain_out(const hf_folder *f, size_t i, const char *gguf, hf_out_tensor *o) {
    snprintf(o->name, sizeof o->name, "%s", gguf);
    hf_out_fill(f, i, o);
}

/* A strided view of expert tensor i: ne (3 dims or 2 for a bias). */
static void strided_out(size_t i, const char *gguf, uint32_t n_dims, const uint64_t *ne, uint64_t s_r, uint64_t s_c,
                        uint64_t base, hf_out_tensor *o) {
    snprintf(o->name, sizeof o->name, "%s", gguf);
    o->src = (int)i;
    o->strided = 1;
    o->n_dims = n_dims;
    o->n_elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
        o->ne[d] = ne[d];
        o->n_elements *= ne[d];
    }
    o->s_r = s_r;
    o->s_c = s_c;
    o->s_base = base;
}

/* modify_tensors for one checkpoint tensor (not an MXFP4 part). */
static int plan_one(const hf_folder *f, size_t i, const gp_cfg *c, hf_out_tensor *ts, size_t *n, anvil_error *err) {
    const char *nm = f->tensors[i].name;
    int rc = float_src(f, i, err);
    if (rc != ANVIL_OK) return rc;
    char hf[256], g0[64], g1[64];
    const uint64_t E = c->n_exp, H = c->hidden, I = c->inter;
    if (strstr(nm, "down_proj") != NULL && strstr(nm, "mlp.experts.") != NULL) {
        if (hf_ends_with(nm, "_bias")) {
            const uint64_t d[2] = { E, H };
            replace(nm, "down_proj_bias", "down_proj.bias", hf);
            rc = want_shape(f, i, 2, d, err);
            if (rc == ANVIL_OK) rc = map_name(f, i, hf, c, g0, err);
            if (rc == ANVIL_OK) plain_out(f, i, g0, &ts[(*n)++]);
            return rc;
        }
        /* [E, inter, hidden] -> [E, hidden, inter] */
        const uint64_t d[3] = { E, I, H }, ne[3] = { I, H, E };
        replace(nm, "down_proj", "down_proj.weight", hf);
        rc = want_shape(f, i, 3, d, err);
        if (rc == ANVIL_OK) rc = map_name(f, i, hf, c, g0, err);
        if (rc == ANVIL_OK) strided_out(i, g0, 3, ne, 1, H, 0, &ts[(*n)++]);
        return rc;
    }
    if (strstr(nm, "gate_up_proj") != NULL && strstr(nm, "mlp.experts.") != NULL) {
        const int bias = hf_ends_with(nm, "_bias");
        replace(nm, bias ? "gate_up_proj_bias" : "gate_up_proj", bias ? "gate_proj.bias" : "gate_proj.weight", hf);
        rc = map_name(f, i, hf, c, g0, err);
        replace(nm, bias ? "gate_up_proj_bias" : "gate_up_proj", bias ? "up_proj.bias" : "up_proj.weight", hf);
        if (rc == ANVIL_OK) rc = map_name(f, i, hf, c, g1, err);
        if (rc != ANVIL_OK) return rc;
        if (bias) {
            const uint64_t d[2] = { E, 2 * I }, ne[2] = { I, E };
            rc = want_shape(f, i, 2, d, err);
            if (rc == ANVIL_OK) {
                strided_out(i, g0, 2, ne, 0, 2, 0, &ts[(*n)++]);
                strided_out(i, g1, 2, ne, 0, 2, 1, &ts[(*n)++]);
            }
            return rc;
        }
        /* [E, hidden, 2 inter] -> transposed, even rows gate, odd rows up */
        const uint64_t d[3] = { E, H, 2 * I }, ne[3] = { H, I, E };
        rc = want_shape(f, i, 3, d, err);
        if (rc == ANVIL_OK) {
            strided_out(i, g0, 3, ne, 2, 2 * I, 0, &ts[(*n)++]);
            strided_out(i, g1, 3, ne, 2, 2 * I, 1, &ts[(*n)++]);
        }
        return rc;
    }
    if (strstr(nm, "sinks") != NULL) {
        snprintf(hf, sizeof hf, "%s.weight", nm);
        const uint64_t d[1] = { cfg_u(f, "num_attention_heads") };
        rc = want_shape(f, i, 1, d, err);
    } else {
        snprintf(hf, sizeof hf, "%s", nm);
    }
    if (rc == ANVIL_OK) rc = map_name(f, i, hf, c, g0, err);
    if (rc == ANVIL_OK) plain_out(f, i, g0, &ts[(*n)++]);
    return rc;
}

int hf_gptoss_plan(const hf_arch *a, const hf_folder *f, hf_out_tensor **out, size_t *n_out, anvil_error *err) {
    (void)a;
    *out = NULL;
    *n_out = 0;
    gp_cfg c = { cfg_u(f, "hidden_size"), cfg_u(f, "intermediate_size"), cfg_u(f, "num_local_experts"), 0 };
    int rc = hf_arch_block_count(f, &c.n_blocks, err);
    if (rc != ANVIL_OK) return rc;
    static const char *const need[] = { "hidden_size", "intermediate_size", "num_local_experts",
                                        "num_attention_heads" };
    for (size_t k = 0; k < sizeof need / sizeof need[0]; ++k) {
        if (cfg_u(f, need[k]) == 0 || cfg_u(f, need[k]) > (1ull << 32)) {
            return anvil__error_set(err, ANVIL_E_FORMAT,
                                    "%s/config.json: GptOssForCausalLM needs \"%s\", a whole number in [1, 2^32]",
                                    f->dir, need[k]);
        }
    }
    const anvil_json_value *q = anvil__json_get(f->config, "quantization_config");
    if (!anvil__json_is_null(q) && !hf_gptoss_is_mxfp4(f)) {
        const char *m = anvil__json_str(anvil__json_get(q, "quant_method"));
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                "%s/config.json: gpt-oss with quant_method %s is not supported; anvil convert reads "
                                "its MXFP4 release and float (F32/F16/BF16) checkpoints",
                                f->dir, m ? m : "?");
    }
    /* gate_up gives two outputs: room for 2 per source */
    const size_t cap = 2 * f->n_tensors + 2;
    hf_out_tensor *ts = calloc(cap, sizeof *ts);
    if (ts == NULL) return anvil__nomem(err);
    size_t n = 0;
    rc = plan_mxfp4(f, &c, ts, &n, err);
    for (size_t i = 0; i < f->n_tensors && rc == ANVIL_OK; ++i) {
        const char *nm = f->tensors[i].name;
        if (hf_src_dropped(nm) || is_mx_part(nm)) {
            continue;
        }
        rc = plan_one(f, i, &c, ts, &n, err);
    }
    if (rc != ANVIL_OK) {
        free(ts);
        return rc;
    }
    *out = ts;
    *n_out = n;
    return ANVIL_OK;
}
