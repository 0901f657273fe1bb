/* SPDX-License-Identifier: MIT */
/*
 * Parity of the ternary family (TQ1_0 TQ2_0 Q1_0 Q2_0) against ggml itself.
 *
 * Per format, pc->rows rows of varied whole-block lengths cycle through every
 * input kind of tests/common/inputs.h plus two of this family's own:
 *   mixed   every block of the row drawn from a different kind, so blocks of
 *           zeros, subnormals and outliers sit next to each other;
 *   tiny    absmax below ~2.9e-39, where 1/absmax overflows to Inf and ggml's
 *           float-to-int conversions meet Inf and NaN.
 * Checks (each reported on its own line):
 *   encode       anvil's bytes == quantize_row_<t>_ref's bytes
 *   decode       anvil's floats == dequantize_row_<t>'s floats, bitwise, on
 *                ggml's encodings and on crafted blocks (random bytes: TQ1_0
 *                bytes >= 243, 2-bit code 3, NaN/Inf/subnormal/negative scales)
 *   act quant    anvil's Q8_K / Q8_0 quantizer == ggml's, byte for byte
 *   dot          within 1e-5 of ggml's dispatched ggml_vec_dot_<w>_<a> (its
 *                SIMD kernel on this CPU), relative to max(|dot|, M) where M
 *                bounds every intermediate (see dot_magnitude); the plain
 *                relative error and both dots' distance from the exact dot
 *                are printed too
 *   dot portable bit-identical to ggml_vec_dot_<w>_<a>_generic of ggml's
 *                baseline x64 build (no FMA contraction), on the same bytes
 *   ternary      exactly-ternary rows {-s,0,+s} decode to {-1,0,+1} * f16(s)
 *                (sign-only Q1_0: every weight keeps its sign, |w| = f16(d))
 *   refusal      NaN/Inf rows refused with ANVIL_E_NONFINITE, bad lengths
 *                with ANVIL_E_BLOCK_MISMATCH
 * With pc->golden_dir set, writes <dir>/<type>.bin: 48 encoded rows of 256
 * elements (every input kind three times) and 4 decode-only crafted rows.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/blocks.h"
#include "anvil/backend.h"
#include "anvil/codec.h"
#include "anvil/numeric.h"
#include "anvil/status.h"
#include "parity.h"
#include "ref/q8_0_family.h"
#include "ref/q8_k.h"
#include "ref/ternary.h"

#define TERN_MAX_ELEMS 2048
#define TERN_KIND_MIXED ((int)INPUT_KIND_COUNT)
#define TERN_KIND_TINY ((int)INPUT_KIND_COUNT + 1)
#define TERN_KIND_COUNT ((int)INPUT_KIND_COUNT + 2)
#define DOT_REL_TOL 1e-5f

typedef struct tern_format {
    const char *name; /* ggml spelling */
    int type_id;
    size_t block_elems;
    size_t block_bytes;
    size_t scale_offset; /* byte offset of the f16 d inside a block */
    const char *act_name;
    int act_type;
    size_t act_block_elems;
    size_t act_block_bytes;
    anvil_encode_fn encode;
    anvil_decode_fn decode;
    anvil_vec_dot_fn dot;
    anvil_quantize_fn act_quantize;
    anvil_decode_fn act_decode;
    int sign_only; /* Q1_0: no zero code */
} tern_format;

