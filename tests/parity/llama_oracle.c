/* SPDX-License-Identifier: MIT */
/* libllama by dlopen (see llama_oracle.h). */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama_oracle.h"

/* The size of a struct a `struct X f(void)` returns: such a function writes
 * its result through the pointer the caller passes (x86-64 SysV: in rdi,
 * like a first argument), so it is called with a pre-filled buffer and the
 * last byte it wrote tells the size. The known defaults checked by the
 * caller tell the offsets. */
static size_t probe_defaults(void *fn, unsigned char *out, size_t cap) {
#if defined(__x86_64__)
    unsigned char b[512];
    memset(b, 0xA5, sizeof b);
    void *(*f)(void *) = (void *(*)(void *))fn;
    f(b);
    size_t last = 0;
    for (size_t i = 0; i < sizeof b; ++i) {
        if (b[i] != 0xA5) last = i + 1;
    }
    memcpy(out, b, cap < sizeof b ? cap : sizeof b);
    return last;
#else
    (void)fn;
    (void)out;
    (void)cap;
    return 0;
#endif
}

static void log_cb(int level, const char *text, void *arg) {
    (void)level;
    llama_oracle *lo = arg;
    const size_t n = strlen(text);
    if (n >= sizeof lo->log) return;
    if (lo->log_len + n >= sizeof lo->log) {
        const size_t keep = sizeof lo->log / 2;
        memmove(lo->log, lo->log + lo->log_len - keep, keep);
        lo->log_len = keep;
    }
    memcpy(lo->log + lo->log_len, text, n);
    lo->log_len += n;
    lo->log[lo->log_len] = '\0';
}

void llama_oracle_log_clear(llama_oracle *lo) {
    lo->log_len = 0;
    lo->log[0] = '\0';
}

const char *llama_oracle_log_last(llama_oracle *lo, char *buf, size_t size) {
    /* The last line saying "failed" or "error", else the last line. */
    const char *best = NULL, *any = NULL;
    size_t best_len = 0, any_len = 0;
    const char *p = lo->log, *end = lo->log + lo->log_len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        const size_t len = (size_t)(e - p);
        if (len > 0) {
            any = p;
            any_len = len;
            char line[1024];
            snprintf(line, sizeof line, "%.*s", (int)len, p);
            if (strstr(line, "failed") || strstr(line, "error") || strstr(line, "ERROR")) {
                best = p;
                best_len = len;
            }
        }
        p = e + 1;
    }
    if (best == NULL) {
        best = any;
        best_len = any_len;
    }
    snprintf(buf, size, "%.*s", (int)best_len, best ? best : "");
    return buf;
}

#define SYM(field, name)                                         \
    do {                                                         \
        *(void **)&lo->field = dlsym(lo->lib, name);             \
        if (lo->field == NULL) {                                 \
            snprintf(why, why_size, "libllama has no %s", name); \
            return -1;                                           \
        }                                                        \
    } while (0)

int llama_oracle_open(llama_oracle *lo, const char *dir, char *why, size_t why_size) {
    memset(lo, 0, sizeof *lo);
    snprintf(lo->dir, sizeof lo->dir, "%s", dir);
    char path[1200];
    snprintf(path, sizeof path, "%s/libllama.v0.5.0.so", dir);
    lo->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lo->lib == NULL) {
        snprintf(why, why_size, "cannot load %s: %s", path, dlerror());
        return -1;
    }
    void *qdef = dlsym(lo->lib, "llama_model_quantize_default_params");
    void *mdef = dlsym(lo->lib, "llama_model_default_params");
    void *cdef = dlsym(lo->lib, "llama_context_default_params");
    *(void **)&lo->log_set = dlsym(lo->lib, "llama_log_set");
    if (qdef == NULL || mdef == NULL || cdef == NULL || lo->log_set == NULL) {
        snprintf(why, why_size, "libllama lacks the default-parameter functions");
        return -1;
    }
    SYM(quantize, "llama_model_quantize");
    SYM(load_model, "llama_model_load_from_file");
    SYM(free_model, "llama_model_free");
    SYM(init_context, "llama_init_from_model");
    SYM(free_context, "llama_free");
    SYM(batch_get_one, "llama_batch_get_one");
    SYM(decode, "llama_decode");
    SYM(logits_ith, "llama_get_logits_ith");
    SYM(model_vocab, "llama_model_get_vocab");
    SYM(vocab_n_tokens, "llama_vocab_n_tokens");
    SYM(tokenize, "llama_tokenize");
    SYM(vocab_bos, "llama_vocab_bos");
    SYM(vocab_get_add_bos, "llama_vocab_get_add_bos");
    SYM(get_memory, "llama_get_memory");
    SYM(memory_clear, "llama_memory_clear");
    SYM(model_n_params, "llama_model_n_params");
    lo->log_set(log_cb, lo);

    /* The structs must be the ones declared here: sizes and known defaults. */
    unsigned char buf[512];
    size_t n = probe_defaults(qdef, buf, sizeof buf);
    memcpy(&lo->qdefaults, buf, sizeof lo->qdefaults);
    const lq_quantize_params *q = &lo->qdefaults;
    if (n != sizeof *q || q->ftype != 7 || q->output_tensor_type != 43 || q->token_embedding_type != 43 ||
        !q->quantize_output_tensor || q->max_buf_size != ((size_t)8 << 30)) {
        snprintf(why, why_size,
                 "llama_model_quantize_params of this libllama is not the one of include/llama.h "
                 "(%zu bytes written, %zu expected, or the defaults moved)",
                 n, sizeof *q);
        return -1;
    }
    n = probe_defaults(mdef, buf, sizeof buf);
    memcpy(&lo->mdefaults, buf, sizeof lo->mdefaults);
    /* The last bool (load_mtp) may be 0 and pad bytes stay: at least up to vocab_only. */
    if (n > sizeof lo->mdefaults || n <= offsetof(lq_model_params, vocab_only)) {
        snprintf(why, why_size, "llama_model_params: %zu bytes written, %zu expected", n, sizeof lo->mdefaults);
        return -1;
    }
    n = probe_defaults(cdef, buf, sizeof buf);
    memcpy(&lo->cdefaults, buf, sizeof lo->cdefaults);
    if (n != sizeof lo->cdefaults || lo->cdefaults.n_ctx != 512 || lo->cdefaults.n_batch != 2048) {
        snprintf(why, why_size, "llama_context_params: %zu bytes written, %zu expected", n, sizeof lo->cdefaults);
        return -1;
    }
    return 0;
}

