/* SPDX-License-Identifier: MIT */
/*
 * Inputs that cannot be mapped (FIFOs, sockets, devices) refused before
 * they are opened. See file_input.h. A base utility: includes nothing
 * above error.h.
 */
#include "file_input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"

int file_input_check(const char *path, anvil_error *err) {
    struct stat st;
    if (path == NULL || stat(path, &st) != 0) {
        return ANVIL_OK; /* the caller's open reports it */
    }
    const char *what = S_ISFIFO(st.st_mode)   ? "a FIFO"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                                              : NULL;
    if (what == NULL) {
        return ANVIL_OK;
    }
    return anvil__error_set(err, ANVIL_E_IO,
                            "'%s' is %s, not a regular file: anvil maps its input files and cannot read a pipe, a "
                            "socket or a device; copy it to a regular file first (cat '%s' > "
                            "file) and give that",
                            path, what, path);
}

/* Grow buf to hold cap bytes and a NUL; cap never passes max_bytes + 1, so
 * one byte too many is what tells a file over the limit. */
static int grow(char **buf, size_t *cap, size_t max_bytes) {
    size_t want = *cap != 0 ? *cap * 2 : 65536;
    if (want > max_bytes || want < *cap) want = max_bytes + 1;
    char *nb = realloc(*buf, want + 1);
    if (nb == NULL) return -1;
    *buf = nb;
    *cap = want;
    return 0;
}

/* "N GiB" / "N MiB" / "N bytes" for a limit in a message. */
static void limit_text(size_t max_bytes, char *buf, size_t cap) {
    if (max_bytes >= ((size_t)1 << 30)) snprintf(buf, cap, "%zu GiB", max_bytes >> 30);
    else if (max_bytes >= ((size_t)1 << 20)) snprintf(buf, cap, "%zu MiB", max_bytes >> 20);
    else snprintf(buf, cap, "%zu bytes", max_bytes);
}

/* path opened to read: O_NONBLOCK (a path swapped for a FIFO since the
 * check cannot block), then refused unless it is a regular file. */
static int open_regular(const char *path, const char *kind, FILE **out, anvil_error *err) {
    *out = NULL;
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        return anvil__error_set(err, errno == ENOENT ? ANVIL_E_NOT_FOUND : ANVIL_E_IO, "cannot open %s: %s", path,
                                strerror(errno));
    }
    struct stat st;
    memset(&st, 0, sizeof st);
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        const char *what = S_ISDIR(st.st_mode)                          ? "a folder"
                           : S_ISFIFO(st.st_mode)                       ? "a FIFO"
                           : S_ISSOCK(st.st_mode)                       ? "a socket"
                           : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                        : "not readable";
        close(fd);
        return anvil__error_set(err, ANVIL_E_IO,
                                "%s is %s, not a regular file (%s is expected there): replace it with the file", path,
                                what, kind);
    }
    /* back to blocking reads: a regular file never waits */
    const int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    *out = fdopen(fd, "rb");
    if (*out == NULL) {
        close(fd);
        return anvil__error_set(err, ANVIL_E_NOMEM, "%s: out of memory", path);
    }
    return ANVIL_OK;
}

int file_input_open(const char *path, const char *kind, FILE **out, anvil_error *err) {
    *out = NULL;
    const int rc = file_input_check(path, err);
    return rc != ANVIL_OK ? rc : open_regular(path, kind, out, err);
}

int file_input_read(const char *path, size_t max_bytes, const char *kind, char **out, size_t *len, anvil_error *err) {
    *out = NULL;
    *len = 0;
    FILE *f = NULL;
    int rc = file_input_open(path, kind, &f, err);
    if (rc != ANVIL_OK) return rc;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n > max_bytes) {
            char lim[48];
            limit_text(max_bytes, lim, sizeof lim);
            rc = anvil__error_set(err, ANVIL_E_FORMAT, "%s is over %s: not %s", path, lim, kind);
            goto out;
        }
        if (n == cap && grow(&buf, &cap, max_bytes) != 0) {
            rc = anvil__error_set(err, ANVIL_E_NOMEM, "%s: out of memory", path);
            goto out;
        }
        const size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        rc = anvil__error_set(err, ANVIL_E_IO, "cannot read %s", path);
        goto out;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    buf = NULL;
out:
    fclose(f);
    free(buf);
    return rc;
}
