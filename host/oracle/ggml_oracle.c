/* SPDX-License-Identifier: MIT */
#include "ggml_oracle.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef ANVIL_DEFAULT_ORACLE_DIR
#define ANVIL_DEFAULT_ORACLE_DIR ""
#endif

/* ggml_get_type_traits() returns this struct (ggml.h, type traits). */
struct ggml_type_traits_view {
    const char *type_name;
    int64_t blck_size;
    int64_t blck_size_interleave;
    size_t type_size;
    bool is_quantized;
    ggml_to_float_fn to_float;
    ggml_from_float_fn from_float_ref;
};

static int try_open(ggml_oracle *o, const char *dir, char *why, size_t why_size) {
    char path[1200];
    snprintf(path, sizeof path, "%s/libggml-base.so", dir);
    /* RTLD_GLOBAL so the CPU library resolves its ggml-base symbols here. */
    o->base = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (o->base == NULL) {
        snprintf(why, why_size, "%s", dlerror());
        return -1;
    }
    snprintf(o->dir, sizeof o->dir, "%s", dir);

    /* Pick the CPU variant that scores highest on this machine, as ggml's
     * backend loader does; ANVIL_GGML_CPU_VARIANT=<name> (haswell, zen4,
     * ...) forces libggml-cpu-<name>.so instead, when it scores above zero
     * here (to compare a backend with the ggml build for the same ISA). */
    const char *want = getenv("ANVIL_GGML_CPU_VARIANT");
    DIR *dh = opendir(dir);
    int best = 0;
    char best_name[256] = "";
    if (want != NULL && *want != '\0' && strchr(want, '/') == NULL && dh != NULL) {
        char name[256];
        snprintf(name, sizeof name, "libggml-cpu-%s.so", want);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        int (*score)(void) = h ? (int (*)(void))dlsym(h, "ggml_backend_score") : NULL;
        if (score != NULL && score() > 0) {
            best = 1;
            snprintf(best_name, sizeof best_name, "%s", name);
            closedir(dh);
            dh = NULL;
        }
        if (h != NULL) dlclose(h);
    }
    if (dh != NULL) {
        struct dirent *e;
        while ((e = readdir(dh)) != NULL) {
            if (strncmp(e->d_name, "libggml-cpu-", 12) != 0) {
                continue;
            }
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (h == NULL) {
                continue;
            }
            int (*score)(void) = (int (*)(void))dlsym(h, "ggml_backend_score");
            int s = score ? score() : 0;
            if (s > best) {
                best = s;
                snprintf(best_name, sizeof best_name, "%s", e->d_name);
            }
            dlclose(h);
        }
        closedir(dh);
    }
    if (best > 0) {
        snprintf(path, sizeof path, "%s/%s", dir, best_name);
        o->cpu = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (o->cpu != NULL) {
            const char *v = best_name + 12;
            size_t len = strcspn(v, ".");
            if (len >= sizeof o->cpu_variant) {
                len = sizeof o->cpu_variant - 1;
            }
            memcpy(o->cpu_variant, v, len);
            o->cpu_variant[len] = '\0';
            void (*cpu_init)(void) = (void (*)(void))dlsym(o->cpu, "ggml_cpu_init");
            if (cpu_init) {
                cpu_init();
            }
        }
    }
    /* The baseline build, kept beside the best one (see vec_dot_portable). */
    snprintf(path, sizeof path, "%s/libggml-cpu-x64.so", dir);
    o->portable = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (o->portable != NULL) {
        /* fills the fp16 table its kernels read (no F16C in this build) */
        void (*cpu_init)(void) = (void (*)(void))dlsym(o->portable, "ggml_cpu_init");
        if (cpu_init) {
            cpu_init();
        }
    }
    o->quantize_chunk = (ggml_quantize_chunk_fn)dlsym(o->base, "ggml_quantize_chunk");
    o->quantize_init = (void (*)(int))dlsym(o->base, "ggml_quantize_init");
    o->quantize_requires_imatrix = (bool (*)(int))dlsym(o->base, "ggml_quantize_requires_imatrix");
    return 0;
}

