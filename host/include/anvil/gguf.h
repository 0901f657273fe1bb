/* SPDX-License-Identifier: MIT */
/*
 * anvil — GGUF container: a hardened reader and a writer byte-identical to
 * ggml's gguf_write_to_file.
 *
 * A GGUF file is a table of contents plus bytes: magic "GGUF", u32 version,
 * u64 tensor count, u64 KV count, the KVs (string key, typed value), the
 * tensor directory (name, n_dims, dims innermost-first, type id, offset),
 * padding to general.alignment (default 32), then each tensor's bytes padded
 * to the alignment. All little-endian.
 *
 * Reading. anvil_gguf_open() maps the file read-only (the descriptor is
 * closed once mapped) and validates the whole table of contents before
 * handing anything out. Every value, array and tensor handed out is a VIEW
 * into the mapping: it lives as long as the anvil_gguf object, or as long as
 * the anvil_gguf_mapping taken from it with anvil_gguf_take_mapping(). Keys
 * and tensor names are the one exception: they are copied once at open so
 * they can be handed out as C strings (their length is given too, so a name
 * holding a NUL byte is still represented exactly).
 *
 * Opening `name-00001-of-0000N.gguf` whose split.count says N > 1 opens all N
 * parts as one view: metadata from part 1, tensors from every part. A set
 * anvil wrote carries a mark on every part (an extended attribute, never a
 * byte of the file); parts whose marks disagree are refused, naming the
 * part. A set whose replacement was interrupted (killed writer) is read as
 * the complete old or the complete new set, never a mix.
 *
 * Writing. An anvil_gguf_writer collects KVs (in insertion order; setting a
 * key again moves it to the end, as ggml does) and tensors, then writes
 * version 3 to a temporary file in the destination folder and renames it into
 * place, either in one go (buffered) or header-first with tensor bytes
 * streamed in declaration order. Both produce the same bytes.
 *
 * Byte identity with ggml holds for everything ggml itself writes
 * consistently. Two deliberate differences where ggml's writer would emit a
 * file its own reader mis-sizes or refuses: a trailing dim of 0 is kept
 * (ggml_n_dims drops it: [4, 0] would be written as [4] with no data), and a
 * general.alignment set on the writer is the padding used (ggml pads to 32
 * after gguf_set_val_u32("general.alignment", ...) on a fresh context).
 *
 * Every fallible call returns ANVIL_OK (0) or a negative anvil_status and,
 * given an anvil_error, leaves a message there.
 */
#ifndef ANVIL_GGUF_H
#define ANVIL_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/anvil.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- wire constants ----------------------------------------------------- */

/* KV value wire types (i32 on disk). */
typedef enum anvil_gguf_type {
    ANVIL_GGUF_TYPE_U8 = 0,
    ANVIL_GGUF_TYPE_I8 = 1,
    ANVIL_GGUF_TYPE_U16 = 2,
    ANVIL_GGUF_TYPE_I16 = 3,
    ANVIL_GGUF_TYPE_U32 = 4,
    ANVIL_GGUF_TYPE_I32 = 5,
    ANVIL_GGUF_TYPE_F32 = 6,
    ANVIL_GGUF_TYPE_BOOL = 7,
    ANVIL_GGUF_TYPE_STRING = 8,
    ANVIL_GGUF_TYPE_ARRAY = 9,
    ANVIL_GGUF_TYPE_U64 = 10,
    ANVIL_GGUF_TYPE_I64 = 11,
    ANVIL_GGUF_TYPE_F64 = 12
} anvil_gguf_type;

#define ANVIL_GGUF_TYPE_COUNT 13
#define ANVIL_GGUF_VERSION_WRITTEN 3u
#define ANVIL_GGUF_DEFAULT_ALIGNMENT 32u
#define ANVIL_GGUF_MAX_ALIGNMENT (1u << 20)
#define ANVIL_GGUF_MAX_DIMS 4
/* ggml keeps tensor names in char[64]: longer names cannot be loaded there. */
#define ANVIL_GGUF_MAX_TENSOR_NAME 63

