/* SPDX-License-Identifier: MIT */
/* Internal: the GGUF writer's state, shared by gguf_writer_collect.c
 * (collecting KVs and tensors) and gguf_writer_output.c (producing the
 * bytes: layout, temp file, streaming, commit). */
#ifndef ANVIL_HOST_GGUF_WRITER_INTERNAL_H
#define ANVIL_HOST_GGUF_WRITER_INTERNAL_H

#include "atomic_file.h"
#include "gguf_internal.h"

typedef struct gguf_wkv {
    char *key; /* NUL-terminated copy */
    size_t key_len;
    uint32_t type;
    uint8_t *wire; /* the whole KV as written: key, type, value */
    size_t wire_size;
} gguf_wkv;

typedef struct gguf_wtensor {
    char *name;
    size_t name_len;
    uint32_t type;
    uint32_t disk_dims; /* n_dims written (trailing 1s trimmed, at least 1) */
    uint64_t ne[ANVIL_GGUF_MAX_DIMS];
    uint64_t n_bytes;
    const void *data; /* borrowed; NULL when declared for streaming */
} gguf_wtensor;

/* Where bytes go: a temp file with a write buffer, or memory. */
typedef struct gguf_sink {
    int fd;       /* file.fd while writing a file, else -1 */
    int is_file;  /* buf is our write buffer (freed on discard) */
    afile file;   /* the temp file, put in place on commit */
    uint8_t *buf; /* fd: write buffer; memory: the output */
    size_t used;
    size_t cap;
    uint64_t written;
} gguf_sink;

/* HELD: the stream is complete under a temp name, waiting for commit_set. */
typedef enum gguf_wstate { GGUF_W_BUILDING, GGUF_W_STREAMING, GGUF_W_HELD } gguf_wstate;

struct anvil_gguf_writer {
    const anvil_ctx *ctx;
    gguf_wkv *kvs;
    size_t n_kv, cap_kv;
    gguf_name_index kv_index;
    gguf_wtensor *tensors;
    size_t n_tensors, cap_tensors;
    gguf_name_index tensor_index;
    uint32_t alignment;
    gguf_wstate state;
    size_t next;      /* streaming: next tensor expected */
    uint64_t partial; /* streaming: bytes of tensor `next` written by gguf_writer_stream_part */
    gguf_sink sink;
    anvil_gguf_progress_fn progress; /* after each tensor written; may be NULL */
    void *progress_arg;
    uint64_t bytes_done, bytes_total; /* streaming: tensor bytes written / to write */
};

/* The header as it will be written (KVs, tensor directory, padding to the
 * data section): malloc'd bytes. */
/* Write the last-added tensor with exactly n_dims dims (n_dims >= the
 * trimmed count, at most 4): gguf-py writes len(shape), keeping trailing
 * 1s ([1, hidden] as 2 dims), where ggml_n_dims trims them. */
int gguf_writer_exact_dims(anvil_gguf_writer *w, uint32_t n_dims, anvil_error *err);
int gguf_writer_header_bytes(const anvil_gguf_writer *w, uint8_t **out, size_t *size, anvil_error *err);

/* The atomic file sink the writer uses: a temp file next to path; write
 * through it (or, after gguf_sink_flush, straight to s->fd), then commit
 * (fsync, rename over path) or discard (remove the temp file). */
int gguf_sink_open(gguf_sink *s, const char *path, anvil_error *err);
int gguf_sink_write(gguf_sink *s, const void *data, uint64_t n, anvil_error *err);
int gguf_sink_flush(gguf_sink *s, anvil_error *err);
int gguf_sink_commit(gguf_sink *s, anvil_error *err);
void gguf_sink_discard(gguf_sink *s);

/* Streaming a tensor in pieces (bounded memory): size bytes of tensor
 * `next`, after the partial bytes already written; the tensor counts as
 * written (padded, progress reported) once its last byte is. A piece past
 * the tensor's end, or stream_tensor while one is partly written, is an
 * error that aborts the stream, as for stream_tensor. */
int gguf_writer_stream_part(anvil_gguf_writer *w, const void *data, uint64_t size, anvil_error *err);

/* Offsets of tensor i's data relative to the data section. */
/* gguf_writer_output.c: close and remove a stream's temp file (writer free/abort). */
void gguf_writer_stream_cleanup(anvil_gguf_writer *w);
int gguf_writer_offsets(const anvil_gguf_writer *w, uint64_t *offsets, uint64_t *data_size, anvil_error *err);

#endif