static void log_drop(int level, const char *text, void *arg) {
    (void)level;
    (void)text;
    (void)arg;
}

void llama_oracle_close(llama_oracle *lo) {
    /* libllama is never unloaded: its backends and threads may outlive us. */
    if (lo->log_set != NULL) lo->log_set(log_drop, NULL);
}

void llama_oracle_log_here(llama_oracle *lo) {
    if (lo->log_set != NULL) lo->log_set(log_cb, lo);
}

int llama_oracle_backends(llama_oracle *lo, char *why, size_t why_size) {
    if (lo->backends_loaded) return 0;
    void (*load_all)(const char *) = (void (*)(const char *))dlsym(lo->lib, "ggml_backend_load_all_from_path");
    void (*init)(void) = (void (*)(void))dlsym(lo->lib, "llama_backend_init");
    if (load_all == NULL || init == NULL) {
        snprintf(why, why_size, "libllama lacks ggml_backend_load_all_from_path / llama_backend_init");
        return -1;
    }
    load_all(lo->dir);
    init();
    lo->backends_loaded = 1;
    return 0;
}

int llama_oracle_generate(llama_oracle *lo, const char *path, int steps, int32_t *out, char *why, size_t why_size) {
    if (llama_oracle_backends(lo, why, why_size) != 0) return -1;
    llama_oracle_log_clear(lo);
    lq_model_params mp = lo->mdefaults;
    void *model = lo->load_model(path, mp);
    char last[512];
    if (model == NULL) {
        snprintf(why, why_size, "llama_model_load_from_file failed: %s",
                 llama_oracle_log_last(lo, last, sizeof last));
        return -1;
    }
    lq_context_params cp = lo->cdefaults;
    cp.n_ctx = 64;
    cp.n_batch = 64;
    cp.n_ubatch = 64;
    cp.n_threads = 2;
    cp.n_threads_batch = 2;
    void *ctx = lo->init_context(model, cp);
    if (ctx == NULL) {
        lo->free_model(model);
        snprintf(why, why_size, "llama_init_from_model failed: %s", llama_oracle_log_last(lo, last, sizeof last));
        return -1;
    }
    const int32_t n_vocab = lo->vocab_n_tokens(lo->model_vocab(model));
    int32_t tok = 1;
    int rc = 0;
    for (int s = 0; s < steps && rc == 0; ++s) {
        lq_batch b = lo->batch_get_one(&tok, 1);
        if (lo->decode(ctx, b) != 0) {
            snprintf(why, why_size, "llama_decode failed at step %d: %s", s,
                     llama_oracle_log_last(lo, last, sizeof last));
            rc = -1;
            break;
        }
        const float *logits = lo->logits_ith(ctx, -1);
        if (logits == NULL || n_vocab <= 0) {
            snprintf(why, why_size, "no logits after step %d", s);
            rc = -1;
            break;
        }
        int32_t best = 0;
        for (int32_t i = 0; i < n_vocab; ++i) {
            if (!isfinite(logits[i])) {
                snprintf(why, why_size, "logit %d is not finite after step %d", (int)i, s);
                rc = -1;
                break;
            }
            if (logits[i] > logits[best]) best = i;
        }
        out[s] = best;
        tok = best;
    }
    lo->free_context(ctx);
    lo->free_model(model);
    return rc;
}
