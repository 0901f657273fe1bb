/* SPDX-License-Identifier: MIT */
/*
 * Parity of the flat 32-element family (Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1)
 * against ggml itself.
 *
 * Per format, over pc->rows rows cycling through every input kind with
 * varied row lengths (1..144 blocks):
 *   encode      anvil_ref_encode_<t> vs quantize_row_<t>_ref: every byte
 *   decode      anvil_ref_decode_<t> vs dequantize_row_<t> on ggml's bytes,
 *               and on random (hostile) bytes: every float bit
 *   act quant   anvil_ref_quantize_q8_0/q8_1 vs quantize_row_q8_0/1_ref on
 *               an independent activation row: every byte
 *   vec_dot     anvil_ref_vec_dot_<t>_<act> vs ggml_vec_dot_<t>_<act> (the
 *               SIMD build ggml picks for this CPU) on the SAME bytes:
 *               within 1e-5 relative; and vs ggml's portable
 *               ggml_vec_dot_*_generic from the baseline x64 build, which
 *               computes in the same order as ours: bit for bit.
 * Q8_1 has no ggml row decoder: it is checked against its definition
 * x = d * q, with d converted by ggml's own ggml_fp16_to_fp32.
 *
 * With pc->golden_dir set, writes <dir>/<type>.bin (tests/common/golden.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/blocks.h"
#include "anvil/codec.h"
#include "anvil/numeric.h"
#include "anvil/status.h"
#include "parity.h"
#include "ref/q8_0_family.h"

#define QK 32
#define MAX_BLOCKS 144
#define MAX_ELEMS (MAX_BLOCKS * QK)
#define MAX_ROW_BYTES (MAX_BLOCKS * 36)
#define DOT_REL_TOL 1e-5f

typedef void (*act_quantize_fn)(const float *x, void *dst, size_t n);

typedef struct q8_format {
    const char *name; /* ggml spelling */
    int type;         /* ggml type id */
    size_t block_bytes;
    anvil_encode_fn encode;
    anvil_decode_fn decode;
    int act_type; /* ggml's vec_dot_type */
    const char *act_name;
    size_t act_block_bytes;
    act_quantize_fn act_quantize;
    anvil_vec_dot_fn dot; /* NULL: ggml has no dot with this weight type */
} q8_format;

static const q8_format formats[] = {
    { "q4_0", ANVIL_TYPE_Q4_0, sizeof(anvil_block_q4_0), anvil_ref_encode_q4_0, anvil_ref_decode_q4_0,
      ANVIL_TYPE_Q8_0, "q8_0", sizeof(anvil_block_q8_0), anvil_ref_quantize_q8_0, anvil_ref_vec_dot_q4_0_q8_0 },
    { "q4_1", ANVIL_TYPE_Q4_1, sizeof(anvil_block_q4_1), anvil_ref_encode_q4_1, anvil_ref_decode_q4_1,
      ANVIL_TYPE_Q8_1, "q8_1", sizeof(anvil_block_q8_1), anvil_ref_quantize_q8_1, anvil_ref_vec_dot_q4_1_q8_1 },
    { "q5_0", ANVIL_TYPE_Q5_0, sizeof(anvil_block_q5_0), anvil_ref_encode_q5_0, anvil_ref_decode_q5_0,
      ANVIL_TYPE_Q8_0, "q8_0", sizeof(anvil_block_q8_0), anvil_ref_quantize_q8_0, anvil_ref_vec_dot_q5_0_q8_0 },
    { "q5_1", ANVIL_TYPE_Q5_1, sizeof(anvil_block_q5_1), anvil_ref_encode_q5_1, anvil_ref_decode_q5_1,
      ANVIL_TYPE_Q8_1, "q8_1", sizeof(anvil_block_q8_1), anvil_ref_quantize_q8_1, anvil_ref_vec_dot_q5_1_q8_1 },
    { "q8_0", ANVIL_TYPE_Q8_0, sizeof(anvil_block_q8_0), anvil_ref_encode_q8_0, anvil_ref_decode_q8_0,
      ANVIL_TYPE_Q8_0, "q8_0", sizeof(anvil_block_q8_0), anvil_ref_quantize_q8_0, anvil_ref_vec_dot_q8_0_q8_0 },
    { "q8_1", ANVIL_TYPE_Q8_1, sizeof(anvil_block_q8_1), anvil_ref_encode_q8_1, anvil_ref_decode_q8_1,
      ANVIL_TYPE_Q8_1, "q8_1", sizeof(anvil_block_q8_1), anvil_ref_quantize_q8_1, NULL },
};

