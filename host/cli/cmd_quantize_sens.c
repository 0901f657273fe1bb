/* SPDX-License-Identifier: MIT */
/*
 * anvil quantize --measure / --calibrate: per weight tensor, how the
 * model's output distribution responds to that tensor's quantization error
 * (docs/SENSITIVITY.md), through anvil's own forward pass.
 *
 * Contract:
 *  - The text is tokenized with the model's vocabulary and cut into chunks
 *    of ctx tokens spread evenly over it (BOS first when the vocabulary adds
 *    one), as llama-perplexity cuts them; the positions ctx/2 .. ctx-2 of
 *    each chunk are scored.
 *  - Per matrix of the forward pass (a 3-D expert tensor whole; the tied
 *    token embedding once, serving both roles): its rows quantized to the
 *    reference type (Q4_K, or Q5_0 where 256 does not divide the rows) with
 *    the importance matrix's row when there is one, decoded, stored back in
 *    the tensor's own type, and the layers from the tensor's own up run on
 *    the unperturbed residual saved there; kld = mean KL(P_orig || P_pert)
 *    over the scored positions. Then the same for each low-bit reference
 *    type (IQ2_XS and IQ1_S; Q2_K and Q1_0 without an importance matrix
 *    entry; Q2_0, Q1_0 or Q4_0 where 256 does not divide the rows): the
 *    entry's "low" points (file version 2).
 *  - Deterministic: the forward pass gives the same logits for any thread
 *    count; the sums run in one fixed order on this thread.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/anvil.h"
#include "anvil/gguf.h"
#include "anvil/model.h"
#include "anvil/quantize.h"
#include "cli.h"
#include "cmd_quantize_sens.h"

/* A growing text buffer; failed sticks once an allocation fails. */
typedef struct cli_buf {
    char *data;
    size_t len, cap;
    int failed;
} cli_buf;

static void cli_buf_init(cli_buf *b) { memset(b, 0, sizeof *b); }
static void cli_buf_free(cli_buf *b) { free(b->data); }

