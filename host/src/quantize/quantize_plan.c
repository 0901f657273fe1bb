/* SPDX-License-Identifier: MIT */
/*
 * The quantize plan: llama_model_quantize's preparation, step by step, on
 * the transcode engine.
 *
 *  1. Model facts as llama.cpp's loader reads them (with --override-kv
 *     applied the way the loader applies it): architecture, block count,
 *     heads of layer 0, expert count.
 *  2. Tensor order: the loader's map sorted by layer, then name; pruned
 *     layers dropped and later ones renumbered; by part and offset with
 *     keep_split.
 *  3. Counters, then every tensor's type in that order (the mixture
 *     depends on it), the importance-matrix checks, the metadata.
 *  4. The engine lays the output out and streams it.
 */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "quantize_internal.h"
#include "quantize_target.h"

#define QZ_QUANTIZATION_VERSION 2u

typedef struct qz_state {
    qz_policy_state qs;
    anvil_quantize_options opts;
    uint32_t ftype; /* written as general.file_type */
    char arch_name[128];
    char **names; /* output names of the items (owned) */
    size_t n_names;
    int pruned;
    int32_t blk_id; /* {arch}.block_count after pruning */
    uint32_t n_split;
    int32_t n_tensors; /* split.tensors.count */
    int target;        /* --target-size / --target-bpw */
    int user_pure;     /* --pure with a target: one type for all free tensors */
    uint64_t target_bytes;
    double *pred_err; /* target: per item */
    char note[512];
} qz_state;

static void qz_free(void *p) {
    qz_state *q = p;
    if (q == NULL) return;
    for (size_t i = 0; i < q->n_names; ++i) free(q->names[i]);
    free(q->names);
    free(q->pred_err);
    free(q);
}

ANVIL_API void anvil_quantize_options_init(anvil_quantize_options *o) {
    memset(o, 0, sizeof *o);
    o->ftype = QZ_Q8_0;
    o->output_tensor_type = ANVIL_TRANSCODE_NO_TYPE;
    o->token_embedding_type = ANVIL_TRANSCODE_NO_TYPE;
}

/* ---- 1. model facts ------------------------------------------------------------ */

static int read_model(anvil_transcode *t, qz_state *q, anvil_error *err) {
    const anvil_quantize_options *o = &q->opts;
    anvil_gguf_str arch = { NULL, 0 };
    /* The loader reads the architecture through get_key: a string override wins. */
    const anvil_kv_override *ov = qz_find_override(o, "general.architecture");
    if (ov != NULL && ov->tag == ANVIL_KV_OVERRIDE_STR) {
        arch.ptr = ov->str;
        arch.len = strlen(ov->str);
    } else if (anvil_gguf_get_str(t->src, "general.architecture", &arch, NULL) != ANVIL_OK) {
        arch.len = 0;
    }
    if (arch.len > 0) {
        if (arch.len >= sizeof q->arch_name || memchr(arch.ptr, '\0', arch.len) != NULL) {
            return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                    "general.architecture is not a model architecture name");
        }
        memcpy(q->arch_name, arch.ptr, arch.len);
        q->arch_name[arch.len] = '\0';
    }
    if (q->arch_name[0] == '\0') {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "the model has no general.architecture: llama.cpp cannot tell its "
                                "hyperparameters, and neither can anvil");
    }
    return qz_load_model(t, o, q->arch_name, &q->qs.model, err);
}

/* The loader's file type: general.file_type, else guessed from the most
 * common tensor type (marked LLAMA_FTYPE_GUESSED). COPY writes it. */
static int loader_ftype(anvil_transcode *t, const qz_state *q, const size_t *order, size_t n, uint32_t *out,
                        anvil_error *err) {
    int found = 0;
    int rc = qz_key_u32(t, &q->opts, "general.file_type", out, &found, err);
    if (rc != ANVIL_OK || found) return rc;
    uint32_t counts[64];
    memset(counts, 0, sizeof counts);
    uint32_t best = ANVIL_TYPE_F32, best_n = 0;
    for (size_t i = 0; i < n; ++i) {
        const uint32_t ty = anvil_gguf_tensor_at(t->src, order[i])->type;
        if (ty >= 64) continue;
        if (best_n < ++counts[ty]) {
            best_n = counts[ty];
            best = ty;
        }
    }
    /* The loader's table is transcode's guess, less MXFP4 (it has none). */
    int ft = best == ANVIL_TYPE_MXFP4 ? -1 : anvil_transcode_file_type(best);
    if (ft < 0) ft = QZ_ALL_F32;
    *out = (uint32_t)ft | QZ_GUESSED;
    return ANVIL_OK;
}

/* ---- 2. order and pruning --------------------------------------------------------- */

/* weight_name_comparer: layer ("blk.%d.", -1 when absent), then name. */
static int layer_of(const char *name) {
    int l = -1;
    if (sscanf(name, "blk.%d.", &l) != 1) l = -1;
    return l;
}

typedef struct sort_key {
    size_t index;
    int layer;
    const char *name;
} sort_key;

