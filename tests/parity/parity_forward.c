/* SPDX-License-Identifier: MIT */
/*
 * Parity family "forward": anvil's forward pass (anvil/model.h) against
 * llama.cpp's (libllama from the oracle folder) on the trained test model
 * ../shared/testdata/quality/tiny-code-llama.f16.gguf and its F32, Q8_0 and
 * Q4_K_M versions (made here by `anvil quantize`, which writes llama.cpp's
 * bytes).
 *
 *  - logits: the first FW_CTX tokens of heldout.txt (llama.cpp's tokenizer,
 *    BOS first) in one batch, llama.cpp with an f32 KV cache and flash
 *    attention off, anvil with f32 K/V; every position's distribution
 *    compared: KL(P_llama || P_anvil) below the file's bound is a pass
 *    (F32: 1e-5, the bound; the others: FW_BOUND_QUANT, stated);
 *    also llama3-bpe (rope_freqs), qwen2-bpe (biases, NEOX, tied, BF16),
 *    an SPM Q8_0 of ../shared/testdata/hf and a synthetic llama MoE.
 *  - perplexity: anvil_perplexity (f16 K/V) against llama-perplexity's
 *    scoring of llama.cpp's own logits (its default context: f16 KV cache)
 *    over FW_PPL_CHUNKS chunks of FW_PPL_CTX tokens: PPL within 0.5 %; with
 *    the F16 file as the base, the mean KLD of Q8_0 and Q4_K_M within 2 %.
 *  - speed: tokens/s of both for one chunk on the same thread count.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "anvil/anvil.h"
#include "anvil/model.h"
#include "model_internal.h"
#include "llama_oracle.h"
#include "parity.h"
#include "read_file.h"
#include "synth_model.h"
#include "test_env.h"

#define FW_CTX 256
#define FW_BOUND_F32 1e-5
#define FW_BOUND_QUANT 1e-4
/* A random-weight MoE in Q8_0: an int8 rounding flip of one activation can
 * move a router near a tie (measured: max 1.2e-4 at one of 256 positions,
 * mean 5e-6). */
#define FW_BOUND_MOE_Q8 1e-3
#define FW_PPL_CTX 256
#define FW_PPL_CHUNKS 8
#define FW_THREADS 2

typedef struct fw_env {
    parity_ctx *pc;
    llama_oracle *lo;
    anvil_ctx *ctx;
    char dir[512];
    int32_t *tokens;
    size_t n_tokens;
    int n_vocab;
    const char *text_path;
    anvil_ppl_result last; /* check_ppl's anvil figures */
} fw_env;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *ll_load(fw_env *e, const char *path, int vocab_only) {
    lq_model_params mp = e->lo->mdefaults;
    mp.vocab_only = vocab_only != 0;
    void *m = e->lo->load_model(path, mp);
    if (m == NULL) {
        char last[512];
        printf("forward: libllama refuses %s: %s\n", path, llama_oracle_log_last(e->lo, last, sizeof last));
    }
    return m;
}

/* kv_f32: type_k = type_v = f32 and flash attention off (else llama.cpp's defaults). */
static void *ll_context(fw_env *e, void *model, int n_ctx, int kv_f32) {
    lq_context_params cp = e->lo->cdefaults;
    cp.n_ctx = cp.n_batch = cp.n_ubatch = (uint32_t)n_ctx;
    cp.n_seq_max = 1;
    cp.n_threads = cp.n_threads_batch = FW_THREADS;
    cp.no_perf = true;
    if (kv_f32) {
        cp.type_k = cp.type_v = 0;
        cp.flash_attn_type = 0;
    }
    return e->lo->init_context(model, cp);
}

