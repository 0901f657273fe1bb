/* anvil demo: every loaded codec encodes and decodes one built-in llm-like
 * tensor; prints bits/weight, RMSE, max error and SNR per format. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "synth.h"

#define DEMO_ROWS 64
#define DEMO_COLS 4096

int cmd_demo(cli_globals *g, int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        printf("usage: anvil demo\n\nEncodes and decodes a built-in %dx%d llm-like tensor with every loaded\n"
               "codec and prints bits/weight, RMSE, max absolute error and SNR per format.\n",
               DEMO_ROWS, DEMO_COLS);
        return 0;
    }
    if (argc > 1) return cli_fail("demo", "unexpected argument '%s' (try --help)", argv[1]);
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
            printf("  %-9s %8.4f   row length %d is not a multiple of its %u-element block\n", t.name, bpw,
                   DEMO_COLS, t.block_elems);
            continue;
        }
        uint64_t bytes = 0;
        anvil_type_bytes(&t, n, &bytes, NULL);
        int rc = anvil_encode(ctx, id, x, n, blocks, n * 8 + 4096, &err);
        if (rc == ANVIL_E_ENCODER_UNAVAILABLE) {
            printf("  %-9s %8.4f %12s %12s %9s  decode-only: %s\n", t.name, bpw, "-", "-", "-",
                   c->encode_note ? c->encode_note : "");
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
