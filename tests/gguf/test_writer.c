/* SPDX-License-Identifier: MIT */
/* GGUF writer: exact bytes, wire widths, key order, dims trimming, padding,
 * raw copies, streaming == buffered, stream misuse, atomic replacement. */
#include <CUnit/CUnit.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "anvil/safetensors.h"

#include "gguf_test.h"
#include "test_env.h"

static anvil_gguf_writer *new_writer(void) {
    anvil_gguf_writer *w = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL(anvil_gguf_writer_new(&w, NULL, &err), ANVIL_OK);
    return w;
}

static uint8_t *to_memory(anvil_gguf_writer *w, size_t *n) {
    void *out = NULL;
    anvil_error err;
    const int rc = anvil_gguf_writer_write_memory(w, &out, n, &err);
    if (rc != ANVIL_OK) {
        fprintf(stderr, "\n  write_memory: %s\n", err.message);
    }
    CU_ASSERT_EQUAL(rc, ANVIL_OK);
    return out;
}

/* Files in dir whose name contains ".anvil-" (writer temp files). */
static int temp_files_in(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        n += strstr(e->d_name, ".anvil-") != NULL;
    }
    if (d != NULL) {
        closedir(d);
    }
    return n;
}

static void test_exact_bytes(void) {
    anvil_gguf_writer *w = new_writer();
    anvil_error err;
    const float data[2] = { 1.0f, 2.0f };
    const uint64_t ne[1] = { 2 };
    CU_ASSERT_EQUAL(anvil_gguf_writer_set_u8(w, "a", 1, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_set_i16(w, "b", -2, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_set_string(w, "c", "xy", &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_add_tensor(w, "t", ANVIL_TYPE_F32, 1, ne, data, 8, &err), ANVIL_OK);
    size_t n = 0;
    uint8_t *out = to_memory(w, &n);

    gb want = { 0 };
    gb_header(&want, 3, 1, 3);
    gb_str(&want, "a");
    gb_u32(&want, ANVIL_GGUF_TYPE_U8);
    gb_u8(&want, 1);
    gb_str(&want, "b");
    gb_u32(&want, ANVIL_GGUF_TYPE_I16);
    gb_u16(&want, 0xFFFE);
    gb_kv_str(&want, "c", "xy");
    gb_tensor(&want, "t", 1, ne, ANVIL_TYPE_F32, 0);
    gb_pad(&want, 32);
    gb_bytes(&want, data, 8);
    gb_pad(&want, 32); /* the last tensor is padded too */
    CU_ASSERT_EQUAL(n, want.n);
    CU_ASSERT(n == want.n && memcmp(out, want.p, n) == 0);
    uint64_t size = 0, header = 0;
    CU_ASSERT(anvil_gguf_writer_file_size(w, &size, &err) == ANVIL_OK && size == n);
    CU_ASSERT(anvil_gguf_writer_header_size(w, &header, &err) == ANVIL_OK && header == n - 32);
    free(out);
    gb_free(&want);
    anvil_gguf_writer_free(w);
}

static void test_wire_widths_and_order(void) {
    anvil_gguf_writer *w = new_writer();
    anvil_error err;
    anvil_gguf_writer_set_u8(w, "u8", 200, &err);
    anvil_gguf_writer_set_i8(w, "i8", -3, &err);
    anvil_gguf_writer_set_u16(w, "u16", 60000, &err);
    anvil_gguf_writer_set_i16(w, "i16", -300, &err);
    anvil_gguf_writer_set_u32(w, "u32", 4000000000u, &err);
    anvil_gguf_writer_set_i32(w, "i32", -70000, &err);
    anvil_gguf_writer_set_u64(w, "u64", UINT64_MAX, &err);
    anvil_gguf_writer_set_i64(w, "i64", INT64_MIN, &err);
    anvil_gguf_writer_set_f32(w, "f32", 0.25f, &err);
    anvil_gguf_writer_set_f64(w, "f64", -0.5, &err);
    anvil_gguf_writer_set_bool(w, "bool", 7, &err);
    const int32_t ints[3] = { -1, 0, 1 };
    anvil_gguf_writer_set_array(w, "arr_i32", ANVIL_GGUF_TYPE_I32, ints, 3, &err);
    const uint8_t bools[3] = { 0, 5, 1 };
    anvil_gguf_writer_set_array(w, "arr_bool", ANVIL_GGUF_TYPE_BOOL, bools, 3, &err);
    const char *strs[2] = { "x", "" };
    anvil_gguf_writer_set_string_array(w, "arr_str", strs, 2, &err);
    anvil_gguf_writer_set_array(w, "arr_empty", ANVIL_GGUF_TYPE_F64, NULL, 0, &err);
    /* NaN payloads survive: the bits are written, not the value. */
    uint32_t nan_bits = 0x7fc01234u;
    float nan;
    memcpy(&nan, &nan_bits, 4);
    anvil_gguf_writer_set_f32(w, "nan", nan, &err);
    /* Setting a key again moves it to the end (as ggml does). */
    CU_ASSERT_EQUAL(anvil_gguf_writer_set_u32(w, "u8", 5, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_kv_count(w), 16);

    size_t n = 0;
    uint8_t *out = to_memory(w, &n);
    anvil_gguf *g = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_open_buffer(&g, out, n, NULL, &err), ANVIL_OK);
    static const struct {
        const char *key;
        uint32_t type;
        size_t raw;
    } want[] = {
        { "i8", ANVIL_GGUF_TYPE_I8, 1 },
        { "u16", ANVIL_GGUF_TYPE_U16, 2 },
        { "i16", ANVIL_GGUF_TYPE_I16, 2 },
        { "u32", ANVIL_GGUF_TYPE_U32, 4 },
        { "i32", ANVIL_GGUF_TYPE_I32, 4 },
        { "u64", ANVIL_GGUF_TYPE_U64, 8 },
        { "i64", ANVIL_GGUF_TYPE_I64, 8 },
        { "f32", ANVIL_GGUF_TYPE_F32, 4 },
        { "f64", ANVIL_GGUF_TYPE_F64, 8 },
        { "bool", ANVIL_GGUF_TYPE_BOOL, 1 },
        { "arr_i32", ANVIL_GGUF_TYPE_ARRAY, 12 + 12 },
        { "arr_bool", ANVIL_GGUF_TYPE_ARRAY, 12 + 3 },
        { "arr_str", ANVIL_GGUF_TYPE_ARRAY, 12 + 9 + 8 },
        { "arr_empty", ANVIL_GGUF_TYPE_ARRAY, 12 },
        { "nan", ANVIL_GGUF_TYPE_F32, 4 },
        { "u8", ANVIL_GGUF_TYPE_U32, 4 },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; ++i) {
        const anvil_gguf_kv *kv = anvil_gguf_kv_at(g, i);
        CU_ASSERT_PTR_NOT_NULL_FATAL(kv);
        CU_ASSERT_STRING_EQUAL(kv->key, want[i].key);
        CU_ASSERT_EQUAL(kv->type, want[i].type);
        CU_ASSERT_EQUAL(kv->raw_size, want[i].raw);
    }
    int64_t i64 = 0;
    uint64_t u64 = 0;
    CU_ASSERT(anvil_gguf_get_i64(g, "i64", &i64, &err) == ANVIL_OK && i64 == INT64_MIN);
    CU_ASSERT(anvil_gguf_get_u64(g, "u64", &u64, &err) == ANVIL_OK && u64 == UINT64_MAX);
    CU_ASSERT(anvil_gguf_get_i64(g, "u8", &i64, &err) == ANVIL_OK && i64 == 5);
    CU_ASSERT_EQUAL(((const uint8_t *)anvil_gguf_find_kv(g, "bool")->raw)[0], 1);
    CU_ASSERT(memcmp((const uint8_t *)anvil_gguf_find_kv(g, "arr_bool")->raw + 12, "\0\1\1", 3) == 0);
    CU_ASSERT(memcmp(anvil_gguf_find_kv(g, "nan")->raw, "\x34\x12\xc0\x7f", 4) == 0);
    anvil_gguf_close(g);
    free(out);
    anvil_gguf_writer_free(w);
}

static void test_dims_trimmed(void) {
    anvil_gguf_writer *w = new_writer();
    anvil_error err;
    static const float zeros[64];
    const uint64_t a[4] = { 4, 3, 1, 1 }, b[4] = { 4, 1, 3, 1 }, c[4] = { 1, 1, 1, 1 }, d[2] = { 4, 0 };
    CU_ASSERT_EQUAL(anvil_gguf_writer_add_tensor(w, "a", ANVIL_TYPE_F32, 4, a, zeros, 48, &err), 0);
    CU_ASSERT_EQUAL(anvil_gguf_writer_add_tensor(w, "b", ANVIL_TYPE_F32, 4, b, zeros, 48, &err), 0);
    CU_ASSERT_EQUAL(anvil_gguf_writer_add_tensor(w, "c", ANVIL_TYPE_F32, 4, c, zeros, 4, &err), 0);
    CU_ASSERT_EQUAL(anvil_gguf_writer_add_tensor(w, "s", ANVIL_TYPE_F32, 0, NULL, zeros, 4, &err), 0);
    CU_ASSERT_EQUAL(anvil_gguf_writer_add_tensor(w, "d", ANVIL_TYPE_F32, 2, d, zeros, 0, &err), 0);
    size_t n = 0;
    uint8_t *out = to_memory(w, &n);
    anvil_gguf *g = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_open_buffer(&g, out, n, NULL, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_find_tensor(g, "a")->n_dims, 2);
    CU_ASSERT_EQUAL(anvil_gguf_find_tensor(g, "b")->n_dims, 3);
    CU_ASSERT_EQUAL(anvil_gguf_find_tensor(g, "c")->n_dims, 1);
    CU_ASSERT_EQUAL(anvil_gguf_find_tensor(g, "s")->n_dims, 1);
    /* A 0 dim is kept (ggml's trimming would lose it and mis-size the data). */
    CU_ASSERT_EQUAL(anvil_gguf_find_tensor(g, "d")->n_dims, 2);
    CU_ASSERT_EQUAL(anvil_gguf_find_tensor(g, "d")->ne[1], 0);
    /* Offsets: each tensor padded to 32. */
    CU_ASSERT_EQUAL(anvil_gguf_find_tensor(g, "b")->offset, 64);
    CU_ASSERT_EQUAL(anvil_gguf_find_tensor(g, "c")->offset, 128);
    CU_ASSERT_EQUAL(anvil_gguf_find_tensor(g, "s")->offset, 160);
    CU_ASSERT_EQUAL(anvil_gguf_find_tensor(g, "d")->offset, 192);
    CU_ASSERT_EQUAL(n % 32, 0);
    anvil_gguf_close(g);
    free(out);
    anvil_gguf_writer_free(w);
}

static void test_alignment_agrees(void) {
    anvil_gguf_writer *w = new_writer();
    anvil_error err;
    static const uint8_t bytes[100];
    const uint64_t ne[1] = { 25 };
    CU_ASSERT_EQUAL(anvil_gguf_writer_add_tensor(w, "x", ANVIL_TYPE_F32, 1, ne, bytes, 100, &err), 0);
    CU_ASSERT_EQUAL(anvil_gguf_writer_add_tensor(w, "y", ANVIL_TYPE_F32, 1, ne, bytes, 100, &err), 0);
    /* Set after the tensors: offsets are computed when written, so they
     * still follow it. */
    CU_ASSERT_EQUAL(anvil_gguf_writer_set_u32(w, ANVIL_GGUF_KEY_ALIGNMENT, 256, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_alignment(w), 256);
    CU_ASSERT_EQUAL(anvil_gguf_writer_set_u64(w, ANVIL_GGUF_KEY_ALIGNMENT, 64, &err), ANVIL_E_GGUF_KEY_TYPE);
    CU_ASSERT_EQUAL(anvil_gguf_writer_set_u32(w, ANVIL_GGUF_KEY_ALIGNMENT, 48, &err), ANVIL_E_GGUF_ALIGNMENT);
    CU_ASSERT_EQUAL(anvil_gguf_writer_set_u32(w, ANVIL_GGUF_KEY_ALIGNMENT, 2u << 20, &err), ANVIL_E_GGUF_ALIGNMENT);
    CU_ASSERT_EQUAL(anvil_gguf_writer_alignment(w), 256); /* refusals change nothing */
    size_t n = 0;
    uint8_t *out = to_memory(w, &n);
    anvil_gguf *g = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_open_buffer(&g, out, n, NULL, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_alignment(g), 256);
    CU_ASSERT_EQUAL(anvil_gguf_data_offset(g) % 256, 0);
    CU_ASSERT_EQUAL(anvil_gguf_find_tensor(g, "y")->offset, 256);
    CU_ASSERT_EQUAL(n % 256, 0);
    anvil_gguf_close(g);
    free(out);
    CU_ASSERT_EQUAL(anvil_gguf_writer_remove_key(w, ANVIL_GGUF_KEY_ALIGNMENT), 1);
    CU_ASSERT_EQUAL(anvil_gguf_writer_remove_key(w, ANVIL_GGUF_KEY_ALIGNMENT), 0);
    CU_ASSERT_EQUAL(anvil_gguf_writer_alignment(w), 32);
    anvil_gguf_writer_free(w);
}

/* The base file is canonical: reading it and writing it back gives the same
 * bytes; so does writing what was written (round trip is a fixed point). */
static void test_round_trip(void) {
    for (size_t i = 0; i < hostile_case_count; ++i) {
        if (hostile_cases[i].expect != ANVIL_OK) {
            continue;
        }
        gb b = { 0 };
        hostile_cases[i].build(&b);
        anvil_gguf *g = NULL;
        anvil_error err;
        CU_ASSERT_EQUAL_FATAL(anvil_gguf_open_buffer(&g, b.p, b.n, NULL, &err), ANVIL_OK);
        anvil_gguf_writer *w = new_writer();
        CU_ASSERT_EQUAL(anvil_gguf_writer_copy_from(w, g, ANVIL_GGUF_COPY_KVS | ANVIL_GGUF_COPY_TENSORS, &err),
                        ANVIL_OK);
        size_t n1 = 0, n2 = 0;
        uint8_t *out1 = to_memory(w, &n1);
        anvil_gguf_writer_free(w);
        anvil_gguf *g2 = NULL;
        CU_ASSERT_EQUAL_FATAL(anvil_gguf_open_buffer(&g2, out1, n1, NULL, &err), ANVIL_OK);
        w = new_writer();
        anvil_gguf_writer_copy_from(w, g2, ANVIL_GGUF_COPY_KVS | ANVIL_GGUF_COPY_TENSORS, &err);
        uint8_t *out2 = to_memory(w, &n2);
        CU_ASSERT(n1 == n2 && memcmp(out1, out2, n1) == 0);
        /* Canonical inputs come back unchanged, except v2 (written as v3)
         * and a header-only file (gains its padding). */
        const char *name = hostile_cases[i].name;
        if (strcmp(name, "v2_ok") != 0 && strcmp(name, "header_only") != 0 && strcmp(name, "scalar_0dims") != 0) {
            if (!(n1 == b.n && memcmp(out1, b.p, n1) == 0)) {
                fprintf(stderr, "\n  %s: re-emit differs from its canonical input\n", name);
                CU_FAIL("reemit of a canonical file differs");
            }
        }
        free(out1);
        free(out2);
        anvil_gguf_writer_free(w);
        anvil_gguf_close(g2);
        anvil_gguf_close(g);
        gb_free(&b);
    }
}

static void test_raw_copy_and_bools(void) {
    gb b = { 0 };
    gb_header(&b, 3, 0, 2);
    gb_str(&b, "flag");
    gb_u32(&b, ANVIL_GGUF_TYPE_BOOL);
    gb_u8(&b, 2);
    gb_str(&b, "flags");
    gb_u32(&b, ANVIL_GGUF_TYPE_ARRAY);
    gb_u32(&b, ANVIL_GGUF_TYPE_BOOL);
    gb_u64(&b, 2);
    gb_u8(&b, 0);
    gb_u8(&b, 9);
    anvil_gguf *g = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_open_buffer(&g, b.p, b.n, NULL, &err), ANVIL_OK);
    /* Raw: verbatim. */
    anvil_gguf_writer *w = new_writer();
    CU_ASSERT_EQUAL(anvil_gguf_writer_copy_kv(w, anvil_gguf_kv_at(g, 0), &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_copy_kv(w, anvil_gguf_kv_at(g, 1), &err), ANVIL_OK);
    size_t n = 0;
    uint8_t *out = to_memory(w, &n);
    CU_ASSERT(n >= b.n && memcmp(out, b.p, b.n) == 0);
    free(out);
    anvil_gguf_writer_free(w);
    /* Canonical: 0/1, as ggml re-writes bools. */
    w = new_writer();
    CU_ASSERT_EQUAL(anvil_gguf_writer_copy_from(w, g, ANVIL_GGUF_COPY_KVS | ANVIL_GGUF_COPY_CANONICAL_BOOL, &err),
                    ANVIL_OK);
    out = to_memory(w, &n);
    anvil_gguf *g2 = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_open_buffer(&g2, out, n, NULL, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(((const uint8_t *)anvil_gguf_kv_at(g2, 0)->raw)[0], 1);
    CU_ASSERT(memcmp((const uint8_t *)anvil_gguf_kv_at(g2, 1)->raw + 12, "\0\1", 2) == 0);
    anvil_gguf_close(g2);
    free(out);
    anvil_gguf_writer_free(w);
    anvil_gguf_close(g);
    gb_free(&b);
}

static void test_refusals(void) {
    anvil_gguf_writer *w = new_writer();
    anvil_error err;
    static const uint8_t bytes[4096];
    const uint64_t ne[2] = { 32, 2 }, bad_row[1] = { 33 }, huge[2] = { 1ull << 40, 1ull << 40 };
    CU_ASSERT_EQUAL(anvil_gguf_writer_set_u8(w, "", 1, &err), ANVIL_E_INVALID_ARG);
    CU_ASSERT_EQUAL(anvil_gguf_writer_set_u8(w, NULL, 1, &err), ANVIL_E_INVALID_ARG);
    char long_name[80];
    memset(long_name, 'n', 64);
    long_name[64] = '\0';
    CU_ASSERT_EQUAL(anvil_gguf_writer_add_tensor(w, long_name, ANVIL_TYPE_F32, 2, ne, bytes, 256, &err),
                    ANVIL_E_INVALID_ARG);
    CU_ASSERT(strstr(err.message, "63") != NULL);
    long_name[63] = '\0'; /* 63 bytes is ggml's limit and fine */
    CU_ASSERT_EQUAL(anvil_gguf_writer_add_tensor(w, long_name, ANVIL_TYPE_F32, 2, ne, bytes, 256, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_add_tensor(w, long_name, ANVIL_TYPE_F32, 2, ne, bytes, 256, &err),
                    ANVIL_E_GGUF_DUP_TENSOR);
    CU_ASSERT_EQUAL(anvil_gguf_writer_add_tensor(w, "q", ANVIL_TYPE_Q8_0, 1, bad_row, NULL, 0, &err),
                    ANVIL_E_GGUF_ROW_BLOCKS);
    CU_ASSERT_EQUAL(anvil_gguf_writer_add_tensor(w, "r", 4, 2, ne, NULL, 0, &err), ANVIL_E_GGUF_TENSOR_TYPE);
    CU_ASSERT(strstr(err.message, "Q4_2") != NULL);
    CU_ASSERT_EQUAL(anvil_gguf_writer_add_tensor(w, "t", 1500, 2, ne, NULL, 0, &err), ANVIL_E_GGUF_TENSOR_TYPE);
    CU_ASSERT(strstr(err.message, "plugin") != NULL);
    CU_ASSERT_EQUAL(anvil_gguf_writer_add_tensor(w, "h", ANVIL_TYPE_F32, 2, huge, NULL, 0, &err), ANVIL_E_GGUF_DIMS);
    CU_ASSERT_EQUAL(anvil_gguf_writer_add_tensor(w, "s", ANVIL_TYPE_F32, 2, ne, bytes, 255, &err),
                    ANVIL_E_GGUF_WRITER);
    CU_ASSERT(strstr(err.message, "256 bytes but 255") != NULL);
    CU_ASSERT_EQUAL(anvil_gguf_writer_add_tensor(w, "five", ANVIL_TYPE_F32, 5, ne, NULL, 0, &err), ANVIL_E_GGUF_DIMS);
    CU_ASSERT_EQUAL(anvil_gguf_writer_set_array(w, "k", ANVIL_GGUF_TYPE_STRING, bytes, 1, &err), ANVIL_E_INVALID_ARG);
    CU_ASSERT_EQUAL(anvil_gguf_writer_tensor_count(w), 1);
    /* A declared tensor without data cannot be written in buffered mode. */
    CU_ASSERT_EQUAL(anvil_gguf_writer_add_tensor(w, "later", ANVIL_TYPE_F32, 2, ne, NULL, 0, &err), ANVIL_OK);
    void *out = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL(anvil_gguf_writer_write_memory(w, &out, &n, &err), ANVIL_E_GGUF_WRITER);
    CU_ASSERT(strstr(err.message, "'later'") != NULL);
    anvil_gguf_writer_free(w);
}

/* Build the same content twice: with data (buffered) and declared only. */
static anvil_gguf_writer *content(int with_data, const uint8_t *blob) {
    anvil_gguf_writer *w = new_writer();
    anvil_error err;
    anvil_gguf_writer_set_string(w, "general.architecture", "test", &err);
    anvil_gguf_writer_set_u32(w, ANVIL_GGUF_KEY_ALIGNMENT, 64, &err);
    const uint64_t a[2] = { 64, 3 }, q[2] = { 256, 2 }, z[2] = { 0, 5 };
    anvil_gguf_writer_add_tensor(w, "a", ANVIL_TYPE_F16, 2, a, with_data ? blob : NULL, with_data ? 384 : 0, &err);
    anvil_gguf_writer_add_tensor(w, "q", ANVIL_TYPE_Q4_K, 2, q, with_data ? blob + 384 : NULL, with_data ? 288 : 0,
                                 &err);
    anvil_gguf_writer_add_tensor(w, "z", ANVIL_TYPE_BF16, 2, z, NULL, 0, &err);
    CU_ASSERT_EQUAL(anvil_gguf_writer_tensor_count(w), 3);
    return w;
}

static void test_stream_equals_buffered(void) {
    uint8_t blob[672];
    for (size_t i = 0; i < sizeof blob; ++i) {
        blob[i] = (uint8_t)(i * 37 + 11);
    }
    char buffered[4200], streamed[4200];
    snprintf(buffered, sizeof buffered, "%s/buffered.gguf", test_tmpdir());
    snprintf(streamed, sizeof streamed, "%s/streamed.gguf", test_tmpdir());
    anvil_error err;
    anvil_gguf_writer *w = content(1, blob);
    CU_ASSERT_EQUAL(anvil_gguf_writer_write_file(w, buffered, &err), ANVIL_OK);
    size_t nm = 0;
    uint8_t *mem = to_memory(w, &nm);
    anvil_gguf_writer_free(w);

    w = content(0, blob);
    CU_ASSERT_EQUAL(anvil_gguf_writer_stream_begin(w, streamed, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_set_u8(w, "late", 1, &err), ANVIL_E_STATE);
    CU_ASSERT_EQUAL(anvil_gguf_writer_stream_tensor(w, blob, 384, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_stream_tensor(w, blob + 384, 288, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_stream_tensor(w, NULL, 0, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_stream_finish(w, &err), ANVIL_OK);
    anvil_gguf_writer_free(w);

    size_t nb = 0, ns = 0;
    uint8_t *b = test_read_file(buffered, &nb);
    uint8_t *s = test_read_file(streamed, &ns);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT(nb == ns && memcmp(b, s, nb) == 0);
    CU_ASSERT(nb == nm && memcmp(b, mem, nb) == 0);
    CU_ASSERT_EQUAL(nb % 64, 0);
    CU_ASSERT_EQUAL(temp_files_in(test_tmpdir()), 0);
    free(b);
    free(s);
    free(mem);
}

static void test_stream_misuse_keeps_old_file(void) {
    uint8_t blob[672] = { 0 };
    char path[4200];
    snprintf(path, sizeof path, "%s/keep.gguf", test_tmpdir());
    CU_ASSERT_EQUAL_FATAL(write_whole(path, "old content", 11), 0);
    anvil_error err;

    /* Wrong length. */
    anvil_gguf_writer *w = content(0, blob);
    CU_ASSERT_EQUAL(anvil_gguf_writer_stream_begin(w, path, &err), ANVIL_OK);
    /* The temp file has no name while it is written where the OS allows
     * (O_TMPFILE), else one. */
    CU_ASSERT(temp_files_in(test_tmpdir()) <= 1);
    CU_ASSERT_EQUAL(anvil_gguf_writer_stream_tensor(w, blob, 383, &err), ANVIL_E_GGUF_WRITER);
    CU_ASSERT(strstr(err.message, "'a'") != NULL && strstr(err.message, "384") != NULL);
    CU_ASSERT_EQUAL(temp_files_in(test_tmpdir()), 0);
    CU_ASSERT_EQUAL(anvil_gguf_writer_stream_tensor(w, blob, 384, &err), ANVIL_E_STATE);
    anvil_gguf_writer_free(w);

    /* Finishing with one missing. */
    w = content(0, blob);
    CU_ASSERT_EQUAL(anvil_gguf_writer_stream_begin(w, path, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_stream_tensor(w, blob, 384, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_stream_tensor(w, blob, 288, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_stream_finish(w, &err), ANVIL_E_GGUF_WRITER);
    CU_ASSERT(strstr(err.message, "'z'") != NULL);
    anvil_gguf_writer_free(w);

    /* An extra tensor. */
    w = content(0, blob);
    CU_ASSERT_EQUAL(anvil_gguf_writer_stream_begin(w, path, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_stream_tensor(w, blob, 384, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_stream_tensor(w, blob, 288, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_stream_tensor(w, NULL, 0, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_stream_tensor(w, blob, 4, &err), ANVIL_E_GGUF_WRITER);
    CU_ASSERT(strstr(err.message, "extra tensor") != NULL);
    CU_ASSERT_EQUAL(anvil_gguf_writer_stream_finish(w, &err), ANVIL_E_STATE);

    /* Aborted on purpose, and freed mid-stream. */
    CU_ASSERT_EQUAL(anvil_gguf_writer_stream_begin(w, path, &err), ANVIL_OK);
    anvil_gguf_writer_stream_abort(w);
    CU_ASSERT_EQUAL(anvil_gguf_writer_stream_begin(w, path, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_stream_begin(w, path, &err), ANVIL_E_STATE);
    anvil_gguf_writer_free(w);

    size_t n = 0;
    uint8_t *p = test_read_file(path, &n);
    CU_ASSERT(p != NULL && n == 11 && memcmp(p, "old content", 11) == 0);
    free(p);
    CU_ASSERT_EQUAL(temp_files_in(test_tmpdir()), 0);

    /* A folder that does not exist: nothing is created anywhere. */
    char bad[4200];
    snprintf(bad, sizeof bad, "%s/no/such/dir/x.gguf", test_tmpdir());
    w = new_writer();
    CU_ASSERT_EQUAL(anvil_gguf_writer_write_file(w, bad, &err), ANVIL_E_IO);
    CU_ASSERT(strstr(err.message, "x.gguf") != NULL);
    anvil_gguf_writer_free(w);

    /* Success replaces the old file. */
    w = content(1, blob);
    CU_ASSERT_EQUAL(anvil_gguf_writer_write_file(w, path, &err), ANVIL_OK);
    anvil_gguf_writer_free(w);
    anvil_gguf *g = NULL;
    CU_ASSERT_EQUAL(anvil_gguf_open(&g, path, NULL, 0, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_tensor_count(g), 3);
    anvil_gguf_close(g);
}


/* Tensors larger than the 1 MiB write buffer go straight to the file,
 * between small ones that are buffered: the order must hold. */
static void test_large_tensors(void) {
    const size_t big = (3u << 20) + 12; /* f32 x (786435) */
    uint8_t *blob = malloc(big);
    CU_ASSERT_PTR_NOT_NULL_FATAL(blob);
    for (size_t i = 0; i < big; ++i) {
        blob[i] = (uint8_t)(i * 2654435761u >> 13);
    }
    anvil_gguf_writer *w = new_writer();
    anvil_error err;
    const uint64_t small[1] = { 5 }, large[1] = { big / 4 };
    CU_ASSERT_EQUAL(anvil_gguf_writer_add_tensor(w, "s0", ANVIL_TYPE_F32, 1, small, blob, 20, &err), 0);
    CU_ASSERT_EQUAL(anvil_gguf_writer_add_tensor(w, "big", ANVIL_TYPE_F32, 1, large, blob, big, &err), 0);
    CU_ASSERT_EQUAL(anvil_gguf_writer_add_tensor(w, "s1", ANVIL_TYPE_F32, 1, small, blob + 7, 20, &err), 0);
    char path[4200];
    snprintf(path, sizeof path, "%s/large.gguf", test_tmpdir());
    CU_ASSERT_EQUAL(anvil_gguf_writer_write_file(w, path, &err), ANVIL_OK);
    size_t nm = 0, nf = 0;
    uint8_t *mem = to_memory(w, &nm);
    uint8_t *file = test_read_file(path, &nf);
    CU_ASSERT(file != NULL && nf == nm && memcmp(file, mem, nm) == 0);
    anvil_gguf *g = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_open(&g, path, NULL, 0, &err), ANVIL_OK);
    CU_ASSERT(memcmp(anvil_gguf_find_tensor(g, "big")->data, blob, big) == 0);
    CU_ASSERT(memcmp(anvil_gguf_find_tensor(g, "s1")->data, blob + 7, 20) == 0);
    anvil_gguf_close(g);
    free(file);
    free(mem);
    free(blob);
    anvil_gguf_writer_free(w);
}

/* Outputs that are not regular files are written into, never renamed over
 * (a descriptor, /dev/null), or refused (a socket; a held part); inputs that
 * cannot be mapped (a FIFO) are refused at once instead of blocking. */
static void test_outputs_not_files(void) {
    uint8_t blob[672];
    for (size_t i = 0; i < sizeof blob; ++i) blob[i] = (uint8_t)(i * 7);
    anvil_error err;
    anvil_gguf_writer *w = content(1, blob);
    size_t want_n = 0;
    uint8_t *want = to_memory(w, &want_n);

    /* A pipe named by its descriptor: the file's bytes, in order. */
    int p[2];
    CU_ASSERT_FATAL(pipe(p) == 0);
    CU_ASSERT_FATAL(want_n < 65536); /* fits the pipe: no reader thread needed */
    char name[64];
    snprintf(name, sizeof name, "/dev/fd/%d", p[1]);
    CU_ASSERT_EQUAL(anvil_gguf_writer_write_file(w, name, &err), ANVIL_OK);
    close(p[1]);
    uint8_t *got = malloc(want_n + 1);
    size_t n = 0;
    ssize_t k;
    while ((k = read(p[0], got + n, want_n + 1 - n)) > 0) n += (size_t)k;
    close(p[0]);
    CU_ASSERT_EQUAL(n, want_n);
    CU_ASSERT(n == want_n && memcmp(got, want, n) == 0);
    free(got);
    free(want);
    CU_ASSERT_EQUAL(anvil_gguf_writer_write_file(w, "/dev/fd/999", &err), ANVIL_E_IO);
    CU_ASSERT(strstr(err.message, "not open") != NULL);

    /* /dev/null takes a stream, but a part of a set cannot be held. */
    struct stat st;
    if (stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode)) {
        CU_ASSERT_EQUAL(anvil_gguf_writer_write_file(w, "/dev/null", &err), ANVIL_OK);
        CU_ASSERT_EQUAL(anvil_gguf_writer_stream_begin(w, "/dev/null", &err), ANVIL_OK);
        CU_ASSERT_EQUAL(anvil_gguf_writer_stream_tensor(w, blob, 384, &err), ANVIL_OK);
        CU_ASSERT_EQUAL(anvil_gguf_writer_stream_tensor(w, blob, 288, &err), ANVIL_OK);
        CU_ASSERT_EQUAL(anvil_gguf_writer_stream_tensor(w, NULL, 0, &err), ANVIL_OK);
        CU_ASSERT_EQUAL(anvil_gguf_writer_stream_hold(w, &err), ANVIL_E_STATE);
        CU_ASSERT(strstr(err.message, "split set") != NULL);
        CU_ASSERT(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
    }

    /* A socket is refused and stays a socket. */
    char sock[512];
    snprintf(sock, sizeof sock, "%s/sock", test_tmpdir());
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    const int sfd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (sfd >= 0 && strlen(sock) < sizeof a.sun_path) {
        memcpy(a.sun_path, sock, strlen(sock) + 1);
        CU_ASSERT_FATAL(bind(sfd, (struct sockaddr *)&a, sizeof a) == 0);
        CU_ASSERT_EQUAL(anvil_gguf_writer_write_file(w, sock, &err), ANVIL_E_IO);
        CU_ASSERT(strstr(err.message, "is a socket") != NULL);
        CU_ASSERT(stat(sock, &st) == 0 && S_ISSOCK(st.st_mode));
        CU_ASSERT_EQUAL(anvil_file_write_atomic(sock, blob, 4, &err), ANVIL_E_IO);
        CU_ASSERT(stat(sock, &st) == 0 && S_ISSOCK(st.st_mode));
        unlink(sock);
    }
    if (sfd >= 0) close(sfd);
    anvil_gguf_writer_free(w);

    /* A FIFO as input: refused at once (nobody writes to it: an open
     * without O_NONBLOCK would wait forever). */
    char fifo[512];
    snprintf(fifo, sizeof fifo, "%s/fifo", test_tmpdir());
    CU_ASSERT_FATAL(mkfifo(fifo, 0600) == 0);
    anvil_gguf *g = NULL;
    CU_ASSERT_EQUAL(anvil_gguf_open(&g, fifo, NULL, 0, &err), ANVIL_E_IO);
    CU_ASSERT(strstr(err.message, "is a FIFO") != NULL && strstr(err.message, "copy it") != NULL);
    anvil_st *t = NULL;
    CU_ASSERT_EQUAL(anvil_st_open(&t, fifo, &err), ANVIL_E_IO);
    CU_ASSERT(strstr(err.message, "is a FIFO") != NULL);
    CU_ASSERT(stat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
    unlink(fifo);
}


void gguf_add_writer_tests(void) {
    CU_pSuite s = CU_add_suite("gguf_writer", NULL, NULL);
    CU_add_test(s, "exact bytes of a small file", test_exact_bytes);
    CU_add_test(s, "typed setters write exact widths; re-set moves last", test_wire_widths_and_order);
    CU_add_test(s, "trailing size-1 dims trimmed, 0 dims kept", test_dims_trimmed);
    CU_add_test(s, "general.alignment and padding agree", test_alignment_agrees);
    CU_add_test(s, "parse + re-emit is byte-identical", test_round_trip);
    CU_add_test(s, "raw copy verbatim; canonical bools", test_raw_copy_and_bools);
    CU_add_test(s, "refusals name what is wrong", test_refusals);
    CU_add_test(s, "streaming output == buffered output", test_stream_equals_buffered);
    CU_add_test(s, "stream misuse and failures keep the old file", test_stream_misuse_keeps_old_file);
    CU_add_test(s, "tensors larger than the write buffer", test_large_tensors);
    CU_add_test(s, "outputs and inputs that are not regular files", test_outputs_not_files);
}