/* ggml's side of one format. */
typedef struct ggml_side {
    ggml_from_float_fn encode;       /* quantize_row_<t>_ref */
    ggml_to_float_fn decode;         /* dequantize_row_<t>, NULL for q8_1 */
    ggml_from_float_fn act_quantize; /* quantize_row_<act>_ref */
    ggml_vec_dot_fn dot;             /* best CPU build */
    ggml_vec_dot_fn dot_generic;     /* portable build's *_generic, or NULL */
} ggml_side;

typedef float (*ggml_half_to_float_fn)(uint16_t);

static int bind_ggml(const parity_ctx *pc, const q8_format *f, ggml_side *g) {
    memset(g, 0, sizeof *g);
    g->encode = ggml_oracle_from_float_ref(pc->oracle, f->type);
    g->decode = ggml_oracle_to_float(pc->oracle, f->type);
    g->act_quantize = ggml_oracle_from_float_ref(pc->oracle, f->act_type);
    if (f->dot != NULL) {
        g->dot = ggml_oracle_vec_dot(pc->oracle, f->name, f->act_name);
        g->dot_generic = ggml_oracle_vec_dot_portable(pc->oracle, f->name, f->act_name);
    }
    if (g->encode == NULL || g->act_quantize == NULL || (f->type != ANVIL_TYPE_Q8_1 && g->decode == NULL) ||
        (f->dot != NULL && g->dot == NULL)) {
        printf("%-8s ggml lacks a function this check needs (encode %p, decode %p, act %p, dot %p)\n", f->name,
               (void *)g->encode, (void *)g->decode, (void *)g->act_quantize, (void *)g->dot);
        return -1;
    }
    return 0;
}

/* Q8_1 by definition: x = d * q, d read with ggml's own fp16 conversion. */
static void q8_1_by_definition(ggml_half_to_float_fn h2f, const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / QK; ++i, b += sizeof(anvil_block_q8_1)) {
        uint16_t h;
        memcpy(&h, b + offsetof(anvil_block_q8_1, d), 2);
        const float d = h2f(h);
        const int8_t *q = (const int8_t *)(b + offsetof(anvil_block_q8_1, qs));
        for (int j = 0; j < QK; ++j) {
            dst[i * QK + (size_t)j] = (float)q[j] * d;
        }
    }
}

static void ggml_decode(const ggml_side *g, ggml_half_to_float_fn h2f, const q8_format *f, const void *src,
                        float *dst, size_t n) {
    if (f->type == ANVIL_TYPE_Q8_1) {
        q8_1_by_definition(h2f, src, dst, n);
    } else {
        g->decode(src, dst, (int64_t)n);
    }
}

/* Random bytes: what a corrupt or hostile file holds. Decoders must be
 * total and still agree with ggml bit for bit (NaN/Inf scales included). */
static void random_bytes(test_rng *r, uint8_t *p, size_t len) {
    for (size_t i = 0; i < len; ++i) {
        p[i] = (uint8_t)(test_rng_u64(r) >> 56);
    }
}

/* Golden-friendly random blocks: random codes, but every fp16 field made
 * finite, so a golden record is a plain number for any consumer. */
static void random_finite_blocks(test_rng *r, const q8_format *f, uint8_t *p, size_t nb) {
    random_bytes(r, p, nb * f->block_bytes);
    const size_t halves =
        (f->type == ANVIL_TYPE_Q4_0 || f->type == ANVIL_TYPE_Q5_0 || f->type == ANVIL_TYPE_Q8_0) ? 1 : 2;
    for (size_t i = 0; i < nb; ++i) {
        for (size_t h = 0; h < halves; ++h) {
            uint8_t *hi = p + i * f->block_bytes + h * 2 + 1;
            if ((*hi & 0x7c) == 0x7c) {
                *hi &= (uint8_t)~0x40; /* exponent 31 (Inf/NaN) -> 15 */
            }
        }
    }
}

