/* SPDX-License-Identifier: MIT */
/*
 * Quantize parity: anvil_quantize against llama.cpp's llama_model_quantize
 * (libllama from the same npm package as ggml), whole files compared byte
 * for byte, same parameters on both sides.
 *
 * Models: (a) a llama-shaped F16 model with the real SPM tokenizer of
 * ggml-vocab-llama-spm.gguf (32000 tokens, 16 layers, GQA 2, tied
 * embeddings); (b) the real stories260K (rows of 64 and 172: fallbacks
 * everywhere); (c) a Mixtral-shaped MoE model (8 experts, GQA 4); (d) (c)
 * split in three parts; (e) (c) quantized to Q4_K_M by llama.cpp
 * (requantizing).
 *
 * Checks: every preset with and without --pure on (a) (b) (c); the options
 * (output / token-embedding types, --tensor-type with ECMAScript patterns,
 * --leave-output-tensor, --override-kv, --prune-layers, --keep-split,
 * --allow-requantize, COPY, dry-run sizes); importance matrices written by
 * the test in both formats, with --include/--exclude-weights; the anvil
 * CLI on a few cases (its grammar: lower-cased patterns, a --tensor-type-file,
 * presets by number). Both refusing is agreement (e.g. IQ2_XXS without an
 * importance matrix); a case anvil cannot encode yet (a weighted encoder
 * missing from this build) is reported as pending, not as a pass. Every
 * output anvil writes for a preset is then loaded by llama.cpp, which
 * decodes a few greedy tokens from it.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "anvil/gguf.h"
#include "anvil/quantize.h"
#include "anvil/transcode.h"
#include "synth_model.h"
#include "llama_oracle.h"
#include "parity.h"
#include "parity_quantize_arch.h"
#include "parity_quantize_target.h"
#include "test_env.h"

#ifndef ANVIL_CLI
#define ANVIL_CLI ""
#endif

#define GGML_TYPE_COUNT 43

static int exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

/* ---- synthetic importance matrices --------------------------------------------------- */

typedef struct synth_imatrix {
    char path[1200]; /* the file both sides are given */
    int legacy;
    size_t n;
    char **names;
    float **values; /* normalised as llama-quantize normalises */
    size_t *sizes;
    lq_imatrix *list; /* for llama: n entries + terminator */
    int32_t chunks;
    const char *dataset;
} synth_imatrix;

static void imatrix_free(synth_imatrix *m) {
    for (size_t i = 0; i < m->n; ++i) {
        free(m->names[i]);
        free(m->values[i]);
    }
    free(m->names);
    free(m->values);
    free(m->sizes);
    free(m->list);
    memset(m, 0, sizeof *m);
}

static float pseudo(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((*s >> 40) & 0xffff) / 65536.0f;
}

/* One entry per quantizable-looking tensor (2+ dims, *weight): positive
 * sums of squares per column, counts per expert (expert 1 of a MoE tensor
 * never seen: its weights read as 1). Written as GGUF or legacy .dat. */
/* With seed's top bit set, every fifth column of every entry is negative
 * (llama.cpp takes such a matrix as given). */
static int imatrix_write(synth_imatrix *m, const anvil_gguf *model, const char *path, int legacy, anvil_ctx *ctx,
                         uint64_t seed) {
    const int negative = (int)(seed >> 63);
    memset(m, 0, sizeof *m);
    snprintf(m->path, sizeof m->path, "%s", path);
    m->legacy = legacy;
    m->chunks = 37;
    m->dataset = "anvil-parity-calibration.txt";
    const size_t nt = anvil_gguf_tensor_count(model);
    m->names = calloc(nt + 1, sizeof *m->names);
    m->values = calloc(nt + 1, sizeof *m->values);
    m->sizes = calloc(nt + 1, sizeof *m->sizes);
    m->list = calloc(nt + 1, sizeof *m->list);
    float **sums = calloc(nt + 1, sizeof *sums);
    float **counts = calloc(nt + 1, sizeof *counts);
    size_t *n_mat = calloc(nt + 1, sizeof *n_mat);
    if (!m->names || !m->values || !m->sizes || !m->list || !sums || !counts || !n_mat) return -1;
    uint64_t s = seed;
    for (size_t i = 0; i < nt; ++i) {
        const anvil_gguf_tensor *t = anvil_gguf_tensor_at(model, i);
        const size_t len = strlen(t->name);
        if (t->n_dims < 2 || len < 6 || strcmp(t->name + len - 6, "weight") != 0) continue;
        const size_t ne0 = (size_t)t->ne[0], nm = (size_t)t->ne[2], n = ne0 * nm;
        const size_t k = m->n++;
        m->names[k] = strdup(t->name);
        m->values[k] = malloc(n * sizeof(float));
        sums[k] = malloc(n * sizeof(float));
        counts[k] = malloc(nm * sizeof(float));
        m->sizes[k] = n;
        n_mat[k] = nm;
        const int32_t ncall = 20;
        for (size_t j = 0; j < nm; ++j) counts[k][j] = nm > 1 && j == 1 ? 0.0f : (float)(100 + 7 * j);
        for (size_t j = 0; j < n; ++j) {
            float col = 0.05f + 4.0f * pseudo(&s) * pseudo(&s) + ((j % 97) == 3 ? 30.0f : 0.0f);
            if (negative && j % 5 == 1) col = -col;
            const float c = counts[k][j / ne0];
            if (legacy) {
                /* The legacy file holds (sum / count) * ncall. */
                sums[k][j] = col * (float)ncall;
                m->values[k][j] = sums[k][j] / (float)ncall;
            } else {
                sums[k][j] = col * (c > 0 ? c : 1.0f);
                m->values[k][j] = c > 0.0f ? sums[k][j] / c : 1.0f;
            }
        }
        m->list[k].name = m->names[k];
        m->list[k].data = m->values[k];
        m->list[k].size = n;
    }
    int rc = 0;
    if (legacy) {
        FILE *f = fopen(path, "wb");
        if (f == NULL) rc = -1;
        const int32_t ne = (int32_t)m->n;
        if (rc == 0) fwrite(&ne, 4, 1, f);
        for (size_t k = 0; rc == 0 && k < m->n; ++k) {
            const int32_t len = (int32_t)strlen(m->names[k]), ncall = 20, nval = (int32_t)m->sizes[k];
            fwrite(&len, 4, 1, f);
            fwrite(m->names[k], 1, (size_t)len, f);
            fwrite(&ncall, 4, 1, f);
            fwrite(&nval, 4, 1, f);
            fwrite(sums[k], 4, m->sizes[k], f);
        }
        if (rc == 0) {
            const int32_t len = (int32_t)strlen(m->dataset);
            fwrite(&m->chunks, 4, 1, f);
            fwrite(&len, 4, 1, f);
            fwrite(m->dataset, 1, (size_t)len, f);
            rc = fclose(f) == 0 ? 0 : -1;
        }
    } else {
        anvil_gguf_writer *w = NULL;
        anvil_error err;
        rc = anvil_gguf_writer_new(&w, ctx, &err) == ANVIL_OK ? 0 : -1;
        const char *ds[1] = { m->dataset };
        if (rc == 0) rc = anvil_gguf_writer_set_string(w, "general.type", "imatrix", &err);
        if (rc == 0) rc = anvil_gguf_writer_set_string_array(w, "imatrix.datasets", ds, 1, &err);
        if (rc == 0) rc = anvil_gguf_writer_set_u32(w, "imatrix.chunk_count", (uint32_t)m->chunks, &err);
        if (rc == 0) rc = anvil_gguf_writer_set_u32(w, "imatrix.chunk_size", 512, &err);
        for (size_t k = 0; rc == 0 && k < m->n; ++k) {
            char name[128];
            const uint64_t ne_s[2] = { m->sizes[k] / n_mat[k], n_mat[k] }, ne_c[2] = { 1, n_mat[k] };
            snprintf(name, sizeof name, "%s.in_sum2", m->names[k]);
            rc = anvil_gguf_writer_add_tensor(w, name, ANVIL_TYPE_F32, 2, ne_s, sums[k], m->sizes[k] * 4, &err);
            snprintf(name, sizeof name, "%s.counts", m->names[k]);
            if (rc == 0)
                rc = anvil_gguf_writer_add_tensor(w, name, ANVIL_TYPE_F32, 2, ne_c, counts[k], n_mat[k] * 4, &err);
        }
        if (rc == 0) rc = anvil_gguf_writer_write_file(w, path, &err);
        if (rc != 0) fprintf(stderr, "imatrix: %s\n", err.message);
        anvil_gguf_writer_free(w);
    }
    for (size_t k = 0; k < m->n; ++k) {
        free(sums[k]);
        free(counts[k]);
    }
    free(sums);
    free(counts);
    free(n_mat);
    return rc;
}