/* llama.cpp's logits of tok[0..n) (all positions) into out. */
static int ll_eval(fw_env *e, void *ctx, int32_t *tok, int n, float *out, double *seconds) {
    int32_t *pos = malloc((size_t)n * sizeof *pos), *nseq = malloc((size_t)n * sizeof *nseq);
    int32_t **seq = malloc((size_t)n * sizeof *seq), seq0 = 0;
    int8_t *want = malloc((size_t)n);
    int rc = pos && nseq && seq && want ? 0 : -1;
    for (int i = 0; rc == 0 && i < n; ++i) {
        pos[i] = i;
        nseq[i] = 1;
        seq[i] = &seq0;
        want[i] = 1;
    }
    if (rc == 0) {
        e->lo->memory_clear(e->lo->get_memory(ctx), true);
        const lq_batch b = {
            .n_tokens = n, .token = tok, .pos = pos, .n_seq_id = nseq, .seq_id = seq, .logits = want
        };
        const double t0 = now_s();
        rc = e->lo->decode(ctx, b) == 0 ? 0 : -1;
        if (seconds) *seconds = now_s() - t0;
    }
    for (int i = 0; rc == 0 && i < n; ++i) {
        const float *l = e->lo->logits_ith(ctx, i);
        if (l == NULL) rc = -1;
        else memcpy(out + (size_t)i * (size_t)e->n_vocab, l, (size_t)e->n_vocab * sizeof *out);
    }
    free(pos);
    free(nseq);
    free(seq);
    free(want);
    return rc;
}

static anvil_model *an_open(fw_env *e, const char *path, int kv_f16) {
    anvil_model *m = NULL;
    anvil_error err;
    memset(&err, 0, sizeof err);
    const anvil_model_opts o = { .size = sizeof o, .kv_f16 = kv_f16 };
    if (anvil_model_open(&m, e->ctx, path, &o, &err) != ANVIL_OK) printf("forward: %s\n", err.message);
    return m;
}

/* KL(P || Q) of two logit rows. */
static double row_kld(const float *p_logits, const float *q_logits, int n, float *lp, float *lq) {
    mdl_log_softmax(p_logits, n, lp);
    mdl_log_softmax(q_logits, n, lq);
    double kl = 0.0;
    for (int i = 0; i < n; ++i) kl += exp((double)lp[i]) * ((double)lp[i] - (double)lq[i]);
    return kl;
}

#define FW_GOLDEN_POS 32
#define FW_GOLDEN_TOP 4

/* tests/model's golden: the first FW_GOLDEN_POS tokens and, per position,
 * llama.cpp's FW_GOLDEN_TOP largest logits (id:logit) and the next token's. */
static void write_golden(fw_env *e, const float *ll) {
    char path[1024];
    snprintf(path, sizeof path, "%s/forward_logits.txt", e->pc->golden_dir);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        printf("forward: cannot write %s\n", path);
        return;
    }
    fprintf(f, "# tiny-code-llama.f16.gguf, llama.cpp (f32 KV cache): tokens, then per position top-%d id:logit\n",
            FW_GOLDEN_TOP);
    for (int i = 0; i < FW_GOLDEN_POS; ++i) fprintf(f, "%d%c", (int)e->tokens[i], i + 1 < FW_GOLDEN_POS ? ' ' : '\n');
    for (int i = 0; i < FW_GOLDEN_POS; ++i) {
        const float *row = ll + (size_t)i * e->n_vocab;
        int top[FW_GOLDEN_TOP];
        for (int t = 0; t < FW_GOLDEN_TOP; ++t) {
            top[t] = -1;
            for (int v = 0; v < e->n_vocab; ++v) {
                int used = 0;
                for (int u = 0; u < t; ++u) used |= top[u] == v;
                if (!used && (top[t] < 0 || row[v] > row[top[t]])) top[t] = v;
            }
            fprintf(f, "%d:%.6f%c", top[t], (double)row[top[t]], t + 1 < FW_GOLDEN_TOP ? ' ' : '\n');
        }
    }
    fclose(f);
    printf("forward: wrote %s\n", path);
}

/* Every position of one chunk: anvil against llama.cpp. */
/* Speed: FW_TIMING_REPS runs of each, alternating, the fastest of each
 * (the machine is shared; one decode alone is noisy). */
#define FW_TIMING_REPS 3
static void time_both(fw_env *e, void *lctx, anvil_model *am, int32_t *tok, float *ll, float *an, double *t_ll,
                      double *t_an) {
    for (int r = 0; r < FW_TIMING_REPS; ++r) {
        double t = 0;
        if (ll_eval(e, lctx, tok, FW_CTX, ll, &t) == 0 && t < *t_ll) *t_ll = t;
        anvil_error err;
        const double t0 = now_s();
        if (anvil_model_eval(am, tok, FW_CTX, an, &err) == ANVIL_OK && now_s() - t0 < *t_an) *t_an = now_s() - t0;
    }
}

