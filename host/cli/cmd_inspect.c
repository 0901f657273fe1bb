/* SPDX-License-Identifier: MIT */
/*
 * anvil inspect FILE [--json | --markdown] [--no-tensors] [--arrays N|all]
 *
 * GGUF: version, alignment, data offset, every KV (wire type and value; long
 * arrays summarised by length and first items unless --arrays), every tensor
 * (name, type, logical shape, bytes, offset), totals with bits per weight,
 * and a size check of the data against the file. A file the strict reader
 * refuses is read again leniently: the header, every KV and every tensor
 * that could be parsed are shown, the bad ones marked with the reason, and
 * the exit status is 1. A safetensors file (recognised by its content) is
 * handed to the safetensors side. Names and values are escaped: nothing read
 * from a file reaches the terminal as a control sequence.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/gguf.h"
#include "cli.h"
#include "cli_gguf.h"
#include "inspect_common.h"

#define ARRAY_PREVIEW 8
#define TEXT_STRING_MAX 96
#define ARRAY_STRING_MAX 32

const char cli_help_inspect[] = "usage: anvil inspect FILE [--json | --markdown] [--no-tensors] [--arrays N|all]\n"
                                "\n"
                                "Describe a GGUF (v2/v3) or safetensors file (recognised by its content): header,\n"
                                "metadata (wire type and value; arrays as length and first items), tensors (name,\n"
                                "type, logical row-major shape, bytes, offset), totals by type, bits per weight,\n"
                                "and a check of the data size against the file. Opening part 1 of a split set\n"
                                "(name-00001-of-0000N.gguf) describes the whole set. FILE is memory-mapped: a\n"
                                "FIFO, a socket or a device is refused at once (copy it to a file first).\n"
                                "\n"
                                "A damaged GGUF file is shown as far as it can be read: the header, every\n"
                                "metadata entry and every tensor that could be parsed, the bad ones marked with\n"
                                "the reason, then the list of problems; the exit status is 1.\n"
                                "\n"
                                "  --json          one JSON object on stdout (host/cli/JSON.md)\n"
                                "  --markdown      markdown tables, e.g. for a model card\n"
                                "  --no-tensors    leave out the tensor list (the totals stay)\n"
                                "  --arrays N|all  show N elements of each array (default 8), or all of them with\n"
                                "                  strings in full\n"
                                "\n"
                                "Names and values are printed escaped: control bytes and invalid UTF-8 as \\xNN,\n"
                                "a backslash as \\\\, so nothing read from a file acts on the terminal.\n";

typedef struct view {
    const char *path;
    const anvil_gguf *g;
    const cli_inspect_opts *o;
    int lenient;               /* read by the lenient reader */
    const anvil_error *strict; /* why the strict reader refused it (lenient only) */
} view;

static int is_all(const cli_inspect_opts *o) { return o->arrays == ULLONG_MAX; }

/* ---- values -------------------------------------------------------------------- */

static const char *type_label(const anvil_gguf_tensor *t, char *buf, size_t size) {
    if (t->type_info.name != NULL) {
        return t->type_info.name;
    }
    snprintf(buf, size, "type#%" PRIu32, t->type);
    return buf;
}

static uint64_t shown_elements(const cli_inspect_opts *o, uint64_t count) {
    return count < o->arrays ? count : o->arrays;
}

static void kv_type(const anvil_gguf_kv *kv, char *buf, size_t size) {
    const char *tn = anvil_gguf_type_name(kv->type);
    if (kv->type == ANVIL_GGUF_TYPE_ARRAY) {
        snprintf(buf, size, "arr[%s,%" PRIu64 "]", anvil_gguf_type_name(kv->elem_type), kv->count);
    } else {
        snprintf(buf, size, "%s", tn != NULL ? tn : "?");
    }
}

