/* SPDX-License-Identifier: MIT */
/*
 * anvil quantize --target-size / --target-bpw: every free tensor's type
 * chosen by measured error under a byte budget.
 *
 * Contract:
 *  - Candidates of a tensor: every weight type llama.cpp's CPU backend loads
 *    and runs (IQ1_S .. Q8_0, F16, BF16) whose block divides the rows and
 *    that anvil can encode here; without an importance matrix for the tensor
 *    the types llama.cpp requires one for (tensor_requires_imatrix) and the
 *    ones ggml cannot encode without one are not candidates.
 *  - Predicted error of a candidate: sum_ij (W - Q)_ij^2 m_j, the expected
 *    squared error of the tensor's output per token, with m_j the importance
 *    matrix (in_sum2 / counts: E[x_j^2] of the tensor's input), measured by
 *    encoding with the encoder the file will be written with (the same
 *    importance weights) and decoding back, over the output's own energy
 *    sum_ij W_ij^2 m_j (a relative error: RMS norms downstream make a
 *    perturbation count relative to the signal it rides on), times a role
 *    weight (defaults measured by KLD: output 30, token_embd 10, others 1).
 *    Without a matrix entry m_j is the square of the RMS-norm weight that
 *    feeds the tensor where there is one (attn_norm for attn_q/k/v, ffn_norm
 *    for ffn_gate/up, output_norm for output: a normalised input has
 *    E[x_j^2] ~ gamma_j^2), else 1.
 *  - Measured on every row of a small tensor, on an evenly spread sample of
 *    rows of a large one (1/32, at least 64K values); the grid-search IQ
 *    encoders (30-300x slower) on every k-th group of 16 sampled rows, k
 *    such that about 64K values (and two groups at least) are measured.
 *    Error and energy over the same rows.
 *  - The choice: qz_allocate (convex hull + Lagrange + greedy fill) on the
 *    bytes each candidate takes in the file with its alignment padding, for
 *    the budget the file's header and the fixed tensors leave.
 *  - Deterministic for any thread count: every (candidate, row group) sum
 *    lands in its own slot and they are added in a fixed order.
 *  - With a cache (anvil_quantize_cache), a (tensor, type, sample) measured
 *    by an earlier plan of the same source is taken from it: the same value.
 *  - A version 3 sensitivity file's stored errors of a tensor (--measure
 *    measured them as here, printed to round-trip exactly) are taken instead
 *    of measuring only when their key is qz_err_key of this plan's inputs:
 *    the same values, so the same choice; a mismatch is measured again and
 *    the plan's note says how many.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "error.h"
#include "float_rows.h"
#include "quantize_internal.h"
#include "quantize_target.h"
#include "thread_pool.h"

/* ---- the allocator ---------------------------------------------------------------- */

static int cand_cmp(const void *a, const void *b) {
    const qz_cand *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? -1 : 1;
    if (x->err != y->err) return x->err < y->err ? -1 : 1;
    return x->type < y->type ? -1 : x->type > y->type;
}

typedef struct qz_seg {
    size_t item, k; /* hull point k -> k + 1 of item */
    double gain;
    uint64_t cost;
} qz_seg;

/* Larger gain per byte first; ties by item, then position. */
static int seg_cmp(const void *a, const void *b) {
    const qz_seg *x = a, *y = b;
    const double l = x->gain * (double)y->cost, r = y->gain * (double)x->cost;
    if (l != r) return l > r ? -1 : 1;
    if (x->item != y->item) return x->item < y->item ? -1 : 1;
    return x->k < y->k ? -1 : x->k > y->k;
}

/* Pareto points of a sorted list (strictly less error for more bytes),
 * then their lower convex hull: indices into cands, in hull[]; count back. */
static size_t item_hull(const qz_item *it, size_t *hull) {
    size_t np = 0;
    for (size_t k = 0; k < it->n; ++k) {
        if (np == 0 || it->cands[k].err < it->cands[hull[np - 1]].err) hull[np++] = k;
    }
    size_t nh = 0;
    for (size_t p = 0; p < np; ++p) {
        const qz_cand *c = &it->cands[hull[p]];
        while (nh >= 2) {
            const qz_cand *a = &it->cands[hull[nh - 2]], *b = &it->cands[hull[nh - 1]];
            const double g1 = a->err - b->err, g2 = b->err - c->err;
            const double c1 = (double)(b->bytes - a->bytes), c2 = (double)(c->bytes - b->bytes);
            if (g1 * c2 > g2 * c1) break; /* b is strictly below the chord a-c */
            nh--;
        }
        hull[nh++] = hull[p];
    }
    return nh;
}

/* The best single move up that fits in left bytes: *bi, *bk (item,
 * candidate) or 0 when none. */
static int best_fill(const qz_item *items, size_t n, uint64_t left, size_t *bi, size_t *bk) {
    int found = 0;
    double bg = 0.0;
    uint64_t bc = 1;
    for (size_t i = 0; i < n; ++i) {
        const qz_cand *cur = &items[i].cands[items[i].pick];
        for (size_t k = items[i].pick + 1; k < items[i].n; ++k) {
            const qz_cand *c = &items[i].cands[k];
            if (c->bytes - cur->bytes > left) break; /* sorted by bytes */
            if (!(c->err < cur->err) || c->bytes == cur->bytes) continue;
            const double g = cur->err - c->err;
            const uint64_t cost = c->bytes - cur->bytes;
            if (!found || g * (double)bc > bg * (double)cost) {
                found = 1;
                bg = g;
                bc = cost;
                *bi = i;
                *bk = k;
            }
        }
    }
    return found;
}

/* One exchange: item i one candidate down, item j one up, where the bytes
 * still fit and the total error falls; the best such (ties: lowest i, j).
 * 0 when none. */
static int best_swap(qz_item *items, size_t n, uint64_t left, uint64_t *used) {
    double best = 0.0;
    size_t bi = 0, bd = 0, bj = 0, bu = 0;
    for (size_t i = 0; i < n; ++i) {
        const qz_cand *ci = &items[i].cands[items[i].pick];
        for (size_t d = 0; d < items[i].pick; ++d) {
            const qz_cand *cd = &items[i].cands[d];
            const uint64_t room = left + (ci->bytes - cd->bytes);
            const double loss = cd->err - ci->err;
            for (size_t j = 0; j < n; ++j) {
                if (j == i) continue;
                const qz_cand *cj = &items[j].cands[items[j].pick];
                for (size_t u = items[j].pick + 1; u < items[j].n; ++u) {
                    const qz_cand *cu = &items[j].cands[u];
                    if (cu->bytes - cj->bytes > room) break;
                    const double gain = (cj->err - cu->err) - loss;
                    if (gain > best * (1.0 + 1e-12) && gain > 1e-12 * (cj->err + ci->err)) {
                        best = gain;
                        bi = i, bd = d, bj = j, bu = u;
                    }
                }
            }
        }
    }
    if (best <= 0.0) return 0;
    *used = *used - items[bi].cands[items[bi].pick].bytes + items[bi].cands[bd].bytes;
    *used = *used - items[bj].cands[items[bj].pick].bytes + items[bj].cands[bu].bytes;
    items[bi].pick = bd;
    items[bj].pick = bu;
    return 1;
}