/* ---- one case ------------------------------------------------------------------------ */

typedef struct qz_case {
    char label[200];
    const char *in;
    const char *preset; /* a preset name */
    int pure, allow_requantize, leave_output, keep_split;
    const char *output_type, *token_type; /* ggml names or NULL */
    const char *const *rules;             /* "pattern=type" items, lower-case as llama-quantize passes them */
    size_t n_rules;
    const char *const *kvs; /* KEY=TYPE:VALUE */
    size_t n_kvs;
    const int32_t *prune;
    size_t n_prune;
    const synth_imatrix *im;
    const char *const *include, *const *exclude;
    size_t n_include, n_exclude;
    int generate;       /* llama.cpp loads anvil's output and decodes */
    const char *golden; /* model tag: record llama.cpp's tensor types in the golden list */
    int dry_size;       /* anvil's dry-run size must equal llama's output size */
    int isolate;        /* llama.cpp may abort: run it in a child process */
} qz_case;

typedef struct qz_stats {
    size_t same, both_refuse, pending, mismatch, generated, gen_fail;
} qz_stats;

typedef struct qz_env {
    parity_ctx *pc;
    llama_oracle *lo;
    anvil_ctx *ctx;
    char dir[512];
    int verbose;
    FILE *golden;            /* golden/quantize/types.tsv being written, or NULL */
    double llama_s, anvil_s; /* wall time in each side's quantize calls */
    double gen_s;            /* in llama.cpp loading and running anvil's outputs */
} qz_env;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int ggml_type_id(anvil_ctx *ctx, const char *name) {
    uint32_t id;
    return anvil_type_from_name(ctx, name, &id, NULL) == ANVIL_OK ? (int)id : GGML_TYPE_COUNT;
}

/* The imatrix entries and KVs llama-quantize hands llama_model_quantize. */
static size_t filtered_imatrix(const qz_case *c, lq_imatrix *out) {
    size_t k = 0;
    for (size_t i = 0; i < c->im->n; ++i) {
        const char *name = c->im->names[i];
        int keep = 1;
        for (size_t e = 0; e < c->n_exclude; ++e) keep &= strstr(name, c->exclude[e]) == NULL;
        if (c->n_include > 0) {
            int any = 0;
            for (size_t e = 0; e < c->n_include; ++e) any |= strstr(name, c->include[e]) != NULL;
            keep &= any;
        }
        if (keep) out[k++] = c->im->list[i];
    }
    out[k].name = NULL;
    out[k].data = NULL;
    out[k].size = 0;
    return k;
}

/* llama_model_quantize in a child process: an abort there is a refusal. */
static uint32_t quantize_isolated(llama_oracle *lo, const char *in, const char *out, const lq_quantize_params *q,
                                  char *why, size_t why_size) {
    int fd[2];
    if (pipe(fd) != 0) return 1;
    fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        setenv("GGML_NO_BACKTRACE", "1", 1);
        const uint32_t rc = lo->quantize(in, out, q);
        char buf[512] = "";
        if (rc != 0) llama_oracle_log_last(lo, buf, sizeof buf);
        const ssize_t wr = write(fd[1], buf, strlen(buf));
        (void)wr;
        _exit(rc == 0 ? 0 : 1);
    }
    close(fd[1]);
    ssize_t n = pid > 0 ? read(fd[0], why, why_size - 1) : -1;
    why[n > 0 ? (size_t)n : 0] = '\0';
    close(fd[0]);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) return 1;
    if (WIFSIGNALED(status)) snprintf(why, why_size, "llama.cpp aborted (signal %d)", WTERMSIG(status));
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

static int run_llama(qz_env *env, const qz_case *c, const anvil_quantize_preset *p, const char *out, char *why,
                     size_t why_size) {
    llama_oracle *lo = env->lo;
    lq_quantize_params q = lo->qdefaults;
    q.nthread = 2;
    q.ftype = (int32_t)p->ftype;
    q.only_copy = strcmp(p->name, "COPY") == 0;
    q.pure = c->pure;
    q.allow_requantize = c->allow_requantize;
    q.quantize_output_tensor = !c->leave_output;
    q.keep_split = c->keep_split;
    q.output_tensor_type = c->output_type ? ggml_type_id(env->ctx, c->output_type) : GGML_TYPE_COUNT;
    q.token_embedding_type = c->token_type ? ggml_type_id(env->ctx, c->token_type) : GGML_TYPE_COUNT;
    lq_kv_override kvs[40];
    size_t nk = 0;
    memset(kvs, 0, sizeof kvs);
    for (size_t i = 0; i < c->n_kvs && nk < 30; ++i) {
        anvil_kv_override o;
        if (anvil_kv_override_parse(c->kvs[i], &o, NULL) != ANVIL_OK) return -2;
        kvs[nk].tag = (int32_t)o.tag;
        memcpy(kvs[nk].key, o.key, sizeof kvs[nk].key);
        if (o.tag == ANVIL_KV_OVERRIDE_INT) kvs[nk].v.val_i64 = o.i;
        if (o.tag == ANVIL_KV_OVERRIDE_FLOAT) kvs[nk].v.val_f64 = o.f;
        if (o.tag == ANVIL_KV_OVERRIDE_BOOL) kvs[nk].v.val_bool = o.b;
        if (o.tag == ANVIL_KV_OVERRIDE_STR) memcpy(kvs[nk].v.val_str, o.str, sizeof o.str);
        nk++;
    }
    lq_imatrix *ims = NULL;
    if (c->im != NULL) {
        ims = calloc(c->im->n + 1, sizeof *ims);
        if (ims == NULL) return -2;
        const size_t n = filtered_imatrix(c, ims);
        if (n > 0) {
            q.imatrix = ims;
            kvs[nk].tag = LQ_KV_STR;
            snprintf(kvs[nk].key, sizeof kvs[nk].key, "quantize.imatrix.file");
            snprintf(kvs[nk].v.val_str, sizeof kvs[nk].v.val_str, "%.127s", c->im->path);
            nk++;
            kvs[nk].tag = LQ_KV_STR;
            snprintf(kvs[nk].key, sizeof kvs[nk].key, "quantize.imatrix.dataset");
            snprintf(kvs[nk].v.val_str, sizeof kvs[nk].v.val_str, "%.127s", c->im->dataset);
            nk++;
            kvs[nk].tag = LQ_KV_INT;
            snprintf(kvs[nk].key, sizeof kvs[nk].key, "quantize.imatrix.entries_count");
            kvs[nk].v.val_i64 = (int64_t)n;
            nk++;
            kvs[nk].tag = LQ_KV_INT;
            snprintf(kvs[nk].key, sizeof kvs[nk].key, "quantize.imatrix.chunks_count");
            kvs[nk].v.val_i64 = c->im->chunks;
            nk++;
        }
    }
    if (nk > 0) q.kv_overrides = kvs; /* kvs[nk].key[0] == 0 ends the list */
    lq_tensor_type tts[32];
    char pats[32][256];
    size_t nt = 0;
    for (size_t i = 0; i < c->n_rules && nt < 31; ++i) {
        const char *eq = strchr(c->rules[i], '=');
        snprintf(pats[nt], sizeof pats[nt], "%.*s", (int)(eq - c->rules[i]), c->rules[i]);
        tts[nt].pattern = pats[nt];
        tts[nt].type = ggml_type_id(env->ctx, eq + 1);
        nt++;
    }
    tts[nt].pattern = NULL;
    tts[nt].type = GGML_TYPE_COUNT;
    if (nt > 0) q.tt_overrides = tts;
    int32_t prune[64];
    if (c->n_prune > 0) {
        for (size_t i = 0; i < c->n_prune; ++i) prune[i] = c->prune[i];
        prune[c->n_prune] = -1;
        q.prune_layers = prune;
    }
    llama_oracle_log_clear(lo);
    const uint32_t rc = c->isolate ? quantize_isolated(lo, c->in, out, &q, why, why_size)
                                   : lo->quantize(c->in, out, &q);
    free(ims);
    if (rc != 0 && c->isolate) return -1;
    if (rc != 0) llama_oracle_log_last(lo, why, why_size);
    return rc == 0 ? 0 : -1;
}

