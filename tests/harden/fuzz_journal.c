/* SPDX-License-Identifier: MIT */
/*
 * Fuzz body for the split-set commit journal as anvil's reader meets it
 * (file_set.c): a folder holding part 1's name and an arbitrary
 * ".<part 1>.anvil-commit" is either read through or refused with a message,
 * never crashes; the reader changes nothing on disk. The journal lives in
 * the model's folder, so a downloaded archive could ship one.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file_set.h"

#include "../common/fuzz_target.h"

static char dir[4096], journal[4200], first[4200];

static void cleanup(void) {
    unlink(journal);
    unlink(first);
    rmdir(dir);
}

/* A fixed folder under the working directory (the build tree under ctest):
 * a fuzzer stopped by a signal or a time limit skips atexit, and the next
 * run reuses the folder instead of leaving a new one behind. */
static void setup(void) {
    snprintf(dir, sizeof dir, "anvil-fuzz-journal.d");
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        abort();
    }
    snprintf(first, sizeof first, "%s/m-00001-of-00002.gguf", dir);
    snprintf(journal, sizeof journal, "%s/.m-00001-of-00002.gguf.anvil-commit", dir);
    unlink(journal);
    FILE *f = fopen(first, "w"); /* an old part 1 for the inodes to miss or hit */
    if (f != NULL) {
        fclose(f);
    }
    atexit(cleanup);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (dir[0] == '\0') {
        setup();
    }
    FILE *f = fopen(journal, "wb");
    if (f == NULL) {
        return 0;
    }
    fwrite(data, 1, size, f);
    fclose(f);
    file_set_view v;
    anvil_error err;
    if (file_set_view_open(&v, first, 2, &err) == ANVIL_OK) {
        for (size_t i = 0; i < v.n; ++i) {
            if (strncmp(v.paths[i], dir, strlen(dir)) != 0 || strchr(v.paths[i] + strlen(dir) + 1, '/') != NULL) {
                abort(); /* a journal only ever names files in its own folder */
            }
        }
        file_set_view_close(&v);
    }
    return 0;
}
