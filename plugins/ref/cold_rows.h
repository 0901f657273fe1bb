/*
 * The row-wise, importance-weighted entry of the cold encoders (the codec
 * ABI's encode_rows): what ggml_quantize_chunk(type, src, dst, 0, nrows,
 * n_per_row, imatrix) does for these formats, i.e. each row encoded on its
 * own with the same importance weights, one per column. Private to
 * cold_*.c.
 *
 * anvil_cold_encode_rows checks everything once, then runs a format's row
 * encoder row by row:
 *  - ANVIL_E_BLOCK_MISMATCH: rows that are not whole blocks;
 *  - ANVIL_E_OVERFLOW: nrows * n_per_row does not fit size_t;
 *  - ANVIL_E_NEEDS_IMATRIX: no importance matrix for a format ggml encodes
 *    only with one (IQ2_XXS, IQ2_XS, IQ1_S: llama.cpp's reason);
 *  - ANVIL_E_INVALID_ARG: an importance weight negative, NaN or infinite;
 *  - ANVIL_E_NONFINITE: NaN/Inf in the input, naming row and element;
 *  - a row encoder's own refusal, prefixed with its row.
 * dst may hold partial output after a refusal.
 */
#ifndef ANVIL_REF_COLD_ROWS_H
#define ANVIL_REF_COLD_ROWS_H

#include <stddef.h>

/* Encodes one row of n elements (whole blocks, all finite) with importance
 * weights qw[0..n) (NULL: the format's unweighted path). Messages begin
 * with the format's name and ": ". */
typedef int (*cold_row_encoder)(const float *x, void *dst, size_t n, const float *qw, char *msg,
                                size_t msg_size);

typedef struct cold_rows_format {
    const char *name;
    size_t block_elems;
    size_t block_bytes;
    int needs_imatrix; /* ggml_quantize_requires_imatrix */
    cold_row_encoder encode_row;
} cold_rows_format;

int anvil_cold_encode_rows(const cold_rows_format *f, const float *src, void *dst, size_t nrows,
                           size_t n_per_row, const float *imatrix, char *msg, size_t msg_size);

/* The single-row encoder of the codec ABI (anvil_encode_fn) over the same
 * row encoder, unweighted: the length and finiteness checks every encoder
 * shares, then the row. */
int anvil_cold_encode_one(const cold_rows_format *f, const float *src, void *dst, size_t n, char *msg,
                          size_t msg_size);

#endif
