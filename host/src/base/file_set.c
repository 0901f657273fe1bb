/* SPDX-License-Identifier: MIT */
/*
 * Split sets replaced as one: the journaled, ordered commit, its recovery,
 * the reader's view of an interrupted commit, and the set marks. The design
 * is in file_set.h.
 */
#include "file_set.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "error.h"

#define JOURNAL_TAG ".anvil-commit"
#define JOURNAL_MAX (64u << 20)

typedef struct fs_entry {
    char *final_path, *temp_path, *backup_path;
    unsigned long long new_ino, old_ino; /* old_ino 0: nothing to replace */
} fs_entry;

typedef struct fs_journal {
    char *dir;
    char *path; /* the journal itself */
    char id[FILE_SET_ID_HEX + 1];
    fs_entry *e;
    size_t n;
} fs_journal;

static void journal_free(fs_journal *j) {
    for (size_t i = 0; j->e != NULL && i < j->n; ++i) {
        free(j->e[i].final_path);
        free(j->e[i].temp_path);
        free(j->e[i].backup_path);
    }
    free(j->e);
    free(j->dir);
    free(j->path);
    memset(j, 0, sizeof *j);
}

static char *join(const char *dir, const char *name) {
    const size_t n = strlen(dir) + strlen(name) + 2;
    char *s = malloc(n);
    if (s != NULL) {
        snprintf(s, n, "%s/%s", dir, name);
    }
    return s;
}

static char *journal_path_for(const char *dir, const char *first_base) {
    const size_t n = strlen(dir) + strlen(first_base) + sizeof JOURNAL_TAG + 3;
    char *s = malloc(n);
    if (s != NULL) {
        snprintf(s, n, "%s/.%s" JOURNAL_TAG, dir, first_base);
    }
    return s;
}

/* 1: path exists (its inode in *ino), 0: it does not, -1: cannot tell. */
static int inode_at(const char *path, unsigned long long *ino) {
    struct stat st;
    if (lstat(path, &st) == 0) {
        *ino = (unsigned long long)st.st_ino;
        return 1;
    }
    return errno == ENOENT ? 0 : -1;
}

static int holds(const char *path, unsigned long long ino) {
    unsigned long long have = 0;
    return ino != 0 && inode_at(path, &have) == 1 && have == ino;
}

/* ---- the journal on disk ------------------------------------------------------ */

/* Names are single path components; whitespace and '%' are escaped. */
static void put_name(FILE *f, const char *path) {
    fputc(' ', f);
    for (const unsigned char *p = (const unsigned char *)afile_base_of(path); *p; ++p) {
        if (*p <= ' ' || *p == '%' || *p == 0x7f) {
            fprintf(f, "%%%02x", *p);
        } else {
            fputc(*p, f);
        }
    }
}

