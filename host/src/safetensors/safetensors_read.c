/* SPDX-License-Identifier: MIT */
/*
 * safetensors reader: three ways to get a validated anvil_st (borrow the
 * caller's bytes, copy them, or map a file), and the accessors.
 *
 * Nothing is handed out until anvil__st_validate_image has passed the whole
 * header and the data size; on failure the caller gets NULL and a message.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "anvil/safetensors.h"
#include "error.h"
#include "file_input.h"
#include "safetensors_internal.h"

static void st_release(anvil_st *st) {
    if (st == NULL) {
        return;
    }
    anvil__st_free_tables(st);
    if (st->backing == ST_MALLOC) {
        free(st->owned);
    } else if (st->backing == ST_MMAP && st->owned != NULL) {
        munmap(st->owned, st->owned_size);
    }
    free(st);
}

ANVIL_API void anvil_st_close(anvil_st *st) { st_release(st); }

/* Validate st's image and hand it out, or release it. */
static int finish(anvil_st **out, anvil_st *st, const char *where, anvil_error *err) {
    const int rc = anvil__st_validate_image(st, where, err);
    if (rc != ANVIL_OK) {
        st_release(st);
        return rc;
    }
    anvil__error_clear(err);
    *out = st;
    return ANVIL_OK;
}

ANVIL_API int anvil_st_parse(anvil_st **out, const void *bytes, size_t size, anvil_error *err) {
    if (out == NULL || (bytes == NULL && size != 0)) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_st_parse: NULL argument");
    }
    *out = NULL;
    anvil_st *st = calloc(1, sizeof *st);
    if (st == NULL) {
        return anvil__error_set(err, ANVIL_E_NOMEM, "safetensors buffer: out of memory");
    }
    st->image = bytes;
    st->image_size = size;
    st->backing = ST_BORROWED;
    return finish(out, st, "safetensors buffer", err);
}

ANVIL_API int anvil_st_parse_copy(anvil_st **out, const void *bytes, size_t size, anvil_error *err) {
    if (out == NULL || (bytes == NULL && size != 0)) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_st_parse_copy: NULL argument");
    }
    *out = NULL;
    anvil_st *st = calloc(1, sizeof *st);
    void *copy = malloc(size ? size : 1);
    if (st == NULL || copy == NULL) {
        free(st);
        free(copy);
        return anvil__error_set(err, ANVIL_E_NOMEM, "safetensors buffer: out of memory copying %zu bytes", size);
    }
    if (size != 0) {
        memcpy(copy, bytes, size);
    }
    st->image = copy;
    st->image_size = size;
    st->backing = ST_MALLOC;
    st->owned = copy;
    return finish(out, st, "safetensors buffer", err);
}

ANVIL_API int anvil_st_open(anvil_st **out, const char *path, anvil_error *err) {
    if (out == NULL || path == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_st_open: NULL argument");
    }
    *out = NULL;
    /* Refused before the open, which for a FIFO would wait for a writer;
     * O_NONBLOCK for a path swapped since (file_input.h). */
    const int checked = file_input_check(path, err);
    if (checked != ANVIL_OK) {
        return checked;
    }
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        return anvil__error_set(err, ANVIL_E_IO, "%s: cannot open: %s", path, strerror(errno));
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        const int e = errno;
        close(fd);
        return anvil__error_set(err, ANVIL_E_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return anvil__error_set(err, ANVIL_E_IO, "%s: not a regular file (safetensors files are memory-mapped)",
                                path);
    }
    if ((uint64_t)sb.st_size > SIZE_MAX) {
        close(fd);
        return anvil__error_set(err, ANVIL_E_IO, "%s: too large to map on this platform", path);
    }
    const size_t size = (size_t)sb.st_size;
    anvil_st *st = calloc(1, sizeof *st);
    if (st == NULL) {
        close(fd);
        return anvil__error_set(err, ANVIL_E_NOMEM, "%s: out of memory", path);
    }
    st->backing = ST_MMAP;
    st->image_size = size;
    if (size >= 8) {
        void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            const int e = errno;
            close(fd);
            free(st);
            return anvil__error_set(err, ANVIL_E_IO, "%s: cannot map %zu bytes: %s", path, size, strerror(e));
        }
        st->owned = map;
        st->owned_size = size;
        st->image = map;
    } else {
        /* Too small to be safetensors; nothing worth mapping (and mmap of
         * an empty file fails). The validator reports it. */
        static const unsigned char empty[1];
        st->image = empty;
    }
    close(fd);
    return finish(out, st, path, err);
}

ANVIL_API size_t anvil_st_count(const anvil_st *st) { return st ? st->count : 0; }

ANVIL_API const anvil_st_tensor *anvil_st_tensor_at(const anvil_st *st, size_t i) {
    return st != NULL && i < st->count ? &st->tensors[i] : NULL;
}

ANVIL_API const anvil_st_tensor *anvil_st_find(const anvil_st *st, const char *name) {
    if (st == NULL || name == NULL) {
        return NULL;
    }
    size_t lo = 0, hi = st->count;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        const int c = strcmp(name, st->by_name[mid]->name);
        if (c == 0) {
            return st->by_name[mid];
        }
        if (c < 0) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return NULL;
}

ANVIL_API int anvil_st_has_metadata(const anvil_st *st) { return st ? st->has_metadata : 0; }

ANVIL_API size_t anvil_st_metadata_count(const anvil_st *st) { return st ? st->meta_count : 0; }

ANVIL_API int anvil_st_metadata_at(const anvil_st *st, size_t i, const char **key, const char **value) {
    if (st == NULL || i >= st->meta_count) {
        return ANVIL_E_NOT_FOUND;
    }
    if (key != NULL) {
        *key = st->meta_keys[i];
    }
    if (value != NULL) {
        *value = st->meta_values[i];
    }
    return ANVIL_OK;
}

ANVIL_API const char *anvil_st_metadata_get(const anvil_st *st, const char *key) {
    if (st == NULL || key == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < st->meta_count; i++) {
        if (strcmp(st->meta_keys[i], key) == 0) {
            return st->meta_values[i];
        }
    }
    return NULL;
}

ANVIL_API uint64_t anvil_st_header_size(const anvil_st *st) { return st ? st->header_size : 0; }

ANVIL_API uint64_t anvil_st_data_size(const anvil_st *st) { return st ? st->data_size : 0; }