static const tern_format formats[] = {
    { "tq1_0", ANVIL_TYPE_TQ1_0, ANVIL_QK_K, sizeof(anvil_block_tq1_0), offsetof(anvil_block_tq1_0, d), "q8_K",
      ANVIL_TYPE_Q8_K, ANVIL_QK_K, sizeof(anvil_block_q8_K), anvil_ref_encode_tq1_0, anvil_ref_decode_tq1_0,
      anvil_ref_vec_dot_tq1_0_q8_K, anvil_ref_quantize_q8_K, anvil_ref_decode_q8_K, 0 },
    { "tq2_0", ANVIL_TYPE_TQ2_0, ANVIL_QK_K, sizeof(anvil_block_tq2_0), offsetof(anvil_block_tq2_0, d), "q8_K",
      ANVIL_TYPE_Q8_K, ANVIL_QK_K, sizeof(anvil_block_q8_K), anvil_ref_encode_tq2_0, anvil_ref_decode_tq2_0,
      anvil_ref_vec_dot_tq2_0_q8_K, anvil_ref_quantize_q8_K, anvil_ref_decode_q8_K, 0 },
    { "q1_0", ANVIL_TYPE_Q1_0, ANVIL_QK1_0, sizeof(anvil_block_q1_0), offsetof(anvil_block_q1_0, d), "q8_0",
      ANVIL_TYPE_Q8_0, ANVIL_QK8_0, sizeof(anvil_block_q8_0), anvil_ref_encode_q1_0, anvil_ref_decode_q1_0,
      anvil_ref_vec_dot_q1_0_q8_0, anvil_ref_quantize_q8_0, anvil_ref_decode_q8_0, 1 },
    { "q2_0", ANVIL_TYPE_Q2_0, ANVIL_QK2_0, sizeof(anvil_block_q2_0), offsetof(anvil_block_q2_0, d), "q8_0",
      ANVIL_TYPE_Q8_0, ANVIL_QK8_0, sizeof(anvil_block_q8_0), anvil_ref_encode_q2_0, anvil_ref_decode_q2_0,
      anvil_ref_vec_dot_q2_0_q8_0, anvil_ref_quantize_q8_0, anvil_ref_decode_q8_0, 0 },
};

typedef struct tern_oracle {
    ggml_from_float_fn encode;
    ggml_to_float_fn decode;
    ggml_from_float_fn act_quantize;
    ggml_vec_dot_fn dot;         /* dispatched (SIMD) */
    ggml_vec_dot_fn dot_generic; /* ggml's portable C */
} tern_oracle;

/* Work buffers, sized for the longest row. */
typedef struct tern_bufs {
    float x[TERN_MAX_ELEMS];
    float act[TERN_MAX_ELEMS];
    float dec_mine[TERN_MAX_ELEMS];
    float dec_ggml[TERN_MAX_ELEMS];
    uint8_t enc_mine[TERN_MAX_ELEMS]; /* every format is < 1 byte/elem... */
    uint8_t enc_ggml[TERN_MAX_ELEMS]; /* ...plus slack: <= 18/64 per elem */
    uint8_t actq_mine[TERN_MAX_ELEMS * 2];
    uint8_t actq_ggml[TERN_MAX_ELEMS * 2];
} tern_bufs;

typedef struct tern_counts {
    size_t enc_rows, enc_bad;
    size_t dec_rows, dec_bad;
    size_t act_rows, act_bad;
    size_t dot_rows, dot_bad;
    size_t gen_rows, gen_bad;
    size_t tern_rows, tern_bad;
    size_t refuse_checks, refuse_bad;
    size_t plain_over; /* rows whose plain relative error > 1e-5 */
    double worst_bound, worst_plain, worst_mag;
    double worst_exact_mine, worst_exact_ggml; /* |dot - exact| / M */
    float worst_mine, worst_ggml;
} tern_counts;

static const char *kind_name(int kind) {
    if (kind == TERN_KIND_MIXED) {
        return "mixed";
    }
    if (kind == TERN_KIND_TINY) {
        return "tiny";
    }
    return test_input_kind_name((test_input_kind)kind);
}

/* A row of this family's kinds: the shared ones, or the two above. */
static void fill_row(float *x, size_t n, size_t block, int kind, uint64_t seed, uint64_t row) {
    if (kind < (int)INPUT_KIND_COUNT) {
        test_input_fill(x, n, (test_input_kind)kind, seed, row);
        return;
    }
    if (kind == TERN_KIND_MIXED) {
        for (size_t b = 0; b * block < n; ++b) {
            const int k = (int)((row + b * 5) % (size_t)INPUT_KIND_COUNT);
            test_input_fill(x + b * block, block, (test_input_kind)k, seed, row * 131 + b);
        }
        return;
    }
    /* tiny: subnormals up to 2.5e-39 (1/2.5e-39 > FLT_MAX), some zeros */
    test_rng r;
    test_rng_seed(&r, seed * 977 + row);
    for (size_t i = 0; i < n; ++i) {
        const float u = test_rng_uniform(&r);
        x[i] = u < 0.2f ? 0.0f : (test_rng_uniform(&r) - 0.5f) * 5e-39f;
    }
}

