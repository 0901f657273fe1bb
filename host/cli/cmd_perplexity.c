/* SPDX-License-Identifier: MIT */
/*
 * anvil perplexity MODEL TEXT|--tokens FILE [--ctx N] [--chunks N]
 *                  [--threads N] [--base BASE.gguf] [--base-logits FILE]
 *                  [--kv-f32] [--json]
 *
 * llama-perplexity on anvil's forward pass (anvil/model.h): the perplexity
 * of MODEL over chunks of the tokens, and with --base the statistics of
 * llama-perplexity --kl-divergence. Text goes through the one tokenizer
 * call (anvil_model_tokenize): the model's vocabulary, as llama-perplexity.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "anvil/model.h"
#include "cli.h"

const char cli_help_perplexity[] =
    "usage: anvil perplexity MODEL.gguf TEXT|--tokens FILE [--ctx N] [--chunks N] [--threads N]\n"
    "                        [--base BASE.gguf] [--base-logits FILE] [--kv-f32] [--json]\n"
    "\n"
    "Perplexity as llama-perplexity scores it, on anvil's own forward pass (llama,\n"
    "qwen2, qwen3): the tokens cut into chunks of N (BOS first when the vocabulary\n"
    "adds one), the second half of each chunk scored. With --base: the KL\n"
    "divergence of MODEL's next-token distributions from BASE's and every figure of\n"
    "llama-perplexity --kl-divergence (mean, median, percentiles, same top token,\n"
    "both perplexities, ln ratio, RMS of the probability change).\n"
    "\n"
    "  --tokens FILE  token ids instead of TEXT, whitespace-separated, as llama_tokenize gives\n"
    "                 them (BOS first); TEXT is tokenized with the model's own vocabulary\n"
    "  --ctx N        tokens a chunk (default 512; at least 2 x N tokens are needed)\n"
    "  --chunks N     at most N chunks (default: all)\n"
    "  --threads N    worker threads (default: the config's, else every core)\n"
    "  --base FILE    the reference model for KL divergence (same vocabulary)\n"
    "  --base-logits FILE  the base's side saved: when FILE exists it is read instead of\n"
    "                 evaluating a base (--base not needed; same text, --ctx and --chunks);\n"
    "                 when it does not, --base is evaluated and saved to FILE\n"
    "  --kv-f32       keep K and V in f32 (default: rounded to f16 as llama.cpp's\n"
    "                 default KV cache)\n"
    "  --json         one JSON document on stdout (JSON.md)\n";

typedef struct ppl_args {
    const char *model, *text, *tokens, *base, *base_logits;
    unsigned long long ctx, chunks, threads;
    int json, kv_f32;
} ppl_args;

static int parse_args(int argc, char **argv, ppl_args *a) {
    *a = (ppl_args){ .ctx = 512 };
    for (int i = 1; i < argc; ++i) {
        const char *s = argv[i];
        const int has = i + 1 < argc;
        unsigned long long *num = strcmp(s, "--ctx") == 0 || strcmp(s, "-c") == 0       ? &a->ctx
                                  : strcmp(s, "--chunks") == 0                          ? &a->chunks
                                  : strcmp(s, "--threads") == 0 || strcmp(s, "-t") == 0 ? &a->threads
                                                                                        : NULL;
        if (num != NULL) {
            if (!has || cli_parse_count(argv[i + 1], 1, 1u << 24, num) != 0) {
                return cli_usage_error("perplexity", "%s needs a whole number from 1 to %u", s, 1u << 24);
            }
            ++i;
        } else if ((strcmp(s, "--tokens") == 0 || strcmp(s, "--base") == 0) && has) {
            *(s[2] == 't' ? &a->tokens : &a->base) = argv[++i];
        } else if (strcmp(s, "--base-logits") == 0 && has) {
            a->base_logits = argv[++i];
        } else if (strcmp(s, "--json") == 0) {
            a->json = 1;
        } else if (strcmp(s, "--kv-f32") == 0) {
            a->kv_f32 = 1;
        } else if (s[0] == '-' && s[1] != '\0') {
            return cli_usage_error("perplexity", "unknown option '%s'", s);
        } else if (a->model == NULL) {
            a->model = s;
        } else if (a->text == NULL) {
            a->text = s;
        } else {
            return cli_usage_error("perplexity", "one MODEL and one TEXT: '%s' is one too many", s);
        }
    }
    if (a->model == NULL) return cli_usage_error("perplexity", "no MODEL given");
    if ((a->text == NULL) == (a->tokens == NULL)) {
        return cli_usage_error("perplexity", "give the text as TEXT or its token ids as --tokens FILE (one of them)");
    }
    return 0;
}

/* The one place text becomes tokens (anvil_model_tokenize). */
static int read_input(const ppl_args *a, const anvil_model *m, uint32_t n_vocab, int32_t **tok, size_t *n,
                      anvil_error *err) {
    if (a->tokens != NULL) return anvil_tokens_read(a->tokens, n_vocab, tok, n, err);
    void *text = NULL;
    size_t len = 0;
    int rc = cli_read_file(a->text, &text, &len, err);
    if (rc != ANVIL_OK) return rc;
    if (len > 0 && ((char *)text)[len - 1] == '\n') --len; /* llama.cpp's -f */
    rc = anvil_model_tokenize(m, text, len, tok, n, err);
    free(text);
    return rc;
}

