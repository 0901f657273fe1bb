/* SPDX-License-Identifier: MIT */
/*
 * Measured sensitivity (issue 40) without the oracle:
 *  - the sensitivity file's parser on good and hostile documents (bad
 *    format/version, negative, non-finite and missing kld, duplicates,
 *    shapes out of range; version 2's low-bit points: missing, empty, too
 *    many, bad);
 *  - the response curve through a tensor's points (qz_sens_curve): linear
 *    to the reference, log-log linear between the points in any order,
 *    clamped exponents;
 *  - the forward pass pieces the measurement rests on, on the trained
 *    model of ../shared/testdata/quality: anvil_model_eval_layers from
 *    layer 0 and restarted at layer l from the saved residual gives
 *    anvil_model_eval's logits bit for bit, for 1 and 2 threads;
 *    anvil_model_set_weight changes them and restores them exactly;
 *  - a synthetic tied-embedding model: token_embd perturbs both the
 *    embedding and the output, output.weight does not exist;
 *  - a target plan with a sensitivity file: a different choice than the
 *    role-weight proxy, refused when the file names an unknown tensor or
 *    lacks a free one; a version 2 file whose low-bit points hurt more
 *    than the line predicts moves bytes away from the low-bit types;
 *    target_min_bpw floors every choice; a measurement cache gives the same
 *    plans, floored or not; a preset's plan file lists every tensor it
 *    encodes;
 *  - version 3's stored errors: the parser on good and hostile "err"
 *    members; a plan with the errors a cache measured is the plan measuring
 *    gives; altered values under their key are taken (the plan moves), and
 *    ignored under another key (another --target-rows: all 30 tensors,
 *    measured again, the plan a version 2 file gives, and a warning saying
 *    so; another importance matrix entry: that one tensor).
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
#include "quantize_target.h"
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
        parse("{\"format\":\"anvil-sensitivity\",\"version\":4,\"chunks\":4,\"ctx\":256,\"tensors\":[" ENT("a",
                                                                                                           "1") "]}",
              &err),
        ANVIL_E_FORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "version"));
    CU_ASSERT_EQUAL(parse(HEAD "{\"name\":\"a\",\"shape\":[0],\"ref\":\"q4_K\",\"kld\":1}]}", &err), ANVIL_E_FORMAT);
    CU_ASSERT_EQUAL(parse(HEAD "{\"name\":\"a\",\"shape\":[1,2,3,4,5],\"ref\":\"q4_K\",\"kld\":1}]}", &err),
                    ANVIL_E_FORMAT);
    CU_ASSERT_EQUAL(parse(HEAD "{\"name\":\"a\",\"shape\":[1],\"kld\":1}]}", &err), ANVIL_E_FORMAT);
    CU_ASSERT_EQUAL(parse("[1,2", &err), ANVIL_E_FORMAT);
    /* version 1 reads as the line, its "low" (if any) ignored */
    const char *v1 = HEAD ENT("a", "0.5") "]}";
    CU_ASSERT_EQUAL_FATAL(anvil_quantize_sens_parse(&s, v1, strlen(v1), &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_quantize_sens_version(s), 1);
    anvil_quantize_sens_free(s);
    CU_ASSERT_EQUAL(anvil_quantize_sens_version(NULL), 0);
}

#define HEAD2 "{\"format\":\"anvil-sensitivity\",\"version\":2,\"chunks\":4,\"ctx\":256,\"tensors\":["
#define ENT2(n, k, low) "{\"name\":\"" n "\",\"shape\":[256,2048],\"ref\":\"q4_K\",\"kld\":" k ",\"low\":" low "}"

