/* SPDX-License-Identifier: MIT */
/*
 * test_cold_enc: the lattice encoders (IQ3_XXS IQ3_S IQ2_S IQ1_M, and
 * IQ2_XXS IQ2_XS IQ1_S, which exist only with an importance matrix: here
 * with all-ones weights) beyond what test_cold's golden fixtures check,
 * without ggml.
 *
 *  threads   the search tables' first build, raced by several threads that
 *            encode at once (this suite's first test, so nothing has built
 *            them yet in this process): same bytes as a lone thread
 *  tables    every key of every lattice, against a brute-force rebuild of
 *            ggml's rule (candidates = grid points at the nwant smallest
 *            distances, in (distance, index) order), and codebook facts
 *            copied from ggml's kgrid tables
 *  refusals  values whose squared errors overflow (where ggml aborts):
 *            ANVIL_E_UNSUPPORTED naming the block (and, row-wise, the row);
 *            ordinary large values encode
 *  ties      the IQ1 searches' sort: equal values in index order (what
 *            glibc's qsort gives ggml), and tie-heavy rows against ggml's bytes
 *  known     hand-derived bytes: zeros, sign fields, and IQ3_S's habit of
 *            writing a group's indices and signs one group early after an
 *            all-zero group
 *  plugin    codec-cold's init hook builds the tables (idempotent) and its
 *            seven lattice codecs encode exactly as the reference
 *  isas      the scale sweep's run-time-selected path (AVX2 where the CPU
 *            has it; NEON on aarch64, under qemu-aarch64 by
 *            scripts/test-aarch64.sh) against its portable path: the
 *            same codes and scale bits for random groups of every
 *            sweep-based format; and the IQ1 searches' (cut points, grid
 *            candidates, stable order) on hostile groups: ties, zeros,
 *            denormals, huge values, zero weights; and the sweep
 *            lattices' neighbour search on the same kinds of groups, on
 *            ties by construction (zero scale, values midway between
 *            levels, equal or zero weights) and on every list with the
 *            codes a lane past its end would read at error 0; and
 *            IQ2_XXS's first scale (make_qp_quants: eight trial grids side
 *            by side on AVX2 or NEON) on the same kinds of groups
 */
#include <CUnit/Basic.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/abi.h"
#include "anvil/blocks.h"
#include "anvil/codec.h"
#include "anvil/status.h"
#include "inputs.h"
#include "ref/cold.h"
#include "ref/cold_enc_grid.h"
#include "ref/cold_enc_iq1_search.h"
#include "ref/cold_enc_lattice.h"
#include "ref/cold_enc_search.h"
#include "ref/cold_tables.h"
#include "ref/cpu_probe.h"
#include "ref/kquants_search.h"
#include "test_env.h"

#define ROW 512 /* two super-blocks */

typedef struct enc_fmt {
    const char *name;
    int type;
    size_t block_bytes;
    anvil_encode_fn encode; /* what the tests call: one row */
    anvil_encode_rows_fn encode_rows;
    int needs_imatrix; /* encode = encode_rows with all-ones weights */
} enc_fmt;

/* One row through encode_rows with all-ones importance weights: the
 * single-row form the tests call for the formats that need weights. */
static float ones[ROW];

#define WITH_ONES(t)                                                                                           \
    static int ones_##t(const float *src, void *dst, size_t n, char *msg, size_t msg_size) {                   \
        return n > ROW ? ANVIL_E_INVALID_ARG : anvil_ref_encode_rows_##t(src, dst, 1, n, ones, msg, msg_size); \
    }
WITH_ONES(iq2_xxs)
WITH_ONES(iq2_xs)
WITH_ONES(iq1_s)

static const enc_fmt fmts[] = {
    { "iq3_xxs", ANVIL_TYPE_IQ3_XXS, sizeof(anvil_block_iq3_xxs), anvil_ref_encode_iq3_xxs,
      anvil_ref_encode_rows_iq3_xxs, 0 },
    { "iq3_s", ANVIL_TYPE_IQ3_S, sizeof(anvil_block_iq3_s), anvil_ref_encode_iq3_s, anvil_ref_encode_rows_iq3_s, 0 },
    { "iq2_s", ANVIL_TYPE_IQ2_S, sizeof(anvil_block_iq2_s), anvil_ref_encode_iq2_s, anvil_ref_encode_rows_iq2_s, 0 },
    { "iq1_m", ANVIL_TYPE_IQ1_M, sizeof(anvil_block_iq1_m), anvil_ref_encode_iq1_m, anvil_ref_encode_rows_iq1_m, 0 },
    { "iq2_xxs", ANVIL_TYPE_IQ2_XXS, sizeof(anvil_block_iq2_xxs), ones_iq2_xxs, anvil_ref_encode_rows_iq2_xxs, 1 },
    { "iq2_xs", ANVIL_TYPE_IQ2_XS, sizeof(anvil_block_iq2_xs), ones_iq2_xs, anvil_ref_encode_rows_iq2_xs, 1 },
    { "iq1_s", ANVIL_TYPE_IQ1_S, sizeof(anvil_block_iq1_s), ones_iq1_s, anvil_ref_encode_rows_iq1_s, 1 },
};
#define N_FMTS (sizeof fmts / sizeof fmts[0])

/* ---- threads ------------------------------------------------------------- */

#define N_THREADS 4
#define THREAD_ROWS 16 /* one per input kind */

static pthread_barrier_t start_line;
static uint8_t thread_out[N_THREADS][N_FMTS][THREAD_ROWS][ROW / ANVIL_QK_K * sizeof(anvil_block_iq3_s)];
static int thread_rc[N_THREADS];

static void thread_row(float *x, size_t row) {
    test_input_fill(x, ROW, (test_input_kind)(row % INPUT_KIND_COUNT), 42, row);
}

static void *encode_all(void *arg) {
    const size_t t = (size_t)(uintptr_t)arg;
    float x[ROW];
    pthread_barrier_wait(&start_line);
    /* Each thread starts on a different format, so the first encodes (and
     * the first init) of all four overlap. */
    for (size_t k = 0; k < N_FMTS; ++k) {
        const size_t fi = (t + k) % N_FMTS;
        for (size_t row = 0; row < THREAD_ROWS; ++row) {
            thread_row(x, row);
            const int rc = fmts[fi].encode(x, thread_out[t][fi][row], ROW, NULL, 0);
            if (rc != ANVIL_OK) {
                thread_rc[t] = rc;
            }
        }
    }
    return NULL;
}

static void test_threads_first_init(void) {
    for (size_t j = 0; j < ROW; ++j) {
        ones[j] = 1.0f;
    }
    pthread_t th[N_THREADS];
    CU_ASSERT_EQUAL_FATAL(pthread_barrier_init(&start_line, NULL, N_THREADS), 0);
    for (size_t t = 0; t < N_THREADS; ++t) {
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th[t], NULL, encode_all, (void *)(uintptr_t)t), 0);
    }
    for (size_t t = 0; t < N_THREADS; ++t) {
        pthread_join(th[t], NULL);
        CU_ASSERT_EQUAL(thread_rc[t], ANVIL_OK);
    }
    pthread_barrier_destroy(&start_line);
    /* A lone thread, tables long built: the same bytes. */
    float x[ROW];
    uint8_t alone[ROW / ANVIL_QK_K * sizeof(anvil_block_iq3_s)];
    size_t diff = 0;
    for (size_t fi = 0; fi < N_FMTS; ++fi) {
        const size_t bytes = ROW / ANVIL_QK_K * fmts[fi].block_bytes;
        for (size_t row = 0; row < THREAD_ROWS; ++row) {
            thread_row(x, row);
            CU_ASSERT_EQUAL(fmts[fi].encode(x, alone, ROW, NULL, 0), ANVIL_OK);
            for (size_t t = 0; t < N_THREADS; ++t) {
                diff += memcmp(alone, thread_out[t][fi][row], bytes) != 0;
            }
        }
    }
    CU_ASSERT_EQUAL(diff, 0);
    /* Built once: every later init answers OK and hands out the same tables. */
    const cold_lattice *a = anvil_ref_cold_lattice(COLD_LATTICE_IQ1);
    CU_ASSERT_EQUAL(anvil_ref_cold_lattice_init(), ANVIL_OK);
    CU_ASSERT_PTR_NOT_NULL(a);
    CU_ASSERT_PTR_EQUAL(anvil_ref_cold_lattice(COLD_LATTICE_IQ1), a);
    CU_ASSERT_PTR_NULL(anvil_ref_cold_lattice(COLD_LATTICE_COUNT));
    /* one lattice at a time (each encoder builds only its own) */
    CU_ASSERT_EQUAL(anvil_ref_cold_lattice_init_one(COLD_LATTICE_IQ3S), ANVIL_OK);
    CU_ASSERT_NOT_EQUAL(anvil_ref_cold_lattice_init_one(COLD_LATTICE_COUNT), ANVIL_OK);
}

