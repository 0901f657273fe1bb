/* SPDX-License-Identifier: MIT */
/* Reader: real files, the three ways in, accessors, conversion to f32. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "st_test.h"

static const anvil_st_tensor *find(const anvil_st *st, const char *name) {
    const anvil_st_tensor *t = anvil_st_find(st, name);
    CU_ASSERT_PTR_NOT_NULL(t);
    return t;
}

static void test_burn_batch_norm(void) {
    const char *path = st_data_path("burn-batch_norm2d.safetensors");
    if (path == NULL) {
        return;
    }
    anvil_st *st = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_st_open(&st, path, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(err.code, ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_st_count(st), 5);
    CU_ASSERT_EQUAL(anvil_st_header_size(st), 352);
    CU_ASSERT_EQUAL(anvil_st_data_size(st), 88);
    CU_ASSERT_FALSE(anvil_st_has_metadata(st));
    CU_ASSERT_EQUAL(anvil_st_metadata_count(st), 0);
    /* Data order: the 0-d I64 first. */
    const anvil_st_tensor *t0 = anvil_st_tensor_at(st, 0);
    CU_ASSERT_STRING_EQUAL(t0->name, "norm1.num_batches_tracked");
    CU_ASSERT_EQUAL(t0->dtype, ANVIL_ST_I64);
    CU_ASSERT_EQUAL(t0->rank, 0);
    CU_ASSERT_EQUAL(t0->n_elements, 1);
    CU_ASSERT_EQUAL(t0->size, 8);
    CU_ASSERT_EQUAL(t0->begin, 0);
    const unsigned char one[8] = { 1, 0, 0, 0, 0, 0, 0, 0 };
    CU_ASSERT(memcmp(t0->data, one, 8) == 0);
    const anvil_st_tensor *w = find(st, "norm1.weight");
    if (w != NULL) {
        CU_ASSERT_EQUAL(w->dtype, ANVIL_ST_F32);
        CU_ASSERT_EQUAL(w->rank, 1);
        CU_ASSERT_EQUAL(w->shape[0], 5);
        CU_ASSERT_EQUAL(w->begin, 68);
        CU_ASSERT_EQUAL(w->end, 88);
    }
    const anvil_st_tensor *b = find(st, "norm1.bias");
    if (b != NULL) {
        float v[5] = { 1, 1, 1, 1, 1 };
        CU_ASSERT_EQUAL(anvil_st_tensor_to_f32(b, v, 5, &err), ANVIL_OK);
        CU_ASSERT(v[0] == 0.0f && v[4] == 0.0f);
    }
    /* I64 does not convert: a clear error naming the tensor, never garbage. */
    float x = 42.0f;
    CU_ASSERT_EQUAL(anvil_st_tensor_to_f32(t0, &x, 1, &err), ANVIL_E_ST_CONVERSION);
    CU_ASSERT_EQUAL(err.code, ANVIL_E_ST_CONVERSION);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "\"norm1.num_batches_tracked\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "I64"));
    CU_ASSERT(x == 42.0f);
    CU_ASSERT_PTR_NULL(anvil_st_find(st, "norm1.missing"));
    CU_ASSERT_PTR_NULL(anvil_st_find(st, ""));
    CU_ASSERT_PTR_NULL(anvil_st_tensor_at(st, 5));
    anvil_st_close(st);
}

static void test_burn_boolean(void) {
    const char *path = st_data_path("burn-boolean.safetensors");
    if (path == NULL) {
        return;
    }
    anvil_st *st = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_st_open(&st, path, NULL), ANVIL_OK);
    CU_ASSERT_EQUAL_FATAL(anvil_st_count(st), 1);
    const anvil_st_tensor *t = anvil_st_tensor_at(st, 0);
    CU_ASSERT_STRING_EQUAL(t->name, "buffer");
    CU_ASSERT_EQUAL(t->dtype, ANVIL_ST_BOOL);
    CU_ASSERT_EQUAL(t->size, 3);
    const unsigned char want[3] = { 1, 0, 1 };
    CU_ASSERT(memcmp(t->data, want, 3) == 0);
    anvil_st_close(st);
}

