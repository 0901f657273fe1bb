/* SPDX-License-Identifier: MIT */
/*
 * Opening a tokenizer: which vocabulary and pre-tokenizer a GGUF names (the
 * supported ones, or a refusal that lists them), its special ids and add_*
 * flags, llama.cpp's attribute fixes by token text, the special-token split
 * order, byte tokens; and the public open/free/info calls.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "tok_internal.h"

static int get_str(const anvil_gguf *g, const char *key, char *buf, size_t size) {
    anvil_gguf_str s;
    buf[0] = '\0';
    if (anvil_gguf_get_str(g, key, &s, NULL) != ANVIL_OK) return 0;
    const size_t n = s.len < size - 1 ? s.len : size - 1;
    memcpy(buf, s.ptr, n);
    buf[n] = '\0';
    return 1;
}

static void get_flag(const anvil_gguf *g, const char *key, int *v) {
    int b;
    if (anvil_gguf_get_bool(g, key, &b, NULL) == ANVIL_OK) *v = b;
}

/* A special id key: a valid id replaces *id; an out-of-range one keeps it. */
static int get_id(const anvil_gguf *g, const anvil_tokenizer *t, const char *key, int32_t *id) {
    uint64_t v;
    if (anvil_gguf_get_u64(g, key, &v, NULL) != ANVIL_OK) return 0;
    if (v < t->n_tokens) *id = (int32_t)v;
    return 1;
}

static const char *const llama3_names[] = { "llama3",  "llama-v3", "llama-bpe", "falcon3",      "falcon-h1",
                                            "pixtral", "midm-2.0", "lfm2",      "jina-v5-nano", NULL };
static const char *const qwen2_names[] = { "qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez", NULL };

static int in_list(const char *s, const char *const *list) {
    for (; *list; ++list)
        if (strcmp(s, *list) == 0) return 1;
    return 0;
}

static int pick_kind(anvil_tokenizer *t, const anvil_gguf *g, anvil_error *err) {
    if (!get_str(g, "tokenizer.ggml.model", t->model, sizeof t->model))
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "tokenizer.ggml.model: missing; the file carries no tokenizer (convert the model "
                                "with its tokenizer files)");
    get_str(g, "tokenizer.ggml.pre", t->pre_name, sizeof t->pre_name);
    if (strcmp(t->model, "llama") == 0) {
        t->kind = ANVIL_VOCAB_SPM;
        t->pre = TOK_PRE_NONE;
        t->pre_name[0] = '\0';
        t->bos = 1, t->eos = 2;
        t->add_bos = 1, t->add_eos = 0, t->add_space_prefix = 1;
    } else if (strcmp(t->model, "gpt2") == 0) {
        t->kind = ANVIL_VOCAB_BPE;
        t->bos = 11, t->eos = 11;
        if (in_list(t->pre_name, llama3_names)) {
            t->pre = TOK_PRE_LLAMA3;
            t->ignore_merges = 1;
            t->add_bos = 1;
        } else if (in_list(t->pre_name, qwen2_names)) {
            t->pre = TOK_PRE_QWEN2;
        } else {
            return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                    "tokenizer.ggml.pre '%s': this pre-tokenizer is not supported (supported: "
                                    "llama-bpe/llama3 and qwen2 families)",
                                    t->pre_name);
        }
    } else {
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                "tokenizer.ggml.model '%s': this vocabulary type is not supported (supported: "
                                "'llama' SentencePiece, 'gpt2' byte-level BPE)",
                                t->model);
    }
    if (t->bos >= (int32_t)t->n_tokens) t->bos = -1;
    if (t->eos >= (int32_t)t->n_tokens) t->eos = -1;
    get_id(g, t, "tokenizer.ggml.bos_token_id", &t->bos);
    get_id(g, t, "tokenizer.ggml.eos_token_id", &t->eos);
    get_flag(g, "tokenizer.ggml.add_space_prefix", &t->add_space_prefix);
    get_flag(g, "tokenizer.ggml.add_bos_token", &t->add_bos);
    get_flag(g, "tokenizer.ggml.add_eos_token", &t->add_eos);
    return ANVIL_OK;
}

static int32_t find_z(const anvil_tokenizer *t, const char *s) { return tok_find(t, s, strlen(s)); }

