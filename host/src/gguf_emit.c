/*
 * GGUF writer, output side: the bytes exactly as ggml's gguf_write_to_file
 * lays them out (version 3, u64 counts, KVs in order, tensor infos with
 * offsets computed here, one zero pad after the directory, each tensor's data
 * zero-padded to the alignment including the last), written to a temp file
 * in the destination folder and renamed into place once complete.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf_writer_internal.h"

#define SINK_BUFFER (1u << 20)

void gguf_writer_stream_cleanup(anvil_gguf_writer *w);

/* ---- layout ---------------------------------------------------------------- */

int gguf_writer_offsets(const anvil_gguf_writer *w, uint64_t *offsets, uint64_t *data_size,
                        anvil_error *err) {
    uint64_t at = 0;
    for (size_t i = 0; i < w->n_tensors; ++i) {
        uint64_t padded;
        if (offsets != NULL) {
            offsets[i] = at;
        }
        if (gguf_pad_overflows(w->tensors[i].n_bytes, w->alignment, &padded) ||
            gguf_add_overflows(at, padded, &at)) {
            return anvil_error_set(err, ANVIL_E_OVERFLOW, "tensor data size overflows");
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
        return anvil_error_set(err, ANVIL_E_OVERFLOW, "GGUF header size overflows");
    }
    *out = n;
    return ANVIL_OK;
}

ANVIL_API int anvil_gguf_writer_header_size(const anvil_gguf_writer *w, uint64_t *out,
                                            anvil_error *err) {
    uint64_t n = 0;
    int rc = unpadded_header_size(w, &n, err);
    if (rc == ANVIL_OK && gguf_pad_overflows(n, w->alignment, out)) {
        rc = anvil_error_set(err, ANVIL_E_OVERFLOW, "GGUF header size overflows");
    }
    return rc;
}

ANVIL_API int anvil_gguf_writer_file_size(const anvil_gguf_writer *w, uint64_t *out,
                                          anvil_error *err) {
    uint64_t header = 0, data = 0;
    int rc = anvil_gguf_writer_header_size(w, &header, err);
    if (rc == ANVIL_OK) {
        rc = gguf_writer_offsets(w, NULL, &data, err);
    }
    if (rc == ANVIL_OK && gguf_add_overflows(header, data, out)) {
        rc = anvil_error_set(err, ANVIL_E_OVERFLOW, "GGUF file size overflows");
    }
    return rc;
}

/* The header with its padding, in one allocation. */
static int build_header(const anvil_gguf_writer *w, uint8_t **out, size_t *size,
                        anvil_error *err) {
    uint64_t total = 0, unpadded = 0;
    int rc = unpadded_header_size(w, &unpadded, err);
    if (rc == ANVIL_OK) {
        rc = anvil_gguf_writer_header_size(w, &total, err);
    }
    if (rc != ANVIL_OK) {
        return rc;
    }
    if (total > SIZE_MAX) {
        return anvil_error_set(err, ANVIL_E_OVERFLOW, "GGUF header too large");
    }
    uint64_t *offsets = malloc((w->n_tensors > 0 ? w->n_tensors : 1) * sizeof *offsets);
    uint8_t *h = calloc(1, total > 0 ? (size_t)total : 1); /* zeroed: the padding */
    if (offsets == NULL || h == NULL) {
        free(offsets);
        free(h);
        return anvil_error_set(err, ANVIL_E_NOMEM, "out of memory for the GGUF header");
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
        return anvil_error_set(err, ANVIL_E_INTERNAL, "GGUF header size mismatch");
    }
    *out = h;
    *size = (size_t)total;
    return ANVIL_OK;
}

/* ---- sinks ------------------------------------------------------------------ */

static int write_all(int fd, const uint8_t *p, size_t n, const char *path, anvil_error *err) {
    while (n > 0) {
        const ssize_t k = write(fd, p, n > (1u << 30) ? (1u << 30) : n);
        if (k < 0) {
            if (errno == EINTR) {
                continue;
            }
            return anvil_error_set(err, ANVIL_E_IO, "writing '%s' failed: %s", path,
                                   strerror(errno));
        }
        p += k;
        n -= (size_t)k;
    }
    return ANVIL_OK;
}

static int sink_flush(gguf_sink *s, anvil_error *err) {
    if (s->fd < 0 || s->used == 0) {
        return ANVIL_OK;
    }
    const int rc = write_all(s->fd, s->buf, s->used, s->tmp_path, err);
    s->used = 0;
    return rc;
}

static int sink_write(gguf_sink *s, const void *data, uint64_t n, anvil_error *err) {
    const uint8_t *p = data;
    if (s->fd < 0) {
        if (n > s->cap - s->used) {
            return anvil_error_set(err, ANVIL_E_INTERNAL, "memory sink overrun");
        }
        memcpy(s->buf + s->used, p, (size_t)n);
        s->used += (size_t)n;
        s->written += n;
        return ANVIL_OK;
    }
    s->written += n;
    if (n >= s->cap) {
        /* Large tensor data goes straight to the file. */
        int rc = sink_flush(s, err);
        return rc != ANVIL_OK ? rc : write_all(s->fd, p, (size_t)n, s->tmp_path, err);
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
    if (s->fd >= 0) {
        close(s->fd);
    }
    if (s->tmp_path != NULL) {
        unlink(s->tmp_path); /* NULL once renamed into place */
    }
    if (s->is_file) {
        free(s->buf);
    }
    free(s->tmp_path);
    free(s->final_path);
    memset(s, 0, sizeof *s);
    s->fd = -1;
}

/* Temp file next to path (same filesystem, so the rename is atomic). */
static int sink_open_file(gguf_sink *s, const char *path, anvil_error *err) {
    memset(s, 0, sizeof *s);
    s->fd = -1;
    const char *slash = strrchr(path, '/');
    const size_t dir_len = slash != NULL ? (size_t)(slash - path) : 0;
    const char *base = slash != NULL ? slash + 1 : path;
    if (*base == '\0') {
        return anvil_error_set(err, ANVIL_E_INVALID_ARG, "'%s' names a folder, not a file", path);
    }
    const size_t n = strlen(path) + 32;
    s->is_file = 1;
    s->tmp_path = malloc(n);
    s->final_path = strdup(path);
    s->buf = malloc(SINK_BUFFER);
    if (s->tmp_path == NULL || s->final_path == NULL || s->buf == NULL) {
        free(s->tmp_path);
        s->tmp_path = NULL; /* nothing was created */
        sink_discard(s);
        return anvil_error_set(err, ANVIL_E_NOMEM, "out of memory");
    }
    s->cap = SINK_BUFFER;
    if (slash != NULL) {
        snprintf(s->tmp_path, n, "%.*s/.%s.anvil-XXXXXX", (int)dir_len, path, base);
    } else {
        snprintf(s->tmp_path, n, ".%s.anvil-XXXXXX", base);
    }
    s->fd = mkostemp(s->tmp_path, O_CLOEXEC);
    if (s->fd < 0) {
        const int e = errno;
        free(s->tmp_path);
        s->tmp_path = NULL; /* nothing was created */
        sink_discard(s);
        return anvil_error_set(err, ANVIL_E_IO, "cannot create a temp file next to '%s': %s",
                               path, strerror(e));
    }
    return ANVIL_OK;
}

static int sink_commit(gguf_sink *s, anvil_error *err) {
    int rc = sink_flush(s, err);
    if (rc == ANVIL_OK && fsync(s->fd) != 0) {
        rc = anvil_error_set(err, ANVIL_E_IO, "fsync of '%s' failed: %s", s->tmp_path,
                             strerror(errno));
    }
    if (rc == ANVIL_OK) {
        /* mkstemp makes 0600; keep an existing file's mode, else 0644. */
        struct stat st;
        const mode_t mode = stat(s->final_path, &st) == 0 ? (st.st_mode & 07777) : 0644;
        if (fchmod(s->fd, mode) != 0) {
            rc = anvil_error_set(err, ANVIL_E_IO, "chmod of '%s' failed: %s", s->tmp_path,
                                 strerror(errno));
        }
    }
    if (rc == ANVIL_OK && close(s->fd) != 0) {
        s->fd = -1;
        rc = anvil_error_set(err, ANVIL_E_IO, "closing '%s' failed: %s", s->tmp_path,
                             strerror(errno));
        unlink(s->tmp_path);
    } else if (rc == ANVIL_OK) {
        s->fd = -1;
    }
    if (rc == ANVIL_OK && rename(s->tmp_path, s->final_path) != 0) {
        rc = anvil_error_set(err, ANVIL_E_IO, "cannot rename '%s' to '%s': %s", s->tmp_path,
                             s->final_path, strerror(errno));
        unlink(s->tmp_path);
    }
    if (rc == ANVIL_OK) {
        /* Make the rename itself durable (best effort). */
        const char *slash = strrchr(s->final_path, '/');
        char dir[4096];
        snprintf(dir, sizeof dir, "%.*s", slash != NULL ? (int)(slash - s->final_path + 1) : 1,
                 slash != NULL ? s->final_path : ".");
        const int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            (void)fsync(dfd);
            close(dfd);
        }
        free(s->tmp_path);
        s->tmp_path = NULL;
    }
    sink_discard(s);
    return rc;
}

/* ---- streaming -------------------------------------------------------------- */

void gguf_writer_stream_cleanup(anvil_gguf_writer *w) {
    if (w->state == GGUF_W_STREAMING) {
        sink_discard(&w->sink);
        w->state = GGUF_W_BUILDING;
        w->next = 0;
    }
}

ANVIL_API void anvil_gguf_writer_set_progress(anvil_gguf_writer *w, anvil_gguf_progress_fn fn,
                                              void *arg) {
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

ANVIL_API int anvil_gguf_writer_stream_begin(anvil_gguf_writer *w, const char *path,
                                             anvil_error *err) {
    if (w == NULL || path == NULL) {
        return anvil_error_set(err, ANVIL_E_INVALID_ARG, "NULL writer or path");
    }
    if (w->state != GGUF_W_BUILDING) {
        return anvil_error_set(err, ANVIL_E_STATE, "a stream is already being written");
    }
    int rc = sink_open_file(&w->sink, path, err);
    if (rc != ANVIL_OK) {
        return rc;
    }
    w->state = GGUF_W_STREAMING;
    w->next = 0;
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
        return anvil_error_set(err, ANVIL_E_GGUF_WRITER,
                               "an extra tensor (%" PRIu64 " bytes) was written, but all %zu "
                               "declared tensors were already written",
                               size, w->n_tensors);
    }
    const gguf_wtensor *t = &w->tensors[w->next];
    if (size != t->n_bytes) {
        return anvil_error_set(err, ANVIL_E_GGUF_WRITER,
                               "tensor '%s' (%zu of %zu) is %" PRIu64 " bytes but %" PRIu64
                               " bytes were written",
                               t->name, w->next + 1, w->n_tensors, t->n_bytes, size);
    }
    if (data == NULL && size > 0) {
        return anvil_error_set(err, ANVIL_E_INVALID_ARG, "tensor '%s': NULL data", t->name);
    }
    int rc = size > 0 ? sink_write(&w->sink, data, size, err) : ANVIL_OK;
    if (rc == ANVIL_OK) {
        rc = sink_pad(&w->sink, w->alignment, err);
    }
    if (rc == ANVIL_OK) {
        w->next++;
        w->bytes_done += size;
        if (w->progress != NULL) {
            const anvil_gguf_progress p = { w->next, w->n_tensors, w->bytes_done, w->bytes_total,
                                            t->name, 1, 1 };
            w->progress(w->progress_arg, &p);
        }
    }
    return rc;
}

ANVIL_API int anvil_gguf_writer_stream_tensor(anvil_gguf_writer *w, const void *data,
                                              uint64_t size, anvil_error *err) {
    if (w == NULL) {
        return anvil_error_set(err, ANVIL_E_INVALID_ARG, "NULL writer");
    }
    if (w->state != GGUF_W_STREAMING) {
        return anvil_error_set(err, ANVIL_E_STATE, "no stream was begun");
    }
    const int rc = stream_one(w, data, size, err);
    if (rc != ANVIL_OK) {
        gguf_writer_stream_cleanup(w);
    }
    return rc;
}

ANVIL_API int anvil_gguf_writer_stream_finish(anvil_gguf_writer *w, anvil_error *err) {
    if (w == NULL) {
        return anvil_error_set(err, ANVIL_E_INVALID_ARG, "NULL writer");
    }
    if (w->state != GGUF_W_STREAMING) {
        return anvil_error_set(err, ANVIL_E_STATE, "no stream was begun");
    }
    if (w->next < w->n_tensors) {
        const int rc = anvil_error_set(err, ANVIL_E_GGUF_WRITER,
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

/* ---- buffered ------------------------------------------------------------------ */

static int check_all_data(const anvil_gguf_writer *w, anvil_error *err) {
    if (w->state != GGUF_W_BUILDING) {
        return anvil_error_set(err, ANVIL_E_STATE, "a stream is being written");
    }
    for (size_t i = 0; i < w->n_tensors; ++i) {
        if (w->tensors[i].data == NULL && w->tensors[i].n_bytes > 0) {
            return anvil_error_set(err, ANVIL_E_GGUF_WRITER,
                                   "tensor '%s' was declared without data: give its bytes to "
                                   "add_tensor or write it with the streaming calls",
                                   w->tensors[i].name);
        }
    }
    return ANVIL_OK;
}

ANVIL_API int anvil_gguf_writer_write_file(anvil_gguf_writer *w, const char *path,
                                           anvil_error *err) {
    if (w == NULL) {
        return anvil_error_set(err, ANVIL_E_INVALID_ARG, "NULL writer");
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

ANVIL_API int anvil_gguf_writer_write_memory(anvil_gguf_writer *w, void **out, size_t *size,
                                             anvil_error *err) {
    if (w == NULL || out == NULL || size == NULL) {
        return anvil_error_set(err, ANVIL_E_INVALID_ARG, "NULL argument");
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
        return anvil_error_set(err, ANVIL_E_OVERFLOW, "GGUF file too large for memory");
    }
    gguf_sink *s = &w->sink;
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->cap = (size_t)total;
    s->buf = malloc(total > 0 ? (size_t)total : 1);
    if (s->buf == NULL) {
        return anvil_error_set(err, ANVIL_E_NOMEM, "out of memory for %" PRIu64 " bytes", total);
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