static void test_hf_samples(void) {
    const char *path = st_data_path("hf-samples_overall.safetensors");
    if (path == NULL) {
        return;
    }
    anvil_st *st = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_st_open(&st, path, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_st_count(st), 9);
    CU_ASSERT_TRUE(anvil_st_has_metadata(st));
    CU_ASSERT_EQUAL(anvil_st_metadata_count(st), 1);
    CU_ASSERT_STRING_EQUAL(anvil_st_metadata_get(st, "test"), "a");
    CU_ASSERT_PTR_NULL(anvil_st_metadata_get(st, "absent"));
    const char *k = NULL, *v = NULL;
    CU_ASSERT_EQUAL(anvil_st_metadata_at(st, 0, &k, &v), ANVIL_OK);
    CU_ASSERT_STRING_EQUAL(k, "test");
    CU_ASSERT_STRING_EQUAL(v, "a");
    CU_ASSERT_EQUAL(anvil_st_metadata_at(st, 1, &k, &v), ANVIL_E_NOT_FOUND);

    static const struct {
        const char *name;
        anvil_st_dtype dtype;
    } want[] = { { "B", ANVIL_ST_U8 },  { "H", ANVIL_ST_U16 }, { "I", ANVIL_ST_U32 },
                 { "b", ANVIL_ST_I8 },  { "d", ANVIL_ST_F64 }, { "e", ANVIL_ST_F16 },
                 { "f", ANVIL_ST_F32 }, { "h", ANVIL_ST_I16 }, { "i", ANVIL_ST_I32 } };
    for (size_t i = 0; i < 9; i++) {
        const anvil_st_tensor *t = anvil_st_tensor_at(st, i); /* name order = data order here */
        CU_ASSERT_STRING_EQUAL(t->name, want[i].name);
        CU_ASSERT_EQUAL(t->dtype, want[i].dtype);
        CU_ASSERT_EQUAL(t->rank, 1);
        CU_ASSERT_EQUAL(t->shape[0], 6);
        CU_ASSERT_EQUAL(t->size, 6 * anvil_st_dtype_bits(t->dtype) / 8);
        CU_ASSERT_PTR_EQUAL(anvil_st_find(st, want[i].name), t);
    }
    const float expect[6] = { -3, -2, -1, 0, 1, 2 };
    float got[6];
    for (const char *const *n = (const char *const[]){ "e", "f", NULL }; *n; n++) {
        memset(got, 0, sizeof got);
        CU_ASSERT_EQUAL(anvil_st_tensor_to_f32(anvil_st_find(st, *n), got, 6, &err), ANVIL_OK);
        CU_ASSERT(memcmp(got, expect, sizeof got) == 0);
    }
    /* Wrong element count is refused. */
    CU_ASSERT_EQUAL(anvil_st_tensor_to_f32(anvil_st_find(st, "f"), got, 5, &err), ANVIL_E_BUFFER_TOO_SMALL);
    /* Integer and F64 tensors report "unsupported for conversion". */
    for (const char *const *n = (const char *const[]){ "B", "H", "I", "b", "d", "h", "i", NULL }; *n; n++) {
        CU_ASSERT_EQUAL(anvil_st_tensor_to_f32(anvil_st_find(st, *n), got, 6, &err), ANVIL_E_ST_CONVERSION);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "unsupported for conversion"));
    }
    /* Raw bytes are exact: U32 holds 2^32-3 first. */
    const unsigned char *u32 = anvil_st_find(st, "I")->data;
    CU_ASSERT(u32[0] == 0xFD && u32[1] == 0xFF && u32[2] == 0xFF && u32[3] == 0xFF);
    anvil_st_close(st);
}

