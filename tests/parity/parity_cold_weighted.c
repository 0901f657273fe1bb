/* SPDX-License-Identifier: MIT */
/*
 * The cold family's importance-weighted checks (run by `--family cold`):
 * anvil_encode_rows, the host API and so codec-cold's encode_rows as a user
 * loads it, against ggml_quantize_chunk(type, src, dst, 0, nrows,
 * n_per_row, imatrix), every byte, for all eleven cold formats.
 *
 *   chunks   >= pc->rows weighted rows per format, in chunks of 1..4 rows of
 *            one length (1..4 blocks of 256, 1..32 of 32 or 64: up to 1024
 *            elements), input kinds
 *            cycling through tests/common/inputs.c, importance matrices
 *            cycling through the five synthetic kinds of parity_cold.h;
 *            every sixth chunk without one: the same bytes as ggml, or, for
 *            IQ2_XXS IQ2_XS IQ1_S, ANVIL_E_NEEDS_IMATRIX (ggml asserts)
 *   extreme  ordinary rows, importance matrices with a few columns up to
 *            3e38 (the weighted sums overflow), ggml in a child process:
 *            refusals exactly where ggml aborts, else the same bytes
 *   edges    weighted rows scaled over 1e-38 .. 1e6 with
 *            all-zero groups: every byte; and weighted rows of huge values,
 *            ggml in a child process: anvil refuses (ANVIL_E_UNSUPPORTED)
 *            exactly where ggml aborts, else the same bytes
 *
 * A chunk anvil refuses with ANVIL_E_UNSUPPORTED is re-run in ggml in a
 * child process, which must die there; every other chunk runs in-process.
 *
 * Cost (--rows 10000, CPU time, the box being shared): the searches
 * dominate, ggml's side about half. With 1..4-block rows all of this adds
 * ~21 s to the family (34 s -> 55 s of user time, ggml's children
 * included), so even the slow IQ1/IQ2 searches get the full row count.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/anvil.h"
#include "anvil/blocks.h"
#include "anvil/status.h"
#include "parity_cold.h"

#define MAX_ELEMS 1024
#define MAX_CHUNK_ROWS 4
#define MAX_CHUNK_BYTES (MAX_CHUNK_ROWS * MAX_ELEMS * 2) /* generous: IQ4_NL is 18 bytes per 32 */
#define NULL_IMATRIX_MODE TEST_IMX_ORDINARY              /* chunk mode: no importance matrix */
#define HUGE_ROWS (3 * INPUT_KIND_COUNT)

typedef struct wformat {
    const char *name;
    int type;
    size_t block_elems;
    size_t block_bytes;
    int needs_imatrix; /* ggml_quantize_requires_imatrix */
} wformat;

static const wformat wformats[] = {
    { "iq2_xxs", ANVIL_TYPE_IQ2_XXS, ANVIL_QK_K, sizeof(anvil_block_iq2_xxs), 1 },
    { "iq2_xs", ANVIL_TYPE_IQ2_XS, ANVIL_QK_K, sizeof(anvil_block_iq2_xs), 1 },
    { "iq3_xxs", ANVIL_TYPE_IQ3_XXS, ANVIL_QK_K, sizeof(anvil_block_iq3_xxs), 0 },
    { "iq1_s", ANVIL_TYPE_IQ1_S, ANVIL_QK_K, sizeof(anvil_block_iq1_s), 1 },
    { "iq4_nl", ANVIL_TYPE_IQ4_NL, ANVIL_QK4_NL, sizeof(anvil_block_iq4_nl), 0 },
    { "iq3_s", ANVIL_TYPE_IQ3_S, ANVIL_QK_K, sizeof(anvil_block_iq3_s), 0 },
    { "iq2_s", ANVIL_TYPE_IQ2_S, ANVIL_QK_K, sizeof(anvil_block_iq2_s), 0 },
    { "iq4_xs", ANVIL_TYPE_IQ4_XS, ANVIL_QK_K, sizeof(anvil_block_iq4_xs), 0 },
    { "iq1_m", ANVIL_TYPE_IQ1_M, ANVIL_QK_K, sizeof(anvil_block_iq1_m), 0 },
    { "mxfp4", ANVIL_TYPE_MXFP4, ANVIL_QK_MXFP4, sizeof(anvil_block_mxfp4), 0 },
    { "nvfp4", ANVIL_TYPE_NVFP4, ANVIL_QK_NVFP4, sizeof(anvil_block_nvfp4), 0 },
};

