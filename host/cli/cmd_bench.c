/* SPDX-License-Identifier: MIT */
/*
 * anvil bench: mat-vec throughput per type, and -- when ggml is found --
 * ggml's own vec_dot on the same weights and activations in the same run,
 * with the ratio. Speed is reported here, never asserted in tests.
 * --m M > 1: anvil's GEMM (M activation rows; no ggml column: the oracle
 * exposes no GEMM). F32 / F16 / BF16 weights when named (--type f16):
 * their (F, F32) kernel; ggml's ggml_vec_dot_f16 / _bf16 / _f32 on the
 * activations rounded to the weight's type, as ggml's vec_dot_type.
 *
 * Default: every loaded weight format at 4096 x 4096, one thread.
 * --suite: the full matrix -- 4096 x 4096 and an out-of-cache size (>= 64 MiB
 * of weights), one thread and all threads -- plus the machine's measured
 * read bandwidth, so out-of-cache figures can be read as a fraction of it.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

#include "anvil/numeric.h"

#include "bench.h"
#include "cli.h"
#include "ggml_oracle.h"
#include "synth_rows.h"

typedef struct bench_opts {
    const char *types[64];
    size_t n_types;
    size_t rows, k, iters, m;
    unsigned threads; /* 0: all online CPUs */
    const char *backend;
    int json, no_ggml, suite, encode, threads_given, rows_given, imatrix;
} bench_opts;

const char cli_help_bench[] =
    "usage: anvil bench [--type T]... [--rows N] [--k K] [--m M] [--threads N|all] [--iters I]\n"
    "                   [--backend B] [--suite] [--encode [--imatrix]] [--no-ggml] [--json]\n"
    "\n"
    "Mat-vec y = W.x for each type (default: every loaded weight format with a kernel).\n"
    "W is N x K (default 4096 x 4096) of llm-like rows; x is quantized once into the\n"
    "type's activation format. Prints GB/s of weight bytes read and Gelem/s, best of\n"
    "I timed passes (default: as many as fit in ~0.3 s).\n"
    "\n"
    "With ggml found ($ANVIL_GGML_DIR or the build tree's npm folder), ggml's own\n"
    "ggml_vec_dot_* from its best CPU variant for this machine runs on the same bytes\n"
    "in the same run, split over the same threads, passes alternating with anvil's;\n"
    "`ratio` is best anvil / best ggml throughput (above 1: anvil is faster),\n"
    "`median` the median of the per-pass ratios (robust on a busy machine), and\n"
    "`max diff` the largest difference of the two results relative\n"
    "to the largest output magnitude (a sanity check: accumulation order only).\n"
    "\n"
    "--type f16   (also bf16, f32) the float weights, when named: their kernel against\n"
    "              f32 activations; ggml's ggml_vec_dot_f16/_bf16/_f32 on the activations\n"
    "              rounded to the weight's type\n"
    "--m M         M activation rows: anvil's GEMM (default 1: mat-vec); Gelem/s counts\n"
    "              rows x k x M; no ggml column (the oracle exposes no GEMM)\n"
    "--threads N   run on N threads through anvil's thread pool (default 1; all = every\n"
    "              online CPU)\n"
    "--backend B   use backend B's kernel instead of the dispatched one (1 thread)\n"
    "--suite       4096 x 4096 and an out-of-cache size (>= 64 MiB of weights), 1 thread\n"
    "              and all threads (with --backend: 1 thread), and the measured memory\n"
    "              read bandwidth\n"
    "--encode      encoders instead: MB/s of f32 source per type (default: every type with\n"
    "              an encoder) on N x K llm-like rows (default 4096 x 4096: 64 MiB), 1 thread\n"
    "              and all threads (or --threads), the dispatched encoder (or --backend B's)\n"
    "              against ggml's reference encoder (ggml_quantize_chunk) on the same rows,\n"
    "              passes alternating; `bytes` says whether both wrote the same bytes\n"
    "--imatrix     (with --encode) both encode with the same synthetic importance matrix\n"
    "              (log-normal columns): the importance-weighted encoders\n";

/* ---- timing ------------------------------------------------------------- */

typedef void (*pass_fn)(void *state);