int qz_allocate(qz_item *items, size_t n, uint64_t budget, uint64_t *min_bytes, uint64_t *used, anvil_error *err) {
    uint64_t total = 0, max_n = 1;
    for (size_t i = 0; i < n; ++i) {
        if (items[i].n == 0) return anvil__error_set(err, ANVIL_E_INVALID_ARG, "item %zu has no candidate type", i);
        qsort(items[i].cands, items[i].n, sizeof *items[i].cands, cand_cmp);
        items[i].pick = 0;
        total += items[i].cands[0].bytes;
        if (items[i].n > max_n) max_n = items[i].n;
    }
    *min_bytes = total;
    *used = total;
    if (total > budget) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "the smallest types take %" PRIu64 " bytes, over the %" PRIu64 " bytes left for them",
                                total, budget);
    }
    size_t *hull = malloc(n * max_n * sizeof *hull), *nh = malloc((n ? n : 1) * sizeof *nh);
    qz_seg *segs = malloc(n * max_n * sizeof *segs + 1);
    if (hull == NULL || nh == NULL || segs == NULL) {
        free(hull);
        free(nh);
        free(segs);
        return anvil__nomem(err);
    }
    size_t ns = 0;
    for (size_t i = 0; i < n; ++i) {
        size_t *h = hull + i * max_n;
        nh[i] = item_hull(&items[i], h);
        for (size_t k = 0; k + 1 < nh[i]; ++k) {
            segs[ns].item = i;
            segs[ns].k = k;
            segs[ns].gain = items[i].cands[h[k]].err - items[i].cands[h[k + 1]].err;
            segs[ns].cost = items[i].cands[h[k + 1]].bytes - items[i].cands[h[k]].bytes;
            ns++;
        }
    }
    qsort(segs, ns, sizeof *segs, seg_cmp);
    /* The Lagrangian walk: every segment steeper than the first that does
     * not fit. Convex hulls make each item's segments come in order. */
    for (size_t s = 0; s < ns; ++s) {
        if (*used + segs[s].cost > budget) break;
        *used += segs[s].cost;
        items[segs[s].item].pick = hull[segs[s].item * max_n + segs[s].k + 1];
    }
    size_t bi = 0, bk = 0;
    while (best_fill(items, n, budget - *used, &bi, &bk)) {
        *used += items[bi].cands[bk].bytes - items[bi].cands[items[bi].pick].bytes;
        items[bi].pick = bk;
    }
    /* Exchanges while they help (each lowers the total error; bounded so
     * a large model stays quick), each followed by the fill. */
    uint64_t work = (uint64_t)n * max_n;
    for (size_t round = 0; work * work <= ((uint64_t)1 << 28) && round < 4 * n + 4; ++round) {
        if (!best_swap(items, n, budget - *used, used)) break;
        while (best_fill(items, n, budget - *used, &bi, &bk)) {
            *used += items[bi].cands[bk].bytes - items[bi].cands[items[bi].pick].bytes;
            items[bi].pick = bk;
        }
    }
    free(hull);
    free(nh);
    free(segs);
    return ANVIL_OK;
}

/* ---- candidates --------------------------------------------------------------------- */

static const uint32_t qz_types[] = {
    ANVIL_TYPE_IQ1_S, ANVIL_TYPE_Q1_0,   ANVIL_TYPE_IQ1_M,  ANVIL_TYPE_TQ1_0, ANVIL_TYPE_IQ2_XXS, ANVIL_TYPE_TQ2_0,
    ANVIL_TYPE_Q2_0,  ANVIL_TYPE_IQ2_XS, ANVIL_TYPE_IQ2_S,  ANVIL_TYPE_Q2_K,  ANVIL_TYPE_IQ3_XXS, ANVIL_TYPE_IQ3_S,
    ANVIL_TYPE_Q3_K,  ANVIL_TYPE_IQ4_XS, ANVIL_TYPE_IQ4_NL, ANVIL_TYPE_MXFP4, ANVIL_TYPE_NVFP4,   ANVIL_TYPE_Q4_0,
    ANVIL_TYPE_Q4_1,  ANVIL_TYPE_Q4_K,   ANVIL_TYPE_Q5_0,   ANVIL_TYPE_Q5_1,  ANVIL_TYPE_Q5_K,    ANVIL_TYPE_Q6_K,
    ANVIL_TYPE_Q8_0,  ANVIL_TYPE_F16,    ANVIL_TYPE_BF16,
};
#define QZ_N_TYPES (sizeof qz_types / sizeof qz_types[0])

static const char *tname(uint32_t type) {
    anvil_type_info ti;
    return anvil_type_builtin(type, &ti, NULL) == ANVIL_OK ? ti.name : "?";
}

static uint64_t pad_to(uint64_t n, uint32_t align) { return align > 1 ? (n + align - 1) / align * align : n; }

/* Is type a candidate for item it (has_w: importance weights go to its encoder)? */
static int is_candidate(anvil_transcode *t, const anvil_transcode_tensor *it, uint32_t type) {
    const uint32_t bs = qz_block_size(type);
    if (bs == 0 || it->row_len % bs != 0) return 0;
    if (tc_check_target(t->ctx, type, "", NULL) != ANVIL_OK) return 0;
    if (it->imatrix == NULL) {
        if (qz_requires_imatrix(it->name, type, QZ_GUESSED)) return 0;
        const anvil_codec *c = anvil_ctx_codec(t->ctx, type);
        if (c != NULL && (c->flags & ANVIL_CODEC_NEEDS_IMATRIX)) return 0;
    }
    return 1;
}

/* ---- measuring ----------------------------------------------------------------------- */

typedef struct qz_job {
    anvil_ctx *ctx;
    const anvil_transcode_tensor *it;
    const float *x;       /* sampled rows, f32 */
    const uint64_t *rows; /* their row numbers */
    const float *norm_w;  /* m_j when the tensor has no importance entry (NULL: 1) */
    size_t n_rows;        /* sampled */
    size_t group;         /* rows per task */
    size_t n_groups;
    const qz_cand *cands;
    size_t n_cands;
    double *sums;      /* n_cands * n_groups */
    size_t slow_every; /* slow encoders: every slow_every-th group only (1: all) */
    int *rcs;          /* per task */
    anvil_error *errs; /* per task */
} qz_job;

