/* SPDX-License-Identifier: MIT */
/* The transcode policy: which tensors change type, which type they get,
 * and which options are refused. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tc_test.h"
#include "test_env.h"

#define NO ANVIL_TRANSCODE_NO_TYPE

static const tc_spec policy_model[] = {
    { "token_embd.weight", ANVIL_TYPE_F16, 2, { 256, 16 }, 1, -1 },
    { "blk.0.attn_norm.weight", ANVIL_TYPE_F32, 1, { 256 }, 2, -1 },
    { "blk.0.attn_q.weight", ANVIL_TYPE_F16, 2, { 256, 8 }, 3, -1 },
    { "blk.0.attn_v.weight", ANVIL_TYPE_F16, 2, { 256, 8 }, 4, -1 },
    { "blk.0.ffn_up.weight", ANVIL_TYPE_BF16, 2, { 512, 4 }, 5, -1 },
    { "blk.0.ffn_norm.weight", ANVIL_TYPE_F16, 2, { 256, 4 }, 6, -1 }, /* a 2-D norm */
    { "blk.0.attn_q.bias", ANVIL_TYPE_F16, 2, { 256, 4 }, 7, -1 },     /* not a .weight */
    { "col.weight", ANVIL_TYPE_F16, 2, { 256, 1 }, 8, -1 },            /* 1-D in ggml's sense */
    { "odd.weight", ANVIL_TYPE_F16, 2, { 96, 4 }, 9, -1 },             /* 96: not a multiple of 256 */
    { "q.weight", ANVIL_TYPE_Q8_0, 2, { 256, 4 }, 10, -1 },            /* already quantized */
    { "blk.0.ffn_up_exps.weight", ANVIL_TYPE_Q8_0, 3, { 256, 4, 3 }, 11, -1 },
    { "blk.0.ffn_gate_exps.weight", ANVIL_TYPE_F16, 3, { 256, 4, 3 }, 12, -1 },
    { "ids.weight", ANVIL_TYPE_I32, 2, { 8, 4 }, 13, -1 }, /* integers */
    { "output.weight", ANVIL_TYPE_F32, 2, { 256, 16 }, 14, -1 },
};
#define N_POLICY (sizeof policy_model / sizeof policy_model[0])

static const char *policy_path(void) {
    static int written;
    const char *p = tc_path("policy.gguf");
    if (!written) {
        CU_ASSERT_FATAL(tc_write_model(p, policy_model, N_POLICY) == ANVIL_OK);
        written = 1;
    }
    return p;
}

static void expect(const anvil_transcode *t, const char *name, anvil_transcode_why why, uint32_t dst) {
    const anvil_transcode_tensor *it = tc_find(t, name);
    CU_ASSERT_PTR_NOT_NULL_FATAL(it);
    if (it->why != why || it->dst_type != dst) {
        fprintf(stderr, "\n  %s: why %d (%s) dst %u, expected why %d dst %u\n", name, it->why,
                anvil_transcode_why_string(it->why), it->dst_type, why, dst);
    }
    CU_ASSERT_EQUAL(it->why, why);
    CU_ASSERT_EQUAL(it->dst_type, dst);
}

/* Every output tensor: kept ones byte-identical to the source, converted
 * ones equal to anvil's encoder over the decoded source rows. */
