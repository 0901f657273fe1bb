/* SPDX-License-Identifier: MIT */
/*
 * Parity of the cold formats (IQ1_S IQ1_M IQ2_XXS IQ2_XS IQ2_S IQ3_XXS IQ3_S
 * IQ4_NL IQ4_XS MXFP4 NVFP4) against ggml itself.
 *
 * Codebooks, entry by entry (plugins/ref/cold_tables.c was generated from
 * ggml's decoders; this re-checks it by a second route):
 *   grid <t>      every lattice index of every grid, decoded by ggml from
 *                 crafted blocks: the value at unit scale equals the table
 *                 entry, and with random scales and signs ggml's and anvil's
 *                 decoders agree bit for bit
 *   ksigns/kmask  all 128 sign indices and all 8 sign bits
 *   iq4nl/e2m1    all 16 levels; IQ1 deltas
 *   e8m0/ue4m3    every scale byte through ggml's MXFP4/NVFP4 decoders;
 *                 UE4M3 and E8M0 encoding through ggml's encoders
 *
 * Per format, over pc->rows rows cycling through every input kind with
 * varied row lengths (whole blocks):
 *   encode   (IQ3_XXS IQ3_S IQ2_S IQ1_M IQ4_NL IQ4_XS MXFP4 NVFP4) anvil's
 *            unweighted encode vs ggml_quantize_chunk with no importance
 *            matrix, and vs quantize_row_<t>_ref where that
 *            is the same function: every byte. Both are timed on the same
 *            rows (after each side's one-time table build, timed apart).
 *            Every encoder also gets:
 *            rows scaled over 1e-38 .. 1e6 with random all-zero groups
 *            (ggml's IQ3_S shifts its output after an all-zero group; tiny
 *            scales underflow the weights), every byte; and rows of huge
 *            values, where ggml's search overflows and aborts: ggml runs in
 *            a child process, and anvil must refuse (ANVIL_E_UNSUPPORTED)
 *            exactly where ggml dies and match it byte for byte elsewhere
 *   decode   anvil vs dequantize_row_<t> on ggml-encoded rows (formats ggml
 *            encodes only with an importance matrix get a synthetic one), and
 *            on >= 100,000 random-byte blocks with finite scales, and on
 *            random bytes with any scale: every float bit
 *   act      anvil's Q8_K / Q8_0 activation quantizer vs ggml's: every byte
 *   vec_dot  anvil vs ggml_vec_dot_<t>_<act> (the SIMD build ggml picks for
 *            this CPU) on the SAME bytes: within 1e-5 relative (worst
 *            printed); and vs ggml's *_generic from the baseline x64 build,
 *            which computes in our order: bit for bit
 *
 * Then the importance-weighted checks of every format (parity_cold_weighted.c:
 * anvil_encode_rows vs ggml_quantize_chunk with synthetic importance
 * matrices, including IQ2_XXS IQ2_XS IQ1_S, which ggml encodes only so).
 *
 * With pc->golden_dir set, writes <dir>/<type>.bin (tests/common/golden.h):
 * 48 rows of 256, three per input kind. Formats with an unweighted encoder:
 * ggml's encoding of the input (GOLDEN_REC_ENCODED). IQ2_XXS IQ2_XS IQ1_S:
 * ggml-produced blocks (two rows in three) and random blocks with finite
 * scales (the third), input zeros, no GOLDEN_REC_ENCODED. And, for every
 * format, <dir>/imatrix/<type>.bin: the weighted fixtures
 * (write_golden_weighted).
 */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "anvil/blocks.h"
#include "anvil/codec.h"
#include "anvil/numeric.h"
#include "anvil/status.h"
#include "golden_imatrix.h"
#include "parity.h"
#include "parity_cold.h"
#include "ref/cold.h"
#include "ref/cold_enc_grid.h"
#include "ref/cold_tables.h"
#include "ref/q8_0_family.h"
#include "ref/q8_k.h"

#define MAX_ELEMS 1024
#define MAX_ROW_BYTES (MAX_ELEMS * 2)              /* generous: IQ4_NL is 18 bytes per 32 */
#define MAX_BLOCK_BYTES sizeof(anvil_block_iq4_xs) /* the largest cold block */
#define DOT_REL_TOL 1e-5f
#define RANDOM_BATCH 64 /* blocks decoded per call in the random-byte checks */
#define GOLDEN_ROWS 48
#define GOLDEN_LEN 256

typedef void (*act_quantize_fn)(const float *x, void *dst, size_t n);

/* How ggml produces blocks of a format for the decode and dot checks. */
enum oracle_encoding {
    ENC_NO_IMATRIX, /* ggml_quantize_chunk(..., NULL): what anvil must match or may not */
    ENC_IMATRIX     /* ggml needs an importance matrix: a synthetic one */
};

typedef struct cold_format {
    const char *name; /* ggml spelling */
    int type;
    size_t block_elems;
    size_t block_bytes;
    size_t scale_offset;    /* binary16 scale to keep finite; SIZE_MAX: none / special */
    anvil_encode_fn encode; /* NULL: decode-only */
    int ref_is_chunk;       /* quantize_row_<t>_ref equals the chunk path */
    anvil_decode_fn decode;
    int act_type;
    const char *act_name;
    size_t act_block_bytes;
    size_t act_block_elems;
    act_quantize_fn act_quantize;
    anvil_decode_fn act_decode;
    anvil_vec_dot_fn dot;
    int oracle_encoding;
    size_t max_blocks; /* row lengths vary over 1..max_blocks blocks (2 for the
                                  lattice encoders: their searches are slow and blocks
                                  are encoded independently, so longer rows add time,
                                  not coverage) */
} cold_format;

#define NO_SCALE ((size_t)-1)
#define Q8K \
    ANVIL_TYPE_Q8_K, "q8_K", sizeof(anvil_block_q8_K), ANVIL_QK_K, anvil_ref_quantize_q8_K, anvil_ref_decode_q8_K
#define Q80 \
    ANVIL_TYPE_Q8_0, "q8_0", sizeof(anvil_block_q8_0), ANVIL_QK8_0, anvil_ref_quantize_q8_0, anvil_ref_decode_q8_0

