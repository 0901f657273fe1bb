/* SPDX-License-Identifier: MIT */
/*
 * Transcode run: stream the planned output out of core.
 *
 * Per tensor, in file order: a kept tensor is written straight from the
 * source mapping (prefetched before, released after). A converted tensor is
 * cut into chunks of whole rows (about 64K elements; the cut depends only on
 * the tensor's shape) and the chunks into slabs of about 16 MiB of source.
 * For each slab the next one is prefetched (for the last slab, the next
 * tensor's first), the pool's threads pull chunks and do each in one pass
 * while it is in cache (to f32 with the NaN/Inf check fused in, the hook,
 * encode into the tensor's output buffer, decode back and the error sums),
 * and the slab's source pages are released. Who encodes and decodes is
 * looked up once per tensor. The output buffer goes to the output thread
 * (tc_output.h), which writes it while the next tensor is encoded into the
 * other of two buffers: peak memory is two output tensors plus a slab.
 *
 * Nothing a thread does depends on which thread does it: bytes land at fixed
 * offsets, and per-chunk error sums are reduced in chunk order, so output
 * and quality figures are the same for any thread count. On an error the
 * failing chunk with the lowest index is the one reported, for the same
 * reason.
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "anvil/numeric.h"
#include "ctx.h"
#include "error.h"
#include "file_set.h"
#include "float_rows.h"
#include "gguf_source.h"
#include "tc_output.h"
#include "thread_pool.h"
#include "transcode_internal.h"

#define TC_CHUNK_ELEMS ((uint64_t)1 << 16)
#define TC_SLAB_BYTES ((uint64_t)16 << 20)

typedef struct chunk_stat {
    double sse, signal, max_abs;
} chunk_stat;

typedef struct tensor_job {
    anvil_ctx *ctx;
    const anvil_transcode_hook *hook;
    const anvil_transcode_tensor *it;
    const uint8_t *src;
    uint8_t *dst;
    /* By rows (a source filled a range of rows at a time): src and dst
     * hold the current slab, whose first bytes are these of the tensor;
     * 0 and 0 otherwise. */
    uint64_t src_base, dst_base;
    int by_rows;
    uint64_t src_row_bytes, dst_row_bytes;
    uint64_t rows_per_chunk;
    size_t n_chunks;
    size_t slab_end; /* chunks below this index belong to the current slab */
    atomic_size_t next;
    chunk_stat *stats;
    float **x, **y; /* per pool slot: decoded rows, decoded-back rows */
    int zero_copy;  /* f32 source encoded straight from the mapping */
    /* Resolved once per tensor (resolve_coders): NULL means "through
     * anvil_encode_rows / anvil_decode", which look the type up per call. */
    anvil_encode_rows_fn enc_rows;
    anvil_encode_fn enc_one;    /* the codec's one-row encoder, row by row */
    int enc_drops_imatrix;      /* ggml ignores the matrix for this type */
    anvil_decode_fn dst_decode; /* the quality report's decode-back */
    int quality;
    atomic_size_t fail_at; /* lowest failing chunk so far, SIZE_MAX if none */
    pthread_mutex_t lock;
    anvil_error fail;
    int fail_rc;
} tensor_job;

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t peak_rss_bytes(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return (uint64_t)ru.ru_maxrss * 1024u; /* Linux reports KiB */
}

static void record_failure(tensor_job *j, size_t chunk, int rc, const anvil_error *e) {
    pthread_mutex_lock(&j->lock);
    if (chunk < atomic_load(&j->fail_at)) {
        atomic_store(&j->fail_at, chunk);
        j->fail = *e;
        j->fail_rc = rc;
    }
    pthread_mutex_unlock(&j->lock);
}

static int nonfinite_error(const tensor_job *j, uint64_t row0, const float *x, size_t n, size_t at, anvil_error *e) {
    (void)n;
    const anvil_transcode_tensor *it = j->it;
    const uint64_t row = row0 + at / it->row_len, col = at % it->row_len;
    const float v = x[at];
    return anvil__error_set(e, ANVIL_E_NONFINITE,
                            "tensor '%s' holds %s at row %" PRIu64 ", column %" PRIu64 "%s; fix the "
                            "source model, or keep this tensor as it is with "
                            "--tensor-type '^%s$=%s'",
                            it->name, isnan(v) ? "NaN" : (v > 0 ? "+inf" : "-inf"), row, col,
                            it->rewritten ? " (after the rewrite)" : "", it->name, it->src->type_info.name);
}

/* Rows row0..row0+nr of the tensor, encoded into d. A 3-D tensor is a
 * stack of matrices (experts) of ne[1] rows each; each expert has its own
 * slice of the importance matrix, so the rows are handed to the encoder one
 * expert at a time, as llama.cpp does. */
