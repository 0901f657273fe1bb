/* SPDX-License-Identifier: MIT */
/*
 * The tokenizer without the oracle: golden ids llama.cpp's llama_tokenize
 * gave (tests/tokenize/golden.tsv, written by `tok-parity --golden`) for
 * SPM, Llama 3 and Qwen2 vocabularies, all four add_special/parse_special
 * combinations; and the API's contract: refusals that name what is
 * supported, the count-only call and a short buffer, the info struct's size
 * rule, a tokenizer read from an open GGUF outliving it, and a code point
 * above U+10FFFF refused in BPE text.
 */
#include <CUnit/CUnit.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/tokenize.h"
#include "read_file.h"
#include "test_env.h"

typedef struct cached {
    char name[128];
    anvil_tokenizer *t;
    int missing;
} cached;

static cached cache[16];
static size_t n_cache;

static anvil_tokenizer *vocab(const char *rel) {
    for (size_t i = 0; i < n_cache; ++i)
        if (strcmp(cache[i].name, rel) == 0) return cache[i].t;
    if (n_cache == 16) return NULL;
    cached *c = &cache[n_cache++];
    snprintf(c->name, sizeof c->name, "%s", rel);
    const char *path = test_data_path(rel);
    anvil_error err = { 0 };
    if (path == NULL) {
        c->missing = 1;
        printf("  (%s: not found, its golden lines are skipped)\n", rel);
        return NULL;
    }
    CU_ASSERT_EQUAL(anvil_tokenizer_open(&c->t, path, &err), ANVIL_OK);
    return c->t;
}

static int hexval(char c) { return c >= 'a' ? c - 'a' + 10 : c - '0'; }

static void test_golden(void) {
    size_t size = 0;
    char *text = test_read_file(test_source_path("tokenize/golden.tsv"), &size);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    size_t lines = 0, checked = 0, ids_total = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#') continue;
        ++lines;
        char *f[4] = { line, NULL, NULL, NULL };
        for (int k = 1; k < 4; ++k) {
            f[k] = strchr(f[k - 1], '\t');
            CU_ASSERT_PTR_NOT_NULL_FATAL(f[k]);
            *f[k]++ = '\0';
        }
        anvil_tokenizer *t = vocab(f[0]);
        if (t == NULL) continue;
        char bytes[64];
        const size_t len = strlen(f[2]) / 2;
        CU_ASSERT_FATAL(len <= sizeof bytes);
        for (size_t i = 0; i < len; ++i) bytes[i] = (char)(hexval(f[2][2 * i]) << 4 | hexval(f[2][2 * i + 1]));
        int32_t want[256], got[256];
        size_t nw = 0, ng = 0;
        for (char *p = f[3]; *p && nw < 256;) {
            want[nw++] = (int32_t)strtol(p, &p, 10);
            if (*p == ',') ++p;
        }
        anvil_error err = { 0 };
        CU_ASSERT_EQUAL(anvil_tokenize(t, bytes, len, (unsigned)atoi(f[1]), got, 256, &ng, &err), ANVIL_OK);
        CU_ASSERT_EQUAL(ng, nw);
        if (ng == nw && memcmp(got, want, nw * sizeof *got) == 0) {
            ++checked;
            ids_total += nw;
        } else {
            CU_FAIL("ids differ from llama.cpp's");
            printf("  differs: %s flags %s text %s\n", f[0], f[1], f[2]);
        }
    }
    printf("  golden: %zu lines, %zu checked equal (%zu ids)\n", lines, checked, ids_total);
    CU_ASSERT(lines >= 2000);
    CU_ASSERT(checked >= 400); /* at least the vocabularies committed in tests/data */
    free(text);
}

static void test_refusals(void) {
    anvil_tokenizer *t = NULL;
    anvil_error err = { 0 };
    const char *bert = test_shared_path("ggml-vocab-bert-bge.gguf");
    if (bert != NULL) {
        CU_ASSERT_EQUAL(anvil_tokenizer_open(&t, bert, &err), ANVIL_E_UNSUPPORTED);
        CU_ASSERT_PTR_NULL(t);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "'bert'"));
        CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "supported: 'llama' SentencePiece, 'gpt2'"));
    }
    const char *falcon = test_shared_path("gguf-v2_falcon-vocab_llamacpp.gguf");
    if (falcon != NULL) {
        CU_ASSERT_NOT_EQUAL(anvil_tokenizer_open(&t, falcon, &err), ANVIL_OK);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "falcon-vocab"));
    }
    CU_ASSERT_NOT_EQUAL(anvil_tokenizer_open(&t, "/nonexistent/model.gguf", &err), ANVIL_OK);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "/nonexistent/model.gguf"));
    /* A model without a vocabulary: a GGUF with no tokenizer keys. */
    anvil_gguf_writer *w = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_writer_new(&w, NULL, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_set_string(w, "general.architecture", "llama", &err), ANVIL_OK);
    char path[1024];
    snprintf(path, sizeof path, "%s/novocab.gguf", test_tmpdir());
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_writer_write_file(w, path, &err), ANVIL_OK);
    anvil_gguf_writer_free(w);
    CU_ASSERT_EQUAL(anvil_tokenizer_open(&t, path, &err), ANVIL_E_FORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "tokenizer.ggml.tokens"));
}

