/*
 * anvil merge FIRST-00001-of-0000N.gguf OUT.gguf
 *
 * Join a llama.cpp-style split set into one file: metadata from part 1
 * without the split.* keys, tensors from every part in order. Merging what
 * `anvil split` made gives back the original byte for byte.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "anvil/gguf.h"
#include "cli.h"
#include "cli_gguf.h"

static int usage(FILE *f) {
    fprintf(f,
            "usage: anvil merge FIRST-00001-of-0000N.gguf OUT.gguf\n"
            "\n"
            "Merge the split set whose first part is FIRST (llama.cpp naming:\n"
            "<prefix>-00001-of-0000N.gguf; every part must sit next to it) into OUT. Every\n"
            "part is validated and its split.no / split.count / split.tensors.count checked;\n"
            "a missing part is named. OUT is written atomically.\n");
    return f == stdout ? 0 : 2;
}

typedef struct merge_args {
    const char *first, *out;
} merge_args;

static int merge_op(const anvil_ctx *ctx, void *arg, anvil_error *err) {
    const merge_args *a = arg;
    return anvil_gguf_merge(a->first, a->out, ctx, err);
}

int cmd_merge(cli_globals *g, int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        return usage(stdout);
    }
    if (argc != 3 || argv[1][0] == '-' || argv[2][0] == '-') {
        return usage(stderr);
    }
    const char *first = argv[1], *out = argv[2];
    uint32_t no = 0, count = 0;
    if (!anvil_gguf_split_parse(first, NULL, 0, &no, &count) || no != 1) {
        return cli_fail("merge",
                        "'%s' is not the first part of a split set: give the file named "
                        "<prefix>-00001-of-0000N.gguf",
                        first);
    }
    anvil_error err = { 0 };
    merge_args a = { first, out };
    if (cli_gguf_run(g, merge_op, &a, &err) != ANVIL_OK) {
        return cli_fail_err("merge", &err);
    }
    struct stat st;
    if (stat(out, &st) == 0) {
        printf("merged %" PRIu32 " parts into %s (%" PRIu64 " bytes)\n", count, out,
               (uint64_t)st.st_size);
    }
    return 0;
}
