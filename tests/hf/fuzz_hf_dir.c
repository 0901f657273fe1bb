/* SPDX-License-Identifier: MIT */
/* The fuzz bodies' scratch checkpoint folder (fuzz_hf_dir.h). */
#include "fuzz_hf_dir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_dir[4096];
static const char *const k_names[] = { "config.json", "tokenizer.json", "tokenizer_config.json", "tokenizer.model",
                                       NULL };

static void cleanup(void) {
    for (size_t i = 0; k_names[i] != NULL; ++i) fuzz_hf_remove(k_names[i]);
    rmdir(g_dir);
}

const char *fuzz_hf_dir(void) {
    if (g_dir[0] != '\0') return g_dir;
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || tmp[0] == '\0') tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"; /* memory first */
    snprintf(g_dir, sizeof g_dir, "%s/anvil_fuzz_hf_XXXXXX", tmp);
    if (mkdtemp(g_dir) == NULL) abort();
    atexit(cleanup);
    return g_dir;
}

static void path_of(const char *name, char *buf, size_t cap) {
    if (snprintf(buf, cap, "%s/%s", fuzz_hf_dir(), name) >= (int)cap) abort();
}

void fuzz_hf_put(const char *name, const void *data, size_t n) {
    char path[4200];
    path_of(name, path, sizeof path);
    FILE *f = fopen(path, "wb");
    if (f == NULL) abort();
    if (n > 0 && fwrite(data, 1, n, f) != n) abort();
    if (fclose(f) != 0) abort();
}

void fuzz_hf_remove(const char *name) {
    char path[4200];
    path_of(name, path, sizeof path);
    (void)unlink(path);
}