static void measure_task(void *arg, size_t task) {
    qz_job *j = arg;
    const size_t c = task / j->n_groups, g = task % j->n_groups;
    const anvil_transcode_tensor *it = j->it;
    const size_t rl = (size_t)it->row_len;
    const uint32_t type = j->cands[c].type;
    j->rcs[task] = ANVIL_OK;
    if (g % j->slow_every != 0 && qz_is_grid_iq(type)) return;
    anvil_type_info ti;
    uint64_t rb = 0;
    int rc = anvil_type_lookup(j->ctx, type, &ti, &j->errs[task]);
    if (rc == ANVIL_OK) rc = anvil_type_bytes(&ti, rl, &rb, &j->errs[task]);
    uint8_t *enc = rc == ANVIL_OK ? malloc((size_t)rb) : NULL;
    if (rc == ANVIL_OK && enc == NULL) rc = anvil__nomem(&j->errs[task]);
    float *dec = enc ? malloc(rl * sizeof *dec) : NULL;
    if (enc != NULL && dec == NULL) rc = anvil__nomem(&j->errs[task]);
    const uint64_t per = it->src->ne[1] > 0 ? it->src->ne[1] : 1;
    double sum = 0.0;
    const size_t r0 = g * j->group, r1 = r0 + j->group < j->n_rows ? r0 + j->group : j->n_rows;
    for (size_t r = r0; rc == ANVIL_OK && r < r1; ++r) {
        const float *x = j->x + r * rl;
        const float *im = it->imatrix != NULL ? it->imatrix + (j->rows[r] / per) * rl : NULL;
        rc = anvil_encode_rows(j->ctx, type, x, 1, rl, im, enc, (size_t)rb, &j->errs[task]);
        if (rc == ANVIL_OK) rc = anvil_decode(j->ctx, type, enc, (size_t)rb, dec, rl, &j->errs[task]);
        if (rc != ANVIL_OK) break;
        const float *w = im != NULL ? im : j->norm_w;
        double s = 0.0;
        for (size_t k = 0; k < rl; ++k) {
            const double d = (double)x[k] - (double)dec[k];
            s += w != NULL ? d * d * (double)w[k] : d * d;
        }
        sum += s;
    }
    free(enc);
    free(dec);
    j->sums[c * j->n_groups + g] = sum;
    j->rcs[task] = rc;
}

/* ---- the cache of measured errors ------------------------------------------------ */

typedef struct qz_cache_entry {
    char *name; /* NULL: empty slot */
    uint32_t type;
    const float *imatrix;
    uint64_t rows;
    uint64_t key; /* qz_err_key of the measurement */
    double err;   /* relative error, before any weight */
} qz_cache_entry;

struct anvil_quantize_cache {
    qz_cache_entry *e;
    size_t cap, n; /* cap a power of two, n < cap / 2 */
};

ANVIL_API anvil_quantize_cache *anvil_quantize_cache_new(void) { return calloc(1, sizeof(anvil_quantize_cache)); }

ANVIL_API void anvil_quantize_cache_free(anvil_quantize_cache *c) {
    if (c == NULL) return;
    for (size_t i = 0; i < c->cap; ++i) free(c->e[i].name);
    free(c->e);
    free(c);
}

static uint64_t cache_hash(const char *name, uint32_t type, const float *im, uint64_t rows) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)name; *p; ++p) h = (h ^ *p) * 0x100000001b3ull;
    h = (h ^ type) * 0x100000001b3ull;
    h = (h ^ (uint64_t)(uintptr_t)im) * 0x100000001b3ull;
    return (h ^ rows) * 0x100000001b3ull;
}

/* The slot of the key: its entry, or the empty slot it would take. */
static qz_cache_entry *cache_slot(const anvil_quantize_cache *c, const char *name, uint32_t type, const float *im,
                                  uint64_t rows) {
    size_t i = (size_t)cache_hash(name, type, im, rows) & (c->cap - 1);
    for (;;) {
        qz_cache_entry *e = &c->e[i];
        if (e->name == NULL ||
            (e->type == type && e->imatrix == im && e->rows == rows && strcmp(e->name, name) == 0)) {
            return e;
        }
        i = (i + 1) & (c->cap - 1);
    }
}

static int cache_get(const anvil_quantize_cache *c, const char *name, uint32_t type, const float *im, uint64_t rows,
                     double *err) {
    if (c == NULL || c->cap == 0) return 0;
    const qz_cache_entry *e = cache_slot(c, name, type, im, rows);
    if (e->name == NULL) return 0;
    *err = e->err;
    return 1;
}

/* Best effort: a failed allocation leaves the entry out. */
static void cache_put(anvil_quantize_cache *c, const char *name, uint32_t type, const float *im, uint64_t rows,
                      uint64_t key, double err) {
    if (c == NULL) return;
    if ((c->n + 1) * 2 > c->cap) {
        const size_t cap = c->cap ? c->cap * 2 : 256;
        qz_cache_entry *ne = calloc(cap, sizeof *ne);
        if (ne == NULL) return;
        anvil_quantize_cache old = *c;
        c->e = ne;
        c->cap = cap;
        for (size_t i = 0; i < old.cap; ++i) {
            if (old.e[i].name != NULL)
                *cache_slot(c, old.e[i].name, old.e[i].type, old.e[i].imatrix, old.e[i].rows) = old.e[i];
        }
        free(old.e);
    }
    qz_cache_entry *e = cache_slot(c, name, type, im, rows);
    if (e->name != NULL) {
        e->key = key;
        e->err = err;
        return;
    }
    e->name = strdup(name);
    if (e->name == NULL) return;
    e->type = type;
    e->imatrix = im;
    e->rows = rows;
    e->key = key;
    e->err = err;
    c->n++;
}

