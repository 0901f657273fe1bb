/* SPDX-License-Identifier: MIT */
/*
 * merge-lora: fold LoRA adapters into a float base as a transcode hook.
 *
 * Opening reads the adapter files' names only (the data stays mapped):
 * every tensor is classified as the A or B half of a pair, or a whole-module
 * replacement, and paired by the GGUF tensor it is for. Binding looks every
 * pair up in the base, checks types and shapes (errors name the adapter
 * tensor), and converts the adapter halves to f32. The hook then rewrites
 * the base rows as they stream past:
 *
 *     W'[o, i] = W[o, i] + (alpha / r) * sum_k B[o, k] * A[k, i]
 *
 * with the sum and the addition in double and one rounding to f32, so the
 * result does not depend on how rows are split across threads.
 */
#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "anvil/safetensors.h"
#include "error.h"
#include "transcode_internal.h"

#define GGUF_SUFFIX_A ".lora_a"
#define GGUF_SUFFIX_B ".lora_b"
#define PEFT_PREFIX "base_model.model."

typedef struct lora_file {
    char *path;
    anvil_st *st;
} lora_file;

typedef struct lora_pair {
    char *base_name;
    const anvil_st_tensor *a, *b; /* b == NULL and a != NULL: a whole replacement */
    const char *a_file, *b_file;
    const anvil_gguf_tensor *base; /* after bind */
    uint32_t rank;
    double scale;
    float *fa, *fb; /* f32 copies after bind */
    uint64_t in, out;
} lora_pair;

struct anvil_lora {
    lora_file *files;
    size_t n_files;
    lora_pair *pairs;
    size_t n_pairs, cap_pairs;
    int bound;
};

ANVIL_API void anvil_lora_close(anvil_lora *l) {
    if (l == NULL) return;
    for (size_t i = 0; i < l->n_pairs; ++i) {
        free(l->pairs[i].base_name);
        free(l->pairs[i].fa);
        free(l->pairs[i].fb);
    }
    free(l->pairs);
    for (size_t i = 0; i < l->n_files; ++i) {
        anvil_st_close(l->files[i].st);
        free(l->files[i].path);
    }
    free(l->files);
    free(l);
}

