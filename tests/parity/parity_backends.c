/* SPDX-License-Identifier: MIT */
/*
 * Parity family "backends": the SIMD backends' own kernels against ggml's
 * ggml_vec_dot_* on ggml's bytes.
 *
 * For every backend plugin built here (backend-avx2, backend-avx512 and,
 * on x86-64 with tests, backend-avx512-emu: the AVX-512 kernel sources
 * through SIMDe) that can run on this CPU, and for each of its
 * instruction-set variants (AVX-512: with and without VNNI, as init()
 * selects them from the CPU features), for each format it has a kernel for:
 *
 *   quantize  the backend's activation quantizer == ggml's
 *             quantize_row_<act>_ref, byte for byte;
 *             (Q8_K: bsums of an all-zero block aside, which ggml leaves
 *             unwritten);
 *   vec_dot   the backend's vec_dot on ggml-encoded weights and ggml's
 *             activation against ggml's portable ggml_vec_dot_<w>_<act>
 *             (libggml-cpu-x64.so): bit for bit for the formats whose
 *             reference is bit-identical to ggml's C (the q8_0 family,
 *             ternary, IQ4_NL, MXFP4); within 1e-5 of the size of the
 *             partial sums for the k-quants (ggml's x64 build sums those in
 *             another order: tests/kquants/kq_dot_scale.h) and IQ4_XS (whose
 *             SIMD kernels fold per-block floats); and, for information,
 *             the largest difference from ggml's best SIMD variant here.
 *   encode    (ABI 1.1) each weight encoder the backend offers against
 *             ggml_quantize_chunk without an importance matrix (what
 *             llama-quantize calls: quantize_row_<w>_ref, IQ4_NL's search),
 *             byte for byte, on every input kind, rows of 1 to 16
 *             super-blocks passed several per call; the encoders that take
 *             an importance matrix also with six kinds of matrix. The encoders are one
 *             build for all of a backend's kernel variants (checked: the
 *             same function for each), so they are compared once per
 *             backend build, under their own variant name.
 *
 * backend-scalar is here for its encoders only: those of the portable
 * vector layer (variant "portable", the shared SIMD encoder sources on
 * generic vectors). Its kernels and its other encoders are plugins/ref's,
 * compared with ggml by the formats' own families.
 *
 * A backend that cannot run on this CPU is listed as skipped, with the
 * reason its score gives.
 *
 * Two families, so that make test's two parity processes share the work
 * (scripts/parity-split.sh): "backends" is backend-avx512 (and its
 * emulation), "backends_avx2" backend-avx2 and backend-scalar's portable
 * encoders.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/anvil.h"
#include "anvil/backend.h"
#include "imatrix_kinds.h"
#include "parity.h"
#include "../kquants/kq_dot_scale.h"
#include "ref/q8_0_family.h"
#include "ref/q8_k.h"

#define MAX_BLOCKS 16 /* per row: up to 16 x 256 elements */

typedef struct backend_build {
    const char *path;
    int variants;            /* 2: plain and VNNI (AVX-512) */
    const char *encoders_of; /* compare only the encoders of this variant, and no kernels; NULL: all */
} backend_build;

static const backend_build builds_avx512[] = {
    { ANVIL_PLUGIN_DIR "/backend-avx512.so", 2, NULL },
#ifdef ANVIL_AVX512_EMU_PLUGIN
    { ANVIL_AVX512_EMU_PLUGIN, 2, NULL },
#endif
};
static const backend_build builds_avx2[] = {
    { ANVIL_PLUGIN_DIR "/backend-avx2.so", 1, NULL },
    { ANVIL_PLUGIN_DIR "/backend-scalar.so", 1, "portable" },
};

static const anvil_act_quantizer *find_quantizer(const anvil_backend *b, uint32_t type) {
    for (size_t i = 0; i < b->n_quantizers; ++i) {
        if (b->quantizers[i]->act_type == type) return b->quantizers[i];
    }
    return NULL;
}

static void (*act_decoder(uint32_t type))(const void *, float *, size_t) {
    switch (type) {
    case ANVIL_TYPE_Q8_0: return anvil_ref_decode_q8_0;
    case ANVIL_TYPE_Q8_1: return anvil_ref_decode_q8_1;
    case ANVIL_TYPE_Q8_K: return anvil_ref_decode_q8_K;
    default: return NULL;
    }
}