/* The value of a KV as text (markdown: the same, inside a table cell). */
static void text_value(const anvil_gguf_kv *kv, const cli_inspect_opts *o) {
    anvil_gguf_value v;
    anvil_gguf_kv_value(kv, &v);
    const size_t str_max = is_all(o) ? SIZE_MAX : TEXT_STRING_MAX;
    if (v.kind != ANVIL_GGUF_KIND_ARRAY) {
        cli_gguf_scalar(stdout, &v, CLI_VALUE_TEXT, str_max);
        return;
    }
    putchar('[');
    const uint64_t n = shown_elements(o, v.a.count);
    cli_gguf_array(stdout, &v.a, n, CLI_VALUE_TEXT, is_all(o) ? SIZE_MAX : ARRAY_STRING_MAX);
    if (v.a.count > n) {
        printf("%s... %" PRIu64 " more", n ? ", " : "", v.a.count - n);
    }
    putchar(']');
}

static void json_kv(const anvil_gguf_kv *kv, const cli_inspect_opts *o) {
    anvil_gguf_value v;
    anvil_gguf_kv_value(kv, &v);
    fputs("{\"key\":", stdout);
    cli_json_bytes(stdout, kv->key, kv->key_len);
    printf(",\"type\":");
    cli_json_string(stdout, anvil_gguf_type_name(kv->type));
    if (v.kind != ANVIL_GGUF_KIND_ARRAY) {
        fputs(",\"value\":", stdout);
        cli_gguf_scalar(stdout, &v, CLI_VALUE_JSON, 0);
    } else {
        printf(",\"elem_type\":\"%s\",\"count\":%" PRIu64 ",\"value\":[", anvil_gguf_type_name(kv->elem_type),
               kv->count);
        const uint64_t n = shown_elements(o, v.a.count);
        cli_gguf_array(stdout, &v.a, n, CLI_VALUE_JSON, 0);
        printf("],\"truncated\":%s", v.a.count > n ? "true" : "false");
    }
    putchar('}');
}

static void shape_text(const anvil_gguf_tensor *t, char *buf, size_t size) {
    size_t at = (size_t)snprintf(buf, size, "[");
    for (uint32_t k = 0; k < t->n_dims && at < size; ++k) {
        at += (size_t)snprintf(buf + at, size - at, "%s%" PRIu64, k ? ", " : "", t->shape[k]);
    }
    if (at < size) {
        snprintf(buf + at, size - at, "]");
    }
}

static inspect_totals sum_tensors(const anvil_gguf *g) {
    inspect_totals t;
    memset(&t, 0, sizeof t);
    for (size_t i = 0; i < anvil_gguf_tensor_count(g); ++i) {
        const anvil_gguf_tensor *x = anvil_gguf_tensor_at(g, i);
        if (anvil_gguf_tensor_problem(g, i) != NULL) {
            t.skipped++;
        } else {
            inspect_totals_add(&t, x->type_info.name, x->n_elements, x->n_bytes);
        }
    }
    return t;
}

static const char *where_name(int where) {
    return where == ANVIL_GGUF_AT_KV ? "kv" : where == ANVIL_GGUF_AT_TENSOR ? "tensor" : "header";
}

/* Problems: the lenient reader's, then why the strict reader refused the
 * file when the lenient one found nothing (a split set's other parts). */
static size_t problem_total(const view *v) {
    const size_t n = anvil_gguf_problem_count(v->g);
    return n + (v->lenient && n == 0);
}

/* ---- text and markdown ------------------------------------------------------------- */

static void print_problems_text(const view *v, int markdown) {
    const size_t n = anvil_gguf_problem_count(v->g);
    if (problem_total(v) == 0) {
        return;
    }
    printf(markdown ? "\n## Problems\n\n" : "problems:     %zu (the file could not be read as a whole)\n",
           problem_total(v));
    for (size_t i = 0; i < n; ++i) {
        anvil_gguf_problem p;
        anvil_gguf_problem_at(v->g, i, &p);
        printf(markdown ? "- %s %zu: " : "  %s %zu: ", where_name(p.where), p.index);
        cli_text_bytes(stdout, p.message, strlen(p.message));
        putchar('\n');
    }
    if (n == 0) {
        printf(markdown ? "- " : "  ");
        cli_text_bytes(stdout, v->strict->message, strlen(v->strict->message));
        putchar('\n');
    }
}

