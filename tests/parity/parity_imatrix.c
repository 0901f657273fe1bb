/* SPDX-License-Identifier: MIT */
/*
 * Parity of the row encoders with and without an importance matrix (issue
 * 15) for the formats of codec-q8_0, codec-kquants and codec-ternary:
 * anvil_encode_rows, through the plugins the config loads, against ggml's
 * ggml_quantize_chunk, byte for byte.
 *
 * Per format, calls of 1..3 rows cycle through every input kind of
 * tests/common/inputs.h, seven importance matrices (none, all ones,
 * log-normal, heavy-tailed with a few huge columns, exact zeros including
 * whole zero groups, tiny and subnormal values, a few columns so large the
 * weighted sums overflow) and five row lengths (1, 2, 3 and 7 blocks, and
 * 4096 elements: the flat formats weight by the mean square of the whole
 * row), until at least pc->rows rows are encoded with an importance matrix. Every row counts once, reported per matrix kind.
 * With pc->golden_dir set, (re)writes <dir>/imatrix/<type>.bin (see
 * tests/common/golden_imatrix.h), ggml's bytes.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "anvil/anvil.h"
#include "golden_imatrix.h"
#include "imatrix_kinds.h"
#include "parity.h"

#define IMX_MAX_ROW 4096 /* elements */
#define IMX_MAX_ROWS 3   /* rows per call */
#define IMX_SHOW 3       /* failures printed per format */

static const char *const type_names[] = {
    "q4_0",  "q4_1",  "q5_0", "q5_1", "q8_0", /* codec-q8_0 */
    "q2_K",  "q3_K",  "q4_K", "q5_K", "q6_K", /* codec-kquants */
    "tq1_0", "tq2_0", "q1_0", "q2_0",         /* codec-ternary */
};
#define N_TYPES (sizeof type_names / sizeof type_names[0])

/* The importance matrices of a call: none, or one of tests/common's kinds
 * (imx_kind k > 0 is test_imatrix_kind k - 1). */
enum { IMX_NONE = 0, IMX_KIND_COUNT = 1 + TEST_IMX_KIND_COUNT };
typedef int imx_kind;

static const char *imx_name(imx_kind k) {
    return k == IMX_NONE ? "none" : test_imatrix_kind_name((test_imatrix_kind)(k - 1));
}

typedef struct tally {
    size_t checked, bad;
} tally;

/* Row lengths: 1, 2, 3 and 7 blocks, and 4096 elements. */
static size_t row_length(uint32_t block_elems, size_t i) {
    static const size_t blocks[4] = { 1, 2, 3, 7 };
    return i < 4 ? blocks[i] * block_elems : IMX_MAX_ROW;
}

/* The golden fixture of one format: 32 one-row records, every input kind
 * twice, cycling through the six importance matrices and none. */
static int write_golden(parity_ctx *pc, const char *name, uint32_t type, const anvil_type_info *t,
                        int ignores_imatrix) {
    enum { N_IMX = IMX_KIND_COUNT - 1, N_REC = 2 * INPUT_KIND_COUNT };
    char path[4096];
    snprintf(path, sizeof path, "%s/imatrix", pc->golden_dir);
    if (mkdir(path, 0777) != 0 && errno != EEXIST) {
        perror(path);
        return -1;
    }
    snprintf(path, sizeof path, "%s/imatrix/%s.bin", pc->golden_dir, name);
    golden_imx_header h;
    memset(&h, 0, sizeof h);
    h.type_id = type;
    /* Several blocks where the weights reach across them (the flat formats
     * weight by the whole row's mean square, the k-quants index the matrix
     * per super-block); one where the format ignores the matrix. */
    h.n_per_row = ignores_imatrix ? t->block_elems : t->block_elems == 32 ? 96 : 2 * t->block_elems;
    h.row_bytes = h.n_per_row / t->block_elems * t->block_bytes;
    h.n_imatrix = N_IMX;
    h.n_records = N_REC;
    snprintf(h.type_name, sizeof h.type_name, "%s", name);
    static float in[IMX_MAX_ROW];
    static uint8_t enc[IMX_MAX_ROW * 4];
    float *imx = malloc((size_t)N_IMX * h.n_per_row * sizeof *imx);
    if (imx == NULL) {
        return -1;
    }
    for (uint32_t k = 0; k < N_IMX; ++k) {
        test_imatrix_fill(imx + (size_t)k * h.n_per_row, h.n_per_row, (test_imatrix_kind)k, pc->seed * 977 + k);
    }
    FILE *f = golden_imx_write_begin(path, &h, imx);
    if (f == NULL) {
        free(imx);
        return -1;
    }
    int rc = 0;
    for (uint32_t i = 0; i < N_REC && rc == 0; ++i) {
        const uint32_t kind = i % INPUT_KIND_COUNT;
        const uint32_t which = (kind + 3 * (i / INPUT_KIND_COUNT)) % (N_IMX + 1); /* N_IMX: none */
        test_input_fill(in, h.n_per_row, (test_input_kind)kind, pc->seed + 4242, i);
        memset(enc, 0, h.row_bytes);
        pc->oracle->quantize_chunk((int)type, in, enc, 0, 1, h.n_per_row,
                                   which < N_IMX ? imx + (size_t)which * h.n_per_row : NULL);
        rc = golden_imx_write_record(f, &h, kind, which, in, enc);
    }
    free(imx);
    if (golden_imx_write_end(f) != 0 || rc != 0) {
        fprintf(stderr, "parity imatrix: writing %s failed\n", path);
        return -1;
    }
    printf("%-8s golden written: %s (%u records)\n", name, path, h.n_records);
    return 0;
}