static int encode_rows(const tensor_job *j, uint64_t row0, uint64_t nr, const float *x, uint8_t *d, anvil_error *e) {
    const anvil_transcode_tensor *it = j->it;
    const uint64_t per = it->src->ne[1] > 0 ? it->src->ne[1] : 1;
    uint64_t r = 0;
    while (r < nr) {
        const uint64_t g = row0 + r, expert = g / per;
        uint64_t take = per - g % per;
        if (take > nr - r) take = nr - r;
        const float *im = it->imatrix != NULL ? it->imatrix + expert * it->row_len : NULL;
        const float *xr = x + r * it->row_len;
        uint8_t *dr = d + r * j->dst_row_bytes;
        int rc;
        if (j->enc_rows != NULL || j->enc_one != NULL) {
            char msg[512];
            msg[0] = '\0';
            if (j->enc_rows != NULL) {
                rc = j->enc_rows(xr, dr, (size_t)take, (size_t)it->row_len, j->enc_drops_imatrix ? NULL : im, msg,
                                 sizeof msg);
            } else {
                rc = ANVIL_OK;
                for (uint64_t k = 0; k < take && rc == ANVIL_OK; ++k) {
                    rc = j->enc_one(xr + k * it->row_len, dr + k * j->dst_row_bytes, (size_t)it->row_len, msg,
                                    sizeof msg);
                }
            }
            if (rc != ANVIL_OK) {
                msg[sizeof msg - 1] = '\0';
                return anvil__error_set(e, rc < 0 ? rc : ANVIL_E_INTERNAL, "%s",
                                        msg[0] ? msg : "encoder failed without a message");
            }
        } else {
            rc = anvil_encode_rows(j->ctx, it->dst_type, xr, (size_t)take, (size_t)it->row_len, im, dr,
                                   (size_t)(take * j->dst_row_bytes), e);
            if (rc != ANVIL_OK) return rc;
        }
        r += take;
    }
    return ANVIL_OK;
}

/* One chunk, in one pass while it is in cache: source to f32 (with the
 * NaN/Inf check fused in), the rewrite hook, encode, and for the quality
 * report decode back and the error sums. */
static int do_chunk(tensor_job *j, size_t c, float *x, float *y, anvil_error *e) {
    const anvil_transcode_tensor *it = j->it;
    const uint64_t row0 = (uint64_t)c * j->rows_per_chunk;
    const uint64_t nr = it->n_rows - row0 < j->rows_per_chunk ? it->n_rows - row0 : j->rows_per_chunk;
    const size_t n = (size_t)(nr * it->row_len);
    const uint8_t *s = j->src + (row0 * j->src_row_bytes - j->src_base);
    uint8_t *d = j->dst + (row0 * j->dst_row_bytes - j->dst_base);
    const size_t s_bytes = (size_t)(nr * j->src_row_bytes), d_bytes = (size_t)(nr * j->dst_row_bytes);

    int rc = ANVIL_OK;
    size_t bad = n;
    if (j->zero_copy) {
        x = (float *)(uintptr_t)s; /* read only: encoders take const float * */
        bad = anvil__float_find_nonfinite(x, n);
    } else if (tc_is_float_type(it->src_type)) {
        bad = anvil__float_load(it->src_type, s, x, n);
    } else {
        rc = anvil_decode(j->ctx, it->src_type, s, s_bytes, x, n, e);
        if (rc == ANVIL_OK && !it->rewritten) bad = anvil__float_find_nonfinite(x, n);
    }
    if (rc == ANVIL_OK && it->rewritten) {
        rc = j->hook->rows(j->hook->arg, it->src, row0, nr, x, e);
        if (rc == ANVIL_OK) bad = anvil__float_find_nonfinite(x, n); /* what is encoded is what counts */
    }
    if (rc != ANVIL_OK) {
        anvil__error_prefix(e, "tensor '%s' rows %" PRIu64 "..%" PRIu64, it->name, row0, row0 + nr - 1);
        return rc;
    }
    if (bad < n) return nonfinite_error(j, row0, x, n, bad, e);
    rc = encode_rows(j, row0, nr, x, d, e);
    if (rc == ANVIL_OK && j->quality) {
        if (j->dst_decode != NULL) {
            j->dst_decode(d, y, n);
        } else {
            rc = anvil_decode(j->ctx, it->dst_type, d, d_bytes, y, n, e);
        }
    }
    if (rc != ANVIL_OK) {
        anvil__error_prefix(e, "tensor '%s' rows %" PRIu64 "..%" PRIu64, it->name, row0, row0 + nr - 1);
        return rc;
    }
    if (j->quality) {
        anvil_float_error_sums(x, y, n, &j->stats[c].sse, &j->stats[c].signal, &j->stats[c].max_abs);
    }
    return ANVIL_OK;
}

/* The importance weights of every expert, checked once per tensor (what
 * anvil_encode_rows checks on every call). */
static int imatrix_usable(const anvil_transcode_tensor *it) {
    const uint64_t per = it->src->ne[1] > 0 ? it->src->ne[1] : 1;
    const uint64_t n = (it->n_rows + per - 1) / per * it->row_len;
    for (uint64_t i = 0; i < n; ++i) {
        if (!(it->imatrix[i] == it->imatrix[i]) || it->imatrix[i] > 3.4e38f || it->imatrix[i] < -3.4e38f) return 0;
    }
    return 1;
}