/* One metadata line: a markdown row (the value's '|' escaped) or text. */
static void print_kv(const view *v, const anvil_gguf_kv *kv, int md) {
    char type[48], key[512];
    kv_type(kv, type, sizeof type);
    if (md) {
        printf("| ");
        inspect_md_cell(stdout, kv->key, kv->key_len);
        printf(" | %s | ", type);
        /* The value through a markdown-safe path: printed to a buffer first. */
        char *buf = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&buf, &len);
        if (mem != NULL) {
            FILE *saved = stdout;
            stdout = mem;
            text_value(kv, v->o);
            stdout = saved;
            fclose(mem);
            for (size_t k = 0, start = 0; k <= len; ++k) {
                if (k == len || buf[k] == '|') {
                    fwrite(buf + start, 1, k - start, stdout);
                    if (k < len) fputs("\\|", stdout);
                    start = k + 1;
                }
            }
            free(buf);
        }
        printf(" |\n");
    } else {
        printf("  %-44s %-16s = ", cli_text_esc(key, sizeof key, kv->key, kv->key_len), type);
        text_value(kv, v->o);
        putchar('\n');
    }
}

/* One tensor line (markdown row or text), with its problem when it has one. */
static void print_tensor(const anvil_gguf *g, size_t i, int md, int parts) {
    const anvil_gguf_tensor *t = anvil_gguf_tensor_at(g, i);
    const char *problem = anvil_gguf_tensor_problem(g, i);
    char shape[128], tl[32], name[512];
    shape_text(t, shape, sizeof shape);
    if (md) {
        printf("| %zu | ", i);
        inspect_md_cell(stdout, t->name, t->name_len);
        printf(" | %s | %s | %" PRIu64 " | %" PRIu64 " |", type_label(t, tl, sizeof tl), shape, t->n_bytes,
               t->file_offset);
        if (parts) printf(" %u |", t->part + 1);
        if (problem != NULL) {
            printf(" **bad**: ");
            inspect_md_cell(stdout, problem, strlen(problem));
        }
        putchar('\n');
        return;
    }
    printf("  %-5zu %-40s %-8s %-24s ", i, cli_text_esc(name, sizeof name, t->name, t->name_len),
           type_label(t, tl, sizeof tl), shape);
    if (problem != NULL) {
        printf("%14s %14" PRIu64 "\n        BAD: ", "?", t->file_offset);
        cli_text_bytes(stdout, problem, strlen(problem));
        putchar('\n');
        return;
    }
    printf("%14" PRIu64 " %14" PRIu64, t->n_bytes, t->file_offset);
    if (parts) {
        printf("  %u", t->part + 1);
    }
    putchar('\n');
}

/* Where each part's data ends against its file size. */
static void print_size_checks(const anvil_gguf *g) {
    for (size_t i = 0; i < anvil_gguf_part_count(g); ++i) {
        anvil_gguf_part_info p;
        anvil_gguf_part(g, i, &p);
        char label[32];
        if (anvil_gguf_part_count(g) > 1) {
            snprintf(label, sizeof label, "part %zu:", i + 1);
        } else {
            snprintf(label, sizeof label, "size check:");
        }
        if (p.data_end == p.file_size) {
            printf("%-13s data ends at byte %" PRIu64 ", the file's size: OK\n", label, p.data_end);
        } else if (p.data_end < p.file_size) {
            /* The reader refuses data past the end; anything left is
             * padding or trailing bytes. */
            printf("%-13s data ends at byte %" PRIu64 ", the file has %" PRIu64 " bytes: %" PRIu64
                   " bytes after the data%s\n",
                   label, p.data_end, p.file_size, p.file_size - p.data_end,
                   p.file_size - p.data_end < p.alignment ? " (padding): OK" : " (trailing data)");
        }
    }
}

