/* SPDX-License-Identifier: MIT */
/* Writer: upstream's exact bytes, reemit of real files, refusals. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "st_test.h"

static unsigned char *serialize(anvil_st_writer *w, size_t *size) {
    void *out = NULL;
    anvil_error err;
    const int rc = anvil_st_writer_serialize(w, &out, size, &err);
    if (rc != ANVIL_OK) {
        fprintf(stderr, "\n  serialize: %s\n", err.message);
    }
    CU_ASSERT_EQUAL(rc, ANVIL_OK);
    return out;
}

/* 8-byte length + header + spaces to a multiple of 8 + data. */
static unsigned char *expected(const char *json, const void *data, size_t data_len, size_t *size) {
    size_t n = strlen(json);
    const size_t padded = (n + 7) / 8 * 8;
    char *h = malloc(padded + 1);
    memcpy(h, json, n);
    memset(h + n, ' ', padded - n);
    unsigned char *img = st_image_raw(padded, h, padded, data, data_len, size);
    free(h);
    return img;
}

static const float six[6] = { 0, 1, 2, 3, 4, 5 };

/* Upstream's own test vectors (tensor.rs: test_serialization, test_empty,
 * test_serialization_forced_alignement), byte for byte. */
static void test_upstream_vectors(void) {
    anvil_st_writer *w = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_st_writer_new(&w, NULL), ANVIL_OK);
    const uint64_t s123[3] = { 1, 2, 3 };
    CU_ASSERT_EQUAL(anvil_st_writer_add(w, "attn.0", ANVIL_ST_F32, s123, 3, six, 24, NULL), ANVIL_OK);
    size_t got_size, want_size;
    unsigned char *got = serialize(w, &got_size);
    unsigned char *want =
        expected("{\"attn.0\":{\"dtype\":\"F32\",\"shape\":[1,2,3],\"data_offsets\":[0,24]}}", six, 24, &want_size);
    CU_ASSERT_EQUAL(got[0], 64); /* upstream: no padding needed here */
    CU_ASSERT_EQUAL(got_size, want_size);
    CU_ASSERT(got != NULL && memcmp(got, want, want_size) == 0);
    free(got);
    free(want);
    anvil_st_writer_free(w);

    anvil_st_writer_new(&w, NULL);
    const uint64_t s1123[4] = { 1, 1, 2, 3 };
    anvil_st_writer_add(w, "attn0", ANVIL_ST_F32, s1123, 4, six, 24, NULL);
    got = serialize(w, &got_size);
    want =
        expected("{\"attn0\":{\"dtype\":\"F32\",\"shape\":[1,1,2,3],\"data_offsets\":[0,24]}}", six, 24, &want_size);
    CU_ASSERT_EQUAL(got[0], 72); /* 65 bytes of JSON + 7 spaces */
    CU_ASSERT_EQUAL(got_size, want_size);
    CU_ASSERT(got != NULL && memcmp(got, want, want_size) == 0);
    free(got);
    free(want);
    anvil_st_writer_free(w);

    /* Empty: "{}" and six spaces. */
    anvil_st_writer_new(&w, NULL);
    got = serialize(w, &got_size);
    const unsigned char empty[16] = { 8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' ' };
    CU_ASSERT_EQUAL(got_size, 16);
    CU_ASSERT(got != NULL && memcmp(got, empty, 16) == 0);
    free(got);
    /* With metadata {"framework":"pt"}: length 40. */
    CU_ASSERT_EQUAL(anvil_st_writer_set_metadata(w, "framework", "pt", NULL), ANVIL_OK);
    got = serialize(w, &got_size);
    want = expected("{\"__metadata__\":{\"framework\":\"pt\"}}", NULL, 0, &want_size);
    CU_ASSERT_EQUAL(got[0], 40);
    CU_ASSERT_EQUAL(got_size, want_size);
    CU_ASSERT(got != NULL && memcmp(got, want, want_size) == 0);
    free(got);
    free(want);
    anvil_st_writer_free(w);
}

/* Rewrite a file through reader + writer; returns the new image. */
static unsigned char *reemit(const unsigned char *bytes, size_t size, size_t *out_size) {
    anvil_st *st = NULL;
    anvil_error err;
    if (anvil_st_parse(&st, bytes, size, &err) != ANVIL_OK) {
        fprintf(stderr, "\n  parse: %s\n", err.message);
        CU_FAIL("parse failed");
        return NULL;
    }
    anvil_st_writer *w = NULL;
    anvil_st_writer_new(&w, NULL);
    CU_ASSERT_EQUAL(anvil_st_writer_add_all(w, st, &err), ANVIL_OK);
    unsigned char *out = serialize(w, out_size);
    anvil_st_writer_free(w);
    anvil_st_close(st);
    return out;
}

