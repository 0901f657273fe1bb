/* SPDX-License-Identifier: MIT */
/*
 * anvil — safetensors container.
 *
 * Layout: a u64 little-endian header length N, N bytes of UTF-8 JSON, then
 * one data buffer; every tensor's "data_offsets" [begin, end) are relative to
 * that buffer.
 *
 * Reading. An anvil_st is a validated, read-only view of one safetensors
 * image. It is handed out only after the whole header has passed every rule
 * of the upstream implementation (huggingface/safetensors) plus two of
 * anvil's own (duplicate JSON keys and a malformed __metadata__ are refused);
 * each rule has its own ANVIL_E_ST_* status and a message naming the tensor.
 * Tensors are listed in data-offset order; everything handed out (names,
 * shapes, data) lives as long as the anvil_st.
 *
 * Writing. The writer emits the bytes upstream's serializer emits: tensors
 * sorted by dtype (last-declared dtype first, i.e. descending enum order
 * below), then by name; offsets contiguous in that order; compact JSON with
 * __metadata__ first; the header padded with spaces to a multiple of 8.
 * Upstream keeps __metadata__ in a hash map (its key order is whatever the
 * map yields); anvil writes metadata keys in the order they were given, so a
 * reader -> writer round trip keeps a file's own order.
 */
#ifndef ANVIL_SAFETENSORS_H
#define ANVIL_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "anvil/anvil.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest header upstream accepts (and writes): 100,000,000 bytes. */
#define ANVIL_ST_MAX_HEADER 100000000u

/* Bytes anvil_st_sniff wants to see (fewer is fine: it judges what it gets). */
#define ANVIL_ST_SNIFF_BYTES 64u

/* 1 when the first bytes of a file look like safetensors -- a u64 header
 * length, then JSON (after any whitespace): also a header that is not an
 * object or whose length is over the cap, so the safetensors reader, not
 * the GGUF one, says what is wrong. 0 for GGUF, text and anything else. */
ANVIL_API int anvil_st_sniff(const void *head, size_t n);

/* Upstream's dtypes, in upstream's declaration order (the writer's sort key). */
typedef enum anvil_st_dtype {
    ANVIL_ST_BOOL = 0,
    ANVIL_ST_F4,
    ANVIL_ST_F6_E2M3,
    ANVIL_ST_F6_E3M2,
    ANVIL_ST_U8,
    ANVIL_ST_I8,
    ANVIL_ST_F8_E5M2,
    ANVIL_ST_F8_E4M3,
    ANVIL_ST_F8_E8M0,
    ANVIL_ST_F8_E4M3FNUZ,
    ANVIL_ST_F8_E5M2FNUZ,
    ANVIL_ST_I16,
    ANVIL_ST_U16,
    ANVIL_ST_F16,
    ANVIL_ST_BF16,
    ANVIL_ST_I32,
    ANVIL_ST_U32,
    ANVIL_ST_F32,
    ANVIL_ST_C64,
    ANVIL_ST_F64,
    ANVIL_ST_I64,
    ANVIL_ST_U64,
    ANVIL_ST_DTYPE_COUNT
} anvil_st_dtype;

/* "F32", ..., or NULL for a value outside the enum. */
ANVIL_API const char *anvil_st_dtype_name(anvil_st_dtype dtype);
/* Exact (case-sensitive, as on the wire) name -> dtype; ANVIL_E_ST_DTYPE if unknown. */
ANVIL_API int anvil_st_dtype_from_name(const char *name, anvil_st_dtype *out);
/* Bits per element (4 for F4, 6 for F6_*, 64 for C64); 0 outside the enum. */
ANVIL_API unsigned anvil_st_dtype_bits(anvil_st_dtype dtype);

/* One tensor, as a view into the image. */
typedef struct anvil_st_tensor {
    const char *name; /* UTF-8, NUL-terminated */
    anvil_st_dtype dtype;
    size_t rank;           /* 0 for a scalar */
    const uint64_t *shape; /* rank dims, outermost first (row-major) */
    uint64_t n_elements;   /* product of shape (1 for a scalar) */
    uint64_t begin, end;   /* data_offsets, relative to the data buffer */
    const void *data;      /* end - begin bytes, little-endian */
    uint64_t size;         /* end - begin */
} anvil_st_tensor;

typedef struct anvil_st anvil_st;

/* ---- reading ------------------------------------------------------------ */

/* Validate a whole image held by the caller. The anvil_st borrows `bytes`:
 * keep them alive and unchanged until anvil_st_close. */
ANVIL_API int anvil_st_parse(anvil_st **out, const void *bytes, size_t size, anvil_error *err);
/* Same, on a private copy of the bytes (the caller's buffer may go away). */
ANVIL_API int anvil_st_parse_copy(anvil_st **out, const void *bytes, size_t size, anvil_error *err);
/* Memory-map a file read-only and validate it. */
ANVIL_API int anvil_st_open(anvil_st **out, const char *path, anvil_error *err);