/* Who encodes and decodes this tensor, looked up once per tensor rather
 * than per chunk: the choice anvil_encode_rows makes (a backend's encoder
 * where dispatch chose one, with or without importance weights, else the
 * codec's). Every case it refuses or must check is left to it (enc_rows
 * and enc_one stay NULL), so its messages stay the only ones. */
static void resolve_coders(tensor_job *j) {
    const anvil_transcode_tensor *it = j->it;
    if (tc_is_float_type(it->dst_type)) return;
    const anvil_codec *c = anvil_ctx_codec(j->ctx, it->dst_type);
    if (c == NULL) return;
    const dispatch_rec *d = anvil__dispatch_find(j->ctx, it->dst_type);
    /* The chosen kernel's row decoder where it has one (bit-identical to
     * the codec's, tests/simd), else the codec's. */
    j->dst_decode = d != NULL && d->kernel != NULL && d->kernel->decode_row != NULL ? d->kernel->decode_row
                                                                                    : c->decode;
    if (c->block_elems == 0 || it->row_len % c->block_elems != 0) return;
    const int weighted = it->imatrix != NULL;
    if (weighted && !imatrix_usable(it)) return;
    if (!weighted && d != NULL && d->encoder != NULL) {
        j->enc_rows = d->encoder->encode_rows;
    } else if (weighted && d != NULL && d->weighted != NULL) {
        j->enc_rows = d->weighted->encode_rows;
        j->enc_drops_imatrix = d->weighted_drops_imatrix;
    } else if (c->encode_rows != NULL) {
        j->enc_rows = c->encode_rows;
    } else if (!weighted && !(c->flags & ANVIL_CODEC_NEEDS_IMATRIX) && c->encode != NULL) {
        j->enc_one = c->encode;
    }
}

static void chunk_task(void *arg, size_t slot) {
    tensor_job *j = arg;
    for (;;) {
        const size_t c = atomic_fetch_add(&j->next, 1);
        if (c >= j->slab_end) break;
        if (c > atomic_load(&j->fail_at)) continue; /* an earlier chunk failed */
        anvil_error e;
        anvil__error_clear(&e);
        const int rc = do_chunk(j, c, j->x[slot], j->y[slot], &e);
        if (rc != ANVIL_OK) record_failure(j, c, rc, &e);
    }
}

typedef struct run_state {
    anvil_transcode *t;
    anvil_pool *pool;
    unsigned slots;
    double t0;
    uint64_t bytes_done;
    size_t index;
    const anvil_transcode_tensor *next; /* the tensor after this one, or NULL */
    /* Tensors are written by the output thread while the next one is
     * encoded: two output buffers, used in turn by converted tensors (the
     * one in flight is always the other). Each is kept across tensors at
     * the size of the largest so far: one allocation (and one set of fresh
     * zeroed pages) per run, not per tensor. */
    tc_output *writer;
    uint8_t *out[2];
    uint64_t out_cap[2];
    unsigned out_turn;
    /* A source that is not a file: the converted tensor's source bytes
     * (whole, or a slab of rows when the source fills rows). */
    uint8_t *in;
    uint64_t in_cap;
    /* A tensor converted by rows: each slab's output, handed to the output
     * thread as a part of the tensor; two in turn, as out[]. */
    uint8_t *slab[2];
    uint64_t slab_cap[2];
    unsigned slab_turn;
} run_state;

static void report(run_state *rs, const anvil_transcode_tensor *it) {
    const anvil_transcode_options *o = &rs->t->opts;
    if (o->progress == NULL) return;
    anvil_transcode_progress p;
    p.tensor = rs->index;
    p.n_tensors = rs->t->n_items;
    p.name = it->name;
    p.bytes_done = rs->bytes_done;
    p.bytes_total = rs->t->summary.src_tensor_bytes;
    p.seconds = now_seconds() - rs->t0;
    o->progress(o->progress_arg, &p);
}

/* Advice only: a failure to advise changes speed, never the result. */
static void prefetch(const anvil_gguf *g, const void *p, uint64_t n) {
    if (n > 0 && !anvil__gguf_has_source(g)) anvil_gguf_prefetch(g, p, (size_t)n, NULL);
}
static void release(const anvil_gguf *g, const void *p, uint64_t n) {
    if (n > 0 && !anvil__gguf_has_source(g)) anvil_gguf_release(g, p, (size_t)n, NULL);
}

/* llama.cpp validates every tensor it reads: a float tensor copied as it
 * is must be finite too. */
static int check_finite(const anvil_transcode_tensor *it, const uint8_t *data, anvil_error *err) {
    const uint32_t ty = it->src_type;
    if (!tc_is_float_type(ty) || it->row_len == 0) return ANVIL_OK;
    const uint64_t n = it->src->n_elements;
    if (n > SIZE_MAX) return anvil__error_set(err, ANVIL_E_OVERFLOW, "tensor '%s' is too large", it->name);
    const size_t i = anvil_float_find_nonfinite_raw(ty, data, (size_t)n);
    if (i < n) {
        return anvil__error_set(err, ANVIL_E_NONFINITE,
                                "tensor '%s' has invalid data: a NaN or infinity at row %" PRIu64 ", column %" PRIu64
                                " (llama.cpp refuses such a model too); fix the source "
                                "model",
                                it->name, (uint64_t)i / it->row_len, (uint64_t)i % it->row_len);
    }
    return ANVIL_OK;
}