/* Files written by a current upstream come back byte for byte. */
static void test_reemit_identical(void) {
    const char *files[] = { "burn-batch_norm2d.safetensors", "burn-boolean.safetensors",
                            "peft-gpt2-lora-adapter_model.safetensors" };
    for (size_t i = 0; i < 3; i++) {
        const char *path = st_data_path(files[i]);
        if (path == NULL) {
            continue;
        }
        size_t size = 0, out_size = 0;
        unsigned char *bytes = st_read_file(path, &size);
        CU_ASSERT_PTR_NOT_NULL_FATAL(bytes);
        unsigned char *out = reemit(bytes, size, &out_size);
        CU_ASSERT_EQUAL(out_size, size);
        const int same = out != NULL && out_size == size && memcmp(out, bytes, size) == 0;
        if (!same) {
            fprintf(stderr, "\n  %s: reemit differs\n", files[i]);
        }
        CU_ASSERT_TRUE(same);
        free(out);
        free(bytes);
    }
}

static void assert_same_content(const anvil_st *a, const anvil_st *b) {
    CU_ASSERT_EQUAL_FATAL(anvil_st_count(a), anvil_st_count(b));
    for (size_t i = 0; i < anvil_st_count(a); i++) {
        const anvil_st_tensor *x = anvil_st_tensor_at(a, i);
        const anvil_st_tensor *y = anvil_st_find(b, x->name);
        CU_ASSERT_PTR_NOT_NULL_FATAL(y);
        CU_ASSERT_EQUAL(x->dtype, y->dtype);
        CU_ASSERT_EQUAL_FATAL(x->rank, y->rank);
        CU_ASSERT(x->rank == 0 || memcmp(x->shape, y->shape, x->rank * sizeof *x->shape) == 0);
        CU_ASSERT_EQUAL_FATAL(x->size, y->size);
        CU_ASSERT(x->size == 0 || memcmp(x->data, y->data, (size_t)x->size) == 0);
    }
    CU_ASSERT_EQUAL(anvil_st_has_metadata(a), anvil_st_has_metadata(b));
    CU_ASSERT_EQUAL_FATAL(anvil_st_metadata_count(a), anvil_st_metadata_count(b));
    for (size_t i = 0; i < anvil_st_metadata_count(a); i++) {
        const char *ka, *va, *kb, *vb;
        anvil_st_metadata_at(a, i, &ka, &va);
        anvil_st_metadata_at(b, i, &kb, &vb);
        CU_ASSERT_STRING_EQUAL(ka, kb);
        CU_ASSERT_STRING_EQUAL(va, vb);
    }
}

/* Files from older writers (name order, no padding) parse, and every
 * tensor's bytes, dtype, shape and the metadata survive the rewrite. */