#define N_WFORMATS (sizeof wformats / sizeof wformats[0])

/* ---- one comparison --------------------------------------------------------- */

typedef struct wtally {
    size_t rows, bad; /* rows compared, rows in mismatching chunks */
    size_t aborted;   /* chunks ggml died on and anvil refused */
    double ggml_s, anvil_s;
    size_t elems; /* elements timed on both sides */
} wtally;

/* Encodes one chunk both ways; 0 when they agree (same bytes, or ggml dies
 * where anvil refuses with ANVIL_E_UNSUPPORTED). isolate: run ggml in a
 * child process from the start (rows where ggml is expected to abort). */
static int compare_chunk(parity_ctx *pc, anvil_ctx *ctx, const wformat *f, const float *x, size_t nrows, size_t n,
                         const float *qw, int isolate, wtally *t, char *why, size_t why_size) {
    static uint8_t genc[MAX_CHUNK_BYTES], aenc[MAX_CHUNK_BYTES];
    const size_t bytes = nrows * (n / f->block_elems) * f->block_bytes;
    anvil_error err;
    const double t0 = cold_now_s();
    const int rc = anvil_encode_rows(ctx, (uint32_t)f->type, x, nrows, n, qw, aenc, bytes, &err);
    const double t1 = cold_now_s();
    t->rows += nrows;
    int ggml_done;
    if (isolate || rc == ANVIL_E_UNSUPPORTED) {
        ggml_done = cold_ggml_quantize_isolated(pc, f->type, x, nrows, n, qw, genc, bytes);
        if (ggml_done < 0) {
            snprintf(why, why_size, "could not run ggml in a child process");
            return 1;
        }
    } else {
        const double t2 = cold_now_s();
        pc->oracle->quantize_chunk(f->type, x, genc, 0, (int64_t)nrows, (int64_t)n, qw);
        t->ggml_s += cold_now_s() - t2;
        t->anvil_s += t1 - t0;
        t->elems += nrows * n;
        ggml_done = 1;
    }
    if (!ggml_done) {
        if (rc == ANVIL_E_UNSUPPORTED) {
            t->aborted++;
            return 0;
        }
        snprintf(why, why_size, "ggml aborted, anvil rc %d", rc);
        return 1;
    }
    if (rc != ANVIL_OK) {
        snprintf(why, why_size, "ggml encoded, anvil rc %d: %.200s", rc, err.message);
        return 1;
    }
    const size_t at = parity_first_diff_u8(genc, aenc, bytes);
    if (at != bytes) {
        const size_t row_bytes = bytes / nrows;
        snprintf(why, why_size, "row %zu, block %zu, byte %zu: ggml %02x anvil %02x", at / row_bytes,
                 at % row_bytes / f->block_bytes, at % row_bytes % f->block_bytes, genc[at], aenc[at]);
        return 1;
    }
    return 0;
}

/* ---- chunks ------------------------------------------------------------------ */

