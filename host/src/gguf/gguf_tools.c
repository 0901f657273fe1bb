/* SPDX-License-Identifier: MIT */
/*
 * Whole-file GGUF operations built on the reader and writer: reemit, split
 * (llama.cpp's gguf-split layout) and merge.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "file_set.h"
#include "gguf_internal.h"

/* ggml re-writes bools as 0/1; reemit and merge do the same so that their
 * output matches ggml's for every file ggml accepts. */
#define REWRITE_FLAGS (ANVIL_GGUF_COPY_KVS | ANVIL_GGUF_COPY_TENSORS | ANVIL_GGUF_COPY_CANONICAL_BOOL)

ANVIL_API void anvil_gguf_write_options_init(anvil_gguf_write_options *o) {
    if (o != NULL) {
        memset(o, 0, sizeof *o);
        o->struct_size = sizeof *o;
    }
}

/* The caller's options, read no further than its struct_size. */
static anvil_gguf_write_options read_options(const anvil_gguf_write_options *in) {
    anvil_gguf_write_options o;
    anvil_gguf_write_options_init(&o);
    if (in != NULL) {
        const size_t n = in->struct_size < sizeof o ? in->struct_size : sizeof o;
        memcpy(&o, in, n);
        o.struct_size = sizeof o;
    }
    return o;
}

/* Open, copy with flags, write out_path (reemit and merge). */
static int rewrite(const char *in_path, unsigned open_flags, unsigned copy_flags, const char *out_path,
                   const anvil_ctx *ctx, const anvil_gguf_write_options *opts, anvil_error *err) {
    const anvil_gguf_write_options o = read_options(opts);
    anvil_gguf *g = NULL;
    anvil_gguf_writer *w = NULL;
    int rc = anvil_gguf_open(&g, in_path, ctx, open_flags, err);
    if (rc == ANVIL_OK) {
        rc = anvil_gguf_writer_new(&w, ctx, err);
    }
    if (rc == ANVIL_OK) {
        anvil_gguf_writer_set_progress(w, o.progress, o.progress_arg);
        rc = anvil_gguf_writer_copy_from(w, g, copy_flags, err);
    }
    if (rc == ANVIL_OK) {
        rc = anvil_gguf_writer_write_file(w, out_path, err);
    }
    anvil_gguf_writer_free(w);
    anvil_gguf_close(g);
    return rc;
}

ANVIL_API int anvil_gguf_reemit_ex(const char *in_path, const char *out_path, const anvil_ctx *ctx,
                                   const anvil_gguf_write_options *opts, anvil_error *err) {
    return rewrite(in_path, ANVIL_GGUF_OPEN_SINGLE_PART, REWRITE_FLAGS, out_path, ctx, opts, err);
}

ANVIL_API int anvil_gguf_reemit(const char *in_path, const char *out_path, const anvil_ctx *ctx, anvil_error *err) {
    return anvil_gguf_reemit_ex(in_path, out_path, ctx, NULL, err);
}

ANVIL_API int anvil_gguf_merge_ex(const char *first_path, const char *out_path, const anvil_ctx *ctx,
                                  const anvil_gguf_write_options *opts, anvil_error *err) {
    return rewrite(first_path, 0, REWRITE_FLAGS | ANVIL_GGUF_COPY_SKIP_SPLIT_KEYS, out_path, ctx, opts, err);
}

ANVIL_API int anvil_gguf_merge(const char *first_path, const char *out_path, const anvil_ctx *ctx, anvil_error *err) {
    return anvil_gguf_merge_ex(first_path, out_path, ctx, NULL, err);
}

/* Part (0-based) of each tensor, as gguf-split's split_strategy decides. */
static int plan_parts(const anvil_gguf *src, const anvil_gguf_write_options *o, uint32_t *part_of, uint32_t *n_parts,
                      anvil_error *err) {
    const size_t n = anvil_gguf_tensor_count(src);
    const uint64_t max_bytes = o->split_max_bytes, max_tensors = o->split_max_tensors;
    /* --no-tensor-first-split: part 1 keeps the metadata, tensors start in 2. */
    const uint32_t first = (o->split_flags & ANVIL_GGUF_SPLIT_NO_TENSOR_FIRST) ? 1 : 0;
    uint32_t part = first;
    uint64_t in_part_bytes = 0;
    size_t in_part_count = 0;
    for (size_t i = 0; i < n; ++i) {
        uint64_t padded;
        if (gguf_pad_overflows(anvil_gguf_tensor_at(src, i)->n_bytes, ANVIL_GGUF_DEFAULT_ALIGNMENT, &padded)) {
            return anvil__error_set(err, ANVIL_E_OVERFLOW, "tensor size overflows");
        }
        if (gguf_split_starts_part(in_part_count, in_part_bytes, padded, max_bytes, max_tensors)) {
            part++;
            in_part_bytes = 0;
            in_part_count = 0;
        }
        in_part_bytes += padded;
        in_part_count++;
        part_of[i] = part;
    }
    /* With no tensors there is still one part (and, without tensors in part
     * 1, a second one would be empty: gguf-split refuses that too). */
    *n_parts = n > 0 ? part + 1 : 1;
    if (*n_parts > UINT16_MAX) {
        return anvil__error_set(err, ANVIL_E_GGUF_SPLIT,
                                "the split would make %" PRIu32 " parts; split.count is a u16 "
                                "(at most 65535): raise the limit",
                                *n_parts);
    }
    return ANVIL_OK;
}