static void test_reemit_older_files(void) {
    const char *files[] = { "hf-samples_overall.safetensors", "hf-samples_F16.safetensors" };
    for (size_t i = 0; i < 2; i++) {
        const char *path = st_data_path(files[i]);
        if (path == NULL) {
            continue;
        }
        size_t size = 0, out_size = 0, again_size = 0;
        unsigned char *bytes = st_read_file(path, &size);
        CU_ASSERT_PTR_NOT_NULL_FATAL(bytes);
        unsigned char *out = reemit(bytes, size, &out_size);
        CU_ASSERT_PTR_NOT_NULL_FATAL(out);
        anvil_st *a = NULL, *b = NULL;
        CU_ASSERT_EQUAL_FATAL(anvil_st_parse(&a, bytes, size, NULL), ANVIL_OK);
        CU_ASSERT_EQUAL_FATAL(anvil_st_parse(&b, out, out_size, NULL), ANVIL_OK);
        assert_same_content(a, b);
        CU_ASSERT_EQUAL(anvil_st_header_size(b) % 8, 0);
        /* The rewrite is a fixed point of the writer. */
        unsigned char *again = reemit(out, out_size, &again_size);
        CU_ASSERT(again != NULL && again_size == out_size && memcmp(again, out, out_size) == 0);
        anvil_st_close(a);
        anvil_st_close(b);
        free(again);
        free(out);
        free(bytes);
    }
    /* hf-samples_overall comes back in upstream's order: dtype descending. */
    const char *path = st_data_path("hf-samples_overall.safetensors");
    if (path != NULL) {
        size_t size = 0, out_size = 0;
        unsigned char *bytes = st_read_file(path, &size);
        unsigned char *out = reemit(bytes, size, &out_size);
        CU_ASSERT_PTR_NOT_NULL_FATAL(out);
        const char *order[] = { "\"d\":{\"dtype\":\"F64\"", "\"f\":{\"dtype\":\"F32\"", "\"I\":{\"dtype\":\"U32\"",
                                "\"i\":{\"dtype\":\"I32\"", "\"e\":{\"dtype\":\"F16\"", "\"H\":{\"dtype\":\"U16\"",
                                "\"h\":{\"dtype\":\"I16\"", "\"b\":{\"dtype\":\"I8\"",  "\"B\":{\"dtype\":\"U8\"" };
        char *h = malloc(out_size + 1);
        memcpy(h, out, out_size);
        h[out_size] = '\0';
        const char *prev = strstr(h + 8, "{\"__metadata__\":{\"test\":\"a\"},");
        CU_ASSERT_PTR_EQUAL(prev, h + 8);
        for (size_t i = 0; i < 9 && prev != NULL; i++) {
            const char *at = strstr(h + 8, order[i]);
            CU_ASSERT_PTR_NOT_NULL(at);
            CU_ASSERT(at != NULL && at > prev);
            prev = at;
        }
        CU_ASSERT_PTR_NOT_NULL(strstr(h + 8, "\"d\":{\"dtype\":\"F64\",\"shape\":[6],"
                                             "\"data_offsets\":[0,48]}"));
        free(h);
        free(out);
        free(bytes);
    }
}

static void test_sort_order(void) {
    anvil_st_writer *w = NULL;
    anvil_st_writer_new(&w, NULL);
    const unsigned char buf[64] = { 0 };
    const uint64_t one[1] = { 1 }, two[1] = { 2 };
    /* Added in scrambled order. */
    anvil_st_writer_add(w, "\xc3\xa9", ANVIL_ST_F32, one, 1, buf, 4, NULL);
    anvil_st_writer_add(w, "flag", ANVIL_ST_BOOL, one, 1, buf, 1, NULL);
    anvil_st_writer_add(w, "b", ANVIL_ST_F32, one, 1, buf, 4, NULL);
    anvil_st_writer_add(w, "u", ANVIL_ST_U64, one, 1, buf, 8, NULL);
    anvil_st_writer_add(w, "a0", ANVIL_ST_F32, one, 1, buf, 4, NULL);
    anvil_st_writer_add(w, "q", ANVIL_ST_F4, two, 1, buf, 1, NULL);
    anvil_st_writer_add(w, "B", ANVIL_ST_F32, one, 1, buf, 4, NULL);
    anvil_st_writer_add(w, "a", ANVIL_ST_F32, one, 1, buf, 4, NULL);
    anvil_st_writer_add(w, "c", ANVIL_ST_C64, one, 1, buf, 8, NULL);
    anvil_st_writer_add(w, "h", ANVIL_ST_BF16, one, 1, buf, 2, NULL);
    size_t size;
    unsigned char *out = serialize(w, &size);
    anvil_st *st = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_st_parse(&st, out, size, NULL), ANVIL_OK);
    const char *want[] = { "u", "c", "B", "a", "a0", "b", "\xc3\xa9", "h", "q", "flag" };
    CU_ASSERT_EQUAL_FATAL(anvil_st_count(st), 10);
    uint64_t at = 0;
    for (size_t i = 0; i < 10; i++) {
        const anvil_st_tensor *t = anvil_st_tensor_at(st, i);
        CU_ASSERT_STRING_EQUAL(t->name, want[i]);
        CU_ASSERT_EQUAL(t->begin, at);
        at = t->end;
    }
    anvil_st_close(st);
    free(out);
    anvil_st_writer_free(w);
}

