/* SPDX-License-Identifier: MIT */
/*
 * anvil imatrix MODEL TEXT [OUT] [--ctx N] [--chunks N] [--threads N]
 *               [--process-output] [--dat] [--kv-f32] [--json]
 * anvil imatrix convert IN OUT [--dat|--gguf] [--ctx N]
 * anvil imatrix merge A B... -o OUT [--dat] [--ctx N]
 * anvil imatrix stats FILE [--json]
 *
 * llama-imatrix on anvil's forward pass (anvil/imat.h), and the chores
 * around its files. llama-imatrix's spellings -m -f -o -c -t are accepted.
 * The statistics are llama-imatrix --show-statistics' (cmd_imatrix_stats.c).
 * Every file is written atomically; nothing is written when the collection
 * fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "anvil/imat.h"
#include "anvil/model.h"
#include "cli.h"
#include "cmd_imatrix.h"

const char cli_help_imatrix[] =
    "usage: anvil imatrix MODEL.gguf TEXT [OUT] [--ctx N] [--chunks N] [--threads N]\n"
    "                     [--process-output] [--dat] [--kv-f32] [--json]\n"
    "       anvil imatrix convert IN OUT [--dat|--gguf] [--ctx N]\n"
    "       anvil imatrix merge A B... -o OUT [--dat] [--ctx N]\n"
    "       anvil imatrix stats FILE [--json]\n"
    "\n"
    "llama-imatrix's importance matrix, collected on anvil's own forward pass: for\n"
    "every matrix product of a blk.* weight the sum of squares of each input column\n"
    "and the rows seen (per expert for MoE experts), over chunks of N tokens (BOS\n"
    "first), saved as llama-imatrix saves it (OUT, default imatrix.gguf; .dat or\n"
    "--dat: the legacy format). The result does not depend on --threads.\n"
    "\n"
    "  -m MODEL, -f TEXT, -o OUT   llama-imatrix's spellings of the operands\n"
    "  --ctx N, -c N     tokens a chunk (default 512, at least 16; 2 x N tokens needed)\n"
    "  --chunks N        at most N chunks (default: all)\n"
    "  --threads N, -t N worker threads (default: the config's, else every core)\n"
    "  --process-output  also collect output.weight\n"
    "  --dat             write the legacy .dat format (also when OUT ends in .dat)\n"
    "  --kv-f32          keep K and V in f32 (default: f16, as llama.cpp's default KV cache)\n"
    "  --json            one JSON document on stdout (JSON.md)\n"
    "\n"
    "convert: GGUF <-> .dat (OUT's extension, or --dat / --gguf). merge: the sums and\n"
    "counts added, as llama-imatrix --in-file A --in-file B (a matrix of another\n"
    "shape is refused). stats: per tensor what llama-imatrix --show-statistics\n"
    "prints. --ctx N: the chunk size a .dat's values are scaled by and the output's\n"
    "imatrix.chunk_size (default: a GGUF input's own, else 512; llama-imatrix uses\n"
    "its -c, 512).\n";

typedef struct im_args {
    const char *model, *text, *out;
    unsigned long long ctx, chunks, threads;
    int json, kv_f32, process_output, dat;
} im_args;

static int ends_with(const char *s, const char *suffix) {
    const size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int parse_args(int argc, char **argv, im_args *a) {
    *a = (im_args){ .ctx = 512 };
    for (int i = 1; i < argc; ++i) {
        const char *s = argv[i];
        const int has = i + 1 < argc;
        unsigned long long *num = strcmp(s, "--ctx") == 0 || strcmp(s, "-c") == 0       ? &a->ctx
                                  : strcmp(s, "--chunks") == 0                          ? &a->chunks
                                  : strcmp(s, "--threads") == 0 || strcmp(s, "-t") == 0 ? &a->threads
                                                                                        : NULL;
        const char **opd = strcmp(s, "-m") == 0   ? &a->model
                           : strcmp(s, "-f") == 0 ? &a->text
                           : strcmp(s, "-o") == 0 ? &a->out
                                                  : NULL;
        if (num != NULL) {
            if (!has || cli_parse_count(argv[i + 1], 1, 1u << 24, num) != 0) {
                return cli_usage_error("imatrix", "%s needs a whole number from 1 to %u", s, 1u << 24);
            }
            ++i;
        } else if (opd != NULL) {
            if (!has) return cli_usage_error("imatrix", "%s needs a value", s);
            *opd = argv[++i];
        } else if (strcmp(s, "--json") == 0) {
            a->json = 1;
        } else if (strcmp(s, "--kv-f32") == 0) {
            a->kv_f32 = 1;
        } else if (strcmp(s, "--process-output") == 0) {
            a->process_output = 1;
        } else if (strcmp(s, "--dat") == 0) {
            a->dat = 1;
        } else if (s[0] == '-' && s[1] != '\0') {
            return cli_usage_error("imatrix", "unknown option '%s'", s);
        } else if (a->model == NULL) {
            a->model = s;
        } else if (a->text == NULL) {
            a->text = s;
        } else if (a->out == NULL) {
            a->out = s;
        } else {
            return cli_usage_error("imatrix", "MODEL TEXT [OUT]: '%s' is one too many", s);
        }
    }
    if (a->model == NULL || a->text == NULL) return cli_usage_error("imatrix", "give MODEL and TEXT");
    if (a->out == NULL) a->out = a->dat ? "imatrix.dat" : "imatrix.gguf";
    if (ends_with(a->out, ".dat")) a->dat = 1;
    return 0;
}

static void progress(void *arg, int chunk, int n_chunks, double seconds) {
    (void)arg;
    fprintf(stderr, "\ranvil imatrix: chunk %d/%d, %.1f s, ETA %.0f s   ", chunk, n_chunks, seconds,
            seconds / chunk * (n_chunks - chunk));
    if (chunk == n_chunks) fprintf(stderr, "\n");
}

static int read_text(const char *path, const anvil_model *m, int32_t **tok, size_t *n, anvil_error *err) {
    void *text = NULL;
    size_t len = 0;
    int rc = cli_read_file(path, &text, &len, err);
    if (rc != ANVIL_OK) return rc;
    if (len > 0 && ((char *)text)[len - 1] == '\n') --len; /* llama.cpp's -f */
    rc = anvil_model_tokenize(m, text, len, tok, n, err);
    free(text);
    return rc;
}

