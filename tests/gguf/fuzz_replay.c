/* SPDX-License-Identifier: MIT */
/* Replays the GGUF fuzz body (no libFuzzer) over the files named on the
 * command line: each file whole, every prefix of it, and every single-byte
 * corruption of its first 2 KiB. Keeps the harness built and exercised in
 * every build, and under ASan+UBSan in sanitizer builds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/fuzz_target.h"
#include "read_file.h"

int main(int argc, char **argv) {
    size_t runs = 0;
    for (int i = 1; i < argc; ++i) {
        size_t n = 0;
        uint8_t *buf = (uint8_t *)test_read_file(argv[i], &n);
        if (buf == NULL) {
            fprintf(stderr, "fuzz_gguf_replay: cannot read %s\n", argv[i]);
            return 1;
        }
        LLVMFuzzerTestOneInput(buf, n);
        runs++;
        for (size_t cut = 0; cut < n && cut < 8192; ++cut) {
            /* A fresh copy of exactly `cut` bytes, so ASan sees the end. */
            uint8_t *p = malloc(cut > 0 ? cut : 1);
            memcpy(p, buf, cut);
            LLVMFuzzerTestOneInput(p, cut);
            free(p);
            runs++;
        }
        static const uint8_t flips[] = { 0x01, 0x80, 0xFF };
        for (size_t pos = 0; pos < n && pos < 2048; ++pos) {
            for (size_t k = 0; k < sizeof flips; ++k) {
                buf[pos] ^= flips[k];
                LLVMFuzzerTestOneInput(buf, n);
                buf[pos] ^= flips[k];
                runs++;
            }
        }
        free(buf);
    }
    printf("fuzz_gguf_replay: %d file(s), %zu inputs, no crash\n", argc - 1, runs);
    return argc > 1 ? 0 : 1;
}
