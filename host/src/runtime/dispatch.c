/* SPDX-License-Identifier: MIT */
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

#include "dispatch.h"
#include "error.h"
#include "registry.h"

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

/* Backends in preference order: the configured order, then the rest. */
/* Backends in preference order: those [backends] order names, in its order;
 * then the others by score, highest first (ggml's backend loader picks its
 * best-scoring variant the same way); equal scores keep load order. Returns
 * the count; *n_named is how many the order named. */
static size_t preference(const anvil_registry *reg, const backend_rec **out, size_t *n_named) {
    size_t n = 0;
    for (size_t i = 0; i < reg->cfg->n_order; ++i) {
        const backend_rec *b = anvil__registry_backend_by_name(reg, reg->cfg->order[i]);
        if (b == NULL) continue;
        int dup = 0;
        for (size_t j = 0; j < n; ++j) dup |= out[j] == b;
        if (!dup) out[n++] = b;
    }
    *n_named = n;
    for (size_t i = 0; i < reg->n_backends; ++i) {
        int dup = 0;
        for (size_t j = 0; j < n; ++j) dup |= out[j] == &reg->backends[i];
        if (dup) continue;
        /* insertion by score, stable */
        size_t at = n;
        while (at > *n_named && out[at - 1]->score < reg->backends[i].score) {
            out[at] = out[at - 1];
            --at;
        }
        out[at] = &reg->backends[i];
        ++n;
    }
    return n;
}

static const anvil_config_pin *pin_for(const anvil_registry *reg, const char *type_name) {
    for (size_t i = 0; i < reg->cfg->n_pins; ++i) {
        if (strcasecmp(reg->cfg->pins[i].type_name, type_name) == 0) return &reg->cfg->pins[i];
    }
    return NULL;
}

static int cmp_codec(const void *a, const void *b) {
    const codec_rec *x = *(const codec_rec *const *)a, *y = *(const codec_rec *const *)b;
    return x->codec.type_id < y->codec.type_id ? -1 : x->codec.type_id > y->codec.type_id;
}

/* The encoder for d's type with (weighted) or without an importance matrix:
 * the pinned backend's if it has one, else the first usable one in order. */
static void pick_encoder(dispatch_rec *d, const anvil_config_pin *pin, const backend_rec *const *pref, size_t n_pref,
                         int weighted, const anvil_registry *reg) {
    const uint32_t type = d->weight_type;
    const backend_rec *pb = pin ? anvil__registry_backend_by_name(reg, pin->backend) : NULL;
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

static void choose_encoders(dispatch_rec *d, const backend_rec *const *pref, size_t n_pref,
                            const anvil_registry *reg) {
    const anvil_codec *c = &d->codec->codec;
    const anvil_config_pin *pin = pin_for(reg, c->name);
    const int can_plain = c->encode != NULL && !(c->flags & ANVIL_CODEC_NEEDS_IMATRIX);
    if (can_plain) pick_encoder(d, pin, pref, n_pref, 0, reg);
    if (c->encode_rows != NULL) pick_encoder(d, pin, pref, n_pref, 1, reg);
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
                 : c->encode_rows != NULL               ? "encoded only with an importance matrix"
                                                        : "the codec has no encoder for it");
    } else if (d->encoder != NULL) {
        snprintf(d->encoder_note, sizeof d->encoder_note, "%s", pinned);
    } else {
        snprintf(d->encoder_note, sizeof d->encoder_note, "no backend has one: the codec's reference");
    }
}

/* A backend the order may name: a loaded one, or the one a plugin named
 * backend-NAME in the config would provide (absent here, or failed). */
static int backend_known(const anvil_registry *reg, const char *name) {
    if (anvil__registry_backend_by_name(reg, name) != NULL) return 1;
    for (size_t i = 0; i < reg->n_plugins; ++i) {
        const char *pn = reg->plugins[i].name;
        if (reg->plugins[i].lib == NULL && strncmp(pn, "backend-", 8) == 0 && strcasecmp(pn + 8, name) == 0) return 1;
    }
    return 0;
}

