/* SPDX-License-Identifier: MIT */
/* merge-lora against float references computed here: GGUF-named and
 * PEFT-named adapters (llama map), the real PEFT gpt2 adapter on a matching
 * synthetic base (gpt2 map), and every refusal naming its tensor. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "anvil/numeric.h"
#include "anvil/safetensors.h"
#include "tc_test.h"
#include "test_env.h"

static const tc_spec lora_base[] = {
    { "blk.0.attn_norm.weight", ANVIL_TYPE_F32, 1, { 64 }, 20, -1 },
    { "blk.0.attn_q.weight", ANVIL_TYPE_F32, 2, { 64, 48 }, 21, -1 }, /* [out 48, in 64] */
    { "blk.0.attn_k.weight", ANVIL_TYPE_F16, 2, { 64, 32 }, 22, -1 },
    { "blk.0.attn_v.weight", ANVIL_TYPE_BF16, 2, { 64, 32 }, 23, -1 },
    { "blk.0.ffn_up.weight", ANVIL_TYPE_Q8_0, 2, { 64, 96 }, 24, -1 }, /* quantized */
    { "blk.1.ffn_down.weight", ANVIL_TYPE_F32, 2, { 96, 64 }, 25, -1 },
    { "output.weight", ANVIL_TYPE_F32, 2, { 64, 40 }, 26, -1 },
};
#define N_BASE (sizeof lora_base / sizeof lora_base[0])

static const char *base_path(void) {
    static int written;
    const char *p = tc_path("lora-base.gguf");
    if (!written) {
        CU_ASSERT_FATAL(tc_write_model(p, lora_base, N_BASE) == ANVIL_OK);
        written = 1;
    }
    return p;
}

/* ---- writing adapters ----------------------------------------------------- */

typedef struct adapter_t {
    const char *name;
    uint64_t shape[2];
    uint64_t seed;
} adapter_t;

static float *adapter_values(const adapter_t *a) {
    const size_t n = (size_t)(a->shape[0] * a->shape[1]);
    float *v = malloc(n * sizeof *v);
    tc_spec s = { a->name, ANVIL_TYPE_F32, 2, { a->shape[1], a->shape[0] }, a->seed, -1 };
    tc_spec_values(&s, v, n);
    for (size_t i = 0; i < n; ++i) v[i] *= 4.0f; /* a visible delta */
    return v;
}

static int write_adapter(const char *path, const adapter_t *ts, size_t n) {
    anvil_st_writer *w = NULL;
    anvil_error err;
    float **bufs = calloc(n, sizeof *bufs);
    int rc = anvil_st_writer_new(&w, &err);
    for (size_t i = 0; rc == ANVIL_OK && i < n; ++i) {
        bufs[i] = adapter_values(&ts[i]);
        rc = anvil_st_writer_add(w, ts[i].name, ANVIL_ST_F32, ts[i].shape, 2, bufs[i],
                                 ts[i].shape[0] * ts[i].shape[1] * 4, &err);
    }
    if (rc == ANVIL_OK) rc = anvil_st_writer_save(w, path, &err);
    if (rc != ANVIL_OK) fprintf(stderr, "write_adapter: %s\n", err.message);
    anvil_st_writer_free(w);
    for (size_t i = 0; i < n; ++i) free(bufs[i]);
    free(bufs);
    return rc;
}

/* ---- the reference ------------------------------------------------------------- */

/* W + (alpha / r) B A in double, rounded once to f32: row-major W [out, in],
 * A [r, in], B [out, r]; the sum over k in ascending order. */
static void reference_merge(float *w, const float *a, const float *b, size_t out, size_t in, size_t r, double alpha) {
    const double scale = alpha / (double)r;
    for (size_t o = 0; o < out; ++o) {
        for (size_t i = 0; i < in; ++i) {
            double s = 0;
            for (size_t k = 0; k < r; ++k) s += (double)b[o * r + k] * (double)a[k * in + i];
            w[o * in + i] = (float)((double)w[o * in + i] + scale * s);
        }
    }
}

typedef struct merge_case {
    const char *base_name;
    const adapter_t *a, *b;
} merge_case;