static int run_anvil(qz_env *env, const qz_case *c, const anvil_quantize_preset *p, const char *out, int dry,
                     uint64_t *dry_bytes, anvil_error *err) {
    anvil_quantize_options o;
    anvil_quantize_options_init(&o);
    o.ftype = p->ftype;
    o.only_copy = strcmp(p->name, "COPY") == 0;
    o.pure = c->pure;
    o.allow_requantize = c->allow_requantize;
    o.leave_output_tensor = c->leave_output;
    o.keep_split = c->keep_split;
    o.dry_run = dry;
    o.threads = 2;
    o.skip_quality = 1;
    if (c->output_type) o.output_tensor_type = (uint32_t)ggml_type_id(env->ctx, c->output_type);
    if (c->token_type) o.token_embedding_type = (uint32_t)ggml_type_id(env->ctx, c->token_type);
    anvil_kv_override kvs[32];
    for (size_t i = 0; i < c->n_kvs && i < 32; ++i) {
        if (anvil_kv_override_parse(c->kvs[i], &kvs[i], err) != ANVIL_OK) return err->code;
    }
    o.kv_overrides = kvs;
    o.n_kv_overrides = c->n_kvs;
    anvil_transcode_rule rules[32];
    for (size_t i = 0; i < c->n_rules && i < 32; ++i) {
        char *pat = NULL;
        if (anvil_quantize_parse_tensor_type(env->ctx, c->rules[i], &pat, &rules[i].type, err) != ANVIL_OK) {
            for (size_t k = 0; k < i; ++k) free((char *)rules[k].pattern);
            return err->code;
        }
        rules[i].pattern = pat;
    }
    o.tensor_types = rules;
    o.n_tensor_types = c->n_rules;
    o.prune_layers = c->prune;
    o.n_prune_layers = c->n_prune;
    anvil_imatrix *im = NULL;
    anvil_gguf *src = NULL;
    anvil_transcode *t = NULL;
    int rc = ANVIL_OK;
    if (c->im != NULL) {
        rc = anvil_imatrix_load(&im, c->im->path, err);
        if (rc == ANVIL_OK) rc = anvil_imatrix_filter(im, c->include, c->n_include, c->exclude, c->n_exclude, err);
        o.imatrix = im;
        o.imatrix_path = c->im->path;
    }
    if (rc == ANVIL_OK) rc = anvil_gguf_open(&src, c->in, env->ctx, 0, err);
    if (rc == ANVIL_OK) rc = anvil_quantize_plan(&t, env->ctx, src, out, &o, err);
    if (rc == ANVIL_OK && dry) {
        anvil_transcode_summary s;
        anvil_transcode_get_summary(t, &s);
        *dry_bytes = s.out_file_bytes;
    } else if (rc == ANVIL_OK) {
        rc = anvil_transcode_run(t, err);
    }
    anvil_transcode_free(t);
    anvil_gguf_close(src);
    anvil_imatrix_free(im);
    for (size_t i = 0; i < c->n_rules; ++i) free((char *)rules[i].pattern);
    return rc;
}

