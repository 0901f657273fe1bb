/* SPDX-License-Identifier: MIT */
#include "st_test.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "test_env.h"

unsigned char *st_image_raw(uint64_t length_field, const void *header, size_t header_len, const void *data,
                            size_t data_len, size_t *size) {
    unsigned char *img = malloc(8 + header_len + data_len + 1);
    if (img == NULL) {
        abort();
    }
    for (int i = 0; i < 8; i++) {
        img[i] = (unsigned char)(length_field >> (8 * i));
    }
    if (header_len) {
        memcpy(img + 8, header, header_len);
    }
    if (data_len) {
        memcpy(img + 8 + header_len, data, data_len);
    }
    *size = 8 + header_len + data_len;
    return img;
}

unsigned char *st_image(const char *header, const void *data, size_t data_len, size_t *size) {
    const size_t n = strlen(header);
    return st_image_raw(n, header, n, data, data_len, size);
}

int st_parse_status(const void *image, size_t size, anvil_error *err) {
    anvil_error local;
    if (err == NULL) {
        err = &local;
    }
    anvil_st *st = (anvil_st *)(uintptr_t)1; /* must be reset to NULL on failure */
    const int rc = anvil_st_parse(&st, image, size, err);
    if (rc != ANVIL_OK) {
        CU_ASSERT_PTR_NULL(st);
        CU_ASSERT_EQUAL(err->code, rc);
        CU_ASSERT(strlen(err->message) > 0);
    } else {
        anvil_st_close(st);
    }
    return rc;
}

int st_header_status(const char *header, const void *data, size_t data_len, anvil_error *err) {
    size_t size;
    unsigned char *img = st_image(header, data, data_len, &size);
    const int rc = st_parse_status(img, size, err);
    free(img);
    return rc;
}

unsigned char *st_read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0) {
        fclose(f);
        return NULL;
    }
    unsigned char *buf = malloc((size_t)sb.st_size + 1);
    if (buf == NULL || fread(buf, 1, (size_t)sb.st_size, f) != (size_t)sb.st_size) {
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *size = (size_t)sb.st_size;
    return buf;
}

const char *st_data_path(const char *name) {
    static char buf[4096];
    char rel[512];
    snprintf(rel, sizeof rel, "data/%s", name);
    struct stat sb;
    snprintf(buf, sizeof buf, "%s", test_source_path(rel));
    if (stat(buf, &sb) == 0) {
        return buf;
    }
    const char *shared = test_shared_path(name);
    if (shared != NULL) {
        snprintf(buf, sizeof buf, "%s", shared);
        return buf;
    }
    fprintf(stderr, "\n  note: %s not found (tests/data or ../shared/testdata); skipped\n", name);
    return NULL;
}