/* ---- tables -------------------------------------------------------------- */

typedef struct lattice_expect {
    enum cold_lattice_id id;
    const char *name;
    int dims, levels, grid_size, nwant;
} lattice_expect;

static const lattice_expect lattices[] = {
    { COLD_LATTICE_IQ3XXS, "iq3xxs", 4, 8, 256, 2 }, { COLD_LATTICE_IQ3S, "iq3s", 4, 8, 512, 3 },
    { COLD_LATTICE_IQ2S, "iq2s", 8, 3, 1024, 1 },    { COLD_LATTICE_IQ1, "iq1", 8, 3, 2048, 3 },
    { COLD_LATTICE_IQ2XXS, "iq2xxs", 8, 3, 256, 2 }, { COLD_LATTICE_IQ2XS, "iq2xs", 8, 3, 512, 2 },
};

static int code_dist(const cold_lattice *lat, int g, const int *l) {
    int d = 0;
    for (int i = 0; i < lat->dims; ++i) {
        const int diff = lat->code[g * lat->dims + i] - l[i];
        d += diff * diff;
    }
    return d;
}

/* Brute force for one key: the expected candidate list, as ggml builds it
 * (sort by (distance, index), keep the run spanning nwant distances). */
static size_t expected_list(const cold_lattice *lat, int nwant, const int *l, uint16_t *out) {
    int kept[3], n_kept = 0;
    for (int floor = -1; n_kept < nwant;) {
        int m = 1 << 30;
        for (int g = 0; g < lat->grid_size; ++g) {
            const int d = code_dist(lat, g, l);
            if (d > floor && d < m) {
                m = d;
            }
        }
        if (m == 1 << 30) {
            break;
        }
        kept[n_kept++] = m;
        floor = m;
    }
    size_t n = 0;
    for (int j = 0; j < n_kept; ++j) {
        for (int g = 0; g < lat->grid_size; ++g) {
            if (code_dist(lat, g, l) == kept[j]) {
                out[n++] = (uint16_t)g;
            }
        }
    }
    return n;
}

static void test_lattice_tables(void) {
    static uint16_t want[2048];
    for (size_t li = 0; li < sizeof lattices / sizeof lattices[0]; ++li) {
        const lattice_expect *e = &lattices[li];
        const cold_lattice *lat = anvil_ref_cold_lattice(e->id);
        CU_ASSERT_PTR_NOT_NULL_FATAL(lat);
        CU_ASSERT_EQUAL(lat->dims, e->dims);
        CU_ASSERT_EQUAL(lat->levels, e->levels);
        CU_ASSERT_EQUAL_FATAL(lat->grid_size, e->grid_size);
        int keys = 1;
        for (int i = 0; i < lat->dims; ++i) {
            keys *= lat->levels;
        }
        size_t on_grid = 0, bad_grid = 0, bad_list = 0, candidates = 0;
        for (int g = 0; g < lat->grid_size; ++g) {
            int8_t l[8];
            for (int i = 0; i < lat->dims; ++i) {
                l[i] = (int8_t)lat->code[g * lat->dims + i];
                bad_grid += lat->odd[g * lat->dims + i] != (float)(2 * l[i] + 1);
            }
            bad_grid += lat->map[cold_lattice_key(lat, l)] != g;
        }
        for (int key = 0; key < keys; ++key) {
            int l[8];
            for (int i = 0, k = key; i < lat->dims; ++i, k /= lat->levels) {
                l[i] = k % lat->levels;
            }
            const int32_t v = lat->map[key];
            if (v >= 0) {
                on_grid++;
                bad_grid += v >= lat->grid_size || code_dist(lat, v, l) != 0;
                continue;
            }
            const uint16_t *got = lat->nb + (-(size_t)v - 1);
            const size_t n = expected_list(lat, e->nwant, l, want);
            candidates += got[0];
            bad_list += got[0] != n || memcmp(got + 1, want, n * sizeof *want) != 0;
        }
        CU_ASSERT_EQUAL(on_grid, (size_t)lat->grid_size);
        CU_ASSERT_EQUAL(bad_grid, 0);
        CU_ASSERT_EQUAL(bad_list, 0);
        CU_ASSERT(candidates > (size_t)(keys - lat->grid_size)); /* lists are not empty */
        if (bad_grid || bad_list) {
            fprintf(stderr, "%s: %zu bad grid entries, %zu bad candidate lists\n", e->name, bad_grid, bad_list);
        }
    }
    /* Codes of a few entries, read off ggml's kgrid tables (2 or 3 bits per
     * element, element 0 lowest): IQ3's kgrid_256[3] = 9, kgrid_512[1] = 1,
     * kgrid_2bit_1024[2] = 5, kgrid_1bit_2048[2] = 5, kgrid_256[255] = 3992. */
    const cold_lattice *x3 = anvil_ref_cold_lattice(COLD_LATTICE_IQ3XXS);
    const cold_lattice *s3 = anvil_ref_cold_lattice(COLD_LATTICE_IQ3S);
    const cold_lattice *s2 = anvil_ref_cold_lattice(COLD_LATTICE_IQ2S);
    const cold_lattice *g1 = anvil_ref_cold_lattice(COLD_LATTICE_IQ1);
    static const uint8_t c9[4] = { 1, 1, 0, 0 }, c1[4] = { 1, 0, 0, 0 };
    static const uint8_t c5[8] = { 1, 1, 0, 0, 0, 0, 0, 0 }, c3992[4] = { 0, 3, 6, 7 };
    CU_ASSERT_EQUAL(memcmp(x3->code + 3 * 4, c9, 4), 0);
    CU_ASSERT_EQUAL(memcmp(x3->code + 255 * 4, c3992, 4), 0);
    CU_ASSERT_EQUAL(memcmp(s3->code + 1 * 4, c1, 4), 0);
    CU_ASSERT_EQUAL(memcmp(s2->code + 2 * 8, c5, 8), 0);
    CU_ASSERT_EQUAL(memcmp(g1->code + 2 * 8, c5, 8), 0);
    /* kgrid_2bit_256 (IQ2_XXS) [1] = 2, [32] = 1025, [255] = 43268;
     * kgrid_2bit_512 (IQ2_XS) [511] = 43690. */
    const cold_lattice *xx2 = anvil_ref_cold_lattice(COLD_LATTICE_IQ2XXS);
    const cold_lattice *xs2 = anvil_ref_cold_lattice(COLD_LATTICE_IQ2XS);
    static const uint8_t c2[8] = { 2, 0, 0, 0, 0, 0, 0, 0 }, c1025[8] = { 1, 0, 0, 0, 0, 1, 0, 0 };
    static const uint8_t c43268[8] = { 0, 1, 0, 0, 1, 2, 2, 2 }, c43690[8] = { 2, 2, 2, 2, 2, 2, 2, 2 };
    CU_ASSERT_EQUAL(memcmp(xx2->code + 1 * 8, c2, 8), 0);
    CU_ASSERT_EQUAL(memcmp(xx2->code + 32 * 8, c1025, 8), 0);
    CU_ASSERT_EQUAL(memcmp(xx2->code + 255 * 8, c43268, 8), 0);
    CU_ASSERT_EQUAL(memcmp(xs2->code + 1 * 8, c2, 8), 0);
    CU_ASSERT_EQUAL(memcmp(xs2->code + 511 * 8, c43690, 8), 0);
}