/* Where two files first differ, by tensor when it is in tensor data. */
static void describe_diff(qz_env *env, const char *a, const char *b) {
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    long off = 0;
    int ca = 0, cb = 0;
    if (fa && fb) {
        for (;; ++off) {
            ca = fgetc(fa);
            cb = fgetc(fb);
            if (ca != cb || ca == EOF) break;
        }
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    const char *where = "the header";
    char buf[200];
    anvil_gguf *g = NULL;
    if (anvil_gguf_open(&g, a, env->ctx, ANVIL_GGUF_OPEN_SINGLE_PART, NULL) == ANVIL_OK) {
        for (size_t i = 0; i < anvil_gguf_tensor_count(g); ++i) {
            const anvil_gguf_tensor *t = anvil_gguf_tensor_at(g, i);
            if ((uint64_t)off >= t->file_offset && (uint64_t)off < t->file_offset + t->n_bytes) {
                snprintf(buf, sizeof buf, "tensor %s (%s)", t->name, t->type_info.name);
                where = buf;
            }
        }
        anvil_gguf_close(g);
    }
    printf("           first difference at byte %ld (%s; %s)\n", off, where,
           ca == EOF || cb == EOF ? "one file is shorter" : "bytes differ");
}

static int same_file_bytes(const char *a, const char *b) {
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa != NULL && fb != NULL;
    char x[65536], y[65536];
    while (same) {
        const size_t na = fread(x, 1, sizeof x, fa), nb = fread(y, 1, sizeof y, fb);
        if (na != nb || memcmp(x, y, na) != 0) same = 0;
        if (na < sizeof x) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

static void part_path(char *buf, size_t size, const char *prefix, int keep_split, uint32_t i, uint32_t n) {
    if (keep_split) {
        snprintf(buf, size, "%s-%05u-of-%05u.gguf", prefix, i + 1, n);
    } else {
        snprintf(buf, size, "%s", prefix);
    }
}

static void run_case(qz_env *env, const qz_case *c, qz_stats *st) {
    const anvil_quantize_preset *p = anvil_quantize_preset_find(c->preset);
    if (p == NULL) {
        printf("  %-60s unknown preset\n", c->label);
        st->mismatch++;
        return;
    }
    char lout[600], aout[600];
    snprintf(lout, sizeof lout, "%s/llama%s", env->dir, c->keep_split ? "" : ".gguf");
    snprintf(aout, sizeof aout, "%s/anvil%s", env->dir, c->keep_split ? "" : ".gguf");
    char lwhy[512] = "";
    anvil_error aerr;
    memset(&aerr, 0, sizeof aerr);
    const double t0 = now_s();
    const int lrc = run_llama(env, c, p, lout, lwhy, sizeof lwhy);
    const double t1 = now_s();
    const int arc = run_anvil(env, c, p, aout, 0, NULL, &aerr);
    const double t2 = now_s();
    env->llama_s += t1 - t0;
    env->anvil_s += t2 - t1;
    /* How many parts: count llama's. */
    uint32_t n_parts = 1;
    if (c->keep_split) {
        for (n_parts = 1; n_parts < 100; ++n_parts) {
            char probe[700];
            part_path(probe, sizeof probe, lout, 1, 0, n_parts);
            if (exists(probe)) break;
        }
    }
    if (lrc == 0 && c->golden != NULL && env->golden != NULL) {
        anvil_gguf *g = NULL;
        if (anvil_gguf_open(&g, lout, env->ctx, ANVIL_GGUF_OPEN_SINGLE_PART, NULL) == ANVIL_OK) {
            fprintf(env->golden, "%s %s %d ", c->golden, p->name, c->pure);
            for (size_t i = 0; i < anvil_gguf_tensor_count(g); ++i) {
                fprintf(env->golden, "%s%s", i ? "," : "", anvil_gguf_tensor_at(g, i)->type_info.name);
            }
            fputc('\n', env->golden);
            anvil_gguf_close(g);
        }
    }
    const char *verdict = NULL;
    if (lrc != 0 && arc != ANVIL_OK) {
        st->both_refuse++;
        verdict = "both refuse";
    } else if (lrc == 0 && arc == ANVIL_E_ENCODER_UNAVAILABLE) {
        st->pending++;
        verdict = "PENDING";
    } else if (lrc != 0 || arc != ANVIL_OK) {
        st->mismatch++;
        verdict = "MISMATCH";
    } else {
        int same = 1;
        for (uint32_t i = 0; i < n_parts && same; ++i) {
            char a[700], l[700];
            part_path(l, sizeof l, lout, c->keep_split, i, n_parts);
            part_path(a, sizeof a, aout, c->keep_split, i, n_parts);
            same = same_file_bytes(a, l);
            if (!same) {
                printf("  %-60s MISMATCH (part %u)\n", c->label, i + 1);
                describe_diff(env, a, l);
            }
        }
        if (same) {
            st->same++;
            verdict = "identical";
        } else {
            st->mismatch++;
        }
        if (same && c->dry_size) {
            uint64_t planned = 0;
            anvil_error e2;
            struct stat sl;
            if (run_anvil(env, c, p, aout, 1, &planned, &e2) != ANVIL_OK || stat(lout, &sl) != 0 ||
                (uint64_t)sl.st_size != planned) {
                printf("  %-60s dry-run size %" PRIu64 " differs from llama.cpp's file\n", c->label, planned);
                st->mismatch++;
            }
        }
        if (same && c->generate) {
            int32_t toks[4];
            char why[600];
            const double g0 = now_s();
            const int grc = llama_oracle_generate(env->lo, aout, 4, toks, why, sizeof why);
            env->gen_s += now_s() - g0;
            if (grc == 0) {
                st->generated++;
            } else {
                st->gen_fail++;
                printf("  %-60s llama.cpp cannot run anvil's output: %s\n", c->label, why);
            }
        }
    }
    if (verdict != NULL && (env->verbose || strcmp(verdict, "MISMATCH") == 0)) {
        printf("  %-60s %s [llama %.2fs, anvil %.2fs]", c->label, verdict, t1 - t0, t2 - t1);
        if (strcmp(verdict, "identical") != 0) {
            printf(" (llama.cpp: %s; anvil: %s)", lrc == 0 ? "ok" : lwhy, arc == ANVIL_OK ? "ok" : aerr.message);
        }
        printf("\n");
    }
    for (uint32_t i = 0; i < n_parts; ++i) {
        char a[700], l[700];
        part_path(l, sizeof l, lout, c->keep_split, i, n_parts);
        part_path(a, sizeof a, aout, c->keep_split, i, n_parts);
        unlink(l);
        unlink(a);
    }
    fflush(stdout);
}

static void report(qz_env *env, const char *what, const qz_stats *st) {
    const size_t checked = st->same + st->both_refuse + st->mismatch;
    if (checked == 0 && st->pending > 0) {
        printf("quantize %-34s PENDING: all %zu case(s) need weighted encoders this build lacks\n", what,
               st->pending);
        return;
    }
    char label[160];
    snprintf(label, sizeof label, "%s (%zu same, %zu both refuse)", what, st->same, st->both_refuse);
    parity_report(env->pc, "quantize", label, checked, st->mismatch + st->gen_fail);
    if (st->pending > 0) {
        printf("         %-34s %zu case(s) PENDING: anvil has no weighted encoder for their types in this build\n",
               "", st->pending);
    }
    if (st->generated + st->gen_fail > 0) {
        printf("         %-34s llama.cpp loaded and ran %zu of anvil's outputs (%zu failed)\n", "", st->generated,
               st->gen_fail);
    }
}

/* ---- the sweeps ----------------------------------------------------------------------- */

static int is_alias(const anvil_quantize_preset *p) { return strstr(p->desc, "alias") != NULL; }

static int listed_in(const char *const *list, const char *name) {
    for (size_t i = 0; list != NULL && list[i] != NULL; ++i) {
        if (strcmp(list[i], name) == 0) return 1;
    }
    return 0;
}

/* Every preset with and without --pure; `pure_left` names presets whose
 * --pure run is left out (unless the golden types are being written, which
 * lists them all). */
static void sweep_presets(qz_env *env, const char *model, const char *what, int generate, const char *golden,
                          const char *const *pure_left) {
    qz_stats st;
    memset(&st, 0, sizeof st);
    for (size_t i = 0; i < anvil_quantize_preset_count(); ++i) {
        const anvil_quantize_preset *p = anvil_quantize_preset_at(i);
        if (is_alias(p)) continue;
        for (int pure = 0; pure < 2; ++pure) {
            /* --pure only changes quantized presets' mixtures. */
            if (pure && (strcmp(p->name, "COPY") == 0 || strcmp(p->name, "F16") == 0 ||
                         strcmp(p->name, "BF16") == 0 || strcmp(p->name, "F32") == 0)) {
                continue;
            }
            if (pure && env->golden == NULL && listed_in(pure_left, p->name)) continue;
            qz_case c;
            memset(&c, 0, sizeof c);
            snprintf(c.label, sizeof c.label, "%s %s%s", what, p->name, pure ? " --pure" : "");
            c.in = model;
            c.preset = p->name;
            c.pure = pure;
            c.generate = generate && !pure;
            c.dry_size = !pure && strcmp(p->name, "Q4_K_M") == 0;
            c.golden = golden;
            run_case(env, &c, &st);
        }
    }
    char label[80];
    snprintf(label, sizeof label, "%s: presets x --pure", what);
    report(env, label, &st);
}

static const char *const rules_ecma[] = {
    "attn_v=q8_0",
    "blk\\.\\d+\\.ffn_(up|gate)=q5_1",
    "^blk\\.(0|1)\\.attn_q\\.weight$=iq4_nl",
    "(?!blk\\.1\\.)blk\\.\\d\\.ffn_down=q6_k",
    "\\bffn_down\\b=q8_0",
    "attn_[kq]=q4_1",
    "does_not_exist=q8_0",
};
static const char *const rules_token[] = { "token_embd=q8_0", "output=q4_k" };
static const char *const kvs_main[] = {
    "general.name=str:anvil override", "test.int=int:-42",        "test.float=float:0.125", "test.bool=bool:false",
    "llama.context_length=int:1024",   "general.file_type=int:3",
};
static const int32_t prune_a[] = { 1, 5, 6 };
static const int32_t prune_b[] = { 0 };
static const int32_t prune_c[] = { 15, 14, 15 };

static void sweep_options(qz_env *env, const char *a, const char *stories, const char *moe, const char *q8) {
    qz_stats st;
    memset(&st, 0, sizeof st);
    qz_case c;
#define CASE(...)                \
    do {                         \
        memset(&c, 0, sizeof c); \
        __VA_ARGS__;             \
        run_case(env, &c, &st);  \
    } while (0)
    CASE(snprintf(c.label, sizeof c.label, "spm Q4_K_M --output-tensor-type q8_0"); c.in = a; c.preset = "Q4_K_M";
         c.output_type = "q8_0");
    CASE(snprintf(c.label, sizeof c.label, "spm Q4_K_M --token-embedding-type q4_0"); c.in = a; c.preset = "Q4_K_M";
         c.token_type = "q4_0");
    CASE(snprintf(c.label, sizeof c.label, "spm IQ4_XS both embedding types"); c.in = a; c.preset = "IQ4_XS";
         c.token_type = "q5_k"; c.output_type = "iq4_nl");
    CASE(snprintf(c.label, sizeof c.label, "moe(tied) Q4_K_M --output-tensor-type q5_0"); c.in = moe;
         c.preset = "Q4_K_M"; c.output_type = "q5_0");
    CASE(snprintf(c.label, sizeof c.label, "moe(tied) Q4_K_S --token-embedding-type q6_k"); c.in = moe;
         c.preset = "Q4_K_S"; c.token_type = "q6_k");
    CASE(snprintf(c.label, sizeof c.label, "spm Q4_K_M --tensor-type (ECMAScript)"); c.in = a; c.preset = "Q4_K_M";
         c.rules = rules_ecma; c.n_rules = sizeof rules_ecma / sizeof rules_ecma[0]);
    CASE(snprintf(c.label, sizeof c.label, "spm Q3_K_L --tensor-type --pure"); c.in = a; c.preset = "Q3_K_L";
         c.pure = 1; c.rules = rules_ecma; c.n_rules = sizeof rules_ecma / sizeof rules_ecma[0]);
    CASE(snprintf(c.label, sizeof c.label, "stories Q4_K_M --tensor-type (fallbacks)"); c.in = stories;
         c.preset = "Q4_K_M"; c.rules = rules_ecma; c.n_rules = sizeof rules_ecma / sizeof rules_ecma[0]);
    CASE(snprintf(c.label, sizeof c.label, "spm F16 --tensor-type (ignored for float presets)"); c.in = a;
         c.preset = "F16"; c.rules = rules_ecma; c.n_rules = 2);
    CASE(snprintf(c.label, sizeof c.label, "moe Q5_K_M --tensor-type token_embd/output"); c.in = moe;
         c.preset = "Q5_K_M"; c.rules = rules_token; c.n_rules = 2);
    CASE(snprintf(c.label, sizeof c.label, "spm Q4_0 --leave-output-tensor"); c.in = a; c.preset = "Q4_0";
         c.leave_output = 1);
    CASE(snprintf(c.label, sizeof c.label, "stories Q6_K --leave-output-tensor"); c.in = stories; c.preset = "Q6_K";
         c.leave_output = 1);
    CASE(snprintf(c.label, sizeof c.label, "spm Q4_K_M --override-kv x6"); c.in = a; c.preset = "Q4_K_M";
         c.kvs = kvs_main; c.n_kvs = sizeof kvs_main / sizeof kvs_main[0]);
    CASE(snprintf(c.label, sizeof c.label, "spm Q4_K_M --prune-layers 1,5,6"); c.in = a; c.preset = "Q4_K_M";
         c.prune = prune_a; c.n_prune = 3; c.generate = 1);
    CASE(snprintf(c.label, sizeof c.label, "spm Q3_K_M --prune-layers 0"); c.in = a; c.preset = "Q3_K_M";
         c.prune = prune_b; c.n_prune = 1);
    CASE(snprintf(c.label, sizeof c.label, "spm Q5_K_M --prune-layers 15,14,15"); c.in = a; c.preset = "Q5_K_M";
         c.prune = prune_c; c.n_prune = 3);
    CASE(snprintf(c.label, sizeof c.label, "moe IQ4_NL --prune-layers 0 + --override-kv"); c.in = moe;
         c.preset = "IQ4_NL"; c.prune = prune_b; c.n_prune = 1; c.kvs = kvs_main; c.n_kvs = 2);
    /* A 2023 llama-quantize Q8_0 file: requantizing. */
    /* (c) quantized to Q4_K_M by llama.cpp: requantizing. */
    CASE(snprintf(c.label, sizeof c.label, "moe-q4_K_M Q8_0 (requantize refused)"); c.in = q8; c.preset = "Q8_0");
    CASE(snprintf(c.label, sizeof c.label, "moe-q4_K_M Q8_0 --allow-requantize"); c.in = q8; c.preset = "Q8_0";
         c.allow_requantize = 1; c.generate = 1);
    CASE(snprintf(c.label, sizeof c.label, "moe-q4_K_M Q4_0 --allow-requantize --pure"); c.in = q8; c.preset = "Q4_0";
         c.allow_requantize = 1; c.pure = 1);
    CASE(snprintf(c.label, sizeof c.label, "moe-q4_K_M F16 --allow-requantize (dequantize)"); c.in = q8;
         c.preset = "F16"; c.allow_requantize = 1);
    CASE(snprintf(c.label, sizeof c.label, "moe-q4_K_M F16 (refused without --allow-requantize)"); c.in = q8;
         c.preset = "F16");
    CASE(snprintf(c.label, sizeof c.label, "moe-q4_K_M Q4_K_M (nothing to requantize)"); c.in = q8;
         c.preset = "Q4_K_M");
    CASE(snprintf(c.label, sizeof c.label, "moe-q4_K_M COPY"); c.in = q8; c.preset = "COPY");
    CASE(snprintf(c.label, sizeof c.label, "stories COPY"); c.in = stories; c.preset = "COPY");
#undef CASE
    report(env, "options", &st);
}

static void sweep_split(qz_env *env, const char *split_first) {
    qz_stats st;
    memset(&st, 0, sizeof st);
    static const char *const presets[] = { "Q4_K_M", "Q8_0", "IQ4_XS", "Q3_K_S", "MXFP4_MOE" };
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; ++i) {
        for (int keep = 0; keep < 2; ++keep) {
            qz_case c;
            memset(&c, 0, sizeof c);
            snprintf(c.label, sizeof c.label, "moe split %s%s", presets[i], keep ? " --keep-split" : "");
            c.in = split_first;
            c.preset = presets[i];
            c.keep_split = keep;
            run_case(env, &c, &st);
        }
    }
    report(env, "split input, with and without --keep-split", &st);
}

/* The presets of `list` (a NULL-terminated list), then
 * --include/--exclude-weights and --prune-layers with the matrix. */
static void sweep_imatrix(qz_env *env, const char *model, const char *what, const synth_imatrix *im, int generate,
                          const char *const *presets, int with_filters) {
    qz_stats st;
    memset(&st, 0, sizeof st);
    for (size_t i = 0; presets[i] != NULL; ++i) {
        qz_case c;
        memset(&c, 0, sizeof c);
        snprintf(c.label, sizeof c.label, "%s %s --imatrix %s", what, presets[i], im->legacy ? ".dat" : "gguf");
        c.in = model;
        c.preset = presets[i];
        c.im = im;
        c.generate = generate;
        run_case(env, &c, &st);
    }
    /* The matrix narrowed by --include/--exclude-weights, and remapped by
     * --prune-layers (the pruned model's names are looked up as they were). */
    static const char *const inc[] = { "ffn_down", "attn_" }, *const exc[] = { "attn_v" };
    static const struct {
        const char *preset, *label;
        size_t n_include, n_exclude, n_prune;
    } filters[] = {
        { "Q4_K_M", "--include-weights x2", 2, 0, 0 },
        { "IQ3_S", "--exclude-weights attn_v", 0, 1, 0 },
        { "IQ2_XS", "--prune-layers 0", 0, 0, 1 },
    };
    for (size_t i = 0; with_filters && i < sizeof filters / sizeof filters[0]; ++i) {
        qz_case c;
        memset(&c, 0, sizeof c);
        snprintf(c.label, sizeof c.label, "%s %s --imatrix %s", what, filters[i].preset, filters[i].label);
        c.in = model;
        c.preset = filters[i].preset;
        c.im = im;
        c.include = inc;
        c.n_include = filters[i].n_include;
        c.exclude = exc;
        c.n_exclude = filters[i].n_exclude;
        c.prune = prune_b;
        c.n_prune = filters[i].n_prune;
        run_case(env, &c, &st);
    }
    char label[80];
    snprintf(label, sizeof label, "%s: importance matrix (%s)", what, im->legacy ? "legacy .dat" : "GGUF");
    report(env, label, &st);
}

/* The CLI's own reading of the arguments, against llama.cpp given what
 * llama-quantize would pass for the same command line. */
static void sweep_cli(qz_env *env, const char *a, const char *stories) {
    qz_stats st;
    memset(&st, 0, sizeof st);
    if (ANVIL_CLI[0] == '\0' || !exists(ANVIL_CLI)) {
        printf("         the anvil CLI was not built: CLI cases skipped\n");
        return;
    }
    char file[700];
    snprintf(file, sizeof file, "%s/types.txt", env->dir);
    FILE *f = fopen(file, "w");
    if (f != NULL) {
        fputs("ATTN_V=Q8_0\n  blk\\.\\d+\\.ffn_(up|gate)=q5_1\t\\bFFN_DOWN\\b=Q6_K\n", f);
        fclose(f);
    }
    static const char *const tf_rules[] = { "attn_v=q8_0", "blk\\.\\d+\\.ffn_(up|gate)=q5_1", "\\bffn_down\\b=q6_k" };
    static const char *const kv1[] = { "general.name=str:cli" };
    static const int32_t prune_cli[] = { 2, 3 };
    struct {
        const char *args; /* after IN OUT */
        qz_case c;
    } cases[6];
    memset(cases, 0, sizeof cases);
    cases[0].args = "--tensor-type-file TYPES 15 2";
    cases[0].c.in = a;
    cases[0].c.preset = "Q4_K_M";
    cases[0].c.rules = tf_rules;
    cases[0].c.n_rules = 3;
    cases[1].args = "--pure --output-tensor-type Q8_0 --token-embedding-type iq4_nl Q5_K";
    cases[1].c.in = a;
    cases[1].c.preset = "Q5_K_M";
    cases[1].c.pure = 1;
    cases[1].c.output_type = "q8_0";
    cases[1].c.token_type = "iq4_nl";
    cases[2].args = "--override-kv general.name=str:cli --prune-layers 3,2 q3_k_s";
    cases[2].c.in = a;
    cases[2].c.preset = "Q3_K_S";
    cases[2].c.kvs = kv1;
    cases[2].c.n_kvs = 1;
    cases[2].c.prune = prune_cli;
    cases[2].c.n_prune = 2;
    cases[3].args = "--leave-output-tensor tq1_0 1";
    cases[3].c.in = stories;
    cases[3].c.preset = "TQ1_0";
    cases[3].c.leave_output = 1;
    cases[4].args = "COPY";
    cases[4].c.in = stories;
    cases[4].c.preset = "COPY";
    cases[5].args = "7";
    cases[5].c.in = a;
    cases[5].c.preset = "Q8_0";
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        qz_case *c = &cases[i].c;
        snprintf(c->label, sizeof c->label, "cli: %s", cases[i].args);
        const anvil_quantize_preset *p = anvil_quantize_preset_find(c->preset);
        char lout[600], aout[600], cmd[4000], why[512] = "";
        snprintf(lout, sizeof lout, "%s/llama.gguf", env->dir);
        snprintf(aout, sizeof aout, "%s/cli-anvil.gguf", env->dir);
        char args[1000];
        snprintf(args, sizeof args, "%s", cases[i].args);
        char *tok = strstr(args, "TYPES");
        char expanded[2000];
        if (tok != NULL) {
            *tok = '\0';
            snprintf(expanded, sizeof expanded, "%s%s%s", args, file, tok + 5);
        } else {
            snprintf(expanded, sizeof expanded, "%s", args);
        }
        /* Split options from TYPE: every word starting with -- and its value goes first. */
        snprintf(cmd, sizeof cmd, "ANVIL_CONFIG='%s' '%s' quantize --quiet '%s' '%s' %s",
                 parity_config_path() ? parity_config_path() : "", ANVIL_CLI, c->in, aout, expanded);
        const int lrc = run_llama(env, c, p, lout, why, sizeof why);
        const int status = system(cmd);
        const int arc = WIFEXITED(status) ? WEXITSTATUS(status) : 99;
        if (lrc == 0 && arc == 0 && same_file_bytes(aout, lout)) {
            st.same++;
            if (env->verbose) printf("  %-60s identical\n", c->label);
        } else {
            st.mismatch++;
            printf("  %-60s MISMATCH (llama.cpp %s, anvil exit %d)\n", c->label, lrc == 0 ? "ok" : why, arc);
            if (lrc == 0 && arc == 0) describe_diff(env, aout, lout);
        }
        unlink(lout);
        unlink(aout);
    }
    /* The default output name: <IN's folder>/ggml-model-<TYPE>.gguf. */
    char cmd[2000], def[700];
    snprintf(def, sizeof def, "%s/ggml-model-Q4_0.gguf", env->dir);
    snprintf(cmd, sizeof cmd, "ANVIL_CONFIG='%s' '%s' quantize --quiet '%s' q4_0",
             parity_config_path() ? parity_config_path() : "", ANVIL_CLI, a);
    const int status = system(cmd);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && exists(def)) {
        st.same++;
    } else {
        st.mismatch++;
        printf("  cli: default output name %s not written\n", def);
    }
    unlink(def);
    unlink(file);
    report(env, "the anvil CLI", &st);
}

