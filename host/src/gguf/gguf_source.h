/* SPDX-License-Identifier: MIT */
/*
 * Internal: a GGUF whose tensor data is produced on demand.
 *
 * anvil__gguf_open_source opens the header of a file that was never
 * written (its KVs and tensor directory, laid out for a file of file_size
 * bytes): every reader of KVs and tensor infos sees an ordinary anvil_gguf,
 * but each tensor's data is NULL. anvil__gguf_fill writes a tensor's bytes
 * (n_bytes of them, in its stored type) into a caller's buffer by calling
 * the source's fill function, which is what the file would hold. The
 * quantize and transcode engines read a Hugging Face folder this way
 * (hf_convert.c): converted tensor by tensor, no intermediate file. The
 * gguf owns the source: anvil_gguf_close calls its free function.
 */
#ifndef ANVIL_HOST_GGUF_SOURCE_H
#define ANVIL_HOST_GGUF_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/anvil.h"
#include "anvil/gguf.h"

/* Fill tensor `index` (directory order) into dst (n_bytes bytes). */
typedef int (*anvil__gguf_fill_fn)(void *arg, size_t index, void *dst, uint64_t n_bytes, anvil_error *err);

/* Optional: output rows [row0, row0 + n_rows) of tensor `index` (rows of
 * ne[0] values, n_bytes in its stored type), for a tensor rows_ok says
 * 1 for: what the whole fill would hold there. */
typedef int (*anvil__gguf_fill_rows_fn)(void *arg, size_t index, uint64_t row0, uint64_t n_rows, void *dst,
                                        uint64_t n_bytes, anvil_error *err);
typedef int (*anvil__gguf_rows_ok_fn)(void *arg, size_t index);

typedef struct anvil__gguf_source {
    anvil__gguf_fill_fn fill;
    anvil__gguf_fill_rows_fn fill_rows; /* NULL: whole tensors only */
    anvil__gguf_rows_ok_fn rows_ok;
    void (*free_arg)(void *arg);
    void *arg;
    uint8_t *header; /* owned copy of the header bytes */
} anvil__gguf_source;

/* Parse header[0..header_size) (copied) as the start of a file_size-byte
 * GGUF; on success the gguf owns arg (freed with free_arg at close), on
 * failure the caller still does. */
int anvil__gguf_open_source(anvil_gguf **out, const void *header, size_t header_size, uint64_t file_size,
                            anvil__gguf_fill_fn fill, void (*free_arg)(void *), void *arg, const anvil_ctx *ctx,
                            anvil_error *err);
/* Give g's source (anvil__gguf_open_source) a row-range fill. */
void anvil__gguf_source_rows(anvil_gguf *g, anvil__gguf_fill_rows_fn fill_rows, anvil__gguf_rows_ok_fn rows_ok);
/* 1 when tensor t of g (source-filled) can be filled a range of rows at
 * a time; then anvil__gguf_fill_rows puts rows [row0, row0 + n_rows) of
 * it (n_rows * its row bytes) into dst. */
int anvil__gguf_can_fill_rows(const anvil_gguf *g, const anvil_gguf_tensor *t);
int anvil__gguf_fill_rows(const anvil_gguf *g, const anvil_gguf_tensor *t, uint64_t row0, uint64_t n_rows, void *dst,
                          anvil_error *err);
/* 1 when g's tensor data comes from a source (data pointers are NULL). */
int anvil__gguf_has_source(const anvil_gguf *g);
/* Tensor t of g (one of g's own) into dst: from its source, or copied
 * from the mapping. dst holds t->n_bytes bytes. */
int anvil__gguf_fill(const anvil_gguf *g, const anvil_gguf_tensor *t, void *dst, anvil_error *err);

#endif