/* Read-ahead across tensors: the next tensor's first slab is asked for
 * while this one's last slab is being encoded (or copied). */
static void prefetch_next(const run_state *rs) {
    const anvil_transcode_tensor *n = rs->next;
    if (n != NULL && n->src->data != NULL) {
        prefetch(rs->t->src, n->src->data, n->src_bytes < TC_SLAB_BYTES ? n->src_bytes : TC_SLAB_BYTES);
    }
}

/* A kept tensor from a source that is not a file is filled into the
 * output buffer of this turn and handed over like a converted one. */
static int write_kept(run_state *rs, anvil_gguf_writer *w, const anvil_transcode_tensor *it, anvil_error *err) {
    const anvil_gguf *g = rs->t->src;
    const int filled = anvil__gguf_has_source(g);
    const uint8_t *data = it->src->data;
    int rc = ANVIL_OK;
    if (filled) {
        rc = tc_src_data(rs->t, it->src, &rs->out[rs->out_turn], &rs->out_cap[rs->out_turn], &data, err);
    } else {
        prefetch(g, data, it->src_bytes);
    }
    prefetch_next(rs);
    if (rc == ANVIL_OK && rs->t->check_kept) rc = check_finite(it, data, err);
    if (rc == ANVIL_OK && rs->t->check_src != NULL) rc = rs->t->check_src(it, data, err);
    if (rc == ANVIL_OK) {
        rc = tc_output_put(rs->writer, w, data, it->src_bytes, filled ? NULL : g, err); /* released once written */
        if (filled) rs->out_turn ^= 1u;
    } else {
        release(g, data, it->src_bytes);
    }
    rs->bytes_done += it->src_bytes;
    report(rs, it);
    return rc;
}

static void free_scratch(tensor_job *j, unsigned slots) {
    for (unsigned s = 0; s < slots; ++s) {
        if (j->x) free(j->x[s]);
        if (j->y) free(j->y[s]);
    }
    free(j->x);
    free(j->y);
    free(j->stats);
}

/* Set up the job for one tensor: its chunk geometry (the cut depends only
 * on the shape), its coders, the per-slot scratch; dst holds the whole
 * encoded tensor (it->dst_bytes). A tensor with no rows is not a job: the
 * caller writes nothing for it. */
static int job_begin_as(tensor_job *j, const anvil_transcode *t, const anvil_transcode_tensor *it, const uint8_t *src,
                        int quality, uint8_t *dst, int by_rows, unsigned slots, anvil_error *err) {
    memset(j, 0, sizeof *j);
    j->ctx = t->ctx;
    j->hook = &t->opts.hook;
    j->it = it;
    j->src = src;
    j->quality = quality;
    j->src_row_bytes = it->src_bytes / it->n_rows;
    j->dst_row_bytes = it->dst_bytes / it->n_rows;
    j->rows_per_chunk = it->row_len >= TC_CHUNK_ELEMS ? 1 : TC_CHUNK_ELEMS / it->row_len;
    if (j->rows_per_chunk > it->n_rows) j->rows_per_chunk = it->n_rows;
    j->n_chunks = (size_t)((it->n_rows + j->rows_per_chunk - 1) / j->rows_per_chunk);
    const uint64_t chunk_elems = j->rows_per_chunk * it->row_len;
    if (chunk_elems > SIZE_MAX / sizeof(float)) {
        return anvil__error_set(err, ANVIL_E_OVERFLOW, "tensor '%s': rows are too long", it->name);
    }
    resolve_coders(j);
    /* An f32 source row is already what the encoder reads: no copy, when
     * aligned for float loads and not rewritten first. */
    j->zero_copy = it->src_type == ANVIL_TYPE_F32 && !it->rewritten && ((uintptr_t)j->src % sizeof(float)) == 0;
    j->dst = dst;
    j->stats = calloc(j->n_chunks, sizeof *j->stats);
    j->x = calloc(slots, sizeof *j->x);
    j->y = calloc(slots, sizeof *j->y);
    j->by_rows = by_rows; /* dst is each slab's, set as it runs */
    int ok = (j->dst != NULL || by_rows) && j->stats != NULL && j->x != NULL && j->y != NULL;
    for (unsigned s = 0; ok && s < slots; ++s) {
        j->x[s] = j->zero_copy ? NULL : malloc((size_t)chunk_elems * sizeof(float));
        j->y[s] = j->quality ? malloc((size_t)chunk_elems * sizeof(float)) : NULL;
        ok = (j->zero_copy || j->x[s] != NULL) && (!j->quality || j->y[s] != NULL);
    }
    if (!ok) {
        free_scratch(j, slots);
        return anvil__error_set(err, ANVIL_E_NOMEM, "tensor '%s': out of memory for its %" PRIu64 "-byte output",
                                it->name, it->dst_bytes);
    }
    pthread_mutex_init(&j->lock, NULL);
    atomic_init(&j->fail_at, SIZE_MAX);
    atomic_init(&j->next, 0);
    return ANVIL_OK;
}

