/* SPDX-License-Identifier: MIT */
/*
 * A synthetic llama-shaped model, written as a GGUF file
 * (synth_model_write; not the CLI's synthetic weight rows for demo and
 * bench, which are synth_rows.c): real llama metadata
 * (hyperparameters and a llama-style tokenizer vocabulary), llama.cpp's tensor names and order, and
 * deterministic weights that look like trained ones to a quantizer: roughly
 * normal with heavier tails, a per-row scale, a few hot columns shared by
 * every row, norms near 1. Written header-first, one tensor at a time.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/gguf.h"
#include "anvil/numeric.h"
#include "synth_model.h"

/* The error helpers of libanvil are internal: this file is built on the
 * public API only. */
__attribute__((format(printf, 3, 4))) static int fail(anvil_error *err, int code, const char *fmt, ...) {
    if (err != NULL) {
        err->code = code;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return code;
}

typedef struct synth_tensor {
    char name[64];
    uint32_t type;
    uint32_t n_dims;
    uint64_t ne[3];
    int is_norm;
} synth_tensor;

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Sum of four 16-bit uniforms, centred and scaled to unit variance: a cheap,
 * bounded stand-in for a normal draw; one in 1024 draws is an outlier. */
static float draw(uint64_t *s) {
    const uint64_t r = splitmix(s);
    const double u =
        (double)(r & 0xffff) + (double)((r >> 16) & 0xffff) + (double)((r >> 32) & 0xffff) + (double)(r >> 48);
    double v = (u / 65536.0 - 2.0) * 1.7320508075688772;
    if ((r & 0x3ff0) == 0) v *= 8.0;
    return (float)v;
}

static int hot_column(uint64_t col) { return ((col * 2654435761u) >> 7) % 97 == 0; }

static void fill_row(float *x, uint64_t n, uint64_t seed, size_t tensor, uint64_t row, int is_norm) {
    uint64_t s = seed ^ (0x51ED2701ull * (tensor + 1)) ^ (row * 0x2545F4914F6CDD1Dull);
    splitmix(&s);
    if (is_norm) {
        for (uint64_t i = 0; i < n; ++i) x[i] = 1.0f + 0.05f * draw(&s);
        return;
    }
    /* Fan-in scaling, as trained weights roughly keep. */
    const double base = 1.0 / sqrt((double)n);
    const double row_scale = base * (0.5 + (double)(splitmix(&s) >> 11) / 9007199254740992.0);
    for (uint64_t i = 0; i < n; ++i) {
        double v = draw(&s) * row_scale;
        if (hot_column(i)) v *= 4.0;
        x[i] = (float)v;
    }
}

static int tensor_list(const synth_model *m, synth_tensor **out, size_t *count, anvil_error *err) {
    if (m->n_vocab < 259 || m->n_embd == 0 || m->n_ff == 0 || m->n_layer == 0 || m->n_head == 0 ||
        m->n_head_kv == 0 || m->n_embd % m->n_head != 0 || m->n_head % m->n_head_kv != 0 || m->n_layer > 100000 ||
        m->n_expert > 256 || (m->n_expert > 0 && (m->n_expert_used == 0 || m->n_expert_used > m->n_expert))) {
        return fail(err, ANVIL_E_INVALID_ARG,
                    "synthetic model: need n_vocab >= 259 (the byte tokens), n_embd a "
                    "multiple of n_head, n_head a multiple of n_head_kv, every size > 0, and "
                    "with experts 1 <= n_expert_used <= n_expert <= 256");
    }
    if (m->type != ANVIL_TYPE_F32 && m->type != ANVIL_TYPE_F16 && m->type != ANVIL_TYPE_BF16) {
        return fail(err, ANVIL_E_INVALID_ARG, "synthetic model: the type must be f32, f16 or bf16");
    }
    const size_t n = 3 + (size_t)m->n_layer * 10;
    synth_tensor *t = calloc(n, sizeof *t);
    if (t == NULL) return fail(err, ANVIL_E_NOMEM, "out of memory");
    const uint64_t e = m->n_embd, kv = (uint64_t)m->n_embd / m->n_head * m->n_head_kv, f = m->n_ff;
    const uint64_t x = m->n_expert;
    size_t k = 0;
#define ADD(nm_fmt, layer, ty, nd, a, b, c, norm)             \
    do {                                                      \
        snprintf(t[k].name, sizeof t[k].name, nm_fmt, layer); \
        t[k].type = (ty);                                     \
        t[k].n_dims = (nd);                                   \
        t[k].ne[0] = (a);                                     \
        t[k].ne[1] = (b);                                     \
        t[k].ne[2] = (c);                                     \
        t[k].is_norm = (norm);                                \
        k++;                                                  \
    } while (0)
    ADD("token_embd.weight%.0u", 0u, m->type, 2, e, (uint64_t)m->n_vocab, 1, 0);
    for (uint32_t l = 0; l < m->n_layer; ++l) {
        ADD("blk.%u.attn_norm.weight", l, ANVIL_TYPE_F32, 1, e, 1, 1, 1);
        ADD("blk.%u.attn_q.weight", l, m->type, 2, e, e, 1, 0);
        ADD("blk.%u.attn_k.weight", l, m->type, 2, e, kv, 1, 0);
        ADD("blk.%u.attn_v.weight", l, m->type, 2, e, kv, 1, 0);
        ADD("blk.%u.attn_output.weight", l, m->type, 2, e, e, 1, 0);
        ADD("blk.%u.ffn_norm.weight", l, ANVIL_TYPE_F32, 1, e, 1, 1, 1);
        if (x > 0) {
            ADD("blk.%u.ffn_gate_inp.weight", l, ANVIL_TYPE_F32, 2, e, x, 1, 0);
            ADD("blk.%u.ffn_gate_exps.weight", l, m->type, 3, e, f, x, 0);
            ADD("blk.%u.ffn_up_exps.weight", l, m->type, 3, e, f, x, 0);
            ADD("blk.%u.ffn_down_exps.weight", l, m->type, 3, f, e, x, 0);
        } else {
            ADD("blk.%u.ffn_gate.weight", l, m->type, 2, e, f, 1, 0);
            ADD("blk.%u.ffn_up.weight", l, m->type, 2, e, f, 1, 0);
            ADD("blk.%u.ffn_down.weight", l, m->type, 2, f, e, 1, 0);
        }
    }
    ADD("output_norm.weight%.0u", 0u, ANVIL_TYPE_F32, 1, e, 1, 1, 1);
    if (!m->tied_embeddings) ADD("output.weight%.0u", 0u, m->type, 2, e, (uint64_t)m->n_vocab, 1, 0);
#undef ADD
    *out = t;
    *count = k;
    return ANVIL_OK;
}

/* The tokenizer.* keys of another file, raw. */
static int copy_vocab(anvil_gguf_writer *w, const anvil_gguf *from, uint32_t n_vocab, anvil_error *err) {
    anvil_gguf_array tokens;
    if (anvil_gguf_get_array(from, "tokenizer.ggml.tokens", &tokens, err) != ANVIL_OK)
        return err ? err->code : ANVIL_E_NOT_FOUND;
    if (tokens.count != n_vocab) {
        return fail(err, ANVIL_E_INVALID_ARG,
                    "synthetic model: the tokenizer has %" PRIu64 " tokens, the model n_vocab %u", tokens.count,
                    n_vocab);
    }
    for (size_t i = 0; i < anvil_gguf_kv_count(from); ++i) {
        const anvil_gguf_kv *kv = anvil_gguf_kv_at(from, i);
        if (strncmp(kv->key, "tokenizer.", 10) != 0) continue;
        const int rc = anvil_gguf_writer_copy_kv(w, kv, err);
        if (rc != ANVIL_OK) return rc;
    }
    return ANVIL_OK;
}

static int set_vocab(anvil_gguf_writer *w, uint32_t n_vocab, anvil_error *err) {
    /* <unk> <s> </s>, the 256 byte tokens, then plain pieces. */
    const size_t per = 16;
    char *buf = malloc((size_t)n_vocab * per);
    const char **items = malloc((size_t)n_vocab * sizeof *items);
    float *scores = malloc((size_t)n_vocab * sizeof *scores);
    int32_t *types = malloc((size_t)n_vocab * sizeof *types);
    int rc = ANVIL_OK;
    if (buf == NULL || items == NULL || scores == NULL || types == NULL) {
        rc = fail(err, ANVIL_E_NOMEM, "out of memory");
    }
    for (uint32_t i = 0; rc == ANVIL_OK && i < n_vocab; ++i) {
        char *s = buf + (size_t)i * per;
        if (i == 0) {
            snprintf(s, per, "<unk>");
            types[i] = 2; /* unknown */
        } else if (i == 1 || i == 2) {
            snprintf(s, per, i == 1 ? "<s>" : "</s>");
            types[i] = 3; /* control */
        } else if (i < 259) {
            snprintf(s, per, "<0x%02X>", i - 3);
            types[i] = 6; /* byte */
        } else {
            snprintf(s, per, "\xe2\x96\x81t%u", i); /* SentencePiece's word-start mark */
            types[i] = 1;                           /* normal */
        }
        items[i] = s;
        scores[i] = i < 259 ? 0.0f : -(float)(i - 259);
    }
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_string(w, "tokenizer.ggml.model", "llama", err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_string(w, "tokenizer.ggml.pre", "default", err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_string_array(w, "tokenizer.ggml.tokens", items, n_vocab, err);
    if (rc == ANVIL_OK) {
        rc = anvil_gguf_writer_set_array(w, "tokenizer.ggml.scores", ANVIL_GGUF_TYPE_F32, scores, n_vocab, err);
    }
    if (rc == ANVIL_OK) {
        rc = anvil_gguf_writer_set_array(w, "tokenizer.ggml.token_type", ANVIL_GGUF_TYPE_I32, types, n_vocab, err);
    }
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 2, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", 0, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", 1, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", 0, err);
    free(buf);
    free(items);
    free(scores);
    free(types);
    return rc;
}

static int set_metadata(anvil_gguf_writer *w, const synth_model *m, anvil_error *err) {
    const uint32_t file_type = m->type == ANVIL_TYPE_F32 ? 0 : (m->type == ANVIL_TYPE_F16 ? 1 : 32);
    int rc = anvil_gguf_writer_set_string(w, "general.architecture", "llama", err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_string(w, "general.type", "model", err);
    if (rc == ANVIL_OK) {
        rc = anvil_gguf_writer_set_string(w, "general.name", m->name ? m->name : "anvil synthetic llama", err);
    }
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, "llama.block_count", m->n_layer, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, "llama.context_length", 2048, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, "llama.embedding_length", m->n_embd, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, "llama.feed_forward_length", m->n_ff, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, "llama.attention.head_count", m->n_head, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, "llama.attention.head_count_kv", m->n_head_kv, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_f32(w, "llama.rope.freq_base", 10000.0f, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, "general.file_type", file_type, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, "llama.vocab_size", m->n_vocab, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, "llama.rope.dimension_count", m->n_embd / m->n_head, err);
    if (rc == ANVIL_OK && m->n_expert > 0) rc = anvil_gguf_writer_set_u32(w, "llama.expert_count", m->n_expert, err);
    if (rc == ANVIL_OK && m->n_expert > 0) {
        rc = anvil_gguf_writer_set_u32(w, "llama.expert_used_count", m->n_expert_used, err);
    }
    if (rc == ANVIL_OK)
        rc = m->tokenizer_from ? copy_vocab(w, m->tokenizer_from, m->n_vocab, err) : set_vocab(w, m->n_vocab, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, "general.quantization_version", 2, err);
    return rc;
}

static int build(const synth_model *m, const anvil_ctx *ctx, anvil_gguf_writer **wout, synth_tensor **tout,
                 size_t *nout, anvil_error *err) {
    synth_tensor *t = NULL;
    size_t n = 0;
    anvil_gguf_writer *w = NULL;
    int rc = tensor_list(m, &t, &n, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_new(&w, ctx, err);
    if (rc == ANVIL_OK) rc = set_metadata(w, m, err);
    for (size_t i = 0; rc == ANVIL_OK && i < n; ++i) {
        rc = anvil_gguf_writer_add_tensor(w, t[i].name, t[i].type, t[i].n_dims, t[i].ne, NULL, 0, err);
    }
    if (rc != ANVIL_OK) {
        anvil_gguf_writer_free(w);
        free(t);
        return rc;
    }
    *wout = w;
    *tout = t;
    *nout = n;
    return ANVIL_OK;
}

int synth_model_size(const synth_model *m, uint64_t *bytes, anvil_error *err) {
    if (m == NULL || bytes == NULL) return fail(err, ANVIL_E_INVALID_ARG, "NULL argument");
    anvil_gguf_writer *w = NULL;
    synth_tensor *t = NULL;
    size_t n = 0;
    int rc = build(m, NULL, &w, &t, &n, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_file_size(w, bytes, err);
    anvil_gguf_writer_free(w);
    free(t);
    return rc;
}

int synth_model_write(const char *path, const synth_model *m, const anvil_ctx *ctx, anvil_error *err) {
    if (path == NULL || m == NULL) return fail(err, ANVIL_E_INVALID_ARG, "NULL argument");
    anvil_gguf_writer *w = NULL;
    synth_tensor *t = NULL;
    size_t n = 0;
    int rc = build(m, ctx, &w, &t, &n, err);
    if (rc != ANVIL_OK) return rc;
    uint64_t max_row = 0, max_bytes = 0;
    for (size_t i = 0; i < n; ++i) {
        if (t[i].ne[0] > max_row) max_row = t[i].ne[0];
        if (anvil_gguf_writer_tensor_bytes(w, i) > max_bytes) max_bytes = anvil_gguf_writer_tensor_bytes(w, i);
    }
    float *row = NULL;
    uint8_t *buf = NULL;
    if (max_bytes > SIZE_MAX) {
        rc = fail(err, ANVIL_E_OVERFLOW, "synthetic model: a tensor is too large for memory");
    } else {
        row = malloc((size_t)max_row * sizeof *row);
        buf = malloc((size_t)max_bytes);
        if (row == NULL || buf == NULL) rc = fail(err, ANVIL_E_NOMEM, "out of memory");
    }
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_stream_begin(w, path, err);
    for (size_t i = 0; rc == ANVIL_OK && i < n; ++i) {
        const synth_tensor *st = &t[i];
        const uint64_t cols = st->ne[0], rows = st->ne[1] * st->ne[2];
        const size_t es = st->type == ANVIL_TYPE_F32 ? 4 : 2;
        for (uint64_t r = 0; r < rows; ++r) {
            fill_row(row, cols, m->seed, i, r, st->is_norm);
            uint8_t *d = buf + r * cols * es;
            for (uint64_t c = 0; c < cols; ++c) {
                if (st->type == ANVIL_TYPE_F32) {
                    memcpy(d + 4 * c, &row[c], 4);
                } else {
                    const uint16_t h = st->type == ANVIL_TYPE_F16 ? anvil_fp32_to_fp16(row[c])
                                                                  : anvil_fp32_to_bf16(row[c]);
                    memcpy(d + 2 * c, &h, 2);
                }
            }
        }
        rc = anvil_gguf_writer_stream_tensor(w, buf, anvil_gguf_writer_tensor_bytes(w, i), err);
    }
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_stream_finish(w, err);
    free(row);
    free(buf);
    anvil_gguf_writer_free(w);
    free(t);
    return rc;
}