static double time_best(pass_fn fn, void *state, size_t iters) {
    double best = 1e30, total = 0;
    size_t done = 0;
    for (;;) {
        const double t0 = bench_now();
        fn(state);
        const double dt = bench_now() - t0;
        if (dt < best) best = dt;
        total += dt;
        done++;
        if (iters > 0 ? done >= iters : (total > 0.3 && done >= 3) || done >= 1000) break;
    }
    return best;
}

/* ---- memory read bandwidth ---------------------------------------------- */

typedef struct bw_state {
    const uint64_t *buf;
    size_t words;
    crew *c;
    volatile uint64_t sink[256 * 8];
} bw_state;

/* Sum 16-byte vectors from 8 streams read in lockstep (as an 8-row GEMV
 * reads its weights): enough independent loads and prefetch streams in
 * flight to reach what the memory system delivers to one core. */
typedef uint64_t bw_vec __attribute__((vector_size(16)));

static void bw_work(void *arg, unsigned tid, unsigned n) {
    bw_state *s = arg;
    const size_t per = s->words / n / 64 * 64; /* words per thread */
    const size_t lane = per / 2 / 8;           /* vectors per stream */
    const bw_vec *p = (const bw_vec *)(s->buf + per * tid);
    bw_vec acc[8];
    memset(acc, 0, sizeof acc);
    for (size_t i = 0; i < lane; ++i) {
        for (int k = 0; k < 8; ++k) acc[k] += p[k * lane + i];
    }
    bw_vec t = acc[0];
    for (int k = 1; k < 8; ++k) t += acc[k];
    s->sink[tid * 8] = t[0] + t[1];
}

static void bw_pass(void *state) {
    bw_state *s = state;
    crew_run(s->c, bw_work, s);
}

/* GB/s reading a 512 MiB buffer with n threads. */
static double read_bandwidth(anvil_ctx *ctx, unsigned n) {
    const size_t bytes = (size_t)512 << 20;
    uint64_t *buf = aligned_alloc(64, bytes);
    if (buf == NULL) return 0;
    for (size_t i = 0; i < bytes / 8; ++i) buf[i] = i;
    crew c;
    crew_start(&c, ctx, n);
    bw_state s = { .buf = buf, .words = bytes / 8, .c = &c };
    const double t = time_best(bw_pass, &s, 5);
    crew_stop(&c);
    free(buf);
    return (double)bytes / 1e9 / t;
}

/* ---- one measurement ---------------------------------------------------- */

typedef struct anvil_pass {
    anvil_ctx *ctx;
    const anvil_weights *w;
    const anvil_kernel *k; /* set when a specific backend is forced */
    size_t n, rows, row_bytes, m, act_bytes;
    const void *wbytes, *act;
    const float *x;
    float *y;
} anvil_pass;

static void run_anvil(void *p) {
    anvil_pass *r = p;
    if (r->k != NULL && r->m > 1) {
        if (r->k->gemm != NULL) {
            r->k->gemm(r->n, r->rows, r->m, r->y, r->rows, r->wbytes, r->row_bytes, r->act, r->act_bytes);
        } else {
            for (size_t c = 0; c < r->m; ++c)
                for (size_t i = 0; i < r->rows; ++i)
                    r->k->vec_dot(r->n, &r->y[c * r->rows + i], (const char *)r->wbytes + i * r->row_bytes,
                                  (const char *)r->act + c * r->act_bytes);
        }
        return;
    }
    if (r->k != NULL) {
        if (r->k->gemv != NULL) {
            r->k->gemv(r->n, r->rows, r->y, r->wbytes, r->row_bytes, r->act);
        } else {
            for (size_t i = 0; i < r->rows; ++i) {
                r->k->vec_dot(r->n, &r->y[i], (const char *)r->wbytes + i * r->row_bytes, r->act);
            }
        }
        return;
    }
    anvil_error err;
    anvil_matmul_prepared(r->ctx, r->w, r->x, r->m, r->y, &err);
}

typedef struct ggml_pass {
    ggml_vec_dot_fn dot;
    size_t n, rows, row_bytes;
    const void *w, *act;
    float *y;
    crew *c;
} ggml_pass;

