/* SPDX-License-Identifier: MIT */
/*
 * anvil-kld: the quality benchmark. What `llama-perplexity --kl-divergence`
 * reports -- mean KL(P_base || P_quant) of the next-token distributions with
 * its uncertainty, its median and upper percentiles, how often both models
 * put the same token first, and both perplexities -- for one or more
 * quantized GGUF files against their base model, evaluated by llama.cpp
 * itself (libllama from the oracle, CPU). See kld_eval.h for the protocol
 * and host/src/model/mdl_stats.c for the arithmetic.
 *
 * Exit status: 0 done, 1 a model or the text failed (the message says which
 * and why), 2 usage, 77 the oracle is missing (without --require-oracle).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kld_eval.h"

#ifndef ANVIL_DEFAULT_ORACLE_DIR
#define ANVIL_DEFAULT_ORACLE_DIR ""
#endif
#ifndef ANVIL_SHARED_TESTDATA
#define ANVIL_SHARED_TESTDATA "../shared/testdata"
#endif

static const char usage[] =
    "usage: anvil-kld [options] BASE.gguf [MODEL.gguf ...]\n"
    "  KL divergence of each MODEL's next-token distributions from BASE's, as\n"
    "  llama-perplexity --kl-divergence computes it, evaluated by llama.cpp (CPU):\n"
    "  the text cut into chunks of --ctx tokens (BOS first), the second half of\n"
    "  every chunk scored. Prints mean KLD (+- its uncertainty), median, 99th\n"
    "  percentile, top-1 agreement and both perplexities. BASE's log-probabilities\n"
    "  are cached, so later runs evaluate only the MODELs.\n"
    "options:\n"
    "  --text FILE       held-out text (default " ANVIL_SHARED_TESTDATA "/quality/heldout.txt)\n"
    "  --oracle DIR      folder of libllama.v0.5.0.so (default " ANVIL_DEFAULT_ORACLE_DIR ")\n"
    "  --ctx N           tokens a chunk (default 256)\n"
    "  --chunks N        the first N chunks only (default: all the text holds)\n"
    "  --threads N       llama.cpp's threads (default 1: its spinning workers\n"
    "                    crawl on a busy machine); figures are the same\n"
    "                    for the same thread count\n"
    "  --cache FILE      the base's cache (default $TMPDIR/anvil-kld-<key>.cache)\n"
    "  --json            one JSON document on stdout\n"
    "  --markdown        a Markdown table: model, bytes, bpw, KLD, top-1, PPL\n"
    "  --quiet           no progress on stderr\n"
    "  --require-oracle  a missing oracle fails (exit 1) instead of skipping (77)\n";

typedef struct args {
    kld_opts o;
    int json, markdown, require_oracle;
    const char *base;
    const char **models;
    int n_models;
} args;

static int parse_int(const char *s, int lo, int hi, int *out) {
    char *end;
    const long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

static int parse_args(int argc, char **argv, args *a) {
    static char text[1200];
    snprintf(text, sizeof text, "%s/quality/heldout.txt", ANVIL_SHARED_TESTDATA);
    a->o = (kld_opts){
        .oracle_dir = ANVIL_DEFAULT_ORACLE_DIR, .text_path = text, .n_ctx = 256, .threads = 1, .verbose = 1
    };
    a->models = calloc((size_t)argc, sizeof *a->models);
    if (a->models == NULL) return -1;
    for (int i = 1; i < argc; ++i) {
        const char *s = argv[i];
        const int has = i + 1 < argc;
        if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
            fputs(usage, stdout);
            exit(0);
        } else if (strcmp(s, "--json") == 0) {
            a->json = 1;
        } else if (strcmp(s, "--markdown") == 0) {
            a->markdown = 1;
        } else if (strcmp(s, "--quiet") == 0) {
            a->o.verbose = 0;
        } else if (strcmp(s, "--require-oracle") == 0) {
            a->require_oracle = 1;
        } else if (has && strcmp(s, "--text") == 0) {
            a->o.text_path = argv[++i];
        } else if (has && strcmp(s, "--oracle") == 0) {
            a->o.oracle_dir = argv[++i];
        } else if (has && strcmp(s, "--cache") == 0) {
            a->o.cache_path = argv[++i];
        } else if (has && strcmp(s, "--ctx") == 0) {
            if (parse_int(argv[++i], 4, 65536, &a->o.n_ctx) != 0)
                return fprintf(stderr, "anvil-kld: --ctx takes 4..65536, not '%s'\n", argv[i]), -1;
        } else if (has && strcmp(s, "--chunks") == 0) {
            if (parse_int(argv[++i], 1, 1 << 30, &a->o.n_chunks) != 0)
                return fprintf(stderr, "anvil-kld: --chunks takes a count >= 1, not '%s'\n", argv[i]), -1;
        } else if (has && strcmp(s, "--threads") == 0) {
            if (parse_int(argv[++i], 1, 512, &a->o.threads) != 0)
                return fprintf(stderr, "anvil-kld: --threads takes 1..512, not '%s'\n", argv[i]), -1;
        } else if (s[0] == '-' && s[1] != '\0') {
            fprintf(stderr, "anvil-kld: unknown option or missing value: %s (see --help)\n", s);
            return -1;
        } else if (a->base == NULL) {
            a->base = s;
        } else {
            a->models[a->n_models++] = s;
        }
    }
    if (a->base == NULL) {
        fputs(usage, stderr);
        return -1;
    }
    return 0;
}

/* A JSON string (paths may hold anything). */
static void json_str(const char *s) {
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; ++p) {
        if (*p == '"' || *p == '\\') printf("\\%c", *p);
        else if (*p < 0x20) printf("\\u%04x", *p);
        else putchar(*p);
    }
    putchar('"');
}