static int by_layer_name(const void *a, const void *b) {
    const sort_key *x = a, *y = b;
    if (x->layer != y->layer) return x->layer < y->layer ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int by_part_offset(const void *a, const void *b) {
    const anvil_gguf_tensor *x = ((const anvil_transcode_tensor *)a)->src,
                            *y = ((const anvil_transcode_tensor *)b)->src;
    if (x->part != y->part) return x->part < y->part ? -1 : 1;
    if (x->file_offset != y->file_offset) return x->file_offset < y->file_offset ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* The first "blk.<digits>." in name (regex blk\.(\d+)\.): where the digits
 * are and how many. */
static int find_blk(const char *name, size_t *at, size_t *len) {
    for (const char *p = strstr(name, "blk."); p != NULL; p = strstr(p + 1, "blk.")) {
        const char *d = p + 4, *e = d;
        while (*e >= '0' && *e <= '9') e++;
        if (e > d && *e == '.') {
            *at = (size_t)(d - name);
            *len = (size_t)(e - d);
            return 1;
        }
    }
    return 0;
}

/* remap_layer's map: original layer -> new number (-1: pruned). */
typedef struct layer_map {
    long orig[QZ_MAX_LAYERS * 4];
    long to[QZ_MAX_LAYERS * 4];
    size_t n;
} layer_map;

static long map_find(const layer_map *m, long orig) {
    for (size_t i = 0; i < m->n; ++i) {
        if (m->orig[i] == orig) return (long)i;
    }
    return -1;
}

static char *with_number(const char *name, size_t at, size_t len, long number) {
    char num[32];
    snprintf(num, sizeof num, "%ld", number);
    const size_t n = strlen(name), k = strlen(num);
    char *s = malloc(n - len + k + 1);
    if (s == NULL) return NULL;
    memcpy(s, name, at);
    memcpy(s + at, num, k);
    memcpy(s + at + k, name + at + len, n - at - len + 1);
    return s;
}

static int digits_value(const char *d, size_t len, long *v, anvil_error *err, const char *name) {
    long x = 0;
    for (size_t i = 0; i < len; ++i) {
        x = x * 10 + (d[i] - '0');
        if (x > INT_MAX) {
            return anvil__error_set(err, ANVIL_E_INVALID_ARG, "tensor '%s': layer number out of range", name);
        }
    }
    *v = x;
    return ANVIL_OK;
}

/* remap_layer: the output name, or NULL with *drop = 1 for a pruned layer. */
static int remap_layer(const char *name, const int32_t *prune, size_t n_prune, layer_map *m, int32_t *next_id,
                       char **out, int *drop, anvil_error *err) {
    *drop = 0;
    *out = NULL;
    size_t at, len;
    if (n_prune == 0 || !find_blk(name, &at, &len)) return ANVIL_OK;
    long blk = 0;
    int rc = digits_value(name + at, len, &blk, err, name);
    if (rc != ANVIL_OK) return rc;
    long k = map_find(m, blk);
    if (k < 0) {
        if (m->n >= sizeof m->orig / sizeof m->orig[0]) {
            return anvil__error_set(err, ANVIL_E_INVALID_ARG, "too many distinct layer numbers to prune");
        }
        k = (long)m->n++;
        m->orig[k] = blk;
        int pruned = 0;
        for (size_t i = 0; i < n_prune; ++i) pruned |= prune[i] == blk;
        if (pruned) {
            m->to[k] = -1;
        } else if (blk < prune[0]) {
            m->to[k] = blk;
            *next_id = (int32_t)(blk + 1);
        } else {
            m->to[k] = *next_id;
            ++*next_id;
        }
    }
    if (m->to[k] < 0) {
        *drop = 1;
        return ANVIL_OK;
    }
    *out = with_number(name, at, len, m->to[k]);
    return *out ? ANVIL_OK : anvil__nomem(err);
}

/* remap_imatrix: the name the importance matrix knows a renumbered tensor by. */
static int remap_imatrix(const char *name, const layer_map *m, char **out, anvil_error *err) {
    *out = NULL;
    size_t at, len;
    if (m->n == 0 || !find_blk(name, &at, &len)) return ANVIL_OK;
    long now = 0;
    int rc = digits_value(name + at, len, &now, err, name);
    if (rc != ANVIL_OK) return rc;
    /* llama.cpp compares the digits as a string with the mapped number. */
    char text[32];
    for (size_t i = 0; i < m->n; ++i) {
        if (m->to[i] < 0) continue;
        snprintf(text, sizeof text, "%ld", m->to[i]);
        if (strlen(text) == len && memcmp(text, name + at, len) == 0) {
            *out = with_number(name, at, len, m->orig[i]);
            return *out ? ANVIL_OK : anvil__nomem(err);
        }
    }
    return anvil__error_set(err, ANVIL_E_INTERNAL, "imatrix mapping error for %s", name);
}

/* ---- 3. metadata ------------------------------------------------------------------- */

/* gguf_set_kv(ctx_out, metadata): every key through ggml's typed setters,
 * so bools come out as 0/1 and strings (and keys) end at their first NUL. */
static int copy_kvs(anvil_gguf_writer *w, const anvil_gguf *src, anvil_error *err) {
    int rc = ANVIL_OK;
    for (size_t i = 0; rc == ANVIL_OK && i < anvil_gguf_kv_count(src); ++i) {
        const anvil_gguf_kv *kv = anvil_gguf_kv_at(src, i);
        const size_t klen = strlen(kv->key);
        if (klen == 0) {
            return anvil__error_set(err, ANVIL_E_INVALID_ARG, "a metadata key starts with a NUL byte");
        }
        anvil_gguf_value v;
        anvil_gguf_kv_value(kv, &v);
        if (kv->type == ANVIL_GGUF_TYPE_STRING) {
            const char *nul = memchr(v.s.ptr, '\0', v.s.len);
            rc = anvil_gguf_writer_set_string_n(w, kv->key, v.s.ptr, nul ? (size_t)(nul - v.s.ptr) : v.s.len, err);
        } else if (kv->type == ANVIL_GGUF_TYPE_ARRAY && v.a.elem_type == ANVIL_GGUF_TYPE_STRING) {
            anvil_gguf_str *items = malloc((v.a.count ? v.a.count : 1) * sizeof *items);
            if (items == NULL) return anvil__nomem(err);
            const uint64_t got = anvil_gguf_array_strings(&v.a, items, v.a.count);
            for (uint64_t k = 0; k < got; ++k) {
                const char *nul = memchr(items[k].ptr, '\0', items[k].len);
                if (nul != NULL) items[k].len = (size_t)(nul - items[k].ptr);
            }
            rc = anvil_gguf_writer_set_str_array(w, kv->key, items, got, err);
            free(items);
        } else if (klen != kv->key_len) {
            anvil_gguf_kv copy = *kv;
            copy.key_len = klen;
            rc = anvil_gguf_writer_copy_kv(w, &copy, err);
        } else {
            /* Raw bytes, bools canonical: what ggml's setters write. */
            const int is_bool = kv->type == ANVIL_GGUF_TYPE_BOOL ||
                                (kv->type == ANVIL_GGUF_TYPE_ARRAY && v.a.elem_type == ANVIL_GGUF_TYPE_BOOL);
            if (is_bool) {
                if (kv->type == ANVIL_GGUF_TYPE_BOOL) {
                    rc = anvil_gguf_writer_set_bool(w, kv->key, v.b, err);
                } else {
                    rc = anvil_gguf_writer_set_array(w, kv->key, ANVIL_GGUF_TYPE_BOOL, v.a.data, v.a.count, err);
                }
            } else {
                rc = anvil_gguf_writer_copy_kv(w, kv, err);
            }
        }
    }
    return rc;
}

static int put_override(anvil_gguf_writer *w, const anvil_kv_override *o, anvil_error *err) {
    switch (o->tag) {
    case ANVIL_KV_OVERRIDE_FLOAT: return anvil_gguf_writer_set_f32(w, o->key, (float)o->f, err);
    case ANVIL_KV_OVERRIDE_INT: {
        /* u32 of |v|, as llama.cpp writes an int override. */
        const uint64_t mag = o->i < 0 ? 0u - (uint64_t)o->i : (uint64_t)o->i;
        return anvil_gguf_writer_set_u32(w, o->key, (uint32_t)mag, err);
    }
    case ANVIL_KV_OVERRIDE_BOOL: return anvil_gguf_writer_set_bool(w, o->key, o->b, err);
    case ANVIL_KV_OVERRIDE_STR: return anvil_gguf_writer_set_string(w, o->key, o->str, err);
    }
    return anvil__error_set(err, ANVIL_E_INVALID_ARG, "--override-kv %s: unknown type", o->key);
}

/* The keys llama-quantize adds for an importance matrix (as overrides, after the user's). */
static int put_imatrix_kvs(anvil_gguf_writer *w, const anvil_quantize_options *o, anvil_error *err) {
    const anvil_imatrix *im = o->imatrix;
    char buf[128];
    snprintf(buf, sizeof buf, "%.127s", o->imatrix_path ? o->imatrix_path : "");
    int rc = anvil_gguf_writer_set_string(w, "quantize.imatrix.file", buf, err);
    if (rc == ANVIL_OK && anvil_imatrix_dataset_count(im) > 0) {
        snprintf(buf, sizeof buf, "%.127s", anvil_imatrix_dataset_at(im, 0));
        rc = anvil_gguf_writer_set_string(w, "quantize.imatrix.dataset", buf, err);
    }
    if (rc == ANVIL_OK) {
        rc = anvil_gguf_writer_set_u32(w, "quantize.imatrix.entries_count", (uint32_t)anvil_imatrix_count(im), err);
    }
    const int32_t chunks = anvil_imatrix_chunk_count(im);
    if (rc == ANVIL_OK && chunks > 0) {
        rc = anvil_gguf_writer_set_u32(w, "quantize.imatrix.chunks_count", (uint32_t)chunks, err);
    }
    return rc;
}

static int quantize_kvs(anvil_transcode *t, anvil_gguf_writer *w, uint32_t part, anvil_error *err) {
    const qz_state *q = t->policy;
    const anvil_quantize_options *o = &q->opts;
    int rc = ANVIL_OK;
    if (part == 0) {
        rc = copy_kvs(w, t->src, err);
        if (rc == ANVIL_OK) {
            rc = anvil_gguf_writer_set_u32(w, "general.quantization_version", QZ_QUANTIZATION_VERSION, err);
        }
        if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, "general.file_type", q->ftype, err);
        anvil_gguf_writer_remove_key(w, ANVIL_GGUF_KEY_SPLIT_NO);
        anvil_gguf_writer_remove_key(w, ANVIL_GGUF_KEY_SPLIT_COUNT);
        anvil_gguf_writer_remove_key(w, ANVIL_GGUF_KEY_SPLIT_TENSORS);
        for (size_t i = 0; rc == ANVIL_OK && i < o->n_kv_overrides; ++i)
            rc = put_override(w, &o->kv_overrides[i], err);
        if (rc == ANVIL_OK && o->imatrix != NULL && anvil_imatrix_count(o->imatrix) > 0) {
            rc = put_imatrix_kvs(w, o, err);
        }
        if (rc == ANVIL_OK && q->target) {
            rc = q->opts.target_size > 0
                     ? anvil_gguf_writer_set_u64(w, "quantize.target_size", q->opts.target_size, err)
                     : anvil_gguf_writer_set_f32(w, "quantize.target_bpw", (float)q->opts.target_bpw, err);
        }
        if (rc == ANVIL_OK && q->pruned) {
            char key[192];
            snprintf(key, sizeof key, "%s.block_count", q->arch_name);
            rc = anvil_gguf_writer_set_u32(w, key, (uint32_t)q->blk_id, err);
        }
    }
    if (rc == ANVIL_OK && q->n_split > 1) {
        /* llama_model_quantize's order: no, count, tensors.count. */
        rc = anvil_gguf_writer_set_u16(w, ANVIL_GGUF_KEY_SPLIT_NO, (uint16_t)part, err);
        if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u16(w, ANVIL_GGUF_KEY_SPLIT_COUNT, (uint16_t)q->n_split, err);
        if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_i32(w, ANVIL_GGUF_KEY_SPLIT_TENSORS, q->n_tensors, err);
    }
    return rc;
}

/* ---- checks on the options ---------------------------------------------------------- */

static int check_options(anvil_transcode *t, const anvil_quantize_options *o, anvil_error *err) {
    if (!o->only_copy && anvil_quantize_default_type(o->ftype) == ANVIL_TRANSCODE_NO_TYPE) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "invalid output file type %u (not a llama.cpp preset)",
                                o->ftype);
    }
    int rc = ANVIL_OK;
    if (o->output_tensor_type != ANVIL_TRANSCODE_NO_TYPE) {
        rc = tc_check_target(t->ctx, o->output_tensor_type, "--output-tensor-type", err);
    }
    if (rc == ANVIL_OK && o->token_embedding_type != ANVIL_TRANSCODE_NO_TYPE) {
        rc = tc_check_target(t->ctx, o->token_embedding_type, "--token-embedding-type", err);
    }
    for (size_t i = 0; rc == ANVIL_OK && i < o->n_tensor_types; ++i) {
        char label[300];
        snprintf(label, sizeof label, "--tensor-type %.256s",
                 o->tensor_types[i].pattern ? o->tensor_types[i].pattern : "");
        rc = tc_check_target(t->ctx, o->tensor_types[i].type, label, err);
    }
    for (size_t i = 0; rc == ANVIL_OK && i < o->n_kv_overrides; ++i) {
        const char *k = o->kv_overrides[i].key;
        if (k[0] == '\0') rc = anvil__error_set(err, ANVIL_E_INVALID_ARG, "--override-kv: an empty key");
        if (rc == ANVIL_OK && strcmp(k, ANVIL_GGUF_KEY_ALIGNMENT) == 0) {
            rc = anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                  "--override-kv general.alignment: the alignment cannot be overridden (the "
                                  "file would no longer read back)");
        }
    }
    for (size_t i = 0; rc == ANVIL_OK && i < o->n_prune_layers; ++i) {
        if (o->prune_layers[i] < 0)
            rc = anvil__error_set(err, ANVIL_E_INVALID_ARG, "--prune-layers: a negative layer");
    }
    if (rc == ANVIL_OK && o->imatrix != NULL) {
        for (size_t i = 0; i < anvil_imatrix_count(o->imatrix); ++i) {
            anvil_imatrix_entry e;
            anvil_imatrix_entry_at(o->imatrix, i, &e);
            for (size_t k = 0; k < e.n_values; ++k) {
                const float v = e.values[k];
                if (!(v == v) || v > 3.4e38f || v < -3.4e38f) {
                    /* llama.cpp refuses non-finite entries only (negative ones are used as given) */
                    return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                            "imatrix contains non-finite value %g (entry '%s', value %zu): the "
                                            "importance matrix is damaged; make it again with llama-imatrix",
                                            (double)v, e.name, k);
                }
            }
        }
    }
    return rc;
}

