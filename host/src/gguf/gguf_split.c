/* SPDX-License-Identifier: MIT */
/*
 * Split GGUF sets, llama.cpp's convention: parts are named
 * "<prefix>-%05d-of-%05d.gguf" (1-based), every part carries split.no (u16,
 * 0-based), split.count (u16) and split.tensors.count (i32, the tensors of
 * the whole set); part 1 also carries all the model's metadata.
 *
 * This file names the parts and checks that they belong together; opening
 * them is gguf_file.c's job (it asks here for each part's path).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file_set.h"
#include "gguf_internal.h"

ANVIL_API int anvil_gguf_split_path(char *buf, size_t size, const char *prefix, uint32_t no, uint32_t count,
                                    anvil_error *err) {
    if (buf == NULL || prefix == NULL || no == 0 || no > count) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "split part %" PRIu32 " of %" PRIu32 " is not a valid part number", no, count);
    }
    const int n = snprintf(buf, size, "%s-%05" PRIu32 "-of-%05" PRIu32 ".gguf", prefix, no, count);
    if (n < 0 || (size_t)n >= size) {
        return anvil__error_set(err, ANVIL_E_BUFFER_TOO_SMALL, "split path for '%s' is too long", prefix);
    }
    return ANVIL_OK;
}

/* Digits ending just before `end` (exclusive), scanning back to `lo`. */
static const char *digits_back(const char *lo, const char *end, uint64_t *value) {
    const char *p = end;
    while (p > lo && p[-1] >= '0' && p[-1] <= '9') {
        --p;
    }
    if (p == end || end - p > 9) {
        return NULL;
    }
    uint64_t v = 0;
    for (const char *q = p; q < end; ++q) {
        v = v * 10 + (uint64_t)(*q - '0');
    }
    *value = v;
    return p;
}

ANVIL_API int anvil_gguf_split_parse(const char *path, char *prefix, size_t prefix_size, uint32_t *no,
                                     uint32_t *count) {
    if (path == NULL) {
        return 0;
    }
    const size_t len = strlen(path);
    static const char ext[] = ".gguf";
    if (len < sizeof ext - 1 || strcmp(path + len - (sizeof ext - 1), ext) != 0) {
        return 0;
    }
    const char *end = path + len - (sizeof ext - 1);
    uint64_t c = 0, n = 0;
    const char *cp = digits_back(path, end, &c);
    if (cp == NULL || cp - path < 4 || memcmp(cp - 4, "-of-", 4) != 0) {
        return 0;
    }
    const char *np = digits_back(path, cp - 4, &n);
    if (np == NULL || np - path < 2 || np[-1] != '-') { /* a non-empty prefix */
        return 0;
    }
    if (n == 0 || c == 0 || n > c || c > UINT16_MAX) {
        return 0;
    }
    /* Only the canonical spelling counts, as llama.cpp compares it. */
    char canon[64];
    snprintf(canon, sizeof canon, "-%05" PRIu64 "-of-%05" PRIu64 ".gguf", n, c);
    const size_t clen = strlen(canon);
    if (strcmp(np - 1, canon) != 0) {
        return 0;
    }
    const size_t plen = len - clen;
    if (prefix != NULL) {
        if (plen >= prefix_size) {
            return 0;
        }
        memcpy(prefix, path, plen);
        prefix[plen] = '\0';
    }
    if (no != NULL) {
        *no = (uint32_t)n;
    }
    if (count != NULL) {
        *count = (uint32_t)c;
    }
    return 1;
}

/* A split key of part p: -1 when absent, else its u16/i32 value. */
static int split_key(const gguf_part *p, const char *key, uint32_t want_type, int64_t *value, const char *path,
                     anvil_error *err) {
    *value = -1;
    const int64_t i = gguf_index_find(&p->kv_index, key, strlen(key));
    if (i < 0) {
        return ANVIL_OK;
    }
    const anvil_gguf_kv *kv = &p->kvs[i];
    if (kv->type != want_type) {
        const char *tn = anvil_gguf_type_name(kv->type);
        return anvil__error_set(err, ANVIL_E_GGUF_KEY_TYPE, "%s: %s has wire type %s; llama.cpp writes it as %s",
                                path, key, tn != NULL ? tn : "?", anvil_gguf_type_name(want_type));
    }
    anvil_gguf_value v;
    gguf_value_at(kv->type, kv->raw, kv->raw_size, &v);
    *value = v.i;
    return ANVIL_OK;
}

/* The set marks (file_set.h) of part k, read from the file actually opened:
 * part 1's mark (or its absence) is what every part must match. */
static int check_mark(const gguf_split_mark *first, const char *opened, const char *name, uint32_t k, int64_t count,
                      anvil_error *err) {
    gguf_split_mark m;
    m.have = file_set_read_mark(opened, m.id, &m.no, &m.count);
    if (!first->have && !m.have) {
        return ANVIL_OK;
    }
    if (first->have && m.have && strcmp(m.id, first->id) == 0 && m.no == k && m.count == (uint32_t)count) {
        return ANVIL_OK;
    }
    char why[200];
    if (!m.have) {
        snprintf(why, sizeof why, "it has no anvil set mark while part 1 has one (set %.12s)", first->id);
    } else if (!first->have) {
        snprintf(why, sizeof why, "it has an anvil set mark (set %.12s) while part 1 has none", m.id);
    } else if (strcmp(m.id, first->id) != 0) {
        snprintf(why, sizeof why, "it was written by another run (set %.12s, part 1's is %.12s)", m.id, first->id);
    } else {
        snprintf(why, sizeof why, "its mark says part %" PRIu32 " of %" PRIu32, m.no, m.count);
    }
    return anvil__error_set(err, ANVIL_E_GGUF_SPLIT,
                            "%s: part %" PRIu32 " of %" PRId64 " does not belong with the other "
                            "parts: %s; the set was mixed with parts of another -- write or "
                            "download the set again (if the parts do belong together, remove "
                            "the marks: setfattr -x " FILE_SET_MARK_XATTR " on every part)",
                            name, k, count, why);
}

