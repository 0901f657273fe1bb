/* SPDX-License-Identifier: MIT */
/*
 * anvil reemit IN OUT [--json] [--progress] [--quiet]
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

const char cli_help_reemit[] = "usage: anvil reemit IN OUT [--json] [--progress] [--quiet]\n"
                               "\n"
                               "Read IN (GGUF v2/v3 or safetensors, recognised by content) and write it back\n"
                               "through anvil's writer to OUT. GGUF is written as version 3, byte-identical to\n"
                               "ggml's gguf_write_to_file for the same content; a split part is re-emitted on\n"
                               "its own (use `anvil merge` for a whole set). OUT is written to a temporary file\n"
                               "next to it and renamed into place when complete; OUT may be IN (it is then\n"
                               "replaced atomically). OUT naming a folder is refused. OUT may be '-' (stdout),\n"
                               "a device or a FIFO: written into, never replaced (a socket is refused); a\n"
                               "symbolic link to a file is replaced, one to a device is written through\n"
                               "(`anvil help`, files).\n"
                               "\n"
                               "  --json      print what was written as JSON on stdout\n"
                               "  --progress  a plain progress line per tensor on stderr (for logs); on a terminal\n"
                               "              a progress line is shown anyway\n"
                               "  --quiet     no progress, no report (errors only)\n";

int cmd_reemit(cli_globals *g, int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        return cli_help("reemit");
    }
    const char *in = NULL, *out = NULL;
    cli_write_flags f = { 0, 0, 0 };
    const int parsed = cli_parse_in_out("reemit", argc, argv, "IN", "OUT", &f, &in, &out);
    if (parsed != 0) {
        return parsed;
    }
    int same = 0;
    const int rc = cli_check_output("reemit", out, in, &same);
    if (rc != 0) {
        return rc;
    }
    if (cli_gguf_sniff(in) == CLI_SNIFF_SAFETENSORS) {
        return cli_reemit_safetensors(g, in, out, f.json, same);
    }
    return cli_gguf_rewrite(g, "reemit", anvil_gguf_reemit_ex, in, out, &f, same);
}
