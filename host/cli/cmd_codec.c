/* SPDX-License-Identifier: MIT */
/* anvil codec list | encode TYPE IN.f32 OUT.bin [--imatrix FILE] | decode TYPE IN.bin OUT.f32 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char cli_help_codec[] = "usage: anvil codec list [--json]\n"
                              "       anvil codec encode TYPE IN.f32 OUT.bin [--imatrix FILE] [--json]\n"
                              "       anvil codec decode TYPE IN.bin OUT.f32 [--json]\n"
                              "\n"
                              "list    every ggml type and loaded third-party codec: geometry, bits/weight,\n"
                              "        whether it can encode+decode, decode only (and why), or is not loaded,\n"
                              "        and what it does with an importance matrix: uses, needs (encodes only\n"
                              "        with one), ignored (accepted, no effect, as in ggml), no (refused), or\n"
                              "        - (no encoder at all).\n"
                              "encode  IN.f32 is raw little-endian float32; its length must be a whole number\n"
                              "        of the type's blocks. NaN/Inf are refused, naming the first bad index.\n"
                              "        --imatrix FILE: importance weights, raw little-endian float32, one per\n"
                              "        column (finite, >= 0); their count is the row length, a whole number of\n"
                              "        blocks that divides IN's length. The bytes are ggml_quantize_chunk's\n"
                              "        with that matrix (llama-quantize --imatrix, per tensor). IQ2_XXS, IQ2_XS\n"
                              "        and IQ1_S need one (as in llama.cpp): without it, a usage error (2).\n"
                              "decode  IN.bin is raw blocks of TYPE; OUT.f32 gets raw little-endian float32.\n"
                              "TYPE is ggml's spelling, case-insensitive: q4_0, q8_0, q4_K, iq4_xs, tq2_0, f16 ...\n"
                              "OUT is written atomically (a temporary file renamed into place); '-' (stdout), a\n"
                              "device or a FIFO is written into (`anvil help`, files).\n"
                              "\n"
                              "  --json  print the result (or the error) as one JSON object on stdout\n";

/* What encoding with an importance matrix does for a codec (NULL: a float
 * type the host encodes, which ignores it as ggml does). */
static const char *imatrix_use(const anvil_codec *c) {
    if (c == NULL || (c->flags & ANVIL_CODEC_IMATRIX_UNUSED)) return "ignored";
    if (c->encode == NULL && c->encode_rows == NULL) return "-"; /* cannot encode at all */
    if (c->flags & ANVIL_CODEC_NEEDS_IMATRIX) return "needs";
    return c->encode_rows != NULL ? "uses" : "no";
}

static void list_row(const anvil_ctx *ctx, const anvil_type_info *t, int json, int *first) {
    const anvil_codec *c = anvil_ctx_codec(ctx, t->id);
    const int builtin_float = t->id == ANVIL_TYPE_F32 || t->id == ANVIL_TYPE_F16 || t->id == ANVIL_TYPE_BF16;
    const char *status;
    const char *note = "";
    const char *imatrix = builtin_float || c != NULL ? imatrix_use(c) : "";
    if (builtin_float) {
        status = "encode+decode";
        note = "built into the host";
    } else if (!t->is_quantized) {
        return; /* integer types are storage only */
    } else if (c == NULL) {
        status = "not loaded";
        note = t->family_plugin ? t->family_plugin : "";
    } else if (c->encode == NULL && c->encode_rows == NULL) {
        status = "decode-only";
        note = c->encode_note ? c->encode_note : "";
    } else {
        status = "encode+decode";
        note = (c->flags & ANVIL_CODEC_ACTIVATION)      ? "activation format"
               : (c->flags & ANVIL_CODEC_NEEDS_IMATRIX) ? "only with --imatrix"
                                                        : "";
    }
    const double bpw = 8.0 * t->block_bytes / t->block_elems;
    anvil_type_info act;
    const char *act_name = "";
    if (c != NULL && anvil_type_lookup(ctx, c->act_type, &act, NULL) == ANVIL_OK) act_name = act.name;
    if (json) {
        printf("%s{\"type\":", *first ? "" : ",");
        cli_json_string(stdout, t->name);
        printf(",\"id\":%u,\"block_elems\":%u,\"block_bytes\":%u,\"bits_per_weight\":%.4f,\"status\":", t->id,
               t->block_elems, t->block_bytes, bpw);
        cli_json_string(stdout, status);
        printf(",\"act\":");
        cli_json_string(stdout, act_name);
        printf(",\"imatrix\":");
        cli_json_string(stdout, imatrix);
        printf(",\"note\":");
        cli_json_string(stdout, note);
        printf("}");
    } else {
        printf("  %-9s %4u %5u %4u %7.4f  %-6s %-13s %-7s %s\n", cli_esc(t->name), t->id, t->block_elems,
               t->block_bytes, bpw, cli_esc(act_name), status, imatrix, cli_esc(note));
    }
    *first = 0;
}