static const cold_format formats[] = {
    { "iq2_xxs", ANVIL_TYPE_IQ2_XXS, ANVIL_QK_K, sizeof(anvil_block_iq2_xxs), offsetof(anvil_block_iq2_xxs, d), NULL,
      0, anvil_ref_decode_iq2_xxs, Q8K, anvil_ref_vec_dot_iq2_xxs_q8_K, ENC_IMATRIX, 4 },
    { "iq2_xs", ANVIL_TYPE_IQ2_XS, ANVIL_QK_K, sizeof(anvil_block_iq2_xs), offsetof(anvil_block_iq2_xs, d), NULL, 0,
      anvil_ref_decode_iq2_xs, Q8K, anvil_ref_vec_dot_iq2_xs_q8_K, ENC_IMATRIX, 4 },
    { "iq3_xxs", ANVIL_TYPE_IQ3_XXS, ANVIL_QK_K, sizeof(anvil_block_iq3_xxs), offsetof(anvil_block_iq3_xxs, d),
      anvil_ref_encode_iq3_xxs, 1, anvil_ref_decode_iq3_xxs, Q8K, anvil_ref_vec_dot_iq3_xxs_q8_K, ENC_NO_IMATRIX, 2 },
    { "iq1_s", ANVIL_TYPE_IQ1_S, ANVIL_QK_K, sizeof(anvil_block_iq1_s), offsetof(anvil_block_iq1_s, d), NULL, 0,
      anvil_ref_decode_iq1_s, Q8K, anvil_ref_vec_dot_iq1_s_q8_K, ENC_IMATRIX, 4 },
    { "iq4_nl", ANVIL_TYPE_IQ4_NL, ANVIL_QK4_NL, sizeof(anvil_block_iq4_nl), offsetof(anvil_block_iq4_nl, d),
      anvil_ref_encode_iq4_nl, 0, anvil_ref_decode_iq4_nl, Q80, anvil_ref_vec_dot_iq4_nl_q8_0, ENC_NO_IMATRIX, 32 },
    { "iq3_s", ANVIL_TYPE_IQ3_S, ANVIL_QK_K, sizeof(anvil_block_iq3_s), offsetof(anvil_block_iq3_s, d),
      anvil_ref_encode_iq3_s, 1, anvil_ref_decode_iq3_s, Q8K, anvil_ref_vec_dot_iq3_s_q8_K, ENC_NO_IMATRIX, 2 },
    { "iq2_s", ANVIL_TYPE_IQ2_S, ANVIL_QK_K, sizeof(anvil_block_iq2_s), offsetof(anvil_block_iq2_s, d),
      anvil_ref_encode_iq2_s, 1, anvil_ref_decode_iq2_s, Q8K, anvil_ref_vec_dot_iq2_s_q8_K, ENC_NO_IMATRIX, 2 },
    { "iq4_xs", ANVIL_TYPE_IQ4_XS, ANVIL_QK_K, sizeof(anvil_block_iq4_xs), offsetof(anvil_block_iq4_xs, d),
      anvil_ref_encode_iq4_xs, 1, anvil_ref_decode_iq4_xs, Q8K, anvil_ref_vec_dot_iq4_xs_q8_K, ENC_NO_IMATRIX, 4 },
    { "iq1_m", ANVIL_TYPE_IQ1_M, ANVIL_QK_K, sizeof(anvil_block_iq1_m), NO_SCALE, anvil_ref_encode_iq1_m, 0,
      anvil_ref_decode_iq1_m, Q8K, anvil_ref_vec_dot_iq1_m_q8_K, ENC_NO_IMATRIX, 2 },
    { "mxfp4", ANVIL_TYPE_MXFP4, ANVIL_QK_MXFP4, sizeof(anvil_block_mxfp4), NO_SCALE, anvil_ref_encode_mxfp4, 1,
      anvil_ref_decode_mxfp4, Q80, anvil_ref_vec_dot_mxfp4_q8_0, ENC_NO_IMATRIX, 32 },
    { "nvfp4", ANVIL_TYPE_NVFP4, ANVIL_QK_NVFP4, sizeof(anvil_block_nvfp4), NO_SCALE, anvil_ref_encode_nvfp4, 1,
      anvil_ref_decode_nvfp4, Q80, anvil_ref_vec_dot_nvfp4_q8_0, ENC_NO_IMATRIX, 16 },
};

#define N_FORMATS (sizeof formats / sizeof formats[0])

/* ggml's side of one format. */
typedef struct ggml_side {
    ggml_to_float_fn decode;
    ggml_from_float_fn encode_ref;   /* quantize_row_<t>_ref, when ref_is_chunk */
    ggml_from_float_fn act_quantize; /* quantize_row_<act>_ref */
    ggml_vec_dot_fn dot;             /* best CPU build */
    ggml_vec_dot_fn dot_generic;     /* baseline build's *_generic, or NULL */
} ggml_side;

/* ---- helpers ------------------------------------------------------------- */

static int bind_ggml(const parity_ctx *pc, const cold_format *f, ggml_side *g) {
    memset(g, 0, sizeof *g);
    g->decode = ggml_oracle_to_float(pc->oracle, f->type);
    g->encode_ref = f->ref_is_chunk ? ggml_oracle_from_float_ref(pc->oracle, f->type) : NULL;
    g->act_quantize = ggml_oracle_quantize_ref(pc->oracle, (int)f->act_type, f->act_name);
    g->dot = ggml_oracle_vec_dot(pc->oracle, f->name, f->act_name);
    g->dot_generic = ggml_oracle_vec_dot_portable(pc->oracle, f->name, f->act_name);
    if (g->decode == NULL || g->act_quantize == NULL || g->dot == NULL || pc->oracle->quantize_chunk == NULL ||
        (f->ref_is_chunk && g->encode_ref == NULL)) {
        printf("%-8s ggml lacks a function this check needs\n", f->name);
        return -1;
    }
    return 0;
}

static void random_bytes(test_rng *r, uint8_t *p, size_t len) {
    for (size_t i = 0; i < len; ++i) {
        p[i] = (uint8_t)(test_rng_u64(r) >> 56);
    }
}

/* Make every block's scale finite (a binary16 with exponent 31 -> 15).
 * MXFP4's E8M0 and NVFP4's UE4M3 scales are finite (as ggml decodes them)
 * for every byte. */
static void make_scales_finite(const cold_format *f, uint8_t *p, size_t nb) {
    for (size_t i = 0; i < nb; ++i) {
        uint8_t *b = p + i * f->block_bytes;
        if (f->type == ANVIL_TYPE_IQ1_M) {
            /* binary16 nibble k = top nibble of u16 word k; its exponent
             * (bits 10..14) spans words 2 and 3. */
            uint8_t *sc = b + offsetof(anvil_block_iq1_m, scales);
            const unsigned h = (unsigned)((sc[5] >> 4) << 8 | (sc[7] >> 4) << 12);
            if ((h & 0x7c00) == 0x7c00) {
                sc[7] &= (uint8_t)~0x40; /* binary16 bit 14 */
            }
        } else if (f->scale_offset != NO_SCALE) {
            uint8_t *hi = b + f->scale_offset + 1;
            if ((*hi & 0x7c) == 0x7c) {
                *hi &= (uint8_t)~0x40;
            }
        }
    }
}

static size_t row_blocks(const cold_format *f, uint64_t seed, size_t row) {
    test_rng r;
    test_rng_seed(&r, seed * 131u + row * 2654435761u + (uint64_t)f->type);
    return 1 + (size_t)(test_rng_u64(&r) % f->max_blocks);
}

/* |a - b| relative to max(|a|, |b|, floor); two NaNs agree, one NaN is a
 * mismatch. (Both NaN is real: ggml gives an MXFP4 block of values below
 * 2^-125 a wrapped-around exponent byte near 255, a scale near 2^125, and
 * all-zero codes; times a large activation scale that is Inf * 0.) */
static float rel_error(float a, float b, float floor) {
    if (isnan(a) || isnan(b)) {
        return isnan(a) && isnan(b) ? 0.0f : INFINITY;
    }
    const float m = fmaxf(fmaxf(fabsf(a), fabsf(b)), floor);
    if (a == b || m == 0.0f) {
        return 0.0f;
    }
    return fabsf(a - b) / m;
}

/* The magnitude of what a dot accumulates, sum |w_i * a_i| over the decoded
 * weights and activations. ggml's SIMD kernels split the integer sums across
 * float lanes and add them in another order, so two correct kernels differ
 * by a few ulps of THIS, not of the result: when the products cancel the
 * result can be orders of magnitude smaller, and an error relative to it
 * measures the cancellation, not the kernel. The tolerance is applied
 * against max(|result|, this); the error relative to the result alone is
 * reported too. */
static float term_magnitude(const cold_format *f, const void *w, const void *a, size_t n) {
    static float wd[RANDOM_BATCH * ANVIL_QK_K], ad[RANDOM_BATCH * ANVIL_QK_K];
    f->decode(w, wd, n);
    f->act_decode(a, ad, n);
    double sum = 0.0;
    for (size_t i = 0; i < n; ++i) {
        sum += fabs((double)wd[i] * (double)ad[i]);
    }
    return (float)sum;
}

/* ggml's encoding of one row for the decode/dot checks. */
static void ggml_encode_row(const parity_ctx *pc, const cold_format *f, const float *x, size_t n, uint64_t row,
                            void *dst) {
    static float imatrix[MAX_ELEMS];
    const float *qw = NULL;
    if (f->oracle_encoding == ENC_IMATRIX) {
        test_rng r;
        test_rng_seed(&r, pc->seed * 7u + row);
        for (size_t j = 0; j < n; ++j) {
            imatrix[j] = 0.25f + test_rng_uniform(&r);
        }
        qw = imatrix;
    }
    pc->oracle->quantize_chunk(f->type, x, dst, 0, 1, (int64_t)n, qw);
}

/* ggml's activation quantization, with the buffer zeroed first: its Q8_K
 * quantizer leaves the bsums of an all-zero block unwritten, anvil's writes
 * zeros (the same, when the buffer starts zeroed). */
static void ggml_act(const ggml_side *g, const cold_format *f, const float *x, size_t n, void *dst) {
    memset(dst, 0, n / f->act_block_elems * f->act_block_bytes);
    g->act_quantize(x, dst, (int64_t)n);
}

