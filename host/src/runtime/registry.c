/* SPDX-License-Identifier: MIT */
/*
 * The plugin registry: find, dlopen, negotiate, validate, register.
 *
 * Every struct a plugin hands over is copied into a host-side normalised
 * copy: bytes inside the plugin's struct_size are taken as they are, the rest
 * is zero. An older plugin (smaller struct) thus reads as "field absent", a
 * newer one (larger struct) has its extra fields ignored, and nothing past
 * struct_size is ever read from plugin memory.
 *
 * Failures never abort the others: each is kept on the plugin's record with
 * its reason, which `anvil plugins` prints. Only configuration mistakes
 * (a plugin named but not found) fail the whole context, unless the caller
 * asked to keep going.
 */
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "cpu_probe.h"
#include "error.h"
#include "log.h"
#include "registry.h"
#include "trust.h"
#include "types.h"

static void services_log(void *host_ctx, int level, const char *plugin_id, const char *message) {
    (void)host_ctx;
    anvil__log(level, plugin_id ? plugin_id : "plugin", "%s", message ? message : "");
}

static char *dupstr(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d != NULL) memcpy(d, s, n);
    return d;
}

static void reasonf(plugin_rec *p, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void reasonf(plugin_rec *p, int status, const char *fmt, ...) {
    p->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->reason, sizeof p->reason, fmt, ap);
    va_end(ap);
}

/* Copy a plugin struct into a host-side one of host_size bytes. */
static void normalise(void *dst, size_t host_size, const void *src) {
    uint32_t plugin_size;
    memcpy(&plugin_size, src, sizeof plugin_size);
    size_t n = plugin_size < host_size ? plugin_size : host_size;
    memset(dst, 0, host_size);
    memcpy(dst, src, n);
    const uint32_t hs = (uint32_t)host_size;
    memcpy(dst, &hs, sizeof hs);
}

static int is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Names only (the config refuses paths): the file comes from the search path. */
static char *find_plugin(const anvil_registry *reg, const char *name) {
    char buf[4096];
    if (strchr(name, '/') != NULL) return NULL;
    const size_t len = strlen(name);
    const int has_ext = len > 3 && strcmp(name + len - 3, ".so") == 0;
    for (size_t i = 0; i < reg->cfg->n_search; ++i) {
        snprintf(buf, sizeof buf, "%s/%s%s", reg->cfg->search[i], name, has_ext ? "" : ".so");
        if (is_file(buf)) return dupstr(buf);
    }
    return NULL;
}

static void search_path_string(const anvil_registry *reg, char *buf, size_t size) {
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < reg->cfg->n_search && len < size; ++i) {
        int w = snprintf(buf + len, size - len, "%s%s", i ? ":" : "", reg->cfg->search[i]);
        if (w > 0) len += (size_t)w;
    }
    if (reg->cfg->n_search == 0) snprintf(buf, size, "(empty: set [plugins] path)");
}

static plugin_rec *add_rec(anvil_registry *reg, const char *name) {
    plugin_rec *np = realloc(reg->plugins, (reg->n_plugins + 1) * sizeof *np);
    if (np == NULL) return NULL;
    reg->plugins = np;
    plugin_rec *p = &np[reg->n_plugins];
    memset(p, 0, sizeof *p);
    p->name = dupstr(name);
    if (p->name == NULL) return NULL;
    reg->n_plugins++;
    return p;
}

static int valid_name(const char *s, size_t max) {
    if (s == NULL || *s == '\0' || strlen(s) > max) return 0;
    for (; *s; ++s) {
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.') return 0;
    }
    return 1;
}

const codec_rec *anvil__registry_find_codec(const anvil_registry *reg, uint32_t type_id) {
    for (size_t i = 0; reg != NULL && i < reg->n_codecs; ++i) {
        if (reg->codecs[i].codec.type_id == type_id) return &reg->codecs[i];
    }
    return NULL;
}

const char *anvil__registry_codec_plugin(const anvil_registry *reg, uint32_t type_id) {
    const codec_rec *c = anvil__registry_find_codec(reg, type_id);
    return c ? reg->plugins[c->plugin].desc.id : NULL;
}