static void report(const im_args *a, const anvil_imat *im, size_t n_tok, double seconds) {
    const uint32_t chunks = anvil_imat_chunk_count(im);
    const double tps = seconds > 0 ? (double)chunks * (double)a->ctx / seconds : 0.0;
    if (!a->json) {
        printf("%s: %zu tensors, %u chunks of %llu tokens (%zu tokens read), %.1f tokens/s\n", a->out,
               anvil_imat_count(im), chunks, a->ctx, n_tok, tps);
        return;
    }
    cli_json_begin(stdout, "imatrix");
    printf(",\"model\":");
    cli_json_string(stdout, a->model);
    printf(",\"text\":");
    cli_json_string(stdout, a->text);
    printf(",\"output\":");
    cli_json_string(stdout, a->out);
    printf(",\"format\":\"%s\",\"tokens\":%zu,\"chunks\":%u,\"ctx\":%llu,\"tensors\":%zu", a->dat ? "dat" : "gguf",
           n_tok, chunks, a->ctx, anvil_imat_count(im));
    cli_json_member_number(stdout, "seconds", "%.3f", seconds);
    cli_json_member_number(stdout, "tokens_per_s", "%.1f", tps);
    printf("}\n");
}

static int collect(cli_globals *g, const im_args *a) {
    anvil_ctx *ctx = cli_ctx(g);
    if (ctx == NULL) return CLI_EXIT_FAIL;
    if (a->threads > 0) anvil_ctx_set_threads(ctx, (unsigned)a->threads);
    anvil_error err;
    memset(&err, 0, sizeof err);
    const anvil_model_opts mo = { .size = sizeof mo, .kv_f16 = !a->kv_f32 };
    anvil_model *m = NULL;
    anvil_imat *im = NULL;
    int32_t *tok = NULL;
    size_t n = 0;
    double seconds = 0.0;
    anvil_model_info info = { .size = sizeof info };
    int rc = anvil_model_open(&m, ctx, a->model, &mo, &err);
    if (rc == ANVIL_OK) rc = anvil_model_get_info(m, &info);
    if (rc == ANVIL_OK) rc = read_text(a->text, m, &tok, &n, &err);
    if (rc == ANVIL_OK && info.n_ctx_train > 0 && a->ctx > info.n_ctx_train) {
        fprintf(stderr, "anvil imatrix: warning: the model was trained on only %u context tokens (%llu specified)\n",
                info.n_ctx_train, a->ctx);
    }
    if (rc == ANVIL_OK) rc = anvil_imat_new(&im, &err);
    if (rc == ANVIL_OK) rc = anvil_imat_add_dataset(im, a->text, &err);
    const anvil_imat_opts o = { .size = sizeof o,
                                .n_ctx = (int)a->ctx,
                                .n_chunks = (int)a->chunks,
                                .process_output = a->process_output,
                                .progress = !a->json && isatty(2) ? progress : NULL };
    if (rc == ANVIL_OK) rc = anvil_imat_collect(m, tok, n, &o, im, &seconds, &err);
    if (rc == ANVIL_OK) rc = anvil_imat_save(im, a->out, a->dat ? ANVIL_IMAT_DAT : ANVIL_IMAT_GGUF, &err);
    int exit_code = CLI_EXIT_OK;
    if (rc != ANVIL_OK) exit_code = cli_fail_err("imatrix", &err);
    else report(a, im, n, seconds);
    anvil_imat_free(im);
    free(tok);
    anvil_model_close(m);
    return exit_code;
}

int cmd_imatrix(cli_globals *g, int argc, char **argv) {
    if (cli_wants_help(argc, argv)) return cli_help("imatrix");
    if (argc >= 2 && strcmp(argv[1], "convert") == 0) return cli_imatrix_convert(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "merge") == 0) return cli_imatrix_merge(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "stats") == 0) return cli_imatrix_stats(argc - 1, argv + 1);
    im_args a;
    const int parsed = parse_args(argc, argv, &a);
    if (parsed != 0) return parsed;
    cli_set_json(a.json);
    return collect(g, &a);
}
