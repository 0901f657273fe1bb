/* SPDX-License-Identifier: MIT */
/* GGUF reader: views, typed and raw metadata, shapes, hints, the mapping
 * handoff, and the real files in the shared test data. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf_test.h"
#include "test_env.h"

static int inside(const gb *b, const void *p, size_t n) {
    const uint8_t *q = p;
    return q >= b->p && q + n <= b->p + b->n;
}

static void test_base_file(void) {
    base_file f;
    base_build(&f);
    anvil_gguf *g = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_open_buffer(&g, f.b.p, f.b.n, NULL, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_version(g), 3);
    CU_ASSERT_EQUAL(anvil_gguf_alignment(g), 32);
    CU_ASSERT_EQUAL(anvil_gguf_data_offset(g), f.data_start);
    CU_ASSERT_EQUAL(anvil_gguf_file_size(g), f.b.n);
    CU_ASSERT_EQUAL(anvil_gguf_kv_count(g), 5);
    CU_ASSERT_EQUAL(anvil_gguf_tensor_count(g), 2);
    CU_ASSERT_EQUAL(anvil_gguf_part_count(g), 1);

    /* Keys in file order, as C strings with their lengths. */
    CU_ASSERT_STRING_EQUAL(anvil_gguf_kv_at(g, 0)->key, "general.architecture");
    CU_ASSERT_EQUAL(anvil_gguf_kv_at(g, 0)->key_len, 20);
    CU_ASSERT_STRING_EQUAL(anvil_gguf_kv_at(g, 4)->key, "test.flag");
    CU_ASSERT_PTR_NULL(anvil_gguf_kv_at(g, 5));
    CU_ASSERT_EQUAL(anvil_gguf_find_key(g, "tokenizer.ggml.scores"), 3);
    CU_ASSERT_EQUAL(anvil_gguf_find_key(g, "absent"), -1);

    anvil_gguf_str s;
    CU_ASSERT_EQUAL(anvil_gguf_get_str(g, "general.architecture", &s, &err), ANVIL_OK);
    CU_ASSERT(s.len == 5 && memcmp(s.ptr, "llama", 5) == 0);
    CU_ASSERT(inside(&f.b, s.ptr, s.len)); /* a view, not a copy */

    /* A u64 >= 2^63 never reads as a negative int64. */
    int64_t i64 = 0;
    uint64_t u64 = 0;
    CU_ASSERT_EQUAL(anvil_gguf_get_i64(g, "test.big", &i64, &err), ANVIL_E_OVERFLOW);
    CU_ASSERT(strstr(err.message, "18446744073709551600") != NULL);
    CU_ASSERT_EQUAL(i64, 0);
    CU_ASSERT_EQUAL(anvil_gguf_get_u64(g, "test.big", &u64, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(u64, 0xFFFFFFFFFFFFFFF0ull);
    anvil_gguf_value v;
    CU_ASSERT_EQUAL(anvil_gguf_kv_value(anvil_gguf_find_kv(g, "test.big"), &v), ANVIL_OK);
    CU_ASSERT_EQUAL(v.kind, ANVIL_GGUF_KIND_INT);
    CU_ASSERT_EQUAL(v.in_i64, 0);
    CU_ASSERT_EQUAL(v.in_u64, 1);
    CU_ASSERT_EQUAL(v.wire_type, ANVIL_GGUF_TYPE_U64);

    /* Raw view: exact wire type and bytes. */
    const anvil_gguf_kv *big = anvil_gguf_find_kv(g, "test.big");
    CU_ASSERT_EQUAL(big->type, ANVIL_GGUF_TYPE_U64);
    CU_ASSERT_EQUAL(big->raw_size, 8);
    CU_ASSERT(memcmp(big->raw, "\xf0\xff\xff\xff\xff\xff\xff\xff", 8) == 0);

    /* A string array listed as slices into the mapping. */
    anvil_gguf_array a;
    CU_ASSERT_EQUAL(anvil_gguf_get_array(g, "tokenizer.ggml.tokens", &a, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(a.elem_type, ANVIL_GGUF_TYPE_STRING);
    CU_ASSERT_EQUAL(a.count, 3);
    anvil_gguf_str slices[4];
    CU_ASSERT_EQUAL(anvil_gguf_array_strings(&a, slices, 4), 3);
    CU_ASSERT(slices[0].len == 1 && memcmp(slices[0].ptr, "a", 1) == 0);
    CU_ASSERT(slices[1].len == 2 && memcmp(slices[1].ptr, "bc", 2) == 0);
    CU_ASSERT(slices[2].len == 3 && memcmp(slices[2].ptr, "def", 3) == 0);
    CU_ASSERT(inside(&f.b, slices[2].ptr, 3));
    CU_ASSERT_EQUAL(anvil_gguf_array_strings(&a, slices, 2), 2);
    CU_ASSERT_EQUAL(anvil_gguf_array_get(&a, 2, &v), ANVIL_OK);
    CU_ASSERT(v.kind == ANVIL_GGUF_KIND_STRING && v.s.len == 3);
    CU_ASSERT_EQUAL(anvil_gguf_array_get(&a, 3, &v), ANVIL_E_INVALID_ARG);

    CU_ASSERT_EQUAL(anvil_gguf_get_array(g, "tokenizer.ggml.scores", &a, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_array_get(&a, 1, &v), ANVIL_OK);
    CU_ASSERT(v.kind == ANVIL_GGUF_KIND_FLOAT && v.f == 2.0);
    CU_ASSERT_EQUAL(anvil_gguf_array_get(&a, 2, &v), ANVIL_OK);
    CU_ASSERT(v.f == -1.0);

    int flag = 0;
    CU_ASSERT_EQUAL(anvil_gguf_get_bool(g, "test.flag", &flag, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(flag, 1);

    /* Wrong kind and absence are distinct errors. */
    double d;
    CU_ASSERT_EQUAL(anvil_gguf_get_f64(g, "general.architecture", &d, &err), ANVIL_E_GGUF_KEY_TYPE);
    CU_ASSERT(strstr(err.message, "str") != NULL);
    CU_ASSERT_EQUAL(anvil_gguf_get_f64(g, "nope", &d, &err), ANVIL_E_NOT_FOUND);

    /* Tensors: ne order as on disk plus the row-major shape. */
    const anvil_gguf_tensor *ta = anvil_gguf_find_tensor(g, "a");
    const anvil_gguf_tensor *tb = anvil_gguf_find_tensor(g, "b");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ta);
    CU_ASSERT_PTR_NOT_NULL_FATAL(tb);
    CU_ASSERT_PTR_NULL(anvil_gguf_find_tensor(g, "c"));
    CU_ASSERT_EQUAL(ta->n_dims, 2);
    CU_ASSERT(ta->ne[0] == 8 && ta->ne[1] == 2 && ta->ne[2] == 1 && ta->ne[3] == 1);
    CU_ASSERT(ta->shape[0] == 2 && ta->shape[1] == 8);
    CU_ASSERT_EQUAL(ta->n_elements, 16);
    CU_ASSERT_EQUAL(ta->n_bytes, 64);
    CU_ASSERT_EQUAL(ta->row_bytes, 32);
    CU_ASSERT_EQUAL(ta->file_offset, f.data_start);
    CU_ASSERT_PTR_EQUAL(ta->data, f.b.p + f.data_start);
    CU_ASSERT_EQUAL(tb->type, ANVIL_TYPE_Q8_0);
    CU_ASSERT_STRING_EQUAL(tb->type_info.name, "q8_0");
    CU_ASSERT_EQUAL(tb->n_bytes, 68);
    CU_ASSERT_EQUAL(tb->row_bytes, 34);
    CU_ASSERT_EQUAL(tb->offset, 64);
    CU_ASSERT_PTR_EQUAL(tb->data, f.b.p + f.after_a);
    CU_ASSERT_PTR_EQUAL(anvil_gguf_tensor_at(g, 1), tb);

    anvil_gguf_part_info pi;
    CU_ASSERT_EQUAL(anvil_gguf_part(g, 0, &pi), ANVIL_OK);
    CU_ASSERT_EQUAL(pi.header_size, f.after_dir);
    CU_ASSERT_EQUAL(pi.data_end, f.after_a + 68);
    CU_ASSERT_PTR_NULL(pi.path);

    /* A caller's buffer: hints are no-ops, a foreign range is refused. */
    CU_ASSERT_EQUAL(anvil_gguf_prefetch(g, ta->data, ta->n_bytes, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_release(g, ta->data, ta->n_bytes, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(ta->n_bytes > 0 && ((const uint8_t *)ta->data)[0] == 1, 1);
    int local = 0;
    CU_ASSERT_EQUAL(anvil_gguf_prefetch(g, &local, sizeof local, &err), ANVIL_E_INVALID_ARG);
    anvil_gguf_close(g);
    gb_free(&f.b);
}

static void test_typed_values(void) {
    gb b = { 0 };
    gb_header(&b, 3, 0, 11);
    gb_str(&b, "u8");
    gb_u32(&b, ANVIL_GGUF_TYPE_U8);
    gb_u8(&b, 255);
    gb_str(&b, "i8");
    gb_u32(&b, ANVIL_GGUF_TYPE_I8);
    gb_u8(&b, 0xFF);
    gb_str(&b, "u16");
    gb_u32(&b, ANVIL_GGUF_TYPE_U16);
    gb_u16(&b, 65535);
    gb_str(&b, "i16");
    gb_u32(&b, ANVIL_GGUF_TYPE_I16);
    gb_u16(&b, 0xFFFE);
    gb_str(&b, "u32");
    gb_u32(&b, ANVIL_GGUF_TYPE_U32);
    gb_u32(&b, 0xFFFFFFFFu);
    gb_str(&b, "i32");
    gb_u32(&b, ANVIL_GGUF_TYPE_I32);
    gb_u32(&b, 0x80000000u);
    gb_str(&b, "u64");
    gb_u32(&b, ANVIL_GGUF_TYPE_U64);
    gb_u64(&b, 1ull << 63);
    gb_str(&b, "i64");
    gb_u32(&b, ANVIL_GGUF_TYPE_I64);
    gb_u64(&b, 1ull << 63);
    gb_str(&b, "f32");
    gb_u32(&b, ANVIL_GGUF_TYPE_F32);
    gb_u32(&b, 0x3fc00000u);
    gb_str(&b, "f64");
    gb_u32(&b, ANVIL_GGUF_TYPE_F64);
    gb_u64(&b, 0x400c000000000000ull);
    gb_str(&b, "b");
    gb_u32(&b, ANVIL_GGUF_TYPE_BOOL);
    gb_u8(&b, 2);
    anvil_gguf *g = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_open_buffer(&g, b.p, b.n, NULL, &err), ANVIL_OK);
    int64_t i = 0;
    uint64_t u = 0;
    double d = 0;
    int flag = 0;
    CU_ASSERT(anvil_gguf_get_i64(g, "u8", &i, &err) == ANVIL_OK && i == 255);
    CU_ASSERT(anvil_gguf_get_i64(g, "i8", &i, &err) == ANVIL_OK && i == -1);
    CU_ASSERT_EQUAL(anvil_gguf_get_u64(g, "i8", &u, &err), ANVIL_E_OVERFLOW);
    CU_ASSERT(anvil_gguf_get_i64(g, "u16", &i, &err) == ANVIL_OK && i == 65535);
    CU_ASSERT(anvil_gguf_get_i64(g, "i16", &i, &err) == ANVIL_OK && i == -2);
    CU_ASSERT(anvil_gguf_get_u64(g, "u32", &u, &err) == ANVIL_OK && u == 0xFFFFFFFFu);
    CU_ASSERT(anvil_gguf_get_i64(g, "i32", &i, &err) == ANVIL_OK && i == INT32_MIN);
    CU_ASSERT_EQUAL(anvil_gguf_get_i64(g, "u64", &i, &err), ANVIL_E_OVERFLOW);
    CU_ASSERT(anvil_gguf_get_u64(g, "u64", &u, &err) == ANVIL_OK && u == (1ull << 63));
    CU_ASSERT(anvil_gguf_get_i64(g, "i64", &i, &err) == ANVIL_OK && i == INT64_MIN);
    CU_ASSERT(anvil_gguf_get_f64(g, "f32", &d, &err) == ANVIL_OK && d == 1.5);
    CU_ASSERT(anvil_gguf_get_f64(g, "f64", &d, &err) == ANVIL_OK && d == 3.5);
    CU_ASSERT(anvil_gguf_get_bool(g, "b", &flag, &err) == ANVIL_OK && flag == 1);
    CU_ASSERT_EQUAL(anvil_gguf_get_i64(g, "f32", &i, &err), ANVIL_E_GGUF_KEY_TYPE);
    CU_ASSERT_EQUAL(anvil_gguf_find_kv(g, "b")->raw_size, 1);
    CU_ASSERT_EQUAL(((const uint8_t *)anvil_gguf_find_kv(g, "b")->raw)[0], 2); /* raw: as stored */
    CU_ASSERT_STRING_EQUAL(anvil_gguf_type_name(ANVIL_GGUF_TYPE_STRING), "str");
    CU_ASSERT_PTR_NULL(anvil_gguf_type_name(13));
    CU_ASSERT_EQUAL(anvil_gguf_type_size(ANVIL_GGUF_TYPE_F64), 8);
    anvil_gguf_close(g);
    gb_free(&b);
}

static void test_zero_element_tensors(void) {
    for (size_t i = 0; i < hostile_case_count; ++i) {
        if (strcmp(hostile_cases[i].name, "zero_elements") != 0) {
            continue;
        }
        gb b = { 0 };
        hostile_cases[i].build(&b);
        anvil_gguf *g = NULL;
        anvil_error err;
        CU_ASSERT_EQUAL_FATAL(anvil_gguf_open_buffer(&g, b.p, b.n, NULL, &err), ANVIL_OK);
        CU_ASSERT_EQUAL(anvil_gguf_tensor_count(g), 3);
        for (size_t k = 0; k < 3; ++k) {
            const anvil_gguf_tensor *t = anvil_gguf_tensor_at(g, k);
            CU_ASSERT_EQUAL(t->n_elements, 0);
            CU_ASSERT_EQUAL(t->n_bytes, 0);
        }
        CU_ASSERT_EQUAL(anvil_gguf_find_tensor(g, "empty_rows")->row_bytes, 34);
        CU_ASSERT_EQUAL(anvil_gguf_find_tensor(g, "empty_q8_0")->shape[0], 3);
        /* ...and the writer round-trips them without dividing by zero. */
        anvil_gguf_writer *w = NULL;
        void *out = NULL;
        size_t n = 0;
        CU_ASSERT_EQUAL(anvil_gguf_writer_new(&w, NULL, &err), ANVIL_OK);
        CU_ASSERT_EQUAL(anvil_gguf_writer_copy_from(w, g, ANVIL_GGUF_COPY_KVS | ANVIL_GGUF_COPY_TENSORS, &err),
                        ANVIL_OK);
        CU_ASSERT_EQUAL(anvil_gguf_writer_write_memory(w, &out, &n, &err), ANVIL_OK);
        CU_ASSERT(n == b.n && memcmp(out, b.p, n) == 0);
        free(out);
        anvil_gguf_writer_free(w);
        anvil_gguf_close(g);
        gb_free(&b);
        return;
    }
    CU_FAIL("zero_elements case missing");
}

/* mmap path: hints on a real mapping, and the handoff. */
static void test_mapping_handoff(void) {
    base_file f;
    base_build(&f);
    char path[4200];
    snprintf(path, sizeof path, "%s/handoff.gguf", test_tmpdir());
    CU_ASSERT_EQUAL_FATAL(write_whole(path, f.b.p, f.b.n), 0);
    anvil_gguf *g = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_open(&g, path, NULL, 0, &err), ANVIL_OK);
    const anvil_gguf_tensor *tb = anvil_gguf_find_tensor(g, "b");
    const uint8_t *data = tb->data;
    const size_t n = (size_t)tb->n_bytes;
    CU_ASSERT_EQUAL(anvil_gguf_prefetch(g, data, n, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_release(g, data, n, &err), ANVIL_OK);
    /* Released pages come back from the file. */
    CU_ASSERT(memcmp(data, f.b.p + f.after_a, n) == 0);
    CU_ASSERT_EQUAL(anvil_gguf_prefetch(g, data, (size_t)f.b.n * 2, &err), ANVIL_E_INVALID_ARG);
    anvil_gguf_part_info pi;
    anvil_gguf_part(g, 0, &pi);
    CU_ASSERT_STRING_EQUAL(pi.path, path);

    anvil_gguf_mapping *m = anvil_gguf_take_mapping(g);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_PTR_NULL(anvil_gguf_take_mapping(g)); /* only once */
    anvil_gguf_close(g);
    /* The tensor view outlives the file object. */
    CU_ASSERT(memcmp(data, f.b.p + f.after_a, n) == 0);
    CU_ASSERT_EQUAL(anvil_gguf_mapping_prefetch(m, data, n, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_mapping_release(m, data, n, &err), ANVIL_OK);
    CU_ASSERT(memcmp(data, f.b.p + f.after_a, n) == 0);
    anvil_gguf_mapping_free(m);
    gb_free(&f.b);
}

static void test_missing_and_odd_files(void) {
    anvil_gguf *g = NULL;
    anvil_error err;
    char path[4200];
    snprintf(path, sizeof path, "%s/does-not-exist.gguf", test_tmpdir());
    CU_ASSERT_EQUAL(anvil_gguf_open(&g, path, NULL, 0, &err), ANVIL_E_NOT_FOUND);
    CU_ASSERT(strstr(err.message, "does-not-exist.gguf") != NULL);
    CU_ASSERT_EQUAL(anvil_gguf_open(&g, test_tmpdir(), NULL, 0, &err), ANVIL_E_IO);
    snprintf(path, sizeof path, "%s/empty.gguf", test_tmpdir());
    CU_ASSERT_EQUAL_FATAL(write_whole(path, "", 0), 0);
    CU_ASSERT_EQUAL(anvil_gguf_open(&g, path, NULL, 0, &err), ANVIL_E_GGUF_TRUNCATED);
    CU_ASSERT(strstr(err.message, path) != NULL); /* names the file */
    CU_ASSERT_PTR_NULL(g);
}

/* ---- the shared test data ----------------------------------------------------- */

typedef struct shared_file {
    const char *name;
    uint32_t version;
    size_t n_kv, n_tensors;
    const char *array_key;
    uint64_t array_len;
} shared_file;

static const shared_file shared_files[] = {
    { "ggml-vocab-llama-spm.gguf", 3, 22, 0, "tokenizer.ggml.tokens", 32000 },
    { "ggml-vocab-bert-bge.gguf", 3, 20, 0, "tokenizer.ggml.tokens", 30522 },
    { "gguf-v2_falcon-vocab_llamacpp.gguf", 2, 17, 0, "tokenizer.ggml.tokens", 65024 },
    { "stories260K.v3.gguf", 3, 19, 48, "tokenizer.ggml.tokens", 512 },
};

static void test_shared_files(void) {
    size_t seen = 0;
    for (size_t i = 0; i < sizeof shared_files / sizeof shared_files[0]; ++i) {
        const shared_file *sf = &shared_files[i];
        const char *p = test_shared_path(sf->name);
        if (p == NULL) {
            printf("\n  note: %s absent (shared testdata missing), skipped", sf->name);
            continue;
        }
        seen++;
        anvil_gguf *g = NULL;
        anvil_error err;
        CU_ASSERT_EQUAL_FATAL(anvil_gguf_open(&g, p, NULL, 0, &err), ANVIL_OK);
        CU_ASSERT_EQUAL(anvil_gguf_version(g), sf->version);
        CU_ASSERT_EQUAL(anvil_gguf_kv_count(g), sf->n_kv);
        CU_ASSERT_EQUAL(anvil_gguf_tensor_count(g), sf->n_tensors);
        anvil_gguf_array a;
        CU_ASSERT_EQUAL(anvil_gguf_get_array(g, sf->array_key, &a, &err), ANVIL_OK);
        CU_ASSERT_EQUAL(a.count, sf->array_len);
        /* Every token listed without a copy, and the slices tile the array. */
        anvil_gguf_str *s = malloc((size_t)a.count * sizeof *s);
        CU_ASSERT_EQUAL(anvil_gguf_array_strings(&a, s, a.count), a.count);
        size_t total = 0;
        for (uint64_t k = 0; k < a.count; ++k) {
            total += 8 + s[k].len;
        }
        CU_ASSERT_EQUAL(total, a.size);
        free(s);
        anvil_gguf_close(g);
    }
    const char *p = test_shared_path("stories260K.v3.gguf");
    if (p != NULL) {
        anvil_gguf *g = NULL;
        anvil_error err;
        CU_ASSERT_EQUAL_FATAL(anvil_gguf_open(&g, p, NULL, 0, &err), ANVIL_OK);
        const anvil_gguf_tensor *t = anvil_gguf_find_tensor(g, "blk.0.ffn_down.weight");
        CU_ASSERT_PTR_NOT_NULL_FATAL(t);
        /* ne [172, 64] on disk: a [64, 172] weight (out, in). */
        CU_ASSERT(t->ne[0] == 172 && t->ne[1] == 64);
        CU_ASSERT(t->shape[0] == 64 && t->shape[1] == 172);
        CU_ASSERT_EQUAL(t->n_bytes, 172 * 64 * 4);
        CU_ASSERT_EQUAL(anvil_gguf_data_offset(g), 14176);
        uint64_t u = 0;
        CU_ASSERT(anvil_gguf_get_u64(g, "llama.feed_forward_length", &u, &err) == ANVIL_OK && u == 172);
        anvil_gguf_close(g);
    }
    if (seen == 0) {
        printf("\n  note: shared testdata absent: real-file checks skipped\n");
    }
    CU_PASS("shared files");
}

static void test_shared_q8_0_rows(void) {
    const char *p = test_shared_path("tinyllamas-stories-260k-q8_0.v2.gguf");
    if (p == NULL) {
        printf("\n  note: tinyllamas-stories-260k-q8_0.v2.gguf absent, skipped "
               "(the row_blocks corpus case covers the check)\n");
        CU_PASS("skipped");
        return;
    }
    anvil_gguf *g = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL(anvil_gguf_open(&g, p, NULL, 0, &err), ANVIL_E_GGUF_ROW_BLOCKS);
    CU_ASSERT_PTR_NULL(g);
    /* Names the tensor and the row length. */
    CU_ASSERT(strstr(err.message, "'blk.0.ffn_down.weight'") != NULL);
    CU_ASSERT(strstr(err.message, "rows of 172 elements") != NULL);
    CU_ASSERT(strstr(err.message, "32-element blocks") != NULL);
}


/* A third-party type id resolves through a loaded plugin (tests/runtime's
 * abi-good codec, id 1030), and without it is refused naming the missing
 * plugin. */
static void test_third_party_type(void) {
#ifdef ABI_PLUGIN_DIR
    char cfg[4200];
    snprintf(cfg, sizeof cfg, "%s/third-party.ini", test_tmpdir());
    FILE *f = fopen(cfg, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fprintf(f, "[plugins]\npath = %s\nload = abi-good\n", ABI_PLUGIN_DIR);
    fclose(f);
    anvil_ctx *ctx = NULL;
    anvil_error err;
    if (anvil_ctx_open(&ctx, cfg, &err) != ANVIL_OK) {
        printf("\n  note: abi-good plugin not loadable (%s); skipped\n", err.message);
        CU_PASS("skipped");
        return;
    }
    anvil_type_info ti;
    CU_ASSERT_EQUAL_FATAL(anvil_type_lookup(ctx, 1030, &ti, &err), ANVIL_OK);
    const uint64_t ne[2] = { 2ull * ti.block_elems, 3 };
    const size_t bytes = 6u * ti.block_bytes;
    gb b = { 0 };
    gb_header(&b, 3, 1, 0);
    gb_tensor(&b, "tp.weight", 2, ne, 1030, 0);
    gb_pad(&b, 32);
    for (size_t i = 0; i < bytes; ++i) {
        gb_u8(&b, (uint8_t)i);
    }
    gb_pad(&b, 32);
    anvil_gguf *g = NULL;
    CU_ASSERT_EQUAL(anvil_gguf_open_buffer(&g, b.p, b.n, NULL, &err), ANVIL_E_GGUF_TENSOR_TYPE);
    CU_ASSERT(strstr(err.message, "'tp.weight'") != NULL);
    CU_ASSERT(strstr(err.message, "1030") != NULL && strstr(err.message, "plugin") != NULL);
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_open_buffer(&g, b.p, b.n, ctx, &err), ANVIL_OK);
    const anvil_gguf_tensor *t = anvil_gguf_tensor_at(g, 0);
    CU_ASSERT_STRING_EQUAL(t->type_info.name, ti.name);
    CU_ASSERT_EQUAL(t->n_bytes, bytes);
    /* The writer needs the context for the same reason. */
    anvil_gguf_writer *w = NULL;
    CU_ASSERT_EQUAL(anvil_gguf_writer_new(&w, NULL, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_copy_from(w, g, ANVIL_GGUF_COPY_TENSORS, &err), ANVIL_E_GGUF_TENSOR_TYPE);
    anvil_gguf_writer_free(w);
    CU_ASSERT_EQUAL(anvil_gguf_writer_new(&w, ctx, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_writer_copy_from(w, g, ANVIL_GGUF_COPY_TENSORS, &err), ANVIL_OK);
    void *out = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL(anvil_gguf_writer_write_memory(w, &out, &n, &err), ANVIL_OK);
    CU_ASSERT(n == b.n && memcmp(out, b.p, n) == 0);
    free(out);
    anvil_gguf_writer_free(w);
    anvil_gguf_close(g);
    gb_free(&b);
    anvil_ctx_close(ctx);
#else
    printf("\n  note: built without the ABI test plugins; third-party type test skipped\n");
    CU_PASS("skipped");
#endif
}

void gguf_add_reader_tests(void) {
    CU_pSuite s = CU_add_suite("gguf_reader", NULL, NULL);
    CU_add_test(s, "views, typed and raw metadata, shapes", test_base_file);
    CU_add_test(s, "typed view of every scalar wire type", test_typed_values);
    CU_add_test(s, "0-element tensors are legal", test_zero_element_tensors);
    CU_add_test(s, "mmap hints and mapping handoff", test_mapping_handoff);
    CU_add_test(s, "missing, folder and empty files", test_missing_and_odd_files);
    CU_add_test(s, "shared test data files", test_shared_files);
    CU_add_test(s, "q8_0 rows of 172 refused by name", test_shared_q8_0_rows);
    CU_add_test(s, "third-party type ids need their plugin", test_third_party_type);
}
