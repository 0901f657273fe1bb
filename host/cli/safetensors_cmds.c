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

/* Names and metadata are arbitrary UTF-8: keep control bytes off the
 * terminal in the text listing. */
static void put_text(FILE *f, const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; ++p) {
        if (*p < 0x20 || *p == 0x7F) {
            fprintf(f, "\\x%02x", *p);
        } else {
            fputc(*p, f);
        }
    }
}

static int shape_text(char *buf, size_t cap, const anvil_st_tensor *t) {
    size_t o = 0;
    o += (size_t)snprintf(buf + o, cap - o, "[");
    for (size_t d = 0; d < t->rank && o < cap; d++) {
        o += (size_t)snprintf(buf + o, cap - o, "%s%llu", d ? ", " : "",
                              (unsigned long long)t->shape[d]);
    }
    if (o < cap) {
        o += (size_t)snprintf(buf + o, cap - o, "]");
    }
    return (int)(o < cap ? o : cap - 1);
}

typedef struct dtype_total {
    unsigned long long tensors, elements, bytes;
} dtype_total;

static void print_text(const char *path, const anvil_st *st, unsigned long long file_size,
                       const dtype_total *by, const dtype_total *all) {
    printf("file:      %s\n", path);
    printf("format:    safetensors\n");
    printf("size:      %llu bytes = 8 (length) + %llu (header) + %llu (data)\n", file_size,
           (unsigned long long)anvil_st_header_size(st),
           (unsigned long long)anvil_st_data_size(st));
    if (!anvil_st_has_metadata(st)) {
        printf("metadata:  (none)\n");
    } else {
        printf("metadata:  %zu entr%s\n", anvil_st_metadata_count(st),
               anvil_st_metadata_count(st) == 1 ? "y" : "ies");
        for (size_t i = 0; i < anvil_st_metadata_count(st); i++) {
            const char *k, *v;
            anvil_st_metadata_at(st, i, &k, &v);
            printf("  ");
            put_text(stdout, k);
            printf(" = ");
            put_text(stdout, v);
            printf("\n");
        }
    }
    const size_t count = anvil_st_count(st);
    int width = 4;
    for (size_t i = 0; i < count; i++) {
        const int len = (int)strlen(anvil_st_tensor_at(st, i)->name);
        if (len > width) {
            width = len > 64 ? 64 : len;
        }
    }
    printf("tensors:   %zu (in data order)\n", count);
    if (count > 0) {
        printf("  %-*s  %-11s  %-20s  %14s  %s\n", width, "name", "dtype", "shape", "bytes",
               "data_offsets");
    }
    for (size_t i = 0; i < count; i++) {
        const anvil_st_tensor *t = anvil_st_tensor_at(st, i);
        char shape[256];
        shape_text(shape, sizeof shape, t);
        printf("  ");
        put_text(stdout, t->name);
        const int pad = width - (int)strlen(t->name);
        printf("%*s  %-11s  %-20s  %14llu  [%llu, %llu)\n", pad > 0 ? pad : 0, "",
               anvil_st_dtype_name(t->dtype), shape, (unsigned long long)t->size,
               (unsigned long long)t->begin, (unsigned long long)t->end);
    }
    printf("totals:    %llu tensors, %llu elements, %llu bytes\n", all->tensors, all->elements,
           all->bytes);
    for (int d = ANVIL_ST_DTYPE_COUNT - 1; d >= 0; d--) {
        if (by[d].tensors > 0) {
            printf("  %-11s %llu tensor%s, %llu elements, %llu bytes\n",
                   anvil_st_dtype_name((anvil_st_dtype)d), by[d].tensors,
                   by[d].tensors == 1 ? "" : "s", by[d].elements, by[d].bytes);
        }
    }
}