#define ANVIL_GGUF_KEY_ALIGNMENT "general.alignment"
#define ANVIL_GGUF_KEY_SPLIT_NO "split.no"
#define ANVIL_GGUF_KEY_SPLIT_COUNT "split.count"
#define ANVIL_GGUF_KEY_SPLIT_TENSORS "split.tensors.count"

/* ggml's short name of a wire type ("u8", "str", "arr", ...); NULL if unknown. */
ANVIL_API const char *anvil_gguf_type_name(uint32_t type);
/* Bytes of one element of a fixed-width wire type; 0 for string/array/unknown. */
ANVIL_API size_t anvil_gguf_type_size(uint32_t type);

/* ---- views -------------------------------------------------------------- */

/* A byte string inside the mapping; NOT NUL-terminated. */
typedef struct anvil_gguf_str {
    const char *ptr;
    size_t len;
} anvil_gguf_str;

/* An array value: elements in wire form (little-endian, unaligned). */
typedef struct anvil_gguf_array {
    uint32_t elem_type; /* anvil_gguf_type, never ARRAY */
    uint64_t count;
    const void *data; /* first element (for strings: its u64 length) */
    size_t size;      /* bytes of all elements */
} anvil_gguf_array;

typedef enum anvil_gguf_kind {
    ANVIL_GGUF_KIND_INT,   /* u8..u64, i8..i64 */
    ANVIL_GGUF_KIND_FLOAT, /* f32, f64 (widened to double) */
    ANVIL_GGUF_KIND_BOOL,
    ANVIL_GGUF_KIND_STRING,
    ANVIL_GGUF_KIND_ARRAY
} anvil_gguf_kind;

/* The typed view of one value. Integers are widened; a u64 >= 2^63 never
 * shows up as a negative int64: in_i64 is 0 then and only u holds it. */
typedef struct anvil_gguf_value {
    anvil_gguf_kind kind;
    uint32_t wire_type; /* exact wire type (ARRAY for arrays) */
    int64_t i;          /* KIND_INT: the value when in_i64 */
    uint64_t u;         /* KIND_INT: the value when in_u64 */
    int in_i64;         /* KIND_INT: i holds the value (0 only for u64 >= 2^63) */
    int in_u64;         /* KIND_INT: u holds the value (0 for negatives) */
    double f;           /* KIND_FLOAT */
    int b;              /* KIND_BOOL: 0 or 1 (any non-zero byte reads as 1, as in ggml) */
    anvil_gguf_str s;   /* KIND_STRING */
    anvil_gguf_array a; /* KIND_ARRAY */
} anvil_gguf_value;

/* One KV pair: the raw view (exact wire type and bytes). */
typedef struct anvil_gguf_kv {
    const char *key; /* NUL-terminated copy */
    size_t key_len;
    uint32_t type;      /* wire type; ANVIL_GGUF_TYPE_ARRAY for arrays */
    uint32_t elem_type; /* arrays: element type; scalars and strings: == type */
    uint64_t count;     /* arrays: element count; otherwise 1 */
    const void *raw;    /* the value's wire bytes after the type field
                                (arrays: elem type, count, elements; strings:
                                u64 length, bytes; scalars: the value) */
    size_t raw_size;
} anvil_gguf_kv;

/* One tensor of the directory. */
typedef struct anvil_gguf_tensor {
    const char *name; /* NUL-terminated copy */
    size_t name_len;
    uint32_t type;                       /* ggml type id */
    anvil_type_info type_info;           /* geometry resolved at open */
    uint32_t n_dims;                     /* as stored, 0..4 (0: a scalar) */
    uint64_t ne[ANVIL_GGUF_MAX_DIMS];    /* ne order, innermost first; unused dims are 1 */
    uint64_t shape[ANVIL_GGUF_MAX_DIMS]; /* logical row-major: shape[0] outermost;
                                            a weight is [out, in]; n_dims entries used */
    uint64_t n_elements;
    uint64_t n_bytes;
    uint64_t row_bytes;   /* bytes of one ne[0] row */
    uint64_t offset;      /* as stored: relative to its part's data section */
    uint64_t file_offset; /* absolute offset in its part's file */
    uint32_t part;        /* split part index (0 for a single file) */
    const void *data;     /* view: n_bytes bytes */
} anvil_gguf_tensor;

