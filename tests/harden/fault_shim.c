/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD fault injector for the atomic-write tests: counts the calls that
 * change a folder's names (rename, link, unlink and their *at forms) and,
 * from the environment,
 *   ANVIL_FAULT_KILL_AT=n      SIGKILLs the process just before the n-th one
 *   ANVIL_FAULT_RENAME_FAIL=n  makes the n-th rename fail with EIO
 *   ANVIL_FAULT_NO_TMPFILE=1   makes open(O_TMPFILE) fail (EOPNOTSUPP), as on
 *                              a filesystem without it
 *   ANVIL_FAULT_COUNT=FILE     writes the number of name changes at exit
 * so a test can stop a writer at every step of a commit, or fail any rename,
 * without a hook in the library.
 */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static long name_changes, renames;

static long env_long(const char *name) {
    const char *v = getenv(name);
    return v != NULL ? atol(v) : 0;
}

/* 1 when this rename must fail. */
static int step(int is_rename) {
    ++name_changes;
    if (name_changes == env_long("ANVIL_FAULT_KILL_AT")) {
        raise(SIGKILL);
    }
    return is_rename && ++renames == env_long("ANVIL_FAULT_RENAME_FAIL");
}

#define REAL(ret, name, ...)                \
    static ret (*real)(__VA_ARGS__);        \
    if (real == NULL) {                     \
        void *sym = dlsym(RTLD_NEXT, name); \
        *(void **)&real = sym;              \
    }

int rename(const char *a, const char *b) {
    REAL(int, "rename", const char *, const char *);
    if (step(1)) {
        errno = EIO;
        return -1;
    }
    return real(a, b);
}

int renameat(int da, const char *a, int db, const char *b) {
    REAL(int, "renameat", int, const char *, int, const char *);
    if (step(1)) {
        errno = EIO;
        return -1;
    }
    return real(da, a, db, b);
}

int link(const char *a, const char *b) {
    REAL(int, "link", const char *, const char *);
    step(0);
    return real(a, b);
}

int linkat(int da, const char *a, int db, const char *b, int flags) {
    REAL(int, "linkat", int, const char *, int, const char *, int);
    step(0);
    return real(da, a, db, b, flags);
}

int unlink(const char *a) {
    REAL(int, "unlink", const char *);
    step(0);
    return real(a);
}

int unlinkat(int d, const char *a, int flags) {
    REAL(int, "unlinkat", int, const char *, int);
    step(0);
    return real(d, a, flags);
}

static int open_common(const char *sym, const char *path, int flags, mode_t mode) {
    static int (*real_open)(const char *, int, ...);
    static int (*real_open64)(const char *, int, ...);
    int (**slot)(const char *, int, ...) = sym[4] == '6' ? &real_open64 : &real_open;
    if (*slot == NULL) {
        void *s = dlsym(RTLD_NEXT, sym);
        *(void **)slot = s;
    }
    if ((flags & O_TMPFILE) == O_TMPFILE && env_long("ANVIL_FAULT_NO_TMPFILE")) {
        errno = EOPNOTSUPP;
        return -1;
    }
    return (*slot)(path, flags, mode);
}

/* open and open64 differ only in the symbol they forward to. */
#define OPEN_WRAPPER(name)                                           \
    int name(const char *path, int flags, ...) {                     \
        mode_t mode = 0;                                             \
        if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) { \
            va_list ap;                                              \
            va_start(ap, flags);                                     \
            mode = (mode_t)va_arg(ap, int);                          \
            va_end(ap);                                              \
        }                                                            \
        return open_common(#name, path, flags, mode);                \
    }
OPEN_WRAPPER(open)
OPEN_WRAPPER(open64)

__attribute__((destructor)) static void report(void) {
    const char *f = getenv("ANVIL_FAULT_COUNT");
    if (f != NULL && *f != '\0') {
        FILE *o = fopen(f, "w");
        if (o != NULL) {
            fprintf(o, "%ld %ld\n", name_changes, renames);
            fclose(o);
        }
    }
}
