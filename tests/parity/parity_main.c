/* SPDX-License-Identifier: MIT */
/*
 * anvil-parity [--rows N] [--seed S] [--family NAME]... [--skip NAME]...
 *              [--write-golden DIR]
 *              [--oracle DIR] [--require-oracle] [--verbose]
 *
 * Exit: 0 all checks passed; 1 a mismatch; 77 ggml not found (skipped)
 * unless --require-oracle, which turns that into 1.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "parity.h"

/* Wall and CPU seconds, printed after each family: where make test's
 * parity budget goes. */
static double wall_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef int (*family_fn)(parity_ctx *);

static family_fn family_by_name(const char *n) {
    if (strcmp(n, "q8_0") == 0) return parity_q8_0;
    if (strcmp(n, "kquants") == 0) return parity_kquants;
    if (strcmp(n, "ternary") == 0) return parity_ternary;
    if (strcmp(n, "cold") == 0) return parity_cold;
    if (strcmp(n, "gguf") == 0) return parity_gguf;
    if (strcmp(n, "transcode") == 0) return parity_transcode;
    if (strcmp(n, "backends") == 0) return parity_backends;
    if (strcmp(n, "backends_avx2") == 0) return parity_backends_avx2;
    if (strcmp(n, "imatrix") == 0) return parity_imatrix;
    if (strcmp(n, "quantize") == 0) return parity_quantize;
    if (strcmp(n, "hf") == 0) return parity_hf;
    if (strcmp(n, "forward") == 0) return parity_forward;
    if (strcmp(n, "imatrix_collect") == 0) return parity_imatrix_collect;
    return NULL;
}

static const char *const all_families[] = { "q8_0",      "kquants",         "ternary",      "cold",     "gguf",
                                            "transcode", "backends",        "imatrix",      "quantize", "hf",
                                            "forward",   "imatrix_collect", "backends_avx2" };

static int listed(const char *const *names, size_t n, const char *name) {
    for (size_t j = 0; j < n; ++j) {
        if (strcmp(names[j], name) == 0) return 1;
    }
    return 0;
}

static int family_known(const char *name) {
    return listed(all_families, sizeof all_families / sizeof all_families[0], name);
}

void parity_report(parity_ctx *pc, const char *format, const char *what, size_t checked, size_t mismatches) {
    pc->total_checks += checked;
    pc->total_failures += mismatches;
    printf("%-8s %-34s %9zu checked  %6zu mismatches  %s\n", format, what, checked, mismatches,
           mismatches == 0 && checked > 0 ? "OK" : "FAIL");
    if (checked == 0) {
        pc->total_failures += 1; /* a check that checked nothing is a failure */
    }
    fflush(stdout);
}

int parity_same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

size_t parity_first_diff_f32(const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        if (!parity_same_bits(a[i], b[i])) {
            return i;
        }
    }
    return n;
}

size_t parity_first_diff_u8(const void *a, const void *b, size_t n) {
    const unsigned char *x = a, *y = b;
    for (size_t i = 0; i < n; ++i) {
        if (x[i] != y[i]) {
            return i;
        }
    }
    return n;
}

const char *parity_config_path(void) {
#ifdef ANVIL_TEST_CONFIG
    static const char build_config[] = ANVIL_TEST_CONFIG;
#else
    static const char build_config[] = "";
#endif
    const char *e = getenv("ANVIL_CONFIG");
    return e != NULL && *e != '\0' ? e : (build_config[0] ? build_config : NULL);
}

int parity_close(float a, float b, float rel_tol, float abs_floor) {
    if (isnan(a) || isnan(b)) {
        return isnan(a) && isnan(b);
    }
    float m = fabsf(a) > fabsf(b) ? fabsf(a) : fabsf(b);
    if (m < abs_floor) {
        m = abs_floor;
    }
    return fabsf(a - b) <= rel_tol * m;
}