static void progress(void *arg, int chunk, int n_chunks, double seconds) {
    (void)arg;
    fprintf(stderr, "\ranvil perplexity: chunk %d/%d, %.1f s, ETA %.0f s   ", chunk, n_chunks, seconds,
            seconds / chunk * (n_chunks - chunk));
    if (chunk == n_chunks) fprintf(stderr, "\n");
}

static void print_json(const ppl_args *a, const anvil_ppl_result *r) {
    cli_json_begin(stdout, "perplexity");
    printf(",\"model\":");
    cli_json_string(stdout, a->model);
    printf(",\"base\":");
    cli_json_string(stdout, a->base);
    printf(",\"base_logits\":");
    cli_json_string(stdout, a->base_logits);
    printf(",\"tokens\":%llu,\"chunks\":%llu,\"ctx\":%llu,\"scored\":%llu", (unsigned long long)r->tokens,
           (unsigned long long)r->chunks, a->ctx, (unsigned long long)r->count);
    cli_json_member_number(stdout, "ppl", "%.6f", r->ppl);
    cli_json_member_number(stdout, "ppl_unc", "%.6f", r->ppl_unc);
    cli_json_member_number(stdout, "tokens_per_s", "%.1f", r->tokens_per_s);
    if (r->has_base) {
        static const char *const keys[] = { "ppl_base",   "ppl_base_unc", "ln_ratio", "ln_ratio_unc", "kld_mean",
                                            "kld_unc",    "kld_median",   "kld_p90",  "kld_p99",      "kld_p999",
                                            "kld_max",    "kld_min",      "top1",     "top1_unc",     "rms_dp",
                                            "rms_dp_unc", "max_dp" };
        const double v[] = { r->ppl_base,   r->ppl_base_unc, r->ln_ratio, r->ln_ratio_unc, r->kld,     r->kld_unc,
                             r->kld_median, r->kld_p90,      r->kld_p99,  r->kld_p999,     r->kld_max, r->kld_min,
                             r->top1,       r->top1_unc,     r->rms_dp,   r->rms_dp_unc,   r->max_dp };
        for (size_t i = 0; i < sizeof v / sizeof v[0]; ++i) cli_json_member_number(stdout, keys[i], "%.9g", v[i]);
    }
    printf("}\n");
}

