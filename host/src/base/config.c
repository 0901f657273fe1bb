/* SPDX-License-Identifier: MIT */
/*
 * INI configuration. inih does the tokenising; this file knows the schema:
 *
 *   [plugins]  path = DIR[:DIR...]   load = a, b, c   optional = x, y
 *   [backends] order = avx512, neon, scalar
 *   [runtime]  threads = N
 *   [type.NAME] backend = NAME
 *
 * Anything else -- an unknown section or key, a key given twice, a value that
 * does not parse -- is an error naming file:line. inih's quirks are handled
 * here: ';' starts an inline comment (so lists are comma-separated), a line
 * starting with whitespace continues the previous value, lines are limited to
 * the system inih's fixed INI_MAX_LINE (200 bytes: 198 characters), reported,
 * never silently cut -- long values go on continuation lines, and `path` may
 * be repeated (each adds folders); a NUL byte in a line is refused.
 *
 * `load` and `optional` take plugin names (codec-q8_0), never paths: where
 * plugins come from is the search path alone. A path item starting with
 * "@prefix/" is relative to anvil's own install prefix (the folder above the
 * one holding the host library), so a profile works from the source tree,
 * the build tree and an install alike.
 */
#include "config.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <ini.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "trust.h"

#ifndef ANVIL_INSTALLED_CONFIG
#define ANVIL_INSTALLED_CONFIG "/usr/local/etc/anvil/anvil.ini"
#endif
#ifndef ANVIL_CONFIG_FROM_BINDIR
#define ANVIL_CONFIG_FROM_BINDIR "../etc/anvil/anvil.ini"
#endif

typedef struct parse_state {
    /* input: a FILE or a string */
    FILE *file;
    const char *text;
    size_t pos;
    int line;          /* 1-based number of the line last read */
    int continuation;  /* that line starts with whitespace */
    char section[128]; /* current section as seen by the reader */
    anvil_config *cfg;
    anvil_error *err;
    int failed;
    /* which scalar keys were seen, to refuse duplicates */
    int seen_load, seen_optional, seen_order, seen_threads, seen_insecure;
    int last_key_line; /* line of the key a continuation extends */
    char last_key[64];
} parse_state;

static int fail(parse_state *p, int line, int code, const char *fmt, const char *a, const char *b) {
    if (!p->failed) {
        char what[700];
        snprintf(what, sizeof what, fmt, a ? a : "", b ? b : "");
        anvil__error_set(p->err, code, "%s:%d: %s", p->cfg->path, line, what);
        p->failed = 1;
    }
    return 0;
}

static char *dupstr(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d != NULL) memcpy(d, s, n);
    return d;
}

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t') ++s;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n')) --e;
    *e = '\0';
    return s;
}

/* Append items of a comma-separated value to a list. */
static int append_list(parse_state *p, const char *value, char sep, char ***list, int **lines, size_t *n) {
    char *buf = dupstr(value);
    if (buf == NULL) return fail(p, p->line, ANVIL_E_NOMEM, "out of memory%s%s", NULL, NULL);
    char *s = buf;
    for (;;) {
        char *next = strchr(s, sep);
        if (next != NULL) *next = '\0';
        char *item = trim(s);
        if (*item == '\0' && next == NULL && *n > 0) {
            break; /* a trailing separator before a continuation line */
        }
        if (*item == '\0') {
            free(buf);
            return fail(p, p->line, ANVIL_E_CONFIG_VALUE, "empty item in list '%s' (items are separated by '%s')",
                        value, sep == ',' ? "," : ":");
        }
        char **nl = realloc(*list, (*n + 1) * sizeof **list);
        if (nl == NULL) {
            free(buf);
            return fail(p, p->line, ANVIL_E_NOMEM, "out of memory%s%s", NULL, NULL);
        }
        *list = nl;
        if (lines != NULL) {
            int *nli = realloc(*lines, (*n + 1) * sizeof **lines);
            if (nli == NULL) {
                free(buf);
                return fail(p, p->line, ANVIL_E_NOMEM, "out of memory%s%s", NULL, NULL);
            }
            *lines = nli;
            (*lines)[*n] = p->line;
        }
        (*list)[*n] = dupstr(item);
        if ((*list)[*n] == NULL) {
            free(buf);
            return fail(p, p->line, ANVIL_E_NOMEM, "out of memory%s%s", NULL, NULL);
        }
        ++*n;
        if (next == NULL) break;
        s = next + 1;
    }
    free(buf);
    return 1;
}