/* ---- architectures ------------------------------------------------------------------- */

/* One architecture case: the presets of `presets` on spec's model, without
 * and (with_im) with an importance matrix. */
static void arch_cases(qz_env *env, qz_stats *st, const char *label, const qza_spec *spec, const char *const *presets,
                       int with_im, const char *const *kvs, size_t n_kvs) {
    char path[700], imp[700];
    snprintf(path, sizeof path, "%s/arch.gguf", env->dir);
    snprintf(imp, sizeof imp, "%s/arch.imatrix.gguf", env->dir);
    if (qza_write_model(path, spec, env->ctx) != 0) {
        st->mismatch++;
        return;
    }
    synth_imatrix im;
    int have_im = 0;
    if (with_im) {
        anvil_gguf *g = NULL;
        have_im = anvil_gguf_open(&g, path, env->ctx, 0, NULL) == ANVIL_OK &&
                  imatrix_write(&im, g, imp, 0, env->ctx, (spec->seed + 5) | (with_im == 2 ? 1ull << 63 : 0)) == 0;
        anvil_gguf_close(g);
        if (!have_im) st->mismatch++;
    }
    for (int w = 0; w <= have_im; ++w) {
        for (size_t i = 0; presets[i] != NULL; ++i) {
            qz_case c;
            memset(&c, 0, sizeof c);
            snprintf(c.label, sizeof c.label, "%s %s%s", label, presets[i],
                     w ? (with_im == 2 ? " --imatrix (negative entries)" : " --imatrix") : "");
            c.in = path;
            c.preset = presets[i];
            c.kvs = kvs;
            c.n_kvs = n_kvs;
            c.im = w ? &im : NULL;
            c.isolate = 1;
            run_case(env, &c, st);
        }
    }
    if (have_im) imatrix_free(&im);
    unlink(imp);
    unlink(path);
}