/* FIM roles llama.cpp detects by text when no key names them. */
static const char *const fim_texts[6][9] = { { "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
                                               "<\xef\xbd\x9c"
                                               "fim\xe2\x96\x81"
                                               "begin\xef\xbd\x9c>",
                                               "<PRE>", "\xe2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>", NULL },
                                             { "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
                                               "<\xef\xbd\x9c"
                                               "fim\xe2\x96\x81"
                                               "hole\xef\xbd\x9c>",
                                               "<SUF>", "\xe2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>", NULL },
                                             { "<|fim_middle|>", "<fim-middle>", "<fim_middle>",
                                               "<\xef\xbd\x9c"
                                               "fim\xe2\x96\x81"
                                               "end\xef\xbd\x9c>",
                                               "<MID>", "\xe2\x96\x81<MID>", "<|code_middle|>", "<|middle|>", NULL },
                                             { "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", NULL },
                                             { "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>",
                                               NULL },
                                             { "<|file_sep|>", NULL } };
static const char *const fim_keys[6][2] = { { "tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.prefix_token_id" },
                                            { "tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.suffix_token_id" },
                                            { "tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.middle_token_id" },
                                            { "tokenizer.ggml.fim_pad_token_id", NULL },
                                            { "tokenizer.ggml.fim_rep_token_id", NULL },
                                            { "tokenizer.ggml.fim_sep_token_id", NULL } };
static const char *const eog_texts[] = { "<|eot_id|>",
                                         "<|im_end|>",
                                         "<|end|>",
                                         "<|return|>",
                                         "<|call|>",
                                         "<|flush|>",
                                         "<|calls|>",
                                         "<end_of_turn>",
                                         "<|endoftext|>",
                                         "</s>",
                                         "<|eom_id|>",
                                         "<EOT>",
                                         "_<EOT>",
                                         "[EOT]",
                                         "[EOS]",
                                         "<|end_of_text|>",
                                         "<end_of_utterance>",
                                         "<eos>",
                                         "<turn|>",
                                         "<|tool_response>",
                                         "<\xef\xbd\x9c"
                                         "end\xe2\x96\x81"
                                         "of\xe2\x96\x81"
                                         "sentence\xef\xbd\x9c>",
                                         "[e~[",
                                         NULL };

static void fix_attrs(anvil_tokenizer *t, const anvil_gguf *g) {
    for (int r = 0; r < 6; ++r) {
        int32_t id = -1;
        int keyed = 0;
        for (int k = 0; k < 2; ++k)
            if (fim_keys[r][k] && get_id(g, t, fim_keys[r][k], &id) && id >= 0) keyed = 1;
        if (keyed) continue;
        for (int k = 0; fim_texts[r][k] != NULL; ++k) {
            const int32_t f = find_z(t, fim_texts[r][k]);
            if (f >= 0) {
                t->attr[f] |= TOK_ATTR_CONTROL;
                break;
            }
        }
    }
    for (int k = 0; eog_texts[k] != NULL; ++k) {
        const int32_t f = find_z(t, eog_texts[k]);
        if (f >= 0) t->attr[f] |= TOK_ATTR_CONTROL;
    }
    static const char *const gptoss[] = { "<|channel|>", "<|message|>", "<|start|>", "<|constrain|>" };
    for (int k = 0; k < 4; ++k) {
        const int32_t f = find_z(t, gptoss[k]);
        if (f >= 0) t->attr[f] = TOK_ATTR_USER_DEFINED;
    }
    const int32_t end = find_z(t, "<|end|>");
    const int has_call = find_z(t, "<|call|>") >= 0 || find_z(t, "<|calls|>") >= 0;
    if (end >= 0 && has_call && (find_z(t, "<|return|>") >= 0 || find_z(t, "<|flush|>") >= 0))
        t->attr[end] = TOK_ATTR_USER_DEFINED;
    const int32_t s_end = find_z(t, "</s>");
    if (s_end >= 0 && find_z(t, "<|tool_response>") >= 0) t->attr[s_end] = TOK_ATTR_NORMAL;
}

static const anvil_tokenizer *sort_t;
static int by_len_desc(const void *a, const void *b) {
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    const uint32_t lx = sort_t->text[x].len, ly = sort_t->text[y].len;
    if (lx != ly) return lx > ly ? -1 : 1;
    return x < y ? -1 : x > y;
}

