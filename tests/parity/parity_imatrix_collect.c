/* SPDX-License-Identifier: MIT */
/*
 * Parity family "imatrix_collect": anvil_imat_collect (anvil/imat.h) against
 * llama-imatrix's collection run through libllama (the oracle folder) with
 * an eval callback that does what llama.cpp's tools/imatrix/imatrix.cpp's
 * collect_imatrix does, written here from its description:
 *  - asked about a node: every MUL_MAT_ID; a MUL_MAT whose src1 is F32 with
 *    at least 16 rows and whose weight is blk.* (or output.weight with
 *    process_output);
 *  - then per input row of src1 the squares added to the weight's sums (per
 *    expert for MUL_MAT_ID, by the routing ids in src[2]) and the row
 *    counted.
 * On the trained test model (../shared/testdata/quality) over IC_CHUNKS
 * chunks of IC_CTX tokens of calib.txt (BOS first), one sequence a chunk,
 * llama.cpp's default f16 KV cache, anvil's too; and on a synthetic llama
 * MoE (experts, per-expert counts) over 2 chunks. Checks: the same tensor
 * names, every count equal, every in_sum2 within IC_BOUND relative L2.
 * With --write-golden DIR: DIR/imatrix_collect.txt, the oracle's figures
 * for tests/model/test_imat.c (IC_GOLD_CTX x IC_GOLD_CHUNKS tokens).
 *
 * Bench mode (scripts/bench-imatrix.sh), instead of the checks above when
 * IC_BENCH=MODEL.gguf is set: IC_BENCH_REPS passes (default 3) of both
 * collections on that model over IC_BENCH_CHUNKS chunks (2) of
 * IC_BENCH_CTX tokens (512) of IC_BENCH_TEXT (calib.txt) on
 * IC_BENCH_THREADS threads (2), the two alternating (which goes first
 * alternates too); one line a pass: "imatrix_bench pass P: llama.cpp
 * T_L s ... anvil T_A s ..." where T is the collection alone (model load
 * and context set-up apart), then the same names/counts/L2 check.
 * IC_BENCH_ONLY=llama|anvil runs only that side (peak RSS of one).
 * IC_BENCH=moe: the synthetic F32 MoE model below.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "anvil/anvil.h"
#include "anvil/gguf.h"
#include "anvil/imat.h"
#include "anvil/model.h"
#include "llama_oracle.h"
#include "parity.h"
#include "read_file.h"
#include "synth_model.h"
#include "test_env.h"

#ifndef IC_CTX
#define IC_CTX 128
#endif
#ifndef IC_CHUNKS
#define IC_CHUNKS 6
#endif
#define IC_GOLD_CTX 64
#define IC_GOLD_CHUNKS 2
#define IC_BOUND 1e-3
#define IC_THREADS 2
static int g_threads = IC_THREADS;
static double g_load_s; /* the last collection's model load + set-up */

/* ggml_tensor of the oracle's ggml (include/ggml.h), for reading the callback's nodes. */
typedef struct ic_tensor {
    int32_t type;
    void *buffer;
    int64_t ne[4];
    size_t nb[4];
    int32_t op;
    int32_t op_params[16];
    int32_t flags;
    struct ic_tensor *src[10];
    struct ic_tensor *view_src;
    size_t view_offs;
    void *data;
    char name[64];
    void *extra;
    char padding[8];
} ic_tensor;

typedef struct ic_entry {
    char name[128];
    float *sums;
    int64_t *counts;
    int64_t n_per, n_mat;
} ic_entry;

typedef struct ic_coll {
    ic_entry e[512];
    size_t n;
    int process_output, failed;
    const char *(*op_name)(int32_t op);
} ic_coll;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static ic_entry *ic_find(ic_coll *c, const char *name, int64_t n_per, int64_t n_mat) {
    for (size_t i = 0; i < c->n; ++i) {
        if (strcmp(c->e[i].name, name) == 0) return &c->e[i];
    }
    if (c->n == sizeof c->e / sizeof c->e[0]) return NULL;
    ic_entry *e = &c->e[c->n++];
    snprintf(e->name, sizeof e->name, "%s", name);
    e->n_per = n_per;
    e->n_mat = n_mat;
    e->sums = calloc((size_t)(n_per * n_mat), sizeof *e->sums);
    e->counts = calloc((size_t)n_mat, sizeof *e->counts);
    return e->sums && e->counts ? e : NULL;
}

