/* SPDX-License-Identifier: MIT */
/*
 * anvil — importance matrices as llama-imatrix collects, saves, loads and
 * combines them: per weight matrix the raw sum of squares of each input
 * column ("in_sum2") and the rows seen ("counts"), per expert for 3-D
 * expert tensors.
 *
 * Contract:
 *  - anvil_imat_collect runs the model (anvil/model.h) over chunks of
 *    n_ctx tokens (BOS first when the vocabulary adds one) and adds, for
 *    every matrix product of a blk.* weight (and output.weight with
 *    process_output), each input row's squares to its weight's sums, in
 *    token order, in f32 -- as llama-imatrix's collect_imatrix does from
 *    ggml's eval callback. Dense weights keep one count; expert tensors one
 *    per expert (the tokens routed to it). The result does not depend on the
 *    thread count.
 *  - anvil_imat_save writes the GGUF llama-imatrix writes (general.type =
 *    imatrix, imatrix.datasets, imatrix.chunk_count, imatrix.chunk_size;
 *    names sorted, "<name>.in_sum2" [n_per, n_mat] and "<name>.counts"
 *    [1, n_mat], F32) or its legacy .dat (sums / count * ncall), atomically.
 *  - anvil_imat_load reads either (raw, as llama-imatrix --in-file does: a
 *    .dat's values times the chunk size); anvil_imat_merge adds one into
 *    another and refuses a matrix of another shape.
 *  - Hostile files: every length is checked before use; a failure names
 *    the entry and what to do.
 */
#ifndef ANVIL_IMAT_H
#define ANVIL_IMAT_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/anvil.h"
#include "anvil/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct anvil_imat anvil_imat;

typedef struct anvil_imat_entry {
    const char *name;      /* the weight's name, e.g. blk.0.attn_q.weight */
    const float *sums;     /* n_mat x n_per raw sums of squares */
    const int64_t *counts; /* n_mat rows seen (one for a dense weight) */
    uint32_t n_per, n_mat;
} anvil_imat_entry;

ANVIL_API int anvil_imat_new(anvil_imat **out, anvil_error *err);
ANVIL_API void anvil_imat_free(anvil_imat *im);
ANVIL_API size_t anvil_imat_count(const anvil_imat *im);
/* Entries in name order. */
ANVIL_API int anvil_imat_entry_at(const anvil_imat *im, size_t i, anvil_imat_entry *out);
ANVIL_API const char *anvil_imat_dataset_at(const anvil_imat *im, size_t i); /* NULL past the end */
ANVIL_API int anvil_imat_add_dataset(anvil_imat *im, const char *name, anvil_error *err);
/* imatrix.chunk_size (tokens a chunk) and imatrix.chunk_count (the largest
 * count / chunk_size). */
ANVIL_API uint32_t anvil_imat_chunk_size(const anvil_imat *im);
ANVIL_API uint32_t anvil_imat_chunk_count(const anvil_imat *im);
ANVIL_API void anvil_imat_set_chunk_size(anvil_imat *im, uint32_t chunk_size);
/* Add n_rows rows of n_cols values to entry name's matrix mat of n_mat
 * (created on first use; a different shape is an error). */
ANVIL_API int anvil_imat_accumulate(anvil_imat *im, const char *name, uint32_t mat, uint32_t n_mat, const float *x,
                                    size_t n_rows, size_t n_cols, anvil_error *err);

typedef struct anvil_imat_opts {
    size_t size;        /* sizeof(anvil_imat_opts) */
    int n_ctx;          /* tokens a chunk (512 when <= 0; at least 16) */
    int n_chunks;       /* at most this many chunks; <= 0: all */
    int process_output; /* also collect output.weight */
    /* Called after each chunk (may be NULL). */
    void (*progress)(void *arg, int chunk, int n_chunks, double seconds);
    void *progress_arg;
} anvil_imat_opts;

/* Collect over tokens (as llama_tokenize gives them) into im (its chunk
 * size is set to n_ctx). Fewer than 2 * n_ctx tokens is an error saying how
 * many are needed (llama-imatrix's rule). *seconds (may be NULL): time in
 * the model. */
ANVIL_API int anvil_imat_collect(anvil_model *m, const int32_t *tokens, size_t n, const anvil_imat_opts *opts,
                                 anvil_imat *im, double *seconds, anvil_error *err);

enum { ANVIL_IMAT_GGUF = 0, ANVIL_IMAT_DAT = 1 };
ANVIL_API int anvil_imat_save(const anvil_imat *im, const char *path, int format, anvil_error *err);
/* GGUF or .dat (by content). legacy_chunk_size multiplies a .dat's values
 * back to raw sums (llama-imatrix: its -c, 512 by default). *format (may be
 * NULL) says which it was. */
ANVIL_API int anvil_imat_load(anvil_imat **out, const char *path, uint32_t legacy_chunk_size, int *format,
                              anvil_error *err);
ANVIL_API int anvil_imat_load_buffer(anvil_imat **out, const void *data, size_t size, uint32_t legacy_chunk_size,
                                     int *format, anvil_error *err);
/* dst += src (sums and counts; src's datasets appended); an entry of
 * another shape is an error naming it (an imatrix of another model). */
ANVIL_API int anvil_imat_merge(anvil_imat *dst, const anvil_imat *src, anvil_error *err);

#ifdef __cplusplus
}
#endif

#endif /* ANVIL_IMAT_H */
