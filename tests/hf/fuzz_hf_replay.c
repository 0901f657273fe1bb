/* SPDX-License-Identifier: MIT */
/* Replays an HF reader's fuzz body (no libFuzzer) over the seed files named
 * on the command line: each file whole, 256 of its prefixes (evenly spaced,
 * all of them for a short file) and three single-byte corruptions at 256
 * evenly spaced positions of its first 2 KiB. The tokenizer bodies write
 * files and load a whole vocabulary per input, so this is sized to take
 * seconds: fuzz_replay.c's every-prefix walk would take minutes. */
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
            fprintf(stderr, "fuzz_hf_replay: cannot read %s\n", argv[i]);
            return 1;
        }
        LLVMFuzzerTestOneInput(buf, n);
        runs++;
        const size_t cut_step = n / 256 > 0 ? n / 256 : 1;
        for (size_t cut = 0; cut < n; cut += cut_step) {
            uint8_t *p = malloc(cut > 0 ? cut : 1); /* exactly `cut` bytes, so ASan sees the end */
            if (p == NULL) return 1;
            memcpy(p, buf, cut);
            LLVMFuzzerTestOneInput(p, cut);
            free(p);
            runs++;
        }
        static const uint8_t flips[] = { 0x01, 0x80, 0xFF };
        const size_t span = n < 2048 ? n : 2048, pos_step = span / 256 > 0 ? span / 256 : 1;
        for (size_t pos = 0; pos < span; pos += pos_step) {
            for (size_t k = 0; k < sizeof flips; ++k) {
                buf[pos] ^= flips[k];
                LLVMFuzzerTestOneInput(buf, n);
                buf[pos] ^= flips[k];
                runs++;
            }
        }
        free(buf);
    }
    printf("fuzz_hf_replay: %d file(s), %zu inputs, no crash\n", argc - 1, runs);
    return argc > 1 ? 0 : 1;
}