static int hex_digit(char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

static char *get_name(const char *dir, char **cursor) {
    char *p = *cursor;
    while (*p == ' ') {
        ++p;
    }
    char *start = p, *out = p;
    while (*p != '\0' && *p != ' ' && *p != '\n') {
        if (*p == '%') {
            const int hi = hex_digit(p[1]), lo = hi < 0 ? -1 : hex_digit(p[2]);
            if (lo < 0 || (hi == 0 && lo == 0) || hi * 16 + lo == '/') {
                return NULL;
            }
            *out++ = (char)(hi * 16 + lo);
            p += 3;
        } else {
            *out++ = *p++;
        }
    }
    *cursor = p;
    if (out == start) {
        return NULL;
    }
    const char saved = *out;
    *out = '\0';
    char *full = strchr(start, '/') == NULL ? join(dir, start) : NULL;
    *out = saved;
    return full;
}

static int journal_write(const fs_journal *j, anvil_error *err) {
    /* Written under a temp name and renamed: the journal is whole or absent.
     * The temp name is one the stale-temp clean-up knows. */
    const size_t n = strlen(j->dir) + strlen(afile_base_of(j->e[0].final_path)) + 48;
    char *tmp = malloc(n);
    if (tmp == NULL) {
        return anvil__nomem(err);
    }
    snprintf(tmp, n, "%s/.%s.anvil-%ld-journal", j->dir, afile_base_of(j->e[0].final_path), (long)getpid());
    const int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f == NULL) {
        const int e = errno;
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        free(tmp);
        return anvil__error_set(err, ANVIL_E_IO, "cannot write the commit journal in '%s': %s", j->dir, strerror(e));
    }
    fprintf(f, "anvil-commit 1\nid %s\nn %zu\n", j->id, j->n);
    for (size_t i = 0; i < j->n; ++i) {
        fprintf(f, "p %llu %llu", j->e[i].new_ino, j->e[i].old_ino);
        put_name(f, j->e[i].final_path);
        put_name(f, j->e[i].temp_path);
        put_name(f, j->e[i].backup_path);
        fputc('\n', f);
    }
    fputs("end\n", f);
    int ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    const int e = errno;
    ok = fclose(f) == 0 && ok;
    if (ok && rename(tmp, j->path) != 0) {
        ok = 0;
    }
    if (!ok) {
        unlink(tmp);
        free(tmp);
        return anvil__error_set(err, ANVIL_E_IO, "cannot write the commit journal '%s': %s", j->path,
                                strerror(e != 0 ? e : errno));
    }
    free(tmp);
    (void)afile_sync_dir(j->dir);
    return ANVIL_OK;
}

/* Parse the journal at path. 0 on success. */
static int journal_read(fs_journal *j, const char *dir, const char *path) {
    memset(j, 0, sizeof *j);
    /* O_NONBLOCK: a FIFO planted under a journal's name must not block the
     * open; the regular-file check below then refuses it. */
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (f == NULL) {
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
        (unsigned long long)st.st_size > JOURNAL_MAX) {
        fclose(f);
        return -1;
    }
    char *text = malloc((size_t)st.st_size + 1);
    const size_t got = text != NULL ? fread(text, 1, (size_t)st.st_size, f) : 0;
    fclose(f);
    if (text == NULL || got != (size_t)st.st_size || memchr(text, '\0', got) != NULL) {
        free(text);
        return -1;
    }
    text[got] = '\0';
    j->dir = strdup(dir);
    j->path = strdup(path);
    int ok = j->dir != NULL && j->path != NULL;
    size_t n = 0;
    char *p = text;
    int used = 0;
    ok = ok && sscanf(p, "anvil-commit 1\nid %32[0-9a-f]\nn %zu\n%n", j->id, &n, &used) == 2 && used > 0 && n > 0 &&
         n <= UINT16_MAX;
    if (ok) {
        p += used;
        j->e = calloc(n, sizeof *j->e);
        ok = j->e != NULL;
    }
    for (size_t i = 0; ok && i < n; ++i) {
        fs_entry *e = &j->e[i];
        used = 0;
        ok = sscanf(p, "p %llu %llu%n", &e->new_ino, &e->old_ino, &used) == 2 && used > 0 && e->new_ino != 0;
        if (ok) {
            p += used;
            j->n = i + 1; /* owned from here, for journal_free */
            e->final_path = get_name(dir, &p);
            e->temp_path = get_name(dir, &p);
            e->backup_path = get_name(dir, &p);
            ok = e->final_path != NULL && e->temp_path != NULL && e->backup_path != NULL && *p == '\n';
            p += ok;
        }
    }
    ok = ok && strcmp(p, "end\n") == 0;
    free(text);
    if (!ok) {
        journal_free(j);
        return -1;
    }
    return 0;
}

/* ---- the two directions ------------------------------------------------------ */

