/* SPDX-License-Identifier: MIT */
/*
 * hf_meta_name: gguf-py's naming heuristics, in C. get_model_id_components
 * and id_to_title (metadata.py) split a Hugging Face model id such as
 * "meta-llama/Llama-3.1-8B-Instruct" into name, organization, basename,
 * finetune, version and size label; size_label, naming_convention and
 * fill_templated_filename (utility.py) make the parameter label and the
 * output file name. Casing follows Python's str methods for ASCII; other
 * characters are left as they are (Python would also title-case letters
 * beyond ASCII).
 *
 * Time: every step is one pass over the id (the size labels are
 * deduplicated through a hash set), and an id over HF_ID_MAX bytes is
 * refused before any of it (the caller names where it came from).
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hf_meta_name.h"

static int ci_eq(const char *a, size_t n, const char *b) { return strlen(b) == n && strncasecmp(a, b, n) == 0; }

/* \d+([.]\d+)* */
static int dotted_number(const char *s, size_t n) {
    size_t i = 0;
    for (;;) {
        const size_t st = i;
        while (i < n && isdigit((unsigned char)s[i])) ++i;
        if (i == st) return 0;
        if (i == n) return 1;
        if (s[i] != '.') return 0;
        ++i;
    }
}

/* (v|iter)?\d+([.]\d+)*, ignoring case */
static int is_version(const char *s) {
    const size_t n = strlen(s);
    if (dotted_number(s, n)) return 1;
    if (n > 1 && (s[0] == 'v' || s[0] == 'V') && dotted_number(s + 1, n - 1)) return 1;
    return n > 4 && strncasecmp(s, "iter", 4) == 0 && dotted_number(s + 4, n - 4);
}

static int is_word(char c) { return isalnum((unsigned char)c) || c == '_' || (unsigned char)c >= 0x80; }

/* i?q\d(_\w)*|b?fp?(16|32), ignoring case */
static int is_quant_type(const char *s) {
    const size_t n = strlen(s);
    size_t i = 0;
    if (i < n && tolower((unsigned char)s[i]) == 'i') ++i;
    if (i + 1 < n + 1 && i < n && tolower((unsigned char)s[i]) == 'q' && i + 1 < n &&
        isdigit((unsigned char)s[i + 1])) {
        size_t j = i + 2;
        while (j < n && s[j] == '_' && j + 1 < n && is_word(s[j + 1])) j += 2;
        if (j == n) return 1;
    }
    i = 0;
    if (i < n && tolower((unsigned char)s[i]) == 'b') ++i;
    if (i < n && tolower((unsigned char)s[i]) == 'f') {
        ++i;
        if (i < n && tolower((unsigned char)s[i]) == 'p') ++i;
        if (n - i == 2 && (strncmp(s + i, "16", 2) == 0 || strncmp(s + i, "32", 2) == 0)) return 1;
    }
    return 0;
}

/* (([A]|\d+[x])?\d+([._]\d+)?[KMBT][\d]?|small|mini|medium|large|x?xl), ignoring case */
static int is_size(const char *s) {
    const size_t n = strlen(s);
    static const char *const words[] = { "small", "mini", "medium", "large", "xl", "xxl" };
    for (size_t k = 0; k < 6; ++k) {
        if (ci_eq(s, n, words[k])) return 1;
    }
    /* Try each split of an optional prefix: "A", or digits + 'x'. */
    size_t starts[3] = { 0, 0, 0 };
    size_t ns = 1;
    if (n > 0 && tolower((unsigned char)s[0]) == 'a') starts[ns++] = 1;
    size_t d = 0;
    while (d < n && isdigit((unsigned char)s[d])) ++d;
    if (d > 0 && d < n && tolower((unsigned char)s[d]) == 'x') starts[ns++] = d + 1;
    for (size_t k = 0; k < ns; ++k) {
        size_t i = starts[k];
        const size_t st = i;
        while (i < n && isdigit((unsigned char)s[i])) ++i;
        if (i == st) continue;
        if (i < n && (s[i] == '.' || s[i] == '_') && i + 1 < n && isdigit((unsigned char)s[i + 1])) {
            ++i;
            while (i < n && isdigit((unsigned char)s[i])) ++i;
        }
        if (i >= n || strchr("kmbtKMBT", s[i]) == NULL) continue;
        ++i;
        if (i < n && isdigit((unsigned char)s[i])) ++i;
        if (i == n) return 1;
    }
    return 0;
}

