/* SPDX-License-Identifier: MIT */
/*
 * Parity of the k-quants (Q2_K .. Q6_K, Q8_K) against ggml itself.
 *
 * Per weight format, pc->rows rows of 256 k elements (k cycling 1..16) over
 * every input kind of tests/common/inputs.h:
 *   - encode: anvil's bytes == ggml's quantize_row_<t>_ref bytes;
 *   - decode: anvil's floats == ggml's dequantize_row_<t> floats, bitwise,
 *     both on ggml's encoding and on random block bytes;
 *   - vec_dot: anvil's scalar dot within 1e-5 relative of ggml's
 *     ggml_vec_dot_<t>_q8_K on the SAME bytes (weights and activations both
 *     from ggml), activations drawn from every input kind too. Relative to
 *     the larger of |dot| and the size of the partial sums every kernel
 *     forms (kq_dot_scale.h): where those cancel, f32 cannot do better, and
 *     ggml's own SIMD and portable dots disagree by as much. The plain
 *     |a-b|/|a| is reported beside it.
 * The activation quantizer is checked on every activation row: anvil's
 * Q8_K bytes == quantize_row_q8_K_ref's (bsums ignored where d == 0: ggml
 * leaves them unwritten on an all-zero block, anvil zeroes them).
 * With pc->golden_dir set, (re)writes tests/golden/<type>.bin.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/blocks.h"
#include "parity.h"
#include "../kquants/kq_dot_scale.h"
#include "ref/kquants.h"
#include "ref/q8_k.h"

#define KQ_MAX_BLOCKS 16
#define KQ_MAX_ELEMS (KQ_MAX_BLOCKS * ANVIL_QK_K)
#define KQ_MAX_BLOCK_BYTES 292 /* Q8_K, the largest */
#define KQ_REL_TOL 1e-5f
#define KQ_SHOW 3 /* failures printed per check */

typedef int (*kq_encode_fn)(const float *, void *, size_t, char *, size_t);
typedef void (*kq_decode_fn)(const void *, float *, size_t);
typedef void (*kq_dot_fn)(size_t, float *, const void *, const void *);

typedef struct kq_format {
    const char *name;
    uint32_t type_id;
    size_t block_bytes;
    kq_encode_fn encode;
    kq_decode_fn decode;
    kq_dot_fn dot; /* NULL for Q8_K itself */
} kq_format;

static const kq_format formats[] = {
    { "q2_K", ANVIL_TYPE_Q2_K, sizeof(anvil_block_q2_K), anvil_ref_encode_q2_K, anvil_ref_decode_q2_K,
      anvil_ref_vec_dot_q2_K_q8_K },
    { "q3_K", ANVIL_TYPE_Q3_K, sizeof(anvil_block_q3_K), anvil_ref_encode_q3_K, anvil_ref_decode_q3_K,
      anvil_ref_vec_dot_q3_K_q8_K },
    { "q4_K", ANVIL_TYPE_Q4_K, sizeof(anvil_block_q4_K), anvil_ref_encode_q4_K, anvil_ref_decode_q4_K,
      anvil_ref_vec_dot_q4_K_q8_K },
    { "q5_K", ANVIL_TYPE_Q5_K, sizeof(anvil_block_q5_K), anvil_ref_encode_q5_K, anvil_ref_decode_q5_K,
      anvil_ref_vec_dot_q5_K_q8_K },
    { "q6_K", ANVIL_TYPE_Q6_K, sizeof(anvil_block_q6_K), anvil_ref_encode_q6_K, anvil_ref_decode_q6_K,
      anvil_ref_vec_dot_q6_K_q8_K },
    { "q8_K", ANVIL_TYPE_Q8_K, sizeof(anvil_block_q8_K), anvil_ref_encode_q8_K, anvil_ref_decode_q8_K, NULL },
};

/* ggml's functions for one format. */
typedef struct kq_oracle {
    ggml_from_float_fn quantize;  /* quantize_row_<t>_ref */
    ggml_to_float_fn dequantize;  /* dequantize_row_<t> */
    ggml_vec_dot_fn dot;          /* ggml_vec_dot_<t>_q8_K (the CPU's SIMD one) */
    ggml_vec_dot_fn dot_portable; /* the same from ggml's plain x86-64 build, if any */
} kq_oracle;