/* ---- the plan ------------------------------------------------------------------------ */

static int cmp_i32(const void *a, const void *b) {
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : x > y;
}

/* The checks llama_model_quantize makes while writing, in tensor order:
 * importance-matrix fit, a required matrix, requantizing. */
static int check_items(anvil_transcode *t, qz_state *q, anvil_error *err) {
    const anvil_quantize_options *o = &q->opts;
    for (size_t i = 0; i < t->n_items; ++i) {
        anvil_transcode_tensor *it = &t->items[i];
        if (it->why != ANVIL_TRANSCODE_CONVERT) continue;
        if (it->imatrix_name != NULL) {
            const anvil_imatrix_entry *e = anvil_imatrix_find(o->imatrix, it->imatrix_name);
            const uint64_t want = it->src->ne[0] * it->src->ne[2];
            if (e == NULL) {
                int rc = tc_warn(t, err, "did not find importance-matrix weights for %s", it->name);
                if (rc != ANVIL_OK) return rc;
                it->imatrix_name = NULL;
            } else if (e->n_values != want) {
                if (strcmp(it->name, "token_embd.weight") != 0 &&
                    strcmp(it->name, "per_layer_token_embd.weight") != 0) {
                    if (o->dry_run) continue;
                    return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                            "imatrix size %d is different from tensor size %d for %s: the "
                                            "importance matrix was made for another model (or another "
                                            "version of it)",
                                            (int)e->n_values, (int)want, it->name);
                }
                int rc = tc_warn(t, err,
                                 "imatrix size %d is different from tensor size %d for %s: quantized "
                                 "without it",
                                 (int)e->n_values, (int)want, it->name);
                if (rc != ANVIL_OK) return rc;
                it->imatrix_name = NULL;
            } else {
                it->imatrix = e->values;
            }
        }
        if (it->imatrix == NULL && it->needs_imatrix && !o->dry_run) {
            return anvil__error_set(err, ANVIL_E_NEEDS_IMATRIX,
                                    "Missing importance matrix for tensor %s in a very low-bit quantization (%s): "
                                    "the result would be garbage; pass an --imatrix that has it",
                                    it->name, anvil_type_name(NULL, it->dst_type));
        }
        if (qz_is_quantized(it->src_type) && !o->allow_requantize && !o->dry_run) {
            return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                    "requantizing from type %s is disabled (tensor '%s'): quantizing an already "
                                    "quantized model stacks two errors; pass --allow-requantize to do it anyway",
                                    anvil_type_name(NULL, it->src_type), it->name);
        }
    }
    return ANVIL_OK;
}

