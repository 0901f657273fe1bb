/* SPDX-License-Identifier: MIT */
/*
 * hf_card: the YAML front matter of a checkpoint's README.md model card, as
 * far as gguf-py's Metadata reads it. metadata.py hands the block between
 * the first two "---" lines (after its two fixes: "- no" quoted, tabs as
 * two spaces) to PyYAML; anvil reads the subset model cards use for the keys
 * the converter takes: `key: scalar`, `key: [a, b]`, and `key:` followed by
 * `- item` lines. The result is an anvil_json_value object whose values are strings,
 * lists of strings or null. A value of another form (a nested mapping, a
 * block scalar, a number, a boolean, a list of mappings) is kept as a marker
 * (kind TRUE): hf_card_value refuses it only when the converter would use
 * that key, naming the key.
 *
 * Hostile cards: README.md is read through file_input (a FIFO, a socket, a
 * device or a folder is refused by what it is, never opened to block), whole
 * up to 64 MiB (a larger one is refused); the line array is sized by
 * counting the lines first; only the keys hf_meta.c reads are kept, so the
 * duplicate check is over a few dozen keys and a card of any number of keys
 * is read in one pass.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"
#include "file_input.h"
#include "hf_card.h"
#include "hf_internal.h"

static int push(anvil_json_value *parent, anvil_json_value *child) {
    if (child == NULL) return -1;
    if (anvil__json_append(parent, child) != 0) {
        anvil__json_free(child);
        return -1;
    }
    return 0;
}

/* One YAML scalar (trimmed) as a node: a string, null, or the marker for
 * anything PyYAML would not load as a string. */
static anvil_json_value *scalar(const char *key, const char *s, size_t n) {
    while (n > 0 && isspace((unsigned char)s[n - 1])) --n;
    while (n > 0 && isspace((unsigned char)*s)) ++s, --n;
    if (n >= 2 && (s[0] == '"' || s[0] == '\'') && s[n - 1] == s[0]) {
        char *buf = malloc(n);
        if (buf == NULL) return NULL;
        size_t o = 0;
        for (size_t i = 1; i + 1 < n; ++i) {
            if (s[0] == '\'' && s[i] == '\'' && s[i + 1] == '\'') ++i;
            else if (s[0] == '"' && s[i] == '\\') {
                free(buf);
                return anvil__json_new(ANVIL_JSON_TRUE, key, NULL, 0); /* escapes: not read */
            }
            buf[o++] = s[i];
        }
        anvil_json_value *j = anvil__json_new(ANVIL_JSON_STRING, key, buf, o);
        free(buf);
        return j;
    }
    if (n == 0 || (n == 1 && s[0] == '~') ||
        (n == 4 && (!strncmp(s, "null", 4) || !strncmp(s, "Null", 4) || !strncmp(s, "NULL", 4)))) {
        return anvil__json_new(ANVIL_JSON_NULL, key, NULL, 0);
    }
    static const char *const other[] = { "true", "false", "yes", "no",   "on",    "off", "True", "False", "Yes",
                                         "No",   "On",    "Off", "TRUE", "FALSE", "YES", "NO",   "ON",    "OFF" };
    for (size_t k = 0; k < sizeof other / sizeof other[0]; ++k) {
        if (strlen(other[k]) == n && strncmp(s, other[k], n) == 0)
            return anvil__json_new(ANVIL_JSON_TRUE, key, NULL, 0);
    }
    char tmp[64];
    if (n < sizeof tmp) {
        memcpy(tmp, s, n);
        tmp[n] = '\0';
        char *end = NULL;
        (void)strtod(tmp, &end);
        if (end == tmp + n && (isdigit((unsigned char)tmp[0]) || tmp[0] == '-' || tmp[0] == '+' || tmp[0] == '.')) {
            return anvil__json_new(ANVIL_JSON_TRUE, key, NULL, 0); /* a number */
        }
    }
    if (strchr("&*!|>%@`{[", s[0]) != NULL) return anvil__json_new(ANVIL_JSON_TRUE, key, NULL, 0);
    return anvil__json_new(ANVIL_JSON_STRING, key, s, n);
}

/* A plain scalar's text without a trailing " # comment". */
static size_t uncomment(const char *s, size_t n) {
    if (n > 0 && (s[0] == '"' || s[0] == '\'')) return n;
    for (size_t i = 0; i + 1 < n; ++i) {
        if (isspace((unsigned char)s[i]) && s[i + 1] == '#') return i;
    }
    return n;
}

static anvil_json_value *flow_list(const char *key, const char *s, size_t n) {
    anvil_json_value *arr = anvil__json_new(ANVIL_JSON_ARRAY_BEGIN, key, NULL, 0);
    if (arr == NULL) return NULL;
    size_t i = 1;
    while (i < n - 1) {
        size_t e = i;
        while (e < n - 1 && s[e] != ',') ++e;
        anvil_json_value *item = scalar(NULL, s + i, e - i);
        if (item != NULL && item->kind == ANVIL_JSON_NULL && e == n - 1 && arr->n_items > 0) {
            anvil__json_free(item); /* "[a, b, ]" */
            break;
        }
        if (push(arr, item) != 0) {
            anvil__json_free(arr);
            return NULL;
        }
        i = e + 1;
    }
    for (size_t k = 0; k < arr->n_items; ++k) {
        if (arr->items[k]->kind != ANVIL_JSON_STRING) {
            anvil__json_free(arr);
            return anvil__json_new(ANVIL_JSON_TRUE, key, NULL, 0);
        }
    }
    return arr;
}