__attribute__((format(printf, 2, 3))) static void cli_buf_add(cli_buf *b, const char *fmt, ...) {
    if (b->failed) return;
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = 1;
        return;
    }
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + (size_t)n + 1) cap *= 2;
        char *d = realloc(b->data, cap);
        if (d == NULL) {
            b->failed = 1;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* log-softmax of n logits into out (double sums, fixed order). */
static void log_softmax(const float *x, size_t n, double *out) {
    double mx = x[0];
    for (size_t i = 1; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
    double s = 0.0;
    for (size_t i = 0; i < n; ++i) s += exp((double)x[i] - mx);
    const double ls = log(s) + mx;
    for (size_t i = 0; i < n; ++i) out[i] = (double)x[i] - ls;
}

typedef struct sens_run {
    anvil_ctx *ctx;
    anvil_model *m;
    anvil_model_info info;
    const int32_t *tok; /* chunks x ctx */
    size_t chunks, n_ctx, first, n_scored;
    float *resid;  /* per chunk (n_layer+1) x ctx x n_embd */
    double *base;  /* per chunk n_scored x n_vocab log-probs */
    float *logits; /* ctx x n_vocab */
    double *lp;    /* n_vocab */
} sens_run;

static size_t plane(const sens_run *r) { return r->n_ctx * r->info.n_embd; }

/* Mean KL over every chunk, evaluating from layer first (all chunks). */
static int run_kld(sens_run *r, uint32_t layer, int save, double *kld, anvil_error *err) {
    const size_t nv = r->info.n_vocab, pl = plane(r), per = ((size_t)r->info.n_layer + 1) * pl;
    double sum = 0.0;
    for (size_t c = 0; c < r->chunks; ++c) {
        float *res = r->resid + c * per;
        int rc = anvil_model_eval_layers(r->m, r->tok + c * r->n_ctx, r->n_ctx, layer,
                                         layer == 0 ? NULL : res + (size_t)layer * pl, save ? res : NULL, r->logits,
                                         err);
        if (rc != ANVIL_OK) return rc;
        for (size_t i = 0; i < r->n_scored; ++i) {
            double *b = r->base + (c * r->n_scored + i) * nv;
            if (save) {
                log_softmax(r->logits + (r->first + i) * nv, nv, b);
                continue;
            }
            log_softmax(r->logits + (r->first + i) * nv, nv, r->lp);
            double k = 0.0;
            for (size_t v = 0; v < nv; ++v) k += exp(b[v]) * (b[v] - r->lp[v]);
            sum += k;
        }
    }
    *kld = sum / (double)(r->chunks * r->n_scored);
    if (*kld < 0.0) *kld = 0.0;
    return ANVIL_OK;
}

/* t's rows through the reference type and back, in t's stored type. */
static int perturb(sens_run *r, const anvil_gguf_tensor *t, const anvil_imatrix *im, uint32_t ref, void *out,
                   anvil_error *err) {
    const size_t rl = (size_t)t->ne[0], rows = (size_t)(t->n_elements / t->ne[0]);
    const uint64_t per = t->ne[1];
    anvil_type_info ti;
    uint64_t rb = 0;
    int rc = anvil_type_lookup(r->ctx, ref, &ti, err);
    if (rc == ANVIL_OK) rc = anvil_type_bytes(&ti, rl, &rb, err);
    if (rc != ANVIL_OK) return rc;
    float *x = malloc(rl * sizeof *x);
    unsigned char *enc = malloc((size_t)rb);
    if (x == NULL || enc == NULL) rc = ANVIL_E_NOMEM;
    const anvil_imatrix_entry *e = im != NULL ? anvil_imatrix_find(im, t->name) : NULL;
    if (e != NULL && e->n_values != rl * (size_t)(t->ne[2])) e = NULL;
    for (size_t i = 0; rc == ANVIL_OK && i < rows; ++i) {
        const unsigned char *src = (const unsigned char *)t->data + i * (size_t)t->row_bytes;
        rc = anvil_decode(r->ctx, t->type, src, (size_t)t->row_bytes, x, rl, err);
        const float *w = e != NULL ? e->values + (i / per) * rl : NULL;
        if (rc == ANVIL_OK) rc = anvil_encode_rows(r->ctx, ref, x, 1, rl, w, enc, (size_t)rb, err);
        if (rc == ANVIL_OK) rc = anvil_decode(r->ctx, ref, enc, (size_t)rb, x, rl, err);
        if (rc == ANVIL_OK) {
            rc = anvil_encode_rows(r->ctx, t->type, x, 1, rl, NULL, (unsigned char *)out + i * (size_t)t->row_bytes,
                                   (size_t)t->row_bytes, err);
        }
    }
    free(x);
    free(enc);
    if (rc == ANVIL_E_NOMEM && err != NULL && err->message[0] == '\0') {
        snprintf(err->message, sizeof err->message, "out of memory");
    }
    return rc;
}

/* The low-bit reference types of t into out (count back): IQ2_XS and
 * IQ1_S where 256 divides the rows and the importance matrix has t (their
 * encoders need one), Q2_K and Q1_0 where it has not; else Q2_0 and Q1_0
 * (rows of 128), Q2_0 (rows of 64), Q4_0 (rows of 32). */
static size_t low_refs(const anvil_gguf_tensor *t, const anvil_imatrix *im, uint32_t *out) {
    const uint64_t rl = t->ne[0];
    if (rl % 256 == 0) {
        const anvil_imatrix_entry *e = im != NULL ? anvil_imatrix_find(im, t->name) : NULL;
        const int has = e != NULL && e->n_values == (size_t)t->ne[0] * (size_t)t->ne[2];
        out[0] = has ? ANVIL_TYPE_IQ2_XS : ANVIL_TYPE_Q2_K;
        out[1] = has ? ANVIL_TYPE_IQ1_S : ANVIL_TYPE_Q1_0;
        return 2;
    }
    if (rl % 64 == 0) {
        out[0] = ANVIL_TYPE_Q2_0;
        out[1] = ANVIL_TYPE_Q1_0;
        return rl % 128 == 0 ? 2 : 1;
    }
    out[0] = ANVIL_TYPE_Q4_0;
    return 1;
}

static void json_str(cli_buf *b, const char *s) {
    cli_buf_add(b, "\"");
    for (const char *p = s; *p; ++p) {
        if (*p == '"' || *p == '\\') cli_buf_add(b, "\\%c", *p);
        else if ((unsigned char)*p < 0x20) cli_buf_add(b, "\\u%04x", *p);
        else cli_buf_add(b, "%c", *p);
    }
    cli_buf_add(b, "\"");
}

/* The model, the text's chunks and the unperturbed pass (residuals and
 * log-probabilities saved); *text and *n_tok for the file's record. */
static int sens_open(sens_run *r, anvil_ctx *ctx, const char *model_path, const char *text_path,
                     const cli_sens_opts *o, void **text_out, size_t *text_len_out, size_t *n_tok_out,
                     anvil_error *err) {
    memset(r, 0, sizeof *r);
    r->ctx = ctx;
    r->info.size = sizeof r->info;
    const anvil_model_opts mo = { .size = sizeof mo, .kv_f16 = 1 };
    void *text = NULL;
    size_t text_len = 0, n_tok = 0;
    int32_t *all = NULL, *tok = NULL;
    int rc = anvil_model_open(&r->m, ctx, model_path, &mo, err);
    if (rc == ANVIL_OK) rc = anvil_model_get_info(r->m, &r->info);
    if (rc == ANVIL_OK) rc = cli_read_file(text_path, &text, &text_len, err);
    if (rc == ANVIL_OK) rc = anvil_model_tokenize(r->m, text, text_len, &all, &n_tok, err);
    r->n_ctx = o->n_ctx;
    const size_t avail = rc == ANVIL_OK ? n_tok / r->n_ctx : 0;
    if (rc == ANVIL_OK && avail == 0) {
        snprintf(err->message, sizeof err->message,
                 "calibration text %s gives %zu tokens: at least one chunk of %zu is needed", text_path, n_tok,
                 r->n_ctx);
        rc = err->code = ANVIL_E_INVALID_ARG;
    }
    r->chunks = avail < o->chunks ? avail : o->chunks;
    r->first = r->n_ctx / 2;
    r->n_scored = r->n_ctx - 1 - r->first;
    const size_t nv = r->info.n_vocab, per = ((size_t)r->info.n_layer + 1) * r->n_ctx * r->info.n_embd;
    if (rc == ANVIL_OK) {
        tok = malloc(r->chunks * r->n_ctx * sizeof *tok);
        r->resid = malloc(r->chunks * per * sizeof *r->resid);
        r->base = malloc(r->chunks * r->n_scored * nv * sizeof *r->base);
        r->logits = malloc(r->n_ctx * nv * sizeof *r->logits);
        r->lp = malloc(nv * sizeof *r->lp);
        if (!tok || !r->resid || !r->base || !r->logits || !r->lp) {
            snprintf(err->message, sizeof err->message, "out of memory for %zu chunks of %zu tokens", r->chunks,
                     r->n_ctx);
            rc = err->code = ANVIL_E_NOMEM;
        }
    }
    for (size_t c = 0; rc == ANVIL_OK && c < r->chunks; ++c) {
        const size_t at = (c * avail / r->chunks) * r->n_ctx;
        memcpy(tok + c * r->n_ctx, all + at, r->n_ctx * sizeof *tok);
        if (r->info.add_bos && r->info.bos >= 0) tok[c * r->n_ctx] = r->info.bos;
    }
    r->tok = tok;
    free(all);
    double dummy = 0.0;
    if (rc == ANVIL_OK) rc = run_kld(r, 0, 1, &dummy, err);
    if (text_out != NULL) {
        *text_out = text;
        *text_len_out = text_len;
        *n_tok_out = n_tok;
    } else {
        free(text);
    }
    return rc;
}

static void sens_close(sens_run *r) {
    free((void *)r->tok);
    free(r->resid);
    free(r->base);
    free(r->logits);
    free(r->lp);
    anvil_model_close(r->m);
}

int cli_sens_measure(anvil_ctx *ctx, const char *model_path, const char *text_path, const anvil_imatrix *im,
                     const cli_sens_opts *o, const anvil_quantize_cache *errs, char **json, size_t *json_len,
                     anvil_error *err) {
    *json = NULL;
    *json_len = 0;
    sens_run r;
    anvil_gguf *g = NULL;
    void *text = NULL;
    size_t text_len = 0, n_tok = 0;
    void *pert = NULL;
    cli_buf b;
    cli_buf_init(&b);
    int rc = sens_open(&r, ctx, model_path, text_path, o, &text, &text_len, &n_tok, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_open(&g, model_path, ctx, 0, err);
    uint64_t mh = 0xcbf29ce484222325ull;
    const size_t nt = g != NULL ? anvil_gguf_tensor_count(g) : 0;
    for (size_t i = 0; rc == ANVIL_OK && i < nt; ++i) {
        const anvil_gguf_tensor *t = anvil_gguf_tensor_at(g, i);
        mh = fnv(mh, t->name, t->name_len + 1);
        mh = fnv(mh, t->ne, sizeof t->ne);
    }
    if (rc == ANVIL_OK) {
        cli_buf_add(&b,
                    "{\n  \"format\": \"anvil-sensitivity\",\n  \"version\": %d,\n  \"model\": {\"tensors\": %zu, "
                    "\"fnv1a\": \"%016" PRIx64 "\"},\n  \"text\": {\"name\": ",
                    errs != NULL ? 3 : 2, nt, mh);
        const char *base = strrchr(text_path, '/');
        json_str(&b, base ? base + 1 : text_path);
        cli_buf_add(&b, ", \"bytes\": %zu, \"fnv1a\": \"%016" PRIx64 "\", \"tokens\": %zu},\n", text_len,
                    fnv(0xcbf29ce484222325ull, text, text_len), n_tok);
        cli_buf_add(
            &b, "  \"chunks\": %zu,\n  \"ctx\": %zu,\n  \"positions\": %zu,\n  \"imatrix\": %s,\n  \"tensors\": [",
            r.chunks, r.n_ctx, r.chunks * r.n_scored, im != NULL ? "true" : "false");
    }
    size_t n_out = 0;
    for (size_t i = 0; rc == ANVIL_OK && i < nt; ++i) {
        const anvil_gguf_tensor *t = anvil_gguf_tensor_at(g, i);
        if (t->n_dims < 2 || t->ne[1] < 2) continue;
        const uint32_t ref = t->ne[0] % 256 == 0 ? ANVIL_TYPE_Q4_K : ANVIL_TYPE_Q5_0;
        if (t->ne[0] % 32 != 0) continue;
        uint32_t refs[3];
        refs[0] = ref;
        const size_t n_ref = 1 + low_refs(t, im, refs + 1);
        free(pert);
        pert = malloc((size_t)t->n_bytes);
        if (pert == NULL) {
            snprintf(err->message, sizeof err->message, "out of memory for tensor %s", t->name);
            rc = err->code = ANVIL_E_NOMEM;
            break;
        }
        unsigned layer = 0;
        if (strcmp(t->name, "output.weight") == 0) layer = r.info.n_layer;
        else if (sscanf(t->name, "blk.%u.", &layer) != 1 || layer >= r.info.n_layer) layer = 0;
        double kld[3] = { 0.0, 0.0, 0.0 };
        int skip = 0;
        for (size_t k = 0; k < n_ref && rc == ANVIL_OK; ++k) {
            rc = perturb(&r, t, im, refs[k], pert, err);
            if (rc == ANVIL_OK) {
                rc = anvil_model_set_weight(r.m, t->name, pert, err);
                if (rc == ANVIL_E_NOT_FOUND) { /* not a matrix of the forward pass */
                    anvil_model_set_weight(r.m, t->name, NULL, NULL);
                    rc = ANVIL_OK;
                    skip = 1;
                    break;
                }
            }
            if (rc == ANVIL_OK) rc = run_kld(&r, layer, 0, &kld[k], err);
            const int rrc = anvil_model_set_weight(r.m, t->name, NULL, NULL);
            if (rc == ANVIL_OK) rc = rrc;
        }
        if (rc != ANVIL_OK) break;
        if (skip) continue;
        cli_buf_add(&b, "%s\n    {\"name\": ", n_out ? "," : "");
        json_str(&b, t->name);
        cli_buf_add(&b, ", \"shape\": [");
        for (uint32_t d = 0; d < t->n_dims; ++d) cli_buf_add(&b, "%s%" PRIu64, d ? ", " : "", t->ne[d]);
        cli_buf_add(&b, "], \"ref\": \"%s\", \"kld\": %.9g, \"low\": [", anvil_type_name(ctx, ref), kld[0]);
        for (size_t k = 1; k < n_ref; ++k) {
            cli_buf_add(&b, "%s{\"ref\": \"%s\", \"kld\": %.9g}", k > 1 ? ", " : "", anvil_type_name(ctx, refs[k]),
                        kld[k]);
        }
        cli_buf_add(&b, "]");
        const size_t el = anvil_quantize_cache_err_json(errs, ctx, t->name, NULL, 0);
        if (el > 0) {
            char *ej = malloc(el + 1);
            if (ej == NULL) {
                b.failed = 1;
            } else {
                anvil_quantize_cache_err_json(errs, ctx, t->name, ej, el + 1);
                cli_buf_add(&b, ", \"err\": %s", ej);
                free(ej);
            }
        }
        cli_buf_add(&b, "}");
        if (o->progress) {
            fprintf(stderr, "  %-32s kld %.6g", t->name, kld[0]);
            for (size_t k = 1; k < n_ref; ++k) fprintf(stderr, ", %s %.6g", anvil_type_name(ctx, refs[k]), kld[k]);
            fprintf(stderr, "\n");
        }
        ++n_out;
    }
    if (rc == ANVIL_OK) cli_buf_add(&b, "\n  ]\n}\n");
    if (rc == ANVIL_OK && b.failed) {
        snprintf(err->message, sizeof err->message, "out of memory");
        rc = err->code = ANVIL_E_NOMEM;
    }
    if (rc == ANVIL_OK) {
        *json = b.data;
        *json_len = b.len;
        b.data = NULL;
    }
    cli_buf_free(&b);
    free(pert);
    free(text);
    anvil_gguf_close(g);
    sens_close(&r);
    return rc;
}

int cli_sens_verify(anvil_ctx *ctx, const char *model_path, const char *text_path, const anvil_imatrix *im,
                    const cli_sens_opts *o, anvil_transcode *const *plans, size_t n_plans, double *kld,
                    anvil_error *err) {
    sens_run r;
    anvil_gguf *g = NULL;
    int rc = sens_open(&r, ctx, model_path, text_path, o, NULL, NULL, NULL, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_open(&g, model_path, ctx, 0, err);
    const size_t nt = g != NULL ? anvil_gguf_tensor_count(g) : 0;
    void **pert = rc == ANVIL_OK ? calloc(nt ? nt : 1, sizeof *pert) : NULL;
    if (rc == ANVIL_OK && pert == NULL) {
        snprintf(err->message, sizeof err->message, "out of memory");
        rc = err->code = ANVIL_E_NOMEM;
    }
    for (size_t p = 0; rc == ANVIL_OK && p < n_plans; ++p) {
        /* every matrix of the forward pass the plan encodes, through its type */
        for (size_t i = 0; rc == ANVIL_OK && i < anvil_transcode_count(plans[p]); ++i) {
            const anvil_transcode_tensor *it = anvil_transcode_tensor_at(plans[p], i);
            const anvil_gguf_tensor *t = anvil_gguf_find_tensor(g, it->name);
            if (t == NULL || it->dst_type == t->type || t->n_dims < 2) continue;
            size_t k = 0;
            while (k < nt && anvil_gguf_tensor_at(g, k) != t) ++k;
            if (k == nt) continue;
            free(pert[k]);
            pert[k] = malloc((size_t)t->n_bytes);
            if (pert[k] == NULL) {
                snprintf(err->message, sizeof err->message, "out of memory for tensor %s", t->name);
                rc = err->code = ANVIL_E_NOMEM;
                break;
            }
            rc = perturb(&r, t, im, it->dst_type, pert[k], err);
            if (rc == ANVIL_OK) rc = anvil_model_set_weight(r.m, t->name, pert[k], err);
            if (rc == ANVIL_E_NOT_FOUND) { /* not a matrix of the forward pass */
                anvil_model_set_weight(r.m, t->name, NULL, NULL);
                rc = ANVIL_OK;
            }
        }
        if (rc == ANVIL_OK) rc = run_kld(&r, 0, 0, &kld[p], err);
        for (size_t k = 0; k < nt; ++k) {
            if (pert[k] == NULL) continue;
            anvil_model_set_weight(r.m, anvil_gguf_tensor_at(g, k)->name, NULL, NULL);
            free(pert[k]);
            pert[k] = NULL;
        }
    }
    free(pert);
    anvil_gguf_close(g);
    sens_close(&r);
    return rc;
}
