/* SPDX-License-Identifier: MIT */
/*
 * Transcode parity against ggml (the npm oracle): a model is transcoded by
 * anvil to every format anvil can encode, then checked tensor by tensor:
 *
 *   bytes     every converted tensor equals ggml_quantize_chunk (what
 *             llama-quantize calls, no importance matrix) over the same
 *             source rows decoded by ggml's own to_float; every kept tensor
 *             equals its source bytes;
 *   accepted  ggml's gguf_init_from_file loads the output with the same
 *             tensor types and offsets as anvil's reader, and
 *             general.file_type / general.quantization_version as
 *             llama-quantize writes them.
 *
 * Sources: a synthetic model whose rows cycle through every input kind
 * (F16, BF16 and F32 matrices, 3-D experts, a quantized Q8_0 expert tensor
 * requantized through --experts-dtype, a norm, rows that fit no 256 block),
 * and the real stories260K model when ../shared/testdata has it. Then a
 * speed table: anvil's streaming transcode at 1 and all threads against
 * ggml_quantize_chunk on one thread, on the same tensors.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "anvil/gguf.h"
#include "anvil/transcode.h"
#include "parity.h"

#include <sys/stat.h>

#ifndef ANVIL_SHARED_TESTDATA
#define ANVIL_SHARED_TESTDATA ""
#endif

static const char *shared_path(const char *name, char *buf, size_t size) {
    struct stat st;
    snprintf(buf, size, "%s/%s", ANVIL_SHARED_TESTDATA, name);
    return ANVIL_SHARED_TESTDATA[0] && stat(buf, &st) == 0 ? buf : NULL;
}

/* ---- ggml's gguf reader, by dlsym ------------------------------------------ */

struct tc_gguf_params {
    bool no_alloc;
    void **ctx;
};

typedef struct tc_gguf_api {
    void *(*init_from_file)(const char *, struct tc_gguf_params);
    void (*free_ctx)(void *);
    int64_t (*n_tensors)(const void *);
    const char *(*tensor_name)(const void *, int64_t);
    int (*tensor_type)(const void *, int64_t);
    size_t (*tensor_offset)(const void *, int64_t);
    size_t (*data_offset)(const void *);
    int64_t (*find_key)(const void *, const char *);
    uint32_t (*get_u32)(const void *, int64_t);
    int (*kv_type)(const void *, int64_t);
} tc_gguf_api;

static int load_gguf_api(const ggml_oracle *o, tc_gguf_api *a) {
#define TC_SYM(field, name)                             \
    do {                                                \
        *(void **)&a->field = ggml_oracle_sym(o, name); \
        if (a->field == NULL) return -1;                \
    } while (0)
    TC_SYM(init_from_file, "gguf_init_from_file");
    TC_SYM(free_ctx, "gguf_free");
    TC_SYM(n_tensors, "gguf_get_n_tensors");
    TC_SYM(tensor_name, "gguf_get_tensor_name");
    TC_SYM(tensor_type, "gguf_get_tensor_type");
    TC_SYM(tensor_offset, "gguf_get_tensor_offset");
    TC_SYM(data_offset, "gguf_get_data_offset");
    TC_SYM(find_key, "gguf_find_key");
    TC_SYM(get_u32, "gguf_get_val_u32");
    TC_SYM(kv_type, "gguf_get_kv_type");
#undef TC_SYM
    return 0;
}

/* ---- the synthetic source ------------------------------------------------------- */

typedef struct src_tensor {
    const char *name;
    uint32_t type;
    uint32_t n_dims;
    uint64_t ne[3]; /* ne[1] is filled from the row budget when 0 */
    int weight;     /* share of the row budget */
} src_tensor;

static src_tensor parity_model[] = {
    { "token_embd.weight", ANVIL_TYPE_F16, 2, { 256, 0, 1 }, 3 },
    { "blk.0.attn_norm.weight", ANVIL_TYPE_F32, 1, { 256, 1, 1 }, 0 },
    { "blk.0.attn_q.weight", ANVIL_TYPE_F16, 2, { 512, 0, 1 }, 2 },
    { "blk.0.attn_k.weight", ANVIL_TYPE_BF16, 2, { 256, 0, 1 }, 2 },
    { "blk.0.attn_v.weight", ANVIL_TYPE_F32, 2, { 768, 0, 1 }, 1 },
    { "blk.0.attn_output.weight", ANVIL_TYPE_F16, 2, { 96, 0, 1 }, 1 }, /* fits 32-blocks only */
    { "blk.0.ffn_up_exps.weight", ANVIL_TYPE_F16, 3, { 256, 0, 4 }, 1 },
    { "blk.0.ffn_gate_exps.weight", ANVIL_TYPE_Q8_0, 3, { 512, 0, 2 }, 1 },
    { "output.weight", ANVIL_TYPE_BF16, 2, { 1024, 0, 1 }, 1 },
};
#define N_MODEL (sizeof parity_model / sizeof parity_model[0])

