/*
 * anvil inspect FILE [--json]
 *
 * GGUF: version, alignment, data offset, every KV (wire type and value; long
 * arrays summarised by length and first items), every tensor (name, type,
 * logical shape, bytes, offset), totals with bits per weight, and a size
 * check of the data against the file. A safetensors file (recognised by its
 * content) is handed to the safetensors side.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/gguf.h"
#include "cli.h"
#include "cli_gguf.h"

#define ARRAY_PREVIEW 8
#define TEXT_STRING_MAX 96

static int usage(FILE *f) {
    fprintf(f,
            "usage: anvil inspect FILE [--json]\n"
            "\n"
            "Describe a GGUF (v2/v3) or safetensors file: header, metadata (wire type and\n"
            "value; long arrays as length and first items), tensors (name, type, logical\n"
            "row-major shape, bytes, offset), totals, bits per weight, and a check of the\n"
            "data size against the file. Opening part 1 of a split set\n"
            "(name-00001-of-0000N.gguf) describes the whole set.\n"
            "--json prints one JSON object instead of text.\n");
    return f == stdout ? 0 : 2;
}

/* ---- text rendering ------------------------------------------------------ */

static void text_bytes(const char *p, size_t len, size_t max) {
    putchar('"');
    const size_t n = len < max ? len : max;
    for (size_t i = 0; i < n; ++i) {
        const unsigned char c = (unsigned char)p[i];
        if (c == '"' || c == '\\') {
            printf("\\%c", c);
        } else if (c == '\n') {
            fputs("\\n", stdout);
        } else if (c < 0x20 || c == 0x7f) {
            printf("\\x%02x", c);
        } else {
            putchar(c);
        }
    }
    putchar('"');
    if (len > n) {
        printf("...(%zu bytes)", len);
    }
}

static void text_scalar(const anvil_gguf_value *v) {
    switch (v->kind) {
    case ANVIL_GGUF_KIND_INT:
        if (v->in_i64) {
            printf("%" PRId64, v->i);
        } else {
            printf("%" PRIu64, v->u);
        }
        break;
    case ANVIL_GGUF_KIND_FLOAT: printf("%.9g", v->f); break;
    case ANVIL_GGUF_KIND_BOOL: fputs(v->b ? "true" : "false", stdout); break;
    case ANVIL_GGUF_KIND_STRING: text_bytes(v->s.ptr, v->s.len, TEXT_STRING_MAX); break;
    case ANVIL_GGUF_KIND_ARRAY: fputs("[...]", stdout); break;
    }
}