ANVIL_API size_t anvil_quantize_cache_err_json(const anvil_quantize_cache *c, const anvil_ctx *ctx, const char *name,
                                               char *buf, size_t size) {
    if (size) buf[0] = '\0';
    if (c == NULL || c->cap == 0 || name == NULL) return 0;
    /* One pass: per candidate type the first entry of the tensor; then
     * only those under the key of the first type's (a cache that served
     * plans of other inputs holds others too). */
    const qz_cache_entry *row[QZ_N_TYPES];
    for (size_t k = 0; k < QZ_N_TYPES; ++k) row[k] = NULL;
    for (size_t i = 0; i < c->cap; ++i) {
        const qz_cache_entry *e = &c->e[i];
        if (e->name == NULL || strcmp(e->name, name) != 0) continue;
        for (size_t k = 0; k < QZ_N_TYPES; ++k) {
            if (qz_types[k] == e->type && row[k] == NULL) row[k] = e;
        }
    }
    size_t n = 0;
    uint64_t key = 0;
    for (size_t k = 0; k < QZ_N_TYPES; ++k) {
        if (row[k] == NULL) continue;
        if (n == 0) key = row[k]->key;
        if (row[k]->key != key) row[k] = NULL;
        else n++;
    }
    if (n == 0) return 0;
    size_t len = 0;
#define QZ_ADD(...)                                                                                       \
    do {                                                                                                  \
        const int w_ = snprintf(len < size ? buf + len : NULL, len < size ? size - len : 0, __VA_ARGS__); \
        len += w_ > 0 ? (size_t)w_ : 0;                                                                   \
    } while (0)
    QZ_ADD("{\"key\": \"%016" PRIx64 "\", \"types\": [", key);
    size_t m = 0;
    for (size_t k = 0; k < QZ_N_TYPES; ++k) {
        if (row[k] != NULL) QZ_ADD("%s\"%s\"", m++ ? ", " : "", anvil_type_name(ctx, qz_types[k]));
    }
    QZ_ADD("], \"relerr\": [");
    m = 0;
    for (size_t k = 0; k < QZ_N_TYPES; ++k) {
        if (row[k] != NULL) QZ_ADD("%s%.17g", m++ ? ", " : "", row[k]->err);
    }
    QZ_ADD("]}");
#undef QZ_ADD
    return len;
}

/* The rows measured: all of a small tensor, else an evenly spread sample. */
static size_t sample_count(const anvil_transcode_tensor *it, uint64_t want) {
    if (want == UINT64_MAX || want >= it->n_rows) return (size_t)it->n_rows;
    if (want == 0) {
        const uint64_t elems = it->n_rows * it->row_len;
        if (elems <= ((uint64_t)1 << 16)) return (size_t)it->n_rows;
        want = it->n_rows / 32;
        const uint64_t floor_rows = ((uint64_t)1 << 16) / it->row_len;
        if (want < floor_rows) want = floor_rows;
        if (want > it->n_rows) want = it->n_rows;
    }
    return (size_t)(want ? want : 1);
}

/* m_j for a tensor without an importance entry: the RMS-norm weight that
 * feeds it, squared, or NULL (1). */
static float *norm_weights(const anvil_transcode *t, const anvil_transcode_tensor *it) {
    char name[256];
    const char *n = it->name;
    int layer = -1;
    const qz_category c = qz_category_of(n);
    if (c == QZ_OUTPUT) {
        snprintf(name, sizeof name, "output_norm.weight");
    } else if (sscanf(n, "blk.%d.", &layer) == 1 &&
               (c == QZ_ATTENTION_Q || c == QZ_ATTENTION_K || c == QZ_ATTENTION_V || c == QZ_ATTENTION_QKV)) {
        snprintf(name, sizeof name, "blk.%d.attn_norm.weight", layer);
    } else if (layer >= 0 && (c == QZ_FFN_UP || c == QZ_FFN_GATE)) {
        snprintf(name, sizeof name, "blk.%d.ffn_norm.weight", layer);
    } else {
        return NULL;
    }
    const anvil_gguf_tensor *g = anvil_gguf_find_tensor(t->src, name);
    if (g == NULL || g->n_elements != it->row_len || !tc_is_float_type(g->type)) return NULL;
    float *w = malloc((size_t)it->row_len * sizeof *w);
    uint8_t *buf = NULL;
    uint64_t cap = 0;
    const uint8_t *data = NULL;
    if (w == NULL || tc_src_data(t, g, &buf, &cap, &data, NULL) != ANVIL_OK) {
        free(buf);
        free(w);
        return NULL;
    }
    anvil__float_load(g->type, data, w, (size_t)it->row_len);
    free(buf);
    for (uint64_t k = 0; k < it->row_len; ++k) {
        w[k] = isfinite(w[k]) ? w[k] * w[k] : 1.0f;
    }
    return w;
}

/* The k-th of ns sampled rows: every row, or evenly spread. */
static uint64_t sample_row(const anvil_transcode_tensor *it, size_t ns, size_t k) {
    return ns == it->n_rows ? k : ((2 * (uint64_t)k + 1) * it->n_rows) / (2 * (uint64_t)ns);
}

/* The sampled rows of it, from its bytes at base, as f32. */
static int sample_rows(anvil_transcode *t, const anvil_transcode_tensor *it, const uint8_t *base, size_t ns, float *x,
                       uint64_t *rows, anvil_error *err) {
    const uint64_t rbytes = it->src->row_bytes;
    for (size_t k = 0; k < ns; ++k) {
        const uint64_t r = sample_row(it, ns, k);
        rows[k] = r;
        const uint8_t *p = base + r * rbytes;
        float *dst = x + k * it->row_len;
        if (tc_is_float_type(it->src_type)) {
            anvil__float_load(it->src_type, p, dst, (size_t)it->row_len);
        } else {
            const int rc = anvil_decode(t->ctx, it->src_type, p, (size_t)rbytes, dst, (size_t)it->row_len, err);
            if (rc != ANVIL_OK) return rc;
        }
        if (anvil__float_find_nonfinite(dst, (size_t)it->row_len) < it->row_len) {
            return anvil__error_set(err, ANVIL_E_NONFINITE,
                                    "tensor '%s' holds NaN or Inf in row %" PRIu64 ": fix the source model", it->name,
                                    r);
        }
    }
    return ANVIL_OK;
}

/* Load the sampled rows of it as f32 (a source that is not a file fills the
 * whole tensor first). */
static int load_sample(anvil_transcode *t, const anvil_transcode_tensor *it, size_t ns, float *x, uint64_t *rows,
                       anvil_error *err) {
    uint8_t *buf = NULL;
    uint64_t cap = 0;
    const uint8_t *base = NULL;
    int rc = tc_src_data(t, it->src, &buf, &cap, &base, err);
    if (rc == ANVIL_OK) rc = sample_rows(t, it, base, ns, x, rows, err);
    free(buf);
    return rc;
}

/* The measuring method's version in qz_err_key: bump it when what
 * measure_item_now computes changes (sampling, weights, grouping, an
 * encoder's output), so that errors stored by an older anvil are measured
 * again. */
#define QZ_ERR_METHOD 1u

/* 64-bit multiply-xorshift over little-endian words (not cryptographic: it
 * tells a changed input from the one measured, not an adversary's). */
