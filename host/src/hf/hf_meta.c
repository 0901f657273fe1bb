/* SPDX-License-Identifier: MIT */
/*
 * hf_meta: the general.* keys convert_hf_to_gguf.py writes (gguf-py
 * Metadata.load, apply_metadata_heuristic, set_gguf_meta_model), in its
 * order and wire types: sampling defaults from generation_config.json, the
 * name/organization/basename/finetune/version/size label from config.json's
 * _name_or_path and the folder name, then the --metadata override file and
 * --model-name; first of all a README.md model card's front matter (the
 * subset hf_card.c reads).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "file_input.h"
#include "hf_card.h"
#include "hf_internal.h"
#include "hf_meta_name.h"

enum {
    F_NAME,
    F_AUTHOR,
    F_VERSION,
    F_ORGANIZATION,
    F_FINETUNE,
    F_BASENAME,
    F_DESCRIPTION,
    F_QUANTIZED_BY,
    F_SIZE_LABEL,
    F_LICENSE,
    F_LICENSE_NAME,
    F_LICENSE_LINK,
    F_URL,
    F_DOI,
    F_UUID,
    F_REPO_URL,
    F_SOURCE_URL,
    F_SOURCE_DOI,
    F_SOURCE_UUID,
    F_SOURCE_REPO_URL,
    F_COUNT
};
static const char *const k_str_keys[F_COUNT] = {
    "general.name",       "general.author",     "general.version",      "general.organization",
    "general.finetune",   "general.basename",   "general.description",  "general.quantized_by",
    "general.size_label", "general.license",    "general.license.name", "general.license.link",
    "general.url",        "general.doi",        "general.uuid",         "general.repo_url",
    "general.source.url", "general.source.doi", "general.source.uuid",  "general.source.repo_url",
};

enum { S_COUNT = 12 };
/* Sampling keys: GGUF key suffix, generation_config.json key, wire type. */
static const struct {
    const char *key, *gen;
    int is_int;
} k_sampling[S_COUNT] = {
    { "sequence", "sequence", -1 },
    { "top_k", "top_k", 1 },
    { "top_p", "top_p", 0 },
    { "min_p", "min_p", 0 },
    { "xtc_probability", "xtc_probability", 0 },
    { "xtc_threshold", "xtc_threshold", 0 },
    { "temp", "temperature", 0 },
    { "penalty_last_n", "penalty_last_n", 1 },
    { "penalty_repeat", "penalty_repeat", 0 },
    { "mirostat", "mirostat", 1 },
    { "mirostat_tau", "mirostat_tau", 0 },
    { "mirostat_eta", "mirostat_eta", 0 },
};

struct hf_meta {
    char *str[F_COUNT];                        /* NULL = None */
    const anvil_json_value *sampling[S_COUNT]; /* NULL = None */
    const anvil_json_value *base_models, *datasets, *tags, *languages;
    anvil_json_value *gen, *override, *card; /* owned trees the pointers above point into */
    anvil_json_value *made;                  /* owned: lists built from the model card */
};

void hf_meta_free(hf_meta *m) {
    if (m == NULL) return;
    for (int i = 0; i < F_COUNT; ++i) free(m->str[i]);
    anvil__json_free(m->gen);
    anvil__json_free(m->override);
    anvil__json_free(m->card);
    anvil__json_free(m->made);
    free(m);
}

static int set_str(hf_meta *m, int field, const char *v) {
    free(m->str[field]);
    m->str[field] = NULL;
    if (v == NULL) return 0;
    m->str[field] = strdup(v);
    return m->str[field] ? 0 : -1;
}

