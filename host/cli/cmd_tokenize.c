/* SPDX-License-Identifier: MIT */
/*
 * anvil tokenize MODEL.gguf [TEXT | -f FILE] [--ids] [--no-bos] [--parse-special]
 *
 * Text to token ids with the model's own tokenizer, as llama.cpp's
 * llama_tokenize gives them (BOS/EOS as the GGUF says unless --no-bos):
 * one line per token (id and its text) or, with --ids, the ids alone on
 * one line. Without TEXT or -f the text is read from standard input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/tokenize.h"
#include "cli.h"

const char cli_help_tokenize[] =
    "usage: anvil tokenize MODEL.gguf [TEXT | -f FILE] [--ids] [--no-bos] [--parse-special]\n"
    "\n"
    "Tokenize TEXT (or FILE's bytes, or standard input) with MODEL's tokenizer, giving\n"
    "the ids llama.cpp's llama_tokenize gives: SentencePiece ('llama') and byte-level\n"
    "BPE ('gpt2' with the llama3 or qwen2 pre-tokenizer) vocabularies.\n"
    "\n"
    "  -f FILE          read the text from FILE\n"
    "  --ids            print the ids only, space-separated, on one line\n"
    "  --no-bos         add no BOS/EOS (llama_tokenize's add_special = false)\n"
    "  --parse-special  text such as <|im_start|> becomes that control token\n"
    "  --json           one JSON document: model, count, ids (host/cli/JSON.md)\n";

static int read_stdin(char **out, size_t *len) {
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    if (b == NULL) return -1;
    for (;;) {
        if (n == cap) {
            char *p = realloc(b, cap *= 2);
            if (p == NULL) {
                free(b);
                return -1;
            }
            b = p;
        }
        const size_t r = fread(b + n, 1, cap - n, stdin);
        n += r;
        if (r == 0) break;
    }
    *out = b;
    *len = n;
    return 0;
}

static void print_ids(const anvil_tokenizer *t, const char *model, const int32_t *ids, size_t n, int ids_only,
                      int json) {
    if (json) {
        cli_json_begin(stdout, "tokenize");
        printf(",\"model\":");
        cli_json_string(stdout, model);
        printf(",\"count\":%zu,\"ids\":[", n);
        for (size_t i = 0; i < n; ++i) printf("%s%d", i ? "," : "", ids[i]);
        printf("]}\n");
        return;
    }
    if (ids_only) {
        for (size_t i = 0; i < n; ++i) printf("%s%d", i ? " " : "", ids[i]);
        printf("\n");
        return;
    }
    for (size_t i = 0; i < n; ++i) {
        size_t len = 0;
        const char *s = anvil_tokenizer_token_text(t, ids[i], &len);
        printf("%6d  '", ids[i]);
        cli_text_bytes(stdout, s, len);
        printf("'\n");
    }
}

int cmd_tokenize(cli_globals *g, int argc, char **argv) {
    (void)g;
    if (cli_wants_help(argc, argv)) return cli_help("tokenize");
    const char *model = NULL, *text = NULL, *file = NULL;
    int ids_only = 0, json = 0;
    unsigned flags = ANVIL_TOKENIZE_ADD_SPECIAL;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (strcmp(a, "-f") == 0 || strcmp(a, "--file") == 0) {
            if (++i >= argc) return cli_usage_error("tokenize", "%s needs a file", a);
            file = argv[i];
        } else if (strcmp(a, "--ids") == 0) {
            ids_only = 1;
        } else if (strcmp(a, "--no-bos") == 0) {
            flags &= ~ANVIL_TOKENIZE_ADD_SPECIAL;
        } else if (strcmp(a, "--parse-special") == 0) {
            flags |= ANVIL_TOKENIZE_PARSE_SPECIAL;
        } else if (strcmp(a, "--json") == 0) {
            json = 1;
        } else if (a[0] == '-' && a[1] != '\0') {
            return cli_usage_error("tokenize", "unknown option '%s'", a);
        } else if (model == NULL) {
            model = a;
        } else if (text == NULL) {
            text = a;
        } else {
            return cli_usage_error("tokenize", "one TEXT only (quote it), or -f FILE");
        }
    }
    if (model == NULL) return cli_usage_error("tokenize", "MODEL.gguf is missing");
    if (text != NULL && file != NULL) return cli_usage_error("tokenize", "TEXT and -f FILE: give one");
    anvil_error err = { 0 };
    char *buf = NULL;
    size_t len = 0;
    if (file != NULL) {
        if (cli_read_file(file, (void **)&buf, &len, &err) != ANVIL_OK) return cli_fail_err("tokenize", &err);
    } else if (text != NULL) {
        len = strlen(text);
    } else if (read_stdin(&buf, &len) != 0) {
        return cli_fail("tokenize", "out of memory reading standard input");
    }
    const char *src = buf ? buf : text;
    anvil_tokenizer *t = NULL;
    int32_t *ids = NULL;
    size_t n = 0;
    int rc = anvil_tokenizer_open(&t, model, &err);
    if (rc == ANVIL_OK) {
        rc = anvil_tokenize(t, src, len, flags, NULL, 0, &n, &err);
        if (rc == ANVIL_E_BUFFER_TOO_SMALL) {
            ids = malloc(n * sizeof *ids);
            rc = ids ? anvil_tokenize(t, src, len, flags, ids, n, &n, &err) : ANVIL_E_NOMEM;
        }
    }
    int ret = 0;
    if (rc == ANVIL_OK) print_ids(t, model, ids, n, ids_only, json);
    else
        ret = rc == ANVIL_E_NOMEM && err.code == 0 ? cli_fail("tokenize", "out of memory")
                                                   : cli_fail_err("tokenize", &err);
    free(ids);
    free(buf);
    anvil_tokenizer_free(t);
    return ret;
}