static int run_merge(const char *base, const char *adapters, double alpha, uint32_t dtype, const char *out,
                     anvil_error *err, anvil_transcode **keep_t, anvil_gguf **keep_src, anvil_lora **keep_l) {
    anvil_gguf *src = NULL;
    anvil_lora *l = NULL;
    anvil_transcode *t = NULL;
    int rc = anvil_gguf_open(&src, base, tc_ctx(), 0, err);
    if (rc == ANVIL_OK) rc = anvil_lora_open(&l, adapters, err);
    if (rc == ANVIL_OK) rc = anvil_lora_bind(l, src, alpha, err);
    if (rc == ANVIL_OK) {
        anvil_transcode_options o;
        anvil_transcode_options_init(&o);
        o.dtype = dtype;
        o.hook = anvil_lora_hook(l);
        o.threads = 2;
        rc = anvil_transcode_plan(&t, tc_ctx(), src, out, &o, err);
    }
    if (rc == ANVIL_OK) rc = anvil_transcode_run(t, err);
    if (keep_t != NULL && rc == ANVIL_OK) {
        *keep_t = t;
        *keep_src = src;
        *keep_l = l;
        return rc;
    }
    anvil_transcode_free(t);
    anvil_lora_close(l);
    anvil_gguf_close(src);
    return rc;
}

/* Every merged tensor equals the reference, bit for bit after the base
 * type's rounding; every other tensor is byte-identical to the base. */
static void check_merge(const char *out, const merge_case *cases, size_t n_cases, double alpha, uint32_t dtype) {
    anvil_gguf *b = NULL, *o = NULL;
    CU_ASSERT_FATAL(anvil_gguf_open(&b, base_path(), tc_ctx(), 0, NULL) == ANVIL_OK);
    CU_ASSERT_FATAL(anvil_gguf_open(&o, out, tc_ctx(), 0, NULL) == ANVIL_OK);
    for (size_t i = 0; i < anvil_gguf_tensor_count(b); ++i) {
        const anvil_gguf_tensor *bt = anvil_gguf_tensor_at(b, i);
        const anvil_gguf_tensor *ot = anvil_gguf_find_tensor(o, bt->name);
        CU_ASSERT_PTR_NOT_NULL_FATAL(ot);
        const merge_case *mc = NULL;
        for (size_t c = 0; c < n_cases; ++c) {
            if (strcmp(cases[c].base_name, bt->name) == 0) mc = &cases[c];
        }
        if (mc == NULL) {
            if (dtype == ANVIL_TRANSCODE_NO_TYPE || ot->type == bt->type) {
                CU_ASSERT(ot->n_bytes == bt->n_bytes && memcmp(ot->data, bt->data, (size_t)bt->n_bytes) == 0);
            }
            continue;
        }
        float *w = tc_decode(bt);
        const size_t out_dim = (size_t)bt->ne[1], in_dim = (size_t)bt->ne[0];
        if (mc->b == NULL) { /* replacement */
            float *v = adapter_values(mc->a);
            memcpy(w, v, out_dim * in_dim * sizeof *w);
            free(v);
        } else {
            float *a = adapter_values(mc->a), *bb = adapter_values(mc->b);
            reference_merge(w, a, bb, out_dim, in_dim, (size_t)mc->a->shape[0], alpha);
            free(a);
            free(bb);
        }
        const uint32_t type = ot->type;
        CU_ASSERT(dtype != ANVIL_TRANSCODE_NO_TYPE || type == bt->type); /* merged in its own type */
        unsigned char *want = malloc((size_t)ot->n_bytes);
        CU_ASSERT(anvil_encode(tc_ctx(), type, w, out_dim * in_dim, want, (size_t)ot->n_bytes, NULL) == ANVIL_OK);
        const int same = memcmp(want, ot->data, (size_t)ot->n_bytes) == 0;
        if (!same) fprintf(stderr, "\n  %s differs from the reference\n", bt->name);
        CU_ASSERT(same);
        /* And the merge did change it. */
        CU_ASSERT(ot->n_bytes != bt->n_bytes || memcmp(ot->data, bt->data, (size_t)bt->n_bytes) != 0);
        free(want);
        free(w);
    }
    anvil_gguf_close(b);
    anvil_gguf_close(o);
}