static void test_parse_v2(void) {
    anvil_error err;
    anvil_quantize_sens *s = NULL;
    const char *good =
        HEAD2 ENT2("a", "0.5", "[{\"ref\":\"iq2_xs\",\"kld\":2},{\"ref\":\"iq1_s\",\"kld\":9}]") "," ENT2(
            "b", "0", "[{\"ref\":\"q2_0\",\"kld\":0}]") "]}";
    CU_ASSERT_EQUAL_FATAL(anvil_quantize_sens_parse(&s, good, strlen(good), &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_quantize_sens_count(s), 2);
    CU_ASSERT_EQUAL(anvil_quantize_sens_version(s), 2);
    anvil_quantize_sens_free(s);
    /* a version 2 entry without its low-bit points, or with none, or four */
    CU_ASSERT_EQUAL(parse(HEAD2 ENT("a", "1") "]}", &err), ANVIL_E_FORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "'a': low must be an array of 1 .. 3"));
    CU_ASSERT_EQUAL(parse(HEAD2 ENT2("a", "1", "[]") "]}", &err), ANVIL_E_FORMAT);
    CU_ASSERT_EQUAL(parse(HEAD2 ENT2("a", "1",
                                     "[{\"ref\":\"q2_K\",\"kld\":1},{\"ref\":\"q2_K\",\"kld\":1},{\"ref\":"
                                     "\"q2_K\",\"kld\":1},{\"ref\":\"q2_K\",\"kld\":1}]") "]}",
                          &err),
                    ANVIL_E_FORMAT);
    CU_ASSERT_EQUAL(parse(HEAD2 ENT2("a", "1", "{\"ref\":\"q2_K\",\"kld\":1}") "]}", &err), ANVIL_E_FORMAT);
    /* a bad point: negative, missing, not an object, no type */
    CU_ASSERT_EQUAL(parse(HEAD2 ENT2("a", "1", "[{\"ref\":\"q2_K\",\"kld\":-1}]") "]}", &err), ANVIL_E_FORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "'a': kld must be a finite number >= 0"));
    CU_ASSERT_EQUAL(parse(HEAD2 ENT2("a", "1", "[{\"ref\":\"q2_K\"}]") "]}", &err), ANVIL_E_FORMAT);
    CU_ASSERT_EQUAL(parse(HEAD2 ENT2("a", "1", "[3]") "]}", &err), ANVIL_E_FORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "'a': ref must be a type name"));
    CU_ASSERT_EQUAL(parse(HEAD2 ENT2("a", "1", "[{\"ref\":\"\",\"kld\":1}]") "]}", &err), ANVIL_E_FORMAT);
}

#define HEAD3 "{\"format\":\"anvil-sensitivity\",\"version\":3,\"chunks\":4,\"ctx\":256,\"tensors\":["
#define ENT3(n, err) ENT2(n, "0.5", "[{\"ref\":\"iq2_xs\",\"kld\":2}]") "," ERRENT(n, err)
#define ERRENT(n, err) \
    "{\"name\":\"" n   \
    "x\",\"shape\":[256,2048],\"ref\":\"q4_K\",\"kld\":1,\"low\":[{\"ref\":\"q2_K\",\"kld\":3}]" err "}"

