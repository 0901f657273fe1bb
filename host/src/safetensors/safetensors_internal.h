/* SPDX-License-Identifier: MIT */
/* Internal: the anvil_st object and the pieces the safetensors files share. */
#ifndef ANVIL_HOST_SAFETENSORS_INTERNAL_H
#define ANVIL_HOST_SAFETENSORS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/safetensors.h"

typedef enum st_backing {
    ST_BORROWED, /* caller's bytes */
    ST_MALLOC,   /* our copy, free() */
    ST_MMAP      /* our mapping, munmap() */
} st_backing;

struct anvil_st {
    /* The image: 8-byte length, header, data. */
    const unsigned char *image;
    size_t image_size;
    st_backing backing;
    void *owned; /* what to free/unmap; NULL when borrowed */
    size_t owned_size;

    uint64_t header_size; /* N */
    uint64_t data_size;   /* image_size - 8 - N once bound */

    anvil_st_tensor *tensors; /* data-offset order */
    size_t count;
    uint64_t *dims;                  /* all shapes, back to back */
    const anvil_st_tensor **by_name; /* sorted by name for anvil_st_find */

    int has_metadata;
    size_t meta_count;
    const char **meta_keys;
    const char **meta_values;

    char *strings; /* names, metadata keys and values */
};

/* Validate a header (the N bytes after the length) and fill st's tables.
 * `where` names the source in messages (a path, "buffer", "stream").
 * On success *data_needed is the size the data buffer must have; tensor
 * data pointers are set later by anvil__st_bind_data. On failure st's tables
 * are released. */
int anvil__st_build_header(anvil_st *st, const unsigned char *header, size_t n, const char *where,
                           uint64_t *data_needed, anvil_error *err);

/* Point every tensor at its bytes; `data` holds data_size bytes. Fails with
 * ANVIL_E_ST_TRAILING when data_size is larger than the tensors need and
 * ANVIL_E_TRUNCATED when it is smaller. */
int anvil__st_bind_data(anvil_st *st, const unsigned char *data, uint64_t data_size, const char *where,
                        anvil_error *err);

/* Validate a whole image (length, header, data) already in memory; the
 * backing fields of st are set by the caller. */
int anvil__st_validate_image(anvil_st *st, const char *where, anvil_error *err);

/* Free st's tables (not its backing). */
void anvil__st_free_tables(anvil_st *st);

/* Byte length of n elements of dtype: ANVIL_E_ST_OVERFLOW, ANVIL_E_ST_SUBBYTE
 * (with a message naming `name`) or ANVIL_OK. n_elements gets the product. */
int anvil__st_tensor_bytes(anvil_st_dtype dtype, const uint64_t *shape, size_t rank, const char *name,
                           uint64_t *n_elements, uint64_t *bytes, anvil_error *err);

/* Little-endian u64 load/store. */
static inline uint64_t anvil__st_load_u64le(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) {
        v = (v << 8) | p[i];
    }
    return v;
}

static inline void anvil__st_store_u64le(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) {
        p[i] = (unsigned char)(v >> (8 * i));
    }
}

/* The writer's output, planned: the 8-byte length plus the padded JSON
 * header, then the tensors' bytes in file order. */
typedef struct anvil_st_chunk {
    const void *data;
    uint64_t size;
} anvil_st_chunk;

typedef struct anvil_st_plan {
    unsigned char *head; /* 8 + N bytes */
    size_t head_size;
    anvil_st_chunk *chunks; /* one per tensor, in offset order */
    size_t count;
    uint64_t data_size;
} anvil_st_plan;

int anvil__st_writer_plan(const anvil_st_writer *w, anvil_st_plan *plan, anvil_error *err);
void anvil__st_plan_free(anvil_st_plan *plan);
/* Write a planned frame to fd; `where` names it in messages. */
int anvil__st_plan_write_fd(const anvil_st_plan *plan, int fd, const char *where, anvil_error *err);

/* Message-safe quoted copy of a name (see anvil__json_quote_for_message). */
#define ANVIL_ST_QUOTED_MAX 200
void anvil__st_quote(char dst[ANVIL_ST_QUOTED_MAX], const char *name);

#endif
