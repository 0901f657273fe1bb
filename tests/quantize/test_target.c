/* SPDX-License-Identifier: MIT */
/*
 * anvil quantize --target-size / --target-bpw without the oracle:
 *  - the allocator (qz_allocate) on small synthetic cases with a known
 *    optimum: hand-made ones, and random ones whose budget is what a
 *    Lagrange multiplier's choice takes (that choice is optimal for its own
 *    bytes: the allocator must find an answer as good, checked against
 *    brute force); on any budget it never exceeds it, leaves no single move
 *    up that fits and improves, and is no worse than brute force's answer
 *    by more than the greedy's known slack (checked: never better, which
 *    would be a bug);
 *  - a target plan of the small trained model (../shared/testdata/quality):
 *    within the budget to the byte once written, the same types and
 *    predicted errors for 1 and 2 threads, the metadata, and the bad
 *    budgets (below the smallest file, above F16).
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "anvil/gguf.h"
#include "anvil/quantize.h"
#include "anvil/transcode.h"
#include "quantize_internal.h"
#include "quantize_target.h"
#include "test_env.h"

static anvil_ctx *g_ctx;

static anvil_ctx *ctx(void) {
    if (g_ctx == NULL) {
        anvil_error err;
        if (anvil_ctx_open(&g_ctx, test_config_path(), &err) != ANVIL_OK) {
            fprintf(stderr, "context: %s\n", err.message);
            return NULL;
        }
    }
    return g_ctx;
}

/* ---- the allocator ------------------------------------------------------------ */

static double total_err(const qz_item *it, size_t n) {
    double e = 0.0;
    for (size_t i = 0; i < n; ++i) e += it[i].cands[it[i].pick].err;
    return e;
}

static uint64_t total_bytes(const qz_item *it, size_t n) {
    uint64_t b = 0;
    for (size_t i = 0; i < n; ++i) b += it[i].cands[it[i].pick].bytes;
    return b;
}

/* The least total error within budget over every combination (n small). */
static double brute(const qz_item *it, size_t n, uint64_t budget) {
    size_t idx[8] = { 0 };
    double best = INFINITY;
    for (;;) {
        uint64_t b = 0;
        double e = 0.0;
        for (size_t i = 0; i < n; ++i) {
            b += it[i].cands[idx[i]].bytes;
            e += it[i].cands[idx[i]].err;
        }
        if (b <= budget && e < best) best = e;
        size_t k = 0;
        while (k < n && ++idx[k] == it[k].n) idx[k++] = 0;
        if (k == n) break;
    }
    return best;
}