/* The layers --prune-layers names, sorted, each once (*prune: malloc'd). */
static int pruned_layers(const anvil_quantize_options *o, int32_t **prune, size_t *n_prune) {
    *prune = NULL;
    *n_prune = 0;
    if (o->n_prune_layers == 0) return ANVIL_OK;
    int32_t *p = malloc(o->n_prune_layers * sizeof *p);
    if (p == NULL) return ANVIL_E_NOMEM;
    memcpy(p, o->prune_layers, o->n_prune_layers * sizeof *p);
    qsort(p, o->n_prune_layers, sizeof *p, cmp_i32);
    size_t n = 0;
    for (size_t i = 0; i < o->n_prune_layers; ++i) {
        if (n == 0 || p[n - 1] != p[i]) p[n++] = p[i];
    }
    *prune = p;
    *n_prune = n;
    return ANVIL_OK;
}

/* One kept tensor's type (llama.cpp's rules, in list order: the counters
 * move), its imatrix entry's name, its bytes. */
static int decide_one(anvil_transcode *t, qz_state *q, anvil_transcode_tensor *it, const layer_map *map,
                      uint32_t default_type, anvil_error *err) {
    const anvil_quantize_options *o = &q->opts;
    qz_policy_state *qs = &q->qs;
    int rc = ANVIL_OK;
    const anvil_gguf_tensor *src = it->src;
    it->src_type = src->type;
    it->dst_type = src->type;
    it->want_type = ANVIL_TRANSCODE_NO_TYPE;
    it->fallback_from = ANVIL_TRANSCODE_NO_TYPE;
    it->row_len = src->ne[0];
    it->n_rows = src->ne[0] > 0 ? src->n_elements / src->ne[0] : 0;
    it->src_bytes = src->n_bytes;
    it->part = o->keep_split ? src->part : 0;
    const int allows = qz_allows_quantization(o, src);
    if (!allows) {
        it->why = ANVIL_TRANSCODE_KEEP_POLICY;
    } else {
        const char *why = NULL;
        uint32_t ty = 0;
        rc = qz_tensor_type(qs, t, src, it->name, qz_category_of(it->name), default_type, &ty, &it->fallback_from,
                            &why, err);
        if (rc != ANVIL_OK) return rc;
        it->want_type = ty;
        it->dst_type = ty;
        it->rule = why;
        it->why = ty == src->type ? ANVIL_TRANSCODE_KEEP_SAME : ANVIL_TRANSCODE_CONVERT;
    }
    it->needs_imatrix = qz_requires_imatrix(it->name, it->dst_type, q->ftype);
    if (o->imatrix != NULL && anvil_imatrix_count(o->imatrix) > 0) {
        char *mapped = NULL;
        rc = remap_imatrix(it->name, map, &mapped, err);
        if (rc != ANVIL_OK) return rc;
        if (mapped != NULL) {
            /* Keep the string: it is looked up after this loop. */
            char **v = realloc(q->names, (q->n_names + 1) * sizeof *v);
            if (v == NULL) {
                free(mapped);
                return anvil__nomem(err);
            }
            q->names = v;
            q->names[q->n_names++] = mapped;
        }
        it->imatrix_name = mapped ? mapped : it->name;
    } else if (allows && it->needs_imatrix) {
        t->summary.needs_imatrix = 1;
        if (!o->dry_run) {
            return anvil__error_set(err, ANVIL_E_NEEDS_IMATRIX,
                                    "this quantization requires an importance matrix: tensor %s would be %s, "
                                    "which llama.cpp only writes with one (pass --imatrix FILE; make one "
                                    "with llama-imatrix)",
                                    it->name, anvil_type_name(NULL, it->dst_type));
        }
    }
    return tc_item_bytes(t, it, err);
}

