/* SPDX-License-Identifier: MIT */
/*
 * ptqtp-report: the SNR table of PTQTP against its neighbours, for the
 * issue's closing note and for anyone re-measuring it (not a test).
 *
 *   ptqtp-report                 `anvil demo`'s 64 x 4096 llm-like tensor
 *   ptqtp-report MODEL.gguf      every float matrix of the model, each
 *                                flattened into 256-weight groups
 *
 * Flattened, because real small models often have rows no 256-block fits
 * (stories260K: rows of 64 and 172), while every format compared here has
 * 256-element blocks: the groups then span rows, which measures how well a
 * format fits the weights' distribution, not a model anvil could write.
 * Every figure goes through the loaded codecs (anvil_encode/anvil_decode),
 * as `anvil transcode` would. Also prints the encoder's speed on the same
 * data and, for ptqtp, its mean starts and alternating steps per block.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "anvil/anvil.h"
#include "anvil/gguf.h"
#include "ptqtp_ref.h"
#include "synth_rows.h"

static const char *const TYPES[] = { "ptqtp2", "ptqtp3", "tq1_0", "tq2_0", "q2_K", "iq2_s", "q3_K", "q4_K" };
#define N_TYPES (sizeof TYPES / sizeof TYPES[0])

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct acc {
    double sig, sse, seconds;
    size_t n;
} acc;

static int measure(anvil_ctx *ctx, const char *type, const float *x, size_t n, acc *a) {
    anvil_error err;
    uint32_t id;
    anvil_type_info info;
    uint64_t bytes = 0;
    if (anvil_type_from_name(ctx, type, &id, &err) != ANVIL_OK ||
        anvil_type_lookup(ctx, id, &info, &err) != ANVIL_OK || anvil_type_bytes(&info, n, &bytes, &err) != ANVIL_OK) {
        fprintf(stderr, "%s: %s\n", type, err.message);
        return -1;
    }
    void *blocks = malloc((size_t)bytes);
    float *y = malloc(n * sizeof *y);
    int rc = blocks && y ? ANVIL_OK : ANVIL_E_NOMEM;
    const double t0 = now();
    if (rc == ANVIL_OK) rc = anvil_encode(ctx, id, x, n, blocks, (size_t)bytes, &err);
    a->seconds += now() - t0;
    if (rc == ANVIL_OK) rc = anvil_decode(ctx, id, blocks, (size_t)bytes, y, n, &err);
    if (rc == ANVIL_OK) {
        for (size_t i = 0; i < n; ++i) {
            a->sig += (double)x[i] * x[i];
            a->sse += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
        }
        a->n += n;
    } else {
        fprintf(stderr, "%s: %s\n", type, err.message);
    }
    free(blocks);
    free(y);
    return rc == ANVIL_OK ? 0 : -1;
}

static void fit_stats(const float *x, size_t n, unsigned k, double *starts, double *steps) {
    double s0 = 0, s1 = 0;
    for (size_t b = 0; b < n / 256; ++b) {
        anvil_ptqtp_fit_result r;
        anvil_ptqtp_fit(x + 256 * b, k, &r);
        s0 += r.starts;
        s1 += r.steps;
    }
    *starts = s0 / (double)(n / 256);
    *steps = s1 / (double)(n / 256);
}

static void table(anvil_ctx *ctx, const char *title, float **data, const size_t *lens, size_t count) {
    printf("%s\n  %-8s %8s %9s %10s\n", title, "type", "bits/w", "SNR dB", "enc MB/s");
    for (size_t t = 0; t < N_TYPES; ++t) {
        acc a = { 0 };
        int bad = 0;
        for (size_t i = 0; i < count; ++i) bad |= measure(ctx, TYPES[t], data[i], lens[i], &a);
        uint32_t id;
        anvil_type_info info;
        if (bad || anvil_type_from_name(ctx, TYPES[t], &id, NULL) != ANVIL_OK ||
            anvil_type_lookup(ctx, id, &info, NULL) != ANVIL_OK) {
            printf("  %-8s (not measured)\n", TYPES[t]);
            continue;
        }
        printf("  %-8s %8.4f %9.2f %10.1f", TYPES[t], 8.0 * info.block_bytes / info.block_elems,
               10.0 * log10(a.sig / a.sse), (double)a.n * 4 / 1e6 / a.seconds);
        if (strncmp(TYPES[t], "ptqtp", 5) == 0) {
            double starts = 0, steps = 0, w = 0;
            for (size_t i = 0; i < count; ++i) {
                double s0, s1;
                fit_stats(data[i], lens[i], (unsigned)(TYPES[t][5] - '0'), &s0, &s1);
                starts += s0 * (double)lens[i];
                steps += s1 * (double)lens[i];
                w += (double)lens[i];
            }
            printf("   (%.1f starts, %.1f alternating steps per block)", starts / w, steps / w);
        }
        printf("\n");
    }
}

int main(int argc, char **argv) {
    anvil_ctx *ctx = NULL;
    anvil_error err;
    if (anvil_ctx_open(&ctx, NULL, &err) != ANVIL_OK) {
        fprintf(stderr, "ptqtp-report: %s\n", err.message);
        return 1;
    }
    if (argc < 2) {
        enum { ROWS = 64, COLS = 4096 }; /* as cmd_demo.c */
        float *x = malloc(sizeof(float) * ROWS * COLS);
        for (size_t r = 0; r < ROWS; ++r) synth_llm_row(x + r * COLS, COLS, 42, r);
        const size_t n = ROWS * COLS;
        table(ctx, "anvil demo's llm-like tensor, 64 x 4096:", &x, &n, 1);
        free(x);
    } else {
        anvil_gguf *g = NULL;
        if (anvil_gguf_open(&g, argv[1], ctx, 0, &err) != ANVIL_OK) {
            fprintf(stderr, "ptqtp-report: %s\n", err.message);
            return 1;
        }
        float *data[1024];
        size_t lens[1024], count = 0, total = 0;
        for (size_t i = 0; i < anvil_gguf_tensor_count(g) && count < 1024; ++i) {
            const anvil_gguf_tensor *t = anvil_gguf_tensor_at(g, i);
            if (t->n_dims < 2 || t->n_elements % 256 != 0 || t->type_info.is_quantized) continue;
            data[count] = malloc(t->n_elements * sizeof(float));
            if (anvil_decode(ctx, t->type, t->data, t->n_bytes, data[count], t->n_elements, &err) != ANVIL_OK) {
                free(data[count]);
                continue;
            }
            lens[count++] = t->n_elements;
            total += t->n_elements;
        }
        char title[4200];
        snprintf(title, sizeof title,
                 "%s: %zu float matrices, %zu weights, flattened into 256-weight groups:", argv[1], count, total);
        table(ctx, title, data, lens, count);
        for (size_t i = 0; i < count; ++i) free(data[i]);
        anvil_gguf_close(g);
    }
    anvil_ctx_close(ctx);
    return 0;
}
