/*
 * Transcode plan: decide every tensor, then lay out the output (one file or
 * a llama.cpp-style split set) as fully declared GGUF writers, so that the
 * exact size of every file is known before a byte is written (the dry run
 * reports it; the run streams into these writers).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "error.h"
#include "transcode_internal.h"

/* GGML_QNT_VERSION: the block layouts' version llama.cpp stamps on every
 * file it quantizes. */
#define TC_QUANTIZATION_VERSION 2u

ANVIL_API void anvil_transcode_options_init(anvil_transcode_options *o) {
    memset(o, 0, sizeof *o);
    o->dtype = ANVIL_TRANSCODE_NO_TYPE;
    o->experts_dtype = ANVIL_TRANSCODE_NO_TYPE;
    o->output_type = ANVIL_TRANSCODE_NO_TYPE;
    o->token_embd_type = ANVIL_TRANSCODE_NO_TYPE;
}

ANVIL_API void anvil_transcode_free(anvil_transcode *t) {
    if (t == NULL) return;
    for (size_t i = 0; i < t->n_rules; ++i) {
        if (t->rules[i].compiled) regfree(&t->rules[i].re);
        free(t->rules[i].pattern);
        free(t->rules[i].label);
    }
    free(t->rules);
    for (uint32_t p = 0; p < t->n_parts; ++p) {
        if (t->writers != NULL) anvil_gguf_writer_free(t->writers[p]);
        if (t->part_paths != NULL) free(t->part_paths[p]);
    }
    free(t->writers);
    free(t->part_paths);
    free(t->items);
    free(t->quality);
    free(t);
}

static char *dup_str(const char *s) {
    const size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d != NULL) memcpy(d, s, n);
    return d;
}

static int compile_rules(anvil_transcode *t, anvil_error *err) {
    const anvil_transcode_options *o = &t->opts;
    if (o->n_rules == 0) return ANVIL_OK;
    if (o->rules == NULL) return anvil_error_set(err, ANVIL_E_INVALID_ARG, "NULL rules");
    t->rules = calloc(o->n_rules, sizeof *t->rules);
    if (t->rules == NULL) return anvil_error_set(err, ANVIL_E_NOMEM, "out of memory");
    t->n_rules = o->n_rules;
    for (size_t i = 0; i < o->n_rules; ++i) {
        tc_rule *r = &t->rules[i];
        const char *pat = o->rules[i].pattern;
        if (pat == NULL || pat[0] == '\0') {
            return anvil_error_set(err, ANVIL_E_INVALID_ARG,
                                   "--tensor-type rule %zu has an empty pattern", i + 1);
        }
        r->pattern = dup_str(pat);
        r->label = malloc(strlen(pat) + 16);
        if (r->pattern == NULL || r->label == NULL) {
            return anvil_error_set(err, ANVIL_E_NOMEM, "out of memory");
        }
        sprintf(r->label, "--tensor-type %s", pat);
        r->type = o->rules[i].type;
        const int rc = regcomp(&r->re, pat, REG_EXTENDED | REG_NOSUB);
        if (rc != 0) {
            char why[256];
            regerror(rc, &r->re, why, sizeof why);
            return anvil_error_set(err, ANVIL_E_INVALID_ARG,
                                   "--tensor-type '%s': not a valid POSIX extended regex: %s", pat,
                                   why);
        }
        r->compiled = 1;
        char label[64];
        snprintf(label, sizeof label, "--tensor-type rule %zu", i + 1);
        int crc = tc_check_target(t->ctx, r->type, label, err);
        if (crc != ANVIL_OK) return crc;
    }
    return ANVIL_OK;
}

static int check_types(anvil_transcode *t, anvil_error *err) {
    const anvil_transcode_options *o = &t->opts;
    const struct {
        uint32_t type;
        const char *option;
    } given[] = {
        { o->dtype, "--dtype" },
        { o->experts_dtype, "--experts-dtype" },
        { o->output_type, "--output-tensor-type" },
        { o->token_embd_type, "--token-embedding-type" },
    };
    for (size_t i = 0; i < sizeof given / sizeof given[0]; ++i) {
        if (given[i].type == ANVIL_TRANSCODE_NO_TYPE) continue;
        int rc = tc_check_target(t->ctx, given[i].type, given[i].option, err);
        if (rc != ANVIL_OK) return rc;
    }
    return ANVIL_OK;
}

