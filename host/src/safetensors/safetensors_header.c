/* SPDX-License-Identifier: MIT */
/*
 * safetensors header validation: every rule of upstream's reader
 * (huggingface/safetensors, tensor.rs read_metadata + Metadata::validate),
 * in upstream's order, each with its own status:
 *
 *   < 8 bytes                         ANVIL_E_ST_TOO_SMALL
 *   N > 100,000,000                   ANVIL_E_ST_HEADER_TOO_LARGE
 *   8 + N past the end                ANVIL_E_ST_HEADER_PAST_END
 *   header not UTF-8                  ANVIL_E_ST_UTF8
 *   not a JSON object starting '{'    ANVIL_E_ST_JSON
 *   unknown dtype                     ANVIL_E_ST_DTYPE
 *   entry lacks/mistypes a field      ANVIL_E_ST_ENTRY
 *   offsets (sorted) not contiguous   ANVIL_E_ST_OFFSETS
 *   shape product / bits overflow     ANVIL_E_ST_OVERFLOW
 *   sub-byte bits not whole bytes     ANVIL_E_ST_SUBBYTE
 *   byte length != shape x dtype      ANVIL_E_ST_SIZE_MISMATCH
 *   bytes after the last tensor       ANVIL_E_ST_TRAILING
 *
 * Upstream refuses a non-string metadata value or a mistyped entry field as
 * a JSON deserialization error; here they have their own codes
 * (ANVIL_E_ST_METADATA, ANVIL_E_ST_ENTRY). Beyond upstream: a duplicated
 * JSON key is refused (ANVIL_E_ST_DUP_KEY; upstream's serde keeps one copy
 * silently), as is an unknown field in a tensor entry (serde ignores it,
 * and a rewrite would drop it). A data buffer shorter than the offsets need
 * is ANVIL_E_TRUNCATED (upstream folds it into its "incomplete buffer"
 * error together with trailing bytes).
 *
 * The header is read as events (json.h): what is kept is what the tables
 * need (names, dims, metadata), so memory stays proportional to the header's
 * meaningful content whatever a hostile header holds. The whole header is
 * JSON-checked before its meaning is judged: a syntax error anywhere wins
 * over, say, an unknown dtype earlier in the text.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/safetensors.h"
#include "error.h"
#include "json.h"
#include "safetensors_internal.h"

#define REEXPORT "; the file is corrupt, or was not written by a safetensors writer"

/* One tensor entry as the header states it. Strings live in the builder's
 * pool and dims in its dims array, both referred to by offset because they
 * grow while the header is read. */
typedef struct tensor_rec {
    size_t name; /* pool offset */
    size_t name_len;
    anvil_st_dtype dtype;
    size_t dims; /* offset into dims */
    size_t rank;
    uint64_t begin, end;
    size_t order;    /* position in the header: the tie-break of the sort */
    unsigned fields; /* HAVE_* bits */
} tensor_rec;

enum { HAVE_DTYPE = 1, HAVE_SHAPE = 2, HAVE_OFFSETS = 4 };

typedef struct meta_rec {
    size_t key, value; /* pool offsets */
} meta_rec;

/* Where the reader is in the header's fixed shape:
 *   { "<name>": {"dtype": S, "shape": [N...], "data_offsets": [N, N]},
 *     "__metadata__": {"<key>": S, ...} | null, ... } */
typedef enum hstate {
    S_TOP,           /* in the root object, expecting a key */
    S_META_VALUE,    /* after "__metadata__": */
    S_META_OBJ,      /* in __metadata__, expecting a key */
    S_META_ITEM,     /* after a metadata key */
    S_ENTRY_VALUE,   /* after a tensor name */
    S_ENTRY,         /* in a tensor entry, expecting a field */
    S_DTYPE,         /* after "dtype": */
    S_SHAPE_VALUE,   /* after "shape": */
    S_SHAPE,         /* in the shape array */
    S_OFFSETS_VALUE, /* after "data_offsets": */
    S_OFFSETS        /* in the data_offsets array */
} hstate;