static int is_alpha_all(const char *s) {
    if (*s == '\0') return 0;
    for (; *s; ++s) {
        if (!isalpha((unsigned char)*s)) return 0;
    }
    return 1;
}

static int has_digit(const char *s) {
    for (; *s; ++s) {
        if (isdigit((unsigned char)*s)) return 1;
    }
    return 0;
}

enum { T_BASENAME = 1, T_SIZE = 2, T_FINETUNE = 4, T_VERSION = 8, T_TYPE = 16 };

static int popcount(unsigned t) {
    int c = 0;
    for (; t; t &= t - 1) ++c;
    return c;
}

/* A size part as get_model_id_components normalises it. */
static void normalise_size(char *part, int64_t total, unsigned *types) {
    for (char *p = part; *p; ++p) {
        if (*p == '_') *p = '.';
    }
    size_t n = strlen(part);
    if (n >= 2 && isdigit((unsigned char)part[n - 1])) {
        const char last = part[n - 1], prev = part[n - 2];
        part[n - 2] = '.';
        part[n - 1] = last;
        part[n] = prev;
        part[n + 1] = '\0';
        n++;
    }
    if (n > 1 && isdigit((unsigned char)part[n - 2]) && strchr("kmbt", part[n - 1]) != NULL) {
        part[n - 1] = (char)toupper((unsigned char)part[n - 1]);
    }
    if (total != 0 && n > 1) {
        char num[64];
        if (n - 1 >= sizeof num) return;
        memcpy(num, part, n - 1);
        num[n - 1] = '\0';
        char *end = NULL;
        const double v = strtod(num, &end);
        if (end == num || *end != '\0' || !dotted_number(num, n - 1)) return; /* float() fails */
        const char *at = strchr(" KMBT", part[n - 1]);
        const double scale = at ? pow(1000.0, (double)(at - " KMBT")) : 0.001;
        const double label = v * scale;
        const int64_t at8 = total < 0 ? (-total) / 8 : 0;
        const int64_t seven8 = total > 0 ? (7 * total) / 8 : 0;
        if ((total < 0 && label < (double)at8) || (total > 0 && fabs(label - (double)total) > (double)seven8)) {
            *types |= T_FINETUNE;
            part[n - 1] = (char)tolower((unsigned char)part[n - 1]);
        }
    }
}

static uint64_t str_hash(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; ++s) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The parts of the kinds wanted joined by '-' (NULL when none), in one
 * pass; dedup drops a part equal to an earlier kept one (a hash set of the
 * kept parts: linear, where comparing with each earlier part was not). */
static char *join(char **parts, const unsigned *types, size_t n, unsigned want, unsigned not_with, int dedup) {
    size_t cap = 1, kept = 0;
    for (size_t i = 0; i < n; ++i) {
        if (!(types[i] & want) || (types[i] & not_with)) continue;
        cap += strlen(parts[i]) + 1;
        kept++;
    }
    if (kept == 0) return NULL;
    size_t slots = 0;
    size_t *set = NULL; /* index + 1 of a kept part; 0 = empty */
    if (dedup) {
        for (slots = 16; slots < 2 * kept; slots *= 2) {
        }
        set = calloc(slots, sizeof *set);
        if (set == NULL) return NULL;
    }
    char *out = malloc(cap);
    if (out == NULL) {
        free(set);
        return NULL;
    }
    size_t o = 0;
    for (size_t i = 0; i < n; ++i) {
        if (!(types[i] & want) || (types[i] & not_with)) continue;
        if (dedup) {
            size_t h = (size_t)str_hash(parts[i]) & (slots - 1);
            while (set[h] != 0 && strcmp(parts[set[h] - 1], parts[i]) != 0) h = (h + 1) & (slots - 1);
            if (set[h] != 0) continue; /* seen */
            set[h] = i + 1;
        }
        if (o > 0) out[o++] = '-';
        const size_t len = strlen(parts[i]);
        memcpy(out + o, parts[i], len);
        o += len;
    }
    out[o] = '\0';
    free(set);
    return out;
}

