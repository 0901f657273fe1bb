/* SPDX-License-Identifier: MIT */
/*
 * anvil — public host API.
 *
 * A context (anvil_ctx) is one loaded configuration: the plugins it names,
 * the codecs and backends they registered, the CPU probed once, and the
 * kernel chosen per weight type. Every fallible call returns a status
 * (ANVIL_OK = 0, negative on error) and, when given an anvil_error, leaves a
 * message there that says what failed, where, and what to do.
 *
 * Containers (GGUF, safetensors) and tools have their own headers next to
 * this one.
 *
 * Threads. These may be called from any number of threads at once:
 *   - anvil_ctx_open, anvil_ctx_open_ex, anvil_ctx_retain, anvil_ctx_close.
 *     A plugin file is loaded once per process however many contexts use
 *     it: its init runs once before its first use and its deinit once after
 *     the last context using it is closed, both under a process-wide lock.
 *   - On one shared context: anvil_matmul, anvil_weights_prepare,
 *     anvil_matmul_prepared (one prepared weights object may serve many
 *     threads), anvil_encode, anvil_encode_rows, anvil_decode,
 *     anvil_ctx_set_threads (takes effect once no matmul runs),
 *     anvil_ctx_run_tasks (one job at a time per context; others wait), and every
 *     call taking a const anvil_ctx * (lookups, reports).
 *   - Readers: anvil_gguf_open, anvil_st_open, and every accessor of an open
 *     file; one open file may be read from many threads at once.
 * Not to be shared between threads without a lock of your own: a writer
 * (anvil_gguf_writer, anvil_st_writer) or a transcode plan. Whatever the
 * object, close or free it once, when no other thread is using it.
 */
#ifndef ANVIL_ANVIL_H
#define ANVIL_ANVIL_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/abi.h"
#include "anvil/backend.h"
#include "anvil/blocks.h"
#include "anvil/codec.h"
#include "anvil/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(ANVIL_BUILDING_HOST)
#define ANVIL_API __attribute__((visibility("default")))
#else
#define ANVIL_API
#endif

/* ---- errors ------------------------------------------------------------- */

#define ANVIL_ERROR_MESSAGE_MAX 1024

typedef struct anvil_error {
    int code;                              /* last status, ANVIL_OK if none */
    char message[ANVIL_ERROR_MESSAGE_MAX]; /* what, where, what to do */
} anvil_error;

/* Short fixed name of a status code ("ANVIL_E_NONFINITE: non-finite input"). */
ANVIL_API const char *anvil_strerror(int status);
ANVIL_API const char *anvil_version(void);

/* ---- files -------------------------------------------------------------- */

/* Write size bytes to path atomically: a temp file in path's folder (with no
 * name while it is written, where the OS allows), flushed, renamed over
 * path. A reader sees the old file or the new one; a failure or a kill
 * leaves the old file as it was. An existing file keeps its permissions. *
 * What path is decides how it is written (every writer of anvil that takes a
 * path works this way): a regular file, a missing path, a symbolic link to a
 * regular file or a dangling link is replaced as above (a link is replaced
 * itself; the file it pointed to is left as it was). A character or block
 * device, a FIFO, a link to either, "-" or "/dev/stdout" (descriptor 1),
 * "/dev/stderr", "/dev/fd/N" or "/proc/self/fd/N" (descriptor N) is written
 * into, front to back, never replaced; a write error there (ENOSPC on
 * /dev/full) fails with the system's reason, and what was written stays
 * written. A FIFO waits up to 10 s for a reader, then is refused. A folder, a
 * socket, a terminal and a link through /proc to a regular file are refused
 * before anything is written. */
ANVIL_API int anvil_file_write_atomic(const char *path, const void *data, size_t size, anvil_error *err);

/* ANVIL_E_INVALID_ARG, naming both, when the output path out names one of
 * the n_inputs files the run reads (the same device and inode, links
 * followed; an output that does not exist yet: the same real path), so a
 * slip such as OUT = a shard of the checkpoint never replaces an input.
 * "-", devices and FIFOs (written into, never replaced) and inputs that do
 * not exist pass. Every command that writes calls it before writing. */
ANVIL_API int anvil_output_check(const char *out, const char *const *inputs, size_t n_inputs, anvil_error *err);

/* ---- types -------------------------------------------------------------- */