static void check_type(parity_ctx *pc, anvil_ctx *ctx, const char *name) {
    static float x[IMX_MAX_ROWS * IMX_MAX_ROW];
    static float w[IMX_MAX_ROW];
    static uint8_t enc_ggml[IMX_MAX_ROWS * IMX_MAX_ROW * 4];
    static uint8_t enc_anvil[IMX_MAX_ROWS * IMX_MAX_ROW * 4];
    anvil_error err;
    uint32_t type;
    anvil_type_info t;
    if (anvil_type_from_name(ctx, name, &type, &err) != ANVIL_OK ||
        anvil_type_lookup(ctx, type, &t, &err) != ANVIL_OK || anvil_ctx_codec(ctx, type) == NULL) {
        fprintf(stderr, "parity imatrix: %s: %s\n", name, err.message);
        parity_report(pc, name, "codec loaded", 0, 1);
        return;
    }
    tally by_imx[IMX_KIND_COUNT];
    memset(by_imx, 0, sizeof by_imx);
    size_t kinds_seen[INPUT_KIND_COUNT] = { 0 };
    size_t lengths_seen[5] = { 0 };
    size_t weighted_rows = 0, shown = 0;
    for (size_t c = 0; weighted_rows < pc->rows; ++c) {
        const test_input_kind kind = (test_input_kind)(c % INPUT_KIND_COUNT);
        const imx_kind ik = (imx_kind)((c / INPUT_KIND_COUNT) % IMX_KIND_COUNT);
        const size_t li = (c / (INPUT_KIND_COUNT * IMX_KIND_COUNT)) % 5;
        const size_t n_per_row = row_length(t.block_elems, li);
        const size_t nrows = 1 + c % IMX_MAX_ROWS;
        const size_t nbytes = nrows * (n_per_row / t.block_elems) * t.block_bytes;
        test_input_fill(x, nrows * n_per_row, kind, pc->seed + type, c);
        if (ik != IMX_NONE) {
            test_imatrix_fill(w, n_per_row, (test_imatrix_kind)(ik - 1), (pc->seed * 131 + type) * 1000003 + c);
        }
        const float *imatrix = ik == IMX_NONE ? NULL : w;

        memset(enc_ggml, 0, nbytes);
        memset(enc_anvil, 0xA5, nbytes);
        pc->oracle->quantize_chunk((int)type, x, enc_ggml, 0, (int64_t)nrows, (int64_t)n_per_row, imatrix);
        const int rc = anvil_encode_rows(ctx, type, x, nrows, n_per_row, imatrix, enc_anvil, nbytes, &err);
        const size_t row_bytes = nbytes / nrows;
        for (size_t r = 0; r < nrows; ++r) {
            const size_t d =
                rc != ANVIL_OK ? 0
                               : parity_first_diff_u8(enc_anvil + r * row_bytes, enc_ggml + r * row_bytes, row_bytes);
            const int ok = rc == ANVIL_OK && d == row_bytes;
            by_imx[ik].checked++;
            by_imx[ik].bad += ok ? 0 : 1;
            if (!ok && shown++ < (pc->verbose ? 20u : (size_t)IMX_SHOW)) {
                printf("  %s call %zu row %zu (%s, imatrix %s, %zu per row): %s byte %zu (block %zu "
                       "+%zu): anvil %02x ggml %02x\n",
                       name, c, r, test_input_kind_name(kind), imx_name(ik), n_per_row,
                       rc != ANVIL_OK ? err.message : "", d, d / t.block_bytes, d % t.block_bytes,
                       d < row_bytes ? enc_anvil[r * row_bytes + d] : 0,
                       d < row_bytes ? enc_ggml[r * row_bytes + d] : 0);
            }
        }
        kinds_seen[kind] += nrows;
        lengths_seen[li] += nrows;
        weighted_rows += ik == IMX_NONE ? 0 : nrows;
    }
    size_t kinds = 0, lengths = 0;
    for (size_t i = 0; i < INPUT_KIND_COUNT; ++i) {
        kinds += kinds_seen[i] > 0;
    }
    for (size_t i = 0; i < 5; ++i) {
        lengths += lengths_seen[i] > 0;
    }
    for (int k = 0; k < IMX_KIND_COUNT; ++k) {
        char what[80];
        snprintf(what, sizeof what, "rows, imatrix %s (%zu kinds, %zu lengths)", imx_name(k), kinds, lengths);
        parity_report(pc, name, what, by_imx[k].checked, by_imx[k].bad);
    }
    const int ignores = (anvil_ctx_codec(ctx, type)->flags & ANVIL_CODEC_IMATRIX_UNUSED) != 0;
    if (pc->golden_dir != NULL && write_golden(pc, name, type, &t, ignores) != 0) {
        parity_report(pc, name, "golden written", 0, 1);
    }
}

int parity_imatrix(parity_ctx *pc) {
    const size_t before = pc->total_failures;
    if (pc->oracle->quantize_chunk == NULL) {
        parity_report(pc, "ggml", "ggml_quantize_chunk found", 0, 1);
        return 1;
    }
    const char *cfg = getenv("ANVIL_CONFIG");
    anvil_ctx *ctx = NULL;
    anvil_error err;
    if (anvil_ctx_open(&ctx, cfg != NULL && *cfg != '\0' ? cfg : ANVIL_TEST_CONFIG, &err) != ANVIL_OK) {
        fprintf(stderr, "parity imatrix: %s\n", err.message);
        parity_report(pc, "ctx", "anvil context opens", 0, 1);
        return 1;
    }
    for (size_t i = 0; i < N_TYPES; ++i) {
        check_type(pc, ctx, type_names[i]);
    }
    anvil_ctx_close(ctx);
    return (int)(pc->total_failures - before);
}