static int ends_with(const char *s, const char *suffix) {
    const size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static char *dup_n(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (d != NULL) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static int add_file(anvil_lora *l, const char *path, anvil_error *err) {
    lora_file *f = realloc(l->files, (l->n_files + 1) * sizeof *f);
    if (f == NULL) return anvil__nomem(err);
    l->files = f;
    lora_file *lf = &l->files[l->n_files];
    memset(lf, 0, sizeof *lf);
    lf->path = dup_n(path, strlen(path));
    if (lf->path == NULL) return anvil__nomem(err);
    l->n_files++;
    int rc = anvil_st_open(&lf->st, path, err);
    if (rc != ANVIL_OK) anvil__error_prefix(err, "adapter %s", path);
    return rc;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int open_dir(anvil_lora *l, const char *dir, anvil_error *err) {
    DIR *d = opendir(dir);
    if (d == NULL) return anvil__error_set(err, ANVIL_E_IO, "cannot read the folder %s", dir);
    char **names = NULL;
    size_t n = 0;
    int rc = ANVIL_OK;
    struct dirent *e;
    while (rc == ANVIL_OK && (e = readdir(d)) != NULL) {
        if (!ends_with(e->d_name, ".safetensors") || e->d_name[0] == '.') continue;
        char **nn = realloc(names, (n + 1) * sizeof *nn);
        char *p = malloc(strlen(dir) + strlen(e->d_name) + 2);
        if (nn == NULL || p == NULL) {
            free(p);
            if (nn != NULL) names = nn;
            rc = anvil__nomem(err);
            break;
        }
        names = nn;
        sprintf(p, "%s/%s", dir, e->d_name);
        names[n++] = p;
    }
    closedir(d);
    if (rc == ANVIL_OK && n == 0) {
        rc = anvil__error_set(err, ANVIL_E_NOT_FOUND,
                              "the folder %s holds no .safetensors file; give the adapter file or the "
                              "folder PEFT saved it in",
                              dir);
    }
    if (rc == ANVIL_OK) qsort(names, n, sizeof *names, cmp_str); /* a fixed order: errors are reproducible */
    for (size_t i = 0; rc == ANVIL_OK && i < n; ++i) rc = add_file(l, names[i], err);
    for (size_t i = 0; i < n; ++i) free(names[i]);
    free(names);
    return rc;
}

static lora_pair *pair_for(anvil_lora *l, const char *base_name, anvil_error *err) {
    for (size_t i = 0; i < l->n_pairs; ++i) {
        if (strcmp(l->pairs[i].base_name, base_name) == 0) return &l->pairs[i];
    }
    if (l->n_pairs == l->cap_pairs) {
        const size_t cap = l->cap_pairs ? 2 * l->cap_pairs : 16;
        lora_pair *p = realloc(l->pairs, cap * sizeof *p);
        if (p == NULL) {
            anvil__nomem(err);
            return NULL;
        }
        l->pairs = p;
        l->cap_pairs = cap;
    }
    lora_pair *p = &l->pairs[l->n_pairs];
    memset(p, 0, sizeof *p);
    p->base_name = dup_n(base_name, strlen(base_name));
    if (p->base_name == NULL) {
        anvil__nomem(err);
        return NULL;
    }
    l->n_pairs++;
    return p;
}

enum { ROLE_A, ROLE_B, ROLE_WHOLE };

/* Name of the base tensor an adapter tensor is for, and its role. */
static int classify(const char *name, const char *file, char *base, size_t size, int *role, anvil_error *err) {
    const size_t n = strlen(name);
    if (ends_with(name, GGUF_SUFFIX_A) || ends_with(name, GGUF_SUFFIX_B)) {
        const size_t k = n - strlen(GGUF_SUFFIX_A);
        if (k == 0 || k >= size) goto unknown;
        memcpy(base, name, k);
        base[k] = '\0';
        *role = ends_with(name, GGUF_SUFFIX_A) ? ROLE_A : ROLE_B;
        return ANVIL_OK;
    }
    if (strncmp(name, PEFT_PREFIX, strlen(PEFT_PREFIX)) != 0) goto unknown;
    const char *rest = name + strlen(PEFT_PREFIX);
    if (strstr(rest, "lora_embedding_") != NULL || strstr(rest, "lora_magnitude_vector") != NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "adapter tensor '%s' (%s): embedding LoRA and DoRA magnitudes are not "
                                "supported; only linear-layer lora_A/lora_B pairs are merged",
                                name, file);
    }
    const char *suffix = NULL;
    if (ends_with(rest, ".lora_A.weight")) {
        suffix = ".lora_A.weight";
        *role = ROLE_A;
    } else if (ends_with(rest, ".lora_B.weight")) {
        suffix = ".lora_B.weight";
        *role = ROLE_B;
    } else if (ends_with(rest, ".weight")) {
        suffix = ".weight";
        *role = ROLE_WHOLE;
    } else if (ends_with(rest, ".bias")) {
        suffix = ".bias";
        *role = ROLE_WHOLE;
    } else {
        goto unknown;
    }
    const size_t mlen = strlen(rest) - strlen(suffix);
    if (mlen == 0 || mlen >= 512) goto unknown;
    char module[512], mapped[600];
    memcpy(module, rest, mlen);
    module[mlen] = '\0';
    if (strstr(module, "lora_") != NULL) goto unknown;
    if (anvil_lora_map_name(module, mapped, sizeof mapped) != 0) goto unknown;
    const int w = snprintf(base, size, "%s%s", mapped, *role == ROLE_WHOLE ? suffix : ".weight");
    if (w < 0 || (size_t)w >= size) goto unknown;
    return ANVIL_OK;
unknown:
    return anvil__error_set(err, ANVIL_E_FORMAT,
                            "adapter tensor '%s' (%s) follows neither naming: GGUF-style "
                            "'<tensor>.lora_a' / '.lora_b', or PEFT-style 'base_model.model.<module>."
                            "lora_A.weight' / '.lora_B.weight'",
                            name, file);
}

static int add_tensor(anvil_lora *l, const lora_file *f, const anvil_st_tensor *t, anvil_error *err) {
    char base[700];
    int role = 0;
    int rc = classify(t->name, f->path, base, sizeof base, &role, err);
    if (rc != ANVIL_OK) return rc;
    lora_pair *p = pair_for(l, base, err);
    if (p == NULL) return ANVIL_E_NOMEM;
    /* p->rank == UINT32_MAX marks a whole-module replacement until bind. */
    const int whole = p->rank == UINT32_MAX;
    const anvil_st_tensor *other = NULL;
    if (role == ROLE_WHOLE) {
        other = p->a != NULL ? p->a : p->b;
    } else if (role == ROLE_A) {
        other = p->a;
    } else {
        other = p->b != NULL ? p->b : (whole ? p->a : NULL);
    }
    if (other != NULL) {
        return anvil__error_set(err, ANVIL_E_DUPLICATE,
                                "adapter tensors '%s' and '%s' both change base tensor '%s'; give one "
                                "adapter per tensor",
                                other->name, t->name, base);
    }
    if (role == ROLE_B) {
        p->b = t;
        p->b_file = f->path;
    } else {
        p->a = t;
        p->a_file = f->path;
        if (role == ROLE_WHOLE) p->rank = UINT32_MAX;
    }
    return ANVIL_OK;
}

ANVIL_API int anvil_lora_open(anvil_lora **out, const char *file_or_dir, anvil_error *err) {
    anvil__error_clear(err);
    if (out == NULL || file_or_dir == NULL) return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL argument");
    *out = NULL;
    anvil_lora *l = calloc(1, sizeof *l);
    if (l == NULL) return anvil__nomem(err);
    struct stat st;
    int rc;
    if (stat(file_or_dir, &st) != 0) {
        rc = anvil__error_set(err, ANVIL_E_NOT_FOUND, "adapters: %s does not exist", file_or_dir);
    } else if (S_ISDIR(st.st_mode)) {
        rc = open_dir(l, file_or_dir, err);
    } else {
        rc = add_file(l, file_or_dir, err);
    }
    for (size_t f = 0; rc == ANVIL_OK && f < l->n_files; ++f) {
        const anvil_st *s = l->files[f].st;
        for (size_t i = 0; rc == ANVIL_OK && i < anvil_st_count(s); ++i) {
            rc = add_tensor(l, &l->files[f], anvil_st_tensor_at(s, i), err);
        }
    }
    /* Every pair complete: a lone half is an error naming it. */
    for (size_t i = 0; rc == ANVIL_OK && i < l->n_pairs; ++i) {
        const lora_pair *p = &l->pairs[i];
        if (p->rank == UINT32_MAX) continue;
        if (p->a == NULL || p->b == NULL) {
            const anvil_st_tensor *have = p->a != NULL ? p->a : p->b;
            rc = anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                  "adapter tensor '%s' (%s) has no %s partner for base tensor '%s'; the "
                                  "adapter is incomplete",
                                  have->name, p->a != NULL ? p->a_file : p->b_file, p->a != NULL ? "B" : "A",
                                  p->base_name);
        }
    }
    if (rc == ANVIL_OK && l->n_pairs == 0) {
        rc = anvil__error_set(err, ANVIL_E_NOT_FOUND, "adapters %s hold no tensors", file_or_dir);
    }
    if (rc != ANVIL_OK) {
        anvil_lora_close(l);
        return rc;
    }
    *out = l;
    return ANVIL_OK;
}

static const char *shape_text(const uint64_t *shape, size_t rank, char *buf, size_t size) {
    size_t at = (size_t)snprintf(buf, size, "[");
    for (size_t i = 0; i < rank && at < size; ++i) {
        at += (size_t)snprintf(buf + at, size - at, "%s%" PRIu64, i ? ", " : "", shape[i]);
    }
    if (at < size) snprintf(buf + at, size - at, "]");
    return buf;
}

static int to_f32(const anvil_st_tensor *t, const char *file, float **out, anvil_error *err) {
    if (t->n_elements > SIZE_MAX / sizeof(float)) {
        return anvil__error_set(err, ANVIL_E_OVERFLOW, "adapter tensor '%s' is too large", t->name);
    }
    float *f = malloc(t->n_elements > 0 ? (size_t)t->n_elements * sizeof *f : 1);
    if (f == NULL) return anvil__error_set(err, ANVIL_E_NOMEM, "out of memory for adapter tensor '%s'", t->name);
    int rc = anvil_st_tensor_to_f32(t, f, (size_t)t->n_elements, err);
    if (rc != ANVIL_OK) {
        free(f);
        anvil__error_prefix(err, "adapter tensor '%s' (%s)", t->name, file);
        return rc;
    }
    for (uint64_t i = 0; i < t->n_elements; ++i) {
        if (!isfinite(f[i])) {
            free(f);
            return anvil__error_set(err, ANVIL_E_NONFINITE,
                                    "adapter tensor '%s' (%s) holds a non-finite value at index %" PRIu64, t->name,
                                    file, i);
        }
    }
    *out = f;
    return ANVIL_OK;
}

static int bind_pair(lora_pair *p, const anvil_gguf *base, double alpha, anvil_error *err) {
    const anvil_st_tensor *first = p->a != NULL ? p->a : p->b;
    const char *first_file = p->a != NULL ? p->a_file : p->b_file;
    const anvil_gguf_tensor *t = anvil_gguf_find_tensor(base, p->base_name);
    if (t == NULL) {
        return anvil__error_set(err, ANVIL_E_NOT_FOUND,
                                "adapter tensor '%s' (%s) is for base tensor '%s', which the base model "
                                "does not have; was the adapter trained on this model?",
                                first->name, first_file, p->base_name);
    }
    if (!tc_is_float_type(t->type)) {
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                "base tensor '%s' is %s, a quantized type, and adapter tensor '%s' "
                                "changes it: a LoRA delta added to quantized weights and quantized again "
                                "stacks two quantization errors, so it is refused. Merge on a float base "
                                "(F32/F16/BF16), transcode afterwards (anvil transcode)",
                                t->name, t->type_info.name, first->name);
    }
    p->base = t;
    char s1[96], s2[96];
    if (p->b == NULL) { /* a whole replacement: same logical shape */
        int same = p->a->rank == t->n_dims;
        for (size_t d = 0; same && d < t->n_dims; ++d) same = p->a->shape[d] == t->shape[d];
        if (!same) {
            return anvil__error_set(err, ANVIL_E_FORMAT,
                                    "adapter tensor '%s' (%s) is %s but base tensor '%s' is %s: a saved "
                                    "module must have the base tensor's shape",
                                    p->a->name, p->a_file, shape_text(p->a->shape, p->a->rank, s1, sizeof s1),
                                    t->name, shape_text(t->shape, t->n_dims, s2, sizeof s2));
        }
        p->rank = 0;
        p->scale = 0;
        return to_f32(p->a, p->a_file, &p->fa, err);
    }
    if (tc_effective_dims(t) != 2) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "adapter tensors '%s' / '%s' change base tensor '%s' of shape %s; LoRA "
                                "applies to 2-D weights [out, in] only",
                                p->a->name, p->b->name, t->name, shape_text(t->shape, t->n_dims, s1, sizeof s1));
    }
    const uint64_t out = t->ne[1], in = t->ne[0];
    const anvil_st_tensor *a = p->a, *b = p->b;
    if (a->rank != 2 || a->shape[1] != in || a->shape[0] == 0 || a->shape[0] > UINT32_MAX) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "adapter tensor '%s' (%s) is %s but base tensor '%s' is [%" PRIu64 ", %" PRIu64
                                "] ([out, in]): lora A must be [r, %" PRIu64 "]",
                                a->name, p->a_file, shape_text(a->shape, a->rank, s1, sizeof s1), t->name, out, in,
                                in);
    }
    const uint64_t r = a->shape[0];
    if (b->rank != 2 || b->shape[0] != out || b->shape[1] != r) {
        return anvil__error_set(
            err, ANVIL_E_FORMAT,
            "adapter tensor '%s' (%s) is %s but base tensor '%s' is [%" PRIu64 ", %" PRIu64
            "] ([out, in]) and its A half has rank %" PRIu64 ": lora B must be [%" PRIu64 ", %" PRIu64 "]",
            b->name, p->b_file, shape_text(b->shape, b->rank, s1, sizeof s1), t->name, out, in, r, out, r);
    }
    p->rank = (uint32_t)r;
    p->scale = alpha / (double)r;
    p->in = in;
    p->out = out;
    int rc = to_f32(a, p->a_file, &p->fa, err);
    if (rc == ANVIL_OK) rc = to_f32(b, p->b_file, &p->fb, err);
    return rc;
}

