/*
 * Dispatch: for each weight type, which backend's kernel runs its dot
 * product, who quantizes the activations, or why the host falls back.
 *
 * Rule: the codec names its activation format; the kernel for
 * (weight, activation) comes from the first backend in [backends] order that
 * is usable on this CPU (score > 0) and has it; backends the order does not
 * name come after, in load order. [type.NAME] backend = X puts X first for
 * that type. With no kernel anywhere: the codec's reference dot when it has
 * one, else decode + f32 dot -- and the host says so once.
 *
 * Weight encoders follow the same rule (pin, then order, usable backends
 * only): the first backend offering an encoder for the type encodes it
 * without an importance matrix, the first offering an ANVIL_ENCODER_WEIGHTED
 * one encodes it with one. Only a type whose codec can encode it (the
 * referee) gets one; otherwise, and when no backend offers one, the codec's
 * own encoder runs. A format whose codec says ggml ignores the matrix
 * (ANVIL_CODEC_IMATRIX_UNUSED) encodes weighted calls with the unweighted
 * encoder, the matrix dropped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ctx.h"
#include "error.h"

static const anvil_kernel *find_kernel(const backend_rec *b, uint32_t w, uint32_t a) {
    for (size_t i = 0; i < b->n_kernels; ++i) {
        if (b->kernels[i].weight_type == w && b->kernels[i].act_type == a) return &b->kernels[i];
    }
    return NULL;
}

static const anvil_act_quantizer *find_quantizer(const backend_rec *b, uint32_t a) {
    for (size_t i = 0; i < b->n_quantizers; ++i) {
        if (b->quantizers[i].act_type == a) return &b->quantizers[i];
    }
    return NULL;
}

static const anvil_weight_encoder *find_encoder(const backend_rec *b, uint32_t type) {
    for (size_t i = 0; i < b->n_encoders; ++i) {
        if (b->encoders[i].type_id == type) return &b->encoders[i];
    }
    return NULL;
}

static const backend_rec *backend_by_name(const anvil_ctx *ctx, const char *name) {
    for (size_t i = 0; i < ctx->n_backends; ++i) {
        if (strcasecmp(ctx->backends[i].backend.name, name) == 0) return &ctx->backends[i];
    }
    return NULL;
}

/* Backends in preference order: the configured order, then the rest. */
/* Backends in preference order: those [backends] order names, in its order;
 * then the others by score, highest first (ggml's backend loader picks its
 * best-scoring variant the same way); equal scores keep load order. Returns
 * the count; *n_named is how many the order named. */
static size_t preference(const anvil_ctx *ctx, const backend_rec **out, size_t *n_named) {
    size_t n = 0;
    for (size_t i = 0; i < ctx->cfg.n_order; ++i) {
        const backend_rec *b = backend_by_name(ctx, ctx->cfg.order[i]);
        if (b == NULL) continue;
        int dup = 0;
        for (size_t j = 0; j < n; ++j) dup |= out[j] == b;
        if (!dup) out[n++] = b;
    }
    *n_named = n;
    for (size_t i = 0; i < ctx->n_backends; ++i) {
        int dup = 0;
        for (size_t j = 0; j < n; ++j) dup |= out[j] == &ctx->backends[i];
        if (dup) continue;
        /* insertion by score, stable */
        size_t at = n;
        while (at > *n_named && out[at - 1]->score < ctx->backends[i].score) {
            out[at] = out[at - 1];
            --at;
        }
        out[at] = &ctx->backends[i];
        ++n;
    }
    return n;
}

static const anvil_config_pin *pin_for(const anvil_ctx *ctx, const char *type_name) {
    for (size_t i = 0; i < ctx->cfg.n_pins; ++i) {
        if (strcasecmp(ctx->cfg.pins[i].type_name, type_name) == 0) return &ctx->cfg.pins[i];
    }
    return NULL;
}

static int cmp_codec(const void *a, const void *b) {
    const codec_rec *x = *(const codec_rec *const *)a, *y = *(const codec_rec *const *)b;
    return x->codec.type_id < y->codec.type_id ? -1 : x->codec.type_id > y->codec.type_id;
}

static const char *type_name(const anvil_ctx *ctx, uint32_t id) {
    anvil_type_info t;
    if (anvil_type_lookup(ctx, id, &t, NULL) == ANVIL_OK) return t.name;
    return "?";
}

/* The encoder for d's type with (weighted) or without an importance matrix:
 * the pinned backend's if it has one, else the first usable one in order. */