/* Activation bytes equal; for Q8_K the bsums of a block with d == 0 are
 * not compared (ggml does not write them). */
static int same_act(uint32_t type, const uint8_t *g, const uint8_t *b, size_t bytes, size_t bb) {
    if (type != ANVIL_TYPE_Q8_K) return memcmp(g, b, bytes) == 0;
    for (size_t off = 0; off < bytes; off += bb) {
        float d;
        memcpy(&d, g + off, sizeof d);
        const size_t cmp = d == 0.0f ? offsetof(anvil_block_q8_K, bsums) : bb;
        if (memcmp(g + off, b + off, cmp) != 0) return 0;
    }
    return 1;
}

/* One kernel against ggml; returns the failures. */
static size_t check_kernel(parity_ctx *pc, const anvil_backend *b, const anvil_kernel *k) {
    anvil_type_info wt, at;
    anvil_error err;
    if (anvil_type_builtin(k->weight_type, &wt, &err) != ANVIL_OK ||
        anvil_type_builtin(k->act_type, &at, &err) != ANVIL_OK) {
        return 0; /* a plugin-defined type: ggml has no dot for it */
    }
    const ggml_vec_dot_fn g_portable = ggml_oracle_vec_dot_portable(pc->oracle, wt.name, at.name);
    const ggml_vec_dot_fn g_best = ggml_oracle_vec_dot(pc->oracle, wt.name, at.name);
    /* quantize_row_iq3_xxs_ref needs ggml's grid tables: without this,
     * `--family backends` alone aborts inside ggml (the full run had them
     * from an earlier family) */
    if (pc->oracle->quantize_init != NULL) pc->oracle->quantize_init((int)wt.id);
    const ggml_from_float_fn g_wenc = ggml_oracle_quantize_ref(pc->oracle, (int)wt.id, wt.name);
    const ggml_from_float_fn g_aenc = ggml_oracle_quantize_ref(pc->oracle, (int)at.id, at.name);
    const ggml_to_float_fn g_wdec = ggml_oracle_to_float(pc->oracle, (int)wt.id);
    /* ggml has no dequantize_row for Q8_1 and Q8_K: anvil's reference
     * decoders (checked bit for bit against ggml's Q8_0 one) size the terms */
    void (*const g_adec)(const void *, float *, size_t) = act_decoder(at.id);
    const anvil_act_quantizer *q = find_quantizer(b, k->act_type);
    char what[96];
    if (g_portable == NULL || g_wenc == NULL || g_aenc == NULL || g_wdec == NULL || g_adec == NULL || q == NULL) {
        printf("%-8s %s: not compared (ggml lacks a reference encoder, decoder or dot for it)\n", wt.name,
               k->variant);
        return 0;
    }
    const int kquant = k->weight_type == ANVIL_TYPE_Q2_K || k->weight_type == ANVIL_TYPE_Q3_K ||
                       k->weight_type == ANVIL_TYPE_Q4_K || k->weight_type == ANVIL_TYPE_Q5_K ||
                       k->weight_type == ANVIL_TYPE_Q6_K;
    const int bit_exact = !kquant && k->weight_type != ANVIL_TYPE_IQ4_XS;
    const size_t max_n = MAX_BLOCKS * 256;
    float *x = malloc(max_n * sizeof(float)), *xa = malloc(max_n * sizeof(float));
    float *wd = malloc(max_n * sizeof(float)), *ad = malloc(max_n * sizeof(float));
    uint8_t *w = malloc(max_n / wt.block_elems * wt.block_bytes + 64);
    uint8_t *a_g = malloc(max_n / at.block_elems * at.block_bytes + 64);
    uint8_t *a_b = malloc(max_n / at.block_elems * at.block_bytes + 64);
    size_t rows = 0, q_bad = 0, dot_bad = 0;
    double worst_best = 0;
    if (!x || !xa || !wd || !ad || !w || !a_g || !a_b) {
        fprintf(stderr, "parity backends: out of memory\n");
        rows = 0;
        dot_bad = 1;
        goto done;
    }
    const size_t unit = wt.block_elems > at.block_elems ? wt.block_elems : at.block_elems;
    for (size_t row = 0; row < pc->rows; ++row) {
        const size_t n = unit * (1 + row % (max_n / unit));
        test_input_fill(x, n, (test_input_kind)(row % INPUT_KIND_COUNT), pc->seed + wt.id, row);
        test_input_fill(xa, n, (test_input_kind)((row * 7 + 3) % INPUT_KIND_COUNT), pc->seed + 977u, row);
        g_wenc(x, w, (int64_t)n);
        g_aenc(xa, a_g, (int64_t)n);
        q->quantize(xa, a_b, n);
        const size_t abytes = n / at.block_elems * at.block_bytes;
        if (!same_act(at.id, a_g, a_b, abytes, at.block_bytes)) {
            if (q_bad++ == 0) printf("  %s %s: activation row %zu differs from ggml's\n", wt.name, q->variant, row);
        }
        float v = 0, gp = 0, gb = 0;
        k->vec_dot(n, &v, w, a_g);
        g_portable((int)n, &gp, 0, w, 0, a_g, 0, 1);
        if (g_best != NULL) g_best((int)n, &gb, 0, w, 0, a_g, 0, 1);
        g_wdec(w, wd, (int64_t)n);
        g_adec(a_g, ad, n);
        double mag = 0;
        for (size_t j = 0; j < n; ++j) mag += fabs((double)wd[j] * ad[j]);
        int ok;
        if (bit_exact) {
            ok = parity_same_bits(v, gp) || (isnan(v) && isnan(gp));
        } else if (kquant) {
            ok = kq_dot_close(v, gp, kq_dot_term_scale(wt.id, w, a_g, n / 256), 1e-5);
        } else {
            ok = fabs((double)v - gp) <= 1e-5 * mag;
        }
        if (!ok && dot_bad++ == 0) {
            printf("  %s %s: row %zu (n=%zu): %.9g vs ggml %.9g\n", wt.name, k->variant, row, n, (double)v,
                   (double)gp);
        }
        if (g_best != NULL && mag > 0 && isfinite(v) && isfinite(gb)) {
            const double d = fabs((double)v - gb) / mag;
            if (d > worst_best) worst_best = d;
        }
        rows++;
    }
    snprintf(what, sizeof what, "%s act quantize == ggml ref", q->variant);
    parity_report(pc, wt.name, what, rows, q_bad);
    snprintf(what, sizeof what, "%s vec_dot %s ggml C", k->variant, bit_exact ? "bits ==" : "1e-5 of");
    parity_report(pc, wt.name, what, rows, dot_bad);
    if (g_best != NULL) {
        printf(
            "%-8s %s vs ggml %s: largest difference %.2g of sum |w*a| (info; Q4_1/Q5_1 min terms are not in that sum)\n",
            wt.name, k->variant, pc->oracle->cpu_variant, worst_best);
    }
done:
    free(x);
    free(xa);
    free(wd);
    free(ad);
    free(w);
    free(a_g);
    free(a_b);
    return q_bad + dot_bad;
}

