/* SPDX-License-Identifier: MIT */
/*
 * anvil split IN OUT_PREFIX [--split-max-size SIZE | --split-max-tensors N] [options]
 *
 * llama.cpp's gguf-split layout and option names: OUT_PREFIX-00001-of-0000N.gguf
 * ..., all metadata in part 1, split.no / split.count (u16) and
 * split.tensors.count (i32) in every part; at most 128 tensors a part unless
 * told otherwise.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "anvil/gguf.h"
#include "cli.h"
#include "cli_gguf.h"

const char cli_help_split[] =
    "usage: anvil split IN.gguf OUT_PREFIX [--split-max-size SIZE | --split-max-tensors N]\n"
    "                   [--no-tensor-first-split] [--dry-run] [--json] [--progress] [--quiet]\n"
    "\n"
    "Split IN into OUT_PREFIX-00001-of-0000N.gguf ... the way llama.cpp's gguf-split\n"
    "does, with its option names. Part 1 carries all the metadata; every part carries\n"
    "split.no, split.count and split.tensors.count. `anvil merge\n"
    "OUT_PREFIX-00001-of-0000N.gguf OUT.gguf` undoes it byte for byte.\n"
    "\n"
    "  --split-max-size SIZE    start a new part when the next tensor (padded to 32\n"
    "                           bytes) would take a part's tensor data over SIZE\n"
    "                           (2G = 2e9 bytes, 500M, 4GiB); alias --max-size\n"
    "  --split-max-tensors N    at most N tensors a part (default 128, as gguf-split);\n"
    "                           alias --max-tensors\n"
    "  --no-tensor-first-split  part 1 holds the metadata only; tensors start in part 2\n"
    "  --dry-run                print the parts (tensors, bytes) and write nothing\n"
    "  --json                   print the parts as JSON on stdout\n"
    "  --progress               a plain progress line per tensor on stderr (for logs)\n"
    "  --quiet                  no progress, no report\n"
    "\n"
    "Each part is written atomically; when one fails, the parts already written are\n"
    "removed. OUT_PREFIX naming a folder is refused: give the folder and a name, e.g.\n"
    "out/model. Parts are files renamed into place as one: '-' is refused, and so is\n"
    "a part name that is a device, a FIFO or a socket (before anything is written).\n";

typedef struct split_args {
    const char *in, *prefix;
    anvil_gguf_write_options opts;
    int dry_run;
    cli_split_parts parts; /* filled for the report */
    size_t n_tensors;
} split_args;

static int no_memory(anvil_error *err) {
    err->code = ANVIL_E_NOMEM;
    snprintf(err->message, sizeof err->message, "out of memory");
    return ANVIL_E_NOMEM;
}

void cli_split_parts_free(cli_split_parts *s) {
    free(s->written);
    free(s->paths);
    memset(s, 0, sizeof *s);
}

int cli_split_plan(const anvil_gguf *src, const anvil_gguf_write_options *opts, const char *prefix,
                   const anvil_ctx *ctx, cli_split_parts *s, anvil_error *err) {
    cli_split_parts_free(s);
    const size_t n = anvil_gguf_tensor_count(src);
    uint32_t *part_of = malloc((n ? n : 1) * sizeof *part_of);
    if (part_of == NULL) {
        return no_memory(err);
    }
    int rc = anvil_gguf_split_plan(src, opts, part_of, &s->n, err);
    if (rc == ANVIL_OK) {
        s->written = calloc(s->n, sizeof *s->written);
        s->paths = calloc(s->n, sizeof *s->paths);
        if (s->written == NULL || s->paths == NULL) {
            rc = no_memory(err);
        }
    }
    for (uint32_t p = 0; rc == ANVIL_OK && p < s->n; ++p) {
        uint64_t bytes = 0;
        rc = anvil_gguf_split_path(s->paths[p], sizeof s->paths[p], prefix, p + 1, s->n, err);
        if (rc == ANVIL_OK) {
            rc = anvil_gguf_split_part_size(src, part_of, p, s->n, ctx, &bytes, &s->written[p].tensors, err);
        }
        s->written[p].path = s->paths[p];
        s->written[p].bytes = bytes;
    }
    free(part_of);
    if (rc != ANVIL_OK) cli_split_parts_free(s);
    return rc;
}

