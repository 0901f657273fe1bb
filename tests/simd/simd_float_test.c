/* SPDX-License-Identifier: MIT */
/*
 * F32, F16 and BF16 weight kernels (f32 activations) of the SIMD backends
 * against the referee, plugins/ref/float_dot.h, BIT FOR BIT: the referee's
 * summation order is the contract, so there is no tolerance.
 *
 * For each plugin built here (backend-avx2, backend-avx512) that this CPU
 * runs, and each variant its init() picks from the CPU features (AVX-512:
 * with and without AVX512_BF16, i.e. vdpbf16ps and its emulation, where
 * the CPU has it):
 *  - vec_dot on row lengths 1..80 and a few long ones, random values and
 *    random bit patterns (subnormals, Inf, NaN; a NaN only has to be a NaN);
 *  - GEMV of 1..19 rows and GEMM of 1..13 rows x 1..30 activation rows with
 *    padded strides and rows at odd offsets: every value equal to the
 *    referee's dot of its row (a value never depends on the tile);
 *  - through the host: anvil_matmul on F32 / F16 / BF16 weights gives the
 *    referee's values (dispatch of the built-in float types).
 * ANVIL_FLOAT_TEST_ROWS scales the random passes (default 2000 rows each).
 */
#include <CUnit/Basic.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/anvil.h"
#include "anvil/numeric.h"
#include "ref/float_dot.h"
#include "test_env.h"

static anvil_cpu_info g_cpu;
static size_t g_rows = 2000;
static uint64_t g_seed = 0x9e3779b97f4a7c15u;

static uint32_t rnd(void) {
    g_seed ^= g_seed << 13;
    g_seed ^= g_seed >> 7;
    g_seed ^= g_seed << 17;
    return (uint32_t)(g_seed >> 11);
}

static float rnd_normal(void) {
    float s = 0.0f;
    for (int i = 0; i < 4; ++i) s += (float)(rnd() % 2001) / 1000.0f - 1.0f;
    return s;
}

static size_t elem_size(uint32_t t) { return t == ANVIL_TYPE_F32 ? 4 : 2; }

static const char *type_name(uint32_t t) {
    return t == ANVIL_TYPE_F32 ? "f32" : (t == ANVIL_TYPE_F16 ? "f16" : "bf16");
}

/* A weight element of type t: a plausible value or (bits) any pattern,
 * stored at p (elem_size(t) bytes). */
static void rnd_w(uint32_t t, int bits, uint8_t *p) {
    const float v = rnd_normal() * 0.05f;
    if (t == ANVIL_TYPE_F32) {
        uint32_t u;
        memcpy(&u, &v, 4);
        if (bits) u = rnd() ^ (rnd() << 21);
        memcpy(p, &u, 4);
        return;
    }
    const uint16_t h = bits ? (uint16_t)rnd() : (t == ANVIL_TYPE_F16 ? anvil_fp32_to_fp16(v) : anvil_fp32_to_bf16(v));
    memcpy(p, &h, 2);
}