static void print_json(const char *path, const anvil_st *st, unsigned long long file_size,
                       const dtype_total *by, const dtype_total *all) {
    printf("{\"file\":");
    cli_json_string(stdout, path);
    printf(",\"format\":\"safetensors\",\"file_size\":%llu,\"header_size\":%llu,"
           "\"data_size\":%llu,\"metadata\":",
           file_size, (unsigned long long)anvil_st_header_size(st),
           (unsigned long long)anvil_st_data_size(st));
    if (!anvil_st_has_metadata(st)) {
        printf("null");
    } else {
        printf("{");
        for (size_t i = 0; i < anvil_st_metadata_count(st); i++) {
            const char *k, *v;
            anvil_st_metadata_at(st, i, &k, &v);
            printf("%s", i ? "," : "");
            cli_json_string(stdout, k);
            printf(":");
            cli_json_string(stdout, v);
        }
        printf("}");
    }
    printf(",\"tensors\":[");
    for (size_t i = 0; i < anvil_st_count(st); i++) {
        const anvil_st_tensor *t = anvil_st_tensor_at(st, i);
        printf("%s{\"name\":", i ? "," : "");
        cli_json_string(stdout, t->name);
        printf(",\"dtype\":\"%s\",\"shape\":[", anvil_st_dtype_name(t->dtype));
        for (size_t d = 0; d < t->rank; d++) {
            printf("%s%llu", d ? "," : "", (unsigned long long)t->shape[d]);
        }
        printf("],\"elements\":%llu,\"bytes\":%llu,\"data_offsets\":[%llu,%llu]}",
               (unsigned long long)t->n_elements, (unsigned long long)t->size,
               (unsigned long long)t->begin, (unsigned long long)t->end);
    }
    printf("],\"totals\":{\"tensors\":%llu,\"elements\":%llu,\"bytes\":%llu,\"by_dtype\":{",
           all->tensors, all->elements, all->bytes);
    int first = 1;
    for (int d = ANVIL_ST_DTYPE_COUNT - 1; d >= 0; d--) {
        if (by[d].tensors > 0) {
            printf("%s\"%s\":{\"tensors\":%llu,\"elements\":%llu,\"bytes\":%llu}",
                   first ? "" : ",", anvil_st_dtype_name((anvil_st_dtype)d), by[d].tensors,
                   by[d].elements, by[d].bytes);
            first = 0;
        }
    }
    printf("}}}\n");
}

int cli_inspect_safetensors(cli_globals *g, const char *path, int json) {
    (void)g; /* no plugin is needed to read a container */
    anvil_error err;
    anvil_st *st = NULL;
    if (anvil_st_open(&st, path, &err) != ANVIL_OK) {
        return cli_fail_err("inspect", &err);
    }
    dtype_total by[ANVIL_ST_DTYPE_COUNT];
    dtype_total all = {0, 0, 0};
    memset(by, 0, sizeof by);
    for (size_t i = 0; i < anvil_st_count(st); i++) {
        const anvil_st_tensor *t = anvil_st_tensor_at(st, i);
        by[t->dtype].tensors++;
        by[t->dtype].elements += t->n_elements;
        by[t->dtype].bytes += t->size;
        all.tensors++;
        all.elements += t->n_elements;
        all.bytes += t->size;
    }
    const unsigned long long file_size =
        8ull + anvil_st_header_size(st) + anvil_st_data_size(st);
    if (json) {
        print_json(path, st, file_size, by, &all);
    } else {
        print_text(path, st, file_size, by, &all);
    }
    anvil_st_close(st);
    return fflush(stdout) == 0 ? 0 : cli_fail("inspect", "writing the listing failed");
}

int cli_reemit_safetensors(cli_globals *g, const char *in, const char *out) {
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
    const unsigned long long size = stat(out, &sb) == 0 ? (unsigned long long)sb.st_size : 0;
    printf("reemit: %s -> %s (safetensors, %zu tensor%s, %llu bytes)\n", in, out, count,
           count == 1 ? "" : "s", size);
    return 0;
}
