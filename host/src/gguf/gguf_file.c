/* SPDX-License-Identifier: MIT */
/*
 * GGUF files: mapping, opening (single files, buffers, split sets), the
 * accessors, paging hints and the ownership handoff of the mapping.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file_input.h"
#include "file_set.h"
#include "gguf_internal.h"

/* ---- mapping ------------------------------------------------------------- */

int gguf_map_file(const char *path, gguf_region *out, anvil_error *err) {
    memset(out, 0, sizeof *out);
    /* Refused before the open, which for a FIFO would wait for a writer;
     * O_NONBLOCK for a path swapped since (file_input.h). */
    const int checked = file_input_check(path, err);
    if (checked != ANVIL_OK) {
        return checked;
    }
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        return anvil__error_set(err, errno == ENOENT ? ANVIL_E_NOT_FOUND : ANVIL_E_IO, "cannot open '%s': %s", path,
                                strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        const int e = errno;
        close(fd);
        return anvil__error_set(err, ANVIL_E_IO, "cannot stat '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return anvil__error_set(err, ANVIL_E_IO, "'%s' is not a regular file", path);
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        close(fd);
        return anvil__error_set(err, ANVIL_E_IO, "'%s' is too large to map on this machine", path);
    }
    if (st.st_size == 0) {
        close(fd); /* nothing to map; the parser reports the empty file */
        return ANVIL_OK;
    }
    void *addr = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    const int e = errno;
    close(fd); /* the mapping keeps the file alive */
    if (addr == MAP_FAILED) {
        return anvil__error_set(err, ANVIL_E_IO, "cannot map '%s': %s", path, strerror(e));
    }
    out->addr = addr;
    out->size = (size_t)st.st_size;
    out->is_mmap = 1;
    return ANVIL_OK;
}

void gguf_region_unmap(gguf_region *r) {
    if (r->is_mmap && r->addr != NULL) {
        munmap(r->addr, r->size);
    }
    memset(r, 0, sizeof *r);
}

static void mapping_destroy(anvil_gguf_mapping *m) {
    if (m == NULL) {
        return;
    }
    for (size_t i = 0; i < m->n; ++i) {
        gguf_region_unmap(&m->regions[i]);
    }
    free(m->regions);
    free(m);
}

ANVIL_API void anvil_gguf_mapping_free(anvil_gguf_mapping *m) { mapping_destroy(m); }

int gguf_mapping_hint(const anvil_gguf_mapping *m, const void *ptr, size_t len, int release, anvil_error *err) {
    if (m == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "no mapping");
    }
    if (len == 0) {
        return ANVIL_OK;
    }
    const uintptr_t p = (uintptr_t)ptr;
    for (size_t i = 0; i < m->n; ++i) {
        const gguf_region *r = &m->regions[i];
        const uintptr_t lo = (uintptr_t)r->addr;
        if (r->addr == NULL || p < lo || p - lo > r->size || len > r->size - (p - lo)) {
            continue;
        }
        if (!r->is_mmap) {
            return ANVIL_OK; /* a caller's buffer: nothing to advise */
        }
        const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
        const uintptr_t start = p & ~(page - 1);
        const uintptr_t end = p + len;
        /* DONTNEED on a read-only private file mapping we never wrote just
         * drops clean pages: touching them again re-reads the file. */
        if (madvise((void *)start, end - start, release ? MADV_DONTNEED : MADV_WILLNEED) != 0) {
            return anvil__error_set(err, ANVIL_E_IO, "madvise(%s) failed: %s", release ? "DONTNEED" : "WILLNEED",
                                    strerror(errno));
        }
        return ANVIL_OK;
    }
    return anvil__error_set(err, ANVIL_E_INVALID_ARG, "the range %p+%zu is not inside this file's mapping", ptr, len);
}

ANVIL_API int anvil_gguf_mapping_prefetch(const anvil_gguf_mapping *m, const void *ptr, size_t len,
                                          anvil_error *err) {
    return gguf_mapping_hint(m, ptr, len, 0, err);
}