static void text_kv(const anvil_gguf_kv *kv) {
    anvil_gguf_value v;
    anvil_gguf_kv_value(kv, &v);
    char type[32];
    if (kv->type == ANVIL_GGUF_TYPE_ARRAY) {
        snprintf(type, sizeof type, "arr[%s,%" PRIu64 "]", anvil_gguf_type_name(kv->elem_type),
                 kv->count);
    } else {
        snprintf(type, sizeof type, "%s", anvil_gguf_type_name(kv->type));
    }
    printf("  %-44s %-16s = ", kv->key, type);
    if (v.kind != ANVIL_GGUF_KIND_ARRAY) {
        text_scalar(&v);
    } else {
        putchar('[');
        const uint64_t n = v.a.count < ARRAY_PREVIEW ? v.a.count : ARRAY_PREVIEW;
        for (uint64_t i = 0; i < n; ++i) {
            anvil_gguf_value e;
            if (anvil_gguf_array_get(&v.a, i, &e) != ANVIL_OK) {
                break;
            }
            if (i > 0) {
                fputs(", ", stdout);
            }
            if (e.kind == ANVIL_GGUF_KIND_STRING) {
                text_bytes(e.s.ptr, e.s.len, 32);
            } else {
                text_scalar(&e);
            }
        }
        if (v.a.count > n) {
            printf(", ... %" PRIu64 " more", v.a.count - n);
        }
        putchar(']');
    }
    putchar('\n');
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

/* ---- JSON rendering ------------------------------------------------------ */

static void json_scalar(const anvil_gguf_value *v) {
    switch (v->kind) {
    case ANVIL_GGUF_KIND_INT:
        if (v->in_i64) {
            printf("%" PRId64, v->i);
        } else {
            printf("%" PRIu64, v->u);
        }
        break;
    case ANVIL_GGUF_KIND_FLOAT:
        /* JSON has no NaN/Inf: those become strings. */
        if (v->f != v->f) {
            fputs("\"nan\"", stdout);
        } else if (v->f > 1.7976931348623157e308 || v->f < -1.7976931348623157e308) {
            fputs(v->f > 0 ? "\"inf\"" : "\"-inf\"", stdout);
        } else {
            printf("%.17g", v->f);
        }
        break;
    case ANVIL_GGUF_KIND_BOOL: fputs(v->b ? "true" : "false", stdout); break;
    case ANVIL_GGUF_KIND_STRING: cli_gguf_json_bytes(stdout, v->s.ptr, v->s.len); break;
    case ANVIL_GGUF_KIND_ARRAY: fputs("null", stdout); break;
    }
}

static void json_kv(const anvil_gguf_kv *kv) {
    anvil_gguf_value v;
    anvil_gguf_kv_value(kv, &v);
    fputs("{\"key\":", stdout);
    cli_gguf_json_bytes(stdout, kv->key, kv->key_len);
    printf(",\"type\":\"%s\"", anvil_gguf_type_name(kv->type));
    if (v.kind != ANVIL_GGUF_KIND_ARRAY) {
        fputs(",\"value\":", stdout);
        json_scalar(&v);
    } else {
        printf(",\"elem_type\":\"%s\",\"count\":%" PRIu64 ",\"first\":[",
               anvil_gguf_type_name(kv->elem_type), kv->count);
        const uint64_t n = v.a.count < ARRAY_PREVIEW ? v.a.count : ARRAY_PREVIEW;
        for (uint64_t i = 0; i < n; ++i) {
            anvil_gguf_value e;
            if (anvil_gguf_array_get(&v.a, i, &e) != ANVIL_OK) {
                break;
            }
            if (i > 0) {
                putchar(',');
            }
            json_scalar(&e);
        }
        putchar(']');
    }
    putchar('}');
}

/* ---- report -------------------------------------------------------------- */

/* "1.19 MB": decimal units, as file sizes are usually quoted. */
static const char *human(uint64_t bytes, char *buf, size_t size) {
    static const char *const units[] = { "bytes", "kB", "MB", "GB", "TB" };
    double v = (double)bytes;
    int u = 0;
    while (v >= 1000.0 && u < 4) {
        v /= 1000.0;
        u++;
    }
    if (u == 0) {
        snprintf(buf, size, "%" PRIu64 " bytes", bytes);
    } else {
        snprintf(buf, size, "%.2f %s", v, units[u]);
    }
    return buf;
}

typedef struct totals {
    uint64_t elements;
    uint64_t bytes;
} totals;

static totals sum_tensors(const anvil_gguf *g) {
    totals t = { 0, 0 };
    for (size_t i = 0; i < anvil_gguf_tensor_count(g); ++i) {
        const anvil_gguf_tensor *x = anvil_gguf_tensor_at(g, i);
        t.elements += x->n_elements;
        t.bytes += x->n_bytes;
    }
    return t;
}

static double bits_per_weight(const totals *t) {
    return t->elements > 0 ? 8.0 * (double)t->bytes / (double)t->elements : 0.0;
}

static void print_text(const char *path, const anvil_gguf *g) {
    const totals tot = sum_tensors(g);
    printf("file:         %s\n", path);
    printf("format:       GGUF v%" PRIu32 " (little-endian)\n", anvil_gguf_version(g));
    printf("alignment:    %" PRIu32 "\n", anvil_gguf_alignment(g));
    printf("data offset:  %" PRIu64 "\n", anvil_gguf_data_offset(g));
    char h[32];
    printf("file size:    %" PRIu64 " bytes (%s)\n", anvil_gguf_file_size(g),
           human(anvil_gguf_file_size(g), h, sizeof h));
    if (anvil_gguf_part_count(g) > 1) {
        printf("parts:        %zu\n", anvil_gguf_part_count(g));
        for (size_t i = 0; i < anvil_gguf_part_count(g); ++i) {
            anvil_gguf_part_info p;
            anvil_gguf_part(g, i, &p);
            printf("  part %zu: %s, %zu tensors, %" PRIu64 " bytes, data at %" PRIu64 "\n", i + 1,
                   p.path, p.n_tensors, p.file_size, p.data_offset);
        }
    }
    printf("metadata:     %zu keys\n", anvil_gguf_kv_count(g));
    for (size_t i = 0; i < anvil_gguf_kv_count(g); ++i) {
        text_kv(anvil_gguf_kv_at(g, i));
    }
    printf("tensors:      %zu\n", anvil_gguf_tensor_count(g));
    if (anvil_gguf_tensor_count(g) > 0) {
        printf("  %-5s %-40s %-8s %-24s %14s %14s%s\n", "#", "name", "type", "shape", "bytes",
               "offset", anvil_gguf_part_count(g) > 1 ? "  part" : "");
    }
    for (size_t i = 0; i < anvil_gguf_tensor_count(g); ++i) {
        const anvil_gguf_tensor *t = anvil_gguf_tensor_at(g, i);
        char shape[128];
        shape_text(t, shape, sizeof shape);
        printf("  %-5zu %-40s %-8s %-24s %14" PRIu64 " %14" PRIu64, i, t->name, t->type_info.name,
               shape, t->n_bytes, t->file_offset);
        if (anvil_gguf_part_count(g) > 1) {
            printf("  %u", t->part + 1);
        }
        putchar('\n');
    }
    printf("totals:       %zu tensors, %" PRIu64 " elements, %" PRIu64 " bytes (%s), "
           "%.4f bits/weight\n",
           anvil_gguf_tensor_count(g), tot.elements, tot.bytes, human(tot.bytes, h, sizeof h),
           bits_per_weight(&tot));
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
        } else {
            /* The reader refuses data past the end; anything left is
             * padding or trailing bytes. */
            printf("%-13s data ends at byte %" PRIu64 ", the file has %" PRIu64
                   " bytes: %" PRIu64 " bytes after the data%s\n",
                   label, p.data_end, p.file_size, p.file_size - p.data_end,
                   p.file_size - p.data_end < p.alignment ? " (padding): OK" : " (trailing data)");
        }
    }
}