typedef struct builder {
    const char *where;
    anvil_error *err;
    int failed; /* first error about the header's meaning (recorded in err) */
    hstate state;
    char *pool; /* names, metadata keys and values, NUL-terminated */
    size_t pool_len, pool_cap;
    uint64_t *dims;
    size_t dims_len, dims_cap;
    tensor_rec *t;
    size_t count, cap;
    meta_rec *meta;
    size_t meta_count, meta_cap;
    int has_metadata;
    size_t meta_key;  /* pool offset of the metadata key being read */
    size_t n_offsets; /* numbers seen in data_offsets */
} builder;

static const char METADATA_KEY[] = "__metadata__";

/* Grow a buffer to hold `need` items of `size` bytes. */
static int grow(void **buf, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) {
        return 1;
    }
    size_t ncap = *cap ? *cap : 16;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2) {
            return 0;
        }
        ncap *= 2;
    }
    if (ncap > SIZE_MAX / size) {
        return 0;
    }
    void *nb = realloc(*buf, ncap * size);
    if (nb == NULL) {
        return 0;
    }
    *buf = nb;
    *cap = ncap;
    return 1;
}

/* Record the first error about the header's meaning; the JSON is still read
 * to its end, so a syntax error anywhere takes precedence. */
static int fail(builder *b, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(builder *b, int code, const char *fmt, ...) {
    if (b->failed == 0) {
        char what[ANVIL_ERROR_MESSAGE_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(what, sizeof what, fmt, ap);
        va_end(ap);
        anvil__error_set(b->err, code, "%s: %s", b->where, what);
        b->failed = code;
    }
    /* Out of memory stops the parse; anything else lets it run on. */
    return code == ANVIL_E_NOMEM;
}

static int out_of_memory(builder *b) { return fail(b, ANVIL_E_NOMEM, "out of memory"); }

static int pool_add(builder *b, const char *s, size_t len, size_t *at) {
    if (len >= SIZE_MAX - b->pool_len || !grow((void **)&b->pool, &b->pool_cap, b->pool_len + len + 1, 1)) {
        return 0;
    }
    memcpy(b->pool + b->pool_len, s, len);
    b->pool[b->pool_len + len] = '\0';
    *at = b->pool_len;
    b->pool_len += len + 1;
    return 1;
}

/* The tensor being read, quoted for a message. */
static const char *current(builder *b, char q[ANVIL_ST_QUOTED_MAX]) {
    anvil__st_quote(q, b->pool + b->t[b->count - 1].name);
    return q;
}

/* A u64 from a NUMBER event, as item i of `field` of the current tensor. */
static int take_u64(builder *b, const anvil_json_event *ev, const char *field, size_t i, uint64_t *out) {
    char q[ANVIL_ST_QUOTED_MAX];
    if (ev->kind != ANVIL_JSON_NUMBER) {
        fail(b, ANVIL_E_ST_ENTRY, "tensor %s: %s[%zu] is %s, not a non-negative integer" REEXPORT, current(b, q),
             field, i, anvil__json_event_what(ev->kind));
        return 0;
    }
    const int r = anvil__json_number_u64(ev->text, ev->len, out);
    if (r == 1) {
        fail(b, ANVIL_E_ST_ENTRY, "tensor %s: %s[%zu] = %.*s is not a non-negative integer" REEXPORT, current(b, q),
             field, i, (int)(ev->len > 40 ? 40 : ev->len), ev->text);
        return 0;
    }
    if (r == 2) {
        fail(b, ANVIL_E_ST_OVERFLOW, "tensor %s: %s[%zu] = %.*s does not fit 64 bits" REEXPORT, current(b, q), field,
             i, (int)(ev->len > 40 ? 40 : ev->len), ev->text);
        return 0;
    }
    return 1;
}

/* A key at the top level: a tensor entry begins, or __metadata__. */
static int on_top(builder *b, const anvil_json_event *ev) {
    if (ev->kind != ANVIL_JSON_KEY) {
        return 0; /* the root's own begin and end */
    }
    if (ev->len == sizeof METADATA_KEY - 1 && memcmp(ev->text, METADATA_KEY, ev->len) == 0) {
        b->state = S_META_VALUE;
        return 0;
    }
    if (!grow((void **)&b->t, &b->cap, b->count + 1, sizeof *b->t)) {
        return out_of_memory(b);
    }
    tensor_rec *t = &b->t[b->count];
    memset(t, 0, sizeof *t);
    if (!pool_add(b, ev->text, ev->len, &t->name)) {
        return out_of_memory(b);
    }
    t->name_len = ev->len;
    t->order = b->count++;
    b->state = S_ENTRY_VALUE;
    return 0;
}

/* __metadata__: null, or an object of strings. */
static int on_metadata(builder *b, const anvil_json_event *ev) {
    char q[ANVIL_ST_QUOTED_MAX];
    switch (b->state) {
    case S_META_VALUE: {
        if (ev->kind == ANVIL_JSON_NULL) {
            b->state = S_TOP; /* null: no metadata, as upstream's Option */
            return 0;
        }
        if (ev->kind == ANVIL_JSON_OBJECT_BEGIN) {
            b->has_metadata = 1;
            b->state = S_META_OBJ;
            return 0;
        }
        return fail(b, ANVIL_E_ST_METADATA,
                    "__metadata__ is %s; it must be an object mapping strings to strings (or "
                    "null)" REEXPORT,
                    anvil__json_event_what(ev->kind));
    }
    case S_META_OBJ: {
        if (ev->kind == ANVIL_JSON_OBJECT_END) {
            b->state = S_TOP;
            return 0;
        }
        if (!pool_add(b, ev->text, ev->len, &b->meta_key)) { /* a KEY */
            return out_of_memory(b);
        }
        b->state = S_META_ITEM;
        return 0;
    }
    case S_META_ITEM: {
        if (ev->kind != ANVIL_JSON_STRING) {
            anvil__st_quote(q, b->pool + b->meta_key);
            return fail(b, ANVIL_E_ST_METADATA,
                        "__metadata__ entry %s is %s; metadata values must be strings" REEXPORT, q,
                        anvil__json_event_what(ev->kind));
        }
        if (!grow((void **)&b->meta, &b->meta_cap, b->meta_count + 1, sizeof *b->meta)) {
            return out_of_memory(b);
        }
        b->meta[b->meta_count].key = b->meta_key;
        if (!pool_add(b, ev->text, ev->len, &b->meta[b->meta_count].value)) {
            return out_of_memory(b);
        }
        b->meta_count++;
        b->state = S_META_OBJ;
        return 0;
    }
    default: return 0;
    }
}

/* A tensor entry: an object of dtype, shape and data_offsets, each once. */
static int on_entry(builder *b, const anvil_json_event *ev) {
    char q[ANVIL_ST_QUOTED_MAX];
    tensor_rec *t = &b->t[b->count - 1];
    switch (b->state) {
    case S_ENTRY_VALUE: {
        if (ev->kind != ANVIL_JSON_OBJECT_BEGIN) {
            return fail(b, ANVIL_E_ST_ENTRY,
                        "tensor %s: entry is %s, not an object with dtype, shape and "
                        "data_offsets" REEXPORT,
                        current(b, q), anvil__json_event_what(ev->kind));
        }
        b->state = S_ENTRY;
        return 0;
    }
    case S_ENTRY: {
        if (ev->kind == ANVIL_JSON_OBJECT_END) {
            const char *missing = !(t->fields & HAVE_DTYPE)     ? "dtype"
                                  : !(t->fields & HAVE_SHAPE)   ? "shape"
                                  : !(t->fields & HAVE_OFFSETS) ? "data_offsets"
                                                                : NULL;
            if (missing != NULL) {
                return fail(b, ANVIL_E_ST_ENTRY, "tensor %s: entry has no %s" REEXPORT, current(b, q), missing);
            }
            b->state = S_TOP;
            return 0;
        }
        /* A KEY: one of the three fields. */
        if (strcmp(ev->text, "dtype") == 0) {
            b->state = S_DTYPE;
        } else if (strcmp(ev->text, "shape") == 0) {
            b->state = S_SHAPE_VALUE;
        } else if (strcmp(ev->text, "data_offsets") == 0) {
            b->state = S_OFFSETS_VALUE;
        } else {
            char fq[ANVIL_ST_QUOTED_MAX];
            anvil__json_quote_for_message(fq, sizeof fq, ev->text, ev->len, 48);
            return fail(b, ANVIL_E_ST_ENTRY,
                        "tensor %s: unknown field %s (an entry has only dtype, shape and "
                        "data_offsets)" REEXPORT,
                        current(b, q), fq);
        }
        return 0;
    }
    default: return 0;
    }
}

/* The dtype and shape fields of an entry. */
static int on_dtype_shape(builder *b, const anvil_json_event *ev) {
    char q[ANVIL_ST_QUOTED_MAX];
    tensor_rec *t = &b->t[b->count - 1];
    switch (b->state) {
    case S_DTYPE: {
        if (ev->kind != ANVIL_JSON_STRING) {
            return fail(b, ANVIL_E_ST_ENTRY, "tensor %s: dtype is %s, not a string" REEXPORT, current(b, q),
                        anvil__json_event_what(ev->kind));
        }
        if (anvil_st_dtype_from_name(ev->text, &t->dtype) != ANVIL_OK) {
            char dq[ANVIL_ST_QUOTED_MAX];
            anvil__json_quote_for_message(dq, sizeof dq, ev->text, ev->len, 48);
            return fail(b, ANVIL_E_ST_DTYPE,
                        "tensor %s: unknown dtype %s (safetensors knows BOOL, F4, F6_E2M3, "
                        "F6_E3M2, U8, I8, F8_E5M2, F8_E4M3, F8_E8M0, F8_E4M3FNUZ, F8_E5M2FNUZ, "
                        "I16, U16, F16, BF16, I32, U32, F32, C64, F64, I64, U64); the file needs "
                        "a newer reader, or is corrupt",
                        current(b, q), dq);
        }
        t->fields |= HAVE_DTYPE;
        b->state = S_ENTRY;
        return 0;
    }
    case S_SHAPE_VALUE: {
        if (ev->kind != ANVIL_JSON_ARRAY_BEGIN) {
            return fail(b, ANVIL_E_ST_ENTRY, "tensor %s: shape is %s, not an array of integers" REEXPORT,
                        current(b, q), anvil__json_event_what(ev->kind));
        }
        t->dims = b->dims_len;
        t->rank = 0;
        b->state = S_SHAPE;
        return 0;
    }
    case S_SHAPE: {
        if (ev->kind == ANVIL_JSON_ARRAY_END) {
            t->fields |= HAVE_SHAPE;
            b->state = S_ENTRY;
            return 0;
        }
        uint64_t dim;
        if (!take_u64(b, ev, "shape", t->rank, &dim)) {
            return 0;
        }
        if (!grow((void **)&b->dims, &b->dims_cap, b->dims_len + 1, sizeof *b->dims)) {
            return out_of_memory(b);
        }
        b->dims[b->dims_len++] = dim;
        t->rank++;
        return 0;
    }
    default: return 0;
    }
}

/* The data_offsets field of an entry: [begin, end]. */
static int on_offsets(builder *b, const anvil_json_event *ev) {
    char q[ANVIL_ST_QUOTED_MAX];
    tensor_rec *t = &b->t[b->count - 1];
    switch (b->state) {
    case S_OFFSETS_VALUE: {
        if (ev->kind != ANVIL_JSON_ARRAY_BEGIN) {
            return fail(b, ANVIL_E_ST_ENTRY, "tensor %s: data_offsets is %s, not [begin, end]" REEXPORT,
                        current(b, q), anvil__json_event_what(ev->kind));
        }
        b->n_offsets = 0;
        b->state = S_OFFSETS;
        return 0;
    }
    case S_OFFSETS: {
        if (ev->kind == ANVIL_JSON_ARRAY_END || b->n_offsets == 2) {
            if (ev->kind != ANVIL_JSON_ARRAY_END || b->n_offsets != 2) {
                return fail(b, ANVIL_E_ST_ENTRY,
                            "tensor %s: data_offsets is an array of the wrong length (%s), not "
                            "[begin, end]" REEXPORT,
                            current(b, q),
                            b->n_offsets == 2   ? "more than 2 items"
                            : b->n_offsets == 1 ? "1 item"
                                                : "empty");
            }
            t->fields |= HAVE_OFFSETS;
            b->state = S_ENTRY;
            return 0;
        }
        if (take_u64(b, ev, "data_offsets", b->n_offsets, b->n_offsets == 0 ? &t->begin : &t->end)) {
            b->n_offsets++;
        }
        return 0;
    }
    default: return 0;
    }
}

/* The json parser's events, by the state of the header being read. */
static int on_event(void *user, const anvil_json_event *ev) {
    builder *b = user;
    if (b->failed) {
        return 0;
    }
    switch (b->state) {
    case S_TOP: return on_top(b, ev);
    case S_META_VALUE:
    case S_META_OBJ:
    case S_META_ITEM: return on_metadata(b, ev);
    case S_ENTRY_VALUE:
    case S_ENTRY: return on_entry(b, ev);
    case S_DTYPE:
    case S_SHAPE_VALUE:
    case S_SHAPE: return on_dtype_shape(b, ev);
    case S_OFFSETS_VALUE:
    case S_OFFSETS: return on_offsets(b, ev);
    }
    return 0;
}

static int rec_cmp_offsets(const void *a, const void *c) {
    const tensor_rec *x = a, *y = c;
    if (x->begin != y->begin) {
        return x->begin < y->begin ? -1 : 1;
    }
    if (x->end != y->end) {
        return x->end < y->end ? -1 : 1;
    }
    return x->order < y->order ? -1 : (x->order > y->order);
}

static int tensor_cmp_name(const void *a, const void *b) {
    const anvil_st_tensor *x = *(const anvil_st_tensor *const *)a;
    const anvil_st_tensor *y = *(const anvil_st_tensor *const *)b;
    return strcmp(x->name, y->name);
}

/* Upstream's Metadata::validate, on entries sorted by offsets. */
static int check_offsets(const builder *b, const char *where, anvil_error *err) {
    uint64_t start = 0;
    for (size_t i = 0; i < b->count; i++) {
        const tensor_rec *e = &b->t[i];
        const char *name = b->pool + e->name;
        char q[ANVIL_ST_QUOTED_MAX];
        if (e->begin != start || e->end < e->begin) {
            anvil__st_quote(q, name);
            if (e->end < e->begin) {
                return anvil__error_set(err, ANVIL_E_ST_OFFSETS,
                                        "%s: tensor %s: data_offsets [%llu, %llu] end before they "
                                        "begin" REEXPORT,
                                        where, q, (unsigned long long)e->begin, (unsigned long long)e->end);
            }
            if (i == 0) {
                return anvil__error_set(err, ANVIL_E_ST_OFFSETS,
                                        "%s: tensor %s: the first tensor in the data buffer starts "
                                        "at byte %llu, not 0: offsets must run contiguously from 0" REEXPORT,
                                        where, q, (unsigned long long)e->begin);
            }
            char pq[ANVIL_ST_QUOTED_MAX];
            anvil__st_quote(pq, b->pool + b->t[i - 1].name);
            if (e->begin > start) {
                return anvil__error_set(err, ANVIL_E_ST_OFFSETS,
                                        "%s: tensor %s: starts at data byte %llu but the previous "
                                        "tensor %s ends at %llu, a gap of %llu bytes: offsets must "
                                        "be contiguous" REEXPORT,
                                        where, q, (unsigned long long)e->begin, pq, (unsigned long long)start,
                                        (unsigned long long)(e->begin - start));
            }
            return anvil__error_set(err, ANVIL_E_ST_OFFSETS,
                                    "%s: tensor %s: starts at data byte %llu, inside the previous "
                                    "tensor %s which ends at %llu: they overlap by %llu bytes" REEXPORT,
                                    where, q, (unsigned long long)e->begin, pq, (unsigned long long)start,
                                    (unsigned long long)(start - e->begin));
        }
        start = e->end;

        /* Size of the declared shape, with upstream's checked arithmetic. */
        uint64_t n_elements = 0, bytes = 0;
        anvil_error sub;
        const uint64_t *shape = e->rank > 0 ? b->dims + e->dims : NULL; /* dims may be NULL */
        const int rc = anvil__st_tensor_bytes(e->dtype, shape, e->rank, name, &n_elements, &bytes, &sub);
        if (rc != ANVIL_OK) {
            return anvil__error_set(err, rc, "%s: %s", where, sub.message);
        }
        if (e->end - e->begin != bytes) {
            anvil__st_quote(q, name);
            return anvil__error_set(err, ANVIL_E_ST_SIZE_MISMATCH,
                                    "%s: tensor %s: dtype %s with %llu elements needs %llu bytes "
                                    "but data_offsets [%llu, %llu] cover %llu" REEXPORT,
                                    where, q, anvil_st_dtype_name(e->dtype), (unsigned long long)n_elements,
                                    (unsigned long long)bytes, (unsigned long long)e->begin,
                                    (unsigned long long)e->end, (unsigned long long)(e->end - e->begin));
        }
    }
    return ANVIL_OK;
}

void anvil__st_free_tables(anvil_st *st) {
    free(st->tensors);
    free(st->dims);
    free(st->by_name);
    free(st->meta_keys);
    free(st->meta_values);
    free(st->strings);
    st->tensors = NULL;
    st->dims = NULL;
    st->by_name = NULL;
    st->meta_keys = NULL;
    st->meta_values = NULL;
    st->strings = NULL;
    st->count = 0;
    st->meta_count = 0;
    st->has_metadata = 0;
}

static void builder_free(builder *b) {
    free(b->pool);
    free(b->dims);
    free(b->t);
    free(b->meta);
}

/* Hand the checked tables over to st (the pool and dims move, not copy). */
static int fill_tables(anvil_st *st, builder *b, const char *where, anvil_error *err) {
    const size_t count = b->count;
    st->tensors = calloc(count ? count : 1, sizeof *st->tensors);
    st->by_name = calloc(count ? count : 1, sizeof *st->by_name);
    st->meta_keys = calloc(b->meta_count ? b->meta_count : 1, sizeof *st->meta_keys);
    st->meta_values = calloc(b->meta_count ? b->meta_count : 1, sizeof *st->meta_values);
    if (b->pool == NULL) {
        b->pool = malloc(1);
    }
    if (b->dims == NULL) {
        b->dims = malloc(sizeof *b->dims);
    }
    if (st->tensors == NULL || st->by_name == NULL || st->meta_keys == NULL || st->meta_values == NULL ||
        b->pool == NULL || b->dims == NULL) {
        anvil__st_free_tables(st);
        return anvil__error_set(err, ANVIL_E_NOMEM, "%s: out of memory for %zu tensors", where, count);
    }
    st->strings = b->pool;
    st->dims = b->dims;
    b->pool = NULL;
    b->dims = NULL;
    for (size_t i = 0; i < count; i++) {
        const tensor_rec *e = &b->t[i];
        anvil_st_tensor *t = &st->tensors[i];
        t->name = st->strings + e->name;
        t->dtype = e->dtype;
        t->rank = e->rank;
        t->shape = st->dims + e->dims;
        t->n_elements = 1;
        for (size_t d = 0; d < e->rank; d++) {
            t->n_elements *= t->shape[d]; /* cannot overflow: checked */
        }
        t->begin = e->begin;
        t->end = e->end;
        t->size = e->end - e->begin;
        t->data = NULL;
        st->by_name[i] = t;
    }
    st->count = count;
    qsort(st->by_name, count, sizeof *st->by_name, tensor_cmp_name);
    for (size_t i = 0; i < b->meta_count; i++) {
        st->meta_keys[i] = st->strings + b->meta[i].key;
        st->meta_values[i] = st->strings + b->meta[i].value;
    }
    st->meta_count = b->meta_count;
    st->has_metadata = b->has_metadata;
    return ANVIL_OK;
}

int anvil__st_build_header(anvil_st *st, const unsigned char *header, size_t n, const char *where,
                           uint64_t *data_needed, anvil_error *err) {
    const size_t valid = anvil__utf8_valid_prefix(header, n);
    if (valid != n) {
        return anvil__error_set(err, ANVIL_E_ST_UTF8,
                                "%s: header byte %zu (0x%02x) is not valid UTF-8; a safetensors "
                                "header is UTF-8 JSON" REEXPORT,
                                where, valid, header[valid]);
    }
    if (n == 0 || header[0] != '{') {
        return anvil__error_set(err, ANVIL_E_ST_JSON,
                                "%s: the header %s; it must be a JSON object starting with '{'" REEXPORT, where,
                                n == 0 ? "is empty" : "does not start with '{'");
    }
    builder b;
    memset(&b, 0, sizeof b);
    b.where = where;
    b.err = err;
    anvil_json_error je;
    const anvil_json_status js = anvil__json_parse((const char *)header, n, on_event, &b, &je);
    int rc = ANVIL_OK;
    if (js == ANVIL_JSON_E_SYNTAX || js == ANVIL_JSON_E_DUP_KEY || (js == ANVIL_JSON_E_NOMEM && b.failed == 0)) {
        rc = js == ANVIL_JSON_E_DUP_KEY ? ANVIL_E_ST_DUP_KEY
             : js == ANVIL_JSON_E_NOMEM ? ANVIL_E_NOMEM
                                        : ANVIL_E_ST_JSON;
        anvil__error_set(err, rc, "%s: header JSON: %s%s", where, je.message,
                         js == ANVIL_JSON_E_NOMEM ? "" : REEXPORT);
    } else if (b.failed != 0) {
        rc = b.failed; /* the message is in err already */
    } else {
        if (b.count > 1) {
            qsort(b.t, b.count, sizeof *b.t, rec_cmp_offsets);
        }
        rc = check_offsets(&b, where, err);
        if (rc == ANVIL_OK) {
            rc = fill_tables(st, &b, where, err);
        }
    }
    if (rc == ANVIL_OK) {
        st->header_size = n;
        *data_needed = st->count > 0 ? st->tensors[st->count - 1].end : 0;
    }
    builder_free(&b);
    return rc;
}

int anvil__st_bind_data(anvil_st *st, const unsigned char *data, uint64_t data_size, const char *where,
                        anvil_error *err) {
    const uint64_t need = st->count > 0 ? st->tensors[st->count - 1].end : 0;
    char q[ANVIL_ST_QUOTED_MAX];
    if (data_size > need) {
        if (st->count > 0) {
            anvil__st_quote(q, st->tensors[st->count - 1].name);
        }
        return anvil__error_set(err, ANVIL_E_ST_TRAILING,
                                "%s: %llu bytes follow the last tensor%s%s (its data ends at byte "
                                "%llu of %llu); a safetensors file ends exactly after its last "
                                "tensor: it was appended to, or is corrupt",
                                where, (unsigned long long)(data_size - need), st->count > 0 ? " " : "",
                                st->count > 0 ? q : "", (unsigned long long)need, (unsigned long long)data_size);
    }
    if (data_size < need) {
        size_t i = 0;
        while (st->tensors[i].end <= data_size) {
            i++;
        }
        anvil__st_quote(q, st->tensors[i].name);
        return anvil__error_set(err, ANVIL_E_TRUNCATED,
                                "%s: tensor %s needs data bytes [%llu, %llu) but the data buffer "
                                "holds only %llu: %llu bytes are missing; the file is truncated, "
                                "re-download or re-export it",
                                where, q, (unsigned long long)st->tensors[i].begin,
                                (unsigned long long)st->tensors[i].end, (unsigned long long)data_size,
                                (unsigned long long)(need - data_size));
    }
    for (size_t i = 0; i < st->count; i++) {
        st->tensors[i].data = data + st->tensors[i].begin;
    }
    st->data_size = data_size;
    return ANVIL_OK;
}

int anvil__st_validate_image(anvil_st *st, const char *where, anvil_error *err) {
    const size_t size = st->image_size;
    if (size < 8) {
        return anvil__error_set(err, ANVIL_E_ST_TOO_SMALL,
                                "%s: %zu bytes is too small for safetensors (the header length "
                                "alone takes 8); the file is truncated or not safetensors",
                                where, size);
    }
    const uint64_t n = anvil__st_load_u64le(st->image);
    if (n > ANVIL_ST_MAX_HEADER) {
        return anvil__error_set(err, ANVIL_E_ST_HEADER_TOO_LARGE,
                                "%s: header length %llu exceeds the 100,000,000-byte limit; the "
                                "file is corrupt or not safetensors",
                                where, (unsigned long long)n);
    }
    if (n > size - 8) {
        return anvil__error_set(err, ANVIL_E_ST_HEADER_PAST_END,
                                "%s: header length %llu runs past the end: only %zu bytes follow "
                                "the 8-byte length; the file is truncated or not safetensors",
                                where, (unsigned long long)n, size - 8);
    }
    uint64_t need = 0;
    int rc = anvil__st_build_header(st, st->image + 8, (size_t)n, where, &need, err);
    if (rc == ANVIL_OK) {
        rc = anvil__st_bind_data(st, st->image + 8 + n, size - 8 - n, where, err);
        if (rc != ANVIL_OK) {
            anvil__st_free_tables(st);
        }
    }
    return rc;
}
