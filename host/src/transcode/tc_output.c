/* SPDX-License-Identifier: MIT */
/*
 * The export engine's output thread (tc_output.h).
 *
 * One job slot: put() waits for the slot to be free, fills it, and returns;
 * the thread writes it and frees the slot. With one job in flight the
 * engine needs two output buffers (encode into one while the other is
 * written), and the file order is the order of the puts. After a failed
 * write the writer has cleaned up its stream; every later put and wait
 * answers that failure, so the caller aborts as it would have inline.
 */
#include "tc_output.h"

#include <pthread.h>
#include <stdlib.h>

#include "error.h"
#include "gguf_writer_internal.h"


struct tc_output {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int busy, quit;
    anvil_gguf_writer *w;
    const void *data;
    uint64_t size;
    const anvil_gguf *src;
    int part; /* a part of the tensor (tc_output_put_part) */
    int rc;   /* first failure, ANVIL_OK until one */
    anvil_error err;
};

static void *output_main(void *arg) {
    tc_output *o = arg;
    pthread_mutex_lock(&o->lock);
    for (;;) {
        while (!o->busy && !o->quit) pthread_cond_wait(&o->changed, &o->lock);
        if (!o->busy) break; /* quit, nothing left */
        anvil_gguf_writer *w = o->w;
        const void *data = o->data;
        const uint64_t size = o->size;
        const anvil_gguf *src = o->src;
        const int part = o->part;
        pthread_mutex_unlock(&o->lock);
        anvil_error e;
        anvil__error_clear(&e);
        const int rc = part ? gguf_writer_stream_part(w, data, size, &e)
                            : anvil_gguf_writer_stream_tensor(w, data, size, &e);
        if (src != NULL && size > 0) anvil_gguf_release(src, data, (size_t)size, NULL); /* advice only */
        pthread_mutex_lock(&o->lock);
        if (rc != ANVIL_OK && o->rc == ANVIL_OK) {
            o->rc = rc;
            o->err = e;
        }
        o->busy = 0;
        pthread_cond_broadcast(&o->changed);
    }
    pthread_mutex_unlock(&o->lock);
    return NULL;
}

tc_output *tc_output_start(void) {
    tc_output *o = calloc(1, sizeof *o);
    if (o == NULL) return NULL;
    pthread_mutex_init(&o->lock, NULL);
    pthread_cond_init(&o->changed, NULL);
    if (pthread_create(&o->thread, NULL, output_main, o) != 0) {
        pthread_cond_destroy(&o->changed);
        pthread_mutex_destroy(&o->lock);
        free(o);
        return NULL;
    }
    return o;
}

/* With the lock held: wait for the slot, then the first failure. */
static int idle_status(tc_output *o, anvil_error *err) {
    while (o->busy) pthread_cond_wait(&o->changed, &o->lock);
    if (o->rc != ANVIL_OK && err != NULL) *err = o->err;
    return o->rc;
}

static int put(tc_output *o, anvil_gguf_writer *w, const void *data, uint64_t size, const anvil_gguf *src, int part,
               anvil_error *err) {
    pthread_mutex_lock(&o->lock);
    const int rc = idle_status(o, err);
    if (rc == ANVIL_OK) {
        o->w = w;
        o->data = data;
        o->size = size;
        o->src = src;
        o->part = part;
        o->busy = 1;
        pthread_cond_broadcast(&o->changed);
    }
    pthread_mutex_unlock(&o->lock);
    return rc;
}

int tc_output_put(tc_output *o, anvil_gguf_writer *w, const void *data, uint64_t size, const anvil_gguf *src,
                  anvil_error *err) {
    return put(o, w, data, size, src, 0, err);
}

int tc_output_put_part(tc_output *o, anvil_gguf_writer *w, const void *data, uint64_t size, anvil_error *err) {
    return put(o, w, data, size, NULL, 1, err);
}

int tc_output_wait(tc_output *o, anvil_error *err) {
    pthread_mutex_lock(&o->lock);
    const int rc = idle_status(o, err);
    pthread_mutex_unlock(&o->lock);
    return rc;
}

void tc_output_stop(tc_output *o) {
    if (o == NULL) return;
    pthread_mutex_lock(&o->lock);
    o->quit = 1;
    pthread_cond_broadcast(&o->changed);
    pthread_mutex_unlock(&o->lock);
    pthread_join(o->thread, NULL);
    pthread_cond_destroy(&o->changed);
    pthread_mutex_destroy(&o->lock);
    free(o);
}