/* Every new part is at its temp or its final name. */
static int can_go_forward(const fs_journal *j) {
    for (size_t i = 0; i < j->n; ++i) {
        if (!holds(j->e[i].final_path, j->e[i].new_ino) && !holds(j->e[i].temp_path, j->e[i].new_ino)) {
            return 0;
        }
    }
    return 1;
}

/* Every old file is at its final or its backup name. */
static int can_go_back(const fs_journal *j) {
    for (size_t i = 0; i < j->n; ++i) {
        const fs_entry *e = &j->e[i];
        if (e->old_ino != 0 && !holds(e->final_path, e->old_ino) && !holds(e->backup_path, e->old_ino)) {
            return 0;
        }
    }
    return 1;
}

typedef struct fs_fail {
    int e;
    const char *from, *to;
} fs_fail;

static int do_rename(const char *from, const char *to, fs_fail *fail) {
    if (rename(from, to) == 0) {
        return 1;
    }
    if (fail != NULL) {
        fail->e = errno;
        fail->from = from;
        fail->to = to;
    }
    return 0;
}

static int move_aside(const fs_entry *e, fs_fail *fail) {
    if (e->old_ino == 0 || !holds(e->final_path, e->old_ino)) {
        return 1; /* nothing to replace, or already aside */
    }
    return do_rename(e->final_path, e->backup_path, fail);
}

static int move_in(const fs_entry *e, fs_fail *fail) {
    if (holds(e->final_path, e->new_ino)) {
        return 1;
    }
    return do_rename(e->temp_path, e->final_path, fail);
}

/* Steps 2-4; any state of an interrupted forward run is a valid start. */
static int forward(const fs_journal *j, fs_fail *fail) {
    if (!move_aside(&j->e[0], fail)) {
        return 0;
    }
    for (size_t i = 1; i < j->n; ++i) {
        if (!move_aside(&j->e[i], fail) || !move_in(&j->e[i], fail)) {
            return 0;
        }
    }
    return move_in(&j->e[0], fail);
}

/* The undo: the new part 1 leaves first, the old part 1 returns last. */
static int restore(const fs_entry *e) {
    if (e->old_ino != 0 && holds(e->backup_path, e->old_ino)) {
        return do_rename(e->backup_path, e->final_path, NULL);
    }
    if (holds(e->final_path, e->new_ino)) {
        return do_rename(e->final_path, e->temp_path, NULL);
    }
    return 1;
}

static int back(const fs_journal *j) {
    const fs_entry *first = &j->e[0];
    if (holds(first->final_path, first->new_ino) && !do_rename(first->final_path, first->temp_path, NULL)) {
        return 0;
    }
    int ok = 1;
    for (size_t i = 1; i < j->n; ++i) {
        ok &= restore(&j->e[i]);
    }
    return ok && restore(first);
}

static void remove_if_holds(const char *path, unsigned long long ino) {
    if (holds(path, ino)) {
        unlink(path);
    }
}

/* After a direction completed: the other direction's files, then the journal. */
static void clean_up(const fs_journal *j, int went_forward) {
    for (size_t i = 0; i < j->n; ++i) {
        if (went_forward) {
            remove_if_holds(j->e[i].backup_path, j->e[i].old_ino);
        } else {
            remove_if_holds(j->e[i].temp_path, j->e[i].new_ino);
        }
    }
    (void)afile_sync_dir(j->dir);
    unlink(j->path);
    (void)afile_sync_dir(j->dir);
}

/* Resolve one interrupted commit: forward when every new part survives. */
static void recover(fs_journal *j) {
    if (can_go_forward(j) && forward(j, NULL)) {
        clean_up(j, 1);
    } else if (can_go_back(j) && back(j)) {
        clean_up(j, 0);
    }
    /* Else (only a hand-edited folder gets here) the journal stays. */
}

static int is_journal_name(const char *name) {
    const size_t len = strlen(name), tag = sizeof JOURNAL_TAG - 1;
    return name[0] == '.' && len > tag + 1 && strcmp(name + len - tag, JOURNAL_TAG) == 0;
}

