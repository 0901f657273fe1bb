/* SPDX-License-Identifier: MIT */
/*
 * anvil imatrix stats FILE [--ctx N] [--json]
 *
 * llama-imatrix --show-statistics: per tensor, over its sums divided by
 * their counts (matrices never seen left out), in f32 as llama.cpp sums
 * them: Σ(Act²) (the total), min, max, mean μ, standard deviation σ, the
 * coefficient of variation σ/μ, the share of values above 1e-5 ("active"),
 * N values, the entropy of the values as a distribution (bits, and as a
 * share of log2 N), the share of values more than one σ above μ (ZD), and
 * the cosine similarity of the raw sums with the same tensor one block
 * earlier; rows sorted by tensor kind, then total descending; then the
 * per-layer averages weighted by N. A tensor with no data is warned about
 * and left out; a file with no data at all is an error.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_imatrix.h"

typedef struct tstat {
    const char *name;
    char layer[16], kind[64];
    int blk;
    const float *sums;
    size_t n_sums;
    float total, min, max, mean, dev, active, entropy, zd, cossim;
    int elements;
} tstat;

/* llama-imatrix's process_tensor_name: the block number and the component before "weight". */
static void split_name(tstat *t) {
    const char *b = strstr(t->name, "blk.");
    t->blk = -1;
    snprintf(t->layer, sizeof t->layer, "-");
    if (b == t->name || (b != NULL && b[-1] == '.')) {
        const char *d = b + 4;
        size_t n = strcspn(d, ".");
        if (n > 0 && n < sizeof t->layer) {
            snprintf(t->layer, sizeof t->layer, "%.*s", (int)n, d);
            char *end = NULL;
            long v = strtol(t->layer, &end, 10);
            if (end != t->layer) t->blk = (int)v;
        }
    }
    const char *w = strstr(t->name, ".weight");
    const char *start = t->name;
    snprintf(t->kind, sizeof t->kind, "%s", t->name);
    if (w != NULL && (w[7] == '\0' || w[7] == '.')) {
        const char *p = w;
        while (p > start && p[-1] != '.') --p;
        snprintf(t->kind, sizeof t->kind, "%.*s", (int)(w - p), p);
    }
}

static int compute(const anvil_imat_entry *e, tstat *t) {
    float *act = malloc((size_t)e->n_per * e->n_mat * sizeof *act + 1);
    if (act == NULL) return -1;
    size_t n = 0;
    for (uint32_t i = 0; i < e->n_mat; ++i) {
        if (e->counts[i] == 0) continue;
        for (uint32_t j = 0; j < e->n_per; ++j) act[n++] = e->sums[(size_t)i * e->n_per + j] / (float)e->counts[i];
    }
    if (n == 0) {
        free(act);
        return 1;
    }
    float total = 0.0f, sq = 0.0f, mx = act[0], mn = act[0];
    size_t inactive = 0;
    for (size_t i = 0; i < n; ++i) {
        total += act[i];
        sq += act[i] * act[i];
        mx = act[i] > mx ? act[i] : mx;
        mn = act[i] < mn ? act[i] : mn;
        inactive += fabsf(act[i]) <= 1e-5f;
    }
    t->total = total;
    t->min = mn;
    t->max = mx;
    t->mean = total / (float)n;
    const float var = sq / (float)n - t->mean * t->mean;
    t->dev = sqrtf(var > 0.0f ? var : 0.0f);
    t->active = 1.0f - (float)inactive / (float)n;
    t->entropy = 0.0f;
    for (size_t i = 0; total > 0.0f && i < n; ++i) {
        const float p = act[i] / total;
        if (p > 0.0f) t->entropy -= p * log2f(p);
    }
    size_t z = 0;
    for (size_t i = 0; t->dev > 0.0f && i < n; ++i) z += (act[i] - t->mean) / t->dev > 1.0f;
    t->elements = (int)n;
    t->zd = (float)z / (float)n;
    free(act);
    return 0;
}

static void cossim(tstat *ts, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        tstat *t = &ts[i];
        t->cossim = 0.0f;
        if (t->blk < 0) continue;
        for (size_t k = 0; k < n; ++k) {
            const tstat *p = &ts[k];
            if (p->blk != t->blk - 1 || strcmp(p->kind, t->kind) != 0 || p->n_sums != t->n_sums) continue;
            char want[512];
            snprintf(want, sizeof want, "blk.%d.%s", t->blk - 1, strchr(t->name + 4, '.') + 1);
            if (strcmp(p->name, want) != 0) continue;
            float dp = 0.0f, a = 0.0f, b = 0.0f;
            for (size_t j = 0; j < t->n_sums; ++j) {
                dp += t->sums[j] * p->sums[j];
                a += t->sums[j] * t->sums[j];
                b += p->sums[j] * p->sums[j];
            }
            t->cossim = dp / (sqrtf(a) * sqrtf(b));
        }
    }
}

static int cmp_stat(const void *pa, const void *pb) {
    const tstat *a = pa, *b = pb;
    const int c = strcmp(a->kind, b->kind);
    if (c != 0) return c;
    return a->total > b->total ? -1 : a->total < b->total ? 1 : strcmp(a->name, b->name);
}

static float entropy_norm(const tstat *t) {
    return t->elements > 0 ? 100.0f * (t->entropy / log2f((float)t->elements)) : 0.0f;
}

