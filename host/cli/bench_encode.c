/* SPDX-License-Identifier: MIT */
/*
 * anvil bench --encode: encoder throughput per type, in MB/s of f32 source,
 * against ggml's reference encoder on the same rows in the same run.
 *
 * The source is N x K llm-like rows (default 4096 x 4096: 64 MiB, well
 * past the caches). anvil encodes through anvil_encode_rows (the encoder
 * dispatch chose: a backend's SIMD encoder or the codec's reference), or
 * with --backend B through that backend's encoder directly; ggml through
 * ggml_quantize_chunk (what llama-quantize calls: quantize_row_*_ref, or
 * the scale search for IQ4_NL), rows split over the same threads. Passes
 * alternate, so both see the same machine; the table gives the best pass
 * of each, their ratio, and the median of the per-pass ratios (robust on a
 * shared machine). `bytes` compares the two outputs: an encoder that is
 * fast but not ggml's bytes is not a result.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"
#include "synth_rows.h"

typedef struct enc_job {
    anvil_ctx *ctx;
    uint32_t type;
    const anvil_weight_encoder *encoder; /* --backend: called directly */
    ggml_quantize_chunk_fn ggml;
    const float *src;
    const float *imatrix; /* or NULL */
    uint8_t *dst;
    size_t rows, k, row_bytes;
    int failed;
    char why[512];
} enc_job;

static void rows_of(const enc_job *j, unsigned tid, unsigned n, size_t *r0, size_t *r1) {
    const size_t per = (j->rows + n - 1) / n;
    *r0 = per * tid < j->rows ? per * tid : j->rows;
    *r1 = *r0 + per < j->rows ? *r0 + per : j->rows;
}

static void anvil_rows(void *arg, unsigned tid, unsigned n) {
    enc_job *j = arg;
    size_t r0, r1;
    rows_of(j, tid, n, &r0, &r1);
    if (r1 <= r0) return;
    const float *src = j->src + r0 * j->k;
    uint8_t *dst = j->dst + r0 * j->row_bytes;
    const size_t nr = r1 - r0;
    int rc;
    if (j->encoder != NULL) {
        char msg[512] = "";
        rc = j->encoder->encode_rows(src, dst, nr, j->k, j->imatrix, msg, sizeof msg);
        if (rc != ANVIL_OK && !j->failed) snprintf(j->why, sizeof j->why, "%s", msg);
    } else {
        anvil_error err;
        rc = anvil_encode_rows(j->ctx, j->type, src, nr, j->k, j->imatrix, dst, nr * j->row_bytes, &err);
        if (rc != ANVIL_OK && !j->failed) snprintf(j->why, sizeof j->why, "%.500s", err.message);
    }
    if (rc != ANVIL_OK) j->failed = 1;
}

