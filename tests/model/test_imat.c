/* SPDX-License-Identifier: MIT */
/*
 * anvil/imat.h without the oracle:
 *  - golden: the trained test model's importance matrix over 2 chunks of
 *    64 tokens of calib.txt against llama.cpp's collection
 *    (imatrix_collect.txt, written by `anvil-parity --family
 *    imatrix_collect --write-golden DIR`): the same 28 tensors, counts
 *    equal, each tensor's sum within 1e-3 and its first 8 sums within 5e-3;
 *    the same bytes with 1 and 2 threads;
 *  - files: GGUF and .dat round trips, merge (sums and counts added; another
 *    shape refused), a .dat whose counts are zero, every truncation of both
 *    formats refused or read without a crash;
 *  - refusals: too few tokens (how many are needed), --ctx below 16.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "anvil/imat.h"
#include "anvil/model.h"
#include "test_env.h"

#define GOLD_CTX 64
#define GOLD_CHUNKS 2
#define GOLD_MAX 64

typedef struct gold {
    char name[96];
    unsigned n_per;
    long long count;
    double sum, first[8];
} gold;

static anvil_ctx *ctx;
static anvil_model *model;
static int32_t *tokens;
static size_t n_tokens;
static gold golds[GOLD_MAX];
static int n_golds;
static anvil_imat *collected;

static int read_golden(void) {
    FILE *f = fopen(IMAT_GOLDEN, "r");
    if (f == NULL) return -1;
    char line[1024];
    while (n_golds < GOLD_MAX && fgets(line, sizeof line, f) != NULL) {
        if (line[0] == '#') continue;
        gold *g = &golds[n_golds];
        if (sscanf(line, "%95s %u %lld %lf %lf %lf %lf %lf %lf %lf %lf %lf", g->name, &g->n_per, &g->count, &g->sum,
                   &g->first[0], &g->first[1], &g->first[2], &g->first[3], &g->first[4], &g->first[5], &g->first[6],
                   &g->first[7]) == 12)
            ++n_golds;
    }
    fclose(f);
    return n_golds > 0 ? 0 : -1;
}

static int collect(anvil_imat **out, int ctx_tokens, int chunks) {
    anvil_error err;
    const anvil_imat_opts o = { .size = sizeof o, .n_ctx = ctx_tokens, .n_chunks = chunks };
    int rc = anvil_imat_new(out, &err);
    if (rc == ANVIL_OK) rc = anvil_imat_collect(model, tokens, n_tokens, &o, *out, NULL, &err);
    if (rc != ANVIL_OK) fprintf(stderr, "collect: %s\n", err.message);
    return rc;
}

static void test_golden(void) {
    CU_ASSERT_EQUAL_FATAL(collect(&collected, GOLD_CTX, GOLD_CHUNKS), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_imat_count(collected), (size_t)n_golds);
    CU_ASSERT_EQUAL(anvil_imat_chunk_count(collected), GOLD_CHUNKS);
    CU_ASSERT_EQUAL(anvil_imat_chunk_size(collected), GOLD_CTX);
    int bad = 0;
    for (int i = 0; i < n_golds; ++i) {
        const gold *g = &golds[i];
        anvil_imat_entry e = { 0 };
        size_t k = 0;
        for (; k < anvil_imat_count(collected); ++k) {
            anvil_imat_entry_at(collected, k, &e);
            if (strcmp(e.name, g->name) == 0) break;
        }
        if (k == anvil_imat_count(collected) || e.n_per != g->n_per || e.n_mat != 1 || e.counts[0] != g->count) {
            fprintf(stderr, "golden: %s missing, or another shape or count\n", g->name);
            ++bad;
            continue;
        }
        double s = 0;
        for (uint32_t j = 0; j < e.n_per; ++j) s += e.sums[j];
        int off = !(fabs(s / g->sum - 1) < 1e-3);
        for (int j = 0; j < 8; ++j) off |= !(fabs(e.sums[j] / g->first[j] - 1) < 5e-3);
        if (off) fprintf(stderr, "golden: %s sum %.9g, llama.cpp %.9g\n", g->name, s, g->sum);
        bad += off;
    }
    CU_ASSERT_EQUAL(bad, 0);
}

static void *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = malloc((size_t)len + 1);
    *n = p && fread(p, 1, (size_t)len, f) == (size_t)len ? (size_t)len : 0;
    fclose(f);
    return p;
}

static void tmp_path(char *buf, size_t size, const char *ext) {
    const char *t = getenv("TMPDIR");
    snprintf(buf, size, "%s/test_imat_%d%s", t && *t ? t : "/tmp", (int)getpid(), ext);
}

static void test_threads(void) {
    CU_ASSERT_PTR_NOT_NULL_FATAL(collected);
    anvil_imat *one = NULL;
    anvil_ctx_set_threads(ctx, 1);
    CU_ASSERT_EQUAL_FATAL(collect(&one, GOLD_CTX, GOLD_CHUNKS), ANVIL_OK);
    anvil_ctx_set_threads(ctx, 2);
    char a[512], b[512];
    tmp_path(a, sizeof a, "-1.gguf");
    tmp_path(b, sizeof b, "-2.gguf");
    anvil_error err;
    CU_ASSERT_EQUAL(anvil_imat_save(one, a, ANVIL_IMAT_GGUF, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_imat_save(collected, b, ANVIL_IMAT_GGUF, &err), ANVIL_OK);
    size_t na = 0, nb = 0;
    void *pa = slurp(a, &na), *pb = slurp(b, &nb);
    CU_ASSERT(na > 0 && na == nb && memcmp(pa, pb, na) == 0);
    free(pa);
    free(pb);
    remove(a);
    remove(b);
    anvil_imat_free(one);
}

/* Every prefix of a valid file: refused or read, never a crash. */
static void truncations(const unsigned char *p, size_t n) {
    for (size_t k = 0; k < n; k += k < 64 ? 1 : 97) {
        anvil_imat *im = NULL;
        anvil_error err;
        if (anvil_imat_load_buffer(&im, p, k, 512, NULL, &err) == ANVIL_OK) anvil_imat_free(im);
        else CU_ASSERT(err.message[0] != '\0');
    }
}