static int build_special(anvil_tokenizer *t, const anvil_gguf *g, anvil_error *err) {
    const uint32_t want = TOK_ATTR_CONTROL | TOK_ATTR_USER_DEFINED | TOK_ATTR_UNKNOWN;
    t->special = malloc(((size_t)t->n_tokens + 1) * sizeof *t->special);
    if (t->special == NULL) return anvil__nomem(err);
    for (uint32_t id = 0; id < t->n_tokens; ++id)
        if (t->attr[id] & want) t->special[t->n_special++] = (int32_t)id;
    sort_t = t;
    qsort(t->special, t->n_special, sizeof *t->special, by_len_desc);
    sort_t = NULL;
    /* phi-3 models: special tokens eat the spaces after them, some excepted. */
    char name[256];
    get_str(g, "general.name", name, sizeof name);
    for (char *p = name; *p; ++p) *p = (char)tolower((unsigned char)*p);
    if (strstr(name, "phi-3") || strstr(name, "phi3")) {
        for (uint32_t i = 0; i < t->n_special; ++i) t->attr[t->special[i]] |= TOK_ATTR_RSTRIP;
        int32_t id = find_z(t, "</s>");
        if (id >= 0) t->attr[id] |= TOK_ATTR_RSTRIP;
        static const char *const keep[] = { "<unk>", "<s>", "<|endoftext|>" };
        for (int k = 0; k < 3; ++k)
            if ((id = find_z(t, keep[k])) >= 0) t->attr[id] &= ~(uint32_t)TOK_ATTR_RSTRIP;
    }
    return ANVIL_OK;
}

static void byte_tables(anvil_tokenizer *t) {
    static const char hex[] = "0123456789ABCDEF";
    int n = 0;
    for (int b = 0; b < 256; ++b) {
        t->byte_tok[b] = -1;
        if (t->kind == ANVIL_VOCAB_SPM) {
            const char buf[6] = { '<', '0', 'x', hex[b >> 4], hex[b & 15], '>' };
            t->byte_tok[b] = tok_find(t, buf, 6);
            if (t->byte_tok[b] < 0) {
                const char one = (char)b;
                t->byte_tok[b] = tok_find(t, &one, 1);
            }
            continue;
        }
        const char one = (char)b;
        t->byte_tok[b] = tok_find(t, &one, 1);
        const int printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        const uint32_t cp = printable ? (uint32_t)b : (uint32_t)(256 + n++);
        memset(t->byte_utf8[b], 0, 3);
        if (cp < 0x80) {
            t->byte_utf8[b][0] = (char)cp;
        } else {
            t->byte_utf8[b][0] = (char)(0xC0 | (cp >> 6));
            t->byte_utf8[b][1] = (char)(0x80 | (cp & 0x3F));
        }
    }
}

int anvil_tokenizer_from_gguf(anvil_tokenizer **out, const anvil_gguf *g, anvil_error *err) {
    *out = NULL;
    anvil_tokenizer *t = calloc(1, sizeof *t);
    if (t == NULL) return anvil__nomem(err);
    int rc = tok_vocab_read(t, g, err);
    if (rc == ANVIL_OK) rc = pick_kind(t, g, err);
    if (rc == ANVIL_OK) {
        fix_attrs(t, g);
        rc = build_special(t, g, err);
    }
    if (rc != ANVIL_OK) {
        anvil_tokenizer_free(t);
        return rc;
    }
    byte_tables(t);
    *out = t;
    return ANVIL_OK;
}

int anvil_tokenizer_open(anvil_tokenizer **out, const char *path, anvil_error *err) {
    *out = NULL;
    anvil_gguf *g = NULL;
    int rc = anvil_gguf_open(&g, path, NULL, 0, err);
    if (rc != ANVIL_OK) return rc;
    rc = anvil_tokenizer_from_gguf(out, g, err);
    if (rc != ANVIL_OK) anvil__error_prefix(err, "%s", path);
    anvil_gguf_close(g);
    return rc;
}

void anvil_tokenizer_free(anvil_tokenizer *t) {
    if (t == NULL) return;
    free(t->pool);
    free(t->text);
    free(t->score);
    free(t->attr);
    free(t->map);
    free(t->mleft);
    free(t->mright);
    free(t->mmap);
    free(t->special);
    free(t);
}

int anvil_tokenizer_info_get(const anvil_tokenizer *t, anvil_tokenizer_info *info) {
    if (t == NULL || info == NULL || info->size < sizeof(size_t)) return ANVIL_E_INVALID_ARG;
    anvil_tokenizer_info v;
    memset(&v, 0, sizeof v);
    v.size = info->size < sizeof v ? info->size : sizeof v;
    v.kind = t->kind;
    v.model = t->model;
    v.pre = t->pre_name;
    v.n_tokens = t->n_tokens;
    v.bos = t->bos;
    v.eos = t->eos;
    v.add_bos = t->add_bos;
    v.add_eos = t->add_eos;
    memcpy(info, &v, v.size);
    return ANVIL_OK;
}

const char *anvil_tokenizer_token_text(const anvil_tokenizer *t, int32_t id, size_t *len) {
    if (t == NULL || id < 0 || (uint32_t)id >= t->n_tokens) return NULL;
    if (len) *len = t->text[id].len;
    return t->pool + t->text[id].off;
}