static void test_alloc_hand(void) {
    /* Two tensors; budget 30: A at 10 (err 5) + B at 20 (err 1) = 6 beats
     * A 20 (2) + B 10 (8) = 10 and A 10 + B 10 = 13. */
    qz_cand a[] = { { 1, 20, 2.0 }, { 2, 10, 5.0 }, { 3, 30, 1.5 } };
    qz_cand b[] = { { 1, 10, 8.0 }, { 2, 20, 1.0 }, { 3, 40, 0.0 } };
    qz_item it[2] = { { a, 3, 0 }, { b, 3, 0 } };
    uint64_t mn = 0, used = 0;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(qz_allocate(it, 2, 30, &mn, &used, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(mn, 20);
    CU_ASSERT_EQUAL(used, 30);
    CU_ASSERT_EQUAL(it[0].cands[it[0].pick].type, 2);
    CU_ASSERT_EQUAL(it[1].cands[it[1].pick].type, 2);
    CU_ASSERT_DOUBLE_EQUAL(total_err(it, 2), 6.0, 1e-12);
    /* Budget 60: B 40 (0) + A 20 (2) = 2; the hull walk alone stops at
     * A 30 + B 20 = 2.5 (a tie taken first): the exchange step finds 2. */
    CU_ASSERT_EQUAL_FATAL(qz_allocate(it, 2, 60, &mn, &used, &err), ANVIL_OK);
    CU_ASSERT_DOUBLE_EQUAL(total_err(it, 2), 2.0, 1e-12);
    CU_ASSERT(used <= 60);
    /* Below the smallest: refused, with the minimum. */
    CU_ASSERT_EQUAL(qz_allocate(it, 2, 19, &mn, &used, &err), ANVIL_E_INVALID_ARG);
    CU_ASSERT_EQUAL(mn, 20);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "20 bytes"));
    /* A candidate no better for more bytes is never chosen. */
    qz_cand c[] = { { 1, 10, 1.0 }, { 2, 50, 1.0 } };
    qz_item one = { c, 2, 0 };
    CU_ASSERT_EQUAL(qz_allocate(&one, 1, 100, &mn, &used, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(one.cands[one.pick].type, 1);
    CU_ASSERT_EQUAL(used, 10);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* n items of k candidates: bytes increasing, error decreasing with noise
 * (not always convex, sometimes dominated). */
static void random_items(qz_item *it, qz_cand *pool, size_t n, size_t k) {
    for (size_t i = 0; i < n; ++i) {
        it[i].cands = pool + i * k;
        it[i].n = k;
        uint64_t b = 1 + rnd() % 8;
        double e = 50.0 + (double)(rnd() % 100);
        for (size_t c = 0; c < k; ++c) {
            it[i].cands[c].type = (uint32_t)c;
            it[i].cands[c].bytes = b;
            it[i].cands[c].err = e;
            b += 1 + rnd() % 12;
            e *= 0.25 + (double)(rnd() % 70) / 100.0;
            if (rnd() % 7 == 0) e *= 1.5; /* a dominated one now and then */
        }
    }
}

static void test_alloc_lagrange_optimum(void) {
    size_t checked = 0, bad = 0;
    for (int trial = 0; trial < 300; ++trial) {
        qz_cand pool[5 * 5];
        qz_item it[5];
        const size_t n = 2 + (size_t)(rnd() % 4), k = 2 + (size_t)(rnd() % 4);
        random_items(it, pool, n, k);
        /* A multiplier's choice: per item argmin err + lambda * bytes. */
        const double lambda = (double)(rnd() % 1000) / 50.0;
        uint64_t budget = 0;
        double lag = 0.0;
        for (size_t i = 0; i < n; ++i) {
            size_t best = 0;
            for (size_t c = 1; c < k; ++c) {
                const qz_cand *x = &it[i].cands[c], *y = &it[i].cands[best];
                if (x->err + lambda * (double)x->bytes < y->err + lambda * (double)y->bytes) best = c;
            }
            budget += it[i].cands[best].bytes;
            lag += it[i].cands[best].err;
        }
        const double opt = brute(it, n, budget);
        uint64_t mn = 0, used = 0;
        anvil_error err;
        CU_ASSERT_EQUAL_FATAL(qz_allocate(it, n, budget, &mn, &used, &err), ANVIL_OK);
        checked++;
        CU_ASSERT(used <= budget);
        CU_ASSERT_EQUAL(used, total_bytes(it, n));
        CU_ASSERT(opt <= lag + 1e-9 * fabs(lag));
        if (fabs(total_err(it, n) - opt) > 1e-9 * (1.0 + opt)) bad++;
    }
    CU_ASSERT_EQUAL(checked, 300);
    CU_ASSERT_EQUAL(bad, 0);
}

static void test_alloc_any_budget(void) {
    size_t within_5pct = 0, trials = 400;
    for (size_t trial = 0; trial < trials; ++trial) {
        qz_cand pool[6 * 5];
        qz_item it[6];
        const size_t n = 2 + (size_t)(rnd() % 5), k = 2 + (size_t)(rnd() % 4);
        random_items(it, pool, n, k);
        uint64_t lo = 0, hi = 0;
        for (size_t i = 0; i < n; ++i) {
            lo += it[i].cands[0].bytes;
            hi += it[i].cands[k - 1].bytes;
        }
        const uint64_t budget = lo + rnd() % (hi - lo + 1);
        const double opt = brute(it, n, budget);
        uint64_t mn = 0, used = 0;
        anvil_error err;
        CU_ASSERT_EQUAL_FATAL(qz_allocate(it, n, budget, &mn, &used, &err), ANVIL_OK);
        CU_ASSERT(used <= budget);
        const double got = total_err(it, n);
        CU_ASSERT(got >= opt - 1e-9 * (1.0 + opt)); /* better than brute force would be a bug */
        within_5pct += got <= opt * 1.05 + 1e-12;
        /* No single move up fits and improves. */
        for (size_t i = 0; i < n; ++i) {
            const qz_cand *cur = &it[i].cands[it[i].pick];
            for (size_t c = 0; c < k; ++c) {
                const qz_cand *x = &it[i].cands[c];
                if (x->bytes > cur->bytes && x->bytes - cur->bytes <= budget - used) CU_ASSERT(x->err >= cur->err);
            }
        }
    }
    /* The greedy fill is not exact for every budget; it is close. */
    CU_ASSERT(within_5pct >= trials * 9 / 10);
}

static void test_alloc_order_free(void) {
    /* The answer does not depend on the order candidates come in. */
    for (int trial = 0; trial < 100; ++trial) {
        qz_cand p1[4 * 5], p2[4 * 5];
        qz_item a[4], b[4];
        random_items(a, p1, 4, 5);
        memcpy(p2, p1, sizeof p1);
        for (size_t i = 0; i < 4; ++i) {
            b[i].cands = p2 + i * 5;
            b[i].n = 5;
            for (size_t c = 0; c < 5; ++c) { /* reverse */
                b[i].cands[c] = p1[i * 5 + 4 - c];
            }
        }
        const uint64_t budget = 60;
        uint64_t mn, u1 = 0, u2 = 0;
        anvil_error err;
        const int r1 = qz_allocate(a, 4, budget, &mn, &u1, &err), r2 = qz_allocate(b, 4, budget, &mn, &u2, &err);
        CU_ASSERT_EQUAL(r1, r2);
        if (r1 != ANVIL_OK) continue;
        CU_ASSERT_EQUAL(u1, u2);
        for (size_t i = 0; i < 4; ++i) CU_ASSERT_EQUAL(a[i].cands[a[i].pick].type, b[i].cands[b[i].pick].type);
    }
}

/* ---- a target plan of the trained model ------------------------------------------ */

static int plan(const char *model, const char *im_path, uint64_t size, unsigned threads, anvil_transcode **t,
                anvil_imatrix **im, anvil_gguf **g, const char *out, anvil_error *err) {
    *t = NULL;
    *im = NULL;
    int rc = anvil_gguf_open(g, model, ctx(), 0, err);
    if (rc == ANVIL_OK && im_path) rc = anvil_imatrix_load(im, im_path, err);
    anvil_quantize_options o;
    anvil_quantize_options_init(&o);
    o.target_size = size;
    o.threads = threads;
    o.imatrix = *im;
    o.imatrix_path = im_path;
    o.skip_quality = 1;
    o.target_sample_rows = 48; /* quick: the sampled path */
    if (rc == ANVIL_OK) rc = anvil_quantize_plan(t, ctx(), *g, out, &o, err);
    if (rc != ANVIL_OK) fprintf(stderr, "\n  plan: %s\n", err->message);
    return rc;
}

static void test_plan_tiny(void) {
    char model[1024], imp[1024];
    const char *p = test_shared_path("quality/tiny-code-llama.f16.gguf");
    snprintf(model, sizeof model, "%s", p ? p : "");
    p = test_shared_path("quality/tiny-code-llama.imatrix.gguf");
    snprintf(imp, sizeof imp, "%s", p ? p : "");
    if (model[0] == '\0' || imp[0] == '\0') {
        fprintf(stderr, "\n  ../shared/testdata/quality is absent: skipped\n");
        return;
    }
    char out[1024];
    snprintf(out, sizeof out, "%s/target.gguf", test_tmpdir());
    anvil_transcode *t1, *t2;
    anvil_imatrix *i1, *i2;
    anvil_gguf *g1, *g2;
    anvil_error err;
    const uint64_t size = 2667840; /* Q4_K_M's file with this imatrix */
    CU_ASSERT_EQUAL_FATAL(plan(model, imp, size, 1, &t1, &i1, &g1, out, &err), ANVIL_OK);
    CU_ASSERT_EQUAL_FATAL(plan(model, imp, size, 2, &t2, &i2, &g2, out, &err), ANVIL_OK);
    anvil_transcode_summary s;
    anvil_transcode_get_summary(t1, &s);
    CU_ASSERT(s.out_file_bytes <= size);
    CU_ASSERT(s.out_file_bytes > size - 4096);
    CU_ASSERT_EQUAL(s.file_type, 1024u);
    size_t n_chosen = 0, types_seen = 0;
    uint32_t seen[64] = { 0 };
    for (size_t i = 0; i < anvil_transcode_count(t1); ++i) {
        const anvil_transcode_tensor *a = anvil_transcode_tensor_at(t1, i), *b = anvil_transcode_tensor_at(t2, i);
        CU_ASSERT_EQUAL(a->dst_type, b->dst_type);
        double e1 = -1, e2 = -2;
        CU_ASSERT_EQUAL(anvil_quantize_predicted_error(t1, i, &e1), ANVIL_OK);
        CU_ASSERT_EQUAL(anvil_quantize_predicted_error(t2, i, &e2), ANVIL_OK);
        CU_ASSERT_EQUAL(e1, e2);
        if (a->rule != NULL && strcmp(a->rule, "--target-size") == 0) {
            n_chosen++;
            CU_ASSERT(e1 > 0.0);
            if (a->dst_type < 64 && !seen[a->dst_type]++) types_seen++;
        }
    }
    CU_ASSERT_EQUAL(n_chosen, 30); /* 4 layers x 7 matrices + output + token_embd */
    CU_ASSERT(types_seen >= 2);    /* a mixture, not one type */
    /* Written: the file is what the plan said, within the budget. */
    CU_ASSERT_EQUAL_FATAL(anvil_transcode_run(t1, &err), ANVIL_OK);
    struct stat st;
    CU_ASSERT_EQUAL_FATAL(stat(out, &st), 0);
    CU_ASSERT_EQUAL((uint64_t)st.st_size, s.out_file_bytes);
    anvil_gguf *w = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_open(&w, out, ctx(), 0, &err), ANVIL_OK);
    const anvil_gguf_kv *kv = anvil_gguf_find_kv(w, "quantize.target_size");
    CU_ASSERT_PTR_NOT_NULL(kv);
    CU_ASSERT_PTR_NOT_NULL(anvil_gguf_find_kv(w, "quantize.imatrix.file"));
    anvil_gguf_close(w);
    anvil_transcode_free(t1);
    anvil_transcode_free(t2);
    anvil_imatrix_free(i1);
    anvil_imatrix_free(i2);
    anvil_gguf_close(g1);
    anvil_gguf_close(g2);
    /* Below the smallest file: refused, saying the minimum. */
    CU_ASSERT_EQUAL(plan(model, imp, 300000, 2, &t1, &i1, &g1, out, &err), ANVIL_E_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "smallest file"));
    anvil_imatrix_free(i1);
    anvil_gguf_close(g1);
    /* Above F16: every chosen tensor at full precision, with a note. */
    CU_ASSERT_EQUAL_FATAL(plan(model, imp, 20000000, 2, &t1, &i1, &g1, out, &err), ANVIL_OK);
    CU_ASSERT_PTR_NOT_NULL(anvil_quantize_target_note(t1));
    for (size_t i = 0; i < anvil_transcode_count(t1); ++i) {
        const anvil_transcode_tensor *a = anvil_transcode_tensor_at(t1, i);
        if (a->rule != NULL && strcmp(a->rule, "--target-size") == 0) CU_ASSERT_EQUAL(a->dst_type, ANVIL_TYPE_F16);
    }
    anvil_transcode_free(t1);
    anvil_imatrix_free(i1);
    anvil_gguf_close(g1);
    /* Without an importance matrix: no type that needs one. */
    CU_ASSERT_EQUAL_FATAL(plan(model, NULL, 1600000, 2, &t1, &i1, &g1, out, &err), ANVIL_OK);
    for (size_t i = 0; i < anvil_transcode_count(t1); ++i) {
        const anvil_transcode_tensor *a = anvil_transcode_tensor_at(t1, i);
        CU_ASSERT(!a->needs_imatrix);
    }
    anvil_transcode_free(t1);
    anvil_gguf_close(g1);
}

static void test_weights_parse(void) {
    double w[QZ_OTHER + 1];
    anvil_error err;
    CU_ASSERT_EQUAL(qz_parse_weights("output=30,token_embd=2.5", w, &err), ANVIL_OK);
    CU_ASSERT_DOUBLE_EQUAL(w[QZ_OUTPUT], 30.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(w[QZ_TOKEN_EMBD], 2.5, 0);
    CU_ASSERT_DOUBLE_EQUAL(w[QZ_FFN_DOWN], 1.0, 0);
    CU_ASSERT_EQUAL(qz_parse_weights("outputs=3", w, &err), ANVIL_E_INVALID_ARG);
    CU_ASSERT_EQUAL(qz_parse_weights("output=-1", w, &err), ANVIL_E_INVALID_ARG);
    CU_ASSERT_EQUAL(qz_parse_weights("output", w, &err), ANVIL_E_INVALID_ARG);
    CU_ASSERT_EQUAL(qz_parse_weights("output=1x", w, &err), ANVIL_E_INVALID_ARG);
}

int main(void) {
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    CU_pSuite s = CU_add_suite("quantize_target", NULL, NULL);
    CU_add_test(s, "allocator: hand-made optimum, minimum", test_alloc_hand);
    CU_add_test(s, "allocator: a multiplier's budget = brute force", test_alloc_lagrange_optimum);
    CU_add_test(s, "allocator: any budget within it, near brute force", test_alloc_any_budget);
    CU_add_test(s, "allocator: candidate order does not matter", test_alloc_order_free);
    CU_add_test(s, "--target-weights", test_weights_parse);
    CU_add_test(s, "target plan of the trained model", test_plan_tiny);
    const int rc = test_run_cunit();
    anvil_ctx_close(g_ctx);
    test_tmpdir_cleanup();
    return rc;
}