static int check_split_options(const anvil_gguf *src, const anvil_gguf_write_options *o, anvil_error *err) {
    if (src == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL source");
    }
    if ((o->split_max_bytes == 0) == (o->split_max_tensors == 0)) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "give exactly one split limit: a maximum size or a maximum "
                                "tensor count");
    }
    const size_t n = anvil_gguf_tensor_count(src);
    if (n > (size_t)INT32_MAX) {
        return anvil__error_set(err, ANVIL_E_GGUF_SPLIT, "%zu tensors do not fit split.tensors.count (i32)", n);
    }
    return ANVIL_OK;
}

ANVIL_API int anvil_gguf_split_plan(const anvil_gguf *src, const anvil_gguf_write_options *opts, uint32_t *part_of,
                                    uint32_t *n_parts, anvil_error *err) {
    const anvil_gguf_write_options o = read_options(opts);
    int rc = check_split_options(src, &o, err);
    if (rc == ANVIL_OK && (n_parts == NULL || (part_of == NULL && anvil_gguf_tensor_count(src)))) {
        rc = anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL part_of or n_parts");
    }
    return rc == ANVIL_OK ? plan_parts(src, &o, part_of, n_parts, err) : rc;
}

/* The progress of one part's writer, reported for the whole set. */
typedef struct set_progress {
    const anvil_gguf_write_options *o;
    size_t tensors_before, n_tensors;
    uint64_t bytes_before, bytes_total;
    uint32_t part, n_parts;
} set_progress;

static void part_progress(void *arg, const anvil_gguf_progress *p) {
    const set_progress *s = arg;
    const anvil_gguf_progress q = { s->tensors_before + p->tensor,
                                    s->n_tensors,
                                    s->bytes_before + p->bytes_done,
                                    s->bytes_total,
                                    p->name,
                                    s->part,
                                    s->n_parts };
    s->o->progress(s->o->progress_arg, &q);
}

/* Write part `part` to a held temp file, put in place only by the set
 * commit (*held receives its writer), or (path NULL) only measure it: *size. */
static int write_part(const anvil_gguf *src, const uint32_t *part_of, uint32_t part, uint32_t n_parts,
                      const char *path, const anvil_ctx *ctx, set_progress *progress, uint64_t *size,
                      anvil_gguf_writer **held, anvil_error *err) {
    anvil_gguf_writer *w = NULL;
    int rc = anvil_gguf_writer_new(&w, ctx, err);
    if (rc == ANVIL_OK && progress != NULL && progress->o->progress != NULL) {
        anvil_gguf_writer_set_progress(w, part_progress, progress);
    }
    if (rc == ANVIL_OK && part == 0) {
        rc = anvil_gguf_writer_copy_from(
            w, src, ANVIL_GGUF_COPY_KVS | ANVIL_GGUF_COPY_CANONICAL_BOOL | ANVIL_GGUF_COPY_SKIP_SPLIT_KEYS, err);
    }
    /* gguf-split sets no, count (placeholder), tensors.count, then sets
     * count again, which moves it last. */
    const size_t n = anvil_gguf_tensor_count(src);
    if (rc == ANVIL_OK) {
        rc = anvil_gguf_writer_set_u16(w, ANVIL_GGUF_KEY_SPLIT_NO, (uint16_t)part, err);
    }
    if (rc == ANVIL_OK) {
        rc = anvil_gguf_writer_set_i32(w, ANVIL_GGUF_KEY_SPLIT_TENSORS, (int32_t)n, err);
    }
    if (rc == ANVIL_OK) {
        rc = anvil_gguf_writer_set_u16(w, ANVIL_GGUF_KEY_SPLIT_COUNT, (uint16_t)n_parts, err);
    }
    for (size_t i = 0; rc == ANVIL_OK && i < n; ++i) {
        if (part_of[i] != part) {
            continue;
        }
        const anvil_gguf_tensor *t = anvil_gguf_tensor_at(src, i);
        rc = anvil_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, NULL, t->n_bytes, err);
    }
    if (rc == ANVIL_OK && path == NULL) {
        rc = anvil_gguf_writer_file_size(w, size, err);
    } else if (rc == ANVIL_OK) {
        rc = anvil_gguf_writer_stream_begin(w, path, err);
        for (size_t i = 0; rc == ANVIL_OK && i < n; ++i) {
            if (part_of[i] == part) {
                const anvil_gguf_tensor *t = anvil_gguf_tensor_at(src, i);
                rc = anvil_gguf_writer_stream_tensor(w, t->data, t->n_bytes, err);
            }
        }
        if (rc == ANVIL_OK) {
            rc = anvil_gguf_writer_stream_hold(w, err);
        }
        if (rc == ANVIL_OK) {
            *held = w;
            w = NULL;
        }
    }
    anvil_gguf_writer_free(w);
    return rc;
}