static void check_bytes(const tc_result *r, const char *out_path) {
    anvil_gguf *o = NULL;
    anvil_error err;
    CU_ASSERT_FATAL(anvil_gguf_open(&o, out_path, tc_ctx(), 0, &err) == ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_tensor_count(o), anvil_transcode_count(r->t));
    for (size_t i = 0; i < anvil_transcode_count(r->t); ++i) {
        const anvil_transcode_tensor *it = anvil_transcode_tensor_at(r->t, i);
        const anvil_gguf_tensor *ot = anvil_gguf_tensor_at(o, i);
        CU_ASSERT_STRING_EQUAL(ot->name, it->name);
        CU_ASSERT_EQUAL(ot->type, it->dst_type);
        CU_ASSERT_EQUAL(ot->n_bytes, it->dst_bytes);
        for (uint32_t d = 0; d < 4; ++d) CU_ASSERT_EQUAL(ot->ne[d], it->src->ne[d]);
        if (it->why != ANVIL_TRANSCODE_CONVERT) {
            CU_ASSERT(ot->n_bytes == it->src_bytes && memcmp(ot->data, it->src->data, (size_t)ot->n_bytes) == 0);
            continue;
        }
        float *x = tc_decode(it->src);
        CU_ASSERT_PTR_NOT_NULL_FATAL(x);
        unsigned char *want = malloc((size_t)it->dst_bytes);
        CU_ASSERT(anvil_encode(tc_ctx(), it->dst_type, x, (size_t)it->src->n_elements, want, (size_t)it->dst_bytes,
                               NULL) == ANVIL_OK);
        CU_ASSERT(memcmp(want, ot->data, (size_t)it->dst_bytes) == 0);
        free(want);
        free(x);
    }
    anvil_gguf_close(o);
}

static void test_global_dtype(void) {
    anvil_transcode_options o;
    anvil_transcode_options_init(&o);
    o.dtype = ANVIL_TYPE_Q4_K;
    const char *out = tc_path("policy-q4k.gguf");
    /* Two q8_0 tensors would be requantized: refused, naming the first. */
    tc_result r = tc_transcode(policy_path(), out, &o, 0);
    CU_ASSERT_EQUAL(r.rc, ANVIL_E_INVALID_ARG);
    CU_ASSERT(strstr(r.err.message, "'q.weight' is already quantized (q8_0)") != NULL);
    CU_ASSERT(strstr(r.err.message, "--allow-requantize") != NULL && strstr(r.err.message, "2 tensors") != NULL);
    tc_result_free(&r);
    o.allow_requantize = 1;
    r = tc_transcode(policy_path(), out, &o, 0);
    CU_ASSERT_EQUAL_FATAL(r.rc, ANVIL_OK);
    expect(r.t, "token_embd.weight", ANVIL_TRANSCODE_CONVERT, ANVIL_TYPE_Q4_K);
    expect(r.t, "blk.0.attn_norm.weight", ANVIL_TRANSCODE_KEEP_POLICY, ANVIL_TYPE_F32);
    expect(r.t, "blk.0.attn_q.weight", ANVIL_TRANSCODE_CONVERT, ANVIL_TYPE_Q4_K);
    expect(r.t, "blk.0.ffn_up.weight", ANVIL_TRANSCODE_CONVERT, ANVIL_TYPE_Q4_K); /* from BF16 */
    expect(r.t, "blk.0.ffn_norm.weight", ANVIL_TRANSCODE_KEEP_POLICY, ANVIL_TYPE_F16);
    expect(r.t, "blk.0.attn_q.bias", ANVIL_TRANSCODE_KEEP_POLICY, ANVIL_TYPE_F16);
    expect(r.t, "col.weight", ANVIL_TRANSCODE_KEEP_POLICY, ANVIL_TYPE_F16);
    expect(r.t, "odd.weight", ANVIL_TRANSCODE_KEEP_ROWS, ANVIL_TYPE_F16);
    expect(r.t, "q.weight", ANVIL_TRANSCODE_CONVERT, ANVIL_TYPE_Q4_K);
    expect(r.t, "blk.0.ffn_up_exps.weight", ANVIL_TRANSCODE_CONVERT, ANVIL_TYPE_Q4_K);
    expect(r.t, "blk.0.ffn_gate_exps.weight", ANVIL_TRANSCODE_CONVERT, ANVIL_TYPE_Q4_K);
    expect(r.t, "ids.weight", ANVIL_TRANSCODE_KEEP_SOURCE, ANVIL_TYPE_I32);
    expect(r.t, "output.weight", ANVIL_TRANSCODE_CONVERT, ANVIL_TYPE_Q4_K); /* from F32 */
    const anvil_transcode_tensor *q = tc_find(r.t, "q.weight");
    CU_ASSERT(q->want_type == ANVIL_TYPE_Q4_K && q->rule != NULL && strcmp(q->rule, "--dtype") == 0);
    anvil_transcode_summary s;
    anvil_transcode_get_summary(r.t, &s);
    CU_ASSERT_EQUAL(s.n_kept_quantized, 0);
    CU_ASSERT_EQUAL(s.n_kept_rows, 1);
    CU_ASSERT_EQUAL(s.n_kept_source, 1);
    CU_ASSERT_EQUAL(s.n_converted, 8);
    CU_ASSERT_EQUAL(s.dominant_type, ANVIL_TYPE_Q4_K);
    CU_ASSERT_EQUAL(s.file_type, 15); /* LLAMA_FTYPE_MOSTLY_Q4_K_M */
    check_bytes(&r, out);
    tc_result_free(&r);

    /* The same tensor with a 32-element block fits. */
    o.dtype = ANVIL_TYPE_Q8_0;
    r = tc_transcode(policy_path(), tc_path("policy-q8.gguf"), &o, 0);
    CU_ASSERT_EQUAL_FATAL(r.rc, ANVIL_OK);
    expect(r.t, "odd.weight", ANVIL_TRANSCODE_CONVERT, ANVIL_TYPE_Q8_0);
    expect(r.t, "q.weight", ANVIL_TRANSCODE_KEEP_SAME, ANVIL_TYPE_Q8_0);
    check_bytes(&r, tc_path("policy-q8.gguf"));
    tc_result_free(&r);

    /* f16 and f32 dequantize without --allow-requantize (ggml's decoder). */
    o.allow_requantize = 0;
    o.dtype = ANVIL_TYPE_F16;
    r = tc_transcode(policy_path(), tc_path("policy-f16.gguf"), &o, 0);
    CU_ASSERT_EQUAL_FATAL(r.rc, ANVIL_OK);
    expect(r.t, "q.weight", ANVIL_TRANSCODE_CONVERT, ANVIL_TYPE_F16);
    expect(r.t, "blk.0.ffn_up_exps.weight", ANVIL_TRANSCODE_CONVERT, ANVIL_TYPE_F16);
    check_bytes(&r, tc_path("policy-f16.gguf"));
    tc_result_free(&r);
}

