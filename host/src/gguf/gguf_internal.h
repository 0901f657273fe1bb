/* SPDX-License-Identifier: MIT */
/* Internal: shared pieces of the GGUF reader and writer. */
#ifndef ANVIL_HOST_GGUF_INTERNAL_H
#define ANVIL_HOST_GGUF_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "anvil/gguf.h"
#include "gguf_source.h"
#include "error.h"
#include "file_set.h"

/* ---- checked arithmetic: each returns 1 on overflow, 0 when *r is valid -- */

static inline int gguf_add_overflows(uint64_t a, uint64_t b, uint64_t *r) { return __builtin_add_overflow(a, b, r); }
static inline int gguf_mul_overflows(uint64_t a, uint64_t b, uint64_t *r) { return __builtin_mul_overflow(a, b, r); }
/* Round x up to a multiple of align (a power of two). */
static inline int gguf_pad_overflows(uint64_t x, uint64_t align, uint64_t *r) {
    uint64_t t;
    if (__builtin_add_overflow(x, align - 1, &t)) {
        return 1;
    }
    *r = t & ~(align - 1);
    return 0;
}
static inline int gguf_is_pow2(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

/* gguf-split's cut (split_strategy): with in_count tensors of in_bytes
 * (padded) already in the current part, does the next tensor of `padded`
 * bytes start a new one? By count when max_tensors > 0, else by size. The
 * one rule for `anvil split` and for transcode/quantize's split outputs. */
static inline int gguf_split_starts_part(size_t in_count, uint64_t in_bytes, uint64_t padded, uint64_t max_bytes,
                                         uint64_t max_tensors) {
    if (in_count == 0) return 0;
    if (max_tensors > 0) return in_count >= max_tensors;
    uint64_t next;
    return gguf_add_overflows(in_bytes, padded, &next) || next > max_bytes;
}

/* ---- little-endian wire access (unaligned) ------------------------------ */

static inline uint16_t gguf_load_u16(const uint8_t *p) { return (uint16_t)(p[0] | (uint16_t)p[1] << 8); }
static inline uint32_t gguf_load_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t gguf_load_u64(const uint8_t *p) {
    return (uint64_t)gguf_load_u32(p) | (uint64_t)gguf_load_u32(p + 4) << 32;
}
static inline void gguf_store_u16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void gguf_store_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; ++i) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}
static inline void gguf_store_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; ++i) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

/* ---- name index: open addressing over (ptr, len) names ------------------ */

/* The index stores item numbers; names are fetched through this callback so
 * the index works over KVs, tensors and writer entries alike. */
typedef void (*gguf_name_of_fn)(const void *items, size_t i, const char **ptr, size_t *len);

typedef struct gguf_name_index {
    size_t *slots; /* item + 1; 0 = empty */
    size_t cap;    /* power of two, or 0 */
    size_t n;
    gguf_name_of_fn name_of;
    const void *items;
} gguf_name_index;

void gguf_index_init(gguf_name_index *ix, gguf_name_of_fn name_of, const void *items);
/* Point the index at a (re-allocated) item array. */
static inline void gguf_index_rebase(gguf_name_index *ix, const void *items) { ix->items = items; }
/* Insert item i under its name. Returns 0 when inserted, 1 when the name is
 * already present (*existing set), ANVIL_E_NOMEM on allocation failure. */
int gguf_index_insert(gguf_name_index *ix, size_t i, size_t *existing);
/* Item holding name, or -1. */
int64_t gguf_index_find(const gguf_name_index *ix, const char *ptr, size_t len);
void gguf_index_clear(gguf_name_index *ix);
void gguf_index_free(gguf_name_index *ix);

/* ---- problems found by a lenient open ----------------------------------- */

typedef struct gguf_problem {
    int code;
    int where; /* ANVIL_GGUF_AT_* */
    size_t index;
    char *message;
} gguf_problem;

typedef struct gguf_problems {
    gguf_problem *items;
    size_t n, cap;
} gguf_problems;

/* Record e's code and message; returns ANVIL_OK or ANVIL_E_NOMEM. */
int gguf_problem_add(gguf_problems *ps, int where, size_t index, const anvil_error *e);
void gguf_problems_free(gguf_problems *ps);

/* ---- a parsed part ------------------------------------------------------ */

typedef struct gguf_part {
    char *path; /* NULL for a buffer */
    const uint8_t *base;
    uint64_t size;
    uint32_t version;
    uint32_t alignment;
    uint64_t header_size;
    uint64_t data_offset;
    uint64_t data_end;
    anvil_gguf_kv *kvs;
    size_t n_kv;
    anvil_gguf_tensor *tensors;
    size_t n_tensors;
    char *names; /* pool of NUL-terminated keys and tensor names */
    gguf_name_index kv_index;
    uint64_t declared_kvs; /* the header's counts */
    uint64_t declared_tensors;
    size_t *problem_of; /* lenient: per tensor, 0 or 1 + the index of its
                                first problem (such a tensor has data NULL) */
} gguf_part;