const anvil_codec *anvil__registry_codec_by_name(const anvil_registry *reg, const char *name) {
    for (size_t i = 0; reg != NULL && i < reg->n_codecs; ++i) {
        if (strcasecmp(reg->codecs[i].codec.name, name) == 0) return &reg->codecs[i].codec;
    }
    return NULL;
}

const backend_rec *anvil__registry_backend_by_name(const anvil_registry *reg, const char *name) {
    for (size_t i = 0; reg != NULL && i < reg->n_backends; ++i) {
        if (strcasecmp(reg->backends[i].backend.name, name) == 0) return &reg->backends[i];
    }
    return NULL;
}

/* Check one codec; on failure write why into p and return 0. */
static int check_codec(anvil_registry *reg, plugin_rec *p, const anvil_codec *c, size_t self_plugin,
                       const anvil_codec *pending, size_t n_pending) {
    if (c->struct_size < offsetof(anvil_codec, reserved)) {
        reasonf(p, ANVIL_E_PLUGIN_INVALID, "codec struct_size %u is smaller than ABI 1.0's %zu", c->struct_size,
                offsetof(anvil_codec, reserved));
        return 0;
    }
    if (!valid_name(c->name, 31)) {
        reasonf(p, ANVIL_E_PLUGIN_INVALID, "codec with type id %u has an invalid name", c->type_id);
        return 0;
    }
    if (c->block_elems == 0 || c->block_bytes == 0 || c->decode == NULL) {
        reasonf(p, ANVIL_E_PLUGIN_INVALID, "codec '%s' has zero block geometry or no decoder", c->name);
        return 0;
    }
    const uint32_t id = c->type_id;
    if (id < ANVIL_TYPE_GGML_COUNT) {
        anvil_type_info t;
        anvil_error e;
        if (anvil_type_builtin(id, &t, &e) != ANVIL_OK || !t.is_quantized) {
            reasonf(p, ANVIL_E_PLUGIN_INVALID,
                    "codec '%s' claims type id %u, which is not a ggml block format (or is built into the host)",
                    c->name, id);
            return 0;
        }
        if (t.block_elems != c->block_elems || t.block_bytes != c->block_bytes || strcasecmp(t.name, c->name) != 0) {
            reasonf(p, ANVIL_E_PLUGIN_INVALID,
                    "codec '%s' (id %u: %u elements / %u bytes) does not match ggml's %s (%u / %u)", c->name, id,
                    c->block_elems, c->block_bytes, t.name, t.block_elems, t.block_bytes);
            return 0;
        }
    } else if (id < ANVIL_TYPE_THIRD_PARTY_FIRST || id > ANVIL_TYPE_THIRD_PARTY_LAST) {
        reasonf(p, ANVIL_E_PLUGIN_INVALID,
                "codec '%s' uses type id %u: outside ggml's ids (0-%d) and the third-party range 1024-2047", c->name,
                id, ANVIL_TYPE_GGML_COUNT - 1);
        return 0;
    } else {
        uint32_t existing;
        if (anvil__type_builtin_by_name(c->name, &existing)) {
            reasonf(p, ANVIL_E_DUPLICATE_TYPE, "codec name '%s' (id %u) is already ggml's name for type %u", c->name,
                    id, existing);
            return 0;
        }
    }
    for (size_t i = 0; i < reg->n_codecs; ++i) {
        const anvil_codec *o = &reg->codecs[i].codec;
        if (o->type_id == id || strcasecmp(o->name, c->name) == 0) {
            reasonf(p, ANVIL_E_DUPLICATE_TYPE,
                    "codec '%s' (type id %u) clashes with '%s' (type id %u) of plugin '%s': two plugins "
                    "cannot claim one type; remove one of them from [plugins] load",
                    c->name, id, o->name, o->type_id, reg->plugins[reg->codecs[i].plugin].desc.id);
            return 0;
        }
    }
    for (size_t i = 0; i < n_pending; ++i) {
        if (pending[i].type_id == id || strcasecmp(pending[i].name, c->name) == 0) {
            reasonf(p, ANVIL_E_DUPLICATE_TYPE, "plugin lists type id %u ('%s') twice", id, c->name);
            return 0;
        }
    }
    (void)self_plugin;
    return 1;
}

