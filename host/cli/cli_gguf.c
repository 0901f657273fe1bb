/* SPDX-License-Identifier: MIT */
/* Helpers shared by the GGUF subcommands. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "anvil/safetensors.h"
#include "anvil/transcode.h"
#include "cli_gguf.h"

cli_sniff cli_gguf_sniff(const char *path) {
    unsigned char b[ANVIL_ST_SNIFF_BYTES];
    /* Only a regular file is looked into. O_NONBLOCK: opening a FIFO to read
     * would wait for a writer; the reader that follows refuses it by name. */
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0) {
        return CLI_SNIFF_UNKNOWN;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return CLI_SNIFF_UNKNOWN;
    }
    size_t n = 0;
    while (n < sizeof b) {
        const ssize_t k = read(fd, b + n, sizeof b - n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        n += (size_t)k;
    }
    close(fd);
    if (n >= 4 && memcmp(b, "GGUF", 4) == 0) {
        return CLI_SNIFF_GGUF;
    }
    /* safetensors: a little-endian u64 header length, then JSON. */
    return anvil_st_sniff(b, n) ? CLI_SNIFF_SAFETENSORS : CLI_SNIFF_UNKNOWN;
}

int cli_gguf_run(cli_globals *g, cli_gguf_op op, void *arg, anvil_error *err) {
    int rc = op(NULL, arg, err);
    if (rc == ANVIL_E_GGUF_TENSOR_TYPE) {
        const anvil_ctx *ctx = cli_ctx(g);
        if (ctx != NULL) {
            rc = op(ctx, arg, err);
        }
    }
    return rc;
}

void cli_report_written(const char *cmd, int json, const char *input, const char *format, size_t n_tensors,
                        const cli_written *out, size_t n_out, int dry_run, int replaced_input) {
    if (json) {
        cli_json_begin(stdout, cmd);
        fputs(",\"input\":", stdout);
        cli_json_string(stdout, input);
        printf(",\"format\":\"%s\",\"n_tensors\":%zu,\"dry_run\":%s,\"replaced_input\":%s,\"outputs\":[", format,
               n_tensors, dry_run ? "true" : "false", replaced_input ? "true" : "false");
        for (size_t i = 0; i < n_out; ++i) {
            printf("%s{\"path\":", i ? "," : "");
            cli_json_string(stdout, out[i].path);
            if (out[i].bytes == CLI_BYTES_UNKNOWN) {
                printf(",\"bytes\":null,\"n_tensors\":%zu}", out[i].tensors);
            } else {
                printf(",\"bytes\":%llu,\"n_tensors\":%zu}", out[i].bytes, out[i].tensors);
            }
        }
        printf("]}\n");
        return;
    }
    const char *verb = dry_run ? "would write" : replaced_input ? "replaced (atomically)" : "wrote";
    const char *shown = strcmp(format, "gguf") == 0 ? "GGUF v3" : format;
    if (n_out == 1 && out[0].bytes == CLI_BYTES_UNKNOWN) {
        printf("%s %s (%s, %zu tensors)\n", verb, cli_esc(out[0].path), shown, out[0].tensors);
        return;
    }
    if (n_out == 1) {
        printf("%s %s (%llu bytes, %s, %zu tensors)%s\n", verb, cli_esc(out[0].path), out[0].bytes, shown,
               out[0].tensors, replaced_input ? ": the input was rewritten in place" : "");
        return;
    }
    printf("%s %zu parts (%zu tensors):\n", verb, n_out, n_tensors);
    for (size_t i = 0; i < n_out; ++i) {
        printf("  %s  %zu tensors, %llu bytes\n", cli_esc(out[i].path), out[i].tensors, out[i].bytes);
    }
}

void cli_report_gguf_output(const char *cmd, int json, const char *input, const char *out, int replaced_input,
                            const anvil_ctx *ctx, size_t streamed_tensors) {
    anvil_gguf *w = NULL;
    cli_written wr = { out, 0, 0 };
    struct stat st;
    if (stat(out, &st) != 0 || !S_ISREG(st.st_mode) || strcmp(out, "-") == 0) {
        /* Written into a device, a FIFO or standard output: nothing to read back. */
        wr.bytes = CLI_BYTES_UNKNOWN;
        wr.tensors = streamed_tensors;
    } else if (anvil_gguf_open(&w, out, ctx, ANVIL_GGUF_OPEN_SINGLE_PART, NULL) == ANVIL_OK) {
        wr.bytes = anvil_gguf_file_size(w);
        wr.tensors = anvil_gguf_tensor_count(w);
        anvil_gguf_close(w);
    }
    cli_report_written(cmd, json, input, "gguf", wr.tensors, &wr, 1, 0, replaced_input);
}

static void quoted(FILE *f, const char *p, size_t len, size_t max) {
    fputc('"', f);
    const size_t n = len < max ? len : max;
    for (size_t i = 0, start = 0; i <= n; ++i) {
        if (i == n || p[i] == '"') {
            cli_text_bytes(f, p + start, i - start);
            if (i < n) fputs("\\\"", f);
            start = i + 1;
        }
    }
    fputc('"', f);
    if (len > n) {
        fprintf(f, "...(%zu bytes)", len);
    }
}

