/* SPDX-License-Identifier: MIT */
/* The quality benchmark's model side (see kld_eval.h). */
#include "kld_eval.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "atomic_file.h"
#include "read_file.h"

#define CACHE_MAGIC "ANVKLD01"

/* The cache file: this header (host byte order: a local cache), then per
 * chunk n_scored int32 top tokens and n_scored * n_vocab float log-probs. */
typedef struct cache_header {
    char magic[8];
    uint32_t n_ctx, n_vocab, n_chunks, n_scored;
    uint64_t key;
} cache_header;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *c = p;
    for (size_t i = 0; i < n; ++i) h = (h ^ c[i]) * 0x100000001b3ull;
    return h;
}

static int hash_file(const char *path, uint64_t *h, char *why, size_t why_size) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(why, why_size, "cannot open %s", path);
        return -1;
    }
    static unsigned char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) *h = fnv(*h, buf, n);
    const int bad = ferror(f);
    fclose(f);
    if (bad) snprintf(why, why_size, "cannot read %s", path);
    return bad ? -1 : 0;
}

static void *load_model(kld_bench *b, const char *path, int vocab_only, char *why, size_t why_size) {
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(why, why_size, "%s: no such file", path);
        return NULL;
    }
    llama_oracle_log_clear(&b->lo);
    lq_model_params mp = b->lo.mdefaults;
    mp.vocab_only = vocab_only != 0;
    void *m = b->lo.load_model(path, mp);
    if (m == NULL) {
        char last[512];
        snprintf(why, why_size, "libllama refuses to load %s: %s", path,
                 llama_oracle_log_last(&b->lo, last, sizeof last));
    }
    return m;
}

/* The text as llama.cpp's -f reads it, tokenized with add_special. */
static int tokenize(kld_bench *b, void *model, int32_t **out, size_t *n_out, char *why, size_t why_size) {
    size_t len = 0;
    char *text = test_read_file(b->o.text_path, &len);
    if (text == NULL) {
        snprintf(why, why_size, "cannot read the text %s", b->o.text_path);
        return -1;
    }
    if (len > 0 && text[len - 1] == '\n') --len;
    if (len > (size_t)INT32_MAX - 2) {
        free(text);
        snprintf(why, why_size, "%s: %zu bytes is more than llama_tokenize takes", b->o.text_path, len);
        return -1;
    }
    const void *vocab = b->lo.model_vocab(model);
    int32_t cap = (int32_t)len + 2;
    int32_t *tok = malloc((size_t)cap * sizeof *tok);
    int32_t n = tok ? b->lo.tokenize(vocab, text, (int32_t)len, tok, cap, true, false) : 0;
    free(text);
    if (tok == NULL || n < 0) {
        snprintf(why, why_size, "llama_tokenize failed on %s (%d)", b->o.text_path, tok ? (int)n : 0);
        free(tok);
        return -1;
    }
    *out = tok;
    *n_out = (size_t)n;
    return 0;
}

static void *open_context(kld_bench *b, void *model, char *why, size_t why_size) {
    lq_context_params cp = b->lo.cdefaults;
    cp.n_ctx = cp.n_batch = cp.n_ubatch = (uint32_t)b->o.n_ctx;
    cp.n_seq_max = 1;
    cp.n_threads = cp.n_threads_batch = b->o.threads;
    cp.no_perf = true;
    void *ctx = b->lo.init_context(model, cp);
    if (ctx == NULL) {
        char last[512];
        snprintf(why, why_size, "llama_init_from_model failed: %s", llama_oracle_log_last(&b->lo, last, sizeof last));
    }
    return ctx;
}

/* Evaluate chunk c and leave the log-probabilities of its scored positions
 * in lp (n_scored rows of n_vocab) and their first argmax in top. */
static int eval_chunk(kld_bench *b, void *model, void *ctx, int c, float *lp, int32_t *top, char *why,
                      size_t why_size) {
    const int n = b->o.n_ctx;
    int32_t *tok = b->bt_tok;
    memcpy(tok, b->tokens + (size_t)c * (size_t)n, (size_t)n * sizeof *tok);
    const void *vocab = b->lo.model_vocab(model);
    if (b->lo.vocab_get_add_bos(vocab)) tok[0] = b->lo.vocab_bos(vocab);
    b->lo.memory_clear(b->lo.get_memory(ctx), true);
    const lq_batch batch = { .n_tokens = n,
                             .token = tok,
                             .pos = b->bt_pos,
                             .n_seq_id = b->bt_nseq,
                             .seq_id = b->bt_seq,
                             .logits = b->bt_want };
    char last[512];
    if (b->lo.decode(ctx, batch) != 0) {
        snprintf(why, why_size, "llama_decode failed on chunk %d: %s", c,
                 llama_oracle_log_last(&b->lo, last, sizeof last));
        return -1;
    }
    for (int k = 0; k < b->n_scored; ++k) {
        const float *logits = b->lo.logits_ith(ctx, b->first + k);
        if (logits == NULL) {
            snprintf(why, why_size, "no logits at position %d of chunk %d", b->first + k, c);
            return -1;
        }
        float *row = lp + (size_t)k * (size_t)b->n_vocab;
        top[k] = mdl_log_softmax(logits, b->n_vocab, row);
        if (!(row[top[k]] <= 0.0f)) {
            snprintf(why, why_size, "logits at position %d of chunk %d are not finite", b->first + k, c);
            return -1;
        }
    }
    return 0;
}

