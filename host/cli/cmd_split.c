/*
 * anvil split IN OUT_PREFIX (--max-size SIZE | --max-tensors N)
 *
 * llama.cpp's gguf-split layout: OUT_PREFIX-00001-of-0000N.gguf ..., all
 * metadata in part 1, split.no / split.count (u16) and split.tensors.count
 * (i32) in every part.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/gguf.h"
#include "cli.h"
#include "cli_gguf.h"

static int usage(FILE *f) {
    fprintf(f,
            "usage: anvil split IN.gguf OUT_PREFIX (--max-size SIZE | --max-tensors N)\n"
            "\n"
            "Split IN into OUT_PREFIX-00001-of-0000N.gguf ... the way llama.cpp's gguf-split\n"
            "does: --max-size starts a new part when the next tensor (padded to 32 bytes)\n"
            "would take a part's tensor data over SIZE (e.g. 2G = 2e9 bytes, 500M, 4GiB);\n"
            "--max-tensors puts at most N tensors in each part. Part 1 carries all the\n"
            "metadata. `anvil merge OUT_PREFIX-00001-of-0000N.gguf OUT.gguf` undoes it.\n");
    return f == stdout ? 0 : 2;
}

typedef struct split_args {
    const char *in, *prefix;
    uint64_t max_size, max_tensors;
    uint32_t parts;
    size_t n_tensors;
} split_args;

static int split_op(const anvil_ctx *ctx, void *arg, anvil_error *err) {
    split_args *a = arg;
    anvil_gguf *src = NULL;
    int rc = anvil_gguf_open(&src, a->in, ctx, 0, err);
    if (rc == ANVIL_OK) {
        a->n_tensors = anvil_gguf_tensor_count(src);
        rc = anvil_gguf_split_write(src, a->prefix, a->max_size, a->max_tensors, ctx, &a->parts,
                                    err);
    }
    anvil_gguf_close(src);
    return rc;
}

int cmd_split(cli_globals *g, int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        return usage(stdout);
    }
    const char *in = NULL, *prefix = NULL;
    unsigned long long max_size = 0, max_tensors = 0;
    int have_size = 0, have_tensors = 0;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--max-size") == 0 && i + 1 < argc) {
            if (cli_parse_size(argv[++i], &max_size) != 0 || max_size == 0) {
                return cli_fail("split", "--max-size '%s' is not a positive size (e.g. 2G, 500M)",
                                argv[i]);
            }
            have_size = 1;
        } else if (strcmp(argv[i], "--max-tensors") == 0 && i + 1 < argc) {
            char *end = NULL;
            max_tensors = strtoull(argv[++i], &end, 10);
            if (end == argv[i] || *end != '\0' || max_tensors == 0 || argv[i][0] == '-') {
                return cli_fail("split", "--max-tensors '%s' is not a positive count", argv[i]);
            }
            have_tensors = 1;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "anvil split: unknown or incomplete option '%s'\n", argv[i]);
            return usage(stderr);
        } else if (in == NULL) {
            in = argv[i];
        } else if (prefix == NULL) {
            prefix = argv[i];
        } else {
            return usage(stderr);
        }
    }
    if (in == NULL || prefix == NULL || have_size == have_tensors) {
        if (in != NULL && prefix != NULL) {
            fprintf(stderr, "anvil split: give exactly one of --max-size and --max-tensors\n");
        }
        return usage(stderr);
    }
    anvil_error err = { 0 };
    split_args a = { in, prefix, max_size, max_tensors, 0, 0 };
    if (cli_gguf_run(g, split_op, &a, &err) != ANVIL_OK) {
        return cli_fail_err("split", &err);
    }
    const uint32_t parts = a.parts;
    const size_t n_tensors = a.n_tensors;
    char first[4200];
    anvil_gguf_split_path(first, sizeof first, prefix, 1, parts, NULL);
    printf("wrote %" PRIu32 " parts (%zu tensors): %s ...\n", parts, n_tensors, first);
    return 0;
}