/* Read exactly one frame (length, header, precisely the data it describes)
 * from a stream, leaving the position right after it, so several frames can
 * share one stream. At a clean end of stream (EOF before the first byte)
 * returns ANVIL_OK with *out == NULL. A stream that ends inside a frame is
 * ANVIL_E_ST_TOO_SMALL (inside the length), ANVIL_E_ST_HEADER_PAST_END
 * (inside the header) or ANVIL_E_TRUNCATED (inside the data). After any
 * error the position is somewhere inside the bad frame. */
ANVIL_API int anvil_st_read_frame_fd(anvil_st **out, int fd, anvil_error *err);
ANVIL_API int anvil_st_read_frame_file(anvil_st **out, FILE *stream, anvil_error *err);

ANVIL_API void anvil_st_close(anvil_st *st);

/* Tensors in data-offset order. */
ANVIL_API size_t anvil_st_count(const anvil_st *st);
ANVIL_API const anvil_st_tensor *anvil_st_tensor_at(const anvil_st *st, size_t i);
/* By exact name, or NULL. */
ANVIL_API const anvil_st_tensor *anvil_st_find(const anvil_st *st, const char *name);

/* __metadata__: present (an object, possibly empty) or absent (missing or
 * null); entries in the file's order. */
ANVIL_API int anvil_st_has_metadata(const anvil_st *st);
ANVIL_API size_t anvil_st_metadata_count(const anvil_st *st);
ANVIL_API int anvil_st_metadata_at(const anvil_st *st, size_t i, const char **key, const char **value);
/* Value for key, or NULL. */
ANVIL_API const char *anvil_st_metadata_get(const anvil_st *st, const char *key);

/* Header length N as stored, and the data buffer's size. */
ANVIL_API uint64_t anvil_st_header_size(const anvil_st *st);
ANVIL_API uint64_t anvil_st_data_size(const anvil_st *st);

/* Decode a F32, F16 or BF16 tensor into n == t->n_elements floats. Other
 * dtypes answer ANVIL_E_ST_CONVERSION (raw bytes are still in t->data). */
ANVIL_API int anvil_st_tensor_to_f32(const anvil_st_tensor *t, float *dst, size_t n, anvil_error *err);

/* ---- writing ------------------------------------------------------------ */

typedef struct anvil_st_writer anvil_st_writer;

ANVIL_API int anvil_st_writer_new(anvil_st_writer **out, anvil_error *err);
ANVIL_API void anvil_st_writer_free(anvil_st_writer *w);

/* Add a tensor. `data` (size bytes) is borrowed until the writer is freed;
 * size must equal shape x dtype bits / 8 (whole bytes). Names are UTF-8 and
 * unique; "__metadata__" is reserved. */
ANVIL_API int anvil_st_writer_add(anvil_st_writer *w, const char *name, anvil_st_dtype dtype, const uint64_t *shape,
                                  size_t rank, const void *data, uint64_t size, anvil_error *err);
/* Set one __metadata__ entry (keys unique: setting a key again replaces its
 * value in place). Any call makes __metadata__ present. */
ANVIL_API int anvil_st_writer_set_metadata(anvil_st_writer *w, const char *key, const char *value, anvil_error *err);
/* Emit "__metadata__":{} even with no entries (upstream's Some(empty map)). */
ANVIL_API void anvil_st_writer_keep_empty_metadata(anvil_st_writer *w);
/* Add every tensor of st (borrowing its data) and copy its __metadata__. */
ANVIL_API int anvil_st_writer_add_all(anvil_st_writer *w, const anvil_st *st, anvil_error *err);

/* The whole image in one malloc'd buffer (free() it). */
ANVIL_API int anvil_st_writer_serialize(const anvil_st_writer *w, void **out, size_t *size, anvil_error *err);
/* Write one frame at the stream's current position. */
ANVIL_API int anvil_st_writer_write_fd(const anvil_st_writer *w, int fd, anvil_error *err);
ANVIL_API int anvil_st_writer_write_file(const anvil_st_writer *w, FILE *stream, anvil_error *err);
/* Save atomically: write a temp file in PATH's folder, fsync, rename over
 * PATH, fsync the folder. On any error before the rename the temp file is
 * removed and PATH is untouched. A PATH that is a device, a FIFO or "-" is
 * written into instead (see anvil_file_write_atomic in anvil.h). */
ANVIL_API int anvil_st_writer_save(const anvil_st_writer *w, const char *path, anvil_error *err);

#ifdef __cplusplus
}
#endif

#endif /* ANVIL_SAFETENSORS_H */
