/* SPDX-License-Identifier: MIT */
/*
 * The safetensors side of `anvil inspect` and `anvil reemit`. The GGUF
 * commands detect the container from the content and call these when the
 * file is not GGUF.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "anvil/safetensors.h"
#include "cli.h"
#include "cli_gguf.h"
#include "inspect_common.h"

static int shape_text(char *buf, size_t cap, const anvil_st_tensor *t) {
    size_t o = 0;
    o += (size_t)snprintf(buf + o, cap - o, "[");
    for (size_t d = 0; d < t->rank && o < cap; d++) {
        o += (size_t)snprintf(buf + o, cap - o, "%s%llu", d ? ", " : "", (unsigned long long)t->shape[d]);
    }
    if (o < cap) {
        o += (size_t)snprintf(buf + o, cap - o, "]");
    }
    return (int)(o < cap ? o : cap - 1);
}

/* Where tensor data starts in the file: after the 8-byte length and the header. */
static unsigned long long data_start(const anvil_st *st) { return 8ull + anvil_st_header_size(st); }

static void print_text(const char *path, const anvil_st *st, unsigned long long file_size, const inspect_totals *tot,
                       const cli_inspect_opts *o) {
    const int md = o->markdown;
    const size_t n_meta = anvil_st_has_metadata(st) ? anvil_st_metadata_count(st) : 0;
    if (md) {
        printf("# ");
        inspect_md_cell(stdout, path, strlen(path));
        printf("\n\n| | |\n|---|---|\n| format | safetensors |\n| file size | %llu bytes |\n"
               "| header | %llu bytes |\n\n## Metadata (%zu keys)\n\n| key | type | value |\n|---|---|---|\n",
               file_size, (unsigned long long)anvil_st_header_size(st), n_meta);
    } else {
        printf("file:         ");
        cli_text_bytes(stdout, path, strlen(path));
        printf("\nformat:       safetensors\n");
        printf("file size:    %llu bytes = 8 (length) + %llu (header) + %llu (data)\n", file_size,
               (unsigned long long)anvil_st_header_size(st), (unsigned long long)anvil_st_data_size(st));
        printf("metadata:     %zu keys%s\n", n_meta, anvil_st_has_metadata(st) ? "" : " (no __metadata__)");
    }
    for (size_t i = 0; i < n_meta; i++) {
        const char *k, *v;
        anvil_st_metadata_at(st, i, &k, &v);
        if (md) {
            printf("| ");
            inspect_md_cell(stdout, k, strlen(k));
            printf(" | str | ");
            inspect_md_cell(stdout, v, strlen(v));
            printf(" |\n");
        } else {
            char key[512];
            printf("  %-44s %-16s = \"", cli_text_esc(key, sizeof key, k, strlen(k)), "str");
            cli_text_bytes(stdout, v, strlen(v));
            printf("\"\n");
        }
    }
    const size_t count = anvil_st_count(st);
    printf(md ? "\n## Tensors (%zu)\n" : "tensors:      %zu (in data order)\n", count);
    if (!o->no_tensors && count > 0) {
        if (md) {
            printf("\n| # | name | type | shape | bytes | offset |\n|---:|---|---|---|---:|---:|\n");
        } else {
            printf("  %-5s %-40s %-8s %-24s %14s %14s\n", "#", "name", "type", "shape", "bytes", "offset");
        }
    }
    for (size_t i = 0; i < count && !o->no_tensors; i++) {
        const anvil_st_tensor *t = anvil_st_tensor_at(st, i);
        char shape[256], name[512];
        shape_text(shape, sizeof shape, t);
        if (md) {
            printf("| %zu | ", i);
            inspect_md_cell(stdout, t->name, strlen(t->name));
            printf(" | %s | %s | %llu | %llu |\n", anvil_st_dtype_name(t->dtype), shape, (unsigned long long)t->size,
                   data_start(st) + (unsigned long long)t->begin);
        } else {
            printf("  %-5zu %-40s %-8s %-24s %14llu %14llu\n", i,
                   cli_text_esc(name, sizeof name, t->name, strlen(t->name)), anvil_st_dtype_name(t->dtype), shape,
                   (unsigned long long)t->size, data_start(st) + (unsigned long long)t->begin);
        }
    }
    inspect_text_totals(stdout, tot, md);
}

