/* SPDX-License-Identifier: MIT */
/*
 * mdl_base_logits: the base model's side of `anvil perplexity --base`,
 * saved once and read back, so that many files are compared with one base
 * without evaluating it again (llama-perplexity's --kl-divergence-base).
 *
 * The file (little-endian; every field checked when read):
 *   0   "ANVILBLG"        magic
 *   8   u32 version (1)   u32 n_vocab   u32 n_ctx   u32 n_chunks
 *   24  u32 first (the first scored position of a chunk)   u32 0
 *   32  u64 FNV-1a of the chunks' token ids as evaluated (BOS in place)
 *   40  per chunk, per scored position (first .. n_ctx-2):
 *         i32 top (the base's first argmax)   f32 log p[n_vocab]
 *       (floats in the CPU's byte order: little-endian on every CPU anvil
 *       builds for)
 * The log-probabilities stay float (llama.cpp stores 16-bit steps): a
 * model against its own saved base scores exactly 0. A file made from
 * other text, --ctx, --chunks or vocabulary is refused naming what
 * differs. The file is written through a temp file and renamed at the end:
 * a failed run leaves no half-written cache.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "atomic_file.h"
#include "error.h"
#include "file_input.h"
#include "file_set.h"
#include "model_internal.h"

#define BLG_MAGIC "ANVILBLG"
#define BLG_VERSION 1u
#define BLG_HEADER 40u

struct mdl_blog {
    FILE *in;  /* reading */
    afile out; /* writing */
    int writing;
    const char *path;
    uint32_t n_vocab;
};

static void put32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; ++i) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get64(const unsigned char *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }

uint64_t mdl_blog_hash(uint64_t h, const int32_t *tok, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        const uint32_t v = (uint32_t)tok[i];
        for (int b = 0; b < 4; ++b) {
            h ^= (v >> (8 * b)) & 0xffu;
            h *= 0x100000001b3ull;
        }
    }
    return h;
}

static void header(unsigned char *h, const mdl_blog_key *k) {
    memcpy(h, BLG_MAGIC, 8);
    put32(h + 8, BLG_VERSION);
    put32(h + 12, k->n_vocab);
    put32(h + 16, k->n_ctx);
    put32(h + 20, k->n_chunks);
    put32(h + 24, k->first);
    put32(h + 28, 0);
    put64(h + 32, k->hash);
}

/* The size a file of key must have, or 0 when it overflows. */
static uint64_t file_size(const mdl_blog_key *k) {
    const uint64_t per_pos = 4u + 4u * (uint64_t)k->n_vocab;
    const uint64_t positions = (uint64_t)k->n_chunks * (uint64_t)(k->n_ctx - 1 - k->first);
    if (k->n_ctx < 2 || k->first >= k->n_ctx - 1) return 0;
    if (positions != 0 && per_pos > (UINT64_MAX - BLG_HEADER) / positions) return 0;
    return BLG_HEADER + positions * per_pos;
}

static int mismatch(const char *path, const char *what, uint64_t file, uint64_t run, anvil_error *err) {
    return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                            "%s: base logits made with %s %llu, this run has %llu: make it again "
                            "(--base BASE --base-logits FILE with a new FILE) or run with the same options",
                            path, what, (unsigned long long)file, (unsigned long long)run);
}