typedef struct line {
    const char *p;
    size_t n;
    int indent;
} line;

static anvil_json_value *block_value(const char *key, const line *ls, size_t nl, size_t *i) {
    size_t k = *i;
    while (k < nl && (ls[k].n == 0 || ls[k].p[0] == '#')) ++k;
    const int seq = k < nl && ls[k].n >= 1 && ls[k].p[0] == '-' && (ls[k].n == 1 || ls[k].p[1] == ' ');
    if (k >= nl || (ls[k].indent == 0 && !seq)) return anvil__json_new(ANVIL_JSON_NULL, key, NULL, 0);
    anvil_json_value *arr = seq ? anvil__json_new(ANVIL_JSON_ARRAY_BEGIN, key, NULL, 0)
                                : anvil__json_new(ANVIL_JSON_TRUE, key, NULL, 0);
    const int ind = ls[k].indent;
    for (; k < nl; ++k) {
        if (ls[k].n == 0 || ls[k].p[0] == '#') continue;
        if (ls[k].indent < ind || (ls[k].indent == 0 && !(ls[k].p[0] == '-' && seq))) break;
        if (arr == NULL || arr->kind != ANVIL_JSON_ARRAY_BEGIN) continue;
        if (ls[k].indent != ind || ls[k].p[0] != '-') {
            arr->kind = ANVIL_JSON_TRUE; /* a nested form */
            continue;
        }
        const char *v = ls[k].p + 1;
        size_t vn = ls[k].n - 1;
        vn = uncomment(v, vn);
        const char *colon = memchr(v, ':', vn);
        size_t sp = 0; /* the item's first non-space, inside the line */
        while (sp < vn && v[sp] == ' ') ++sp;
        const int quoted = sp < vn && (v[sp] == '"' || v[sp] == '\'');
        /* metadata.py quotes "- no" (the Norway problem) before PyYAML sees it */
        const int norway = vn == 3 && strncmp(v, " no", 3) == 0;
        anvil_json_value *item = norway ? anvil__json_new(ANVIL_JSON_STRING, NULL, "no", 2)
                                 : colon && (colon + 1 == v + vn || colon[1] == ' ') && !quoted
                                     ? anvil__json_new(ANVIL_JSON_TRUE, NULL, NULL, 0)
                                     : scalar(NULL, v, vn);
        if (push(arr, item) != 0) {
            anvil__json_free(arr);
            return NULL;
        }
        if (item->kind != ANVIL_JSON_STRING) arr->kind = ANVIL_JSON_TRUE;
    }
    *i = k;
    return arr;
}

/* The keys hf_meta.c reads (apply_metadata_heuristic's); the others are
 * skipped, which keeps the object small: a card of a million keys costs
 * one pass, not a million look-ups each. */
static int key_used(const char *k, size_t n) {
    static const char *const used[] = {
        "name",
        "author",
        "version",
        "organization",
        "description",
        "finetune",
        "basename",
        "size_label",
        "url",
        "doi",
        "uuid",
        "repo_url",
        "model_name",
        "model_author",
        "model_version",
        "model_organization",
        "model_description",
        "model_finetune",
        "model_basename",
        "model_size_label",
        "model_url",
        "model_doi",
        "model_uuid",
        "model_repo_url",
        "model_creator",
        "model_type",
        "base_model",
        "base_models",
        "base_model_sources",
        "datasets",
        "dataset",
        "dataset_sources",
        "license",
        "license_name",
        "license_link",
        "tags",
        "pipeline_tag",
        "languages",
        "language",
    };
    for (size_t i = 0; i < sizeof used / sizeof used[0]; ++i) {
        if (strlen(used[i]) == n && memcmp(used[i], k, n) == 0) return 1;
    }
    return 0;
}