ANVIL_API int anvil_lora_bind(anvil_lora *l, const anvil_gguf *base, double alpha, anvil_error *err) {
    anvil__error_clear(err);
    if (l == NULL || base == NULL) return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL argument");
    if (!isfinite(alpha)) return anvil__error_set(err, ANVIL_E_INVALID_ARG, "alpha must be a finite number");
    if (l->bound) return anvil__error_set(err, ANVIL_E_STATE, "these adapters are already bound to a base");
    for (size_t i = 0; i < l->n_pairs; ++i) {
        int rc = bind_pair(&l->pairs[i], base, alpha, err);
        if (rc != ANVIL_OK) return rc;
    }
    l->bound = 1;
    return ANVIL_OK;
}

ANVIL_API size_t anvil_lora_target_count(const anvil_lora *l) { return l ? l->n_pairs : 0; }

ANVIL_API int anvil_lora_target_at(const anvil_lora *l, size_t i, anvil_lora_target *out) {
    if (l == NULL || out == NULL || i >= l->n_pairs) return ANVIL_E_INVALID_ARG;
    const lora_pair *p = &l->pairs[i];
    out->base_name = p->base_name;
    out->a_name = p->a ? p->a->name : NULL;
    out->b_name = p->b ? p->b->name : NULL;
    out->rank = p->b ? p->rank : 0;
    out->scale = p->b ? p->scale : 0;
    return ANVIL_OK;
}