static int kq_oracle_get(const ggml_oracle *o, const kq_format *f, kq_oracle *k) {
    char name[96];
    /* By name: Q8_K's type traits carry no from_float_ref. */
    snprintf(name, sizeof name, "quantize_row_%s_ref", f->name);
    k->quantize = (ggml_from_float_fn)ggml_oracle_sym(o, name);
    if (k->quantize == NULL) {
        k->quantize = ggml_oracle_from_float_ref(o, (int)f->type_id);
    }
    snprintf(name, sizeof name, "dequantize_row_%s", f->name);
    k->dequantize = (ggml_to_float_fn)ggml_oracle_sym(o, name);
    if (k->dequantize == NULL) {
        k->dequantize = ggml_oracle_to_float(o, (int)f->type_id);
    }
    k->dot = f->dot ? ggml_oracle_vec_dot(o, f->name, "q8_K") : NULL;
    k->dot_portable = f->dot ? ggml_oracle_vec_dot_portable(o, f->name, "q8_K") : NULL;
    if (k->quantize == NULL || k->dequantize == NULL || (f->dot != NULL && k->dot == NULL)) {
        fprintf(stderr, "parity kquants: ggml lacks %s for %s\n",
                k->quantize == NULL     ? "quantize_row_*_ref"
                : k->dequantize == NULL ? "dequantize_row_*"
                                        : "ggml_vec_dot_*_q8_K",
                f->name);
        return -1;
    }
    return 0;
}

/* Q8_K bytes equal, except that bsums of a block with d == 0 are ignored.
 * Returns the first differing byte offset, or n_bytes. */
static size_t q8_K_first_diff(const void *a, const void *b, size_t nblocks) {
    const anvil_block_q8_K *x = a, *y = b;
    for (size_t i = 0; i < nblocks; ++i) {
        const size_t base = i * sizeof(anvil_block_q8_K);
        const size_t head = offsetof(anvil_block_q8_K, bsums);
        size_t d = parity_first_diff_u8(&x[i], &y[i], head);
        if (d != head) {
            return base + d;
        }
        if (x[i].d != 0.0f || y[i].d != 0.0f) {
            d = parity_first_diff_u8(x[i].bsums, y[i].bsums, sizeof x[i].bsums);
            if (d != sizeof x[i].bsums) {
                return base + head + d;
            }
        }
    }
    return nblocks * sizeof(anvil_block_q8_K);
}

/* Running tallies of one check. */
typedef struct tally {
    size_t checked, bad;
} tally;

static void tally_add(tally *t, int ok) {
    t->checked++;
    t->bad += ok ? 0 : 1;
}

/* Called after a failure: print the first few (more with --verbose). */
static int tally_show(const tally *t, int verbose) { return t->bad <= (verbose ? 20u : (size_t)KQ_SHOW); }

/* Fill `bytes` with random block bytes (any f16 pattern, NaN and Inf too):
 * decoders must be total and still agree bit for bit. */
static void random_bytes(test_rng *r, uint8_t *bytes, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        bytes[i] = (uint8_t)(test_rng_u64(r) >> 56);
    }
}

/* ggml's Q8_K quantization of an activation row into a zeroed buffer (so
 * bsums ggml leaves unwritten are deterministic zeros, as anvil's). */
static void ggml_quantize_act(const kq_oracle *q8, const float *x, void *dst, size_t n) {
    memset(dst, 0, n / ANVIL_QK_K * sizeof(anvil_block_q8_K));
    q8->quantize(x, dst, (int64_t)n);
}