static void test_experts_requantize(void) {
    anvil_transcode_options o;
    anvil_transcode_options_init(&o);
    o.dtype = ANVIL_TYPE_F16;
    o.experts_dtype = ANVIL_TYPE_Q4_K;
    const char *out = tc_path("policy-experts.gguf");
    tc_result r = tc_transcode(policy_path(), out, &o, 0);
    CU_ASSERT_EQUAL_FATAL(r.rc, ANVIL_OK);
    /* Quantized experts are requantized without --allow-requantize; the
     * other quantized tensor is only dequantized. */
    expect(r.t, "blk.0.ffn_up_exps.weight", ANVIL_TRANSCODE_CONVERT, ANVIL_TYPE_Q4_K);
    expect(r.t, "blk.0.ffn_gate_exps.weight", ANVIL_TRANSCODE_CONVERT, ANVIL_TYPE_Q4_K);
    expect(r.t, "q.weight", ANVIL_TRANSCODE_CONVERT, ANVIL_TYPE_F16);
    const anvil_transcode_tensor *e = tc_find(r.t, "blk.0.ffn_up_exps.weight");
    CU_ASSERT(strcmp(e->rule, "--experts-dtype") == 0);
    CU_ASSERT_EQUAL(e->n_rows, 12); /* 4 rows x 3 experts */
    check_bytes(&r, out);           /* q8_0 decoded, then q4_K encoded */
    tc_result_free(&r);

    /* --experts-dtype alone leaves the rest untouched. */
    anvil_transcode_options_init(&o);
    o.experts_dtype = ANVIL_TYPE_Q6_K;
    r = tc_transcode(policy_path(), tc_path("policy-experts2.gguf"), &o, 0);
    CU_ASSERT_EQUAL_FATAL(r.rc, ANVIL_OK);
    expect(r.t, "blk.0.ffn_up_exps.weight", ANVIL_TRANSCODE_CONVERT, ANVIL_TYPE_Q6_K);
    expect(r.t, "blk.0.attn_q.weight", ANVIL_TRANSCODE_KEEP_NO_RULE, ANVIL_TYPE_F16);
    tc_result_free(&r);
}