static void pick_encoder(dispatch_rec *d, const anvil_config_pin *pin, const backend_rec *const *pref, size_t n_pref,
                         int weighted, const anvil_ctx *ctx) {
    const uint32_t type = d->weight_type;
    const backend_rec *pb = pin ? backend_by_name(ctx, pin->backend) : NULL;
    const anvil_weight_encoder *e = pb && pb->score > 0 ? find_encoder(pb, type) : NULL;
    const backend_rec *eb = pb;
    if (e != NULL && weighted && !(e->flags & ANVIL_ENCODER_WEIGHTED)) e = NULL;
    for (size_t j = 0; e == NULL && j < n_pref; ++j) {
        if (pref[j]->score == 0) continue;
        e = find_encoder(pref[j], type);
        eb = pref[j];
        if (e != NULL && weighted && !(e->flags & ANVIL_ENCODER_WEIGHTED)) e = NULL;
    }
    if (weighted) {
        d->weighted = e;
        d->weighted_backend = e ? eb : NULL;
    } else {
        d->encoder = e;
        d->encoder_backend = e ? eb : NULL;
    }
}

static void choose_encoders(dispatch_rec *d, const backend_rec *const *pref, size_t n_pref, const anvil_ctx *ctx) {
    const anvil_codec *c = &d->codec->codec;
    const anvil_config_pin *pin = pin_for(ctx, c->name);
    const int can_plain = c->encode != NULL && !(c->flags & ANVIL_CODEC_NEEDS_IMATRIX);
    if (can_plain) pick_encoder(d, pin, pref, n_pref, 0, ctx);
    if (c->encode_rows != NULL) pick_encoder(d, pin, pref, n_pref, 1, ctx);
    if (c->encode_rows != NULL && (c->flags & ANVIL_CODEC_IMATRIX_UNUSED) && d->encoder != NULL) {
        /* ggml accepts and ignores the matrix for this format, so the
         * unweighted encoder's bytes are the weighted ones. */
        d->weighted = d->encoder;
        d->weighted_backend = d->encoder_backend;
        d->weighted_drops_imatrix = 1;
    }
    const char *pinned = pin != NULL && d->encoder_backend != NULL &&
                                 strcasecmp(d->encoder_backend->backend.name, pin->backend) == 0
                             ? "pinned by [type]"
                             : "first usable backend in order with one";
    if (!can_plain) {
        snprintf(d->encoder_note, sizeof d->encoder_note, "%s",
                 (c->flags & ANVIL_CODEC_NEEDS_IMATRIX) ? "ggml encodes it only with an importance matrix"
                 : c->encode_rows != NULL              ? "encoded only with an importance matrix"
                                                       : "the codec has no encoder for it");
    } else if (d->encoder != NULL) {
        snprintf(d->encoder_note, sizeof d->encoder_note, "%s", pinned);
    } else {
        snprintf(d->encoder_note, sizeof d->encoder_note, "no backend has one: the codec's reference");
    }
}

/* A backend the order may name: a loaded one, or the one a plugin named
 * backend-NAME in the config would provide (absent here, or failed). */
static int backend_known(const anvil_ctx *ctx, const char *name) {
    if (backend_by_name(ctx, name) != NULL) return 1;
    for (size_t i = 0; i < ctx->n_plugins; ++i) {
        const char *pn = ctx->plugins[i].name;
        if (ctx->plugins[i].lib == NULL && strncmp(pn, "backend-", 8) == 0 && strcasecmp(pn + 8, name) == 0) return 1;
    }
    return 0;
}

static int check_order(const anvil_ctx *ctx, anvil_error *err) {
    for (size_t i = 0; i < ctx->cfg.n_order; ++i) {
        if (backend_known(ctx, ctx->cfg.order[i])) continue;
        char known[512] = "";
        size_t at = 0;
        for (size_t b = 0; b < ctx->n_backends && at < sizeof known; ++b) {
            const int w = snprintf(known + at, sizeof known - at, "%s%s", at ? ", " : "", ctx->backends[b].backend.name);
            if (w > 0) at += (size_t)w;
        }
        for (size_t k = 0; k < ctx->n_plugins && at < sizeof known; ++k) {
            const char *pn = ctx->plugins[k].name;
            if (ctx->plugins[k].lib != NULL || strncmp(pn, "backend-", 8) != 0) continue;
            const int w = snprintf(known + at, sizeof known - at, "%s%s (not loaded)", at ? ", " : "", pn + 8);
            if (w > 0) at += (size_t)w;
        }
        return anvil__error_set(err, ANVIL_E_CONFIG_VALUE,
                               "%s:%d: [backends] order names '%s', which no plugin provides; known backends: "
                               "%s",
                               ctx->cfg.path, ctx->cfg.order_lines ? ctx->cfg.order_lines[i] : 0,
                               ctx->cfg.order[i], known[0] ? known : "none");
    }
    return ANVIL_OK;
}