static void print_text(const char *path, const tstat *ts, size_t n) {
    printf("\nComputing statistics for %s (%zu tensors)\n\n", path, n);
    printf(" Layer\t       Tensor\t          Σ(Act²)\t  Min\t            Max\t           μ\t   σ\t %% Active\tN\t"
           "   Entropy\tE (norm)\tZD\t  CosSim\t    CV\n");
    for (size_t i = 0; i < n; ++i) {
        const tstat *t = &ts[i];
        printf(
            "%5s\t%-20s\t%10.2f\t%8.4f\t%11.4f\t%6.2f\t%6.2f\t%8.2f%%\t%6d\t%10.4f\t%6.2f%%\t%10.2f%%\t%8.4f\t%6.3f\n",
            t->layer, t->kind, t->total, t->min, t->max, t->mean, t->dev, t->active * 100.0f, t->elements, t->entropy,
            entropy_norm(t), 100.0f * t->zd, t->cossim, t->mean != 0.0f ? t->dev / t->mean : 0.0f);
    }
    printf("\nWeighted average statistics per layer\n\n  Layer\t     μΣ(Act²)\t      μZD\tμCosSim\n");
    int max_blk = -1;
    for (size_t i = 0; i < n; ++i) max_blk = ts[i].blk > max_blk ? ts[i].blk : max_blk;
    for (int b = 0; b <= max_blk; ++b) {
        float bias = 0.0f, zd = 0.0f, cs = 0.0f;
        int el = 0;
        for (size_t i = 0; i < n; ++i) {
            if (ts[i].blk != b) continue;
            bias += (float)ts[i].elements * ts[i].total;
            zd += (float)ts[i].elements * ts[i].zd;
            cs += (float)ts[i].elements * ts[i].cossim;
            el += ts[i].elements;
        }
        if (el > 0) printf("%5d\t%14.2f\t%10.4f%%\t%6.4f\n", b, bias / el, 100.0f * zd / el, cs / el);
    }
}

static void print_json(const char *path, const anvil_imat *im, const tstat *ts, size_t n) {
    cli_json_begin(stdout, "imatrix stats");
    printf(",\"file\":");
    cli_json_string(stdout, path);
    printf(",\"chunk_size\":%u,\"chunk_count\":%u,\"datasets\":[", anvil_imat_chunk_size(im),
           anvil_imat_chunk_count(im));
    for (size_t i = 0; anvil_imat_dataset_at(im, i) != NULL; ++i) {
        if (i) putchar(',');
        cli_json_string(stdout, anvil_imat_dataset_at(im, i));
    }
    printf("],\"tensors\":[");
    for (size_t i = 0; i < n; ++i) {
        const tstat *t = &ts[i];
        printf("%s{\"name\":", i ? "," : "");
        cli_json_string(stdout, t->name);
        printf(",\"layer\":%d,\"elements\":%d", t->blk, t->elements);
        const char *keys[] = { "sum", "min", "max", "mean", "stddev", "cv", "active", "entropy", "zd", "cossim" };
        const double v[] = { t->total,  t->min,     t->max,
                             t->mean,   t->dev,     t->mean != 0.0f ? t->dev / t->mean : 0.0,
                             t->active, t->entropy, t->zd,
                             t->cossim };
        for (size_t k = 0; k < sizeof v / sizeof v[0]; ++k) cli_json_member_number(stdout, keys[k], "%.9g", v[k]);
        printf("}");
    }
    printf("]}\n");
}

int cli_imatrix_stats(int argc, char **argv) {
    const char *path = NULL;
    unsigned long long ctx = 512;
    int json = 0;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--json") == 0) json = 1;
        else if ((strcmp(argv[i], "--ctx") == 0 || strcmp(argv[i], "-c") == 0) && i + 1 < argc &&
                 cli_parse_count(argv[i + 1], 1, 1u << 24, &ctx) == 0)
            ++i;
        else if (argv[i][0] == '-' && argv[i][1] != '\0')
            return cli_usage_error("imatrix stats", "bad option '%s'", argv[i]);
        else if (path == NULL) path = argv[i];
        else return cli_usage_error("imatrix stats", "one FILE: '%s' is one too many", argv[i]);
    }
    if (path == NULL) return cli_usage_error("imatrix stats", "give the importance matrix FILE");
    cli_set_json(json);
    anvil_error err;
    memset(&err, 0, sizeof err);
    anvil_imat *im = NULL;
    if (anvil_imat_load(&im, path, (uint32_t)ctx, NULL, &err) != ANVIL_OK) return cli_fail_err("imatrix stats", &err);
    const size_t n_all = anvil_imat_count(im);
    tstat *ts = calloc(n_all + 1, sizeof *ts);
    size_t n = 0;
    int failed = ts == NULL;
    for (size_t i = 0; !failed && i < n_all; ++i) {
        anvil_imat_entry e;
        anvil_imat_entry_at(im, i, &e);
        tstat *t = &ts[n];
        *t = (tstat){ .name = e.name, .sums = e.sums, .n_sums = (size_t)e.n_per * e.n_mat };
        split_name(t);
        const int r = compute(&e, t);
        if (r < 0) failed = 1;
        else if (r > 0)
            fprintf(stderr, "anvil imatrix stats: warning: all counts are zero for %s: left out\n", e.name);
        else ++n;
    }
    int code = CLI_EXIT_OK;
    if (failed) code = cli_fail("imatrix stats", "out of memory");
    else if (n == 0) code = cli_fail("imatrix stats", "%s: no tensor has data (every count is zero)", path);
    if (code == CLI_EXIT_OK) {
        cossim(ts, n);
        qsort(ts, n, sizeof *ts, cmp_stat);
        if (json) print_json(path, im, ts, n);
        else print_text(path, ts, n);
    }
    free(ts);
    anvil_imat_free(im);
    return code;
}