static void free_backend_rec(backend_rec *b) {
    free(b->kernels);
    free(b->kernel_rows);
    free(b->quantizers);
    free(b->encoders);
}

/* Check and copy a backend's weight encoders (ABI 1.1; a 1.0 backend has
 * none: its normalised n_encoders reads 0). An encoder names a block format
 * (a ggml id or the third-party range: the codec may come from another
 * plugin, so its presence is the dispatcher's business), has an
 * encode_rows, and appears once per backend. Flag bits this host does not
 * know are dropped: a newer plugin's extra capability is simply unused. */
static int copy_encoders(plugin_rec *p, backend_rec *b) {
    const size_t ne = b->backend.n_encoders;
    if (ne > 4096 || (ne && b->backend.encoders == NULL)) {
        reasonf(p, ANVIL_E_PLUGIN_INVALID, "backend '%s': encoder table malformed (%zu entries)", b->backend.name,
                ne);
        return 0;
    }
    b->encoders = calloc(ne ? ne : 1, sizeof *b->encoders);
    if (b->encoders == NULL) {
        reasonf(p, ANVIL_E_NOMEM, "out of memory");
        return 0;
    }
    for (size_t k = 0; k < ne; ++k) {
        const anvil_weight_encoder *es = b->backend.encoders[k];
        if (es == NULL || es->struct_size < offsetof(anvil_weight_encoder, reserved) || es->encode_rows == NULL) {
            reasonf(p, ANVIL_E_PLUGIN_INVALID, "backend '%s': encoder %zu is NULL, too small or has no encode_rows",
                    b->backend.name, k);
            return 0;
        }
        anvil_weight_encoder *e = &b->encoders[k];
        normalise(e, sizeof *e, es);
        anvil_type_info t;
        const int ggml_block = e->type_id < ANVIL_TYPE_GGML_COUNT &&
                               anvil_type_builtin(e->type_id, &t, NULL) == ANVIL_OK && t.is_quantized;
        if (!ggml_block && (e->type_id < ANVIL_TYPE_THIRD_PARTY_FIRST || e->type_id > ANVIL_TYPE_THIRD_PARTY_LAST)) {
            reasonf(p, ANVIL_E_PLUGIN_INVALID,
                    "backend '%s': encoder %zu is for type id %u, which is neither a ggml block format nor in "
                    "the third-party range 1024-2047",
                    b->backend.name, k, e->type_id);
            return 0;
        }
        for (size_t j = 0; j < k; ++j) {
            if (b->encoders[j].type_id == e->type_id) {
                reasonf(p, ANVIL_E_PLUGIN_INVALID, "backend '%s': two encoders for type id %u", b->backend.name,
                        e->type_id);
                return 0;
            }
        }
        e->flags &= ANVIL_ENCODER_WEIGHTED;
    }
    b->n_encoders = ne;
    return 1;
}

/* Check one backend and copy its tables into b (normalised; kernels with
 * their row runners); on failure write why into p and return 0 (b may own
 * tables then: free_backend_rec). The score is asked once, here. */
