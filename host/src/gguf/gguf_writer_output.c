/* SPDX-License-Identifier: MIT */
/*
 * GGUF writer, output side: the bytes exactly as ggml's gguf_write_to_file
 * lays them out (version 3, u64 counts, KVs in order, tensor infos with
 * offsets computed here, one zero pad after the directory, each tensor's data
 * zero-padded to the alignment including the last), written to a temp file
 * in the destination folder and renamed into place once complete -- or, when
 * the destination is a device, a FIFO or standard output (atomic_file.h),
 * written straight into it. Either way the bytes go out front to back, in
 * one pass: every offset is known before the first byte (the header is
 * complete before any tensor), so nothing here ever seeks.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file_set.h"
#include "gguf_writer_internal.h"

#define SINK_BUFFER (1u << 20)

/* ---- layout ---------------------------------------------------------------- */

int gguf_writer_offsets(const anvil_gguf_writer *w, uint64_t *offsets, uint64_t *data_size, anvil_error *err) {
    uint64_t at = 0;
    for (size_t i = 0; i < w->n_tensors; ++i) {
        uint64_t padded;
        if (offsets != NULL) {
            offsets[i] = at;
        }
        if (gguf_pad_overflows(w->tensors[i].n_bytes, w->alignment, &padded) || gguf_add_overflows(at, padded, &at)) {
            return anvil__error_set(err, ANVIL_E_OVERFLOW, "tensor data size overflows");
        }
    }
    if (data_size != NULL) {
        *data_size = at;
    }
    return ANVIL_OK;
}

static int unpadded_header_size(const anvil_gguf_writer *w, uint64_t *out, anvil_error *err) {
    uint64_t n = 4 + 4 + 8 + 8;
    int bad = 0;
    for (size_t i = 0; i < w->n_kv; ++i) {
        bad |= gguf_add_overflows(n, w->kvs[i].wire_size, &n);
    }
    for (size_t i = 0; i < w->n_tensors; ++i) {
        const gguf_wtensor *t = &w->tensors[i];
        bad |= gguf_add_overflows(n, 8 + t->name_len + 4 + 8ull * t->disk_dims + 4 + 8, &n);
    }
    if (bad) {
        return anvil__error_set(err, ANVIL_E_OVERFLOW, "GGUF header size overflows");
    }
    *out = n;
    return ANVIL_OK;
}

ANVIL_API int anvil_gguf_writer_header_size(const anvil_gguf_writer *w, uint64_t *out, anvil_error *err) {
    uint64_t n = 0;
    int rc = unpadded_header_size(w, &n, err);
    if (rc == ANVIL_OK && gguf_pad_overflows(n, w->alignment, out)) {
        rc = anvil__error_set(err, ANVIL_E_OVERFLOW, "GGUF header size overflows");
    }
    return rc;
}

ANVIL_API int anvil_gguf_writer_file_size(const anvil_gguf_writer *w, uint64_t *out, anvil_error *err) {
    uint64_t header = 0, data = 0;
    int rc = anvil_gguf_writer_header_size(w, &header, err);
    if (rc == ANVIL_OK) {
        rc = gguf_writer_offsets(w, NULL, &data, err);
    }
    if (rc == ANVIL_OK && gguf_add_overflows(header, data, out)) {
        rc = anvil__error_set(err, ANVIL_E_OVERFLOW, "GGUF file size overflows");
    }
    return rc;
}

