/* SPDX-License-Identifier: MIT */
/* anvil demo: every loaded codec encodes and decodes one built-in llm-like
 * tensor; prints bits/weight, RMSE, max error and SNR per format.
 *
 * anvil demo --model: the main job on an embedded default. Synthesise a
 * small llama-shaped F16 model (a real GGUF with llama metadata and
 * deterministic weights), transcode it to Q4_K with the quality report,
 * inspect the result, and run a mat-vec on one of its weights against the
 * F16 original. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "anvil/gguf.h"
#include "anvil/transcode.h"
#include "synth_model.h"
#include "cli.h"
#include "cmd_transcode.h"
#include "synth_rows.h"

const char cli_help_demo[] = "usage: anvil demo [--model [--keep DIR]]\n"
                             "\n"
                             "Encodes and decodes a built-in 64x4096 llm-like tensor with every loaded codec\n"
                             "and prints bits/weight, RMSE, max absolute error and SNR per format.\n"
                             "\n"
                             "  --model     the main job instead: synthesise a small llama-shaped F16 model,\n"
                             "              transcode it to Q4_K with the quality report, inspect the result and\n"
                             "              run a mat-vec on one of its weights against the F16 original\n"
                             "  --keep DIR  with --model: write the two model files into DIR and keep them\n";

#define DEMO_ROWS 64
#define DEMO_COLS 4096

/* ---- anvil demo --model ----------------------------------------------------- */

static double demo_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int remove_demo_files(const char *dir, const char *const *files, size_t n) {
    char p[4200];
    for (size_t i = 0; i < n; ++i) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    return rmdir(dir);
}

/* y = W.x on the Q4_K weight, against the same product on the F16 original
 * in double: the difference is what Q4_K costs this mat-vec. */
static int demo_matvec(anvil_ctx *ctx, const char *q_path, const char *f16_path, const char *name) {
    anvil_error err = { 0 };
    anvil_gguf *q = NULL, *f = NULL;
    int rc = anvil_gguf_open(&q, q_path, ctx, 0, &err);
    if (rc == ANVIL_OK) rc = anvil_gguf_open(&f, f16_path, ctx, 0, &err);
    const anvil_gguf_tensor *wq = rc == ANVIL_OK ? anvil_gguf_find_tensor(q, name) : NULL;
    const anvil_gguf_tensor *wf = rc == ANVIL_OK ? anvil_gguf_find_tensor(f, name) : NULL;
    if (rc != ANVIL_OK || wq == NULL || wf == NULL) {
        anvil_gguf_close(q);
        anvil_gguf_close(f);
        return rc != ANVIL_OK ? cli_fail_err("demo", &err) : cli_fail("demo", "tensor %s not found", name);
    }
    const size_t rows = (size_t)wq->ne[1], k = (size_t)wq->ne[0];
    float *x = malloc(k * sizeof *x), *y = malloc(rows * sizeof *y), *wrow = malloc(k * sizeof *wrow);
    if (x == NULL || y == NULL || wrow == NULL) {
        rc = ANVIL_E_NOMEM;
        goto done;
    }
    synth_rng r;
    synth_seed(&r, 7);
    for (size_t i = 0; i < k; ++i) x[i] = synth_normal(&r);
    rc = anvil_matmul(ctx, wq->type, wq->data, rows, k, x, 1, y, &err); /* warm-up: dispatch, pool */
    const double t0 = demo_now();
    int iters = 0;
    while (rc == ANVIL_OK && (iters < 5 || demo_now() - t0 < 0.2)) {
        rc = anvil_matmul(ctx, wq->type, wq->data, rows, k, x, 1, y, &err);
        iters++;
    }
    const double dt = (demo_now() - t0) / (iters ? iters : 1);
    if (rc != ANVIL_OK) goto done;
    double max_dy = 0, scale = 0, se = 0, sig = 0;
    double ref0[4] = { 0 };
    for (size_t o = 0; o < rows; ++o) {
        rc = anvil_decode(ctx, wf->type, (const unsigned char *)wf->data + o * wf->row_bytes, (size_t)wf->row_bytes,
                          wrow, k, &err);
        if (rc != ANVIL_OK) goto done;
        double ref = 0;
        for (size_t i = 0; i < k; ++i) ref += (double)wrow[i] * x[i];
        if (o < 4) ref0[o] = ref;
        if (fabs(ref) > scale) scale = fabs(ref);
        se += (y[o] - ref) * (y[o] - ref);
        sig += ref * ref;
        max_dy = fmax(max_dy, fabs(y[o] - ref));
    }
    printf("mat-vec y = W.x on %s (%s, %zu x %zu), x ~ N(0, 1):\n", name, wq->type_info.name, rows, k);
    printf("  %.3f ms per mat-vec (%.2f GB/s of weights read, %u threads)\n", dt * 1e3,
           (double)wq->n_bytes / dt / 1e9, anvil_ctx_threads(ctx));
    printf("  y[0..3]      = % .5f % .5f % .5f % .5f\n", y[0], y[1], y[2], y[3]);
    printf("  F16 original = % .5f % .5f % .5f % .5f\n", ref0[0], ref0[1], ref0[2], ref0[3]);
    printf("  against the F16 original: max |dy| / max |y| = %.4f, SNR %.2f dB\n", max_dy / (scale > 0 ? scale : 1),
           se > 0 ? 10.0 * log10(sig / se) : INFINITY);
done:
    free(x);
    free(y);
    free(wrow);
    anvil_gguf_close(q);
    anvil_gguf_close(f);
    if (rc != ANVIL_OK) return err.message[0] ? cli_fail_err("demo", &err) : cli_fail("demo", "out of memory");
    return 0;
}

