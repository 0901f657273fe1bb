/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the safetensors reader (and, on what it accepts, the
 * writer): any input must either be refused with a status and a message and
 * no object, or yield a view whose every tensor lies inside the input, and
 * whose rewrite parses back to the same content and is a fixed point of the
 * writer. The same bytes are also read as a stream of frames.
 *
 * Build: -DANVIL_FUZZ=ON with clang; run: build/bin/fuzz_safetensors CORPUS
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/safetensors.h"

#include "../common/fuzz_target.h"

#define CHECK(c)                                                                            \
    do {                                                                                    \
        if (!(c)) {                                                                         \
            fprintf(stderr, "fuzz invariant failed: %s (%s:%d)\n", #c, __FILE__, __LINE__); \
            abort();                                                                        \
        }                                                                                   \
    } while (0)

static void check_view(const anvil_st *st, const uint8_t *lo, const uint8_t *hi) {
    uint64_t at = 0;
    for (size_t i = 0; i < anvil_st_count(st); i++) {
        const anvil_st_tensor *t = anvil_st_tensor_at(st, i);
        CHECK(t != NULL && t->name != NULL);
        CHECK(t->begin == at && t->end >= t->begin && t->size == t->end - t->begin);
        at = t->end;
        if (lo != NULL) {
            CHECK((const uint8_t *)t->data >= lo && (const uint8_t *)t->data + t->size <= hi);
        }
        CHECK(anvil_st_find(st, t->name) == t);
        if ((t->dtype == ANVIL_ST_F32 || t->dtype == ANVIL_ST_F16 || t->dtype == ANVIL_ST_BF16) &&
            t->n_elements <= 4096) {
            float buf[4096];
            CHECK(anvil_st_tensor_to_f32(t, buf, (size_t)t->n_elements, NULL) == ANVIL_OK);
        }
    }
    CHECK(at == anvil_st_data_size(st));
}

static void check_same(const anvil_st *a, const anvil_st *b) {
    CHECK(anvil_st_count(a) == anvil_st_count(b));
    for (size_t i = 0; i < anvil_st_count(a); i++) {
        const anvil_st_tensor *x = anvil_st_tensor_at(a, i);
        const anvil_st_tensor *y = anvil_st_find(b, x->name);
        CHECK(y != NULL && x->dtype == y->dtype && x->rank == y->rank && x->size == y->size);
        CHECK(x->rank == 0 || memcmp(x->shape, y->shape, x->rank * sizeof *x->shape) == 0);
        CHECK(x->size == 0 || memcmp(x->data, y->data, (size_t)x->size) == 0);
    }
    CHECK(anvil_st_has_metadata(a) == anvil_st_has_metadata(b));
    CHECK(anvil_st_metadata_count(a) == anvil_st_metadata_count(b));
    for (size_t i = 0; i < anvil_st_metadata_count(a); i++) {
        const char *ka, *va, *kb, *vb;
        anvil_st_metadata_at(a, i, &ka, &va);
        anvil_st_metadata_at(b, i, &kb, &vb);
        CHECK(strcmp(ka, kb) == 0 && strcmp(va, vb) == 0);
    }
}

static void rewrite(const anvil_st *st) {
    anvil_st_writer *w = NULL;
    CHECK(anvil_st_writer_new(&w, NULL) == ANVIL_OK);
    CHECK(anvil_st_writer_add_all(w, st, NULL) == ANVIL_OK);
    void *img = NULL;
    size_t size = 0;
    CHECK(anvil_st_writer_serialize(w, &img, &size, NULL) == ANVIL_OK);
    anvil_st_writer_free(w);
    anvil_st *again = NULL;
    anvil_error err;
    if (anvil_st_parse(&again, img, size, &err) != ANVIL_OK) {
        fprintf(stderr, "rewrite does not parse: %s\n", err.message);
        abort();
    }
    check_same(st, again);
    /* Writing what we wrote changes nothing. */
    CHECK(anvil_st_writer_new(&w, NULL) == ANVIL_OK);
    CHECK(anvil_st_writer_add_all(w, again, NULL) == ANVIL_OK);
    void *img2 = NULL;
    size_t size2 = 0;
    CHECK(anvil_st_writer_serialize(w, &img2, &size2, NULL) == ANVIL_OK);
    CHECK(size2 == size && memcmp(img, img2, size) == 0);
    anvil_st_writer_free(w);
    anvil_st_close(again);
    free(img2);
    free(img);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    anvil_st *st = (anvil_st *)(uintptr_t)1;
    anvil_error err;
    const int rc = anvil_st_parse(&st, data, size, &err);
    if (rc != ANVIL_OK) {
        CHECK(st == NULL && rc < 0 && err.code == rc && err.message[0] != '\0');
    } else {
        check_view(st, data, data + size);
        rewrite(st);
        anvil_st_close(st);
    }

    /* The same bytes as a stream: frames until the end or an error. */
    if (size > 0) {
        FILE *f = fmemopen((void *)(uintptr_t)data, size, "rb");
        if (f != NULL) {
            for (int frames = 0; frames < 16; frames++) {
                anvil_st *fr = NULL;
                if (anvil_st_read_frame_file(&fr, f, &err) != ANVIL_OK || fr == NULL) {
                    CHECK(fr == NULL);
                    break;
                }
                check_view(fr, NULL, NULL);
                anvil_st_close(fr);
            }
            fclose(f);
        }
    }
    return 0;
}
