/* SPDX-License-Identifier: MIT */
/*
 * host/src/model without the oracle:
 *  - golden: the trained test model's logits for 32 tokens against
 *    llama.cpp's (forward_logits.txt: per position its top-4 id:logit);
 *    every one within 2e-3 and the same first token where llama.cpp's
 *    top two are apart by more than that;
 *  - perplexity: the arithmetic of anvil_perplexity on the same model
 *    (a model against itself: KLD 0, top-1 1, the two perplexities equal);
 *  - base logits: a base saved to a file and read back gives the figures
 *    of the base evaluated (the same bits), and a file of other text,
 *    --ctx or length is refused naming what differs;
 *  - hostile input: token files with signs, letters, NULs, ids past
 *    INT32_MAX or the vocabulary; an unsupported architecture; too few tokens.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "anvil/model.h"
#include "test_env.h"

#define NPOS 32
#define NTOP 4

static anvil_ctx *ctx;
static anvil_model *model;
static int32_t tokens[NPOS];
static int top_id[NPOS][NTOP];
static float top_logit[NPOS][NTOP];

static int read_golden(void) {
    FILE *f = fopen(MODEL_GOLDEN, "r");
    if (f == NULL) return -1;
    char line[512];
    int ok = fgets(line, sizeof line, f) != NULL; /* comment */
    for (int i = 0; ok && i < NPOS; ++i) ok = fscanf(f, "%d", &tokens[i]) == 1;
    for (int i = 0; ok && i < NPOS; ++i) {
        for (int t = 0; ok && t < NTOP; ++t) ok = fscanf(f, "%d:%f", &top_id[i][t], &top_logit[i][t]) == 2;
    }
    fclose(f);
    return ok ? 0 : -1;
}

static void test_golden_logits(void) {
    anvil_model_info info = { .size = sizeof info };
    CU_ASSERT_EQUAL_FATAL(anvil_model_get_info(model, &info), ANVIL_OK);
    CU_ASSERT_STRING_EQUAL(info.arch, "llama");
    CU_ASSERT_EQUAL(info.n_vocab, 2048);
    CU_ASSERT_EQUAL(info.n_layer, 4);
    CU_ASSERT_EQUAL(info.add_bos, 1);
    float *logits = malloc((size_t)NPOS * info.n_vocab * sizeof *logits);
    CU_ASSERT_PTR_NOT_NULL_FATAL(logits);
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_model_eval(model, tokens, NPOS, logits, &err), ANVIL_OK);
    int bad = 0;
    for (int i = 0; i < NPOS; ++i) {
        const float *row = logits + (size_t)i * info.n_vocab;
        int arg = 0;
        for (uint32_t v = 1; v < info.n_vocab; ++v) arg = row[v] > row[arg] ? (int)v : arg;
        for (int t = 0; t < NTOP; ++t) {
            if (fabsf(row[top_id[i][t]] - top_logit[i][t]) > 2e-3f) ++bad;
        }
        if (top_logit[i][0] - top_logit[i][1] > 2e-3f && arg != top_id[i][0]) ++bad;
    }
    CU_ASSERT_EQUAL(bad, 0);
    free(logits);
}