static void print_text(const view *v) {
    const anvil_gguf *g = v->g;
    const int md = v->o->markdown;
    const inspect_totals tot = sum_tensors(g);
    uint64_t declared_kv = 0, declared_tensors = 0;
    anvil_gguf_declared_counts(g, &declared_kv, &declared_tensors);
    char h[32];
    if (md) {
        printf("# ");
        inspect_md_cell(stdout, v->path, strlen(v->path));
        printf("\n\n| | |\n|---|---|\n| format | GGUF v%" PRIu32 " |\n| alignment | %" PRIu32
               " |\n| data offset | %" PRIu64 " |\n| file size | %" PRIu64 " bytes (%s) |\n",
               anvil_gguf_version(g), anvil_gguf_alignment(g), anvil_gguf_data_offset(g), anvil_gguf_file_size(g),
               inspect_human(anvil_gguf_file_size(g), h, sizeof h));
    } else {
        printf("file:         ");
        cli_text_bytes(stdout, v->path, strlen(v->path));
        printf("\nformat:       GGUF v%" PRIu32 " (little-endian)\n", anvil_gguf_version(g));
        printf("alignment:    %" PRIu32 "\n", anvil_gguf_alignment(g));
        printf("data offset:  %" PRIu64 "\n", anvil_gguf_data_offset(g));
        printf("file size:    %" PRIu64 " bytes (%s)\n", anvil_gguf_file_size(g),
               inspect_human(anvil_gguf_file_size(g), h, sizeof h));
    }
    if (anvil_gguf_part_count(g) > 1) {
        printf(md ? "\n## Parts\n\n" : "parts:        %zu\n", anvil_gguf_part_count(g));
        for (size_t i = 0; i < anvil_gguf_part_count(g); ++i) {
            anvil_gguf_part_info p;
            anvil_gguf_part(g, i, &p);
            printf(md ? "- part %zu: " : "  part %zu: ", i + 1);
            cli_text_bytes(stdout, p.path, strlen(p.path));
            printf(", %zu tensors, %" PRIu64 " bytes, data at %" PRIu64 "\n", p.n_tensors, p.file_size,
                   p.data_offset);
        }
    }
    const size_t n_kv = anvil_gguf_kv_count(g);
    if (md) {
        printf("\n## Metadata (%zu keys)\n\n| key | type | value |\n|---|---|---|\n", n_kv);
    } else if ((uint64_t)n_kv != declared_kv) {
        printf("metadata:     %zu of %" PRIu64 " keys could be read\n", n_kv, declared_kv);
    } else {
        printf("metadata:     %zu keys\n", n_kv);
    }
    for (size_t i = 0; i < n_kv; ++i) print_kv(v, anvil_gguf_kv_at(g, i), md);
    const size_t n_t = anvil_gguf_tensor_count(g);
    const int parts = anvil_gguf_part_count(g) > 1;
    if (md) {
        printf("\n## Tensors (%zu)\n", n_t);
    } else if ((uint64_t)n_t != declared_tensors && !parts) {
        printf("tensors:      %zu of %" PRIu64 " could be read\n", n_t, declared_tensors);
    } else {
        printf("tensors:      %zu\n", n_t);
    }
    if (!v->o->no_tensors && n_t > 0) {
        if (md) {
            printf("\n| # | name | type | shape | bytes | offset |%s\n|---:|---|---|---|---:|---:|%s\n",
                   parts ? " part |" : "", parts ? "---:|" : "");
        } else {
            printf("  %-5s %-40s %-8s %-24s %14s %14s%s\n", "#", "name", "type", "shape", "bytes", "offset",
                   parts ? "  part" : "");
        }
    }
    for (size_t i = 0; i < n_t && !v->o->no_tensors; ++i) print_tensor(g, i, md, parts);
    inspect_text_totals(stdout, &tot, md);
    if (md) {
        print_problems_text(v, 1);
        return;
    }
    print_size_checks(g);
    print_problems_text(v, 0);
}

/* ---- JSON ---------------------------------------------------------------------------- */