static int check_header(const char *path, const unsigned char *h, uint64_t size, const mdl_blog_key *k,
                        anvil_error *err) {
    if (memcmp(h, BLG_MAGIC, 8) != 0)
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s: not an anvil base-logits file (no %s magic)", path,
                                BLG_MAGIC);
    if (get32(h + 8) != BLG_VERSION)
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s: base-logits version %u; this anvil reads version %u", path,
                                get32(h + 8), BLG_VERSION);
    if (get32(h + 12) != k->n_vocab) return mismatch(path, "a vocabulary of", get32(h + 12), k->n_vocab, err);
    if (get32(h + 16) != k->n_ctx) return mismatch(path, "--ctx", get32(h + 16), k->n_ctx, err);
    if (get32(h + 20) != k->n_chunks) return mismatch(path, "a chunk count of", get32(h + 20), k->n_chunks, err);
    if (get32(h + 24) != k->first) return mismatch(path, "a first scored position of", get32(h + 24), k->first, err);
    if (get64(h + 32) != k->hash)
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "%s: base logits made from other text (token hash %016llx, this run %016llx): "
                                "make it again from this text",
                                path, (unsigned long long)get64(h + 32), (unsigned long long)k->hash);
    const uint64_t want = file_size(k);
    if (want == 0 || size != want)
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s: %llu bytes where the header promises %llu (truncated?)",
                                path, (unsigned long long)size, (unsigned long long)want);
    return ANVIL_OK;
}

static int open_read(mdl_blog *b, const char *path, const mdl_blog_key *k, anvil_error *err) {
    int rc = file_input_check(path, err);
    if (rc != ANVIL_OK) return rc;
    b->in = fopen(path, "rb");
    struct stat st;
    unsigned char h[BLG_HEADER];
    if (b->in == NULL || fstat(fileno(b->in), &st) != 0)
        return anvil__error_set(err, ANVIL_E_IO, "%s: %s", path, strerror(errno));
    if (fread(h, 1, sizeof h, b->in) != sizeof h)
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s: shorter than a base-logits header (%u bytes)", path,
                                BLG_HEADER);
    return check_header(path, h, (uint64_t)st.st_size, k, err);
}

static int open_write(mdl_blog *b, const char *path, const mdl_blog_key *k, anvil_error *err) {
    if (file_size(k) == 0)
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "%s: base logits of this size cannot be stored", path);
    int rc = file_set_output_open(&b->out, path, err);
    if (rc != ANVIL_OK) return rc;
    b->writing = 1;
    unsigned char h[BLG_HEADER];
    header(h, k);
    return afile_write_all(b->out.fd, h, sizeof h, path, err);
}

int mdl_blog_open(mdl_blog **out, const char *path, int write, const mdl_blog_key *k, anvil_error *err) {
    *out = NULL;
    mdl_blog *b = calloc(1, sizeof *b);
    if (b == NULL) return anvil__nomem(err);
    b->path = path;
    b->n_vocab = k->n_vocab;
    b->out.fd = -1;
    const int rc = write ? open_write(b, path, k, err) : open_read(b, path, k, err);
    if (rc != ANVIL_OK) {
        mdl_blog_close(b, 0, NULL);
        return rc;
    }
    *out = b;
    return ANVIL_OK;
}

int mdl_blog_read(mdl_blog *b, float *lp, int *top, anvil_error *err) {
    unsigned char t[4];
    if (fread(t, 1, 4, b->in) != 4 || fread(lp, sizeof *lp, b->n_vocab, b->in) != b->n_vocab)
        return anvil__error_set(err, ANVIL_E_IO, "%s: read failed (the file changed while in use?)", b->path);
    const uint32_t v = get32(t);
    if (v >= b->n_vocab)
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s: a top token %u outside the vocabulary of %u", b->path, v,
                                b->n_vocab);
    *top = (int)v;
    return ANVIL_OK;
}

int mdl_blog_write(mdl_blog *b, const float *lp, int top, anvil_error *err) {
    unsigned char t[4];
    put32(t, (uint32_t)top);
    int rc = afile_write_all(b->out.fd, t, 4, b->path, err);
    if (rc == ANVIL_OK) rc = afile_write_all(b->out.fd, lp, (size_t)b->n_vocab * sizeof *lp, b->path, err);
    return rc;
}

int mdl_blog_close(mdl_blog *b, int commit, anvil_error *err) {
    if (b == NULL) return ANVIL_OK;
    int rc = ANVIL_OK;
    if (b->in != NULL) fclose(b->in);
    if (b->writing) {
        if (commit) {
            rc = afile_commit(&b->out, err);
        } else {
            afile_discard(&b->out);
        }
    }
    free(b);
    return rc;
}