static void check_forward_on(fw_env *e, const char *label, const char *path, double bound, const int32_t *tokens) {
    const size_t cells = (size_t)FW_CTX * (size_t)e->n_vocab;
    float *ll = malloc(cells * sizeof *ll), *an = malloc(cells * sizeof *an);
    float *lp = malloc((size_t)e->n_vocab * sizeof *lp), *lq = malloc((size_t)e->n_vocab * sizeof *lq);
    int32_t tok[FW_CTX];
    memcpy(tok, tokens, sizeof tok);
    void *model = ll && an && lp && lq ? ll_load(e, path, 0) : NULL;
    void *lctx = model ? ll_context(e, model, FW_CTX, 1) : NULL;
    anvil_model *am = lctx ? an_open(e, path, 0) : NULL;
    double t_ll = 0, t_an = 0;
    int ok = am != NULL && ll_eval(e, lctx, tok, FW_CTX, ll, &t_ll) == 0;
    if (ok) {
        anvil_error err;
        memset(&err, 0, sizeof err);
        const double t0 = now_s();
        ok = anvil_model_eval(am, tok, FW_CTX, an, &err) == ANVIL_OK;
        t_an = now_s() - t0;
        if (!ok) printf("forward: %s\n", err.message);
    }
    if (ok && e->pc->golden_dir != NULL && strcmp(label, "F16") == 0) write_golden(e, ll);
    if (ok) time_both(e, lctx, am, tok, ll, an, &t_ll, &t_an);
    size_t bad = 0;
    double max = 0, sum = 0;
    for (int i = 0; ok && i < FW_CTX; ++i) {
        const double kl = row_kld(ll + (size_t)i * e->n_vocab, an + (size_t)i * e->n_vocab, e->n_vocab, lp, lq);
        if (!(kl < bound)) ++bad;
        sum += kl;
        if (kl > max || kl != kl) max = kl;
    }
    char what[96];
    snprintf(what, sizeof what, "logits, KLD < %.0e a position", bound);
    printf("forward  %s: KLD vs llama.cpp (f32 KV) max %.3g mean %.3g; %d tokens: anvil %.0f t/s, llama.cpp %.0f t/s "
           "(%.2fx, %d threads)\n",
           label, max, ok ? sum / FW_CTX : 0.0, FW_CTX, FW_CTX / t_an, FW_CTX / t_ll, t_ll / t_an, FW_THREADS);
    parity_report(e->pc, label, what, ok ? FW_CTX : 0, ok ? bad : 1);
    anvil_model_close(am);
    if (lctx) e->lo->free_context(lctx);
    if (model) e->lo->free_model(model);
    free(ll);
    free(an);
    free(lp);
    free(lq);
}

static void check_forward(fw_env *e, const char *label, const char *path, double bound) {
    check_forward_on(e, label, path, bound, e->tokens);
}

/* A model of ../shared/testdata/hf (random weights, its own vocabulary):
 * the text's first FW_CTX tokens in that vocabulary. */
static void check_forward_hf(fw_env *e, const char *label, const char *name, const char *text_path) {
    char path[700];
    const char *p = test_shared_path(name);
    snprintf(path, sizeof path, "%s", p ? p : "");
    void *vm = p ? ll_load(e, path, 1) : NULL;
    size_t len = 0;
    char *text = vm ? test_read_file(text_path, &len) : NULL;
    int32_t *tok = text ? malloc((len + 2) * sizeof *tok) : NULL;
    int32_t n = -1;
    const int n_vocab_text = e->n_vocab;
    if (tok != NULL) {
        const void *vocab = e->lo->model_vocab(vm);
        n = e->lo->tokenize(vocab, text, (int32_t)len, tok, (int32_t)len + 2, true, false);
        e->n_vocab = e->lo->vocab_n_tokens(vocab);
    }
    if (n >= FW_CTX) {
        check_forward_on(e, label, path, FW_BOUND_QUANT, tok);
    } else {
        printf("forward: %s missing or its tokenization failed\n", name);
        parity_report(e->pc, label, "test model", 1, 1);
    }
    e->n_vocab = n_vocab_text;
    free(tok);
    free(text);
    if (vm) e->lo->free_model(vm);
}