/* The header with its padding, in one allocation. */
static int build_header(const anvil_gguf_writer *w, uint8_t **out, size_t *size, anvil_error *err) {
    uint64_t total = 0, unpadded = 0;
    int rc = unpadded_header_size(w, &unpadded, err);
    if (rc == ANVIL_OK) {
        rc = anvil_gguf_writer_header_size(w, &total, err);
    }
    if (rc != ANVIL_OK) {
        return rc;
    }
    if (total > SIZE_MAX) {
        return anvil__error_set(err, ANVIL_E_OVERFLOW, "GGUF header too large");
    }
    uint64_t *offsets = malloc((w->n_tensors > 0 ? w->n_tensors : 1) * sizeof *offsets);
    uint8_t *h = calloc(1, total > 0 ? (size_t)total : 1); /* zeroed: the padding */
    if (offsets == NULL || h == NULL) {
        free(offsets);
        free(h);
        return anvil__error_set(err, ANVIL_E_NOMEM, "out of memory for the GGUF header");
    }
    rc = gguf_writer_offsets(w, offsets, NULL, err);
    if (rc != ANVIL_OK) {
        free(offsets);
        free(h);
        return rc;
    }
    uint8_t *p = h;
    memcpy(p, "GGUF", 4);
    gguf_store_u32(p + 4, ANVIL_GGUF_VERSION_WRITTEN);
    gguf_store_u64(p + 8, w->n_tensors);
    gguf_store_u64(p + 16, w->n_kv);
    p += 24;
    for (size_t i = 0; i < w->n_kv; ++i) {
        memcpy(p, w->kvs[i].wire, w->kvs[i].wire_size);
        p += w->kvs[i].wire_size;
    }
    for (size_t i = 0; i < w->n_tensors; ++i) {
        const gguf_wtensor *t = &w->tensors[i];
        gguf_store_u64(p, t->name_len);
        memcpy(p + 8, t->name, t->name_len);
        p += 8 + t->name_len;
        gguf_store_u32(p, t->disk_dims);
        p += 4;
        for (uint32_t j = 0; j < t->disk_dims; ++j) {
            gguf_store_u64(p, t->ne[j]);
            p += 8;
        }
        gguf_store_u32(p, t->type);
        gguf_store_u64(p + 4, offsets[i]);
        p += 12;
    }
    free(offsets);
    if ((uint64_t)(p - h) != unpadded) {
        free(h);
        return anvil__error_set(err, ANVIL_E_INTERNAL, "GGUF header size mismatch");
    }
    *out = h;
    *size = (size_t)total;
    return ANVIL_OK;
}

/* ---- sinks ------------------------------------------------------------------ */

static int sink_flush(gguf_sink *s, anvil_error *err) {
    if (s->fd < 0 || s->used == 0) {
        return ANVIL_OK;
    }
    const int rc = afile_write_all(s->fd, s->buf, s->used, s->file.final_path, err);
    s->used = 0;
    return rc;
}

static int sink_write(gguf_sink *s, const void *data, uint64_t n, anvil_error *err) {
    const uint8_t *p = data;
    if (s->fd < 0) {
        if (n > s->cap - s->used) {
            return anvil__error_set(err, ANVIL_E_INTERNAL, "memory sink overrun");
        }
        memcpy(s->buf + s->used, p, (size_t)n);
        s->used += (size_t)n;
        s->written += n;
        return ANVIL_OK;
    }
    const uint64_t at = s->written;
    s->written += n;
    if (n >= s->cap) {
        /* Large tensor data goes straight to the file, and on to the disk
         * while the caller makes the next tensor. */
        int rc = sink_flush(s, err);
        if (rc == ANVIL_OK) rc = afile_write_all(s->fd, p, (size_t)n, s->file.final_path, err);
        if (rc == ANVIL_OK) afile_start_writeback(s->fd, at, n);
        return rc;
    }
    if (n > s->cap - s->used) {
        int rc = sink_flush(s, err);
        if (rc != ANVIL_OK) {
            return rc;
        }
    }
    memcpy(s->buf + s->used, p, (size_t)n);
    s->used += (size_t)n;
    return ANVIL_OK;
}