/* ---- ties: the IQ1 searches' sort ------------------------------------------ */

/* ggml's IQ1_S/IQ1_M searches qsort (value, index) pairs with a comparator
 * that sees only the value, so equal values come out in the C library's
 * order: on glibc (the oracle's), a merge sort for these 32- and 16-element
 * arrays, i.e. stable. anvil_cold_stable_order gives that order without the
 * C library. First the property, on arrays full of ties (and -0 == +0, as
 * the comparator sees them). */
static void test_stable_order_ties(void) {
    static const float a[12] = { 1, -0.0f, 2, 0, 1, -1, 0, 2, -0.0f, 1, -1, 0 };
    int idx[32];
    anvil_cold_stable_order(a, 12, idx);
    static const int want[12] = { 5, 10, 1, 3, 6, 8, 11, 0, 4, 9, 2, 7 };
    CU_ASSERT_EQUAL(memcmp(idx, want, sizeof want), 0);
    /* 16 and 32 elements take another route (ranks, by vectors): the same */
    static const float b[16] = { 1, -0.0f, 2, 0, 1, -1, 0, 2, -0.0f, 1, -1, 0, -0.0f, 3, 0, -1 };
    static const int want_b[16] = { 5, 10, 15, 1, 3, 6, 8, 11, 12, 14, 0, 4, 9, 2, 7, 13 };
    anvil_cold_stable_order(b, 16, idx);
    CU_ASSERT_EQUAL(memcmp(idx, want_b, sizeof want_b), 0);
    float x[32];
    for (unsigned t = 0; t < 200; ++t) {
        const int n = t % 2 ? 32 : 16; /* IQ1_S's group, IQ1_M's */
        for (int i = 0; i < n; ++i) {
            x[i] = (float)((int)((i * 7u + t * 13u + (unsigned)i * i * t) % (2 + t % 5)) - 1) * 0.5f;
        }
        anvil_cold_stable_order(x, n, idx);
        unsigned seen = 0;
        for (int j = 0; j < n; ++j) {
            CU_ASSERT_FATAL(idx[j] >= 0 && idx[j] < n && !(seen >> idx[j] & 1u));
            seen |= 1u << idx[j];
            if (j > 0) {
                CU_ASSERT(x[idx[j - 1]] < x[idx[j]] || (x[idx[j - 1]] == x[idx[j]] && idx[j - 1] < idx[j]));
            }
        }
    }
}

/* Then the bytes: rows of a few levels (ties everywhere) whose encodings
 * change when equal values are visited in another order (an order that
 * reverses ties changes all three), against ggml_quantize_chunk's bytes on
 * glibc (written by the oracle; anvil-parity's cold family checks many more
 * such rows). */
static uint64_t tie_state;
static uint32_t tie_next(void) {
    tie_state = tie_state * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    return (uint32_t)(tie_state >> 33);
}
static void tie_row(unsigned seed, float *x, float *w) {
    tie_state = (uint64_t)seed * 7919u + 1u;
    const int levels = 2 + (int)(tie_next() % 5);
    for (int i = 0; i < ANVIL_QK_K; ++i) {
        x[i] = (float)((int)(tie_next() % (unsigned)(2 * levels + 1)) - levels) * 0.25f;
    }
    for (int j = 0; j < ANVIL_QK_K; ++j) {
        w[j] = (float)(1 + tie_next() % 8) * 0.5f;
    }
}

static const uint8_t ties_iq1_s_weighted[100] = {
    0x20, 0x2a, 0xd5, 0x17, 0xee, 0x2b, 0x23, 0x81, 0x45, 0x1f, 0x37, 0xd9, 0x5c, 0x78, 0xbe, 0x9e, 0x37,
    0x1d, 0x97, 0xd6, 0xa6, 0xdc, 0x0a, 0x1a, 0xa2, 0xcd, 0x0e, 0xa2, 0x37, 0xc0, 0x03, 0xcf, 0x02, 0xe7,
    0x29, 0xeb, 0x38, 0xef, 0x2f, 0xd8, 0xbc, 0x70, 0xfa, 0xeb, 0x1f, 0x7c, 0xfb, 0x62, 0xee, 0xfc, 0x9d,
    0x2d, 0x2c, 0xbf, 0xd2, 0xa7, 0x92, 0x27, 0xcf, 0x08, 0xc2, 0x45, 0xc6, 0x3c, 0x2b, 0xf8, 0x9c, 0xfd,
    0x65, 0x62, 0xc1, 0x80, 0xc3, 0xb5, 0x76, 0x77, 0x26, 0x8a, 0xdb, 0x30, 0x95, 0x01, 0xee, 0xd6, 0x38,
    0x74, 0x2c, 0xed, 0xb0, 0xe8, 0x3e, 0xef, 0x8d, 0x62, 0xc8, 0xed, 0x0c, 0x79, 0xdc, 0xea,
};
static const uint8_t ties_iq1_m_weighted[112] = {
    0xca, 0x17, 0x93, 0x2b, 0x23, 0x81, 0xff, 0x31, 0x2f, 0xd9, 0x5c, 0xe9, 0xbe, 0x9e, 0x37, 0x5f, 0x97, 0x0d, 0xa6,
    0xdc, 0x0a, 0x1a, 0x94, 0xda, 0x56, 0xa2, 0x54, 0xc0, 0xbf, 0xcf, 0x02, 0x8a, 0xd0, 0xd3, 0x78, 0x60, 0xd6, 0x30,
    0x7c, 0x92, 0x7a, 0xdf, 0xb7, 0xf0, 0x7b, 0x1e, 0xd2, 0x6b, 0xbe, 0xab, 0xbc, 0x4b, 0xf7, 0xa9, 0xe7, 0x2d, 0x2c,
    0xbf, 0xd2, 0xfa, 0x92, 0x27, 0xcf, 0x08, 0xb8, 0x31, 0xa4, 0xfe, 0x2b, 0x4d, 0x9c, 0xfd, 0x65, 0x62, 0xc1, 0x80,
    0xc3, 0xb5, 0x76, 0x77, 0x9d, 0x4a, 0xdb, 0x31, 0x95, 0x01, 0xee, 0xd6, 0x70, 0x88, 0xdc, 0xec, 0x6c, 0xb5, 0x5e,
    0xfc, 0x15, 0x12, 0x98, 0xe7, 0xac, 0xc4, 0xb4, 0xdb, 0xef, 0x0b, 0xb7, 0xdf, 0x6f, 0xdd, 0xb6, 0x2b,
};
static const uint8_t ties_iq1_m_plain[112] = {
    0xca, 0x17, 0x80, 0x2b, 0x03, 0x81, 0xf7, 0x31, 0x37, 0xd0, 0x04, 0x07, 0xbe, 0x9e, 0x37, 0xb6, 0x97, 0x0d, 0xdc,
    0xb5, 0xd5, 0x1a, 0xbd, 0xea, 0x4b, 0xa2, 0x54, 0xcf, 0x2f, 0xc6, 0x30, 0xa8, 0xd0, 0xd3, 0x78, 0x60, 0x5f, 0x10,
    0x74, 0x82, 0x7a, 0xac, 0x37, 0xf0, 0x7e, 0x1e, 0xde, 0x58, 0xbe, 0x3d, 0xfe, 0xbb, 0xf6, 0xab, 0xae, 0x2d, 0x16,
    0xbf, 0xbd, 0x39, 0xb3, 0x6d, 0x79, 0xc4, 0xa1, 0x45, 0xa4, 0x39, 0x2c, 0xf8, 0x9c, 0xfd, 0x65, 0x38, 0x08, 0x0c,
    0xc3, 0x35, 0x76, 0x77, 0xa6, 0x4a, 0xdd, 0xb6, 0x95, 0x01, 0xdf, 0xd6, 0x70, 0x09, 0xf1, 0xdf, 0x6c, 0x15, 0xfe,
    0x7c, 0xc5, 0x10, 0xa8, 0xe7, 0xac, 0x74, 0xb4, 0xd8, 0xb7, 0x7d, 0xbf, 0x0f, 0xbf, 0xed, 0xb7, 0x2b,
};