static size_t chunk_record_bytes(const kld_bench *b) {
    return (size_t)b->n_scored * (sizeof(int32_t) + (size_t)b->n_vocab * sizeof(float));
}

/* The cache at b->cache_path when it fits this run: 0 and b->cache open. */
static int cache_try(kld_bench *b) {
    FILE *f = fopen(b->cache_path, "rb");
    if (f == NULL) return -1;
    cache_header h;
    struct stat st;
    const int ok = fread(&h, sizeof h, 1, f) == 1 && memcmp(h.magic, CACHE_MAGIC, 8) == 0 && h.key == b->key &&
                   h.n_ctx == (uint32_t)b->o.n_ctx && h.n_scored == (uint32_t)b->n_scored &&
                   h.n_chunks >= (uint32_t)b->n_chunks && h.n_vocab == (uint32_t)b->n_vocab &&
                   fstat(fileno(f), &st) == 0;
    if (ok) {
        if ((uint64_t)st.st_size == sizeof h + (uint64_t)h.n_chunks * chunk_record_bytes(b)) {
            b->cache = f;
            return 0;
        }
    }
    fclose(f);
    return -1;
}

static int write_chunks(kld_bench *b, void *model, void *ctx, int fd, char *why, size_t why_size) {
    const size_t nlp = (size_t)b->n_scored * (size_t)b->n_vocab;
    float *lp = malloc(nlp * sizeof *lp);
    int32_t *top = malloc((size_t)b->n_scored * sizeof *top);
    int rc = lp && top ? 0 : -1;
    if (rc != 0) snprintf(why, why_size, "out of memory (%zu log-probs a chunk)", nlp);
    anvil_error err;
    for (int c = 0; rc == 0 && c < b->n_chunks; ++c) {
        rc = eval_chunk(b, model, ctx, c, lp, top, why, why_size);
        if (rc == 0 &&
            (afile_write_all(fd, top, (size_t)b->n_scored * sizeof *top, b->cache_path, &err) != ANVIL_OK ||
             afile_write_all(fd, lp, nlp * sizeof *lp, b->cache_path, &err) != ANVIL_OK)) {
            snprintf(why, why_size, "%s", err.message);
            rc = -1;
        }
        if (rc == 0 && b->o.verbose) fprintf(stderr, "\ranvil-kld: base %d/%d chunks", c + 1, b->n_chunks);
    }
    if (b->o.verbose) fprintf(stderr, "\n");
    free(lp);
    free(top);
    return rc;
}

/* Evaluate the base over every chunk and write the cache. */
static int cache_build(kld_bench *b, char *why, size_t why_size) {
    const double t0 = now_s();
    void *model = load_model(b, b->base_path, 0, why, why_size);
    if (model == NULL) return -1;
    void *ctx = open_context(b, model, why, why_size);
    afile f;
    anvil_error err;
    int rc = ctx ? 0 : -1;
    if (rc == 0 && afile_open(&f, b->cache_path, &err) != ANVIL_OK) {
        snprintf(why, why_size, "cannot write the cache: %s", err.message);
        rc = -2;
    }
    if (rc == 0) {
        cache_header h = { .n_ctx = (uint32_t)b->o.n_ctx,
                           .n_vocab = (uint32_t)b->n_vocab,
                           .n_chunks = (uint32_t)b->n_chunks,
                           .n_scored = (uint32_t)b->n_scored,
                           .key = b->key };
        memcpy(h.magic, CACHE_MAGIC, 8);
        rc = afile_write_all(f.fd, &h, sizeof h, b->cache_path, &err) == ANVIL_OK ? 0 : -1;
        if (rc != 0) snprintf(why, why_size, "%s", err.message);
        if (rc == 0) rc = write_chunks(b, model, ctx, f.fd, why, why_size);
        if (rc == 0 && afile_commit(&f, &err) != ANVIL_OK) {
            snprintf(why, why_size, "%s", err.message);
            rc = -1;
        } else if (rc != 0) {
            afile_discard(&f);
        }
    }
    if (ctx) b->lo.free_context(ctx);
    b->lo.free_model(model);
    b->base_seconds = now_s() - t0;
    if (rc == 0 && cache_try(b) != 0) {
        snprintf(why, why_size, "the cache %s just written does not read back", b->cache_path);
        rc = -1;
    }
    return rc < 0 ? -1 : rc;
}