static void test_overrides(void) {
    const anvil_transcode_rule rules[] = {
        { "attn_v", ANVIL_TYPE_Q8_0 }, /* first match wins over the next rule */
        { "attn", ANVIL_TYPE_Q5_0 },        { "^output\\.weight$", ANVIL_TYPE_Q6_K }, /* beats --output-tensor-type */
        { "norm", ANVIL_TYPE_Q8_0 },        /* norms stay out whatever the rules */
        { "^q\\.weight$", ANVIL_TYPE_F32 }, /* quantized: a rule may dequantize it */
        { "_exps", ANVIL_TYPE_F16 },        /* the q8_0 experts too (the f16 ones stay) */
    };
    anvil_transcode_options o;
    anvil_transcode_options_init(&o);
    o.dtype = ANVIL_TYPE_Q4_K;
    o.output_type = ANVIL_TYPE_Q8_0;
    o.token_embd_type = ANVIL_TYPE_Q5_1;
    o.rules = rules;
    o.n_rules = sizeof rules / sizeof rules[0];
    const char *out = tc_path("policy-rules.gguf");
    tc_result r = tc_transcode(policy_path(), out, &o, 0);
    CU_ASSERT_EQUAL_FATAL(r.rc, ANVIL_OK);
    expect(r.t, "blk.0.attn_v.weight", ANVIL_TRANSCODE_CONVERT, ANVIL_TYPE_Q8_0);
    expect(r.t, "blk.0.attn_q.weight", ANVIL_TRANSCODE_CONVERT, ANVIL_TYPE_Q5_0);
    expect(r.t, "output.weight", ANVIL_TRANSCODE_CONVERT, ANVIL_TYPE_Q6_K);
    expect(r.t, "token_embd.weight", ANVIL_TRANSCODE_CONVERT, ANVIL_TYPE_Q5_1);
    expect(r.t, "blk.0.ffn_up.weight", ANVIL_TRANSCODE_CONVERT, ANVIL_TYPE_Q4_K);
    expect(r.t, "blk.0.attn_norm.weight", ANVIL_TRANSCODE_KEEP_POLICY, ANVIL_TYPE_F32);
    expect(r.t, "blk.0.ffn_norm.weight", ANVIL_TRANSCODE_KEEP_POLICY, ANVIL_TYPE_F16);
    expect(r.t, "q.weight", ANVIL_TRANSCODE_CONVERT, ANVIL_TYPE_F32);
    expect(r.t, "blk.0.ffn_up_exps.weight", ANVIL_TRANSCODE_CONVERT, ANVIL_TYPE_F16);
    expect(r.t, "blk.0.ffn_gate_exps.weight", ANVIL_TRANSCODE_KEEP_SAME, ANVIL_TYPE_F16);
    CU_ASSERT_STRING_EQUAL(tc_find(r.t, "blk.0.attn_v.weight")->rule, "--tensor-type attn_v");
    CU_ASSERT_STRING_EQUAL(tc_find(r.t, "token_embd.weight")->rule, "--token-embedding-type");
    check_bytes(&r, out);
    tc_result_free(&r);

    /* --output-tensor-type applies when no rule takes output.weight. */
    o.n_rules = 2;
    o.allow_requantize = 1; /* q.weight and the experts now meet --dtype */
    r = tc_transcode(policy_path(), tc_path("policy-rules2.gguf"), &o, 1);
    CU_ASSERT_EQUAL_FATAL(r.rc, ANVIL_OK);
    expect(r.t, "output.weight", ANVIL_TRANSCODE_CONVERT, ANVIL_TYPE_Q8_0);
    tc_result_free(&r);
}

