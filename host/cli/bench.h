/* SPDX-License-Identifier: MIT */
/* `anvil bench` internals shared by the mat-vec bench (cmd_bench.c) and the
 * encoder bench (bench_encode.c): the workers and the clock (bench_crew.c),
 * and the encoder bench's entry. */
#ifndef ANVIL_CLI_BENCH_H
#define ANVIL_CLI_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/anvil.h"
#include "ggml_oracle.h"

/* The bench's workers are the context's (anvil_ctx_run_tasks): anvil's
 * passes and ggml's run on the same threads. crew_run calls fn(arg, tid, n)
 * for every tid in [0, n) and returns when all are done. */
typedef void (*work_fn)(void *arg, unsigned tid, unsigned nthreads);

typedef struct crew {
    anvil_ctx *ctx;
    unsigned n;
    work_fn fn;
    void *arg;
} crew;

/* n threads: sets the context's thread count (anvil_matmul's too). */
void crew_start(crew *c, anvil_ctx *ctx, unsigned n);
void crew_run(crew *c, work_fn fn, void *arg);
void crew_stop(crew *c);

double bench_now(void);

/* A comparison's timed passes: a (anvil's) and b (ggml's, or NULL) run in
 * turn, so both see the same machine state (other load, clock), until
 * stop(stop_arg, pairs done, seconds so far) says enough or cap pairs ran.
 * Keeps the fastest pass of each side and, when b ran, each pair's b/a in
 * ratios[0..done). */
typedef void (*bench_pass_fn)(void *arg);
typedef int (*bench_stop_fn)(const void *stop_arg, size_t done, double total);
typedef struct bench_alt {
    double best_a, best_b; /* seconds */
    size_t done;
} bench_alt;

void bench_alternate(bench_pass_fn a, void *a_arg, bench_pass_fn b, void *b_arg, bench_stop_fn stop,
                     const void *stop_arg, double *ratios, size_t cap, bench_alt *out);

/* anvil bench --encode: MB/s of f32 source per type against ggml's
 * reference encoder (ggml_quantize_chunk) on the same rows, passes
 * alternating. threads 0: one thread, then every online CPU. */
typedef struct bench_encode_opts {
    const uint32_t *ids;
    size_t n_ids;
    size_t rows, k, iters;
    unsigned threads;
    const char *backend; /* that backend's encoder instead of the dispatched one */
    int json;
    int imatrix; /* encode with a synthetic importance matrix (log-normal columns) */
} bench_encode_opts;

int bench_encode(anvil_ctx *ctx, const bench_encode_opts *o, const ggml_oracle *oracle, int have_ggml,
                 const char *ggml_why);

#endif