static int check_order(const anvil_registry *reg, anvil_error *err) {
    for (size_t i = 0; i < reg->cfg->n_order; ++i) {
        if (backend_known(reg, reg->cfg->order[i])) continue;
        char known[512] = "";
        size_t at = 0;
        for (size_t b = 0; b < reg->n_backends && at < sizeof known; ++b) {
            const int w =
                snprintf(known + at, sizeof known - at, "%s%s", at ? ", " : "", reg->backends[b].backend.name);
            if (w > 0) at += (size_t)w;
        }
        for (size_t k = 0; k < reg->n_plugins && at < sizeof known; ++k) {
            const char *pn = reg->plugins[k].name;
            if (reg->plugins[k].lib != NULL || strncmp(pn, "backend-", 8) != 0) continue;
            const int w = snprintf(known + at, sizeof known - at, "%s%s (not loaded)", at ? ", " : "", pn + 8);
            if (w > 0) at += (size_t)w;
        }
        return anvil__error_set(err, ANVIL_E_CONFIG_VALUE,
                                "%s:%d: [backends] order names '%s', which no plugin provides; known backends: "
                                "%s",
                                reg->cfg->path, reg->cfg->order_lines ? reg->cfg->order_lines[i] : 0,
                                reg->cfg->order[i], known[0] ? known : "none");
    }
    return ANVIL_OK;
}

/* Pins must name a type and a loaded backend. */
static int check_pins(const anvil_registry *reg, anvil_error *err) {
    for (size_t i = 0; i < reg->cfg->n_pins; ++i) {
        const anvil_config_pin *pin = &reg->cfg->pins[i];
        uint32_t id;
        if (anvil__type_from_name_in(reg, pin->type_name, &id, NULL) != ANVIL_OK) {
            return anvil__error_set(err, ANVIL_E_CONFIG_VALUE,
                                    "%s:%d: [type.%s]: unknown type '%s' (use ggml's spelling, e.g. q4_K)",
                                    reg->cfg->path, pin->line, pin->type_name, pin->type_name);
        }
        if (anvil__registry_backend_by_name(reg, pin->backend) == NULL) {
            return anvil__error_set(err, ANVIL_E_CONFIG_VALUE,
                                    "%s:%d: [type.%s] backend = %s: no loaded plugin provides backend '%s'",
                                    reg->cfg->path, pin->line, pin->type_name, pin->backend, pin->backend);
        }
    }
    return ANVIL_OK;
}

/* The kernel for d's (weight, activation): the pinned backend's, else the
 * first usable one in preference order. pin_note says why a pin was not
 * taken (it prefixes d's note). */
static void choose_kernel(dispatch_rec *d, const anvil_registry *reg, const backend_rec *const *pref, size_t n_pref,
                          size_t n_named, char *pin_note, size_t pin_note_size) {
    const codec_rec *c = d->codec;
    const uint32_t w = d->weight_type, a = d->act_type;
    const anvil_config_pin *pin = pin_for(reg, c->codec.name);
    if (pin != NULL) {
        const backend_rec *pb = anvil__registry_backend_by_name(reg, pin->backend);
        const anvil_kernel *k = pb ? find_kernel(pb, w, a) : NULL;
        if (pb != NULL && pb->score > 0 && k != NULL) {
            d->backend = pb;
            d->kernel = k;
            snprintf(d->note, sizeof d->note, "pinned by [type.%s]", pin->type_name);
            return;
        }
        snprintf(pin_note, pin_note_size, "pin to '%s' ignored (%s); ", pin->backend,
                 pb == NULL       ? "not loaded"
                 : pb->score == 0 ? "cannot run on this CPU"
                                  : "it has no kernel for this type");
    }
    for (size_t j = 0; j < n_pref; ++j) {
        const anvil_kernel *k = find_kernel(pref[j], w, a);
        if (k == NULL || pref[j]->score == 0) continue;
        d->backend = pref[j];
        d->kernel = k;
        const backend_rec *next = NULL;
        for (size_t j2 = j + 1; j >= n_named && next == NULL && j2 < n_pref; ++j2) {
            if (pref[j2]->score > 0 && find_kernel(pref[j2], w, a) != NULL) next = pref[j2];
        }
        if (next != NULL) {
            snprintf(d->note, sizeof d->note,
                     "%schosen: score %u > %u (%s), ranked by score: [backends] order names neither", pin_note,
                     pref[j]->score, next->score, next->backend.name);
        } else {
            snprintf(d->note, sizeof d->note, "%sfirst usable backend in order with a %s.%s kernel", pin_note,
                     c->codec.name, anvil__type_name_in(reg, a));
        }
        return;
    }
}

