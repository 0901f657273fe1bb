/* SPDX-License-Identifier: MIT */
/*
 * The hostile corpus: every case returns its specific status with a message
 * that says what and where; the committed files under tests/gguf/corpus are
 * the same bytes (regenerate them with ANVIL_GGUF_WRITE_CORPUS=<dir>); every
 * prefix of a valid file and every byte flip of its header is refused or
 * parsed cleanly (ASan+UBSan builds make "cleanly" mean it).
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf_test.h"
#include "test_env.h"

static int open_case(const uint8_t *p, size_t n, anvil_error *err) {
    anvil_gguf *g = NULL;
    memset(err, 0, sizeof *err);
    const int rc = anvil_gguf_open_buffer(&g, p, n, NULL, err);
    anvil_gguf_close(g);
    return rc;
}

static void test_cases(void) {
    const char *write_dir = getenv("ANVIL_GGUF_WRITE_CORPUS");
    size_t committed = 0;
    for (size_t i = 0; i < hostile_case_count; ++i) {
        const hostile_case *c = &hostile_cases[i];
        gb b = { 0 };
        c->build(&b);
        anvil_error err;
        const int rc = open_case(b.p, b.n, &err);
        if (rc != c->expect) {
            fprintf(stderr, "\n  case %s: got %d (%s), want %d\n", c->name, rc, err.message, c->expect);
        }
        CU_ASSERT_EQUAL(rc, c->expect);
        if (c->expect != ANVIL_OK) {
            CU_ASSERT_EQUAL(err.code, c->expect);
            if (c->substring != NULL && strstr(err.message, c->substring) == NULL) {
                fprintf(stderr, "\n  case %s: message '%s' lacks '%s'\n", c->name, err.message, c->substring);
                CU_FAIL("message lacks the expected detail");
            }
        }

        /* The same bytes through the mmap path. */
        char path[4200];
        snprintf(path, sizeof path, "%s/%s.gguf", test_tmpdir(), c->name);
        CU_ASSERT_EQUAL_FATAL(write_whole(path, b.p, b.n), 0);
        anvil_gguf *g = NULL;
        anvil_error ferr;
        CU_ASSERT_EQUAL(anvil_gguf_open(&g, path, NULL, 0, &ferr), c->expect);
        anvil_gguf_close(g);

        if (write_dir != NULL) {
            snprintf(path, sizeof path, "%s/%s.gguf", write_dir, c->name);
            CU_ASSERT_EQUAL(write_whole(path, b.p, b.n), 0);
        }
        /* The committed copy must not drift from the generator. */
        snprintf(path, sizeof path, "%s/%s.gguf", ANVIL_GGUF_CORPUS_DIR, c->name);
        size_t n = 0;
        uint8_t *disk = test_read_file(path, &n);
        if (disk != NULL) {
            committed++;
            CU_ASSERT(n == b.n && (n == 0 || memcmp(disk, b.p, n) == 0));
            free(disk);
        }
        gb_free(&b);
    }
    printf("\n  %zu hostile cases, %zu committed copies checked\n", hostile_case_count, committed);
    CU_ASSERT(committed == hostile_case_count || write_dir != NULL);
}

static void test_every_prefix_refused(void) {
    base_file f;
    base_build(&f);
    size_t by_code[3] = { 0, 0, 0 };
    const size_t data_end = f.after_a + 68; /* b: 2 rows of 34 bytes */
    for (size_t cut = 0; cut < data_end; ++cut) {
        /* Exactly `cut` bytes of heap, so reading past them is an ASan error. */
        uint8_t *p = malloc(cut > 0 ? cut : 1);
        memcpy(p, f.b.p, cut);
        anvil_error err;
        const int rc = open_case(p, cut, &err);
        free(p);
        const int ok = rc == ANVIL_E_GGUF_TRUNCATED || rc == ANVIL_E_GGUF_STRING || rc == ANVIL_E_GGUF_COUNT;
        if (!ok) {
            fprintf(stderr, "\n  prefix %zu: %d %s\n", cut, rc, err.message);
        }
        CU_ASSERT(ok);
        by_code[rc == ANVIL_E_GGUF_TRUNCATED ? 0 : rc == ANVIL_E_GGUF_STRING ? 1 : 2]++;
    }
    /* The whole file (minus its final padding, which is not data) opens. */
    anvil_error err;
    CU_ASSERT_EQUAL(open_case(f.b.p, data_end, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(open_case(f.b.p, f.end, &err), ANVIL_OK);
    CU_ASSERT(by_code[0] > 0);
    gb_free(&f.b);
}

static void test_byte_flips(void) {
    base_file f;
    base_build(&f);
    size_t parsed = 0, refused = 0;
    static const uint8_t flips[] = { 0x01, 0x02, 0x10, 0x80, 0xFF };
    for (size_t pos = 0; pos < f.data_start; ++pos) {
        for (size_t k = 0; k < sizeof flips; ++k) {
            f.b.p[pos] ^= flips[k];
            anvil_gguf *g = NULL;
            anvil_error err;
            const int rc = anvil_gguf_open_buffer(&g, f.b.p, f.b.n, NULL, &err);
            if (rc == ANVIL_OK) {
                parsed++;
                /* Whatever parses can be written and read back. */
                anvil_gguf_writer *w = NULL;
                void *out = NULL;
                size_t n = 0;
                anvil_gguf_writer_new(&w, NULL, NULL);
                if (anvil_gguf_writer_copy_from(w, g, ANVIL_GGUF_COPY_KVS | ANVIL_GGUF_COPY_TENSORS, NULL) ==
                        ANVIL_OK &&
                    anvil_gguf_writer_write_memory(w, &out, &n, NULL) == ANVIL_OK) {
                    anvil_gguf *g2 = NULL;
                    CU_ASSERT_EQUAL(anvil_gguf_open_buffer(&g2, out, n, NULL, NULL), ANVIL_OK);
                    anvil_gguf_close(g2);
                }
                free(out);
                anvil_gguf_writer_free(w);
            } else {
                refused++;
                CU_ASSERT(rc < 0 && err.code == rc && err.message[0] != '\0');
            }
            anvil_gguf_close(g);
            f.b.p[pos] ^= flips[k];
        }
    }
    printf("\n  %zu header byte flips: %zu parsed, %zu refused\n", parsed + refused, parsed, refused);
    CU_ASSERT(refused > 0 && parsed > 0);
    gb_free(&f.b);
}

/* The real-world negative file from the shared test data. */
static void test_shared_negative(void) {
    const char *p = test_shared_path("NEG_ollama-test-truncated.gguf");
    if (p == NULL) {
        printf("\n  note: shared testdata absent, NEG_ollama-test-truncated.gguf skipped\n");
        CU_PASS("skipped");
        return;
    }
    anvil_gguf *g = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL(anvil_gguf_open(&g, p, NULL, 0, &err), ANVIL_E_GGUF_TRUNCATED);
    CU_ASSERT(strstr(err.message, "truncated") != NULL);
    CU_ASSERT_PTR_NULL(g);
}

void gguf_add_hostile_tests(void) {
    CU_pSuite s = CU_add_suite("gguf_hostile", NULL, NULL);
    CU_add_test(s, "each hostile case returns its own status and message", test_cases);
    CU_add_test(s, "every prefix of a valid file is refused as truncated", test_every_prefix_refused);
    CU_add_test(s, "header byte flips: refused cleanly or re-writable", test_byte_flips);
    CU_add_test(s, "shared truncated file", test_shared_negative);
}