static void print_json(const char *path, const anvil_st *st, unsigned long long file_size, const inspect_totals *tot,
                       const cli_inspect_opts *o) {
    cli_json_begin(stdout, "inspect");
    printf(",\"input\":");
    cli_json_string(stdout, path);
    printf(",\"format\":\"safetensors\",\"file_size\":%llu,\"ok\":true,\"safetensors\":{\"header_size\":%llu,"
           "\"data_size\":%llu,\"has_metadata\":%s},\"metadata\":[",
           file_size, (unsigned long long)anvil_st_header_size(st), (unsigned long long)anvil_st_data_size(st),
           anvil_st_has_metadata(st) ? "true" : "false");
    const size_t n_meta = anvil_st_has_metadata(st) ? anvil_st_metadata_count(st) : 0;
    for (size_t i = 0; i < n_meta; i++) {
        const char *k, *v;
        anvil_st_metadata_at(st, i, &k, &v);
        printf("%s{\"key\":", i ? "," : "");
        cli_json_string(stdout, k);
        printf(",\"type\":\"str\",\"value\":");
        cli_json_string(stdout, v);
        printf("}");
    }
    printf("]");
    if (!o->no_tensors) {
        printf(",\"tensors\":[");
        for (size_t i = 0; i < anvil_st_count(st); i++) {
            const anvil_st_tensor *t = anvil_st_tensor_at(st, i);
            printf("%s{\"name\":", i ? "," : "");
            cli_json_string(stdout, t->name);
            printf(",\"type\":\"%s\",\"shape\":[", anvil_st_dtype_name(t->dtype));
            for (size_t d = 0; d < t->rank; d++) {
                printf("%s%llu", d ? "," : "", (unsigned long long)t->shape[d]);
            }
            printf(
                "],\"elements\":%llu,\"bytes\":%llu,\"offset\":%llu,\"problem\":null,\"data_offsets\":[%llu,%llu]}",
                (unsigned long long)t->n_elements, (unsigned long long)t->size,
                data_start(st) + (unsigned long long)t->begin, (unsigned long long)t->begin,
                (unsigned long long)t->end);
        }
        printf("]");
    }
    inspect_json_totals(stdout, tot);
    printf(",\"problems\":[]}\n");
}

int cli_inspect_safetensors(cli_globals *g, const char *path, const cli_inspect_opts *o) {
    (void)g; /* no plugin is needed to read a container */
    anvil_error err;
    anvil_st *st = NULL;
    if (anvil_st_open(&st, path, &err) != ANVIL_OK) {
        return cli_fail_err("inspect", &err);
    }
    inspect_totals tot;
    memset(&tot, 0, sizeof tot);
    for (size_t i = 0; i < anvil_st_count(st); i++) {
        const anvil_st_tensor *t = anvil_st_tensor_at(st, i);
        inspect_totals_add(&tot, anvil_st_dtype_name(t->dtype), t->n_elements, t->size);
    }
    const unsigned long long file_size = 8ull + anvil_st_header_size(st) + anvil_st_data_size(st);
    if (o->json) {
        print_json(path, st, file_size, &tot, o);
    } else {
        print_text(path, st, file_size, &tot, o);
    }
    anvil_st_close(st);
    return 0;
}

int cli_reemit_safetensors(cli_globals *g, const char *in, const char *out, int json, int same) {
    (void)g;
    anvil_error err;
    anvil_st *st = NULL;
    if (anvil_st_open(&st, in, &err) != ANVIL_OK) {
        return cli_fail_err("reemit", &err);
    }
    anvil_st_writer *w = NULL;
    int rc = anvil_st_writer_new(&w, &err);
    if (rc == ANVIL_OK) {
        rc = anvil_st_writer_add_all(w, st, &err);
    }
    if (rc == ANVIL_OK) {
        /* Atomic: `out` may even be `in`; the mapping keeps the old bytes. */
        rc = anvil_st_writer_save(w, out, &err);
    }
    const size_t count = anvil_st_count(st);
    anvil_st_writer_free(w);
    anvil_st_close(st);
    if (rc != ANVIL_OK) {
        return cli_fail_err("reemit", &err);
    }
    struct stat sb;
    const int regular = strcmp(out, "-") != 0 && stat(out, &sb) == 0 && S_ISREG(sb.st_mode);
    const cli_written wr = { out, regular ? (unsigned long long)sb.st_size : CLI_BYTES_UNKNOWN, count };
    cli_report_written("reemit", json, in, "safetensors", count, &wr, 1, 0, same);
    return 0;
}
