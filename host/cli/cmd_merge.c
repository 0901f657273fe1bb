/* SPDX-License-Identifier: MIT */
/*
 * anvil merge FIRST-00001-of-0000N.gguf OUT.gguf [--json] [--progress] [--quiet]
 *
 * Join a llama.cpp-style split set into one file: metadata from part 1
 * without the split.* keys, tensors from every part in order. Merging what
 * `anvil split` made gives back the original byte for byte.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "anvil/gguf.h"
#include "cli.h"
#include "cli_gguf.h"

const char cli_help_merge[] =
    "usage: anvil merge FIRST-00001-of-0000N.gguf OUT.gguf [--json] [--progress] [--quiet]\n"
    "\n"
    "Merge the split set whose first part is FIRST (llama.cpp naming:\n"
    "<prefix>-00001-of-0000N.gguf; every part must sit next to it) into OUT. Every\n"
    "part is validated and its split.no / split.count / split.tensors.count checked;\n"
    "a missing part is named. OUT is written atomically; OUT naming a folder is\n"
    "refused. OUT may be '-' (stdout), a device or a FIFO: written into, never\n"
    "replaced (`anvil help`, files).\n"
    "\n"
    "  --json      print what was written as JSON on stdout\n"
    "  --progress  a plain progress line per tensor on stderr (for logs)\n"
    "  --quiet     no progress, no report\n";

int cmd_merge(cli_globals *g, int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        return cli_help("merge");
    }
    const char *first = NULL, *out = NULL;
    cli_write_flags f = { 0, 0, 0 };
    const int parsed = cli_parse_in_out("merge", argc, argv, "FIRST part", "OUT", &f, &first, &out);
    if (parsed != 0) {
        return parsed;
    }
    uint32_t no = 0, count = 0;
    if (!anvil_gguf_split_parse(first, NULL, 0, &no, &count) || no != 1) {
        return cli_usage_error("merge",
                               "'%s' is not the first part of a split set: give the file named "
                               "<prefix>-00001-of-0000N.gguf",
                               first);
    }
    int same = 0;
    const int checked = cli_check_output("merge", out, first, &same);
    if (checked != 0) {
        return checked;
    }
    return cli_gguf_rewrite(g, "merge", anvil_gguf_merge_ex, first, out, &f, same);
}