static int job_begin(tensor_job *j, const anvil_transcode *t, const anvil_transcode_tensor *it, const uint8_t *src,
                     int quality, uint8_t *dst, unsigned slots, anvil_error *err) {
    return job_begin_as(j, t, it, src, quality, dst, 0, slots, err);
}

static void job_end(tensor_job *j, unsigned slots) {
    pthread_mutex_destroy(&j->lock);
    free_scratch(j, slots);
}

/* Every chunk of the job on the pool, slab by slab of the source (read
 * ahead, released once done); rs, when given, hears the progress and reads
 * ahead into the next tensor. The first failing chunk's error is the one. */
/* Grow *buf to at least n bytes (contents not kept). */
static int grow(uint8_t **buf, uint64_t *cap, uint64_t n, const char *name, anvil_error *err) {
    if (*buf != NULL && n <= *cap) return ANVIL_OK;
    free(*buf);
    *buf = n <= SIZE_MAX - 1 ? malloc((size_t)n + 1) : NULL;
    *cap = *buf != NULL ? n : 0;
    if (*buf == NULL) {
        return anvil__error_set(err, ANVIL_E_NOMEM, "tensor '%s': out of memory for a %" PRIu64 "-byte slab", name,
                                n);
    }
    return ANVIL_OK;
}

/* By rows: rows [r0, r1) of the source filled into rs->in, the slab's
 * output buffer chosen (the one not in flight). */
static int slab_begin(tensor_job *j, const anvil_gguf *g, run_state *rs, uint64_t r0, uint64_t r1, anvil_error *err) {
    const anvil_transcode_tensor *it = j->it;
    int rc = grow(&rs->in, &rs->in_cap, (r1 - r0) * j->src_row_bytes, it->name, err);
    if (rc == ANVIL_OK) {
        rc =
            grow(&rs->slab[rs->slab_turn], &rs->slab_cap[rs->slab_turn], (r1 - r0) * j->dst_row_bytes, it->name, err);
    }
    if (rc == ANVIL_OK) rc = anvil__gguf_fill_rows(g, it->src, r0, r1 - r0, rs->in, err);
    j->src = rs->in;
    j->src_base = r0 * j->src_row_bytes;
    j->dst = rs->slab[rs->slab_turn];
    j->dst_base = r0 * j->dst_row_bytes;
    return rc;
}

static int job_run(tensor_job *j, const anvil_gguf *g, anvil_pool *pool, unsigned slots, run_state *rs,
                   anvil_gguf_writer *w, anvil_error *err) {
    const anvil_transcode_tensor *it = j->it;
    const uint64_t chunk_src = j->rows_per_chunk * j->src_row_bytes;
    size_t per_slab = (size_t)(TC_SLAB_BYTES / chunk_src);
    if (per_slab == 0) per_slab = 1;
    if (j->by_rows) {
        for (size_t lo = 0; lo < j->n_chunks; lo += per_slab) {
            const size_t hi = lo + per_slab < j->n_chunks ? lo + per_slab : j->n_chunks;
            const uint64_t r0 = lo * j->rows_per_chunk;
            const uint64_t r1 = hi == j->n_chunks ? it->n_rows : hi * j->rows_per_chunk;
            int rc = slab_begin(j, g, rs, r0, r1, err);
            if (rc != ANVIL_OK) return rc;
            j->slab_end = hi;
            atomic_store(&j->next, lo);
            anvil__pool_run(pool, slots, chunk_task, j);
            if (atomic_load(&j->fail_at) != SIZE_MAX) {
                *err = j->fail;
                return j->fail_rc;
            }
            rc = tc_output_put_part(rs->writer, w, j->dst, (r1 - r0) * j->dst_row_bytes, err);
            if (rc != ANVIL_OK) return rc;
            rs->slab_turn ^= 1u;
            rs->bytes_done += (r1 - r0) * j->src_row_bytes;
            report(rs, it);
        }
        return ANVIL_OK;
    }
    prefetch(g, j->src, (per_slab < j->n_chunks ? per_slab * chunk_src : it->src_bytes));
    for (size_t lo = 0; lo < j->n_chunks; lo += per_slab) {
        const size_t hi = lo + per_slab < j->n_chunks ? lo + per_slab : j->n_chunks;
        const uint64_t b0 = lo * chunk_src;
        const uint64_t b1 = hi == j->n_chunks ? it->src_bytes : hi * chunk_src;
        if (hi < j->n_chunks) {
            const uint64_t n1 = hi + per_slab < j->n_chunks ? (hi + per_slab) * chunk_src : it->src_bytes;
            prefetch(g, j->src + b1, n1 - b1);
        } else if (rs != NULL) {
            prefetch_next(rs);
        }
        j->slab_end = hi;
        atomic_store(&j->next, lo);
        anvil__pool_run(pool, slots, chunk_task, j);
        release(g, j->src + b0, b1 - b0);
        if (atomic_load(&j->fail_at) != SIZE_MAX) {
            *err = j->fail;
            return j->fail_rc;
        }
        if (rs != NULL) {
            rs->bytes_done += b1 - b0;
            report(rs, it);
        }
    }
    return ANVIL_OK;
}