static void print_text(const anvil_ppl_result *r) {
    printf("chunks %llu, %llu positions scored, %.1f tokens/s\n", (unsigned long long)r->chunks,
           (unsigned long long)r->count, r->tokens_per_s);
    printf("Final estimate: PPL = %.4f +/- %.5f\n", r->ppl, r->ppl_unc);
    if (!r->has_base) return;
    printf("\n====== Perplexity statistics ======\n");
    printf("Mean PPL(Q)                   : %10.6f +/- %10.6f\n", r->ppl, r->ppl_unc);
    printf("Mean PPL(base)                : %10.6f +/- %10.6f\n", r->ppl_base, r->ppl_base_unc);
    printf("Mean ln(PPL(Q)/PPL(base))     : %10.6f +/- %10.6f\n", r->ln_ratio, r->ln_ratio_unc);
    printf("\n====== KL divergence statistics ======\n");
    printf("Mean    KLD: %10.6f +/- %10.6f\n", r->kld, r->kld_unc);
    printf("Maximum KLD: %10.6f\n99.9%%   KLD: %10.6f\n99.0%%   KLD: %10.6f\n90.0%%   KLD: %10.6f\n", r->kld_max,
           r->kld_p999, r->kld_p99, r->kld_p90);
    printf("Median  KLD: %10.6f\nMinimum KLD: %10.6f\n", r->kld_median, r->kld_min);
    printf("\n====== Token probability statistics ======\n");
    printf("RMS Δp    : %6.3f +/- %5.3f %%\nMaximum Δp: %6.3f%%\n", 100 * r->rms_dp, 100 * r->rms_dp_unc,
           100 * r->max_dp);
    printf("Same top p: %6.3f +/- %5.3f %%\n", 100 * r->top1, 100 * r->top1_unc);
}

int cmd_perplexity(cli_globals *g, int argc, char **argv) {
    if (cli_wants_help(argc, argv)) return cli_help("perplexity");
    ppl_args a;
    const int parsed = parse_args(argc, argv, &a);
    if (parsed != 0) return parsed;
    cli_set_json(a.json);
    anvil_ctx *ctx = cli_ctx(g);
    if (ctx == NULL) return CLI_EXIT_FAIL;
    if (a.threads > 0) anvil_ctx_set_threads(ctx, (unsigned)a.threads);
    anvil_error err;
    memset(&err, 0, sizeof err);
    const anvil_model_opts mo = { .size = sizeof mo, .kv_f16 = !a.kv_f32 };
    anvil_model *m = NULL, *base = NULL;
    int32_t *tok = NULL;
    size_t n = 0;
    anvil_model_info info = { .size = sizeof info };
    int rc = anvil_model_open(&m, ctx, a.model, &mo, &err);
    if (rc == ANVIL_OK && a.base != NULL) rc = anvil_model_open(&base, ctx, a.base, &mo, &err);
    if (rc == ANVIL_OK) rc = anvil_model_get_info(m, &info);
    if (rc == ANVIL_OK) rc = read_input(&a, m, info.n_vocab, &tok, &n, &err);
    if (rc == ANVIL_OK && info.n_ctx_train > 0 && a.ctx > info.n_ctx_train) {
        fprintf(stderr,
                "anvil perplexity: warning: --ctx %llu > the model's training context %u -- possible "
                "training context overflow\n",
                a.ctx, info.n_ctx_train);
    }
    anvil_ppl_result r = { .size = sizeof r };
    const anvil_ppl_opts po = { .size = sizeof po,
                                .n_ctx = (int)a.ctx,
                                .n_chunks = (int)a.chunks,
                                .progress = !a.json && isatty(2) ? progress : NULL,
                                .base_logits = a.base_logits };
    if (rc == ANVIL_OK) rc = anvil_perplexity(m, base, tok, n, &po, &r, &err);
    int exit_code = CLI_EXIT_OK;
    if (rc != ANVIL_OK) {
        exit_code = cli_fail_err("perplexity", &err);
    } else if (a.json) {
        print_json(&a, &r);
    } else {
        print_text(&r);
    }
    free(tok);
    anvil_model_close(base);
    anvil_model_close(m);
    return exit_code;
}