static void usage(void) {
    puts(
        "usage: anvil-parity [--rows N] [--seed S] [--family NAME]... [--skip NAME]...\n"
        "                    [--write-golden DIR]\n"
        "                    [--oracle DIR] [--require-oracle] [--verbose]\n"
        "Compares anvil's encoders, decoders and dot products with ggml's, and anvil quantize\n"
        "with llama.cpp's llama_model_quantize, both loaded by\n"
        "dlopen from the npm package @node-llama-cpp/linux-x64@3.22.1.\n"
        "families: q8_0 kquants ternary cold gguf transcode backends imatrix quantize hf forward imatrix_collect\n"
        "          backends_avx2 (backends: backend-avx512; backends_avx2: backend-avx2, backend-scalar's encoders)\n"
        "--family runs only the families named, --skip all but those named\n"
        "exit: 0 pass, 1 mismatch, 77 ggml not found (1 with --require-oracle)");
}

int main(int argc, char **argv) {
    parity_ctx pc = { .rows = 10000, .seed = 1 };
    const char *oracle_dir = NULL;
    const char *only[16], *skip[16];
    size_t n_only = 0, n_skip = 0;
    int require = 0;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (strcmp(a, "--rows") == 0 && i + 1 < argc) {
            pc.rows = (size_t)strtoull(argv[++i], NULL, 10);
        } else if (strcmp(a, "--seed") == 0 && i + 1 < argc) {
            pc.seed = strtoull(argv[++i], NULL, 10);
        } else if (strcmp(a, "--family") == 0 && i + 1 < argc && n_only < 16) {
            only[n_only++] = argv[++i];
        } else if (strcmp(a, "--skip") == 0 && i + 1 < argc && n_skip < 16) {
            skip[n_skip++] = argv[++i];
        } else if (strcmp(a, "--write-golden") == 0 && i + 1 < argc) {
            pc.golden_dir = argv[++i];
        } else if (strcmp(a, "--oracle") == 0 && i + 1 < argc) {
            oracle_dir = argv[++i];
        } else if (strcmp(a, "--require-oracle") == 0) {
            require = 1;
        } else if (strcmp(a, "--verbose") == 0) {
            pc.verbose = 1;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage();
            return 0;
        } else {
            fprintf(stderr, "anvil-parity: unknown argument '%s' (try --help)\n", a);
            return 2;
        }
    }
    static ggml_oracle oracle;
    char why[2048];
    if (ggml_oracle_open(&oracle, oracle_dir, why, sizeof why) != 0) {
        fprintf(stderr, "anvil-parity: %s\n", why);
        return require ? 1 : 77;
    }
    pc.oracle = &oracle;
    printf("ggml oracle: %s (cpu variant: %s)\n", oracle.dir, oracle.cpu_variant[0] ? oracle.cpu_variant : "none");

    for (size_t j = 0; j < n_only + n_skip; ++j) {
        const char *name = j < n_only ? only[j] : skip[j - n_only];
        if (!family_known(name)) {
            fprintf(stderr, "anvil-parity: unknown family '%s' (try --help)\n", name);
            return 2;
        }
    }
    int ran = 0;
    for (size_t f = 0; f < sizeof all_families / sizeof all_families[0]; ++f) {
        const char *name = all_families[f];
        if ((n_only > 0 && !listed(only, n_only, name)) || listed(skip, n_skip, name)) continue;
        family_fn fn = family_by_name(name);
        if (fn == NULL) {
            printf("%-8s (family not built yet)\n", name);
            if (n_only > 0) {
                pc.total_failures++;
            }
            continue;
        }
        printf("== %s\n", name);
        fflush(stdout);
        const double w0 = wall_s();
        const clock_t c0 = clock();
        fn(&pc);
        printf("== %s: %.1f s wall, %.1f s CPU (this process)\n", name, wall_s() - w0,
               (double)(clock() - c0) / CLOCKS_PER_SEC);
        fflush(stdout);
        ran++;
    }
    printf("parity: %d families, %zu checks, %zu failures\n", ran, pc.total_checks, pc.total_failures);
    if (ran == 0) {
        return 1;
    }
    return pc.total_failures == 0 ? 0 : 1;
}