static size_t row_blocks(uint64_t seed, size_t row) {
    test_rng r;
    test_rng_seed(&r, seed * 31u + row * 2654435761u + 17u);
    /* mostly short and medium rows, some long ones, always whole blocks */
    const uint64_t u = test_rng_u64(&r);
    return (u >> 60) == 0 ? MAX_BLOCKS : 1 + (size_t)((u >> 8) % 96);
}

static float rel_error(float a, float b, float floor) {
    const float m = fmaxf(fmaxf(fabsf(a), fabsf(b)), floor);
    if (m == 0.0f) {
        return 0.0f;
    }
    return fabsf(a - b) / m;
}

/* Code j of a weight block, with the format's offset removed for the
 * symmetric formats (the integer the dot multiplies). */
static int weight_code(const q8_format *f, const uint8_t *b, int j) {
    switch (f->type) {
    case ANVIL_TYPE_Q4_0:
    case ANVIL_TYPE_Q4_1: {
        const uint8_t *qs = b + (f->type == ANVIL_TYPE_Q4_0 ? 2 : 4);
        const int v = j < 16 ? (qs[j] & 0x0f) : (qs[j - 16] >> 4);
        return f->type == ANVIL_TYPE_Q4_0 ? v - 8 : v;
    }
    case ANVIL_TYPE_Q5_0:
    case ANVIL_TYPE_Q5_1: {
        const size_t qh_off = f->type == ANVIL_TYPE_Q5_0 ? 2 : 4;
        uint32_t qh;
        memcpy(&qh, b + qh_off, 4);
        const uint8_t *qs = b + qh_off + 4;
        const int v = (j < 16 ? (qs[j] & 0x0f) : (qs[j - 16] >> 4)) | (int)(((qh >> j) & 1u) << 4);
        return f->type == ANVIL_TYPE_Q5_0 ? v - 16 : v;
    }
    default: /* q8_0, q8_1 */ return ((const int8_t *)b)[f->block_bytes - QK + (size_t)j];
    }
}

static float half_at(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return anvil_fp16_to_fp32(h);
}

/* The magnitude of what a dot accumulates: per block
 *     |d_w d_a| * sum_j |q_w,j q_a,j|  (+ |m_w s_a| for the _1 formats).
 * ggml's SIMD kernels split a block's integer sum across float lanes and
 * keep the min terms in their own accumulator, so two correct kernels
 * differ by a few ulps of THIS, not of the result: when the products cancel
 * (zero-mean weights against a constant or ramp activation) the result can
 * be orders of magnitude smaller, and an error relative to it measures the
 * cancellation, not the kernel. */
static float term_magnitude(const q8_format *f, const uint8_t *w, const uint8_t *a, size_t nb) {
    const int has_min = f->type == ANVIL_TYPE_Q4_1 || f->type == ANVIL_TYPE_Q5_1;
    float sum = 0.0f;
    for (size_t i = 0; i < nb; ++i, w += f->block_bytes, a += f->act_block_bytes) {
        const int8_t *qa = (const int8_t *)(a + f->act_block_bytes - QK);
        long abs_int = 0;
        for (int j = 0; j < QK; ++j) {
            abs_int += labs((long)weight_code(f, w, j) * qa[j]);
        }
        sum += fabsf(half_at(w) * half_at(a)) * (float)abs_int;
        if (has_min) {
            sum += fabsf(half_at(w + 2) * half_at(a + 2)); /* m_w * s_a */
        }
    }
    return sum;
}

typedef struct counts {
    size_t rows, enc_bad, enc_bytes;
    size_t dec_rows, dec_bad, dec_floats;
    size_t rnd_rows, rnd_bad;
    size_t act_rows, act_bad;
    size_t dot_rows, dot_bad, gen_rows, gen_bad;
    size_t kinds_seen[INPUT_KIND_COUNT];
    float worst_rel;   /* relative to the term magnitude (the check) */
    float worst_plain; /* relative to the result alone (reported) */
    size_t plain_over; /* rows whose plain relative error exceeds 1e-5 */
    float worst_a, worst_b;
    size_t worst_row;
} counts;