static const adapter_t gguf_named[] = {
    { "blk.0.attn_q.weight.lora_a", { 4, 64 }, 31 },
    { "blk.0.attn_q.weight.lora_b", { 48, 4 }, 32 },
    { "blk.0.attn_v.weight.lora_a", { 2, 64 }, 33 },
    { "blk.0.attn_v.weight.lora_b", { 32, 2 }, 34 },
};

static void test_gguf_named(void) {
    const char *ad = tc_path("gguf-named.safetensors");
    CU_ASSERT_FATAL(write_adapter(ad, gguf_named, 4) == ANVIL_OK);
    const merge_case cases[] = { { "blk.0.attn_q.weight", &gguf_named[0], &gguf_named[1] },
                                 { "blk.0.attn_v.weight", &gguf_named[2], &gguf_named[3] } };
    anvil_error err;
    anvil_transcode *t = NULL;
    anvil_gguf *src = NULL;
    anvil_lora *l = NULL;
    CU_ASSERT_EQUAL_FATAL(
        run_merge(base_path(), ad, 8.0, ANVIL_TRANSCODE_NO_TYPE, tc_path("merged-gguf.gguf"), &err, &t, &src, &l),
        ANVIL_OK);
    check_merge(tc_path("merged-gguf.gguf"), cases, 2, 8.0, ANVIL_TRANSCODE_NO_TYPE);
    CU_ASSERT_EQUAL(anvil_lora_target_count(l), 2);
    anvil_lora_target tg;
    CU_ASSERT(anvil_lora_target_at(l, 0, &tg) == ANVIL_OK);
    CU_ASSERT(strcmp(tg.base_name, "blk.0.attn_q.weight") == 0 && tg.rank == 4 && tg.scale == 2.0);
    CU_ASSERT(tc_find(t, "blk.0.attn_q.weight")->rewritten && !tc_find(t, "blk.0.attn_k.weight")->rewritten);
    /* The quantized tensor nobody adapts is copied; file_type follows the
     * float majority. */
    CU_ASSERT_EQUAL(tc_find(t, "blk.0.ffn_up.weight")->why, ANVIL_TRANSCODE_KEEP_NO_RULE);
    anvil_transcode_free(t);
    anvil_lora_close(l);
    anvil_gguf_close(src);
    /* alpha 0 leaves the weights as they were (re-encoded in their type). */
    CU_ASSERT_EQUAL(
        run_merge(base_path(), ad, 0.0, ANVIL_TRANSCODE_NO_TYPE, tc_path("merged-0.gguf"), &err, NULL, NULL, NULL),
        ANVIL_OK);
    anvil_gguf *a0 = NULL, *b0 = NULL;
    CU_ASSERT_FATAL(anvil_gguf_open(&a0, tc_path("merged-0.gguf"), tc_ctx(), 0, NULL) == ANVIL_OK);
    CU_ASSERT_FATAL(anvil_gguf_open(&b0, base_path(), tc_ctx(), 0, NULL) == ANVIL_OK);
    for (size_t i = 0; i < anvil_gguf_tensor_count(b0); ++i) {
        const anvil_gguf_tensor *x = anvil_gguf_tensor_at(b0, i), *y = anvil_gguf_tensor_at(a0, i);
        CU_ASSERT(x->n_bytes == y->n_bytes && memcmp(x->data, y->data, (size_t)x->n_bytes) == 0);
    }
    anvil_gguf_close(a0);
    anvil_gguf_close(b0);
}

static const adapter_t peft_llama[] = {
    { "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", { 8, 64 }, 41 },
    { "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight", { 48, 8 }, 42 },
    { "base_model.model.model.layers.0.self_attn.k_proj.lora_A.weight", { 3, 64 }, 43 },
    { "base_model.model.model.layers.0.self_attn.k_proj.lora_B.weight", { 32, 3 }, 44 },
    { "base_model.model.model.layers.1.mlp.down_proj.lora_A.weight", { 5, 96 }, 45 },
    { "base_model.model.model.layers.1.mlp.down_proj.lora_B.weight", { 64, 5 }, 46 },
    { "base_model.model.lm_head.weight", { 40, 64 }, 47 }, /* saved whole (modules_to_save) */
};

