/* SPDX-License-Identifier: MIT */
/* `anvil transcode --compare`: the converted tensors again, in other formats
 * (see transcode_compare.h). */
#include "transcode_compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cli.h"

int cli_compare_parse(const anvil_ctx *ctx, const char *list, cli_compare *c) {
    memset(c, 0, sizeof *c);
    char buf[512];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ", ", &save); tok != NULL; tok = strtok_r(NULL, ", ", &save)) {
        if (c->n_types == CLI_COMPARE_MAX_TYPES) {
            return cli_usage_error("transcode", "--compare takes at most %d types", CLI_COMPARE_MAX_TYPES);
        }
        anvil_error err;
        uint32_t id;
        anvil_type_info info;
        if (anvil_type_from_name(ctx, tok, &id, &err) != ANVIL_OK ||
            anvil_type_lookup(ctx, id, &info, &err) != ANVIL_OK) {
            return cli_usage_error("transcode", "--compare '%s': %s", tok, err.message);
        }
        c->types[c->n_types] = id;
        c->names[c->n_types] = info.name;
        c->bpw[c->n_types] = info.block_elems ? 8.0 * info.block_bytes / info.block_elems : 0.0;
        c->n_types++;
    }
    if (c->n_types == 0) {
        return cli_usage_error("transcode", "--compare '%s' names no type", list);
    }
    return 0;
}

static int out_of_memory(anvil_error *err) {
    if (err != NULL) {
        err->code = ANVIL_E_NOMEM;
        snprintf(err->message, sizeof err->message, "transcode --compare: out of memory");
    }
    return ANVIL_E_NOMEM;
}

/* Each type through the library's quality pass (anvil_transcode_quality_as:
 * the run's own chunks, coders, threads and sums). */
int cli_compare_run(anvil_transcode *t, cli_compare *c, anvil_error *err) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    const size_t nt = anvil_transcode_count(t), ny = c->n_types;
    c->n_tensors = nt;
    c->sse = calloc(nt * ny + 1, sizeof *c->sse);
    c->signal = calloc(nt * ny + 1, sizeof *c->signal);
    c->note = calloc(nt * ny + 1, sizeof *c->note);
    anvil_transcode_alt_quality *q = calloc(nt + 1, sizeof *q);
    if (c->sse == NULL || c->signal == NULL || c->note == NULL || q == NULL) {
        free(q);
        return out_of_memory(err);
    }
    for (size_t j = 0; j < ny; ++j) {
        const int rc = anvil_transcode_quality_as(t, c->types[j], q, err);
        if (rc != ANVIL_OK) {
            free(q);
            return rc;
        }
        for (size_t i = 0; i < nt; ++i) {
            c->sse[i * ny + j] = q[i].why != NULL ? NAN : q[i].sum_sq_err;
            c->signal[i * ny + j] = q[i].why != NULL ? 0.0 : q[i].sum_sq_signal;
            c->note[i * ny + j] = q[i].why;
        }
    }
    free(q);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    c->seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    return ANVIL_OK;
}

static double snr_of(double signal, double sse) {
    if (isnan(sse)) return NAN;
    return sse > 0 ? 10.0 * log10(signal / sse) : INFINITY;
}

double cli_compare_snr(const cli_compare *c, size_t i, size_t j) {
    return snr_of(c->signal[i * c->n_types + j], c->sse[i * c->n_types + j]);
}

static void cell(FILE *f, double snr) {
    if (isnan(snr)) {
        fprintf(f, " %8s", "-");
    } else if (isinf(snr)) {
        fprintf(f, " %8s", "exact");
    } else {
        fprintf(f, " %8.2f", snr);
    }
}

static double type_bpw(const anvil_ctx *ctx, uint32_t id) {
    anvil_type_info info;
    if (anvil_type_lookup(ctx, id, &info, NULL) != ANVIL_OK || info.block_elems == 0) return 0.0;
    return 8.0 * info.block_bytes / info.block_elems;
}