ANVIL_API int anvil_gguf_mapping_release(const anvil_gguf_mapping *m, const void *ptr, size_t len, anvil_error *err) {
    return gguf_mapping_hint(m, ptr, len, 1, err);
}

ANVIL_API int anvil_gguf_prefetch(const anvil_gguf *g, const void *ptr, size_t len, anvil_error *err) {
    return gguf_mapping_hint(g != NULL ? g->hints : NULL, ptr, len, 0, err);
}

ANVIL_API int anvil_gguf_release(const anvil_gguf *g, const void *ptr, size_t len, anvil_error *err) {
    return gguf_mapping_hint(g != NULL ? g->hints : NULL, ptr, len, 1, err);
}

ANVIL_API anvil_gguf_mapping *anvil_gguf_take_mapping(anvil_gguf *g) {
    if (g == NULL || g->mapping == NULL) {
        return NULL;
    }
    anvil_gguf_mapping *m = g->mapping;
    g->mapping = NULL; /* g->hints keeps pointing at it: valid while it lives */
    return m;
}

/* ---- opening ------------------------------------------------------------- */

static anvil_gguf *gguf_new(void) {
    anvil_gguf *g = calloc(1, sizeof *g);
    if (g == NULL) {
        return NULL;
    }
    g->mapping = calloc(1, sizeof *g->mapping);
    if (g->mapping == NULL) {
        free(g);
        return NULL;
    }
    g->hints = g->mapping;
    gguf_index_init(&g->tensor_index, gguf_tensor_name_of, NULL);
    return g;
}

/* Append a region and a part slot; both arrays grow together. */
static int add_slot(anvil_gguf *g, anvil_error *err) {
    gguf_region *rs = realloc(g->mapping->regions, (g->mapping->n + 1) * sizeof *rs);
    if (rs == NULL) {
        return anvil__nomem(err);
    }
    g->mapping->regions = rs;
    memset(&rs[g->mapping->n], 0, sizeof *rs);
    gguf_part *ps = realloc(g->parts, (g->n_parts + 1) * sizeof *ps);
    if (ps == NULL) {
        return anvil__nomem(err);
    }
    g->parts = ps;
    memset(&ps[g->n_parts], 0, sizeof *ps);
    return ANVIL_OK;
}

/* Map and parse the file at open_path as the next part of g, known by name
 * (they differ while an interrupted set commit is read through its journal). */
static int add_file_part(anvil_gguf *g, const char *open_path, const char *name, const anvil_ctx *ctx,
                         anvil_error *err) {
    int rc = add_slot(g, err);
    if (rc != ANVIL_OK) {
        return rc;
    }
    gguf_region *r = &g->mapping->regions[g->mapping->n];
    rc = gguf_map_file(open_path, r, err);
    if (rc != ANVIL_OK) {
        return rc;
    }
    g->mapping->n++; /* owned from here on, even if parsing fails */
    gguf_part *p = &g->parts[g->n_parts];
    rc = gguf_parse_part(p, r->addr, r->size, ctx, err);
    if (rc != ANVIL_OK) {
        anvil__error_prefix(err, "%s", name);
        return rc;
    }
    g->n_parts++;
    p->path = strdup(name);
    if (p->path == NULL) {
        return anvil__nomem(err);
    }
    return ANVIL_OK;
}

