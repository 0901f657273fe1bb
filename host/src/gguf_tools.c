/*
 * Whole-file GGUF operations built on the reader and writer: reemit, split
 * (llama.cpp's gguf-split layout) and merge.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "gguf_internal.h"

/* ggml re-writes bools as 0/1; reemit and merge do the same so that their
 * output matches ggml's for every file ggml accepts. */
#define REWRITE_FLAGS (ANVIL_GGUF_COPY_KVS | ANVIL_GGUF_COPY_TENSORS | ANVIL_GGUF_COPY_CANONICAL_BOOL)

ANVIL_API int anvil_gguf_reemit(const char *in_path, const char *out_path, const anvil_ctx *ctx,
                                anvil_error *err) {
    anvil_gguf *g = NULL;
    anvil_gguf_writer *w = NULL;
    int rc = anvil_gguf_open(&g, in_path, ctx, ANVIL_GGUF_OPEN_SINGLE_PART, err);
    if (rc == ANVIL_OK) {
        rc = anvil_gguf_writer_new(&w, ctx, err);
    }
    if (rc == ANVIL_OK) {
        rc = anvil_gguf_writer_copy_from(w, g, REWRITE_FLAGS, err);
    }
    if (rc == ANVIL_OK) {
        rc = anvil_gguf_writer_write_file(w, out_path, err);
    }
    anvil_gguf_writer_free(w);
    anvil_gguf_close(g);
    return rc;
}

ANVIL_API int anvil_gguf_merge(const char *first_path, const char *out_path, const anvil_ctx *ctx,
                               anvil_error *err) {
    anvil_gguf *g = NULL;
    anvil_gguf_writer *w = NULL;
    int rc = anvil_gguf_open(&g, first_path, ctx, 0, err);
    if (rc == ANVIL_OK) {
        rc = anvil_gguf_writer_new(&w, ctx, err);
    }
    if (rc == ANVIL_OK) {
        rc = anvil_gguf_writer_copy_from(w, g, REWRITE_FLAGS | ANVIL_GGUF_COPY_SKIP_SPLIT_KEYS, err);
    }
    if (rc == ANVIL_OK) {
        rc = anvil_gguf_writer_write_file(w, out_path, err);
    }
    anvil_gguf_writer_free(w);
    anvil_gguf_close(g);
    return rc;
}

/* Part (0-based) of each tensor, as gguf-split's split_strategy decides. */
static int plan_parts(const anvil_gguf *src, uint64_t max_bytes, uint64_t max_tensors,
                      uint32_t *part_of, uint32_t *n_parts, anvil_error *err) {
    const size_t n = anvil_gguf_tensor_count(src);
    uint32_t part = 0;
    uint64_t in_part_bytes = 0;
    size_t in_part_count = 0;
    for (size_t i = 0; i < n; ++i) {
        uint64_t padded;
        if (gguf_pad_overflows(anvil_gguf_tensor_at(src, i)->n_bytes, ANVIL_GGUF_DEFAULT_ALIGNMENT,
                               &padded)) {
            return anvil_error_set(err, ANVIL_E_OVERFLOW, "tensor size overflows");
        }
        int start_new = 0;
        if (in_part_count > 0) {
            if (max_tensors > 0) {
                start_new = in_part_count >= max_tensors;
            } else {
                uint64_t next;
                start_new = gguf_add_overflows(in_part_bytes, padded, &next) || next > max_bytes;
            }
        }
        if (start_new) {
            part++;
            in_part_bytes = 0;
            in_part_count = 0;
        }
        in_part_bytes += padded;
        in_part_count++;
        part_of[i] = part;
    }
    *n_parts = part + 1;
    if (*n_parts > UINT16_MAX) {
        return anvil_error_set(err, ANVIL_E_GGUF_SPLIT,
                               "the split would make %" PRIu32 " parts; split.count is a u16 "
                               "(at most 65535): raise the limit",
                               *n_parts);
    }
    return ANVIL_OK;
}

/* Write part `part` to a held temp file (in place only at the set commit). */
static int write_part(const anvil_gguf *src, const uint32_t *part_of, uint32_t part,
                      uint32_t n_parts, const char *path, anvil_gguf_writer *w,
                      anvil_error *err) {
    int rc = ANVIL_OK;
    if (part == 0) {
        rc = anvil_gguf_writer_copy_from(
            w, src,
            ANVIL_GGUF_COPY_KVS | ANVIL_GGUF_COPY_CANONICAL_BOOL | ANVIL_GGUF_COPY_SKIP_SPLIT_KEYS,
            err);
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
        rc = anvil_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, NULL, t->n_bytes,
                                          err);
    }
    if (rc == ANVIL_OK) {
        rc = anvil_gguf_writer_stream_begin(w, path, err);
    }
    for (size_t i = 0; rc == ANVIL_OK && i < n; ++i) {
        if (part_of[i] == part) {
            const anvil_gguf_tensor *t = anvil_gguf_tensor_at(src, i);
            rc = anvil_gguf_writer_stream_tensor(w, t->data, t->n_bytes, err);
        }
    }
    if (rc == ANVIL_OK) {
        rc = anvil_gguf_writer_stream_hold(w, err);
    }
    return rc;
}

ANVIL_API int anvil_gguf_split_write(const anvil_gguf *src, const char *prefix, uint64_t max_bytes,
                                     uint64_t max_tensors, const anvil_ctx *ctx, uint32_t *n_parts,
                                     anvil_error *err) {
    if (src == NULL || prefix == NULL) {
        return anvil_error_set(err, ANVIL_E_INVALID_ARG, "NULL source or prefix");
    }
    if ((max_bytes == 0) == (max_tensors == 0)) {
        return anvil_error_set(err, ANVIL_E_INVALID_ARG,
                               "give exactly one split limit: a maximum size or a maximum "
                               "tensor count");
    }
    const size_t n = anvil_gguf_tensor_count(src);
    if (n > (size_t)INT32_MAX) {
        return anvil_error_set(err, ANVIL_E_GGUF_SPLIT,
                               "%zu tensors do not fit split.tensors.count (i32)", n);
    }
    uint32_t *part_of = malloc((n > 0 ? n : 1) * sizeof *part_of);
    if (part_of == NULL) {
        return anvil_error_set(err, ANVIL_E_NOMEM, "out of memory");
    }
    uint32_t parts = 1;
    int rc = plan_parts(src, max_bytes, max_tensors, part_of, &parts, err);
    anvil_gguf_writer **w = rc == ANVIL_OK ? calloc(parts, sizeof *w) : NULL;
    if (rc == ANVIL_OK && w == NULL) {
        rc = anvil_error_set(err, ANVIL_E_NOMEM, "out of memory");
    }
    /* Every part complete under a temp name, then all put in place at once:
     * an existing set is replaced whole or not at all. */
    for (uint32_t p = 0; rc == ANVIL_OK && p < parts; ++p) {
        char path[4200];
        rc = anvil_gguf_split_path(path, sizeof path, prefix, p + 1, parts, err);
        if (rc == ANVIL_OK) {
            rc = anvil_gguf_writer_new(&w[p], ctx, err);
        }
        if (rc == ANVIL_OK) {
            rc = write_part(src, part_of, p, parts, path, w[p], err);
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