static float rnd_a(int bits) {
    if (!bits) return rnd_normal() * 3.0f;
    const uint32_t u = rnd();
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static int same(float x, float y) { return (isnan(x) && isnan(y)) || memcmp(&x, &y, sizeof x) == 0; }

static float ref_dot(uint32_t t, size_t n, const void *w, const float *a) {
    float s;
    if (t == ANVIL_TYPE_F32) {
        anvil_ref_vec_dot_f32_f32(n, &s, w, a);
    } else if (t == ANVIL_TYPE_F16) {
        anvil_ref_vec_dot_f16_f32(n, &s, w, a);
    } else {
        anvil_ref_vec_dot_bf16_f32(n, &s, w, a);
    }
    return s;
}

typedef struct plugin {
    const char *path;
    const anvil_plugin_desc *desc;
} plugin;

static const anvil_backend *init_backend(const plugin *p, uint64_t features) {
    static anvil_host_services services;
    static anvil_cpu_info cpu;
    cpu = g_cpu;
    cpu.features = features;
    services.struct_size = sizeof services;
    services.abi_major = ANVIL_ABI_MAJOR;
    services.abi_minor = ANVIL_ABI_MINOR;
    services.cpu = &cpu;
    char err[256] = "";
    if (p->desc->init != NULL && p->desc->init(&services, err, sizeof err) != ANVIL_OK) return NULL;
    const anvil_backend *b = p->desc->backends[0];
    return b->score(&cpu, NULL, 0) > 0 ? b : NULL;
}

static const anvil_kernel *kernel_of(const anvil_backend *b, uint32_t t) {
    for (size_t i = 0; i < b->n_kernels; ++i) {
        if (b->kernels[i]->weight_type == t && b->kernels[i]->act_type == ANVIL_TYPE_F32) return b->kernels[i];
    }
    return NULL;
}

static size_t g_checked, g_bad;

static void expect(float got, float want, const char *what, const char *variant, size_t n) {
    ++g_checked;
    if (same(got, want)) return;
    if (++g_bad <= 5) fprintf(stderr, "\n%s %s n=%zu: %a, referee %a\n", variant, what, n, got, want);
}

/* vec_dot, GEMV and GEMM of one kernel against the referee. */
static void check_kernel(const anvil_kernel *k, uint32_t t, int bits) {
    const size_t es = elem_size(t), nmax = 300, rmax = 19, mmax = 30, ws = es * nmax + 6, as = nmax + 3;
    uint8_t *w = malloc(rmax * ws + 1);
    float *a = malloc((mmax * as + 1) * sizeof *a);
    float *y = malloc(mmax * rmax * sizeof *y);
    float *ref = malloc(mmax * rmax * sizeof *ref);
    CU_ASSERT_FATAL(w && a && y && ref);
    for (size_t it = 0; it < g_rows / 10; ++it) {
        const size_t n = it % 3 == 0 ? 1 + it % 80 : (it % 3 == 1 ? 1 + rnd() % nmax : 256 + 16 * (rnd() % 3));
        const size_t nr = 1 + rnd() % (it % 2 ? rmax : 13), m = 1 + rnd() % mmax;
        uint8_t *wr = w + 1; /* odd offset */
        for (size_t r = 0; r < nr; ++r)
            for (size_t i = 0; i < n; ++i) rnd_w(t, bits, wr + r * ws + es * i);
        for (size_t c = 0; c < m; ++c)
            for (size_t i = 0; i < n; ++i) a[c * as + i] = rnd_a(bits);
        for (size_t c = 0; c < m; ++c)
            for (size_t r = 0; r < nr; ++r) ref[c * nr + r] = ref_dot(t, n, wr + r * ws, a + c * as);
        for (size_t r = 0; r < nr; ++r) {
            float s;
            k->vec_dot(n, &s, wr + r * ws, a);
            expect(s, ref[r], "vec_dot", k->variant, n);
        }
        if (k->gemv != NULL) {
            const size_t c = m > 1 ? 1 : 0; /* a row at an offset */
            k->gemv(n, nr, y, wr, ws, a + c * as);
            for (size_t r = 0; r < nr; ++r) expect(y[r], ref[c * nr + r], "gemv", k->variant, n);
        }
        if (k->gemm != NULL) {
            k->gemm(n, nr, m, y, nr, wr, ws, a, as * sizeof *a);
            for (size_t i = 0; i < m * nr; ++i) expect(y[i], ref[i], "gemm", k->variant, n);
        }
    }
    free(w);
    free(a);
    free(y);
    free(ref);
}

static void check_plugin(const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.so", ANVIL_PLUGIN_DIR, name);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lib);
    anvil_plugin_entry_fn entry = (anvil_plugin_entry_fn)dlsym(lib, ANVIL_PLUGIN_ENTRY_SYMBOL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(entry);
    const plugin p = { path, entry(ANVIL_ABI_MAJOR, ANVIL_ABI_MINOR) };
    CU_ASSERT_PTR_NOT_NULL_FATAL(p.desc);
    /* Every variant this CPU runs: all its features, then without BF16. */
    const uint64_t sets[2] = { g_cpu.features_raw, g_cpu.features_raw & ~(uint64_t)ANVIL_CPU_AVX512BF16 };
    for (int s = 0; s < 2; ++s) {
        if (s == 1 && sets[1] == sets[0]) break;
        const anvil_backend *b = init_backend(&p, sets[s]);
        if (b == NULL) {
            printf("\n%s: cannot run on this CPU: F16/BF16 kernels SKIPPED", name);
            break;
        }
        const uint32_t types[3] = { ANVIL_TYPE_F32, ANVIL_TYPE_F16, ANVIL_TYPE_BF16 };
        for (int ti = 0; ti < 3; ++ti) {
            const anvil_kernel *k = kernel_of(b, types[ti]);
            CU_ASSERT_PTR_NOT_NULL(k);
            if (k == NULL) continue;
            g_checked = g_bad = 0;
            check_kernel(k, types[ti], 0);
            check_kernel(k, types[ti], 1);
            printf("\n%s %s %s: %zu values, %zu differ", name, k->variant, type_name(types[ti]), g_checked, g_bad);
            CU_ASSERT_EQUAL(g_bad, 0);
        }
    }
    dlclose(lib);
}

static void test_avx512(void) { check_plugin("backend-avx512"); }
static void test_avx2(void) { check_plugin("backend-avx2"); }

/* Through the host: the dispatched kernel (whichever backend) equals the
 * referee, for GEMV (m = 1) and GEMM (m = 37). */
static void test_matmul(void) {
    anvil_ctx *ctx = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_ctx_open(&ctx, getenv("ANVIL_CONFIG"), &err), ANVIL_OK);
    const size_t n = 200, rows = 70, m = 37;
    uint8_t *w = malloc(n * rows * 4);
    float *a = malloc(n * m * sizeof *a), *y = malloc(rows * m * sizeof *y);
    CU_ASSERT_FATAL(w && a && y);
    const uint32_t types[3] = { ANVIL_TYPE_F32, ANVIL_TYPE_F16, ANVIL_TYPE_BF16 };
    for (int ti = 0; ti < 3; ++ti) {
        const size_t es = elem_size(types[ti]);
        for (size_t i = 0; i < n * rows; ++i) rnd_w(types[ti], 0, w + es * i);
        for (size_t i = 0; i < n * m; ++i) a[i] = rnd_a(0);
        for (size_t mm = 1; mm <= m; mm += m - 1) {
            CU_ASSERT_EQUAL(anvil_matmul(ctx, types[ti], w, rows, n, a, mm, y, &err), ANVIL_OK);
            size_t bad = 0;
            for (size_t i = 0; i < mm; ++i)
                for (size_t r = 0; r < rows; ++r)
                    bad += !same(y[i * rows + r], ref_dot(types[ti], n, w + r * n * es, a + i * n));
            CU_ASSERT_EQUAL(bad, 0);
        }
    }
    free(w);
    free(a);
    free(y);
    anvil_ctx_close(ctx);
}

int main(void) {
    const char *rows = getenv("ANVIL_FLOAT_TEST_ROWS");
    if (rows != NULL && atol(rows) > 0) g_rows = (size_t)atol(rows);
    anvil_ctx *ctx = NULL;
    anvil_error err;
    if (anvil_ctx_open(&ctx, getenv("ANVIL_CONFIG"), &err) != ANVIL_OK) {
        fprintf(stderr, "cannot open a context: %s\n", err.message);
        return 1;
    }
    g_cpu = *anvil_ctx_cpu(ctx);
    anvil_ctx_close(ctx);
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    CU_pSuite s = CU_add_suite("f32/f16/bf16 kernels", NULL, NULL);
    CU_add_test(s, "backend-avx512 against the referee, bit for bit", test_avx512);
    CU_add_test(s, "backend-avx2 against the referee, bit for bit", test_avx2);
    CU_add_test(s, "anvil_matmul F32/F16/BF16: the referee's values", test_matmul);
    return test_run_cunit();
}
