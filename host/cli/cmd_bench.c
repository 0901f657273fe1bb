/*
 * anvil bench: single-thread mat-vec throughput per type, and -- when ggml is
 * found -- ggml's own vec_dot on the same weights and activations in the same
 * run, with the ratio. Speed is reported here, never asserted in tests.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "ggml_oracle.h"
#include "synth.h"

typedef struct bench_opts {
    const char *types[64];
    size_t n_types;
    size_t rows, k, iters;
    const char *backend;
    int json;
    int no_ggml;
} bench_opts;

static double now_sec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int usage(FILE *f) {
    fprintf(f,
            "usage: anvil bench [--type T]... [--rows N] [--k K] [--iters I] [--backend B]\n"
            "                   [--no-ggml] [--json]\n"
            "\n"
            "Single-thread mat-vec y = W.x for each type (default: every loaded weight format\n"
            "with a kernel): W is N x K (default 4096 x 4096) built from llm-like rows, x is\n"
            "quantized once into the type's activation format. Reports GB/s of weight bytes\n"
            "read and Gelem/s (best of I timed passes, default: as many as fit in ~0.3 s).\n"
            "When ggml is found ($ANVIL_GGML_DIR or the build tree's npm folder), ggml's\n"
            "ggml_vec_dot_* runs on the same bytes in the same run and the ratio is printed\n"
            "(anvil / ggml, higher is better for anvil), with the largest relative difference\n"
            "between the two results as a sanity check.\n"
            "--backend B  use backend B's kernel instead of the dispatched one.\n");
    return f == stdout ? 0 : 2;
}

typedef void (*row_loop_fn)(void *state);

/* Best time of several passes of fn. */
static double time_best(row_loop_fn fn, void *state, size_t iters) {
    double best = 1e30, total = 0;
    size_t done = 0;
    for (;;) {
        const double t0 = now_sec();
        fn(state);
        const double dt = now_sec() - t0;
        if (dt < best) best = dt;
        total += dt;
        done++;
        if (iters > 0 ? done >= iters : (total > 0.3 && done >= 3) || done >= 1000) break;
    }
    return best;
}

typedef struct anvil_run {
    const anvil_kernel *k;
    size_t n, rows, row_bytes;
    const void *w, *act;
    float *y;
} anvil_run;

static void run_anvil(void *p) {
    anvil_run *r = p;
    if (r->k->gemv != NULL) {
        r->k->gemv(r->n, r->rows, r->y, r->w, r->row_bytes, r->act);
    } else {
        for (size_t i = 0; i < r->rows; ++i) r->k->vec_dot(r->n, &r->y[i], (const char *)r->w + i * r->row_bytes, r->act);
    }
}

typedef struct ggml_run {
    ggml_vec_dot_fn dot;
    size_t n, rows, row_bytes;
    const void *w, *act;
    float *y;
} ggml_run;

static void run_ggml(void *p) {
    ggml_run *r = p;
    for (size_t i = 0; i < r->rows; ++i) {
        r->dot((int)r->n, &r->y[i], 0, (const char *)r->w + i * r->row_bytes, 0, r->act, 0, 1);
    }
}