static void test_escaping(void) {
    anvil_st_writer *w = NULL;
    anvil_st_writer_new(&w, NULL);
    const char *name = "q\"\\\n\x01\b\f\r\t/\xc3\xa9\x7f\x1f";
    const unsigned char byte = 7;
    const uint64_t one[1] = { 1 };
    CU_ASSERT_EQUAL(anvil_st_writer_add(w, name, ANVIL_ST_U8, one, 1, &byte, 1, NULL), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_st_writer_set_metadata(w, "k\"", "v\n\x02", NULL), ANVIL_OK);
    size_t size;
    unsigned char *out = serialize(w, &size);
    const char *json = "{\"__metadata__\":{\"k\\\"\":\"v\\n\\u0002\"},"
                       "\"q\\\"\\\\\\n\\u0001\\b\\f\\r\\t/\xc3\xa9\x7f\\u001f\":"
                       "{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}";
    size_t want_size;
    unsigned char *want = expected(json, &byte, 1, &want_size);
    CU_ASSERT_EQUAL(size, want_size);
    CU_ASSERT(out != NULL && size == want_size && memcmp(out, want, size) == 0);
    anvil_st *st = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_st_parse(&st, out, size, NULL), ANVIL_OK);
    CU_ASSERT_PTR_NOT_NULL(anvil_st_find(st, name));
    CU_ASSERT_STRING_EQUAL(anvil_st_metadata_get(st, "k\""), "v\n\x02");
    anvil_st_close(st);
    free(want);
    free(out);
    anvil_st_writer_free(w);
}

static void test_metadata_rules(void) {
    anvil_st_writer *w = NULL;
    anvil_st_writer_new(&w, NULL);
    anvil_st_writer_set_metadata(w, "k1", "v1", NULL);
    anvil_st_writer_set_metadata(w, "k2", "v2", NULL);
    anvil_st_writer_set_metadata(w, "k1", "v3", NULL); /* replaces in place */
    size_t size, want_size;
    unsigned char *out = serialize(w, &size);
    unsigned char *want = expected("{\"__metadata__\":{\"k1\":\"v3\",\"k2\":\"v2\"}}", NULL, 0, &want_size);
    CU_ASSERT(out != NULL && size == want_size && memcmp(out, want, size) == 0);
    free(out);
    free(want);
    anvil_st_writer_free(w);

    anvil_st_writer_new(&w, NULL);
    anvil_st_writer_keep_empty_metadata(w);
    out = serialize(w, &size);
    want = expected("{\"__metadata__\":{}}", NULL, 0, &want_size);
    CU_ASSERT(out != NULL && size == want_size && memcmp(out, want, size) == 0);
    /* ... and it reads back as present-but-empty, and reemits the same. */
    size_t again_size;
    unsigned char *again = reemit(out, size, &again_size);
    CU_ASSERT(again != NULL && again_size == size && memcmp(again, out, size) == 0);
    free(again);
    free(out);
    free(want);
    anvil_st_writer_free(w);
}

static void test_refusals(void) {
    anvil_st_writer *w = NULL;
    anvil_error err;
    anvil_st_writer_new(&w, NULL);
    const unsigned char buf[16] = { 0 };
    const uint64_t two[1] = { 2 }, three[1] = { 3 };
    const uint64_t huge[2] = { UINT64_C(1) << 40, UINT64_C(1) << 40 };
    CU_ASSERT_EQUAL(anvil_st_writer_add(w, "w", ANVIL_ST_F32, two, 1, buf, 4, &err), ANVIL_E_ST_SIZE_MISMATCH);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "\"w\""));
    CU_ASSERT_EQUAL(anvil_st_writer_add(w, "q", ANVIL_ST_F4, three, 1, buf, 2, &err), ANVIL_E_ST_SUBBYTE);
    CU_ASSERT_EQUAL(anvil_st_writer_add(w, "o", ANVIL_ST_U8, huge, 2, buf, 0, &err), ANVIL_E_ST_OVERFLOW);
    CU_ASSERT_EQUAL(anvil_st_writer_add(w, "d", (anvil_st_dtype)99, two, 1, buf, 2, &err), ANVIL_E_ST_DTYPE);
    CU_ASSERT_EQUAL(anvil_st_writer_add(w, "bad\xff", ANVIL_ST_U8, two, 1, buf, 2, &err), ANVIL_E_ST_UTF8);
    CU_ASSERT_EQUAL(anvil_st_writer_add(w, "__metadata__", ANVIL_ST_U8, two, 1, buf, 2, &err), ANVIL_E_INVALID_ARG);
    CU_ASSERT_EQUAL(anvil_st_writer_add(w, "n", ANVIL_ST_U8, two, 1, NULL, 2, &err), ANVIL_E_INVALID_ARG);
    CU_ASSERT_EQUAL(anvil_st_writer_set_metadata(w, "k", "\xc0\x80", &err), ANVIL_E_ST_UTF8);
    /* Nothing refused was kept. */
    size_t size;
    unsigned char *out = serialize(w, &size);
    CU_ASSERT_EQUAL(size, 16);
    free(out);
    /* Duplicate names are refused when the file is laid out. */
    CU_ASSERT_EQUAL(anvil_st_writer_add(w, "dup", ANVIL_ST_U8, two, 1, buf, 2, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_st_writer_add(w, "dup", ANVIL_ST_I8, two, 1, buf, 2, &err), ANVIL_OK);
    void *img = NULL;
    CU_ASSERT_EQUAL(anvil_st_writer_serialize(w, &img, &size, &err), ANVIL_E_DUPLICATE);
    CU_ASSERT_PTR_NULL(img);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "\"dup\""));
    anvil_st_writer_free(w);
    anvil_st_writer_free(NULL);
}

