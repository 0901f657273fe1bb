/* SPDX-License-Identifier: MIT */
/*
 * Matmul through the host: results identical for any thread count, m = 1
 * and m > 1 agree, packed layouts stay within the float bound, fallbacks.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/anvil.h"
#include "inputs.h"
#include "test_env.h"

static anvil_ctx *ctx;

static void check_thread_invariance(uint32_t type) {
    anvil_type_info t;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_type_lookup(ctx, type, &t, &err), ANVIL_OK);
    const anvil_codec *c = anvil_ctx_codec(ctx, type);
    if (c == NULL || c->encode == NULL) return;
    const size_t k = 512, rows = 77, m = 3;
    float *wf = malloc(rows * k * sizeof *wf), *x = malloc(m * k * sizeof *x);
    const size_t row_bytes = k / t.block_elems * t.block_bytes;
    unsigned char *w = malloc(rows * row_bytes);
    float *y1 = malloc(m * rows * sizeof *y1), *yn = malloc(m * rows * sizeof *yn), *ys = malloc(rows * sizeof *ys);
    for (size_t r = 0; r < rows; ++r) test_input_fill(wf + r * k, k, INPUT_LLM_LIKE, 3, r);
    for (size_t i = 0; i < m; ++i) test_input_fill(x + i * k, k, INPUT_NORMAL, 4, i);
    CU_ASSERT_EQUAL_FATAL(anvil_encode(ctx, type, wf, rows * k, w, rows * row_bytes, &err), ANVIL_OK);
    anvil_ctx_set_threads(ctx, 1);
    CU_ASSERT_EQUAL_FATAL(anvil_matmul(ctx, type, w, rows, k, x, m, y1, &err), ANVIL_OK);
    const unsigned counts[] = { 2, 3, 5, 8 };
    for (size_t c2 = 0; c2 < 4; ++c2) {
        anvil_ctx_set_threads(ctx, counts[c2]);
        CU_ASSERT_EQUAL(anvil_ctx_threads(ctx), counts[c2]);
        memset(yn, 0xAB, m * rows * sizeof *yn);
        CU_ASSERT_EQUAL_FATAL(anvil_matmul(ctx, type, w, rows, k, x, m, yn, &err), ANVIL_OK);
        if (memcmp(y1, yn, m * rows * sizeof *y1) != 0) {
            fprintf(stderr, "\n%s: %u threads differ from 1 thread\n", t.name, counts[c2]);
            CU_FAIL("result depends on the thread count");
        }
    }
    /* Each activation row alone equals its row of the m > 1 product. */
    for (size_t i = 0; i < m; ++i) {
        CU_ASSERT_EQUAL_FATAL(anvil_matmul(ctx, type, w, rows, k, x + i * k, 1, ys, &err), ANVIL_OK);
        CU_ASSERT_EQUAL(memcmp(ys, y1 + i * rows, rows * sizeof *ys), 0);
    }
    free(wf);
    free(x);
    free(w);
    free(y1);
    free(yn);
    free(ys);
}

static void test_threads(void) {
    const uint32_t types[] = { ANVIL_TYPE_Q4_0,   ANVIL_TYPE_Q4_1,   ANVIL_TYPE_Q5_0,  ANVIL_TYPE_Q5_1,
                               ANVIL_TYPE_Q8_0,   ANVIL_TYPE_Q2_K,   ANVIL_TYPE_Q3_K,  ANVIL_TYPE_Q4_K,
                               ANVIL_TYPE_Q5_K,   ANVIL_TYPE_Q6_K,   ANVIL_TYPE_TQ1_0, ANVIL_TYPE_TQ2_0,
                               ANVIL_TYPE_IQ4_NL, ANVIL_TYPE_IQ4_XS, ANVIL_TYPE_MXFP4, ANVIL_TYPE_F16,
                               ANVIL_TYPE_Q8_1 };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; ++i) check_thread_invariance(types[i]);
}