int gguf_split_begin(gguf_split_set *s, const gguf_part *first, const char *path, const char *opened,
                     anvil_error *err) {
    memset(s, 0, sizeof *s);
    int rc = split_key(first, ANVIL_GGUF_KEY_SPLIT_COUNT, ANVIL_GGUF_TYPE_U16, &s->count, path, err);
    int64_t no = -1;
    if (rc == ANVIL_OK) {
        rc = split_key(first, ANVIL_GGUF_KEY_SPLIT_NO, ANVIL_GGUF_TYPE_U16, &no, path, err);
    }
    if (rc == ANVIL_OK) {
        rc = split_key(first, ANVIL_GGUF_KEY_SPLIT_TENSORS, ANVIL_GGUF_TYPE_I32, &s->total, path, err);
    }
    if (rc != ANVIL_OK) {
        return rc;
    }
    /* No split keys, a merged file (count 0, as llama.cpp's merge leaves
     * it), a one-part set, or a later part opened on its own: one file. */
    if (s->count <= 1 || no != 0) {
        s->count = 1;
        return ANVIL_OK;
    }
    uint32_t pno = 0, pcount = 0;
    if (!anvil_gguf_split_parse(path, s->prefix, sizeof s->prefix, &pno, &pcount) || pno != 1 ||
        pcount != (uint32_t)s->count) {
        return anvil__error_set(err, ANVIL_E_GGUF_SPLIT,
                                "%s: the file is part 1 of a %" PRId64 "-part split set but its "
                                "name does not end in -00001-of-%05" PRId64 ".gguf, so the other "
                                "parts cannot be found; rename the parts as llama.cpp's "
                                "gguf-split names them, or open this part alone",
                                path, s->count, s->count);
    }
    s->first.have = file_set_read_mark(opened, s->first.id, &s->first.no, &s->first.count);
    return check_mark(&s->first, opened, path, 1, s->count, err);
}

int gguf_split_part_path(const gguf_split_set *s, uint32_t k, char *buf, size_t size, anvil_error *err) {
    return anvil_gguf_split_path(buf, size, s->prefix, k, (uint32_t)s->count, err);
}

int gguf_split_missing(const gguf_split_set *s, uint32_t k, const char *part_path, anvil_error *err) {
    return anvil__error_set(err, ANVIL_E_GGUF_SPLIT,
                            "part %" PRIu32 " of %" PRId64 " is missing: '%s' does not "
                            "exist; download every part of the split set",
                            k, s->count, part_path);
}

int gguf_split_check_part(const gguf_split_set *s, const gguf_part *p, uint32_t k, const char *opened,
                          const char *part_path, anvil_error *err) {
    int64_t pn, pc, pt;
    int rc = split_key(p, ANVIL_GGUF_KEY_SPLIT_NO, ANVIL_GGUF_TYPE_U16, &pn, part_path, err);
    if (rc == ANVIL_OK) {
        rc = split_key(p, ANVIL_GGUF_KEY_SPLIT_COUNT, ANVIL_GGUF_TYPE_U16, &pc, part_path, err);
    }
    if (rc == ANVIL_OK) {
        rc = split_key(p, ANVIL_GGUF_KEY_SPLIT_TENSORS, ANVIL_GGUF_TYPE_I32, &pt, part_path, err);
    }
    if (rc != ANVIL_OK) {
        return rc;
    }
    rc = check_mark(&s->first, opened, part_path, k, s->count, err);
    if (rc != ANVIL_OK) {
        return rc;
    }
    if (pn != (int64_t)(k - 1) || pc != s->count || (s->total >= 0 && pt >= 0 && pt != s->total)) {
        return anvil__error_set(err, ANVIL_E_GGUF_SPLIT,
                                "%s: split keys say part no %" PRId64 " of %" PRId64 " (%" PRId64
                                " tensors in all), expected part no %" PRIu32 " of %" PRId64 " (%" PRId64
                                " tensors): the parts come from "
                                "different split sets; re-download them",
                                part_path, pn, pc, pt, k - 1, s->count, s->total);
    }
    return ANVIL_OK;
}

int gguf_split_check_total(const gguf_split_set *s, const gguf_part *parts, size_t n_parts, const char *path,
                           anvil_error *err) {
    if (s->total < 0) {
        return ANVIL_OK;
    }
    size_t have = 0;
    for (size_t i = 0; i < n_parts; ++i) {
        have += parts[i].n_tensors;
    }
    if ((uint64_t)have != (uint64_t)s->total) {
        return anvil__error_set(err, ANVIL_E_GGUF_SPLIT,
                                "%s: split.tensors.count says %" PRId64 " tensors but the %" PRId64
                                " parts hold %zu; the set is incomplete or mixed",
                                path, s->total, s->count, have);
    }
    return ANVIL_OK;
}