/* Every upstream dtype round-trips as raw bytes; only F32/F16/BF16 convert. */
static void test_all_dtypes_raw(void) {
    anvil_st_writer *w = NULL;
    anvil_st_writer_new(&w, NULL);
    unsigned char pattern[ANVIL_ST_DTYPE_COUNT][64];
    const uint64_t eight[1] = { 8 };
    for (int d = 0; d < ANVIL_ST_DTYPE_COUNT; d++) {
        const uint64_t bytes = 8 * anvil_st_dtype_bits((anvil_st_dtype)d) / 8;
        for (uint64_t i = 0; i < bytes; i++) {
            pattern[d][i] = (unsigned char)(d * 31 + (int)i * 7 + 1);
        }
        CU_ASSERT_EQUAL(anvil_st_writer_add(w, anvil_st_dtype_name((anvil_st_dtype)d), (anvil_st_dtype)d, eight, 1,
                                            pattern[d], bytes, NULL),
                        ANVIL_OK);
    }
    size_t size;
    unsigned char *out = serialize(w, &size);
    anvil_st *st = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_st_parse(&st, out, size, NULL), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_st_count(st), ANVIL_ST_DTYPE_COUNT);
    for (int d = 0; d < ANVIL_ST_DTYPE_COUNT; d++) {
        const anvil_st_tensor *t = anvil_st_find(st, anvil_st_dtype_name((anvil_st_dtype)d));
        CU_ASSERT_PTR_NOT_NULL_FATAL(t);
        CU_ASSERT_EQUAL(t->dtype, (anvil_st_dtype)d);
        CU_ASSERT_EQUAL(t->n_elements, 8);
        CU_ASSERT_EQUAL(t->size, anvil_st_dtype_bits((anvil_st_dtype)d));
        CU_ASSERT(memcmp(t->data, pattern[d], (size_t)t->size) == 0);
        float f[8];
        const int rc = anvil_st_tensor_to_f32(t, f, 8, NULL);
        const int converts = d == ANVIL_ST_F32 || d == ANVIL_ST_F16 || d == ANVIL_ST_BF16;
        CU_ASSERT_EQUAL(rc, converts ? ANVIL_OK : ANVIL_E_ST_CONVERSION);
    }
    /* Descending dtype order: U64 first, BOOL last. */
    CU_ASSERT_EQUAL(anvil_st_tensor_at(st, 0)->dtype, ANVIL_ST_U64);
    CU_ASSERT_EQUAL(anvil_st_tensor_at(st, ANVIL_ST_DTYPE_COUNT - 1)->dtype, ANVIL_ST_BOOL);
    anvil_st_close(st);
    free(out);
    anvil_st_writer_free(w);
}

void st_add_writer_tests(void) {
    CU_pSuite s = CU_add_suite("writer", NULL, NULL);
    CU_add_test(s, "upstream test vectors", test_upstream_vectors);
    CU_add_test(s, "reemit identical (burn, peft)", test_reemit_identical);
    CU_add_test(s, "reemit older files (hf samples)", test_reemit_older_files);
    CU_add_test(s, "sort order", test_sort_order);
    CU_add_test(s, "string escaping", test_escaping);
    CU_add_test(s, "metadata rules", test_metadata_rules);
    CU_add_test(s, "refusals", test_refusals);
    CU_add_test(s, "all dtypes raw", test_all_dtypes_raw);
}
