/* SPDX-License-Identifier: MIT */
/* The lenient reader (anvil_gguf_open_lenient / _buffer_lenient): what it
 * lists of damaged files, what it marks, where it stops, and that on a good
 * file it is the strict reader. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf_test.h"

/* Open corpus file name leniently (through the path API). */
static anvil_gguf *open_corpus(const char *name) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.gguf", ANVIL_GGUF_CORPUS_DIR, name);
    anvil_gguf *g = NULL;
    anvil_error err;
    if (anvil_gguf_open_lenient(&g, path, NULL, &err) != ANVIL_OK) {
        fprintf(stderr, "\n  %s: %s\n", name, err.message);
        return NULL;
    }
    return g;
}

static void test_good_file_is_strict(void) {
    base_file f;
    base_build(&f);
    anvil_gguf *s = NULL, *l = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_open_buffer(&s, f.b.p, f.b.n, NULL, &err), ANVIL_OK);
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_open_buffer_lenient(&l, f.b.p, f.b.n, NULL, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_problem_count(l), 0);
    CU_ASSERT_EQUAL(anvil_gguf_kv_count(l), anvil_gguf_kv_count(s));
    CU_ASSERT_EQUAL(anvil_gguf_tensor_count(l), anvil_gguf_tensor_count(s));
    CU_ASSERT_EQUAL(anvil_gguf_data_offset(l), anvil_gguf_data_offset(s));
    for (size_t i = 0; i < anvil_gguf_tensor_count(s); ++i) {
        CU_ASSERT_PTR_NULL(anvil_gguf_tensor_problem(l, i));
        CU_ASSERT_PTR_EQUAL(anvil_gguf_tensor_at(l, i)->data, anvil_gguf_tensor_at(s, i)->data);
    }
    anvil_gguf_close(s);
    anvil_gguf_close(l);
    gb_free(&f.b);
}

/* A tensor whose rows are not whole blocks: listed, marked, no data; the
 * others are fine. */
static void test_row_blocks_marked(void) {
    anvil_gguf *g = open_corpus("row_blocks");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL(anvil_gguf_problem_count(g), 1);
    anvil_gguf_problem p;
    CU_ASSERT_EQUAL(anvil_gguf_problem_at(g, 0, &p), ANVIL_OK);
    CU_ASSERT_EQUAL(p.code, ANVIL_E_GGUF_ROW_BLOCKS);
    CU_ASSERT_EQUAL(p.where, ANVIL_GGUF_AT_TENSOR);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.message, "rows of 172"));
    size_t bad = 0;
    for (size_t i = 0; i < anvil_gguf_tensor_count(g); ++i) {
        const char *why = anvil_gguf_tensor_problem(g, i);
        if (why != NULL) {
            bad++;
            CU_ASSERT_EQUAL(i, p.index);
            CU_ASSERT_PTR_NULL(anvil_gguf_tensor_at(g, i)->data);
            CU_ASSERT_EQUAL(anvil_gguf_tensor_at(g, i)->ne[0], 172);
        }
    }
    CU_ASSERT_EQUAL(bad, 1);
    anvil_gguf_close(g);
}

/* Overlapping data: both tensors marked, each naming the other. */
static void test_overlap_marks_both(void) {
    anvil_gguf *g = open_corpus("overlap");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL(anvil_gguf_tensor_count(g), 2);
    CU_ASSERT_EQUAL(anvil_gguf_problem_count(g), 2);
    for (size_t i = 0; i < 2; ++i) {
        const char *why = anvil_gguf_tensor_problem(g, i);
        CU_ASSERT_PTR_NOT_NULL_FATAL(why);
        CU_ASSERT_PTR_NOT_NULL(strstr(why, "overlap"));
    }
    anvil_gguf_close(g);
}

/* Truncated: a KV that runs past the end stops the lists there; a tensor
 * whose data runs past the end is listed and marked. */
