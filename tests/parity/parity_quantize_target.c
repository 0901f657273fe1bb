/* SPDX-License-Identifier: MIT */
/*
 * Parity family "quantize", the --target-size case: the plan file a target
 * plan writes (--plan-out) reproduces the file's tensors with llama.cpp
 * alone. anvil plans the trained test model for a size, writes the file and
 * the plan; the plan is read as llama-quantize reads --tensor-type-file
 * (white-space separated PATTERN=TYPE, the type by ggml's name, any case)
 * and handed to llama_model_quantize (preset Q8_0, the same importance
 * matrix, normalised as llama-quantize hands it over); each tensor of the
 * two files must have the same type and the same bytes. The metadata
 * differs by design (general.file_type, quantize.target_size).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/gguf.h"
#include "anvil/quantize.h"
#include "anvil/transcode.h"
#include "parity_quantize_target.h"
#include "read_file.h"
#include "test_env.h"

#define QZ_MAX_RULES 256

/* --tensor-type-file as llama-quantize reads it: items separated by white
 * space, PATTERN=TYPE. */
static size_t read_rules(anvil_ctx *ctx, char *text, lq_tensor_type *tts, size_t max) {
    size_t n = 0;
    for (char *tok = strtok(text, " \t\r\n"); tok != NULL && n + 1 < max; tok = strtok(NULL, " \t\r\n")) {
        char *eq = strchr(tok, '=');
        if (eq == NULL) return 0;
        *eq = '\0';
        uint32_t id;
        if (anvil_type_from_name(ctx, eq + 1, &id, NULL) != ANVIL_OK) return 0;
        tts[n].pattern = tok;
        tts[n].type = (int32_t)id;
        n++;
    }
    tts[n].pattern = NULL;
    tts[n].type = 0;
    return n;
}

/* Same type and bytes for every tensor of a in b: the count that differ. */
static size_t compare(anvil_ctx *ctx, const char *a, const char *b, size_t *checked) {
    anvil_gguf *ga = NULL, *gb = NULL;
    size_t bad = 0;
    if (anvil_gguf_open(&ga, a, ctx, 0, NULL) != ANVIL_OK || anvil_gguf_open(&gb, b, ctx, 0, NULL) != ANVIL_OK) {
        anvil_gguf_close(ga);
        return 1;
    }
    if (anvil_gguf_tensor_count(ga) != anvil_gguf_tensor_count(gb)) bad++;
    for (size_t i = 0; i < anvil_gguf_tensor_count(ga); ++i) {
        const anvil_gguf_tensor *x = anvil_gguf_tensor_at(ga, i), *y = anvil_gguf_find_tensor(gb, x->name);
        (*checked)++;
        if (y == NULL || x->type != y->type || x->n_bytes != y->n_bytes ||
            memcmp(x->data, y->data, x->n_bytes) != 0) {
            printf("  quantize target: tensor %s differs (anvil %s, llama.cpp %s)\n", x->name, x->type_info.name,
                   y ? y->type_info.name : "missing");
            bad++;
        }
    }
    anvil_gguf_close(ga);
    anvil_gguf_close(gb);
    return bad;
}

static size_t one_budget(parity_ctx *pc, llama_oracle *lo, anvil_ctx *ctx, const char *dir, const char *model,
                         const char *imp, uint64_t size) {
    char out_a[900], out_l[900], plan[900], label[160];
    snprintf(out_a, sizeof out_a, "%s/target-%llu.gguf", dir, (unsigned long long)size);
    snprintf(out_l, sizeof out_l, "%s/target-%llu.llama.gguf", dir, (unsigned long long)size);
    snprintf(plan, sizeof plan, "%s/target-%llu.plan", dir, (unsigned long long)size);
    snprintf(label, sizeof label, "--target-size %llu, plan through llama_model_quantize", (unsigned long long)size);
    anvil_imatrix *im = NULL;
    anvil_gguf *g = NULL;
    anvil_transcode *t = NULL;
    anvil_error err;
    memset(&err, 0, sizeof err);
    anvil_quantize_options o;
    anvil_quantize_options_init(&o);
    o.target_size = size;
    o.threads = 2;
    o.skip_quality = 1;
    o.imatrix_path = imp;
    int rc = anvil_imatrix_load(&im, imp, &err);
    o.imatrix = im;
    if (rc == ANVIL_OK) rc = anvil_gguf_open(&g, model, ctx, 0, &err);
    if (rc == ANVIL_OK) rc = anvil_quantize_plan(&t, ctx, g, out_a, &o, &err);
    if (rc == ANVIL_OK) rc = anvil_quantize_write_plan(t, plan, &err);
    if (rc == ANVIL_OK) rc = anvil_transcode_run(t, &err);
    size_t n_rules = 0, checked = 0, bad = 1;
    lq_tensor_type tts[QZ_MAX_RULES];
    char *text = NULL;
    if (rc == ANVIL_OK) {
        size_t len = 0;
        text = test_read_file(plan, &len);
        n_rules = text ? read_rules(ctx, text, tts, QZ_MAX_RULES) : 0;
    }
    lq_imatrix *ims = NULL;
    if (rc == ANVIL_OK && n_rules > 0) {
        const size_t n = anvil_imatrix_count(im);
        ims = calloc(n + 1, sizeof *ims);
        for (size_t i = 0; ims != NULL && i < n; ++i) {
            anvil_imatrix_entry e;
            anvil_imatrix_entry_at(im, i, &e);
            ims[i].name = e.name;
            ims[i].data = e.values;
            ims[i].size = e.n_values;
        }
        lq_quantize_params q = lo->qdefaults;
        q.nthread = 2;
        q.ftype = 7; /* Q8_0: every free tensor is named by a rule */
        q.imatrix = ims;
        q.tt_overrides = tts;
        llama_oracle_log_clear(lo);
        if (ims != NULL && lo->quantize(model, out_l, &q) == 0) {
            bad = compare(ctx, out_a, out_l, &checked);
        } else {
            char why[512];
            printf("  quantize target: llama_model_quantize failed: %s\n",
                   llama_oracle_log_last(lo, why, sizeof why));
        }
    } else {
        printf("  quantize target: %s\n",
               rc != ANVIL_OK ? err.message : "the plan file has no rule llama-quantize reads");
    }
    if (pc->verbose)
        printf("  quantize target %llu: %zu rules, %zu tensors compared\n", (unsigned long long)size, n_rules,
               checked);
    parity_report(pc, "quantize", label, checked ? checked : 1, bad);
    free(ims);
    free(text);
    anvil_transcode_free(t);
    anvil_gguf_close(g);
    anvil_imatrix_free(im);
    return bad;
}

int parity_quantize_target(parity_ctx *pc, llama_oracle *lo, anvil_ctx *ctx, const char *dir) {
    char model[700], imp[700];
    const char *p = test_shared_path("quality/tiny-code-llama.f16.gguf");
    snprintf(model, sizeof model, "%s", p ? p : "");
    p = test_shared_path("quality/tiny-code-llama.imatrix.gguf");
    snprintf(imp, sizeof imp, "%s", p ? p : "");
    if (model[0] == '\0' || imp[0] == '\0') {
        printf("quantize target: ../shared/testdata/quality is absent: the plan round trip is not checked\n");
        return 0;
    }
    /* IQ2_XS's and Q4_K_M's file sizes: the plans mix IQ, K and legacy types. */
    return one_budget(pc, lo, ctx, dir, model, imp, 1502048) + one_budget(pc, lo, ctx, dir, model, imp, 2667872);
}