static void test_files(void) {
    CU_ASSERT_PTR_NOT_NULL_FATAL(collected);
    char g[512], d[512];
    tmp_path(g, sizeof g, ".gguf");
    tmp_path(d, sizeof d, ".dat");
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_imat_save(collected, g, ANVIL_IMAT_GGUF, &err), ANVIL_OK);
    CU_ASSERT_EQUAL_FATAL(anvil_imat_save(collected, d, ANVIL_IMAT_DAT, &err), ANVIL_OK);
    anvil_imat *ig = NULL, *id = NULL;
    int fg = -1, fd = -1;
    CU_ASSERT_EQUAL_FATAL(anvil_imat_load(&ig, g, 0, &fg, &err), ANVIL_OK);
    CU_ASSERT_EQUAL_FATAL(anvil_imat_load(&id, d, GOLD_CTX, &fd, &err), ANVIL_OK);
    CU_ASSERT(fg == ANVIL_IMAT_GGUF && fd == ANVIL_IMAT_DAT);
    CU_ASSERT_EQUAL(anvil_imat_count(ig), anvil_imat_count(collected));
    CU_ASSERT_EQUAL(anvil_imat_count(id), anvil_imat_count(collected));
    CU_ASSERT_EQUAL(anvil_imat_chunk_count(ig), GOLD_CHUNKS);
    for (size_t i = 0; i < anvil_imat_count(collected); ++i) {
        anvil_imat_entry a, b, c;
        anvil_imat_entry_at(collected, i, &a);
        anvil_imat_entry_at(ig, i, &b);
        anvil_imat_entry_at(id, i, &c);
        CU_ASSERT(strcmp(a.name, b.name) == 0 && a.counts[0] == b.counts[0]);
        CU_ASSERT(memcmp(a.sums, b.sums, a.n_per * sizeof(float)) == 0);
        /* .dat: sum / count * ncall, times the chunk size on loading = the sum (count = ncall * chunk) */
        CU_ASSERT(c.counts[0] == a.counts[0] && fabsf(c.sums[0] / a.sums[0] - 1) < 1e-5f);
    }
    /* merge: a file with itself doubles; another shape is refused */
    CU_ASSERT_EQUAL(anvil_imat_merge(ig, collected, &err), ANVIL_OK);
    anvil_imat_entry e;
    anvil_imat_entry_at(ig, 0, &e);
    CU_ASSERT_EQUAL(e.counts[0], 2 * GOLD_CTX * GOLD_CHUNKS);
    CU_ASSERT_EQUAL(anvil_imat_chunk_count(ig), 2 * GOLD_CHUNKS);
    const float x[4] = { 1, 2, 3, 4 };
    anvil_imat *other = NULL;
    CU_ASSERT_EQUAL(anvil_imat_new(&other, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_imat_accumulate(other, e.name, 0, 1, x, 1, 4, &err), ANVIL_OK);
    CU_ASSERT_NOT_EQUAL(anvil_imat_merge(ig, other, &err), ANVIL_OK);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "another model"));
    size_t n = 0;
    unsigned char *bytes = slurp(g, &n);
    truncations(bytes, n);
    free(bytes);
    bytes = slurp(d, &n);
    truncations(bytes, n);
    free(bytes);
    remove(g);
    remove(d);
    anvil_imat_free(other);
    anvil_imat_free(ig);
    anvil_imat_free(id);
}