/* ---- codebook checks ----------------------------------------------------- */

/* A crafted block whose index slots name consecutive lattice entries from
 * `first`. variant 0: unit scales, no signs, so each value is the entry
 * times a known constant. variant > 0: random scale, sub-scales and signs
 * (same indices). Returns how many indices one block holds. */
typedef int (*craft_fn)(uint8_t *blk, int first, int variant, test_rng *r);

static uint16_t random_finite_half(test_rng *r) {
    uint16_t h = (uint16_t)(test_rng_u64(r) >> 48);
    if ((h & 0x7c00) == 0x7c00) {
        h &= (uint16_t)~0x4000;
    }
    return h;
}

static void put_u16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static void put_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

static int craft_iq2xxs(uint8_t *blk, int first, int variant, test_rng *r) {
    memset(blk, 0, sizeof(anvil_block_iq2_xxs));
    put_u16(blk + offsetof(anvil_block_iq2_xxs, d), variant ? random_finite_half(r) : 0x3C00);
    uint8_t *q = blk + offsetof(anvil_block_iq2_xxs, qs);
    for (int k = 0; k < 32; ++k) {
        q[8 * (k / 4) + k % 4] = (uint8_t)((first + k) & 255);
    }
    if (variant) {
        for (int ib = 0; ib < 8; ++ib) {
            put_u32(q + 8 * ib + 4, (uint32_t)test_rng_u64(r));
        }
    }
    return 32;
}

static int craft_iq2xs(uint8_t *blk, int first, int variant, test_rng *r) {
    memset(blk, 0, sizeof(anvil_block_iq2_xs));
    put_u16(blk + offsetof(anvil_block_iq2_xs, d), variant ? random_finite_half(r) : 0x3C00);
    for (int k = 0; k < 32; ++k) {
        const uint16_t sign = variant ? (uint16_t)(test_rng_u64(r) & 127) : 0;
        put_u16(blk + offsetof(anvil_block_iq2_xs, qs) + 2 * k, (uint16_t)(((first + k) & 511) | (sign << 9)));
    }
    if (variant) {
        random_bytes(r, blk + offsetof(anvil_block_iq2_xs, scales), 8);
    }
    return 32;
}

static int craft_iq2s(uint8_t *blk, int first, int variant, test_rng *r) {
    memset(blk, 0, sizeof(anvil_block_iq2_s));
    put_u16(blk + offsetof(anvil_block_iq2_s, d), variant ? random_finite_half(r) : 0x3C00);
    uint8_t *qs = blk + offsetof(anvil_block_iq2_s, qs);
    uint8_t *qh = blk + offsetof(anvil_block_iq2_s, qh);
    for (int k = 0; k < 32; ++k) {
        const int idx = (first + k) & 1023;
        qs[k] = (uint8_t)(idx & 255);
        qh[k / 4] |= (uint8_t)((idx >> 8) << (2 * (k % 4)));
    }
    if (variant) {
        random_bytes(r, qs + 32, 32); /* sign bytes */
        random_bytes(r, blk + offsetof(anvil_block_iq2_s, scales), 8);
    }
    return 32;
}

static int craft_iq3xxs(uint8_t *blk, int first, int variant, test_rng *r) {
    memset(blk, 0, sizeof(anvil_block_iq3_xxs));
    put_u16(blk + offsetof(anvil_block_iq3_xxs, d), variant ? random_finite_half(r) : 0x3C00);
    uint8_t *qs = blk + offsetof(anvil_block_iq3_xxs, qs);
    for (int k = 0; k < 64; ++k) {
        qs[k] = (uint8_t)((first + k) & 255);
    }
    if (variant) {
        random_bytes(r, qs + 64, 32);
    }
    return 64;
}

static int craft_iq3s(uint8_t *blk, int first, int variant, test_rng *r) {
    memset(blk, 0, sizeof(anvil_block_iq3_s));
    put_u16(blk + offsetof(anvil_block_iq3_s, d), variant ? random_finite_half(r) : 0x3C00);
    uint8_t *qs = blk + offsetof(anvil_block_iq3_s, qs);
    uint8_t *qh = blk + offsetof(anvil_block_iq3_s, qh);
    for (int k = 0; k < 64; ++k) {
        const int idx = (first + k) & 511;
        qs[k] = (uint8_t)(idx & 255);
        qh[k / 8] |= (uint8_t)((idx >> 8) << (k % 8));
    }
    if (variant) {
        random_bytes(r, blk + offsetof(anvil_block_iq3_s, signs), 32);
        random_bytes(r, blk + offsetof(anvil_block_iq3_s, scales), 4);
    }
    return 64;
}

static int craft_iq1s(uint8_t *blk, int first, int variant, test_rng *r) {
    memset(blk, 0, sizeof(anvil_block_iq1_s));
    put_u16(blk + offsetof(anvil_block_iq1_s, d), variant ? random_finite_half(r) : 0x3C00);
    uint8_t *qs = blk + offsetof(anvil_block_iq1_s, qs);
    for (int ib = 0; ib < 8; ++ib) {
        uint16_t h = variant ? (uint16_t)(test_rng_u64(r) & 0xF000) : 0;
        for (int l = 0; l < 4; ++l) {
            const int idx = (first + 4 * ib + l) & 2047;
            qs[4 * ib + l] = (uint8_t)(idx & 255);
            h |= (uint16_t)((idx >> 8) << (3 * l));
        }
        put_u16(blk + offsetof(anvil_block_iq1_s, qh) + 2 * ib, h);
    }
    return 32;
}

static int craft_iq1m(uint8_t *blk, int first, int variant, test_rng *r) {
    memset(blk, 0, sizeof(anvil_block_iq1_m));
    uint8_t *qs = blk + offsetof(anvil_block_iq1_m, qs);
    uint8_t *qh = blk + offsetof(anvil_block_iq1_m, qh);
    for (int k = 0; k < 32; ++k) {
        const int idx = (first + k) & 2047;
        const int delta_sign = variant ? (int)(test_rng_u64(r) & 1) : 0;
        qs[k] = (uint8_t)(idx & 255);
        qh[k / 2] |= (uint8_t)(((idx >> 8) | (delta_sign << 3)) << (4 * (k % 2)));
    }
    const uint16_t h = variant ? random_finite_half(r) : 0x3C00;
    for (int w = 0; w < 4; ++w) {
        uint16_t word = (uint16_t)(((h >> (4 * w)) & 0xF) << 12);
        if (variant) {
            word |= (uint16_t)(test_rng_u64(r) & 0x0FFF); /* sub-scales */
        }
        put_u16(blk + offsetof(anvil_block_iq1_m, scales) + 2 * w, word);
    }
    return 32;
}

typedef struct grid_check {
    const char *what;
    int type;
    size_t block_bytes;
    int entries;
    int width; /* values per entry */
    craft_fn craft;
    float unit; /* decoded value per table unit at variant 0 */
} grid_check;

/* Table value of entry e, element j. */
static float table_value(int type, int e, int j) {
    switch (type) {
    case ANVIL_TYPE_IQ2_XXS: return anvil_cold_iq2xxs_grid[e][j];
    case ANVIL_TYPE_IQ2_XS: return anvil_cold_iq2xs_grid[e][j];
    case ANVIL_TYPE_IQ2_S: return anvil_cold_iq2s_grid[e][j];
    case ANVIL_TYPE_IQ3_XXS: return anvil_cold_iq3xxs_grid[e][j];
    case ANVIL_TYPE_IQ3_S: return anvil_cold_iq3s_grid[e][j];
    case ANVIL_TYPE_IQ1_S: return (float)anvil_cold_iq1s_grid[e][j] + anvil_cold_iq1s_delta;
    case ANVIL_TYPE_IQ1_M: return (float)anvil_cold_iq1s_grid[e][j] + anvil_cold_iq1m_delta;
    default: return NAN;
    }
}

static anvil_decode_fn anvil_decoder(int type) {
    for (size_t i = 0; i < N_FORMATS; ++i) {
        if (formats[i].type == type) {
            return formats[i].decode;
        }
    }
    return NULL;
}