static int bench_type(cli_globals *g, const bench_opts *o, uint32_t id, ggml_oracle *oracle, int have_ggml, int *first) {
    anvil_ctx *ctx = g->ctx;
    anvil_type_info t, at;
    anvil_error err;
    if (anvil_type_lookup(ctx, id, &t, &err) != ANVIL_OK) return cli_fail_err("bench", &err);
    const anvil_codec *c = anvil_ctx_codec(ctx, id);
    const anvil_kernel *kern;
    const anvil_act_quantizer *quant;
    if (anvil_ctx_find_kernel(ctx, o->backend, id, &kern, &quant, &err) != ANVIL_OK) {
        if (!o->json) printf("  %-8s skipped: %s\n", t.name, err.message);
        return 0;
    }
    if (anvil_type_lookup(ctx, c->act_type, &at, &err) != ANVIL_OK) return cli_fail_err("bench", &err);
    const size_t n = o->k, rows = o->rows;
    if (n % t.block_elems != 0 || n % at.block_elems != 0) {
        if (!o->json) printf("  %-8s skipped: K=%zu is not a multiple of its block\n", t.name, n);
        return 0;
    }
    const size_t row_bytes = n / t.block_elems * t.block_bytes;
    const size_t act_bytes = n / at.block_elems * at.block_bytes;
    unsigned char *w = malloc(row_bytes * rows);
    void *act = malloc(act_bytes), *gact = malloc(act_bytes);
    float *row = malloc(n * sizeof *row), *x = malloc(n * sizeof *x);
    float *ya = malloc(rows * sizeof *ya), *yg = malloc(rows * sizeof *yg);
    int rc = 0;
    if (!w || !act || !gact || !row || !x || !ya || !yg) {
        rc = cli_fail("bench", "out of memory for %zu x %zu %s", rows, n, t.name);
        goto out;
    }
    /* Weights: encoded llm-like rows; decode-only formats get random blocks
     * (timing does not depend on the values). */
    synth_rng rng;
    synth_seed(&rng, id);
    for (size_t r = 0; r < rows; ++r) {
        synth_llm_row(row, n, 7, r);
        if (c->encode == NULL || anvil_encode(ctx, id, row, n, w + r * row_bytes, row_bytes, &err) != ANVIL_OK) {
            for (size_t b = 0; b < row_bytes; ++b) w[r * row_bytes + b] = (unsigned char)synth_u64(&rng);
        }
    }
    for (size_t i = 0; i < n; ++i) x[i] = synth_normal(&rng);
    if (quant != NULL) {
        quant->quantize(x, act, n);
    } else if (anvil_encode(ctx, c->act_type, x, n, act, act_bytes, &err) != ANVIL_OK) {
        rc = cli_fail_err("bench", &err);
        goto out;
    }
    anvil_run ar = { kern, n, rows, row_bytes, w, act, ya };
    const double ta = time_best(run_anvil, &ar, o->iters);
    const double gb = (double)(row_bytes * rows) / 1e9;
    const double a_gbs = gb / ta, a_gel = (double)(n * rows) / 1e9 / ta;

    double g_gbs = 0, maxrel = 0;
    int have = 0;
    if (have_ggml) {
        ggml_vec_dot_fn dot = ggml_oracle_vec_dot(oracle, t.name, at.name);
        if (dot != NULL) {
            /* Same activation bytes for both, so the results must agree. */
            memcpy(gact, act, act_bytes);
            ggml_run gr = { dot, n, rows, row_bytes, w, gact, yg };
            const double tg = time_best(run_ggml, &gr, o->iters);
            g_gbs = gb / tg;
            have = 1;
            for (size_t i = 0; i < rows; ++i) {
                const double d = fabs((double)ya[i] - yg[i]);
                const double m = fmax(fabs((double)ya[i]), fabs((double)yg[i]));
                if (isfinite(d) && m > 1e-6 && d / m > maxrel) maxrel = d / m;
            }
        }
    }
    if (o->json) {
        printf("%s{\"type\":\"%s\",\"backend\":\"%s\",\"variant\":\"%s\",\"rows\":%zu,\"k\":%zu,\"weight_bytes\":%zu,"
               "\"gbps\":%.4f,\"gelems\":%.4f",
               *first ? "" : ",", t.name, o->backend ? o->backend : "dispatched", kern->variant ? kern->variant : "",
               rows, n, row_bytes * rows, a_gbs, a_gel);
        if (have) printf(",\"ggml_gbps\":%.4f,\"ratio\":%.4f,\"max_rel_diff\":%.3g", g_gbs, a_gbs / g_gbs, maxrel);
        printf("}");
    } else {
        printf("  %-8s %-14s %6zux%-6zu %8.1f %8.2f %8.3f", t.name, kern->variant ? kern->variant : "?", rows, n,
               gb * 1e3, a_gbs, a_gel);
        if (have) printf(" %8.2f %7.2fx %9.2g", g_gbs, a_gbs / g_gbs, maxrel);
        else printf(" %8s %8s %9s", "-", "-", "-");
        printf("\n");
    }
    *first = 0;
out:
    free(w);
    free(act);
    free(gact);
    free(row);
    free(x);
    free(ya);
    free(yg);
    return rc;
}