static void ic_add_row(float *acc, const float *x, int64_t n) {
    for (int64_t j = 0; j < n; ++j) acc[j] += x[j] * x[j];
}

static void ic_mul_mat_id(ic_coll *c, const ic_tensor *t) {
    const ic_tensor *w = t->src[0], *x = t->src[1], *ids = t->src[2];
    ic_entry *e = ic_find(c, w->name, x->ne[0], w->ne[2]);
    if (e == NULL || e->n_per != x->ne[0] || e->n_mat != w->ne[2]) {
        c->failed = 1;
        return;
    }
    for (int64_t idx = 0; idx < ids->ne[0]; ++idx) {
        for (int64_t row = 0; row < x->ne[2]; ++row) {
            const int32_t ex = *(const int32_t *)((const char *)ids->data + row * ids->nb[1] + idx * ids->nb[0]);
            const float *r = (const float *)((const char *)x->data + (idx % x->ne[1]) * x->nb[1] + row * x->nb[2]);
            e->counts[ex]++;
            ic_add_row(e->sums + ex * e->n_per, r, e->n_per);
        }
    }
}

static void ic_mul_mat(ic_coll *c, const ic_tensor *t) {
    const ic_tensor *w = t->src[0], *x = t->src[1];
    const int64_t n_mat = w->ne[2] * w->ne[3];
    ic_entry *e = ic_find(c, w->name, x->ne[0], n_mat);
    if (e == NULL || e->n_per != x->ne[0]) {
        c->failed = 1;
        return;
    }
    for (int64_t i3 = 0; i3 < x->ne[3]; ++i3) {
        for (int64_t i2 = 0; i2 < x->ne[2]; ++i2) {
            const int64_t mat = (i3 % w->ne[3]) * w->ne[2] + (i2 % w->ne[2]);
            for (int64_t row = 0; row < x->ne[1]; ++row) {
                const char *r = (const char *)x->data + row * x->nb[1] + i2 * x->nb[2] + i3 * x->nb[3];
                ic_add_row(e->sums + mat * e->n_per, (const float *)r, e->n_per);
            }
        }
    }
    e->counts[0] += x->ne[1] * x->ne[2] * x->ne[3] / n_mat;
}

static bool ic_callback(void *tp, bool ask, void *user) {
    ic_coll *c = user;
    const ic_tensor *t = tp;
    const char *op = c->op_name(t->op);
    const int is_id = strcmp(op, "MUL_MAT_ID") == 0;
    if (ask) {
        if (is_id) return true;
        if (strcmp(op, "MUL_MAT") != 0) return false;
        const ic_tensor *w = t->src[0], *x = t->src[1];
        if (x->ne[1] < 16 || x->type != 0) return false;
        return strncmp(w->name, "blk.", 4) == 0 || (c->process_output && strcmp(w->name, "output.weight") == 0);
    }
    if (is_id) ic_mul_mat_id(c, t);
    else ic_mul_mat(c, t);
    return true;
}

static void ic_free(ic_coll *c) {
    for (size_t i = 0; i < c->n; ++i) {
        free(c->e[i].sums);
        free(c->e[i].counts);
    }
    c->n = 0;
}