static int decide_all(anvil_transcode *t, anvil_error *err) {
    const size_t n = anvil_gguf_tensor_count(t->src);
    t->items = calloc(n > 0 ? n : 1, sizeof *t->items);
    if (t->items == NULL) return anvil_error_set(err, ANVIL_E_NOMEM, "out of memory");
    t->n_items = n;
    const anvil_transcode_hook *h = &t->opts.hook;
    for (size_t i = 0; i < n; ++i) {
        const anvil_gguf_tensor *src = anvil_gguf_tensor_at(t->src, i);
        anvil_transcode_tensor *it = &t->items[i];
        tc_decide(t, t->ctx, src, it);
        if (h->wants != NULL && h->rows != NULL && h->wants(h->arg, src)) {
            if (!tc_is_float_type(src->type)) {
                return anvil_error_set(err, ANVIL_E_INVALID_ARG,
                                       "tensor '%s' is %s: it can only be rewritten from a float "
                                       "type (f32, f16, bf16)",
                                       src->name, src->type_info.name);
            }
            it->rewritten = 1;
        }
        anvil_type_info info;
        int rc = anvil_type_lookup(t->ctx, it->dst_type, &info, err);
        if (rc == ANVIL_OK) rc = anvil_type_bytes(&info, src->n_elements, &it->dst_bytes, err);
        if (rc != ANVIL_OK) {
            anvil_error_prefix(err, "tensor '%s'", src->name);
            return rc;
        }
    }
    return ANVIL_OK;
}

/* The output type holding the most elements (ties: the lower id). */
static uint32_t dominant_type(const anvil_transcode *t) {
    uint32_t best = ANVIL_TYPE_F32;
    uint64_t best_n = 0;
    for (size_t i = 0; i < t->n_items; ++i) {
        const uint32_t ty = t->items[i].dst_type;
        uint64_t n = 0;
        for (size_t j = 0; j < t->n_items; ++j) {
            if (t->items[j].dst_type == ty) n += t->items[j].src->n_elements;
        }
        if (n > best_n || (n == best_n && ty < best)) {
            best = ty;
            best_n = n;
        }
    }
    return best;
}

/* Part of each tensor, as llama.cpp's gguf-split cuts: a new part when the
 * next tensor (padded to 32) would take the part's data past the limit. */
static int assign_parts(anvil_transcode *t, anvil_error *err) {
    const uint64_t max = t->opts.split_max_bytes;
    uint32_t part = 0;
    uint64_t in_part = 0;
    size_t count = 0;
    for (size_t i = 0; i < t->n_items; ++i) {
        const uint64_t b = t->items[i].dst_bytes;
        if (b > UINT64_MAX - 31) return anvil_error_set(err, ANVIL_E_OVERFLOW, "tensor size overflows");
        const uint64_t padded = (b + 31) & ~(uint64_t)31;
        if (max > 0 && count > 0 && (in_part > UINT64_MAX - padded || in_part + padded > max)) {
            part++;
            in_part = 0;
            count = 0;
        }
        in_part += padded;
        count++;
        t->items[i].part = part;
    }
    t->n_parts = part + 1;
    if (t->n_parts > UINT16_MAX) {
        return anvil_error_set(err, ANVIL_E_GGUF_SPLIT,
                               "--split-max-size would make %" PRIu32 " parts; split.count is a u16 "
                               "(at most 65535): raise the limit",
                               t->n_parts);
    }
    if (max > 0 && t->n_items > (size_t)INT32_MAX) {
        return anvil_error_set(err, ANVIL_E_GGUF_SPLIT,
                               "%zu tensors do not fit split.tensors.count (i32)", t->n_items);
    }
    return ANVIL_OK;
}