static int cmd_list(cli_globals *g, int json) {
    anvil_ctx *ctx = cli_ctx(g);
    if (ctx == NULL) return 1;
    int first = 1;
    if (json) {
        cli_json_begin(stdout, "codec list");
        printf(",\"types\":[");
    } else {
        printf("  %-9s %4s %5s %4s %7s  %-6s %-13s %-7s %s\n", "type", "id", "block", "bytes", "bits/w", "act",
               "status", "imatrix", "note");
    }
    for (uint32_t id = 0; id < ANVIL_TYPE_GGML_COUNT; ++id) {
        anvil_type_info t;
        if (anvil_type_builtin(id, &t, NULL) == ANVIL_OK) list_row(ctx, &t, json, &first);
    }
    for (uint32_t id = ANVIL_TYPE_THIRD_PARTY_FIRST; id <= ANVIL_TYPE_THIRD_PARTY_LAST; ++id) {
        anvil_type_info t;
        if (anvil_ctx_codec(ctx, id) != NULL && anvil_type_lookup(ctx, id, &t, NULL) == ANVIL_OK) {
            list_row(ctx, &t, json, &first);
        }
    }
    if (json) printf("]}\n");
    return 0;
}

/* A type name from the command line: unknown is a usage error (2). */
static int resolve_type(cli_globals *g, const char *cmd, const char *name, uint32_t *id, anvil_type_info *t) {
    anvil_error err;
    anvil_ctx *ctx = cli_ctx(g);
    if (ctx == NULL) return 1;
    if (anvil_type_from_name(ctx, name, id, &err) != ANVIL_OK) return cli_usage_error(cmd, "%s", err.message);
    if (anvil_type_lookup(ctx, *id, t, &err) != ANVIL_OK) return cli_fail_err(cmd, &err);
    return 0;
}

/* What encode/decode wrote, as text on stderr or JSON on stdout. */
static void report(int json, const char *cmd, const anvil_type_info *t, const char *in, const char *out,
                   size_t values, unsigned long long bytes) {
    const double bpw = values ? 8.0 * (double)bytes / (double)values : 0.0;
    if (json) {
        cli_json_begin(stdout, cmd);
        printf(",\"type\":");
        cli_json_string(stdout, t->name);
        printf(",\"input\":");
        cli_json_string(stdout, in);
        printf(",\"outputs\":[{\"path\":");
        cli_json_string(stdout, out);
        printf(",\"bytes\":%llu}],\"values\":%zu,\"bits_per_weight\":%.4f}\n",
               cmd[6] == 'e' ? bytes : (unsigned long long)values * 4, values, bpw);
    } else if (cmd[6] == 'e') {
        fprintf(stderr, "encoded %zu values as %s: %llu bytes (%.4f bits/weight)\n", values, t->name, bytes, bpw);
    } else {
        fprintf(stderr, "decoded %zu %s values\n", values, t->name);
    }
}

/* Load --imatrix FILE for type t and input of n values: one finite,
 * non-negative weight per column, their count a whole number of blocks that
 * divides n. On success *w (malloc'd) and *n_per_row are set. */