static void print_json(const view *v) {
    const anvil_gguf *g = v->g;
    const inspect_totals tot = sum_tensors(g);
    uint64_t declared_kv = 0, declared_tensors = 0;
    anvil_gguf_declared_counts(g, &declared_kv, &declared_tensors);
    cli_json_begin(stdout, "inspect");
    fputs(",\"input\":", stdout);
    cli_json_string(stdout, v->path);
    printf(",\"format\":\"gguf\",\"file_size\":%" PRIu64 ",\"ok\":%s", anvil_gguf_file_size(g),
           problem_total(v) == 0 ? "true" : "false");
    printf(",\"gguf\":{\"version\":%" PRIu32 ",\"alignment\":%" PRIu32 ",\"data_offset\":%" PRIu64
           ",\"declared_kvs\":%" PRIu64 ",\"declared_tensors\":%" PRIu64 ",\"parts\":[",
           anvil_gguf_version(g), anvil_gguf_alignment(g), anvil_gguf_data_offset(g), declared_kv, declared_tensors);
    for (size_t i = 0; i < anvil_gguf_part_count(g); ++i) {
        anvil_gguf_part_info p;
        anvil_gguf_part(g, i, &p);
        printf("%s{\"path\":", i ? "," : "");
        cli_json_string(stdout, p.path);
        printf(",\"file_size\":%" PRIu64 ",\"header_size\":%" PRIu64 ",\"data_offset\":%" PRIu64
               ",\"data_end\":%" PRIu64 ",\"trailing_bytes\":%" PRIu64 ",\"n_tensors\":%zu}",
               p.file_size, p.header_size, p.data_offset, p.data_end,
               p.file_size > p.data_end ? p.file_size - p.data_end : 0, p.n_tensors);
    }
    fputs("]},\"metadata\":[", stdout);
    for (size_t i = 0; i < anvil_gguf_kv_count(g); ++i) {
        if (i > 0) {
            putchar(',');
        }
        json_kv(anvil_gguf_kv_at(g, i), v->o);
    }
    putchar(']');
    if (!v->o->no_tensors) {
        fputs(",\"tensors\":[", stdout);
        for (size_t i = 0; i < anvil_gguf_tensor_count(g); ++i) {
            const anvil_gguf_tensor *t = anvil_gguf_tensor_at(g, i);
            const char *problem = anvil_gguf_tensor_problem(g, i);
            char tl[32];
            fputs(i ? ",{\"name\":" : "{\"name\":", stdout);
            cli_json_bytes(stdout, t->name, t->name_len);
            fputs(",\"type\":", stdout);
            cli_json_string(stdout, type_label(t, tl, sizeof tl));
            fputs(",\"shape\":[", stdout);
            for (uint32_t k = 0; k < t->n_dims; ++k) {
                printf("%s%" PRIu64, k ? "," : "", t->shape[k]);
            }
            printf("],\"elements\":%" PRIu64 ",\"bytes\":", t->n_elements);
            if (problem != NULL && t->n_bytes == 0) {
                fputs("null", stdout);
            } else {
                printf("%" PRIu64, t->n_bytes);
            }
            printf(",\"offset\":%" PRIu64, t->file_offset);
            printf(",\"problem\":");
            cli_json_string(stdout, problem);
            printf(",\"type_id\":%" PRIu32 ",\"ne\":[", t->type);
            for (uint32_t k = 0; k < t->n_dims; ++k) {
                printf("%s%" PRIu64, k ? "," : "", t->ne[k]);
            }
            printf("],\"relative_offset\":%" PRIu64 ",\"part\":%u}", t->offset, t->part + 1);
        }
        putchar(']');
    }
    inspect_json_totals(stdout, &tot);
    fputs(",\"problems\":[", stdout);
    const size_t n = anvil_gguf_problem_count(g);
    for (size_t i = 0; i < n; ++i) {
        anvil_gguf_problem p;
        anvil_gguf_problem_at(g, i, &p);
        const char *status = cli_status_name(p.code);
        printf("%s{\"where\":\"%s\",\"index\":%zu,\"status\":", i ? "," : "", where_name(p.where), p.index);
        cli_json_string(stdout, status);
        fputs(",\"message\":", stdout);
        cli_json_string(stdout, p.message);
        putchar('}');
    }
    if (v->lenient && n == 0) {
        const char *status = cli_status_name(v->strict->code);
        fputs("{\"where\":\"header\",\"index\":null,\"status\":", stdout);
        cli_json_string(stdout, status);
        fputs(",\"message\":", stdout);
        cli_json_string(stdout, v->strict->message);
        putchar('}');
    }
    fputs("]}\n", stdout);
}

