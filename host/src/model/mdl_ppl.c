/* SPDX-License-Identifier: MIT */
/*
 * anvil_perplexity: llama-perplexity's chunking and scoring (see
 * anvil/model.h and mdl_stats.c). Per chunk the model (and the base, when
 * given) evaluates n_ctx tokens at once, as llama-perplexity does with
 * n_batch >= n_ctx; the scored positions' statistics are accumulated in
 * position order, so the figures do not depend on the thread count. The
 * base's side may come from, or go to, a base-logits file
 * (mdl_base_logits.c).
 */
#include <math.h>
#include <stddef.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "model_internal.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct ppl_run {
    anvil_model *m, *base;
    const int32_t *tokens;
    int n_ctx, first, n_vocab;
    int32_t *tok;
    float *logits, *logits_base, *lp, *lp_base, *kld_values;
    mdl_acc acc;
    double sum_nll, sum_nll2, seconds;
    size_t n_kld;
    mdl_blog *blog; /* the base-logits file, or NULL */
    int blog_write; /* 1: base evaluated and saved; 0: read instead of base */
} ppl_run;

/* With a base: the next scored position's log-probabilities and top index
 * of the base, from the file or from the base's logits (saved when
 * writing). */
static int base_position(ppl_run *r, int j, int *top_base, anvil_error *err) {
    if (r->blog != NULL && !r->blog_write) return mdl_blog_read(r->blog, r->lp_base, top_base, err);
    const size_t V = (size_t)r->n_vocab;
    *top_base = mdl_log_softmax(r->logits_base + (size_t)j * V, r->n_vocab, r->lp_base);
    return r->blog != NULL ? mdl_blog_write(r->blog, r->lp_base, *top_base, err) : ANVIL_OK;
}

static int score_chunk(ppl_run *r, int c, anvil_error *err) {
    const size_t n = (size_t)r->n_ctx;
    memcpy(r->tok, r->tokens + (size_t)c * n, n * sizeof *r->tok);
    if (r->m->info.add_bos) r->tok[0] = r->m->info.bos;
    const double t0 = now_s();
    int rc = anvil_model_eval(r->m, r->tok, n, r->logits, err);
    r->seconds += now_s() - t0;
    const int eval_base = r->base != NULL && (r->blog == NULL || r->blog_write);
    if (rc == ANVIL_OK && eval_base) rc = anvil_model_eval(r->base, r->tok, n, r->logits_base, err);
    if (rc != ANVIL_OK) {
        anvil__error_prefix(err, "chunk %d", c);
        return rc;
    }
    const int V = r->n_vocab;
    for (int j = r->first; j < r->n_ctx - 1; ++j) {
        const float *lg = r->logits + (size_t)j * (size_t)V;
        const int next = r->tokens[(size_t)c * n + (size_t)j + 1];
        if (r->base == NULL && r->blog == NULL) {
            const double nll = mdl_nll(lg, V, next);
            r->sum_nll += nll;
            r->sum_nll2 += nll * nll;
            continue;
        }
        const int top = mdl_log_softmax(lg, V, r->lp);
        int top_base;
        rc = base_position(r, j, &top_base, err);
        if (rc != ANVIL_OK) return rc;
        r->kld_values[r->n_kld++] = (float)mdl_kld_position(&r->acc, r->lp_base, top_base, r->lp, top, V, next);
    }
    return ANVIL_OK;
}

static void finish(ppl_run *r, int n_chunks, size_t n, anvil_ppl_result *out) {
    anvil_ppl_result res = { .size = sizeof res, .tokens = n };
    res.chunks = (uint64_t)n_chunks;
    res.seconds = r->seconds;
    res.tokens_per_s = r->seconds > 0 ? (double)n_chunks * r->n_ctx / r->seconds : 0.0;
    if (r->base != NULL || r->blog != NULL) {
        res.has_base = 1;
        mdl_summarize(&r->acc, r->kld_values, r->n_kld, &res);
    } else {
        const uint64_t count = (uint64_t)n_chunks * (uint64_t)(r->n_ctx - 1 - r->first);
        const double mean = r->sum_nll / (double)count;
        double var = r->sum_nll2 / (double)count - mean * mean;
        res.count = count;
        res.ppl = exp(mean);
        res.ppl_unc = var > 0 && count > 1 ? sqrt(var / (double)(count - 1)) * res.ppl : 0.0;
    }
    const size_t keep = out->size < sizeof res ? out->size : sizeof res;
    memcpy((char *)out + sizeof out->size, (const char *)&res + sizeof res.size, keep - sizeof res.size);
}