/* The id heuristics: fill what is still None. */
static int apply_id(hf_meta *m, const char *model_id, int64_t total) {
    hf_id_parts p;
    const int got = hf_model_id_components(model_id, total, &p);
    if (got != 0) return got;
    int rc = 0;
    if (m->str[F_NAME] == NULL && p.full_name != NULL) {
        m->str[F_NAME] = hf_id_to_title(p.full_name);
        rc |= m->str[F_NAME] == NULL;
    }
    if (m->str[F_ORGANIZATION] == NULL && p.org != NULL) {
        m->str[F_ORGANIZATION] = hf_id_to_title(p.org);
        rc |= m->str[F_ORGANIZATION] == NULL;
    }
    if (m->str[F_BASENAME] == NULL && p.basename) rc |= set_str(m, F_BASENAME, p.basename);
    if (m->str[F_FINETUNE] == NULL && p.finetune) rc |= set_str(m, F_FINETUNE, p.finetune);
    if (m->str[F_VERSION] == NULL && p.version) rc |= set_str(m, F_VERSION, p.version);
    if (m->str[F_SIZE_LABEL] == NULL && p.size_label) rc |= set_str(m, F_SIZE_LABEL, p.size_label);
    hf_id_parts_free(&p);
    return rc ? -1 : 0;
}

static anvil_json_value *made_node(hf_meta *m, anvil_json_event_kind kind, const char *key, const char *text) {
    anvil_json_value *j = anvil__json_new(kind, key, text, text ? strlen(text) : 0);
    if (j != NULL && anvil__json_append(m->made, j) != 0) {
        anvil__json_free(j);
        return NULL;
    }
    return j;
}

/* Append child to list (a node m->made owns); child leaves m->made. */
static int adopt(hf_meta *m, anvil_json_value *list, anvil_json_value *child) {
    m->made->n_items--; /* child was the last node made */
    if (anvil__json_append(list, child) != 0) {
        anvil__json_free(child);
        return -1;
    }
    return 0;
}

static int add_member(hf_meta *m, anvil_json_value *obj, const char *key, const char *v) {
    if (v == NULL) return 0;
    anvil_json_value *s = made_node(m, ANVIL_JSON_STRING, key, v);
    return s ? adopt(m, obj, s) : -1;
}

static int add_member_title(hf_meta *m, anvil_json_value *obj, const char *key, const char *v) {
    if (v == NULL) return 0;
    char *t = hf_id_to_title(v);
    const int rc = t ? add_member(m, obj, key, t) : -1;
    free(t);
    return rc;
}

/* One base model / dataset entry from a model card id or URL. */
static int card_source(hf_meta *m, anvil_json_value *list, const char *id, int64_t total) {
    anvil_json_value *e = made_node(m, ANVIL_JSON_OBJECT_BEGIN, NULL, NULL);
    if (e == NULL || adopt(m, list, e) != 0) return -1;
    const int url = !strncmp(id, "http://", 7) || !strncmp(id, "https://", 8) || !strncmp(id, "ssh://", 6);
    const char *hf_id = url ? NULL : id;
    int rc = 0;
    if (url) {
        rc |= add_member(m, e, "repo_url", id);
        const char *at = strstr(id, "huggingface.co");
        const char *rest = !strncmp(id, "https://huggingface.co/", 23)  ? id + 23
                           : !strncmp(id, "http://huggingface.co/", 22) ? id + 22
                                                                        : NULL;
        const char *sl = rest ? strchr(rest, '/') : NULL;
        if (at && sl && sl > rest && sl[1] != '\0' && strchr(sl + 1, '/') == NULL) hf_id = rest;
    }
    if (hf_id != NULL) {
        hf_id_parts p;
        const int got = hf_model_id_components(hf_id, total, &p);
        if (got != 0) return got;
        rc |= add_member_title(m, e, "name", p.full_name);
        rc |= add_member_title(m, e, "organization", p.org);
        rc |= add_member(m, e, "version", p.version);
        if (!url && p.org && p.full_name) {
            char buf[2048];
            snprintf(buf, sizeof buf, "https://huggingface.co/%s/%s", p.org, p.full_name);
            rc |= add_member(m, e, "repo_url", buf);
        }
        hf_id_parts_free(&p);
    }
    return rc;
}

/* base_model / datasets lists from the card (value: string or list). */
static int card_sources(hf_meta *m, const anvil_json_value *v, const anvil_json_value **slot, int64_t total) {
    anvil_json_value *list = (anvil_json_value *)*slot;
    if (list == NULL) {
        list = made_node(m, ANVIL_JSON_ARRAY_BEGIN, NULL, NULL);
        if (list == NULL) return -1;
        *slot = list;
    }
    if (anvil__json_is_null(v)) return 0;
    if (v->kind == ANVIL_JSON_STRING) return card_source(m, list, v->text, total);
    for (size_t i = 0; i < v->n_items; ++i) {
        const int rc = card_source(m, list, v->items[i]->text, total);
        if (rc != 0) return rc;
    }
    return 0;
}