static int decide(anvil_transcode *t, qz_state *q, sort_key *keys, size_t n, anvil_error *err) {
    const anvil_quantize_options *o = &q->opts;
    qz_policy_state *qs = &q->qs;
    const uint32_t default_type = anvil_quantize_default_type(o->only_copy ? QZ_ALL_F32 : o->ftype);
    /* Output names, pruning. */
    int32_t *prune = NULL;
    size_t n_prune = 0;
    if (pruned_layers(o, &prune, &n_prune) != ANVIL_OK) return anvil__nomem(err);
    layer_map *map = calloc(1, sizeof *map);
    t->items = calloc(n > 0 ? n : 1, sizeof *t->items);
    q->names = calloc(n > 0 ? n : 1, sizeof *q->names);
    if (map == NULL || t->items == NULL || q->names == NULL) {
        free(prune);
        free(map);
        return anvil__nomem(err);
    }
    int rc = ANVIL_OK;
    int32_t next_id = 0;
    size_t kept = 0;
    for (size_t i = 0; rc == ANVIL_OK && i < n; ++i) {
        const anvil_gguf_tensor *src = anvil_gguf_tensor_at(t->src, keys[i].index);
        char *renamed = NULL;
        int drop = 0;
        rc = remap_layer(src->name, prune, n_prune, map, &next_id, &renamed, &drop, err);
        if (rc != ANVIL_OK) break;
        if (drop) {
            t->summary.n_dropped++;
            continue;
        }
        if (renamed != NULL && strlen(renamed) > ANVIL_GGUF_MAX_TENSOR_NAME) {
            free(renamed);
            rc = anvil__error_set(err, ANVIL_E_INVALID_ARG, "tensor '%s' renumbered is too long a name", src->name);
            break;
        }
        keys[kept] = keys[i];
        q->names[kept] = renamed;
        anvil_transcode_tensor *it = &t->items[kept];
        it->src = src;
        it->name = renamed ? renamed : src->name;
        kept++;
    }
    q->n_names = kept;
    t->n_items = kept;
    q->pruned = n_prune > 0;
    q->blk_id = next_id;
    free(prune);
    /* keep_split writes each input part's tensors in their file order. */
    if (rc == ANVIL_OK && o->keep_split) qsort(t->items, kept, sizeof *t->items, by_part_offset);
    /* Counters over the whole list, as init_quantize_state_counters. */
    qs->has_tied_embeddings = 1;
    for (size_t i = 0; rc == ANVIL_OK && i < kept; ++i) {
        const qz_category c = qz_category_of(t->items[i].name);
        if (c == QZ_ATTENTION_V || c == QZ_ATTENTION_QKV || c == QZ_ATTENTION_KV_B) qs->n_attention_wv++;
        if (c == QZ_OUTPUT) qs->has_tied_embeddings = 0;
    }
    qs->n_ffn_down = qs->n_ffn_gate = qs->n_ffn_up = (int)qs->model.n_layer_all;
    /* Every tensor's type, in order. */
    for (size_t i = 0; rc == ANVIL_OK && i < kept; ++i) {
        anvil_transcode_tensor *it = &t->items[i];
        rc = decide_one(t, q, it, map, default_type, err);
        if (rc == ANVIL_OK) rc = tc_item_bytes(t, it, err);
    }
    /* Items hold pointers into q->names: realloc above may have moved the
     * array, not the strings, so they stay valid. */
    free(map);
    return rc;
}