/* ---- reader ------------------------------------------------------------- */

typedef struct anvil_gguf anvil_gguf;
typedef struct anvil_gguf_mapping anvil_gguf_mapping;

/* Open flags. */
#define ANVIL_GGUF_OPEN_SINGLE_PART 1u /* do not follow split.count to other parts */

/* Open and validate a file (and, for part 1 of a split set, all its parts).
 * The file is memory-mapped, so it must be a regular file: a FIFO, a socket
 * or a device is refused (ANVIL_E_IO) before it is opened, never waited on.
 * ctx (may be NULL) resolves third-party tensor type ids through the loaded
 * codec plugins; without it such ids are refused with a message naming the
 * missing plugin. */
ANVIL_API int anvil_gguf_open(anvil_gguf **out, const char *path, const anvil_ctx *ctx, unsigned flags,
                              anvil_error *err);
/* Parse a caller's buffer (borrowed: it must outlive every view). */
ANVIL_API int anvil_gguf_open_buffer(anvil_gguf **out, const void *data, size_t size, const anvil_ctx *ctx,
                                     anvil_error *err);
/* Lenient open, for inspecting damaged files (the way gguf_dump shows what
 * it can): a single file (split keys are not followed), read as far as it
 * goes. ANVIL_OK whenever the header (magic, version, counts) is readable;
 * everything else that is wrong is listed as problems instead of failing the
 * open: a KV or directory entry that leaves the rest unreadable ends the
 * lists there; a tensor whose type, shape, offset or data range is wrong is
 * kept, with n_bytes 0 (when unknown) and data NULL, and its problem named
 * by anvil_gguf_tensor_problem. A single file the strict open accepts has
 * no problems and the same view. Use anvil_gguf_open for anything but
 * looking. */
ANVIL_API int anvil_gguf_open_lenient(anvil_gguf **out, const char *path, const anvil_ctx *ctx, anvil_error *err);
/* The same over a caller's buffer (borrowed, as anvil_gguf_open_buffer). */
ANVIL_API int anvil_gguf_open_buffer_lenient(anvil_gguf **out, const void *data, size_t size, const anvil_ctx *ctx,
                                             anvil_error *err);

typedef enum anvil_gguf_where {
    ANVIL_GGUF_AT_HEADER = 0, /* the header or the file as a whole */
    ANVIL_GGUF_AT_KV = 1,     /* index: the KV's number in the file */
    ANVIL_GGUF_AT_TENSOR = 2  /* index: the tensor's number in the file (== its
                                 index in the tensor list when it is listed) */
} anvil_gguf_where;

typedef struct anvil_gguf_problem {
    int code;  /* anvil_status */
    int where; /* anvil_gguf_where */
    size_t index;
    const char *message; /* lives as long as the anvil_gguf */
} anvil_gguf_problem;

/* Problems a lenient open found (0 for a strict open). */
ANVIL_API size_t anvil_gguf_problem_count(const anvil_gguf *g);
ANVIL_API int anvil_gguf_problem_at(const anvil_gguf *g, size_t i, anvil_gguf_problem *out);
/* The first problem of listed tensor i, or NULL when it has none. */
ANVIL_API const char *anvil_gguf_tensor_problem(const anvil_gguf *g, size_t i);
/* The KV and tensor counts part 1's header declares (a lenient open may list
 * fewer). */
ANVIL_API void anvil_gguf_declared_counts(const anvil_gguf *g, uint64_t *n_kv, uint64_t *n_tensors);

/* Unmaps unless the mapping was taken. NULL is a no-op. */
ANVIL_API void anvil_gguf_close(anvil_gguf *g);

ANVIL_API uint32_t anvil_gguf_version(const anvil_gguf *g);
ANVIL_API uint32_t anvil_gguf_alignment(const anvil_gguf *g);
/* Where part 1's data section starts (padded header end; ggml's convention:
 * the unpadded header end when the file has no tensors). */
