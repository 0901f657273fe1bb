/* SPDX-License-Identifier: MIT */
/*
 * hf_compare A.gguf B.gguf [--skip-prefix P]
 *
 * gguf_same() as a command, for tests/hf/hf_convert.sh: prints the first
 * difference; exit 0 when equal, 1 when not, 2 on a usage or read error.
 */
#include <stdio.h>
#include <string.h>

#include "gguf_same.h"

int main(int argc, char **argv) {
    const char *skip = NULL;
    if (argc == 5 && strcmp(argv[3], "--skip-prefix") == 0) skip = argv[4];
    else if (argc != 3) {
        fprintf(stderr, "usage: hf_compare A.gguf B.gguf [--skip-prefix P]\n");
        return 2;
    }
    char why[1024] = "";
    const int rc = gguf_same(argv[1], argv[2], skip, why, sizeof why);
    if (rc != 0) printf("%s\n", why);
    return rc < 0 ? 2 : rc;
}
