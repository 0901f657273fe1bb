/* SPDX-License-Identifier: MIT */
/*
 * test_hf_vocab: the tokenizer KVs hf_vocab_write appends equal, key
 * for key (order among the tokenizer KVs, wire type, bytes), those
 * convert_hf_to_gguf.py wrote in each reference GGUF of
 * ../shared/testdata/hf; and bad tokenizer files are refused with an error
 * naming the file. Skipped (exit 77) when ../shared is absent.
 */
#include <CUnit/CUnit.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "anvil/gguf.h"
#include "hf_vocab.h"
#include "read_file.h"
#include "test_env.h"

typedef struct ref_case {
    const char *dir;
    const char *arch;
    const char *gguf;
} ref_case;

static const ref_case CASES[] = {
    { "hf/llama-spm-sharded", "LlamaForCausalLM", "hf/llama-spm-sharded.f16.gguf" },
    { "hf/llama3-bpe", "LlamaForCausalLM", "hf/llama3-bpe.f16.gguf" },
    { "hf/qwen2-bpe", "Qwen2ForCausalLM", "hf/qwen2-bpe.bf16.gguf" },
    { "hf/vocab-llama3", "LlamaForCausalLM", "hf/vocab-llama3.vocab.gguf" },
};

static int is_tok_key(const char *k) { return strncmp(k, "tokenizer.", 10) == 0; }

/* Indices of the tokenizer KVs of g, in order; returns how many. */
static size_t tok_kvs(const anvil_gguf *g, size_t *idx, size_t cap) {
    size_t n = 0;
    for (size_t i = 0; i < anvil_gguf_kv_count(g) && n < cap; ++i) {
        if (is_tok_key(anvil_gguf_kv_at(g, i)->key)) idx[n++] = i;
    }
    return n;
}

/* Where two raw KV values first differ, for the message. */
static size_t first_diff(const anvil_gguf_kv *a, const anvil_gguf_kv *b) {
    const size_t n = a->raw_size < b->raw_size ? a->raw_size : b->raw_size;
    const unsigned char *x = a->raw, *y = b->raw;
    for (size_t i = 0; i < n; ++i) {
        if (x[i] != y[i]) return i;
    }
    return n;
}

/* Compare the tokenizer KVs; returns the number of KVs compared equal (or
 * -1 on a difference, printed). */
static int compare(const anvil_gguf *ref, const anvil_gguf *got, const char *name) {
    size_t ri[64], gi[64];
    const size_t nr = tok_kvs(ref, ri, 64), ng = tok_kvs(got, gi, 64);
    int ok = 1;
    for (size_t i = 0; i < nr || i < ng; ++i) {
        const anvil_gguf_kv *a = i < nr ? anvil_gguf_kv_at(ref, ri[i]) : NULL;
        const anvil_gguf_kv *b = i < ng ? anvil_gguf_kv_at(got, gi[i]) : NULL;
        if (a == NULL || b == NULL || strcmp(a->key, b->key) != 0) {
            printf("\n  %s: KV %zu: reference %s, anvil %s", name, i, a ? a->key : "(none)", b ? b->key : "(none)");
            ok = 0;
            continue;
        }
        if (a->type != b->type || a->elem_type != b->elem_type || a->count != b->count ||
            a->raw_size != b->raw_size || memcmp(a->raw, b->raw, a->raw_size) != 0) {
            printf("\n  %s: %s differs: type %u/%u elem %u/%u count %llu/%llu size %zu/%zu, first byte "
                   "difference at %zu",
                   name, a->key, a->type, b->type, a->elem_type, b->elem_type, (unsigned long long)a->count,
                   (unsigned long long)b->count, a->raw_size, b->raw_size, first_diff(a, b));
            ok = 0;
        }
    }
    return ok ? (int)nr : -1;
}

/* Load dir's tokenizer, write it, compare with the reference GGUF at ref;
 * returns the number of tokenizer KVs found equal, -1 on any difference. */