ANVIL_API uint64_t anvil_gguf_data_offset(const anvil_gguf *g);
ANVIL_API uint64_t anvil_gguf_file_size(const anvil_gguf *g);

typedef struct anvil_gguf_part_info {
    const char *path; /* NULL for a buffer */
    uint64_t file_size;
    uint32_t version;
    uint32_t alignment;
    uint64_t header_size; /* bytes up to the end of the tensor directory */
    uint64_t data_offset;
    uint64_t data_end; /* largest tensor end (== data_offset when none) */
    size_t n_kv;
    size_t n_tensors;
    size_t first_tensor; /* index of its first tensor in the merged list */
} anvil_gguf_part_info;

ANVIL_API size_t anvil_gguf_part_count(const anvil_gguf *g);
ANVIL_API int anvil_gguf_part(const anvil_gguf *g, size_t i, anvil_gguf_part_info *out);

/* Metadata (part 1's for a split set). */
ANVIL_API size_t anvil_gguf_kv_count(const anvil_gguf *g);
ANVIL_API const anvil_gguf_kv *anvil_gguf_kv_at(const anvil_gguf *g, size_t i);
ANVIL_API const anvil_gguf_kv *anvil_gguf_find_kv(const anvil_gguf *g, const char *key);
/* Index of key, or -1. */
ANVIL_API int64_t anvil_gguf_find_key(const anvil_gguf *g, const char *key);
/* Typed view of a KV (validated at open: cannot fail on an opened file). */
ANVIL_API int anvil_gguf_kv_value(const anvil_gguf_kv *kv, anvil_gguf_value *out);

/* Typed getters by key. ANVIL_E_NOT_FOUND when absent; ANVIL_E_GGUF_KEY_TYPE
 * when the wire type does not fit; get_i64 refuses a u64 >= 2^63 and get_u64 a
 * negative with ANVIL_E_OVERFLOW. get_f64 takes f32/f64 only. */
ANVIL_API int anvil_gguf_get_i64(const anvil_gguf *g, const char *key, int64_t *out, anvil_error *err);
ANVIL_API int anvil_gguf_get_u64(const anvil_gguf *g, const char *key, uint64_t *out, anvil_error *err);
ANVIL_API int anvil_gguf_get_f64(const anvil_gguf *g, const char *key, double *out, anvil_error *err);
ANVIL_API int anvil_gguf_get_bool(const anvil_gguf *g, const char *key, int *out, anvil_error *err);
ANVIL_API int anvil_gguf_get_str(const anvil_gguf *g, const char *key, anvil_gguf_str *out, anvil_error *err);
ANVIL_API int anvil_gguf_get_array(const anvil_gguf *g, const char *key, anvil_gguf_array *out, anvil_error *err);

/* Element i of an array as a typed value (string elements are found by
 * walking the lengths: O(i)). ANVIL_E_INVALID_ARG when i >= count. */
ANVIL_API int anvil_gguf_array_get(const anvil_gguf_array *a, uint64_t i, anvil_gguf_value *out);
/* List a string array as slices into the mapping, no copy: fills up to cap
 * entries of out and returns how many were filled (count when cap >= count). */
ANVIL_API uint64_t anvil_gguf_array_strings(const anvil_gguf_array *a, anvil_gguf_str *out, uint64_t cap);

/* Tensors (all parts, directory order part by part). */
ANVIL_API size_t anvil_gguf_tensor_count(const anvil_gguf *g);
ANVIL_API const anvil_gguf_tensor *anvil_gguf_tensor_at(const anvil_gguf *g, size_t i);
ANVIL_API const anvil_gguf_tensor *anvil_gguf_find_tensor(const anvil_gguf *g, const char *name);

/* Paging hints for a view (e.g. a tensor's data, n_bytes): prefetch is
 * madvise(MADV_WILLNEED); release is madvise(MADV_DONTNEED), done only on
 * read-only file mappings (the pages are re-read from the file if touched
 * again). Both are no-ops on a caller's buffer. ANVIL_E_INVALID_ARG when the
 * range is not inside the mapping. */