int gguf_merge_parts(anvil_gguf *g, anvil_error *err) {
    size_t total = 0;
    for (size_t i = 0; i < g->n_parts; ++i) {
        total += g->parts[i].n_tensors;
    }
    free(g->tensors);
    g->tensors = NULL;
    g->n_tensors = 0;
    gguf_index_free(&g->tensor_index);
    if (total == 0) {
        return ANVIL_OK;
    }
    g->tensors = malloc(total * sizeof *g->tensors);
    if (g->tensors == NULL) {
        return anvil__error_set(err, ANVIL_E_NOMEM, "out of memory for %zu tensors", total);
    }
    gguf_index_init(&g->tensor_index, gguf_tensor_name_of, g->tensors);
    for (size_t i = 0; i < g->n_parts; ++i) {
        for (size_t k = 0; k < g->parts[i].n_tensors; ++k) {
            anvil_gguf_tensor *t = &g->tensors[g->n_tensors];
            *t = g->parts[i].tensors[k];
            t->part = (uint32_t)i;
            size_t first = 0;
            const int rc = gguf_index_insert(&g->tensor_index, g->n_tensors, &first);
            if (rc == 1 && g->lenient) {
                /* Already noted (and the tensor marked) by the parse. */
            } else if (rc == 1) {
                return anvil__error_set(err, ANVIL_E_GGUF_DUP_TENSOR,
                                        "tensor '%s' is in part %u and again in part %zu of the "
                                        "split set; the set is corrupt: re-split the model",
                                        t->name, g->tensors[first].part + 1, i + 1);
            }
            if (rc != ANVIL_OK && rc != 1) {
                return anvil__nomem(err);
            }
            g->n_tensors++;
        }
    }
    return ANVIL_OK;
}

ANVIL_API void anvil_gguf_close(anvil_gguf *g) {
    if (g == NULL) {
        return;
    }
    for (size_t i = 0; i < g->n_parts; ++i) {
        gguf_part_free(&g->parts[i]);
    }
    free(g->parts);
    free(g->tensors);
    gguf_index_free(&g->tensor_index);
    mapping_destroy(g->mapping);
    gguf_problems_free(&g->problems);
    if (g->source.free_arg != NULL) {
        g->source.free_arg(g->source.arg);
    }
    free(g->source.header);
    free(g);
}

/* After part 1 is parsed: when it is part 1 of a split set, open the other
 * parts (resolved: the files to open instead, from an interrupted commit's
 * journal) and have gguf_split.c check each. */
static int open_split_rest(anvil_gguf *g, const char *path, const char *const *resolved, const anvil_ctx *ctx,
                           anvil_error *err) {
    gguf_split_set s;
    int rc = gguf_split_begin(&s, &g->parts[0], path, resolved != NULL ? resolved[0] : path, err);
    if (rc != ANVIL_OK || s.count <= 1) {
        return rc;
    }
    for (uint32_t k = 2; k <= (uint32_t)s.count; ++k) {
        char part_path[4200];
        rc = gguf_split_part_path(&s, k, part_path, sizeof part_path, err);
        if (rc != ANVIL_OK) {
            return rc;
        }
        const char *opened = resolved != NULL ? resolved[k - 1] : part_path;
        rc = add_file_part(g, opened, part_path, ctx, err);
        if (rc == ANVIL_E_NOT_FOUND) {
            return gguf_split_missing(&s, k, part_path, err);
        }
        if (rc == ANVIL_OK) {
            rc = gguf_split_check_part(&s, &g->parts[g->n_parts - 1], k, opened, part_path, err);
        }
        if (rc != ANVIL_OK) {
            return rc;
        }
    }
    return gguf_split_check_total(&s, g->parts, g->n_parts, path, err);
}

ANVIL_API int anvil_gguf_open(anvil_gguf **out, const char *path, const anvil_ctx *ctx, unsigned flags,
                              anvil_error *err) {
    if (out == NULL || path == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_gguf_open: NULL argument");
    }
    *out = NULL;
    anvil_gguf *g = gguf_new();
    if (g == NULL) {
        return anvil__nomem(err);
    }
    /* Part 1 of a set: the folder is locked (shared) while the parts are
     * opened, and an interrupted replacement is read as its journal says
     * (file_set.h). Once mapped, the parts stay what they were. */
    file_set_view view = { .lock_fd = -1 };
    uint32_t no = 0, count = 0;
    int rc = ANVIL_OK;
    if ((flags & ANVIL_GGUF_OPEN_SINGLE_PART) == 0 && anvil_gguf_split_parse(path, NULL, 0, &no, &count) && no == 1 &&
        count > 1) {
        rc = file_set_view_open(&view, path, count, err);
    }
    if (rc == ANVIL_OK) {
        rc = add_file_part(g, view.n > 0 ? view.paths[0] : path, path, ctx, err);
    }
    if (rc == ANVIL_OK && (flags & ANVIL_GGUF_OPEN_SINGLE_PART) == 0) {
        rc = open_split_rest(g, path, view.n > 0 ? (const char *const *)view.paths : NULL, ctx, err);
    }
    file_set_view_close(&view);
    if (rc == ANVIL_OK) {
        rc = gguf_merge_parts(g, err);
    }
    if (rc != ANVIL_OK) {
        anvil_gguf_close(g);
        return rc;
    }
    *out = g;
    return ANVIL_OK;
}

