/*
 * Atomic save: the new file is written beside the old one as
 * PATH.tmp.<pid>.<n>.<nanoseconds>, flushed to disk, then renamed over PATH,
 * and the folder is flushed so the rename itself survives a power cut.
 * rename() within one folder replaces PATH in one step, so a reader (or a
 * crash) sees either the old file or the complete new one, never a mix.
 * Any failure before the rename removes the temp file and leaves PATH as it
 * was.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "anvil/safetensors.h"
#include "error.h"
#include "safetensors_internal.h"

static atomic_uint save_counter;

/* Open a fresh temp file next to path; fills tmp (cap bytes). */
static int open_temp(const char *path, char *tmp, size_t cap) {
    for (int attempt = 0; attempt < 100; attempt++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(tmp, cap, "%s.tmp.%ld.%u.%ld", path, (long)getpid(),
                 atomic_fetch_add(&save_counter, 1u), (long)ts.tv_nsec);
        const int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST) {
            return fd;
        }
    }
    errno = EEXIST;
    return -1;
}

/* fsync the folder holding path, so the rename is durable. */
static int sync_folder(const char *path) {
    const char *slash = strrchr(path, '/');
    char *dir;
    if (slash == NULL) {
        dir = malloc(2);
        if (dir != NULL) {
            memcpy(dir, ".", 2);
        }
    } else {
        const size_t len = slash == path ? 1 : (size_t)(slash - path);
        dir = malloc(len + 1);
        if (dir != NULL) {
            memcpy(dir, path, len);
            dir[len] = '\0';
        }
    }
    if (dir == NULL) {
        return ENOMEM;
    }
    int e = 0;
    const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        e = errno;
    } else {
        /* Some filesystems cannot fsync a folder (EINVAL): nothing to do. */
        if (fsync(fd) != 0 && errno != EINVAL) {
            e = errno;
        }
        close(fd);
    }
    free(dir);
    return e;
}

ANVIL_API int anvil_st_writer_save(const anvil_st_writer *w, const char *path, anvil_error *err) {
    if (w == NULL || path == NULL || *path == '\0') {
        return anvil_error_set(err, ANVIL_E_INVALID_ARG, "anvil_st_writer_save: bad argument");
    }
    /* Everything that can fail without touching the filesystem, first. */
    anvil_st_plan plan;
    int rc = anvil_st_writer_plan(w, &plan, err);
    if (rc != ANVIL_OK) {
        return rc;
    }
    const size_t cap = strlen(path) + 80;
    char *tmp = malloc(cap);
    if (tmp == NULL) {
        anvil_st_plan_free(&plan);
        return anvil_error_set(err, ANVIL_E_NOMEM, "%s: out of memory", path);
    }
    const int fd = open_temp(path, tmp, cap);
    if (fd < 0) {
        const int e = errno;
        rc = anvil_error_set(err, ANVIL_E_IO,
                             "%s: cannot create a temporary file beside it: %s; nothing was "
                             "written",
                             path, strerror(e));
        free(tmp);
        anvil_st_plan_free(&plan);
        return rc;
    }
    /* Replacing a file keeps its permission bits. */
    struct stat old;
    if (stat(path, &old) == 0 && S_ISREG(old.st_mode)) {
        (void)fchmod(fd, old.st_mode & 07777);
    }

    rc = anvil_st_plan_write_fd(&plan, fd, tmp, err);
    anvil_st_plan_free(&plan);
    const char *step = NULL;
    int e = 0;
    if (rc == ANVIL_OK && fsync(fd) != 0) {
        e = errno;
        step = "fsync";
    }
    if (close(fd) != 0 && rc == ANVIL_OK && step == NULL) {
        e = errno;
        step = "close";
    }
    if (rc == ANVIL_OK && step == NULL && rename(tmp, path) != 0) {
        e = errno;
        step = "rename";
    }
    if (rc != ANVIL_OK || step != NULL) {
        unlink(tmp);
        if (rc == ANVIL_OK) {
            rc = anvil_error_set(err, ANVIL_E_IO,
                                 "%s: not saved, left untouched: %s of the temporary file %s "
                                 "failed: %s",
                                 path, step, tmp, strerror(e));
        } else {
            anvil_error_prefix(err, "%s: not saved, left untouched", path);
        }
        free(tmp);
        return rc;
    }
    free(tmp);
    e = sync_folder(path);
    if (e != 0) {
        return anvil_error_set(err, ANVIL_E_IO,
                               "%s: saved, but flushing its folder failed (%s): the rename may "
                               "not survive a power cut",
                               path, strerror(e));
    }
    anvil_error_clear(err);
    return ANVIL_OK;
}