/* Version 3: each entry's optional stored errors, checked as hostile input. */
static void test_parse_v3(void) {
    anvil_error err;
    anvil_quantize_sens *s = NULL;
    const char *good = HEAD3 ENT3(
        "a", ",\"err\":{\"key\":\"0123456789abcdef\",\"types\":[\"q4_K\",\"q8_0\"],\"relerr\":[0.001,0]}") "]}";
    CU_ASSERT_EQUAL_FATAL(anvil_quantize_sens_parse(&s, good, strlen(good), &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_quantize_sens_version(s), 3);
    CU_ASSERT_EQUAL(anvil_quantize_sens_count(s), 2);
    anvil_quantize_sens_free(s);
    /* no "err" at all: a version 3 file without stored errors */
    CU_ASSERT_EQUAL(parse(HEAD3 ENT3("a", "") "]}", &err), ANVIL_OK);
    /* the key: 16 lowercase hex digits */
    CU_ASSERT_EQUAL(
        parse(HEAD3 ENT3("a", ",\"err\":{\"key\":\"0123456789abcde\",\"types\":[\"q4_K\"],\"relerr\":[1]}") "]}",
              &err),
        ANVIL_E_FORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "'ax': err must be"));
    CU_ASSERT_EQUAL(
        parse(HEAD3 ENT3("a", ",\"err\":{\"key\":\"0123456789ABCDEF\",\"types\":[\"q4_K\"],\"relerr\":[1]}") "]}",
              &err),
        ANVIL_E_FORMAT);
    CU_ASSERT_EQUAL(
        parse(HEAD3 ENT3("a", ",\"err\":{\"key\":\"0123456789abcdeg\",\"types\":[\"q4_K\"],\"relerr\":[1]}") "]}",
              &err),
        ANVIL_E_FORMAT);
    CU_ASSERT_EQUAL(parse(HEAD3 ENT3("a", ",\"err\":{\"types\":[\"q4_K\"],\"relerr\":[1]}") "]}", &err),
                    ANVIL_E_FORMAT);
    /* arrays of different lengths, empty, not arrays */
    CU_ASSERT_EQUAL(parse(HEAD3 ENT3("a", ",\"err\":{\"key\":\"0123456789abcdef\",\"types\":[\"q4_K\",\"q8_0\"],"
                                          "\"relerr\":[1]}") "]}",
                          &err),
                    ANVIL_E_FORMAT);
    CU_ASSERT_EQUAL(
        parse(HEAD3 ENT3("a", ",\"err\":{\"key\":\"0123456789abcdef\",\"types\":[],\"relerr\":[]}") "]}", &err),
        ANVIL_E_FORMAT);
    CU_ASSERT_EQUAL(
        parse(HEAD3 ENT3("a", ",\"err\":{\"key\":\"0123456789abcdef\",\"types\":\"q4_K\",\"relerr\":1}") "]}", &err),
        ANVIL_E_FORMAT);
    CU_ASSERT_EQUAL(parse(HEAD3 ENT3("a", ",\"err\":[1]") "]}", &err), ANVIL_E_FORMAT);
    /* a value: negative, not finite, not a number; a type: not a string, twice */
    CU_ASSERT_EQUAL(
        parse(HEAD3 ENT3("a", ",\"err\":{\"key\":\"0123456789abcdef\",\"types\":[\"q4_K\"],\"relerr\":[-1]}") "]}",
              &err),
        ANVIL_E_FORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "err.relerr[0] a finite number >= 0"));
    CU_ASSERT_EQUAL(
        parse(HEAD3 ENT3("a", ",\"err\":{\"key\":\"0123456789abcdef\",\"types\":[\"q4_K\"],\"relerr\":[1e999]}") "]}",
              &err),
        ANVIL_E_FORMAT);
    CU_ASSERT_EQUAL(
        parse(HEAD3 ENT3("a", ",\"err\":{\"key\":\"0123456789abcdef\",\"types\":[\"q4_K\"],\"relerr\":[\"1\"]}") "]}",
              &err),
        ANVIL_E_FORMAT);
    CU_ASSERT_EQUAL(
        parse(HEAD3 ENT3("a", ",\"err\":{\"key\":\"0123456789abcdef\",\"types\":[7],\"relerr\":[1]}") "]}", &err),
        ANVIL_E_FORMAT);
    CU_ASSERT_EQUAL(parse(HEAD3 ENT3("a", ",\"err\":{\"key\":\"0123456789abcdef\",\"types\":[\"q4_K\",\"q4_K\"],"
                                          "\"relerr\":[1,2]}") "]}",
                          &err),
                    ANVIL_E_FORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "names type 'q4_K' twice"));
    /* 65 types: over the limit */
    char big[8192];
    size_t n = (size_t)snprintf(big, sizeof big, "%s", HEAD3 ENT2("a", "0.5", "[{\"ref\":\"iq2_xs\",\"kld\":2}]"));
    n -= 1; /* reopen the entry */
    n += (size_t)snprintf(big + n, sizeof big - n, ",\"err\":{\"key\":\"0123456789abcdef\",\"types\":[");
    for (int i = 0; i < 65; ++i) n += (size_t)snprintf(big + n, sizeof big - n, "%s\"t%d\"", i ? "," : "", i);
    n += (size_t)snprintf(big + n, sizeof big - n, "],\"relerr\":[");
    for (int i = 0; i < 65; ++i) n += (size_t)snprintf(big + n, sizeof big - n, "%s1", i ? "," : "");
    snprintf(big + n, sizeof big - n, "]}}]}");
    CU_ASSERT_EQUAL(parse(big, &err), ANVIL_E_FORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "1 .. 64 type names"));
    /* a version 2 file's "err" is not read */
    CU_ASSERT_EQUAL(parse(HEAD2 ENT2("a", "1", "[{\"ref\":\"q2_K\",\"kld\":1}]") "]}", &err), ANVIL_OK);
}

