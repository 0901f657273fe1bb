/* SPDX-License-Identifier: MIT */
/*
 * Metadata edits: write a GGUF file again with new KVs, touching the tensor
 * bytes only when the edit moves them (anvil meta).
 *
 * The header-only path builds the new header with the writer, checks that it
 * ends exactly where the old data section starts and that the writer lays
 * every tensor where it already is, then makes the new file from the new
 * header and the old data bytes: a reflink clone of the whole file with the
 * header written over it (O(1) on btrfs, XFS, ...), or else the header
 * followed by a kernel-side copy of the data (copy_file_range), or a plain
 * copy from the mapping. Every path goes through the writer's atomic sink.
 * When the output is a device, a FIFO or standard output, the header and the
 * data are plain writes in file order (no clone, no kernel copy, no seek).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf_writer_internal.h"

/* Whether w lays src's tensors out exactly where they are, behind a header
 * of exactly src's data offset. */
static int same_layout(const anvil_gguf *src, const anvil_gguf_writer *w, uint64_t header_size, anvil_error *err,
                       int *same) {
    *same = 0;
    const size_t n = anvil_gguf_tensor_count(src);
    if (anvil_gguf_part_count(src) != 1 || w->n_tensors != n || header_size != anvil_gguf_data_offset(src) ||
        w->alignment != anvil_gguf_alignment(src)) {
        return ANVIL_OK;
    }
    uint64_t *offsets = malloc((n ? n : 1) * sizeof *offsets);
    if (offsets == NULL) {
        return anvil__nomem(err);
    }
    uint64_t data_size = 0;
    int rc = gguf_writer_offsets(w, offsets, &data_size, err);
    int ok = rc == ANVIL_OK;
    for (size_t i = 0; ok && i < n; ++i) {
        ok = offsets[i] == anvil_gguf_tensor_at(src, i)->offset;
    }
    free(offsets);
    *same = ok;
    return rc;
}

/* The old data section behind the new header, into the sink's file. */
static int copy_data(gguf_sink *s, const anvil_gguf *src, int src_fd, anvil_error *err) {
    anvil_gguf_part_info p;
    anvil_gguf_part(src, 0, &p);
    int rc = gguf_sink_flush(s, err);
    loff_t in = (loff_t)p.data_offset;
    uint64_t left = p.file_size - p.data_offset;
    /* In the kernel when it can (and a reflink on filesystems that share
     * extents); from the mapping otherwise. */
    while (rc == ANVIL_OK && left > 0 && src_fd >= 0 && !s->file.stream) {
        const ssize_t k = copy_file_range(src_fd, &in, s->fd, NULL, left > (1u << 30) ? (1u << 30) : (size_t)left, 0);
        if (k <= 0) {
            if (k < 0 && errno == EINTR) {
                continue;
            }
            break; /* EXDEV, ENOSYS, EINVAL ...: the plain copy below */
        }
        left -= (uint64_t)k;
    }
    if (rc == ANVIL_OK && left > 0) {
        const anvil_gguf_tensor *t0 = anvil_gguf_tensor_count(src) ? anvil_gguf_tensor_at(src, 0) : NULL;
        const uint8_t *base = t0 != NULL ? (const uint8_t *)t0->data - t0->file_offset : NULL;
        if (base == NULL) {
            return anvil__error_set(err, ANVIL_E_INTERNAL, "no mapping to copy the data from");
        }
        const uint64_t at = p.file_size - left;
        rc = gguf_sink_write(s, base + at, left, err);
        if (rc == ANVIL_OK) {
            rc = gguf_sink_flush(s, err);
        }
    }
    return rc;
}

static int write_header_only(const anvil_gguf *src, const uint8_t *header, size_t header_size, const char *out_path,
                             anvil_error *err) {
    anvil_gguf_part_info p;
    anvil_gguf_part(src, 0, &p);
    /* The source again by path, for the clone: it must still be the file
     * that was read (same size, same old header). */
    int src_fd = p.path != NULL ? open(p.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC) : -1;
    struct stat st;
    if (src_fd >= 0 && (fstat(src_fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != p.file_size)) {
        close(src_fd);
        return anvil__error_set(err, ANVIL_E_STATE, "'%s' changed while it was being edited; try again", p.path);
    }
    gguf_sink s;
    int rc = gguf_sink_open(&s, out_path, err);
    if (rc != ANVIL_OK) {
        if (src_fd >= 0) {
            close(src_fd);
        }
        return rc;
    }
    /* Never an ioctl into a device the output may be. */
    if (src_fd >= 0 && !s.file.stream && ioctl(s.fd, FICLONE, src_fd) == 0) {
        /* The clone holds the old file: the new header goes over the old one
         * (the same length, so nothing else moves). */
        size_t done = 0;
        while (rc == ANVIL_OK && done < header_size) {
            const ssize_t k = pwrite(s.fd, header + done, header_size - done, (off_t)done);
            if (k < 0 && errno == EINTR) {
                continue;
            }
            if (k <= 0) {
                rc = anvil__error_set(err, ANVIL_E_IO, "writing the header of '%s' failed: %s", out_path,
                                      strerror(errno));
            } else {
                done += (size_t)k;
            }
        }
    } else {
        rc = gguf_sink_write(&s, header, header_size, err);
        if (rc == ANVIL_OK) {
            rc = copy_data(&s, src, src_fd, err);
        }
    }
    if (src_fd >= 0) {
        close(src_fd);
    }
    if (rc == ANVIL_OK) {
        return gguf_sink_commit(&s, err);
    }
    gguf_sink_discard(&s);
    return rc;
}

ANVIL_API int anvil_gguf_write_metadata(const anvil_gguf *src, anvil_gguf_writer *w, const char *out_path,
                                        int *header_only, anvil_error *err) {
    if (src == NULL || w == NULL || out_path == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL argument");
    }
    if (header_only != NULL) {
        *header_only = 0;
    }
    uint8_t *header = NULL;
    size_t header_size = 0;
    int rc = gguf_writer_header_bytes(w, &header, &header_size, err);
    int same = 0;
    if (rc == ANVIL_OK) {
        rc = same_layout(src, w, header_size, err, &same);
    }
    if (rc == ANVIL_OK && same) {
        rc = write_header_only(src, header, header_size, out_path, err);
        if (rc == ANVIL_OK && header_only != NULL) {
            *header_only = 1;
        }
    } else if (rc == ANVIL_OK) {
        rc = anvil_gguf_writer_write_file(w, out_path, err);
    }
    free(header);
    return rc;
}
