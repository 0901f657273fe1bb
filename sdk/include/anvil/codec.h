/* SPDX-License-Identifier: MIT */
/*
 * anvil SDK — codec vtable.
 *
 * A codec owns one block format's meaning: geometry, encode, decode, and the
 * activation format its dot product consumes. Kernels live in backends; a
 * codec may additionally carry a reference dot so that a format no backend
 * knows still works in matmul (the host's fallback path).
 */
#ifndef ANVIL_CODEC_H
#define ANVIL_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Encode n elements (a whole number of blocks, checked by the host and again
 * by the codec) from f32 into blocks. Returns ANVIL_OK, or a negative status
 * with a message in msg: ANVIL_E_NONFINITE naming the first bad element
 * index, ANVIL_E_BLOCK_MISMATCH, ... Must be thread-safe and deterministic. */
typedef int (*anvil_encode_fn)(const float *src, void *dst, size_t n, char *msg, size_t msg_size);

/* Decode n elements (a whole number of blocks) to f32. Total: any bit pattern
 * decodes to something and never reads outside the codec's tables. */
typedef void (*anvil_decode_fn)(const void *src, float *dst, size_t n);

/* Dot product of n elements: w holds n/block_elems weight blocks, a holds the
 * matching activation blocks (of the codec's act_type, or f32 when act_type
 * is ANVIL_TYPE_F32). Result in *s. */
typedef void (*anvil_vec_dot_fn)(size_t n, float *s, const void *w, const void *a);

/* ABI 1.1. Encode nrows rows of n_per_row elements each (n_per_row a whole
 * number of blocks; rows contiguous in src and in dst), optionally weighted
 * by an importance matrix: imatrix holds n_per_row finite floats, one per
 * column (negative ones too: llama.cpp passes them to ggml as given), or is
 * NULL. The bytes are exactly those of
 * ggml_quantize_chunk(type, src, dst, 0, nrows, n_per_row, imatrix): with
 * imatrix == NULL that is the same as `encode` for every ggml format except
 * those that need an importance matrix (ANVIL_CODEC_NEEDS_IMATRIX), which
 * answer ANVIL_E_NEEDS_IMATRIX. Same error and thread-safety rules as
 * `encode`; a message names the row and element. */
typedef int (*anvil_encode_rows_fn)(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,
                                    char *msg, size_t msg_size);

/* Codec flags. */
#define ANVIL_CODEC_ACTIVATION (1u << 0)    /* an activation format (Q8_1, Q8_K) */
#define ANVIL_CODEC_NEEDS_IMATRIX (1u << 1) /* ggml encodes it only with an importance matrix */
/* encode_rows accepts an importance matrix and, as ggml's quantize_<type>
 * does, does not use it (Q8_0, TQ1_0, ...): `anvil codec list` says so. */
#define ANVIL_CODEC_IMATRIX_UNUSED (1u << 2)

typedef struct anvil_codec {
    uint32_t struct_size;
    uint32_t type_id;     /* ggml numbering, or 1024..2047 for third parties */
    const char *name;     /* ggml spelling, e.g. "q4_K"; matched case-insensitively */
    const char *family;   /* e.g. "k-quants"; for display */
    uint32_t block_elems; /* elements per block */
    uint32_t block_bytes; /* bytes per block */
    uint32_t act_type;    /* activation format the dot consumes */
    uint32_t flags;       /* ANVIL_CODEC_* */
    /* NULL: no byte-exact encoder (see encode_note). A format flagged
     * ANVIL_CODEC_NEEDS_IMATRIX may set it to a refusal answering
     * ANVIL_E_NEEDS_IMATRIX, so anvil_encode names the missing matrix. */
    anvil_encode_fn encode;
    anvil_decode_fn decode;       /* required */
    anvil_vec_dot_fn ref_vec_dot; /* optional reference dot against act_type */
    const char *encode_note;      /* why encode is NULL (or refuses), shown by `anvil codec list` */
    void *reserved[6];
    /* ---- ABI 1.1 ---- */
    /* Optional: row-wise encoder that takes importance weights (see
     * anvil_encode_rows_fn). NULL: the host encodes row by row with `encode`
     * and refuses an importance matrix for this format. */
    anvil_encode_rows_fn encode_rows;
} anvil_codec;

#ifdef __cplusplus
}
#endif

#endif /* ANVIL_CODEC_H */