/* Lenient parse of region 0 (already set up) as the one part of g. */
static int open_lenient_region(anvil_gguf *g, const char *path, const anvil_ctx *ctx, anvil_error *err) {
    const gguf_region *r = &g->mapping->regions[0];
    int rc = gguf_parse_part_lenient(&g->parts[0], r->addr, r->size, ctx, &g->problems, err);
    if (rc != ANVIL_OK) {
        if (path != NULL) {
            anvil__error_prefix(err, "%s", path);
        }
        return rc;
    }
    g->n_parts = 1;
    if (path != NULL && (g->parts[0].path = strdup(path)) == NULL) {
        return anvil__nomem(err);
    }
    return gguf_merge_parts(g, err);
}

/* A lenient open of the file at path, or (path NULL) of the caller's buffer. */
static int open_lenient(anvil_gguf **out, const char *path, const void *data, size_t size, const anvil_ctx *ctx,
                        anvil_error *err) {
    if (out == NULL || (path == NULL && data == NULL && size > 0)) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "lenient open: NULL argument");
    }
    *out = NULL;
    anvil_gguf *g = gguf_new();
    if (g == NULL) {
        return anvil__nomem(err);
    }
    g->lenient = 1;
    int rc = add_slot(g, err);
    gguf_region *r = rc == ANVIL_OK ? &g->mapping->regions[0] : NULL;
    if (rc == ANVIL_OK && path != NULL) {
        rc = gguf_map_file(path, r, err);
    } else if (rc == ANVIL_OK) {
        *r = (gguf_region){ (void *)(uintptr_t)data, size, 0 };
    }
    if (rc == ANVIL_OK) {
        g->mapping->n = 1;
        rc = open_lenient_region(g, path, ctx, err);
    }
    if (rc != ANVIL_OK) {
        anvil_gguf_close(g);
        return rc;
    }
    *out = g;
    return ANVIL_OK;
}

ANVIL_API int anvil_gguf_open_lenient(anvil_gguf **out, const char *path, const anvil_ctx *ctx, anvil_error *err) {
    if (path == NULL) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_gguf_open_lenient: NULL path");
    }
    return open_lenient(out, path, NULL, 0, ctx, err);
}

ANVIL_API int anvil_gguf_open_buffer_lenient(anvil_gguf **out, const void *data, size_t size, const anvil_ctx *ctx,
                                             anvil_error *err) {
    return open_lenient(out, NULL, data, size, ctx, err);
}

ANVIL_API size_t anvil_gguf_problem_count(const anvil_gguf *g) { return g != NULL ? g->problems.n : 0; }

ANVIL_API int anvil_gguf_problem_at(const anvil_gguf *g, size_t i, anvil_gguf_problem *out) {
    if (g == NULL || out == NULL || i >= g->problems.n) {
        return ANVIL_E_INVALID_ARG;
    }
    const gguf_problem *p = &g->problems.items[i];
    out->code = p->code;
    out->where = p->where;
    out->index = p->index;
    out->message = p->message;
    return ANVIL_OK;
}

ANVIL_API const char *anvil_gguf_tensor_problem(const anvil_gguf *g, size_t i) {
    if (g == NULL || i >= g->n_tensors || g->n_parts != 1 || g->parts[0].problem_of == NULL ||
        g->parts[0].problem_of[i] == 0) {
        return NULL;
    }
    return g->problems.items[g->parts[0].problem_of[i] - 1].message;
}

ANVIL_API void anvil_gguf_declared_counts(const anvil_gguf *g, uint64_t *n_kv, uint64_t *n_tensors) {
    if (n_kv != NULL) {
        *n_kv = g->parts[0].declared_kvs;
    }
    if (n_tensors != NULL) {
        *n_tensors = g->parts[0].declared_tensors;
    }
}