/* use_array_model_card_metadata: append a string or a list's items. */
static int card_array(hf_meta *m, const anvil_json_value *v, const anvil_json_value **slot) {
    if (anvil__json_is_null(v)) return 0;
    anvil_json_value *list = (anvil_json_value *)*slot;
    if (list == NULL) {
        list = made_node(m, ANVIL_JSON_ARRAY_BEGIN, NULL, NULL);
        if (list == NULL) return -1;
        *slot = list;
    }
    const size_t n = v->kind == ANVIL_JSON_STRING ? 1 : v->n_items;
    for (size_t i = 0; i < n; ++i) {
        const char *t = v->kind == ANVIL_JSON_STRING ? v->text : v->items[i]->text;
        anvil_json_value *s = made_node(m, ANVIL_JSON_STRING, NULL, t);
        if (s == NULL || adopt(m, list, s) != 0) return -1;
    }
    return 0;
}

static int card_field(hf_meta *m, const hf_folder *f, int field, const char *key, anvil_error *err) {
    const anvil_json_value *v = NULL;
    int rc = hf_card_value(m->card, key, f->dir, &v, err);
    if (rc != ANVIL_OK || v == NULL || m->str[field] != NULL) return rc;
    if (v->kind == ANVIL_JSON_ARRAY_BEGIN && field == F_LICENSE) {
        size_t n = 1;
        for (size_t i = 0; i < v->n_items; ++i) n += strlen(v->items[i]->text) + 1;
        char *s = calloc(1, n);
        if (s == NULL) return anvil__nomem(err);
        size_t o = 0; /* one pass: strcat would rescan the string per item */
        for (size_t i = 0; i < v->n_items; ++i) {
            if (i) s[o++] = ',';
            const size_t len = strlen(v->items[i]->text);
            memcpy(s + o, v->items[i]->text, len);
            o += len;
        }
        s[o] = '\0';
        m->str[field] = s;
        return ANVIL_OK;
    }
    if (v->kind == ANVIL_JSON_ARRAY_BEGIN) {
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                "%s/README.md: the model card's \"%s\" is a list; "
                                "a string is expected there",
                                f->dir, key);
    }
    return set_str(m, field, anvil__json_str(v)) == 0 ? ANVIL_OK : anvil__nomem(err);
}