static uint64_t key_mix(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (; n >= 8; n -= 8, b += 8) {
        uint64_t w = 0;
        for (int i = 7; i >= 0; --i) w = (w << 8) | b[i];
        h = (h ^ w) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 32;
    }
    for (; n > 0; --n, ++b) {
        h = (h ^ *b) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    return h;
}

static uint64_t key_u64(uint64_t h, uint64_t v) {
    unsigned char b[8];
    for (int i = 0; i < 8; ++i) b[i] = (unsigned char)(v >> (8 * i));
    return key_mix(h, b, 8);
}

static uint64_t key_floats(uint64_t h, const float *f, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        uint32_t u;
        memcpy(&u, &f[i], sizeof u);
        h = key_u64(h, u);
    }
    return h;
}

int qz_err_key(anvil_transcode *t, const anvil_transcode_tensor *it, uint64_t sample_rows, uint64_t *key,
               anvil_error *err) {
    const size_t ns = sample_count(it, sample_rows);
    uint64_t h = 0x6a09e667f3bcc909ull;
    h = key_u64(h, QZ_ERR_METHOD);
    h = key_u64(h, it->src_type);
    h = key_u64(h, it->row_len);
    h = key_u64(h, it->n_rows);
    h = key_u64(h, ns);
    uint8_t *buf = NULL;
    uint64_t cap = 0;
    const uint8_t *base = NULL;
    int rc = tc_src_data(t, it->src, &buf, &cap, &base, err);
    const uint64_t rbytes = it->src->row_bytes;
    for (size_t k = 0; rc == ANVIL_OK && k < ns; ++k) {
        const uint64_t r = sample_row(it, ns, k);
        h = key_u64(h, r);
        h = key_mix(h, base + r * rbytes, (size_t)rbytes);
    }
    free(buf);
    if (rc != ANVIL_OK) return rc;
    if (it->imatrix != NULL) {
        const uint64_t per = it->src->ne[1] > 0 ? it->src->ne[1] : 1;
        const uint64_t n_mat = (it->n_rows + per - 1) / per;
        h = key_u64(h, 1);
        h = key_floats(h, it->imatrix, (size_t)(n_mat * it->row_len));
    } else {
        float *nw = norm_weights(t, it);
        h = key_u64(h, nw != NULL ? 2 : 3);
        if (nw != NULL) h = key_floats(h, nw, (size_t)it->row_len);
        free(nw);
    }
    *key = h;
    return ANVIL_OK;
}

/* Measure every candidate of item it (cands[].type set) into cands[].err. */
static int measure_item_now(anvil_transcode *t, anvil_pool *pool, const anvil_transcode_tensor *it, qz_cand *cands,
                            size_t nc, const qz_request *rq, anvil_error *err) {
    const size_t ns = sample_count(it, rq->sample_rows);
    qz_job j;
    memset(&j, 0, sizeof j);
    j.ctx = t->ctx;
    j.it = it;
    j.n_rows = ns;
    j.group = 16;
    j.n_groups = (ns + j.group - 1) / j.group;
    j.cands = cands;
    j.n_cands = nc;
    const size_t n_tasks = nc * j.n_groups;
    float *x = malloc(ns * (size_t)it->row_len * sizeof *x);
    uint64_t *rows = malloc(ns * sizeof *rows);
    j.sums = calloc(n_tasks ? n_tasks : 1, sizeof *j.sums);
    j.rcs = calloc(n_tasks ? n_tasks : 1, sizeof *j.rcs);
    j.errs = calloc(n_tasks ? n_tasks : 1, sizeof *j.errs);
    int rc = x && rows && j.sums && j.rcs && j.errs ? ANVIL_OK : anvil__nomem(err);
    if (rc == ANVIL_OK) rc = load_sample(t, it, ns, x, rows, err);
    float *nw = it->imatrix == NULL ? norm_weights(t, it) : NULL;
    double *gsig = calloc(j.n_groups ? j.n_groups : 1, sizeof *gsig);
    if (rc == ANVIL_OK && gsig == NULL) rc = anvil__nomem(err);
    /* Slow encoders: about 64K values, in at least two groups. */
    j.slow_every = (size_t)(ns * it->row_len / ((uint64_t)1 << 16));
    if (j.slow_every > j.n_groups / 2) j.slow_every = j.n_groups / 2;
    if (j.slow_every < 1) j.slow_every = 1;
    if (rc == ANVIL_OK) {
        j.x = x;
        j.rows = rows;
        j.norm_w = nw;
        /* The output's energy over the sample, sum_ij W_ij^2 m_j. */
        const uint64_t per = it->src->ne[1] > 0 ? it->src->ne[1] : 1;
        for (size_t r = 0; r < ns; ++r) {
            const float *im = it->imatrix != NULL ? it->imatrix + (rows[r] / per) * it->row_len : nw;
            const float *xr = x + r * it->row_len;
            double e = 0.0;
            for (uint64_t k = 0; k < it->row_len; ++k) e += (double)xr[k] * xr[k] * (im ? (double)im[k] : 1.0);
            gsig[r / j.group] += e;
        }
        /* The sampled rows are in; the mapping's pages can go (the run
         * reads the tensor again, in order). */
        if (it->src->data != NULL) anvil_gguf_release(t->src, it->src->data, (size_t)it->src->n_bytes, NULL);
        anvil__pool_run(pool, n_tasks, measure_task, &j);
        for (size_t k = 0; k < n_tasks; ++k) {
            if (j.rcs[k] != ANVIL_OK) {
                *err = j.errs[k];
                rc = j.rcs[k];
                anvil__error_prefix(err, "measuring %s for tensor '%s'", tname(cands[k / j.n_groups].type), it->name);
                break;
            }
        }
    }
    if (rc == ANVIL_OK) {
        /* Relative: the error over the output's own energy, so that the
         * tensors' figures are comparable (downstream, RMS norms make a
         * perturbation count relative to the signal it rides on). */
        for (size_t c = 0; c < nc; ++c) {
            double s = 0.0, sig = 0.0;
            const size_t step = qz_is_grid_iq(cands[c].type) ? j.slow_every : 1;
            for (size_t g = 0; g < j.n_groups; g += step) {
                s += j.sums[c * j.n_groups + g];
                sig += gsig[g];
            }
            cands[c].err = sig > 0.0 ? s / sig : s;
        }
    }
    free(gsig);
    free(nw);
    free(x);
    free(rows);
    free(j.sums);
    free(j.rcs);
    free(j.errs);
    return rc;
}

/* The candidates in todo[0..*nt) that the sensitivity file's stored
 * errors for it hold, when their key is this plan's: into cands (at[]) and
 * the cache, and out of todo. *key gets the plan's key when computed
 * (*have_key 1). count: this call counts into rq->stats. */
