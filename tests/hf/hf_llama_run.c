/* SPDX-License-Identifier: MIT */
/*
 * hf-llama-run ORACLE_DIR A.gguf [B.gguf]
 *
 * llama.cpp (libllama from the npm oracle, tests/parity/llama_oracle.c)
 * loads A and greedy-decodes 8 tokens from BOS; with B, it does the same
 * with B and the tokens must be equal. Prints the tokens. Exit 0 when
 * loaded (and equal), 1 when not, 77 when libllama is not there.
 */
#include <stdio.h>
#include <string.h>

#include "llama_oracle.h"

enum { STEPS = 8 };

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: hf-llama-run ORACLE_DIR A.gguf [B.gguf]\n");
        return 2;
    }
    llama_oracle lo;
    char why[1024];
    if (llama_oracle_open(&lo, argv[1], why, sizeof why) != 0) {
        fprintf(stderr, "hf-llama-run: %s\n", why);
        return 77;
    }
    int32_t tok[2][STEPS];
    int rc = 0;
    for (int f = 0; f < argc - 2 && rc == 0; ++f) {
        if (llama_oracle_generate(&lo, argv[2 + f], STEPS, tok[f], why, sizeof why) != 0) {
            fprintf(stderr, "hf-llama-run: %s: %s\n", argv[2 + f], why);
            rc = 1;
            break;
        }
        printf("%s:", argv[2 + f]);
        for (int i = 0; i < STEPS; ++i) printf(" %d", tok[f][i]);
        printf("\n");
    }
    if (rc == 0 && argc == 4 && memcmp(tok[0], tok[1], sizeof tok[0]) != 0) {
        fprintf(stderr, "hf-llama-run: llama.cpp decodes other tokens from the two files\n");
        rc = 1;
    }
    llama_oracle_close(&lo);
    return rc;
}