static void test_truncated(void) {
    anvil_gguf *g = open_corpus("trunc_kv2");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    uint64_t n_kv = 0, n_t = 0;
    anvil_gguf_declared_counts(g, &n_kv, &n_t);
    CU_ASSERT_EQUAL(n_kv, 5);
    CU_ASSERT_EQUAL(anvil_gguf_kv_count(g), 3);
    CU_ASSERT_EQUAL(anvil_gguf_tensor_count(g), 0);
    anvil_gguf_problem p;
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_problem_count(g), 1);
    anvil_gguf_problem_at(g, 0, &p);
    CU_ASSERT_EQUAL(p.where, ANVIL_GGUF_AT_KV);
    CU_ASSERT_EQUAL(p.index, 3);
    anvil_gguf_close(g);

    g = open_corpus("data_past_eof");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL(anvil_gguf_tensor_count(g), 1);
    CU_ASSERT_PTR_NOT_NULL(anvil_gguf_tensor_problem(g, 0));
    CU_ASSERT_PTR_NULL(anvil_gguf_tensor_at(g, 0)->data);
    anvil_gguf_close(g);
}

/* A directory entry the parse cannot step over (5 dims) ends the list; an
 * unknown type or a duplicate name is listed and marked. */
static void test_directory(void) {
    anvil_gguf *g = open_corpus("dims_5");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL(anvil_gguf_tensor_count(g), 0);
    CU_ASSERT_EQUAL(anvil_gguf_problem_count(g), 1);
    anvil_gguf_close(g);
    static const char *const marked[] = { "type_unknown", "dup_tensor", "misaligned", "dim_negative" };
    for (size_t k = 0; k < sizeof marked / sizeof marked[0]; ++k) {
        g = open_corpus(marked[k]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(g);
        size_t bad = 0;
        for (size_t i = 0; i < anvil_gguf_tensor_count(g); ++i) {
            bad += anvil_gguf_tensor_problem(g, i) != NULL;
        }
        if (bad != 1) fprintf(stderr, "\n  %s: %zu tensors marked\n", marked[k], bad);
        CU_ASSERT_EQUAL(bad, 1);
        anvil_gguf_close(g);
    }
}

/* Nothing to show: not a GGUF file, or a version anvil does not read. */
static void test_hopeless(void) {
    static const char *const names[] = { "magic_wrong", "version_1", "trunc_counts_half", "empty_file" };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; ++k) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s.gguf", ANVIL_GGUF_CORPUS_DIR, names[k]);
        anvil_gguf *g = NULL;
        anvil_error err;
        CU_ASSERT(anvil_gguf_open_lenient(&g, path, NULL, &err) < 0);
        CU_ASSERT_PTR_NULL(g);
        CU_ASSERT(err.message[0] != '\0');
    }
}

/* Every hostile case: the lenient reader never fails on what the strict one
 * refuses past the header, and every listed good tensor's data is inside. */
static void test_every_hostile_case(void) {
    for (size_t k = 0; k < hostile_case_count; ++k) {
        gb b = { 0 };
        hostile_cases[k].build(&b);
        anvil_gguf *g = NULL;
        anvil_error err;
        if (anvil_gguf_open_buffer_lenient(&g, b.p, b.n, NULL, &err) == ANVIL_OK) {
            CU_ASSERT(anvil_gguf_problem_count(g) > 0 || hostile_cases[k].expect == ANVIL_OK);
            for (size_t i = 0; i < anvil_gguf_tensor_count(g); ++i) {
                const anvil_gguf_tensor *t = anvil_gguf_tensor_at(g, i);
                if (anvil_gguf_tensor_problem(g, i) == NULL && t->n_bytes > 0) {
                    CU_ASSERT((const uint8_t *)t->data >= b.p && (const uint8_t *)t->data + t->n_bytes <= b.p + b.n);
                }
            }
            anvil_gguf_close(g);
        }
        gb_free(&b);
    }
}

void gguf_add_lenient_tests(void) {
    CU_pSuite s = CU_add_suite("gguf lenient reader", NULL, NULL);
    CU_add_test(s, "a good file: the strict reader's view, no problems", test_good_file_is_strict);
    CU_add_test(s, "rows not whole blocks: listed and marked", test_row_blocks_marked);
    CU_add_test(s, "overlapping data: both tensors marked", test_overlap_marks_both);
    CU_add_test(s, "truncated KVs stop the lists; truncated data is marked", test_truncated);
    CU_add_test(s, "directory entries: stop or mark", test_directory);
    CU_add_test(s, "no header: refused", test_hopeless);
    CU_add_test(s, "every hostile case", test_every_hostile_case);
}
