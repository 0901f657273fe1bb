/* Internal: what a context holds. */
#ifndef ANVIL_HOST_CTX_H
#define ANVIL_HOST_CTX_H

#include <pthread.h>
#include <stddef.h>

#include "anvil/anvil.h"
#include "config.h"
#include "kernel_rows.h"
#include "registry.h"

#define ANVIL_REASON_MAX 512

/* A plugin file loaded in this process, shared by every context that uses
 * it (registry.c): dlopen'ed and init'ed once, before its first user;
 * deinit'ed and closed once, after its last. */
typedef struct plugin_lib plugin_lib;

typedef struct plugin_rec {
    char *name;                 /* as named in the config */
    char *path;                 /* resolved .so, or NULL */
    int line;                   /* config line that names it (0: found by scanning) */
    int status;                 /* ANVIL_OK when loaded */
    char reason[ANVIL_REASON_MAX];
    char trust_note[ANVIL_REASON_MAX]; /* loaded although untrusted (allow_insecure) */
    int optional;
    plugin_lib *lib;            /* the shared load while this context uses it */
    void *handle;               /* lib's dlopen handle while loaded */
    const anvil_plugin_desc *raw; /* the plugin's own descriptor */
    anvil_plugin_desc desc;     /* normalised copy: fields past struct_size are zero */
} plugin_rec;

typedef struct codec_rec {
    anvil_codec codec;          /* normalised copy */
    size_t plugin;
} codec_rec;

typedef struct backend_rec {
    anvil_backend backend;      /* normalised copy */
    size_t plugin;
    uint32_t score;
    char why[256];
    anvil_kernel *kernels;      /* normalised copies */
    anvil__rows_fn *kernel_rows; /* per kernel: how matmul runs it (kernel_rows.h) */
    size_t n_kernels;
    anvil_act_quantizer *quantizers;
    size_t n_quantizers;
    anvil_weight_encoder *encoders;  /* normalised copies (ABI 1.1) */
    size_t n_encoders;
} backend_rec;

typedef struct dispatch_rec {
    uint32_t weight_type;
    uint32_t act_type;
    const codec_rec *codec;
    const codec_rec *act_codec;      /* codec of act_type, when any */
    const anvil_kernel *kernel;      /* NULL: fallback */
    anvil__rows_fn kernel_rows;      /* the kernel's row runner (with kernel) */
    const backend_rec *backend;
    const anvil_act_quantizer *quantizer; /* NULL: act_codec->encode or f32 */
    const backend_rec *quantizer_backend;
    int fallback;
    int warned;                      /* fallback note logged once */
    char note[256];
    /* Weight encoders: who encodes this type without (encoder) and with
     * (weighted) an importance matrix. NULL: the codec's own encoder. */
    const anvil_weight_encoder *encoder;
    const backend_rec *encoder_backend;
    const anvil_weight_encoder *weighted;
    const backend_rec *weighted_backend;
    int weighted_drops_imatrix;      /* ggml ignores the matrix: `encoder` runs */
    char encoder_note[192];
} dispatch_rec;

struct anvil_ctx {
    int refs;
    anvil_config cfg;
    const anvil_cpu_info *cpu;
    plugin_rec *plugins;
    size_t n_plugins;
    codec_rec *codecs;
    size_t n_codecs;
    backend_rec *backends;
    size_t n_backends;
    dispatch_rec *dispatch;
    size_t n_dispatch;
    unsigned threads;         /* guarded by lock */
    struct anvil_pool *pool;  /* workers (matmul), created on first use */
    unsigned pool_users;      /* matmuls running on it (guarded by lock) */
    pthread_mutex_t lock;
    char insecure_why[4200];  /* text behind anvil_config_report.insecure_why */
};

/* registry.c */
int anvil__registry_load(anvil_ctx *ctx, int keep_going, anvil_error *err);
void anvil__registry_unload(anvil_ctx *ctx);
const codec_rec *anvil__registry_find_codec(const anvil_ctx *ctx, uint32_t type_id);
/* dispatch.c */
int anvil__dispatch_build(anvil_ctx *ctx, anvil_error *err);
const dispatch_rec *anvil__dispatch_find(const anvil_ctx *ctx, uint32_t weight_type);
/* ctx.c: the context's worker pool at its current thread count, held until
 * released; NULL when the context runs on one thread. */
struct anvil_pool *anvil__ctx_pool_acquire(anvil_ctx *ctx);
void anvil__ctx_pool_release(anvil_ctx *ctx, struct anvil_pool *pool);

#endif