/* Every type the plan writes must be encodable from its source. */
static int check_encodable(anvil_transcode *t, anvil_error *err) {
    for (size_t i = 0; i < t->n_items; ++i) {
        const anvil_transcode_tensor *it = &t->items[i];
        if (it->why != ANVIL_TRANSCODE_CONVERT) continue;
        char label[128];
        snprintf(label, sizeof label, "tensor '%s'", it->name);
        const int rc = tc_check_target(t->ctx, it->dst_type, label, err);
        if (rc != ANVIL_OK) return rc;
        if (!tc_is_float_type(it->src_type) && anvil_ctx_codec(t->ctx, it->src_type) == NULL) {
            return anvil__error_set(err, ANVIL_E_UNKNOWN_TYPE,
                                    "tensor '%s' is %s, which cannot be decoded here: its codec plugin is not "
                                    "loaded",
                                    it->name, anvil_type_name(NULL, it->src_type));
        }
        const uint32_t bs = qz_block_size(it->dst_type);
        if (bs == 0 || it->row_len % bs != 0) {
            return anvil__error_set(err, ANVIL_E_BLOCK_MISMATCH,
                                    "tensor '%s' has rows of %" PRIu64 " values, not a multiple of %s's block "
                                    "of %u (llama.cpp would abort): choose another type for it",
                                    it->name, it->row_len, anvil_type_name(NULL, it->dst_type), bs);
        }
    }
    return ANVIL_OK;
}

/* ---- --no-fallback and the size target -------------------------------------------- */

static int refuse_fallbacks(anvil_transcode *t, anvil_error *err) {
    char list[700];
    size_t n = 0, named = 0, len = 0;
    list[0] = '\0';
    for (size_t i = 0; i < t->n_items; ++i) {
        const anvil_transcode_tensor *it = &t->items[i];
        if (it->fallback_from == ANVIL_TRANSCODE_NO_TYPE) continue;
        char one[200];
        const int k = snprintf(one, sizeof one, "%s%s (rows of %" PRIu64 ": %s -> %s)", n ? ", " : "", it->name,
                               it->row_len, anvil_type_name(t->ctx, it->fallback_from),
                               anvil_type_name(t->ctx, it->dst_type));
        if (k > 0 && len + (size_t)k < sizeof list && named == n) {
            memcpy(list + len, one, (size_t)k + 1);
            len += (size_t)k;
            named++;
        }
        n++;
    }
    if (n == 0) return ANVIL_OK;
    char more[96] = "";
    if (named < n) {
        snprintf(more, sizeof more, ", and %zu more (--dry-run without --no-fallback lists them)", n - named);
    }
    return anvil__error_set(err, ANVIL_E_BLOCK_MISMATCH,
                            "--no-fallback: %zu tensor%s would fall back to another type, the rows not dividing "
                            "the preset's block: %s%s. Choose another preset or fix their types with --tensor-type",
                            n, n == 1 ? "" : "s", list, more);
}

static int check_target_options(const anvil_quantize_options *o, anvil_error *err) {
    if (o->target_size > 0 && o->target_bpw > 0.0) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "give --target-size or --target-bpw, not both");
    }
    if (o->target_bpw < 0.0 || !(o->target_bpw < 1e6)) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "--target-bpw %g: give bits per weight > 0", o->target_bpw);
    }
    if (o->keep_split) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "--keep-split with a size target: the target is one file's size; drop --keep-split");
    }
    if (o->only_copy) return anvil__error_set(err, ANVIL_E_INVALID_ARG, "COPY with a size target");
    return ANVIL_OK;
}

/* Lay the plan out once to learn the header's bytes, let the optimizer
 * choose the free tensors' types, and drop that layout. */