static void test_peft_adapter(void) {
    const char *path = st_data_path("peft-gpt2-lora-adapter_model.safetensors");
    if (path == NULL) {
        return;
    }
    anvil_st *st = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_st_open(&st, path, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_st_count(st), 25);
    CU_ASSERT_STRING_EQUAL(anvil_st_metadata_get(st, "format"), "pt");
    const anvil_st_tensor *t = find(st, "base_model.model.score.weight");
    if (t != NULL) {
        CU_ASSERT_EQUAL(t->rank, 2);
        CU_ASSERT_EQUAL(t->shape[0], 6);
        CU_ASSERT_EQUAL(t->shape[1], 768);
        float *v = malloc(6 * 768 * sizeof *v);
        CU_ASSERT_EQUAL(anvil_st_tensor_to_f32(t, v, 6 * 768, &err), ANVIL_OK);
        CU_ASSERT(fabsf(v[0] - 0.05781818553805351f) == 0.0f);
        CU_ASSERT(fabsf(v[1] - -0.019028857350349426f) == 0.0f);
        free(v);
    }
    uint64_t total = 0;
    for (size_t i = 0; i < anvil_st_count(st); i++) {
        const anvil_st_tensor *x = anvil_st_tensor_at(st, i);
        CU_ASSERT_EQUAL(x->dtype, ANVIL_ST_F32);
        CU_ASSERT_EQUAL(x->begin, total);
        total = x->end;
    }
    CU_ASSERT_EQUAL(total, anvil_st_data_size(st));
    anvil_st_close(st);
}

/* parse borrows, parse_copy owns, open maps: all give the same view. */
static void test_three_ways_in(void) {
    const char *path = st_data_path("hf-samples_F16.safetensors");
    if (path == NULL) {
        return;
    }
    size_t size = 0;
    unsigned char *bytes = st_read_file(path, &size);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bytes);
    anvil_st *borrowed = NULL, *copied = NULL, *mapped = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_st_parse(&borrowed, bytes, size, NULL), ANVIL_OK);
    CU_ASSERT_EQUAL_FATAL(anvil_st_parse_copy(&copied, bytes, size, NULL), ANVIL_OK);
    CU_ASSERT_EQUAL_FATAL(anvil_st_open(&mapped, path, NULL), ANVIL_OK);
    const anvil_st_tensor *tb = anvil_st_find(borrowed, "e");
    const anvil_st_tensor *tc = anvil_st_find(copied, "e");
    const anvil_st_tensor *tm = anvil_st_find(mapped, "e");
    CU_ASSERT_FATAL(tb && tc && tm);
    /* Borrowed data points into the caller's bytes; the copy does not. */
    CU_ASSERT_PTR_EQUAL(tb->data, bytes + 8 + 83);
    CU_ASSERT((const unsigned char *)tc->data < bytes || (const unsigned char *)tc->data >= bytes + size);
    CU_ASSERT(memcmp(tb->data, tc->data, 12) == 0);
    CU_ASSERT(memcmp(tb->data, tm->data, 12) == 0);
    /* The copy survives the caller's buffer. */
    memset(bytes, 0xAA, size);
    free(bytes);
    float v[6];
    CU_ASSERT_EQUAL(anvil_st_tensor_to_f32(tc, v, 6, NULL), ANVIL_OK);
    CU_ASSERT(v[0] == -3.0f && v[5] == 2.0f);
    anvil_st_close(borrowed);
    anvil_st_close(copied);
    anvil_st_close(mapped);
}

static void test_open_errors(void) {
    anvil_st *st = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL(anvil_st_open(&st, "/nonexistent/x.safetensors", &err), ANVIL_E_IO);
    CU_ASSERT_PTR_NULL(st);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "/nonexistent/x.safetensors"));
    CU_ASSERT_EQUAL(anvil_st_open(&st, "/", &err), ANVIL_E_IO);
    CU_ASSERT_EQUAL(anvil_st_open(&st, "/dev/null", &err), ANVIL_E_IO); /* not regular */
    CU_ASSERT_EQUAL(anvil_st_open(NULL, "x", &err), ANVIL_E_INVALID_ARG);
    CU_ASSERT_EQUAL(anvil_st_parse(&st, NULL, 5, &err), ANVIL_E_INVALID_ARG);
    /* An empty buffer is simply too small. */
    CU_ASSERT_EQUAL(anvil_st_parse(&st, NULL, 0, &err), ANVIL_E_ST_TOO_SMALL);
    CU_ASSERT_EQUAL(anvil_st_parse_copy(&st, NULL, 0, &err), ANVIL_E_ST_TOO_SMALL);
    /* Closing NULL is harmless; accessors on NULL answer "nothing". */
    anvil_st_close(NULL);
    CU_ASSERT_EQUAL(anvil_st_count(NULL), 0);
    CU_ASSERT_PTR_NULL(anvil_st_find(NULL, "x"));
}