static const lora_pair *find_pair(const anvil_lora *l, const anvil_gguf_tensor *t) {
    for (size_t i = 0; i < l->n_pairs; ++i) {
        if (l->pairs[i].base == t) return &l->pairs[i];
    }
    return NULL;
}

static int hook_wants(void *arg, const anvil_gguf_tensor *t) {
    const anvil_lora *l = arg;
    return l->bound && find_pair(l, t) != NULL;
}

static int hook_rows(void *arg, const anvil_gguf_tensor *t, uint64_t row0, uint64_t n_rows, float *rows,
                     anvil_error *err) {
    const lora_pair *p = find_pair(arg, t);
    if (p == NULL) return anvil__error_set(err, ANVIL_E_INTERNAL, "no adapter for tensor '%s'", t->name);
    const uint64_t cols = t->ne[0];
    if (p->b == NULL) { /* replacement */
        memcpy(rows, p->fa + row0 * cols, (size_t)(n_rows * cols) * sizeof *rows);
        return ANVIL_OK;
    }
    double *acc = malloc((size_t)cols * sizeof *acc);
    if (acc == NULL) return anvil__nomem(err);
    for (uint64_t r = 0; r < n_rows; ++r) {
        const float *brow = p->fb + (row0 + r) * p->rank;
        memset(acc, 0, (size_t)cols * sizeof *acc);
        for (uint32_t k = 0; k < p->rank; ++k) {
            const double bk = brow[k];
            const float *arow = p->fa + (uint64_t)k * cols;
            for (uint64_t i = 0; i < cols; ++i) acc[i] += bk * (double)arow[i];
        }
        float *w = rows + r * cols;
        for (uint64_t i = 0; i < cols; ++i) w[i] = (float)((double)w[i] + p->scale * acc[i]);
    }
    free(acc);
    return ANVIL_OK;
}

ANVIL_API anvil_transcode_hook anvil_lora_hook(anvil_lora *l) {
    anvil_transcode_hook h;
    h.wants = hook_wants;
    h.rows = hook_rows;
    h.arg = l;
    return h;
}
