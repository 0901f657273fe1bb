/* SPDX-License-Identifier: MIT */
/*
 * Measured sensitivity (issue 40) without the oracle:
 *  - the sensitivity file's parser on good and hostile documents (bad
 *    format/version, negative, non-finite and missing kld, duplicates,
 *    shapes out of range);
 *  - the forward pass pieces the measurement rests on, on the trained
 *    model of ../shared/testdata/quality: anvil_model_eval_layers from
 *    layer 0 and restarted at layer l from the saved residual gives
 *    anvil_model_eval's logits bit for bit, for 1 and 2 threads;
 *    anvil_model_set_weight changes them and restores them exactly;
 *  - a synthetic tied-embedding model: token_embd perturbs both the
 *    embedding and the output, output.weight does not exist;
 *  - a target plan with a sensitivity file: a different choice than the
 *    role-weight proxy, refused when the file names an unknown tensor or
 *    lacks a free one.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/gguf.h"
#include "anvil/model.h"
#include "anvil/quantize.h"
#include "anvil/transcode.h"
#include "synth_model.h"
#include "test_env.h"

static anvil_ctx *g_ctx;

static anvil_ctx *ctx(void) {
    if (g_ctx == NULL) {
        anvil_error err;
        if (anvil_ctx_open(&g_ctx, test_config_path(), &err) != ANVIL_OK) return NULL;
    }
    return g_ctx;
}

static int parse(const char *doc, anvil_error *err) {
    anvil_quantize_sens *s = NULL;
    const int rc = anvil_quantize_sens_parse(&s, doc, strlen(doc), err);
    if (rc == ANVIL_OK) {
        CU_ASSERT_PTR_NOT_NULL(s);
    } else {
        CU_ASSERT_PTR_NULL(s);
        CU_ASSERT(err->message[0] != '\0');
    }
    anvil_quantize_sens_free(s);
    return rc;
}

#define HEAD "{\"format\":\"anvil-sensitivity\",\"version\":1,\"chunks\":4,\"ctx\":256,\"tensors\":["
#define ENT(n, k) "{\"name\":\"" n "\",\"shape\":[256,2048],\"ref\":\"q4_K\",\"kld\":" k "}"

static void test_parse(void) {
    anvil_error err;
    anvil_quantize_sens *s = NULL;
    const char *good = HEAD ENT("a", "0.5") "," ENT("b", "0") "]}";
    CU_ASSERT_EQUAL(anvil_quantize_sens_parse(&s, good, strlen(good), &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_quantize_sens_count(s), 2);
    anvil_quantize_sens_free(s);
    CU_ASSERT_EQUAL(parse(HEAD ENT("a", "-1") "]}", &err), ANVIL_E_FORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "'a'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, ">= 0"));
    CU_ASSERT_EQUAL(parse(HEAD ENT("a", "1e999") "]}", &err), ANVIL_E_FORMAT);
    CU_ASSERT_EQUAL(parse(HEAD ENT("a", "\"nan\"") "]}", &err), ANVIL_E_FORMAT);
    CU_ASSERT_EQUAL(parse(HEAD ENT("a", "1") "," ENT("a", "2") "]}", &err), ANVIL_E_FORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "twice"));
    CU_ASSERT_EQUAL(parse(HEAD "]}", &err), ANVIL_E_FORMAT);
    CU_ASSERT_EQUAL(parse("{\"format\":\"other\",\"version\":1}", &err), ANVIL_E_FORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "not a sensitivity file"));
    CU_ASSERT_EQUAL(
        parse("{\"format\":\"anvil-sensitivity\",\"version\":2,\"chunks\":4,\"ctx\":256,\"tensors\":[]}", &err),
        ANVIL_E_FORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "version"));
    CU_ASSERT_EQUAL(parse(HEAD "{\"name\":\"a\",\"shape\":[0],\"ref\":\"q4_K\",\"kld\":1}]}", &err), ANVIL_E_FORMAT);
    CU_ASSERT_EQUAL(parse(HEAD "{\"name\":\"a\",\"shape\":[1,2,3,4,5],\"ref\":\"q4_K\",\"kld\":1}]}", &err),
                    ANVIL_E_FORMAT);
    CU_ASSERT_EQUAL(parse(HEAD "{\"name\":\"a\",\"shape\":[1],\"kld\":1}]}", &err), ANVIL_E_FORMAT);
    CU_ASSERT_EQUAL(parse("[1,2", &err), ANVIL_E_FORMAT);
}

static const char *shared(const char *rel, char *buf, size_t size) {
    const char *p = test_shared_path(rel);
    snprintf(buf, size, "%s", p ? p : "");
    return buf[0] ? buf : NULL;
}

/* Logits of the first n tokens 1..n through the layers and restarted. */
static void test_layers(void) {
    char model[1024];
    if (shared("quality/tiny-code-llama.f16.gguf", model, sizeof model) == NULL) {
        fprintf(stderr, "\n  ../shared/testdata/quality is absent: skipped\n");
        return;
    }
    anvil_error err;
    anvil_model *m = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_model_open(&m, ctx(), model, NULL, &err), ANVIL_OK);
    anvil_model_info in = { .size = sizeof in };
    CU_ASSERT_EQUAL_FATAL(anvil_model_get_info(m, &in), ANVIL_OK);
    const size_t n = 48, nv = in.n_vocab, pl = n * in.n_embd;
    int32_t tok[48];
    for (size_t i = 0; i < n; ++i) tok[i] = (int32_t)((i * 37 + 5) % nv);
    float *ref = malloc(n * nv * sizeof *ref), *got = malloc(n * nv * sizeof *got);
    float *save = malloc((in.n_layer + 1) * pl * sizeof *save);
    CU_ASSERT_FATAL(ref && got && save);
    CU_ASSERT_EQUAL_FATAL(anvil_model_eval(m, tok, n, ref, &err), ANVIL_OK);
    for (unsigned threads = 1; threads <= 2; ++threads) {
        anvil_ctx_set_threads(ctx(), threads);
        CU_ASSERT_EQUAL(anvil_model_eval_layers(m, tok, n, 0, NULL, save, got, &err), ANVIL_OK);
        CU_ASSERT_EQUAL(memcmp(ref, got, n * nv * sizeof *ref), 0);
        for (uint32_t l = 1; l <= in.n_layer; ++l) {
            memset(got, 0, n * nv * sizeof *got);
            CU_ASSERT_EQUAL(anvil_model_eval_layers(m, tok, n, l, save + l * pl, NULL, got, &err), ANVIL_OK);
            CU_ASSERT_EQUAL(memcmp(ref, got, n * nv * sizeof *ref), 0);
        }
    }
    /* A perturbed weight moves the logits; restoring gives them back exactly. */
    anvil_gguf *g = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_open(&g, model, ctx(), 0, &err), ANVIL_OK);
    const anvil_gguf_tensor *t = anvil_gguf_find_tensor(g, "blk.2.ffn_down.weight");
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    unsigned char *p = malloc((size_t)t->n_bytes);
    memcpy(p, t->data, (size_t)t->n_bytes);
    for (size_t i = 0; i < (size_t)t->n_bytes; i += 2)
        p[i + 1] ^= (i / 2) % 7 == 0 ? 0x04 : 0; /* f16 exponent bits */
    CU_ASSERT_EQUAL(anvil_model_set_weight(m, t->name, p, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_model_eval_layers(m, tok, n, 2, save + 2 * pl, NULL, got, &err), ANVIL_OK);
    CU_ASSERT_NOT_EQUAL(memcmp(ref, got, n * nv * sizeof *ref), 0);
    CU_ASSERT_EQUAL(anvil_model_set_weight(m, t->name, NULL, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_model_eval(m, tok, n, got, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(memcmp(ref, got, n * nv * sizeof *ref), 0);
    CU_ASSERT_EQUAL(anvil_model_set_weight(m, "output_norm.weight", p, &err), ANVIL_E_NOT_FOUND);
    CU_ASSERT_EQUAL(anvil_model_set_weight(m, "no.such.weight", p, &err), ANVIL_E_NOT_FOUND);
    CU_ASSERT_EQUAL(anvil_model_eval_layers(m, tok, n, 1, NULL, NULL, got, &err), ANVIL_E_INVALID_ARG);
    free(p);
    anvil_gguf_close(g);
    free(ref);
    free(got);
    free(save);
    anvil_model_close(m);
}

/* Tied: one token_embd serves the embedding and the output. */
static void test_tied(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tied.gguf", test_tmpdir());
    synth_model sm = { .n_vocab = 512,
                       .n_embd = 64,
                       .n_ff = 128,
                       .n_layer = 2,
                       .n_head = 4,
                       .n_head_kv = 2,
                       .type = ANVIL_TYPE_F16,
                       .seed = 7,
                       .tied_embeddings = 1 };
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(synth_model_write(path, &sm, ctx(), &err), ANVIL_OK);
    anvil_model *m = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_model_open(&m, ctx(), path, NULL, &err), ANVIL_OK);
    anvil_gguf *g = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_open(&g, path, ctx(), 0, &err), ANVIL_OK);
    CU_ASSERT_PTR_NULL(anvil_gguf_find_tensor(g, "output.weight"));
    const anvil_gguf_tensor *t = anvil_gguf_find_tensor(g, "token_embd.weight");
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    const size_t n = 16, nv = 512;
    int32_t tok[16];
    for (size_t i = 0; i < n; ++i) tok[i] = (int32_t)(i * 31 % nv);
    float *ref = malloc(n * nv * sizeof *ref), *got = malloc(n * nv * sizeof *got);
    float *save = malloc(3 * n * 64 * sizeof *save);
    CU_ASSERT_EQUAL_FATAL(anvil_model_eval_layers(m, tok, n, 0, NULL, save, ref, &err), ANVIL_OK);
    /* Rows the tokens do not use changed: only the output role sees them. */
    unsigned char *p = malloc((size_t)t->n_bytes);
    memcpy(p, t->data, (size_t)t->n_bytes);
    unsigned char used[512] = { 0 };
    for (size_t i = 0; i < n; ++i) used[tok[i]] = 1;
    for (size_t r = 0; r < nv; ++r) {
        if (!used[r]) memset(p + r * t->row_bytes, 0, (size_t)t->row_bytes);
    }
    CU_ASSERT_EQUAL(anvil_model_set_weight(m, "token_embd.weight", p, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_model_eval_layers(m, tok, n, 2, save + 2 * n * 64, NULL, got, &err), ANVIL_OK);
    CU_ASSERT_NOT_EQUAL(memcmp(ref, got, n * nv * sizeof *ref), 0);
    /* ...and the embedding role: a used row changed moves the residual. */
    memcpy(p, t->data, (size_t)t->n_bytes);
    memset(p + (size_t)tok[3] * t->row_bytes, 0, (size_t)t->row_bytes);
    float *save2 = malloc(3 * n * 64 * sizeof *save2);
    CU_ASSERT_EQUAL(anvil_model_set_weight(m, "token_embd.weight", p, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_model_eval_layers(m, tok, n, 0, NULL, save2, got, &err), ANVIL_OK);
    CU_ASSERT_NOT_EQUAL(memcmp(save, save2, n * 64 * sizeof *save), 0);
    CU_ASSERT_EQUAL(anvil_model_set_weight(m, "token_embd.weight", NULL, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_model_eval(m, tok, n, got, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(memcmp(ref, got, n * nv * sizeof *ref), 0);
    CU_ASSERT_EQUAL(anvil_model_set_weight(m, "output.weight", p, &err), ANVIL_E_NOT_FOUND);
    free(p);
    free(ref);
    free(got);
    free(save);
    free(save2);
    anvil_gguf_close(g);
    anvil_model_close(m);
}

/* A sensitivity document for every 2-D matrix of g: kld = f(name). */
static char *sens_doc(const anvil_gguf *g, const char *skip, const char *extra) {
    size_t cap = 1 << 16, len = 0;
    char *d = malloc(cap);
    len += (size_t)snprintf(d + len, cap - len, "%s", HEAD);
    int first = 1;
    for (size_t i = 0; i < anvil_gguf_tensor_count(g); ++i) {
        const anvil_gguf_tensor *t = anvil_gguf_tensor_at(g, i);
        if (t->n_dims < 2 || (skip && strcmp(t->name, skip) == 0)) continue;
        /* Attention's value matrices hurt most, the output least: the
         * opposite of the proxy's role weights. */
        const double kld = strstr(t->name, "attn_v") ? 1e-2 : strstr(t->name, "output.") ? 1e-7 : 1e-5;
        len += (size_t)snprintf(
            d + len, cap - len, "%s{\"name\":\"%s\",\"shape\":[%llu,%llu],\"ref\":\"q4_K\",\"kld\":%g}",
            first ? "" : ",", t->name, (unsigned long long)t->ne[0], (unsigned long long)t->ne[1], kld);
        first = 0;
    }
    if (extra) len += (size_t)snprintf(d + len, cap - len, ",%s", extra);
    snprintf(d + len, cap - len, "]}");
    return d;
}

static int plan_with(const char *model, const anvil_imatrix *im, const char *doc, anvil_transcode **t, anvil_gguf **g,
                     anvil_error *err) {
    *t = NULL;
    int rc = anvil_gguf_open(g, model, ctx(), 0, err);
    anvil_quantize_sens *s = NULL;
    if (rc == ANVIL_OK && doc) rc = anvil_quantize_sens_parse(&s, doc, strlen(doc), err);
    anvil_quantize_options o;
    anvil_quantize_options_init(&o);
    o.target_size = 2226976; /* Q3_K_M's size */
    o.imatrix = im;
    o.skip_quality = 1;
    o.target_sample_rows = 32;
    o.sensitivity = s;
    char out[1024];
    snprintf(out, sizeof out, "%s/sens.gguf", test_tmpdir());
    if (rc == ANVIL_OK) rc = anvil_quantize_plan(t, ctx(), *g, out, &o, err);
    anvil_quantize_sens_free(s); /* read during the plan only */
    return rc;
}

static void test_plan(void) {
    char model[1024], imp[1024];
    if (shared("quality/tiny-code-llama.f16.gguf", model, sizeof model) == NULL ||
        shared("quality/tiny-code-llama.imatrix.gguf", imp, sizeof imp) == NULL) {
        return;
    }
    anvil_error err;
    anvil_imatrix *im = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_imatrix_load(&im, imp, &err), ANVIL_OK);
    anvil_transcode *tp = NULL, *ts = NULL;
    anvil_gguf *gp = NULL, *gs = NULL;
    CU_ASSERT_EQUAL_FATAL(plan_with(model, im, NULL, &tp, &gp, &err), ANVIL_OK);
    char *doc = sens_doc(gp, NULL, NULL);
    CU_ASSERT_EQUAL_FATAL(plan_with(model, im, doc, &ts, &gs, &err), ANVIL_OK);
    size_t differ = 0;
    uint64_t bv_p = 0, bv_s = 0, bo_p = 0, bo_s = 0;
    for (size_t i = 0; i < anvil_transcode_count(tp); ++i) {
        const anvil_transcode_tensor *a = anvil_transcode_tensor_at(tp, i), *b = anvil_transcode_tensor_at(ts, i);
        differ += a->dst_type != b->dst_type;
        if (strstr(a->name, "attn_v")) bv_p += a->dst_bytes, bv_s += b->dst_bytes;
        if (strcmp(a->name, "output.weight") == 0) bo_p = a->dst_bytes, bo_s = b->dst_bytes;
    }
    CU_ASSERT(differ > 0);
    CU_ASSERT(bv_s > bv_p); /* the measured-sensitive tensors get more bytes */
    CU_ASSERT(bo_s < bo_p); /* the measured-harmless output fewer */
    anvil_transcode_free(ts);
    anvil_gguf_close(gs);
    free(doc);
    /* A tensor the model does not have: refused, naming it. */
    doc = sens_doc(gp, NULL, "{\"name\":\"blk.9.attn_q.weight\",\"shape\":[256,256],\"ref\":\"q4_K\",\"kld\":1}");
    CU_ASSERT_EQUAL(plan_with(model, im, doc, &ts, &gs, &err), ANVIL_E_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "blk.9.attn_q.weight"));
    anvil_transcode_free(ts);
    anvil_gguf_close(gs);
    free(doc);
    /* A free tensor the file lacks: refused, naming it. */
    doc = sens_doc(gp, "blk.1.ffn_up.weight", NULL);
    CU_ASSERT_EQUAL(plan_with(model, im, doc, &ts, &gs, &err), ANVIL_E_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "blk.1.ffn_up.weight"));
    anvil_transcode_free(ts);
    anvil_gguf_close(gs);
    free(doc);
    anvil_transcode_free(tp);
    anvil_gguf_close(gp);
    anvil_imatrix_free(im);
}

int main(void) {
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    CU_pSuite s = CU_add_suite("quantize_sens", NULL, NULL);
    CU_add_test(s, "sensitivity file: good and hostile", test_parse);
    CU_add_test(s, "eval_layers restart = eval, set_weight restores", test_layers);
    CU_add_test(s, "tied embedding: one tensor, both roles", test_tied);
    CU_add_test(s, "target plan with measured weights", test_plan);
    const int rc = test_run_cunit();
    anvil_ctx_close(g_ctx);
    test_tmpdir_cleanup();
    return rc;
}