static int sink_pad(gguf_sink *s, uint32_t alignment, anvil_error *err) {
    static const uint8_t zeros[64];
    while (s->written % alignment != 0) {
        const uint64_t need = alignment - s->written % alignment;
        const int rc = sink_write(s, zeros, need < sizeof zeros ? need : sizeof zeros, err);
        if (rc != ANVIL_OK) {
            return rc;
        }
    }
    return ANVIL_OK;
}

static void sink_discard(gguf_sink *s) {
    if (s->is_file) {
        afile_discard(&s->file); /* removes the temp unless it was put in place */
        free(s->buf);
    }
    memset(s, 0, sizeof *s);
    s->fd = -1;
}

/* A temp file for path (atomic_file.c: anonymous where the OS allows), or
 * the device, FIFO or descriptor path names. */
static int sink_open_file(gguf_sink *s, const char *path, anvil_error *err) {
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->buf = malloc(SINK_BUFFER);
    if (s->buf == NULL) {
        return anvil__nomem(err);
    }
    const int rc = file_set_output_open(&s->file, path, err);
    if (rc != ANVIL_OK) {
        free(s->buf);
        s->buf = NULL;
        return rc;
    }
    s->is_file = 1;
    s->cap = SINK_BUFFER;
    s->fd = s->file.fd;
    return ANVIL_OK;
}

/* Everything written and flushed to disk under a temp name. */
static int sink_hold(gguf_sink *s, anvil_error *err) {
    const int rc = sink_flush(s, err);
    s->fd = -1;   /* afile_hold closes it */
    free(s->buf); /* a held part of a large set costs no memory */
    s->buf = NULL;
    s->used = s->cap = 0;
    return rc != ANVIL_OK ? rc : afile_hold(&s->file, err);
}

static int sink_commit(gguf_sink *s, anvil_error *err) {
    /* A stream is not held (nothing to rename): flushed, then closed. */
    int rc = s->file.stream ? sink_flush(s, err) : sink_hold(s, err);
    if (rc == ANVIL_OK) {
        rc = afile_commit(&s->file, err);
    }
    sink_discard(s);
    return rc;
}

/* ---- streaming -------------------------------------------------------------- */

void gguf_writer_stream_cleanup(anvil_gguf_writer *w) {
    if (w->state == GGUF_W_STREAMING || w->state == GGUF_W_HELD) {
        sink_discard(&w->sink);
        w->state = GGUF_W_BUILDING;
        w->next = 0;
        w->partial = 0;
    }
}

ANVIL_API void anvil_gguf_writer_set_progress(anvil_gguf_writer *w, anvil_gguf_progress_fn fn, void *arg) {
    if (w != NULL) {
        w->progress = fn;
        w->progress_arg = arg;
    }
}

ANVIL_API void anvil_gguf_writer_stream_abort(anvil_gguf_writer *w) {
    if (w != NULL) {
        gguf_writer_stream_cleanup(w);
    }
}

static int write_header(anvil_gguf_writer *w, anvil_error *err) {
    uint8_t *h = NULL;
    size_t n = 0;
    int rc = build_header(w, &h, &n, err);
    if (rc == ANVIL_OK) {
        rc = sink_write(&w->sink, h, n, err);
        free(h);
    }
    return rc;
}

ANVIL_API int anvil_gguf_writer_stream_begin(anvil_gguf_writer *w, const char *path, anvil_error *err) {
    if (w == NULL || path == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL writer or path");
    }
    if (w->state != GGUF_W_BUILDING) {
        return anvil__error_set(err, ANVIL_E_STATE, "a stream is already being written");
    }
    int rc = sink_open_file(&w->sink, path, err);
    if (rc != ANVIL_OK) {
        return rc;
    }
    w->state = GGUF_W_STREAMING;
    w->next = 0;
    w->partial = 0;
    w->bytes_done = 0;
    w->bytes_total = 0;
    for (size_t i = 0; i < w->n_tensors; ++i) {
        if (gguf_add_overflows(w->bytes_total, w->tensors[i].n_bytes, &w->bytes_total)) {
            w->bytes_total = UINT64_MAX; /* for progress only; write_header refuses it */
        }
    }
    rc = write_header(w, err);
    if (rc != ANVIL_OK) {
        gguf_writer_stream_cleanup(w);
    }
    return rc;
}