/* The curve through (r_i, k_i): linear to r_0, log-log linear beyond. */
static void test_curve(void) {
    const double r2[] = { 1.0, 4.0 }, k2[] = { 1e-3, 1.6e-2 }; /* exponent 2 */
    CU_ASSERT_DOUBLE_EQUAL(qz_sens_curve(r2, k2, 2, 0.5), 5e-4, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(qz_sens_curve(r2, k2, 2, 1.0), 1e-3, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(qz_sens_curve(r2, k2, 2, 2.0), 4e-3, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(qz_sens_curve(r2, k2, 2, 4.0), 1.6e-2, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(qz_sens_curve(r2, k2, 2, 8.0), 6.4e-2, 1e-14); /* carried on */
    /* one point: the line (a version 1 file) */
    CU_ASSERT_DOUBLE_EQUAL(qz_sens_curve(r2, k2, 1, 8.0), 8e-3, 1e-15);
    /* three points, the low ones in reverse order: exponents 1 then 1.5 */
    const double r3[] = { 1.0, 8.0, 2.0 }, k3[] = { 1.0, 16.0, 2.0 };
    CU_ASSERT_DOUBLE_EQUAL(qz_sens_curve(r3, k3, 3, 1.5), 1.5, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(qz_sens_curve(r3, k3, 3, 2.0), 2.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(qz_sens_curve(r3, k3, 3, 4.0), 2.0 * pow(2.0, 1.5), 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(qz_sens_curve(r3, k3, 3, 8.0), 16.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(qz_sens_curve(r3, k3, 3, 16.0), 16.0 * pow(2.0, 1.5), 1e-9);
    /* a low point that hurts less than the reference: the exponent floored at 0.5 (the curve still rises) */
    const double rd[] = { 1.0, 4.0 }, kd[] = { 1.0, 0.5 };
    CU_ASSERT_DOUBLE_EQUAL(qz_sens_curve(rd, kd, 2, 4.0), 2.0, 1e-12);
    /* a steep one: at most 4 */
    const double rs[] = { 1.0, 2.0 }, ks[] = { 1.0, 1000.0 };
    CU_ASSERT_DOUBLE_EQUAL(qz_sens_curve(rs, ks, 2, 2.0), 16.0, 1e-12);
    /* a point within 5% of the reference's error is passed over: the line */
    const double rn[] = { 1.0, 1.01 }, kn[] = { 1.0, 50.0 };
    CU_ASSERT_DOUBLE_EQUAL(qz_sens_curve(rn, kn, 2, 3.0), 3.0, 1e-12);
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

/* A sensitivity document for every 2-D matrix of g: kld = f(name); with
 * low > 0 a version 2 one whose low-bit points (iq2_xs, iq1_s) measure low
 * and 10 low times the reference's. */
static char *sens_doc_v(const anvil_gguf *g, const char *skip, const char *extra, double low) {
    size_t cap = 1 << 16, len = 0;
    char *d = malloc(cap);
    len += (size_t)snprintf(d + len, cap - len, "%s", low > 0.0 ? HEAD2 : HEAD);
    int first = 1;
    for (size_t i = 0; i < anvil_gguf_tensor_count(g); ++i) {
        const anvil_gguf_tensor *t = anvil_gguf_tensor_at(g, i);
        if (t->n_dims < 2 || (skip && strcmp(t->name, skip) == 0)) continue;
        /* Attention's value matrices hurt most, the output least: the
         * opposite of the proxy's role weights. */
        const double kld = strstr(t->name, "attn_v") ? 1e-2 : strstr(t->name, "output.") ? 1e-7 : 1e-5;
        len += (size_t)snprintf(
            d + len, cap - len, "%s{\"name\":\"%s\",\"shape\":[%llu,%llu],\"ref\":\"q4_K\",\"kld\":%g",
            first ? "" : ",", t->name, (unsigned long long)t->ne[0], (unsigned long long)t->ne[1], kld);
        if (low > 0.0) {
            len += (size_t)snprintf(d + len, cap - len,
                                    ",\"low\":[{\"ref\":\"iq2_xs\",\"kld\":%g},{\"ref\":\"iq1_s\",\"kld\":%g}]",
                                    kld * low, kld * low * 10.0);
        }
        len += (size_t)snprintf(d + len, cap - len, "}");
        first = 0;
    }
    if (extra) len += (size_t)snprintf(d + len, cap - len, ",%s", extra);
    snprintf(d + len, cap - len, "]}");
    return d;
}

static char *sens_doc(const anvil_gguf *g, const char *skip, const char *extra) {
    return sens_doc_v(g, skip, extra, 0.0);
}

static anvil_quantize_cache *g_cache; /* target_cache of the plans, or NULL */
static uint64_t g_rows = 32;          /* target_sample_rows of the plans */

static int plan_min(const char *model, const anvil_imatrix *im, const char *doc, double min_bpw, anvil_transcode **t,
                    anvil_gguf **g, anvil_error *err) {
    *t = NULL;
    int rc = anvil_gguf_open(g, model, ctx(), 0, err);
    anvil_quantize_sens *s = NULL;
    if (rc == ANVIL_OK && doc) rc = anvil_quantize_sens_parse(&s, doc, strlen(doc), err);
    anvil_quantize_options o;
    anvil_quantize_options_init(&o);
    o.target_size = 2226976; /* Q3_K_M's size */
    o.imatrix = im;
    o.skip_quality = 1;
    o.target_sample_rows = g_rows;
    o.sensitivity = s;
    o.target_min_bpw = min_bpw;
    o.target_cache = g_cache;
    char out[1024];
    snprintf(out, sizeof out, "%s/sens.gguf", test_tmpdir());
    if (rc == ANVIL_OK) rc = anvil_quantize_plan(t, ctx(), *g, out, &o, err);
    anvil_quantize_sens_free(s); /* read during the plan only */
    return rc;
}

static int plan_with(const char *model, const anvil_imatrix *im, const char *doc, anvil_transcode **t, anvil_gguf **g,
                     anvil_error *err) {
    return plan_min(model, im, doc, 0.0, t, g, err);
}

/* Free tensors of plan t below bpw bits per weight, and the least bpw. */
static size_t count_below(const anvil_transcode *t, double bpw, double *least) {
    size_t n = 0;
    *least = 1e9;
    for (size_t i = 0; i < anvil_transcode_count(t); ++i) {
        const anvil_transcode_tensor *it = anvil_transcode_tensor_at(t, i);
        if (it->rule == NULL || strncmp(it->rule, "--target-", 9) != 0) continue;
        const double b = (double)it->dst_bytes * 8.0 / (double)it->src->n_elements;
        if (b < *least) *least = b;
        n += b < bpw;
    }
    return n;
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
    /* Version 2: the same reference points, low-bit ones that hurt 100x and
     * 1000x the reference (more than the line says): fewer low-bit types. */
    doc = sens_doc(gp, NULL, NULL);
    char *doc2 = sens_doc_v(gp, NULL, NULL, 100.0);
    anvil_transcode *t1 = NULL, *t2 = NULL;
    anvil_gguf *g1 = NULL, *g2 = NULL;
    CU_ASSERT_EQUAL_FATAL(plan_with(model, im, doc, &t1, &g1, &err), ANVIL_OK);
    CU_ASSERT_EQUAL_FATAL(plan_with(model, im, doc2, &t2, &g2, &err), ANVIL_OK);
    double l1 = 0.0, l2 = 0.0;
    const size_t n1 = count_below(t1, 3.0, &l1), n2 = count_below(t2, 3.0, &l2);
    fprintf(stderr, "\n  below 3 bpw: line %zu tensors (least %.3f bpw), curve %zu (least %.3f)\n", n1, l1, n2, l2);
    CU_ASSERT(n1 > 0);
    CU_ASSERT(n2 < n1);
    anvil_transcode_free(t1);
    anvil_gguf_close(g1);
    /* target_min_bpw: no choice below the floor, the budget still held */
    CU_ASSERT_EQUAL_FATAL(plan_min(model, im, doc2, 3.0, &t1, &g1, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(count_below(t1, 3.0, &l1), 0);
    CU_ASSERT(l1 >= 3.0);
    anvil_transcode_summary sm;
    anvil_transcode_get_summary(t1, &sm);
    CU_ASSERT(sm.out_file_bytes <= 2226976);
    /* The cache: the same plans, floored or not, measured once. */
    g_cache = anvil_quantize_cache_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(g_cache);
    for (int pass = 0; pass < 2; ++pass) {
        anvil_transcode *c0 = NULL, *c3 = NULL;
        anvil_gguf *h0 = NULL, *h3 = NULL;
        CU_ASSERT_EQUAL_FATAL(plan_min(model, im, doc2, 0.0, &c0, &h0, &err), ANVIL_OK);
        CU_ASSERT_EQUAL_FATAL(plan_min(model, im, doc2, 3.0, &c3, &h3, &err), ANVIL_OK);
        size_t d0 = 0, d3 = 0;
        for (size_t i = 0; i < anvil_transcode_count(c0); ++i) {
            d0 += anvil_transcode_tensor_at(c0, i)->dst_type != anvil_transcode_tensor_at(t2, i)->dst_type;
            d3 += anvil_transcode_tensor_at(c3, i)->dst_type != anvil_transcode_tensor_at(t1, i)->dst_type;
        }
        CU_ASSERT_EQUAL(d0, 0);
        CU_ASSERT_EQUAL(d3, 0);
        anvil_transcode_free(c0);
        anvil_transcode_free(c3);
        anvil_gguf_close(h0);
        anvil_gguf_close(h3);
    }
    anvil_quantize_cache_free(g_cache);
    g_cache = NULL;
    anvil_transcode_free(t1);
    anvil_gguf_close(g1);
    /* a floor no candidate set fits: refused, saying the smallest file */
    CU_ASSERT_EQUAL(plan_min(model, im, doc2, 8.0, &t1, &g1, &err), ANVIL_E_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "below the smallest file"));
    anvil_transcode_free(t1);
    anvil_gguf_close(g1);
    anvil_transcode_free(t2);
    anvil_gguf_close(g2);
    free(doc);
    free(doc2);
    /* A preset's plan as a plan file: every tensor it encodes, one line each. */
    anvil_quantize_options o;
    anvil_quantize_options_init(&o);
    o.ftype = anvil_quantize_preset_find("Q4_K_M")->ftype;
    o.imatrix = im;
    o.dry_run = 1;
    anvil_transcode *pp = NULL;
    char path[1024], out[1024];
    snprintf(out, sizeof out, "%s/p.gguf", test_tmpdir());
    snprintf(path, sizeof path, "%s/p.plan", test_tmpdir());
    CU_ASSERT_EQUAL_FATAL(anvil_quantize_plan(&pp, ctx(), gp, out, &o, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_quantize_write_plan(pp, path, &err), ANVIL_OK);
    size_t enc = 0, lines = 0, q4 = 0;
    for (size_t i = 0; i < anvil_transcode_count(pp); ++i) {
        const anvil_transcode_tensor *it = anvil_transcode_tensor_at(pp, i);
        enc += it->dst_type != it->src_type;
    }
    FILE *f = fopen(path, "r");
    char line[512];
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        lines++;
        q4 += strcmp(line, "^blk\\.0\\.attn_q\\.weight$=q4_K\n") == 0;
    }
    if (f != NULL) fclose(f);
    CU_ASSERT(enc > 20);
    CU_ASSERT_EQUAL(lines, enc);
    CU_ASSERT_EQUAL(q4, 1);
    anvil_transcode_free(pp);
    anvil_transcode_free(tp);
    anvil_gguf_close(gp);
    anvil_imatrix_free(im);
}

/* doc (a version 2 document of sens_doc_v) as version 3, each tensor's
 * stored errors from cache c; bad: every stored value replaced by one that
 * grows with the type's size (the key and types kept), so that a plan that
 * takes them chooses otherwise. */
static char *doc_v3(const char *doc, const anvil_gguf *g, const anvil_quantize_cache *c, int bad) {
    size_t cap = strlen(doc) + (1 << 20), len = 0;
    char *d = malloc(cap);
    const char *v = strstr(doc, "\"version\":2");
    if (d == NULL || v == NULL) {
        free(d);
        return NULL;
    }
    len += (size_t)snprintf(d, cap, "%.*s\"version\":3", (int)(v - doc), doc);
    const char *p = v + strlen("\"version\":2");
    for (;;) {
        const char *q = strstr(p, "{\"name\":\"");
        if (q == NULL) break;
        const char *ne = strchr(q + 9, '"');
        const char *end = strstr(q, "]}"); /* the entry's low array closes */
        if (ne == NULL || end == NULL) break;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(ne - (q + 9)), q + 9);
        len += (size_t)snprintf(d + len, cap - len, "%.*s", (int)(end + 1 - p), p);
        char ej[8192];
        const size_t el = anvil_quantize_cache_err_json(c, ctx(), name, ej, sizeof ej);
        CU_ASSERT(el > 0 && el < sizeof ej);
        char *re = strstr(ej, "\"relerr\": [");
        if (bad && re != NULL) {
            size_t n = 1;
            for (const char *x = re; *x; ++x) n += *x == ',';
            char *w = re + strlen("\"relerr\": [");
            for (size_t i = 0; i < n; ++i) w += sprintf(w, "%s%g", i ? ", " : "", 1e-3 * (double)(i + 1));
            sprintf(w, "]}");
        }
        len += (size_t)snprintf(d + len, cap - len, ",\"err\":%s", ej);
        p = end + 1;
    }
    snprintf(d + len, cap - len, "%s", p);
    (void)g;
    return d;
}

/* Tensors whose types differ between plans a and b. */
static size_t n_differ(const anvil_transcode *a, const anvil_transcode *b) {
    size_t n = 0;
    for (size_t i = 0; i < anvil_transcode_count(a); ++i)
        n += anvil_transcode_tensor_at(a, i)->dst_type != anvil_transcode_tensor_at(b, i)->dst_type;
    return n;
}

/* The plan's warning about stored errors measured on other inputs, or NULL. */
static const char *stale_warning(const anvil_transcode *t) {
    for (size_t i = 0; i < anvil_transcode_warning_count(t); ++i) {
        const char *w = strstr(anvil_transcode_warning_at(t, i), "stored errors of");
        if (w != NULL) return w;
    }
    return NULL;
}

/* Version 3: the errors --measure stores are taken only where their key is
 * the plan's (same model rows, importance matrix, --target-rows); taken,
 * the plan is the one measuring gives; stale, they are measured again. */
static void test_stored(void) {
    char model[1024], imp[1024];
    if (shared("quality/tiny-code-llama.f16.gguf", model, sizeof model) == NULL ||
        shared("quality/tiny-code-llama.imatrix.gguf", imp, sizeof imp) == NULL) {
        return;
    }
    anvil_error err;
    anvil_imatrix *im = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_imatrix_load(&im, imp, &err), ANVIL_OK);
    anvil_gguf *g0 = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_open(&g0, model, ctx(), 0, &err), ANVIL_OK);
    char *doc2 = sens_doc_v(g0, NULL, NULL, 100.0);
    /* the measuring plan (rows 32), its errors into the cache */
    anvil_quantize_cache *c = anvil_quantize_cache_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    g_cache = c;
    anvil_transcode *ta = NULL, *tb = NULL, *tx = NULL, *ty = NULL;
    anvil_gguf *ga = NULL, *gb = NULL, *gx = NULL, *gy = NULL;
    CU_ASSERT_EQUAL_FATAL(plan_with(model, im, doc2, &ta, &ga, &err), ANVIL_OK);
    g_cache = NULL;
    CU_ASSERT_EQUAL(anvil_quantize_cache_err_json(c, ctx(), "no.such.tensor", NULL, 0), 0);
    char *good = doc_v3(doc2, g0, c, 0), *bad = doc_v3(doc2, g0, c, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(good);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bad);
    CU_ASSERT_PTR_NOT_NULL(strstr(good, "\"err\":{\"key\": \""));
    /* the stored values: the same plan as measuring, no warning */
    CU_ASSERT_EQUAL_FATAL(plan_with(model, im, good, &tb, &gb, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(n_differ(ta, tb), 0);
    CU_ASSERT_PTR_NULL(stale_warning(tb));
    /* altered values under the right key are taken (so the check below can fail) */
    CU_ASSERT_EQUAL_FATAL(plan_with(model, im, bad, &tx, &gx, &err), ANVIL_OK);
    const size_t moved = n_differ(ta, tx);
    CU_ASSERT(moved > 0);
    CU_ASSERT_PTR_NULL(stale_warning(tx));
    anvil_transcode_free(tx), anvil_gguf_close(gx), tx = NULL, gx = NULL;
    anvil_transcode_free(tb), anvil_gguf_close(gb), tb = NULL, gb = NULL;
    /* another --target-rows: every key differs, the altered values are not
     * used: the plan a version 2 file gives, and the plan says so */
    g_rows = 16;
    CU_ASSERT_EQUAL_FATAL(plan_with(model, im, doc2, &tb, &gb, &err), ANVIL_OK);
    CU_ASSERT_EQUAL_FATAL(plan_with(model, im, bad, &tx, &gx, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(n_differ(tb, tx), 0);
    const char *w = stale_warning(tx);
    CU_ASSERT_PTR_NOT_NULL(w);
    CU_ASSERT_PTR_NOT_NULL(w != NULL ? strstr(w, "of 30 of 30 tensors were measured on another model") : NULL);
    g_rows = 32;
    anvil_transcode_free(tx), anvil_gguf_close(gx), tx = NULL, gx = NULL;
    /* another importance matrix (one entry left out): that tensor's key
     * differs, it alone is measured again */
    anvil_imatrix *im2 = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_imatrix_load(&im2, imp, &err), ANVIL_OK);
    const char *ex[] = { "blk.1.ffn_down.weight" };
    CU_ASSERT_EQUAL_FATAL(anvil_imatrix_filter(im2, NULL, 0, ex, 1, &err), ANVIL_OK);
    CU_ASSERT_EQUAL_FATAL(plan_with(model, im2, good, &ty, &gy, &err), ANVIL_OK);
    w = stale_warning(ty);
    CU_ASSERT_PTR_NOT_NULL(w != NULL ? strstr(w, "of 1 of 30 tensors") : NULL);
    anvil_transcode_free(ty), anvil_gguf_close(gy);
    anvil_imatrix_free(im2);
    anvil_transcode_free(tb), anvil_gguf_close(gb);
    anvil_transcode_free(ta), anvil_gguf_close(ga);
    anvil_quantize_cache_free(c);
    free(good);
    free(bad);
    free(doc2);
    anvil_gguf_close(g0);
    anvil_imatrix_free(im);
}

int main(void) {
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    CU_pSuite s = CU_add_suite("quantize_sens", NULL, NULL);
    CU_add_test(s, "sensitivity file: good and hostile", test_parse);
    CU_add_test(s, "sensitivity file version 2: low-bit points", test_parse_v2);
    CU_add_test(s, "sensitivity file version 3: stored errors", test_parse_v3);
    CU_add_test(s, "response curve through the points", test_curve);
    CU_add_test(s, "eval_layers restart = eval, set_weight restores", test_layers);
    CU_add_test(s, "tied embedding: one tensor, both roles", test_tied);
    CU_add_test(s, "target plan with measured weights", test_plan);
    CU_add_test(s, "stored errors: used only under their key", test_stored);
    const int rc = test_run_cunit();
    anvil_ctx_close(g_ctx);
    test_tmpdir_cleanup();
    return rc;
}