static int check_backend(const anvil_registry *reg, plugin_rec *p, const anvil_backend *src, size_t i, size_t index,
                         backend_rec *b) {
    if (src == NULL) {
        reasonf(p, ANVIL_E_PLUGIN_INVALID, "backend %zu is NULL", i);
        return 0;
    }
    normalise(&b->backend, sizeof b->backend, src);
    if (src->struct_size < offsetof(anvil_backend, reserved) || !valid_name(b->backend.name, 31) ||
        b->backend.score == NULL) {
        reasonf(p, ANVIL_E_PLUGIN_INVALID, "backend %zu: struct too small, bad name or no score()", i);
        return 0;
    }
    for (size_t j = 0; j < reg->n_backends; ++j) {
        if (strcasecmp(reg->backends[j].backend.name, b->backend.name) == 0) {
            reasonf(p, ANVIL_E_DUPLICATE_TYPE,
                    "backend '%s' is already provided by plugin '%s'; remove one from [plugins] load",
                    b->backend.name, reg->plugins[reg->backends[j].plugin].desc.id);
            return 0;
        }
    }
    const size_t nk = b->backend.n_kernels, nq = b->backend.n_quantizers;
    if (nk > 4096 || nq > 256 || (nk && b->backend.kernels == NULL) || (nq && b->backend.quantizers == NULL)) {
        reasonf(p, ANVIL_E_PLUGIN_INVALID, "backend '%s': kernel/quantizer table malformed", b->backend.name);
        return 0;
    }
    b->kernels = calloc(nk ? nk : 1, sizeof *b->kernels);
    b->kernel_rows = calloc(nk ? nk : 1, sizeof *b->kernel_rows);
    b->quantizers = calloc(nq ? nq : 1, sizeof *b->quantizers);
    if (b->kernels == NULL || b->kernel_rows == NULL || b->quantizers == NULL) {
        reasonf(p, ANVIL_E_NOMEM, "out of memory");
        return 0;
    }
    for (size_t k = 0; k < nk; ++k) {
        const anvil_kernel *ks = b->backend.kernels[k];
        if (ks == NULL || ks->struct_size < offsetof(anvil_kernel, reserved) || ks->vec_dot == NULL) {
            reasonf(p, ANVIL_E_PLUGIN_INVALID, "backend '%s': kernel %zu is NULL, too small or has no vec_dot",
                    b->backend.name, k);
            return 0;
        }
        normalise(&b->kernels[k], sizeof b->kernels[k], ks);
        /* Packed layouts need all three entry points. */
        if (!(b->kernels[k].packed_size && b->kernels[k].pack && b->kernels[k].gemm_packed)) {
            b->kernels[k].packed_size = NULL;
            b->kernels[k].pack = NULL;
            b->kernels[k].gemm_packed = NULL;
        }
        /* GEMM and GEMV are optional: the runner fills in from vec_dot. */
        b->kernel_rows[k] = anvil__kernel_rows_for(&b->kernels[k]);
    }
    for (size_t k = 0; k < nq; ++k) {
        const anvil_act_quantizer *qs = b->backend.quantizers[k];
        if (qs == NULL || qs->struct_size < offsetof(anvil_act_quantizer, reserved) || qs->quantize == NULL) {
            reasonf(p, ANVIL_E_PLUGIN_INVALID, "backend '%s': quantizer %zu is NULL, too small or empty",
                    b->backend.name, k);
            return 0;
        }
        normalise(&b->quantizers[k], sizeof b->quantizers[k], qs);
    }
    if (!copy_encoders(p, b)) {
        return 0;
    }
    b->n_kernels = nk;
    b->n_quantizers = nq;
    b->plugin = index;
    /* The score is asked once, against the CPU the host probed. */
    b->why[0] = '\0';
    b->score = b->backend.score(reg->cpu, b->why, sizeof b->why);
    b->why[sizeof b->why - 1] = '\0';
    return 1;
}