/* Tokens, chunk counts and the cache key, from the base's vocabulary. */
static int prepare_tokens(kld_bench *b, char *why, size_t why_size) {
    void *vm = load_model(b, b->base_path, 1, why, why_size);
    if (vm == NULL) return -1;
    b->n_vocab = b->lo.vocab_n_tokens(b->lo.model_vocab(vm));
    int rc = tokenize(b, vm, &b->tokens, &b->n_tokens, why, why_size);
    b->lo.free_model(vm);
    if (rc != 0) return -1;
    const size_t n_ctx = (size_t)b->o.n_ctx;
    if (b->n_tokens < 2 * n_ctx) {
        snprintf(why, why_size, "%s is %zu tokens: at least %zu are needed for --ctx %zu", b->o.text_path,
                 b->n_tokens, 2 * n_ctx, n_ctx);
        return -1;
    }
    const size_t max_chunks = b->n_tokens / n_ctx;
    b->n_chunks = b->o.n_chunks > 0 && (size_t)b->o.n_chunks < max_chunks ? b->o.n_chunks : (int)max_chunks;
    uint64_t key = 0xcbf29ce484222325ull;
    if (hash_file(b->base_path, &key, why, why_size) != 0) return -1;
    key = fnv(key, b->tokens, b->n_tokens * sizeof *b->tokens); /* all: a longer cache serves fewer chunks */
    key = fnv(key, &b->o.n_ctx, sizeof b->o.n_ctx);
    b->key = key;
    return 0;
}

/* One batch: the chunk's tokens at positions 0.., sequence 0, logits from
 * n_ctx/2 on (as perplexity.cpp asks for them). */
static int alloc_batch(kld_bench *b) {
    const size_t n = (size_t)b->o.n_ctx;
    b->bt_tok = malloc(n * sizeof *b->bt_tok);
    b->bt_pos = malloc(n * sizeof *b->bt_pos);
    b->bt_nseq = malloc(n * sizeof *b->bt_nseq);
    b->bt_seq = malloc(n * sizeof *b->bt_seq);
    b->bt_want = malloc(n * sizeof *b->bt_want);
    if (!b->bt_tok || !b->bt_pos || !b->bt_nseq || !b->bt_seq || !b->bt_want) return -1;
    for (size_t i = 0; i < n; ++i) {
        b->bt_pos[i] = (int32_t)i;
        b->bt_nseq[i] = 1;
        b->bt_seq[i] = &b->bt_seq0;
        b->bt_want[i] = (int)i >= b->first;
    }
    return 0;
}

int kld_open(kld_bench *b, const char *base_path, const kld_opts *o, char *why, size_t why_size) {
    memset(b, 0, sizeof *b);
    b->o = *o;
    if (b->o.n_ctx < 4 || b->o.n_ctx > 65536 || b->o.threads < 1 || b->o.threads > 512) {
        snprintf(why, why_size, "--ctx must be 4..65536 and --threads 1..512 (got %d, %d)", b->o.n_ctx, b->o.threads);
        return -1;
    }
    b->first = b->o.n_ctx / 2;
    b->n_scored = b->o.n_ctx - 1 - b->first;
    snprintf(b->base_path, sizeof b->base_path, "%s", base_path);
    if (alloc_batch(b) != 0) {
        snprintf(why, why_size, "out of memory (a batch of %d tokens)", b->o.n_ctx);
        return -1;
    }
    char sub[900];
    if (llama_oracle_open(&b->lo, o->oracle_dir, sub, sizeof sub) != 0) {
        snprintf(why, why_size,
                 "the llama.cpp oracle is missing or unusable (%s); install it (make oracle) or pass --oracle DIR",
                 sub);
        return -2;
    }
    if (llama_oracle_backends(&b->lo, why, why_size) != 0) return -2;
    if (prepare_tokens(b, why, why_size) != 0) return -1;
    if (o->cache_path != NULL) {
        snprintf(b->cache_path, sizeof b->cache_path, "%s", o->cache_path);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(b->cache_path, sizeof b->cache_path, "%s/anvil-kld-%016llx.cache", tmp && *tmp ? tmp : "/tmp",
                 (unsigned long long)b->key);
    }
    if (cache_try(b) == 0) return 0;
    return cache_build(b, why, why_size);
}