static int check_case(const char *dir, const char *arch, const char *ref_path, const char *name) {
    anvil_error err = { 0 };
    anvil__hf_vocab *v = NULL;
    int rc = hf_vocab_load(dir, arch, &v, &err);
    if (rc != ANVIL_OK) {
        printf("\n  %s: %s", name, err.message);
        return -1;
    }
    anvil_gguf_writer *w = NULL;
    void *mem = NULL;
    size_t size = 0;
    anvil_gguf *got = NULL, *ref = NULL;
    int n = -1;
    rc = anvil_gguf_writer_new(&w, NULL, &err);
    if (rc == ANVIL_OK) rc = hf_vocab_write(v, w, &err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_write_memory(w, &mem, &size, &err);
    if (rc == ANVIL_OK) rc = anvil_gguf_open_buffer(&got, mem, size, NULL, &err);
    if (rc == ANVIL_OK) rc = anvil_gguf_open(&ref, ref_path, NULL, 0, &err);
    if (rc == ANVIL_OK) n = compare(ref, got, name);
    if (rc != ANVIL_OK) printf("\n  %s: %s", name, err.message);
    if (n > 0) {
        printf("\n  %s (%s, pre %s): %d tokenizer KVs equal, %llu tokens", name, hf_vocab_kind(v), hf_vocab_pre(v), n,
               (unsigned long long)hf_vocab_count(v));
    }
    anvil_gguf_close(ref);
    anvil_gguf_close(got);
    free(mem);
    anvil_gguf_writer_free(w);
    hf_vocab_free(v);
    return n;
}

static void test_reference_cases(void) {
    if (test_shared_path("hf") == NULL) {
        printf("\n  ../shared/testdata/hf absent: skipped");
        return;
    }
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; ++c) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", test_shared_path(CASES[c].dir));
        CU_ASSERT(check_case(dir, CASES[c].arch, test_shared_path(CASES[c].gguf), CASES[c].dir) > 0);
    }
}

/* ---- bad input ------------------------------------------------------------------ */

static void put_file(const char *dir, const char *name, const void *data, size_t n) {
    char p[8300];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* A fresh folder holding the named files of reference folder src. */
static const char *folder_from(const char *src, const char *sub, const char *const *names, size_t n) {
    static char dir[4200];
    snprintf(dir, sizeof dir, "%.4000s/%.100s", test_tmpdir(), sub);
    mkdir(dir, 0700);
    for (size_t i = 0; i < n; ++i) {
        char p[8300];
        snprintf(p, sizeof p, "%s/%s", test_shared_path(src), names[i]);
        size_t size = 0;
        void *data = test_read_file(p, &size);
        CU_ASSERT_PTR_NOT_NULL_FATAL(data);
        put_file(dir, names[i], data, size);
        free(data);
    }
    return dir;
}

/* load must fail with code and a message holding each of want[]. */
static void expect_error(const char *dir, const char *arch, int code, const char *w1, const char *w2) {
    anvil_error err = { 0 };
    anvil__hf_vocab *v = NULL;
    const int rc = hf_vocab_load(dir, arch, &v, &err);
    CU_ASSERT_EQUAL(rc, code);
    CU_ASSERT_PTR_NULL(v);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, w1));
    CU_ASSERT(w2 == NULL || strstr(err.message, w2) != NULL);
    if (rc != code || strstr(err.message, w1) == NULL || (w2 != NULL && strstr(err.message, w2) == NULL)) {
        printf("\n  got %d: %s", rc, err.message);
    }
    hf_vocab_free(v);
}