/* sign_only aside, an exactly-ternary row must decode to {-1,0,+1}*f16(s). */
static int ternary_exact(const tern_format *f, const float *x, const float *dec, size_t n) {
    for (size_t b = 0; b < n; b += f->block_elems) {
        float s = 0.0f;
        for (size_t j = 0; j < f->block_elems; ++j) {
            s = fabsf(x[b + j]) > s ? fabsf(x[b + j]) : s;
        }
        const float sh = anvil_fp16_to_fp32(anvil_fp32_to_fp16(s));
        for (size_t j = 0; j < f->block_elems; ++j) {
            const float v = x[b + j];
            float want;
            if (f->sign_only) {
                /* sign kept; magnitude is the block's f16 mean |x|, the same
                 * for every weight of the block */
                const float mag = fabsf(dec[b]);
                want = v >= 0.0f ? mag : -mag;
            } else {
                want = v > 0.0f ? sh : (v < 0.0f ? -sh : 0.0f);
            }
            if (!(dec[b + j] == want)) {
                return 0;
            }
        }
    }
    return 1;
}

/* The dot bound. Two float dots that differ in accumulation order (ggml's
 * SIMD builds also fuse multiply-adds) agree to a few ulps of the largest
 * intermediate, not of the result: when terms cancel, the result can be far
 * smaller than the error. ggml's AVX2 TQ kernels go further: they form
 * sum(code * q8) and the offset sum(q8) separately and subtract in float, so
 * even a dot that is exactly 0 (weights and activations on disjoint
 * elements) comes back as a rounding residue of d * sum(q8). The bound is
 * therefore 1e-5 relative to max(|a|, |b|, M), where
 *     M = sum over weight blocks of |d_w| * sum |x_j| (decoded activation),
 * the size of every intermediate either formulation touches (within the
 * factor of the largest code). The plain |a - b| / max(|a|, |b|) is
 * reported beside it. */
static double dot_magnitude(const tern_format *f, const void *w, const void *a, size_t n, tern_bufs *bf,
                            double *exact) {
    f->act_decode(a, bf->dec_ggml, n);
    f->decode(w, bf->dec_mine, n);
    double e = 0.0;
    for (size_t j = 0; j < n; ++j) {
        e += (double)bf->dec_mine[j] * (double)bf->dec_ggml[j];
    }
    *exact = e;
    double m = 0.0;
    for (size_t b = 0; b < n / f->block_elems; ++b) {
        uint16_t h;
        memcpy(&h, (const uint8_t *)w + b * f->block_bytes + f->scale_offset, sizeof h);
        double sa = 0.0;
        for (size_t j = 0; j < f->block_elems; ++j) {
            sa += fabs((double)bf->dec_ggml[b * f->block_elems + j]);
        }
        m += fabs((double)anvil_fp16_to_fp32(h)) * sa;
    }
    return m;
}

static void check_dot(const tern_format *f, const tern_oracle *o, tern_counts *c, size_t n, const void *w,
                      const void *a, tern_bufs *bf, const char *what, int verbose) {
    float mine = 0.0f, ggml = 0.0f, gen = 0.0f;
    f->dot(n, &mine, w, a);
    if (o->dot != NULL) {
        o->dot((int)n, &ggml, 0, w, 0, a, 0, 1);
        const double big = fabs((double)mine) > fabs((double)ggml) ? fabs((double)mine) : fabs((double)ggml);
        double exact = 0.0;
        const double mag = dot_magnitude(f, w, a, n, bf, &exact);
        /* whose rounding is it: both against the exact (double) dot of the
         * decoded rows, relative to M; rows whose float scales underflow
         * into subnormals (M < 1e-30) lose precision in any f32 dot and are
         * left out of this statistic */
        if (mag > 1e-30 && isfinite(mine) && isfinite(ggml)) {
            const double ea = fabs((double)mine - exact) / mag;
            const double eg = fabs((double)ggml - exact) / mag;
            c->worst_exact_mine = ea > c->worst_exact_mine ? ea : c->worst_exact_mine;
            c->worst_exact_ggml = eg > c->worst_exact_ggml ? eg : c->worst_exact_ggml;
        }
        const double diff = fabs((double)mine - (double)ggml);
        const double e_bound = diff == 0.0 ? 0.0 : diff / (big > mag ? big : mag);
        const double e_plain = diff == 0.0 ? 0.0 : diff / big;
        const int bad = !(e_bound <= DOT_REL_TOL) || isnan(mine) != isnan(ggml);
        c->dot_rows++;
        if (e_bound > c->worst_bound) {
            c->worst_bound = e_bound;
        }
        if (e_plain > DOT_REL_TOL) {
            c->plain_over++;
        }
        if (e_plain > c->worst_plain) {
            c->worst_plain = e_plain;
            c->worst_mine = mine;
            c->worst_ggml = ggml;
            c->worst_mag = mag;
        }
        if (bad) {
            c->dot_bad++;
            if (verbose || c->dot_bad <= 3) {
                fprintf(stderr, "  %s dot (%s, n=%zu): anvil %.9g ggml %.9g (M %.6g, rel %.3g)\n", f->name, what, n,
                        mine, ggml, mag, e_bound);
            }
        }
    }
    if (o->dot_generic != NULL) {
        o->dot_generic((int)n, &gen, 0, w, 0, a, 0, 1);
        c->gen_rows++;
        if (!parity_same_bits(mine, gen)) {
            c->gen_bad++;
            if (verbose || c->gen_bad <= 3) {
                fprintf(stderr, "  %s dot vs portable (%s, n=%zu): anvil %.9g ggml %.9g\n", f->name, what, n, mine,
                        gen);
            }
        }
    }
}