static int write_golden(parity_ctx *pc, const kq_format *f, const kq_oracle *k, const kq_oracle *q8) {
    enum { ROWS_PER_KIND = 3 };
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.bin", pc->golden_dir, f->name);
    float act[ANVIL_QK_K], in[ANVIL_QK_K], dec[ANVIL_QK_K];
    anvil_block_q8_K act_q;
    uint8_t enc[KQ_MAX_BLOCK_BYTES];
    test_input_fill(act, ANVIL_QK_K, INPUT_LLM_LIKE, pc->seed + 7, 0);
    ggml_quantize_act(q8, act, &act_q, ANVIL_QK_K);
    golden_header h;
    memset(&h, 0, sizeof h);
    h.type_id = f->type_id;
    h.act_type = ANVIL_TYPE_Q8_K;
    h.row_len = ANVIL_QK_K;
    h.n_rows = INPUT_KIND_COUNT * ROWS_PER_KIND;
    h.row_bytes = (uint32_t)f->block_bytes;
    h.act_row_bytes = sizeof act_q;
    snprintf(h.type_name, sizeof h.type_name, "%s", f->name);
    FILE *fp = golden_write_begin(path, &h, act, &act_q);
    if (fp == NULL) {
        return -1;
    }
    int rc = 0;
    for (uint32_t kind = 0; kind < INPUT_KIND_COUNT && rc == 0; ++kind) {
        for (uint64_t r = 0; r < ROWS_PER_KIND && rc == 0; ++r) {
            test_input_fill(in, ANVIL_QK_K, (test_input_kind)kind, pc->seed + 1000, r);
            memset(enc, 0, sizeof enc);
            k->quantize(in, enc, ANVIL_QK_K);
            k->dequantize(enc, dec, ANVIL_QK_K);
            float dot = NAN;
            if (k->dot != NULL) {
                k->dot(ANVIL_QK_K, &dot, 0, enc, 0, &act_q, 0, 1);
            }
            rc = golden_write_record(fp, &h, kind, GOLDEN_REC_ENCODED, in, enc, dec, dot);
        }
    }
    if (golden_write_end(fp) != 0 || rc != 0) {
        fprintf(stderr, "parity kquants: writing %s failed\n", path);
        return -1;
    }
    printf("%-8s golden written: %s (%u rows)\n", f->name, path, h.n_rows);
    return 0;
}