static void test_peft_llama(void) {
    /* Two files in a folder: pairs match across files. */
    const char *dir = tc_path("peft-llama");
    mkdir(dir, 0777);
    char f1[4200], f2[4200];
    snprintf(f1, sizeof f1, "%s/adapter_model-00001.safetensors", dir);
    snprintf(f2, sizeof f2, "%s/adapter_model-00002.safetensors", dir);
    CU_ASSERT_FATAL(write_adapter(f1, peft_llama, 3) == ANVIL_OK);
    CU_ASSERT_FATAL(write_adapter(f2, peft_llama + 3, 4) == ANVIL_OK);
    const merge_case cases[] = { { "blk.0.attn_q.weight", &peft_llama[0], &peft_llama[1] },
                                 { "blk.0.attn_k.weight", &peft_llama[2], &peft_llama[3] },
                                 { "blk.1.ffn_down.weight", &peft_llama[4], &peft_llama[5] },
                                 { "output.weight", &peft_llama[6], NULL } };
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(run_merge(base_path(), dir, 16.0, ANVIL_TRANSCODE_NO_TYPE, tc_path("merged-peft.gguf"),
                                    &err, NULL, NULL, NULL),
                          ANVIL_OK);
    check_merge(tc_path("merged-peft.gguf"), cases, 4, 16.0, ANVIL_TRANSCODE_NO_TYPE);
    /* Merge and transcode in one pass: the merged values are what gets encoded. */
    CU_ASSERT_EQUAL_FATAL(
        run_merge(base_path(), dir, 16.0, ANVIL_TYPE_Q8_0, tc_path("merged-peft-q8.gguf"), &err, NULL, NULL, NULL),
        ANVIL_OK);
    check_merge(tc_path("merged-peft-q8.gguf"), cases, 4, 16.0, ANVIL_TYPE_Q8_0);
    anvil_gguf *g = NULL;
    CU_ASSERT_FATAL(anvil_gguf_open(&g, tc_path("merged-peft-q8.gguf"), tc_ctx(), 0, NULL) == ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_find_tensor(g, "blk.0.attn_q.weight")->type, ANVIL_TYPE_Q8_0);
    CU_ASSERT_EQUAL(anvil_gguf_find_tensor(g, "blk.0.attn_norm.weight")->type, ANVIL_TYPE_F32);
    anvil_gguf_close(g);
}

static void test_name_map(void) {
    static const char *const cases[][2] = {
        { "model.layers.0.self_attn.q_proj", "blk.0.attn_q" },
        { "model.layers.12.self_attn.k_proj", "blk.12.attn_k" },
        { "model.layers.3.self_attn.v_proj", "blk.3.attn_v" },
        { "model.layers.3.self_attn.o_proj", "blk.3.attn_output" },
        { "model.layers.7.mlp.gate_proj", "blk.7.ffn_gate" },
        { "model.layers.7.mlp.up_proj", "blk.7.ffn_up" },
        { "model.layers.7.mlp.down_proj", "blk.7.ffn_down" },
        { "transformer.h.0.attn.c_attn", "blk.0.attn_qkv" },
        { "transformer.h.11.attn.c_proj", "blk.11.attn_output" },
        { "transformer.h.2.mlp.c_fc", "blk.2.ffn_up" },
        { "transformer.h.2.mlp.c_proj", "blk.2.ffn_down" },
        { "lm_head", "output" },
        { "model.embed_tokens", "token_embd" },
        { "score", "score" },
        { "model.layers.x.self_attn.q_proj", "model.layers.x.self_attn.q_proj" },
    };
    char buf[128];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        CU_ASSERT_EQUAL(anvil_lora_map_name(cases[i][0], buf, sizeof buf), 0);
        if (strcmp(buf, cases[i][1]) != 0) fprintf(stderr, "\n  %s -> %s (want %s)\n", cases[i][0], buf, cases[i][1]);
        CU_ASSERT_STRING_EQUAL(buf, cases[i][1]);
    }
    CU_ASSERT_EQUAL(anvil_lora_map_name("model.layers.0.self_attn.q_proj", buf, 8), -1);
}