static void ggml_rows(void *arg, unsigned tid, unsigned nthreads) {
    ggml_pass *r = arg;
    const size_t per = (r->rows + nthreads - 1) / nthreads;
    const size_t r0 = per * tid, r1 = r0 + per < r->rows ? r0 + per : r->rows;
    for (size_t i = r0; i < r1; ++i)
        r->dot((int)r->n, &r->y[i], 0, (const char *)r->w + i * r->row_bytes, 0, r->act, 0, 1);
}

static void run_ggml(void *p) {
    ggml_pass *r = p;
    crew_run(r->c, ggml_rows, r);
}

typedef struct result {
    double gbps, gelems, ggml_gbps, maxrel, median_ratio;
    int have_ggml;
} result;

/* The ggml side of a result: the median per-pass speed ratio, and how far
 * ggml's outputs are from anvil's. ratios is sorted in place. */
static void compare_ggml(result *res, double *ratios, size_t done, const float *ya, const float *yg, size_t rows) {
    res->have_ggml = 1;
    /* median of the per-pass ratios (insertion sort: few passes) */
    for (size_t i = 1; i < done; ++i) {
        const double v = ratios[i];
        size_t j = i;
        while (j > 0 && ratios[j - 1] > v) {
            ratios[j] = ratios[j - 1];
            --j;
        }
        ratios[j] = v;
    }
    res->median_ratio = ratios[done / 2];
    /* Same activation bytes for both: the results must agree up to
     * accumulation order. Measured against the output's scale (its
     * largest magnitude), so a row whose terms cancel to ~0 does not
     * read as a large relative error. */
    double ymax = 0;
    for (size_t i = 0; i < rows; ++i) {
        if (isfinite(ya[i])) ymax = fmax(ymax, fabs((double)ya[i]));
    }
    for (size_t i = 0; ymax > 0 && i < rows; ++i) {
        const double d = fabs((double)ya[i] - yg[i]) / ymax;
        if (isfinite(d) && d > res->maxrel) res->maxrel = d;
    }
}

static int is_float(uint32_t id) { return id == ANVIL_TYPE_F32 || id == ANVIL_TYPE_F16 || id == ANVIL_TYPE_BF16; }

/* n floats of x as float type id: stored at dst (when not NULL), and x
 * rounded in place to the values they hold. */
static void float_row(uint32_t id, float *x, size_t n, unsigned char *dst) {
    for (size_t i = 0; i < n; ++i) {
        if (id == ANVIL_TYPE_F32) {
            if (dst != NULL) memcpy(dst + 4 * i, &x[i], 4);
            continue;
        }
        const uint16_t h = id == ANVIL_TYPE_F16 ? anvil_fp32_to_fp16(x[i]) : anvil_fp32_to_bf16(x[i]);
        x[i] = id == ANVIL_TYPE_F16 ? anvil_fp16_to_fp32(h) : anvil_bf16_to_fp32(h);
        if (dst != NULL) memcpy(dst + 2 * i, &h, 2);
    }
}

/* --iters N passes, else >= 3 passes and 0.6 s (anvil's and ggml's). */
static int matvec_stop(const void *arg, size_t done, double total) {
    const bench_opts *o = arg;
    return o->iters > 0 ? done >= o->iters : total > 0.6 && done >= 3;
}