void file_set_recover_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (d == NULL) {
        return;
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!is_journal_name(de->d_name)) {
            continue;
        }
        char **nn = realloc(names, (n + 1) * sizeof *nn);
        if (nn == NULL) {
            break;
        }
        names = nn;
        names[n] = join(dir, de->d_name);
        n += names[n] != NULL;
    }
    closedir(d);
    for (size_t i = 0; i < n; ++i) {
        fs_journal j;
        if (journal_read(&j, dir, names[i]) == 0) {
            recover(&j);
            journal_free(&j);
        }
        free(names[i]);
    }
    free(names);
}

/* ---- opening an output ------------------------------------------------------- */

int file_set_output_open(afile *f, const char *path, anvil_error *err) {
    anvil_error ignored;
    if (afile_output_kind(path, &ignored) == AFILE_REPLACE) {
        char *dir = afile_dir_of(path);
        if (dir != NULL) {
            /* Before afile_open clears stale temps: a journal may need them. */
            const int lock = afile_lock_dir(dir, 1);
            file_set_recover_dir(dir);
            afile_unlock_dir(lock);
            free(dir);
        }
    }
    return afile_open(f, path, err);
}

int file_set_check_part(const char *path, anvil_error *err) {
    const int kind = afile_output_kind(path, err);
    if (kind == AFILE_STREAM) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "'%s' is not a file: the parts of a split set are written beside "
                                "each other and renamed into place as one, which a device, a FIFO "
                                "or standard output cannot be; choose another output name",
                                path);
    }
    return kind < 0 ? kind : ANVIL_OK;
}

ANVIL_API int anvil_file_write_atomic(const char *path, const void *data, size_t size, anvil_error *err) {
    if (path == NULL || (data == NULL && size > 0)) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_file_write_atomic: NULL argument");
    }
    afile f;
    int rc = file_set_output_open(&f, path, err);
    if (rc != ANVIL_OK) {
        return rc;
    }
    rc = afile_write_all(f.fd, data, size, f.final_path, err);
    if (rc != ANVIL_OK) {
        afile_discard(&f);
        return rc;
    }
    return afile_commit(&f, err);
}

/* ---- commit ------------------------------------------------------------------ */

static void random_id(char out[FILE_SET_ID_HEX + 1]) {
    unsigned char b[FILE_SET_ID_HEX / 2];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
        /* No entropy source: pid and clock still tell two runs apart. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)getpid() << 48;
        for (size_t i = 0; i < sizeof b; ++i) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            b[i] = (unsigned char)(x >> 56);
        }
    }
    for (size_t i = 0; i < sizeof b; ++i) {
        snprintf(out + 2 * i, 3, "%02x", b[i]);
    }
}

static void mark(const char *path, const char *id, size_t no, size_t count) {
    char v[FILE_SET_ID_HEX + 32];
    const int len = snprintf(v, sizeof v, "%s %zu %zu", id, no, count);
    /* Best effort: filesystems without user xattrs carry no marks. */
    (void)setxattr(path, FILE_SET_MARK_XATTR, v, (size_t)len, 0);
}