static void annotate(char **parts, unsigned *types, size_t n, int64_t total) {
    for (size_t i = 0; i < n; ++i) {
        char *p = parts[i];
        if (is_version(p)) types[i] |= T_VERSION;
        else if (is_quant_type(p)) {
            types[i] |= T_TYPE;
            for (char *c = p; *c; ++c) *c = (char)toupper((unsigned char)*c);
        } else if (i > 0 && is_size(p)) {
            normalise_size(p, total, &types[i]);
            if (types[i] == 0) types[i] |= T_SIZE;
        } else if (i > 0 && (ci_eq(p, strlen(p), "chat") || ci_eq(p, strlen(p), "instruct") ||
                             ci_eq(p, strlen(p), "vision") || ci_eq(p, strlen(p), "lora"))) {
            types[i] |= (total < 0 && ci_eq(p, strlen(p), "lora")) ? T_TYPE : T_FINETUNE;
        }
    }
    int numeric_size = 0;
    for (size_t i = 0; i < n; ++i) numeric_size |= (types[i] & T_SIZE) && has_digit(parts[i]);
    for (size_t i = 0; numeric_size && i < n; ++i) {
        if ((types[i] & T_SIZE) && is_alpha_all(parts[i])) types[i] &= ~(unsigned)T_SIZE;
    }
    int at_start = 1;
    for (size_t i = 0; i < n; ++i) {
        if (at_start && ((types[i] == 0 && isalpha((unsigned char)parts[i][0])) || (types[i] & T_VERSION))) {
            types[i] |= T_BASENAME;
        } else {
            at_start = 0;
            if (types[i] == 0) types[i] |= T_FINETUNE;
        }
    }
    for (size_t i = n; i-- > 0;) {
        if ((types[i] & T_BASENAME) && popcount(types[i]) > 1) types[i] &= ~(unsigned)T_BASENAME;
        else break;
    }
}

int hf_model_id_components(const char *model_id, int64_t total, hf_id_parts *o) {
    memset(o, 0, sizeof *o);
    if (model_id == NULL) return 0;
    if (strnlen(model_id, HF_ID_MAX + 1) > HF_ID_MAX) return -2; /* refused, not cut: see hf_meta_name.h */
    const char *slash = strchr(model_id, '/');
    if (strchr(model_id, ' ') != NULL) {
        o->full_name = strdup(model_id);
        return o->full_name ? 0 : -1;
    }
    const char *full = slash ? slash + 1 : model_id;
    if (slash && slash > model_id && model_id[0] != '.') {
        o->org = strndup(model_id, (size_t)(slash - model_id));
        if (o->org == NULL) return -1;
    }
    o->full_name = strdup(full);
    const size_t len = strlen(full);
    char **parts = calloc(len + 1, sizeof *parts);
    unsigned *types = calloc(len + 1, sizeof *types);
    char *copy = strdup(full);
    if (o->full_name == NULL || parts == NULL || types == NULL || copy == NULL) {
        free(parts), free(types), free(copy);
        return -1;
    }
    size_t n = 0;
    for (char *save = NULL, *tok = strtok_r(copy, "-", &save); tok; tok = strtok_r(NULL, "-", &save)) {
        parts[n] = malloc(strlen(tok) + 3); /* room for the 7b1 -> 7.1b swap */
        if (parts[n] == NULL) break;
        strcpy(parts[n++], tok);
    }
    annotate(parts, types, n, total);
    o->basename = join(parts, types, n, T_BASENAME, 0, 0);
    o->size_label = join(parts, types, n, T_SIZE, 0, 1);
    o->finetune = join(parts, types, n, T_FINETUNE, 0, 0);
    o->version = join(parts, types, n, T_VERSION, T_BASENAME, 0);
    if (o->size_label == NULL && o->finetune == NULL && o->version == NULL) {
        free(o->basename);
        o->basename = NULL;
    }
    for (size_t i = 0; i < n; ++i) free(parts[i]);
    free(parts), free(types), free(copy);
    return 0;
}

void hf_id_parts_free(hf_id_parts *o) {
    free(o->full_name), free(o->org), free(o->basename), free(o->finetune), free(o->version), free(o->size_label);
    memset(o, 0, sizeof *o);
}

