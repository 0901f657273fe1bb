/* SPDX-License-Identifier: MIT */
/* The parts of `anvil inspect` shared by GGUF and safetensors. */
#include <inttypes.h>
#include <string.h>

#include "cli.h"
#include "inspect_common.h"

void inspect_totals_add(inspect_totals *t, const char *type, uint64_t elements, uint64_t bytes) {
    t->all.tensors++;
    t->all.elements += elements;
    t->all.bytes += bytes;
    size_t i = 0;
    while (i < t->n_types && strcmp(t->by_type[i].type, type) != 0) i++;
    if (i == t->n_types) {
        if (t->n_types == INSPECT_MAX_TYPES) return; /* counted in all only */
        t->by_type[t->n_types++] = (inspect_count){ type, 0, 0, 0 };
    }
    t->by_type[i].tensors++;
    t->by_type[i].elements += elements;
    t->by_type[i].bytes += bytes;
}

double inspect_bits_per_weight(const inspect_count *c) {
    return c->elements > 0 ? 8.0 * (double)c->bytes / (double)c->elements : 0.0;
}

const char *inspect_human(uint64_t bytes, char *buf, size_t size) {
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

static void json_count(FILE *f, const inspect_count *c) {
    fprintf(f, "{\"n_tensors\":%" PRIu64 ",\"elements\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"bits_per_weight\":%.6f}",
            c->tensors, c->elements, c->bytes, inspect_bits_per_weight(c));
}

void inspect_json_totals(FILE *f, const inspect_totals *t) {
    fputs(",\"totals\":{\"n_tensors\":", f);
    fprintf(f, "%" PRIu64 ",\"elements\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"bits_per_weight\":%.6f", t->all.tensors,
            t->all.elements, t->all.bytes, inspect_bits_per_weight(&t->all));
    fprintf(f, ",\"not_counted\":%" PRIu64 ",\"by_type\":{", t->skipped);
    for (size_t i = 0; i < t->n_types; ++i) {
        if (i) fputc(',', f);
        cli_json_string(f, t->by_type[i].type);
        fputc(':', f);
        json_count(f, &t->by_type[i]);
    }
    fputs("}}", f);
}

void inspect_text_totals(FILE *f, const inspect_totals *t, int markdown) {
    char h[32];
    if (markdown) {
        fprintf(f, "\n## Totals\n\n| type | tensors | elements | bytes | bits/weight |\n|---|---:|---:|---:|---:|\n");
        for (size_t i = 0; i < t->n_types; ++i) {
            const inspect_count *c = &t->by_type[i];
            fprintf(f, "| %s | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %.4f |\n", cli_esc(c->type), c->tensors,
                    c->elements, c->bytes, inspect_bits_per_weight(c));
        }
        fprintf(f, "| **all** | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %.4f |\n", t->all.tensors, t->all.elements,
                t->all.bytes, inspect_bits_per_weight(&t->all));
        if (t->skipped) fprintf(f, "\n%" PRIu64 " tensors with a problem are not counted.\n", t->skipped);
        return;
    }
    fprintf(f, "totals:       %" PRIu64 " tensors, %" PRIu64 " elements, %" PRIu64 " bytes (%s), %.4f bits/weight\n",
            t->all.tensors, t->all.elements, t->all.bytes, inspect_human(t->all.bytes, h, sizeof h),
            inspect_bits_per_weight(&t->all));
    for (size_t i = 0; i < t->n_types; ++i) {
        const inspect_count *c = &t->by_type[i];
        fprintf(f, "  %-11s %" PRIu64 " tensor%s, %" PRIu64 " elements, %" PRIu64 " bytes, %.4f bits/weight\n",
                cli_esc(c->type), c->tensors, c->tensors == 1 ? "" : "s", c->elements, c->bytes,
                inspect_bits_per_weight(c));
    }
    if (t->skipped) {
        fprintf(f, "  (%" PRIu64 " tensor%s with a problem not counted)\n", t->skipped, t->skipped == 1 ? "" : "s");
    }
}

void inspect_md_cell(FILE *f, const char *p, size_t len) {
    size_t start = 0;
    for (size_t i = 0; i <= len; ++i) {
        if (i == len || p[i] == '|' || p[i] == '`') {
            cli_text_bytes(f, p + start, i - start);
            if (i < len) {
                fputc('\\', f);
                fputc(p[i], f);
            }
            start = i + 1;
        }
    }
}