/* The quality figures of a finished job, its chunk sums added in chunk
 * order (the same for any thread count). */
static void job_quality(const tensor_job *j, double *sse_out, double *sig_out, double *max_out, double *rmse,
                        double *snr_db) {
    double sse = 0, sig = 0, mx = 0;
    for (size_t c = 0; c < j->n_chunks; ++c) {
        sse += j->stats[c].sse;
        sig += j->stats[c].signal;
        if (j->stats[c].max_abs > mx) mx = j->stats[c].max_abs;
    }
    const double n = (double)j->it->n_rows * (double)j->it->row_len;
    *sse_out = sse;
    *sig_out = sig;
    *max_out = mx;
    *rmse = sqrt(sse / n);
    *snr_db = sse > 0 ? 10.0 * log10(sig / sse) : INFINITY;
}

/* A tensor of a source that fills rows (a Hugging Face folder), with
 * float source rows, converted slab by slab: neither its source nor its
 * output is ever whole in memory. */
static int write_by_rows(run_state *rs, anvil_gguf_writer *w, anvil_transcode_tensor *it, anvil_error *err) {
    anvil_transcode *t = rs->t;
    tensor_job j;
    int rc = job_begin_as(&j, t, it, NULL, !t->opts.skip_quality, NULL, 1, rs->slots, err);
    if (rc != ANVIL_OK) return rc;
    rc = job_run(&j, t->src, rs->pool, rs->slots, rs, w, err);
    if (rc == ANVIL_OK && j.quality) {
        it->has_quality = 1;
        job_quality(&j, &it->sum_sq_err, &it->sum_sq_signal, &it->max_abs, &it->rmse, &it->snr_db);
    }
    job_end(&j, rs->slots);
    return rc;
}

static int write_converted(run_state *rs, anvil_gguf_writer *w, anvil_transcode_tensor *it, anvil_error *err) {
    anvil_transcode *t = rs->t;
    if (anvil__gguf_can_fill_rows(t->src, it->src) && tc_is_float_type(it->src_type) && it->n_rows > 0 &&
        it->row_len > 0 && it->dst_bytes <= SIZE_MAX) {
        return write_by_rows(rs, w, it, err);
    }
    const uint8_t *src = NULL;
    int rc = tc_src_data(t, it->src, &rs->in, &rs->in_cap, &src, err);
    if (rc == ANVIL_OK && t->check_src != NULL) rc = t->check_src(it, src, err);
    if (rc != ANVIL_OK) return rc;
    if (it->dst_bytes > SIZE_MAX || it->n_rows == 0 || it->row_len == 0) {
        if (it->dst_bytes != 0) return anvil__error_set(err, ANVIL_E_OVERFLOW, "tensor '%s' is too large", it->name);
        return tc_output_put(rs->writer, w, NULL, 0, NULL, err);
    }
    const unsigned turn = rs->out_turn;
    if (it->dst_bytes > rs->out_cap[turn]) {
        free(rs->out[turn]);
        rs->out[turn] = malloc((size_t)it->dst_bytes);
        rs->out_cap[turn] = rs->out[turn] != NULL ? it->dst_bytes : 0;
    }
    tensor_job j;
    rc = job_begin(&j, t, it, src, !t->opts.skip_quality, rs->out[turn], rs->slots, err);
    if (rc != ANVIL_OK) return rc;
    rc = job_run(&j, t->src, rs->pool, rs->slots, rs, NULL, err);
    if (rc == ANVIL_OK) {
        rc = tc_output_put(rs->writer, w, j.dst, it->dst_bytes, NULL, err);
        rs->out_turn ^= 1u;
    }
    if (rc == ANVIL_OK && j.quality) {
        it->has_quality = 1;
        job_quality(&j, &it->sum_sq_err, &it->sum_sq_signal, &it->max_abs, &it->rmse, &it->snr_db);
    }
    job_end(&j, rs->slots);
    return rc;
}

/* One tensor of anvil_transcode_quality_as: the run's item with `type`
 * as its output, through the same job. */