/* Quantize the activation with ggml (the bytes every dot is measured on) and
 * check anvil's quantizer agrees. ggml leaves an all-zero Q8_K block's bsums
 * unwritten; zeroing the buffer first makes them the zeros anvil writes. */
static void make_activation(const tern_format *f, const tern_oracle *o, tern_bufs *bf, tern_counts *c, size_t n,
                            int verbose) {
    const size_t bytes = n / f->act_block_elems * f->act_block_bytes;
    memset(bf->actq_ggml, 0, bytes);
    o->act_quantize(bf->act, bf->actq_ggml, (int64_t)n);
    memset(bf->actq_mine, 0x5A, bytes);
    f->act_quantize(bf->act, bf->actq_mine, n);
    c->act_rows++;
    const size_t at = parity_first_diff_u8(bf->actq_mine, bf->actq_ggml, bytes);
    if (at != bytes) {
        c->act_bad++;
        if (verbose || c->act_bad <= 3) {
            fprintf(stderr, "  %s activation %s differs at byte %zu (n=%zu)\n", f->name, f->act_name, at, n);
        }
    }
}

/* One crafted block: random bytes, and a scale that is either a random
 * finite f16 (for dots) or any 16-bit pattern (decode only). */
static void craft_blocks(const tern_format *f, uint8_t *dst, size_t nblocks, test_rng *r, int any_scale) {
    for (size_t b = 0; b < nblocks; ++b) {
        uint8_t *blk = dst + b * f->block_bytes;
        for (size_t j = 0; j < f->block_bytes; ++j) {
            blk[j] = (uint8_t)test_rng_u64(r);
        }
        uint16_t h = (uint16_t)test_rng_u64(r);
        if (!any_scale) {
            /* sign, exponent 1..29 (finite, normal), any mantissa */
            h = (uint16_t)((h & 0x83FFu) | ((1u + (unsigned)(test_rng_u64(r) % 29)) << 10));
        }
        memcpy(blk + f->scale_offset, &h, sizeof h);
    }
}

static void check_refusals(const tern_format *f, tern_bufs *bf, tern_counts *c) {
    char msg[256];
    const size_t n = 2 * f->block_elems;
    const float bad_values[3] = { NAN, INFINITY, -INFINITY };
    for (int v = 0; v < 3; ++v) {
        for (size_t at = 0; at < n; at += 37) {
            test_input_fill(bf->x, n, INPUT_NORMAL, 7, at);
            bf->x[at] = bad_values[v];
            msg[0] = '\0';
            const int rc = f->encode(bf->x, bf->enc_mine, n, msg, sizeof msg);
            char want[32];
            snprintf(want, sizeof want, "element %zu ", at);
            c->refuse_checks++;
            if (rc != ANVIL_E_NONFINITE || strstr(msg, want) == NULL) {
                c->refuse_bad++;
                fprintf(stderr, "  %s: non-finite at %zu gave %d '%s'\n", f->name, at, rc, msg);
            }
        }
    }
    const size_t bad_len[3] = { 1, f->block_elems - 1, f->block_elems + 32 };
    for (int k = 0; k < 3; ++k) {
        test_input_fill(bf->x, 2 * f->block_elems, INPUT_NORMAL, 7, 1);
        const int rc = f->encode(bf->x, bf->enc_mine, bad_len[k], msg, sizeof msg);
        c->refuse_checks++;
        if (rc != ANVIL_E_BLOCK_MISMATCH) {
            c->refuse_bad++;
            fprintf(stderr, "  %s: length %zu gave %d\n", f->name, bad_len[k], rc);
        }
    }
}