/* llama.cpp's collection over n_chunks chunks of ctx tokens (BOS first). */
static int ll_collect(llama_oracle *lo, const char *path, const int32_t *tokens, int ctx, int n_chunks, int32_t bos,
                      ic_coll *c) {
    const double t0 = now_s();
    void *model = lo->load_model(path, lo->mdefaults);
    if (model == NULL) return -1;
    lq_context_params cp = lo->cdefaults;
    cp.n_ctx = cp.n_batch = cp.n_ubatch = (uint32_t)ctx;
    cp.n_seq_max = 1;
    cp.n_threads = cp.n_threads_batch = g_threads;
    cp.no_perf = true;
    cp.cb_eval = (void *)ic_callback;
    cp.cb_eval_user_data = c;
    void *lctx = lo->init_context(model, cp);
    g_load_s = now_s() - t0;
    int rc = lctx ? 0 : -1;
    int32_t *tok = malloc((size_t)ctx * sizeof *tok), *pos = malloc((size_t)ctx * sizeof *pos);
    int32_t *nseq = malloc((size_t)ctx * sizeof *nseq), **seq = malloc((size_t)ctx * sizeof *seq), seq0 = 0;
    int8_t *want = malloc((size_t)ctx);
    if (!tok || !pos || !nseq || !seq || !want) rc = -1;
    for (int ch = 0; rc == 0 && ch < n_chunks; ++ch) {
        for (int i = 0; i < ctx; ++i) {
            tok[i] = tokens[(size_t)ch * ctx + i];
            pos[i] = i;
            nseq[i] = 1;
            seq[i] = &seq0;
            want[i] = 1;
        }
        if (bos >= 0) tok[0] = bos;
        lo->memory_clear(lo->get_memory(lctx), true);
        const lq_batch b = {
            .n_tokens = ctx, .token = tok, .pos = pos, .n_seq_id = nseq, .seq_id = seq, .logits = want
        };
        rc = lo->decode(lctx, b) == 0 && !c->failed ? 0 : -1;
    }
    free(tok);
    free(pos);
    free(nseq);
    free(seq);
    free(want);
    if (lctx) lo->free_context(lctx);
    lo->free_model(model);
    return rc;
}

/* Compare anvil's collection with the oracle's: names, counts, relative L2. */
static void compare(parity_ctx *pc, const char *label, const anvil_imat *im, const ic_coll *c) {
    size_t bad = 0, checked = 0;
    double worst = 0.0;
    const char *worst_name = "";
    if (anvil_imat_count(im) != c->n) {
        printf("imatrix_collect %s: anvil has %zu tensors, llama.cpp %zu\n", label, anvil_imat_count(im), c->n);
        ++bad;
    }
    for (size_t i = 0; i < c->n; ++i) {
        const ic_entry *o = &c->e[i];
        anvil_imat_entry a = { 0 };
        size_t k = 0;
        for (; k < anvil_imat_count(im); ++k) {
            anvil_imat_entry_at(im, k, &a);
            if (strcmp(a.name, o->name) == 0) break;
        }
        ++checked;
        if (k == anvil_imat_count(im) || a.n_per != o->n_per || a.n_mat != o->n_mat) {
            printf("imatrix_collect %s: %s missing or of another shape in anvil's\n", label, o->name);
            ++bad;
            continue;
        }
        for (int64_t j = 0; j < o->n_mat; ++j) {
            if (a.counts[j] != o->counts[j]) {
                printf("imatrix_collect %s: %s counts[%lld] %lld, llama.cpp %lld\n", label, o->name, (long long)j,
                       (long long)a.counts[j], (long long)o->counts[j]);
                ++bad;
            }
        }
        double d2 = 0, r2 = 0;
        for (int64_t j = 0; j < o->n_per * o->n_mat; ++j) {
            const double d = (double)a.sums[j] - (double)o->sums[j];
            d2 += d * d;
            r2 += (double)o->sums[j] * (double)o->sums[j];
        }
        const double rel = r2 > 0 ? sqrt(d2 / r2) : sqrt(d2);
        if (!(rel < IC_BOUND)) ++bad;
        if (rel > worst || rel != rel) {
            worst = rel;
            worst_name = o->name;
        }
    }
    printf("imatrix_collect %s: %zu tensors, max in_sum2 relative L2 %.3g (%s)\n", label, c->n, worst, worst_name);
    parity_report(pc, label, "imatrix: names, counts, in_sum2 L2<1e-3", checked, bad);
}

static int an_collect(anvil_ctx *ctx, const char *path, const int32_t *tokens, size_t n, int n_ctx, int chunks,
                      anvil_imat **out) {
    anvil_model *m = NULL;
    anvil_error err;
    memset(&err, 0, sizeof err);
    const anvil_model_opts mo = { .size = sizeof mo, .kv_f16 = 1 };
    const anvil_imat_opts o = { .size = sizeof o, .n_ctx = n_ctx, .n_chunks = chunks };
    const double t0 = now_s();
    int rc = anvil_model_open(&m, ctx, path, &mo, &err);
    g_load_s = now_s() - t0;
    if (rc == ANVIL_OK) rc = anvil_imat_new(out, &err);
    if (rc == ANVIL_OK) rc = anvil_imat_collect(m, tokens, n, &o, *out, NULL, &err);
    if (rc != ANVIL_OK) printf("imatrix_collect: %s\n", err.message);
    anvil_model_close(m);
    return rc;
}