/* The cases where llama.cpp's loader decides before the rules run. */
static void sweep_arch_cases(qz_env *env) {
    qz_stats st;
    memset(&st, 0, sizeof st);
    static const char *const mix[] = { "Q4_K_M", "Q2_K", "Q3_K_M", "Q5_K_M", "IQ4_XS", NULL };
    static const char *const one[] = { "Q4_K_M", NULL };
    static const char *const big[] = { "Q3_K_S", "Q4_K_S", "Q4_K_M", NULL };
    static const char *const clip_t[] = { "v.patch_embd.weight",
                                          "v.blk.%d.attn_q.weight",
                                          "v.blk.%d.attn_k.weight",
                                          "v.blk.%d.attn_v.weight",
                                          "v.blk.%d.attn_out.weight",
                                          "v.blk.%d.ln1.weight",
                                          "v.blk.%d.ffn_up.weight",
                                          "v.blk.%d.ffn_down.weight",
                                          "mm.0.weight",
                                          "mm.2.weight",
                                          "v.post_ln.weight",
                                          NULL };
    static const char *const loops[] = { "%s.num_loops=2", NULL };
    static const char *const ov_qwen2[] = { "general.architecture=str:qwen2" };
    static const char *const ov_gptj[] = { "general.architecture=str:gptj" };
    qza_spec s;
    /* mmproj: clip, without and with clip.block_count */
    memset(&s, 0, sizeof s);
    s.arch = "clip";
    s.tensors = clip_t;
    s.seed = 11;
    arch_cases(env, &st, "clip (no block_count)", &s, mix, 1, NULL, 0);
    s.n_layer = 4;
    arch_cases(env, &st, "clip block_count 4", &s, mix, 1, NULL, 0);
    /* unknown and unsupported */
    memset(&s, 0, sizeof s);
    s.arch = "anvil-unknown";
    s.table_arch = "llama";
    s.n_layer = 4;
    arch_cases(env, &st, "unknown architecture", &s, one, 0, NULL, 0);
    s.arch = "gptj";
    arch_cases(env, &st, "unsupported gptj", &s, one, 0, NULL, 0);
    s.arch = "(unknown)";
    arch_cases(env, &st, "architecture '(unknown)'", &s, one, 0, NULL, 0);
    /* layer counts: nanbeige loops, graniteswitch's router layer */
    memset(&s, 0, sizeof s);
    s.arch = "nanbeige";
    s.n_layer = 4;
    s.extra_u32 = loops;
    arch_cases(env, &st, "nanbeige num_loops 2", &s, mix, 1, NULL, 0);
    s.arch = "graniteswitch";
    s.extra_u32 = NULL;
    arch_cases(env, &st, "graniteswitch", &s, mix, 1, NULL, 0);
    /* LLM_TYPE_70B */
    memset(&s, 0, sizeof s);
    s.n_head = 8;
    s.n_head_kv = 2;
    s.n_layer = 80;
    s.arch = "llama-embed";
    arch_cases(env, &st, "llama-embed 80 layers GQA", &s, big, 0, NULL, 0);
    s.arch = "qwen2";
    arch_cases(env, &st, "qwen2 80 layers", &s, big, 0, NULL, 0);
    s.arch = "llama";
    s.n_head_kv = 8;
    arch_cases(env, &st, "llama 80 layers no GQA (65B)", &s, big, 0, NULL, 0);
    s.arch = "jais2";
    s.n_layer = 68;
    arch_cases(env, &st, "jais2 68 layers", &s, big, 0, NULL, 0);
    /* missing required keys */
    memset(&s, 0, sizeof s);
    s.arch = "llama";
    s.n_layer = 4;
    s.drop_key = "%s.context_length";
    arch_cases(env, &st, "llama without context_length", &s, one, 0, NULL, 0);
    s.drop_key = "%s.attention.layer_norm_rms_epsilon";
    arch_cases(env, &st, "llama without rms epsilon", &s, one, 0, NULL, 0);
    s.arch = "deepseek2";
    s.drop_key = "%s.attention.kv_lora_rank";
    arch_cases(env, &st, "deepseek2 without kv_lora_rank", &s, one, 0, NULL, 0);
    s.arch = "qwen2";
    s.drop_key = NULL;
    s.n_layer = 0;
    arch_cases(env, &st, "qwen2 without block_count", &s, one, 0, NULL, 0);
    /* --override-kv general.architecture */
    memset(&s, 0, sizeof s);
    s.arch = "qwen2";
    s.declared = "anvil-unknown";
    s.n_layer = 4;
    arch_cases(env, &st, "override unknown -> qwen2", &s, mix, 0, ov_qwen2, 1);
    s.declared = NULL;
    arch_cases(env, &st, "override qwen2 -> gptj", &s, one, 0, ov_gptj, 1);
    /* data validation: a kept Q6_K output.weight, valid and with a NaN scale */
    memset(&s, 0, sizeof s);
    s.arch = "llama";
    s.n_layer = 4;
    s.q6k_output = 1;
    static const char *const keep_q6[] = { "Q4_K_M", "Q5_K_M", "COPY", NULL };
    arch_cases(env, &st, "kept Q6_K output", &s, keep_q6, 0, NULL, 0);
    s.q6k_output = 2;
    arch_cases(env, &st, "kept Q6_K output, NaN scale", &s, keep_q6, 0, NULL, 0);
    /* an importance matrix with negative entries: llama.cpp uses it as given */
    static const char *const neg[] = { "Q4_K_M", "Q2_K",   "Q3_K_M", "Q5_K_M", "Q6_K", "Q4_0", "Q5_1",
                                       "IQ4_NL", "IQ4_XS", "IQ3_S",  "TQ1_0",  "Q1_0", NULL };
    s.q6k_output = 0;
    s.n_head_kv = 1;
    arch_cases(env, &st, "llama", &s, neg, 2, NULL, 0);
    report(env, "architectures: loader cases", &st);
}