static int measure(anvil_ctx *ctx, const bench_opts *o, uint32_t id, size_t rows, size_t n, unsigned threads,
                   ggml_oracle *oracle, int have_ggml, result *res, const char **variant, char *skip,
                   size_t skip_size) {
    anvil_type_info t, at;
    anvil_error err;
    memset(res, 0, sizeof *res);
    if (anvil_type_lookup(ctx, id, &t, &err) != ANVIL_OK) return cli_fail_err("bench", &err);
    const anvil_codec *c = anvil_ctx_codec(ctx, id);
    const int flt = c == NULL && is_float(id);
    const uint32_t act_type = flt ? ANVIL_TYPE_F32 : c->act_type;
    const size_t m = o->m > 0 ? o->m : 1;
    const anvil_kernel *kern;
    const anvil_act_quantizer *quant;
    if (anvil_ctx_find_kernel(ctx, o->backend, id, &kern, &quant, &err) != ANVIL_OK) {
        snprintf(skip, skip_size, "%s", err.message);
        return 0;
    }
    *variant = kern->variant ? kern->variant : "?";
    if (anvil_type_lookup(ctx, act_type, &at, &err) != ANVIL_OK) return cli_fail_err("bench", &err);
    if (n % t.block_elems != 0 || n % at.block_elems != 0) {
        snprintf(skip, skip_size, "K=%zu is not a multiple of its block", n);
        return 0;
    }
    const size_t row_bytes = n / t.block_elems * t.block_bytes;
    const size_t act_bytes = n / at.block_elems * at.block_bytes;
    /* 64-byte aligned, as a model loader's mapping would be. */
    unsigned char *w = aligned_alloc(64, (row_bytes * rows + 63) / 64 * 64);
    void *act = malloc(act_bytes * m), *gact = malloc(n * 4);
    float *row = malloc(n * sizeof *row), *x = malloc(n * m * sizeof *x);
    float *ya = malloc(rows * m * sizeof *ya), *yg = malloc(rows * sizeof *yg);
    anvil_weights *pw = NULL;
    int rc = 0;
    if (!w || !act || !gact || !row || !x || !ya || !yg) {
        rc = cli_fail("bench", "out of memory for %zu x %zu %s", rows, n, t.name);
        goto out;
    }
    /* Weights: encoded llm-like rows (a few distinct rows repeated, so big
     * matrices build fast); decode-only formats get random blocks (timing
     * does not depend on the values). */
    synth_rng rng;
    synth_seed(&rng, id);
    for (size_t r = 0; r < rows; ++r) {
        if (r >= 64) {
            memcpy(w + r * row_bytes, w + (r % 64) * row_bytes, row_bytes);
            continue;
        }
        synth_llm_row(row, n, 7, r);
        if (flt) {
            float_row(id, row, n, w + r * row_bytes);
            continue;
        }
        if (c->encode == NULL || anvil_encode(ctx, id, row, n, w + r * row_bytes, row_bytes, &err) != ANVIL_OK) {
            for (size_t b = 0; b < row_bytes; ++b) w[r * row_bytes + b] = (unsigned char)synth_u64(&rng);
        }
    }
    for (size_t i = 0; i < n * m; ++i) x[i] = synth_normal(&rng);
    if (flt) {
        /* as mdl_matmul (ggml's vec_dot_type): rounded to the weight's type */
        float_row(id, x, n * m, NULL);
        memcpy(act, x, n * m * sizeof *x);
        float_row(id, x, n, gact);
    }
    for (size_t i = 0; !flt && i < m; ++i) {
        if (quant != NULL) {
            quant->quantize(x + i * n, (char *)act + i * act_bytes, n);
        } else if (anvil_encode(ctx, c->act_type, x + i * n, n, (char *)act + i * act_bytes, act_bytes, &err) !=
                   ANVIL_OK) {
            rc = cli_fail_err("bench", &err);
            goto out;
        }
    }
    anvil_pass ap = { .ctx = ctx,
                      .n = n,
                      .rows = rows,
                      .row_bytes = row_bytes,
                      .m = m,
                      .act_bytes = act_bytes,
                      .wbytes = w,
                      .act = act,
                      .x = x,
                      .y = ya };
    if (o->backend != NULL) {
        ap.k = kern;
    } else {
        anvil_ctx_set_threads(ctx, threads);
        if (anvil_weights_prepare(ctx, id, w, rows, n, ANVIL_WEIGHTS_STABLE, &pw, &err) != ANVIL_OK) {
            rc = cli_fail_err("bench", &err);
            goto out;
        }
        ap.w = pw;
    }
    const double gb = (double)(row_bytes * rows) / 1e9;
    ggml_vec_dot_fn dot = NULL;
    if (have_ggml && m == 1 && !flt) dot = ggml_oracle_vec_dot(oracle, t.name, at.name);
    if (have_ggml && m == 1 && flt && oracle->cpu != NULL) {
        char sym[64];
        snprintf(sym, sizeof sym, "ggml_vec_dot_%s", t.name);
        void *f = dlsym(oracle->cpu, sym);
        memcpy(&dot, &f, sizeof dot);
    }
    crew cr;
    crew_start(&cr, ctx, o->backend ? 1 : threads);
    ggml_pass gp = { dot, n, rows, row_bytes, w, flt ? gact : act, yg, &cr };
    double ratios[1000];
    bench_alt timing;
    bench_alternate(run_anvil, &ap, dot != NULL ? run_ggml : NULL, &gp, matvec_stop, o, ratios, 1000, &timing);
    const double ta = timing.best_a, tg = timing.best_b;
    const size_t done = timing.done;
    crew_stop(&cr);
    res->gbps = gb / ta;
    res->gelems = (double)(n * rows) * (double)m / 1e9 / ta;

    if (dot != NULL) {
        res->ggml_gbps = gb / tg;
        compare_ggml(res, ratios, done, ya, yg, rows);
    }
out:
    anvil_weights_free(pw);
    free(w);
    free(act);
    free(gact);
    free(row);
    free(x);
    free(ya);
    free(yg);
    return rc;
}