void cli_compare_print(FILE *f, const cli_compare *c, const anvil_transcode *t, const anvil_ctx *ctx) {
    const size_t ny = c->n_types;
    fprintf(f, "compare: SNR dB of the same tensors in other formats (%.1f s; '-': not comparable):\n", c->seconds);
    fprintf(f, "  %-34s %-8s %8s", "tensor", "to", "SNR dB");
    for (size_t j = 0; j < ny; ++j) fprintf(f, " %8s", c->names[j]);
    fprintf(f, "\n  %-34s %-8s %8s", "", "", "");
    for (size_t j = 0; j < ny; ++j) fprintf(f, " %7.3fb", c->bpw[j]);
    fprintf(f, "  (bits/weight)\n");
    /* per tensor, then per target type over its tensors */
    uint32_t targets[64];
    size_t n_targets = 0;
    for (size_t i = 0; i < c->n_tensors; ++i) {
        const anvil_transcode_tensor *it = anvil_transcode_tensor_at(t, i);
        if (!it->has_quality) continue;
        fprintf(f, "  %-34s %-8s", it->name, anvil_type_name(ctx, it->dst_type));
        cell(f, it->snr_db);
        for (size_t j = 0; j < ny; ++j) cell(f, cli_compare_snr(c, i, j));
        fprintf(f, "\n");
        size_t k = 0;
        while (k < n_targets && targets[k] != it->dst_type) ++k;
        if (k == n_targets && n_targets < 64) targets[n_targets++] = it->dst_type;
    }
    for (size_t k = 0; k < n_targets; ++k) {
        double sig = 0, sse = 0, csig[CLI_COMPARE_MAX_TYPES] = { 0 }, csse[CLI_COMPARE_MAX_TYPES] = { 0 };
        int missing[CLI_COMPARE_MAX_TYPES] = { 0 };
        size_t count = 0;
        for (size_t i = 0; i < c->n_tensors; ++i) {
            const anvil_transcode_tensor *it = anvil_transcode_tensor_at(t, i);
            if (!it->has_quality || it->dst_type != targets[k]) continue;
            count++;
            sig += it->sum_sq_signal;
            sse += it->sum_sq_err;
            for (size_t j = 0; j < ny; ++j) {
                const size_t s = i * ny + j;
                if (isnan(c->sse[s])) {
                    missing[j] = 1;
                } else {
                    csig[j] += c->signal[s];
                    csse[j] += c->sse[s];
                }
            }
        }
        char label[64];
        snprintf(label, sizeof label, "all %zu tensors (%.3fb)", count, type_bpw(ctx, targets[k]));
        fprintf(f, "  %-34s %-8s", label, anvil_type_name(ctx, targets[k]));
        cell(f, snr_of(sig, sse));
        for (size_t j = 0; j < ny; ++j) cell(f, missing[j] ? NAN : snr_of(csig[j], csse[j]));
        fprintf(f, "\n");
    }
}

void cli_compare_json(FILE *f, const cli_compare *c, const anvil_transcode *t) {
    fprintf(f, "{\"types\":[");
    for (size_t j = 0; j < c->n_types; ++j) {
        fprintf(f, "%s{\"name\":", j ? "," : "");
        cli_json_string(f, c->names[j]);
        fprintf(f, ",\"bits_per_weight\":%.17g}", c->bpw[j]);
    }
    fprintf(f, "],\"seconds\":%.17g,\"tensors\":[", c->seconds);
    int first = 1;
    for (size_t i = 0; i < c->n_tensors; ++i) {
        const anvil_transcode_tensor *it = anvil_transcode_tensor_at(t, i);
        if (!it->has_quality) continue;
        fprintf(f, "%s{\"name\":", first ? "" : ",");
        first = 0;
        cli_json_string(f, it->name);
        fprintf(f, ",\"results\":[");
        for (size_t j = 0; j < c->n_types; ++j) {
            const double snr = cli_compare_snr(c, i, j);
            fprintf(f, "%s{\"type\":", j ? "," : "");
            cli_json_string(f, c->names[j]);
            fprintf(f, ",\"compared\":%s,\"snr_db\":", isnan(snr) ? "false" : "true");
            if (isfinite(snr)) {
                fprintf(f, "%.17g}", snr);
            } else {
                fputs("null}", f); /* exact, or not compared */
            }
        }
        fprintf(f, "]}");
    }
    fprintf(f, "]}");
}

void cli_compare_free(cli_compare *c) {
    free(c->sse);
    free(c->signal);
    free(c->note);
    c->sse = c->signal = NULL;
    c->note = NULL;
}