static void json_num(const char *key, double v) {
    printf(",\"%s\":", key);
    if (isfinite(v)) printf("%.9g", v);
    else printf("null");
}

static void print_json_model(const char *path, const kld_result *r, const char *error) {
    printf("{\"path\":");
    json_str(path);
    if (error != NULL) {
        printf(",\"error\":");
        json_str(error);
        printf("}");
        return;
    }
    const anvil_ppl_result *s = &r->s;
    printf(",\"bytes\":%llu,\"params\":%llu", (unsigned long long)r->bytes, (unsigned long long)r->n_params);
    json_num("bpw", r->bpw);
    json_num("ppl", s->ppl);
    json_num("ppl_unc", s->ppl_unc);
    json_num("ppl_base", s->ppl_base);
    json_num("ppl_base_unc", s->ppl_base_unc);
    json_num("ln_ppl_ratio", s->ln_ratio);
    json_num("ln_ppl_ratio_unc", s->ln_ratio_unc);
    json_num("kld", s->kld);
    json_num("kld_unc", s->kld_unc);
    json_num("kld_median", s->kld_median);
    json_num("kld_p90", s->kld_p90);
    json_num("kld_p99", s->kld_p99);
    json_num("kld_p999", s->kld_p999);
    json_num("kld_max", s->kld_max);
    json_num("top1", s->top1);
    json_num("top1_unc", s->top1_unc);
    json_num("rms_dp", s->rms_dp);
    json_num("rms_dp_unc", s->rms_dp_unc);
    json_num("seconds", r->seconds);
    printf("}");
}

static void print_text_model(const char *path, const kld_result *r) {
    const anvil_ppl_result *s = &r->s;
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    printf("%-32s %10llu %6.3f %9.4f %9.4f %10.6f %9.6f %9.6f %9.6f %7.3f %6.3f %6.1f\n", name,
           (unsigned long long)r->bytes, r->bpw, s->ppl, s->ppl_base, s->kld, s->kld_unc, s->kld_median, s->kld_p99,
           100.0 * s->top1, 100.0 * s->top1_unc, r->seconds);
}