typedef struct anvil_type_info {
    uint32_t id;
    const char *name;     /* ggml spelling: "q4_K", "f16" */
    uint32_t block_elems; /* 1 for plain types */
    uint32_t block_bytes; /* bytes per block */
    int is_quantized;
    const char *family_plugin; /* plugin that provides it, e.g. "codec-kquants"; NULL for built-ins */
} anvil_type_info;

/* ggml's own type table (format constants, no plugin needed). Removed and
 * unknown ids answer ANVIL_E_UNKNOWN_TYPE with a message. */
ANVIL_API int anvil_type_builtin(uint32_t id, anvil_type_info *out, anvil_error *err);

/* Name -> id (case-insensitive; ggml spelling). With a context, codecs of
 * loaded third-party plugins are found too. */
struct anvil_ctx;
ANVIL_API int anvil_type_from_name(const struct anvil_ctx *ctx, const char *name, uint32_t *id, anvil_error *err);

/* Id -> info: built-in table, then (with ctx) loaded third-party codecs. */
ANVIL_API int anvil_type_lookup(const struct anvil_ctx *ctx, uint32_t id, anvil_type_info *out, anvil_error *err);

/* Id -> name, as anvil_type_lookup finds it (ctx may be NULL: built-in
 * types only); "?" for an id nothing knows. Never NULL; the string lives
 * as long as the type (a plugin's while its context is open). */
ANVIL_API const char *anvil_type_name(const struct anvil_ctx *ctx, uint32_t id);

/* Bytes for n elements of a type; ANVIL_E_BLOCK_MISMATCH when n is not a
 * whole number of blocks, ANVIL_E_OVERFLOW on overflow. */
ANVIL_API int anvil_type_bytes(const anvil_type_info *t, uint64_t n, uint64_t *bytes, anvil_error *err);

/* ---- context ------------------------------------------------------------ */

typedef struct anvil_ctx anvil_ctx;

/* Open a context. config_path: explicit file, or NULL to use $ANVIL_CONFIG,
 * then the config next to the executable (../etc/anvil/anvil.ini), then the
 * installed default. */
ANVIL_API int anvil_ctx_open(anvil_ctx **out, const char *config_path, anvil_error *err);

/* Flags for anvil_ctx_open_ex. */
#define ANVIL_CTX_KEEP_GOING 1u /* a plugin named but not found is recorded, not fatal */

ANVIL_API int anvil_ctx_open_ex(anvil_ctx **out, const char *config_path, unsigned flags, anvil_error *err);

/* Contexts are reference counted: an object that keeps using a context
 * (e.g. an open GGUF file resolving third-party types) retains it. Plugins
 * are unloaded only when the last reference is closed, so nothing a plugin
 * made outlives its code. anvil_ctx_close drops one reference. */
ANVIL_API anvil_ctx *anvil_ctx_retain(anvil_ctx *ctx);
ANVIL_API void anvil_ctx_close(anvil_ctx *ctx);

ANVIL_API const anvil_cpu_info *anvil_ctx_cpu(const anvil_ctx *ctx);
/* Space-separated names of the ANVIL_CPU_* bits in features ("avx2 fma ..."). */
ANVIL_API size_t anvil_cpu_features_string(uint64_t features, char *buf, size_t size);
ANVIL_API const char *anvil_cpu_arch_string(uint32_t arch);
ANVIL_API const char *anvil_ctx_config_path(const anvil_ctx *ctx);
/* Worker threads for matmul: [runtime] threads, 0 -> online CPUs. Setting
 * it (0 -> online CPUs) takes effect at the next matmul. */
ANVIL_API unsigned anvil_ctx_threads(const anvil_ctx *ctx);
ANVIL_API void anvil_ctx_set_threads(anvil_ctx *ctx, unsigned threads);

/* Run fn(arg, task) for every task in [0, n_tasks) on the context's worker
 * threads -- the anvil_ctx_threads() threads anvil_matmul runs on; the
 * calling thread works too -- and return when all are done. For work split
 * the way anvil_matmul splits its rows (anvil bench times ggml's kernels on
 * the same threads as anvil's). Tasks may run on any thread, several on one.
 * ANVIL_E_INVALID_ARG for a NULL ctx or fn. */
typedef void (*anvil_task_fn)(void *arg, size_t task);
ANVIL_API int anvil_ctx_run_tasks(anvil_ctx *ctx, size_t n_tasks, anvil_task_fn fn, void *arg);

/* The loaded codec for a type id / name, or NULL. */
ANVIL_API const anvil_codec *anvil_ctx_codec(const anvil_ctx *ctx, uint32_t type_id);