static int load_imatrix(const char *path, const anvil_type_info *t, size_t n, float **w, size_t *n_per_row) {
    anvil_error err;
    void *data;
    size_t size;
    if (cli_read_file(path, &data, &size, &err) != ANVIL_OK) return cli_fail_err("codec encode", &err);
    const char *what = NULL;
    const size_t nw = size / 4;
    if (size % 4 != 0) {
        what = "is not a whole number of float32 weights";
    } else if (nw == 0) {
        what = "is empty: it needs one importance weight per column";
    } else if (nw % t->block_elems != 0) {
        cli_fail("codec encode",
                 "--imatrix %s: %zu weights (one per column) are not a whole number of %u-element %s blocks", path,
                 nw, t->block_elems, t->name);
    } else if (n % nw != 0) {
        cli_fail("codec encode",
                 "--imatrix %s: %zu weights (one per column) do not split the %zu input values into whole rows", path,
                 nw, n);
    } else {
        const float *f = data;
        for (size_t j = 0; j < nw; ++j) {
            if (!(f[j] >= 0.0f) || isinf(f[j])) {
                cli_fail(
                    "codec encode",
                    "--imatrix %s: the weight of column %zu is %g; importance weights must be finite and non-negative",
                    path, j, (double)f[j]);
                free(data);
                return 1;
            }
        }
        *w = data;
        *n_per_row = nw;
        return 0;
    }
    if (what != NULL) cli_fail("codec encode", "--imatrix %s: %zu bytes %s", path, size, what);
    free(data);
    return 1;
}

/* A format that encodes only with an importance matrix, asked without one:
 * a missing option, so a usage error (2), as llama-quantize refuses it. */
static int needs_imatrix(const char *type) {
    return cli_usage_error("codec encode",
                           "%s needs an importance matrix: it is a very low-bit format that ggml quantizes only "
                           "with one (without it the result is garbage, so llama.cpp refuses it); pass --imatrix "
                           "FILE (raw float32, one weight per column, e.g. a tensor's entry from llama-imatrix)",
                           type);
}

static int cmd_encode(cli_globals *g, const char *type, const char *in, const char *out, const char *imatrix_path,
                      int json) {
    uint32_t id;
    anvil_type_info t;
    int rc = resolve_type(g, "codec encode", type, &id, &t);
    if (rc != 0) return rc;
    const anvil_codec *c = anvil_ctx_codec(g->ctx, id);
    if (imatrix_path == NULL && c != NULL && (c->flags & ANVIL_CODEC_NEEDS_IMATRIX)) return needs_imatrix(t.name);
    anvil_error err;
    void *data;
    size_t size;
    if (cli_read_file(in, &data, &size, &err) != ANVIL_OK) return cli_fail_err("codec encode", &err);
    if (size % 4 != 0) {
        free(data);
        return cli_fail("codec encode", "%s: %zu bytes is not a whole number of float32 values", in, size);
    }
    const size_t n = size / 4;
    uint64_t bytes = 0;
    if (anvil_type_bytes(&t, n, &bytes, &err) != ANVIL_OK) {
        free(data);
        return cli_fail("codec encode", "%s: %s (%s)", in, err.message, anvil_strerror(err.code));
    }
    float *w = NULL;
    size_t n_per_row = n;
    if (imatrix_path != NULL && load_imatrix(imatrix_path, &t, n, &w, &n_per_row) != 0) {
        free(data);
        return 1;
    }
    void *blocks = malloc(bytes ? bytes : 1);
    if (blocks == NULL) {
        free(data);
        free(w);
        return cli_fail("codec encode", "out of memory (%llu bytes)", (unsigned long long)bytes);
    }
    /* One row without a matrix; with one, rows as long as the matrix. */
    const size_t nrows = n_per_row ? n / n_per_row : 0;
    rc = anvil_encode_rows(g->ctx, id, data, nrows, n_per_row, w, blocks, bytes, &err);
    free(data);
    free(w);
    if (rc == ANVIL_E_NEEDS_IMATRIX && imatrix_path == NULL) { /* a third-party codec without the flag */
        free(blocks);
        return needs_imatrix(t.name);
    }
    if (rc == ANVIL_OK) rc = cli_write_file_atomic(out, blocks, bytes, &err);
    free(blocks);
    if (rc != ANVIL_OK) return cli_fail_err("codec encode", &err);
    report(json, "codec encode", &t, in, out, n, bytes);
    if (imatrix_path != NULL && !json) {
        const char *use = imatrix_use(anvil_ctx_codec(g->ctx, id));
        fprintf(stderr, "importance matrix: %zu rows of %zu; %s\n", nrows, n_per_row,
                strcmp(use, "ignored") == 0 ? "this format ignores it (as ggml does)"
                                            : "weighted as ggml_quantize_chunk");
    }
    return 0;
}