static int stream_one(anvil_gguf_writer *w, const void *data, uint64_t size, anvil_error *err) {
    if (w->next >= w->n_tensors) {
        return anvil__error_set(err, ANVIL_E_GGUF_WRITER,
                                "an extra tensor (%" PRIu64 " bytes) was written, but all %zu "
                                "declared tensors were already written",
                                size, w->n_tensors);
    }
    const gguf_wtensor *t = &w->tensors[w->next];
    if (w->partial != 0) {
        return anvil__error_set(err, ANVIL_E_GGUF_WRITER,
                                "tensor '%s' (%zu of %zu) was written whole after %" PRIu64 " of its bytes", t->name,
                                w->next + 1, w->n_tensors, w->partial);
    }
    if (size != t->n_bytes) {
        return anvil__error_set(err, ANVIL_E_GGUF_WRITER,
                                "tensor '%s' (%zu of %zu) is %" PRIu64 " bytes but %" PRIu64 " bytes were written",
                                t->name, w->next + 1, w->n_tensors, t->n_bytes, size);
    }
    if (data == NULL && size > 0) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "tensor '%s': NULL data", t->name);
    }
    int rc = size > 0 ? sink_write(&w->sink, data, size, err) : ANVIL_OK;
    if (rc == ANVIL_OK) {
        rc = sink_pad(&w->sink, w->alignment, err);
    }
    if (rc == ANVIL_OK) {
        w->next++;
        w->bytes_done += size;
        if (w->progress != NULL) {
            const anvil_gguf_progress p = { w->next, w->n_tensors, w->bytes_done, w->bytes_total, t->name, 1, 1 };
            w->progress(w->progress_arg, &p);
        }
    }
    return rc;
}

ANVIL_API int anvil_gguf_writer_stream_tensor(anvil_gguf_writer *w, const void *data, uint64_t size,
                                              anvil_error *err) {
    if (w == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL writer");
    }
    if (w->state != GGUF_W_STREAMING) {
        return anvil__error_set(err, ANVIL_E_STATE, "no stream was begun");
    }
    const int rc = stream_one(w, data, size, err);
    if (rc != ANVIL_OK) {
        gguf_writer_stream_cleanup(w);
    }
    return rc;
}

int gguf_writer_stream_part(anvil_gguf_writer *w, const void *data, uint64_t size, anvil_error *err) {
    if (w == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL writer");
    }
    if (w->state != GGUF_W_STREAMING) {
        return anvil__error_set(err, ANVIL_E_STATE, "no stream was begun");
    }
    int rc = ANVIL_OK;
    if (w->next >= w->n_tensors) {
        rc = anvil__error_set(err, ANVIL_E_GGUF_WRITER,
                              "%" PRIu64
                              " extra bytes were written, but all %zu declared tensors were already written",
                              size, w->n_tensors);
    } else if (size > w->tensors[w->next].n_bytes - w->partial) {
        const gguf_wtensor *t = &w->tensors[w->next];
        rc = anvil__error_set(err, ANVIL_E_GGUF_WRITER,
                              "tensor '%s' (%zu of %zu) is %" PRIu64 " bytes but %" PRIu64 " bytes were written",
                              t->name, w->next + 1, w->n_tensors, t->n_bytes, w->partial + size);
    } else if (data == NULL && size > 0) {
        rc = anvil__error_set(err, ANVIL_E_INVALID_ARG, "tensor '%s': NULL data", w->tensors[w->next].name);
    }
    if (rc == ANVIL_OK && size > 0) {
        rc = sink_write(&w->sink, data, size, err);
    }
    if (rc == ANVIL_OK) {
        w->partial += size;
    }
    const gguf_wtensor *t = rc == ANVIL_OK ? &w->tensors[w->next] : NULL;
    if (t != NULL && w->partial == t->n_bytes) {
        rc = sink_pad(&w->sink, w->alignment, err);
        if (rc == ANVIL_OK) {
            w->partial = 0;
            w->next++;
            w->bytes_done += t->n_bytes;
            if (w->progress != NULL) {
                const anvil_gguf_progress p = { w->next, w->n_tensors, w->bytes_done, w->bytes_total, t->name, 1, 1 };
                w->progress(w->progress_arg, &p);
            }
        }
    }
    if (rc != ANVIL_OK) {
        gguf_writer_stream_cleanup(w);
    }
    return rc;
}