/* ---- plugin and dispatch reports (for `anvil plugins`) ------------------- */

typedef struct anvil_plugin_report {
    const char *name;              /* as named in the config */
    const char *path;              /* resolved file, or NULL when not found */
    int status;                    /* ANVIL_OK when loaded */
    const char *reason;            /* why it failed, or NULL */
    const anvil_plugin_desc *desc; /* NULL unless loaded */
    int optional;                  /* listed under [plugins] optional */
    int config_line;               /* the config line naming it (0: found by scanning the path) */
    const char *trust_note;        /* loaded although untrusted (allow_insecure): why, else NULL */
} anvil_plugin_report;

ANVIL_API size_t anvil_ctx_plugin_count(const anvil_ctx *ctx);
ANVIL_API int anvil_ctx_plugin_report(const anvil_ctx *ctx, size_t i, anvil_plugin_report *out);

/* Which config the context uses, why, and whether trust checks were relaxed
 * (plugin and config files must be changeable by their owner -- root or
 * you -- alone, like sshd's StrictModes; ANVIL_ALLOW_INSECURE=1 or
 * `[plugins] allow_insecure = yes` relax that for development). */
typedef struct anvil_config_report {
    const char *path;         /* the config file */
    const char *source;       /* how it was chosen: --config, ANVIL_CONFIG, a default */
    int insecure;             /* 1: untrusted plugins are loaded (with a note) */
    const char *insecure_why; /* what relaxed the checks, or NULL */
    const char *config_note;  /* why the config itself is untrusted (relaxed), or NULL */
} anvil_config_report;

ANVIL_API int anvil_ctx_config_report(const anvil_ctx *ctx, anvil_config_report *out);

typedef struct anvil_backend_report {
    const char *name;
    const char *plugin; /* plugin id */
    uint32_t score;     /* 0 = cannot run here */
    const char *why;    /* reason for score 0, or a note */
    const anvil_backend *backend;
    size_t n_kernels; /* validated copies of the backend's tables */
    const anvil_kernel *kernels;
    size_t n_quantizers;
    const anvil_act_quantizer *quantizers;
} anvil_backend_report;

ANVIL_API size_t anvil_ctx_backend_count(const anvil_ctx *ctx);
ANVIL_API int anvil_ctx_backend_report(const anvil_ctx *ctx, size_t i, anvil_backend_report *out);

typedef struct anvil_dispatch_report {
    uint32_t weight_type;
    uint32_t act_type;
    const char *backend;           /* backend providing the dot kernel, or NULL */
    const char *variant;           /* kernel variant */
    const char *quantizer_backend; /* who quantizes activations (or "codec") */
    int fallback;                  /* 1: decode + f32 dot (or codec's reference dot) */
    const char *note;              /* why this choice (pin, order, fallback reason) */
} anvil_dispatch_report;

/* Dispatch decision for every loaded codec, in type-id order. */
ANVIL_API size_t anvil_ctx_dispatch_count(const anvil_ctx *ctx);
ANVIL_API int anvil_ctx_dispatch_report(const anvil_ctx *ctx, size_t i, anvil_dispatch_report *out);

/* The kernel and activation quantizer for a weight type: from the named
 * backend (which must be usable here), or the dispatched choice when
 * backend is NULL. ANVIL_E_NO_KERNEL when there is none (the host would fall
 * back). F32 / F16 / BF16 weights (no codec): their (F, F32) kernel and no
 * quantizer (the activations are f32). For benchmarks and tests;
 * anvil_matmul is the normal path. */
ANVIL_API int anvil_ctx_find_kernel(const anvil_ctx *ctx, const char *backend, uint32_t weight_type,
                                    const anvil_kernel **kernel, const anvil_act_quantizer **quantizer,
                                    anvil_error *err);

/* Who encodes each type (ABI 1.1 weight encoders), indexed like the
 * dispatch report. backend NULL: the codec's own encoder. */
typedef struct anvil_encoder_report {
    uint32_t type_id;
    const char *backend; /* encoder without an importance matrix */
    const char *variant;
    const char *weighted_backend; /* with one (ANVIL_ENCODER_WEIGHTED), or NULL */
    const char *note;             /* why */
} anvil_encoder_report;

ANVIL_API int anvil_ctx_encoder_report(const anvil_ctx *ctx, size_t i, anvil_encoder_report *out);

