/* anvil codec list | encode TYPE IN.f32 OUT.bin | decode TYPE IN.bin OUT.f32 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int usage(FILE *f) {
    fprintf(f,
            "usage: anvil codec list [--json]\n"
            "       anvil codec encode TYPE IN.f32 OUT.bin\n"
            "       anvil codec decode TYPE IN.bin OUT.f32\n"
            "\n"
            "list    every ggml type and loaded third-party codec: geometry, bits/weight, and\n"
            "        whether it can encode+decode, decode only (and why), or is not loaded.\n"
            "encode  IN.f32 is raw little-endian float32; its length must be a whole number\n"
            "        of the type's blocks. NaN/Inf are refused, naming the first bad index.\n"
            "decode  IN.bin is raw blocks of TYPE; OUT.f32 gets raw little-endian float32.\n"
            "TYPE is ggml's spelling, case-insensitive: q4_0, q8_0, q4_K, iq4_xs, tq2_0, f16 ...\n"
            "OUT is written atomically (a temporary file renamed into place).\n");
    return f == stdout ? 0 : 2;
}

static void list_row(const anvil_ctx *ctx, const anvil_type_info *t, int json, int *first) {
    const anvil_codec *c = anvil_ctx_codec(ctx, t->id);
    const int builtin_float = t->id == ANVIL_TYPE_F32 || t->id == ANVIL_TYPE_F16 || t->id == ANVIL_TYPE_BF16;
    const char *status;
    const char *note = "";
    if (builtin_float) {
        status = "encode+decode";
        note = "built into the host";
    } else if (!t->is_quantized) {
        return; /* integer types are storage only */
    } else if (c == NULL) {
        status = "not loaded";
        note = t->family_plugin ? t->family_plugin : "";
    } else if (c->encode == NULL) {
        status = "decode-only";
        note = c->encode_note ? c->encode_note : "";
    } else {
        status = "encode+decode";
        note = (c->flags & ANVIL_CODEC_ACTIVATION) ? "activation format" : "";
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
        printf(",\"note\":");
        cli_json_string(stdout, note);
        printf("}");
    } else {
        printf("  %-9s %4u %5u %4u %7.4f  %-6s %-13s %s\n", t->name, t->id, t->block_elems, t->block_bytes, bpw,
               act_name, status, note);
    }
    *first = 0;
}

static int cmd_list(cli_globals *g, int json) {
    anvil_ctx *ctx = cli_ctx(g);
    if (ctx == NULL) return 1;
    int first = 1;
    if (json) printf("[");
    else printf("  %-9s %4s %5s %4s %7s  %-6s %-13s %s\n", "type", "id", "block", "bytes", "bits/w", "act", "status", "note");
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
    if (json) printf("]\n");
    return 0;
}

static int resolve_type(cli_globals *g, const char *name, uint32_t *id, anvil_type_info *t) {
    anvil_error err;
    anvil_ctx *ctx = cli_ctx(g);
    if (ctx == NULL) return 1;
    if (anvil_type_from_name(ctx, name, id, &err) != ANVIL_OK || anvil_type_lookup(ctx, *id, t, &err) != ANVIL_OK) {
        return cli_fail_err("codec", &err);
    }
    return 0;
}

static int cmd_encode(cli_globals *g, const char *type, const char *in, const char *out) {
    uint32_t id;
    anvil_type_info t;
    if (resolve_type(g, type, &id, &t) != 0) return 1;
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
        fprintf(stderr, "anvil codec encode: %s: %s (%s)\n", in, err.message, anvil_strerror(err.code));
        return 1;
    }
    void *blocks = malloc(bytes ? bytes : 1);
    if (blocks == NULL) {
        free(data);
        return cli_fail("codec encode", "out of memory (%llu bytes)", (unsigned long long)bytes);
    }
    int rc = anvil_encode(g->ctx, id, data, n, blocks, bytes, &err);
    free(data);
    if (rc == ANVIL_OK) rc = cli_write_file_atomic(out, blocks, bytes, &err);
    free(blocks);
    if (rc != ANVIL_OK) return cli_fail_err("codec encode", &err);
    fprintf(stderr, "encoded %zu values as %s: %llu bytes (%.4f bits/weight)\n", n, t.name, (unsigned long long)bytes,
            n ? 8.0 * (double)bytes / (double)n : 0.0);
    return 0;
}

static int cmd_decode(cli_globals *g, const char *type, const char *in, const char *out) {
    uint32_t id;
    anvil_type_info t;
    if (resolve_type(g, type, &id, &t) != 0) return 1;
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
    int rc = anvil_decode(g->ctx, id, data, size, f, n, &err);
    free(data);
    if (rc == ANVIL_OK) rc = cli_write_file_atomic(out, f, n * sizeof *f, &err);
    free(f);
    if (rc != ANVIL_OK) return cli_fail_err("codec decode", &err);
    fprintf(stderr, "decoded %zu %s values\n", n, t.name);
    return 0;
}

int cmd_codec(cli_globals *g, int argc, char **argv) {
    if (argc < 2) return usage(stderr);
    if (cli_wants_help(argc, argv)) return usage(stdout);
    const char *sub = argv[1];
    if (strcmp(sub, "list") == 0) {
        int json = argc == 3 && strcmp(argv[2], "--json") == 0;
        if (argc > 3 || (argc == 3 && !json)) return usage(stderr);
        return cmd_list(g, json);
    }
    if (strcmp(sub, "encode") == 0 || strcmp(sub, "decode") == 0) {
        if (argc != 5) {
            fprintf(stderr, "anvil codec %s: needs TYPE IN OUT\n", sub);
            return usage(stderr);
        }
        return sub[0] == 'e' ? cmd_encode(g, argv[2], argv[3], argv[4]) : cmd_decode(g, argv[2], argv[3], argv[4]);
    }
    fprintf(stderr, "anvil codec: unknown subcommand '%s'\n", sub);
    return usage(stderr);
}