static void expect_refused(anvil_transcode_options *o, int code, const char *needle) {
    tc_result r = tc_transcode(policy_path(), tc_path("refused.gguf"), o, 0);
    CU_ASSERT_EQUAL(r.rc, code);
    if (needle != NULL && strstr(r.err.message, needle) == NULL) {
        fprintf(stderr, "\n  message '%s' lacks '%s'\n", r.err.message, needle);
        CU_FAIL("message");
    }
    CU_ASSERT_PTR_NULL(tc_read(tc_path("refused.gguf"), &(size_t){ 0 }));
    tc_result_free(&r);
}

static void test_refusals(void) {
    anvil_transcode_options o;
    anvil_transcode_options_init(&o);
    o.dtype = ANVIL_TYPE_IQ2_XXS; /* ggml encodes it only with an importance matrix */
    expect_refused(&o, ANVIL_E_NEEDS_IMATRIX, "--dtype: iq2_xxs cannot be written without an importance matrix");
    o.dtype = ANVIL_TYPE_Q8_K; /* an activation format */
    expect_refused(&o, ANVIL_E_INVALID_ARG, "activation format");
    o.dtype = ANVIL_TYPE_I32;
    expect_refused(&o, ANVIL_E_INVALID_ARG, "not a weight format");
    o.dtype = ANVIL_TYPE_Q4_K;
    o.experts_dtype = ANVIL_TYPE_IQ1_S;
    expect_refused(&o, ANVIL_E_NEEDS_IMATRIX, "--experts-dtype");
    o.experts_dtype = NO;
    const anvil_transcode_rule bad[] = { { "attn_(q", ANVIL_TYPE_Q8_0 } };
    o.rules = bad;
    o.n_rules = 1;
    expect_refused(&o, ANVIL_E_INVALID_ARG, "not a valid ECMAScript regular expression");
    const anvil_transcode_rule bad_type[] = { { "attn", ANVIL_TYPE_IQ2_XS } }; /* needs an imatrix */
    o.rules = bad_type;
    expect_refused(&o, ANVIL_E_NEEDS_IMATRIX, "--tensor-type rule 1");
}

/* KVs copied raw and in order; quantization_version then file_type set last,
 * as llama-quantize sets them (an existing file_type moves to the end). */
static void test_metadata(void) {
    anvil_transcode_options o;
    anvil_transcode_options_init(&o);
    o.dtype = ANVIL_TYPE_Q8_0;
    const char *out = tc_path("policy-meta.gguf");
    tc_result r = tc_transcode(policy_path(), out, &o, 0);
    CU_ASSERT_EQUAL_FATAL(r.rc, ANVIL_OK);
    anvil_gguf *g = NULL;
    CU_ASSERT_FATAL(anvil_gguf_open(&g, out, tc_ctx(), 0, NULL) == ANVIL_OK);
    const char *order[] = { "general.architecture",         "general.name",     "test.u8", "test.flag", "test.arr",
                            "general.quantization_version", "general.file_type" };
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_kv_count(g), 7);
    for (size_t i = 0; i < 5; ++i) {
        const anvil_gguf_kv *a = anvil_gguf_kv_at(g, i), *b = anvil_gguf_find_kv(r.src, order[i]);
        CU_ASSERT_STRING_EQUAL(a->key, order[i]);
        CU_ASSERT(b != NULL && a->type == b->type && a->raw_size == b->raw_size &&
                  memcmp(a->raw, b->raw, a->raw_size) == 0);
    }
    CU_ASSERT_STRING_EQUAL(anvil_gguf_kv_at(g, 5)->key, order[5]);
    CU_ASSERT_STRING_EQUAL(anvil_gguf_kv_at(g, 6)->key, order[6]);
    CU_ASSERT_EQUAL(anvil_gguf_kv_at(g, 5)->type, ANVIL_GGUF_TYPE_U32);
    CU_ASSERT_EQUAL(anvil_gguf_kv_at(g, 6)->type, ANVIL_GGUF_TYPE_U32);
    uint64_t v = 0;
    CU_ASSERT(anvil_gguf_get_u64(g, "general.quantization_version", &v, NULL) == ANVIL_OK && v == 2);
    CU_ASSERT(anvil_gguf_get_u64(g, "general.file_type", &v, NULL) == ANVIL_OK && v == 7); /* MOSTLY_Q8_0 */
    anvil_gguf_close(g);
    tc_result_free(&r);

    /* The file-type table, checked against llama.cpp's numbering. */
    CU_ASSERT_EQUAL(anvil_transcode_file_type(ANVIL_TYPE_F32), 0);
    CU_ASSERT_EQUAL(anvil_transcode_file_type(ANVIL_TYPE_F16), 1);
    CU_ASSERT_EQUAL(anvil_transcode_file_type(ANVIL_TYPE_BF16), 32);
    CU_ASSERT_EQUAL(anvil_transcode_file_type(ANVIL_TYPE_Q6_K), 18);
    CU_ASSERT_EQUAL(anvil_transcode_file_type(ANVIL_TYPE_IQ4_XS), 30);
    CU_ASSERT_EQUAL(anvil_transcode_file_type(ANVIL_TYPE_TQ2_0), 37);
    CU_ASSERT_EQUAL(anvil_transcode_file_type(ANVIL_TYPE_Q2_0), 41);
    CU_ASSERT_EQUAL(anvil_transcode_file_type(ANVIL_TYPE_Q8_1), -1);
}