static void check_grid(parity_ctx *pc, const grid_check *c) {
    const ggml_to_float_fn gdec = ggml_oracle_to_float(pc->oracle, c->type);
    const anvil_decode_fn adec = anvil_decoder(c->type);
    uint8_t blk[128];
    float yg[ANVIL_QK_K], ya[ANVIL_QK_K];
    size_t value_checked = 0, value_bad = 0, bits_checked = 0, bits_bad = 0;
    test_rng r;
    test_rng_seed(&r, pc->seed + (uint64_t)c->type * 977u);
    for (int first = 0; first < c->entries;) {
        int per_block = 0;
        for (int variant = 0; variant < 8; ++variant) {
            per_block = c->craft(blk, first, variant, &r);
            gdec(blk, yg, ANVIL_QK_K);
            adec(blk, ya, ANVIL_QK_K);
            for (int k = 0; k < per_block && first + k < c->entries; ++k) {
                for (int j = 0; j < c->width; ++j) {
                    const size_t at = (size_t)(k * c->width + j);
                    bits_checked++;
                    if (!parity_same_bits(yg[at], ya[at])) {
                        if (bits_bad++ == 0 && pc->verbose) {
                            printf("  %s entry %d elem %d variant %d: ggml %.9g anvil %.9g\n", c->what, first + k, j,
                                   variant, (double)yg[at], (double)ya[at]);
                        }
                    }
                    if (variant == 0) {
                        value_checked++;
                        if (yg[at] != c->unit * table_value(c->type, first + k, j)) {
                            if (value_bad++ == 0) {
                                printf("  %s entry %d elem %d: ggml %.9g, table %.9g\n", c->what, first + k, j,
                                       (double)yg[at], (double)table_value(c->type, first + k, j));
                            }
                        }
                    }
                }
            }
        }
        first += per_block;
    }
    char what[96];
    snprintf(what, sizeof what, "%s: %d entries, unit scale", c->what, c->entries);
    parity_report(pc, "tables", what, value_checked, value_bad);
    snprintf(what, sizeof what, "%s: random scales/signs", c->what);
    parity_report(pc, "tables", what, bits_checked, bits_bad);
}

/* ksigns through IQ2_XXS (grid entry 0 has no zero), kmask through IQ2_S's
 * raw sign bytes. */
static void check_signs(parity_ctx *pc) {
    const ggml_to_float_fn dec = ggml_oracle_to_float(pc->oracle, ANVIL_TYPE_IQ2_XXS);
    float y[ANVIL_QK_K];
    size_t checked = 0, bad = 0;
    for (int first = 0; first < 128; first += 32) {
        uint8_t blk[sizeof(anvil_block_iq2_xxs)];
        memset(blk, 0, sizeof blk);
        put_u16(blk, 0x3C00);
        uint8_t *q = blk + offsetof(anvil_block_iq2_xxs, qs);
        for (int ib = 0; ib < 8; ++ib) {
            uint32_t s = 0;
            for (int l = 0; l < 4; ++l) {
                s |= (uint32_t)(first + 4 * ib + l) << (7 * l);
            }
            put_u32(q + 8 * ib + 4, s);
        }
        dec(blk, y, ANVIL_QK_K);
        for (int k = 0; k < 32; ++k) {
            for (int j = 0; j < 8; ++j) {
                const int table_neg = (anvil_cold_ksigns[first + k] & anvil_cold_kmask[j]) != 0;
                checked++;
                bad += (signbit(y[8 * k + j]) != 0) != table_neg;
            }
        }
    }
    parity_report(pc, "tables", "ksigns: 128 sign indices x 8", checked, bad);

    const ggml_to_float_fn dec2 = ggml_oracle_to_float(pc->oracle, ANVIL_TYPE_IQ2_S);
    uint8_t blk[sizeof(anvil_block_iq2_s)];
    memset(blk, 0, sizeof blk);
    put_u16(blk, 0x3C00);
    for (int bit = 0; bit < 8; ++bit) {
        blk[offsetof(anvil_block_iq2_s, qs) + ANVIL_QK_K / 8 + bit] = (uint8_t)(1u << bit);
    }
    dec2(blk, y, ANVIL_QK_K);
    checked = bad = 0;
    for (int bit = 0; bit < 8; ++bit) {
        for (int j = 0; j < 8; ++j) {
            checked++;
            bad += (signbit(y[8 * bit + j]) != 0) != ((anvil_cold_kmask[j] >> bit) & 1);
        }
    }
    parity_report(pc, "tables", "kmask: 8 sign bits x 8", checked, bad);
}

static void check_levels(parity_ctx *pc) {
    float y[ANVIL_QK_K];
    size_t bad = 0;
    uint8_t nl[sizeof(anvil_block_iq4_nl)];
    put_u16(nl, 0x3C00);
    for (int j = 0; j < 16; ++j) {
        nl[2 + j] = (uint8_t)(j | (j << 4));
    }
    ggml_oracle_to_float(pc->oracle, ANVIL_TYPE_IQ4_NL)(nl, y, ANVIL_QK4_NL);
    for (int j = 0; j < 16; ++j) {
        bad += y[j] != (float)anvil_cold_iq4nl_values[j];
        bad += y[j + 16] != (float)anvil_cold_iq4nl_values[j];
    }
    parity_report(pc, "tables", "iq4nl levels: 16 x 2 nibbles", 32, bad);

    uint8_t mx[sizeof(anvil_block_mxfp4)];
    mx[0] = 128; /* half scale 1 */
    for (int j = 0; j < 16; ++j) {
        mx[1 + j] = (uint8_t)(j | (j << 4));
    }
    ggml_oracle_to_float(pc->oracle, ANVIL_TYPE_MXFP4)(mx, y, ANVIL_QK_MXFP4);
    bad = 0;
    for (int j = 0; j < 16; ++j) {
        bad += y[j] != (float)anvil_cold_e2m1_x2_values[j];
        bad += y[j + 16] != (float)anvil_cold_e2m1_x2_values[j];
        bad += anvil_cold_e2m1_x2_values[j] != anvil_e2m1_to_int_x2((uint8_t)j);
    }
    parity_report(pc, "tables", "e2m1 doubled codes: 16 (+ helper)", 48, bad);

    /* IQ1 deltas: an all-zero IQ1_S block with unit scale decodes entry 0
     * shifted by +delta; with the sign bit, by -delta. */
    uint8_t s1[sizeof(anvil_block_iq1_s)];
    memset(s1, 0, sizeof s1);
    put_u16(s1, 0x3C00);
    float yp[ANVIL_QK_K];
    ggml_oracle_to_float(pc->oracle, ANVIL_TYPE_IQ1_S)(s1, yp, ANVIL_QK_K);
    for (int ib = 0; ib < 8; ++ib) {
        put_u16(s1 + offsetof(anvil_block_iq1_s, qh) + 2 * ib, 0x8000);
    }
    ggml_oracle_to_float(pc->oracle, ANVIL_TYPE_IQ1_S)(s1, y, ANVIL_QK_K);
    bad = 0;
    for (int i = 0; i < ANVIL_QK_K; ++i) {
        bad += (yp[i] - y[i]) * 0.5f != anvil_cold_iq1s_delta;
    }
    uint8_t m1[sizeof(anvil_block_iq1_m)];
    memset(m1, 0, sizeof m1);
    for (int w = 0; w < 4; ++w) {
        put_u16(m1 + offsetof(anvil_block_iq1_m, scales) + 2 * w, (uint16_t)(((0x3C00 >> (4 * w)) & 0xF) << 12));
    }
    ggml_oracle_to_float(pc->oracle, ANVIL_TYPE_IQ1_M)(m1, yp, ANVIL_QK_K);
    memset(m1 + offsetof(anvil_block_iq1_m, qh), 0x88, 16);
    ggml_oracle_to_float(pc->oracle, ANVIL_TYPE_IQ1_M)(m1, y, ANVIL_QK_K);
    for (int i = 0; i < ANVIL_QK_K; ++i) {
        bad += (yp[i] - y[i]) * 0.5f != anvil_cold_iq1m_delta;
    }
    parity_report(pc, "tables", "iq1_s / iq1_m deltas: 256 x 2", 2 * ANVIL_QK_K, bad);
}