static void note_mismatch(const parity_ctx *pc, const char *fmt_name, const char *what, size_t row, size_t n,
                          size_t at) {
    if (pc->verbose) {
        printf("  %s %s: row %zu (n=%zu) first differs at %zu\n", fmt_name, what, row, n, at);
    }
}

static int check_format(parity_ctx *pc, const q8_format *f) {
    ggml_side g;
    if (bind_ggml(pc, f, &g) != 0) {
        parity_report(pc, f->name, "ggml functions present", 0, 1);
        return 1;
    }
    ggml_half_to_float_fn h2f = (ggml_half_to_float_fn)ggml_oracle_sym(pc->oracle, "ggml_fp16_to_fp32");
    if (f->type == ANVIL_TYPE_Q8_1 && h2f == NULL) {
        parity_report(pc, f->name, "ggml_fp16_to_fp32 present", 0, 1);
        return 1;
    }

    float *x = malloc(MAX_ELEMS * sizeof *x);
    float *act = malloc(MAX_ELEMS * sizeof *act);
    float *dec_a = malloc(MAX_ELEMS * sizeof *dec_a);
    float *dec_g = malloc(MAX_ELEMS * sizeof *dec_g);
    uint8_t *enc_a = malloc(MAX_ROW_BYTES);
    uint8_t *enc_g = malloc(MAX_ROW_BYTES);
    uint8_t *act_a = malloc(MAX_ROW_BYTES);
    uint8_t *act_g = malloc(MAX_ROW_BYTES);
    counts c;
    memset(&c, 0, sizeof c);
    int failed = 0;
    if (!x || !act || !dec_a || !dec_g || !enc_a || !enc_g || !act_a || !act_g) {
        fprintf(stderr, "parity_q8_0: out of memory\n");
        failed = 1;
        goto done;
    }
    test_rng rnd;
    test_rng_seed(&rnd, pc->seed ^ (uint64_t)f->type * 0x51ED27u);

    for (size_t row = 0; row < pc->rows; ++row) {
        const test_input_kind kind = (test_input_kind)(row % INPUT_KIND_COUNT);
        const size_t nb = row_blocks(pc->seed, row);
        const size_t n = nb * QK;
        const size_t bytes = nb * f->block_bytes;
        test_input_fill(x, n, kind, pc->seed, row);
        c.kinds_seen[kind]++;
        c.rows++;

        /* encode: bytes */
        char msg[256];
        memset(enc_a, 0xA5, bytes);
        memset(enc_g, 0x5A, bytes);
        const int rc = f->encode(x, enc_a, n, msg, sizeof msg);
        g.encode(x, enc_g, (int64_t)n);
        const size_t at = parity_first_diff_u8(enc_a, enc_g, bytes);
        c.enc_bytes += bytes;
        if (rc != ANVIL_OK || at != bytes) {
            c.enc_bad++;
            note_mismatch(pc, f->name, rc != ANVIL_OK ? msg : "encode", row, n, at);
        }

        /* decode ggml's bytes: float bits */
        f->decode(enc_g, dec_a, n);
        ggml_decode(&g, h2f, f, enc_g, dec_g, n);
        const size_t dat = parity_first_diff_f32(dec_a, dec_g, n);
        c.dec_rows++;
        c.dec_floats += n;
        if (dat != n) {
            c.dec_bad++;
            note_mismatch(pc, f->name, "decode", row, n, dat);
        }

        /* decode hostile bytes (every 4th row) */
        if (row % 4 == 0) {
            random_bytes(&rnd, enc_a, bytes);
            f->decode(enc_a, dec_a, n);
            ggml_decode(&g, h2f, f, enc_a, dec_g, n);
            const size_t rat = parity_first_diff_f32(dec_a, dec_g, n);
            c.rnd_rows++;
            if (rat != n) {
                c.rnd_bad++;
                note_mismatch(pc, f->name, "decode(random bytes)", row, n, rat);
            }
        }

        /* activation: an independent row of another kind, quantized by both */
        const test_input_kind akind = (test_input_kind)((row * 7 + 3) % INPUT_KIND_COUNT);
        test_input_fill(act, n, akind, pc->seed + 1000003u, row);
        const size_t abytes = nb * f->act_block_bytes;
        f->act_quantize(act, act_a, n);
        g.act_quantize(act, act_g, (int64_t)n);
        c.act_rows++;
        const size_t aat = parity_first_diff_u8(act_a, act_g, abytes);
        if (aat != abytes) {
            c.act_bad++;
            note_mismatch(pc, f->name, "activation quantize", row, n, aat);
        }

        /* vec_dot on the same bytes (ggml's weights, ggml's activation) */
        if (f->dot != NULL) {
            float sa = 0.0f, sg = 0.0f;
            f->dot(n, &sa, enc_g, act_g);
            g.dot((int)n, &sg, 0, enc_g, 0, act_g, 0, 1);
            const float scale = term_magnitude(f, enc_g, act_g, nb);
            const float e = rel_error(sa, sg, scale);
            const float plain = rel_error(sa, sg, 0.0f);
            c.dot_rows++;
            if (plain > c.worst_plain) {
                c.worst_plain = plain;
            }
            c.plain_over += !(plain <= DOT_REL_TOL);
            if (!(e <= DOT_REL_TOL)) {
                c.dot_bad++;
                if (pc->verbose) {
                    printf("  %s vec_dot: row %zu (n=%zu, %s x %s) anvil %.9g ggml %.9g rel %.3g\n", f->name, row, n,
                           test_input_kind_name(kind), test_input_kind_name(akind), (double)sa, (double)sg,
                           (double)e);
                }
            }
            if (c.dot_rows == 1 || e > c.worst_rel) {
                c.worst_rel = e;
                c.worst_a = sa;
                c.worst_b = sg;
                c.worst_row = row;
            }
            if (g.dot_generic != NULL) {
                float sgen = 0.0f;
                g.dot_generic((int)n, &sgen, 0, enc_g, 0, act_g, 0, 1);
                c.gen_rows++;
                if (!parity_same_bits(sa, sgen)) {
                    c.gen_bad++;
                    if (pc->verbose) {
                        printf("  %s vec_dot vs generic: row %zu anvil %.9g generic %.9g\n", f->name, row, (double)sa,
                               (double)sgen);
                    }
                }
            }
        }
    }

    size_t kinds = 0;
    for (int k = 0; k < INPUT_KIND_COUNT; ++k) {
        kinds += c.kinds_seen[k] > 0;
    }
    printf("%-8s %zu rows, %zu input kinds, %zu encoded bytes, %zu decoded floats\n", f->name, c.rows, kinds,
           c.enc_bytes, c.dec_floats);
    parity_report(pc, f->name, "encode bytes (rows)", c.rows, c.enc_bad);
    parity_report(pc, f->name, f->type == ANVIL_TYPE_Q8_1 ? "decode bits vs d*q (rows)" : "decode bits (rows)",
                  c.dec_rows, c.dec_bad);
    parity_report(pc, f->name, "decode bits, random bytes (rows)", c.rnd_rows, c.rnd_bad);
    char what[64];
    snprintf(what, sizeof what, "act quantize %s bytes (rows)", f->act_name);
    parity_report(pc, f->name, what, c.act_rows, c.act_bad);
    if (f->dot != NULL) {
        snprintf(what, sizeof what, "vec_dot %s within 1e-5 (rows)", f->act_name);
        parity_report(pc, f->name, what, c.dot_rows, c.dot_bad);
        printf("%-8s worst vec_dot error relative to term magnitude %.3g (row %zu: anvil %.9g, "
               "ggml %.9g)\n",
               f->name, (double)c.worst_rel, c.worst_row, (double)c.worst_a, (double)c.worst_b);
        printf("%-8s worst vec_dot error relative to the result %.3g; %zu of %zu rows above 1e-5 "
               "(cancelling sums)\n",
               f->name, (double)c.worst_plain, c.plain_over, c.dot_rows);
        if (g.dot_generic != NULL) {
            parity_report(pc, f->name, "vec_dot bits vs ggml generic", c.gen_rows, c.gen_bad);
        } else {
            printf("%-8s (libggml-cpu-x64.so generic kernels absent: bit check skipped)\n", f->name);
        }
    } else {
        printf("%-8s no vec_dot: ggml has none for %s weights (host falls back)\n", f->name, f->name);
    }
    if (kinds < 10) {
        parity_report(pc, f->name, "at least 10 input kinds", kinds, 1);
    }
    failed = (int)(c.enc_bad + c.dec_bad + c.rnd_bad + c.act_bad + c.dot_bad + c.gen_bad);

done:
    free(x);
    free(act);
    free(dec_a);
    free(dec_g);
    free(enc_a);
    free(enc_g);
    free(act_a);
    free(act_g);
    return failed;
}