static void test_tied_rows_ggml_bytes(void) {
    static float x[2 * ANVIL_QK_K], w[ANVIL_QK_K], unused[ANVIL_QK_K];
    static uint8_t out[2 * sizeof(anvil_block_iq1_m)];
    tie_row(10, x, w);
    tie_row(19, x + ANVIL_QK_K, unused); /* the matrix is row 10's, for both rows */
    char msg[256] = "";
    CU_ASSERT_EQUAL(anvil_ref_encode_rows_iq1_s(x, out, 2, ANVIL_QK_K, w, msg, sizeof msg), ANVIL_OK);
    CU_ASSERT_EQUAL(memcmp(out, ties_iq1_s_weighted, sizeof ties_iq1_s_weighted), 0);
    CU_ASSERT_EQUAL(anvil_ref_encode_rows_iq1_m(x, out, 2, ANVIL_QK_K, w, msg, sizeof msg), ANVIL_OK);
    CU_ASSERT_EQUAL(memcmp(out, ties_iq1_m_weighted, sizeof ties_iq1_m_weighted), 0);
    CU_ASSERT_EQUAL(anvil_ref_encode_rows_iq1_m(x, out, 2, ANVIL_QK_K, NULL, msg, sizeof msg), ANVIL_OK);
    CU_ASSERT_EQUAL(memcmp(out, ties_iq1_m_plain, sizeof ties_iq1_m_plain), 0);
}

/* ---- refusals ------------------------------------------------------------ */

static void test_refuse_overflow(void) {
    static float x[ROW];
    static uint8_t dst[ROW / ANVIL_QK_K * sizeof(anvil_block_iq3_s)];
    for (size_t fi = 0; fi < N_FMTS; ++fi) {
        const enc_fmt *f = &fmts[fi];
        char msg[512] = "";
        /* Block 0 ordinary, block 1 at 1e25: the squared errors overflow.
         * Which rows make ggml abort depends on the search (anvil-parity
         * checked these against ggml in a child process): IQ3/IQ2_S/IQ2_XS
         * on varied values (off-grid points), IQ1_M, IQ1_S and IQ2_XXS on
         * a constant block (the split sums, or IQ2_XXS's first fit,
         * overflow into codes off the grid or a NaN scale). */
        const int constant = f->type == ANVIL_TYPE_IQ1_M || f->type == ANVIL_TYPE_IQ1_S ||
                             f->type == ANVIL_TYPE_IQ2_XXS;
        test_input_fill(x, ROW, INPUT_NORMAL, 8, fi);
        for (size_t i = ANVIL_QK_K; i < ROW; ++i) {
            x[i] = constant ? 2.5e25f : x[i] * 1e25f;
        }
        CU_ASSERT_EQUAL(f->encode(x, dst, ROW, msg, sizeof msg), ANVIL_E_UNSUPPORTED);
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, f->name));
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, "block 1 "));
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, "ggml"));
        CU_ASSERT_EQUAL(f->encode(x, dst, ROW, NULL, 0), ANVIL_E_UNSUPPORTED); /* no message buffer */
        /* Row-wise, weighted, as the second of two rows: the message names
         * the row too. */
        static float two[2 * ROW], qw[ROW];
        static uint8_t dst2[2 * ROW / ANVIL_QK_K * sizeof(anvil_block_iq3_s)];
        test_input_fill(two, ROW, INPUT_LLM_LIKE, 8, fi);
        memcpy(two + ROW, x, sizeof x);
        for (size_t j = 0; j < ROW; ++j) {
            qw[j] = 0.5f + (float)(j % 3);
        }
        CU_ASSERT_EQUAL(f->encode_rows(two, dst2, 2, ROW, qw, msg, sizeof msg), ANVIL_E_UNSUPPORTED);
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, f->name));
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, "row 1: block 1 "));
        /* Large but representable: encodes. */
        test_input_fill(x, ROW, INPUT_NORMAL, 8, fi);
        for (size_t i = 0; i < ROW; ++i) {
            x[i] *= 1e5f;
        }
        CU_ASSERT_EQUAL(f->encode(x, dst, ROW, msg, sizeof msg), ANVIL_OK);
        /* Bad length and NaN are refused before any search. */
        CU_ASSERT_EQUAL(f->encode(x, dst, ROW - 16, msg, sizeof msg), ANVIL_E_BLOCK_MISMATCH);
        x[300] = NAN;
        CU_ASSERT_EQUAL(f->encode(x, dst, ROW, msg, sizeof msg), ANVIL_E_NONFINITE);
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, "element 300"));
    }
}

/* ---- known blocks -------------------------------------------------------- */

static int all_zero(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        if (p[i] != 0) {
            return 0;
        }
    }
    return 1;
}

static void test_known_blocks(void) {
    float x[ANVIL_QK_K];
    uint8_t b[sizeof(anvil_block_iq3_s)];
    /* Zeros (some negative): every group skipped, every byte 0. */
    for (int i = 0; i < ANVIL_QK_K; ++i) {
        x[i] = (i % 3) ? 0.0f : -0.0f;
    }
    for (size_t fi = 0; fi < N_FMTS; ++fi) {
        memset(b, 0xA5, sizeof b);
        CU_ASSERT_EQUAL(fmts[fi].encode(x, b, ANVIL_QK_K, NULL, 0), ANVIL_OK);
        CU_ASSERT(all_zero(b, fmts[fi].block_bytes));
    }

    /* Elements 32..63 all -1, the rest 0. */
    memset(x, 0, sizeof x);
    for (int i = 32; i < 64; ++i) {
        x[i] = -1.0f;
    }
    /* IQ3_XXS: group 1's four sign fields, 7 bits each, all set (8
     * negatives per 8: even, so the 8th bit is implied), in its u32 after
     * the 64 index bytes; groups 0 and 2..7 empty. */
    CU_ASSERT_EQUAL(anvil_ref_encode_iq3_xxs(x, b, ANVIL_QK_K, NULL, 0), ANVIL_OK);
    const uint8_t *meta = b + offsetof(anvil_block_iq3_xxs, qs) + 64;
    uint32_t m1;
    memcpy(&m1, meta + 4, 4);
    CU_ASSERT_EQUAL(m1 & 0x0FFFFFFFu, 0x0FFFFFFFu);
    CU_ASSERT(all_zero(b + offsetof(anvil_block_iq3_xxs, qs), 8));       /* group 0 indices */
    CU_ASSERT(all_zero(b + offsetof(anvil_block_iq3_xxs, qs) + 16, 48)); /* groups 2..7 */
    CU_ASSERT(all_zero(meta, 4));

    /* IQ3_S: group 0 is all zero, so ggml does not advance its index and
     * sign cursors past it: group 1's sign bytes land at signs[0..3] (all
     * set), not signs[4..7], and nothing is written after. Its 9th index
     * bits stay with group 1 (qh[1]), as do the sub-scales. */
    CU_ASSERT_EQUAL(anvil_ref_encode_iq3_s(x, b, ANVIL_QK_K, NULL, 0), ANVIL_OK);
    const uint8_t *signs = b + offsetof(anvil_block_iq3_s, signs);
    for (int k = 0; k < 4; ++k) {
        CU_ASSERT_EQUAL(signs[k], 0xFF);
    }
    CU_ASSERT(all_zero(signs + 4, 28));
    CU_ASSERT(all_zero(b + offsetof(anvil_block_iq3_s, qs) + 8, 56));
    CU_ASSERT_EQUAL(b[offsetof(anvil_block_iq3_s, qh) + 0], 0);
    CU_ASSERT_EQUAL(b[offsetof(anvil_block_iq3_s, scales)] & 0x0F, 0); /* group 0: scale 0 -> 0 */
    CU_ASSERT(b[offsetof(anvil_block_iq3_s, d)] != 0 || b[offsetof(anvil_block_iq3_s, d) + 1] != 0);

    /* IQ2_S: per 16 elements; groups 2 and 3 (elements 32..63) carry sign
     * bytes 0xFF at their own slots (IQ2_S writes by group index). */
    CU_ASSERT_EQUAL(anvil_ref_encode_iq2_s(x, b, ANVIL_QK_K, NULL, 0), ANVIL_OK);
    const uint8_t *s2 = b + offsetof(anvil_block_iq2_s, qs) + 32;
    CU_ASSERT(all_zero(s2, 4));
    for (int k = 4; k < 8; ++k) {
        CU_ASSERT_EQUAL(s2[k], 0xFF);
    }
    CU_ASSERT(all_zero(s2 + 8, 24));
}

