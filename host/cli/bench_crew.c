/* SPDX-License-Identifier: MIT */
/*
 * The bench's workers and clock (bench.h), below both benches: the mat-vec
 * bench (cmd_bench.c) and the encoder bench (bench_encode.c). The workers
 * are the context's pool (anvil_ctx_run_tasks), so anvil's passes and
 * ggml's run on the same threads; bench_alternate times them in turn.
 */
#include <string.h>
#include <time.h>

#include "bench.h"

double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void crew_task(void *arg, size_t task) {
    const crew *c = arg;
    c->fn(c->arg, (unsigned)task, c->n);
}

void crew_start(crew *c, anvil_ctx *ctx, unsigned n) {
    memset(c, 0, sizeof *c);
    c->ctx = ctx;
    c->n = n ? n : 1;
    anvil_ctx_set_threads(ctx, c->n);
}

void crew_run(crew *c, work_fn fn, void *arg) {
    c->fn = fn;
    c->arg = arg;
    anvil_ctx_run_tasks(c->ctx, c->n, crew_task, c);
}

void crew_stop(crew *c) { memset(c, 0, sizeof *c); }

void bench_alternate(bench_pass_fn a, void *a_arg, bench_pass_fn b, void *b_arg, bench_stop_fn stop,
                     const void *stop_arg, double *ratios, size_t cap, bench_alt *out) {
    double total = 0;
    out->best_a = out->best_b = 1e30;
    out->done = 0;
    while (out->done < cap) {
        double t0 = bench_now();
        a(a_arg);
        const double da = bench_now() - t0;
        double db = 0;
        if (b != NULL) {
            t0 = bench_now();
            b(b_arg);
            db = bench_now() - t0;
            if (db < out->best_b) out->best_b = db;
            ratios[out->done] = db / da;
        }
        if (da < out->best_a) out->best_a = da;
        total += da + db;
        out->done++;
        if (stop(stop_arg, out->done, total)) break;
    }
}