/* Golden fixture: GOLDEN_ENCODED_ROWS records encoded from every input kind
 * plus GOLDEN_DECODE_ROWS decode-only records of random (finite-scale)
 * blocks, 256 elements each, one shared activation row; everything computed
 * by ggml. */
#define GOLDEN_LEN 256
#define GOLDEN_ENCODED_ROWS 40
#define GOLDEN_DECODE_ROWS 8

static int write_golden(parity_ctx *pc, const q8_format *f) {
    ggml_side g;
    if (bind_ggml(pc, f, &g) != 0) {
        return -1;
    }
    ggml_half_to_float_fn h2f = (ggml_half_to_float_fn)ggml_oracle_sym(pc->oracle, "ggml_fp16_to_fp32");
    const size_t nb = GOLDEN_LEN / QK;
    golden_header h;
    memset(&h, 0, sizeof h);
    h.type_id = (uint32_t)f->type;
    h.act_type = (uint32_t)f->act_type;
    h.row_len = GOLDEN_LEN;
    h.n_rows = GOLDEN_ENCODED_ROWS + GOLDEN_DECODE_ROWS;
    h.row_bytes = (uint32_t)(nb * f->block_bytes);
    h.act_row_bytes = (uint32_t)(nb * f->act_block_bytes);
    snprintf(h.type_name, sizeof h.type_name, "%s", f->name);

    float act[GOLDEN_LEN], in[GOLDEN_LEN], dec[GOLDEN_LEN];
    uint8_t act_q[MAX_ROW_BYTES], enc[MAX_ROW_BYTES];
    test_input_fill(act, GOLDEN_LEN, INPUT_LLM_LIKE, 4242, 7);
    g.act_quantize(act, act_q, GOLDEN_LEN);

    char path[4096];
    snprintf(path, sizeof path, "%s/%s.bin", pc->golden_dir, f->name);
    FILE *fp = golden_write_begin(path, &h, act, act_q);
    if (fp == NULL) {
        return -1;
    }
    test_rng rnd;
    test_rng_seed(&rnd, 777u + (uint64_t)f->type);
    int rc = 0;
    for (uint32_t i = 0; i < h.n_rows && rc == 0; ++i) {
        const int encoded = i < GOLDEN_ENCODED_ROWS;
        uint32_t kind = encoded ? i % INPUT_KIND_COUNT : INPUT_UNIFORM;
        if (encoded) {
            test_input_fill(in, GOLDEN_LEN, (test_input_kind)kind, 99, i);
            g.encode(in, enc, GOLDEN_LEN);
        } else {
            memset(in, 0, sizeof in);
            random_finite_blocks(&rnd, f, enc, nb);
        }
        ggml_decode(&g, h2f, f, enc, dec, GOLDEN_LEN);
        float dot = NAN;
        if (g.dot != NULL) {
            g.dot(GOLDEN_LEN, &dot, 0, enc, 0, act_q, 0, 1);
        }
        rc = golden_write_record(fp, &h, kind, encoded ? GOLDEN_REC_ENCODED : 0u, in, enc, dec, dot);
    }
    if (golden_write_end(fp) != 0 || rc != 0) {
        fprintf(stderr, "parity_q8_0: writing %s failed\n", path);
        return -1;
    }
    printf("%-8s golden written: %s (%u records x %u elements)\n", f->name, path, h.n_rows, h.row_len);
    return 0;
}

int parity_q8_0(parity_ctx *pc) {
    int failed = 0;
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; ++i) {
        failed += check_format(pc, &formats[i]) != 0;
        if (pc->golden_dir != NULL && write_golden(pc, &formats[i]) != 0) {
            parity_report(pc, formats[i].name, "golden written", 0, 1);
            failed++;
        }
    }
    return failed;
}
