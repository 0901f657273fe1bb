/* SPDX-License-Identifier: MIT */
/* Trusted paths for plugins and configs; the rules are in trust.h. */
#include "trust.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int trust_insecure_env(void) {
    const char *v = getenv(ANVIL_INSECURE_ENV);
    return v != NULL && *v != '\0' && strcmp(v, "0") != 0;
}

static int owner_ok(const struct stat *st) { return st->st_uid == 0 || st->st_uid == geteuid(); }

/* A user-private group (the Debian/Ubuntu default with umask 002): named
 * like its owner and with no other members, so group-writable means
 * writable by the owner alone. */
static int private_group(const struct stat *st) {
    char pbuf[4096], gbuf[16384];
    struct passwd pw, *pwp = NULL;
    struct group gr, *grp = NULL;
    if (getpwuid_r(st->st_uid, &pw, pbuf, sizeof pbuf, &pwp) != 0 || pwp == NULL ||
        getgrgid_r(st->st_gid, &gr, gbuf, sizeof gbuf, &grp) != 0 || grp == NULL) {
        return 0;
    }
    if (strcmp(grp->gr_name, pwp->pw_name) != 0 || pwp->pw_gid != st->st_gid) {
        return 0;
    }
    return grp->gr_mem == NULL || grp->gr_mem[0] == NULL ||
           (grp->gr_mem[1] == NULL && strcmp(grp->gr_mem[0], pwp->pw_name) == 0);
}

/* Write bits that let someone other than the owner change it. */
static mode_t foreign_write(const struct stat *st) {
    mode_t w = st->st_mode & (S_IWGRP | S_IWOTH);
    if ((w & S_IWGRP) && private_group(st)) {
        w &= (mode_t)~S_IWGRP;
    }
    return w;
}

/* One path's owner and mode; sticky_ok lets a sticky folder be writable. */
static int check_one(const char *path, const struct stat *st, int sticky_ok, char *why, size_t why_size) {
    if (!owner_ok(st)) {
        snprintf(why, why_size,
                 "%s is owned by uid %u, neither root nor you (uid %u): its owner could change it; "
                 "fix: chown it",
                 path, (unsigned)st->st_uid, (unsigned)geteuid());
        return -1;
    }
    const mode_t w = foreign_write(st);
    if (w != 0 && !(sticky_ok && S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX))) {
        snprintf(why, why_size,
                 "%s is writable by %s (mode %04o): another user could replace what anvil "
                 "loads; fix: chmod go-w %s",
                 path,
                 w == (S_IWGRP | S_IWOTH) ? "group and others"
                 : (w & S_IWOTH)          ? "others"
                                          : "its group",
                 (unsigned)(st->st_mode & 07777), path);
        return -1;
    }
    return 0;
}

/* Every folder above dir (exclusive) up to /: not writable by others
 * unless sticky. Owners are not checked (see trust.h). */
static int check_above(const char *dir, char *why, size_t why_size) {
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", dir);
    for (;;) {
        char *slash = strrchr(buf, '/');
        if (slash == NULL) {
            return 0;
        }
        if (slash == buf) {
            if (buf[1] == '\0') {
                return 0; /* checked "/" */
            }
            buf[1] = '\0';
        } else {
            *slash = '\0';
        }
        struct stat st;
        if (stat(buf, &st) != 0) {
            snprintf(why, why_size, "cannot check %s: %s", buf, strerror(errno));
            return -1;
        }
        if (foreign_write(&st) != 0 && !(st.st_mode & S_ISVTX)) {
            snprintf(why, why_size,
                     "%s (a folder above it) is writable by group or others and not sticky (mode "
                     "%04o): another user could swap the folders below; fix: chmod go-w %s",
                     buf, (unsigned)(st.st_mode & 07777), buf);
            return -1;
        }
    }
}

/* Resolve path (symlinks followed) into real, of the kind wanted (S_IFDIR
 * or S_IFREG), and check its owner and mode. */
static int check_resolved(const char *path, mode_t kind, int sticky_ok, char real[PATH_MAX], char *why,
                          size_t why_size) {
    if (realpath(path, real) == NULL) {
        snprintf(why, why_size, "cannot resolve %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (stat(real, &st) != 0 || (st.st_mode & S_IFMT) != kind) {
        snprintf(why, why_size, "%s is not a %s", real, kind == S_IFDIR ? "folder" : "regular file");
        return -1;
    }
    return check_one(real, &st, sticky_ok, why, why_size);
}

static int check_folder(const char *dir, int sticky_ok, char *why, size_t why_size) {
    char real[PATH_MAX];
    if (check_resolved(dir, S_IFDIR, sticky_ok, real, why, why_size) != 0) {
        return -1;
    }
    return check_above(real, why, why_size);
}

int trust_check_folder(const char *dir, char *why, size_t why_size) { return check_folder(dir, 0, why, why_size); }

int trust_check_file(const char *path, int strict_folder, char *why, size_t why_size) {
    char real[PATH_MAX];
    if (check_resolved(path, S_IFREG, 0, real, why, why_size) != 0) {
        return -1;
    }
    char *slash = strrchr(real, '/');
    if (slash == real) {
        slash[1] = '\0';
    } else {
        *slash = '\0';
    }
    return check_folder(real, !strict_folder, why, why_size);
}