/* ^(v\d+(?:\.\d+)*|\d.*)$ */
static int title_exempt(const char *w, size_t n) {
    if (n > 0 && isdigit((unsigned char)w[0])) return 1;
    return n > 1 && w[0] == 'v' && dotted_number(w + 1, n - 1);
}

static int py_islower(const char *w, size_t n) {
    int cased = 0;
    for (size_t i = 0; i < n; ++i) {
        if (isupper((unsigned char)w[i])) return 0;
        if (islower((unsigned char)w[i])) cased = 1;
    }
    return cased;
}

char *hf_id_to_title(const char *s) {
    const size_t n = strlen(s);
    char *out = malloc(n + 1);
    if (out == NULL) return NULL;
    size_t o = 0, i = 0;
    for (;;) {
        while (i < n && (isspace((unsigned char)s[i]) || s[i] == '-')) ++i;
        if (i >= n) break;
        const size_t st = i;
        while (i < n && !isspace((unsigned char)s[i]) && s[i] != '-') ++i;
        if (o > 0) out[o++] = ' ';
        const int title = py_islower(s + st, i - st) && !title_exempt(s + st, i - st);
        int prev_cased = 0;
        for (size_t k = st; k < i; ++k) {
            const unsigned char c = (unsigned char)s[k];
            const int cased = isalpha(c);
            out[o++] = (char)(!title || !cased ? c : prev_cased ? tolower(c) : toupper(c));
            prev_cased = cased;
        }
    }
    out[o] = '\0';
    return out;
}

void hf_size_label(int64_t total, char *buf, size_t cap) {
    const double n = (double)(total < 0 ? -total : total);
    double scaled;
    char suffix;
    if (n > 1e12) scaled = n * 1e-12, suffix = 'T';
    else if (n > 1e9) scaled = n * 1e-9, suffix = 'B';
    else if (n > 1e6) scaled = n * 1e-6, suffix = 'M';
    else scaled = n * 1e-3, suffix = 'K';
    char digits[64];
    snprintf(digits, sizeof digits, "%.0f", nearbyint(scaled));
    const char *d = digits;
    while (*d == '0') ++d;
    int fix = 2 - (int)strlen(d);
    if (fix < 0) fix = 0;
    snprintf(buf, cap, "%.*f%c", fix, scaled, suffix);
}

int hf_fill_template(const char *name, const char *type, char *buf, size_t cap, anvil_error *err) {
    size_t o = 0;
    for (const char *p = name; *p; ++p) {
        const char *ins = NULL;
        char one[2] = { *p, 0 };
        int upper = 0;
        if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) {
            ins = one;
            ++p;
        } else if (*p == '{') {
            const char *e = strchr(p, '}');
            const size_t fl = e ? (size_t)(e - p - 1) : 0;
            if (e != NULL && (fl == 0 || ci_eq(p + 1, fl, "ftype") || ci_eq(p + 1, fl, "outtype"))) {
                upper = fl > 0 && (strncmp(p + 1, "FTYPE", fl) == 0 || strncmp(p + 1, "OUTTYPE", fl) == 0);
                const int lower = fl == 0 || strncmp(p + 1, "ftype", fl) == 0 || strncmp(p + 1, "outtype", fl) == 0;
                if (upper || lower) {
                    ins = type;
                    p = e;
                }
            }
            if (ins == NULL) {
                return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                        "output name %s: only {ftype}, {outtype}, "
                                        "{FTYPE}, {OUTTYPE} and {} may appear in braces (write {{ or }} for a "
                                        "brace)",
                                        name);
            }
        } else if (*p == '}') {
            return anvil__error_set(err, ANVIL_E_INVALID_ARG, "output name %s: a single '}' (write }})", name);
        } else {
            ins = one;
        }
        for (const char *c = ins; *c; ++c) {
            if (o + 1 >= cap) return anvil__error_set(err, ANVIL_E_INVALID_ARG, "output name too long: %s", name);
            buf[o++] = (char)(ins == type ? (upper ? toupper((unsigned char)*c) : tolower((unsigned char)*c)) : *c);
        }
    }
    buf[o] = '\0';
    return ANVIL_OK;
}
