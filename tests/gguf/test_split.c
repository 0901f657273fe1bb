/* SPDX-License-Identifier: MIT */
/* Split sets: llama.cpp naming and keys, opening a set as one view, the
 * split -> merge round trip, and broken sets. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf_test.h"
#include "test_env.h"

/* 7 tensors of 64..448 bytes plus metadata, canonical. */
static uint8_t *model(size_t *n) {
    static uint8_t blob[7 * 448];
    for (size_t i = 0; i < sizeof blob; ++i) {
        blob[i] = (uint8_t)(i * 13 + 5);
    }
    anvil_gguf_writer *w = NULL;
    anvil_error err;
    anvil_gguf_writer_new(&w, NULL, &err);
    anvil_gguf_writer_set_string(w, "general.architecture", "llama", &err);
    anvil_gguf_writer_set_u32(w, "llama.block_count", 7, &err);
    const char *toks[3] = { "<s>", "</s>", "hi" };
    anvil_gguf_writer_set_string_array(w, "tokenizer.ggml.tokens", toks, 3, &err);
    size_t at = 0;
    for (int i = 0; i < 7; ++i) {
        char name[32];
        snprintf(name, sizeof name, "blk.%d.weight", i);
        const uint64_t ne[2] = { 16, (uint64_t)(i + 1) };
        anvil_gguf_writer_add_tensor(w, name, ANVIL_TYPE_F32, 2, ne, blob + at, 64u * (i + 1), &err);
        at += 64u * (i + 1);
    }
    void *out = NULL;
    CU_ASSERT_EQUAL(anvil_gguf_writer_write_memory(w, &out, n, &err), ANVIL_OK);
    anvil_gguf_writer_free(w);
    return out;
}

static void test_split_names(void) {
    char buf[64], prefix[64];
    uint32_t no = 0, count = 0;
    anvil_error err;
    CU_ASSERT_EQUAL(anvil_gguf_split_path(buf, sizeof buf, "dir/m", 2, 3, &err), ANVIL_OK);
    CU_ASSERT_STRING_EQUAL(buf, "dir/m-00002-of-00003.gguf");
    CU_ASSERT_EQUAL(anvil_gguf_split_path(buf, sizeof buf, "m", 4, 3, &err), ANVIL_E_INVALID_ARG);
    CU_ASSERT_EQUAL(anvil_gguf_split_path(buf, 8, "model", 1, 3, &err), ANVIL_E_BUFFER_TOO_SMALL);
    CU_ASSERT_EQUAL(anvil_gguf_split_parse("a/b-c-00001-of-00012.gguf", prefix, sizeof prefix, &no, &count), 1);
    CU_ASSERT_STRING_EQUAL(prefix, "a/b-c");
    CU_ASSERT(no == 1 && count == 12);
    CU_ASSERT_EQUAL(anvil_gguf_split_parse("m-1-of-3.gguf", prefix, sizeof prefix, &no, &count), 0);
    CU_ASSERT_EQUAL(anvil_gguf_split_parse("m-00004-of-00003.gguf", NULL, 0, &no, &count), 0);
    CU_ASSERT_EQUAL(anvil_gguf_split_parse("m-00001-of-00003.bin", NULL, 0, &no, &count), 0);
    CU_ASSERT_EQUAL(anvil_gguf_split_parse("-00001-of-00003.gguf", NULL, 0, &no, &count), 0);
    CU_ASSERT_EQUAL(anvil_gguf_split_parse("m-00000-of-00003.gguf", NULL, 0, &no, &count), 0);
}

static void check_part_keys(const char *path, uint16_t no, uint16_t count, size_t n_kv) {
    anvil_gguf *g = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_open(&g, path, NULL, ANVIL_GGUF_OPEN_SINGLE_PART, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_kv_count(g), n_kv);
    /* gguf-split's order: split.no, split.tensors.count, split.count last. */
    const anvil_gguf_kv *a = anvil_gguf_kv_at(g, n_kv - 3), *b = anvil_gguf_kv_at(g, n_kv - 2),
                        *c = anvil_gguf_kv_at(g, n_kv - 1);
    CU_ASSERT_STRING_EQUAL(a->key, "split.no");
    CU_ASSERT_EQUAL(a->type, ANVIL_GGUF_TYPE_U16);
    CU_ASSERT_STRING_EQUAL(b->key, "split.tensors.count");
    CU_ASSERT_EQUAL(b->type, ANVIL_GGUF_TYPE_I32);
    CU_ASSERT_STRING_EQUAL(c->key, "split.count");
    CU_ASSERT_EQUAL(c->type, ANVIL_GGUF_TYPE_U16);
    int64_t v = -1;
    CU_ASSERT(anvil_gguf_get_i64(g, "split.no", &v, &err) == ANVIL_OK && v == no);
    CU_ASSERT(anvil_gguf_get_i64(g, "split.count", &v, &err) == ANVIL_OK && v == count);
    CU_ASSERT(anvil_gguf_get_i64(g, "split.tensors.count", &v, &err) == ANVIL_OK && v == 7);
    anvil_gguf_close(g);
}