/* Activation quantizer: the kernel's own backend first, so a backend runs
 * on the layout it produced; then any usable backend; then the activation
 * codec's encoder. With none of them, the kernel cannot be used. */
static void choose_quantizer(dispatch_rec *d, const anvil_registry *reg, const backend_rec *const *pref,
                             size_t n_pref, const char *pin_note) {
    const uint32_t a = d->act_type;
    if (a == ANVIL_TYPE_F32) return;
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
            snprintf(d->note, sizeof d->note, "%skernel in '%s' unusable: nothing quantizes activations to %s",
                     pin_note, d->backend->backend.name, anvil__type_name_in(reg, a));
            d->kernel = NULL;
            d->backend = NULL;
        }
    }
}

/* No kernel: the codec's reference dot, or decode + f32 dot. */
static void fallback(dispatch_rec *d, const anvil_registry *reg, const char *pin_note) {
    const codec_rec *c = d->codec;
    const uint32_t a = d->act_type;
    d->fallback = 1;
    const int have_act = a == ANVIL_TYPE_F32 || d->quantizer != NULL ||
                         (d->act_codec != NULL && d->act_codec->codec.encode != NULL);
    if (c->codec.ref_vec_dot != NULL && have_act) {
        snprintf(d->note, sizeof d->note, "%sno backend has a %s.%s kernel: codec's reference dot", pin_note,
                 c->codec.name, anvil__type_name_in(reg, a));
    } else {
        snprintf(d->note, sizeof d->note, "%sno backend has a %s.%s kernel: decode + f32 dot", pin_note,
                 c->codec.name, anvil__type_name_in(reg, a));
    }
}

/* F16 / BF16 / F32 weights: the pinned backend's (F, F32) kernel, else the first
 * usable backend in preference order with one. */
static void choose_float(dispatch_float *f, uint32_t type, const char *name, const anvil_registry *reg,
                         const backend_rec *const *pref, size_t n_pref) {
    f->weight_type = type;
    const anvil_config_pin *pin = pin_for(reg, name);
    const backend_rec *pb = pin ? anvil__registry_backend_by_name(reg, pin->backend) : NULL;
    const anvil_kernel *k = pb && pb->score > 0 ? find_kernel(pb, type, ANVIL_TYPE_F32) : NULL;
    const backend_rec *kb = pb;
    for (size_t j = 0; k == NULL && j < n_pref; ++j) {
        if (pref[j]->score == 0) continue;
        k = find_kernel(pref[j], type, ANVIL_TYPE_F32);
        kb = pref[j];
    }
    if (k == NULL) return;
    f->kernel = k;
    f->backend = kb;
    f->kernel_rows = kb->kernel_rows[k - kb->kernels];
}

int anvil__dispatch_build(anvil_dispatch_table *dt, const anvil_registry *reg, anvil_error *err) {
    int rc = check_order(reg, err);
    if (rc == ANVIL_OK) rc = check_pins(reg, err);
    if (rc != ANVIL_OK) return rc;
    const codec_rec **sorted = calloc(reg->n_codecs + 1, sizeof *sorted);
    const backend_rec **pref = calloc(reg->n_backends + 1, sizeof *pref);
    dt->recs = calloc(reg->n_codecs + 1, sizeof *dt->recs);
    if (sorted == NULL || pref == NULL || dt->recs == NULL) {
        free(sorted);
        free(pref);
        return anvil__nomem(err);
    }
    for (size_t i = 0; i < reg->n_codecs; ++i) sorted[i] = &reg->codecs[i];
    qsort(sorted, reg->n_codecs, sizeof *sorted, cmp_codec);
    size_t n_named = 0;
    const size_t n_pref = preference(reg, pref, &n_named);
    for (size_t i = 0; i < reg->n_codecs; ++i) {
        const codec_rec *c = sorted[i];
        dispatch_rec *d = &dt->recs[dt->n++];
        d->codec = c;
        d->weight_type = c->codec.type_id;
        d->act_type = c->codec.act_type;
        d->act_codec = anvil__registry_find_codec(reg, d->act_type);
        char pin_note[160] = "";
        choose_kernel(d, reg, pref, n_pref, n_named, pin_note, sizeof pin_note);
        choose_quantizer(d, reg, pref, n_pref, pin_note);
        choose_encoders(d, pref, n_pref, reg);
        if (d->kernel != NULL) d->kernel_rows = d->backend->kernel_rows[d->kernel - d->backend->kernels];
        if (d->kernel == NULL) fallback(d, reg, pin_note);
    }
    choose_float(&dt->floats[0], ANVIL_TYPE_F16, "f16", reg, pref, n_pref);
    choose_float(&dt->floats[1], ANVIL_TYPE_BF16, "bf16", reg, pref, n_pref);
    choose_float(&dt->floats[2], ANVIL_TYPE_F32, "f32", reg, pref, n_pref);
    free(sorted);
    free(pref);
    return ANVIL_OK;
}