/* ---- the command ----------------------------------------------------------------------- */

typedef struct open_args {
    const char *path;
    anvil_gguf *gguf;
    int lenient;
} open_args;

static int open_op(const anvil_ctx *ctx, void *arg, anvil_error *err) {
    open_args *a = arg;
    return a->lenient ? anvil_gguf_open_lenient(&a->gguf, a->path, ctx, err)
                      : anvil_gguf_open(&a->gguf, a->path, ctx, 0, err);
}

/* Statuses after which a lenient read shows nothing more: the file cannot be
 * opened, or it is not a GGUF file of a version anvil reads. */
static int hopeless(int code) {
    return code == ANVIL_E_IO || code == ANVIL_E_NOT_FOUND || code == ANVIL_E_NOMEM || code == ANVIL_E_GGUF_MAGIC ||
           code == ANVIL_E_GGUF_LEGACY || code == ANVIL_E_GGUF_ENDIAN || code == ANVIL_E_GGUF_VERSION;
}

int cmd_inspect(cli_globals *g, int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        return cli_help("inspect");
    }
    const char *path = NULL;
    cli_inspect_opts o = { 0, 0, 0, ARRAY_PREVIEW };
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (strcmp(a, "--json") == 0) {
            o.json = 1;
        } else if (strcmp(a, "--markdown") == 0) {
            o.markdown = 1;
        } else if (strcmp(a, "--no-tensors") == 0) {
            o.no_tensors = 1;
        } else if (strcmp(a, "--arrays") == 0) {
            if (i + 1 >= argc) {
                return cli_usage_error("inspect", "--arrays needs a count or 'all'");
            }
            const char *n = argv[++i];
            if (strcmp(n, "all") == 0) {
                o.arrays = ULLONG_MAX;
            } else if (cli_parse_count(n, 0, ULLONG_MAX - 1, &o.arrays) != 0) {
                return cli_usage_error("inspect", "--arrays '%s' is not a count or 'all'", n);
            }
        } else if (a[0] == '-' && a[1] != '\0') {
            return cli_usage_error("inspect", "unknown option '%s'", a);
        } else if (path == NULL) {
            path = a;
        } else {
            return cli_usage_error("inspect", "one file at a time (got '%s' and '%s')", path, a);
        }
    }
    if (path == NULL) {
        return cli_usage_error("inspect", "no FILE given");
    }
    if (o.json && o.markdown) {
        return cli_usage_error("inspect", "--json and --markdown exclude each other");
    }
    if (cli_gguf_sniff(path) == CLI_SNIFF_SAFETENSORS) {
        return cli_inspect_safetensors(g, path, &o);
    }
    anvil_error strict = { 0 };
    open_args a = { path, NULL, 0 };
    if (cli_gguf_run(g, open_op, &a, &strict) != ANVIL_OK) {
        if (hopeless(strict.code)) {
            return cli_fail_err("inspect", &strict);
        }
        anvil_error err = { 0 };
        a.lenient = 1;
        if (cli_gguf_run(g, open_op, &a, &err) != ANVIL_OK) {
            return cli_fail_err("inspect", &strict);
        }
    }
    const view v = { path, a.gguf, &o, a.lenient, &strict };
    if (o.json) {
        print_json(&v);
    } else {
        print_text(&v);
    }
    const int bad = problem_total(&v) > 0;
    anvil_gguf_close(a.gguf);
    if (bad) {
        /* The listing is on stdout; the verdict goes where errors go. */
        fflush(stdout);
        cli_set_json(0); /* the document says so already ("ok": false) */
        return cli_fail("inspect", "%s: the file has problems (listed %s): it could only be read in part", path,
                        o.json ? "under \"problems\"" : "above");
    }
    return 0;
}