static void write_golden(parity_ctx *pc, const ic_coll *c) {
    char path[1024];
    snprintf(path, sizeof path, "%s/imatrix_collect.txt", pc->golden_dir);
    FILE *f = fopen(path, "w");
    if (f == NULL) return;
    fprintf(f, "# tiny-code-llama.f16.gguf, calib.txt, llama.cpp's collection: ctx %d, chunks %d\n", IC_GOLD_CTX,
            IC_GOLD_CHUNKS);
    fprintf(f, "# name n_per count sum(in_sum2) then in_sum2[0..7]\n");
    for (size_t i = 0; i < c->n; ++i) {
        const ic_entry *e = &c->e[i];
        double s = 0;
        for (int64_t j = 0; j < e->n_per; ++j) s += e->sums[j];
        fprintf(f, "%s %lld %lld %.9g", e->name, (long long)e->n_per, (long long)e->counts[0], s);
        for (int j = 0; j < 8; ++j) fprintf(f, " %.9g", (double)e->sums[j]);
        fputc('\n', f);
    }
    fclose(f);
    printf("imatrix_collect: wrote %s\n", path);
}

/* One model: both collections over the same tokens. */
static void check_model(parity_ctx *pc, llama_oracle *lo, anvil_ctx *ctx, const char *label, const char *path,
                        const int32_t *tok, size_t n, int n_ctx, int chunks, int32_t bos, int golden) {
    static ic_coll c;
    memset(&c, 0, sizeof c);
    c.op_name = (const char *(*)(int32_t))dlsym(lo->lib, "ggml_op_name");
    anvil_imat *im = NULL;
    const double t0 = now_s();
    const int ll_rc = c.op_name != NULL ? ll_collect(lo, path, tok, n_ctx, chunks, bos, &c) : -1;
    const double t1 = now_s();
    const int an_rc = ll_rc == 0 ? an_collect(ctx, path, tok, n, n_ctx, chunks, &im) : -1;
    const double t2 = now_s();
    if (ll_rc != 0) {
        printf("imatrix_collect %s: llama.cpp's collection failed\n", label);
        parity_report(pc, label, "llama.cpp's imatrix collection", 1, 1);
    } else if (an_rc != ANVIL_OK) {
        parity_report(pc, label, "anvil's imatrix collection", 1, 1);
    } else {
        /* load + collection of each, one run (the machine may be shared) */
        printf(
            "imatrix_collect %s: %d x %d tokens, load + collect: llama.cpp %.2f s, anvil %.2f s (%.2fx, %d threads)\n",
            label, chunks, n_ctx, t1 - t0, t2 - t1, (t1 - t0) / (t2 - t1), g_threads);
        compare(pc, label, im, &c);
        if (golden && pc->golden_dir != NULL) write_golden(pc, &c);
    }
    anvil_imat_free(im);
    ic_free(&c);
}

static int32_t *ll_tokens(llama_oracle *lo, const char *model_path, const char *text_path, size_t *n, int *n_vocab,
                          int32_t *bos) {
    lq_model_params mp = lo->mdefaults;
    mp.vocab_only = true;
    void *vm = lo->load_model(model_path, mp);
    size_t len = 0;
    char *text = vm ? test_read_file(text_path, &len) : NULL;
    int32_t *tok = text ? malloc((len + 2) * sizeof *tok) : NULL;
    int32_t got = -1;
    if (tok != NULL) {
        if (len > 0 && text[len - 1] == '\n') --len;
        const void *vocab = lo->model_vocab(vm);
        got = lo->tokenize(vocab, text, (int32_t)len, tok, (int32_t)len + 2, true, false);
        *n_vocab = lo->vocab_n_tokens(vocab);
        *bos = lo->vocab_get_add_bos(vocab) ? lo->vocab_bos(vocab) : -1;
    }
    free(text);
    if (vm) lo->free_model(vm);
    if (got < 0) {
        free(tok);
        return NULL;
    }
    *n = (size_t)got;
    return tok;
}