/* Where the host library lives (<prefix>/lib or, linked statically into a
 * program, <prefix>/bin): its parent is the prefix. */
static int host_prefix(char *buf, size_t size) {
    Dl_info info;
    char real[PATH_MAX];
    if (dladdr((void *)host_prefix, &info) == 0 || info.dli_fname == NULL || realpath(info.dli_fname, real) == NULL) {
        return -1;
    }
    char *slash = strrchr(real, '/');
    if (slash == NULL) return -1;
    *slash = '\0';
    slash = strrchr(real, '/');
    if (slash == NULL) return -1;
    *slash = '\0';
    snprintf(buf, size, "%s", real[0] != '\0' ? real : "/");
    return 0;
}

/* A plugin is named, not located: letters, digits, '.', '_' and '-', not
 * starting with '.'. */
static int plugin_name_ok(const char *s) {
    if (*s == '\0' || *s == '.' || strlen(s) > 127) return 0;
    for (; *s; ++s) {
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.') return 0;
    }
    return 1;
}

static int check_names(parse_state *p, const char *key, char **items, size_t from, size_t n) {
    for (size_t i = from; i < n; ++i) {
        if (!plugin_name_ok(items[i])) {
            return fail(p, p->line, ANVIL_E_CONFIG_VALUE,
                        "%s names '%s': plugins are given by name (e.g. codec-q8_0), not by path; put "
                        "the folder in [plugins] path",
                        key, items[i]);
        }
    }
    return 1;
}

/* A path from the file, relative to the file's folder; canonical when it
 * exists (so messages show /usr/lib/anvil/plugins, not etc/../../lib/...). */
static char *resolve(const parse_state *p, const char *rel) {
    char prefix[PATH_MAX] = "";
    const int at_prefix = strncmp(rel, "@prefix/", 8) == 0 && host_prefix(prefix, sizeof prefix) == 0;
    size_t n = strlen(p->cfg->dir) + strlen(prefix) + 1 + strlen(rel) + 1;
    char *out = malloc(n);
    if (out == NULL) return NULL;
    if (at_prefix) snprintf(out, n, "%s/%s", prefix, rel + 8);
    else if (rel[0] == '/') snprintf(out, n, "%s", rel);
    else snprintf(out, n, "%s/%s", p->cfg->dir, rel);
    char real[PATH_MAX];
    if (realpath(out, real) != NULL) {
        free(out);
        return dupstr(real);
    }
    return out;
}

/* A key may appear once; a whitespace-led line continues the previous key. */
static int once(parse_state *p, int *seen, const char *name) {
    if (p->continuation && strcmp(p->last_key, name) == 0) return 1;
    if (*seen) {
        return fail(p, p->line, ANVIL_E_CONFIG_VALUE,
                    "key '%s' given twice in [%s] (merge the values: one line, continued on indented "
                    "lines when long)",
                    name, p->section);
    }
    *seen = 1;
    return 1;
}