static void split_merge(uint64_t max_bytes, uint64_t max_tensors, uint32_t want_parts, const char *tag) {
    size_t n = 0;
    uint8_t *orig = model(&n);
    char src_path[4200], prefix[4200], first[4200], merged[4200];
    snprintf(src_path, sizeof src_path, "%s/%s-src.gguf", test_tmpdir(), tag);
    snprintf(prefix, sizeof prefix, "%s/%s", test_tmpdir(), tag);
    snprintf(merged, sizeof merged, "%s/%s-merged.gguf", test_tmpdir(), tag);
    CU_ASSERT_EQUAL_FATAL(write_whole(src_path, orig, n), 0);
    anvil_gguf *src = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_open(&src, src_path, NULL, 0, &err), ANVIL_OK);
    uint32_t parts = 0;
    CU_ASSERT_EQUAL(anvil_gguf_split_write(src, prefix, max_bytes, max_tensors, NULL, &parts, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(parts, want_parts);
    anvil_gguf_close(src);

    for (uint32_t p = 1; p <= parts; ++p) {
        char path[4200];
        anvil_gguf_split_path(path, sizeof path, prefix, p, parts, &err);
        check_part_keys(path, (uint16_t)(p - 1), (uint16_t)parts, p == 1 ? 3 + 3 : 3);
    }

    /* Part 1 opens the whole set as one view. */
    anvil_gguf_split_path(first, sizeof first, prefix, 1, parts, &err);
    anvil_gguf *g = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_open(&g, first, NULL, 0, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_part_count(g), parts);
    CU_ASSERT_EQUAL(anvil_gguf_tensor_count(g), 7);
    CU_ASSERT_EQUAL(anvil_gguf_kv_count(g), 6);
    anvil_gguf *o = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_open_buffer(&o, orig, n, NULL, &err), ANVIL_OK);
    for (size_t i = 0; i < 7; ++i) {
        const anvil_gguf_tensor *a = anvil_gguf_tensor_at(g, i), *b = anvil_gguf_tensor_at(o, i);
        CU_ASSERT_STRING_EQUAL(a->name, b->name);
        CU_ASSERT(a->n_bytes == b->n_bytes && memcmp(a->data, b->data, a->n_bytes) == 0);
    }
    const anvil_gguf_tensor *last = anvil_gguf_tensor_at(g, 6);
    CU_ASSERT_EQUAL(last->part, parts - 1);
    CU_ASSERT_EQUAL(anvil_gguf_prefetch(g, last->data, last->n_bytes, &err), ANVIL_OK);
    anvil_gguf_close(o);
    anvil_gguf_close(g);

    /* split -> merge gives back the original, byte for byte. */
    CU_ASSERT_EQUAL(anvil_gguf_merge(first, merged, NULL, &err), ANVIL_OK);
    size_t nm = 0;
    uint8_t *m = test_read_file(merged, &nm);
    CU_ASSERT(m != NULL && nm == n && memcmp(m, orig, n) == 0);
    free(m);
    free(orig);
}

static void test_split_by_tensors(void) { split_merge(0, 3, 3, "bytensors"); }
/* Tensor sizes 64..448 bytes; at most 700 bytes of tensors per part:
 * {64,128,192,256} {320} {384} {448}. */
static void test_split_by_size(void) { split_merge(700, 0, 4, "bysize"); }
static void test_split_one_part(void) { split_merge(1ull << 40, 0, 1, "onepart"); }