static void ggml_rows_enc(void *arg, unsigned tid, unsigned n) {
    enc_job *j = arg;
    size_t r0, r1;
    rows_of(j, tid, n, &r0, &r1);
    if (r1 > r0) {
        j->ggml((int)j->type, j->src, j->dst, (int64_t)(r0 * j->k), (int64_t)(r1 - r0), (int64_t)j->k, j->imatrix);
    }
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct enc_result {
    double mbps, ggml_mbps, median;
    int have_ggml, same_bytes;
} enc_result;

/* One encoder pass of a job over its rows on the crew. */
typedef struct enc_pass {
    crew *c;
    work_fn fn;
    enc_job *job;
} enc_pass;

static void run_enc(void *p) {
    const enc_pass *e = p;
    crew_run(e->c, e->fn, e->job);
}

typedef struct enc_stop_arg {
    const enc_job *job;
    size_t iters;
} enc_stop_arg;

/* --iters N passes, else >= 3 and 1.5 s, at most 10 s or 25 passes; a
 * failed encode stops at once. */
static int enc_stop(const void *arg, size_t done, double total) {
    const enc_stop_arg *s = arg;
    if (s->job->failed) return 1;
    return s->iters > 0 ? done >= s->iters : (total > 1.5 && done >= 3) || total > 10 || done >= 25;
}

/* Alternating passes on `threads` threads; returns 0, or 1 after printing why. */
static int measure_encode(enc_job *a, enc_job *g, unsigned threads, size_t iters, enc_result *res) {
    crew c;
    crew_start(&c, a->ctx, threads);
    const double mb = (double)(a->rows * a->k * sizeof(float)) / 1e6;
    enc_pass pa = { &c, anvil_rows, a }, pg = { &c, ggml_rows_enc, g };
    const enc_stop_arg st = { a, iters };
    double ratios[256];
    bench_alt t;
    bench_alternate(run_enc, &pa, g != NULL ? run_enc : NULL, &pg, enc_stop, &st, ratios, 256, &t);
    const double ta = t.best_a, tg = t.best_b;
    const size_t done = t.done;
    crew_stop(&c);
    if (a->failed) return cli_fail("bench", "encode failed: %s", a->why);
    res->mbps = mb / ta;
    res->have_ggml = g != NULL;
    if (g != NULL) {
        res->ggml_mbps = mb / tg;
        qsort(ratios, done, sizeof ratios[0], cmp_double);
        res->median = ratios[done / 2];
        res->same_bytes = memcmp(a->dst, g->dst, a->rows * a->row_bytes) == 0;
    }
    return 0;
}

/* Why type id is not timed (NULL: it is), and the encoder that runs it
 * (*encp; NULL: the codec's own, through anvil_encode_rows). */
static const char *encode_skip(anvil_ctx *ctx, const bench_encode_opts *o, const anvil_codec *c, uint32_t id,
                               const float *imx, const anvil_weight_encoder **encp, char *skip_buf,
                               size_t skip_size) {
    const char *skip = NULL;
    if (imx != NULL && c->encode_rows == NULL) {
        skip = "no importance-weighted encoder";
    } else if (imx == NULL && (c->encode == NULL || (c->flags & ANVIL_CODEC_NEEDS_IMATRIX))) {
        skip = c->encode == NULL ? "no encoder" : "needs an importance matrix";
    } else if (o->k % c->block_elems != 0) {
        skip = "--k is not a whole number of blocks";
    }
    const anvil_weight_encoder *enc = NULL;
    anvil_error err;
    if (skip == NULL && anvil_ctx_find_encoder(ctx, o->backend, id, &enc, &err) != ANVIL_OK) {
        if (o->backend != NULL) {
            snprintf(skip_buf, skip_size, "%.590s", err.message);
            skip = skip_buf;
        }
        enc = NULL; /* dispatched: none -> the codec's encoder through anvil_encode_rows */
    }
    if (skip == NULL && imx != NULL && enc != NULL && !(enc->flags & ANVIL_ENCODER_WEIGHTED)) {
        if (o->backend != NULL && !(c->flags & ANVIL_CODEC_IMATRIX_UNUSED)) {
            skip = "that backend's encoder takes no importance matrix";
        } else if (o->backend == NULL) {
            /* what anvil_encode_rows runs with a matrix */
            anvil_encoder_report rep;
            for (size_t d = 0; d < anvil_ctx_dispatch_count(ctx); ++d) {
                if (anvil_ctx_encoder_report(ctx, d, &rep) == ANVIL_OK && rep.type_id == id) {
                    if (rep.weighted_backend == NULL) enc = NULL;
                }
            }
        }
    }
    *encp = enc;
    return skip;
}

/* One result row, JSON or text. */
static void print_encode_result(const bench_encode_opts *o, const anvil_codec *c, const char *variant,
                                unsigned threads, const enc_result *rp, int first) {
    if (o->json) {
        /* Undefined figures (a time of 0, nothing to divide by) are
         * null, never inf/nan (not JSON). */
        printf("%s{\"type\":", first ? "" : ",");
        cli_json_string(stdout, c->name);
        printf(",\"encoder\":");
        cli_json_string(stdout, variant);
        printf(",\"threads\":%u", threads);
        cli_json_member_number(stdout, "mbps", "%.2f", rp->mbps);
        if (rp->have_ggml) {
            cli_json_member_number(stdout, "ggml_mbps", "%.2f", rp->ggml_mbps);
            cli_json_member_number(stdout, "ratio", "%.4f", rp->mbps / rp->ggml_mbps);
            cli_json_member_number(stdout, "median_ratio", "%.4f", rp->median);
            printf(",\"same_bytes\":%s", rp->same_bytes ? "true" : "false");
        }
        printf("}");
    } else if (rp->have_ggml) {
        printf("  %-8s %-12s %3u %11.1f %11.1f %6.2fx %6.2fx %6s\n", c->name, variant, threads, rp->mbps,
               rp->ggml_mbps, rp->mbps / rp->ggml_mbps, rp->median, rp->same_bytes ? "equal" : "DIFFER");
    } else {
        printf("  %-8s %-12s %3u %11.1f %11s %7s %7s %6s\n", c->name, variant, threads, rp->mbps, "-", "-", "-", "-");
    }
}

int bench_encode(anvil_ctx *ctx, const bench_encode_opts *o, const ggml_oracle *oracle, int have_ggml,
                 const char *ggml_why) {
    const size_t n = o->rows * o->k;
    if (o->rows == 0 || o->k == 0 || n / o->k != o->rows || n > ((size_t)1 << 30)) {
        return cli_fail("bench", "--encode: --rows x --k must be between 1 and 2^30 elements");
    }
    float *src = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    uint8_t *da = malloc(n / 32 * 36 + 64), *dg = malloc(n / 32 * 36 + 64);
    if (src == NULL || da == NULL || dg == NULL) {
        free(src);
        free(da);
        free(dg);
        return cli_fail("bench", "out of memory for %zu x %zu f32", o->rows, o->k);
    }
    for (size_t r = 0; r < o->rows; ++r) synth_llm_row(src + r * o->k, o->k, 7, r);
    float *imx = NULL;
    if (o->imatrix) {
        /* log-normal column weights, like real activations' mean squares */
        imx = malloc(o->k * sizeof *imx);
        if (imx == NULL) {
            free(src);
            free(da);
            free(dg);
            return cli_fail("bench", "out of memory");
        }
        synth_rng rng;
        synth_seed(&rng, 11);
        for (size_t j = 0; j < o->k; ++j) imx[j] = expf(1.5f * synth_normal(&rng));
    }
    const unsigned all = anvil_ctx_cpu(ctx)->n_cpus;
    unsigned thread_runs[2] = { o->threads ? o->threads : 1, all };
    const size_t n_runs = o->threads || all <= 1 ? 1 : 2;
    ggml_quantize_chunk_fn chunk = have_ggml ? oracle->quantize_chunk : NULL;

    if (o->json) {
        cli_json_begin(stdout, "bench-encode");
        printf(",\"ggml\":%s,\"imatrix\":%s,\"rows\":%zu,\"k\":%zu", chunk ? "true" : "false", imx ? "true" : "false",
               o->rows, o->k);
        cli_json_member_number(stdout, "source_mb", "%.3f", (double)(n * sizeof(float)) / 1e6);
        printf(",\"results\":[");
    } else {
        printf("anvil bench --encode%s: %zu rows x %zu f32 (%.1f MB of source), best of alternating passes\n",
               imx ? " --imatrix" : "", o->rows, o->k, (double)(n * sizeof(float)) / 1e6);
        if (chunk) printf("ggml: %s (ggml_quantize_chunk: quantize_row_*_ref / the IQ4_NL search)\n", oracle->dir);
        else printf("ggml: not used (%s)\n", ggml_why);
        printf("\n  %-8s %-12s %3s %11s %11s %7s %7s %6s\n", "type", "encoder", "thr", "anvil MB/s", "ggml MB/s",
               "ratio", "median", "bytes");
    }
    int rc = 0, first = 1;
    for (size_t ti = 0; ti < o->n_ids && rc == 0; ++ti) {
        const uint32_t id = o->ids[ti];
        const anvil_codec *c = anvil_ctx_codec(ctx, id);
        if (c == NULL) continue;
        const anvil_weight_encoder *enc = NULL;
        char skip_buf[600];
        const char *skip = encode_skip(ctx, o, c, id, imx, &enc, skip_buf, sizeof skip_buf);
        if (skip != NULL) {
            if (!o->json) printf("  %-8s skipped: %s\n", c->name, skip);
            continue;
        }
        const char *variant = enc ? enc->variant : "codec";
        enc_job a = { .ctx = ctx,
                      .type = id,
                      .encoder = o->backend ? enc : NULL,
                      .src = src,
                      .imatrix = imx,
                      .dst = da,
                      .rows = o->rows,
                      .k = o->k,
                      .row_bytes = o->k / c->block_elems * c->block_bytes };
        enc_job g = a;
        g.dst = dg;
        /* ggml knows only its own ids (a third-party codec such as PTQTP
         * has none there: ggml would abort on it) */
        g.ggml = id < ANVIL_TYPE_GGML_COUNT ? chunk : NULL;
        if (g.ggml != NULL && oracle->quantize_init != NULL) oracle->quantize_init((int)id);
        for (size_t t = 0; t < n_runs && rc == 0; ++t) {
            enc_result r;
            memset(&r, 0, sizeof r);
            rc = measure_encode(&a, g.ggml ? &g : NULL, thread_runs[t], o->iters, &r);
            if (rc != 0) break;
            print_encode_result(o, c, variant, thread_runs[t], &r, first);
            fflush(stdout);
            first = 0;
        }
    }
    if (o->json) printf("]}\n");
    free(imx);
    free(src);
    free(da);
    free(dg);
    return rc;
}