/* Every scale byte through ggml's decoders (code 1 decodes to exactly the
 * half scale), and the scale encoders through ggml's encoders. */
static void check_scales(parity_ctx *pc) {
    float y[ANVIL_QK_NVFP4];
    size_t bad = 0;
    for (int e = 0; e < 256; ++e) {
        uint8_t mx[sizeof(anvil_block_mxfp4)];
        mx[0] = (uint8_t)e;
        memset(mx + 1, 0x11, 16);
        ggml_oracle_to_float(pc->oracle, ANVIL_TYPE_MXFP4)(mx, y, ANVIL_QK_MXFP4);
        bad += !parity_same_bits(y[0], anvil_e8m0_to_fp32_half((uint8_t)e));
    }
    parity_report(pc, "tables", "e8m0 half scale: all 256 bytes", 256, bad);
    bad = 0;
    for (int c = 0; c < 256; ++c) {
        uint8_t nv[sizeof(anvil_block_nvfp4)];
        memset(nv, (uint8_t)c, 4);
        memset(nv + 4, 0x11, 32);
        ggml_oracle_to_float(pc->oracle, ANVIL_TYPE_NVFP4)(nv, y, ANVIL_QK_NVFP4);
        bad += !parity_same_bits(y[0], anvil_ue4m3_to_fp32_half((uint8_t)c));
    }
    parity_report(pc, "tables", "ue4m3 half scale: all 256 bytes", 256, bad);

    /* Encoders: sweep the largest magnitude of a block over many octaves,
     * with exact powers of two and their neighbours, and compare the scale
     * byte ggml writes with anvil's conversion. */
    const ggml_from_float_fn mxenc = ggml_oracle_from_float_ref(pc->oracle, ANVIL_TYPE_MXFP4);
    const ggml_from_float_fn nvenc = ggml_oracle_from_float_ref(pc->oracle, ANVIL_TYPE_NVFP4);
    test_rng r;
    test_rng_seed(&r, pc->seed + 4242u);
    size_t checked = 0, bad_mx = 0, bad_nv = 0;
    for (int i = 0; i < 200000; ++i) {
        float amax;
        const int mode = i % 4;
        const int ex = (int)(test_rng_u64(&r) % 300) - 150;
        if (mode == 0) {
            amax = ldexpf(1.0f, ex);
        } else if (mode == 1) {
            amax = nextafterf(ldexpf(1.0f, ex), 0.0f);
        } else if (mode == 2) {
            amax = nextafterf(ldexpf(1.0f, ex), INFINITY);
        } else {
            amax = ldexpf(1.0f + test_rng_uniform(&r), ex);
        }
        if (!(amax > 0.0f) || isinf(amax)) {
            continue;
        }
        float x[ANVIL_QK_NVFP4];
        memset(x, 0, sizeof x);
        x[3] = (i & 1) ? -amax : amax;
        uint8_t mx[sizeof(anvil_block_mxfp4)], nv[sizeof(anvil_block_nvfp4)];
        mxenc(x, mx, ANVIL_QK_MXFP4);
        nvenc(x, nv, ANVIL_QK_NVFP4);
        uint8_t mine_mx[sizeof mx], mine_nv[sizeof nv];
        anvil_ref_encode_mxfp4(x, mine_mx, ANVIL_QK_MXFP4, NULL, 0);
        anvil_ref_encode_nvfp4(x, mine_nv, ANVIL_QK_NVFP4, NULL, 0);
        checked++;
        if (mx[0] != mine_mx[0]) {
            if (bad_mx++ == 0) {
                printf("  mxfp4 exponent: amax %a: ggml %u anvil %u\n", (double)amax, mx[0], mine_mx[0]);
            }
        }
        if (nv[0] != anvil_fp32_to_ue4m3(amax / 6.0f) || nv[0] != mine_nv[0]) {
            if (bad_nv++ == 0) {
                printf("  nvfp4 scale: amax %a: ggml %u anvil %u\n", (double)amax, nv[0], mine_nv[0]);
            }
        }
    }
    parity_report(pc, "tables", "mxfp4 e8m0 exponent from amax", checked, bad_mx);
    parity_report(pc, "tables", "nvfp4 ue4m3 scale from amax", checked, bad_nv);
}

static void check_tables(parity_ctx *pc) {
    static const grid_check grids[] = {
        { "iq2xxs grid", ANVIL_TYPE_IQ2_XXS, sizeof(anvil_block_iq2_xxs), 256, 8, craft_iq2xxs, 0.125f },
        { "iq2xs grid", ANVIL_TYPE_IQ2_XS, sizeof(anvil_block_iq2_xs), 512, 8, craft_iq2xs, 0.125f },
        { "iq2s grid", ANVIL_TYPE_IQ2_S, sizeof(anvil_block_iq2_s), 1024, 8, craft_iq2s, 0.125f },
        { "iq3xxs grid", ANVIL_TYPE_IQ3_XXS, sizeof(anvil_block_iq3_xxs), 256, 4, craft_iq3xxs, 0.25f },
        { "iq3s grid", ANVIL_TYPE_IQ3_S, sizeof(anvil_block_iq3_s), 512, 4, craft_iq3s, 1.0f },
        { "iq1s grid (iq1_s)", ANVIL_TYPE_IQ1_S, sizeof(anvil_block_iq1_s), 2048, 8, craft_iq1s, 1.0f },
        { "iq1s grid (iq1_m)", ANVIL_TYPE_IQ1_M, sizeof(anvil_block_iq1_m), 2048, 8, craft_iq1m, 1.0f },
    };
    for (size_t i = 0; i < sizeof grids / sizeof grids[0]; ++i) {
        check_grid(pc, &grids[i]);
    }
    check_signs(pc);
    check_levels(pc);
    check_scales(pc);
}

/* ---- per-format checks --------------------------------------------------- */

typedef struct tally {
    size_t enc_checked, enc_bad;         /* vs the chunk path */
    size_t enc_ref_checked, enc_ref_bad; /* vs quantize_row_<t>_ref */
    size_t dec_checked, dec_bad;
    size_t act_checked, act_bad;
    size_t dot_checked, dot_bad;
    size_t gen_checked, gen_bad;
    float dot_worst;       /* relative to max(|result|, term magnitude): the check */
    float dot_worst_plain; /* relative to the result alone */
    size_t dot_plain_over; /* rows above 1e-5 relative to the result alone */
    size_t rows;
    size_t kinds_seen;
    double enc_ggml_s, enc_anvil_s; /* encode wall time, same rows */
    size_t enc_elems;
} tally;

