/* SPDX-License-Identifier: MIT */
/* The encode_rows contract (sdk/include/anvil/codec.h, ABI 1.1) wrapped
 * around a family's row encoder, so every codec checks rows, input and
 * importance weights the same way and words its refusals the same way. */
#ifndef ANVIL_REF_ROWS_H
#define ANVIL_REF_ROWS_H

#include <stddef.h>

#include "ref/checks.h"

/* Encode one row of n (a whole number of blocks, all finite) into dst,
 * weighted by imatrix (n finite weights, one per column, negative ones too) or
 * not (NULL): the bytes of ggml_quantize_chunk for one row. */
typedef void (*anvil_ref_row_encoder)(const float *x, void *dst, size_t n, const float *imatrix);

/* The same for a row encoder that can refuse a row (the cold lattice
 * searches, where ggml's quantizer aborts): ANVIL_OK, or a status with a
 * message that begins with the format's name and ": ". */
typedef int (*anvil_ref_row_encoder_checked)(const float *x, void *dst, size_t n, const float *imatrix, char *msg,
                                             size_t msg_size);

typedef struct anvil_ref_row_format {
    const char *name; /* ggml's spelling, for messages */
    size_t block_elems;
    size_t block_bytes;
    anvil_ref_row_encoder encode_row;
    /* Instead of encode_row: a refusal stops the rows there, its message
     * naming the row. */
    anvil_ref_row_encoder_checked encode_row_checked;
    /* ggml encodes it only with an importance matrix (IQ2_XXS IQ2_XS
     * IQ1_S): ANVIL_E_NEEDS_IMATRIX without one. */
    int needs_imatrix;
} anvil_ref_row_format;

/* anvil_encode_rows_fn for format f: refuses a row length that is not a
 * whole number of blocks (ANVIL_E_BLOCK_MISMATCH), a size that overflows
 * (ANVIL_E_OVERFLOW), a negative or non-finite importance weight
 * (ANVIL_E_INVALID_ARG, naming the column), a missing one where the
 * format needs it (ANVIL_E_NEEDS_IMATRIX) and NaN/Inf input
 * (ANVIL_E_NONFINITE, naming row and element), then encodes row by row
 * (rows contiguous in src and dst). */
int anvil_ref_encode_rows(const anvil_ref_row_format *f, const float *src, void *dst, size_t nrows, size_t n_per_row,
                          const float *imatrix, char *msg, size_t msg_size);

/* anvil_encode_fn for format f: the shared checks of ref/checks.h, then
 * one unweighted row. */
int anvil_ref_encode_one(const anvil_ref_row_format *f, const float *src, void *dst, size_t n, char *msg,
                         size_t msg_size);

/* Defines a family's two entry points from its row encoder `row_fn`:
 *   int anvil_ref_encode_<type>(src, dst, n, msg, msg_size)   (anvil_encode_fn:
 *       the shared checks of ref/checks.h, then one unweighted row), and
 *   int anvil_ref_encode_rows_<type>(src, dst, nrows, n_per_row, imatrix, msg,
 *       msg_size)   (anvil_encode_rows_fn, through anvil_ref_encode_rows).
 * Both are declared in the family's header. */
#define ANVIL_REF_DEFINE_ENCODERS(type, tname, elems, bytes, row_fn)                                          \
    static const anvil_ref_row_format type##_row_format = { (tname), (elems), (bytes), (row_fn), NULL, 0 };   \
    int anvil_ref_encode_##type(const float *src, void *dst, size_t n, char *msg, size_t msg_size) {          \
        const int rc = anvil_ref_check_encode_input((tname), src, n, (elems), msg, msg_size);                 \
        if (rc != 0) {                                                                                        \
            return rc;                                                                                        \
        }                                                                                                     \
        (row_fn)(src, dst, n, NULL);                                                                          \
        return 0;                                                                                             \
    }                                                                                                         \
    int anvil_ref_encode_rows_##type(const float *src, void *dst, size_t nrows, size_t n_per_row,             \
                                     const float *imatrix, char *msg, size_t msg_size) {                      \
        return anvil_ref_encode_rows(&type##_row_format, src, dst, nrows, n_per_row, imatrix, msg, msg_size); \
    }

/* The same from a block encoder
 *     void block_fn(const float *x, const float *qw, block_t *y)
 * (qw: that block's importance weights, or NULL; y may also be taken as a
 * byte pointer), for formats whose row is just its blocks side by side. */
#define ANVIL_REF_DEFINE_BLOCK_ENCODERS(type, tname, elems, block_t, block_fn)                                    \
    static void type##_encode_row(const float *x, void *dst, size_t n, const float *qw) {                         \
        unsigned char *y = dst;                                                                                   \
        for (size_t i = 0; i < n / (elems); ++i) {                                                                \
            (block_fn)(x + i * (elems), qw != NULL ? qw + i * (elems) : NULL, (void *)(y + i * sizeof(block_t))); \
        }                                                                                                         \
    }                                                                                                             \
    ANVIL_REF_DEFINE_ENCODERS(type, tname, elems, sizeof(block_t), type##_encode_row)

/* The two entry points from a checked row encoder `row_fn`
 * (anvil_ref_row_encoder_checked), as ANVIL_REF_DEFINE_ENCODERS. */
#define ANVIL_REF_DEFINE_CHECKED_ENCODERS(type, tname, elems, bytes, row_fn)                                  \
    static const anvil_ref_row_format type##_row_format = { (tname), (elems), (bytes), NULL, (row_fn), 0 };   \
    int anvil_ref_encode_##type(const float *src, void *dst, size_t n, char *msg, size_t msg_size) {          \
        return anvil_ref_encode_one(&type##_row_format, src, dst, n, msg, msg_size);                          \
    }                                                                                                         \
    int anvil_ref_encode_rows_##type(const float *src, void *dst, size_t nrows, size_t n_per_row,             \
                                     const float *imatrix, char *msg, size_t msg_size) {                      \
        return anvil_ref_encode_rows(&type##_row_format, src, dst, nrows, n_per_row, imatrix, msg, msg_size); \
    }

/* For a format ggml encodes only with an importance matrix: the row-wise
 * entry alone (there is no unweighted output to match), answering
 * ANVIL_E_NEEDS_IMATRIX to none. */
#define ANVIL_REF_DEFINE_WEIGHTED_ENCODER(type, tname, elems, bytes, row_fn)                                  \
    static const anvil_ref_row_format type##_row_format = { (tname), (elems), (bytes), NULL, (row_fn), 1 };   \
    int anvil_ref_encode_rows_##type(const float *src, void *dst, size_t nrows, size_t n_per_row,             \
                                     const float *imatrix, char *msg, size_t msg_size) {                      \
        return anvil_ref_encode_rows(&type##_row_format, src, dst, nrows, n_per_row, imatrix, msg, msg_size); \
    }

#endif