static void test_packed(void) {
    char path[4096], body[2048];
    snprintf(path, sizeof path, "%s/pack.ini", test_tmpdir());
    snprintf(body, sizeof body, "[plugins]\npath = %s:%s\nload = abi-good, abi-pack-backend\n", ANVIL_PLUGIN_DIR,
             ABI_PLUGIN_DIR);
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(body, f);
    fclose(f);
    anvil_ctx *pc = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_ctx_open(&pc, path, &err), ANVIL_OK);
    const size_t k = 96, rows = 23, m = 2; /* rows not a multiple of the 4-row groups */
    float wf[23 * 96], x[2 * 96], yp[2 * 23], yu[2 * 23];
    unsigned char w[23 * 3 * 36];
    for (size_t i = 0; i < rows * k; ++i) wf[i] = sinf((float)i * 0.7f);
    for (size_t i = 0; i < m * k; ++i) x[i] = cosf((float)i * 0.3f);
    CU_ASSERT_EQUAL_FATAL(anvil_encode(pc, 1030, wf, rows * k, w, sizeof w, &err), ANVIL_OK);
    anvil_weights *pw = NULL, *uw = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_weights_prepare(pc, 1030, w, rows, k, ANVIL_WEIGHTS_PACK, &pw, &err), ANVIL_OK);
    CU_ASSERT_TRUE(anvil_weights_packed(pw));
    CU_ASSERT_EQUAL_FATAL(anvil_weights_prepare(pc, 1030, w, rows, k, ANVIL_WEIGHTS_TRANSIENT, &uw, &err), ANVIL_OK);
    CU_ASSERT_FALSE(anvil_weights_packed(uw));
    for (unsigned th = 1; th <= 3; ++th) {
        anvil_ctx_set_threads(pc, th);
        CU_ASSERT_EQUAL_FATAL(anvil_matmul_prepared(pc, pw, x, m, yp, &err), ANVIL_OK);
        CU_ASSERT_EQUAL_FATAL(anvil_matmul_prepared(pc, uw, x, m, yu, &err), ANVIL_OK);
        for (size_t i = 0; i < m * rows; ++i) {
            CU_ASSERT_DOUBLE_EQUAL(yp[i], yu[i], 1e-5 * (fabs(yu[i]) + 1.0));
        }
    }
    /* The prepared weights keep the context alive. */
    anvil_ctx_close(pc);
    CU_ASSERT_EQUAL(anvil_matmul_prepared(pc, pw, x, m, yp, &err), ANVIL_OK);
    anvil_weights_free(pw);
    anvil_weights_free(uw);
}

/* anvil_ctx_run_tasks: every task exactly once, on the context's threads,
 * for any thread count and task count (more or fewer tasks than threads). */
typedef struct task_log {
    unsigned char seen[1000];
    int bad;
} task_log;

static void count_task(void *arg, size_t task) {
    task_log *l = arg;
    if (task >= sizeof l->seen) {
        l->bad = 1;
        return;
    }
    __atomic_fetch_add(&l->seen[task], 1, __ATOMIC_RELAXED);
}

static void test_run_tasks(void) {
    static const unsigned threads[] = { 1, 2, 3, 8 };
    static const size_t tasks[] = { 0, 1, 2, 7, 1000 };
    for (size_t a = 0; a < sizeof threads / sizeof threads[0]; ++a) {
        anvil_ctx_set_threads(ctx, threads[a]);
        for (size_t b = 0; b < sizeof tasks / sizeof tasks[0]; ++b) {
            task_log l;
            memset(&l, 0, sizeof l);
            CU_ASSERT_EQUAL(anvil_ctx_run_tasks(ctx, tasks[b], count_task, &l), ANVIL_OK);
            size_t once = 0, other = 0;
            for (size_t t = 0; t < sizeof l.seen; ++t) {
                once += t < tasks[b] && l.seen[t] == 1;
                other += t >= tasks[b] && l.seen[t] != 0;
            }
            CU_ASSERT_EQUAL(once, tasks[b]);
            CU_ASSERT_EQUAL(other, 0);
            CU_ASSERT_EQUAL(l.bad, 0);
        }
    }
    task_log l;
    CU_ASSERT_EQUAL(anvil_ctx_run_tasks(NULL, 1, count_task, &l), ANVIL_E_INVALID_ARG);
    CU_ASSERT_EQUAL(anvil_ctx_run_tasks(ctx, 1, NULL, &l), ANVIL_E_INVALID_ARG);
    anvil_ctx_set_threads(ctx, 1);
}

static int setup(void) {
    anvil_error err;
    return anvil_ctx_open(&ctx, test_config_path(), &err) == ANVIL_OK ? 0 : 1;
}

static int teardown(void) {
    anvil_ctx_close(ctx);
    return 0;
}

int main(void) {
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    CU_pSuite s = CU_add_suite("matmul", setup, teardown);
    CU_add_test(s, "identical results for any thread count", test_threads);
    CU_add_test(s, "packed weights", test_packed);
    CU_add_test(s, "run_tasks: every task once, any thread count", test_run_tasks);
    return test_run_cunit();
}