double cold_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void check_rows(parity_ctx *pc, const cold_format *f, const ggml_side *g, tally *t) {
    static float x[MAX_ELEMS], act[MAX_ELEMS], yg[MAX_ELEMS], ya[MAX_ELEMS];
    static uint8_t genc[MAX_ROW_BYTES], aenc[MAX_ROW_BYTES], gref[MAX_ROW_BYTES];
    static uint8_t gact[MAX_ELEMS * 2], aact[MAX_ELEMS * 2];
    unsigned kinds = 0;
    for (size_t row = 0; row < pc->rows; ++row) {
        const test_input_kind kind = (test_input_kind)(row % INPUT_KIND_COUNT);
        const size_t n = row_blocks(f, pc->seed, row) * f->block_elems;
        const size_t row_bytes = n / f->block_elems * f->block_bytes;
        kinds |= 1u << kind;
        test_input_fill(x, n, kind, pc->seed, row);
        const double t0 = cold_now_s();
        ggml_encode_row(pc, f, x, n, row, genc);
        t->enc_ggml_s += cold_now_s() - t0;

        if (f->encode != NULL) {
            char msg[256];
            const double t1 = cold_now_s();
            const int rc = f->encode(x, aenc, n, msg, sizeof msg);
            t->enc_anvil_s += cold_now_s() - t1;
            t->enc_elems += n;
            t->enc_checked++;
            const size_t at = rc == ANVIL_OK ? parity_first_diff_u8(genc, aenc, row_bytes) : 0;
            if (rc != ANVIL_OK || at != row_bytes) {
                if (t->enc_bad++ < 3) {
                    printf("  %s encode row %zu (%s, n=%zu): rc %d, first diff at byte %zu (block %zu): "
                           "ggml %02x anvil %02x\n",
                           f->name, row, test_input_kind_name(kind), n, rc, at, at / f->block_bytes, genc[at],
                           aenc[at]);
                }
            }
            if (g->encode_ref != NULL) {
                g->encode_ref(x, gref, (int64_t)n);
                t->enc_ref_checked++;
                if (parity_first_diff_u8(gref, aenc, row_bytes) != row_bytes) {
                    t->enc_ref_bad++;
                }
            }
        }

        g->decode(genc, yg, (int64_t)n);
        f->decode(genc, ya, n);
        t->dec_checked++;
        const size_t d_at = parity_first_diff_f32(yg, ya, n);
        if (d_at != n) {
            if (t->dec_bad++ < 3) {
                printf("  %s decode row %zu (%s): elem %zu ggml %.9g anvil %.9g\n", f->name, row,
                       test_input_kind_name(kind), d_at, (double)yg[d_at], (double)ya[d_at]);
            }
        }

        /* An independent activation row, of another kind. */
        test_input_fill(act, n, (test_input_kind)((row * 7 + 3) % INPUT_KIND_COUNT), pc->seed + 1, row);
        ggml_act(g, f, act, n, gact);
        const size_t act_bytes = n / f->act_block_elems * f->act_block_bytes;
        memset(aact, 0, act_bytes);
        f->act_quantize(act, aact, n);
        t->act_checked++;
        if (parity_first_diff_u8(gact, aact, act_bytes) != act_bytes) {
            t->act_bad++;
        }

        float sg = 0.0f, sa = 0.0f;
        g->dot((int)n, &sg, 0, genc, 0, gact, 0, 1);
        f->dot(n, &sa, genc, gact);
        const float rel = rel_error(sg, sa, term_magnitude(f, genc, gact, n));
        const float plain = rel_error(sg, sa, 0.0f);
        t->dot_checked++;
        if (rel > t->dot_worst) {
            t->dot_worst = rel;
        }
        if (plain > t->dot_worst_plain) {
            t->dot_worst_plain = plain;
        }
        t->dot_plain_over += !(plain <= DOT_REL_TOL);
        if (!(rel <= DOT_REL_TOL)) {
            if (t->dot_bad++ < 3) {
                printf("  %s dot row %zu: ggml %.9g anvil %.9g (rel %.3g)\n", f->name, row, (double)sg, (double)sa,
                       (double)rel);
            }
        }
        if (g->dot_generic != NULL) {
            float sgen = 0.0f;
            g->dot_generic((int)n, &sgen, 0, genc, 0, gact, 0, 1);
            t->gen_checked++;
            if (!parity_same_bits(sgen, sa)) {
                if (t->gen_bad++ < 3) {
                    printf("  %s dot row %zu vs generic: ggml %.9g anvil %.9g\n", f->name, row, (double)sgen,
                           (double)sa);
                }
            }
        }
        t->rows++;
    }
    for (unsigned k = kinds; k != 0; k &= k - 1) {
        t->kinds_seen++;
    }
}

/* Random block bytes: decode (bits) and dot (vs generic: bits; vs SIMD:
 * tolerance). finite_scales = 0 lets NaN/Inf scales through too. */
static void check_random(parity_ctx *pc, const cold_format *f, const ggml_side *g, size_t blocks, int finite_scales,
                         size_t *checked, size_t *bad, size_t *dot_checked, size_t *dot_bad, size_t *gen_checked,
                         size_t *gen_bad, float *dot_worst) {
    static uint8_t blk[RANDOM_BATCH * MAX_BLOCK_BYTES];
    static float yg[RANDOM_BATCH * ANVIL_QK_K], ya[RANDOM_BATCH * ANVIL_QK_K];
    static float act[RANDOM_BATCH * ANVIL_QK_K];
    static uint8_t gact[RANDOM_BATCH * sizeof(anvil_block_q8_K)];
    test_rng r;
    test_rng_seed(&r, pc->seed * 3u + (uint64_t)f->type + (finite_scales ? 0u : 1000u));
    for (size_t done = 0; done < blocks; done += RANDOM_BATCH) {
        const size_t nb = RANDOM_BATCH;
        const size_t n = nb * f->block_elems;
        random_bytes(&r, blk, nb * f->block_bytes);
        if (finite_scales) {
            make_scales_finite(f, blk, nb);
        }
        g->decode(blk, yg, (int64_t)n);
        f->decode(blk, ya, n);
        for (size_t b = 0; b < nb; ++b) {
            (*checked)++;
            const size_t at = parity_first_diff_f32(yg + b * f->block_elems, ya + b * f->block_elems, f->block_elems);
            if (at != f->block_elems) {
                if ((*bad)++ < 3) {
                    printf("  %s random block: elem %zu ggml %.9g anvil %.9g\n", f->name, at,
                           (double)yg[b * f->block_elems + at], (double)ya[b * f->block_elems + at]);
                }
            }
        }
        if (!finite_scales) {
            continue;
        }
        /* One dot per 256 elements of the batch, against a normal activation. */
        test_input_fill(act, n, INPUT_NORMAL, pc->seed + 5, done);
        ggml_act(g, f, act, n, gact);
        const size_t step = ANVIL_QK_K / f->block_elems;
        for (size_t b = 0; b + step <= nb; b += step) {
            const uint8_t *w = blk + b * f->block_bytes;
            const uint8_t *a = gact + b * f->block_elems / f->act_block_elems * f->act_block_bytes;
            float sg = 0.0f, sa = 0.0f;
            const float mag = term_magnitude(f, w, a, ANVIL_QK_K);
            if (!(mag <= FLT_MAX / 4)) {
                continue; /* random E8M0 scales up to 2^127: the sum overflows */
            }
            g->dot(ANVIL_QK_K, &sg, 0, w, 0, a, 0, 1);
            f->dot(ANVIL_QK_K, &sa, w, a);
            const float rel = rel_error(sg, sa, mag);
            (*dot_checked)++;
            if (rel > *dot_worst) {
                *dot_worst = rel;
            }
            if (!(rel <= DOT_REL_TOL)) {
                if ((*dot_bad)++ < 3) {
                    printf("  %s random dot: ggml %.9g anvil %.9g (rel %.3g)\n", f->name, (double)sg, (double)sa,
                           (double)rel);
                }
            }
            if (g->dot_generic != NULL) {
                float sgen = 0.0f;
                g->dot_generic(ANVIL_QK_K, &sgen, 0, w, 0, a, 0, 1);
                (*gen_checked)++;
                if (!parity_same_bits(sgen, sa)) {
                    (*gen_bad)++;
                }
            }
        }
    }
}

/* ---- encoders at the edges ------------------------------------------------
 * Every unweighted encoder: the lattice searches overflow on huge values
 * (ggml aborts), IQ4's scale fit turns NaN there (ggml's level search then
 * picks the top level), the FP4 scales saturate. */

void cold_edge_row(float *x, size_t n, test_input_kind kind, uint64_t seed, uint64_t row, float e) {
    test_input_fill(x, n, kind, seed, row);
    test_rng r;
    test_rng_seed(&r, seed * 17u + row);
    const float scale = powf(10.0f, e);
    for (size_t i = 0; i < n; ++i) {
        x[i] *= scale;
        if (!isfinite(x[i])) {
            x[i] = copysignf(FLT_MAX, x[i]);
        }
    }
    for (size_t g = 0; g + 32 <= n; g += 32) {
        const unsigned u = (unsigned)(test_rng_u64(&r) % 8);
        if (u < 2) {
            memset(x + g, 0, 32 * sizeof *x);
        } else if (u < 4) {
            memset(x + g + (u - 2) * 16, 0, 16 * sizeof *x);
        }
    }
}

