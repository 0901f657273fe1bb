/* SPDX-License-Identifier: MIT */
/*
 * anvil imatrix convert IN OUT [--dat|--gguf] [--ctx N]
 * anvil imatrix merge A B... -o OUT [--dat|--gguf] [--ctx N]
 *
 * llama-imatrix --in-file ... -o OUT: the files loaded raw (a .dat's
 * values times the chunk size), their sums and counts added, written in
 * the format OUT's extension or the flag names. The chunk size (what a
 * .dat is scaled by, and the output's imatrix.chunk_size) is --ctx, else
 * the first GGUF input's, else 512. An entry of another shape (a file of
 * another model) is refused; entries never seen are warned about.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_imatrix.h"

typedef struct files_args {
    const char *in[64];
    size_t n_in;
    const char *out;
    unsigned long long ctx;
    int format; /* -1: by OUT's extension */
} files_args;

static int parse(const char *cmd, int argc, char **argv, int want_o, files_args *a) {
    *a = (files_args){ .format = -1 };
    for (int i = 1; i < argc; ++i) {
        const char *s = argv[i];
        if ((strcmp(s, "--ctx") == 0 || strcmp(s, "-c") == 0)) {
            if (i + 1 >= argc || cli_parse_count(argv[i + 1], 1, 1u << 24, &a->ctx) != 0) {
                return cli_usage_error(cmd, "%s needs a whole number from 1 to %u", s, 1u << 24);
            }
            ++i;
        } else if (strcmp(s, "-o") == 0 || strcmp(s, "--output") == 0) {
            if (i + 1 >= argc) return cli_usage_error(cmd, "%s needs a file name", s);
            a->out = argv[++i];
        } else if (strcmp(s, "--dat") == 0 || strcmp(s, "--gguf") == 0) {
            a->format = s[2] == 'd' ? ANVIL_IMAT_DAT : ANVIL_IMAT_GGUF;
        } else if (s[0] == '-' && s[1] != '\0') {
            return cli_usage_error(cmd, "unknown option '%s'", s);
        } else if (!want_o && a->n_in == 1 && a->out == NULL) {
            a->out = s;
        } else if (a->n_in < sizeof a->in / sizeof a->in[0]) {
            a->in[a->n_in++] = s;
        } else {
            return cli_usage_error(cmd, "at most %zu input files", sizeof a->in / sizeof a->in[0]);
        }
    }
    if (a->n_in == 0 || a->out == NULL) {
        return cli_usage_error(cmd, want_o ? "give the files to merge and -o OUT" : "give IN and OUT");
    }
    if (a->format < 0) {
        const size_t n = strlen(a->out);
        a->format = n >= 4 && strcmp(a->out + n - 4, ".dat") == 0 ? ANVIL_IMAT_DAT : ANVIL_IMAT_GGUF;
    }
    for (size_t i = 0; i < a->n_in; ++i) {
        int same = 0;
        const int checked = cli_check_output(cmd, a->out, a->in[i], &same);
        if (checked != 0) return checked;
        if (same) return cli_usage_error(cmd, "OUT is the input %s: write to another file", a->in[i]);
    }
    return 0;
}

size_t cli_imatrix_warn_empty(const char *cmd, const char *path, const anvil_imat *im) {
    size_t empty = 0;
    for (size_t i = 0; i < anvil_imat_count(im); ++i) {
        anvil_imat_entry e;
        anvil_imat_entry_at(im, i, &e);
        uint32_t zeros = 0;
        for (uint32_t j = 0; j < e.n_mat; ++j) zeros += e.counts[j] == 0;
        if (zeros == e.n_mat) {
            ++empty;
            fprintf(stderr, "anvil %s: warning: %s: %s has no data (its counts are zero)\n", cmd, path, e.name);
        } else if (zeros > 0) {
            fprintf(stderr, "anvil %s: warning: %s: %s has partial data (%.2f%% of its experts seen)\n", cmd, path,
                    e.name, 100.0 * (e.n_mat - zeros) / e.n_mat);
        }
    }
    return empty;
}

static void prefix(anvil_error *err, const char *path) {
    char msg[2 * sizeof err->message];
    snprintf(msg, sizeof msg, "%s: %s", path, err->message);
    msg[sizeof err->message - 1] = '\0';
    memcpy(err->message, msg, sizeof err->message);
}

static int run(const char *cmd, const files_args *a) {
    anvil_error err;
    memset(&err, 0, sizeof err);
    anvil_imat *acc = NULL;
    uint32_t chunk = (uint32_t)a->ctx;
    int rc = anvil_imat_new(&acc, &err);
    for (size_t i = 0; rc == ANVIL_OK && i < a->n_in; ++i) {
        anvil_imat *im = NULL;
        int fmt = 0;
        rc = anvil_imat_load(&im, a->in[i], chunk ? chunk : 512, &fmt, &err);
        if (rc != ANVIL_OK) break;
        if (chunk == 0 && fmt == ANVIL_IMAT_GGUF) chunk = anvil_imat_chunk_size(im);
        cli_imatrix_warn_empty(cmd, a->in[i], im);
        rc = anvil_imat_merge(acc, im, &err);
        if (rc != ANVIL_OK) prefix(&err, a->in[i]);
        anvil_imat_free(im);
    }
    if (rc == ANVIL_OK) {
        anvil_imat_set_chunk_size(acc, chunk ? chunk : 512);
        rc = anvil_imat_save(acc, a->out, a->format, &err);
    }
    int code = CLI_EXIT_OK;
    if (rc != ANVIL_OK) {
        code = cli_fail_err(cmd, &err);
    } else {
        printf("%s: %zu tensors, %u chunks of %u tokens (%s)\n", a->out, anvil_imat_count(acc),
               anvil_imat_chunk_count(acc), anvil_imat_chunk_size(acc), a->format == ANVIL_IMAT_DAT ? "dat" : "gguf");
    }
    anvil_imat_free(acc);
    return code;
}

int cli_imatrix_convert(int argc, char **argv) {
    files_args a;
    const int parsed = parse("imatrix convert", argc, argv, 0, &a);
    if (parsed != 0) return parsed;
    if (a.n_in != 1) return cli_usage_error("imatrix convert", "one IN and one OUT");
    return run("imatrix convert", &a);
}

int cli_imatrix_merge(int argc, char **argv) {
    files_args a;
    const int parsed = parse("imatrix merge", argc, argv, 1, &a);
    if (parsed != 0) return parsed;
    return run("imatrix merge", &a);
}