/* One weight format (or Q8_K itself, which has no dot). */
static void check_format(parity_ctx *pc, const kq_format *f, const kq_oracle *k, const kq_oracle *q8,
                         tally *act_tally) {
    static float x[KQ_MAX_ELEMS], a[KQ_MAX_ELEMS];
    static float dec_ggml[KQ_MAX_ELEMS], dec_anvil[KQ_MAX_ELEMS];
    static uint8_t enc_ggml[KQ_MAX_BLOCKS * KQ_MAX_BLOCK_BYTES];
    static uint8_t enc_anvil[KQ_MAX_BLOCKS * KQ_MAX_BLOCK_BYTES];
    static uint8_t junk[KQ_MAX_BLOCKS * KQ_MAX_BLOCK_BYTES];
    static anvil_block_q8_K act_ggml[KQ_MAX_BLOCKS], act_anvil[KQ_MAX_BLOCKS];
    const int is_q8 = f->dot == NULL;
    tally enc = { 0 }, dec = { 0 }, dec_rand = { 0 }, dot = { 0 }, quant = { 0 };
    double worst_rel = 0.0, worst_rel_terms = 0.0, min_cancel = INFINITY;
    size_t worst_row = 0, cancelled = 0;
    size_t gen_checked = 0, gen_same = 0;
    double worst_rel_gen = 0.0;
    size_t kinds_seen[INPUT_KIND_COUNT] = { 0 };
    test_rng rng;
    test_rng_seed(&rng, pc->seed * 31 + f->type_id);

    for (size_t r = 0; r < pc->rows; ++r) {
        const test_input_kind kind = (test_input_kind)(r % INPUT_KIND_COUNT);
        const size_t nblocks = 1 + (r / INPUT_KIND_COUNT) % KQ_MAX_BLOCKS;
        const size_t n = nblocks * ANVIL_QK_K;
        const size_t nbytes = nblocks * f->block_bytes;
        kinds_seen[kind]++;
        test_input_fill(x, n, kind, pc->seed + f->type_id, r);

        /* encode: ggml into zeros, anvil into a pattern, so a byte anvil
         * forgets to write shows up. */
        memset(enc_ggml, 0, nbytes);
        memset(enc_anvil, 0xA5, nbytes);
        k->quantize(x, enc_ggml, (int64_t)n);
        char msg[256];
        const int rc = f->encode(x, enc_anvil, n, msg, sizeof msg);
        size_t diff = rc != 0 ? 0
                      : is_q8 ? q8_K_first_diff(enc_anvil, enc_ggml, nblocks)
                              : parity_first_diff_u8(enc_anvil, enc_ggml, nbytes);
        tally_add(&enc, rc == 0 && diff == nbytes);
        if (!(rc == 0 && diff == nbytes) && tally_show(&enc, pc->verbose)) {
            printf("  %s encode row %zu (%s, %zu blocks): %s byte %zu (block %zu +%zu): "
                   "anvil %02x ggml %02x\n",
                   f->name, r, test_input_kind_name(kind), nblocks, rc != 0 ? msg : "", diff, diff / f->block_bytes,
                   diff % f->block_bytes, diff < nbytes ? enc_anvil[diff] : 0, diff < nbytes ? enc_ggml[diff] : 0);
        }
        if (is_q8) {
            /* The activation quantizer (no checks) must agree too. */
            memset(enc_anvil, 0xA5, nbytes);
            anvil_ref_quantize_q8_K(x, enc_anvil, n);
            diff = q8_K_first_diff(enc_anvil, enc_ggml, nblocks);
            tally_add(&quant, diff == nbytes);
            if (diff != nbytes && tally_show(&quant, pc->verbose)) {
                printf("  q8_K quantize row %zu (%s): byte %zu differs\n", r, test_input_kind_name(kind), diff);
            }
        }

        /* decode ggml's bytes both ways, bitwise. */
        k->dequantize(enc_ggml, dec_ggml, (int64_t)n);
        f->decode(enc_ggml, dec_anvil, n);
        size_t fd = parity_first_diff_f32(dec_anvil, dec_ggml, n);
        tally_add(&dec, fd == n);
        if (fd != n && tally_show(&dec, pc->verbose)) {
            printf("  %s decode row %zu (%s): element %zu anvil %a ggml %a\n", f->name, r, test_input_kind_name(kind),
                   fd, dec_anvil[fd], dec_ggml[fd]);
        }

        /* decode random bytes. */
        random_bytes(&rng, junk, nbytes);
        k->dequantize(junk, dec_ggml, (int64_t)n);
        f->decode(junk, dec_anvil, n);
        fd = parity_first_diff_f32(dec_anvil, dec_ggml, n);
        tally_add(&dec_rand, fd == n);
        if (fd != n && tally_show(&dec_rand, pc->verbose)) {
            printf("  %s decode random row %zu: element %zu anvil %a ggml %a\n", f->name, r, fd, dec_anvil[fd],
                   dec_ggml[fd]);
        }

        if (is_q8) {
            continue;
        }

        /* An activation row of another kind, quantized by ggml and by anvil. */
        const test_input_kind akind = (test_input_kind)((r * 7 + 5) % INPUT_KIND_COUNT);
        test_input_fill(a, n, akind, pc->seed + 100 + f->type_id, r);
        ggml_quantize_act(q8, a, act_ggml, n);
        memset(act_anvil, 0xA5, nblocks * sizeof act_anvil[0]);
        anvil_ref_quantize_q8_K(a, act_anvil, n);
        diff = q8_K_first_diff(act_anvil, act_ggml, nblocks);
        tally_add(act_tally, diff == nblocks * sizeof(anvil_block_q8_K));
        if (diff != nblocks * sizeof(anvil_block_q8_K) && tally_show(act_tally, pc->verbose)) {
            printf("  q8_K activation row %zu (%s): byte %zu differs\n", r, test_input_kind_name(akind), diff);
        }

        /* vec_dot on the same bytes. */
        float s_ggml = NAN, s_anvil = NAN;
        k->dot((int)n, &s_ggml, 0, enc_ggml, 0, act_ggml, 0, 1);
        f->dot(n, &s_anvil, enc_ggml, act_ggml);
        const double scale = kq_dot_term_scale(f->type_id, enc_ggml, act_ggml, nblocks);
        const double m = fmax(fabs((double)s_ggml), fabs((double)s_anvil));
        const double err = fabs((double)s_ggml - (double)s_anvil);
        const int ok = kq_dot_close(s_anvil, s_ggml, scale, KQ_REL_TOL);
        tally_add(&dot, ok);
        const double rel = m > 0 ? err / m : (err == 0 ? 0.0 : INFINITY);
        const double rel_terms = fmax(m, scale) > 0 ? err / fmax(m, scale) : rel;
        if (rel > worst_rel) {
            worst_rel = rel;
            worst_row = r;
        }
        if (rel_terms > worst_rel_terms) {
            worst_rel_terms = rel_terms;
        }
        if (rel > KQ_REL_TOL) {
            cancelled++;
            if (m > 0 && scale / m < min_cancel) {
                min_cancel = scale / m;
            }
        }
        if (k->dot_portable != NULL) {
            float s_gen = NAN;
            k->dot_portable((int)n, &s_gen, 0, enc_ggml, 0, act_ggml, 0, 1);
            gen_same += parity_same_bits(s_gen, s_anvil);
            gen_checked++;
            const double eg = fabs((double)s_gen - (double)s_anvil);
            const double mg = fmax(fabs((double)s_gen), fabs((double)s_anvil));
            if (mg > 0 && eg / mg > worst_rel_gen) {
                worst_rel_gen = eg / mg;
            }
        }
        if (!ok && tally_show(&dot, pc->verbose)) {
            printf("  %s dot row %zu (%s x %s, %zu blocks): anvil %.9g ggml %.9g rel %.3g "
                   "(sum of |terms| %.6g)\n",
                   f->name, r, test_input_kind_name(kind), test_input_kind_name(akind), nblocks, s_anvil, s_ggml, rel,
                   scale);
        }
    }

    size_t kinds = 0;
    for (int i = 0; i < INPUT_KIND_COUNT; ++i) {
        kinds += kinds_seen[i] > 0;
    }
    char what[64];
    snprintf(what, sizeof what, "encode bytes (%zu kinds)", kinds);
    parity_report(pc, f->name, what, enc.checked, enc.bad);
    if (is_q8) {
        parity_report(pc, f->name, "activation quantizer bytes", quant.checked, quant.bad);
    }
    parity_report(pc, f->name, "decode bits (encoded)", dec.checked, dec.bad);
    parity_report(pc, f->name, "decode bits (random bytes)", dec_rand.checked, dec_rand.bad);
    if (!is_q8) {
        snprintf(what, sizeof what, "vec_dot within 1e-5 (worst %.2e)", worst_rel_terms);
        parity_report(pc, f->name, what, dot.checked, dot.bad);
        printf("         plain |a-b|/|a| worst %.2e (row %zu); %zu rows above 1e-5, all with "
               "sum|terms|/|dot| >= %.3g (cancellation)\n",
               worst_rel, worst_row, cancelled, cancelled ? min_cancel : 0.0);
        if (gen_checked > 0) {
            printf("         info: vs ggml's portable C dot (libggml-cpu-x64): %zu/%zu "
                   "bit-identical, worst |a-b|/|a| %.2e\n",
                   gen_same, gen_checked, worst_rel_gen);
        }
    }
}

int parity_kquants(parity_ctx *pc) {
    const size_t before = pc->total_failures;
    kq_oracle oracles[sizeof formats / sizeof formats[0]];
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; ++i) {
        if (kq_oracle_get(pc->oracle, &formats[i], &oracles[i]) != 0) {
            parity_report(pc, formats[i].name, "ggml functions found", 0, 1);
            return (int)(pc->total_failures - before);
        }
    }
    const kq_oracle *q8 = &oracles[sizeof formats / sizeof formats[0] - 1];
    tally act = { 0 };
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; ++i) {
        check_format(pc, &formats[i], &oracles[i], q8, &act);
        if (pc->golden_dir != NULL && write_golden(pc, &formats[i], &oracles[i], q8) != 0) {
            parity_report(pc, formats[i].name, "golden written", 0, 1);
        }
    }
    parity_report(pc, "q8_K", "activation rows (dot inputs)", act.checked, act.bad);
    return (int)(pc->total_failures - before);
}