/* Rows scaled over 1e-38 .. 1e6 with zeroed groups: every byte. */
static void check_edges_scaled(parity_ctx *pc, const cold_format *f) {
    static float x[2 * ANVIL_QK_K];
    static uint8_t genc[2 * MAX_BLOCK_BYTES * 2], aenc[2 * MAX_BLOCK_BYTES * 2];
    const size_t rows = pc->rows / 4 > 256 ? pc->rows / 4 : 256;
    size_t bad = 0;
    test_rng r;
    test_rng_seed(&r, pc->seed * 5u + (uint64_t)f->type);
    for (size_t row = 0; row < rows; ++row) {
        const test_input_kind kind = (test_input_kind)(row % INPUT_KIND_COUNT);
        const size_t n = (1 + row % 2) * ANVIL_QK_K;
        const float e = -38.0f + 44.0f * test_rng_uniform(&r);
        cold_edge_row(x, n, kind, pc->seed + 3, row, e);
        const size_t row_bytes = n / f->block_elems * f->block_bytes;
        pc->oracle->quantize_chunk(f->type, x, genc, 0, 1, (int64_t)n, NULL);
        char msg[256];
        const int rc = f->encode(x, aenc, n, msg, sizeof msg);
        const size_t at = rc == ANVIL_OK ? parity_first_diff_u8(genc, aenc, row_bytes) : 0;
        if (rc != ANVIL_OK || at != row_bytes) {
            if (bad++ < 3) {
                printf("  %s scaled row %zu (%s x 1e%.1f): rc %d, first diff at byte %zu: ggml %02x "
                       "anvil %02x\n",
                       f->name, row, test_input_kind_name(kind), (double)e, rc, at, genc[at], aenc[at]);
            }
        }
    }
    parity_report(pc, f->name, "encode rows x 1e-38..1e6 with all-zero groups", rows, bad);
}

int cold_ggml_quantize_isolated(const parity_ctx *pc, int type, const float *x, size_t nrows, size_t n_per_row,
                                const float *imatrix, void *dst, size_t dst_size) {
    enum { SHARED = 65536 };
    if (dst_size > SHARED) {
        return -1;
    }
    uint8_t *shared = mmap(NULL, SHARED, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) {
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    const pid_t pid = fork();
    if (pid == 0) {
        const int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) {
            dup2(devnull, 1);
            dup2(devnull, 2);
        }
        setenv("GGML_NO_BACKTRACE", "1", 1);
        pc->oracle->quantize_chunk(type, x, shared, 0, (int64_t)nrows, (int64_t)n_per_row, imatrix);
        _exit(0);
    }
    int status = 0;
    int done = -1;
    if (pid > 0 && waitpid(pid, &status, 0) == pid) {
        done = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (done) {
            memcpy(dst, shared, dst_size);
        }
    }
    munmap(shared, SHARED);
    return done;
}

/* Huge values. ggml's search overflows and fails an assertion (IQ1_M: reads
 * past its input first), which aborts the process, so ggml runs in a child
 * (cold_ggml_quantize_isolated). Agreement: ggml dies and anvil refuses with
 * ANVIL_E_UNSUPPORTED, or both encode and the bytes match. */
static void check_edges_huge(parity_ctx *pc, const cold_format *f) {
    static float x[ANVIL_QK_K];
    static uint8_t aenc[MAX_BLOCK_BYTES * 2], genc[MAX_BLOCK_BYTES * 2];
    const size_t row_bytes = ANVIL_QK_K / f->block_elems * f->block_bytes;
    const size_t rows = 3 * INPUT_KIND_COUNT;
    size_t bad = 0, aborted = 0, encoded = 0;
    for (size_t row = 0; row < rows; ++row) {
        const test_input_kind kind = (test_input_kind)(row % INPUT_KIND_COUNT);
        const float e = 6.0f + 26.0f * (float)row / (float)rows;
        cold_edge_row(x, ANVIL_QK_K, kind, pc->seed + 9, row, e);
        const int ggml_ok = cold_ggml_quantize_isolated(pc, f->type, x, 1, ANVIL_QK_K, NULL, genc, row_bytes);
        if (ggml_ok < 0) {
            printf("%-8s huge-value check: fork failed, skipped\n", f->name);
            break;
        }
        char msg[512];
        const int rc = f->encode(x, aenc, ANVIL_QK_K, msg, sizeof msg);
        int agree;
        if (ggml_ok) {
            encoded++;
            agree = rc == ANVIL_OK && memcmp(genc, aenc, row_bytes) == 0;
        } else {
            aborted++;
            agree = rc == ANVIL_E_UNSUPPORTED;
        }
        if (!agree && bad++ < 3) {
            printf("  %s huge row %zu (%s x 1e%.1f): ggml %s, anvil rc %d\n", f->name, row,
                   test_input_kind_name(kind), (double)e, ggml_ok ? "encoded" : "aborted", rc);
        }
    }
    char what[128];
    snprintf(what, sizeof what, "encode x 1e6..1e32: refused where ggml aborts (%zu), else bytes (%zu)", aborted,
             encoded);
    parity_report(pc, f->name, what, aborted + encoded, bad);
}

/* One-time table builds, each side timed before anything else uses them:
 * ggml_quantize_init per lattice type, anvil's single build of all four. */
static void time_lattice_inits(parity_ctx *pc) {
    /* IQ1_S shares IQ1_M's tables in both libraries. */
    static const int types[] = { ANVIL_TYPE_IQ3_XXS, ANVIL_TYPE_IQ3_S, ANVIL_TYPE_IQ2_XXS,
                                 ANVIL_TYPE_IQ2_XS,  ANVIL_TYPE_IQ2_S, ANVIL_TYPE_IQ1_M };
    static const char *const names[] = { "iq3_xxs", "iq3_s", "iq2_xxs", "iq2_xs", "iq2_s", "iq1_m" };
    enum { N = sizeof types / sizeof types[0] };
    double ggml_ms[N], total = 0.0;
    for (int i = 0; i < N; ++i) {
        const double t0 = cold_now_s();
        if (pc->oracle->quantize_init != NULL) {
            pc->oracle->quantize_init(types[i]);
        }
        ggml_ms[i] = (cold_now_s() - t0) * 1e3;
        total += ggml_ms[i];
    }
    const double t0 = cold_now_s();
    const int rc = anvil_ref_cold_lattice_init();
    const double anvil_ms = (cold_now_s() - t0) * 1e3;
    printf("lattice search tables: ggml_quantize_init %.1f ms (", total);
    for (int i = 0; i < N; ++i) {
        printf("%s%s %.1f", i ? ", " : "", names[i], ggml_ms[i]);
    }
    printf("); anvil_ref_cold_lattice_init %.1f ms (all six, once)\n", anvil_ms);
    parity_report(pc, "tables", "lattice search tables built (self-check)", 1, rc != ANVIL_OK);
}

/* ---- golden fixtures ------------------------------------------------------ */

static int write_golden(parity_ctx *pc, const cold_format *f, const ggml_side *g) {
    static float in[GOLDEN_LEN], zeros[GOLDEN_LEN], dec[GOLDEN_LEN], act[GOLDEN_LEN];
    static uint8_t enc[GOLDEN_LEN * 2], act_q[GOLDEN_LEN * 2];
    const size_t row_bytes = GOLDEN_LEN / f->block_elems * f->block_bytes;
    const size_t act_bytes = GOLDEN_LEN / f->act_block_elems * f->act_block_bytes;
    golden_header h;
    memset(&h, 0, sizeof h);
    h.type_id = (uint32_t)f->type;
    h.act_type = (uint32_t)f->act_type;
    h.row_len = GOLDEN_LEN;
    h.n_rows = GOLDEN_ROWS;
    h.row_bytes = (uint32_t)row_bytes;
    h.act_row_bytes = (uint32_t)act_bytes;
    snprintf(h.type_name, sizeof h.type_name, "%s", f->name);
    test_input_fill(act, GOLDEN_LEN, INPUT_NORMAL, 20240601u, 0);
    ggml_act(g, f, act, GOLDEN_LEN, act_q);

    char path[4096];
    snprintf(path, sizeof path, "%s/%s.bin", pc->golden_dir, f->name);
    FILE *fp = golden_write_begin(path, &h, act, act_q);
    if (fp == NULL) {
        return -1;
    }
    test_rng r;
    test_rng_seed(&r, 777u + (uint64_t)f->type);
    int rc = 0;
    for (uint32_t row = 0; row < GOLDEN_ROWS && rc == 0; ++row) {
        const test_input_kind kind = (test_input_kind)(row % INPUT_KIND_COUNT);
        test_input_fill(in, GOLDEN_LEN, kind, 99u, row);
        const int random_row = f->encode == NULL && row % 3 == 2;
        if (random_row) {
            random_bytes(&r, enc, row_bytes);
            make_scales_finite(f, enc, GOLDEN_LEN / f->block_elems);
        } else {
            ggml_encode_row(pc, f, in, GOLDEN_LEN, row, enc);
        }
        g->decode(enc, dec, GOLDEN_LEN);
        float dot = 0.0f;
        g->dot(GOLDEN_LEN, &dot, 0, enc, 0, act_q, 0, 1);
        const int encoded = f->encode != NULL;
        rc =
            golden_write_record(fp, &h, kind, encoded ? GOLDEN_REC_ENCODED : 0u, encoded ? in : zeros, enc, dec, dot);
    }
    if (golden_write_end(fp) != 0 || rc != 0) {
        fprintf(stderr, "%s: write failed\n", path);
        return -1;
    }
    printf("%-8s golden: wrote %s (%u rows of %u)\n", f->name, path, GOLDEN_ROWS, GOLDEN_LEN);
    return 0;
}