/* Edge cases upstream accepts: empty header object, scalars, zero-size
 * tensors sharing an offset, names needing escapes, padding of any JSON
 * whitespace, entries in any order. */
static void test_valid_edge_cases(void) {
    anvil_st *st = NULL;
    anvil_error err;
    size_t size;
    unsigned char *img = st_image("{}", NULL, 0, &size);
    CU_ASSERT_EQUAL(anvil_st_parse(&st, img, size, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_st_count(st), 0);
    CU_ASSERT_EQUAL(anvil_st_data_size(st), 0);
    anvil_st_close(st);
    free(img);

    const unsigned char data[6] = { 1, 2, 3, 4, 5, 6 };
    img = st_image("{\"z\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[6,6]},"
                   "\"b\":{\"shape\":[2],\"data_offsets\":[2,6],\"dtype\":\"F16\"},"
                   "\"e\\u00e9\\n\":{\"dtype\":\"U8\",\"shape\":[3,0,5],\"data_offsets\":[0,0]},"
                   "\"a\":{\"dtype\":\"I16\",\"shape\":[],\"data_offsets\":[0,2]},"
                   "\"__metadata__\":null} \t\r\n ",
                   data, sizeof data, &size);
    CU_ASSERT_EQUAL_FATAL(anvil_st_parse(&st, img, size, &err), ANVIL_OK);
    CU_ASSERT_EQUAL_FATAL(anvil_st_count(st), 4);
    CU_ASSERT_FALSE(anvil_st_has_metadata(st)); /* null counts as absent */
    /* Data order, ties broken by header order: "e\u00e9\n" [0,0], a [0,2], b, z. */
    CU_ASSERT_STRING_EQUAL(anvil_st_tensor_at(st, 0)->name, "e\xc3\xa9\n");
    CU_ASSERT_STRING_EQUAL(anvil_st_tensor_at(st, 1)->name, "a");
    CU_ASSERT_STRING_EQUAL(anvil_st_tensor_at(st, 2)->name, "b");
    CU_ASSERT_STRING_EQUAL(anvil_st_tensor_at(st, 3)->name, "z");
    const anvil_st_tensor *e = anvil_st_find(st, "e\xc3\xa9\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_EQUAL(e->rank, 3);
    CU_ASSERT_EQUAL(e->n_elements, 0);
    CU_ASSERT_EQUAL(e->size, 0);
    const anvil_st_tensor *a = anvil_st_find(st, "a");
    CU_ASSERT_EQUAL(a->rank, 0);
    CU_ASSERT_EQUAL(a->n_elements, 1);
    CU_ASSERT_PTR_EQUAL(anvil_st_find(st, "b")->data, img + size - 4);
    anvil_st_close(st);
    free(img);

    /* Only scalars: no dims at all. */
    const unsigned char eight[8] = { 7, 0, 0, 0, 0, 0, 0, 0 };
    img = st_image("{\"s\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[0,8]}}", eight, 8, &size);
    CU_ASSERT_EQUAL_FATAL(anvil_st_parse(&st, img, size, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_st_tensor_at(st, 0)->rank, 0);
    CU_ASSERT_EQUAL(anvil_st_tensor_at(st, 0)->n_elements, 1);
    CU_ASSERT_EQUAL(((const unsigned char *)anvil_st_tensor_at(st, 0)->data)[0], 7);
    anvil_st_close(st);
    free(img);

    img = st_image("{\"__metadata__\":{}}", NULL, 0, &size);
    CU_ASSERT_EQUAL_FATAL(anvil_st_parse(&st, img, size, &err), ANVIL_OK);
    CU_ASSERT_TRUE(anvil_st_has_metadata(st)); /* present, empty */
    CU_ASSERT_EQUAL(anvil_st_metadata_count(st), 0);
    anvil_st_close(st);
    free(img);
}

static void test_dtype_table(void) {
    static const char *names[ANVIL_ST_DTYPE_COUNT] = { "BOOL",        "F4",      "F6_E2M3", "F6_E3M2", "U8",
                                                       "I8",          "F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ",
                                                       "F8_E5M2FNUZ", "I16",     "U16",     "F16",     "BF16",
                                                       "I32",         "U32",     "F32",     "C64",     "F64",
                                                       "I64",         "U64" };
    static const unsigned bits[ANVIL_ST_DTYPE_COUNT] = { 8,  4,  6,  6,  8,  8,  8,  8,  8,  8,  8,
                                                         16, 16, 16, 16, 32, 32, 32, 64, 64, 64, 64 };
    for (int i = 0; i < ANVIL_ST_DTYPE_COUNT; i++) {
        CU_ASSERT_STRING_EQUAL(anvil_st_dtype_name((anvil_st_dtype)i), names[i]);
        CU_ASSERT_EQUAL(anvil_st_dtype_bits((anvil_st_dtype)i), bits[i]);
        anvil_st_dtype d = ANVIL_ST_DTYPE_COUNT;
        CU_ASSERT_EQUAL(anvil_st_dtype_from_name(names[i], &d), ANVIL_OK);
        CU_ASSERT_EQUAL(d, (anvil_st_dtype)i);
    }
    anvil_st_dtype d;
    CU_ASSERT_EQUAL(anvil_st_dtype_from_name("f32", &d), ANVIL_E_ST_DTYPE);
    CU_ASSERT_EQUAL(anvil_st_dtype_from_name("F8_E4M3FN", &d), ANVIL_E_ST_DTYPE);
    CU_ASSERT_PTR_NULL(anvil_st_dtype_name(ANVIL_ST_DTYPE_COUNT));
    CU_ASSERT_EQUAL(anvil_st_dtype_bits(ANVIL_ST_DTYPE_COUNT), 0);
}

/* F16 and BF16 conversion covers the special values exactly. */
static void test_float_conversion(void) {
    /* F16: 1, -2, 65504, smallest subnormal, +inf, -0; BF16: 1, -inf, 3.140625 */
    const unsigned char data[] = { 0x00, 0x3C, 0x00, 0xC0, 0xFF, 0x7B, 0x01, 0x00, 0x00,
                                   0x7C, 0x00, 0x80, 0x80, 0x3F, 0x80, 0xFF, 0x49, 0x40 };
    size_t size;
    unsigned char *img = st_image("{\"h\":{\"dtype\":\"F16\",\"shape\":[6],\"data_offsets\":[0,12]},"
                                  "\"g\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[12,18]}}",
                                  data, sizeof data, &size);
    anvil_st *st = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_st_parse(&st, img, size, NULL), ANVIL_OK);
    float h[6], g[3];
    CU_ASSERT_EQUAL(anvil_st_tensor_to_f32(anvil_st_find(st, "h"), h, 6, NULL), ANVIL_OK);
    CU_ASSERT(h[0] == 1.0f && h[1] == -2.0f && h[2] == 65504.0f);
    CU_ASSERT(h[3] == 0x1p-24f);
    CU_ASSERT(isinf(h[4]) && h[4] > 0);
    CU_ASSERT(h[5] == 0.0f && signbit(h[5]));
    CU_ASSERT_EQUAL(anvil_st_tensor_to_f32(anvil_st_find(st, "g"), g, 3, NULL), ANVIL_OK);
    CU_ASSERT(g[0] == 1.0f && isinf(g[1]) && g[1] < 0 && g[2] == 3.140625f);
    anvil_st_close(st);
    free(img);
}

void st_add_reader_tests(void) {
    CU_pSuite s = CU_add_suite("reader", NULL, NULL);
    CU_add_test(s, "burn batch_norm2d (0-d I64 + F32)", test_burn_batch_norm);
    CU_add_test(s, "burn boolean", test_burn_boolean);
    CU_add_test(s, "hf samples (9 dtypes, metadata)", test_hf_samples);
    CU_add_test(s, "peft gpt2 lora adapter", test_peft_adapter);
    CU_add_test(s, "three ways in", test_three_ways_in);
    CU_add_test(s, "open errors", test_open_errors);
    CU_add_test(s, "valid edge cases", test_valid_edge_cases);
    CU_add_test(s, "dtype table", test_dtype_table);
    CU_add_test(s, "float conversion", test_float_conversion);
}