static int demo_model(cli_globals *g, const char *keep_dir) {
    anvil_ctx *ctx = cli_ctx(g);
    if (ctx == NULL) return 1;
    char dir[4096];
    if (keep_dir != NULL) {
        snprintf(dir, sizeof dir, "%s", keep_dir);
        if (mkdir(dir, 0777) != 0) {
            struct stat st;
            if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
                return cli_fail("demo", "cannot create the folder %s", dir);
        }
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/anvil-demo-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (mkdtemp(dir) == NULL)
            return cli_fail("demo", "cannot create a temporary folder in %s", tmp ? tmp : "/tmp");
    }
    static const char *const files[] = { "model-f16.gguf", "model-q4_K.gguf" };
    char f16[4200], q4[4200];
    snprintf(f16, sizeof f16, "%s/%s", dir, files[0]);
    snprintf(q4, sizeof q4, "%s/%s", dir, files[1]);
    const synth_model m = { .n_vocab = 4096,
                            .n_embd = 512,
                            .n_ff = 1536,
                            .n_layer = 4,
                            .n_head = 8,
                            .n_head_kv = 4,
                            .type = ANVIL_TYPE_F16,
                            .seed = 42,
                            .name = "anvil demo llama (synthetic)" };
    anvil_error err = { 0 };
    int rc = 0;
    printf("== 1. synthesise a small llama-shaped F16 model\n");
    if (synth_model_write(f16, &m, ctx, &err) != ANVIL_OK) {
        rc = cli_fail_err("demo", &err);
        goto out;
    }
    struct stat st;
    stat(f16, &st);
    printf("%s: llama, %u layers, n_embd %u, n_ff %u, %u heads (%u kv), vocab %u, %.2f MB\n\n", f16, m.n_layer,
           m.n_embd, m.n_ff, m.n_head, m.n_head_kv, m.n_vocab, st.st_size / 1e6);

    printf("== 2. anvil transcode --from %s --out %s --dtype q4_K\n", files[0], files[1]);
    anvil_gguf *src = NULL;
    anvil_transcode *t = NULL;
    anvil_transcode_options o;
    anvil_transcode_options_init(&o);
    o.dtype = ANVIL_TYPE_Q4_K;
    int st_rc = anvil_gguf_open(&src, f16, ctx, 0, &err);
    if (st_rc == ANVIL_OK) st_rc = anvil_transcode_plan(&t, ctx, src, q4, &o, &err);
    if (st_rc == ANVIL_OK) st_rc = anvil_transcode_run(t, &err);
    if (st_rc == ANVIL_OK) cli_transcode_report(stdout, t, &(cli_report){ ctx, f16, 0, NULL, NULL });
    anvil_transcode_free(t);
    anvil_gguf_close(src);
    if (st_rc != ANVIL_OK) {
        rc = cli_fail_err("demo", &err);
        goto out;
    }
    printf("\n== 3. anvil inspect %s\n", files[1]);
    char *args[] = { "inspect", q4, NULL };
    if (cmd_inspect(g, 2, args) != 0) {
        rc = 1;
        goto out;
    }
    printf("\n== 4. a mat-vec on one of its weights\n");
    rc = demo_matvec(ctx, q4, f16, "blk.0.ffn_up.weight");
out:
    if (keep_dir == NULL) {
        remove_demo_files(dir, files, sizeof files / sizeof files[0]);
    } else if (rc == 0) {
        printf("\nkept: %s, %s\n", f16, q4);
    }
    return rc;
}

