/* SPDX-License-Identifier: MIT */
/*
 * GGUF table-of-contents parser. The input is hostile: every wire value is
 * checked before it is used (lengths against the bytes left, products and
 * sums with overflow checks, general.alignment on its raw wire type before
 * any widening), nothing is allocated from a declared count, and the first
 * problem is reported with what it is, where it is and what to do.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "anvil/safetensors.h"
#include "gguf_internal.h"
#include "grow.h"

/* Smallest encodings, used only to size the first allocation: a KV is a
 * u64 key length, a 1-byte key, a u32 type and a 1-byte value; a tensor
 * entry is a u64 name length, u32 n_dims, u32 type and u64 offset. */
#define MIN_KV_BYTES 14u
#define MIN_TENSOR_BYTES 24u

typedef struct reader {
    const uint8_t *base;
    uint64_t size;
    uint64_t pos;
    gguf_problems *problems; /* lenient: where problems go; NULL: strict */
} reader;

/* Lenient: the rest of the file cannot be read (an internal status). */
#define GGUF_STOPPED 1

static uint64_t bytes_left(const reader *r) { return r->size - r->pos; }

/* A name fit for a message: at most 80 bytes, non-printables as '?'. */
typedef struct shown_name {
    char text[96];
} shown_name;

static shown_name show(const char *p, size_t len) {
    shown_name s;
    size_t n = len > 80 ? 80 : len;
    for (size_t i = 0; i < n; ++i) {
        const unsigned char c = (unsigned char)p[i];
        s.text[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    if (len > n) {
        memcpy(s.text + n, "...", 4);
    } else {
        s.text[n] = '\0';
    }
    return s;
}

double gguf_gb(uint64_t bytes) { return (double)bytes / 1e9; }

static int truncated_at(const reader *r, uint64_t need, const char *what, anvil_error *err) {
    return anvil__error_set(err, ANVIL_E_GGUF_TRUNCATED,
                            "the file ends inside %s: %" PRIu64 " bytes needed at byte %" PRIu64
                            " but the file has %" PRIu64 " bytes; the file is truncated: "
                            "re-download or re-export",
                            what, need, r->pos, r->size);
}

static void kv_name_of(const void *items, size_t i, const char **p, size_t *len) {
    const anvil_gguf_kv *kv = items;
    *p = kv[i].key;
    *len = kv[i].key_len;
}

void gguf_tensor_name_of(const void *items, size_t i, const char **p, size_t *len) {
    const anvil_gguf_tensor *t = items;
    *p = t[i].name;
    *len = t[i].name_len;
}

/* ---- magic and version -------------------------------------------------- */

static const struct {
    char bytes[5];
    const char *name;
} legacy_magics[] = {
    /* ggml wrote its magic as a little-endian u32, so on disk it reads
     * backwards; a big-endian machine would have written it forwards. */
    { "lmgg", "ggml (unversioned)" }, { "fmgg", "ggmf" }, { "tjgg", "ggjt" }, { "algg", "ggla (LoRA adapter)" },
    { "ggml", "ggml (unversioned)" }, { "ggmf", "ggmf" }, { "ggjt", "ggjt" }, { "ggla", "ggla (LoRA adapter)" },
};

static int check_magic(const uint8_t *b, uint64_t size, anvil_error *err) {
    if (size < 4) {
        if (size == 0) {
            return anvil__error_set(err, ANVIL_E_GGUF_TRUNCATED,
                                    "the file is empty (0 bytes), not a GGUF file; the file is "
                                    "truncated: re-download or re-export");
        }
        if (memcmp(b, "GGUF", (size_t)size) == 0) {
            return anvil__error_set(err, ANVIL_E_GGUF_TRUNCATED,
                                    "the file is %" PRIu64 " bytes and ends inside the GGUF magic; "
                                    "the file is truncated: re-download or re-export",
                                    size);
        }
        return anvil__error_set(err, ANVIL_E_GGUF_MAGIC,
                                "not a GGUF file: only %" PRIu64 " bytes and no 'GGUF' magic", size);
    }
    if (memcmp(b, "GGUF", 4) == 0) {
        return ANVIL_OK;
    }
    if (memcmp(b, "FUGG", 4) == 0) {
        return anvil__error_set(err, ANVIL_E_GGUF_ENDIAN,
                                "magic 'FUGG' is 'GGUF' byte-swapped: the file was written on a "
                                "big-endian machine; convert it to little-endian (gguf-py "
                                "gguf_convert_endian.py) before use");
    }
    for (size_t i = 0; i < sizeof legacy_magics / sizeof legacy_magics[0]; ++i) {
        if (memcmp(b, legacy_magics[i].bytes, 4) == 0) {
            return anvil__error_set(err, ANVIL_E_GGUF_LEGACY,
                                    "this is a pre-GGUF %s file, a format ggml dropped in 2023; "
                                    "anvil reads GGUF v2 and v3 only: convert the original "
                                    "weights with a current llama.cpp or download a GGUF",
                                    legacy_magics[i].name);
        }
    }
    char shown[5];
    for (int i = 0; i < 4; ++i) {
        shown[i] = (b[i] >= 0x20 && b[i] < 0x7f) ? (char)b[i] : '?';
    }
    shown[4] = '\0';
    const int looks_safetensors =
        anvil_st_sniff(b, size < ANVIL_ST_SNIFF_BYTES ? (size_t)size : ANVIL_ST_SNIFF_BYTES);
    return anvil__error_set(err, ANVIL_E_GGUF_MAGIC,
                            "not a GGUF file: it starts with '%s' (%02x %02x %02x %02x), "
                            "expected 'GGUF'%s",
                            shown, b[0], b[1], b[2], b[3],
                            looks_safetensors ? "; it looks like a safetensors file" : "");
}

static int check_version(uint32_t v, anvil_error *err) {
    if (v == 2 || v == 3) {
        return ANVIL_OK;
    }
    if (v == 1) {
        return anvil__error_set(err, ANVIL_E_GGUF_VERSION,
                                "GGUF v1 is no longer supported: re-convert the model with a "
                                "current llama.cpp (or download a v2/v3 file)");
    }
    if (v != 0 && (v & 0xFFFFu) == 0) {
        /* A small version read in the wrong byte order lands in the high
         * half: 3 reads as 0x03000000. */
        const uint32_t swapped = __builtin_bswap32(v);
        return anvil__error_set(err, ANVIL_E_GGUF_ENDIAN,
                                "GGUF version field reads %" PRIu32 " (0x%08" PRIx32 "), which is "
                                "version %" PRIu32 " byte-swapped: the file is big-endian, this "
                                "host is little-endian; convert it (gguf-py "
                                "gguf_convert_endian.py) before use",
                                v, v, swapped);
    }
    return anvil__error_set(err, ANVIL_E_GGUF_VERSION,
                            "GGUF version %" PRIu32 " is not supported (anvil reads versions 2 "
                            "and 3)",
                            v);
}

/* ---- KVs ----------------------------------------------------------------- */

static int nomem(anvil_error *err, const char *what) {
    return anvil__error_set(err, ANVIL_E_NOMEM, "out of memory while reading %s", what);
}

/* ---- lenient bookkeeping ------------------------------------------------- */

int gguf_problem_add(gguf_problems *ps, int where, size_t index, const anvil_error *e) {
    if (anvil__grow_array((void **)&ps->items, &ps->cap, ps->n + 1, sizeof *ps->items) != ANVIL_OK) {
        return ANVIL_E_NOMEM;
    }
    char *m = strdup(e->message);
    if (m == NULL) {
        return ANVIL_E_NOMEM;
    }
    ps->items[ps->n++] = (gguf_problem){ e->code, where, index, m };
    return ANVIL_OK;
}

void gguf_problems_free(gguf_problems *ps) {
    for (size_t i = 0; i < ps->n; ++i) {
        free(ps->items[i].message);
    }
    free(ps->items);
    memset(ps, 0, sizeof *ps);
}

/* A problem found at (where, index), described in *e. Strict: returns its
 * code. Lenient: notes it and returns ANVIL_OK, or `then` when the parse
 * cannot go on past it (GGUF_STOPPED). */
static int problem(reader *r, int where, size_t index, int code, const anvil_error *e, int then, anvil_error *err) {
    if (r->problems == NULL) {
        return code;
    }
    if (gguf_problem_add(r->problems, where, index, e) != ANVIL_OK) {
        return nomem(err, "the list of problems");
    }
    return then;
}

/* Lenient: tensor i of p is bad, its first problem the last one noted. */
static void mark_bad(const reader *r, gguf_part *p, size_t i) {
    if (r->problems != NULL && p->problem_of != NULL && p->problem_of[i] == 0) {
        p->problem_of[i] = r->problems->n;
    }
}

static int is_bad(const gguf_part *p, size_t i) { return p->problem_of != NULL && p->problem_of[i] != 0; }

/* Read a string's u64 length and check it against the bytes left. */
static int read_string(reader *r, anvil_gguf_str *out, const char *what, anvil_error *err) {
    if (bytes_left(r) < 8) {
        return truncated_at(r, 8, what, err);
    }
    const uint64_t len = gguf_load_u64(r->base + r->pos);
    if (len > bytes_left(r) - 8) {
        return anvil__error_set(err, ANVIL_E_GGUF_STRING,
                                "%s: string length %" PRIu64 " at byte %" PRIu64
                                " runs past the end of the file (%" PRIu64 " bytes left); the "
                                "file is truncated or corrupt: re-download or re-export",
                                what, len, r->pos, bytes_left(r) - 8);
    }
    out->ptr = (const char *)(r->base + r->pos + 8);
    out->len = (size_t)len;
    r->pos += 8 + len;
    return ANVIL_OK;
}

static int read_value(reader *r, anvil_gguf_kv *kv, anvil_error *err) {
    const shown_name key = show(kv->key, kv->key_len);
    char what[160];
    if (bytes_left(r) < 4) {
        snprintf(what, sizeof what, "the type of key '%s'", key.text);
        return truncated_at(r, 4, what, err);
    }
    const uint32_t type = gguf_load_u32(r->base + r->pos);
    r->pos += 4;
    const uint64_t raw_at = r->pos;
    kv->type = type;
    kv->elem_type = type;
    kv->count = 1;

    if (type == ANVIL_GGUF_TYPE_ARRAY) {
        if (bytes_left(r) < 12) {
            snprintf(what, sizeof what, "the array header of key '%s'", key.text);
            return truncated_at(r, 12, what, err);
        }
        const uint32_t elem = gguf_load_u32(r->base + r->pos);
        const uint64_t count = gguf_load_u64(r->base + r->pos + 4);
        if (elem == ANVIL_GGUF_TYPE_ARRAY) {
            return anvil__error_set(err, ANVIL_E_GGUF_NESTED_ARRAY,
                                    "key '%s' is an array of arrays (at byte %" PRIu64 "), which "
                                    "GGUF does not allow; the file is corrupt",
                                    key.text, r->pos);
        }
        if (elem >= ANVIL_GGUF_TYPE_COUNT) {
            return anvil__error_set(err, ANVIL_E_GGUF_KV_TYPE,
                                    "key '%s' is an array of unknown type %" PRIu32
                                    " (valid types are 0-12) at byte %" PRIu64 "; the file is corrupt",
                                    key.text, elem, r->pos);
        }
        r->pos += 12;
        kv->elem_type = elem;
        kv->count = count;
        if (elem == ANVIL_GGUF_TYPE_STRING) {
            /* Every element is at least its 8-byte length. */
            if (count > bytes_left(r) / 8) {
                return anvil__error_set(err, ANVIL_E_GGUF_COUNT,
                                        "key '%s': array of %" PRIu64 " strings cannot fit in the "
                                        "%" PRIu64 " bytes left in the file; the file is "
                                        "truncated or corrupt",
                                        key.text, count, bytes_left(r));
            }
            for (uint64_t i = 0; i < count; ++i) {
                /* Fast path for the common case (vocabularies have 10^5
                 * strings); the message is only built for a bad one. */
                if (bytes_left(r) >= 8) {
                    const uint64_t len = gguf_load_u64(r->base + r->pos);
                    if (len <= bytes_left(r) - 8) {
                        r->pos += 8 + len;
                        continue;
                    }
                }
                anvil_gguf_str s;
                snprintf(what, sizeof what, "key '%s' element %" PRIu64, key.text, i);
                return read_string(r, &s, what, err);
            }
        } else {
            const uint64_t esize = anvil_gguf_type_size(elem);
            uint64_t total;
            if (gguf_mul_overflows(count, esize, &total) || total > bytes_left(r)) {
                return anvil__error_set(err, ANVIL_E_GGUF_COUNT,
                                        "key '%s': array of %" PRIu64 " %s values needs more than "
                                        "the %" PRIu64 " bytes left in the file; the file is "
                                        "truncated or corrupt",
                                        key.text, count, anvil_gguf_type_name(elem), bytes_left(r));
            }
            r->pos += total;
        }
    } else if (type == ANVIL_GGUF_TYPE_STRING) {
        anvil_gguf_str s;
        snprintf(what, sizeof what, "value of key '%s'", key.text);
        int rc = read_string(r, &s, what, err);
        if (rc != ANVIL_OK) {
            return rc;
        }
    } else if (type < ANVIL_GGUF_TYPE_COUNT) {
        const uint64_t size = anvil_gguf_type_size(type);
        if (bytes_left(r) < size) {
            snprintf(what, sizeof what, "the value of key '%s'", key.text);
            return truncated_at(r, size, what, err);
        }
        r->pos += size;
    } else {
        return anvil__error_set(err, ANVIL_E_GGUF_KV_TYPE,
                                "key '%s' has unknown value type %" PRIu32 " (valid types are 0-12) at byte %" PRIu64
                                "; the file is corrupt",
                                key.text, type, raw_at - 4);
    }
    kv->raw = r->base + raw_at;
    kv->raw_size = (size_t)(r->pos - raw_at);
    return ANVIL_OK;
}

static int read_kvs(reader *r, gguf_part *p, uint64_t n_kv, anvil_error *err) {
    anvil_error local;
    anvil_error *e = r->problems != NULL ? &local : err; /* lenient: problems, not failures */
    size_t cap = 0;
    const uint64_t guess = bytes_left(r) / MIN_KV_BYTES;
    if (n_kv > 0 && anvil__grow_array((void **)&p->kvs, &cap, (size_t)(n_kv < guess ? n_kv : guess) + 1,
                                      sizeof *p->kvs) != ANVIL_OK) {
        return nomem(err, "the KV table");
    }
    gguf_index_init(&p->kv_index, kv_name_of, p->kvs);
    for (uint64_t k = 0; k < n_kv; ++k) {
        char what[96];
        snprintf(what, sizeof what, "the key of KV %" PRIu64 " of %" PRIu64, k, n_kv);
        anvil_gguf_str key;
        int rc = read_string(r, &key, what, e);
        if (rc != ANVIL_OK) {
            return problem(r, ANVIL_GGUF_AT_KV, (size_t)k, rc, e, GGUF_STOPPED, err);
        }
        if (key.len == 0) {
            rc = anvil__error_set(e, ANVIL_E_GGUF_STRING,
                                  "KV %" PRIu64 " has an empty key (at byte %" PRIu64 "); the file is corrupt", k,
                                  r->pos - 8);
            rc = problem(r, ANVIL_GGUF_AT_KV, (size_t)k, rc, e, ANVIL_OK, err);
            if (rc != ANVIL_OK) {
                return rc;
            }
        }
        if (anvil__grow_array((void **)&p->kvs, &cap, p->n_kv + 1, sizeof *p->kvs) != ANVIL_OK) {
            return nomem(err, "the KV table");
        }
        gguf_index_rebase(&p->kv_index, p->kvs);
        anvil_gguf_kv *kv = &p->kvs[p->n_kv];
        memset(kv, 0, sizeof *kv);
        kv->key = key.ptr;
        kv->key_len = key.len;
        size_t first = 0;
        rc = gguf_index_insert(&p->kv_index, p->n_kv, &first);
        if (rc == 1) {
            const shown_name sn = show(key.ptr, key.len);
            rc = anvil__error_set(e, ANVIL_E_GGUF_DUP_KEY,
                                  "key '%s' appears twice (KV %zu and KV %" PRIu64
                                  "); the file is corrupt: re-export it",
                                  sn.text, first, k);
            /* Lenient: both stay listed; lookups find the first. */
            rc = problem(r, ANVIL_GGUF_AT_KV, (size_t)k, rc, e, ANVIL_OK, err);
            if (rc != ANVIL_OK) {
                return rc;
            }
        } else if (rc != ANVIL_OK) {
            return nomem(err, "the key index");
        }
        p->n_kv++;
        rc = read_value(r, kv, e);
        if (rc != ANVIL_OK) {
            if (r->problems != NULL) {
                /* Not listed: its value is unreadable. */
                p->n_kv--;
                gguf_index_clear(&p->kv_index);
                for (size_t i = 0; i < p->n_kv; ++i) {
                    if (gguf_index_insert(&p->kv_index, i, &first) < 0) {
                        return nomem(err, "the key index");
                    }
                }
            }
            return problem(r, ANVIL_GGUF_AT_KV, (size_t)k, rc, e, GGUF_STOPPED, err);
        }
    }
    return ANVIL_OK;
}

/* general.alignment is checked on its raw wire type: a u64 or i32 holding a
 * "good" number is still refused, because ggml reads only u32. */
static int read_alignment(reader *r, gguf_part *p, anvil_error *err) {
    anvil_error local;
    anvil_error *e = r->problems != NULL ? &local : err;
    p->alignment = ANVIL_GGUF_DEFAULT_ALIGNMENT;
    const int64_t at = gguf_index_find(&p->kv_index, ANVIL_GGUF_KEY_ALIGNMENT, sizeof ANVIL_GGUF_KEY_ALIGNMENT - 1);
    if (at < 0) {
        return ANVIL_OK;
    }
    /* Lenient: a bad value is noted and the default used. */
    const anvil_gguf_kv *kv = &p->kvs[at];
    if (kv->type != ANVIL_GGUF_TYPE_U32) {
        const char *tn = anvil_gguf_type_name(kv->type);
        const int rc = anvil__error_set(e, ANVIL_E_GGUF_KEY_TYPE,
                                        "general.alignment has wire type %s; it must be u32 (a "
                                        "power of two up to 1 MiB); the file is corrupt",
                                        tn != NULL ? tn : "?");
        return problem(r, ANVIL_GGUF_AT_KV, (size_t)at, rc, e, ANVIL_OK, err);
    }
    const uint32_t a = gguf_load_u32(kv->raw);
    if (!gguf_is_pow2(a) || a > ANVIL_GGUF_MAX_ALIGNMENT) {
        const int rc = anvil__error_set(e, ANVIL_E_GGUF_ALIGNMENT,
                                        "general.alignment is %" PRIu32 "; it must be a power of "
                                        "two from 1 to %u (1 MiB); the file is corrupt",
                                        a, ANVIL_GGUF_MAX_ALIGNMENT);
        return problem(r, ANVIL_GGUF_AT_KV, (size_t)at, rc, e, ANVIL_OK, err);
    }
    p->alignment = a;
    return ANVIL_OK;
}

/* ---- tensor directory ---------------------------------------------------- */

static int read_tensor(reader *r, anvil_gguf_tensor *t, uint64_t index, const anvil_ctx *ctx, anvil_error *err) {
    const shown_name name = show(t->name, t->name_len);
    char what[160];
    if (bytes_left(r) < 4) {
        snprintf(what, sizeof what, "the dims of tensor '%s'", name.text);
        return truncated_at(r, 4, what, err);
    }
    const uint32_t n_dims = gguf_load_u32(r->base + r->pos);
    if (n_dims > ANVIL_GGUF_MAX_DIMS) {
        return anvil__error_set(err, ANVIL_E_GGUF_DIMS,
                                "tensor '%s' (index %" PRIu64 ") has %" PRIu32 " dims; GGUF allows at "
                                "most %d; the file is corrupt",
                                name.text, index, n_dims, ANVIL_GGUF_MAX_DIMS);
    }
    r->pos += 4;
    if (bytes_left(r) < 8u * n_dims) {
        snprintf(what, sizeof what, "the dims of tensor '%s'", name.text);
        return truncated_at(r, 8u * n_dims, what, err);
    }
    t->n_dims = n_dims;
    uint64_t n_elements = 1;
    for (uint32_t j = 0; j < ANVIL_GGUF_MAX_DIMS; ++j) {
        t->ne[j] = 1;
        if (j < n_dims) {
            t->ne[j] = gguf_load_u64(r->base + r->pos);
            r->pos += 8;
            /* ggml reads dims as int64: the top bit would be a negative dim. */
            if (t->ne[j] > (uint64_t)INT64_MAX) {
                return anvil__error_set(err, ANVIL_E_GGUF_DIMS,
                                        "tensor '%s': dim %" PRIu32 " is %" PRIu64
                                        ", a negative int64 on disk; the file is corrupt",
                                        name.text, j, t->ne[j]);
            }
        }
        if (gguf_mul_overflows(n_elements, t->ne[j], &n_elements) || n_elements > (uint64_t)INT64_MAX) {
            return anvil__error_set(err, ANVIL_E_GGUF_DIMS,
                                    "tensor '%s': dims %" PRIu64 " x %" PRIu64 " x %" PRIu64 " x %" PRIu64
                                    " overflow the element count; the file is "
                                    "corrupt",
                                    name.text, t->ne[0], j >= 1 ? t->ne[1] : 1, j >= 2 ? t->ne[2] : 1,
                                    j >= 3 ? t->ne[3] : 1);
        }
    }
    for (uint32_t k = 0; k < ANVIL_GGUF_MAX_DIMS; ++k) {
        t->shape[k] = k < n_dims ? t->ne[n_dims - 1 - k] : 1;
    }
    t->n_elements = n_elements;

    if (bytes_left(r) < 4) {
        snprintf(what, sizeof what, "the type of tensor '%s'", name.text);
        return truncated_at(r, 4, what, err);
    }
    t->type = gguf_load_u32(r->base + r->pos);
    r->pos += 4;
    anvil_error lookup;
    anvil__error_clear(&lookup);
    if (anvil_type_lookup(ctx, t->type, &t->type_info, &lookup) != ANVIL_OK) {
        return anvil__error_set(err, ANVIL_E_GGUF_TENSOR_TYPE, "tensor '%s': %s", name.text, lookup.message);
    }
    const uint64_t be = t->type_info.block_elems;
    const uint64_t bb = t->type_info.block_bytes;
    if (be == 0 || bb == 0) {
        return anvil__error_set(err, ANVIL_E_GGUF_TENSOR_TYPE,
                                "tensor '%s': type id %" PRIu32 " (%s) reports an empty block "
                                "(%" PRIu64 " elements, %" PRIu64 " bytes); its codec plugin is "
                                "broken",
                                name.text, t->type, t->type_info.name ? t->type_info.name : "?", be, bb);
    }
    if (t->ne[0] % be != 0) {
        return anvil__error_set(err, ANVIL_E_GGUF_ROW_BLOCKS,
                                "tensor '%s' (%s) has rows of %" PRIu64 " elements, not a whole "
                                "number of %" PRIu64 "-element blocks (%" PRIu64 " %% %" PRIu64 " = %" PRIu64
                                "); ggml cannot load it either: re-quantize or "
                                "re-export the model",
                                name.text, t->type_info.name, t->ne[0], be, t->ne[0], be, t->ne[0] % be);
    }
    /* ne[0] is whole blocks, so n_elements is too. */
    if (gguf_mul_overflows(t->ne[0] / be, bb, &t->row_bytes) ||
        gguf_mul_overflows(n_elements / be, bb, &t->n_bytes) || t->n_bytes > (uint64_t)INT64_MAX) {
        return anvil__error_set(err, ANVIL_E_GGUF_DIMS,
                                "tensor '%s': %" PRIu64 " elements of %s overflow a byte count; "
                                "the file is corrupt",
                                name.text, n_elements, t->type_info.name);
    }

    if (bytes_left(r) < 8) {
        snprintf(what, sizeof what, "the data offset of tensor '%s'", name.text);
        return truncated_at(r, 8, what, err);
    }
    t->offset = gguf_load_u64(r->base + r->pos);
    r->pos += 8;
    return ANVIL_OK;
}

/* Lenient: where the directory entry at r->pos (after its name) ends, when
 * its n_dims is sane and it lies inside the file; 0 otherwise. */
static uint64_t entry_end(const reader *r) {
    if (bytes_left(r) < 4) {
        return 0;
    }
    const uint32_t n_dims = gguf_load_u32(r->base + r->pos);
    const uint64_t need = 4 + 8u * (uint64_t)n_dims + 4 + 8;
    return n_dims <= ANVIL_GGUF_MAX_DIMS && bytes_left(r) >= need ? r->pos + need : 0;
}

/* Lenient: fill what the wire says of an entry read_tensor refused (its
 * extent is known), so it can be listed with its problem. */
static void fill_refused(const reader *r, anvil_gguf_tensor *t, uint64_t start, uint64_t end) {
    const uint8_t *b = r->base + start;
    t->n_dims = gguf_load_u32(b);
    uint64_t n = 1;
    int overflow = 0;
    for (uint32_t j = 0; j < ANVIL_GGUF_MAX_DIMS; ++j) {
        t->ne[j] = j < t->n_dims ? gguf_load_u64(b + 4 + 8u * j) : 1;
        overflow |= gguf_mul_overflows(n, t->ne[j], &n);
    }
    for (uint32_t k = 0; k < ANVIL_GGUF_MAX_DIMS; ++k) {
        t->shape[k] = k < t->n_dims ? t->ne[t->n_dims - 1 - k] : 1;
    }
    t->n_elements = overflow ? 0 : n;
    t->type = gguf_load_u32(r->base + end - 12);
    t->offset = gguf_load_u64(r->base + end - 8);
    t->n_bytes = 0;
    t->row_bytes = 0;
}

static int read_tensors(reader *r, gguf_part *p, uint64_t n_tensors, const anvil_ctx *ctx, anvil_error *err) {
    anvil_error local;
    anvil_error *e = r->problems != NULL ? &local : err;
    size_t cap = 0, bad_cap = 0;
    const uint64_t guess = bytes_left(r) / MIN_TENSOR_BYTES;
    if (n_tensors > 0 &&
        anvil__grow_array((void **)&p->tensors, &cap, (size_t)(n_tensors < guess ? n_tensors : guess) + 1,
                          sizeof *p->tensors) != ANVIL_OK) {
        return nomem(err, "the tensor directory");
    }
    gguf_name_index names;
    gguf_index_init(&names, gguf_tensor_name_of, p->tensors);
    int rc = ANVIL_OK;
    for (uint64_t k = 0; k < n_tensors && rc == ANVIL_OK; ++k) {
        char what[96];
        snprintf(what, sizeof what, "the name of tensor %" PRIu64 " of %" PRIu64, k, n_tensors);
        anvil_gguf_str name;
        rc = read_string(r, &name, what, e);
        if (rc != ANVIL_OK) {
            rc = problem(r, ANVIL_GGUF_AT_TENSOR, (size_t)k, rc, e, GGUF_STOPPED, err);
            break;
        }
        if (anvil__grow_array((void **)&p->tensors, &cap, p->n_tensors + 1, sizeof *p->tensors) != ANVIL_OK ||
            (r->problems != NULL && anvil__grow_array((void **)&p->problem_of, &bad_cap, p->n_tensors + 1,
                                                      sizeof *p->problem_of) != ANVIL_OK)) {
            rc = nomem(err, "the tensor directory");
            break;
        }
        gguf_index_rebase(&names, p->tensors);
        anvil_gguf_tensor *t = &p->tensors[p->n_tensors];
        memset(t, 0, sizeof *t);
        t->name = name.ptr;
        t->name_len = name.len;
        if (p->problem_of != NULL) {
            p->problem_of[p->n_tensors] = 0;
        }
        size_t first = 0;
        rc = gguf_index_insert(&names, p->n_tensors, &first);
        if (rc == 1) {
            const shown_name sn = show(name.ptr, name.len);
            rc = anvil__error_set(e, ANVIL_E_GGUF_DUP_TENSOR,
                                  "tensor name '%s' appears twice (tensors %zu and %" PRIu64
                                  "); the file is corrupt: re-export it",
                                  sn.text, first, k);
            rc = problem(r, ANVIL_GGUF_AT_TENSOR, (size_t)k, rc, e, ANVIL_OK, err);
            if (rc != ANVIL_OK) {
                break;
            }
            mark_bad(r, p, p->n_tensors);
        } else if (rc != ANVIL_OK) {
            rc = nomem(err, "the tensor index");
            break;
        }
        const uint64_t start = r->pos;
        const uint64_t end = r->problems != NULL ? entry_end(r) : 0;
        p->n_tensors++;
        rc = read_tensor(r, t, k, ctx, e);
        if (rc != ANVIL_OK && end == 0) {
            /* The rest of the directory cannot be found: not listed. */
            p->n_tensors -= r->problems != NULL;
            rc = problem(r, ANVIL_GGUF_AT_TENSOR, (size_t)k, rc, e, GGUF_STOPPED, err);
        } else if (rc != ANVIL_OK) {
            rc = problem(r, ANVIL_GGUF_AT_TENSOR, (size_t)k, rc, e, ANVIL_OK, err);
            if (rc == ANVIL_OK) {
                fill_refused(r, t, start, end);
                mark_bad(r, p, p->n_tensors - 1);
                r->pos = end;
            }
        }
    }
    gguf_index_free(&names);
    return rc;
}

/* ---- data ranges --------------------------------------------------------- */

typedef struct range {
    uint64_t start;
    uint64_t end;
    size_t tensor;
} range;

static int by_start(const void *a, const void *b) {
    const range *x = a, *y = b;
    if (x->start != y->start) {
        return x->start < y->start ? -1 : 1;
    }
    return x->tensor < y->tensor ? -1 : (x->tensor > y->tensor);
}

/* Check the tensor directory against the data section: e is err, or a
 * scratch error when the reader is lenient (problems are listed, not fatal).
 * Misaligned offsets first: they say the directory itself is wrong. */
static int check_alignment(reader *r, gguf_part *p, anvil_error *e, anvil_error *err) {
    int rc;
    for (size_t i = 0; i < p->n_tensors; ++i) {
        const anvil_gguf_tensor *t = &p->tensors[i];
        if (!is_bad(p, i) && t->offset % p->alignment != 0) {
            const shown_name sn = show(t->name, t->name_len);
            rc = anvil__error_set(e, ANVIL_E_GGUF_MISALIGNED,
                                  "tensor '%s': data offset %" PRIu64 " is not a multiple of "
                                  "the alignment %" PRIu32 "; the file is corrupt",
                                  sn.text, t->offset, p->alignment);
            if ((rc = problem(r, ANVIL_GGUF_AT_TENSOR, i, rc, e, ANVIL_OK, err)) != ANVIL_OK) {
                return rc;
            }
            mark_bad(r, p, i);
        }
    }
    return ANVIL_OK;
}

/* Each tensor's bytes inside the file: file_offset and data_end set; a
 * truncated file is named by its first tensor past the end. */
static int check_ranges(reader *r, gguf_part *p, anvil_error *e, anvil_error *err) {
    int rc;
    size_t n_past = 0, first_past = 0;
    uint64_t need = p->data_offset;
    for (size_t i = 0; i < p->n_tensors; ++i) {
        anvil_gguf_tensor *t = &p->tensors[i];
        uint64_t start, end;
        if (is_bad(p, i)) {
            /* Where its data would start, for the listing. */
            t->file_offset = gguf_add_overflows(p->data_offset, t->offset, &start) ? 0 : start;
            continue;
        }
        if (gguf_add_overflows(p->data_offset, t->offset, &start) || gguf_add_overflows(start, t->n_bytes, &end)) {
            const shown_name sn = show(t->name, t->name_len);
            rc = anvil__error_set(e, ANVIL_E_GGUF_DATA_RANGE,
                                  "tensor '%s': data offset %" PRIu64 " + %" PRIu64 " bytes "
                                  "lies outside any possible file; the file is corrupt",
                                  sn.text, t->offset, t->n_bytes);
            if ((rc = problem(r, ANVIL_GGUF_AT_TENSOR, i, rc, e, ANVIL_OK, err)) != ANVIL_OK) {
                return rc;
            }
            mark_bad(r, p, i);
            continue;
        }
        t->file_offset = start;
        if (end > p->size) {
            if (n_past++ == 0) {
                first_past = i;
            }
            if (r->problems != NULL) {
                const shown_name sn = show(t->name, t->name_len);
                anvil__error_set(e, ANVIL_E_GGUF_TRUNCATED,
                                 "tensor '%s' ends at byte %" PRIu64 " but the file is %" PRIu64 " bytes: %" PRIu64
                                 " bytes short; the file is truncated: "
                                 "re-download or re-export",
                                 sn.text, end, p->size, end - p->size);
                if ((rc = problem(r, ANVIL_GGUF_AT_TENSOR, i, 0, e, ANVIL_OK, err)) != ANVIL_OK) {
                    return rc;
                }
                mark_bad(r, p, i);
                continue;
            }
        }
        if (end > need) {
            need = end;
        }
    }
    p->data_end = need;
    if (n_past > 0 && r->problems == NULL) {
        const anvil_gguf_tensor *t = &p->tensors[first_past];
        const shown_name sn = show(t->name, t->name_len);
        const uint64_t end = t->file_offset + t->n_bytes;
        char more[256] = "";
        if (n_past > 1) {
            snprintf(more, sizeof more,
                     " (%zu of %zu tensors run past the end; the data needs %" PRIu64 " bytes, %" PRIu64
                     " bytes = %.3f GB more than the file has)",
                     n_past, p->n_tensors, need, need - p->size, gguf_gb(need - p->size));
        }
        return anvil__error_set(err, ANVIL_E_GGUF_TRUNCATED,
                                "tensor '%s' ends at byte %" PRIu64 " but the file is %" PRIu64 " bytes: %" PRIu64
                                " bytes (%.3f GB) short%s. The file is "
                                "truncated: re-download or re-export",
                                sn.text, end, p->size, end - p->size, gguf_gb(end - p->size), more);
    }

    return ANVIL_OK;
}

/* No two tensors' bytes overlap: sort the non-empty ranges and compare each
 * with the one reaching furthest so far. */
static int check_overlaps(reader *r, gguf_part *p, anvil_error *e, anvil_error *err) {
    int rc;
    range *rs = NULL;
    size_t n = 0;
    if (p->n_tensors > 0) {
        rs = malloc(p->n_tensors * sizeof *rs);
        if (rs == NULL) {
            return nomem(err, "the tensor ranges");
        }
    }
    for (size_t i = 0; i < p->n_tensors; ++i) {
        if (p->tensors[i].n_bytes > 0 && !is_bad(p, i)) {
            rs[n].start = p->tensors[i].file_offset;
            rs[n].end = rs[n].start + p->tensors[i].n_bytes;
            rs[n].tensor = i;
            n++;
        }
    }
    if (n > 1) {
        qsort(rs, n, sizeof *rs, by_start);
    }
    rc = ANVIL_OK;
    size_t reach = 0;
    for (size_t i = 1; i < n && rc == ANVIL_OK; ++i) {
        if (rs[i].start < rs[reach].end) {
            const anvil_gguf_tensor *a = &p->tensors[rs[reach].tensor];
            const anvil_gguf_tensor *b = &p->tensors[rs[i].tensor];
            const shown_name sa = show(a->name, a->name_len);
            const shown_name sb = show(b->name, b->name_len);
            rc = anvil__error_set(e, ANVIL_E_GGUF_OVERLAP,
                                  "tensors '%s' (bytes %" PRIu64 "-%" PRIu64 ") and '%s' (bytes "
                                  "%" PRIu64 "-%" PRIu64 ") overlap; the file is corrupt",
                                  sa.text, rs[reach].start, rs[reach].end, sb.text, rs[i].start, rs[i].end);
            /* Lenient: both are marked, each with the same message. */
            const size_t ta = rs[reach].tensor, tb = rs[i].tensor;
            if (r->problems != NULL && !is_bad(p, ta)) {
                if ((rc = problem(r, ANVIL_GGUF_AT_TENSOR, ta, rc, e, ANVIL_OK, err)) != ANVIL_OK) {
                    break;
                }
                mark_bad(r, p, ta);
            }
            rc = problem(r, ANVIL_GGUF_AT_TENSOR, tb, e->code, e, ANVIL_OK, err);
            mark_bad(r, p, tb);
        }
        if (rs[i].end > rs[reach].end) {
            reach = i;
        }
    }
    free(rs);
    return rc;
}

static int check_data(reader *r, gguf_part *p, anvil_error *err) {
    anvil_error local;
    anvil_error *e = r->problems != NULL ? &local : err;
    int rc = check_alignment(r, p, e, err);
    if (rc == ANVIL_OK) rc = check_ranges(r, p, e, err);
    if (rc == ANVIL_OK) rc = check_overlaps(r, p, e, err);
    if (rc == ANVIL_OK && r->problems != NULL) {
        /* The data the good tensors need. */
        p->data_end = p->data_offset;
        for (size_t i = 0; i < p->n_tensors; ++i) {
            const anvil_gguf_tensor *t = &p->tensors[i];
            if (!is_bad(p, i) && t->file_offset + t->n_bytes > p->data_end) {
                p->data_end = t->file_offset + t->n_bytes;
            }
        }
    }
    return rc;
}

/* Keys and names become NUL-terminated copies in one pool. */
static int pool_names(gguf_part *p, anvil_error *err) {
    uint64_t total = 1;
    for (size_t i = 0; i < p->n_kv; ++i) {
        total += p->kvs[i].key_len + 1;
    }
    for (size_t i = 0; i < p->n_tensors; ++i) {
        total += p->tensors[i].name_len + 1;
    }
    if (total > SIZE_MAX) {
        return nomem(err, "names");
    }
    char *pool = malloc((size_t)total);
    if (pool == NULL) {
        return nomem(err, "names");
    }
    char *at = pool;
    for (size_t i = 0; i < p->n_kv; ++i) {
        memcpy(at, p->kvs[i].key, p->kvs[i].key_len);
        at[p->kvs[i].key_len] = '\0';
        p->kvs[i].key = at;
        at += p->kvs[i].key_len + 1;
    }
    for (size_t i = 0; i < p->n_tensors; ++i) {
        memcpy(at, p->tensors[i].name, p->tensors[i].name_len);
        at[p->tensors[i].name_len] = '\0';
        p->tensors[i].name = at;
        at += p->tensors[i].name_len + 1;
    }
    p->names = pool;
    return ANVIL_OK;
}

/* base holds `have` bytes of a file of `size` bytes (have < size: the
 * header only, for a source whose tensor data comes from elsewhere). */
static int parse_part(gguf_part *p, const uint8_t *base, uint64_t have, uint64_t size, const anvil_ctx *ctx,
                      gguf_problems *problems, anvil_error *err) {
    memset(p, 0, sizeof *p);
    p->base = base;
    p->size = size;
    gguf_index_init(&p->kv_index, kv_name_of, NULL);
    reader r = { base, have, 0, problems };

    int rc = check_magic(base, have, err);
    if (rc != ANVIL_OK) {
        goto fail;
    }
    if (have < 8) {
        r.pos = 4;
        rc = truncated_at(&r, 4, "the header (version)", err);
        goto fail;
    }
    p->version = gguf_load_u32(base + 4);
    rc = check_version(p->version, err);
    if (rc != ANVIL_OK) {
        goto fail;
    }
    r.pos = 8;
    if (bytes_left(&r) < 16) {
        rc = truncated_at(&r, 16, "the header (tensor and KV counts)", err);
        goto fail;
    }
    const uint64_t n_tensors = gguf_load_u64(base + 8);
    const uint64_t n_kv = gguf_load_u64(base + 16);
    r.pos = 24;
    /* ggml reads both counts as int64: the top bit is a negative count. */
    if (n_tensors > (uint64_t)INT64_MAX || n_kv > (uint64_t)INT64_MAX) {
        rc = anvil__error_set(err, ANVIL_E_GGUF_COUNT,
                              "the header declares %" PRIu64 " tensors and %" PRIu64 " KVs; a "
                              "count above 2^63-1 is negative on disk: the file is corrupt",
                              n_tensors, n_kv);
        goto fail;
    }
    p->declared_kvs = n_kv;
    p->declared_tensors = n_tensors;
    /* From here on a lenient parse keeps what it has read (GGUF_STOPPED:
     * the rest of the file cannot be found). */
    rc = read_kvs(&r, p, n_kv, err);
    if (rc == ANVIL_OK || rc == GGUF_STOPPED) {
        const int stopped = rc;
        rc = read_alignment(&r, p, err);
        if (rc == ANVIL_OK) {
            rc = stopped;
        }
    }
    if (rc == ANVIL_OK) {
        rc = read_tensors(&r, p, n_tensors, ctx, err);
    }
    if (rc != ANVIL_OK && rc != GGUF_STOPPED) {
        goto fail;
    }
    p->header_size = r.pos;
    /* ggml seeks to the padded offset only when there are tensors: a
     * vocab-only file may end right after its KVs. */
    p->data_offset = r.pos;
    if (p->n_tensors > 0 && gguf_pad_overflows(r.pos, p->alignment, &p->data_offset)) {
        rc = anvil__error_set(err, ANVIL_E_GGUF_DATA_RANGE, "data section offset overflows");
        goto fail;
    }
    rc = check_data(&r, p, err);
    if (rc != ANVIL_OK) {
        goto fail;
    }
    rc = pool_names(p, err);
    if (rc != ANVIL_OK) {
        goto fail;
    }
    for (size_t i = 0; i < p->n_tensors; ++i) {
        const anvil_gguf_tensor *t = &p->tensors[i];
        p->tensors[i].data = is_bad(p, i) || t->file_offset > have || t->n_bytes > have - t->file_offset
                                 ? NULL
                                 : base + t->file_offset;
    }
    return ANVIL_OK;

fail:
    gguf_part_free(p);
    return rc;
}

int gguf_parse_part(gguf_part *p, const uint8_t *base, uint64_t size, const anvil_ctx *ctx, anvil_error *err) {
    return parse_part(p, base, size, size, ctx, NULL, err);
}

int gguf_parse_header(gguf_part *p, const uint8_t *base, uint64_t have, uint64_t size, const anvil_ctx *ctx,
                      anvil_error *err) {
    return parse_part(p, base, have, size, ctx, NULL, err);
}

int gguf_parse_part_lenient(gguf_part *p, const uint8_t *base, uint64_t size, const anvil_ctx *ctx,
                            gguf_problems *problems, anvil_error *err) {
    return parse_part(p, base, size, size, ctx, problems, err);
}

void gguf_part_free(gguf_part *p) {
    free(p->kvs);
    free(p->problem_of);
    free(p->tensors);
    free(p->names);
    free(p->path);
    gguf_index_free(&p->kv_index);
    memset(p, 0, sizeof *p);
}