static int take_stored(anvil_transcode *t, const anvil_transcode_tensor *it, qz_cand *cands, qz_cand *todo,
                       size_t *at, size_t *nt, const qz_request *rq, int count, uint64_t *key, int *have_key,
                       anvil_error *err) {
    const qz_sens_entry *se = rq->sens != NULL ? qz_sens_find(rq->sens, it->name) : NULL;
    if (se == NULL || se->n_err == 0) {
        if (count && rq->stats != NULL && rq->sens != NULL && rq->sens->version >= 3) rq->stats->missing++;
        return ANVIL_OK;
    }
    const int rc = qz_err_key(t, it, rq->sample_rows, key, err);
    if (rc != ANVIL_OK) return rc;
    *have_key = 1;
    if (*key != se->err_key) {
        if (count && rq->stats != NULL) rq->stats->stale++;
        return ANVIL_OK;
    }
    uint32_t ids[QZ_SENS_MAX_ERR];
    for (size_t m = 0; m < se->n_err; ++m) {
        if (anvil_type_from_name(t->ctx, se->err[m].type, &ids[m], NULL) != ANVIL_OK) ids[m] = UINT32_MAX;
    }
    size_t keep = 0;
    for (size_t k = 0; k < *nt; ++k) {
        size_t m = 0;
        while (m < se->n_err && ids[m] != todo[k].type) ++m;
        if (m < se->n_err) {
            cands[at[k]].err = se->err[m].relerr;
            cache_put(rq->cache, it->name, todo[k].type, it->imatrix, rq->sample_rows, *key, se->err[m].relerr);
        } else {
            todo[keep] = todo[k];
            at[keep++] = at[k];
        }
    }
    if (count && rq->stats != NULL) {
        if (keep == 0) rq->stats->stored++;
        else rq->stats->missing++;
    }
    *nt = keep;
    return ANVIL_OK;
}

/* Each candidate's relative error (from rq->cache where it has it, then
 * from the sensitivity file's stored errors where their key is this
 * plan's, the rest measured and kept in the cache) times the tensor's role
 * weight. count: this call counts into rq->stats. */
static int measure_item(anvil_transcode *t, anvil_pool *pool, const anvil_transcode_tensor *it, qz_cand *cands,
                        size_t nc, const qz_request *rq, int count, anvil_error *err) {
    qz_cand *todo = malloc((nc ? nc : 1) * sizeof *todo);
    size_t *at = malloc((nc ? nc : 1) * sizeof *at);
    if (todo == NULL || at == NULL) {
        free(todo);
        free(at);
        return anvil__nomem(err);
    }
    size_t nt = 0;
    for (size_t c = 0; c < nc; ++c) {
        if (!cache_get(rq->cache, it->name, cands[c].type, it->imatrix, rq->sample_rows, &cands[c].err)) {
            todo[nt] = cands[c];
            at[nt++] = c;
        }
    }
    uint64_t key = 0;
    int have_key = 0;
    int rc = nt > 0 ? take_stored(t, it, cands, todo, at, &nt, rq, count, &key, &have_key, err) : ANVIL_OK;
    if (rc == ANVIL_OK && nt > 0) rc = measure_item_now(t, pool, it, todo, nt, rq, err);
    if (rc == ANVIL_OK && nt > 0 && rq->cache != NULL && !have_key)
        rc = qz_err_key(t, it, rq->sample_rows, &key, err);
    for (size_t k = 0; rc == ANVIL_OK && k < nt; ++k) {
        cands[at[k]].err = todo[k].err;
        cache_put(rq->cache, it->name, todo[k].type, it->imatrix, rq->sample_rows, key, todo[k].err);
    }
    free(todo);
    free(at);
    const double role = rq->role_weight != NULL && rq->sens == NULL ? rq->role_weight[qz_category_of(it->name)] : 1.0;
    for (size_t c = 0; rc == ANVIL_OK && c < nc; ++c) cands[c].err *= role;
    return rc;
}

/* ---- the choice ---------------------------------------------------------------------- */

/* The response curve of a version 2 file's tensor through its points
 * (r_i, k_i), i = 0 the reference type, the others its low-bit types, in
 * any order (r the relative error measured here, k the KL divergence):
 * kld(r) = k_0 r / r_0 up to r_0 (small errors: KL divergence is quadratic in
 * the perturbation, linear in the squared error); beyond, piecewise power
 * laws through the points in order of r (log-log linear), the last one's
 * exponent carried on. Each exponent clamped to [QZ_EXP_MIN, QZ_EXP_MAX] so
 * the curve rises; a point within 5% of the previous one's r is passed over. */
#define QZ_EXP_MIN 0.5
#define QZ_EXP_MAX 4.0

double qz_sens_curve(const double *r, const double *k, size_t n, double x) {
    if (n == 0 || !(r[0] > 0.0)) return n ? x * k[0] : x;
    double pr[1 + QZ_SENS_MAX_LOW], pk[1 + QZ_SENS_MAX_LOW];
    size_t np = 0;
    pr[np] = r[0], pk[np] = k[0], np++;
    /* the low points in order of r (insertion: at most three) */
    size_t ord[QZ_SENS_MAX_LOW], no = 0;
    for (size_t i = 1; i < n && i <= QZ_SENS_MAX_LOW; ++i) {
        size_t j = no++;
        while (j > 0 && r[ord[j - 1]] > r[i]) {
            ord[j] = ord[j - 1];
            --j;
        }
        ord[j] = i;
    }
    for (size_t o = 0; o < no; ++o) {
        if (!(r[ord[o]] > pr[np - 1] * 1.05) || !(k[ord[o]] > 0.0)) continue;
        pr[np] = r[ord[o]], pk[np] = k[ord[o]], np++;
    }
    if (x <= pr[0]) return pk[0] * x / pr[0];
    double y = pk[0], a = 1.0;
    for (size_t i = 1; i < np; ++i) {
        a = pk[i - 1] > 0.0 ? log(pk[i] / pk[i - 1]) / log(pr[i] / pr[i - 1]) : QZ_EXP_MAX;
        if (!isfinite(a) || a > QZ_EXP_MAX) a = QZ_EXP_MAX;
        if (a < QZ_EXP_MIN) a = QZ_EXP_MIN;
        if (x <= pr[i]) return y * pow(x / pr[i - 1], a);
        y *= pow(pr[i] / pr[i - 1], a);
    }
    return y * pow(x / pr[np - 1], a);
}

/* Measured weights: the candidates' relative errors through the tensor's
 * response curve, its points' relative errors measured here as the
 * candidates' are (same rows, same importance weights), so that each
 * reference type's predicted error is the tensor's KL divergence measured
 * under it. A version 1 file (one point) keeps the line through it. */