/* The real tinyllamas model: rows of 64 fit 32-element blocks; the FFN's
 * 172-wide rows fit none and stay F32. */
static void test_stories(void) {
    const char *p = test_shared_path("stories260K.v3.gguf");
    if (p == NULL) {
        fprintf(stderr, "\n  note: ../shared/testdata/stories260K.v3.gguf absent; skipped\n");
        CU_PASS("skipped");
        return;
    }
    anvil_transcode_options o;
    anvil_transcode_options_init(&o);
    o.dtype = ANVIL_TYPE_Q8_0;
    const char *out = tc_path("stories-q8.gguf");
    tc_result r = tc_transcode(p, out, &o, 0);
    CU_ASSERT_EQUAL_FATAL(r.rc, ANVIL_OK);
    size_t conv = 0, rows = 0;
    for (size_t i = 0; i < anvil_transcode_count(r.t); ++i) {
        const anvil_transcode_tensor *it = anvil_transcode_tensor_at(r.t, i);
        const int matrix = it->src->n_dims >= 2 && strstr(it->name, "norm") == NULL;
        if (!matrix) {
            CU_ASSERT_EQUAL(it->why, ANVIL_TRANSCODE_KEEP_POLICY);
        } else if (it->row_len % 32 == 0) {
            CU_ASSERT_EQUAL(it->why, ANVIL_TRANSCODE_CONVERT);
            CU_ASSERT(it->has_quality && it->snr_db > 30.0); /* q8_0 on trained weights */
            conv++;
        } else {
            CU_ASSERT_EQUAL(it->why, ANVIL_TRANSCODE_KEEP_ROWS);
            rows++;
        }
    }
    CU_ASSERT(conv > 0 && rows > 0);
    check_bytes(&r, out);
    tc_result_free(&r);
}

void tc_add_policy_tests(void) {
    CU_pSuite s = CU_add_suite("transcode policy", NULL, NULL);
    CU_add_test(s, "global dtype: what changes and what is kept", test_global_dtype);
    CU_add_test(s, "experts dtype requantizes experts only", test_experts_requantize);
    CU_add_test(s, "regex overrides: first match wins, beat the rest", test_overrides);
    CU_add_test(s, "refused targets and rules", test_refusals);
    CU_add_test(s, "metadata raw, quantization_version and file_type", test_metadata);
    CU_add_test(s, "stories260K (real weights)", test_stories);
}