/* Rows for an out-of-cache run: at least 64 MiB of weights at k = 8192. */
static size_t big_rows(const anvil_ctx *ctx, uint32_t id, size_t k) {
    anvil_type_info t;
    if (anvil_type_lookup(ctx, id, &t, NULL) != ANVIL_OK || k % t.block_elems) return 16384;
    const size_t row_bytes = k / t.block_elems * t.block_bytes;
    size_t rows = ((size_t)64 << 20) / row_bytes + 1;
    rows = (rows + 255) / 256 * 256;
    return rows < 16384 ? 16384 : rows;
}

/* The options; -1 to go on, else the exit code. */
static int parse_bench_args(int argc, char **argv, bench_opts *o) {
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        const int has = i + 1 < argc;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) return cli_help("bench");
        unsigned long long v = 0;
        if (strcmp(a, "--type") == 0 && has && o->n_types < 64) o->types[o->n_types++] = argv[++i];
        else if (strcmp(a, "--rows") == 0 && has) {
            if (cli_parse_count(argv[++i], 1, 1u << 20, &v) != 0)
                return cli_usage_error("bench", "--rows takes 1..1M");
            o->rows = (size_t)v;
            o->rows_given = 1;
        } else if (strcmp(a, "--k") == 0 && has) {
            if (cli_parse_count(argv[++i], 1, 1u << 24, &v) != 0) return cli_usage_error("bench", "--k takes 1..16M");
            o->k = (size_t)v;
        } else if (strcmp(a, "--m") == 0 && has) {
            if (cli_parse_count(argv[++i], 1, 4096, &v) != 0) return cli_usage_error("bench", "--m takes 1..4096");
            o->m = (size_t)v;
        } else if (strcmp(a, "--iters") == 0 && has) {
            if (cli_parse_count(argv[++i], 1, 1000000, &v) != 0)
                return cli_usage_error("bench", "--iters takes 1..1000000");
            o->iters = (size_t)v;
        } else if (strcmp(a, "--threads") == 0 && has) {
            const char *t = argv[++i];
            o->threads_given = 1;
            if (strcmp(t, "all") == 0) o->threads = 0;
            else if (cli_parse_count(t, 1, 256, &v) == 0) o->threads = (unsigned)v;
            else return cli_usage_error("bench", "--threads takes 1..256 or 'all'");
        } else if (strcmp(a, "--backend") == 0 && has) o->backend = argv[++i];
        else if (strcmp(a, "--json") == 0) o->json = 1;
        else if (strcmp(a, "--no-ggml") == 0) o->no_ggml = 1;
        else if (strcmp(a, "--suite") == 0) o->suite = 1;
        else if (strcmp(a, "--encode") == 0) o->encode = 1;
        else if (strcmp(a, "--imatrix") == 0) o->imatrix = 1;
        else return cli_usage_error("bench", "unknown or incomplete option '%s'", a);
    }
    return -1;
}

/* The types to run: those named, else every loaded non-activation type (with
 * --encode, those that encode). 0, or the exit code. */
