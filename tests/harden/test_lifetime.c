/* SPDX-License-Identifier: MIT */
/*
 * Plugin lifetime across contexts and threads (issue 20, item 2).
 *
 *  - Two contexts load one plugin; closing the first must not deinit it:
 *    the second keeps encoding, decoding and multiplying through it. Its
 *    init runs once, its deinit once, after the last context is closed.
 *  - Many threads open, use and close contexts at once, and share one
 *    context for matmuls: results equal the single-threaded ones, init and
 *    deinit stay balanced, nothing runs after deinit. Built again with
 *    -fsanitize=thread (`make tsan`), this is the race test.
 */
#include <CUnit/CUnit.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "anvil/anvil.h"
#include "inputs.h"
#include "lifetime_plugin.h"
#include "test_env.h"

#define LT_TYPE 1041
#define ROWS 48
#define K 256

static char config_path[4200], plugin_path[4200];
static void *plugin_handle; /* our own reference: the counters outlive the host's dlclose */

static void write_config(void) {
    snprintf(config_path, sizeof config_path, "%s/lifetime.ini", test_tmpdir());
    FILE *f = fopen(config_path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fprintf(f, "[plugins]\npath = %s:%s\nload = lifetime-plugin, codec-q8_0, backend-scalar\n", LIFETIME_PLUGIN_DIR,
            ANVIL_PLUGIN_DIR);
    fclose(f);
    chmod(config_path, 0644);
    snprintf(plugin_path, sizeof plugin_path, "%s/lifetime-plugin.so", LIFETIME_PLUGIN_DIR);
}

static void counts(int *init, int *deinit, int *violations) {
    *init = *deinit = *violations = -1;
    if (plugin_handle == NULL) plugin_handle = dlopen(plugin_path, RTLD_NOW | RTLD_NOLOAD);
    if (plugin_handle == NULL) return;
    lifetime_plugin_counts_fn fn;
    void *sym = dlsym(plugin_handle, "lifetime_plugin_counts");
    memcpy(&fn, &sym, sizeof fn);
    if (fn != NULL) fn(init, deinit, violations);
}

static anvil_ctx *open_ctx(void) {
    anvil_ctx *ctx = NULL;
    anvil_error err;
    const int rc = anvil_ctx_open(&ctx, config_path, &err);
    if (rc != ANVIL_OK) fprintf(stderr, "anvil_ctx_open: %s\n", err.message);
    return ctx;
}

/* Weights of `type` for ROWS x K (encoded through ctx) and an activation. */
static void make_inputs(anvil_ctx *ctx, uint32_t type, void **w, size_t *w_size, float *x) {
    static float src[ROWS * K];
    test_input_fill(src, ROWS * K, INPUT_LLM_LIKE, 7, 0);
    test_input_fill(x, K, INPUT_RAMP, 3, 1);
    anvil_type_info t;
    CU_ASSERT_EQUAL_FATAL(anvil_type_lookup(ctx, type, &t, NULL), ANVIL_OK);
    *w_size = (size_t)ROWS * K / t.block_elems * t.block_bytes;
    *w = malloc(*w_size);
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_encode(ctx, type, src, ROWS * K, *w, *w_size, &err), ANVIL_OK);
}