static int sens_weight(anvil_transcode *t, anvil_pool *pool, const anvil_transcode_tensor *it, qz_item *q,
                       const qz_request *rq, anvil_error *err) {
    const qz_sens_entry *e = qz_sens_find(rq->sens, it->name);
    if (e == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "sensitivity file: no measurement for tensor '%s': measure this model with anvil "
                                "quantize --measure (or fix the tensor's type with --tensor-type)",
                                it->name);
    }
    qz_cand ref[1 + QZ_SENS_MAX_LOW];
    double kld[1 + QZ_SENS_MAX_LOW];
    memset(ref, 0, sizeof ref);
    if (anvil_type_from_name(t->ctx, e->ref, &ref[0].type, NULL) != ANVIL_OK || !is_candidate(t, it, ref[0].type)) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "sensitivity file: tensor '%s': reference type '%s' cannot be measured for it here",
                                it->name, e->ref);
    }
    /* A tensor measured as harmless still costs a little, so that ties keep
     * an order. */
    kld[0] = e->kld > 1e-12 ? e->kld : 1e-12;
    /* The low-bit points this plan can measure (an importance matrix entry
     * for the IQ types that need one); the others are left out. */
    size_t n = 1;
    for (size_t i = 0; i < e->n_low && i < QZ_SENS_MAX_LOW; ++i) {
        if (anvil_type_from_name(t->ctx, e->low_ref[i], &ref[n].type, NULL) == ANVIL_OK &&
            is_candidate(t, it, ref[n].type)) {
            kld[n++] = e->low_kld[i];
        }
    }
    int rc = measure_item(t, pool, it, ref, n, rq, 0, err);
    if (rc != ANVIL_OK) return rc;
    double r[1 + QZ_SENS_MAX_LOW];
    for (size_t i = 0; i < n; ++i) r[i] = ref[i].err;
    /* a reference error of 0 leaves the relative errors as they are */
    if (!(r[0] > 0.0)) return ANVIL_OK;
    for (size_t c = 0; c < q->n; ++c) q->cands[c].err = qz_sens_curve(r, kld, n, q->cands[c].err);
    return ANVIL_OK;
}

/* Candidates of every free item, measured. */
static int build_items(anvil_transcode *t, const unsigned char *is_free, uint32_t align, const qz_request *rq,
                       qz_item *items, size_t *map, size_t *n_free, anvil_error *err) {
    anvil_pool *pool = anvil__pool_create(rq->threads ? rq->threads : 1);
    if (pool == NULL) return anvil__error_set(err, ANVIL_E_NOMEM, "cannot start %u threads", rq->threads);
    int rc = ANVIL_OK;
    size_t nf = 0;
    for (size_t i = 0; rc == ANVIL_OK && i < t->n_items; ++i) {
        if (!is_free[i]) continue;
        const anvil_transcode_tensor *it = &t->items[i];
        qz_item *q = &items[nf];
        q->cands = calloc(QZ_N_TYPES, sizeof *q->cands);
        if (q->cands == NULL) {
            rc = anvil__nomem(err);
            break;
        }
        map[nf++] = i;
        for (size_t k = 0; k < QZ_N_TYPES; ++k) {
            if (!is_candidate(t, it, qz_types[k])) continue;
            anvil_type_info ti;
            uint64_t b = 0;
            if (anvil_type_lookup(t->ctx, qz_types[k], &ti, NULL) != ANVIL_OK ||
                anvil_type_bytes(&ti, it->src->n_elements, &b, NULL) != ANVIL_OK) {
                continue;
            }
            if (rq->min_bpw > 0.0 && (double)b * 8.0 < rq->min_bpw * (double)it->src->n_elements) continue;
            q->cands[q->n].type = qz_types[k];
            q->cands[q->n].bytes = pad_to(b, align);
            q->n++;
        }
        if (q->n == 0) {
            rc = anvil__error_set(err, ANVIL_E_BLOCK_MISMATCH,
                                  "tensor '%s' (rows of %" PRIu64 ") has no type anvil can write for it here: fix "
                                  "its type with --tensor-type",
                                  it->name, it->row_len);
            break;
        }
        rc = measure_item(t, pool, it, q->cands, q->n, rq, 1, err);
        if (rc == ANVIL_OK && rq->sens != NULL) rc = sens_weight(t, pool, it, q, rq, err);
    }
    *n_free = nf;
    anvil__pool_destroy(pool);
    return rc;
}

/* --pure: the one type every free item can take whose total is the
 * largest that fits (ties: the lower error). */
static int pick_pure(qz_item *items, size_t n, uint64_t budget, anvil_error *err) {
    int best = -1;
    uint64_t best_bytes = 0, min_bytes = UINT64_MAX;
    double best_err = 0.0;
    for (size_t k = 0; k < QZ_N_TYPES; ++k) {
        uint64_t total = 0;
        double e = 0.0;
        int all = 1;
        for (size_t i = 0; i < n && all; ++i) {
            all = 0;
            for (size_t c = 0; c < items[i].n; ++c) {
                if (items[i].cands[c].type == qz_types[k]) {
                    total += items[i].cands[c].bytes;
                    e += items[i].cands[c].err;
                    all = 1;
                }
            }
        }
        if (!all) continue;
        if (total < min_bytes) min_bytes = total;
        if (total > budget) continue;
        if (best < 0 || total > best_bytes || (total == best_bytes && e < best_err)) {
            best = (int)k;
            best_bytes = total;
            best_err = e;
        }
    }
    if (best < 0) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                min_bytes == UINT64_MAX ? "--pure: no one type suits every tensor"
                                                        : "--pure: even the smallest common type takes %" PRIu64
                                                          " bytes of tensor data, over the budget's %" PRIu64,
                                min_bytes, budget);
    }
    for (size_t i = 0; i < n; ++i) {
        for (size_t c = 0; c < items[i].n; ++c) {
            if (items[i].cands[c].type == qz_types[best]) items[i].pick = c;
        }
    }
    return ANVIL_OK;
}

/* The bytes the fixed part of the file takes: header and fixed tensors. */
static uint64_t fixed_bytes(const anvil_transcode *t, const unsigned char *is_free, uint64_t header, uint32_t align) {
    uint64_t b = header;
    for (size_t i = 0; i < t->n_items; ++i) {
        if (!is_free[i]) b += pad_to(t->items[i].dst_bytes, align);
    }
    return b;
}

static int apply(anvil_transcode *t, const qz_item *items, const size_t *map, size_t nf, double *pred_err,
                 anvil_error *err) {
    for (size_t f = 0; f < nf; ++f) {
        anvil_transcode_tensor *it = &t->items[map[f]];
        const qz_cand *c = &items[f].cands[items[f].pick];
        it->dst_type = c->type;
        it->want_type = c->type;
        it->fallback_from = ANVIL_TRANSCODE_NO_TYPE;
        it->why = c->type == it->src_type ? ANVIL_TRANSCODE_KEEP_SAME : ANVIL_TRANSCODE_CONVERT;
        pred_err[map[f]] = c->err;
        const int rc = tc_item_bytes(t, it, err);
        if (rc != ANVIL_OK) return rc;
    }
    return ANVIL_OK;
}