static void test_api(void) {
    const char *spm = test_data_path("ggml-vocab-llama-spm.gguf");
    CU_ASSERT_PTR_NOT_NULL_FATAL(spm);
    anvil_gguf *g = NULL;
    anvil_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_open(&g, spm, NULL, 0, &err), ANVIL_OK);
    anvil_tokenizer *t = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_tokenizer_from_gguf(&t, g, &err), ANVIL_OK);
    anvil_gguf_close(g); /* the tokenizer keeps nothing of it */
    anvil_tokenizer_info info = { .size = sizeof info };
    CU_ASSERT_EQUAL(anvil_tokenizer_info_get(t, &info), ANVIL_OK);
    CU_ASSERT_EQUAL(info.kind, ANVIL_VOCAB_SPM);
    CU_ASSERT_EQUAL(info.n_tokens, 32000);
    CU_ASSERT_EQUAL(info.bos, 1);
    CU_ASSERT_EQUAL(info.eos, 2);
    CU_ASSERT_EQUAL(info.add_bos, 1);
    CU_ASSERT_STRING_EQUAL(info.model, "llama");
    /* An older, smaller struct: only its fields are written. */
    anvil_tokenizer_info old;
    memset(&old, 0xEE, sizeof old);
    old.size = offsetof(anvil_tokenizer_info, model);
    CU_ASSERT_EQUAL(anvil_tokenizer_info_get(t, &old), ANVIL_OK);
    CU_ASSERT_EQUAL(old.kind, ANVIL_VOCAB_SPM);
    unsigned char pattern[sizeof old.model];
    memset(pattern, 0xEE, sizeof pattern);
    CU_ASSERT_EQUAL(memcmp(&old.model, pattern, sizeof pattern), 0);
    /* " Hello world" -> BOS, ▁Hello, ▁world (llama.cpp: 1 15043 3186). */
    size_t n = 0;
    CU_ASSERT_EQUAL(anvil_tokenize(t, "Hello world", 11, ANVIL_TOKENIZE_ADD_SPECIAL, NULL, 0, &n, &err),
                    ANVIL_E_BUFFER_TOO_SMALL);
    CU_ASSERT_EQUAL(n, 3);
    int32_t ids[3];
    CU_ASSERT_EQUAL(anvil_tokenize(t, "Hello world", 11, ANVIL_TOKENIZE_ADD_SPECIAL, ids, 2, &n, &err),
                    ANVIL_E_BUFFER_TOO_SMALL);
    CU_ASSERT_EQUAL(anvil_tokenize(t, "Hello world", 11, ANVIL_TOKENIZE_ADD_SPECIAL, ids, 3, &n, &err), ANVIL_OK);
    CU_ASSERT(n == 3 && ids[0] == 1 && ids[1] == 15043 && ids[2] == 3186);
    CU_ASSERT_EQUAL(anvil_tokenize(t, "", 0, 0, ids, 3, &n, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_EQUAL(anvil_tokenize(t, "x", 1, 0x80, ids, 3, &n, &err), ANVIL_E_INVALID_ARG);
    CU_ASSERT_EQUAL(anvil_tokenize(NULL, "x", 1, 0, ids, 3, &n, &err), ANVIL_E_INVALID_ARG);
    size_t len = 0;
    CU_ASSERT_PTR_NOT_NULL(anvil_tokenizer_token_text(t, 15043, &len));
    CU_ASSERT_EQUAL(len, 8); /* "▁Hello" */
    CU_ASSERT_PTR_NULL(anvil_tokenizer_token_text(t, 32000, &len));
    CU_ASSERT_PTR_NULL(anvil_tokenizer_token_text(t, -1, &len));
    anvil_tokenizer_free(t);
}

static void test_bpe_beyond_unicode(void) {
    const char *q = test_shared_path("hf/qwen2-bpe.bf16.gguf");
    if (q == NULL) return;
    anvil_tokenizer *t = NULL;
    anvil_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(anvil_tokenizer_open(&t, q, &err), ANVIL_OK);
    int32_t ids[64];
    size_t n = 0;
    /* F5 80 80 80 decodes (as llama.cpp reads it) to U+140000. */
    CU_ASSERT_EQUAL(anvil_tokenize(t, "a\xf5\x80\x80\x80", 5, 0, ids, 64, &n, &err), ANVIL_E_FORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "U+140000"));
    /* F8.. and a cut sequence are just invalid bytes: tokenized. */
    CU_ASSERT_EQUAL(anvil_tokenize(t, "a\xf8\x80\x80\x80\xf0\x9f", 7, 0, ids, 64, &n, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(n, 1 + 6 * 3); /* 'a', then U+FFFD (3 byte tokens) for each of the 6 bytes */
    anvil_tokenizer_free(t);
}

/* A tiny BPE vocabulary written here: pre-tokenizer pre, add_bos_token set,
 * no bos_token_id (the default, 11, is past its 6 tokens). */
static anvil_tokenizer *tiny_bpe(const char *pre, int with_merges, anvil_error *err, int *rc) {
    static const char *const tokens[] = { "a", "b", "ab", "\xc4\xa0", "<|x|>", "c" };
    static const char *const merges[] = { "a b" };
    const int32_t types[] = { 1, 1, 1, 1, 3, 1 };
    anvil_gguf_writer *w = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_writer_new(&w, NULL, err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_set_string(w, "tokenizer.ggml.model", "gpt2", err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_set_string(w, "tokenizer.ggml.pre", pre, err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_set_string_array(w, "tokenizer.ggml.tokens", tokens, 6, err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_set_array(w, "tokenizer.ggml.token_type", ANVIL_GGUF_TYPE_I32, types, 6, err),
                    ANVIL_OK);
    if (with_merges)
        CU_ASSERT_EQUAL(anvil_gguf_writer_set_string_array(w, "tokenizer.ggml.merges", merges, 1, err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", 1, err), ANVIL_OK);
    char path[1024];
    snprintf(path, sizeof path, "%s/tiny.gguf", test_tmpdir());
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_writer_write_file(w, path, err), ANVIL_OK);
    anvil_gguf_writer_free(w);
    anvil_tokenizer *t = NULL;
    *rc = anvil_tokenizer_open(&t, path, err);
    return t;
}

static void test_tiny_vocab(void) {
    anvil_error err = { 0 };
    int rc = 0;
    anvil_tokenizer *t = tiny_bpe("gpt-4o", 1, &err, &rc);
    CU_ASSERT_EQUAL(rc, ANVIL_E_UNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "tokenizer.ggml.pre 'gpt-4o'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "llama-bpe/llama3 and qwen2"));
    t = tiny_bpe("qwen2", 0, &err, &rc);
    CU_ASSERT_EQUAL(rc, ANVIL_E_FORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "tokenizer.ggml.merges"));
    t = tiny_bpe("qwen2", 1, &err, &rc);
    CU_ASSERT_EQUAL_FATAL(rc, ANVIL_OK);
    int32_t ids[16];
    size_t n = 0;
    /* Words "ab", " ab" (Ġab: no merge for "Ġ a", so Ġ + ab), then <|x|> (control, parsed) and "c". */
    CU_ASSERT_EQUAL(anvil_tokenize(t, "ab ab<|x|>c", 11, ANVIL_TOKENIZE_PARSE_SPECIAL, ids, 16, &n, &err), ANVIL_OK);
    const int32_t want[] = { 2, 3, 2, 4, 5 };
    CU_ASSERT(n == 5 && memcmp(ids, want, sizeof want) == 0);
    /* add_bos_token with no BOS id: the call that adds it fails, naming it. */
    CU_ASSERT_EQUAL(anvil_tokenize(t, "ab", 2, ANVIL_TOKENIZE_ADD_SPECIAL, ids, 16, &n, &err), ANVIL_E_FORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "BOS"));
    anvil_tokenizer_free(t);
}

int main(void) {
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    CU_pSuite s = CU_add_suite("tokenize", NULL, NULL);
    CU_add_test(s, "golden ids from llama_tokenize", test_golden);
    CU_add_test(s, "unsupported vocabularies and files refused", test_refusals);
    CU_add_test(s, "API: counts, short buffers, info size, from an open gguf", test_api);
    CU_add_test(s, "BPE: a code point above U+10FFFF refused", test_bpe_beyond_unicode);
    CU_add_test(s, "a written BPE vocabulary: pre-tokenizer, merges, missing BOS", test_tiny_vocab);
    const int rc = test_run_cunit();
    for (size_t i = 0; i < n_cache; ++i) anvil_tokenizer_free(cache[i].t);
    test_tmpdir_cleanup();
    return rc;
}