static void quality_as_one(const anvil_transcode *t, const anvil_transcode_tensor *src_it, uint32_t type,
                           const anvil_type_info *ti, anvil_pool *pool, unsigned slots,
                           anvil_transcode_alt_quality *q) {
    q->sum_sq_err = q->rmse = q->max_abs = q->snr_db = NAN;
    q->sum_sq_signal = NAN;
    q->why = NULL;
    if (!src_it->has_quality) {
        q->why = "not converted";
        return;
    }
    anvil_transcode_tensor it = *src_it;
    it.dst_type = type;
    uint64_t bytes = 0;
    if (it.n_rows == 0 || it.row_len == 0 || ti->block_elems == 0 || it.row_len % ti->block_elems != 0 ||
        anvil_type_bytes(ti, it.n_rows * it.row_len, &bytes, NULL) != ANVIL_OK || bytes > SIZE_MAX) {
        q->why = "row length not a multiple of its block";
        return;
    }
    it.dst_bytes = bytes;
    uint8_t *dst = malloc(bytes > 0 ? (size_t)bytes : 1);
    uint8_t *in = NULL;
    uint64_t in_cap = 0;
    const uint8_t *src = NULL;
    tensor_job j;
    anvil_error e;
    int rc = dst != NULL ? tc_src_data(t, it.src, &in, &in_cap, &src, &e) : ANVIL_E_NOMEM;
    if (rc == ANVIL_OK) rc = job_begin(&j, t, &it, src, 1, dst, slots, &e);
    if (rc == ANVIL_OK) {
        rc = job_run(&j, t->src, pool, slots, NULL, NULL, &e);
        if (rc == ANVIL_OK) job_quality(&j, &q->sum_sq_err, &q->sum_sq_signal, &q->max_abs, &q->rmse, &q->snr_db);
        job_end(&j, slots);
    }
    if (rc != ANVIL_OK) q->why = anvil_strerror(rc);
    free(in);
    free(dst);
}

ANVIL_API int anvil_transcode_quality_as(anvil_transcode *t, uint32_t type, anvil_transcode_alt_quality *out,
                                         anvil_error *err) {
    anvil__error_clear(err);
    if (t == NULL || out == NULL) return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL argument");
    if (!t->ran) return anvil__error_set(err, ANVIL_E_STATE, "the plan has not run: its quality pass comes after");
    anvil_type_info ti;
    int rc = anvil_type_lookup(t->ctx, type, &ti, err);
    if (rc != ANVIL_OK) return rc;
    if (!tc_is_float_type(type) && anvil_ctx_codec(t->ctx, type) == NULL) {
        return anvil__error_set(err, ANVIL_E_UNKNOWN_TYPE, "type %s: no loaded codec provides it", ti.name);
    }
    const unsigned want = t->summary.threads ? t->summary.threads : 1;
    anvil_pool *pool = anvil__pool_create(want);
    if (pool == NULL) return anvil__error_set(err, ANVIL_E_NOMEM, "cannot start %u threads", want);
    const unsigned slots = anvil__pool_threads(pool);
    for (size_t i = 0; i < t->n_items; ++i) quality_as_one(t, &t->items[i], type, &ti, pool, slots, &out[i]);
    anvil__pool_destroy(pool);
    return ANVIL_OK;
}

static int build_quality(anvil_transcode *t, anvil_error *err) {
    size_t n = 0;
    anvil_transcode_quality *q = calloc(t->n_items > 0 ? t->n_items : 1, sizeof *q);
    double *sse = calloc(t->n_items > 0 ? t->n_items : 1, sizeof *sse);
    double *sig = calloc(t->n_items > 0 ? t->n_items : 1, sizeof *sig);
    if (q == NULL || sse == NULL || sig == NULL) {
        free(q);
        free(sse);
        free(sig);
        return anvil__nomem(err);
    }
    /* Types in id order, tensors in file order: a fixed summation order. */
    for (uint32_t ty = 0; ty <= ANVIL_TYPE_THIRD_PARTY_LAST; ++ty) {
        int any = 0;
        for (size_t i = 0; i < t->n_items; ++i) {
            const anvil_transcode_tensor *it = &t->items[i];
            if (!it->has_quality || it->dst_type != ty) continue;
            if (!any) {
                memset(&q[n], 0, sizeof q[n]);
                q[n].type = ty;
                sse[n] = sig[n] = 0;
                any = 1;
            }
            q[n].n_tensors++;
            q[n].n_elements += it->n_rows * it->row_len;
            sse[n] += it->sum_sq_err;
            sig[n] += it->sum_sq_signal;
            if (it->max_abs > q[n].max_abs) q[n].max_abs = it->max_abs;
        }
        if (any) {
            q[n].rmse = q[n].n_elements ? sqrt(sse[n] / (double)q[n].n_elements) : 0;
            q[n].snr_db = sse[n] > 0 ? 10.0 * log10(sig[n] / sse[n]) : INFINITY;
            n++;
        }
    }
    free(sse);
    free(sig);
    free(t->quality);
    t->quality = q;
    t->n_quality = n;
    return ANVIL_OK;
}