static void test_self_perplexity(void) {
    int32_t tok[4 * NPOS];
    for (int i = 0; i < 4 * NPOS; ++i) tok[i] = tokens[i % NPOS];
    anvil_ppl_result r = { .size = sizeof r }, rb = { .size = sizeof rb };
    const anvil_ppl_opts o = { .size = sizeof o, .n_ctx = NPOS };
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_perplexity(model, NULL, tok, 4 * NPOS, &o, &r, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(r.chunks, 4);
    CU_ASSERT_EQUAL(r.count, 4 * (NPOS - 1 - NPOS / 2));
    CU_ASSERT(r.ppl > 1.0 && r.ppl < 2048.0);
    CU_ASSERT_EQUAL_FATAL(anvil_perplexity(model, model, tok, 4 * NPOS, &o, &rb, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(rb.has_base, 1);
    CU_ASSERT_DOUBLE_EQUAL(rb.kld, 0.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(rb.top1, 1.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(rb.ppl, rb.ppl_base, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(rb.ppl, r.ppl, r.ppl * 1e-5);
    /* too few tokens: the message says how many are needed */
    CU_ASSERT_EQUAL(anvil_perplexity(model, NULL, tok, 2 * NPOS - 1, &o, &r, &err), ANVIL_E_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "at least 64"));
    /* a token outside the vocabulary */
    static float out[8 * 2048];
    tok[5] = 5000;
    CU_ASSERT_EQUAL(anvil_model_eval(model, tok, 8, out, &err), ANVIL_E_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "token 5 is 5000"));
}

static int ppl_with_file(anvil_model *m, anvil_model *base, const int32_t *tok, int n_ctx, const char *file,
                         anvil_ppl_result *r, anvil_error *err) {
    const anvil_ppl_opts o = { .size = sizeof o, .n_ctx = n_ctx, .base_logits = file };
    *r = (anvil_ppl_result){ .size = sizeof *r };
    return anvil_perplexity(m, base, tok, 4 * NPOS, &o, r, err);
}

static void test_base_logits(void) {
    int32_t tok[4 * NPOS];
    for (int i = 0; i < 4 * NPOS; ++i) tok[i] = tokens[(i * 7) % NPOS];
    char file[1100];
    snprintf(file, sizeof file, "%s/base.blg", test_tmpdir());
    anvil_error err;
    anvil_ppl_result direct, saved, read;
    /* the same weights with f16 K/V: a small, non-zero divergence */
    const anvil_model_opts mo = { .size = sizeof mo, .kv_f16 = 1 };
    anvil_model *m16 = NULL;
    CU_ASSERT_EQUAL_FATAL(
        anvil_model_open(&m16, ctx, test_shared_path("quality/tiny-code-llama.f16.gguf"), &mo, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(ppl_with_file(m16, NULL, tok, NPOS, file, &read, &err), ANVIL_E_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "does not exist"));
    CU_ASSERT_EQUAL_FATAL(ppl_with_file(m16, model, tok, NPOS, NULL, &direct, &err), ANVIL_OK);
    CU_ASSERT_EQUAL_FATAL(ppl_with_file(m16, model, tok, NPOS, file, &saved, &err), ANVIL_OK);
    CU_ASSERT_EQUAL_FATAL(access(file, F_OK), 0);
    CU_ASSERT_EQUAL_FATAL(ppl_with_file(m16, NULL, tok, NPOS, file, &read, &err), ANVIL_OK);
    CU_ASSERT(direct.kld > 0.0);
    CU_ASSERT_EQUAL(read.has_base, 1);
    const anvil_ppl_result *v[2] = { &saved, &read };
    for (int i = 0; i < 2; ++i) {
        CU_ASSERT_EQUAL(memcmp(&v[i]->kld, &direct.kld, sizeof direct.kld), 0);
        CU_ASSERT_EQUAL(memcmp(&v[i]->kld_p99, &direct.kld_p99, sizeof direct.kld_p99), 0);
        CU_ASSERT_EQUAL(memcmp(&v[i]->ppl_base, &direct.ppl_base, sizeof direct.ppl_base), 0);
        CU_ASSERT_EQUAL(memcmp(&v[i]->top1, &direct.top1, sizeof direct.top1), 0);
        CU_ASSERT_EQUAL(v[i]->count, direct.count);
    }
    /* made from other options or text: refused, naming what differs */
    CU_ASSERT_EQUAL(ppl_with_file(m16, NULL, tok, NPOS / 2, file, &read, &err), ANVIL_E_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "--ctx 32"));
    tok[40] = tok[40] == 1 ? 2 : 1;
    CU_ASSERT_EQUAL(ppl_with_file(m16, NULL, tok, NPOS, file, &read, &err), ANVIL_E_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "other text"));
    tok[40] = tokens[(40 * 7) % NPOS];
    /* a truncated file, a file of something else */
    char out[256];
    CU_ASSERT_EQUAL(test_shell(out, sizeof out, "truncate -s -1 '%s'", file), 0);
    CU_ASSERT_EQUAL(ppl_with_file(m16, NULL, tok, NPOS, file, &read, &err), ANVIL_E_FORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "truncated"));
    CU_ASSERT_EQUAL(test_shell(out, sizeof out, "printf 'GGUF0000000000000000000000000000000000000000' > '%s'", file),
                    0);
    CU_ASSERT_EQUAL(ppl_with_file(m16, NULL, tok, NPOS, file, &read, &err), ANVIL_E_FORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "not an anvil base-logits file"));
    anvil_model_close(m16);
}

static void test_token_files(void) {
    static const struct {
        const char *text;
        int ok;
        size_t n;
        const char *msg;
    } cases[] = {
        { "1 2 3", 1, 3, NULL },
        { "\n 1\t2\r\n3 \n", 1, 3, NULL },
        { "", 1, 0, NULL },
        { "1 -2", 0, 0, "byte 2" },
        { "1 2x", 0, 0, "byte 3" },
        { "12a 3", 0, 0, "byte 2" },
        { "2047 2048", 0, 0, "outside the vocabulary" },
        { "99999999999999999999999", 0, 0, "outside the vocabulary" },
        { "1 +2", 0, 0, "not a digit" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        int32_t *tok = NULL;
        size_t n = 99;
        anvil_error err;
        const int rc = anvil_tokens_parse(cases[i].text, strlen(cases[i].text), 2048, &tok, &n, &err);
        CU_ASSERT_EQUAL(rc == ANVIL_OK, cases[i].ok);
        if (cases[i].ok) {
            CU_ASSERT_EQUAL(n, cases[i].n);
        } else {
            CU_ASSERT_PTR_NULL(tok);
            CU_ASSERT_PTR_NOT_NULL(strstr(err.message, cases[i].msg));
        }
        free(tok);
    }
    const char nul[] = { '1', ' ', '\0', '2' };
    int32_t *tok = NULL;
    size_t n = 0;
    anvil_error err;
    CU_ASSERT_EQUAL(anvil_tokens_parse(nul, sizeof nul, 0, &tok, &n, &err), ANVIL_E_FORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "0x00"));
}

static void test_refusals(void) {
    anvil_model *m = NULL;
    anvil_error err;
    /* the imatrix file is a GGUF without an architecture */
    const char *im = test_shared_path("quality/tiny-code-llama.imatrix.gguf");
    if (im != NULL) {
        CU_ASSERT_NOT_EQUAL(anvil_model_open(&m, ctx, im, NULL, &err), ANVIL_OK);
        CU_ASSERT_PTR_NULL(m);
        CU_ASSERT(strstr(err.message, "general.architecture") != NULL ||
                  strstr(err.message, "not supported") != NULL);
    }
    int32_t *tok = NULL;
    size_t n = 0;
    /* text goes through the model's SPM vocabulary: BOS first, then the
     * pieces (llama_tokenize gives 1 for BOS on this vocabulary) */
    CU_ASSERT_EQUAL(anvil_model_tokenize(model, "hello world", 11, &tok, &n, &err), ANVIL_OK);
    CU_ASSERT(n >= 2);
    if (n >= 1) CU_ASSERT_EQUAL(tok[0], 1);
    free(tok);
}

int main(void) {
    const char *path = test_shared_path("quality/tiny-code-llama.f16.gguf");
    if (path == NULL || read_golden() != 0) {
        fprintf(stderr,
                "test_model: the test model (../shared/testdata/quality) or the golden is missing: skipped\n");
        return 77;
    }
    char model_path[1024];
    snprintf(model_path, sizeof model_path, "%s", path);
    anvil_error err;
    if (anvil_ctx_open(&ctx, test_config_path(), &err) != ANVIL_OK ||
        anvil_model_open(&model, ctx, model_path, NULL, &err) != ANVIL_OK) {
        fprintf(stderr, "test_model: %s\n", err.message);
        return 1;
    }
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    CU_pSuite s = CU_add_suite("model", NULL, NULL);
    CU_add_test(s, "golden_logits", test_golden_logits);
    CU_add_test(s, "self_perplexity", test_self_perplexity);
    CU_add_test(s, "base_logits", test_base_logits);
    CU_add_test(s, "token_files", test_token_files);
    CU_add_test(s, "refusals", test_refusals);
    const int rc = test_run_cunit();
    test_tmpdir_cleanup();
    anvil_model_close(model);
    anvil_ctx_close(ctx);
    return rc;
}