static void check_chunks(parity_ctx *pc, anvil_ctx *ctx, const wformat *f) {
    static float x[MAX_CHUNK_ROWS * MAX_ELEMS], qw[MAX_ELEMS];
    static const size_t mults[] = { 1, 2, 3, 4, 8, 16, 32 };
    size_t n_mults = 0;
    while (n_mults < sizeof mults / sizeof mults[0] && mults[n_mults] * f->block_elems <= MAX_ELEMS) {
        n_mults++;
    }
    wtally wt, ut;
    memset(&wt, 0, sizeof wt);
    memset(&ut, 0, sizeof ut);
    size_t refused_ok = 0, refused_bad = 0, row_no = 0;
    unsigned kinds = 0, lens = 0;
    for (size_t c = 0; wt.rows < pc->rows; ++c) {
        test_rng r;
        test_rng_seed(&r, pc->seed * 977u + c * 131u + (uint64_t)f->type);
        const size_t mi = (size_t)(test_rng_u64(&r) % n_mults);
        const size_t n = mults[mi] * f->block_elems;
        const size_t nrows = 1 + (size_t)(test_rng_u64(&r) % MAX_CHUNK_ROWS);
        const unsigned mode = (unsigned)(c % (TEST_IMX_ORDINARY + 1));
        lens |= 1u << mi;
        for (size_t k = 0; k < nrows; ++k, ++row_no) {
            const test_input_kind kind = (test_input_kind)(row_no % INPUT_KIND_COUNT);
            kinds |= 1u << kind;
            test_input_fill(x + k * n, n, kind, pc->seed + 11, row_no);
        }
        const float *qwp = NULL;
        if (mode != NULL_IMATRIX_MODE) {
            test_imatrix_fill(qw, n, (test_imatrix_kind)mode, pc->seed * 31u + c);
            qwp = qw;
        } else if (f->needs_imatrix) {
            static uint8_t out[MAX_CHUNK_BYTES];
            anvil_error err;
            const int rc = anvil_encode_rows(ctx, (uint32_t)f->type, x, nrows, n, NULL, out, sizeof out, &err);
            if (rc == ANVIL_E_NEEDS_IMATRIX && strstr(err.message, "importance matrix") != NULL) {
                refused_ok++;
            } else if (refused_bad++ < 3) {
                printf("  %s without an imatrix: rc %d (%s), expected ANVIL_E_NEEDS_IMATRIX\n", f->name, rc,
                       err.message);
            }
            continue;
        }
        wtally *t = qwp != NULL ? &wt : &ut;
        char why[320];
        if (compare_chunk(pc, ctx, f, x, nrows, n, qwp, 0, t, why, sizeof why) != 0) {
            t->bad += nrows;
            if (t->bad <= 3 * nrows) {
                printf("  %s chunk %zu (%zu rows of %zu, imatrix %s): %s\n", f->name, c, nrows, n,
                       qwp != NULL ? test_imatrix_kind_name((test_imatrix_kind)mode) : "none", why);
            }
        }
    }
    size_t n_kinds = 0, n_lens = 0;
    for (unsigned k = kinds; k != 0; k &= k - 1) {
        n_kinds++;
    }
    for (unsigned k = lens; k != 0; k &= k - 1) {
        n_lens++;
    }
    char what[160];
    snprintf(what, sizeof what,
             "encode_rows + imatrix vs ggml_quantize_chunk (%d imatrix, %zu input kinds, %zu lengths)",
             (int)TEST_IMX_ORDINARY, n_kinds, n_lens);
    parity_report(pc, f->name, what, wt.rows, wt.bad);
    if (f->needs_imatrix) {
        parity_report(pc, f->name, "encode_rows without imatrix: ANVIL_E_NEEDS_IMATRIX", refused_ok + refused_bad,
                      refused_bad);
    } else {
        parity_report(pc, f->name, "encode_rows without imatrix vs ggml_quantize_chunk", ut.rows, ut.bad);
    }
    const double blocks = (double)wt.elems / 256.0;
    printf("%-8s   weighted encode speed on the same %zu rows: ggml %.1f us, anvil %.1f us per 256 "
           "elements (anvil %.2fx ggml's speed)\n",
           f->name, wt.rows, blocks > 0 ? wt.ggml_s * 1e6 / blocks : 0.0,
           blocks > 0 ? wt.anvil_s * 1e6 / blocks : 0.0, wt.anvil_s > 0 ? wt.ggml_s / wt.anvil_s : 0.0);
}

/* ---- edges: tiny and huge values ------------------------------------------- */