/* A Mixtral-style llama MoE (8 experts, 2 used) with the test model's vocabulary. */
static int make_moe(anvil_ctx *ctx, const char *f16, int n_vocab, const char *path) {
    anvil_gguf *voc = NULL;
    anvil_error err;
    memset(&err, 0, sizeof err);
    int rc = anvil_gguf_open(&voc, f16, ctx, 0, &err);
    const synth_model sm = { .n_vocab = (uint32_t)n_vocab,
                             .n_embd = 128,
                             .n_ff = 256,
                             .n_layer = 2,
                             .n_head = 4,
                             .n_head_kv = 2,
                             .type = ANVIL_TYPE_F32,
                             .seed = 11,
                             .tokenizer_from = voc,
                             .n_expert = 8,
                             .n_expert_used = 2 };
    if (rc == ANVIL_OK) rc = synth_model_write(path, &sm, ctx, &err);
    anvil_gguf_close(voc);
    if (rc != ANVIL_OK) printf("imatrix_collect: synth MoE: %s\n", err.message);
    return rc;
}

static int env_int(const char *name, int dflt) {
    const char *v = getenv(name);
    const long x = v != NULL ? strtol(v, NULL, 10) : 0;
    return x > 0 && x < 1000000 ? (int)x : dflt;
}

/* Bench mode: alternating passes of both collections on IC_BENCH. */
static void bench(parity_ctx *pc, llama_oracle *lo, anvil_ctx *ctx, const char *model, const char *text) {
    const int n_ctx = env_int("IC_BENCH_CTX", 512), chunks = env_int("IC_BENCH_CHUNKS", 2);
    const int reps = env_int("IC_BENCH_REPS", 3);
    const char *only = getenv("IC_BENCH_ONLY");
    const int run_ll = only == NULL || strcmp(only, "anvil") != 0,
              run_an = only == NULL || strcmp(only, "llama") != 0;
    size_t n = 0;
    int n_vocab = 0;
    int32_t bos = -1;
    int32_t *tok = ll_tokens(lo, model, text, &n, &n_vocab, &bos);
    if (tok == NULL || n < (size_t)n_ctx * (size_t)chunks) {
        printf("imatrix_bench: %s: cannot tokenize %s, or fewer than %d x %d tokens\n", model, text, chunks, n_ctx);
        parity_report(pc, "imx-bench", "bench model and text", 1, 1);
        free(tok);
        return;
    }
    printf("imatrix_bench: %s, %d x %d tokens, %d threads\n", model, chunks, n_ctx, g_threads);
    static ic_coll c;
    for (int pass = 0; pass < reps; ++pass) {
        double t_ll = 0, t_an = 0, l_ll = 0, l_an = 0;
        anvil_imat *im = NULL;
        int ok = 1;
        ic_free(&c);
        memset(&c, 0, sizeof c);
        c.op_name = (const char *(*)(int32_t))dlsym(lo->lib, "ggml_op_name");
        for (int side = 0; side < 2; ++side) {
            const int ll_now = (side == 0) == (pass % 2 == 0);
            const double t0 = now_s();
            if (ll_now && run_ll) {
                ok &= c.op_name != NULL && ll_collect(lo, model, tok, n_ctx, chunks, bos, &c) == 0;
                t_ll = now_s() - t0 - g_load_s;
                l_ll = g_load_s;
            } else if (!ll_now && run_an) {
                ok &= an_collect(ctx, model, tok, n, n_ctx, chunks, &im) == ANVIL_OK;
                t_an = now_s() - t0 - g_load_s;
                l_an = g_load_s;
            }
        }
        const double tokens = (double)n_ctx * chunks;
        printf("imatrix_bench pass %d: llama.cpp %.4f s %.1f t/s load %.3f s, anvil %.4f s %.1f t/s load %.3f s, "
               "ratio %.3f%s\n",
               pass, t_ll, t_ll > 0 ? tokens / t_ll : 0.0, l_ll, t_an, t_an > 0 ? tokens / t_an : 0.0, l_an,
               t_an > 0 ? t_ll / t_an : 0.0, ok ? "" : " (a collection failed)");
        if (!ok) parity_report(pc, "imx-bench", "both collections ran", 1, 1);
        if (ok && run_ll && run_an && pass == reps - 1) compare(pc, "imx-bench", im, &c);
        anvil_imat_free(im);
    }
    ic_free(&c);
    free(tok);
}