static int write_golden(parity_ctx *pc, const tern_format *f, const tern_oracle *o, tern_bufs *bf) {
    const size_t n = 256; /* the smallest whole-block length >= 256 for all four */
    golden_header h;
    memset(&h, 0, sizeof h);
    h.type_id = (uint32_t)f->type_id;
    h.act_type = (uint32_t)f->act_type;
    h.row_len = (uint32_t)n;
    h.row_bytes = (uint32_t)(n / f->block_elems * f->block_bytes);
    h.act_row_bytes = (uint32_t)(n / f->act_block_elems * f->act_block_bytes);
    snprintf(h.type_name, sizeof h.type_name, "%s", f->name);
    const size_t n_encoded = 3 * (size_t)INPUT_KIND_COUNT, n_crafted = 4;
    h.n_rows = (uint32_t)(n_encoded + n_crafted);

    /* The recorded dot is ggml's portable C build's (bit-identical to
     * anvil's, on any host), not the SIMD kernel of whatever CPU wrote the
     * file: that one leaves rounding residue of its own (see dot_magnitude)
     * and would pin this machine's choice of kernel into the fixture. */
    const ggml_vec_dot_fn golden_dot = o->dot_generic != NULL ? o->dot_generic : o->dot;
    test_input_fill(bf->act, n, INPUT_LLM_LIKE, 4242, 0);
    memset(bf->actq_ggml, 0, h.act_row_bytes);
    o->act_quantize(bf->act, bf->actq_ggml, (int64_t)n);

    char path[1024];
    snprintf(path, sizeof path, "%s/%s.bin", pc->golden_dir, f->name);
    FILE *fp = golden_write_begin(path, &h, bf->act, bf->actq_ggml);
    if (fp == NULL) {
        return -1;
    }
    int rc = 0;
    for (size_t r = 0; r < n_encoded && rc == 0; ++r) {
        const test_input_kind kind = (test_input_kind)(r % INPUT_KIND_COUNT);
        test_input_fill(bf->x, n, kind, 4242, r / INPUT_KIND_COUNT);
        memset(bf->enc_ggml, 0, h.row_bytes);
        o->encode(bf->x, bf->enc_ggml, (int64_t)n);
        o->decode(bf->enc_ggml, bf->dec_ggml, (int64_t)n);
        float dot = NAN;
        golden_dot((int)n, &dot, 0, bf->enc_ggml, 0, bf->actq_ggml, 0, 1);
        rc = golden_write_record(fp, &h, (uint32_t)kind, GOLDEN_REC_ENCODED, bf->x, bf->enc_ggml, bf->dec_ggml, dot);
    }
    /* decode-only rows: random code bytes with finite scales, so invalid
     * trit bytes and code 3 are pinned too */
    test_rng r;
    test_rng_seed(&r, 4242);
    memset(bf->x, 0, n * sizeof bf->x[0]);
    for (size_t k = 0; k < n_crafted && rc == 0; ++k) {
        craft_blocks(f, bf->enc_ggml, n / f->block_elems, &r, 0);
        o->decode(bf->enc_ggml, bf->dec_ggml, (int64_t)n);
        float dot = NAN;
        golden_dot((int)n, &dot, 0, bf->enc_ggml, 0, bf->actq_ggml, 0, 1);
        rc = golden_write_record(fp, &h, (uint32_t)INPUT_UNIFORM, 0, bf->x, bf->enc_ggml, bf->dec_ggml, dot);
    }
    if (golden_write_end(fp) != 0) {
        rc = -1;
    }
    if (rc != 0) {
        fprintf(stderr, "  %s: writing %s failed\n", f->name, path);
        return -1;
    }
    printf("%-8s wrote %s (%u rows)\n", f->name, path, h.n_rows);
    return 0;
}