static void print_json(const char *path, const anvil_gguf *g) {
    const totals tot = sum_tensors(g);
    fputs("{\"file\":", stdout);
    cli_gguf_json_bytes(stdout, path, strlen(path));
    printf(",\"format\":\"gguf\",\"version\":%" PRIu32 ",\"alignment\":%" PRIu32
           ",\"data_offset\":%" PRIu64 ",\"file_size\":%" PRIu64 ",\"parts\":[",
           anvil_gguf_version(g), anvil_gguf_alignment(g), anvil_gguf_data_offset(g),
           anvil_gguf_file_size(g));
    int size_ok = 1;
    for (size_t i = 0; i < anvil_gguf_part_count(g); ++i) {
        anvil_gguf_part_info p;
        anvil_gguf_part(g, i, &p);
        const int ok = p.file_size - p.data_end < p.alignment || p.n_tensors == 0;
        size_ok &= ok;
        printf("%s{\"path\":", i ? "," : "");
        cli_gguf_json_bytes(stdout, p.path, strlen(p.path));
        printf(",\"file_size\":%" PRIu64 ",\"header_size\":%" PRIu64 ",\"data_offset\":%" PRIu64
               ",\"data_end\":%" PRIu64 ",\"trailing_bytes\":%" PRIu64 ",\"tensors\":%zu}",
               p.file_size, p.header_size, p.data_offset, p.data_end, p.file_size - p.data_end,
               p.n_tensors);
    }
    fputs("],\"metadata\":[", stdout);
    for (size_t i = 0; i < anvil_gguf_kv_count(g); ++i) {
        if (i > 0) {
            putchar(',');
        }
        json_kv(anvil_gguf_kv_at(g, i));
    }
    fputs("],\"tensors\":[", stdout);
    for (size_t i = 0; i < anvil_gguf_tensor_count(g); ++i) {
        const anvil_gguf_tensor *t = anvil_gguf_tensor_at(g, i);
        fputs(i ? ",{\"name\":" : "{\"name\":", stdout);
        cli_gguf_json_bytes(stdout, t->name, t->name_len);
        printf(",\"type\":\"%s\",\"type_id\":%" PRIu32 ",\"shape\":[", t->type_info.name, t->type);
        for (uint32_t k = 0; k < t->n_dims; ++k) {
            printf("%s%" PRIu64, k ? "," : "", t->shape[k]);
        }
        fputs("],\"ne\":[", stdout);
        for (uint32_t k = 0; k < t->n_dims; ++k) {
            printf("%s%" PRIu64, k ? "," : "", t->ne[k]);
        }
        printf("],\"elements\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"offset\":%" PRIu64
               ",\"file_offset\":%" PRIu64 ",\"part\":%u}",
               t->n_elements, t->n_bytes, t->offset, t->file_offset, t->part + 1);
    }
    printf("],\"totals\":{\"tensors\":%zu,\"elements\":%" PRIu64 ",\"bytes\":%" PRIu64
           ",\"bits_per_weight\":%.6f},\"size_ok\":%s}\n",
           anvil_gguf_tensor_count(g), tot.elements, tot.bytes, bits_per_weight(&tot),
           size_ok ? "true" : "false");
}

typedef struct open_args {
    const char *path;
    anvil_gguf *gguf;
} open_args;

static int open_op(const anvil_ctx *ctx, void *arg, anvil_error *err) {
    open_args *a = arg;
    return anvil_gguf_open(&a->gguf, a->path, ctx, 0, err);
}

int cmd_inspect(cli_globals *g, int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        return usage(stdout);
    }
    const char *path = NULL;
    int json = 0;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "anvil inspect: unknown option '%s'\n", argv[i]);
            return usage(stderr);
        } else if (path == NULL) {
            path = argv[i];
        } else {
            return usage(stderr);
        }
    }
    if (path == NULL) {
        return usage(stderr);
    }
    if (cli_gguf_sniff(path) == CLI_SNIFF_SAFETENSORS) {
        return cli_inspect_safetensors(g, path, json);
    }
    anvil_error err = { 0 };
    open_args a = { path, NULL };
    if (cli_gguf_run(g, open_op, &a, &err) != ANVIL_OK) {
        return cli_fail_err("inspect", &err);
    }
    anvil_gguf *gf = a.gguf;
    if (json) {
        print_json(path, gf);
    } else {
        print_text(path, gf);
    }
    anvil_gguf_close(gf);
    return 0;
}