static void check_edges(parity_ctx *pc, anvil_ctx *ctx, const wformat *f) {
    static float x[2 * ANVIL_QK_K], qw[2 * ANVIL_QK_K];
    wtally t;
    memset(&t, 0, sizeof t);
    const size_t rows = pc->rows / 4 > 256 ? pc->rows / 4 : 256;
    size_t bad = 0;
    test_rng r;
    test_rng_seed(&r, pc->seed * 13u + (uint64_t)f->type);
    for (size_t row = 0; row < rows; ++row) {
        const test_input_kind kind = (test_input_kind)(row % INPUT_KIND_COUNT);
        const test_imatrix_kind imx = (test_imatrix_kind)(row % TEST_IMX_ORDINARY);
        const size_t n = (1 + row % 2) * ANVIL_QK_K;
        const float e = -38.0f + 44.0f * test_rng_uniform(&r);
        cold_edge_row(x, n, kind, pc->seed + 3, row, e);
        test_imatrix_fill(qw, n, imx, pc->seed + row);
        char why[320];
        if (compare_chunk(pc, ctx, f, x, 1, n, qw, 0, &t, why, sizeof why) != 0 && bad++ < 3) {
            printf("  %s weighted scaled row %zu (%s x 1e%.1f, imatrix %s): %s\n", f->name, row,
                   test_input_kind_name(kind), (double)e, test_imatrix_kind_name(imx), why);
        }
    }
    parity_report(pc, f->name, "encode_rows + imatrix, rows x 1e-38..1e6 with all-zero groups", rows, bad);

    memset(&t, 0, sizeof t);
    bad = 0;
    for (size_t row = 0; row < HUGE_ROWS; ++row) {
        const test_input_kind kind = (test_input_kind)(row % INPUT_KIND_COUNT);
        const test_imatrix_kind imx = (test_imatrix_kind)(row % TEST_IMX_ORDINARY);
        const float e = 6.0f + 26.0f * (float)row / (float)HUGE_ROWS;
        cold_edge_row(x, ANVIL_QK_K, kind, pc->seed + 9, row, e);
        test_imatrix_fill(qw, ANVIL_QK_K, imx, pc->seed + 5 * row);
        char why[320];
        if (compare_chunk(pc, ctx, f, x, 1, ANVIL_QK_K, qw, 1, &t, why, sizeof why) != 0 && bad++ < 3) {
            printf("  %s weighted huge row %zu (%s x 1e%.1f, imatrix %s): %s\n", f->name, row,
                   test_input_kind_name(kind), (double)e, test_imatrix_kind_name(imx), why);
        }
    }
    char what[128];
    snprintf(what, sizeof what,
             "encode_rows + imatrix x 1e6..1e32: refused where ggml aborts (%zu), else bytes (%zu)", t.aborted,
             (size_t)HUGE_ROWS - t.aborted);
    parity_report(pc, f->name, what, HUGE_ROWS, bad);
}

/* ---- extreme weights ---------------------------------------------------------- */

/* Ordinary rows, an importance matrix with a few columns up to 3e38: the
 * weighted sums overflow to Inf/NaN. The lattice searches then mostly die
 * in ggml, which runs in a child process; the rest must match. */
static void check_extreme(parity_ctx *pc, anvil_ctx *ctx, const wformat *f) {
    static float x[MAX_ELEMS], qw[MAX_ELEMS];
    const size_t n = f->block_elems == 32 ? 96 : 2 * f->block_elems;
    wtally t;
    memset(&t, 0, sizeof t);
    size_t bad = 0;
    for (size_t row = 0; row < HUGE_ROWS; ++row) {
        const test_input_kind kind = (test_input_kind)(row % INPUT_KIND_COUNT);
        test_input_fill(x, n, kind, pc->seed + 17, row);
        /* The seed mixed as this check's matrices always were: the same
         * weights, so the same rows on which ggml aborts. */
        test_imatrix_fill(qw, n, TEST_IMX_EXTREME, (pc->seed * 7 + row) * UINT64_C(2654435761) + TEST_IMX_EXTREME);
        char why[320];
        if (compare_chunk(pc, ctx, f, x, 1, n, qw, 1, &t, why, sizeof why) != 0 && bad++ < 3) {
            printf("  %s extreme-weight row %zu (%s): %s\n", f->name, row, test_input_kind_name(kind), why);
        }
    }
    char what[128];
    snprintf(what, sizeof what, "encode_rows + imatrix up to 3e38: refused where ggml aborts (%zu), else bytes (%zu)",
             t.aborted, (size_t)HUGE_ROWS - t.aborted);
    parity_report(pc, f->name, what, HUGE_ROWS, bad);
}

/* ---- entry ------------------------------------------------------------------- */

void parity_cold_weighted(parity_ctx *pc) {
    anvil_ctx *ctx = NULL;
    anvil_error err;
    const char *config = getenv("ANVIL_CONFIG");
    if (anvil_ctx_open(&ctx, config != NULL && *config ? config : ANVIL_TEST_CONFIG, &err) != ANVIL_OK) {
        printf("cold weighted: anvil context: %s\n", err.message);
        parity_report(pc, "cold", "anvil context opens (weighted checks)", 1, 1);
        return;
    }
    const double t0 = cold_now_s();
    for (size_t i = 0; i < N_WFORMATS; ++i) {
        const wformat *f = &wformats[i];
        const double tf = cold_now_s();
        check_chunks(pc, ctx, f);
        check_extreme(pc, ctx, f);
        check_edges(pc, ctx, f);
        printf("%-8s   weighted checks: %.1f s\n", f->name, cold_now_s() - tf);
    }
    printf("cold weighted checks: %.1f s in all\n", cold_now_s() - t0);
    anvil_ctx_close(ctx);
}