ANVIL_API int anvil_gguf_open_buffer(anvil_gguf **out, const void *data, size_t size, const anvil_ctx *ctx,
                                     anvil_error *err) {
    if (out == NULL || (data == NULL && size > 0)) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_gguf_open_buffer: NULL argument");
    }
    *out = NULL;
    anvil_gguf *g = gguf_new();
    if (g == NULL) {
        return anvil__nomem(err);
    }
    int rc = add_slot(g, err);
    if (rc == ANVIL_OK) {
        gguf_region *r = &g->mapping->regions[0];
        r->addr = (void *)(uintptr_t)data;
        r->size = size;
        r->is_mmap = 0;
        g->mapping->n = 1;
        rc = gguf_parse_part(&g->parts[0], data, size, ctx, err);
        if (rc == ANVIL_OK) {
            g->n_parts = 1;
            rc = gguf_merge_parts(g, err);
        }
    }
    if (rc != ANVIL_OK) {
        anvil_gguf_close(g);
        return rc;
    }
    *out = g;
    return ANVIL_OK;
}

int anvil__gguf_open_source(anvil_gguf **out, const void *header, size_t header_size, uint64_t file_size,
                            anvil__gguf_fill_fn fill, void (*free_arg)(void *), void *arg, const anvil_ctx *ctx,
                            anvil_error *err) {
    if (out == NULL || header == NULL || fill == NULL || header_size > file_size) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil__gguf_open_source: bad argument");
    }
    *out = NULL;
    anvil_gguf *g = gguf_new();
    uint8_t *copy = malloc(header_size > 0 ? header_size : 1);
    if (g == NULL || copy == NULL) {
        free(copy);
        anvil_gguf_close(g);
        return anvil__nomem(err);
    }
    memcpy(copy, header, header_size);
    g->source.header = copy;
    int rc = add_slot(g, err);
    if (rc == ANVIL_OK) {
        gguf_region *r = &g->mapping->regions[0];
        r->addr = copy;
        r->size = header_size;
        r->is_mmap = 0;
        g->mapping->n = 1;
        rc = gguf_parse_header(&g->parts[0], copy, header_size, file_size, ctx, err);
        if (rc == ANVIL_OK) {
            g->n_parts = 1;
            rc = gguf_merge_parts(g, err);
        }
    }
    if (rc != ANVIL_OK) {
        anvil_gguf_close(g); /* arg is still the caller's */
        return rc;
    }
    g->source.fill = fill;
    g->source.free_arg = free_arg;
    g->source.arg = arg;
    *out = g;
    return ANVIL_OK;
}

int anvil__gguf_has_source(const anvil_gguf *g) { return g != NULL && g->source.fill != NULL; }

void anvil__gguf_source_rows(anvil_gguf *g, anvil__gguf_fill_rows_fn fill_rows, anvil__gguf_rows_ok_fn rows_ok) {
    if (g != NULL && g->source.fill != NULL) {
        g->source.fill_rows = fill_rows;
        g->source.rows_ok = rows_ok;
    }
}

static int own_tensor(const anvil_gguf *g, const anvil_gguf_tensor *t) {
    return g != NULL && t != NULL && t >= g->tensors && t < g->tensors + g->n_tensors;
}

int anvil__gguf_can_fill_rows(const anvil_gguf *g, const anvil_gguf_tensor *t) {
    return own_tensor(g, t) && g->source.fill_rows != NULL && g->source.rows_ok != NULL && t->ne[0] > 0 &&
           g->source.rows_ok(g->source.arg, (size_t)(t - g->tensors));
}

int anvil__gguf_fill_rows(const anvil_gguf *g, const anvil_gguf_tensor *t, uint64_t row0, uint64_t n_rows, void *dst,
                          anvil_error *err) {
    if (!anvil__gguf_can_fill_rows(g, t)) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil__gguf_fill_rows: not a tensor filled by rows");
    }
    const uint64_t rows = t->n_elements / t->ne[0];
    if (row0 > rows || n_rows > rows - row0) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "tensor '%s': rows %" PRIu64 "..+%" PRIu64 " of %" PRIu64,
                                t->name, row0, n_rows, rows);
    }
    return g->source.fill_rows(g->source.arg, (size_t)(t - g->tensors), row0, n_rows, dst, t->n_bytes / rows * n_rows,
                               err);
}