int parity_imatrix_collect(parity_ctx *pc) {
    static llama_oracle lo;
    char why[2048];
    if (llama_oracle_open(&lo, pc->oracle->dir, why, sizeof why) != 0 ||
        llama_oracle_backends(&lo, why, sizeof why) != 0) {
        printf("imatrix_collect libllama: %s\n", why);
        parity_report(pc, "imatrix", "libllama from the oracle folder", 1, 1);
        return 1;
    }
    anvil_ctx *ctx = NULL;
    anvil_error err;
    memset(&err, 0, sizeof err);
    if (anvil_ctx_open(&ctx, parity_config_path(), &err) != ANVIL_OK) {
        printf("imatrix_collect: %s\n", err.message);
        parity_report(pc, "imatrix", "anvil context", 1, 1);
        llama_oracle_close(&lo);
        return 1;
    }
    const char *bench_model = getenv("IC_BENCH");
    g_threads = bench_model != NULL && *bench_model ? env_int("IC_BENCH_THREADS", IC_THREADS) : IC_THREADS;
    anvil_ctx_set_threads(ctx, (unsigned)g_threads);
    char f16[700], text[700], moe[800];
    const char *p = test_shared_path("quality/tiny-code-llama.f16.gguf");
    snprintf(f16, sizeof f16, "%s", p ? p : "");
    p = test_shared_path("quality/calib.txt");
    snprintf(text, sizeof text, "%s", p ? p : "");
    if (bench_model != NULL && *bench_model) {
        const char *bt = getenv("IC_BENCH_TEXT");
        if (strcmp(bench_model, "moe") == 0) { /* the synthetic F32 MoE below */
            size_t nt = 0;
            int nv = 0;
            int32_t b = -1;
            int32_t *t = f16[0] && text[0] ? ll_tokens(&lo, f16, text, &nt, &nv, &b) : NULL;
            const char *tmp = getenv("TMPDIR");
            snprintf(moe, sizeof moe, "%s/anvil-parity-imx-moe-%d.gguf", tmp && *tmp ? tmp : "/tmp", (int)getpid());
            if (t == NULL || make_moe(ctx, f16, nv, moe) != ANVIL_OK) {
                parity_report(pc, "imx-bench", "synthetic MoE model", 1, 1);
            } else {
                bench(pc, &lo, ctx, moe, bt != NULL && *bt ? bt : text);
            }
            remove(moe);
            free(t);
        } else {
            bench(pc, &lo, ctx, bench_model, bt != NULL && *bt ? bt : text);
        }
        anvil_ctx_close(ctx);
        llama_oracle_close(&lo);
        return 0;
    }
    size_t n = 0;
    int n_vocab = 0;
    int32_t bos = -1;
    int32_t *tok = f16[0] && text[0] ? ll_tokens(&lo, f16, text, &n, &n_vocab, &bos) : NULL;
    if (tok == NULL || n < (size_t)IC_CTX * IC_CHUNKS) {
        printf("imatrix_collect: the test model or calib.txt in ../shared/testdata/quality is missing\n");
        parity_report(pc, "imatrix", "test model and text", 1, 1);
    } else {
        check_model(pc, &lo, ctx, "imx-F16", f16, tok, n, IC_CTX, IC_CHUNKS, bos, 0);
        if (pc->golden_dir != NULL) {
            check_model(pc, &lo, ctx, "imx-gold", f16, tok, n, IC_GOLD_CTX, IC_GOLD_CHUNKS, bos, 1);
        }
        const char *tmp = getenv("TMPDIR");
        snprintf(moe, sizeof moe, "%s/anvil-parity-imx-moe-%d.gguf", tmp && *tmp ? tmp : "/tmp", (int)getpid());
        if (make_moe(ctx, f16, n_vocab, moe) == ANVIL_OK) {
            check_model(pc, &lo, ctx, "imx-MoE", moe, tok, n, IC_CTX, 2, bos, 0);
        } else {
            parity_report(pc, "imx-MoE", "synthetic MoE model", 1, 1);
        }
        remove(moe);
    }
    free(tok);
    anvil_ctx_close(ctx);
    llama_oracle_close(&lo);
    return 0;
}