ANVIL_API int anvil_gguf_writer_stream_finish(anvil_gguf_writer *w, anvil_error *err) {
    if (w == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL writer");
    }
    if (w->state != GGUF_W_STREAMING) {
        return anvil__error_set(err, ANVIL_E_STATE, "no stream was begun");
    }
    if (w->next < w->n_tensors) {
        const int rc = anvil__error_set(err, ANVIL_E_GGUF_WRITER,
                                        "tensor '%s' (%zu of %zu) was never written; the "
                                        "output was discarded",
                                        w->tensors[w->next].name, w->next + 1, w->n_tensors);
        gguf_writer_stream_cleanup(w);
        return rc;
    }
    const int rc = sink_commit(&w->sink, err);
    w->state = GGUF_W_BUILDING;
    w->next = 0;
    return rc;
}

ANVIL_API int anvil_gguf_writer_stream_hold(anvil_gguf_writer *w, anvil_error *err) {
    if (w == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL writer");
    }
    if (w->state != GGUF_W_STREAMING) {
        return anvil__error_set(err, ANVIL_E_STATE, "no stream was begun");
    }
    int rc = ANVIL_OK;
    if (w->next < w->n_tensors) {
        rc = anvil__error_set(err, ANVIL_E_GGUF_WRITER,
                              "tensor '%s' (%zu of %zu) was never written; the output was "
                              "discarded",
                              w->tensors[w->next].name, w->next + 1, w->n_tensors);
    }
    if (rc == ANVIL_OK) {
        rc = sink_hold(&w->sink, err);
    }
    if (rc != ANVIL_OK) {
        gguf_writer_stream_cleanup(w);
        return rc;
    }
    w->state = GGUF_W_HELD;
    return ANVIL_OK;
}

ANVIL_API int anvil_gguf_writer_commit_set(anvil_gguf_writer *const *parts, size_t n, anvil_error *err) {
    int rc = parts != NULL || n == 0 ? ANVIL_OK : anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL parts");
    for (size_t i = 0; rc == ANVIL_OK && i < n; ++i) {
        if (parts[i] == NULL || parts[i]->state != GGUF_W_HELD) {
            rc = anvil__error_set(err, ANVIL_E_STATE,
                                  "part %zu of the set was not held (anvil_gguf_writer_stream_hold)", i + 1);
        }
    }
    afile *files = rc == ANVIL_OK ? calloc(n > 0 ? n : 1, sizeof *files) : NULL;
    if (rc == ANVIL_OK && files == NULL) {
        rc = anvil__nomem(err);
    }
    if (rc != ANVIL_OK) {
        for (size_t i = 0; parts != NULL && i < n; ++i) {
            if (parts[i] != NULL) {
                gguf_writer_stream_cleanup(parts[i]);
            }
        }
        return rc;
    }
    /* The temps move to the set commit, which owns them from here. */
    for (size_t i = 0; i < n; ++i) {
        files[i] = parts[i]->sink.file;
        memset(&parts[i]->sink.file, 0, sizeof parts[i]->sink.file);
        parts[i]->sink.file.fd = -1;
        sink_discard(&parts[i]->sink);
        parts[i]->state = GGUF_W_BUILDING;
        parts[i]->next = 0;
    }
    rc = file_set_commit(files, n, err);
    free(files);
    return rc;
}