/* The journal's entries for the held parts; the old files as they are now. */
static int plan(fs_journal *j, afile *parts, size_t n, anvil_error *err) {
    j->e = calloc(n, sizeof *j->e);
    if (j->e == NULL) {
        return anvil__nomem(err);
    }
    j->n = n;
    for (size_t i = 0; i < n; ++i) {
        fs_entry *e = &j->e[i];
        char *dir = afile_dir_of(parts[i].final_path);
        const int same = dir != NULL && strcmp(dir, j->dir) == 0;
        free(dir);
        if (!same) {
            return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                    "the parts of a split set must share one folder: '%s' is "
                                    "not in '%s'",
                                    parts[i].final_path, j->dir);
        }
        e->final_path = strdup(parts[i].final_path);
        e->temp_path = strdup(parts[i].tmp_path);
        const size_t bn = strlen(parts[i].tmp_path) + 8;
        e->backup_path = malloc(bn);
        if (e->final_path == NULL || e->temp_path == NULL || e->backup_path == NULL) {
            return anvil__nomem(err);
        }
        snprintf(e->backup_path, bn, "%s-old", parts[i].tmp_path);
        if (inode_at(e->temp_path, &e->new_ino) != 1) {
            return anvil__error_set(err, ANVIL_E_IO, "the temp file '%s' of '%s' vanished", e->temp_path,
                                    e->final_path);
        }
        struct stat st;
        if (lstat(e->final_path, &st) == 0) {
            if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
                return anvil__error_set(err, ANVIL_E_IO,
                                        "'%s' exists and is not a file: the split set cannot "
                                        "replace it; remove it or choose another output name",
                                        e->final_path);
            }
            e->old_ino = (unsigned long long)st.st_ino;
        } else if (errno != ENOENT) {
            return anvil__error_set(err, ANVIL_E_IO, "cannot stat '%s': %s", e->final_path, strerror(errno));
        }
        mark(e->temp_path, j->id, i + 1, n);
    }
    return ANVIL_OK;
}

int file_set_commit(afile *parts, size_t n, anvil_error *err) {
    if (n == 0) {
        return ANVIL_OK;
    }
    if (n == 1) {
        return afile_commit(&parts[0], err);
    }
    for (size_t i = 0; i < n; ++i) {
        if (parts[i].fd >= 0 || parts[i].tmp_path == NULL) {
            for (size_t k = 0; k < n; ++k) {
                afile_discard(&parts[k]);
            }
            return anvil__error_set(err, ANVIL_E_STATE, "part %zu of the set is not complete", i + 1);
        }
    }
    fs_journal j;
    memset(&j, 0, sizeof j);
    j.dir = afile_dir_of(parts[0].final_path);
    j.path = j.dir != NULL ? journal_path_for(j.dir, afile_base_of(parts[0].final_path)) : NULL;
    int rc = j.path != NULL ? ANVIL_OK : anvil__nomem(err);
    const int lock = rc == ANVIL_OK ? afile_lock_dir(j.dir, 1) : -1;
    if (rc == ANVIL_OK) {
        file_set_recover_dir(j.dir); /* a writer that died since we opened */
        random_id(j.id);
        rc = plan(&j, parts, n, err);
    }
    if (rc == ANVIL_OK) {
        rc = journal_write(&j, err);
    }
    if (rc == ANVIL_OK) {
        fs_fail fail = { 0, NULL, NULL };
        if (forward(&j, &fail)) {
            (void)afile_sync_dir(j.dir);
            clean_up(&j, 1);
            for (size_t i = 0; i < n; ++i) {
                free(parts[i].tmp_path);
                parts[i].tmp_path = NULL; /* in place: nothing to remove */
            }
        } else if (back(&j)) {
            clean_up(&j, 0);
            rc = anvil__error_set(err, ANVIL_E_IO,
                                  "cannot rename '%s' to '%s': %s; the new split set was not "
                                  "written and the old files are back in place",
                                  fail.from, fail.to, strerror(fail.e));
        } else {
            rc = anvil__error_set(err, ANVIL_E_IO,
                                  "cannot rename '%s' to '%s': %s, and undoing the partial "
                                  "commit failed too; the journal '%s' records it: the next "
                                  "anvil write in that folder (or anvil's reader) resolves it",
                                  fail.from, fail.to, strerror(fail.e), j.path);
            for (size_t i = 0; i < n; ++i) {
                free(parts[i].tmp_path); /* the journal needs them */
                parts[i].tmp_path = NULL;
            }
        }
    }
    afile_unlock_dir(lock);
    journal_free(&j);
    for (size_t i = 0; i < n; ++i) {
        afile_discard(&parts[i]);
    }
    return rc;
}