/* Validate and register everything a plugin offers, all or nothing. */
static int register_plugin(anvil_registry *reg, size_t index) {
    plugin_rec *p = &reg->plugins[index];
    const anvil_plugin_desc *d = &p->desc;
    if (d->n_codecs > 4096 || d->n_backends > 64) {
        reasonf(p, ANVIL_E_PLUGIN_INVALID, "descriptor lists %zu codecs / %zu backends (implausible)", d->n_codecs,
                d->n_backends);
        return 0;
    }
    if ((d->n_codecs > 0 && d->codecs == NULL) || (d->n_backends > 0 && d->backends == NULL)) {
        reasonf(p, ANVIL_E_PLUGIN_INVALID, "descriptor counts codecs/backends but the array is NULL");
        return 0;
    }
    anvil_codec *codecs = calloc(d->n_codecs ? d->n_codecs : 1, sizeof *codecs);
    backend_rec *backends = calloc(d->n_backends ? d->n_backends : 1, sizeof *backends);
    if (codecs == NULL || backends == NULL) {
        free(codecs);
        free(backends);
        reasonf(p, ANVIL_E_NOMEM, "out of memory");
        return 0;
    }
    size_t nb_done = 0;
    int ok = 1;
    for (size_t i = 0; ok && i < d->n_codecs; ++i) {
        if (d->codecs[i] == NULL) {
            reasonf(p, ANVIL_E_PLUGIN_INVALID, "codec %zu is NULL", i);
            ok = 0;
            break;
        }
        normalise(&codecs[i], sizeof codecs[i], d->codecs[i]);
        uint32_t declared;
        memcpy(&declared, d->codecs[i], sizeof declared);
        anvil_codec probe = codecs[i];
        probe.struct_size = declared;
        ok = check_codec(reg, p, &probe, index, codecs, i);
    }
    for (size_t i = 0; ok && i < d->n_backends; ++i) {
        if (d->backends[i] != NULL) nb_done = i + 1; /* its record may own tables from here on */
        ok = check_backend(reg, p, d->backends[i], i, index, &backends[i]);
    }
    if (!ok) {
        for (size_t i = 0; i < nb_done; ++i) free_backend_rec(&backends[i]);
        free(codecs);
        free(backends);
        return 0;
    }
    codec_rec *nc = realloc(reg->codecs, (reg->n_codecs + d->n_codecs + 1) * sizeof *nc);
    backend_rec *nbk = realloc(reg->backends, (reg->n_backends + d->n_backends + 1) * sizeof *nbk);
    if (nc != NULL) reg->codecs = nc;
    if (nbk != NULL) reg->backends = nbk;
    if (nc == NULL || nbk == NULL) {
        for (size_t i = 0; i < d->n_backends; ++i) free_backend_rec(&backends[i]);
        free(codecs);
        free(backends);
        reasonf(p, ANVIL_E_NOMEM, "out of memory");
        return 0;
    }
    for (size_t i = 0; i < d->n_codecs; ++i) {
        reg->codecs[reg->n_codecs].codec = codecs[i];
        reg->codecs[reg->n_codecs].plugin = index;
        reg->n_codecs++;
    }
    for (size_t i = 0; i < d->n_backends; ++i) {
        reg->backends[reg->n_backends++] = backends[i];
    }
    free(codecs);
    free(backends);
    return 1;
}

/* ---- plugin files, process-wide ---------------------------------------------
 *
 * A plugin's init runs once per process before its first use and its deinit
 * once after its last user is gone: every context that loads the same file
 * (by device and inode, or the same dlopen handle) shares one plugin_lib,
 * counted by its users. Loading, registering (which reads the plugin's
 * tables and calls its score()) and releasing happen under one process-wide
 * lock, so contexts may be opened and closed from many threads at once and
 * no plugin code runs concurrently with its own init or deinit. */
struct plugin_lib {
    dev_t dev;
    ino_t ino;
    void *handle;
    const anvil_plugin_desc *raw;
    anvil_plugin_desc desc; /* normalised */
    unsigned users;
    plugin_lib *next;
};

static pthread_mutex_t libs_lock = PTHREAD_MUTEX_INITIALIZER;
static plugin_lib *libs;
/* What init receives; valid for the life of the process (a plugin may keep
 * it past any one context). */
static anvil_host_services process_services;
static pthread_once_t services_once = PTHREAD_ONCE_INIT;

static void services_init(void) {
    process_services.struct_size = sizeof process_services;
    process_services.abi_major = ANVIL_ABI_MAJOR;
    process_services.abi_minor = ANVIL_ABI_MINOR;
    process_services.cpu = anvil__cpu_probe();
    process_services.log = services_log;
    process_services.host_ctx = NULL;
}

/* Under libs_lock. */
static void lib_release(plugin_lib *lib) {
    if (--lib->users > 0) return;
    for (plugin_lib **at = &libs; *at != NULL; at = &(*at)->next) {
        if (*at == lib) {
            *at = lib->next;
            break;
        }
    }
    if (lib->desc.deinit != NULL) lib->desc.deinit();
    dlclose(lib->handle);
    free(lib);
}