static void expect_refused(const adapter_t *ts, size_t n, double alpha, int code, const char *n1, const char *n2) {
    const char *ad = tc_path("bad.safetensors");
    remove(ad);
    CU_ASSERT_FATAL(write_adapter(ad, ts, n) == ANVIL_OK);
    anvil_error err;
    memset(&err, 0, sizeof err);
    const int rc = run_merge(base_path(), ad, alpha, ANVIL_TRANSCODE_NO_TYPE, tc_path("refused-merge.gguf"), &err,
                             NULL, NULL, NULL);
    CU_ASSERT_EQUAL(rc, code);
    const char *needles[2] = { n1, n2 };
    for (int k = 0; k < 2; ++k) {
        if (needles[k] != NULL && strstr(err.message, needles[k]) == NULL) {
            fprintf(stderr, "\n  message '%s' lacks '%s'\n", err.message, needles[k]);
            CU_FAIL("message");
        }
    }
    struct stat st;
    CU_ASSERT(stat(tc_path("refused-merge.gguf"), &st) != 0);
}

static void test_refusals(void) {
    const adapter_t wrong_a[] = { { "blk.0.attn_q.weight.lora_a", { 4, 65 }, 1 },
                                  { "blk.0.attn_q.weight.lora_b", { 48, 4 }, 2 } };
    expect_refused(wrong_a, 2, 1.0, ANVIL_E_FORMAT, "'blk.0.attn_q.weight.lora_a'", "lora A must be [r, 64]");
    const adapter_t wrong_b[] = { { "blk.0.attn_q.weight.lora_a", { 4, 64 }, 1 },
                                  { "blk.0.attn_q.weight.lora_b", { 47, 4 }, 2 } };
    expect_refused(wrong_b, 2, 1.0, ANVIL_E_FORMAT, "'blk.0.attn_q.weight.lora_b'", "lora B must be [48, 4]");
    const adapter_t rank_mismatch[] = { { "blk.0.attn_q.weight.lora_a", { 4, 64 }, 1 },
                                        { "blk.0.attn_q.weight.lora_b", { 48, 5 }, 2 } };
    expect_refused(rank_mismatch, 2, 1.0, ANVIL_E_FORMAT, "'blk.0.attn_q.weight.lora_b'", "rank 4");
    const adapter_t unmatched[] = { { "blk.7.attn_q.weight.lora_a", { 4, 64 }, 1 },
                                    { "blk.7.attn_q.weight.lora_b", { 48, 4 }, 2 } };
    expect_refused(unmatched, 2, 1.0, ANVIL_E_NOT_FOUND, "'blk.7.attn_q.weight.lora_a'", "does not have");
    const adapter_t unmatched_peft[] = {
        { "base_model.model.model.layers.5.self_attn.q_proj.lora_A.weight", { 4, 64 }, 1 },
        { "base_model.model.model.layers.5.self_attn.q_proj.lora_B.weight", { 48, 4 }, 2 }
    };
    expect_refused(unmatched_peft, 2, 1.0, ANVIL_E_NOT_FOUND,
                   "'base_model.model.model.layers.5.self_attn.q_proj.lora_A.weight'", "'blk.5.attn_q.weight'");
    const adapter_t quantized[] = { { "blk.0.ffn_up.weight.lora_a", { 4, 64 }, 1 },
                                    { "blk.0.ffn_up.weight.lora_b", { 96, 4 }, 2 } };
    expect_refused(quantized, 2, 1.0, ANVIL_E_UNSUPPORTED, "Merge on a float base", "transcode afterwards");
    const adapter_t lone[] = { { "blk.0.attn_q.weight.lora_a", { 4, 64 }, 1 } };
    expect_refused(lone, 1, 1.0, ANVIL_E_INVALID_ARG, "'blk.0.attn_q.weight.lora_a'", "no B partner");
    const adapter_t unknown[] = { { "encoder.block.0.weight", { 4, 64 }, 1 } };
    expect_refused(unknown, 1, 1.0, ANVIL_E_FORMAT, "'encoder.block.0.weight'", "follows neither naming");
    const adapter_t twice[] = { { "blk.0.attn_q.weight.lora_a", { 4, 64 }, 1 },
                                { "blk.0.attn_q.weight.lora_b", { 48, 4 }, 2 },
                                { "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", { 4, 64 }, 3 },
                                { "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight", { 48, 4 }, 4 } };
    expect_refused(twice, 4, 1.0, ANVIL_E_DUPLICATE, "both change base tensor 'blk.0.attn_q.weight'", NULL);
    const adapter_t whole_wrong[] = { { "base_model.model.lm_head.weight", { 41, 64 }, 1 } };
    expect_refused(whole_wrong, 1, 1.0, ANVIL_E_FORMAT, "'base_model.model.lm_head.weight'", "[40, 64]");
    expect_refused(gguf_named, 4, NAN, ANVIL_E_INVALID_ARG, "alpha", NULL);
    /* An empty folder. */
    mkdir(tc_path("empty-adapters"), 0777);
    anvil_lora *l = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL(anvil_lora_open(&l, tc_path("empty-adapters"), &err), ANVIL_E_NOT_FOUND);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "no .safetensors file"));
}

