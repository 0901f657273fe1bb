/* SPDX-License-Identifier: MIT */
/*
 * Inputs that cannot be mapped (FIFOs, sockets, devices) refused before
 * they are opened. See file_input.h. A base utility: includes nothing
 * above error.h.
 */
#include "file_input.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
                            "'%s' is %s: anvil maps its input files and cannot read a pipe, a "
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

int file_input_read(const char *path, size_t max_bytes, const char *kind, char **out, size_t *len, anvil_error *err) {
    *out = NULL;
    *len = 0;
    int rc = file_input_check(path, err);
    if (rc != ANVIL_OK) return rc;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return anvil__error_set(err, errno == ENOENT ? ANVIL_E_NOT_FOUND : ANVIL_E_IO, "cannot open %s: %s", path,
                                strerror(errno));
    }
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n > max_bytes) {
            rc = anvil__error_set(err, ANVIL_E_FORMAT, "%s is over %zu GiB: not %s", path, max_bytes >> 30, kind);
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
