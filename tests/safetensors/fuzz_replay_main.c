/* SPDX-License-Identifier: MIT */
/* Runs the fuzz body over files named on the command line (no libFuzzer):
 * keeps the harness compiled and exercised in every build. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../common/fuzz_target.h"

int main(int argc, char **argv) {
    int ran = 0;
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (f == NULL) {
            fprintf(stderr, "fuzz replay: cannot open %s\n", argv[i]);
            return 1;
        }
        static uint8_t buf[1 << 22];
        const size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        /* The file, then every prefix and a few single-byte corruptions. */
        LLVMFuzzerTestOneInput(buf, n);
        for (size_t cut = 0; cut < n && cut < 4096; cut++) {
            LLVMFuzzerTestOneInput(buf, cut);
        }
        for (size_t pos = 0; pos < n && pos < 1024; pos++) {
            const uint8_t keep = buf[pos];
            buf[pos] ^= 0x5A;
            LLVMFuzzerTestOneInput(buf, n);
            buf[pos] = keep;
        }
        ran++;
    }
    printf("fuzz replay: %d file(s), no crash\n", ran);
    return ran > 0 ? 0 : 1;
}