void cli_gguf_scalar(FILE *f, const anvil_gguf_value *v, cli_value_style style, size_t str_max) {
    switch (v->kind) {
    case ANVIL_GGUF_KIND_INT:
        if (v->in_i64) {
            fprintf(f, "%" PRId64, v->i);
        } else {
            fprintf(f, "%" PRIu64, v->u);
        }
        break;
    case ANVIL_GGUF_KIND_FLOAT:
        if (style == CLI_VALUE_JSON) {
            cli_json_number(f, v->f);
        } else {
            fprintf(f, "%.9g", v->f);
        }
        break;
    case ANVIL_GGUF_KIND_BOOL: fputs(v->b ? "true" : "false", f); break;
    case ANVIL_GGUF_KIND_STRING:
        if (style == CLI_VALUE_JSON) {
            cli_json_bytes(f, v->s.ptr, v->s.len);
        } else if (style == CLI_VALUE_RAW) {
            fwrite(v->s.ptr, 1, v->s.len, f);
        } else {
            quoted(f, v->s.ptr, v->s.len, str_max);
        }
        break;
    case ANVIL_GGUF_KIND_ARRAY: fputs(style == CLI_VALUE_JSON ? "null" : "[...]", f); break;
    }
}

void cli_gguf_array(FILE *f, const anvil_gguf_array *a, uint64_t n, cli_value_style style, size_t str_max) {
    for (uint64_t i = 0; i < n; ++i) {
        anvil_gguf_value e;
        if (anvil_gguf_array_get(a, i, &e) != ANVIL_OK) {
            break;
        }
        if (i > 0) {
            fputs(style == CLI_VALUE_JSON ? "," : ", ", f);
        }
        cli_gguf_scalar(f, &e, style == CLI_VALUE_RAW ? CLI_VALUE_TEXT : style, str_max);
    }
}

void cli_gguf_write_options(const cli_write_flags *f, cli_progress *p, anvil_gguf_write_options *o) {
    cli_progress_init(p, f->progress, f->quiet || f->json);
    anvil_gguf_write_options_init(o);
    o->progress = cli_gguf_progress; /* counts the tensors even when nothing is shown */
    o->progress_arg = p;
}

typedef struct rewrite_args {
    cli_gguf_rewrite_fn fn;
    const char *in, *out;
    const anvil_gguf_write_options *opts;
} rewrite_args;

static int rewrite_op(const anvil_ctx *ctx, void *arg, anvil_error *err) {
    const rewrite_args *a = arg;
    return a->fn(a->in, a->out, ctx, a->opts, err);
}

int cli_gguf_rewrite(cli_globals *g, const char *cmd, cli_gguf_rewrite_fn fn, const char *in, const char *out,
                     const cli_write_flags *f, int replaced_input) {
    cli_progress progress;
    anvil_gguf_write_options o;
    cli_gguf_write_options(f, &progress, &o);
    anvil_error err = { 0 };
    rewrite_args a = { fn, in, out, &o };
    const int rc = cli_gguf_run(g, rewrite_op, &a, &err);
    cli_progress_end(&progress);
    if (rc != ANVIL_OK) {
        return cli_fail_err(cmd, &err);
    }
    if (!f->quiet || f->json) {
        cli_report_gguf_output(cmd, f->json, in, out, replaced_input, g->ctx, progress.steps_total);
    }
    return 0;
}

void cli_gguf_progress(void *arg, const anvil_gguf_progress *p) {
    char label[600];
    if (p->n_parts > 1) {
        snprintf(label, sizeof label, "part %u/%u %s", p->part, p->n_parts, p->name);
    } else {
        snprintf(label, sizeof label, "%s", p->name);
    }
    cli_progress_step(arg, p->tensor, p->n_tensors, p->bytes_done, p->bytes_total, label);
}

void cli_transcode_progress(void *arg, const anvil_transcode_progress *p) {
    cli_progress_step(arg, p->tensor + 1, p->n_tensors, p->bytes_done, p->bytes_total, p->name);
}

int cli_parse_in_out(const char *cmd, int argc, char **argv, const char *in_name, const char *out_name,
                     cli_write_flags *f, const char **in, const char **out) {
    const char *pos[2] = { NULL, NULL };
    int n_pos = 0;
    for (int i = 1; i < argc; ++i) {
        if (cli_write_flag(argv[i], f)) {
            continue;
        }
        if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return cli_usage_error(cmd, "unknown option '%s'", argv[i]);
        }
        if (n_pos == 2) {
            return cli_usage_error(cmd, "unexpected argument '%s' (needs %s and %s only)", argv[i], in_name,
                                   out_name);
        }
        pos[n_pos++] = argv[i];
    }
    if (n_pos < 2) {
        return n_pos == 0 ? cli_usage_error(cmd, "no %s and %s given", in_name, out_name)
                          : cli_usage_error(cmd, "no %s given", out_name);
    }
    *in = pos[0];
    *out = pos[1];
    return 0;
}

int cli_write_flag(const char *arg, cli_write_flags *f) {
    if (strcmp(arg, "--json") == 0) {
        f->json = 1;
    } else if (strcmp(arg, "--progress") == 0) {
        f->progress = 1;
    } else if (strcmp(arg, "--quiet") == 0) {
        f->quiet = 1;
    } else {
        return 0;
    }
    return 1;
}