static int make_file(fw_env *e, const char *src, const char *prefix, const char *type, char *out, size_t out_size) {
    snprintf(out, out_size, "%s/%s.%s.gguf", e->dir, prefix, type);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' quantize --allow-requantize '%s' '%s' %s 2 >/dev/null 2>&1", ANVIL_CLI, src, out,
             type);
    if (system(cmd) != 0) {
        printf("forward: `%s` failed\n", cmd);
        return -1;
    }
    return 0;
}

/* A Mixtral-style llama MoE (synth_model, F32 matrices, the test model's
 * vocabulary) and its Q8_0: the router, top-k and per-expert matmuls. */
static void check_moe(fw_env *e, const char *f16) {
    char path[700], q8[700];
    snprintf(path, sizeof path, "%s/moe.F32.gguf", e->dir);
    anvil_gguf *voc = NULL;
    anvil_error err;
    memset(&err, 0, sizeof err);
    int rc = anvil_gguf_open(&voc, f16, e->ctx, 0, &err);
    const synth_model sm = { .n_vocab = (uint32_t)e->n_vocab,
                             .n_embd = 128,
                             .n_ff = 256,
                             .n_layer = 2,
                             .n_head = 4,
                             .n_head_kv = 2,
                             .type = ANVIL_TYPE_F32,
                             .seed = 7,
                             .tokenizer_from = voc,
                             .n_expert = 8,
                             .n_expert_used = 2 };
    if (rc == ANVIL_OK) rc = synth_model_write(path, &sm, e->ctx, &err);
    anvil_gguf_close(voc);
    if (rc != ANVIL_OK) {
        printf("forward: synth MoE: %s\n", err.message);
        parity_report(e->pc, "moe", "synthetic MoE model", 1, 1);
        return;
    }
    check_forward(e, "moe-F32", path, FW_BOUND_F32);
    if (make_file(e, path, "moe", "Q8_0", q8, sizeof q8) == 0) {
        check_forward(e, "moe-Q8_0", q8, FW_BOUND_MOE_Q8);
        remove(q8);
    }
    remove(path);
}

/* llama-perplexity's figures of path (and KLD against base_path) from llama.cpp's own logits. */
static int ll_perplexity(fw_env *e, const char *path, const char *base_path, anvil_ppl_result *s) {
    const int n = FW_PPL_CTX, V = e->n_vocab, first = n / 2, n_scored = n - 1 - first;
    void *m = ll_load(e, path, 0), *b = base_path ? ll_load(e, base_path, 0) : NULL;
    void *c = m ? ll_context(e, m, n, 0) : NULL, *cb = b ? ll_context(e, b, n, 0) : NULL;
    float *lg = malloc((size_t)n * V * sizeof *lg), *lgb = malloc((size_t)n * V * sizeof *lgb);
    float *lp = malloc((size_t)V * sizeof *lp), *lpb = malloc((size_t)V * sizeof *lpb);
    float *klds = malloc((size_t)FW_PPL_CHUNKS * n_scored * sizeof *klds);
    int rc = c && (!base_path || cb) && lg && lgb && lp && lpb && klds ? 0 : -1;
    mdl_acc acc;
    memset(&acc, 0, sizeof acc);
    size_t nk = 0;
    for (int ch = 0; rc == 0 && ch < FW_PPL_CHUNKS; ++ch) {
        int32_t tok[FW_PPL_CTX];
        memcpy(tok, e->tokens + (size_t)ch * n, sizeof tok);
        tok[0] = e->tokens[0]; /* BOS */
        rc = ll_eval(e, c, tok, n, lg, NULL);
        if (rc == 0) rc = ll_eval(e, base_path ? cb : c, tok, n, lgb, NULL);
        for (int j = first; rc == 0 && j < n - 1; ++j) {
            const int next = e->tokens[(size_t)ch * n + j + 1];
            const int tq = mdl_log_softmax(lg + (size_t)j * V, V, lp);
            const int tb = mdl_log_softmax(lgb + (size_t)j * V, V, lpb);
            klds[nk++] = (float)mdl_kld_position(&acc, lpb, tb, lp, tq, V, next);
        }
    }
    if (rc == 0) mdl_summarize(&acc, klds, nk, s);
    if (c) e->lo->free_context(c);
    if (cb) e->lo->free_context(cb);
    if (m) e->lo->free_model(m);
    if (b) e->lo->free_model(b);
    free(lg);
    free(lgb);
    free(lp);
    free(lpb);
    free(klds);
    return rc;
}