static int bench_types(anvil_ctx *ctx, const bench_opts *o, uint32_t ids[256], size_t *n_ids) {
    *n_ids = 0;
    if (o->n_types > 0) {
        for (size_t i = 0; i < o->n_types; ++i) {
            anvil_error err;
            if (anvil_type_from_name(ctx, o->types[i], &ids[*n_ids], &err) != ANVIL_OK) {
                return cli_usage_error("bench", "%s", err.message);
            }
            if (anvil_ctx_codec(ctx, ids[*n_ids]) == NULL && (o->encode || !is_float(ids[*n_ids]))) {
                return cli_fail("bench", "type %s: no loaded codec provides it", o->types[i]);
            }
            (*n_ids)++;
        }
    } else {
        for (uint32_t id = 0; id <= ANVIL_TYPE_THIRD_PARTY_LAST && *n_ids < 256; ++id) {
            const anvil_codec *c = anvil_ctx_codec(ctx, id);
            const int encodable = o->imatrix
                                      ? c != NULL && c->encode_rows != NULL
                                      : c != NULL && c->encode != NULL && !(c->flags & ANVIL_CODEC_NEEDS_IMATRIX);
            if (c != NULL && !(c->flags & ANVIL_CODEC_ACTIVATION) && (!o->encode || encodable)) {
                ids[(*n_ids)++] = id;
            }
        }
    }

    return 0;
}

/* The report's head: ggml, the read bandwidth, the column names. */
static void print_header(const bench_opts *o, int have_ggml, const ggml_oracle *oracle, const char *why, unsigned all,
                         double bw1, double bwn) {
    if (o->json) {
        cli_json_begin(stdout, "bench");
        printf(",\"ggml\":%s,\"ggml_variant\":\"%s\",\"cpus\":%u", have_ggml ? "true" : "false",
               have_ggml ? oracle->cpu_variant : "", all);
        if (o->suite) {
            cli_json_member_number(stdout, "read_gbps_1", "%.3f", bw1);
            cli_json_member_number(stdout, "read_gbps_all", "%.3f", bwn);
        }
        printf(",\"results\":[");
    } else {
        if (o->m > 1) printf("anvil bench: GEMM of %zu activation rows, best of timed passes\n", o->m);
        else printf("anvil bench: mat-vec, best of timed passes\n");
        if (have_ggml) printf("ggml: %s (cpu variant %s)\n", oracle->dir, oracle->cpu_variant);
        else if (!o->no_ggml) printf("ggml: not found (%s)\n", why);
        if (o->suite) printf("memory read bandwidth: %.2f GB/s (1 thread), %.2f GB/s (%u threads)\n", bw1, bwn, all);
        printf("\n  %-8s %-14s %3s %13s %8s %8s %8s %8s %7s %7s %9s%s\n", "type", "variant", "thr", "rows x k", "MB",
               "GB/s", "Gelem/s", "ggml", "ratio", "median", "max diff", o->suite ? "  %read-bw" : "");
    }
}

/* One result row (bw: the read bandwidth at its thread count). */
static void print_result(anvil_ctx *ctx, const bench_opts *o, uint32_t id, size_t rows, size_t k, unsigned threads,
                         int big, double bw, const result *rp, const char *variant, int first) {
    anvil_type_info tt;
    anvil_type_lookup(ctx, id, &tt, NULL);
    const double mb = (double)(k / tt.block_elems * tt.block_bytes) * (double)rows / 1e6;
    if (o->json) {
        /* Figures that can be undefined (a time of 0, nothing to
         * divide by) are null, never inf/nan (not JSON). */
        printf("%s{\"type\":", first ? "" : ",");
        cli_json_string(stdout, tt.name);
        printf(",\"variant\":");
        cli_json_string(stdout, variant);
        printf(",\"threads\":%u,\"rows\":%zu,\"k\":%zu,\"m\":%zu", threads, rows, k, o->m > 0 ? o->m : 1);
        cli_json_member_number(stdout, "weight_mb", "%.3f", mb);
        cli_json_member_number(stdout, "gbps", "%.4f", rp->gbps);
        cli_json_member_number(stdout, "gelems", "%.4f", rp->gelems);
        if (rp->have_ggml) {
            cli_json_member_number(stdout, "ggml_gbps", "%.4f", rp->ggml_gbps);
            cli_json_member_number(stdout, "ratio", "%.4f", rp->gbps / rp->ggml_gbps);
            cli_json_member_number(stdout, "median_ratio", "%.4f", rp->median_ratio);
            cli_json_member_number(stdout, "max_diff", "%.3g", rp->maxrel);
        }
        if (o->suite && big) cli_json_member_number(stdout, "read_bw_fraction", "%.4f", bw > 0 ? rp->gbps / bw : 0);
        printf("}");
    } else {
        printf("  %-8s %-14s %3u %6zux%-6zu %8.1f %8.2f %8.3f", tt.name, variant, threads, rows, k, mb, rp->gbps,
               rp->gelems);
        if (rp->have_ggml) {
            printf(" %8.2f %6.2fx %6.2fx %9.2g", rp->ggml_gbps, rp->gbps / rp->ggml_gbps, rp->median_ratio,
                   rp->maxrel);
        } else {
            printf(" %8s %7s %7s %9s", "-", "-", "-", "-");
        }
        if (o->suite && big && bw > 0) printf("  %7.0f%%", 100.0 * rp->gbps / bw);
        printf("\n");
    }
}