/* Every architecture of llama.cpp's table, Q4_K_M and Q2_K. */
static void sweep_arch_table(qz_env *env) {
    qz_stats st;
    memset(&st, 0, sizeof st);
    static const char *const presets[] = { "Q4_K_M", "Q2_K", NULL };
    size_t n_arch = 0, all_same = 0, all_refuse = 0, differ = 0;
    char refused[2048] = "", mixed[512] = "";
    for (size_t i = 0; i < qza_arch_count(); ++i) {
        qza_spec s;
        memset(&s, 0, sizeof s);
        s.arch = qza_arch_name(i);
        s.n_layer = 4;
        s.seed = 100 + i;
        /* keys some architectures require only on a condition the table
         * does not hold (here: what makes them quantizable) */
        static const char *const lora_q[] = { "%s.attention.q_lora_rank=4", NULL };
        static const char *const ernie[] = { "%s.expert_feed_forward_length=32", "%s.interleave_moe_layer_step=1",
                                             NULL };
        static const char *const hrm[] = { "%s.hrm.layers_per_stack=1", "%s.hrm.h_cycles=2", "%s.hrm.l_cycles=1",
                                           NULL };
        if (strcmp(s.arch, "deepseek2") == 0 || strcmp(s.arch, "mistral4") == 0) s.extra_u32 = lora_q;
        if (strcmp(s.arch, "ernie4_5-moe") == 0) s.extra_u32 = ernie;
        if (strcmp(s.arch, "hrm_text") == 0) s.extra_u32 = hrm;
        qz_stats one;
        memset(&one, 0, sizeof one);
        arch_cases(env, &one, s.arch, &s, presets, 0, NULL, 0);
        n_arch++;
        if (one.mismatch > 0) {
            differ++;
        } else if (one.both_refuse == 2) {
            all_refuse++;
            snprintf(refused + strlen(refused), sizeof refused - strlen(refused), " %s", s.arch);
        } else if (one.same == 2) {
            all_same++;
        } else {
            snprintf(mixed + strlen(mixed), sizeof mixed - strlen(mixed), " %s", s.arch);
        }
        st.same += one.same;
        st.both_refuse += one.both_refuse;
        st.mismatch += one.mismatch;
        st.pending += one.pending;
    }
    printf("quantize architectures: %zu architectures, %zu identical, %zu both refuse, %zu differ, %zu one preset "
           "identical and one both refuse\n",
           n_arch, all_same, all_refuse, differ, n_arch - all_same - all_refuse - differ);
    printf("         both refuse:%s; one of each:%s\n", refused, mixed);
    report(env, "architectures: every name of llama.cpp's table", &st);
}

/* ---- models ----------------------------------------------------------------------------- */

static int write_model(const char *path, const synth_model *m, anvil_ctx *ctx) {
    anvil_error err;
    if (synth_model_write(path, m, ctx, &err) != ANVIL_OK) {
        fprintf(stderr, "quantize parity: cannot write %s: %s\n", path, err.message);
        return -1;
    }
    return 0;
}

static void remove_dir(const char *dir) {
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "quantize parity: could not remove %s\n", dir);
}

