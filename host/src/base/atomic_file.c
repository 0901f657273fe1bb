/* SPDX-License-Identifier: MIT */
/*
 * Atomic file replacement: temp file (anonymous where the OS allows), fsync,
 * rename; stale temps of dead writers removed; outputs that are not regular
 * files (devices, FIFOs, descriptors) written into instead. See
 * atomic_file.h. A base utility: it includes nothing above error.h.
 */
#include "atomic_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "error.h"

#define TEMP_TAG ".anvil-"
/* How long a FIFO output may wait for its reader to open it. */
#define FIFO_WAIT_MS 10000

char *afile_dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (slash == NULL) {
        return strdup(".");
    }
    const size_t len = slash == path ? 1 : (size_t)(slash - path);
    char *d = malloc(len + 1);
    if (d != NULL) {
        memcpy(d, path, len);
        d[len] = '\0';
    }
    return d;
}

const char *afile_base_of(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash != NULL ? slash + 1 : path;
}

int afile_sync_dir(const char *dir) {
    const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return errno;
    }
    int e = 0;
    /* Some filesystems cannot fsync a folder (EINVAL): nothing to do. */
    if (fsync(fd) != 0 && errno != EINVAL) {
        e = errno;
    }
    close(fd);
    return e;
}

int afile_lock_dir(const char *dir, int exclusive) {
    const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    int rc;
    do {
        rc = flock(fd, exclusive ? LOCK_EX : LOCK_SH);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

void afile_unlock_dir(int fd) {
    if (fd >= 0) {
        close(fd); /* releases the flock */
    }
}

int afile_write_all(int fd, const void *p, size_t n, const char *what, anvil_error *err) {
    const unsigned char *b = p;
    while (n > 0) {
        const ssize_t k = write(fd, b, n > (1u << 30) ? (1u << 30) : n);
        if (k < 0) {
            if (errno == EINTR) {
                continue;
            }
            return anvil__error_set(err, ANVIL_E_IO, "writing '%s' failed: %s", what, strerror(errno));
        }
        b += k;
        n -= (size_t)k;
    }
    return ANVIL_OK;
}

void afile_start_writeback(int fd, uint64_t offset, uint64_t n) {
#if defined(__linux__) && defined(SYNC_FILE_RANGE_WRITE)
    if (n > 0 && offset <= (uint64_t)INT64_MAX && n <= (uint64_t)INT64_MAX) {
        (void)sync_file_range(fd, (off64_t)offset, (off64_t)n, SYNC_FILE_RANGE_WRITE);
    }
#else
    (void)fd;
    (void)offset;
    (void)n;
#endif
}

/* ---- temp names ------------------------------------------------------------ */

int afile_temp_is_stale(const char *name, const char *base) {
    const size_t blen = strlen(base);
    if (name[0] != '.' || strncmp(name + 1, base, blen) != 0 ||
        strncmp(name + 1 + blen, TEMP_TAG, sizeof TEMP_TAG - 1) != 0) {
        return 0;
    }
    const char *p = name + 1 + blen + sizeof TEMP_TAG - 1;
    long long pid = 0;
    int digits = 0;
    while (*p >= '0' && *p <= '9' && digits < 10) {
        pid = pid * 10 + (*p++ - '0');
        digits++;
    }
    if (digits == 0 || *p != '-' || p[1] == '\0' || pid <= 0 || pid > 0x7fffffff || pid == (long long)getpid()) {
        return 0;
    }
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

int afile_remove_stale(const char *dir, const char *base) {
    DIR *d = opendir(dir);
    if (d == NULL) {
        return 0;
    }
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (afile_temp_is_stale(e->d_name, base) && unlinkat(dirfd(d), e->d_name, 0) == 0) {
            removed++;
        }
    }
    closedir(d);
    return removed;
}

/* dir/.base.anvil-<pid>-<6 random letters> */
static char *temp_name(const char *dir, const char *base) {
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    unsigned char rnd[6];
    if (getrandom(rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        for (size_t i = 0; i < sizeof rnd; ++i) {
            rnd[i] = (unsigned char)((unsigned long)ts.tv_nsec >> (i * 5));
        }
    }
    char suffix[7];
    for (size_t i = 0; i < 6; ++i) {
        suffix[i] = alphabet[rnd[i] % (sizeof alphabet - 1)];
    }
    suffix[6] = '\0';
    const size_t n = strlen(dir) + strlen(base) + 48;
    char *s = malloc(n);
    if (s != NULL) {
        snprintf(s, n, "%s/.%s" TEMP_TAG "%ld-%s", dir, base, (long)getpid(), suffix);
    }
    return s;
}

/* ---- what the output is -------------------------------------------------------- */

/* The descriptor a name stands for, or -1. "-" and /dev/stdout are 1,
 * /dev/stderr 2, /dev/fd/N and /proc/self/fd/N are N. The descriptor itself
 * is used (duplicated, never reopened through /proc): the bytes go where the
 * shell pointed it, at its offset (`>>` appends), whatever it is -- a pipe,
 * a socket, a file -- and no /proc is needed. */
static int descriptor_named(const char *path) {
    if (strcmp(path, "-") == 0 || strcmp(path, "/dev/stdout") == 0) {
        return 1;
    }
    if (strcmp(path, "/dev/stderr") == 0) {
        return 2;
    }
    const char *n = strncmp(path, "/dev/fd/", 8) == 0          ? path + 8
                    : strncmp(path, "/proc/self/fd/", 14) == 0 ? path + 14
                                                               : NULL;
    if (n == NULL || *n < '0' || *n > '9' || strlen(n) > 9) {
        return -1;
    }
    int fd = 0;
    for (; *n >= '0' && *n <= '9'; ++n) {
        fd = fd * 10 + (*n - '0');
    }
    return *n == '\0' ? fd : -1;
}

/* 1 when following the links of path passes through /proc, whose fd links
 * lead to a process's open file (/dev/stdin is /proc/self/fd/0): such a
 * file has no folder of its own to rename a temp file in, and the link
 * outside /proc (in /dev, as root) must never be replaced. */
static int link_reaches_proc(const char *path) {
    char cur[4096];
    snprintf(cur, sizeof cur, "%s", path);
    for (int hop = 0; hop < 40; ++hop) {
        struct stat st;
        if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode)) {
            return 0;
        }
        char *dir = afile_dir_of(cur);
        char *real = dir != NULL ? realpath(dir, NULL) : NULL;
        free(dir);
        char target[4096];
        const ssize_t n = readlink(cur, target, sizeof target - 1);
        const int in_proc = real != NULL && strncmp(real, "/proc/", 6) == 0;
        if (in_proc || real == NULL || n <= 0) {
            free(real);
            return in_proc;
        }
        target[n] = '\0';
        const size_t rlen = strlen(real);
        if (target[0] == '/') {
            memcpy(cur, target, (size_t)n + 1);
        } else if (rlen + 1 + (size_t)n < sizeof cur) {
            memcpy(cur, real, rlen);
            cur[rlen] = '/';
            memcpy(cur + rlen + 1, target, (size_t)n + 1);
        } else {
            free(real);
            return 0;
        }
        free(real);
    }
    return 0;
}

int afile_output_kind(const char *path, anvil_error *err) {
    if (descriptor_named(path) >= 0) {
        return AFILE_STREAM;
    }
    const char *base = afile_base_of(path);
    if (*base == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
        return anvil__error_set(err, ANVIL_E_IO, "'%s' names a folder, not a file", path);
    }
    struct stat lst, st;
    if (lstat(path, &lst) != 0) {
        return AFILE_REPLACE; /* missing (or unreadable: creating the temp says why) */
    }
    if (S_ISDIR(lst.st_mode)) {
        return anvil__error_set(err, ANVIL_E_IO,
                                "'%s' is a folder: the output would have to replace it; remove "
                                "it or choose another output name",
                                path);
    }
    if (stat(path, &st) != 0) {
        return AFILE_REPLACE; /* a dangling link: replaced by the new file */
    }
    if (S_ISREG(st.st_mode) && S_ISLNK(lst.st_mode) && link_reaches_proc(path)) {
        return anvil__error_set(err, ANVIL_E_IO,
                                "'%s' leads through /proc to a process's open file: anvil cannot "
                                "replace that file by name; write to '-' (standard output) or "
                                "name the file itself",
                                path);
    }
    if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
        return AFILE_REPLACE; /* a link to a folder is replaced too, as rename() does */
    }
    if (S_ISSOCK(st.st_mode)) {
        return anvil__error_set(err, ANVIL_E_IO,
                                "'%s' is a socket: anvil writes a file, a device or a FIFO, never "
                                "into a socket, and does not replace one; choose another output",
                                path);
    }
    return AFILE_STREAM; /* character or block device, FIFO */
}