/* apply_metadata_heuristic's model card part, in its order. */
static int apply_card(hf_meta *m, const hf_folder *f, int64_t total, anvil_error *err) {
    static const struct {
        int field;
        const char *key;
    } uses[] = {
        { F_NAME, "name" },
        { F_AUTHOR, "author" },
        { F_VERSION, "version" },
        { F_ORGANIZATION, "organization" },
        { F_DESCRIPTION, "description" },
        { F_FINETUNE, "finetune" },
        { F_BASENAME, "basename" },
        { F_SIZE_LABEL, "size_label" },
        { F_SOURCE_URL, "url" },
        { F_SOURCE_DOI, "doi" },
        { F_SOURCE_UUID, "uuid" },
        { F_SOURCE_REPO_URL, "repo_url" },
        { F_NAME, "model_name" },
        { F_AUTHOR, "model_author" },
        { F_VERSION, "model_version" },
        { F_ORGANIZATION, "model_organization" },
        { F_DESCRIPTION, "model_description" },
        { F_FINETUNE, "model_finetune" },
        { F_BASENAME, "model_basename" },
        { F_SIZE_LABEL, "model_size_label" },
        { F_SOURCE_URL, "model_url" },
        { F_SOURCE_DOI, "model_doi" },
        { F_SOURCE_UUID, "model_uuid" },
        { F_SOURCE_REPO_URL, "model_repo_url" },
        { F_NAME, "model_name" },
        { F_AUTHOR, "model_creator" },
        { F_BASENAME, "model_type" },
    };
    int rc = ANVIL_OK;
    for (size_t i = 0; i < sizeof uses / sizeof uses[0] && rc == ANVIL_OK; ++i) {
        rc = card_field(m, f, uses[i].field, uses[i].key, err);
    }
    static const char *const lists[2][3] = { { "base_model", "base_models", "base_model_sources" },
                                             { "datasets", "dataset", "dataset_sources" } };
    for (int l = 0; l < 2 && rc == ANVIL_OK; ++l) {
        const anvil_json_value *v = NULL;
        int present = 0;
        for (int k = 0; k < 3 && rc == ANVIL_OK; ++k) {
            if (anvil__json_get(m->card, lists[l][k]) == NULL) continue;
            if (!present) rc = hf_card_value(m->card, lists[l][k], f->dir, &v, err);
            present = 1;
        }
        const int got = rc == ANVIL_OK && present ? card_sources(m, v, l ? &m->datasets : &m->base_models, total) : 0;
        if (got == -2) {
            rc = anvil__error_set(err, ANVIL_E_FORMAT,
                                  "%s/README.md: a model card %s entry is over %d bytes: not a model id or a URL; "
                                  "shorten it",
                                  f->dir, l ? "datasets" : "base_model", HF_ID_MAX);
        } else if (got != 0) {
            rc = anvil__nomem(err);
        }
    }
    static const struct {
        int field;
        const char *key;
    } lic[] = { { F_LICENSE, "license" }, { F_LICENSE_NAME, "license_name" }, { F_LICENSE_LINK, "license_link" } };
    for (size_t i = 0; i < 3 && rc == ANVIL_OK; ++i) rc = card_field(m, f, lic[i].field, lic[i].key, err);
    static const char *const arrays[4] = { "tags", "pipeline_tag", "languages", "language" };
    for (int k = 0; k < 4 && rc == ANVIL_OK; ++k) {
        const anvil_json_value *v = NULL;
        rc = hf_card_value(m->card, arrays[k], f->dir, &v, err);
        if (rc == ANVIL_OK && card_array(m, v, k < 2 ? &m->tags : &m->languages) != 0) {
            rc = anvil__nomem(err);
        }
    }
    return rc;
}

static const char *folder_name(const char *dir) {
    const char *s = strrchr(dir, '/');
    return s ? s + 1 : dir;
}

static int load_override(hf_meta *m, const char *path, anvil_error *err) {
    int rc = anvil__json_tree_load(path, &m->override, err);
    if (rc != ANVIL_OK) return rc;
    const anvil_json_value *o = m->override;
    if (o->kind != ANVIL_JSON_OBJECT_BEGIN) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "%s: the metadata override must be a JSON object", path);
    }
    for (size_t i = 0; i < S_COUNT; ++i) {
        char key[64];
        snprintf(key, sizeof key, "general.sampling.%s", k_sampling[i].key);
        const anvil_json_value *v = anvil__json_get(o, key);
        if (v != NULL) m->sampling[i] = v->kind == ANVIL_JSON_NULL ? NULL : v;
    }
    for (int f = 0; f < F_COUNT; ++f) {
        /* Metadata.load takes every general.* string from the override but
         * general.license (only the model card sets that one). */
        const anvil_json_value *v = f == F_LICENSE ? NULL : anvil__json_get(o, k_str_keys[f]);
        if (v == NULL) continue;
        if (v->kind != ANVIL_JSON_STRING && v->kind != ANVIL_JSON_NULL) {
            return anvil__error_set(err, ANVIL_E_FORMAT, "%s: \"%s\" must be a string", path, k_str_keys[f]);
        }
        if (set_str(m, f, anvil__json_str(v)) != 0) return anvil__nomem(err);
    }
    const anvil_json_value *v;
    if ((v = anvil__json_get(o, "general.base_models")) != NULL) m->base_models = v;
    if ((v = anvil__json_get(o, "general.datasets")) != NULL) m->datasets = v;
    if ((v = anvil__json_get(o, "general.tags")) != NULL) m->tags = v;
    if ((v = anvil__json_get(o, "general.languages")) != NULL) m->languages = v;
    return ANVIL_OK;
}

/* generation_config.json, when present: one that does not parse is ignored
 * (metadata.py), one that is not a regular file refused (file_input.h). */
