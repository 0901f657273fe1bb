/* SPDX-License-Identifier: MIT */
/*
 * hf_table: lookups in the generated registry of convert_hf_to_gguf.py
 * (hf_arch_table.h). TensorNameMap is followed as gguf-py builds it: the
 * GGUF names and mappings_cfg entries of the architecture's tensors, then
 * block_mappings_cfg for the name's block (arch_block_mappings_cfg
 * replacing a tensor's general entries), the last entry for a name
 * winning as in its dict.
 */
#include "hf_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct hf_table_map {
    const char *hf;
    short tensor;
    char block;
} hf_table_map;
typedef struct hf_table_arch_map {
    const char *arch, *hf;
    short tensor;
} hf_table_arch_map;
typedef struct hf_table_arch_tensors {
    const char *arch;
    int first;
} hf_table_arch_tensors;
typedef struct hf_table_key {
    const char *py_name, *key;
} hf_table_key;

#include "hf_arch_table.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int cmp_class(const void *k, const void *e) {
    return strcmp((const char *)k, ((const hf_table_class *)e)->hf_class);
}

const hf_table_class *hf_table_class_find(const char *hf_class) {
    if (hf_class == NULL) return NULL;
    return bsearch(hf_class, k_hf_classes, COUNT(k_hf_classes), sizeof k_hf_classes[0], cmp_class);
}

size_t hf_table_class_count(size_t *registered) {
    if (registered != NULL) *registered = HF_TABLE_N_TEXT_CLASSES;
    return COUNT(k_hf_classes);
}

static const short *arch_tensors(const char *arch) {
    for (size_t i = 0; i < COUNT(k_hf_arch_tensors); ++i) {
        if (strcmp(k_hf_arch_tensors[i].arch, arch) == 0) return &k_hf_arch_tensor_ids[k_hf_arch_tensors[i].first];
    }
    return NULL;
}

static int has(const short *ids, int t) {
    for (; *ids >= 0; ++ids)
        if (*ids == t) return 1;
    return 0;
}

/* pattern with "{bid}" replaced by bid equals key[0, n). */
static int same(const char *pattern, long bid, const char *key, size_t n) {
    char buf[256];
    const char *at = strstr(pattern, "{bid}");
    if (at == NULL) return strlen(pattern) == n && memcmp(pattern, key, n) == 0;
    if (bid < 0) return 0;
    const int w = snprintf(buf, sizeof buf, "%.*s%ld%s", (int)(at - pattern), pattern, bid, at + 5);
    return w > 0 && (size_t)w == n && memcmp(buf, key, n) == 0;
}

static int overridden(const char *arch, int t) {
    for (size_t i = 0; i < COUNT(k_hf_arch_maps); ++i)
        if (k_hf_arch_maps[i].tensor == t && strcmp(k_hf_arch_maps[i].arch, arch) == 0) return 1;
    return 0;
}

/* The tensor id key[0, n) maps to for block bid, or -1 (the last match wins). */
static int lookup(const char *arch, const short *ids, const char *key, size_t n, long bid, unsigned long n_blocks) {
    int hit = -1;
    for (int t = 0; t < HF_TABLE_N_TENSORS; ++t) /* the GGUF names themselves */
        if (has(ids, t) && strstr(k_hf_tensor_names[t], "{bid}") == NULL && same(k_hf_tensor_names[t], -1, key, n))
            hit = t;
    for (size_t i = 0; i < COUNT(k_hf_maps); ++i)
        if (!k_hf_maps[i].block && has(ids, k_hf_maps[i].tensor) && same(k_hf_maps[i].hf, -1, key, n))
            hit = k_hf_maps[i].tensor;
    if (bid < 0 || (unsigned long)bid >= n_blocks) return hit;
    for (int t = 0; t < HF_TABLE_N_TENSORS; ++t)
        if (has(ids, t) && strstr(k_hf_tensor_names[t], "{bid}") != NULL && same(k_hf_tensor_names[t], bid, key, n))
            hit = t;
    for (size_t i = 0; i < COUNT(k_hf_maps); ++i) {
        const int t = k_hf_maps[i].tensor;
        if (k_hf_maps[i].block && has(ids, t) && !overridden(arch, t) && same(k_hf_maps[i].hf, bid, key, n)) hit = t;
    }
    for (size_t i = 0; i < COUNT(k_hf_arch_maps); ++i) {
        const int t = k_hf_arch_maps[i].tensor;
        if (strcmp(k_hf_arch_maps[i].arch, arch) == 0 && has(ids, t) && same(k_hf_arch_maps[i].hf, bid, key, n))
            hit = t;
    }
    return hit;
}

/* The first all-digit part of a dotted name, or -1. */
static long block_of(const char *name) {
    for (const char *p = name; *p;) {
        const char *e = strchr(p, '.');
        const size_t n = e ? (size_t)(e - p) : strlen(p);
        size_t k = 0;
        while (k < n && p[k] >= '0' && p[k] <= '9') ++k;
        if (n > 0 && k == n && n < 10) return strtol(p, NULL, 10);
        if (e == NULL) break;
        p = e + 1;
    }
    return -1;
}

int hf_table_map_tensor(const char *gguf_arch, const char *name, unsigned long n_blocks, char *out, size_t cap) {
    const short *ids = gguf_arch ? arch_tensors(gguf_arch) : NULL;
    if (ids == NULL || name == NULL) return -1;
    const long bid = block_of(name);
    static const char *const suffixes[] = { "", ".weight", ".bias" };
    const size_t nl = strlen(name);
    for (size_t s = 0; s < COUNT(suffixes); ++s) {
        const size_t sl = strlen(suffixes[s]);
        if (nl < sl || strcmp(name + nl - sl, suffixes[s]) != 0) continue;
        const int t = lookup(gguf_arch, ids, name, nl - sl, bid, n_blocks);
        if (t < 0) continue;
        char base[256];
        const char *pat = k_hf_tensor_names[t], *at = strstr(pat, "{bid}");
        if (at != NULL) snprintf(base, sizeof base, "%.*s%ld%s", (int)(at - pat), pat, bid, at + 5);
        else snprintf(base, sizeof base, "%s", pat);
        const int w = snprintf(out, cap, "%s%s", base, suffixes[s]);
        return w > 0 && (size_t)w < cap ? 0 : -1;
    }
    return -1;
}
