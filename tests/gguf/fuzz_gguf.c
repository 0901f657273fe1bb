/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the GGUF reader (and, for what it accepts, the
 * writer). Properties checked beyond "no crash, no leak, no UB":
 *   - every view handed out lies inside the input;
 *   - whatever parses and can be re-written re-parses, and re-writing that
 *     again gives the same bytes (the writer's output is a fixed point);
 *   - the lenient reader opens whatever the strict one opens, with no
 *     problems and the same counts; on anything else it either refuses with
 *     a message or lists what it read, every good tensor's view inside the
 *     input, every bad one without data and with its reason.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/gguf.h"

#include "../common/fuzz_target.h"

static void check_inside(const uint8_t *base, size_t size, const void *p, size_t n) {
    const uintptr_t lo = (uintptr_t)base, at = (uintptr_t)p;
    if (n > 0 && (at < lo || at - lo > size || n > size - (at - lo))) {
        abort();
    }
}

static void touch_views(const anvil_gguf *g, const uint8_t *data, size_t size) {
    for (size_t i = 0; i < anvil_gguf_kv_count(g); ++i) {
        const anvil_gguf_kv *kv = anvil_gguf_kv_at(g, i);
        check_inside(data, size, kv->raw, kv->raw_size);
        anvil_gguf_value v;
        if (anvil_gguf_kv_value(kv, &v) != ANVIL_OK) {
            abort();
        }
        if (v.kind == ANVIL_GGUF_KIND_STRING) {
            check_inside(data, size, v.s.ptr, v.s.len);
        }
        if (v.kind == ANVIL_GGUF_KIND_ARRAY) {
            const uint64_t n = v.a.count < 64 ? v.a.count : 64;
            for (uint64_t k = 0; k < n; ++k) {
                anvil_gguf_value e;
                if (anvil_gguf_array_get(&v.a, k, &e) != ANVIL_OK) {
                    abort();
                }
                if (e.kind == ANVIL_GGUF_KIND_STRING) {
                    check_inside(data, size, e.s.ptr, e.s.len);
                }
            }
            if (v.a.elem_type == ANVIL_GGUF_TYPE_STRING) {
                anvil_gguf_str s[16];
                const uint64_t got = anvil_gguf_array_strings(&v.a, s, 16);
                if (got != (v.a.count < 16 ? v.a.count : 16)) {
                    abort();
                }
                for (uint64_t k = 0; k < got; ++k) {
                    check_inside(data, size, s[k].ptr, s[k].len);
                }
            }
        }
        if (anvil_gguf_find_kv(g, kv->key) == NULL && strlen(kv->key) == kv->key_len) {
            abort();
        }
    }
    for (size_t i = 0; i < anvil_gguf_tensor_count(g); ++i) {
        const anvil_gguf_tensor *t = anvil_gguf_tensor_at(g, i);
        check_inside(data, size, t->data, (size_t)t->n_bytes);
        if (t->n_bytes > 0) {
            volatile uint8_t first = ((const uint8_t *)t->data)[0];
            volatile uint8_t last = ((const uint8_t *)t->data)[t->n_bytes - 1];
            (void)first;
            (void)last;
        }
    }
}

static int rewrite(const anvil_gguf *g, void **out, size_t *size) {
    anvil_gguf_writer *w = NULL;
    int rc = anvil_gguf_writer_new(&w, NULL, NULL);
    if (rc == ANVIL_OK) {
        rc = anvil_gguf_writer_copy_from(w, g, ANVIL_GGUF_COPY_KVS | ANVIL_GGUF_COPY_TENSORS, NULL);
    }
    if (rc == ANVIL_OK) {
        rc = anvil_gguf_writer_write_memory(w, out, size, NULL);
    }
    anvil_gguf_writer_free(w);
    return rc;
}

/* The lenient reader on the same bytes; strict_ok: the strict one opened them. */
static void check_lenient(const uint8_t *data, size_t size, const anvil_gguf *strict) {
    anvil_gguf *g = NULL;
    anvil_error err;
    if (anvil_gguf_open_buffer_lenient(&g, data, size, NULL, &err) != ANVIL_OK) {
        if (strict != NULL || err.code >= 0 || err.message[0] == '\0') {
            abort();
        }
        return;
    }
    if (strict != NULL &&
        (anvil_gguf_problem_count(g) != 0 || anvil_gguf_kv_count(g) != anvil_gguf_kv_count(strict) ||
         anvil_gguf_tensor_count(g) != anvil_gguf_tensor_count(strict))) {
        abort();
    }
    for (size_t i = 0; i < anvil_gguf_problem_count(g); ++i) {
        anvil_gguf_problem p;
        if (anvil_gguf_problem_at(g, i, &p) != ANVIL_OK || p.code >= 0 || p.message == NULL || p.message[0] == '\0') {
            abort();
        }
    }
    for (size_t i = 0; i < anvil_gguf_kv_count(g); ++i) {
        const anvil_gguf_kv *kv = anvil_gguf_kv_at(g, i);
        anvil_gguf_value v;
        check_inside(data, size, kv->raw, kv->raw_size);
        if (anvil_gguf_kv_value(kv, &v) != ANVIL_OK) {
            abort();
        }
    }
    for (size_t i = 0; i < anvil_gguf_tensor_count(g); ++i) {
        const anvil_gguf_tensor *t = anvil_gguf_tensor_at(g, i);
        if (anvil_gguf_tensor_problem(g, i) != NULL) {
            if (t->data != NULL) {
                abort();
            }
            continue;
        }
        check_inside(data, size, t->data, (size_t)t->n_bytes);
    }
    anvil_gguf_close(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    anvil_gguf *g = NULL;
    anvil_error err;
    if (anvil_gguf_open_buffer(&g, data, size, NULL, &err) != ANVIL_OK) {
        if (err.code >= 0 || err.message[0] == '\0') {
            abort(); /* every refusal carries a code and a message */
        }
        check_lenient(data, size, NULL);
        return 0;
    }
    check_lenient(data, size, g);
    touch_views(g, data, size);
    void *out1 = NULL, *out2 = NULL;
    size_t n1 = 0, n2 = 0;
    /* The writer refuses some readable files (e.g. tensor names ggml cannot
     * hold): that is a clean refusal, not a failure. */
    if (rewrite(g, &out1, &n1) == ANVIL_OK) {
        anvil_gguf *g2 = NULL;
        if (anvil_gguf_open_buffer(&g2, out1, n1, NULL, NULL) != ANVIL_OK) {
            abort(); /* the writer produced something the reader refuses */
        }
        if (rewrite(g2, &out2, &n2) != ANVIL_OK || n1 != n2 || memcmp(out1, out2, n1) != 0) {
            abort(); /* not a fixed point */
        }
        anvil_gguf_close(g2);
    }
    free(out1);
    free(out2);
    anvil_gguf_close(g);
    return 0;
}