/* <dir>/imatrix/<type>.bin (tests/common/golden_imatrix.h, the format of
 * every weighted fixture): the five ordinary synthetic importance matrices
 * of parity_cold.h, then 32 one-row records, every input kind twice, cycling
 * through the matrices and (but for the formats that need one) none;
 * ggml's bytes. Two blocks per row (three for the 32-element formats). */
static int write_golden_weighted(parity_ctx *pc, const cold_format *f) {
    enum { N_IMX = TEST_IMX_ORDINARY, N_REC = 2 * INPUT_KIND_COUNT };
    const int needs = f->oracle_encoding == ENC_IMATRIX;
    golden_imx_header h;
    memset(&h, 0, sizeof h);
    h.type_id = (uint32_t)f->type;
    h.n_per_row = (uint32_t)(f->block_elems == 32 ? 96 : 2 * f->block_elems);
    h.row_bytes = (uint32_t)(h.n_per_row / f->block_elems * f->block_bytes);
    h.n_imatrix = N_IMX;
    h.n_records = N_REC;
    snprintf(h.type_name, sizeof h.type_name, "%s", f->name);
    static float imx[N_IMX * MAX_ELEMS], in[MAX_ELEMS];
    static uint8_t enc[MAX_ROW_BYTES];
    for (int k = 0; k < N_IMX; ++k) {
        test_imatrix_fill(imx + (size_t)k * h.n_per_row, h.n_per_row, (test_imatrix_kind)k, 4242u + (uint64_t)k);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/imatrix", pc->golden_dir);
    if (mkdir(path, 0777) != 0 && errno != EEXIST) {
        perror(path);
        return -1;
    }
    snprintf(path, sizeof path, "%s/imatrix/%s.bin", pc->golden_dir, f->name);
    FILE *fp = golden_imx_write_begin(path, &h, imx);
    if (fp == NULL) {
        return -1;
    }
    int rc = 0;
    for (uint32_t i = 0; i < N_REC && rc == 0; ++i) {
        const uint32_t kind = i % INPUT_KIND_COUNT;
        const uint32_t which = (kind + 3 * (i / INPUT_KIND_COUNT)) % (uint32_t)(N_IMX + !needs); /* N_IMX: none */
        test_input_fill(in, h.n_per_row, (test_input_kind)kind, 99u, 100u + i);
        memset(enc, 0, h.row_bytes);
        pc->oracle->quantize_chunk(f->type, in, enc, 0, 1, h.n_per_row,
                                   which < N_IMX ? imx + (size_t)which * h.n_per_row : NULL);
        rc = golden_imx_write_record(fp, &h, kind, which, in, enc);
    }
    if (golden_imx_write_end(fp) != 0 || rc != 0) {
        fprintf(stderr, "%s: write failed\n", path);
        return -1;
    }
    printf("%-8s golden: wrote %s (%u records of %u, %d importance matrices)\n", f->name, path, h.n_records,
           h.n_per_row, N_IMX);
    return 0;
}

/* ---- entry --------------------------------------------------------------- */

int parity_cold(parity_ctx *pc) {
    const size_t failures_before = pc->total_failures;
    time_lattice_inits(pc);
    check_tables(pc);
    const size_t random_blocks = pc->rows * 10 > 100000 ? pc->rows * 10 : 100000;
    for (size_t i = 0; i < N_FORMATS; ++i) {
        const cold_format *f = &formats[i];
        ggml_side g;
        if (bind_ggml(pc, f, &g) != 0) {
            parity_report(pc, f->name, "ggml functions", 0, 0);
            continue;
        }
        tally t;
        memset(&t, 0, sizeof t);
        check_rows(pc, f, &g, &t);
        char what[96];
        if (f->encode != NULL) {
            snprintf(what, sizeof what, "encode vs ggml_quantize_chunk (%zu kinds)", t.kinds_seen);
            parity_report(pc, f->name, what, t.enc_checked, t.enc_bad);
            if (f->ref_is_chunk) {
                parity_report(pc, f->name, "encode vs quantize_row_*_ref", t.enc_ref_checked, t.enc_ref_bad);
            }
            const double blocks = (double)t.enc_elems / ANVIL_QK_K;
            printf("%-8s   encode speed on the same %zu rows: ggml %.1f us, anvil %.1f us per 256 "
                   "elements (anvil %.2fx ggml's speed)\n",
                   f->name, t.enc_checked, t.enc_ggml_s * 1e6 / blocks, t.enc_anvil_s * 1e6 / blocks,
                   t.enc_anvil_s > 0 ? t.enc_ggml_s / t.enc_anvil_s : 0.0);
            check_edges_scaled(pc, f);
            check_edges_huge(pc, f);
        }
        snprintf(what, sizeof what, "decode ggml-encoded rows%s",
                 f->oracle_encoding == ENC_IMATRIX ? " (imatrix)" : "");
        parity_report(pc, f->name, what, t.dec_checked, t.dec_bad);
        snprintf(what, sizeof what, "act quantize %s", f->act_name);
        parity_report(pc, f->name, what, t.act_checked, t.act_bad);
        snprintf(what, sizeof what, "vec_dot vs ggml (worst rel %.2g)", (double)t.dot_worst);
        parity_report(pc, f->name, what, t.dot_checked, t.dot_bad);
        printf("%-8s   vec_dot error relative to the result alone: worst %.3g, %zu of %zu rows above "
               "1e-5 (cancelling sums)\n",
               f->name, (double)t.dot_worst_plain, t.dot_plain_over, t.dot_checked);
        if (g.dot_generic != NULL) {
            parity_report(pc, f->name, "vec_dot vs ggml generic (bits)", t.gen_checked, t.gen_bad);
        } else {
            printf("%-8s vec_dot vs ggml generic: libggml-cpu-x64.so absent, skipped\n", f->name);
        }

        size_t rc_ = 0, rb = 0, dc = 0, db = 0, gc = 0, gb = 0;
        float worst = 0.0f;
        check_random(pc, f, &g, random_blocks, 1, &rc_, &rb, &dc, &db, &gc, &gb, &worst);
        parity_report(pc, f->name, "decode random blocks, finite scale", rc_, rb);
        snprintf(what, sizeof what, "vec_dot random blocks (worst rel %.2g)", (double)worst);
        parity_report(pc, f->name, what, dc, db);
        if (g.dot_generic != NULL) {
            parity_report(pc, f->name, "vec_dot random blocks vs generic", gc, gb);
        }
        size_t rc2 = 0, rb2 = 0, unused[4] = { 0, 0, 0, 0 };
        float unused_worst = 0.0f;
        check_random(pc, f, &g, random_blocks / 10, 0, &rc2, &rb2, &unused[0], &unused[1], &unused[2], &unused[3],
                     &unused_worst);
        parity_report(pc, f->name, "decode random blocks, any scale", rc2, rb2);

        if (pc->golden_dir != NULL && (write_golden(pc, f, &g) != 0 || write_golden_weighted(pc, f) != 0)) {
            parity_report(pc, f->name, "golden fixture written", 1, 1);
        }
    }
    parity_cold_weighted(pc);
    return (int)(pc->total_failures - failures_before);
}