/* Open a device or FIFO for writing, or duplicate a named descriptor. */
static int open_stream(afile *f, const char *path, anvil_error *err) {
    const int named = descriptor_named(path);
    int fd;
    if (named >= 0) {
        fd = fcntl(named, F_DUPFD_CLOEXEC, 3);
        if (fd < 0) {
            return anvil__error_set(err, ANVIL_E_IO, "'%s' names descriptor %d, which is not open: %s", path, named,
                                    strerror(errno));
        }
    } else {
        /* O_NONBLOCK: opening a FIFO to write would wait, forever, until
         * some process opens it to read; with it, open answers at once
         * (ENXIO: nobody reads yet). A reader started just after anvil is
         * the usual race (`anvil ... fifo & consumer < fifo`), so the open is
         * retried for FIFO_WAIT_MS, then refused: anvil never hangs here. The
         * flag is cleared below so that the writes wait for a slow reader.
         * O_NOCTTY: a terminal never becomes the controlling one. */
        fd = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        for (int waited = 0; fd < 0 && errno == ENXIO && waited < FIFO_WAIT_MS; waited += 20) {
            const struct timespec ts = { 0, 20 * 1000 * 1000 };
            nanosleep(&ts, NULL);
            fd = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        }
        if (fd < 0 && errno == ENXIO) {
            return anvil__error_set(err, ANVIL_E_IO,
                                    "'%s' is a FIFO that no process opened to read within %d "
                                    "seconds: start the reader first",
                                    path, FIFO_WAIT_MS / 1000);
        }
        if (fd < 0) {
            return anvil__error_set(err, ANVIL_E_IO, "cannot open '%s': %s", path, strerror(errno));
        }
        const int fl = fcntl(fd, F_GETFL);
        if (fl >= 0) {
            (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
        }
    }
    struct stat st;
    const char *why = NULL;
    if (fstat(fd, &st) != 0) {
        why = "cannot be examined (fstat failed)";
    } else if (S_ISDIR(st.st_mode)) {
        why = "is a folder";
    } else if (named < 0 && S_ISREG(st.st_mode)) {
        why = "became a regular file while it was being opened; try again";
    } else if (isatty(fd)) {
        why = "is a terminal: a model file is binary; redirect it to a file or a pipe";
    }
    if (why != NULL) {
        close(fd);
        return anvil__error_set(err, ANVIL_E_IO, "'%s' %s", path, why);
    }
    f->final_path = strdup(strcmp(path, "-") == 0 ? "standard output" : path);
    if (f->final_path == NULL) {
        close(fd);
        return anvil__nomem(err);
    }
    f->fd = fd;
    f->stream = 1;
    return ANVIL_OK;
}

/* The end of a stream: durable where that means something, then closed. */
static int finish_stream(afile *f, anvil_error *err) {
    struct stat st;
    if (fstat(f->fd, &st) == 0 && (S_ISBLK(st.st_mode) || S_ISREG(st.st_mode)) && fsync(f->fd) != 0 &&
        errno != EINVAL) {
        return anvil__error_set(err, ANVIL_E_IO, "fsync of '%s' failed: %s", f->final_path, strerror(errno));
    }
    const int rc = close(f->fd);
    f->fd = -1;
    if (rc != 0 && errno != EINTR) {
        return anvil__error_set(err, ANVIL_E_IO, "closing '%s' failed: %s", f->final_path, strerror(errno));
    }
    return ANVIL_OK;
}

/* ---- open / hold / commit ----------------------------------------------------- */

static int anonymous_files_usable(void) {
    /* linkat() names an O_TMPFILE through /proc/self/fd without privileges. */
    return access("/proc/self/fd", X_OK) == 0;
}

int afile_open(afile *f, const char *path, anvil_error *err) {
    memset(f, 0, sizeof *f);
    f->fd = -1;
    const int kind = afile_output_kind(path, err);
    if (kind < 0) {
        return kind;
    }
    if (kind == AFILE_STREAM) {
        return open_stream(f, path, err);
    }
    const char *base = afile_base_of(path);
    char *dir = afile_dir_of(path);
    f->final_path = strdup(path);
    if (dir == NULL || f->final_path == NULL) {
        free(dir);
        afile_discard(f);
        return anvil__nomem(err);
    }
    /* Clear the temps killed writers of this name left. */
    const int lock = afile_lock_dir(dir, 1);
    afile_remove_stale(dir, base);
    afile_unlock_dir(lock);

    if (anonymous_files_usable()) {
        f->fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
        f->anonymous = f->fd >= 0;
    }
    for (int attempt = 0; f->fd < 0 && attempt < 100; ++attempt) {
        free(f->tmp_path);
        f->tmp_path = temp_name(dir, base);
        if (f->tmp_path == NULL) {
            break;
        }
        f->fd = open(f->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (f->fd < 0 && errno != EEXIST) {
            break;
        }
    }
    free(dir);
    if (f->fd < 0) {
        const int e = errno;
        free(f->tmp_path);
        f->tmp_path = NULL; /* nothing was created */
        afile_discard(f);
        return anvil__error_set(err, ANVIL_E_IO, "cannot create a temp file next to '%s': %s", path, strerror(e));
    }
    return ANVIL_OK;
}

/* Give the anonymous file a temp name in its folder. */
static int name_anonymous(afile *f, anvil_error *err) {
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", f->fd);
    char *dir = afile_dir_of(f->final_path);
    if (dir == NULL) {
        return anvil__nomem(err);
    }
    int e = EEXIST;
    for (int attempt = 0; e == EEXIST && attempt < 100; ++attempt) {
        free(f->tmp_path);
        f->tmp_path = temp_name(dir, afile_base_of(f->final_path));
        if (f->tmp_path == NULL) {
            e = ENOMEM;
            break;
        }
        e = linkat(AT_FDCWD, proc, AT_FDCWD, f->tmp_path, AT_SYMLINK_FOLLOW) == 0 ? 0 : errno;
    }
    free(dir);
    if (e != 0) {
        free(f->tmp_path);
        f->tmp_path = NULL;
        return anvil__error_set(err, ANVIL_E_IO, "cannot give the temp file of '%s' a name: %s", f->final_path,
                                strerror(e));
    }
    f->anonymous = 0;
    return ANVIL_OK;
}

int afile_hold(afile *f, anvil_error *err) {
    if (f->stream) {
        return anvil__error_set(err, ANVIL_E_STATE,
                                "'%s' is written in one pass: it cannot be held and renamed into "
                                "place (the parts of a split set must be files)",
                                f->final_path);
    }
    if (f->fd < 0) {
        return f->tmp_path != NULL ? ANVIL_OK : anvil__error_set(err, ANVIL_E_STATE, "no temp file to hold");
    }
    const char *shown = f->tmp_path != NULL ? f->tmp_path : f->final_path;
    if (fsync(f->fd) != 0) {
        return anvil__error_set(err, ANVIL_E_IO, "fsync of '%s' failed: %s", shown, strerror(errno));
    }
    /* Replacing a file keeps its permission bits. */
    struct stat st;
    if (stat(f->final_path, &st) == 0 && S_ISREG(st.st_mode) && fchmod(f->fd, st.st_mode & 07777) != 0) {
        return anvil__error_set(err, ANVIL_E_IO, "chmod of '%s' failed: %s", shown, strerror(errno));
    }
    if (f->anonymous) {
        const int rc = name_anonymous(f, err);
        if (rc != ANVIL_OK) {
            return rc;
        }
    }
    const int rc = close(f->fd);
    f->fd = -1;
    if (rc != 0) {
        return anvil__error_set(err, ANVIL_E_IO, "closing '%s' failed: %s", f->tmp_path, strerror(errno));
    }
    return ANVIL_OK;
}

int afile_commit(afile *f, anvil_error *err) {
    if (f->stream) {
        const int rc = finish_stream(f, err);
        afile_discard(f);
        return rc;
    }
    int rc = afile_hold(f, err);
    if (rc == ANVIL_OK && rename(f->tmp_path, f->final_path) != 0) {
        rc = anvil__error_set(err, ANVIL_E_IO, "cannot rename '%s' to '%s': %s", f->tmp_path, f->final_path,
                              strerror(errno));
    }
    if (rc == ANVIL_OK) {
        free(f->tmp_path);
        f->tmp_path = NULL; /* in place: nothing to remove */
        char *dir = afile_dir_of(f->final_path);
        if (dir != NULL) {
            (void)afile_sync_dir(dir); /* the rename survives a power cut (best effort) */
            free(dir);
        }
    }
    afile_discard(f);
    return rc;
}

void afile_discard(afile *f) {
    if (f->fd >= 0) {
        close(f->fd); /* an anonymous temp vanishes with its last descriptor */
    }
    if (f->tmp_path != NULL) {
        unlink(f->tmp_path);
    }
    free(f->tmp_path);
    free(f->final_path);
    memset(f, 0, sizeof *f);
    f->fd = -1;
}