/* Under libs_lock: the shared load of p->path, or NULL with p's reason set. */
static plugin_lib *lib_acquire(plugin_rec *p) {
    struct stat st;
    if (stat(p->path, &st) != 0) {
        reasonf(p, ANVIL_E_PLUGIN_LOAD, "cannot stat %s: %s", p->path, strerror(errno));
        return NULL;
    }
    for (plugin_lib *l = libs; l != NULL; l = l->next) {
        if (l->dev == st.st_dev && l->ino == st.st_ino) {
            l->users++;
            return l;
        }
    }
    void *handle = dlopen(p->path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        const char *e = dlerror();
        reasonf(p, ANVIL_E_PLUGIN_LOAD, "dlopen failed: %s", e ? e : "unknown error");
        return NULL;
    }
    for (plugin_lib *l = libs; l != NULL; l = l->next) {
        if (l->handle == handle) { /* the loader's own match (same name, file since replaced) */
            dlclose(handle);
            l->users++;
            return l;
        }
    }
    anvil_plugin_entry_fn entry = NULL;
    void *sym = dlsym(handle, ANVIL_PLUGIN_ENTRY_SYMBOL);
    memcpy(&entry, &sym, sizeof entry);
    const anvil_plugin_desc *raw = entry != NULL ? entry(ANVIL_ABI_MAJOR, ANVIL_ABI_MINOR) : NULL;
    anvil_plugin_desc desc;
    memset(&desc, 0, sizeof desc);
    if (entry == NULL) {
        reasonf(p, ANVIL_E_PLUGIN_NO_ENTRY,
                "no '%s' symbol: not an anvil plugin (or built without ANVIL_PLUGIN_EXPORT)",
                ANVIL_PLUGIN_ENTRY_SYMBOL);
    } else if (raw == NULL) {
        reasonf(p, ANVIL_E_ABI_MISMATCH,
                "the plugin declined host ABI %d.%d (anvil_plugin_entry returned NULL): it was built for "
                "another ABI major; rebuild it against this SDK",
                ANVIL_ABI_MAJOR, ANVIL_ABI_MINOR);
    } else if (raw->struct_size < offsetof(anvil_plugin_desc, reserved)) {
        reasonf(p, ANVIL_E_PLUGIN_INVALID, "descriptor struct_size %u is smaller than ABI 1.0's %zu",
                raw->struct_size, offsetof(anvil_plugin_desc, reserved));
    } else {
        normalise(&desc, sizeof desc, raw);
        if (desc.abi_major != ANVIL_ABI_MAJOR) {
            reasonf(p, ANVIL_E_ABI_MISMATCH,
                    "plugin built for ABI %u.%u, host speaks ABI %d.%d: majors differ; rebuild the plugin "
                    "against this SDK",
                    desc.abi_major, desc.abi_minor, ANVIL_ABI_MAJOR, ANVIL_ABI_MINOR);
        } else if (!valid_name(desc.id, 63)) {
            reasonf(p, ANVIL_E_PLUGIN_INVALID, "descriptor has no valid id");
        } else if (desc.init != NULL) {
            char err[512] = "";
            pthread_once(&services_once, services_init);
            const int rc = desc.init(&process_services, err, sizeof err);
            err[sizeof err - 1] = '\0';
            if (rc != ANVIL_OK) {
                reasonf(p, ANVIL_E_PLUGIN_INIT, "init failed (%d): %s", rc, err[0] ? err : "no message");
                if (desc.deinit != NULL) desc.deinit();
            }
        }
    }
    if (p->status != ANVIL_OK) {
        dlclose(handle);
        return NULL;
    }
    plugin_lib *l = calloc(1, sizeof *l);
    if (l == NULL) {
        reasonf(p, ANVIL_E_NOMEM, "out of memory");
        if (desc.deinit != NULL) desc.deinit();
        dlclose(handle);
        return NULL;
    }
    l->dev = st.st_dev;
    l->ino = st.st_ino;
    l->handle = handle;
    l->raw = raw;
    l->desc = desc;
    l->users = 1;
    l->next = libs;
    libs = l;
    return l;
}

