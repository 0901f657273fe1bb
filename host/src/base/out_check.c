/* SPDX-License-Identifier: MIT */
/*
 * out_check: an output path that is one of the run's inputs is refused
 * before anything is written (anvil_output_check, anvil/anvil.h). Every
 * writer replaces its output atomically, so `anvil convert m
 * m/model-00001-of-00002.safetensors` would otherwise swap a shard for the
 * GGUF made from it. Two paths name one file when stat() gives the same
 * device and inode (links followed: a Hugging Face cache's snapshot files
 * are links into blobs/); an output that does not exist yet is compared by
 * its real path (its folder resolved, its base name kept). An input that
 * does not exist protects nothing and is skipped. Descriptors and devices
 * ("-", /dev/stdout) are written into, never replaced: they pass.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"

/* out's real path when out itself does not exist: realpath of its folder
 * plus its base name (malloc'd), or NULL. */
static char *real_out(const char *out) {
    const char *slash = strrchr(out, '/');
    const char *base = slash ? slash + 1 : out;
    char *dir = slash ? strndup(out, (size_t)(slash - out) + (slash == out)) : strdup(".");
    char *rdir = dir ? realpath(dir, NULL) : NULL;
    free(dir);
    if (rdir == NULL) return NULL;
    const size_t a = strlen(rdir), b = strlen(base);
    char *p = malloc(a + b + 2);
    if (p != NULL) {
        memcpy(p, rdir, a);
        p[a] = '/';
        memcpy(p + a + 1, base, b + 1);
    }
    free(rdir);
    return p;
}

static int same_file(const char *out, const struct stat *so, int out_exists, const char *in) {
    struct stat si;
    if (stat(in, &si) != 0 || !S_ISREG(si.st_mode)) return 0;
    if (out_exists) return so->st_dev == si.st_dev && so->st_ino == si.st_ino;
    char *ro = real_out(out), *ri = realpath(in, NULL);
    const int same = ro != NULL && ri != NULL && strcmp(ro, ri) == 0;
    free(ro);
    free(ri);
    return same;
}

int anvil_output_check(const char *out, const char *const *inputs, size_t n_inputs, anvil_error *err) {
    if (out == NULL || out[0] == '\0' || strcmp(out, "-") == 0) return ANVIL_OK;
    struct stat so;
    const int exists = stat(out, &so) == 0;
    if (exists && !S_ISREG(so.st_mode)) return ANVIL_OK; /* a device, a FIFO, a folder: not replaced here */
    for (size_t i = 0; i < n_inputs; ++i) {
        if (inputs[i] == NULL || !same_file(out, &so, exists, inputs[i])) continue;
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "the output %s is the input %s of this run: writing it would replace the "
                                "input; name another output file",
                                out, inputs[i]);
    }
    return ANVIL_OK;
}