/* ---- plugin -------------------------------------------------------------- */

static void test_plugin_init_and_encode(void) {
    void *h = dlopen(ANVIL_COLD_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "dlopen %s: %s\n", ANVIL_COLD_PLUGIN_PATH, dlerror());
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    anvil_plugin_entry_fn entry = (anvil_plugin_entry_fn)dlsym(h, ANVIL_PLUGIN_ENTRY_SYMBOL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(entry);
    const anvil_plugin_desc *d = entry(ANVIL_ABI_MAJOR, ANVIL_ABI_MINOR);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d->init);
    anvil_host_services host = test_host_services();
    char err[256] = "";
    CU_ASSERT_EQUAL(d->init(&host, err, sizeof err), ANVIL_OK);
    CU_ASSERT_EQUAL(d->init(&host, err, sizeof err), ANVIL_OK); /* idempotent */
    static float x[ROW];
    static uint8_t a[ROW], b[ROW];
    size_t found = 0;
    for (size_t i = 0; i < d->n_codecs; ++i) {
        const anvil_codec *c = d->codecs[i];
        for (size_t fi = 0; fi < N_FMTS; ++fi) {
            if (c->type_id != (uint32_t)fmts[fi].type) {
                continue;
            }
            found++;
            CU_ASSERT_PTR_NOT_NULL_FATAL(c->encode_rows);
            CU_ASSERT_EQUAL((c->flags & ANVIL_CODEC_NEEDS_IMATRIX) != 0, fmts[fi].needs_imatrix);
            if (fmts[fi].needs_imatrix) {
                /* A refusal (ANVIL_E_NEEDS_IMATRIX), never an encoder. */
                CU_ASSERT_PTR_NOT_NULL_FATAL(c->encode);
                CU_ASSERT_PTR_NOT_NULL(c->encode_note);
                test_input_fill(x, ROW, INPUT_NORMAL, 77, 0);
                char msg[512] = "";
                CU_ASSERT_EQUAL(c->encode(x, a, ROW, msg, sizeof msg), ANVIL_E_NEEDS_IMATRIX);
                CU_ASSERT_PTR_NOT_NULL(strstr(msg, "missing importance matrix"));
                CU_ASSERT_EQUAL(c->encode(x, a, ROW - 16, msg, sizeof msg), ANVIL_E_BLOCK_MISMATCH);
            } else {
                CU_ASSERT_PTR_NOT_NULL_FATAL(c->encode);
                CU_ASSERT_PTR_NULL(c->encode_note);
            }
            for (uint64_t row = 0; row < INPUT_KIND_COUNT; ++row) {
                test_input_fill(x, ROW, (test_input_kind)row, 77, row);
                if (!fmts[fi].needs_imatrix) {
                    CU_ASSERT_EQUAL(c->encode(x, a, ROW, NULL, 0), ANVIL_OK);
                } else {
                    CU_ASSERT_EQUAL(c->encode_rows(x, a, 1, ROW, ones, NULL, 0), ANVIL_OK);
                }
                CU_ASSERT_EQUAL(fmts[fi].encode(x, b, ROW, NULL, 0), ANVIL_OK);
                CU_ASSERT_EQUAL(memcmp(a, b, ROW / ANVIL_QK_K * fmts[fi].block_bytes), 0);
            }
        }
    }
    CU_ASSERT_EQUAL(found, N_FMTS);
    /* deliberately not dlclose'd while descriptors may be referenced */
}

/* xorshift32 in [0, 1) */
static float isa_rand(uint32_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return (float)(*s >> 8) / 16777216.0f;
}

static void test_sweep_isas(void) {
    CU_ASSERT_EQUAL_FATAL(anvil_ref_cold_lattice_init(), ANVIL_OK);
    const cold_sweep sweeps[] = {
        { anvil_ref_cold_lattice(COLD_LATTICE_IQ3XXS), 32, 8, 0.2f, 15, 1, COLD_REFINE_OFF_GRID },
        { anvil_ref_cold_lattice(COLD_LATTICE_IQ3S), 32, 8, 0.2f, 9, 0, COLD_REFINE_ALL },
        { anvil_ref_cold_lattice(COLD_LATTICE_IQ2XXS), 32, 3, 0.1f, 6, 1, COLD_REFINE_ALWAYS },
        { anvil_ref_cold_lattice(COLD_LATTICE_IQ2XS), 16, 3, 0.1f, 9, 1, COLD_REFINE_OFF_GRID },
        { anvil_ref_cold_lattice(COLD_LATTICE_IQ2S), 16, 3, 0.1f, 9, 1, COLD_REFINE_OFF_GRID },
    };
    uint32_t seed = 0x2545f491u;
    int compared = 0, moved = 0, groups = 0;
    for (size_t f = 0; f < sizeof sweeps / sizeof sweeps[0]; ++f) {
        const cold_sweep *p = &sweeps[f];
        for (int g = 0; g < 2000; ++g) {
            float xval[32], weight[32], waux[32];
            float max = 0.0f;
            for (int i = 0; i < p->n; ++i) {
                /* heavy-tailed magnitudes; every 7th group with ties */
                const float u = isa_rand(&seed);
                xval[i] = g % 7 == 0 ? (float)(int)(4 * u) : u * u * u * 3.0f;
                weight[i] = g % 5 == 0 ? 1.0f : 0.05f + isa_rand(&seed);
                waux[i] = sqrtf(weight[i]);
                max = xval[i] > max ? xval[i] : max;
            }
            if (max <= 0) {
                continue;
            }
            const float scale0 = cold_sweep_first_scale(p, max);
            int8_t lb[32];
            float sb = -2.0f;
            const int rb = anvil_cold_sweep_isa(p, xval, weight, waux, max, scale0, lb, &sb, COLD_ISA_PORTABLE);
            CU_ASSERT_EQUAL(rb, ANVIL_OK);
            groups++;
            moved += sb != scale0;
            /* every SIMD path this CPU runs, and the encoders' choice */
            for (int isa = COLD_ISA_SIMD; isa <= COLD_ISA_BEST; ++isa) {
                if (!anvil_cold_isa_runs((cold_isa)isa)) {
                    continue;
                }
                int8_t la[32];
                float sa = -1.0f;
                const int ra = anvil_cold_sweep_isa(p, xval, weight, waux, max, scale0, la, &sa, (cold_isa)isa);
                CU_ASSERT_EQUAL(ra, rb);
                CU_ASSERT_EQUAL(memcmp(la, lb, (size_t)p->n), 0);
                CU_ASSERT_EQUAL(memcmp(&sa, &sb, sizeof sa), 0);
                compared++;
            }
        }
    }
    /* the portable path against at least the encoders' choice */
    CU_ASSERT(compared > 9000);
    CU_ASSERT(moved > groups / 2); /* the sweeps did fit new scales */
}