static void check_ppl(fw_env *e, const char *label, const char *path, const char *base_path) {
    anvil_ppl_result ls;
    memset(&ls, 0, sizeof ls);
    const int ll_ok = ll_perplexity(e, path, base_path, &ls) == 0;
    anvil_model *am = an_open(e, path, 1), *ab = base_path ? an_open(e, base_path, 1) : NULL;
    anvil_ppl_result r = { .size = sizeof r };
    const anvil_ppl_opts o = { .size = sizeof o, .n_ctx = FW_PPL_CTX, .n_chunks = FW_PPL_CHUNKS };
    anvil_error err;
    memset(&err, 0, sizeof err);
    int ok = ll_ok && am != NULL && (base_path == NULL || ab != NULL) &&
             anvil_perplexity(am, ab, e->tokens, e->n_tokens, &o, &r, &err) == ANVIL_OK;
    if (!ok && err.message[0]) printf("forward: %s\n", err.message);
    const double dppl = ok ? fabs(r.ppl / ls.ppl - 1.0) : 1.0;
    printf("forward  %s: PPL anvil %.4f llama.cpp %.4f (%.3f %%)", label, r.ppl, ls.ppl, 100 * dppl);
    size_t bad = dppl < 0.005 ? 0 : 1, n = 1;
    if (base_path != NULL) {
        const double dk = ok && ls.kld > 0 ? fabs(r.kld / ls.kld - 1.0) : 1.0;
        printf("; KLD anvil %.6f llama.cpp %.6f (%.2f %%), top-1 %.4f / %.4f", r.kld, ls.kld, 100 * dk, r.top1,
               ls.top1);
        bad += dk < 0.02 ? 0 : 1;
        ++n;
    }
    printf("\n");
    parity_report(e->pc, label, base_path ? "PPL 0.5 %, KLD 2 % of llama.cpp's" : "PPL within 0.5 % of llama.cpp's",
                  ok ? n : 0, ok ? bad : 1);
    e->last = r;
    anvil_model_close(am);
    anvil_model_close(ab);
}

static double json_field(const char *doc, const char *key) {
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(doc, k);
    return p ? strtod(p + strlen(k), NULL) : NAN;
}

/* `anvil perplexity --tokens --base --json` gives anvil_perplexity's figures. */
static void check_cli(fw_env *e, const char *path, const char *base) {
    char tokens[700], cmd[4096], doc[8192] = "";
    snprintf(tokens, sizeof tokens, "%s/heldout.tokens", e->dir);
    FILE *f = fopen(tokens, "w");
    for (size_t i = 0; f != NULL && i < e->n_tokens; ++i)
        fprintf(f, "%d%c", (int)e->tokens[i], i % 16 == 15 ? '\n' : ' ');
    if (f != NULL) fclose(f);
    snprintf(cmd, sizeof cmd,
             "'%s' perplexity '%s' --tokens '%s' --base '%s' --ctx %d --chunks %d --threads %d --json", ANVIL_CLI,
             path, tokens, base, FW_PPL_CTX, FW_PPL_CHUNKS, FW_THREADS);
    FILE *p = popen(cmd, "r");
    size_t len = p ? fread(doc, 1, sizeof doc - 1, p) : 0;
    doc[len] = '\0';
    const int status = p ? pclose(p) : -1;
    const double ppl = json_field(doc, "ppl"), kld = json_field(doc, "kld_mean"), top1 = json_field(doc, "top1");
    const size_t bad = (status != 0) + !(fabs(ppl / e->last.ppl - 1) < 1e-6) + !(fabs(kld / e->last.kld - 1) < 1e-6) +
                       !(fabs(top1 - e->last.top1) < 1e-9);
    printf("forward  CLI: ppl %.6f kld_mean %.6g top1 %.4f (exit %d)\n", ppl, kld, top1, status);
    parity_report(e->pc, "CLI", "anvil perplexity --json = the API's", 4, bad);
    remove(tokens);
}