int ggml_oracle_open(ggml_oracle *o, const char *dir, char *why, size_t why_size) {
    memset(o, 0, sizeof *o);
    if (dir == NULL || *dir == '\0') {
        dir = getenv("ANVIL_GGML_DIR");
    }
    if (dir == NULL || *dir == '\0') {
        dir = ANVIL_DEFAULT_ORACLE_DIR;
    }
    if (dir == NULL || *dir == '\0') {
        snprintf(why, why_size, "no ggml folder configured (set ANVIL_GGML_DIR)");
        return -1;
    }
    char reason[1024];
    if (try_open(o, dir, reason, sizeof reason) != 0) {
        snprintf(why, why_size,
                 "ggml not found in %s (%s); install it with `npm install --prefix build/oracle "
                 "@node-llama-cpp/linux-x64@3.22.1` or set ANVIL_GGML_DIR",
                 dir, reason);
        return -1;
    }
    return 0;
}

void ggml_oracle_close(ggml_oracle *o) {
    /* ggml keeps global state (thread pools, tables); unloading a C++ library
     * with live statics is not safe, so the handles stay open until exit. */
    o->base = NULL;
    o->cpu = NULL;
    o->portable = NULL;
}

void *ggml_oracle_sym(const ggml_oracle *o, const char *name) {
    void *p = NULL;
    if (o->base != NULL) {
        p = dlsym(o->base, name);
    }
    if (p == NULL && o->cpu != NULL) {
        p = dlsym(o->cpu, name);
    }
    return p;
}

static const struct ggml_type_traits_view *traits(const ggml_oracle *o, int type) {
    const struct ggml_type_traits_view *(*get)(int) =
        (const struct ggml_type_traits_view *(*)(int))ggml_oracle_sym(o, "ggml_get_type_traits");
    if (get == NULL || type < 0 || type >= 43) {
        return NULL;
    }
    return get(type);
}

ggml_to_float_fn ggml_oracle_to_float(const ggml_oracle *o, int type) {
    const struct ggml_type_traits_view *t = traits(o, type);
    return t ? t->to_float : NULL;
}

ggml_from_float_fn ggml_oracle_from_float_ref(const ggml_oracle *o, int type) {
    const struct ggml_type_traits_view *t = traits(o, type);
    return t ? t->from_float_ref : NULL;
}

ggml_vec_dot_fn ggml_oracle_vec_dot(const ggml_oracle *o, const char *wname, const char *aname) {
    char name[128];
    snprintf(name, sizeof name, "ggml_vec_dot_%s_%s", wname, aname);
    if (o->cpu == NULL) {
        return NULL;
    }
    return (ggml_vec_dot_fn)dlsym(o->cpu, name);
}

ggml_vec_dot_fn ggml_oracle_vec_dot_portable(const ggml_oracle *o, const char *wname, const char *aname) {
    if (o->portable == NULL) {
        return NULL;
    }
    char name[128];
    snprintf(name, sizeof name, "ggml_vec_dot_%s_%s_generic", wname, aname);
    void *p = dlsym(o->portable, name);
    if (p == NULL) {
        /* a format with no SIMD version: the generic one has the plain name */
        snprintf(name, sizeof name, "ggml_vec_dot_%s_%s", wname, aname);
        p = dlsym(o->portable, name);
    }
    ggml_vec_dot_fn fn;
    memcpy(&fn, &p, sizeof fn);
    return fn;
}

ggml_from_float_fn ggml_oracle_quantize_ref(const ggml_oracle *o, int type, const char *name) {
    ggml_from_float_fn f = ggml_oracle_from_float_ref(o, type);
    if (f == NULL) {
        char sym[96];
        snprintf(sym, sizeof sym, "quantize_row_%s_ref", name);
        void *p = ggml_oracle_sym(o, sym);
        memcpy(&f, &p, sizeof f);
    }
    return f;
}