ANVIL_API int anvil_gguf_prefetch(const anvil_gguf *g, const void *ptr, size_t len, anvil_error *err);
ANVIL_API int anvil_gguf_release(const anvil_gguf *g, const void *ptr, size_t len, anvil_error *err);

/* Ownership handoff: move the mapping (all parts) out of g. Views from g stay
 * valid for as long as the returned mapping lives, even after
 * anvil_gguf_close(g); g itself must not be used after the mapping is freed.
 * Returns NULL when the mapping was already taken or on allocation failure. */
ANVIL_API anvil_gguf_mapping *anvil_gguf_take_mapping(anvil_gguf *g);
ANVIL_API void anvil_gguf_mapping_free(anvil_gguf_mapping *m);
ANVIL_API int anvil_gguf_mapping_prefetch(const anvil_gguf_mapping *m, const void *ptr, size_t len, anvil_error *err);
ANVIL_API int anvil_gguf_mapping_release(const anvil_gguf_mapping *m, const void *ptr, size_t len, anvil_error *err);

/* ---- writer ------------------------------------------------------------- */

typedef struct anvil_gguf_writer anvil_gguf_writer;

/* ctx (may be NULL) resolves third-party tensor type ids. */
ANVIL_API int anvil_gguf_writer_new(anvil_gguf_writer **out, const anvil_ctx *ctx, anvil_error *err);
/* Frees; a stream in progress is aborted (its temp file removed). */
ANVIL_API void anvil_gguf_writer_free(anvil_gguf_writer *w);

/* Typed setters: the value is written with exactly this wire type. Setting a
 * key that exists removes it and appends the new value at the end. Keys must
 * be non-empty. general.alignment may only be set as u32, a power of two
 * <= 1 MiB; it is then the padding used. */
ANVIL_API int anvil_gguf_writer_set_u8(anvil_gguf_writer *w, const char *key, uint8_t v, anvil_error *err);
ANVIL_API int anvil_gguf_writer_set_i8(anvil_gguf_writer *w, const char *key, int8_t v, anvil_error *err);
ANVIL_API int anvil_gguf_writer_set_u16(anvil_gguf_writer *w, const char *key, uint16_t v, anvil_error *err);
ANVIL_API int anvil_gguf_writer_set_i16(anvil_gguf_writer *w, const char *key, int16_t v, anvil_error *err);
ANVIL_API int anvil_gguf_writer_set_u32(anvil_gguf_writer *w, const char *key, uint32_t v, anvil_error *err);
ANVIL_API int anvil_gguf_writer_set_i32(anvil_gguf_writer *w, const char *key, int32_t v, anvil_error *err);
ANVIL_API int anvil_gguf_writer_set_u64(anvil_gguf_writer *w, const char *key, uint64_t v, anvil_error *err);
ANVIL_API int anvil_gguf_writer_set_i64(anvil_gguf_writer *w, const char *key, int64_t v, anvil_error *err);
ANVIL_API int anvil_gguf_writer_set_f32(anvil_gguf_writer *w, const char *key, float v, anvil_error *err);
ANVIL_API int anvil_gguf_writer_set_f64(anvil_gguf_writer *w, const char *key, double v, anvil_error *err);
ANVIL_API int anvil_gguf_writer_set_bool(anvil_gguf_writer *w, const char *key, int v, anvil_error *err);
ANVIL_API int anvil_gguf_writer_set_string(anvil_gguf_writer *w, const char *key, const char *s, anvil_error *err);
ANVIL_API int anvil_gguf_writer_set_string_n(anvil_gguf_writer *w, const char *key, const char *s, size_t len,
                                             anvil_error *err);
/* Array of a fixed-width type: count values in host representation, each of
 * anvil_gguf_type_size(elem_type) bytes (bool: one byte, non-zero = true). */
ANVIL_API int anvil_gguf_writer_set_array(anvil_gguf_writer *w, const char *key, uint32_t elem_type,
                                          const void *values, uint64_t count, anvil_error *err);
ANVIL_API int anvil_gguf_writer_set_string_array(anvil_gguf_writer *w, const char *key, const char *const *items,
                                                 uint64_t count, anvil_error *err);