static int part_paths(anvil_transcode *t, const char *out_path, anvil_error *err) {
    t->part_paths = calloc(t->n_parts, sizeof *t->part_paths);
    if (t->part_paths == NULL) return anvil_error_set(err, ANVIL_E_NOMEM, "out of memory");
    if (t->opts.split_max_bytes == 0) {
        t->part_paths[0] = dup_str(out_path);
        return t->part_paths[0] ? ANVIL_OK : anvil_error_set(err, ANVIL_E_NOMEM, "out of memory");
    }
    /* OUT.gguf -> OUT-00001-of-0000N.gguf, as llama.cpp names a set. */
    size_t plen = strlen(out_path);
    if (plen > 5 && strcmp(out_path + plen - 5, ".gguf") == 0) plen -= 5;
    char *prefix = malloc(plen + 1);
    if (prefix == NULL) return anvil_error_set(err, ANVIL_E_NOMEM, "out of memory");
    memcpy(prefix, out_path, plen);
    prefix[plen] = '\0';
    int rc = ANVIL_OK;
    for (uint32_t p = 0; rc == ANVIL_OK && p < t->n_parts; ++p) {
        const size_t cap = plen + 32;
        t->part_paths[p] = malloc(cap);
        rc = t->part_paths[p] == NULL
                 ? anvil_error_set(err, ANVIL_E_NOMEM, "out of memory")
                 : anvil_gguf_split_path(t->part_paths[p], cap, prefix, p + 1, t->n_parts, err);
    }
    free(prefix);
    return rc;
}

static int build_writers(anvil_transcode *t, anvil_error *err) {
    t->writers = calloc(t->n_parts, sizeof *t->writers);
    if (t->writers == NULL) return anvil_error_set(err, ANVIL_E_NOMEM, "out of memory");
    const int split = t->opts.split_max_bytes > 0;
    for (uint32_t p = 0; p < t->n_parts; ++p) {
        int rc = anvil_gguf_writer_new(&t->writers[p], t->ctx, err);
        if (rc != ANVIL_OK) return rc;
        anvil_gguf_writer *w = t->writers[p];
        if (p == 0) {
            /* Raw copy: every KV byte for byte, in order; the input's split
             * keys describe the input's parts, not ours. */
            rc = anvil_gguf_writer_copy_from(w, t->src,
                                             ANVIL_GGUF_COPY_KVS | ANVIL_GGUF_COPY_SKIP_SPLIT_KEYS, err);
            if (rc == ANVIL_OK) {
                rc = anvil_gguf_writer_set_u32(w, "general.quantization_version",
                                               TC_QUANTIZATION_VERSION, err);
            }
            const int ft = anvil_transcode_file_type(t->summary.dominant_type);
            if (rc == ANVIL_OK && ft >= 0) {
                rc = anvil_gguf_writer_set_u32(w, "general.file_type", (uint32_t)ft, err);
            }
        }
        /* Later parts carry only the split keys, as gguf-split writes them. */
        if (rc == ANVIL_OK && split) {
            /* gguf-split's order: no, tensors.count, then count. */
            rc = anvil_gguf_writer_set_u16(w, ANVIL_GGUF_KEY_SPLIT_NO, (uint16_t)p, err);
            if (rc == ANVIL_OK) {
                rc = anvil_gguf_writer_set_i32(w, ANVIL_GGUF_KEY_SPLIT_TENSORS, (int32_t)t->n_items, err);
            }
            if (rc == ANVIL_OK) {
                rc = anvil_gguf_writer_set_u16(w, ANVIL_GGUF_KEY_SPLIT_COUNT, (uint16_t)t->n_parts, err);
            }
        }
        if (rc != ANVIL_OK) return rc;
    }
    for (size_t i = 0; i < t->n_items; ++i) {
        const anvil_transcode_tensor *it = &t->items[i];
        anvil_gguf_writer *w = t->writers[it->part];
        int rc = anvil_gguf_writer_add_tensor(w, it->src->name, it->dst_type, it->src->n_dims, it->src->ne,
                                              NULL, 0, err);
        if (rc != ANVIL_OK) return rc;
        const size_t k = anvil_gguf_writer_tensor_count(w) - 1;
        if (anvil_gguf_writer_tensor_bytes(w, k) != it->dst_bytes) {
            return anvil_error_set(err, ANVIL_E_INTERNAL,
                                   "tensor '%s': the writer sizes it at %" PRIu64 " bytes, the plan at %" PRIu64,
                                   it->name, anvil_gguf_writer_tensor_bytes(w, k), it->dst_bytes);
        }
    }
    return ANVIL_OK;
}

