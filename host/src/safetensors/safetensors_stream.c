/* SPDX-License-Identifier: MIT */
/*
 * safetensors stream frames: read exactly one frame (8-byte length, header,
 * precisely the data the header describes) and stop, so frames can be laid
 * back to back in a pipe, socket or file.
 *
 * The header is validated before any data is read, which is what tells us
 * how many data bytes belong to the frame. The data buffer grows as bytes
 * actually arrive, so a hostile header claiming terabytes fails as a
 * truncated stream rather than as a giant allocation.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "anvil/safetensors.h"
#include "error.h"
#include "safetensors_internal.h"

typedef struct source {
    /* Read up to n bytes; 0 with *got == 0 means end of stream; otherwise
     * an errno value. */
    int (*read)(void *ctx, unsigned char *buf, size_t n, size_t *got);
    void *ctx;
    const char *where;
} source;

static int fd_read(void *ctx, unsigned char *buf, size_t n, size_t *got) {
    const int fd = *(const int *)ctx;
    for (;;) {
        const ssize_t r = read(fd, buf, n);
        if (r >= 0) {
            *got = (size_t)r;
            return 0;
        }
        if (errno != EINTR) {
            return errno;
        }
    }
}

static int file_read(void *ctx, unsigned char *buf, size_t n, size_t *got) {
    FILE *f = ctx;
    *got = fread(buf, 1, n, f);
    if (*got == 0 && ferror(f)) {
        return errno != 0 ? errno : EIO;
    }
    return 0;
}

/* Fill buf[0..n) unless the stream ends first; *got says how far it got. */
static int read_full(source *src, unsigned char *buf, size_t n, size_t *got, anvil_error *err) {
    *got = 0;
    while (*got < n) {
        size_t k = 0;
        const int e = src->read(src->ctx, buf + *got, n - *got, &k);
        if (e != 0) {
            return anvil__error_set(err, ANVIL_E_IO, "%s: read failed: %s", src->where, strerror(e));
        }
        if (k == 0) {
            break;
        }
        *got += k;
    }
    return ANVIL_OK;
}

static int read_frame(anvil_st **out, source *src, anvil_error *err) {
    *out = NULL;
    unsigned char len8[8];
    size_t got = 0;
    int rc = read_full(src, len8, sizeof len8, &got, err);
    if (rc != ANVIL_OK) {
        return rc;
    }
    if (got == 0) {
        anvil__error_clear(err);
        return ANVIL_OK; /* clean end of stream */
    }
    if (got < 8) {
        return anvil__error_set(err, ANVIL_E_ST_TOO_SMALL,
                                "%s: the stream ends %zu bytes into a frame's 8-byte header "
                                "length; it is truncated",
                                src->where, got);
    }
    const uint64_t n = anvil__st_load_u64le(len8);
    if (n > ANVIL_ST_MAX_HEADER) {
        return anvil__error_set(err, ANVIL_E_ST_HEADER_TOO_LARGE,
                                "%s: header length %llu exceeds the 100,000,000-byte limit; the "
                                "stream is corrupt or not safetensors",
                                src->where, (unsigned long long)n);
    }
    size_t cap = 8 + (size_t)n;
    unsigned char *buf = malloc(cap);
    anvil_st *st = calloc(1, sizeof *st);
    if (buf == NULL || st == NULL) {
        free(buf);
        free(st);
        return anvil__error_set(err, ANVIL_E_NOMEM, "%s: out of memory for a %llu-byte header", src->where,
                                (unsigned long long)n);
    }
    memcpy(buf, len8, 8);
    rc = read_full(src, buf + 8, (size_t)n, &got, err);
    if (rc == ANVIL_OK && got < n) {
        rc = anvil__error_set(err, ANVIL_E_ST_HEADER_PAST_END,
                              "%s: the stream ends %zu bytes into a %llu-byte header; it is "
                              "truncated",
                              src->where, got, (unsigned long long)n);
    }
    uint64_t need = 0;
    if (rc == ANVIL_OK) {
        rc = anvil__st_build_header(st, buf + 8, (size_t)n, src->where, &need, err);
    }
    if (rc != ANVIL_OK) {
        free(buf);
        free(st);
        return rc;
    }

    /* The data: exactly `need` bytes, read in growing chunks. */
    const size_t head = 8 + (size_t)n;
    uint64_t have = 0;
    while (have < need) {
        if (head + have == cap) {
            uint64_t want = (uint64_t)cap * 2;
            if (want < (uint64_t)1 << 20) {
                want = (uint64_t)1 << 20;
            }
            if (want - head > need) {
                want = head + need;
            }
            unsigned char *nb = want <= SIZE_MAX ? realloc(buf, (size_t)want) : NULL;
            if (nb == NULL) {
                rc = anvil__error_set(err, ANVIL_E_NOMEM, "%s: out of memory for a frame holding %llu data bytes",
                                      src->where, (unsigned long long)need);
                break;
            }
            buf = nb;
            cap = (size_t)want;
        }
        rc = read_full(src, buf + head + have, cap - head - (size_t)have, &got, err);
        if (rc != ANVIL_OK) {
            break;
        }
        have += got;
        if (head + have < cap) {
            /* End of stream inside the data: name the tensor cut short. */
            rc = anvil__st_bind_data(st, buf + head, have, src->where, err);
            break;
        }
    }
    if (rc == ANVIL_OK) {
        st->image = buf;
        st->image_size = head + (size_t)need;
        st->backing = ST_MALLOC;
        st->owned = buf;
        rc = anvil__st_bind_data(st, buf + head, need, src->where, err);
    }
    if (rc != ANVIL_OK) {
        anvil__st_free_tables(st);
        free(st);
        free(buf);
        return rc;
    }
    anvil__error_clear(err);
    *out = st;
    return ANVIL_OK;
}

ANVIL_API int anvil_st_read_frame_fd(anvil_st **out, int fd, anvil_error *err) {
    if (out == NULL || fd < 0) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_st_read_frame_fd: bad argument");
    }
    char where[64];
    snprintf(where, sizeof where, "safetensors stream (fd %d)", fd);
    source src = { fd_read, &fd, where };
    return read_frame(out, &src, err);
}

ANVIL_API int anvil_st_read_frame_file(anvil_st **out, FILE *stream, anvil_error *err) {
    if (out == NULL || stream == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_st_read_frame_file: NULL argument");
    }
    source src = { file_read, stream, "safetensors stream" };
    return read_frame(out, &src, err);
}