static int read_tokens(fw_env *e, const char *model_path, const char *text_path) {
    void *vm = ll_load(e, model_path, 1);
    size_t len = 0;
    char *text = vm ? test_read_file(text_path, &len) : NULL;
    int rc = text ? 0 : -1;
    if (rc == 0) {
        if (len > 0 && text[len - 1] == '\n') --len;
        const void *vocab = e->lo->model_vocab(vm);
        e->n_vocab = e->lo->vocab_n_tokens(vocab);
        e->tokens = malloc((len + 2) * sizeof *e->tokens);
        const int32_t n =
            e->tokens ? e->lo->tokenize(vocab, text, (int32_t)len, e->tokens, (int32_t)len + 2, true, false) : -1;
        rc = n >= FW_PPL_CTX * FW_PPL_CHUNKS ? 0 : -1;
        e->n_tokens = n > 0 ? (size_t)n : 0;
    }
    free(text);
    if (vm) e->lo->free_model(vm);
    return rc;
}

static void run_checks(fw_env *e, const char *f16) {
    static const char *const types[] = { "F32", "Q8_0", "Q4_K_M" };
    char paths[3][700];
    for (int i = 0; i < 3; ++i) {
        if (make_file(e, f16, "tcl", types[i], paths[i], sizeof paths[i]) != 0) {
            parity_report(e->pc, types[i], "anvil quantize of the test model", 1, 1);
            paths[i][0] = '\0';
        }
    }
    if (paths[0][0]) check_forward(e, "F32", paths[0], FW_BOUND_F32);
    check_forward(e, "F16", f16, FW_BOUND_QUANT);
    if (paths[1][0]) check_forward(e, "Q8_0", paths[1], FW_BOUND_QUANT);
    if (paths[2][0]) check_forward(e, "Q4_K_M", paths[2], FW_BOUND_QUANT);
    check_forward_hf(e, "llama3", "hf/llama3-bpe.f16.gguf", e->text_path);
    check_forward_hf(e, "qwen2", "hf/qwen2-bpe.bf16.gguf", e->text_path);
    check_forward_hf(e, "spm-q8_0", "hf/llama-spm-sharded.q8_0.gguf", e->text_path);
    check_moe(e, f16);
    check_ppl(e, "F16", f16, NULL);
    if (paths[1][0]) check_ppl(e, "Q8_0", paths[1], f16);
    if (paths[2][0]) check_ppl(e, "Q4_K_M", paths[2], f16);
    if (paths[2][0]) check_cli(e, paths[2], f16);
    for (int i = 0; i < 3; ++i) {
        if (paths[i][0]) remove(paths[i]);
    }
}

int parity_forward(parity_ctx *pc) {
    static llama_oracle lo;
    char why[2048];
    if (llama_oracle_open(&lo, pc->oracle->dir, why, sizeof why) != 0 ||
        llama_oracle_backends(&lo, why, sizeof why) != 0) {
        printf("forward libllama: %s\n", why);
        parity_report(pc, "forward", "libllama from the oracle folder", 1, 1);
        return 1;
    }
    fw_env e;
    memset(&e, 0, sizeof e);
    e.pc = pc;
    e.lo = &lo;
    anvil_error err;
    memset(&err, 0, sizeof err);
    if (anvil_ctx_open(&e.ctx, parity_config_path(), &err) != ANVIL_OK) {
        printf("forward: %s\n", err.message);
        parity_report(pc, "forward", "anvil context", 1, 1);
        return 1;
    }
    anvil_ctx_set_threads(e.ctx, FW_THREADS);
    char f16_path[700], text_path[700];
    const char *f16 = test_shared_path("quality/tiny-code-llama.f16.gguf");
    snprintf(f16_path, sizeof f16_path, "%s", f16 ? f16 : "");
    const char *text = test_shared_path("quality/heldout.txt");
    snprintf(text_path, sizeof text_path, "%s", text ? text : "");
    const char *tmp = getenv("TMPDIR");
    snprintf(e.dir, sizeof e.dir, "%s/anvil-parity-fw-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (f16 == NULL || text == NULL || read_tokens(&e, f16_path, text_path) != 0 || mkdtemp(e.dir) == NULL) {
        printf("forward: the test model or heldout.txt in ../shared/testdata/quality is missing or too short\n");
        parity_report(pc, "forward", "test model and text", 1, 1);
    } else {
        e.text_path = text_path;
        run_checks(&e, f16_path);
        rmdir(e.dir);
    }
    free(e.tokens);
    anvil_ctx_close(e.ctx);
    llama_oracle_close(&lo);
    return 0;
}