static int check_space(const anvil_transcode *t, anvil_error *err) {
    const char *path = t->part_paths[0];
    anvil_error ignored;
    if (t->n_parts == 1 && afile_output_kind(path, &ignored) != AFILE_REPLACE) {
        return ANVIL_OK; /* a device, FIFO or descriptor: no file system to ask; the writer opens it */
    }
    const char *slash = strrchr(path, '/');
    char dir[4096];
    if (slash == NULL) {
        snprintf(dir, sizeof dir, ".");
    } else if (slash == path) {
        snprintf(dir, sizeof dir, "/");
    } else {
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    }
    struct statvfs vs;
    if (statvfs(dir, &vs) != 0) return ANVIL_OK; /* the writer reports a missing folder */
    const unsigned long long avail = (unsigned long long)vs.f_bavail * vs.f_frsize;
    if (avail < t->summary.out_file_bytes) {
        return anvil__error_set(err, ANVIL_E_IO,
                                "not enough disk space: the output needs %" PRIu64 " bytes (%.2f GB) but "
                                "the file system holding '%s' has %llu bytes (%.2f GB) free; free some "
                                "space or write elsewhere",
                                t->summary.out_file_bytes, t->summary.out_file_bytes / 1e9, dir, avail, avail / 1e9);
    }
    return ANVIL_OK;
}

ANVIL_API int anvil_transcode_run(anvil_transcode *t, anvil_error *err) {
    anvil__error_clear(err);
    if (t == NULL) return anvil__error_set(err, ANVIL_E_INVALID_ARG, "NULL plan");
    if (t->ran) return anvil__error_set(err, ANVIL_E_STATE, "this plan was already run; make a new one");
    t->ran = 1;
    int rc = check_space(t, err);
    if (rc != ANVIL_OK) return rc;
    run_state rs;
    memset(&rs, 0, sizeof rs);
    rs.t = t;
    rs.slots = t->summary.threads ? t->summary.threads : 1;
    rs.pool = anvil__pool_create(rs.slots);
    if (rs.pool == NULL) return anvil__error_set(err, ANVIL_E_NOMEM, "cannot start %u threads", rs.slots);
    rs.slots = anvil__pool_threads(rs.pool);
    t->summary.threads = rs.slots;
    rs.writer = tc_output_start();
    if (rs.writer == NULL) {
        anvil__pool_destroy(rs.pool);
        return anvil__error_set(err, ANVIL_E_NOMEM, "cannot start the output thread");
    }
    rs.t0 = now_seconds();

    uint32_t begun = 0;
    for (size_t i = 0; rc == ANVIL_OK && i < t->n_items; ++i) {
        anvil_transcode_tensor *it = &t->items[i];
        while (rc == ANVIL_OK && begun <= it->part) {
            rc = tc_output_wait(rs.writer, err); /* parts are begun in order, after the last one's tensors */
            if (rc == ANVIL_OK) rc = anvil_gguf_writer_stream_begin(t->writers[begun], t->part_paths[begun], err);
            if (rc == ANVIL_OK) begun++;
        }
        if (rc != ANVIL_OK) break;
        rs.index = i;
        rs.next = i + 1 < t->n_items ? &t->items[i + 1] : NULL;
        anvil_gguf_writer *w = t->writers[it->part];
        if (it->why == ANVIL_TRANSCODE_CONVERT || it->rewritten) {
            rc = write_converted(&rs, w, it, err);
        } else {
            rc = write_kept(&rs, w, it, err);
        }
    }
    /* Everything handed to the output thread is written. */
    if (rc == ANVIL_OK) {
        rc = tc_output_wait(rs.writer, err);
    } else {
        tc_output_wait(rs.writer, NULL);
    }
    tc_output_stop(rs.writer);
    /* Parts without tensors (none in practice) still get their header. */
    while (rc == ANVIL_OK && begun < t->n_parts) {
        rc = anvil_gguf_writer_stream_begin(t->writers[begun], t->part_paths[begun], err);
        if (rc == ANVIL_OK) begun++;
    }
    /* Every part complete, then all put in place as one step: an existing
     * set is replaced whole or not at all (file_set.h). */
    /* One file is simply finished: it may be a device, a FIFO or standard
     * output, written in one pass, which cannot be held (atomic_file.h). */
    if (rc == ANVIL_OK && t->n_parts == 1) {
        rc = anvil_gguf_writer_stream_finish(t->writers[0], err);
    } else {
        for (uint32_t p = 0; rc == ANVIL_OK && p < t->n_parts; ++p) {
            rc = anvil_gguf_writer_stream_hold(t->writers[p], err);
        }
        if (rc == ANVIL_OK) rc = anvil_gguf_writer_commit_set(t->writers, t->n_parts, err);
    }
    if (rc != ANVIL_OK) {
        for (uint32_t p = 0; p < t->n_parts; ++p) anvil_gguf_writer_stream_abort(t->writers[p]);
    }
    anvil__pool_destroy(rs.pool);
    free(rs.out[0]);
    free(rs.out[1]);
    free(rs.slab[0]);
    free(rs.slab[1]);
    free(rs.in);
    if (rc != ANVIL_OK) return rc;
    rc = build_quality(t, err);
    t->summary.seconds = now_seconds() - rs.t0;
    t->summary.mb_per_s = t->summary.seconds > 0 ? (double)t->summary.src_tensor_bytes / 1e6 / t->summary.seconds : 0;
    t->summary.peak_rss_bytes = peak_rss_bytes();
    t->summary.ran = 1;
    return rc;
}
