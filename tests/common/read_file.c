/* SPDX-License-Identifier: MIT */
#include "read_file.h"

#include <stdio.h>
#include <stdlib.h>

void *test_read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    const long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (p != NULL && fread(p, 1, (size_t)len, f) != (size_t)len) {
        free(p);
        p = NULL;
    }
    fclose(f);
    if (p == NULL) {
        return NULL;
    }
    p[len] = '\0';
    *size = (size_t)len;
    return p;
}