static int load_generation(hf_meta *m, const hf_folder *f, anvil_error *err) {
    if (!hf_file_exists(f->dir, "generation_config.json")) return ANVIL_OK;
    char *path = hf_path_join(f->dir, "generation_config.json");
    if (path == NULL) return anvil__nomem(err);
    FILE *fp = NULL;
    const int rc = file_input_open(path, "a JSON file", &fp, err);
    if (fp != NULL) fclose(fp);
    anvil_error ignore;
    if (rc != ANVIL_OK || anvil__json_tree_load(path, &m->gen, &ignore) != ANVIL_OK) {
        free(path);
        return rc == ANVIL_E_NOT_FOUND ? ANVIL_OK : rc;
    }
    free(path);
    for (size_t i = 0; i < S_COUNT; ++i) {
        const anvil_json_value *v = anvil__json_get(m->gen, k_sampling[i].gen);
        if (i == 8 && v == NULL) v = anvil__json_get(m->gen, "repetition_penalty");
        m->sampling[i] = anvil__json_is_null(v) ? NULL : v;
    }
    return ANVIL_OK;
}

int hf_meta_load(const hf_folder *f, const hf_meta_opts *o, int64_t total, hf_meta **out, anvil_error *err) {
    hf_meta *m = calloc(1, sizeof *m);
    if (m == NULL) return anvil__nomem(err);
    *out = m;
    const int grc = load_generation(m, f, err);
    if (grc != ANVIL_OK) return grc;
    m->made = calloc(1, sizeof *m->made);
    if (m->made == NULL) return anvil__nomem(err);
    m->made->kind = ANVIL_JSON_ARRAY_BEGIN;
    int crc = hf_card_load(f->dir, &m->card, err);
    if (crc == ANVIL_OK && m->card != NULL) crc = apply_card(m, f, total, err);
    if (crc != ANVIL_OK) return crc;
    const char *nop = anvil__json_str(anvil__json_get(f->config, "_name_or_path"));
    int slashes = 0;
    for (const char *p = nop; p && *p; ++p) slashes += *p == '/';
    const int id_rc = nop != NULL && slashes <= 1 ? apply_id(m, nop, total) : 0;
    if (id_rc == -2) {
        return anvil__error_set(err, ANVIL_E_FORMAT,
                                "%s/config.json: _name_or_path is over %d bytes: not a model id or a path; shorten "
                                "it (or remove it)",
                                f->dir, HF_ID_MAX);
    }
    const int dir_rc = apply_id(m, folder_name(f->dir), total);
    if (id_rc != 0 || dir_rc != 0) return anvil__nomem(err); /* a folder name is shorter than HF_ID_MAX */
    if (o->metadata_path != NULL) {
        const int rc = load_override(m, o->metadata_path, err);
        if (rc != ANVIL_OK) return rc;
    }
    if (o->model_name != NULL && set_str(m, F_NAME, o->model_name) != 0) {
        return anvil__nomem(err);
    }
    if (m->str[F_NAME] == NULL && set_str(m, F_NAME, folder_name(f->dir)) != 0) {
        return anvil__nomem(err);
    }
    if (m->str[F_SIZE_LABEL] == NULL && total > 0) {
        char label[64];
        if (o->expert_count > 0) {
            const int w = snprintf(label, sizeof label, "%llux", (unsigned long long)o->expert_count);
            hf_size_label(o->moe_params, label + w, sizeof label - (size_t)w);
        } else {
            hf_size_label(total, label, sizeof label);
        }
        if (set_str(m, F_SIZE_LABEL, label) != 0) return anvil__nomem(err);
    }
    return ANVIL_OK;
}

/* add_string skips an empty string, as gguf-py does. */
static int put_str(anvil_gguf_writer *w, const char *key, const char *v, anvil_error *err) {
    return v == NULL || v[0] == '\0' ? ANVIL_OK : anvil_gguf_writer_set_string(w, key, v, err);
}