int cmd_bench(cli_globals *g, int argc, char **argv) {
    bench_opts o = { .rows = 4096, .k = 4096 };
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        const int has = i + 1 < argc;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) return usage(stdout);
        if (strcmp(a, "--type") == 0 && has && o.n_types < 64) o.types[o.n_types++] = argv[++i];
        else if (strcmp(a, "--rows") == 0 && has) o.rows = strtoull(argv[++i], NULL, 10);
        else if (strcmp(a, "--k") == 0 && has) o.k = strtoull(argv[++i], NULL, 10);
        else if (strcmp(a, "--iters") == 0 && has) o.iters = strtoull(argv[++i], NULL, 10);
        else if (strcmp(a, "--backend") == 0 && has) o.backend = argv[++i];
        else if (strcmp(a, "--json") == 0) o.json = 1;
        else if (strcmp(a, "--no-ggml") == 0) o.no_ggml = 1;
        else {
            fprintf(stderr, "anvil bench: bad argument '%s'\n", a);
            return usage(stderr);
        }
    }
    if (o.rows == 0 || o.k == 0 || o.rows > (1u << 20) || o.k > (1u << 24)) {
        return cli_fail("bench", "--rows and --k must be between 1 and 1M / 16M");
    }
    anvil_ctx *ctx = cli_ctx(g);
    if (ctx == NULL) return 1;
    static ggml_oracle oracle;
    char why[1200];
    const int have_ggml = !o.no_ggml && ggml_oracle_open(&oracle, NULL, why, sizeof why) == 0;
    if (o.json) {
        printf("{\"ggml\":%s,\"ggml_variant\":\"%s\",\"threads\":1,\"results\":[", have_ggml ? "true" : "false",
               have_ggml ? oracle.cpu_variant : "");
    } else {
        printf("anvil bench: single thread, mat-vec, best of timed passes\n");
        if (have_ggml) printf("ggml: %s (cpu variant %s)\n", oracle.dir, oracle.cpu_variant);
        else if (!o.no_ggml) printf("ggml: not found (%s)\n", why);
        printf("\n  %-8s %-14s %13s %8s %8s %8s %8s %8s %9s\n", "type", "variant", "rows x k", "MB", "GB/s", "Gelem/s",
               "ggml", "ratio", "max rel");
    }
    int first = 1, rc = 0;
    if (o.n_types > 0) {
        for (size_t i = 0; i < o.n_types; ++i) {
            uint32_t id;
            anvil_error err;
            if (anvil_type_from_name(ctx, o.types[i], &id, &err) != ANVIL_OK) {
                rc = cli_fail_err("bench", &err);
                break;
            }
            if (anvil_ctx_codec(ctx, id) == NULL) {
                rc = cli_fail("bench", "type %s: no loaded codec provides it", o.types[i]);
                break;
            }
            rc |= bench_type(g, &o, id, &oracle, have_ggml, &first);
        }
    } else {
        for (uint32_t id = 0; id <= ANVIL_TYPE_THIRD_PARTY_LAST; ++id) {
            const anvil_codec *c = anvil_ctx_codec(ctx, id);
            if (c == NULL || (c->flags & ANVIL_CODEC_ACTIVATION)) continue;
            rc |= bench_type(g, &o, id, &oracle, have_ggml, &first);
        }
    }
    if (o.json) printf("]}\n");
    return rc;
}
