/* SPDX-License-Identifier: MIT */
/* Internal: the INI configuration (parsed with inih). */
#ifndef ANVIL_HOST_CONFIG_H
#define ANVIL_HOST_CONFIG_H

#include <stddef.h>

#include "anvil/anvil.h"

typedef struct anvil_config_pin {
    char *type_name; /* from [type.NAME] */
    char *backend;   /* backend = ... */
    int line;
} anvil_config_pin;

typedef struct anvil_config {
    char *path;    /* the file, as given */
    char *dir;     /* its folder: relative paths resolve here */
    char **search; /* [plugins] path, resolved; may be empty */
    size_t n_search;
    char **load; /* [plugins] load; NULL list + load_all=1 when absent or "*" */
    int *load_lines;
    size_t n_load;
    int load_all;
    char **optional; /* [plugins] optional: loaded when present */
    int *optional_lines;
    size_t n_optional;
    char **order; /* [backends] order */
    int *order_lines;
    size_t n_order;
    anvil_config_pin *pins;
    size_t n_pins;
    unsigned threads; /* [runtime] threads; 0 = online CPUs */
    int threads_set;
    int allow_insecure; /* [plugins] allow_insecure = yes: untrusted plugins load (noted) */
    int allow_insecure_line;
    int insecure_env;     /* ANVIL_ALLOW_INSECURE set: every trust check relaxed */
    char trust_note[512]; /* why this config would have been refused, when relaxed */
    const char *source;   /* how the file was chosen (static text, set by the context) */
} anvil_config;

/* Parse a file. Errors name file:line. The file must be trusted (trust.h):
 * a regular file that only its owner (root or you) can change. */
int anvil__config_load(const char *path, anvil_config *cfg, anvil_error *err);
/* Parse INI text as if it were the file `path` (for tests). */
int anvil__config_parse_text(const char *text, const char *path, anvil_config *cfg, anvil_error *err);
void anvil__config_free(anvil_config *cfg);

/* Where the default config is: $ANVIL_CONFIG, next to the host library
 * (<libdir>/../etc/anvil/anvil.ini), then the installed path. Writes the
 * chosen path into buf and how it was chosen into *source; returns 0, or -1
 * when none exists (buf then holds a description of what was tried). */
int anvil__config_default_path(char *buf, size_t size, const char **source);

#endif
