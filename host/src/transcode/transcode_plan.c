/* SPDX-License-Identifier: MIT */
/*
 * Transcode plan: decide every tensor, then lay out the output (one file or
 * a llama.cpp-style split set) as fully declared GGUF writers, so that the
 * exact size of every file is known before a byte is written (the dry run
 * reports it; the run streams into these writers).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "file_set.h"
#include "gguf_internal.h"
#include "gguf_source.h"
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
        ecma_re_free(t->rules[i].re);
        free(t->rules[i].pattern);
        free(t->rules[i].label);
    }
    free(t->rules);
    for (size_t i = 0; i < t->n_warnings; ++i) free(t->warnings[i]);
    free(t->warnings);
    if (t->policy_free != NULL) t->policy_free(t->policy);
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

anvil_transcode *tc_new(anvil_ctx *ctx, const anvil_gguf *src) {
    anvil_transcode *t = calloc(1, sizeof *t);
    if (t == NULL) return NULL;
    t->ctx = ctx;
    t->src = src;
    return t;
}

int tc_warn(anvil_transcode *t, anvil_error *err, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **v = realloc(t->warnings, (t->n_warnings + 1) * sizeof *v);
    char *copy = dup_str(buf);
    if (v == NULL || copy == NULL) {
        free(copy);
        if (v != NULL) t->warnings = v;
        return anvil__nomem(err);
    }
    t->warnings = v;
    t->warnings[t->n_warnings++] = copy;
    return ANVIL_OK;
}

/* Transcode has no importance matrix: a format ggml encodes only with one
 * is refused up front, pointing to quantize. */
static int check_target(anvil_ctx *ctx, uint32_t type, const char *option, anvil_error *err) {
    int rc = tc_check_target(ctx, type, option, err);
    const anvil_codec *c = anvil_ctx_codec(ctx, type);
    if (rc == ANVIL_OK && c != NULL && (c->flags & ANVIL_CODEC_NEEDS_IMATRIX)) {
        rc = anvil__error_set(err, ANVIL_E_NEEDS_IMATRIX,
                              "%s: %s cannot be written without an importance matrix (ggml encodes it only "
                              "with one): use `anvil quantize --imatrix FILE`, or pick another type",
                              option, c->name);
    }
    return rc;
}

static int compile_rules(anvil_transcode *t, anvil_error *err) {
    const anvil_transcode_options *o = &t->opts;
    int rc = tc_compile_rules(t, o->rules, o->n_rules, "--tensor-type", err);
    for (size_t i = 0; rc == ANVIL_OK && i < t->n_rules; ++i) {
        char label[64];
        snprintf(label, sizeof label, "--tensor-type rule %zu", i + 1);
        rc = check_target(t->ctx, t->rules[i].type, label, err);
    }
    return rc;
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
        int rc = check_target(t->ctx, given[i].type, given[i].option, err);
        if (rc != ANVIL_OK) return rc;
    }
    return ANVIL_OK;
}

int tc_item_bytes(anvil_transcode *t, anvil_transcode_tensor *it, anvil_error *err) {
    anvil_type_info info;
    int rc = anvil_type_lookup(t->ctx, it->dst_type, &info, err);
    if (rc == ANVIL_OK) rc = anvil_type_bytes(&info, it->src->n_elements, &it->dst_bytes, err);
    if (rc != ANVIL_OK) anvil__error_prefix(err, "tensor '%s'", it->src->name);
    return rc;
}