static void free_items(qz_item *items, size_t n) {
    for (size_t i = 0; i < n; ++i) free(items[i].cands);
    free(items);
}

int qz_choose(anvil_transcode *t, const unsigned char *is_free, uint64_t header_bytes, uint32_t align,
              const qz_request *rq, double *pred_err, char *note, size_t note_size, anvil_error *err) {
    if (note_size) note[0] = '\0';
    qz_item *items = calloc(t->n_items ? t->n_items : 1, sizeof *items);
    size_t *map = calloc(t->n_items ? t->n_items : 1, sizeof *map);
    if (items == NULL || map == NULL) {
        free(items);
        free(map);
        return anvil__nomem(err);
    }
    size_t nf = 0;
    /* The reference types of a sensitivity file are candidates too: a cache
     * for this plan (when the caller gave none) measures them once. */
    qz_request rq_local = *rq;
    anvil_quantize_cache *own = NULL;
    if (rq->cache == NULL && rq->sens != NULL) rq_local.cache = own = anvil_quantize_cache_new();
    qz_err_stats stats = { 0, 0, 0 };
    rq_local.stats = &stats;
    int rc = build_items(t, is_free, align, &rq_local, items, map, &nf, err);
    anvil_quantize_cache_free(own);
    if (rc == ANVIL_OK && rq->stats != NULL) *rq->stats = stats;
    const uint64_t fixed = fixed_bytes(t, is_free, header_bytes, align);
    uint64_t min_free = 0, max_free = 0, used = 0;
    for (size_t f = 0; rc == ANVIL_OK && f < nf; ++f) {
        uint64_t lo = UINT64_MAX, hi = 0;
        for (size_t c = 0; c < items[f].n; ++c) {
            if (items[f].cands[c].bytes < lo) lo = items[f].cands[c].bytes;
            if (items[f].cands[c].bytes > hi) hi = items[f].cands[c].bytes;
        }
        min_free += lo;
        max_free += hi;
    }
    if (rc == ANVIL_OK && rq->target_bytes < fixed + min_free) {
        rc = anvil__error_set(err, ANVIL_E_INVALID_ARG,
                              "the target of %" PRIu64 " bytes is below the smallest file the candidate types "
                              "allow: %" PRIu64 " bytes (%" PRIu64 " of header and fixed tensors); give at least "
                              "that",
                              rq->target_bytes, fixed + min_free, fixed);
    }
    const uint64_t budget = rc == ANVIL_OK ? rq->target_bytes - fixed : 0;
    if (rc == ANVIL_OK && rq->pure) {
        rc = pick_pure(items, nf, budget, err);
    } else if (rc == ANVIL_OK) {
        uint64_t mn = 0;
        rc = qz_allocate(items, nf, budget, &mn, &used, err);
    }
    if (rc == ANVIL_OK && budget >= max_free && note_size) {
        snprintf(note, note_size,
                 "the target of %" PRIu64 " bytes is at least the largest file the candidates allow (%" PRIu64
                 " bytes, %s): the free tensors are written at full precision",
                 rq->target_bytes, fixed + max_free, tname(ANVIL_TYPE_F16));
    }
    if (rc == ANVIL_OK && stats.stale > 0 && note_size) {
        const size_t l = strlen(note);
        snprintf(note + l, note_size - l,
                 "%sthe sensitivity file's stored errors of %zu of %zu tensors were measured on another model, "
                 "importance matrix or --target-rows: measured again (measure with --measure and the same "
                 "--imatrix and --target-rows to store them)",
                 l ? "; " : "", stats.stale, nf);
    }
    if (rc == ANVIL_OK) rc = apply(t, items, map, nf, pred_err, err);
    free_items(items, t->n_items);
    free(map);
    return rc;
}

/* ---- role weights ---------------------------------------------------------------------- */

static const char *const qz_roles[] = {
    "token_embd",  "attn_q", "attn_v",   "attn_k",   "attn_qkv", "attn_kv_b",
    "attn_output", "ffn_up", "ffn_gate", "ffn_down", "output",   "other",
};

int qz_parse_weights(const char *spec, double *w, anvil_error *err) {
    for (int c = 0; c <= QZ_OTHER; ++c) w[c] = 1.0;
    /* Measured on the trained model (KLD through llama.cpp, see the closing
     * note of issue 25): the logits take output's error unnormalised, and
     * the token embeddings' error enters the residual stream where it is
     * smallest. */
    w[QZ_OUTPUT] = 30.0;
    w[QZ_TOKEN_EMBD] = 10.0;
    if (spec == NULL) return ANVIL_OK;
    const char *p = spec;
    while (*p) {
        const char *eq = strchr(p, '='), *comma = strchr(p, ',');
        if (comma == NULL) comma = p + strlen(p);
        if (eq == NULL || eq > comma) {
            return anvil__error_set(err, ANVIL_E_INVALID_ARG, "target weights: '%.*s' is not ROLE=WEIGHT",
                                    (int)(comma - p), p);
        }
        int role = -1;
        for (int c = 0; c <= QZ_OTHER; ++c) {
            if (strlen(qz_roles[c]) == (size_t)(eq - p) && memcmp(qz_roles[c], p, (size_t)(eq - p)) == 0) role = c;
        }
        char *end = NULL;
        /* a decimal number: no empty value, no leading space or sign, no hex */
        const int digit = (eq[1] >= '0' && eq[1] <= '9') || eq[1] == '.';
        const double v = digit ? strtod(eq + 1, &end) : -1.0;
        if (digit && (memchr(eq + 1, 'x', (size_t)(comma - eq - 1)) || memchr(eq + 1, 'X', (size_t)(comma - eq - 1))))
            end = NULL;
        if (role < 0 || end != comma || !(v >= 0.0) || !isfinite(v)) {
            return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                    "target weights: '%.*s': the role must be one of token_embd, attn_q, attn_k, "
                                    "attn_v, attn_qkv, attn_kv_b, attn_output, ffn_up, ffn_gate, ffn_down, output, "
                                    "other and the weight a decimal number >= 0",
                                    (int)(comma - p), p);
        }
        w[role] = v;
        p = *comma ? comma + 1 : comma;
    }
    return ANVIL_OK;
}

int anvil_quantize_check_target_weights(const char *spec, anvil_error *err) {
    double w[QZ_OTHER + 1];
    return qz_parse_weights(spec, w, err);
}