/* One weight encoder against ggml_quantize_chunk; returns the failures. */
static size_t check_encoder(parity_ctx *pc, const anvil_weight_encoder *e) {
    anvil_type_info t;
    anvil_error err;
    if (anvil_type_builtin(e->type_id, &t, &err) != ANVIL_OK) return 0; /* plugin-defined type */
    if (pc->oracle->quantize_chunk == NULL) {
        printf("%-8s %s encode: not compared (ggml_quantize_chunk missing)\n", t.name, e->variant);
        return 0;
    }
    if (pc->oracle->quantize_init != NULL) pc->oracle->quantize_init((int)t.id);
    /* ggml_quantize_chunk takes weight formats only: the activation
     * formats are compared with their quantize_row_*_ref */
    const int activation = t.id == ANVIL_TYPE_Q8_1 || t.id == ANVIL_TYPE_Q8_K;
    const ggml_from_float_fn row_ref = activation ? ggml_oracle_quantize_ref(pc->oracle, (int)t.id, t.name) : NULL;
    if (activation && row_ref == NULL) {
        printf("%-8s %s encode: not compared (ggml has no quantize_row_%s_ref)\n", t.name, e->variant, t.name);
        return 0;
    }
    const size_t unit = t.block_elems > 256 ? t.block_elems : 256; /* whole blocks and super-blocks */
    const size_t max_rows = 3, max_n = MAX_BLOCKS * unit;
    const size_t max_bytes = max_rows * (max_n / t.block_elems * t.block_bytes);
    float *x = malloc(max_rows * max_n * sizeof(float));
    uint8_t *g = malloc(max_bytes + 64), *a = malloc(max_bytes + 64);
    size_t rows = 0, bad = 0;
    if (x == NULL || g == NULL || a == NULL) {
        free(x);
        free(g);
        free(a);
        fprintf(stderr, "parity backends: out of memory\n");
        return 1;
    }
    for (size_t call = 0; rows < pc->rows; ++call) {
        const size_t n = unit * (1 + call % MAX_BLOCKS);
        const size_t nrows = 1 + call % max_rows;
        const size_t rb = n / t.block_elems * t.block_bytes;
        for (size_t r = 0; r < nrows; ++r) {
            test_input_fill(x + r * n, n, (test_input_kind)((rows + r) % INPUT_KIND_COUNT), pc->seed + 31u * t.id,
                            rows + r);
        }
        if (row_ref != NULL) {
            for (size_t r = 0; r < nrows; ++r) row_ref(x + r * n, g + r * rb, (int64_t)n);
        } else {
            pc->oracle->quantize_chunk((int)t.id, x, g, 0, (int64_t)nrows, (int64_t)n, NULL);
        }
        char msg[512] = "";
        const int rc = e->encode_rows(x, a, nrows, n, NULL, msg, sizeof msg);
        for (size_t r = 0; r < nrows; ++r) {
            if (rc != ANVIL_OK || memcmp(g + r * rb, a + r * rb, rb) != 0) {
                if (bad++ == 0) {
                    printf("  %s %s encode: row %zu (%s, n=%zu) differs from ggml's%s%s\n", t.name, e->variant,
                           rows + r, test_input_kind_name((test_input_kind)((rows + r) % INPUT_KIND_COUNT)), n,
                           rc != ANVIL_OK ? ": " : "", rc != ANVIL_OK ? msg : "");
                }
            }
        }
        rows += nrows;
    }
    char what[96];
    snprintf(what, sizeof what, "%s encode == ggml%s", e->variant, row_ref ? " row ref" : "");
    parity_report(pc, t.name, what, rows, bad);
    if (e->flags & ANVIL_ENCODER_WEIGHTED) {
        /* with importance matrices of every kind: ggml_quantize_chunk's weighted bytes */
        float *imx = malloc(max_n * sizeof(float));
        size_t wrows = 0, wbad = 0;
        for (size_t call = 0; imx != NULL && wrows < pc->rows; ++call) {
            const size_t n = unit * (1 + call % MAX_BLOCKS);
            const size_t nrows = 1 + call % max_rows;
            const size_t rb = n / t.block_elems * t.block_bytes;
            const test_imatrix_kind kind = (test_imatrix_kind)(call % TEST_IMX_KIND_COUNT);
            test_imatrix_fill(imx, n, kind, pc->seed + call);
            for (size_t r = 0; r < nrows; ++r) {
                test_input_fill(x + r * n, n, (test_input_kind)((wrows + r) % INPUT_KIND_COUNT),
                                pc->seed + 37u * t.id, wrows + r);
            }
            pc->oracle->quantize_chunk((int)t.id, x, g, 0, (int64_t)nrows, (int64_t)n, imx);
            char msg[512] = "";
            const int rc = e->encode_rows(x, a, nrows, n, imx, msg, sizeof msg);
            for (size_t r = 0; r < nrows; ++r) {
                if (rc != ANVIL_OK || memcmp(g + r * rb, a + r * rb, rb) != 0) {
                    if (wbad++ == 0) {
                        printf("  %s %s weighted encode (%s): row %zu (n=%zu) differs from ggml's\n", t.name,
                               e->variant, test_imatrix_kind_name(kind), wrows + r, n);
                    }
                }
            }
            wrows += nrows;
        }
        snprintf(what, sizeof what, "%s encode imatrix == ggml", e->variant);
        parity_report(pc, t.name, what, wrows, wbad);
        bad += wbad + (imx == NULL);
        free(imx);
    }
    free(x);
    free(g);
    free(a);
    return bad;
}