static int decide_all(anvil_transcode *t, anvil_error *err) {
    const size_t n = anvil_gguf_tensor_count(t->src);
    t->items = calloc(n > 0 ? n : 1, sizeof *t->items);
    if (t->items == NULL) return anvil__nomem(err);
    t->n_items = n;
    const anvil_transcode_hook *h = &t->opts.hook;
    size_t n_requant = 0, first_requant = 0;
    for (size_t i = 0; i < n; ++i) {
        const anvil_gguf_tensor *src = anvil_gguf_tensor_at(t->src, i);
        anvil_transcode_tensor *it = &t->items[i];
        int rc = tc_decide(t, t->ctx, src, it, err);
        if (rc != ANVIL_OK) return rc;
        if (it->why == ANVIL_TRANSCODE_KEEP_QUANTIZED && n_requant++ == 0) first_requant = i;
        if (h->wants != NULL && h->rows != NULL && h->wants(h->arg, src)) {
            if (!tc_is_float_type(src->type)) {
                return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                        "tensor '%s' is %s: it can only be rewritten from a float "
                                        "type (f32, f16, bf16)",
                                        src->name, src->type_info.name);
            }
            it->rewritten = 1;
        }
        rc = tc_item_bytes(t, it, err);
        if (rc != ANVIL_OK) return rc;
    }
    if (n_requant > 0) {
        const anvil_transcode_tensor *it = &t->items[first_requant];
        anvil_type_info want;
        const int have = anvil_type_lookup(t->ctx, it->want_type, &want, NULL) == ANVIL_OK;
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "tensor '%s' is already quantized (%s) and %s asks for %s: requantizing "
                                "stacks two quantization errors. Pass --allow-requantize to do it anyway, "
                                "or ask for f16/f32 to dequantize (%zu tensor%s in all)",
                                it->name, it->src->type_info.name, it->rule ? it->rule : "an option",
                                have ? want.name : "another type", n_requant, n_requant == 1 ? "" : "s");
    }
    return ANVIL_OK;
}