int parity_quantize(parity_ctx *pc) {
    static llama_oracle lo;
    char why[2048];
    if (llama_oracle_open(&lo, pc->oracle->dir, why, sizeof why) != 0) {
        printf("quantize libllama: %s\n", why);
        parity_report(pc, "quantize", "libllama from the oracle folder", 1, 1);
        return 1;
    }
    anvil_ctx *ctx = NULL;
    anvil_error err;
    memset(&err, 0, sizeof err);
    if (anvil_ctx_open(&ctx, parity_config_path(), &err) != ANVIL_OK) {
        printf("quantize: %s\n", err.message);
        parity_report(pc, "quantize", "anvil context", 1, 1);
        return 1;
    }
    qz_env env;
    memset(&env, 0, sizeof env);
    env.pc = pc;
    env.lo = &lo;
    env.ctx = ctx;
    env.verbose = pc->verbose;
    const char *tmp = getenv("TMPDIR");
    snprintf(env.dir, sizeof env.dir, "%s/anvil-parity-qz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(env.dir) == NULL) {
        parity_report(pc, "quantize", "temporary folder", 1, 1);
        anvil_ctx_close(ctx);
        return 1;
    }
    const size_t failures_before = pc->total_failures;
    char spm_src[700], stories[700], q8[700], a[700], moe[700], split_prefix[600], split_first[700];
    /* ../shared/testdata, else the copies in tests/data (a clone on its own) */
    const char *spm_path = test_data_path("ggml-vocab-llama-spm.gguf");
    snprintf(spm_src, sizeof spm_src, "%s", spm_path != NULL ? spm_path : "");
    const char *stories_path = test_data_path("stories260K.v3.gguf");
    snprintf(stories, sizeof stories, "%s", stories_path != NULL ? stories_path : "");
    snprintf(q8, sizeof q8, "%s/moe-q4_K_M.gguf", env.dir);
    snprintf(a, sizeof a, "%s/spm-f16.gguf", env.dir);
    snprintf(moe, sizeof moe, "%s/moe-f16.gguf", env.dir);
    snprintf(split_prefix, sizeof split_prefix, "%s/moe-split", env.dir);
    snprintf(split_first, sizeof split_first, "%s-00001-of-00003.gguf", split_prefix);
    if (!exists(spm_src) || !exists(stories)) {
        printf(
            "quantize: ggml-vocab-llama-spm.gguf / stories260K.v3.gguf in neither ../shared/testdata nor tests/data\n");
        parity_report(pc, "quantize", "shared test data", 1, 1);
        remove_dir(env.dir);
        anvil_ctx_close(ctx);
        return 1;
    }
    anvil_gguf *vocab = NULL;
    int ok = anvil_gguf_open(&vocab, spm_src, ctx, 0, &err) == ANVIL_OK;
    /* (a) ties its embeddings (the 32000-row tables dominate the run time);
     * (c) has its own output.weight. */
    synth_model ma = { .n_vocab = 32000,
                       .n_embd = 256,
                       .n_ff = 256,
                       .n_layer = 16,
                       .n_head = 4,
                       .n_head_kv = 2,
                       .type = ANVIL_TYPE_F16,
                       .seed = pc->seed,
                       .name = "anvil parity spm",
                       .tokenizer_from = vocab,
                       .tied_embeddings = 1 };
    synth_model mc = { .n_vocab = 512,
                       .n_embd = 256,
                       .n_ff = 256,
                       .n_layer = 4,
                       .n_head = 4,
                       .n_head_kv = 1,
                       .type = ANVIL_TYPE_F16,
                       .seed = pc->seed + 1,
                       .name = "anvil parity moe",
                       .n_expert = 8,
                       .n_expert_used = 2 };
    ok = ok && write_model(a, &ma, ctx) == 0 && write_model(moe, &mc, ctx) == 0;
    anvil_gguf_close(vocab);
    anvil_gguf *mg = NULL;
    uint32_t n_parts = 0;
    if (ok && anvil_gguf_open(&mg, moe, ctx, 0, &err) == ANVIL_OK) {
        ok = anvil_gguf_split_write(mg, split_prefix, 0, 15, ctx, &n_parts, &err) == ANVIL_OK && n_parts == 3;
    } else {
        ok = 0;
    }
    if (!ok) {
        printf("quantize: cannot build the test models: %s (split into %u parts)\n", err.message, n_parts);
        parity_report(pc, "quantize", "test models", 1, 1);
        anvil_gguf_close(mg);
        remove_dir(env.dir);
        anvil_ctx_close(ctx);
        return 1;
    }
    /* (e): llama.cpp's own Q4_K_M of (c), the input of the requantizing cases. */
    {
        lq_quantize_params q = lo.qdefaults;
        q.nthread = 2;
        q.ftype = 15;
        if (lo.quantize(moe, q8, &q) != 0) {
            parity_report(pc, "quantize", "llama.cpp's Q4_K_M of the MoE model", 1, 1);
            anvil_gguf_close(mg);
            remove_dir(env.dir);
            anvil_ctx_close(ctx);
            return 1;
        }
    }
    const double t0 = (double)clock() / CLOCKS_PER_SEC;
    if (pc->golden_dir != NULL) {
        char gp[1200];
        snprintf(gp, sizeof gp, "%s/quantize/types.tsv", pc->golden_dir);
        env.golden = fopen(gp, "w");
        if (env.golden == NULL) {
            printf("quantize: cannot write %s\n", gp);
        } else {
            fprintf(env.golden, "# llama.cpp's tensor types (file order) per preset: model preset pure types.\n"
                                "# Written by anvil-parity --family quantize --write-golden; checked offline by\n"
                                "# tests/quantize (the spm model there has a 512-token vocabulary: types depend\n"
                                "# on the rows, not on the vocabulary size).\n");
        }
    }
    /* On (a), --pure makes these five presets one IQ3/IQ4 encoder over the
     * 32000-row embeddings and every layer: 60 s of llama.cpp's reference
     * encoders for what the cold family checks row by row and (b) and (c)
     * check --pure (make test's budget). --write-golden runs them all. */
    static const char *const spm_pure_left[] = { "IQ3_XS", "IQ3_M", "IQ3_S", "IQ4_XS", "IQ4_NL", NULL };
    sweep_presets(&env, a, "spm", 1, "spm", spm_pure_left);
    sweep_presets(&env, stories, "stories", 1, NULL, NULL);
    sweep_presets(&env, moe, "moe", 1, "moe", NULL);
    if (env.golden != NULL) fclose(env.golden);
    env.golden = NULL;
    sweep_options(&env, a, stories, moe, q8);
    sweep_split(&env, split_first);
    sweep_cli(&env, a, stories);
    sweep_arch_cases(&env);
    sweep_arch_table(&env);
    /* Importance matrices, both formats. */
    anvil_gguf *ag = NULL;
    synth_imatrix im_g, im_d, im_m;
    char p1[700], p2[700], p3[700];
    snprintf(p1, sizeof p1, "%s/spm.imatrix.gguf", env.dir);
    snprintf(p2, sizeof p2, "%s/spm.imatrix.dat", env.dir);
    snprintf(p3, sizeof p3, "%s/moe.imatrix.gguf", env.dir);
    if (anvil_gguf_open(&ag, a, ctx, 0, &err) == ANVIL_OK && imatrix_write(&im_g, ag, p1, 0, ctx, 7) == 0 &&
        imatrix_write(&im_d, ag, p2, 1, ctx, 8) == 0 && imatrix_write(&im_m, mg, p3, 0, ctx, 9) == 0) {
        /* The presets that need a matrix on (a), the rest on the smaller (c):
         * every preset meets an importance matrix once. */
        static const char *const need[] = { "IQ2_XXS", "IQ2_XS", "IQ2_S",  "IQ2_M", "IQ1_S",  "IQ1_M", "IQ3_XXS",
                                            "IQ3_XS",  "Q2_K_S", "Q4_K_M", "Q4_0",  "IQ4_XS", NULL };
        /* The legacy reader once with a lattice type, once with a K-quant
         * and a legacy type; the --include/--exclude/--prune filters on (c)
         * only (names, per expert too). */
        static const char *const legacy[] = { "IQ1_M", "Q4_K_M", "Q5_0", NULL };
        static const char *const rest[] = { "IQ2_XXS", "Q4_K_M", "IQ3_S", "IQ3_M", "Q2_K", "Q3_K_M",
                                            "Q5_0",    "IQ4_NL", "Q6_K",  "TQ2_0", "Q1_0", NULL };
        sweep_imatrix(&env, a, "spm", &im_g, 1, need, 0);
        sweep_imatrix(&env, a, "spm", &im_d, 0, legacy, 0);
        sweep_imatrix(&env, moe, "moe", &im_m, 1, rest, 1);
        imatrix_free(&im_g);
        imatrix_free(&im_d);
        imatrix_free(&im_m);
    } else {
        parity_report(pc, "quantize", "synthetic importance matrices", 1, 1);
    }
    anvil_gguf_close(ag);
    anvil_gguf_close(mg);
    parity_quantize_target(pc, &lo, ctx, env.dir);
    printf("quantize: %.1f s of CPU; wall time inside the quantize calls: llama.cpp %.1f s, anvil %.1f s (2 threads "
           "each; not a benchmark); llama.cpp running the outputs %.1f s\n",
           (double)clock() / CLOCKS_PER_SEC - t0, env.llama_s, env.anvil_s, env.gen_s);
    remove_dir(env.dir);
    anvil_ctx_close(ctx);
    llama_oracle_close(&lo);
    return (int)(pc->total_failures - failures_before);
}