static void print_markdown_model(const char *path, const kld_result *r) {
    const anvil_ppl_result *s = &r->s;
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    const size_t len = strlen(name) > 5 && strcmp(name + strlen(name) - 5, ".gguf") == 0 ? strlen(name) - 5
                                                                                         : strlen(name);
    printf("| %.*s | %llu | %.3f | %.6f ± %.6f | %.3f | %.5f | %.3f |\n", (int)len, name,
           (unsigned long long)r->bytes, r->bpw, s->kld, s->kld_unc, s->top1, s->kld_p99, s->ppl);
}

static void print_header(const args *a, const kld_bench *b) {
    if (a->markdown) {
        printf("%s: %d chunks of %d tokens (%llu positions scored)\n\n", a->o.text_path, b->n_chunks, a->o.n_ctx,
               (unsigned long long)b->n_chunks * (unsigned long long)b->n_scored);
        printf("| model | bytes | file bpw | mean KLD | top-1 | 99%% KLD | PPL |\n|---|---|---|---|---|---|---|\n");
        return;
    }
    if (a->json) {
        printf("{\"text\":");
        json_str(a->o.text_path);
        printf(",\"tokens\":%zu,\"ctx\":%d,\"chunks\":%d,\"scored\":%llu,\"threads\":%d,\"base\":", b->n_tokens,
               a->o.n_ctx, b->n_chunks, (unsigned long long)b->n_chunks * (unsigned long long)b->n_scored,
               a->o.threads);
        json_str(a->base);
        printf(",\"cache\":");
        json_str(b->cache_path);
        json_num("base_seconds", b->base_seconds);
        printf(",\"models\":[");
        return;
    }
    printf("text %s: %zu tokens, %d chunks of %d, %d positions scored a chunk (%llu in all)\n", a->o.text_path,
           b->n_tokens, b->n_chunks, a->o.n_ctx, b->n_scored,
           (unsigned long long)b->n_chunks * (unsigned long long)b->n_scored);
    printf("base %s: %s %s", a->base, b->base_seconds > 0 ? "evaluated, cached in" : "from the cache", b->cache_path);
    if (b->base_seconds > 0) printf(" (%.1f s)", b->base_seconds);
    printf("\n%-32s %10s %6s %9s %9s %10s %9s %9s %9s %7s %6s %6s\n", "model", "bytes", "bpw", "PPL(Q)", "PPL(base)",
           "mean_KLD", "+-", "median", "99%", "top1_%", "+-", "s");
}

int main(int argc, char **argv) {
    args a = { 0 };
    if (parse_args(argc, argv, &a) != 0) return 2;
    kld_bench b;
    char why[2048];
    const int rc = kld_open(&b, a.base, &a.o, why, sizeof why);
    if (rc != 0) {
        fprintf(stderr, "anvil-kld: %s\n", why);
        if (rc == -2 && !a.require_oracle) fprintf(stderr, "anvil-kld: skipped (no oracle)\n");
        return rc == -2 && !a.require_oracle ? 77 : 1;
    }
    print_header(&a, &b);
    int failed = 0;
    anvil_ppl_result base = { 0 };
    for (int i = 0; i < a.n_models; ++i) {
        kld_result r;
        const int bad = kld_eval(&b, a.models[i], &r, why, sizeof why) != 0;
        if (bad) {
            fprintf(stderr, "anvil-kld: %s\n", why);
            failed = 1;
        } else {
            base = r.s;
        }
        if (a.json) {
            if (i > 0) putchar(',');
            print_json_model(a.models[i], &r, bad ? why : NULL);
        } else if (!bad && a.markdown) {
            print_markdown_model(a.models[i], &r);
        } else if (!bad) {
            print_text_model(a.models[i], &r);
        }
        fflush(stdout);
    }
    if (a.json) printf("]}\n");
    if (a.markdown && base.count > 0) {
        printf("\nbase %s: PPL %.4f ± %.4f; ", a.base, base.ppl_base, base.ppl_base_unc);
        if (b.base_seconds > 0) printf("evaluated in %.1f s (%d threads)\n", b.base_seconds, a.o.threads);
        else printf("from the cache %s\n", b.cache_path);
    }
    kld_close(&b);
    free(a.models);
    return failed;
}