/* A backend's weight encoders (validated copies), by backend index. */
ANVIL_API int anvil_ctx_backend_encoders(const anvil_ctx *ctx, size_t i, const anvil_weight_encoder **encoders,
                                         size_t *n);

/* The weight encoder for a type without an importance matrix: the named
 * backend's (which must be usable here), or the dispatched one when backend
 * is NULL. ANVIL_E_ENCODER_UNAVAILABLE when there is none (the codec's own
 * encoder runs then). For benchmarks and tests; anvil_encode_rows is the
 * normal path. */
ANVIL_API int anvil_ctx_find_encoder(const anvil_ctx *ctx, const char *backend, uint32_t type,
                                     const anvil_weight_encoder **encoder, anvil_error *err);

/* ---- encode / decode ---------------------------------------------------- */

/* Encode n f32 values (whole blocks) into type's blocks; dst_size >= bytes. */
ANVIL_API int anvil_encode(anvil_ctx *ctx, uint32_t type, const float *src, size_t n, void *dst, size_t dst_size,
                           anvil_error *err);
/* Encode nrows rows of n_per_row f32 values (n_per_row a whole number of
 * blocks) into type's blocks, optionally weighted by an importance matrix
 * (imatrix: n_per_row finite floats, or NULL; negative ones are used as
 * given, as ggml does): the bytes of
 * ggml_quantize_chunk(type, src, dst, 0, nrows, n_per_row, imatrix). A format
 * that needs an importance matrix answers ANVIL_E_NEEDS_IMATRIX without one;
 * a codec without a weighted encoder answers ANVIL_E_ENCODER_UNAVAILABLE when
 * given one. F32/F16/BF16 ignore imatrix, as ggml does. */
ANVIL_API int anvil_encode_rows(anvil_ctx *ctx, uint32_t type, const float *src, size_t nrows, size_t n_per_row,
                                const float *imatrix, void *dst, size_t dst_size, anvil_error *err);
/* Decode n values of type from src (src_size bytes) to f32. */
ANVIL_API int anvil_decode(anvil_ctx *ctx, uint32_t type, const void *src, size_t src_size, float *dst, size_t n,
                           anvil_error *err);

/* ---- dot products and matmul -------------------------------------------- */

/* y[i * n_rows + r] = x[i, :] . W[r, :] for i < m, r < n_rows; W holds n_rows
 * rows of k elements of `type`, row-major, rows contiguous. x is m x k f32.
 * The host quantizes x once per row into W's activation format and runs the
 * dispatched kernel (or the fallback). */
ANVIL_API int anvil_matmul(anvil_ctx *ctx, uint32_t type, const void *w, size_t n_rows, size_t k, const float *x,
                           size_t m, float *y, anvil_error *err);

/* ---- prepared weights: packed layouts, lifetime, threads ---------------- */

/* How long the weight bytes given to anvil_weights_prepare stay valid and
 * unchanged. TRANSIENT: until anvil_weights_free; nothing may be cached by
 * their address beyond that. STABLE: for the life of the process; backends
 * may cache derived data keyed by the address. */
#define ANVIL_WEIGHTS_TRANSIENT 0u
#define ANVIL_WEIGHTS_STABLE 1u
/* Build the backend's packed (column-interleaved) layout when it offers one.
 * Packing changes results by at most the documented float bound (the integer
 * parts are identical; only the f32 accumulation order may differ). */
#define ANVIL_WEIGHTS_PACK 2u

typedef struct anvil_weights anvil_weights;

/* Prepare an n_rows x k weight matrix of `type` (rows contiguous, each a
 * whole number of blocks) for repeated matmuls. The bytes are referenced,
 * not copied (a packed copy is made with ANVIL_WEIGHTS_PACK). */
ANVIL_API int anvil_weights_prepare(anvil_ctx *ctx, uint32_t type, const void *data, size_t n_rows, size_t k,
                                    unsigned flags, anvil_weights **out, anvil_error *err);
ANVIL_API void anvil_weights_free(anvil_weights *w);
/* 1 when a packed layout is in use. */
ANVIL_API int anvil_weights_packed(const anvil_weights *w);

/* y[i * n_rows + r] = x[i, :] . W[r, :] on the context's thread pool. The
 * result does not depend on the number of threads. */
ANVIL_API int anvil_matmul_prepared(anvil_ctx *ctx, const anvil_weights *w, const float *x, size_t m, float *y,
                                    anvil_error *err);

#ifdef __cplusplus
}
#endif

#endif /* ANVIL_ANVIL_H */
