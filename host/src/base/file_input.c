/* SPDX-License-Identifier: MIT */
/*
 * Inputs that cannot be mapped (FIFOs, sockets, devices) refused before
 * they are opened. See file_input.h. A base utility: includes nothing
 * above error.h.
 */
#include "file_input.h"

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
