/* SPDX-License-Identifier: MIT */
/* Hostile input: every validation rule, each with its own status and a
 * message naming the tensor. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "st_test.h"

static unsigned char zeros[64];

/* Expect `code` for header+data, and (when given) `needle` in the message. */
static void expect(const char *header, size_t data_len, int code, const char *needle) {
    anvil_error err;
    memset(&err, 0, sizeof err);
    const int rc = st_header_status(header, zeros, data_len, &err);
    if (rc != code || (needle != NULL && strstr(err.message, needle) == NULL)) {
        fprintf(stderr, "\n  header %s\n  -> %d (%s), want %d with [%s]\n", header, rc, err.message, code,
                needle ? needle : "");
    }
    CU_ASSERT_EQUAL(rc, code);
    if (needle != NULL) {
        CU_ASSERT_PTR_NOT_NULL(strstr(err.message, needle));
    }
}

#define T(name, dtype, shape, b, e) \
    "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":[" #b "," #e "]}"

static void test_too_small(void) {
    anvil_error err;
    const unsigned char seven[7] = { 2, 0, 0, 0, 0, 0, 0 };
    CU_ASSERT_EQUAL(st_parse_status(seven, 7, &err), ANVIL_E_ST_TOO_SMALL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "7 bytes"));
    CU_ASSERT_EQUAL(st_parse_status(seven, 0, &err), ANVIL_E_ST_TOO_SMALL);
    CU_ASSERT_EQUAL(st_parse_status(seven, 1, &err), ANVIL_E_ST_TOO_SMALL);
}

static void test_header_too_large(void) {
    anvil_error err;
    size_t size;
    unsigned char *img = st_image_raw(100000001ull, "{}", 2, NULL, 0, &size);
    CU_ASSERT_EQUAL(st_parse_status(img, size, &err), ANVIL_E_ST_HEADER_TOO_LARGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "100000001"));
    free(img);
    img = st_image_raw(UINT64_MAX, "{}", 2, NULL, 0, &size);
    CU_ASSERT_EQUAL(st_parse_status(img, size, &err), ANVIL_E_ST_HEADER_TOO_LARGE);
    free(img);
    /* Exactly the limit is not "too large" (here: past the end). */
    img = st_image_raw(100000000ull, "{}", 2, NULL, 0, &size);
    CU_ASSERT_EQUAL(st_parse_status(img, size, &err), ANVIL_E_ST_HEADER_PAST_END);
    free(img);
}

static void test_header_past_end(void) {
    anvil_error err;
    size_t size;
    unsigned char *img = st_image_raw(3, "{}", 2, NULL, 0, &size);
    CU_ASSERT_EQUAL(st_parse_status(img, size, &err), ANVIL_E_ST_HEADER_PAST_END);
    free(img);
    /* The file from syoyo/safetensors-cpp's fuzz cases: length 1000, 88 bytes. */
    const char *path = st_data_path("NEG_syoyo-abuse_attempt_1.safetensors");
    if (path != NULL) {
        unsigned char *bytes = st_read_file(path, &size);
        CU_ASSERT_PTR_NOT_NULL_FATAL(bytes);
        CU_ASSERT_EQUAL(size, 88);
        CU_ASSERT_EQUAL(st_parse_status(bytes, size, &err), ANVIL_E_ST_HEADER_PAST_END);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "1000"));
        free(bytes);
        anvil_st *st = NULL;
        CU_ASSERT_EQUAL(anvil_st_open(&st, path, &err), ANVIL_E_ST_HEADER_PAST_END);
        CU_ASSERT_PTR_NULL(st);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.message, path));
    }
}