/* A hostile value of kind k: ties, zeros, denormals, huge, one sign. */
static float iq1_hostile(uint32_t *s, int kind, int i) {
    const float u = isa_rand(s), sign = isa_rand(s) < 0.5f ? -1.0f : 1.0f;
    switch (kind) {
    case 0: return sign * u * u * 3.0f;                                /* ordinary */
    case 1: return 0.5f * (float)((int)(5 * u) - 2);                   /* few levels: ties */
    case 2: return u < 0.8f ? 0.0f : sign * u;                         /* mostly zeros (+0, and -0 below) */
    case 3: return i % 3 == 0 ? sign * u * 1e-39f : sign * u * 1e-30f; /* denormals, tiny */
    case 4: return sign * u * (i % 2 ? 1e18f : 1e30f);                 /* squares overflow */
    case 5: return 1.0f + (float)(int)(3 * u);                         /* one sign, ties */
    case 6: return u < 0.5f ? -0.0f : sign * (float)(i % 4);           /* -0 and repeats */
    default: return sign * (u + 1e-7f * (float)i);                     /* near-ties */
    }
}

static float iq1_hostile_weight(uint32_t *s, int kind) {
    const float u = isa_rand(s);
    switch (kind % 4) {
    case 0: return 0.05f + u;
    case 1: return u < 0.5f ? 0.0f : u; /* zero weights */
    case 2: return 1.0f;                /* equal weights: exact ties */
    default: return u < 0.2f ? 1e-40f : u < 0.3f ? 1e30f : u;
    }
}

static void test_iq1_isas(void) {
    CU_ASSERT_EQUAL_FATAL(anvil_ref_cold_lattice_init(), ANVIL_OK);
    const cold_lattice *lat = anvil_ref_cold_lattice(COLD_LATTICE_IQ1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lat);
    const float ds = anvil_cold_iq1s_delta, dm = anvil_cold_iq1m_delta;
    const float sp[3] = { -1 + ds, ds, 1 + ds }, sm[3] = { -1 - ds, -ds, 1 - ds };
    const float mp[3] = { -1 + dm, dm, 1 + dm }, mm[3] = { -1 - dm, -dm, 1 - dm };
    uint32_t seed = 0x9e3779b9u;
    int splits = 0, fitted = 0, orders = 0, cands = 0, found = 0;
    for (int g = 0; g < 4000; ++g) {
        const int kind = g % 8, n = g % 2 ? 16 : 32;
        float x[32], w[32];
        for (int i = 0; i < n; ++i) {
            x[i] = iq1_hostile(&seed, kind, i);
            w[i] = iq1_hostile_weight(&seed, g / 8);
        }
        int ia[32], ib[32];
        anvil_cold_stable_order_isa(x, n, ia, 1);
        anvil_cold_stable_order_isa(x, n, ib, 0);
        CU_ASSERT_EQUAL(memcmp(ia, ib, (size_t)n * sizeof ia[0]), 0);
        orders++;
        float max = 0.0f;
        for (int i = 0; i < n; ++i) {
            max = fabsf(x[i]) > max ? fabsf(x[i]) : max;
        }
        cold_iq1_split a, b;
        if (n == 32) {
            anvil_cold_iq1s_split_isa(x, w, ib, sp, sm, max, &a, 1);
            anvil_cold_iq1s_split_isa(x, w, ib, sp, sm, max, &b, 0);
        } else {
            anvil_cold_iq1m_split_isa(x, w, ib, mp, mm, max, &a, 1);
            anvil_cold_iq1m_split_isa(x, w, ib, mp, mm, max, &b, 0);
        }
        CU_ASSERT(a.i1 == b.i1 && a.i2 == b.i2 && a.variant == b.variant);
        CU_ASSERT_EQUAL(memcmp(&a.scale, &b.scale, sizeof a.scale), 0);
        splits++;
        fitted += b.variant >= 0 && b.scale != max;

        /* the grid candidates of a random off-grid code vector */
        int8_t L[8];
        int32_t v;
        do {
            for (int i = 0; i < 8; ++i) {
                L[i] = (int8_t)(3 * isa_rand(&seed));
            }
            v = lat->map[cold_lattice_key(lat, L)];
        } while (v >= 0);
        const float scales[4] = { max / 2, 0.0f, 1e-20f, 3e19f };
        const float scale = scales[(g / 3) % 4];
        const float *val = (g & 4) ? (n == 32 ? sm : mm) : (n == 32 ? sp : mp);
        const int ca = anvil_cold_iq1_candidate_isa(lat, cold_candidates(lat, v), x, w, scale, val, 1);
        const int cb = anvil_cold_iq1_candidate_isa(lat, cold_candidates(lat, v), x, w, scale, val, 0);
        CU_ASSERT_EQUAL(ca, cb);
        cands++;
        found += cb >= 0;
    }
    /* Every off-grid key with x at the all-code-0 point: where that point
     * is not in the list, a search that let a lane past the list's end
     * score (the next list's words) would find it there at error 0. */
    int lists = 0;
    for (int key = 0; key < 6561; ++key) {
        const int32_t v = lat->map[key];
        if (v >= 0) {
            continue;
        }
        float x[8], w[8];
        for (int i = 0; i < 8; ++i) {
            x[i] = sp[0];
            w[i] = 1.0f;
        }
        const uint16_t *cand = cold_candidates(lat, v);
        /* the packed codes after the list: 2 bits per element */
        int packed_ok = lat->packed;
        for (int j = 1; j <= cand[0]; ++j) {
            unsigned u = 0;
            for (int i = 0; i < 8; ++i) {
                u |= (unsigned)lat->code[(size_t)cand[j] * 8 + (size_t)i] << 2 * i;
            }
            packed_ok &= cand[cand[0] + j] == u;
        }
        CU_ASSERT(packed_ok);
        const int ca = anvil_cold_iq1_candidate_isa(lat, cand, x, w, 1.0f, sp, 1);
        const int cb = anvil_cold_iq1_candidate_isa(lat, cand, x, w, 1.0f, sp, 0);
        CU_ASSERT_EQUAL(ca, cb);
        CU_ASSERT(cb >= 0);
        lists++;
    }
    CU_ASSERT(lists > 4000);
    CU_ASSERT_EQUAL(orders, 4000);
    CU_ASSERT(fitted > splits / 2);                /* the searches did fit scales */
    CU_ASSERT(found > cands / 2 && found < cands); /* candidates chosen, and refusals too */
}

/* The IQ1 cut-point searches across scales: ordinary, few-level (tied)
 * and near-tied groups, values and weights scaled by powers of two from
 * 2^-75 to 2^45, so that the AVX2 search's division-free path (prefix sums
 * up to 2^30, sumq2 from 2^-40, largest value in [2^-60, 2^60]) is taken,
 * left at each edge of its range, and left where weights vanish (a zero
 * half, a single weight, all zero): the selected path must equal the
 * portable one, split and scale bit for bit. */