static void test_zero_counts(void) {
    /* one entry "w", ncall 0, two values */
    const unsigned char dat[] = { 1, 0, 0, 0, 1, 0, 0, 0, 'w', 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 128, 63, 0, 0, 128, 63 };
    anvil_imat *im = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_imat_load_buffer(&im, dat, sizeof dat, 512, NULL, &err), ANVIL_OK);
    anvil_imat_entry e;
    CU_ASSERT_EQUAL(anvil_imat_entry_at(im, 0, &e), ANVIL_OK);
    CU_ASSERT(e.n_per == 2 && e.counts[0] == 0);
    CU_ASSERT_EQUAL(anvil_imat_chunk_count(im), 0);
    anvil_imat_free(im);
    const unsigned char none[] = { 0, 0, 0, 0 };
    CU_ASSERT_NOT_EQUAL(anvil_imat_load_buffer(&im, none, sizeof none, 512, NULL, &err), ANVIL_OK);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "no data"));
}

static void test_refusals(void) {
    anvil_imat *im = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_imat_new(&im, &err), ANVIL_OK);
    anvil_imat_opts o = { .size = sizeof o, .n_ctx = 512 };
    CU_ASSERT_NOT_EQUAL(anvil_imat_collect(model, tokens, 700, &o, im, NULL, &err), ANVIL_OK);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "at least 1024"));
    o.n_ctx = 8;
    CU_ASSERT_NOT_EQUAL(anvil_imat_collect(model, tokens, n_tokens, &o, im, NULL, &err), ANVIL_OK);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "16"));
    CU_ASSERT_EQUAL(anvil_imat_count(im), 0);
    CU_ASSERT_NOT_EQUAL(anvil_imat_save(im, "/nonexistent/x.gguf", ANVIL_IMAT_GGUF, &err), ANVIL_OK);
    anvil_imat_free(im);
}

int main(void) {
    char model_path[1024], text_path[1024];
    const char *path = test_shared_path("quality/tiny-code-llama.f16.gguf"); /* a static buffer */
    snprintf(model_path, sizeof model_path, "%s", path ? path : "");
    const char *text = test_shared_path("quality/calib.txt");
    snprintf(text_path, sizeof text_path, "%s", text ? text : "");
    if (path == NULL || text == NULL || read_golden() != 0) {
        fprintf(stderr, "test_imat: the test model (../shared/testdata/quality) or the golden is missing: skipped\n");
        return 77;
    }
    anvil_error err;
    if (anvil_ctx_open(&ctx, test_config_path(), &err) != ANVIL_OK ||
        anvil_model_open(&model, ctx, model_path, NULL, &err) != ANVIL_OK) {
        fprintf(stderr, "test_imat: %s\n", err.message);
        return 1;
    }
    anvil_ctx_set_threads(ctx, 2);
    size_t len = 0;
    char *t = slurp(text_path, &len);
    if (t == NULL || len == 0) return 1;
    if (t[len - 1] == '\n') --len; /* as llama-imatrix -f */
    if (anvil_model_tokenize(model, t, len, &tokens, &n_tokens, &err) != ANVIL_OK) {
        fprintf(stderr, "test_imat: %s\n", err.message);
        return 1;
    }
    free(t);
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    CU_pSuite s = CU_add_suite("imat", NULL, NULL);
    CU_add_test(s, "golden", test_golden);
    CU_add_test(s, "threads", test_threads);
    CU_add_test(s, "files", test_files);
    CU_add_test(s, "zero_counts", test_zero_counts);
    CU_add_test(s, "refusals", test_refusals);
    const int rc = test_run_cunit();
    anvil_imat_free(collected);
    free(tokens);
    anvil_model_close(model);
    anvil_ctx_close(ctx);
    return rc;
}
