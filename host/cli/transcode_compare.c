/* `anvil transcode --compare`: the converted tensors again, in other formats
 * (see transcode_compare.h). */
#include "transcode_compare.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cli.h"

#define CHUNK_ELEMS ((uint64_t)1 << 18) /* per job: bounded memory, whatever the tensor */
#define MAX_THREADS 64

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
        if (anvil_type_from_name(ctx, tok, &id, &err) != ANVIL_OK || anvil_type_lookup(ctx, id, &info, &err) != ANVIL_OK) {
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

/* ---- the jobs: (tensor, first row, rows), each with its own sums ----------- */

typedef struct job {
    size_t tensor;
    uint64_t row0, n_rows;
} job;

typedef struct run {
    anvil_ctx *ctx;
    const anvil_transcode *t;
    cli_compare *c;
    job *jobs;
    size_t n_jobs;
    double *sse, *sig; /* [job * n_types + j], [job] */
    int *fail;         /* [job * n_types + j]: the encoder's status when it refused */
    atomic_size_t next;
    size_t max_elems, max_bytes;
} run;

static int out_of_memory(anvil_error *err) {
    if (err != NULL) {
        err->code = ANVIL_E_NOMEM;
        snprintf(err->message, sizeof err->message, "transcode --compare: out of memory");
    }
    return ANVIL_E_NOMEM;
}

/* One of the context's workers (a task of anvil_ctx_run_tasks): its own
 * scratch, jobs taken in turn until none is left. */
static void worker(void *arg, size_t task) {
    (void)task;
    run *r = arg;
    float *x = malloc(r->max_elems * sizeof *x), *y = malloc(r->max_elems * sizeof *y);
    unsigned char *blocks = malloc(r->max_bytes);
    for (size_t k; x != NULL && y != NULL && blocks != NULL && (k = atomic_fetch_add(&r->next, 1)) < r->n_jobs;) {
        const job *jb = &r->jobs[k];
        const anvil_transcode_tensor *it = anvil_transcode_tensor_at(r->t, jb->tensor);
        const size_t n = (size_t)(jb->n_rows * it->row_len);
        const uint64_t src_row = it->src_bytes / it->n_rows;
        const unsigned char *src = (const unsigned char *)it->src->data + jb->row0 * src_row;
        if (anvil_decode(r->ctx, it->src_type, src, (size_t)(jb->n_rows * src_row), x, n, NULL) != ANVIL_OK) {
            for (size_t j = 0; j < r->c->n_types; ++j) r->fail[k * r->c->n_types + j] = ANVIL_E_INTERNAL;
            continue;
        }
        double sig = 0;
        for (size_t i = 0; i < n; ++i) sig += (double)x[i] * x[i];
        r->sig[k] = sig;
        for (size_t j = 0; j < r->c->n_types; ++j) {
            const size_t slot = k * r->c->n_types + j;
            if (r->c->note[jb->tensor * r->c->n_types + j] != NULL) continue;
            anvil_type_info info;
            uint64_t bytes = 0;
            int rc = anvil_type_lookup(r->ctx, r->c->types[j], &info, NULL);
            if (rc == ANVIL_OK) rc = anvil_type_bytes(&info, n, &bytes, NULL);
            if (rc == ANVIL_OK) rc = anvil_encode(r->ctx, r->c->types[j], x, n, blocks, (size_t)bytes, NULL);
            if (rc == ANVIL_OK) rc = anvil_decode(r->ctx, r->c->types[j], blocks, (size_t)bytes, y, n, NULL);
            if (rc != ANVIL_OK) {
                r->fail[slot] = rc;
                continue;
            }
            double sse = 0;
            for (size_t i = 0; i < n; ++i) sse += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
            r->sse[slot] = sse;
        }
    }
    free(x);
    free(y);
    free(blocks);
}

int cli_compare_run(anvil_ctx *ctx, const anvil_transcode *t, unsigned threads, cli_compare *c, anvil_error *err) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    const size_t nt = anvil_transcode_count(t), ny = c->n_types;
    c->n_tensors = nt;
    c->sse = calloc(nt * ny + 1, sizeof *c->sse);
    c->signal = calloc(nt * ny + 1, sizeof *c->signal);
    c->note = calloc(nt * ny + 1, sizeof *c->note);
    run r = { .ctx = ctx, .t = t, .c = c };
    size_t cap = 0;
    for (size_t i = 0; i < nt; ++i) {
        const anvil_transcode_tensor *it = anvil_transcode_tensor_at(t, i);
        for (size_t j = 0; j < ny && c->note != NULL; ++j) {
            anvil_type_info info;
            c->sse[i * ny + j] = NAN;
            if (!it->has_quality) {
                c->note[i * ny + j] = "not converted";
            } else if (anvil_type_lookup(ctx, c->types[j], &info, NULL) != ANVIL_OK || it->row_len % info.block_elems) {
                c->note[i * ny + j] = "row length not a multiple of its block";
            } else {
                const uint64_t rows_per_job = it->row_len >= CHUNK_ELEMS ? 1 : CHUNK_ELEMS / it->row_len;
                cap += (size_t)((it->n_rows + rows_per_job - 1) / rows_per_job);
                const size_t elems = (size_t)((rows_per_job < it->n_rows ? rows_per_job : it->n_rows) * it->row_len);
                if (elems > r.max_elems) r.max_elems = elems;
            }
        }
    }
    r.jobs = calloc(cap + 1, sizeof *r.jobs);
    if (c->sse == NULL || c->signal == NULL || c->note == NULL || r.jobs == NULL) {
        free(r.jobs);
        return out_of_memory(err);
    }
    for (size_t i = 0; i < nt; ++i) {
        const anvil_transcode_tensor *it = anvil_transcode_tensor_at(t, i);
        int any = 0;
        for (size_t j = 0; j < ny; ++j) any |= c->note[i * ny + j] == NULL;
        if (!any) continue;
        const uint64_t rows_per_job = it->row_len >= CHUNK_ELEMS ? 1 : CHUNK_ELEMS / it->row_len;
        for (uint64_t r0 = 0; r0 < it->n_rows && r.n_jobs < cap; r0 += rows_per_job) {
            r.jobs[r.n_jobs++] = (job){ i, r0, it->n_rows - r0 < rows_per_job ? it->n_rows - r0 : rows_per_job };
        }
    }
    /* the largest encoding of a job: 16 bytes per element covers every format */
    r.max_bytes = r.max_elems * 16 + 64;
    r.sse = calloc(r.n_jobs * ny + 1, sizeof *r.sse);
    r.sig = calloc(r.n_jobs + 1, sizeof *r.sig);
    r.fail = calloc(r.n_jobs * ny + 1, sizeof *r.fail);
    if (r.sse == NULL || r.sig == NULL || r.fail == NULL) {
        free(r.jobs);
        free(r.sse);
        free(r.sig);
        free(r.fail);
        return out_of_memory(err);
    }
    atomic_init(&r.next, 0);
    if (threads == 0) threads = anvil_ctx_threads(ctx);
    if (threads == 0) threads = 1;
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    anvil_ctx_set_threads(ctx, threads);
    anvil_ctx_run_tasks(ctx, threads, worker, &r);
    /* sums in job order: the same figures for any thread count */
    for (size_t k = 0; k < r.n_jobs; ++k) {
        const size_t i = r.jobs[k].tensor;
        for (size_t j = 0; j < ny; ++j) {
            if (c->note[i * ny + j] != NULL) continue;
            if (r.fail[k * ny + j] != 0) {
                c->note[i * ny + j] = anvil_strerror(r.fail[k * ny + j]);
                continue;
            }
            c->sse[i * ny + j] = (isnan(c->sse[i * ny + j]) ? 0.0 : c->sse[i * ny + j]) + r.sse[k * ny + j];
            c->signal[i * ny + j] += r.sig[k];
        }
    }
    for (size_t s = 0; s < nt * ny; ++s) {
        if (c->note[s] != NULL) c->sse[s] = NAN;
    }
    free(r.jobs);
    free(r.sse);
    free(r.sig);
    free(r.fail);
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