ANVIL_API int anvil_gguf_writer_set_str_array(anvil_gguf_writer *w, const char *key, const anvil_gguf_str *items,
                                              uint64_t count, anvil_error *err);
/* Raw copy of a KV from an opened file, byte for byte (same key, same wire
 * type and bytes). */
ANVIL_API int anvil_gguf_writer_copy_kv(anvil_gguf_writer *w, const anvil_gguf_kv *kv, anvil_error *err);
/* The same value under another key (a rename). */
ANVIL_API int anvil_gguf_writer_copy_kv_as(anvil_gguf_writer *w, const anvil_gguf_kv *kv, const char *key,
                                           anvil_error *err);
/* Remove a key; returns 1 when it was present, 0 otherwise. */
ANVIL_API int anvil_gguf_writer_remove_key(anvil_gguf_writer *w, const char *key);
ANVIL_API size_t anvil_gguf_writer_kv_count(const anvil_gguf_writer *w);
ANVIL_API uint32_t anvil_gguf_writer_alignment(const anvil_gguf_writer *w);

/* Add a tensor: name (<= 63 bytes, unique), ggml type id, n_dims (0..4) dims
 * in ne order (innermost first). data (size bytes, exactly the tensor's size)
 * is borrowed until written; pass data NULL and size 0 to declare a tensor
 * whose bytes will be streamed. Trailing size-1 dims are trimmed on disk, as
 * ggml does. */
ANVIL_API int anvil_gguf_writer_add_tensor(anvil_gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                                           const uint64_t *ne, const void *data, uint64_t size, anvil_error *err);
ANVIL_API size_t anvil_gguf_writer_tensor_count(const anvil_gguf_writer *w);
/* Size of a declared tensor (bytes), by index. */
ANVIL_API uint64_t anvil_gguf_writer_tensor_bytes(const anvil_gguf_writer *w, size_t i);

/* Copy flags. */
#define ANVIL_GGUF_COPY_KVS 1u              /* every KV, raw */
#define ANVIL_GGUF_COPY_TENSORS 2u          /* every tensor, with its data (borrowed from src) */
#define ANVIL_GGUF_COPY_DECLARE_ONLY 4u     /* with COPY_TENSORS: declare, no data (for streaming) */
#define ANVIL_GGUF_COPY_CANONICAL_BOOL 8u   /* write bools as 0/1, as ggml does on re-write */
#define ANVIL_GGUF_COPY_SKIP_SPLIT_KEYS 16u /* leave out split.no/split.count/split.tensors.count */
/* Copy the KVs and/or tensors of an opened file into w. */
ANVIL_API int anvil_gguf_writer_copy_from(anvil_gguf_writer *w, const anvil_gguf *src, unsigned flags,
                                          anvil_error *err);

/* Size of the header (KVs, tensor directory, padding) as it will be written. */
ANVIL_API int anvil_gguf_writer_header_size(const anvil_gguf_writer *w, uint64_t *out, anvil_error *err);
/* Size of the whole file as it will be written. */
ANVIL_API int anvil_gguf_writer_file_size(const anvil_gguf_writer *w, uint64_t *out, anvil_error *err);

/* Buffered: write everything (every tensor needs its data) to path
 * atomically: a temp file in path's folder renamed into place when complete;
 * on failure the old file is untouched and the temp file removed. A path that
 * is a device, a FIFO or "-" (stdout) is written into instead, front to back
 * (the writer never seeks; see anvil_file_write_atomic in anvil.h). */
ANVIL_API int anvil_gguf_writer_write_file(anvil_gguf_writer *w, const char *path, anvil_error *err);
/* The same bytes into a malloc'd buffer (free() it). */
ANVIL_API int anvil_gguf_writer_write_memory(anvil_gguf_writer *w, void **out, size_t *size, anvil_error *err);

/* Streaming: begin writes the full header (all tensors declared, no more KVs
 * or tensors may be added until finish/abort); then exactly one
 * stream_tensor per tensor, in declaration order, with exactly its size;
 * finish checks that none is missing and renames the file into place. Any
 * error aborts the stream (temp removed). */