/* Under libs_lock. */
static void unload_rec(plugin_rec *p) {
    if (p->lib != NULL) lib_release(p->lib);
    p->lib = NULL;
    p->handle = NULL;
}

/* Code is loaded only from where no one but its owner (root or you) can
 * change it (trust.h): the folder it was found in, and the file. */
static int trusted(const anvil_registry *reg, plugin_rec *p) {
    char why[ANVIL_REASON_MAX - 128] = "";
    const char *slash = strrchr(p->path, '/');
    char folder[4096];
    snprintf(folder, sizeof folder, "%.*s", slash != NULL ? (int)(slash - p->path) : 1,
             slash != NULL ? p->path : ".");
    if (trust_check_folder(folder[0] != '\0' ? folder : "/", why, sizeof why) == 0 &&
        trust_check_file(p->path, 1, why, sizeof why) == 0) {
        return 1;
    }
    if (reg->cfg->allow_insecure || reg->cfg->insecure_env) {
        snprintf(p->trust_note, sizeof p->trust_note, "%s", why);
        return 1;
    }
    reasonf(p, ANVIL_E_UNTRUSTED,
            "not loaded: %s (for development only: [plugins] allow_insecure = yes, or " ANVIL_INSECURE_ENV "=1)",
            why);
    return 0;
}