/* ---- the real PEFT gpt2 adapter on a matching synthetic base ---------------------- */

static int write_gpt2_base(const char *path, int with_score) {
    /* llama.cpp's gpt2 layout: attn_qkv.weight [out 2304, in 768] (HF's Conv1D
     * [768, 2304] transposed by the converter), which is what PEFT's
     * lora_B [2304, r] . lora_A [r, 768] adds to. */
    tc_spec s[16];
    size_t n = 0;
    s[n++] = (tc_spec){ "token_embd.weight", ANVIL_TYPE_F16, 2, { 768, 64 }, 90, -1 };
    static char names[12][40];
    for (int l = 0; l < 12; ++l) {
        snprintf(names[l], sizeof names[l], "blk.%d.attn_qkv.weight", l);
        s[n++] = (tc_spec){ names[l], ANVIL_TYPE_F16, 2, { 768, 2304 }, (uint64_t)(100 + l), -1 };
    }
    s[n++] = (tc_spec){ "output_norm.weight", ANVIL_TYPE_F32, 1, { 768 }, 91, -1 };
    if (with_score) s[n++] = (tc_spec){ "score.weight", ANVIL_TYPE_F32, 2, { 768, 6 }, 92, -1 };
    return tc_write_model(path, s, n);
}

static void test_peft_gpt2(void) {
    const char *ad = test_shared_path("peft-gpt2-lora-adapter_model.safetensors");
    if (ad == NULL) {
        fprintf(stderr, "\n  note: ../shared/testdata/peft-gpt2-lora-adapter_model.safetensors absent; skipped\n");
        CU_PASS("skipped");
        return;
    }
    const char *base = tc_path("gpt2-base.gguf");
    CU_ASSERT_FATAL(write_gpt2_base(base, 1) == ANVIL_OK);
    const double alpha = 32.0;
    anvil_error err;
    anvil_transcode *t = NULL;
    anvil_gguf *src = NULL;
    anvil_lora *l = NULL;
    const char *out = tc_path("gpt2-merged.gguf");
    CU_ASSERT_EQUAL_FATAL(run_merge(base, ad, alpha, ANVIL_TRANSCODE_NO_TYPE, out, &err, &t, &src, &l), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_lora_target_count(l), 13); /* 12 c_attn pairs and the score head */
    anvil_st *st = NULL;
    CU_ASSERT_FATAL(anvil_st_open(&st, ad, &err) == ANVIL_OK);
    anvil_gguf *o = NULL;
    CU_ASSERT_FATAL(anvil_gguf_open(&o, out, tc_ctx(), 0, NULL) == ANVIL_OK);
    for (int layer = 0; layer < 12; ++layer) {
        char an[128], bn[128], gn[64];
        snprintf(an, sizeof an, "base_model.model.transformer.h.%d.attn.c_attn.lora_A.weight", layer);
        snprintf(bn, sizeof bn, "base_model.model.transformer.h.%d.attn.c_attn.lora_B.weight", layer);
        snprintf(gn, sizeof gn, "blk.%d.attn_qkv.weight", layer);
        const anvil_st_tensor *at = anvil_st_find(st, an), *bt = anvil_st_find(st, bn);
        CU_ASSERT_FATAL(at != NULL && bt != NULL);
        CU_ASSERT(at->shape[0] == 8 && at->shape[1] == 768 && bt->shape[0] == 2304 && bt->shape[1] == 8);
        float *a = malloc(8 * 768 * sizeof *a), *b = malloc(2304 * 8 * sizeof *b);
        CU_ASSERT(anvil_st_tensor_to_f32(at, a, 8 * 768, NULL) == ANVIL_OK);
        CU_ASSERT(anvil_st_tensor_to_f32(bt, b, 2304 * 8, NULL) == ANVIL_OK);
        float *w = tc_decode(anvil_gguf_find_tensor(src, gn));
        reference_merge(w, a, b, 2304, 768, 8, alpha);
        const anvil_gguf_tensor *ot = anvil_gguf_find_tensor(o, gn);
        CU_ASSERT_FATAL(ot != NULL && ot->type == ANVIL_TYPE_F16);
        size_t bad = 0;
        for (size_t i = 0; i < 2304 * 768; ++i) {
            uint16_t h;
            memcpy(&h, (const unsigned char *)ot->data + 2 * i, 2);
            bad += h != anvil_fp32_to_fp16(w[i]);
        }
        CU_ASSERT_EQUAL(bad, 0);
        CU_ASSERT(tc_find(t, gn)->rewritten);
        free(a);
        free(b);
        free(w);
    }
    /* The classifier head PEFT saved whole replaces the base's. */
    const anvil_st_tensor *score = anvil_st_find(st, "base_model.model.score.weight");
    const anvil_gguf_tensor *os = anvil_gguf_find_tensor(o, "score.weight");
    CU_ASSERT_FATAL(score != NULL && os != NULL && os->type == ANVIL_TYPE_F32);
    CU_ASSERT(os->n_bytes == score->size && memcmp(os->data, score->data, (size_t)score->size) == 0);
    /* Untouched tensors are copied. */
    const anvil_gguf_tensor *te = anvil_gguf_find_tensor(o, "token_embd.weight");
    CU_ASSERT(memcmp(te->data, anvil_gguf_find_tensor(src, "token_embd.weight")->data, (size_t)te->n_bytes) == 0);
    anvil_gguf_close(o);
    anvil_st_close(st);
    anvil_transcode_free(t);
    anvil_lora_close(l);
    anvil_gguf_close(src);

    /* A base without the head: the error names the adapter tensor. */
    const char *base2 = tc_path("gpt2-base-noscore.gguf");
    CU_ASSERT_FATAL(write_gpt2_base(base2, 0) == ANVIL_OK);
    memset(&err, 0, sizeof err);
    CU_ASSERT_EQUAL(
        run_merge(base2, ad, alpha, ANVIL_TRANSCODE_NO_TYPE, tc_path("gpt2-none.gguf"), &err, NULL, NULL, NULL),
        ANVIL_E_NOT_FOUND);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "'base_model.model.score.weight'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "'score.weight'"));
}

void tc_add_lora_tests(void) {
    CU_pSuite s = CU_add_suite("merge-lora", NULL, NULL);
    CU_add_test(s, "HF -> GGUF name maps (llama, gpt2)", test_name_map);
    CU_add_test(s, "GGUF-named adapter vs float reference", test_gguf_named);
    CU_add_test(s, "PEFT-named llama adapter (two files, a saved head, + q8_0)", test_peft_llama);
    CU_add_test(s, "PEFT gpt2 adapter (real file) on a synthetic gpt2 base", test_peft_gpt2);
    CU_add_test(s, "refusals name the adapter tensor", test_refusals);
}