static void test_iq1_scaled_isas(void) {
    const float ds = anvil_cold_iq1s_delta, dm = anvil_cold_iq1m_delta;
    const float sp[3] = { -1 + ds, ds, 1 + ds }, sm[3] = { -1 - ds, -ds, 1 - ds };
    const float mp[3] = { -1 + dm, dm, 1 + dm }, mm[3] = { -1 - dm, -dm, 1 - dm };
    uint32_t seed = 0x2545f491u;
    int compared = 0, fitted = 0, differ = 0;
    for (int g = 0; g < 600; ++g) {
        const int n = g % 2 ? 16 : 32, shape = (g / 2) % 6;
        float x0[32], w0[32];
        for (int i = 0; i < n; ++i) {
            const float u = isa_rand(&seed), sign = isa_rand(&seed) < 0.5f ? -1.0f : 1.0f;
            switch (shape) {
            case 0: x0[i] = sign * u; break;                               /* ordinary */
            case 1: x0[i] = 0.25f * (float)((int)(5 * u) - 2); break;      /* few levels: ties */
            case 2: x0[i] = sign * (0.5f + 1e-6f * (float)(i % 3)); break; /* near-ties */
            case 3: x0[i] = (float)(i % 4) - 1.5f; break;                  /* repeats */
            case 4: x0[i] = sign * u * u; break;                           /* ordinary, skewed */
            default: x0[i] = u < 0.3f ? 0.0f : sign * (0.1f + u); break;   /* zeros */
            }
            w0[i] = 0.05f + isa_rand(&seed);
        }
        const int wshape = (g / 12) % 5;
        for (int i = 0; i < n; ++i) {
            if ((wshape == 1 && i < n / 2) || (wshape == 2 && i != 3) || wshape == 3) {
                w0[i] = 0.0f; /* a zero half, a single weight, all zero */
            } else if (wshape == 4) {
                w0[i] = 1.0f; /* equal weights: exact ties */
            }
        }
        int idx[32];
        anvil_cold_stable_order_isa(x0, n, idx, 0);
        for (int ex = -75; ex <= 45; ex += 5) {
            for (int ew = -30; ew <= 30; ew += 20) {
                float x[32], w[32], max = 0.0f;
                for (int i = 0; i < n; ++i) {
                    x[i] = ldexpf(x0[i], ex);
                    w[i] = ldexpf(w0[i], ew);
                    max = fabsf(x[i]) > max ? fabsf(x[i]) : max;
                }
                cold_iq1_split a, b;
                if (n == 32) {
                    anvil_cold_iq1s_split_isa(x, w, idx, sp, sm, max, &a, 1);
                    anvil_cold_iq1s_split_isa(x, w, idx, sp, sm, max, &b, 0);
                } else {
                    anvil_cold_iq1m_split_isa(x, w, idx, mp, mm, max, &a, 1);
                    anvil_cold_iq1m_split_isa(x, w, idx, mp, mm, max, &b, 0);
                }
                const int same = a.i1 == b.i1 && a.i2 == b.i2 && a.variant == b.variant &&
                                 memcmp(&a.scale, &b.scale, sizeof a.scale) == 0;
                CU_ASSERT(same);
                differ += !same;
                compared++;
                fitted += b.variant >= 0;
            }
        }
    }
    CU_ASSERT_EQUAL(differ, 0);
    CU_ASSERT_EQUAL(compared, 600 * 25 * 4);
    CU_ASSERT(fitted > compared / 2); /* most searches found a fit */
}

/* The sweep lattices' neighbour search: each path this CPU runs (AVX2,
 * AVX-512F; NEON on aarch64) against the portable one, the same grid index
 * and codes. */