int cmd_bench(cli_globals *g, int argc, char **argv) {
    bench_opts o = { .rows = 4096, .k = 4096, .threads = 1, .m = 1 };
    const int arc = parse_bench_args(argc, argv, &o);
    if (arc >= 0) return arc;
    anvil_ctx *ctx = cli_ctx(g);
    if (ctx == NULL) return 1;
    const unsigned all = anvil_ctx_cpu(ctx)->n_cpus;
    if (o.threads == 0) o.threads = all;
    if (o.imatrix && !o.encode) return cli_usage_error("bench", "--imatrix goes with --encode");
    if (o.backend != NULL && o.threads != 1 && !o.encode) {
        return cli_usage_error("bench", "--backend runs one thread; drop --threads");
    }
    uint32_t ids[256];
    size_t n_ids = 0;
    const int trc = bench_types(ctx, &o, ids, &n_ids);
    if (trc != 0) return trc;

    static ggml_oracle oracle;
    char why[1200];
    const int have_ggml = !o.no_ggml && ggml_oracle_open(&oracle, NULL, why, sizeof why) == 0;
    if (o.encode) {
        const bench_encode_opts eo = { .ids = ids,
                                       .n_ids = n_ids,
                                       .rows = o.rows,
                                       .k = o.k,
                                       .iters = o.iters,
                                       .threads = o.threads_given ? o.threads : 0,
                                       .backend = o.backend,
                                       .json = o.json,
                                       .imatrix = o.imatrix };
        return bench_encode(ctx, &eo, &oracle, have_ggml, o.no_ggml ? "--no-ggml" : why);
    }
    double bw1 = 0, bwn = 0;
    if (o.suite) {
        bw1 = read_bandwidth(ctx, 1);
        bwn = read_bandwidth(ctx, all);
    }
    print_header(&o, have_ggml, &oracle, why, all, bw1, bwn);

    /* The runs: (rows, k, threads) tuples. */
    typedef struct shape {
        int big;
        unsigned threads;
    } shape;
    shape shapes[4] = { { 0, o.threads } };
    size_t n_shapes = 1;
    if (o.suite) {
        shapes[0] = (shape){ 0, 1 };
        shapes[1] = (shape){ 0, all };
        shapes[2] = (shape){ 1, 1 };
        shapes[3] = (shape){ 1, all };
        /* --backend calls that backend's kernel directly, on one thread:
         * only the 1-thread shapes then (no row claims threads it lacks). */
        const int multi = all > 1 && o.backend == NULL;
        n_shapes = multi ? 4 : 2;
        if (!multi) shapes[1] = shapes[2];
    }
    int first = 1, rc = 0;
    for (size_t s = 0; s < n_shapes; ++s) {
        for (size_t i = 0; i < n_ids; ++i) {
            const size_t k = shapes[s].big ? 8192 : o.k;
            const size_t rows = shapes[s].big ? big_rows(ctx, ids[i], k) : o.rows;
            result r;
            const char *variant = "?";
            char skip[1100] = "";
            anvil_type_info t;
            anvil_type_lookup(ctx, ids[i], &t, NULL);
            rc |= measure(ctx, &o, ids[i], rows, k, shapes[s].threads, &oracle, have_ggml, &r, &variant, skip,
                          sizeof skip);
            if (skip[0]) {
                if (!o.json) printf("  %-8s skipped: %s\n", t.name, skip);
                continue;
            }
            print_result(ctx, &o, ids[i], rows, k, shapes[s].threads, shapes[s].big,
                         shapes[s].threads > 1 ? bwn : bw1, &r, variant, first);
            first = 0;
        }
    }
    if (o.json) printf("]}\n");
    return rc;
}