static void test_utf8(void) {
    expect("{\"w\xff\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, ANVIL_E_ST_UTF8, "byte 3");
    /* Overlong and surrogate encodings are not UTF-8 either. */
    expect("{\"\xc0\xaf\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, ANVIL_E_ST_UTF8, NULL);
    expect("{\"\xed\xa0\x80\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, ANVIL_E_ST_UTF8, NULL);
    /* Bad UTF-8 in the padding counts: the whole header must be UTF-8. */
    expect("{}  \x80 ", 0, ANVIL_E_ST_UTF8, NULL);
}

static void test_json(void) {
    expect("", 0, ANVIL_E_ST_JSON, "empty");
    expect(" {}", 0, ANVIL_E_ST_JSON, "start with '{'");
    expect("[]", 0, ANVIL_E_ST_JSON, "start with '{'");
    expect("\"x\"", 0, ANVIL_E_ST_JSON, NULL);
    expect("{", 0, ANVIL_E_ST_JSON, NULL);
    expect("{} x", 0, ANVIL_E_ST_JSON, "after the end");
    expect("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],}}", 1, ANVIL_E_ST_JSON, "trailing comma");
    expect("{\"a\":{\"dtype\":\"U8\",\"shape\":[01],\"data_offsets\":[0,1]}}", 1, ANVIL_E_ST_JSON,
           "\"a\".\"shape\"[0]");
    /* The whole header is JSON-checked first: a syntax error later in the
     * text wins over a bad dtype earlier (and a duplicate key wins too). */
    expect("{" T("w", "F33", "[1]", 0, 1) ",\"x\":01}", 1, ANVIL_E_ST_JSON, "leading zero");
    expect("{" T("w", "F33", "[1]", 0, 1) "," T("w", "U8", "[1]", 0, 1) "}", 1, ANVIL_E_ST_DUP_KEY, NULL);
    /* NUL padding is not whitespace. */
    anvil_error err;
    size_t size;
    unsigned char *img = st_image_raw(8, "{}\0\0\0\0\0\0", 8, NULL, 0, &size);
    CU_ASSERT_EQUAL(st_parse_status(img, size, &err), ANVIL_E_ST_JSON);
    free(img);
    /* Space, tab, CR and LF padding are fine (upstream pads with spaces). */
    img = st_image_raw(8, "{}\n\t\r   ", 8, NULL, 0, &size);
    CU_ASSERT_EQUAL(st_parse_status(img, size, &err), ANVIL_OK);
    free(img);
}

static void test_dtype(void) {
    expect("{" T("w", "F33", "[1]", 0, 4) "}", 4, ANVIL_E_ST_DTYPE, "\"w\"");
    expect("{" T("w", "f32", "[1]", 0, 4) "}", 4, ANVIL_E_ST_DTYPE, "\"f32\"");
    expect("{" T("w", "F8_E4M3FN", "[1]", 0, 1) "}", 1, ANVIL_E_ST_DTYPE, NULL);
    expect("{" T("w", "", "[1]", 0, 1) "}", 1, ANVIL_E_ST_DTYPE, NULL);
}

static void test_overflow(void) {
    /* 2^32 * 2^32 elements overflow the element count. */
    expect("{" T("big", "U8", "[4294967296,4294967296]", 0, 0) "}", 0, ANVIL_E_ST_OVERFLOW, "\"big\"");
    /* 2^62 F32 elements: the count fits, the bit count does not. */
    expect("{" T("bits", "F32", "[4611686018427387904]", 0, 0) "}", 0, ANVIL_E_ST_OVERFLOW, "\"bits\"");
    /* A dim that does not fit 64 bits at all. */
    expect("{" T("lit", "U8", "[18446744073709551616]", 0, 0) "}", 0, ANVIL_E_ST_OVERFLOW, "\"lit\"");
    expect("{" T("off", "U8", "[1]", 0, 18446744073709551616) "}", 0, ANVIL_E_ST_OVERFLOW, "\"off\"");
    /* A zero dim makes any product 0, as upstream's checked fold does. */
    expect("{" T("z", "U8", "[0,18446744073709551615,18446744073709551615]", 0, 0) "}", 0, ANVIL_OK, NULL);
}

static void test_offsets(void) {
    /* First tensor (in data order) must start at 0. */
    expect("{" T("a", "U8", "[4]", 4, 8) "}", 8, ANVIL_E_ST_OFFSETS, "\"a\"");
    /* A gap between tensors. */
    expect("{" T("a", "U8", "[4]", 0, 4) "," T("b", "U8", "[2]", 6, 8) "}", 8, ANVIL_E_ST_OFFSETS, "gap of 2");
    /* An overlap. */
    expect("{" T("a", "U8", "[4]", 0, 4) "," T("b", "U8", "[4]", 2, 6) "}", 6, ANVIL_E_ST_OFFSETS, "overlap by 2");
    /* End before begin. */
    expect("{" T("a", "U8", "[0]", 0, 0) "," T("r", "U8", "[2]", 2, 0) "}", 2, ANVIL_E_ST_OFFSETS, "\"r\"");
    /* Two tensors claiming the same bytes. */
    expect("{" T("a", "U8", "[4]", 0, 4) "," T("b", "U8", "[4]", 0, 4) "}", 4, ANVIL_E_ST_OFFSETS, "overlap by 4");
    /* Header order does not matter: sorted by offsets this is contiguous. */
    expect("{" T("b", "U8", "[2]", 4, 6) "," T("a", "U8", "[4]", 0, 4) "}", 6, ANVIL_OK, NULL);
}

static void test_size_mismatch(void) {
    expect("{" T("w", "F32", "[2]", 0, 4) "}", 4, ANVIL_E_ST_SIZE_MISMATCH, "\"w\"");
    expect("{" T("w", "F32", "[2]", 0, 12) "}", 12, ANVIL_E_ST_SIZE_MISMATCH, "needs 8 bytes");
    expect("{" T("s", "I64", "[]", 0, 4) "}", 4, ANVIL_E_ST_SIZE_MISMATCH, "\"s\"");
    expect("{" T("c", "C64", "[2,2]", 0, 32) "}", 32, ANVIL_OK, NULL);
}

static void test_trailing_and_truncated(void) {
    expect("{" T("w", "U8", "[4]", 0, 4) "}", 5, ANVIL_E_ST_TRAILING, "1 bytes follow");
    expect("{}", 1, ANVIL_E_ST_TRAILING, NULL);
    expect("{" T("a", "U8", "[4]", 0, 4) "," T("w", "U8", "[4]", 4, 8) "}", 6, ANVIL_E_TRUNCATED, "\"w\"");
    expect("{" T("w", "U8", "[4]", 0, 4) "}", 0, ANVIL_E_TRUNCATED, "4 bytes are missing");
}

static void test_duplicate_keys(void) {
    expect("{" T("w", "U8", "[1]", 0, 1) "," T("w", "U8", "[1]", 1, 2) "}", 2, ANVIL_E_ST_DUP_KEY, "\"w\"");
    expect("{\"__metadata__\":{},\"__metadata__\":{}}", 0, ANVIL_E_ST_DUP_KEY, "__metadata__");
    expect("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0, ANVIL_E_ST_DUP_KEY, "\"k\"");
    expect("{\"w\":{\"dtype\":\"U8\",\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, ANVIL_E_ST_DUP_KEY,
           "(in \"w\")");
}

static void test_metadata(void) {
    expect("{\"__metadata__\":1}", 0, ANVIL_E_ST_METADATA, "a number");
    expect("{\"__metadata__\":[]}", 0, ANVIL_E_ST_METADATA, "an array");
    expect("{\"__metadata__\":\"x\"}", 0, ANVIL_E_ST_METADATA, NULL);
    expect("{\"__metadata__\":true}", 0, ANVIL_E_ST_METADATA, NULL);
    expect("{\"__metadata__\":{\"n\":1}}", 0, ANVIL_E_ST_METADATA, "\"n\"");
    expect("{\"__metadata__\":{\"n\":null}}", 0, ANVIL_E_ST_METADATA, "\"n\"");
    expect("{\"__metadata__\":{\"n\":{\"x\":\"y\"}}}", 0, ANVIL_E_ST_METADATA, "\"n\"");
    expect("{\"__metadata__\":null}", 0, ANVIL_OK, NULL);
    expect("{\"__metadata__\":{\"a\":\"\",\"\":\"b\"}}", 0, ANVIL_OK, NULL);
}

static void test_subbyte(void) {
    /* 3 x 4 bits = 12 bits: not whole bytes. */
    expect("{" T("q", "F4", "[3]", 0, 2) "}", 2, ANVIL_E_ST_SUBBYTE, "\"q\"");
    expect("{" T("q", "F6_E2M3", "[1]", 0, 1) "}", 1, ANVIL_E_ST_SUBBYTE, "6 bits");
    expect("{" T("q", "F6_E3M2", "[2,3]", 0, 5) "}", 5, ANVIL_E_ST_SUBBYTE, NULL);
    /* Whole bytes are fine: 2 x F4 = 1 byte, 4 x F6 = 3 bytes. */
    expect("{" T("q", "F4", "[2]", 0, 1) "}", 1, ANVIL_OK, NULL);
    expect("{" T("q", "F6_E2M3", "[4]", 0, 3) "}", 3, ANVIL_OK, NULL);
    expect("{" T("q", "F6_E3M2", "[2,2]", 0, 3) "}", 3, ANVIL_OK, NULL);
    /* Right bits, wrong byte count: a size mismatch, not a sub-byte error. */
    expect("{" T("q", "F4", "[4]", 0, 1) "}", 1, ANVIL_E_ST_SIZE_MISMATCH, NULL);
}

static void test_entry(void) {
    expect("{\"w\":1}", 0, ANVIL_E_ST_ENTRY, "\"w\"");
    expect("{\"w\":[]}", 0, ANVIL_E_ST_ENTRY, "an array");
    expect("{\"w\":{\"shape\":[1],\"data_offsets\":[0,1]}}", 1, ANVIL_E_ST_ENTRY, "no dtype");
    expect("{\"w\":{\"dtype\":\"U8\",\"data_offsets\":[0,1]}}", 1, ANVIL_E_ST_ENTRY, "no shape");
    expect("{\"w\":{\"dtype\":\"U8\",\"shape\":[1]}}", 1, ANVIL_E_ST_ENTRY, "no data_offsets");
    expect("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\":0}}", 1, ANVIL_E_ST_ENTRY,
           "unknown field \"x\"");
    expect("{\"w\":{\"dtype\":5,\"shape\":[1],\"data_offsets\":[0,1]}}", 1, ANVIL_E_ST_ENTRY, "dtype is a number");
    expect("{\"w\":{\"dtype\":\"U8\",\"shape\":1,\"data_offsets\":[0,1]}}", 1, ANVIL_E_ST_ENTRY, "shape is a number");
    expect("{" T("w", "U8", "[-1]", 0, 1) "}", 1, ANVIL_E_ST_ENTRY, "-1");
    expect("{" T("w", "U8", "[1.0]", 0, 1) "}", 1, ANVIL_E_ST_ENTRY, "1.0");
    expect("{" T("w", "U8", "[1e0]", 0, 1) "}", 1, ANVIL_E_ST_ENTRY, NULL);
    expect("{" T("w", "U8", "[\"1\"]", 0, 1) "}", 1, ANVIL_E_ST_ENTRY, "a string");
    expect("{" T("w", "U8", "[null]", 0, 1) "}", 1, ANVIL_E_ST_ENTRY, NULL);
    expect("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1,2]}}", 1, ANVIL_E_ST_ENTRY, "wrong length");
    expect("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1]}}", 1, ANVIL_E_ST_ENTRY, NULL);
    expect("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":{\"0\":1}}}", 1, ANVIL_E_ST_ENTRY, NULL);
    expect("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,-1]}}", 1, ANVIL_E_ST_ENTRY, NULL);
}

/* Names in messages are quoted and terminal-safe, even when hostile. */
static void test_message_names_are_safe(void) {
    anvil_error err;
    const int rc = st_header_status("{\"a\\u001b[31mred\":{\"dtype\":\"F33\",\"shape\":[1],\"data_offsets\":[0,1]}}",
                                    zeros, 1, &err);
    CU_ASSERT_EQUAL(rc, ANVIL_E_ST_DTYPE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "\"a\\x1b[31mred\""));
    CU_ASSERT_PTR_NULL(strchr(err.message, 0x1b));
    /* A very long name is cut, and the message still fits. */
    char header[4096];
    char name[3000];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    snprintf(header, sizeof header, "{\"%s\":{\"dtype\":\"X\",\"shape\":[],\"data_offsets\":[0,0]}}", name);
    CU_ASSERT_EQUAL(st_header_status(header, NULL, 0, &err), ANVIL_E_ST_DTYPE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "..."));
}

/* A single-byte flip anywhere in a valid file never crashes and never
 * yields a view whose data runs past the image. */
static void test_bit_flips(void) {
    const char *path = st_data_path("burn-batch_norm2d.safetensors");
    if (path == NULL) {
        return;
    }
    size_t size = 0;
    unsigned char *orig = st_read_file(path, &size);
    CU_ASSERT_PTR_NOT_NULL_FATAL(orig);
    unsigned char *img = malloc(size);
    unsigned ok = 0, refused = 0;
    for (size_t pos = 0; pos < 8 + 352; pos++) {
        for (int bit = 0; bit < 8; bit++) {
            memcpy(img, orig, size);
            img[pos] ^= (unsigned char)(1u << bit);
            anvil_st *st = NULL;
            anvil_error err;
            if (anvil_st_parse(&st, img, size, &err) == ANVIL_OK) {
                ok++;
                for (size_t i = 0; i < anvil_st_count(st); i++) {
                    const anvil_st_tensor *t = anvil_st_tensor_at(st, i);
                    CU_ASSERT((const unsigned char *)t->data + t->size <= img + size);
                }
                anvil_st_close(st);
            } else {
                refused++;
                CU_ASSERT(err.code < 0 && err.message[0] != '\0');
            }
        }
    }
    CU_ASSERT(refused > 0);
    CU_ASSERT(ok + refused == (8 + 352) * 8);
    free(img);
    free(orig);
}

void st_add_hostile_tests(void) {
    CU_pSuite s = CU_add_suite("hostile", NULL, NULL);
    CU_add_test(s, "too small", test_too_small);
    CU_add_test(s, "header too large", test_header_too_large);
    CU_add_test(s, "header past end (incl. syoyo abuse_attempt_1)", test_header_past_end);
    CU_add_test(s, "header not utf-8", test_utf8);
    CU_add_test(s, "header not a json object", test_json);
    CU_add_test(s, "unknown dtype", test_dtype);
    CU_add_test(s, "overflow", test_overflow);
    CU_add_test(s, "offsets not contiguous", test_offsets);
    CU_add_test(s, "size mismatch", test_size_mismatch);
    CU_add_test(s, "trailing and truncated data", test_trailing_and_truncated);
    CU_add_test(s, "duplicate keys", test_duplicate_keys);
    CU_add_test(s, "metadata", test_metadata);
    CU_add_test(s, "sub-byte dtypes", test_subbyte);
    CU_add_test(s, "malformed entries", test_entry);
    CU_add_test(s, "messages are terminal-safe", test_message_names_are_safe);
    CU_add_test(s, "single bit flips", test_bit_flips);
}