ANVIL_API int anvil_gguf_writer_stream_begin(anvil_gguf_writer *w, const char *path, anvil_error *err);
ANVIL_API int anvil_gguf_writer_stream_tensor(anvil_gguf_writer *w, const void *data, uint64_t size,
                                              anvil_error *err);
ANVIL_API int anvil_gguf_writer_stream_finish(anvil_gguf_writer *w, anvil_error *err);
ANVIL_API void anvil_gguf_writer_stream_abort(anvil_gguf_writer *w);

/* Files that must change together (the parts of a split set): end each
 * part's stream with stream_hold instead of stream_finish -- the part is
 * complete and flushed under a temp name, not yet in place -- then
 * commit_set puts every held part in place as one step: a reader (or a
 * kill at any moment, or a failed rename) sees the complete old set or the
 * complete new one, never a mix, and no old part is removed before every
 * new part is in place. On failure the old files are as they were and the
 * held temps are removed. abort (or free) on a held writer drops its temp.
 * All parts must be in one folder, and be files: a part written into a
 * device, a FIFO or "-" cannot be held (ANVIL_E_STATE). */
ANVIL_API int anvil_gguf_writer_stream_hold(anvil_gguf_writer *w, anvil_error *err);
ANVIL_API int anvil_gguf_writer_commit_set(anvil_gguf_writer *const *parts, size_t n, anvil_error *err);

/* ---- progress and options of whole-file writes --------------------------- */

/* Where a long write is: reported after each tensor's bytes are written. */
typedef struct anvil_gguf_progress {
    size_t tensor;        /* tensors written so far, this one included (1-based) */
    size_t n_tensors;     /* tensors to write in all (every part of a split) */
    uint64_t bytes_done;  /* tensor bytes written so far */
    uint64_t bytes_total; /* tensor bytes to write in all */
    const char *name;     /* the tensor just written */
    uint32_t part;        /* the part being written (1-based; 1 outside a split) */
    uint32_t n_parts;
} anvil_gguf_progress;
typedef void (*anvil_gguf_progress_fn)(void *arg, const anvil_gguf_progress *p);

/* Call fn (may be NULL: none) after each tensor a writer writes. */
ANVIL_API void anvil_gguf_writer_set_progress(anvil_gguf_writer *w, anvil_gguf_progress_fn fn, void *arg);

/* Split flags. */
#define ANVIL_GGUF_SPLIT_NO_TENSOR_FIRST \
    1u /* part 1 holds the metadata only, as
                                               gguf-split --no-tensor-first-split */
/* gguf-split's default limit when neither is given. */
#define ANVIL_GGUF_SPLIT_DEFAULT_MAX_TENSORS 128u

/* Options of reemit, merge and split. Start from anvil_gguf_write_options_init;
 * the struct only grows at the end (struct_size says how much the caller
 * knows). */
typedef struct anvil_gguf_write_options {
    size_t struct_size;
    anvil_gguf_progress_fn progress; /* may be NULL */
    void *progress_arg;
    uint64_t split_max_bytes;   /* split: start a new part past this many tensor
                                        bytes (each padded to 32); 0 = no size limit */
    uint64_t split_max_tensors; /* split: at most this many tensors a part; 0 = no
                                        count limit (one of the two must be set) */
    unsigned split_flags;       /* ANVIL_GGUF_SPLIT_* */
} anvil_gguf_write_options;

ANVIL_API void anvil_gguf_write_options_init(anvil_gguf_write_options *o);

/* ---- whole-file operations ------------------------------------------------ */

/* Read in_path (a split part alone: use anvil_gguf_merge for a set) and write it back through the writer
 * to out_path: KVs copied raw in order (bools as 0/1, as ggml re-writes
 * them), tensors in order with offsets recomputed. For any file ggml loads,
 * the result equals ggml's read-then-gguf_write_to_file byte for byte. */
ANVIL_API int anvil_gguf_reemit(const char *in_path, const char *out_path, const anvil_ctx *ctx, anvil_error *err);