/* ---- buffered ------------------------------------------------------------------ */

static int check_all_data(const anvil_gguf_writer *w, anvil_error *err) {
    if (w->state != GGUF_W_BUILDING) {
        return anvil__error_set(err, ANVIL_E_STATE, "a stream is being written");
    }
    for (size_t i = 0; i < w->n_tensors; ++i) {
        if (w->tensors[i].data == NULL && w->tensors[i].n_bytes > 0) {
            return anvil__error_set(err, ANVIL_E_GGUF_WRITER,
                                    "tensor '%s' was declared without data: give its bytes to "
                                    "add_tensor or write it with the streaming calls",
                                    w->tensors[i].name);
        }
    }
    return ANVIL_OK;
}

ANVIL_API int anvil_gguf_writer_write_file(anvil_gguf_writer *w, const char *path, anvil_error *err) {
    if (w == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL writer");
    }
    int rc = check_all_data(w, err);
    if (rc == ANVIL_OK) {
        rc = anvil_gguf_writer_stream_begin(w, path, err);
    }
    for (size_t i = 0; rc == ANVIL_OK && i < w->n_tensors; ++i) {
        rc = anvil_gguf_writer_stream_tensor(w, w->tensors[i].data, w->tensors[i].n_bytes, err);
    }
    if (rc == ANVIL_OK) {
        rc = anvil_gguf_writer_stream_finish(w, err);
    }
    return rc;
}

ANVIL_API int anvil_gguf_writer_write_memory(anvil_gguf_writer *w, void **out, size_t *size, anvil_error *err) {
    if (w == NULL || out == NULL || size == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL argument");
    }
    uint64_t total = 0;
    int rc = check_all_data(w, err);
    if (rc == ANVIL_OK) {
        rc = anvil_gguf_writer_file_size(w, &total, err);
    }
    if (rc != ANVIL_OK) {
        return rc;
    }
    if (total > SIZE_MAX) {
        return anvil__error_set(err, ANVIL_E_OVERFLOW, "GGUF file too large for memory");
    }
    gguf_sink *s = &w->sink;
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->cap = (size_t)total;
    s->buf = malloc(total > 0 ? (size_t)total : 1);
    if (s->buf == NULL) {
        return anvil__error_set(err, ANVIL_E_NOMEM, "out of memory for %" PRIu64 " bytes", total);
    }
    rc = write_header(w, err);
    for (size_t i = 0; rc == ANVIL_OK && i < w->n_tensors; ++i) {
        w->next = i;
        rc = stream_one(w, w->tensors[i].data, w->tensors[i].n_bytes, err);
    }
    w->next = 0;
    if (rc != ANVIL_OK) {
        free(s->buf);
    } else {
        *out = s->buf;
        *size = s->used;
    }
    memset(s, 0, sizeof *s);
    s->fd = -1;
    return rc;
}

/* ---- for the metadata editor (gguf_meta.c) ------------------------------------- */

int gguf_writer_header_bytes(const anvil_gguf_writer *w, uint8_t **out, size_t *size, anvil_error *err) {
    return build_header(w, out, size, err);
}

int gguf_sink_open(gguf_sink *s, const char *path, anvil_error *err) { return sink_open_file(s, path, err); }
int gguf_sink_write(gguf_sink *s, const void *data, uint64_t n, anvil_error *err) {
    return sink_write(s, data, n, err);
}
int gguf_sink_flush(gguf_sink *s, anvil_error *err) { return sink_flush(s, err); }
int gguf_sink_commit(gguf_sink *s, anvil_error *err) { return sink_commit(s, err); }
void gguf_sink_discard(gguf_sink *s) { sink_discard(s); }