int cli_split_write(const anvil_gguf *src, const anvil_gguf_write_options *opts, const char *prefix,
                    const anvil_ctx *ctx, cli_split_parts *s, anvil_error *err) {
    int rc = cli_split_plan(src, opts, prefix, ctx, s, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_split_write_ex(src, prefix, opts, ctx, &s->n, err);
    if (rc != ANVIL_OK) cli_split_parts_free(s);
    return rc;
}

static int split_op(const anvil_ctx *ctx, void *arg, anvil_error *err) {
    split_args *a = arg;
    anvil_gguf *src = NULL;
    int rc = anvil_gguf_open(&src, a->in, ctx, 0, err);
    if (rc == ANVIL_OK) {
        a->n_tensors = anvil_gguf_tensor_count(src);
        rc = a->dry_run ? cli_split_plan(src, &a->opts, a->prefix, ctx, &a->parts, err)
                        : cli_split_write(src, &a->opts, a->prefix, ctx, &a->parts, err);
    }
    anvil_gguf_close(src);
    return rc;
}

static int parse_limit(const char *opt, const char *v, int is_size, unsigned long long *out) {
    if (is_size ? cli_parse_size(v, out) != 0 || *out == 0 : cli_parse_count(v, 1, INT32_MAX, out) != 0) {
        return cli_usage_error("split",
                               is_size ? "%s '%s' is not a positive size (e.g. 2G, 500M, 4GiB)"
                                       : "%s '%s' is not a positive count",
                               opt, v);
    }
    return 0;
}

int cmd_split(cli_globals *g, int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        return cli_help("split");
    }
    split_args a;
    memset(&a, 0, sizeof a);
    anvil_gguf_write_options_init(&a.opts);
    cli_write_flags f = { 0, 0, 0 };
    for (int i = 1; i < argc; ++i) {
        const char *o = argv[i];
        const int is_size = strcmp(o, "--split-max-size") == 0 || strcmp(o, "--max-size") == 0;
        const int is_count = strcmp(o, "--split-max-tensors") == 0 || strcmp(o, "--max-tensors") == 0;
        if (is_size || is_count) {
            if (i + 1 >= argc) {
                return cli_usage_error("split", "%s needs a value", o);
            }
            if (is_size ? a.opts.split_max_tensors != 0 : a.opts.split_max_bytes != 0) {
                return cli_usage_error("split", "give --split-max-size or --split-max-tensors, not both");
            }
            unsigned long long v = 0;
            const int rc = parse_limit(o, argv[++i], is_size, &v);
            if (rc != 0) {
                return rc;
            }
            *(is_size ? &a.opts.split_max_bytes : &a.opts.split_max_tensors) = v;
        } else if (strcmp(o, "--no-tensor-first-split") == 0) {
            a.opts.split_flags |= ANVIL_GGUF_SPLIT_NO_TENSOR_FIRST;
        } else if (strcmp(o, "--dry-run") == 0) {
            a.dry_run = 1;
        } else if (cli_write_flag(o, &f)) {
            continue;
        } else if (o[0] == '-' && o[1] != '\0') {
            return cli_usage_error("split", "unknown option '%s'", o);
        } else if (a.in == NULL) {
            a.in = o;
        } else if (a.prefix == NULL) {
            a.prefix = o;
        } else {
            return cli_usage_error("split", "unexpected argument '%s' (needs IN and OUT_PREFIX only)", o);
        }
    }
    if (a.in == NULL || a.prefix == NULL) {
        return cli_usage_error("split", a.in == NULL ? "no IN and OUT_PREFIX given" : "no OUT_PREFIX given");
    }
    if (a.opts.split_max_bytes == 0 && a.opts.split_max_tensors == 0) {
        a.opts.split_max_tensors = ANVIL_GGUF_SPLIT_DEFAULT_MAX_TENSORS;
    }
    const int checked = cli_check_prefix("split", a.prefix);
    if (checked != 0) {
        return checked;
    }
    cli_progress progress;
    cli_progress_init(&progress, f.progress && !a.dry_run, f.quiet || f.json || a.dry_run);
    a.opts.progress = progress.mode ? cli_gguf_progress : NULL;
    a.opts.progress_arg = &progress;
    anvil_error err = { 0 };
    const int rc = cli_gguf_run(g, split_op, &a, &err);
    cli_progress_end(&progress);
    if (rc != ANVIL_OK) {
        cli_split_parts_free(&a.parts);
        return rc == ANVIL_E_NOMEM && err.message[0] == '\0' ? cli_fail("split", "out of memory")
                                                             : cli_fail_err("split", &err);
    }
    if (!f.quiet || f.json || a.dry_run) {
        cli_report_written("split", f.json, a.in, "gguf", a.n_tensors, a.parts.written, a.parts.n, a.dry_run, 0);
    }
    cli_split_parts_free(&a.parts);
    return 0;
}