/* The quantized model must read the text as the base did. */
static int check_vocab(kld_bench *b, void *model, const char *path, char *why, size_t why_size) {
    const int32_t nv = b->lo.vocab_n_tokens(b->lo.model_vocab(model));
    if (nv != b->n_vocab) {
        snprintf(why, why_size, "%s has a vocabulary of %d tokens, the base %s has %d: not the same model", path,
                 (int)nv, b->base_path, b->n_vocab);
        return -1;
    }
    int32_t *tok = NULL;
    size_t n = 0;
    if (tokenize(b, model, &tok, &n, why, why_size) != 0) return -1;
    const size_t used = (size_t)b->n_chunks * (size_t)b->o.n_ctx;
    size_t i = 0;
    while (i < used && i < n && tok[i] == b->tokens[i]) ++i;
    free(tok);
    if (i < used) {
        snprintf(why, why_size,
                 "%s tokenizes the text differently from the base %s (first at token %zu): not the same vocabulary",
                 path, b->base_path, i);
        return -1;
    }
    return 0;
}

/* Score every chunk of the open context against the cache. */
static int score(kld_bench *b, void *model, void *ctx, kld_result *r, char *why, size_t why_size) {
    const size_t nlp = (size_t)b->n_scored * (size_t)b->n_vocab;
    const size_t n_values = (size_t)b->n_chunks * (size_t)b->n_scored;
    float *lp_q = malloc(nlp * sizeof *lp_q), *lp_b = malloc(nlp * sizeof *lp_b);
    float *values = malloc(n_values * sizeof *values);
    int32_t *top_q = malloc((size_t)b->n_scored * sizeof *top_q),
            *top_b = malloc((size_t)b->n_scored * sizeof *top_b);
    int rc = lp_q && lp_b && values && top_q && top_b ? 0 : -1;
    if (rc != 0) snprintf(why, why_size, "out of memory (%zu log-probs a chunk)", nlp);
    mdl_acc acc = { 0 };
    for (int c = 0; rc == 0 && c < b->n_chunks; ++c) {
        rc = eval_chunk(b, model, ctx, c, lp_q, top_q, why, why_size);
        const long off = (long)(sizeof(cache_header) + (size_t)c * chunk_record_bytes(b));
        if (rc == 0 && (fseek(b->cache, off, SEEK_SET) != 0 ||
                        fread(top_b, sizeof *top_b, (size_t)b->n_scored, b->cache) != (size_t)b->n_scored ||
                        fread(lp_b, sizeof *lp_b, nlp, b->cache) != nlp)) {
            snprintf(why, why_size, "cannot read chunk %d of the cache %s", c, b->cache_path);
            rc = -1;
        }
        const int32_t *next = b->tokens + (size_t)c * (size_t)b->o.n_ctx + b->first + 1;
        for (int k = 0; rc == 0 && k < b->n_scored; ++k) {
            const size_t at = (size_t)k * (size_t)b->n_vocab;
            const double kl = mdl_kld_position(&acc, lp_b + at, top_b[k], lp_q + at, top_q[k], b->n_vocab, next[k]);
            values[(size_t)c * (size_t)b->n_scored + (size_t)k] = (float)kl;
        }
        if (rc == 0 && b->o.verbose) fprintf(stderr, "\ranvil-kld: %d/%d chunks", c + 1, b->n_chunks);
    }
    if (b->o.verbose) fprintf(stderr, "\n");
    if (rc == 0) mdl_summarize(&acc, values, n_values, &r->s);
    free(lp_q);
    free(lp_b);
    free(values);
    free(top_q);
    free(top_b);
    return rc;
}

int kld_eval(kld_bench *b, const char *path, kld_result *r, char *why, size_t why_size) {
    memset(r, 0, sizeof *r);
    llama_oracle_log_here(&b->lo);
    const double t0 = now_s();
    struct stat st;
    void *model = load_model(b, path, 0, why, why_size);
    if (model == NULL) return -1;
    int rc = check_vocab(b, model, path, why, why_size);
    void *ctx = rc == 0 ? open_context(b, model, why, why_size) : NULL;
    if (rc == 0 && ctx == NULL) rc = -1;
    if (rc == 0) rc = score(b, model, ctx, r, why, why_size);
    if (rc == 0) {
        r->n_params = b->lo.model_n_params(model);
        r->bytes = stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
        r->bpw = r->n_params ? (double)r->bytes * 8.0 / (double)r->n_params : 0.0;
    }
    if (ctx) b->lo.free_context(ctx);
    b->lo.free_model(model);
    r->seconds = now_s() - t0;
    return rc;
}

void kld_close(kld_bench *b) {
    if (b->cache) fclose(b->cache);
    free(b->tokens);
    free(b->bt_tok);
    free(b->bt_pos);
    free(b->bt_nseq);
    free(b->bt_seq);
    free(b->bt_want);
    llama_oracle_close(&b->lo);
    memset(b, 0, sizeof *b);
}