static int handler(void *user, const char *section, const char *name, const char *value) {
    parse_state *p = user;
    if (p->failed) return 1; /* keep the first error only */
    const int line = p->line;

    if (strcasecmp(section, "plugins") == 0) {
        if (strcmp(name, "path") == 0) {
            /* Repeatable: each line adds folders (a long search path need
             * not fit one line). */
            char **items = NULL;
            size_t n = 0;
            if (!append_list(p, value, ':', &items, NULL, &n)) {
                for (size_t j = 0; j < n; ++j) free(items[j]); /* items before the bad one */
                free(items);
                return 0;
            }
            for (size_t i = 0; i < n; ++i) {
                char *r = resolve(p, items[i]);
                free(items[i]);
                char **ns = realloc(p->cfg->search, (p->cfg->n_search + 1) * sizeof *ns);
                if (r == NULL || ns == NULL) {
                    free(r);
                    for (size_t j = i + 1; j < n; ++j) free(items[j]);
                    free(items);
                    return fail(p, line, ANVIL_E_NOMEM, "out of memory%s%s", NULL, NULL);
                }
                p->cfg->search = ns;
                p->cfg->search[p->cfg->n_search++] = r;
            }
            free(items);
        } else if (strcmp(name, "load") == 0) {
            if (!once(p, &p->seen_load, name)) return 0;
            if (strcmp(value, "*") == 0) {
                p->cfg->load_all = 1;
            } else {
                const size_t from = p->cfg->n_load;
                p->cfg->load_all = 0;
                if (!append_list(p, value, ',', &p->cfg->load, &p->cfg->load_lines, &p->cfg->n_load)) return 0;
                if (!check_names(p, "load", p->cfg->load, from, p->cfg->n_load)) return 0;
            }
        } else if (strcmp(name, "optional") == 0) {
            if (!once(p, &p->seen_optional, name)) return 0;
            const size_t from = p->cfg->n_optional;
            if (!append_list(p, value, ',', &p->cfg->optional, &p->cfg->optional_lines, &p->cfg->n_optional))
                return 0;
            if (!check_names(p, "optional", p->cfg->optional, from, p->cfg->n_optional)) return 0;
        } else if (strcmp(name, "allow_insecure") == 0) {
            if (!once(p, &p->seen_insecure, name)) return 0;
            if (strcasecmp(value, "yes") == 0 || strcasecmp(value, "true") == 0 || strcmp(value, "1") == 0) {
                p->cfg->allow_insecure = 1;
            } else if (strcasecmp(value, "no") == 0 || strcasecmp(value, "false") == 0 || strcmp(value, "0") == 0) {
                p->cfg->allow_insecure = 0;
            } else {
                return fail(p, line, ANVIL_E_CONFIG_VALUE, "allow_insecure = '%s': give yes or no%s", value, NULL);
            }
            p->cfg->allow_insecure_line = line;
        } else {
            return fail(p, line, ANVIL_E_CONFIG_UNKNOWN,
                        "unknown key '%s' in [%s] (known: path, load, optional, allow_insecure)", name, section);
        }
    } else if (strcasecmp(section, "backends") == 0) {
        if (strcmp(name, "order") == 0) {
            if (!once(p, &p->seen_order, name)) return 0;
            if (!append_list(p, value, ',', &p->cfg->order, &p->cfg->order_lines, &p->cfg->n_order)) return 0;
        } else {
            return fail(p, line, ANVIL_E_CONFIG_UNKNOWN, "unknown key '%s' in [%s] (known: order)", name, section);
        }
    } else if (strcasecmp(section, "runtime") == 0) {
        if (strcmp(name, "threads") == 0) {
            if (!once(p, &p->seen_threads, name)) return 0;
            char *end = NULL;
            errno = 0;
            long v = strtol(value, &end, 10);
            if (errno != 0 || end == value || *trim(end) != '\0' || v < 0 || v > 1024) {
                return fail(p, line, ANVIL_E_CONFIG_VALUE,
                            "threads = '%s' is not a number from 0 to 1024 (0 = all online CPUs)%s", value, NULL);
            }
            p->cfg->threads = (unsigned)v;
            p->cfg->threads_set = 1;
        } else {
            return fail(p, line, ANVIL_E_CONFIG_UNKNOWN, "unknown key '%s' in [%s] (known: threads)", name, section);
        }
    } else if (strncasecmp(section, "type.", 5) == 0) {
        if (strcmp(name, "backend") != 0) {
            return fail(p, line, ANVIL_E_CONFIG_UNKNOWN, "unknown key '%s' in [%s] (known: backend)", name, section);
        }
        for (size_t i = 0; i < p->cfg->n_pins; ++i) {
            if (strcasecmp(p->cfg->pins[i].type_name, section + 5) == 0) {
                return fail(p, line, ANVIL_E_CONFIG_VALUE, "[%s] backend given twice%s", section, NULL);
            }
        }
        if (section[5] == '\0' || strpbrk(value, ", \t") != NULL || *value == '\0') {
            return fail(p, line, ANVIL_E_CONFIG_VALUE, "[%s] backend = '%s' must name exactly one backend", section,
                        value);
        }
        anvil_config_pin *np = realloc(p->cfg->pins, (p->cfg->n_pins + 1) * sizeof *np);
        if (np == NULL) return fail(p, line, ANVIL_E_NOMEM, "out of memory%s%s", NULL, NULL);
        p->cfg->pins = np;
        np[p->cfg->n_pins].type_name = dupstr(section + 5);
        np[p->cfg->n_pins].backend = dupstr(value);
        np[p->cfg->n_pins].line = line;
        p->cfg->n_pins++;
    } else {
        /* Sections are validated as the reader sees them; this is a key in
         * an already-reported section. */
        return fail(p, line, ANVIL_E_CONFIG_UNKNOWN, "unknown section [%s]%s", section, NULL);
    }
    snprintf(p->last_key, sizeof p->last_key, "%s", name);
    return 1;
}

