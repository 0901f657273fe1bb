/*
 * anvil reemit IN OUT
 *
 * Read a GGUF file and write it back through anvil's writer (version 3, KVs
 * copied raw in order, offsets recomputed, written atomically). For any file
 * ggml loads, OUT equals what ggml's read-then-gguf_write_to_file produces.
 * A safetensors file (recognised by content) goes through the safetensors
 * writer instead.
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
            "usage: anvil reemit IN OUT\n"
            "\n"
            "Read IN (GGUF v2/v3 or safetensors, recognised by content) and write it back\n"
            "through anvil's writer to OUT. GGUF is written as version 3, byte-identical to\n"
            "ggml's gguf_write_to_file for the same content; a split part is re-emitted on\n"
            "its own (use `anvil merge` for a whole set). OUT is written to a temporary file\n"
            "next to it and renamed into place when complete.\n");
    return f == stdout ? 0 : 2;
}

typedef struct reemit_args {
    const char *in, *out;
} reemit_args;

static int reemit_op(const anvil_ctx *ctx, void *arg, anvil_error *err) {
    const reemit_args *a = arg;
    return anvil_gguf_reemit(a->in, a->out, ctx, err);
}

int cmd_reemit(cli_globals *g, int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        return usage(stdout);
    }
    if (argc != 3 || argv[1][0] == '-' || argv[2][0] == '-') {
        return usage(stderr);
    }
    const char *in = argv[1], *out = argv[2];
    if (cli_gguf_sniff(in) == CLI_SNIFF_SAFETENSORS) {
        return cli_reemit_safetensors(g, in, out);
    }
    anvil_error err = { 0 };
    reemit_args a = { in, out };
    if (cli_gguf_run(g, reemit_op, &a, &err) != ANVIL_OK) {
        return cli_fail_err("reemit", &err);
    }
    struct stat st;
    if (stat(out, &st) == 0) {
        printf("wrote %s (%" PRIu64 " bytes, GGUF v3)\n", out, (uint64_t)st.st_size);
    }
    return 0;
}