static void test_two_contexts(void) {
    write_config();
    anvil_ctx *a = open_ctx(), *b = open_ctx();
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    int in = 0, de = 0, vi = 0;
    counts(&in, &de, &vi);
    CU_ASSERT_EQUAL(in, 1); /* one init for both contexts */
    CU_ASSERT_EQUAL(de, 0);

    void *w = NULL;
    size_t w_size = 0;
    float x[K], y_before[ROWS], y_after[ROWS], dec_before[K], dec_after[K];
    make_inputs(b, LT_TYPE, &w, &w_size, x);
    anvil_error err;
    CU_ASSERT_EQUAL(anvil_matmul(b, LT_TYPE, w, ROWS, K, x, 1, y_before, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_decode(b, LT_TYPE, w, w_size / ROWS, dec_before, K, &err), ANVIL_OK);

    anvil_ctx_close(a); /* the first user goes; the plugin must stay */
    counts(&in, &de, &vi);
    CU_ASSERT_EQUAL(de, 0);
    CU_ASSERT_EQUAL(anvil_matmul(b, LT_TYPE, w, ROWS, K, x, 1, y_after, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_decode(b, LT_TYPE, w, w_size / ROWS, dec_after, K, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(memcmp(y_before, y_after, sizeof y_after), 0);
    CU_ASSERT_EQUAL(memcmp(dec_before, dec_after, sizeof dec_after), 0);
    CU_ASSERT(isfinite(y_after[0]) && y_after[0] != 0.0f);
    counts(&in, &de, &vi);
    CU_ASSERT_EQUAL(vi, 0);

    anvil_ctx_close(b); /* the last user: now deinit, once */
    counts(&in, &de, &vi);
    CU_ASSERT_EQUAL(in, 1);
    CU_ASSERT_EQUAL(de, 1);
    CU_ASSERT_EQUAL(vi, 0);

    /* Loaded again after a full teardown: init again, before first use. */
    anvil_ctx *c = open_ctx();
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    counts(&in, &de, &vi);
    CU_ASSERT_EQUAL(in, 2);
    CU_ASSERT_EQUAL(anvil_matmul(c, LT_TYPE, w, ROWS, K, x, 1, y_after, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(memcmp(y_before, y_after, sizeof y_after), 0);
    anvil_ctx_close(c);
    counts(&in, &de, &vi);
    CU_ASSERT_EQUAL(de, 2);
    CU_ASSERT_EQUAL(vi, 0);
    free(w);
}

/* ---- many threads ------------------------------------------------------------- */

#define THREADS 6
#define ROUNDS 12

typedef struct job {
    anvil_ctx *shared; /* NULL: open and close a context per round */
    const void *w[2];
    const float *x;
    const float *want[2]; /* single-threaded results */
    int bad;
} job;

static const uint32_t types[2] = { LT_TYPE, ANVIL_TYPE_Q8_0 };

static void *worker(void *arg) {
    job *j = arg;
    float y[ROWS];
    anvil_error err;
    for (int r = 0; r < ROUNDS; ++r) {
        anvil_ctx *ctx = j->shared != NULL ? j->shared : open_ctx();
        if (ctx == NULL) {
            j->bad++;
            continue;
        }
        if (j->shared == NULL && r % 3 == 0) anvil_ctx_set_threads(ctx, 1 + (unsigned)r % 2);
        for (int t = 0; t < 2; ++t) {
            if (anvil_matmul(ctx, types[t], j->w[t], ROWS, K, j->x, 1, y, &err) != ANVIL_OK ||
                memcmp(y, j->want[t], sizeof y) != 0) {
                j->bad++;
            }
        }
        if (j->shared == NULL) anvil_ctx_close(ctx);
    }
    return NULL;
}

static void test_threads(void) {
    write_config();
    anvil_ctx *ref = open_ctx();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ref);
    anvil_ctx_set_threads(ref, 2);
    void *w[2];
    size_t w_size[2];
    float x[K], want[2][ROWS];
    anvil_error err;
    for (int t = 0; t < 2; ++t) {
        make_inputs(ref, types[t], &w[t], &w_size[t], x);
        CU_ASSERT_EQUAL(anvil_matmul(ref, types[t], w[t], ROWS, K, x, 1, want[t], &err), ANVIL_OK);
    }
    int in0 = 0, de0 = 0, vi = 0;
    counts(&in0, &de0, &vi);

    pthread_t th[2 * THREADS];
    job jobs[2 * THREADS];
    for (int i = 0; i < 2 * THREADS; ++i) {
        jobs[i] = (job){ i < THREADS ? NULL : ref, { w[0], w[1] }, x, { want[0], want[1] }, 0 };
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, worker, &jobs[i]), 0);
    }
    int bad = 0;
    for (int i = 0; i < 2 * THREADS; ++i) {
        pthread_join(th[i], NULL);
        bad += jobs[i].bad;
    }
    CU_ASSERT_EQUAL(bad, 0);
    int in = 0, de = 0;
    counts(&in, &de, &vi);
    /* The reference context kept the plugin loaded throughout. */
    CU_ASSERT_EQUAL(in, in0);
    CU_ASSERT_EQUAL(de, de0);
    CU_ASSERT_EQUAL(vi, 0);
    anvil_ctx_close(ref);
    counts(&in, &de, &vi);
    CU_ASSERT_EQUAL(in, de);
    free(w[0]);
    free(w[1]);
}

int main(void) {
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    CU_pSuite s = CU_add_suite("plugin lifetime", NULL, NULL);
    CU_add_test(s, "two contexts: close one, use the other", test_two_contexts);
    CU_add_test(s, "threads: open/use/close and a shared context", test_threads);
    const int rc = test_run_cunit();
    if (plugin_handle != NULL) dlclose(plugin_handle);
    return rc;
}