static int fill_summary(anvil_transcode *t, anvil_error *err) {
    anvil_transcode_summary *s = &t->summary;
    s->n_tensors = t->n_items;
    s->n_parts = t->n_parts;
    for (size_t i = 0; i < t->n_items; ++i) {
        const anvil_transcode_tensor *it = &t->items[i];
        s->src_tensor_bytes += it->src_bytes;
        s->dst_tensor_bytes += it->dst_bytes;
        if (it->why == ANVIL_TRANSCODE_CONVERT || it->rewritten) s->n_converted++;
        if (it->why == ANVIL_TRANSCODE_KEEP_QUANTIZED) s->n_kept_quantized++;
        if (it->why == ANVIL_TRANSCODE_KEEP_ROWS) s->n_kept_rows++;
        if (it->why == ANVIL_TRANSCODE_KEEP_SOURCE) s->n_kept_source++;
    }
    for (uint32_t p = 0; p < t->n_parts; ++p) {
        uint64_t size = 0;
        int rc = anvil_gguf_writer_file_size(t->writers[p], &size, err);
        if (rc != ANVIL_OK) return rc;
        s->out_file_bytes += size;
    }
    const int ft = anvil_transcode_file_type(s->dominant_type);
    s->file_type = ft >= 0 ? (uint32_t)ft : UINT32_MAX;
    return ANVIL_OK;
}

ANVIL_API int anvil_transcode_plan(anvil_transcode **out, anvil_ctx *ctx, const anvil_gguf *src,
                                   const char *out_path, const anvil_transcode_options *opts,
                                   anvil_error *err) {
    anvil_error_clear(err);
    if (out == NULL || src == NULL || out_path == NULL || opts == NULL) {
        return anvil_error_set(err, ANVIL_E_INVALID_ARG, "anvil_transcode_plan: NULL argument");
    }
    *out = NULL;
    anvil_transcode *t = calloc(1, sizeof *t);
    if (t == NULL) return anvil_error_set(err, ANVIL_E_NOMEM, "out of memory");
    t->ctx = ctx;
    t->src = src;
    t->opts = *opts;
    t->summary.threads = opts->threads ? opts->threads : anvil_ctx_threads(ctx);
    int rc = check_types(t, err);
    if (rc == ANVIL_OK) rc = compile_rules(t, err);
    if (rc == ANVIL_OK) rc = decide_all(t, err);
    if (rc == ANVIL_OK) {
        t->summary.dominant_type = dominant_type(t);
        rc = assign_parts(t, err);
    }
    if (rc == ANVIL_OK) rc = part_paths(t, out_path, err);
    if (rc == ANVIL_OK) rc = build_writers(t, err);
    if (rc == ANVIL_OK) rc = fill_summary(t, err);
    if (rc != ANVIL_OK) {
        anvil_transcode_free(t);
        return rc;
    }
    *out = t;
    return ANVIL_OK;
}

ANVIL_API size_t anvil_transcode_count(const anvil_transcode *t) { return t ? t->n_items : 0; }

ANVIL_API const anvil_transcode_tensor *anvil_transcode_tensor_at(const anvil_transcode *t, size_t i) {
    return (t != NULL && i < t->n_items) ? &t->items[i] : NULL;
}

ANVIL_API void anvil_transcode_get_summary(const anvil_transcode *t, anvil_transcode_summary *out) {
    if (out == NULL) return;
    if (t == NULL) {
        memset(out, 0, sizeof *out);
        return;
    }
    *out = t->summary;
}

ANVIL_API const char *anvil_transcode_part_path(const anvil_transcode *t, uint32_t i) {
    return (t != NULL && i < t->n_parts && t->part_paths != NULL) ? t->part_paths[i] : NULL;
}

ANVIL_API size_t anvil_transcode_quality_count(const anvil_transcode *t) { return t ? t->n_quality : 0; }

ANVIL_API int anvil_transcode_quality_at(const anvil_transcode *t, size_t i, anvil_transcode_quality *out) {
    if (t == NULL || out == NULL || i >= t->n_quality) return ANVIL_E_INVALID_ARG;
    *out = t->quality[i];
    return ANVIL_OK;
}