static void test_bad_tokenizer_json(void) {
    if (test_shared_path("hf") == NULL) return;
    static const char *const names[] = { "config.json", "tokenizer_config.json" };
    const char *dir = folder_from("hf/qwen2-bpe", "badjson", names, 2);
    const char *cut = "{\"model\": {\"type\": \"BPE\",";
    put_file(dir, "tokenizer.json", cut, strlen(cut));
    expect_error(dir, "Qwen2ForCausalLM", ANVIL_E_FORMAT, "badjson/tokenizer.json", "not valid JSON");
    const char *neg = "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": -1}}}";
    put_file(dir, "tokenizer.json", neg, strlen(neg));
    expect_error(dir, "Qwen2ForCausalLM", ANVIL_E_FORMAT, "badjson/tokenizer.json", "model.vocab id");
    expect_error(dir, "GPT2LMHeadModel", ANVIL_E_UNSUPPORTED, "GPT2LMHeadModel", "Qwen2ForCausalLM");
    char p[4300];
    snprintf(p, sizeof p, "%s/tokenizer.json", dir);
    remove(p);
    expect_error(dir, "Qwen2ForCausalLM", ANVIL_E_NOT_FOUND, "no tokenizer.model and no tokenizer.json", NULL);
    /* Kimi-K2's layout: named as such, not "no tokenizer" */
    put_file(dir, "tiktoken.model", "IQ== 0\n", 7);
    expect_error(dir, "Qwen2ForCausalLM", ANVIL_E_UNSUPPORTED, "badjson: a tiktoken tokenizer", "Kimi-K2");
    snprintf(p, sizeof p, "%s/tiktoken.model", dir);
    remove(p);
}

static void test_unknown_pre_tokenizer(void) {
    if (test_shared_path("hf") == NULL) return;
    static const char *const names[] = { "config.json", "tokenizer_config.json", "tokenizer.json" };
    const char *dir = folder_from("hf/qwen2-bpe", "badpre", names, 3);
    char p[4300];
    snprintf(p, sizeof p, "%s/tokenizer.json", dir);
    size_t n = 0;
    char *t = test_read_file(p, &n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    char *re = strstr(t, "\\\\p{N}|"); /* Qwen's digit class, as JSON text: made \\p{L} */
    CU_ASSERT_PTR_NOT_NULL_FATAL(re);
    memcpy(re, "\\\\p{L}|", 7);
    put_file(dir, "tokenizer.json", t, n);
    expect_error(dir, "Qwen2ForCausalLM", ANVIL_E_UNSUPPORTED, "badpre/tokenizer.json",
                 "not Llama 3's, Qwen 2's, Qwen3.5's or gpt-4o's");
    /* Qwen's regex without its NFC normalizer */
    memcpy(re, "\\\\p{N}|", 7);
    char *nfc = strstr(t, "\"NFC\"");
    CU_ASSERT_PTR_NOT_NULL_FATAL(nfc);
    memcpy(nfc, "\"NFD\"", 5);
    put_file(dir, "tokenizer.json", t, n);
    expect_error(dir, "Qwen2ForCausalLM", ANVIL_E_UNSUPPORTED, "badpre/tokenizer.json", "not NFC");
    free(t);
}

/* Every prefix of tokenizer.model (step 7) and single-byte damage: an error
 * naming the file, or a vocabulary; never a crash. */
static void test_truncated_tokenizer_model(void) {
    if (test_shared_path("hf") == NULL) return;
    static const char *const names[] = { "config.json", "tokenizer_config.json" };
    const char *dir = folder_from("hf/llama-spm-sharded", "badspm", names, 2);
    char p[4300];
    snprintf(p, sizeof p, "%s/tokenizer.model", test_shared_path("hf/llama-spm-sharded"));
    size_t n = 0;
    unsigned char *m = test_read_file(p, &n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    size_t refused = 0, cuts = 0;
    for (size_t len = 0; len < n; len += 7, ++cuts) {
        put_file(dir, "tokenizer.model", m, len);
        anvil_error err = { 0 };
        anvil__hf_vocab *v = NULL;
        const int rc = hf_vocab_load(dir, "LlamaForCausalLM", &v, &err);
        refused += rc != ANVIL_OK && strstr(err.message, "badspm/tokenizer.model") != NULL;
        hf_vocab_free(v);
    }
    CU_ASSERT_EQUAL(refused, cuts);
    printf("\n  %zu of %zu cuts of tokenizer.model refused naming it", refused, cuts);
    unsigned state = 12345;
    for (int i = 0; i < 300; ++i) {
        state = state * 1103515245u + 12345u;
        const size_t at = (state >> 8) % n;
        const unsigned char old = m[at];
        m[at] ^= (unsigned char)(1u << (state % 8));
        put_file(dir, "tokenizer.model", m, n);
        anvil_error err = { 0 };
        anvil__hf_vocab *v = NULL;
        if (hf_vocab_load(dir, "LlamaForCausalLM", &v, &err) != ANVIL_OK) {
            CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "tokenizer"));
        }
        hf_vocab_free(v);
        m[at] = old;
    }
    free(m);
}

