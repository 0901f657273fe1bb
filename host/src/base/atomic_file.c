/*
 * Atomic file replacement: temp file (anonymous where the OS allows), fsync,
 * rename; stale temps of dead writers removed. See atomic_file.h.
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
#include "file_set.h"

#define TEMP_TAG ".anvil-"

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
            return anvil__error_set(err, ANVIL_E_IO, "writing '%s' failed: %s", what,
                                   strerror(errno));
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
    if (digits == 0 || *p != '-' || p[1] == '\0' || pid <= 0 || pid > 0x7fffffff ||
        pid == (long long)getpid()) {
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

/* ---- open / hold / commit ----------------------------------------------------- */

static int anonymous_files_usable(void) {
    /* linkat() names an O_TMPFILE through /proc/self/fd without privileges. */
    return access("/proc/self/fd", X_OK) == 0;
}

int afile_open(afile *f, const char *path, anvil_error *err) {
    memset(f, 0, sizeof *f);
    f->fd = -1;
    const char *base = afile_base_of(path);
    if (*base == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
        return anvil__error_set(err, ANVIL_E_IO, "'%s' names a folder, not a file", path);
    }
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        return anvil__error_set(err, ANVIL_E_IO,
                               "'%s' is a folder: the output would have to replace it; remove "
                               "it or choose another output name",
                               path);
    }
    char *dir = afile_dir_of(path);
    f->final_path = strdup(path);
    if (dir == NULL || f->final_path == NULL) {
        free(dir);
        afile_discard(f);
        return anvil__error_set(err, ANVIL_E_NOMEM, "out of memory");
    }
    /* Finish what a killed writer left in this folder, then clear its temps. */
    const int lock = afile_lock_dir(dir, 1);
    file_set_recover_dir(dir);
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
        return anvil__error_set(err, ANVIL_E_IO, "cannot create a temp file next to '%s': %s",
                               path, strerror(e));
    }
    return ANVIL_OK;
}

/* Give the anonymous file a temp name in its folder. */
static int name_anonymous(afile *f, anvil_error *err) {
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", f->fd);
    char *dir = afile_dir_of(f->final_path);
    if (dir == NULL) {
        return anvil__error_set(err, ANVIL_E_NOMEM, "out of memory");
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
        return anvil__error_set(err, ANVIL_E_IO, "cannot give the temp file of '%s' a name: %s",
                               f->final_path, strerror(e));
    }
    f->anonymous = 0;
    return ANVIL_OK;
}

int afile_hold(afile *f, anvil_error *err) {
    if (f->fd < 0) {
        return f->tmp_path != NULL ? ANVIL_OK
                                   : anvil__error_set(err, ANVIL_E_STATE, "no temp file to hold");
    }
    const char *shown = f->tmp_path != NULL ? f->tmp_path : f->final_path;
    if (fsync(f->fd) != 0) {
        return anvil__error_set(err, ANVIL_E_IO, "fsync of '%s' failed: %s", shown,
                               strerror(errno));
    }
    /* Replacing a file keeps its permission bits. */
    struct stat st;
    if (stat(f->final_path, &st) == 0 && S_ISREG(st.st_mode) &&
        fchmod(f->fd, st.st_mode & 07777) != 0) {
        return anvil__error_set(err, ANVIL_E_IO, "chmod of '%s' failed: %s", shown,
                               strerror(errno));
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
        return anvil__error_set(err, ANVIL_E_IO, "closing '%s' failed: %s", f->tmp_path,
                               strerror(errno));
    }
    return ANVIL_OK;
}

int afile_commit(afile *f, anvil_error *err) {
    int rc = afile_hold(f, err);
    if (rc == ANVIL_OK && rename(f->tmp_path, f->final_path) != 0) {
        rc = anvil__error_set(err, ANVIL_E_IO, "cannot rename '%s' to '%s': %s", f->tmp_path,
                             f->final_path, strerror(errno));
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

ANVIL_API int anvil_file_write_atomic(const char *path, const void *data, size_t size,
                                      anvil_error *err) {
    if (path == NULL || (data == NULL && size > 0)) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_file_write_atomic: NULL argument");
    }
    afile f;
    int rc = afile_open(&f, path, err);
    if (rc != ANVIL_OK) {
        return rc;
    }
    rc = afile_write_all(f.fd, data, size, path, err);
    if (rc != ANVIL_OK) {
        afile_discard(&f);
        return rc;
    }
    return afile_commit(&f, err);
}