static int section_known(const char *s) {
    return strcasecmp(s, "plugins") == 0 || strcasecmp(s, "backends") == 0 || strcasecmp(s, "runtime") == 0 ||
           (strncasecmp(s, "type.", 5) == 0 && s[5] != '\0');
}

/* inih reader: one whole line per call, so line numbers are exact and an
 * over-long line is reported instead of being split in two. */
static char *reader(char *str, int num, void *stream) {
    parse_state *p = stream;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    if (p->file != NULL) {
        len = getline(&line, &cap, p->file);
        if (len < 0) {
            free(line);
            return NULL;
        }
    } else {
        if (p->text[p->pos] == '\0') return NULL;
        const char *s = p->text + p->pos;
        const char *nl = strchr(s, '\n');
        len = nl ? (nl - s) + 1 : (ssize_t)strlen(s);
        line = malloc((size_t)len + 1);
        if (line == NULL) return NULL;
        memcpy(line, s, (size_t)len);
        line[len] = '\0';
        p->pos += (size_t)len;
    }
    p->line++;
    p->continuation = (line[0] == ' ' || line[0] == '\t');
    const char *nul = memchr(line, '\0', (size_t)len);
    if (nul != NULL) {
        char at[24];
        snprintf(at, sizeof at, "%zu", (size_t)(nul - line) + 1);
        fail(p, p->line, ANVIL_E_CONFIG_SYNTAX,
             "the line holds a NUL byte (character %s)%s: an INI file is text; remove it", at, NULL);
    }
    size_t content = strcspn(line, "\r\n");
    if (content >= (size_t)num - 1) {
        char limit[16];
        snprintf(limit, sizeof limit, "%d", num - 2);
        fail(p, p->line, ANVIL_E_CONFIG_SYNTAX,
             "line longer than %s characters, the limit of the INI parser (inih)%s: continue a long "
             "value on indented lines, or repeat `path =` (each adds folders)",
             limit, NULL);
        content = (size_t)num - 2;
    }
    /* Track sections here: inih only reports a section through its keys, so
     * an unknown empty section would otherwise pass unnoticed. */
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%.*s", (int)content, line);
    char *t = trim(tmp);
    /* (An indented line after a key is that key's continuation for inih,
     * whatever it starts with.) */
    if (t[0] == '[' && !(p->continuation && p->last_key[0] != '\0')) {
        char *close = strchr(t, ']');
        if (close == NULL) {
            /* inih would keep the previous section and report the next key
             * against it: name the header itself. */
            fail(p, p->line, ANVIL_E_CONFIG_SYNTAX, "unterminated section header '%s' (no closing ']')%s", t, NULL);
        } else {
            *close = '\0';
            char *name = trim(t + 1);
            snprintf(p->section, sizeof p->section, "%s", name);
            if (!section_known(name)) {
                fail(p, p->line, ANVIL_E_CONFIG_UNKNOWN,
                     "unknown section [%s] (known: plugins, backends, runtime, type.NAME)", name, NULL);
            }
            p->last_key[0] = '\0';
        }
    }
    memcpy(str, line, content);
    str[content] = '\n';
    str[content + 1] = '\0';
    free(line);
    return str;
}

static int finish(parse_state *p, int rc) {
    if (p->failed) {
        return p->err ? p->err->code : ANVIL_E_CONFIG_SYNTAX;
    }
    if (rc > 0) {
        anvil__error_set(p->err, ANVIL_E_CONFIG_SYNTAX, "%s:%d: not a 'key = value' line, a [section] or a comment",
                         p->cfg->path, rc);
        return ANVIL_E_CONFIG_SYNTAX;
    }
    if (rc < 0) {
        return anvil__error_set(p->err, ANVIL_E_NOMEM, "%s: out of memory while parsing", p->cfg->path);
    }
    if (!p->seen_load) p->cfg->load_all = 1;
    return ANVIL_OK;
}

static int init_cfg(anvil_config *cfg, const char *path, anvil_error *err) {
    memset(cfg, 0, sizeof *cfg);
    char real[PATH_MAX];
    cfg->path = dupstr(realpath(path, real) != NULL ? real : path);
    char *copy = dupstr(cfg->path ? cfg->path : path);
    if (cfg->path == NULL || copy == NULL) {
        free(copy);
        return anvil__nomem(err);
    }
    cfg->dir = dupstr(dirname(copy));
    free(copy);
    if (cfg->dir == NULL) return anvil__nomem(err);
    return ANVIL_OK;
}