static int target_step(anvil_transcode *t, qz_state *q, anvil_error *err) {
    const anvil_quantize_options *o = &q->opts;
    uint64_t params = 0;
    for (size_t i = 0; i < t->n_items; ++i) params += t->items[i].src->n_elements;
    q->target_bytes = o->target_size > 0 ? o->target_size : (uint64_t)floor(o->target_bpw * (double)params / 8.0);
    int rc = tc_layout(t, err);
    uint64_t header = 0;
    uint32_t align = 1;
    if (rc == ANVIL_OK) {
        align = anvil_gguf_writer_alignment(t->writers[0]);
        header = t->summary.out_file_bytes;
        for (size_t i = 0; i < t->n_items; ++i) {
            header -= align > 1 ? (t->items[i].dst_bytes + align - 1) / align * align : t->items[i].dst_bytes;
        }
    }
    for (uint32_t p = 0; t->writers != NULL && p < t->n_parts; ++p) anvil_gguf_writer_free(t->writers[p]);
    free(t->writers);
    t->writers = NULL;
    const unsigned threads = t->summary.threads;
    memset(&t->summary, 0, sizeof t->summary);
    t->summary.threads = threads;
    unsigned char *is_free = calloc(t->n_items ? t->n_items : 1, 1);
    q->pred_err = calloc(t->n_items ? t->n_items : 1, sizeof *q->pred_err);
    if (rc == ANVIL_OK && (is_free == NULL || q->pred_err == NULL)) rc = anvil__nomem(err);
    for (size_t i = 0; rc == ANVIL_OK && i < t->n_items; ++i) {
        const anvil_transcode_tensor *it = &t->items[i];
        is_free[i] = it->why != ANVIL_TRANSCODE_KEEP_POLICY && it->rule != NULL && strcmp(it->rule, "--pure") == 0;
    }
    double weights[QZ_OTHER + 1];
    qz_request rq;
    memset(&rq, 0, sizeof rq);
    rq.target_bytes = q->target_bytes;
    rq.pure = q->user_pure;
    rq.has_imatrix = q->qs.has_imatrix;
    rq.threads = threads;
    rq.sample_rows = o->target_sample_rows;
    rq.role_weight = weights;
    rq.sens = o->sensitivity;
    rq.min_bpw = o->target_min_bpw;
    rq.cache = o->target_cache;
    if (rc == ANVIL_OK && rq.sens != NULL) rc = qz_sens_check(rq.sens, t->src, err);
    if (rc == ANVIL_OK) rc = qz_parse_weights(o->target_weights, weights, err);
    if (rc == ANVIL_OK) rc = qz_choose(t, is_free, header, align, &rq, q->pred_err, q->note, sizeof q->note, err);
    for (size_t i = 0; rc == ANVIL_OK && i < t->n_items; ++i) {
        anvil_transcode_tensor *it = &t->items[i];
        if (!is_free[i]) continue;
        it->rule = o->target_size > 0 ? "--target-size" : "--target-bpw";
        it->needs_imatrix = qz_requires_imatrix(it->name, it->dst_type, QZ_GUESSED);
    }
    free(is_free);
    if (rc == ANVIL_OK && q->note[0]) rc = tc_warn(t, err, "%s", q->note);
    if (rc == ANVIL_OK) rc = check_encodable(t, err);
    return rc;
}

ANVIL_API int anvil_quantize_predicted_error(const anvil_transcode *t, size_t i, double *out) {
    if (t == NULL || out == NULL || t->build_kvs != quantize_kvs) return ANVIL_E_INVALID_ARG;
    const qz_state *q = t->policy;
    if (!q->target || q->pred_err == NULL || i >= t->n_items) return ANVIL_E_INVALID_ARG;
    *out = q->pred_err[i];
    return ANVIL_OK;
}

ANVIL_API int anvil_quantize_target_info(const anvil_transcode *t, uint64_t *budget_bytes) {
    if (t == NULL || budget_bytes == NULL || t->build_kvs != quantize_kvs) return ANVIL_E_INVALID_ARG;
    const qz_state *q = t->policy;
    if (!q->target) return ANVIL_E_INVALID_ARG;
    *budget_bytes = q->target_bytes;
    return ANVIL_OK;
}

ANVIL_API const char *anvil_quantize_target_note(const anvil_transcode *t) {
    if (t == NULL || t->build_kvs != quantize_kvs) return NULL;
    const qz_state *q = t->policy;
    return q->target && q->note[0] ? q->note : NULL;
}

static const char *type_name(uint32_t type) {
    anvil_type_info ti;
    return anvil_type_builtin(type, &ti, NULL) == ANVIL_OK ? ti.name : "?";
}

/* ---- the plan as llama-quantize's --tensor-type-file ----------------------------------- */

/* --plan-out: the target's choices as --tensor-type rules, one per line. */
ANVIL_API int anvil_quantize_write_plan(const anvil_transcode *t, const char *path, anvil_error *err) {
    double e;
    if (t == NULL || path == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_quantize_write_plan: NULL argument");
    }
    /* a preset's plan (--verify kept it): every tensor it encodes */
    const int all = anvil_quantize_predicted_error(t, 0, &e) != ANVIL_OK;
    FILE *f = fopen(path, "w");
    if (f == NULL) return anvil__error_set(err, ANVIL_E_IO, "--plan-out %s: cannot create it", path);
    for (size_t i = 0; i < t->n_items; ++i) {
        const anvil_transcode_tensor *it = &t->items[i];
        if (all ? it->dst_type == it->src_type : it->rule == NULL || strncmp(it->rule, "--target-", 9) != 0) {
            continue;
        }
        fputc('^', f);
        for (const char *p = it->name; *p; ++p) {
            if (strchr(".^$|()[]{}*+?\\", *p) != NULL) fputc('\\', f);
            fputc(*p, f);
        }
        fprintf(f, "$=%s\n", type_name(it->dst_type));
    }
    if (ferror(f) | (fclose(f) != 0)) return anvil__error_set(err, ANVIL_E_IO, "--plan-out %s: write failed", path);
    return ANVIL_OK;
}