static int put_sampling(const hf_meta *m, anvil_gguf_writer *w, anvil_error *err) {
    for (size_t i = 0; i < S_COUNT; ++i) {
        const anvil_json_value *v = m->sampling[i];
        if (v == NULL) continue;
        char key[64];
        snprintf(key, sizeof key, "general.sampling.%s", k_sampling[i].key);
        int rc;
        int64_t x = 0;
        if (k_sampling[i].is_int < 0) {
            rc = anvil__json_str(v) ? put_str(w, key, anvil__json_str(v), err) : -1;
        } else if (k_sampling[i].is_int) {
            rc = anvil__json_i64(v, &x) == 0 && x >= INT32_MIN && x <= INT32_MAX
                     ? anvil_gguf_writer_set_i32(w, key, (int32_t)x, err)
                     : -1;
        } else {
            rc = anvil__json_is_number(v) || v->kind == ANVIL_JSON_TRUE || v->kind == ANVIL_JSON_FALSE
                     ? anvil_gguf_writer_set_f32(w, key,
                                                 v->kind == ANVIL_JSON_TRUE ? 1.0f : (float)anvil__json_f64(v), err)
                     : -1;
        }
        if (rc == -1) {
            /* say what it must be: top_k 1.5 is a number, but not a whole one */
            const char *want = k_sampling[i].is_int < 0 ? "a string"
                               : k_sampling[i].is_int   ? "a whole number (a 32-bit integer)"
                                                        : "a number";
            return anvil__error_set(err, ANVIL_E_FORMAT, "sampling value for %s must be %s, not %s", key, want,
                                    anvil__json_is_number(v) ? "a fraction or out of range"
                                                             : anvil__json_event_what(v->kind));
        }
        if (rc != ANVIL_OK) return rc;
    }
    return ANVIL_OK;
}

/* A list of strings as a string array (empty: skipped). */
static int put_str_list(anvil_gguf_writer *w, const char *key, const anvil_json_value *list, anvil_error *err) {
    if (anvil__json_is_null(list)) return ANVIL_OK;
    if (list->kind != ANVIL_JSON_ARRAY_BEGIN) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "metadata override: %s must be a list", key);
    }
    const char **items = calloc(list->n_items + 1, sizeof *items);
    for (size_t i = 0; items && i < list->n_items; ++i) {
        items[i] = anvil__json_str(list->items[i]);
        if (items[i] == NULL) {
            free(items);
            return anvil__error_set(err, ANVIL_E_FORMAT, "metadata override: %s item %zu is not a string", key, i);
        }
    }
    if (items == NULL) return anvil__nomem(err);
    int rc = ANVIL_OK;
    if (list->n_items > 0) rc = anvil_gguf_writer_set_string_array(w, key, items, list->n_items, err);
    free(items);
    return rc;
}

static int put_sources(anvil_gguf_writer *w, const char *what, const anvil_json_value *list, anvil_error *err) {
    static const char *const fields[] = { "name", "author", "version", "organization", "description",
                                          "url",  "doi",    "uuid",    "repo_url" };
    if (anvil__json_is_null(list)) return ANVIL_OK;
    if (list->kind != ANVIL_JSON_ARRAY_BEGIN) {
        return anvil__error_set(err, ANVIL_E_FORMAT, "metadata override: general.%ss must be a list", what);
    }
    char key[128];
    snprintf(key, sizeof key, "general.%s.count", what);
    int rc = anvil_gguf_writer_set_u32(w, key, (uint32_t)list->n_items, err);
    for (size_t i = 0; i < list->n_items && rc == ANVIL_OK; ++i) {
        if (list->items[i]->kind != ANVIL_JSON_OBJECT_BEGIN) {
            return anvil__error_set(err, ANVIL_E_FORMAT,
                                    "metadata override: general.%ss item %zu is not an "
                                    "object",
                                    what, i);
        }
        for (size_t k = 0; k < sizeof fields / sizeof fields[0] && rc == ANVIL_OK; ++k) {
            const anvil_json_value *v = anvil__json_get(list->items[i], fields[k]);
            if (v == NULL) continue;
            snprintf(key, sizeof key, "general.%s.%zu.%s", what, i, fields[k]);
            if (anvil__json_str(v) == NULL) {
                return anvil__error_set(err, ANVIL_E_FORMAT, "metadata override: %s must be a string", key);
            }
            rc = put_str(w, key, anvil__json_str(v), err);
        }
    }
    return rc;
}