/* Split src into "<prefix>-%05d-of-%05d.gguf" parts as llama.cpp's gguf-split
 * does: a new part starts when the next tensor (its size padded to 32) would
 * take the part's tensor bytes over max_bytes, or every max_tensors tensors
 * (give one limit, 0 for the other). Part 1 carries all the metadata; every
 * part carries split.no (u16), split.tensors.count (i32) and split.count (u16).
 * The set replaces an existing one as one step (anvil_gguf_writer_commit_set);
 * on failure nothing changes. *n_parts (may be NULL) receives the part count. */
ANVIL_API int anvil_gguf_split_write(const anvil_gguf *src, const char *prefix, uint64_t max_bytes,
                                     uint64_t max_tensors, const anvil_ctx *ctx, uint32_t *n_parts, anvil_error *err);

/* Merge the split set whose first part is first_path into out_path, leaving
 * out the split.* keys: merging what anvil_gguf_split_write made gives back
 * the reemitted original byte for byte. */
ANVIL_API int anvil_gguf_merge(const char *first_path, const char *out_path, const anvil_ctx *ctx, anvil_error *err);

/* The same three with options (NULL: the defaults, which the calls above use). */
ANVIL_API int anvil_gguf_reemit_ex(const char *in_path, const char *out_path, const anvil_ctx *ctx,
                                   const anvil_gguf_write_options *opts, anvil_error *err);
ANVIL_API int anvil_gguf_merge_ex(const char *first_path, const char *out_path, const anvil_ctx *ctx,
                                  const anvil_gguf_write_options *opts, anvil_error *err);
ANVIL_API int anvil_gguf_split_write_ex(const anvil_gguf *src, const char *prefix,
                                        const anvil_gguf_write_options *opts, const anvil_ctx *ctx, uint32_t *n_parts,
                                        anvil_error *err);
/* The split without writing: part_of[i] (0-based) for every tensor i of src
 * (part_of holds anvil_gguf_tensor_count(src) entries) and the part count. */
ANVIL_API int anvil_gguf_split_plan(const anvil_gguf *src, const anvil_gguf_write_options *opts, uint32_t *part_of,
                                    uint32_t *n_parts, anvil_error *err);
/* The size of part `part` (0-based) of that plan as it would be written, and
 * its tensor count. */
ANVIL_API int anvil_gguf_split_part_size(const anvil_gguf *src, const uint32_t *part_of, uint32_t part,
                                         uint32_t n_parts, const anvil_ctx *ctx, uint64_t *bytes, size_t *n_tensors,
                                         anvil_error *err);

/* ---- metadata edits (anvil meta) ----------------------------------------- */

/* Write the single file src again to out_path (which may be src's own path)
 * with w's metadata. w holds the new KVs and src's tensors, declared in src's
 * order with their data (anvil_gguf_writer_copy_from(w, src,
 * ANVIL_GGUF_COPY_TENSORS)). When the data offset and every tensor's offset
 * stay as they are (gguf_set_metadata's condition), only the header is new:
 * the tensor bytes are cloned (a reflink, where the filesystem has them) or
 * copied by the kernel, not streamed through the writer; otherwise the whole
 * file is written again, streamed. Either way atomic: a temp file next to
 * out_path, renamed over it when complete -- or, when out_path is a device,
 * a FIFO or "-", header and data written into it in file order (no clone, no
 * seek). *header_only (may be NULL) says which way it went. */
ANVIL_API int anvil_gguf_write_metadata(const anvil_gguf *src, anvil_gguf_writer *w, const char *out_path,
                                        int *header_only, anvil_error *err);

/* ---- split names (llama.cpp convention) --------------------------------- */

/* "<prefix>-%05d-of-%05d.gguf" for part no (1-based) of count into buf. */
ANVIL_API int anvil_gguf_split_path(char *buf, size_t size, const char *prefix, uint32_t no, uint32_t count,
                                    anvil_error *err);
/* Parse a split path: fills prefix (up to prefix_size), no (1-based) and
 * count; returns 1 when path follows the convention, 0 otherwise. */
ANVIL_API int anvil_gguf_split_parse(const char *path, char *prefix, size_t prefix_size, uint32_t *no,
                                     uint32_t *count);

#ifdef __cplusplus
}
#endif

#endif /* ANVIL_GGUF_H */