int anvil__dispatch_build(anvil_ctx *ctx, anvil_error *err) {
    const int order_rc = check_order(ctx, err);
    if (order_rc != ANVIL_OK) return order_rc;
    /* Pins must name a type and a loaded backend. */
    for (size_t i = 0; i < ctx->cfg.n_pins; ++i) {
        const anvil_config_pin *pin = &ctx->cfg.pins[i];
        uint32_t id;
        if (anvil_type_from_name(ctx, pin->type_name, &id, NULL) != ANVIL_OK) {
            return anvil__error_set(err, ANVIL_E_CONFIG_VALUE,
                                   "%s:%d: [type.%s]: unknown type '%s' (use ggml's spelling, e.g. q4_K)",
                                   ctx->cfg.path, pin->line, pin->type_name, pin->type_name);
        }
        if (backend_by_name(ctx, pin->backend) == NULL) {
            return anvil__error_set(err, ANVIL_E_CONFIG_VALUE,
                                   "%s:%d: [type.%s] backend = %s: no loaded plugin provides backend '%s'",
                                   ctx->cfg.path, pin->line, pin->type_name, pin->backend, pin->backend);
        }
    }

    const codec_rec **sorted = calloc(ctx->n_codecs + 1, sizeof *sorted);
    const backend_rec **pref = calloc(ctx->n_backends + 1, sizeof *pref);
    ctx->dispatch = calloc(ctx->n_codecs + 1, sizeof *ctx->dispatch);
    if (sorted == NULL || pref == NULL || ctx->dispatch == NULL) {
        free(sorted);
        free(pref);
        return anvil__error_set(err, ANVIL_E_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < ctx->n_codecs; ++i) sorted[i] = &ctx->codecs[i];
    qsort(sorted, ctx->n_codecs, sizeof *sorted, cmp_codec);
    size_t n_named = 0;
    const size_t n_pref = preference(ctx, pref, &n_named);

    for (size_t i = 0; i < ctx->n_codecs; ++i) {
        const codec_rec *c = sorted[i];
        dispatch_rec *d = &ctx->dispatch[ctx->n_dispatch++];
        d->codec = c;
        d->weight_type = c->codec.type_id;
        d->act_type = c->codec.act_type;
        d->act_codec = anvil__registry_find_codec(ctx, d->act_type);
        const uint32_t w = d->weight_type, a = d->act_type;
        char pin_note[160] = "";

        const anvil_config_pin *pin = pin_for(ctx, c->codec.name);
        if (pin != NULL) {
            const backend_rec *pb = backend_by_name(ctx, pin->backend);
            const anvil_kernel *k = pb ? find_kernel(pb, w, a) : NULL;
            if (pb != NULL && pb->score > 0 && k != NULL) {
                d->backend = pb;
                d->kernel = k;
                snprintf(d->note, sizeof d->note, "pinned by [type.%s]", pin->type_name);
            } else {
                snprintf(pin_note, sizeof pin_note, "pin to '%s' ignored (%s); ", pin->backend,
                         pb == NULL ? "not loaded"
                         : pb->score == 0 ? "cannot run on this CPU"
                                          : "it has no kernel for this type");
            }
        }
        if (d->kernel == NULL) {
            for (size_t j = 0; j < n_pref; ++j) {
                const anvil_kernel *k = find_kernel(pref[j], w, a);
                if (k != NULL && pref[j]->score > 0) {
                    d->backend = pref[j];
                    d->kernel = k;
                    const backend_rec *next = NULL;
                    for (size_t j2 = j + 1; j >= n_named && next == NULL && j2 < n_pref; ++j2) {
                        if (pref[j2]->score > 0 && find_kernel(pref[j2], w, a) != NULL) next = pref[j2];
                    }
                    if (next != NULL) {
                        snprintf(d->note, sizeof d->note,
                                 "%schosen: score %u > %u (%s), ranked by score: [backends] order names neither",
                                 pin_note, pref[j]->score, next->score, next->backend.name);
                    } else {
                        snprintf(d->note, sizeof d->note, "%sfirst usable backend in order with a %s.%s kernel",
                                 pin_note, c->codec.name, type_name(ctx, a));
                    }
                    break;
                }
            }
        }
        /* Activation quantizer: the kernel's own backend first, so a backend
         * runs on the layout it produced; then any usable backend; then the
         * activation codec's encoder. */
        if (a != ANVIL_TYPE_F32) {
            if (d->backend != NULL && d->backend->score > 0) {
                d->quantizer = find_quantizer(d->backend, a);
                if (d->quantizer) d->quantizer_backend = d->backend;
            }
            for (size_t j = 0; d->quantizer == NULL && j < n_pref; ++j) {
                if (pref[j]->score > 0) {
                    d->quantizer = find_quantizer(pref[j], a);
                    if (d->quantizer) d->quantizer_backend = pref[j];
                }
            }
            if (d->quantizer == NULL && (d->act_codec == NULL || d->act_codec->codec.encode == NULL)) {
                if (d->kernel != NULL) {
                    snprintf(d->note, sizeof d->note,
                             "%skernel in '%s' unusable: nothing quantizes activations to %s", pin_note,
                             d->backend->backend.name, type_name(ctx, a));
                    d->kernel = NULL;
                    d->backend = NULL;
                }
            }
        }
        choose_encoders(d, pref, n_pref, ctx);
        if (d->kernel != NULL) d->kernel_rows = d->backend->kernel_rows[d->kernel - d->backend->kernels];
        if (d->kernel == NULL) {
            d->fallback = 1;
            const int have_act = a == ANVIL_TYPE_F32 || d->quantizer != NULL ||
                                 (d->act_codec != NULL && d->act_codec->codec.encode != NULL);
            if (c->codec.ref_vec_dot != NULL && have_act) {
                snprintf(d->note, sizeof d->note, "%sno backend has a %s.%s kernel: codec's reference dot",
                         pin_note, c->codec.name, type_name(ctx, a));
            } else {
                snprintf(d->note, sizeof d->note, "%sno backend has a %s.%s kernel: decode + f32 dot", pin_note,
                         c->codec.name, type_name(ctx, a));
            }
        }
    }
    free(sorted);
    free(pref);
    return ANVIL_OK;
}

const dispatch_rec *anvil__dispatch_find(const anvil_ctx *ctx, uint32_t weight_type) {
    for (size_t i = 0; ctx != NULL && i < ctx->n_dispatch; ++i) {
        if (ctx->dispatch[i].weight_type == weight_type) return &ctx->dispatch[i];
    }
    return NULL;
}

/* The backend named `name`, which must be loaded and usable here. */
static int usable_backend(const anvil_ctx *ctx, const char *name, const backend_rec **out, anvil_error *err) {
    const backend_rec *b = backend_by_name(ctx, name);
    if (b == NULL) return anvil__error_set(err, ANVIL_E_NOT_FOUND, "no loaded backend is named '%s'", name);
    if (b->score == 0) {
        return anvil__error_set(err, ANVIL_E_CPU_UNSUPPORTED, "backend '%s' cannot run on this CPU: %s", name, b->why);
    }
    *out = b;
    return ANVIL_OK;
}

ANVIL_API int anvil_ctx_find_kernel(const anvil_ctx *ctx, const char *backend, uint32_t weight_type,
                                    const anvil_kernel **kernel, const anvil_act_quantizer **quantizer,
                                    anvil_error *err) {
    *kernel = NULL;
    *quantizer = NULL;
    const dispatch_rec *d = anvil__dispatch_find(ctx, weight_type);
    if (d == NULL) {
        return anvil__error_set(err, ANVIL_E_UNKNOWN_TYPE, "type id %u: no loaded codec", weight_type);
    }
    if (backend == NULL) {
        if (d->kernel == NULL) {
            return anvil__error_set(err, ANVIL_E_NO_KERNEL, "%s: %s", d->codec->codec.name, d->note);
        }
        *kernel = d->kernel;
        *quantizer = d->quantizer;
        return ANVIL_OK;
    }
    const backend_rec *b = NULL;
    const int rc = usable_backend(ctx, backend, &b, err);
    if (rc != ANVIL_OK) return rc;
    *kernel = find_kernel(b, weight_type, d->act_type);
    if (*kernel == NULL) {
        return anvil__error_set(err, ANVIL_E_NO_KERNEL, "backend '%s' has no %s kernel", backend,
                               d->codec->codec.name);
    }
    *quantizer = find_quantizer(b, d->act_type);
    if (*quantizer == NULL) *quantizer = d->quantizer;
    return ANVIL_OK;
}

ANVIL_API int anvil_ctx_find_encoder(const anvil_ctx *ctx, const char *backend, uint32_t type,
                                     const anvil_weight_encoder **encoder, anvil_error *err) {
    *encoder = NULL;
    const dispatch_rec *d = anvil__dispatch_find(ctx, type);
    if (d == NULL) return anvil__error_set(err, ANVIL_E_UNKNOWN_TYPE, "type id %u: no loaded codec", type);
    if (backend == NULL) {
        if (d->encoder == NULL) {
            return anvil__error_set(err, ANVIL_E_ENCODER_UNAVAILABLE, "%s: %s", d->codec->codec.name,
                                   d->encoder_note);
        }
        *encoder = d->encoder;
        return ANVIL_OK;
    }
    const backend_rec *b = NULL;
    const int rc = usable_backend(ctx, backend, &b, err);
    if (rc != ANVIL_OK) return rc;
    *encoder = find_encoder(b, type);
    if (*encoder == NULL) {
        return anvil__error_set(err, ANVIL_E_ENCODER_UNAVAILABLE, "backend '%s' has no %s encoder", backend,
                               d->codec->codec.name);
    }
    return ANVIL_OK;
}