static void parity_format(parity_ctx *pc, const tern_format *f, tern_bufs *bf) {
    char sym[96];
    tern_oracle o;
    memset(&o, 0, sizeof o);
    o.encode = ggml_oracle_from_float_ref(pc->oracle, f->type_id);
    o.decode = ggml_oracle_to_float(pc->oracle, f->type_id);
    o.act_quantize = ggml_oracle_from_float_ref(pc->oracle, f->act_type);
    if (o.act_quantize == NULL) {
        /* ggml's Q8_K type traits carry no from_float_ref */
        snprintf(sym, sizeof sym, "quantize_row_%s_ref", f->act_name);
        o.act_quantize = (ggml_from_float_fn)ggml_oracle_sym(pc->oracle, sym);
    }
    o.dot = ggml_oracle_vec_dot(pc->oracle, f->name, f->act_name);
    o.dot_generic = ggml_oracle_vec_dot_portable(pc->oracle, f->name, f->act_name);
    if (o.encode == NULL || o.decode == NULL || o.act_quantize == NULL || o.dot == NULL) {
        fprintf(stderr, "  %s: ggml lacks quantize/dequantize/vec_dot for this type\n", f->name);
        parity_report(pc, f->name, "oracle functions present", 0, 0);
        return;
    }

    tern_counts c;
    memset(&c, 0, sizeof c);
    const size_t max_blocks = TERN_MAX_ELEMS / f->block_elems;
    size_t kinds_seen[TERN_KIND_COUNT] = { 0 };
    test_rng r;
    test_rng_seed(&r, pc->seed * 31 + (uint64_t)f->type_id);

    for (size_t row = 0; row < pc->rows; ++row) {
        const int kind = (int)(row % (size_t)TERN_KIND_COUNT);
        const size_t nb = 1 + (size_t)(test_rng_u64(&r) % max_blocks);
        const size_t n = nb * f->block_elems;
        const size_t bytes = nb * f->block_bytes;
        kinds_seen[kind]++;
        fill_row(bf->x, n, f->block_elems, kind, pc->seed, row);

        /* encode */
        memset(bf->enc_ggml, 0, bytes);
        o.encode(bf->x, bf->enc_ggml, (int64_t)n);
        memset(bf->enc_mine, 0xA5, bytes);
        char msg[256] = "";
        const int rc = f->encode(bf->x, bf->enc_mine, n, msg, sizeof msg);
        c.enc_rows++;
        const size_t at = parity_first_diff_u8(bf->enc_mine, bf->enc_ggml, bytes);
        if (rc != 0 || at != bytes) {
            c.enc_bad++;
            if (pc->verbose || c.enc_bad <= 5) {
                fprintf(stderr,
                        "  %s encode row %zu (%s, n=%zu): rc %d, first diff byte %zu "
                        "(anvil %02x ggml %02x) %s\n",
                        f->name, row, kind_name(kind), n, rc, at, at < bytes ? bf->enc_mine[at] : 0,
                        at < bytes ? bf->enc_ggml[at] : 0, msg);
            }
        }

        /* decode ggml's bytes */
        o.decode(bf->enc_ggml, bf->dec_ggml, (int64_t)n);
        f->decode(bf->enc_ggml, bf->dec_mine, n);
        c.dec_rows++;
        const size_t dat = parity_first_diff_f32(bf->dec_mine, bf->dec_ggml, n);
        if (dat != n) {
            c.dec_bad++;
            if (pc->verbose || c.dec_bad <= 5) {
                fprintf(stderr, "  %s decode row %zu (%s): element %zu anvil %a ggml %a\n", f->name, row,
                        kind_name(kind), dat, bf->dec_mine[dat], bf->dec_ggml[dat]);
            }
        }

        /* exactly-ternary rows come back exactly */
        if (kind == (int)INPUT_TERNARY) {
            c.tern_rows++;
            if (!ternary_exact(f, bf->x, bf->dec_mine, n)) {
                c.tern_bad++;
                fprintf(stderr, "  %s ternary row %zu does not round-trip exactly\n", f->name, row);
            }
        }

        /* dot on ggml's activation bytes */
        const int act_kind = (int)((row * 7 + 3) % (size_t)INPUT_KIND_COUNT);
        test_input_fill(bf->act, n, (test_input_kind)act_kind, pc->seed + 1, row);
        make_activation(f, &o, bf, &c, n, pc->verbose);
        check_dot(f, &o, &c, n, bf->enc_ggml, bf->actq_ggml, bf, kind_name(kind), pc->verbose);
    }

    /* crafted blocks: every byte pattern ggml's decoder and dots accept */
    const size_t crafted = pc->rows / 4 > 16 ? pc->rows / 4 : 16;
    for (size_t k = 0; k < crafted; ++k) {
        const size_t nb = 1 + (size_t)(test_rng_u64(&r) % max_blocks);
        const size_t n = nb * f->block_elems;
        const int any_scale = (k % 2) == 0;
        craft_blocks(f, bf->enc_ggml, nb, &r, any_scale);
        o.decode(bf->enc_ggml, bf->dec_ggml, (int64_t)n);
        f->decode(bf->enc_ggml, bf->dec_mine, n);
        c.dec_rows++;
        const size_t dat = parity_first_diff_f32(bf->dec_mine, bf->dec_ggml, n);
        if (dat != n) {
            c.dec_bad++;
            if (pc->verbose || c.dec_bad <= 5) {
                fprintf(stderr, "  %s decode crafted %zu: element %zu anvil %a ggml %a\n", f->name, k, dat,
                        bf->dec_mine[dat], bf->dec_ggml[dat]);
            }
        }
        if (!any_scale) {
            test_input_fill(bf->act, n, INPUT_NORMAL, pc->seed + 2, k);
            make_activation(f, &o, bf, &c, n, pc->verbose);
            check_dot(f, &o, &c, n, bf->enc_ggml, bf->actq_ggml, bf, "crafted", pc->verbose);
        }
    }

    check_refusals(f, bf, &c);

    size_t n_kinds = 0;
    for (int k = 0; k < TERN_KIND_COUNT; ++k) {
        n_kinds += kinds_seen[k] > 0;
    }
    char what[96];
    snprintf(what, sizeof what, "encode bytes (%zu input kinds)", n_kinds);
    parity_report(pc, f->name, what, c.enc_rows, c.enc_bad + (n_kinds < 10));
    parity_report(pc, f->name, "decode bits (incl. crafted)", c.dec_rows, c.dec_bad);
    snprintf(what, sizeof what, "activation %s bytes", f->act_name);
    parity_report(pc, f->name, what, c.act_rows, c.act_bad);
    snprintf(what, sizeof what, "dot vs ggml %s (1e-5 of M)",
             pc->oracle->cpu_variant[0] ? pc->oracle->cpu_variant : "cpu");
    parity_report(pc, f->name, what, c.dot_rows, c.dot_bad);
    if (o.dot_generic != NULL) {
        parity_report(pc, f->name, "dot vs ggml portable C (bitwise)", c.gen_rows, c.gen_bad);
    } else {
        printf("%-8s (no ggml baseline x64 CPU library: bitwise dot check skipped)\n", f->name);
    }
    parity_report(pc, f->name, f->sign_only ? "ternary rows keep sign, |w|=f16(d)" : "ternary rows exact (f16 scale)",
                  c.tern_rows, c.tern_bad);
    parity_report(pc, f->name, "refusals (non-finite, bad length)", c.refuse_checks, c.refuse_bad);
    const char *variant = pc->oracle->cpu_variant[0] ? pc->oracle->cpu_variant : "cpu";
    printf("%-8s dot vs ggml %s: worst error %.3g of max(|dot|, M); plain relative error "
           "worst %.3g (anvil %.9g, ggml %.9g, M %.6g), > 1e-5 in %zu of %zu rows (cancellation)\n",
           f->name, variant, c.worst_bound, c.worst_plain, (double)c.worst_mine, (double)c.worst_ggml, c.worst_mag,
           c.plain_over, c.dot_rows);
    printf("%-8s distance from the exact dot (M > 1e-30), worst, in units of M: anvil %.3g, ggml %s %.3g\n", f->name,
           c.worst_exact_mine, variant, c.worst_exact_ggml);

    if (pc->golden_dir != NULL && write_golden(pc, f, &o, bf) != 0) {
        pc->total_failures++;
    }
}

int parity_ternary(parity_ctx *pc) {
    const size_t before = pc->total_failures;
    tern_bufs *bf = calloc(1, sizeof *bf);
    if (bf == NULL) {
        fprintf(stderr, "parity_ternary: out of memory\n");
        pc->total_failures++;
        return 1;
    }
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; ++i) {
        parity_format(pc, &formats[i], bf);
    }
    free(bf);
    return (int)(pc->total_failures - before);
}
