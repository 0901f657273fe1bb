/* SPDX-License-Identifier: MIT */
/*
 * anvil_imat_collect: llama-imatrix's compute_imatrix + collect_imatrix on
 * anvil's forward pass. The tokens are cut into n / n_ctx chunks (at most
 * n_chunks), each chunk's first token replaced by BOS when the vocabulary
 * adds one, and each chunk evaluated as one sequence with the model's
 * observer set: every product of a blk.* weight (output.weight with
 * process_output; expert slices whatever their name, as ggml's
 * mul_mat_id is always collected) adds its input rows' squares. The
 * observer runs on the evaluating thread, row after row, so the sums do
 * not depend on the thread count. llama-imatrix ignores mul_mat of fewer
 * than 16 rows; a chunk is at least 16 tokens here (n_ctx < 16 refused),
 * so every dense product is collected.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "mdl_imat.h"
#include "model_internal.h"

typedef struct collect_run {
    anvil_imat *im;
    int process_output;
    int rc;
    anvil_error err;
} collect_run;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void observe(void *arg, const char *weight, uint32_t expert, uint32_t n_expert, const float *x, size_t n_rows,
                    size_t n_cols) {
    collect_run *r = arg;
    if (r->rc != ANVIL_OK) return;
    const int wanted = n_expert > 1 || strncmp(weight, "blk.", 4) == 0 ||
                       (r->process_output && strcmp(weight, "output.weight") == 0);
    if (!wanted) return;
    r->rc = anvil_imat_accumulate(r->im, weight, expert, n_expert, x, n_rows, n_cols, &r->err);
    if (r->rc != ANVIL_OK) return;
    /* llama-imatrix stops on a non-finite sum */
    const imat_ent *e = mdl_imat_entry(r->im, weight, (uint32_t)n_cols, n_expert, &r->err);
    const float *s = e ? e->sums + (size_t)expert * n_cols : NULL;
    for (size_t j = 0; s != NULL && j < n_cols; ++j) {
        if (!isfinite(s[j])) {
            r->rc = anvil__error_set(&r->err, ANVIL_E_FORMAT,
                                     "non-finite values in the inputs of %s (the model overflows on this text)",
                                     weight);
            return;
        }
    }
}

static int check_args(const anvil_model *m, size_t n, const anvil_imat_opts *o, int n_ctx, anvil_error *err) {
    if (n_ctx < 16) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "--ctx %d: llama-imatrix collects no product of fewer than 16 rows; use 16 or more",
                                n_ctx);
    }
    if (n / 2 < (size_t)n_ctx) {
        return anvil__error_set(
            err, ANVIL_E_INVALID_ARG,
            "the text is %zu tokens; a context of %d needs at least %d (llama-imatrix's rule: two "
            "chunks)",
            n, n_ctx, 2 * n_ctx);
    }
    (void)m;
    (void)o;
    return ANVIL_OK;
}

static int run_chunks(anvil_model *m, const int32_t *tokens, int n_chunks, int n_ctx, const anvil_imat_opts *o,
                      collect_run *r, double *seconds, anvil_error *err) {
    const size_t nc = (size_t)n_ctx;
    int32_t *tok = malloc(nc * sizeof *tok);
    float *logits = NULL;
    if (o->process_output && nc > SIZE_MAX / sizeof(float) / m->info.n_vocab) {
        free(tok);
        return anvil__error_set(err, ANVIL_E_OVERFLOW, "logits of %d tokens overflow", n_ctx);
    }
    if (o->process_output) logits = malloc(nc * m->info.n_vocab * sizeof *logits);
    if (tok == NULL || (o->process_output && logits == NULL)) {
        free(tok);
        free(logits);
        return anvil__nomem(err);
    }
    int rc = ANVIL_OK;
    double t = 0.0;
    for (int c = 0; rc == ANVIL_OK && c < n_chunks; ++c) {
        memcpy(tok, tokens + (size_t)c * nc, nc * sizeof *tok);
        if (m->info.add_bos && m->info.bos >= 0) tok[0] = m->info.bos;
        const double t0 = now_s();
        rc = mdl_eval(m, tok, nc, logits, err);
        t += now_s() - t0;
        if (rc == ANVIL_OK && r->rc != ANVIL_OK) {
            rc = r->rc;
            if (err != NULL) *err = r->err;
        }
        if (rc != ANVIL_OK) anvil__error_prefix(err, "chunk %d", c);
        else if (o->progress) o->progress(o->progress_arg, c + 1, n_chunks, t);
    }
    if (seconds) *seconds = t;
    free(tok);
    free(logits);
    return rc;
}

ANVIL_API int anvil_imat_collect(anvil_model *m, const int32_t *tokens, size_t n, const anvil_imat_opts *opts,
                                 anvil_imat *im, double *seconds, anvil_error *err) {
    anvil__error_clear(err);
    if (m == NULL || im == NULL || (n > 0 && tokens == NULL)) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_imat_collect: NULL argument");
    }
    anvil_imat_opts o = { .size = sizeof o };
    if (opts != NULL) memcpy(&o, opts, opts->size < sizeof o ? opts->size : sizeof o);
    const int n_ctx = o.n_ctx > 0 ? o.n_ctx : 512;
    int rc = check_args(m, n, &o, n_ctx, err);
    if (rc != ANVIL_OK) return rc;
    size_t max_chunks = n / (size_t)n_ctx;
    if (max_chunks > INT32_MAX) max_chunks = INT32_MAX;
    const int n_chunks = o.n_chunks > 0 && (size_t)o.n_chunks < max_chunks ? o.n_chunks : (int)max_chunks;
    anvil_imat_set_chunk_size(im, (uint32_t)n_ctx);
    collect_run r = { .im = im, .process_output = o.process_output, .rc = ANVIL_OK };
    anvil_model_set_observer(m, observe, &r);
    rc = run_chunks(m, tokens, n_chunks, n_ctx, &o, &r, seconds, err);
    anvil_model_set_observer(m, NULL, NULL);
    return rc;
}