/* Under libs_lock. */
static void load_one(anvil_registry *reg, size_t index) {
    plugin_rec *p = &reg->plugins[index];
    if (!trusted(reg, p)) return;
    plugin_lib *lib = lib_acquire(p);
    if (lib == NULL) return;
    p->lib = lib;
    p->handle = lib->handle;
    p->raw = lib->raw;
    p->desc = lib->desc;
    for (size_t i = 0; i < index; ++i) {
        if (reg->plugins[i].status == ANVIL_OK && reg->plugins[i].lib != NULL &&
            strcmp(reg->plugins[i].desc.id, p->desc.id) == 0) {
            reasonf(p, ANVIL_E_DUPLICATE, "plugin id '%s' is already loaded from %s", p->desc.id,
                    reg->plugins[i].path);
            unload_rec(p);
            return;
        }
    }
    if (!register_plugin(reg, index)) {
        unload_rec(p);
        return;
    }
    p->status = ANVIL_OK;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* With no `load` list: every *.so in the search path, sorted, first folder
 * wins for a name. */
static int collect_all(anvil_registry *reg, anvil_error *err) {
    for (size_t s = 0; s < reg->cfg->n_search; ++s) {
        DIR *dh = opendir(reg->cfg->search[s]);
        if (dh == NULL) continue;
        char **names = NULL;
        size_t n = 0;
        struct dirent *e;
        while ((e = readdir(dh)) != NULL) {
            size_t len = strlen(e->d_name);
            if (len <= 3 || strcmp(e->d_name + len - 3, ".so") != 0) continue;
            char **nn = realloc(names, (n + 1) * sizeof *nn);
            if (nn == NULL) break;
            names = nn;
            names[n] = dupstr(e->d_name);
            if (names[n] != NULL) {
                names[n][len - 3] = '\0';
                n++;
            }
        }
        closedir(dh);
        qsort(names, n, sizeof *names, cmp_str);
        for (size_t i = 0; i < n; ++i) {
            int seen = 0;
            for (size_t j = 0; j < reg->n_plugins; ++j) seen |= strcmp(reg->plugins[j].name, names[i]) == 0;
            if (!seen) {
                plugin_rec *p = add_rec(reg, names[i]);
                if (p == NULL) {
                    for (size_t j = i; j < n; ++j) free(names[j]);
                    free(names);
                    return anvil__nomem(err);
                }
                char buf[4096];
                snprintf(buf, sizeof buf, "%s/%s.so", reg->cfg->search[s], names[i]);
                p->path = dupstr(buf);
            }
            free(names[i]);
        }
        free(names);
    }
    return ANVIL_OK;
}

int anvil__registry_load(anvil_registry *reg, int keep_going, anvil_error *err) {
    char sp[2048];
    search_path_string(reg, sp, sizeof sp);
    if (reg->cfg->load_all) {
        int rc = collect_all(reg, err);
        if (rc != ANVIL_OK) return rc;
    } else {
        for (size_t i = 0; i < reg->cfg->n_load; ++i) {
            const char *name = reg->cfg->load[i];
            for (size_t j = 0; j < i; ++j) {
                if (strcmp(reg->cfg->load[j], name) == 0) {
                    return anvil__error_set(err, ANVIL_E_CONFIG_VALUE, "%s:%d: plugin '%s' listed twice in load",
                                            reg->cfg->path, reg->cfg->load_lines[i], name);
                }
            }
            plugin_rec *p = add_rec(reg, name);
            if (p == NULL) return anvil__nomem(err);
            p->line = reg->cfg->load_lines[i];
            p->path = find_plugin(reg, name);
            if (p->path == NULL) {
                reasonf(p, ANVIL_E_PLUGIN_NOT_FOUND, "not found: no %s%s in %s", name,
                        strstr(name, ".so") ? "" : ".so", sp);
                if (!keep_going) {
                    return anvil__error_set(err, ANVIL_E_PLUGIN_NOT_FOUND,
                                            "%s:%d: plugin '%s' not found in the search path %s (build or "
                                            "install it, fix [plugins] path, or remove it from load)",
                                            reg->cfg->path, reg->cfg->load_lines[i], name, sp);
                }
            }
        }
    }
    for (size_t i = 0; i < reg->cfg->n_optional; ++i) {
        const char *name = reg->cfg->optional[i];
        int dup = 0;
        for (size_t j = 0; j < reg->n_plugins; ++j) dup |= strcmp(reg->plugins[j].name, name) == 0;
        if (dup) continue;
        plugin_rec *p = add_rec(reg, name);
        if (p == NULL) return anvil__nomem(err);
        p->optional = 1;
        p->line = reg->cfg->optional_lines[i];
        p->path = find_plugin(reg, name);
        if (p->path == NULL) {
            reasonf(p, ANVIL_E_PLUGIN_NOT_FOUND, "optional, not present in %s", sp);
        }
    }
    pthread_mutex_lock(&libs_lock);
    for (size_t i = 0; i < reg->n_plugins; ++i) {
        if (reg->plugins[i].path != NULL && reg->plugins[i].status == ANVIL_OK) {
            load_one(reg, i);
        }
    }
    pthread_mutex_unlock(&libs_lock);
    for (size_t i = 0; i < reg->n_plugins; ++i) {
        const plugin_rec *p = &reg->plugins[i];
        if (p->path != NULL && p->status != ANVIL_OK) {
            if (p->line > 0) {
                anvil__log(ANVIL_LOG_WARN, p->name, "%s (%s:%d)", p->reason, reg->cfg->path, p->line);
            } else {
                anvil__log(ANVIL_LOG_WARN, p->name, "%s", p->reason);
            }
        } else if (p->trust_note[0] != '\0') {
            anvil__log(ANVIL_LOG_WARN, p->name, "loaded although untrusted (allow_insecure): %s", p->trust_note);
        }
    }
    return ANVIL_OK;
}

void anvil__registry_unload(anvil_registry *reg) {
    for (size_t i = 0; i < reg->n_backends; ++i) free_backend_rec(&reg->backends[i]);
    free(reg->backends);
    reg->backends = NULL;
    reg->n_backends = 0;
    free(reg->codecs);
    reg->codecs = NULL;
    reg->n_codecs = 0;
    /* Reverse order: a plugin loaded later may depend on an earlier one. */
    pthread_mutex_lock(&libs_lock);
    for (size_t i = reg->n_plugins; i-- > 0;) unload_rec(&reg->plugins[i]);
    pthread_mutex_unlock(&libs_lock);
    for (size_t i = 0; i < reg->n_plugins; ++i) {
        free(reg->plugins[i].name);
        free(reg->plugins[i].path);
    }
    free(reg->plugins);
    reg->plugins = NULL;
    reg->n_plugins = 0;
}