static int cmd_decode(cli_globals *g, const char *type, const char *in, const char *out, int json) {
    uint32_t id;
    anvil_type_info t;
    int rc = resolve_type(g, "codec decode", type, &id, &t);
    if (rc != 0) return rc;
    anvil_error err;
    void *data;
    size_t size;
    if (cli_read_file(in, &data, &size, &err) != ANVIL_OK) return cli_fail_err("codec decode", &err);
    if (size % t.block_bytes != 0) {
        free(data);
        return cli_fail("codec decode", "%s: %zu bytes is not a whole number of %u-byte %s blocks", in, size,
                        t.block_bytes, t.name);
    }
    const size_t n = size / t.block_bytes * t.block_elems;
    float *f = malloc(n ? n * sizeof *f : 1);
    if (f == NULL) {
        free(data);
        return cli_fail("codec decode", "out of memory");
    }
    rc = anvil_decode(g->ctx, id, data, size, f, n, &err);
    free(data);
    if (rc == ANVIL_OK) rc = cli_write_file_atomic(out, f, n * sizeof *f, &err);
    free(f);
    if (rc != ANVIL_OK) return cli_fail_err("codec decode", &err);
    report(json, "codec decode", &t, in, out, n, size);
    return 0;
}

int cmd_codec(cli_globals *g, int argc, char **argv) {
    if (cli_wants_help(argc, argv)) return cli_help("codec");
    if (argc < 2) return cli_usage_error("codec", "say what to do: list, encode or decode");
    const char *sub = argv[1];
    const int is_list = strcmp(sub, "list") == 0;
    const int is_coder = strcmp(sub, "encode") == 0 || strcmp(sub, "decode") == 0;
    if (!is_list && !is_coder)
        return cli_usage_error("codec", "unknown subcommand '%s' (list, encode or decode)", sub);
    char cmd[32];
    snprintf(cmd, sizeof cmd, "codec %s", sub);
    const char *pos[3] = { NULL, NULL, NULL };
    const char *imatrix = NULL;
    int n_pos = 0, json = 0;
    for (int i = 2; i < argc; ++i) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--imatrix") == 0 && sub[0] == 'e') {
            if (i + 1 >= argc || imatrix != NULL) return cli_usage_error(cmd, "--imatrix takes one FILE, once");
            imatrix = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return cli_usage_error(cmd, "unknown option '%s'", argv[i]);
        } else if (n_pos < (is_list ? 0 : 3)) {
            pos[n_pos++] = argv[i];
        } else {
            return cli_usage_error(cmd, "unexpected argument '%s'", argv[i]);
        }
    }
    if (is_list) return cmd_list(g, json);
    if (n_pos < 3) {
        static const char *const names[] = { "TYPE", "IN", "OUT" };
        return cli_usage_error(cmd, "missing %s (needs TYPE IN OUT)", names[n_pos]);
    }
    const int rc = cli_check_output(cmd, pos[2], NULL, NULL);
    if (rc != 0) return rc;
    return sub[0] == 'e' ? cmd_encode(g, pos[0], pos[1], pos[2], imatrix, json)
                         : cmd_decode(g, pos[0], pos[1], pos[2], json);
}