int anvil__gguf_fill(const anvil_gguf *g, const anvil_gguf_tensor *t, void *dst, anvil_error *err) {
    if (g == NULL || t == NULL || t < g->tensors || t >= g->tensors + g->n_tensors) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil__gguf_fill: not a tensor of this file");
    }
    if (g->source.fill != NULL) {
        return g->source.fill(g->source.arg, (size_t)(t - g->tensors), dst, t->n_bytes, err);
    }
    if (t->data == NULL && t->n_bytes > 0) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "tensor '%s' has no data to read", t->name);
    }
    if (t->n_bytes > 0) {
        memcpy(dst, t->data, (size_t)t->n_bytes);
    }
    return ANVIL_OK;
}

/* ---- accessors ----------------------------------------------------------- */

ANVIL_API uint32_t anvil_gguf_version(const anvil_gguf *g) { return g->parts[0].version; }
ANVIL_API uint32_t anvil_gguf_alignment(const anvil_gguf *g) { return g->parts[0].alignment; }
ANVIL_API uint64_t anvil_gguf_data_offset(const anvil_gguf *g) { return g->parts[0].data_offset; }
ANVIL_API uint64_t anvil_gguf_file_size(const anvil_gguf *g) { return g->parts[0].size; }
ANVIL_API size_t anvil_gguf_part_count(const anvil_gguf *g) { return g->n_parts; }

ANVIL_API int anvil_gguf_part(const anvil_gguf *g, size_t i, anvil_gguf_part_info *out) {
    if (g == NULL || out == NULL || i >= g->n_parts) {
        return ANVIL_E_INVALID_ARG;
    }
    const gguf_part *p = &g->parts[i];
    out->path = p->path;
    out->file_size = p->size;
    out->version = p->version;
    out->alignment = p->alignment;
    out->header_size = p->header_size;
    out->data_offset = p->data_offset;
    out->data_end = p->data_end;
    out->n_kv = p->n_kv;
    out->n_tensors = p->n_tensors;
    out->first_tensor = 0;
    for (size_t k = 0; k < i; ++k) {
        out->first_tensor += g->parts[k].n_tensors;
    }
    return ANVIL_OK;
}

ANVIL_API size_t anvil_gguf_kv_count(const anvil_gguf *g) { return g->parts[0].n_kv; }

ANVIL_API const anvil_gguf_kv *anvil_gguf_kv_at(const anvil_gguf *g, size_t i) {
    return i < g->parts[0].n_kv ? &g->parts[0].kvs[i] : NULL;
}

ANVIL_API int64_t anvil_gguf_find_key(const anvil_gguf *g, const char *key) {
    if (g == NULL || key == NULL) {
        return -1;
    }
    return gguf_index_find(&g->parts[0].kv_index, key, strlen(key));
}

ANVIL_API const anvil_gguf_kv *anvil_gguf_find_kv(const anvil_gguf *g, const char *key) {
    const int64_t i = anvil_gguf_find_key(g, key);
    return i < 0 ? NULL : &g->parts[0].kvs[i];
}

ANVIL_API size_t anvil_gguf_tensor_count(const anvil_gguf *g) { return g->n_tensors; }

ANVIL_API const anvil_gguf_tensor *anvil_gguf_tensor_at(const anvil_gguf *g, size_t i) {
    return i < g->n_tensors ? &g->tensors[i] : NULL;
}

ANVIL_API const anvil_gguf_tensor *anvil_gguf_find_tensor(const anvil_gguf *g, const char *name) {
    if (g == NULL || name == NULL) {
        return NULL;
    }
    const int64_t i = gguf_index_find(&g->tensor_index, name, strlen(name));
    return i < 0 ? NULL : &g->tensors[i];
}