int anvil__config_load(const char *path, anvil_config *cfg, anvil_error *err) {
    int rc = init_cfg(cfg, path, err);
    if (rc != ANVIL_OK) return rc;
    FILE *f = fopen(path, "r");
    struct stat st;
    memset(&st, 0, sizeof st);
    if (f == NULL) {
        rc = anvil__error_set(err, ANVIL_E_IO, "cannot open config %s: %s (pass --config FILE or set ANVIL_CONFIG)",
                              path, strerror(errno));
    } else if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = anvil__error_set(err, ANVIL_E_IO, "config %s is %s, not a file: give the .ini file itself", path,
                              S_ISDIR(st.st_mode) ? "a folder" : "not a regular file");
    } else {
        /* A config names the code anvil loads: only its owner may change it. */
        char why[sizeof cfg->trust_note];
        cfg->insecure_env = trust_insecure_env();
        if (trust_check_file(path, 0, why, sizeof why) != 0) {
            if (cfg->insecure_env) {
                snprintf(cfg->trust_note, sizeof cfg->trust_note, "%s", why);
            } else {
                rc = anvil__error_set(
                    err, ANVIL_E_UNTRUSTED,
                    "config %s is not trusted: %s (for development only: set " ANVIL_INSECURE_ENV "=1)", path, why);
            }
        }
    }
    if (rc != ANVIL_OK) {
        if (f != NULL) fclose(f);
        anvil__config_free(cfg);
        return rc;
    }
    parse_state p = { .file = f, .cfg = cfg, .err = err };
    rc = finish(&p, ini_parse_stream(reader, &p, handler, &p));
    fclose(f);
    if (rc != ANVIL_OK) anvil__config_free(cfg);
    return rc;
}

int anvil__config_parse_text(const char *text, const char *path, anvil_config *cfg, anvil_error *err) {
    int rc = init_cfg(cfg, path, err);
    if (rc != ANVIL_OK) return rc;
    parse_state p = { .text = text, .cfg = cfg, .err = err };
    rc = finish(&p, ini_parse_stream(reader, &p, handler, &p));
    if (rc != ANVIL_OK) anvil__config_free(cfg);
    return rc;
}

static void free_list(char **l, size_t n) {
    for (size_t i = 0; i < n; ++i) free(l[i]);
    free(l);
}

void anvil__config_free(anvil_config *cfg) {
    if (cfg == NULL) return;
    free(cfg->path);
    free(cfg->dir);
    free_list(cfg->search, cfg->n_search);
    free_list(cfg->load, cfg->n_load);
    free(cfg->load_lines);
    free_list(cfg->optional, cfg->n_optional);
    free(cfg->optional_lines);
    free_list(cfg->order, cfg->n_order);
    free(cfg->order_lines);
    for (size_t i = 0; i < cfg->n_pins; ++i) {
        free(cfg->pins[i].type_name);
        free(cfg->pins[i].backend);
    }
    free(cfg->pins);
    memset(cfg, 0, sizeof *cfg);
}

static int exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

int anvil__config_default_path(char *buf, size_t size, const char **source) {
    const char *env = getenv("ANVIL_CONFIG");
    if (env != NULL && *env != '\0') {
        snprintf(buf, size, "%s", env);
        *source = "from ANVIL_CONFIG";
        return 0;
    }
    /* Next to the host library (build tree and relocatable installs). */
    Dl_info info;
    char libpath[PATH_MAX] = "";
    if (dladdr((void *)anvil__config_default_path, &info) != 0 && info.dli_fname != NULL) {
        char real[PATH_MAX];
        if (realpath(info.dli_fname, real) != NULL) {
            snprintf(libpath, sizeof libpath, "%s", dirname(real));
            char cand[PATH_MAX + 64];
            snprintf(cand, sizeof cand, "%s/%s", libpath, ANVIL_CONFIG_FROM_BINDIR);
            if (exists(cand)) {
                snprintf(buf, size, "%s", cand);
                *source = "default: next to the anvil library";
                return 0;
            }
        }
    }
    if (exists(ANVIL_INSTALLED_CONFIG)) {
        snprintf(buf, size, "%s", ANVIL_INSTALLED_CONFIG);
        *source = "default: the installed config";
        return 0;
    }
    snprintf(buf, size, "no config found: ANVIL_CONFIG unset, none at %s/%s, none at %s", libpath,
             ANVIL_CONFIG_FROM_BINDIR, ANVIL_INSTALLED_CONFIG);
    return -1;
}