static int parse_lines(const line *ls, size_t nl, anvil_json_value *root) {
    for (size_t i = 0; i < nl;) {
        const line *l = &ls[i];
        if (l->n == 0 || l->p[0] == '#' || l->indent > 0) {
            ++i;
            continue;
        }
        const char *colon = memchr(l->p, ':', l->n);
        if (colon == NULL || (colon + 1 < l->p + l->n && colon[1] != ' ')) {
            ++i;
            continue;
        }
        const size_t kn = (size_t)(colon - l->p);
        const int used = key_used(l->p, kn);
        char key[32]; /* the longest used key is shorter */
        snprintf(key, sizeof key, "%.*s", used ? (int)kn : 0, l->p);
        const char *v = colon + 1;
        size_t vn = (size_t)(l->p + l->n - v);
        while (vn > 0 && *v == ' ') ++v, --vn;
        vn = uncomment(v, vn);
        while (vn > 0 && isspace((unsigned char)v[vn - 1])) --vn;
        ++i;
        anvil_json_value *val = vn == 0                           ? block_value(key, ls, nl, &i)
                                : v[0] == '[' && v[vn - 1] == ']' ? flow_list(key, v, vn)
                                                                  : scalar(key, v, vn);
        if (val == NULL) return -1;
        if (!used) {
            anvil__json_free(val); /* a key anvil does not read (its block lines are passed) */
            continue;
        }
        if (anvil__json_get(root, key) != NULL) {
            anvil__json_free(val); /* PyYAML keeps the last; refuse to guess: mark */
            for (size_t k = 0; k < root->n_items; ++k) {
                if (strcmp(root->items[k]->key, key) == 0) root->items[k]->kind = ANVIL_JSON_TRUE;
            }
            continue;
        }
        if (push(root, val) != 0) return -1;
    }
    return 0;
}

/* The model card is read whole (metadata.py reads it whole); a README.md
 * over this is refused, naming the limit. */
#define CARD_MAX ((size_t)64 << 20)

/* The front matter's lines: those after a first line "---" up to the next
 * "---" line (or the end). *nl is 0 when there is no front matter. The
 * array has room for every line of the text (one per '\n', plus one). */
static int front_matter(const char *text, size_t len, line **out, size_t *nl) {
    *out = NULL;
    *nl = 0;
    const char *end = text + len;
    const char *first_nl = memchr(text, '\n', len);
    size_t first_len = first_nl ? (size_t)(first_nl - text) : len;
    if (first_len > 0 && text[first_len - 1] == '\r') --first_len;
    if (first_nl == NULL || first_len != 3 || strncmp(text, "---", 3) != 0) return 0; /* none (or "---" alone) */
    size_t lines = 1;
    for (const char *p = first_nl + 1; p < end && (p = memchr(p, '\n', (size_t)(end - p))) != NULL; ++p) ++lines;
    line *ls = calloc(lines, sizeof *ls);
    if (ls == NULL) return -1;
    size_t n_ls = 0;
    for (const char *p = first_nl + 1; p < end && n_ls < lines;) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        size_t n = e ? (size_t)(e - p) : (size_t)(end - p);
        if (n > 0 && p[n - 1] == '\r') --n;
        if (n == 3 && strncmp(p, "---", 3) == 0) break;
        int ind = 0;
        while ((size_t)ind < n && ind < INT32_MAX && (p[ind] == ' ' || p[ind] == '\t')) ind += 1;
        ls[n_ls].p = p + ind;
        ls[n_ls].n = n - (size_t)ind;
        ls[n_ls].indent = ind;
        n_ls++;
        if (e == NULL) break;
        p = e + 1;
    }
    *out = ls;
    *nl = n_ls;
    return 0;
}

int hf_card_load(const char *dir, anvil_json_value **out, anvil_error *err) {
    *out = NULL;
    char *path = hf_path_join(dir, "README.md");
    if (path == NULL) return anvil__nomem(err);
    struct stat sb;
    if (lstat(path, &sb) != 0 && errno == ENOENT) {
        free(path);
        return ANVIL_OK; /* no model card */
    }
    char *text = NULL;
    size_t len = 0;
    int rc = file_input_read(path, CARD_MAX, "a model card", &text, &len, err);
    if (rc == ANVIL_E_NOT_FOUND) rc = ANVIL_OK; /* a link to nowhere: no model card */
    if (rc == ANVIL_OK && text != NULL) rc = hf_card_parse(text, len, path, out, err);
    free(text);
    free(path);
    return rc;
}

int hf_card_parse(const char *text, size_t len, const char *path, anvil_json_value **out, anvil_error *err) {
    *out = NULL;
    line *ls = NULL;
    size_t nl = 0;
    int rc = front_matter(text, len, &ls, &nl) != 0
                 ? anvil__error_set(err, ANVIL_E_NOMEM, "out of memory reading %s", path)
                 : ANVIL_OK;
    if (rc == ANVIL_OK && ls != NULL) {
        anvil_json_value *root = anvil__json_new(ANVIL_JSON_OBJECT_BEGIN, NULL, NULL, 0);
        if (root == NULL || parse_lines(ls, nl, root) != 0) {
            anvil__json_free(root);
            rc = anvil__error_set(err, ANVIL_E_NOMEM, "out of memory reading %s", path);
        } else {
            *out = root;
        }
    }
    free(ls);
    return rc;
}

int hf_card_value(const anvil_json_value *card, const char *key, const char *dir, const anvil_json_value **out,
                  anvil_error *err) {
    *out = anvil__json_get(card, key);
    if (*out != NULL && (*out)->kind == ANVIL_JSON_TRUE) {
        *out = NULL;
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                "%s/README.md: the model card's \"%s\" is not a plain "
                                "string or a list of them; anvil convert reads only those (convert_hf_to_gguf.py "
                                "would put it in general.* keys): simplify it or remove the front matter",
                                dir, key);
    }
    return ANVIL_OK;
}