static int check_args(anvil_model *m, anvil_model *base, size_t n, int n_ctx, anvil_error *err) {
    if (base != NULL && base->info.n_vocab != m->info.n_vocab) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "the base has %u tokens in its vocabulary, the model %u: not the same model family",
                                base->info.n_vocab, m->info.n_vocab);
    }
    if (n_ctx < 4) return anvil__error_set(err, ANVIL_E_INVALID_ARG, "--ctx %d is too small (at least 4)", n_ctx);
    if (n < 2 * (size_t)n_ctx) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "%zu tokens are too few: at least %zu are needed for a context of %d (2 x ctx)", n,
                                2 * (size_t)n_ctx, n_ctx);
    }
    return ANVIL_OK;
}

/* The base-logits file of the run, if any: read when it exists, else
 * written as the base is evaluated (which then must be given). */
static int open_base_logits(ppl_run *r, const char *path, int n_chunks, anvil_error *err) {
    if (path == NULL) return ANVIL_OK;
    struct stat st;
    r->blog_write = stat(path, &st) != 0;
    if (r->blog_write && r->base == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "%s does not exist: give the base model too (--base BASE) to make it", path);
    }
    const anvil_model_info *in = &r->m->info;
    mdl_blog_key k = { .n_vocab = in->n_vocab,
                       .n_ctx = (uint32_t)r->n_ctx,
                       .n_chunks = (uint32_t)n_chunks,
                       .first = (uint32_t)r->first,
                       .hash = MDL_BLOG_HASH_SEED };
    const size_t n = (size_t)r->n_ctx;
    for (int c = 0; c < n_chunks; ++c) {
        const int32_t *t = r->tokens + (size_t)c * n;
        k.hash = mdl_blog_hash(k.hash, in->add_bos ? &in->bos : t, 1);
        k.hash = mdl_blog_hash(k.hash, t + 1, n - 1);
    }
    return mdl_blog_open(&r->blog, path, r->blog_write, &k, err);
}

ANVIL_API int anvil_perplexity(anvil_model *m, anvil_model *base, const int32_t *tokens, size_t n,
                               const anvil_ppl_opts *opts, anvil_ppl_result *out, anvil_error *err) {
    anvil__error_clear(err);
    if (m == NULL || tokens == NULL || out == NULL || out->size < sizeof(anvil_ppl_result) / 2) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_perplexity: NULL argument or bad struct size");
    }
    anvil_ppl_opts o = { .size = sizeof o, .n_ctx = 512 };
    if (opts != NULL)
        memcpy((char *)&o + sizeof o.size, (const char *)opts + sizeof o.size,
               (opts->size < sizeof o ? opts->size : sizeof o) - sizeof o.size);
    if (o.n_ctx <= 0) o.n_ctx = 512;
    int rc = check_args(m, base, n, o.n_ctx, err);
    if (rc != ANVIL_OK) return rc;
    int n_chunks = (int)(n / (size_t)o.n_ctx);
    if (o.n_chunks > 0 && o.n_chunks < n_chunks) n_chunks = o.n_chunks;
    ppl_run r = { .m = m,
                  .base = base,
                  .tokens = tokens,
                  .n_ctx = o.n_ctx,
                  .first = o.n_ctx / 2,
                  .n_vocab = (int)m->info.n_vocab };
    rc = open_base_logits(&r, o.base_logits, n_chunks, err);
    const int with_base = base != NULL || r.blog != NULL;
    const size_t cells = (size_t)o.n_ctx * m->info.n_vocab;
    r.tok = malloc((size_t)o.n_ctx * sizeof *r.tok);
    r.logits = malloc(cells * sizeof(float));
    if (with_base) {
        if (base != NULL && (r.blog == NULL || r.blog_write)) r.logits_base = malloc(cells * sizeof(float));
        r.lp = malloc(m->info.n_vocab * sizeof(float));
        r.lp_base = malloc(m->info.n_vocab * sizeof(float));
        r.kld_values = malloc((size_t)n_chunks * (size_t)o.n_ctx * sizeof(float));
    }
    if (rc == ANVIL_OK && (!r.tok || !r.logits || (with_base && (!r.lp || !r.lp_base || !r.kld_values)) ||
                           (base != NULL && (r.blog == NULL || r.blog_write) && !r.logits_base))) {
        rc = anvil__error_set(err, ANVIL_E_NOMEM, "out of memory for the logits of %d tokens", o.n_ctx);
    }
    const double t0 = now_s();
    for (int c = 0; rc == ANVIL_OK && c < n_chunks; ++c) {
        rc = score_chunk(&r, c, err);
        if (rc == ANVIL_OK && o.progress != NULL) o.progress(o.progress_arg, c + 1, n_chunks, now_s() - t0);
    }
    const int rc_blog = mdl_blog_close(r.blog, rc == ANVIL_OK, rc == ANVIL_OK ? err : NULL);
    if (rc == ANVIL_OK) rc = rc_blog;
    if (rc == ANVIL_OK) {
        finish(&r, n_chunks, n, out);
    }
    free(r.tok);
    free(r.logits);
    free(r.logits_base);
    free(r.lp);
    free(r.lp_base);
    free(r.kld_values);
    return rc;
}