ANVIL_API int anvil_gguf_split_part_size(const anvil_gguf *src, const uint32_t *part_of, uint32_t part,
                                         uint32_t n_parts, const anvil_ctx *ctx, uint64_t *bytes, size_t *n_tensors,
                                         anvil_error *err) {
    if (src == NULL || bytes == NULL || part >= n_parts || (part_of == NULL && anvil_gguf_tensor_count(src) > 0)) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "bad arguments to anvil_gguf_split_part_size");
    }
    if (n_tensors != NULL) {
        *n_tensors = 0;
        for (size_t i = 0; i < anvil_gguf_tensor_count(src); ++i) {
            *n_tensors += part_of[i] == part;
        }
    }
    return write_part(src, part_of, part, n_parts, NULL, ctx, NULL, bytes, NULL, err);
}

ANVIL_API int anvil_gguf_split_write_ex(const anvil_gguf *src, const char *prefix,
                                        const anvil_gguf_write_options *opts, const anvil_ctx *ctx, uint32_t *n_parts,
                                        anvil_error *err) {
    const anvil_gguf_write_options o = read_options(opts);
    if (prefix == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL prefix");
    }
    int rc = check_split_options(src, &o, err);
    if (rc != ANVIL_OK) {
        return rc;
    }
    const size_t n = anvil_gguf_tensor_count(src);
    uint32_t *part_of = malloc((n > 0 ? n : 1) * sizeof *part_of);
    if (part_of == NULL) {
        return anvil__nomem(err);
    }
    uint32_t parts = 1;
    rc = plan_parts(src, &o, part_of, &parts, err);
    set_progress progress = { &o, 0, n, 0, 0, 0, parts };
    for (size_t i = 0; i < n; ++i) {
        progress.bytes_total += anvil_gguf_tensor_at(src, i)->n_bytes;
    }
    anvil_gguf_writer **w = rc == ANVIL_OK ? calloc(parts, sizeof *w) : NULL;
    if (rc == ANVIL_OK && w == NULL) {
        rc = anvil__nomem(err);
    }
    /* Every part a file that can be replaced, before any is written. */
    for (uint32_t p = 0; rc == ANVIL_OK && p < parts; ++p) {
        char path[4200];
        rc = anvil_gguf_split_path(path, sizeof path, prefix, p + 1, parts, err);
        if (rc == ANVIL_OK) rc = file_set_check_part(path, err);
    }
    /* Every part complete under a temp name, then all put in place at once:
     * an existing set is replaced whole or not at all (file_set.h). */
    for (uint32_t p = 0; rc == ANVIL_OK && p < parts; ++p) {
        char path[4200];
        progress.part = p + 1;
        rc = anvil_gguf_split_path(path, sizeof path, prefix, p + 1, parts, err);
        if (rc == ANVIL_OK) {
            rc = write_part(src, part_of, p, parts, path, ctx, &progress, NULL, &w[p], err);
        }
        if (rc == ANVIL_OK) {
            for (size_t i = 0; i < n; ++i) {
                if (part_of[i] == p) {
                    progress.tensors_before++;
                    progress.bytes_before += anvil_gguf_tensor_at(src, i)->n_bytes;
                }
            }
        }
    }
    if (rc == ANVIL_OK) {
        rc = anvil_gguf_writer_commit_set(w, parts, err);
    }
    for (uint32_t p = 0; w != NULL && p < parts; ++p) {
        anvil_gguf_writer_free(w[p]); /* drops the temps of a failed run */
    }
    free(w);
    if (rc == ANVIL_OK && n_parts != NULL) {
        *n_parts = parts;
    }
    free(part_of);
    return rc;
}

ANVIL_API int anvil_gguf_split_write(const anvil_gguf *src, const char *prefix, uint64_t max_bytes,
                                     uint64_t max_tensors, const anvil_ctx *ctx, uint32_t *n_parts,
                                     anvil_error *err) {
    anvil_gguf_write_options o;
    anvil_gguf_write_options_init(&o);
    o.split_max_bytes = max_bytes;
    o.split_max_tensors = max_tensors;
    return anvil_gguf_split_write_ex(src, prefix, &o, ctx, n_parts, err);
}