int hf_meta_write(const hf_meta *m, anvil_gguf_writer *w, anvil_error *err) {
    int rc = put_sampling(m, w, err);
    for (int f = 0; f < F_COUNT && rc == ANVIL_OK; ++f) {
        rc = put_str(w, k_str_keys[f], m->str[f], err);
    }
    if (rc == ANVIL_OK) rc = put_sources(w, "base_model", m->base_models, err);
    if (rc == ANVIL_OK) rc = put_sources(w, "dataset", m->datasets, err);
    if (rc == ANVIL_OK) rc = put_str_list(w, "general.tags", m->tags, err);
    if (rc == ANVIL_OK) rc = put_str_list(w, "general.languages", m->languages, err);
    return rc;
}

/* The longest default file name (NAME_MAX on Linux): a longer one is
 * refused, never cut. */
#define HF_NAME_MAX 255

/* One component of the default name: Python's strip(), ' ' -> '-' as
 * naming_convention does, and more than it does: '/' and '\\' -> '-' in
 * every component (convert does it for the base name only, so a card's
 * "finetune: /../../x" would put its file two folders up). */
static void append_part(char *buf, size_t cap, size_t *o, const char *v, int upper, int first) {
    if (v == NULL) return;
    if (!first && *o + 1 < cap) buf[(*o)++] = '-';
    const char *s = v, *e = v + strlen(v);
    while (s < e && (*s == ' ' || (*s >= '\t' && *s <= '\r') || (*s >= 0x1c && *s <= 0x1f))) ++s;
    while (e > s && (e[-1] == ' ' || (e[-1] >= '\t' && e[-1] <= '\r') || (e[-1] >= 0x1c && e[-1] <= 0x1f))) --e;
    for (; s < e && *o + 1 < cap; ++s) {
        char c = *s == ' ' || *s == '/' || *s == '\\' ? '-' : *s;
        if (upper && c >= 'a' && c <= 'z') c = (char)(c - 'a' + 'A');
        buf[(*o)++] = c;
    }
    buf[*o] = '\0';
}

/* mode 0: a model, 1: --vocab-only, 2: --mtp's "mtp-" name */
static int default_name(const hf_meta *m, const char *type, int mode, char *buf, size_t cap, anvil_error *err) {
    const char *base = m->str[F_BASENAME] ? m->str[F_BASENAME] : m->str[F_NAME];
    char big[4 * HF_NAME_MAX]; /* room to tell a name too long by its length */
    size_t o = 0;
    big[0] = '\0';
    if (mode == 2) append_part(big, sizeof big, &o, "mtp", 0, 1); /* "mtp-" + the name */
    append_part(big, sizeof big, &o, base ? base : "ggml-model", 0, mode != 2);
    if (mode == 0) append_part(big, sizeof big, &o, m->str[F_SIZE_LABEL], 0, 0);
    append_part(big, sizeof big, &o, m->str[F_FINETUNE], 0, 0);
    append_part(big, sizeof big, &o, m->str[F_VERSION], 0, 0);
    append_part(big, sizeof big, &o, mode == 1 ? "vocab" : type, mode != 1, 0);
    /* no "..": each dot after a dot becomes '-' ("a..b" -> "a.-b") */
    for (size_t i = 1; i < o; ++i) {
        if (big[i] == '.' && big[i - 1] == '.') big[i] = '-';
    }
    const size_t total = o + strlen(".gguf");
    if (o + 1 >= sizeof big || total > HF_NAME_MAX || total >= cap) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "the default output name \"%.40s...\" is over %d bytes, the most a file name "
                                "holds (the model's names in config.json's _name_or_path or the model card are "
                                "long): give OUT.gguf",
                                big, HF_NAME_MAX);
    }
    memcpy(buf, big, o);
    memcpy(buf + o, ".gguf", 6);
    return ANVIL_OK;
}

int hf_meta_default_name(const hf_meta *m, const char *type, int vocab_only, char *buf, size_t cap,
                         anvil_error *err) {
    return default_name(m, type, vocab_only ? 1 : 0, buf, cap, err);
}

int hf_meta_mtp_name(const hf_meta *m, const char *type, char *buf, size_t cap, anvil_error *err) {
    return default_name(m, type, 2, buf, cap, err);
}