static int check_builds(parity_ctx *pc, const backend_build *builds, size_t n_builds) {
    if (pc->oracle->portable == NULL) {
        printf("backends: ggml's portable CPU build (libggml-cpu-x64.so) not found: nothing to compare\n");
        return 1;
    }
    anvil_ctx *ctx = NULL;
    anvil_error err;
    if (anvil_ctx_open(&ctx, NULL, &err) != ANVIL_OK) {
        printf("backends: cannot open an anvil context: %s\n", err.message);
        return 1;
    }
    const anvil_cpu_info probe = *anvil_ctx_cpu(ctx);
    anvil_ctx_close(ctx);
    size_t failures = 0, checked_backends = 0;
    for (size_t i = 0; i < n_builds; ++i) {
        void *h = dlopen(builds[i].path, RTLD_NOW | RTLD_LOCAL);
        if (h == NULL) {
            printf("backends: %s not built here\n", builds[i].path);
            continue;
        }
        anvil_plugin_entry_fn entry = (anvil_plugin_entry_fn)dlsym(h, ANVIL_PLUGIN_ENTRY_SYMBOL);
        const anvil_plugin_desc *desc = entry ? entry(ANVIL_ABI_MAJOR, ANVIL_ABI_MINOR) : NULL;
        if (desc == NULL || desc->n_backends != 1) {
            printf("backends: %s: no backend descriptor\n", builds[i].path);
            failures++;
            dlclose(h);
            continue;
        }
        for (int v = 0; v < builds[i].variants; ++v) {
            static anvil_cpu_info cpu; /* must outlive init: the plugin may keep it */
            cpu = probe;
            cpu.features = cpu.features_raw;
            if (builds[i].variants == 2) {
                if (v == 0) {
                    cpu.features &= ~(uint64_t)ANVIL_CPU_AVX512VNNI;
                } else {
                    cpu.features |= ANVIL_CPU_AVX512VNNI;
                }
            }
            anvil_host_services services = { 0 };
            services.struct_size = sizeof services;
            services.abi_major = ANVIL_ABI_MAJOR;
            services.abi_minor = ANVIL_ABI_MINOR;
            services.cpu = &cpu;
            char why[256] = "";
            if (desc->init != NULL && desc->init(&services, why, sizeof why) != ANVIL_OK) {
                printf("backends: %s: init failed: %s\n", desc->id, why);
                failures++;
                break;
            }
            const anvil_backend *b = desc->backends[0];
            /* the VNNI variant needs the instructions, unless emulated */
            const int emulated = strstr(desc->id, "-emu") != NULL;
            if (b->score(&cpu, why, sizeof why) == 0 ||
                (v == 1 && !emulated && !(probe.features_raw & ANVIL_CPU_AVX512VNNI))) {
                printf("backends: %s%s skipped on this CPU: %s\n", desc->id, v == 1 ? " (vnni)" : "",
                       v == 1 && b->score(&cpu, why, sizeof why) > 0 ? "no avx512vnni" : why);
                continue;
            }
            const char *only = builds[i].encoders_of;
            checked_backends += only == NULL;
            for (size_t kk = 0; only == NULL && kk < b->n_kernels; ++kk)
                failures += check_kernel(pc, b, b->kernels[kk]);
            /* Encoders: one build for every kernel variant -- compared once;
             * a later variant must offer the very same functions. */
            const size_t n_enc = ANVIL_HAS_FIELD(b, anvil_backend, encoders) ? b->n_encoders : 0;
            static anvil_encode_rows_fn first_fns[64];
            for (size_t ei = 0; ei < n_enc && ei < 64; ++ei) {
                const anvil_weight_encoder *e = b->encoders[ei];
                if (only != NULL && strcmp(e->variant, only) != 0) continue;
                if (v == 0) {
                    first_fns[ei] = e->encode_rows;
                    failures += check_encoder(pc, e);
                } else if (first_fns[ei] != e->encode_rows) {
                    printf("backends: %s: variant %d's %u encoder is not the plain variant's\n", desc->id, v,
                           e->type_id);
                    failures++;
                }
            }
        }
        if (desc->deinit != NULL) desc->deinit();
        /* not dlclose'd: the kernels' tables stay valid for the run */
    }
    if (checked_backends == 0) {
        printf("backends: no SIMD backend runs on this CPU\n");
    }
    return (int)failures;
}

int parity_backends(parity_ctx *pc) {
    return check_builds(pc, builds_avx512, sizeof builds_avx512 / sizeof builds_avx512[0]);
}

int parity_backends_avx2(parity_ctx *pc) {
    return check_builds(pc, builds_avx2, sizeof builds_avx2 / sizeof builds_avx2[0]);
}