/* Parse and validate one file image. On failure the part is left empty. */
int gguf_parse_part(gguf_part *p, const uint8_t *base, uint64_t size, const anvil_ctx *ctx, anvil_error *err);
/* The same, reading on past what it can: a bad KV or directory entry that
 * leaves the rest unreadable stops the parse there, one whose extent is
 * known is noted and skipped; a tensor whose type, shape, offset or data
 * range is wrong is kept and noted. Every problem goes to problems. Fails
 * only when the header itself (magic, version, counts) cannot be read. */
/* The header of a file of `size` bytes whose first `have` bytes are at
 * base: tensors whose data lies past them get data NULL. */
int gguf_parse_header(gguf_part *p, const uint8_t *base, uint64_t have, uint64_t size, const anvil_ctx *ctx,
                      anvil_error *err);
int gguf_parse_part_lenient(gguf_part *p, const uint8_t *base, uint64_t size, const anvil_ctx *ctx,
                            gguf_problems *problems, anvil_error *err);
void gguf_part_free(gguf_part *p);

/* ---- mapping ------------------------------------------------------------ */

typedef struct gguf_region {
    void *addr;
    size_t size;
    int is_mmap; /* 1: our read-only file mapping; 0: borrowed buffer */
} gguf_region;

struct anvil_gguf_mapping {
    gguf_region *regions;
    size_t n;
};

/* Map path read-only; the descriptor is closed before returning. An empty
 * file yields a region of size 0 and addr NULL. */
int gguf_map_file(const char *path, gguf_region *out, anvil_error *err);
void gguf_region_unmap(gguf_region *r);
int gguf_mapping_hint(const anvil_gguf_mapping *m, const void *ptr, size_t len, int release, anvil_error *err);

struct anvil_gguf {
    gguf_part *parts;
    size_t n_parts;
    anvil_gguf_tensor *tensors; /* all parts, merged */
    size_t n_tensors;
    gguf_name_index tensor_index;
    anvil_gguf_mapping *mapping;     /* owned until taken */
    const anvil_gguf_mapping *hints; /* the mapping, owned or not */
    int lenient;                     /* opened by anvil_gguf_open_lenient */
    anvil__gguf_source source;       /* fill != NULL: the tensor data comes from it (gguf_source.h) */
    gguf_problems problems;
};

/* gguf_parse.c: a tensor's name, for gguf_index_init over anvil_gguf_tensor[]. */
void gguf_tensor_name_of(const void *items, size_t i, const char **p, size_t *len);
/* gguf_split.c: a split set as part 1 describes it. Opening the parts is
 * gguf_file.c's: it asks for each part's path and has each part checked. */
typedef struct gguf_split_mark {
    int have; /* file_set.h's set mark */
    char id[FILE_SET_ID_HEX + 1];
    uint32_t no, count;
} gguf_split_mark;
typedef struct gguf_split_set {
    int64_t count; /* parts; 1: not a set (or a part alone) */
    int64_t total; /* split.tensors.count, -1: absent */
    char prefix[4096];
    gguf_split_mark first; /* part 1's mark */
} gguf_split_set;
/* Read part 1's split keys (path: its name; opened: the file actually
 * opened, for its set mark). */
int gguf_split_begin(gguf_split_set *s, const gguf_part *first, const char *path, const char *opened,
                     anvil_error *err);
/* The path of part k (2..count). */
int gguf_split_part_path(const gguf_split_set *s, uint32_t k, char *buf, size_t size, anvil_error *err);
/* The error for a part that does not exist. */
int gguf_split_missing(const gguf_split_set *s, uint32_t k, const char *part_path, anvil_error *err);
/* Check that part k, parsed into p, belongs with part 1. */
int gguf_split_check_part(const gguf_split_set *s, const gguf_part *p, uint32_t k, const char *opened,
                          const char *part_path, anvil_error *err);
/* Check that the parts hold the set's tensor count. */
int gguf_split_check_total(const gguf_split_set *s, const gguf_part *parts, size_t n_parts, const char *path,
                           anvil_error *err);
/* Build the merged tensor list and its index from the parts. */
int gguf_merge_parts(anvil_gguf *g, anvil_error *err);

/* Typed view of one wire value at raw (validated). */
int gguf_value_at(uint32_t type, const uint8_t *raw, size_t raw_size, anvil_gguf_value *out);

/* "1.23 GB" style helper for messages. */
double gguf_gb(uint64_t bytes);

#endif