static void test_broken_sets(void) {
    size_t n = 0;
    uint8_t *orig = model(&n);
    char prefix[4200], first[4200], second[4200], third[4200];
    snprintf(prefix, sizeof prefix, "%s/broken", test_tmpdir());
    anvil_gguf *src = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_open_buffer(&src, orig, n, NULL, &err), ANVIL_OK);
    uint32_t parts = 0;
    CU_ASSERT_EQUAL(anvil_gguf_split_write(src, prefix, 0, 3, NULL, &parts, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(parts, 3);
    CU_ASSERT_EQUAL(anvil_gguf_split_write(src, prefix, 100, 3, NULL, &parts, &err), ANVIL_E_INVALID_ARG);
    anvil_gguf_split_path(first, sizeof first, prefix, 1, 3, &err);
    anvil_gguf_split_path(second, sizeof second, prefix, 2, 3, &err);
    anvil_gguf_split_path(third, sizeof third, prefix, 3, 3, &err);

    /* A later part opened on its own is just that part. */
    anvil_gguf *g = NULL;
    CU_ASSERT_EQUAL(anvil_gguf_open(&g, second, NULL, 0, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_part_count(g), 1);
    CU_ASSERT_EQUAL(anvil_gguf_tensor_count(g), 3);
    anvil_gguf_close(g);

    /* Part 2 replaced by a part claiming to be part 3. */
    size_t n2 = 0, n3 = 0;
    uint8_t *p2 = test_read_file(second, &n2);
    uint8_t *p3 = test_read_file(third, &n3);
    CU_ASSERT_EQUAL_FATAL(write_whole(second, p3, n3), 0);
    CU_ASSERT_EQUAL(anvil_gguf_open(&g, first, NULL, 0, &err), ANVIL_E_GGUF_SPLIT);
    CU_ASSERT(strstr(err.message, "part no 2 of 3") != NULL);
    free(p3);

    /* A missing part is named. */
    unlink(second);
    CU_ASSERT_EQUAL(anvil_gguf_open(&g, first, NULL, 0, &err), ANVIL_E_GGUF_SPLIT);
    CU_ASSERT(strstr(err.message, "part 2 of 3 is missing") != NULL);
    CU_ASSERT(strstr(err.message, "broken-00002-of-00003.gguf") != NULL);
    CU_ASSERT_EQUAL(anvil_gguf_merge(first, prefix, NULL, &err), ANVIL_E_GGUF_SPLIT);
    CU_ASSERT_EQUAL(write_whole(second, p2, n2), 0);
    free(p2);

    /* Part 1 renamed: its partners cannot be found. */
    char renamed[4200];
    snprintf(renamed, sizeof renamed, "%s/renamed.gguf", test_tmpdir());
    CU_ASSERT_EQUAL(rename(first, renamed), 0);
    CU_ASSERT_EQUAL(anvil_gguf_open(&g, renamed, NULL, 0, &err), ANVIL_E_GGUF_SPLIT);
    CU_ASSERT(strstr(err.message, "-00001-of-00003.gguf") != NULL);
    CU_ASSERT_EQUAL(anvil_gguf_open(&g, renamed, NULL, ANVIL_GGUF_OPEN_SINGLE_PART, &err), ANVIL_OK);
    anvil_gguf_close(g);

    /* split.count with the wrong wire type. */
    anvil_gguf_writer *w = NULL;
    anvil_gguf_writer_new(&w, NULL, &err);
    anvil_gguf_writer_set_u16(w, "split.no", 0, &err);
    anvil_gguf_writer_set_u32(w, "split.count", 2, &err);
    char odd[4200];
    snprintf(odd, sizeof odd, "%s/odd-00001-of-00002.gguf", test_tmpdir());
    CU_ASSERT_EQUAL(anvil_gguf_writer_write_file(w, odd, &err), ANVIL_OK);
    anvil_gguf_writer_free(w);
    CU_ASSERT_EQUAL(anvil_gguf_open(&g, odd, NULL, 0, &err), ANVIL_E_GGUF_KEY_TYPE);
    CU_ASSERT(strstr(err.message, "split.count") != NULL && strstr(err.message, "u16") != NULL);

    anvil_gguf_close(src);
    free(orig);
}

void gguf_add_split_tests(void) {
    CU_pSuite s = CU_add_suite("gguf_split", NULL, NULL);
    CU_add_test(s, "split names (llama.cpp convention)", test_split_names);
    CU_add_test(s, "split by tensor count -> merge is byte-identical", test_split_by_tensors);
    CU_add_test(s, "split by size -> merge is byte-identical", test_split_by_size);
    CU_add_test(s, "a one-part set", test_split_one_part);
    CU_add_test(s, "broken sets: wrong part, missing part, renamed, wrong key type", test_broken_sets);
}