int cmd_demo(cli_globals *g, int argc, char **argv) {
    if (cli_wants_help(argc, argv)) return cli_help("demo");
    int model = 0;
    const char *keep = NULL;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--model") == 0) {
            model = 1;
        } else if (strcmp(argv[i], "--keep") == 0 && i + 1 < argc) {
            keep = argv[++i];
        } else {
            return cli_usage_error("demo", "unexpected argument '%s'", argv[i]);
        }
    }
    if (keep != NULL && !model) return cli_usage_error("demo", "--keep goes with --model");
    if (model) return demo_model(g, keep);
    anvil_ctx *ctx = cli_ctx(g);
    if (ctx == NULL) return 1;
    const size_t n = (size_t)DEMO_ROWS * DEMO_COLS;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    void *blocks = malloc(n * 8 + 4096);
    if (x == NULL || y == NULL || blocks == NULL) {
        free(x);
        free(y);
        free(blocks);
        return cli_fail("demo", "out of memory");
    }
    double signal = 0;
    for (size_t r = 0; r < DEMO_ROWS; ++r) synth_llm_row(x + r * DEMO_COLS, DEMO_COLS, 42, r);
    for (size_t i = 0; i < n; ++i) signal += (double)x[i] * x[i];

    printf("llm-like tensor %dx%d (deterministic), every loaded codec:\n\n", DEMO_ROWS, DEMO_COLS);
    printf("  %-9s %8s %12s %12s %9s  %s\n", "type", "bits/w", "RMSE", "max |err|", "SNR dB", "");
    int failures = 0;
    for (uint32_t id = 0; id <= ANVIL_TYPE_THIRD_PARTY_LAST; ++id) {
        const anvil_codec *c = anvil_ctx_codec(ctx, id);
        if (c == NULL) continue;
        anvil_type_info t;
        anvil_error err;
        if (anvil_type_lookup(ctx, id, &t, &err) != ANVIL_OK) continue;
        const double bpw = 8.0 * t.block_bytes / t.block_elems;
        if (DEMO_COLS % t.block_elems != 0) {
            printf("  %-9s %8.4f   row length %d is not a multiple of its %u-element block\n", t.name, bpw, DEMO_COLS,
                   t.block_elems);
            continue;
        }
        uint64_t bytes = 0;
        anvil_type_bytes(&t, n, &bytes, NULL);
        int rc = anvil_encode(ctx, id, x, n, blocks, n * 8 + 4096, &err);
        if (rc == ANVIL_E_ENCODER_UNAVAILABLE || rc == ANVIL_E_NEEDS_IMATRIX) {
            printf("  %-9s %8.4f %12s %12s %9s  %s: %s\n", t.name, bpw, "-", "-", "-",
                   rc == ANVIL_E_NEEDS_IMATRIX ? "not shown" : "decode-only", c->encode_note ? c->encode_note : "");
            continue;
        }
        if (rc == ANVIL_OK) rc = anvil_decode(ctx, id, blocks, (size_t)bytes, y, n, &err);
        if (rc != ANVIL_OK) {
            printf("  %-9s FAILED: %s\n", t.name, err.message);
            failures++;
            continue;
        }
        double se = 0, maxe = 0;
        for (size_t i = 0; i < n; ++i) {
            const double e = fabs((double)x[i] - y[i]);
            se += e * e;
            if (e > maxe) maxe = e;
        }
        const double rmse = sqrt(se / n);
        const double snr = se > 0 ? 10.0 * log10(signal / se) : INFINITY;
        printf("  %-9s %8.4f %12.6g %12.6g %9.2f  %s\n", t.name, bpw, rmse, maxe, snr,
               (c->flags & ANVIL_CODEC_ACTIVATION) ? "(activation format)" : "");
    }
    free(x);
    free(y);
    free(blocks);
    return failures ? 1 : 0;
}