uint32_t tc_dominant_type(const anvil_transcode *t) {
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

/* Part of each tensor, as llama.cpp's gguf-split cuts (anvil split's rule):
 * a new part when the next tensor (padded to 32) would take the part's data
 * past --split-max-size, or the part holds --split-max-tensors already. */
static int assign_parts(anvil_transcode *t, anvil_error *err) {
    const uint64_t max = t->opts.split_max_bytes, max_tensors = t->opts.split_max_tensors;
    uint32_t part = 0;
    uint64_t in_part = 0;
    size_t count = 0;
    for (size_t i = 0; i < t->n_items; ++i) {
        uint64_t padded;
        if (gguf_pad_overflows(t->items[i].dst_bytes, ANVIL_GGUF_DEFAULT_ALIGNMENT, &padded)) {
            return anvil__error_set(err, ANVIL_E_OVERFLOW, "tensor size overflows");
        }
        if (tc_is_split(t) && gguf_split_starts_part(count, in_part, padded, max, max_tensors)) {
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
        return anvil__error_set(err, ANVIL_E_GGUF_SPLIT,
                                "the split would make %" PRIu32 " parts; split.count is a u16 "
                                "(at most 65535): raise the limit",
                                t->n_parts);
    }
    if (tc_is_split(t) && t->n_items > (size_t)INT32_MAX) {
        return anvil__error_set(err, ANVIL_E_GGUF_SPLIT, "%zu tensors do not fit split.tensors.count (i32)",
                                t->n_items);
    }
    return ANVIL_OK;
}

/* An output part that is a part of the source (part 2 of a split input,
 * say, or a --keep-split part named as its input part) is refused before
 * anything is written: the run would replace a file it is reading. */
static int part_not_input(const anvil_transcode *t, const char *path, anvil_error *err) {
    const size_t n = anvil_gguf_part_count(t->src);
    for (size_t i = 0; i < n; ++i) {
        anvil_gguf_part_info pi;
        if (anvil_gguf_part(t->src, i, &pi) != ANVIL_OK || pi.path == NULL) continue;
        const char *in = pi.path;
        const int rc = anvil_output_check(path, &in, 1, err);
        if (rc != ANVIL_OK) return rc;
    }
    return ANVIL_OK;
}

int tc_part_paths(anvil_transcode *t, const char *out_path, const char *prefix, anvil_error *err) {
    t->part_paths = calloc(t->n_parts, sizeof *t->part_paths);
    if (t->part_paths == NULL) return anvil__nomem(err);
    if (prefix == NULL) {
        t->part_paths[0] = dup_str(out_path);
        return t->part_paths[0] ? part_not_input(t, out_path, err) : anvil__nomem(err);
    }
    /* A set is files renamed into place as one: refused up front when the
     * output named, or a part's name, is a device, a FIFO or a descriptor. */
    int rc = file_set_check_part(out_path, err);
    const size_t plen = strlen(prefix);
    for (uint32_t p = 0; rc == ANVIL_OK && p < t->n_parts; ++p) {
        const size_t cap = plen + 32;
        t->part_paths[p] = malloc(cap);
        rc = t->part_paths[p] == NULL ? anvil__nomem(err)
                                      : anvil_gguf_split_path(t->part_paths[p], cap, prefix, p + 1, t->n_parts, err);
        if (rc == ANVIL_OK) rc = file_set_check_part(t->part_paths[p], err);
        if (rc == ANVIL_OK) rc = part_not_input(t, t->part_paths[p], err);
    }
    return rc;
}

/* OUT.gguf -> OUT-00001-of-0000N.gguf, as llama.cpp's gguf-split names a set. */
static int transcode_part_paths(anvil_transcode *t, const char *out_path, anvil_error *err) {
    if (!tc_is_split(t)) return tc_part_paths(t, out_path, NULL, err);
    size_t plen = strlen(out_path);
    if (plen > 5 && strcmp(out_path + plen - 5, ".gguf") == 0) plen -= 5;
    char *prefix = malloc(plen + 1);
    if (prefix == NULL) return anvil__nomem(err);
    memcpy(prefix, out_path, plen);
    prefix[plen] = '\0';
    const int rc = tc_part_paths(t, out_path, prefix, err);
    free(prefix);
    return rc;
}

/* Transcode's metadata: every KV raw (the input's split keys describe the
 * input's parts, not ours), then quantization version and file type as
 * llama-quantize sets them; parts carry gguf-split's keys. */
static int transcode_kvs(anvil_transcode *t, anvil_gguf_writer *w, uint32_t p, anvil_error *err) {
    int rc = ANVIL_OK;
    if (p == 0) {
        rc = anvil_gguf_writer_copy_from(w, t->src, ANVIL_GGUF_COPY_KVS | ANVIL_GGUF_COPY_SKIP_SPLIT_KEYS, err);
        if (rc == ANVIL_OK) {
            rc = anvil_gguf_writer_set_u32(w, "general.quantization_version", TC_QUANTIZATION_VERSION, err);
        }
        const int ft = anvil_transcode_file_type(t->summary.dominant_type);
        if (rc == ANVIL_OK && ft >= 0) rc = anvil_gguf_writer_set_u32(w, "general.file_type", (uint32_t)ft, err);
    }
    /* Later parts carry only the split keys, as gguf-split writes them. */
    if (rc == ANVIL_OK && tc_is_split(t)) {
        /* gguf-split's order: no, tensors.count, then count. */
        rc = anvil_gguf_writer_set_u16(w, ANVIL_GGUF_KEY_SPLIT_NO, (uint16_t)p, err);
        if (rc == ANVIL_OK) {
            rc = anvil_gguf_writer_set_i32(w, ANVIL_GGUF_KEY_SPLIT_TENSORS, (int32_t)t->n_items, err);
        }
        if (rc == ANVIL_OK) {
            rc = anvil_gguf_writer_set_u16(w, ANVIL_GGUF_KEY_SPLIT_COUNT, (uint16_t)t->n_parts, err);
        }
    }
    return rc;
}

static int build_writers(anvil_transcode *t, anvil_error *err) {
    t->writers = calloc(t->n_parts, sizeof *t->writers);
    if (t->writers == NULL) return anvil__nomem(err);
    for (uint32_t p = 0; p < t->n_parts; ++p) {
        int rc = anvil_gguf_writer_new(&t->writers[p], t->ctx, err);
        if (rc == ANVIL_OK) rc = t->build_kvs(t, t->writers[p], p, err);
        if (rc != ANVIL_OK) return rc;
    }
    for (size_t i = 0; i < t->n_items; ++i) {
        const anvil_transcode_tensor *it = &t->items[i];
        anvil_gguf_writer *w = t->writers[it->part];
        int rc = anvil_gguf_writer_add_tensor(w, it->name, it->dst_type, it->src->n_dims, it->src->ne, NULL, 0, err);
        if (rc != ANVIL_OK) return rc;
        const size_t k = anvil_gguf_writer_tensor_count(w) - 1;
        if (anvil_gguf_writer_tensor_bytes(w, k) != it->dst_bytes) {
            return anvil__error_set(err, ANVIL_E_INTERNAL,
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
        if (it->fallback_from != ANVIL_TRANSCODE_NO_TYPE) s->n_fallback++;
    }
    for (uint32_t p = 0; p < t->n_parts; ++p) {
        uint64_t size = 0;
        int rc = anvil_gguf_writer_file_size(t->writers[p], &size, err);
        if (rc != ANVIL_OK) return rc;
        s->out_file_bytes += size;
    }
    return ANVIL_OK;
}

int tc_layout(anvil_transcode *t, anvil_error *err) {
    t->summary.dominant_type = tc_dominant_type(t);
    int rc = build_writers(t, err);
    if (rc == ANVIL_OK) rc = fill_summary(t, err);
    return rc;
}

ANVIL_API int anvil_transcode_plan(anvil_transcode **out, anvil_ctx *ctx, const anvil_gguf *src, const char *out_path,
                                   const anvil_transcode_options *opts, anvil_error *err) {
    anvil__error_clear(err);
    if (out == NULL || src == NULL || out_path == NULL || opts == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_transcode_plan: NULL argument");
    }
    *out = NULL;
    if (opts->split_max_bytes > 0 && opts->split_max_tensors > 0) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "give a split size or a tensor count per part, not both (as gguf-split)");
    }
    anvil_transcode *t = tc_new(ctx, src);
    if (t == NULL) return anvil__nomem(err);
    t->opts = *opts;
    t->build_kvs = transcode_kvs;
    t->summary.threads = opts->threads ? opts->threads : anvil_ctx_threads(ctx);
    int rc = check_types(t, err);
    if (rc == ANVIL_OK) rc = compile_rules(t, err);
    if (rc == ANVIL_OK) rc = decide_all(t, err);
    if (rc == ANVIL_OK) {
        t->summary.dominant_type = tc_dominant_type(t);
        const int ft = anvil_transcode_file_type(t->summary.dominant_type);
        t->summary.file_type = ft >= 0 ? (uint32_t)ft : UINT32_MAX;
        rc = assign_parts(t, err);
    }
    if (rc == ANVIL_OK) rc = transcode_part_paths(t, out_path, err);
    if (rc == ANVIL_OK) rc = tc_layout(t, err);
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
    out->n_parts = t->n_parts; /* known once the plan named its parts */
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

ANVIL_API size_t anvil_transcode_warning_count(const anvil_transcode *t) { return t ? t->n_warnings : 0; }

ANVIL_API const char *anvil_transcode_warning_at(const anvil_transcode *t, size_t i) {
    return (t != NULL && i < t->n_warnings) ? t->warnings[i] : NULL;
}

int tc_src_data(const anvil_transcode *t, const anvil_gguf_tensor *g, uint8_t **buf, uint64_t *cap,
                const uint8_t **data, anvil_error *err) {
    if (!anvil__gguf_has_source(t->src)) {
        *data = g->data;
        return ANVIL_OK;
    }
    if (g->n_bytes > SIZE_MAX - 1)
        return anvil__error_set(err, ANVIL_E_OVERFLOW, "tensor '%s' is too large", g->name);
    if (*buf == NULL || g->n_bytes > *cap) {
        free(*buf);
        *buf = malloc((size_t)g->n_bytes + 1);
        *cap = *buf != NULL ? g->n_bytes : 0;
        if (*buf == NULL) {
            return anvil__error_set(err, ANVIL_E_NOMEM, "tensor '%s': out of memory for its %" PRIu64 " bytes",
                                    g->name, g->n_bytes);
        }
    }
    *data = *buf;
    return anvil__gguf_fill(t->src, g, *buf, err);
}