static int write_source(const char *path, size_t rows_budget, uint64_t seed, anvil_ctx *ctx) {
    int total_w = 0;
    for (size_t i = 0; i < N_MODEL; ++i) total_w += parity_model[i].weight;
    anvil_gguf_writer *w = NULL;
    anvil_error err;
    int rc = anvil_gguf_writer_new(&w, ctx, &err);
    void *bufs[N_MODEL] = { 0 };
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_string(w, "general.architecture", "llama", &err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_string(w, "general.name", "anvil transcode parity", &err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, "general.file_type", 1, &err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_bool(w, "parity.flag", 1, &err);
    size_t kind = 0;
    for (size_t i = 0; rc == ANVIL_OK && i < N_MODEL; ++i) {
        src_tensor *s = &parity_model[i];
        const uint64_t planes = s->ne[2];
        if (s->weight > 0) {
            uint64_t rows = rows_budget * (uint64_t)s->weight / (uint64_t)total_w / planes;
            s->ne[1] = rows < 16 ? 16 : rows;
        }
        const uint64_t n_rows = s->ne[1] * planes, n = n_rows * s->ne[0];
        anvil_type_info ti;
        uint64_t bytes = 0;
        rc = anvil_type_lookup(ctx, s->type, &ti, &err);
        if (rc == ANVIL_OK) rc = anvil_type_bytes(&ti, n, &bytes, &err);
        float *x = malloc((size_t)n * sizeof *x);
        bufs[i] = malloc((size_t)bytes);
        if (rc != ANVIL_OK || x == NULL || bufs[i] == NULL) {
            free(x);
            rc = rc != ANVIL_OK ? rc : ANVIL_E_NOMEM;
            break;
        }
        for (uint64_t r = 0; r < n_rows; ++r) {
            /* Every kind of row, in turn; F16 cannot hold more than 65504. */
            test_input_fill(x + r * s->ne[0], (size_t)s->ne[0], (test_input_kind)(kind++ % INPUT_KIND_COUNT),
                            seed + i, r);
        }
        if (s->type == ANVIL_TYPE_F16) {
            for (uint64_t k = 0; k < n; ++k) x[k] = fmaxf(-6e4f, fminf(6e4f, x[k]));
        }
        rc = anvil_encode(ctx, s->type, x, (size_t)n, bufs[i], (size_t)bytes, &err);
        free(x);
        if (rc == ANVIL_OK)
            rc = anvil_gguf_writer_add_tensor(w, s->name, s->type, s->n_dims, s->ne, bufs[i], bytes, &err);
    }
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_write_file(w, path, &err);
    if (rc != ANVIL_OK) fprintf(stderr, "parity transcode: cannot write the source: %s\n", err.message);
    anvil_gguf_writer_free(w);
    for (size_t i = 0; i < N_MODEL; ++i) free(bufs[i]);
    return rc;
}

/* ---- checks ------------------------------------------------------------------------ */

/* Source rows decoded by ggml itself. */
static int ggml_source_f32(const ggml_oracle *o, const anvil_gguf_tensor *t, float *x) {
    if (t->type == ANVIL_TYPE_F32) {
        memcpy(x, t->data, (size_t)t->n_elements * sizeof *x);
        return 0;
    }
    ggml_to_float_fn f = ggml_oracle_to_float(o, (int)t->type);
    if (f == NULL) return -1;
    f(t->data, x, (int64_t)t->n_elements);
    return 0;
}

typedef struct type_result {
    size_t rows, bad_rows, tensors_kept, bad_kept;
    size_t accepted_checks, accepted_bad;
} type_result;

static void check_bytes(const ggml_oracle *o, const anvil_transcode *t, const anvil_gguf *out, type_result *res,
                        int verbose) {
    for (size_t i = 0; i < anvil_transcode_count(t); ++i) {
        const anvil_transcode_tensor *it = anvil_transcode_tensor_at(t, i);
        const anvil_gguf_tensor *ot = anvil_gguf_tensor_at(out, i);
        if (ot == NULL || strcmp(ot->name, it->name) != 0 || ot->type != it->dst_type) {
            res->bad_rows++;
            continue;
        }
        if (it->why != ANVIL_TRANSCODE_CONVERT) {
            res->tensors_kept++;
            res->bad_kept += ot->n_bytes != it->src_bytes ||
                             memcmp(ot->data, it->src->data, (size_t)ot->n_bytes) != 0;
            continue;
        }
        float *x = malloc((size_t)it->src->n_elements * sizeof *x);
        unsigned char *ref = malloc((size_t)it->dst_bytes);
        if (x == NULL || ref == NULL || ggml_source_f32(o, it->src, x) != 0) {
            res->bad_rows += (size_t)it->n_rows;
            free(x);
            free(ref);
            continue;
        }
        if (o->quantize_init) o->quantize_init((int)it->dst_type);
        const size_t got =
            o->quantize_chunk((int)it->dst_type, x, ref, 0, (int64_t)it->n_rows, (int64_t)it->row_len, NULL);
        const size_t row_bytes = (size_t)(it->dst_bytes / it->n_rows);
        size_t bad = 0;
        for (uint64_t r = 0; r < it->n_rows; ++r) {
            bad += memcmp(ref + r * row_bytes, (const unsigned char *)ot->data + r * row_bytes, row_bytes) != 0;
        }
        if (got != it->dst_bytes) bad = (size_t)it->n_rows;
        if (bad && verbose)
            fprintf(stderr, "  %s: %zu of %llu rows differ from ggml\n", it->name, bad,
                    (unsigned long long)it->n_rows);
        res->rows += (size_t)it->n_rows;
        res->bad_rows += bad;
        free(x);
        free(ref);
    }
}

static void check_accepted(const tc_gguf_api *api, const char *path, const anvil_gguf *out, uint32_t file_type,
                           type_result *res) {
    void *g = api->init_from_file(path, (struct tc_gguf_params){ true, NULL });
    res->accepted_checks++;
    if (g == NULL) {
        res->accepted_bad++;
        return;
    }
    const int64_t n = api->n_tensors(g);
    int bad = n != (int64_t)anvil_gguf_tensor_count(out) || api->data_offset(g) != anvil_gguf_data_offset(out);
    for (int64_t i = 0; !bad && i < n; ++i) {
        const anvil_gguf_tensor *t = anvil_gguf_tensor_at(out, (size_t)i);
        bad |= strcmp(api->tensor_name(g, i), t->name) != 0 || api->tensor_type(g, i) != (int)t->type ||
               api->tensor_offset(g, i) != t->offset;
    }
    const int64_t kq = api->find_key(g, "general.quantization_version");
    const int64_t kf = api->find_key(g, "general.file_type");
    bad |= kq < 0 || api->kv_type(g, kq) != 4 /* u32 */ || api->get_u32(g, kq) != 2;
    if (file_type != UINT32_MAX) bad |= kf < 0 || api->kv_type(g, kf) != 4 || api->get_u32(g, kf) != file_type;
    res->accepted_bad += bad != 0;
    api->free_ctx(g);
}

/* Transcode src to every type in `types`, check each output. */
static void run_types(parity_ctx *pc, anvil_ctx *ctx, const tc_gguf_api *api, const char *src_path, const char *label,
                      const uint32_t *types, size_t n_types, const char *dir) {
    anvil_gguf *src = NULL;
    anvil_error err;
    if (anvil_gguf_open(&src, src_path, ctx, 0, &err) != ANVIL_OK) {
        fprintf(stderr, "parity transcode: %s\n", err.message);
        parity_report(pc, label, "source opens", 1, 1);
        return;
    }
    for (size_t k = 0; k < n_types; ++k) {
        anvil_type_info ti;
        anvil_type_lookup(ctx, types[k], &ti, NULL);
        char out[4200], what[96];
        snprintf(out, sizeof out, "%s/%s-%s.gguf", dir, label, ti.name);
        anvil_transcode_options o;
        anvil_transcode_options_init(&o);
        o.dtype = types[k];
        o.experts_dtype = types[k];
        o.skip_quality = 1;
        anvil_transcode *t = NULL;
        anvil_gguf *og = NULL;
        type_result res = { 0 };
        int rc = anvil_transcode_plan(&t, ctx, src, out, &o, &err);
        if (rc == ANVIL_OK) rc = anvil_transcode_run(t, &err);
        if (rc == ANVIL_OK) rc = anvil_gguf_open(&og, out, ctx, 0, &err);
        if (rc != ANVIL_OK) {
            fprintf(stderr, "parity transcode: %s -> %s: %s\n", label, ti.name, err.message);
            snprintf(what, sizeof what, "%s transcode runs", label);
            parity_report(pc, ti.name, what, 1, 1);
            anvil_transcode_free(t);
            continue;
        }
        anvil_transcode_summary s;
        anvil_transcode_get_summary(t, &s);
        check_bytes(pc->oracle, t, og, &res, pc->verbose);
        check_accepted(api, out, og, s.file_type, &res);
        if (res.rows > 0 || res.bad_rows > 0) {
            snprintf(what, sizeof what, "%s: rows == ggml_quantize_chunk", label);
            parity_report(pc, ti.name, what, res.rows, res.bad_rows);
        }
        snprintf(what, sizeof what, "%s: kept tensors verbatim", label);
        if (res.tensors_kept > 0) parity_report(pc, ti.name, what, res.tensors_kept, res.bad_kept);
        snprintf(what, sizeof what, "%s: gguf_init_from_file agrees", label);
        parity_report(pc, ti.name, what, res.accepted_checks, res.accepted_bad);
        anvil_gguf_close(og);
        anvil_transcode_free(t);
        unlink(out);
    }
    anvil_gguf_close(src);
}

/* ---- speed ------------------------------------------------------------------------ */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double anvil_rate(anvil_ctx *ctx, const anvil_gguf *src, uint32_t type, unsigned threads, const char *out,
                         uint64_t *conv_bytes) {
    anvil_transcode_options o;
    anvil_transcode_options_init(&o);
    o.dtype = type;
    o.threads = threads;
    o.skip_quality = 1;
    anvil_transcode *t = NULL;
    double rate = 0;
    if (anvil_transcode_plan(&t, ctx, src, out, &o, NULL) == ANVIL_OK && anvil_transcode_run(t, NULL) == ANVIL_OK) {
        anvil_transcode_summary s;
        anvil_transcode_get_summary(t, &s);
        rate = s.mb_per_s;
        *conv_bytes = 0;
        for (size_t i = 0; i < anvil_transcode_count(t); ++i) {
            const anvil_transcode_tensor *it = anvil_transcode_tensor_at(t, i);
            if (it->why == ANVIL_TRANSCODE_CONVERT) *conv_bytes += it->src_bytes;
        }
    }
    anvil_transcode_free(t);
    unlink(out);
    return rate;
}

static double ggml_rate(const ggml_oracle *o, const anvil_gguf *src, uint32_t type) {
    double secs = 0;
    uint64_t bytes = 0;
    anvil_type_info ti;
    anvil_type_builtin(type, &ti, NULL);
    for (size_t i = 0; i < anvil_gguf_tensor_count(src); ++i) {
        const anvil_gguf_tensor *t = anvil_gguf_tensor_at(src, i);
        if (t->n_dims < 2 || strstr(t->name, "norm") != NULL || t->ne[0] % ti.block_elems != 0 ||
            (t->type != ANVIL_TYPE_F32 && t->type != ANVIL_TYPE_F16 && t->type != ANVIL_TYPE_BF16)) {
            continue;
        }
        float *x = malloc((size_t)t->n_elements * sizeof *x);
        void *dst = malloc((size_t)(t->n_elements / ti.block_elems * ti.block_bytes));
        if (x != NULL && dst != NULL && ggml_source_f32(o, t, x) == 0) {
            if (o->quantize_init) o->quantize_init((int)type);
            const double t0 = now_s();
            o->quantize_chunk((int)type, x, dst, 0, (int64_t)(t->n_elements / t->ne[0]), (int64_t)t->ne[0], NULL);
            secs += now_s() - t0;
            bytes += t->n_bytes;
        }
        free(x);
        free(dst);
    }
    return secs > 0 ? bytes / 1e6 / secs : 0;
}

static void speed_table(parity_ctx *pc, anvil_ctx *ctx, const char *src_path, const char *dir) {
    static const uint32_t types[] = { ANVIL_TYPE_Q8_0, ANVIL_TYPE_Q4_0, ANVIL_TYPE_Q4_K, ANVIL_TYPE_Q6_K,
                                      ANVIL_TYPE_IQ4_XS };
    anvil_gguf *src = NULL;
    if (anvil_gguf_open(&src, src_path, ctx, 0, NULL) != ANVIL_OK) return;
    const unsigned all = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
    char out[4200];
    snprintf(out, sizeof out, "%s/speed.gguf", dir);
    printf(
        "speed (MB/s of source; anvil: the whole streaming transcode, ggml: ggml_quantize_chunk alone, 1 thread)\n");
    printf("  %-8s %12s %12s %12s %10s\n", "type", "anvil 1 thr", "anvil all", "ggml 1 thr", "1 thr x");
    for (size_t k = 0; k < sizeof types / sizeof types[0]; ++k) {
        uint64_t conv = 0;
        const double a1 = anvil_rate(ctx, src, types[k], 1, out, &conv);
        const double an = anvil_rate(ctx, src, types[k], all, out, &conv);
        const double g1 = ggml_rate(pc->oracle, src, types[k]);
        anvil_type_info ti;
        anvil_type_builtin(types[k], &ti, NULL);
        printf("  %-8s %12.1f %12.1f %12.1f %10.2f\n", ti.name, a1, an, g1, g1 > 0 ? a1 / g1 : 0);
    }
    anvil_gguf_close(src);
}

int parity_transcode(parity_ctx *pc) {
    const size_t before = pc->total_failures;
    tc_gguf_api api;
    if (load_gguf_api(pc->oracle, &api) != 0) {
        parity_report(pc, "gguf", "ggml's gguf API found", 1, 1);
        return 1;
    }
    anvil_ctx *ctx = NULL;
    anvil_error err;
    if (anvil_ctx_open(&ctx, parity_config_path(), &err) != ANVIL_OK) {
        fprintf(stderr, "parity transcode: %s\n", err.message);
        parity_report(pc, "ctx", "anvil context opens", 1, 1);
        return 1;
    }
    char dir[4096];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/anvil-parity-tc-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        parity_report(pc, "tmp", "temporary folder", 1, 1);
        anvil_ctx_close(ctx);
        return 1;
    }
    char src_path[4200];
    snprintf(src_path, sizeof src_path, "%s/source.gguf", dir);
    /* Kept tensors cost rows for some targets: a margin keeps every
     * format at or above pc->rows checked rows. */
    if (write_source(src_path, pc->rows * 3 / 2, pc->seed, ctx) != ANVIL_OK) {
        parity_report(pc, "source", "synthetic source written", 1, 1);
    } else {
        /* Every format with a byte-exact encoder that ggml stores as weights. */
        uint32_t types[64];
        size_t n_types = 0;
        /* ggml returns a C bool here (ggml_oracle.h declares an int: its upper
         * bits are garbage), so the symbol is taken again with its real type. */
        bool (*requires_imatrix)(int) = NULL;
        *(void **)&requires_imatrix = ggml_oracle_sym(pc->oracle, "ggml_quantize_requires_imatrix");
        types[n_types++] = ANVIL_TYPE_F32;
        types[n_types++] = ANVIL_TYPE_F16;
        types[n_types++] = ANVIL_TYPE_BF16;
        for (uint32_t id = 0; id < ANVIL_TYPE_GGML_COUNT && n_types < 64; ++id) {
            const anvil_codec *c = anvil_ctx_codec(ctx, id);
            if (c == NULL || c->encode == NULL || (c->flags & ANVIL_CODEC_ACTIVATION)) continue;
            /* ggml_quantize_chunk aborts on these without an importance matrix. */
            if (requires_imatrix != NULL && requires_imatrix((int)id)) {
                printf("note: %s: ggml quantizes it only with an importance matrix; not compared\n", c->name);
                continue;
            }
            types[n_types++] = id;
        }
        run_types(pc, ctx, &api, src_path, "synthetic", types, n_types, dir);
        char sbuf[4200];
        const char *stories = shared_path("stories260K.v3.gguf", sbuf, sizeof sbuf);
        if (stories != NULL) {
            run_types(pc, ctx, &api, stories, "stories260K", types, n_types, dir);
        } else {
            printf("note: ../shared/testdata/stories260K.v3.gguf absent; real-weights pass skipped\n");
        }
        speed_table(pc, ctx, src_path, dir);
    }
    unlink(src_path);
    rmdir(dir);
    anvil_ctx_close(ctx);
    return (int)(pc->total_failures - before);
}