/* ---- the reader's view -------------------------------------------------------- */

int file_set_view_open(file_set_view *v, const char *first_path, size_t n_parts, anvil_error *err) {
    memset(v, 0, sizeof *v);
    char *dir = afile_dir_of(first_path);
    char *jpath = dir != NULL ? journal_path_for(dir, afile_base_of(first_path)) : NULL;
    if (jpath == NULL) {
        free(dir);
        return anvil__nomem(err);
    }
    v->lock_fd = afile_lock_dir(dir, 0);
    int rc = ANVIL_OK;
    struct stat st;
    if (lstat(jpath, &st) == 0) {
        fs_journal j;
        if (journal_read(&j, dir, jpath) != 0 || j.n != n_parts ||
            strcmp(afile_base_of(j.e[0].final_path), afile_base_of(first_path)) != 0) {
            rc = anvil__error_set(err, ANVIL_E_GGUF_SPLIT,
                                  "'%s': an interrupted write left the journal '%s', which cannot "
                                  "be read; remove it and write the set again",
                                  first_path, jpath);
            if (j.e != NULL) {
                journal_free(&j);
            }
        } else {
            const int fwd = can_go_forward(&j), bwd = !fwd && can_go_back(&j);
            v->paths = calloc(n_parts, sizeof *v->paths);
            rc = v->paths != NULL ? ANVIL_OK : anvil__nomem(err);
            for (size_t i = 0; rc == ANVIL_OK && i < n_parts; ++i) {
                const fs_entry *e = &j.e[i];
                const char *p = NULL;
                if (fwd) {
                    p = holds(e->temp_path, e->new_ino) ? e->temp_path : e->final_path;
                } else if (bwd && e->old_ino != 0) {
                    p = holds(e->backup_path, e->old_ino) ? e->backup_path : e->final_path;
                } else {
                    rc = anvil__error_set(err, ANVIL_E_NOT_FOUND,
                                          "'%s': a write of this split set was interrupted and %s; write the "
                                          "set again",
                                          first_path,
                                          bwd ? "the set it replaced did not exist"
                                              : "neither the new nor the old set is complete");
                    break;
                }
                v->paths[i] = strdup(p);
                v->n = i + 1;
                if (v->paths[i] == NULL) {
                    rc = anvil__nomem(err);
                }
            }
            journal_free(&j);
        }
    }
    free(jpath);
    free(dir);
    if (rc != ANVIL_OK) {
        file_set_view_close(v);
    }
    return rc;
}

void file_set_view_close(file_set_view *v) {
    for (size_t i = 0; v->paths != NULL && i < v->n; ++i) {
        free(v->paths[i]);
    }
    free(v->paths);
    afile_unlock_dir(v->lock_fd);
    memset(v, 0, sizeof *v);
    v->lock_fd = -1;
}

int file_set_read_mark(const char *path, char id[FILE_SET_ID_HEX + 1], uint32_t *no, uint32_t *count) {
    char v[FILE_SET_ID_HEX + 40];
    const ssize_t len = getxattr(path, FILE_SET_MARK_XATTR, v, sizeof v - 1);
    if (len <= 0) {
        return 0;
    }
    v[len] = '\0';
    char hex[FILE_SET_ID_HEX + 1];
    unsigned a = 0, b = 0;
    int used = 0;
    if (sscanf(v, "%32[0-9a-f] %u %u%n", hex, &a, &b, &used) != 3 || used != (int)len ||
        strlen(hex) != FILE_SET_ID_HEX) {
        /* Unreadable: a mark nothing else can match. */
        memset(id, 'x', FILE_SET_ID_HEX);
        id[FILE_SET_ID_HEX] = '\0';
        *no = 0;
        *count = 0;
        return 1;
    }
    memcpy(id, hex, sizeof hex);
    *no = a;
    *count = b;
    return 1;
}