void anvil__dispatch_free(anvil_dispatch_table *dt) {
    free(dt->recs);
    dt->recs = NULL;
    dt->n = 0;
    memset(dt->floats, 0, sizeof dt->floats);
}

const dispatch_float *anvil__dispatch_table_float(const anvil_dispatch_table *dt, uint32_t weight_type) {
    for (size_t i = 0; dt != NULL && i < 3; ++i) {
        if (dt->floats[i].kernel != NULL && dt->floats[i].weight_type == weight_type) return &dt->floats[i];
    }
    return NULL;
}

const dispatch_rec *anvil__dispatch_table_find(const anvil_dispatch_table *dt, uint32_t weight_type) {
    for (size_t i = 0; dt != NULL && i < dt->n; ++i) {
        if (dt->recs[i].weight_type == weight_type) return &dt->recs[i];
    }
    return NULL;
}

/* The backend named `name`, which must be loaded and usable here. */
static int usable_backend(const anvil_registry *reg, const char *name, const backend_rec **out, anvil_error *err) {
    const backend_rec *b = anvil__registry_backend_by_name(reg, name);
    if (b == NULL) return anvil__error_set(err, ANVIL_E_NOT_FOUND, "no loaded backend is named '%s'", name);
    if (b->score == 0) {
        return anvil__error_set(err, ANVIL_E_CPU_UNSUPPORTED, "backend '%s' cannot run on this CPU: %s", name,
                                b->why);
    }
    *out = b;
    return ANVIL_OK;
}

int anvil__dispatch_find_kernel(const anvil_dispatch_table *dt, const anvil_registry *reg, const char *backend,
                                uint32_t weight_type, const anvil_kernel **kernel,
                                const anvil_act_quantizer **quantizer, anvil_error *err) {
    *kernel = NULL;
    *quantizer = NULL;
    const dispatch_rec *d = anvil__dispatch_table_find(dt, weight_type);
    if (d == NULL &&
        (weight_type == ANVIL_TYPE_F32 || weight_type == ANVIL_TYPE_F16 || weight_type == ANVIL_TYPE_BF16)) {
        /* The built-in float weights: their (F, F32) kernel, no quantizer. */
        const char *name = anvil__type_name_in(reg, weight_type);
        if (backend == NULL) {
            const dispatch_float *f = anvil__dispatch_table_float(dt, weight_type);
            if (f == NULL) return anvil__error_set(err, ANVIL_E_NO_KERNEL, "%s: no backend has a kernel", name);
            *kernel = f->kernel;
            return ANVIL_OK;
        }
        const backend_rec *b = NULL;
        const int rc = usable_backend(reg, backend, &b, err);
        if (rc != ANVIL_OK) return rc;
        *kernel = find_kernel(b, weight_type, ANVIL_TYPE_F32);
        if (*kernel == NULL)
            return anvil__error_set(err, ANVIL_E_NO_KERNEL, "backend '%s' has no %s kernel", backend, name);
        return ANVIL_OK;
    }
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
    const int rc = usable_backend(reg, backend, &b, err);
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

int anvil__dispatch_find_encoder(const anvil_dispatch_table *dt, const anvil_registry *reg, const char *backend,
                                 uint32_t type, const anvil_weight_encoder **encoder, anvil_error *err) {
    *encoder = NULL;
    const dispatch_rec *d = anvil__dispatch_table_find(dt, type);
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
    const int rc = usable_backend(reg, backend, &b, err);
    if (rc != ANVIL_OK) return rc;
    *encoder = find_encoder(b, type);
    if (*encoder == NULL) {
        return anvil__error_set(err, ANVIL_E_ENCODER_UNAVAILABLE, "backend '%s' has no %s encoder", backend,
                                d->codec->codec.name);
    }
    return ANVIL_OK;
}