static void test_lanes_isas(void) {
    CU_ASSERT_EQUAL_FATAL(anvil_ref_cold_lattice_init(), ANVIL_OK);
    static const enum cold_lattice_id ids[] = { COLD_LATTICE_IQ3XXS, COLD_LATTICE_IQ3S, COLD_LATTICE_IQ2S,
                                                COLD_LATTICE_IQ2XXS, COLD_LATTICE_IQ2XS };
    uint32_t seed = 0x6a09e667u;
    int searches = 0, found = 0, firsts = 0, lists = 0;
    for (size_t f = 0; f < sizeof ids / sizeof ids[0]; ++f) {
        const cold_lattice *lat = anvil_ref_cold_lattice(ids[f]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(lat);
        const int dims = lat->dims, levels = lat->levels;
        for (int g = 0; g < 1600; ++g) {
            int8_t L0[8];
            int32_t v;
            do {
                for (int i = 0; i < dims; ++i) {
                    L0[i] = (int8_t)((float)levels * isa_rand(&seed));
                }
                v = lat->map[cold_lattice_key(lat, L0)];
            } while (v >= 0);
            const int kind = g % 8;
            const float scales[5] = { 0.5f, 1.0f, 0.0f, 1e-20f, 3e19f };
            const float scale = kind == 1 ? 1.0f : scales[(g / 8) % 5];
            float x[8], w[8];
            for (int i = 0; i < dims; ++i) {
                const float u = isa_rand(&seed);
                if (kind == 0) { /* near the rounded point */
                    x[i] = scale * ((float)(2 * L0[i] + 1) + 2 * u - 1);
                } else if (kind == 1) { /* midway between levels: ties */
                    x[i] = (float)(2 * (int)((float)levels * u));
                } else {
                    x[i] = fabsf(iq1_hostile(&seed, kind, i)) * (float)levels;
                }
                w[i] = iq1_hostile_weight(&seed, g / 8);
            }
            const uint16_t *cand = cold_candidates(lat, v);
            int8_t la[8], lb[8];
            memset(la, -1, sizeof la);
            memset(lb, -2, sizeof lb);
            const int cb = anvil_cold_best_in_lanes_isa(lat, cand, x, w, scale, lb, COLD_ISA_PORTABLE);
            for (int isa = COLD_ISA_SIMD; isa <= COLD_ISA_WIDE; ++isa) {
                if (anvil_cold_isa_runs((cold_isa)isa)) {
                    const int ca = anvil_cold_best_in_lanes_isa(lat, cand, x, w, scale, la, (cold_isa)isa);
                    CU_ASSERT_EQUAL(ca, cb);
                    CU_ASSERT(cb < 0 || memcmp(la, lb, (size_t)dims) == 0);
                    memset(la, -1, sizeof la);
                }
            }
            if (cb >= 0) {
                found++;
                firsts += cb == cand[1];
            }
            searches++;
        }
        /* Every list, x at the point whose codes the first lanes past its
         * end read (the packed words after it, low 3 or 2 bits per element,
         * code 3 of 3 levels reading code 2's error): a search that let
         * such a lane score would find error 0 there. */
        const int keys = levels == 8 ? 4096 : 6561, bits = levels == 8 ? 3 : 2;
        for (int key = 0; key < keys; ++key) {
            const int32_t v = lat->map[key];
            if (v >= 0) {
                continue;
            }
            const uint16_t *cand = cold_candidates(lat, v);
            const uint16_t *packed = cold_packed_codes(lat, cand);
            int packed_ok = lat->packed;
            for (int j = 0; j < cand[0]; ++j) {
                unsigned u = 0;
                for (int i = 0; i < dims; ++i) {
                    u |= (unsigned)lat->code[(size_t)cand[1 + j] * (size_t)dims + (size_t)i] << bits * i;
                }
                packed_ok &= packed[j] == u;
            }
            CU_ASSERT(packed_ok);
            for (int k = cand[0]; k % 16 != 0; ++k) { /* the 16-lane search reads up to 16 */
                float x[8], w[8];
                for (int i = 0; i < dims; ++i) {
                    int c = (packed[k] >> bits * i) & (levels == 8 ? 7 : 3);
                    c = c < levels ? c : levels - 1;
                    x[i] = (float)(2 * c + 1);
                    w[i] = 1.0f;
                }
                int8_t la[8], lb[8];
                const int cb = anvil_cold_best_in_lanes_isa(lat, cand, x, w, 1.0f, lb, COLD_ISA_PORTABLE);
                CU_ASSERT(cb >= 0);
                for (int isa = COLD_ISA_SIMD; isa <= COLD_ISA_WIDE; ++isa) {
                    if (anvil_cold_isa_runs((cold_isa)isa)) {
                        CU_ASSERT_EQUAL(anvil_cold_best_in_lanes_isa(lat, cand, x, w, 1.0f, la, (cold_isa)isa), cb);
                    }
                }
                lists++;
            }
        }
    }
    CU_ASSERT(lists > 10000);
    CU_ASSERT(found > searches / 2 && found < searches); /* chosen, and refusals (overflow) too */
    CU_ASSERT(firsts > found / 4 && firsts < found);     /* ties to the first, and later winners */
}

/* The sweep encoders' group setup (square roots, sign split, the even
 * parity's flip, the MAX chain) on the AVX-512F path against the portable
 * one, bit for bit: hostile values (ties, +-0, NaN and zero weights, a NaN
 * first weight x^2, all-zero groups, a NaN value) for n = 16 and 32, with
 * and without the even parity. */
static void test_group_setup_isas(void) {
    uint32_t seed = 0x3c6ef372u;
    int compared = 0, flipped = 0, zero_max = 0;
    for (int g = 0; g < 4000; ++g) {
        const int n = g % 2 ? 32 : 16, even = (g / 2) % 2, kind = (g / 4) % 8;
        float x[32], w[32];
        for (int i = 0; i < n; ++i) {
            x[i] = kind == 5 ? (isa_rand(&seed) < 0.5f ? 0.0f : -0.0f) : iq1_hostile(&seed, kind == 4 ? 0 : kind, i);
            w[i] = iq1_hostile_weight(&seed, g / 32);
        }
        if (g % 97 == 0) {
            w[8 * (g % 4 % (n / 8))] = NAN; /* a NaN first weight x^2 of some 8 */
        }
        if (g % 89 == 0) {
            w[g % n] = -0.0f;
        }
        if (g % 211 == 0) {
            x[g % n] = NAN; /* refused before the encoders; the two paths still agree */
        }
        float wa[32], xa[32], wb[32], xb[32];
        uint8_t sa[4] = { 0 }, sb[4] = { 0 };
        const float ma = anvil_cold_group_setup_isa(x, w, n, even, wa, xa, sa, COLD_ISA_WIDE);
        const float mb = anvil_cold_group_setup_isa(x, w, n, even, wb, xb, sb, COLD_ISA_PORTABLE);
        CU_ASSERT_EQUAL(memcmp(&ma, &mb, sizeof ma), 0);
        CU_ASSERT_EQUAL(memcmp(wa, wb, sizeof(float) * (size_t)n), 0);
        CU_ASSERT_EQUAL(memcmp(xa, xb, sizeof(float) * (size_t)n), 0);
        CU_ASSERT_EQUAL(memcmp(sa, sb, (size_t)n / 8), 0);
        compared++;
        for (int i = 0; i < n; ++i) {
            flipped += even && xb[i] < 0;
        }
        zero_max += mb == 0.0f;
    }
    CU_ASSERT_EQUAL(compared, 4000);
    CU_ASSERT(flipped > 500);  /* the parity flips were exercised */
    CU_ASSERT(zero_max > 100); /* and the MAX chain's zeros */
}

/* The host's CPU features (ANVIL_CPU_MASK applied), passed on by a
 * plugin's init, hide the SIMD paths they lack; without the field, or off
 * x86-64, nothing changes. Restores the CPU's own view at the end. */
static void test_cpu_from_host(void) {
    const int simd = anvil_cold_isa_runs(COLD_ISA_SIMD), wide = anvil_cold_isa_runs(COLD_ISA_WIDE);
    anvil_cpu_info cpu = { .struct_size = sizeof cpu, .arch = ANVIL_ARCH_X86_64, .features = ~ANVIL_CPU_AVX512F };
    anvil_host_services host = { .struct_size = sizeof host, .cpu = &cpu };
    anvil_ref_cpu_from_host(&host);
    CU_ASSERT_EQUAL(anvil_cold_isa_runs(COLD_ISA_WIDE), 0);
    CU_ASSERT_EQUAL(anvil_ref_has_avx512(), 0);
#if defined(__x86_64__)
    CU_ASSERT_EQUAL(anvil_cold_isa_runs(COLD_ISA_SIMD), simd);
    cpu.features = ~(ANVIL_CPU_AVX2 | ANVIL_CPU_AVX512F);
    anvil_ref_cpu_from_host(&host);
    CU_ASSERT_EQUAL(anvil_cold_isa_runs(COLD_ISA_SIMD), 0);
    CU_ASSERT_EQUAL(anvil_ref_has_avx2(), 0);
#endif
    /* no field, NULL, another architecture: no change */
    anvil_host_services old_host = { .struct_size = offsetof(anvil_host_services, cpu) };
    anvil_ref_cpu_from_host(&old_host);
    anvil_ref_cpu_from_host(NULL);
    cpu.arch = ANVIL_ARCH_AARCH64;
    cpu.features = ~0ull;
    anvil_ref_cpu_from_host(&host);
#if defined(__x86_64__)
    CU_ASSERT_EQUAL(anvil_cold_isa_runs(COLD_ISA_SIMD), 0);
#endif
    cpu.arch = ANVIL_ARCH_X86_64;
    anvil_ref_cpu_from_host(&host);
    CU_ASSERT_EQUAL(anvil_cold_isa_runs(COLD_ISA_SIMD), simd);
    CU_ASSERT_EQUAL(anvil_cold_isa_runs(COLD_ISA_WIDE), wide);
}

/* make_qp_quants (IQ2_XXS's first scale; the K-quants' sub-block scales):
 * its eight trial grids on the selected path (AVX2: one lane each) against
 * the portable loop, the same codes and scale bits. */
static void test_fit_positive_isas(void) {
    uint32_t seed = 0x3c6ef372u;
    int fits = 0, moved = 0;
    for (int g = 0; g < 20000; ++g) {
        const int kind = g % 8, n = g % 3 ? 32 : 8, nmax = g % 3 ? 4 : 63;
        float x[32], w[32];
        for (int i = 0; i < n; ++i) {
            x[i] = fabsf(iq1_hostile(&seed, kind, i));
            w[i] = iq1_hostile_weight(&seed, g / 8);
        }
        if (g % 5 == 0) {
            x[g % n] = -x[g % n]; /* IQ2_XXS's parity flip: one negated magnitude */
        }
        uint8_t la[32], lb[32];
        memset(la, 0xAA, sizeof la);
        memset(lb, 0x55, sizeof lb);
        const float sa = anvil_kq_fit_positive_isa(n, nmax, x, la, w, 1);
        const float sb = anvil_kq_fit_positive_isa(n, nmax, x, lb, w, 0);
        CU_ASSERT_EQUAL(memcmp(&sa, &sb, sizeof sa), 0);
        CU_ASSERT_EQUAL(memcmp(la, lb, (size_t)n), 0);
        fits++;
        float max = 0.0f;
        for (int i = 0; i < n; ++i) {
            max = x[i] > max ? x[i] : max;
        }
        moved += sb != 0.0f && sb != max / (float)nmax;
    }
    CU_ASSERT(moved > fits / 2); /* the trials and refinements did move the scale */
}

int main(void) {
    if (CU_initialize_registry() != CUE_SUCCESS) {
        return 1;
    }
    CU_pSuite s = CU_add_suite("cold_enc", NULL, NULL);
    /* First: nothing in this process has built the tables yet. */
    CU_add_test(s, "threads: first build raced by concurrent encodes", test_threads_first_init);
    CU_add_test(s, "tables: every key vs brute force, ggml codebook facts", test_lattice_tables);
    CU_add_test(s, "ties: the IQ1 sort keeps equal values in index order (glibc qsort's)", test_stable_order_ties);
    CU_add_test(s, "ties: IQ1_S/IQ1_M rows of few levels give ggml's bytes", test_tied_rows_ggml_bytes);
    CU_add_test(s, "refusals: overflow where ggml aborts, length, NaN", test_refuse_overflow);
    CU_add_test(s, "known: zeros, sign fields, IQ3_S cursor after a zero group", test_known_blocks);
    CU_add_test(s, "plugin: init hook, encoders equal the reference", test_plugin_init_and_encode);
    CU_add_test(s, "isas: the sweep on each path this CPU runs equals its portable path", test_sweep_isas);
    CU_add_test(s, "isas: the IQ1 searches' selected paths equal their portable paths", test_iq1_isas);
    CU_add_test(s, "isas: the IQ1 searches across scales, selected path equals portable", test_iq1_scaled_isas);
    CU_add_test(s, "isas: the sweep's neighbour search, each path equals portable", test_lanes_isas);
    CU_add_test(s, "isas: the host's CPU features hide the paths they lack", test_cpu_from_host);
    CU_add_test(s, "isas: the sweep encoders' group setup, AVX-512F equals portable", test_group_setup_isas);
    CU_add_test(s, "isas: make_qp_quants' trial grids, selected path equals portable", test_fit_positive_isas);
    return test_run_cunit();
}