ANVIL_API int anvil_quantize_plan(anvil_transcode **out, anvil_ctx *ctx, const anvil_gguf *src, const char *out_path,
                                  const anvil_quantize_options *opts, anvil_error *err) {
    anvil__error_clear(err);
    if (out == NULL || src == NULL || out_path == NULL || opts == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_quantize_plan: NULL argument");
    }
    *out = NULL;
    anvil_transcode *t = tc_new(ctx, src);
    qz_state *q = calloc(1, sizeof *q);
    sort_key *keys = NULL;
    if (t == NULL || q == NULL) {
        free(t);
        free(q);
        return anvil__nomem(err);
    }
    t->policy = q;
    t->policy_free = qz_free;
    t->build_kvs = quantize_kvs;
    t->check_kept = 1;
    t->check_src = qz_check_data;
    t->opts.threads = opts->threads;
    t->opts.skip_quality = opts->skip_quality;
    t->opts.progress = opts->progress;
    t->opts.progress_arg = opts->progress_arg;
    t->summary.threads = opts->threads ? opts->threads : anvil_ctx_threads(ctx);
    q->opts = *opts;
    q->target = opts->target_size > 0 || opts->target_bpw > 0.0;
    q->user_pure = opts->pure;
    if (q->target) {
        /* The preset machinery with every free tensor marked "--pure" at
         * q8_0; the optimizer replaces those. */
        q->opts.ftype = QZ_Q8_0;
        q->opts.pure = 1;
    }
    q->qs.opts = &q->opts;
    q->qs.has_imatrix = opts->imatrix != NULL && anvil_imatrix_count(opts->imatrix) > 0;
    if (!q->qs.has_imatrix) q->opts.imatrix = NULL;

    int rc = check_options(t, &q->opts, err);
    if (rc == ANVIL_OK && q->target) rc = check_target_options(opts, err);
    if (rc == ANVIL_OK) rc = tc_compile_rules(t, opts->tensor_types, opts->n_tensor_types, "--tensor-type", err);
    if (rc == ANVIL_OK) rc = read_model(t, q, err);
    const size_t n = anvil_gguf_tensor_count(src);
    if (rc == ANVIL_OK) {
        keys = calloc(n > 0 ? n : 1, sizeof *keys);
        if (keys == NULL) rc = anvil__nomem(err);
    }
    if (rc == ANVIL_OK) {
        for (size_t i = 0; i < n; ++i) {
            const anvil_gguf_tensor *tt = anvil_gguf_tensor_at(src, i);
            keys[i].index = i;
            keys[i].layer = layer_of(tt->name);
            keys[i].name = tt->name;
        }
        qsort(keys, n, sizeof *keys, by_layer_name);
        q->ftype = q->opts.ftype;
        if (opts->only_copy) {
            size_t *order = malloc((n ? n : 1) * sizeof *order);
            if (order == NULL) {
                rc = anvil__nomem(err);
            } else {
                for (size_t i = 0; i < n; ++i) order[i] = keys[i].index;
                rc = loader_ftype(t, q, order, n, &q->ftype, err);
                free(order);
            }
        }
        q->qs.ftype = q->ftype;
        if (q->target) q->ftype = QZ_GUESSED;
    }
    if (rc == ANVIL_OK) rc = decide(t, q, keys, n, err);
    if (rc == ANVIL_OK) {
        for (size_t i = 0; i < t->n_rules; ++i) {
            if (t->rules[i].hits == 0 && qz_is_quantized(anvil_quantize_default_type(q->ftype))) {
                rc = tc_warn(t, err, "--tensor-type %s matches no tensor", t->rules[i].pattern);
            }
        }
    }
    if (rc == ANVIL_OK) rc = check_items(t, q, err);
    if (rc == ANVIL_OK) rc = check_encodable(t, err);
    if (rc == ANVIL_OK) {
        q->n_tensors = (int32_t)t->n_items;
        q->n_split = 1;
        if (opts->keep_split) {
            for (size_t i = 0; i < t->n_items; ++i) {
                if (t->items[i].part + 1 > q->n_split) q->n_split = t->items[i].part + 1;
            }
            for (uint32_t p = 0; rc == ANVIL_OK && p < q->n_split; ++p) {
                int any = 0;
                for (size_t i = 0; i < t->n_items && !any; ++i) any = t->items[i].part == p;
                if (!any) {
                    rc = anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                          "--keep-split: input part %u would have no tensors left", p + 1);
                }
            }
        }
        t->n_parts = q->n_split;
    }
    if (rc == ANVIL_OK) rc = tc_part_paths(t, out_path, opts->keep_split ? out_path : NULL, err);
    if (rc == ANVIL_OK && opts->no_fallback && !q->target) rc = refuse_fallbacks(t, err);
    if (rc == ANVIL_OK && q->target) rc = target_step(t, q, err);
    if (rc == ANVIL_OK) {
        t->summary.file_type = q->ftype;
        rc = tc_layout(t, err);
    }
    if (rc == ANVIL_OK && q->target && t->summary.out_file_bytes > q->target_bytes) {
        rc = anvil__error_set(err, ANVIL_E_INTERNAL, "the target plan takes %" PRIu64 " bytes, over its %" PRIu64,
                              t->summary.out_file_bytes, q->target_bytes);
    }
    free(keys);
    if (rc != ANVIL_OK) {
        anvil_transcode_free(t);
        return rc;
    }
    *out = t;
    return ANVIL_OK;
}