/* A byte-level BPE folder with Llama 3's pre-tokenizer and the given parts. */
static const char *bpe_folder(const char *sub, uint64_t vocab_size, const char *vocab, const char *merges,
                              const char *added, const char *post, const char *tcfg) {
    static const char *const names[] = { "config.json" };
    const char *dir = folder_from("hf/llama3-bpe", sub, names, 1);
    char cfg[256];
    snprintf(cfg, sizeof cfg, "{\"architectures\": [\"LlamaForCausalLM\"], \"vocab_size\": %llu}",
             (unsigned long long)vocab_size);
    put_file(dir, "config.json", cfg, strlen(cfg));
    static char tj[8192];
    snprintf(tj, sizeof tj,
             "{\"normalizer\": null, \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": ["
             "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}"
             "\\\\p{N}]?\\\\p{L}+|\\\\p{N}{1,3}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|"
             "\\\\s+(?!\\\\S)|\\\\s+\"}, \"behavior\": \"Isolated\", \"invert\": false},"
             "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true, \"use_regex\": false}]},"
             " \"post_processor\": %s, \"decoder\": {\"type\": \"ByteLevel\"}, \"added_tokens\": %s,"
             " \"model\": {\"type\": \"BPE\", \"ignore_merges\": true, \"byte_fallback\": false,"
             " \"vocab\": %s, \"merges\": %s}}",
             post, added, vocab, merges);
    put_file(dir, "tokenizer.json", tj, strlen(tj));
    if (tcfg != NULL) put_file(dir, "tokenizer_config.json", tcfg, strlen(tcfg));
    return dir;
}

/* The value of key in what v writes (a fresh writer), as a GGUF view. */
static anvil_gguf *written(const anvil__hf_vocab *v, void **mem) {
    anvil_error err = { 0 };
    anvil_gguf_writer *w = NULL;
    anvil_gguf *g = NULL;
    size_t size = 0;
    *mem = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_writer_new(&w, NULL, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(hf_vocab_write(v, w, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_write_memory(w, mem, &size, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_open_buffer(&g, *mem, size, NULL, &err), ANVIL_OK);
    anvil_gguf_writer_free(w);
    return g;
}

static void test_hostile_shapes(void) {
    if (test_shared_path("hf") == NULL) return;
    const char *vocab = "{\"a\": 0, \"b\": 1, \"a b\": 2}";
    const char *added = "[{\"id\": 3, \"content\": \"<|x|>\", \"special\": false}]";
    const char *dir = bpe_folder("shape1", 4, vocab, "[\"a b\", [\"a\", \"b\"]]", added, "null", NULL);
    expect_error(dir, "LlamaForCausalLM", ANVIL_E_FORMAT, "shape1/tokenizer.json", "merge 1");
    dir = bpe_folder("shape2", 4, vocab, "[[\"a\", \"b\"]]", "[{\"id\": \"3\", \"content\": \"x\"}]", "null", NULL);
    expect_error(dir, "LlamaForCausalLM", ANVIL_E_FORMAT, "shape2/tokenizer.json", "added_tokens");
    dir = bpe_folder("shape3", 2, vocab, "[]", "[]", "null", NULL);
    expect_error(dir, "LlamaForCausalLM", ANVIL_E_FORMAT, "\"a b\" has id 2", "vocab_size 2");
    /* accepted: pair merges with a space, a post_processor that is no object,
     * a chat template that is no string, padding, a look-special added token */
    dir = bpe_folder("shape4", 6, vocab, "[[\"a b\", \"b\"]]", added, "\"oops\"",
                     "{\"chat_template\": 42, \"bos_token\": \"<|x|>\", \"add_bos_token\": true}");
    anvil_error err = { 0 };
    anvil__hf_vocab *v = NULL;
    CU_ASSERT_EQUAL_FATAL(hf_vocab_load(dir, "LlamaForCausalLM", &v, &err), ANVIL_OK);
    void *mem = NULL;
    anvil_gguf *g = written(v, &mem);
    anvil_gguf_array a;
    anvil_gguf_str m[2];
    CU_ASSERT_EQUAL(anvil_gguf_get_array(g, "tokenizer.ggml.merges", &a, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_array_strings(&a, m, 2), 1);
    CU_ASSERT(m[0].len == 6 && memcmp(m[0].ptr,
                                      "a\xc4\xa0"
                                      "b b",
                                      6) == 0);
    anvil_gguf_str t[6];
    CU_ASSERT_EQUAL(anvil_gguf_get_array(g, "tokenizer.ggml.tokens", &a, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_array_strings(&a, t, 6), 6);
    CU_ASSERT(t[3].len == 5 && memcmp(t[3].ptr, "<|x|>", 5) == 0);
    CU_ASSERT(t[5].len == 6 && memcmp(t[5].ptr, "[PAD5]", 6) == 0);
    CU_ASSERT_EQUAL(anvil_gguf_get_array(g, "tokenizer.ggml.token_type", &a, &err), ANVIL_OK);
    int32_t types[6];
    CU_ASSERT_EQUAL_FATAL(a.count, 6);
    memcpy(types, a.data, sizeof types);
    CU_ASSERT(types[0] == 1 && types[3] == 3 && types[4] == 5 && types[5] == 5);
    int64_t bos = -1;
    CU_ASSERT_EQUAL(anvil_gguf_get_i64(g, "tokenizer.ggml.bos_token_id", &bos, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(bos, 3);
    CU_ASSERT_PTR_NULL(anvil_gguf_find_kv(g, "tokenizer.chat_template"));
    CU_ASSERT_PTR_NOT_NULL(anvil_gguf_find_kv(g, "tokenizer.ggml.add_bos_token"));
    anvil_gguf_close(g);
    free(mem);
    hf_vocab_free(v);
}

/* test_hf_vocab --case DIR ARCH REF.gguf ...: the oracle cases
 * (hf_vocab_oracle.sh); exit 0 when every one is equal. */
static int run_cases(int argc, char **argv) {
    int bad = 0, n = 0;
    for (int i = 2; i + 2 < argc; i += 3, ++n) bad += check_case(argv[i], argv[i + 1], argv[i + 2], argv[i]) <= 0;
    printf("\nhf_vocab cases: %d of %d equal\n", n - bad, n);
    return bad == 0 && n > 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--case") == 0) return run_cases(argc, argv);
    if (test_shared_path("hf") == NULL) { /* every case reads its tokenizers */
        fprintf(stderr, "test_hf_vocab: ../shared/testdata/hf is missing: skipped\n");
        return 77;
    }
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    CU_pSuite s = CU_add_suite("hf_vocab", NULL, NULL);
    CU_add_test(s, "every reference conversion's tokenizer KVs", test_reference_cases);
    CU_add_test(s, "tokenizer.json that does not parse", test_bad_tokenizer_json);
    CU_add_test(s, "unknown pre-tokenizer", test_unknown_pre_tokenizer);
    CU_add_test(s, "truncated or damaged tokenizer.model", test_truncated_tokenizer_model);
    CU_add_test(s, "hostile tokenizer.json shapes", test_hostile_shapes);
    return test_run_cunit();
}
